"""known-regressions — kbench's own acceptance test: documented librdkafka performance
changes (cases.tsv beside this file), each replayed with scripts/bench-commits, and
whether kbench finds each one in the documented direction.
Run through scripts/scenario; see README.md beside this file."""

import os
import re
import subprocess
import sys
import time

from kbench import shell
from kbench.cli import die, info
from kbench.scenario_runner import Scenario, kafka_version

USAGE = """Usage: scripts/scenario known-regressions [--scale small|full] [--out DIR] [--tiny]
           [--cases ID,...] [--cases-file FILE] [--librdkafka-tree DIR] [--build-cache DIR]

Replays documented librdkafka performance changes, one case per line of
%(cases_file)s
(pair of librdkafka releases or commits, workload, expected direction, source), each with
C = the commit HEAD is at when the scenario starts (one kbench build for every case):

  scripts/bench-commits C C --librdkafka-a A --librdkafka-b B --filter F -- ARGS

on the target the case names (librdkafka's mock cluster, or one local broker, plaintext or
TLS, that this scenario starts and stops), and prints per case the expected direction,
what kbench found (regression, improvement, mixed, unchanged, inconclusive, failed), the
deciding and the significant rows, found or not found, and the time it took.

Cases:
%(cases)s

Options:
  --cases ID,...        run only these cases (default: every case but the controls; at
                        --tiny: control-aa)
  --cases-file FILE     cases of your own, in the columns of cases.tsv
  --librdkafka-tree DIR a librdkafka git repository for the tree:REV sides (or
                        KBENCH_LIBRDKAFKA_TREE), e.g. a clone of
                        https://github.com/confluentinc/librdkafka; without it those cases
                        are not run and count as not judged
  --build-cache DIR     where scripts/bench-commits keeps its build of HEAD (default
                        ${KBENCH_CACHE:-~/.cache/kbench}/bench-commits): one build for every case

  small   scripts/bench-commits' defaults: 8 paired rounds per case
  full    16 paired rounds per case
  --tiny  2 rounds of 0.5-second windows (CI: proves the pipeline; 2 rounds decide nothing,
          so its control is not judged and the run exits 3)

Writes DIR/cases/ID/ (scripts/bench-commits' verdict.json, base.json, new.json, runs/,
bench-commits.log, case.json), DIR/summary.json, DIR/report.md, DIR/known-regressions.png.
Exit status: 0 every case found, 1 a case missed (kbench judged it and found something
else), 2 bad usage, 3 a case could not be judged (inconclusive, a run failed, no tree).
Environment: KBENCH_BENCH_COMMITS (default scripts/bench-commits), KBENCH_COMPARE (default
scripts/compare), KBENCH_KAFKA_VERSION (the broker, default 4.4.0).
"""
OPTIONS = {"--cases": "select", "--cases-file": "cases_file", "--librdkafka-tree": "tree",
           "--build-cache": "build_cache"}


def case_lines(path):
    """The usage's line per case of PATH."""
    try:
        with open(path, errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return ""
    out = []
    for line in lines:
        if not re.match(r"[ \t\n\v\f\r]*(#|$)", line):
            f = line.split("\t") + [""] * 9
            out.append("  %-18s %-10s %s -> %s on %s, expect %s" % (f[0], f[1], f[2], f[3], f[4], f[8]))
    return "\n".join(out)


def quoted(cmd):
    """CMD as bash's "${cmd[*]@Q}" writes it: every word in single quotes."""
    return " ".join("'%s'" % w.replace("'", "'\\''") if w.isprintable() else shell.bash_quote(w)
                    for w in cmd)


class Run:
    """The cases of one scenario run, and the clusters they share."""

    def __init__(self, scn):
        self.scn = scn
        self.select, self.tree = "", os.environ.get("KBENCH_LIBRDKAFKA_TREE", "")
        self.cases_file = os.path.join(scn.dir, "cases.tsv")
        cache = os.environ.get("KBENCH_CACHE") or os.path.expanduser("~/.cache/kbench")
        self.build_cache = cache + "/bench-commits"
        self.clusters = {}  # one (bootstrap, client config) per security kind

    def usage(self):
        return USAGE % {"cases_file": self.cases_file, "cases": case_lines(self.cases_file)}

    def extra_arg(self, rest):
        """OPTION VALUE or OPTION=VALUE (parse hands over the options it does not know)."""
        opt, eq, value = rest[0].partition("=")
        if opt not in OPTIONS:
            return 0
        if not eq:
            value = rest[1] if len(rest) > 1 else ""
        if not value:
            die("%s needs a value" % opt)
        setattr(self, OPTIONS[opt], value)
        return 1 if eq else 2

    def report_py(self, *args, **kwargs):
        return self.scn.run([sys.executable, os.path.join(self.scn.dir, "report.py"), *args], **kwargs)

    def cluster_args(self, target):
        """kbench's options for TARGET (mock, plaintext or ssl, optionally @VERSION of Kafka),
        and the broker's version ("" on the mock cluster). One cluster per security kind and
        version, started when the first case needs it, stopped on exit."""
        if target == "mock":
            return [], ""
        kind, _, version = target.partition("@")
        version = version or kafka_version()
        key = "%s-%s" % (kind, version)
        if key not in self.clusters:
            self.clusters[key] = self.scn.cluster_start(key, 1, version, kind)
        bootstrap, config = self.clusters[key]
        args = ["--bootstrap=" + bootstrap]
        if kind != "plaintext":
            args.append("--client-config=" + config)
        return args, version

    def side(self, spec):
        """The --librdkafka-a/-b value of a case's side."""
        return "tree:%s@%s" % (self.tree, spec[5:]) if spec.startswith("tree:") else spec

    def write_case(self, case_id, secs, rc, note, *rest):
        """OUT/cases/ID/case.json: EXIT, NOTE [METRIC_EXIT METRIC_COMMAND COMMAND...]."""
        self.report_py("case", "%s/cases/%s/case.json" % (self.scn.out, case_id), case_id, str(secs),
                       rc, note, *rest)

    def run_case(self, case_id, a, b, target, filter_, args, metric):
        """scripts/bench-commits into OUT/cases/ID (and, for a case decided on one METRIC,
        scripts/compare --metric METRIC on its base.json and new.json into
        verdict-METRIC.json), then case.json with its exit status, wall time and commands."""
        scn, d, start = self.scn, "%s/cases/%s" % (self.scn.out, case_id), time.monotonic()
        os.makedirs(d, exist_ok=True)
        if not self.tree and (a.startswith("tree:") or b.startswith("tree:")):
            info("case %s: not run: its sides are commits of a librdkafka tree (--librdkafka-tree DIR)"
                 % case_id)
            self.write_case(case_id, 0, "", "not run: needs --librdkafka-tree DIR (a librdkafka git repository)")
            return
        cluster, version = self.cluster_args(target)
        cmd = [self.bench_commits, self.commit, self.commit, "--librdkafka-a", self.side(a),
               "--librdkafka-b", self.side(b), "--filter", filter_, "--out-dir", d,
               "--build-cache", self.build_cache, *self.rounds, "--", *args.split(), *cluster,
               *self.timing]
        scn.note(quoted(cmd))
        info("case %s: %s -> %s on %s (log: %s/bench-commits.log)"
             % (case_id, self.side(a), self.side(b), target, d))
        # The broker's version goes into the run context (kbench cannot ask the broker for it).
        env = dict(os.environ, KBENCH_BROKER_VERSION=version) if version else None
        with open(d + "/bench-commits.log", "wb") as log:
            rc = shell.exit_status(scn.run(cmd, stdout=log, stderr=subprocess.STDOUT, env=env).returncode)
        info("case %s: scripts/bench-commits exited %d after %d s" % (case_id, rc, time.monotonic() - start))
        mcmd, mrc = [], ""
        if metric != "-" and all(os.path.isfile(p) and os.path.getsize(p) for p in
                                 (d + "/base.json", d + "/new.json")):
            mcmd = [self.compare, d + "/base.json", d + "/new.json", "--metric", metric,
                    "--out", "%s/verdict-%s.json" % (d, metric)]
            scn.note(quoted(mcmd))
            with open("%s/compare-%s.txt" % (d, metric), "wb") as log:
                mrc = str(shell.exit_status(scn.run(mcmd, stdout=log, stderr=subprocess.STDOUT).returncode))
            info("case %s: scripts/compare --metric %s exited %s" % (case_id, metric, mrc))
        self.write_case(case_id, int(time.monotonic() - start), str(rc), "", mrc, quoted(mcmd), *cmd)

    def main(self, argv):
        scn = self.scn
        scn.parse(argv, self.usage, self.extra_arg)
        if scn.bootstrap:
            die("known-regressions starts the cluster each case needs (plaintext or TLS); "
                "--bootstrap cannot be used")
        if not os.path.isfile(self.cases_file):
            die("no cases file %s" % self.cases_file)
        if self.tree:
            if not os.path.isdir(self.tree):
                die("--librdkafka-tree %s is not a directory" % self.tree)
            self.tree = os.path.abspath(self.tree)
        self.bench_commits = os.environ.get("KBENCH_BENCH_COMMITS") or scn.script("bench-commits")
        self.compare = os.environ.get("KBENCH_COMPARE") or scn.script("compare")
        for tool in (self.bench_commits, self.compare):
            if not os.access(tool, os.X_OK):
                die("%s is not executable" % tool)

        # The table is checked (and the selection resolved) by report.py, so that one parser
        # reads it: "plan" prints the selected cases, one per line, fields separated by TABs.
        plan_args = ["--cases-file", self.cases_file]
        if self.select:
            plan_args += ["--cases", self.select]
        elif scn.tiny:
            plan_args += ["--cases", "control-aa"]
        proc = self.report_py("plan", *plan_args, stdout=subprocess.PIPE)
        if proc.returncode != 0:
            sys.exit(proc.returncode)

        if scn.tiny:
            self.rounds, self.timing = ["--runs", "2"], ["--window-seconds=0.5", "--warmup-seconds=0.2"]
        elif scn.scale == "full":
            self.rounds, self.timing = ["--runs", "16"], []
        else:
            self.rounds, self.timing = [], []
        os.makedirs(scn.out + "/cases", exist_ok=True)
        # One kbench commit for every case, even if HEAD moves while the scenario runs.
        head = subprocess.run(["git", "-C", scn.root, "rev-parse", "--verify", "-q", "HEAD^{commit}"],
                              stdout=subprocess.PIPE, text=True)
        if head.returncode != 0:
            die("%s is not a git checkout with a commit (scripts/bench-commits builds kbench from one)"
                % scn.root)
        self.commit = head.stdout.strip()
        scn.note("kbench commit " + self.commit)

        for line in proc.stdout.decode().splitlines():
            # As bash's `read` with IFS=TAB: empty fields do not count.
            fields = [f for f in line.split("\t") if f]
            if fields:
                case_id, _, a, b, target, filter_, args, metric = (fields + [""] * 8)[:8]
                self.run_case(case_id, a, b, target, filter_, args, metric)

        scn.report(*plan_args)
        proc = self.report_py("exit-code", scn.out + "/summary.json", stdout=subprocess.PIPE, text=True)
        if proc.returncode != 0:
            die("no exit code in %s/summary.json" % scn.out, 1)
        shell.show_log(scn.out + "/summary.txt")
        return int(proc.stdout)


def main(argv):
    with Scenario("known-regressions", __file__) as scn:
        return Run(scn).main(argv)
