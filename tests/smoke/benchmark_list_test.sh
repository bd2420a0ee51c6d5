#!/usr/bin/env bash
# Diffs `kbench --benchmark_list_tests` against the committed list. Benchmark names are the
# keys of the results history, so renaming one must be a deliberate change:
#   build/kbench --benchmark_list_tests > tests/benchmark_list.txt
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="${KBENCH_BIN:-$here/../../build/kbench}"
expected="$here/../benchmark_list.txt"
actual="$(mktemp)"
trap 'rm -f "$actual"' EXIT
# The list must not depend on the environment (a live cluster changes the target, not names).
env -u KBENCH_BOOTSTRAP "$bin" --benchmark_list_tests > "$actual"
if ! diff -u "$expected" "$actual" > "$actual.diff"; then
  echo "benchmark names changed (first 40 lines of the diff):" >&2
  head -40 "$actual.diff" >&2
  echo "If the change is intended, regenerate: $bin --benchmark_list_tests > tests/benchmark_list.txt" >&2
  rm -f "$actual.diff"
  exit 1
fi
rm -f "$actual.diff"
echo "benchmark list matches: $(wc -l < "$expected") names"
