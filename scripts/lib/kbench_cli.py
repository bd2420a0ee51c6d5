"""Errors and usage shared by kbench's Python scripts, so that each says what went wrong
the same way and bad usage always exits 2 (as the bash scripts do, scripts/lib/cli_lib.sh).

    import kbench_cli as cli
    ap = cli.ArgumentParser(prog="compare", ...)  # bad options: usage, one line, exit 2
    cli.die("no such file")                       # "compare: error: no such file", exit 2
    cli.die("the run failed", status=1)
"""

import argparse
import os
import sys

USAGE = 2  # bad usage, bad input or a missing prerequisite

# The name messages start with: the first ArgumentParser's prog, else the script's name.
prog = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "kbench"
_named = False


def die(message, status=USAGE, name=None):
    print("%s: error: %s" % (name or prog, message), file=sys.stderr)
    sys.exit(status)


def usage_error(parser, message):
    """The usage line, then the error: for checks argparse cannot make itself."""
    parser.print_usage(sys.stderr)
    die(message, USAGE, parser.prog)


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
