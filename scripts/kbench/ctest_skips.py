"""Names the tests a ctest run skipped, from its --output-junit file: "NAME: REASON" each,
under it the "skipped: ..." lines the test printed. Exit 0, or 2 when the file cannot be read."""

import sys
import xml.etree.ElementTree as ET

from kbench import cli


def skipped_tests(path):
    """[(name, reason, [skipped-case lines])] for every test ctest did not run."""
    return [(case.get("name"), skip.get("message", ""),
             [ln.strip() for ln in (case.findtext("system-out") or "").splitlines()
              if ln.startswith(("skipped:", "skip -"))])
            for case in ET.parse(path).getroot().iter("testcase") if (skip := case.find("skipped")) is not None]


def main(argv):
    ap = cli.ArgumentParser(prog="kbench.ctest_skips", description=__doc__)
    ap.add_argument("junit_xml", help="ctest's --output-junit file")
    path = ap.parse_args(argv).junit_xml
    try:
        skips = skipped_tests(path)
    except (OSError, ET.ParseError) as e:
        cli.die(f"{path}: {e}")
    for name, reason, cases in skips:
        print(f"{name}: {reason}")
        for c in cases:
            print(f"    {c}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
