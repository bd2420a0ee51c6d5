#!/usr/bin/env bash
# clang-format is enforced: every C/C++ file of the tree is formatted (scripts/lint
# --format), and the check does fail on a misformatted file (a planted one, formatted by
# the same .clang-format, in a scratch directory).
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
failures=0

if ! "$root/scripts/lint" --format; then
  echo "FAIL: scripts/lint --format found misformatted files (fix: clang-format -i FILE)"
  failures=$((failures + 1))
fi

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
cp "$root/.clang-format" "$scratch/"
printf 'int  main( ) {return 0 ;}\n' >"$scratch/planted.cc"
if "$root/scripts/lint" --format "$scratch/planted.cc" 2>"$scratch/err"; then
  echo "FAIL: scripts/lint --format accepted a misformatted file"
  failures=$((failures + 1))
elif ! grep -q "planted.cc" "$scratch/err"; then
  echo "FAIL: scripts/lint --format did not name the misformatted file: $(cat "$scratch/err")"
  failures=$((failures + 1))
fi

if ((failures)); then
  echo "format_test: $failures failure(s)"
  exit 1
fi
echo "format_test: the tree is formatted and a misformatted file is caught"
