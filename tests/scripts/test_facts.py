"""One source of facts: what kbench says of itself (kbench --describe=json, from the C++
tables) is written nowhere else. The scripts and the CI recipe (what acts on the facts; a
test may state the value it expects) are searched for second copies of each kind of fact
the description holds:
- which families need a cluster: two or more family names in one regex alternation or
  one list literal;
- a metric's direction: a metric name mapped to +1, -1 or 0;
- what decides a row: a kind's primary metrics written out as one list;
- the codecs' version keys (zlib_version, ...);
- the secret-setting rule: two or more of its markers in one list;
- a latency quantile written with its q (the histogram's report);
- a metric's own equivalence threshold (equivalence_pct): its name with a number of percent.
Each search is first shown to find a planted copy, so that it cannot pass by finding
nothing."""

import os
import re
import tempfile
import unittest

from kbench import facts

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


# Copies known and not yet removed, each with the reason it is still there: {(path, kind)}.
KNOWN = set()
SEARCHED = ("scripts", "docs/ci-workflow.yml")
SKIPPED_DIRS = {"__pycache__", "golden", "fake_kbench"}


def _alternation(words):
    one = "(?:%s)" % "|".join(re.escape(w) for w in words)
    return one


def searches():
    """[(kind, compiled regex)] built from the description itself."""
    d = facts.describe()
    fams = _alternation(f["name"] for f in d["families"])
    quoted_fam = r"""["']%s["']""" % fams
    metrics = _alternation(m["name"] for m in d["metrics"])
    out = [
        ("cluster families", re.compile(r"\b%s\s*\|\s*%s\b" % (fams, fams))),
        ("cluster families", re.compile(r"%s\s*,\s*%s" % (quoted_fam, quoted_fam))),
        # A direction table: "metric": (+1, ...) or "metric": -1.
        ("metric direction", re.compile(r"""["']%s["']\s*:\s*(\(\s*[-+]?[01]\s*,|[-+]1\b)"""
                                        % metrics)),
        ("codec version key", re.compile(r"\b%s\b" % _alternation(
            c["version_key"] for c in d["codecs"] if c["version_key"]))),
    ]
    for kind in d["row_kinds"]:
        prim = [p for p in kind["primary"]]
        if len(prim) > 1:
            out.append(("primary metrics", re.compile(r"[(\[{]\s*%s\s*,?\s*[)\]}]" % (
                r"""\s*,\s*""".join(r"""["']%s["']""" % re.escape(p) for p in prim)))))
    # A latency quantile written with its q: ("p99_us", 0.99) or "p99_us": 0.99.
    quantile_names = _alternation(q[k] for q in d["latency"]["quantiles"]
                                  for k in ("metric", "queue_metric"))
    out.append(("latency quantile", re.compile(r"""["']%s["']\s*[,:]\s*0?\.\d""" % quantile_names)))
    # An equivalence threshold: "p50_us": 25 or ("p99_us", 100.0).
    own = [m["name"] for m in d["metrics"] if m.get("equivalence_pct")]
    if own:
        out.append(("equivalence threshold", re.compile(
            r"""["']%s["']\s*[,:]\s*[1-9]\d*(\.\d+)?\b""" % _alternation(own))))
    markers = _alternation(d["secret_settings"]["markers"])
    out.append(("secret rule", re.compile(r"""["']%s["']\s*,\s*["']%s["']""" % (markers,
                                                                              markers))))
    return out


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
            for name in filenames:
                path = os.path.join(dirpath, name)
                if os.path.abspath(path) == own:
                    continue
                try:
                    with open(path, encoding="utf-8") as f:
                        lines = f.read().splitlines()
                except (UnicodeDecodeError, OSError):
                    continue
                for n, line in enumerate(lines, 1):
                    for kind, rx in checks:
                        if rx.search(line):
                            found.append((os.path.relpath(path, root), n, kind, line.strip()))
    return found


class OneSourceOfFacts(unittest.TestCase):
    def test_every_search_finds_a_planted_copy(self):
        d = facts.describe()
        fams = [f["name"] for f in d["families"] if f["needs_cluster"]]
        metric = next(m for m in d["metrics"] if m["direction"])
        kind = next(k for k in d["row_kinds"] if len(k["primary"]) > 1)
        key = next(c["version_key"] for c in d["codecs"] if c["version_key"])
        marks = d["secret_settings"]["markers"][:2]
        quantile = d["latency"]["quantiles"][0]
        own = next(m for m in d["metrics"] if m.get("equivalence_pct"))
        planted = {
            "cluster families": "re = '^(%s)/'\n" % "|".join(fams),
            "metric direction": 'M = {"%s": (%d, "why")}\n' % (metric["name"],
                                                              metric["direction"]),
            "primary metrics": "P = (%s)\n" % ", ".join('"%s"' % p for p in kind["primary"]),
            "codec version key": "ctx.get('%s')\n" % key,
            "secret rule": "S = (%s)\n" % ", ".join('"%s"' % m for m in marks),
            "latency quantile": "Q = ((\"%s\", %s),)\n" % (quantile["metric"], quantile["q"]),
            "equivalence threshold": "E = {\"%s\": %g}\n" % (own["name"], own["equivalence_pct"]),
        }
        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, "scripts"))
            for i, (what, text) in enumerate(planted.items()):
                with open(os.path.join(tmp, "scripts", "copy%d.py" % i), "w") as f:
                    f.write("# a second copy of %s\n%s" % (what, text))
            kinds = {k for _, _, k, _ in copies(tmp, ("scripts",))}
        self.assertEqual(kinds, set(planted))

    def test_no_fact_is_written_twice(self):
        found = [c for c in copies(ROOT) if (c[0], c[2]) not in KNOWN]
        self.assertEqual(found, [], "\n".join(
            "%s:%d: a second copy of a fact kbench --describe=json holds (%s): %s"
            % c for c in found))

    def test_known_copies_are_still_there(self):
        # A copy removed must leave KNOWN too, so that the list stays the truth.
        present = {(c[0], c[2]) for c in copies(ROOT)}
        self.assertEqual(sorted(KNOWN - present), [])


class GeneratedDocs(unittest.TestCase):
    """docs/families.md's key tables and docs/counters.md's metric directions are generated
    from the description (scripts/lib/python -m kbench.facts docs)."""

    def test_the_generated_blocks_are_current(self):
        stale = [os.path.relpath(p, ROOT) for p, (old, new) in facts.render_docs().items()
                 if old != new]
        self.assertEqual(stale, [], "regenerate them: scripts/lib/python -m kbench.facts docs")

    def test_a_stale_block_is_found(self):
        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, "docs"))
            for rel in facts.generated_blocks():
                with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
                    text = f.read()
                if rel.endswith("families.md"):
                    # One key's meaning edited by hand.
                    key = next(f for f in facts.families() if f["keys"])["keys"][0]
                    text = text.replace("| `%s` | %s |" % (key["key"], key["help"]),
                                        "| `%s` | edited by hand |" % key["key"], 1)
                with open(os.path.join(tmp, rel), "w", encoding="utf-8") as f:
                    f.write(text)
            stale = [os.path.basename(p) for p, (old, new) in facts.render_docs(tmp).items()
                     if old != new]
        self.assertEqual(stale, ["families.md"])


if __name__ == "__main__":
    unittest.main()
