#!/usr/bin/env bash
# How well does the regression gate (scripts/bench-commits -> scripts/compare) tell a
# planted slowdown from noise?
#
# Plants known slowdowns into a throwaway clone (never into the product), then asks
# scripts/bench-commits, try after try, whether it sees them, and whether it stays
# silent on identical builds. Documentation you can rerun, not part of CI: the default
# run takes about an hour on a loaded 2-core machine. Method: tests/detector/README.md;
# results: docs/validation.md.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: tests/detector/run_detector_experiment.sh [options]

Clones the kbench repository this script lives in (committed HEAD only) into a
scratch directory and makes two throwaway commits on top of it:
  same    an empty commit (identical build, different sha)
  slow    plant_slowdown.py: the zstd Codec/compress row spins for
          $KBENCH_DETECTOR_SPIN x each iteration's time, and the mock Produce/send
          acks:1 100-byte row's producing thread for that fraction of its send path's
          time (every 64 records); the zstd row also hashes $KBENCH_DETECTOR_FRACTION of
          its batch (instructions). Unset, both are 0: the slow build runs like base.
then runs scripts/bench-commits base X, --tries times per case:
  time-slow10     Codec rows, timing, spin 0.10      target: flagged >= 19 of 20
  time-same       Codec rows, timing, identical      target: flagged     0 of 20
  produce-slow10  mock Produce rows, send path 0.10  target: flagged >=  9 of 10
  produce-same    mock Produce rows, identical       target: flagged <=  1 of 10
  instr-slow1     Codec rows, callgrind, +1 % Ir     target: flagged    10 of 10
  instr-same      Codec rows, callgrind, identical   target: flagged     0 of 10
A slowdown counts as flagged when its own row is a regression; for identical
builds any regression OR improvement is a false alarm. Builds are made once
(bench-commits --build-cache) and reused by every try.

Options:
  --tries N          tries per case (default 20 for time-*, 10 for the others)
  --cases LIST       comma-separated subset of the cases above (default: all)
  --runs N           runs (processes) per side in timing mode (default 10)
  --min-time S       --benchmark_min_time per run in timing mode (default 0.1)
  --iterations N     --iterations in instruction mode (default 100)
  --spin F           planted time fraction (default 0.10)
  --instr-fraction F fraction of the batch hashed in the instruction case
                     (default 0.0196, calibrated to +1.0 % Ir)
  --threshold PCT    bench-commits' threshold in instruction mode (default:
                     bench-commits' own)
  --work DIR         scratch directory (default: a new mktemp -d); an existing
                     DIR/repo is reused, so a second call skips the builds
  -h, --help         this text

Output: DIR/results.tsv (one line per try: case, try, bench-commits exit
status, flagged, counts of regressions/improvements/inconclusive rows, the
slowed row's change, interval, p-value and verdict, the other row's, load
average), DIR/out/CASE-TRY/ (bench-commits' own results), and on stdout the
count per case with its 95 % Wilson interval and a Markdown table of every try.
EOF
}

PROG=run_detector_experiment
# shellcheck source-path=SCRIPTDIR source=../lib/cli_lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib/cli_lib.sh"

tries=""
cases="time-slow10,time-same,produce-slow10,produce-same,instr-slow1,instr-same"
runs=10
min_time=0.1
iterations=100
spin=0.10
instr_fraction=0.0196
instr_threshold=""
work=""

while [[ $# -gt 0 ]]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --tries) need_value "$@"; tries=$2; shift 2 ;;
    --cases) need_value "$@"; cases=$2; shift 2 ;;
    --runs) need_value "$@"; runs=$2; shift 2 ;;
    --min-time) need_value "$@"; min_time=$2; shift 2 ;;
    --iterations) need_value "$@"; iterations=$2; shift 2 ;;
    --spin) need_value "$@"; spin=$2; shift 2 ;;
    --instr-fraction) need_value "$@"; instr_fraction=$2; shift 2 ;;
    --threshold) need_value "$@"; instr_threshold=$2; shift 2 ;;
    --work) need_value "$@"; work=$2; shift 2 ;;
    *) die 2 "unknown argument '$1' (see --help)" ;;
  esac
done
[[ -z "$tries" || "$tries" =~ ^[1-9][0-9]*$ ]] || die 2 "--tries must be a positive integer, got '$tries'"
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || die 2 "--runs must be a positive integer, got '$runs'"
[[ "$iterations" =~ ^[1-9][0-9]*$ ]] || die 2 "--iterations must be a positive integer, got '$iterations'"
[[ "$min_time" =~ ^[0-9]*\.?[0-9]+$ ]] || die 2 "--min-time must be a number of seconds, got '$min_time'"
[[ "$spin" =~ ^0?\.[0-9]+$ ]] || die 2 "--spin must be a fraction in (0, 1), got '$spin'"
[[ "$instr_fraction" =~ ^0?\.[0-9]+$ ]] || die 2 "--instr-fraction must be a fraction in (0, 1), got '$instr_fraction'"
[[ $runs -ge 5 ]] || info "warning: --runs $runs < 5 cannot reach p < 0.01: every timing try is inconclusive"
IFS=, read -r -a case_list <<<"$cases"
for c in "${case_list[@]}"; do
  case "$c" in
    time-slow10|time-same|produce-slow10|produce-same|instr-slow1|instr-same) ;;
    *) die 2 "unknown case '$c'" ;;
  esac
done

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
kbench=$(cd "$here/../.." && pwd)
bench_commits="$kbench/scripts/bench-commits"
compare="$kbench/scripts/compare"
py="$kbench/scripts/lib/python"
[[ -x "$bench_commits" ]] || die 2 "$bench_commits not found"

# The slowed rows, each with an untouched neighbour measured in the same runs.
codec_slowed='Codec/compress/codec:zstd/level:3/payload:az/record_bytes:100/batch_bytes:65536'
codec_other='Codec/compress/codec:lz4/level:1/payload:az/record_bytes:100/batch_bytes:65536'
codec_filter='^Codec/compress/codec:(zstd/level:3|lz4/level:1)/payload:az/record_bytes:100/batch_bytes:65536$'
produce_slowed='Produce/send/acks:1/codec:none/record_bytes:100/threads:1/producers:1/real_time'
produce_other='Produce/bare_producev/acks:1/codec:none/record_bytes:100/threads:1/producers:1/real_time'
produce_filter='^Produce/(send|bare_producev)/acks:1/codec:none/record_bytes:100/threads:1/producers:1/real_time$'

[[ -z "$work" ]] || check_out_dir --work "$work"
[[ -n "$work" ]] || work=$(mktemp -d "${TMPDIR:-/tmp}/kbench-detector.XXXXXX")
mkdir -p "$work" || die 2 "cannot create $work"
work=$(cd "$work" && pwd)
repo="$work/repo"

commit() {  # commit everything in $repo with a fixed identity (no user config needed)
  git -C "$repo" -c user.name=detector -c user.email=detector@localhost \
    commit -q --allow-empty -am "$1"
}

if [[ ! -d "$repo/.git" ]]; then
  info "cloning $kbench into $repo"
  git clone -q "$kbench" "$repo"
  git -C "$repo" branch -q base HEAD
  git -C "$repo" checkout -q -b same base
  commit "detector: identical build (empty commit)"
  git -C "$repo" checkout -q -b slow base
  "$py" "$here/plant_slowdown.py" spin "$repo" env "$codec_slowed"
  "$py" "$here/plant_slowdown.py" send "$repo" env "$produce_slowed"
  "$py" "$here/plant_slowdown.py" instructions "$repo" env
  commit "detector: planted slowdowns, sized at run time by KBENCH_DETECTOR_SPIN/FRACTION"
  git -C "$repo" checkout -q base
else
  info "reusing $repo"
fi
for b in base same slow; do
  git -C "$repo" rev-parse --verify --quiet "$b" >/dev/null || die 2 "$repo has no branch '$b'"
done

# One try's fields for results.tsv from its verdict.json.
summarize() {
  "$py" - "$@" <<'PYEOF'
import json, sys
verdict, slowed, other, metric = sys.argv[1:5]
try:
    v = json.load(open(verdict))
except (OSError, ValueError):
    print("\t".join(["-"] * 11)); sys.exit(0)
rows = [r for k in ("regressions", "improvements", "unchanged", "inconclusive") for r in v[k]]
def cell(name):
    for r in rows:
        if r["name"] == name and r["metric"] == metric:
            ch = "-" if r["change_pct"] is None else "%+.3f" % r["change_pct"]
            ci = ("-" if r.get("ci_low_pct") is None
                  else "[%+.1f,%+.1f]" % (r["ci_low_pct"], r["ci_high_pct"]))
            p = "-" if r.get("p_value") is None else "%.2g" % r["p_value"]
            return ch, ci, p, r["verdict"]
    return "-", "-", "-", "-"
flagged = any(r["name"] == slowed and r["metric"] == metric for r in v["regressions"])
s, o = cell(slowed), cell(other)
print("\t".join([str(int(flagged)), str(len(v["regressions"])), str(len(v["improvements"])),
                 str(len(v["inconclusive"])), s[0], s[1], s[2], s[3], o[0], o[2], o[3]]))
PYEOF
}

results="$work/results.tsv"
[[ -s "$results" ]] || printf 'case\ttry\trc\tflagged\tn_regressions\tn_improvements\tn_inconclusive\tslowed_change_pct\tslowed_ci\tslowed_p\tslowed_verdict\tother_change_pct\tother_p\tother_verdict\tload1\n' >"$results"

for c in "${case_list[@]}"; do
  env_args=(KBENCH_BOOTSTRAP=)  # Produce rows: librdkafka's in-process mock cluster
  case "$c" in
    instr-*)
      filter=$codec_filter slowed=$codec_slowed other=$codec_other metric=instructions
      mode=(--instructions --iterations "$iterations" ${instr_threshold:+--threshold "$instr_threshold"})
      env_args+=(KBENCH_DETECTOR_FRACTION="$instr_fraction") ;;
    time-*)
      filter=$codec_filter slowed=$codec_slowed other=$codec_other metric=cpu_time
      mode=(--runs "$runs" -- --benchmark_min_time="$min_time")
      env_args+=(KBENCH_DETECTOR_SPIN="$spin") ;;
    produce-*)
      filter=$produce_filter slowed=$produce_slowed other=$produce_other metric=items_per_second
      mode=(--runs "$runs" -- --benchmark_min_time="$min_time")
      env_args+=(KBENCH_DETECTOR_SPIN="$spin") ;;
  esac
  case "$c" in *-same) new=same ;; *) new=slow ;; esac
  n_tries=$tries
  if [[ -z "$n_tries" ]]; then
    if [[ "$c" == time-* ]]; then n_tries=20; else n_tries=10; fi
  fi
  flagged_total=0
  for ((t = 1; t <= n_tries; t++)); do
    out="$work/out/$c-$t"
    rm -rf "$out"
    mkdir -p "$work/out"
    info "$c try $t/$n_tries ($(uptime | sed 's/.*load/load/'))"
    set +e
    env "${env_args[@]}" "$bench_commits" base "$new" --repo "$repo" --build-cache "$work/builds" \
      --out-dir "$out" --filter "$filter" "${mode[@]}" >"$out.log" 2>&1
    rc=$?
    set -e
    if [[ ! ( $rc -le 1 || $rc -eq 3 ) || ! -s "$out/verdict.json" ]]; then
      tail -n 20 "$out.log" >&2
      die 2 "bench-commits failed (exit $rc), log: $out.log"
    fi
    IFS=$'\t' read -r slowed_reg n_reg n_imp n_inc s_ch s_ci s_p s_v o_ch o_p o_v \
      < <(summarize "$out/verdict.json" "$slowed" "$other" "$metric")
    # A slowdown counts as seen only when its own row is a regression; for identical
    # builds any regression or improvement is a false alarm.
    if [[ "$new" == same ]]; then
      flagged=$(( n_reg + n_imp > 0 ? 1 : 0 ))
    else
      flagged=$slowed_reg
    fi
    flagged_total=$((flagged_total + flagged))
    load1=$(cut -d' ' -f1 /proc/loadavg)
    printf '%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$c" "$t" "$rc" "$flagged" \
      "$n_reg" "$n_imp" "$n_inc" "$s_ch" "$s_ci" "$s_p" "$s_v" "$o_ch" "$o_p" "$o_v" "$load1" >>"$results"
    info "$c try $t: exit $rc, flagged $flagged, slowed $s_ch % $s_ci (p $s_p, $s_v), other $o_ch % (p $o_p, $o_v)"
    # Timing cases: the same runs judged unpaired too (case NAME:unpaired), so the two
    # analyses are compared on identical data.
    if [[ "$c" != instr-* ]]; then
      set +e
      "$compare" "$out/base.json" "$out/new.json" --unpaired --out "$out/verdict-unpaired.json" \
        >"$out/compare-unpaired.txt" 2>&1
      urc=$?
      set -e
      IFS=$'\t' read -r slowed_reg n_reg n_imp n_inc s_ch s_ci s_p s_v o_ch o_p o_v \
        < <(summarize "$out/verdict-unpaired.json" "$slowed" "$other" "$metric")
      if [[ "$new" == same ]]; then
        flagged=$(( n_reg + n_imp > 0 ? 1 : 0 ))
      else
        flagged=$slowed_reg
      fi
      printf '%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$c:unpaired" "$t" "$urc" \
        "$flagged" "$n_reg" "$n_imp" "$n_inc" "$s_ch" "$s_ci" "$s_p" "$s_v" "$o_ch" "$o_p" "$o_v" \
        "$load1" >>"$results"
      info "$c try $t unpaired: exit $urc, flagged $flagged, slowed $s_ch % $s_ci (p $s_p, $s_v)"
    fi
  done
  echo "$c: flagged $flagged_total of $n_tries"
done
info "per-try results: $results"

# The whole results.tsv (all cases run with this --work so far) as Markdown.
"$py" - "$results" <<'PYEOF'
import csv, math, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
def wilson(k, n, z=1.959964):
    """95 % Wilson score interval of a rate k/n (stdlib only: no scipy needed here)."""
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return max(0.0, c - h), min(1.0, c + h)
print("\n| case | try | exit | flagged | slowed: change % | interval | p | verdict "
      "| other: change % | p | verdict | load (1 min) |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for r in sorted(rows, key=lambda r: (r["case"], int(r["try"]))):
    print("| %s |" % " | ".join(r[k] for k in (
        "case", "try", "rc", "flagged", "slowed_change_pct", "slowed_ci", "slowed_p",
        "slowed_verdict", "other_change_pct", "other_p", "other_verdict", "load1")))
print()
for c in sorted({r["case"] for r in rows}):
    sel = [r for r in rows if r["case"] == c]
    k = sum(int(r["flagged"]) for r in sel)
    lo, hi = wilson(k, len(sel))
    inc = sum(1 for r in sel if r["slowed_verdict"] == "inconclusive")
    print("%s: flagged %d of %d (%.0f %%, 95 %% Wilson interval %.0f-%.0f %%); slowed row "
          "inconclusive in %d" % (c, k, len(sel), 100.0 * k / len(sel), 100 * lo, 100 * hi, inc))
PYEOF
