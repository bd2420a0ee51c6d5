#!/usr/bin/env bash
# Issue 11 goal: acks-replication and producer-sharing at small scale, twice each.
set -u
cd /work/main
for run in 1 2; do
  for s in producer-sharing acks-replication; do
    out=/work/ev3/11/scn-$s-$run
    uptime > $out.uptime
    scripts/scenario $s --scale small --out $out > $out.log 2>&1
    echo "rc=$?" >> $out.log
    uptime >> $out.uptime
  done
done
