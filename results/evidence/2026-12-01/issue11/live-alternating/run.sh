#!/bin/bash
# 10 kbench processes, one repetition each, against the same warm local broker; odd
# processes run bare_producev before send, even ones after it (--references-last).
cd /tmp/h2-evidence/live-alternating
for p in $(seq 1 10); do
  flag=""; (( p % 2 == 0 )) && flag="--references-last"
  KBENCH_BROKER_VERSION=4.4.0 /tmp/h2-evidence/kbench-a625e18 --bootstrap=127.0.0.1:39092 --benchmark_filter='^Produce/' \
    --produce 'variant=bare_producev|send,acks=1,record_bytes=100' \
    --produce 'variant=bare_producev|send,acks=all,record_bytes=1000' $flag \
    --benchmark_out=processes/p$p.json > processes/p$p.console 2> processes/p$p.stderr
done
python3 /work/wt-h2/scripts/lib/kbench_results.py merge kbench.json processes/p*.json
python3 /work/wt-h2/scripts/lib/kbench_summary.py kbench.json > summary.txt
echo done > done
