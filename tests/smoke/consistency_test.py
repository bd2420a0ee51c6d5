"""Facts written in two places must agree:
- every line of benchmarks/profiles.conf selects at least one benchmark of build/kbench
  (run with the options scripts/bench passes for that profile), so a renamed or removed
  benchmark cannot silently empty a slice of a profile;
- the counters of fixtures/counters.h and the metric table of fixtures/counters.cc (which
  kbench --describe=json prints and kbench.results.METRICS reads) name the same things:
  every counter has a row, and every row names a counter or a field Google Benchmark (or a
  script) writes itself;
(docs/families.md's key tables are generated from kbench --describe=json: tests/scripts/
test_facts.py keeps them current.)"""

import os
import re
import shutil
import subprocess
import tempfile
import unittest

from kbench import results as kr

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BIN = os.environ.get("KBENCH_BIN", os.path.join(ROOT, "build", "kbench"))


# What scripts/bench adds to the kbench command line per profile (its window_args).
PROFILE_ARGS = {"full": ["--window-seconds=30"]}
# Metrics that are not kbench counters: Google Benchmark's own fields (times, and the rates
# SetItemsProcessed/SetBytesProcessed make), and scripts/bench-commits' callgrind count.
NOT_COUNTERS = {"cpu_time", "real_time", "items_per_second", "bytes_per_second", "instructions"}


PROFILES = os.path.join(ROOT, "benchmarks", "profiles.conf")
COUNTERS = os.path.join(ROOT, "fixtures", "counters.h")


def profile_lines(path=PROFILES):
    """[(line number, profile, filter)] of the non-comment lines."""
    out = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.strip() and not line.lstrip().startswith("#"):
                fields = line.split()
                out.append((n, fields[0], fields[1] if len(fields) > 1 else ""))
    return out


def counter_names(path=COUNTERS):
    with open(path, encoding="utf-8") as f:
        return re.findall(r'inline constexpr const char\* k\w+ = "([^"]+)";', f.read())


def disagreements(counters, metrics):
    """Messages for each counter without a direction and each direction naming nothing."""
    out = ["counter %s (fixtures/counters.h) has no row in MetricTable() (counters.cc)" % c
           for c in counters if c not in metrics]
    out += ["METRICS names %s, which is neither a counter of fixtures/counters.h nor one of %s"
            % (m, ", ".join(sorted(NOT_COUNTERS)))
            for m in metrics if m not in counters and m not in NOT_COUNTERS]
    return out


class Profiles(unittest.TestCase):
    def test_every_line_matches_a_benchmark(self):
        lines = profile_lines()
        self.assertTrue({"quick", "full"} <= {p for _, p, _ in lines})
        env = {k: v for k, v in os.environ.items() if k != "KBENCH_BOOTSTRAP"}
        for n, profile, regex in lines:
            with self.subTest(line=n, profile=profile):
                self.assertTrue(regex, "line %d has no filter" % n)
                proc = subprocess.run([BIN, "--benchmark_list_tests", "--benchmark_filter=" + regex,
                                       *PROFILE_ARGS.get(profile, [])],
                                      capture_output=True, text=True, timeout=60, env=env)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                self.assertTrue(proc.stdout.strip(), "benchmarks/profiles.conf:%d (%s) matches no "
                                "benchmark: %s" % (n, profile, regex))


class CountersAndDirections(unittest.TestCase):
    def test_they_agree(self):
        counters = counter_names()
        self.assertGreater(len(counters), 20, "the counters.h pattern found too few names")
        self.assertEqual(disagreements(counters, kr.METRICS), [])

    def test_a_mismatch_is_reported(self):
        # The check itself: a counter without a direction, a direction without a counter.
        metrics = dict(kr.METRICS, no_such_counter=(0, ""))
        found = disagreements(counter_names() + ["new_counter"], metrics)
        self.assertEqual(len(found), 2, found)


# The product speaks of the product: results stay out of the tree (only results/README.md is
# tracked), and no tracked text points at a session's notes or at an issue tracker's numbers.
SESSION_TEXT = re.compile(r"results/evidence|\b[Ss]essions? [0-9]|(?<!#)\b[Ii]ssues? [0-9]")


def tracked_files():
    proc = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], capture_output=True, check=True)
    return [f for f in proc.stdout.decode().split("\0") if f]


def session_text(files):
    """[(path, line number, line)] of tracked text that names sessions, issues or evidence."""
    out = []
    for rel in files:
        try:
            with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
                lines = f.read().splitlines()
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue
        out += [(rel, n, line.strip()) for n, line in enumerate(lines, 1)
                if SESSION_TEXT.search(line)]
    return out


class ProductText(unittest.TestCase):
    def test_no_results_are_tracked(self):
        self.assertEqual([f for f in tracked_files() if f.startswith("results/")],
                         ["results/README.md"])

    def test_no_text_cites_sessions_issues_or_evidence(self):
        # This file holds the pattern itself.
        files = [f for f in tracked_files() if f != "tests/smoke/consistency_test.py"]
        self.assertEqual(session_text(files), [])

    def test_the_check_sees_each_kind(self):
        tmp = tempfile.mkdtemp(prefix="kbench-text-test.")
        try:
            cases = ["see results/evidence/x", "as session 5 found", "(issue 10)",
                     "librdkafka issue #1700"]
            for i, text in enumerate(cases):
                with open(os.path.join(tmp, "f%d.md" % i), "w", encoding="utf-8") as f:
                    f.write("ok\n" + text + "\n")
            found = session_text([os.path.join(tmp, "f%d.md" % i) for i in range(len(cases))])
            self.assertEqual([n for _, n, _ in found], [2, 2, 2], found)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
