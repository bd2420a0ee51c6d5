"""Asks a shared library itself, through ctypes, its version and (librdkafka) builtin.features.
In a child process without LD_LIBRARY_PATH: the loader reads it once, the asking process may
hold another copy of the soname, and a broken build may crash the process that loads it."""

import ctypes
import json
import os
import sys

from kbench import proc

# Not from kbench's description (facts.version_functions()): asked before any kbench is built.
LIBRDKAFKA_VERSION_FUNCTION = "rd_kafka_version_str"


def system_environment():
    """The environment without LD_LIBRARY_PATH: the libraries the loader finds for any process."""
    return {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}


def probe(function, path, log=None):
    """{"version", "features"} of the library at PATH (a file or a soname) whose version FUNCTION
    returns a string; None when it does not load. The child's stderr goes to the file LOG."""
    cmd = [sys.executable, "-m", "kbench.library_probe", function, path]
    if log:
        done = proc.run(cmd, capture=True, log=log, env=system_environment())
        answer = done.stdout if done.returncode == 0 else None
    else:
        answer = proc.output(cmd, env=system_environment())
    return json.loads(answer) if answer else None


def _answer(function, path):
    so = ctypes.CDLL(path)
    fn = getattr(so, function)
    fn.restype = ctypes.c_char_p
    answer = {"version": fn().decode(), "features": ""}
    # A librdkafka without rd_kafka_conf_get (before 0.9.2) has no features to tell.
    if function == LIBRDKAFKA_VERSION_FUNCTION and hasattr(so, "rd_kafka_conf_get"):
        so.rd_kafka_conf_new.restype = ctypes.c_void_p
        so.rd_kafka_conf_get.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p,
                                         ctypes.POINTER(ctypes.c_size_t)]
        so.rd_kafka_conf_destroy.argtypes = [ctypes.c_void_p]
        conf = so.rd_kafka_conf_new()
        buf = ctypes.create_string_buffer(1024)
        size = ctypes.c_size_t(len(buf))
        if so.rd_kafka_conf_get(conf, b"builtin.features", buf, ctypes.byref(size)) == 0:
            answer["features"] = buf.value.decode()
        so.rd_kafka_conf_destroy(conf)
    return answer


if __name__ == "__main__":
    # The child of probe(): FUNCTION FILE, the answer as JSON; exit 1 when the library does not load.
    try:
        print(json.dumps(_answer(sys.argv[1], sys.argv[2])))
    except (OSError, AttributeError):
        sys.exit(1)
