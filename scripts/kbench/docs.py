"""Rewrites the docs' generated tables from what kbench and the commands say of themselves:
`kbench --describe=json` (kbench.facts) and each command's argparse parser.

    scripts/lib/python -m kbench.docs            # rewrite every stale block
    scripts/lib/python -m kbench.docs --check    # name the stale files, exit 1; write nothing

A block lies between `<!-- NAME: begin -->` and `<!-- NAME: end -->` (BLOCKS); a
`<!-- usage:COMMAND: begin -->` block holds COMMAND's options as its parser has them.
"""

import os
import pathlib
import re
import sys

from kbench import ROOT, cli, facts, text

USAGE_BLOCK = re.compile(r"<!-- usage:([\w-]+): begin -->")


def _table(headers, rows):
    """A Markdown table; a | inside a cell is escaped."""
    return text.table(headers, [[str(c).replace("|", r"\|") for c in r] for r in rows], markdown=True)


def _code(name):
    return "`%s`" % name


def options_table():
    return _table(("kbench option", "meaning"), [(_code(o["flag"]), o["meaning"]) for o in facts.describe()["options"]])


def codecs_line():
    def one(c):
        levels = c["levels"]
        words = []
        if levels["max"] > levels["min"]:
            words.append("levels %d to %d, default %d" % (levels["min"], levels["max"], levels["default"]))
        if c["name"] != "none" and not c["librdkafka_name"]:
            words.append("librdkafka does not write it")
        return _code(c["name"]) + (" (%s)" % "; ".join(words) if words else "")
    return "Codecs: %s." % ", ".join(one(c) for c in facts.describe()["codecs"])


def families_table(example=True):
    header = ("family", "measures") + (("example",) if example else ())
    return _table(header, [(_code(f["name"]), f["measures"]) + ((_code(f["example"]),) if example else ())
                           for f in facts.families()])


def keys_table(family):
    return _table(("key", "meaning"), [(_code(k["key"]), k["help"]) for k in family["keys"]])


def directions_table():
    words = {1: "higher is better", -1: "lower is better", 0: "informational"}
    return _table(("metric", "unit", "direction", "why"),
                  [(_code(m["name"]), m["unit"], words[m["direction"]], m["meaning"])
                   for m in facts.describe()["metrics"]])


def equivalence_table():
    """The metrics with an equivalence threshold of their own, as a factor either way."""
    ups = [(m["name"], m["equivalence_pct"]) for m in facts.describe()["metrics"] if m.get("equivalence_pct")]
    return _table(("metric", "`equivalence_pct`", "threshold (at the default `--threshold`)"),
                  [(_code(name), "%g" % up, "%.3g × either way: +%g %% / −%.3g %%"
                    % (1 + up / 100.0, up, 100.0 * up / (100.0 + up))) for name, up in ups])


def primary_table():
    """What decides each kind of row, in the order the kinds are checked."""
    return _table(("rows", "marked by", "primary metric(s)", "why"),
                  [(_code(k["kind"]), _code(k["marker"]) if k["marker"] else "every other row",
                    ", ".join(_code(p) for p in k["primary"]), k["why"]) for k in facts.row_kinds()])


def _key_name(key):
    return key + "<setting>" if key.endswith(".") else key


def context_table():
    return _table(("key", "written by", "a difference is", "meaning"),
                  [(_code(_key_name(k)), row["written_by"], row["comparison"], row["meaning"])
                   for k, row in facts.context_keys().items()])


def comparison_table():
    """Which context keys matter when two runs are compared, and how."""
    rows = [(c, meaning, ", ".join(_code(_key_name(k)) for k in facts.context_keys(c)))
            for c, meaning in facts.describe()["context"]["comparisons"].items()]
    return _table(("a differing key is", "what it means", "keys"),
                  [(c, m, keys if c != "other" else "every other key (%s)" % keys) for c, m, keys in rows])


def usage_table(command):
    """COMMAND's options and sub-commands as its parser has them (None: it has no parser)."""
    from kbench import __main__ as entry
    module = entry.command_module(command)
    if module is None or not hasattr(module, "add_arguments"):
        return None
    parser = entry.parser_for(command, module)
    formatter = parser._get_formatter()
    rows = []
    for action in parser._actions:
        if action.help == "==SUPPRESS==" or "-h" in action.option_strings:
            continue
        if action.choices and hasattr(action, "_choices_actions"):  # sub-commands
            rows.extend((_code(a.dest), a.help or "") for a in action._choices_actions)
            continue
        name = formatter._format_action_invocation(action)
        rows.append((_code(name), formatter._expand_help(action) if action.help else ""))
    return _table(("scripts/%s" % command, "meaning"), rows)


def blocks():
    """{doc path relative to the project: [(marker name, generated text)]}."""
    keys = [("%s-keys" % f["keys_flag"].lstrip("-"), keys_table(f)) for f in facts.families() if f["keys_flag"]]
    return {"README.md": [("options", options_table()), ("codecs", codecs_line()),
                          ("families", families_table(False))],
            "docs/families.md": [("families", families_table())] + keys,
            "docs/counters.md": [("metric-directions", directions_table()), ("context-keys", context_table())],
            "docs/comparing.md": [("primary-metrics", primary_table()),
                                  ("equivalence-thresholds", equivalence_table()),
                                  ("context-comparisons", comparison_table())]}


def _replace(doc, rel, name, body):
    begin, end = "<!-- %s: begin -->" % name, "<!-- %s: end -->" % name
    if begin not in doc or end not in doc:
        raise facts.FactsUnavailable("%s has no %s ... %s block" % (rel, begin, end))
    head, rest = doc.split(begin, 1)
    return head + begin + "\n" + body + "\n" + end + rest.split(end, 1)[1]


def render(root=ROOT):
    """{path: (current text, text with every generated block regenerated)}."""
    out = {}
    for rel, generated in blocks().items():
        path = os.path.join(root, rel)
        old = new = pathlib.Path(path).read_text(encoding="utf-8")
        for name, body in generated:
            new = _replace(new, rel, name, body)
        for command in USAGE_BLOCK.findall(new):
            body = usage_table(command)
            if body is not None:
                new = _replace(new, rel, "usage:" + command, body)
        out[path] = (old, new)
    return out


def main(argv):
    ap = cli.ArgumentParser(prog="kbench.docs", description=__doc__.split("\n\n")[0], formatter_class=cli.HelpFormatter)
    ap.add_argument("--check", action="store_true", help="name the files whose generated blocks are stale and exit 1")
    args = ap.parse_args(argv)
    try:
        stale = [(path, new) for path, (old, new) in render().items() if new != old]
    except facts.FactsUnavailable as e:
        cli.die(str(e))
    for path, new in stale:
        if not args.check:
            pathlib.Path(path).write_text(new, encoding="utf-8")
        print("%s %s" % ("stale" if args.check else "regenerated", os.path.relpath(path, ROOT)))
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
