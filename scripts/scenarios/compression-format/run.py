"""compression-format — seed 003 (KAFKA-3565): producer throughput with compression, version
A against version B (--a, --b: librdkafka:VER, broker:VER or format:v1|v2, both of one kind),
run in alternation; compare (alpha 0.01, threshold 2 %) decides which differences are real,
and the report lists, as the original did, every case where A beats B."""

import argparse
import contextlib
import os
import re

from kbench import facts
from kbench.cli import die, info
from kbench.commands import compare, librdkafka
from kbench.scenario_runner import Scenario, kafka_version

# The last broker release that still accepts message formats v0/v1.
FORMAT_BROKER = "3.9.1"
ALPHA, THRESHOLD = 0.01, 2.0
SPECS = "librdkafka:VER, broker:VER or format:v1|v2"
VERSION = (r"system|[0-9]+\.[0-9]+\.[0-9]+", "bad version in '%s'")
KINDS = {"librdkafka": VERSION, "broker": VERSION, "format": (r"v1|v2", "format must be v1 or v2, got '%s'")}


def spec(text):
    """A SPEC (argparse type): (kind, value)."""
    kind, _, value = text.partition(":")
    if not value:
        raise argparse.ArgumentTypeError("bad SPEC '%s' (%s)" % (text, SPECS))
    if kind not in KINDS:
        raise argparse.ArgumentTypeError("unknown SPEC kind '%s' in '%s' (librdkafka, broker or format)" % (kind, text))
    pattern, bad = KINDS[kind]
    if not re.fullmatch(pattern, value):
        raise argparse.ArgumentTypeError(bad % text)
    return kind, value


def add_arguments(parser):
    parser.add_argument("--a", metavar="SPEC", type=spec, default=("librdkafka", "system"),
                        help="side A (default librdkafka:system, Debian's 2.0.2)")
    parser.add_argument("--b", metavar="SPEC", type=spec, default=("librdkafka", "2.15.1"),
                        help="side B (default librdkafka:2.15.1)")


def check(args):
    """The two SPECs together, before anything is made."""
    (kind, a), (kind_b, b) = args.a, args.b
    if kind_b != kind:
        die("--a %s:%s and --b %s:%s compare different things; use two SPECs of one kind" % (*args.a, *args.b))
    if a == b:
        die("--a and --b are both %s:%s" % args.a)
    if kind == "broker" and args.bootstrap:
        die("broker:VER comparisons start one cluster per version; --bootstrap cannot be used with them")
    if kind == "broker" and "system" in (a, b):
        die("broker:VER needs a Kafka release number, e.g. broker:3.9.1")


def records_for(scn, size):
    """Records per repetition of one record size."""
    if scn.tiny:
        return 2000
    if scn.scale == "full":
        return 1000000
    # ~1 s per gzip case on 2 cores; gzip is the slowest codec by far.
    return 5000 if size >= 1000 else 20000


def main(args):
    check(args)
    with Scenario(args, __file__) as scn:
        specs = {"A": args.a, "B": args.b}
        labels = {side: "%s:%s" % specs[side] for side in specs}
        kind = specs["A"][0]
        if scn.tiny:
            mifs, vbs, lingers, sizes, codecs, reps = [5], [500], [0], [100], ["gzip", "lz4"], 5
        elif scn.scale == "full":
            mifs, vbs, lingers, sizes = [1, 5], [500, 5000, 50000], [0, 10, 100], [100, 1000]
            codecs, reps = facts.librdkafka_codecs(), 8
        else:
            mifs, vbs, lingers, sizes = [1, 5], [500, 50000], [0, 10], [100, 1000]
            codecs, reps = facts.librdkafka_codecs(), 5
        if kind == "format":
            codecs = [c for c in codecs if c != "zstd"]
            info("format comparison: zstd needs format v2 and is left out")

        # Per side: LD_LIBRARY_PATH (empty: the system's library) and kbench's extra arguments.
        lib, xargs = {}, {}
        for side in ("A", "B"):
            value = specs[side][1]
            lib[side], xargs[side] = "", []
            if kind == "librdkafka" and value != "system":
                info("side %s: librdkafka %s (scripts/librdkafka build %s; ~1.5 min if not cached)"
                     % (side, value, value))
                scn.note("scripts/librdkafka build %s" % value)
                try:
                    lib[side] = librdkafka.build(value)
                except librdkafka.BuildError as e:
                    die("building librdkafka %s failed: %s" % (value, e), getattr(e, "status", 1))
            elif kind == "format" and value == "v1":
                xargs[side] = ["-X", "api.version.request=false", "-X", "broker.version.fallback=0.10.0"]

        # Clusters: one shared, or (broker:VER) one per side.
        if kind == "broker":
            bver = {side: specs[side][1] for side in specs}
            boot = {side: scn.cluster_start(side, 1, bver[side])[0] for side in specs}
        else:
            if scn.bootstrap:
                bootstrap, version = scn.bootstrap, os.environ.get("KBENCH_BROKER_VERSION") or "unknown"
            else:
                version = FORMAT_BROKER if kind == "format" else kafka_version()
                bootstrap = scn.cluster_start("shared", 1, version)[0]
            boot, bver = dict.fromkeys(specs, bootstrap), dict.fromkeys(specs, version)
        os.makedirs(scn.out + "/raw", exist_ok=True)

        produce = "acks=1,codec=%s,record_bytes=%%d,payload=%s,linger_ms=%s,max_in_flight=%s" % (
            "|".join(codecs), "|".join("value_bound:%d" % v for v in vbs),
            "|".join(map(str, lingers)), "|".join(map(str, mifs)))

        def run_side(side, rep, size):
            """One repetition of every case of one record size on one side."""
            # The side's library and broker, in the environment the run (and commands.txt) sees.
            os.environ.update(LD_LIBRARY_PATH=lib[side], KBENCH_BROKER_VERSION=bver[side])
            scn.kbench("%s/raw/%s-r%d-s%d.json" % (scn.out, side, rep, size),
                       ["--bootstrap=" + boot[side], "--produce", produce % size,
                        "--records-per-iteration=%d" % records_for(scn, size),
                        "--benchmark_filter=^Produce/", "--benchmark_min_time=0"] + xargs[side])

        for rep in range(1, reps + 1):
            # Alternate which side goes first so that a slow drift of the machine hits both alike.
            order = ("B", "A") if rep % 2 == 0 else ("A", "B")
            for size in sizes:
                for side in order:
                    run_side(side, rep, size)
            info("repetition %d of %d done (%d s so far)" % (rep, reps, scn.elapsed()))

        for side in ("A", "B"):
            scn.merge_rounds(side, side + "-r*.json", side)
        a, b, verdict = (scn.out + "/A.json", scn.out + "/B.json", scn.out + "/verdict.json")
        scn.note("scripts/compare %s %s --alpha %s --threshold %s --accept-inconclusive --out %s"
                 % (a, b, ALPHA, THRESHOLD, verdict))
        with open(scn.out + "/compare.txt", "w") as f, contextlib.redirect_stdout(f):
            judged = compare.judge([a], [b], alpha=ALPHA, threshold=THRESHOLD)
            compare.write(judged, json_path=verdict)
        # 1 only says that B is slower somewhere, and an inconclusive case is reported as such:
        # findings here, not failures. 3 (a benchmark errored or is missing) is a failure.
        if compare.exit_code(judged, accept_inconclusive=True) not in (0, 1):
            die("compare could not judge A against B (see %s/compare.txt)" % scn.out, 1)

        records = ", ".join("%d at %d B" % (records_for(scn, size), size) for size in sizes)
        scn.report("--label-a", labels["A"], "--label-b", labels["B"],
                   "--note", "Records per repetition: %s; acks=1, 2 partitions, one kbench process per "
                   "side, repetition and record size; scripts/compare's full table is in compare.txt."
                   % records)
