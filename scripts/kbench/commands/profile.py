"""Runs `build/kbench --benchmark_filter=FILTER KBENCH_ARGS...` under a profiler (perf if it
can sample here, else callgrind) into results/profiles/<YYYYmmdd-HHMMSS>-<filter>/: the raw
profile, stacks.folded, flamegraph.svg, summary.txt (top functions), report.txt and the run's
context (docs/profiling.md); with perf threads/ (a flame graph per thread role); with
--off-cpu offcpu.* (where threads wait).

--diff A B profiles two sides into a/ and b/ and writes diff/: B's flame graph, red where a
cost grew, blue where it shrank, and diff.txt, functions ranked by the change of their self
cost. A side is a git revision (built once into $KBENCH_CACHE/profile-builds/SHA), a kbench
binary, `libs=DIR[:DIR...]` (DIR first on LD_LIBRARY_PATH) or `librdkafka=VERSION`. With
callgrind (the default for --diff) counts are compared raw, both sides running
KBENCH_FIXED_ITERATIONS (default 20); with perf, as shares of each side's samples.

KBENCH_BIN overrides the binary (default build/kbench). Under callgrind everything runs ~50x
slower: keep FILTER narrow. Exit status: 0 ok; 2 bad usage or a missing prerequisite; 3 a
profiled run or a build failed.
"""

import argparse
import datetime
import os
import pathlib
import re
import shutil
import sys
import tempfile
import time

import kbench
from kbench import build_stamp, cli, flame, git, proc, results
from kbench.build_stamp import BuildError
from kbench.commands import librdkafka, symbols

SIDE_ERROR = "'%s' is neither an executable file, libs=DIR, librdkafka=VERSION nor a git revision"
OFF_CPU_NEEDS_PERF = "--off-cpu needs perf (the kernel's scheduler events); callgrind has no notion of waiting"


def add_arguments(parser):
    arg = parser.add_argument
    arg("--tool", choices=("perf", "callgrind"),
        help="force a profiler (default: perf if it works, else callgrind; callgrind for --diff)")
    arg("--call-graph", default="dwarf", metavar="MODE", help="perf's call graph mode (default dwarf: correct stacks "
        "without frame pointers; fp is cheaper if the build uses -fno-omit-frame-pointer)")
    arg("--symbols", action="store_true", help="run on symbol builds of zstd, lz4, snappy, zlib and librdkafka "
        "from their Debian source packages (scripts/symbols build: minutes once, cached after)")
    arg("--librdkafka", metavar="VERSION",
        help="run on a librdkafka release built by scripts/librdkafka (unstripped; before --symbols')")
    arg("--off-cpu", action="store_true", help="add the off-CPU view (perf sched_switch tracepoint and switch events)")
    arg("--diff", nargs=2, metavar=("A", "B"), help="profile side A and side B and write diff/")
    arg("--callers", type=cli.POSITIVE, default=40, metavar="N", help="callgrind call-chain depth (default 40)")
    arg("--freq", type=cli.POSITIVE, default=499, metavar="HZ", help="perf's sampling frequency (default 499); a "
        "sampled --diff needs thousands of samples a side: raise it, or lengthen the row (--window-seconds=10)")
    arg("--out-dir", metavar="DIR", help="write here instead of results/profiles/...")
    arg("filter", metavar="FILTER", help="a --benchmark_filter regex")
    arg("kbench_args", nargs=argparse.REMAINDER, metavar="KBENCH_ARGS", help="more arguments for kbench")


def join_path(first, second):
    return "%s:%s" % (first, second) if first and second else first or second


def is_executable_file(path):
    return os.path.isfile(path) and os.access(path, os.X_OK)


def commit_of(rev):
    """The commit REV names in this checkout, or None."""
    return git.try_run(kbench.ROOT, "rev-parse", "--verify", "-q", rev + "^{commit}")


def perf_works():
    """`perf stat` working is not enough: containers often forbid sampling."""
    if not shutil.which("perf"):
        return False
    with tempfile.NamedTemporaryFile() as probe:
        return proc.output(["perf", "record", "-q", "-g", "-o", probe.name, "--", "true"]) is not None \
            and os.path.getsize(probe.name) > 0


def check_side(spec):
    """Bad sides are bad usage: refused before anything is created or built."""
    if spec.startswith("libs="):
        for d in spec[len("libs="):].split(":"):
            if d and not os.path.isdir(d):
                cli.die("%s: no directory %s" % (spec, d))
    elif spec.startswith("librdkafka="):
        if not re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+|system", spec[len("librdkafka="):]):
            cli.die("%s: VERSION must look like 2.15.1" % spec)
    elif not is_executable_file(spec) and not commit_of(spec):
        cli.die(SIDE_ERROR % spec)


def choose_tool(args):
    """--tool's profiler, checked; else perf if it can sample here (callgrind for --diff), else callgrind."""
    tool = args.tool or ("callgrind" if args.diff and shutil.which("valgrind") else None)
    if not tool:
        if perf_works():
            tool = "perf"
        elif shutil.which("valgrind"):
            cli.info("perf cannot sample here (see /proc/sys/kernel/perf_event_paranoid); using callgrind")
            tool = "callgrind"
        else:
            cli.die("neither a working perf nor valgrind found (apt-get install linux-perf valgrind)")
    elif tool == "perf" and not perf_works():
        cli.die("perf record does not work here (missing linux-perf, or perf_event_paranoid / container limits)")
    elif tool == "callgrind" and not shutil.which("valgrind"):
        cli.die("valgrind not found (apt-get install valgrind)")
    if args.off_cpu and tool != "perf":
        cli.die(OFF_CPU_NEEDS_PERF)
    return tool


def default_out_dir(filter_):
    """results/profiles/<YYYYmmdd-HHMMSS>-<the filter, [A-Za-z0-9.-] and _, at most 60 bytes>."""
    slug = re.sub(rb"[^A-Za-z0-9.-]+", b"_", os.fsencode(filter_)).strip(b"_")[:60].decode()
    return os.path.join(kbench.ROOT, "results", "profiles", "%s-%s" % (time.strftime("%Y%m%d-%H%M%S"), slug or "all"))


def fail(message, log):
    """A failed step of the run: the end of its LOG, MESSAGE, exit 3."""
    print(proc.tail(log, 20), file=sys.stderr)
    cli.die("%s (log: %s)" % (message, log), status=3)


class Profiler:
    def __init__(self, args, tool, binary, out_dir):
        self.args, self.tool, self.bin, self.out_dir = args, tool, binary, out_dir
        self.filter = args.filter

    def base_ld(self):
        """Library folders every side runs on (before any side's own)."""
        ld = ""
        if self.args.librdkafka:
            ld = librdkafka.build(self.args.librdkafka)
            # scripts/librdkafka builds keep mklove's -g and are not stripped: say so if one is not.
            if ld and " .symtab " not in (proc.output(["readelf", "-S", "-W", ld + "/librdkafka.so.1"]) or ""):
                cli.info("warning: %s/librdkafka.so.1 has no symbol table: its functions will show as addresses" % ld)
        if self.args.symbols:
            ld = join_path(ld, ":".join(symbols.build()))
        return ld

    def build_rev(self, rev):
        """A git revision's kbench, built once, cached by commit."""
        sha = commit_of(rev)
        if not sha:
            cli.die(SIDE_ERROR % rev)
        wt, log = build_stamp.cache_dir("profile-builds/" + sha), "%s/build-%s.log" % (self.out_dir, sha[:12])
        if not os.path.isdir(wt):
            os.makedirs(os.path.dirname(wt), exist_ok=True)
            try:
                git.run(kbench.ROOT, "worktree", "add", "--detach", wt, sha)
            except git.GitError as e:
                cli.die("cannot check out %s: %s" % (rev, e), status=3)
        cli.info("building %s (%s) in %s (log: %s)" % (rev, sha[:12], wt, log))
        extra = os.environ.get("KBENCH_CMAKE_ARGS", "").split()
        if proc.run(["cmake", "-S", wt, "-B", wt + "/build", "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release"] + extra,
                    log=log).returncode != 0 or \
                proc.run(["cmake", "--build", wt + "/build", "--target", "kbench"], log=log).returncode != 0:
            fail("build of %s failed" % rev, log)
        return wt + "/build/kbench"

    def resolve_side(self, spec):
        """(kbench binary, library folders) of side SPEC."""
        binary, ld = self.bin, ""
        if spec.startswith("libs="):
            ld = spec[len("libs="):]  # its folders were checked (check_side)
        elif spec.startswith("librdkafka="):
            ld = librdkafka.build(spec[len("librdkafka="):])
        elif is_executable_file(spec):
            binary = os.path.abspath(spec)
        else:
            binary = self.build_rev(spec)
        if not os.access(binary, os.X_OK):
            cli.die("kbench binary not found at %s (set KBENCH_BIN)" % binary)
        return binary, ld

    def record(self, cmd, d, log, env):
        """Runs the profiler's command CMD into folder D, written to command.txt first."""
        with open(d + "/command.txt", "a", errors="surrogateescape") as f:
            f.write(proc.quote(cmd) + "\n")
        open(log, "w").close()
        try:
            ok = proc.run(cmd, log=log, env=env).returncode == 0
        except OSError as e:
            cli.die("cannot run %s: %s" % (cmd[0], e), status=3)
        if not ok:
            fail("the profiled run failed", log)

    def profile_one(self, d, binary, ld, desc):
        """One profiled run into folder D, with its flame graph, summaries and context; its stacks."""
        os.makedirs(d, exist_ok=True)
        ldp = join_path(ld, os.environ.get("LD_LIBRARY_PATH", ""))
        env = dict(os.environ, LD_LIBRARY_PATH=ldp) if ldp else None
        a = self.args
        kb = [binary, "--benchmark_filter=" + self.filter]
        out = ["--benchmark_out=%s/result.json" % d, "--benchmark_out_format=json"] + a.kbench_args
        perf = self.tool == "perf"
        if perf:
            cmd = ["perf", "record", "-g", "--call-graph", a.call_graph, "-F", str(a.freq),
                   "-o", d + "/perf.data", "--"]
        else:
            cmd = ["valgrind", "--tool=callgrind", "--separate-callers=%d" % a.callers,
                   "--callgrind-out-file=" + d + "/callgrind.out"]
        fixed = os.environ.get("KBENCH_FIXED_ITERATIONS", "")
        with open(d + "/command.txt", "w") as f:
            now = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
            f.write("# %s tool=%s side=%s\n# binary: %s\n# commit: %s\n"
                    % (now, self.tool, desc, binary, git.head(kbench.ROOT) or "unknown"))
            f.write("LD_LIBRARY_PATH=%s \\\n" % ldp if ldp else "")
            f.write("KBENCH_FIXED_ITERATIONS=%s \\\n" % fixed if fixed else "")
        cli.info("profiling %swith %s into %s" % (desc + " " if desc else "", self.tool, d))
        log = d + "/kbench.log"
        self.record(cmd + kb + out, d, log, env)
        if not results.has_rows(d + "/result.json"):
            cli.die("no benchmark matched '%s' (see %s; build/kbench --benchmark_list_tests lists them)"
                    % (self.filter, log), status=3)

        if perf:
            stacks = flame.fold_perf_script(self.perf_script(d + "/perf.data", log))
            report = ["perf", "report", "-i", d + "/perf.data", "--stdio", "--no-children", "--percent-limit", "0.5"]
        else:
            with open(d + "/callgrind.out", encoding="utf-8", errors="replace") as f:
                stacks = flame.fold_callgrind(f)
            report = ["callgrind_annotate", "--inclusive=yes", d + "/callgrind.out"]
        open(d + "/report.txt", "w").close()
        if proc.run(report, log=d + "/report.txt").returncode != 0:
            cli.info("warning: %s failed" % report[0])
        title = "kbench %s (%s%s, %s)" % (self.filter, self.tool, ", " + desc if desc else "",
                                         time.strftime("%Y-%m-%d"))
        if flame.write_views(stacks, d + "/stacks.folded", d + "/flamegraph.svg", title,
                             perf and (d + "/threads", "kbench " + self.filter)):
            pathlib.Path(d, "summary.txt").write_text(flame.summary_text(
                stacks, unit="samples" if perf else "instructions", root_is_thread=perf))
        else:
            cli.info("warning: the profiler recorded no samples; no flame graph")
        if a.off_cpu:
            self.off_cpu(d, kb, env)

        # What ran (the JSON's context, with loaded_libraries) and how the symbol builds were made.
        with open(d + "/context.txt", "w") as f:
            f.write("# side: %s\n# LD_LIBRARY_PATH=%s\n" % (desc or "default", ldp))
            f.write(results.context_text(d + "/result.json"))
            for lib in filter(None, ldp.split(":")):
                if os.path.isfile(lib + "/../build.json"):
                    f.write("# %s/../build.json\n%s" % (lib, pathlib.Path(lib, "../build.json").read_text()))
        return stacks

    @staticmethod
    def perf_script(data, log, *options):
        """The lines of `perf script` on DATA (its stderr to LOG)."""
        done = proc.run(["perf", "script", "-i", data, *options], capture=True, log=log)
        if done.returncode != 0:
            fail("perf script failed on %s" % os.path.basename(data), log)
        return done.stdout.splitlines()

    def off_cpu(self, d, kb, env):
        """A second run, so that the tracepoint's cost stays out of the CPU profile."""
        cli.info("off-CPU run (sched:sched_switch + switch events)")
        log = d + "/offcpu-kbench.log"
        self.record(["perf", "record", "-e", "sched:sched_switch", "--switch-events", "--call-graph",
                     self.args.call_graph, "-o", d + "/offcpu.data", "--"] + kb
                    + ["--benchmark_out=%s/offcpu-result.json" % d, "--benchmark_out_format=json"]
                    + self.args.kbench_args, d, log, env)
        sites = {}
        stacks = flame.fold_offcpu(self.perf_script(d + "/offcpu.data", log, "--show-switch-events", "-F",
                                                    "comm,pid,tid,time,event,trace,ip,sym,dso"), sites)
        pathlib.Path(d, "offcpu.txt").write_text(flame.offcpu_table(stacks, sites=sites))
        if not flame.write_views(stacks, d + "/offcpu.folded", d + "/offcpu.svg",
                                 "kbench %s: off-CPU microseconds" % self.filter,
                                 (d + "/offcpu-threads", "kbench %s off-CPU" % self.filter)):
            cli.info("warning: no off-CPU intervals recorded")

    def diff(self, base_ld):
        """Side A and side B profiled, then diff/: the differential flame graph and tables."""
        (side_a, side_b), out = self.args.diff, self.out_dir
        (bin_a, ld_a), (bin_b, ld_b) = self.resolve_side(side_a), self.resolve_side(side_b)
        a = self.profile_one(out + "/a", bin_a, join_path(ld_a, base_ld), "A=" + side_a)
        b = self.profile_one(out + "/b", bin_b, join_path(ld_b, base_ld), "B=" + side_b)
        os.makedirs(out + "/diff", exist_ok=True)
        raw = self.tool == "callgrind"
        try:
            top = flame.write_diff(a, b, out + "/diff",
                                   "kbench %s: B=%s against A=%s (%s)" % (self.filter, side_b, side_a, self.tool),
                                   "instructions" if raw else "samples", raw)
        except (OSError, ValueError) as e:
            cli.die("the differential profile failed: %s" % e, status=3)
        sys.stderr.write(top)
        with open(out + "/diff/command.txt", "w", errors="surrogateescape") as f:
            for name, side, binary, ld in (("A", side_a, bin_a, ld_a), ("B", side_b, bin_b, ld_b)):
                f.write("# %s: %s (%s%s)\n" % (name, side, binary, ", LD_LIBRARY_PATH " + ld if ld else ""))
            f.write("# tool: %s; KBENCH_FIXED_ITERATIONS=%s\n"
                    % (self.tool, os.environ.get("KBENCH_FIXED_ITERATIONS", "")))
            # This command as it was given (python -m kbench profile ARGS), runnable from anywhere.
            f.write(proc.quote([os.path.join(kbench.SCRIPTS, "profile")] + sys.argv[2:]) + "\n")
        list_files(out + "/diff")


def list_files(folder):
    for name in sorted(os.listdir(folder)):
        if not name.startswith("."):
            print(os.path.join(folder, name))


def main(args):
    if not args.filter:
        cli.die("FILTER is empty (a --benchmark_filter regex)")
    if args.off_cpu and args.tool == "callgrind":
        cli.die(OFF_CPU_NEEDS_PERF)
    # A fixed iteration count names rows NAME/iterations:N, which a filter anchored with $ misses.
    if os.environ.get("KBENCH_FIXED_ITERATIONS") and args.filter.endswith("$") and "iterations" not in args.filter:
        args.filter = args.filter[:-1] + "(/iterations:[0-9]+)?$"
    if args.out_dir:
        cli.check_out_dir(args.out_dir, "--out-dir")
    binary = os.environ.get("KBENCH_BIN") or os.path.join(kbench.ROOT, "build", "kbench")
    if args.diff:
        for side in args.diff:
            check_side(side)
    else:
        if not os.path.isfile(binary):
            cli.die("kbench binary not found at %s (build it with scripts/setup and cmake, or set KBENCH_BIN)" % binary)
        if not os.access(binary, os.X_OK):
            cli.die("%s is not executable" % binary)
        # kbench's refusal of its arguments, or a filter that selects nothing, is bad usage; not for
        # --diff: its sides are other builds, whose rows may differ.
        if not cli.kbench_rows(binary, ["--benchmark_filter=" + args.filter] + args.kbench_args):
            cli.die("no benchmark matches '%s' (build/kbench --benchmark_list_tests lists them)" % args.filter)
    cli.dry_run_exit()
    tool = choose_tool(args)
    if args.diff and tool == "callgrind":
        # --diff compares callgrind's raw counts: both sides must do the same work.
        os.environ["KBENCH_FIXED_ITERATIONS"] = os.environ.get("KBENCH_FIXED_ITERATIONS") or "20"
    out_dir = os.path.abspath(args.out_dir or default_out_dir(args.filter))
    try:
        os.makedirs(out_dir, exist_ok=True)
        profiler = Profiler(args, tool, binary, out_dir)
        base_ld = profiler.base_ld()
        if args.diff:
            profiler.diff(base_ld)
            return 0
        desc = ", ".join((["symbol builds"] if args.symbols else []) +
                         (["librdkafka " + args.librdkafka] if args.librdkafka else []))
        profiler.profile_one(out_dir, binary, base_ld, desc)
    except BuildError as e:  # of a librdkafka release or the symbol builds
        cli.die(e, status=2 if e.status == 2 else 3)
    except (OSError, ValueError) as e:
        cli.die(e, status=1)
    list_files(out_dir)
    return 0
