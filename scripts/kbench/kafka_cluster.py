"""A real Apache Kafka cluster (KRaft) on this machine, from Maven Central: start and stop it
or one of its nodes, its client settings, and Kafka's Java tools on its classpath.
scripts/kafka (kbench.commands.kafka) is its command line; bench, bench-commits and the
scenarios start their clusters through it."""

import base64
import glob
import os
import re
import shutil
import signal
import subprocess
import time

from kbench import ROOT, build_stamp, cli, kafka_security, proc
from kbench import jvm_service as svc

# The errors of kafka's functions: status 2 bad input or a missing prerequisite, 1 failed.
KafkaError = svc.ServiceError

SERVICE_CONFIG = ROOT + "/scripts/services/kafka"
SERVICE = svc.Service("Kafka", ".kbench-kafka", "KBENCH_KAFKA_DIR", "/tmp/kbench-kafka")
# Newest release verified here; 3.9.1 too, the last that accepts message formats v0/v1.
DEFAULT_VERSION = "4.4.0"
DEFAULT_PORT_BASE = 19092
# Controllers listen 100 ports above the brokers: 19092+i / 19192+i by default.
CONTROLLER_PORT_OFFSET = 100
MAX_BROKERS = 9

# (3.x class, 4.x class) per short name: 4.0 moved several from Scala to Java.
TOOLS = {
    "storage": ("kafka.tools.StorageTool",) * 2,
    "topics": ("org.apache.kafka.tools.TopicCommand",) * 2,
    "broker-api-versions": ("kafka.admin.BrokerApiVersionsCommand",
                            "org.apache.kafka.tools.BrokerApiVersionsCommand"),
    "metadata-quorum": ("org.apache.kafka.tools.MetadataQuorumCommand",) * 2,
    "producer-perf": ("org.apache.kafka.tools.ProducerPerformance",) * 2,
    "consumer-perf": ("org.apache.kafka.tools.ConsumerPerformance",) * 2,
    "console-producer": ("kafka.tools.ConsoleProducer", "org.apache.kafka.tools.ConsoleProducer"),
    "console-consumer": ("org.apache.kafka.tools.consumer.ConsoleConsumer",) * 2,
}

# Tools log warnings to stderr: log4j2 (4.x) and reload4j (3.x) each read their own property.
TOOL_JVM_OPTS = ["-Djava.awt.headless=true", "-Dlog4j2.configurationFile=%s/tools-log4j2.properties" % SERVICE_CONFIG,
                 "-Dlog4j.configuration=file:%s/tools-log4j.properties" % SERVICE_CONFIG]
# Short-lived internal tools (format, readiness probe) start faster this way.
QUICK_JVM_OPTS = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xshare:auto"]


def effective_version(version):
    version = version or os.environ.get("KBENCH_KAFKA_VERSION") or DEFAULT_VERSION
    if not re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+(-[A-Za-z0-9.]+)?", version):
        raise KafkaError("'%s' is not a Kafka release version (expected e.g. 4.1.1 or 3.9.1)" % version, 2)
    return version


def v4(version):
    return int(version.split(".")[0]) >= 4


def tool_class(version, name):
    return TOOLS[name][v4(version)] if name in TOOLS else None


BINDINGS = ("slf4j-reload4j-", "slf4j-log4j12-", "log4j-slf4j-impl-", "log4j-slf4j2-impl-", "logback-classic-",
            "slf4j-simple-")


def missing_binding(lib):
    """The SLF4J binding LIB lacks, GROUP:ARTIFACT:VERSION (else the broker logs nothing), or None."""
    names = sorted(os.path.basename(f) for f in glob.glob(lib + "/*.jar"))
    slf4j = [n[len("slf4j-api-"):-len(".jar")] for n in names if n.startswith("slf4j-api-")]
    if not slf4j or any(n.startswith(BINDINGS) for n in names):
        return None  # nothing logs through SLF4J, or it is bound already
    core = [n[len("log4j-core-"):-len(".jar")] for n in names if n.startswith("log4j-core-")]
    if core:
        impl = "log4j-slf4j-impl" if slf4j[0].startswith("1.") else "log4j-slf4j2-impl"
        return "org.apache.logging.log4j:%s:%s" % (impl, core[0])
    return "org.slf4j:slf4j-reload4j:" + slf4j[0]


# Maven's words for a release that does not exist (%s: the version).
NOT_FOUND = (r"(kafka_2\.13|kafka-tools):(jar|pom):%s.*(was not found|Could not find)"
             r"|Could not find artifact org\.apache\.kafka:(kafka_2\.13|kafka-tools)")


def kafka_mvn(c, version, extra):
    """Maven run for Kafka's broker, its tools and EXTRA jars."""
    svc.write_pom(c + "/pom.xml", "kafka", version, "Apache Kafka " + version,
                  ["org.apache.kafka:kafka_2.13:" + version, "org.apache.kafka:kafka-tools:" + version] + extra)
    if svc.mvn(c, "org/apache/kafka/kafka_2.13/" + version):
        return
    if re.search(NOT_FOUND % re.escape(version), svc.read(c + "/mvn.log")):
        shutil.rmtree(c, ignore_errors=True)  # leave no empty cache entry for a version that does not exist
        raise KafkaError("Kafka %s is not on Maven Central (org.apache.kafka:kafka_2.13:%s not found); pick a "
                         "released version, e.g. %s or 3.9.1" % (version, version, DEFAULT_VERSION), 2)
    raise KafkaError("Maven failed to resolve Kafka %s; see %s/mvn.log:%s" % (version, c, svc.log_tail(c + "/mvn.log")))


def fill_kafka(c):
    """The jars of the version C is named after, in C/lib.new."""
    version = os.path.basename(c)
    # A binding found missing before is asked for up front: one Maven run, not two.
    extra = svc.read_or(c + "/extra-deps", "").split()
    kafka_mvn(c, version, extra)
    more = missing_binding(c + "/lib.new")
    if more:
        cli.info("adding an SLF4J logging binding so the broker writes its logs")
        extra.append(more)
        svc.write_line(c + "/extra-deps", " ".join(extra))
        kafka_mvn(c, version, extra)


def classpath(version):
    """The classpath of Kafka VERSION (None: the default), resolved on first use."""
    version = effective_version(version)
    return svc.classpath(build_stamp.cache_dir("kafka/" + version), "Apache Kafka " + version, fill_kafka)


def java_and_classpath(version):
    # Kafka 4.x brokers and tools need Java 17; 3.x runs on 11 and up.
    return svc.java(17 if v4(version) else 11, "Kafka " + version), classpath(version)


def random_cluster_id():
    """A KRaft cluster id: 16 random bytes, URL-safe base64, never a leading '-' (an option)."""
    while True:
        cid = base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


def node_pidfiles(d):
    """The pid files of D's nodes (those with a configuration)."""
    return [os.path.dirname(n) + "/pid" for n in sorted(glob.glob(d + "/node-*/server.properties"))]


def cluster_state(d):
    return svc.state(node_pidfiles(d))


def launch_node(java, cp, d, i, ns=""):
    """Start node I detached (in network namespace NS unless empty), its pid in node-I/pid."""
    node, logs = "%s/node-%d" % (d, i), "%s/logs/node-%d" % (d, i)
    # G1 with short pauses, as Kafka's own start scripts run the broker.
    opts = (svc.env_opts("KBENCH_KAFKA_HEAP_OPTS", "-Xms512m -Xmx1g")
            + ["-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:InitiatingHeapOccupancyPercent=35",
               "-XX:+ExplicitGCInvokesConcurrent", "-Djava.awt.headless=true", "-Dkafka.logs.dir=" + logs,
               "-Dlog4j2.configurationFile=%s/log4j2.properties" % SERVICE_CONFIG,
               "-Dlog4j.configuration=file:%s/log4j.properties" % SERVICE_CONFIG]
            + svc.env_opts("KBENCH_KAFKA_JVM_OPTS"))
    svc.launch(node + "/pid", logs + "/stdout.log", "node %d" % i, ns,
               [java] + opts + ["-cp", cp, "kafka.Kafka", node + "/server.properties"])


def log_says(text, *files):
    return any(text in svc.read_or(f, "") for f in files)


def wait_ready(java, cp, version, d, hosts, ports, timeout):
    """Until every node of HOSTS and PORTS is registered as a broker (else KafkaError)."""
    n, bootstrap = len(hosts), ",".join("%s:%d" % hp for hp in zip(hosts, ports))
    probe = [java] + QUICK_JVM_OPTS + TOOL_JVM_OPTS + [
        "-cp", cp, tool_class(version, "broker-api-versions"), "--bootstrap-server", bootstrap,
        "--command-config", d + "/client-java.properties"]
    seen = [0]

    # Cheap check first (the ports accept connections), then the brokers the cluster lists.
    def registered():
        if not all(svc.port_open(h, p) for h, p in zip(hosts, ports)):
            return False
        try:
            out = subprocess.run(probe, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=30).stdout
        except subprocess.TimeoutExpired as e:
            out = e.stdout or b""
        seen[0] = len(re.findall(rb"(?m)^[^ \n]+ \(id: [0-9]+", out))
        return seen[0] == n

    def died(pidfile):
        node = os.path.basename(os.path.dirname(pidfile))
        logs = "%s/logs/%s" % (d, node)
        hint = ""
        if log_says("UnsupportedClassVersionError", logs + "/stdout.log"):
            hint = " (this Kafka needs a newer Java: set JAVA_HOME to a newer JDK)"
        elif log_says("Address already in use", logs + "/stdout.log", logs + "/server.log"):
            hint = " (a port is already in use: pick others with --port-base)"
        return ("node %s exited during startup%s; logs: %s/server.log and %s/stdout.log%s%s"
                % (node[len("node-"):], hint, logs, logs, svc.log_tail(logs + "/stdout.log"),
                   svc.log_tail(logs + "/server.log")))

    def late():
        return ("timed out after %d s waiting for %d broker(s) to register (%d seen); logs: %s/logs/node-*/server.log%s"
                % (timeout, n, seen[0], d, svc.log_tail(d + "/logs/node-0/server.log")))

    svc.wait(timeout, 1, registered, died, late, ["%s/node-%d/pid" % (d, i) for i in range(n)])


def kill_nodes(d, timeout):
    """SIGTERM the nodes of D, SIGKILL what is left after TIMEOUT s."""
    if not svc.stop(signal.SIGTERM, timeout, "the nodes of " + d, sorted(glob.glob(d + "/node-*/pid"))):
        cli.info("no Kafka node of %s is running" % d)


def check_port_base(port_base, brokers):
    if not (re.fullmatch(r"[0-9]+", str(port_base)) and int(port_base) >= 1024
            and int(port_base) + CONTROLLER_PORT_OFFSET + brokers <= 65535):
        raise KafkaError("--port-base must leave room for %d broker and controller ports in 1024..65535, got '%s'"
                         % (brokers, port_base), 2)
    return int(port_base)


def netns_nodes(netns, brokers):
    """[(address, namespace)] of the broker namespaces scripts/trogdor made in NETNS."""
    rows = [(line.split() + ["", ""])[1:3] for line in svc.read_or(netns + "/brokers", "").splitlines()]
    if not rows:
        raise KafkaError("--netns %s: no broker namespaces there; run 'scripts/trogdor start --brokers %d --dir %s' "
                         "first" % (netns, brokers, netns), 2)
    if len(rows) < brokers:
        raise KafkaError("--netns %s has %d broker namespace(s), not %d" % (netns, len(rows), brokers), 2)
    return rows[:brokers]


def start(directory, *, brokers=1, version=None, security=None, port_base="auto", host=None, netns=None, timeout=120):
    """Start BROKERS nodes of Kafka VERSION in DIRECTORY, wait until all are registered, and
    return the bootstrap list (as scripts/kafka start's options say). A cluster already running
    as asked is kept; whatever ends the start early stops the nodes it started."""
    version = effective_version(version)
    security = security or os.environ.get("KBENCH_KAFKA_SECURITY") or "plaintext"
    d = SERVICE.state_dir(directory)
    if not 1 <= brokers <= MAX_BROKERS:
        raise KafkaError("--brokers must be 1..%d, got %d" % (MAX_BROKERS, brokers), 2)
    if host and not re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+", host):
        raise KafkaError("--host must be an IPv4 address, got '%s'" % host, 2)
    if host and netns:
        raise KafkaError("--host and --netns exclude each other", 2)
    host = host or "127.0.0.1"
    if security not in kafka_security.PROTOCOLS:
        raise KafkaError("--security must be one of: %s; got '%s'" % (", ".join(kafka_security.PROTOCOLS), security), 2)
    if kafka_security.uses_tls(security) and not shutil.which("openssl"):
        raise KafkaError("openssl not found (needed to make the cluster's throwaway certificates); run "
                         "scripts/setup, or: apt-get install openssl", 2)
    if port_base != "auto":
        check_port_base(port_base, brokers)
    SERVICE.check_dir(d)
    # A dry run ends here: what follows depends on this machine's state, not on the request.
    cli.dry_run_exit()
    if not (host.startswith("127.") or "inet %s/" % host in (proc.output(["ip", "-4", "-o", "addr", "show"]) or "")):
        raise KafkaError("--host %s is not an address of this machine" % host, 2)
    # Per node: its address and namespace.
    nodes = netns_nodes(netns, brokers) if netns else [(host, "")] * brokers
    hosts = [h or host for h, _ in nodes]
    if port_base == "auto":
        # Each namespace has a network stack of its own: the default ports are free there.
        port_base = DEFAULT_PORT_BASE if netns else svc.free_ports(host, brokers, CONTROLLER_PORT_OFFSET)
        if port_base is None:
            raise KafkaError("found no free ports on %s for %d broker(s)" % (host, brokers))
    port_base = check_port_base(port_base, brokers)
    SERVICE.claim_dir(d, "kbench Kafka state directory: scripts/kafka may delete node-*/ and logs/ here")
    with SERVICE.lock(d, 0):
        st = cluster_state(d)
        if st == "running":
            have = (svc.read_or(d + "/version", ""), len(node_pidfiles(d)), svc.read_or(d + "/security", "plaintext"))
            if have != (version, brokers, security):
                raise KafkaError("a cluster is already running in %s with Kafka %s, %d broker(s) and security %s, "
                                 "not %s with %d and %s; run 'scripts/kafka stop --dir %s' first"
                                 % ((d,) + have + (version, brokers, security, d)))
            cli.info("Kafka %s is already running in %s" % (version, d))
            return svc.read(d + "/bootstrap")
        if st == "partial":
            raise KafkaError("the cluster in %s is only partly running; run 'scripts/kafka stop --dir %s' first "
                             "(logs: %s/logs)" % (d, d, d))
        return start_cluster(d, version, security, hosts, [ns for _, ns in nodes], port_base, timeout)


def start_cluster(d, version, security, hosts, netns, port_base, timeout):
    java, cp = java_and_classpath(version)
    brokers = len(hosts)
    ports = [port_base + i for i in range(brokers)]
    controllers = [p + CONTROLLER_PORT_OFFSET for p in ports]
    busy = [str(p) for h, pair in zip(hosts, zip(ports, controllers)) for p in pair if svc.port_open(h, p)]
    if busy:
        raise KafkaError("port(s) %s on %s already in use; stop whatever listens there or pick other ports with "
                         "--port-base" % (" ".join(busy), hosts[0]))
    # Fresh cluster every start: no stale cluster id or topics from a crashed run.
    svc.remove(d + "/node-*", d + "/bootstrap", d + "/version", d + "/cluster.id", d + "/security", d + "/logs",
               d + "/netns")
    os.makedirs(d + "/logs")
    if any(netns):  # start-node brings a node back in its namespace
        svc.write_line(d + "/netns", "\n".join(netns))
    security_block, scram_args = kafka_security.prepare(d, security, hosts)
    cluster_id = random_cluster_id()
    svc.write_line(d + "/cluster.id", cluster_id)

    t0 = time.monotonic()
    cli.info("formatting storage for %d node(s) (cluster id %s)" % (brokers, cluster_id))
    voters = ",".join("%d@%s:%d" % (i, hosts[i], controllers[i]) for i in range(brokers))
    formats = []
    try:
        for i in range(brokers):
            node = "%s/node-%d" % (d, i)
            os.makedirs(node + "/data")
            os.makedirs("%s/logs/node-%d" % (d, i))
            svc.render_template(SERVICE_CONFIG + "/server.properties.in", node + "/server.properties", {
                "NODE_ID": i, "VOTERS": voters, "HOST": hosts[i], "BROKER_PORT": ports[i],
                "CONTROLLER_PORT": controllers[i], "DATA_DIR": node + "/data",
                "INTERNAL_RF": min(brokers, 3), "INTERNAL_MIN_ISR": min(brokers, 2),
                "LISTENER": kafka_security.PROTOCOLS[security], "SECURITY": security_block})
            os.chmod(node + "/server.properties", 0o600)  # it holds the broker's passwords
            # Formatting is one JVM per node; run them side by side.
            with open("%s/logs/node-%d/format.log" % (d, i), "w") as log:
                formats.append(subprocess.Popen(
                    [java] + QUICK_JVM_OPTS + TOOL_JVM_OPTS
                    + ["-cp", cp, tool_class(version, "storage"), "format", "--cluster-id", cluster_id,
                       "--config", node + "/server.properties", "--ignore-formatted"] + scram_args,
                    stdout=log, stderr=subprocess.STDOUT))
        for i, p in enumerate(formats):
            if p.wait():
                log = "%s/logs/node-%d/format.log" % (d, i)
                raise KafkaError("formatting storage of node %d failed; see %s:%s" % (i, log, svc.log_tail(log)))
    finally:
        for p in formats:
            if p.poll() is None:
                p.kill()

    cli.info("starting Kafka %s: %d node(s) in %s, security %s"
             % (version, brokers, d, kafka_security.summary(security)))
    svc.write_line(d + "/version", version)
    try:
        for i in range(brokers):
            launch_node(java, cp, d, i, netns[i])
        wait_ready(java, cp, version, d, hosts, ports, timeout)
    except BaseException:
        # An error, the timeout, Ctrl-C or SIGTERM: no half cluster is left behind.
        kill_nodes(d, 10)
        raise
    bootstrap = ",".join("%s:%d" % hp for hp in zip(hosts, ports))
    svc.write_line(d + "/bootstrap", bootstrap)
    cli.info("Kafka %s is up at %s (%.0f s); client settings: %s/client.properties"
             % (version, bootstrap, time.monotonic() - t0, d))
    return bootstrap


def kbench_env(directory, bootstrap):
    """The KBENCH_* variables of the cluster started in DIRECTORY (KBENCH_KAFKA_DIR: kbench
    measures its brokers' CPU and log growth)."""
    try:
        version = svc.read(os.path.join(directory, "version"))
    except OSError as e:
        raise KafkaError("cannot read %s: %s" % (e.filename, e.strerror), 1) from e
    return ["KBENCH_BOOTSTRAP=" + bootstrap, "KBENCH_BROKER_VERSION=" + version, "KBENCH_KAFKA_DIR=" + directory]


def stop(directory, timeout=30):
    """Stop the nodes of DIRECTORY, delete their data and secrets; logs are kept."""
    def stop_cluster(d, timeout):
        kill_nodes(d, timeout)
        svc.remove(d + "/node-*/data", d + "/cluster.id")
        kafka_security.forget_secrets(d)
    cli.dry_run_exit()
    SERVICE.stop(SERVICE.state_dir(directory), timeout, stop_cluster)


def node_dir(directory, node):
    d = SERVICE.state_dir(directory)
    if not os.path.isfile("%s/node-%d/server.properties" % (d, node)):
        raise KafkaError("%s has no node %d" % (d, node), 2)
    return d


def stop_node(directory, node, *, kill=False, timeout=30):
    """Stop node NODE, keeping its data: SIGTERM, or with KILL, SIGKILL (a crash)."""
    d = node_dir(directory, node)
    cli.dry_run_exit()
    with SERVICE.lock(d, 60):
        if not svc.stop(signal.SIGKILL if kill else signal.SIGTERM, timeout, "node %d" % node,
                        ["%s/node-%d/pid" % (d, node)]):
            raise KafkaError("node %d of %s is not running" % (node, d))
    cli.info("node %d stopped; its data is kept (start-node %d brings it back)" % (node, node))


def start_node(directory, node, *, timeout=120):
    """Start node NODE again on its data and wait until every broker is registered."""
    d = node_dir(directory, node)
    cli.dry_run_exit()
    with SERVICE.lock(d, 60):
        if svc.pid("%s/node-%d/pid" % (d, node)):
            raise KafkaError("node %d of %s is already running" % (node, d))
        if not (os.path.isfile(d + "/bootstrap") and os.path.isdir("%s/node-%d/data" % (d, node))):
            raise KafkaError("node %d of %s has no data to start on (was the cluster stopped? use start)" % (node, d))
        version = svc.read(d + "/version")
        hosts, ports = zip(*((h, int(p)) for h, p in (b.rsplit(":", 1) for b in svc.read(d + "/bootstrap").split(","))))
        netns = svc.read(d + "/netns").split("\n") if os.path.isfile(d + "/netns") else [""] * len(hosts)
        t0 = time.monotonic()
        java, cp = java_and_classpath(version)
        launch_node(java, cp, d, node, netns[node])
        wait_ready(java, cp, version, d, hosts, ports, timeout)
    cli.info("node %d is back (%.0f s)" % (node, time.monotonic() - t0))


def client_config(directory, java=False):
    """The path of the running cluster's client settings: librdkafka's, or the Java ones."""
    d = SERVICE.state_dir(directory)
    f = d + ("/client-java.properties" if java else "/client.properties")
    if not (cluster_state(d) == "running" and os.path.isfile(f)):
        raise KafkaError("no running cluster in %s (its client settings exist only while it runs; scripts/kafka "
                         "start --dir %s)" % (d, d))
    return f


def run_class(args, *, version=None, directory=None, **subprocess_kwargs):
    """subprocess.run of Java class ARGS[0] (or a TOOLS name) on the classpath of Kafka VERSION."""
    if not args:
        raise KafkaError("run-class: missing CLASS", 2)
    cls = args[0]
    if not version and not os.environ.get("KBENCH_KAFKA_VERSION"):
        # Tools should match the broker that is running, unless told otherwise.
        version = svc.read_or(SERVICE.state_dir(directory) + "/version", None)
    version = effective_version(version)
    if "." not in cls:
        cls = tool_class(version, cls)
        if not cls:
            raise KafkaError("run-class: '%s' is neither a Java class name nor one of: %s"
                             % (args[0], ", ".join(TOOLS)), 2)
    if not re.fullmatch(r"[A-Za-z_$][A-Za-z0-9_$.]*", cls):
        raise KafkaError("run-class: '%s' is not a Java class name" % cls, 2)
    cli.dry_run_exit()
    java, cp = java_and_classpath(version)
    cmd = [java] + TOOL_JVM_OPTS + svc.env_opts("KBENCH_KAFKA_TOOL_OPTS") + ["-cp", cp, cls] + list(args[1:])
    return subprocess.run(cmd, **subprocess_kwargs)
