"""Report of the known-regressions scenario: per documented librdkafka change (cases.tsv),
the direction expected, what scripts/bench-commits' verdict found, found or not, and the
time it took; the scenario's exit status: DIR/report.md, DIR/known-regressions.png,
DIR/summary.json (with "exit_code") and DIR/summary.txt (the per-case table the runner
prints). run.py also reads the case table with load_cases and select."""

import collections
import contextlib
import json
import os
import pathlib
import re
import sys

from kbench import cli, text
from kbench import results as kr
from kbench import scenario as ks

FIELDS = ("id", "measures", "a", "b", "target", "filter", "args", "metric", "expect", "change", "source")
MEASURES = ("throughput", "cpu", "latency", "control")
TARGETS = ("mock", "plaintext", "ssl")
EXPECTS = ("regression", "improvement", "none")
PRIMARY_KEYS = ("regressions", "improvements", "inconclusive", "unchanged")
FOUND, MISSED, NOT_JUDGED = "found", "not found", "not judged"


def load_cases(path):
    """The cases of a cases.tsv file, in file order; a malformed line is a ScenarioError."""
    try:
        lines = pathlib.Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise ks.ScenarioError("cannot read %s: %s" % (path, e.strerror)) from None
    cases, seen = [], set()
    for n, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = line.split("\t")
        where = "%s:%d" % (path, n)
        if len(parts) != len(FIELDS):
            raise ks.ScenarioError("%s: %d TAB-separated fields, want %d (%s)"
                                   % (where, len(parts), len(FIELDS), ", ".join(FIELDS)))
        case = dict(zip(FIELDS, (p.strip() for p in parts)))
        if not re.match(r"^[a-z0-9][a-z0-9-]*$", case["id"]):
            raise ks.ScenarioError("%s: bad case id %r (lower-case letters, digits, -)" % (where, case["id"]))
        if case["id"] in seen:
            raise ks.ScenarioError("%s: case %s appears twice" % (where, case["id"]))
        seen.add(case["id"])
        # A broker target may pin its Kafka release (old clients need one that serves them).
        kind, _, version = case["target"].partition("@")
        if version and (kind == "mock" or not re.match(r"^[0-9]+\.[0-9]+\.[0-9]+$", version)):
            raise ks.ScenarioError("%s: target %r: only plaintext@X.Y.Z or ssl@X.Y.Z pin a "
                                   "Kafka release" % (where, case["target"]))
        for key, known in (("measures", MEASURES), ("target", TARGETS), ("expect", EXPECTS)):
            if (kind if key == "target" else case[key]) not in known:
                raise ks.ScenarioError("%s: %s %r is not one of %s" % (where, key, case[key], ", ".join(known)))
        for key in ("a", "b"):
            if not re.match(r"^(system|[0-9]+\.[0-9]+\.[0-9]+|tree:[0-9A-Za-z._/-]+)$", case[key]):
                raise ks.ScenarioError("%s: side %s %r is not a release, system or tree:REV" % (where, key, case[key]))
        try:
            re.compile(case["filter"])
        except re.error as e:
            raise ks.ScenarioError("%s: filter %r: %s" % (where, case["filter"], e)) from None
        if not case["args"]:
            raise ks.ScenarioError("%s: no kbench arguments" % where)
        if case["metric"] != "-" and not re.match(r"^[a-z][a-z0-9_]*$", case["metric"]):
            raise ks.ScenarioError("%s: metric %r is not '-' or a metric name" % (where, case["metric"]))
        cases.append(case)
    if not cases:
        raise ks.ScenarioError("%s has no cases" % path)
    return cases


def select(cases, spec):
    """The cases `spec` names ("ID,ID", "all"; None: every case but the controls)."""
    if spec is None:
        return [c for c in cases if c["measures"] != "control"]
    if spec == "all":
        return list(cases)
    by_id = {c["id"]: c for c in cases}
    names = list(dict.fromkeys(name.strip() for name in spec.split(",")))
    for name in names:
        if name not in by_id:
            raise ks.ScenarioError("unknown case %r (known: %s)" % (name, ", ".join(by_id)))
    return [by_id[name] for name in names]


def _row(r):
    """The fields of a verdict row that the report shows."""
    return {k: r.get(k) for k in ("name", "metric", "change_pct", "ci_low_pct", "ci_high_pct",
                                  "p_value", "p_adjusted", "verdict", "reason", "base_median",
                                  "new_median")}


def found_in(verdict):
    """What kbench found: regression, improvement, mixed (both among the deciding rows),
    unchanged (every deciding row proven within the threshold) or inconclusive (no deciding
    row either way and some not judged)."""
    reg, imp = verdict.get("regressions"), verdict.get("improvements")
    if reg or imp:
        return "mixed" if reg and imp else "regression" if reg else "improvement"
    not_judged = any(verdict.get(k) for k in ("inconclusive", "errored", "unjudged", "only_in_base", "only_in_new"))
    return "inconclusive" if not_judged or not verdict.get("unchanged") else "unchanged"


def verdict_file(case):
    """The deciding verdict: bench-commits' own, or scripts/compare's on the case's metric."""
    return "verdict.json" if case["metric"] == "-" else "verdict-%s.json" % case["metric"]


def judge(case, run, verdict):
    """One case's outcome from its case.json (RUN) and deciding verdict (VERDICT), either None if absent."""
    ran = run or {}
    out = dict({k: case[k] for k in ("id", "measures", "a", "b", "target", "expect", "source", "metric")},
               verdict_file=verdict_file(case), seconds=ran.get("seconds"), exit_code=ran.get("exit_code"),
               deciding=[], significant_secondary=[], note=ran.get("note"))
    if run is None or run.get("note"):
        out.update(found="not run", status=NOT_JUDGED, note=out["note"] or "the case did not run")
        return out
    if verdict is None:
        if case["metric"] != "-" and run.get("metric_exit_code") is not None:
            why = "scripts/compare --metric %s exited %s without a verdict" % (case["metric"], run["metric_exit_code"])
        else:
            why = "scripts/bench-commits exited %s without a verdict (see its log)" % run.get("exit_code")
        out.update(found="failed", status=NOT_JUDGED, note=why)
        return out
    out["deciding"] = [_row(r) for key in PRIMARY_KEYS for r in verdict.get(key, [])]
    out["significant_secondary"] = [_row(r) for r in verdict.get("secondary", [])
                                    if r.get("verdict") in ("regression", "improvement")]
    failures = ["%s (%s side): %s" % (e.get("name"), e.get("side"), e.get("message"))
                for e in verdict.get("errored", [])]
    failures += ["%s: %s" % (u.get("name"), u.get("reason")) for u in verdict.get("unjudged", [])]
    if failures:
        out["note"] = "; ".join(failures)
    found = out["found"] = found_in(verdict)
    # A control (expect none) is found only when its deciding rows are proven unchanged.
    expected = "unchanged" if case["expect"] == "none" else case["expect"]
    out["status"] = FOUND if found == expected else NOT_JUDGED if found == "inconclusive" else MISSED
    return out


def exit_code(outcomes):
    """0 every case found, 1 one missed, 3 one not judged (and none missed)."""
    statuses = {o["status"] for o in outcomes}
    return 1 if MISSED in statuses else 3 if NOT_JUDGED in statuses or not outcomes else 0


def fmt_seconds(s):
    return "—" if s is None else "%d min %02d s" % divmod(int(s), 60) if s >= 60 else "%d s" % s


def fmt_row(r):
    change = "—" if r["change_pct"] is None else "%+.1f %%" % r["change_pct"]
    if r.get("ci_low_pct") is not None and r.get("ci_high_pct") is not None:
        change += " [%+.1f, %+.1f]" % (r["ci_low_pct"], r["ci_high_pct"])
    p = "p %s" % text.number(r["p_value"], digits=2)
    if r.get("p_adjusted") is not None:
        p += ", adj. %s" % text.number(r["p_adjusted"], digits=2)
    verdict = r.get("verdict")
    return "%s %s: %s, %s: %s" % (short_name(r["name"]), r["metric"], change, p,
                                  verdict.upper() if verdict in ("regression", "improvement") else verdict)


def short_name(name):
    """A row's name without /real_time."""
    return re.sub(r"/real_time$", "", name or "?")


def summary_text(outcomes, code):
    lines = []
    for o in outcomes:
        lines.append("case %s (%s): %s -> %s on %s, expected %s: kbench found %s: %s, %s"
                     % (o["id"], o["measures"], o["a"], o["b"], o["target"],
                        o["expect"] if o["expect"] != "none" else "no change",
                        o["found"], o["status"].upper(), fmt_seconds(o["seconds"])))
        lines += ["  deciding    %s" % fmt_row(r) for r in o["deciding"]]
        lines += ["  secondary   %s" % fmt_row(r) for r in o["significant_secondary"]]
        if o.get("note"):
            lines.append("  note        %s" % o["note"])
    counts = collections.Counter(o["status"] for o in outcomes)
    lines.append("known-regressions: %d of %d case(s) found, %d not found, %d not judged (%s in the cases); exit %d"
                 % (counts[FOUND], len(outcomes), counts[MISSED], counts[NOT_JUDGED],
                    fmt_seconds(sum(o["seconds"] or 0 for o in outcomes)), code))
    return "\n".join(lines) + "\n"


def chart(directory, outcomes):
    """One bar per deciding row: its change in %, coloured by the case's status."""
    plt = ks.plt_module()
    labels, values, colours = [], [], []
    colour = {FOUND: "#2a7", MISSED: "#c33", NOT_JUDGED: "#999"}
    for o in outcomes:
        rows = o["deciding"] or [{"name": "(no verdict)", "metric": "", "change_pct": 0.0}]
        # What tells a case's rows apart: the parts of their names they do not all share.
        parts = [short_name(r["name"]).split("/") for r in rows]
        shared = set.intersection(*(set(p) for p in parts)) if len(parts) > 1 else set()
        for r, p in zip(rows, parts):
            own = "/".join(x for x in p if x not in shared) or "/".join(p[:2])
            labels.append("%s\n%s %s" % (o["id"], r["metric"], own[-48:]))
            values.append(r["change_pct"] or 0.0)
            colours.append(colour[o["status"]])
    fig, ax = plt.subplots(figsize=(9, 1.0 + 0.55 * len(values)))
    ax.barh(range(len(values)), values, color=colours)
    ax.set_yticks(range(len(values)), labels, fontsize=6)
    ax.invert_yaxis()
    ax.axvline(0, color="black", linewidth=0.6)
    ax.set_xscale("symlog", linthresh=10)
    ax.set_xlabel("change of B against A, % (green: found, red: not found, grey: not judged)")
    ax.set_title("known-regressions: deciding rows per case")
    fig.tight_layout()
    ks.save_chart(fig, directory, "known-regressions.png")


def _load_json(path):
    return cli.read_json(path) if os.path.exists(path) else None


def report(directory, args):
    cases = select(load_cases(args.cases_file), args.cases)
    outcomes, ctx = [], {}
    for case in cases:
        cdir = os.path.join(directory, "cases", case["id"])
        verdict = _load_json(os.path.join(cdir, verdict_file(case)))
        outcomes.append(judge(case, _load_json(os.path.join(cdir, "case.json")), verdict))
        if not ctx and os.path.exists(os.path.join(cdir, "new.json")):
            with contextlib.suppress(kr.BenchmarkJsonError):  # the header's machine and versions
                ctx = kr.load(os.path.join(cdir, "new.json")).get("context", {})
    code = exit_code(outcomes)
    pathlib.Path(directory, "summary.txt").write_text(summary_text(outcomes, code), encoding="utf-8")
    with open(os.path.join(directory, "summary.json"), "w", encoding="utf-8") as f:
        json.dump({"exit_code": code, "cases": outcomes}, f, indent=1)

    if ctx:  # the sides' libraries differ per case: the table below names them
        ctx = dict(ctx, librdkafka_version="per case, A → B in the table below")
    lines = ks.header(args, "Known librdkafka performance changes: found or not",
                      "documented librdkafka changes (cases.tsv: CHANGELOG lines, issues, pull requests)", ctx, [
                          "Each case runs on this host, one kbench build on both sides and only librdkafka "
                          "differing; the original reports came from users' own clusters and applications.",
                          "A case is found when scripts/compare's deciding rows show the documented direction and "
                          "none the opposite one; secondary rows are listed, never decide."], common=False)
    lines += ["## Cases", ""]
    lines += text.table(
        ["case", "measures", "A → B", "target", "expected", "kbench found", "result", "time"],
        [[o["id"], o["measures"], "%s → %s" % (o["a"], o["b"]), o["target"],
          o["expect"] if o["expect"] != "none" else "no change", o["found"], "**%s**" % o["status"],
          fmt_seconds(o["seconds"])] for o in outcomes], markdown=True).splitlines()
    lines += ["", "Exit status %d (0 every case found, 1 a case not found, 3 a case not judged)." % code, ""]
    for case, o in zip(cases, outcomes):
        lines += ["## %s" % o["id"], "", case["change"] + ".", "",
                  "Source: %s." % case["source"].rstrip("."), "",
                  "Workload: `--filter '%s' -- %s` on %s; decided by %s." % (
                      case["filter"], case["args"], case["target"],
                      "the rows' primary metrics" if case["metric"] == "-"
                      else "`%s` (scripts/compare --metric)" % case["metric"]), ""]
        for label, rows in (("Deciding rows", o["deciding"]),
                            ("Significant secondary rows", o["significant_secondary"])):
            if rows:
                lines += ["%s:" % label, ""] + ["- %s" % fmt_row(r) for r in rows] + [""]
        if o.get("note"):
            lines += ["Note: %s" % o["note"], ""]
    ks.write_report(directory, lines)
    chart(directory, outcomes)


def add_options(ap):
    ap.add_argument("--cases-file", required=True)
    ap.add_argument("--cases")


if __name__ == "__main__":
    sys.exit(ks.report_main(report, add_options))
