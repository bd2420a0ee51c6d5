"""Static HTML pages with Plotly figures (the history dashboard, the release history's site):
Plotly's basic bundle (scatter, bar and pie: what the pages draw; a quarter of the full bundle's
size, which took a reader's browser most of a second to parse) is written once beside the
pages, so they open offline from files. Each figure
is a JSON block drawn by one script; when all are drawn, <body> says data-ready="1", each
plot's div its number of distinct x values (data-drawn) and the body the drawing time
(data-draw-ms): what the Chromium tests read."""

import html
import os
import pathlib
import shutil
import tarfile

from plotly import io as pio
from plotly.offline import get_plotlyjs_version

from kbench import build_stamp, cli

BUNDLE = "plotly-basic.min.js"

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
    """A whole page; with PLOTS, the Plotly bundle (DEPTH folders up) and the script that draws them."""
    script = '<script src="%s%s"></script>' % ("../" * depth, BUNDLE) if plots else ""
    return ("<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>%s</title><style>%s%s</style>%s</head>"
            "<body>%s%s</body></html>\n" % (html.escape(title), CSS, css, script, body, DRAW if plots else ""))


def bundle():
    """The basic bundle of the plotly.js that the pinned plotly (Python) was built with, from npm
    once into kbench's cache, when the first pages are written."""
    package = "plotly.js-basic-dist-min@" + get_plotlyjs_version()
    d = build_stamp.cache_dir("plotly/" + package)
    path = os.path.join(d, BUNDLE)
    if os.path.isfile(path):
        return path
    if not shutil.which("npm"):
        cli.die("npm not found: the pages' %s comes from npm (scripts/setup installs npm)" % package)
    os.makedirs(d, exist_ok=True)
    try:
        with tarfile.open(os.path.join(d, build_stamp.npm_tarball(d, package, d + "/npm.log"))) as t:
            pathlib.Path(path + ".new").write_bytes(t.extractfile("package/" + BUNDLE).read())
    except (build_stamp.BuildError, KeyError, tarfile.TarError) as e:
        cli.die("the pages need %s from %s: %s" % (BUNDLE, package, e), status=1)
    os.replace(path + ".new", path)
    return path


def write_plotly(out_dir):
    """The bundle into OUT_DIR, made if need be (nothing is made when the bundle cannot be had)."""
    path = bundle()
    os.makedirs(out_dir, exist_ok=True)
    shutil.copy(path, os.path.join(out_dir, BUNDLE))
