"""What every scenario's runner (scripts/scenarios/NAME/run.py) shares: the common options,
the clusters it starts on free ports (and always stops), kbench runs that leave their command
line and console output next to the JSON, and the scenario's own report.py. A runner is a
module whose docstring is its --help, with add_arguments(parser) (optional) and main(args):

    def main(args):
        with Scenario(args, __file__) as scn:   # checks, makes OUT; a dry run ends here
            scn.local_cluster("single", 1)      # leaving the with stops every cluster started
            scn.kbench(scn.out + "/producer-sharing.json", [...])
            scn.report("--note", "...")
"""

import argparse
import contextlib
import glob
import importlib.util
import os
import pathlib
import re
import signal
import subprocess
import sys
import time

import kbench
from kbench import cli, git, proc
from kbench import kafka_cluster as kafka
from kbench import results as kr
from kbench.cli import die, info
from kbench.jvm_service import terminate

BOOTSTRAP = re.compile(r"[^,:\s]+:[0-9]+(,[^,:\s]+:[0-9]+)*")
KAFKA_VERSION = "4.4.0"  # the broker a scenario starts unless KBENCH_KAFKA_VERSION says


def kafka_version(default=KAFKA_VERSION):
    return os.environ.get("KBENCH_KAFKA_VERSION") or default


def bootstrap_list(text):
    if not BOOTSTRAP.fullmatch(text):
        raise argparse.ArgumentTypeError("must be HOST:PORT[,HOST:PORT...], got '%s'" % text)
    return text


def add_common_arguments(parser):
    """The options every scenario has."""
    parser.add_argument("--scale", choices=("small", "full"), default="small",
                        help="small (default): a subset that finishes within ~15 minutes on a "
                             "2-core machine; full: the original's sizes (hours)")
    parser.add_argument("--tiny", action="store_true",
                        help="the CI scale: seconds per case, only proves the pipeline works")
    parser.add_argument("--out", metavar="DIR", default="",
                        help="results folder (default: results/scenarios/NAME/<YYYYmmdd-HHMMSS>-<sha>/)")
    parser.add_argument("--bootstrap", metavar="HOST:PORT", type=bootstrap_list,
                        help="use this cluster instead of starting one (the scenario checks that "
                             "it fits, e.g. enough brokers, and exits 2 if not)")


class Scenario:
    """One scenario run: its options, its output folder OUT, the clusters it started."""

    def __init__(self, args, runner_file):
        self.args, self.name = args, args.scenario
        cli.prog = "scripts/scenario " + self.name
        self.dir = os.path.dirname(os.path.abspath(runner_file))  # its report.py, README.md
        self.root = os.environ.setdefault("KBENCH_ROOT", kbench.ROOT)
        self.bin = os.environ.setdefault("KBENCH_BIN", os.path.join(self.root, "build", "kbench"))
        self.scale, self.out, self.bootstrap, self.tiny = args.scale, args.out, args.bootstrap or "", args.tiny
        self.tiny_arg = ["--tiny"] if self.tiny else []
        self.failed, self.notes, self.started = [], [], []
        self.t0 = time.monotonic()
        if self.out:
            cli.check_out_dir(self.out, "--out")

    def __enter__(self):
        """A dry run (KBENCH_DRY_RUN=1) ends here; else OUT is made and TERM ends the scenario as Ctrl-C does."""
        cli.dry_run_exit()
        if not os.access(self.bin, os.X_OK):
            if self.bin != os.path.join(self.root, "build", "kbench"):
                die("KBENCH_BIN=%s is not executable" % self.bin)
            build_kbench(self.root)
        self.out = self.args.out = os.path.abspath(
            self.out or os.path.join(self.root, "results", "scenarios", self.name, git.run_stamp(self.root)))
        try:
            os.makedirs(os.path.join(self.out, "logs"), exist_ok=True)
        except OSError:
            die("cannot create %s" % self.out)
        self.term = signal.signal(signal.SIGTERM, terminate)
        self.note("scenario %s, scale %s%s, out %s" % (self.name, self.scale, " (tiny)" if self.tiny else "", self.out))
        return self

    def __exit__(self, *exc):
        interrupt = signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        try:
            for d in self.started:
                info("stopping the Kafka cluster in %s" % d)
                try:
                    kafka.stop(d)
                except Exception as e:  # the clean-up goes on with the next cluster
                    info("warning: stopping %s failed: %s" % (d, e))
            self.started = []
        finally:
            signal.signal(signal.SIGINT, interrupt)
            signal.signal(signal.SIGTERM, self.term)
        return False

    def note(self, line):
        """Everything a scenario ran, in order, so a result can be reproduced by hand."""
        with open(os.path.join(self.out, "commands.txt"), "a") as f:
            f.write(line + "\n")

    def elapsed(self):
        """Wall-clock seconds since the scenario began, for the report."""
        return int(time.monotonic() - self.t0)

    def run_together(self, jobs):
        """Every (command, log path) of JOBS at once; their exit statuses."""
        procs = []
        try:
            for cmd, log in jobs:
                with open(log, "wb") as f:
                    procs.append(subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT))
            return [p.wait() for p in procs]
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()

    def cluster_start(self, tag, brokers, version, security="plaintext", directory=None):
        """(bootstrap, client config file) of a cluster under OUT/kafka-TAG on free ports, stopped
        on leaving the scenario whatever happens (stop deletes its certificates and passwords)."""
        d = directory or os.path.join(self.out, "kafka-" + tag)
        self.started.append(d)
        self.note(proc.quote(["scripts/kafka", "start", "--dir", d, "--brokers", brokers, "--version",
                              version, "--security", security, "--port-base", "auto"]))
        info("starting Kafka %s with %s broker(s), security %s..." % (version, brokers, security))
        try:
            bootstrap = kafka.start(d, brokers=brokers, version=version, security=security)
        except kafka.KafkaError as e:
            die("could not start Kafka %s: %s" % (version, e), getattr(e, "status", 1))
        info("Kafka %s is up at %s" % (version, bootstrap))
        return bootstrap, os.path.join(d, "client.properties")

    def local_cluster(self, tag, brokers):
        """A cluster of Kafka kafka_version() as the scenario's bootstrap and the runs' broker."""
        version = kafka_version()
        self.bootstrap, _ = self.cluster_start(tag, brokers, version)
        os.environ["KBENCH_BROKER_VERSION"] = version

    def require_brokers(self, bootstrap, n):
        """Exit 2 when the cluster has fewer than N brokers, as a trivial kbench run counts them."""
        probe = os.path.join(self.out, "logs", "probe-%d.json" % os.getpid())
        log = os.path.join(self.out, "logs", "probe.log")
        rc = proc.run([self.bin, "--bootstrap=" + bootstrap, "--produce", "acks=1,record_bytes=10,partitions=1",
                       "--records-per-iteration=10", "--benchmark_filter=^Produce/",
                       "--benchmark_out=" + probe, "--benchmark_out_format=json"],
                      log=log, env=dict(os.environ, KBENCH_FIXED_ITERATIONS="1")).returncode
        if rc != 0:
            show_tail(log, 5)
            die("cannot reach a Kafka cluster at %s (log: %s)" % (bootstrap, log))
        try:
            have = int(kr.load(probe)["context"]["broker_count"])
        except (kr.BenchmarkJsonError, KeyError, TypeError, ValueError):
            die("the probe run's context has no broker_count", 1)
        os.remove(probe)
        if have < n:
            die("%s needs a cluster of at least %d brokers, but %s has %d; run without "
                "--bootstrap to start a %d-broker cluster here" % (self.name, n, bootstrap, have, n))
        info("cluster at %s has %d broker(s)" % (bootstrap, have))

    def log_of(self, json_path):
        """The console log of the kbench run that writes JSON_PATH."""
        return os.path.join(self.out, "logs", os.path.basename(json_path)[:-len(".json")] + ".log")

    def kbench_command(self, json_path, args):
        return [self.bin] + list(args) + ["--benchmark_out=" + json_path, "--benchmark_out_format=json"]

    def note_kbench(self, json_path, args, suffix=""):
        """commands.txt's line for one kbench run, with the environment it inherits."""
        env = "".join("%s=%s " % (k, os.environ[k]) for k in ("LD_LIBRARY_PATH", "KBENCH_BROKER_VERSION")
                      if os.environ.get(k))
        self.note(env + proc.quote(self.kbench_command(json_path, args)) + suffix)

    def run_kbench(self, json_path, args):
        """One kbench run, noted in commands.txt, JSON to JSON_PATH, console to log_of(); ok?"""
        self.note_kbench(json_path, args)
        return proc.run(self.kbench_command(json_path, args), log=self.log_of(json_path)).returncode == 0

    def kbench(self, json_path, args):
        """run_kbench, and the scenario ends if it fails."""
        if not self.run_kbench(json_path, args):
            show_tail(self.log_of(json_path), 15)
            die("kbench failed (full output: %s)" % self.log_of(json_path), 1)

    def try_kbench(self, name, tag, what, args):
        """One kbench run, JSON to OUT/raw/NAME.json; a failure is recorded as TAG and the scenario goes on."""
        json_path = os.path.join(self.out, "raw", name + ".json")
        if not self.run_kbench(json_path, args):
            self.fail(tag, what, [self.log_of(json_path)])
            pathlib.Path(json_path).unlink(missing_ok=True)

    def fail(self, tag, what, logs):
        """A failed run, recorded as TAG; says WHAT failed with the first error in LOGS."""
        self.failed.append(tag)
        info("%s failed: %s" % (what, first_error(logs)))

    def merge(self, out, inputs, what="results", concurrent=False):
        """OUT: INPUTS' runs concatenated (repetitions renumbered), or with CONCURRENT summed per repetition."""
        try:
            kr.write_json(out, kr.merge_runs([kr.load(p) for p in inputs], inputs, concurrent=concurrent))
        except (kr.BenchmarkJsonError, OSError) as e:
            die("%s %s failed: %s" % ("summing" if concurrent else "merging", what, e), 1)

    def merge_rounds(self, name, pattern, what="results"):
        """OUT/NAME.json: the runs of OUT/raw/PATTERN merged; False when none is there."""
        files = sorted(glob.glob(os.path.join(glob.escape(self.out), "raw", pattern)))
        if files:
            self.merge(os.path.join(self.out, name + ".json"), files, what)
        return bool(files)

    def report(self, *args):
        """The scenario's own report.py on OUT, with the scale and the wall time."""
        cmd = [sys.executable, os.path.join(self.dir, "report.py"), self.out, "--scale", self.scale,
               *self.tiny_arg, "--wall-seconds", str(self.elapsed()), *args]
        if proc.run(cmd).returncode != 0:
            die("writing the report failed", 1)
        info("report: %s/report.md" % self.out)

    def finish(self, total, what, missing, *args):
        """The report with the notes and one on the failed runs of TOTAL WHAT (MISSING: where); exit 1 if any."""
        n = len(self.failed)
        failed = "**%d of %d %s failed** and are %s: %s (their logs are in logs/)." % (
            n, total, what, missing, " ".join(self.failed))
        notes = self.notes + ([failed] if n else [])
        self.report(*[w for note in notes for w in ("--note", note)], *args)
        if n:
            die("%d of %d %s failed: %s" % (n, total, what, " ".join(self.failed)), 1)


def build_kbench(root):
    info("building kbench...")
    build = os.path.join(root, "build")
    if not os.path.isfile(os.path.join(build, "CMakeCache.txt")):
        if subprocess.run(["cmake", "-S", root, "-B", build, "-G", "Ninja"]).returncode:
            die("cmake configure failed", 1)
    if subprocess.run(["cmake", "--build", build, "--target", "kbench"]).returncode:
        die("building kbench failed", 1)


def sibling(file, name):
    """The module NAME.py beside FILE (a scenario's report.py beside its run.py)."""
    path = os.path.join(os.path.dirname(os.path.abspath(file)), name + ".py")
    folder = os.path.basename(os.path.dirname(path)).replace("-", "_")
    spec = importlib.util.spec_from_file_location("kbench_scenario_%s_%s" % (folder, name), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def show_tail(path, lines):
    """A failed run's last LINES of log, on stderr, before the error that names it."""
    text = proc.tail(path, lines)
    if text:
        print(text, file=sys.stderr)


def first_error(logs):
    """The first "error:..." or "ERROR OCCURRED..." in LOGS."""
    for path in logs:
        with contextlib.suppress(OSError):
            m = re.search(r"error:.*|ERROR OCCURRED.*", pathlib.Path(path).read_text(errors="replace"))
            if m:
                return m.group(0)
    return ""
