#!/usr/bin/env bash
set -u
cd /work/main
echo "== detector produce-same start $(date -u +%T) $(uptime)"
tests/detector/run_detector_experiment.sh --cases produce-same --tries 5 --work /work/det-s4p > /work/ev5/det-same.out 2> /work/ev5/det-same.err
echo "== detector rc=$? end $(date -u +%T) $(uptime)"
F='^Codec/(compress|decompress)/codec:(lz4/level:1|zstd/level:3|gzip/level:6)/payload:az/record_bytes:1000/batch_bytes:65536$|^Batch/(build|read)/magic:2/codec:(none|lz4)/payload:az/record_bytes:1000/batch_bytes:65536$|^Format/validate/magic:(1|2)/codec:gzip/timestamp:create/payload:az/record_bytes:100/batch_bytes:65536$'
N=/work/main/results/evidence/2026-12-01-s5/13/noise
mkdir -p $N
for i in $(seq -w 1 12); do
  s=$(date +%s)
  uptime > $N/run-$i.uptime
  scripts/bench --mock --no-build --no-history --filter "$F" --out /tmp/s5-noise/run-$i >/dev/null 2>&1
  echo "noise run $i rc=$? $(( $(date +%s) - s )) s $(uptime)"
  cp /tmp/s5-noise/run-$i/kbench.json $N/run-$i.json
done
echo "== all done $(date -u +%T)" >> /work/ev5/quiet.log
