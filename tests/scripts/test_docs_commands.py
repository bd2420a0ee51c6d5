"""Every command in the code blocks of README.md and docs/*.md runs as written.

Each shell block is cut into simple commands (continuations joined, comments, `&&`, `;` and
redirections taken apart, `VAR=$(command)` checked as command), and each is checked in the
form that is fast here (seconds, no build, no broker):

  scripts/...    under KBENCH_DRY_RUN=1: the script parses and checks its whole command line
                 (options, values, output paths; kbench's own arguments by `kbench
                 --benchmark_list_tests`) as for a real run, then stops with "dry run"
                 before it builds, starts or runs anything; an option it rejects fails here
  build/kbench   with --benchmark_list_tests added (and without --bootstrap/--broker-dir,
                 the cluster the block starts): kbench refuses what it does not know, and
                 the command must select at least one row
  a few          run for real where that takes a moment (REAL), or not at all (NOT_RUN, with
                 the reason; a listed command that is gone from the docs fails too)

Any --filter / --benchmark_filter, and scripts/profile's FILTER, must match at least one row
of tests/benchmark_list.txt (unless a --produce/--consume/--end-to-end spec makes the rows,
when kbench itself lists them). Placeholders a reader replaces (GOOD, BAD, DIR, ...) are
replaced by PLACEHOLDERS, with a throw-away librdkafka git tree behind ~/src/librdkafka.
"""

import glob
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
KBENCH = os.path.join(ROOT, "build", "kbench")
DOCS = ["README.md"] + sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))

# What a reader substitutes, and what this test puts there.
PLACEHOLDERS = [
    (r"\bGOOD BAD\b", "HEAD~1 HEAD"),
    (r"tree:DIR@", "tree:~/src/librdkafka@"),
    (r"/data/events\.json", "{events}"),
    (r"(?<=--nodes )cluster\.json", "{cluster}"),
]
# Values of the variables the blocks set from a command's output (the command is checked).
VARIABLES = {"B": "127.0.0.1:9092", "BOOTSTRAP": "127.0.0.1:9092", "HOST": "10.213.0.1"}
# $(command) inside an argument: the command is checked, the argument gets this value.
SUBSTITUTIONS = {"scripts/kafka client-config": "{client_config}",
                 "scripts/kafka client-config --java": "{client_config}"}
# Commands that run for real: they take a moment and change nothing.
REAL = {"scripts/librdkafka list", "scripts/scenario --list"}
# Commands not run, and why.
NOT_RUN = {
    "cmake -S . -B build -G Ninja": "a build",
    "cmake --build build": "a build",
    "ctest --test-dir build": "the whole test suite",
}
# Scripts whose dry run is checked; on a tree without dry runs nothing is run at all.
DRY_RUN_FILES = ["scripts/kbench/commands/bench.py", "scripts/kbench/commands/bench_commits.py",
                 "scripts/kbench/commands/bisect.py",
                 "scripts/kbench/commands/compare.py", "scripts/kbench/commands/distributed.py",
                 "scripts/kbench/commands/kafka.py", "scripts/kbench/commands/librdkafka.py",
                 "scripts/kbench/commands/lint.py",
                 "scripts/kbench/commands/plot.py",
                 "scripts/kbench/commands/profile.py", "scripts/kbench/commands/test.py",
                 "scripts/kbench/commands/trogdor.py",
                 "scripts/kbench/commands/history.py", "scripts/kbench/commands/release_history.py",
                 "scripts/kbench/scenario_runner.py"]
SPEC_OPTIONS = ("--produce", "--consume", "--end-to-end")
# kbench options naming a running cluster, left out of kbench's listing.
LIVE_OPTIONS = ("--bootstrap=", "--broker-dir=")


def shell_blocks():
    """(file, line, text) of every ```sh / ```bash block."""
    for doc in DOCS:
        with open(os.path.join(ROOT, doc), encoding="utf-8") as f:
            text = f.read()
        for m in re.finditer(r"^```(sh|bash|shell)\n(.*?)^```", text, re.S | re.M):
            yield doc, text[:m.start()].count("\n") + 2, m.group(2)


def split_top(line):
    """Cuts a logical line at top-level &&, || and ; and drops a # comment; quotes and
    $(...) are kept whole."""
    parts, cur, i, quote, depth = [], "", 0, None, 0
    while i < len(line):
        c = line[i]
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif line.startswith("$(", i):
            depth += 1
            cur += "$("
            i += 2
            continue
        elif c == ")" and depth:
            depth -= 1
        elif depth == 0 and c == "#" and (not cur or cur[-1].isspace()):
            break
        elif depth == 0 and (line.startswith("&&", i) or line.startswith("||", i)):
            parts.append(cur)
            cur, i = "", i + 2
            continue
        elif depth == 0 and c == ";":
            parts.append(cur)
            cur, i = "", i + 1
            continue
        cur += c
        i += 1
    parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


def commands(block):
    """Simple commands of a block, continuations joined."""
    return [c for line in block.replace("\\\n", " ").split("\n") for c in split_top(line)]


class DocsCommands(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        missing = []
        for f in DRY_RUN_FILES:
            with open(os.path.join(ROOT, f), encoding="utf-8") as fh:
                if not re.search(r"dry_run_exit|KBENCH_DRY_RUN", fh.read()):
                    missing.append(f)
        if missing:
            raise AssertionError("no dry run (dry_run_exit) in %s: the documented commands "
                                 "cannot be checked without running them" % ", ".join(missing))
        if not os.access(KBENCH, os.X_OK):
            raise unittest.SkipTest("no %s: build kbench first" % KBENCH)
        with open(os.path.join(ROOT, "tests", "benchmark_list.txt")) as f:
            cls.rows = [r for r in f.read().splitlines() if r]
        cls.tmp = tempfile.mkdtemp(prefix="kbench-docs-")
        cls.home = os.path.join(cls.tmp, "home")
        cls.values = {"events": os.path.join(cls.tmp, "events.json"),
                      "cluster": os.path.join(cls.tmp, "cluster.json"),
                      "client_config": os.path.join(cls.tmp, "client.properties")}
        # As large as a send-path payload must be for the quick profile's rows (16 MiB of
        # distinct values), so that the documented file: examples are judged as a user's
        # real file would be.
        with open(cls.values["events"], "w") as f:
            f.write("".join('{"id": %d, "name": "event %08d"}\n' % (i, i)
                            for i in range(17 * 1024 * 1024 // 38 + 1)))
        with open(cls.values["client_config"], "w") as f:
            f.write("linger.ms=5\n")
        # The Trogdor cluster file docs/distributed.md shows.
        with open(os.path.join(ROOT, "docs", "distributed.md")) as f:
            cluster = re.search(r"```json\n(\{\n  \"platform\".*?)```", f.read(), re.S)
        with open(cls.values["cluster"], "w") as f:
            f.write(cluster.group(1) if cluster else "{}")
        # A librdkafka git tree with the refs the examples name.
        tree = os.path.join(cls.home, "src", "librdkafka")
        os.makedirs(os.path.join(tree, "src"))
        for name, text in (("configure", "#!/bin/sh\n"), ("src/Makefile", "all:\n"),
                           ("src/rdkafka.h", "#define RD_KAFKA_VERSION  0x020f01ff\n")):
            with open(os.path.join(tree, name), "w") as f:
                f.write(text)
        git = ["git", "-C", tree, "-c", "user.name=t", "-c", "user.email=t@t"]
        # my-branch one commit ahead: scripts/bisect's examples walk v2.15.1..my-branch; the
        # release examples name v1.4.0 and v1.5.0.
        for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "t"],
                     ["tag", "v2.15.1"], ["tag", "v1.4.0"], ["tag", "v1.5.0"], ["branch", "master"],
                     ["checkout", "-qb", "my-branch"],
                     ["commit", "-q", "--allow-empty", "-m", "t2"], ["checkout", "-q", "main"]):
            subprocess.run(git + args, check=True, capture_output=True)
        cache = os.environ.get("KBENCH_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "kbench")
        cls.env = {k: v for k, v in os.environ.items() if not k.startswith("KBENCH_")}
        cls.env.update(KBENCH_DRY_RUN="1", HOME=cls.home, KBENCH_CACHE=cache)
        cls.has_origin_main = subprocess.run(
            ["git", "-C", ROOT, "rev-parse", "--verify", "-q", "origin/main"],
            capture_output=True).returncode == 0
        cls.listings = {}

    def kbench_list(self, argv):
        """kbench ARGV (which lists tests): the same arguments give the same answer, so
        several commands handing kbench the same ones start it once."""
        key = tuple(argv)
        if key not in self.listings:
            self.listings[key] = subprocess.run([KBENCH] + argv, cwd=ROOT, capture_output=True,
                                                text=True, timeout=60, env=self.env)
        return self.listings[key]

    @classmethod
    def tearDownClass(cls):
        if getattr(cls, "tmp", None):
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def expand(self, text, variables):
        placeholders = list(PLACEHOLDERS)
        if not self.has_origin_main:
            placeholders.append((r"\borigin/main\b", "HEAD~1"))  # a checkout without the remote
        for pattern, value in placeholders:
            text = re.sub(pattern, value.format(**self.values), text)
        return re.sub(r"\$\{?([A-Za-z_]\w*)\}?",
                      lambda m: dict(variables, HOME=self.home).get(m.group(1), m.group(0)), text)

    def argv(self, where, command):
        lex = shlex.shlex(command, posix=True, punctuation_chars=True)
        lex.whitespace_split = True
        words = list(lex)
        out = []
        skip = False
        for w in words:
            if skip:
                skip = False
                continue
            if w in (">", ">>"):
                skip = True  # an output redirection and its target: nothing is written
                continue
            # Anything else the shell would take apart (<...>, a pipe) is not a command a
            # reader can paste.
            self.assertFalse(w and set(w) <= set("<>|&;()"), "%s: %s: the shell reads %r as an operator"
                             % (where, command, w))
            out.append(self.home + w[1:] if w.startswith("~/") else w)
        return out

    def check_kbench_args(self, where, command, argv):  # noqa: C901
        """What a script hands to kbench (after --, --args-a/-b, profile's after FILTER),
        checked by kbench itself."""
        sets = []
        if "--" in argv and argv[0] in ("scripts/bench", "scripts/bench-commits", "scripts/bisect"):
            sets.append(argv[argv.index("--") + 1:])
            if argv[0] == "scripts/bench":
                # scripts/bench runs its profile's rows (quick by default) or --filter's:
                # kbench checks the arguments against those rows, as it does in the run.
                sets[-1] = sets[-1] + ["--benchmark_filter=" + bench_filter(
                    argv[1:argv.index("--")])]
        for opt in ("--args-a", "--args-b"):
            if opt in argv[:-1]:
                sets.append(shlex.split(argv[argv.index(opt) + 1]))
        if argv[0] == "scripts/profile":
            flt = profile_filter(argv[1:])
            sets.append(argv[argv.index(flt) + 1:] if flt in argv else [])
        for args in sets:
            args = [a for a in args if not a.startswith(LIVE_OPTIONS)]
            proc = self.kbench_list(["--benchmark_list_tests"] + args)
            self.assertEqual(proc.returncode, 0, "%s: %s: kbench refuses %s: %s"
                             % (where, command, args, proc.stderr))

    def check_filter(self, where, argv):
        if any(a.startswith(SPEC_OPTIONS) for a in argv):
            return  # the spec makes the rows: kbench lists them in the command's own check
        filters = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--filter"]
        filters += [a.split("=", 1)[1] for a in argv if a.startswith(("--filter=", "--benchmark_filter="))]
        if argv[0] == "scripts/profile":
            filters.append(profile_filter(argv[1:]))
        for flt in filters:
            self.assertTrue(any(re.search(flt, r) for r in self.rows),
                            "%s: filter %r matches no row of tests/benchmark_list.txt" % (where, flt))

    def run_one(self, where, command):
        if any(command.startswith(k) for k in NOT_RUN):
            return
        # The same command (after expansion) in several places: every check below depends on
        # the command alone, so its first place runs them and reports any failure.
        if command in self.checked:
            return
        self.checked.add(command)
        argv = self.argv(where, command)
        self.check_filter(where, argv)
        self.check_kbench_args(where, command, argv)
        if argv[0] == "build/kbench":
            # The cluster and its state directory come from the block's scripts/kafka start
            # (checked above in its dry run): kbench would wait for the broker.
            args = [a for a in argv[1:] if not a.startswith(LIVE_OPTIONS)]
            proc = self.kbench_list(args + ["--benchmark_list_tests"])
            if (proc.returncode != 0 and len(args) < len(argv) - 1
                    and "in-process mock cluster" in proc.stderr):
                return  # a limit of the mock, which a command for a live cluster does not meet
            self.assertEqual(proc.returncode, 0, "%s: %s: %s" % (where, command, proc.stderr))
            self.assertTrue(proc.stdout.strip(), "%s: %s selects no row" % (where, command))
            return
        self.assertTrue(argv[0].startswith("scripts/"), "%s: %s: not a kbench command; run it "
                        "here or list it in NOT_RUN with the reason" % (where, command))
        proc = self.script(argv)
        self.assertEqual(proc.returncode, 0, "%s: %s: exit %d: %s"
                         % (where, command, proc.returncode, proc.stderr))
        if " ".join(argv) not in REAL:
            self.assertIn("dry run: arguments checked", proc.stderr,
                          "%s: %s did not stop at its dry run" % (where, command))

    def script(self, argv):
        return subprocess.run([os.path.join(ROOT, argv[0])] + argv[1:], cwd=ROOT, capture_output=True,
                              text=True, timeout=120, env=self.env, stdin=subprocess.DEVNULL)

    def test_every_documented_command(self):
        seen = set()
        self.checked = set()
        for doc, line, block in shell_blocks():
            variables = {}
            for command in commands(block):
                where = "%s:%d" % (doc, line)
                with self.subTest(where=where, command=command):
                    m = re.match(r"^(\w+)=\$\((.*)\)$", command)
                    if m:
                        variables[m.group(1)] = VARIABLES[m.group(1)]
                        command = m.group(2)
                    for inner in re.findall(r"\$\(([^()]*)\)", command):
                        self.run_one(where, self.expand(inner, variables))
                        command = command.replace("$(%s)" % inner,
                                                  SUBSTITUTIONS[inner].format(**self.values))
                    seen.add(command)
                    self.run_one(where, self.expand(command, variables))
        for prefix in NOT_RUN:
            self.assertTrue(any(c.startswith(prefix) for c in seen),
                            "NOT_RUN lists %r, which no document shows any more" % prefix)


def bench_filter(opts):
    """The --benchmark_filter scripts/bench gives kbench for its options: --filter's, or the
    named profile's lines of benchmarks/profiles.conf joined with '|' (quick by default)."""
    for i, a in enumerate(opts):
        if a == "--filter" and i + 1 < len(opts):
            return opts[i + 1]
        if a.startswith("--filter="):
            return a.split("=", 1)[1]
    profile = "quick"
    for i, a in enumerate(opts):
        if a == "--profile" and i + 1 < len(opts):
            profile = opts[i + 1]
        elif a.startswith("--profile="):
            profile = a.split("=", 1)[1]
    with open(os.path.join(ROOT, "benchmarks", "profiles.conf")) as f:
        lines = [ln.split() for ln in f if ln.strip() and not ln.lstrip().startswith("#")]
    return "|".join(w[1] for w in lines if len(w) > 1 and w[0] == profile)


def profile_filter(args):
    """scripts/profile's FILTER: the first word that is no option nor an option's value."""
    takes_value = {"--tool", "--call-graph", "--out-dir", "--librdkafka", "--freq", "--callers"}
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--diff":
            i += 3
        elif a in takes_value:
            i += 2
        elif a.startswith("-"):
            i += 1
        else:
            return a
    return ""


if __name__ == "__main__":
    unittest.main()
