"""scripts/kafka: run a real Apache Kafka cluster (KRaft, loopback only) for kbench.

Kafka itself is resolved from Maven Central by version (org.apache.kafka:kafka_2.13 and
org.apache.kafka:kafka-tools plus their runtime dependencies) and cached, so any released
broker version can be benchmarked without a tarball or Docker. TLS and SASL: a throwaway
CA and certificates made with openssl, SCRAM users created by Kafka's own storage tool when
the nodes are formatted. Everything lives in the cluster's state directory and is made anew
at every start:
  security                     the mode (plaintext, ssl, sasl_plaintext, sasl_ssl, mtls)
  client.properties            librdkafka settings, for kbench --client-config
  client-java.properties       the same for Kafka's Java tools (--command-config, ...)
  tls/ca.pem                   the CA every client must trust (public)
  tls/ca.key, tls/broker.p12, tls/client.key, tls/client.p12   private, mode 600
The passwords are random per start and appear only in those files and the nodes'
server.properties; `stop` deletes the files and scrubs the passwords out of
server.properties, so a state directory under results/ keeps no secret once stopped.
"""

import base64
import glob
import os
import re
import shutil
import subprocess
import sys

from kbench import ROOT, cli
from kbench import jvm_service as svc

SERVICE_CONFIG = ROOT + "/scripts/services/kafka"
# Newest release verified here (Java 17); 3.9.1 is verified too and is the last
# release that accepts message formats v0/v1.
DEFAULT_VERSION = "4.4.0"
DEFAULT_DIR = "/tmp/kbench-kafka"
DEFAULT_PORT_BASE = "19092"
# Controllers listen 100 ports above the brokers: 19092+i / 19192+i by default.
CONTROLLER_PORT_OFFSET = 100
MAX_BROKERS = 9

SECURITY_MODES = ["plaintext", "ssl", "sasl_plaintext", "sasl_ssl", "mtls"]
PROTOCOLS = {"plaintext": "PLAINTEXT", "ssl": "SSL", "mtls": "SSL", "sasl_plaintext": "SASL_PLAINTEXT",
             "sasl_ssl": "SASL_SSL"}
SCRAM_MECHANISM = "SCRAM-SHA-512"
SCRAM_CLIENT_USER = "kbench"
# Brokers authenticate to each other over the same listener with their own user.
SCRAM_BROKER_USER = "kbench-broker"
SCRUBBED_SECRET = "(deleted by scripts/kafka stop)"

# Kafka moved several command classes from Scala (kafka.*) to Java
# (org.apache.kafka.tools.*) between 3.x and 4.0: (3.x class, 4.x class) per short name.
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

# Logging for tools: warnings to stderr. Both properties are set; each logging
# backend (log4j2 for 4.x, reload4j for 3.x) reads only its own.
TOOL_JVM_OPTS = ["-Djava.awt.headless=true",
                 "-Dlog4j2.configurationFile=%s/tools-log4j2.properties" % SERVICE_CONFIG,
                 "-Dlog4j.configuration=file:%s/tools-log4j.properties" % SERVICE_CONFIG]
# Short-lived internal tools (format, readiness probe) start faster this way.
QUICK_JVM_OPTS = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xshare:auto"]


def usage(file=None):
    print("""Usage: scripts/kafka COMMAND [options]

Runs a real Apache Kafka cluster in KRaft mode on 127.0.0.1 (or --host) for benchmarks.

Commands:
  start [--version V] [--brokers N] [--dir DIR] [--port-base P|auto] [--host ADDR | --netns TDIR]
        [--timeout S] [--security MODE]
        Resolve Kafka V if needed, format storage, start N combined
        broker+controller nodes and wait until all N brokers are registered.
        --port-base auto: ports that are free now (the kernel picks the first),
        so that scripts and tests never collide on fixed ports.
        Prints the bootstrap address as the only stdout line:
            BOOTSTRAP=$(scripts/kafka start)
        and writes the settings a client needs to DIR/client.properties
        (see client-config), whatever the security mode.
  stop [--dir DIR] [--timeout S]
        Stop the nodes started in DIR (SIGTERM, then SIGKILL after S seconds,
        default 30), delete their data, certificates and client settings, and
        scrub the passwords from their configuration; logs are kept.
  stop-node N [--dir DIR] [--kill] [--timeout S]
        Stop node N of the running cluster, keeping its data (SIGTERM: a
        controlled shutdown that hands its leaderships over; --kill: SIGKILL, a
        crash). For fault tests: the other nodes keep running.
  start-node N [--dir DIR] [--timeout S]
        Start node N again on its data (in its namespace, if the cluster was
        started with --netns) and wait until every broker of the cluster is
        registered.
  status [--dir DIR]
        Print state, version, security, bootstrap, client config, pids and log
        paths. Exit 0 running, 3 stopped, 1 partly running.
  client-config [--dir DIR] [--java]
        Print the path of the running cluster's client settings: librdkafka's
        (for kbench --client-config FILE) or, with --java, the Java clients'
        (for Kafka's tools: --command-config, --producer.config ...). The file
        holds the cluster's throwaway secrets; they never go on a command line:
            kbench --bootstrap=$B --client-config=$(scripts/kafka client-config)
  classpath [--version V]
        Print the Kafka classpath (resolving it from Maven Central if needed).
  run-class [--version V] [--dir DIR] CLASS [args...]
        Run a Java main class on the Kafka classpath, e.g.
        org.apache.kafka.tools.ProducerPerformance. CLASS may also be one of the
        short names below, mapped to the right class for the version:
            %(tools)s
        The version defaults to the one running in DIR.
  -h, --help
        This help.

Options:
  --version V     Kafka release, e.g. 4.1.1 or 3.9.1 (env KBENCH_KAFKA_VERSION,
                  default %(version)s)
  --brokers N     number of nodes, 1..%(max)d (default 1)
  --dir DIR       state directory (env KBENCH_KAFKA_DIR, default %(dir)s)
  --port-base P   broker i listens on P+i, its controller on P+%(offset)d+i
                  (default %(port)s)
  --host ADDR     an address of this machine to listen on and advertise instead of
                  127.0.0.1, e.g. the bridge address of scripts/trogdor, so that clients in
                  network namespaces reach the brokers
  --netns TDIR    run broker i in the network namespace broker-i that
                  'scripts/trogdor start --brokers N --dir TDIR' made, on its own
                  address: clients and brokers then talk as separate hosts do
  --timeout S     seconds to wait for start (default 120) or stop (default 30)
  --security MODE how clients connect and authenticate (env KBENCH_KAFKA_SECURITY,
                  default plaintext); brokers replicate the same way:
                    plaintext       no encryption, no authentication
                    ssl             TLS, server certificate only
                    mtls            TLS, client certificates required
                    sasl_plaintext  SASL %(scram)s, no encryption
                    sasl_ssl        SASL %(scram)s over TLS
                  A throwaway CA and certificates (openssl) and random passwords
                  are made in DIR at every start; the SCRAM users %(client)s (clients)
                  and %(broker)s (brokers) are created by Kafka's storage tool.

Environment:
  KBENCH_CACHE            cache root (default $HOME/.cache/kbench); jars go to
                          $KBENCH_CACHE/kafka/<version>/
  KBENCH_KAFKA_HEAP_OPTS  broker JVM heap (default "-Xms512m -Xmx1g")
  KBENCH_KAFKA_JVM_OPTS   extra broker JVM options
  KBENCH_KAFKA_TOOL_OPTS  extra JVM options for run-class
  JAVA_HOME               JDK/JRE to use (default: java on PATH)

Exit status: 0 ok, 1 failure, 2 bad usage / missing prerequisite / unknown version,
3 (status only) stopped.""" % {"tools": tool_names(), "version": DEFAULT_VERSION, "max": MAX_BROKERS,
                               "dir": DEFAULT_DIR, "offset": CONTROLLER_PORT_OFFSET, "port": DEFAULT_PORT_BASE,
                               "scram": SCRAM_MECHANISM, "client": SCRAM_CLIENT_USER, "broker": SCRAM_BROKER_USER},
          file=file)


SVC = svc.Service("kafka", "Kafka", ".kbench-kafka", "KBENCH_KAFKA_DIR", DEFAULT_DIR, usage)

# ---------------------------------------------------------------- settings


def effective_version(v):
    v = v or os.environ.get("KBENCH_KAFKA_VERSION") or DEFAULT_VERSION
    if not re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+(-[A-Za-z0-9.]+)?", v):
        SVC.bad_usage("'%s' is not a Kafka release version (expected e.g. 4.1.1 or 3.9.1)" % v)
    return v


def cache_dir(version):
    return "%s/kafka/%s" % (svc.cache_home(), version)


def v4(version):
    return int(version.split(".")[0]) >= 4


def java_and_classpath(version):
    """java and the classpath of Kafka VERSION (its Java checked, its classpath resolved on
    first use)."""
    java = svc.find_java()
    # Kafka 4.x brokers and tools need Java 17; 3.x runs on 11 and up.
    svc.check_java(java, 17 if v4(version) else 11, "Kafka " + version)
    return java, resolve_classpath(version)


def tool_names():
    return ", ".join(TOOLS)


def tool_class(version, name):
    return TOOLS[name][v4(version)] if name in TOOLS else None


# ---------------------------------------------------------------- resolution

BINDINGS = ("slf4j-reload4j-", "slf4j-log4j12-", "log4j-slf4j-impl-", "log4j-slf4j2-impl-", "logback-classic-",
            "slf4j-simple-")


def missing_binding(lib):
    """Kafka's poms name slf4j-api but, in 4.x, no binding to log4j2 (the release tarball
    adds one by hand). Without a binding the broker would log nothing. The binding's
    GROUP:ARTIFACT:VERSION when LIB lacks one, else None."""
    names = sorted(os.path.basename(f) for f in glob.glob(lib + "/*.jar"))
    if any(n.startswith(BINDINGS) for n in names):
        return None
    core = [n for n in names if n.startswith("log4j-core-")]
    slf4j = [n for n in names if n.startswith("slf4j-api-")]
    if not slf4j:
        return None  # nothing logs through SLF4J: nothing to bind
    slf4j_version = slf4j[0][len("slf4j-api-"):-len(".jar")]
    if core:
        log4j_version = core[0][len("log4j-core-"):-len(".jar")]
        impl = "log4j-slf4j-impl" if slf4j_version.startswith("1.") else "log4j-slf4j2-impl"
        return "org.apache.logging.log4j:%s:%s" % (impl, log4j_version)
    return "org.slf4j:slf4j-reload4j:" + slf4j_version


# Maven's words for a release that does not exist (%s: the version).
NOT_FOUND = (r"(kafka_2\.13|kafka-tools):(jar|pom):%s.*(was not found|Could not find)"
             r"|Could not find artifact org\.apache\.kafka:(kafka_2\.13|kafka-tools)")


def kafka_mvn(c, version, extra):
    """Maven run for Kafka's broker, its tools and EXTRA jars."""
    svc.write_pom(c + "/pom.xml", "kafka", version, "Apache Kafka " + version,
                  ["org.apache.kafka:kafka_2.13:" + version, "org.apache.kafka:kafka-tools:" + version] + extra)
    if svc.mvn(c, "org/apache/kafka/kafka_2.13/" + version):
        return
    with open(c + "/mvn.log", errors="replace") as f:
        log = f.read()
    if re.search(NOT_FOUND % version, log):
        shutil.rmtree(c, ignore_errors=True)  # leave no empty cache entry for a version that does not exist
        cli.die("Kafka %s is not on Maven Central (org.apache.kafka:kafka_2.13:%s not found); pick a released "
                "version, e.g. %s or 3.9.1" % (version, version, DEFAULT_VERSION))
    cli.die("Maven failed to resolve Kafka %s; see %s/mvn.log:%s" % (version, c, svc.tail_log(c + "/mvn.log")), 1)


def fill_kafka(c):
    """The jars of the version C is named after, in C/lib.new."""
    version = os.path.basename(c)
    # A binding found missing before is asked for up front: one Maven run, not two.
    extra = svc.split_opts(svc.read_text(c + "/extra-deps")) if os.path.isfile(c + "/extra-deps") else []
    kafka_mvn(c, version, extra)
    more = missing_binding(c + "/lib.new")
    if more:
        cli.info("adding an SLF4J logging binding so the broker writes its logs")
        extra.append(more)
        svc.write_line(c + "/extra-deps", " ".join(extra))
        kafka_mvn(c, version, extra)


def resolve_classpath(version):
    return svc.classpath(cache_dir(version), "Apache Kafka " + version, fill_kafka)


# ---------------------------------------------------------------- security

def uses_tls(mode):
    return mode in ("ssl", "mtls", "sasl_ssl")


def uses_sasl(mode):
    return mode.startswith("sasl_")


def security_summary(mode):
    """One line for messages and status: "sasl_ssl (SASL_SSL, SCRAM-SHA-512)"."""
    what = PROTOCOLS.get(mode, "")
    if uses_sasl(mode):
        what += ", " + SCRAM_MECHANISM
    if mode == "mtls":
        what += ", client certificates required"
    return "%s (%s)" % (mode, what)


def check_security_mode(mode):
    if mode not in PROTOCOLS:
        SVC.bad_usage("--security must be one of: %s; got '%s'" % (", ".join(SECURITY_MODES), mode))
    if uses_tls(mode) and not shutil.which("openssl"):
        cli.die("openssl not found (needed to make the cluster's throwaway certificates); run scripts/setup, "
                "or: apt-get install openssl")


def random_secret():
    # Alphanumeric only: these go inside JAAS quotes and properties files unescaped.
    s = ""
    while len(s) < 32:
        s += re.sub(r"[^A-Za-z0-9]", "", base64.b64encode(os.urandom(48)).decode())
    return s[:32]


def make_certificates(tls, hosts, password):
    """CA, broker and client certificates. The broker's names 127.0.0.1 and the nodes'
    addresses (what they listen on and advertise), nothing else: a client that connects as
    "localhost" fails hostname verification, which is how the failure tests provoke it.
    Passwords reach openssl through the environment, never its command line."""
    days, names = "7", ["IP:127.0.0.1"]
    for h in hosts:
        if h == "127.0.0.1" or "IP:" + h in names or "DNS:" + h in names:
            continue
        names.append(("IP:" if re.fullmatch(r"[0-9.]+", h) or ":" in h else "DNS:") + h)
    os.makedirs(tls, exist_ok=True)
    os.chmod(tls, 0o700)
    env = dict(os.environ, KBENCH_TLS_PASS=password)
    with open(tls + "/openssl.log", "w") as log:
        old = os.umask(0o077)
        try:
            def openssl(*args):
                if subprocess.run(("openssl",) + args, cwd=tls, env=env, stdout=log,
                                  stderr=subprocess.STDOUT).returncode:
                    raise OSError
            openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
                    "-days", days, "-subj", "/CN=kbench throwaway CA", "-addext", "basicConstraints=critical,CA:TRUE",
                    "-addext", "keyUsage=critical,keyCertSign,cRLSign")
            for who in ("broker", "client"):
                subject, san = "/CN=kbench " + who, ""
                if who == "broker":
                    subject, san = "/CN=127.0.0.1", "subjectAltName=" + ",".join(names)
                openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", who + ".key.plain", "-out", who + ".csr",
                        "-subj", subject)
                with open("%s/%s.ext" % (tls, who), "w") as f:
                    f.write("%s\nextendedKeyUsage=serverAuth,clientAuth\nbasicConstraints=CA:FALSE\n" % san)
                openssl("x509", "-req", "-in", who + ".csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                        "-days", days, "-extfile", who + ".ext", "-out", who + ".pem")
                # PKCS#12 for Java (the broker's keystore, the Java tools' client keystore).
                openssl("pkcs12", "-export", "-in", who + ".pem", "-inkey", who + ".key.plain", "-certfile", "ca.pem",
                        "-name", who, "-out", who + ".p12", "-passout", "env:KBENCH_TLS_PASS")
                svc.remove("%s/%s.csr" % (tls, who), "%s/%s.ext" % (tls, who))
            # librdkafka's client key, encrypted (PKCS#8): ssl.key.password is then a real secret
            # that the redaction and the leak tests have to keep out of every output.
            openssl("pkcs8", "-topk8", "-in", "client.key.plain", "-out", "client.key",
                    "-passout", "env:KBENCH_TLS_PASS")
            svc.remove(tls + "/*.key.plain", tls + "/ca.srl")
            for f in ("ca.pem", "broker.pem", "client.pem"):
                os.chmod(os.path.join(tls, f), 0o644)
        except OSError:
            ok = False
        else:
            ok = True
        finally:
            os.umask(old)
    if not ok:
        cli.die("making the throwaway certificates failed; see %s/openssl.log:%s"
                % (tls, svc.tail_log(tls + "/openssl.log")), 1)


def prepare_security(d, mode, hosts):
    """Write the files listed above (the broker certificate naming every node's HOST); the
    broker's settings and the storage tool's --add-scram arguments."""
    protocol = PROTOCOLS[mode]
    listener = protocol.lower()
    svc.remove(d + "/tls", d + "/client.properties", d + "/client-java.properties")
    svc.write_line(d + "/security", mode)
    client, java, broker, scram = ["security.protocol=" + protocol], ["security.protocol=" + protocol], [], []
    if uses_tls(mode):
        tls, pw = d + "/tls", random_secret()
        make_certificates(tls, hosts, pw)
        broker += ["ssl.keystore.type=PKCS12", "ssl.keystore.location=%s/broker.p12" % tls,
                   "ssl.keystore.password=" + pw, "ssl.key.password=" + pw,
                   "ssl.truststore.type=PEM", "ssl.truststore.location=%s/ca.pem" % tls]
        client.append("ssl.ca.location=%s/ca.pem" % tls)
        java += ["ssl.truststore.type=PEM", "ssl.truststore.location=%s/ca.pem" % tls]
        if mode == "mtls":
            broker.append("ssl.client.auth=required")
            client += ["ssl.certificate.location=%s/client.pem" % tls, "ssl.key.location=%s/client.key" % tls,
                       "ssl.key.password=" + pw]
            java += ["ssl.keystore.type=PKCS12", "ssl.keystore.location=%s/client.p12" % tls,
                     "ssl.keystore.password=" + pw, "ssl.key.password=" + pw]
        else:
            broker.append("ssl.client.auth=none")
    if uses_sasl(mode):
        client_pw, broker_pw = random_secret(), random_secret()
        module = "org.apache.kafka.common.security.scram.ScramLoginModule"
        broker += ["sasl.enabled.mechanisms=" + SCRAM_MECHANISM,
                   "sasl.mechanism.inter.broker.protocol=" + SCRAM_MECHANISM,
                   'listener.name.%s.%s.sasl.jaas.config=%s required username="%s" password="%s";'
                   % (listener, SCRAM_MECHANISM.lower(), module, SCRAM_BROKER_USER, broker_pw)]
        client += ["sasl.mechanisms=" + SCRAM_MECHANISM, "sasl.username=" + SCRAM_CLIENT_USER,
                   "sasl.password=" + client_pw]
        java += ["sasl.mechanism=" + SCRAM_MECHANISM,
                 'sasl.jaas.config=%s required username="%s" password="%s";' % (module, SCRAM_CLIENT_USER, client_pw)]
        # KRaft keeps SCRAM credentials in the metadata log: users that exist before the first
        # broker starts (the brokers need theirs to replicate) are written at format time.
        scram = ["--add-scram", "%s=[name=%s,password=%s]" % (SCRAM_MECHANISM, SCRAM_BROKER_USER, broker_pw),
                 "--add-scram", "%s=[name=%s,password=%s]" % (SCRAM_MECHANISM, SCRAM_CLIENT_USER, client_pw)]
    old = os.umask(0o077)
    try:
        with open(d + "/client.properties", "w") as f:
            f.write("# librdkafka settings of the %s cluster in %s,\n" % (security_summary(mode), d))
            f.write("# for kbench --client-config. Throwaway secrets; deleted by scripts/kafka stop.\n")
            f.write("".join(line + "\n" for line in client))
        with open(d + "/client-java.properties", "w") as f:
            f.write("# Java client settings of the same cluster, for Kafka's tools (--command-config ...).\n")
            f.write("".join(line + "\n" for line in java))
    finally:
        os.umask(old)
    return "".join(line + "\n" for line in broker), scram


def forget_secrets(d):
    """After stop: nothing that could authenticate stays on disk."""
    svc.remove(d + "/tls", d + "/client.properties", d + "/client-java.properties")
    for f in glob.glob(d + "/node-*/server.properties"):
        with open(f, encoding="utf-8", errors="surrogateescape") as fh:
            text = fh.read()
        text = re.sub(r"(?m)^([^#=\n]*password=).*", lambda m: m.group(1) + SCRUBBED_SECRET, text)
        text = re.sub(r'(password=")[^"\n]*"', lambda m: m.group(1) + SCRUBBED_SECRET + '"', text)
        with open(f, "w", encoding="utf-8", errors="surrogateescape") as fh:
            fh.write(text)


# ---------------------------------------------------------------- nodes

def random_cluster_id():
    """A KRaft cluster id: 16 random bytes, URL-safe base64 without padding. Kafka's own
    generator avoids a leading '-', which command lines would take for an option."""
    while True:
        cid = base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


def node_count(d):
    return len(glob.glob(d + "/node-*/server.properties"))


def node_pidfiles(d):
    """The pid files of DIR's nodes (those with a configuration)."""
    return [os.path.dirname(n) + "/pid" for n in sorted(glob.glob(d + "/node-*/server.properties"))]


def cluster_state(d):
    return svc.state(node_pidfiles(d))


def start_node(java, cp, d, i, ns=""):
    """Launch node I detached, record its pid."""
    node, logs = "%s/node-%d" % (d, i), "%s/logs/node-%d" % (d, i)
    # The KBENCH_* option strings are split on spaces on purpose, like KAFKA_OPTS.
    heap = svc.split_opts(os.environ.get("KBENCH_KAFKA_HEAP_OPTS") or "-Xms512m -Xmx1g")
    extra = svc.split_opts(os.environ.get("KBENCH_KAFKA_JVM_OPTS"))
    # G1 with short pauses, as Kafka's own start scripts run the broker.
    opts = heap + ["-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:InitiatingHeapOccupancyPercent=35",
                   "-XX:+ExplicitGCInvokesConcurrent", "-Djava.awt.headless=true", "-Dkafka.logs.dir=" + logs,
                   "-Dlog4j2.configurationFile=%s/log4j2.properties" % SERVICE_CONFIG,
                   "-Dlog4j.configuration=file:%s/log4j.properties" % SERVICE_CONFIG] + extra
    svc.launch("kafka", node + "/pid", logs + "/stdout.log", "node %d" % i, ns,
               [java] + opts + ["-cp", cp, "kafka.Kafka", node + "/server.properties"])


def grep(pattern, *files):
    for f in files:
        try:
            with open(f, errors="replace") as fh:
                if pattern in fh.read():
                    return True
        except OSError:
            pass
    return False


def node_failure_hint(logs):
    """Why a node died, with the hints that match its last words."""
    if grep("UnsupportedClassVersionError", logs + "/stdout.log"):
        return " (this Kafka needs a newer Java: set JAVA_HOME to a newer JDK)"
    if grep("Address already in use", logs + "/stdout.log", logs + "/server.log"):
        return " (a port is already in use: pick others with --port-base)"
    return ""


def wait_ready(java, cp, version, d, n, port_base, bootstrap, timeout, hosts):
    """Until N brokers are registered."""
    probe_class = tool_class(version, "broker-api-versions")
    seen = [0]

    # Cheap check first (all broker ports accept connections), then ask the cluster itself:
    # the metadata response lists brokers once registered.
    def registered():
        if not all(svc.port_open(hosts[i], port_base + i) for i in range(n)):
            return False
        cmd = [java] + QUICK_JVM_OPTS + TOOL_JVM_OPTS + ["-cp", cp, probe_class, "--bootstrap-server", bootstrap,
                                                          "--command-config", d + "/client-java.properties"]
        try:
            out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=30).stdout
        except subprocess.TimeoutExpired as e:
            out = e.stdout or b""
        seen[0] = len(re.findall(rb"(?m)^[^ \n]+ \(id: [0-9]+", out))
        return seen[0] == n

    def died(pidfile):
        node = os.path.basename(os.path.dirname(pidfile))
        logs = "%s/logs/%s" % (d, node)
        cli.info("error: node %s exited during startup%s; logs: %s/server.log and %s/stdout.log%s%s"
                 % (node[len("node-"):], node_failure_hint(logs), logs, logs, svc.tail_log(logs + "/stdout.log"),
                    svc.tail_log(logs + "/server.log")))

    def late(t):
        cli.info("error: timed out after %d s waiting for %d broker(s) to register (%d seen); logs: "
                 "%s/logs/node-*/server.log%s" % (t, n, seen[0], d, svc.tail_log(d + "/logs/node-0/server.log")))

    return svc.wait(timeout, 1, registered, died, late, ["%s/node-%d/pid" % (d, i) for i in range(n)])


def kill_nodes(d, timeout):
    """SIGTERM our nodes, SIGKILL what is left after TIMEOUT s."""
    if not svc.stop("TERM", timeout, "the nodes of " + d, sorted(glob.glob(d + "/node-*/pid"))):
        cli.info("no Kafka node of %s is running" % d)


def stop_cluster(d, timeout):
    """stop: the nodes, their data and every secret; logs stay."""
    kill_nodes(d, timeout)
    svc.remove(d + "/node-*/data")
    forget_secrets(d)
    svc.remove(d + "/cluster.id")


# ---------------------------------------------------------------- commands

def check_port_base(port_base, brokers):
    if not (cli.is_uint(port_base) and int(port_base) >= 1024
            and int(port_base) + CONTROLLER_PORT_OFFSET + brokers <= 65535):
        SVC.bad_usage("--port-base must leave room for %d broker and controller ports in 1024..65535, got '%s'"
                      % (brokers, port_base))
    return int(port_base)


def read_or(path, default):
    return svc.read_text(path) if os.path.isfile(path) else default


def cmd_start(argv):
    o = SVC.opts("start", {"--version": "", "--brokers": "1", "--dir": "", "--port-base": DEFAULT_PORT_BASE,
                           "--host": "127.0.0.1", "--netns": "", "--timeout": "120",
                           "--security": os.environ.get("KBENCH_KAFKA_SECURITY") or "plaintext"}, argv)
    version = effective_version(o["version"])
    d = SVC.state_dir(o["dir"])
    if not (cli.is_uint(o["brokers"]) and 1 <= int(o["brokers"]) <= MAX_BROKERS):
        SVC.bad_usage("--brokers must be 1..%d, got '%s'" % (MAX_BROKERS, o["brokers"]))
    brokers, host, netns_dir, security, port_base = (int(o["brokers"]), o["host"], o["netns"], o["security"],
                                                     o["port_base"])
    if not re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+", host):
        SVC.bad_usage("--host must be an IPv4 address, got '%s'" % host)
    timeout = SVC.check_timeout(o["timeout"])
    check_security_mode(security)
    # `auto` is checked once it is a number.
    if port_base != "auto":
        check_port_base(port_base, brokers)
    if netns_dir and host != "127.0.0.1":
        SVC.bad_usage("--host and --netns exclude each other")
    SVC.check_dir(d)
    # A dry run ends here: what follows depends on this machine's state, not on the command.
    cli.dry_run_exit()
    if not host.startswith("127.") and ("inet %s/" % host) not in ip_addresses():
        SVC.bad_usage("--host %s is not an address of this machine" % host)
    # Per node: its address and, with --netns, its namespace.
    hosts, netns = [host] * brokers, [""] * brokers
    if netns_dir:
        if not os.path.isfile(netns_dir + "/brokers"):
            SVC.bad_usage("--netns %s: no broker namespaces there; run 'scripts/trogdor start --brokers %d --dir %s' "
                          "first" % (netns_dir, brokers, netns_dir))
        with open(netns_dir + "/brokers") as f:
            rows = [(line.split(None, 2) + ["", ""])[1:3] for line in f.read().splitlines()]
        if len(rows) < brokers:
            SVC.bad_usage("--netns %s has %d broker namespace(s), not %d" % (netns_dir, len(rows), brokers))
        hosts = [r[0] or host for r in rows[:brokers]]
        netns = [r[1].strip() for r in rows[:brokers]]
        # Each namespace has a network stack of its own: the default ports are free there.
        if port_base == "auto":
            port_base = DEFAULT_PORT_BASE
    if port_base == "auto":
        base = svc.free_ports(host, brokers, CONTROLLER_PORT_OFFSET)
        if base is None:
            cli.die("found no free ports on %s for %d broker(s)" % (host, brokers), 1)
        port_base = str(base)
    port_base = check_port_base(port_base, brokers)
    SVC.claim_dir(d, "kbench Kafka state directory: scripts/kafka may delete node-*/ and logs/ here")
    SVC.lock(d, 0)

    st = cluster_state(d)
    if st == "running":
        have = (read_or(d + "/version", ""), node_count(d), read_or(d + "/security", "plaintext"))
        if have != (version, brokers, security):
            cli.die("a cluster is already running in %s with Kafka %s, %d broker(s) and security %s, not %s with %d "
                    "and %s; run 'scripts/kafka stop --dir %s' first" % ((d,) + have + (version, brokers, security, d)),
                    1)
        cli.info("Kafka %s is already running in %s" % (version, d))
        print(svc.read_text(d + "/bootstrap"))
        return 0
    if st == "partial":
        cli.die("the cluster in %s is only partly running; run 'scripts/kafka stop --dir %s' first (logs: %s/logs)"
                % (d, d, d), 1)

    java, cp = java_and_classpath(version)

    # Every port is checked first: a half-started cluster is harder to explain than this.
    voters = ",".join("%d@%s:%d" % (i, hosts[i], port_base + CONTROLLER_PORT_OFFSET + i) for i in range(brokers))
    bootstrap = ",".join("%s:%d" % (hosts[i], port_base + i) for i in range(brokers))
    busy = [str(p) for i in range(brokers) for p in (port_base + i, port_base + CONTROLLER_PORT_OFFSET + i)
            if svc.port_open(hosts[i], p)]
    if busy:
        cli.die("port(s) %s on %s already in use; stop whatever listens there or pick other ports with --port-base"
                % (" ".join(busy), host), 1)

    # Fresh cluster every start: old data (if a previous run crashed) would carry a
    # different cluster id and stale topics into the benchmark.
    svc.remove(d + "/node-*", d + "/bootstrap", d + "/version", d + "/cluster.id", d + "/security", d + "/logs",
               d + "/netns")
    os.makedirs(d + "/logs", exist_ok=True)
    if netns_dir:  # start-node brings a node back in its namespace
        with open(d + "/netns", "w") as f:
            f.write("".join(ns + "\n" for ns in netns))
    # Certificates, users and client settings: new ones for every cluster.
    security_block, scram_args = prepare_security(d, security, hosts)
    cluster_id = random_cluster_id()
    svc.write_line(d + "/cluster.id", cluster_id)

    t0 = svc.seconds()
    cli.info("formatting storage for %d node(s) (cluster id %s)" % (brokers, cluster_id))
    formats = []
    for i in range(brokers):
        node = "%s/node-%d" % (d, i)
        os.makedirs(node + "/data", exist_ok=True)
        os.makedirs("%s/logs/node-%d" % (d, i), exist_ok=True)
        svc.render_template(SERVICE_CONFIG + "/server.properties.in", node + "/server.properties", {
            "NODE_ID": i, "VOTERS": voters, "HOST": hosts[i], "BROKER_PORT": port_base + i,
            "CONTROLLER_PORT": port_base + CONTROLLER_PORT_OFFSET + i, "DATA_DIR": node + "/data",
            "INTERNAL_RF": min(brokers, 3), "INTERNAL_MIN_ISR": min(brokers, 2),
            "LISTENER": PROTOCOLS[security], "SECURITY": security_block})
        os.chmod(node + "/server.properties", 0o600)  # it holds the broker's passwords
        # Formatting is one JVM per node; run them side by side.
        with open("%s/logs/node-%d/format.log" % (d, i), "w") as log:
            formats.append(subprocess.Popen(
                [java] + QUICK_JVM_OPTS + TOOL_JVM_OPTS + ["-cp", cp, tool_class(version, "storage"), "format",
                                                           "--cluster-id", cluster_id, "--config",
                                                           node + "/server.properties", "--ignore-formatted"]
                + scram_args, stdout=log, stderr=subprocess.STDOUT))
    for i, p in enumerate(formats):
        if p.wait():
            log = "%s/logs/node-%d/format.log" % (d, i)
            cli.die("formatting storage of node %d failed; see %s:%s" % (i, log, svc.tail_log(log)), 1)

    cli.info("starting Kafka %s: %d node(s) in %s, security %s" % (version, brokers, d, security_summary(security)))
    svc.write_line(d + "/version", version)
    # Whatever goes wrong from here on (a node dies, timeout, Ctrl-C), take down
    # the nodes this run started instead of leaving half a cluster behind.
    SVC.guard(lambda: kill_nodes(d, 10))
    for i in range(brokers):
        start_node(java, cp, d, i, netns[i])
    if not wait_ready(java, cp, version, d, brokers, port_base, bootstrap, timeout, hosts):
        return 1
    SVC.unguard()
    svc.write_line(d + "/bootstrap", bootstrap)
    cli.info("Kafka %s is up at %s (%d s); client settings: %s/client.properties"
             % (version, bootstrap, svc.seconds() - t0, d))
    print(bootstrap)
    return 0


def ip_addresses():
    try:
        return subprocess.run(["ip", "-4", "-o", "addr", "show"], capture_output=True, text=True).stdout
    except OSError:
        return ""


def cmd_status(argv):
    d = SVC.state_dir(SVC.opts("status", {"--dir": ""}, argv)["dir"])
    st = cluster_state(d)
    print("state:     " + st)
    print("dir:       " + d)
    if os.path.isfile(d + "/version"):
        print("version:   " + svc.read_text(d + "/version"))
    if os.path.isfile(d + "/security"):
        print("security:  " + security_summary(svc.read_text(d + "/security")))
    if st == "running" and os.path.isfile(d + "/bootstrap"):
        print("bootstrap: " + svc.read_text(d + "/bootstrap"))
    if st == "running" and os.path.isfile(d + "/client.properties"):
        print("client config: %s/client.properties" % d)
    for n in sorted(glob.glob(d + "/node-*/")):
        n = os.path.basename(n.rstrip("/"))
        p = svc.pid("%s/%s/pid" % (d, n))
        print("%s:    %s, log %s/logs/%s/server.log" % (n, "pid " + p if p else "stopped", d, n))
    return svc.status_exit(st)


def node_args(cmd, argv):
    """N, --dir, --kill (stop-node), --timeout."""
    node, d, kill, timeout = "", "", False, ""
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("--dir", "--timeout"):
            value = SVC.need_value(argv, i)
            d, timeout = (value, timeout) if a == "--dir" else (d, value)
            i += 2
            continue
        if a == "--kill":
            if cmd != "stop-node":
                SVC.bad_usage("%s: unknown argument '%s'" % (cmd, a))
            kill = True
        elif a in ("-h", "--help"):
            usage()
            sys.exit(0)
        else:
            if node:
                SVC.bad_usage("%s: unexpected argument '%s'" % (cmd, a))
            node = a
        i += 1
    d = SVC.state_dir(d)
    if not cli.is_uint(node):
        SVC.bad_usage("%s: needs a node number N, got '%s'" % (cmd, node))
    if not os.path.isfile("%s/node-%s/server.properties" % (d, node)):
        SVC.bad_usage("%s: %s has no node %s" % (cmd, d, node))
    if timeout:
        SVC.check_timeout(timeout)
    return node, d, kill, timeout


def cmd_stop_node(argv):
    node, d, kill, timeout = node_args("stop-node", argv)
    SVC.lock(d, 60)
    if not svc.stop("KILL" if kill else "TERM", int(timeout or 30), "node " + node, ["%s/node-%s/pid" % (d, node)]):
        cli.die("node %s of %s is not running" % (node, d), 1)
    cli.info("node %s stopped; its data is kept (start-node %s brings it back)" % (node, node))
    return 0


def cmd_start_node(argv):
    node, d, _, timeout = node_args("start-node", argv)
    SVC.lock(d, 60)
    if svc.pid("%s/node-%s/pid" % (d, node)):
        cli.die("node %s of %s is already running" % (node, d), 1)
    if not (os.path.isfile(d + "/bootstrap") and os.path.isdir("%s/node-%s/data" % (d, node))):
        cli.die("node %s of %s has no data to start on (was the cluster stopped? use start)" % (node, d), 1)
    version, bootstrap = svc.read_text(d + "/version"), svc.read_text(d + "/bootstrap")
    port_base = int(bootstrap.split(",")[0].rsplit(":", 1)[-1])
    n = node_count(d)
    java = svc.find_java()
    cp = resolve_classpath(version)
    t0 = svc.seconds()
    # The node comes back where it ran: in its network namespace (start --netns), probed on
    # the addresses the cluster was started on.
    hosts = [b.rsplit(":", 1)[0] for b in bootstrap.split(",")]
    netns = svc.read_text(d + "/netns").split("\n") if os.path.isfile(d + "/netns") else [""] * n
    start_node(java, cp, d, int(node), netns[int(node)])
    if not wait_ready(java, cp, version, d, n, port_base, bootstrap, int(timeout or 120), hosts):
        return 1
    cli.info("node %s is back (%d s)" % (node, svc.seconds() - t0))
    return 0


def cmd_client_config(argv):
    o = SVC.opts("client-config", {"--dir": "", "--java": False}, argv)
    d = SVC.state_dir(o["dir"])
    cli.dry_run_exit()
    f = d + ("/client-java.properties" if o["java"] else "/client.properties")
    if not (cluster_state(d) == "running" and os.path.isfile(f)):
        cli.die("no running cluster in %s (its client settings exist only while it runs; scripts/kafka start --dir %s)"
                % (d, d), 1)
    print(f)
    return 0


def cmd_classpath(argv):
    version = effective_version(SVC.opts("classpath", {"--version": ""}, argv)["version"])
    cli.dry_run_exit()
    print(resolve_classpath(version))
    return 0


def cmd_run_class(argv):
    version, d, i = "", "", 0
    while i < len(argv):
        a = argv[i]
        if a in ("--version", "--dir"):
            value = SVC.need_value(argv, i)
            version, d = (value, d) if a == "--version" else (version, value)
            i += 2
        elif a in ("-h", "--help"):
            usage()
            sys.exit(0)
        elif a == "--":
            i += 1
            break
        elif a.startswith("-"):
            SVC.bad_usage("run-class: unknown option '%s' (options go before CLASS)" % a)
        else:
            break
    if i >= len(argv):
        SVC.bad_usage("run-class: missing CLASS")
    cls, args = argv[i], argv[i + 1:]
    if not version:
        # Tools should match the broker that is running, unless told otherwise.
        d = SVC.state_dir(d)
        if not os.environ.get("KBENCH_KAFKA_VERSION") and os.path.isfile(d + "/version"):
            version = svc.read_text(d + "/version")
    version = effective_version(version)
    if "." not in cls:
        mapped = tool_class(version, cls)
        if not mapped:
            SVC.bad_usage("run-class: '%s' is neither a Java class name nor one of: %s" % (cls, tool_names()))
        cls = mapped
    if not re.fullmatch(r"[A-Za-z_$][A-Za-z0-9_$.]*", cls):
        SVC.bad_usage("run-class: '%s' is not a Java class name" % cls)
    cli.dry_run_exit()
    java, cp = java_and_classpath(version)
    # KBENCH_KAFKA_TOOL_OPTS is split on spaces on purpose, like KAFKA_OPTS.
    extra = svc.split_opts(os.environ.get("KBENCH_KAFKA_TOOL_OPTS"))
    svc.exec_java([java] + TOOL_JVM_OPTS + extra + ["-cp", cp, cls] + args)


COMMANDS = {"start": cmd_start, "stop": lambda argv: SVC.cmd_stop(argv, 30, stop_cluster), "status": cmd_status,
            "client-config": cmd_client_config, "stop-node": cmd_stop_node, "start-node": cmd_start_node,
            "classpath": cmd_classpath, "run-class": cmd_run_class}


def main(argv):
    if not argv:
        usage(sys.stderr)
        return 2
    cmd = argv[0]
    if cmd in ("-h", "--help", "help"):
        usage()
        return 0
    if cmd not in COMMANDS:
        SVC.bad_usage("unknown command '%s'" % cmd)
    return COMMANDS[cmd](argv[1:])


if __name__ == "__main__":
    SVC.run(main)
