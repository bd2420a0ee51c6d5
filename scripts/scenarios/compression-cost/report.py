"""Report of the compression-cost scenario (README.md says what it measures): a table per
payload, the Pareto chart of client CPU against bytes, the broker's recompression (KAFKA-15418).
Run by run.py as `report.py DIR --scale S ...`."""

import sys

from kbench import facts, text
from kbench import results as kr
from kbench import scenario as ks

DEFAULT_PAYLOAD = "az"  # kbench leaves the default payload out of names
PAYLOAD_LABELS = {"az": "A-Z letters (kafka-producer-perf-test's)",
                  "value_bound:500": "integers below 500 as text (KAFKA-3565)",
                  "repeated": "8 distinct bodies with random keys"}
MARKS = {ks.FRONT: "●", ks.UNDECIDED: "○", ks.DOMINATED: ""}
COLORS = {ks.FRONT: "tab:red", ks.UNDECIDED: "tab:orange", ks.DOMINATED: "tab:blue"}


def codec_label(params):
    codec = params.get("codec", "none")
    level = params.get("level")
    return codec + (":" + level if level not in (None, "0") else "")


def payload_of(params):
    return params.get("payload", DEFAULT_PAYLOAD)


def bytes_per_value(m):
    """Bytes of the compressed batches per byte of record values in one repetition, from the
    batch figures (windows of the same batches, so independent of where the window begins);
    else the ratio counter."""
    batch, per_batch = m.get("avg_batch_bytes"), m.get("records_per_batch")
    values, records = m.get("bytes_per_second"), m.get("items_per_second")
    if batch and per_batch and values and records:
        return batch / (per_batch * values / records)
    return m.get("ratio")


def _spreads(data, family_prefix):
    """name -> (params, {metric: Spread}) with bytes_per_value added."""
    out, groups = {}, kr.group_runs(data)
    for name, (params, spreads) in ks.spread_table(data).items():
        if name.startswith(family_prefix):
            spreads["bytes_per_value"] = ks.Spread.of([bytes_per_value(r) for r in groups[name]["runs"]])
            out[name] = (params, spreads)
    return out


def _tables(directory):
    """(produce, recompression, end-to-end, codec ratio) by (payload, codec); recompression by codecs."""
    produce, recompress = {}, {}
    for p, m in _spreads(ks.load_dir_json(directory, "produce.json"), "Produce/send/").values():
        plain_az = payload_of(p) == DEFAULT_PAYLOAD and (p.get("codec"), p.get("level")) in (
            ("lz4", "1"), ("none", None))
        if "topic_codec" in p or plain_az:
            recompress[(codec_label(p), p.get("topic_codec", "producer"))] = m
        if "topic_codec" not in p:
            produce[(payload_of(p), codec_label(p))] = m
    data = ks.load_dir_json(directory, "end_to_end.json", optional=True)
    e2e = {(payload_of(p), codec_label(p)): m for p, m in (_spreads(data, "EndToEnd/") if data else {}).values()}
    data = ks.load_dir_json(directory, "codec.json", optional=True)
    codec = {(payload_of(p), codec_label(p)): m["ratio"]
             for name, (p, m) in (ks.median_table(data) if data else {}).items()
             if name.startswith("Codec/compress/") and "ratio" in m}
    return produce, recompress, e2e, codec


def _per_value(s):
    """Bytes per MiB of values as bytes per value byte."""
    return s and s.scaled(1 / ks.MIB)


def _p99_cell(m):
    """End-to-end p99 with its range; rounds short of the offered load are marked."""
    if m is None:
        return "—"
    cell = ks.fmt_spread(m.get("p99_us"), ks.fixed(0))
    short = m.get("rate_shortfall")
    if short is not None and short.total > 0:
        cell += " ⚠ short in %d of %d" % (round(short.total), short.n)
    return cell


def _versus_codec(send, ratio, payload):
    """The send path's median against the codec's own ratio, in %; not for `repeated` (the Codec family has no keys)."""
    if payload == "repeated" or send is None or not ratio:
        return "— (keys)" if payload == "repeated" else "—"
    return "%+.1f %%" % (100 * (send.median / ratio - 1))


def report(directory, args):
    produce, recompress, e2e, codec = _tables(directory)
    if not produce:
        raise ks.ScenarioError("%s/produce.json has no Produce/send rows" % directory)
    ctx = ks.load_dir_json(directory, "produce.json").get("context", {})
    broker_measured = str(ctx.get("broker_cost", "")).startswith("measured")
    lines = ks.header(args, "Compression cost: client and broker CPU, bytes and latency per codec",
                      "KAFKA-3565's codec x payload matrix; KAFKA-15418 (broker recompression)",
                      ctx, [
        "Not one published experiment: the codec x payload matrix of KAFKA-3565 and the "
        "compression chapters of Kafka's docs, measured as costs (CPU per MiB) rather than "
        "records/s alone, with librdkafka %s as the client." % ctx.get("librdkafka_version", "?"),
        "zstd's fast (negative) levels are out of reach: librdkafka's compression.level takes "
        "-1 (the codec's default) to 12, so zstd 1 is its fastest here.",
        "Client CPU per MiB is kbench's cpu_us_per_mb (the client process, every thread, in "
        "the window); broker CPU per MiB and log bytes per MiB come from the broker process "
        "scripts/kafka started (utime+stime, and the growth of its log directory).",
        "No record comes back within what a batch holds (kbench sends at least 16 MiB of distinct values before "
        "repeating one), so each codec compresses the data, as it would an application's, and not repeats of it."])
    rounds = max((m["items_per_second"].n for m in produce.values() if m.get("items_per_second")), default=0)
    lines += ["Every cell: the median over rounds, then [lowest–highest] (%d round(s)). " % rounds +
              "Bytes / value byte: the compressed batches on the wire per byte of record values (below 1 is "
              "compression). Codec ratio: the Codec family's compressed / raw over the same values in 1 MiB batches; "
              "\"vs codec\" is the send path against it: the batches add about 10 bytes of record framing per record "
              "(length, offset and timestamp deltas) between the values, which cost 1 % uncompressed and 1 to 5 % "
              "compressed at 1000-byte records (most with zstd 1, whose 6-byte minimum match they interrupt). "
              "Pareto: ● no other codec has both lower client CPU per MiB and fewer bytes, beyond the ranges of "
              "both; ○ on the front by the medians or within the range of a codec that could beat it (undecided: "
              "more rounds may tell); blank: beaten on both. ⚠: an EndToEnd round sent or delivered less than its "
              "offered 2,000 records/s, its latency is queueing.", ""]
    payloads = sorted({k[0] for k in produce}, key=lambda p: (p != DEFAULT_PAYLOAD, p))
    codecs = sorted({k[1] for k in produce}, key=_codec_order)
    marks_by_payload = {}
    for payload in payloads:
        label = ("%s (the text corpus)" % payload if payload.startswith("file:")
                 else PAYLOAD_LABELS.get(payload, payload))
        points = [(c, produce[(payload, c)].get("cpu_us_per_mb"),
                   produce[(payload, c)].get("bytes_per_value"))
                  for c in codecs if (payload, c) in produce]
        marks = marks_by_payload[payload] = ks.pareto_marks([pt for pt in points if None not in pt[1:]])
        rows = []
        for c in codecs:
            m = produce.get((payload, c))
            if m is None:
                continue
            ratio = codec.get((payload, c))
            rows.append([
                c, ks.fmt_spread(m.get("items_per_second")),
                ks.fmt_spread(m.get("cpu_us_per_mb"), ks.fixed(0)),
                ks.fmt_spread(m.get("broker_cpu_us_per_mb"), ks.fixed(0)),
                ks.fmt_spread(m.get("bytes_per_value"), ks.fixed(3)), ks.fixed(3)(ratio),
                _versus_codec(m.get("bytes_per_value"), ratio, payload),
                ks.fmt_spread(_per_value(m.get("broker_log_bytes_per_mb")), ks.fixed(3)),
                _p99_cell(e2e.get((payload, c))), MARKS.get(marks.get(c), "")])
        lines += ["## Payload %s" % label, "",
                  "Closed-loop Produce/send rows (records/s, CPU, bytes) and EndToEnd at 2,000 records/s (p99).", ""]
        head = ["codec", "records/s", "client CPU µs/MiB", "broker CPU µs/MiB", "bytes / value byte",
                "codec ratio", "vs codec", "broker log bytes / value byte", "end-to-end p99 µs", "Pareto"]
        lines += text.table(head, rows, markdown=True).splitlines() + [""]
    lines += _recompression(recompress, broker_measured)
    lines += ["Files: `produce.json`, `end_to_end.json` (every round, each tagged with its round as kbench_process), "
              "`codec.json`, `raw/`, `corpus.txt`, `compression-cost.png`, `commands.txt`, `logs/`.", ""]
    ks.write_report(directory, lines)
    _chart(directory, produce, payloads, codecs, marks_by_payload)


def _recompression(rows, measured):
    out = ["## Broker recompression (KAFKA-15418)", ""]
    if not any(topic != "producer" for _, topic in rows):
        return out + ["Not run: it needs a broker started by the scenario (its CPU is what it shows).", ""]
    out += ["Producer codec into a topic whose compression.type is `producer` (the broker keeps "
            "the batches) or `zstd` (it decompresses, validates and recompresses every batch). "
            "Payload az, 1000-byte records; medians over rounds [lowest–highest]."
            + ("" if measured else " Broker cost was not measured."), ""]
    table = []
    for producer in sorted({p for p, _ in rows}, key=_codec_order):
        keep = rows.get((producer, "producer"), {}).get("broker_cpu_us_per_mb")
        for topic in ("producer", "zstd"):
            m = rows.get((producer, topic))
            if m is None:
                continue
            cpu = m.get("broker_cpu_us_per_mb")
            times = "%.2f" % (cpu.median / keep.median) if cpu and keep and keep.median else "—"
            table.append([producer, topic, ks.fmt_spread(m.get("items_per_second")),
                          ks.fmt_spread(cpu, ks.fixed(0)),
                          ks.fmt_spread(_per_value(m.get("broker_log_bytes_per_mb")), ks.fixed(3)),
                          times])
    return out + text.table(["producer codec", "topic compression.type", "records/s",
                              "broker CPU µs/MiB", "broker log bytes / value byte",
                              "broker CPU × keep (medians)"], table, markdown=True).splitlines() + [""]


def _codec_order(label):
    order = [c["name"] for c in facts.describe()["codecs"]]
    name, _, level = label.partition(":")
    return (order.index(name) if name in order else len(order), int(level) if level.lstrip("-").isdigit() else 0)


def _chart(directory, produce, payloads, codecs, marks_by_payload):
    plt = ks.plt_module()
    n = len(payloads)
    fig, axes = plt.subplots(1, n, figsize=(4.2 * n, 4), squeeze=False)
    for ax, payload in zip(axes[0], payloads):
        marks = marks_by_payload.get(payload, {})
        for c in codecs:
            m = produce.get((payload, c))
            x, y = (m.get("bytes_per_value"), m.get("cpu_us_per_mb")) if m else (None, None)
            if x is None or y is None:
                continue
            ax.errorbar([x.median], [y.median], xerr=ks.error_bars([x]), yerr=ks.error_bars([y]),
                        fmt="o", ms=4, color=COLORS.get(marks.get(c), "tab:blue"), capsize=2)
            ax.annotate(c, (x.median, y.median), fontsize=7, xytext=(3, 3), textcoords="offset points")
        ax.set_xlabel("bytes on the wire per value byte", fontsize=8)
        ax.set_ylabel("client CPU µs per MiB", fontsize=8)
        ax.set_title(payload, fontsize=9)
        ax.grid(alpha=0.3)
    fig.suptitle("Compression cost: client CPU against bytes on the wire, ranges over rounds "
                 "(red: Pareto front beyond the ranges; orange: undecided)", fontsize=9)
    ks.save_chart(fig, directory, "compression-cost.png")


if __name__ == "__main__":
    sys.exit(ks.report_main(report))
