"""Charts (PNG) of kbench results and of compare verdicts.

Each chart is drawn only when its data exists:
  produce-throughput  Produce records/s over threads x producers (grouped bars)
  latency             p50/p95/p99/p99.9/max per benchmark (log scale)
  codecs              compress and decompress MB/s against ratio, per codec:level
  rate-curve          latency (p50/p99/p99.9) against offered rate, from the probes of each
                      maximum-rate search (Produce/max_rate), with the rate it found
  ab-change           % change per benchmark/metric of a compare verdict (--verdict)
"""

import math
import os
import re

from kbench import cli, scenario, text
from kbench import results as kr

MAX_SERIES = 8      # lines per latency chart before splitting into more files
MAX_PANELS = 12     # subplots per throughput figure
MAX_AB_ROWS = 40    # bars per A/B chart


def medians(data):
    """[(name, {metric: median})] in file order, skipping errored benchmarks."""
    rows = ((name, kr.median_metrics(g)) for name, g in kr.group_runs(data).items())
    return [(name, m) for name, m in rows if m]


def short_labels(names):
    """Drop the key:value parts every name shares, so labels show what differs."""
    parsed = [kr.parse_name(n) for n in names]
    common = set.intersection(*(set(params.items()) | {("__family", fam), ("__variant", var)}
                                for fam, var, params, _ in parsed)) if parsed else set()
    labels = []
    for n, (fam, var, params, _extra) in zip(names, parsed):
        parts = []
        if ("__family", fam) not in common:
            parts.append(fam)
        if ("__variant", var) not in common and var:
            parts.append(var)
        parts += ["%s:%s" % kv for kv in params.items() if kv not in common]
        labels.append("/".join(parts) or n)
    return labels


class Plotter:
    def __init__(self, out_dir):
        self.plt, self.out_dir, self.written = scenario.plt_module(), out_dir, []

    def save(self, fig, filename):
        scenario.save_chart(fig, self.out_dir, filename)
        self.written.append(os.path.join(self.out_dir, filename))

    def produce_throughput(self, rows, prefix):
        groups = {}
        for name, m in rows:
            fam, var, params, _ = kr.parse_name(name)
            if fam != "Produce" or "threads" not in params or "producers" not in params or "items_per_second" not in m:
                continue
            key = (var,) + tuple((k, v) for k, v in params.items() if k not in ("threads", "producers"))
            groups.setdefault(key, {})[(params["threads"], params["producers"])] = m["items_per_second"]
        if not groups:
            return
        keys = list(groups)
        for start in range(0, len(keys), MAX_PANELS):
            chunk = keys[start:start + MAX_PANELS]
            cols = min(3, len(chunk))
            nrows = math.ceil(len(chunk) / cols)
            fig, axes = self.plt.subplots(nrows, cols, figsize=(5.5 * cols, 4.2 * nrows), squeeze=False)
            for ax, key in zip(axes.flat, chunk):
                cells = groups[key]
                threads = sorted({t for t, _ in cells}, key=_num)
                producers = sorted({p for _, p in cells}, key=_num)
                width = 0.8 / len(producers)
                for j, p in enumerate(producers):
                    xs = [i + (j - (len(producers) - 1) / 2) * width for i, t in enumerate(threads) if (t, p) in cells]
                    ys = [cells[(t, p)] for t in threads if (t, p) in cells]
                    ax.bar(xs, ys, width, label="%s producer%s" % (p, "" if p == "1" else "s"))
                    for x, y in zip(xs, ys):
                        ax.annotate(text.number(y), (x, y), ha="center", va="bottom", fontsize=7,
                                    xytext=(0, 2), textcoords="offset points")
                ax.set_xticks(range(len(threads)), threads)
                ax.set(xlabel="application threads", ylabel="records/s")
                ax.yaxis.set_major_formatter(self._rate_formatter())
                ax.set_title(" ".join("%s:%s" % kv for kv in key[1:]) or key[0] or "Produce", fontsize=9)
                ax.legend(fontsize=7)
                ax.grid(axis="y", alpha=0.3)
            for ax in list(axes.flat)[len(chunk):]:
                ax.set_visible(False)
            fig.suptitle("Produce throughput by threads and producer instances (median)")
            self.save(fig, "%sproduce-throughput%s.png" % (prefix, _part(start, MAX_PANELS, keys)))

    def latency(self, rows, prefix):
        sel = [(n, m) for n, m in rows if any(k in m for k in kr.LATENCY_METRICS)]
        if not sel:
            return
        labels = short_labels([n for n, _ in sel])
        pct_names = ["p50", "p95", "p99", "p99.9", "max"]
        for start in range(0, len(sel), MAX_SERIES):
            chunk = list(zip(sel, labels))[start:start + MAX_SERIES]
            fig, ax = self.plt.subplots(figsize=(9, 5))
            for (_name, m), label in chunk:
                xs = [i for i, k in enumerate(kr.LATENCY_METRICS) if k in m]
                ys = [m[k] / 1000.0 for k in kr.LATENCY_METRICS if k in m]
                ax.plot(xs, ys, marker="o", label=label)
            ax.set_xticks(range(len(pct_names)), pct_names)
            ax.set(yscale="log", xlabel="percentile", ylabel="latency (ms, log scale)",
                   title="Latency percentiles (median of repetitions)")
            ax.grid(alpha=0.3, which="both")
            ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
            self.save(fig, "%slatency%s.png" % (prefix, _part(start, MAX_SERIES, sel)))

    def rate_curves(self, doc, rows, prefix):
        """One chart per search: every probe of every repetition; filled markers were
        sustained, crosses were not (their latency, where any was measured, describes a
        backlog); the dashed line is the median max_rate."""
        curves = doc.get(kr.RATE_CURVES_KEY) or {}
        found = dict(rows)
        for i, (name, reps) in enumerate(sorted(curves.items())):
            fig, ax = self.plt.subplots(figsize=(9, 5))
            for key, label, color in (("p50_us", "p50", "tab:blue"), ("p99_us", "p99", "tab:orange"),
                                      ("p999_us", "p99.9", "tab:red")):
                ok, bad = [], []
                for rep in reps:
                    for rate, lat, sus in zip(rep.get("target_rate", []), rep.get(key, []), rep.get("sustained", [])):
                        if lat is None or lat <= 0:
                            continue  # nothing measured at that probe
                        (ok if sus else bad).append((rate, lat / 1000.0))
                ok.sort()
                if ok:
                    ax.plot([x for x, _ in ok], [y for _, y in ok], marker="o", color=color,
                            label=label + " (sustained)")
                if bad:
                    ax.scatter([x for x, _ in bad], [y for _, y in bad], marker="x",
                               color=color, label=label + " (not sustained)")
            best = found.get(name, {}).get("max_rate")
            if best:
                ax.axvline(best, linestyle="--", color="gray")
                ax.annotate("max_rate %s/s" % text.number(best), (best, 1), xycoords=("data", "axes fraction"),
                            xytext=(3, -12), textcoords="offset points", fontsize=8)
            ax.set(yscale="log", xlabel="offered rate (records/s)",
                   ylabel="latency from intended send time (ms, log scale)")
            ax.xaxis.set_major_formatter(self._rate_formatter())
            ax.set_title(short_labels([name])[0], fontsize=9)
            ax.grid(alpha=0.3, which="both")
            ax.legend(fontsize=7, loc="upper left")
            self.save(fig, "%srate-curve-%d.png" % (prefix, i + 1))

    def codecs(self, rows, prefix):
        comp, decomp = {}, {}
        for name, m in rows:
            fam, var, params, _ = kr.parse_name(name)
            if fam != "Codec" or var not in ("compress", "decompress") or "codec" not in params \
                    or "bytes_per_second" not in m:
                continue
            setting = tuple((k, v) for k, v in params.items() if k not in ("codec", "level"))
            label = params["codec"] + (":%s" % params["level"] if "level" in params else "")
            (comp if var == "compress" else decomp).setdefault(setting, {})[label] = m
        settings = list(comp) + [s for s in decomp if s not in comp]
        for idx, setting in enumerate(settings):
            c = comp.get(setting, {})
            panels = [(t, pts) for t, pts in (("compress", c), ("decompress", decomp.get(setting, {}))) if pts]
            fig, axes = self.plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 5), squeeze=False)
            drew = False
            for ax, (title, pts) in zip(axes[0], panels):
                for label, m in sorted(pts.items()):
                    ratio = m.get("ratio", c.get(label, {}).get("ratio"))
                    if ratio is None:
                        continue
                    speed = m["bytes_per_second"] / 1e6
                    ax.scatter([ratio], [speed], s=30)
                    ax.annotate(label, (ratio, speed), fontsize=8, xytext=(4, 3), textcoords="offset points")
                    drew = True
                ax.set(yscale="log", xlabel="ratio (compressed / uncompressed, lower is better)",
                       ylabel="%s speed (MB/s of uncompressed data, log)" % title, title=title)
                ax.grid(alpha=0.3, which="both")
            fig.suptitle("Codec speed vs ratio  " + " ".join("%s:%s" % kv for kv in setting))
            if drew:
                # Name files after their setting so a directory listing reads well.
                tag = re.sub(r"[^A-Za-z0-9._-]+", "_", "-".join("%s_%s" % kv for kv in setting)) or str(idx + 1)
                self.save(fig, "%scodecs%s.png" % (prefix, "" if len(settings) == 1 else "-" + tag))
            else:
                self.plt.close(fig)

    def ab(self, verdict, prefix):
        rows = []
        for key in ("regressions", "improvements", "unchanged", "inconclusive"):
            for r in verdict.get(key, []):
                if r.get("metric") in (None, "-"):
                    continue
                c = r.get("change_pct")
                if c is None and r.get("change_note"):
                    c = math.inf if (r.get("new_median") or 0) > (r.get("base_median") or 0) else -math.inf
                if c is None:
                    continue
                rows.append((r, c))
        if not rows:
            return
        rows.sort(key=lambda rc: (rc[0]["verdict"] == "unchanged", -abs(rc[1]) if math.isfinite(rc[1]) else -1e300))
        colors = {"regression": "#d62728", "improvement": "#2ca02c", "unchanged": "#9e9e9e", "inconclusive": "#f0b400"}
        alpha, threshold = verdict.get("alpha", 0.01), verdict.get("threshold_pct", 5)
        labels_all = short_labels([r["name"] for r, _ in rows])
        for start in range(0, len(rows), MAX_AB_ROWS):
            chunk = rows[start:start + MAX_AB_ROWS]
            labels = ["%s  [%s]" % (label, r["metric"])
                      for (r, _), label in zip(chunk, labels_all[start:start + MAX_AB_ROWS])]
            finite = [abs(c) for _, c in chunk if math.isfinite(c)] or [threshold]
            cap = max(max(finite), threshold) * 1.15
            vals = [max(-cap, min(cap, c)) for _, c in chunk]
            fig, ax = self.plt.subplots(figsize=(10, 1.2 + 0.32 * len(chunk)))
            ys = list(range(len(chunk)))[::-1]
            ax.barh(ys, vals, color=[colors.get(r["verdict"], "#777") for r, _ in chunk])
            for y, v, (r, c) in zip(ys, vals, chunk):
                p = r.get("p_value")
                mark = "p=" + text.number(p, digits=2) if p is not None else "no test"
                if p is not None and p < alpha:
                    mark += " *"
                label = (text.percent(c, 1) if math.isfinite(c) else "from 0") + "  " + mark
                ax.annotate(label, (v, y), va="center", fontsize=7, ha="left" if v >= 0 else "right",
                            xytext=(3 if v >= 0 else -3, 0), textcoords="offset points")
            ax.axvline(0, color="black", linewidth=0.8)
            for t in (threshold, -threshold):
                ax.axvline(t, color="#555", linestyle=":", linewidth=0.8)
            ax.set_yticks(ys, labels, fontsize=7)
            ax.set_xlim(-cap * 1.45, cap * 1.45)
            ax.set_xlabel("change of median, new vs base (%%)   dotted: ±%g %% threshold" % threshold)
            ax.set_title("A/B comparison (* = p < %g; red regression, green improvement, "
                         "grey unchanged, amber inconclusive)" % alpha, fontsize=9)
            ax.grid(axis="x", alpha=0.3)
            self.save(fig, "%sab-change%s.png" % (prefix, _part(start, MAX_AB_ROWS, rows)))

    def _rate_formatter(self):
        from matplotlib.ticker import FuncFormatter
        return FuncFormatter(lambda v, _: text.number(v))


def _num(s):
    try:
        return float(s)
    except ValueError:
        return math.inf


def _part(start, size, items):
    return "" if len(items) <= size else "-%d" % (start // size + 1)


def add_arguments(ap):
    ap.add_argument("results", nargs="*", metavar="RESULT.json", help="kbench JSON results (Google Benchmark format)")
    ap.add_argument("--verdict", metavar="VERDICT.json", help="a scripts/compare --out file: draws the A/B chart")
    ap.add_argument("--out", metavar="DIR", help="output directory (default: plots/ beside the first input)")


def main(args):
    if not args.results and not args.verdict:
        cli.die("give at least one RESULT.json or --verdict VERDICT.json")
    first = args.results[0] if args.results else args.verdict
    out_dir = args.out or os.path.join(os.path.dirname(os.path.abspath(first)), "plots")
    cli.check_out_dir(out_dir, "--out")
    cli.dry_run_exit()

    try:
        docs = [(path, kr.load(path)) for path in args.results]
    except kr.BenchmarkJsonError as e:
        cli.die(str(e))
    verdict = None
    if args.verdict:
        verdict = cli.read_json(args.verdict, what="verdict ")
        if not isinstance(verdict, dict) or "regressions" not in verdict:
            cli.die("%s is not a scripts/compare verdict (no \"regressions\")" % args.verdict)

    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError as e:
        cli.die("cannot create %s: %s" % (out_dir, e.strerror or e))

    p = Plotter(out_dir)
    for path, doc in docs:
        # With several inputs, file names say which result each chart shows.
        stem = os.path.splitext(os.path.basename(path))[0]
        prefix = re.sub(r"[^A-Za-z0-9._-]+", "_", stem) + "-" if len(docs) > 1 else ""
        rows = medians(doc)
        p.produce_throughput(rows, prefix)
        p.latency(rows, prefix)
        p.rate_curves(doc, rows, prefix)
        p.codecs(rows, prefix)
    if verdict is not None:
        p.ab(verdict, "")
    if not p.written:
        cli.info("nothing to draw: no Produce threads/producers, latency, Codec or verdict data in the input")
    for path in p.written:
        print(path)
    return 0
