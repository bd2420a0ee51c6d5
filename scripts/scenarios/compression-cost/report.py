"""Report of the compression-cost scenario: per payload and codec, records/s, client and
broker CPU per MiB, wire bytes per value byte and end-to-end p99 (medians over rounds); a
Pareto chart of client CPU per MiB against wire bytes per MiB; and the broker's cost of
recompressing into a topic's own compression.type (KAFKA-15418).
Run by ./run as `report.py DIR --scale S ...`."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "..", "lib"))

import kbench_scenario as ks  # noqa: E402

DEFAULT_PAYLOAD = "az"  # kbench leaves the default payload out of names
PAYLOAD_LABELS = {"az": "A-Z letters (kafka-producer-perf-test's)",
                  "value_bound:500": "integers below 500 as text (KAFKA-3565)",
                  "repeated": "8 distinct bodies with random keys (seed 000)"}


def codec_label(params):
    codec = params.get("codec", "none")
    return codec + (":" + params["level"] if "level" in params else "")


def payload_of(params):
    return params.get("payload", DEFAULT_PAYLOAD)


def _tables(directory):
    """(produce rows, recompression rows, end-to-end rows): (payload, codec) -> metrics, and
    (producer codec, topic codec) -> metrics."""
    produce, recompress, e2e = {}, {}, {}
    for name, (p, m) in ks.median_table(ks.load_dir_json(directory, "produce.json")).items():
        if not name.startswith("Produce/send/"):
            continue
        plain_az = payload_of(p) == DEFAULT_PAYLOAD and (p.get("codec"), p.get("level")) in (
            ("lz4", "1"), ("none", None))
        if "topic_codec" in p or plain_az:
            recompress[(codec_label(p), p.get("topic_codec", "producer"))] = m
        if "topic_codec" not in p:
            produce[(payload_of(p), codec_label(p))] = m
    path = os.path.join(directory, "end_to_end.json")
    if os.path.exists(path):
        for name, (p, m) in ks.median_table(ks.load_dir_json(directory, "end_to_end.json")).items():
            if name.startswith("EndToEnd/"):
                e2e[(payload_of(p), codec_label(p))] = m
    return produce, recompress, e2e


def wire_per_value(m):
    """Bytes on the wire per byte of record values (compression, batch and protocol overhead)."""
    if m.get("wire_bytes_per_second") and m.get("bytes_per_second"):
        return m["wire_bytes_per_second"] / m["bytes_per_second"]
    return None


def pareto(points):
    """The labels of the points no other point beats on both axes (lower is better)."""
    front = []
    for label, x, y in points:
        if not any((x2 <= x and y2 <= y) and (x2 < x or y2 < y) for _, x2, y2 in points):
            front.append(label)
    return front


def _per_value(bytes_per_mib):
    """Bytes per MiB of values as bytes per value byte."""
    return None if bytes_per_mib is None else bytes_per_mib / ks.MIB


def _fmt(v, digits=0):
    return "—" if v is None else "%.*f" % (digits, v)


def report(directory, args):
    produce, recompress, e2e = _tables(directory)
    if not produce:
        raise ks.ScenarioError("%s/produce.json has no Produce/send rows" % directory)
    ctx = ks.load_dir_json(directory, "produce.json").get("context", {})
    broker_measured = str(ctx.get("broker_cost", "")).startswith("measured")
    diffs = ks.common_differences(ctx, [
        "Not one published experiment: the codec x payload matrix of KAFKA-3565 and the "
        "compression chapters of Kafka's docs, measured as costs (CPU per MiB) rather than "
        "records/s alone, with librdkafka %s as the client." % ctx.get("librdkafka_version", "?"),
        "zstd's fast (negative) levels are out of reach: librdkafka's compression.level takes "
        "-1 (the codec's default) to 12, so zstd 1 is its fastest here.",
        "Client CPU per MiB is kbench's cpu_us_per_mb (the client process, every thread, in "
        "the window); broker CPU per MiB and log bytes per MiB come from the broker process "
        "scripts/kafka started (utime+stime, and the growth of its log directory).",
        "The corpus is the licence texts of Debian's base-files package "
        "(/usr/share/common-licenses: GPL, LGPL, Apache-2.0, MPL, Artistic, BSD, CC0, GFDL), "
        "whose licences permit verbatim copies; joined into ~1 KiB records."])
    lines = ks.header("Compression cost: client and broker CPU, bytes and latency per codec",
                      "KAFKA-3565's codec x payload matrix; KAFKA-15418 (broker recompression)",
                      ctx, args.scale, args.tiny, args.wall_seconds, args.note, diffs)
    payloads = sorted({k[0] for k in produce}, key=lambda p: (p != DEFAULT_PAYLOAD, p))
    codecs = sorted({k[1] for k in produce}, key=_codec_order)
    for payload in payloads:
        label = PAYLOAD_LABELS.get(payload, payload)
        if payload.startswith("file:"):
            label = "%s (the licence-text corpus)" % payload
        lines += ["## Payload %s" % label, "",
                  "Closed-loop Produce/send rows (records/s, CPU, bytes) and EndToEnd at 2,000 "
                  "records/s (p99). Wire bytes per value byte below 1 is compression; above 1 is "
                  "overhead. Pareto: no other codec has both lower client CPU per MiB and fewer "
                  "wire bytes.", "",
                  "| codec | records/s | client CPU µs/MiB | broker CPU µs/MiB | wire bytes / value byte "
                  "| broker log bytes / value byte | end-to-end p99 µs | Pareto |",
                  "|---|---:|---:|---:|---:|---:|---:|:-:|"]
        points = [(c, produce[(payload, c)].get("cpu_us_per_mb"), wire_per_value(produce[(payload, c)]))
                  for c in codecs if (payload, c) in produce]
        front = pareto([(c, x, y) for c, x, y in points if x is not None and y is not None])
        for c in codecs:
            m = produce.get((payload, c))
            if m is None:
                continue
            log_ratio = _per_value(m.get("broker_log_bytes_per_mb"))
            lines.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
                c, ks.fmt_int(m.get("items_per_second")), _fmt(m.get("cpu_us_per_mb")),
                _fmt(m.get("broker_cpu_us_per_mb")), _fmt(wire_per_value(m), 3), _fmt(log_ratio, 3),
                _fmt(e2e.get((payload, c), {}).get("p99_us")), "●" if c in front else ""))
        lines.append("")
    lines += _recompression(recompress, broker_measured)
    lines += ["Files: `produce.json`, `end_to_end.json` (every round, each tagged with its round as "
              "kbench_process), `raw/`, `corpus.txt`, `compression-cost.png`, `commands.txt`, `logs/`.", ""]
    ks.write_report(directory, lines)
    _chart(directory, produce, payloads, codecs)


def _recompression(rows, measured):
    out = ["## Broker recompression (KAFKA-15418)", ""]
    if not any(topic != "producer" for _, topic in rows):
        return out + ["Not run: it needs a broker started by the scenario (its CPU is what it "
                      "shows).", ""]
    out += ["Producer codec into a topic whose compression.type is `producer` (the broker keeps "
            "the batches) or `zstd` (it decompresses, validates and recompresses every batch). "
            "Payload az, 1000-byte records." + ("" if measured else " Broker cost was not measured."), "",
            "| producer codec | topic compression.type | records/s | broker CPU µs/MiB "
            "| broker log bytes / value byte | broker CPU × keep |",
            "|---|---|---:|---:|---:|---:|"]
    for producer in sorted({p for p, _ in rows}, key=_codec_order):
        keep = rows.get((producer, "producer"), {}).get("broker_cpu_us_per_mb")
        for topic in ("producer", "zstd"):
            m = rows.get((producer, topic))
            if m is None:
                continue
            cpu = m.get("broker_cpu_us_per_mb")
            log_ratio = _per_value(m.get("broker_log_bytes_per_mb"))
            times = "%.2f" % (cpu / keep) if cpu is not None and keep else "—"
            out.append("| %s | %s | %s | %s | %s | %s |" % (
                producer, topic, ks.fmt_int(m.get("items_per_second")), _fmt(cpu), _fmt(log_ratio, 3), times))
    return out + [""]


def _codec_order(label):
    order = ["none", "gzip", "snappy", "lz4", "zstd"]
    name, _, level = label.partition(":")
    return (order.index(name) if name in order else len(order), int(level) if level.lstrip("-").isdigit() else 0)


def _chart(directory, produce, payloads, codecs):
    plt = ks.plt_module()
    n = len(payloads)
    fig, axes = plt.subplots(1, n, figsize=(4.2 * n, 4), squeeze=False)
    for ax, payload in zip(axes[0], payloads):
        pts = []
        for c in codecs:
            m = produce.get((payload, c))
            if m and m.get("cpu_us_per_mb") is not None and wire_per_value(m) is not None:
                pts.append((c, wire_per_value(m), m["cpu_us_per_mb"]))
        front = set(pareto(pts))
        for c, x, y in pts:
            ax.scatter([x], [y], color="tab:red" if c in front else "tab:blue", s=22)
            ax.annotate(c, (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
        ax.set_xlabel("wire MiB per MiB of values", fontsize=8)
        ax.set_ylabel("client CPU µs per MiB", fontsize=8)
        ax.set_title(payload, fontsize=9)
        ax.grid(alpha=0.3)
    fig.suptitle("Compression cost: client CPU against bytes on the wire (red: Pareto front)")
    fig.savefig(os.path.join(directory, "compression-cost.png"), dpi=110, bbox_inches="tight")
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(ks.report_main(report))
