"""Tests of scripts/bisect's search on small fake histories, with a stub oracle
(fake_oracle.py through KBENCH_BISECT_ORACLE) instead of scripts/bench-commits, so that no
build or measurement runs: commits of a librdkafka-like bare repository (fake_librdkafka.py),
Apache Kafka releases, kbench's own commits; both directions; inconclusive and failed
steps; bad input. tests/scripts/history_tests.py runs the real oracle on a fake kbench."""

import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest

import fake_librdkafka as fake

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BISECT = os.path.join(ROOT, "scripts", "bisect")
ORACLE = os.path.join(HERE, "fake_oracle.py")

# The fake history: commit i (1..16) after OLD (commit 0) has this speed. Commit 6
# regresses by 20 %, commit 12 fixes it.
SPEEDS = [100] * 6 + [80] * 6 + [100] * 5
FIRST_BAD, FIRST_FIX = 6, 12


@unittest.skipUnless(shutil.which("git"), "needs git")
class Bisect(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kbench-bisect-test.")
        self.addCleanup(shutil.rmtree, self.tmp)
        self.log = os.path.join(self.tmp, "oracle.log")
        self.env = dict(os.environ, KBENCH_BISECT_ORACLE=ORACLE, FAKE_ORACLE_LOG=self.log,
                        KBENCH_CACHE=os.path.join(self.tmp, "cache"))
        # kbench itself: a repository with the benchmark list (the mode comes from it).
        self.kbench = os.path.join(self.tmp, "kbench")
        os.makedirs(os.path.join(self.kbench, "tests"))
        with open(os.path.join(self.kbench, "tests", "benchmark_list.txt"), "w") as f:
            f.write("Produce/send/acks:1/codec:none/record_bytes:100/real_time\n")
        with open(os.path.join(self.kbench, "speed"), "w") as f:
            f.write("100\n")
        fake.git(self.kbench, "init", "-q")
        fake.git(self.kbench, "add", "-A")
        fake.git(self.kbench, "commit", "-qm", "kbench")

    def librdkafka_history(self, flaky=None):
        """A bare mirror of a librdkafka-like repository of 17 commits; flaky: {i: text}."""
        work = os.path.join(self.tmp, "rdk")
        shas = [fake.make_repo(work, extra={"speed": "%d\n" % SPEEDS[0]})]
        for i in range(1, len(SPEEDS)):
            extra = {"speed": "%d\n" % SPEEDS[i]}
            if flaky and i in flaky:
                extra["flaky"] = flaky[i]
            elif os.path.exists(os.path.join(work, "flaky")):
                os.unlink(os.path.join(work, "flaky"))
            shas.append(fake.commit_change(work, "commit %d" % i, extra=extra))
        bare = os.path.join(self.tmp, "rdk.git")
        subprocess.run(["git", "clone", "-q", "--mirror", work, bare], check=True)
        shutil.rmtree(work)
        return bare, shas

    def bisect(self, *args):
        return subprocess.run([BISECT, "--repo", self.kbench, "--out-dir",
                               os.path.join(self.tmp, "out")] + list(args),
                              capture_output=True, text=True, env=self.env, timeout=120,
                              stdin=subprocess.DEVNULL)

    def calls(self):
        if not os.path.exists(self.log):
            return []
        with open(self.log) as f:
            return f.read().splitlines()

    def steps(self):
        with open(os.path.join(self.tmp, "out", "steps.json")) as f:
            return json.load(f)

    def test_first_bad_librdkafka_commit_of_a_bare_repository(self):
        bare, shas = self.librdkafka_history()
        p = self.bisect(shas[0], shas[10], "--librdkafka-tree", bare, "--filter", "^Produce/")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(p.stdout.splitlines()[-1],
                         "first bad commit: %s commit %d" % (shas[FIRST_BAD], FIRST_BAD))
        self.assertIn("mode: timing", p.stderr)
        calls = self.calls()
        # NEW first, then a binary search over 9 candidates: at most 4 more steps.
        self.assertLessEqual(len(calls), 5)
        self.assertIn("--librdkafka-a tree:%s@%s --librdkafka-b tree:%s@%s"
                      % (os.path.realpath(bare), shas[0], os.path.realpath(bare), shas[10]),
                      calls[0])
        kbench_sha = fake.git(self.kbench, "rev-parse", "HEAD")
        self.assertTrue(calls[0].startswith("%s %s " % (kbench_sha, kbench_sha)), calls[0])
        # Every step's evidence: command, exit status, console, oracle output directory.
        doc = self.steps()
        self.assertEqual((doc["direction"], doc["walk"], doc["candidates"]),
                         ("regression", "librdkafka commits", 10))
        self.assertEqual(len(doc["steps"]), len(calls))
        for step in doc["steps"]:
            self.assertIn(step["verdict"], ("bad", "good"))
            self.assertEqual(step["verdict"] == "bad",
                             shas.index(step["candidate"]) >= FIRST_BAD, step)
            stem = step["out_dir"]
            for ext in (".cmd", ".rc", ".txt"):
                self.assertTrue(os.path.isfile(stem + ext), stem + ext)
            self.assertTrue(os.path.isfile(os.path.join(stem, "verdict.json")))
            with open(stem + ".rc") as f:
                self.assertEqual(int(f.read()), step["exit"])
        self.assertEqual(doc["steps"][0]["change"], "-20.000% (items_per_second)")
        with open(os.path.join(self.tmp, "out", "summary.txt")) as f:
            summary = f.read()
        self.assertIn("first bad commit: %s commit %d" % (shas[FIRST_BAD], FIRST_BAD), summary)
        # Progress on the console.
        self.assertRegex(p.stderr, r"bisect: step 2: \w{12} commit \d+ \(9 candidate\(s\) left")

    def test_first_fixing_librdkafka_commit(self):
        bare, shas = self.librdkafka_history()
        p = self.bisect(shas[FIRST_BAD], shas[16], "--improvement", "--librdkafka-tree", bare,
                        "--filter", "^Produce/")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(p.stdout.splitlines()[-1],
                         "first fixing commit: %s commit %d" % (shas[FIRST_FIX], FIRST_FIX))
        # Sides swapped: the candidate is the base, OLD the new side.
        tree = os.path.realpath(bare)
        self.assertIn("--librdkafka-a tree:%s@%s --librdkafka-b tree:%s@%s"
                      % (tree, shas[16], tree, shas[FIRST_BAD]), self.calls()[0])
        doc = self.steps()
        self.assertEqual(doc["direction"], "improvement")
        self.assertEqual({s["verdict"] for s in doc["steps"]}, {"fixed", "not fixed"})
        # The change is the candidate's against OLD: +25 %, not OLD's -20 % against it.
        self.assertEqual(doc["steps"][0]["change"], "+25.000% (items_per_second)")

    def test_nothing_to_bisect(self):
        bare, shas = self.librdkafka_history()
        p = self.bisect(shas[0], shas[5], "--librdkafka-tree", bare, "--filter", "^Produce/")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("shows no regression against OLD", p.stderr)
        p = self.bisect(shas[0], shas[10], "--improvement", "--librdkafka-tree", bare,
                        "--filter", "^Produce/")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("shows no fix against OLD", p.stderr)

    def test_an_inconclusive_step_is_measured_again_with_more_rounds(self):
        # The first midpoint (commit 5) needs 16 rounds; commit 7 is never judged: skipped,
        # its neighbour taken instead; the answer is still commit 6.
        bare, shas = self.librdkafka_history(flaky={5: "inconclusive 16\n",
                                                    7: "inconclusive never\n"})
        p = self.bisect(shas[0], shas[10], "--librdkafka-tree", bare, "--filter", "^Produce/")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(p.stdout.splitlines()[-1],
                         "first bad commit: %s commit %d" % (shas[FIRST_BAD], FIRST_BAD))
        steps = self.steps()["steps"]
        by_commit = {}
        for s in steps:
            by_commit.setdefault(shas.index(s["candidate"]), []).append(s)
        self.assertEqual([(s["verdict"], s["runs"]) for s in by_commit[5]],
                         [("inconclusive", None), ("good", 16)])
        self.assertIn("--runs 16", " ".join(by_commit[5][1]["command"]))
        self.assertEqual([s["verdict"] for s in by_commit[7]], ["inconclusive", "inconclusive"])
        self.assertIn("measuring %s again with 16 rounds" % shas[5][:12], p.stderr)

    def test_an_inconclusive_step_is_placed_by_its_interval(self):
        # Every candidate inconclusive, each with a narrow interval around its change (0 %
        # or -20 %, NEW -20 %): each interval lies wholly on one side of the midpoint
        # between OLD and NEW, so each step is placed at once, without more rounds.
        bare, shas = self.librdkafka_history(flaky={i: "inconclusive narrow\n"
                                                    for i in range(1, 10)})
        p = self.bisect(shas[0], shas[10], "--librdkafka-tree", bare, "--filter", "^Produce/")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(p.stdout.splitlines()[-1],
                         "first bad commit: %s commit %d" % (shas[FIRST_BAD], FIRST_BAD))
        steps = self.steps()["steps"]
        self.assertTrue(all(s["runs"] is None for s in steps), steps)
        for s in steps[1:]:
            self.assertEqual(s["exit"], 3)
            self.assertEqual(s["verdict"], "bad" if shas.index(s["candidate"]) >= FIRST_BAD
                             else "good")
            self.assertIn("interval", s["placed_by"])
        self.assertIn("nearer NEW", p.stderr)
        self.assertIn("nearer OLD", p.stderr)
        with open(os.path.join(self.tmp, "out", "summary.txt")) as f:
            self.assertIn("* inconclusive against OLD, placed by its intervals", f.read())

    def test_skipped_commits_next_to_the_answer_are_named(self):
        # The first bad commit is never judged, and a failed build is skipped at once:
        # the answer is one of those, exit 3.
        bare, shas = self.librdkafka_history(flaky={FIRST_BAD: "inconclusive never\n",
                                                    FIRST_BAD + 1: "broken\n"})
        p = self.bisect(shas[0], shas[10], "--librdkafka-tree", bare, "--filter", "^Produce/",
                        "--retries", "0")
        self.assertEqual(p.returncode, 3, p.stdout + p.stderr)
        self.assertIn("first bad commit: one of %s %s %s" % tuple(
            shas[i][:12] for i in (FIRST_BAD, FIRST_BAD + 1, FIRST_BAD + 2)), p.stdout)
        verdicts = {shas.index(s["candidate"]): s["verdict"] for s in self.steps()["steps"]}
        self.assertEqual(verdicts[FIRST_BAD], "inconclusive")
        self.assertEqual(verdicts[FIRST_BAD + 1], "not measured")

    def test_kafka_versions(self):
        versions = ["3.6.2", "3.7.2", "3.8.1", "3.9.1", "4.0.0", "4.1.0"]
        self.env["FAKE_SPEEDS"] = "3.6.2=100,3.7.2=101,3.8.1=99,3.9.1=70,4.0.0=71,4.1.0=70"
        p = self.bisect("--kafka-versions", ",".join(versions), "--filter", "^Produce/")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(p.stdout.splitlines()[-1], "first bad version: 3.9.1")
        self.assertIn("--kafka-a 3.6.2 --kafka-b 4.1.0", self.calls()[0])
        p = self.bisect("--kafka-versions", "3.9.1,4.0.0,4.1.0", "--filter", "^Produce/")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)

    def test_kbench_commits_both_directions(self):
        shas = [fake.git(self.kbench, "rev-parse", "HEAD")]
        for i in range(1, len(SPEEDS)):
            with open(os.path.join(self.kbench, "speed"), "w") as f:
                f.write("%d\n" % SPEEDS[i])
            with open(os.path.join(self.kbench, "notes"), "w") as f:
                f.write("%d\n" % i)
            fake.git(self.kbench, "add", "-A")
            fake.git(self.kbench, "commit", "-qm", "commit %d" % i)
            shas.append(fake.git(self.kbench, "rev-parse", "HEAD"))
        p = self.bisect(shas[2], shas[9], "--filter", "^Produce/")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(p.stdout.splitlines()[-1],
                         "first bad commit: %s commit %d" % (shas[FIRST_BAD], FIRST_BAD))
        self.assertTrue(self.calls()[0].startswith("%s %s " % (shas[2], shas[9])))
        p = self.bisect(shas[8], shas[15], "--filter", "^Produce/", "--improvement")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(p.stdout.splitlines()[-1],
                         "first fixing commit: %s commit %d" % (shas[FIRST_FIX], FIRST_FIX))

    def test_sigterm_lets_the_step_clean_up(self):
        bare, shas = self.librdkafka_history()
        self.env["FAKE_ORACLE_SLEEP"] = "30"
        proc = subprocess.Popen([BISECT, "--repo", self.kbench, "--out-dir",
                                 os.path.join(self.tmp, "out"), shas[0], shas[10],
                                 "--librdkafka-tree", bare, "--filter", "^Produce/"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=self.env, stdin=subprocess.DEVNULL)
        for _ in range(200):
            if self.calls():
                break
            time.sleep(0.05)
        time.sleep(0.3)
        proc.terminate()
        out, err = proc.communicate(timeout=30)
        self.assertEqual(proc.returncode, 143, out + err)
        self.assertEqual(self.calls()[-1], "cleaned up", "the step was not let finish")
        self.assertIn("interrupted after 0 step(s)", err)

    def test_bad_input_exits_2_before_any_work(self):
        bare, shas = self.librdkafka_history()
        plain = os.path.join(self.tmp, "plain")
        os.makedirs(plain)
        old = fake.make_repo(os.path.join(self.tmp, "old"), header="0x000b06ff",
                             runtime="0.11.6")
        fake.commit_change(os.path.join(self.tmp, "old"), "later", header="0x000b06ff",
                           runtime="0.11.6")
        tree = ["--librdkafka-tree", bare, "--filter", "^Produce/"]
        for args, says in (
                ([shas[0], "no-such-rev"] + tree, "'no-such-rev' is not a commit in"),
                ([shas[5], shas[2]] + tree, "is not an ancestor of NEW"),
                ([shas[3], shas[3]] + tree, "OLD and NEW are the same commit"),
                ([shas[0], shas[5], "--librdkafka-tree", plain, "--filter", "x"],
                 "is not a git repository"),
                ([old, "HEAD", "--librdkafka-tree", os.path.join(self.tmp, "old"),
                  "--filter", "x"], "older than 1.0.0"),
                ([shas[0], shas[5], "--filter", "^Produce/", "--librdkafka-tree", bare,
                  "--retries", "-1"], "--retries"),
                ([shas[0], shas[5]] + tree + ["--kafka-versions", "3.9.1,4.0.0"],
                 "one thing to walk"),
                (["--kafka-versions", "3.9.1", "--filter", "x"], "at least two releases"),
                (["--kafka-versions", "3.9.1,3.9.1", "--filter", "x"], "twice"),
                (["--kafka-versions", "3.9.1,latest", "--filter", "x"], "not a Kafka release"),
                ([shas[0], shas[5], "--librdkafka-tree", bare, "--filter", "^Nothing/"],
                 "matches --filter"),
                ([shas[0], shas[5]] + tree + ["--kbench", "no-such-rev"], "--kbench")):
            with self.subTest(args=args):
                p = self.bisect(*args)
                self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
                self.assertIn(says, p.stderr)
                self.assertRegex(p.stderr, r"(?m)^scripts/bisect: error: ")
        self.assertEqual(self.calls(), [], "bad input must not reach the oracle")


class Placement(unittest.TestCase):
    """Bisect.place: which end an inconclusive step's intervals put the candidate at."""

    @classmethod
    def setUpClass(cls):
        from kbench.commands import bisect
        cls.mod = bisect

    def place(self, rows):
        import types
        # NEW's change: p50 +4,500 % (midpoint about +578 %), p99 +540 % (about +153 %).
        me = types.SimpleNamespace(signature={("R", "p50_us"): 4500.0, ("R", "p99_us"): 540.0})
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump({"inconclusive": [{"name": "R", "metric": m, "ci_low_pct": lo,
                                         "ci_high_pct": hi} for m, lo, hi in rows]}, f)
        self.addCleanup(os.unlink, f.name)
        return self.mod.Bisect.place(me, f.name)

    def test_a_row_that_cannot_tell_does_not_block_one_that_can(self):
        # The measured shape: p50 [-30, +11] %, p99 [-84, +198] % (straddles +153 %).
        self.assertIs(self.place([("p50_us", -30.0, 11.0), ("p99_us", -84.0, 198.0)]), False)
        self.assertIs(self.place([("p50_us", 3000.0, 6000.0), ("p99_us", -84.0, 198.0)]), True)

    def test_rows_that_disagree_or_cannot_tell_place_nothing(self):
        self.assertIsNone(self.place([("p50_us", -30.0, 11.0), ("p99_us", 300.0, 900.0)]))
        self.assertIsNone(self.place([("p50_us", -30.0, 900.0), ("p99_us", -84.0, 198.0)]))
        self.assertIsNone(self.place([("p50_us", -30.0, 11.0)]))  # p99 missing


if __name__ == "__main__":
    unittest.main()


class InProcessStep(unittest.TestCase):
    """Without KBENCH_BISECT_ORACLE a step is bench_commits.run in this process, its
    console in the step's log."""

    def test_status_console_and_interruption(self):
        from unittest import mock

        from kbench.commands import bisect

        def fake_run(args):
            print("compared %s" % " ".join(args.words))
            return 1

        with tempfile.TemporaryDirectory() as tmp:
            log = os.path.join(tmp, "step.txt")
            with mock.patch.object(bisect.bench_commits, "run", side_effect=fake_run):
                self.assertEqual(bisect.run_bench_commits(["OLD", "X", "--runs", "2"], log), 1)
            with mock.patch.object(bisect.bench_commits, "run", side_effect=SystemExit(143)), \
                    self.assertRaises(bisect.Stopped) as stop:
                bisect.run_bench_commits(["OLD", "X"], log)
            self.assertEqual(stop.exception.status, 143)
            with open(log) as f:
                self.assertEqual(f.read(), "compared OLD X\n")
