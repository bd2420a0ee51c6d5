#!/usr/bin/env bash
# The issue-14 goals, measured: run from the repository root as root, after a build.
#   results/evidence/2026-12-01-s3/14/goals.sh OUTDIR
# 1. 3 agents x rate R: merged achieved rate vs 3R.
# 2. one agent through Trogdor vs the same kbench row started directly in the same
#    namespace, same broker, interleaved (3 rounds, open loop and closed loop).
# 3. seconds from `scripts/distributed run` to the first record (warm-up start).
set -euo pipefail
OUT="$(realpath -m "${1:?OUTDIR}")"
mkdir -p "$OUT"
T=/tmp/kbench-h14-goals-trogdor K=/tmp/kbench-h14-goals-kafka
cleanup() { scripts/trogdor stop --dir "$T" >/dev/null 2>&1 || true; scripts/kafka stop --dir "$K" >/dev/null 2>&1 || true; }
trap cleanup EXIT
HOST="$(scripts/trogdor start --agents 3 --dir "$T")"
B="$(scripts/kafka start --port-base auto --host "$HOST" --dir "$K")"
uptime >"$OUT/uptime-start.txt"
R=5000
# Goal 1 (and 3, from the same runs): 3 rounds.
for i in 1 2 3; do
  t0=$(date +%s.%N)
  scripts/distributed run --dir "$T" --agents 3 --bootstrap "$B" --window-seconds 5 \
    --produce "acks=1,record_bytes=100,rate=$R" --out "$OUT/goal1-round$i.json" 2>"$OUT/goal1-round$i.err"
  echo "$t0" >"$OUT/goal1-round$i.t0"
done
# Goal 2: interleaved, agent-0's namespace for both.
NS="$(ip netns list | awk '{print $1}' | grep "^kbt$(printf '%s' "$T" | md5sum | cut -c1-5)-agent-0$")"
for i in 1 2 3; do
  for spec in "acks=1,record_bytes=100,rate=20000" "acks=1,record_bytes=100"; do
    tag=$([[ $spec == *rate* ]] && echo open || echo closed)
    scripts/distributed run --dir "$T" --agents 1 --bootstrap "$B" --window-seconds 5 \
      --produce "$spec" --out "$OUT/goal2-$tag-trogdor-round$i.json" 2>"$OUT/goal2-$tag-trogdor-round$i.err"
    ip netns exec "$NS" build/kbench --bootstrap="$B" --produce="$spec" --benchmark_filter=^Produce/ \
      --window-seconds=5 --warmup-seconds=1 --benchmark_out="$OUT/goal2-$tag-direct-round$i.json" \
      --benchmark_out_format=json >/dev/null 2>"$OUT/goal2-$tag-direct-round$i.err"
  done
done
uptime >"$OUT/uptime-end.txt"
