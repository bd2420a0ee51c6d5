"""Runs a unittest discovery for ctest and makes a skip visible: every skipped test is named,
and the exit status is 1 on any failure or error (or when nothing ran), 77 (the project's
ctest SKIP_RETURN_CODE) when something was skipped and nothing failed, 0 otherwise.

Usage: python3 unittest_runner.py DIR [PATTERN]   (PATTERN defaults to test*.py)
"""

import sys
import unittest

SKIP_RETURN_CODE = 77  # the same code cmake/KbenchHelpers.cmake registers with ctest


def main(argv):
    if len(argv) not in (2, 3):
        print("unittest_runner.py: error: usage: unittest_runner.py DIR [PATTERN]", file=sys.stderr)
        return 2
    start_dir = argv[1]
    pattern = argv[2] if len(argv) == 3 else "test*.py"
    suite = unittest.defaultTestLoader.discover(start_dir, pattern=pattern)
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    for test, reason in result.skipped:
        print(f"skipped: {test.id()}: {reason}", file=sys.stderr)
    failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    print(f"unittest_runner: {result.testsRun} run, {failed} failed, "
          f"{len(result.skipped)} skipped", file=sys.stderr)
    if failed or result.testsRun == 0:
        return 1
    return SKIP_RETURN_CODE if result.skipped else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
