# shellcheck shell=bash
# scripts/lib/cli_lib.sh — messages and usage errors shared by every kbench bash script, so
# that each says what went wrong the same way and bad usage always exits 2.
#
#   PROG=name                     # optional: the name messages start with (default: $0's)
#   source "$ROOT/scripts/lib/cli_lib.sh"
#   info MESSAGE...               # "PROG: MESSAGE" on stderr
#   die STATUS MESSAGE...         # "PROG: error: MESSAGE" on stderr, exit STATUS
#                                 # (1 a run failed, 2 bad usage or a missing prerequisite)
#   usage_error MESSAGE...        # die 2, plus where the usage is: "Run 'scripts/x --help'"
#   need_value "$@"               # in an option loop: $1 must be followed by a value
#   is_uint VALUE                 # true for a non-negative decimal integer
#   regex_escape TEXT             # TEXT with extended-regex metacharacters escaped
#   live_rows MAX                 # stdin: benchmark names; stdout: the first MAX that reach
#                                 # a cluster (Produce, Consume, EndToEnd)
#   exact_filter                  # stdin: benchmark names; stdout: a --benchmark_filter
#                                 # that selects exactly those
# Sourced, never executed.

: "${PROG:=$(basename "$0")}"
# How a user runs this script ("scripts/kafka"), for the pointer to --help.
CLI_COMMAND="$(realpath --relative-to="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)" "$0" 2>/dev/null || echo "$0")"
[[ $CLI_COMMAND == ../* ]] && CLI_COMMAND=$0

info() { printf '%s: %s\n' "$PROG" "$*" >&2; }

die() {
  local status=$1
  shift
  printf '%s: error: %s\n' "$PROG" "$*" >&2
  exit "$status"
}

usage_error() {
  printf '%s: error: %s\n' "$PROG" "$*" >&2
  printf "Run '%s --help' for usage.\n" "$CLI_COMMAND" >&2
  exit 2
}

need_value() { [[ $# -ge 2 && -n $2 ]] || usage_error "option $1 needs a value"; }

is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }

regex_escape() { printf '%s' "$1" | sed 's/[][\.*^$+?(){}|]/\\&/g'; }

# The rows a cluster warm-up runs (scripts/bench, scripts/bench-commits).
live_rows() { grep -E '^(Produce|Consume|EndToEnd)/' | head -n "$1" || true; }

exact_filter() {
  local name filter=""
  while IFS= read -r name; do
    [[ -n $name ]] && filter+="${filter:+|}^$(regex_escape "$name")\$"
  done
  printf '%s' "$filter"
}
