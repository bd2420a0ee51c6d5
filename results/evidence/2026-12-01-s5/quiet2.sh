#!/usr/bin/env bash
# Quiet-machine measurements, part 2 (session 5): issue 11 and 13 goals.
set -u
cd /work/main
while ! grep -q "== all done" /work/ev5/quiet.log; do sleep 10; done
E=/work/main/results/evidence/2026-12-01-s5/11
echo "== build $(date -u +%T)"; ninja -C build kbench > /work/ev5/build.log 2>&1; echo "build rc=$?"
# 1. Two max-rate searches in a row on one fresh broker; the kernel's dirty/writeback pages
#    sampled every second (is a capacity drop the page cache filling?).
K=/tmp/s5-k; scripts/kafka stop --dir $K >/dev/null 2>&1; rm -rf $K
B=$(scripts/kafka start --port-base auto --dir $K)
echo "== maxrate start $(date -u +%T) broker $B"
(while :; do echo "$(date +%s) $(awk '/^(Dirty|Writeback):/ {printf "%s %s kB ", $1, $2}' /proc/meminfo)"; sleep 1; done) > $E/maxrate-dirty.txt &
SP=$!
for i in 1 2; do
  { date -u +%s; uptime; } > $E/maxrate-$i.uptime
  echo "build/kbench --bootstrap $B --benchmark_filter='^Produce/max_rate/' --benchmark_out=maxrate-$i.json" > $E/maxrate-$i.cmd
  build/kbench --bootstrap $B --benchmark_filter='^Produce/max_rate/' --benchmark_out=$E/maxrate-$i.json --benchmark_out_format=json > $E/maxrate-$i.txt 2>&1
  echo "maxrate $i rc=$? $(date -u +%T) $(uptime)"; date -u +%s >> $E/maxrate-$i.uptime
done
kill $SP; scripts/kafka stop --dir $K >/dev/null 2>&1
# 2. send / bare_producev on a live broker, 10 processes alternating the reference's order.
echo "== live ratio $(date -u +%T)"
scripts/bench --no-build --no-history --processes 10 --filter '^Produce/' --out /tmp/s5-ratio-live \
  -- --produce 'variant=send|bare_producev,acks=1,record_bytes=100' --produce 'variant=send|bare_producev,acks=all,record_bytes=1000' > $E/ratio-live.out 2>&1
echo "live ratio rc=$? $(date -u +%T) $(uptime)"
mkdir -p $E/ratio-live && cp /tmp/s5-ratio-live/{kbench.json,command.txt,summary.txt} $E/ratio-live/ 2>/dev/null
# 3. The mock cluster: default single-threaded closed-loop rows against bare_producev twins.
echo "== mock ratio $(date -u +%T)"
scripts/bench --mock --no-build --no-history --processes 6 --filter '^Produce/' --out /tmp/s5-ratio-mock \
  -- --produce 'variant=send|bare_producev,acks=1,record_bytes=100' \
     --produce 'variant=send|bare_producev,acks=0|1|all,record_bytes=500' \
     --produce 'variant=send|bare_producev,acks=all,codec=gzip|snappy|lz4|zstd,record_bytes=500' \
     --produce 'variant=send|bare_producev,acks=1,codec=zstd,record_bytes=500' \
     --produce 'variant=send|bare_producev,acks=1,record_bytes=2000,batch_bytes=8196,partitions=15' \
     --produce 'variant=send|bare_producev,acks=1,record_bytes=500,partitions=16' \
     --produce 'variant=send|bare_producev,acks=1,record_bytes=500,partitions=16,keys=uniform|zipf,key_count=1000' \
     --produce 'variant=send|bare_producev,acks=all,record_bytes=500,idempotence=true' > $E/ratio-mock.out 2>&1
echo "mock ratio rc=$? $(date -u +%T) $(uptime)"
mkdir -p $E/ratio-mock && cp /tmp/s5-ratio-mock/{kbench.json,command.txt,summary.txt} $E/ratio-mock/ 2>/dev/null
# 4. Issue 13: history add of a quick-profile run, and the 200 x 400 report.
E13=/work/main/results/evidence/2026-12-01-s5/13
echo "== history $(date -u +%T)"
rm -rf /tmp/s5-hq; mkdir -p /tmp/s5-hq
{ for i in 1 2 3 4 5; do rm -f /tmp/s5-hq/h.sqlite; echo "\$ uptime: $(uptime)"
  echo "\$ /usr/bin/time -f '%e s wall, %U s user, %S s sys' scripts/history --db /tmp/s5-hq/h.sqlite add results/baseline/quick-live.json"
  /usr/bin/time -f '%e s wall, %U s user, %S s sys' scripts/history --db /tmp/s5-hq/h.sqlite add results/baseline/quick-live.json 2>&1; done; } > $E13/add_quick_run.txt
$E13/scale_goal.sh > /work/ev5/scale.out 2>&1; echo "scale rc=$? $(date -u +%T) $(uptime)"
echo "== all done $(date -u +%T)"
