#!/usr/bin/env bash
# Runs every scenario of scripts/scenarios/ at --tiny scale against real Kafka brokers and
# checks what each leaves behind (Google Benchmark JSON, report.md with its expected
# headings and rows, a PNG), plus scripts/scenario's refusals: an unknown name, a bad
# scale, and a 3-broker scenario pointed at a 1-broker cluster. About 4 minutes on 2 cores.
#
# Usage: tests/scenarios/scenario_test.sh [--part broker|no-broker] [--help]
#   --part no-broker  the usage refusals and the scenarios whose --tiny run needs no broker
#                     (NO_BROKER below); ctest runs it beside the kafka-locked tests
#   --part broker     the rest, from one shared 1-broker cluster on; without --part, both
# Env: KBENCH_BIN (default build/kbench), KBENCH_TEST_KEEP=1 (or SCENARIO_TEST_KEEP=1) keeps
# the work directory.
set -euo pipefail

part=all
if [[ ${1:-} == --part ]]; then
  case "${2:-}" in
    broker | no-broker) part=$2 ;;
    *) echo "scenario_test: --part needs broker or no-broker, got '${2:-}'" >&2; exit 2 ;;
  esac
  shift 2
fi
# shellcheck source-path=SCRIPTDIR source=../lib/live_test_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/live_test_lib.sh"
live_test_init scenario-test "$@"
live_need_kbench
[[ $part == no-broker ]] || live_need_java
# Scenarios whose --tiny run starts no broker: known-regressions replays its control case
# on kbench's mock cluster (it builds HEAD's kbench, which needs no broker either).
NO_BROKER=(known-regressions)
: "${KBENCH_TEST_KEEP:=${SCENARIO_TEST_KEEP:-0}}"
SCENARIO="$ROOT/scripts/scenario"

# expect_exit CODE DESCRIPTION PATTERN COMMAND...: exit status and a stderr pattern.
expect_exit() {
  local want=$1 what=$2 pattern=$3 rc=0
  shift 3
  "$@" >"$WORK/out" 2>"$WORK/err" || rc=$?
  if [[ $rc != "$want" ]]; then
    not_ok "$what: exit $rc, want $want; stderr: $(head -c 400 "$WORK/err")"
  elif ! grep -Eq -- "$pattern" "$WORK/err"; then
    not_ok "$what: stderr lacks /$pattern/: $(head -c 400 "$WORK/err")"
  else
    ok "$what"
  fi
}

# check_outputs NAME DIR HEADING_REGEX...: JSON with live, error-free benchmarks, a report
# with every heading/row pattern, and a PNG.
check_outputs() {
  local name=$1 dir=$2 pat
  shift 2
  local jsons=("$dir"/*.json)
  if [[ ! -e ${jsons[0]} ]]; then
    not_ok "$name: JSON written: no $dir/*.json"
  elif "$PY" - "$dir" <<'EOF'; then ok "$name: JSON is Google Benchmark JSON from a live cluster"; else not_ok "$name: JSON is Google Benchmark JSON from a live cluster"; fi
import glob, json, os, sys
d = sys.argv[1]
bad = []
for p in sorted(glob.glob(os.path.join(d, "*.json"))):
    if os.path.basename(p) == "verdict.json":
        continue
    data = json.load(open(p))
    ctx = data.get("context", {})
    benches = data.get("benchmarks", [])
    if not benches:
        bad.append("%s: no benchmarks" % p)
    if ctx.get("target") != "live":
        bad.append("%s: target %r" % (p, ctx.get("target")))
    for b in benches:
        if b.get("error_occurred"):
            bad.append("%s: %s failed: %s" % (p, b["name"], b.get("error_message")))
        elif not b["name"].startswith("Produce/") or not b.get("items_per_second", 0) > 0:
            bad.append("%s: %s has no items_per_second" % (p, b["name"]))
for b in bad:
    print("  " + b, file=sys.stderr)
sys.exit(1 if bad else 0)
EOF
  if [[ -f $dir/report.md ]]; then
    for pat in "$@"; do
      check "$name: report.md has /$pat/" grep -Eq -- "$pat" "$dir/report.md"
    done
  else
    not_ok "$name: report.md written"
  fi
  local pngs=("$dir"/*.png)
  if [[ -e ${pngs[0]} ]] && file "${pngs[0]}" | grep -q 'PNG image'; then
    ok "$name: PNG chart written"
  else
    not_ok "$name: PNG chart written"
  fi
}

# Headings and rows every report must state: machine, versions, scale, what differs.
COMMON=('^## Setup of this run' '\| machine +\| .*cores' '\| librdkafka +\| [0-9]' '\| scale +\| tiny'
  'Not the original setup')

ran=()
run_scenario() { # run_scenario NAME [args...]: true if it exits 0
  local name=$1 start=$SECONDS rc=0
  shift
  ran+=("$name")
  "$SCENARIO" "$name" --tiny --out "$WORK/$name" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" || rc=$?
  if ((rc == 0)); then
    ok "$name --tiny exits 0 ($((SECONDS - start)) s)"
  else
    not_ok "$name --tiny exits 0: exit $rc after $((SECONDS - start)) s: $(tail -n 5 "$WORK/$name.err")"
  fi
}

# ---------------------------------------------------------------- usage errors
if [[ $part != broker ]]; then
expect_exit 2 "unknown scenario: exit 2, lists the known ones" \
  "invalid choice: 'no-such-thing'.*producer-sharing" "$SCENARIO" no-such-thing
expect_exit 2 "bad scale: exit 2" "invalid choice: 'huge'.*small.*full" \
  "$SCENARIO" producer-sharing --scale huge --out "$WORK/unused"
expect_exit 2 "no scenario name: exit 2" 'name a scenario \(known: producer-sharing' "$SCENARIO"
expect_exit 2 "bad --bootstrap: exit 2" 'HOST:PORT' \
  "$SCENARIO" producer-sharing --bootstrap 'not an address' --out "$WORK/unused"
expect_exit 2 "compression-format: SPECs of two kinds: exit 2" 'different things' \
  "$SCENARIO" compression-format --a librdkafka:system --b format:v2 --out "$WORK/unused"
expect_exit 2 "compression-cost: a corpus smaller than a batch needs: exit 2 before a broker starts" \
  'corpus.txt holds 34475 bytes of values; the send path needs 16777216' \
  "$SCENARIO" compression-cost --corpus /usr/share/common-licenses/GPL-3 --out "$WORK/unused"
check "--list names every scenario" bash -c "\"$SCENARIO\" --list | grep -qx acks-replication"
fi

if [[ $part != no-broker ]]; then
  # ---------------------------------------------------------------- one shared 1-broker cluster
  live_start_kafka "$WORK/kafka" --brokers 1 --port-base auto
  BOOT=$BOOTSTRAP
  ok "start a 1-broker cluster at $BOOT"

  refusal_start=$SECONDS
  expect_exit 2 "acks-replication refuses a 1-broker cluster before running anything" \
    'needs a cluster of at least 3 brokers.*has 1' \
    "$SCENARIO" acks-replication --tiny --bootstrap "$BOOT" --out "$WORK/refused"
  check "the refusal ran no benchmark (no raw results, within 30 s)" \
    bash -c "[[ ! -e '$WORK/refused/single.json' && -z \$(ls '$WORK/refused/raw' 2>/dev/null) ]] && (($SECONDS - $refusal_start < 30))"

  # producer-sharing on the given cluster (the --bootstrap path)...
  run_scenario producer-sharing --bootstrap "$BOOT"
  check_outputs producer-sharing "$WORK/producer-sharing" "${COMMON[@]}" \
    '^\| threads +\| 1 producer shared by all' '^\| 4 +\| [0-9.]+( [kM])? \(1 prod\.\)' '^\| 8 +\|' \
    '\*\*Highest median of this run:\*\*' "threads sharing 1 client: [0-9]" '## The original'

  # compression-format and perf-test on the same cluster too (a broker start is ~15 s of JVM);
  # then it stops, and acks-replication and the rest start their own (the start/stop path).
  run_scenario compression-format --bootstrap "$BOOT"
  check_outputs compression-format "$WORK/compression-format" "${COMMON[@]}" \
    '^## Cases where A \(librdkafka:system\) beats B \(librdkafka:2.15.1\)' \
    '^\| 5 +\| 500 +\| 0 +\| 100 +\| gzip +\| [0-9.]+ +\| [0-9.]+ +\|' '^\| B +\| librdkafka:2.15.1 +\| 2.15.1 +\|'
  # At the tiny scale few rows reach a verdict; every compared row must still be in the
  # verdict, on its primary metric, and none unjudged.
  check "compression-format: verdict.json from scripts/compare" \
    "$PY" -c "import json,sys; v=json.load(open(sys.argv[1])); n=sum(len(v[k]) for k in ('unchanged','regressions','improvements','inconclusive')); sys.exit(0 if v['alpha']==0.01 and n>0 and not v['unjudged'] and all(r['primary'] for k in ('unchanged','regressions','improvements','inconclusive') for r in v[k]) else 1)" \
    "$WORK/compression-format/verdict.json"

  # perf-test's own output format (the tools' lines, not these report headings) is checked
  # line by line in tests/scenarios/perf_test_test.sh; here only that the dispatcher runs it
  # and that its report and chart appear.
  run_scenario perf-test --bootstrap "$BOOT"
  check "perf-test: report.md written" test -s "$WORK/perf-test/report.md"
  check "perf-test: report.md has the final perf-test line" \
    grep -Eq 'records sent, [0-9.]+ records/sec \([0-9.]+ MB/sec\)' "$WORK/perf-test/report.md"
  check "perf-test: PNG chart written" compgen -G "$WORK/perf-test/*.png"
  "$KAFKA" stop --dir "$WORK/kafka" >/dev/null 2>&1 || true

  run_scenario acks-replication
  check_outputs acks-replication "$WORK/acks-replication" "${COMMON[@]}" \
    '^## One producer process, batches of 200' '^## One producer process, batches of 1' \
    '^## Three concurrent producer processes \(sum\), batches of 200' \
    '^\| 300 +\| NONE +\| [0-9.]+ +\| [0-9.]+( [kM])? +\|' '^\| 300 +\| LEADER +\| [0-9.]+ +\| [0-9.]+( [kM])? +\|' \
    '^\| 300 +\| ALL +\| [0-9.]+ +\| [0-9.]+( [kM])? +\|' 'Per Server MB.sec' '\| broker +\| Kafka [0-9.]+, 3 broker'
fi

# known-regressions --tiny runs its control for 2 rounds, which decide nothing: the control
# is "not judged" and the run exits 3 (a run that could not be judged never exits 0), with
# its report and chart written. That proves the pipeline.
if [[ $part != broker ]]; then
  ran+=(known-regressions)
  expect_exit 3 "known-regressions --tiny: the control runs, is not judged, exit 3" \
    'case control-aa \(control\): .*: NOT JUDGED' \
    "$SCENARIO" known-regressions --tiny --out "$WORK/known-regressions"
  check "known-regressions: report.md written" test -s "$WORK/known-regressions/report.md"
  check "known-regressions: PNG chart written" compgen -G "$WORK/known-regressions/*.png"
fi

# A scenario registered without checks of its own above still runs here: its report and
# chart must appear (adding a scenario is its folder plus its registry line, nothing here).
for name in $("$SCENARIO" --list); do
  [[ " ${ran[*]} " == *" $name "* ]] && continue
  if [[ " ${NO_BROKER[*]} " == *" $name "* ]]; then
    [[ $part != broker ]] || continue
  else
    [[ $part != no-broker ]] || continue
  fi
  run_scenario "$name"
  check "$name: report.md written" test -s "$WORK/$name/report.md"
  check "$name: PNG chart written" compgen -G "$WORK/$name/*.png"
done

# scripts/kafka status exits 3 when every node in DIR is stopped.
for d in "$WORK"/*/kafka-*; do
  [[ -d $d ]] || continue
  rc=0
  "$KAFKA" status --dir "$d" >/dev/null 2>&1 || rc=$?
  check "stopped on exit: ${d#"$WORK"/}" test "$rc" = 3
done

echo
live_test_done
