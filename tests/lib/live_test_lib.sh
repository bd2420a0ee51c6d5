# tests/lib/live_test_lib.sh — the preamble of the live tests (tests/kafka/*.sh,
# tests/producer/live_produce_test.sh, tests/scenarios/*.sh): sourced, never run.
#
#   source "$(dirname "${BASH_SOURCE[0]}")/../lib/live_test_lib.sh"
#   live_test_init NAME "$@"   NAME for messages and the work directory; -h/--help prints the
#                              test's usage() (or its header comment) and exits 0; any other
#                              argument exits 2 (a test with options of its own parses them
#                              first and passes none)
#   live_need_kbench           KBENCH_BIN (default build/kbench, exported), exit 2 if missing
#   live_need_root WHY         skipped (exit 77) unless root
#   live_need_java             skipped (exit 77) without java (JAVA_HOME or PATH): every
#                              broker, tool and scenario of these tests is a JVM
#   live_start_kafka DIR ARGS  scripts/kafka start --dir DIR ARGS: sets BOOTSTRAP, stopped
#                              on exit; a failed start is a failure (exit 1) with its stderr
#   live_on_exit CMD ARGS...   run CMD ARGS (as they are now) on exit, the last registered
#                              first, before WORK goes; a function for what is known later
#   ok / not_ok / check / fail counters; fail also exits 1 (for a check nothing after it
#                              can do without)
#   live_test_done             the test's last command: "N passed, M failed (S s)", the
#                              failures again; false if any
#
# Sets ROOT, KAFKA (scripts/kafka), PY (scripts/lib/python, kbench's one interpreter), WORK
# (a fresh directory, removed on exit unless KBENCH_TEST_KEEP=1) and T0 (SECONDS at init);
# exports KBENCH_KAFKA_JVM_OPTS and KBENCH_KAFKA_TOOL_OPTS (C1 only) unless already set.
# `check && ok ... || not_ok ...` is intended in the tests: ok never fails.
# shellcheck shell=bash disable=SC2034  # ROOT, KAFKA, PY, T0, BOOTSTRAP are the tests'

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
KAFKA="$ROOT/scripts/kafka"
PY="$ROOT/scripts/lib/python"
LIVE_TEST=""
WORK=""
BOOTSTRAP=""
T0=$SECONDS
passed=0
failed=0
# Test brokers and Kafka's tools live for seconds to minutes and are checked for behaviour,
# not speed: C1 only (no C2 compiler threads; the tools also a serial GC, as scripts/kafka's
# own short-lived tools run). faults used 8 % less CPU so. A value the caller set wins;
# scripts/kafka's defaults for users stay as they are.
export KBENCH_KAFKA_JVM_OPTS="${KBENCH_KAFKA_JVM_OPTS--XX:TieredStopAtLevel=1}"
export KBENCH_KAFKA_TOOL_OPTS="${KBENCH_KAFKA_TOOL_OPTS--XX:TieredStopAtLevel=1 -XX:+UseSerialGC}"
_live_failures=()
_live_on_exit=()

live_test_init() {
  LIVE_TEST=$1
  shift
  case "${1:-}" in
    -h | --help)
      if declare -F usage >/dev/null; then
        usage
      else # the header comment, up to the first line that is not one
        sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"
      fi
      exit 0
      ;;
    "") ;;
    *)
      echo "$LIVE_TEST: unknown argument '$1' (see --help)" >&2
      exit 2
      ;;
  esac
  WORK="$(mktemp -d "${TMPDIR:-/tmp}/kbench-$LIVE_TEST.XXXXXX")"
  T0=$SECONDS
  trap _live_cleanup EXIT
}

_live_cleanup() {
  local i
  for ((i = ${#_live_on_exit[@]} - 1; i >= 0; i--)); do
    eval "${_live_on_exit[i]}" >/dev/null 2>&1 || true
  done
  if [[ ${KBENCH_TEST_KEEP:-0} == 1 ]]; then
    echo "$LIVE_TEST: kept $WORK"
  else
    rm -rf "$WORK"
  fi
}

live_on_exit() { _live_on_exit+=("$(printf '%q ' "$@")"); }

live_need_kbench() {
  KBENCH_BIN="${KBENCH_BIN:-$ROOT/build/kbench}"
  [[ -x $KBENCH_BIN ]] || { echo "$LIVE_TEST: no kbench binary at $KBENCH_BIN (set KBENCH_BIN)" >&2; exit 2; }
  export KBENCH_BIN
}

# A test that cannot run here is a skip (ctest's SKIP_RETURN_CODE), never a pass.
live_need_root() {
  ((EUID == 0)) && return 0
  echo "$LIVE_TEST: needs root $1; skipped"
  exit 77
}

live_need_java() {
  [[ -n ${JAVA_HOME:-} && -x $JAVA_HOME/bin/java ]] && return 0
  command -v java >/dev/null 2>&1 && return 0
  echo "$LIVE_TEST: java not found (scripts/setup installs it); skipped"
  exit 77
}

live_start_kafka() {
  local dir=$1 start=$SECONDS err
  shift
  err="$WORK/kafka-start-$(basename "$dir").err"
  # Only ever stops the cluster of this test's own state dir; the test is over, so its
  # brokers get 1 s to stop before SIGKILL (a graceful shutdown takes several).
  live_on_exit "$KAFKA" stop --dir "$dir" --timeout 1
  if ! BOOTSTRAP="$("$KAFKA" start --dir "$dir" "$@" 2>"$err")"; then
    tail -n 20 "$err" >&2
    fail "scripts/kafka start --dir $dir $*"
  fi
  echo "# Kafka $(cat "$dir/version" 2>/dev/null) at $BOOTSTRAP in $((SECONDS - start)) s"
}

ok() { passed=$((passed + 1)); echo "ok   - $*"; }
not_ok() {
  failed=$((failed + 1))
  _live_failures+=("${1%%$'\n'*}")
  echo "FAIL - $*"
}
fail() {
  not_ok "$@"
  live_test_done
  exit 1
}
check() { # check DESCRIPTION COMMAND...
  local what=$1
  shift
  if "$@"; then ok "$what"; else not_ok "$what"; fi
}

live_test_done() {
  ((failed == 0)) || printf 'failed: %s\n' "${_live_failures[@]}"
  echo "$passed passed, $failed failed ($((SECONDS - T0)) s)"
  # Its status, not an exit: shellcheck 0.9 would take the functions a test calls only
  # indirectly (a fault, a cleanup) for unreachable code.
  ((failed == 0))
}
