"""How kbench's scripts write numbers ("1.23 M items/s", "2.5 ms", "+3.14%") and tables
(tabulate), for the console and for Markdown reports."""

import math

from tabulate import tabulate

MISSING = "—"
_TIME_UNITS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
_SI = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def number(v, unit="", digits=3, missing=MISSING):
    """V in UNIT with DIGITS significant digits: a time in its best unit (ns … s), anything
    else with an SI prefix from 1,000 up (10k, 1.5 M items/s). None is MISSING."""
    if v is None:
        return missing
    if isinstance(v, float) and math.isinf(v):
        return "+inf" if v > 0 else "-inf"
    if unit in _TIME_UNITS:
        ns = v * _TIME_UNITS[unit]
        unit = next((u for u in ("s", "ms", "us") if abs(ns) >= _TIME_UNITS[u]), "ns")
        v = ns / _TIME_UNITS[unit]
    else:
        scale, prefix = next(((s, p) for s, p in _SI if abs(v) >= s), (1.0, ""))
        v = v / scale
        unit = prefix + (" " + unit if unit and prefix else unit)
    return ("%.*g %s" % (digits, v, unit)).strip()


def percent(v, digits=2, missing=MISSING):
    """A signed change: +3.14%."""
    if v is None:
        return missing
    if math.isinf(v):
        return "+inf%" if v > 0 else "-inf%"
    return "%+.*f%%" % (digits, v)


def table(headers, rows, markdown=False, align=None):
    """ROWS under HEADERS as aligned text, or as a Markdown table. ALIGN: one of "left",
    "right", "center" per column (default: numbers right, text left)."""
    return tabulate([list(r) for r in rows], headers=list(headers),
                    tablefmt="github" if markdown else "simple", colalign=align, disable_numparse=True)
