"""Statistical A/B comparison of two Google Benchmark JSON files (kbench flavour).

Decision rule, per benchmark and per metric with a direction:
  * timing-dependent metrics (times, rates, latencies, counters): a two-sided
    Mann-Whitney U test over the repetitions. A change is a regression (or an
    improvement) only when p < alpha AND the median moved by at least
    threshold % in the bad (good) direction. When either side has fewer than 3
    repetitions, or so few that no outcome could reach p < alpha (the smallest
    two-sided p of the exact test is 2 / C(n1+n2, n1)), the row is
    "inconclusive" and never a regression.
  * deterministic metrics (callgrind `instructions`): they repeat to ~0.002 %,
    so a test over repetitions adds nothing; the median change alone decides,
    against the threshold, provided the runs on each side agree to within half
    the threshold (otherwise the measurement is not deterministic after all and
    the row is inconclusive).
"""

import json
import math
import re
import statistics

import kbench_results as kr

# Context keys that make numbers incomparable: a different machine, build type
# or target (mock vs live cluster) is a different experiment, not a regression.
CRITICAL_CONTEXT = ["target", "build_type", "host_name", "cpu_model", "num_cpus"]
# Keys that are expected to differ: they are what is being compared.
VERSION_CONTEXT = ["git_sha", "git_dirty", "kbench_version", "librdkafka_version",
                   "broker_version", "zlib_version", "zstd_version", "lz4_version",
                   "snappy_version", "compiler", "cxx_flags", "kernel"]
# Keys that differ on every run and mean nothing for comparability.
IGNORED_CONTEXT = {"date", "executable", "load_avg", "kbench_merged_runs",
                   "kbench_merged_from"}

MIN_REPETITIONS = 3


def min_two_sided_p(n1, n2):
    """Smallest p-value the exact two-sided Mann-Whitney U test can produce."""
    return min(1.0, 2.0 / math.comb(n1 + n2, n1))


def context_diff(base_ctx, new_ctx):
    """{key: {"base", "new", "kind"}} for every key whose value differs."""
    diff = {}
    keys = list(base_ctx.keys()) + [k for k in new_ctx.keys() if k not in base_ctx]
    for key in keys:
        if key in IGNORED_CONTEXT:
            continue
        b = base_ctx.get(key)
        n = new_ctx.get(key)
        if b == n:
            continue
        if key in CRITICAL_CONTEXT:
            kind = "critical"
        elif key in VERSION_CONTEXT:
            kind = "version"
        else:
            kind = "other"
        diff[key] = {"base": b, "new": n, "kind": kind}
    return diff


def _change_pct(base, new):
    if base == new:
        return 0.0
    if base == 0:
        return math.copysign(math.inf, new)
    return (new - base) / abs(base) * 100.0


def compare_metric(name, metric, base_vals, new_vals, alpha, threshold):
    direction = kr.metric_direction(metric)
    row = {
        "name": name, "metric": metric,
        "direction": "higher_is_better" if direction > 0 else "lower_is_better",
        "unit": _unit(metric),
        "n_base": len(base_vals), "n_new": len(new_vals),
        "base_median": statistics.median(base_vals),
        "new_median": statistics.median(new_vals),
        "p_value": None,
    }
    change = _change_pct(row["base_median"], row["new_median"])
    row["change_pct"] = change
    bad = change * direction < 0
    big = abs(change) >= threshold

    if metric in kr.DETERMINISTIC_METRICS:
        spread = max(_spread_pct(base_vals), _spread_pct(new_vals))
        if spread >= threshold / 2.0:
            return _verdict(row, "inconclusive",
                            "runs disagree by %.3g %% on one side; not deterministic" % spread)
        if big:
            return _verdict(row, "regression" if bad else "improvement",
                            "deterministic metric moved by >= %g %%" % threshold)
        return _verdict(row, "unchanged", "below threshold")

    n1, n2 = len(base_vals), len(new_vals)
    if n1 < MIN_REPETITIONS or n2 < MIN_REPETITIONS:
        return _verdict(row, "inconclusive",
                        "need >= %d repetitions per side, have %d and %d"
                        % (MIN_REPETITIONS, n1, n2))
    if min_two_sided_p(n1, n2) >= alpha:
        return _verdict(row, "inconclusive",
                        "%d vs %d repetitions cannot reach p < %g" % (n1, n2, alpha))
    if base_vals == new_vals or len(set(base_vals + new_vals)) == 1:
        p = 1.0
    else:
        from scipy.stats import mannwhitneyu  # imported late: only needed here
        p = float(mannwhitneyu(base_vals, new_vals, alternative="two-sided").pvalue)
        if math.isnan(p):
            p = 1.0
    row["p_value"] = p
    if p < alpha and big:
        return _verdict(row, "regression" if bad else "improvement",
                        "p < %g and median moved >= %g %%" % (alpha, threshold))
    if p < alpha:
        return _verdict(row, "unchanged", "significant but below threshold")
    return _verdict(row, "unchanged", "not significant")


def _spread_pct(vals):
    med = statistics.median(vals)
    if len(vals) < 2:
        return 0.0
    if med == 0:
        return 0.0 if max(vals) == min(vals) else math.inf
    return (max(vals) - min(vals)) / abs(med) * 100.0


def _verdict(row, verdict, reason):
    row["verdict"] = verdict
    row["reason"] = reason
    return row


def _unit(metric):
    if metric in ("cpu_time", "real_time"):
        return "ns"
    return kr.UNITS.get(metric, "")


def compare(base, new, alpha=0.01, threshold=5.0, name_filter=None, metrics=None):
    """Compare two loaded JSON documents. Returns the verdict dict.

    name_filter: compiled regex or None; metrics: set of metric names to keep
    (None: the benchmark's time metric and every counter with a direction).
    """
    bg = kr.group_runs(base)
    ng = kr.group_runs(new)
    if name_filter is not None:
        bg = {k: v for k, v in bg.items() if name_filter.search(k)}
        ng = {k: v for k, v in ng.items() if name_filter.search(k)}
    common = [n for n in bg if n in ng]
    result = {
        "alpha": alpha, "threshold_pct": threshold,
        "regressions": [], "improvements": [], "unchanged": [], "inconclusive": [],
        "only_in_base": [n for n in bg if n not in ng],
        "only_in_new": [n for n in ng if n not in bg],
        "context_diff": context_diff(base.get("context", {}), new.get("context", {})),
        "rows": [],
    }
    for name in common:
        for row in _compare_benchmark(name, bg[name], ng[name], alpha, threshold, metrics):
            result["rows"].append(row)
            key = {"regression": "regressions", "improvement": "improvements",
                   "unchanged": "unchanged", "inconclusive": "inconclusive"}[row["verdict"]]
            result[key].append(row)
    result["common"] = common
    return result


def _compare_benchmark(name, b, n, alpha, threshold, metrics):
    for side, g in (("base", b), ("new", n)):
        if not g["runs"]:
            if g["errors"]:
                why = "skipped with error on %s side: %s" % (side, g["errors"][0])
            else:
                why = "no repetitions on %s side (aggregates only?)" % side
            yield {"name": name, "metric": "-", "direction": None, "unit": "",
                   "n_base": len(b["runs"]), "n_new": len(n["runs"]),
                   "base_median": None, "new_median": None, "change_pct": None,
                   "p_value": None, "verdict": "inconclusive", "reason": why}
            return
    tm = kr.time_metric(name)
    names = []
    for r in b["runs"] + n["runs"]:
        for k in r:
            if k not in names:
                names.append(k)
    # Time first, then counters in the order the benchmark reports them.
    ordered = [tm] + [k for k in names if k not in ("cpu_time", "real_time")]
    for metric in ordered:
        if metrics is not None and metric not in metrics:
            continue
        direction = kr.metric_direction(metric)
        if not direction:
            continue  # informational or unknown: shown by plot, never judged
        bv = [r[metric] for r in b["runs"] if metric in r]
        nv = [r[metric] for r in n["runs"] if metric in r]
        if not bv or not nv:
            continue
        yield compare_metric(name, metric, bv, nv, alpha, threshold)


def verdict_json(result):
    """The --out document: rows grouped by verdict, JSON-safe (no inf/nan)."""
    def clean(row):
        r = dict(row)
        for k in ("change_pct", "base_median", "new_median", "p_value"):
            v = r.get(k)
            if isinstance(v, float) and not math.isfinite(v):
                r[k] = None
                if k == "change_pct":
                    r["change_note"] = "base median is zero"
        return r
    out = {"alpha": result["alpha"], "threshold_pct": result["threshold_pct"]}
    for key in ("regressions", "improvements", "unchanged", "inconclusive"):
        out[key] = [clean(r) for r in result[key]]
    out["only_in_base"] = result["only_in_base"]
    out["only_in_new"] = result["only_in_new"]
    out["context_diff"] = result["context_diff"]
    return out


# ---------------------------------------------------------------- formatting

def fmt_value(v, unit):
    if v is None:
        return "-"
    if unit in ("ns", "us"):
        ns = v * (1e3 if unit == "us" else 1.0)
        for scale, u in ((1e9, "s"), (1e6, "ms"), (1e3, "us")):
            if abs(ns) >= scale:
                return "%.4g %s" % (ns / scale, u)
        return "%.4g ns" % ns
    if unit in ("items/s", "B/s", "req/s", "Ir") and abs(v) >= 1e3:
        for scale, p in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
            if abs(v) >= scale:
                return "%.4g %s%s" % (v / scale, p, unit)
    if abs(v) >= 1e4:
        return ("%.0f %s" % (v, unit)).strip()  # byte counts: exact, no exponent
    return ("%.4g %s" % (v, unit)).strip()


def fmt_change(c):
    if c is None:
        return "-"
    if math.isinf(c):
        return "+inf%" if c > 0 else "-inf%"
    return "%+.2f%%" % c


def fmt_p(p):
    if p is None:
        return "-"
    return "%.4f" % p if p >= 1e-4 else "%.1e" % p


def format_table(rows):
    header = ["Benchmark", "Metric", "Base", "New", "Change", "p-value", "Verdict"]
    lines = []
    for r in rows:
        lines.append([r["name"], r["metric"], fmt_value(r["base_median"], r["unit"]),
                      fmt_value(r["new_median"], r["unit"]), fmt_change(r["change_pct"]),
                      fmt_p(r["p_value"]),
                      r["verdict"].upper() if r["verdict"] == "regression" else r["verdict"]])
    widths = [max(len(h), *(len(l[i]) for l in lines)) if lines else len(h)
              for i, h in enumerate(header)]
    right = {2, 3, 4, 5}

    def fmt(cols):
        return "  ".join(c.rjust(widths[i]) if i in right else c.ljust(widths[i])
                         for i, c in enumerate(cols)).rstrip()
    out = [fmt(header), fmt(["-" * w for w in widths])]
    out += [fmt(l) for l in lines]
    return "\n".join(out)


def summary_line(result):
    def n(key, word):
        c = len(result[key])
        return "%d %s%s" % (c, word, "" if c == 1 else "s")
    return ("compare: %s, %s, %d unchanged, %d inconclusive over %d common benchmarks "
            "(alpha %g, threshold %g %%)%s" % (
                n("regressions", "regression"), n("improvements", "improvement"),
                len(result["unchanged"]), len(result["inconclusive"]),
                len(result["common"]), result["alpha"], result["threshold_pct"],
                "; %d only in base, %d only in new" % (len(result["only_in_base"]),
                                                       len(result["only_in_new"]))
                if result["only_in_base"] or result["only_in_new"] else ""))


def compile_filter(pattern):
    try:
        return re.compile(pattern)
    except re.error as e:
        raise ValueError("invalid --filter regex %r: %s" % (pattern, e))


def dumps(obj):
    return json.dumps(obj, indent=2, allow_nan=False)
