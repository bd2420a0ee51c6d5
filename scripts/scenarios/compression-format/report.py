"""Report of the compression-format scenario (seed 003): the cases where A beats B
(and B beats A), as scripts/compare decides.
Run by run.py as `report.py DIR --scale S ...` (kbench.scenario.report_main)."""

import os
import re
import sys

from kbench import cli, text
from kbench import results as kr
from kbench import scenario as ks

CASE_LABELS = ["max.in.flight.requests.per.connection", "valueBound", "linger.ms", "messageSize", "compression.type"]


def _case_text(name):
    return ",  ".join("%s=%s" % pair for pair in zip(CASE_LABELS, _case_cells(name)))


def report(directory, args):
    a = ks.load_dir_json(directory, "A.json")
    b = ks.load_dir_json(directory, "B.json")
    vpath = os.path.join(directory, "verdict.json")
    if not os.path.exists(vpath):
        raise ks.ScenarioError("%s does not exist (scripts/compare did not run?)" % vpath)
    verdict = cli.read_json(vpath)
    ctx_a, ctx_b = a.get("context", {}), b.get("context", {})
    label_a, label_b = args.label_a or "A", args.label_b or "B"
    med_a, med_b = ks.median_table(a), ks.median_table(b)
    reps = max((len(g["runs"]) for g in kr.group_runs(a).values()), default=0)

    lines = ks.header(args, "Compression and record format: where %s beats %s" % (label_a, label_b),
                      "seed 003 (KAFKA-3565, \"Producer's throughput lower with compressed data "
                      "after KIP-31/32\", Jiangjie Qin's comment of 2016-04-22)", ctx_a, [
        "Original: Kafka's benchmark_test on trunk (after KIP-31/32, message format v1) vs 0.9 "
        "(format v0), Java producer, three brokers; here A = %s, B = %s, librdkafka producers, "
        "%s broker(s)." % (label_a, label_b, ctx_a.get("broker_count", "?")),
        "The original ran each case once per run, eight runs; here A and B alternate, "
        "%d repetitions each, and only differences that scripts/compare finds significant "
        "(moderated trimmed t, alpha %g, Hodges-Lehmann shift ≥ %g %%) are listed." % (
            reps, verdict.get("alpha", 0), verdict.get("threshold_pct", 0)),
        "Throughput is MiB/s of record values (bytes_per_second), as in the original's MB/sec."])
    sides = []
    for side, label, ctx in (("A", label_a, ctx_a), ("B", label_b, ctx_b)):
        client = ", ".join("%s=%s" % (k[7:], v) for k, v in sorted(ctx.items())
                           if k.startswith("client.") and k[7:] in ("api.version.request",
                                                                    "broker.version.fallback"))
        sides.append([side, label, ctx.get("librdkafka_version", "?"), ctx.get("broker_version", "?"), client or "—"])
    lines += text.table(["side", "spec", "librdkafka", "broker", "client settings"],
                         sides, markdown=True).splitlines() + [""]

    def rows_for(kind):
        return sorted((r for r in verdict.get(kind, []) if r.get("metric") == "bytes_per_second"),
                      key=lambda r: r["name"])

    a_wins = rows_for("regressions")      # B (new) lower than A (base): A beats B
    b_wins = rows_for("improvements")
    for title, rows, first, second in (
            ("Cases where A (%s) beats B (%s)" % (label_a, label_b), a_wins, "B", "A"),
            ("Cases where B (%s) beats A (%s)" % (label_b, label_a), b_wins, "A", "B")):
        lines += ["## %s" % title, ""]
        if not rows:
            lines += ["None that is significant.", ""]
            continue
        lines += ["(as in the original: the configuration, then loser < winner in MB/s, then the "
                  "difference; p is the U test's p-value)", "", "```"]
        for r in rows:
            lo, hi = (r["new_median"], r["base_median"]) if first == "B" else (r["base_median"], r["new_median"])
            diff = abs(r["change_pct"]) if r.get("change_pct") is not None else float("nan")
            lines.append("%s wins:  %s    (%s %.2f  <  %s %.2f,  %.0f%%,  p=%.3g)" % (
                second, _case_text(r["name"]), first, lo / ks.MIB, second, hi / ks.MIB,
                diff if first == "B" else abs(hi - lo) / lo * 100.0, r.get("p_value") or 0))
        lines += ["```", ""]

    unchanged = sum(1 for r in verdict.get("unchanged", []) if r.get("metric") == "bytes_per_second")
    inconclusive = [r for r in verdict.get("inconclusive", []) if r.get("metric") in ("bytes_per_second", "-")]
    lines += ["Of %d cases: %d A wins, %d B wins, %d no significant difference, %d inconclusive "
              "(too few repetitions or a failed run)." % (len(set(med_a) & set(med_b)), len(a_wins),
                                                          len(b_wins), unchanged, len(inconclusive)), ""]
    if verdict.get("only_in_base") or verdict.get("only_in_new"):
        lines += ["Cases run on one side only (not compared): %d in A, %d in B." % (
            len(verdict.get("only_in_base", [])), len(verdict.get("only_in_new", []))), ""]

    kinds = {"regressions": "A wins", "improvements": "B wins", "unchanged": "same", "inconclusive": "inconclusive"}
    verdict_of = {r["name"]: what for kind, what in kinds.items() for r in verdict.get(kind, [])
                  if r.get("metric") in ("bytes_per_second", "-")}
    table, changes = [], {}  # changes: % change of B against A, where both have a value
    for name in sorted(set(med_a) & set(med_b), key=_case_sort_key):
        va, vb = med_a[name][1].get("bytes_per_second"), med_b[name][1].get("bytes_per_second")
        if va and vb is not None:
            changes[name] = (vb - va) / va * 100
        table.append(_case_cells(name) + [
            text.number(va / ks.MIB if va else None), text.number(vb / ks.MIB if vb else None),
            "%+.1f%%" % changes[name] if name in changes else "—", verdict_of.get(name, "—")])
    lines += ["## Every case (medians, MiB/s)", ""]
    lines += text.table(["max.in.flight", "valueBound", "linger.ms", "messageSize", "codec", "A",
                          "B", "change", "verdict"], table, markdown=True).splitlines()
    lines += ["", "The original (run 1 of 8, 0.9 winning over trunk): max.in.flight=5, valueBound=500, "
              "linger.ms=0, messageSize=100, gzip (2.04 < 2.38, 16%); almost every case where the "
              "older version won had max.in.flight=5 and messageSize=100.", "",
              "Files: `A.json`, `B.json` (every repetition of each side), `verdict.json` (scripts/compare A.json "
              "B.json), `raw/`, `compression-format.png`, `commands.txt`, `logs/`.", ""]
    ks.write_report(directory, lines)
    _chart_compression(directory, changes, verdict_of, label_a, label_b)


def _case_cells(name):
    """max.in.flight, valueBound, linger.ms, messageSize and codec of a case."""
    p = kr.parse_name(name)[2]
    return [p.get("max_in_flight", "5"), p.get("payload", "?").replace("value_bound:", ""),
            p.get("linger_ms", "5"), p.get("record_bytes", "?"), p.get("codec", "?")]


def _case_sort_key(name):
    *numbers, codec = _case_cells(name)
    return tuple(int((re.findall(r"\d+", v) or [0])[0]) for v in numbers) + (codec,)


def _chart_compression(directory, changes, verdict_of, label_a, label_b):
    plt = ks.plt_module()
    labels = ["mif %s vb %s lg %s sz %s %s" % tuple(_case_cells(n)) for n in changes]
    colors = [{"A wins": "tab:red", "B wins": "tab:green"}.get(verdict_of.get(n), "tab:gray") for n in changes]
    fig, ax = plt.subplots(figsize=(8, max(3, 0.22 * len(labels) + 1)))
    ax.barh(range(len(labels)), list(changes.values()), color=colors)
    ax.set_yticks(range(len(labels)), labels, fontsize=6)
    ax.invert_yaxis()
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_xlabel("B vs A, %% change of MiB/s (red: A (%s) wins, green: B (%s) wins, gray: not significant)"
                  % (label_a, label_b), fontsize=8)
    ax.set_title("Compression and format (seed 003)")
    ax.grid(axis="x", alpha=0.3)
    ks.save_chart(fig, directory, "compression-format.png")


def options(ap):
    ap.add_argument("--label-a", help="what side A is, e.g. librdkafka:system")
    ap.add_argument("--label-b", help="what side B is")


if __name__ == "__main__":
    sys.exit(ks.report_main(report, options))
