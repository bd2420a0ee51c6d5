"""perf-test — seed 004: a Kafka cluster stress test written as kafka-producer-perf-test /
kafka-consumer-perf-test runs (2000-byte and 100-byte records, a throughput cap, batch.size
8196, a topic of 3 replicas x 15 partitions), rerun with kbench's Produce and Consume
families and printed in the tools' own formats, so the numbers read beside the original
report. Kafka's tools run alongside, treated alike: the same warm-up, steady-state rounds
interleaved (alternating which goes first), queue caps matched in messages and bytes, both
consumers reading the same topic. Run through scripts/scenario; see README.md beside this file.

Unlike the other runners it keeps its own cluster (DIR/kafka, Kafka's tools run against it),
its kbench runs (stdout and stderr apart: report.py reads the interval lines from stderr)
and its report.py (DIR only); the options, the clean-up and the notes are the framework's."""

import os
import re
import subprocess
import sys
import time

from kbench import cli, shell
from kbench.cli import die, info
from kbench.scenario_runner import Scenario

PARTITIONS, BATCH_SIZE, ACKS, LINGER_MS, BUFFER_BYTES = 15, 8196, 1, 0, 33554432
# name, measured records per round, record size, throughput cap
CASES = {
    "tiny": [("10k-2000B", 2000, 2000, 10000), ("10m-100B", 20000, 100, 1000000),
             ("100m-2000B", 5000, 2000, 100000000)],
    "full": [("10k-2000B", 100000, 2000, 10000), ("10m-100B", 10000000, 100, 1000000),
             ("100m-2000B", 100000000, 2000, 100000000)],
    "small": [("10k-2000B", 100000, 2000, 10000), ("10m-100B", 5000000, 100, 1000000),
              ("100m-2000B", 1000000, 2000, 100000000)],
}


def usage():
    return """Usage: scripts/scenario perf-test [--out DIR] [--scale small|full] [--bootstrap HOST:PORT]
                                  [--tiny] [--rounds R] [--cases LIST]
                                  [--no-kafka-tools | --kafka-tools] [--kafka-version V]

Seed 004: kafka-producer-perf-test --record-size 2000|100 --throughput CAP
--producer-props batch.size=8196 on a topic of 15 partitions, then
kafka-consumer-perf-test. Cases (measured records per round, record size, --throughput):
                 full (3 brokers, RF 3)   small (1 broker, RF 1)   tiny (CI)
  10k-2000B      100,000 x 2000 B, 10000  100,000                  2,000
  10m-100B       10,000,000 x 100 B, 1M   5,000,000                20,000
  100m-2000B     100,000,000 x 2000 B     1,000,000                5,000
                 (cap 100,000,000)
Each round is a steady state (10 s at the cap, 5 million records, or 2 GB; the seed's
first case ran 10,000 records: one second), after a warm-up of a tenth as many records
on both tools (kbench's 'warmup', the tool's --warmup-records, whose steady-state line is
the one compared). Always 15 partitions, acks=1 and linger.ms=0 (the Java producer's
defaults of the seed's time), A-Z payload, one send thread, and the Java client's
32 MiB buffer.memory as librdkafka's queue caps in bytes (queue.buffering.max.kbytes)
and in messages (queue.buffering.max.messages = 32 MiB / record size: librdkafka's
default 100,000 would bind first for small records).

Every case runs R interleaved rounds: odd rounds start with Kafka's tools, even rounds
with kbench. In each round both producers write a topic of the same layout, then
kafka-consumer-perf-test and kbench Consume (--consume topic=T) read the same topic, the
one the tool wrote, with the same fetch settings (fetch.max.wait.ms=10, kbench's). Without
the tools, kbench Consume reads its own topic of the case's layout and size.

Prints per case and round both tools' interval lines and final lines in
kafka-producer-perf-test's format (MB = MiB of values), the medians over rounds with a
ratio, both tools' interval records/s (median, range, coefficient of variation), then
both consumers in kafka-consumer-perf-test's columns. Every round's raw output stays in
DIR/rounds/ (kbench JSON and stderr, the tools' output); also DIR/summary.json,
DIR/report.md, DIR/perf-test.png, DIR/console.txt, DIR/commands.txt.

Options:
  --out DIR            results directory (default:
                       results/scenarios/perf-test/<YYYYmmdd-HHMMSS>-<git sha>/)
  --scale small|full   default small
  --bootstrap H:P      use this cluster: it needs 3 brokers at full scale (RF 3), 1 at
                       small; otherwise a local cluster is started with scripts/kafka in
                       DIR/kafka on ports that are free at the start
  --tiny               seconds per case: proves the pipeline (CI); without Kafka's tools
                       unless --kafka-tools
  --rounds R           interleaved rounds per case, 1..20 (default 3; 1 at --tiny);
                       fewer than 3 is reported as no verdict
  --cases LIST         only these cases, comma-separated (default: all three)
  --no-kafka-tools     kbench only: nothing to compare with
  --kafka-tools        Kafka's tools even at --tiny
  --kafka-version V    Kafka release of the local cluster and tools (4.0 or later: the
                       tool needs --warmup-records)
Environment: KBENCH_BIN (kbench binary, default build/kbench), KBENCH_ROOT.
Exit status: 0 ok, 1 a run failed, 2 bad usage or a cluster that does not fit.
"""


def tail(path, n):
    """The last N lines of a log, as $(tail -N PATH) gives them."""
    with open(path, errors="replace") as f:
        return shell.last_lines(f.read(), n)


class PerfTest:
    """perf-test's own options and the steps of a round (they read the round's state)."""

    VALUED = {"--rounds": "--rounds needs a number", "--cases": "--cases needs a list",
              "--kafka-version": "--kafka-version needs a version"}

    def __init__(self, scn):
        self.scn = scn
        self.opts = {"--rounds": "", "--cases": "", "--kafka-version": ""}
        self.tools = None
        self.cases = []

    # --- the command line ------------------------------------------------------------

    def extra_arg(self, rest):
        a = rest[0]
        if a in self.VALUED:
            if len(rest) < 2:
                die(self.VALUED[a])
            self.opts[a] = rest[1]
            return 2
        if a in ("--no-kafka-tools", "--kafka-tools"):
            self.tools = a == "--kafka-tools"
            return 1
        die("unknown option '%s' (see --help)" % a)

    def check(self):
        """perf-test's own options, in the order its bash runner checked them; before a dry
        run (KBENCH_DRY_RUN=1) ends, as the kbench binary's check always was."""
        scn, rounds = self.scn, self.opts["--rounds"]
        if rounds and not (cli.is_uint(rounds) and 1 <= int(rounds) <= 20):
            die("--rounds must be 1..20, not '%s'" % rounds)
        # The JVM tools take seconds each: CI's pipeline check (--tiny) leaves them out unless asked.
        if self.tools is None:
            self.tools = not scn.tiny
        self.rounds = int(rounds) if rounds else (1 if scn.tiny else 3)
        if not os.access(scn.bin, os.X_OK):
            die("kbench binary %s not found (build it, or set KBENCH_BIN)" % scn.bin)
        all_cases = CASES["tiny" if scn.tiny else scn.scale]
        only = self.opts["--cases"]
        if not only:
            self.cases = list(all_cases)
            return
        # As bash's `IFS=, read -a`: a trailing comma ends the last name, it adds no empty one.
        for w in (only[:-1] if only.endswith(",") else only).split(","):
            found = [c for c in all_cases if c[0] == w]
            if not found:
                die("--cases: unknown case '%s' (10k-2000B, 10m-100B, 100m-2000B)" % w)
            self.cases += found

    # --- Kafka's tools and kbench -----------------------------------------------------

    def tool_cmd(self, args):
        return [self.scn.script("kafka"), "run-class"] + self.kafka_args + list(args)

    def tool(self, args, log, mode="w"):
        """Kafka's tool ARGS (scripts/kafka run-class), its output to LOG; ok?"""
        with open(log, mode + "b") as f:
            return self.scn.run(self.tool_cmd(args), stdout=f, stderr=subprocess.STDOUT).returncode == 0

    def log_cmd(self, prefix, cmd):
        """commands.txt's line: PREFIX, then CMD as `printf '%q '` writes it."""
        self.scn.note(prefix + " " + shell.command_line(cmd).rstrip("\n"))

    def kbench_run(self, prefix, args):
        """One iteration of exactly the records asked for, like one tool run; ok?"""
        cmd = [self.scn.bin] + args
        self.log_cmd("KBENCH_FIXED_ITERATIONS=1", cmd)
        with open(prefix + ".out", "wb") as out, open(prefix + ".err", "wb") as err:
            return self.scn.run(cmd, stdout=out, stderr=err,
                                env=dict(os.environ, KBENCH_FIXED_ITERATIONS="1")).returncode == 0

    def round_row(self, *fields):
        with open(os.path.join(self.scn.out, "rounds.tsv"), "a") as f:
            f.write("\t".join(str(x) for x in fields) + "\n")

    # --- one step of a round; they read the round's state (name, r, first, p, topic, ...)

    def produce_kbench(self):
        spec = ("acks=%d,codec=none,record_bytes=%d,payload=az,batch_bytes=%d"
                ",linger_ms=%d,partitions=%d,replication=%d,warmup=%d,threads=1,producers=1,rate=%d"
                % (ACKS, self.size, BATCH_SIZE, LINGER_MS, PARTITIONS, self.replication, self.warm,
                   self.tput))
        info("%s round %d: kbench Produce, %d + %d x %d B, rate %d"
             % (self.name, self.r, self.warm, self.records, self.size, self.tput))
        p = self.p + "-kbench-produce"
        if not self.kbench_run(p, [
                "--produce=" + spec, "--records-per-iteration=%d" % self.records,
                "--benchmark_filter=^Produce/", "-X", "queue.buffering.max.kbytes=%d" % (BUFFER_BYTES // 1024),
                "-X", "queue.buffering.max.messages=%d" % self.qmsgs, "--bootstrap=" + self.scn.bootstrap,
                "--benchmark_out=%s.json" % p, "--benchmark_out_format=json"]):
            die("kbench Produce failed on %s round %d: %s" % (self.name, self.r, tail(p + ".err", 5)), 1)
        self.round_row(self.name, self.r, self.first, "kbench-produce", p + ".json", p + ".err")

    def produce_tool(self):
        log = self.p + "-topic.log"
        if not self.tool(["topics", "--bootstrap-server", self.scn.bootstrap, "--create", "--topic", self.topic,
                          "--partitions", str(PARTITIONS), "--replication-factor", str(self.replication)],
                         log, "a"):
            die("creating %s failed: %s" % (self.topic, tail(log, 3)), 1)
        cmd = ["producer-perf", "--topic", self.topic, "--num-records", str(self.records + self.warm),
               "--warmup-records", str(self.warm), "--record-size", str(self.size),
               "--throughput", str(self.tput), "--producer-props", "bootstrap.servers=" + self.scn.bootstrap,
               "batch.size=%d" % BATCH_SIZE, "acks=%d" % ACKS, "linger.ms=%d" % LINGER_MS,
               "buffer.memory=%d" % BUFFER_BYTES, "enable.idempotence=false"]
        info("%s round %d: kafka-producer-perf-test, %d + %d x %d B, --throughput %d"
             % (self.name, self.r, self.warm, self.records, self.size, self.tput))
        self.tool_round("produce", "kafka-producer-perf-test", cmd)

    def consume_tool(self):
        cmd = ["consumer-perf", "--bootstrap-server", self.scn.bootstrap, "--topic", self.topic,
               "--messages", str(self.records + self.warm), "--timeout", "60000",
               "--consumer.config", os.path.join(self.scn.out, "consumer.properties")]
        info("%s round %d: kafka-consumer-perf-test on %s" % (self.name, self.r, self.topic))
        self.tool_round("consume", "kafka-consumer-perf-test", cmd)

    def tool_round(self, kind, tool_name, cmd):
        """One run of Kafka's TOOL_NAME (scripts/kafka run-class CMD), its output in the
        round's -tool-KIND.txt and its row in rounds.tsv; a failure ends the scenario."""
        self.log_cmd("scripts/kafka", ["run-class"] + cmd)
        out = "%s-tool-%s.txt" % (self.p, kind)
        if not self.tool(cmd, out):
            die("%s failed on %s round %d: %s" % (tool_name, self.name, self.r, tail(out, 5)), 1)
        self.round_row(self.name, self.r, self.first, "tool-" + kind, out, "-")

    def consume_kbench(self):
        """The tool's topic, or (without the tools) kbench's own of that layout."""
        spec = "topic=" + self.topic
        if not self.tools:
            spec = "partitions=%d,replication=%d,records=%d,record_bytes=%d" % (
                PARTITIONS, self.replication, self.records + self.warm, self.size)
        info("%s round %d: kbench Consume (%s)" % (self.name, self.r, spec))
        p = self.p + "-kbench-consume"
        if not self.kbench_run(p, ["--consume=" + spec, "--benchmark_filter=^Consume/",
                                   "--bootstrap=" + self.scn.bootstrap, "--benchmark_out=%s.json" % p,
                                   "--benchmark_out_format=json"]):
            die("kbench Consume failed on %s round %d: %s" % (self.name, self.r, tail(p + ".err", 5)), 1)
        self.round_row(self.name, self.r, self.first, "kbench-consume", p + ".json", int(time.time() * 1000))

    # --- the cluster --------------------------------------------------------------------

    def use_cluster(self):
        """The given cluster, checked to have the brokers the replication factor needs, or
        a local one in DIR/kafka (stopped on leaving the scenario); a description of it."""
        scn = self.scn
        if scn.bootstrap:
            proc = scn.run(self.tool_cmd(["broker-api-versions", "--bootstrap-server", scn.bootstrap]),
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            n = sum(1 for line in proc.stdout.decode(errors="replace").split("\n")
                    if re.match(r"[^ ].*\(id: [0-9]* rack", line))
            if n <= 0:
                die("cannot reach a Kafka cluster at %s" % scn.bootstrap)
            if n < self.replication:
                die("scale %s needs %d brokers (replication %d); %s has %d"
                    % (scn.scale, self.replication, self.replication, scn.bootstrap, n))
            return "the given cluster at %s (%d brokers), topic RF %d" % (scn.bootstrap, n, self.replication)
        # Disk: every record lands replication times in the local data directory. Topics are
        # deleted after each round, but Kafka removes their files a minute later
        # (file.delete.delay.ms), so allow for three rounds' topics of the largest case.
        need = max([0] + [3 * (records + records // 10) * size * self.replication
                          for _, records, size, _ in self.cases])
        df = subprocess.run(["df", "-Pk", scn.out], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        fields = df.stdout.split("\n")[1].split() if df.stdout.count("\n") >= 2 else []
        if len(fields) < 4 or not cli.is_uint(fields[3]):
            die("cannot read the free space under %s (df)" % scn.out, 1)
        free = int(fields[3]) * 1024
        if free <= need + (1 << 30):
            die("scale %s needs about %d GiB free under %s (%d GiB free); use --bootstrap with a real "
                "cluster" % (scn.scale, need // (1 << 30) + 1, scn.out, free // (1 << 30)))
        d = os.path.join(scn.out, "kafka")
        info("starting a local %d-broker cluster in %s" % (self.brokers, d))
        scn.started.append(d)
        log = os.path.join(scn.out, "kafka-start.log")
        with open(log, "wb") as f:
            proc = scn.run([scn.script("kafka"), "start"] + self.kafka_args
                           + ["--brokers", str(self.brokers), "--dir", d, "--port-base", "auto"],
                           stdout=subprocess.PIPE, stderr=f)
        if proc.returncode != 0:
            die("scripts/kafka start failed: %s" % tail(log, 3), 1)
        scn.bootstrap = proc.stdout.decode().rstrip("\n")
        if not scn.bootstrap:
            die("scripts/kafka start printed no bootstrap address", 1)
        self.kafka_args += ["--dir", d]
        return "%d local broker(s) (scripts/kafka, KRaft), topic RF %d" % (self.brokers, self.replication)

    def kafka_version_used(self):
        scn = self.scn
        if not scn.started:
            return self.opts["--kafka-version"] or "not known (external cluster)"
        proc = scn.run([scn.script("kafka"), "status", "--dir", scn.started[0]],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        for line in proc.stdout.split("\n"):
            if line.startswith("version:"):
                return line[len("version:"):].lstrip(" ")
        return ""

    # --- the whole run ------------------------------------------------------------------

    def run(self, argv, load_start):
        scn = self.scn
        out = scn.out
        rounds_dir = os.path.join(out, "rounds")
        try:
            os.makedirs(rounds_dir, exist_ok=True)
        except OSError:
            die("cannot create %s" % out)
        self.brokers, self.replication = (3, 3) if scn.scale == "full" else (1, 1)
        self.kafka_args = ["--version", self.opts["--kafka-version"]] if self.opts["--kafka-version"] else []
        cluster = self.use_cluster()
        kafka_version = self.kafka_version_used()
        if self.tools:
            # The same warm-up on both sides needs the tool's --warmup-records (Kafka 4.0, KIP-1052).
            proc = scn.run(self.tool_cmd(["producer-perf", "--help"]), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
            if b"--warmup-records" not in proc.stdout:
                die("kafka-producer-perf-test of Kafka %s has no --warmup-records (Kafka 4.0 or later): "
                    "the tools cannot be warmed up alike" % kafka_version)
        # The Java consumer's fetch settings as kbench's consumer has them (harness/consumer.cc).
        with open(os.path.join(out, "consumer.properties"), "w") as f:
            f.write("fetch.max.wait.ms=10\n")
        # A rerun into the same DIR starts these afresh (report.py reads them whole);
        # commands.txt goes on, after the framework's "scenario ..." line of this run.
        for name in ("cases.tsv", "rounds.tsv"):
            open(os.path.join(out, name), "w").close()

        for case in self.cases:
            self.name, self.records, self.size, self.tput = case
            self.warm = max(self.records // 10, 1)
            # librdkafka's two queue caps, both set to the Java client's 32 MiB buffer.memory.
            self.qmsgs = (BUFFER_BYTES + self.size - 1) // self.size
            with open(os.path.join(out, "cases.tsv"), "a") as f:
                f.write("%s\t%d\t%d\t%d\t%d\t%d\n" % (self.name, self.records, self.size, self.tput,
                                                      self.warm, self.qmsgs))
            for r in range(1, self.rounds + 1):
                self.r = r
                self.first = "tool" if self.r % 2 and self.tools else "kbench"
                self.p = os.path.join(rounds_dir, "%s-r%d" % (self.name, self.r))
                self.topic = "perf-test-%s-%d-r%d" % (self.name, os.getpid(), self.r)
                if not self.tools:
                    steps = [self.produce_kbench, self.consume_kbench]
                elif self.first == "tool":
                    steps = [self.produce_tool, self.produce_kbench, self.consume_tool, self.consume_kbench]
                else:
                    steps = [self.produce_kbench, self.produce_tool, self.consume_kbench, self.consume_tool]
                for step in steps:
                    step()
                if self.tools:
                    self.tool(["topics", "--bootstrap-server", scn.bootstrap, "--delete", "--topic", self.topic],
                              self.p + "-topic.log", "a")

        self.write_env(argv, load_start, cluster, kafka_version)
        return scn.run([sys.executable, os.path.join(scn.dir, "report.py"), out]).returncode

    def write_env(self, argv, load_start, cluster, kafka_version):
        """DIR/run.env: the machine, the versions and the settings, for report.py."""
        scn = self.scn
        try:
            java = subprocess.run(["java", "-version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True, errors="replace")
            java_version = java.stdout.split("\n")[0] if java.returncode == 0 else "unknown"
        except OSError:
            java_version = "unknown"
        cpu_model = ""
        with open("/proc/cpuinfo", errors="replace") as f:
            for line in f:
                m = re.match(r"model name\s*: (.*)", line.rstrip("\n"))
                if m:
                    cpu_model = m.group(1)
                    break
        with open("/proc/meminfo") as f:
            mem_kib = next(int(line.split()[1]) for line in f if "MemTotal" in line)
        df = subprocess.run(["df", "-Ph", scn.out], stdout=subprocess.PIPE, text=True).stdout.split("\n")
        disk = df[1].split() if len(df) > 1 and df[1] else []
        uname = os.uname()
        settings = [
            ("scale", scn.scale + (" (tiny)" if scn.tiny else "")),
            ("date", time.strftime("%Y-%m-%d %H:%M:%S %Z")),
            ("command", " ".join(["scripts/scenario", scn.name] + argv)),
            ("load", "%s at the start, %s at the end (1/5/15-minute load averages)" % (load_start, loadavg())),
            ("cpu_model", cpu_model),
            ("cores", len(os.sched_getaffinity(0))),
            ("memory", "%.1f GiB" % (mem_kib / 1048576)),
            ("kernel", "%s %s" % (uname.sysname, uname.release)),
            ("disk", "%s, %s (%s free)" % (disk[0], disk[1], disk[3]) if len(disk) >= 4 else ""),
            ("kafka_version", kafka_version or "unknown"),
            ("java_version", java_version),
            ("cluster", cluster),
            ("partitions", PARTITIONS),
            ("replication", self.replication),
            ("batch_size", BATCH_SIZE),
            ("acks", ACKS),
            ("linger_ms", LINGER_MS),
            ("buffer_bytes", BUFFER_BYTES),
            ("rounds", self.rounds),
            ("tools", int(self.tools)),
        ]
        with open(os.path.join(scn.out, "run.env"), "w") as f:
            f.write("".join("%s=%s\n" % kv for kv in settings))


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main(argv):
    load_start = loadavg()
    with Scenario("perf-test", __file__) as scn:
        pt = PerfTest(scn)
        scn.parse(argv, usage, pt.extra_arg, pt.check)
        return pt.run(argv, load_start)
