"""The known-regressions scenario's logic, with fakes in place of bench_commits.run and
compare.judge (unittest.mock): the command each case runs, found / not found / not judged per
case, the exit status (0 all found, 1 one missed, 3 one not judged), the refusals (exit 2)
and the case table itself. Seconds, no build, no broker: every case here runs on the mock
target. Each scenario run is a process of its own, this file with --scenario ARGS."""

import json
import os
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PYTHON = os.path.join(ROOT, "scripts", "lib", "python")
RUN = os.path.join(ROOT, "scripts", "scenarios", "known-regressions", "run.py")
CASES = os.path.join(ROOT, "scripts", "scenarios", "known-regressions", "cases.tsv")


def log_call(argv):
    with open(os.environ["STUB_LOG"], "a") as f:
        f.write(json.dumps(argv) + "\n")


def fake_bench_commits(argv):
    """bench_commits.run of the argv parse was given: by the side B (the case's "b"), writes
    the verdict.json compare would (or none) and returns bench-commits' exit status."""
    log_call(argv)
    out = argv[argv.index("--out-dir") + 1]
    for side in ("base", "new"):
        with open(os.path.join(out, side + ".json"), "w") as f:
            json.dump({"context": {"librdkafka_version": "9.9.9"}, "benchmarks": []}, f)
    kind = {"2.0.2": "regression", "2.1.1": "improvement", "2.2.0": "unchanged",
            "2.3.0": "inconclusive", "2.5.0": "fail", "2.6.1": "mixed",
            "2.8.0": "errored", "system": "inconclusive"}[argv[argv.index("--librdkafka-b") + 1]]
    if kind == "fail":
        print("bench-commits: error: build failed", file=sys.stderr)
        return 3

    def row(verdict, change, metric="items_per_second"):
        return {"name": "Produce/send/acks:1/codec:none/record_bytes:100/threads:1/producers:1/real_time",
                "metric": metric, "change_pct": change, "ci_low_pct": change - 3,
                "ci_high_pct": change + 3, "p_value": 0.001, "p_adjusted": 0.002,
                "verdict": verdict, "primary": True}
    v = {"regressions": [], "improvements": [], "unchanged": [], "inconclusive": [],
         "secondary": [], "errored": [], "unjudged": [], "only_in_base": [], "only_in_new": []}
    if kind == "regression":
        v["regressions"] = [row("regression", -20.0)]
        v["secondary"] = [dict(row("regression", 30.0, "cpu_us_per_record"), primary=False)]
    elif kind == "improvement":
        v["improvements"] = [row("improvement", 25.0)]
    elif kind == "unchanged":
        v["unchanged"] = [row("unchanged", 0.5)]
    elif kind == "inconclusive":
        v["inconclusive"] = [row("inconclusive", 8.0)]
    elif kind == "mixed":
        v["regressions"] = [row("regression", -20.0)]
        v["improvements"] = [row("improvement", 20.0, "p50_us")]
    elif kind == "errored":
        v["errored"] = [{"name": "Produce/send/x", "side": "new", "repetitions": 1,
                         "message": "delivery failed"}]
    v["exit_code"] = 1 if v["regressions"] else (3 if v["inconclusive"] or v["errored"] else 0)
    with open(os.path.join(out, "verdict.json"), "w") as f:
        json.dump(v, f)
    return v["exit_code"]


def fake_judge(base, new, metric=None, **options):
    """compare.judge on one metric: an improvement."""
    log_call(base + new + ["--metric", metric])
    row = {"name": "Produce/send/x", "metric": metric, "change_pct": -40.0, "p_value": 0.001,
           "verdict": "improvement", "primary": True}
    return {"regressions": [], "improvements": [row], "unchanged": [], "inconclusive": [],
            "secondary": [], "errored": [], "unjudged": []}


def fake_write(verdict, json_path=None, **options):
    with open(json_path, "w") as f:
        json.dump(verdict, f)


def run_scenario_with_fakes(argv):
    """scripts/scenario known-regressions ARGV, bench-commits and compare replaced by the fakes."""
    from kbench import cli
    from kbench.commands import bench_commits, compare, scenario
    with mock.patch.object(bench_commits, "parse", list, create=True), \
            mock.patch.object(bench_commits, "run", fake_bench_commits, create=True), \
            mock.patch.object(compare, "judge", fake_judge, create=True), \
            mock.patch.object(compare, "write", fake_write, create=True), \
            mock.patch.object(compare, "exit_code", lambda verdict, **o: 0, create=True):
        cli.run(lambda _: scenario.run("known-regressions", argv))


HEADER = "# id measures a b target filter args metric expect change source\n"
FIELDS = ("id", "measures", "a", "b", "target", "filter", "args", "metric", "expect", "change",
          "source")


def case(cid, b, expect, a="system", measures="throughput", target="mock", metric="-"):
    return "\t".join([cid, measures, a, b, target, "^Produce/send/", "--produce=acks=1,record_bytes=100",
                      metric, expect, "a change", "a CHANGELOG line"]) + "\n"


class KnownRegressions(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="kbench-known-")
        self.dir = self.tmp.name
        self.log = os.path.join(self.dir, "stub.log")
        self.n = 0
        self.files = 0

    def tearDown(self):
        self.tmp.cleanup()

    def cases_file(self, *lines):
        self.files += 1
        path = os.path.join(self.dir, "cases-%d.tsv" % self.files)
        with open(path, "w") as f:
            f.write(HEADER + "".join(lines))
        return path

    def run_scenario(self, *args):
        self.n += 1
        out = os.path.join(self.dir, "out-%d" % self.n)
        env = dict(os.environ, KBENCH_BIN="/bin/true", STUB_LOG=self.log,
                   KBENCH_CACHE=os.path.join(self.dir, "cache"))
        env.pop("KBENCH_LIBRDKAFKA_TREE", None)
        proc = subprocess.run([PYTHON, __file__, "--scenario", "--out", out] + list(args),
                              capture_output=True, text=True, env=env, timeout=120)
        summary = None
        if os.path.exists(os.path.join(out, "summary.json")):
            with open(os.path.join(out, "summary.json")) as f:
                summary = json.load(f)
        return proc, out, summary

    def calls(self):
        if not os.path.exists(self.log):
            return []
        with open(self.log) as f:
            return [json.loads(line) for line in f]

    def statuses(self, summary):
        return {c["id"]: (c["found"], c["status"]) for c in summary["cases"]}

    def test_every_case_found_exits_0(self):
        f = self.cases_file(case("reg", "2.0.2", "regression"), case("imp", "2.1.1", "improvement"),
                            case("ctl", "2.2.0", "none", measures="control"))
        proc, out, summary = self.run_scenario("--cases-file", f, "--cases", "all")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(self.statuses(summary), {"reg": ("regression", "found"),
                                                  "imp": ("improvement", "found"),
                                                  "ctl": ("unchanged", "found")})
        # The per-case lines: expected direction, what was found, the deciding and the
        # significant secondary rows, the time.
        self.assertRegex(proc.stderr, r"case reg \(throughput\): system -> 2\.0\.2 on mock, "
                                      r"expected regression: kbench found regression: FOUND, \d+ s")
        self.assertRegex(proc.stderr, r"deciding +Produce/send/\S+ items_per_second: -20\.0 %")
        self.assertRegex(proc.stderr, r"secondary +Produce/send/\S+ cpu_us_per_record: \+30\.0 %")
        self.assertIn("3 of 3 case(s) found", proc.stderr)
        for name in ("report.md", "known-regressions.png", "summary.txt"):
            self.assertTrue(os.path.exists(os.path.join(out, name)), name)
        with open(os.path.join(out, "report.md")) as fh:
            report = fh.read()
        self.assertRegex(report, r"\| reg +\| throughput +\| system → 2\.0\.2 +\| mock +\| regression +"
                                 r"\| regression +\| \*\*found\*\* +\|")

    def test_the_command_of_a_case(self):
        f = self.cases_file(case("reg", "2.0.2", "regression", a="2.15.1"))
        proc, out, _ = self.run_scenario("--cases-file", f, "--cases", "reg")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        (argv,) = self.calls()
        dashes = argv.index("--")
        head = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        self.assertEqual(argv[:2], [head, head])
        opts = argv[2:dashes]
        self.assertEqual(opts[opts.index("--librdkafka-a") + 1], "2.15.1")
        self.assertEqual(opts[opts.index("--librdkafka-b") + 1], "2.0.2")
        self.assertEqual(opts[opts.index("--filter") + 1], "^Produce/send/")
        self.assertEqual(opts[opts.index("--out-dir") + 1], os.path.join(out, "cases", "reg"))
        self.assertEqual(opts[opts.index("--build-cache") + 1],
                         os.path.join(self.dir, "cache", "bench-commits"))
        self.assertNotIn("--runs", opts)  # small: bench-commits' own default of 8 rounds
        self.assertEqual(argv[dashes + 1:], ["--produce=acks=1,record_bytes=100"])
        with open(os.path.join(out, "cases", "reg", "case.json")) as fh:
            run = json.load(fh)
        self.assertEqual(run["exit_code"], 1)
        self.assertEqual(run["command"][1:], argv)

    def test_a_miss_exits_1(self):
        # Expected a regression, kbench saw an improvement; a miss outranks a case not judged.
        f = self.cases_file(case("wrong", "2.1.1", "regression"), case("open", "2.3.0", "regression"),
                            case("fine", "2.0.2", "regression"))
        proc, _, summary = self.run_scenario("--cases-file", f, "--cases", "wrong,open,fine")
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertEqual(self.statuses(summary), {"wrong": ("improvement", "not found"),
                                                  "open": ("inconclusive", "not judged"),
                                                  "fine": ("regression", "found")})
        self.assertIn("1 of 3 case(s) found, 1 not found, 1 not judged", proc.stderr)

    def test_unchanged_and_mixed_are_misses(self):
        f = self.cases_file(case("flat", "2.2.0", "improvement"), case("both", "2.6.1", "regression"),
                            case("alarm", "2.0.2", "none", measures="control"))
        proc, _, summary = self.run_scenario("--cases-file", f, "--cases", "all")
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertEqual(self.statuses(summary), {"flat": ("unchanged", "not found"),
                                                  "both": ("mixed", "not found"),
                                                  "alarm": ("regression", "not found")})

    def test_inconclusive_and_failed_exit_3(self):
        f = self.cases_file(case("open", "2.3.0", "improvement"), case("broken", "2.5.0", "regression"),
                            case("errors", "2.8.0", "regression"), case("ok", "2.1.1", "improvement"))
        proc, _, summary = self.run_scenario("--cases-file", f, "--cases", "open,broken,errors,ok")
        self.assertEqual(proc.returncode, 3, proc.stderr)
        st = self.statuses(summary)
        self.assertEqual(st["open"], ("inconclusive", "not judged"))
        self.assertEqual(st["broken"], ("failed", "not judged"))
        self.assertEqual(st["errors"], ("inconclusive", "not judged"))
        self.assertEqual(st["ok"], ("improvement", "found"))
        self.assertRegex(proc.stderr, r"note +scripts/bench-commits exited 3 without a verdict")
        self.assertRegex(proc.stderr, r"note +Produce/send/x \(new side\): delivery failed")

    def test_a_case_decided_on_one_metric(self):
        # bench-commits' own verdict (a regression of the primary metric) does not decide:
        # scripts/compare --metric on its base.json and new.json does.
        f = self.cases_file(case("cpu", "2.0.2", "improvement", metric="cpu_us_per_record"))
        proc, out, summary = self.run_scenario("--cases-file", f, "--cases", "cpu")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        bench, compare = self.calls()
        cdir = os.path.join(out, "cases", "cpu")
        self.assertEqual(compare, [os.path.join(cdir, "base.json"), os.path.join(cdir, "new.json"),
                                   "--metric", "cpu_us_per_record"])
        self.assertTrue(os.path.isfile(os.path.join(cdir, "verdict-cpu_us_per_record.json")))
        self.assertEqual(self.statuses(summary), {"cpu": ("improvement", "found")})
        self.assertRegex(proc.stderr, r"deciding +Produce/send/x cpu_us_per_record: -40\.0 %")

    def test_a_control_that_stays_inconclusive_is_not_judged(self):
        # A control is found only when its deciding rows are proven unchanged: one that
        # decided nothing has shown nothing.
        f = self.cases_file(case("ctl", "2.3.0", "none", measures="control"))
        proc, _, summary = self.run_scenario("--cases-file", f, "--cases", "ctl")
        self.assertEqual(proc.returncode, 3, proc.stderr)
        self.assertEqual(self.statuses(summary), {"ctl": ("inconclusive", "not judged")})

    def test_tree_cases_without_a_tree_are_not_judged(self):
        f = self.cases_file(case("tree", "tree:abc123", "improvement", a="tree:abc122"))
        proc, _, summary = self.run_scenario("--cases-file", f, "--cases", "tree")
        self.assertEqual(proc.returncode, 3, proc.stderr)
        self.assertEqual(self.statuses(summary), {"tree": ("not run", "not judged")})
        self.assertEqual(self.calls(), [])
        self.assertIn("--librdkafka-tree", proc.stderr)
        # With a tree, the sides name it.
        proc, _, summary = self.run_scenario("--cases-file", f, "--cases", "tree",
                                             "--librdkafka-tree", self.dir)
        (argv,) = self.calls()
        self.assertEqual(argv[argv.index("--librdkafka-a") + 1], "tree:%s@abc122" % self.dir)

    def test_tiny_runs_two_short_rounds_of_the_control(self):
        proc, _, summary = self.run_scenario("--tiny")
        (argv,) = self.calls()
        self.assertEqual(argv[argv.index("--runs") + 1], "2")
        self.assertIn("--window-seconds=0.5", argv)
        self.assertEqual([c["id"] for c in summary["cases"]], ["control-aa"])

    def test_full_runs_16_rounds(self):
        f = self.cases_file(case("reg", "2.0.2", "regression"))
        self.run_scenario("--cases-file", f, "--cases", "reg", "--scale", "full")
        (argv,) = self.calls()
        self.assertEqual(argv[argv.index("--runs") + 1], "16")

    def test_exit_status_through_scripts_scenario(self):
        f = self.cases_file(case("wrong", "2.1.1", "regression"))
        proc, _, _ = self.run_scenario("--cases-file", f, "--cases", "wrong")
        self.assertEqual(proc.returncode, 1, proc.stderr)
        f = self.cases_file(case("open", "2.3.0", "regression"))
        proc, _, _ = self.run_scenario("--cases-file", f, "--cases", "open")
        self.assertEqual(proc.returncode, 3, proc.stderr)

    def test_bad_usage_exits_2_before_running(self):
        good = self.cases_file(case("reg", "2.0.2", "regression"))
        bad_field = self.cases_file(case("reg", "2.0.2", "sideways"))
        short = self.cases_file("x\tthroughput\tsystem\n")
        for args, pattern in (
                (["--cases-file", good, "--cases", "nope"], r"unknown case 'nope' \(known: reg\)"),
                (["--cases-file", bad_field], r"expect 'sideways' is not one of"),
                (["--cases-file", short], r"3 TAB-separated fields, want 11"),
                (["--cases-file", os.path.join(self.dir, "missing.tsv")], r"no cases file"),
                (["--bootstrap", "localhost:9092"], r"--bootstrap cannot be used"),
                (["--librdkafka-tree", os.path.join(self.dir, "nowhere")], r"is not a directory"),
                (["--cases"], r"argument --cases: expected one argument"),
                (["--cases-file", self.cases_file(case("m", "2.0.2", "regression", target="mock@3.9.1"))],
                 r"target 'mock@3.9.1': only plaintext@X.Y.Z or ssl@X.Y.Z pin a Kafka release")):
            with self.subTest(args=args):
                proc, _, _ = self.run_scenario(*args)
                self.assertEqual(proc.returncode, 2, proc.stderr)
                self.assertRegex(proc.stderr, r"known-regressions: error: .*" + pattern)
        self.assertEqual(self.calls(), [])


class CaseTable(unittest.TestCase):
    """The shipped table: the Nagle pair and at least one throughput and one more latency
    case, each with a documented source, all parseable."""

    def setUp(self):
        from kbench.scenario_runner import sibling
        report = sibling(RUN, "report")
        self.cases = report.select(report.load_cases(CASES), "all")

    def test_the_nagle_pair(self):
        nagle = [c for c in self.cases if {c["a"], c["b"]} == {"2.8.0", "2.10.0"}
                 and c["target"] == "ssl"]
        self.assertTrue(nagle, "no 2.8.0/2.10.0 case on a TLS broker")
        for c in nagle:
            self.assertEqual(c["expect"], "regression" if c["b"] == "2.8.0" else "improvement")
            self.assertIn("#4986", c["source"])
            self.assertRegex(c["args"], r"rate=1000\b")

    def test_more_than_the_nagle_pair(self):
        # A throughput or CPU change of its own, and latency on more than one workload.
        others = [c for c in self.cases if "2.10.0" not in (c["a"], c["b"])]
        self.assertTrue({"throughput", "cpu"} & {c["measures"] for c in others})
        latency = {(c["filter"], c["args"]) for c in self.cases if c["measures"] == "latency"}
        self.assertGreaterEqual(len(latency), 2)

    def test_release_level_cases(self):
        # librdkafka's own release history: the 1.7.0 wake-up regression (#3538) and its fix
        # in 1.9.0, decided on CPU per record at a fixed rate; the linger.ms default of 1.5.0
        # in the as-shipped lens, decided on produce latency.
        by_pair = {(c["a"], c["b"]): c for c in self.cases}
        for pair, expect, metric in ((("tree:v1.6.1", "tree:v1.7.0"), "regression", "cpu_us_per_record"),
                                     (("tree:v1.8.2", "tree:v1.9.0"), "improvement", "cpu_us_per_record"),
                                     (("tree:v1.4.0", "tree:v1.5.0"), "regression", "p50_us")):
            with self.subTest(pair=pair):
                self.assertIn(pair, by_pair)
                c = by_pair[pair]
                self.assertEqual((c["expect"], c["metric"]), (expect, metric))
                self.assertRegex(c["args"], r"rate=\d+")
        self.assertIn("settings=shipped", by_pair[("tree:v1.4.0", "tree:v1.5.0")]["args"])
        # 1.6.1 and 1.7.0 cannot read end offsets from Kafka 4.x (KIP-896): a pinned 3.9.1.
        self.assertEqual(by_pair[("tree:v1.6.1", "tree:v1.7.0")]["target"], "plaintext@3.9.1")
        self.assertIn("--mock=process", by_pair[("tree:v1.4.0", "tree:v1.5.0")]["args"])

    def test_every_case_has_a_source(self):
        for c in self.cases:
            if c["measures"] != "control":
                self.assertRegex(c["source"], r"(CHANGELOG|#\d+)", c["id"])


if __name__ == "__main__":
    if sys.argv[1:2] == ["--scenario"]:
        run_scenario_with_fakes(sys.argv[2:])
    sys.exit(unittest.main())
