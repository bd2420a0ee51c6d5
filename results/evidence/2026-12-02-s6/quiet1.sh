#!/bin/bash
# Session 6 quiet batch, one after another, nothing else running:
#  1-2. two quick-profile runs on a fresh local broker each (now with the untimed cluster
#       warm-up and the 1,000 records/s EndToEnd row): process-1 effect, interval CV, send /
#       bare_producev live, A/A verdicts;
#  3.   mock: the 14 default single-threaded closed-loop rows against bare_producev, 8
#       processes, after the statistics parse moved to simdjson.
cd /work/main
E=/work/main/results/evidence/2026-12-02-s6
mkdir -p $E/11 $E/10
for i in 1 2; do
  echo "== quick-$i $(date -u +%T) $(uptime)"
  uptime > $E/10/quick-$i.uptime
  /usr/bin/time -f "%e s wall" scripts/bench --profile quick --no-build --no-history --out $E/10/quick-$i > $E/10/quick-$i.out 2>&1
  echo "quick-$i rc=$? $(date -u +%T) $(tail -1 $E/10/quick-$i.out)"
  rm -rf $E/10/quick-$i/processes
done
echo "== mock ratio $(date -u +%T) $(uptime)"
uptime > $E/11/ratio-mock.uptime
scripts/bench --mock --no-build --no-history --processes 8 --filter '^Produce/' --out /tmp/s6-ratio-mock \
  -- --produce 'variant=send|bare_producev,acks=1,record_bytes=100' \
     --produce 'variant=send|bare_producev,acks=0|1|all,record_bytes=500' \
     --produce 'variant=send|bare_producev,acks=all,codec=gzip|snappy|lz4|zstd,record_bytes=500' \
     --produce 'variant=send|bare_producev,acks=1,codec=zstd,record_bytes=500' \
     --produce 'variant=send|bare_producev,acks=1,record_bytes=2000,batch_bytes=8196,partitions=15' \
     --produce 'variant=send|bare_producev,acks=1,record_bytes=500,partitions=16' \
     --produce 'variant=send|bare_producev,acks=1,record_bytes=500,partitions=16,keys=uniform|zipf,key_count=1000' \
     --produce 'variant=send|bare_producev,acks=all,record_bytes=500,idempotence=true' > $E/11/ratio-mock.out 2>&1
echo "mock ratio rc=$? $(date -u +%T) $(uptime)"
mkdir -p $E/11/ratio-mock && cp /tmp/s6-ratio-mock/{kbench.json,command.txt,summary.txt} $E/11/ratio-mock/ 2>/dev/null
echo "== done $(date -u +%T)"
