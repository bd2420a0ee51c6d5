#!/usr/bin/env bash
# Tests of the seed-004 scenario (scripts/scenarios/perf-test), scripts/vs-perf-test and
# their formatter (scripts/lib/perf_test_format.py):
#   offline  the formatter turns kbench JSON into kafka-producer-perf-test's final line and
#            kafka-consumer-perf-test's columns with the right numbers; bad flags exit 2;
#   live     the scenario at --tiny (own 1-broker cluster) prints lines in the tools' formats
#            and writes report.md, summary.json and the chart, and stops its cluster;
#            vs-perf-test at a tiny size prints both final lines and the ratio line.
# Needs kbench, Java and the cached Kafka jars (scripts/setup). About 1-2 minutes.
set -uo pipefail

usage() {
  cat <<'USAGE'
Usage: tests/scenarios/perf_test_test.sh [--offline] [--help]
  --offline   only the checks that need no broker
Environment: KBENCH_BIN (default build/kbench), KBENCH_PERF_TEST_PORT_BASE (default 29392).
USAGE
}
offline=0
case "${1:-}" in
  -h | --help) usage; exit 0 ;;
  --offline) offline=1 ;;
  "") ;;
  *) echo "perf_test_test: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
esac

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export KBENCH_BIN="${KBENCH_BIN:-$ROOT/build/kbench}"
PORT_BASE="${KBENCH_PERF_TEST_PORT_BASE:-29392}"
FORMAT="$ROOT/scripts/lib/perf_test_format.py"
WORK="$(mktemp -d /tmp/kbench-perf-test-test.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT

passed=0 failed=0
ok() { passed=$((passed + 1)); echo "ok: $*"; }
bad() { failed=$((failed + 1)); echo "FAIL: $*" >&2; }
check() { # check DESCRIPTION COMMAND...
  local d=$1
  shift
  if "$@"; then ok "$d"; else bad "$d"; fi
}

# The tools' formats, written independently of the formatter's own regexes.
NUM='[0-9]+(\.[0-9]+)?'
FINAL_RE="^[0-9]+ records sent, [0-9]+\.[0-9]{6} records/sec \([0-9]+\.[0-9]{2} MB/sec\), [0-9]+\.[0-9]{2} ms avg latency, [0-9]+\.[0-9]{2} ms max latency, [0-9]+ ms 50th, [0-9]+ ms 95th, [0-9]+ ms 99th, [0-9]+ ms 99\.9th\.$"
WINDOW_RE="^[0-9]+ records sent, [0-9]+\.[0-9] records/sec \([0-9]+\.[0-9]{2} MB/sec\), [0-9]+\.[0-9] ms avg latency, [0-9]+\.[0-9] ms max latency\.$"
TS='[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}:[0-9]{3}'
CONSUMER_HEADER='start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec'
CONSUMER_RE="^$TS, $TS, [0-9]+\.[0-9]{4}, [0-9]+\.[0-9]{4}, [0-9]+, [0-9]+\.[0-9]{4}, [0-9]+, [0-9]+, [0-9]+\.[0-9]{4}, [0-9]+\.[0-9]{4}$"

# ---------------------------------------------------------------- offline: the formatter
cat >"$WORK/produce.json" <<'EOF'
{"context": {"librdkafka_version": "2.0.2"}, "benchmarks": [
 {"name": "Codec/compress/x", "run_type": "iteration", "iterations": 5, "real_time": 1.0, "time_unit": "ns"},
 {"name": "Produce/send/acks:1/real_time", "run_type": "iteration", "iterations": 1,
  "real_time": 2000000000.0, "time_unit": "ns", "items_per_second": 50000.0,
  "bytes_per_second": 104857600.0, "avg_us": 12345.0, "max_us": 250999.0,
  "p50_us": 1999.0, "p95_us": 92000.0, "p99_us": 108100.0, "p999_us": 112999.0}]}
EOF
out=$(/usr/bin/python3 "$FORMAT" kbench-producer "$WORK/produce.json" 2>&1)
check "final line from kbench JSON has the tool's format" grep -Eq "$FINAL_RE" <<<"$out"
check "final line numbers (records, MiB/s, avg, max, whole-ms percentiles)" \
  test "$out" = "100000 records sent, 50000.000000 records/sec (100.00 MB/sec), 12.35 ms avg latency, 251.00 ms max latency, 1 ms 50th, 92 ms 95th, 108 ms 99th, 112 ms 99.9th."

printf '%s\n' "2026-01-01 kbench noise" \
  "Produce/send/acks:1/real_time: 2500 records sent, 499.9 records/sec (0.95 MB/sec), 3.2 ms avg latency, 9.0 ms max latency." \
  "Consume/read/x (fill): 10 records sent, 1.0 records/sec (0.00 MB/sec), 1.0 ms avg latency, 1.0 ms max latency." \
  "Produce/send/acks:1/real_time: 100 records sent, 50.0 records/sec (0.10 MB/sec), 1.0 ms avg latency, 2.0 ms max latency. (final)" \
  >"$WORK/produce.err"
out=$(/usr/bin/python3 "$FORMAT" kbench-producer "$WORK/produce.json" --stderr "$WORK/produce.err" 2>&1)
check "interval lines: label stripped, fill lines dropped, then the final line" \
  test "$(grep -Ec "$WINDOW_RE" <<<"$out") $(wc -l <<<"$out")" = "2 3"

cat >"$WORK/consume.json" <<'EOF'
{"benchmarks": [{"name": "Consume/read/record_bytes:100/partitions:4/real_time", "run_type": "iteration",
  "iterations": 2, "real_time": 250.0, "time_unit": "ms", "items_per_second": 400000.0,
  "bytes_per_second": 41943040.0}]}
EOF
out=$(/usr/bin/python3 "$FORMAT" kbench-consumer "$WORK/consume.json" --end-ms 1767225600500 2>&1)
check "consumer header is kafka-consumer-perf-test's" test "$(head -1 <<<"$out")" = "$CONSUMER_HEADER"
check "consumer line columns" grep -Eq "$CONSUMER_RE" <<<"$(tail -1 <<<"$out")"
check "consumer numbers (20 MiB, 40 MiB/s, 200000 msgs, 0 rebalance, 500 ms fetch)" \
  grep -Eq ', 20\.0000, 40\.0000, 200000, 400000\.0000, 0, 500, 40\.0000, 400000\.0000$' <<<"$out"
echo '{"benchmarks": [{"name": "Produce/send/x", "run_type": "iteration", "error_occurred": true, "error_message": "boom"}]}' >"$WORK/failed.json"
/usr/bin/python3 "$FORMAT" kbench-producer "$WORK/failed.json" >/dev/null 2>"$WORK/err"
rc=$?
check "a failed benchmark is an error naming it" eval '[[ $rc -eq 1 ]] && grep -q boom "$WORK/err"'

# ---------------------------------------------------------------- offline: bad usage -> 2
expect2() { # expect2 DESCRIPTION COMMAND...
  local d=$1 rc
  shift
  "$@" >/dev/null 2>"$WORK/usage.err"
  rc=$?
  if [[ $rc -eq 2 && -s $WORK/usage.err ]]; then ok "exit 2: $d"; else bad "exit 2: $d (got $rc)"; fi
}
VS="$ROOT/scripts/vs-perf-test"
SC="$ROOT/scripts/scenarios/perf-test"
expect2 "vs-perf-test unknown flag" "$VS" --bogus
expect2 "vs-perf-test --num-records 0" "$VS" --num-records 0
expect2 "vs-perf-test --record-size abc" "$VS" --record-size abc
expect2 "vs-perf-test --throughput -5" "$VS" --throughput -5
expect2 "vs-perf-test --acks 2" "$VS" --acks 2
expect2 "vs-perf-test --producer-props without k=v" "$VS" --producer-props linger.ms
expect2 "vs-perf-test unknown librdkafka setting" "$VS" --producer-props no.such.setting=1
expect2 "vs-perf-test compression.type bogus" "$VS" --producer-props compression.type=brotli
expect2 "perf-test unknown flag" "$SC" --out "$WORK/x" --bogus
expect2 "perf-test --scale huge" "$SC" --out "$WORK/x" --scale huge
expect2 "perf-test without --out" "$SC" --tiny
check "--help exits 0" eval '"$VS" --help >/dev/null && "$SC" --help >/dev/null'

if ((offline)); then
  echo "$passed passed, $failed failed"
  ((failed == 0))
  exit
fi

# ---------------------------------------------------------------- live: the scenario
[[ -x $KBENCH_BIN ]] || { bad "no kbench binary at $KBENCH_BIN"; echo "$passed passed, $failed failed"; exit 1; }
SOUT="$WORK/scenario"
export KBENCH_SCENARIO_PORT_BASE=$PORT_BASE
if [[ -x $ROOT/scripts/scenario ]]; then
  run=("$ROOT/scripts/scenario" perf-test --tiny --out "$SOUT")
else
  run=("$SC" --tiny --out "$SOUT")
fi
start=$SECONDS
"${run[@]}" >"$WORK/scenario.out" 2>"$WORK/scenario.err"
rc=$?
if [[ $rc -ne 0 ]]; then
  bad "scenario --tiny exits 0 (got $rc): $(tail -5 "$WORK/scenario.err")"
else
  ok "scenario --tiny exits 0 ($((SECONDS - start)) s)"
  C="$SOUT/console.txt"
  check "three kbench final lines in the tool's format" test "$(grep -Ec "$FINAL_RE" "$C")" -eq 3
  check "record counts of the tiny cases" eval 'grep -Eq "^2000 records sent" "$C" && grep -Eq "^20000 records sent" "$C" && grep -Eq "^5000 records sent" "$C"'
  check "every 'records sent' line is an interval or a final line" \
    eval '! grep "records sent" "$C" | grep -Ev "$FINAL_RE" | grep -Evq "$WINDOW_RE"'
  check "consumer header and line" eval 'grep -qxF "$CONSUMER_HEADER" "$C" && grep -Eq "$CONSUMER_RE" "$C"'
  check "report.md states machine, versions and differences" \
    eval 'grep -q "## Machine and versions" "$SOUT/report.md" && grep -q "librdkafka" "$SOUT/report.md" && grep -q "What differs" "$SOUT/report.md" && grep -q loopback "$SOUT/report.md"'
  check "summary.json has the three cases" \
    /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["cases"]) == 3 and d["consumer"]' "$SOUT/summary.json"
  check "chart is a PNG" eval '[[ $(head -c 4 "$SOUT/perf-test.png" | od -An -c | tr -d " ") == 211PNG ]]'
  check "kbench JSON per case" test "$(ls "$SOUT"/kbench-produce-*.json | wc -l)" -eq 3
  "$ROOT/scripts/kafka" status --dir "$SOUT/kafka" >/dev/null 2>&1
  check "the scenario stopped its cluster" test $? -eq 3
fi

# ---------------------------------------------------------------- live: vs-perf-test
VOUT="$WORK/vs"
start=$SECONDS
KBENCH_VS_PORT_BASE=$((PORT_BASE + 10)) "$VS" --num-records 3000 --record-size 100 --rounds 1 --out "$VOUT" \
  >"$WORK/vs.out" 2>"$WORK/vs.err"
rc=$?
if [[ $rc -ne 0 ]]; then
  bad "vs-perf-test exits 0 (got $rc): $(tail -5 "$WORK/vs.err")"
else
  ok "vs-perf-test exits 0 ($((SECONDS - start)) s)"
  check "perf-test line" eval 'sed -n "s/^kafka-producer-perf-test  *//p" "$WORK/vs.out" | grep -Eq "$FINAL_RE"'
  check "kbench line" eval 'sed -n "s/^kbench Produce  *//p" "$WORK/vs.out" | grep -Eq "$FINAL_RE"'
  check "both sent 3000 records" test "$(grep -Ec '  3000 records sent' "$WORK/vs.out")" -eq 2
  check "ratio line" grep -Eq "^ratio +records/sec x$NUM" "$WORK/vs.out"
  "$ROOT/scripts/kafka" status --dir "$VOUT/kafka" >/dev/null 2>&1
  check "vs-perf-test stopped its cluster" test $? -eq 3
fi

echo "$passed passed, $failed failed"
((failed == 0))
