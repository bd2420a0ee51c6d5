#!/usr/bin/env bash
# Tests of the seed-004 scenario (scripts/scenarios/perf-test), scripts/vs-perf-test and
# their formatter (scripts/kbench/perf_test_format.py):
#   offline  the formatter turns kbench JSON into kafka-producer-perf-test's final line and
#            kafka-consumer-perf-test's columns with the right numbers; the comparison takes
#            the tool's steady-state line, leaves both tools' warm-up intervals out and
#            compares their interval lines; bad flags exit 2;
#   live     the scenario at --tiny with Kafka's tools, one case, 2 rounds (own 1-broker
#            cluster): interleaved rounds, each round's raw output kept, both consumers on
#            the same topic, lines in the tools' formats, report.md, summary.json, the chart,
#            and its cluster stopped; vs-perf-test at a tiny size prints both final lines,
#            the ratio line and the interval comparison, and keeps every round's output.
# Needs kbench, Java and the cached Kafka jars (scripts/setup). About 1-2 minutes.
# check runs its eval '...' strings later, where their $variables are set:
# shellcheck disable=SC2016
set -uo pipefail

usage() {
  cat <<'USAGE'
Usage: tests/scenarios/perf_test_test.sh [--offline] [--help]
  --offline   only the checks that need no broker
Environment: KBENCH_BIN (default build/kbench). Clusters start on free ports.
USAGE
}
offline=0
[[ ${1:-} != --offline ]] || { offline=1; shift; }
# shellcheck source-path=SCRIPTDIR source=../lib/live_test_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/live_test_lib.sh"
live_test_init perf-test-test "$@"
FORMAT=("$PY" -m kbench.perf_test_format)

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
out=$("${FORMAT[@]}" kbench-producer "$WORK/produce.json" 2>&1)
check "final line from kbench JSON has the tool's format" grep -Eq "$FINAL_RE" <<<"$out"
check "final line numbers (records, MiB/s, avg, max, whole-ms percentiles)" \
  test "$out" = "100000 records sent, 50000.000000 records/sec (100.00 MB/sec), 12.35 ms avg latency, 251.00 ms max latency, 1 ms 50th, 92 ms 95th, 108 ms 99th, 112 ms 99.9th."

printf '%s\n' "2026-01-01 kbench noise" \
  "Produce/send/acks:1/real_time: 2500 records sent, 499.9 records/sec (0.95 MB/sec), 3.2 ms avg latency, 9.0 ms max latency." \
  "Consume/read/x (fill): 10 records sent, 1.0 records/sec (0.00 MB/sec), 1.0 ms avg latency, 1.0 ms max latency." \
  "Produce/send/acks:1/real_time: 100 records sent, 50.0 records/sec (0.10 MB/sec), 1.0 ms avg latency, 2.0 ms max latency. (final)" \
  >"$WORK/produce.err"
out=$("${FORMAT[@]}" kbench-producer "$WORK/produce.json" --stderr "$WORK/produce.err" 2>&1)
check "interval lines: label stripped, fill lines dropped, then the final line" \
  test "$(grep -Ec "$WINDOW_RE" <<<"$out") $(wc -l <<<"$out")" = "2 3"

cat >"$WORK/consume.json" <<'EOF'
{"benchmarks": [{"name": "Consume/read/record_bytes:100/partitions:4/real_time", "run_type": "iteration",
  "iterations": 2, "real_time": 250.0, "time_unit": "ms", "items_per_second": 400000.0,
  "bytes_per_second": 41943040.0}]}
EOF
out=$("${FORMAT[@]}" kbench-consumer "$WORK/consume.json" --end-ms 1767225600500 2>&1)
check "consumer header is kafka-consumer-perf-test's" test "$(head -1 <<<"$out")" = "$CONSUMER_HEADER"
check "consumer line columns" grep -Eq "$CONSUMER_RE" <<<"$(tail -1 <<<"$out")"
check "consumer numbers (20 MiB, 40 MiB/s, 200000 msgs, 0 rebalance, 500 ms fetch)" \
  grep -Eq ', 20\.0000, 40\.0000, 200000, 400000\.0000, 0, 500, 40\.0000, 400000\.0000$' <<<"$out"
echo '{"benchmarks": [{"name": "Produce/send/x", "run_type": "iteration", "error_occurred": true, "error_message": "boom"}]}' >"$WORK/failed.json"
"${FORMAT[@]}" kbench-producer "$WORK/failed.json" >/dev/null 2>"$WORK/err"
rc=$?
check "a failed benchmark is an error naming it" eval '[[ $rc -eq 1 ]] && grep -q boom "$WORK/err"'

# ---------------------------------------------------------------- offline: vs comparison
# Two rounds of each tool: the tool's output has 1000 warm-up records (two interval lines
# hold some: both left out), a final line and the steady-state line; kbench's stderr has a
# warm-up line (left out) and two measured lines.
V="$WORK/vs-offline"
mkdir -p "$V"
printf '%s\n' \
  "600 records sent, 120.0 records/sec (0.01 MB/sec), 5.0 ms avg latency, 9.0 ms max latency." \
  "500 records sent, 100.0 records/sec (0.01 MB/sec), 5.0 ms avg latency, 9.0 ms max latency." \
  "50000 records sent, 10000.0 records/sec (0.95 MB/sec), 2.0 ms avg latency, 9.0 ms max latency." \
  "60000 records sent, 12000.0 records/sec (1.14 MB/sec), 2.0 ms avg latency, 9.0 ms max latency." \
  "101000 records sent, 9000.000000 records/sec (0.86 MB/sec), 3.00 ms avg latency, 20.00 ms max latency, 2 ms 50th, 5 ms 95th, 9 ms 99th, 19 ms 99.9th." \
  "100000 steady state records sent, 11000.000000 records/sec (1.05 MB/sec), 2.50 ms avg latency, 20.00 ms max latency, 2 ms 50th, 5 ms 95th, 8 ms 99th, 19 ms 99.9th." \
  >"$V/tool.txt"
printf '%s\n' \
  "Produce/send/acks:1/real_time: 250000 records sent, 50000.0 records/sec (4.77 MB/sec), 1.0 ms avg latency, 2.0 ms max latency. (warm-up)" \
  "Produce/send/acks:1/real_time: 245000 records sent, 49000.0 records/sec (4.67 MB/sec), 1.0 ms avg latency, 2.0 ms max latency." \
  "Produce/send/acks:1/real_time: 255000 records sent, 51000.0 records/sec (4.86 MB/sec), 1.0 ms avg latency, 2.0 ms max latency." \
  >"$V/kbench.err"
printf 'perf-test\t1\t%s\t-\nkbench\t1\t%s\t%s\nkbench\t2\t%s\t%s\nperf-test\t2\t%s\t-\n' \
  "$V/tool.txt" "$WORK/produce.json" "$V/kbench.err" "$WORK/produce.json" "$V/kbench.err" "$V/tool.txt" >"$V/rounds.tsv"
out=$("${FORMAT[@]}" vs "$V" --warmup 1000 2>&1)
check "vs: the tool's steady-state line, not its whole-run line" \
  grep -qxF "kafka-producer-perf-test  100000 records sent, 11000.000000 records/sec (1.05 MB/sec), 2.50 ms avg latency, 20.00 ms max latency, 2 ms 50th, 5 ms 95th, 8 ms 99th, 19 ms 99.9th." <<<"$out"
check "vs: interval lines of both, warm-up left out, medians compared" \
  grep -qF "perf-test: 4 intervals, median 11000.0 records/sec (10000.0..12000.0), cv 9.1 %; kbench: 4 intervals, median 50000.0 records/sec (49000.0..51000.0), cv 2.0 %; medians x4.55" <<<"$out"
check "vs: fewer than 3 rounds is no verdict" grep -q "fewer than 3 rounds" <<<"$out"
check "vs: summary.json has both tools' intervals" "$PY" -c \
  'import json,sys; d=json.load(open(sys.argv[1])); assert d["perf_test"]["intervals"]["n"] == 4 and d["kbench"]["intervals"]["n"] == 4 and d["warmup_records"] == 1000' "$V/summary.json"
printf 'perf-test\t3\t%s\t-\nkbench\t3\t%s\t-\n' "$V/tool.txt" "$WORK/produce.json" >>"$V/rounds.tsv"
out=$("${FORMAT[@]}" vs "$V" --warmup 1000 2>&1)
check "vs: three rounds, no 'no verdict' note" eval '! grep -q "fewer than 3 rounds" <<<"$out" && grep -q "^median of 3 rounds" <<<"$out"'
mkdir -p "$V/cold"
head -5 "$V/tool.txt" >"$V/cold/tool.txt"  # no steady-state line: the tool had no warm-up
printf 'perf-test\t1\t%s\t-\nkbench\t1\t%s\t-\n' "$V/cold/tool.txt" "$WORK/produce.json" >"$V/cold/rounds.tsv"
"${FORMAT[@]}" vs "$V/cold" --warmup 1000 >/dev/null 2>"$WORK/err"
rc=$?
check "vs: a tool output without the steady-state line of its warm-up is an error" \
  eval '[[ $rc -eq 1 ]] && grep -q "no steady-state line although the tool had 1000 warm-up records" "$WORK/err"'

# ---------------------------------------------------------------- offline: bad usage -> 2
expect2() { # expect2 DESCRIPTION COMMAND...
  local d=$1 rc
  shift
  "$@" >/dev/null 2>"$WORK/usage.err"
  rc=$?
  if [[ $rc -eq 2 && -s $WORK/usage.err ]]; then ok "exit 2: $d"; else not_ok "exit 2: $d (got $rc)"; fi
}
VS="$ROOT/scripts/vs-perf-test"
SC=("$ROOT/scripts/scenario" perf-test)
expect2 "vs-perf-test unknown flag" "$VS" --bogus
expect2 "vs-perf-test --num-records 0" "$VS" --num-records 0
expect2 "vs-perf-test --record-size abc" "$VS" --record-size abc
expect2 "vs-perf-test --throughput -5" "$VS" --throughput -5
expect2 "vs-perf-test --acks 2" "$VS" --acks 2
expect2 "vs-perf-test --producer-props without k=v" "$VS" --producer-props linger.ms
expect2 "vs-perf-test unknown librdkafka setting" "$VS" --producer-props no.such.setting=1
expect2 "vs-perf-test compression.type bogus" "$VS" --producer-props compression.type=brotli
expect2 "vs-perf-test --warmup-records 0" "$VS" --warmup-records 0
expect2 "perf-test unknown flag" "${SC[@]}" --out "$WORK/x" --bogus
expect2 "perf-test --scale huge" "${SC[@]}" --out "$WORK/x" --scale huge
# Through scripts/scenario --out has a default; an --out without its folder is the usage error.
expect2 "perf-test --out without a folder" "${SC[@]}" --tiny --out
expect2 "perf-test --rounds 0" "${SC[@]}" --out "$WORK/x" --rounds 0
expect2 "perf-test --cases unknown" "${SC[@]}" --out "$WORK/x" --cases 1k-1B
check "--help exits 0" eval '"$VS" --help >/dev/null && "${SC[@]}" --help >/dev/null'

if ((offline)); then
  live_test_done
  exit
fi

# ---------------------------------------------------------------- live: the scenario
live_need_kbench
live_need_java
SOUT="$WORK/scenario"
VOUT="$WORK/vs"
# Each run stops its own cluster (checked below); these are for an early exit.
live_on_exit "$KAFKA" stop --dir "$SOUT/kafka"
live_on_exit "$KAFKA" stop --dir "$VOUT/kafka"
# One case, two rounds, with Kafka's tools: the comparison's whole pipeline in under a
# minute (the three cases without the tools run in tests/scenarios/scenario_test.sh).
run=("${SC[@]}" --tiny --kafka-tools --rounds 2 --cases 10k-2000B --out "$SOUT")
start=$SECONDS
"${run[@]}" >"$WORK/scenario.out" 2>"$WORK/scenario.err"
rc=$?
if [[ $rc -ne 0 ]]; then
  not_ok "scenario --tiny --kafka-tools exits 0 (got $rc): $(tail -5 "$WORK/scenario.err")"
else
  ok "scenario --tiny --kafka-tools --rounds 2 exits 0 ($((SECONDS - start)) s)"
  C="$SOUT/console.txt"
  check "rounds interleaved: the tools first in round 1, kbench in round 2" \
    eval 'grep -qx -- "-- round 1 (Kafka.s tools first)" "$C" && grep -qx -- "-- round 2 (kbench first)" "$C"'
  check "four per-round final lines and two median lines in the tool's format" \
    test "$(grep -Ec "$FINAL_RE" "$C") $(grep -Ec "^(kafka-producer-perf-test|kbench Produce) +[0-9]+ records sent" "$C")" = "4 2"
  check "record counts: 2000 measured after 200 warm-up records, on both" \
    eval 'test "$(grep -Ec "^2000 records sent" "$C")" -eq 4 && grep -q "after 200 warm-up" "$C"'
  check "every 'records sent' line is an interval or a final line" \
    eval '! grep "records sent" "$C" | sed -E "s/^(kafka-producer-perf-test|kbench Produce) +//" | grep -Ev "$FINAL_RE" | grep -Evq "$WINDOW_RE"'
  check "interval comparison and the 'no verdict' note" \
    eval 'grep -Eq "^interval records/sec +perf-test: " "$C" && grep -q "fewer than 3 rounds" "$C"'
  check "both consumers read the same topic, two lines each" \
    eval 'grep -q "both read the topic kafka-producer-perf-test wrote (2200 records)" "$C" && test "$(grep -Ec "$CONSUMER_RE" "$C")" -eq 4 && grep -Eq "^round [12] kbench Consume \(Consume/read/topic:perf-test-10k-2000B-[0-9]+-r[12]/" "$C"'
  check "median nMsg.sec of both consumers" grep -Eq "^median nMsg.sec +kafka-consumer-perf-test $NUM" "$C"
  check "each round's raw output kept under rounds/" \
    eval 'for r in 1 2; do for f in kbench-produce.json kbench-produce.err tool-produce.txt tool-consume.txt kbench-consume.json; do test -s "$SOUT/rounds/10k-2000B-r$r-$f" || exit 1; done; done'
  check "queue caps in messages and bytes on kbench's command line" \
    eval 'grep -q "queue.buffering.max.kbytes=32768" "$SOUT/commands.txt" && grep -q "queue.buffering.max.messages=16778" "$SOUT/commands.txt"'
  check "the same warm-up on both command lines" \
    eval 'grep -q "warmup=200" "$SOUT/commands.txt" && grep -q -- "--warmup-records 200 " "$SOUT/commands.txt"'
  check "report.md states machine, versions, differences and the spread" \
    eval 'grep -q "## Machine and versions" "$SOUT/report.md" && grep -q "librdkafka" "$SOUT/report.md" && grep -q "What differs" "$SOUT/report.md" && grep -q loopback "$SOUT/report.md" && grep -q "read the same topic" "$SOUT/report.md" && grep -Eq "^\| 10k-2000B \| kafka-producer-perf-test \| 2 \| [0-9.]+ \([0-9.]+–[0-9.]+\)" "$SOUT/report.md"'
  check "summary.json has the case, both medians and two rounds" \
    "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); c=d["cases"][0]; assert len(d["cases"]) == 1 and len(c["rounds"]) == 2 and c["tool"] and c["kbench"] and c["tool_consumer"] and c["kbench_consumer"]' "$SOUT/summary.json"
  check "chart is a PNG" eval '[[ $(head -c 4 "$SOUT/perf-test.png" | od -An -c | tr -d " ") == 211PNG ]]'
  "$KAFKA" status --dir "$SOUT/kafka" >/dev/null 2>&1
  check "the scenario stopped its cluster" test $? -eq 3
fi

# ---------------------------------------------------------------- live: vs-perf-test
start=$SECONDS
"$VS" --num-records 3000 --record-size 100 --rounds 1 --out "$VOUT" \
  >"$WORK/vs.out" 2>"$WORK/vs.err"
rc=$?
if [[ $rc -ne 0 ]]; then
  not_ok "vs-perf-test exits 0 (got $rc): $(tail -5 "$WORK/vs.err")"
else
  ok "vs-perf-test exits 0 ($((SECONDS - start)) s)"
  check "perf-test line" eval 'sed -n "s/^kafka-producer-perf-test  *//p" "$WORK/vs.out" | grep -Eq "$FINAL_RE"'
  check "kbench line" eval 'sed -n "s/^kbench Produce  *//p" "$WORK/vs.out" | grep -Eq "$FINAL_RE"'
  check "both sent 3000 records" test "$(grep -Ec '  3000 records sent' "$WORK/vs.out")" -eq 2
  check "ratio line" grep -Eq "^ratio +records/sec x$NUM" "$WORK/vs.out"
  check "interval line and the 'no verdict' note (one round)" \
    eval 'grep -Eq "^interval records/sec +perf-test: " "$WORK/vs.out" && grep -q "fewer than 3 rounds" "$WORK/vs.out"'
  check "the same warm-up (300 = N/10) on both, queue caps in messages and bytes" \
    eval 'grep -q "after 300 warm-up records on both" "$WORK/vs.out" && grep -q -- "--warmup-records 300 " "$VOUT/commands.txt" && grep -q "warmup=300" "$VOUT/commands.txt" && grep -q "queue.buffering.max.messages=335545" "$VOUT/commands.txt"'
  check "the round's raw output kept" \
    eval 'test -s "$VOUT/round-1-perf-test.txt" -a -s "$VOUT/round-1-kbench.json" -a -s "$VOUT/round-1-kbench.err" -a -s "$VOUT/summary.json"'

  "$KAFKA" status --dir "$VOUT/kafka" >/dev/null 2>&1
  check "vs-perf-test stopped its cluster" test $? -eq 3
fi

live_test_done
