#!/bin/bash
# Live: is a row's first repetition in steady state? One broker, the quick profile's
# 500 B acks=1 row and the 8-thread row, 6 repetitions, warm-up 1 s (default) and 5 s,
# with Dirty/Writeback pages and the broker's CPU sampled every second.
cd /work/main
D=/work/ev6/cold/kafka
B=$(scripts/kafka start --port-base auto --dir $D) || exit 1
echo "bootstrap $B"
PID=$(scripts/kafka status --dir $D | awk '/pid/{print $NF; exit}')
( while sleep 1; do echo "$(date +%s.%N | cut -c1-14) $(grep -E '^(Dirty|Writeback):' /proc/meminfo | awk '{printf "%s %s ", $1, $2}') $(cat /proc/loadavg | cut -d' ' -f1)"; done ) > /work/ev6/cold/meminfo.txt &
SAMPLER=$!
uptime > /work/ev6/cold/uptime.before
for w in 1 5 1 5; do
  for row in 'variant=send,acks=1,record_bytes=500' 'variant=send,acks=1,record_bytes=250-750,threads=8,producers=1,payload=random,linger_ms=1,batch_bytes=65536'; do
    n=$((n+1))
    echo "run $n warmup $w $row $(date +%s)"
    build/kbench --bootstrap $B --benchmark_filter='^Produce/' --produce "$row" --warmup-seconds=$w \
      --benchmark_repetitions=6 --benchmark_out=/work/ev6/cold/r$n.w$w.json --benchmark_out_format=json \
      > /work/ev6/cold/r$n.txt 2> /work/ev6/cold/r$n.err
  done
done
uptime > /work/ev6/cold/uptime.after
kill $SAMPLER
cp $D/logs/*gc* /work/ev6/cold/ 2>/dev/null; ls $D/logs > /work/ev6/cold/logs.ls
scripts/kafka stop --dir $D
