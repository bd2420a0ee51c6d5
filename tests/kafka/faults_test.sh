#!/usr/bin/env bash
# Live test of faults during a run, on one 3-broker cluster (scripts/kafka, plaintext):
#   1. broker 0 crashes (SIGKILL) mid-run and is started again, under acks=all,
#      replication 3, idempotence on, 3 partitions (KRaft stripes the leaders, so broker 0
#      leads one of them): the row passes, end offsets equal the delivered count exactly
#      (nothing lost, nothing duplicated);
#   2. the partition leader is moved mid-run with Kafka's own admin tools, twice (replica
#      order [1,2,0] then [2,0,1] by kafka-reassign-partitions, each followed by a preferred
#      leader election, so that the leader changes at least once whoever led before, which
#      the second election's answer confirms): end offsets equal the delivered count.
# No tool reads the topic first: Kafka's tools take 10-30 s a call on a loaded 2-core
# machine, and the rows must still be running when they act.
# kbench itself fails a row whose end offsets differ from its delivered count, per
# partition; the test also reads both from the JSON. ~2 min on 2 cores.
# `check && ok ... || not_ok ...` is intended: ok never fails.
# shellcheck disable=SC2015
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: tests/kafka/faults_test.sh [--help]

Environment:
  KBENCH_BIN            kbench binary (default build/kbench)
  KBENCH_KAFKA_VERSION  Kafka release scripts/kafka starts (its default if unset; 4.x tools)
  KBENCH_FAULTS_CRASH_WINDOWS, KBENCH_FAULTS_WINDOWS
                        2 s windows of the crash row (default 12) and of the move row (30)
  KBENCH_FAULTS_RATE    records/s of both rows (default 5000)
USAGE
}
# shellcheck source-path=SCRIPTDIR source=../lib/live_test_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/live_test_lib.sh"
live_test_init faults-test "$@"
live_need_kbench
live_need_java

STATE="$WORK/kafka"
# Three brokers on 2 cores: smaller heaps than scripts/kafka's default.
export KBENCH_KAFKA_HEAP_OPTS="${KBENCH_KAFKA_HEAP_OPTS:--Xms256m -Xmx512m}"
live_start_kafka "$STATE" --brokers 3 --port-base auto
export KBENCH_BROKER_VERSION
KBENCH_BROKER_VERSION="$(cat "$STATE/version")"
# The checks are exactness (end offsets = delivered), not throughput: an unthrottled row kept
# both cores busy with three brokers replicating, and starved the admin tools. At this rate
# batches are still always in flight (linger 5 ms) when a broker dies or a leader moves, so
# retries and idempotent de-duplication are exercised as before.
RATE="${KBENCH_FAULTS_RATE:-5000}"
BENCH_PID=""
stop_bench() { [[ -z $BENCH_PID ]] || kill "$BENCH_PID"; }
live_on_exit stop_bench

# run_faulted TAG PARTITIONS FAULT OUTLAST WINDOWS: one Produce row (acks=all, replication 3,
# idempotence, RATE records/s) measured for exactly WINDOWS windows of 2 s; FAULT (a
# function) runs on its topic once the measurement has begun; with OUTLAST=1 the row must
# still run when FAULT returns. A crash acts at once (the row need not outlast the restart),
# so it needs fewer windows than a move, which waits for four admin-tool calls.
run_faulted() {
  local tag="$1" partitions="$2" fault="$3" outlast="$4" WINDOWS="$5" rc=0
  ROW="Produce/send/acks:all/codec:none/record_bytes:200/threads:1/producers:1/partitions:$partitions/replication:3/idempotence:true/rate:$RATE/iterations:$WINDOWS/real_time"
  KBENCH_FIXED_ITERATIONS=$WINDOWS "$KBENCH_BIN" --bootstrap="$BOOTSTRAP" \
    --produce "acks=all,codec=none,record_bytes=200,partitions=$partitions,replication=3,idempotence=true,rate=$RATE" \
    --benchmark_filter='^Produce/send/' --window-seconds=2 -X message.timeout.ms=120000 \
    --benchmark_out="$WORK/$tag.json" --benchmark_out_format=json >"$WORK/$tag.out" 2>"$WORK/$tag.err" &
  BENCH_PID=$!
  local waited
  for ((waited = 0; ; waited++)); do
    grep -Eq "^${ROW%/iterations:*}: [0-9]+ records sent, .* max latency\.\$" "$WORK/$tag.err" && break
    kill -0 "$BENCH_PID" 2>/dev/null || { not_ok "$tag: kbench ended before measuring: $(tail -c 600 "$WORK/$tag.err")"; BENCH_PID=""; return; }
    ((waited < 400)) || { not_ok "$tag: no measurement progress line within 200 s"; return; }
    sleep 0.5
  done
  # kbench names its topics kbench-produce-<pid>-<n>; one row per process makes n = 1.
  local tool_t0=$SECONDS
  "$fault" "kbench-produce-$BENCH_PID-1"
  # A move must have happened while the row ran, not after it (a crash checks itself).
  if ((outlast)); then
    kill -0 "$BENCH_PID" 2>/dev/null && ok "$tag: the row was still running when the fault was done ($((SECONDS - tool_t0)) s)" ||
      not_ok "$tag: the row ended before the fault was done ($((SECONDS - tool_t0)) s; raise KBENCH_FAULTS_WINDOWS)"
  fi
  wait "$BENCH_PID" || rc=$?
  BENCH_PID=""
  if ((rc == 0)); then ok "$tag: kbench exit 0"; else not_ok "$tag: kbench exit $rc: $(tail -c 800 "$WORK/$tag.err")"; fi
  if "$PY" - "$WORK/$tag.json" "$ROW" <<'PYEOF'; then ok "$tag: end offsets equal the delivered count"; else not_ok "$tag: JSON checks (above)"; fi
import json, sys
path, name = sys.argv[1:]
b = {b["name"]: b for b in json.load(open(path))["benchmarks"]}.get(name)
if b is None or b.get("error_occurred"):
    sys.exit(f"  {name} failed: {b and b.get('error_message')}")
d, e = b["delivered_records"], b["end_offsets"]
print(f"  delivered {d:.0f}, end offsets {e:.0f}, retries {b.get('retries', 0):.0f}, errors {b.get('errors', 0):.0f}")
if d != e or d <= 0:
    sys.exit(f"  end offsets {e} != delivered {d}")
PYEOF
}

# ---------------------------------------------------------------- 1. a broker crashes, comes back
crash_broker() {
  "$KAFKA" stop-node 0 --dir "$STATE" --kill 2>>"$WORK/nodes.log"
  kill -0 "$BENCH_PID" 2>/dev/null && ok "crash: broker 0 killed while the row ran" ||
    not_ok "crash: the row ended before broker 0 was killed (raise KBENCH_FAULTS_CRASH_WINDOWS)"
  sleep 2
  # The row may end meanwhile: the other replicas lead; the restart is checked anyway.
  "$KAFKA" start-node 0 --dir "$STATE" 2>>"$WORK/nodes.log" && ok "crash: broker 0 started again on its data" ||
    not_ok "crash: start-node 0 failed: $(tail -n 5 "$WORK/nodes.log")"
}
# 12 windows (24 s): broker 0 dies in the first one, and its partitions' leadership moves
# within the broker session timeout (9 s), well inside the row.
run_faulted broker-crash 3 crash_broker 0 "${KBENCH_FAULTS_CRASH_WINDOWS:-12}"

# ---------------------------------------------------------------- 2. leader moved
# move_to TOPIC REPLICAS: reassign partition 0 to REPLICAS (the same brokers, another order)
# and elect its preferred (first) replica; the election's answer is left in elect.log.
move_to() {
  printf '{"version":1,"partitions":[{"topic":"%s","partition":0,"replicas":[%s]}]}\n' "$1" "$2" >"$WORK/reassign.json"
  "$KAFKA" run-class --dir "$STATE" org.apache.kafka.tools.reassign.ReassignPartitionsCommand \
    --bootstrap-server "$BOOTSTRAP" --reassignment-json-file "$WORK/reassign.json" --execute >"$WORK/reassign.log" 2>&1 ||
    { not_ok "move: reassignment to [$2] failed: $(tail -n 3 "$WORK/reassign.log")"; return 1; }
  "$KAFKA" run-class --dir "$STATE" org.apache.kafka.tools.LeaderElectionCommand --bootstrap-server "$BOOTSTRAP" \
    --election-type PREFERRED --topic "$1" --partition 0 >"$WORK/elect.log" 2>&1 ||
    { not_ok "move: leader election for [$2] failed: $(tail -n 3 "$WORK/elect.log")"; return 1; }
}
move_leader() {
  move_to "$1" 1,2,0 || return 0
  move_to "$1" 2,0,1 || return 0
  # Broker 2 leads now; after the first move broker 1 did, so this election moved it.
  grep -q 'Successfully completed leader election (PREFERRED)' "$WORK/elect.log" &&
    ok "move: leadership moved to broker 2 by kafka-reassign-partitions and kafka-leader-election" ||
    not_ok "move: the second election did not move the leader: $(cat "$WORK/elect.log")"
}
# 30 windows (60 s): the four tool calls took 37-40 s in all on a loaded 2-core machine beside
# an unthrottled row, 9-13 s beside the capped one (the row must outlast them: checked).
run_faulted leader-move 1 move_leader 1 "${KBENCH_FAULTS_WINDOWS:-30}"

live_test_done
