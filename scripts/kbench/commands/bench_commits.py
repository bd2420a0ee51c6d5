"""Build two commits of kbench side by side and compare them statistically, by time or by
callgrind's instruction counts.

A side is a kbench commit, the librdkafka it runs on, its environment and its kbench
arguments; A and B may be the same commit and differ in the rest:
  scripts/bench-commits HEAD HEAD --librdkafka-a system --librdkafka-b 2.15.1
  scripts/bench-commits HEAD HEAD --librdkafka-a tree:~/src/librdkafka@v2.15.1 \\
                                  --librdkafka-b tree:~/src/librdkafka@my-branch
  scripts/bench-commits HEAD HEAD --env-b LD_LIBRARY_PATH=/src/librdkafka/src
  scripts/bench-commits HEAD HEAD --args-a '-X linger.ms=5' --args-b '-X linger.ms=50'
  scripts/bench-commits HEAD HEAD --kafka-a 3.9.1 --kafka-b 4.4.0

Builds A (base) and B (new) in their own git worktrees, runs them interleaved and
counterbalanced (A B B A A B B A ...), merges each side's runs into one Google Benchmark
JSON and compares them as scripts/compare does. On a live cluster an untimed process first
warms the broker up (runs/warmup.json, never compared).

Instruction mode: each benchmark that matches --filter runs alone under callgrind, twice per
side, with N and 2N iterations; the metric is (Ir(2N) - Ir(N)) / N, one iteration's
instructions without start-up, so one run per side decides. Rows of families that need a
cluster are left out (their count follows the wall clock); --instructions-of counts one
call path of them instead.

Results: DIR/base.json, DIR/new.json (merged), DIR/verdict.json, DIR/runs/ (one JSON per
process, plus callgrind.out files), DIR/build-*.log.

exit status: that of scripts/compare (0 every row judged and none regressed, 1 regression,
2 bad input, 3 something could not be judged: a benchmark errored or is missing, a verdict
is inconclusive), or 2 for bad usage, 3 when a build fails, a cluster of --kafka-a/-b does
not start or a kbench run writes no JSON; 130/143 interrupted.
"""

import contextlib
import math
import os
import pathlib
import re
import shlex
import shutil
import signal
import sys
import tempfile
import time
from unittest import mock

import kbench
from kbench import __main__ as command_line
from kbench import build_stamp, cli, facts, git, proc, results, stats
from kbench import kafka_cluster as kafka
from kbench.cli import die, info
from kbench.commands import compare as compare_command
from kbench.commands import librdkafka, profile

TREE_SPEC = re.compile(r"tree:(.+)@([^@]+)")  # REV: what follows the last '@'
OWN_CLUSTER = re.compile(r"KBENCH_BOOTSTRAP=|KBENCH_BROKER_VERSION=|KBENCH_KAFKA_DIR=|--bootstrap|--broker-dir")
# Unmeasured load the warm-up process's rows share out: a broker serves its first minute of
# load slower (docs/methodology.md, "A warm cluster"; docs/validation.md V19).
WARMUP_LOAD_SECONDS = 60
TIME_SUFFIXES = re.compile(r"(.*?)((?:/(?:real_time|manual_time|process_time))*)")


def add_arguments(parser):
    # A B [options] -- KBENCH_ARGS: one positional list, filled around the options.
    parser.parse_args = parser.parse_intermixed_args
    parser.add_argument("words", nargs="*", metavar="A B",
                        help="the base and new commits; after --, arguments for every kbench run")
    values = (
        ("--runs", "N", cli.POSITIVE, None, "rounds, each one kbench process per side (base and new back to "
         "back, so that they pair); default 8, the fewest for a paired verdict at p < 0.01, or 1 with "
         "--instructions"),
        ("--budget", "MINUTES", cli.POSITIVE_NUMBER, None, "after the first rounds (by default the 10 a paired "
         "verdict needs at alpha / --max-looks), add rounds (2 at a time, or N/2) while a primary row is "
         "inconclusive and they fit in MINUTES; each look is tested at alpha / --max-looks "
         "(docs/comparing.md). Not with --instructions"),
        ("--max-looks", "L", cli.POSITIVE, 5, "looks at most under --budget (default 5)"),
        ("--filter", "REGEX", str, None, "kbench's --benchmark_filter (default: all)"),
        ("--iterations", "N", cli.POSITIVE, 100, "fixed iteration count in --instructions mode (default 100), "
         "given to kbench as KBENCH_FIXED_ITERATIONS"),
        ("--alpha", "A", cli.LEVEL, 0.01, "the comparison's level (default 0.01)"),
        ("--threshold", "PCT", cli.NUMBER, None, "smallest change that counts (default 5; 0.5 with "
         "--instructions, 1 with --instructions-of)"),
        ("--out-dir", "DIR", str, None, "runs and results (default results/runs/<date>-<A>-vs-<B>/)"),
        ("--repo", "DIR", str, kbench.ROOT, "the git repository of the commits (default: this checkout)"),
        ("--build-cache", "DIR", str, None, "build each commit in DIR/<sha> and keep it, so that a later call "
         "only re-runs ninja (keyed by the commit alone: another DIR for other KBENCH_CMAKE_ARGS)"))
    for option, metavar, kind, default, what in values:
        parser.add_argument(option, metavar=metavar, type=kind, default=default, help=what)
    for side in "ab":
        parser.add_argument("--librdkafka-" + side, metavar="V", default="",
                            help="side %s on librdkafka release V ('system': Debian's), or on commit REV of "
                            "the librdkafka git repository DIR: tree:DIR@REV" % side.upper())
        parser.add_argument("--env-" + side, metavar="NAME=VALUE", action="append", default=[],
                            type=cli.matching(r"[A-Za-z_][A-Za-z0-9_]*=.*", "NAME=VALUE"),
                            help="a variable for every kbench process of side %s (repeatable)" % side.upper())
        parser.add_argument("--args-" + side, metavar="ARGS", type=shlex.split, default=[],
                            help="kbench arguments for side %s only, split as a shell splits them "
                            "(--args-%s=--opt when ARGS is one word starting with -)" % (side.upper(), side))
        parser.add_argument("--kafka-" + side, metavar="V", default="",
                            help="side %s on a cluster of Apache Kafka V started in DIR/kafka-%s (the other "
                            "side on the default version if not given); not with a bootstrap of one's own"
                            % (side.upper(), side))
    parser.add_argument("--instructions-of", metavar="FUNC", action="append", default=[],
                        type=cli.matching(r"[A-Za-z_*?][A-Za-z0-9_:*?]*", "function name"),
                        help="with --instructions (implied): count only what runs inside FUNC (callgrind "
                        "--toggle-collect; repeatable; * and ? match), e.g. rd_kafka_producev; one that "
                        "collects nothing is an error (exit 3)")
    for flag, what in (("--instructions", "measure callgrind's instructions instead of time"),
                       ("--force", "compare different contexts"),
                       ("--accept-inconclusive", "exit 0, not 3, when the only unjudged rows are inconclusive"),
                       ("--keep-worktrees", "do not delete the worktrees and builds on exit"),
                       ("--profile", "a differential profile of A and B (scripts/profile --diff) of each "
                        "regressed row, at most 5: DIR/profiles/<row>/diff/")):
        parser.add_argument(flag, action="store_true", help=what)


def parse(argv):
    """The Namespace of a command line of scripts/bench-commits, for callers in-process."""
    return command_line.parser_for("bench-commits", sys.modules[__name__]).parse_args(argv)


def regressed(verdict, most=5):
    """The names of the regressed rows, largest change first, without the iterations suffix."""
    rows = sorted(verdict.get("regressions", []), key=lambda r: -abs(r.get("change_pct") or 0))
    return list(dict.fromkeys(re.sub(r"/iterations:[0-9]+$", "", r["name"]) for r in rows))[:most]


def commit(repo, rev, said=""):
    """The commit REV names in the git repository REPO; a REV that names none is bad usage
    (SAID, e.g. "--kbench ", starts the message)."""
    sha = git.try_run(repo, "rev-parse", "--verify", "--quiet", rev + "^{commit}")
    if not sha:
        die("%s'%s' is not a commit in %s" % (said, rev, repo))
    return sha


def check_tree(spec):
    """tree:DIR@REV, checked before anything is built: a bad DIR or REV is bad usage."""
    m = TREE_SPEC.fullmatch(spec)
    if not m:
        die("--librdkafka-a/-b tree: needs tree:DIR@REV, got '%s'" % spec)
    try:
        librdkafka.path_tree(os.path.expanduser(m.group(1)), m.group(2))
    except librdkafka.BuildError as e:
        if e.status == 2:
            die("bad librdkafka side '%s': %s" % (spec, e))


def pin_mock_cluster(args):
    """Two librdkafka releases meet the same mock cluster, kbench-mock, unless one is chosen."""
    if args.librdkafka_a == args.librdkafka_b or args.kafka_a or args.kafka_b or os.environ.get("KBENCH_BOOTSTRAP"):
        return
    given = args.kbench_args + args.args_a + args.args_b + args.env_a + args.env_b
    if any(a.startswith("--mock") or OWN_CLUSTER.match(a) for a in given):
        return
    info("the sides load different librdkafka releases: rows on the mock cluster run on "
         "kbench-mock (--mock=process), the same cluster for both (--mock=embedded after -- "
         "measures each release's own mock instead)")
    args.kbench_args.append("--mock=process")


def check_kafka_sides(args):
    """--kafka-a/-b: nothing else may name a cluster; unknown versions are refused before any build."""
    for side in "ab":
        for arg in getattr(args, "env_" + side) + getattr(args, "args_" + side) + args.kbench_args:
            if OWN_CLUSTER.match(arg):
                die("side %s runs on a cluster this command starts (--kafka-a/--kafka-b), so "
                    "'%s' cannot choose its cluster; drop one of them" % (side.upper(), arg))
    if os.environ.get("KBENCH_BOOTSTRAP"):
        info("ignoring KBENCH_BOOTSTRAP=%s: each side runs on the cluster started for it"
             % os.environ["KBENCH_BOOTSTRAP"])
    for side in "ab":
        version = getattr(args, "kafka_" + side)
        if version:
            try:
                kafka.classpath(version)
            except kafka.KafkaError as e:
                if e.status == 2:
                    die("--kafka-%s %s: not a Kafka release scripts/kafka can run: %s" % (side, version, e))
                die("--kafka-%s %s: scripts/kafka could not resolve it: %s" % (side, version, e), 3)


def check(args):
    """The checks made before anything is built; fills in the defaults."""
    if len(args.words) < 2 or not all(w.startswith("-") for w in args.words[2:3]):
        die("expected two commits A and B, then kbench's arguments after --, got %s"
            % (" ".join(args.words) or "nothing"))
    args.commits, args.kbench_args = args.words[:2], args.words[2:]
    args.instructions = args.instructions or bool(args.instructions_of)
    for option, path in (("--out-dir", args.out_dir), ("--build-cache", args.build_cache)):
        if path:
            cli.check_out_dir(path, option)
    for spec in (args.librdkafka_a, args.librdkafka_b):
        if spec.startswith("tree:"):
            check_tree(spec)
    runs_given = args.runs is not None
    args.runs = args.runs or (1 if args.instructions else 8)
    if args.budget:
        if args.instructions:
            die("--budget does not apply to --instructions (one deterministic round decides)")
        # Each look is tested at alpha / L: the first starts with the rounds a paired verdict
        # needs there (10 at 0.01 / 5), made even (as many A-first as B-first rounds).
        pairs = stats.min_pairs(args.alpha / args.max_looks)
        pairs += pairs % 2
        if not runs_given:
            args.runs = max(args.runs, pairs)
        elif args.runs < pairs:
            info("note: under --budget each look is tested at alpha / %d, where a paired verdict "
                 "needs %d rounds; looks at fewer rounds (--runs %d) compare the sides unpaired"
                 % (args.max_looks, pairs, args.runs))
    if args.threshold is None:
        # --instructions-of: a send call's count moves by up to ~0.5 % between identical builds.
        args.threshold = 1.0 if args.instructions_of else 0.5 if args.instructions else 5.0
    if not args.instructions and args.runs < 3:
        info("warning: %d run(s) per side cannot show a significant time difference; every "
             "result will be inconclusive" % args.runs)
    pin_mock_cluster(args)
    if args.kafka_a or args.kafka_b:
        check_kafka_sides(args)
    for tool in ("git", "cmake", "ninja") + (("valgrind",) if args.instructions else ()):
        if not shutil.which(tool):
            die("'%s' not found (install it: scripts/setup)" % tool)
    repo = git.try_run(args.repo, "rev-parse", "--show-toplevel")
    if not repo:
        die("'%s' is not inside a git repository" % args.repo)
    args.repo, args.sha = repo, {side: commit(repo, rev) for side, rev in zip("ab", args.commits)}


def dead_worktree(path):
    """PATH is a worktree (a build-cache entry) of a clone since deleted: its .git names no folder."""
    try:
        with open(os.path.join(path, ".git")) as f:
            line = f.readline()
    except OSError:  # no .git file (a folder, or nothing): not a worktree of another clone
        return False
    return line.startswith("gitdir: ") and not os.path.isdir(line[len("gitdir: "):].strip())


def split_time_suffix(name):
    """(NAME's base, its time suffixes): fixed iterations go between, NAME/iterations:N/real_time."""
    return TIME_SUFFIXES.fullmatch(name).groups()


def profile_row(argv, fixed_iterations):
    """scripts/profile ARGV, in this process, with kbench at FIXED_ITERATIONS; its status."""
    try:
        with mock.patch.dict(os.environ, KBENCH_FIXED_ITERATIONS=fixed_iterations), \
                open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):
            return profile.main(command_line.parser_for("profile", profile).parse_args(argv))
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else 1


class BenchCommits:
    def __init__(self, args, out_dir, build_cache, work):
        self.args, self.out_dir, self.build_cache, self.work = args, out_dir, build_cache, work
        self.kafka_dirs, self.bin = [], {}
        self.env_of = {"a": list(args.env_a), "b": list(args.env_b)}
        self.args_of = {"a": list(args.args_a), "b": list(args.args_b)}
        self.files = {"a": [], "b": []}
        self.run_log = os.path.join(out_dir, "kbench.log")
        self.filter_args = ["--benchmark_filter=" + args.filter] if args.filter else []
        self.rc = 0

    def cleanup(self):
        # A second Ctrl-C must not leave a broker running: stopping is not interruptible.
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, signal.SIG_IGN)
        for folder in self.kafka_dirs:
            kafka.stop(folder)
        if self.kafka_dirs:
            info("stopped the clusters (logs: %s)" % " ".join(d + "/logs" for d in self.kafka_dirs))
        if self.args.keep_worktrees:
            info("kept worktrees under %s" % self.work)
            return
        shutil.rmtree(self.work, ignore_errors=True)  # its worktrees; prune forgets them
        git.try_run(self.args.repo, "worktree", "prune")

    def build(self, sha, label):
        """Builds one commit in its own worktree; its kbench binary."""
        repo = self.args.repo
        blog = os.path.join(self.out_dir, "build-%s.log" % label)
        # A cached worktree stays, detached at its sha; ninja completes a half-finished build.
        wt = os.path.join(self.build_cache, sha) if self.build_cache else \
            os.path.join(self.work, "%s-%s" % (label, sha[:12]))
        open(blog, "w").close()
        if self.build_cache and dead_worktree(wt):
            info("%s was a worktree of a clone that is gone: made again from %s" % (wt, repo))
            shutil.rmtree(wt)
            git.try_run(repo, "worktree", "prune")
        if not os.path.exists(os.path.join(wt, ".git")):
            if proc.run(["git", "-C", repo, "worktree", "add", "--detach", wt, sha], log=blog).returncode:
                die("git worktree add failed for %s:\n%s" % (sha, proc.tail(blog)), 3)
        if self.build_cache and git.try_run(wt, "rev-parse", "HEAD") != sha:
            die("%s is not a worktree at %s: remove it or use another --build-cache" % (wt, sha), 3)
        info("building %s %s (log: %s)" % (label, sha[:12], blog))
        # KBENCH_CMAKE_ARGS: extra configure options, e.g. -DCMAKE_CXX_COMPILER=clang++.
        for cmd in (["cmake", "-S", wt, "-B", wt + "/build", "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release"]
                    + shlex.split(os.environ.get("KBENCH_CMAKE_ARGS", "")),
                    ["cmake", "--build", wt + "/build", "--target", "kbench"]):
            if proc.run(cmd, log=blog).returncode:
                die("build of %s %s failed (full log: %s):\n%s" % (label, sha[:12], blog, proc.tail(blog, 30)), 3)
        binary = wt + "/build/kbench"
        if not os.access(binary, os.X_OK):
            die("build of %s produced no %s" % (label, binary), 3)
        return binary

    def side_librdkafka(self, spec):
        """A side's librdkafka (V or tree:DIR@REV) as environment: LD_LIBRARY_PATH and its source."""
        if spec == "system":
            return ["KBENCH_LIBRDKAFKA_SOURCE=system"]
        m = TREE_SPEC.fullmatch(spec)
        tree = os.path.realpath(os.path.expanduser(m.group(1))) if m else ""
        info("librdkafka %s" % spec)
        try:
            folder = librdkafka.build_tree(tree, m.group(2)) if m else librdkafka.build(spec)
        except librdkafka.BuildError as e:
            # Its status 2 is bad input (unknown version, not a librdkafka commit); the rest failed.
            die("librdkafka %s: %s" % (spec, e), 2 if e.status == 2 else 3)
        if not folder:
            return ["KBENCH_LIBRDKAFKA_SOURCE=system"]
        ld = os.environ.get("LD_LIBRARY_PATH")
        env = ["LD_LIBRARY_PATH=%s%s" % (folder, ":" + ld if ld else "")]
        src = build_stamp.librdkafka_source(cli.read_json(folder.removesuffix("/lib") + "/build.json", status=3), tree)
        return env + ["KBENCH_LIBRDKAFKA_SOURCE=" + src] if src else env

    def start_side_cluster(self, side, version):
        """One cluster per side, started one after the other (so that their free ports differ)."""
        folder = os.path.join(self.out_dir, "kafka-" + side)
        self.kafka_dirs.append(folder)  # before it starts: the clean-up stops whatever came up
        info("side %s: starting Apache Kafka %s in %s" % (side.upper(), version or "(the default version)", folder))
        try:
            bootstrap = kafka.start(folder, version=version or None, port_base="auto")
            env = kafka.kbench_env(folder, bootstrap)
        except kafka.KafkaError as e:
            die("side %s: Kafka did not start: %s (logs: %s/logs)" % (side.upper(), e, folder),
                2 if e.status == 2 else 3)
        info("side %s: Kafka %s at %s" % (side.upper(), env[1].partition("=")[2], bootstrap))
        self.env_of[side] += env
        # A secured cluster (KBENCH_KAFKA_SECURITY) needs its own throwaway credentials.
        if os.path.isfile(folder + "/security") and pathlib.Path(folder, "security").read_text().strip() != "plaintext":
            self.args_of[side].append("--client-config=%s/client.properties" % folder)

    def env(self, side, extra=()):
        env = dict(os.environ, **dict(extra))
        env.update(kv.split("=", 1) for kv in self.env_of[side])
        return env

    def run_kbench(self, side, out, cmd, extra_env=()):
        """One kbench process. A failed check still writes the JSON (compare reports it); no JSON is fatal."""
        rc = proc.run(cmd + ["--benchmark_repetitions=1", "--benchmark_out=" + out, "--benchmark_out_format=json"]
                      + self.args.kbench_args + self.args_of[side], env=self.env(side, extra_env),
                      log=self.run_log).returncode
        if not os.path.isfile(out) or os.path.getsize(out) == 0:
            die("kbench wrote no %s (exit %d): %s (log: %s):\n%s"
                % (out, rc, " ".join(cmd), self.run_log, proc.tail(self.run_log)), 3)
        if rc != 0:
            info("kbench exited %d (a benchmark failed its checks; compare will say which)" % rc)

    def list_names(self, side, binary):
        done = proc.run([binary, "--benchmark_list_tests=true"] + self.filter_args + self.args.kbench_args
                        + self.args_of[side], env=self.env(side), log=self.run_log, capture=True)
        if done.returncode != 0:
            die("kbench --benchmark_list_tests failed (log: %s)" % self.run_log, 3)
        return done.stdout.split()

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
        args, binary = self.args, self.bin[side]
        names = self.list_names(side, binary)
        if not names:
            die("no benchmark of %s matches filter '%s'" % (label, args.filter or "<all>"), 3)
        if not args.instructions_of:
            # A row that talks to a cluster counts librdkafka's timers, which follow the wall clock.
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
        toggles = ["--toggle-collect=" + f for f in args.instructions_of]
        table = []
        n1, n2 = args.iterations, 2 * args.iterations
        for i, name in enumerate(names, 1):
            base, suffix = split_time_suffix(name)
            esc = "%s(/iterations:[0-9]+)?%s" % (results.regex_escape(base), results.regex_escape(suffix))
            stem = {n: "%s/runs/%s-%d-%d-%d" % (self.out_dir, label, rnd, i, n) for n in (n1, n2)}
            for n in (n1, n2):
                self.run_kbench(side, stem[n] + ".json",
                                ["valgrind", "--tool=callgrind"] + toggles
                                + ["--callgrind-out-file=%s.callgrind.out" % stem[n], binary,
                                   "--benchmark_filter=^%s$" % esc],
                                extra_env={"KBENCH_FIXED_ITERATIONS": str(n)})
                self.check_iterations(stem[n] + ".json", name, n)
            table.append((name, n1, stem[n1] + ".callgrind.out", stem[n2] + ".callgrind.out", stem[n2] + ".json"))
        with open("%s/runs/%s-%d.table" % (self.out_dir, label, rnd), "w") as f:
            f.writelines("\t".join(map(str, row)) + "\n" for row in table)
        try:
            results.write_json(out, results.callgrind_json(table, args.instructions_of))
        except (results.BenchmarkJsonError, OSError) as e:
            die("cannot build instruction JSON for %s: %s" % (label, e), 3)

    def warm_up(self):
        """On a live cluster, one untimed process of the live rows per distinct side warms it up."""
        a = self.args
        live = bool(os.environ.get("KBENCH_BOOTSTRAP")) or any(
            w.startswith("--bootstrap") or w.startswith("KBENCH_BOOTSTRAP=") and w != "KBENCH_BOOTSTRAP="
            for w in a.kbench_args + self.args_of["a"] + self.args_of["b"] + self.env_of["a"] + self.env_of["b"])
        if a.instructions or not live:
            return
        same = (self.env_of["a"], self.args_of["a"]) == (self.env_of["b"], self.args_of["b"])
        for side in "a" if same else "ab":
            label = "base" if side == "a" else "new"
            regex = facts.cluster_regex(self.bin[side], self.bin["b"], self.bin["a"])
            if regex is None:
                info("warning: kbench does not say which families need a cluster: no warm-up for %s" % label)
                continue
            rows = [n for n in self.list_names(side, self.bin[side]) if re.search(regex, n)][:40]
            if rows:
                info("warming the cluster up: %d live row(s) of %s, untimed" % (len(rows), label))
                warm = "warmup.json" if side == "a" else "warmup-new.json"
                self.run_kbench(side, "%s/runs/%s" % (self.out_dir, warm),
                                [self.bin[side], "--benchmark_filter=" + results.exact_filter(rows),
                                 "--window-seconds=1", "--warmup-seconds=%d" % max(
                                     1, math.ceil(WARMUP_LOAD_SECONDS / len(rows)))])

    def run_round(self, rnd):
        """One round, base and new back to back, counterbalanced (running second is a position effect)."""
        for side in "ab" if rnd % 2 else "ba":
            label = "base" if side == "a" else "new"
            out = "%s/runs/%s-%d.json" % (self.out_dir, label, rnd)
            info("round %d: %s" % (rnd, label))
            if self.args.instructions:
                self.measure_instructions(side, label, rnd, out)
            else:
                self.run_kbench(side, out, [self.bin[side]] + self.filter_args)
            self.files[side].append(out)

    def merge_and_compare(self, alpha):
        """Merges both sides and compares them at level ALPHA; sets rc; the verdict."""
        a = self.args
        sides = {"a": self.out_dir + "/base.json", "b": self.out_dir + "/new.json"}
        for side, name in (("a", "base"), ("b", "new")):
            try:
                results.merge_files(sides[side], self.files[side], self.pairing)
            except (results.BenchmarkJsonError, OSError) as e:
                die("merging %s runs failed: %s" % (name, e), 3)
        verdict = compare_command.judge([sides["a"]], [sides["b"]], alpha=alpha, threshold=a.threshold,
                                        metric="instructions" if a.instructions else None, force=a.force)
        compare_command.write(verdict, json_path=self.out_dir + "/verdict.json")
        self.rc = compare_command.exit_code(verdict, accept_inconclusive=a.accept_inconclusive)
        return verdict

    def rounds(self):
        a = self.args
        # compare pairs round i's base and new; one label per invocation.
        self.pairing = None if a.instructions else "bench-commits rounds %s %d" % (
            time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()), os.getpid())
        started = time.monotonic()
        for rnd in range(1, a.runs + 1):
            self.run_round(rnd)
        info("results in %s" % self.out_dir)
        if not a.budget:
            return self.merge_and_compare(a.alpha)
        # Sequential looks, each at alpha / L (Bonferroni: valid whatever the looks' correlation).
        # Steps of >= 2 rounds keep A-first = B-first.
        look_alpha = a.alpha / a.max_looks
        step = max(a.runs // 2, 2)
        for look in range(1, a.max_looks + 1):
            info("look %d/%d at %d rounds (alpha %.6g per look)" % (look, a.max_looks, rnd, look_alpha))
            verdict = self.merge_and_compare(look_alpha)
            open_rows = len(verdict.get("inconclusive", []))
            if open_rows == 0:
                info("look %d: every primary row has a verdict (or cannot get one from more rounds); stopping" % look)
                return verdict
            if look == a.max_looks:
                info("look %d: %d primary row(s) inconclusive and no look left (--max-looks %d)"
                     % (look, open_rows, a.max_looks))
                return verdict
            elapsed = time.monotonic() - started
            next_s = elapsed / rnd * step
            if elapsed + next_s > a.budget * 60:
                info("look %d: %d primary row(s) inconclusive, but %d more rounds (~%d s) would exceed "
                     "the budget of %g min" % (look, open_rows, step, next_s, a.budget))
                return verdict
            info("look %d: %d primary row(s) inconclusive; adding %d rounds" % (look, open_rows, step))
            for _ in range(step):
                rnd += 1
                self.run_round(rnd)

    def profile(self, verdict):
        """A differential profile of each regressed row, on the same builds."""
        a, out = self.args, self.out_dir
        live_re = self.cluster_regex(self.bin["b"], self.bin["a"])
        for name in regressed(verdict):
            tool = "perf" if re.search(live_re, name) else "callgrind"
            slug = re.sub("_+", "_", re.sub(r"[^A-Za-z0-9._-]", "_", name)).strip("_")[:80]
            info("differential profile of regressed row %s (%s)" % (name, tool))
            argv = ["--tool", tool, "--out-dir", "%s/profiles/%s" % (out, slug), "--diff", self.bin["a"], self.bin["b"],
                    "^%s(/iterations:[0-9]+)?$" % results.regex_escape(name)] + a.kbench_args
            if profile_row(argv, os.environ.get("KBENCH_FIXED_ITERATIONS") or str(a.iterations)) != 0:
                info("warning: the differential profile of %s failed (see %s/profiles/%s)" % (name, out, slug))
            else:
                info("profile: %s/profiles/%s/diff/diff.txt" % (out, slug))

    def main(self):
        a = self.args
        self.bin["a"] = self.build(a.sha["a"], "base")
        if a.sha["a"] == a.sha["b"]:
            if not any([a.librdkafka_a, a.librdkafka_b, a.kafka_a, a.kafka_b] + a.env_a + a.env_b
                       + a.args_a + a.args_b):
                info("A and B are the same commit: an A/A run, useful to see this machine's noise")
            self.bin["b"] = self.bin["a"]
        else:
            self.bin["b"] = self.build(a.sha["b"], "new")
        for side in "ab":
            spec = getattr(a, "librdkafka_" + side)
            if spec:
                self.env_of[side] += self.side_librdkafka(spec)
        if a.kafka_a or a.kafka_b:
            self.start_side_cluster("a", a.kafka_a)
            self.start_side_cluster("b", a.kafka_b)
        open(self.run_log, "w").close()
        self.warm_up()
        verdict = self.rounds()
        if a.profile and self.rc == 1:
            self.profile(verdict)
        return self.rc


def run(args):
    """The command on ARGS (from parse); its exit status. SIGTERM: 143, Ctrl-C: 130, after clean-up."""
    check(args)
    cli.dry_run_exit()
    out_dir = args.out_dir or "%s/results/runs/%s-%s-vs-%s" % (
        args.repo, time.strftime("%Y%m%d-%H%M%S"), args.sha["a"][:12], args.sha["b"][:12])
    for folder, made in ((out_dir, out_dir + "/runs"), (args.build_cache, args.build_cache)):
        try:
            if folder:
                os.makedirs(made, exist_ok=True)
        except OSError as e:
            die("cannot create %s (%s)" % (folder, e.strerror))
    work = tempfile.mkdtemp(prefix="kbench-commits.")
    tool = BenchCommits(args, os.path.abspath(out_dir), args.build_cache and os.path.abspath(args.build_cache), work)
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        return tool.main()
    except KeyboardInterrupt:
        return 130
    except OSError as e:
        die(e, status=1)
    finally:
        with contextlib.suppress(KeyboardInterrupt):
            tool.cleanup()
        for signum, handler in handlers.items():
            signal.signal(signum, handler)


main = run
