"""Run a real Apache Kafka cluster (KRaft, on 127.0.0.1 or --host) for kbench.

Kafka is resolved from Maven Central by version and cached: any released broker, without
a tarball or Docker. Every start makes a fresh cluster; its state directory (--dir, env
KBENCH_KAFKA_DIR, default /tmp/kbench-kafka) holds:
  bootstrap, version, security  what start made
  client.properties             librdkafka settings, for kbench --client-config
  client-java.properties        the same for Kafka's Java tools (--command-config, ...)
  tls/                          a throwaway CA and certificates (openssl), keys mode 600
  node-N/, logs/                each node's configuration and data; the logs
Passwords are random per start; stop deletes those files and scrubs the passwords.

    BOOTSTRAP=$(scripts/kafka start --port-base auto)
    kbench --bootstrap=$BOOTSTRAP --client-config=$(scripts/kafka client-config)

Environment: KBENCH_KAFKA_VERSION (the default release), KBENCH_KAFKA_SECURITY (the default
--security), KBENCH_CACHE (cache root, default ~/.cache/kbench; jars in kafka/VERSION/),
KBENCH_KAFKA_HEAP_OPTS (broker heap, default "-Xms512m -Xmx1g"), KBENCH_KAFKA_JVM_OPTS
(more broker JVM options), KBENCH_KAFKA_TOOL_OPTS (JVM options of run-class), JAVA_HOME.

Exit status: 0 ok, 1 failure, 2 bad usage, a missing prerequisite or an unknown version,
3 (status) stopped, 130 (143) interrupted by SIGINT (SIGTERM): what start began is stopped.
"""

import argparse
import base64
import glob
import os
import re
import shutil
import signal
import subprocess
import textwrap
import time

from kbench import ROOT, cli, kafka_security, proc
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
    return svc.classpath("%s/kafka/%s" % (svc.cache_home(), version), "Apache Kafka " + version, fill_kafka)


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


def cmd_start(args):
    print(start(args.dir, brokers=args.brokers, version=args.version, security=args.security,
                port_base=args.port_base, host=args.host, netns=args.netns, timeout=args.timeout or 120))


def cmd_status(args):
    d = SERVICE.state_dir(args.dir)
    st = cluster_state(d)
    print("state:     " + st)
    print("dir:       " + d)
    if os.path.isfile(d + "/version"):
        print("version:   " + svc.read(d + "/version"))
    if os.path.isfile(d + "/security"):
        print("security:  " + kafka_security.summary(svc.read(d + "/security")))
    if st == "running" and os.path.isfile(d + "/bootstrap"):
        print("bootstrap: " + svc.read(d + "/bootstrap"))
    if st == "running" and os.path.isfile(d + "/client.properties"):
        print("client config: %s/client.properties" % d)
    for pidfile in node_pidfiles(d):
        n = os.path.basename(os.path.dirname(pidfile))
        p = svc.pid(pidfile)
        print("%s:    %s, log %s/logs/%s/server.log" % (n, "pid " + p if p else "stopped", d, n))
    return svc.status_exit(st)


def cmd_client_config(args):
    cli.dry_run_exit()
    print(client_config(args.dir, args.java))


def cmd_classpath(args):
    effective_version(args.version)
    cli.dry_run_exit()
    print(classpath(args.version))


def cmd_run_class(args):
    return proc.status(run_class([args.cls] + args.args, version=args.version, directory=args.dir).returncode)


# name: (what runs it, its one-line help, more of its description)
COMMANDS = {
    "start": (cmd_start, "start a cluster and print its bootstrap address",
              """Start N combined broker+controller nodes and wait until all are registered; the
settings a client needs are in DIR/client.properties, whatever the security mode."""),
    "stop": (lambda a: stop(a.dir, a.timeout or 30), "stop the cluster and delete its data and secrets",
             """SIGTERM, then SIGKILL after --timeout s (default 30); delete the nodes' data,
certificates and client settings and scrub the passwords; logs are kept."""),
    "status": (cmd_status, "show the cluster's state; exit 0 running, 3 stopped, 1 partly running",
               "State, version, security, bootstrap, client config, pids and log paths."),
    "stop-node": (lambda a: stop_node(a.dir, a.node, kill=a.kill, timeout=a.timeout or 30),
                  "stop node N, keeping its data (for fault tests)",
                  """SIGTERM: a controlled shutdown that hands its leaderships over; --kill: SIGKILL,
a crash. The other nodes keep running."""),
    "start-node": (lambda a: start_node(a.dir, a.node, timeout=a.timeout or 120),
                   "start node N again on its data",
                   """In its namespace, if the cluster was started with --netns; waits until every
broker of the cluster is registered."""),
    "client-config": (cmd_client_config, "print the path of the running cluster's client settings",
                      """librdkafka's (kbench --client-config FILE) or, with --java, the Java clients'
(--command-config ...): the cluster's secrets never go on a command line."""),
    "classpath": (cmd_classpath, "print the Kafka classpath",
                  "Resolving it from Maven Central if needed."),
    "run-class": (cmd_run_class, "run a Java main class on the Kafka classpath",
                  """CLASS is a class name, e.g. org.apache.kafka.tools.ProducerPerformance, or a short
name mapped to the right class for the version:
%s.
The version defaults to the one running in DIR.""" % textwrap.fill(", ".join(TOOLS), 84, initial_indent="  ",
                                                                   subsequent_indent="  ", break_on_hyphens=False)),
}


def add_arguments(parser):
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    version = "Kafka release, e.g. 4.1.1 or 3.9.1 (env KBENCH_KAFKA_VERSION, default %s)" % DEFAULT_VERSION
    p = {}
    for name, (run, summary, details) in COMMANDS.items():
        p[name] = commands.add_parser(name, help=summary, description=summary[0].upper() + summary[1:] + ".\n"
                                      + details, formatter_class=cli.HelpFormatter)
        p[name].set_defaults(run=run)
        if name != "classpath":
            p[name].add_argument("--dir", help="state directory (env KBENCH_KAFKA_DIR, default %s)"
                                 % SERVICE.default_dir)
        if name in ("start", "stop", "start-node", "stop-node"):
            p[name].add_argument("--timeout", type=cli.POSITIVE, metavar="S",
                                 help="seconds to wait for a start (default 120) or stop (default 30)")
        if name in ("stop-node", "start-node"):
            p[name].add_argument("node", type=int, metavar="N", help="the node's number (0 is the first)")
        if name in ("start", "classpath", "run-class"):
            p[name].add_argument("--version", metavar="V", help=version)
    start_p = p["start"]
    start_p.add_argument("--brokers", type=int, default=1, metavar="N",
                         help="number of nodes, 1..%d (default 1)" % MAX_BROKERS)
    start_p.add_argument("--port-base", default=DEFAULT_PORT_BASE, metavar="P|auto",
                         help="broker i listens on P+i, its controller on P+%d+i (default %d); auto: ports that "
                              "are free now" % (CONTROLLER_PORT_OFFSET, DEFAULT_PORT_BASE))
    where = start_p.add_mutually_exclusive_group()
    where.add_argument("--host", metavar="ADDR",
                       help="an address of this machine to listen on and advertise instead of 127.0.0.1, e.g. "
                            "the bridge address of scripts/trogdor, so that clients in network namespaces "
                            "reach the brokers")
    where.add_argument("--netns", metavar="TDIR",
                       help="run broker i in the network namespace broker-i that 'scripts/trogdor start "
                            "--brokers N --dir TDIR' made, on its own address")
    sec = kafka_security
    start_p.add_argument("--security", choices=list(sec.PROTOCOLS), metavar="MODE",
                         help="how clients connect and authenticate, brokers replicate the same way (env "
                              "KBENCH_KAFKA_SECURITY, default plaintext): plaintext; ssl (TLS, server "
                              "certificate); mtls (TLS, client certificates required); sasl_plaintext, sasl_ssl "
                              "(SASL %s; users %s and %s)"
                              % (sec.SCRAM_MECHANISM, sec.SCRAM_CLIENT_USER, sec.SCRAM_BROKER_USER))
    p["stop-node"].add_argument("--kill", action="store_true", help="SIGKILL: a crash")
    p["client-config"].add_argument("--java", action="store_true", help="the Java clients' settings")
    p["run-class"].add_argument("cls", metavar="CLASS", help="a Java class name or a short name")
    p["run-class"].add_argument("args", nargs=argparse.REMAINDER, help="the class's arguments")


def main(args):
    signal.signal(signal.SIGTERM, svc.terminate)
    try:
        return args.run(args) or 0
    except KafkaError as e:
        cli.die(str(e), e.status)
