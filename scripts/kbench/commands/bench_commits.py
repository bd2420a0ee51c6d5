"""scripts/bench-commits: build two commits of kbench side by side (each side also a
librdkafka, an environment, kbench arguments, maybe a Kafka cluster of its own), run them
interleaved and counterbalanced, and compare them statistically with scripts/compare, by
time or by callgrind's instruction counts. Usage, messages, files and exit statuses are
those of the bash tool it replaces: see --help."""

import contextlib
import io
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import kbench
from kbench import cli, commits, facts, results, shell, stamp
from kbench.cli import die, info
from kbench.commands import librdkafka

HERE = kbench.SCRIPTS
COMMAND = "scripts/bench-commits"

USAGE = r"""Usage: scripts/bench-commits A B [options] [-- KBENCH_ARGS...]

A side is a kbench commit, the librdkafka it runs on, its environment and its
kbench arguments; A and B may be the same commit and differ in the rest:
  scripts/bench-commits HEAD HEAD --librdkafka-a system --librdkafka-b 2.15.1
  scripts/bench-commits HEAD HEAD --librdkafka-a tree:~/src/librdkafka@v2.15.1 \
                                  --librdkafka-b tree:~/src/librdkafka@my-branch
  scripts/bench-commits HEAD HEAD --env-b LD_LIBRARY_PATH=/src/librdkafka/src
  scripts/bench-commits HEAD HEAD --args-a '-X linger.ms=5' --args-b '-X linger.ms=50'
  scripts/bench-commits HEAD HEAD --kafka-a 3.9.1 --kafka-b 4.4.0

Builds commits A (base) and B (new) in their own git worktrees (Release, Ninja), runs
them interleaved and counterbalanced, A B B A A B B A ..., so that drift of the machine hits
both sides alike and neither always runs second, merges each side's runs into one Google
Benchmark JSON of repetitions and calls scripts/compare on the pair. On a live cluster
(KBENCH_BOOTSTRAP or --bootstrap after --), one untimed process of A first runs the
selection's Produce, Consume and EndToEnd rows (at most 40, 1 s windows, warm-ups that add up
to a minute of load) to warm the broker up; runs/warmup.json is never compared.

Options:
  --runs N            rounds, each one kbench process per side with --benchmark_repetitions=1,
                      base and new back to back, so scripts/compare pairs them (default 8:
                      the fewest for a paired verdict at p < 0.01; fewer compare unpaired).
  --budget MINUTES    after the first N rounds (default here: 10, the rounds a paired verdict
                      needs at alpha / --max-looks), add rounds (2 at a time, or N/2) while
                      some primary row is inconclusive and the next rounds fit in MINUTES;
                      each look is tested at alpha / --max-looks (docs/comparing.md). Not
                      with --instructions.
  --max-looks L       looks at most under --budget (default 5), which fixes the per-look alpha
                      and, with N, the largest number of rounds.
  --filter REGEX      passed to kbench as --benchmark_filter (default: all).
  --librdkafka-a V, --librdkafka-b V
                      run that side on librdkafka release V (scripts/librdkafka build V;
                      'system' is Debian's), or V = tree:DIR@REV: commit REV (no '@' in it)
                      of the local librdkafka git repository DIR (scripts/librdkafka build
                      --tree DIR REV). The run context records the loaded version and
                      librdkafka_source (the tree and full sha, or npm:...).
  --env-a NAME=VALUE, --env-b NAME=VALUE
                      set a variable for every kbench process of that side (repeatable), e.g.
                      KBENCH_BOOTSTRAP of another cluster.
  --args-a ARGS, --args-b ARGS
                      kbench arguments for that side only (split on blanks), after the common
                      ones given after --.
  --kafka-a V, --kafka-b V
                      run that side on a cluster of Apache Kafka release V that this script
                      starts (scripts/kafka start --version V --dir DIR/kafka-a or -b) and
                      stops on exit; given alone, the other side gets scripts/kafka's
                      default version. Not with KBENCH_BOOTSTRAP or --bootstrap.
  --instructions      measure instructions with valgrind's callgrind instead of time (see
                      below). Default --runs becomes 1.
  --instructions-of FUNC
                      with --instructions (implied): count only the instructions run inside
                      FUNC and what it calls (callgrind --toggle-collect=FUNC; repeatable; *
                      and ? match), e.g. rd_kafka_producev for Produce rows. Default
                      --threshold 1. A FUNC that collects nothing is an error (exit 3).
  --iterations N      fixed iteration count in --instructions mode (default 100), given to
                      kbench as KBENCH_FIXED_ITERATIONS.
  --alpha A           passed to scripts/compare (default 0.01).
  --threshold PCT     passed to scripts/compare (default 5, or 0.5 with --instructions:
                      identical builds differ by < 0.001 % in instructions, see
                      tests/detector/README.md).
  --force             passed to scripts/compare (compare different contexts).
  --accept-inconclusive  passed to scripts/compare (exit 0, not 3, when the
                      only unjudged rows are inconclusive).
  --out-dir DIR       where to keep runs and results (default
                      results/runs/<YYYYmmdd-HHMMSS>-<A>-vs-<B>/).
  --repo DIR          git repository to take the commits from (default: the one this script
                      lives in).
  --keep-worktrees    do not delete the worktrees and builds on exit.
  --profile           when a row regresses, write a differential profile of A and B for it
                      (scripts/profile --diff on this run's builds):
                      DIR/profiles/<row>/diff/diff.svg and diff.txt; callgrind for in-process
                      rows, perf for Produce, Consume and EndToEnd rows; at most 5 rows,
                      largest first.
  --build-cache DIR   build each commit in DIR/<sha> and keep it there, so a later call with
                      the same commit only re-runs ninja. Keyed by the commit alone: use
                      another DIR for other KBENCH_CMAKE_ARGS. An entry left by a clone
                      that has since been deleted is built again.
  -h, --help          this text.

Everything after `--` is passed to every kbench run.

Instruction mode: each benchmark that matches --filter runs alone under callgrind, twice per
side, with N and 2N iterations; the metric is (Ir(2N) - Ir(N)) / N, one iteration's
instructions without start-up. Counts repeat to about 0.002 %, so one run per side decides.
Rows of families that need a cluster are left out (their count follows the wall clock);
--instructions-of counts one call path of them instead.

Results: DIR/base.json, DIR/new.json (merged), DIR/verdict.json, DIR/runs/ (one JSON per
process, plus callgrind.out files), DIR/build-*.log.
Exit status: that of scripts/compare (0 every row judged and none regressed, 1 regression,
2 bad input, 3 something could not be judged: a benchmark errored or is missing, a verdict
is inconclusive), or 2 for bad usage, 3 when a build fails, a cluster of --kafka-a/-b does
not start or a kbench run writes no JSON. A kbench run that fails a benchmark's checks still
writes its JSON; compare reports the benchmark as errored (exit 3).
"""

# Options that take a value, and those that may be given as --opt=value too.
VALUE_OPTIONS = ("--runs", "--budget", "--max-looks", "--filter", "--iterations", "--alpha",
                 "--threshold", "--out-dir", "--repo", "--build-cache")
SIDE_VALUE_OPTIONS = ("--librdkafka-a", "--librdkafka-b", "--kafka-a", "--kafka-b")
TREE_SPEC = re.compile(r"tree:(.+)@([^@]+)")  # REV: what follows the last '@'
OWN_CLUSTER = re.compile(r"KBENCH_BOOTSTRAP=|KBENCH_BROKER_VERSION=|KBENCH_KAFKA_DIR=|--bootstrap|--broker-dir")
# A broker serves its first minute of load slower (docs/methodology.md, "A warm cluster"): the
# warm-up process's rows share this much unmeasured load out among them. With 1 s each, two
# EndToEnd rows at 1,000 records/s on TLS left the broker cold for round 1's first process
# (docs/validation.md V19).
WARMUP_LOAD_SECONDS = 60
TIME_SUFFIX = re.compile(r"(.*)(/(real_time|manual_time|process_time))")


def words(text):
    """TEXT split as bash splits an unquoted expansion (blanks and newlines)."""
    return [w for w in re.split(r"[ \t\n]+", text) if w]


def home(path):
    """A leading ~ as the user's home (tree:~/src/librdkafka@REV)."""
    return os.environ.get("HOME", "") + path[1:] if path.startswith("~") else path


# --- running commands as bash ran them ----------------------------------------------------

# bash's traps: INT and TERM end the tool (130, 143) once the running command has ended.
TRAP = shell.Trap({signal.SIGINT: 130, signal.SIGTERM: 143})


def run(cmd, env=None, stdout=None, stderr=None):
    """(exit status, stdout if captured, less its trailing newlines) of CMD."""
    sys.stderr.flush()
    try:
        proc = TRAP.run(cmd, env=env, stdout=stdout, stderr=stderr)
    except OSError as e:  # as bash says a command it cannot run
        target = stdout if stderr == subprocess.STDOUT else stderr
        message = "%s: %s\n" % (cmd[0], e.strerror or e)
        if hasattr(target, "write"):
            target.write(message.encode())
        elif target != subprocess.DEVNULL:
            sys.stderr.write(message)
        return 127, ""
    return proc.returncode, (proc.stdout or b"").decode(errors="surrogateescape").rstrip("\n")


# --- the command line ---------------------------------------------------------------------

class Options:
    runs = budget = filter = alpha = threshold = out_dir = repo = build_cache = ""
    max_looks, iterations = "5", "100"
    instructions = force = accept_inconclusive = keep_worktrees = profile = False

    def __init__(self):
        self.rdk = {"a": "", "b": ""}
        self.kafka = {"a": "", "b": ""}
        self.env = {"a": [], "b": []}
        self.args = {"a": [], "b": []}
        self.instructions_of, self.positional, self.kbench_args = [], [], []


def need_value(argv, i):
    if i + 1 >= len(argv) or not argv[i + 1]:
        cli.bad_usage("option %s needs a value" % argv[i], COMMAND)
    return argv[i + 1]


def parse(argv):
    o = Options()
    i = 0
    while i < len(argv):
        a = argv[i]
        name = a.split("=", 1)[0]
        if a in ("-h", "--help"):
            sys.stdout.write(USAGE)
            sys.exit(0)
        elif "=" in a and name in VALUE_OPTIONS:
            argv = argv[:i] + [name, a.split("=", 1)[1]] + argv[i + 1:]
            continue
        elif a in VALUE_OPTIONS:
            setattr(o, a[2:].replace("-", "_"), need_value(argv, i))
        elif a in SIDE_VALUE_OPTIONS:
            (o.rdk if a.startswith("--librdkafka") else o.kafka)[a[-1]] = need_value(argv, i)
        elif a in ("--env-a", "--env-b"):
            value = need_value(argv, i)
            if not re.match(r"[A-Za-z_][A-Za-z0-9_]*=", value):
                die("%s needs NAME=VALUE, got '%s'" % (a, value))
            o.env[a[-1]].append(value)
        elif a in ("--args-a", "--args-b"):
            # bash's read -ra: the first line, split on blanks.
            o.args[a[-1]] += words(need_value(argv, i).split("\n", 1)[0])
        elif a == "--instructions-of":
            value = need_value(argv, i)
            if not re.fullmatch(r"[A-Za-z_*?][A-Za-z0-9_:*?]*", value):
                die("--instructions-of: '%s' is not a function name (letters, digits, _, :, * and ?)" % value)
            o.instructions = True
            o.instructions_of.append(value)
        elif a in ("--instructions", "--force", "--accept-inconclusive", "--keep-worktrees", "--profile"):
            setattr(o, a[2:].replace("-", "_"), True)
            i += 1
            continue
        elif a == "--":
            o.kbench_args = argv[i + 1:]
            break
        elif a.startswith("-"):
            die("unknown option '%s' (see --help)" % a)
        else:
            o.positional.append(a)
            i += 1
            continue
        i += 2
    return o


def check_tree(spec):
    """tree:DIR@REV is checked before anything is built: a DIR that is no librdkafka
    repository or a REV that is no commit of it is bad usage (scripts/librdkafka path
    --tree's own checks and messages)."""
    m = TREE_SPEC.fullmatch(spec)
    if not m:
        die("--librdkafka-a/-b tree: needs tree:DIR@REV, got '%s'" % spec)
    said, prog = io.StringIO(), cli.prog
    cli.prog = librdkafka.PROG
    try:
        with contextlib.redirect_stderr(said):
            librdkafka.Tree(librdkafka.Repo(home(m.group(1))), m.group(2)).check()
    except SystemExit as e:
        if e.code == 2:
            cli.prog = prog
            sys.stderr.write(said.getvalue())
            die("bad librdkafka side '%s'" % spec)
    finally:
        cli.prog = prog


def pin_mock_cluster(o):
    """Two librdkafka releases compared on the mock cluster meet the same one: kbench-mock
    (--mock=process), not each release's own mock, whose changes would be measured too.
    Not when a cluster is named, or the user chose --mock=."""
    if o.rdk["a"] == o.rdk["b"] or o.kafka["a"] or o.kafka["b"] or os.environ.get("KBENCH_BOOTSTRAP"):
        return
    given = o.kbench_args + o.args["a"] + o.args["b"] + o.env["a"] + o.env["b"]
    if any(a.startswith("--mock") or OWN_CLUSTER.match(a) for a in given):
        return
    info("the sides load different librdkafka releases: rows on the mock cluster run on "
         "kbench-mock (--mock=process), the same cluster for both (--mock=embedded after -- "
         "measures each release's own mock instead)")
    o.kbench_args = o.kbench_args + ["--mock=process"]


def check(o):
    """The checks made before anything is built; fills in the defaults."""
    if len(o.positional) != 2:
        die("expected two commits A and B, got %d argument(s) (see --help)" % len(o.positional))
    if o.out_dir:
        cli.check_out_dir(o.out_dir, "--out-dir")
    if o.build_cache:
        cli.check_out_dir(o.build_cache, "--build-cache")
    for spec in (o.rdk["a"], o.rdk["b"]):
        if spec.startswith("tree:"):
            check_tree(spec)
    runs_given = bool(o.runs)
    o.runs = o.runs or ("1" if o.instructions else "8")
    for opt in ("runs", "max_looks", "iterations"):
        if not re.fullmatch(r"[1-9][0-9]*", getattr(o, opt)):
            die("--%s must be a positive integer, got '%s'" % (opt.replace("_", "-"), getattr(o, opt)))
        setattr(o, opt, int(getattr(o, opt)))
    if o.budget:
        if not re.fullmatch(r"[0-9]+([.][0-9]+)?", o.budget) or float(o.budget) <= 0:
            die("--budget must be a positive number of minutes, got '%s'" % o.budget)
        if o.instructions:
            die("--budget does not apply to --instructions (one deterministic round decides)")
        # Each look is tested at alpha / L, where a paired verdict needs more rounds than at
        # alpha (10 at 0.01 / 5): the first look starts with that many (an even number, as
        # many A-first as B-first rounds), so that it is paired like every later look.
        try:
            pairs = commits.look_pairs(float(o.alpha or "0.01"), o.max_looks)
        except ValueError:
            die("--alpha must be a number, got '%s'" % o.alpha)
        if o.runs < pairs and not runs_given:
            o.runs = pairs
        elif o.runs < pairs:
            info("note: under --budget each look is tested at alpha / %d, where a paired verdict "
                 "needs %d rounds; looks at fewer rounds (--runs %d) compare the sides unpaired"
                 % (o.max_looks, pairs, o.runs))
    if not o.threshold:
        # --instructions-of: a send call's count still moves by up to ~0.5 % between
        # identical builds (locks, wake-ups; docs/comparing.md), so 1 %.
        o.threshold = "1" if o.instructions_of else "0.5" if o.instructions else "5"
    if not o.instructions and o.runs < 3:
        info("warning: %d run(s) per side cannot show a significant time difference; every "
             "result will be inconclusive" % o.runs)

    pin_mock_cluster(o)

    # --kafka-a/-b: the tool owns both sides' clusters, so nothing else may name one.
    if o.kafka["a"] or o.kafka["b"]:
        for side in "ab":
            for arg in o.env[side] + o.args[side] + o.kbench_args:
                if OWN_CLUSTER.match(arg):
                    die("side %s runs on a cluster this script starts (--kafka-a/--kafka-b), so "
                        "'%s' cannot choose its cluster; drop one of them" % (side.upper(), arg))
        if os.environ.get("KBENCH_BOOTSTRAP"):
            info("ignoring KBENCH_BOOTSTRAP=%s: each side runs on the cluster started for it"
                 % os.environ["KBENCH_BOOTSTRAP"])
        # Unknown versions are refused before anything is built (resolving them once if need be).
        for side in "ab":
            version = o.kafka[side]
            if not version:
                continue
            rc, _ = run([os.path.join(HERE, "kafka"), "classpath", "--version", version],
                        stdout=subprocess.DEVNULL)
            if rc == 2:
                die("--kafka-%s %s: not a Kafka release scripts/kafka can run (its reason above)"
                    % (side, version))
            if rc != 0:
                die("--kafka-%s %s: scripts/kafka could not resolve it (exit %d)" % (side, version, rc), 3)

    for tool in ("git", "cmake", "ninja"):
        if not shutil.which(tool):
            die("'%s' not found (install it: scripts/setup)" % tool)
    if o.instructions and not shutil.which("valgrind"):
        die("--instructions needs valgrind (apt-get install valgrind)")

    repo = o.repo or os.path.join(HERE, "..")
    rc, o.repo = run(["git", "-C", repo, "rev-parse", "--show-toplevel"],
                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    if rc != 0:
        die("'%s' is not inside a git repository" % repo)
    o.sha = {}
    for side, rev in zip("ab", o.positional):
        rc, o.sha[side] = run(["git", "-C", o.repo, "rev-parse", "--verify", "--quiet", rev + "^{commit}"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        if rc != 0:
            die("'%s' is not a commit in %s" % (rev, o.repo))


# --- the run ------------------------------------------------------------------------------

def dead_worktree(path):
    """True if PATH is a git worktree whose repository no longer exists (its .git file
    names a folder that is gone): a build-cache entry made by a clone since deleted."""
    try:
        with open(os.path.join(path, ".git")) as f:
            line = f.readline()
    except OSError:  # no .git file (a folder, or nothing): not a worktree of another clone
        return False
    if not line.startswith("gitdir: "):
        return False
    return not os.path.isdir(os.path.join(path, line[len("gitdir: "):].strip()))


class BenchCommits:
    def __init__(self, o, out_dir, build_cache, work):
        self.o, self.out_dir, self.build_cache, self.work = o, out_dir, build_cache, work
        self.worktrees, self.kafka_dirs = [], []
        self.bin = {}
        self.files = {"a": [], "b": []}
        self.run_log = os.path.join(out_dir, "kbench.log")
        self.filter_args = ["--benchmark_filter=" + o.filter] if o.filter else []
        self.rc = 0

    def cleanup(self):
        # A second Ctrl-C must not leave a broker running: stopping is not interruptible.
        TRAP.hold()
        if self.kafka_dirs:
            with open(os.path.join(self.out_dir, "kafka-stop.log"), "ab") as log:
                stops = [subprocess.Popen([os.path.join(HERE, "kafka"), "stop", "--dir", d], stdout=log,
                                          stderr=subprocess.STDOUT) for d in self.kafka_dirs]
                for p in stops:
                    p.wait()
            info("stopped the clusters (logs: %s)" % " ".join(d + "/logs" for d in self.kafka_dirs))
        if self.o.keep_worktrees:
            info("kept worktrees under %s" % self.work)
            return
        for wt in self.worktrees:
            subprocess.run(["git", "-C", self.o.repo, "worktree", "remove", "--force", wt],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(self.work, ignore_errors=True)
        subprocess.run(["git", "-C", self.o.repo, "worktree", "prune"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def build(self, sha, label):
        """Builds one commit in its own worktree; its kbench binary."""
        wt = os.path.join(self.work, "%s-%s" % (label, sha[:12]))
        blog = os.path.join(self.out_dir, "build-%s.log" % label)
        # A cached worktree is left detached at its sha and never deleted here; ninja below
        # still checks it, so a half-finished earlier build is completed.
        if self.build_cache:
            wt = os.path.join(self.build_cache, sha)
        open(blog, "w").close()
        if self.build_cache and dead_worktree(wt):
            info("%s was a worktree of a clone that is gone: made again from %s" % (wt, self.o.repo))
            shutil.rmtree(wt)
            run(["git", "-C", self.o.repo, "worktree", "prune"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if not os.path.exists(os.path.join(wt, ".git")):
            with open(blog, "wb") as log:
                rc, _ = run(["git", "-C", self.o.repo, "worktree", "add", "--detach", wt, sha],
                            stdout=log, stderr=subprocess.STDOUT)
            if rc != 0:
                shell.show_log(blog)
                die("git worktree add failed for %s" % sha, 3)
            if not self.build_cache:
                self.worktrees.append(wt)
        if self.build_cache and run(["git", "-C", wt, "rev-parse", "HEAD"], stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL)[1] != sha:
            die("%s is not a worktree at %s: remove it or use another --build-cache" % (wt, sha), 3)
        info("building %s %s (log: %s)" % (label, sha[:12], blog))
        # KBENCH_CMAKE_ARGS: extra configure options, e.g. -DCMAKE_CXX_COMPILER=clang++.
        with open(blog, "ab") as log:
            ok = all(run(cmd, stdout=log, stderr=subprocess.STDOUT)[0] == 0 for cmd in (
                ["cmake", "-S", wt, "-B", wt + "/build", "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release"]
                + words(os.environ.get("KBENCH_CMAKE_ARGS", "")),
                ["cmake", "--build", wt + "/build", "--target", "kbench"]))
        if not ok:
            shell.show_log(blog, 30)
            die("build of %s %s failed (full log: %s)" % (label, sha[:12], blog), 3)
        binary = wt + "/build/kbench"
        if not os.access(binary, os.X_OK):
            die("build of %s produced no %s" % (label, binary), 3)
        return binary

    def side_librdkafka(self, version):
        """A side's librdkafka, a release V or tree:DIR@REV, as environment: its directory
        first on LD_LIBRARY_PATH, and what it was built from (its build.json's source)."""
        if version == "system":
            return ["KBENCH_LIBRDKAFKA_SOURCE=system"]
        build_args, tree = [version], ""
        m = TREE_SPEC.fullmatch(version)
        if m:
            build_args = ["--tree", home(m.group(1)), m.group(2)]
            tree = os.path.realpath(build_args[1])
        info("librdkafka %s (scripts/librdkafka build %s)" % (version, " ".join(build_args)))
        rc, folder = run([os.path.join(HERE, "librdkafka"), "build"] + build_args, stdout=subprocess.PIPE)
        # Its own exit 2 is bad input (unknown version, not a librdkafka commit); the rest failed.
        if rc != 0:
            die("scripts/librdkafka build %s failed" % " ".join(build_args), 2 if rc == 2 else 3)
        if not folder:
            return ["KBENCH_LIBRDKAFKA_SOURCE=system"]
        ld = os.environ.get("LD_LIBRARY_PATH")
        env = ["LD_LIBRARY_PATH=%s%s" % (folder, ":" + ld if ld else "")]
        # A commit's build is cached by sha alone, and may have been built from another
        # clone (a mirror, a checkout): the source names the tree this side asked for.
        path = folder.removesuffix("/lib") + "/build.json"
        try:
            src = stamp.librdkafka_source(cli.read_json(path, status=1), tree)
        except SystemExit:
            die("cannot read %s" % path, 3)
        return env + ["KBENCH_LIBRDKAFKA_SOURCE=" + src] if src else env

    def start_side_cluster(self, side, version):
        """One cluster per side, started one after the other so that the second's free ports
        (--port-base auto) cannot be the first's; kbench records KBENCH_BROKER_VERSION as the
        side's broker_version and measures the brokers in KBENCH_KAFKA_DIR."""
        folder = os.path.join(self.out_dir, "kafka-" + side)
        self.kafka_dirs.append(folder)  # before it starts: the clean-up stops whatever came up
        info("side %s: starting Apache Kafka %s in %s" % (side.upper(), version or "(the default version)", folder))
        rc, bootstrap = run([os.path.join(HERE, "kafka"), "start", "--dir", folder, "--port-base", "auto"]
                            + (["--version", version] if version else []), stdout=subprocess.PIPE)
        if rc != 0:
            die("scripts/kafka start failed for side %s (exit %d; logs: %s/logs)" % (side.upper(), rc, folder),
                2 if rc == 2 else 3)
        try:
            with open(folder + "/version") as f:
                version = f.read().rstrip("\n")
        except OSError as e:
            die("cannot read %s/version: %s" % (folder, e.strerror), 1)
        info("side %s: Kafka %s at %s" % (side.upper(), version, bootstrap))
        self.o.env[side] += ["KBENCH_BOOTSTRAP=" + bootstrap, "KBENCH_BROKER_VERSION=" + version,
                             "KBENCH_KAFKA_DIR=" + folder]
        # A secured cluster (KBENCH_KAFKA_SECURITY) needs its own throwaway credentials.
        try:
            with open(folder + "/security") as f:
                security = f.read().rstrip("\n")
        except OSError:
            security = "plaintext"
        if security != "plaintext":
            self.o.args[side].append("--client-config=%s/client.properties" % folder)

    def env(self, side, extra=()):
        env = dict(os.environ, **dict(extra))
        env.update(kv.split("=", 1) for kv in self.o.env[side])
        return env

    def run_kbench(self, side, out, cmd, extra_env=()):
        """One kbench process. A run whose benchmarks failed their checks exits 1 but writes
        its JSON with error_occurred: compare reports those (exit 3). No JSON is fatal."""
        with open(self.run_log, "ab") as log:
            rc, _ = run(cmd + ["--benchmark_repetitions=1", "--benchmark_out=" + out, "--benchmark_out_format=json"]
                        + self.o.kbench_args + self.o.args[side], env=self.env(side, extra_env),
                        stdout=log, stderr=subprocess.STDOUT)
        if not os.path.isfile(out) or os.path.getsize(out) == 0:
            shell.show_log(self.run_log, 20)
            die("kbench wrote no %s (exit %d): %s (log: %s)" % (out, rc, " ".join(cmd), self.run_log), 3)
        if rc != 0:
            info("kbench exited %d (a benchmark failed its checks; compare will say which)" % rc)

    def list_names(self, side, binary):
        with open(self.run_log, "ab") as log:
            rc, names = run([binary, "--benchmark_list_tests=true"] + self.filter_args + self.o.kbench_args
                            + self.o.args[side], env=self.env(side), stdout=subprocess.PIPE, stderr=log)
        if rc != 0:
            die("kbench --benchmark_list_tests failed (log: %s)" % self.run_log, 3)
        return [n for n in names.split("\n") if n]

    def cluster_regex(self, *binaries):
        regex = facts.cluster_regex(*binaries)
        if regex is None:
            die("none of %s says which families need a cluster (kbench --describe=json)" % " ".join(binaries), 1)
        return regex

    def check_iterations(self, json_path, name, want):
        base, suffix = split_time_suffix(name)
        try:
            entries = [b for b in results.load(json_path)["benchmarks"] if results.is_iteration(b)]
        except results.BenchmarkJsonError as e:
            die(e)
        entry = next((b for b in entries if b["name"] in (name, "%s/iterations:%d%s" % (base, want, suffix))), {})
        if entry.get("error_occurred") and entry.get("error_message"):
            die("'%s' failed its checks under callgrind: %s" % (name, entry["error_message"]), 3)
        got = str(entry.get("iterations", ""))
        if got != str(want):
            die("kbench ran '%s' with %s iterations instead of %d: does it honour KBENCH_FIXED_ITERATIONS?"
                % (name, got or "no", want), 3)

    def measure_instructions(self, side, label, rnd, out):
        """Instruction mode, one side, one round: writes a Google-Benchmark-shaped file."""
        o, binary = self.o, self.bin[side]
        names = self.list_names(side, binary)
        if not names:
            die("no benchmark of %s matches filter '%s'" % (label, o.filter or "<all>"), 3)
        if not o.instructions_of:
            # A row that talks to a cluster runs librdkafka's timers by the wall clock, not
            # the iteration count: identical builds would differ by more than --threshold.
            # Left out (all are measured when kbench is older than --describe and cannot say which).
            regex = facts.cluster_regex(binary, self.bin["b"], self.bin["a"])
            kept = [n for n in names if not re.search(regex, n)] if regex else names
            left = len(names) - len(kept)
            if left and not kept:
                die("the filter selects only rows of families that need a cluster, whose instructions "
                    "follow the wall clock: count one call path (--instructions-of rd_kafka_producev) or "
                    "compare them by time (docs/comparing.md)")
            if left and label == "base" and rnd == 1:
                info("note: left out %d row(s) of families that need a cluster: their instructions "
                     "follow the wall clock, not the iteration count; count one call path "
                     "(--instructions-of rd_kafka_producev) or compare them by time (docs/comparing.md)" % left)
            names = kept
        toggles = ["--toggle-collect=" + f for f in o.instructions_of]
        table = []
        table_path = "%s/runs/%s-%d.table" % (self.out_dir, label, rnd)
        open(table_path, "w").close()
        for i, name in enumerate(names, 1):
            base, suffix = split_time_suffix(name)
            esc = "%s(/iterations:[0-9]+)?%s" % (results.regex_escape(base), results.regex_escape(suffix))
            stem = {}
            for n in (o.iterations, 2 * o.iterations):
                stem[n] = "%s/runs/%s-%d-%d-%d" % (self.out_dir, label, rnd, i, n)
                self.run_kbench(side, stem[n] + ".json",
                                ["valgrind", "--tool=callgrind"] + toggles
                                + ["--callgrind-out-file=%s.callgrind.out" % stem[n], binary,
                                   "--benchmark_filter=^%s$" % esc],
                                extra_env={"KBENCH_FIXED_ITERATIONS": str(n)})
                self.check_iterations(stem[n] + ".json", name, n)
            # N's profile, then 2N's profile and JSON
            n2 = 2 * o.iterations
            table.append((name, o.iterations, stem[o.iterations] + ".callgrind.out",
                          stem[n2] + ".callgrind.out", stem[n2] + ".json"))
            with open(table_path, "a") as f:
                f.write("\t".join(map(str, table[-1])) + "\n")
        try:
            results.write_json(out, results.callgrind_json(table, o.instructions_of))
        except (results.BenchmarkJsonError, OSError) as e:
            info("error: %s" % e)
            die("cannot build instruction JSON for %s" % label, 3)

    def warm_up(self):
        """A broker that has just started (or sat idle) serves its first minute of load
        slower, and round 1's first side would pay for it alone: on a live cluster one
        untimed process first runs the selection's live rows (as scripts/bench does), never
        compared. Each side that differs in environment or arguments (maybe another
        cluster) warms its own."""
        o = self.o
        live = bool(os.environ.get("KBENCH_BOOTSTRAP")) or any(
            a.startswith("--bootstrap") or a.startswith("KBENCH_BOOTSTRAP=") and a != "KBENCH_BOOTSTRAP="
            for a in o.kbench_args + o.args["a"] + o.args["b"] + o.env["a"] + o.env["b"])
        if o.instructions or not live:
            return
        differ = [" ".join(o.env[s]) + " | " + " ".join(o.args[s]) for s in "ab"]
        for side in "ab" if differ[0] != differ[1] else "a":
            label = "base" if side == "a" else "new"
            # As the bash tool's process substitution: a failure to list (or to tell the
            # live rows) is said, and the side is not warmed up.
            try:
                regex = self.cluster_regex(self.bin[side], self.bin["b"], self.bin["a"])
                rows = [n for n in self.list_names(side, self.bin[side]) if re.search(regex, n)][:40]
            except SystemExit as e:
                if e.code in (130, 143):
                    raise
                rows = []
            if rows:
                info("warming the cluster up: %d live row(s) of %s, untimed" % (len(rows), label))
                warm = "warmup.json" if side == "a" else "warmup-new.json"
                self.run_kbench(side, "%s/runs/%s" % (self.out_dir, warm),
                                [self.bin[side], "--benchmark_filter=" + results.exact_filter(rows),
                                 "--window-seconds=1", "--warmup-seconds=%d" % max(
                                     1, math.ceil(WARMUP_LOAD_SECONDS / len(rows)))])

    def run_round(self, rnd):
        """One round: base and new back to back. Counterbalanced order: a position effect
        (whatever runs second in a round runs on a machine the first has just loaded) would
        otherwise look like a difference of builds."""
        for side in "ab" if rnd % 2 else "ba":
            label = "base" if side == "a" else "new"
            out = "%s/runs/%s-%d.json" % (self.out_dir, label, rnd)
            info("round %d: %s" % (rnd, label))
            if self.o.instructions:
                self.measure_instructions(side, label, rnd, out)
            else:
                self.run_kbench(side, out, [self.bin[side]] + self.filter_args)
            self.files[side].append(out)

    def merge_and_compare(self, alpha):
        """Merges both sides and compares them at level ALPHA; sets rc."""
        o = self.o
        for side, name in (("a", "base"), ("b", "new")):
            try:
                results.merge_files("%s/%s.json" % (self.out_dir, name), self.files[side], self.pairing)
            except (results.BenchmarkJsonError, OSError) as e:
                info("error: %s" % e)
                die("merging %s runs failed" % name, 3)
        self.rc, _ = run([os.path.join(HERE, "compare"), self.out_dir + "/base.json", self.out_dir + "/new.json",
                          "--out", self.out_dir + "/verdict.json", "--threshold", o.threshold]
                         + (["--force"] if o.force else [])
                         + (["--accept-inconclusive"] if o.accept_inconclusive else [])
                         + (["--metric", "instructions"] if o.instructions else [])
                         + (["--alpha", alpha] if alpha else []))

    def open_rows(self):
        try:
            return len(cli.read_json(self.out_dir + "/verdict.json", status=1).get("inconclusive", []))
        except (SystemExit, AttributeError, TypeError):
            return 0

    def rounds(self):
        o = self.o
        # Round i's base and new processes ran back to back: compare pairs them (one label per
        # invocation, so files of different invocations never pair).
        self.pairing = "" if o.instructions else "bench-commits rounds %s %d" % (
            time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()), os.getpid())
        rnd, started = 0, int(time.time())
        for rnd in range(1, o.runs + 1):
            self.run_round(rnd)
        info("results in %s" % self.out_dir)
        if not o.budget:
            self.merge_and_compare(o.alpha)
            return
        # Sequential looks, each at alpha / L: a false alarm at any look stays <= alpha
        # (Bonferroni, valid whatever the looks' correlation, which for Holm over moderated
        # tests has no closed form for Pocock or O'Brien-Fleming). Steps of >= 2 rounds keep
        # A-first = B-first.
        look_alpha = "%.6g" % (float(o.alpha or "0.01") / o.max_looks)
        step = max(o.runs // 2, 2)
        for look in range(1, o.max_looks + 1):
            info("look %d/%d at %d rounds (alpha %s per look)" % (look, o.max_looks, rnd, look_alpha))
            self.merge_and_compare(look_alpha)
            open_rows = self.open_rows()
            if open_rows == 0:
                info("look %d: every primary row has a verdict (or cannot get one from more rounds); "
                     "stopping" % look)
                return
            if look == o.max_looks:
                info("look %d: %d primary row(s) inconclusive and no look left (--max-looks %d)"
                     % (look, open_rows, o.max_looks))
                return
            elapsed = int(time.time()) - started
            next_s = (elapsed // rnd + 1) * step
            if elapsed + next_s > float(o.budget) * 60:
                info("look %d: %d primary row(s) inconclusive, but %d more rounds (~%d s) would exceed "
                     "the budget of %s min" % (look, open_rows, step, next_s, o.budget))
                return
            info("look %d: %d primary row(s) inconclusive; adding %d rounds" % (look, open_rows, step))
            for _ in range(step):
                rnd += 1
                self.run_round(rnd)

    def profile(self):
        """Where did the time go? A differential profile of each flagged row, on the same builds."""
        o, out = self.o, self.out_dir
        try:
            regressed = commits.regressed(cli.read_json(out + "/verdict.json", status=1))
        except SystemExit:
            regressed = []
        live_re = self.cluster_regex(self.bin["b"], self.bin["a"])
        for name in regressed:
            tool = "perf" if re.search(live_re, name) else "callgrind"
            slug = re.sub("_+", "_", re.sub(r"[^A-Za-z0-9._-]", "_", name))
            slug = slug.removeprefix("_").removesuffix("_")[:80]
            info("differential profile of regressed row %s (%s)" % (name, tool))
            env = dict(os.environ, KBENCH_FIXED_ITERATIONS=os.environ.get("KBENCH_FIXED_ITERATIONS")
                       or str(o.iterations))
            rc, _ = run([os.path.join(HERE, "profile"), "--tool", tool, "--out-dir", "%s/profiles/%s" % (out, slug),
                         "--diff", self.bin["a"], self.bin["b"],
                         "^%s(/iterations:[0-9]+)?$" % results.regex_escape(name)] + o.kbench_args,
                        env=env, stdout=subprocess.DEVNULL)
            if rc != 0:
                info("warning: the differential profile of %s failed (see %s/profiles/%s)" % (name, out, slug))
            else:
                info("profile: %s/profiles/%s/diff/diff.txt" % (out, slug))

    def main(self):
        o = self.o
        self.bin["a"] = self.build(o.sha["a"], "base")
        if o.sha["a"] == o.sha["b"]:
            if not any([o.rdk["a"], o.rdk["b"], o.kafka["a"], o.kafka["b"]] + o.env["a"] + o.env["b"]
                       + o.args["a"] + o.args["b"]):
                info("A and B are the same commit: an A/A run, useful to see this machine's noise")
            self.bin["b"] = self.bin["a"]
        else:
            self.bin["b"] = self.build(o.sha["b"], "new")
        for side in "ab":
            if o.rdk[side]:
                o.env[side] += self.side_librdkafka(o.rdk[side])
        if o.kafka["a"] or o.kafka["b"]:
            self.start_side_cluster("a", o.kafka["a"])
            self.start_side_cluster("b", o.kafka["b"])
        open(self.run_log, "w").close()
        self.warm_up()
        self.rounds()
        if o.profile and self.rc == 1:
            self.profile()
        return self.rc


def split_time_suffix(name):
    """(NAME's base, its time suffixes): a row with fixed iterations is NAME/iterations:N,
    before its time suffixes (Produce/.../iterations:N/real_time)."""
    suffix = ""
    m = TIME_SUFFIX.fullmatch(name)
    while m:
        name, suffix = m.group(1), m.group(2) + suffix
        m = TIME_SUFFIX.fullmatch(name)
    return name, suffix


def main(argv):
    cli.prog = "bench-commits"
    o = parse(argv)
    check(o)
    cli.dry_run_exit()
    out_dir = o.out_dir or "%s/results/runs/%s-%s-vs-%s" % (o.repo, time.strftime("%Y%m%d-%H%M%S"),
                                                            o.sha["a"][:12], o.sha["b"][:12])
    for folder, made in ((out_dir, out_dir + "/runs"), (o.build_cache, o.build_cache)):
        try:
            if folder:
                os.makedirs(made, exist_ok=True)
        except OSError as e:
            die("cannot create %s (%s)" % (folder, e.strerror))
    work = tempfile.mkdtemp(prefix="kbench-commits.", dir=os.environ.get("TMPDIR") or "/tmp")
    tool = BenchCommits(o, os.path.abspath(out_dir), o.build_cache and os.path.abspath(o.build_cache), work)
    TRAP.install()
    try:
        return tool.main()
    finally:
        tool.cleanup()


if __name__ == "__main__":
    cli.run(main, failed_writes=OSError)
