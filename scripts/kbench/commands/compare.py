"""Compare kbench (Google Benchmark JSON) results with statistics and exit-coded verdicts
(exit status: see EPILOG)."""

import argparse
import os
import sys

from kbench import compare as kc
from kbench import results as kr
from kbench.cli import ArgumentParser, check_out_file, die, dry_run_exit

EPILOG = """\
Sides: BASE and NEW are each a JSON file or a scripts/bench result folder (its
kbench.json); --base F... --new F... take several files per side. A file merged
from several kbench processes (scripts/bench --processes N, scripts/bench-commits)
keeps each process apart. With >= 2 processes on both sides, the sample is one
value per process (the median of its repetitions); otherwise the repetitions.

Primary metric: one per row (two on open-loop rows), by family, decides the
verdict and the exit code: time (cpu_time, or real_time for /real_time rows)
for in-process rows; items_per_second for windowed closed-loop rows; max_rate
for maximum-rate searches; delivered_rate, p50_us and p99_us for open-loop rows
(rate:N); instructions in instruction mode. Every other metric with a
direction is secondary: reported with its interval, never deciding, unless
named with --metric (then the named metrics decide). See docs/comparing.md.

Verdicts per benchmark and metric:
  regression/improvement  Holm-adjusted p < alpha and Hodges-Lehmann shift >= threshold
  unchanged               the (1 - 2 alpha) interval of the shift lies inside
                          +-threshold (an equivalence test, not merely p >= alpha)
  inconclusive            everything else (too few samples, a large shift that is
                          not significant, an interval straddling the threshold)
Thresholds: --threshold for every metric but two kinds. Latency (p*_us, avg_us,
max_us, delivery_p*_us) has a threshold of its own, its `equivalence_pct` in
kbench --describe=json, which the spread of identical runs sets: the larger of
it and --threshold, as a factor either way (+T % up, -T/(1+T) down: 100 % is
twice or half). A latency change smaller than it is never a regression.
max_rate uses the search grid's step where that is smaller than --threshold.
The table's Threshold column shows the one each row was judged against.
Family-wise: the p-values of the primary rows are adjusted together (Holm), so
alpha bounds the chance of any false regression over the whole comparison.
Test: Yuen's trimmed t on log values, each row's variance moderated across the
family (empirical Bayes); exact rank tests where logs are impossible or values
do not vary. A verdict needs >= 5 samples per side at alpha 0.01 (8 pairs). The
callgrind metric `instructions` is deterministic and decided by the threshold alone.

Contexts: a different target, build_type, host_name, cpu_model or num_cpus
makes the numbers incomparable; compare refuses (exit 2) unless --force.
Differing versions (git_sha, librdkafka_version, broker_version, codecs) are
what you are comparing and are only shown.

Exit: 0 every benchmark in common got a verdict on its primary metric(s), none
regressed; 1 regression(s); 2 bad input or options (a --filter or --metric that
matches nothing); 3 no regression, but a benchmark errored, is missing on one
side, lacks its primary metric on a side, or a verdict is inconclusive
(--accept-inconclusive waives only the last).
"""


def resolve(path):
    """A result folder stands for its kbench.json."""
    if os.path.isdir(path):
        f = os.path.join(path, "kbench.json")
        if not os.path.isfile(f):
            die("%s is a folder without kbench.json (not a scripts/bench result folder)" % path)
        return f
    return path


def load_side(label, paths):
    datas = []
    for p in paths:
        try:
            datas.append(kr.load(resolve(p)))
        except kr.BenchmarkJsonError as e:
            die(str(e))
    return kc.Side(label, datas)


def main():
    ap = ArgumentParser(prog="compare", description="Statistical A/B comparison of kbench results.",
                        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
                        usage="compare BASE NEW [options]\n       compare --base F [F ...] "
                              "--new F [F ...] [options]")
    ap.add_argument("sides", nargs="*", metavar="BASE NEW", help=argparse.SUPPRESS)
    ap.add_argument("--base", nargs="+", metavar="F", help="base files or folders")
    ap.add_argument("--new", nargs="+", metavar="F", help="new files or folders")
    ap.add_argument("--alpha", type=float, default=0.01,
                    help="significance level (default 0.01)")
    ap.add_argument("--threshold", type=float, default=5.0,
                    help="smallest shift in %% that counts (default 5); latency metrics use "
                         "their own where it is larger (see below)")
    ap.add_argument("--out", metavar="VERDICT.json", help="write the verdict as JSON")
    ap.add_argument("--filter", metavar="REGEX", help="only benchmarks whose name matches")
    ap.add_argument("--metric", action="append", metavar="NAME",
                    help="only this metric (repeatable), e.g. --metric instructions")
    ap.add_argument("--force", action="store_true",
                    help="compare even when target/build/machine differ")
    ap.add_argument("--accept-inconclusive", action="store_true",
                    help="exit 0 (not 3) when the only unjudged rows are inconclusive")
    ap.add_argument("--unpaired", action="store_true",
                    help="ignore the pairing of interleaved rounds (scripts/bench-commits) and "
                         "compare the sides as independent samples")
    ap.add_argument("--quiet", action="store_true",
                    help="print only rows that are not 'unchanged', and the summary")
    ap.add_argument("--format", choices=("text", "markdown"), default="text",
                    help="markdown: the verdict as a Markdown table (a pull-request comment) "
                         "on stdout, instead of the text table")
    args = ap.parse_args()

    if args.sides and (args.base or args.new):
        die("give BASE NEW or --base/--new, not both")
    if args.sides:
        if len(args.sides) != 2:
            die("expected BASE and NEW, got %d argument(s)" % len(args.sides))
        base_paths, new_paths = [args.sides[0]], [args.sides[1]]
    else:
        if not args.base or not args.new:
            die("BASE and NEW are required (or --base F... --new F...)")
        base_paths, new_paths = args.base, args.new
    if not (0.0 < args.alpha < 0.5):
        die("--alpha must be between 0 and 0.5, got %g" % args.alpha)
    if not (args.threshold >= 0.0) or args.threshold == float("inf"):
        die("--threshold must be a non-negative number of percent, got %g" % args.threshold)
    try:
        flt = kc.compile_filter(args.filter) if args.filter else None
    except ValueError as e:
        die(str(e))
    if args.out:
        check_out_file(args.out, "--out")
    dry_run_exit()

    base = load_side("base", base_paths)
    new = load_side("new", new_paths)

    for side in (base, new):
        mixed = kc.mixed_context(side)
        if mixed:
            _warn(["the %s files differ in context %s: %s" % (
                side.label, key, " vs ".join(map(str, values))) for key, values in mixed.items()])
            if not args.force:
                die("the %s side mixes incomparable contexts (%s); pass --force to compare "
                    "anyway" % (side.label, ", ".join(mixed)))

    result = kc.compare_sides(base, new, args.alpha, args.threshold, flt,
                              set(args.metric) if args.metric else None, args.unpaired)
    if not result["common"]:
        die("no benchmark names in common between %s and %s%s" % (
            " ".join(base_paths), " ".join(new_paths),
            " matching --filter %r" % args.filter if args.filter else ""))

    for m in args.metric or ():
        if not any(r["metric"] == m for r in result["rows"] + [
                u for u in result["unjudged"] if u["reason"] != kc.LACKS_METRIC % m]):
            die("--metric %s matches no judged metric of the %d benchmark(s) in common "
                "(a metric without a direction cannot be judged)" % (m, len(result["common"])))

    diff = result["context_diff"]
    critical = {k: v for k, v in diff.items() if v["kind"] == "critical"}
    # Markdown is a document for others to read: only it goes to stdout.
    out = sys.stdout if args.format == "text" else sys.stderr
    for key, d in diff.items():
        if d["kind"] == "version":
            print("comparing %s %s vs %s" % (key, d["base"], d["new"]), file=out)
    for key, d in diff.items():
        if d["kind"] == "other":
            print("note: context %s differs: %s vs %s" % (key, _short(d["base"]), _short(d["new"])),
                  file=out)
    if critical:
        _warn(["context %s differs: %s vs %s" % (key, d["base"], d["new"])
               for key, d in critical.items()]
              + ["these runs measured different things; differences are not regressions."])
        if not args.force:
            die("incomparable contexts (%s); pass --force to compare anyway"
                % ", ".join(critical))

    if args.format == "markdown":
        print(kc.format_markdown(result, args.accept_inconclusive), end="")
        _write_out(args, result)
        return kc.exit_code(result, args.accept_inconclusive)
    if result["paired"]:
        print("paired: process i of base and of new ran in the same round (%s); samples are "
              "the %d rounds' differences (--unpaired to ignore)"
              % (base.pairing, base.n_processes))
    elif result["pairing_unused"]:
        print("not paired: %d paired rounds are fewer than the %d a paired verdict needs; the "
              "sides are compared unpaired" % (base.n_processes, kc.min_pairs(args.alpha)))
    rows = result["rows"]
    if args.quiet:
        rows = [r for r in rows if r["verdict"] != "unchanged"]
    if rows:
        print(kc.format_table(rows))
    lines = (["ERROR on %s side: %s: %s" % (e["side"], e["name"], e["message"])
              for e in result["errored"]]
             + ["NOT JUDGED: %s: %s" % (u["name"], u["reason"]) for u in result["unjudged"]]
             + ["only in base: %s" % name for name in result["only_in_base"]]
             + ["only in new:  %s" % name for name in result["only_in_new"]]
             + kc.secondary_lines(result) + kc.spread_lines(result))
    if lines:
        print("\n".join(lines))
    drift = kc.machine_drift(result)
    if drift:
        print(kc.machine_drift_line(drift), file=sys.stderr)
    print(kc.summary_line(result, args.accept_inconclusive))

    _write_out(args, result)
    return kc.exit_code(result, args.accept_inconclusive)


def _write_out(args, result):
    if args.out:
        try:
            os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
            with open(args.out, "w", encoding="utf-8") as f:
                f.write(kc.dumps(kc.verdict_json(result, args.accept_inconclusive)) + "\n")
        except OSError as e:
            die("cannot write %s: %s" % (args.out, e.strerror or e))


def _warn(lines):
    """WARNING lines between bars of ! on stderr."""
    bar = "!" * 72
    print("\n".join([bar] + ["WARNING: " + line for line in lines] + [bar]), file=sys.stderr)


def _short(v, limit=60):
    s = str(v)
    return s if len(s) <= limit else s[: limit - 3] + "..."


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
