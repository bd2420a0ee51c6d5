"""scripts/vs-perf-test: kbench's Produce benchmark and Apache Kafka's own
kafka-producer-perf-test with the same settings, treated alike. Users trust the tool; this
shows where kbench's numbers stand against it, and that kbench's driver is not the bottleneck.

Interleaved rounds of both on fresh topics (a local cluster from scripts/kafka unless
--bootstrap), every round's raw output kept; the comparison itself is
kbench.perf_test_format's.

    python -m kbench.commands.vs_perf_test [OPTIONS]   (USAGE below)
"""

import os
import re
import signal
import subprocess
import sys
import time

import kbench
from kbench import cli, shell
from kbench.perf_test_format import InputError, vs_summary

USAGE = """\
Usage: scripts/vs-perf-test [--bootstrap HOST:PORT] [--num-records N] [--warmup-records W]
                            [--record-size S] [--throughput T] [--acks A]
                            [--producer-props k=v ...] [--partitions P]
                            [--replication-factor R] [--rounds R] [--kafka-version V]
                            [--out DIR]

Runs kafka-producer-perf-test (Kafka's tool, from the broker's own Maven artifacts) and
kbench's Produce benchmark (librdkafka, one send thread) with the same settings, in
interleaved rounds (perf-test first in odd rounds, kbench first in even ones), each on a
fresh topic of the same layout. Both warm up alike: W records first (the tool's
--warmup-records, kbench's 'warmup'), then N measured records (the tool's steady-state
line). Prints the per-field medians as two lines in kafka-producer-perf-test's format,
a ratio line, each round's records/sec, and both tools' interval lines after the warm-up
(5-second lines on both sides: median, range, coefficient of variation).

Options (named after kafka-producer-perf-test's):
  --bootstrap H:P        an existing cluster (default: start a local 1-broker cluster with
                         scripts/kafka in DIR/kafka, on free ports, stopped at exit)
  --num-records N        measured records per round and tool, after the warm-up (default
                         5000000: a steady state, not a burst against a JVM start-up)
  --warmup-records W     warm-up records before them, on both (default N/10; at least 1:
                         kbench always connects and checks a first delivery before timing, so
                         the tool gets a warm-up too)
  --record-size S        value bytes, A-Z payload on both sides (default 100)
  --throughput T         records/s cap; -1 = none (default -1); kbench's 'rate'
  --acks A               0, 1, all or -1 (default 1)
  --producer-props k=v ...  producer settings for both (until the next --option).
                         Mapped to kbench: acks, batch.size, linger.ms, compression.type,
                         compression.<codec>.level, enable.idempotence,
                         max.in.flight.requests.per.connection, bootstrap.servers,
                         buffer.memory (librdkafka: queue.buffering.max.kbytes, and
                         queue.buffering.max.messages = buffer.memory / record size, so
                         neither cap binds before the Java client's); any other key goes to
                         librdkafka as -X k=v (and must be a setting librdkafka knows: checked
                         before anything runs). Set on both unless given: batch.size=16384,
                         linger.ms=5 and buffer.memory=33554432 (the Java producer's
                         defaults), compression.type=none, enable.idempotence=false,
                         max.in.flight.requests.per.connection=5.
  --partitions P         topic partitions (default 2)
  --replication-factor R topic replication (default 1)
  --rounds R             rounds of each tool (default 3; fewer is reported as no verdict)
  --kafka-version V      Kafka release for the local cluster and the tool (default:
                         scripts/kafka's; 4.0 or later, for --warmup-records)
  --out DIR              keep every round's raw output here (default:
                         results/runs/<YYYYmmdd-HHMMSS>-<git sha>-vs-perf-test/)
  -h, --help             this help

Environment: KBENCH_BIN (default build/kbench).
What still differs: kbench's latency starts at the record's intended send time under
--throughput (no coordinated omission), the tool's at the actual send(); kbench cycles
8192 pre-generated A-Z values, the tool draws new letters per record; kbench flushes and
checks the warm-up before its measured records start, the tool runs straight on.
Exit status: 0 ok, 1 a run failed, 2 bad usage.
"""

# option -> (its key, what its value is, for "needs ..."); numbers are checked after parsing.
VALUE_OPTIONS = {"--bootstrap": ("bootstrap", "HOST:PORT"), "--bootstrap-server": ("bootstrap", "HOST:PORT"),
                 "--acks": ("acks", "0, 1 or all"), "--kafka-version": ("kafka_version", "a version"),
                 "--out": ("out", "a directory")}
VALUE_OPTIONS.update((o, (o[2:].replace("-", "_"), "a number"))
                     for o in ("--num-records", "--warmup-records", "--record-size", "--throughput",
                               "--partitions", "--replication-factor", "--rounds"))
DEFAULTS = dict(bootstrap="", num_records="5000000", warmup_records="", record_size="100", throughput="-1",
                acks="", partitions="2", replication_factor="1", rounds="3", kafka_version="", out="")
# The Java producer's defaults (--producer-props override them), made explicit so both
# clients run the same configuration whatever their own defaults are.
JAVA_DEFAULTS = {"acks": "1", "batch.size": "16384", "linger.ms": "5", "compression.type": "none",
                 "enable.idempotence": "false", "max.in.flight.requests.per.connection": "5",
                 "buffer.memory": "33554432"}
LEVEL_KEY = re.compile(r"compression\.([a-z0-9]+)\.level")
MAX_RECORDS = 2000000000


def positive(v):
    return cli.is_uint(v) and int(v) > 0


def parse(argv):
    """The options as a dict (numbers as given) and the --producer-props pairs."""
    o, props, i = dict(DEFAULTS), [], 0
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            print(USAGE, end="")
            sys.exit(0)
        if a in VALUE_OPTIONS:
            key, what = VALUE_OPTIONS[a]
            if i + 1 >= len(argv):
                cli.die("%s needs %s" % (a, what))
            o[key], i = argv[i + 1], i + 2
        elif a in ("--producer-props", "--command-property"):
            i += 1
            if i >= len(argv) or argv[i].startswith("--"):
                cli.die("--producer-props needs at least one key=value")
            while i < len(argv) and not argv[i].startswith("--"):
                if not re.fullmatch(r"[A-Za-z0-9._-]+=.+", argv[i], re.S):
                    cli.die("--producer-props: '%s' is not key=value" % argv[i])
                props.append(argv[i])
                i += 1
        else:
            cli.die("unknown option '%s' (see --help)" % a)
    return o, props


def check_numbers(o):
    """The numeric options as ints (warmup_records defaulted), or exit 2."""
    for key in ("num_records", "record_size"):
        if not positive(o[key]):
            cli.die("--%s must be a positive integer, not '%s'" % (key.replace("_", "-"), o[key]))
    if o["throughput"] != "-1" and not positive(o["throughput"]):
        cli.die("--throughput must be -1 or a positive integer, not '%s'" % o["throughput"])
    for key in ("partitions", "replication_factor"):
        if not positive(o[key]):
            cli.die("--%s must be a positive integer" % key.replace("_", "-"))
    if not (cli.is_uint(o["rounds"]) and 0 < int(o["rounds"]) <= 50):
        cli.die("--rounds must be 1..50")
    if int(o["num_records"]) > MAX_RECORDS:
        cli.die("--num-records is at most 2000000000")
    if not o["warmup_records"]:
        o["warmup_records"] = str(max(int(o["num_records"]) // 10, 1))
    if not (cli.is_uint(o["warmup_records"]) and 1 <= int(o["warmup_records"]) <= MAX_RECORDS):
        cli.die("--warmup-records must be 1..2000000000 (kbench always sends one before timing), not '%s'"
                % o["warmup_records"])
    for key in ("num_records", "warmup_records", "record_size", "throughput", "partitions",
                "replication_factor", "rounds"):
        o[key] = int(o[key])


def settings(o, props):
    """Both tools' producer settings, key -> value (the Java defaults, then --producer-props
    and --acks), and the keys kbench's spec does not map (they go to librdkafka as -X)."""
    setting, extra_keys = dict(JAVA_DEFAULTS), []
    for kv in props:
        k, v = kv.split("=", 1)
        if "," in v or "|" in v:
            cli.die("--producer-props: '%s': values with ',' or '|' are not supported" % kv)
        if k == "bootstrap.servers":
            if o["bootstrap"] and o["bootstrap"] != v:
                cli.die("--bootstrap and bootstrap.servers differ")
            o["bootstrap"] = v
            continue
        if k not in setting:
            extra_keys.append(k)
        setting[k] = v
    if o["acks"]:
        for kv in props:
            k, v = kv.split("=", 1)
            if k == "acks" and v != o["acks"]:
                cli.die("--acks %s and --producer-props %s differ" % (o["acks"], kv))
        setting["acks"] = o["acks"]
    if setting["acks"] == "-1":
        setting["acks"] = "all"
    elif setting["acks"] not in ("0", "1", "all"):
        cli.die("acks must be 0, 1, all or -1, not '%s'" % setting["acks"])
    if setting["compression.type"] not in ("none", "gzip", "snappy", "lz4", "zstd"):
        cli.die("compression.type must be none, gzip, snappy, lz4 or zstd")
    for k in setting:
        m = LEVEL_KEY.fullmatch(k)
        if m and m.group(1) != setting["compression.type"]:
            cli.die("%s given but compression.type is %s" % (k, setting["compression.type"]))
    for k in ("batch.size", "linger.ms", "max.in.flight.requests.per.connection", "buffer.memory"):
        if not cli.is_uint(setting[k]):
            cli.die("%s must be a non-negative integer, not '%s'" % (k, setting[k]))
    if setting["enable.idempotence"] not in ("true", "false"):
        cli.die("enable.idempotence must be true or false")
    return setting, extra_keys


def kbench_args(o, setting, extra_keys):
    """kbench's --produce spec and -X settings for the same configuration as the tool's."""
    codec = setting["compression.type"]
    level = next((setting[k] for k in setting if LEVEL_KEY.fullmatch(k)), "")
    spec = ("acks=%s,codec=%s%s,record_bytes=%d,payload=az,batch_bytes=%s,linger_ms=%s,max_in_flight=%s,"
            "idempotence=%s,partitions=%d,replication=%d" % (
                setting["acks"], codec, ",level=" + level if level else "", o["record_size"],
                setting["batch.size"], setting["linger.ms"], setting["max.in.flight.requests.per.connection"],
                setting["enable.idempotence"], o["partitions"], o["replication_factor"]))
    # The same warm-up as the tool's --warmup-records; one send thread, one producer, as the tool.
    spec += ",warmup=%d,threads=1,producers=1" % o["warmup_records"]
    if o["throughput"] > 0:
        spec += ",rate=%d" % o["throughput"]
    # The client-side buffer bounds how many records wait unsent, hence the latency of an
    # unthrottled run (queue depth / throughput). The Java producer bounds bytes only
    # (buffer.memory); librdkafka bounds bytes (default 1 GiB, far deeper) and messages
    # (default 100,000: for 100-byte records a third of what 32 MiB holds), so both of
    # librdkafka's caps are set to what buffer.memory holds, unless given explicitly.
    buffer_memory = int(setting["buffer.memory"])
    if buffer_memory < 1024:
        cli.die("buffer.memory must be at least 1024")
    xargs = ["-X", "queue.buffering.max.kbytes=%d" % (buffer_memory // 1024)]
    if "queue.buffering.max.messages" not in setting:
        xargs += ["-X", "queue.buffering.max.messages=%d" % -(-buffer_memory // o["record_size"])]
    for k in extra_keys:
        if not LEVEL_KEY.fullmatch(k):
            xargs += ["-X", "%s=%s" % (k, setting[k])]
    return spec, xargs


# ------------------------------------------------------------------ helpers

def read_text(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def logical_abspath(path):
    """PATH made absolute as bash's `cd PATH && pwd` does: from $PWD, symlinks kept."""
    cwd = os.environ.get("PWD", "")
    try:
        if not (cwd.startswith("/") and os.path.samefile(cwd, ".")):
            cwd = os.getcwd()
    except OSError:
        cwd = os.getcwd()
    return os.path.normpath(os.path.join(cwd, path))


# ------------------------------------------------------------------ main

def main(argv):
    cli.prog = "vs-perf-test"
    o, props = parse(argv)
    check_numbers(o)
    setting, extra_keys = settings(o, props)
    spec, xargs = kbench_args(o, setting, extra_keys)
    java_props = ["%s=%s" % (k, setting[k]) for k in sorted(setting)]  # the same command line every run
    root = os.environ.get("KBENCH_ROOT") or kbench.ROOT
    kafka = os.path.join(root, "scripts", "kafka")

    out = o["out"]
    if out:
        cli.check_out_dir(out, "--out")
    kbench_bin = os.environ.get("KBENCH_BIN") or os.path.join(root, "build", "kbench")
    if not os.access(kbench_bin, os.X_OK):
        cli.die("kbench binary %s not found (build it, or set KBENCH_BIN)" % kbench_bin)

    # Checks the kbench side (spec, -X settings) before any broker starts: kbench validates
    # its options before listing.
    kbench_base = [kbench_bin, "--produce=" + spec, "--records-per-iteration=%d" % o["num_records"],
                   "--benchmark_filter=^Produce/"] + xargs
    try:
        check = subprocess.run(kbench_base + ["--benchmark_list_tests"], env=dict(os.environ, KBENCH_BOOTSTRAP=""),
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, errors="replace")
        rejected, why = check.returncode != 0, check.stderr
    except OSError as e:
        rejected, why = True, str(e)
    if rejected:
        cli.die("kbench rejects these settings: %s" % why.rstrip("\n"))

    if not out:
        out = os.path.join(root, "results", "runs", shell.run_stamp(root) + "-vs-perf-test")
    cli.dry_run_exit()
    try:
        os.makedirs(out, exist_ok=True)
    except OSError:
        cli.die("cannot create %s" % out)
    out = logical_abspath(out)

    kafka_args = ["--version", o["kafka_version"]] if o["kafka_version"] else []
    trap, started = shell.Trap({signal.SIGINT: 130, signal.SIGTERM: 130}), False
    trap.install()
    try:
        if not o["bootstrap"]:
            cli.info("starting a local 1-broker cluster in %s/kafka" % out)
            started = True
            with open(out + "/kafka-start.log", "w") as log:
                start = trap.run([kafka, "start"] + kafka_args + ["--dir", out + "/kafka", "--port-base", "auto"],
                                 stdout=subprocess.PIPE, stderr=log, text=True)
            if start.returncode != 0:
                cli.die("scripts/kafka start failed: %s" % shell.last_lines(read_text(out + "/kafka-start.log"), 3),
                        status=1)
            o["bootstrap"] = start.stdout.rstrip("\n")
            kafka_args += ["--dir", out + "/kafka"]
        run_rounds(o, trap, [kafka, "run-class"] + kafka_args, kbench_base, java_props, out)
    finally:
        trap.hold()
        if started:
            try:
                subprocess.run([kafka, "stop", "--dir", out + "/kafka"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
            except OSError:
                pass  # as `|| true`: the clean-up never fails the run
    return 0


def run_rounds(o, trap, tool, kbench_base, java_props, out):
    """The interleaved rounds of both tools, then the comparison (stdout and summary.txt)."""
    bootstrap, num, warmup = o["bootstrap"], o["num_records"], o["warmup_records"]
    # The same warm-up on both sides needs the tool's --warmup-records (Kafka 4.0, KIP-1052).
    perf_help = trap.run(tool + ["producer-perf", "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, errors="replace").stdout
    if "--warmup-records" not in perf_help:
        cli.die("this kafka-producer-perf-test has no --warmup-records (Kafka 4.0 or later): "
                "the tools cannot be warmed up alike")
    perf_args = ["--num-records", str(num + warmup), "--warmup-records", str(warmup), "--record-size",
                 str(o["record_size"]), "--throughput", str(o["throughput"]), "--producer-props",
                 "bootstrap.servers=" + bootstrap] + java_props
    kbench_cmd = kbench_base + ["--bootstrap=" + bootstrap]
    with open(out + "/commands.txt", "w") as f:
        f.write("# %s bootstrap=%s\n" % (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), bootstrap))
        f.write(" ".join(["kafka-producer-perf-test --topic TOPIC"] + perf_args) + "\n")
        f.write(shell.command_line(kbench_cmd))
    open(out + "/rounds.tsv", "w").close()

    def note_round(*fields):
        with open(out + "/rounds.tsv", "a") as f:
            f.write("\t".join(fields) + "\n")

    def run_perf_test(r):
        topic, f = "vs-perf-test-%d-%d" % (os.getpid(), r), "%s/round-%d-perf-test.txt" % (out, r)
        log = "%s/round-%d-topic.log" % (out, r)
        with open(log, "w") as lf:
            created = trap.run(tool + ["topics", "--bootstrap-server", bootstrap, "--create", "--topic", topic,
                                       "--partitions", str(o["partitions"]), "--replication-factor",
                                       str(o["replication_factor"])], stdout=lf, stderr=subprocess.STDOUT)
        if created.returncode != 0:
            cli.die("creating topic %s failed: %s" % (topic, shell.last_lines(read_text(log), 3)), status=1)
        cli.info("round %d: kafka-producer-perf-test" % r)
        with open(f, "w") as pf:
            perf = trap.run(tool + ["producer-perf", "--topic", topic] + perf_args, stdout=pf,
                            stderr=subprocess.STDOUT)
        if perf.returncode != 0:
            cli.die("kafka-producer-perf-test failed (round %d): %s" % (r, shell.last_lines(read_text(f), 5)), status=1)
        with open(log, "a") as lf:
            trap.run(tool + ["topics", "--bootstrap-server", bootstrap, "--delete", "--topic", topic],
                     stdout=lf, stderr=subprocess.STDOUT)
        note_round("perf-test", str(r), f, "-")

    def run_kbench(r):
        j, err = "%s/round-%d-kbench.json" % (out, r), "%s/round-%d-kbench.err" % (out, r)
        cli.info("round %d: kbench Produce" % r)
        # One iteration of exactly --num-records records after the warm-up: the tool's steady state.
        with open("%s/round-%d-kbench.out" % (out, r), "w") as so, open(err, "w") as se:
            kb = trap.run(kbench_cmd + ["--benchmark_out=" + j, "--benchmark_out_format=json"],
                          env=dict(os.environ, KBENCH_FIXED_ITERATIONS="1"), stdout=so, stderr=se)
        if kb.returncode != 0:
            text = "\n".join(line for line in read_text(err).split("\n") if not line.startswith("***"))
            cli.die("kbench failed (round %d): %s" % (r, shell.last_lines(text, 5)), status=1)
        note_round("kbench", str(r), j, err)

    for r in range(1, o["rounds"] + 1):
        for run in (run_perf_test, run_kbench) if r % 2 else (run_kbench, run_perf_test):
            run(r)

    with open(out + "/summary.txt", "w") as f:
        try:
            text = "".join(line + "\n" for line in vs_summary(out, warmup))
        except InputError as e:
            # The formatter's own name, as when it ran as a command.
            cli.die(e, status=1, name="kbench.perf_test_format")
        sys.stdout.write(text)
        sys.stdout.flush()
        f.write(text)
    cli.info("outputs in %s" % out)


if __name__ == "__main__":
    cli.run(main)
