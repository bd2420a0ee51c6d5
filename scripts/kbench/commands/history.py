"""kbench's results history: a database of runs, change points over commits, a static
dashboard. Run through scripts/history (see its --help).

Database: SQLite (Python's sqlite3), not DuckDB: it is in the standard library (no 30 MB
wheel; Debian's Python opens it too), its transactions make an add all-or-nothing even
when the process dies half-way, and the reads are per series, by index, not column scans.
Tables (schema version in PRAGMA user_version): series (one per comparable context:
SERIES_KEYS; runs of different series are never mixed), runs (one per JSON file added,
keyed by its content digest), benchmarks, metrics, samples (every repetition of every
benchmark and counter, per kbench process), errors (repetitions that failed), extras
(interval samples and rate curves as JSON) and points: per run, benchmark and judged
metric, the median over the run's processes of each process's median (scripts/compare's
sample unit), their min, max and values, computed at add time.

Change points: MongoDB's E-Divisive (signal-processing-algorithms, Daly et al., ICPE 2020)
over each series of run medians; each candidate is then judged by scripts/compare's own
test (kbench.compare.compare_metric) on up to WINDOW runs either side, and kept only as a
regression or improvement. The newest commit gets its own check (E-Divisive cannot split
off a last, single point): its run against a t prediction interval from the runs since the
last change point, corrected over all series by Benjamini-Hochberg.
"""

import hashlib
import html
import itertools
import json
import math
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone

import kbench
from kbench import compare as kc
from kbench import results as kr
from kbench.commands.plot import fmt_rate

SCHEMA_VERSION = 1
# Context keys whose values make runs comparable; a run's series is these values.
SERIES_KEYS = ["host_name", "cpu_model", "num_cpus", "target", "build_type",
               "librdkafka_version", "broker_version"]
# Context keys a kbench run always carries: a Google Benchmark JSON without them was not
# written by kbench (a foreign file) and has no commit or target to be keyed by.
REQUIRED_CONTEXT = ["kbench_version", "git_sha", "target", "build_type"]
WINDOW = 30          # runs either side of a change point that its step is judged on
MIN_POINTS = 6       # runs a series needs before change points are looked for
SEED = 20261201      # E-Divisive's permutation test draws from numpy's global generator

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS series (
  id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, label TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
  id INTEGER PRIMARY KEY, digest TEXT NOT NULL UNIQUE, series_id INTEGER NOT NULL
    REFERENCES series(id), commit_sha TEXT NOT NULL, commit_time INTEGER NOT NULL,
  commit_time_source TEXT NOT NULL, commit_subject TEXT, dirty INTEGER NOT NULL,
  run_date TEXT, added_at TEXT NOT NULL, source TEXT, processes INTEGER NOT NULL,
  context TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS runs_series ON runs(series_id, commit_time);
CREATE TABLE IF NOT EXISTS benchmarks (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,
  family TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS metrics (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS samples (
  run_id INTEGER NOT NULL REFERENCES runs(id), benchmark_id INTEGER NOT NULL,
  process INTEGER NOT NULL, repetition INTEGER NOT NULL, metric_id INTEGER NOT NULL,
  value REAL NOT NULL,
  PRIMARY KEY (run_id, benchmark_id, process, repetition, metric_id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS errors (
  run_id INTEGER NOT NULL REFERENCES runs(id), benchmark_id INTEGER NOT NULL,
  process INTEGER NOT NULL, message TEXT);
CREATE TABLE IF NOT EXISTS extras (
  run_id INTEGER NOT NULL REFERENCES runs(id), benchmark_id INTEGER NOT NULL,
  kind TEXT NOT NULL, process INTEGER, repetition INTEGER, data TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS points (
  run_id INTEGER NOT NULL REFERENCES runs(id), benchmark_id INTEGER NOT NULL,
  metric_id INTEGER NOT NULL, direction INTEGER NOT NULL, median REAL NOT NULL,
  lo REAL NOT NULL, hi REAL NOT NULL, process_values TEXT NOT NULL,
  PRIMARY KEY (benchmark_id, metric_id, run_id)) WITHOUT ROWID;
"""


class HistoryError(Exception):
    """Bad input or an unusable database; the message is user-facing (exit 2)."""


# ---------------------------------------------------------------- database

def connect(path, create=True):
    if not create and not os.path.isfile(path):
        raise HistoryError("no history at %s (scripts/history add RUN... makes it)" % path)
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    try:
        db = sqlite3.connect(path, isolation_level=None, timeout=60)
        db.execute("PRAGMA foreign_keys = ON")
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version == 0:
            db.executescript("BEGIN IMMEDIATE;" + SCHEMA
                             + "PRAGMA user_version = %d; COMMIT;" % SCHEMA_VERSION)
        elif version != SCHEMA_VERSION:
            raise HistoryError("%s has schema version %d; this kbench reads %d"
                               % (path, version, SCHEMA_VERSION))
    except sqlite3.DatabaseError as e:
        raise HistoryError("%s is not a usable SQLite database: %s" % (path, e)) from e
    return db


def _id(db, cache, table, name):
    """The id of a benchmark or metric name, made on first use (a benchmark with its family)."""
    if name not in cache:
        row = db.execute("SELECT id FROM %s WHERE name = ?" % table, (name,)).fetchone()
        if table == "benchmarks":
            insert = ("INSERT INTO benchmarks (name, family) VALUES (?, ?)", (name, name.split("/")[0]))
        else:
            insert = ("INSERT INTO metrics (name) VALUES (?)", (name,))
        cache[name] = row[0] if row else db.execute(*insert).lastrowid
    return cache[name]


# ---------------------------------------------------------------- add

def resolve_run(path):
    """A scripts/bench result folder stands for its kbench.json."""
    if os.path.isdir(path):
        f = os.path.join(path, "kbench.json")
        if not os.path.isfile(f):
            raise HistoryError("%s is a folder without kbench.json (not a scripts/bench "
                               "result folder)" % path)
        return f
    return path


def check_run(path):
    """Loads and checks one run; (data, digest) or HistoryError. Nothing is written."""
    try:
        data = kr.load(path)
    except kr.BenchmarkJsonError as e:
        raise HistoryError(str(e)) from e
    ctx = data.get("context", {})
    missing = [k for k in REQUIRED_CONTEXT if not ctx.get(k)]
    if missing:
        raise HistoryError("%s is not a kbench run: its context lacks %s (Google Benchmark "
                           "JSON from another program?)" % (path, ", ".join(missing)))
    if not re.fullmatch(r"[0-9a-f]{7,40}|unknown", str(ctx["git_sha"])):
        raise HistoryError("%s: context git_sha %r is not a commit" % (path, ctx["git_sha"]))
    for i, b in enumerate(data["benchmarks"]):
        if not kr.is_iteration(b):
            continue
        for key in ("real_time", "cpu_time"):
            if key in b and not isinstance(b[key], (int, float)):
                raise HistoryError("%s: benchmarks[%d] (%s) has a non-numeric %s"
                                   % (path, i, b["name"], key))
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return data, hashlib.sha256(canonical.encode()).hexdigest()


def series_of(ctx):
    values = {k: ctx.get(k, "") for k in SERIES_KEYS}
    key = json.dumps(values, sort_keys=True)
    label = "%s (%s, %s CPUs) %s %s librdkafka %s%s" % (
        values["host_name"] or "?", values["cpu_model"] or "?", values["num_cpus"] or "?",
        values["target"], values["build_type"], values["librdkafka_version"] or "?",
        (" broker " + str(values["broker_version"])) if values["broker_version"] else "")
    return key, label


def commit_info(repo, sha, ctx, commit_time=None):
    """(commit time as Unix seconds, its source, subject)."""
    if commit_time is not None:
        return commit_time, "option", None
    out = _git_show(repo, "%ct%n%s", sha) if sha != "unknown" else None
    if out:
        t, _, subject = out.partition("\n")
        if t.isdigit():
            return int(t), "git", subject.strip()
    date = ctx.get("date")
    if date:
        try:
            return int(datetime.fromisoformat(date).timestamp()), "run date", None
        except ValueError:
            pass
    return int(time.time()), "added", None


def _git_show(repo, fmt, rev):
    """git show -s --format=FMT REV in repo: its output, None when git cannot say."""
    if not repo:
        return None
    try:
        out = subprocess.run(["git", "-C", repo, "show", "-s", "--format=" + fmt, rev],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else None


def parse_time(text):
    """Unix seconds from an integer or an ISO date/time (UTC when no zone is given)."""
    if re.fullmatch(r"\d+", text):
        return int(text)
    try:
        t = datetime.fromisoformat(text)
    except ValueError:
        raise HistoryError("%r is neither Unix seconds nor an ISO date" % text) from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=timezone.utc)
    return int(t.timestamp())


def add_runs(db, checked, repo=None, commit_time=None, log=print):
    """Adds checked runs ([(path, data, digest)]) in one transaction: every file was checked before
    anything is written, so a bad file leaves the database untouched. Returns (added,
    already present)."""
    crash_after = int(os.environ.get("KBENCH_HISTORY_TEST_CRASH", "0") or 0)  # tests only
    added = present = 0
    db.execute("BEGIN IMMEDIATE")
    try:
        bcache, mcache = {}, {}
        for p, data, digest in checked:
            if db.execute("SELECT 1 FROM runs WHERE digest = ?", (digest,)).fetchone():
                log("history: %s is already in the history" % p)
                present += 1
                continue
            _add_one(db, p, data, digest, repo, commit_time, bcache, mcache)
            added += 1
            if crash_after and added >= crash_after:
                os._exit(99)  # simulates a crash mid-add: the transaction is never committed
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return added, present


def _add_one(db, path, data, digest, repo, commit_time, bcache, mcache):
    ctx = data["context"]
    key, label = series_of(ctx)
    row = db.execute("SELECT id FROM series WHERE key = ?", (key,)).fetchone()
    series_id = row[0] if row else db.execute(
        "INSERT INTO series (key, label) VALUES (?, ?)", (key, label)).lastrowid
    sha = str(ctx["git_sha"])
    ctime, source, subject = commit_info(repo, sha, ctx, commit_time)
    procs = kr.processes(data)
    run_id = db.execute(
        "INSERT INTO runs (digest, series_id, commit_sha, commit_time, commit_time_source, "
        "commit_subject, dirty, run_date, added_at, source, processes, context) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (digest, series_id, sha, ctime, source, subject,
         1 if str(ctx.get("git_dirty", "false")).lower() == "true" else 0,
         ctx.get("date"), datetime.now(timezone.utc).isoformat(timespec="seconds"),
         os.path.abspath(path), len(procs), json.dumps(ctx, sort_keys=True))).lastrowid
    samples = []
    errors = []
    per_bench = {}  # name -> [per process: [metrics of each repetition]]
    for pidx, (_, entries) in enumerate(procs):
        reps = {}
        for b in entries:
            if not kr.is_iteration(b):
                continue
            name = b["name"]
            bid = _id(db, bcache, "benchmarks", name)
            if b.get("error_occurred"):
                errors.append((run_id, bid, pidx, str(b.get("error_message", "error"))))
                continue
            r = reps.setdefault(name, [])
            metrics = kr.entry_metrics(b)
            for m, v in metrics.items():
                samples.append((run_id, bid, pidx, len(r), _id(db, mcache, "metrics", m), v))
            r.append(metrics)
        for name, runs in reps.items():
            per_bench.setdefault(name, []).append(runs)
    db.executemany("INSERT INTO samples VALUES (?, ?, ?, ?, ?, ?)", samples)
    db.executemany("INSERT INTO errors VALUES (?, ?, ?, ?)", errors)
    ids = [pid for pid, _ in procs]
    extras = []
    for kind, top in (("intervals", kr.INTERVALS_KEY), ("rate_curve", kr.RATE_CURVES_KEY)):
        for name, reps in (data.get(top) or {}).items():
            bid = _id(db, bcache, "benchmarks", name)
            for rep in reps:
                pid = rep.get(kr.PROCESS_KEY, ids[0] if ids else 0)
                extras.append((run_id, bid, kind, ids.index(pid) if pid in ids else 0,
                               rep.get("repetition_index"), json.dumps(rep)))
    db.executemany("INSERT INTO extras VALUES (?, ?, ?, ?, ?, ?)", extras)
    points = []
    for name, proc_runs in per_bench.items():
        bid = bcache[name]
        all_runs = [r for runs in proc_runs for r in runs]
        for metric, direction in kc.judged_metrics(name, all_runs):
            per_proc = [statistics.median(v) for v in
                        ([r[metric] for r in runs if metric in r] for runs in proc_runs) if v]
            if not per_proc:
                continue
            # One process: its repetitions are the only spread there is.
            spread = per_proc if len(per_proc) > 1 else [r[metric] for r in all_runs
                                                          if metric in r]
            points.append((run_id, bid, _id(db, mcache, "metrics", metric), direction,
                           statistics.median(per_proc), min(spread), max(spread),
                           json.dumps(per_proc)))
    db.executemany("INSERT INTO points VALUES (?, ?, ?, ?, ?, ?, ?, ?)", points)


# ---------------------------------------------------------------- series

def load_series(db, name_filter=None, since=None, metrics=None, include_dirty=False):
    """{(series_id, benchmark, metric): {"direction", "runs": [point...]}}, each list in
    commit order (commit time, then the order runs were added)."""
    where = ["1 = 1"] if include_dirty else ["r.dirty = 0"]
    args = []
    if since is not None:
        where.append("r.commit_time >= ?")
        args.append(since)
    q = ("SELECT r.series_id, b.name, m.name, p.direction, r.id, r.commit_sha, "
         "r.commit_time, r.commit_subject, p.median, p.lo, p.hi, p.process_values "
         "FROM points p JOIN runs r ON r.id = p.run_id JOIN benchmarks b ON b.id = "
         "p.benchmark_id JOIN metrics m ON m.id = p.metric_id WHERE " + " AND ".join(where)
         + " ORDER BY r.series_id, b.name, m.name, r.commit_time, r.id")
    out = {}
    for (sid, name, metric, direction, run_id, sha, ctime, subject, med, lo, hi,
         pv) in db.execute(q, args):
        if name_filter is not None and not name_filter.search(name):
            continue
        if metrics is not None and metric not in metrics:
            continue
        s = out.setdefault((sid, name, metric), {"direction": direction, "runs": []})
        s["runs"].append({"run": run_id, "commit": sha, "time": ctime, "subject": subject,
                          "median": med, "lo": lo, "hi": hi, "processes": json.loads(pv)})
    return out


def resolve_since(db, text, repo):
    """--since: a date/time, Unix seconds, or a commit (its commit time)."""
    if text is None:
        return None
    try:
        return parse_time(text)
    except HistoryError:
        pass
    row = db.execute("SELECT MIN(commit_time) FROM runs WHERE commit_sha LIKE ?",
                     (text + "%",)).fetchone()
    if row and row[0] is not None:
        return row[0]
    out = _git_show(repo, "%ct", text)
    if out and out.isdigit():
        return int(out)
    raise HistoryError("--since %r is neither a date nor a commit in the history" % text)


# ---------------------------------------------------------------- change points

def e_divisive(values, pvalue, permutations):
    import numpy as np
    from signal_processing_algorithms.energy_statistics import energy_statistics as es
    np.random.seed(SEED)
    return sorted(es.e_divisive(np.asarray(values, dtype=float), pvalue=pvalue,
                                permutations=permutations))


def find_changes(name, metric, direction, runs, alpha=0.01, threshold=2.0, cp_pvalue=0.01,
                 permutations=100):
    """Change points of one series. Each change: its index (first run after the step), the
    commits around it, compare's row (shift %, interval, p, verdict)."""
    # Runs of one commit are one position: a step happens between commits.
    firsts = [i for i, r in enumerate(runs) if i == 0 or runs[i - 1]["commit"] != r["commit"]]
    changes = []
    values = [r["median"] for r in runs]
    if len(runs) >= MIN_POINTS and len(set(values)) > 1:
        cps = [c for c in e_divisive(values, cp_pvalue, permutations) if 0 < c < len(runs)]
        bounds = [0] + cps + [len(runs)]
        for j, cp in enumerate(cps):
            before = values[max(bounds[j], cp - WINDOW):cp]
            after = values[cp:min(bounds[j + 2], cp + WINDOW)]
            # A step inside one commit's runs is not a change between commits.
            if runs[cp]["commit"] == runs[cp - 1]["commit"]:
                continue
            row = kc.compare_metric(name, metric, before, after, alpha, threshold, "run",
                                    direction=direction)
            if row["verdict"] in ("regression", "improvement"):
                changes.append(_change(runs, cp, row, "e-divisive"))
    # The newest commit: its run median(s) against the runs since the last step.
    last = firsts[-1] if firsts else 0
    if len(firsts) >= 2 and not any(c["index"] == last for c in changes):
        start = max([c["index"] for c in changes] + [0])
        before = values[max(start, last - WINDOW):last]
        row = newest_check(name, metric, direction, before, values[last:], alpha)
        if row:
            # A candidate: all_changes keeps it if it passes over all series together.
            changes.append(_change(runs, last, row, "newest"))
    return changes


def newest_check(name, metric, direction, before, new, alpha):
    """How far is the newest commit's run (median of its runs) outside what the runs before
    it predict? A rank test cannot tell one run from 30 at alpha 0.01, and the processes of
    one run share its drift, so they are not independent samples; instead (as conbench's
    lookback z-score) a t prediction interval for one new run from the runs since the last
    step. Returns the row with its p (None without enough runs); all_changes decides."""
    from scipy import stats
    if len(before) < 3 or not new:
        return None
    x = statistics.median(new)
    mean = statistics.fmean(before)
    sd = statistics.stdev(before)
    ref = statistics.median(before)
    if not ref:
        return None
    change = (x / ref - 1.0) * 100.0
    if metric in kr.DETERMINISTIC_METRICS or sd == 0:
        p = 0.0 if x != mean else 1.0
        half = 0.0
    else:
        k = math.sqrt(1.0 + 1.0 / len(before))  # the spread of one new run around the mean
        p = float(2.0 * stats.t.sf(abs((x - mean) / (sd * k)), len(before) - 1))
        half = float(stats.t.ppf(1.0 - alpha, len(before) - 1)) * sd * k / abs(ref) * 100.0
    return {"verdict": "regression" if change * direction < 0 else "improvement",
            "change_pct": change, "ci_low_pct": change - half, "ci_high_pct": change + half,
            "ci_level": 1.0 - 2.0 * alpha, "p_value": p, "n_base": len(before),
            "n_new": len(new), "base_median": ref, "new_median": x,
            "reason": "newest run outside the %g %% prediction interval of the %d runs "
                      "before it" % (100 * (1 - alpha), len(before))}


def _change(runs, cp, row, how):
    before, after = runs[cp - 1], runs[cp]
    return {"index": cp, "how": how, "before_commit": before["commit"], "before_time": before["time"],
            "after_commit": after["commit"], "time": after["time"], "subject": after["subject"],
            **{k: row[k] for k in ("verdict", "change_pct", "ci_low_pct", "ci_high_pct", "ci_level", "p_value")},
            "n_before": row["n_base"], "n_after": row["n_new"], "before_median": row["base_median"],
            "after_median": row["new_median"], "reason": row["reason"]}


def _series_changes(item, kw):
    key, s = item
    return [(key, ch) for ch in find_changes(key[1], key[2], s["direction"], s["runs"], **kw)]


def all_changes(series, **kw):
    """[(key, change)] over every series, plus each series' newest commit. Many series are
    spread over the CPUs (each series is seeded on its own, so the result is the same)."""
    import functools
    newest = {key: s["runs"][-1]["commit"] for key, s in series.items() if s["runs"]}
    items = list(series.items())
    work = functools.partial(_series_changes, kw=kw)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
    if len(items) >= 50 and cpus > 1:
        from concurrent.futures import ProcessPoolExecutor
        with ProcessPoolExecutor(max_workers=cpus) as pool:
            parts = list(pool.map(work, items, chunksize=max(1, len(items) // (4 * cpus))))
    else:
        parts = [work(i) for i in items]
    changes = [c for part in parts for c in part if c[1]["how"] != "newest"]
    # The newest commit is tested once per series: with hundreds of series, some would
    # pass alpha by chance every time. Its steps are kept when they pass the
    # Benjamini-Hochberg procedure over all series at alpha, and reach the threshold.
    # (statsmodels' multipletests, which scripts/compare uses for Holm's step too.)
    cands = [c for part in parts for c in part if c[1]["how"] == "newest"]
    if cands:
        from statsmodels.stats.multitest import multipletests
        keep = multipletests([ch["p_value"] for _, ch in cands], alpha=kw.get("alpha", 0.01), method="fdr_bh")[0]
        changes += [(key, ch) for (key, ch), k in zip(cands, keep)
                    if k and abs(ch["change_pct"]) >= kw.get("threshold", 2.0)]
    return changes, newest


def group_changes(changes):
    """Changes of one series whose steps are at most one commit apart moved together (noise
    can place one benchmark's step a commit early or late); the group's commit range spans
    theirs."""
    out = []
    per_series = {}
    for key, ch in changes:
        per_series.setdefault(key[0], []).append(dict(ch, benchmark=key[1], metric=key[2]))
    for sid, members in per_series.items():
        # Position of each commit in the series' own order (commit time).
        order = sorted({(m["time"], m["after_commit"]) for m in members}
                       | {(m["before_time"], m["before_commit"]) for m in members})
        pos = {sha: i for i, (_, sha) in enumerate(order)}
        members.sort(key=lambda m: (m["time"], m["after_commit"]))
        group = None
        for m in members:
            if group and pos[m["after_commit"]] - pos[group["after_commit"]] <= 1 \
                    and m["before_time"] <= group["time"]:
                group["members"].append(m)
                group["after_commit"], group["time"] = m["after_commit"], m["time"]
                group["subject"] = m["subject"]
                continue
            group = {"series": sid, "before_commit": m["before_commit"],
                     "after_commit": m["after_commit"], "time": m["time"],
                     "subject": m["subject"], "members": [m]}
            out.append(group)
    out.sort(key=lambda g: (-g["time"], g["series"]))
    for g in out:
        g["members"].sort(key=lambda m: (m["verdict"] != "regression",
                                         -abs(m["change_pct"] or 0)))
    return out


def fmt_change(m):
    s = kc.fmt_change(m["change_pct"]) + kc.fmt_interval(m["ci_low_pct"], m["ci_high_pct"])
    if m["p_value"] is not None:
        s += " p=%s" % kc.fmt_p(m["p_value"])
    return s


def short(sha):
    return sha[:12]


def day(t, fmt="%Y-%m-%d"):
    return datetime.fromtimestamp(t, timezone.utc).strftime(fmt)


# ---------------------------------------------------------------- the dashboard

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
    """One series as SVG: the min-max band of each run, the median line, change points
    as dashed lines labelled with their commit. Returns (svg, hover data); the hover data
    refers to commits by their index in commit_index (one table per page)."""
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
                     % (PAD_L, W - PAD_R, y(v), y(v), y(v) + 3, fmt_rate(v)))
    if n > 1:
        parts.append('<polygon class="band" points="%s %s"/>' % (top, bottom))
        parts.append('<polyline class="med" points="%s"/>' % med)
    else:
        parts.append('<circle cx="%.1f" cy="%.1f" r="3" fill="#1f5fbf"/>'
                     % (x(0), y(runs[0]["median"])))
    for ch in changes:
        cx = x(ch["index"] - 0.5) if n > 1 else x(0)
        parts.append('<g class="cp %s" data-commit="%s"><line x1="%.1f" x2="%.1f" y1="%d" '
                     'y2="%d"/><text x="%.1f" y="11">%s %s</text><title>%s..%s %s</title></g>'
                     % (ch["verdict"], ch["after_commit"], cx, cx, PAD_T, H - PAD_B,
                        min(cx + 3, W - 140), short(ch["after_commit"])[:8],
                        kc.fmt_change(ch["change_pct"]), short(ch["before_commit"]),
                        short(ch["after_commit"]), html.escape(fmt_change(ch))))
    parts.append('<text class="axis" x="%d" y="%d">%s</text>' % (
        PAD_L, H - 4, html.escape(short(runs[0]["commit"]))))
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


def primary_metric(metrics):
    """The metric a benchmark's chart shows: its time, else its throughput."""
    for m in ("cpu_time", "real_time", "instructions", "items_per_second", "max_rate"):
        if m in metrics:
            return m
    return sorted(metrics)[0]


def _write_page(path, title, body, data=None):
    with open(path, "w", encoding="utf-8") as f:
        f.write("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>%s</title>"
                "<style>%s</style></head><body>%s<div id=\"tip\"></div>"
                "<script type=\"application/json\" id=\"kbench-data\">%s</script>"
                "<script>%s</script></body></html>"
                % (html.escape(title), CSS, body,
                   json.dumps(data or {}, separators=(",", ":")).replace("</", "<\\/"), JS))


def family_slug(family):
    return "family-" + re.sub(r"[^A-Za-z0-9_-]", "_", family) + ".html"


def write_report(db, out_dir, series, changes, labels):
    os.makedirs(out_dir, exist_ok=True)
    by_key = {}
    for key, ch in changes:
        by_key.setdefault(key, []).append(ch)
    # Benchmarks per (family, series), the metrics each has.
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
                'change points (red regression, green improvement). Hover for the numbers.'
                '</p>' % html.escape(family)]
        for sid, charts in itertools.groupby(sorted(fams[family].items()), key=lambda kv: kv[0][0]):
            body.append("<h2>%s</h2>" % html.escape(labels.get(sid, str(sid))))
            for (_, name), metrics in charts:
                metric = primary_metric(metrics)
                key = (sid, name, metric)
                runs = series[key]["runs"]
                # Change points of every metric of the benchmark go on its chart.
                chs = [dict(c, metric=m) for m in metrics for c in by_key.get((sid, name, m), [])]
                svg, hover = chart_svg(len(data), runs, chs, commit_index)
                data.append({"p": hover, "x0": PAD_L, "dx": (W - PAD_L - PAD_R) / max(
                    len(runs) - 1, 1), "m": metric, "u": kc._unit(metric)})
                notes = "".join(
                    '<div class="%s">%s %s..%s %s</div>' % (
                        "reg" if c["verdict"] == "regression" else "imp",
                        html.escape(c["metric"]), short(c["before_commit"]),
                        short(c["after_commit"]), html.escape(fmt_change(c))) for c in chs)
                body.append('<div class="chart" data-name="%s"><h3>%s <small>(%s, %d runs)'
                            '</small></h3>%s%s</div>' % (
                                html.escape(name, quote=True), html.escape(name),
                                html.escape(metric), len(runs), svg, notes))
        path = os.path.join(out_dir, family_slug(family))
        _write_page(path, "kbench: " + family, "".join(body), {
            "charts": data, "commits": [c for _, c in sorted(commit_index.values())]})
        pages.append((family, sum(1 for _ in fams[family]), path))
    groups = group_changes(changes)
    runs_n, commits_n = db.execute(
        "SELECT COUNT(*), COUNT(DISTINCT commit_sha) FROM runs").fetchone()
    body = ["<h1>kbench history</h1><p>%d runs of %d commits, %d series of points. "
            "Generated %s.</p><h2>Families</h2><ul>" % (
                runs_n, commits_n, len(series),
                datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))]
    for family, n, path in pages:
        body.append('<li><a href="%s">%s</a> (%d benchmarks)</li>'
                    % (os.path.basename(path), html.escape(family), n))
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
                    '<a href="%s">%s</a>' % (family_slug(m["benchmark"].split("/")[0]),
                                             html.escape(m["benchmark"])),
                    html.escape(m["metric"]), html.escape(fmt_change(m)),
                    " (newest commit)" if m["how"] == "newest" else "")
                for m in g["members"])
            body.append('<tr><td data-commit="%s">%s..%s<br>%s<br><small>%s</small></td>'
                        '<td>%s</td><td>%s</td></tr>' % (
                            g["after_commit"], short(g["before_commit"]), short(g["after_commit"]), day(g["time"]),
                            html.escape((g["subject"] or "")[:80]),
                            html.escape(labels.get(g["series"], "")), rows))
        body.append("</table>")
    _write_page(os.path.join(out_dir, "index.html"), "kbench history", "".join(body))
    write_changes(os.path.join(out_dir, "changes.json"), groups, labels)
    return pages


def write_changes(path, groups, labels):
    """changes.json: the groups with their series' labels; no NaN or infinity (not JSON)."""
    out = [dict(g, series_label=labels.get(g["series"], ""),
                members=[{k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                          for k, v in m.items()} for m in g["members"]]) for g in groups]
    with open(path, "w", encoding="utf-8") as f:
        f.write(kc.dumps(out) + "\n")


# ---------------------------------------------------------------- command line

EPILOG = """\
Database: results/history.sqlite (--db, or KBENCH_HISTORY_DB). Runs are keyed by commit,
commit time, benchmark name and the context that makes runs comparable (host, CPU model
and count, target, build type, librdkafka and broker versions): each such context is a
series of its own, never mixed with another. Runs of a dirty tree are kept but left out
of changes and report unless --include-dirty.

add RUN...         a scripts/bench result folder or a kbench JSON file each; adding a run
                   twice is a no-op; a malformed or foreign JSON is refused (exit 2) and
                   nothing is written; all files go in one transaction.
changes            E-Divisive change points per series (benchmark x metric), each judged
                   by scripts/compare's test on the runs either side; prints the commit
                   range, the step in %% with its interval and p, and what moved together.
                   Exit 1 when the newest commit of a series starts a regression, 3 when
                   no series has enough runs to be judged, 0 otherwise.
report --out DIR   a static HTML site (index.html and one page per family; no server).
series             the series (contexts) and how many runs each holds.
"""


def main(argv=None):
    import argparse

    from kbench.cli import ArgumentParser, check_out_dir, check_out_file, die, dry_run_exit
    root = kbench.ROOT
    default_db = os.environ.get("KBENCH_HISTORY_DB") or os.path.join(root, "results",
                                                                     "history.sqlite")
    ap = ArgumentParser(prog="history", description="kbench's results history.",
                        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", default=default_db, help="database file (default %(default)s)")
    sub = ap.add_subparsers(dest="cmd", required=True, metavar="{add,changes,report,series}")
    a = sub.add_parser("add", help="store runs")
    a.add_argument("runs", nargs="+", metavar="RUN")
    a.add_argument("--repo", default=root, help="git repository for commit times and "
                   "subjects (default: this one)")
    a.add_argument("--commit-time", metavar="T", help="commit time (Unix seconds or ISO) "
                   "instead of the repository's, for runs of commits it does not hold")
    sel = ArgumentParser(add_help=False)
    sel.add_argument("--filter", metavar="REGEX", help="only benchmarks whose name matches")
    sel.add_argument("--since", metavar="DATE|COMMIT",
                     help="only runs of commits from this time (or commit) on")
    sel.add_argument("--metric", action="append", metavar="NAME", help="only this metric")
    sel.add_argument("--include-dirty", action="store_true",
                     help="include runs of a dirty working tree")
    sel.add_argument("--alpha", type=float, default=0.01,
                     help="level of the step's test and of E-Divisive's (default 0.01)")
    sel.add_argument("--threshold", type=float, default=2.0,
                     help="smallest step in %% that is reported (default 2)")
    sel.add_argument("--repo", default=root, help=argparse.SUPPRESS)
    c = sub.add_parser("changes", parents=[sel], help="change points per series")
    c.add_argument("--json", metavar="OUT", help="also write the changes as JSON")
    r = sub.add_parser("report", parents=[sel], help="write the HTML dashboard")
    r.add_argument("--out", required=True, metavar="DIR")
    sub.add_parser("series", help="list the series")
    args = ap.parse_args(argv)
    # What a command writes is checked before it reads or computes anything.
    if args.cmd == "add":
        check_out_file(args.db, "--db")
    if getattr(args, "json", None):
        check_out_file(args.json, "--json")
    if args.cmd == "report":
        check_out_dir(args.out, "--out")
    dry_run_exit()

    try:
        if args.cmd == "add":
            ct = parse_time(args.commit_time) if args.commit_time else None
            t0 = time.monotonic()
            # Check first, then open: a refused file leaves no new database behind either.
            checked = [(p,) + check_run(resolve_run(p)) for p in args.runs]
            db = connect(args.db)
            added, present = add_runs(db, checked, args.repo, ct,
                                      log=lambda m: print(m, file=sys.stderr))
            print("history: added %d run(s), %d already present, in %.2f s (%s)"
                  % (added, present, time.monotonic() - t0, args.db), file=sys.stderr)
            return 0
        db = connect(args.db, create=False)
        if args.cmd == "series":
            for sid, label, n, commits in db.execute(
                    "SELECT s.id, s.label, COUNT(r.id), COUNT(DISTINCT r.commit_sha) FROM "
                    "series s LEFT JOIN runs r ON r.series_id = s.id GROUP BY s.id"):
                print("%d\t%d runs\t%d commits\t%s" % (sid, n, commits, label))
            return 0
        if not 0 < args.alpha < 0.5:
            die("--alpha must be between 0 and 0.5")
        if not args.threshold >= 0:
            die("--threshold must be a non-negative number of percent")
        try:
            flt = kc.compile_filter(args.filter) if args.filter else None
        except ValueError as e:
            die(str(e))
        since = resolve_since(db, args.since, args.repo)
        series = load_series(db, flt, since, set(args.metric) if args.metric else None,
                             args.include_dirty)
        if not series:
            die("no runs in %s match%s" % (args.db, " --filter/--since/--metric"
                                            if (flt or since or args.metric) else ""), 3)
        changes, newest = all_changes(series, alpha=args.alpha, threshold=args.threshold,
                                      cp_pvalue=args.alpha)
        labels = dict(db.execute("SELECT id, label FROM series"))
        if args.cmd == "report":
            t0 = time.monotonic()
            pages = write_report(db, args.out, series, changes, labels)
            print("history: report of %d series in %d page(s) written to %s in %.1f s"
                  % (len(series), len(pages) + 1, os.path.join(args.out, "index.html"),
                     time.monotonic() - t0), file=sys.stderr)
            return 0
        return print_changes(series, changes, newest, labels, args)
    except HistoryError as e:
        die(str(e))


def print_changes(series, changes, newest, labels, args):
    groups = group_changes(changes)
    judged = sum(1 for s in series.values() if judgeable(s["runs"]))
    for g in groups:
        print("%s..%s  %s  %s" % (short(g["before_commit"]), short(g["after_commit"]), day(g["time"]),
                                  (g["subject"] or "")[:70]))
        print("  series: %s" % labels.get(g["series"], g["series"]))
        for m in g["members"]:
            print("  %-11s %-26s %-16s %s%s" % (
                m["verdict"].upper() if m["verdict"] == "regression" else m["verdict"],
                fmt_change(m), m["metric"], m["benchmark"],
                "  (newest commit, %d runs before)" % m["n_before"] if m["how"] == "newest"
                else ""))
    newest_regressions = [(k, ch) for k, ch in changes if ch["verdict"] == "regression"
                          and ch["after_commit"] == newest.get(k)]
    print("history: %d change(s) in %d group(s) over %d series (%d with enough runs to "
          "judge); newest commit regresses %d series" % (
              len(changes), len(groups), len(series), judged, len(newest_regressions)))
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        write_changes(args.json, groups, labels)
    if newest_regressions:
        return 1
    if judged == 0:
        print("history: no series has enough runs to be judged (E-Divisive needs %d, the "
              "newest commit 3 before it)" % MIN_POINTS, file=sys.stderr)
        return 3
    return 0


def judgeable(runs):
    """A series that change points or the newest commit's check can say something about."""
    newest = runs[-1]["commit"] if runs else None
    return len(runs) >= MIN_POINTS or sum(1 for r in runs if r["commit"] != newest) >= 3


if __name__ == "__main__":
    sys.exit(main())
