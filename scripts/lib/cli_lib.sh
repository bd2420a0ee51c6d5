# shellcheck shell=bash
# scripts/lib/cli_lib.sh — messages and usage errors shared by every kbench bash script, so
# that each says what went wrong the same way and bad usage always exits 2. Sourced, never
# executed; set PROG first to name the messages (default: $0's name).
#
#   info MSG / die STATUS MSG      "PROG: MSG" / "PROG: error: MSG", then exit STATUS
#                                  (1 a run failed, 2 bad usage or a missing prerequisite)
#   usage_error MSG                die 2, plus "Run 'scripts/x --help' for usage."
#   need_value "$@"                in an option loop: $1 must be followed by a value
#   is_uint V                      a non-negative integer?
#   check_out_dir OPTION PATH      PATH can be written as a folder, else die 2
#   dry_run_exit                   with KBENCH_DRY_RUN=1: say so and exit 0, before anything
#                                  is built, started or run

: "${PROG:=$(basename "$0")}"
# How a user runs this script ("scripts/kafka"), for the pointer to --help.
CLI_COMMAND="$(realpath --relative-to="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)" "$0" 2>/dev/null || echo "$0")"
[[ $CLI_COMMAND == ../* ]] && CLI_COMMAND=$0

info() { printf '%s: %s\n' "$PROG" "$*" >&2; }

die() { printf '%s: error: %s\n' "$PROG" "${*:2}" >&2; exit "$1"; }

usage_error() {
  printf "%s: error: %s\nRun '%s --help' for usage.\n" "$PROG" "$*" "$CLI_COMMAND" >&2
  exit 2
}

need_value() { [[ $# -ge 2 && -n $2 ]] || usage_error "option $1 needs a value"; }

is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }

# Output paths are checked before the work, so that a long run never ends in "cannot
# write". Nothing is created here: the check writes (and removes) a probe file in the
# nearest folder that exists, which also catches what a permission test cannot see as
# root (read-only mounts, /proc).
out_probe() {
  local option=$1 path=$2 dir=$3 probe
  while [[ ! -e $dir && ! -L $dir ]]; do dir=$(dirname "$dir"); done
  [[ -d $dir ]] || die 2 "$option $path: $dir is a file, not a folder"
  probe=$(mktemp -p "$dir" .kbench-write-test.XXXXXX 2>/dev/null) ||
    die 2 "$option $path: cannot write in $dir"
  rm -f "$probe"
}

check_out_dir() {
  local option=$1 path=$2
  [[ -n $path ]] || die 2 "$option needs a folder"
  [[ ! -e $path || -d $path ]] || die 2 "$option $path: is a file; give a folder"
  out_probe "$option" "$path" "$path"
}

# KBENCH_DRY_RUN=1 (tests/scripts/test_docs_commands.py runs the documented commands so):
# the command line is parsed and checked as for a real run, then nothing happens.
dry_run_exit() {
  [[ ${KBENCH_DRY_RUN:-} == 1 ]] || return 0
  info "dry run: arguments checked; nothing built, started or run"
  exit 0
}
