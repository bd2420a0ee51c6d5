"""Static HTML pages with Plotly figures (the history dashboard, the release history's site):
plotly.min.js is written once beside the pages, so they open offline from files. Each figure
is a JSON block drawn by one script; when all are drawn, <body> says data-ready="1", each
plot's div its number of distinct x values (data-drawn) and the body the drawing time
(data-draw-ms): what the Chromium tests read."""

import html
import os

from plotly import io as pio
from plotly.offline import get_plotlyjs

CSS = """
body{font:14px system-ui,sans-serif;margin:0 2em 2em;color:#222;background:#fafafa;max-width:1400px}
h1{font-size:1.4em}h2{font-size:1.1em;margin-top:1.6em}a{color:#1f5fbf}
table{border-collapse:collapse;margin:.5em 0}td,th{padding:3px 8px;border-bottom:1px solid #ddd;text-align:left;
vertical-align:top}th{background:#eee}.plot{background:#fff;border:1px solid #ddd;margin:8px 0}
.regression{color:#c62828;font-weight:600}.improvement{color:#2e7d32;font-weight:600}
"""
MEDIAN = "#1f5fbf"
CHANGE_COLORS = {"regression": "#d00000", "improvement": "#2e7d32"}

# Each plot is drawn when it comes near the screen, so that a page of many opens at once.
DRAW = """<script>
var divs=document.querySelectorAll('div.plot'),left=divs.length,first=true;
function draw(d){var f=JSON.parse(document.getElementById(d.id+'-fig').textContent);
 return Plotly.newPlot(d,f.data,f.layout,{responsive:true}).then(function(gd){
  var xs={};gd.data.forEach(function(t){(t.x||[]).forEach(function(x){xs[x]=1});});
  d.dataset.drawn=Object.keys(xs).length;
  if(--left===0){document.body.dataset.plots=divs.length;document.body.dataset.readyMs=Math.round(performance.now());
   document.body.dataset.ready='1';}});}
var io=new IntersectionObserver(function(entries){var shown=entries.filter(function(e){return e.isIntersecting;});
 shown.forEach(function(e){io.unobserve(e.target);});
 var drawn=Promise.all(shown.map(function(e){return draw(e.target);}));
 if(first&&shown.length){first=false;drawn.then(function(){
  document.body.dataset.firstScreenMs=Math.round(performance.now());});}},{rootMargin:'300px'});
divs.forEach(function(d){io.observe(d);});
if(!left)document.body.dataset.ready='1';
</script>"""


def script_json(text):
    """TEXT safe inside a <script> element."""
    return text.replace("</", "<\\/")


# Plotly's default template weighs about 10 kB in every figure: a small one of our own.
TEMPLATE = {"layout": {"paper_bgcolor": "#fff", "plot_bgcolor": "#fff", "font": {"color": "#222"},
                       "xaxis": {"gridcolor": "#eee", "linecolor": "#ccc"},
                       "yaxis": {"gridcolor": "#eee", "linecolor": "#ccc", "zeroline": False}}}


def plot_div(div_id, fig, attrs=""):
    fig.layout.template = TEMPLATE  # replaces Plotly's (update_layout would merge into it)
    # Its height before it is drawn: plots below the screen stay below it until they are.
    return ('<div class="plot" id="%s" style="min-height:%dpx"%s></div><script type="application/json" id="%s-fig">'
            '%s</script>' % (div_id, fig.layout.height or 450, attrs, div_id, script_json(pio.to_json(fig))))


def page(title, body, css="", depth=0, plots=False):
    """A whole page; with PLOTS, plotly.min.js (DEPTH folders up) and the script that draws them."""
    script = '<script src="%splotly.min.js"></script>' % ("../" * depth) if plots else ""
    return ("<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>%s</title><style>%s%s</style>%s</head>"
            "<body>%s%s</body></html>\n" % (html.escape(title), CSS, css, script, body, DRAW if plots else ""))


def write_plotly(out_dir):
    with open(os.path.join(out_dir, "plotly.min.js"), "w", encoding="utf-8") as f:
        f.write(get_plotlyjs())
