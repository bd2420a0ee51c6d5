#!/usr/bin/python3
"""Goal: scripts/bisect finds a planted 3 % instruction-count regression among 16 commits
in <= 5 build-and-measure steps. Same set-up as tests/scripts/history_tests.py TestBisect:
a throw-away repository of the fake kbench (tests/scripts/fake_kbench, work per iteration
proportional to COST), GOOD = COST 100, commits 1..16 after it, commit PLANTED sets COST
103. Run for PLANTED in 1, 6, 11, 16; each run's output goes to bisect/planted-N.txt.
    results/evidence/2026-12-01-s3/13/bisect_goal.py
"""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "scripts"))
from history_tests import fake_repo, git  # noqa: E402

for planted in (1, 6, 11, 16):
    tmp = tempfile.mkdtemp(prefix="h13-bisect-goal.")
    repo = os.path.join(tmp, "repo")
    fake_repo(repo)
    os.makedirs(os.path.join(repo, "tests"))
    with open(os.path.join(repo, "tests", "benchmark_list.txt"), "w") as f:
        f.write("Codec/compress/codec:fake/level:1/payload:az/record_bytes:100/batch_bytes:65536\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "benchmark list")
    good = git(repo, "rev-parse", "HEAD")
    shas = []
    for i in range(1, 17):
        path = os.path.join(repo, "cost.h" if i == planted else "notes.txt")
        with open(path, "w") as f:
            f.write("#define COST 103\n" if i == planted else "commit %d\n" % i)
        git(repo, "add", ".")
        git(repo, "commit", "-qm", "commit %d" % i)
        shas.append(git(repo, "rev-parse", "HEAD"))
    cmd = [os.path.join(ROOT, "scripts", "bisect"), good, shas[-1], "--filter", "^Codec/",
           "--repo", repo, "--out-dir", os.path.join(tmp, "out")]
    p = subprocess.run(cmd, capture_output=True, text=True)
    with open(os.path.join(HERE, "bisect", "planted-%d.txt" % planted), "w") as f:
        f.write("$ scripts/bisect GOOD BAD --filter '^Codec/' (planted at commit %d = %s)\n"
                % (planted, shas[planted - 1]))
        f.write(p.stdout + p.stderr + "exit %d\n" % p.returncode)
    print(planted, p.returncode, p.stdout.strip().splitlines()[-2:])
    shutil.rmtree(tmp, ignore_errors=True)
