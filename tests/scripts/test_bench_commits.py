"""Tests of scripts/bench-commits: argument errors, and end-to-end runs on a
throw-away git repository holding a fake kbench (tests/scripts/fake_kbench)
whose cost per iteration is set by cost.h."""

import json
import os
import shutil
import subprocess
import tempfile
import unittest

import fake_librdkafka

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BENCH_COMMITS = os.path.join(ROOT, "scripts", "bench-commits")
FAKE = os.path.join(HERE, "fake_kbench")

HAVE_TOOLS = all(shutil.which(t) for t in ("git", "cmake", "ninja", "cc"))


def git(repo, *args):
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.invalid",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.invalid")
    return subprocess.run(["git", "-C", repo] + list(args), check=True, env=env,
                          capture_output=True, text=True).stdout.strip()


class BenchCommitsCase(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="kbench-bc-test.")
        cls.repo = os.path.join(cls.tmp, "repo")
        shutil.copytree(FAKE, cls.repo)
        git(cls.repo, "init", "-q")
        git(cls.repo, "add", ".")
        git(cls.repo, "commit", "-qm", "cost 100")
        cls.c1 = git(cls.repo, "rev-parse", "HEAD")
        with open(os.path.join(cls.repo, "cost.h"), "w") as f:
            f.write("#define COST 130\n")  # 30 % more work per iteration
        git(cls.repo, "commit", "-qam", "cost 130")
        cls.c2 = git(cls.repo, "rev-parse", "HEAD")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_bc(self, *args, timeout=120, env=None):
        return subprocess.run([BENCH_COMMITS] + list(args), capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL,
                              env=dict(os.environ, **(env or {})))

    def assert_usage_error(self, args, needle):
        proc = self.run_bc(*args)
        self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
        self.assertIn(needle, proc.stderr)

    def worktrees(self):
        return git(self.repo, "worktree", "list").splitlines()


class TestArguments(BenchCommitsCase):
    def test_help(self):
        proc = self.run_bc("--help")
        self.assertEqual(proc.returncode, 0)
        self.assertIn("usage: scripts/bench-commits", proc.stdout)
        self.assertIn("--instructions", proc.stdout)

    def test_wrong_number_of_commits(self):
        self.assert_usage_error([], "expected two commits")
        self.assert_usage_error([self.c1], "expected two commits")
        self.assert_usage_error([self.c1, self.c2, self.c1], "expected two commits")

    def test_bad_options(self):
        self.assert_usage_error([self.c1, self.c2, "--runs", "0"], "--runs: invalid positive integer")
        self.assert_usage_error([self.c1, self.c2, "--runs", "x"], "--runs: invalid positive integer")
        self.assert_usage_error([self.c1, self.c2, "--runs"], "--runs: expected one argument")
        self.assert_usage_error([self.c1, self.c2, "--iterations", "-5"], "--iterations")
        self.assert_usage_error([self.c1, self.c2, "--frobnicate"], "unrecognized arguments: --frobnicate")
        for bad in ("0", "x", "-1"):
            self.assert_usage_error([self.c1, self.c2, "--budget", bad], "--budget: invalid positive number")
        self.assert_usage_error([self.c1, self.c2, "--max-looks", "0"], "--max-looks: invalid positive")
        self.assert_usage_error([self.c1, self.c2, "--budget", "5", "--instructions"],
                                "--budget does not apply")

    def test_broker_versions_own_both_clusters(self):
        # --kafka-a/-b start both sides' clusters: a bootstrap of one's own on either side
        # (or for both, after --) and a version scripts/kafka cannot run are bad usage,
        # refused before anything is built or started.
        base = [self.c1, self.c1, "--repo", self.repo]
        for opts in (["--kafka-a", "3.9.1", "--env-a", "KBENCH_BOOTSTRAP=127.0.0.1:9"],
                     ["--kafka-b", "3.9.1", "--args-b=--bootstrap=127.0.0.1:9"],
                     ["--kafka-a", "3.9.1", "--env-b", "KBENCH_BOOTSTRAP=127.0.0.1:9"],
                     ["--kafka-b", "4.4.0", "--env-a", "KBENCH_KAFKA_DIR=/tmp/x"],
                     ["--kafka-a", "3.9.1", "--", "--bootstrap", "127.0.0.1:9"]):
            proc = self.run_bc(*(base + opts))
            self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
            self.assertIn("cannot choose its cluster", proc.stderr)
            self.assertNotIn("building", proc.stderr)
            self.assertNotIn("starting Apache Kafka", proc.stderr)
        for bad in ("banana", "4.4"):
            proc = self.run_bc(*(base + ["--kafka-b", bad]))
            self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
            self.assertIn("--kafka-b %s: not a Kafka release" % bad, proc.stderr)
            self.assertIn("is not a Kafka release version", proc.stderr)
            self.assertNotIn("building", proc.stderr)
        self.assert_usage_error(base + ["--kafka-a"], "--kafka-a: expected one argument")
        self.assertEqual(len(self.worktrees()), 1)

    def test_bad_commit_and_repo(self):
        self.assert_usage_error(["nosuchref", self.c2, "--repo", self.repo],
                                "'nosuchref' is not a commit")
        self.assert_usage_error([self.c1, self.c2, "--repo", self.tmp],
                                "not inside a git repository")


@unittest.skipUnless(HAVE_TOOLS, "needs git, cmake, ninja and a C compiler")
class TestEndToEnd(BenchCommitsCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls._instr_fake = None

    def instr_fake_run(self):
        """(proc, out dir) of `c1 c2 --instructions --iterations 5 --filter ^Fake/`: the
        command of three tests, which only read its exit status, stderr and files, so one
        callgrind run (the slowest kind of call here) serves them all, made by whichever
        test comes first."""
        if TestEndToEnd._instr_fake is None:
            out = os.path.join(self.tmp, "instr-whole")
            proc = self.run_bc(self.c1, self.c2, "--repo", self.repo, "--instructions",
                               "--iterations", "5", "--filter", "^Fake/", "--out-dir", out)
            TestEndToEnd._instr_fake = (proc, out)
        return TestEndToEnd._instr_fake

    def test_time_regression_detected(self):
        out = os.path.join(self.tmp, "time")
        # 5 runs per side reach p = 0.0079 at best, 0.016 after Holm over the 2 rows, so use
        # alpha 0.05 to stay fast.
        proc = self.run_bc(self.c1, self.c2, "--repo", self.repo, "--runs", "5",
                           "--alpha", "0.05", "--out-dir", out)
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        with open(os.path.join(out, "verdict.json")) as f:
            verdict = json.load(f)
        got = {(r["name"], r["metric"]) for r in verdict["regressions"]}
        self.assertIn(("Fake/loop/n:2/real_time", "real_time"), got)
        self.assertIn(("Codec/compress/codec:fake/level:1/payload:az/record_bytes:100"
                       "/batch_bytes:65536", "cpu_time"), got)
        with open(os.path.join(out, "base.json")) as f:
            base = json.load(f)
        reps = [b["repetition_index"] for b in base["benchmarks"]
                if b["name"] == "Fake/loop/n:2/real_time"]
        self.assertEqual(reps, [0, 1, 2, 3, 4])
        self.assertTrue(all(b["run_type"] == "iteration" for b in base["benchmarks"]))
        # Each run is one process, and compare took one sample per process: 5 rounds are
        # too few for the paired test, though both sides are marked as paired by round.
        self.assertEqual(sorted({b["kbench_process"] for b in base["benchmarks"]}),
                         [0, 1, 2, 3, 4])
        self.assertTrue(all(r["samples"] == "process" for r in verdict["regressions"]))
        with open(os.path.join(out, "new.json")) as f:
            new = json.load(f)
        self.assertTrue(base["context"].get("kbench_pairing"))
        self.assertEqual(base["context"]["kbench_pairing"], new["context"]["kbench_pairing"])
        self.assertEqual(len(self.worktrees()), 1, "worktrees were not removed")
        # Not a live cluster: no warm-up process.
        self.assertFalse(os.path.exists(os.path.join(out, "runs", "warmup.json")))

    def test_default_is_paired(self):
        # Without --runs: 8 rounds, the fewest with which the paired test reaches p < 0.01.
        out = os.path.join(self.tmp, "paired")
        proc = self.run_bc(self.c1, self.c2, "--repo", self.repo, "--filter", "^Fake/",
                           "--out-dir", out)
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        self.assertIn("paired:", proc.stdout)
        with open(os.path.join(out, "verdict.json")) as f:
            verdict = json.load(f)
        row = verdict["regressions"][0]
        self.assertEqual((row["name"], row["samples"], row["n_base"]),
                         ("Fake/loop/n:2/real_time", "pair", 8))

    def test_budget_adds_rounds_until_every_row_is_judged(self):
        # 2 rounds cannot decide; under --budget, rounds are added two at a time, each look
        # tested at alpha / 5, until both rows have a verdict: 8 rounds, compared UNPAIRED
        # (at 0.002 a paired verdict needs 10 rounds, an unpaired one 7 processes a side,
        # min_samples; 6 vs 6 are too few). --runs 2 asked for that; the default starts at
        # 10 (test_budget_starts_with_the_rounds_a_paired_look_needs).
        out = os.path.join(self.tmp, "budget")
        proc = self.run_bc(self.c1, self.c2, "--repo", self.repo, "--runs", "2",
                           "--budget", "10", "--out-dir", out, timeout=300)
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        self.assertIn("a paired verdict needs 10 rounds; looks at fewer rounds (--runs 2) "
                      "compare the sides unpaired", proc.stderr)
        self.assertIn("not paired: 8 paired rounds are fewer than the 10", proc.stdout)
        for look, rounds in ((1, 2), (2, 4), (3, 6), (4, 8)):
            self.assertIn("look %d/5 at %d rounds (alpha 0.002 per look)" % (look, rounds),
                          proc.stderr)
        self.assertNotIn("look 5/5", proc.stderr)
        self.assertIn("every primary row has a verdict", proc.stderr)
        with open(os.path.join(out, "verdict.json")) as f:
            verdict = json.load(f)
        self.assertEqual(verdict["alpha"], 0.002)
        self.assertEqual(len(verdict["regressions"]), 2)
        self.assertEqual(verdict["inconclusive"], [])
        with open(os.path.join(out, "base.json")) as f:
            procs = {b["kbench_process"] for b in json.load(f)["benchmarks"]}
        self.assertEqual(len(procs), 8)

    def test_budget_starts_with_the_rounds_a_paired_look_needs(self):
        out = os.path.join(self.tmp, "budget-paired")
        proc = self.run_bc(self.c1, self.c2, "--repo", self.repo, "--budget", "10",
                           "--out-dir", out, timeout=300)
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        self.assertIn("look 1/5 at 10 rounds (alpha 0.002 per look)", proc.stderr)
        with open(os.path.join(out, "verdict.json")) as f:
            verdict = json.load(f)
        self.assertEqual({r["samples"] for r in verdict["regressions"]}, {"pair"})

    def test_budget_ends_the_rounds(self):
        # An A/A run stays inconclusive at 2 rounds; a budget of 0.06 s leaves no room for
        # more: one look, exit 3.
        out = os.path.join(self.tmp, "budget-end")
        proc = self.run_bc(self.c1, self.c1, "--repo", self.repo, "--runs", "2",
                           "--budget", "0.001", "--out-dir", out)
        self.assertEqual(proc.returncode, 3, proc.stdout + proc.stderr)
        self.assertIn("would exceed the budget of 0.001 min", proc.stderr)
        self.assertNotIn("look 2/", proc.stderr)

    def test_sides_of_one_commit_differ_in_arguments_or_environment(self):
        # One build, two sides: kbench arguments (--args-b) or an environment (--env-b, as
        # LD_LIBRARY_PATH selects a librdkafka build) that make the new side 30 % slower.
        for i, opts in enumerate((["--args-b=--fake-scale=130"],
                                  ["--env-b", "KBENCH_FAKE_SCALE=130"])):
            out = os.path.join(self.tmp, "sides-%d" % i)
            proc = self.run_bc(self.c1, self.c1, "--repo", self.repo, "--filter", "^Fake/",
                               "--out-dir", out, *opts)
            self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
            self.assertNotIn("A/A run", proc.stderr)
            with open(os.path.join(out, "verdict.json")) as f:
                row = json.load(f)["regressions"][0]
            self.assertEqual(row["samples"], "pair")
            self.assertAlmostEqual(row["change_pct"], 30.0, delta=2.0)
        # The same options on both sides: an A/A run, no regression.
        proc = self.run_bc(self.c1, self.c1, "--repo", self.repo, "--filter", "^Fake/",
                           "--out-dir", os.path.join(self.tmp, "sides-aa"),
                           "--args-a=--fake-scale=130", "--args-b=--fake-scale=130")
        self.assertIn(proc.returncode, (0, 3), proc.stdout + proc.stderr)

    def test_side_on_its_own_cluster_is_warmed_up(self):
        # Broker versions: each side's KBENCH_BOOTSTRAP names its own cluster, and each
        # cluster is warmed up by its side. The fake lists its live row only with a
        # bootstrap, so here only the new side has it: missing in base, exit 3.
        out = os.path.join(self.tmp, "two-clusters")
        proc = self.run_bc(self.c1, self.c1, "--repo", self.repo, "--runs", "2",
                           "--env-b", "KBENCH_BOOTSTRAP=127.0.0.1:9", "--out-dir", out)
        self.assertEqual(proc.returncode, 3, proc.stdout + proc.stderr)
        self.assertIn("warming the cluster up: 1 live row(s) of new", proc.stderr)
        self.assertFalse(os.path.exists(os.path.join(out, "runs", "warmup.json")))
        self.assertTrue(os.path.exists(os.path.join(out, "runs", "warmup-new.json")))
        self.assertIn("only in new:  Produce/fake/real_time", proc.stdout)

    def test_bad_side_options(self):
        self.assert_usage_error([self.c1, self.c1, "--repo", self.repo, "--env-b", "novalue"],
                                "--env-b: invalid NAME=VALUE value")

    def test_live_cluster_is_warmed_up_untimed(self):
        # On a live cluster one process of the base build runs the live rows first; its
        # results are never compared, so each side still holds one sample per round.
        out = os.path.join(self.tmp, "live")
        proc = self.run_bc(self.c1, self.c1, "--repo", self.repo, "--runs", "2",
                           "--accept-inconclusive", "--out-dir", out,
                           env={"KBENCH_BOOTSTRAP": "127.0.0.1:9"})
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn("warming the cluster up: 1 live row(s)", proc.stderr)
        with open(os.path.join(out, "runs", "warmup.json")) as f:
            warm = [b["name"] for b in json.load(f)["benchmarks"]]
        self.assertEqual(warm, ["Produce/fake/real_time"])
        for side in ("base", "new"):
            with open(os.path.join(out, side + ".json")) as f:
                rows = [b["name"] for b in json.load(f)["benchmarks"]
                        if b["name"] == "Produce/fake/real_time"]
            self.assertEqual(len(rows), 2, side)

    def test_filter_and_kbench_args_pass_through(self):
        out = os.path.join(self.tmp, "filtered")
        proc = self.run_bc(self.c1, self.c1, "--repo", self.repo, "--runs", "3",
                           "--filter", "^Fake/", "--out-dir", out, "--",
                           "--benchmark_min_time=0.01")
        # 3 runs a side are too few for a verdict at 0.01: judged nothing, so exit 3, not 0.
        self.assertEqual(proc.returncode, 3, proc.stdout + proc.stderr)
        self.assertIn("a verdict at p < 0.01 needs >= 5 per side", proc.stdout)
        with open(os.path.join(out, "new.json")) as f:
            names = {b["name"] for b in json.load(f)["benchmarks"]}
        self.assertEqual(names, {"Fake/loop/n:2/real_time"})

    @unittest.skipUnless(shutil.which("valgrind"), "needs valgrind")
    def test_instructions(self):
        out = os.path.join(self.tmp, "instr")
        proc = self.run_bc(self.c1, self.c2, "--repo", self.repo, "--instructions",
                           "--iterations", "10", "--filter", "Codec", "--out-dir", out, "--profile")
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        with open(os.path.join(out, "verdict.json")) as f:
            verdict = json.load(f)
        self.assertEqual(len(verdict["regressions"]), 1)
        row = verdict["regressions"][0]
        self.assertEqual(row["metric"], "instructions")
        self.assertAlmostEqual(row["change_pct"], 30.0, delta=1.0)
        self.assertEqual(len(self.worktrees()), 1)
        # --profile: the flagged row's differential profile names the function that grew.
        profiles = os.listdir(os.path.join(out, "profiles"))
        self.assertEqual(len(profiles), 1, profiles)
        with open(os.path.join(out, "profiles", profiles[0], "diff", "diff.json")) as f:
            rows = json.load(f)["rows"]
        self.assertEqual(rows[0]["function"], "work")
        self.assertAlmostEqual(rows[0]["delta_pct_of_function"], 30.0, delta=1.0)

    @unittest.skipUnless(shutil.which("valgrind"), "needs valgrind")
    def test_instructions_of_a_real_time_row(self):
        # Google Benchmark names it Fake/loop/n:2/iterations:N/real_time under fixed
        # iterations: the per-row filter and the iteration check must find it there.
        proc, out = self.instr_fake_run()
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        with open(os.path.join(out, "verdict.json")) as f:
            row = json.load(f)["regressions"][0]
        self.assertEqual(row["name"], "Fake/loop/n:2/real_time")
        self.assertAlmostEqual(row["change_pct"], 30.0, delta=1.0)

    @unittest.skipUnless(shutil.which("valgrind"), "needs valgrind")
    def test_instructions_of_one_function(self):
        # Only what runs inside work() is counted: the 30 % it grew by, and nothing of the
        # process's start-up (whose instructions the whole-process count includes).
        proc, whole = self.instr_fake_run()
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        only = os.path.join(self.tmp, "instr-work")
        proc = self.run_bc(self.c1, self.c2, "--repo", self.repo, "--instructions-of", "work",
                           "--iterations", "5", "--filter", "^Fake/", "--out-dir", only)
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        rows = {}
        for out in (whole, only):
            with open(os.path.join(out, "verdict.json")) as f:
                rows[out] = json.load(f)["regressions"][0]
        self.assertAlmostEqual(rows[only]["change_pct"], 30.0, delta=1.0)
        totals = {}
        for out in (whole, only):
            with open(os.path.join(out, "base.json")) as f:
                doc = json.load(f)
            totals[out] = doc["benchmarks"][0]["instructions_total_n"]
            if out == only:
                self.assertEqual(doc["context"]["kbench_instructions_of"],
                                 "work (glibc allocator excluded)")
        per_iteration = rows[only]["base_median"]
        self.assertAlmostEqual(totals[only], 5 * per_iteration, delta=0.01 * totals[only])
        self.assertGreater(totals[whole], totals[only] + 10000)
        # A function the row never calls collects nothing: an error, not "unchanged".
        proc = self.run_bc(self.c1, self.c1, "--repo", self.repo, "--instructions-of",
                           "no_such_function", "--iterations", "2", "--filter", "^Fake/",
                           "--out-dir", os.path.join(self.tmp, "instr-none"))
        self.assertEqual(proc.returncode, 3, proc.stdout + proc.stderr)
        self.assertIn("no instructions collected inside no_such_function", proc.stderr)
        proc = self.run_bc(self.c1, self.c1, "--repo", self.repo, "--instructions-of",
                           "work; rm", "--out-dir", os.path.join(self.tmp, "instr-bad"))
        self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
        self.assertIn("invalid function name", proc.stderr)

    @unittest.skipUnless(shutil.which("valgrind"), "needs valgrind")
    def test_instructions_leave_out_cluster_rows(self):
        # Their whole instructions follow the wall clock: a count would be a false verdict.
        proc = self.run_bc(self.c1, self.c1, "--repo", self.repo, "--instructions",
                           "--iterations", "2", "--filter", "^Produce/", "--out-dir",
                           os.path.join(self.tmp, "instr-produce"),
                           env={"KBENCH_BOOTSTRAP": "127.0.0.1:9"})
        self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
        self.assertIn("only rows of families that need a cluster", proc.stderr)
        proc = self.run_bc(self.c1, self.c1, "--repo", self.repo, "--instructions",
                           "--iterations", "2", "--filter", "^(Produce|Fake)/", "--out-dir",
                           os.path.join(self.tmp, "instr-mixed"),
                           env={"KBENCH_BOOTSTRAP": "127.0.0.1:9"})
        self.assertIn(proc.returncode, (0, 1), proc.stdout + proc.stderr)
        self.assertEqual(proc.stderr.count("of families that need a cluster"), 1, proc.stderr)
        with open(os.path.join(self.tmp, "instr-mixed", "base.json")) as f:
            names = [b["name"] for b in json.load(f)["benchmarks"]]
        self.assertTrue(names and all(n.startswith("Fake/") for n in names), names)
        # A selection without cluster rows gets no such note (no KBENCH_BOOTSTRAP here).
        proc, _ = self.instr_fake_run()
        self.assertNotIn("need a cluster", proc.stderr)

    def test_kbench_without_fixed_iterations_is_reported(self):
        # A binary that ignores KBENCH_FIXED_ITERATIONS must not yield numbers.
        repo = os.path.join(self.tmp, "nofixed")
        shutil.copytree(self.repo, repo)
        src = os.path.join(repo, "fake_kbench.c")
        with open(src) as f:
            text = f.read()
        with open(src, "w") as f:
            f.write(text.replace('getenv("KBENCH_FIXED_ITERATIONS")', "NULL"))
        git(repo, "commit", "-qam", "ignore fixed iterations")
        proc = self.run_bc("HEAD", "HEAD", "--repo", repo, "--instructions",
                           "--filter", "Codec", "--out-dir", os.path.join(self.tmp, "nf"))
        self.assertEqual(proc.returncode, 3, proc.stdout + proc.stderr)
        self.assertIn("KBENCH_FIXED_ITERATIONS", proc.stderr)

    def test_build_cache_reused(self):
        # The second call must find the first call's build and not rebuild it.
        cache = os.path.join(self.tmp, "cache")
        args = [self.c1, self.c1, "--repo", self.repo, "--runs", "1", "--build-cache", cache,
                "--accept-inconclusive"]
        proc = self.run_bc(*args, "--out-dir", os.path.join(self.tmp, "c1"))
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        binary = os.path.join(cache, self.c1, "build", "kbench")
        self.assertTrue(os.access(binary, os.X_OK), "no cached build at " + binary)
        before = os.stat(binary).st_mtime_ns
        proc = self.run_bc(*args, "--out-dir", os.path.join(self.tmp, "c2"))
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertEqual(os.stat(binary).st_mtime_ns, before, "cached build was rebuilt")
        git(self.repo, "worktree", "remove", "--force", os.path.join(cache, self.c1))

    def test_build_cache_entry_of_a_deleted_clone_is_made_again(self):
        # A cache entry is a worktree of the clone that first built it. Once that clone is
        # deleted the entry is a dead link: another clone at the same commit must make it
        # again, not stop at it. An entry that is alive but at another commit stays refused.
        cache = os.path.join(self.tmp, "cache-gone")
        gone = os.path.join(self.tmp, "gone-clone")
        subprocess.run(["git", "clone", "-q", self.repo, gone], check=True)
        args = [self.c1, self.c1, "--runs", "1", "--build-cache", cache, "--accept-inconclusive"]
        proc = self.run_bc(*args, "--repo", gone, "--out-dir", os.path.join(self.tmp, "g1"))
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        shutil.rmtree(gone)
        proc = self.run_bc(*args, "--repo", self.repo, "--out-dir", os.path.join(self.tmp, "g2"))
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn("made again", proc.stderr)
        entry = os.path.join(cache, self.c1)
        self.assertEqual(git(entry, "rev-parse", "HEAD"), self.c1)
        self.assertIn(entry, "\n".join(self.worktrees()))
        git(entry, "checkout", "-q", "--detach", self.c2)
        proc = self.run_bc(*args, "--repo", self.repo, "--out-dir", os.path.join(self.tmp, "g3"))
        self.assertEqual(proc.returncode, 3, proc.stdout + proc.stderr)
        self.assertIn("is not a worktree at " + self.c1, proc.stderr)
        git(self.repo, "worktree", "remove", "--force", entry)

    def test_errored_run_is_not_judged(self):
        # A kbench that fails its checks (exit 1, error_occurred in its JSON) must not
        # pass: compare reports the benchmark as errored and bench-commits exits 3.
        repo = os.path.join(self.tmp, "erroring")
        shutil.copytree(self.repo, repo)
        git(repo, "reset", "-q", "--hard", self.c1)
        src = os.path.join(repo, "fake_kbench.c")
        with open(src) as f:
            text = f.read()
        self.assertIn("int fake_error = 0;", text)
        with open(src, "w") as f:
            f.write(text.replace("int fake_error = 0;", "int fake_error = 1;"))
        git(repo, "commit", "-qam", "every benchmark errors")
        out = os.path.join(self.tmp, "err")
        proc = self.run_bc("HEAD~1", "HEAD", "--repo", repo, "--runs", "5",
                           "--accept-inconclusive", "--out-dir", out, "--",
                           "--benchmark_min_time=0.01")
        self.assertEqual(proc.returncode, 3, proc.stdout + proc.stderr)
        self.assertIn("ERROR on new side", proc.stdout)
        with open(os.path.join(out, "verdict.json")) as f:
            self.assertTrue(json.load(f)["errored"])

    def test_build_failure(self):
        repo = os.path.join(self.tmp, "broken")
        shutil.copytree(self.repo, repo)
        with open(os.path.join(repo, "fake_kbench.c"), "a") as f:
            f.write("\nthis does not compile;\n")
        git(repo, "commit", "-qam", "broken")
        proc = self.run_bc("HEAD~1", "HEAD", "--repo", repo, "--runs", "1",
                           "--out-dir", os.path.join(self.tmp, "b"))
        self.assertEqual(proc.returncode, 3, proc.stdout + proc.stderr)
        self.assertIn("build of new", proc.stderr)
        self.assertEqual(len(git(repo, "worktree", "list").splitlines()), 1)


@unittest.skipUnless(HAVE_TOOLS and shutil.which("make"), "needs git, cmake, ninja, cc and make")
class TestAllocatorExcluded(unittest.TestCase):
    """--instructions-of leaves glibc's allocator out of the count."""

    @unittest.skipUnless(shutil.which("callgrind_annotate"), "needs valgrind")
    def test_allocator_self_cost_is_found_by_file(self):
        from kbench import results as kr
        text = ("version: 1\ncreator: callgrind-3.19.0\npid: 1\ncmd: x\npart: 1\n"
                "positions: line\nevents: Ir\nsummary: 1540\n\n"
                "fl=./malloc/./malloc/malloc.c\nfn=_int_malloc\n10 300\nfn=malloc\n11 200\n"
                "fl=./malloc/./malloc/arena.c\nfn=arena_get2\n3 0\n"
                "fl=src/mymalloc.c\nfn=my_malloc\n7 40\n"
                "fl=src/rdkafka_msg.c\nfn=rd_kafka_producev\n5 1000\ntotals: 1540\n")
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "callgrind.out")
            with open(path, "w") as f:
                f.write(text)
            self.assertEqual(kr.parse_callgrind_total(path), 1540)
            self.assertEqual(kr.allocator_instructions(path), 500)


class TestLibrdkafkaTree(BenchCommitsCase):
    """--librdkafka-a/-b tree:DIR@REV: each side on a commit of a local librdkafka tree (a
    fake one, fake_librdkafka.py, built in a second by scripts/librdkafka build --tree)."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.rdk = os.path.join(cls.tmp, "librdkafka")
        cls.r1 = fake_librdkafka.make_repo(cls.rdk)
        fake_librdkafka.git(cls.rdk, "tag", "v2.15.1")
        cls.r2 = fake_librdkafka.commit_change(cls.rdk, "a change on the send path")
        cls.cache = os.path.join(cls.tmp, "kbench-cache")

    def run_tree(self, *args, **env):
        return self.run_bc(*args, env=dict({"KBENCH_CACHE": self.cache}, **env))

    def test_two_commits_of_one_release_are_told_apart(self):
        out = os.path.join(self.tmp, "tree")
        proc = self.run_tree(self.c1, self.c1, "--repo", self.repo, "--runs", "2",
                             "--filter", "^Fake/", "--accept-inconclusive", "--out-dir", out,
                             "--librdkafka-a", "tree:%s@v2.15.1" % self.rdk,
                             "--librdkafka-b", "tree:%s@HEAD" % self.rdk)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        tree = os.path.realpath(self.rdk)
        for side, sha in (("base", self.r1), ("new", self.r2)):
            with open(os.path.join(out, side + ".json")) as f:
                ctx = json.load(f)["context"]
            self.assertEqual(ctx["librdkafka_source"], "tree:%s@%s" % (tree, sha), side)
            # That side ran on its own commit's library, first on LD_LIBRARY_PATH.
            lib = ctx["ld_library_path"].split(":")[0]
            self.assertTrue(os.path.basename(os.path.dirname(lib)).startswith(sha + "-"), lib)
            self.assertTrue(os.path.isfile(os.path.join(lib, "librdkafka.so.1")), lib)
        self.assertIn("note: context librdkafka_source differs", proc.stdout)
        # Two releases on the mock cluster meet the same one, kbench-mock, unless told.
        self.assertIn("kbench-mock (--mock=process), the same cluster for both", proc.stderr)
        for side in ("base", "new"):
            with open(os.path.join(out, side + ".json")) as f:
                self.assertEqual(json.load(f)["context"]["mock_cluster"], "process", side)
        with open(os.path.join(out, "verdict.json")) as f:
            diff = json.load(f)["context_diff"]["librdkafka_source"]
        self.assertEqual((diff["base"], diff["new"]),
                         ("tree:%s@%s" % (tree, self.r1), "tree:%s@%s" % (tree, self.r2)))

    def test_bad_tree_sides_are_refused_before_building(self):
        plain = os.path.join(self.tmp, "plain-dir")
        os.makedirs(plain, exist_ok=True)
        for spec, says in (("tree:%s" % self.rdk, "needs tree:DIR@REV"),
                           ("tree:%s@HEAD" % os.path.join(self.tmp, "none"), "is not a directory"),
                           ("tree:%s@HEAD" % plain, "not inside a git repository"),
                           ("tree:%s@no-such-rev" % self.rdk, "'no-such-rev' is not a commit")):
            with self.subTest(spec=spec):
                out = os.path.join(self.tmp, "bad-tree")
                proc = self.run_tree(self.c1, self.c1, "--repo", self.repo, "--out-dir", out,
                                     "--librdkafka-b", spec)
                self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
                self.assertIn(says, proc.stderr)
                self.assertFalse(os.path.exists(os.path.join(out, "build-base.log")),
                                 "nothing may be built for a bad side")

    def test_bare_repository_sides(self):
        # A mirror (no work tree) on both sides; an older commit without --disable-curl in
        # its configure builds too.
        old = fake_librdkafka.commit_change(self.rdk, "as 1.8.2: no libcurl option",
                                            options=fake_librdkafka.OPTIONS_1_7)
        self.addCleanup(fake_librdkafka.git, self.rdk, "reset", "-q", "--hard", self.r2)
        bare = os.path.join(self.tmp, "librdkafka.git")
        shutil.rmtree(bare, ignore_errors=True)
        subprocess.run(["git", "clone", "-q", "--mirror", self.rdk, bare], check=True)
        out = os.path.join(self.tmp, "tree-bare")
        proc = self.run_tree(self.c1, self.c1, "--repo", self.repo, "--runs", "2",
                             "--filter", "^Fake/", "--accept-inconclusive", "--out-dir", out,
                             "--librdkafka-a", "tree:%s@v2.15.1" % bare,
                             "--librdkafka-b", "tree:%s@%s" % (bare, old))
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        for side, sha in (("base", self.r1), ("new", old)):
            with open(os.path.join(out, side + ".json")) as f:
                ctx = json.load(f)["context"]
            self.assertEqual(ctx["librdkafka_source"],
                             "tree:%s@%s" % (os.path.realpath(bare), sha), side)
        # Before 1.0.0: refused before anything is built.
        ancient = fake_librdkafka.commit_change(self.rdk, "0.11.6", header="0x000b06ff",
                                                runtime="0.11.6")
        out = os.path.join(self.tmp, "tree-ancient")
        proc = self.run_tree(self.c1, self.c1, "--repo", self.repo, "--out-dir", out,
                             "--librdkafka-b", "tree:%s@%s" % (self.rdk, ancient))
        self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
        self.assertIn("older than 1.0.0", proc.stderr)
        self.assertFalse(os.path.exists(os.path.join(out, "build-base.log")))

    def test_failed_librdkafka_build_exits_3(self):
        out = os.path.join(self.tmp, "tree-fail")
        proc = self.run_tree(self.c1, self.c1, "--repo", self.repo, "--runs", "1",
                             "--out-dir", out, "--librdkafka-b", "tree:%s@%s" % (self.rdk, self.r2),
                             KBENCH_CACHE=os.path.join(self.tmp, "cache-fail"), FAKE_FAIL="make")
        self.assertEqual(proc.returncode, 3, proc.stdout + proc.stderr)
        self.assertIn("make failed", proc.stderr)


if __name__ == "__main__":
    unittest.main()


class KbenchError(Exception):
    """The shape of kafka.KafkaError and librdkafka.BuildError: a message and a status."""

    def __init__(self, message, status):
        super().__init__(message)
        self.status = status


class TestFunctions(unittest.TestCase):
    """bench-commits' calls of its siblings' functions, each replaced by a stand-in."""

    @classmethod
    def setUpClass(cls):
        from kbench import kafka_cluster as kafka
        from kbench.commands import bench_commits, compare
        cls.bc, cls.compare, cls.kafka = bench_commits, compare, kafka

    def parse(self, *argv):
        args = self.bc.parse(["A", "B"] + list(argv))
        args.commits, args.kbench_args = args.words[:2], args.words[2:]
        return args

    def test_parse_keeps_kbench_arguments_after_the_options(self):
        args = self.bc.parse(["A", "B", "--runs", "3", "--args-b=--x=1", "--", "-X", "linger.ms=5"])
        self.assertEqual((args.words, args.runs, args.args_b), (["A", "B", "-X", "linger.ms=5"], 3, ["--x=1"]))

    def test_a_kafka_release_that_cannot_run_is_bad_usage(self):
        from unittest import mock
        args = self.parse("--kafka-b", "banana")
        for status, want in ((2, 2), (1, 3)):
            with mock.patch.object(self.kafka, "KafkaError", KbenchError, create=True), \
                    mock.patch.object(self.kafka, "classpath", create=True,
                                      side_effect=KbenchError("no such release", status)), \
                    self.assertRaises(SystemExit) as stop:
                self.bc.check_kafka_sides(args)
            self.assertEqual(stop.exception.code, want)

    def test_the_verdict_comes_from_compare_functions(self):
        from unittest import mock
        args = self.parse("--instructions", "--accept-inconclusive", "--threshold", "0.5")
        tool = self.bc.BenchCommits(args, "/nowhere", None, "/nowhere")
        tool.pairing = None
        verdict = {"inconclusive": []}
        with mock.patch.object(self.bc.results, "merge_files") as merge, \
                mock.patch.object(self.compare, "judge", create=True, return_value=verdict) as judge, \
                mock.patch.object(self.compare, "write", create=True) as write, \
                mock.patch.object(self.compare, "exit_code", create=True, return_value=3) as exit_code:
            self.assertIs(tool.merge_and_compare(0.002), verdict)
        self.assertEqual(merge.call_count, 2)
        judge.assert_called_once_with(["/nowhere/base.json"], ["/nowhere/new.json"], alpha=0.002,
                                      threshold=0.5, metric="instructions", force=False)
        write.assert_called_once_with(verdict, json_path="/nowhere/verdict.json")
        exit_code.assert_called_once_with(verdict, accept_inconclusive=True)
        self.assertEqual(tool.rc, 3)
