"""The samples of a comparison and the statistics on them: which values a side gives
(Side, samples, paired_samples), the location tests, the shift and its interval, and the
family's variance prior. kbench/verdict.py turns them into verdicts.

Samples. Each side is one or more files of one or more kbench processes (merged files tag
entries with kbench_process). When either side holds two or more processes of a benchmark,
the sample is one value per process (the median of its repetitions): repetitions of one
process share its drift (CPU placement, cache and allocator state, the broker's), which is
as large as the effects looked for. A side with a single process then gives one sample and
the row is inconclusive: process medians are never judged against one process's
repetitions (ten process medians at 5 % against ten repetitions at 0.5 %: a verdict in 59
of 200 A/A comparisons). Only when both sides have a single process are the repetitions the
samples on both sides, and the row says so.

Test: Yuen's trimmed-mean t on log values (10 % trimmed from each end), Welch form
(yuen_parts), each row's variance moderated across the family of deciding rows (empirical
Bayes, Smyth 2004: squeeze_variances, family_prior). Not the exact rank test it replaced: at
10 vs 10 its smallest p is 1.1e-5 and Holm over a hundred rows needs 1e-4, so it flags a
+15 % row at 5 % CV only when the samples barely overlap (docs/validation.md, V11); a plain
t on ten samples a side has at most 14 degrees of freedom, which in that tail costs the
power. A profile's rows share one machine, so pooling what they say about variance gives
each row the degrees of freedom of many; the trimming keeps one slow process from deciding.
What is moderated is the row's combined squared standard error on its Welch degrees of
freedom, not each side apart (which would count the prior twice). The prior is only as
strong as the family supports (family_prior): its degrees of freedom are the lower end of a
one-sided 75 % interval (five rows at 3-8 % CV had 1.4 % family-wise false alarms at alpha
1 % with the point estimate), and a row beyond what the prior predicts gets fewer prior
degrees of freedom, down to none, as in limma's robust fit. Where logs are impossible
(metrics that can be zero) or values do not vary, the exact rank tests decide
(permutation_p, signed_rank_p). A verdict still needs as many samples as the
distribution-free test would (min_samples: 5 per side at alpha 0.01; min_pairs: 8 pairs).
tests/scripts/gate_calibration.py measures the family-wise false alarms and the power.

Shift: the Hodges-Lehmann estimate of log(new) - log(base) in %, with its
distribution-free interval (k from the exact null distribution of U). Metrics that can be
zero use plain differences relative to the base median.

Paired samples. When scripts/bench-commits ran base and new in interleaved rounds (both
merged files carry the same kbench_pairing), process i of each side ran next to each other,
so a change of the machine's speed between rounds hits both alike. The sample is then the
pairs' log differences: one-sample trimmed t (moderated as above), Hodges-Lehmann shift of
the Walsh averages. It needs 8 pairs (fewer: compared unpaired); --unpaired ignores it.
"""

import math
import statistics

from kbench import results as kr

# Set alike on both sides by scripts/bench-commits (see "Paired samples" above).
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
    """Two-sided p of the exact permutation test of the rank sum, ties included.

    Same p as scipy.stats.permutation_test over the pooled mid-ranks with
    n_resamples=inf (a test checks that), but by dynamic programming over the rank sums:
    scipy takes ~2 s per row at 10 vs 10, this ~1 ms, and stays exact where scipy samples.
    """
    import numpy as np  # imported late: plotting-free scripts load this module too
    pooled = list(base) + list(new)
    if all(v == pooled[0] for v in pooled):
        return 1.0
    ranks = _doubled_ranks(pooled)
    m = len(new)
    total = sum(ranks)
    # ways[k, s]: number of k-subsets of the ranks seen so far whose sum is s.
    ways = np.zeros((m + 1, total + 1))
    ways[0, 0] = 1.0
    for i, r in enumerate(ranks):
        for k in range(min(i + 1, m), 0, -1):
            ways[k, r:] += ways[k - 1, :total + 1 - r]
    return _two_sided(ways[m] / math.comb(len(pooled), m), sum(ranks[len(base):]))


def signed_rank_p(diffs):
    """Two-sided p of the exact signed-rank test, ties by mid-ranks and zeros ranked but
    signless (Pratt), by dynamic programming over the doubled rank sums: exact at any n.
    Hand-written: scipy's wilcoxon is exact only without ties and zeros."""
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
    """Counts of each U = 0..m*n among the C(m+n, m) arrangements of untied samples.

    The Gaussian binomial coefficient prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i), expanded
    with integers. Written here because scipy keeps its exact U distribution private.
    """
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
    """k such that [D_(k), D_(mn+1-k)] covers the shift with probability >= 1 - 2 alpha.

    None when even the widest interval (k = 1) cannot reach that level.
    """
    return _interval_rank(u_null_counts(m, n), math.comb(m + n, m), alpha)


def walsh_interval_rank(n, alpha):
    """k such that [W_(k), W_(N+1-k)] of the N = n(n+1)/2 Walsh averages covers the
    center with probability >= 1 - 2 alpha (None when even k = 1 cannot)."""
    size = n * (n + 1) // 2 + 1
    counts = [1] + [0] * (size - 1)  # counts of T+ over the 2^n sign vectors, ranks 1..n
    for r in range(1, n + 1):
        for t in range(size - 1, r - 1, -1):
            counts[t] += counts[t - r]
    return _interval_rank(counts, 2 ** n, alpha)


def _hl_pct(sorted_diffs, k, positive, base_vals):
    """(estimate, low, high) in % from the sorted pairwise differences (or Walsh averages)
    and the interval rank k: log ratios when positive, else relative to the base median."""
    est = statistics.median(sorted_diffs)
    lo = hi = None
    if k is not None:
        lo, hi = sorted_diffs[k - 1], sorted_diffs[len(sorted_diffs) - k]
    if positive:
        return tuple(None if d is None else math.expm1(d) * 100.0 for d in (est, lo, hi))
    ref = abs(statistics.median(base_vals))
    return tuple(None if d is None else 0.0 if d == 0
                 else d / ref * 100.0 if ref else math.copysign(math.inf, d)
                 for d in (est, lo, hi))


def shift_estimate(base, new, alpha):
    """(estimate, low, high, scale): Hodges-Lehmann shift of new vs base in %.

    scale "log" when every value is positive (the shift is a ratio), else "abs"
    (differences relative to the base median). low/high are None when the samples are
    too few for a (1 - 2 alpha) interval.
    """
    positive = all(v > 0 for v in base) and all(v > 0 for v in new)
    f = math.log if positive else (lambda v: v)
    diffs = sorted(f(y) - f(x) for x in base for y in new)
    k = hl_interval_rank(len(base), len(new), alpha)
    return _hl_pct(diffs, k, positive, base) + ("log" if positive else "abs",)


def paired_shift(pairs, alpha):
    """(estimate, low, high, diffs) in % of new vs base over pairs (base, new): the
    Hodges-Lehmann estimate of the paired differences (log ratios when every value is
    positive, else differences relative to the base median) and its interval."""
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

# ---------------------------------------------------------------- location test

# Share trimmed from each end of a sample (Yuen): one of ten. Not the textbook twenty: at
# n = 10 that leaves 10 degrees of freedom, which costs more power than moderation gives.
TRIM = 0.10
# Fewest tested rows from which a variance prior is fitted; below it each row stands alone.
MIN_MODERATED_ROWS = 5


def trimmed_parts(values, trim=TRIM):
    """(trimmed mean, winsorized variance, h) of values, h the number of values the trimmed
    mean keeps (int(trim * n) cut from each end, as scipy's trim_mean and mstats.winsorize
    cut). values may hold many samples along its last axis (then arrays come back).
    Hand-written: the winsorized variance needs the sorted sample anyway, and scipy's
    trim_mean sums its partitioned values in another order (another last bit)."""
    import numpy as np
    a = np.sort(np.asarray(values, dtype=float), axis=-1)
    n = a.shape[-1]
    g = int(trim * n)
    kept = a[..., g:n - g]
    w = np.concatenate([np.repeat(kept[..., :1], g, axis=-1), kept,
                        np.repeat(kept[..., -1:], g, axis=-1)], axis=-1)
    tm, wv = kept.mean(axis=-1), w.var(axis=-1, ddof=1)
    if a.ndim == 1:
        return float(tm), float(wv), n - 2 * g
    return tm, wv, n - 2 * g


def yuen_parts(base, new):
    """(diff, s2, d, scale) of Yuen's two-sample trimmed t in its Welch form (Yuen 1974):
    each side's squared standard error (n - 1) s_w^2 / (h (h - 1)), t = diff / sqrt(se_b^2 +
    se_n^2) on Welch-Satterthwaite degrees of freedom d. Not the pooled (Yuen-Dixon) form:
    with unequal counts and noise it is anti-conservative (10 vs 5 samples, the smaller side
    twice as noisy: 3 % false alarms at alpha 1 %). The combined standard error is s2 *
    scale, scale = 1/h_b + 1/h_n, so that rows of different counts moderate alike.
    base, new: samples along the last axis (arrays of rows allowed)."""
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
    """The location test's parts for one row of log values: {"diff", "s2", "d", "scale"},
    t = diff / sqrt(s2 * scale) on d degrees of freedom. Two samples: yuen_parts; one
    (base = the pairs' log differences): the one-sample trimmed t. None when the
    winsorized variance is zero (the rank tests decide)."""
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
    """y with trigamma(y) = x (elementwise): Newton's method on 1/trigamma as limma's
    trigammaInverse (Smyth 2004), monotonically convergent from y = 0.5 + 1/x."""
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


# The prior's degrees of freedom are the lower end of a one-sided interval of this coverage:
# an overestimated d0 makes the tests of rows noisier than the prior anti-conservative.
PRIOR_DF_COVERAGE = 0.75


def squeeze_variances(s2, d, coverage=None):
    """(d0, s0^2): the scaled inverse chi-square prior of the rows' variances s2 (on d degrees
    of freedom each), fitted by the moments of log s2 (Smyth 2004, section 6.2; limma's
    fitFDist without a covariate, which a test checks against reference values). A row's
    moderated variance is (d0 s0^2 + d s2) / (d0 + d) on d0 + d degrees of freedom. d0 is
    inf when the variances spread no more than sampling alone would (s0^2 is their mean).

    coverage: d0 is instead the lower end of a one-sided interval of that coverage, from
    the chi-square distribution of the sample variance of the G log variances (G - 1
    degrees of freedom): with five rows the moment estimate of d0 is often far too large;
    with a hundred the bound is near it. s2 and d may hold many families along leading axes.
    Hand-written: limma's Python port (inmoose) needs a newer scipy and statsmodels than
    Debian ships, and a genomics stack besides."""
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
    """(d0 per row, s0^2, total df) of a family of rows with variances s2 on d degrees of
    freedom (rows along the last axis): squeeze_variances's prior at PRIOR_DF_COVERAGE, then,
    as limma's robust fit (Phipson et al. 2016), a row more extreme than the prior predicts is
    moderated less: its upper tail probability under the prior (s2 / s0^2 ~ F(d, d0)) over
    the empirical one of its rank, (G - rank + 0.5) / G, is the chance that it belongs to the
    prior, and its prior df are d0 (limma: the pooled df when d0 is inf) times that chance,
    made monotone in the tail probability. A 20 %-CV row among 99 at 2 % had 42 times the
    nominal rate of p < 1e-4 without this. Unlike limma, an outlier's prior df go to 0."""
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
    tail = np.where(sure, chi2.sf(ratio * d, d),
                    f_dist.sf(ratio, d, np.where(sure, 1.0, d0)))
    empirical = (g - rankdata(ratio, axis=-1) + 0.5) / g
    belongs = np.minimum(1.0, tail / empirical)
    row_d0 = np.where(belongs < 1.0, belongs * np.where(sure, total, d0), d0)
    # Monotone: a row less extreme than another never gets fewer prior df.
    order = np.argsort(tail, axis=-1, kind="stable")
    ordered = np.maximum.accumulate(np.take_along_axis(row_d0, order, axis=-1), axis=-1)
    np.put_along_axis(row_d0, order, ordered, axis=-1)
    return row_d0, s0sq[..., 0], total[..., 0]


def moderated_p(diff, s2, d, scale, d0=0.0, s0sq=0.0, df_cap=None):
    """(two-sided p, df) of t = diff / sqrt(s2~ * scale), s2~ the variance moderated by the
    prior (d0, s0^2) on d0 + d degrees of freedom, at most df_cap (the family's total: no
    row knows its variance better than all rows together); s0^2 on df_cap when d0 is inf.
    Elementwise over arrays."""
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

# ---------------------------------------------------------------- samples

class Side:
    """One side of a comparison: the processes of one or more files. groups: name ->
    {"processes": [[metrics of each repetition], ...], "errors": [...], "process_ids": [...]}"""

    def __init__(self, label, datas):
        self.label = label
        self.context = dict(datas[0].get("context", {})) if datas else {}
        self.contexts = [d.get("context", {}) for d in datas]
        self.n_processes = 0
        self.groups = {}
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
                    name = b.get("run_name") or b["name"]
                    self.groups.setdefault(name, _empty_group())

    def names(self):
        return list(self.groups)


def _empty_group():
    return {"processes": [], "errors": [], "process_ids": []}


def samples(base_group, new_group, metric):
    """(base values, new values, kind, within-process spreads) for one metric.

    kind "process": one value per process (the median of its repetitions) whenever either
    side has two or more processes (a side with one process then gives one sample: see the
    module's "Samples"); kind "repetition": every repetition, when both sides have one
    process. Deterministic metrics (instructions) repeat exactly: one process against
    several pools the repetitions.
    """
    def per_process(g):
        return [[r[metric] for r in runs if metric in r] for runs in g["processes"]]
    bp = [v for v in per_process(base_group) if v]
    np_ = [v for v in per_process(new_group) if v]
    within = ([cv_pct(v) for v in bp if len(v) > 1], [cv_pct(v) for v in np_ if len(v) > 1])
    several = len(bp) >= 2 or len(np_) >= 2
    if (len(bp) >= 2 and len(np_) >= 2) or (several and metric not in kr.DETERMINISTIC_METRICS):
        return ([statistics.median(v) for v in bp], [statistics.median(v) for v in np_],
                "process", within)
    return [x for v in bp for x in v], [x for v in np_ for x in v], "repetition", within


def paired_samples(base_group, new_group, metric):
    """[(base, new)] per round: the medians of process i on each side, for the rounds in
    which both sides have the metric."""
    def by_id(g):
        out = {}
        for pid, runs in zip(g.get("process_ids", []), g["processes"]):
            vals = [r[metric] for r in runs if metric in r]
            if vals:
                out[pid] = statistics.median(vals)
        return out
    b, n = by_id(base_group), by_id(new_group)
    return [(b[i], n[i]) for i in sorted(b) if i in n]
