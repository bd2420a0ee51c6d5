"""The results history's dashboard (scripts/history report): a static HTML site, index.html
and a page per family, of each series' run medians over commits with its change points; the
pages carry their data as JSON and a little JavaScript for the hover and the filter.
"""

import html
import itertools
import json
import os
import re
from datetime import datetime, timezone

from kbench import results, text, verdict


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
body{font:14px system-ui,sans-serif;margin:0 2em 2em;color:#222;background:#fafafa}
h1{font-size:1.4em}h2{font-size:1.1em;margin-top:1.6em}
table{border-collapse:collapse;margin:.5em 0}td,th{padding:3px 8px;border-bottom:1px solid #ddd;
text-align:left;vertical-align:top}th{background:#eee}
.reg{color:#b00020;font-weight:600}.imp{color:#08780b;font-weight:600}
.chart{display:inline-block;margin:8px 12px 8px 0;background:#fff;border:1px solid #ddd;
padding:6px;width:640px;vertical-align:top}
.chart h3{font-size:12px;font-weight:500;margin:0 0 4px;word-break:break-all}
.chart svg{display:block}.band{fill:#9ec5f8;fill-opacity:.55;stroke:none}
.med{fill:none;stroke:#1f5fbf;stroke-width:1.6}.cp line{stroke-width:1.5;stroke-dasharray:4 3}
.cp.regression line{stroke:#d00}.cp.improvement line{stroke:#090}.cp text{font-size:10px}
.axis{font-size:10px;fill:#666}.grid{stroke:#eee}
#tip{position:fixed;pointer-events:none;background:#222;color:#fff;font-size:12px;padding:4px 7px;
border-radius:3px;display:none;white-space:pre;z-index:9}
#filter{font-size:14px;padding:4px;width:40em}.dot{fill:#1f5fbf}
"""

JS = """
(function(){
var tip=document.getElementById('tip');
var all=JSON.parse(document.getElementById('kbench-data').textContent);
var data=all.charts||[],commits=all.commits||[];
function fmt(v){var a=Math.abs(v);if(a>=1e9)return(v/1e9).toPrecision(4)+'G';
if(a>=1e6)return(v/1e6).toPrecision(4)+'M';if(a>=1e3)return(v/1e3).toPrecision(4)+'k';
return v.toPrecision(4);}
document.querySelectorAll('.chart svg').forEach(function(svg){
 var d=data[svg.dataset.i];var dot=svg.querySelector('.dot');
 svg.addEventListener('mousemove',function(e){
  var r=svg.getBoundingClientRect();var x=e.clientX-r.left;
  var i=Math.round((x-d.x0)/d.dx);if(i<0)i=0;if(i>=d.p.length)i=d.p.length-1;
  var p=d.p[i],c=commits[p[0]];dot.setAttribute('cx',d.x0+i*d.dx);dot.setAttribute('cy',p[4]);
  dot.style.display='';
  tip.textContent=c[0]+'  '+c[1]+'\\n'+d.m+': '+fmt(p[1])+' '+d.u+'  (min '+fmt(p[2])+
   ', max '+fmt(p[3])+'; '+p[5]+' process(es))\\n'+c[2];
  tip.style.left=(e.clientX+14)+'px';tip.style.top=(e.clientY+10)+'px';tip.style.display='block';});
 svg.addEventListener('mouseleave',function(){tip.style.display='none';dot.style.display='none';});
});
var f=document.getElementById('filter');
if(f)f.addEventListener('input',function(){var re;try{re=new RegExp(f.value,'i');}
 catch(err){return;}document.querySelectorAll('.chart').forEach(function(c){
 c.style.display=re.test(c.dataset.name)?'':'none';});});
document.body.dataset.ready='1';
// Milliseconds from navigation to the load event (after layout): the dashboard's test
// and its evidence read this from the DOM.
window.addEventListener('load',function(){setTimeout(function(){
 document.body.dataset.loadMs=Math.round(performance.now());},0);});
})();
"""

W, H, PAD_L, PAD_R, PAD_T, PAD_B = 628, 150, 52, 8, 18, 18


def _g(v):
    """A number for the hover data: 5 significant digits are plenty and keep pages small."""
    return float("%.5g" % v)


def chart_svg(i, runs, changes, commit_index):
    """(svg, hover data) of one series: its runs' band, median line and change points."""
    n = len(runs)
    lo = min(r["lo"] for r in runs)
    hi = max(r["hi"] for r in runs)
    if hi == lo:
        hi, lo = hi * 1.01 + 1e-12, lo * 0.99 - 1e-12
    span = hi - lo
    lo, hi = lo - 0.05 * span, hi + 0.05 * span
    plot_w = W - PAD_L - PAD_R
    dx = plot_w / max(n - 1, 1)

    def x(k):
        return PAD_L + k * dx

    def y(v):
        return PAD_T + (H - PAD_T - PAD_B) * (hi - v) / (hi - lo)
    top = " ".join("%.0f,%.0f" % (x(k), y(r["hi"])) for k, r in enumerate(runs))
    bottom = " ".join("%.0f,%.0f" % (x(k), y(r["lo"])) for k, r in reversed(list(enumerate(runs))))
    med = " ".join("%.1f,%.1f" % (x(k), y(r["median"])) for k, r in enumerate(runs))
    parts = ['<svg width="%d" height="%d" data-i="%d" role="img">' % (W, H, i)]
    for v in (lo + 0.05 * (hi - lo) / 1.1, (lo + hi) / 2, hi - 0.05 * (hi - lo) / 1.1):
        parts.append('<line class="grid" x1="%d" x2="%d" y1="%.1f" y2="%.1f"/>'
                     '<text class="axis" x="2" y="%.1f">%s</text>'
                     % (PAD_L, W - PAD_R, y(v), y(v), y(v) + 3, text.number(v)))
    if n > 1:
        parts.append('<polygon class="band" points="%s %s"/>' % (top, bottom))
        parts.append('<polyline class="med" points="%s"/>' % med)
    else:
        parts.append('<circle cx="%.1f" cy="%.1f" r="3" fill="#1f5fbf"/>' % (x(0), y(runs[0]["median"])))
    for ch in changes:
        cx = x(ch["index"] - 0.5) if n > 1 else x(0)
        parts.append('<g class="cp %s" data-commit="%s"><line x1="%.1f" x2="%.1f" y1="%d" '
                     'y2="%d"/><text x="%.1f" y="11">%s %s</text><title>%s..%s %s</title></g>'
                     % (ch["verdict"], ch["after_commit"], cx, cx, PAD_T, H - PAD_B,
                        min(cx + 3, W - 140), short(ch["after_commit"])[:8],
                        text.percent(ch["change_pct"]), short(ch["before_commit"]),
                        short(ch["after_commit"]), html.escape(change_text(ch))))
    parts.append('<text class="axis" x="%d" y="%d">%s</text>' % (PAD_L, H - 4, html.escape(short(runs[0]["commit"]))))
    parts.append('<text class="axis" x="%d" y="%d" text-anchor="end">%s</text>' % (
        W - PAD_R, H - 4, html.escape(short(runs[-1]["commit"]))))
    parts.append('<circle class="dot" r="4" cx="0" cy="0" style="display:none"/></svg>')
    hover = []
    for r in runs:
        if r["commit"] not in commit_index:
            commit_index[r["commit"]] = (len(commit_index), [
                short(r["commit"]), day(r["time"], "%Y-%m-%d %H:%M"), (r["subject"] or "")[:70]])
        hover.append([commit_index[r["commit"]][0], _g(r["median"]), _g(r["lo"]), _g(r["hi"]),
                      round(y(r["median"])), len(r["processes"])])
    return "".join(parts), hover


def primary_metric(name, metrics):
    """The metric a benchmark's chart shows: its first primary metric, else the first one."""
    first = results.primary_metrics(name)[0][0]
    return first if first in metrics else sorted(metrics)[0]


def _write_page(path, title, body, data=None):
    with open(path, "w", encoding="utf-8") as f:
        f.write("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>%s</title>"
                "<style>%s</style></head><body>%s<div id=\"tip\"></div>"
                "<script type=\"application/json\" id=\"kbench-data\">%s</script><script>%s</script></body></html>"
                % (html.escape(title), CSS, body,
                   json.dumps(data or {}, separators=(",", ":")).replace("</", "<\\/"), JS))


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
    for family in sorted(fams):
        data = []
        commit_index = {}
        body = ['<p><a href="index.html">&larr; all families</a></p><h1>%s</h1>'
                '<p><input id="filter" placeholder="filter benchmarks (regular expression)">'
                '</p><p>Each chart: one benchmark over commits (oldest left), the median of '
                'each run (line) and the spread of its processes (band); dashed lines mark '
                'change points (red regression, green improvement). Hover for the numbers.</p>' % html.escape(family)]
        for sid, charts in itertools.groupby(sorted(fams[family].items()), key=lambda kv: kv[0][0]):
            body.append("<h2>%s</h2>" % html.escape(labels.get(sid, str(sid))))
            for (_, name), metrics in charts:
                metric = primary_metric(name, metrics)
                key = (sid, name, metric)
                runs = series[key]["runs"]
                # Change points of every metric of the benchmark go on its chart.
                chs = [dict(c, metric=m) for m in metrics for c in by_key.get((sid, name, m), [])]
                svg, hover = chart_svg(len(data), runs, chs, commit_index)
                data.append({"p": hover, "x0": PAD_L, "dx": (W - PAD_L - PAD_R) / max(
                    len(runs) - 1, 1), "m": metric, "u": verdict.unit(metric)})
                notes = "".join(
                    '<div class="%s">%s %s..%s %s</div>' % (
                        "reg" if c["verdict"] == "regression" else "imp",
                        html.escape(c["metric"]), short(c["before_commit"]),
                        short(c["after_commit"]), html.escape(change_text(c))) for c in chs)
                body.append('<div class="chart" data-name="%s"><h3>%s <small>(%s, %d runs)'
                            '</small></h3>%s%s</div>' % (
                                html.escape(name, quote=True), html.escape(name),
                                html.escape(metric), len(runs), svg, notes))
        path = os.path.join(out_dir, family_slug(family))
        _write_page(path, "kbench: " + family, "".join(body), {
            "charts": data, "commits": [c for _, c in sorted(commit_index.values())]})
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
                    "reg" if m["verdict"] == "regression" else "imp",
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
