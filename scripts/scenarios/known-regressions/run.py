"""known-regressions — kbench's own acceptance test: documented librdkafka performance
changes (cases.tsv beside this file), each replayed with bench-commits on one kbench build
(HEAD's), on the target the case names (the mock cluster, or a plaintext or TLS broker
started here), and whether kbench finds each in the documented direction. Exit status: 0
every case found, 1 a case missed, 2 bad usage, 3 a case not judged (inconclusive, a run
failed, a tree: case without --librdkafka-tree)."""

import json
import os
import pathlib
import sys
import time

from kbench import build_stamp, git, proc
from kbench import scenario as ks
from kbench.cli import die, info
from kbench.commands import bench_commits, compare
from kbench.proc import output_to
from kbench.scenario_runner import Scenario, kafka_version, sibling

report = sibling(__file__, "report")
CASES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cases.tsv")


def add_arguments(parser):
    parser.add_argument("--cases", metavar="ID,...",
                        help="run only these cases, or all (default: every case but the controls; "
                             "at --tiny: control-aa)")
    parser.add_argument("--cases-file", metavar="FILE", default=CASES,
                        help="cases of your own, in the columns of cases.tsv")
    parser.add_argument("--librdkafka-tree", metavar="DIR", default=os.environ.get("KBENCH_LIBRDKAFKA_TREE", ""),
                        help="a librdkafka git repository for the tree:REV sides (e.g. a clone of "
                             "https://github.com/confluentinc/librdkafka); without it those cases "
                             "are not run and count as not judged")
    parser.add_argument("--build-cache", metavar="DIR", default=build_stamp.cache_dir("bench-commits"),
                        help="where bench-commits keeps its build of HEAD: one build for every case "
                             "(default: $KBENCH_CACHE/bench-commits)")


class Run:
    """The cases of one scenario run, and the clusters they share."""

    def __init__(self, scn, args):
        self.scn, self.args = scn, args
        self.clusters = {}  # one (bootstrap, client config) per security kind and version
        self.rounds = ["--runs", "2"] if scn.tiny else ["--runs", "16"] if scn.scale == "full" else []
        self.timing = ["--window-seconds=0.5", "--warmup-seconds=0.2"] if scn.tiny else []
        # One kbench commit for every case, even if HEAD moves while the scenario runs.
        self.commit = git.head(scn.root)
        if not self.commit:
            die("%s is not a git checkout with a commit (bench-commits builds kbench from one)" % scn.root)
        scn.note("kbench commit " + self.commit)

    def cluster_args(self, target):
        """kbench's options for TARGET (mock, plaintext or ssl, optionally @VERSION) and the broker's
        version ("" on mock); one cluster per kind and version, started when a case first needs it."""
        if target == "mock":
            return [], ""
        kind, _, version = target.partition("@")
        version = version or kafka_version()
        key = "%s-%s" % (kind, version)
        if key not in self.clusters:
            self.clusters[key] = self.scn.cluster_start(key, 1, version, kind)
        bootstrap, config = self.clusters[key]
        return ["--bootstrap=" + bootstrap] + (["--client-config=" + config] if kind != "plaintext" else []), version

    def side(self, spec):
        """The --librdkafka-a/-b value of a case's side."""
        return "tree:%s@%s" % (self.args.librdkafka_tree, spec[5:]) if spec.startswith("tree:") else spec

    def run_case(self, case):
        """bench-commits into OUT/cases/ID (and compare --metric into verdict-METRIC.json for a case
        decided on one metric), then case.json with its exit status, wall time and commands."""
        cid, a, b, metric = case["id"], case["a"], case["b"], case["metric"]
        d, start = os.path.join(self.scn.out, "cases", cid), time.monotonic()
        os.makedirs(d, exist_ok=True)
        record = {"id": cid, "seconds": 0, "exit_code": None, "note": None, "metric_exit_code": None,
                  "metric_command": None, "command": []}
        if not self.args.librdkafka_tree and "tree:" in a + b:
            info("case %s: not run: its sides are commits of a librdkafka tree (--librdkafka-tree DIR)" % cid)
            record["note"] = "not run: needs --librdkafka-tree DIR (a librdkafka git repository)"
        else:
            cluster, version = self.cluster_args(case["target"])
            argv = [self.commit, self.commit, "--librdkafka-a", self.side(a), "--librdkafka-b", self.side(b),
                    "--filter", case["filter"], "--out-dir", d, "--build-cache", self.args.build_cache,
                    *self.rounds, "--", *case["args"].split(), *cluster, *self.timing]
            record["command"] = ["scripts/bench-commits", *argv]
            self.scn.note(proc.quote(record["command"]))
            info("case %s: %s -> %s on %s (log: %s/bench-commits.log)" % (cid, self.side(a), self.side(b),
                                                                          case["target"], d))
            # The broker's version goes into the run context (kbench cannot ask the broker for it).
            before = dict(os.environ)
            if version:
                os.environ["KBENCH_BROKER_VERSION"] = version
            try:
                with output_to(d + "/bench-commits.log"):
                    record["exit_code"] = bench_commits.run(bench_commits.parse(argv)) or 0
            except SystemExit as e:  # it ended the way a command does
                record["exit_code"] = e.code if isinstance(e.code, int) else 1
            finally:
                os.environ.clear()
                os.environ.update(before)
            info("case %s: bench-commits exited %d after %d s" % (cid, record["exit_code"], time.monotonic() - start))
            base, new = d + "/base.json", d + "/new.json"
            if metric != "-" and all(os.path.isfile(p) and os.path.getsize(p) for p in (base, new)):
                out = "%s/verdict-%s.json" % (d, metric)
                record["metric_command"] = proc.quote(["scripts/compare", base, new, "--metric", metric, "--out", out])
                self.scn.note(record["metric_command"])
                with output_to("%s/compare-%s.txt" % (d, metric)):
                    verdict = compare.judge([base], [new], metric=metric)
                    compare.write(verdict, json_path=out)
                record["metric_exit_code"] = compare.exit_code(verdict)
                info("case %s: compare --metric %s exited %s" % (cid, metric, record["metric_exit_code"]))
            record["seconds"] = int(time.monotonic() - start)
        pathlib.Path(d, "case.json").write_text(json.dumps(record, indent=1), encoding="utf-8")


def main(args):
    if args.bootstrap:
        die("known-regressions starts the cluster each case needs (plaintext or TLS); --bootstrap cannot be used")
    if not os.path.isfile(args.cases_file):
        die("no cases file %s" % args.cases_file)
    if args.librdkafka_tree:
        if not os.path.isdir(args.librdkafka_tree):
            die("--librdkafka-tree %s is not a directory" % args.librdkafka_tree)
        args.librdkafka_tree = os.path.abspath(args.librdkafka_tree)
    selected = args.cases or ("control-aa" if args.tiny else None)
    try:
        cases = report.select(report.load_cases(args.cases_file), selected)
    except ks.ScenarioError as e:
        die(e)
    with Scenario(args, __file__) as scn:
        run = Run(scn, args)
        for case in cases:
            run.run_case(case)
        scn.report("--cases-file", args.cases_file, *(["--cases", selected] if selected else []))
        try:
            code = json.loads(pathlib.Path(scn.out, "summary.json").read_text(encoding="utf-8"))["exit_code"]
            sys.stderr.write(pathlib.Path(scn.out, "summary.txt").read_text(encoding="utf-8"))
        except (OSError, ValueError, KeyError):
            die("no exit code in %s/summary.json" % scn.out, 1)
        return code

