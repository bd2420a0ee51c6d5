"""Names the tests a ctest run skipped, from its --output-junit file: one line per skipped
test, "NAME: REASON", and under it the "skipped: ..." lines the test printed (a unittest
suite names each skipped case that way). Prints nothing when nothing was skipped.
Exit 0, or 2 when the file cannot be read. scripts/test decides what a skip means."""

import sys
import xml.etree.ElementTree as ET

from kbench.cli import die


def skipped_tests(path):
    """[(name, reason, [skipped-case lines])] for every test ctest did not run."""
    out = []
    for case in ET.parse(path).getroot().iter("testcase"):
        skip = case.find("skipped")
        if skip is None:
            continue
        text = case.findtext("system-out") or ""
        cases = [ln.strip() for ln in text.splitlines() if ln.startswith(("skipped:", "skip -"))]
        out.append((case.get("name"), skip.get("message", ""), cases))
    return out


def main(argv):
    if len(argv) != 2:
        die("usage: python -m kbench.ctest_skips JUNIT_XML")
    try:
        skips = skipped_tests(argv[1])
    except (OSError, ET.ParseError) as e:
        die(f"{argv[1]}: {e}")
    for name, reason, cases in skips:
        print(f"{name}: {reason}")
        for c in cases:
            print(f"    {c}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
