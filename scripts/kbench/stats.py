"""The samples of a comparison and the statistics on them: which values a side gives
(Side, samples, paired_samples), the location tests, the shift and its interval, and the
family's variance prior; kbench/verdict.py turns them into verdicts. docs/comparing.md says
why each is as it is.

Samples: with two or more kbench processes on either side, one value per process (the
median of its repetitions: a process's repetitions share its drift); repetitions only when
both sides have a single process. Paired rounds (both files carry the same kbench_pairing,
scripts/bench-commits) give the pairs' log differences.

Test: Yuen's trimmed t on log values, Welch form, each row's variance moderated across the
family of deciding rows (Smyth 2004, limma's robust fit); exact rank tests where logs are
impossible or values do not vary. Shift: Hodges-Lehmann with its distribution-free interval.
"""

import math
import statistics

from kbench import results as kr

# Set alike on both sides by scripts/bench-commits: the sides ran in paired rounds.
PAIRING_KEY = "kbench_pairing"


def min_two_sided_p(n1, n2):
    """Smallest p-value the two-sided rank test can produce with n1 and n2 samples."""
    return min(1.0, 2.0 / math.comb(n1 + n2, n1))


def min_signed_rank_p(n):
    """Smallest two-sided p of the signed-rank test with n nonzero differences."""
    return min(1.0, 2.0 / 2 ** n) if n > 0 else 1.0


def _fewest(smallest_p, alpha):
    n = 1
    while smallest_p(n) >= alpha:
        n += 1
    return n


def min_samples(alpha):
    """The fewest samples per side (equal sides) with which p < alpha is possible."""
    return _fewest(lambda n: min_two_sided_p(n, n), alpha)


def min_pairs(alpha):
    """The fewest pairs with which the signed-rank test can reach p < alpha."""
    return _fewest(min_signed_rank_p, alpha)


def _doubled_ranks(values):
    """Mid-ranks doubled: integers, so that rank sums index an array."""
    from scipy.stats import rankdata
    return [int(round(2 * r)) for r in rankdata(values)]


def _two_sided(dist, observed):
    return min(1.0, 2.0 * min(float(dist[:observed + 1].sum()), float(dist[observed:].sum())))


def permutation_p(base, new):
    """Two-sided p of the exact rank-sum permutation test, ties included (scipy's, ~2000 times faster)."""
    import numpy as np  # imported late: plotting-free scripts load this module too
    pooled = list(base) + list(new)
    if all(v == pooled[0] for v in pooled):
        return 1.0
    ranks = _doubled_ranks(pooled)
    m, total = len(new), sum(ranks)
    # ways[k, s]: number of k-subsets of the ranks seen so far whose sum is s.
    ways = np.zeros((m + 1, total + 1))
    ways[0, 0] = 1.0
    for i, r in enumerate(ranks):
        for k in range(min(i + 1, m), 0, -1):
            ways[k, r:] += ways[k - 1, :total + 1 - r]
    return _two_sided(ways[m] / math.comb(len(pooled), m), sum(ranks[len(base):]))


def signed_rank_p(diffs):
    """Two-sided p of the exact signed-rank test, ties by mid-ranks, zeros signless (Pratt)."""
    import numpy as np
    if not diffs or all(d == 0 for d in diffs):
        return 1.0
    ranks = _doubled_ranks([abs(d) for d in diffs])
    signed = [(r, d > 0) for r, d in zip(ranks, diffs) if d != 0]
    total = sum(r for r, _ in signed)
    ways = np.zeros(total + 1)
    ways[0] = 1.0
    for r, _ in signed:
        ways[r:] = ways[r:] + ways[:total + 1 - r].copy()
    return _two_sided(ways / ways.sum(), sum(r for r, pos in signed if pos))


def u_null_counts(m, n):
    """Counts of each U = 0..m*n among the C(m+n, m) arrangements of untied samples."""
    size = m * n + 1
    c = [1] + [0] * (size - 1)
    for i in range(1, m + 1):
        for u in range(size - 1, n + i - 1, -1):
            c[u] -= c[u - (n + i)]
        for u in range(i, size):
            c[u] += c[u - i]
    return c


def _interval_rank(counts, total, alpha):
    """The largest k whose lower tail counts[:k] holds at most alpha of total (None: 0)."""
    k, below = 0, 0
    while k < len(counts) and (below + counts[k]) / total <= alpha:
        below += counts[k]
        k += 1
    return k if k >= 1 else None


def hl_interval_rank(m, n, alpha):
    """k of the interval [D_(k), D_(mn+1-k)] of level 1 - 2 alpha (None when even k = 1 is not)."""
    return _interval_rank(u_null_counts(m, n), math.comb(m + n, m), alpha)


def walsh_interval_rank(n, alpha):
    """k of the interval [W_(k), W_(N+1-k)] of the Walsh averages of level 1 - 2 alpha, or None."""
    size = n * (n + 1) // 2 + 1
    counts = [1] + [0] * (size - 1)  # counts of T+ over the 2^n sign vectors, ranks 1..n
    for r in range(1, n + 1):
        for t in range(size - 1, r - 1, -1):
            counts[t] += counts[t - r]
    return _interval_rank(counts, 2 ** n, alpha)


def _hl_pct(sorted_diffs, k, positive, base_vals):
    """(estimate, low, high) in % from sorted differences and the interval rank k."""
    est = statistics.median(sorted_diffs)
    lo, hi = (sorted_diffs[k - 1], sorted_diffs[len(sorted_diffs) - k]) if k is not None else (None, None)
    if positive:
        return tuple(None if d is None else math.expm1(d) * 100.0 for d in (est, lo, hi))
    ref = abs(statistics.median(base_vals))
    return tuple(None if d is None else 0.0 if d == 0 else d / ref * 100.0 if ref else math.copysign(math.inf, d)
                 for d in (est, lo, hi))


def shift_estimate(base, new, alpha):
    """(estimate, low, high, scale) of the Hodges-Lehmann shift in %: scale "log" (a ratio) or "abs"."""
    positive = all(v > 0 for v in base) and all(v > 0 for v in new)
    f = math.log if positive else (lambda v: v)
    diffs = sorted(f(y) - f(x) for x in base for y in new)
    k = hl_interval_rank(len(base), len(new), alpha)
    return _hl_pct(diffs, k, positive, base) + ("log" if positive else "abs",)


def paired_shift(pairs, alpha):
    """(estimate, low, high, diffs): the Hodges-Lehmann shift in % over pairs (base, new)."""
    positive = all(a > 0 and b > 0 for a, b in pairs)
    f = math.log if positive else (lambda v: v)
    d = [f(b) - f(a) for a, b in pairs]
    walsh = sorted((d[i] + d[j]) / 2 for i in range(len(d)) for j in range(i, len(d)))
    k = walsh_interval_rank(len(d), alpha)
    return _hl_pct(walsh, k, positive, [a for a, _ in pairs]) + (d,)


def cv_pct(vals):
    """Coefficient of variation in % (None with fewer than two values)."""
    if len(vals) < 2:
        return None
    mean = statistics.fmean(vals)
    if mean == 0:
        return 0.0 if max(vals) == min(vals) else None
    return statistics.stdev(vals) / abs(mean) * 100.0


def spread_pct(vals):
    med = statistics.median(vals)
    if len(vals) < 2:
        return 0.0
    if med == 0:
        return 0.0 if max(vals) == min(vals) else math.inf
    return (max(vals) - min(vals)) / abs(med) * 100.0

# Share trimmed from each end (Yuen): not the textbook 20 %, which at n = 10 costs power.
TRIM = 0.10
# Fewest tested rows from which a variance prior is fitted; below it each row stands alone.
MIN_MODERATED_ROWS = 5


def trimmed_parts(values, trim=TRIM):
    """(trimmed mean, winsorized variance, kept values) along the last axis, as scipy trims."""
    import numpy as np
    a = np.sort(np.asarray(values, dtype=float), axis=-1)
    n = a.shape[-1]
    g = int(trim * n)
    kept = a[..., g:n - g]
    w = np.concatenate([np.repeat(kept[..., :1], g, axis=-1), kept, np.repeat(kept[..., -1:], g, axis=-1)], axis=-1)
    tm, wv = kept.mean(axis=-1), w.var(axis=-1, ddof=1)
    if a.ndim == 1:
        return float(tm), float(wv), n - 2 * g
    return tm, wv, n - 2 * g


def yuen_parts(base, new):
    """(diff, s2, d, scale) of Yuen's trimmed t in its Welch form (the pooled form is
    anti-conservative with unequal counts and noise): t = diff / sqrt(s2 * scale) on d
    degrees of freedom. Samples along the last axis (arrays of rows allowed)."""
    import numpy as np
    tb, wb, hb = trimmed_parts(base)
    tn, wn, hn = trimmed_parts(new)
    nb, nn = np.shape(base)[-1], np.shape(new)[-1]
    if hb < 2 or hn < 2:
        raise ValueError("Yuen's test needs two kept values a side")
    vb = (nb - 1) * np.asarray(wb) / (hb * (hb - 1))
    vn = (nn - 1) * np.asarray(wn) / (hn * (hn - 1))
    se2 = vb + vn
    with np.errstate(invalid="ignore", divide="ignore"):
        d = se2 ** 2 / (vb ** 2 / (hb - 1) + vn ** 2 / (hn - 1))
    scale = 1.0 / hb + 1.0 / hn
    return np.asarray(tn) - np.asarray(tb), se2 / scale, d, scale


def location_stat(base, new=None):
    """{"diff", "s2", "d", "scale"} of yuen_parts, or of one sample's trimmed t; None: no variance."""
    if new is None:
        tm, wv, h = trimmed_parts(base)
        if h < 2 or wv <= 0:
            return None
        return {"diff": tm, "s2": (len(base) - 1) * wv / (h - 1), "d": h - 1, "scale": 1.0 / h}
    if min(len(v) - 2 * int(TRIM * len(v)) for v in (base, new)) < 2:
        return None
    diff, s2, d, scale = yuen_parts(base, new)
    if not s2 > 0:
        return None
    return {"diff": float(diff), "s2": float(s2), "d": float(d), "scale": scale}


def trigamma_inverse(x):
    """y with trigamma(y) = x (elementwise), by Newton's method as limma's trigammaInverse."""
    import numpy as np
    from scipy.special import polygamma
    x = np.asarray(x, dtype=float)
    y = 0.5 + 1.0 / x
    for _ in range(50):
        tri = polygamma(1, y)
        dif = tri * (1.0 - tri / x) / polygamma(2, y)
        y = y + dif
        if np.all(-dif / y < 1e-8):
            break
    y = np.where(x > 1e7, 1.0 / np.sqrt(x), y)
    return np.where(x < 1e-6, 1.0 / x, y)


# An overestimated prior d0 makes the tests of rows noisier than the prior anti-conservative.
PRIOR_DF_COVERAGE = 0.75


def squeeze_variances(s2, d, coverage=None):
    """(d0, s0^2): the scaled inverse chi-square prior of variances s2 on d degrees of
    freedom, by the moments of log s2 (limma's fitFDist; d0 inf when they spread no more
    than sampling would). coverage: d0 is the lower end of a one-sided interval of that
    coverage. Families may lie along leading axes. (limma's Python port needs a newer
    scipy than Debian ships.)"""
    import numpy as np
    from scipy.special import digamma, polygamma
    from scipy.stats import chi2
    s2 = np.asarray(s2, dtype=float)
    d = np.broadcast_to(np.asarray(d, dtype=float), s2.shape)
    g = s2.shape[-1]
    x = np.maximum(s2, 0.0)
    x = np.maximum(x, 1e-5 * np.median(x, axis=-1, keepdims=True))
    e = np.log(x) - digamma(d / 2) + np.log(d / 2)
    e_mean = e.mean(axis=-1)
    e_var = e.var(axis=-1, ddof=1)
    if coverage is not None:
        e_var = e_var * (g - 1) / chi2.ppf(1.0 - coverage, g - 1)
    e_var = e_var - polygamma(1, d / 2).mean(axis=-1)
    sure = e_var <= 0  # no spread beyond sampling: an infinitely sure prior
    y = trigamma_inverse(np.where(sure, 1.0, e_var))
    d0 = np.where(sure, np.inf, 2 * y)
    s0sq = np.where(sure, x.mean(axis=-1), np.exp(e_mean + digamma(y) - np.log(y)))
    if s2.ndim == 1:
        return float(d0), float(s0sq)
    return d0, s0sq


def family_prior(s2, d):
    """(d0 per row, s0^2, total df) of rows with variances s2 on d df (last axis): the prior
    at PRIOR_DF_COVERAGE, each row's d0 scaled by the chance it belongs to the prior (its
    tail probability over its rank's, as limma's robust fit; an outlier's d0 goes to 0)."""
    import numpy as np
    from scipy.stats import chi2, rankdata
    from scipy.stats import f as f_dist
    s2 = np.asarray(s2, dtype=float)
    d = np.broadcast_to(np.asarray(d, dtype=float), s2.shape)
    g = s2.shape[-1]
    d0, s0sq = squeeze_variances(s2, d, coverage=PRIOR_DF_COVERAGE)
    d0 = np.asarray(d0, dtype=float)[..., None] * np.ones_like(s2)
    s0sq = np.asarray(s0sq, dtype=float)[..., None]
    total = d.sum(axis=-1, keepdims=True)
    ratio = s2 / s0sq
    sure = np.isinf(d0)
    tail = np.where(sure, chi2.sf(ratio * d, d), f_dist.sf(ratio, d, np.where(sure, 1.0, d0)))
    empirical = (g - rankdata(ratio, axis=-1) + 0.5) / g
    belongs = np.minimum(1.0, tail / empirical)
    row_d0 = np.where(belongs < 1.0, belongs * np.where(sure, total, d0), d0)
    # Monotone: a row less extreme than another never gets fewer prior df.
    order = np.argsort(tail, axis=-1, kind="stable")
    ordered = np.maximum.accumulate(np.take_along_axis(row_d0, order, axis=-1), axis=-1)
    np.put_along_axis(row_d0, order, ordered, axis=-1)
    return row_d0, s0sq[..., 0], total[..., 0]


def moderated_p(diff, s2, d, scale, d0=0.0, s0sq=0.0, df_cap=None):
    """(two-sided p, df) of t, its variance moderated by the prior (d0, s0^2), df at most df_cap."""
    import numpy as np
    from scipy.stats import t as student_t
    d0 = np.asarray(d0, dtype=float)
    cap = np.inf if df_cap is None else np.asarray(df_cap, dtype=float)
    sure = np.isinf(d0)
    w0 = np.where(sure, 0.0, d0)
    s2m = np.where(sure, s0sq, (w0 * s0sq + d * s2) / (w0 + d))
    df = np.where(sure, cap, np.minimum(w0 + d, cap))
    tval = diff / np.sqrt(s2m * scale)
    p = np.minimum(1.0, 2.0 * student_t.sf(np.abs(tval), df))
    if np.ndim(p) == 0:
        return float(p), float(df)
    return p, df


def location_p(stat, d0=0.0, s0sq=0.0, df_cap=None):
    """Two-sided p (and df) of a location_stat, moderated by the prior (d0, s0^2)."""
    return moderated_p(stat["diff"], stat["s2"], stat["d"], stat["scale"], d0, s0sq, df_cap)


def log_values(vals):
    return [math.log(v) for v in vals] if all(v > 0 for v in vals) else None

class Side:
    """The processes of one or more files. groups: name -> {"processes": [[metrics of each
    repetition], ...], "errors": [...], "process_ids": [...]}"""

    def __init__(self, label, datas):
        self.label = label
        self.context = dict(datas[0].get("context", {})) if datas else {}
        self.contexts = [d.get("context", {}) for d in datas]
        self.n_processes, self.groups = 0, {}
        pairings = {d.get("context", {}).get(PAIRING_KEY) for d in datas}
        self.pairing = pairings.pop() if len(pairings) == 1 and len(datas) == 1 else None
        for data in datas:
            for _, entries in kr.processes(data):
                self.n_processes += 1
                per_proc = {}
                for b in entries:
                    if not kr.is_iteration(b):
                        continue
                    g = self.groups.setdefault(b["name"], _empty_group())
                    if b.get("error_occurred"):
                        g["errors"].append(str(b.get("error_message", "error")))
                        continue
                    metrics = kr.entry_metrics(b)
                    for key in kr.invalid_metrics(b):
                        invalid = g.setdefault("invalid", {})
                        invalid[key] = invalid.get(key, 0) + 1
                        metrics.pop(key, None)
                    per_proc.setdefault(b["name"], []).append(metrics)
                for name, runs in per_proc.items():
                    self.groups[name]["processes"].append(runs)
                    self.groups[name]["process_ids"].append(self.n_processes - 1)
        # Files written with --benchmark_report_aggregates_only hold no repetitions.
        for data in datas:
            for b in data["benchmarks"]:
                if not kr.is_iteration(b):
                    self.groups.setdefault(b.get("run_name") or b["name"], _empty_group())

    def names(self):
        return list(self.groups)


def _empty_group():
    return {"processes": [], "errors": [], "process_ids": []}


def samples(base_group, new_group, metric):
    """(base values, new values, kind, within-process spreads) for one metric: kind
    "process" (process medians) when either side has several processes, else "repetition";
    a deterministic metric of one process against several pools the repetitions."""
    def per_process(g):
        return [[r[metric] for r in runs if metric in r] for runs in g["processes"]]
    bp, np_ = ([v for v in per_process(g) if v] for g in (base_group, new_group))
    within = ([cv_pct(v) for v in bp if len(v) > 1], [cv_pct(v) for v in np_ if len(v) > 1])
    several = len(bp) >= 2 or len(np_) >= 2
    if (len(bp) >= 2 and len(np_) >= 2) or (several and metric not in kr.DETERMINISTIC_METRICS):
        return ([statistics.median(v) for v in bp], [statistics.median(v) for v in np_], "process", within)
    return [x for v in bp for x in v], [x for v in np_ for x in v], "repetition", within


def paired_samples(base_group, new_group, metric):
    """[(base, new)]: the medians of process i on each side, where both have the metric."""
    def by_id(g):
        vals = {pid: [r[metric] for r in runs if metric in r]
                for pid, runs in zip(g.get("process_ids", []), g["processes"])}
        return {pid: statistics.median(v) for pid, v in vals.items() if v}
    b, n = by_id(base_group), by_id(new_group)
    return [(b[i], n[i]) for i in sorted(b) if i in n]
