#!/usr/bin/env bash
# After CI: more processes for the reference ratios (issue 11), then the distributed test's
# output for the evidence (issue 14).
set -u
cd /work/main
while ! grep -q "^real" /work/ci7.log 2>/dev/null; do sleep 10; done
E=/work/main/results/evidence/2026-12-01-s5/11
echo "== live ratio 20 $(date -u +%T) $(uptime)"
scripts/bench --no-build --no-history --processes 20 --filter '^Produce/' --out /tmp/s5-ratio-live20 \
  -- --produce 'variant=send|bare_producev,acks=1,record_bytes=100' --produce 'variant=send|bare_producev,acks=all,record_bytes=1000' > $E/ratio-live20.out 2>&1
echo "live ratio 20 rc=$? $(date -u +%T) $(uptime)"
mkdir -p $E/ratio-live20 && cp /tmp/s5-ratio-live20/{kbench.json,command.txt,summary.txt} $E/ratio-live20/ 2>/dev/null
echo "== mock ratio 12 $(date -u +%T)"
scripts/bench --mock --no-build --no-history --processes 12 --filter '^Produce/' --out /tmp/s5-ratio-mock12 \
  -- --produce 'variant=send|bare_producev,acks=1,record_bytes=100' \
     --produce 'variant=send|bare_producev,acks=all,codec=lz4|gzip,record_bytes=500' \
     --produce 'variant=send|bare_producev,acks=1,record_bytes=500,partitions=16' \
     --produce 'variant=send|bare_producev,acks=all,record_bytes=500,idempotence=true' > $E/ratio-mock12.out 2>&1
echo "mock ratio 12 rc=$? $(date -u +%T) $(uptime)"
mkdir -p $E/ratio-mock12 && cp /tmp/s5-ratio-mock12/{kbench.json,command.txt,summary.txt} $E/ratio-mock12/ 2>/dev/null
mkdir -p /work/main/results/evidence/2026-12-01-s5/14
{ echo "\$ ctest --test-dir build -R '^distributed\$' -V   ($(git log --oneline -1))"; uptime
  ctest --test-dir build -R '^distributed$' -V 2>&1 | grep -E '^[0-9]+: (ok|FAIL|merged|[0-9]+ passed)|Passed|Failed'; uptime; } > /work/main/results/evidence/2026-12-01-s5/14/distributed-test.txt
echo "== all done $(date -u +%T)"
