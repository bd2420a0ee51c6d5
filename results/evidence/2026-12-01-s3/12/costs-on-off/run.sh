#!/bin/bash
# Goal 1: send rows with cost counters on vs off, mock target, interleaved processes
# (on/off alternating, the first side alternating each round), same binary.
set -u
cd "$(dirname "$0")/../../../../.."
E=results/evidence/2026-12-01-s3/12/costs-on-off
F='^Produce/send/(acks:1/codec:none/record_bytes:100/threads:1/producers:1|acks:all/codec:(none|lz4|zstd)/record_bytes:500/threads:1/producers:1|acks:1/codec:none/record_bytes:250-750/threads:8/producers:(1|2)/payload:random/linger_ms:1/batch_bytes:65536)/real_time$'
for round in 1 2 3 4 5 6 7 8; do
  if (( round % 2 )); then order="on off"; else order="off on"; fi
  for side in $order; do
    uptime >> $E/uptime.txt
    KBENCH_BOOTSTRAP= ./build/kbench --costs=$side "--benchmark_filter=$F" \
      --benchmark_out=$E/$side-$round.json --benchmark_out_format=json > /dev/null 2>> $E/stderr.txt
  done
done
