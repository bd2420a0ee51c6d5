"""Asks a shared library itself what it is (ctypes), for scripts/librdkafka and
scripts/symbols: a file name or a package version can lie about the code a process loads.

    python -m kbench.native version LIB FILE     # zstd, lz4, zlib or librdkafka: its version
    python -m kbench.native features FILE        # librdkafka: its builtin.features
    python -m kbench.native probe FILE           # librdkafka: VERSION<TAB>builtin.features

FILE may be a soname ("librdkafka.so.1"), which the dynamic loader resolves; a library that
cannot be loaded prints nothing and exits 1. ask() puts the question from another process.
"""

import ctypes
import os
import subprocess
import sys

from kbench.cli import ArgumentParser

# The version function each library exports.
VERSION_FUNCTIONS = {"zstd": "ZSTD_versionString", "lz4": "LZ4_versionString",
                     "zlib": "zlibVersion", "librdkafka": "rd_kafka_version_str"}


def version(lib, path):
    so = ctypes.CDLL(path)
    fn = getattr(so, VERSION_FUNCTIONS[lib])
    fn.restype = ctypes.c_char_p
    return fn().decode()


def rdkafka_features(path):
    """librdkafka's builtin.features; empty for a release without rd_kafka_conf_get."""
    so = ctypes.CDLL(path)
    if not hasattr(so, "rd_kafka_conf_get"):
        return ""
    so.rd_kafka_conf_new.restype = ctypes.c_void_p
    so.rd_kafka_conf_get.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p,
                                     ctypes.POINTER(ctypes.c_size_t)]
    so.rd_kafka_conf_destroy.argtypes = [ctypes.c_void_p]
    conf = so.rd_kafka_conf_new()
    buf = ctypes.create_string_buffer(1024)
    size = ctypes.c_size_t(len(buf))
    ok = so.rd_kafka_conf_get(conf, b"builtin.features", buf, ctypes.byref(size)) == 0
    so.rd_kafka_conf_destroy(conf)
    return buf.value.decode() if ok else ""


def without_ld_path():
    """The environment without LD_LIBRARY_PATH: the system's libraries, as the loader finds
    them for any process."""
    return {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}


def ask(args, log=None):
    """This module's answer to ARGS (its stderr to the open file LOG if given), or None when
    the library does not load. In a process of its own, without LD_LIBRARY_PATH: the loader
    reads that once, at a process's start; the asking process may already hold another copy
    of the SONAME; and a broken build may crash the process that loads it."""
    if log:
        log.flush()
    proc = subprocess.run([sys.executable, "-m", "kbench.native"] + args, env=without_ld_path(),
                          stdout=subprocess.PIPE, stderr=log, text=True)
    return proc.stdout.rstrip("\n") if proc.returncode == 0 else None


def main(argv):
    ap = ArgumentParser(prog="kbench.native", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    v = sub.add_parser("version", help="the version the library reports")
    v.add_argument("lib", choices=sorted(VERSION_FUNCTIONS))
    v.add_argument("file")
    sub.add_parser("features", help="librdkafka's builtin.features").add_argument("file")
    sub.add_parser("probe", help="librdkafka: VERSION<TAB>builtin.features").add_argument("file")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "version":
            print(version(args.lib, args.file))
        elif args.cmd == "features":
            print(rdkafka_features(args.file))
        else:
            print("%s\t%s" % (version("librdkafka", args.file), rdkafka_features(args.file)))
    except (OSError, AttributeError):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
