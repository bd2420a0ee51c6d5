# shellcheck shell=bash
# tests/lib/cli_lib.sh — the messages and usage errors of the bash test tools that source
# it (tests/golden/generate, tests/profile/plant_lz4.sh, tests/detector/*.sh), as
# scripts/kbench/cli.py words them for the commands: "PROG: error: MSG", bad usage exit 2.
# Set PROG first to name the messages (default: $0's name).

: "${PROG:=$(basename "$0")}"

info() { printf '%s: %s\n' "$PROG" "$*" >&2; }

die() { printf '%s: error: %s\n' "$PROG" "${*:2}" >&2; exit "$1"; }

usage_error() { printf "%s: error: %s\nRun '%s --help' for usage.\n" "$PROG" "$*" "$0" >&2; exit 2; }

need_value() { [[ $# -ge 2 && -n $2 ]] || usage_error "option $1 needs a value"; }

# check_out_dir OPTION PATH: PATH can be written as a folder, else exit 2, before the work.
# Nothing is created: a probe file is written and removed in the nearest folder that exists,
# which also catches what a permission test cannot see as root (read-only mounts, /proc).
check_out_dir() {
  local option=$1 path=$2 dir=$2 probe
  [[ -n $path ]] || die 2 "$option needs a folder"
  [[ ! -e $path || -d $path ]] || die 2 "$option $path: is a file; give a folder"
  while [[ ! -e $dir && ! -L $dir ]]; do dir=$(dirname "$dir"); done
  [[ -d $dir ]] || die 2 "$option $path: $dir is a file, not a folder"
  probe=$(mktemp -p "$dir" .kbench-write-test.XXXXXX 2>/dev/null) || die 2 "$option $path: cannot write in $dir"
  rm -f "$probe"
}
