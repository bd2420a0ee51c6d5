"""Statistical A/B comparison of kbench results (Google Benchmark JSON), with verdicts.

Samples. Each side is one or more files of one or more kbench processes (merged files tag
entries with kbench_process). When either side holds two or more processes of a benchmark,
the sample is one value per process (the median of its repetitions): repetitions of one
process share its drift (CPU placement, cache and allocator state, the broker's), which is
as large as the effects looked for. A side with a single process then gives one sample and
the row is inconclusive: process medians are never judged against one process's
repetitions (ten process medians at 5 % against ten repetitions at 0.5 %: a verdict in 59
of 200 A/A comparisons). Only when both sides have a single process are the repetitions the
samples on both sides, and the row says so.

Verdicts, per benchmark and judged metric, at level alpha with threshold T %:
  regression / improvement  p < alpha and the estimated shift is at least T % in the
                            bad / good direction;
  unchanged                 the (1 - 2 alpha) interval of the shift lies inside
                            (-T %, +T %) (TOST: any shift is smaller than T);
  inconclusive              everything else.
The deciding rows are each benchmark's primary metric(s) (kbench.results.PRIMARY_METRICS)
or the --metric names; the others are secondary, never deciding the exit code. The deciding
rows' p-values are adjusted together (Holm, adjust_family).

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

Deterministic metrics (callgrind `instructions`) repeat to ~0.001 %: no test, the median
change decides against T, provided the runs of each side agree within T / 2.
"""

import json
import math
import re
import statistics

from kbench import facts
from kbench import results as kr

# Context keys that make numbers incomparable (another machine, build or target).
CRITICAL_CONTEXT = ["target", "build_type", "host_name", "cpu_model", "num_cpus",
                    # instructions of the whole process, or only inside these functions
                    "kbench_instructions_of"]
# Keys expected to differ: what is being compared (plus the codecs' library versions).
VERSION_CONTEXT = ["git_sha", "git_dirty", "kbench_version", "librdkafka_version",
                   "broker_version", "compiler", "cxx_flags", "kernel"]
# Keys that differ on every run and mean nothing for comparability.
IGNORED_CONTEXT = {"date", "executable", "load_avg", "kbench_merged_runs",
                   "kbench_merged_from"}
# Set alike on both sides by scripts/bench-commits (see "Paired samples" above).
PAIRING_KEY = "kbench_pairing"

VERDICT_KEYS = {"regression": "regressions", "improvement": "improvements",
                "unchanged": "unchanged", "inconclusive": "inconclusive"}


# ---------------------------------------------------------------- statistics

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


def _spread_pct(vals):
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


def _log_values(vals):
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


# ---------------------------------------------------------------- verdicts

def _new_row(name, metric, direction, kind, base_vals, new_vals, within):
    return {
        "name": name, "metric": metric,
        "direction": "higher_is_better" if direction > 0 else "lower_is_better",
        "unit": _unit(metric), "samples": kind,
        "n_base": len(base_vals), "n_new": len(new_vals),
        "base_median": statistics.median(base_vals),
        "new_median": statistics.median(new_vals),
        "base_cv_pct": cv_pct(base_vals), "new_cv_pct": cv_pct(new_vals),
        "base_within_cv_pct": _median_or_none(within[0]),
        "new_within_cv_pct": _median_or_none(within[1]),
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
    if down == up:
        return "+-%g %%" % up
    return "-%s/+%s %%" % (_pct(down), _pct(up))


def _pct(v):
    return "%.3g" % v if abs(v) < 1000 else "%.0f" % v


def _set_shift(row, est, lo, hi, alpha):
    row["change_pct"] = est
    if lo is not None:
        row["ci_low_pct"], row["ci_high_pct"] = lo, hi
        row["ci_level"] = 1.0 - 2.0 * alpha


def compare_metric(name, metric, base_vals, new_vals, alpha, threshold, kind="repetition",
                   within=((), ()), direction=None, threshold_down=None, base_threshold=None):
    """The row of one metric: its shift, test and verdict against `threshold` % up and
    `threshold_down` % down (default: the same; see threshold_limits)."""
    if direction is None:
        direction = kr.metric_direction(metric)
    row = _new_row(name, metric, direction, kind, base_vals, new_vals, within)
    _set_threshold(row, threshold, threshold_down, base_threshold)

    if metric in kr.DETERMINISTIC_METRICS:
        change = _change_pct(row["base_median"], row["new_median"])
        row["change_pct"] = change
        spread = max(_spread_pct(base_vals), _spread_pct(new_vals))
        if spread >= threshold / 2.0:
            return _verdict(row, "inconclusive",
                            "runs disagree by %.3g %% on one side; not deterministic" % spread)
        if abs(change) >= threshold:
            return _verdict(row, "regression" if change * direction < 0 else "improvement",
                            "deterministic metric moved by >= %g %%" % threshold)
        return _verdict(row, "unchanged", "deterministic metric moved by < %g %%" % threshold)

    n1, n2 = len(base_vals), len(new_vals)
    est, lo, hi, _ = shift_estimate(base_vals, new_vals, alpha)
    _set_shift(row, est, lo, hi, alpha)
    if min_two_sided_p(n1, n2) >= alpha:
        return _verdict(row, "inconclusive",
                        "%d vs %d %s samples: a verdict at p < %g needs >= %d per side%s"
                        % (n1, n2, kind, alpha, min_samples(alpha),
                           "; run more kbench processes (scripts/bench --processes N)"
                           if kind == "process" else ""))
    logs_b, logs_n = _log_values(base_vals), _log_values(new_vals)
    stat = location_stat(logs_b, logs_n) if logs_b and logs_n else None
    p = _location_test(row, stat, "rank sum", lambda: permutation_p(base_vals, new_vals))
    return _decide(row, p, est, lo, hi, alpha, threshold, direction)


def _location_test(row, stat, rank_name, rank_p):
    """Sets the row's p_value, test (and df, _stat for the family's moderation): the trimmed
    t of `stat`, or the exact rank test `rank_p` when there is no stat."""
    if stat is not None:
        p, row["df"] = location_p(stat)
        row["test"], row["_stat"] = "trimmed t", stat
    else:
        p, row["test"] = rank_p(), rank_name
    row["p_value"] = p
    return p


def _decide(row, p, est, lo, hi, alpha, threshold, direction, family=None,
            family_label="primary"):
    """The verdict of a row from its p-value (Holm-adjusted over `family` rows when given)
    and its shift's estimate and interval."""
    bad = est * direction < 0
    pname = "p" if family is None else "adjusted p"
    down = row.get("threshold_down_pct", threshold)
    limits = fmt_limits(down, threshold)
    beyond = est >= threshold or est <= -down  # as far as the threshold, either way
    # The t decides, but only where the distribution-free interval agrees that the shift is
    # not zero: with few samples one value far from the rest can make a t significant that
    # the ranks do not support (4 of 5 values +25 %, the fifth unchanged).
    ranks_agree = lo is not None and (lo > 0 or hi < 0)
    if p < alpha and beyond and ranks_agree:
        return _verdict(row, "regression" if bad else "improvement",
                        "%s < %g and shift %s" % (pname, alpha, ">= %g %%" % threshold
                                                  if down == threshold else "beyond " + limits))
    if lo is not None and -down < lo and hi < threshold:
        # A metric judged against a wider threshold of its own (latency) whose shift is
        # significant and beyond --threshold has moved: too little to flag, but never
        # "unchanged" (a p99 eight times the base's is inside 25 x).
        base_t = row.get("base_threshold_pct")
        if base_t is not None and p < alpha and ranks_agree and abs(est) >= base_t:
            return _verdict(row, "inconclusive",
                            "significant shift of %s, inside %s but beyond +-%g %%: moved, "
                            "not unchanged" % (fmt_change(est), limits, base_t))
        return _verdict(row, "unchanged",
                        "%g %% interval inside %s" % (100 * row["ci_level"], limits))
    if p < alpha and beyond:
        why = ("significant (%s %s), but %s" % (
            pname, fmt_p(p), "its distribution-free interval reaches 0" if lo is not None
            else "too few samples for a distribution-free interval"))
    elif p < alpha:
        why = "significant, but its interval reaches past %s" % limits
    elif beyond and family is not None and row["p_value"] < alpha:
        why = ("shift of %s is significant alone (p %s) but not over the %d %s rows "
               "(Holm-adjusted p >= %g)" % (fmt_change(est), fmt_p(row["p_value"]), family,
                                            family_label, alpha))
    elif beyond:
        why = "shift of %s is not significant (%s >= %g)" % (fmt_change(est), pname, alpha)
    else:
        why = "interval straddles %s" % limits
    return _verdict(row, "inconclusive", why)


def compare_metric_paired(name, metric, pairs, alpha, threshold, direction, threshold_down=None,
                          base_threshold=None):
    """compare_metric for paired rounds (see "Paired samples")."""
    row = _new_row(name, metric, direction, "pair", [a for a, _ in pairs],
                   [b for _, b in pairs], ((), ()))
    _set_threshold(row, threshold, threshold_down, base_threshold)
    est, lo, hi, diffs = paired_shift(pairs, alpha)
    positive = all(a > 0 and b > 0 for a, b in pairs)  # then diffs are log ratios
    _set_shift(row, est, lo, hi, alpha)
    row["pair_cv_pct"] = statistics.stdev(diffs) * 100.0 if len(diffs) > 1 and positive else None
    if min_signed_rank_p(len(pairs)) >= alpha:
        return _verdict(row, "inconclusive", "%d pairs: a verdict at p < %g needs >= %d"
                        % (len(pairs), alpha, min_pairs(alpha)))
    stat = location_stat(diffs) if positive else None
    p = _location_test(row, stat, "signed rank", lambda: signed_rank_p(diffs))
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


def _unit(metric):
    return "ns" if metric in ("cpu_time", "real_time") else kr.UNITS.get(metric, "")


def compare_sides(base, new, alpha=0.01, threshold=5.0, name_filter=None, metrics=None,
                  unpaired=False):
    """Compare two Sides. Returns the verdict dict (see verdict_json)."""
    bnames, nnames = ([n for n in s.names() if name_filter is None or name_filter.search(n)]
                      for s in (base, new))
    nset, bset = set(nnames), set(bnames)
    common = [n for n in bnames if n in nset]
    # Fewer rounds than a paired verdict needs (min_pairs): the same processes unpaired. A
    # choice made from the counts alone, never from the data, so either test keeps its level.
    can_pair = (not unpaired and base.pairing is not None and base.pairing == new.pairing
                and base.n_processes == new.n_processes)
    paired = can_pair and base.n_processes >= min_pairs(alpha)
    result = {
        "alpha": alpha, "threshold_pct": threshold, "min_samples": min_samples(alpha),
        "regressions": [], "improvements": [], "unchanged": [], "inconclusive": [],
        "secondary": [], "unjudged": [], "errored": [],
        "only_in_base": [n for n in bnames if n not in nset],
        "only_in_new": [n for n in nnames if n not in bset],
        "context_diff": context_diff(base.context, new.context),
        "processes": {"base": base.n_processes, "new": new.n_processes},
        "paired": paired,
        "pairing_unused": can_pair and not paired,
        "rows": [], "common": common,
    }
    for name in common:
        bg, ng = base.groups[name], new.groups[name]
        failed = [(side, g["errors"]) for side, g in (("base", bg), ("new", ng))
                  if g["errors"] or not g["processes"]]
        for side, errors in failed:
            result["errored"].append({"name": name, "side": side, "repetitions": len(errors),
                                      "message": errors[0] if errors
                                      else "no repetitions (aggregates only?)"})
        if failed:
            continue
        for row, metric, _deciding, why in _compare_benchmark(name, bg, ng, alpha, threshold,
                                                              metrics, paired):
            if row is None:
                result["unjudged"].append({"name": name, "metric": metric, "reason": why})
            else:
                result["rows"].append(row)
    adjust_family([r for r in result["rows"] if r["primary"]], alpha, threshold)
    # Secondary rows are a family of their own (Holm, no moderation: different quantities
    # whose variances have nothing in common): one that moved is reported without deciding
    # the exit code, and an unadjusted p among dozens of secondaries does not cry wolf.
    adjust_family([r for r in result["rows"] if not r["primary"]], alpha, threshold,
                  moderate=False, label="secondary")
    for row in result["rows"]:
        if row["primary"]:
            result[VERDICT_KEYS[row["verdict"]]].append(row)
        else:
            result["secondary"].append(row)
    return result


def machine_drift(result, share=0.8, min_rows=5):
    """Did (nearly) every benchmark move the same way between two runs that were not
    interleaved? A change of the machine's speed (a neighbour's load, a throttled vCPU)
    moves every timed row alike, a code change rarely (two runs of one build half an hour
    apart on a 2-core VM differed by +12 to +28 % on every Codec and Batch row).
    Returns None, or {"rows", "same_way", "median_pct", "direction"} when at least `share`
    of the benchmarks (at least `min_rows`) moved the same way by a median of at least half
    the threshold. Paired rounds cancel such drift: never flagged."""
    if result["paired"]:
        return None
    worse = []
    seen = set()
    for r in result["rows"]:
        if (r["name"] in seen or r["metric"] in kr.DETERMINISTIC_METRICS
                or not r.get("primary", True)):
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


def machine_drift_line(drift):
    return ("WARNING: %d of %d benchmarks moved the same way (median %+.1f %%, %s): the "
            "machine's speed may have changed between these runs, which were not interleaved. "
            "Rerun them as interleaved rounds (scripts/bench-commits BASE NEW) before trusting "
            "a verdict." % (drift["same_way"], drift["rows"], drift["median_pct"],
                            drift["direction"]))


def judged_metrics(name, all_runs):
    """[(metric, direction)] that a comparison (or the history) judges for benchmark `name`
    given its repetitions' metrics: time first, then counters in the benchmark's order.
    Rows with an UNTIMED_ROW_COUNTERS counter (a fixed-length window, a maximum-rate search)
    are judged on their counters, not their time. Informational and unknown metrics, and
    latency of an unthrottled row, are left out."""
    names = list(dict.fromkeys(k for r in all_runs for k in r))
    untimed = any(c in r for r in all_runs for c in kr.UNTIMED_ROW_COUNTERS)
    ordered = (([] if untimed else [kr.time_metric(name)])
               + [k for k in names if k not in ("cpu_time", "real_time")])
    directions = ((m, kr.judged_direction(m, name, all_runs)) for m in ordered)
    return [(m, d) for m, d in directions if d]


def _missing(name, metric, b, n):
    """The sides ("base", "new") on which `metric` of benchmark `name` has no value."""
    return [s for s, g in (("base", b), ("new", n))
            if not any(metric in r for runs in g["processes"] for r in runs)]


# The reason of a benchmark that lacks every --metric (scripts/compare tells it apart from a
# --metric that no benchmark has, which is bad input).
LACKS_METRIC = "has no %s, the metric asked for (--metric): not judged"


def _compare_benchmark(name, b, n, alpha, threshold, metrics, paired=False):
    """Rows of one benchmark: (row or None, metric, deciding, why unjudged). Deciding are the
    primary metrics, or the --metric names. A deciding metric that yields no row comes back
    as (None, metric, True, reason): the benchmark counts as not judged, not dropped."""
    all_runs = [r for runs in b["processes"] + n["processes"] for r in runs]
    primary = kr.primary_metrics(name, all_runs)
    plan = list(primary) + [(m, d) for m, d in judged_metrics(name, all_runs)
                            if m not in dict(primary)]
    if metrics is not None:
        known = dict(plan)
        plan = []
        for m in sorted(metrics):
            d = known.get(m) or kr.PRIMARY_DIRECTIONS.get(m) or kr.judged_direction(m, name,
                                                                                    all_runs)
            if d and (m in known or any(m in r for r in all_runs)):
                plan.append((m, d))
        deciding = {m for m, _ in plan}
        if not plan:
            # Judging only --metric, and this benchmark has none of them: it was not judged,
            # and the summary must not say that every row was.
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
            # A window short of its offered load measured queueing at a lower load, not
            # latency at the load asked for: latency is judged on the windows that held the
            # load, or not at all (delivered_rate still judges the shortfall itself).
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
            # A secondary metric missing on a side is shown as missing, not judged; a
            # --metric that neither side has is simply not this benchmark's.
            if is_deciding and not (metrics is not None and len(missing) == 2):
                yield None, metric, True, "%s missing on the %s side" % (
                    metric, " and ".join(missing))
            continue
        t, t_down = metric_threshold(metric, threshold, b, n)
        notes = []
        if behind and metric in kr.OPEN_LOOP_METRICS:
            notes.append("windows short of the offered load left out: %s" % behind)
        pairs = (paired_samples(b, n, metric)
                 if paired and metric not in kr.DETERMINISTIC_METRICS else None)
        if pairs is not None and len(pairs) < min_pairs(alpha):
            # Rounds left out (short windows, a metric absent in some rounds) left fewer pairs
            # than a paired verdict needs: the rounds that remain, unpaired. Like the choice
            # in compare_sides, it is made from counts, never from the metric's values.
            notes.append("%d pairs left of %d rounds, fewer than the %d a paired verdict "
                         "needs: compared unpaired" % (len(pairs), len(all_b["processes"]),
                                                       min_pairs(alpha)))
            pairs = None
        base_t = threshold if kr.EQUIVALENCE_PCT.get(metric) else None
        if pairs is not None:
            row = compare_metric_paired(name, metric, pairs, alpha, t, direction, t_down, base_t)
        else:
            bv, nv, kind, within = samples(b, n, metric)
            row = compare_metric(name, metric, bv, nv, alpha, t, kind, within, direction, t_down,
                                 base_t)
        row["primary"] = is_deciding
        if notes:
            row["note"] = "; ".join(notes)
        yield row, metric, is_deciding, None


def _held_load(g):
    """A group without the repetitions whose window fell short of its offered load (and
    without processes left empty)."""
    procs, ids = [], []
    for pid, runs in zip(g.get("process_ids", range(len(g["processes"]))), g["processes"]):
        kept = [r for r in runs if not r.get("rate_shortfall", 0) > 0]
        if kept:
            procs.append(kept)
            ids.append(pid)
    return dict(g, processes=procs, process_ids=ids)


def _fell_behind(name, b, n):
    """Why an open-loop row's latency cannot be judged (None when it can): a process on
    either side fell short of the offered load (rate_shortfall), so its latency is queueing."""
    if not kr.is_open_loop(name, [r for runs in b["processes"] + n["processes"] for r in runs]):
        return None
    short = []
    for side, g in (("base", b), ("new", n)):
        count = sum(1 for runs in g["processes"] if any(r.get("rate_shortfall", 0) > 0
                                                        for r in runs))
        if count:
            short.append("%d of %d %s processes" % (count, len(g["processes"]), side))
    if not short:
        return None
    return ("fell short of its offered load (rate_shortfall) in %s: there its latency is "
            "queueing at a lower load, not latency at the load asked for" % " and ".join(short))


def metric_threshold(metric, threshold, b, n):
    """(up, down): the threshold in % a metric is judged against, above and below the base.
    `threshold` either way; for a metric with an equivalence threshold of its own (kbench
    --describe=json: equivalence_pct, the latency percentiles) the larger of the two, as a
    factor either way (threshold_limits), since its spread between identical runs keeps the
    interval of 8 paired rounds far wider than the default threshold (docs/comparing.md);
    for max_rate the search grid's step where that is smaller (a search moves by whole steps;
    a one-step move of about 4.3-5.3 % must not read "unchanged" under a 5 % threshold)."""
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
    """(up, down) of a threshold that is a factor: +up % above the base, and the same factor
    below it, -up / (1 + up) % (100 %: twice or half). A threshold beyond a few tens of %
    must be a factor: -100 % is out of reach of a ratio, so "+-200 %" could never see an
    improvement, and would call a drop to a tenth "unchanged"."""
    return up, 100.0 * up / (100.0 + up)


def moderate_family(rows):
    """Re-test the rows that have a location_stat with variances moderated across them
    (family_prior). The prior is the same for every row and needs no correction of its own."""
    stats_rows = [r for r in rows if r.get("_stat")]
    if len(stats_rows) < MIN_MODERATED_ROWS:
        return
    d0, s0sq, total = family_prior([r["_stat"]["s2"] for r in stats_rows],
                                   [r["_stat"]["d"] for r in stats_rows])
    for r, row_d0 in zip(stats_rows, d0):
        row_d0 = float(row_d0)
        r["p_value"], r["df"] = location_p(r["_stat"], row_d0, float(s0sq), float(total))
        r["test"] = "moderated trimmed t"
        r["prior_df"] = None if math.isinf(row_d0) else row_d0


def adjust_family(rows, alpha, threshold, method="holm", moderate=True, label="primary"):
    """Family-wise control over the deciding rows: Holm's step-down adjustment of their
    p-values (statsmodels' multipletests), then each verdict re-decided on the adjusted p.

    Holm, not Benjamini-Hochberg: the gate asks "did anything regress?", and any false alarm
    costs a bisection, so the error to bound is the chance of any false regression, not
    the share of false ones among those flagged. Holm bounds it under any dependence between
    rows (rows of one run share the machine's drift). The intervals ("unchanged") stay at
    the per-row level: a verdict of unchanged is not an alarm."""
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
                alpha, r.get("threshold_pct", threshold), direction, family=len(tested),
                family_label=label)


def exit_code(result, accept_inconclusive=False):
    """0 all judged and none regressed; 1 a regression; 3 something not judged.

    Only deciding (primary, or --metric) rows count; a benchmark whose deciding metric
    gave no verdict (missing on a side, errored) is never green."""
    if result["regressions"]:
        return 1
    if (result["errored"] or result["only_in_base"] or result["only_in_new"]
            or result.get("unjudged") or (result["inconclusive"] and not accept_inconclusive)):
        return 3
    return 0


def context_diff(base_ctx, new_ctx):
    """{key: {"base", "new", "kind"}} for every key whose value differs."""
    diff = {}
    keys = list(base_ctx.keys()) + [k for k in new_ctx.keys() if k not in base_ctx]
    for key in keys:
        if key in IGNORED_CONTEXT:
            continue
        b, n = base_ctx.get(key), new_ctx.get(key)
        if b != n:
            kind = ("critical" if key in CRITICAL_CONTEXT else "version"
                    if key in VERSION_CONTEXT or key in facts.codec_version_keys() else "other")
            diff[key] = {"base": b, "new": n, "kind": kind}
    return diff


def mixed_context(side):
    """Critical context keys whose values differ between the files of one side."""
    out = {}
    for key in CRITICAL_CONTEXT:
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
           "exit_code": exit_code(result, accept_inconclusive),
           "accept_inconclusive": accept_inconclusive}
    for key in ("regressions", "improvements", "unchanged", "inconclusive", "secondary"):
        out[key] = [clean(r) for r in result[key]]
    for verdict in ("regression", "improvement"):
        out["secondary_%ss" % verdict] = [clean(r) for r in moved[verdict]]
    out.update(unjudged=result["unjudged"],
               test=("trimmed t on logs, variances moderated over the family; exact rank "
                     "tests where logs are impossible or values do not vary"),
               multiplicity={"method": "holm", "family": "primary rows with a p-value",
                             "size": sum(1 for r in result["rows"]
                                         if r["primary"] and r.get("p_value") is not None)})
    for key in ("errored", "only_in_base", "only_in_new", "context_diff"):
        out[key] = result[key]
    out["machine_drift"] = machine_drift(result)
    return out


# ---------------------------------------------------------------- formatting

def fmt_value(v, unit):
    if v is None:
        return "-"
    if unit in ("ns", "us"):
        ns = v * (1e3 if unit == "us" else 1.0)
        scale, u = next((s for s in ((1e9, "s"), (1e6, "ms"), (1e3, "us")) if abs(ns) >= s[0]),
                        (1.0, "ns"))
        return "%.4g %s" % (ns / scale, u)
    if unit in ("items/s", "B/s", "req/s", "Ir") and abs(v) >= 1e3:
        for scale, p in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
            if abs(v) >= scale:
                return "%.4g %s%s" % (v / scale, p, unit)
    if abs(v) >= 1e4:
        return ("%.0f %s" % (v, unit)).strip()  # byte counts: exact, no exponent
    return ("%.4g %s" % (v, unit)).strip()


def fmt_spread(cv):
    return "" if cv is None else " ±%.1f%%" % cv


def _signed(v, fmt):
    return ("+inf" if v > 0 else "-inf") if math.isinf(v) else fmt % v


def fmt_change(c):
    return "-" if c is None else _signed(c, "%+.2f") + "%"


def fmt_interval(lo, hi):
    if lo is None or hi is None:
        return ""
    return " [%s, %s]" % (_signed(lo, "%+.1f"), _signed(hi, "%+.1f"))


def fmt_p(p):
    if p is None:
        return "-"
    return "%.4f" % p if p >= 1e-4 else "%.1e" % p


def format_table(rows):
    header = ["Benchmark", "Metric", "Role", "n", "Base", "New", "Change [interval]", "Threshold",
              "p-value", "adj. p", "Verdict"]
    lines = [[r["name"], r["metric"], _role(r),
              _n_cell(r, "p" if r.get("samples") == "process" else "r"),
              fmt_value(r["base_median"], r["unit"]) + fmt_spread(r.get("base_cv_pct")),
              fmt_value(r["new_median"], r["unit"]) + fmt_spread(r.get("new_cv_pct")),
              _change_cell(r), _threshold_cell(r), fmt_p(r["p_value"]), fmt_p(r.get("p_adjusted")),
              _verdict_cell(r)]
             for r in rows]
    widths = [max(len(h), *(len(row[i]) for row in lines)) if lines else len(h)
              for i, h in enumerate(header)]
    right = {3, 4, 5, 6, 7, 8, 9}

    def fmt(cols):
        return "  ".join(c.rjust(widths[i]) if i in right else c.ljust(widths[i])
                         for i, c in enumerate(cols)).rstrip()
    out = [fmt(header), fmt(["-" * w for w in widths])]
    out += [fmt(row) for row in lines]
    return "\n".join(out)


def _role(r):
    """primary: decides the exit code; secondary: reported only."""
    return "primary" if r.get("primary", True) else "secondary"


def _n_cell(r, suffix=""):
    if r.get("samples") == "pair":
        return "%d pairs" % r["n_base"]
    return "%d:%d%s" % (r["n_base"], r["n_new"], suffix)


def _threshold_cell(r):
    """The threshold a row was judged against (its own for latency and max_rate)."""
    up = r.get("threshold_pct")
    return "-" if up is None else fmt_limits(r.get("threshold_down_pct", up), up)


def _change_cell(r):
    return fmt_change(r["change_pct"]) + fmt_interval(r.get("ci_low_pct"), r.get("ci_high_pct"))


def format_markdown(result, accept_inconclusive=False, title="kbench"):
    """The verdict as GitHub-flavoured Markdown (a pull-request comment): the summary, then
    a table of the rows that are not unchanged, the unchanged ones folded away."""
    code = exit_code(result, accept_inconclusive)
    head = {0: "no regression", 1: "REGRESSION", 2: "bad input",
            3: "not everything could be judged"}[code]
    out = ["### %s: %s" % (title, head), ""]
    diff = result["context_diff"]
    for key in ("git_sha", "librdkafka_version", "broker_version"):
        if key in diff:
            out.append("Comparing `%s` %s → %s  " % (key, _md(diff[key]["base"]),
                                                     _md(diff[key]["new"])))
    out += [summary_line(result, accept_inconclusive), ""]
    drift = machine_drift(result)
    if drift:
        out += ["> " + _md(machine_drift_line(drift)), ""]
    order = {"regression": 0, "improvement": 1, "inconclusive": 2, "unchanged": 3}
    rows = sorted(result["rows"], key=lambda r: order[r["verdict"]])
    header = ("| Benchmark | Metric | Role | n | Base | New | Change [interval] | Threshold | p "
              "| adj. p | Verdict |\n|---|---|---|--:|--:|--:|--:|--:|--:|--:|---|")

    def line(r):
        verdict = {"regression": "**REGRESSION**", "improvement": "improvement"}.get(
            r["verdict"], r["verdict"])
        if r["verdict"] == "inconclusive":
            verdict += ": " + r["reason"]
        return "| `%s` | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            _md(r["name"]), r["metric"], _role(r), _n_cell(r),
            fmt_value(r["base_median"], r["unit"]), fmt_value(r["new_median"], r["unit"]),
            _change_cell(r), _threshold_cell(r), fmt_p(r["p_value"]), fmt_p(r.get("p_adjusted")),
            _md(verdict))

    def shown(r):  # primary rows that are not unchanged, secondary rows that moved
        return r["verdict"] in (("regression", "improvement", "inconclusive")
                                if r.get("primary", True) else ("regression", "improvement"))
    judged = [r for r in rows if shown(r)]
    same = [r for r in rows if not shown(r)]
    if judged:
        out += [header] + [line(r) for r in judged] + [""]
    if same:
        out += ["<details><summary>%d unchanged or secondary</summary>" % len(same), "",
                header]
        out += [line(r) for r in same] + ["", "</details>", ""]
    out += ["- ERROR on %s side: `%s`: %s" % (e["side"], _md(e["name"]), _md(e["message"]))
            for e in result["errored"]]
    out += ["- NOT JUDGED: `%s` %s: %s" % (_md(u["name"]), u["metric"], _md(u["reason"]))
            for u in result.get("unjudged", [])]
    out += ["- only in %s: `%s`" % (side, _md(name)) for side in ("base", "new")
            for name in result["only_in_" + side]]
    return "\n".join(out).rstrip() + "\n"


def _md(v):
    """A table cell: pipes escaped, one line."""
    return str(v).replace("|", "\\|").replace("\n", " ")


def _verdict_cell(r):
    note = " (%s)" % r["note"] if r.get("note") else ""
    if r["verdict"] == "regression":
        return "REGRESSION" + note
    if r["verdict"] == "inconclusive":
        return "inconclusive: " + r["reason"] + note
    return r["verdict"] + note


def spread_lines(result):
    """How the samples were formed, and the spread within and between processes."""
    rows = [r for r in result["rows"] if r["verdict"] and r.get("samples")]
    kinds = {r["samples"] for r in rows}
    lines = []
    p = result["processes"]
    if "process" in kinds:
        lines.append("samples: one per process (median of its repetitions): %d base, "
                     "%d new processes" % (p["base"], p["new"]))
    if "pair" in kinds:
        pair_cv = [r["pair_cv_pct"] for r in rows if r.get("pair_cv_pct") is not None]
        lines.append("samples: %d rounds, each a base and a new process back to back; spread "
                     "of the rounds' differences (median over rows): %s" % (
                         p["base"], _pct_or_dash(pair_cv)))
    if "repetition" in kinds:
        one = min(p.values()) == 1
        lines.append("samples: repetitions of %s (drift inside a process is not sampled: use "
                     "scripts/bench --processes N)" % ("one process" if one else "the processes"))
    for side in ("base", "new"):
        between = [r[side + "_cv_pct"] for r in rows if r.get(side + "_cv_pct") is not None
                   and r["samples"] == "process"]
        within = [r[side + "_within_cv_pct"] for r in rows
                  if r.get(side + "_within_cv_pct") is not None]
        if between or within:
            lines.append("spread (%s, median over rows): within a process %s, between "
                         "processes %s" % (side, _pct_or_dash(within), _pct_or_dash(between)))
    return lines


def _pct_or_dash(vals):
    return "%.2f %% CV" % statistics.median(vals) if vals else "-"


def _count(c, word):
    return "%d %s%s" % (c, word, "" if c == 1 else "s")


def summary_line(result, accept_inconclusive=False):
    def n(key, word):
        return _count(len(result[key]), word)
    extra = []
    if result["errored"]:
        extra.append("%d errored" % len({e["name"] for e in result["errored"]}))
    if result.get("unjudged"):
        extra.append("%d without a primary verdict" % len({u["name"] for u in result["unjudged"]}))
    if result.get("secondary"):
        moved = secondary_moves(result)
        extra.append("secondary rows (not deciding): %s, %s of %d" % (
            _count(len(moved["regression"]), "regression"),
            _count(len(moved["improvement"]), "improvement"), len(result["secondary"])))
    if result["only_in_base"] or result["only_in_new"]:
        extra.append("%d only in base, %d only in new" % (len(result["only_in_base"]),
                                                          len(result["only_in_new"])))
    code = exit_code(result, accept_inconclusive)
    return ("compare: %s, %s, %d unchanged, %d inconclusive over %d common benchmarks "
            "(alpha %g family-wise, Holm; threshold %g %%%s)%s; exit %d (%s)" % (
                n("regressions", "regression"), n("improvements", "improvement"),
                len(result["unchanged"]), len(result["inconclusive"]),
                len(result["common"]), result["alpha"], result["threshold_pct"],
                own_thresholds(result), "; " + "; ".join(extra) if extra else "", code,
                EXIT_MEANING[code]))


def own_thresholds(result):
    """"; own: p50_us -20/+25 %, ...": the deciding metrics judged against another threshold
    than --threshold (latency's own, max_rate's grid step), each with the one it got."""
    own = {}
    for r in result["rows"]:
        up = r.get("threshold_pct")
        if r.get("primary") and up is not None and up != result["threshold_pct"]:
            own.setdefault(r["metric"], set()).add(_threshold_cell(r))
    if not own:
        return ""
    return "; own: " + ", ".join("%s %s" % (m, " or ".join(sorted(t))) for m, t in own.items())


def secondary_moves(result):
    """{"regression": [rows], "improvement": [rows]}: the secondary rows that moved
    significantly over the secondary family (Holm), which the summary counts and lists."""
    return {v: [r for r in result.get("secondary", []) if r["verdict"] == v]
            for v in ("regression", "improvement")}


def secondary_lines(result):
    """One line per secondary row that moved: listed under the verdict, never silent."""
    return ["SECONDARY %s (not deciding): %s %s %s, adj. p %s" % (
        verdict.upper(), r["name"], r["metric"], _change_cell(r), fmt_p(r.get("p_adjusted")))
        for verdict, rows in secondary_moves(result).items() for r in rows]


EXIT_MEANING = {0: "every row judged on its primary metrics, none regressed", 1: "regression",
                2: "bad input", 3: "not everything could be judged"}


def compile_filter(pattern):
    try:
        return re.compile(pattern)
    except re.error as e:
        raise ValueError("invalid --filter regex %r: %s" % (pattern, e)) from e


def dumps(obj):
    return json.dumps(obj, indent=2, allow_nan=False)
