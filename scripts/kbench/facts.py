"""What kbench says it is (families, metrics, row kinds, codecs, libraries, context keys,
secret settings), read from `kbench --describe=json`: the C++ tables are the one place each
fact is written (tests/scripts/test_facts.py fails on a copy). Asked, first found, of
KBENCH_DESCRIBE=FILE (a saved description, or a result: its "kbench_describe"), KBENCH_BIN,
build/kbench. Run as a program it prints the description (`json`).
"""

import contextlib
import functools
import json
import os
import subprocess

import kbench

ROOT = kbench.ROOT
DESCRIBE_KEY = "kbench_describe"  # the top-level object of a result that holds it

_offered = None  # a result's description, used when no kbench binary can be asked


class FactsUnavailable(Exception):
    """kbench's description cannot be read; the message says what to do."""


@functools.cache
def describe():
    """The description (a dict), read once per process."""
    return _load()


def offer(document):
    """A result read by the scripts: its kbench_describe is the fallback when no kbench can say."""
    global _offered
    if _offered is None and isinstance(document, dict):
        d = document.get(DESCRIBE_KEY)
        if isinstance(d, dict) and "metrics" in d:
            _offered = d


def _load(kbench_bin=None):
    path = os.environ.get("KBENCH_DESCRIBE")
    if path:
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            raise FactsUnavailable("KBENCH_DESCRIBE=%s: %s" % (path, e)) from e
        doc = doc.get(DESCRIBE_KEY, doc) if isinstance(doc, dict) else doc
        if not isinstance(doc, dict) or "metrics" not in doc:
            raise FactsUnavailable("KBENCH_DESCRIBE=%s holds no kbench description (neither "
                                   "kbench --describe=json nor a result)" % path)
        return doc
    # KBENCH_BIN may be older than --describe (bench-commits' other commit): then build/ says.
    own = os.path.join(ROOT, "build", "kbench")
    tried = []
    for binary in dict.fromkeys(b for b in (kbench_bin or os.environ.get("KBENCH_BIN"), own) if b):
        if not os.access(binary, os.X_OK):
            tried.append("%s: not built" % binary)
            continue
        try:
            out = subprocess.run([binary, "--describe=json"], capture_output=True, text=True,
                                 timeout=60, check=True).stdout
            return json.loads(out)
        except (OSError, subprocess.SubprocessError, ValueError) as e:
            tried.append("%s --describe=json failed (%s)" % (binary, e))
    if _offered is not None:
        return _offered
    raise FactsUnavailable(
        "the scripts read what metrics and families mean from 'kbench --describe=json', and "
        "no kbench could say (%s). Build it (cmake -S . -B build -G Ninja && cmake --build "
        "build), or set KBENCH_BIN, or KBENCH_DESCRIBE=RESULT.json" % "; ".join(tried))


def metrics():
    """{name: metric row} in the table's order."""
    return {m["name"]: m for m in describe()["metrics"]}


def merge_rules():
    """{metric: "sum", "mean", "max" or "histogram"}: how concurrent processes combine."""
    ms = describe()["metrics"]
    if any("merge" not in m for m in ms):
        raise FactsUnavailable("the kbench description has no merge rules (a kbench older than "
                               "them): rebuild kbench, or set KBENCH_BIN to a newer one")
    return {m["name"]: m["merge"] for m in ms}


def row_kinds():
    return describe()["row_kinds"]


def _section(name):
    """The description's section NAME; FactsUnavailable from a kbench older than it."""
    d = describe()
    if name not in d:
        raise FactsUnavailable("the kbench description has no %s section (a kbench older "
                               "than it): rebuild kbench, or set KBENCH_BIN to a newer one" % name)
    return d[name]


def latency():
    """{"quantiles": [{"q", "metric", "queue_metric"}...], "max": {...}, "rule": text}."""
    return _section("latency")


def is_not_run(error_message):
    """True for the error of a row the loaded librdkafka cannot run (not a failure)."""
    prefix = describe().get("librdkafka", {}).get("not_run_prefix")
    return bool(prefix) and str(error_message or "").startswith(prefix)


def families():
    return describe()["families"]


def cluster_families(description=None):
    """Names of the families whose rows need a Kafka cluster (the mock or a broker)."""
    return [f["name"] for f in (description or describe())["families"] if f["needs_cluster"]]


def cluster_name_regex(description=None):
    """An extended regex matching the names of the rows that need a cluster."""
    return "^(%s)/" % "|".join(cluster_families(description))


def cluster_regex(*binaries):
    """cluster_name_regex() as told by the first of BINARIES that can say, or None."""
    for binary in binaries:
        if os.access(binary, os.X_OK):
            with contextlib.suppress(FactsUnavailable, KeyError, TypeError):
                return cluster_name_regex(_load(binary))
    return None


def librdkafka_codecs():
    """librdkafka's names of the codecs it writes (compression.codec values, less none)."""
    return [c["librdkafka_name"] for c in describe()["codecs"]
            if c["librdkafka_name"] and c["librdkafka_name"] != "none"]


def codec_version_keys():
    """Run-context keys of the codec libraries' versions, in table order."""
    return [c["version_key"] for c in describe()["codecs"] if c["version_key"]]


def is_secret_setting(key):
    """kbench's rule: a setting whose value must never reach results, logs or the console."""
    rule = describe()["secret_settings"]
    k = key.lower()
    return (any(m in k for m in rule["markers"])
            or any(k.startswith(p) for p in rule["prefixes"]) or k in rule["names"])


def context_keys(comparison=None):
    """{key: row} of the context's keys ("client.": a family), only those of COMPARISON if given."""
    return {k["key"]: k for k in _section("context")["keys"] if comparison is None or k["comparison"] == comparison}


def context_comparison(key):
    """What a difference in context key KEY means to a comparison ("other" if unknown)."""
    for name, row in context_keys().items():
        if key == name or (name.endswith(".") and key.startswith(name)):
            return row["comparison"]
    return "other"


def series_keys():
    """The context keys whose values make a results-history series."""
    return [k for k, row in context_keys().items() if row["series"]]


def libraries():
    """{library name: {"soname", "version_function", "version_key", "codecs"}}."""
    return {lib["name"]: lib for lib in _section("libraries")}


def version_functions():
    """{library name: the function that reports its version}, where it has one."""
    return {n: lib["version_function"] for n, lib in libraries().items() if lib["version_function"]}
