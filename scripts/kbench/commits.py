"""The arithmetic and verdict reads of scripts/bench-commits (bash has no floating point and
no JSON).

    python -m kbench.commits positive X              # exit 0 when X is a number > 0
    python -m kbench.commits look-pairs ALPHA LOOKS  # rounds a paired look at ALPHA/LOOKS needs
    python -m kbench.commits look-alpha ALPHA LOOKS  # ALPHA/LOOKS
    python -m kbench.commits over-budget SPENT NEXT BUDGET_MIN  # exit 0 when SPENT+NEXT s > budget
    python -m kbench.commits open-rows VERDICT       # primary rows still inconclusive
    python -m kbench.commits regressed VERDICT       # up to 5 regressed rows, largest change first
"""

import re
import sys

from kbench import compare
from kbench.cli import ArgumentParser, read_json


def look_pairs(alpha, looks):
    """Rounds the first look starts with: as many as a paired verdict at alpha / looks needs,
    made even (as many A-first as B-first rounds)."""
    n = compare.min_pairs(alpha / looks)
    return n + n % 2


def regressed(verdict, most=5):
    """The names of the regressed rows, largest change first, without the iterations suffix."""
    seen = []
    rows = verdict.get("regressions", [])
    for r in sorted(rows, key=lambda r: -abs(r.get("change_pct") or 0)):
        name = re.sub(r"/iterations:[0-9]+$", "", r["name"])
        if name not in seen:
            seen.append(name)
    return seen[:most]


def main(argv):
    ap = ArgumentParser(prog="kbench.commits", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("positive").add_argument("x")
    for name in ("look-pairs", "look-alpha"):
        p = sub.add_parser(name)
        p.add_argument("alpha", type=float)
        p.add_argument("looks", type=int)
    b = sub.add_parser("over-budget")
    b.add_argument("spent", type=float)
    b.add_argument("next", type=float)
    b.add_argument("budget_min", type=float)
    for name in ("open-rows", "regressed"):
        sub.add_parser(name).add_argument("verdict")
    args = ap.parse_args(argv)
    if args.cmd == "positive":
        try:
            return 0 if float(args.x) > 0 else 1
        except ValueError:
            return 1
    if args.cmd == "look-pairs":
        print(look_pairs(args.alpha, args.looks))
    elif args.cmd == "look-alpha":
        print("%.6g" % (args.alpha / args.looks))
    elif args.cmd == "over-budget":
        return 0 if args.spent + args.next > args.budget_min * 60 else 1
    else:
        verdict = read_json(args.verdict, status=1)
        if args.cmd == "open-rows":
            print(len(verdict.get("inconclusive", [])))
        else:
            print("\n".join(regressed(verdict)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
