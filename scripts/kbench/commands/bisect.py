"""Find the first commit (or broker release) between OLD and NEW at which the benchmarks
matching REGEX changed, with bench-commits as the oracle of every step: by default the
first bad commit (NEW regressed against OLD), with --improvement the first fixing commit.
What is walked:

  scripts/bisect GOOD BAD --filter REGEX                  kbench's own commits (--repo)
  scripts/bisect GOOD BAD --librdkafka-tree DIR --filter REGEX
                  commits of a librdkafka git repository DIR (bare or not), each built by
                  scripts/librdkafka build --tree (cached by sha); kbench stays at --kbench
  scripts/bisect --kafka-versions 3.7.2,3.8.1,3.9.1,4.0.0 --filter REGEX
                  Apache Kafka releases in the order given (the first is OLD, the last NEW)

Commits: the first-parent chain from NEW back to OLD (git rev-list --first-parent
--ancestry-path OLD..NEW); a merge is one step. Each step measures a candidate against OLD
(bench-commits exit 1: it has the change). An inconclusive step is placed by its intervals
when they tell which end it is like, else measured again with twice the rounds (--retries),
then skipped as `git bisect skip` does (docs/history.md).

Evidence in the output directory: step-N-<X>/ (bench-commits' results), step-N-<X>.txt,
.cmd, .rc; steps.json (every step) and summary.txt (the table and the answer).

environment: KBENCH_BISECT_ORACLE, a command run instead of scripts/bench-commits with the
same arguments; it must keep bench-commits' exit statuses and --out-dir.

exit status: 0 the first bad (or fixing) commit was found (named on the last line), 1 NEW
shows no such change against OLD, 2 bad usage or input (unknown revision, OLD not an
ancestor of NEW, an empty range), 3 the bisection could not finish (NEW could not be
judged, skipped candidates hide the answer).
"""

import json
import math
import os
import pathlib
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import kbench
from kbench import cli, facts, git, proc, results, text
from kbench.cli import check_out_dir, die, dry_run_exit, info
from kbench.commands import bench_commits, librdkafka


def minutes(seconds):
    seconds = int(round(seconds))
    return "%d min %02d s" % (seconds // 60, seconds % 60) if seconds >= 60 else "%d s" % seconds


def verdict_rows(path, kinds=("regressions", "improvements", "unchanged", "inconclusive")):
    """The rows of a scripts/compare verdict; none when it cannot be read."""
    try:
        doc = json.loads(pathlib.Path(path).read_text())
        return [r for k in kinds for r in doc.get(k, []) if isinstance(r, dict)]
    except (OSError, ValueError, AttributeError, TypeError):
        return []


class Stopped(Exception):
    """Ctrl-C or SIGTERM: the oracle has been let finish its own clean-up."""

    def __init__(self, status):
        super().__init__(status)
        self.status = status


def run_bench_commits(argv, log_path):
    """One step in this process, its console in LOG_PATH: bench-commits' exit status; Stopped
    after its own clean-up on Ctrl-C or SIGTERM."""
    prog, cli.prog = cli.prog, "scripts/bench-commits"
    with proc.output_to(log_path):
        try:
            rc = bench_commits.run(bench_commits.parse(argv))
        except SystemExit as e:
            rc = e.code if isinstance(e.code, int) else 1
        except KeyboardInterrupt:
            rc = 130
        finally:
            cli.prog = prog
    if rc in (130, 143):
        raise Stopped(rc)
    return rc


def run_oracle(cmd, log):
    """One step of KBENCH_BISECT_ORACLE: its exit status; Ctrl-C or SIGTERM waits for its clean-up."""
    child = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        return child.wait()
    except (KeyboardInterrupt, Stopped) as e:
        child.send_signal(signal.SIGTERM if isinstance(e, Stopped) else signal.SIGINT)
        child.wait()
        raise


def add_arguments(parser):
    # OLD NEW [options] -- KBENCH_ARGS: one positional list, filled around the options.
    parser.parse_args = parser.parse_intermixed_args
    parser.add_argument("words", nargs="*", metavar="OLD NEW",
                        help="the two ends: GOOD BAD, or with --improvement before and after the fix "
                        "(commits of --repo, or of --librdkafka-tree); after --, kbench's arguments")
    parser.add_argument("--filter", help="benchmarks to judge (required; kbench's --benchmark_filter)")
    parser.add_argument("--improvement", action="store_true",
                        help="find the first commit that improved on OLD (a fix), not the first that regressed")
    parser.add_argument("--librdkafka-tree", metavar="DIR",
                        help="walk commits of this librdkafka git repository (bare or not)")
    parser.add_argument("--kbench", metavar="REV", default="HEAD",
                        help="with --librdkafka-tree or --kafka-versions: the kbench commit that measures "
                        "every step (default HEAD of --repo)")
    parser.add_argument("--kafka-versions", metavar="V1,V2,...", help="walk Apache Kafka releases, oldest first")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--instructions", dest="mode", action="store_const", const="instructions",
                      help="callgrind instructions per iteration (the default when every selected "
                      "benchmark is of a family that needs no cluster)")
    mode.add_argument("--timing", dest="mode", action="store_const", const="timing",
                      help="time, with interleaved processes (the default otherwise)")
    parser.add_argument("--runs", metavar="N", type=cli.POSITIVE,
                        help="rounds per step (bench-commits --runs; its default 8, or 1 with --instructions)")
    parser.add_argument("--budget", metavar="MINUTES", type=cli.POSITIVE_NUMBER,
                        help="bench-commits --budget: more rounds while a row is inconclusive, within MINUTES per step")
    parser.add_argument("--retries", metavar="N", type=cli.COUNT, default=1,
                        help="re-measurements of an inconclusive step, each with twice the rounds, before "
                        "it is skipped (default 1; 0 skips at once)")
    parser.add_argument("--threshold", metavar="PCT", type=cli.NUMBER,
                        help="smallest change that counts (default 0.5 with --instructions, 5 for time)")
    parser.add_argument("--alpha", metavar="A", type=cli.LEVEL, help="the comparison's level (default 0.01)")
    parser.add_argument("--repo", metavar="DIR", help="kbench's git repository (default: this checkout)")
    parser.add_argument("--out-dir", metavar="DIR", help="evidence (default results/runs/<date>-bisect-<OLD>-<NEW>/)")
    parser.add_argument("--build-cache", metavar="DIR",
                        help="keep each kbench commit's build in DIR/<sha> for later runs (default: a "
                        "temporary folder, removed at the end)")


def check(args):
    """The checks of the command line that need nothing but it."""
    n = next((i for i, w in enumerate(args.words) if w.startswith("-")), len(args.words))
    args.range, args.kbench_args = args.words[:n], args.words[n:]
    if args.kafka_versions:
        if args.librdkafka_tree:
            die("--kafka-versions and --librdkafka-tree: one thing to walk at a time")
        if args.range:
            die("--kafka-versions walks the versions it lists: no OLD NEW commits")
        versions = [v.strip() for v in args.kafka_versions.split(",") if v.strip()]
        for v in versions:
            if not re.match(r"^[0-9]+(\.[0-9]+){1,3}$", v):
                die("--kafka-versions: '%s' is not a Kafka release number" % v)
        if len(versions) < 2:
            die("--kafka-versions needs at least two releases, oldest first")
        if len(set(versions)) != len(versions):
            die("--kafka-versions lists a release twice")
        args.versions = versions
    elif len(args.range) != 2:
        die("expected GOOD and BAD commits (OLD and NEW with --improvement), got %d argument(s)" % len(args.range))
    for option, path in (("--out-dir", args.out_dir), ("--build-cache", args.build_cache)):
        if path is not None:
            check_out_dir(path, option)
    if not args.filter:
        die("--filter is required: bisect a few benchmarks, not the whole suite")
    if args.kbench != "HEAD" and not (args.librdkafka_tree or args.kafka_versions):
        die("--kbench is for --librdkafka-tree and --kafka-versions (kbench's own commits are OLD and NEW)")


class Walk:
    """What is walked: candidates[0] is OLD, candidates[-1] NEW, each {"id", "label", "subject"}."""

    def __init__(self, args, repo):
        if args.kafka_versions:
            self.kind = "version"
            self.candidates = [{"id": v, "label": v, "subject": "Apache Kafka " + v} for v in args.versions]
            return
        self.kind, self.tree = "commit", None
        where = repo
        if args.librdkafka_tree:
            tree = args.librdkafka_tree
            if not os.path.isdir(tree):
                die("--librdkafka-tree '%s' is not a directory" % tree)
            if git.try_run(tree, "rev-parse", "--git-dir") is None:
                die("--librdkafka-tree '%s' is not a git repository" % tree)
            self.tree = where = os.path.realpath(tree)
        shas = [bench_commits.commit(where, rev) for rev in args.range]
        if shas[0] == shas[1]:
            die("OLD and NEW are the same commit (%s)" % shas[0][:12])
        if git.try_run(where, "merge-base", "--is-ancestor", *shas) is None:
            die("OLD %s is not an ancestor of NEW %s" % (shas[0][:12], shas[1][:12]))
        between = git.run(where, "rev-list", "--first-parent", "--ancestry-path", "--reverse",
                          "%s..%s" % tuple(shas)).split()
        if not between or between[-1] != shas[1]:
            die("no commit between OLD %s and NEW %s on NEW's first-parent chain" % (shas[0][:12], shas[1][:12]))
        subjects = dict(line.partition(" ")[::2] for line in git.run(
            where, "log", "--no-walk=unsorted", "--format=%H %s", shas[0], *between).splitlines())
        self.candidates = [{"id": s, "label": s[:12], "subject": subjects.get(s, "")} for s in [shas[0]] + between]

    def name(self, i):
        c = self.candidates[i]
        return c["label"] if self.kind == "version" else "%s %s" % (c["label"], c["subject"])


class Bisect:
    def __init__(self, args, walk, repo, out_dir, cache, oracle, mode, kbench_sha):
        self.args, self.walk, self.repo, self.out_dir = args, walk, repo, out_dir
        self.cache, self.oracle, self.mode, self.kbench_sha = cache, oracle, mode, kbench_sha
        self.steps, self.started = [], time.time()
        self.signature = None  # the rows that showed NEW's change, from the first step
        self.changed_word, self.unchanged_word, self.first_word = (
            ("fixed", "not fixed", "fixing") if args.improvement else ("bad", "good", "bad"))

    # One oracle call: X against OLD, sides set so that "regression" means "X has the change".
    def command(self, i, runs, step_dir):
        a = self.args
        old, x = self.walk.candidates[0]["id"], self.walk.candidates[i]["id"]
        base, new = (x, old) if a.improvement else (old, x)
        cmd = []
        if a.librdkafka_tree:
            cmd += [self.kbench_sha, self.kbench_sha, "--librdkafka-a", "tree:%s@%s" % (self.walk.tree, base),
                    "--librdkafka-b", "tree:%s@%s" % (self.walk.tree, new)]
        elif a.kafka_versions:
            cmd += [self.kbench_sha, self.kbench_sha, "--kafka-a", base, "--kafka-b", new]
        else:
            cmd += [base, new]
        cmd += ["--repo", self.repo, "--filter", a.filter, "--build-cache", self.cache, "--out-dir", step_dir]
        if self.mode == "instructions":
            cmd.append("--instructions")
        if runs is not None:
            cmd += ["--runs", str(runs)]
        for opt in ("threshold", "alpha", "budget"):
            if getattr(a, opt) is not None:
                cmd += ["--" + opt, "%g" % getattr(a, opt)]
        if a.kbench_args:
            cmd += ["--"] + a.kbench_args
        return cmd

    def measure(self, i, runs=None, attempt=1):
        n = len(self.steps) + 1
        cand = self.walk.candidates[i]
        stem = os.path.join(self.out_dir, "step-%d-%s" % (n, cand["label"]))
        argv = self.command(i, runs, stem)
        cmd = (self.oracle or ["scripts/bench-commits"]) + argv
        pathlib.Path(stem + ".cmd").write_text(proc.quote(cmd) + "\n")
        t0 = time.time()
        if self.oracle:
            with open(stem + ".txt", "w") as log:
                rc = run_oracle(cmd, log)
        else:
            open(stem + ".txt", "w").close()
            rc = run_bench_commits(argv, stem + ".txt")
        seconds = time.time() - t0
        pathlib.Path(stem + ".rc").write_text("%d\n" % rc)
        verdict_path = os.path.join(stem, "verdict.json")
        placed_by = None
        verdict = {1: self.changed_word, 0: self.unchanged_word}.get(rc, "not measured")
        if rc == 3 and os.path.isfile(verdict_path):
            verdict, side = "inconclusive", self.place(verdict_path)
            if side is not None:
                verdict = self.changed_word if side else self.unchanged_word
                placed_by = "inconclusive, but the intervals of NEW's change that can tell lie nearer %s" % (
                    "NEW" if side else "OLD")
        if self.signature is None and rc == 1:
            self.signature = self.changed_rows(verdict_path)
        step = {"step": n, "candidate": cand["id"], "label": cand["label"],
                "subject": cand["subject"], "attempt": attempt, "runs": runs,
                "exit": rc, "verdict": verdict, "placed_by": placed_by,
                "seconds": round(seconds, 1), "change": self.largest_change(verdict_path),
                "command": cmd, "out_dir": stem, "log": stem + ".txt"}
        self.steps.append(step)
        self.save()
        info("step %d: %s: %s (exit %d%s, %s%s)" % (
            n, cand["label"], verdict, rc, ": " + placed_by if placed_by else "",
            minutes(seconds), "; " + step["change"] if step["change"] != "-" else ""))
        return step

    @staticmethod
    def changed_rows(verdict_path):
        """{(name, metric): change_pct} of the regressions of the first step (NEW against OLD)."""
        return {(r["name"], r["metric"]): r["change_pct"] for r in verdict_rows(verdict_path, ("regressions",))
                if r.get("change_pct") is not None and r["change_pct"] > -100}

    def place(self, verdict_path):
        """An inconclusive step placed by its intervals: True (NEW's side) or False (OLD's) when a
        row of NEW's change has its interval wholly on that side of the midpoint between OLD
        and NEW (in log ratio) and none on the other; else None. A bisection asks which end a
        candidate is like, not whether it equals OLD within the threshold."""
        if not self.signature:
            return None
        rows = {(r.get("name"), r.get("metric")): r for r in verdict_rows(verdict_path)}
        sides = set()
        for key, new_pct in self.signature.items():
            r = rows.get(key)
            if r is None or r.get("ci_low_pct") is None or r.get("ci_high_pct") is None:
                return None
            mid = math.log1p(new_pct / 100.0) / 2.0
            lo, hi = r["ci_low_pct"], r["ci_high_pct"]
            if lo <= -100 or hi <= -100:
                return None
            lo, hi = math.log1p(lo / 100.0), math.log1p(hi / 100.0)
            # Turned so that NEW lies above the midpoint.
            sign = 1.0 if mid > 0 else -1.0
            lo, hi = sorted((sign * (lo - mid), sign * (hi - mid)))
            if lo > 0:
                sides.add(True)
            elif hi < 0:
                sides.add(False)
        return sides.pop() if len(sides) == 1 else None

    def judge(self, i):
        """Candidate i has the change: True, False or None (skipped), retrying inconclusive verdicts."""
        runs = self.args.runs
        for attempt in range(1, self.args.retries + 2):
            step = self.measure(i, runs, attempt)
            if step["verdict"] == self.changed_word:
                return True
            if step["verdict"] == self.unchanged_word:
                return False
            if step["verdict"] != "inconclusive" or attempt > self.args.retries:
                return None
            runs = 2 * (runs or (1 if self.mode == "instructions" else 8))
            info("step %d was inconclusive: measuring %s again with %d rounds"
                 % (step["step"], self.walk.candidates[i]["label"], runs))
        return None

    def largest_change(self, path):
        """The step's largest change, as the candidate against OLD."""
        rows = [r for r in verdict_rows(path) if r.get("change_pct") is not None]
        if not rows:
            return "-"
        r = max(rows, key=lambda r: abs(r["change_pct"]))
        pct = r["change_pct"]
        if self.args.improvement:
            pct = (100.0 / (100.0 + pct) - 1.0) * 100.0 if pct > -100 else float("nan")
        return "%+.3f%% (%s)" % (pct, r.get("metric", "?"))

    def save(self):
        doc = {"direction": "improvement" if self.args.improvement else "regression",
               "walk": ("librdkafka commits" if self.args.librdkafka_tree else
                        "kafka versions" if self.args.kafka_versions else "kbench commits"),
               "old": self.walk.candidates[0]["id"], "new": self.walk.candidates[-1]["id"],
               "candidates": len(self.walk.candidates) - 1, "filter": self.args.filter,
               "mode": self.mode, "steps": self.steps}
        results.write_json(os.path.join(self.out_dir, "steps.json"), doc)

    def run(self):
        walk = self.walk
        last = len(walk.candidates) - 1
        what = "fix" if self.args.improvement else "regression"
        info("%d %s(s) after OLD %s, NEW %s; %s mode; checking that NEW shows the %s"
             % (last, walk.kind, walk.candidates[0]["label"], walk.candidates[-1]["label"], self.mode, what))
        has = self.judge(last)
        if has is None:
            step = self.steps[-1]
            print(proc.tail(step["log"], 40), file=sys.stderr)
            self.write_summary(None, [])
            die("NEW %s could not be judged against OLD (bench-commits exit %d; see %s)"
                % (walk.candidates[-1]["label"], step["exit"], step["log"]), status=2 if step["exit"] == 2 else 3)
        if not has:
            self.write_summary(None, [])
            die("NEW %s shows no %s against OLD %s on '%s': nothing to bisect (see %s)"
                % (walk.candidates[-1]["label"], what, walk.candidates[0]["label"],
                   self.args.filter, self.out_dir), status=1)
        lo, hi, skipped = 0, last, set()
        while open_ := [i for i in range(lo + 1, hi) if i not in skipped]:
            mid = (lo + hi) // 2
            i = min(open_, key=lambda j: (abs(j - mid), j))
            info("step %d: %s (%d candidate(s) left, about %d step(s) to go)"
                 % (len(self.steps) + 1, walk.name(i), hi - lo - 1, max(1, math.ceil(math.log2(hi - lo)))))
            has = self.judge(i)
            if has is None:
                skipped.add(i)
            elif has:
                hi = i
            else:
                lo = i
        suspects = list(range(lo + 1, hi + 1))
        self.write_summary(hi if len(suspects) == 1 else None, suspects)
        print("bisect: %d build-and-measure step(s) in %s; evidence in %s"
              % (len(self.steps), minutes(time.time() - self.started), self.out_dir))
        if len(suspects) == 1:
            c = walk.candidates[hi]
            print("first %s %s: %s" % (self.first_word, walk.kind, c["id"] if walk.kind == "version"
                                        else "%s %s" % (c["id"], c["subject"])))
            return 0
        print("the first %s %s is one of (the others could not be judged):" % (self.first_word, walk.kind))
        for i in suspects:
            print("  " + walk.name(i))
        return 3

    def write_summary(self, found, suspects):
        walk = self.walk
        rows = [(s["step"], s["label"], s["verdict"] + ("*" if s.get("placed_by") else ""), s["exit"],
                 minutes(s["seconds"]), s["change"], s["subject"]) for s in self.steps]
        lines = [text.table(("step", walk.kind, "verdict", "exit", "time", "largest change (against OLD)",
                             "subject"), rows)]
        if any(s.get("placed_by") for s in self.steps):
            lines.append("* inconclusive against OLD, placed by its intervals: those of NEW's "
                         "change that can tell lie nearer that end (steps.json: placed_by)")
        lines += ["", "%s: OLD %s, NEW %s, %d candidate(s), filter '%s', %d step(s), %s"
                     % ("improvement" if self.args.improvement else "regression",
                        walk.candidates[0]["label"], walk.candidates[-1]["label"],
                        len(walk.candidates) - 1, self.args.filter, len(self.steps),
                        minutes(time.time() - self.started))]
        if found is not None:
            lines.append("first %s %s: %s %s" % (self.first_word, walk.kind, walk.candidates[found]["id"],
                                                walk.candidates[found]["subject"]))
        elif suspects:
            lines.append("first %s %s: one of %s" % (
                self.first_word, walk.kind, " ".join(walk.candidates[i]["label"] for i in suspects)))
        summary = "\n".join(lines) + "\n"
        pathlib.Path(self.out_dir, "summary.txt").write_text(summary)
        print(summary, end="", flush=True)


def choose_mode(args, repo, kbench_rev):
    if args.mode:
        return args.mode
    # Instruction counts are deterministic only for single-threaded, in-process work; the
    # families that talk to a cluster (kbench --describe=json says which) are timed.
    listing = git.try_run(repo, "show", "%s:tests/benchmark_list.txt" % kbench_rev) or ""
    try:
        pattern = re.compile(args.filter)
    except re.error as e:
        die("--filter '%s' is not a regular expression: %s" % (args.filter, e))
    names = [n for n in listing.splitlines() if pattern.search(n)]
    if not names:
        die("no benchmark in %s's tests/benchmark_list.txt matches --filter '%s' (give "
            "--instructions or --timing to bisect anyway)" % (kbench_rev[:12], args.filter))
    try:
        cluster = set(facts.cluster_families())
    except facts.FactsUnavailable as e:
        die("%s; or give --instructions or --timing" % e)
    mode = ("timing" if any(n.split("/")[0] in cluster for n in names) else "instructions")
    info("mode: %s (%d benchmark(s) match the filter)" % (mode, len(names)))
    return mode


def main(args):
    check(args)
    if not shutil.which("git"):
        die("'git' not found (scripts/setup installs it)")
    repo = git.try_run(args.repo or kbench.ROOT, "rev-parse", "--show-toplevel")
    if not repo:
        die("'%s' is not inside a git repository" % (args.repo or kbench.ROOT))
    oracle = shlex.split(os.environ.get("KBENCH_BISECT_ORACLE", ""))

    walk = Walk(args, repo)
    kbench_sha = (bench_commits.commit(repo, args.kbench, "--kbench ")
                  if args.librdkafka_tree or args.kafka_versions else None)
    if args.librdkafka_tree:
        # Both ends must be commits scripts/librdkafka builds; one between that is not is skipped.
        for c in (walk.candidates[0], walk.candidates[-1]):
            try:
                librdkafka.path_tree(walk.tree, c["id"])
            except librdkafka.BuildError as e:
                if e.status == 2:
                    die("commit %s of %s cannot be built by scripts/librdkafka: %s" % (c["label"], walk.tree, e))
    mode = choose_mode(args, repo, kbench_sha or walk.candidates[-1]["id"])
    if not oracle:
        for tool in ["cmake", "ninja"] + (["valgrind"] if mode == "instructions" else []):
            if not shutil.which(tool):
                die("'%s' not found (scripts/setup installs it)" % tool)

    dry_run_exit()
    old, new = walk.candidates[0]["label"], walk.candidates[-1]["label"]
    out_dir = args.out_dir or os.path.join(
        repo, "results", "runs", "%s-bisect-%s-%s" % (time.strftime("%Y%m%d-%H%M%S"), old, new))
    cache = args.build_cache or tempfile.mkdtemp(prefix="kbench-bisect.")
    for folder in (out_dir, cache):
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as e:
            die("cannot create %s: %s" % (folder, e.strerror))
    out_dir, cache = os.path.realpath(out_dir), os.path.realpath(cache)

    def on_term(signum, _frame):
        raise Stopped(128 + signum)

    signal.signal(signal.SIGTERM, on_term)
    bisect = Bisect(args, walk, repo, out_dir, cache, oracle, mode, kbench_sha)
    try:
        return bisect.run()
    except (KeyboardInterrupt, Stopped) as e:
        info("interrupted after %d step(s); evidence in %s" % (len(bisect.steps), out_dir))
        return getattr(e, "status", 130)
    finally:
        if args.build_cache is None:
            shutil.rmtree(cache, ignore_errors=True)  # its worktrees; prune forgets them
            git.try_run(repo, "worktree", "prune")
