#!/usr/bin/env bash
# Integration test of scripts/kafka against a real Kafka broker.
#
# Starts a 1-node cluster in a temporary state dir on non-default ports, checks
# status, round-trips records with Kafka's own console and perf tools through
# `run-class`, stops it and checks that the JVM is gone and its data removed; a start
# interrupted by SIGTERM stops the broker it launched and exits 143.
# Also checks that bad usage and missing prerequisites exit 2.
#
# Uses the normal jar cache (KBENCH_CACHE); the first run resolves Kafka from
# Maven Central. KBENCH_KAFKA_VERSION selects the version under test.
# KBENCH_TEST_KAFKA_PORT_BASE (default 29092) moves its ports.
# `check && ok ... || not_ok ...` is intended: ok never fails.
# shellcheck disable=SC2015
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/live_test_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/live_test_lib.sh"
live_test_init kafka-script-test "$@"
live_need_java
# scripts/kafka runs in kbench's venv; a scratch KBENCH_CACHE below holds none (scripts/lib/python
# reads KBENCH_VENV first).
# shellcheck source-path=SCRIPTDIR source=../../scripts/lib/venv.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/venv.sh"
KBENCH_VENV=$(kbench_venv)
export KBENCH_VENV

PORT_BASE="${KBENCH_TEST_KAFKA_PORT_BASE:-29092}"
VERSION="${KBENCH_KAFKA_VERSION:-}"
DIR="$WORK/state"
LISTENER_PID=""
# This test starts and stops its cluster itself (that is what it tests); on exit, only ever
# the cluster of its own state dir is stopped.
stop_listener() { [[ -z $LISTENER_PID ]] || kill "$LISTENER_PID"; }
live_on_exit "$KAFKA" stop --dir "$DIR"
live_on_exit stop_listener

# expect_exit WANT DESCRIPTION -- COMMAND...; stderr is kept in $WORK/err.
expect_exit() {
  local want="$1" what="$2" got=0
  shift 3
  "$@" >"$WORK/out" 2>"$WORK/err" </dev/null || got=$?
  if [[ $got == "$want" ]]; then
    ok "$what (exit $got)"
  else
    not_ok "$what: exit $got, wanted $want; stderr: $(head -c 600 "$WORK/err")"
  fi
}

# err_mentions PATTERN DESCRIPTION — the last command's stderr matches.
err_mentions() {
  if grep -qiE "$1" "$WORK/err"; then ok "$2"; else not_ok "$2: stderr lacks /$1/: $(head -c 600 "$WORK/err")"; fi
}

version_args=()
[[ -n $VERSION ]] && version_args=(--version "$VERSION")

# ---------------------------------------------------------------- bad usage

expect_exit 2 "no command" -- "$KAFKA"
expect_exit 2 "unknown command" -- "$KAFKA" frobnicate
expect_exit 2 "unknown start option" -- "$KAFKA" start --dir "$DIR" --bogus
expect_exit 2 "--brokers 0" -- "$KAFKA" start --dir "$DIR" --brokers 0
expect_exit 2 "--brokers not a number" -- "$KAFKA" start --dir "$DIR" --brokers three
expect_exit 2 "--host not an address of this machine" -- "$KAFKA" start --dir "$DIR" --host 192.0.2.1
expect_exit 2 "--host not an address" -- "$KAFKA" start --dir "$DIR" --host nowhere
expect_exit 2 "--version not a version" -- "$KAFKA" start --dir "$DIR" --version latest
expect_exit 2 "--port-base out of range" -- "$KAFKA" start --dir "$DIR" --port-base 80
expect_exit 2 "--security unknown" -- "$KAFKA" start --dir "$DIR" --security tls13
expect_exit 2 "stop-node without a node number" -- "$KAFKA" stop-node --dir "$DIR"
expect_exit 2 "--dir without a value" -- "$KAFKA" status --dir
expect_exit 2 "run-class without a class" -- "$KAFKA" run-class --dir "$DIR"
expect_exit 2 "run-class with a bad name" -- "$KAFKA" run-class --dir "$DIR" 'no such tool'
expect_exit 0 "--help" -- "$KAFKA" --help
mkdir -p "$WORK/foreign" && touch "$WORK/foreign/precious"
expect_exit 2 "start refuses a non-empty foreign dir" -- "$KAFKA" start --dir "$WORK/foreign"
[[ -f $WORK/foreign/precious && ! -e $WORK/foreign/node-0 ]] && ok "foreign dir untouched" || not_ok "start wrote into a foreign dir"
[[ -d $DIR ]] && not_ok "bad usage created $DIR" || ok "bad usage left no state dir"

# Missing prerequisites: a PATH holding everything in /usr/bin except java and mvn.
NOBIN="$WORK/nobin"
mkdir -p "$NOBIN"
find /usr/bin -maxdepth 1 ! -name java ! -name mvn ! -type d -print0 | xargs -0 ln -s -t "$NOBIN"
expect_exit 2 "start without java" -- env PATH="$NOBIN" JAVA_HOME= "$KAFKA" start --dir "$DIR" "${version_args[@]}"
err_mentions 'java not found.*(scripts/setup|openjdk)' "missing java is named, with how to get it"
expect_exit 2 "classpath without mvn, empty cache" -- env PATH="$NOBIN" KBENCH_CACHE="$WORK/empty-cache" "$KAFKA" classpath --version 4.1.1
err_mentions 'mvn not found.*(scripts/setup|apt-get install maven)' "missing mvn is named, with how to get it"

# Maven Central answers "not found" for a release that never existed.
expect_exit 2 "unknown version" -- "$KAFKA" classpath --version 0.0.1
err_mentions 'not on Maven Central' "unknown version is explained"

# ---------------------------------------------------------------- classpath

expect_exit 0 "classpath" -- "$KAFKA" classpath "${version_args[@]}"
cp_line="$(cat "$WORK/out")"
if [[ $(wc -l <"$WORK/out") == 1 && $cp_line == *"/kafka_2.13-"*.jar* && $cp_line == *"/kafka-tools-"*.jar* ]]; then
  missing=0
  IFS=: read -ra jars <<<"$cp_line"
  for j in "${jars[@]}"; do [[ -f $j ]] || missing=$((missing + 1)); done
  ((missing == 0)) && ok "classpath: ${#jars[@]} jars, all present" || not_ok "classpath names $missing missing jars"
else
  not_ok "classpath output is not one line naming kafka_2.13 and kafka-tools jars"
fi

# ---------------------------------------------------------------- port in use

# Something else listening on the broker port must be refused before any JVM starts.
"$PY" -c '
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1); time.sleep(60)' "$PORT_BASE" &
LISTENER_PID=$!
for _ in $(seq 50); do (: >/dev/tcp/127.0.0.1/"$PORT_BASE") 2>/dev/null && break; sleep 0.1; done
expect_exit 1 "start with the broker port taken" -- "$KAFKA" start --dir "$DIR" --port-base "$PORT_BASE" "${version_args[@]}"
err_mentions "port.*$PORT_BASE.*in use" "port in use is reported"
kill "$LISTENER_PID" 2>/dev/null || true
wait "$LISTENER_PID" 2>/dev/null || true
LISTENER_PID=""

# ---------------------------------------------------------------- a live cluster

expect_exit 3 "status before start" -- "$KAFKA" status --dir "$DIR"

t0=$SECONDS
expect_exit 0 "start" -- "$KAFKA" start --dir "$DIR" --port-base "$PORT_BASE" --timeout 80 "${version_args[@]}"
echo "#    start took $((SECONDS - t0)) s"
BOOTSTRAP="$(cat "$WORK/out")"
[[ $BOOTSTRAP == "127.0.0.1:$PORT_BASE" ]] && ok "start prints only the bootstrap" ||
  not_ok "start printed '$BOOTSTRAP', wanted 127.0.0.1:$PORT_BASE"
[[ -f $DIR/bootstrap && $(cat "$DIR/bootstrap") == "$BOOTSTRAP" ]] && ok "bootstrap file" || not_ok "bootstrap file missing or wrong"
[[ -s $DIR/version ]] && ok "version file: $(cat "$DIR/version")" || not_ok "version file missing"
[[ -n $VERSION && -s $DIR/version && $(cat "$DIR/version") != "$VERSION" ]] && not_ok "version file is not $VERSION"

expect_exit 0 "status while running" -- "$KAFKA" status --dir "$DIR"
grep -q '^state: *running' "$WORK/out" && grep -q "bootstrap: *$BOOTSTRAP" "$WORK/out" && grep -q 'node-0: *pid [0-9]' "$WORK/out" &&
  grep -q "$DIR/logs/node-0/server.log" "$WORK/out" && ok "status shows state, bootstrap, pid and log" ||
  not_ok "status output incomplete: $(cat "$WORK/out")"
[[ -s $DIR/logs/node-0/server.log ]] && ok "broker writes its log" || not_ok "no broker log at $DIR/logs/node-0/server.log"

expect_exit 0 "start again while running" -- "$KAFKA" start --dir "$DIR" --port-base "$PORT_BASE" "${version_args[@]}"
[[ $(cat "$WORK/out") == "$BOOTSTRAP" ]] && ok "second start prints the same bootstrap" || not_ok "second start printed '$(cat "$WORK/out")'"
err_mentions 'already running' "second start says it is already running"

PID="$(cat "$DIR/node-0/pid")"
[[ $(tr '\0' ' ' <"/proc/$PID/cmdline") == *kafka.Kafka* ]] && ok "pid file names the broker JVM" || not_ok "pid $PID is not kafka.Kafka"

TOPIC=kbench-script-test
expect_exit 0 "create topic" -- "$KAFKA" run-class --dir "$DIR" topics --bootstrap-server "$BOOTSTRAP" \
  --create --topic "$TOPIC" --partitions 1 --replication-factor 1

# Exact round trip with the console tools.
printf 'alpha\nbravo\ncharlie\n' >"$WORK/records"
if "$KAFKA" run-class --dir "$DIR" console-producer --bootstrap-server "$BOOTSTRAP" --topic "$TOPIC" \
  <"$WORK/records" >"$WORK/out" 2>"$WORK/err"; then
  ok "console producer"
else
  not_ok "console producer failed: $(head -c 600 "$WORK/err")"
fi
expect_exit 0 "console consumer" -- "$KAFKA" run-class --dir "$DIR" console-consumer --bootstrap-server "$BOOTSTRAP" \
  --topic "$TOPIC" --from-beginning --max-messages 3 --timeout-ms 30000
diff -q "$WORK/records" "$WORK/out" >/dev/null && ok "consumed exactly the produced records" ||
  not_ok "consumed '$(tr '\n' ' ' <"$WORK/out")'"

# Kafka's perf tool by its full class name, as kbench runs it side by side.
expect_exit 0 "ProducerPerformance" -- "$KAFKA" run-class --dir "$DIR" org.apache.kafka.tools.ProducerPerformance \
  --topic "$TOPIC" --num-records 2000 --record-size 100 --throughput -1 \
  --producer-props "bootstrap.servers=$BOOTSTRAP" acks=all
grep -qE '^2000 records sent, .* records/sec' "$WORK/out" && ok "perf tool sent 2000 records" ||
  not_ok "perf tool output: $(tail -n 2 "$WORK/out")"
expect_exit 0 "ConsumerPerformance" -- "$KAFKA" run-class --dir "$DIR" consumer-perf --bootstrap-server "$BOOTSTRAP" \
  --topic "$TOPIC" --messages 2003 --timeout 30000
# Newer releases print a deprecation note before the CSV header; read the row after it.
awk -F', *' 'header && $5 == 2003 { found = 1 } /^start\.time/ { header = 1 } END { exit !found }' "$WORK/out" &&
  ok "consumer perf tool read all 2003 records" || not_ok "consumer perf output: $(cat "$WORK/out")"

# ---------------------------------------------------------------- stop

expect_exit 0 "stop" -- "$KAFKA" stop --dir "$DIR"
if [[ -e /proc/$PID && $(tr '\0' ' ' <"/proc/$PID/cmdline" 2>/dev/null) == *kafka.Kafka* ]]; then
  not_ok "broker pid $PID still running after stop"
else
  ok "broker process is gone"
fi
[[ ! -e $DIR/node-0/data ]] && ok "data dir removed" || not_ok "data dir $DIR/node-0/data still there"
[[ -s $DIR/logs/node-0/server.log ]] && ok "logs kept" || not_ok "logs removed by stop"
expect_exit 3 "status after stop" -- "$KAFKA" status --dir "$DIR"
grep -q "$DIR/logs/node-0/server.log" "$WORK/out" && ok "status after stop names the log" || not_ok "status after stop: $(cat "$WORK/out")"
expect_exit 0 "stop when already stopped" -- "$KAFKA" stop --dir "$DIR"

# ---------------------------------------------------------------- interrupted start

# SIGTERM while start waits for its broker: the node it launched is stopped, exit 143.
"$KAFKA" start --dir "$DIR" --port-base "$PORT_BASE" "${version_args[@]}" >"$WORK/out" 2>"$WORK/err" &
START_PID=$!
for _ in $(seq 1200); do [[ -s $DIR/node-0/pid ]] && break; sleep 0.1; done
PID="$(cat "$DIR/node-0/pid" 2>/dev/null || true)"
kill -TERM "$START_PID"
rc=0
wait "$START_PID" || rc=$?
((rc == 143)) && ok "start interrupted by SIGTERM exits 143" || not_ok "start exited $rc after SIGTERM: $(tail -c 600 "$WORK/err")"
if [[ -n $PID && -e /proc/$PID && $(tr '\0' ' ' <"/proc/$PID/cmdline" 2>/dev/null) == *kafka.Kafka* ]]; then
  not_ok "the broker of the interrupted start (pid $PID) is still running"
else
  ok "the interrupted start left no broker running"
fi
expect_exit 3 "status after the interrupted start" -- "$KAFKA" status --dir "$DIR"

live_test_done
