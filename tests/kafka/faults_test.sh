#!/usr/bin/env bash
# Live test of faults during a run, on one 3-broker cluster (scripts/kafka, plaintext):
#   1. the partition leader crashes (SIGKILL) mid-run and is started again, under
#      acks=all, replication 3, idempotence on: the row passes, end offsets equal the
#      delivered count exactly (nothing lost, nothing duplicated);
#   2. the partition leader is moved mid-run with Kafka's own admin tools (replica order
#      changed by kafka-reassign-partitions, then a preferred leader election): the row
#      passes with end offsets equal to the delivered count, and the leader did change.
# kbench itself fails a row whose end offsets differ from its delivered count, per
# partition; the test also reads both from the JSON. ~3-4 min on 2 cores.
# `check && ok ... || not_ok ...` is intended: ok never fails.
# shellcheck disable=SC2015
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: tests/kafka/faults_test.sh [--help]

Environment:
  KBENCH_BIN            kbench binary (default build/kbench)
  KBENCH_KAFKA_VERSION  Kafka release scripts/kafka starts (its default if unset; 4.x tools)
USAGE
}
case "${1:-}" in
  -h | --help) usage; exit 0 ;;
  "") ;;
  *) echo "faults_test: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
esac

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
KBENCH_BIN="${KBENCH_BIN:-$ROOT/build/kbench}"
KAFKA="$ROOT/scripts/kafka"
PY=/usr/bin/python3
[[ -x $KBENCH_BIN ]] || { echo "faults_test: no kbench binary at $KBENCH_BIN (set KBENCH_BIN)" >&2; exit 2; }

WORK="$(mktemp -d /tmp/kbench-faults-test.XXXXXX)"
STATE="$WORK/kafka"
BENCH_PID=""
cleanup() {
  [[ -n $BENCH_PID ]] && kill "$BENCH_PID" 2>/dev/null || true
  "$KAFKA" stop --dir "$STATE" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

passed=0 failed=0
ok() { passed=$((passed + 1)); echo "ok   - $*"; }
not_ok() { failed=$((failed + 1)); echo "FAIL - $*"; }

t0=$SECONDS
# Three brokers on 2 cores: smaller heaps than scripts/kafka's default.
export KBENCH_KAFKA_HEAP_OPTS="${KBENCH_KAFKA_HEAP_OPTS:--Xms256m -Xmx512m}"
BOOTSTRAP="$("$KAFKA" start --dir "$STATE" --brokers 3 --port-base auto 2>"$WORK/start.err")" ||
  { cat "$WORK/start.err" >&2; echo "FAIL - could not start 3 brokers" >&2; exit 1; }
export KBENCH_BROKER_VERSION
KBENCH_BROKER_VERSION="$(cat "$STATE/version")"
echo "# 3 brokers (Kafka $KBENCH_BROKER_VERSION) at $BOOTSTRAP in $((SECONDS - t0)) s"

# describe TOPIC: "LEADER REPLICAS" of partition 0, e.g. "1 1,2,0". Retried: a broker just
# restarted may answer before its metadata has caught up with a new topic.
describe() {
  local try out
  for ((try = 0; try < 20; try++)); do
    "$KAFKA" run-class --dir "$STATE" topics --bootstrap-server "$BOOTSTRAP" --describe --topic "$1" \
      >"$WORK/describe.out" 2>&1 || true
    cat "$WORK/describe.out" >>"$WORK/describe.log"
    out="$(sed -nE 's/.*Partition: 0[[:space:]]+Leader: ([0-9]+)[[:space:]]+Replicas: ([0-9,]+).*/\1 \2/p' "$WORK/describe.out" | head -n 1)"
    [[ -n $out ]] && break
    sleep 1
  done
  printf '%s\n' "$out"
}

# run_faulted TAG FAULT: one Produce row (acks=all, replication 3, idempotence) measured
# for exactly 30 windows of 2 s; FAULT (a function) runs on its topic once the measurement
# has begun (Kafka's tools take ~10 s a call on a loaded 2-core machine).
ROW='Produce/send/acks:all/codec:none/record_bytes:200/threads:1/producers:1/replication:3/idempotence:true/iterations:30/real_time'
run_faulted() {
  local tag="$1" fault="$2" rc=0
  KBENCH_FIXED_ITERATIONS=30 "$KBENCH_BIN" --bootstrap="$BOOTSTRAP" \
    --produce 'acks=all,codec=none,record_bytes=200,replication=3,idempotence=true' \
    --benchmark_filter='^Produce/send/' --window-seconds=2 -X message.timeout.ms=120000 \
    --benchmark_out="$WORK/$tag.json" --benchmark_out_format=json >"$WORK/$tag.out" 2>"$WORK/$tag.err" &
  BENCH_PID=$!
  local waited
  for ((waited = 0; ; waited++)); do
    grep -Eq "^${ROW%/real_time}: [0-9]+ records sent, .* max latency\.\$" "$WORK/$tag.err" && break
    kill -0 "$BENCH_PID" 2>/dev/null || { not_ok "$tag: kbench ended before measuring: $(tail -c 600 "$WORK/$tag.err")"; BENCH_PID=""; return; }
    ((waited < 400)) || { not_ok "$tag: no measurement progress line within 200 s"; return; }
    sleep 0.5
  done
  # kbench names its topics kbench-produce-<pid>-<n>; one row per process makes n = 1.
  "$fault" "kbench-produce-$BENCH_PID-1"
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

# ---------------------------------------------------------------- 1. leader crashes, comes back
crash_leader() {
  local before leader
  before="$(describe "$1")"
  leader="${before%% *}"
  [[ -n $leader ]] || { not_ok "crash: no leader found for $1: $(tail -n 4 "$WORK/describe.log" 2>/dev/null)"; return; }
  "$KAFKA" stop-node "$leader" --dir "$STATE" --kill 2>>"$WORK/nodes.log"
  sleep 2
  "$KAFKA" start-node "$leader" --dir "$STATE" 2>>"$WORK/nodes.log" &&
    ok "crash: leader $leader killed and started again while the row ran (now $(describe "$1"))" ||
    not_ok "crash: start-node $leader failed: $(tail -n 5 "$WORK/nodes.log")"
}
run_faulted leader-crash crash_leader

# ---------------------------------------------------------------- 2. leader moved
move_leader() {
  local before leader replicas rotated after
  before="$(describe "$1")"
  leader="${before%% *}"
  replicas="${before#* }"
  # The same replicas, the first one (the preferred leader) moved to the end.
  rotated="${replicas#*,},${replicas%%,*}"
  printf '{"version":1,"partitions":[{"topic":"%s","partition":0,"replicas":[%s]}]}\n' "$1" "$rotated" >"$WORK/reassign.json"
  [[ -n $leader && -n $replicas ]] || { not_ok "move: no leader found for $1: $(tail -n 4 "$WORK/describe.log" 2>/dev/null)"; return; }
  # Retried for the same reason as describe.
  local try
  for ((try = 0; try < 5; try++)); do
    "$KAFKA" run-class --dir "$STATE" org.apache.kafka.tools.reassign.ReassignPartitionsCommand \
      --bootstrap-server "$BOOTSTRAP" --reassignment-json-file "$WORK/reassign.json" --execute >"$WORK/reassign.log" 2>&1 && break
    grep -q UnknownTopicOrPartition "$WORK/reassign.log" || try=5
    sleep 1
  done
  ((try < 5)) || { not_ok "move: reassignment failed: $(tail -n 5 "$WORK/reassign.log")"; return; }
  "$KAFKA" run-class --dir "$STATE" org.apache.kafka.tools.LeaderElectionCommand --bootstrap-server "$BOOTSTRAP" \
    --election-type PREFERRED --topic "$1" --partition 0 >"$WORK/elect.log" 2>&1 ||
    { not_ok "move: leader election failed: $(tail -n 5 "$WORK/elect.log")"; return; }
  after="$(describe "$1")"
  [[ -n $after && ${after%% *} != "$leader" ]] && ok "move: leader $leader -> ${after%% *} (replicas $replicas -> ${after#* }) while the row ran" ||
    not_ok "move: leader still '$after' (was $before)"
}
run_faulted leader-move move_leader

echo "$passed passed, $failed failed ($((SECONDS - t0)) s)"
((failed == 0))
