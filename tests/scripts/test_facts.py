"""One source of facts: what kbench says of itself (kbench --describe=json, from the C++
tables) is written nowhere else. The scripts, the tests, the docs, the README and the C++
outside the tables themselves (SOURCES) are searched, line by line, for second copies of
each kind of fact the description holds. A "list" is a run of quoted words ("a", 'b' or
`c`) separated by commas only, so that sample data ("p50_us": 800.0, ...) is no list:
- which families need a cluster: all of them in one regex alternation or one list;
- a metric's direction or unit: its name mapped to them (or beside them in a Markdown row);
- what decides a row: a kind's primary metrics as one list, or the primary metrics of three
  kinds in one list;
- latency: a quantile's metric with its q, or three latency metrics in one list;
- codecs: three codec names in one list; a codec library's soname or version function, or a
  codec's version key, quoted (a version key as a sample's dict key is data);
- the run context: two keys of one comparison class in one list, a key mapped to its
  class, or a Markdown table of context keys;
- a metric's merge rule: its name mapped to a merge word, or a list of metric names named
  for one;
- the secret-setting rule: two of its markers in one list;
- a metric's own equivalence threshold: its name with its equivalence_pct.
Each search is first shown to find a planted copy in every place searched, so that it
cannot pass by finding nothing. Generated blocks of the docs (kbench.docs) are skipped: the
generated-docs test checks them."""

import os
import re
import tempfile
import types
import unittest
from unittest import mock

from kbench import docs, facts

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# Copies known and not yet removed, each with the reason it is still there:
# {(path, kind): reason}.
KNOWN = {(path, kind): why for path, kind, why in (
    line.split(" | ") for line in """\
scripts/kbench/library_probe.py | codec version function | librdkafka's own: asked before any kbench is built
scripts/kbench/commands/history.py | context keys | the keys every kbench run has, older runs too
scripts/kbench/commands/librdkafka.py | codec soname | builds librdkafka before any kbench exists
scripts/kbench/commands/librdkafka.py | codec names | builds librdkafka before any kbench exists
scripts/kbench/commands/symbols.py | codec soname | build recipes: the file each library's make writes
tests/profile/symbols_build_test.sh | codec soname | the file the symbol build must leave, as the test expects it
tests/scripts/test_bench_commits.py | codec soname | the file a librdkafka build must leave, as the test expects it
tests/scripts/test_librdkafka.py | codec soname | the files a librdkafka build must leave; a fake build's target
tests/scripts/test_compare.py | merge rule | planted: merge_runs must follow the described rules
tests/scripts/test_compare.py | latency metrics | sample rows: an open-loop row's metrics, expected unjudged
tests/scripts/test_compare.py | codec version key | sample context: a key expected shown as a version difference
tests/smoke/consistency_test.py | primary metrics of kinds | Google Benchmark's own fields, which are no counters
benchmarks/format_bench.cc | codec names | Format/validate's codec axis: a choice of rows, named
tests/unit/codec_test.cc | codec names | Kafka's compression codes 0 to 4, which the test checks the table against
tests/unit/context_test.cc | secret rule | settings the rule must redact, stated by the test of the rule
tests/smoke/kbench_smoke_test.py | latency metrics | the fields of a maximum-rate probe the test expects
""".splitlines())}
SEARCHED = ("scripts", "tests", "docs", "README.md", "benchmarks", "fixtures", "harness", "mock")
SKIPPED_DIRS = {"__pycache__", "golden", "fake_kbench"}
# The tables the facts are written in: the one place each is.
SOURCES = {"fixtures/counters.cc", "fixtures/counters.h", "harness/codec_table.cc",
           "harness/context.cc", "harness/codecs/CMakeLists.txt"}
QUOTED = r"""["'`]([^"'`\n]+)["'`]"""
LIST = re.compile(r"%s(?:\s*,\s*%s)+" % (QUOTED, QUOTED))
GENERATED = re.compile(r"<!-- ([\w:-]+): begin -->.*?<!-- \1: end -->", re.S)


def _alternation(words):
    return "(?:%s)" % "|".join(re.escape(w) for w in words)


def _quoted(words):
    return r"""["'`]%s["'`]""" % _alternation(words)


def merge_rules(d):
    """The words a merge rule is written in: the description's own, and the usual ones."""
    return {m["merge"] for m in d["metrics"] if m.get("merge")} | {"sum", "mean", "max", "min"}


def lists(line):
    """The lists on a line, each as its words."""
    return [re.findall(QUOTED, m.group(0)) for m in LIST.finditer(line)]


def _list_check(test):
    """A search that calls TEST(words) on each list of a line."""
    return lambda line: any(test(words) for words in lists(line))


def searches():
    """[(kind, line -> bool)] built from the description itself."""
    d = facts.describe()
    metrics = {m["name"]: m for m in d["metrics"]}
    names = _alternation(metrics)
    cluster = {f["name"] for f in d["families"] if f["needs_cluster"]}
    fams = _alternation(f["name"] for f in d["families"])
    alternation = re.compile(r"%s(?:\|%s)+" % (fams, fams))
    lat = d["latency"]
    latency = {q[k] for q in lat["quantiles"] for k in ("metric", "queue_metric")}
    latency |= set(lat["max"].values())
    kind_of = {}
    for k in d["row_kinds"]:
        for p in k["primary"]:
            for metric in (("cpu_time", "real_time") if p == "time" else (p,)):
                kind_of[metric] = k["kind"]
    codecs = {c["name"] for c in d["codecs"]}
    libs = d["libraries"]
    comparison = {k["key"]: k["comparison"] for k in d["context"]["keys"]}
    classes = ("critical", "version", "ignored")
    units = {}
    for m in d["metrics"]:
        if m["unit"]:
            units.setdefault(m["unit"], []).append(m["name"])
    unit_rx = "|".join(r"%s\s*[:,|]\s*%s" % (_quoted(ns), _quoted([u])) for u, ns in units.items())
    unit_md = "|".join(r"`%s`\s*\|\s*%s\s*\|" % (_alternation(ns), re.escape(u))
                       for u, ns in units.items())
    own = {m["name"]: m["equivalence_pct"] for m in d["metrics"] if m.get("equivalence_pct")}
    out = [
        ("cluster families", lambda line: any(cluster <= set(m.group(0).split("|"))
                                              for m in alternation.finditer(line))),
        ("cluster families", _list_check(lambda w: cluster <= set(w))),
        # A direction table: "metric": (+1, ...) or "metric": -1, or a Markdown row.
        ("metric direction", re.compile(r"""%s\s*:\s*(\(\s*[-+]?[01]\s*,|[-+]1\b)"""
                                        % _quoted(metrics)).search),
        ("metric direction", re.compile(r"`%s`\s*\|\s*(higher|lower) is better" % names).search),
        ("metric unit", re.compile("%s|%s" % (unit_rx, unit_md)).search),
        ("primary metrics of kinds",
         _list_check(lambda w: len({kind_of[x] for x in w if x in kind_of}) > 2)),
        ("latency quantile", re.compile(r"%s\s*[,:]\s*0?\.\d" % _quoted(latency)).search),
        ("latency metrics", _list_check(lambda w: len(latency & set(w)) > 2)),
        ("codec names", _list_check(lambda w: len(codecs & set(w)) > 2)),
        ("codec soname", re.compile(r"""["'`]%s(\.\d+)?["'`=]""" % _alternation(
            lib["soname"].split(".so")[0] + ".so" for lib in libs)).search),
        ("codec version function", re.compile(_quoted(
            lib["version_function"] for lib in libs if lib["version_function"])).search),
        ("codec version key", re.compile(r"%s(?!\s*:)" % _quoted(
            c["version_key"] for c in d["codecs"] if c["version_key"])).search),
        ("context keys", _list_check(lambda w: any(
            sum(comparison.get(x) == c for x in w) > 1 for c in classes))),
        ("context keys", re.compile(r"^\|\s*`%s`\s*[|,]" % _alternation(comparison)).search),
        ("context comparison", re.compile(r"%s\s*[:,]\s*%s" % (
            _quoted(comparison), _quoted(classes))).search),
        ("merge rule", re.compile(r"%s\s*[:,]\s*%s" % (_quoted(metrics),
                                                       _quoted(merge_rules(d)))).search),
        ("merge rule", re.compile(r"(?i)\b\w*(%s)\w*\s*=\s*[(\[{]\s*%s\s*," % (
            "|".join(merge_rules(d)), _quoted(metrics))).search),
        ("secret rule", _list_check(
            lambda w: len(set(d["secret_settings"]["markers"]) & set(w)) > 1)),
        ("equivalence threshold", re.compile("|".join(
            r"%s\s*[,:]\s*%g(\.0*)?\b" % (_quoted([n]), pct) for n, pct in own.items())).search),
    ]
    for kind in d["row_kinds"]:
        if len(kind["primary"]) > 1:
            out.append(("primary metrics", _list_check(
                lambda w, p=kind["primary"]: set(w) == set(p))))
    return out


def _lines(path):
    """The lines of a file to search (a doc's generated blocks blanked); [] if not text."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (UnicodeDecodeError, OSError):
        return []
    if path.endswith(".md"):
        text = GENERATED.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    return text.splitlines()


def copies(root, paths=SEARCHED):
    """[(relative path, line number, kind, line)] of every second copy under root."""
    found = []
    checks = searches()
    own = os.path.abspath(__file__)
    for top in paths:
        top = os.path.join(root, top)
        walk = [(os.path.dirname(top), [], [os.path.basename(top)])] if os.path.isfile(top) \
            else os.walk(top)
        for dirpath, dirnames, filenames in walk:
            dirnames[:] = [d for d in dirnames if d not in SKIPPED_DIRS]
            for name in sorted(filenames):
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                if os.path.abspath(path) == own or rel in SOURCES:
                    continue
                for n, line in enumerate(_lines(path), 1):
                    for kind in dict.fromkeys(k for k, check in checks if check(line)):
                        found.append((rel, n, kind, line.strip()))
    return found


# Where the facts test looks, as the places a copy can hide: {place: file a copy is planted in}.
PLACES = {"scripts": "scripts/kbench/copy.py", "tests": "tests/scripts/copy.py",
          "docs": "docs/copy.md", "README.md": "README.md",
          "benchmarks": "benchmarks/copy.cc", "fixtures": "fixtures/copy.h",
          "harness": "harness/codecs/copy.cc", "mock": "mock/copy.cc"}


def planted():
    """{kind: a line that copies a fact of that kind}, written the way each place would."""
    d = facts.describe()
    fams = [f["name"] for f in d["families"] if f["needs_cluster"]]
    metric = next(m for m in d["metrics"] if m["direction"])
    with_unit = next(m for m in d["metrics"] if m["unit"])
    kind = next(k for k in d["row_kinds"] if len(k["primary"]) > 1)
    primaries = [k["primary"][0] for k in d["row_kinds"] if k["primary"][0] != "time"][:3]
    marks = d["secret_settings"]["markers"][:2]
    quantile = d["latency"]["quantiles"][0]
    own = next(m for m in d["metrics"] if m.get("equivalence_pct"))
    codecs = [c["name"] for c in d["codecs"]][1:4]
    lib = next(c for c in d["codecs"] if c.get("version_function"))
    critical = [k["key"] for k in d["context"]["keys"] if k["comparison"] == "critical"][:2]
    ignored = next(k["key"] for k in d["context"]["keys"] if k["comparison"] == "ignored")
    rule = merge_rules(d)
    merged = next(m["name"] for m in d["metrics"] if m.get("merge")) if any(
        m.get("merge") for m in d["metrics"]) else metric["name"]
    q = '"%s"'.__mod__
    return {
        "cluster families": "re = '^(%s)/'" % "|".join(fams),
        "metric direction": "M = {%s: (%d, \"why\")}" % (q(metric["name"]), metric["direction"]),
        "metric unit": "U = {%s: %s}" % (q(with_unit["name"]), q(with_unit["unit"])),
        "primary metrics": "P = (%s)" % ", ".join(q(p) for p in kind["primary"]),
        "primary metrics of kinds": "T = (%s)" % ", ".join(q(p) for p in primaries),
        "codec version key": "ctx.get(%s)" % q(lib["version_key"]),
        "codec names": "C = [%s]" % ", ".join(q(c) for c in codecs),
        "codec soname": "S = {%s: %s}" % (q(lib["name"]), q(lib["soname"])),
        "codec version function": "V = {%s: %s}" % (q(lib["name"]), q(lib["version_function"])),
        "secret rule": "S = (%s)" % ", ".join(q(m) for m in marks),
        "latency quantile": "Q = ((%s, %s),)" % (q(quantile["metric"]), quantile["q"]),
        "latency metrics": "L = [%s]" % ", ".join(q(m) for m in [
            quantile["metric"], quantile["queue_metric"], d["latency"]["max"]["metric"]]),
        "equivalence threshold": "E = {%s: %g}" % (q(own["name"]), own["equivalence_pct"]),
        "context keys": "K = [%s]" % ", ".join(q(k) for k in critical),
        "context comparison": "R = {%s: \"ignored\"}" % q(ignored),
        "merge rule": "G = {%s: %s}" % (q(merged), q(sorted(rule)[0])),
    }


class OneSourceOfFacts(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.found = copies(ROOT)

    def test_every_search_finds_a_planted_copy_in_every_place(self):
        lines = planted()
        with tempfile.TemporaryDirectory() as tmp:
            for rel in PLACES.values():
                path = os.path.join(tmp, rel)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w", encoding="utf-8") as f:
                    f.write("".join("%s  # a second copy of %s\n" % (text, kind)
                                    for kind, text in lines.items()))
            found = copies(tmp)
        for place, rel in PLACES.items():
            with self.subTest(place=place):
                kinds = {k for path, _, k, _ in found if path == rel}
                self.assertEqual(sorted(set(lines) - kinds), [], "not found in %s" % rel)

    def test_no_fact_is_written_twice(self):
        found = [c for c in self.found if (c[0], c[2]) not in KNOWN]
        self.assertEqual(found, [], "\n".join(
            "%s:%d: a second copy of a fact kbench --describe=json holds (%s): %s"
            % c for c in found))

    def test_known_copies_are_still_there(self):
        # A copy removed must leave KNOWN too, so that the list stays the truth.
        present = {(c[0], c[2]) for c in self.found}
        self.assertEqual(sorted(set(KNOWN) - present), [])


class Accessors(unittest.TestCase):
    """facts.py's answers hold together with the description they come from."""

    def test_context(self):
        keys = facts.context_keys()
        for key, row in keys.items():
            self.assertEqual(facts.context_comparison(key), row["comparison"])
            self.assertIn(key, facts.context_keys(row["comparison"]))
        family = next(k for k in keys if k.endswith("."))
        self.assertEqual(facts.context_comparison(family + "some.setting"),
                         keys[family]["comparison"])
        self.assertEqual(facts.context_comparison("no_such_key"), "other")
        self.assertTrue(set(facts.series_keys()) <= set(keys))
        # Every codec library's version is a key of the context.
        self.assertTrue(set(facts.codec_version_keys()) <= set(keys))

    def test_libraries(self):
        libs = facts.libraries()
        for codec in facts.describe()["codecs"]:
            if codec.get("library"):
                self.assertIn(codec["name"], libs[codec["library"]]["codecs"])
        self.assertEqual(set(facts.version_functions()),
                         {n for n, lib in libs.items() if lib["version_function"]})
        written = {c["librdkafka_name"] for c in facts.describe()["codecs"]}
        self.assertTrue(set(facts.librdkafka_codecs()) < written)


class GeneratedDocs(unittest.TestCase):
    """The docs' generated tables (README's options, codecs and families, docs/families.md's
    families and keys, docs/counters.md's metrics and context keys, docs/comparing.md's
    primary metrics, equivalence thresholds, context comparisons and commands' options) are
    what scripts/lib/python -m kbench.docs writes."""

    def test_the_generated_blocks_are_current(self):
        stale = [os.path.relpath(p, ROOT) for p, (old, new) in docs.render().items()
                 if old != new]
        self.assertEqual(stale, [], "regenerate them: scripts/lib/python -m kbench.docs")

    def test_a_block_edited_by_hand_is_found(self):
        with tempfile.TemporaryDirectory() as tmp:
            for rel, generated in docs.blocks().items():
                with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
                    text = f.read()
                name, body = generated[-1]
                begin = "<!-- %s: begin -->\n" % name
                text = text.replace(begin + body, begin + body.replace("|", "| edited", 1), 1)
                os.makedirs(os.path.dirname(os.path.join(tmp, rel)), exist_ok=True)
                with open(os.path.join(tmp, rel), "w", encoding="utf-8") as f:
                    f.write(text)
            stale = sorted(os.path.relpath(p, tmp) for p, (old, new) in docs.render(tmp).items()
                           if old != new)
        self.assertEqual(stale, sorted(docs.blocks()))

    def test_a_commands_usage_comes_from_its_parser(self):
        def add_arguments(parser):
            parser.add_argument("--alpha", type=float, default=0.01, help="level (default %(default)s)")
            parser.add_argument("base", help="the base run")
        converted = types.ModuleType("kbench.commands.planted")
        converted.__doc__, converted.add_arguments = "A planted command.", add_arguments
        with mock.patch("kbench.__main__.command_module",
                        lambda name: converted if name == "planted" else None):
            table = docs.usage_table("planted")
            self.assertIsNone(docs.usage_table("unconverted"))
        self.assertIn("`--alpha ALPHA`", table)
        self.assertIn("level (default 0.01)", table)
        self.assertIn("the base run", table)
        with tempfile.TemporaryDirectory() as tmp:
            doc = os.path.join(tmp, "planted.md")
            with open(doc, "w", encoding="utf-8") as f:
                f.write("<!-- usage:planted: begin -->\nby hand\n<!-- usage:planted: end -->\n")
            with mock.patch.object(docs, "blocks", lambda: {"planted.md": []}), \
                    mock.patch("kbench.__main__.command_module", lambda name: converted):
                old, new = docs.render(tmp)[doc]
        self.assertNotIn("by hand", new)
        self.assertIn("`--alpha ALPHA`", new)


if __name__ == "__main__":
    unittest.main()
