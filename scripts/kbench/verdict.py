"""The verdict of a comparison of kbench results, per benchmark and judged metric, from the
samples and tests of kbench/stats.py, and the verdict document scripts/compare writes:
regression / improvement (Holm-adjusted p < alpha and a shift of at least T %), unchanged
(the (1 - 2 alpha) interval inside +-T %), else inconclusive; docs/comparing.md. Only the
primary metrics (or --metric) decide. Deterministic metrics (callgrind instructions) have no
test: the median change decides, provided each side's runs agree within T / 2.
"""

import json
import math
import re
import statistics

from kbench import cli, facts, stats, text
from kbench import results as kr

VERDICT_KEYS = {"regression": "regressions", "improvement": "improvements",
                "unchanged": "unchanged", "inconclusive": "inconclusive"}


def p_text(p):
    """A p-value with two significant digits ("-" when there is none)."""
    return text.number(p, digits=2, missing="-")


def change_text(row):
    """A row's shift and its interval: "+3.10% [+1.2%, +5.0%]"."""
    lo, hi = row.get("ci_low_pct"), row.get("ci_high_pct")
    interval = "" if lo is None or hi is None else " [%s, %s]" % (text.percent(lo, 1), text.percent(hi, 1))
    change = row["change_pct"]
    if change is None and row.get("change_note"):  # from a base median of zero
        change = math.copysign(math.inf, row["new_median"] - row["base_median"])
    return text.percent(change, missing="-") + interval


def _new_row(name, metric, direction, kind, base_vals, new_vals, within):
    return {
        "name": name, "metric": metric, "direction": "higher_is_better" if direction > 0 else "lower_is_better",
        "unit": unit(metric), "samples": kind, "n_base": len(base_vals), "n_new": len(new_vals),
        "base_median": statistics.median(base_vals), "new_median": statistics.median(new_vals),
        "base_cv_pct": stats.cv_pct(base_vals), "new_cv_pct": stats.cv_pct(new_vals),
        "base_within_cv_pct": _median_or_none(within[0]), "new_within_cv_pct": _median_or_none(within[1]),
        "p_value": None, "ci_low_pct": None, "ci_high_pct": None, "ci_level": None,
    }


def _set_threshold(row, up, down=None, base=None):
    """The row's threshold up and down; `base`: the --threshold a wider own one replaced."""
    row["threshold_pct"] = up
    row["threshold_down_pct"] = up if down is None else down
    if base is not None and base < up:
        row["base_threshold_pct"] = base


def fmt_limits(down, up):
    """The threshold as the reasons print it: "+-5 %", or "-20/+25 %" when the limits differ."""
    return "+-%g %%" % up if down == up else "-%.3g/+%g %%" % (down, up)


def _set_shift(row, est, lo, hi, alpha):
    row["change_pct"] = est
    if lo is not None:
        row["ci_low_pct"], row["ci_high_pct"] = lo, hi
        row["ci_level"] = 1.0 - 2.0 * alpha


def compare_metric(name, metric, base_vals, new_vals, alpha, threshold, kind="repetition",
                   within=((), ()), direction=None, threshold_down=None, base_threshold=None):
    """The row of one metric: its shift, test and verdict against `threshold` % (up and down)."""
    if direction is None:
        direction = kr.metric_direction(metric)
    row = _new_row(name, metric, direction, kind, base_vals, new_vals, within)
    _set_threshold(row, threshold, threshold_down, base_threshold)

    if metric in kr.DETERMINISTIC_METRICS:
        change = _change_pct(row["base_median"], row["new_median"])
        row["change_pct"] = change
        spread = max(stats.spread_pct(base_vals), stats.spread_pct(new_vals))
        if spread >= threshold / 2.0:
            return _verdict(row, "inconclusive", "runs disagree by %.3g %% on one side; not deterministic" % spread)
        if abs(change) >= threshold:
            return _verdict(row, "regression" if change * direction < 0 else "improvement",
                            "deterministic metric moved by >= %g %%" % threshold)
        return _verdict(row, "unchanged", "deterministic metric moved by < %g %%" % threshold)

    n1, n2 = len(base_vals), len(new_vals)
    est, lo, hi, _ = stats.shift_estimate(base_vals, new_vals, alpha)
    _set_shift(row, est, lo, hi, alpha)
    if stats.min_two_sided_p(n1, n2) >= alpha:
        return _verdict(row, "inconclusive", "%d vs %d %s samples: a verdict at p < %g needs >= %d per side%s"
                        % (n1, n2, kind, alpha, stats.min_samples(alpha),
                           "; run more kbench processes (scripts/bench --processes N)" if kind == "process" else ""))
    logs_b, logs_n = stats.log_values(base_vals), stats.log_values(new_vals)
    stat = stats.location_stat(logs_b, logs_n) if logs_b and logs_n else None
    p = _location_test(row, stat, "rank sum", lambda: stats.permutation_p(base_vals, new_vals))
    return _decide(row, p, est, lo, hi, alpha, threshold, direction)


def _location_test(row, stat, rank_name, rank_p):
    """The row's p_value and test: the trimmed t of `stat`, else the exact rank test `rank_p`."""
    if stat is not None:
        p, row["df"] = stats.location_p(stat)
        row["test"], row["_stat"] = "trimmed t", stat
    else:
        p, row["test"] = rank_p(), rank_name
    row["p_value"] = p
    return p


def _decide(row, p, est, lo, hi, alpha, threshold, direction, family=None, family_label="primary"):
    """The verdict of a row from its p-value (Holm-adjusted over `family` rows) and its shift."""
    bad = est * direction < 0
    pname = "p" if family is None else "adjusted p"
    down = row.get("threshold_down_pct", threshold)
    limits = fmt_limits(down, threshold)
    beyond = est >= threshold or est <= -down  # as far as the threshold, either way
    # With few samples one far value can make a t significant that the ranks do not support.
    ranks_agree = lo is not None and (lo > 0 or hi < 0)
    if p < alpha and beyond and ranks_agree:
        return _verdict(row, "regression" if bad else "improvement",
                        "%s < %g and shift %s" % (pname, alpha, ">= %g %%" % threshold
                                                  if down == threshold else "beyond " + limits))
    if lo is not None and -down < lo and hi < threshold:
        # Inside a wider threshold of its own but significantly beyond --threshold: not unchanged.
        base_t = row.get("base_threshold_pct")
        if base_t is not None and p < alpha and ranks_agree and abs(est) >= base_t:
            return _verdict(row, "inconclusive", "significant shift of %s, inside %s but beyond +-%g %%: moved, "
                            "not unchanged" % (text.percent(est), limits, base_t))
        return _verdict(row, "unchanged", "%g %% interval inside %s" % (100 * row["ci_level"], limits))
    if p < alpha and beyond:
        why = ("significant (%s %s), but %s" % (
            pname, p_text(p), "its distribution-free interval reaches 0" if lo is not None
            else "too few samples for a distribution-free interval"))
    elif p < alpha:
        why = "significant, but its interval reaches past %s" % limits
    elif beyond and family is not None and row["p_value"] < alpha:
        why = ("shift of %s is significant alone (p %s) but not over the %d %s rows "
               "(Holm-adjusted p >= %g)" % (text.percent(est), p_text(row["p_value"]), family, family_label, alpha))
    elif beyond:
        why = "shift of %s is not significant (%s >= %g)" % (text.percent(est), pname, alpha)
    else:
        why = "interval straddles %s" % limits
    return _verdict(row, "inconclusive", why)


def compare_metric_paired(name, metric, pairs, alpha, threshold, direction, threshold_down=None, base_threshold=None):
    """compare_metric for paired rounds (stats.paired_samples)."""
    row = _new_row(name, metric, direction, "pair", [a for a, _ in pairs], [b for _, b in pairs], ((), ()))
    _set_threshold(row, threshold, threshold_down, base_threshold)
    est, lo, hi, diffs = stats.paired_shift(pairs, alpha)
    positive = all(a > 0 and b > 0 for a, b in pairs)  # then diffs are log ratios
    _set_shift(row, est, lo, hi, alpha)
    row["pair_cv_pct"] = statistics.stdev(diffs) * 100.0 if len(diffs) > 1 and positive else None
    if stats.min_signed_rank_p(len(pairs)) >= alpha:
        return _verdict(row, "inconclusive", "%d pairs: a verdict at p < %g needs >= %d"
                        % (len(pairs), alpha, stats.min_pairs(alpha)))
    stat = stats.location_stat(diffs) if positive else None
    p = _location_test(row, stat, "signed rank", lambda: stats.signed_rank_p(diffs))
    return _decide(row, p, est, lo, hi, alpha, threshold, direction)


def _median_or_none(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def _change_pct(base, new):
    if base == new:
        return 0.0
    if base == 0:
        return math.copysign(math.inf, new)
    return (new - base) / abs(base) * 100.0


def _verdict(row, verdict, reason):
    row.update(verdict=verdict, reason=reason)
    return row


def unit(metric):
    return "ns" if metric in ("cpu_time", "real_time") else kr.UNITS.get(metric, "")


def compare_sides(base, new, alpha=0.01, threshold=5.0, name_filter=None, metrics=None, unpaired=False):
    """Compare two Sides. Returns the verdict dict (see verdict_json)."""
    bnames, nnames = ([n for n in s.names() if name_filter is None or name_filter.search(n)] for s in (base, new))
    nset, bset = set(nnames), set(bnames)
    common = [n for n in bnames if n in nset]
    # Chosen from the counts alone, never from the data, so either test keeps its level.
    can_pair = (not unpaired and base.pairing is not None and base.pairing == new.pairing
                and base.n_processes == new.n_processes)
    paired = can_pair and base.n_processes >= stats.min_pairs(alpha)
    result = {
        "alpha": alpha, "threshold_pct": threshold, "min_samples": stats.min_samples(alpha),
        "regressions": [], "improvements": [], "unchanged": [], "inconclusive": [],
        "secondary": [], "unjudged": [], "errored": [], "only_in_base": [n for n in bnames if n not in nset],
        "only_in_new": [n for n in nnames if n not in bset], "context_diff": context_diff(base.context, new.context),
        "processes": {"base": base.n_processes, "new": new.n_processes}, "paired": paired,
        "pairing_unused": can_pair and not paired, "pairing": base.pairing if can_pair else None,
        "rows": [], "common": common,
    }
    for name in common:
        bg, ng = base.groups[name], new.groups[name]
        failed = [(side, g["errors"]) for side, g in (("base", bg), ("new", ng)) if g["errors"] or not g["processes"]]
        for side, errors in failed:
            result["errored"].append({"name": name, "side": side, "repetitions": len(errors),
                                      "message": errors[0] if errors else "no repetitions (aggregates only?)"})
        if failed:
            continue
        for row, metric, _deciding, why in _compare_benchmark(name, bg, ng, alpha, threshold, metrics, paired):
            if row is None:
                result["unjudged"].append({"name": name, "metric": metric, "reason": why})
            else:
                result["rows"].append(row)
    adjust_family([r for r in result["rows"] if r["primary"]], alpha, threshold)
    # Secondary rows are a family of their own, not moderated: different quantities.
    adjust_family([r for r in result["rows"] if not r["primary"]], alpha, threshold, moderate=False, label="secondary")
    for row in result["rows"]:
        if row["primary"]:
            result[VERDICT_KEYS[row["verdict"]]].append(row)
        else:
            result["secondary"].append(row)
    return result


def machine_drift(result, share=0.8, min_rows=5):
    """{"rows", "same_way", "median_pct", "direction"} when at least `share` of at least
    `min_rows` benchmarks of unpaired runs moved the same way by a median of half the
    threshold or more (the machine's speed changed, not the code), else None."""
    if result["paired"]:
        return None
    worse, seen = [], set()
    for r in result["rows"]:
        if (r["name"] in seen or r["metric"] in kr.DETERMINISTIC_METRICS or not r.get("primary", True)):
            continue
        seen.add(r["name"])  # a benchmark's first primary metric: its time or throughput
        c = r.get("change_pct")
        if c is None or not math.isfinite(c):
            continue
        worse.append(c if r["direction"] == "lower_is_better" else -c)
    if len(worse) < min_rows:
        return None
    slower = sum(1 for w in worse if w > 0)
    same_way = max(slower, len(worse) - slower)
    median = statistics.median(worse)
    if same_way < share * len(worse) or abs(median) < result["threshold_pct"] / 2.0:
        return None
    return {"rows": len(worse), "same_way": same_way, "median_pct": median,
            "direction": "worse" if median > 0 else "better"}


def judged_metrics(name, all_runs):
    """[(metric, direction)] of `name`: time (unless the row is untimed), then counters with a direction."""
    names = list(dict.fromkeys(k for r in all_runs for k in r))
    untimed = any(c in r for r in all_runs for c in kr.UNTIMED_ROW_COUNTERS)
    ordered = (([] if untimed else [kr.time_metric(name)]) + [k for k in names if k not in ("cpu_time", "real_time")])
    directions = ((m, kr.judged_direction(m, name, all_runs)) for m in ordered)
    return [(m, d) for m, d in directions if d]


def _missing(name, metric, b, n):
    """The sides ("base", "new") on which `metric` of benchmark `name` has no value."""
    return [s for s, g in (("base", b), ("new", n)) if not any(metric in r for runs in g["processes"] for r in runs)]


# The reason of a benchmark that lacks every --metric (compare tells it from bad input).
LACKS_METRIC = "has no %s, the metric asked for (--metric): not judged"


def _compare_benchmark(name, b, n, alpha, threshold, metrics, paired=False):
    """(row or None, metric, deciding, why unjudged) for each metric of one benchmark."""
    all_runs = [r for runs in b["processes"] + n["processes"] for r in runs]
    primary = kr.primary_metrics(name, all_runs)
    plan = list(primary) + [(m, d) for m, d in judged_metrics(name, all_runs) if m not in dict(primary)]
    if metrics is not None:
        known = dict(plan)
        plan = []
        for m in sorted(metrics):
            d = known.get(m) or kr.PRIMARY_DIRECTIONS.get(m) or kr.judged_direction(m, name, all_runs)
            if d and (m in known or any(m in r for r in all_runs)):
                plan.append((m, d))
        deciding = {m for m, _ in plan}
        if not plan:
            for m in sorted(metrics):
                yield None, m, True, LACKS_METRIC % m
            return
    else:
        deciding = {m for m, _ in primary}
    behind = _fell_behind(name, b, n)
    all_b, all_n = b, n
    for metric, direction in plan:
        is_deciding = metric in deciding
        b, n = all_b, all_n
        if behind and metric in kr.OPEN_LOOP_METRICS:
            # Latency only of the windows that held their offered load (else it is queueing).
            b, n = _held_load(all_b), _held_load(all_n)
            if not b["processes"] or not n["processes"]:
                if is_deciding:
                    yield None, metric, True, behind
                continue
        invalid = [s for s, g in (("base", b), ("new", n)) if g.get("invalid", {}).get(metric)]
        if invalid:
            if is_deciding:
                yield None, metric, True, "%s has values that are not measurements (inf, nan, " \
                    "negative, or zero where only a positive value means anything) on the %s " \
                    "side: %s" % (metric, " and ".join(invalid), ", ".join(
                        "%d %s" % (g.get("invalid", {}).get(metric, 0), s)
                        for s, g in (("base", b), ("new", n))))
            continue
        missing = _missing(name, metric, b, n)
        if missing:
            if is_deciding and not (metrics is not None and len(missing) == 2):
                yield None, metric, True, "%s missing on the %s side" % (metric, " and ".join(missing))
            continue
        t, t_down = metric_threshold(metric, threshold, b, n)
        notes = (["windows short of the offered load left out: %s" % behind]
                 if behind and metric in kr.OPEN_LOOP_METRICS else [])
        pairs = (stats.paired_samples(b, n, metric) if paired and metric not in kr.DETERMINISTIC_METRICS else None)
        if pairs is not None and len(pairs) < stats.min_pairs(alpha):
            # As in compare_sides, chosen from counts, never from the metric's values.
            notes.append("%d pairs left of %d rounds, fewer than the %d a paired verdict "
                         "needs: compared unpaired" % (len(pairs), len(all_b["processes"]), stats.min_pairs(alpha)))
            pairs = None
        base_t = threshold if kr.EQUIVALENCE_PCT.get(metric) else None
        if pairs is not None:
            row = compare_metric_paired(name, metric, pairs, alpha, t, direction, t_down, base_t)
        else:
            bv, nv, kind, within = stats.samples(b, n, metric)
            row = compare_metric(name, metric, bv, nv, alpha, t, kind, within, direction, t_down, base_t)
        row["primary"] = is_deciding
        if notes:
            row["note"] = "; ".join(notes)
        yield row, metric, is_deciding, None


def _held_load(g):
    """A group without the repetitions whose window fell short of its offered load."""
    procs, ids = [], []
    for pid, runs in zip(g.get("process_ids", range(len(g["processes"]))), g["processes"]):
        kept = [r for r in runs if not r.get("rate_shortfall", 0) > 0]
        if kept:
            procs.append(kept)
            ids.append(pid)
    return dict(g, processes=procs, process_ids=ids)


def _fell_behind(name, b, n):
    """Why an open-loop row's latency cannot be judged (it fell short of its load), or None."""
    if not kr.is_open_loop(name, [r for runs in b["processes"] + n["processes"] for r in runs]):
        return None
    short = []
    for side, g in (("base", b), ("new", n)):
        count = sum(1 for runs in g["processes"] if any(r.get("rate_shortfall", 0) > 0 for r in runs))
        if count:
            short.append("%d of %d %s processes" % (count, len(g["processes"]), side))
    if not short:
        return None
    return ("fell short of its offered load (rate_shortfall) in %s: there its latency is "
            "queueing at a lower load, not latency at the load asked for" % " and ".join(short))


def metric_threshold(metric, threshold, b, n):
    """(up, down) in % a metric is judged against: `threshold`; for a metric with an
    equivalence_pct of its own (latency) the larger, as a factor (threshold_limits); for
    max_rate the search grid's step where smaller (a search moves by whole steps)."""
    own = kr.EQUIVALENCE_PCT.get(metric)
    if own:
        return threshold_limits(max(threshold, own))
    if metric != "max_rate":
        return threshold, threshold
    steps = [r["max_rate_step_pct"] for g in (b, n) for runs in g["processes"] for r in runs
             if r.get("max_rate_step_pct", 0) > 0]
    # A hair under the step, so that one whole step counts despite rounding.
    t = min(threshold, 0.999 * min(steps)) if steps else threshold
    return t, t


def threshold_limits(up):
    """(up, down) of a threshold that is a factor: +up % above the base, -up / (1 + up) % below."""
    return up, 100.0 * up / (100.0 + up)


def moderate_family(rows):
    """Re-test the rows that have a location_stat with variances moderated across them."""
    stats_rows = [r for r in rows if r.get("_stat")]
    if len(stats_rows) < stats.MIN_MODERATED_ROWS:
        return
    d0, s0sq, total = stats.family_prior([r["_stat"]["s2"] for r in stats_rows], [r["_stat"]["d"] for r in stats_rows])
    for r, row_d0 in zip(stats_rows, d0):
        row_d0 = float(row_d0)
        r["p_value"], r["df"] = stats.location_p(r["_stat"], row_d0, float(s0sq), float(total))
        r["test"] = "moderated trimmed t"
        r["prior_df"] = None if math.isinf(row_d0) else row_d0


def adjust_family(rows, alpha, threshold, method="holm", moderate=True, label="primary"):
    """Holm's adjustment of the rows' p-values (family-wise), each verdict re-decided on it."""
    tested = [r for r in rows if r.get("p_value") is not None]
    for r in rows:
        r["p_adjusted"] = None
    if not tested:
        return
    if moderate:
        moderate_family(tested)
    from statsmodels.stats.multitest import multipletests
    _, p_adj, _, _ = multipletests([r["p_value"] for r in tested], alpha=alpha, method=method)
    for r, pa in zip(tested, p_adj):
        r["p_adjusted"] = float(pa)
        direction = 1 if r["direction"] == "higher_is_better" else -1
        _decide(r, float(pa), r["change_pct"], r.get("ci_low_pct"), r.get("ci_high_pct"),
                alpha, r.get("threshold_pct", threshold), direction, family=len(tested), family_label=label)


def exit_code(result, accept_inconclusive=False):
    """0 all judged and none regressed; 1 a regression; 3 something not judged (deciding rows only)."""
    if result["regressions"]:
        return 1
    if (result["errored"] or result["only_in_base"] or result["only_in_new"]
            or result.get("unjudged") or (result["inconclusive"] and not accept_inconclusive)):
        return 3
    return 0


def context_diff(base_ctx, new_ctx):
    """{key: {"base", "new", "kind"}} for every key whose value differs."""
    diff = {}
    for key in dict.fromkeys([*base_ctx, *new_ctx]):
        kind = facts.context_comparison(key)
        b, n = base_ctx.get(key), new_ctx.get(key)
        if kind != "ignored" and b != n:
            diff[key] = {"base": b, "new": n, "kind": kind}
    return diff


def mixed_context(side):
    """Critical context keys whose values differ between the files of one side."""
    out = {}
    for key in facts.context_keys("critical"):
        seen = [ctx.get(key) for ctx in side.contexts]
        values = [v for i, v in enumerate(seen) if v not in seen[:i]]
        if len(values) > 1:
            out[key] = values
    return out


def verdict_json(result, accept_inconclusive=False):
    """The --out document: rows grouped by verdict, JSON-safe (no inf/nan)."""
    def clean(row):
        r = {k: v for k, v in row.items() if not k.startswith("_")}
        for k, v in list(r.items()):
            if isinstance(v, float) and not math.isfinite(v):
                r[k] = None
                if k == "change_pct":
                    r["change_note"] = "base median is zero"
        return r
    moved = secondary_moves(result)
    out = {"alpha": result["alpha"], "threshold_pct": result["threshold_pct"],
           "min_samples": result["min_samples"], "processes": result["processes"],
           "exit_code": exit_code(result, accept_inconclusive), "accept_inconclusive": accept_inconclusive}
    for key in ("regressions", "improvements", "unchanged", "inconclusive", "secondary"):
        out[key] = [clean(r) for r in result[key]]
    for verdict in ("regression", "improvement"):
        out["secondary_%ss" % verdict] = [clean(r) for r in moved[verdict]]
    out.update(unjudged=result["unjudged"],
               test=("trimmed t on logs, variances moderated over the family; exact rank "
                     "tests where logs are impossible or values do not vary"),
               multiplicity={"method": "holm", "family": "primary rows with a p-value",
                             "size": sum(1 for r in result["rows"] if r["primary"] and r.get("p_value") is not None)})
    for key in ("errored", "only_in_base", "only_in_new", "context_diff"):
        out[key] = result[key]
    out["machine_drift"] = machine_drift(result)
    out.update(common=result["common"], paired=result["paired"],
               pairing_unused=result["pairing_unused"], pairing=result.get("pairing"))
    return out


def secondary_moves(result):
    """{"regression": [rows], "improvement": [rows]}: the secondary rows that moved."""
    return {v: [r for r in result.get("secondary", []) if r["verdict"] == v] for v in ("regression", "improvement")}


def compile_filter(pattern):
    """--filter's regex (None without one); an invalid one is bad usage."""
    try:
        return re.compile(pattern) if pattern else None
    except re.error as e:
        cli.die("invalid --filter regex %r: %s" % (pattern, e))


def dumps(obj):
    return json.dumps(obj, indent=2, allow_nan=False)
