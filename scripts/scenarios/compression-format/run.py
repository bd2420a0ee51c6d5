"""compression-format — seed 003 (KAFKA-3565): producer throughput with compression, version
A against version B, and the cases where A wins, decided with statistics.
Run through scripts/scenario; see README.md beside this file."""

import contextlib
import glob
import os
import re
import subprocess

from kbench import shell
from kbench.cli import die, info
from kbench.scenario_runner import Scenario, kafka_version

# The last broker release that still accepts message formats v0/v1.
FORMAT_BROKER = "3.9.1"
ALPHA, THRESHOLD = "0.01", "2"
SPECS = "librdkafka:VER, broker:VER or format:v1|v2"


def usage():
    return """Usage: scripts/scenario compression-format [--scale small|full] [--out DIR] [--bootstrap HOST:PORT]
                                          [--tiny] [--a SPEC] [--b SPEC]

Seed 003 (KAFKA-3565): max.in.flight {1, 5} x valueBound {500, 5000, 50000} x linger.ms
{0, 10, 100} x record size {100, 1000} x codec {gzip, snappy, lz4, zstd}, acks=1, run for
A and B in alternation (A first in odd repetitions, B first in even ones), then
scripts/compare A.json B.json (alpha %(alpha)s, threshold %(threshold)s %%) decides which
differences are real. The report lists, as the original did, every case where A beats B.

SPEC (A and B must be of the same kind):
  librdkafka:VER   client library VER (scripts/librdkafka build VER; 'system' or the
                   system's version = Debian's library), one broker (Kafka %(kafka)s)
  broker:VER       one broker of Kafka VER per side (two clusters; no --bootstrap)
  format:v1|v2     message format on one Kafka %(format)s broker: v1 through
                   api.version.request=false, broker.version.fallback=0.10.0; zstd
                   needs v2 and is left out of format comparisons
Default: --a librdkafka:system (2.0.2) --b librdkafka:2.15.1.

  small   max.in.flight {1, 5} x valueBound {500, 50000} x linger {0, 10} x size
          {100, 1000} x 4 codecs, 5 repetitions per side (~10 minutes on 2 cores)
  full    the whole matrix, 8 repetitions per side (the original ran 8), 1M records per
          repetition (hours)
  --tiny  max.in.flight 5, valueBound 500, linger 0, size 100, gzip and lz4, 5
          repetitions of 2,000 records (CI)

Writes A.json, B.json, verdict.json, raw/, report.md, compression-format.png.
""" % {"alpha": ALPHA, "threshold": THRESHOLD, "kafka": kafka_version(), "format": FORMAT_BROKER}


def kind_of(spec):
    return spec.split(":", 1)[0]


def value_of(spec):
    return spec.split(":", 1)[1]


def check_spec(spec):
    kind, _, value = spec.partition(":")
    if not value:
        die("bad SPEC '%s' (%s)" % (spec, SPECS))
    if kind in ("librdkafka", "broker"):
        if not re.fullmatch(r"system|[0-9]+\.[0-9]+\.[0-9]+", value):
            die("bad version in '%s'" % spec)
    elif kind == "format":
        if value not in ("v1", "v2"):
            die("format must be v1 or v2, got '%s'" % spec)
    else:
        die("unknown SPEC kind '%s' in '%s' (librdkafka, broker or format)" % (kind, spec))


def records_for(scn, size):
    """Records per repetition of one record size."""
    if scn.tiny:
        return 2000
    if scn.scale == "full":
        return 1000000
    # ~1 s per gzip case on 2 cores; gzip is the slowest codec by far.
    return 5000 if size >= 1000 else 20000


@contextlib.contextmanager
def environ(**values):
    """VALUES in the environment of the commands run meanwhile (bash's `VAR=... command`)."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def main(argv):
    with Scenario("compression-format", __file__) as scn:
        specs = {"A": "librdkafka:system", "B": "librdkafka:2.15.1"}

        def extra_arg(rest):
            key, eq, value = rest[0].partition("=")
            if key not in ("--a", "--b"):
                return 0
            if not eq and len(rest) < 2:
                die("%s needs a SPEC (%s)" % (rest[0], SPECS))
            specs[key[2:].upper()] = value if eq else rest[1]
            return 1 if eq else 2

        def check():
            # Before anything is made.
            check_spec(specs["A"])
            check_spec(specs["B"])
            kind = kind_of(specs["A"])
            if kind_of(specs["B"]) != kind:
                die("--a %s and --b %s compare different things; use two SPECs of one kind"
                    % (specs["A"], specs["B"]))
            if specs["A"] == specs["B"]:
                die("--a and --b are both %s" % specs["A"])
            if kind == "broker" and scn.bootstrap:
                die("broker:VER comparisons start one cluster per version; --bootstrap cannot be "
                    "used with them")
            if kind == "broker" and "system" in (value_of(specs["A"]), value_of(specs["B"])):
                die("broker:VER needs a Kafka release number, e.g. broker:3.9.1")

        scn.parse(argv, usage, extra_arg, check)
        kind = kind_of(specs["A"])
        if scn.tiny:
            mifs, vbs, lingers, sizes, codecs, reps = [5], [500], [0], [100], ["gzip", "lz4"], 5
        elif scn.scale == "full":
            mifs, vbs, lingers, sizes = [1, 5], [500, 5000, 50000], [0, 10, 100], [100, 1000]
            codecs, reps = ["gzip", "snappy", "lz4", "zstd"], 8
        else:
            mifs, vbs, lingers, sizes = [1, 5], [500, 50000], [0, 10], [100, 1000]
            codecs, reps = ["gzip", "snappy", "lz4", "zstd"], 5
        if kind == "format":
            codecs = [c for c in codecs if c != "zstd"]
            info("format comparison: zstd needs format v2 and is left out")

        # Per side: LD_LIBRARY_PATH (empty: the system's library) and kbench's extra arguments.
        lib, xargs = {}, {}
        for side in ("A", "B"):
            value = value_of(specs[side])
            lib[side], xargs[side] = "", []
            if kind == "librdkafka" and value != "system":
                info("side %s: librdkafka %s (scripts/librdkafka build %s; ~1.5 min if not cached)"
                     % (side, value, value))
                scn.note("scripts/librdkafka build %s" % value)
                log = "%s/logs/librdkafka-%s.log" % (scn.out, value)
                with open(log, "ab") as f:
                    proc = scn.run([scn.script("librdkafka"), "build", value], stdout=subprocess.PIPE, stderr=f)
                if proc.returncode != 0:
                    die("scripts/librdkafka build %s failed (log: %s)" % (value, log), 1)
                lib[side] = proc.stdout.decode().rstrip("\n")
            elif kind == "format" and value == "v1":
                xargs[side] = ["-X", "api.version.request=false", "-X", "broker.version.fallback=0.10.0"]

        # Clusters: one shared, or (broker:VER) one per side.
        boot, bver = {}, {}
        if kind == "broker":
            for side in ("A", "B"):
                bver[side] = value_of(specs[side])
                boot[side], _ = scn.cluster_start(side, 1, bver[side])
        else:
            if scn.bootstrap:
                boot["A"], bver["A"] = scn.bootstrap, os.environ.get("KBENCH_BROKER_VERSION") or "unknown"
            else:
                version = FORMAT_BROKER if kind == "format" else kafka_version()
                boot["A"], _ = scn.cluster_start("shared", 1, version)
                bver["A"] = version
            boot["B"], bver["B"] = boot["A"], bver["A"]
        os.makedirs(scn.out + "/raw", exist_ok=True)

        produce = "acks=1,codec=%s,record_bytes=%%d,payload=%s,linger_ms=%s,max_in_flight=%s" % (
            "|".join(codecs), "|".join("value_bound:%d" % v for v in vbs),
            "|".join(map(str, lingers)), "|".join(map(str, mifs)))

        def run_side(side, rep, size):
            """One repetition of every case of one record size on one side."""
            with environ(LD_LIBRARY_PATH=lib[side], KBENCH_BROKER_VERSION=bver[side]):
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
            scn.merge("%s/%s.json" % (scn.out, side),
                      sorted(glob.glob(glob.escape(scn.out) + "/raw/%s-r*.json" % side)), side)
        a, b, verdict = (scn.out + "/A.json", scn.out + "/B.json", scn.out + "/verdict.json")
        compare = ["--alpha", ALPHA, "--threshold", THRESHOLD, "--accept-inconclusive", "--out", verdict]
        scn.note(" ".join(["scripts/compare", a, b] + compare))
        with open(scn.out + "/compare.txt", "wb") as f:
            rc = scn.run([scn.script("compare"), a, b] + compare, stdout=f, stderr=subprocess.STDOUT).returncode
        # 1 only says that B is slower somewhere, and an inconclusive case is reported as such:
        # findings here, not failures. 3 (a benchmark errored or is missing) and 2 are failures.
        if rc not in (0, 1):
            shell.show_log(scn.out + "/compare.txt")
            die("scripts/compare failed", 1)

        records = "%d at 100 B" % records_for(scn, 100)
        if 1000 in sizes:
            records += ", %d at 1000 B" % records_for(scn, 1000)
        scn.report("--label-a", specs["A"], "--label-b", specs["B"],
                   "--note", "Records per repetition: %s; acks=1, 2 partitions, one kbench process per "
                   "side, repetition and record size; scripts/compare's full table is in compare.txt."
                   % records)
