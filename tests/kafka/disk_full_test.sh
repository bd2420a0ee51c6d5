#!/usr/bin/env bash
# Live test of a full log disk: one broker (scripts/kafka) whose state and log directory
# live on a small tmpfs, filled by an acks=all Produce row:
#   1. the row fails in bounded time naming its undelivered records, kbench exits 1 and the
#      JSON is written (the run is never reported as a success);
#   2. the disk grown (remount) and the broker started again on its data: every record
#      kbench counted as delivered is in the topic (per partition, end offset >= delivered;
#      the delivered count is the produced count minus the undelivered one the error names).
# Needs root (mount); skipped (exit 77) otherwise. About a minute.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: tests/kafka/disk_full_test.sh [--help]

Environment:
  KBENCH_BIN            kbench binary (default build/kbench)
  KBENCH_KAFKA_VERSION  Kafka release scripts/kafka starts (its default if unset)
USAGE
}
# shellcheck source-path=SCRIPTDIR source=../lib/live_test_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/live_test_lib.sh"
live_test_init disk-full-test "$@"
live_need_kbench
live_need_root "to mount a small tmpfs"
live_need_java

DISK="$WORK/disk"
STATE="$DISK/kafka"
# Runs after the broker's stop (registered later, run first).
unmount_disk() {
  # The broker's JVM may still hold files for a moment after stop returns.
  local tries
  for ((tries = 0; tries < 40; tries++)); do
    mountpoint -q "$DISK" || break
    umount "$DISK" 2>/dev/null && break
    sleep 0.5
  done
  ! mountpoint -q "$DISK" || umount -l "$DISK"
}
live_on_exit unmount_disk

mkdir -p "$DISK"
# Big enough for the broker's metadata log, its own logs and a second of records; small
# enough that the row fills it within seconds.
mount -t tmpfs -o size=96m tmpfs "$DISK" || fail "cannot mount a tmpfs on $DISK"
live_start_kafka "$STATE" --port-base auto
echo "broker at $BOOTSTRAP, log directory on a 96 MiB tmpfs ($(df -h --output=used "$DISK" | tail -1) used)"

# ---------------------------------------------------------------- 1. the disk fills up
ROW='Produce/send/acks:all/codec:none/record_bytes:500/threads:1/producers:1/real_time'
start=$SECONDS
timeout 300 "$KBENCH_BIN" --bootstrap="$BOOTSTRAP" --benchmark_filter="^${ROW}\$" \
  --window-seconds=20 --warmup-seconds=1 -X message.timeout.ms=10000 \
  --benchmark_out="$WORK/full.json" --benchmark_out_format=json >"$WORK/full.out" 2>"$WORK/full.err" &
bench_pid=$!
set +e
wait "$bench_pid"
rc=$?
set -e
# kbench names its topics kbench-produce-<pid>-<n>; one row per process makes n = 1 (timeout
# execs nothing in between: its child is kbench, but the pid is timeout's, so look it up).
topic="$(grep -o 'kbench-produce-[0-9]*-1' "$WORK/full.err" | head -1 || true)"
elapsed=$((SECONDS - start))
[[ $rc -eq 1 ]] || { tail -20 "$WORK/full.err" >&2; fail "expected exit 1 when the disk filled up, got $rc after ${elapsed}s"; }
((elapsed < 240)) || fail "took ${elapsed}s to give up on a full disk"
delivered="$("$PY" - "$WORK/full.json" "$ROW" <<'PYEOF'
import json, re, sys
path, name = sys.argv[1:]
b = {b["name"]: b for b in json.load(open(path))["benchmarks"]}.get(name)
if b is None or not b.get("error_occurred"):
    sys.exit(f"  {name} did not fail: {b}")
msg = b["error_message"]
m = re.search(r"(\d+) of (\d+) records undelivered", msg)
if not m or int(m.group(1)) <= 0:
    sys.exit(f"  error does not name the undelivered records: {msg!r}")
print(int(m.group(2)) - int(m.group(1)))
print(f"  {msg}", file=sys.stderr)
PYEOF
)" || fail "full-disk checks (above)"
if [[ -z $topic ]]; then
  for d in "$STATE"/node-0/*/kbench-produce-*-1-0; do
    [[ -d $d ]] && topic="$(basename "${d%-0}")"
  done
fi
[[ -n $topic ]] || fail "cannot find kbench's topic in the broker's log directory"
ok "disk full: exit 1 after ${elapsed}s naming the undelivered records; $delivered delivered to $topic"

# ---------------------------------------------------------------- 2. nothing delivered is lost
mount -o remount,size=512m "$DISK" || fail "cannot grow the tmpfs"
"$KAFKA" stop-node 0 --dir "$STATE" --kill >/dev/null 2>&1 || true
"$KAFKA" start-node 0 --dir "$STATE" >/dev/null 2>"$WORK/restart.err" ||
  { tail -5 "$WORK/restart.err" >&2; fail "cannot start the broker again on its data"; }
"$KAFKA" run-class --dir "$STATE" org.apache.kafka.tools.GetOffsetShell \
  --bootstrap-server "$BOOTSTRAP" --topic "$topic" >"$WORK/offsets.txt" 2>"$WORK/offsets.err" ||
  { cat "$WORK/offsets.err" >&2; fail "GetOffsetShell failed"; }
end=$(awk -F: '{ sum += $NF } END { print sum + 0 }' "$WORK/offsets.txt")
((end >= delivered)) || fail "end offsets sum to $end, fewer than the $delivered records delivered: records lost"
ok "broker back on its data: end offsets $end >= $delivered delivered (nothing acknowledged was lost)"
live_test_done
