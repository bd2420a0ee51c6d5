"""Build kbench, start a local one-broker Apache Kafka (or use the mock cluster or a given
one), run a profile of every family against it in N kbench processes one after another,
write their JSON under results/runs/<date>-<commit>/, merge it, print a summary and add the
run to the results history.

Anything after -- goes to kbench (e.g. -X linger.ms=5, --codec=zstd:7, --payload=file:F).
Results: DIR/kbench.json (every repetition of every process, each tagged with its process),
DIR/processes/pN.json, DIR/console.txt, DIR/command.txt. Compare two runs with
scripts/compare A B (folders): a sample is a process, not a repetition (docs/methodology.md).

exit status: 0 every process ran and passed its checks, 1 a benchmark failed its checks or
a process wrote no JSON, 2 bad usage, 128 + N interrupted by signal N.
"""

import contextlib
import glob
import io
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys

import kbench
from kbench import cli, facts, git, proc, results, summary
from kbench import kafka_cluster as kafka
from kbench.commands import history, librdkafka

ROOT = kbench.ROOT
MAX_WARMUP_ROWS = 40


def add_arguments(parser):
    target = parser.add_argument_group("target (default: start a local one-broker Apache Kafka, stop it after)")
    one = target.add_mutually_exclusive_group()
    one.add_argument("--mock", action="store_true", help="use librdkafka's in-process mock cluster instead")
    one.add_argument("--bootstrap", metavar="HOST:PORT", default=os.environ.get("KBENCH_BOOTSTRAP"),
                     help="use an existing cluster (KBENCH_BOOTSTRAP works too)")
    target.add_argument("--kafka-version", metavar="V",
                        help="broker release for the local cluster (default: scripts/kafka's)")
    run = parser.add_argument_group("selection and statistics")
    run.add_argument("--profile", default="quick",
                     help="quick (default, ~10 min on 2 cores) or full; see benchmarks/profiles.conf")
    run.add_argument("--filter", metavar="REGEX", help="run exactly this Google Benchmark filter instead of a profile")
    run.add_argument("--processes", metavar="N", type=cli.POSITIVE, default=5,
                     help="kbench processes run one after another (default 5); each keeps its "
                     "JSON, and scripts/compare takes one value per process")
    run.add_argument("--repetitions", metavar="N", type=cli.POSITIVE, default=1,
                     help="repetitions per benchmark in each process (default 1)")
    run.add_argument("--min-time", metavar="S", type=cli.NUMBER, default=0.2,
                     help="minimum seconds per repetition (default 0.2)")
    run.add_argument("--out", metavar="DIR", help="result directory (default results/runs/<date>-<commit>)")
    run.add_argument("--no-build", dest="build", action="store_false", help="use the existing build/kbench")
    run.add_argument("--librdkafka", metavar="VERSION",
                     help="run kbench against this librdkafka release (built and cached by "
                     "scripts/librdkafka; 'system' or the system's version: Debian's)")
    run.add_argument("--no-history", dest="history", action="store_false",
                     help="do not add the run to the results history (database "
                     "results/history.sqlite, or KBENCH_HISTORY_DB)")
    run.add_argument("--no-cluster-warmup", dest="cluster_warmup", action="store_false",
                     help="on a live cluster, skip the untimed warm-up process that runs the "
                     "selection's Produce, Consume and EndToEnd rows (short windows, at most %d "
                     "of them) before process 1; its output goes to DIR/warmup/ and is never "
                     "merged or summarised" % MAX_WARMUP_ROWS)
    parser.add_argument("kbench_args", nargs="*", metavar="-- KBENCH_ARG", help="arguments for every kbench process")


def profile_filter(profile):
    """The profile's lines of benchmarks/profiles.conf as one Google Benchmark filter."""
    with open(os.path.join(ROOT, "benchmarks", "profiles.conf"), encoding="utf-8") as f:
        lines = [line.split() for line in f if not re.match(r"\s*(#|$)", line)]
    known = sorted({fields[0] for fields in lines})
    if profile not in known:
        cli.die("unknown profile '%s'; known profiles: %s" % (profile, " ".join(known)))
    return "|".join(fields[1] for fields in lines if fields[0] == profile and len(fields) > 1)


def redacted(cmd):
    """CMD with the value of every secret -X setting (-X K=V or -XK=V) written as ***."""
    out, after_x = [], False
    for arg in cmd:
        if (after_x and "=" in arg and facts.is_secret_setting(arg.split("=", 1)[0])) or (
                re.fullmatch(r"-X.+=.*", arg, re.S) and facts.is_secret_setting(arg[2:].split("=", 1)[0])):
            arg = arg.split("=", 1)[0] + "=***"
        after_x = arg == "-X"
        out.append(arg)
    return out


def live_rows(listing, limit):
    """The first LIMIT row names of LISTING that need a cluster (kbench says which)."""
    try:
        needs_cluster = re.compile(facts.cluster_name_regex())
    except facts.FactsUnavailable:
        cli.info("error: none of %s says which families need a cluster (kbench --describe=json)"
                 % os.path.join(ROOT, "build", "kbench"))
        return []
    return [n for n in listing.splitlines() if needs_cluster.search(n)][:limit]


def dry_run_check(args, window_args):
    """KBENCH_DRY_RUN=1 with a build: kbench checks its own arguments and the filter."""
    if os.environ.get("KBENCH_DRY_RUN") == "1" and os.access("build/kbench", os.X_OK):
        if not cli.kbench_rows("build/kbench", ["--benchmark_filter=" + args.filter] + window_args + args.kbench_args):
            cli.die("no benchmark matches the filter '%s'" % args.filter)
    cli.dry_run_exit()


class Run:
    """A run's state shared with the signal handler: the kbench running, the signal, the cluster."""

    def __init__(self):
        self.kbench, self.interrupted, self.kafka_dir = None, 0, ""

    def on_signal(self, signum, _frame=None):
        """SIGINT/SIGTERM: kbench writes the JSON of what finished and no process follows; outside
        kbench the run ends at once."""
        cli.info("interrupted (signal %d): letting kbench write what finished, then stopping" % signum)
        if self.kbench is None:
            sys.exit(128 + signum)
        self.interrupted = signum
        with contextlib.suppress(ProcessLookupError):
            self.kbench.send_signal(signum)

    def kbench_process(self, cmd, **kw):
        """kbench in a process group of its own (a Ctrl-C reaches it once, from here); its status."""
        sys.stdout.flush()
        self.kbench = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, process_group=0, **kw)
        try:
            return proc.status(self.kbench.wait())
        finally:
            self.kbench = None

    def start_cluster(self, args):
        """The KBENCH_* variables that point kbench at its target, after starting a local broker."""
        if args.mock:
            return ["KBENCH_BOOTSTRAP="]
        if args.bootstrap:
            return ["KBENCH_BOOTSTRAP=" + args.bootstrap]
        self.kafka_dir = os.environ.get("KBENCH_KAFKA_DIR") or "/tmp/kbench-bench-kafka"
        cli.info("starting a local Apache Kafka broker")
        try:
            return kafka.kbench_env(self.kafka_dir, kafka.start(self.kafka_dir, version=args.kafka_version,
                                                                port_base="auto"))
        except kafka.KafkaError as e:
            cli.die(str(e), status=e.status)

    def stop_cluster(self):
        if self.kafka_dir:
            cli.info("stopping the local Kafka cluster")
            kafka.stop(self.kafka_dir)

    def warm_up(self, base_cmd, out):
        """One untimed process of the selection's live rows first: a broker that has just started
        runs its first minute of load slower (docs/methodology.md, "A warm cluster")."""
        listing = subprocess.run(base_cmd + ["--benchmark_list_tests=true"], stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, text=True).stdout
        rows = live_rows(listing, MAX_WARMUP_ROWS)
        if not rows:
            return
        warmup = os.path.join(out, "warmup")
        os.makedirs(warmup, exist_ok=True)
        cli.info("warming the cluster up: %d live row(s), untimed -> %s/" % (len(rows), warmup))
        with open(os.path.join(warmup, "console.txt"), "w") as console, \
                open(os.path.join(warmup, "stderr.txt"), "w") as err:
            krc = self.kbench_process(base_cmd + ["--benchmark_filter=" + results.exact_filter(rows),
                                                  "--benchmark_repetitions=1", "--window-seconds=1",
                                                  "--warmup-seconds=1", "--benchmark_out=%s/warmup.json" % warmup],
                                      stdout=console, stderr=err)
        if self.interrupted:
            sys.exit(128 + self.interrupted)
        # A failed warm-up row is not a result; the timed processes check the same rows.
        if krc != 0:
            cli.info("the warm-up process exited %d (see %s/stderr.txt); going on" % (krc, warmup))

    def processes(self, args, base_cmd, out):
        """The timed kbench processes; returns (the last failing exit status, the JSON written)."""
        rc, files = 0, []
        # Two tees for the whole run (-i: Ctrl-C cannot cut kbench's output), waited for after
        # the last process, so that nothing kbench printed is in flight at the report.
        sys.stdout.flush()
        console = subprocess.Popen(["tee", "-ai", out + "/console.txt"], stdin=subprocess.PIPE)
        errors = subprocess.Popen(["tee", "-ai", out + "/stderr.txt"], stdin=subprocess.PIPE,
                                  stdout=sys.stderr.fileno())
        for p in range(1, args.processes + 1):
            cli.info("process %d/%d" % (p, args.processes))
            # References (bare_producev) run before their send row in odd processes, after it in even ones.
            order_args = ["--references-last"] if p % 2 == 0 else []
            json_path = "%s/processes/p%d.json" % (out, p)
            krc = self.kbench_process(base_cmd + order_args + ["--benchmark_out=" + json_path],
                                      stdout=console.stdin, stderr=errors.stdin)
            if krc != 0:
                rc = krc
                cli.info("process %d exited %d" % (p, krc))
            if os.path.isfile(json_path) and os.path.getsize(json_path) > 0:
                files.append(json_path)
            if self.interrupted:
                break
        for tee in (console, errors):
            tee.stdin.close()
        for tee in (console, errors):
            tee.wait()
        return rc, files


def build(args):
    """The kbench binary, built unless --no-build; the environment of another librdkafka."""
    if args.build:
        cli.info("building kbench (Release)")
        for cmd in (["cmake", "-S", ".", "-B", "build", "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release"],
                    ["cmake", "--build", "build", "--target", "kbench"]):
            done = subprocess.run(cmd, stdout=subprocess.DEVNULL)
            if done.returncode != 0:
                sys.exit(proc.status(done.returncode))
    binary = os.path.join(ROOT, "build", "kbench")
    if not os.access(binary, os.X_OK):
        cli.die("%s is missing; run without --no-build" % binary)
    if not args.librdkafka:
        return binary, []
    try:
        folder = librdkafka.build(args.librdkafka)
    except librdkafka.BuildError as e:
        cli.die(str(e), status=e.status)
    if not folder:
        return binary, []
    old = os.environ.get("LD_LIBRARY_PATH")
    return binary, ["LD_LIBRARY_PATH=" + folder + (":" + old if old else "")]


def main(args):
    os.chdir(ROOT)
    # The full profile measures 30 s windows; an explicit --window-seconds after -- wins.
    window_args = ["--window-seconds=30"] if args.profile == "full" and not args.filter else []
    if not args.filter:
        args.filter = profile_filter(args.profile)

    out = args.out or "results/runs/" + git.run_stamp(".")
    cli.check_out_dir(out, "--out")
    history_db = os.environ.get("KBENCH_HISTORY_DB") or "results/history.sqlite"
    if args.history:
        cli.check_out_file(history_db, "KBENCH_HISTORY_DB")
    dry_run_check(args, window_args)
    binary, lrk_env = build(args)

    run = Run()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, run.on_signal)
    try:
        env_args = run.start_cluster(args)
        rc, kbench_json, files = measure(run, args, out, env_args + lrk_env, binary, window_args)
    finally:
        run.stop_cluster()
    if args.history and os.path.isfile(kbench_json) and os.path.getsize(kbench_json) > 0:
        try:
            added, _ = history.add(history_db, out)
            if added:
                cli.info("history: added %d run(s) to %s" % (added, history_db))
        except history.HistoryError as e:
            cli.info("the run was not added to the history: %s" % e)
            rc = rc or 1
    if len(files) < args.processes:
        cli.info("only %d of %d process(es) wrote JSON" % (len(files), args.processes))
        rc = rc or 1
    if run.interrupted:
        cli.info("interrupted: %s holds the benchmarks that finished" % kbench_json)
        return 128 + run.interrupted
    if rc != 0:
        cli.info("kbench exited %d (a benchmark failed its checks: see above; the JSON is complete)" % rc)
    return rc


def measure(run, args, out, env_args, binary, window_args):
    """The processes, their merged JSON and its summary: (status, kbench.json, files)."""
    os.makedirs(out + "/processes", exist_ok=True)
    for old in glob.glob(glob.escape(out) + "/processes/p*.json"):
        os.remove(old)
    base_cmd = (["env"] + env_args
                + [binary, "--benchmark_filter=" + args.filter,
                   "--benchmark_repetitions=%d" % args.repetitions,
                   "--benchmark_min_time=%g" % args.min_time, "--benchmark_display_aggregates_only=true",
                   "--benchmark_out_format=json"] + window_args + args.kbench_args)
    # A secret given with -X is written as ***, as kbench writes it into the JSON context.
    pathlib.Path(out, "command.txt").write_text("# %d process(es), each:\n%s\n" % (
        args.processes, proc.quote(redacted(base_cmd) + ["--benchmark_out=%s/processes/pN.json" % out])), "utf-8")
    target = "mock" if args.mock else "bootstrap" if args.bootstrap else "local"
    cli.info("running profile '%s' (target: %s): %d process(es) x %d repetition(s) -> %s"
             % (args.profile, target, args.processes, args.repetitions, out))

    shutil.rmtree(out + "/warmup", ignore_errors=True)
    if not args.mock and args.cluster_warmup:
        run.warm_up(base_cmd, out)

    for name in ("console.txt", "stderr.txt"):
        open(os.path.join(out, name), "w").close()
    rc, files = run.processes(args, base_cmd, out)

    kbench_json = out + "/kbench.json"
    if files:
        try:
            results.merge_files(kbench_json, files)
        except (results.BenchmarkJsonError, OSError) as e:
            cli.info("error: cannot merge the processes' JSON: %s" % e)
            rc = 2
    if os.path.isfile(kbench_json) and os.path.getsize(kbench_json) > 0:
        text = io.StringIO()
        try:
            with contextlib.redirect_stdout(text):
                summary_rc = summary.main(kbench_json)
        finally:
            sys.stdout.write(text.getvalue())
            pathlib.Path(out, "summary.txt").write_text(text.getvalue(), "utf-8")
        if summary_rc:
            sys.exit(summary_rc)
    cli.info("results: %s" % kbench_json)
    return rc, kbench_json, files
