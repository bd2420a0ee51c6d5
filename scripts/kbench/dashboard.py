"""The results history's dashboard (scripts/history report): a static HTML site, index.html
and a page per family, of each series' run medians over commits with its change points,
drawn by Plotly (kbench.plot_pages: hover and zoom, offline from files).
"""

import html
import itertools
import os
import re
from datetime import datetime, timezone

from plotly import graph_objects as go

from kbench import plot_pages, results, text, verdict


def change_text(m):
    """A change point's step: "+3.10% [+1.2%, +5.0%] p=0.0012"."""
    s = verdict.change_text(m)
    if m["p_value"] is not None:
        s += " p=%s" % verdict.p_text(m["p_value"])
    return s


def short(sha):
    return sha[:12]


def day(t, fmt="%Y-%m-%d"):
    return datetime.fromtimestamp(t, timezone.utc).strftime(fmt)


CSS = """
.chart h3{font-size:12px;font-weight:500;margin:0 0 4px;word-break:break-all}
#filter{font-size:14px;padding:4px;width:40em}
"""

# Filters the charts by a regular expression on their benchmark's name.
FILTER_JS = """<script>
var f=document.getElementById('filter');
if(f)f.addEventListener('input',function(){var re;try{re=new RegExp(f.value,'i');}catch(err){return;}
 document.querySelectorAll('.chart').forEach(function(c){c.style.display=re.test(c.dataset.name)?'':'none';});});
</script>"""


def chart(runs, changes, metric):
    """One series over commits (oldest left): its runs' band (min..max of the processes), the
    median line, and a dashed line at each change point (red regression, green improvement)."""
    xs = list(range(len(runs)))
    hover = [[short(r["commit"]), day(r["time"], "%Y-%m-%d %H:%M"), (r["subject"] or "")[:70], len(r["processes"]),
              r["lo"], r["hi"]] for r in runs]
    unit = verdict.unit(metric)
    fig = go.Figure([
        go.Scatter(x=xs, y=[r["hi"] for r in runs], mode="lines", line={"width": 0}, hoverinfo="skip"),
        go.Scatter(x=xs, y=[r["lo"] for r in runs], mode="lines", line={"width": 0}, fill="tonexty",
                   fillcolor="rgba(31,95,191,.3)", hoverinfo="skip"),
        go.Scatter(x=xs, y=[r["median"] for r in runs], mode="lines+markers", line={"color": plot_pages.MEDIAN},
                   marker={"size": 4}, customdata=hover,
                   hovertemplate="%%{customdata[0]}  %%{customdata[1]}<br>%s: %%{y:.4s} %s (min %%{customdata[4]:.4s}, "
                   "max %%{customdata[5]:.4s}; %%{customdata[3]} process(es))<br>%%{customdata[2]}<extra></extra>"
                   % (metric, unit))])
    for ch in changes:
        x = ch["index"] - 0.5 if len(runs) > 1 else 0
        fig.add_vline(x=x, line_dash="dash", line_width=2, line_color=plot_pages.CHANGE_COLORS[ch["verdict"]])
        fig.add_annotation(x=x, y=1, yref="paper", showarrow=False, font={"size": 10}, xanchor="left",
                           text="%s %s" % (short(ch["after_commit"])[:8], text.percent(ch["change_pct"])),
                           hovertext="%s..%s %s" % (short(ch["before_commit"]), short(ch["after_commit"]),
                                                    change_text(ch)))
    fig.update_layout(height=190, width=640, showlegend=False, margin={"l": 55, "r": 10, "t": 18, "b": 30},
                      hovermode="closest", xaxis={"tickmode": "array", "tickvals": [0, len(runs) - 1],
                                                  "ticktext": [short(runs[0]["commit"]), short(runs[-1]["commit"])]})
    return fig


def primary_metric(name, metrics):
    """The metric a benchmark's chart shows: its first primary metric, else the first one."""
    first = results.primary_metrics(name)[0][0]
    return first if first in metrics else sorted(metrics)[0]


def _write_page(path, title, body, plots=False):
    with open(path, "w", encoding="utf-8") as f:
        f.write(plot_pages.page(title, body + FILTER_JS, css=CSS, plots=plots))


def family_slug(family):
    return "family-" + re.sub(r"[^A-Za-z0-9_-]", "_", family) + ".html"


def write_report(out_dir, series, changes, groups, labels, totals):
    """index.html and a page per family in OUT_DIR; [(family, benchmarks, page path)]."""
    os.makedirs(out_dir, exist_ok=True)
    by_key = {}
    for key, ch in changes:
        by_key.setdefault(key, []).append(ch)
    fams = {}
    for (sid, name, metric) in series:
        fams.setdefault(name.split("/")[0], {}).setdefault((sid, name), []).append(metric)
    pages = []
    plot_pages.write_plotly(out_dir)
    for family in sorted(fams):
        body = ['<p><a href="index.html">&larr; all families</a></p><h1>%s</h1>'
                '<p><input id="filter" placeholder="filter benchmarks (regular expression)">'
                '</p><p>Each chart: one benchmark over commits (oldest left), the median of '
                'each run (line) and the spread of its processes (band); dashed lines mark '
                'change points (red regression, green improvement). Hover for the numbers.</p>' % html.escape(family)]
        for sid, charts in itertools.groupby(sorted(fams[family].items()), key=lambda kv: kv[0][0]):
            body.append("<h2>%s</h2>" % html.escape(labels.get(sid, str(sid))))
            for (_, name), metrics in charts:
                metric = primary_metric(name, metrics)
                runs = series[(sid, name, metric)]["runs"]
                # Change points of every metric of the benchmark go on its chart.
                chs = [dict(c, metric=m) for m in metrics for c in by_key.get((sid, name, m), [])]
                notes = "".join(
                    '<div class="cp %s" data-commit="%s">%s %s..%s %s</div>' % (
                        c["verdict"], c["after_commit"], html.escape(c["metric"]), short(c["before_commit"]),
                        short(c["after_commit"]), html.escape(change_text(c))) for c in chs)
                body.append('<div class="chart" data-name="%s"><h3>%s <small>(%s, %d runs)</small></h3>%s%s</div>' % (
                    html.escape(name, quote=True), html.escape(name), html.escape(metric), len(runs),
                    plot_pages.plot_div("c%d" % len(body), chart(runs, chs, metric)), notes))
        path = os.path.join(out_dir, family_slug(family))
        _write_page(path, "kbench: " + family, "".join(body), plots=True)
        pages.append((family, sum(1 for _ in fams[family]), path))
    runs_n, commits_n = totals
    body = ["<h1>kbench history</h1><p>%d runs of %d commits, %d series of points. "
            "Generated %s.</p><h2>Families</h2><ul>" % (
                runs_n, commits_n, len(series), datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))]
    for family, n, path in pages:
        body.append('<li><a href="%s">%s</a> (%d benchmarks)</li>' % (os.path.basename(path), html.escape(family), n))
    body.append("</ul><h2>Latest regressions and improvements</h2>")
    if not groups:
        body.append("<p>No change points.</p>")
    else:
        body.append("<table><tr><th>commits</th><th>series</th><th>benchmarks that moved "
                    "(metric, change [interval], p)</th></tr>")
        for g in groups[:100]:
            rows = "".join(
                '<div class="%s">%s %s: %s%s</div>' % (
                    m["verdict"],
                    '<a href="%s">%s</a>' % (family_slug(m["benchmark"].split("/")[0]), html.escape(m["benchmark"])),
                    html.escape(m["metric"]), html.escape(change_text(m)),
                    " (newest commit)" if m["how"] == "newest" else "") for m in g["members"])
            body.append('<tr><td data-commit="%s">%s..%s<br>%s<br><small>%s</small></td>'
                        '<td>%s</td><td>%s</td></tr>' % (
                            g["after_commit"], short(g["before_commit"]), short(g["after_commit"]), day(g["time"]),
                            html.escape((g["subject"] or "")[:80]), html.escape(labels.get(g["series"], "")), rows))
        body.append("</table>")
    _write_page(os.path.join(out_dir, "index.html"), "kbench history", "".join(body))
    return pages
