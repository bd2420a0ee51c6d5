"""scripts/bench: the main job. Builds kbench, starts a local Apache Kafka broker (or uses
the mock cluster or a given one), runs a profile of every family against it in N kbench
processes one after another, writes their JSON under results/runs/<date>-<commit>/, merges
it, prints a summary and adds the run to the results history.

scripts/bench runs scripts/setup first (it makes the venv this module runs in), then
    python -m kbench.commands.bench [options] [-- kbench args...]
"""

import contextlib
import glob
import io
import os
import re
import shutil
import signal
import subprocess
import sys

import kbench
from kbench import cli, facts, results, shell, summary

COMMAND = "scripts/bench"
ROOT = kbench.ROOT
SCRIPTS = kbench.SCRIPTS
MAX_WARMUP_ROWS = 40
VALUE_OPTIONS = ("--kafka-version", "--profile", "--filter", "--processes", "--repetitions",
                 "--min-time", "--out", "--librdkafka")
USAGE = """\
Usage: scripts/bench [options] [-- kbench args...]

Target (default: start a local one-broker Apache Kafka with scripts/kafka, stop it after):
  --mock                 use librdkafka's in-process mock cluster instead
  --bootstrap HOST:PORT  use an existing cluster (KBENCH_BOOTSTRAP works too)
  --kafka-version V      broker release for the local cluster (default: scripts/kafka's)

Selection and statistics:
  --profile NAME         quick (default, ~10 min on 2 cores) or full; see benchmarks/profiles.conf
  --filter REGEX         run exactly this Google Benchmark filter instead of a profile
  --processes N          kbench processes run one after another (default 5); each keeps its
                         JSON, and scripts/compare takes one value per process
  --repetitions N        repetitions per benchmark in each process (default 1)
  --min-time S           minimum seconds per repetition (default 0.2)
  --out DIR              result directory (default results/runs/<date>-<commit>)
  --no-build             use the existing build/kbench
  --librdkafka VERSION   run kbench against this librdkafka release (built and cached by
                         scripts/librdkafka; 'system' or the system's version: Debian's)
  --vs-perf-test ARGS... only kbench vs kafka-producer-perf-test (scripts/vs-perf-test --help)
  --no-history           do not add the run to the results history (scripts/history add;
                         database results/history.sqlite, or KBENCH_HISTORY_DB)
  --no-cluster-warmup    on a live cluster, skip the untimed warm-up process that runs the
                         selection's Produce, Consume and EndToEnd rows (short windows, at
                         most %d of them) before process 1; its output goes to
                         DIR/warmup/ and is never merged or summarised

Anything after -- goes to kbench (e.g. -X linger.ms=5, --codec=zstd:7, --payload=file:F).
Results: DIR/kbench.json (Google Benchmark JSON with run context: every repetition of
every process, each tagged with its process), DIR/processes/pN.json (one per process),
DIR/console.txt, DIR/command.txt. Compare two runs with scripts/compare A B (folders).
Two default runs (5 processes each) can reach a verdict at alpha 0.01: the rank test needs
5 samples a side, and a sample is a process, not a repetition (docs/methodology.md).
""" % MAX_WARMUP_ROWS


class Options:
    profile, filter, processes, repetitions, min_time = "quick", "", "5", "1", "0.2"
    out = kafka_version = librdkafka = ""
    target, build, history, cluster_warmup = "local", True, True, True

    def __init__(self):
        self.bootstrap = os.environ.get("KBENCH_BOOTSTRAP", "")
        if self.bootstrap:
            self.target = "bootstrap"
        self.kbench_args = []


def parse(argv):
    o = Options()
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--mock":
            o.target = "mock"
        elif a == "--bootstrap":
            if not args or not args[0]:
                cli.bad_usage("--bootstrap needs HOST:PORT", COMMAND)
            o.bootstrap, o.target = args.pop(0), "bootstrap"
        elif a.startswith("--bootstrap="):
            o.bootstrap, o.target = a.split("=", 1)[1], "bootstrap"
        elif a in VALUE_OPTIONS:
            if not args or not args[0]:
                cli.bad_usage("option %s needs a value" % a, COMMAND)
            setattr(o, a[2:].replace("-", "_"), args.pop(0))
        elif a in ("--no-build", "--no-history", "--no-cluster-warmup"):
            setattr(o, a[5:].replace("-", "_"), False)
        elif a == "--vs-perf-test":
            sys.stdout.flush()
            vs = os.path.join(SCRIPTS, "vs-perf-test")
            os.execv(vs, [vs] + args)
        elif a in ("-h", "--help"):
            sys.stdout.write(USAGE)
            sys.exit(0)
        elif a == "--":
            o.kbench_args = args
            break
        else:
            cli.bad_usage("unknown option '%s'" % a, COMMAND)
    if not re.fullmatch(r"[1-9][0-9]*", o.repetitions):
        cli.bad_usage("--repetitions must be a positive integer", COMMAND)
    if not re.fullmatch(r"[1-9][0-9]*", o.processes):
        cli.bad_usage("--processes must be a positive integer", COMMAND)
    if not re.fullmatch(r"[0-9]*\.?[0-9]+", o.min_time):
        cli.bad_usage("--min-time must be a number of seconds", COMMAND)
    return o


def profile_filter(profile):
    """The profile's lines of benchmarks/profiles.conf as one Google Benchmark filter."""
    with open(os.path.join(ROOT, "benchmarks", "profiles.conf"), encoding="utf-8") as f:
        lines = [line.split() for line in f if not re.match(r"\s*(#|$)", line)]
    rows = [fields[1] for fields in lines if fields[0] == profile and len(fields) > 1]
    if not any(fields[0] == profile for fields in lines):
        known = "".join(p + " " for p in sorted({fields[0] for fields in lines}))
        cli.bad_usage("unknown profile '%s'; known profiles: %s" % (profile, known), COMMAND)
    return "|".join(rows)


def redacted(cmd):
    """CMD with the value of every secret -X setting (-X K=V or -XK=V) written as ***."""
    out, after_x = [], False
    for arg in cmd:
        if after_x and "=" in arg and facts.is_secret_setting(arg.split("=", 1)[0]):
            arg = arg.split("=", 1)[0] + "=***"
        elif re.fullmatch(r"-X.+=.*", arg, re.S) and facts.is_secret_setting(arg[2:].split("=", 1)[0]):
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


def dry_run_check(o, window_args):
    """KBENCH_DRY_RUN=1 with a build: kbench checks its own arguments and the filter."""
    if os.environ.get("KBENCH_DRY_RUN") == "1" and os.access("build/kbench", os.X_OK):
        proc = subprocess.run(["build/kbench", "--benchmark_list_tests", "--benchmark_filter=" + o.filter]
                              + window_args + o.kbench_args, capture_output=True, text=True)
        if proc.returncode != 0:
            cli.die("kbench refuses the arguments: %s" % proc.stderr.split("\n", 1)[0])
        if not proc.stdout.strip("\n"):
            cli.die("no benchmark matches the filter '%s'" % o.filter)
    cli.dry_run_exit()


def check_call(cmd, **kw):
    """Runs CMD; a failure ends the run with its status (the bash's set -e)."""
    sys.stdout.flush()
    proc = subprocess.run(cmd, **kw)
    if proc.returncode != 0:
        sys.exit(shell.exit_status(proc.returncode))
    return proc


class Run:
    """A run's state shared with the signal handler: the kbench process running, the
    foreground command running, the signal received, the local cluster to stop."""

    def __init__(self):
        self.kbench = None
        self.foreground = False
        self.pending = 0
        self.interrupted = 0
        self.kafka_dir = ""

    def on_signal(self, signum, _frame=None):
        if self.foreground:
            self.pending = signum
            return
        self.interrupted = signum
        cli.info("interrupted (signal %d): letting kbench write what finished, then stopping" % signum)
        if self.kbench is None:
            # Before kbench runs (build, broker start): nothing to keep, stop now.
            sys.exit(128 + signum)
        with contextlib.suppress(ProcessLookupError):
            self.kbench.send_signal(signum)

    @contextlib.contextmanager
    def in_foreground(self):
        """A signal that arrives meanwhile is handled after the work, as bash runs a trap
        after the foreground command."""
        self.foreground = True
        try:
            yield
        finally:
            self.foreground = False
        if self.pending:
            signum, self.pending = self.pending, 0
            self.on_signal(signum)

    def run(self, cmd, check=True, **kw):
        """Runs CMD in the foreground; with CHECK a failure ends the run with its status."""
        sys.stdout.flush()
        with self.in_foreground():
            proc = subprocess.run(cmd, **kw)
        if check and proc.returncode != 0:
            sys.exit(shell.exit_status(proc.returncode))
        return proc

    def kbench_process(self, cmd, **kw):
        """Runs kbench as the bash ran it in the background (stdin /dev/null, SIGINT and
        SIGQUIT ignored until kbench installs its handlers), so that a signal is forwarded to
        it at once and it writes the JSON of what finished; returns its exit status."""
        sys.stdout.flush()

        def background():
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGQUIT, signal.SIG_IGN)

        self.kbench = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, preexec_fn=background, **kw)
        try:
            return shell.exit_status(self.kbench.wait())
        finally:
            self.kbench = None

    def stop_cluster(self):
        if self.kafka_dir:
            cli.info("stopping the local Kafka cluster")
            self.run([os.path.join(SCRIPTS, "kafka"), "stop", "--dir", self.kafka_dir],
                     check=False, stdout=sys.stderr.fileno())


def start_cluster(run, o):
    """The KBENCH_* variables that point kbench at its target, after starting a local broker."""
    if o.target == "local":
        run.kafka_dir = os.environ.get("KBENCH_KAFKA_DIR") or "/tmp/kbench-bench-kafka"
        cli.info("starting a local Apache Kafka broker")
        cmd = [os.path.join(SCRIPTS, "kafka"), "start", "--dir", run.kafka_dir, "--port-base", "auto"]
        if o.kafka_version:
            cmd += ["--version", o.kafka_version]
        bootstrap = run.run(cmd, stdout=subprocess.PIPE, text=True).stdout.rstrip("\n")
        try:
            with open(os.path.join(run.kafka_dir, "version"), encoding="utf-8") as f:
                version = f.read().rstrip("\n")
        except OSError as e:
            cli.die("cannot read %s: %s" % (e.filename, e.strerror), status=1)
        # KBENCH_KAFKA_DIR: kbench measures the CPU and log growth of the brokers started here.
        return ["KBENCH_BOOTSTRAP=" + bootstrap, "KBENCH_BROKER_VERSION=" + version,
                "KBENCH_KAFKA_DIR=" + run.kafka_dir]
    if o.target == "bootstrap":
        return ["KBENCH_BOOTSTRAP=" + o.bootstrap]
    return ["KBENCH_BOOTSTRAP="]


def warm_up(run, base_cmd, out):
    """A broker that has just started runs its first minute of load slower (its JIT is cold:
    docs/methodology.md, "A warm cluster"), so one untimed process first runs the selection's
    live rows, with 1 s warm-ups and windows, never merged or compared."""
    listing = run.run(base_cmd + ["--benchmark_list_tests=true"], check=False, stdout=subprocess.PIPE,
                      stderr=subprocess.DEVNULL, text=True).stdout
    rows = live_rows(listing, MAX_WARMUP_ROWS)
    if not rows:
        return
    warmup = os.path.join(out, "warmup")
    os.makedirs(warmup, exist_ok=True)
    cli.info("warming the cluster up: %d live row(s), untimed -> %s/" % (len(rows), warmup))
    with open(os.path.join(warmup, "console.txt"), "w") as console, \
            open(os.path.join(warmup, "stderr.txt"), "w") as err:
        krc = run.kbench_process(base_cmd + ["--benchmark_filter=" + results.exact_filter(rows),
                                             "--benchmark_repetitions=1", "--window-seconds=1",
                                             "--warmup-seconds=1",
                                             "--benchmark_out=%s/warmup.json" % warmup],
                                 stdout=console, stderr=err)
    if run.interrupted:
        sys.exit(128 + run.interrupted)
    # A failed warm-up row is not a result; the timed processes check the same rows.
    if krc != 0:
        cli.info("the warm-up process exited %d (see %s/stderr.txt); going on" % (krc, warmup))


def run_processes(run, o, base_cmd, out):
    """The timed kbench processes; returns (the last failing exit status, the JSON written)."""
    rc, files = 0, []
    # kbench's output reaches the console and console.txt / stderr.txt through two tees that
    # live for the whole run (-i: Ctrl-C cannot cut kbench's output), closed and waited for
    # after the last process, so that nothing kbench printed is still in flight when this
    # script reports.
    sys.stdout.flush()
    console = subprocess.Popen(["tee", "-ai", out + "/console.txt"], stdin=subprocess.PIPE)
    errors = subprocess.Popen(["tee", "-ai", out + "/stderr.txt"], stdin=subprocess.PIPE,
                              stdout=sys.stderr.fileno())
    processes = int(o.processes)
    for p in range(1, processes + 1):
        cli.info("process %d/%d" % (p, processes))
        # References (bare_producev) run before their send row in odd processes, after it in
        # even ones: Google Benchmark runs one row's repetitions back to back.
        order_args = ["--references-last"] if p % 2 == 0 else []
        json_path = "%s/processes/p%d.json" % (out, p)
        krc = run.kbench_process(base_cmd + order_args + ["--benchmark_out=" + json_path],
                                 stdout=console.stdin, stderr=errors.stdin)
        if krc != 0:
            rc = krc
            cli.info("process %d exited %d" % (p, krc))
        if os.path.isfile(json_path) and os.path.getsize(json_path) > 0:
            files.append(json_path)
        if run.interrupted:
            break
    for tee in (console, errors):
        tee.stdin.close()
    for tee in (console, errors):
        tee.wait()
    return rc, files


def main(argv):
    cli.prog = "bench"
    os.chdir(ROOT)
    # A signal ignored on entry stays ignored, as in the shell (a background job's SIGINT);
    # until the run installs its own handlers, Ctrl-C ends it as it ends a shell script.
    ignored = {s for s in (signal.SIGINT, signal.SIGTERM) if signal.getsignal(s) == signal.SIG_IGN}
    if signal.SIGINT not in ignored:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    o = parse(argv)
    window_args = []
    # The full profile measures 30 s steady-state windows (Produce, Consume); quick keeps
    # kbench's default of 2 s. An explicit --window-seconds after -- wins.
    if o.profile == "full" and not o.filter:
        window_args = ["--window-seconds=30"]
    if not o.filter:
        o.filter = profile_filter(o.profile)

    # The output paths first: one that cannot be written is refused before anything runs.
    out = o.out or "results/runs/" + shell.run_stamp(".")
    cli.check_out_dir(out, "--out")
    if o.history:
        cli.check_out_file(os.environ.get("KBENCH_HISTORY_DB") or "results/history.sqlite",
                           "KBENCH_HISTORY_DB")
    dry_run_check(o, window_args)

    # scripts/bench ran scripts/setup before this module.
    if o.build:
        cli.info("building kbench (Release)")
        check_call(["cmake", "-S", ".", "-B", "build", "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release"],
                   stdout=subprocess.DEVNULL)
        check_call(["cmake", "--build", "build", "--target", "kbench"], stdout=subprocess.DEVNULL)
    binary = os.path.join(ROOT, "build", "kbench")
    if not os.access(binary, os.X_OK):
        cli.die("%s is missing; run without --no-build" % binary)
    lrk_env = []
    if o.librdkafka:
        # Same binary, another librdkafka.so.1 (the C ABI is stable across 2.x); the context's
        # librdkafka_version records the one loaded. Empty for the system library.
        lrk_dir = check_call([os.path.join(SCRIPTS, "librdkafka"), "build", o.librdkafka],
                             stdout=subprocess.PIPE, text=True).stdout.rstrip("\n")
        if lrk_dir:
            old = os.environ.get("LD_LIBRARY_PATH")
            lrk_env = ["LD_LIBRARY_PATH=" + lrk_dir + (":" + old if old else "")]

    run = Run()
    # SIGINT/SIGTERM: kbench ends the benchmark it runs and writes the JSON of what finished;
    # no further process starts; the JSON is merged, the cluster stopped, exit 128 + signal.
    for signum in {signal.SIGINT, signal.SIGTERM} - ignored:
        signal.signal(signum, run.on_signal)
    try:
        return measure(run, o, out, window_args, binary, lrk_env)
    finally:
        run.stop_cluster()


def measure(run, o, out, window_args, binary, lrk_env):
    env_args = start_cluster(run, o)
    os.makedirs(out + "/processes", exist_ok=True)
    for old in glob.glob(glob.escape(out) + "/processes/p*.json"):
        os.remove(old)
    base_cmd = (["env"] + env_args + lrk_env
                + [binary, "--benchmark_filter=" + o.filter, "--benchmark_repetitions=" + o.repetitions,
                   "--benchmark_min_time=" + o.min_time, "--benchmark_display_aggregates_only=true",
                   "--benchmark_out_format=json"] + window_args + o.kbench_args)
    # command.txt is kept with the results: a secret given with -X (kbench's own rule,
    # facts.is_secret_setting) is written as ***, as kbench writes it into the JSON context.
    with open(out + "/command.txt", "w", encoding="utf-8") as f:
        f.write("# %s process(es), each:\n" % o.processes)
        f.write(shell.command_line(redacted(base_cmd) + ["--benchmark_out=%s/processes/pN.json" % out]))
    cli.info("running profile '%s' (target: %s): %s process(es) x %s repetition(s) -> %s"
             % (o.profile, o.target, o.processes, o.repetitions, out))

    shutil.rmtree(out + "/warmup", ignore_errors=True)
    if o.target != "mock" and o.cluster_warmup:
        warm_up(run, base_cmd, out)

    for name in ("console.txt", "stderr.txt"):
        open(os.path.join(out, name), "w").close()
    rc, files = run_processes(run, o, base_cmd, out)

    kbench_json = out + "/kbench.json"
    if files:
        merge = [os.path.join(SCRIPTS, "lib", "python"), "-m", "kbench.results", "merge", kbench_json]
        if run.run(merge + files, check=False).returncode != 0:
            rc = 2
    if os.path.isfile(kbench_json) and os.path.getsize(kbench_json) > 0:
        text = io.StringIO()
        try:
            with run.in_foreground(), contextlib.redirect_stdout(text):
                src = summary.main(kbench_json)
        finally:
            sys.stdout.write(text.getvalue())
            with open(out + "/summary.txt", "w", encoding="utf-8") as f:
                f.write(text.getvalue())
        if src:
            sys.exit(src)
    cli.info("results: %s" % kbench_json)
    if o.history and os.path.isfile(kbench_json) and os.path.getsize(kbench_json) > 0:
        # A run that is not in the history when asked to be is not a clean exit.
        if run.run([os.path.join(SCRIPTS, "history"), "add", out], check=False).returncode != 0:
            cli.info("the run was not added to the history (scripts/history add %s)" % out)
            rc = rc or 1
    processes = int(o.processes)
    if len(files) < processes:
        cli.info("only %d of %d process(es) wrote JSON" % (len(files), processes))
        rc = rc or 1
    if run.interrupted:
        cli.info("interrupted: %s holds the benchmarks that finished" % kbench_json)
        return 128 + run.interrupted
    if rc != 0:
        cli.info("kbench exited %d (a benchmark failed its checks: see above; the JSON is complete)" % rc)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
