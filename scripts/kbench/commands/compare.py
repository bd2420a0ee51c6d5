"""Statistical A/B comparison of kbench results (Google Benchmark JSON), with exit-coded
verdicts; docs/comparing.md says how they are reached.

Sides: BASE and NEW are each a JSON file or a scripts/bench result folder; --base F...
--new F... take several files per side. The samples are process medians when both sides
have >= 2 kbench processes, else the repetitions.

Each row's primary metric(s) (by its kind: kbench --describe) decide the verdict and the
exit code; every other metric with a direction is secondary, reported with its interval,
never deciding, unless named with --metric (then the named metrics decide). Verdicts:
regression/improvement (Holm-adjusted p < alpha and a shift of at least the threshold),
unchanged (the (1 - 2 alpha) interval of the shift inside +-threshold), inconclusive.
Latency and max_rate may be judged against thresholds of their own (the Threshold column).

Contexts: a different target, build type or machine makes the numbers incomparable;
compare refuses (exit 2) unless --force. Differing versions are what you are comparing
and are only shown.

Exit: 0 every benchmark in common got a verdict on its primary metric(s), none regressed;
1 regression(s); 2 bad input or options (a --filter or --metric that matches nothing); 3
no regression, but a benchmark errored, is missing on one side, lacks its primary metric
on a side, or a verdict is inconclusive (--accept-inconclusive waives only the last).
"""

import os
import statistics
import sys

from kbench import cli, facts, stats, text
from kbench import results as kr
from kbench import verdict as kv

EXIT_MEANING = {0: "every row judged on its primary metrics, none regressed", 1: "regression",
                2: "bad input", 3: "not everything could be judged"}


class CompareError(Exception):
    """Input that cannot be compared (exit 2); the message is user-facing."""


def add_arguments(ap):
    ap.add_argument("sides", nargs="*", metavar="BASE NEW", help="the two sides (files or folders)")
    ap.add_argument("--base", nargs="+", metavar="F", help="base files or folders")
    ap.add_argument("--new", nargs="+", metavar="F", help="new files or folders")
    ap.add_argument("--alpha", type=float, default=0.01, help="significance level (default 0.01)")
    ap.add_argument("--threshold", type=float, default=5.0,
                    help="smallest shift in %% that counts (default 5); latency metrics use "
                         "their own where it is larger (see above)")
    ap.add_argument("--out", metavar="VERDICT.json", help="write the verdict as JSON")
    ap.add_argument("--filter", metavar="REGEX", help="only benchmarks whose name matches")
    ap.add_argument("--metric", action="append", metavar="NAME",
                    help="only this metric (repeatable), e.g. --metric instructions")
    ap.add_argument("--force", action="store_true", help="compare even when target/build/machine differ")
    ap.add_argument("--accept-inconclusive", action="store_true",
                    help="exit 0 (not 3) when the only unjudged rows are inconclusive")
    ap.add_argument("--unpaired", action="store_true",
                    help="ignore the pairing of interleaved rounds (scripts/bench-commits) and "
                         "compare the sides as independent samples")
    ap.add_argument("--quiet", action="store_true", help="print only rows that are not 'unchanged', and the summary")
    ap.add_argument("--format", choices=("text", "markdown"), default="text",
                    help="markdown: the verdict as a Markdown table (a pull-request comment) "
                         "on stdout, instead of the text table")


def main(args):
    if args.sides and (args.base or args.new):
        cli.die("give BASE NEW or --base/--new, not both")
    if args.sides:
        if len(args.sides) != 2:
            cli.die("expected BASE and NEW, got %d argument(s)" % len(args.sides))
        base_paths, new_paths = [args.sides[0]], [args.sides[1]]
    elif not args.base or not args.new:
        cli.die("BASE and NEW are required (or --base F... --new F...)")
    else:
        base_paths, new_paths = args.base, args.new
    if not (0.0 < args.alpha < 0.5):
        cli.die("--alpha must be between 0 and 0.5, got %g" % args.alpha)
    if not (args.threshold >= 0.0) or args.threshold == float("inf"):
        cli.die("--threshold must be a non-negative number of percent, got %g" % args.threshold)
    name_filter = kv.compile_filter(args.filter)
    if args.out:
        cli.check_out_file(args.out, "--out")
    cli.dry_run_exit()
    try:
        result = judge(base_paths, new_paths, alpha=args.alpha, threshold=args.threshold,
                       metric=args.metric, force=args.force, no_pairing=args.unpaired, name_filter=name_filter)
    except CompareError as e:
        cli.die(str(e))
    if args.accept_inconclusive:
        result.update(accept_inconclusive=True, exit_code=exit_code(result, True))
    if args.format == "markdown":
        if context_lines(result):
            print(context_lines(result), file=sys.stderr)
        print(markdown(result), end="")
    else:
        _print_report(result, args.quiet)
    write(result, json_path=args.out, console=False)
    return result["exit_code"]


def judge(base_files, new_files, *, alpha=0.01, threshold=None, metric=None, force=False,
          no_pairing=False, name_filter=None):
    """The verdict document of BASE_FILES against NEW_FILES (--out); CompareError: exit 2."""
    threshold = 5.0 if threshold is None else threshold
    metrics = [metric] if isinstance(metric, str) else list(metric or [])
    base, new = _side("base", base_files), _side("new", new_files)
    for side in (base, new):
        mixed = kv.mixed_context(side)
        if mixed:
            _warn(["the %s files differ in context %s: %s" % (
                side.label, key, " vs ".join(map(str, values))) for key, values in mixed.items()])
            if not force:
                raise CompareError("the %s side mixes incomparable contexts (%s); pass --force "
                                   "to compare anyway" % (side.label, ", ".join(mixed)))
    result = kv.compare_sides(base, new, alpha, threshold, name_filter, set(metrics) or None, no_pairing)
    if not result["common"]:
        raise CompareError("no benchmark names in common between %s and %s%s" % (
            " ".join(base_files), " ".join(new_files),
            " matching --filter %r" % name_filter.pattern if name_filter else ""))
    for m in metrics:
        if not any(r["metric"] == m for r in result["rows"] + [
                u for u in result["unjudged"] if u["reason"] != kv.LACKS_METRIC % m]):
            raise CompareError("--metric %s matches no judged metric of the %d benchmark(s) in "
                               "common (a metric without a direction cannot be judged)" % (m, len(result["common"])))
    critical = {k: d for k, d in result["context_diff"].items() if d["kind"] == "critical"}
    if critical:
        _warn(["context %s differs: %s vs %s" % (key, d["base"], d["new"]) for key, d in critical.items()]
              + ["these runs measured different things; differences are not regressions."])
        if not force:
            raise CompareError("incomparable contexts (%s); pass --force to compare anyway" % ", ".join(critical))
    return kv.verdict_json(result)


def write(verdict, *, json_path=None, markdown_path=None, console=True):
    """The verdict as JSON, as Markdown, and as the text report on stdout (CONSOLE)."""
    for path, body in ((json_path, lambda: kv.dumps(verdict) + "\n"), (markdown_path, lambda: markdown(verdict))):
        if path:
            try:
                os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
                with open(path, "w", encoding="utf-8") as f:
                    f.write(body())
            except OSError as e:
                cli.die("cannot write %s: %s" % (path, e.strerror or e), status=1)
    if console:
        _print_report(verdict)


def _print_report(verdict, quiet=False):
    print(report(verdict, quiet))
    if verdict.get("machine_drift"):
        print(drift_line(verdict["machine_drift"]), file=sys.stderr)


def exit_code(verdict, accept_inconclusive=False):
    """0 all judged and none regressed; 1 a regression; 3 something not judged."""
    return kv.exit_code(verdict, accept_inconclusive or verdict.get("accept_inconclusive", False))


def _side(label, paths):
    try:
        return stats.Side(label, [kr.load(p) for p in paths])
    except kr.BenchmarkJsonError as e:
        raise CompareError(str(e)) from e


def _warn(lines):
    """WARNING lines between bars of ! on stderr."""
    bar = "!" * 72
    print("\n".join([bar] + ["WARNING: " + line for line in lines] + [bar]), file=sys.stderr)


HEADER = ("Benchmark", "Metric", "Role", "n", "Base", "New", "Change [interval]", "Threshold",
          "p-value", "adj. p", "Verdict")
ALIGN = ("left",) * 3 + ("right",) * 7 + ("left",)
ROW_KEYS = ("regressions", "improvements", "unchanged", "inconclusive", "secondary")


def rows(verdict):
    """Every row, in the order of the benchmarks, each benchmark's primary rows first."""
    order = {name: i for i, name in enumerate(verdict.get("common", []))}
    every = [r for key in ROW_KEYS for r in verdict.get(key, [])]
    return sorted(every, key=lambda r: (order.get(r["name"], len(order)), not r["primary"]))


def _cells(r, markdown=False):
    return [("`%s`" % _md(r["name"])) if markdown else r["name"], r["metric"],
            "primary" if r.get("primary", True) else "secondary",
            ("%d pairs" % r["n_base"] if r.get("samples") == "pair" else "%d:%d%s" % (
                r["n_base"], r["n_new"], "" if markdown else "p" if r.get("samples") == "process" else "r")),
            *(_value(r, side, not markdown) for side in ("base", "new")),
            kv.change_text(r), threshold_text(r), kv.p_text(r["p_value"]),
            kv.p_text(r.get("p_adjusted")), _verdict_text(r, markdown)]


def _value(r, side, spread):
    v = text.number(r[side + "_median"], r["unit"], digits=4, missing="-")
    cv = r.get(side + "_cv_pct")
    return v + (" ±%.1f%%" % cv if spread and cv is not None else "")


def threshold_text(r):
    """The threshold a row was judged against (its own for latency and max_rate)."""
    up = r.get("threshold_pct")
    return "-" if up is None else kv.fmt_limits(r.get("threshold_down_pct", up), up)


def _verdict_text(r, markdown=False):
    note = "" if markdown or not r.get("note") else " (%s)" % r["note"]
    word = {"regression": "**REGRESSION**" if markdown else "REGRESSION",
            "inconclusive": "inconclusive: %s" % r.get("reason")}.get(r["verdict"], r["verdict"])
    return (_md(word) if markdown else word) + note


def _md(v):
    """A table cell: pipes escaped, one line."""
    return str(v).replace("|", "\\|").replace("\n", " ")


def context_lines(verdict):
    """What differs between the sides' contexts that does not stop the comparison."""
    diff = verdict["context_diff"]
    lines = ["comparing %s %s vs %s" % (k, d["base"], d["new"]) for k, d in diff.items() if d["kind"] == "version"]
    lines += ["note: context %s differs: %s vs %s" % (k, _short(d["base"]), _short(d["new"]))
              for k, d in diff.items() if d["kind"] == "other"]
    return "\n".join(lines)


def _short(v, limit=60):
    s = str(v)
    return s if len(s) <= limit else s[: limit - 3] + "..."


def report(verdict, quiet=False):
    """The console report: contexts, pairing, the table, what was not judged, the summary."""
    out = [context_lines(verdict)] if context_lines(verdict) else []
    if verdict.get("paired"):
        out.append("paired: process i of base and of new ran in the same round (%s); samples "
                   "are the %d rounds' differences (--unpaired to ignore)"
                   % (verdict.get("pairing"), verdict["processes"]["base"]))
    elif verdict.get("pairing_unused"):
        out.append("not paired: %d paired rounds are fewer than the %d a paired verdict needs; "
                   "the sides are compared unpaired" % (
                       verdict["processes"]["base"], stats.min_pairs(verdict["alpha"])))
    shown = [r for r in rows(verdict) if not quiet or r["verdict"] != "unchanged"]
    if shown:
        out.append(text.table(HEADER, [_cells(r) for r in shown], align=ALIGN))
    out += (["ERROR on %s side: %s: %s" % (e["side"], e["name"], e["message"]) for e in verdict["errored"]]
            + ["NOT JUDGED: %s: %s" % (u["name"], u["reason"]) for u in verdict["unjudged"]]
            + ["only in base: %s" % name for name in verdict["only_in_base"]]
            + ["only in new:  %s" % name for name in verdict["only_in_new"]]
            + secondary_lines(verdict) + spread_lines(verdict))
    out.append(summary_line(verdict))
    return "\n".join(out)


def markdown(verdict, title="kbench"):
    """The verdict as GitHub Markdown (a pull-request comment), unchanged rows folded away."""
    code = exit_code(verdict)
    head = {0: "no regression", 1: "REGRESSION", 2: "bad input", 3: "not everything could be judged"}[code]
    out = ["### %s: %s" % (title, head), ""]
    diff = verdict["context_diff"]
    out += ["Comparing `%s` %s → %s  " % (key, _md(diff[key]["base"]), _md(diff[key]["new"]))
            for key in facts.context_keys("version") if key in diff]
    out += [summary_line(verdict), ""]
    if verdict.get("machine_drift"):
        out += ["> " + _md(drift_line(verdict["machine_drift"])), ""]
    order = {"regression": 0, "improvement": 1, "inconclusive": 2, "unchanged": 3}
    every = sorted(rows(verdict), key=lambda r: order[r["verdict"]])

    def shown(r):  # primary rows that are not unchanged, secondary rows that moved
        return r["verdict"] in (("regression", "improvement", "inconclusive")
                                if r.get("primary", True) else ("regression", "improvement"))
    headers = [h.replace("p-value", "p") for h in HEADER]
    judged = [_cells(r, True) for r in every if shown(r)]
    same = [_cells(r, True) for r in every if not shown(r)]
    if judged:
        out += [text.table(headers, judged, markdown=True, align=ALIGN), ""]
    if same:
        out += ["<details><summary>%d unchanged or secondary</summary>" % len(same), "",
                text.table(headers, same, markdown=True, align=ALIGN), "", "</details>", ""]
    out += ["- ERROR on %s side: `%s`: %s" % (e["side"], _md(e["name"]), _md(e["message"])) for e in verdict["errored"]]
    out += ["- NOT JUDGED: `%s` %s: %s" % (_md(u["name"]), u["metric"], _md(u["reason"]))
            for u in verdict.get("unjudged", [])]
    out += ["- only in %s: `%s`" % (side, _md(name)) for side in ("base", "new") for name in verdict["only_in_" + side]]
    return "\n".join(out).rstrip() + "\n"


def drift_line(drift):
    return ("WARNING: %d of %d benchmarks moved the same way (median %+.1f %%, %s): the "
            "machine's speed may have changed between these runs, which were not interleaved. "
            "Rerun them as interleaved rounds (scripts/bench-commits BASE NEW) before trusting "
            "a verdict." % (drift["same_way"], drift["rows"], drift["median_pct"], drift["direction"]))


def spread_lines(verdict):
    """How the samples were formed, and the spread within and between processes."""
    every = [r for r in rows(verdict) if r["verdict"] and r.get("samples")]
    kinds = {r["samples"] for r in every}
    lines = []
    p = verdict["processes"]
    if "process" in kinds:
        lines.append("samples: one per process (median of its repetitions): %d base, "
                     "%d new processes" % (p["base"], p["new"]))
    if "pair" in kinds:
        lines.append("samples: %d rounds, each a base and a new process back to back; spread "
                     "of the rounds' differences (median over rows): %s" % (
                         p["base"], _median_cv(r.get("pair_cv_pct") for r in every)))
    if "repetition" in kinds:
        lines.append("samples: repetitions of %s (drift inside a process is not sampled: use "
                     "scripts/bench --processes N)" % (
                         "one process" if min(p.values()) == 1 else "the processes"))
    for side in ("base", "new"):
        between = [r.get(side + "_cv_pct") for r in every if r["samples"] == "process"]
        within = [r.get(side + "_within_cv_pct") for r in every]
        if any(v is not None for v in between + within):
            lines.append("spread (%s, median over rows): within a process %s, between "
                         "processes %s" % (side, _median_cv(within), _median_cv(between)))
    return lines


def _median_cv(values):
    values = [v for v in values if v is not None]
    return "%.2f %% CV" % statistics.median(values) if values else "-"


def _count(c, word):
    return "%d %s%s" % (c, word, "" if c == 1 else "s")


def summary_line(verdict):
    extra = []
    if verdict["errored"]:
        extra.append("%d errored" % len({e["name"] for e in verdict["errored"]}))
    if verdict.get("unjudged"):
        extra.append("%d without a primary verdict" % len({u["name"] for u in verdict["unjudged"]}))
    if verdict.get("secondary"):
        moved = kv.secondary_moves(verdict)
        extra.append("secondary rows (not deciding): %s, %s of %d" % (
            _count(len(moved["regression"]), "regression"),
            _count(len(moved["improvement"]), "improvement"), len(verdict["secondary"])))
    if verdict["only_in_base"] or verdict["only_in_new"]:
        extra.append("%d only in base, %d only in new" % (len(verdict["only_in_base"]), len(verdict["only_in_new"])))
    own = {}
    for r in rows(verdict):
        up = r.get("threshold_pct")
        if r.get("primary") and up is not None and up != verdict["threshold_pct"]:
            own.setdefault(r["metric"], set()).add(threshold_text(r))
    own_text = "; own: " + ", ".join("%s %s" % (m, " or ".join(sorted(t))) for m, t in own.items()) if own else ""
    code = exit_code(verdict)
    return ("compare: %s, %s, %d unchanged, %d inconclusive over %d common benchmarks "
            "(alpha %g family-wise, Holm; threshold %g %%%s)%s; exit %d (%s)" % (
                _count(len(verdict["regressions"]), "regression"), _count(len(verdict["improvements"]), "improvement"),
                len(verdict["unchanged"]), len(verdict["inconclusive"]),
                len(verdict["common"]), verdict["alpha"], verdict["threshold_pct"], own_text,
                "; " + "; ".join(extra) if extra else "", code, EXIT_MEANING[code]))


def secondary_lines(verdict):
    """One line per secondary row that moved: listed under the verdict, never silent."""
    return ["SECONDARY %s (not deciding): %s %s %s, adj. p %s" % (
        word.upper(), r["name"], r["metric"], kv.change_text(r), kv.p_text(r.get("p_adjusted")))
        for word, moved in kv.secondary_moves(verdict).items() for r in moved]
