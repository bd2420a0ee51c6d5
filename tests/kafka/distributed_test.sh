#!/usr/bin/env bash
# Live test of scripts/trogdor + scripts/distributed: one Trogdor coordinator and 3 agents
# loading a 3-broker cluster, every agent and every broker in its own network namespace with
# its own address (scripts/trogdor start --brokers 3, scripts/kafka start --netns), so that
# clients and brokers talk as separate hosts do; the topic is replicated 3 ways, acks=all.
#
#  1. a merged open-loop run: merged records = sum of the agents' delivered records = sum of
#     their topics' end offsets; merged p50..p99.9 = the percentiles of every agent's raw
#     buckets pooled (computed here independently); each agent's own p99 = that of its own
#     buckets (what kbench writes is what it reported); merged achieved rate >= 0.99 x 3R;
#     every agent saw all 3 brokers (context broker_count), so with replication 3 and
#     acks=all each record crossed every broker's namespace;
#  2. an agent killed mid-run fails the merged row naming it, and the JSON is still written
#     with the other agents' results;
#  3. bad input exits 2 before any task: unknown spec key, no bootstrap, more agents than
#     started, a secret in -X (never echoed).
# Everything it starts (JVMs, namespaces, bridge) is stopped on any exit.
# `check && ok ... || not_ok ...` is intended: ok never fails.
# shellcheck disable=SC2015
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=../lib/live_test_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/live_test_lib.sh"
live_test_init distributed-test "$@"
live_need_kbench
live_need_root "for network namespaces"
live_need_java
KBENCH="$KBENCH_BIN"
TDIR="$WORK/trogdor"
KDIR="$WORK/kafka"
RUN_PID=""
touch "$WORK/started"
stop_run() { [[ -z $RUN_PID ]] || kill "$RUN_PID"; }
# A failed agent run keeps its kbench log in a temporary directory: this test's ones go.
remove_agent_logs() {
  find "${TMPDIR:-/tmp}" -maxdepth 1 -name 'kbench-trogdor-kbench-*' -newer "$WORK/started" \
    -exec rm -rf {} + 2>/dev/null || true
}
live_on_exit remove_agent_logs
# Brokers go first (registered later): their namespaces belong to scripts/trogdor.
live_on_exit "$ROOT/scripts/trogdor" stop --dir "$TDIR"

RATE=1000
SPEC="acks=all,replication=3,record_bytes=100,rate=$RATE"
HOST="$("$ROOT/scripts/trogdor" start --agents 3 --brokers 3 --dir "$TDIR")"
ok "scripts/trogdor start: 3 agents and 3 broker namespaces behind $HOST"
live_start_kafka "$KDIR" --brokers 3 --netns "$TDIR"
live_on_exit stop_run
ok "3 brokers, each in its own namespace, at $BOOTSTRAP"

run() {
  "$ROOT/scripts/distributed" run --dir "$TDIR" --kbench "$KBENCH" --bootstrap "$BOOTSTRAP" \
    --window-seconds 3 --warmup-seconds 1 "$@"
}

# 1. A merged run, checked against the agents' raw results.
if run --agents 3 --produce "$SPEC" --out "$WORK/merged.json" 2>"$WORK/run1.err"; then
  ok "distributed run with 3 agents exits 0"
else
  not_ok "distributed run with 3 agents failed:$(sed 's/^/    /' "$WORK/run1.err")"
fi
if "$PY" - "$WORK/merged.json" "$RATE" <<'PY'; then
import json, math, sys
d = json.load(open(sys.argv[1]))
rate = float(sys.argv[2])
row = d["benchmarks"][0]
agents = d["kbench_agents"]
assert sorted(agents) == ["agent-0", "agent-1", "agent-2"], sorted(agents)
assert not row.get("error_occurred"), row.get("error_message")

def pct(buckets, count, mx, q):  # harness/histogram.cc Percentile, independently
    rank = max(1, math.ceil(q * count))
    seen = 0
    for bound, n in sorted(buckets):
        seen += n
        if seen >= rank:
            return min(bound, mx)
    return mx

pooled, count, mx, delivered, offsets = {}, 0, 0, 0, 0
for name, a in agents.items():
    b = a["benchmarks"][0]
    assert a["context"]["broker_count"] == "3", (name, a["context"].get("broker_count"))
    s = a["kbench_intervals"][b["run_name"]][0]
    own = pct(s["latency_buckets"], s["latency_count"], s["latency_max_us"], 0.99)
    assert own == b["p99_us"], (name, own, b["p99_us"])
    assert sum(n for _, n in s["latency_buckets"]) == s["latency_count"], name
    for bound, n in s["latency_buckets"]:
        pooled[bound] = pooled.get(bound, 0) + n
    count += s["latency_count"]
    mx = max(mx, s["latency_max_us"])
    delivered += b["delivered_records"]
    offsets += b["end_offsets"]
assert row["delivered_records"] == delivered == offsets, (row["delivered_records"], delivered, offsets)
from kbench import facts
for quantile in facts.latency()["quantiles"]:
    key = quantile["metric"]
    want = pct(pooled.items(), count, mx, quantile["q"])
    assert row[key] == want, (key, row[key], want)
assert row["max_us"] == mx
assert row["achieved_rate"] >= 0.99 * 3 * rate, row["achieved_rate"]
assert d["context"]["distributed_agents"] == "agent-0,agent-1,agent-2"
print("merged: %d records, p99 %d us, %.0f records/s, achieved %.0f/s over %.2f s" % (
    row["delivered_records"], row["p99_us"], row["items_per_second"], row["achieved_rate"],
    row["window_seconds"]))
PY
  ok "merged records = agents' delivered = end offsets; merged percentiles = pooled buckets'"
else
  not_ok "merged JSON does not hold what the agents measured"
fi

# 2. Kill agent-1 (its JVM) once the load runs: its row fails by name, the JSON is written.
run --agents 3 --produce "$SPEC" --window-seconds 6 \
  --out "$WORK/killed.json" 2>"$WORK/run2.err" &
RUN_PID=$!
for _ in $(seq 1 100); do
  grep -q '^agent-1: ' "$WORK/run2.err" 2>/dev/null && break
  sleep 0.2
done
sleep 2
kill -KILL "$(cat "$TDIR/agent-1.pid")"
# Still inside the 6 s window: the killed agent's kbench must already be gone.
sleep 3
if ! pgrep -f "kbench-trogdor-kbench-.*-agent-1" >/dev/null; then
  ok "no load left running for the killed agent"
else
  not_ok "a kbench of the killed agent is still running"
fi
if pgrep -f "kbench-trogdor-kbench-.*-agent-0" >/dev/null &&
  pgrep -f "kbench-trogdor-kbench-.*-agent-2" >/dev/null; then
  ok "the other agents' kbench still run"
else
  not_ok "another agent's kbench is not running"
fi
rc=0
wait "$RUN_PID" || rc=$?
RUN_PID=""
if ((rc == 1)) && "$PY" - "$WORK/killed.json" <<'PY'; then
import json, sys
d = json.load(open(sys.argv[1]))
row = d["benchmarks"][0]
assert row.get("error_occurred") and "agent-1" in row["error_message"], row
for kept in ("agent-0", "agent-2"):
    assert d["kbench_agents"][kept]["benchmarks"][0]["delivered_records"] > 0, kept
assert "agent-1" in d["kbench_agent_failures"]
assert "agent-0" not in d["kbench_agent_failures"]
PY
  ok "a killed agent fails the merged row by name (exit 1), the others' results are kept"
else
  not_ok "killed agent: exit $rc (want 1) or the JSON lacks the failure:$(tail -5 "$WORK/run2.err" | sed 's/^/    /')"
fi

# 3. Refusals, exit 2, before any task.
expect_2() {
  local what="$1" rc=0
  shift
  run "$@" --out "$WORK/bad.json" 2>"$WORK/bad.err" || rc=$?
  if ((rc == 2)) && ! grep -q hunter2 "$WORK/bad.err"; then
    ok "refused with exit 2: $what"
  else
    not_ok "$what: exit $rc, want 2:$(sed 's/^/    /' "$WORK/bad.err")"
  fi
}
expect_2 "unknown spec key" --agents 1 --produce "acks=1,no_such_key=3"
expect_2 "more agents than started" --agents 4 --produce "acks=1"
expect_2 "a secret in -X" --agents 1 --produce "acks=1" -X sasl.password=hunter2
rc=0
"$ROOT/scripts/distributed" run --dir "$TDIR" --kbench "$KBENCH" --agents 1 --produce acks=1 \
  --out "$WORK/bad.json" 2>"$WORK/bad.err" </dev/null || rc=$?
((rc == 2)) && grep -q "bootstrap" "$WORK/bad.err" && ok "refused with exit 2: no bootstrap" ||
  not_ok "no bootstrap: exit $rc"

# A node stopped and started again comes back in its own namespace, on its own address.
ns2="$(awk 'NR == 3 { print $3 }' "$TDIR/brokers")"
rc=0
"$KAFKA" stop-node 2 --dir "$KDIR" >/dev/null 2>"$WORK/node.err" &&
  "$KAFKA" start-node 2 --dir "$KDIR" --timeout 90 >/dev/null 2>>"$WORK/node.err" || rc=$?
pid2="$(cat "$KDIR/node-2/pid" 2>/dev/null || true)"
in_ns="$(ip netns identify "$pid2" 2>/dev/null || true)"
if ((rc == 0)) && [[ -n $ns2 && $in_ns == "$ns2" ]]; then
  ok "start-node 2: back in its namespace $ns2"
else
  not_ok "start-node 2: exit $rc, node in namespace '$in_ns', want '$ns2':$(tail -n 5 "$WORK/node.err" | sed 's/^/    /')"
fi

# stop removes what start made.
count_ns() {
  local tag n=0 f
  tag="kbt$(printf '%s' "$TDIR" | md5sum | cut -c1-5)-"
  for f in /var/run/netns/"$tag"*; do [[ -e $f ]] && n=$((n + 1)); done
  echo "$n"
}
before="$(count_ns)"
"$KAFKA" stop --dir "$KDIR" >/dev/null 2>&1
"$ROOT/scripts/trogdor" stop --dir "$TDIR" >/dev/null 2>&1
after="$(count_ns)"
if ((before == 6 && after == 0)); then
  ok "scripts/trogdor stop removed its $before namespaces (3 agents, 3 brokers)"
else
  not_ok "namespaces before stop $before (want 6), after $after (want 0)"
fi

# netem delay: used where the kernel has it, else refused with exit 2 leaving nothing.
rc=0
"$ROOT/scripts/trogdor" start --agents 1 --delay 2ms --dir "$WORK/delay" >/dev/null 2>"$WORK/delay.err" || rc=$?
if ((rc == 0)); then
  "$ROOT/scripts/trogdor" stop --dir "$WORK/delay" >/dev/null 2>&1
  ok "--delay: this kernel has netem"
elif ((rc == 2)) && grep -q netem "$WORK/delay.err" &&
  ! ip netns list | grep -q "^kbt$(printf '%s' "$WORK/delay" | md5sum | cut -c1-5)-"; then
  ok "--delay without netem: refused with exit 2, no namespace left"
else
  not_ok "--delay: exit $rc:$(sed 's/^/    /' "$WORK/delay.err")"
fi

live_test_done
