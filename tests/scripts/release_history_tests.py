"""scripts/release-history on a small repository shaped like librdkafka's history and on
synthetic visits (the measuring is replaced, the rest is the product's): every release once
per round in a shuffled order, a killed run resumed, one machine per series, a verdict per
release step, bad input refused with the history unchanged, and the site drawn by headless
Chromium from files."""

import contextlib
import html.parser
import io
import json
import os
import random
import re
import shutil
import subprocess
import tempfile
import unittest
from unittest import mock

import browser
import fake_librdkafka as fake
import make_json
from kbench import release_history as rh
from kbench import release_site
from kbench.commands import release_history as rh_command

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "scripts", "release-history")
ROW = "Produce/send/acks:1/codec:none/record_bytes:100/threads:1/producers:1/real_time"
IDENTITY = {"cpu_model": "Test CPU", "cores": 2, "memory_gib": 24, "kernel": "6.1", "distribution": "Debian 12",
            "compiler": "GCC: 12.2.0"}
# Records/s of each release; v2.6.1 (and its second tag v2.7.0) are 30 % slower.
SPEED = {"v1.0.0": 1e6, "v1.0.1": 1e6, "v1.1.0": 1e6, "v2.6.1": 7e5, "v2.7.0": 7e5, "v2.8.0": 7e5, "v2.8.1": 7e5}


def visit(tag, rng):
    rate = SPEED[tag.removesuffix(rh.AA_SUFFIX)] * rng.uniform(0.99, 1.01)
    return {"context": {"librdkafka_version": tag[1:], "git_sha": "0" * 40, "target": "mock"},
            "benchmarks": [{"name": ROW, "run_name": ROW, "run_type": "iteration", "repetitions": 1,
                            "repetition_index": 0, "threads": 1, "iterations": 1, "real_time": 2e9,
                            "cpu_time": 1e9, "time_unit": "ns", "items_per_second": rate,
                            "window_seconds": 2.0, "kbench_intervals": [rate] * 2}]}


class Fixture(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kbench-release-history-test.")
        self.addCleanup(shutil.rmtree, self.tmp)
        self.repo_dir = os.path.join(self.tmp, "rdk")
        fake.make_release_repo(self.repo_dir)
        self.repo, self.releases = rh.resolve_releases(self.repo_dir, "all")
        self.db_path = os.path.join(self.tmp, "h.sqlite")
        self.db = rh.connect(self.db_path)
        rh.record_releases(self.db, self.repo, self.releases)
        self.calls = []

    def measure(self, release, group, lib, rnd):
        self.calls.append((rnd, release.tag, group.name))
        return visit(release.tag, random.Random("%s-%d" % (release.tag, rnd)))

    def runner(self, identity=IDENTITY, measure=None, batch="history"):
        machine = rh.machine_id(self.db, identity)
        return rh.Runner(self.db, machine, "quick", "abc", measure or self.measure, lambda _: None, batch), machine

    def libs(self):
        return {r.tag: "/nowhere/lib" for r in self.releases}


class RunsAndResumes(Fixture):
    def test_every_release_once_per_round_in_shuffled_orders(self):
        runner, _ = self.runner()
        runner.run(self.releases, self.libs(), 3, "seed")
        tags = [r.tag for r in self.releases]
        orders = [[t for rnd, t, _ in self.calls if rnd == n] for n in (1, 2, 3)]
        for order in orders:
            self.assertEqual(sorted(order), sorted(tags))
        self.assertEqual(len({tuple(o) for o in orders}), 3, "every round has its own order")

    def test_a_killed_run_resumes_where_it_stopped(self):
        def dies_at_the_fifth(release, group, lib, rnd):
            if len(self.calls) == 4:
                raise KeyboardInterrupt
            return self.measure(release, group, lib, rnd)
        runner, _ = self.runner(measure=dies_at_the_fifth)
        with self.assertRaises(KeyboardInterrupt):
            runner.run(self.releases, self.libs(), 2, "seed")
        first = list(self.calls)
        self.calls.clear()
        runner, _ = self.runner()
        runner.run(self.releases, self.libs(), 2, "seed")
        self.assertEqual(len(first) + len(self.calls), 2 * len(self.releases))
        self.assertFalse(set(first) & set(self.calls), "no visit is measured twice")

    def test_a_group_whose_rows_changed_is_measured_again_and_never_mixed_in(self):
        runner, machine = self.runner()
        runner.run(self.releases, self.libs(), 1, "seed")
        old = rh.ROW_SETS["quick"][0]
        changed = old._replace(args=old.args + ("--window-seconds=1",))
        self.calls.clear()
        with mock.patch.dict(rh.ROW_SETS, quick=(changed,)):
            with self.assertRaisesRegex(rh.HistoryError, "no visits"):  # the old rows' visits are not this group's
                rh.export(self.db, machine, "quick")
            runner.run(self.releases, self.libs(), 1, "seed")
            self.assertEqual(len(self.calls), len(self.releases), "every visit measured again")
            self.assertEqual(rh.export(self.db, machine, "quick")["visits"], len(self.releases))
        self.calls.clear()
        runner.run(self.releases, self.libs(), 1, "seed")
        self.assertEqual(len(self.calls), len(self.releases), "and back: the replaced visits are stale again")

    def test_another_machine_is_a_series_of_its_own(self):
        runner, mine = self.runner()
        runner.run(self.releases, self.libs(), 1, "seed")
        other = dict(IDENTITY, cpu_model="Other CPU")
        runner, theirs = self.runner(identity=other)
        runner.run(self.releases, self.libs(), 1, "seed")
        self.assertNotEqual(mine, theirs)
        doc = rh.export(self.db, mine, "quick")
        self.assertEqual(doc["visits"], len(self.releases))
        self.assertEqual(doc["machine"], IDENTITY)


class Builds(Fixture):
    def test_one_build_per_commit(self):
        from kbench.commands import release_history as command
        env = {"KBENCH_CACHE": os.path.join(self.tmp, "cache"), "FAKE_CONFIGURE_LOG": os.path.join(self.tmp, "c.log")}
        with mock.patch.dict(os.environ, env), mock.patch.object(command.cli, "info") as info:
            libs = command.build_all(self.repo, self.releases)
        self.assertEqual(set(libs), {r.tag for r in self.releases})
        self.assertEqual(libs["v2.7.0"], libs["v2.6.1"], "a second tag on a commit is the same library")
        with open(env["FAKE_CONFIGURE_LOG"]) as f:
            self.assertEqual(len(f.read().splitlines()), len({r.sha for r in self.releases}))
        said = [c.args[0] for c in info.call_args_list if c.args[0].startswith("building v")]
        self.assertIn("building v2.6.1 (", " ".join(said))
        self.assertNotIn("building v2.7.0", " ".join(said))


class Steps(Fixture):
    def steps(self, rounds=5):
        runner, machine = self.runner()
        runner.run(self.releases, self.libs(), rounds, "seed")
        return {(s["base"], s["new"]): s for s in rh.export(self.db, machine, "quick")["steps"]}

    def test_branch_parents(self):
        parents = rh.branch_parents(self.repo, self.releases)
        self.assertEqual(parents, {"v1.0.0": None, "v1.0.1": "v1.0.0", "v1.1.0": "v1.0.0", "v2.6.1": "v1.1.0",
                                   "v2.7.0": "v2.6.1", "v2.8.0": "v2.6.1", "v2.8.1": "v2.8.0"})

    def test_a_verdict_for_every_step(self):
        steps = self.steps()
        self.assertEqual(len(steps), len(self.releases) - 1)
        self.assertEqual(steps[("v1.1.0", "v2.6.1")]["verdict"], "regression")
        row = steps[("v1.1.0", "v2.6.1")]["groups"]["mock"]["rows"][0]
        self.assertAlmostEqual(row["change_pct"], -30, delta=2)
        for step in (("v1.0.0", "v1.1.0"), ("v1.0.0", "v1.0.1"), ("v2.6.1", "v2.8.0")):
            self.assertEqual(steps[step]["verdict"], "unchanged", step)

    def test_a_release_measured_twice_under_two_names_is_no_step(self):
        self.assertEqual(self.steps()[("v2.6.1", "v2.7.0")]["verdict"], "unchanged")

    def test_a_new_release_is_judged_with_its_parent_and_the_reference_says_if_the_machine_moved(self):
        self.steps()
        slower = {}

        def on_a_slower_day(release, group, lib, rnd):
            doc = self.measure(release, group, lib, rnd)
            doc["benchmarks"][0]["items_per_second"] *= 0.9
            slower[release.tag] = True
            return doc
        new = [r for r in self.releases if r.tag in ("v2.8.1", "v2.8.0", "v1.1.0")]
        with mock.patch.object(rh, "REFERENCE", "v1.1.0"):
            runner, machine = self.runner(measure=on_a_slower_day, batch="add:v2.8.1")
            runner.run(new, self.libs(), 5, "seed")
            doc = rh.export(self.db, machine, "quick")
        self.assertEqual(set(slower), {"v2.8.1", "v2.8.0", "v1.1.0"})
        step = next(s for s in doc["steps"] if s["new"] == "v2.8.1")
        # Measured beside its parent on the same (slower) day, the new release did not move...
        self.assertEqual(step["verdict"], "unchanged")
        # ...and the reference, against its history visits, shows that the machine did.
        self.assertEqual(step["reference"], "regression")
        self.assertIn("the machine measures differently now", release_site.reference_note(doc, step))
        # A reference the gate could not judge says nothing either way.
        unknown = release_site.reference_note(doc, dict(step, reference="not judged"))
        self.assertIn("is unknown", unknown)
        self.assertNotIn("differently", unknown)
        self.assertEqual(len(doc["results"]["v2.8.0"]["mock"]), 5, "the parent's own visits stay its history's")

    def test_four_rounds_cannot_judge(self):
        # 4 against 4 visits: no rank test reaches p < 0.01, so no step can be judged.
        self.assertEqual({s["verdict"] for s in self.steps(rounds=4).values()}, {"not judged"})


class AA(Fixture):
    def aa_doc(self, slower=1.0):
        """The export after a history of every release and an A/A batch of two, whose second
        names measure SLOWER times the speed."""
        runner, machine = self.runner()
        runner.run(self.releases, self.libs(), 5, "seed")

        def measure(release, group, lib, rnd):
            doc = self.measure(release, group, lib, rnd)
            if release.tag.endswith(rh.AA_SUFFIX):
                doc["benchmarks"][0]["items_per_second"] *= slower
            return doc
        pairs = rh.aa_pairs([r for r in self.releases if r.tag in ("v1.1.0", "v2.8.0")])
        runner, machine = self.runner(measure=measure, batch=rh.AA_BATCH)
        runner.run(pairs, {r.tag: "/nowhere/lib" for r in pairs}, 5, "seed")
        self.assertEqual(len([c for c in self.calls if c[1].endswith(rh.AA_SUFFIX)]), 2 * 5)
        doc = rh.export(self.db, machine, "quick")
        path = os.path.join(self.tmp, "data.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        return doc, run("steps", "--data", path)

    def test_a_release_measured_twice_under_two_names_is_no_step(self):
        doc, steps = self.aa_doc()
        self.assertEqual([(p["release"], p["verdict"]) for p in doc["aa"]],
                         [("v1.1.0", "unchanged"), ("v2.8.0", "unchanged")])
        self.assertEqual([s["new"] for s in doc["steps"] if s.get("twin")], ["v2.7.0"])
        self.assertNotIn("v1.1.0-aa", [r["tag"] for r in doc["releases"]], "a second name is no release")
        self.assertEqual(steps.returncode, 0, steps.stderr)
        self.assertIn("A/A: 3 pair(s), 0 step(s) among them", steps.stderr)

    def test_a_difference_planted_between_the_two_names_is_a_step(self):
        doc, steps = self.aa_doc(slower=0.9)
        self.assertEqual({p["verdict"] for p in doc["aa"]}, {"regression"})
        self.assertIn("A/A: 3 pair(s), 2 step(s) among them", steps.stderr)


def run(*args, **env):
    return subprocess.run([SCRIPT] + list(args), capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, KBENCH_BIN="/bin/true", **env))


class Check(Fixture):
    """`check` with bench-commits replaced: what it decides on each group's runs."""

    def check(self, cpu_shift):
        """check's exit status when the candidate's CPU per record moves by CPU_SHIFT and its
        records/s do not (each group's runs written as bench-commits merges them)."""
        row = "Produce/send/acks:1/codec:none/record_bytes:100/threads:1/producers:1/rate:100000/real_time"

        def bench_commits(args):
            d = args.out_dir
            os.makedirs(d, exist_ok=True)
            for side, shift, seed in (("base", 0.0, 1), ("new", cpu_shift, 2)):
                make_json.write(os.path.join(d, side + ".json"), make_json.make(
                    [(row, {"items_per_second": 1e5, "cpu_us_per_record": 3.0}, {"cpu_us_per_record": shift})],
                    reps=8, seed=seed, with_aggregates=False))
            return 0  # its own verdict, on the rows' primary metrics: nothing moved
        args = mock.Mock(candidate="v2.8.1", tree=self.repo_dir, against="v2.8.0", rows="default", runs=8,
                         out_dir=os.path.join(self.tmp, "check"))
        with mock.patch.object(rh_command.bench_commits, "run", side_effect=bench_commits), \
                mock.patch.object(rh_command.bench_commits, "parse",
                                  side_effect=lambda argv: mock.Mock(out_dir=argv[argv.index("--out-dir") + 1])), \
                mock.patch.dict(os.environ), contextlib.redirect_stdout(io.StringIO()):
            return rh_command.cmd_check(args)

    def test_a_group_with_metrics_of_its_own_is_judged_on_them(self):
        # broker-cpu exists for CPU per record (the wake-ups of 1.7.0): +30 % there is a regression.
        self.assertEqual(self.check(0.30), 1)
        self.assertTrue(os.path.isfile(os.path.join(self.tmp, "check", "broker-cpu", "verdict-cpu_us_per_record.json")))

    def test_nothing_moved_exits_0(self):
        self.assertEqual(self.check(0.0), 0)


class BadInput(Fixture):
    def assert_refused(self, p, says):
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn(says, p.stderr)
        self.assertNotIn("Traceback", p.stderr)

    def test_unknown_release_and_backwards_range(self):
        before = os.path.getmtime(self.db_path)
        self.assert_refused(run("run", "--tree", self.repo_dir, "--releases", "v9.9.9..", "--db", self.db_path),
                            "'v9.9.9' is not a final release")
        self.assert_refused(run("run", "--tree", self.repo_dir, "--releases", "v2.8.0..v1.1.0", "--db", self.db_path),
                            "v2.8.0 comes after v1.1.0")
        self.assert_refused(run("run", "--tree", self.tmp, "--db", self.db_path), "is not inside a git repository")
        self.assertEqual(os.path.getmtime(self.db_path), before)

    def test_corrupt_database(self):
        bad = os.path.join(self.tmp, "bad.sqlite")
        with open(bad, "w") as f:
            f.write("not a database\n" * 100)
        self.assert_refused(run("steps", "--db", bad), "not a usable release history database")
        with open(bad) as f:
            self.assertEqual(f.read(), "not a database\n" * 100)

    def test_data_of_another_machine_mixed_in(self):
        runner, machine = self.runner()
        runner.run(self.releases, self.libs(), 1, "seed")
        doc = rh.export(self.db, machine, "quick")
        doc["machine"] = dict(doc["machine"], cpu_model="Other CPU")
        path = os.path.join(self.tmp, "mixed.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        out = os.path.join(self.tmp, "site")
        self.assert_refused(run("site", "--data", path, "--out", out), "mixes machines")
        self.assertFalse(os.path.exists(out))
        with open(path, "w") as f:
            f.write('{"kind": "something else"}')
        self.assert_refused(run("steps", "--data", path), "is not kbench's release history data")


class Links(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.links = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in ("a", "script") and (a.get("href") or a.get("src")):
            self.links.append(a.get("href") or a.get("src"))


@unittest.skipUnless(browser.CHROMIUM or os.environ.get("CI") == "true",
                     "chromium is missing: scripts/setup installs it")
class Site(Fixture):
    def check_site(self, out, pair):
        """Opens OUT's index and compare.html?PAIR: no error logged, every timeline drawn over every
        release it has data for, every link of every page resolving. The index's and the comparison's HTML."""
        with browser.chromium() as chromium:
            index = browser.Page(chromium, "file://%s/index.html" % out)
            dom = index.drawn()
            compare = browser.Page(chromium, "file://%s/compare.html?%s" % (out, pair))
            compare.tab.wait_for_selector("td")
            compared = compare.tab.content()
        self.assertEqual(index.errors + compare.errors, [], "the pages logged errors")
        plots = re.findall(r'<div class="plot[ "][^>]*>', dom)
        self.assertIn('data-plots="%d"' % len(plots), dom)
        for div in plots:
            self.assertEqual(re.search(r'data-drawn="([0-9]+)"', div).group(1),
                             re.search(r'data-releases="([0-9]+)"', div).group(1), div)
        for page in ["index.html", "compare.html"] + ["steps/" + f for f in os.listdir(out + "/steps")]:
            links = Links()
            with open(os.path.join(out, page)) as f:
                links.feed(f.read())
            for link in links.links:
                target = os.path.normpath(os.path.join(out, os.path.dirname(page), link.split("?")[0]))
                self.assertTrue(os.path.isfile(target), "%s links to %s, which is missing" % (page, link))
        return dom, compared

    def test_the_published_site(self):
        with open(rh.PUBLISHED) as f:
            doc = rh.check_data(json.load(f), rh.PUBLISHED)
        out = os.path.join(self.tmp, "published")
        p = run("site", "--out", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        tags = [r["tag"] for r in doc["releases"]]
        dom, compared = self.check_site(out, "a=%s&b=%s" % (tags[0], tags[-1]))
        self.assertEqual(len(re.findall(r'<div class="plot[ "]', dom)), len(release_site.series(doc)))
        self.assertIn("%s against %s" % (tags[0], tags[-1]), compared)

    def test_the_site_draws_every_release_and_every_link_resolves(self):
        runner, machine = self.runner()
        runner.run(self.releases, self.libs(), 5, "seed")
        data = os.path.join(self.tmp, "data.json")
        with open(data, "w") as f:
            json.dump(rh.export(self.db, machine, "quick"), f)
        out = os.path.join(self.tmp, "site")
        p = run("site", "--data", data, "--out", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        dom, compared = self.check_site(out, "a=v1.1.0&b=v2.6.1")
        self.assertIn('data-plots="1"', dom)
        self.assertEqual(re.findall(r'data-drawn="([0-9]+)"', dom), [str(len(self.releases))])
        self.assertEqual(dom.count('class="regression"'), 1)
        self.assertIn("v2.6.1 and v2.7.0 (one commit)", dom)
        self.assertRegex(compared, r"<td>-(29|30)\.[0-9] %</td>")
        with open(os.path.join(out, "data.csv")) as f:
            self.assertEqual(len(f.read().splitlines()), 1 + 5 * len(self.releases))
        self.assertEqual(release_site.short_name(ROW), "Produce/send/acks:1/codec:none/record_bytes:100")


if __name__ == "__main__":
    unittest.main()
