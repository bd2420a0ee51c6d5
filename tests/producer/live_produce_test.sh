#!/usr/bin/env bash
# Integration test of the Produce family against a real Kafka broker (scripts/kafka):
#   1. acks=all, zstd, 2 partitions, a 1.5 s window: JSON counters, interval samples and end
#      offsets;
#   2. --bootstrap=127.0.0.1:1 (nothing listening) fails with exit 2 within 30 s, naming it;
#   3. records written to an acks=0 row's topic behind its back: the row fails, its message
#      naming the partition with delivered and end-offset counts (the end-offset check runs
#      per partition at every acks);
#   4. the broker killed mid-run: that benchmark fails naming the undelivered count, the
#      next one still runs (and fails: the cluster is gone), the JSON is written, exit 1;
#   5. (before 4) keyed and transactional rows: end offsets = delivered + commit markers;
#   6. the broker started again and killed under a transactional row: it fails in bounded
#      time naming the cause, and the next row runs.
# Uses its own state dir and ports, so it does not disturb a cluster started by hand.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: tests/producer/live_produce_test.sh [--help]

Environment:
  KBENCH_BIN                 kbench binary (default build/kbench)
  KBENCH_LIVE_TEST_PORT_BASE first broker port (default 29192; controller at +100)
  KBENCH_KAFKA_VERSION       Kafka release scripts/kafka starts (its default if unset)
  KBENCH_LIVE_TEST_RATE      records/s of the rows that check failures (default 10000)
USAGE
}
# shellcheck source-path=SCRIPTDIR source=../lib/live_test_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/live_test_lib.sh"
live_test_init live-produce-test "$@"
live_need_kbench
live_need_java

PORT_BASE="${KBENCH_LIVE_TEST_PORT_BASE:-29192}"
STATE="$WORK/kafka"
live_start_kafka "$STATE" --port-base "$PORT_BASE"
VERSION="$("$KAFKA" status --dir "$STATE" | awk -F': *' 'tolower($1) ~ /version/ {print $2; exit}')"
export KBENCH_BROKER_VERSION="$VERSION"
echo "broker $VERSION at $BOOTSTRAP"

# Rows that check correctness (end offsets, failures), not throughput, are capped at RATE
# records/s: unthrottled, the 25 s and 20 s rows below sent 4-8 million records each, two
# cores' worth of kbench and broker for nothing the checks read. At this rate batches are
# still in flight and queued whenever the broker dies or an intruder writes.
RATE="${KBENCH_LIVE_TEST_RATE:-10000}"

# run_and_kill_broker TAG FIRST NEXT FIRST_SPEC NEXT_SPEC: runs rows FIRST and NEXT (in that
# order; their --produce specs) with a short message timeout, kills the broker once FIRST
# is being measured (its first progress line not marked warm-up: killed during the warm-up
# or its end-offset check, it would fail for another reason), and waits for kbench: sets rc.
# Output: $WORK/TAG.json and TAG.err.
run_and_kill_broker() {
  local tag=$1 first=$2 next=$3 first_spec=$4 next_spec=$5 waited bench_pid pid_file
  "$KBENCH_BIN" --bootstrap="$BOOTSTRAP" --produce="$first_spec" --produce="$next_spec" \
    --benchmark_filter="^(${first}|${next})\$" \
    --benchmark_min_time=20 -X message.timeout.ms=5000 \
    --benchmark_out="$WORK/$tag.json" --benchmark_out_format=json >"$WORK/$tag.out" 2>"$WORK/$tag.err" &
  bench_pid=$!
  for ((waited = 0; ; waited++)); do
    grep -Eqs "^${first%/real_time}: [0-9]+ records sent, .* max latency\.\$" "$WORK/$tag.err" && break
    kill -0 "$bench_pid" 2>/dev/null || { cat "$WORK/$tag.err" >&2; fail "kbench ended before measuring $first"; }
    ((waited < 240)) || fail "no measurement progress line from $first within 120 s"
    sleep 0.5
  done
  pid_file="$(find "$STATE" -mindepth 2 -maxdepth 2 -name pid 2>/dev/null | head -1)"
  [[ -n $pid_file ]] || fail "no broker pid file under $STATE"
  kill -9 "$(<"$pid_file")"
  set +e
  wait "$bench_pid"
  rc=$?
  set -e
}

# ---------------------------------------------------------------- 1. a full produce run
NAME='Produce/send/acks:all/codec:zstd/record_bytes:500/threads:1/producers:1/real_time'
"$KBENCH_BIN" --bootstrap="$BOOTSTRAP" --benchmark_filter="^${NAME}\$" --benchmark_min_time=0.01 \
  --window-seconds=1.5 --warmup-seconds=0.5 --benchmark_out="$WORK/run.json" --benchmark_out_format=json >"$WORK/run.out" 2>"$WORK/run.err" \
  || { cat "$WORK/run.err" >&2; fail "produce run exited $?"; }
"$PY" - "$WORK/run.json" "$NAME" "$VERSION" <<'PYEOF' || fail "JSON checks (above)"
import json, sys
path, name, version = sys.argv[1:]
doc = json.load(open(path))
ctx = doc["context"]
def check(cond, msg):
    if not cond:
        print("  " + msg, file=sys.stderr)
        sys.exit(1)
check(ctx.get("target") == "live", f"context target is {ctx.get('target')!r}, expected live")
check(ctx.get("broker_version") == version, f"broker_version {ctx.get('broker_version')!r} != {version!r}")
check(int(ctx.get("broker_count", 0)) == 1, f"broker_count {ctx.get('broker_count')!r}")
check("Produce:" in ctx.get("broker_api_versions", ""), f"broker_api_versions {ctx.get('broker_api_versions')!r}")
runs = [b for b in doc["benchmarks"] if b["name"] == name]
check(len(runs) == 1, f"expected one result named {name}, got {len(runs)}")
b = runs[0]
check(not b.get("error_occurred"), f"benchmark failed: {b.get('error_message')}")
delivered, end = b["delivered_records"], b["end_offsets"]
check(delivered >= 50000, f"only {delivered} records delivered (want >= 50000)")
check(end == delivered, f"end offsets {end} != delivered {delivered}")
check(b["items_per_second"] > 0 and b["bytes_per_second"] > 0, "no throughput")
check(b["errors"] == 0, f"errors = {b['errors']}")
check(0 < b["ratio"] < 0.9, f"ratio {b['ratio']}: zstd on A-Z letters should be about 0.6")
check(b["wire_bytes_per_second"] > 0 and b["requests_per_second"] > 0, "no wire statistics")
# Closed loop (no rate): queueing, not latency.
check("p50_us" not in b, "a closed-loop row reports p50_us (latency names are for open loop)")
check(0 < b["queue_p50_us"] <= b["queue_p99_us"] <= b["queue_max_us"], "queue percentiles out of order")
check(abs(b["window_seconds"] - 1.5) < 1e-6, f"window_seconds {b['window_seconds']}")
series = doc["kbench_intervals"][name]
check(len(series) == 1 and len(series[0]["records_per_second"]) == 2, f"interval samples {series}")
check(all(r > 0 for r in series[0]["records_per_second"]), f"an interval without records: {series}")
check(0 <= b["interval_cv"] < 1, f"interval_cv {b['interval_cv']}")
check(b["records_per_batch"] >= 1 and b["avg_batch_bytes"] > 0, "no batch statistics")
print(f"  {delivered:.0f} records, end offsets {end:.0f}, {b['items_per_second']:.0f} records/s, "
      f"ratio {b['ratio']:.3f}, queue p99 {b['queue_p99_us']:.0f} us, interval CV {b['interval_cv']:.3f}")
PYEOF
ok "acks=all zstd run on $BOOTSTRAP: counters and end offsets"

# ---------------------------------------------------------------- 2. nothing listening
# Started here and checked after 3: it needs no broker and only waits out kbench's connection
# timeout (15 s), so it runs beside 3's row. It times itself.
(
  start=$SECONDS rc=0
  timeout 60 "$KBENCH_BIN" --bootstrap=127.0.0.1:1 --benchmark_filter="^${NAME}\$" \
    --benchmark_min_time=0.01 >"$WORK/dead.out" 2>"$WORK/dead.err" || rc=$?
  echo "$rc $((SECONDS - start))" >"$WORK/dead.rc"
) &
dead_pid=$!
stop_dead() { [[ -z $dead_pid ]] || pkill -TERM -P "$dead_pid"; } # timeout passes it on to kbench
live_on_exit stop_dead

# ---------------------------------------------------------------- 3. extra records
# kbench names its topics kbench-produce-<pid>-<n>; one row per process makes n = 1.
ACKS0="Produce/send/acks:0/codec:none/record_bytes:500/threads:1/producers:1/rate:$RATE/real_time"
"$KBENCH_BIN" --bootstrap="$BOOTSTRAP" --produce="acks=0,codec=none,record_bytes=500,rate=$RATE" \
  --benchmark_filter="^${ACKS0}\$" --benchmark_min_time=25 \
  --benchmark_out="$WORK/extra.json" --benchmark_out_format=json >"$WORK/extra.out" 2>"$WORK/extra.err" &
bench_pid=$!
for ((waited = 0; ; waited++)); do
  grep -Eqs "^${ACKS0%/real_time}: [0-9]+ records sent" "$WORK/extra.err" && break
  kill -0 "$bench_pid" 2>/dev/null || { cat "$WORK/extra.err" >&2; fail "kbench ended before $ACKS0 ran"; }
  ((waited < 240)) || fail "no progress line from $ACKS0 within 120 s"
  sleep 0.5
done
"$KAFKA" run-class --dir "$STATE" producer-perf --topic "kbench-produce-$bench_pid-1" \
  --num-records 7 --record-size 10 --throughput -1 --producer-props bootstrap.servers="$BOOTSTRAP" \
  >"$WORK/intruder.out" 2>&1 || { cat "$WORK/intruder.out" >&2; fail "could not write to kbench's topic"; }
set +e
wait "$bench_pid"
rc=$?
set -e
[[ $rc -eq 1 ]] || { cat "$WORK/extra.err" >&2; fail "expected exit 1 with 7 extra records in the topic, got $rc"; }
"$PY" - "$WORK/extra.json" "$ACKS0" <<'PYEOF' || fail "extra-records checks (above)"
import json, re, sys
path, name = sys.argv[1:]
b = {b["name"]: b for b in json.load(open(path))["benchmarks"]}.get(name)
if b is None or not b.get("error_occurred"):
    sys.exit(f"  {name} did not fail: {b}")
msg = b["error_message"]
parts = re.findall(r"partition \d+: delivered (\d+), end offset (\d+) \((\d+) extra\)", msg)
if sum(int(extra) for _, _, extra in parts) != 7 or "7 records more than delivered" not in msg:
    sys.exit(f"  message does not name 7 extra records per partition: {msg!r}")
print(f"  {msg}")
PYEOF
ok "7 records written behind an acks=0 row's back: it fails naming them per partition"

# ---------------------------------------------------------------- 2. nothing listening (its check)
wait "$dead_pid" || true
dead_pid=""
read -r rc elapsed <"$WORK/dead.rc" || fail "the 127.0.0.1:1 run left no exit status"
[[ $rc -eq 2 ]] || { cat "$WORK/dead.err" >&2; fail "expected exit 2 for 127.0.0.1:1, got $rc"; }
((elapsed <= 30)) || fail "took ${elapsed}s to give up on 127.0.0.1:1 (limit 30 s)"
grep -q '127.0.0.1:1' "$WORK/dead.err" || { cat "$WORK/dead.err" >&2; fail "message does not name 127.0.0.1:1"; }
ok "127.0.0.1:1: exit 2 after ${elapsed}s: $(head -1 "$WORK/dead.err")"

# ---------------------------------------------------------------- 5. keys and transactions
# Keyed records through the default partitioner, and transactional producers whose commit
# markers occupy offsets: end offsets = delivered records + markers, per partition.
KEYED='Produce/send/acks:1/codec:none/record_bytes:500/threads:1/producers:1/partitions:16/keys:zipf/key_count:1000/real_time'
TXN100='Produce/send/acks:all/codec:none/record_bytes:500/threads:1/producers:1/transaction_records:100/real_time'
"$KBENCH_BIN" --bootstrap="$BOOTSTRAP" --benchmark_filter="^(${KEYED}|${TXN100})\$" \
  --window-seconds=1 --warmup-seconds=0.5 --benchmark_out="$WORK/keys.json" \
  --benchmark_out_format=json >"$WORK/keys.out" 2>"$WORK/keys.err" \
  || { cat "$WORK/keys.err" >&2; fail "keys and transactions run exited $?"; }
"$PY" - "$WORK/keys.json" "$KEYED" "$TXN100" <<'PYEOF' || fail "keys and transactions checks (above)"
import json, sys
path, keyed, txn = sys.argv[1:]
by_name = {b["name"]: b for b in json.load(open(path))["benchmarks"]}
for name in (keyed, txn):
    b = by_name.get(name)
    if b is None or b.get("error_occurred"):
        sys.exit(f"  {name} failed or missing: {b and b.get('error_message')}")
k, t = by_name[keyed], by_name[txn]
if not (k["end_offsets"] == k["delivered_records"] > 0):
    sys.exit(f"  keyed: end offsets {k['end_offsets']} != delivered {k['delivered_records']}")
markers = t["transaction_markers"]
if not (markers > 0 and t["end_offsets"] == t["delivered_records"] + markers):
    sys.exit(f"  transactions: end offsets {t['end_offsets']} != delivered "
             f"{t['delivered_records']} + markers {markers}")
if not (t["transactions_per_second"] > 0 and t["commit_avg_us"] > 0 and t["transactions_aborted"] == 0):
    sys.exit(f"  transaction counters: {t}")
print(f"  keyed {k['items_per_second']:.0f} records/s; transactions of 100: "
      f"{t['transactions_per_second']:.1f}/s, commit {t['commit_avg_us']:.0f} us, "
      f"end offsets {t['end_offsets']:.0f} = {t['delivered_records']:.0f} + {markers:.0f} markers")
PYEOF
ok "keyed and transactional rows on the broker: end offsets = delivered + markers"

# ---------------------------------------------------------------- 4. broker killed mid-run
# Benchmarks run in registration order: KILLED is running (min_time 20 s) when the broker
# dies, NEXT starts after it. A short message timeout makes stranded records fail fast.
KILLED="Produce/send/acks:1/codec:none/record_bytes:100/threads:1/producers:1/rate:$RATE/real_time"
NEXT='Produce/send/acks:0/codec:none/record_bytes:500/threads:1/producers:1/real_time'
NEXT_SPEC='acks=0,codec=none,record_bytes=500'
run_and_kill_broker kill "$KILLED" "$NEXT" "acks=1,codec=none,record_bytes=100,rate=$RATE" "$NEXT_SPEC"
[[ $rc -eq 1 ]] || { cat "$WORK/kill.err" >&2; fail "expected exit 1 after the broker died, got $rc"; }
"$PY" - "$WORK/kill.json" "$KILLED" "$NEXT" <<'PYEOF' || { cat "$WORK/kill.err" >&2; fail "killed-broker checks (above)"; }
import json, re, sys
path, killed, nxt = sys.argv[1:]
doc = json.load(open(path))
by_name = {b["name"]: b for b in doc["benchmarks"]}
b = by_name.get(killed)
if b is None or not b.get("error_occurred"):
    sys.exit(f"  {killed} did not fail: {b}")
m = re.search(r"(\d+) of (\d+) records undelivered", b["error_message"])
if not m or int(m.group(1)) <= 0:
    sys.exit(f"  error does not name the undelivered count: {b['error_message']!r}")
print(f"  {killed}: {b['error_message']}")
if nxt not in by_name:
    sys.exit(f"  the next benchmark ({nxt}) did not run")
print(f"  next: {by_name[nxt].get('error_message', 'ran')}")
PYEOF
ok "broker killed mid-run: failure names the undelivered count, run continued, JSON written"

# ---------------------------------------------------------------- 6. transactions killed
# The broker (also the transaction coordinator) is started again, and killed while a
# transactional row is measured: the row fails naming what failed (records undelivered, the
# commit, the abort), in bounded time (transaction calls wait at most message.timeout.ms +
# 5 s), and the next row still runs.
"$KAFKA" start-node 0 --dir "$STATE" >/dev/null 2>"$WORK/restart.err" \
  || { cat "$WORK/restart.err" >&2; fail "could not start the broker again"; }
TXN="Produce/send/acks:all/codec:none/record_bytes:500/threads:1/producers:1/transaction_records:10000/rate:$RATE/real_time"
start=$SECONDS
run_and_kill_broker txkill "$TXN" "$NEXT" "acks=all,codec=none,record_bytes=500,transaction_records=10000,rate=$RATE" "$NEXT_SPEC"
elapsed=$((SECONDS - start))
[[ $rc -eq 1 ]] || { cat "$WORK/txkill.err" >&2; fail "expected exit 1 after the broker died, got $rc"; }
"$PY" - "$WORK/txkill.json" "$TXN" "$NEXT" <<'PYEOF' || { cat "$WORK/txkill.err" >&2; fail "killed-transaction checks (above)"; }
import json, sys
path, txn, nxt = sys.argv[1:]
by_name = {b["name"]: b for b in json.load(open(path))["benchmarks"]}
b = by_name.get(txn)
if b is None or not b.get("error_occurred"):
    sys.exit(f"  {txn} did not fail: {b}")
msg = b["error_message"]
if "undelivered" not in msg and "transaction" not in msg:
    sys.exit(f"  error names neither undelivered records nor a transaction call: {msg!r}")
print(f"  {txn}: {msg}")
if nxt not in by_name:
    sys.exit(f"  the next benchmark ({nxt}) did not run")
PYEOF
ok "transactional row with the broker killed: failed in ${elapsed}s naming it, run continued"
live_test_done
