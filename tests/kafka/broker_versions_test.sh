#!/usr/bin/env bash
# scripts/bench-commits HEAD HEAD --kafka-a 3.9.1 --kafka-b 4.4.0 on one live Produce row,
# 2 rounds (A B, B A) of 1 s windows: each side ran on its own broker (its context's
# broker_version is the one asked for), each cluster was warmed up by its side, compare
# ran and lists broker_version as the expected difference, the exit status is 3 (2 rounds
# cannot reach alpha: inconclusive), and afterwards no broker is left and its ports are
# free. Then a Ctrl-C (SIGINT to the whole process group) once side A's cluster is up: exit
# 130 and both clusters stopped. ~2.5 min (three broker starts; HEAD's kbench comes from the
# build cache the known-regressions scenario also uses, built there at most once per commit).
# `check && ok ... || not_ok ...` is intended: ok never fails.
# shellcheck disable=SC2015
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: tests/kafka/broker_versions_test.sh [--help]

Builds HEAD's kbench (in scripts/bench-commits' build cache under KBENCH_CACHE, unless
already built there) and starts Kafka 3.9.1 and 4.4.0 (scripts/kafka, cached jars or Maven
Central) on free ports.
USAGE
}
# shellcheck source-path=SCRIPTDIR source=../lib/live_test_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/live_test_lib.sh"
live_test_init broker-versions-test "$@"
live_need_java

VERSION_A=3.9.1
VERSION_B=4.4.0
# HEAD is built once for both invocations, in the cache the known-regressions scenario
# (tests/scenarios/scenario_test.sh) builds HEAD in too: a full build on 2 cores costs more
# than the rest of this test, and what is tested here is the brokers, not the build.
CACHE="${KBENCH_CACHE:-$HOME/.cache/kbench}/bench-commits"
RUN_PID=""
stop_clusters() {
  local dir
  for dir in "$WORK"/*/kafka-a "$WORK"/*/kafka-b; do
    [[ -d $dir ]] && "$KAFKA" stop --dir "$dir" >/dev/null 2>&1 || true
  done
}
live_on_exit stop_clusters
stop_run() { [[ -z $RUN_PID ]] || kill -KILL -- "-$RUN_PID"; }
live_on_exit stop_run

# No broker JVM of DIR's clusters, and no listener on the ports their contexts recorded.
left_behind() {
  local out=$1 port what=""
  pgrep -f -- " kafka.Kafka $out/kafka-" >/dev/null && what+=" a broker JVM is still running;"
  for port in "${@:2}"; do
    # shellcheck disable=SC2016  # $1 is the inner shell's
    timeout 2 bash -c ': >/dev/tcp/127.0.0.1/$1' _ "$port" 2>/dev/null && what+=" port $port is still open;"
  done
  printf '%s' "$what"
}

ROW='Produce/send/acks:1/codec:none/record_bytes:500/threads:1/producers:1/real_time'
OUT="$WORK/ab"
rc=0
KBENCH_BOOTSTRAP="" "$ROOT/scripts/bench-commits" HEAD HEAD --kafka-a "$VERSION_A" --kafka-b "$VERSION_B" \
  --runs 2 --build-cache "$CACHE" --out-dir "$OUT" --filter "^$ROW\$" \
  -- --window-seconds=1 --warmup-seconds=0.5 >"$WORK/ab.out" 2>"$WORK/ab.err" || rc=$?
echo "# the A/B run took $((SECONDS - T0)) s"
((rc == 3)) && ok "2 rounds: exit 3 (inconclusive, as the contract says)" ||
  not_ok "exit $rc, want 3: $(tail -c 1500 "$WORK/ab.err")"

if "$PY" - "$OUT" "$ROW" "$VERSION_A" "$VERSION_B" >"$WORK/ports" 2>"$WORK/check.err" <<'PYEOF'; then
import glob, json, os, sys
out, row, want_a, want_b = sys.argv[1:]
problems = []
def load(path):
    with open(path) as f:
        return json.load(f)
ports = set()
for side, want, warm in (("base", want_a, "warmup.json"), ("new", want_b, "warmup-new.json")):
    files = sorted(glob.glob(os.path.join(out, "runs", side + "-*.json")))
    if len(files) != 2:
        problems.append("%s: %d run files, want 2" % (side, len(files)))
    for path in files + [os.path.join(out, side + ".json"), os.path.join(out, "runs", warm)]:
        if not os.path.exists(path):
            problems.append("missing " + path)
            continue
        doc = load(path)
        ctx = doc["context"]
        if ctx.get("broker_version") != want or ctx.get("target") != "live":
            problems.append("%s: broker_version %r, target %r; want %s, live" % (
                path, ctx.get("broker_version"), ctx.get("target"), want))
        rows = [b for b in doc["benchmarks"] if b["name"] == row]
        if not rows or any(b.get("error_occurred") or not b.get("items_per_second") for b in rows):
            problems.append("%s: the row is missing or failed: %s" % (path, rows))
        for addr in str(ctx.get("bootstrap", "")).split(","):
            if ":" in addr:
                port = int(addr.rsplit(":", 1)[1])
                ports.update((port, port + 100))  # broker and controller (scripts/kafka)
    if os.path.exists(os.path.join(out, side + ".json")):
        boot = load(os.path.join(out, side + ".json"))["context"].get("bootstrap")
        print("# %s: Kafka %s at %s" % (side, want, boot), file=sys.stderr)
verdict = load(os.path.join(out, "verdict.json"))
diff = verdict.get("context_diff", {}).get("broker_version")
if diff != {"base": want_a, "new": want_b, "kind": "version"}:
    problems.append("verdict context_diff broker_version: %s" % diff)
judged = [r for r in verdict.get("inconclusive", []) if r.get("name") == row]
if not judged:
    problems.append("the row is not inconclusive in verdict.json: %s" % {
        k: v for k, v in verdict.items() if k in ("regressions", "improvements", "unchanged",
                                                 "unjudged", "errored", "missing")})
if len(ports) != 4:
    problems.append("want two clusters on distinct ports, got %s" % sorted(ports))
for p in problems:
    print("  " + p, file=sys.stderr)
for port in sorted(ports):
    print(port)
sys.exit(1 if problems else 0)
PYEOF
  ok "each side ran on its own broker ($VERSION_A, $VERSION_B), warm-up included; compare lists broker_version"
else
  not_ok "results checks: $(cat "$WORK/check.err")"
fi
mapfile -t ports <"$WORK/ports"
grep '^# ' "$WORK/check.err" || true
grep -q "warming the cluster up: 1 live row(s) of base" "$WORK/ab.err" &&
  grep -q "warming the cluster up: 1 live row(s) of new" "$WORK/ab.err" &&
  ok "each side warmed its own cluster up" || not_ok "warm-up messages missing: $(grep warming "$WORK/ab.err")"
grep -q "broker_version" "$WORK/ab.out" && grep -q "$VERSION_A" "$WORK/ab.out" && grep -q "$VERSION_B" "$WORK/ab.out" &&
  ok "compare's report names both broker versions" || not_ok "compare's report: $(head -c 1500 "$WORK/ab.out")"
((${#ports[@]} == 4)) || ports=()
what=$(left_behind "$OUT" "${ports[@]}")
[[ -z $what ]] && ((${#ports[@]} == 4)) && ok "both clusters are stopped: no broker JVM, ports ${ports[*]} free" ||
  not_ok "after the run:$what (ports: ${ports[*]:-unknown})"
st_a=0 st_b=0
"$KAFKA" status --dir "$OUT/kafka-a" >/dev/null 2>&1 || st_a=$?
"$KAFKA" status --dir "$OUT/kafka-b" >/dev/null 2>&1 || st_b=$?
((st_a == 3 && st_b == 3)) && ok "scripts/kafka status: both stopped" || not_ok "scripts/kafka status: $st_a, $st_b (3 = stopped)"

# Ctrl-C reaches the whole foreground process group: here, once side A's cluster is up and
# side B's is starting. Job control gives the run a process group of its own and keeps
# SIGINT live in it (a plain background job would ignore SIGINT).
OUT2="$WORK/interrupted"
t1=$SECONDS
set -m
KBENCH_BOOTSTRAP="" "$ROOT/scripts/bench-commits" HEAD HEAD --kafka-a "$VERSION_A" --kafka-b "$VERSION_B" \
  --runs 2 --build-cache "$CACHE" --out-dir "$OUT2" --filter "^$ROW\$" -- --window-seconds=1 \
  >"$WORK/int.out" 2>"$WORK/int.err" &
RUN_PID=$!
set +m
for ((waited = 0; ; waited++)); do
  grep -q "side A: Kafka $VERSION_A at" "$WORK/int.err" 2>/dev/null && break
  kill -0 "$RUN_PID" 2>/dev/null || break
  ((waited < 600)) || break
  sleep 0.5
done
if grep -q "side A: Kafka $VERSION_A at" "$WORK/int.err"; then
  sleep 2
  kill -INT -- "-$RUN_PID"
  t_signal=$SECONDS
  rc=0
  wait "$RUN_PID" || rc=$?
  RUN_PID=""
  echo "# interrupted $((t_signal - t1)) s in; bench-commits ended $((SECONDS - t_signal)) s later"
  ((rc == 130)) && ok "Ctrl-C: exit 130" || not_ok "Ctrl-C: exit $rc, want 130: $(tail -c 1000 "$WORK/int.err")"
  what=$(left_behind "$OUT2")
  st_a=0 st_b=0
  "$KAFKA" status --dir "$OUT2/kafka-a" >/dev/null 2>&1 || st_a=$?
  "$KAFKA" status --dir "$OUT2/kafka-b" >/dev/null 2>&1 || st_b=$?
  [[ -z $what ]] && ((st_a == 3 && st_b == 3)) &&
    ok "Ctrl-C: both clusters stopped" || not_ok "Ctrl-C:$what status $st_a, $st_b: $(tail -c 1000 "$WORK/int.err")"
else
  not_ok "side A's cluster never came up: $(tail -c 1000 "$WORK/int.err")"
fi

live_test_done
