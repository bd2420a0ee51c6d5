"""Rerun one of the published Kafka producer experiments on this machine (docs/scenarios.md):
scripts/scenario NAME [OPTIONS]; scripts/scenario NAME --help shows the scenario's own.

A scenario is a folder scripts/scenarios/NAME/ (run.py, report.py, README.md) named in
scripts/scenarios/registry. It writes DIR/*.json (Google Benchmark JSON), DIR/report.md,
DIR/*.png and DIR/commands.txt; the clusters it starts listen on ports free when they start.
Environment: KBENCH_BIN (default build/kbench, built when missing).
Exit status: 0 ok, 1 a run failed, 2 bad usage (an unknown scenario or scale, a cluster that
does not fit); known-regressions: 1 a case not found, 3 a case not judged."""

import functools
import os
import time

import kbench
from kbench import cli
from kbench.scenario_runner import add_common_arguments, sibling

SCENARIOS = os.path.join(kbench.SCRIPTS, "scenarios")


def registry():
    """(NAME, SEED, TITLE) per line of the registry."""
    with open(os.path.join(SCENARIOS, "registry")) as f:
        return [tuple(line.split(None, 2)) for line in f if line.strip() and not line.lstrip().startswith("#")]


@functools.cache
def runner(name):
    """The module scripts/scenarios/NAME/run.py."""
    return sibling(os.path.join(SCENARIOS, name, "README.md"), "run")


def readme_scale(name):
    """The "## Scale" section of the scenario's README.md: what each scale runs and writes."""
    with open(os.path.join(SCENARIOS, name, "README.md"), encoding="utf-8") as f:
        section = f.read().partition("\n## Scale\n")[2].partition("\n## ")[0]
    return "Scales (scripts/scenarios/%s/README.md):\n%s" % (name, section.strip())


def add_arguments(parser):
    parser.add_argument("--list", action="store_true", help="print the scenarios' names and exit")
    scenarios = parser.add_subparsers(dest="scenario", metavar="NAME", title="scenarios (seed, what it reruns)")
    for name, seed, title in registry():
        module = runner(name)
        sub = scenarios.add_parser(name, help="%s  %s" % (seed, title.strip()), description=module.__doc__,
                                   epilog=readme_scale(name), formatter_class=cli.HelpFormatter)
        add_common_arguments(sub)
        if hasattr(module, "add_arguments"):
            module.add_arguments(sub)


def parser():
    p = cli.ArgumentParser(prog="scripts/scenario", description=__doc__, formatter_class=cli.HelpFormatter)
    add_arguments(p)
    return p


def run(name, argv):
    """Scenario NAME with the options ARGV, as `scripts/scenario NAME ARGV...`; its exit status."""
    return main(parser().parse_args([name, *argv]))


def main(args):
    if args.list:
        print("\n".join(name for name, _, _ in registry()))
        return 0
    if not args.scenario:
        cli.die("name a scenario (known: %s)" % " ".join(name for name, _, _ in registry()))
    cli.prog = "scripts/scenario " + args.scenario  # the name its messages start with
    start = time.monotonic()
    rc = runner(args.scenario).main(args) or 0
    if rc == 0:
        cli.info("%s done in %d s: %s/report.md" % (args.scenario, time.monotonic() - start, args.out))
        print(args.out)
    return rc
