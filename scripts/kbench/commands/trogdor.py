"""scripts/trogdor: run Apache Kafka's Trogdor (a coordinator and N agents) for
scripts/distributed, so that kbench rows run from many "hosts" at once.

Trogdor is resolved from Maven Central (org.apache.kafka:trogdor and its runtime
dependencies) and cached like Kafka. On this machine every agent runs in a network
namespace of its own with its own address on a bridge that this tool makes, so each
agent's traffic crosses a real network stack; `stop` removes exactly what `start` made.
On real hosts, `--nodes FILE` names the hosts and each host runs its own agent.
"""

import hashlib
import os
import re
import shutil
import subprocess
import sys

from kbench import ROOT, cli
from kbench import jvm_service as svc

DEFAULT_DIR = "/tmp/kbench-trogdor"
# 3.9.1 is the newest Trogdor on Maven Central (4.x is not published there); it drives
# 4.x brokers too, and kbench's worker does not use Trogdor's Kafka client at all.
TROGDOR_VERSION = "3.9.1"
SLF4J_BINDING_VERSION = "1.7.36"
AGENT_PORT = 8888
COORDINATOR_PORT = 8889
MAX_AGENTS = 16
MAX_BROKER_NS = 9
AGENT_CLASS = "org.apache.kafka.trogdor.agent.Agent"
COORDINATOR_CLASS = "org.apache.kafka.trogdor.coordinator.Coordinator"
# Namespaces live on 10.213.X.0/24: .1 is this host's end of the bridge (brokers listen
# there), .10+i agent i (the coordinator runs beside agent 0). X is picked free at start.
SUBNET_PREFIX = "10.213"
# One network set-up at a time across all state directories (subnets are machine-wide).
NET_LOCK = "/run/lock/kbench-trogdor-net.lock"


def usage(file=None):
    print("""Usage: scripts/trogdor COMMAND [options]

Runs Apache Kafka's Trogdor (%(version)s) for scripts/distributed.

Commands:
  start [--agents N] [--brokers M] [--rate-limit RATE] [--delay D] [--dir DIR] [--timeout S]
        On this machine: make a bridge and one network namespace per node, start a
        coordinator and N agents (1..%(max)d, default 2) each with its own address,
        write DIR/cluster.json and wait until the coordinator sees every agent.
        --brokers M: also M empty namespaces broker-0.. (listed in DIR/brokers) for
        'scripts/kafka start --brokers M --netns DIR'.
        --rate-limit RATE: shape every namespace's link both ways with tc tbf (e.g.
        100mbit; off by default). --delay D (e.g. 2ms): tc netem, only where the kernel
        has it (this machine's does not: refused with exit 2).
        Prints the address brokers should listen on (this host's end of the bridge):
            HOST=$(scripts/trogdor start --agents 3)
            scripts/kafka start --port-base auto --host "$HOST"
  start --nodes FILE --role coordinator|agent --node NAME [--dir DIR]
        On real hosts: start this host's part of the cluster described by FILE (a
        Trogdor cluster file, see docs/distributed.md), in the foreground-less way
        above but without namespaces. Run it on every host named in FILE.
  stop [--dir DIR] [--timeout S]
        Stop the coordinator and agents started in DIR (SIGTERM, then SIGKILL after S
        seconds, default 10) and remove the namespaces, veth pairs and bridge that
        start made. Nothing else is touched.
  status [--dir DIR] [--quiet]
        Print state, coordinator URL, agents and their addresses. Exit 0 running,
        3 stopped, 1 partly running.
  classpath
        Print Trogdor's classpath (resolving it from Maven Central if needed).
  -h, --help
        This help.

Options:
  --dir DIR     state directory (env KBENCH_TROGDOR_DIR, default %(dir)s)
  --timeout S   seconds to wait for start (default 60) or stop (default 10)

Files in DIR: cluster.json (Trogdor's cluster file), coordinator (its URL), agents (one
"NAME ADDRESS" line each), brokers ("NAME ADDRESS NAMESPACE"), host (the bridge address),
network (what stop removes), logs/.

Environment:
  KBENCH_CACHE   cache root (default $HOME/.cache/kbench); jars go to
                 $KBENCH_CACHE/trogdor/%(version)s/
  JAVA_HOME      JDK/JRE to use (default: java on PATH)

Exit status: 0 ok, 1 failure, 2 bad usage or a missing prerequisite, 3 (status) stopped."""
          % {"version": TROGDOR_VERSION, "max": MAX_AGENTS, "dir": DEFAULT_DIR}, file=file)


SVC = svc.Service("trogdor", "Trogdor", ".kbench-trogdor", "KBENCH_TROGDOR_DIR", DEFAULT_DIR, usage)

# ---------------------------------------------------------------- resolution


def cache():
    return "%s/trogdor/%s" % (svc.cache_home(), TROGDOR_VERSION)


def fill_trogdor(c):
    # Trogdor names slf4j-api without a binding: reload4j makes the agents write their logs.
    svc.write_pom(c + "/pom.xml", "trogdor", TROGDOR_VERSION, "Trogdor " + TROGDOR_VERSION,
                  ["org.apache.kafka:trogdor:" + TROGDOR_VERSION, "org.slf4j:slf4j-reload4j:" + SLF4J_BINDING_VERSION])
    if not svc.mvn(c, "org/apache/kafka/trogdor/" + TROGDOR_VERSION):
        cli.die("Maven failed to resolve Trogdor %s; see %s/mvn.log:%s"
                % (TROGDOR_VERSION, c, svc.tail_log(c + "/mvn.log")), 1)


def resolve_trogdor():
    return svc.classpath(cache(), "Trogdor " + TROGDOR_VERSION, fill_trogdor)


# ---------------------------------------------------------------- state

def net_tag(d):
    """Names of what this state directory made: short, because interface names are at most
    15 characters, and derived from the directory so that two directories never share one."""
    return hashlib.md5(d.encode("utf-8", "surrogateescape")).hexdigest()[:5]


def ns_name(d, name):
    return "kbt%s-%s" % (net_tag(d), name)


def read_rows(path):
    """The lines of PATH split as `read -r NAME REST` splits them."""
    with open(path) as f:
        return [(line.split(None, 1) + [""])[:2] for line in f.read().splitlines()]


def pidfiles_of(d):
    """The pid files of DIR's JVMs: the coordinator's and the agents' that start wrote."""
    out = []
    if os.path.isfile(d + "/coordinator.pid") or os.path.isfile(d + "/role-coordinator"):
        out.append(d + "/coordinator.pid")
    if os.path.isfile(d + "/agents"):
        out += ["%s/%s.pid" % (d, name) for name, _ in read_rows(d + "/agents")
                if name and (os.path.isfile("%s/%s.pid" % (d, name)) or os.path.isfile("%s/role-%s" % (d, name)))]
    return out


def trogdor_state(d):
    return svc.state(pidfiles_of(d))


# ---------------------------------------------------------------- network

def ip(*args):
    """ip ARGS, whose failure ends the tool as `set -e` did."""
    rc = subprocess.run(("ip",) + args).returncode
    if rc:
        sys.exit(rc)


def ok(*cmd):
    return subprocess.run(cmd).returncode == 0


def free_subnet():
    """A /24 under SUBNET_PREFIX that no interface or route of this machine uses yet."""
    addrs = subprocess.run(["ip", "-4", "-o", "addr", "show"], capture_output=True, text=True).stdout
    for x in range(1, 255):
        routes = subprocess.run(["ip", "-4", "route", "show", "to", "match", "%s.%d.1" % (SUBNET_PREFIX, x)],
                                capture_output=True, text=True).stdout
        if not any(not r.startswith("default") for r in routes.splitlines()) and \
                (" %s.%d." % (SUBNET_PREFIX, x)) not in addrs:
            return "%s.%d" % (SUBNET_PREFIX, x)
    return None


def append(path, line):
    with open(path, "a") as f:
        f.write(line + "\n")


def make_network(d, agents, brokers, shaping):
    """Records each made object in DIR/network before it exists, so stop removes even a
    half-made set-up."""
    br = "kbt" + net_tag(d)
    held = []
    if not svc.flock(NET_LOCK, 60, held):
        cli.die("another scripts/trogdor is setting up its network (%s)" % NET_LOCK, 1)
    subnet = free_subnet()
    if not subnet:
        cli.die("no free /24 under %s.0.0/16 for the namespaces" % SUBNET_PREFIX, 1)
    svc.write_line(d + "/network", "subnet " + subnet)
    append(d + "/network", "bridge " + br)
    if not ok("ip", "link", "add", br, "type", "bridge"):
        cli.die("could not create bridge %s (is this root, with iproute2?)" % br, 1)
    ip("addr", "add", subnet + ".1/24", "dev", br)
    ip("link", "set", br, "up")
    held[0].close()
    svc.write_line(d + "/host", subnet + ".1")
    svc.remove(d + "/brokers")
    add_nodes(d, br, "agent", agents, subnet, 10, shaping)
    if brokers:
        add_nodes(d, br, "broker", brokers, subnet, 100, shaping)
    return subnet


def add_nodes(d, br, kind, count, subnet, first, shaping):
    """KIND-0.. at SUBNET.FIRST+i, listed in DIR/KINDs ("NAME ADDRESS", and for brokers
    their namespace)."""
    new = "%s/%ss.new" % (d, kind)
    open(new, "w").close()
    for i in range(count):
        name, addr = "%s-%d" % (kind, i), "%s.%d" % (subnet, first + i)
        add_node_ns(d, br, name, "%s%d" % (kind[0], i), addr, shaping)
        append(new, "%s %s" % (name, addr) + ("" if kind == "agent" else " " + ns_name(d, name)))
    os.rename(new, "%s/%ss" % (d, kind))


def add_node_ns(d, br, name, short, addr, shaping):
    """A namespace with loopback and one veth (host end BRIDGE+SHORT) on BRIDGE, shaped as
    SHAPING says. No default route: from a namespace only the bridge's subnet is reachable."""
    ns, host_if = ns_name(d, name), br + short
    peer_if = host_if + "p"
    append(d + "/network", "netns " + ns)
    if not ok("ip", "netns", "add", ns):
        cli.die("could not create network namespace " + ns, 1)
    if not ok("ip", "link", "add", host_if, "type", "veth", "peer", "name", peer_if):
        cli.die("could not create veth pair " + host_if, 1)
    ip("link", "set", peer_if, "netns", ns)
    ip("link", "set", host_if, "master", br, "up")
    ip("-n", ns, "link", "set", "lo", "up")
    ip("-n", ns, "link", "set", peer_if, "name", "eth0")
    ip("-n", ns, "addr", "add", addr + "/24", "dev", "eth0")
    ip("-n", ns, "link", "set", "eth0", "up")
    if shaping:
        # Both directions: the namespace's egress, and the host end's egress (its ingress).
        err = ""
        for cmd in (["tc", "-n", ns, "qdisc", "add", "dev", "eth0", "root"],
                    ["tc", "qdisc", "add", "dev", host_if, "root"]):
            p = subprocess.run(cmd + shaping, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            err += p.stdout
            if p.returncode:
                err = err.rstrip("\n")
                if shaping[0] == "netem":
                    cli.die("tc netem is not available on this kernel (module sch_netem missing: %s); --delay "
                            "cannot be emulated here, --rate-limit alone works (tbf)" % err)
                cli.die("tc %s failed on %s: %s" % (" ".join(shaping), name, err), 1)


def remove_network(d):
    if not os.path.isfile(d + "/network"):
        return
    rows = read_rows(d + "/network")
    for kind, value in rows:
        if kind == "netns":
            subprocess.run(["ip", "netns", "del", value], stderr=subprocess.DEVNULL)
    for kind, value in rows:
        if kind == "bridge":
            subprocess.run(["ip", "link", "del", value], stderr=subprocess.DEVNULL)
    svc.remove(d + "/network", d + "/host", d + "/brokers")


# ---------------------------------------------------------------- processes

def start_jvm(d, name, cls, ns, node):
    """One Trogdor daemon for cluster node NODE, detached, its pid in DIR/NAME.pid. NS empty:
    this host's own network stack (real hosts)."""
    java = svc.find_java()
    cp = svc.read_text(cache() + "/classpath")
    opt = "--coordinator.config" if cls == COORDINATOR_CLASS else "--agent.config"
    svc.launch("trogdor", "%s/%s.pid" % (d, name), "%s/logs/%s.log" % (d, name), name, ns,
               [java, "-Xms64m", "-Xmx256m", "-XX:+UseSerialGC", "-Djava.awt.headless=true",
                "-Dlog4j.configuration=file:%s/scripts/services/trogdor/log4j.properties" % ROOT,
                "-cp", cp, cls, opt, d + "/cluster.json", "--node-name", node])


def kill_procs(d, timeout):
    svc.stop("TERM", timeout, "the Trogdor processes of " + d, pidfiles_of(d))
    svc.remove(d + "/*.pid")


def stop_trogdor(d, timeout):
    """stop: the JVMs, then the network they ran in."""
    kill_procs(d, timeout)
    remove_network(d)


def wait_ready(d, timeout):
    """Until the coordinator and every agent answer their status URL."""
    def answer():
        urls = [svc.read_text(d + "/coordinator") + "/coordinator/status"]
        urls += ["http://%s:%d/agent/status" % (addr, AGENT_PORT) for _, addr in read_rows(d + "/agents")]
        return svc.answers(urls)

    def died(pidfile):
        name = os.path.basename(pidfile)[:-len(".pid")]
        log = "%s/logs/%s.log" % (d, name)
        cli.info("error: %s exited during startup; log %s:%s" % (name, log, svc.tail_log(log)))

    def late(t):
        cli.info("error: timed out after %d s waiting for the coordinator and agents to answer; logs in %s/logs%s"
                 % (t, d, svc.tail_log(d + "/logs/coordinator.log")))

    return svc.wait(timeout, 0.5, answer, died, late, pidfiles_of(d))


# ---------------------------------------------------------------- commands

def write_cluster_file(d, subnet, agents):
    # The coordinator shares agent-0's host, as in Trogdor's own single-host config:
    # the coordinator polls every node of the file as an agent.
    nodes = []
    for i in range(agents):
        node = '    "agent-%d": {"hostname": "%s.%d", "trogdor.agent.port": %d' % (i, subnet, 10 + i, AGENT_PORT)
        if i == 0:
            node += ', "trogdor.coordinator.port": %d' % COORDINATOR_PORT
        nodes.append(node + "}")
    with open(d + "/cluster.json", "w") as f:
        f.write('{\n  "platform": "org.apache.kafka.trogdor.basic.BasicPlatform",\n  "nodes": {\n%s\n  }\n}\n'
                % ",\n".join(nodes))


def prepare_dir(d):
    """A new or empty directory, or one start marked as its own before; and writable."""
    SVC.check_dir(d)
    SVC.claim_dir(d, "kbench Trogdor state directory: scripts/trogdor may delete what is here")


def cmd_start(argv):
    o = SVC.opts("start", {"--agents": "2", "--brokers": "0", "--rate-limit": "", "--delay": "", "--dir": "",
                           "--timeout": "60", "--nodes": "", "--role": "", "--node": ""}, argv)
    d = SVC.state_dir(o["dir"])
    timeout = SVC.check_timeout(o["timeout"])
    if o["nodes"]:
        return start_real_host(d, o["nodes"], o["role"], o["node"])
    if o["role"] or o["node"]:
        SVC.bad_usage("--role and --node go with --nodes FILE")
    if not (cli.is_uint(o["agents"]) and 1 <= int(o["agents"]) <= MAX_AGENTS):
        SVC.bad_usage("--agents must be 1..%d, got '%s'" % (MAX_AGENTS, o["agents"]))
    if not (cli.is_uint(o["brokers"]) and int(o["brokers"]) <= MAX_BROKER_NS):
        SVC.bad_usage("--brokers must be 0..%d, got '%s'" % (MAX_BROKER_NS, o["brokers"]))
    agents, brokers, rate, delay = int(o["agents"]), int(o["brokers"]), o["rate_limit"], o["delay"]
    if rate and not re.fullmatch(r"[0-9]+(kbit|mbit|gbit)", rate):
        SVC.bad_usage("--rate-limit takes a tc rate such as 100mbit, got '%s'" % rate)
    if delay and not re.fullmatch(r"[0-9]+(\.[0-9]+)?ms", delay):
        SVC.bad_usage("--delay takes milliseconds such as 2ms, got '%s'" % delay)
    SVC.check_dir(d)
    # A dry run ends here: what follows depends on this machine (root, ip, Java), not the command.
    cli.dry_run_exit()
    shaping = []
    if delay:
        shaping = ["netem", "delay", delay] + (["rate", rate] if rate else [])
    elif rate:
        # tbf: bursts of up to 64 KiB at line speed, queueing up to 100 ms, then drops.
        shaping = ["tbf", "rate", rate, "burst", "64kb", "latency", "100ms"]
    if os.geteuid() != 0:
        cli.die("network namespaces need root; on real hosts use --nodes FILE (see docs/distributed.md)")
    if not shutil.which("ip"):
        cli.die("ip not found: apt-get install iproute2")
    prepare_dir(d)
    SVC.lock(d, 0)
    st = trogdor_state(d)
    if st == "running":
        have = len(read_rows(d + "/agents"))
        if have != agents:
            cli.die("Trogdor is already running in %s with %d agent(s), not %d; run 'scripts/trogdor stop --dir %s' "
                    "first" % (d, have, agents, d), 1)
        cli.info("Trogdor is already running in " + d)
        print(svc.read_text(d + "/host"))
        return 0
    if st != "stopped":
        cli.die("Trogdor in %s is only partly running; run 'scripts/trogdor stop --dir %s' first" % (d, d), 1)
    svc.check_java(svc.find_java(), 11, "Trogdor " + TROGDOR_VERSION)
    resolve_trogdor()
    # Leftovers of a run that crashed: stop removes only what its files name.
    remove_network(d)
    svc.remove(d + "/*.pid", d + "/agents", d + "/coordinator", d + "/role-*", d + "/logs")
    os.makedirs(d + "/logs")

    t0 = svc.seconds()
    SVC.guard(lambda: stop_trogdor(d, 5))
    subnet = make_network(d, agents, brokers, shaping)
    write_cluster_file(d, subnet, agents)
    svc.write_line(d + "/coordinator", "http://%s.10:%d" % (subnet, COORDINATOR_PORT))
    cli.info("starting a Trogdor coordinator and %d agent(s) on %s.0/24 in %s" % (agents, subnet, d))
    for name, _ in read_rows(d + "/agents"):
        start_jvm(d, name, AGENT_CLASS, ns_name(d, name), name)
    start_jvm(d, "coordinator", COORDINATOR_CLASS, ns_name(d, "agent-0"), "agent-0")
    if not wait_ready(d, timeout):
        return 1
    SVC.unguard()
    cli.info("Trogdor is up: coordinator %s, %d agent(s) (%d s)"
             % (svc.read_text(d + "/coordinator"), agents, svc.seconds() - t0))
    print(svc.read_text(d + "/host"))
    return 0


def start_real_host(d, nodes, role, node):
    """A host of a real cluster: start this host's role from the user's cluster file."""
    if not (os.path.isfile(nodes) and os.access(nodes, os.R_OK)):
        SVC.bad_usage("--nodes: cannot read '%s'" % nodes)
    if role not in ("coordinator", "agent"):
        SVC.bad_usage("--nodes needs --role coordinator or --role agent")
    if not node:
        SVC.bad_usage("--nodes needs --node NAME (this host's name in %s)" % nodes)
    # Its hostname and REST port; a file or node that is not usable is refused (exit 2) here.
    found, error = svc.cluster_node(nodes, node, role)
    if error:
        cli.die(error)
    hostname, port = found
    SVC.check_dir(d)
    cli.dry_run_exit()
    prepare_dir(d)
    SVC.lock(d, 0)
    resolve_trogdor()
    shutil.copyfile(nodes, d + "/cluster.json")
    svc.remove(d + "/role-*")
    open("%s/role-%s" % (d, role), "a").close()
    name, path = node, "/agent/status"
    if role == "agent":
        svc.write_line(d + "/agents", node + " -")
        start_jvm(d, node, AGENT_CLASS, "", node)
    else:
        name, path = "coordinator", "/coordinator/status"
        svc.remove(d + "/agents")
        svc.write_line(d + "/coordinator", "http://%s:%s" % (hostname, port))
        start_jvm(d, "coordinator", COORDINATOR_CLASS, "", node)
    # Until this host's daemon answers on its own REST port.
    url = "http://127.0.0.1:%s%s" % (port, path)
    log = "%s/logs/%s.log" % (d, name)

    def died(_):
        cli.die("the %s exited during startup; log %s:%s" % (role, log, svc.tail_log(log)), 1)

    def late(t):
        cli.die("the %s does not answer on %s after %d s; log %s" % (role, url, t, log), 1)

    svc.wait(60, 0.5, lambda: svc.answers([url]), died, late, ["%s/%s.pid" % (d, name)])
    cli.info("started the Trogdor %s %s (log %s/logs/)" % (role, node, d))
    return 0


def cmd_status(argv):
    o = SVC.opts("status", {"--dir": "", "--quiet": False}, argv)
    d = SVC.state_dir(o["dir"])
    st = trogdor_state(d)
    if not o["quiet"]:
        print("state:       " + st)
        print("dir:         " + d)
        if os.path.isfile(d + "/coordinator"):
            print("coordinator: " + svc.read_text(d + "/coordinator"))
        if os.path.isfile(d + "/host"):
            print("host:        %s (brokers listen here)" % svc.read_text(d + "/host"))
        if os.path.isfile(d + "/agents"):
            for name, addr in read_rows(d + "/agents"):
                p = svc.pid("%s/%s.pid" % (d, name))
                print("%s: %s, %s, log %s/logs/%s.log" % (name, addr.strip(), "pid " + p if p else "stopped", d, name))
    return svc.status_exit(st)


def cmd_classpath(argv):
    print(resolve_trogdor())
    return 0


COMMANDS = {"start": cmd_start, "stop": lambda argv: SVC.cmd_stop(argv, 10, stop_trogdor), "status": cmd_status,
            "classpath": cmd_classpath}


def main(argv):
    if not argv:
        usage(sys.stderr)
        return 2
    if argv[0] in ("-h", "--help", "help"):
        usage()
        return 0
    if argv[0] not in COMMANDS:
        SVC.bad_usage("unknown command '%s'" % argv[0])
    return COMMANDS[argv[0]](argv[1:])


if __name__ == "__main__":
    SVC.run(main)
