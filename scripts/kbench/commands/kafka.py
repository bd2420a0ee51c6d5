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
import os
import textwrap

from kbench import cli, kafka_security, proc
from kbench import jvm_service as svc
from kbench import kafka_cluster as kc


def cmd_start(args):
    print(kc.start(args.dir, brokers=args.brokers, version=args.version, security=args.security,
                port_base=args.port_base, host=args.host, netns=args.netns, timeout=args.timeout or 120))


def cmd_status(args):
    d = kc.SERVICE.state_dir(args.dir)
    st = kc.cluster_state(d)
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
    for pidfile in kc.node_pidfiles(d):
        n = os.path.basename(os.path.dirname(pidfile))
        p = svc.pid(pidfile)
        print("%s:    %s, log %s/logs/%s/server.log" % (n, "pid " + p if p else "stopped", d, n))
    return svc.status_exit(st)


def cmd_client_config(args):
    cli.dry_run_exit()
    print(kc.client_config(args.dir, args.java))


def cmd_classpath(args):
    kc.effective_version(args.version)
    cli.dry_run_exit()
    print(kc.classpath(args.version))


def cmd_run_class(args):
    return proc.status(kc.run_class([args.cls] + args.args, version=args.version, directory=args.dir).returncode)


# name: (what runs it, its one-line help, more of its description)
COMMANDS = {
    "start": (cmd_start, "start a cluster and print its bootstrap address",
              """Start N combined broker+controller nodes and wait until all are registered; the
settings a client needs are in DIR/client.properties, whatever the security mode."""),
    "stop": (lambda a: kc.stop(a.dir, a.timeout or 30), "stop the cluster and delete its data and secrets",
             """SIGTERM, then SIGKILL after --timeout s (default 30); delete the nodes' data,
certificates and client settings and scrub the passwords; logs are kept."""),
    "status": (cmd_status, "show the cluster's state; exit 0 running, 3 stopped, 1 partly running",
               "State, version, security, bootstrap, client config, pids and log paths."),
    "stop-node": (lambda a: kc.stop_node(a.dir, a.node, kill=a.kill, timeout=a.timeout or 30),
                  "stop node N, keeping its data (for fault tests)",
                  """SIGTERM: a controlled shutdown that hands its leaderships over; --kill: SIGKILL,
a crash. The other nodes keep running."""),
    "start-node": (lambda a: kc.start_node(a.dir, a.node, timeout=a.timeout or 120),
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
The version defaults to the one running in DIR.""" % textwrap.fill(", ".join(kc.TOOLS), 84, initial_indent="  ",
                                                                   subsequent_indent="  ", break_on_hyphens=False)),
}


def add_arguments(parser):
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    version = "Kafka release, e.g. 4.1.1 or 3.9.1 (env KBENCH_KAFKA_VERSION, default %s)" % kc.DEFAULT_VERSION
    p = {}
    for name, (run, summary, details) in COMMANDS.items():
        p[name] = commands.add_parser(name, help=summary, description=summary[0].upper() + summary[1:] + ".\n"
                                      + details, formatter_class=cli.HelpFormatter)
        p[name].set_defaults(run=run)
        if name != "classpath":
            p[name].add_argument("--dir", help="state directory (env KBENCH_KAFKA_DIR, default %s)"
                                 % kc.SERVICE.default_dir)
        if name in ("start", "stop", "start-node", "stop-node"):
            p[name].add_argument("--timeout", type=cli.POSITIVE, metavar="S",
                                 help="seconds to wait for a start (default 120) or stop (default 30)")
        if name in ("stop-node", "start-node"):
            p[name].add_argument("node", type=int, metavar="N", help="the node's number (0 is the first)")
        if name in ("start", "classpath", "run-class"):
            p[name].add_argument("--version", metavar="V", help=version)
    start_p = p["start"]
    start_p.add_argument("--brokers", type=int, default=1, metavar="N",
                         help="number of nodes, 1..%d (default 1)" % kc.MAX_BROKERS)
    start_p.add_argument("--port-base", default=kc.DEFAULT_PORT_BASE, metavar="P|auto",
                         help="broker i listens on P+i, its controller on P+%d+i (default %d); auto: ports that "
                              "are free now" % (kc.CONTROLLER_PORT_OFFSET, kc.DEFAULT_PORT_BASE))
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
    return svc.run_command(args)
