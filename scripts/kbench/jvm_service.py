"""What the JVM service supervisor (scripts/lib/jvm_service_lib.sh) and its services
(scripts/kafka, scripts/trogdor) need that bash does not do well: sockets, HTTP with a
timeout, JSON.

    python -m kbench.jvm_service free-ports HOST COUNT OFFSET
        a port P such that P..P+COUNT-1 and P+OFFSET..P+OFFSET+COUNT-1 can all be bound on
        HOST now; exit 1 when none is found
    python -m kbench.jvm_service answers URL...
        exit 0 when every URL answers a GET with 2xx within 5 s, else 1 (a readiness probe)
    python -m kbench.jvm_service cluster-node FILE NODE ROLE
        "HOSTNAME PORT" of NODE in a Trogdor cluster file, PORT being its trogdor.ROLE.port;
        exit 2 with a message when the file or the node is not usable

Bad usage exits 2, as every kbench script does.
"""

import argparse
import json
import socket
import sys
import urllib.request

# Attempts before free-ports gives up: each takes a fresh port from the kernel, and only a
# machine whose ports are nearly all taken fails them all.
ATTEMPTS = 50


def bind(host, port):
    """A socket bound to (host, port), or None when the port is taken."""
    s = socket.socket()
    try:
        s.bind((host, port))
        return s
    except OSError:
        s.close()
        return None


def free_ports(host, count, offset):
    # The kernel picks P (bind to port 0), which avoids its ephemeral range's busy ports;
    # the others are only tried. They are all free at once, but only at this moment:
    # the caller still checks them before it starts anything.
    for _ in range(ATTEMPTS):
        first = bind(host, 0)
        if first is None:
            return None
        base = first.getsockname()[1]
        ports = list(range(base + 1, base + count)) + list(range(base + offset, base + offset + count))
        held = [first] + [bind(host, p) if p <= 65535 else None for p in ports]
        for s in held:
            if s:
                s.close()
        if all(held):
            return base
    return None


def answers(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            r.read()
        return True
    except Exception as e:  # noqa: BLE001 — whatever fails, the service is not ready yet
        print("%s: %s" % (url, e), file=sys.stderr)
        return False


def cluster_node(path, node, role):
    """(hostname, port) of NODE in a Trogdor cluster file, or an error message."""
    try:
        with open(path) as f:
            nodes = json.load(f)["nodes"]
        entry = nodes.get(node)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        return None, '%s is not a Trogdor cluster file ({"nodes": {...}}): %s' % (path, e)
    port = "trogdor.%s.port" % role
    if not isinstance(entry, dict) or port not in entry or "hostname" not in entry:
        return None, "%s has no node %r with hostname and %s" % (path, node, port)
    return (entry["hostname"], entry[port]), None


def main(argv=None):
    parser = argparse.ArgumentParser(prog="kbench.jvm_service", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("free-ports", help="free ports for a service's listeners")
    p.add_argument("host")
    p.add_argument("count", type=int)
    p.add_argument("offset", type=int)
    p = sub.add_parser("answers", help="exit 0 when every URL answers")
    p.add_argument("urls", nargs="+", metavar="URL")
    p = sub.add_parser("cluster-node", help="hostname and port of a node of a Trogdor cluster file")
    p.add_argument("file")
    p.add_argument("node")
    p.add_argument("role", choices=["agent", "coordinator"])
    p.add_argument("--prog", default="kbench", help="the script whose error this is (for the message)")
    args = parser.parse_args(argv)

    if args.command == "free-ports":
        base = free_ports(args.host, args.count, args.offset)
        if base is None:
            return 1
        print(base)
    elif args.command == "answers":
        # The first that does not answer ends the probe: the service is not ready, and each
        # further URL could only add its own timeout to the wait.
        return 0 if all(answers(u) for u in args.urls) else 1
    else:
        found, error = cluster_node(args.file, args.node, args.role)
        if error:
            print("%s: error: %s" % (args.prog, error), file=sys.stderr)
            return 2
        print("%s %s" % found)
    return 0


if __name__ == "__main__":
    sys.exit(main())
