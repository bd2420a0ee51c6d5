#!/usr/bin/env bash
# ab.sh OUT ROUNDS: scripts/bench --mock (quick profile), one process per run, alternating
# main's build (A: /work/wt-h16-axes/build/kbench, a copy of /work/main/build/kbench at
# 399a7b3) and this branch's (B: a copy of /work/wt-h16-axes-s3/build/kbench (steps 3, 4 and 6)): A B, B A, A B, ...
set -uo pipefail
out=$1 rounds=${2:-5}
mkdir -p "$out"
run() {  # side round
  local root=/work/wt-h16-axes
  [[ $1 == B ]] && root=/work/wt-h16-axes-s6
  echo "$(date -u +%T) start $1$2 (load $(cut -d' ' -f1 /proc/loadavg))" >>"$out/log.txt"
  "$root/scripts/bench" --mock --no-build --processes 1 --out "$out/$1$2" >"$out/$1$2.console" 2>&1
  echo "$(date -u +%T) end $1$2 rc=$?" >>"$out/log.txt"
}
for ((r = 1; r <= rounds; r++)); do
  if ((r % 2)); then run A "$r"; run B "$r"; else run B "$r"; run A "$r"; fi
done
echo "$(date -u +%T) all done" >>"$out/log.txt"
