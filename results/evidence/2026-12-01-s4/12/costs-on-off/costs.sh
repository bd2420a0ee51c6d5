#!/usr/bin/env bash
# Cost of measuring costs: the same mock send rows with --costs=on and --costs=off,
# processes alternating (on/off first by round), ROUNDS rounds of 3 repetitions each.
set -euo pipefail
cd /work/main
ROUNDS=${ROUNDS:-6}
OUT=${OUT:-/work/main/results/evidence/2026-12-01-s4/12/costs-on-off}
mkdir -p "$OUT"
FILTER='^Produce/send/acks:(1/codec:none/record_bytes:100|all/codec:none/record_bytes:500)/threads:1/producers:1/real_time$'
for ((r = 1; r <= ROUNDS; r++)); do
  if ((r % 2)); then order=(on off); else order=(off on); fi
  for mode in "${order[@]}"; do
    KBENCH_BOOTSTRAP= build/kbench --benchmark_filter="$FILTER" --costs=$mode --window-seconds=2 \
      --warmup-seconds=1 --benchmark_repetitions=3 --benchmark_out="$OUT/r$r-$mode.json" \
      --benchmark_out_format=json >/dev/null 2>"$OUT/r$r-$mode.err"
    echo "round $r $mode done ($(uptime | sed 's/.*load/load/'))" | tee -a "$OUT/progress.txt"
  done
done
/usr/bin/python3 - "$OUT" "$ROUNDS" <<'PY' | tee "$OUT/summary.txt"
import json, statistics, sys, glob, os
out, rounds = sys.argv[1], int(sys.argv[2])
def rates(path):
    d = json.load(open(path))
    res = {}
    for b in d["benchmarks"]:
        if b.get("run_type") == "aggregate" or b.get("error_occurred"):
            continue
        res.setdefault(b["run_name"], []).append(b["items_per_second"])
    return res
names = None
per = {}
for r in range(1, rounds + 1):
    on, off = rates(f"{out}/r{r}-on.json"), rates(f"{out}/r{r}-off.json")
    for n in on:
        per.setdefault(n, []).append((statistics.median(on[n]), statistics.median(off.get(n, [float("nan")]))))
for n, pairs in per.items():
    ons = [a for a, _ in pairs]; offs = [b for _, b in pairs]
    ratios = [a / b for a, b in pairs]
    print(f"{n}\n  on median {statistics.median(ons):,.0f} records/s, off median {statistics.median(offs):,.0f};"
          f" on/off of medians {statistics.median(ons)/statistics.median(offs):.3f};"
          f" per-round ratios {min(ratios):.3f}-{max(ratios):.3f} (median {statistics.median(ratios):.3f}, n={len(ratios)})")
PY
