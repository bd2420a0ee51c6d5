"""The arithmetic and verdict reads of scripts/bench-commits' sequential looks."""

import re

from kbench import stats


def look_pairs(alpha, looks):
    """Rounds the first look starts with: as many as a paired verdict at alpha / looks needs,
    made even (as many A-first as B-first rounds)."""
    n = stats.min_pairs(alpha / looks)
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
