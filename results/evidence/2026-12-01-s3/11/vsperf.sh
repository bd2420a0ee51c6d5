#!/usr/bin/env bash
# Issue 11 goal: kbench >= 1x kafka-producer-perf-test, 100 and 1000 B, acks 1 and all, 3 interleaved rounds.
set -u
cd /work/main
B=$(cat /work/ev3/11/bootstrap)
for cfg in "100 1 5000000" "100 all 5000000" "1000 1 1000000" "1000 all 1000000"; do
  set -- $cfg
  out=/work/ev3/11/vsperf-$1-$2
  uptime > $out.uptime
  scripts/vs-perf-test --bootstrap "$B" --record-size $1 --acks $2 --num-records $3 --rounds 3 --out $out > $out.txt 2> $out.stderr
  echo "rc=$?" >> $out.txt
  uptime >> $out.uptime
done
