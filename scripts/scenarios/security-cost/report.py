"""Report of the security-cost scenario: records/s, MB/s, client CPU per MB and latency by
security protocol, each as a ratio to plaintext, for Produce and Consume rows.
Run by run.py as `report.py DIR --scale S --protocols "plaintext ssl ..." ...`."""

import os
import sys

from kbench import scenario as ks
from kbench import text

LABELS = {"plaintext": "PLAINTEXT", "ssl": "SSL (TLS)", "sasl_plaintext": "SASL_PLAINTEXT (SCRAM)",
          "sasl_ssl": "SASL_SSL (SCRAM over TLS)", "mtls": "SSL with client certificates (mTLS)"}


def _rows(data):
    """("produce", size, acks, codec, rate) or ("consume", size, "", "", 0) -> median metrics."""
    out = {}
    for name, (p, m) in ks.median_table(data).items():
        if name.startswith("Produce/send/"):
            key = ("produce", int(p["record_bytes"]), p["acks"], p["codec"], int(p.get("rate", 0)))
        elif name.startswith("Consume/read/"):
            key = ("consume", int(p["record_bytes"]), "", "", 0)
        else:
            continue
        out[key] = m
    return out


def _describe(key):
    kind, size, acks, codec, rate = key
    return ("Consume, %d B" % size if kind == "consume" else
            "Produce, %d B, acks %s, %s%s" % (size, acks, codec, ", %d records/s" % rate if rate else ""))


def _over(rows, p, k, metric):
    """Protocol P's METRIC on row K over plaintext's; None when either is missing."""
    base, v = rows["plaintext"].get(k, {}).get(metric), rows[p].get(k, {}).get(metric)
    return v / base if base and v is not None else None


def _fmt_over(rows, p, k, metric):
    return ks.fixed(2)(_over(rows, p, k, metric))


def report(directory, args):
    protocols = [p for p in args.protocols.split() if os.path.exists(os.path.join(directory, p + ".json"))]
    if "plaintext" not in protocols:
        raise ks.ScenarioError("%s has no plaintext.json: no baseline for the ratios" % directory)
    datas = {p: ks.load_dir_json(directory, p + ".json") for p in protocols}
    rows = {p: _rows(d) for p, d in datas.items()}
    ctx = datas["plaintext"].get("context", {})
    lines = ks.header(args, "Security cost: plaintext against TLS, SASL_SSL and mTLS",
                      "the PLAINTEXT/SSL/SASL matrix of Kafka's benchmark_test.py "
                      "(tests/kafkatest/benchmarks/core/benchmark_test.py)", ctx, [
        "The security_protocol axis of Kafka's own system test (benchmark_test.py: PLAINTEXT, SSL, "
        "SASL) with librdkafka %s as the client; one broker per protocol on this host, brokers "
        "replicating over the same protocol; throwaway 2048-bit RSA certificates and SCRAM-SHA-512 "
        "users made by scripts/kafka." % ctx.get("librdkafka_version", "?"),
        "Client CPU per MB is kbench's cpu_us_per_mb: the client process's CPU (every thread: application and "
        "librdkafka) within the measured window per MiB of record values; the broker's CPU is not in it.",
        "MB means MiB (2^20 bytes) of record values, as in Kafka's tools."])
    lines += ["Protocols: " + ", ".join("%s = %s" % (p, LABELS.get(p, p)) for p in protocols), ""]
    keys = sorted({k for r in rows.values() for k in r}, key=lambda k: (k[0] != "produce", k[4], k[1], k[2], k[3]))
    base = rows["plaintext"]
    others = [p for p in protocols if p != "plaintext"]

    def table(title, metric, fmt, note, selected):
        cells = [[_describe(k), fmt(base.get(k, {}).get(metric))]
                 + [c for p in others for c in (fmt(rows[p].get(k, {}).get(metric)), _fmt_over(rows, p, k, metric))]
                 for k in selected]
        head = ["row", "plaintext"] + [c for p in others for c in (p, "×")]
        return (["## %s" % title, "", note, ""] + text.table(head, cells, markdown=True).splitlines() + [""])

    closed, open_loop = [k for k in keys if k[4] == 0], [k for k in keys if k[4] > 0]
    lines += table("Records/s", "items_per_second", text.number,
                   "Closed loop (unthrottled); × is the protocol's records/s over plaintext's.", closed)
    lines += table("MiB/s of record values", "bytes_per_second",
                   lambda v: text.number(v / ks.MIB if v is not None else None), "× over plaintext.", closed)
    lines += table("Client CPU per MiB (µs)", "cpu_us_per_mb", ks.fixed(0),
                   "kbench's cpu_us_per_mb: the client's CPU (user + system, every thread) per MiB of values in the "
                   "window; × over plaintext (above 1: the protocol costs the client CPU).", closed)
    if open_loop:
        lines += table("Latency p50 (µs) at a fixed rate", "p50_us", ks.fixed(0),
                       "Open loop, from each record's intended send time to its delivery report.", open_loop)
        lines += table("Latency p99 (µs) at a fixed rate", "p99_us", ks.fixed(0),
                       "As above, 99th percentile.", open_loop)
    lines += _headline(rows, others)
    lines += ["Files: one JSON per protocol (`plaintext.json`, ...: every round, each tagged with its round as "
              "kbench_process), `raw/` (each round's own JSON), `security-cost.png`, `commands.txt`, `logs/`.", ""]
    ks.write_report(directory, lines)
    _chart(directory, rows, others, closed)


def _headline(rows, others):
    """The goal's figures: TLS records/s and CPU per MB over plaintext, at 100 and 1000 B."""
    out = ["## Headline: TLS over plaintext", ""]
    base = rows["plaintext"]
    for p in others:
        for size in (100, 1000):
            k = ("produce", size, "1", "none", 0)
            if base.get(k) and rows[p].get(k):
                out.append("- %s, Produce %d B, acks 1, no compression: records/s × %s, client CPU per MiB × %s"
                           % (p, size, _fmt_over(rows, p, k, "items_per_second"),
                              _fmt_over(rows, p, k, "cpu_us_per_mb")))
    return out + [""]


def _chart(directory, rows, others, closed):
    plt = ks.plt_module()
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    labels = ["consume %d B" % k[1] if k[0] == "consume" else "%d B a%s %s" % k[1:4] for k in closed]
    width = 0.8 / max(len(others), 1)
    for ax, metric, title in ((axes[0], "items_per_second", "records/s over plaintext"),
                              (axes[1], "cpu_us_per_mb", "client CPU per MiB over plaintext")):
        for i, p in enumerate(others):
            ys = [_over(rows, p, k, metric) or 0 for k in closed]
            xs = [j + (i - (len(others) - 1) / 2) * width for j in range(len(closed))]
            ax.bar(xs, ys, width, label=p)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xticks(range(len(closed)), labels, rotation=45, ha="right", fontsize=7)
        ax.set_title(title, fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.suptitle("Security cost: each protocol against plaintext (1.0)")
    ks.save_chart(fig, directory, "security-cost.png")


if __name__ == "__main__":
    sys.exit(ks.report_main(report, lambda ap: ap.add_argument("--protocols", required=True,
                                                               help="the protocols that ran, space-separated")))
