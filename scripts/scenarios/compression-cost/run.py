"""compression-cost — what each codec costs a producer and the broker, per payload: client
and broker CPU per MiB, bytes on the wire per value byte, records/s and end-to-end p99 for
none, gzip 1/6, snappy, lz4 1/9 and zstd 1/3/9 on payloads az, value_bound:500, repeated and
a text corpus (the Linux kernel's documentation, or --corpus FILE), and what a topic whose
compression.type differs from the producer's costs the broker (KAFKA-15418). On one broker
started here; with --bootstrap, broker CPU is not measured."""

import glob
import os
import shutil

from kbench import cli, proc
from kbench.cli import die, info
from kbench.scenario_runner import Scenario

# The default corpus: the Linux kernel's documentation, as the reStructuredText sources that
# Debian's linux-doc package ships beside its HTML (about 24 MB of English technical prose).
DOC_SOURCES_GLOB = "/usr/share/doc/linux-doc-*/html/_sources"


def add_arguments(parser):
    parser.add_argument("--corpus", metavar="FILE", default="",
                        help="your own records instead of the kernel's documentation, one per line, "
                             "at least 16 MiB of them")


def size(path):
    """(lines, bytes) of PATH, as wc -l and wc -c count them."""
    with open(path, "rb") as f:
        data = f.read()
    return data.count(b"\n"), len(data)


def write_corpus(src, out):
    """OUT: records of at least 1000 bytes, one per line (kbench's file: payload splits on
    newlines), of the non-blank lines of the .txt files under SRC in path order."""
    paths = sorted(os.path.join(d, f) for d, _, fs in os.walk(src) for f in fs if f.endswith(".txt"))
    with open(out, "w", encoding="utf-8") as f:
        record, size = [], 0
        for path in paths:
            with open(path, encoding="utf-8", errors="replace") as doc:
                for line in doc:
                    line = line.rstrip()
                    if not line.strip():
                        continue
                    record.append(line)
                    size += len(line.encode("utf-8")) + 1
                    if size >= 1000:
                        f.write(" ".join(record) + "\n")
                        record, size = [], 0
        if record:
            f.write(" ".join(record) + "\n")


def make_corpus(scn, corpus_file):
    """OUT/corpus.txt (the user's file, or write_corpus's of the documentation); where it comes from."""
    corpus = scn.out + "/corpus.txt"
    if corpus_file:
        if not (os.path.isfile(corpus_file) and os.access(corpus_file, os.R_OK)):
            die("--corpus: cannot read '%s'" % corpus_file)
        try:
            shutil.copy(corpus_file, corpus)
        except OSError:
            die("could not copy the corpus", 1)
        return "%s (--corpus)" % os.path.basename(corpus_file)
    sources = sorted(glob.glob(DOC_SOURCES_GLOB))
    if not sources:
        die("the text corpus is the Linux kernel's documentation of Debian's linux-doc package, which "
            "is not installed (scripts/setup installs it; or apt-get install linux-doc), or give --corpus FILE")
    src = sources[-1]
    pkg = src[len("/usr/share/doc/"):].split("/")[0]
    version = proc.output(["dpkg-query", "-W", "-f=${Version}", pkg]) or "?"
    try:
        write_corpus(src, corpus)
    except OSError as e:
        die("could not build the corpus: %s" % e, 1)
    texts = sum(n.endswith(".txt") for _, dirs, files in os.walk(src) for n in dirs + files)
    return ("the Linux kernel's documentation: %d reStructuredText sources of Debian's %s %s (GPL-2; some "
            "documents GFDL-1.1, MIT or BSD-2-Clause by their SPDX lines)" % (texts, pkg, version))


def main(args):
    if any(c in args.out for c in ",|="):
        die("--out must not contain ',', '|' or '=' (the corpus path goes into a row spec)")
    with Scenario(args, __file__) as scn:
        codecs = "none|gzip:1|gzip:6|snappy|lz4:1|lz4:9|zstd:1|zstd:3|zstd:9"
        payloads = "az|value_bound:500|repeated|file:%s/corpus.txt" % scn.out
        rounds, window, warmup = 2, 2, 1
        if scn.tiny:
            codecs, payloads, rounds, window = "none|lz4:1", "az", 1, 1
        elif scn.scale == "full":
            rounds, window, warmup = 5, 10, 2
        if any(c in scn.out for c in ",|="):
            die("the results folder %s holds ',', '|' or '=' (the corpus path goes into a row spec)" % scn.out)

        corpus_origin = ""
        if "file:" in payloads:
            corpus_origin = make_corpus(scn, args.corpus)
            info("corpus: %d records, %d bytes, %s" % (*size(scn.out + "/corpus.txt"), corpus_origin))

        common = ["--benchmark_min_time=0", "--window-seconds=%d" % window, "--warmup-seconds=%d" % warmup]
        families = {
            "produce": ["--benchmark_filter=^Produce/send/",
                        "--produce=acks=1,record_bytes=1000,codec=%s,payload=%s" % (codecs, payloads)],
            "end_to_end": ["--benchmark_filter=^EndToEnd/",
                           "--end-to-end=acks=1,record_bytes=1000,rate=2000,codec=%s,payload=%s"
                           % (codecs, payloads)]}

        # A corpus too small for the batches is refused here, in kbench's words, before a broker starts.
        for rows in families.values():
            cli.kbench_rows(scn.bin, rows)

        # The codecs' own ratios on the same payloads, in 1 MiB batches (compression only: no broker).
        codec_json = scn.out + "/raw/codec.json"
        os.makedirs(scn.out + "/raw", exist_ok=True)
        codec_args = ["--benchmark_min_time=0", "--payload=" + payloads.replace("|", ","), "--record-bytes=1000",
                      "--codec=" + codecs.replace("|", ","),
                      "--benchmark_filter=^Codec/compress/.*/batch_bytes:1048576$"]
        if not scn.run_kbench(codec_json, codec_args):
            die("the Codec family's run failed (see %s/logs/codec.log)" % scn.out, 1)
        shutil.copy(codec_json, scn.out + "/codec.json")

        broker_dir = "" if scn.bootstrap else scn.out + "/kafka-main"
        if broker_dir:
            scn.local_cluster("main", 1)
            # Recompression shows in the broker's CPU, measured only on a cluster started here. Into
            # a topic that keeps the producer's batches is the first spec's az row already.
            families["produce"].append("--produce=acks=1,record_bytes=1000,payload=az,codec=lz4:1|none,"
                                       "topic_codec=zstd")
        common += ["--bootstrap=" + scn.bootstrap] + (["--broker-dir=" + broker_dir] if broker_dir else [])

        for r in range(1, rounds + 1):
            # Alternate which family runs first, so that neither always meets a fresher broker.
            order = ["produce", "end_to_end"] if r % 2 else ["end_to_end", "produce"]
            for family in order:
                scn.try_kbench("%s-round%d" % (family, r), "%s/round%d" % (family, r),
                               "%s, round %d" % (family, r), common + families[family])
            info("round %d of %d done (%d s so far)" % (r, rounds, scn.elapsed()))

        for family in families:
            if not scn.merge_rounds(family, family + "-round*.json", "the %s results" % family):
                die("every %s run failed (see %s/logs/)" % (family, scn.out), 1)

        scn.notes = ["%d round(s), Produce and EndToEnd alternating first; windows of %d s after %d s of "
                     "warm-up; 1000-byte records, acks=1." % (rounds, window, warmup)]
        if corpus_origin:
            scn.notes.append("The corpus (payload file:corpus.txt) is %d records, %d bytes: %s."
                             % (*size(scn.out + "/corpus.txt"), corpus_origin))
        if not broker_dir:
            scn.notes.append("The cluster at %s was not started here: broker CPU and log bytes are not "
                             "measured, and the recompression rows did not run." % scn.bootstrap)
        scn.finish(rounds * 2, "runs", "missing")
