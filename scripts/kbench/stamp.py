"""Build stamps: the build.json that marks a cached build valid (scripts/librdkafka,
scripts/symbols) and records how it was made.

    python -m kbench.stamp write PATH KEY=VALUE...   # KEY:int=, KEY:bool=, KEY:words=, KEY:csv=
    python -m kbench.stamp get PATH KEY              # one field (empty when absent)

`write` adds built_at and writes atomically. A typed key: int (a number), bool (true when
"true"), words (split on white space), csv (split on commas; omitted when empty). lock() and
compiler() serve the builds that stamp; librdkafka_source() reads one for bench-commits.
"""

import fcntl
import json
import os
import subprocess
import sys
import time

from kbench.cli import ArgumentParser, die, info, read_json

KINDS = {"": str, "int": int, "bool": lambda v: v == "true", "words": str.split,
         "csv": lambda v: v.split(",") if v else None}


def typed(pair):
    key, sep, value = pair.partition("=")
    if not sep:
        die("'%s' is not KEY=VALUE" % pair)
    name, _, kind = key.partition(":")
    if kind not in KINDS:
        die("unknown type '%s' in '%s'" % (kind, pair))
    return name, KINDS[kind](value)


def write(path, pairs):
    doc = {}
    for pair in pairs:
        name, value = typed(pair)
        if value is not None:
            doc[name] = value
    write_doc(path, doc)


def write_doc(path, doc):
    """DOC (its fields in order) plus built_at, written atomically."""
    doc = dict(doc)
    doc["built_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    os.replace(path + ".tmp", path)


def lock(d, what):
    """The cache entry D locked for one build at a time: the open lock file (closing it, or the
    process's end, unlocks). A second caller waits, saying so, then finds the cached result."""
    os.makedirs(d, exist_ok=True)
    f = open(d + "/.lock", "w")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        info("another build of %s is running; waiting for it" % what)
        fcntl.flock(f, fcntl.LOCK_EX)
    return f


def compiler():
    """The first line of `cc --version`, for a stamp; "" without cc."""
    try:
        return subprocess.run(["cc", "--version"], stdout=subprocess.PIPE, text=True).stdout.split("\n", 1)[0]
    except OSError:
        return ""


def librdkafka_source(doc, tree):
    """What a side's KBENCH_LIBRDKAFKA_SOURCE says. A commit's build is cached by sha alone
    and may have been built from another clone: the source names the tree this side asked for."""
    src = doc.get("source") or ("npm:" + doc["npm_source"] if doc.get("npm_source") else "")
    if tree and doc.get("commit"):
        src = "tree:%s@%s" % (tree, doc["commit"])
    return src


def main(argv):
    ap = ArgumentParser(prog="kbench.stamp", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write", help="write PATH from KEY=VALUE pairs")
    w.add_argument("path")
    w.add_argument("pairs", nargs="*")
    g = sub.add_parser("get", help="print one field")
    g.add_argument("path")
    g.add_argument("key")
    args = ap.parse_args(argv)
    if args.cmd == "write":
        write(args.path, args.pairs)
        return 0
    print(read_json(args.path, status=1).get(args.key, ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
