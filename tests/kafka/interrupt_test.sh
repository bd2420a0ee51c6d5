#!/usr/bin/env bash
# scripts/bench interrupted mid-run (SIGTERM to the script alone, as a CI runner or `kill`
# sends it; Ctrl-C reaches kbench directly and takes the same path): kbench ends the
# benchmark it runs, writes the JSON of what finished, no further process starts, the
# broker scripts/bench started is stopped, and the exit status is 143. Also: a results
# folder that cannot be written is refused (exit 2) before anything is built or started.
# ~1.5 min (one broker start).
# `check && ok ... || not_ok ...` is intended: ok never fails.
# shellcheck disable=SC2015
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: tests/kafka/interrupt_test.sh [--help]

Runs scripts/bench --no-build (build/kbench must exist) with a local one-broker Kafka.
USAGE
}
# shellcheck source-path=SCRIPTDIR source=../lib/live_test_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/live_test_lib.sh"
live_test_init interrupt-test "$@"
KBENCH_BIN="$ROOT/build/kbench" # scripts/bench --no-build runs this one
live_need_kbench
live_need_java
export KBENCH_KAFKA_DIR="$WORK/kafka"
BENCH_PID=""
stop_bench() { [[ -z $BENCH_PID ]] || kill -KILL "$BENCH_PID"; }
live_on_exit "$KAFKA" stop --dir "$KBENCH_KAFKA_DIR"
live_on_exit stop_bench

# What is checked is the signal's handling, not throughput: the rows are capped at 20000
# records/s (unthrottled, they kept both cores busy for nothing the checks read).
FIRST='Produce/send/acks:1/codec:none/record_bytes:100/threads:1/producers:1/rate:20000/real_time'
SECOND='Produce/send/acks:1/codec:none/record_bytes:500/threads:1/producers:1/rate:20000/real_time'
OUT="$WORK/results"
# Two processes of two rows each, 3 s windows: the signal comes while the second row of
# the first process runs.
KBENCH_BOOTSTRAP="" "$ROOT/scripts/bench" --no-build --processes 2 --min-time 0 \
  --filter "^($FIRST|$SECOND)\$" --out "$OUT" -- --window-seconds=3 --warmup-seconds=0.5 \
  --produce='acks=1,codec=none,record_bytes=100|500,rate=20000' \
  >"$WORK/bench.out" 2>"$WORK/bench.err" &
BENCH_PID=$!
for ((waited = 0; ; waited++)); do
  grep -q "^${FIRST}" "$OUT/console.txt" 2>/dev/null && break
  kill -0 "$BENCH_PID" 2>/dev/null || fail "scripts/bench ended before the first row finished: $(tail -c 600 "$WORK/bench.err")"
  ((waited < 600)) || fail "the first row did not finish within 300 s"
  sleep 0.5
done
kill -TERM "$BENCH_PID"
t_signal=$SECONDS
rc=0
wait "$BENCH_PID" || rc=$?
BENCH_PID=""
echo "# signal after $((t_signal - T0)) s; scripts/bench ended $((SECONDS - t_signal)) s later"

((rc == 143)) && ok "scripts/bench exits 143 after SIGTERM" || not_ok "scripts/bench exited $rc, want 143: $(tail -c 600 "$WORK/bench.err")"
((SECONDS - t_signal <= 60)) && ok "it ended within 60 s of the signal" || not_ok "it took $((SECONDS - t_signal)) s to end"
[[ ! -e $OUT/processes/p2.json ]] && ok "no further kbench process started" || not_ok "process 2 ran after the signal"
if "$PY" - "$OUT/kbench.json" "$FIRST" "$SECOND" <<'PYEOF'; then ok "kbench.json is valid and keeps the finished row"; else not_ok "kbench.json checks (above)"; fi
import json, sys
path, first, second = sys.argv[1:]
doc = json.load(open(path))
by_name = {b["name"]: b for b in doc["benchmarks"] if b.get("run_type") != "aggregate"}
f = by_name.get(first)
if f is None or f.get("error_occurred") or not f.get("items_per_second"):
    sys.exit(f"  the finished row is missing or failed: {f}")
s = by_name.get(second)
if s is not None and not (s.get("error_occurred") and "interrupted by SIGTERM" in s.get("error_message", "")):
    sys.exit(f"  the interrupted row is not marked as interrupted: {s}")
print(f"  {first}: {f['items_per_second']:.0f} records/s; {second}: "
      f"{s.get('error_message') if s else 'not in the JSON'}")
PYEOF
# The untimed cluster warm-up ran both rows before process 1, and none of it is a result.
if "$PY" - "$OUT/warmup/warmup.json" "$OUT/kbench.json" "$FIRST" "$SECOND" <<'PYEOF'; then ok "the cluster warm-up ran both rows apart from the results"; else not_ok "cluster warm-up checks (above)"; fi
import json, sys
warm_path, run_path, first, second = sys.argv[1:]
warm = [b["name"] for b in json.load(open(warm_path))["benchmarks"] if b.get("run_type") != "aggregate"]
if sorted(warm) != sorted([first, second]):
    sys.exit(f"  warm-up rows: {warm}")
runs = [b for b in json.load(open(run_path))["benchmarks"] if b["name"] == first and b.get("run_type") != "aggregate"]
if len(runs) != 1:
    sys.exit(f"  {first} appears {len(runs)} times in kbench.json (want 1: process 1's)")
PYEOF
state=0
"$ROOT/scripts/kafka" status --dir "$KBENCH_KAFKA_DIR" >/dev/null 2>&1 || state=$?
((state == 3)) && ok "the broker scripts/bench started is stopped" || not_ok "scripts/kafka status says $state (3 = stopped)"
if pgrep -f -- "--benchmark_out=$OUT/" >/dev/null; then not_ok "a kbench process is still running"; else ok "no kbench process left"; fi

# Refused before anything is built or started.
rc=0
"$ROOT/scripts/bench" --out /proc/kbench-nope >/dev/null 2>"$WORK/refused.err" || rc=$?
((rc == 2)) && grep -q -- '--out /proc/kbench-nope: cannot write in /proc' "$WORK/refused.err" &&
  ! grep -q 'building\|starting' "$WORK/refused.err" && ok "an unwritable results folder: exit 2 before building or starting" ||
  not_ok "--out /proc/kbench-nope: exit $rc: $(cat "$WORK/refused.err")"

live_test_done
