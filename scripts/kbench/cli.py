"""Errors and usage shared by kbench's commands, so that each says what went wrong the same
way and bad usage always exits 2.

    from kbench import cli
    ap = cli.ArgumentParser(prog="compare", ...)  # bad options: usage, one line, exit 2
    cli.die("no such file")                       # "compare: error: no such file", exit 2
    cli.die("the run failed", status=1)
    cli.info("building")                          # "compare: building" on stderr
    cli.run(main)                                 # exit main(argv); Ctrl-C exits 130
    cli.check_out_file(args.out, "--out")         # before the work: can the result file be
    cli.check_out_dir(args.site, "--site")        # written, the results folder be made? else exit 2
    cli.dry_run_exit()                            # KBENCH_DRY_RUN=1: arguments checked, exit 0
    doc = cli.read_json(path, status=1)           # or "cannot read PATH: why", exit 1
"""

import argparse
import json
import os
import re
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
    """A tool's last line: exit with main(argv)'s status. Ctrl-C the tool does not handle
    itself exits 130 (128 + SIGINT); an exception of FAILED_WRITES (writing the results) is
    one error line and exit 1. A reader that closed the pipe (`| head`) ends it quietly."""
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


def usage_error(parser, message):
    """The usage line, then the error: for checks argparse cannot make itself."""
    parser.print_usage(sys.stderr)
    die(message, USAGE, parser.prog)


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
    """argparse with kbench's error line; the first one's prog names die()'s messages
    (its sub-command parsers, made with the same class, do not)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        global prog, _named
        if not _named:
            prog, _named = self.prog, True

    def error(self, message):
        usage_error(self, message)


# Output paths are checked before the work, so that a long run never ends in "cannot write".
# Nothing is created: a probe file is written and removed in the nearest folder that exists,
# which also catches what a permission test cannot see as root (read-only mounts, /proc).
def _probe(option, path, folder):
    while not os.path.lexists(folder):
        folder = os.path.dirname(folder) or "."
    if not os.path.isdir(folder):
        die("%s %s: %s is a file, not a folder" % (option, path, folder))
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".kbench-write-test."):
            pass
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
            with open(path, "a"):
                pass
        except OSError as e:
            die("%s %s: cannot write it (%s)" % (option, path, e.strerror or e))
    else:
        _probe(option, path, os.path.dirname(os.path.abspath(path)))


def dry_run_exit():
    """KBENCH_DRY_RUN=1 (tests/scripts/test_docs_commands.py runs the documented commands
    so): the command line was parsed and checked as for a real run; nothing else happens."""
    if os.environ.get("KBENCH_DRY_RUN") == "1":
        print("%s: dry run: arguments checked; nothing built, started or run" % prog, file=sys.stderr)
        sys.exit(0)
