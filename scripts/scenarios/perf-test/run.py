"""perf-test — seed 004: kbench beside Kafka's own kafka-producer-perf-test and
kafka-consumer-perf-test, treated alike (the same warm-up, queue caps and settings, rounds
interleaved), printed in the tools' own formats: the seed's three cases, or with any of
kafka-producer-perf-test's options below one case of your own ("custom"). Every round's
output stays in DIR/rounds/; DIR/summary.json, DIR/report.md and DIR/perf-test.png sum up."""

import argparse
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time

from kbench import cli, proc
from kbench import kafka_cluster as kafka
from kbench.cli import die, info
from kbench.scenario_runner import Scenario, bootstrap_list, kafka_version

SEED_PARTITIONS = 15
# name, measured records per round, record size, throughput cap
CASES = {
    "tiny": [("10k-2000B", 2000, 2000, 10000), ("10m-100B", 20000, 100, 1000000),
             ("100m-2000B", 5000, 2000, 100000000)],
    "full": [("10k-2000B", 100000, 2000, 10000), ("10m-100B", 10000000, 100, 1000000),
             ("100m-2000B", 100000000, 2000, 100000000)],
    "small": [("10k-2000B", 100000, 2000, 10000), ("10m-100B", 5000000, 100, 1000000),
              ("100m-2000B", 1000000, 2000, 100000000)],
}
# The Java producer's defaults, given to both clients alike; the seed ran batch.size 8196,
# acks=1 and linger.ms=0.
JAVA_DEFAULTS = {"acks": "1", "batch.size": "16384", "linger.ms": "5", "compression.type": "none",
                 "enable.idempotence": "false", "max.in.flight.requests.per.connection": "5",
                 "buffer.memory": "33554432"}
SEED_SETTINGS = dict(JAVA_DEFAULTS, **{"batch.size": "8196", "linger.ms": "0"})
LEVEL_KEY = re.compile(r"compression\.([a-z0-9]+)\.level")
MAX_RECORDS = 2000000000
CUSTOM = ("num_records", "warmup_records", "record_size", "throughput", "acks", "producer_props",
          "partitions", "replication_factor")


def count(low, high=MAX_RECORDS):
    """An argparse type: an integer in LOW..HIGH."""
    def parse(text):
        if not re.fullmatch(r"[0-9]+", text) or not low <= int(text) <= high:
            raise argparse.ArgumentTypeError("must be an integer in %d..%d, not '%s'" % (low, high, text))
        return int(text)
    return parse


def throughput(text):
    return -1 if text == "-1" else count(1)(text)


def key_value(text):
    if not re.fullmatch(r"[A-Za-z0-9._-]+=.+", text, re.S):
        raise argparse.ArgumentTypeError("'%s' is not key=value" % text)
    if "," in text or "|" in text:
        raise argparse.ArgumentTypeError("'%s': values with ',' or '|' are not supported" % text)
    return text


def add_arguments(parser):
    parser.add_argument("--rounds", metavar="R", type=count(1, 50),
                        help="interleaved rounds per case (default 3; 1 at --tiny); fewer than 3 "
                             "is reported as no verdict")
    parser.add_argument("--cases", metavar="LIST",
                        help="only these of the seed's cases, comma-separated (default: all three)")
    tools = parser.add_mutually_exclusive_group()
    tools.add_argument("--kafka-tools", dest="tools", action="store_true", default=None,
                       help="Kafka's tools even at --tiny")
    tools.add_argument("--no-kafka-tools", dest="tools", action="store_false",
                       help="kbench only: nothing to compare with")
    parser.add_argument("--kafka-version", metavar="V",
                        help="Kafka release of the local cluster and the tools (4.0 or later: the "
                             "tool needs --warmup-records)")
    parser.add_argument("--bootstrap-server", dest="bootstrap", type=bootstrap_list, help=argparse.SUPPRESS)
    own = parser.add_argument_group(
        "one case of your own, in kafka-producer-perf-test's options (instead of the seed's cases)")
    own.add_argument("--num-records", metavar="N", type=count(1),
                     help="measured records per round and tool, after the warm-up (default 5000000)")
    own.add_argument("--warmup-records", metavar="W", type=count(1),
                     help="warm-up records before them, on both (default N/10, at least 1)")
    own.add_argument("--record-size", metavar="S", type=count(1), help="value bytes (default 100)")
    own.add_argument("--throughput", metavar="T", type=throughput,
                     help="records/s cap, -1 for none (default -1); kbench's 'rate'")
    own.add_argument("--acks", choices=("0", "1", "all", "-1"), help="default 1")
    own.add_argument("--producer-props", "--command-property", metavar="KEY=VALUE", nargs="+",
                     type=key_value, action="extend", default=[],
                     help="producer settings for both: acks, batch.size, linger.ms, compression.type, "
                          "compression.<codec>.level, enable.idempotence, "
                          "max.in.flight.requests.per.connection, bootstrap.servers, buffer.memory "
                          "map to kbench's; any other key goes to librdkafka as -X KEY=VALUE")
    own.add_argument("--partitions", metavar="P", type=count(1), help="topic partitions (default 2)")
    own.add_argument("--replication-factor", metavar="R", type=count(1), help="topic replication (default 1)")


def settings(args):
    """The custom case's settings (Java defaults, --producer-props, --acks); the keys kbench's spec lacks."""
    setting, extra = dict(JAVA_DEFAULTS), []
    for kv in args.producer_props:
        k, v = kv.split("=", 1)
        if k == "bootstrap.servers":
            if args.bootstrap and args.bootstrap != v:
                die("--bootstrap and bootstrap.servers differ")
            args.bootstrap = bootstrap_list(v)
            continue
        if k == "acks" and args.acks and v != args.acks:
            die("--acks %s and --producer-props %s differ" % (args.acks, kv))
        if k not in setting:
            extra.append(k)
        setting[k] = v
    setting["acks"] = args.acks or setting["acks"]
    if setting["acks"] == "-1":
        setting["acks"] = "all"
    # kbench checks the rest of the spec these make (check_kbench); these it cannot see.
    for k in setting:
        m = LEVEL_KEY.fullmatch(k)
        if m and m.group(1) != setting["compression.type"]:
            die("%s given but compression.type is %s" % (k, setting["compression.type"]))
    if not (setting["buffer.memory"].isdigit() and int(setting["buffer.memory"]) >= 1024):
        die("buffer.memory must be an integer of at least 1024, not '%s'" % setting["buffer.memory"])
    return setting, extra


def make_case(name, records, size, tput, warm, partitions, replication, setting, extra=()):
    """One case: its sizes and both clients' settings, kbench's as a --produce spec and -X."""
    codec = setting["compression.type"]
    level = next((setting[k] for k in setting if LEVEL_KEY.fullmatch(k)), "")
    spec = ("acks=%s,codec=%s%s,record_bytes=%d,payload=az,batch_bytes=%s,linger_ms=%s,max_in_flight=%s,"
            "idempotence=%s,partitions=%d,replication=%d,warmup=%d,threads=1,producers=1%s" % (
                setting["acks"], codec, ",level=" + level if level else "", size, setting["batch.size"],
                setting["linger.ms"], setting["max.in.flight.requests.per.connection"],
                setting["enable.idempotence"], partitions, replication, warm,
                ",rate=%d" % tput if tput > 0 else ""))
    # The Java producer bounds its unsent records in bytes only (buffer.memory), librdkafka
    # in bytes and messages: both of librdkafka's caps hold what buffer.memory does.
    memory = int(setting["buffer.memory"])
    qmsgs = int(setting.get("queue.buffering.max.messages") or -(-memory // size))
    xargs = ["-X", "queue.buffering.max.kbytes=%d" % (memory // 1024)]
    if "queue.buffering.max.messages" not in setting:
        xargs += ["-X", "queue.buffering.max.messages=%d" % qmsgs]
    xargs += [w for k in extra if not LEVEL_KEY.fullmatch(k) for w in ("-X", "%s=%s" % (k, setting[k]))]
    return {"name": name, "records": records, "size": size, "tput": tput, "warm": warm, "qmsgs": qmsgs,
            "partitions": partitions, "replication": replication, "spec": spec, "xargs": xargs,
            "props": ["%s=%s" % (k, setting[k]) for k in sorted(setting)], "setting": setting}


def cases(args):
    """The run's cases: the seed's at the scale (--cases), or the custom one."""
    custom = [o for o in CUSTOM if getattr(args, o) not in (None, [])]
    if custom:
        if args.cases:
            die("--cases picks among the seed's cases; --%s makes a case of your own" % custom[0].replace("_", "-"))
        setting, extra = settings(args)
        records = args.num_records or 5000000
        return [make_case("custom", records, args.record_size or 100, args.throughput or -1,
                          args.warmup_records or max(records // 10, 1), args.partitions or 2,
                          args.replication_factor or 1, setting, extra)]
    seed = CASES["tiny" if args.tiny else args.scale]
    names = [n for n in (args.cases or "").split(",") if n] or [c[0] for c in seed]
    for n in names:
        if n not in [c[0] for c in seed]:
            die("--cases: unknown case '%s' (%s)" % (n, ", ".join(c[0] for c in seed)))
    replication = 3 if args.scale == "full" else 1
    return [make_case(name, records, size, tput, max(records // 10, 1), SEED_PARTITIONS, replication,
                      SEED_SETTINGS) for name, records, size, tput in seed if name in names]


def check_kbench(case):
    """kbench checks its side (spec, -X settings) before any broker starts."""
    binary = os.environ.get("KBENCH_BIN", "")
    if not os.access(binary, os.X_OK):
        return  # the scenario says so on entering
    cli.kbench_rows(binary, ["--produce=" + case["spec"], "--benchmark_filter=^Produce/", *case["xargs"]],
                    env=dict(os.environ, KBENCH_BOOTSTRAP=""))


class PerfTest:
    """The steps of a round, on the round's state (case, r, first, p, topic)."""

    def __init__(self, scn, args, cases):
        self.scn, self.args, self.cases = scn, args, cases
        # The JVM tools take seconds each: CI's pipeline check (--tiny) leaves them out unless asked.
        self.tools = not scn.tiny if args.tools is None else args.tools
        self.rounds = args.rounds or (1 if scn.tiny else 3)
        self.version = args.kafka_version or kafka_version()
        self.kafka_dir = None
        self.log = []  # every step of every round, for report.py

    def tool(self, args, log, mode="w"):
        """Kafka's tool ARGS (scripts/kafka run-class), its output to LOG; ok?"""
        try:
            with open(log, mode) as f:
                return kafka.run_class(args, version=self.version, directory=self.kafka_dir, stdout=f,
                                       stderr=subprocess.STDOUT).returncode == 0
        except kafka.KafkaError as e:
            die(e, getattr(e, "status", 1))

    def kbench_step(self, kind, args):
        """kbench's KIND (produce, consume) on exactly the records asked for, like a tool run; ends on failure."""
        prefix = "%s-kbench-%s" % (self.p, kind)
        cmd = [self.scn.bin] + args + ["--bootstrap=" + self.scn.bootstrap, "--benchmark_out=%s.json" % prefix,
                                       "--benchmark_out_format=json"]
        self.scn.note("KBENCH_FIXED_ITERATIONS=1 " + proc.quote(cmd))
        with open(prefix + ".out", "wb") as out, open(prefix + ".err", "wb") as err:
            rc = subprocess.run(cmd, stdout=out, stderr=err,
                                env=dict(os.environ, KBENCH_FIXED_ITERATIONS="1")).returncode
        if rc:
            self.failed("kbench " + kind.capitalize(), prefix + ".err")
        # report.py reads Produce's progress lines; a Consume run's reads end when it ended.
        aux = prefix + ".err" if kind == "produce" else int(time.time() * 1000)
        self.round_row("kbench-" + kind, prefix + ".json", aux)

    def round_row(self, kind, path, aux):
        """A step for report.py: its kind, output and kbench's stderr (or a Consume run's end)."""
        self.log.append({"case": self.case["name"], "round": self.r, "first": self.first, "kind": kind,
                         "path": path, "aux": aux})

    def failed(self, what, log, lines=5):
        die("%s failed on %s round %d: %s" % (what, self.case["name"], self.r, proc.tail(log, lines)), 1)

    def produce_kbench(self):
        c = self.case
        info("%s round %d: kbench Produce, %d + %d x %d B%s" % (
            c["name"], self.r, c["warm"], c["records"], c["size"], ", rate %d" % c["tput"] if c["tput"] > 0 else ""))
        self.kbench_step("produce", ["--produce=" + c["spec"], "--records-per-iteration=%d" % c["records"],
                                     "--benchmark_filter=^Produce/", *c["xargs"]])

    def produce_tool(self):
        c, log = self.case, self.p + "-topic.log"
        if not self.tool(["topics", "--bootstrap-server", self.scn.bootstrap, "--create", "--topic", self.topic,
                          "--partitions", str(c["partitions"]), "--replication-factor", str(c["replication"])],
                         log, "a"):
            self.failed("creating " + self.topic, log, 3)
        info("%s round %d: kafka-producer-perf-test, %d + %d x %d B, --throughput %d"
             % (c["name"], self.r, c["warm"], c["records"], c["size"], c["tput"]))
        self.tool_round("produce", "kafka-producer-perf-test", [
            "producer-perf", "--topic", self.topic, "--num-records", str(c["records"] + c["warm"]),
            "--warmup-records", str(c["warm"]), "--record-size", str(c["size"]), "--throughput", str(c["tput"]),
            "--producer-props", "bootstrap.servers=" + self.scn.bootstrap, *c["props"]])

    def consume_tool(self):
        info("%s round %d: kafka-consumer-perf-test on %s" % (self.case["name"], self.r, self.topic))
        self.tool_round("consume", "kafka-consumer-perf-test", [
            "consumer-perf", "--bootstrap-server", self.scn.bootstrap, "--topic", self.topic,
            "--messages", str(self.case["records"] + self.case["warm"]), "--timeout", "60000",
            "--consumer.config", os.path.join(self.scn.out, "consumer.properties")])

    def tool_round(self, kind, tool_name, cmd):
        """One run of Kafka's TOOL_NAME into the round's -tool-KIND.txt; a failure ends the scenario."""
        self.scn.note("scripts/kafka run-class " + proc.quote(cmd))
        out = "%s-tool-%s.txt" % (self.p, kind)
        if not self.tool(cmd, out):
            self.failed(tool_name, out)
        self.round_row("tool-" + kind, out, None)

    def consume_kbench(self):
        """The tool's topic, or (without the tools) kbench's own of that layout."""
        c, spec = self.case, "topic=" + self.topic
        if not self.tools:
            spec = "partitions=%d,replication=%d,records=%d,record_bytes=%d" % (
                c["partitions"], c["replication"], c["records"] + c["warm"], c["size"])
        info("%s round %d: kbench Consume (%s)" % (c["name"], self.r, spec))
        self.kbench_step("consume", ["--consume=" + spec, "--benchmark_filter=^Consume/"])

    def use_cluster(self):
        """The given cluster (with the brokers the replication needs) or one in DIR/kafka; what it is."""
        scn, replication = self.scn, max(c["replication"] for c in self.cases)
        if scn.bootstrap:
            log = os.path.join(scn.out, "logs", "broker-api-versions.txt")
            self.tool(["broker-api-versions", "--bootstrap-server", scn.bootstrap], log)
            n = len(re.findall(r"(?m)^[^ \n].*\(id: [0-9]* rack", pathlib.Path(log).read_text(errors="replace")))
            if n <= 0:
                die("cannot reach a Kafka cluster at %s" % scn.bootstrap)
            if n < replication:
                die("replication %d needs %d brokers; %s has %d" % (replication, replication, scn.bootstrap, n))
            return "the given cluster at %s (%d brokers), topic RF %d" % (scn.bootstrap, n, replication)
        # Deleted topics' files go a minute later (file.delete.delay.ms): room for three rounds'.
        need = max(3 * (c["records"] + c["warm"]) * c["size"] * c["replication"] for c in self.cases)
        free = shutil.disk_usage(scn.out).free
        if free <= need + (1 << 30):
            die("these cases need about %d GiB free under %s (%d GiB free); use --bootstrap with a real "
                "cluster" % (need // (1 << 30) + 1, scn.out, free // (1 << 30)))
        self.kafka_dir = os.path.join(scn.out, "kafka")
        scn.bootstrap, _ = scn.cluster_start("", replication, self.version, directory=self.kafka_dir)
        return "%d local broker(s) (scripts/kafka, KRaft), topic RF %d" % (replication, replication)

    def run(self):
        scn, out = self.scn, self.scn.out
        os.makedirs(os.path.join(out, "rounds"), exist_ok=True)
        load_start = loadavg()
        cluster = self.use_cluster()
        if self.tools:
            # The same warm-up on both sides needs the tool's --warmup-records (Kafka 4.0, KIP-1052).
            log = os.path.join(out, "logs", "producer-perf-help.txt")
            self.tool(["producer-perf", "--help"], log)
            if "--warmup-records" not in pathlib.Path(log).read_text(errors="replace"):
                die("kafka-producer-perf-test of Kafka %s has no --warmup-records (Kafka 4.0 or later): "
                    "the tools cannot be warmed up alike" % self.version)
        # The Java consumer's fetch settings as kbench's consumer has them (harness/consumer.cc).
        pathlib.Path(out, "consumer.properties").write_text("fetch.max.wait.ms=10\n")
        for case in self.cases:
            for r in range(1, self.rounds + 1):
                self.round(case, r)
        self.write_state(load_start, cluster)
        return proc.run([sys.executable, os.path.join(scn.dir, "report.py"), out]).returncode

    def round(self, case, r):
        """Round R of CASE: odd rounds start with Kafka's tools, even ones with kbench."""
        self.case, self.r = case, r
        self.first = "tool" if r % 2 and self.tools else "kbench"
        self.p = os.path.join(self.scn.out, "rounds", "%s-r%d" % (case["name"], r))
        self.topic = "perf-test-%s-%d-r%d" % (case["name"], os.getpid(), r)
        if not self.tools:
            steps = [self.produce_kbench, self.consume_kbench]
        elif self.first == "tool":
            steps = [self.produce_tool, self.produce_kbench, self.consume_tool, self.consume_kbench]
        else:
            steps = [self.produce_kbench, self.produce_tool, self.consume_kbench, self.consume_tool]
        for step in steps:
            step()
        if self.tools:
            self.tool(["topics", "--bootstrap-server", self.scn.bootstrap, "--delete", "--topic", self.topic],
                      self.p + "-topic.log", "a")

    def write_state(self, load_start, cluster):
        """DIR/run.json for report.py: the settings, machine, versions, cases and steps."""
        try:
            java = subprocess.run(["java", "-version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True, errors="replace")
            java_version = java.stdout.split("\n")[0] if java.returncode == 0 else "unknown"
        except OSError:
            java_version = "unknown"
        disk, c = shutil.disk_usage(self.scn.out), self.cases[0]
        argv = sys.argv[2:] if sys.argv[1:2] == ["scenario"] else [self.scn.name]
        settings = {
            "scale": self.scn.scale + (" (tiny)" if self.scn.tiny else ""),
            "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "command": proc.quote(["scripts/scenario"] + argv),
            "load": "%s at the start, %s at the end (1/5/15-minute load averages)" % (load_start, loadavg()),
            "memory": "%.1f GiB" % (os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / (1 << 30)),
            "disk": "%.0f GiB (%.0f GiB free)" % (disk.total / (1 << 30), disk.free / (1 << 30)),
            "kafka_version": self.version, "java_version": java_version, "cluster": cluster,
            "partitions": c["partitions"], "replication": c["replication"],
            "batch_size": c["setting"]["batch.size"], "acks": c["setting"]["acks"],
            "linger_ms": c["setting"]["linger.ms"], "buffer_bytes": c["setting"]["buffer.memory"],
            "producer_props": " ".join(c["props"]), "rounds": self.rounds, "tools": int(self.tools)}
        cases = [{k: c[k] for k in ("name", "records", "size", "tput", "warm", "qmsgs")} for c in self.cases]
        pathlib.Path(self.scn.out, "run.json").write_text(
            json.dumps({"settings": settings, "cases": cases, "rounds": self.log}, indent=1))


def loadavg():
    return "%.2f %.2f %.2f" % os.getloadavg()


def main(args):
    run_cases = cases(args)
    check_kbench(run_cases[0])
    with Scenario(args, __file__) as scn:
        return PerfTest(scn, args, run_cases).run()
