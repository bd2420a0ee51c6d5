"""kbench's results history (docs/history.md): a SQLite database of runs, change points over
commits, a static dashboard. Each context that makes runs comparable (machine, target, build
type, librdkafka and broker versions) is a series of its own. Runs of a dirty tree are left
out of changes and report unless --include-dirty.

Change points: E-Divisive (signal-processing-algorithms) over each series of run medians,
each judged by scripts/compare's test on up to WINDOW runs either side. The newest commit's
run is checked against a t prediction interval from the runs since the last change point,
corrected over all series by Benjamini-Hochberg.
"""

import argparse
import contextlib
import hashlib
import json
import math
import os
import re
import sqlite3
import statistics
import time
from datetime import datetime, timezone

import kbench
from kbench import cli, dashboard, facts, git, text, verdict
from kbench import results as kr
from kbench.dashboard import change_text, day, short

SCHEMA_VERSION = 1
# Context keys every kbench run carries: a JSON without them is a foreign file.
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


def connect(path, create=True):
    if not create and not os.path.isfile(path):
        raise HistoryError("no history at %s (scripts/history add RUN... makes it)" % path)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    try:
        db = sqlite3.connect(path, isolation_level=None, timeout=60)
        db.execute("PRAGMA foreign_keys = ON")
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version == 0:
            db.executescript("BEGIN IMMEDIATE;" + SCHEMA + "PRAGMA user_version = %d; COMMIT;" % SCHEMA_VERSION)
        elif version != SCHEMA_VERSION:
            raise HistoryError("%s has schema version %d; this kbench reads %d" % (path, version, SCHEMA_VERSION))
    except sqlite3.DatabaseError as e:
        raise HistoryError("%s is not a usable SQLite database: %s" % (path, e)) from e
    return db


def _id(db, cache, table, name):
    """The id of a benchmark or metric name, made on first use (a benchmark with its family)."""
    if name not in cache:
        row = db.execute("SELECT id FROM %s WHERE name = ?" % table, (name,)).fetchone()
        insert = (("INSERT INTO benchmarks (name, family) VALUES (?, ?)", (name, name.split("/")[0]))
                  if table == "benchmarks" else ("INSERT INTO metrics (name) VALUES (?)", (name,)))
        cache[name] = row[0] if row else db.execute(*insert).lastrowid
    return cache[name]


def check_run(path):
    """(data, digest) of one run (a file or a result folder), or HistoryError."""
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
                raise HistoryError("%s: benchmarks[%d] (%s) has a non-numeric %s" % (path, i, b["name"], key))
    return data, hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def series_of(ctx):
    values = {k: ctx.get(k, "") for k in facts.series_keys()}
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
        with contextlib.suppress(ValueError):
            return int(datetime.fromisoformat(date).timestamp()), "run date", None
    return int(time.time()), "added", None


def _git_show(repo, fmt, rev):
    """git show -s --format=FMT REV in repo: its output, None when git cannot say."""
    return (git.try_run(repo, "show", "-s", "--format=" + fmt, rev) or None) if repo else None


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


def add_runs(db, checked, repo=None, commit_time=None, log=cli.info):
    """Adds checked runs ([(path, data, digest)]) in one transaction; (added, already present)."""
    crash_after = int(os.environ.get("KBENCH_HISTORY_TEST_CRASH", "0") or 0)  # tests only
    added = present = 0
    db.execute("BEGIN IMMEDIATE")
    try:
        bcache, mcache = {}, {}
        for p, data, digest in checked:
            if db.execute("SELECT 1 FROM runs WHERE digest = ?", (digest,)).fetchone():
                log("%s is already in the history" % p)
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
    series_id = row[0] if row else db.execute("INSERT INTO series (key, label) VALUES (?, ?)", (key, label)).lastrowid
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
    samples, errors = [], []
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
            samples += [(run_id, bid, pidx, len(r), _id(db, mcache, "metrics", m), v) for m, v in metrics.items()]
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
        for metric, direction in verdict.judged_metrics(name, all_runs):
            per_proc = [statistics.median(v) for v in
                        ([r[metric] for r in runs if metric in r] for runs in proc_runs) if v]
            if not per_proc:
                continue
            # One process: its repetitions are the only spread there is.
            spread = per_proc if len(per_proc) > 1 else [r[metric] for r in all_runs if metric in r]
            points.append((run_id, bid, _id(db, mcache, "metrics", metric), direction,
                           statistics.median(per_proc), min(spread), max(spread), json.dumps(per_proc)))
    db.executemany("INSERT INTO points VALUES (?, ?, ?, ?, ?, ?, ?, ?)", points)


def load_series(db, name_filter=None, since=None, metrics=None, include_dirty=False):
    """{(series_id, benchmark, metric): {"direction", "runs": [point...]}}, runs in commit order."""
    where = ("1 = 1" if include_dirty else "r.dirty = 0") + ("" if since is None else " AND r.commit_time >= ?")
    args = [] if since is None else [since]
    q = ("SELECT r.series_id, b.name, m.name, p.direction, r.id, r.commit_sha, "
         "r.commit_time, r.commit_subject, p.median, p.lo, p.hi, p.process_values "
         "FROM points p JOIN runs r ON r.id = p.run_id JOIN benchmarks b ON b.id = "
         "p.benchmark_id JOIN metrics m ON m.id = p.metric_id WHERE " + where
         + " ORDER BY r.series_id, b.name, m.name, r.commit_time, r.id")
    out = {}
    for (sid, name, metric, direction, run_id, sha, ctime, subject, med, lo, hi, pv) in db.execute(q, args):
        if (name_filter and not name_filter.search(name)) or (metrics is not None and metric not in metrics):
            continue
        s = out.setdefault((sid, name, metric), {"direction": direction, "runs": []})
        s["runs"].append({"run": run_id, "commit": sha, "time": ctime, "subject": subject,
                          "median": med, "lo": lo, "hi": hi, "processes": json.loads(pv)})
    return out


def resolve_since(db, text, repo):
    """--since: a date/time, Unix seconds, or a commit (its commit time)."""
    if text is None:
        return None
    with contextlib.suppress(HistoryError):
        return parse_time(text)
    row = db.execute("SELECT MIN(commit_time) FROM runs WHERE commit_sha LIKE ?", (text + "%",)).fetchone()
    if row and row[0] is not None:
        return row[0]
    out = _git_show(repo, "%ct", text)
    if out and out.isdigit():
        return int(out)
    raise HistoryError("--since %r is neither a date nor a commit in the history" % text)


def e_divisive(values, pvalue, permutations):
    import numpy as np
    from signal_processing_algorithms.energy_statistics import energy_statistics as es
    np.random.seed(SEED)
    return sorted(es.e_divisive(np.asarray(values, dtype=float), pvalue=pvalue, permutations=permutations))


def find_changes(name, metric, direction, runs, alpha=0.01, threshold=2.0, cp_pvalue=0.01, permutations=100):
    """The change points of one series: index, commits around it, compare's row."""
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
            row = verdict.compare_metric(name, metric, before, after, alpha, threshold, "run", direction=direction)
            if row["verdict"] in ("regression", "improvement"):
                changes.append(_change(runs, cp, row, "e-divisive"))
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
    """The newest commit's run (median of its runs) against a t prediction interval from the
    runs before it (as conbench's lookback z-score: a rank test cannot tell one run from 30):
    a row with its p, or None without enough runs; all_changes decides."""
    from scipy import stats
    if len(before) < 3 or not new:
        return None
    x = statistics.median(new)
    mean, sd, ref = statistics.fmean(before), statistics.stdev(before), statistics.median(before)
    if not ref:
        return None
    change = (x / ref - 1.0) * 100.0
    if metric in kr.DETERMINISTIC_METRICS or sd == 0:
        p, half = (0.0 if x != mean else 1.0), 0.0
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
    """([(key, change)] over every series, {key: newest commit}); many series spread over the CPUs."""
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
    # The newest commits' steps pass Benjamini-Hochberg over all series, then the threshold.
    cands = [c for part in parts for c in part if c[1]["how"] == "newest"]
    if cands:
        from statsmodels.stats.multitest import multipletests
        keep = multipletests([ch["p_value"] for _, ch in cands], alpha=kw.get("alpha", 0.01), method="fdr_bh")[0]
        changes += [(key, ch) for (key, ch), k in zip(cands, keep)
                    if k and abs(ch["change_pct"]) >= kw.get("threshold", 2.0)]
    return changes, newest


def group_changes(changes):
    """Groups of one series' changes at most one commit apart (noise can move a step by one)."""
    out, per_series = [], {}
    for key, ch in changes:
        per_series.setdefault(key[0], []).append(dict(ch, benchmark=key[1], metric=key[2]))
    for sid, members in per_series.items():
        order = sorted({(m["time"], m["after_commit"]) for m in members}
                       | {(m["before_time"], m["before_commit"]) for m in members})
        pos = {sha: i for i, (_, sha) in enumerate(order)}
        members.sort(key=lambda m: (m["time"], m["after_commit"]))
        group = None
        for m in members:
            if group and pos[m["after_commit"]] - pos[group["after_commit"]] <= 1 and m["before_time"] <= group["time"]:
                group["members"].append(m)
                group["after_commit"], group["time"] = m["after_commit"], m["time"]
                group["subject"] = m["subject"]
                continue
            group = {"series": sid, "before_commit": m["before_commit"],
                     "after_commit": m["after_commit"], "time": m["time"], "subject": m["subject"], "members": [m]}
            out.append(group)
    out.sort(key=lambda g: (-g["time"], g["series"]))
    for g in out:
        g["members"].sort(key=lambda m: (m["verdict"] != "regression", -abs(m["change_pct"] or 0)))
    return out


def write_changes(path, groups, labels):
    """changes.json: the groups with their series' labels; no NaN or infinity (not JSON)."""
    out = [dict(g, series_label=labels.get(g["series"], ""),
                members=[{k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                          for k, v in m.items()} for m in g["members"]]) for g in groups]
    with open(path, "w", encoding="utf-8") as f:
        f.write(verdict.dumps(out) + "\n")


def add_arguments(ap):
    root = kbench.ROOT
    ap.add_argument("--db", default=os.environ.get("KBENCH_HISTORY_DB")
                    or os.path.join(root, "results", "history.sqlite"),
                    help="database file (default %(default)s; or KBENCH_HISTORY_DB)")
    sub = ap.add_subparsers(dest="cmd", required=True, metavar="{add,changes,report,series}",
                            parser_class=cli.ArgumentParser)
    a = sub.add_parser("add", help="store runs", description=(
        "Store runs (result folders or kbench JSON files) in one transaction; a run already "
        "there is a no-op, a malformed or foreign JSON is refused (exit 2) and nothing written."))
    a.add_argument("runs", nargs="+", metavar="RUN")
    a.add_argument("--repo", default=root, help="git repository for commit times and subjects (default: this one)")
    a.add_argument("--commit-time", metavar="T", help="commit time (Unix seconds or ISO) "
                   "instead of the repository's, for runs of commits it does not hold")
    sel = cli.ArgumentParser(add_help=False)
    sel.add_argument("--filter", metavar="REGEX", help="only benchmarks whose name matches")
    sel.add_argument("--since", metavar="DATE|COMMIT", help="only runs of commits from this time (or commit) on")
    sel.add_argument("--metric", action="append", metavar="NAME", help="only this metric")
    sel.add_argument("--include-dirty", action="store_true", help="include runs of a dirty working tree")
    sel.add_argument("--alpha", type=float, default=0.01,
                     help="level of the step's test and of E-Divisive's (default 0.01)")
    sel.add_argument("--threshold", type=float, default=2.0, help="smallest step in %% that is reported (default 2)")
    sel.add_argument("--repo", default=root, help=argparse.SUPPRESS)
    c = sub.add_parser("changes", parents=[sel], help="change points per series", description=(
        "Change points per series (benchmark x metric): commit range, step in % with its "
        "interval and p, what moved together. Exit 1 when the newest commit of a series "
        "starts a regression, 3 when no series has enough runs to be judged."))
    c.add_argument("--json", metavar="OUT", help="also write the changes as JSON")
    r = sub.add_parser("report", parents=[sel], help="write the HTML dashboard", description=(
        "A static HTML site: index.html and one page per family; no server."))
    r.add_argument("--out", required=True, metavar="DIR")
    sub.add_parser("series", help="list the series (contexts) and the runs each holds")


def main(args):
    # What a command writes is checked before it reads or computes anything.
    if args.cmd == "add":
        cli.check_out_file(args.db, "--db")
    if getattr(args, "json", None):
        cli.check_out_file(args.json, "--json")
    if args.cmd == "report":
        cli.check_out_dir(args.out, "--out")
    cli.dry_run_exit()
    try:
        if args.cmd == "add":
            t0 = time.monotonic()
            added, present = add_all(args.db, args.runs, args.repo, args.commit_time)
            cli.info("added %d run(s), %d already present, in %.2f s (%s)"
                     % (added, present, time.monotonic() - t0, args.db))
            return 0
        db = connect(args.db, create=False)
        if args.cmd == "series":
            print(text.table(("series", "runs", "commits", "context"), db.execute(
                "SELECT s.id, COUNT(r.id), COUNT(DISTINCT r.commit_sha), s.label FROM "
                "series s LEFT JOIN runs r ON r.series_id = s.id GROUP BY s.id")))
            return 0
        if not 0 < args.alpha < 0.5:
            cli.die("--alpha must be between 0 and 0.5")
        if not args.threshold >= 0:
            cli.die("--threshold must be a non-negative number of percent")
        flt = verdict.compile_filter(args.filter)
        since = resolve_since(db, args.since, args.repo)
        series = load_series(db, flt, since, set(args.metric) if args.metric else None, args.include_dirty)
        if not series:
            cli.die("no runs in %s match%s" % (args.db, " --filter/--since/--metric"
                                                if (flt or since or args.metric) else ""), 3)
        changes, newest = all_changes(series, alpha=args.alpha, threshold=args.threshold, cp_pvalue=args.alpha)
        labels = dict(db.execute("SELECT id, label FROM series"))
        if args.cmd == "report":
            t0 = time.monotonic()
            groups = group_changes(changes)
            totals = db.execute("SELECT COUNT(*), COUNT(DISTINCT commit_sha) FROM runs").fetchone()
            pages = dashboard.write_report(args.out, series, changes, groups, labels, totals)
            write_changes(os.path.join(args.out, "changes.json"), groups, labels)
            cli.info("report of %d series in %d page(s) written to %s in %.1f s"
                     % (len(series), len(pages) + 1, os.path.join(args.out, "index.html"), time.monotonic() - t0))
            return 0
        return print_changes(series, changes, newest, labels, args)
    except HistoryError as e:
        cli.die(str(e))


def add(db, run_dir, *, repo=None, commit_time=None):
    """Adds the run RUN_DIR to the history DB; (added, already present), or HistoryError."""
    return add_all(db, [run_dir], repo or kbench.ROOT, commit_time)


def add_all(db, runs, repo, commit_time=None):
    """Adds RUNS in one transaction; (added, already present)."""
    ct = parse_time(commit_time) if commit_time else None
    # Check first, then open: a refused file leaves no new database behind either.
    checked = [(p,) + check_run(p) for p in runs]
    return add_runs(connect(db), checked, repo, ct, log=cli.info)


def print_changes(series, changes, newest, labels, args):
    groups = group_changes(changes)
    judged = sum(1 for s in series.values() if judgeable(s["runs"]))
    for g in groups:
        print("%s..%s  %s  %s\n  series: %s" % (
            short(g["before_commit"]), short(g["after_commit"]), day(g["time"]),
            (g["subject"] or "")[:70], labels.get(g["series"], g["series"])))
        table = text.table(("verdict", "change [interval] p", "metric", "benchmark"), [(
            m["verdict"].upper() if m["verdict"] == "regression" else m["verdict"],
            change_text(m), m["metric"], m["benchmark"] + (
                "  (newest commit, %d runs before)" % m["n_before"] if m["how"] == "newest"
                else "")) for m in g["members"]])
        print("\n".join("  " + line for line in table.splitlines()))
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
        cli.info("no series has enough runs to be judged (E-Divisive needs %d, the newest "
                 "commit 3 before it)" % MIN_POINTS)
        return 3
    return 0


def judgeable(runs):
    """A series that change points or the newest commit's check can say something about."""
    newest = runs[-1]["commit"] if runs else None
    return len(runs) >= MIN_POINTS or sum(1 for r in runs if r["commit"] != newest) >= 3

