"""The release history's site: static pages drawn from the published data with Plotly
(Plotly's basic bundle written beside them, nothing fetched), opened from files.

  index.html             provenance, the verdict strip of every release step, a timeline per row
  steps/BASE..NEW.html   one step: every row's change with its interval, its commits, the
                         CHANGELOG section, the commands that reproduce it and find its commit
  compare.html?a=X&b=Y   any two releases, row by row (the address says which two)
  data.json, data.csv    the data, to download
"""

import csv
import html
import json
import os
import re
import statistics

from plotly import graph_objects as go

from kbench import plot_pages, verdict
from kbench import results as kr

CSS = """
.strip{display:flex;flex-wrap:wrap;gap:3px}
.strip a{display:block;padding:3px 5px;font-size:11px;border-radius:3px;text-decoration:none;color:#fff}
a.regression,td.regression{background:#c62828}a.improvement,td.improvement{background:#2e7d32}
a.unchanged,td.unchanged{background:#9e9e9e}a.not-judged,td.not-judged{background:#f9a825}
td.regression,td.improvement,td.unchanged,td.not-judged{color:#fff}pre{background:#eee;padding:8px;white-space:pre-wrap}
.provenance td:first-child{font-weight:600}
"""

VERDICT_COLORS = {"regression": "#c62828", "improvement": "#2e7d32", "unchanged": "#9e9e9e", "not judged": "#f9a825"}


def short_name(name):
    for suffix in ("/real_time", "/producers:1", "/threads:1"):
        name = name.removesuffix(suffix)
    return name


def css_class(word):
    return word.replace(" ", "-")


def step_file(step):
    return "%s..%s.html" % (step["base"], step["new"])


def series(doc):
    """[(group, row name, metric, direction, {tag: [value per visit]})] in the groups' order."""
    out = []
    tags = [r["tag"] for r in doc["releases"]]
    for g in doc["groups"]:
        names = {}
        for tag in tags:
            for d in doc["results"].get(tag, {}).get(g["name"], []):
                for b in d["benchmarks"]:
                    names.setdefault(b["name"], b)
        for name, sample in names.items():
            metrics = [(m, kr.metric_direction(m)) for m in g["metrics"]] if g["metrics"] else \
                kr.primary_metrics(name, [sample])
            for metric, direction in metrics:
                values = {}
                for tag in tags:
                    for d in doc["results"].get(tag, {}).get(g["name"], []):
                        values.setdefault(tag, []).extend(
                            b[metric] for b in d["benchmarks"] if b["name"] == name and metric in b)
                out.append((g["name"], name, metric, direction, values))
    return out


def timeline(tags, name, metric, direction, values, documented):
    """One row over the releases: every visit a point, the median a line, min..max a band."""
    present = [t for t in tags if values.get(t)]
    lo = [min(values[t]) for t in present]
    hi = [max(values[t]) for t in present]
    med = [statistics.median(values[t]) for t in present]
    xs = [t for t in present for _ in values[t]]
    ys = [v for t in present for v in values[t]]
    fig = go.Figure([
        go.Scatter(x=present, y=hi, mode="lines", line={"width": 0}, hoverinfo="skip", showlegend=False),
        go.Scatter(x=present, y=lo, mode="lines", line={"width": 0}, fill="tonexty", fillcolor="rgba(31,95,191,.18)",
                   name="min..max of the visits", hoverinfo="skip"),
        go.Scatter(x=present, y=med, mode="lines+markers", name="median", line={"color": "#1f5fbf"}),
        go.Scatter(x=xs, y=ys, mode="markers", name="one kbench process", marker={"size": 4, "color": "#555"}),
    ])
    for tag, (label, kind) in documented.items():
        if tag in present:
            fig.add_vline(x=tag, line_dash="dot", line_color=VERDICT_COLORS.get(kind, "#7b1fa2"))
            fig.add_annotation(x=tag, y=1, yref="paper", text=tag, hovertext=label, showarrow=False,
                               font={"size": 10}, yanchor="bottom")
    better = "higher is better" if direction > 0 else "lower is better"
    fig.update_layout(title={"text": "%s<br><sub>%s (%s)</sub>" % (short_name(name), metric, better),
                             "font": {"size": 13}},
                      height=330, margin={"l": 60, "r": 20, "t": 60, "b": 70}, hovermode="closest",
                      xaxis={"type": "category", "categoryorder": "array", "categoryarray": tags, "tickangle": -60},
                      legend={"orientation": "h", "y": -0.35, "font": {"size": 10}})
    return fig, len(present)


def provenance(doc):
    m = doc["machine"]
    rows = [("machine", "%s, %s cores, %s GiB" % (m["cpu_model"], m["cores"], m["memory_gib"])),
            ("kernel", m["kernel"]), ("distribution", m["distribution"]), ("compiler", m["compiler"]),
            ("cluster", "kbench-mock (one mock for every release) and Apache Kafka %s" % doc["broker"]),
            ("kbench commit", doc["kbench_commit"]), ("measured", "%s to %s" % (doc["first_visit"], doc["last_visit"])),
            ("visits", "%d kbench processes, %d rounds, row set %s" % (doc["visits"], doc["rounds"], doc["row_set"]))]
    return '<table class="provenance">%s</table>' % "".join(
        "<tr><td>%s</td><td>%s</td></tr>" % (k, html.escape(str(v))) for k, v in rows)


def strip(steps, prefix=""):
    return '<div class="strip">%s</div>' % "".join(
        '<a class="%s" href="%ssteps/%s" title="%s">%s</a>' % (
            css_class(s["verdict"]), prefix, step_file(s),
            html.escape("%s -> %s: %s" % (s["base"], s["new"], s["verdict"])),
            html.escape(s["new"])) for s in steps)


def aa_verdicts(doc):
    """[(what was measured twice, verdict)]: the A/A batch's pairs and librdkafka's own twin tags."""
    return [("%s, measured twice" % p["release"], p["verdict"]) for p in doc.get("aa", [])] + [
        ("%s and %s (one commit)" % (s["base"], s["new"]), s["verdict"]) for s in doc["steps"] if s.get("twin")]


def index(doc, rows):
    tags = [r["tag"] for r in doc["releases"]]
    options = "".join("<option>%s</option>" % t for t in tags)
    parts = ["<h1>librdkafka's performance, release by release</h1>",
             "<p>%d final releases from %s to %s, measured by kbench on one machine and one pinned cluster. "
             "Verdicts come from kbench's gate on each release step (a release against its branch parent, "
             "where both were measured).</p>" % (len(tags), tags[0], tags[-1]), provenance(doc),
             '<p>Data: <a href="data.json">data.json</a> · <a href="data.csv">data.csv</a></p>',
             "<h2>Every release step</h2>", strip(doc["steps"]),
             '<h2>Compare two releases</h2><form action="compare.html"><select name="a">%s</select> against '
             '<select name="b">%s</select> <button>compare</button></form>' % (options, options),
             "<h2>A/A checks</h2><p>One release measured twice under two names: any step is a false alarm "
             "of the gate.</p><table>%s</table>" % "".join(
                 '<tr><td>%s</td><td class="%s">%s</td></tr>' % (html.escape(n), css_class(w), w)
                 for n, w in aa_verdicts(doc)),
             "<h2>Documented changes</h2><ul>%s</ul>" % "".join(
                 "<li><b>%s</b>: %s</li>" % (t, html.escape(label)) for t, (label, _) in doc["documented"].items()),
             "<h2>Timelines</h2>"]
    for i, (_, name, metric, direction, values) in enumerate(rows):
        fig, n = timeline(tags, name, metric, direction, values, doc["documented"])
        parts.append(plot_pages.plot_div("plot-%d" % i, fig, ' data-releases="%d"' % n))
    return plot_pages.page("librdkafka release history", "\n".join(parts), css=CSS, plots=True)


def step_page(doc, step, release, repo_hint="~/src/librdkafka"):
    groups = {g["name"]: g for g in doc["groups"]}
    trs = []
    for name, v in step["groups"].items():
        for r in v["rows"]:
            trs.append('<tr><td>%s</td><td>%s</td><td class="%s">%s</td><td>%s</td><td>%s</td></tr>' % (
                html.escape(name), html.escape(short_name(r["name"])), css_class(r["verdict"]), r["verdict"],
                html.escape(r["metric"]), html.escape(verdict.change_text(r))))
        for r in v["unjudged"] + v["errored"]:
            trs.append("<tr><td>%s</td><td>%s</td><td>not judged</td><td colspan=2>%s</td></tr>" % (
                html.escape(name), html.escape(short_name(r["name"])),
                html.escape(r.get("reason") or r.get("message", ""))))
    reproduce = "\n".join(
        "scripts/bench-commits HEAD HEAD --librdkafka-a tree:%s@%s --librdkafka-b tree:%s@%s --filter '%s'%s -- %s" % (
            repo_hint, step["base"], repo_hint, step["new"], g["filter"],
            "" if g["cluster"] == "mock" else " --kafka-a %s --kafka-b %s" % (doc["broker"], doc["broker"]),
            " ".join("'%s'" % a for a in g["args"])) for g in groups.values())
    bisect = "\n".join(bisect_commands(doc, step, repo_hint)) or "(no row moved: nothing to bisect)"
    body = ("<p><a href=\"../index.html\">all releases</a></p><h1>%s → %s: %s</h1>"
            "<p>%s commits. <a href=\"../compare.html?a=%s&amp;b=%s\">every row side by side</a></p>%s"
            "<table><tr><th>group</th><th>row</th><th>verdict</th><th>metric</th><th>change [interval] p</th></tr>%s"
            "</table><h2>Reproduce this step</h2><pre>%s</pre><h2>Find the commit behind it</h2><pre>%s</pre>"
            "<h2>CHANGELOG of %s</h2><pre>%s</pre>") % (
        step["base"], step["new"], step["verdict"], step["commits"] if step["commits"] is not None else "?",
        step["base"], step["new"], reference_note(doc, step), "".join(trs), html.escape(reproduce),
        html.escape(bisect), step["new"],
        html.escape(release.get("changelog") or "(no section for this release in its CHANGELOG.md)"))
    return plot_pages.page("%s..%s" % (step["base"], step["new"]), body, css=CSS, depth=1)


TLS_CLIENT = ' --client-config="$(scripts/kafka client-config)"'


def bisect_commands(doc, step, repo_hint):
    """For each row that moved, the scripts/bisect command that finds its commit (a broker's group
    on a Kafka started first, as the history ran it)."""
    groups = {g["name"]: g for g in doc["groups"]}
    out = []
    for name, v in step["groups"].items():
        g = groups[name]
        cluster = "" if g["cluster"] == "mock" else "KBENCH_BOOTSTRAP=$(scripts/kafka start --version %s%s) " % (
            doc["broker"], "" if g["cluster"] == "plaintext" else " --security " + g["cluster"])
        for r in v["rows"]:
            if r["verdict"] in ("regression", "improvement"):
                out.append("%sscripts/bisect %s %s --librdkafka-tree %s%s --filter '^%s$' -- %s" % (
                    cluster, step["base"], step["new"], repo_hint, " --improvement" if r["verdict"] == "improvement"
                    else "", re.escape(r["name"]), " ".join("'%s'" % a for a in g["args"]))
                    + ("" if g["cluster"] in ("mock", "plaintext") else TLS_CLIENT))
    return out


def reference_meaning(word):
    """What the reference release's verdict against its history visits says of the machine."""
    return {"unchanged": "the machine measures as it did",
            "not judged": "the gate could not judge it, so whether the machine still measures as it did is "
                          "unknown"}.get(word, "the machine measures differently now: run the history again")


def reference_note(doc, step):
    """The documented change this step should show, if any; for a step measured later (an added
    release), what its run of the reference release said."""
    d = step.get("documented")
    note = "" if not d else "<p>Documented: %s. Expected: %s; %s.</p>" % (
        html.escape(d["label"]), d["expected"], "found" if d["found"] else "<b>not found</b> at this step")
    if "reference" not in step:
        return note
    return note + ("<p>Measured after the history, beside its parent and the reference release %s, which came out "
            "<b>%s</b> against its history visits: %s.</p>" % (
                doc["reference"], step["reference"], html.escape(reference_meaning(step["reference"]))))


COMPARE_JS = """<script>
var D=JSON.parse(document.getElementById('medians').textContent),q=new URLSearchParams(location.search);
var a=q.get('a'),b=q.get('b'),out=document.getElementById('out');
function med(v){v=v.slice().sort(function(x,y){return x-y});var n=v.length;return n%2?v[(n-1)/2]:(v[n/2-1]+v[n/2])/2;}
if(!a||!b||D.tags.indexOf(a)<0||D.tags.indexOf(b)<0){out.textContent='Give two releases: compare.html?a=TAG&b=TAG';}
else{document.getElementById('title').textContent=a+' against '+b;var h='<tr><th>row</th><th>metric</th><th>'+a+
 '</th><th>'+b+'</th><th>change of the medians</th></tr>';
 D.rows.forEach(function(r){var x=r.values[a],y=r.values[b];if(!x||!y)return;var ma=med(x),mb=med(y);
  h+='<tr><td>'+r.name+'</td><td>'+r.metric+'</td><td>'+ma.toPrecision(4)+'</td><td>'+mb.toPrecision(4)+
  '</td><td>'+((mb/ma-1)*100).toFixed(1)+' %</td></tr>';});out.innerHTML=h;}
document.body.dataset.ready='1';
</script>"""


def compare_page(doc, rows):
    data = {"tags": [r["tag"] for r in doc["releases"]],
            "rows": [{"name": short_name(n), "metric": m, "values": v} for _, n, m, _, v in rows]}
    body = ('<p><a href="index.html">all releases</a></p><h1 id="title">compare</h1><p>Medians of the visits; '
            'the step pages carry the gate\'s verdict with its interval.</p><table id="out"></table>'
            '<script type="application/json" id="medians">%s</script>%s') % (
        plot_pages.script_json(json.dumps(data)), COMPARE_JS)
    return plot_pages.page("compare two releases", body, css=CSS)


def write_csv(doc, rows, path):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(("release", "group", "row", "metric", "value"))
        for group, name, metric, _, values in rows:
            for tag, vals in values.items():
                w.writerows((tag, group, name, metric, v) for v in vals)


def write(doc, out):
    """Writes the site of DOC into OUT; the number of pages."""
    plot_pages.write_plotly(out)
    os.makedirs(os.path.join(out, "steps"), exist_ok=True)
    rows = series(doc)
    releases = {r["tag"]: r for r in doc["releases"]}
    files = {"index.html": index(doc, rows), "compare.html": compare_page(doc, rows)}
    for s in doc["steps"]:
        files[os.path.join("steps", step_file(s))] = step_page(doc, s, releases[s["new"]])
    for name, content in files.items():
        with open(os.path.join(out, name), "w", encoding="utf-8") as f:
            f.write(content)
    with open(os.path.join(out, "data.json"), "w") as f:
        json.dump(doc, f, separators=(",", ":"))
    write_csv(doc, rows, os.path.join(out, "data.csv"))
    return len(files)
