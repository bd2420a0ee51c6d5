"""Errors, progress lines and usage shared by kbench's commands: each says what went wrong
the same way ("PROG: error: ..."), and bad usage always exits 2."""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

USAGE = 2  # bad usage, bad input or a missing prerequisite


def _default_prog():
    """The script's name; for a module of this package run with -m, its dotted name."""
    path = sys.argv[0] if sys.argv and sys.argv[0] else ""
    if not path:
        return "kbench"
    package = os.path.dirname(os.path.realpath(__file__))
    real = os.path.realpath(path)
    if real.startswith(package + os.sep) and real.endswith(".py"):
        return "kbench." + os.path.relpath(real, package)[:-3].replace(os.sep, ".")
    return os.path.basename(path)


# The name messages start with: the first ArgumentParser's prog, else the script's name.
prog = _default_prog()
_named = False


def die(message, status=USAGE, name=None):
    print("%s: error: %s" % (name or prog, message), file=sys.stderr)
    sys.exit(status)


def run(main, failed_writes=()):
    """Exit with main(argv)'s status: Ctrl-C 130, an exception of FAILED_WRITES one error line
    and 1, a reader that closed the pipe (`| head`) quietly."""
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(141)  # 128 + SIGPIPE
    except failed_writes as e:
        die(e, status=1)


def info(message):
    """A progress line on stderr, "PROG: MESSAGE"."""
    print("%s: %s" % (prog, message), file=sys.stderr, flush=True)


def read_json(path, status=USAGE, what=""):
    """The JSON document at PATH; one that cannot be read or parsed ends the program."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        die("cannot read %s%s: %s" % (what, path, e), status=status)


def matching(pattern, what, convert=str):
    """An argparse type: a value that matches PATTERN, converted; else "invalid WHAT value"."""
    def check(text):
        if not re.fullmatch(pattern, text):
            raise ValueError(text)
        return convert(text)
    check.__name__ = what
    return check


POSITIVE = matching(r"[1-9][0-9]*", "positive integer", int)
COUNT = matching(r"[0-9]+", "count (0 or more)", int)
NUMBER = matching(r"[0-9]*\.?[0-9]+", "number", float)
POSITIVE_NUMBER = matching(r"(?=.*[1-9])[0-9]*\.?[0-9]+", "positive number", float)
LEVEL = matching(r"0?\.[0-9]+", "level between 0 and 1", float)


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """--help keeps a command's description as written (its module docstring)."""


class ArgumentParser(argparse.ArgumentParser):
    """argparse with kbench's error line; the first one's prog names die()'s messages."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        global prog, _named
        if not _named:
            prog, _named = self.prog, True

    def error(self, message):
        self.print_usage(sys.stderr)
        die(message, USAGE, self.prog)


# Output paths are checked before the work: a probe file in the nearest folder that exists
# also catches what a permission test cannot see as root (read-only mounts, /proc).
def _probe(option, path, folder):
    while not os.path.lexists(folder):
        folder = os.path.dirname(folder) or "."
    if not os.path.isdir(folder):
        die("%s %s: %s is a file, not a folder" % (option, path, folder))
    try:
        tempfile.NamedTemporaryFile(dir=folder, prefix=".kbench-write-test.").close()
    except OSError:
        die("%s %s: cannot write in %s" % (option, path, folder))


def check_out_dir(path, option="--out"):
    """PATH can hold results: an existing writable folder, or one makedirs can make."""
    if os.path.exists(path) and not os.path.isdir(path):
        die("%s %s: is a file; give a folder" % (option, path))
    _probe(option, path, os.path.abspath(path))


def check_out_file(path, option="--out"):
    """PATH can be written as a file: not a folder; its folder exists writable or can be made."""
    if os.path.isdir(path):
        die("%s %s: is a folder; give a file name" % (option, path))
    if os.path.exists(path):
        try:
            open(path, "a").close()
        except OSError as e:
            die("%s %s: cannot write it (%s)" % (option, path, e.strerror or e))
    else:
        _probe(option, path, os.path.dirname(os.path.abspath(path)))


def kbench_rows(binary, args, env=None):
    """The rows `BINARY --benchmark_list_tests ARGS...` lists; kbench refusing ARGS is bad usage,
    said with the first line of its own error."""
    try:
        done = subprocess.run([binary, "--benchmark_list_tests", *args], capture_output=True, text=True,
                              errors="replace", env=env)
    except OSError as e:
        die("cannot run %s: %s" % (binary, e))
    if done.returncode != 0:
        said = re.sub(r"^\S+: error: ", "", done.stderr.strip().split("\n")[0])
        die("kbench refuses the arguments: %s" % (said or "exit status %d" % done.returncode))
    return [line for line in done.stdout.splitlines() if line.strip()]


def dry_run_exit():
    """KBENCH_DRY_RUN=1 (test_docs_commands.py): the command line was checked; nothing else happens."""
    if os.environ.get("KBENCH_DRY_RUN") == "1":
        print("%s: dry run: arguments checked; nothing built, started or run" % prog, file=sys.stderr)
        sys.exit(0)
