#!/usr/bin/env bash
# Seed-004 gap: where does librdkafka's limit come from at batch.size 8196, 2000 B, linger 0?
# Run from the repository root with a broker at $BOOT.
set -euo pipefail
E=$(dirname "$0")
base='acks=1,record_bytes=2000,linger_ms=0'
build/kbench --bootstrap="$BOOT" --benchmark_filter=Produce \
  --produce "$base,batch_bytes=8196,partitions=15,max_in_flight=5,variant=bare_producev|send" \
  --produce "$base,batch_bytes=8196,partitions=15,max_in_flight=1|20|100" \
  --produce "$base,batch_bytes=65536,partitions=15,max_in_flight=5" \
  --produce "$base,batch_bytes=8196,partitions=1,max_in_flight=5" \
  --window-seconds=3 --benchmark_repetitions=3 --benchmark_enable_random_interleaving=true \
  --benchmark_out="$E/gap.json" > "$E/gap.txt" 2> "$E/gap.stderr"
