env -u KBENCH_BOOTSTRAP /tmp/h2-evidence/kbench-9efd222 --benchmark_filter='^Produce/' \
  --produce 'variant=bare_producev|send,acks=1,record_bytes=100' \
  --produce 'variant=bare_producev|send,acks=0|1,record_bytes=500' \
  --produce 'variant=bare_producev|send,acks=all,codec=none|gzip|snappy|lz4|zstd,record_bytes=500' \
  --produce 'variant=bare_producev|send,acks=1,codec=zstd,record_bytes=500' \
  --produce 'variant=bare_producev|send,acks=1,record_bytes=2000,batch_bytes=8196,partitions=15' \
  --produce 'variant=bare_producev|send,acks=all,record_bytes=500,idempotence=true' \
  --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true --benchmark_display_aggregates_only=true \
  --benchmark_out=/tmp/h2-evidence/mock-goal.json
