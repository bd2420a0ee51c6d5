"""What kbench says it is: the facts the scripts use about families, metrics, row kinds,
codecs and the libraries they load, the run context's keys and secret settings, read from
`kbench --describe=json` (fixtures/describe.h). The C++ tables are the one place each fact
is written; no script, test or doc keeps a copy of its own (tests/scripts/test_facts.py
fails if one appears).

Where the description comes from, first found:
  KBENCH_DESCRIBE=FILE     a saved `kbench --describe=json`, or a result file (its
                           top-level "kbench_describe": every result carries one)
  KBENCH_BIN               the kbench binary to ask
  build/kbench             the project's own build

Run as a program it prints the description as the scripts see it (`json`); the docs'
generated tables come from it through kbench.docs.
"""

import json
import os
import subprocess
import sys

import kbench

ROOT = kbench.ROOT
DESCRIBE_KEY = "kbench_describe"  # the top-level object of a result that holds it

_description = None
_offered = None  # a result's description, used when no kbench binary can be asked


class FactsUnavailable(Exception):
    """kbench's description cannot be read; the message says what to do."""


def describe():
    """The description (a dict), read once per process."""
    global _description
    if _description is None:
        _description = _load()
    return _description


def offer(document):
    """A result document read by the scripts: its "kbench_describe" is the fallback when
    there is no kbench to ask (results compared on a machine without a build)."""
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
    # KBENCH_BIN may be a build older than --describe (bench-commits' other commit): then the
    # project's own build says it.
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
    """{metric: how the values of processes that ran a row at the same time combine}: "sum",
    "mean", "max" or "histogram" (kbench.results.combine says what each does)."""
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
    """The quantiles a latency histogram reports, by open-loop and queueing name, and its
    max: {"quantiles": [{"q", "metric", "queue_metric"}...], "max": {...}, "rule": text}."""
    return _section("latency")


def is_not_run(error_message):
    """True for the error of a row the loaded librdkafka cannot run (fixtures/runner.h's
    kNotRunPrefix): listed as not run, never as a failure."""
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
    """cluster_name_regex() as told by the first of BINARIES that can say, or None. A kbench
    older than --describe cannot (then, as for KBENCH_BIN, the project's own build says), so
    bench-commits asks its other side's build next."""
    for binary in binaries:
        if os.access(binary, os.X_OK):
            try:
                return cluster_name_regex(_load(binary))
            except (FactsUnavailable, KeyError, TypeError):
                pass
    return None


def librdkafka_codecs():
    """librdkafka's names of the codecs it writes (its compression.codec values, less none),
    which builtin.features lists too."""
    return [c["librdkafka_name"] for c in describe()["codecs"]
            if c["librdkafka_name"] and c["librdkafka_name"] != "none"]


def codec_version_keys():
    """Run-context keys of the codec libraries' versions, in table order."""
    return [c["version_key"] for c in describe()["codecs"] if c["version_key"]]


def is_secret_setting(key):
    """kbench's own rule (harness/context.h SecretSettings): a setting whose value must
    never reach results, logs or the console."""
    rule = describe()["secret_settings"]
    k = key.lower()
    return (any(m in k for m in rule["markers"])
            or any(k.startswith(p) for p in rule["prefixes"]) or k in rule["names"])


def context_keys(comparison=None):
    """{key: row} of the run context's keys (row: written_by, comparison, series, meaning), in
    the table's order; with COMPARISON ("critical", "version", "ignored", "other") only the
    keys a difference in which means that to a comparison. A key ending in "." names a
    family of keys (client.<setting>)."""
    return {k["key"]: k for k in _section("context")["keys"]
            if comparison is None or k["comparison"] == comparison}


def context_comparison(key):
    """What a difference in context key KEY means to a comparison: "critical", "version",
    "ignored", or "other" (also for a key kbench does not describe)."""
    for name, row in context_keys().items():
        if key == name or (name.endswith(".") and key.startswith(name)):
            return row["comparison"]
    return "other"


def run_keys():
    """The context keys kbench writes in every run (the others depend on the target, the
    environment or the scripts)."""
    return [k for k, row in context_keys().items()
            if row["written_by"] == "kbench" and not row.get("when")]


def series_keys():
    """The context keys whose values make a results-history series (runs that differ in one
    are kept apart)."""
    return [k for k, row in context_keys().items() if row["series"]]


def libraries():
    """{library name: {"soname", "version_function", "version_key", "codecs"}} of the shared
    libraries whose build decides a result: librdkafka, then each codec's library."""
    return {lib["name"]: lib for lib in _section("libraries")}


def codec_libraries():
    """{codec name: its library's row in libraries()} for the codecs that call a library."""
    libs = libraries()
    return {c["name"]: libs[c["library"]] for c in describe()["codecs"] if c.get("library")}


def version_functions():
    """{library name: the function it exports that reports its version}, for the libraries
    that have one (snappy has none)."""
    return {n: lib["version_function"] for n, lib in libraries().items()
            if lib["version_function"]}


def _cli(argv):
    from kbench.cli import ArgumentParser, die
    ap = ArgumentParser(prog="kbench.facts",
                        description="kbench's description as the scripts see it.")
    ap.add_argument("question", choices=("json",), help="json: the description")
    ap.parse_args(argv)
    try:
        print(json.dumps(describe(), indent=2))
    except FactsUnavailable as e:
        die(str(e))
    return 0


if __name__ == "__main__":
    sys.exit(_cli(sys.argv[1:]))
