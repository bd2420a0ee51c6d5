"""What kbench says it is: the facts the scripts use about families, metrics, row kinds,
codecs and secret settings, read from `kbench --describe=json` (fixtures/describe.h). The
C++ tables are the one place each fact is written; no script keeps a copy of its own
(tests/scripts/test_facts.py fails if one appears).

Where the description comes from, first found:
  KBENCH_DESCRIBE=FILE     a saved `kbench --describe=json`, or a result file (its
                           top-level "kbench_describe": every result carries one)
  KBENCH_BIN               the kbench binary to ask
  build/kbench             the project's own build

Run as a program: `docs` regenerates the docs' generated blocks, `json` prints the description.
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


def latency():
    """The quantiles a latency histogram reports, by open-loop and queueing name, and its
    max: {"quantiles": [{"q", "metric", "queue_metric"}...], "max": {...}, "rule": text}."""
    d = describe()
    if "latency" not in d:
        raise FactsUnavailable("the kbench description has no latency section (a kbench older "
                               "than it): rebuild kbench, or set KBENCH_BIN to a newer one")
    return d["latency"]


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


# The blocks of the docs that are generated from the description, between
# <!-- NAME: begin --> and <!-- NAME: end --> markers: {doc path: [(NAME, markdown())]}.
def _table(header, rows):
    """A Markdown table: the header's cells, then one line per row of cells."""
    lines = ["| %s |" % " | ".join(header), "|%s" % ("---|" * len(header))]
    return "\n".join(lines + ["| %s |" % " | ".join(r) for r in rows])


def _keys_table(family):
    return _table(("key", "meaning"), [("`%s`" % k["key"], k["help"]) for k in family["keys"]])


def _families_table(example=True):
    header = ("family", "measures") + (("example",) if example else ())
    return _table(header, [("`%s`" % f["name"], f["measures"])
                           + (("`%s`" % f["example"],) if example else ()) for f in families()])


def _codecs_line():
    def one(c):
        levels = c["levels"]
        words = []
        if levels["max"] > levels["min"]:
            words.append("levels %d to %d, default %d" % (levels["min"], levels["max"],
                                                          levels["default"]))
        if c["name"] != "none" and not c["librdkafka_name"]:
            words.append("librdkafka does not write it")
        return "`%s`" % c["name"] + (" (%s)" % "; ".join(words) if words else "")
    return "Codecs: %s." % ", ".join(one(c) for c in describe()["codecs"])


def _directions_table():
    words = {1: "higher is better", -1: "lower is better", 0: "informational"}
    return _table(("metric", "direction", "why"),
                  [("`%s`" % m["name"], words[m["direction"]], m["meaning"])
                   for m in describe()["metrics"]])


def _equivalence_table():
    """The metrics with an equivalence threshold of their own, as a factor either way."""
    rows = []
    for m in describe()["metrics"]:
        up = m.get("equivalence_pct") or 0
        if up:
            rows.append(("`%s`" % m["name"], "%g" % up, "%.3g × either way: +%g %% / −%.3g %%"
                         % (1 + up / 100.0, up, 100.0 * up / (100.0 + up))))
    return _table(("metric", "`equivalence_pct`", "threshold (at the default `--threshold`)"), rows)


def generated_blocks():
    """{doc path relative to the project: [(marker name, generated text)]}."""
    keys = [("%s-keys" % f["keys_flag"].lstrip("-"), _keys_table(f))
            for f in families() if f["keys_flag"]]
    return {"README.md": [("codecs", _codecs_line()), ("families", _families_table(False))],
            "docs/families.md": [("families", _families_table())] + keys,
            "docs/counters.md": [("metric-directions", _directions_table())],
            "docs/comparing.md": [("equivalence-thresholds", _equivalence_table())]}


def render_docs(root=ROOT):
    """{path: (current text, text with every generated block regenerated)}."""
    out = {}
    for rel, blocks in generated_blocks().items():
        path = os.path.join(root, rel)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        new = text
        for name, body in blocks:
            begin, end = "<!-- %s: begin -->" % name, "<!-- %s: end -->" % name
            if begin not in new or end not in new:
                raise FactsUnavailable("%s has no %s ... %s block" % (rel, begin, end))
            head, rest = new.split(begin, 1)
            _, tail = rest.split(end, 1)
            new = head + begin + "\n" + body + "\n" + end + tail
        out[path] = (text, new)
    return out


def _cli(argv):
    from kbench.cli import ArgumentParser, die
    ap = ArgumentParser(
        prog="kbench.facts",
        description="The docs' generated blocks, or kbench's description as scripts see it.")
    ap.add_argument("question", choices=("json", "docs"),
                    help="docs: regenerate the generated blocks of the docs (README's "
                         "codecs and families, docs/families.md's families and row keys, "
                         "docs/counters.md's metric directions, docs/comparing.md's equivalence "
                         "thresholds)")
    args = ap.parse_args(argv)
    try:
        if args.question == "docs":
            for path, (old, new) in render_docs().items():
                if new != old:
                    with open(path, "w", encoding="utf-8") as f:
                        f.write(new)
                    print("regenerated %s" % os.path.relpath(path, ROOT))
            return 0
        print(json.dumps(describe(), indent=2))
    except FactsUnavailable as e:
        die(str(e))
    return 0


if __name__ == "__main__":
    sys.exit(_cli(sys.argv[1:]))
