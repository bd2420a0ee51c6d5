"""Tests of the CI recipe docs/ci-workflow.yml: it parses as a GitHub Actions workflow of the
documented shape, and its `run:` steps work when run here, on a throw-away repository whose
kbench is the fake one (tests/scripts/fake_kbench): the pull-request job measures two
commits, writes the Markdown verdict and gates on it; the main job adds a run to the
history, looks for change points and writes the dashboard. Checkout, setup, the comment and
the uploads need GitHub and are not run."""

import os
import re
import shutil
import subprocess
import tempfile
import unittest

import yaml  # Debian's python3-yaml
from history_tests import ROOT, fake_repo, git

WORKFLOW = os.path.join(ROOT, "docs", "ci-workflow.yml")
NOT_LOCAL = {"checkout", "setup", "comment", "evidence", "publish"}


def load():
    with open(WORKFLOW, encoding="utf-8") as f:
        return yaml.safe_load(f)


class TestShape(unittest.TestCase):
    def test_triggers_jobs_and_steps(self):
        wf = load()
        on = wf[True] if True in wf else wf["on"]  # YAML 1.1 reads a bare `on` as true
        self.assertIn("pull_request", on)
        self.assertEqual(on["push"]["branches"], ["main"])
        pr, main = wf["jobs"]["verdict"], wf["jobs"]["history"]
        self.assertIn("pull_request", pr["if"])
        self.assertIn("push", main["if"])
        runs = "\n".join(s.get("run", "") for s in pr["steps"])
        self.assertRegex(runs, r"scripts/bench-commits \"\$BASE\" \"\$HEAD\" --instructions")
        self.assertIn("--format markdown", runs)
        self.assertIn("scripts/bench --profile", "\n".join(s.get("run", "") for s in main["steps"]))
        for job in (pr, main):
            ids = [s["id"] for s in job["steps"]]
            self.assertEqual(len(ids), len(set(ids)))
            for s in job["steps"]:
                self.assertTrue(("run" in s) != ("uses" in s), s)


def expand(text, ctx):
    """${{ expression }} -> its value in ctx (dotted paths only, as the recipe uses)."""
    def one(m):
        return str(ctx[m.group(1).strip()])
    return re.sub(r"\$\{\{([^}]*)\}\}", one, text)


def run_job(test, job, ctx, cwd, env):
    """Runs the job's local steps in order, as Actions would (bash -e, GITHUB_OUTPUT)."""
    results = {}
    for step in job["steps"]:
        if step["id"] in NOT_LOCAL or "run" not in step:
            continue
        out = os.path.join(cwd, ".github-output-" + step["id"])
        open(out, "w").close()
        step_env = dict(os.environ, **env, GITHUB_OUTPUT=out,
                        GITHUB_STEP_SUMMARY=os.path.join(cwd, ".summary.md"))
        for k, v in (step.get("env") or {}).items():
            step_env[k] = expand(str(v), ctx)
        p = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=cwd, env=step_env,
                           capture_output=True, text=True, timeout=300,
                           stdin=subprocess.DEVNULL)
        results[step["id"]] = p
        with open(out) as f:
            for line in f:
                k, _, v = line.rstrip("\n").partition("=")
                ctx["steps.%s.outputs.%s" % (step["id"], k)] = v
        if p.returncode != 0:
            break
    return results


@unittest.skipUnless(all(shutil.which(t) for t in ("git", "cmake", "ninja", "cc", "valgrind")),
                     "needs git, cmake, ninja, cc, valgrind")
class TestStepsRunLocally(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kbench-ci-test.")
        self.repo = os.path.join(self.tmp, "repo")
        fake_repo(self.repo)
        with open(os.path.join(self.repo, "benchmarks", "profiles.conf"), "w") as f:
            f.write("quick  ^Codec/compress/codec:fake/\n")
        git(self.repo, "commit", "-qam", "profile of the fake")
        self.base = git(self.repo, "rev-parse", "HEAD")
        self.wf = load()
        self.ctx = {"env.KBENCH_CI_PROFILE": self.wf["env"]["KBENCH_CI_PROFILE"],
                    "env.KBENCH_CI_THRESHOLD": self.wf["env"]["KBENCH_CI_THRESHOLD"],
                    "github.event.pull_request.base.sha": self.base,
                    "github.event.pull_request.number": 1, "github.token": "unused"}

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def commit_cost(self, cost):
        with open(os.path.join(self.repo, "cost.h"), "w") as f:
            f.write("#define COST %d\n" % cost)
        git(self.repo, "commit", "-qam", "cost %d" % cost)
        return git(self.repo, "rev-parse", "HEAD")

    def test_pull_request_job(self):
        head = self.commit_cost(110)  # 10 % more instructions per iteration
        self.ctx["github.event.pull_request.head.sha"] = head
        res = run_job(self, self.wf["jobs"]["verdict"], self.ctx, self.repo, {})
        self.assertEqual(list(res), ["filter", "measure", "markdown", "gate"],
                         {k: p.stderr[-1500:] for k, p in res.items()})
        self.assertEqual(self.ctx["steps.measure.outputs.rc"], "1")
        with open(os.path.join(self.repo, "ci-verdict", "comment.md")) as f:
            md = f.read()
        self.assertIn("### kbench: REGRESSION", md)
        self.assertRegex(md, r"\| `Codec/compress/codec:fake/[^`]*` *\| instructions *\| primary *\|"
                             r" *1:1 \|[^|]+\|[^|]+\| *\+(9|10)\.\d+%")
        self.assertEqual(res["gate"].returncode, 1)

    def test_main_job(self):
        # A bootstrap address keeps scripts/bench from starting a broker (the fake ignores it).
        env = {"KBENCH_HISTORY_DB": os.path.join(self.tmp, "history.sqlite"),
               "KBENCH_BOOTSTRAP": "127.0.0.1:9"}
        res = run_job(self, self.wf["jobs"]["history"], self.ctx, self.repo, env)
        self.assertEqual(list(res), ["bench", "changes", "report"],
                         {k: p.stderr[-1500:] for k, p in res.items()})
        for k, p in res.items():
            self.assertEqual(p.returncode, 0, (k, p.stdout + p.stderr))
        self.assertIn("history: added 1 run(s)", res["bench"].stderr)
        self.assertIn("too few runs", res["changes"].stdout)
        self.assertTrue(os.path.isfile(os.path.join(self.repo, "ci-site", "family-Codec.html")))


if __name__ == "__main__":
    unittest.main()
