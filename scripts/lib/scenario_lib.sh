# shellcheck shell=bash
# scripts/lib/scenario_lib.sh — what every scenario's runner (scripts/scenarios/NAME/run)
# shares: the common options, the clusters it starts on free ports (and always stops),
# kbench invocations that leave their command line and console output next to the JSON,
# and the Python side (scripts/kbench/scenario.py, the scenario's own report.py).
#
# Usage in a runner:
#   SCN_NAME=producer-sharing
#   source "$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/lib/scenario_lib.sh"
#   scn_parse_args "$@"        # sets SCALE, OUT, BOOTSTRAP, TINY; --help prints usage();
#                              # calls scn_extra_arg for other options and scn_check_args
#                              # (both optional) before anything is made
# Sourced, never executed; the caller has `set -euo pipefail`.

SCN_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
: "${KBENCH_ROOT:=$SCN_ROOT}"
: "${KBENCH_BIN:=$KBENCH_ROOT/build/kbench}"
export KBENCH_ROOT KBENCH_BIN
# kbench's one interpreter (scripts/lib/python): the venv, with the package kbench.
SCN_PY="$SCN_ROOT/scripts/lib/python"
# The scenario's folder: its report.py and README.md.
SCN_DIR="$(cd "$(dirname "$0")" && pwd)"
SCN_STARTED_DIRS=()

PROG=$SCN_NAME
# shellcheck source-path=SCRIPTDIR source=cli_lib.sh
source "$SCN_ROOT/scripts/lib/cli_lib.sh"

scn_parse_args() {
  SCALE=small OUT="" BOOTSTRAP="" TINY=0
  while (($#)); do
    case "$1" in
      --scale) [[ $# -ge 2 ]] || die 2 "--scale needs a value (small or full)"; SCALE=$2; shift 2 ;;
      --scale=*) SCALE=${1#*=}; shift ;;
      --out) [[ $# -ge 2 ]] || die 2 "--out needs a directory"; OUT=$2; shift 2 ;;
      --out=*) OUT=${1#*=}; shift ;;
      --bootstrap) [[ $# -ge 2 ]] || die 2 "--bootstrap needs HOST:PORT"; BOOTSTRAP=$2; shift 2 ;;
      --bootstrap=*) BOOTSTRAP=${1#*=}; shift ;;
      --tiny) TINY=1; shift ;;
      -h | --help) usage; exit 0 ;;
      *)
        if declare -F scn_extra_arg >/dev/null && scn_extra_arg "$@"; then
          shift "$SCN_SHIFT"
        else
          die 2 "unknown argument '$1' (see --help)"
        fi
        ;;
    esac
  done
  case "$SCALE" in
    small | full) ;;
    *) die 2 "unknown scale '$SCALE' (known: small, full)" ;;
  esac
  if [[ -n $BOOTSTRAP && ! $BOOTSTRAP =~ ^[^,:[:space:]]+:[0-9]+(,[^,:[:space:]]+:[0-9]+)*$ ]]; then
    die 2 "--bootstrap must be HOST:PORT[,HOST:PORT...], got '$BOOTSTRAP'"
  fi
  [[ -z $OUT ]] || check_out_dir --out "$OUT"
  # A runner's checks of its own options (scn_check_args), then a dry run ends here.
  if declare -F scn_check_args >/dev/null; then scn_check_args; fi
  dry_run_exit
  [[ -x $KBENCH_BIN ]] || die 2 "kbench binary not found at $KBENCH_BIN (build it: cmake --build build --target kbench, or run through scripts/scenario)"
  if [[ -z $OUT ]]; then OUT="$(scn_default_out "$SCN_NAME")"; fi
  mkdir -p "$OUT/logs" || die 2 "cannot create $OUT"
  OUT="$(cd "$OUT" && pwd)"
  if ((TINY)); then TINY_ARG=(--tiny); else TINY_ARG=(); fi
  trap scn_cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  scn_note "scenario $SCN_NAME, scale $SCALE$( ((TINY)) && echo ' (tiny)'), out $OUT"
}

# results/scenarios/<NAME>/<YYYYmmdd-HHMMSS>-<sha>
scn_default_out() {
  local sha
  sha="$(git -C "$KBENCH_ROOT" rev-parse --short=12 HEAD 2>/dev/null || echo nogit)"
  echo "$KBENCH_ROOT/results/scenarios/$1/$(date +%Y%m%d-%H%M%S)-$sha"
}

# Everything a scenario ran, in order, so a result can be reproduced by hand.
scn_note() { printf '%s\n' "$*" >>"$OUT/commands.txt"; }

scn_cleanup() {
  local rc=$? d
  for d in "${SCN_STARTED_DIRS[@]}"; do
    info "stopping the Kafka cluster in $d"
    "$KBENCH_ROOT/scripts/kafka" stop --dir "$d" >/dev/null 2>>"$OUT/logs/kafka-stop.log" ||
      info "warning: stopping $d failed (see $OUT/logs/kafka-stop.log)"
  done
  SCN_STARTED_DIRS=()
  return "$rc"
}

# scn_cluster_start TAG BROKERS VERSION [SECURITY]: sets SCN_BOOTSTRAP and SCN_CLIENT_CONFIG
# (the file for kbench --client-config). Not to be called in $(...):
# the stop-on-exit list must live in this shell. The cluster lives under $OUT/kafka-TAG,
# listens on ports that are free when it starts (so that scenarios, tests and
# scripts/bench's broker can run side by side) and is stopped on exit, whatever happens
# (stop also deletes its certificates and passwords: nothing secret stays under $OUT).
# shellcheck disable=SC2034  # SCN_CLIENT_CONFIG is read by the runners
scn_cluster_start() {
  local tag=$1 brokers=$2 version=$3 security=${4:-plaintext} dir
  dir="$OUT/kafka-$tag"
  SCN_STARTED_DIRS+=("$dir")
  SCN_CLIENT_CONFIG="$dir/client.properties"
  scn_note "scripts/kafka start --dir $dir --brokers $brokers --version $version --security $security --port-base auto"
  info "starting Kafka $version with $brokers broker(s), security $security..."
  if ! SCN_BOOTSTRAP="$("$KBENCH_ROOT/scripts/kafka" start --dir "$dir" --brokers "$brokers" \
    --version "$version" --security "$security" --port-base auto 2>>"$OUT/logs/kafka-start-$tag.log")"; then
    tail -n 5 "$OUT/logs/kafka-start-$tag.log" >&2
    die 1 "could not start Kafka $version (log: $OUT/logs/kafka-start-$tag.log)"
  fi
  info "Kafka $version is up at $SCN_BOOTSTRAP"
}

# scn_local_cluster TAG BROKERS: a cluster of Kafka ${KBENCH_KAFKA_VERSION:-4.4.0} started
# here (scn_cluster_start) becomes BOOTSTRAP, its version KBENCH_BROKER_VERSION.
scn_local_cluster() {
  local version=${KBENCH_KAFKA_VERSION:-4.4.0}
  scn_cluster_start "$1" "$2" "$version"
  BOOTSTRAP=$SCN_BOOTSTRAP
  export KBENCH_BROKER_VERSION=$version
}

# scn_try NAME TAG WHAT [kbench args...]: one kbench run (scn_run), JSON to
# $OUT/raw/NAME.json. A failure is recorded in SCN_FAILED as TAG and the scenario goes on:
# one bad run should not cost the others.
SCN_FAILED=()
scn_try() {
  local json="$OUT/raw/$1.json" tag=$2 what=$3
  shift 3
  if ! scn_run "$json" "$@"; then
    SCN_FAILED+=("$tag")
    info "$what failed: $(grep -h -m1 -o 'error:.*\|ERROR OCCURRED.*' "$(scn_log "$json")" | head -n1)"
    rm -f "$json"
  fi
}

# scn_finish TOTAL WHAT MISSING [report options...]: the report with a --note per SCN_NOTES
# entry, plus one on the runs that failed (WHAT: what TOTAL counts, MISSING: where from);
# then exit 1 if any did.
SCN_NOTES=()
scn_finish() {
  local total=$1 what=$2 missing=$3 n=${#SCN_FAILED[@]} note note_args=()
  shift 3
  if ((n)); then
    SCN_NOTES+=("**$n of $total $what failed** and are $missing: ${SCN_FAILED[*]} (their logs are in logs/).")
  fi
  for note in "${SCN_NOTES[@]}"; do note_args+=(--note "$note"); done
  scn_report "${note_args[@]}" "$@"
  ((n == 0)) || die 1 "$n of $total $what failed: ${SCN_FAILED[*]}"
}

# scn_log JSON: the console log of the kbench run that writes JSON.
scn_log() { echo "$OUT/logs/$(basename "${1%.json}").log"; }

# scn_run JSON [kbench args...]: one kbench run, noted in commands.txt with the environment
# it inherits (LD_LIBRARY_PATH, KBENCH_BROKER_VERSION), JSON to JSON, console to scn_log.
scn_run() {
  local json=$1
  shift
  scn_note "${LD_LIBRARY_PATH:+LD_LIBRARY_PATH=$LD_LIBRARY_PATH }${KBENCH_BROKER_VERSION:+KBENCH_BROKER_VERSION=$KBENCH_BROKER_VERSION }$KBENCH_BIN $* --benchmark_out=$json --benchmark_out_format=json"
  "$KBENCH_BIN" "$@" --benchmark_out="$json" --benchmark_out_format=json >"$(scn_log "$json")" 2>&1
}

# scn_kbench JSON [kbench args...]: scn_run, and the scenario ends if it fails.
scn_kbench() {
  if ! scn_run "$@"; then
    tail -n 15 "$(scn_log "$1")" >&2
    die 1 "kbench failed (full output: $(scn_log "$1"))"
  fi
}

# scn_require_brokers BOOTSTRAP N: refuse (exit 2) before anything runs when the cluster has
# fewer than N brokers, counted in the run context of a trivial kbench run (it connects and
# counts before running anything).
scn_require_brokers() {
  local json="$OUT/logs/probe-$$.json" have
  if ! KBENCH_FIXED_ITERATIONS=1 "$KBENCH_BIN" --bootstrap="$1" \
    --produce 'acks=1,record_bytes=10,partitions=1' --records-per-iteration=10 \
    --benchmark_filter='^Produce/' --benchmark_out="$json" --benchmark_out_format=json \
    >"$OUT/logs/probe.log" 2>&1; then
    tail -n 5 "$OUT/logs/probe.log" >&2
    die 2 "cannot reach a Kafka cluster at $1 (log: $OUT/logs/probe.log)"
  fi
  have="$(scn_py context "$json" broker_count)" || die 1 "the probe run's context has no broker_count"
  rm -f "$json"
  if ((have < $2)); then
    die 2 "$SCN_NAME needs a cluster of at least $2 brokers, but $1 has $have; run without --bootstrap to start a $2-broker cluster here"
  fi
  info "cluster at $1 has $have broker(s)"
}

scn_py() { "$SCN_PY" -m kbench.scenario "$@"; }

# scn_report [options of report.py]: the scenario's own report.py writes report.md and the
# charts from $OUT, with the scale, the wall time and the common flags filled in.
scn_report() {
  "$SCN_PY" "$SCN_DIR/report.py" "$OUT" --scale "$SCALE" "${TINY_ARG[@]}" \
    --wall-seconds "$(scn_elapsed)" "$@" || die 1 "writing the report failed"
  info "report: $OUT/report.md"
}

# Wall-clock seconds since the scenario began, for the report.
SCN_T0=$SECONDS
scn_elapsed() { echo $((SECONDS - SCN_T0)); }
