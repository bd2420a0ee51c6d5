"""`python -m kbench NAME [ARGS...]`: run the command NAME (scripts/NAME is this, in
kbench's venv). Every command is a module of kbench.commands with

    def add_arguments(parser):   # its options on an argparse parser (cli.ArgumentParser)
    def main(args) -> int:       # the work, from the parsed namespace; the exit status

so that its usage and --help come from the parser alone. A command that needs another calls
that module's functions; it never starts scripts/OTHER as a process.
"""

import importlib
import sys

from kbench import cli


def command_module(name):
    try:
        return importlib.import_module("kbench.commands." + name.replace("-", "_"))
    except ModuleNotFoundError as e:
        if e.name != "kbench.commands." + name.replace("-", "_"):
            raise
        return None


def parser_for(name, module):
    parser = cli.ArgumentParser(prog="scripts/" + name, description=(module.__doc__ or "").strip(),
                                formatter_class=cli.HelpFormatter)
    module.add_arguments(parser)
    return parser


def run(name, argv):
    module = command_module(name)
    if module is None:
        cli.die("no command '%s'" % name)
    return module.main(parser_for(name, module).parse_args(argv))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        cli.die("usage: python -m kbench NAME [ARGS...]")
    cli.run(lambda argv: run(argv[0], argv[1:]))
