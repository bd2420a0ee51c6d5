#!/bin/bash
# Session 6, quiet batch 2: the mock ratio run of quiet1.sh again, 8 processes, after the mock's
# partition leaders became round-robin (a93c21a).
cd /work/main
E=/work/main/results/evidence/2026-12-02-s6
echo "== mock ratio rr $(date -u +%T) $(uptime)"
uptime > $E/11/ratio-mock-rr.uptime
scripts/bench --mock --no-build --no-history --processes 8 --filter '^Produce/' --out /tmp/s6-ratio-mock-rr \
  -- --produce 'variant=send|bare_producev,acks=1,record_bytes=100' \
     --produce 'variant=send|bare_producev,acks=0|1|all,record_bytes=500' \
     --produce 'variant=send|bare_producev,acks=all,codec=gzip|snappy|lz4|zstd,record_bytes=500' \
     --produce 'variant=send|bare_producev,acks=1,codec=zstd,record_bytes=500' \
     --produce 'variant=send|bare_producev,acks=1,record_bytes=2000,batch_bytes=8196,partitions=15' \
     --produce 'variant=send|bare_producev,acks=1,record_bytes=500,partitions=16' \
     --produce 'variant=send|bare_producev,acks=1,record_bytes=500,partitions=16,keys=uniform|zipf,key_count=1000' \
     --produce 'variant=send|bare_producev,acks=all,record_bytes=500,idempotence=true' > $E/11/ratio-mock-rr.out 2>&1
echo "mock ratio rr rc=$? $(date -u +%T) $(uptime)"
mkdir -p $E/11/ratio-mock-rr && cp /tmp/s6-ratio-mock-rr/{kbench.json,command.txt,summary.txt} $E/11/ratio-mock-rr/ 2>/dev/null
echo "== done $(date -u +%T)"
