"""librdkafka's release history: every final release from v1.0.0 measured on one machine and
one pinned cluster, in rounds; a verdict for every release step from the gate; the compact
data that is published and drawn (kbench.release_site).

The database (SQLite) holds
  machines  one row per machine identity: a run resumed on the same identity continues its
            series, another identity starts its own, never mixed in;
  releases  tag, commit, branch parent (a maintenance release hangs off its branch) and date;
  visits    one kbench process of one group of rows, on one release, in one round of one
            batch: its results slimmed to the scalar fields the gate reads. (machine, batch,
            round, release, group) is unique, so a killed run resumes where it stopped.

Batch "history" is the full run. Batch "add:TAG" measures a new release TAG with its branch
parent and REFERENCE, interleaved: its step is judged within the batch, and REFERENCE
against its history visits says whether the machine still measures as it did. Batch "aa"
measures releases twice, under their own name and TAG-aa, interleaved: the gate's A/A check,
where any step is a false alarm.
"""

import collections
import hashlib
import json
import os
import platform
import random
import re
import sqlite3
import statistics
import time

from kbench import ROOT, build_stamp, facts, git, proc, stats, verdict
from kbench import kafka_cluster as kafka
from kbench import results as kr
from kbench.commands import librdkafka

PINNED_KAFKA = "3.9.1"  # the newest Kafka that still serves the protocol versions of librdkafka 1.0
REFERENCE = "v2.0.2"    # measured with every new release (incremental runs): the system's release
DATA_VERSION = 1
WARMUP_SECONDS = 20  # per row of a broker's group, untimed, once per run
DB_DEFAULT = os.path.join(ROOT, "results", "release-history.sqlite")
PUBLISHED = os.path.join(ROOT, "docs", "release-history", "data.json")
AA_BATCH, AA_SUFFIX = "aa", "-aa"

# One kbench process: its rows, the cluster they run on (mock: kbench-mock, the same mock for
# every release; plaintext/ssl: Apache Kafka PINNED_KAFKA, started once per run) and, where a
# documented change is about a secondary metric, the metrics that decide its rows; FILTER keeps
# the process to the rows of ARGS (the other families would run their defaults).
Group = collections.namedtuple("Group", "name cluster filter args metrics")

ROW_SETS = {
    # Closed-loop throughput in both lenses; produce latency as shipped at 1,000 records/s
    # (linger.ms 0.5 -> 5 ms in 1.5.0); a throughput-tuned producer (lz4, linger 100 ms);
    # client CPU per record at 100,000 records/s of 100 B on a broker (the wake-ups of 1.7.0
    # and 1.9.0); end-to-end latency over TLS in both lenses (Nagle off in 2.10.0).
    "default": (
        # 1,000 records/s, one record a millisecond: more than 1.2.0-1.4.4's 0.5 ms linger, whose
        # rate-limited wake-ups stall a faster load (2,500 records/s) and hide the linger change
        # of 1.5.0 behind queueing. Its window stretches to 5 s (at least 5,000 records: p99 on
        # 50); the closed-loop rows keep 1-s windows, since with five processes a side their
        # spread between processes, not within one, sets the interval.
        Group("mock", "mock", "^Produce/", ("--mock=process", "--warmup-seconds=0.5", "--window-seconds=1",
                                            "--produce=acks=1,record_bytes=100,settings=same|shipped",
                                            "--produce=acks=1,record_bytes=100,rate=1000,partitions=1,settings=shipped",
                                            "--produce=acks=1,codec=lz4,record_bytes=500,linger_ms=100"), None),
        Group("broker-cpu", "plaintext", "^Produce/", ("--warmup-seconds=0.5",
                                                       "--produce=acks=1,record_bytes=100,rate=100000,partitions=1"),
              ("cpu_us_per_record",)),
        Group("tls", "ssl", "^EndToEnd/", ("--warmup-seconds=0.5",
                                           "--end-to-end=acks=1,record_bytes=1000,rate=2500,settings=same|shipped"),
              None),
    ),
    # One mock row: a try of the machinery in minutes.
    "quick": (Group("mock", "mock", "^Produce/", ("--mock=process", "--produce=acks=1,record_bytes=100"), None),),
}

# Changes a release step is expected to show, each with its source (the known-regressions
# scenario's release-level cases and the documented default changes): release -> (label, rows).
DOCUMENTED = {
    "v1.2.0": ("linger.ms default 0 -> 0.5 ms; wake-ups rate-limited to one per linger.ms, which can stall "
               "a record for up to 1 s (#2912, fixed in 1.7.0)", "intended"),
    "v1.5.0": ("linger.ms default 0.5 -> 5 ms: produce latency as shipped up (CHANGELOG v1.5.0)", "regression"),
    "v1.6.0": ("sticky partitioner for keyless records (CHANGELOG v1.6.0)", "intended"),
    "v1.7.0": ("producer wakes its broker thread after every enqueue: CPU per record up (#3538); the 1-s "
               "stalls of rate-limited wake-ups gone (#2912)", "regression"),
    "v1.9.0": ("improved producer queue wake-ups: the 1.7.0 regression undone (#3798)", "improvement"),
    "v2.10.0": ("Nagle off by default: TLS latency down (CHANGELOG v2.10.0, #4986)", "improvement"),
}


def definition(group):
    """What GROUP measures, as a short digest stored with each of its visits: a visit of an
    earlier definition (the group's rows changed since) is measured again and never mixed in."""
    what = [group.cluster, group.filter, list(group.args), list(group.metrics or ())]
    return hashlib.sha256(json.dumps(what).encode()).hexdigest()[:12]


def current_visits(row_set):
    """A WHERE clause and its parameters: the visits of ROW_SET's groups as they are defined now."""
    groups = ROW_SETS[row_set]
    return ("row_set = ? AND grp || ':' || json_extract(doc, '$.definition') IN (%s)" % ", ".join("?" * len(groups)),
            [row_set] + ["%s:%s" % (g.name, definition(g)) for g in groups])


class HistoryError(Exception):
    """Bad input: the message says what, and nothing on disk changed (exit 2)."""


SCHEMA = """
CREATE TABLE IF NOT EXISTS machines (id INTEGER PRIMARY KEY, identity TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS releases (tag TEXT PRIMARY KEY, version TEXT NOT NULL, sha TEXT NOT NULL,
  parent TEXT, date TEXT, commits INTEGER, changelog TEXT);
CREATE TABLE IF NOT EXISTS visits (machine_id INTEGER NOT NULL REFERENCES machines(id),
  batch TEXT NOT NULL, round INTEGER NOT NULL, tag TEXT NOT NULL REFERENCES releases(tag),
  grp TEXT NOT NULL, row_set TEXT NOT NULL, kbench_sha TEXT NOT NULL, started TEXT NOT NULL,
  seconds REAL NOT NULL, doc TEXT NOT NULL, PRIMARY KEY (machine_id, batch, round, tag, grp));
"""


def connect(path, create=True):
    if not create and not os.path.isfile(path):
        raise HistoryError("no release history at %s (scripts/release-history run makes it)" % path)
    try:
        db = sqlite3.connect(path, isolation_level=None, timeout=60)
        if db.execute("PRAGMA user_version").fetchone()[0] == 0:
            db.executescript("BEGIN IMMEDIATE;" + SCHEMA + "PRAGMA user_version = %d; COMMIT;" % DATA_VERSION)
        elif db.execute("PRAGMA user_version").fetchone()[0] != DATA_VERSION:
            raise HistoryError("%s: a release history of another version of kbench" % path)
        db.execute("SELECT COUNT(*) FROM visits").fetchone()
    except sqlite3.DatabaseError as e:
        raise HistoryError("%s is not a usable release history database: %s" % (path, e)) from e
    return db


def machine_identity(kbench_bin):
    """What makes two runs comparable: CPU model, cores, memory, kernel, distribution, compiler."""
    def first(path, pattern):
        try:
            with open(path, errors="replace") as f:
                m = re.search(pattern, f.read(), re.M)
        except OSError:
            return "?"
        return m.group(1).strip().strip('"') if m else "?"
    memory = first("/proc/meminfo", r"^MemTotal:\s+([0-9]+)")
    comment = proc.run(["readelf", "-p", ".comment", kbench_bin], capture=True).stdout
    compilers = sorted(set(re.findall(r"\]\s+(GCC: .*|clang version .*)$", comment, re.M)))
    return {"cpu_model": first("/proc/cpuinfo", r"^model name\s*:\s*(.*)$"), "cores": os.cpu_count(),
            "memory_gib": round(int(memory) / 2**20) if memory.isdigit() else "?",
            "kernel": platform.release(), "distribution": first("/etc/os-release", r"^PRETTY_NAME=(.*)$"),
            "compiler": "; ".join(compilers) or "?"}


def machine_digest(identity):
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]


def machine_id(db, identity, add=True):
    """The machine's id in the database (made on first use with ADD), or None."""
    text = json.dumps(identity, sort_keys=True)
    row = db.execute("SELECT id FROM machines WHERE identity = ?", (text,)).fetchone()
    if row or not add:
        return row and row[0]
    return db.execute("INSERT INTO machines (identity) VALUES (?)", (text,)).lastrowid


def branch_parents(repo, releases):
    """{tag: parent tag} of RELEASES in version order: the latest earlier release that is its
    ancestor (a maintenance release hangs off its branch; a second tag on one commit off the first)."""
    parents, originals = {}, []
    for r in releases:
        twin = next((o for o in originals if o.sha == r.sha), None)
        parent = twin or next((o for o in reversed(originals) if repo.is_ancestor(o.sha, r.sha)), None)
        parents[r.tag] = parent.tag if parent else None
        if not twin:
            originals.append(r)
    return parents


def record_releases(db, repo, releases):
    """RELEASES with their branch parents among all the repository's final releases (a step is
    always a real release step, whichever releases a run measures)."""
    every = repo.final_releases()
    parents = branch_parents(repo, every)
    by_tag = {r.tag: r for r in every}
    for r in releases:
        date = git.try_run(repo.dir, "log", "-1", "--format=%cs", r.sha)
        parent = parents[r.tag]
        commits = parent and git.try_run(repo.dir, "rev-list", "--count", "%s..%s" % (by_tag[parent].sha, r.sha))
        db.execute("INSERT OR REPLACE INTO releases VALUES (?, ?, ?, ?, ?, ?, ?)",
                   (r.tag, ".".join(map(str, r.version)), r.sha, parent, date, int(commits) if commits else None,
                    changelog_section(repo.show(r.sha, "CHANGELOG.md"), r.tag)))


def changelog_section(changelog, tag):
    """The release's own section of librdkafka's CHANGELOG.md ("# librdkafka vX.Y.Z" up to the next)."""
    m = re.search(r"^# librdkafka %s\b.*?(?=^# librdkafka v|\Z)" % re.escape(tag), changelog, re.M | re.S)
    return m.group(0).strip() if m else None


def aa_pairs(releases):
    """RELEASES each under its own name and under a second one (the A/A batch's visits)."""
    return [x for r in releases for x in (r, r._replace(tag=r.tag + AA_SUFFIX))]


def slim(doc):
    """A kbench JSON cut to what the gate and the pages read: the iterations' scalar fields
    (no per-interval samples or rate curves) and the context keys that say what ran (those a
    comparison checks)."""
    out = []
    for b in doc.get("benchmarks", []):
        if kr.is_iteration(b):
            out.append({k: v for k, v in b.items() if k in kr.STANDARD_KEYS or (
                isinstance(v, (int, float)) and not isinstance(v, bool))})
    ctx = doc.get("context", {})
    return {"context": {k: v for k, v in ctx.items() if facts.context_comparison(k) in ("critical", "version")},
            "benchmarks": out}


class Runner:
    """Visits every release once per round, in an order shuffled per round; a visit already in
    the database is skipped. MEASURE(release, group, lib_dir, round) -> kbench JSON does the work."""

    def __init__(self, db, machine, row_set, kbench_sha, measure, log, batch="history"):
        self.db, self.machine, self.row_set, self.sha = db, machine, row_set, kbench_sha
        self.measure, self.log, self.batch = measure, log, batch

    def done(self, rnd, tag, group):
        key = (self.machine, self.batch, rnd, tag, group.name, definition(group))
        return self.db.execute("SELECT 1 FROM visits WHERE machine_id = ? AND batch = ? AND round = ? AND tag = ? "
                               "AND grp = ? AND json_extract(doc, '$.definition') = ?", key).fetchone() is not None

    def todo(self, releases, rounds, seed):
        out = []
        for rnd in range(1, rounds + 1):
            order = list(releases)
            random.Random("%s-%s-%d" % (seed, self.batch, rnd)).shuffle(order)
            out += [(rnd, r, g) for r in order for g in ROW_SETS[self.row_set] if not self.done(rnd, r.tag, g)]
        return out

    def run(self, releases, libs, rounds, seed):
        todo = self.todo(releases, rounds, seed)
        total = len(releases) * rounds * len(ROW_SETS[self.row_set])
        if len(todo) < total:
            self.log("resuming: %d of %d visits already measured on this machine" % (total - len(todo), total))
        started, spent = time.monotonic(), []
        for i, (rnd, r, g) in enumerate(todo, 1):
            left = (statistics.median(spent) * (len(todo) - i + 1)) if spent else None
            eta = "" if left is None else ", about %d min left" % round(left / 60) if left >= 90 else \
                ", about %d s left" % left
            self.log("[%d/%d] round %d, %s, %s%s" % (i, len(todo), rnd, r.tag, g.name, eta))
            t0 = time.monotonic()
            doc = self.measure(r, g, libs[r.tag], rnd)
            seconds = time.monotonic() - t0
            spent.append(seconds)
            self.db.execute("INSERT OR REPLACE INTO visits VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                            (self.machine, self.batch, rnd, r.tag, g.name, self.row_set, self.sha,
                             time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), seconds,
                             json.dumps(dict(slim(doc), definition=definition(g)), separators=(",", ":"))))
        return len(todo), time.monotonic() - started


class Clusters:
    """The run's clusters: kbench-mock needs none started; Kafka PINNED_KAFKA once per security."""

    def __init__(self, work):
        self.work, self.env, self.started = work, {}, []

    def env_for(self, cluster):
        if cluster == "mock":
            return {}, []
        if cluster not in self.env:
            folder = os.path.join(self.work, "kafka-" + cluster)
            self.started.append(folder)
            bootstrap = kafka.start(folder, version=PINNED_KAFKA, security=cluster, port_base="auto")
            args = ["--client-config=%s/client.properties" % folder] if cluster != "plaintext" else []
            self.env[cluster] = (dict(v.split("=", 1) for v in kafka.kbench_env(folder, bootstrap)), args)
        return self.env[cluster]

    def stop(self):
        for folder in self.started:
            kafka.stop(folder)


def kbench_measure(kbench_bin, clusters, out_dir, repo_path, log_path):
    """The MEASURE of a real run: one kbench process on the release's library."""
    warm = set()

    def measure(release, group, lib, rnd):
        env_extra, args = clusters.env_for(group.cluster)
        out = os.path.join(out_dir, "%d-%s-%s.json" % (rnd, release.tag, group.name))
        doc = build_stamp.read(lib.removesuffix("/lib") + "/build.json")
        env = dict(os.environ, LD_LIBRARY_PATH=lib, KBENCH_LIBRDKAFKA_SOURCE=build_stamp.librdkafka_source(
            doc, repo_path), **env_extra)
        cmd = [kbench_bin, "--benchmark_filter=" + group.filter] + list(group.args) + args
        if group.cluster not in warm:
            # A broker serves its first minute of load slower: an untimed process warms it up.
            warm.add(group.cluster)
            if group.cluster != "mock":
                proc.run(cmd + ["--window-seconds=1", "--warmup-seconds=%d" % WARMUP_SECONDS], env=env, log=log_path)
        cmd += ["--benchmark_out=" + out, "--benchmark_out_format=json"]
        rc = proc.run(cmd, env=env, log=log_path).returncode
        try:
            data = kr.load(out)
        except kr.BenchmarkJsonError as e:
            raise HistoryError("kbench on %s (%s) wrote no results (exit %d; log %s): %s"
                               % (release.tag, group.name, rc, log_path, e)) from e
        return data
    return measure


def load(db, machine, row_set):
    """{batch: {tag: {group: [doc per round]}}} and the releases, of one machine and row set."""
    visits = collections.defaultdict(lambda: collections.defaultdict(lambda: collections.defaultdict(list)))
    where, params = current_visits(row_set)
    for batch, tag, grp, doc in db.execute("SELECT batch, tag, grp, doc FROM visits WHERE machine_id = ? AND %s "
                                           "ORDER BY round" % where, [machine] + params):
        visits[batch][tag][grp].append(json.loads(doc))
    releases = [dict(zip(("tag", "version", "sha", "parent", "date", "commits", "changelog"), row))
                for row in db.execute("SELECT * FROM releases")]
    return visits, releases


def judge_step(base, new, groups, alpha=0.01, threshold=5.0):
    """The gate's verdict of one release step: {group: verdict document}, and the step's word."""
    out, words = {}, []
    for g in groups:
        if not base.get(g.name) or not new.get(g.name):
            words.append("not judged")
            continue
        result = verdict.compare_sides(stats.Side("base", base[g.name]), stats.Side("new", new[g.name]), alpha,
                                       threshold, metrics=set(g.metrics) if g.metrics else None, unpaired=True)
        out[g.name] = verdict.verdict_json(result)
        words.append("regression" if result["regressions"] else "improvement" if result["improvements"] else
                     "unchanged" if verdict.exit_code(result) == 0 else "not judged")
    for word in ("regression", "improvement", "not judged"):
        if word in words:
            return out, word
    return out, "unchanged"


def export(db, machine, row_set):
    """The published data: machine, releases, every visit's slim results, and the steps' verdicts.
    A release's own visits are those of its add batch if it has one, else of the history."""
    groups = ROW_SETS[row_set]
    batches, releases = load(db, machine, row_set)
    home = {tag: "add:" + tag if "add:" + tag in batches else "history"
            for name, b in batches.items() if name != AA_BATCH for tag in b}
    results = {tag: dict(batches[batch][tag]) for tag, batch in home.items()}
    releases = sorted((r for r in releases if r["tag"] in results), key=lambda r: librdkafka.version_key(r["tag"]))
    if not releases:
        raise HistoryError("no visits of this machine and row set %s in the database" % row_set)
    identity = json.loads(db.execute("SELECT identity FROM machines WHERE id = ?", (machine,)).fetchone()[0])
    where, params = current_visits(row_set)
    dates = db.execute("SELECT MIN(started), MAX(started), COUNT(*), MAX(round), GROUP_CONCAT(DISTINCT kbench_sha) "
                       "FROM visits WHERE machine_id = ? AND %s" % where, [machine] + params).fetchone()
    steps, sha = [], {r["tag"]: r["sha"] for r in releases}
    for r in releases:
        batch = batches[home[r["tag"]]]
        if r["parent"] in batch:
            per_group, word = judge_step(batch[r["parent"]], batch[r["tag"]], groups)
            step = {"base": r["parent"], "new": r["tag"], "verdict": word, "commits": r["commits"],
                    "groups": {name: compact_verdict(v) for name, v in per_group.items()}}
            if sha[r["parent"]] == r["sha"]:
                step["twin"] = True  # one commit under two tags: an A/A pair of librdkafka's own
            if DOCUMENTED.get(r["tag"], ("", "intended"))[1] != "intended":
                label, expected = DOCUMENTED[r["tag"]]
                step["documented"] = {"label": label, "expected": expected, "found": any(
                    row["verdict"] == expected for v in per_group.values() for k in ("regressions", "improvements")
                    for row in v.get(k, []))}
            if home[r["tag"]] != "history" and REFERENCE in batch and REFERENCE in batches.get("history", {}):
                # The reference release again: if it moved, so did the machine, and the step says so.
                step["reference"] = judge_step(batches["history"][REFERENCE], batch[REFERENCE], groups)[1]
            steps.append(step)
    pairs = batches.get(AA_BATCH, {})
    aa = []
    for tag in sorted((t for t in pairs if not t.endswith(AA_SUFFIX)), key=librdkafka.version_key):
        if pairs.get(tag + AA_SUFFIX):
            per_group, word = judge_step(pairs[tag], pairs[tag + AA_SUFFIX], groups)
            aa.append({"release": tag, "verdict": word,
                       "groups": {name: compact_verdict(v) for name, v in per_group.items()}})
    return {"data_version": DATA_VERSION, "kind": "kbench librdkafka release history", "row_set": row_set,
            "groups": [g._asdict() for g in groups], "kbench_commit": dates[4], "machine": identity,
            "machine_digest": machine_digest(identity),
            "broker": PINNED_KAFKA, "first_visit": dates[0], "last_visit": dates[1], "visits": dates[2],
            "rounds": dates[3], "releases": releases, "documented": DOCUMENTED, "steps": steps,
            "reference": REFERENCE, "results": results, "aa": aa, "aa_results": {t: dict(g) for t, g in pairs.items()}}


def compact_verdict(v):
    """A step's verdict without what the pages never show."""
    keep = ("name", "metric", "verdict", "change_pct", "ci_low_pct", "ci_high_pct", "p_value", "reason",
            "base_median", "new_median", "n_base", "n_new")
    rows = [{k: r.get(k) for k in keep} for key in ("regressions", "improvements", "unchanged", "inconclusive")
            for r in v.get(key, [])]
    return {"rows": rows, "unjudged": v.get("unjudged", []), "errored": v.get("errored", [])}


def check_data(doc, path):
    """A published data file, or HistoryError: its kind, version and one machine throughout."""
    if not isinstance(doc, dict) or doc.get("kind") != "kbench librdkafka release history":
        raise HistoryError("%s is not kbench's release history data" % path)
    if doc.get("data_version") != DATA_VERSION:
        raise HistoryError("%s has data version %s; this kbench reads %d"
                           % (path, doc.get("data_version"), DATA_VERSION))
    want = doc.get("machine_digest")
    if machine_digest(doc.get("machine")) != want:
        raise HistoryError("%s mixes machines: its machine does not match its digest" % path)
    tags = {r["tag"] for r in doc["releases"]}
    unlisted = sorted(set(doc["results"]) - tags)
    if unlisted:
        raise HistoryError("%s holds results of releases it does not list: %s" % (path, " ".join(unlisted)))
    return doc


def resolve_releases(tree, spans):
    """The Repo and the final releases of SPANS (FROM..TO or TAG, separated by commas), in
    version order, or HistoryError on bad input."""
    try:
        repo = librdkafka.Repo(os.path.expanduser(tree))
        found = {}
        for span in spans.split(","):
            for r in repo.releases_in(span if ".." in span or span == "all" else "%s..%s" % (span, span)):
                found[r.tag] = r
        return repo, sorted(found.values())
    except (librdkafka.BuildError, git.GitError) as e:
        raise HistoryError(str(e)) from e
