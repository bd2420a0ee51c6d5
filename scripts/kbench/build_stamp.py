"""build.json, the stamp that marks a cached build valid and records how it was made; the
lock of a cache entry; the npm packages kept in one; the error a build raises."""

import fcntl
import json
import os
import shutil
import sys
import time

from kbench import cli, proc, results


class BuildError(Exception):
    """A build that cannot be had: status 2 bad input or a missing prerequisite, 1 failed or refused."""

    def __init__(self, message, status=1):
        super().__init__(message)
        self.status = status


def first_tgz(d):
    return next(iter(sorted(n for n in os.listdir(d) if n.endswith(".tgz"))), None) if os.path.isdir(d) else None


def npm_tarball(d, spec, log):
    """The name of npm package SPEC's tarball in cache entry D, fetched once (npm checks its
    integrity), so that a later use needs no registry."""
    tgz = first_tgz(d)
    if tgz:
        return tgz
    cli.info("fetching %s from npm" % spec)
    pack = d + "/pack.tmp"
    shutil.rmtree(pack, ignore_errors=True)
    os.makedirs(pack)
    try:
        if proc.run(["npm", "pack", "--silent", "--pack-destination", pack, spec], log=log,
                    cwd=pack).returncode != 0:
            print(proc.tail(log, 30), file=sys.stderr)
            raise BuildError("npm pack %s failed (is the npm registry reachable?); log: %s" % (spec, log))
        tgz = first_tgz(pack)
        if not tgz:
            raise BuildError("npm pack %s produced no tarball; log: %s" % (spec, log))
        os.rename(pack + "/" + tgz, d + "/" + tgz)
    finally:
        shutil.rmtree(pack)
    return tgz


def cache_dir(name):
    """The absolute path of NAME in kbench's cache, ${KBENCH_CACHE:-$HOME/.cache/kbench}."""
    return os.path.abspath(os.path.join(os.environ.get("KBENCH_CACHE") or os.path.expanduser("~/.cache/kbench"), name))


def write(path, doc):
    """DOC (its fields in order) plus built_at, written atomically."""
    results.write_json(path, dict(doc, built_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())))


def read(path):
    """The stamp at PATH as a dict; {} when there is none or it cannot be read."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def lock(d, what):
    """The cache entry D locked for one build at a time: the open lock file; a second caller waits."""
    os.makedirs(d, exist_ok=True)
    f = open(d + "/.lock", "w")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        cli.info("another build of %s is running; waiting for it" % what)
        fcntl.flock(f, fcntl.LOCK_EX)
    return f


def compiler():
    """The first line of `cc --version`, for a stamp; "" without cc."""
    return (proc.output(["cc", "--version"]) or "").split("\n", 1)[0]


def librdkafka_source(doc, tree):
    """A side's KBENCH_LIBRDKAFKA_SOURCE: a commit's build may come from another clone, so a
    tree's source names the TREE this side asked for."""
    if tree and doc.get("commit"):
        return "tree:%s@%s" % (tree, doc["commit"])
    return doc.get("source") or ("npm:" + doc["npm_source"] if doc.get("npm_source") else "")
