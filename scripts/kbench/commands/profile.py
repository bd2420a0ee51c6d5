"""scripts/profile: profiles the kbench benchmarks that match a filter with perf or callgrind,
and writes the raw profile, folded stacks, flame graphs and summaries into one folder;
optionally on symbol builds of the libraries (scripts/symbols), with per-thread and off-CPU
views, or side A against side B (a differential profile). Folding and rendering are
kbench.flame's.

    python -m kbench.commands.profile [options] FILTER [KBENCH_ARGS...]
"""

import datetime
import locale
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import kbench
from kbench import cli, flame, results, shell

COMMAND = "scripts/profile"
VALUE_OPTIONS = ("--tool", "--call-graph", "--out-dir", "--librdkafka", "--freq", "--callers")
SIDE_ERROR = "'%s' is neither an executable file, libs=DIR, librdkafka=VERSION nor a git revision"
OFF_CPU_NEEDS_PERF = "--off-cpu needs perf (the kernel's scheduler events); callgrind has no notion of waiting"

USAGE = """\
Usage: scripts/profile [options] FILTER [KBENCH_ARGS...]
       scripts/profile [options] --diff A B FILTER [KBENCH_ARGS...]

Runs `build/kbench --benchmark_filter=FILTER KBENCH_ARGS...` under a profiler
and writes everything into results/profiles/<YYYYmmdd-HHMMSS>-<filter-slug>/
(details: docs/profiling.md):

  command.txt        the exact command, binary, commit, tool, LD_LIBRARY_PATH
  context.txt        the run context and the build.json of every symbol build used
  result.json        the benchmark's own Google Benchmark JSON
  kbench.log         the benchmark's console output
  stacks.folded      folded stacks (flame graph tools, speedscope)
  flamegraph.svg     flame graph (open in a browser; hover for details)
  summary.txt        top functions by self and inclusive cost, and the share of
                     samples whose function has a name
  perf (when `perf record` works here):
    perf.data        raw profile (perf report -i perf.data)
    report.txt       perf report --stdio, self time by function
    threads/         one flame graph per thread role and roles.txt, the split
  callgrind (otherwise, or with --tool callgrind):
    callgrind.out    raw profile (kcachegrind), with --separate-callers so that
                     stacks.folded holds exact instruction counts per call chain
    report.txt       callgrind_annotate --inclusive=yes
  --off-cpu (perf only; a second run of the same command):
    offcpu.data, offcpu.folded, offcpu.svg   where threads wait, in microseconds
                     off the CPU, blocked (sleeping) or runnable (preempted)
    offcpu.txt       per thread: blocked and runnable ms; the top wait sites
    offcpu-threads/  the same split by thread role

Options:
  --tool perf|callgrind   force a profiler (default: perf if it works, else callgrind;
                          callgrind for --diff)
  --call-graph MODE       perf's call graph mode (default dwarf: correct stacks without frame
                          pointers; fp is cheaper if the build uses -fno-omit-frame-pointer)
  --symbols               run on symbol builds of zstd, lz4, snappy, zlib and librdkafka from
                          their Debian source packages (scripts/symbols build: minutes once,
                          cached after)
  --librdkafka VERSION    run on a librdkafka release built by scripts/librdkafka (unstripped;
                          before --symbols')
  --off-cpu               add the off-CPU view (perf sched_switch tracepoint and switch
                          events)
  --diff A B              profile side A and side B and write diff/: a differential flame
                          graph (B's stacks, red grew, blue shrank) and diff.txt, functions
                          ranked by the change of their self cost. A side is a git revision
                          (built once into $KBENCH_CACHE/profile-builds/SHA), a path to a
                          kbench binary, `libs=DIR[:DIR...]` (this binary with DIR first on
                          LD_LIBRARY_PATH) or `librdkafka=VERSION`. With callgrind the counts
                          are compared raw (set KBENCH_FIXED_ITERATIONS, default 20 here);
                          with perf, as shares of each side's samples.
  --callers N             callgrind call-chain depth (default 40)
  --freq HZ               perf's sampling frequency (default 499); a sampled --diff needs
                          thousands of samples a side: raise it, or lengthen the row
                          (--window-seconds=10)
  --out-dir DIR           write here instead of results/profiles/...
  -h, --help              this text

Environment: KBENCH_BIN overrides the binary (default build/kbench).
Under callgrind everything runs ~50x slower, so keep FILTER narrow.
Exit status: 0 ok; 2 bad usage or a missing prerequisite; 3 a profiled run or
a build failed.
"""


# --- small helpers -----------------------------------------------------------------------------

def split_path(value):
    """A colon-separated list as bash's `IFS=: read -r -a` splits it: a trailing empty
    field is dropped, so "" is no folder at all."""
    parts = value.split("\n", 1)[0].split(":")
    return parts[:-1] if parts[-1] == "" else parts


def join_path(first, second):
    return "%s:%s" % (first, second) if first and second else first or second


def run_to(cmd, log, env=None, stderr=subprocess.STDOUT):
    """Runs CMD with its output into the open binary file LOG (and stderr there too, unless
    given); True when it succeeds."""
    log.flush()
    try:
        return subprocess.run(cmd, stdout=log, stderr=stderr, env=env).returncode == 0
    except OSError as e:
        if stderr == subprocess.STDOUT:
            log.write(("%s: %s\n" % (cmd[0], e.strerror or e)).encode())
        return False


def output_of(cmd):
    """CMD's stdout without trailing newlines (stderr passes through), or None when it fails."""
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, errors="surrogateescape")
    except OSError as e:
        print("%s: %s" % (cmd[0], e.strerror or e), file=sys.stderr)
        return None
    return proc.stdout.rstrip("\n") if proc.returncode == 0 else None


def is_executable_file(path):
    return os.path.isfile(path) and os.access(path, os.X_OK)


def commit_of(rev, stderr=None):
    """The commit REV names in this checkout, or None."""
    try:
        proc = subprocess.run(["git", "-C", kbench.ROOT, "rev-parse", "--verify", "-q", rev + "^{commit}"],
                              stdout=subprocess.PIPE, stderr=stderr, text=True)
    except OSError:
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def perf_works():
    """`perf stat` working is not enough: containers often forbid sampling."""
    if not shutil.which("perf"):
        return False
    fd, probe = tempfile.mkstemp()
    os.close(fd)
    try:
        return subprocess.run(["perf", "record", "-q", "-g", "-o", probe, "--", "true"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0 \
            and os.path.getsize(probe) > 0
    except OSError:
        return False
    finally:
        os.remove(probe)


def list_files(folder):
    """FOLDER's entries as bash's FOLDER/* lists them: no dot files, in the locale's order."""
    try:
        locale.setlocale(locale.LC_COLLATE, "")
    except locale.Error:
        pass
    names = [n for n in os.listdir(folder) if not n.startswith(".")]
    for name in sorted(names, key=lambda n: (locale.strxfrm(n), n)):
        print(os.path.join(folder, name))


# --- the command line --------------------------------------------------------------------------

class Options:
    tool = ""
    call_graph = "dwarf"
    out_dir = ""
    librdkafka = ""
    freq = "499"
    callers = "40"
    symbols = False
    off_cpu = False
    diff = None  # (A, B)


def parse(argv):
    """(Options, FILTER, kbench's arguments); --help prints the usage, bad usage exits 2."""
    o, args = Options(), list(argv)
    while args:
        a = args[0]
        name, eq, value = a.partition("=")
        if a in ("-h", "--help"):
            print(USAGE, end="")
            sys.exit(0)
        elif eq and name in VALUE_OPTIONS:
            args[:1] = [name, value]
        elif a in VALUE_OPTIONS:
            if len(args) < 2 or not args[1]:
                cli.bad_usage("option %s needs a value" % a, COMMAND)
            setattr(o, a[2:].replace("-", "_"), args[1])
            del args[:2]
        elif a in ("--symbols", "--off-cpu"):
            setattr(o, a[2:].replace("-", "_"), True)
            del args[0]
        elif a == "--diff":
            if len(args) < 3 or not args[1] or not args[2]:
                cli.bad_usage("--diff needs two sides A and B", COMMAND)
            o.diff = (args[1], args[2])
            del args[:3]
        elif a == "--":
            del args[0]
            break
        elif a.startswith("-"):
            cli.die("unknown option '%s' (see --help)" % a)
        else:
            break
    if not args or not args[0]:
        cli.die("missing FILTER (a --benchmark_filter regex; see --help)")
    if o.tool not in ("", "perf", "callgrind"):
        cli.die("--tool must be perf or callgrind, got '%s'" % o.tool)
    if o.off_cpu and o.tool == "callgrind":
        cli.die(OFF_CPU_NEEDS_PERF)
    if not (re.fullmatch("[0-9]+", o.callers) and int(o.callers) >= 1):
        cli.die("--callers must be a positive integer, got '%s'" % o.callers)
    if not (re.fullmatch("[0-9]+", o.freq) and int(o.freq) >= 1):
        cli.die("--freq must be a positive integer (Hz), got '%s'" % o.freq)
    return o, args[0], args[1:]


def check_side(spec):
    """Bad sides are bad usage: refused before anything is created or built."""
    if spec.startswith("libs="):
        for d in split_path(spec[len("libs="):]):
            if not os.path.isdir(d):
                cli.die("%s: no directory %s" % (spec, d))
    elif spec.startswith("librdkafka="):
        if not re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+|system", spec[len("librdkafka="):]):
            cli.die("%s: VERSION must look like 2.15.1" % spec)
    elif not is_executable_file(spec) and not commit_of(spec):
        cli.die(SIDE_ERROR % spec)


def check_kbench_args(binary, filter_, kbench_args):
    """kbench checks its arguments and the filter before anything is built or profiled: an
    option it does not know, or a filter that selects nothing, is bad usage here, not a
    failed run."""
    try:
        proc = subprocess.run([binary, "--benchmark_list_tests", "--benchmark_filter=" + filter_] + kbench_args,
                              capture_output=True, text=True, errors="replace")
        rc, rows, err = proc.returncode, proc.stdout, proc.stderr
    except OSError as e:
        rc, rows, err = 1, "", "%s: %s" % (binary, e.strerror or e)
    if rc != 0:
        cli.die("kbench refuses the arguments: %s" % err.split("\n", 1)[0])
    if not rows.strip("\n"):
        cli.die("no benchmark matches '%s' (build/kbench --benchmark_list_tests lists them)" % filter_)


def choose_tool(o):
    """The profiler: --tool's, checked; else perf if it can sample here (callgrind first for
    --diff), else callgrind."""
    tool = o.tool
    if not tool and o.diff and shutil.which("valgrind"):
        tool = "callgrind"
    if not tool:
        if perf_works():
            tool = "perf"
        elif shutil.which("valgrind"):
            cli.info("perf cannot sample here (see /proc/sys/kernel/perf_event_paranoid); using callgrind")
            tool = "callgrind"
        else:
            cli.die("neither a working perf nor valgrind found (apt-get install linux-perf valgrind)")
    elif tool == "perf":
        if not perf_works():
            cli.die("perf record does not work here (missing linux-perf, or perf_event_paranoid / "
                    "container limits)")
    elif not shutil.which("valgrind"):
        cli.die("valgrind not found (apt-get install valgrind)")
    if o.off_cpu and tool != "perf":
        cli.die(OFF_CPU_NEEDS_PERF)
    return tool


def default_out_dir(filter_):
    """results/profiles/<YYYYmmdd-HHMMSS>-<filter-slug>: the filter's bytes outside
    [A-Za-z0-9._-] and runs of _ become one _, no _ at either end, at most 60 bytes."""
    slug = re.sub(rb"[^A-Za-z0-9.-]+", b"_", os.fsencode(filter_)).strip(b"_")[:60].decode()
    return os.path.join(kbench.ROOT, "results", "profiles",
                        "%s-%s" % (time.strftime("%Y%m%d-%H%M%S"), slug or "all"))


# --- the runs ----------------------------------------------------------------------------------

class Profiler:
    def __init__(self, argv, o, tool, filter_, kbench_args, binary, out_dir):
        self.argv, self.o, self.tool, self.filter, self.kbench_args = argv, o, tool, filter_, kbench_args
        self.bin, self.out_dir = binary, out_dir
        self.cache = os.environ.get("KBENCH_CACHE") or os.path.expanduser("~/.cache/kbench")

    def librdkafka_build(self, version):
        """The lib folder of a librdkafka release built by scripts/librdkafka."""
        ld = output_of([os.path.join(kbench.SCRIPTS, "librdkafka"), "build", version])
        if ld is None:
            cli.die("scripts/librdkafka build %s failed" % version, status=3)
        return ld

    def base_ld(self):
        """Library folders every side runs on (before any side's own)."""
        ld = ""
        if self.o.librdkafka:
            ld = self.librdkafka_build(self.o.librdkafka)
            # scripts/librdkafka builds keep mklove's -g and are not stripped: say so if one is not.
            if ld:
                lib = os.path.realpath(ld + "/librdkafka.so.1")
                try:
                    sections = subprocess.run(["readelf", "-S", "-W", lib], stdout=subprocess.PIPE,
                                              stderr=subprocess.DEVNULL, text=True, errors="replace").stdout
                except OSError:
                    sections = ""
                if " .symtab " not in sections:
                    cli.info("warning: %s/librdkafka.so.1 has no symbol table: its functions will show as "
                             "addresses" % ld)
        if self.o.symbols:
            dirs = output_of([os.path.join(kbench.SCRIPTS, "symbols"), "build"])
            if dirs is None:
                cli.die("scripts/symbols build failed (see its log)", status=3)
            ld = join_path(ld, dirs)
        return ld

    def build_rev(self, rev):
        """A git revision's kbench, built once, cached by commit."""
        sha = commit_of(rev)
        if not sha:
            cli.die(SIDE_ERROR % rev)
        wt = "%s/profile-builds/%s" % (self.cache, sha)
        blog = "%s/build-%s.log" % (self.out_dir, sha[:12])
        os.makedirs(self.cache + "/profile-builds", exist_ok=True)
        if not os.path.isdir(wt):
            with open(blog, "wb") as log:
                ok = run_to(["git", "-C", kbench.ROOT, "worktree", "add", "--detach", wt, sha], log)
            if not ok:
                shell.show_log(blog)
                cli.die("git worktree add failed for %s" % rev, status=3)
        cli.info("building %s (%s) in %s (log: %s)" % (rev, sha[:12], wt, blog))
        # KBENCH_CMAKE_ARGS holds several arguments, as in bench-commits.
        extra = os.environ.get("KBENCH_CMAKE_ARGS", "").split()
        with open(blog, "ab") as log:
            ok = run_to(["cmake", "-S", wt, "-B", wt + "/build", "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release"]
                        + extra, log) and run_to(["cmake", "--build", wt + "/build", "--target", "kbench"], log)
        if not ok:
            shell.show_log(blog, 20)
            cli.die("build of %s failed (log: %s)" % (rev, blog), status=3)
        return wt + "/build/kbench"

    def resolve_side(self, spec):
        """(kbench binary, library folders) of side SPEC."""
        binary, ld = self.bin, ""
        if spec.startswith("libs="):
            ld = spec[len("libs="):]  # its folders were checked (check_side)
        elif spec.startswith("librdkafka="):
            ld = self.librdkafka_build(spec[len("librdkafka="):])
        elif is_executable_file(spec):
            binary = os.path.join(os.path.abspath(os.path.dirname(spec)), os.path.basename(spec))
        else:
            binary = self.build_rev(spec)
        if not os.access(binary, os.X_OK):
            cli.die("kbench binary not found at %s (set KBENCH_BIN)" % binary)
        return binary, ld

    def profile_one(self, d, binary, ld, desc):
        """One profiled run into folder D, with its flame graph, summaries and context."""
        os.makedirs(d, exist_ok=True)
        system_ld = os.environ.get("LD_LIBRARY_PATH", "")
        ldp = join_path(ld, system_ld)
        env = dict(os.environ, LD_LIBRARY_PATH=ldp) if ldp else None
        kb = [binary, "--benchmark_filter=" + self.filter]
        if self.tool == "perf":
            cmd = ["perf", "record", "-g", "--call-graph", self.o.call_graph, "-F", self.o.freq,
                   "-o", d + "/perf.data", "--"]
        else:
            cmd = ["valgrind", "--tool=callgrind", "--separate-callers=" + self.o.callers,
                   "--callgrind-out-file=" + d + "/callgrind.out"]
        cmd += kb + ["--benchmark_out=%s/result.json" % d, "--benchmark_out_format=json"] + self.kbench_args
        fixed = os.environ.get("KBENCH_FIXED_ITERATIONS", "")
        with open(d + "/command.txt", "w", errors="surrogateescape") as f:
            now = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
            f.write("# %s tool=%s side=%s\n# binary: %s\n# commit: %s\n"
                    % (now, self.tool, desc, binary, commit_of("HEAD", subprocess.DEVNULL) or "unknown"))
            f.write("LD_LIBRARY_PATH=%s \\\n" % ldp if ldp else "")
            f.write("KBENCH_FIXED_ITERATIONS=%s \\\n" % fixed if fixed else "")
            f.write(shell.command_line(cmd))

        cli.info("profiling %swith %s into %s" % (desc + " " if desc else "", self.tool, d))
        with open(d + "/kbench.log", "wb") as log:
            ok = run_to(cmd, log, env)
        if not ok:
            shell.show_log(d + "/kbench.log", 20)
            cli.info("the profiled run failed (log: %s/kbench.log)" % d)
            sys.exit(3)
        if not results.has_rows(d + "/result.json"):
            cli.die("no benchmark matched '%s' (see %s/kbench.log; build/kbench --benchmark_list_tests lists "
                    "them)" % (self.filter, d), status=3)

        title = "kbench %s (%s%s, %s)" % (self.filter, self.tool, ", " + desc if desc else "",
                                         time.strftime("%Y-%m-%d"))
        folded = d + "/stacks.folded"
        if self.tool == "perf":
            with open(d + "/perf.script", "wb") as out, open(d + "/kbench.log", "ab") as log:
                ok = run_to(["perf", "script", "-i", d + "/perf.data"], out, stderr=log)
            if not ok:
                cli.die("perf script failed (log: %s/kbench.log)" % d, status=3)
            write_folded(folded, flame.fold_file("fold", d + "/perf.script"))
            os.remove(d + "/perf.script")  # large, and perf.data holds the same
            report = ["perf", "report", "-i", d + "/perf.data", "--stdio", "--no-children", "--percent-limit", "0.5"]
        else:
            write_folded(folded, flame.fold_file("fold-callgrind", d + "/callgrind.out"))
            report = ["callgrind_annotate", "--inclusive=yes", d + "/callgrind.out"]
        with open(d + "/report.txt", "wb") as out:
            if not run_to(report, out, stderr=subprocess.DEVNULL):
                cli.info("warning: %s failed" % ("perf report" if self.tool == "perf" else "callgrind_annotate"))
        perf = self.tool == "perf"
        stacks = flame_views(folded, d + "/flamegraph.svg", title, perf and d + "/threads", "kbench " + self.filter)
        if stacks:
            flame.write_text(d + "/summary.txt", flame.summary_text(
                stacks, unit="samples" if perf else "instructions", root_is_thread=perf))
        else:
            cli.info("warning: the profiler recorded no samples; no flame graph")
        if self.o.off_cpu:
            self.off_cpu(d, kb, env)

        # The context: what ran (the JSON's context, with loaded_libraries) and how the symbol
        # builds were made.
        with open(d + "/context.txt", "w") as f:
            f.write("# side: %s\n# LD_LIBRARY_PATH=%s\n" % (desc or "default", ldp))
            f.write(results.context_text(d + "/result.json"))
            for lib in split_path(ldp):
                if os.path.isfile(lib + "/../build.json"):
                    with open(lib + "/../build.json") as b:
                        f.write("# %s/../build.json\n%s" % (lib, b.read()))

    def off_cpu(self, d, kb, env):
        """sched_switch fires as a thread leaves the CPU (its stack and state); the switch
        records say when it came back. A second run: the tracepoint's cost stays out of the
        CPU profile."""
        cmd = ["perf", "record", "-e", "sched:sched_switch", "--switch-events", "--call-graph", self.o.call_graph,
               "-o", d + "/offcpu.data", "--"] + kb + ["--benchmark_out=%s/offcpu-result.json" % d,
                                                       "--benchmark_out_format=json"] + self.kbench_args
        with open(d + "/command.txt", "a", errors="surrogateescape") as f:
            f.write(shell.command_line(cmd))
        cli.info("off-CPU run (sched:sched_switch + switch events)")
        log_path = d + "/offcpu-kbench.log"
        with open(log_path, "wb") as log:
            ok = run_to(cmd, log, env)
        if not ok:
            shell.show_log(log_path, 20)
            cli.die("the off-CPU run failed (log: %s)" % log_path, status=3)
        with open(d + "/offcpu.script", "wb") as out, open(log_path, "ab") as log:
            if not run_to(["perf", "script", "-i", d + "/offcpu.data", "--show-switch-events", "-F",
                           "comm,pid,tid,time,event,trace,ip,sym,dso"], out, stderr=log):
                cli.die("perf script failed on offcpu.data", status=3)
        folded = d + "/offcpu.folded"
        write_folded(folded, flame.fold_file("offcpu", d + "/offcpu.script", d + "/offcpu.txt"))
        os.remove(d + "/offcpu.script")
        if not flame_views(folded, d + "/offcpu.svg", "kbench %s: off-CPU microseconds" % self.filter,
                           d + "/offcpu-threads", "kbench %s off-CPU" % self.filter):
            cli.info("warning: no off-CPU intervals recorded")

    def diff(self, base_ld):
        """Side A and side B profiled, then diff/: the differential flame graph and tables."""
        (side_a, side_b), out = self.o.diff, self.out_dir
        bin_a, ld_a = self.resolve_side(side_a)
        bin_b, ld_b = self.resolve_side(side_b)
        self.profile_one(out + "/a", bin_a, join_path(ld_a, base_ld), "A=" + side_a)
        self.profile_one(out + "/b", bin_b, join_path(ld_b, base_ld), "B=" + side_b)
        os.makedirs(out + "/diff", exist_ok=True)
        raw = self.tool == "callgrind"
        try:
            top = flame.write_diff(out + "/a/stacks.folded", out + "/b/stacks.folded", out + "/diff/diff.svg",
                                   out + "/diff/diff.txt", out + "/diff/diff.json",
                                   "kbench %s: B=%s against A=%s (%s)" % (self.filter, side_b, side_a, self.tool),
                                   "instructions" if raw else "samples", raw)
        except (OSError, ValueError) as e:
            cli.info("error: %s" % e)
            cli.die("the differential profile failed", status=3)
        sys.stderr.write(top)
        with open(out + "/diff/command.txt", "w", errors="surrogateescape") as f:
            for name, side, binary, ld in (("A", side_a, bin_a, ld_a), ("B", side_b, bin_b, ld_b)):
                f.write("# %s: %s (%s%s)\n" % (name, side, binary, ", LD_LIBRARY_PATH " + ld if ld else ""))
            f.write("# tool: %s; KBENCH_FIXED_ITERATIONS=%s\n"
                    % (self.tool, os.environ.get("KBENCH_FIXED_ITERATIONS", "")))
            # The bash tool wrote its $0 here; the entry point's full path runs from anywhere.
            f.write(shell.command_line([os.path.join(kbench.SCRIPTS, "profile")] + self.argv))
        list_files(out + "/diff")


def flame_views(folded, svg, title, roles_dir, roles_title):
    """The flame graph of the file FOLDED into SVG and, given ROLES_DIR, its per-thread-role
    views; its stacks, or None when it is empty (nothing was recorded)."""
    if not os.path.getsize(folded):
        return None
    stacks = flame.read_folded_file(folded)
    flame.write_text(svg, flame.render_svg(stacks, title))
    if roles_dir:
        flame.write_roles(stacks, roles_dir, roles_title)
    return stacks


def write_folded(path, stacks):
    flame.write_text(path, flame.folded_text(stacks))


def main(argv):
    cli.prog = "profile"
    o, filter_, kbench_args = parse(argv)
    # With a fixed iteration count Google Benchmark names rows NAME/iterations:N, so a filter
    # anchored with $ would match nothing.
    if os.environ.get("KBENCH_FIXED_ITERATIONS") and filter_.endswith("$") and "iterations" not in filter_:
        filter_ = filter_[:-1] + "(/iterations:[0-9]+)?$"
    if o.out_dir:
        cli.check_out_dir(o.out_dir, "--out-dir")
    binary = os.environ.get("KBENCH_BIN") or os.path.join(kbench.ROOT, "build", "kbench")
    if not o.diff:
        if not os.path.isfile(binary):
            cli.die("kbench binary not found at %s (build it with scripts/setup and cmake, or set KBENCH_BIN)"
                    % binary)
        if not os.access(binary, os.X_OK):
            cli.die("%s is not executable" % binary)
        # Not for --diff: its sides are other builds, whose rows may differ.
        check_kbench_args(binary, filter_, kbench_args)
    else:
        check_side(o.diff[0])
        check_side(o.diff[1])
    # A dry run stops before the profilers are probed: they depend on the machine, not the command.
    cli.dry_run_exit()
    tool = choose_tool(o)
    if o.diff and tool == "callgrind":
        # --diff compares callgrind's raw counts: both sides must do the same work.
        os.environ["KBENCH_FIXED_ITERATIONS"] = os.environ.get("KBENCH_FIXED_ITERATIONS") or "20"

    out_dir = o.out_dir or default_out_dir(filter_)
    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError:
        cli.die("cannot create %s" % out_dir)
    profiler = Profiler(argv, o, tool, filter_, kbench_args, binary, os.path.abspath(out_dir))
    base_ld = profiler.base_ld()
    if o.diff:
        profiler.diff(base_ld)
        return 0
    desc = ", ".join((["symbol builds"] if o.symbols else []) +
                     (["librdkafka " + o.librdkafka] if o.librdkafka else []))
    profiler.profile_one(profiler.out_dir, binary, base_ld, desc)
    list_files(profiler.out_dir)
    return 0


if __name__ == "__main__":
    cli.run(main, failed_writes=(OSError, ValueError))
