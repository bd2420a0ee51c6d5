"""Run Apache Kafka's Trogdor (a coordinator and N agents) for scripts/distributed, so that
kbench rows run from many "hosts" at once.

Trogdor 3.9.1 is resolved from Maven Central and cached like Kafka. On this machine every
agent runs in a network namespace of its own, on a bridge that start makes (root); stop
removes exactly what start made. On real hosts, `start --nodes FILE` names the hosts and
each host runs its own part (docs/distributed.md).

    HOST=$(scripts/trogdor start --agents 3)
    scripts/kafka start --port-base auto --host "$HOST"

State directory (--dir, env KBENCH_TROGDOR_DIR, default /tmp/kbench-trogdor): cluster.json,
coordinator, agents, brokers, host, network (what stop removes), logs/. Environment:
KBENCH_CACHE (cache root, default ~/.cache/kbench), JAVA_HOME.

Exit status: 0 ok, 1 failure, 2 bad usage or a missing prerequisite, 3 (status) stopped,
130 (143) interrupted by SIGINT (SIGTERM): what start began is stopped.
"""

import hashlib
import json
import os
import re
import shutil
import signal
import time

from kbench import ROOT, build_stamp, cli, proc
from kbench import jvm_service as svc

SERVICE = svc.Service("Trogdor", ".kbench-trogdor", "KBENCH_TROGDOR_DIR", "/tmp/kbench-trogdor")
# The newest Trogdor on Maven Central; kbench's worker does not use its Kafka client.
TROGDOR_VERSION = "3.9.1"
SLF4J_BINDING_VERSION = "1.7.36"
AGENT_PORT = 8888
COORDINATOR_PORT = 8889
MAX_AGENTS = 16
MAX_BROKER_NS = 9
AGENT_CLASS = "org.apache.kafka.trogdor.agent.Agent"
COORDINATOR_CLASS = "org.apache.kafka.trogdor.coordinator.Coordinator"
# 10.213.X.0/24 (X free at start): .1 this host's end of the bridge, .10+i agent i.
SUBNET_PREFIX = "10.213"
# One network set-up at a time across all state directories (subnets are machine-wide).
NET_LOCK = "/run/lock/kbench-trogdor-net.lock"


def fill_trogdor(c):
    # Trogdor names slf4j-api without a binding: reload4j makes the agents write their logs.
    svc.write_pom(c + "/pom.xml", "trogdor", TROGDOR_VERSION, "Trogdor " + TROGDOR_VERSION,
                  ["org.apache.kafka:trogdor:" + TROGDOR_VERSION, "org.slf4j:slf4j-reload4j:" + SLF4J_BINDING_VERSION])
    if not svc.mvn(c, "org/apache/kafka/trogdor/" + TROGDOR_VERSION):
        raise svc.ServiceError("Maven failed to resolve Trogdor %s; see %s/mvn.log:%s"
                               % (TROGDOR_VERSION, c, svc.log_tail(c + "/mvn.log")))


def classpath():
    return svc.classpath(build_stamp.cache_dir("trogdor/" + TROGDOR_VERSION), "Trogdor " + TROGDOR_VERSION,
                         fill_trogdor)


def net_tag(d):
    """The tag of what state directory D made, short: interface names have 15 characters."""
    return hashlib.md5(d.encode("utf-8", "surrogateescape")).hexdigest()[:5]


def ns_name(d, name):
    return "kbt%s-%s" % (net_tag(d), name)


def read_rows(path):
    """The lines of PATH as [first word, the rest]."""
    return [(line.split(None, 1) + [""])[:2] for line in svc.read_or(path, "").splitlines()]


def pidfiles_of(d):
    """The pid files of D's JVMs: the coordinator's and the agents' that start wrote."""
    names = ["coordinator"] + [name for name, _ in read_rows(d + "/agents")]
    return [f for f in ("%s/%s.pid" % (d, n) for n in names) if os.path.isfile(f)]


def ip(*args, why=None):
    """Run ip ARGS; a failure is a ServiceError (WHY, else the command that failed)."""
    if proc.run(("ip",) + args).returncode:
        raise svc.ServiceError(why or "'%s' failed" % proc.quote(("ip",) + args))


def free_subnet():
    """A /24 under SUBNET_PREFIX that no interface or route of this machine uses yet."""
    addrs = proc.output(["ip", "-4", "-o", "addr", "show"]) or ""
    for x in range(1, 255):
        subnet = "%s.%d" % (SUBNET_PREFIX, x)
        routes = proc.output(["ip", "-4", "route", "show", "to", "match", subnet + ".1"]) or ""
        if all(r.startswith("default") for r in routes.splitlines()) and " %s." % subnet not in addrs:
            return subnet
    raise svc.ServiceError("no free /24 under %s.0.0/16 for the namespaces" % SUBNET_PREFIX)


def note(d, line):
    """Record in D/network what is about to be made, for stop to remove."""
    with open(d + "/network", "a") as f:
        f.write(line + "\n")


def make_network(d, agents, brokers, shaping):
    br = "kbt" + net_tag(d)
    with svc.locked(NET_LOCK, 60, "another scripts/trogdor is setting up its network (%s)" % NET_LOCK):
        subnet = free_subnet()
        svc.write_line(d + "/network", "subnet " + subnet)
        note(d, "bridge " + br)
        ip("link", "add", br, "type", "bridge", why="could not create bridge %s (is this root, with iproute2?)" % br)
        ip("addr", "add", subnet + ".1/24", "dev", br)
        ip("link", "set", br, "up")
    svc.write_line(d + "/host", subnet + ".1")
    svc.remove(d + "/brokers")
    add_nodes(d, br, "agent", agents, subnet, 10, shaping)
    if brokers:
        add_nodes(d, br, "broker", brokers, subnet, 100, shaping)
    return subnet


def add_nodes(d, br, kind, count, subnet, first, shaping):
    """KIND-0.. at SUBNET.FIRST+i, listed in D/KINDs ("NAME ADDRESS [NAMESPACE]")."""
    rows = []
    for i in range(count):
        name, addr = "%s-%d" % (kind, i), "%s.%d" % (subnet, first + i)
        add_node_ns(d, br, name, "%s%d" % (kind[0], i), addr, shaping)
        rows.append("%s %s" % (name, addr) + ("" if kind == "agent" else " " + ns_name(d, name)))
    svc.write_line("%s/%ss" % (d, kind), "\n".join(rows))


def add_node_ns(d, br, name, short, addr, shaping):
    """A namespace with loopback and one veth on bridge BR, shaped as SHAPING says."""
    ns, host_if = ns_name(d, name), br + short
    peer_if = host_if + "p"
    note(d, "netns " + ns)
    ip("netns", "add", ns, why="could not create network namespace " + ns)
    ip("link", "add", host_if, "type", "veth", "peer", "name", peer_if, why="could not create veth pair " + host_if)
    ip("link", "set", peer_if, "netns", ns)
    ip("link", "set", host_if, "master", br, "up")
    ip("-n", ns, "link", "set", "lo", "up")
    ip("-n", ns, "link", "set", peer_if, "name", "eth0")
    ip("-n", ns, "addr", "add", addr + "/24", "dev", "eth0")
    ip("-n", ns, "link", "set", "eth0", "up")
    if not shaping:
        return
    # Both directions: the namespace's egress, and the host end's egress (its ingress).
    for cmd in (["tc", "-n", ns, "qdisc", "add", "dev", "eth0", "root"],
                ["tc", "qdisc", "add", "dev", host_if, "root"]):
        if proc.run(cmd + shaping, log=d + "/logs/tc.log").returncode:
            err = proc.tail(d + "/logs/tc.log", 3)
            if shaping[0] == "netem":
                raise svc.ServiceError("tc netem is not available on this kernel (module sch_netem missing: %s); "
                                       "--delay cannot be emulated here, --rate-limit alone works (tbf)" % err, 2)
            raise svc.ServiceError("tc %s failed on %s: %s" % (" ".join(shaping), name, err))


def remove_network(d):
    rows = read_rows(d + "/network")
    for kind in ("netns", "bridge"):  # namespaces first: their veths leave the bridge with them
        for what, value in rows:
            if what == kind:
                proc.output(["ip", "netns", "del", value] if kind == "netns" else ["ip", "link", "del", value])
    svc.remove(d + "/network", d + "/host", d + "/brokers")


def java_and_classpath():
    return svc.java(11, "Trogdor " + TROGDOR_VERSION), classpath()


def start_jvm(jvm, d, name, cls, ns, node):
    """One Trogdor daemon for cluster node NODE, its pid in D/NAME.pid; JVM: (java, classpath)."""
    opt = "--coordinator.config" if cls == COORDINATOR_CLASS else "--agent.config"
    svc.launch("%s/%s.pid" % (d, name), "%s/logs/%s.log" % (d, name), name, ns,
               [jvm[0], "-Xms64m", "-Xmx256m", "-XX:+UseSerialGC", "-Djava.awt.headless=true",
                "-Dlog4j.configuration=file:%s/scripts/services/trogdor/log4j.properties" % ROOT,
                "-cp", jvm[1], cls, opt, d + "/cluster.json", "--node-name", node])


def stop_trogdor(d, timeout):
    """The JVMs, then the network they ran in."""
    svc.stop(signal.SIGTERM, timeout, "the Trogdor processes of " + d, pidfiles_of(d))
    svc.remove(d + "/*.pid")
    remove_network(d)


def wait_ready(d, timeout):
    """Until the coordinator and every agent answer their status URL."""
    urls = [svc.read(d + "/coordinator") + "/coordinator/status"]
    urls += ["http://%s:%d/agent/status" % (addr, AGENT_PORT) for _, addr in read_rows(d + "/agents")]

    def died(pidfile):
        name = os.path.basename(pidfile)[:-len(".pid")]
        log = "%s/logs/%s.log" % (d, name)
        return "%s exited during startup; log %s:%s" % (name, log, svc.log_tail(log))

    def late():
        return ("timed out after %d s waiting for the coordinator and agents to answer; logs in %s/logs%s"
                % (timeout, d, svc.log_tail(d + "/logs/coordinator.log")))

    svc.wait(timeout, 0.5, lambda: svc.answers(urls), died, late, pidfiles_of(d))


def write_cluster_file(d, subnet, agents):
    # The coordinator shares agent-0's host, as in Trogdor's own single-host config.
    nodes = {"agent-%d" % i: {"hostname": "%s.%d" % (subnet, 10 + i), "trogdor.agent.port": AGENT_PORT}
             for i in range(agents)}
    nodes["agent-0"]["trogdor.coordinator.port"] = COORDINATOR_PORT
    svc.write_line(d + "/cluster.json",
                   json.dumps({"platform": "org.apache.kafka.trogdor.basic.BasicPlatform", "nodes": nodes}, indent=2))


def prepare_dir(d):
    """A new or empty directory, or one start marked as its own before; and writable."""
    SERVICE.check_dir(d)
    SERVICE.claim_dir(d, "kbench Trogdor state directory: scripts/trogdor may delete what is here")


def start(args):
    """On this machine: a bridge, namespaces, a coordinator and agents; prints the bridge."""
    d = SERVICE.state_dir(args.dir)
    if not 1 <= args.agents <= MAX_AGENTS:
        raise svc.ServiceError("--agents must be 1..%d, got %d" % (MAX_AGENTS, args.agents), 2)
    if not 0 <= args.brokers <= MAX_BROKER_NS:
        raise svc.ServiceError("--brokers must be 0..%d, got %d" % (MAX_BROKER_NS, args.brokers), 2)
    rate, delay = args.rate_limit, args.delay
    if rate and not re.fullmatch(r"[0-9]+(kbit|mbit|gbit)", rate):
        raise svc.ServiceError("--rate-limit takes a tc rate such as 100mbit, got '%s'" % rate, 2)
    if delay and not re.fullmatch(r"[0-9]+(\.[0-9]+)?ms", delay):
        raise svc.ServiceError("--delay takes milliseconds such as 2ms, got '%s'" % delay, 2)
    SERVICE.check_dir(d)
    cli.dry_run_exit()
    shaping = []
    if delay:
        shaping = ["netem", "delay", delay] + (["rate", rate] if rate else [])
    elif rate:
        # tbf: bursts of up to 64 KiB at line speed, queueing up to 100 ms, then drops.
        shaping = ["tbf", "rate", rate, "burst", "64kb", "latency", "100ms"]
    if os.geteuid() != 0:
        raise svc.ServiceError("network namespaces need root; on real hosts use --nodes FILE (see "
                               "docs/distributed.md)", 2)
    if not shutil.which("ip"):
        raise svc.ServiceError("ip not found: apt-get install iproute2", 2)
    prepare_dir(d)
    with SERVICE.lock(d, 0):
        st = svc.state(pidfiles_of(d))
        if st == "running":
            have = len(read_rows(d + "/agents"))
            if have != args.agents:
                raise svc.ServiceError("Trogdor is already running in %s with %d agent(s), not %d; run "
                                       "'scripts/trogdor stop --dir %s' first" % (d, have, args.agents, d))
            cli.info("Trogdor is already running in " + d)
            print(svc.read(d + "/host"))
            return
        if st != "stopped":
            raise svc.ServiceError("Trogdor in %s is only partly running; run 'scripts/trogdor stop --dir %s' first"
                                   % (d, d))
        jvm = java_and_classpath()
        # Leftovers of a run that crashed: stop removes only what its files name.
        remove_network(d)
        svc.remove(d + "/*.pid", d + "/agents", d + "/coordinator", d + "/role-*", d + "/logs")
        os.makedirs(d + "/logs")
        t0 = time.monotonic()
        try:
            subnet = make_network(d, args.agents, args.brokers, shaping)
            write_cluster_file(d, subnet, args.agents)
            svc.write_line(d + "/coordinator", "http://%s.10:%d" % (subnet, COORDINATOR_PORT))
            cli.info("starting a Trogdor coordinator and %d agent(s) on %s.0/24 in %s" % (args.agents, subnet, d))
            for name, _ in read_rows(d + "/agents"):
                start_jvm(jvm, d, name, AGENT_CLASS, ns_name(d, name), name)
            start_jvm(jvm, d, "coordinator", COORDINATOR_CLASS, ns_name(d, "agent-0"), "agent-0")
            wait_ready(d, args.timeout or 60)
        except BaseException:
            # An error, the timeout, Ctrl-C or SIGTERM: nothing this start made is left behind.
            stop_trogdor(d, 5)
            raise
    cli.info("Trogdor is up: coordinator %s, %d agent(s) (%.0f s)"
             % (svc.read(d + "/coordinator"), args.agents, time.monotonic() - t0))
    print(svc.read(d + "/host"))


def cluster_node(path, node, role):
    """(hostname, port) of NODE in a Trogdor cluster file (else ServiceError, status 2)."""
    try:
        with open(path) as f:
            entry = json.load(f)["nodes"].get(node)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise svc.ServiceError('%s is not a Trogdor cluster file ({"nodes": {...}}): %s' % (path, e), 2) from None
    port = "trogdor.%s.port" % role
    if not isinstance(entry, dict) or port not in entry or "hostname" not in entry:
        raise svc.ServiceError("%s has no node %r with hostname and %s" % (path, node, port), 2)
    return entry["hostname"], entry[port]


def start_real_host(args):
    """A host of a real cluster: start this host's role from the user's cluster file."""
    d, nodes, role, node = SERVICE.state_dir(args.dir), args.nodes, args.role, args.node
    if not (os.path.isfile(nodes) and os.access(nodes, os.R_OK)):
        raise svc.ServiceError("--nodes: cannot read '%s'" % nodes, 2)
    if not role:
        raise svc.ServiceError("--nodes needs --role coordinator or --role agent", 2)
    if not node:
        raise svc.ServiceError("--nodes needs --node NAME (this host's name in %s)" % nodes, 2)
    hostname, port = cluster_node(nodes, node, role)
    SERVICE.check_dir(d)
    cli.dry_run_exit()
    prepare_dir(d)
    with SERVICE.lock(d, 0):
        jvm = java_and_classpath()
        shutil.copyfile(nodes, d + "/cluster.json")
        svc.remove(d + "/role-*")
        open("%s/role-%s" % (d, role), "a").close()
        if role == "agent":
            name, path = node, "/agent/status"
            svc.write_line(d + "/agents", node + " -")
            start_jvm(jvm, d, node, AGENT_CLASS, "", node)
        else:
            name, path = "coordinator", "/coordinator/status"
            svc.remove(d + "/agents")
            svc.write_line(d + "/coordinator", "http://%s:%s" % (hostname, port))
            start_jvm(jvm, d, "coordinator", COORDINATOR_CLASS, "", node)
        # Until this host's daemon answers on its own REST port.
        url = "http://127.0.0.1:%s%s" % (port, path)
        log = "%s/logs/%s.log" % (d, name)
        svc.wait(60, 0.5, lambda: svc.answers([url]),
                 lambda _: "the %s exited during startup; log %s:%s" % (role, log, svc.log_tail(log)),
                 lambda: "the %s does not answer on %s after 60 s; log %s" % (role, url, log),
                 ["%s/%s.pid" % (d, name)])
    cli.info("started the Trogdor %s %s (log %s/logs/)" % (role, node, d))


def cmd_start(args):
    if args.nodes:
        return start_real_host(args)
    if args.role or args.node:
        raise svc.ServiceError("--role and --node go with --nodes FILE", 2)
    return start(args)


def cmd_stop(args):
    cli.dry_run_exit()
    SERVICE.stop(SERVICE.state_dir(args.dir), args.timeout or 10, stop_trogdor)


def cmd_status(args):
    d = SERVICE.state_dir(args.dir)
    st = svc.state(pidfiles_of(d))
    if not args.quiet:
        print("state:       " + st)
        print("dir:         " + d)
        if os.path.isfile(d + "/coordinator"):
            print("coordinator: " + svc.read(d + "/coordinator"))
        if os.path.isfile(d + "/host"):
            print("host:        %s (brokers listen here)" % svc.read(d + "/host"))
        for name, addr in read_rows(d + "/agents"):
            p = svc.pid("%s/%s.pid" % (d, name))
            print("%s: %s, %s, log %s/logs/%s.log" % (name, addr.strip(), "pid " + p if p else "stopped", d, name))
    return svc.status_exit(st)


def add_arguments(parser):
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    start_p = commands.add_parser("start", help="start a coordinator and agents; print the bridge address",
                                  formatter_class=cli.HelpFormatter, description="""\
On this machine (root): a bridge, a network namespace per node, a coordinator and N agents;
prints the address brokers should listen on (this host's end of the bridge).
With --nodes FILE --role R --node NAME, on every real host FILE names: start its part of
that Trogdor cluster file (docs/distributed.md).""")
    start_p.set_defaults(run=cmd_start)
    start_p.add_argument("--agents", type=int, default=2, metavar="N", help="agents, 1..%d (default 2)" % MAX_AGENTS)
    start_p.add_argument("--brokers", type=int, default=0, metavar="M",
                         help="also M empty namespaces broker-0.. (listed in DIR/brokers) for 'scripts/kafka start "
                              "--brokers M --netns DIR' (0..%d, default 0)" % MAX_BROKER_NS)
    start_p.add_argument("--rate-limit", metavar="RATE",
                         help="shape every namespace's link both ways with tc tbf, e.g. 100mbit (default: off)")
    start_p.add_argument("--delay", metavar="D", help="tc netem delay, e.g. 2ms, only where the kernel has it "
                                                      "(else refused with exit 2)")
    start_p.add_argument("--nodes", metavar="FILE", help="a Trogdor cluster file naming real hosts")
    start_p.add_argument("--role", choices=("coordinator", "agent"), help="this host's role (with --nodes)")
    start_p.add_argument("--node", metavar="NAME", help="this host's node name in FILE (with --nodes)")
    stop_p = commands.add_parser("stop", help="stop the JVMs and remove the network start made",
                                 description="Stop the coordinator and agents started in DIR (SIGTERM, then SIGKILL "
                                             "after --timeout s, default 10) and remove the namespaces, veth pairs "
                                             "and bridge that start made. Nothing else is touched.")
    stop_p.set_defaults(run=cmd_stop)
    status_p = commands.add_parser("status", help="show state, coordinator and agents; exit 0 running, 3 stopped, "
                                                  "1 partly running")
    status_p.set_defaults(run=cmd_status)
    status_p.add_argument("--quiet", action="store_true", help="only the exit status")
    classpath_p = commands.add_parser("classpath", help="print Trogdor's classpath (resolving it if needed)")
    classpath_p.set_defaults(run=lambda _: print(classpath()))
    for p, timeout in ((start_p, 60), (stop_p, 10), (status_p, None)):
        p.add_argument("--dir", help="state directory (env KBENCH_TROGDOR_DIR, default %s)" % SERVICE.default_dir)
        if timeout:
            p.add_argument("--timeout", type=cli.POSITIVE, metavar="S", help="seconds to wait (default %d)" % timeout)


def main(args):
    return svc.run_command(args)
