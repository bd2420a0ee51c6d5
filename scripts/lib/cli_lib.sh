# shellcheck shell=bash
# scripts/lib/cli_lib.sh — messages and usage errors shared by every kbench bash script, so
# that each says what went wrong the same way and bad usage always exits 2. Sourced, never
# executed; set PROG first to name the messages (default: $0's name).
#
#   info MSG / die STATUS MSG      "PROG: MSG" / "PROG: error: MSG", then exit STATUS
#                                  (1 a run failed, 2 bad usage or a missing prerequisite)
#   usage_error MSG                die 2, plus "Run 'scripts/x --help' for usage."
#   need_value "$@"                in an option loop: $1 must be followed by a value
#   is_uint V, regex_escape TEXT   a non-negative integer? / TEXT as a literal ERE
#   cluster_regex BIN...           regex of rows needing a cluster, from the first BIN
#                                  that can say (kbench --describe=json)
#   live_rows MAX BIN...           stdin: row names; stdout: the first MAX needing a cluster
#   exact_filter                   stdin: row names; stdout: a filter selecting exactly those
#   check_out_dir / check_out_file OPTION PATH
#                                  PATH can be written as a folder / a file, else die 2
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

regex_escape() { printf '%s' "$1" | sed 's/[][\.*^$+?(){}|]/\\&/g'; }

# Which families need a cluster is kbench's to say (its --describe=json); a kbench older
# than --describe cannot, so the next BIN is asked (bench-commits: the other side's build).
cluster_regex() {
  local bin re
  for bin in "$@"; do
    [[ -x $bin ]] || continue
    re=$(KBENCH_BIN=$bin "$(dirname "${BASH_SOURCE[0]}")/python" -m kbench.facts cluster-regex 2>/dev/null) && { printf '%s' "$re"; return 0; }
  done
  die 1 "none of $* says which families need a cluster (kbench --describe=json)"
}

# The rows a cluster warm-up runs (scripts/bench, scripts/bench-commits).
live_rows() {
  local max=$1 re
  shift
  re=$(cluster_regex "$@") || exit 1
  grep -E "$re" | head -n "$max" || true
}

exact_filter() {
  local name filter=""
  while IFS= read -r name; do
    [[ -n $name ]] && filter+="${filter:+|}^$(regex_escape "$name")\$"
  done
  printf '%s' "$filter"
}

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

check_out_file() {
  local option=$1 path=$2
  [[ -n $path ]] || die 2 "$option needs a file name"
  [[ ! -d $path ]] || die 2 "$option $path: is a folder; give a file name"
  if [[ -e $path ]]; then
    { : >>"$path"; } 2>/dev/null || die 2 "$option $path: cannot write it"
  else
    out_probe "$option" "$path" "$(dirname "$path")"
  fi
}

# KBENCH_DRY_RUN=1 (tests/scripts/test_docs_commands.py runs the documented commands so):
# the command line is parsed and checked as for a real run, then nothing happens.
dry_run_exit() {
  [[ ${KBENCH_DRY_RUN:-} == 1 ]] || return 0
  info "dry run: arguments checked; nothing built, started or run"
  exit 0
}
