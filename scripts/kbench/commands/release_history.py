"""librdkafka's release history (docs/release-history.md): every final release from v1.0.0
measured on one machine and one pinned cluster, a verdict for every release step, the
published data and its site.

  scripts/release-history run --tree ~/src/librdkafka         # measure (resumes where it stopped)
  scripts/release-history steps                               # the verdict of every release step
  scripts/release-history export                              # the published data, from the database
  scripts/release-history site --out site                     # the site, from the published data
  scripts/release-history check --tree ~/src/librdkafka HEAD  # a release candidate against the latest release

exit status: 0 done (check: the gate's 0), 1 a regression (check) or a failed run, 2 bad
usage or bad input (the history on disk unchanged), 3 check: something not judged.
"""

import json
import os
import tempfile
import time

import kbench
from kbench import build_stamp, cli, git, kafka_cluster, release_site, text
from kbench import release_history as rh
from kbench.commands import bench_commits, compare, librdkafka


def add_arguments(parser):
    sub = parser.add_subparsers(dest="command", required=True, parser_class=cli.ArgumentParser)
    tree_help = "a librdkafka git repository, a clone or a bare mirror (default: $KBENCH_LIBRDKAFKA_TREE)"
    r = sub.add_parser("run", help="build and measure every release of --releases, --rounds times")
    r.add_argument("--tree", default=os.environ.get("KBENCH_LIBRDKAFKA_TREE"), help=tree_help)
    r.add_argument("--releases", default="all", metavar="FROM..TO",
                   help="final releases from FROM to TO, both included (either end may be left out), or one "
                   "TAG; several, separated by commas (default: all)")
    r.add_argument("--rounds", type=cli.POSITIVE, default=5,
                   help="visits of every release, each round in its own shuffled order (default 5, the fewest "
                   "for a verdict at p < 0.01)")
    r.add_argument("--add", metavar="TAG", help="a new release: measure TAG with its branch parent and the "
                   "reference release %s in rounds of their own (its step is judged on them; the reference "
                   "against its history says whether the machine still measures alike); the rest is reused"
                   % rh.REFERENCE)
    r.add_argument("--aa", metavar="TAG,...", help="the gate's A/A check: measure each TAG twice, under its "
                   "name and as TAG%s, interleaved in rounds of their own; any step between the two names is a "
                   "false alarm (steps and the site list them)" % rh.AA_SUFFIX)
    r.add_argument("--out-dir", metavar="DIR", help="each visit's kbench JSON (default results/runs/release-history)")
    r.add_argument("--seed", default="kbench", help="the shuffles' seed (default: kbench)")
    for p in [r] + [sub.add_parser(n, help=h) for n, h in (
            ("steps", "the verdict of every release step of the database (or of --data)"),
            ("export", "write the published data (JSON) from the database"))]:
        p.add_argument("--db", default=os.environ.get("KBENCH_RELEASE_DB") or rh.DB_DEFAULT,
                       help="the database (default %(default)s; or KBENCH_RELEASE_DB)")
        p.add_argument("--rows", choices=sorted(rh.ROW_SETS), default="default",
                       help="the row set (default: default; quick: one mock row, a try in minutes)")
    sub.choices["steps"].add_argument("--data", metavar="FILE", help="a published data file instead of the database")
    sub.choices["export"].add_argument("--out", default=rh.PUBLISHED, help="the data file (default %(default)s)")
    s = sub.add_parser("site", help="the static site of the published data (opens offline from a file)")
    s.add_argument("--data", default=rh.PUBLISHED, help="the published data (default %(default)s)")
    s.add_argument("--out", required=True, metavar="DIR")
    c = sub.add_parser("check", help="a release candidate (tag, commit or branch of --tree) against the "
                       "latest release, interleaved on the same rows; the gate's exit status")
    c.add_argument("candidate", metavar="REV")
    c.add_argument("--tree", default=os.environ.get("KBENCH_LIBRDKAFKA_TREE"), help=tree_help)
    c.add_argument("--against", metavar="TAG", help="the release to judge against (default: the latest one)")
    c.add_argument("--rows", choices=sorted(rh.ROW_SETS), default="default")
    c.add_argument("--runs", type=cli.POSITIVE, default=8, help="rounds per group (default 8)")
    c.add_argument("--out-dir", metavar="DIR", help="default results/runs/release-check-<REV>")


def kbench_binary():
    binary = os.environ.get("KBENCH_BIN") or os.path.join(kbench.ROOT, "build", "kbench")
    if not os.access(binary, os.X_OK):
        cli.die("no kbench binary at %s: build it (cmake --build build) or set KBENCH_BIN" % binary)
    return binary


def need_tree(args):
    if not args.tree:
        cli.die("--tree DIR is needed (a librdkafka clone or mirror), or KBENCH_LIBRDKAFKA_TREE")


def build_all(repo, releases):
    """Every release's library folder, built unless it is; a build that fails ends the run."""
    flags, libs, t0 = librdkafka.choose_flags(), {}, time.monotonic()
    trees = [librdkafka.Tree(repo, r.tag) for r in releases]
    # One build per commit: a second tag on a commit (v2.7.0 on v2.6.1's) is the same library.
    first = {}
    for t in trees:
        first.setdefault(t.sha, t)
    todo = [t for t in first.values() if not librdkafka.is_built(librdkafka.tree_entry(t.sha, flags))]
    if todo:
        librdkafka.check_build_tools()
    for r, t in zip(releases, trees):
        if t in todo:
            cli.info("building %s (%d of %d to build)" % (r.tag, todo.index(t) + 1, len(todo)))
        libs[r.tag] = t.build(flags)
    if todo:
        cli.info("built %d release(s) in %d s" % (len(todo), time.monotonic() - t0))
    return libs


def cmd_run(args):
    need_tree(args)
    binary = kbench_binary()
    cli.check_out_file(args.db, "--db")
    if args.add and args.aa:
        cli.die("--add and --aa are runs of their own: one at a time")
    if (args.add or args.aa) and args.releases != "all":
        cli.die("--%s chooses its releases: not with --releases" % ("add" if args.add else "aa"))
    repo, releases = rh.resolve_releases(args.tree, args.aa or args.releases)
    batch = rh.AA_BATCH if args.aa else "history"
    if args.add:
        parents = rh.branch_parents(repo, releases)
        if args.add not in parents:
            cli.die("--add %s: not a final release of %s from v1.0.0 on" % (args.add, repo.path))
        wanted = {args.add, parents[args.add], rh.REFERENCE}
        releases, batch = [r for r in releases if r.tag in wanted], "add:" + args.add
    cli.dry_run_exit()
    libs = build_all(repo, releases)
    out_dir = os.path.abspath(args.out_dir or os.path.join(kbench.ROOT, "results", "runs", "release-history"))
    os.makedirs(out_dir, exist_ok=True)
    db = rh.connect(args.db)
    rh.record_releases(db, repo, releases)
    if args.aa:  # the second names share their release's library
        libs.update({r.tag + rh.AA_SUFFIX: libs[r.tag] for r in releases})
        releases = rh.aa_pairs(releases)
    identity = rh.machine_identity(binary)
    machine = rh.machine_id(db, identity)
    cli.info("%d releases x %d rounds of row set %s on %s (%d cores); the database: %s"
             % (len(releases), args.rounds, args.rows, identity["cpu_model"], identity["cores"], args.db))
    clusters = rh.Clusters(tempfile.mkdtemp(prefix="kbench-release-history."))
    measure = rh.kbench_measure(binary, clusters, out_dir, repo.path, os.path.join(out_dir, "kbench.log"))
    runner = rh.Runner(db, machine, args.rows, git.head(kbench.ROOT) or "unknown", measure, cli.info, batch)
    try:
        done, seconds = runner.run(releases, libs, args.rounds, args.seed)
    except kafka_cluster.KafkaError as e:
        cli.die("the pinned Kafka %s did not start: %s" % (rh.PINNED_KAFKA, e), 1)
    finally:
        clusters.stop()
    cli.info("measured %d visit(s) in %d min; next: scripts/release-history steps" % (done, seconds / 60))
    return 0


def this_machine(db):
    machine = rh.machine_id(db, rh.machine_identity(kbench_binary()), add=False)
    if machine is None:
        raise rh.HistoryError("the database holds no visits of this machine (another machine's runs are "
                              "another series: export on that machine)")
    return machine


def cmd_export(args):
    cli.check_out_file(args.out, "--out")
    cli.dry_run_exit()
    db = rh.connect(args.db, create=False)
    doc = rh.export(db, this_machine(db), args.rows)
    with open(args.out, "w") as f:
        json.dump(doc, f, separators=(",", ":"), sort_keys=True)
        f.write("\n")
    cli.info("%d releases, %d steps, %d visits: %s (%.1f MB)" % (len(doc["releases"]), len(doc["steps"]),
             doc["visits"], args.out, os.path.getsize(args.out) / 1e6))
    return 0


def read_data(path):
    return rh.check_data(cli.read_json(path, what="release history data"), path)


def cmd_steps(args):
    cli.dry_run_exit()
    if args.data:
        doc = read_data(args.data)
    else:
        db = rh.connect(args.db, create=False)
        doc = rh.export(db, this_machine(db), args.rows)
    rows = []
    for s in doc["steps"]:
        moved = [r for g in s["groups"].values() for r in g["rows"] if r["verdict"] in ("regression", "improvement")]
        rows.append((s["base"], s["new"], s["verdict"].upper() if s["verdict"] == "regression" else s["verdict"],
                     s["commits"] if s["commits"] is not None else "", "; ".join(
                         ["%s %s %+.1f%%" % (r["name"].split("/real_time")[0], r["metric"], r["change_pct"])
                          for r in moved] + (["the reference %s: %s (%s)" % (doc["reference"], s["reference"],
                                                                             release_site.reference_meaning(s["reference"]))]
                                                 if s.get("reference", "unchanged") != "unchanged" else []))))
    print(text.table(("FROM", "TO", "VERDICT", "COMMITS", "WHAT MOVED"), rows))
    documented = [s for s in doc["steps"] if "documented" in s]
    for s in documented:
        cli.info("documented %s at %s: %s (%s)" % (s["documented"]["expected"], s["new"], "found" if
                 s["documented"]["found"] else "NOT FOUND", s["documented"]["label"]))
    pairs = release_site.aa_verdicts(doc)
    for name, word in pairs:
        cli.info("A/A %s: %s" % (name, word))
    if pairs:
        cli.info("A/A: %d pair(s), %d step(s) among them (each a false alarm)"
                 % (len(pairs), sum(w in ("regression", "improvement") for _, w in pairs)))
    return 0


def cmd_site(args):
    cli.check_out_dir(args.out, "--out")
    cli.dry_run_exit()
    doc = read_data(args.data)
    pages = release_site.write(doc, args.out)
    cli.info("%d page(s) in %s (open %s)" % (pages, args.out, os.path.join(args.out, "index.html")))
    return 0


def judge_on(d, group):
    """The exit status of the runs in D judged on GROUP's own metrics, as its release steps are
    (bench-commits decides on each row's primary metrics: not what this group is about)."""
    sides = [os.path.join(d, side + ".json") for side in ("base", "new")]
    if not all(os.path.isfile(p) for p in sides):
        return 3  # bench-commits said why
    cli.info("group %s: judged on %s" % (group.name, ", ".join(group.metrics)))
    try:
        result = compare.judge(sides[:1], sides[1:], metric=list(group.metrics))
    except compare.CompareError as e:
        cli.die(e)
    compare.write(result, json_path=os.path.join(d, "verdict-%s.json" % "-".join(group.metrics)))
    return compare.exit_code(result)


def cmd_check(args):
    """bench-commits per group of rows: the latest release (A) against the candidate (B)."""
    need_tree(args)
    repo, releases = rh.resolve_releases(args.tree, "all")
    against = args.against or releases[-1].tag
    if against not in {r.tag for r in releases}:
        cli.die("--against %s is not a final release of %s" % (against, repo.path))
    try:
        librdkafka.Tree(repo, args.candidate).check()
    except librdkafka.BuildError as e:
        cli.die(e)
    out = args.out_dir or os.path.join(kbench.ROOT, "results", "runs",
                                       "release-check-" + args.candidate.replace("/", "_"))
    cli.check_out_dir(out, "--out-dir")
    cli.dry_run_exit()
    worst = 0
    for g in rh.ROW_SETS[args.rows]:
        argv = ["HEAD", "HEAD", "--runs", str(args.runs), "--out-dir", os.path.join(out, g.name),
                "--build-cache", build_stamp.cache_dir("bench-commits"),
                "--librdkafka-a", "tree:%s@%s" % (args.tree, against),
                "--librdkafka-b", "tree:%s@%s" % (args.tree, args.candidate)]
        if g.cluster != "mock":
            argv += ["--kafka-a", rh.PINNED_KAFKA, "--kafka-b", rh.PINNED_KAFKA]
            os.environ["KBENCH_KAFKA_SECURITY"] = g.cluster
        cli.info("group %s: %s against %s" % (g.name, args.candidate, against))
        status = bench_commits.run(bench_commits.parse(argv + ["--filter", g.filter, "--"] + list(g.args)))
        if g.metrics and status != 2:
            status = judge_on(os.path.join(out, g.name), g)
        # Bad input (2) outranks the verdicts: 3 not judged, 1 a regression, 0 none.
        worst = 2 if 2 in (worst, status) else max(worst, status)
    cli.info("verdict of %s against %s: exit %d (0 nothing regressed, 1 a regression, 3 not judged); results in %s"
             % (args.candidate, against, worst, out))
    return worst


def main(args):
    try:
        return {"run": cmd_run, "steps": cmd_steps, "export": cmd_export, "site": cmd_site,
                "check": cmd_check}[args.command](args)
    except rh.HistoryError as e:
        cli.die(e)
    except librdkafka.BuildError as e:
        cli.die(e, e.status)


