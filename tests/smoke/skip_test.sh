#!/usr/bin/env bash
# A test that cannot run is reported as skipped, never as passed: a script test registered
# by kbench_add_script_test that exits 77 is "Skipped" in ctest and named by
# scripts/kbench/ctest_skips.py (what scripts/test fails on under CI=true); a unittest suite
# run by tests/scripts/unittest_runner.py exits 77 when a case skipped and none failed, 1 on
# a failure or when nothing ran, 0 when every case passed.
# `check && ok ... || not_ok ...` is intended: ok never fails.
# shellcheck disable=SC2015
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/kbench-skip-test.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok   - $*"; }
not_ok() { failed=$((failed + 1)); echo "FAIL - $*"; }

# --- ctest, through the project's own helper ----------------------------------------------
mkdir -p "$WORK/proj"
printf '#!/bin/sh\necho "cannot run here; skipped"\nexit 77\n' >"$WORK/proj/skips.sh"
printf '#!/bin/sh\nexit 0\n' >"$WORK/proj/passes.sh"
printf '#!/bin/sh\nexit 1\n' >"$WORK/proj/fails.sh"
chmod +x "$WORK/proj/"*.sh
cat >"$WORK/proj/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.20)
project(skip_probe NONE)
list(APPEND CMAKE_MODULE_PATH "$ROOT/cmake")
include(KbenchHelpers)
enable_testing()
add_executable(kbench IMPORTED)
set_target_properties(kbench PROPERTIES IMPORTED_LOCATION /bin/true)
kbench_add_script_test(probe_skips COMMAND $WORK/proj/skips.sh TIMEOUT 30)
kbench_add_script_test(probe_passes COMMAND $WORK/proj/passes.sh TIMEOUT 30)
kbench_add_script_test(probe_fails COMMAND $WORK/proj/fails.sh TIMEOUT 30)
CMAKE
if cmake -S "$WORK/proj" -B "$WORK/b" >"$WORK/cmake.out" 2>&1; then
  rc=0
  ctest --test-dir "$WORK/b" --output-junit "$WORK/j.xml" >"$WORK/ctest.out" 2>&1 || rc=$?
  grep -Eq 'probe_skips .*Skipped' "$WORK/ctest.out" && ok "exit 77 is Skipped in ctest" ||
    not_ok "exit 77 is not Skipped: $(grep probe_skips "$WORK/ctest.out")"
  grep -Eq 'probe_passes .*Passed' "$WORK/ctest.out" && ok "exit 0 is Passed" || not_ok "exit 0: $(cat "$WORK/ctest.out")"
  grep -Eq 'probe_fails .*Failed' "$WORK/ctest.out" && ((rc != 0)) && ok "exit 1 is Failed, ctest exit $rc" ||
    not_ok "exit 1: ctest exit $rc: $(grep probe_fails "$WORK/ctest.out")"
  skips="$("$ROOT/scripts/lib/python" -m kbench.ctest_skips "$WORK/j.xml" 2>&1)" || true
  [[ $skips == "probe_skips: SKIP_RETURN_CODE=77" ]] && ok "ctest_skips.py names the skipped test, only it" ||
    not_ok "ctest_skips.py printed '$skips'"
else
  not_ok "configure a project with cmake/KbenchHelpers.cmake: $(tail -5 "$WORK/cmake.out")"
fi

# --- unittest suites --------------------------------------------------------------------------
# suite NAME BODY: a directory holding one test module whose single case has BODY.
suite() {
  mkdir -p "$WORK/$1"
  printf 'import unittest\n\n\nclass T(unittest.TestCase):\n    def test_case(self):\n        %s\n' "$2" \
    >"$WORK/$1/test_probe.py"
}
suite pass "self.assertTrue(True)"
suite skip 'self.skipTest("no such tool")'
suite fail "self.fail('wrong')"
mkdir -p "$WORK/empty"
for c in pass:0 skip:77 fail:1 empty:1; do
  name=${c%%:*} want=${c#*:} rc=0
  "$ROOT/scripts/lib/python" "$ROOT/tests/scripts/unittest_runner.py" "$WORK/$name" >"$WORK/$name.out" 2>&1 || rc=$?
  ((rc == want)) && ok "unittest suite that does '$name': exit $rc" ||
    not_ok "unittest suite that does '$name': exit $rc, want $want: $(tail -3 "$WORK/$name.out")"
done
grep -q '^skipped: test_probe.T.test_case: no such tool$' "$WORK/skip.out" &&
  ok "the runner names the skipped case and why" || not_ok "no 'skipped:' line: $(cat "$WORK/skip.out")"

echo "$passed passed, $failed failed"
((failed == 0))
