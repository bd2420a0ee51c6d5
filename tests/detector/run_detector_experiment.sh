#!/usr/bin/env bash
# How well does scripts/bench-commits detect a regression? (kbench issue 5)
#
# Plants a calibrated slowdown into ONE benchmark of a throwaway clone (never into the
# product), then asks scripts/bench-commits, try after try, whether it sees it:
#   instr-slow5   base vs slow5  with --instructions   target: flagged 10 of 10
#   instr-same    base vs same   with --instructions   target: flagged  0 of 10
#   time-slow10   base vs slow10 timing, --runs N      target: flagged >= 9 of 10
#   time-same     base vs same   timing, --runs N      target: flagged <= 1 of 10
# Documentation you can rerun, not part of CI: the default run takes ~30-40 minutes on a
# loaded 2-core machine. Results: tests/detector/README.md.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: tests/detector/run_detector_experiment.sh [options]

Clones the kbench repository this script lives in (committed HEAD only) into a
scratch directory, creates three throwaway commits on top of it:
  same    an empty commit (identical build, different sha)
  slow5   Codec/compress/codec:zstd/level:3/payload:az/record_bytes:100/
          batch_bytes:65536 compresses the first FRACTION5 of its batch again
  slow10  the same with FRACTION10
and runs scripts/bench-commits base X for each case, --tries times. Builds are
made once (bench-commits --build-cache) and reused by every try.

Options:
  --tries N          tries per case (default 10)
  --cases LIST       comma-separated subset of instr-slow5,instr-same,
                     time-slow10,time-same (default: all four)
  --runs N           runs per side in timing mode (default 10; >= 5 needed for
                     p < 0.01)
  --min-time S       --benchmark_min_time per run in timing mode (default 0.1)
  --iterations N     --iterations in instruction mode (default 100)
  --fraction5 F      extra fraction of the batch compressed in slow5 (default
                     0.0147, calibrated to +4.8 % instructions; see README.md)
  --fraction10 F     the same for slow10 (default 0.025, calibrated to about
                     +10 % CPU time)
  --work DIR         scratch directory (default: a new mktemp -d); an existing
                     DIR/repo is reused, so a second call skips the builds
  -h, --help         this text

Output: DIR/results.tsv (one line per try: case, try, bench-commits exit
status, flagged, the slowed row's change and p-value, the other row's, load
average), DIR/out/CASE-TRY/ (bench-commits' own results), and on stdout the
count per case and a Markdown table of every try in DIR/results.tsv.
EOF
}

die() { echo "run_detector_experiment: error: $*" >&2; exit 2; }
log() { echo "run_detector_experiment: $*" >&2; }

tries=10
cases="instr-slow5,instr-same,time-slow10,time-same"
runs=10
min_time=0.1
iterations=100
fraction5=0.0147
fraction10=0.025
work=""

need_value() { [[ $# -ge 2 && -n "$2" ]] || die "$1 needs a value (see --help)"; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --tries) need_value "$@"; tries=$2; shift 2 ;;
    --cases) need_value "$@"; cases=$2; shift 2 ;;
    --runs) need_value "$@"; runs=$2; shift 2 ;;
    --min-time) need_value "$@"; min_time=$2; shift 2 ;;
    --iterations) need_value "$@"; iterations=$2; shift 2 ;;
    --fraction5) need_value "$@"; fraction5=$2; shift 2 ;;
    --fraction10) need_value "$@"; fraction10=$2; shift 2 ;;
    --work) need_value "$@"; work=$2; shift 2 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[[ "$tries" =~ ^[1-9][0-9]*$ ]] || die "--tries must be a positive integer, got '$tries'"
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || die "--runs must be a positive integer, got '$runs'"
[[ "$iterations" =~ ^[1-9][0-9]*$ ]] || die "--iterations must be a positive integer, got '$iterations'"
[[ "$min_time" =~ ^[0-9]*\.?[0-9]+$ ]] || die "--min-time must be a number of seconds, got '$min_time'"
[[ $runs -ge 5 ]] || log "warning: --runs $runs < 5 cannot reach p < 0.01: every timing try is inconclusive"
IFS=, read -r -a case_list <<<"$cases"
for c in "${case_list[@]}"; do
  case "$c" in instr-slow5|instr-same|time-slow10|time-same) ;; *) die "unknown case '$c'" ;; esac
done

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
kbench=$(cd "$here/../.." && pwd)
bench_commits="$kbench/scripts/bench-commits"
py=/usr/bin/python3
[[ -x "$bench_commits" ]] || die "$bench_commits not found"

# The slowed benchmark and one untouched neighbour (lz4, the same data and batch).
slowed='Codec/compress/codec:zstd/level:3/payload:az/record_bytes:100/batch_bytes:65536'
other='Codec/compress/codec:lz4/level:1/payload:az/record_bytes:100/batch_bytes:65536'
filter='^Codec/compress/codec:(zstd/level:3|lz4/level:1)/payload:az/record_bytes:100/batch_bytes:65536$'

[[ -n "$work" ]] || work=$(mktemp -d "${TMPDIR:-/tmp}/kbench-detector.XXXXXX")
mkdir -p "$work" || die "cannot create $work"
work=$(cd "$work" && pwd)
repo="$work/repo"

commit() {  # commit everything in $repo with a fixed identity (no user config needed)
  git -C "$repo" -c user.name=detector -c user.email=detector@localhost \
    commit -q --allow-empty -am "$1"
}

if [[ ! -d "$repo/.git" ]]; then
  log "cloning $kbench into $repo"
  git clone -q "$kbench" "$repo"
  git -C "$repo" branch -q base HEAD
  git -C "$repo" checkout -q -b same base
  commit "detector: identical build (empty commit)"
  for pair in "slow5:$fraction5" "slow10:$fraction10"; do
    git -C "$repo" checkout -q -b "${pair%%:*}" base
    "$here/plant_slowdown.py" "$repo/benchmarks/codec_bench.cc" "${pair#*:}"
    commit "detector: planted slowdown, fraction ${pair#*:}"
  done
  git -C "$repo" checkout -q base
else
  log "reusing $repo (its commits keep the fractions they were made with)"
fi
for b in base same slow5 slow10; do
  git -C "$repo" rev-parse --verify --quiet "$b" >/dev/null || die "$repo has no branch '$b'"
done

# One try's row of results.tsv from its verdict.json.
summarize() {
  "$py" - "$@" <<'EOF'
import json, sys
verdict, slowed, other, instr = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"
metric = "instructions" if instr else "cpu_time"
try:
    v = json.load(open(verdict))
except (OSError, ValueError):
    print("\t".join(["-"] * 5)); sys.exit(0)
rows = [r for k in ("regressions", "improvements", "unchanged", "inconclusive") for r in v[k]]
def cell(name):
    for r in rows:
        if r["name"] == name and r["metric"] == metric:
            ch = "-" if r["change_pct"] is None else "%+.3f" % r["change_pct"]
            p = "-" if r.get("p_value") is None else "%.2g" % r["p_value"]
            return ch, p
    return "-", "-"
slowed_flagged = any(r["name"] == slowed for r in v["regressions"])
print("\t".join([str(int(slowed_flagged)), str(len(v["regressions"])), *cell(slowed), *cell(other)]))
EOF
}

results="$work/results.tsv"
[[ -s "$results" ]] || printf 'case\ttry\trc\tflagged\tslowed_regression\tn_regressions\tslowed_change_pct\tslowed_p\tother_change_pct\tother_p\tload1\n' >"$results"

for c in "${case_list[@]}"; do
  case "$c" in
    instr-slow5) new=slow5; mode=(--instructions --iterations "$iterations") ;;
    instr-same) new=same; mode=(--instructions --iterations "$iterations") ;;
    time-slow10) new=slow10; mode=(--runs "$runs" -- --benchmark_min_time="$min_time") ;;
    time-same) new=same; mode=(--runs "$runs" -- --benchmark_min_time="$min_time") ;;
  esac
  instr=0; [[ "$c" == instr-* ]] && instr=1
  flagged_total=0
  for ((t = 1; t <= tries; t++)); do
    out="$work/out/$c-$t"
    rm -rf "$out"
    mkdir -p "$work/out"
    log "$c try $t/$tries ($(uptime | sed 's/.*load/load/'))"
    set +e
    "$bench_commits" base "$new" --repo "$repo" --build-cache "$work/builds" \
      --out-dir "$out" --filter "$filter" "${mode[@]}" >"$out.log" 2>&1
    rc=$?
    set -e
    [[ $rc -le 1 && -s "$out/verdict.json" ]] \
      || { tail -n 20 "$out.log" >&2; die "bench-commits failed (exit $rc), log: $out.log"; }
    IFS=$'\t' read -r slowed_reg n_reg s_ch s_p o_ch o_p < <(summarize "$out/verdict.json" "$slowed" "$other" "$instr")
    # A slowdown counts as seen only when its own row is a regression; for identical
    # builds any regression at all is a false alarm.
    if [[ "$new" == same ]]; then flagged=$rc; else flagged=$slowed_reg; fi
    flagged_total=$((flagged_total + flagged))
    load1=$(cut -d' ' -f1 /proc/loadavg)
    printf '%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$c" "$t" "$rc" "$flagged" "$slowed_reg" \
      "$n_reg" "$s_ch" "$s_p" "$o_ch" "$o_p" "$load1" >>"$results"
    log "$c try $t: exit $rc, flagged $flagged, slowed $s_ch % (p $s_p), other $o_ch % (p $o_p)"
  done
  echo "$c: flagged $flagged_total of $tries"
done
log "per-try results: $results"

# The whole results.tsv (all cases run with this --work so far) as Markdown, for README.md.
"$py" - "$results" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
print("\n| case | try | exit | flagged | slowed: change % | p | lz4 row: change % | p | load (1 min) |")
print("|---|---|---|---|---|---|---|---|---|")
for r in sorted(rows, key=lambda r: (r["case"], int(r["try"]))):
    print("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
        r["case"], r["try"], r["rc"], r["flagged"], r["slowed_change_pct"], r["slowed_p"],
        r["other_change_pct"], r["other_p"], r["load1"]))
print()
for c in sorted({r["case"] for r in rows}):
    sel = [r for r in rows if r["case"] == c]
    print("%s: flagged %d of %d" % (c, sum(int(r["flagged"]) for r in sel), len(sel)))
EOF
