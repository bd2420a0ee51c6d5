#!/usr/bin/env bash
# Tests of the seed-004 scenario (scripts/scenarios/perf-test), Kafka's perf-test tools
# beside kbench (the line formats and the comparison are unit tests, test_scenarios.py):
#   offline  bad options of the seed's cases and of a case of your own exit 2;
#   live     the scenario at --tiny with Kafka's tools, one case, 2 rounds (own 1-broker
#            cluster): interleaved rounds, each round's raw output kept, both consumers on
#            the same topic, lines in the tools' formats, report.md, summary.json, the chart,
#            and its cluster stopped; a case of your own at a tiny size (--num-records)
#            prints both median lines, the ratio line and the interval comparison.
# Needs kbench, Java and the cached Kafka jars (scripts/setup). About 1-2 minutes.
# check runs its eval '...' strings later, where their $variables are set:
# shellcheck disable=SC2016,SC2034
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

# The tools' formats, written independently of the formatter's own regexes.
NUM='[0-9]+(\.[0-9]+)?'
FINAL_RE="^[0-9]+ records sent, [0-9]+\.[0-9]{6} records/sec \([0-9]+\.[0-9]{2} MB/sec\), [0-9]+\.[0-9]{2} ms avg latency, [0-9]+\.[0-9]{2} ms max latency, [0-9]+ ms 50th, [0-9]+ ms 95th, [0-9]+ ms 99th, [0-9]+ ms 99\.9th\.$"
WINDOW_RE="^[0-9]+ records sent, [0-9]+\.[0-9] records/sec \([0-9]+\.[0-9]{2} MB/sec\), [0-9]+\.[0-9] ms avg latency, [0-9]+\.[0-9] ms max latency\.$"
TS='[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}:[0-9]{3}'
CONSUMER_RE="^$TS, $TS, [0-9]+\.[0-9]{4}, [0-9]+\.[0-9]{4}, [0-9]+, [0-9]+\.[0-9]{4}, [0-9]+, [0-9]+, [0-9]+\.[0-9]{4}, [0-9]+\.[0-9]{4}$"

# ---------------------------------------------------------------- offline: bad usage -> 2
expect2() { # expect2 DESCRIPTION COMMAND...
  local d=$1 rc
  shift
  "$@" >/dev/null 2>"$WORK/usage.err"
  rc=$?
  if [[ $rc -eq 2 && -s $WORK/usage.err ]]; then ok "exit 2: $d"; else not_ok "exit 2: $d (got $rc)"; fi
}
SC=("$ROOT/scripts/scenario" perf-test)
expect2 "unknown flag" "${SC[@]}" --out "$WORK/x" --bogus
expect2 "--scale huge" "${SC[@]}" --out "$WORK/x" --scale huge
expect2 "--out without a folder" "${SC[@]}" --tiny --out
expect2 "--rounds 0" "${SC[@]}" --out "$WORK/x" --rounds 0
expect2 "--cases unknown" "${SC[@]}" --out "$WORK/x" --cases 1k-1B
expect2 "--num-records 0" "${SC[@]}" --num-records 0
expect2 "--record-size abc" "${SC[@]}" --record-size abc
expect2 "--throughput -5" "${SC[@]}" --throughput -5
expect2 "--acks 2" "${SC[@]}" --acks 2
expect2 "--producer-props without k=v" "${SC[@]}" --producer-props linger.ms
expect2 "unknown librdkafka setting" "${SC[@]}" --producer-props no.such.setting=1
expect2 "compression.type bogus" "${SC[@]}" --producer-props compression.type=brotli
expect2 "--warmup-records 0" "${SC[@]}" --warmup-records 0
expect2 "--cases with a case of your own" "${SC[@]}" --cases 10k-2000B --num-records 10
check "--help exits 0" eval '"${SC[@]}" --help >/dev/null'

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
    eval 'grep -q "## Machine and versions" "$SOUT/report.md" && grep -q "librdkafka" "$SOUT/report.md" && grep -q "What differs" "$SOUT/report.md" && grep -q loopback "$SOUT/report.md" && grep -q "read the same topic" "$SOUT/report.md" && grep -Eq "^\| 10k-2000B +\| kafka-producer-perf-test +\| 2 +\| [0-9.]+ \([0-9.]+–[0-9.]+\)" "$SOUT/report.md"'
  check "summary.json has the case, both medians and two rounds" \
    "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); c=d["cases"][0]; assert len(d["cases"]) == 1 and len(c["rounds"]) == 2 and c["tool"] and c["kbench"] and c["tool_consumer"] and c["kbench_consumer"]' "$SOUT/summary.json"
  check "chart is a PNG" eval '[[ $(head -c 4 "$SOUT/perf-test.png" | od -An -c | tr -d " ") == 211PNG ]]'
  "$KAFKA" status --dir "$SOUT/kafka" >/dev/null 2>&1
  check "the scenario stopped its cluster" test $? -eq 3
fi

# ---------------------------------------------------------------- live: a case of your own
start=$SECONDS
"${SC[@]}" --num-records 3000 --record-size 100 --rounds 1 --out "$VOUT" \
  >"$WORK/vs.out" 2>"$WORK/vs.err"
rc=$?
if [[ $rc -ne 0 ]]; then
  not_ok "perf-test --num-records exits 0 (got $rc): $(tail -5 "$WORK/vs.err")"
else
  ok "perf-test --num-records exits 0 ($((SECONDS - start)) s)"
  check "perf-test line" eval 'sed -n "s/^kafka-producer-perf-test  *//p" "$WORK/vs.out" | grep -Eq "$FINAL_RE"'
  check "kbench line" eval 'sed -n "s/^kbench Produce  *//p" "$WORK/vs.out" | grep -Eq "$FINAL_RE"'
  check "both sent 3000 records" test "$(grep -Ec '  3000 records sent' "$WORK/vs.out")" -eq 2
  check "ratio line" grep -Eq "^ratio +records/sec x$NUM" "$WORK/vs.out"
  check "interval line and the 'no verdict' note (one round)" \
    eval 'grep -Eq "^interval records/sec +perf-test: " "$WORK/vs.out" && grep -q "fewer than 3 rounds" "$WORK/vs.out"'
  check "the same warm-up (300 = N/10) on both, queue caps in messages and bytes" \
    eval 'grep -q "after 300 warm-up records on both" "$WORK/vs.out" && grep -q -- "--warmup-records 300 " "$VOUT/commands.txt" && grep -q "warmup=300" "$VOUT/commands.txt" && grep -q "queue.buffering.max.messages=335545" "$VOUT/commands.txt"'
  check "the round's raw output kept" \
    eval 'test -s "$VOUT/rounds/custom-r1-tool-produce.txt" -a -s "$VOUT/rounds/custom-r1-kbench-produce.json" -a -s "$VOUT/rounds/custom-r1-kbench-produce.err" -a -s "$VOUT/summary.json"'
  "$KAFKA" status --dir "$VOUT/kafka" >/dev/null 2>&1
  check "the case of your own stopped its cluster" test $? -eq 3
fi

live_test_done
