"""scripts/scenario: rerun one of the published Kafka producer experiments (a folder
scripts/scenarios/NAME/ named in scripts/scenarios/registry; docs/scenarios.md): check the
request, build kbench if needed, pick the output directory, hand over to NAME/run.py."""

import importlib.util
import os
import re
import subprocess
import sys
import time

import kbench
from kbench import cli
from kbench.scenario_runner import default_out

SCENARIOS = os.path.join(kbench.SCRIPTS, "scenarios")


def registry():
    """(NAME, SEED, TITLE) per line of the registry."""
    rows = []
    with open(os.path.join(SCENARIOS, "registry")) as f:
        for line in f:
            if line.strip() and not line.lstrip().startswith("#"):
                name, seed, title = line.split(None, 2)
                rows.append((name, seed, title.strip()))
    return rows


def known():
    return [name for name, _, _ in registry()]


def usage():
    lines = "".join("  %-19s %-3s  %s\n" % row for row in registry())
    return """Usage: scripts/scenario NAME [--scale small|full] [--bootstrap HOST:PORT] [--out DIR] [--tiny]
       scripts/scenario --list
       scripts/scenario NAME --help      (the scenario's own options)

Reruns a published Kafka producer experiment (docs/scenarios.md) on this machine.

Scenarios (seed, what it reruns; details in scripts/scenarios/NAME/README.md):
%s
Options:
  --scale small|full   small (default): a subset that finishes within ~15 minutes on a
                       2-core machine; full: the original's sizes (hours)
  --bootstrap H:P      use this cluster instead of starting one (the scenario checks
                       that it fits, e.g. enough brokers, and exits 2 if not)
  --out DIR            results directory (default:
                       results/scenarios/NAME/<YYYYmmdd-HHMMSS>-<git sha>/)
  --tiny               the CI scale: seconds per case, only proves the pipeline works
  Other options are passed to the scenario (see scripts/scenario NAME --help).

Writes DIR/*.json (Google Benchmark JSON), DIR/report.md, DIR/*.png, DIR/commands.txt.
Clusters a scenario starts listen on ports that are free when they start.
Environment: KBENCH_BIN (default build/kbench).
Exit status: 0 ok, 1 a run failed, 2 bad usage (unknown scenario or scale, a cluster that
does not fit). known-regressions: 0 every case found, 1 a case not found, 3 a case not judged.
""" % lines


def runner(name):
    """The main(argv) of scripts/scenarios/NAME/run.py."""
    path = os.path.join(SCENARIOS, name, "run.py")
    spec = importlib.util.spec_from_file_location("kbench_scenario_" + name.replace("-", "_"), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.main


def exit_status(main, argv):
    """MAIN(ARGV)'s exit status, whether it returns it or exits with it."""
    try:
        return main(argv) or 0
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)


def build_kbench(root):
    print("scenario: building kbench...", file=sys.stderr, flush=True)
    build = os.path.join(root, "build")
    if not os.path.isfile(os.path.join(build, "CMakeCache.txt")):
        if subprocess.run(["cmake", "-S", root, "-B", build, "-G", "Ninja"], stdout=sys.stderr).returncode:
            cli.die("cmake configure failed", 1)
    if subprocess.run(["cmake", "--build", build, "--target", "kbench"], stdout=sys.stderr).returncode:
        cli.die("building kbench failed", 1)


def main(argv):
    cli.prog = "scenario"
    if not argv:
        sys.stderr.write(usage())
        return 2
    if argv[0] in ("-h", "--help"):
        sys.stdout.write(usage())
        return 0
    if argv[0] == "--list":
        print("\n".join(known()))
        return 0
    names = " ".join(known())
    if argv[0].startswith("-"):
        cli.die("the first argument must be a scenario name (known: %s)" % names)
    name, rest = argv[0], argv[1:]
    if (not re.fullmatch(r"[a-z0-9][a-z0-9-]*", name) or name not in known()
            or not os.path.isfile(os.path.join(SCENARIOS, name, "run.py"))):
        cli.die("unknown scenario '%s' (known: %s)" % (name, names))

    # The common options are checked here, so that a typo fails before kbench is built; the
    # rest (scenario-specific options such as --a/--b) is the scenario's to check.
    scale, out, args, i = "small", "", [], 0
    while i < len(rest):
        a = rest[i]
        if a in ("-h", "--help"):
            return exit_status(runner(name), ["--help"])
        if a in ("--scale", "--out"):
            if i + 1 >= len(rest):
                cli.die("--scale needs a value (small or full)" if a == "--scale" else "--out needs a directory")
            value, i = rest[i + 1], i + 2
        elif a.startswith(("--scale=", "--out=")):
            a, _, value = a.partition("=")
            i += 1
        else:
            args.append(a)
            i += 1
            continue
        if a == "--scale":
            scale = value
        else:
            out = value
    if scale not in ("small", "full"):
        cli.die("unknown scale '%s' (known: small, full)" % scale)

    root = kbench.ROOT
    out = out or default_out(root, name)
    cli.check_out_dir(out, "--out")
    run_argv = ["--scale", scale, "--out", out] + args
    # A dry run: the scenario checks its own options (it stops before anything is made).
    if os.environ.get("KBENCH_DRY_RUN") == "1":
        return exit_status(runner(name), run_argv)

    os.environ["KBENCH_ROOT"] = root
    binary = os.environ.setdefault("KBENCH_BIN", os.path.join(root, "build", "kbench"))
    if not os.access(binary, os.X_OK):
        if binary != os.path.join(root, "build", "kbench"):
            cli.die("KBENCH_BIN=%s is not executable" % binary)
        build_kbench(root)
    try:
        os.makedirs(out, exist_ok=True)
    except OSError:
        cli.die("cannot create %s" % out)
    start = time.monotonic()
    rc = exit_status(runner(name), run_argv)
    if rc == 0:
        print("scenario: %s done in %d s: %s/report.md" % (name, time.monotonic() - start, out),
              file=sys.stderr)
        print(out)
    return rc


if __name__ == "__main__":
    cli.run(main)
