"""shellcheck, ruff, clang-format and clang-tidy on the files git tracks or would track, less
results/ (extensionless scripts found by their #! line). Without --shell/--python/--format/--tidy:
all but --tidy. scripts/test runs it.

exit status: 0 clean, 1 findings, 2 bad usage or a missing linter.
"""

import os
import re
import shutil
import subprocess
import sys
import time

import kbench
from kbench import cli

KINDS = ("shell", "python", "format", "tidy")
LINTER = {"shell": "shellcheck", "python": "ruff", "format": "clang-format", "tidy": "clang-tidy"}
TIDY_DIRS = re.compile(r"(harness|fixtures|benchmarks|mock)/.*\.cc$")
# One file per run; the checks are .clang-tidy's, found beside the file; any finding is an error.
TIDY = ["clang-tidy", "--quiet", "--warnings-as-errors=*"]


def add_arguments(parser):
    parser.add_argument("--shell", action="store_true",
                        help="shellcheck (Debian package shellcheck), every *.sh file and every "
                        "file whose #! line names bash or sh")
    parser.add_argument("--python", action="store_true",
                        help="ruff check (pinned in scripts/requirements.txt, run from kbench's "
                        "venv; rules in ruff.toml), every *.py file and every file whose #! names python")
    parser.add_argument("--format", action="store_true",
                        help="clang-format --dry-run --Werror (style in .clang-format), every *.h, *.cc and *.c file")
    parser.add_argument("--tidy", action="store_true",
                        help="clang-tidy (checks in .clang-tidy; findings are errors) on every *.cc "
                        "file of harness/, fixtures/, benchmarks/ and mock/; needs a configured "
                        "build directory (its compile_commands.json). Takes minutes: "
                        "KBENCH_TIDY_JOBS (default 2) in parallel")
    parser.add_argument("--build", metavar="DIR", default="build",
                        help="the build directory clang-tidy reads (default: build)")
    parser.add_argument("--list", action="store_true", help="print the files each linter would check, and nothing else")
    parser.add_argument("files", nargs="*", metavar="FILE",
                        help="check only these files (each with the linters its kind selects)")


def kind(path):
    """The linters of PATH: "shell", "python", "format" (and "tidy"), or none."""
    if path.endswith(".sh"):
        return ["shell"]
    if path.endswith(".py"):
        return ["python"]
    if path.endswith((".h", ".cc", ".c")):
        return ["format"] + (["tidy"] if TIDY_DIRS.match(path) else [])
    try:
        with open(path, "rb") as f:
            first = f.readline().decode("utf-8", "replace")
    except OSError:
        return []
    if re.match(r"#!.*[/ ](bash|sh)(\s|$)", first):
        return ["shell"]
    return ["python"] if re.match(r"#!.*python", first) else []


def tree_files():
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=kbench.ROOT, stdout=subprocess.PIPE, text=True, check=True).stdout
    return [f for f in listed.split("\0") if f and os.path.isfile(f) and not f.startswith("results/")]


def need(tool):
    if not shutil.which(tool):
        cli.die("%s not found (scripts/setup installs it: apt-get install %s)" % (tool, tool))


def check(kinds, files=None, build="build", log=None):
    """The linters of KINDS on FILES (default the whole tree), their output to the file LOG: 0 clean, 1 findings."""
    out = dict(stdout=log, stderr=log)
    os.chdir(kbench.ROOT)
    picked = {k: [] for k in KINDS}
    for f in files if files is not None else tree_files():
        for k in kind(f):
            picked[k].append(f)
    failed = 0
    for k in kinds:
        todo = picked[k]
        if not todo:
            continue
        started = time.monotonic()
        if k == "shell":
            need("shellcheck")
            # -x: follow `source` so that functions of a sourced library are known where used.
            rc = subprocess.run(["shellcheck", "-x"] + todo, **out).returncode
            said = "%d shell scripts clean" % len(todo)
        elif k == "python":
            ruff = [sys.executable, "-m", "ruff"]
            if subprocess.run(ruff + ["--version"], capture_output=True).returncode:
                cli.die("ruff is not in kbench's venv (scripts/setup installs scripts/requirements.txt)")
            rc = subprocess.run(ruff + ["check", "--no-cache", "--quiet"] + todo, **out).returncode
            said = "%d Python files clean" % len(todo)
        elif k == "format":
            need("clang-format")
            rc = subprocess.run(["clang-format", "--dry-run", "--Werror"] + todo, **out).returncode
            said = "%d C/C++ files formatted" % len(todo)
            if rc:
                cli.info("clang-format: reformat the files above with 'clang-format -i FILE'")
        else:
            need("clang-tidy")
            if not os.path.isfile(os.path.join(build, "compile_commands.json")):
                cli.die("no %s/compile_commands.json: configure first (cmake -S . -B %s -G Ninja)" % (build, build))
            # KBENCH_TIDY_JOBS files at a time.
            rc = subprocess.run(["xargs", "-0", "-n", "1", "-P", os.environ.get("KBENCH_TIDY_JOBS", "2")]
                                + TIDY + ["-p", build],
                                input="\0".join(todo), text=True, **out).returncode
            said = "%d source files clean (%d s)" % (len(todo), time.monotonic() - started)
        failed |= bool(rc)
        if not rc:
            cli.info("%s: %s" % (LINTER[k], said))
    return failed


def main(args):
    kinds = [k for k in KINDS if getattr(args, k)] or ["shell", "python", "format"]
    for f in args.files:
        if not os.path.isfile(f):
            cli.die("no such file: %s" % f)
    files = [os.path.relpath(os.path.realpath(f), kbench.ROOT) for f in args.files] or None
    cli.dry_run_exit()
    os.chdir(kbench.ROOT)
    build = os.path.join(kbench.ROOT, args.build) if not os.path.isabs(args.build) else args.build
    if args.list:
        files = tree_files() if files is None else files
        print("\n".join("%s %s" % (k, f) for k in kinds for f in files if k in kind(f)))
        return 0
    return check(kinds, files, build)
