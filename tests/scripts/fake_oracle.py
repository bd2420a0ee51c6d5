#!/usr/bin/python3
"""A stand-in for scripts/bench-commits in the tests of scripts/bisect (through
KBENCH_BISECT_ORACLE): takes bench-commits' arguments, measures nothing, and answers from
each side's "speed" (records/s, higher is better), with bench-commits' exit statuses
and a verdict.json in --out-dir, in milliseconds.

A side's speed: for tree:DIR@SHA and for kbench commits, the file `speed` at that commit
(DIR's, or --repo's); for a Kafka release, FAKE_SPEEDS ("3.8.1=100,3.9.1=80"). New is a
regression when it is more than 5 % slower than base: exit 1, else exit 0. A side whose
commit holds a file `flaky` answers exit 3: with a verdict (inconclusive) when the file
says "inconclusive N" and fewer than N rounds were asked (--runs), or always for
"inconclusive never"; without one (as a failed build) for "broken"; for "inconclusive
narrow" always, its row with an interval of +-3 points around the change. Kafka releases listed
in FAKE_FLAKY ("3.9.1=inconclusive never") do the same. Each call appends its arguments,
one line, to FAKE_ORACLE_LOG. With FAKE_ORACLE_SLEEP=S it first waits S seconds, and on
SIGTERM takes half a second to "clean up", logs "cleaned up" and exits 143."""

import json
import os
import signal
import subprocess
import sys
import time


def opt(args, name, default=None):
    return args[args.index(name) + 1] if name in args else default


def at_commit(repo, sha, path):
    proc = subprocess.run(["git", "-C", repo, "show", "%s:%s" % (sha, path)],
                          capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else None


def table(var):
    return dict(kv.split("=", 1) for kv in os.environ.get(var, "").split(",") if "=" in kv)


def side(args, which, positional):
    """(speed, flaky) of side 'a' or 'b'."""
    tree = opt(args, "--librdkafka-" + which)
    if tree:
        spec = tree[len("tree:"):]
        repo, sha = spec.rsplit("@", 1)
        return float(at_commit(repo, sha, "speed")), at_commit(repo, sha, "flaky")
    kafka = opt(args, "--kafka-" + which)
    if kafka:
        return float(table("FAKE_SPEEDS")[kafka]), table("FAKE_FLAKY").get(kafka)
    repo = opt(args, "--repo")
    sha = positional[0 if which == "a" else 1]
    return float(at_commit(repo, sha, "speed")), at_commit(repo, sha, "flaky")


def main():
    args = sys.argv[1:]
    with open(os.environ["FAKE_ORACLE_LOG"], "a") as f:
        f.write(" ".join(args) + "\n")
    if os.environ.get("FAKE_ORACLE_SLEEP"):
        def on_term(*_):
            time.sleep(0.5)
            with open(os.environ["FAKE_ORACLE_LOG"], "a") as f:
                f.write("cleaned up\n")
            sys.exit(143)
        signal.signal(signal.SIGTERM, on_term)
        time.sleep(float(os.environ["FAKE_ORACLE_SLEEP"]))
    positional = args[:2]  # bench-commits A B [options]: scripts/bisect puts them first
    out = opt(args, "--out-dir")
    os.makedirs(out, exist_ok=True)
    runs = int(opt(args, "--runs", "8"))
    (base, flaky_a), (new, flaky_b) = side(args, "a", positional), side(args, "b", positional)
    change = (new / base - 1.0) * 100.0
    row = {"name": "Produce/send/fake", "metric": "items_per_second", "change_pct": change}
    verdict = {"regressions": [], "improvements": [], "unchanged": [], "inconclusive": []}
    for flaky in (flaky_a, flaky_b):
        if not flaky:
            continue
        if flaky == "broken":
            print("bench-commits: error: build of new failed")
            sys.exit(3)
        limit = flaky.split()[1]
        if limit == "narrow":
            row = dict(row, ci_low_pct=change - 3.0, ci_high_pct=change + 3.0)
        if limit in ("never", "narrow") or runs < int(limit):
            verdict["inconclusive"].append(row)
            with open(os.path.join(out, "verdict.json"), "w") as f:
                json.dump(verdict, f)
            print("0 regressions, 0 improvements, 0 unchanged, 1 inconclusive")
            sys.exit(3)
    key = "regressions" if change < -5 else "improvements" if change > 5 else "unchanged"
    verdict[key].append(row)
    with open(os.path.join(out, "verdict.json"), "w") as f:
        json.dump(verdict, f)
    print("%s: %+.1f %%" % (key, change))
    sys.exit(1 if key == "regressions" else 0)


if __name__ == "__main__":
    main()
