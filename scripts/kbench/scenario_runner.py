"""What every scenario's runner (scripts/scenarios/NAME/run.py) shares: the common options,
the clusters it starts on free ports (and always stops), kbench runs that leave their
command line and console output next to the JSON, and the scenario's own report.py.

A runner is a module with main(argv), called by scripts/scenario (kbench.commands.scenario):

    def main(argv):
        with Scenario("producer-sharing", __file__) as scn:
            scn.parse(argv, usage)       # scale, out, bootstrap, tiny; --help prints usage()
            scn.local_cluster("single", 1)
            scn.kbench(scn.out + "/producer-sharing.json", [...])
            scn.report("--note", "...")

Leaving the `with` stops every cluster the scenario started, whatever happened.
"""

import contextlib
import os
import re
import signal
import subprocess
import sys
import time

import kbench
from kbench import cli, shell
from kbench import results as kr
from kbench import scenario as ks
from kbench.cli import die, info

BOOTSTRAP = re.compile(r"[^,:\s]+:[0-9]+(,[^,:\s]+:[0-9]+)*")
KAFKA_VERSION = "4.4.0"  # the broker a scenario starts unless KBENCH_KAFKA_VERSION says


def kafka_version(default=KAFKA_VERSION):
    return os.environ.get("KBENCH_KAFKA_VERSION") or default


class Scenario:
    """One scenario run: its options, its output folder OUT, the clusters it started."""

    def __init__(self, name, runner_file):
        self.name = name
        cli.prog = name  # messages read "NAME: ...", as each runner's always did
        self.dir = os.path.dirname(os.path.abspath(runner_file))  # its report.py, README.md
        self.root = os.environ.setdefault("KBENCH_ROOT", kbench.ROOT)
        self.bin = os.environ.setdefault("KBENCH_BIN", os.path.join(self.root, "build", "kbench"))
        self.scale, self.out, self.bootstrap, self.tiny = "small", "", "", False
        self.tiny_arg = []
        self.failed, self.notes, self.started = [], [], []
        self.trap = shell.Trap({signal.SIGINT: 130, signal.SIGTERM: 143})
        self.t0 = time.monotonic()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.trap.hold()
        for d in self.started:
            info("stopping the Kafka cluster in %s" % d)
            with open(os.path.join(self.out, "logs", "kafka-stop.log"), "ab") as log:
                rc = subprocess.run([self.script("kafka"), "stop", "--dir", d],
                                    stdout=subprocess.DEVNULL, stderr=log).returncode
            if rc != 0:
                info("warning: stopping %s failed (see %s/logs/kafka-stop.log)" % (d, self.out))
        self.started = []
        return False

    # --- the command line ------------------------------------------------------------

    def parse(self, argv, usage, extra_arg=None, check=None):
        """The common options; EXTRA_ARG(rest) takes a runner's own option at rest[0] and
        returns how many words it used (0: not its option). CHECK() then checks them; both
        before anything is made, and a dry run (KBENCH_DRY_RUN=1) ends there."""
        i = 0
        while i < len(argv):
            a, rest = argv[i], argv[i:]
            key, eq, value = a.partition("=")
            if key in ("--scale", "--out", "--bootstrap") and (eq or len(rest) >= 2):
                setattr(self, key[2:], value if eq else rest[1])
                i += 1 if eq else 2
            elif key in ("--scale", "--out", "--bootstrap"):
                die({"--scale": "--scale needs a value (small or full)",
                     "--out": "--out needs a directory",
                     "--bootstrap": "--bootstrap needs HOST:PORT"}[key])
            elif a == "--tiny":
                self.tiny, i = True, i + 1
            elif a in ("-h", "--help"):
                sys.stdout.write(usage())
                sys.exit(0)
            else:
                used = extra_arg(rest) if extra_arg else 0
                if not used:
                    die("unknown argument '%s' (see --help)" % a)
                i += used
        if self.scale not in ("small", "full"):
            die("unknown scale '%s' (known: small, full)" % self.scale)
        if self.bootstrap and not BOOTSTRAP.fullmatch(self.bootstrap):
            die("--bootstrap must be HOST:PORT[,HOST:PORT...], got '%s'" % self.bootstrap)
        if self.out:
            cli.check_out_dir(self.out, "--out")
        if check:
            check()
        cli.dry_run_exit()
        if not os.access(self.bin, os.X_OK):
            die("kbench binary not found at %s (build it: cmake --build build --target kbench, "
                "or run through scripts/scenario)" % self.bin)
        self.out = os.path.abspath(self.out or default_out(self.root, self.name))
        try:
            os.makedirs(os.path.join(self.out, "logs"), exist_ok=True)
        except OSError:
            die("cannot create %s" % self.out)
        self.tiny_arg = ["--tiny"] if self.tiny else []
        self.trap.install()
        self.note("scenario %s, scale %s%s, out %s"
                  % (self.name, self.scale, " (tiny)" if self.tiny else "", self.out))

    # --- what it records ---------------------------------------------------------------

    def note(self, line):
        """Everything a scenario ran, in order, so a result can be reproduced by hand."""
        with open(os.path.join(self.out, "commands.txt"), "a") as f:
            f.write(line + "\n")

    def elapsed(self):
        """Wall-clock seconds since the scenario began, for the report."""
        return int(time.monotonic() - self.t0)

    def script(self, name):
        return os.path.join(self.root, "scripts", name)

    def run(self, cmd, **kwargs):
        """A command, as bash runs one: a Ctrl-C or TERM meanwhile ends the scenario (and
        stops its clusters) once the command has ended."""
        return self.trap.run(cmd, **kwargs)

    def run_together(self, jobs):
        """Every (command, log path) of JOBS at once; their exit statuses."""
        with self.trap.child():
            procs = []
            for cmd, log in jobs:
                with open(log, "wb") as f:
                    procs.append(subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT))
            return [p.wait() for p in procs]

    # --- clusters ---------------------------------------------------------------------

    def cluster_start(self, tag, brokers, version, security="plaintext"):
        """(bootstrap, client config file) of a cluster under OUT/kafka-TAG, on ports free
        when it starts (scenarios, tests and scripts/bench's broker run side by side), and
        stopped on leaving the scenario, whatever happens (stop also deletes its
        certificates and passwords: nothing secret stays under OUT)."""
        d = os.path.join(self.out, "kafka-" + tag)
        self.started.append(d)
        self.note("scripts/kafka start --dir %s --brokers %s --version %s --security %s "
                  "--port-base auto" % (d, brokers, version, security))
        info("starting Kafka %s with %s broker(s), security %s..." % (version, brokers, security))
        log = os.path.join(self.out, "logs", "kafka-start-%s.log" % tag)
        with open(log, "ab") as f:
            proc = self.run([self.script("kafka"), "start", "--dir", d, "--brokers", str(brokers),
                             "--version", version, "--security", security, "--port-base", "auto"],
                            stdout=subprocess.PIPE, stderr=f)
        if proc.returncode != 0:
            shell.show_log(log, 5)
            die("could not start Kafka %s (log: %s)" % (version, log), 1)
        bootstrap = proc.stdout.decode().rstrip("\n")
        info("Kafka %s is up at %s" % (version, bootstrap))
        return bootstrap, os.path.join(d, "client.properties")

    def local_cluster(self, tag, brokers):
        """A cluster of Kafka kafka_version() started here becomes the scenario's bootstrap,
        its version the runs' KBENCH_BROKER_VERSION."""
        version = kafka_version()
        self.bootstrap, _ = self.cluster_start(tag, brokers, version)
        os.environ["KBENCH_BROKER_VERSION"] = version

    def require_brokers(self, bootstrap, n):
        """Refuses (exit 2) before anything runs when the cluster has fewer than N brokers,
        counted in the run context of a trivial kbench run (it connects and counts first)."""
        probe = os.path.join(self.out, "logs", "probe-%d.json" % os.getpid())
        log = os.path.join(self.out, "logs", "probe.log")
        with open(log, "wb") as f:
            rc = self.run([self.bin, "--bootstrap=" + bootstrap,
                           "--produce", "acks=1,record_bytes=10,partitions=1",
                           "--records-per-iteration=10", "--benchmark_filter=^Produce/",
                           "--benchmark_out=" + probe, "--benchmark_out_format=json"],
                          stdout=f, stderr=subprocess.STDOUT,
                          env=dict(os.environ, KBENCH_FIXED_ITERATIONS="1")).returncode
        if rc != 0:
            shell.show_log(log, 5)
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

    # --- kbench runs ------------------------------------------------------------------

    def log_of(self, json_path):
        """The console log of the kbench run that writes JSON_PATH."""
        return os.path.join(self.out, "logs", os.path.basename(json_path)[:-len(".json")] + ".log")

    def kbench_command(self, json_path, args):
        return [self.bin] + list(args) + ["--benchmark_out=" + json_path, "--benchmark_out_format=json"]

    def note_kbench(self, json_path, args, suffix=""):
        """commands.txt's line for one kbench run, with the environment it inherits."""
        env = "".join("%s=%s " % (k, os.environ[k]) for k in ("LD_LIBRARY_PATH", "KBENCH_BROKER_VERSION")
                      if os.environ.get(k))
        self.note(env + " ".join(self.kbench_command(json_path, args)) + suffix)

    def run_kbench(self, json_path, args):
        """One kbench run, noted in commands.txt, JSON to JSON_PATH, console to log_of(); ok?"""
        self.note_kbench(json_path, args)
        with open(self.log_of(json_path), "wb") as log:
            return self.run(self.kbench_command(json_path, args), stdout=log,
                            stderr=subprocess.STDOUT).returncode == 0

    def kbench(self, json_path, args):
        """run_kbench, and the scenario ends if it fails."""
        if not self.run_kbench(json_path, args):
            shell.show_log(self.log_of(json_path), 15)
            die("kbench failed (full output: %s)" % self.log_of(json_path), 1)

    def try_kbench(self, name, tag, what, args):
        """One kbench run, JSON to OUT/raw/NAME.json. A failure is recorded as TAG and the
        scenario goes on: one bad run should not cost the others."""
        json_path = os.path.join(self.out, "raw", name + ".json")
        if not self.run_kbench(json_path, args):
            self.fail(tag, what, [self.log_of(json_path)])
            with contextlib.suppress(FileNotFoundError):
                os.remove(json_path)

    def fail(self, tag, what, logs):
        """A failed run, recorded as TAG; says WHAT failed with the first error in LOGS."""
        self.failed.append(tag)
        info("%s failed: %s" % (what, first_error(logs)))

    # --- results and the report ------------------------------------------------------

    def merge(self, out, inputs, what="results"):
        """OUT: the runs of INPUTS concatenated (repetitions renumbered)."""
        self._combine(ks.merge_files, out, inputs, "merging %s failed" % what)

    def sum(self, out, inputs, what="results"):
        """OUT: per benchmark and repetition, the rates of concurrent processes added up."""
        self._combine(ks.sum_processes, out, inputs, "summing %s failed" % what)

    def _combine(self, combine, out, inputs, failure):
        try:
            kr.write_json(out, combine([kr.load(p) for p in inputs], inputs))
        except (ks.ScenarioError, kr.BenchmarkJsonError, OSError) as e:
            die("%s: %s" % (failure, e), 1)

    def report(self, *args):
        """The scenario's own report.py writes report.md and the charts from OUT, with the
        scale, the wall time and the common flags filled in."""
        cmd = [sys.executable, os.path.join(self.dir, "report.py"), self.out, "--scale", self.scale,
               *self.tiny_arg, "--wall-seconds", str(self.elapsed()), *args]
        if self.run(cmd).returncode != 0:
            die("writing the report failed", 1)
        info("report: %s/report.md" % self.out)

    def finish(self, total, what, missing, *args):
        """The report, with a --note per entry of notes and one on the runs that failed
        (WHAT: what TOTAL counts, MISSING: where from); then exit 1 if any did."""
        n = len(self.failed)
        notes = list(self.notes)
        if n:
            notes.append("**%d of %d %s failed** and are %s: %s (their logs are in logs/)."
                         % (n, total, what, missing, " ".join(self.failed)))
        self.report(*[w for note in notes for w in ("--note", note)], *args)
        if n:
            die("%d of %d %s failed: %s" % (n, total, what, " ".join(self.failed)), 1)


def default_out(root, name):
    """results/scenarios/<NAME>/<YYYYmmdd-HHMMSS>-<sha>"""
    return os.path.join(root, "results", "scenarios", name, shell.run_stamp(root, 12))


def first_error(logs):
    """The first "error:..." or "ERROR OCCURRED..." in LOGS, as the runners' grep found it."""
    for path in logs:
        try:
            with open(path, errors="replace") as f:
                for line in f:
                    m = re.search(r"error:.*|ERROR OCCURRED.*", line)
                    if m:
                        return m.group(0).rstrip("\n")
        except OSError:
            continue
    return ""
