"""What the scenarios' reports (scripts/scenarios/<name>/report.py) share: spreads over
repetitions, the common header (the machine, the versions and what differs from the original
first, so that a scaled run on one small host is never read as the original's numbers),
matplotlib, and report_main(), the command line of each report.py."""

import collections
import math
import os
import statistics

from kbench import facts, text
from kbench import results as kr
from kbench.cli import ArgumentParser, die

MIB = 1024.0 * 1024.0


class ScenarioError(Exception):
    """User-facing failure: one line, exit 2."""


def load_dir_json(directory, filename, optional=False):
    """DIR/FILENAME's benchmark JSON; a missing file is an error, or None when optional."""
    path = os.path.join(directory, filename)
    if not os.path.exists(path):
        if optional:
            return None
        raise ScenarioError("%s does not exist (did the runs finish?)" % path)
    return kr.load(path)


def _groups(data):
    """(name, params dict, group) per benchmark; errored benchmarks raise."""
    for name, g in kr.group_runs(data).items():
        if not g["runs"] and g["errors"]:
            raise ScenarioError("benchmark %s failed: %s" % (name, g["errors"][0]))
        yield name, kr.parse_name(name)[2], g


def median_table(data):
    """name -> (params dict, median metrics); errored benchmarks raise."""
    return {name: (p, kr.median_metrics(g)) for name, p, g in _groups(data)}


class Spread(collections.namedtuple("Spread", "median lo hi n total")):
    """One cell over its repetitions: median, range and count. Reports show the range, not
    mean ± sd: 3–5 repetitions of a skewed quantity on a shared machine."""

    @classmethod
    def of(cls, values):
        values = [v for v in values if v is not None]
        return cls(statistics.median(values), min(values), max(values), len(values), sum(values)) if values else None

    def scaled(self, k):
        return Spread(self.median * k, self.lo * k, self.hi * k, self.n, self.total * k)


def spread_table(data):
    """name -> (params dict, {metric: Spread over the repetitions}); errored benchmarks raise."""
    out = {}
    for name, p, g in _groups(data):
        runs = g["runs"] or [kr.median_metrics(g)]
        out[name] = (p, {k: Spread.of([r.get(k) for r in runs]) for k in dict.fromkeys(key for r in runs for key in r)})
    return out


# Two cells of 3 repetitions with the same distribution fail to overlap by chance with
# probability 2 / C(6, 3) = 1/10; with 2 a side it is 1/3, too often to claim an order.
ORDER_MIN_N = 3


def order(a, b):
    """+1 when every repetition of a beat every one of b, -1 the other way, 0 when the ranges
    overlap, a side is missing or has fewer than ORDER_MIN_N repetitions (no order claimed)."""
    if a is None or b is None or min(a.n, b.n) < ORDER_MIN_N:
        return 0
    return 1 if a.lo > b.hi else -1 if a.hi < b.lo else 0


def chance_orders_note(pairs, n):
    """How many of `pairs` orders between cells of n repetitions would appear by chance."""
    if pairs <= 0 or n < ORDER_MIN_N:
        return ""
    p = 2.0 / math.comb(2 * n, n)
    return ("Of %d comparisons, about %.1f would come out ordered by chance alone (two cells of %d repetitions with "
            "the same distribution fail to overlap with probability %.3f), and cells run one after another, so drift "
            "between them is not cancelled: trust an order that a second run repeats." % (pairs, pairs * p, n, p))


def unordered_reason(a, b):
    """Why order(a, b) claimed nothing, in a report's words."""
    if a is None or b is None:
        return "a side is missing"
    if min(a.n, b.n) < ORDER_MIN_N:
        return "fewer than %d repetitions" % ORDER_MIN_N
    return "ranges overlap"


def clearly_lower(a, b):
    """a's highest under b's lowest, with at least 2 repetitions a side (one has no spread)."""
    return a is not None and b is not None and min(a.n, b.n) >= 2 and a.hi < b.lo


def not_higher(a, b):
    """No repetition of a is above any of b (a's highest at most b's lowest)."""
    return a is not None and b is not None and min(a.n, b.n) >= 2 and a.hi <= b.lo


# What pareto_marks says of each point.
FRONT, DOMINATED, UNDECIDED = "front", "dominated", "undecided"


def pareto_marks(points):
    """{label: mark} for points (label, x Spread, y Spread), lower better on both axes: FRONT
    when it is clearly lower than each other point on an axis, DOMINATED when another is
    clearly lower on one axis and not higher on the other, else UNDECIDED."""
    marks = {}
    for label, x, y in points:
        others = [(x2, y2) for label2, x2, y2 in points if label2 != label]
        if all(clearly_lower(x, x2) or clearly_lower(y, y2) for x2, y2 in others):
            marks[label] = FRONT
        elif any((clearly_lower(x2, x) and not_higher(y2, y)) or
                 (clearly_lower(y2, y) and not_higher(x2, x)) for x2, y2 in others):
            marks[label] = DOMINATED
        else:
            marks[label] = UNDECIDED
    return marks


def fmt_spread(s, fmt=text.number):
    """`median [lo–hi]` in the cell's number format; a single repetition shows alone."""
    if s is None or s.n < 2:
        return "—" if s is None else fmt(s.median)
    return "%s [%s–%s]" % (fmt(s.median), fmt(s.lo), fmt(s.hi))


def fixed(digits):
    """A cell format: DIGITS decimals, — for None."""
    return lambda v: "—" if v is None else "%.*f" % (digits, v)


def error_bars(spreads, k=1.0):
    """matplotlib yerr (2 x N) of Spreads around their medians, scaled by k."""
    return [[(s.median - s.lo) * k for s in spreads], [(s.hi - s.median) * k for s in spreads]]


def header(args, title, original, ctx, differences, common=True):
    """The report's title, setup table and differences from the original (a shared first one if common)."""
    if common:
        differences = ["Client, broker(s) and every replica share one host with %s cores and talk "
                       "over loopback; absolute numbers are this machine's, only the shape (which "
                       "setting wins, by roughly how much) is comparable with the original."
                       % ctx.get("num_cpus", "?")] + differences
    lines = ["# %s" % title, "", "Reproduces: %s" % original, ""]
    setup = [
        ("scale", "tiny (CI: proves the pipeline, numbers are not meaningful)" if args.tiny else args.scale),
        ("machine", "%s, %s cores, %s MHz, kernel %s, host %s" % (
            ctx.get("cpu_model", "?"), ctx.get("num_cpus", "?"), ctx.get("mhz_per_cpu", "?"),
            ctx.get("kernel", "?"), ctx.get("host_name", "?"))),
        ("kbench", "%s, git %s%s, %s build, %s" % (
            ctx.get("kbench_version", "?"), str(ctx.get("git_sha", "?"))[:12],
            " (dirty)" if ctx.get("git_dirty") == "true" else "", ctx.get("build_type", "?"),
            ctx.get("compiler", "?"))),
        ("librdkafka", ctx.get("librdkafka_version", "?")),
        ("broker", "Kafka %s, %s broker(s), target %s, bootstrap %s" % (
            ctx.get("broker_version", "?"), ctx.get("broker_count", "?"), ctx.get("target", "?"),
            ctx.get("bootstrap", "") or "—")),
        ("codecs", ", ".join("%s %s" % (key[:-len("_version")], ctx.get(key, "?"))
                             for key in facts.codec_version_keys())),
        ("started", ctx.get("date", "?"))]
    if args.wall_seconds is not None:
        setup.append(("wall time", "%d s" % args.wall_seconds))
    lines += ["## Setup of this run", ""] + text.table(["", ""], setup, markdown=True).splitlines()
    lines += ["", "**Not the original setup.** %s" % differences[0], ""]
    return lines + ["- %s" % d for d in differences[1:] + args.note] + [""]


def plt_module():
    import matplotlib
    matplotlib.use("Agg")  # files only; CI machines have no display
    import matplotlib.pyplot as plt
    return plt


def save_chart(fig, directory, name):
    fig.savefig(os.path.join(directory, name), dpi=110, bbox_inches="tight")
    plt_module().close(fig)


def grouped_bars(ax, series, k=1.0):
    """Bars side by side around x = 0, 1, ...: series is [(label, [(x, Spread)], bar kwargs)];
    each bar is a median scaled by k, its error bar the range over repetitions."""
    width = 0.8 / max(len(series), 1)
    for i, (label, cells, kwargs) in enumerate(series):
        ax.bar([j + (i - (len(series) - 1) / 2) * width for j, _ in cells],
               [s.median * k for _, s in cells], width, label=label,
               yerr=error_bars([s for _, s in cells], k), capsize=2, **kwargs)


def write_report(directory, lines):
    path = os.path.join(directory, "report.md")
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write("\n".join(lines).rstrip() + "\n")
    os.replace(path + ".tmp", path)


def report_main(report, add_options=None, argv=None):
    """A report.py's command line: DIR --scale S [--tiny] [--wall-seconds N] [--note TEXT]... add_options'."""
    ap = ArgumentParser(prog="report.py", description="Write DIR/report.md and DIR/*.png.")
    ap.add_argument("dir")
    ap.add_argument("--scale", required=True)
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--wall-seconds", type=int)
    ap.add_argument("--note", action="append", default=[])
    if add_options:
        add_options(ap)
    args = ap.parse_args(argv)
    try:
        report(args.dir, args)
    except (ScenarioError, kr.BenchmarkJsonError) as e:
        die(e)
    return 0
