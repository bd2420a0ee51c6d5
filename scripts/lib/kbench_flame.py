#!/usr/bin/python3
"""Folded stacks and flame graph SVGs from `perf script` output.

Debian 12 packages no flame graph tool (neither Brendan Gregg's FlameGraph
scripts nor inferno), so scripts/profile uses this small converter:

  kbench_flame.py fold  PERF_SCRIPT.txt  > stacks.folded
  kbench_flame.py svg   stacks.folded --title T > flamegraph.svg

The folded format is the common one (`root;child;leaf COUNT` per line), so the
output also feeds other flame graph tools and speedscope.
"""

import argparse
import html
import re
import sys
import zlib

from kbench_cli import ArgumentParser, die

_OFFSET = re.compile(r"\+0x[0-9a-f]+$")


def fold_perf_script(lines):
    """Collapse `perf script` samples into {stack: samples}.

    A sample is a header line (`comm pid [cpu] time: period event:`) followed by
    one frame per line, leaf first (`addr symbol+off (dso)`), then a blank line.
    """
    stacks = {}
    comm = None
    frames = []

    def flush():
        if comm is not None:
            key = ";".join([comm] + frames[::-1])
            stacks[key] = stacks.get(key, 0) + 1

    for raw in lines:
        line = raw.rstrip("\n")
        if not line.strip():
            flush()
            comm, frames = None, []
            continue
        if line[0] not in " \t":
            flush()
            # The command name may contain spaces; the pid/tid field follows it.
            m = re.match(r"^(.*?)\s+\d+(/\d+)?\s", line)
            comm = (m.group(1) if m else line.split()[0]).strip().replace(";", ":")
            frames = []
            continue
        parts = line.strip().split(None, 1)
        if len(parts) < 2:
            continue
        rest = parts[1]
        dso = ""
        if rest.endswith(")") and " (" in rest:
            rest, dso = rest.rsplit(" (", 1)
            dso = dso[:-1]
        sym = _OFFSET.sub("", rest.strip())
        if not sym or sym == "[unknown]":
            sym = "[%s]" % (dso.rsplit("/", 1)[-1] if dso and dso != "[unknown]" else "unknown")
        frames.append(sym.replace(";", ":"))
    flush()
    return stacks


def read_folded(lines):
    stacks = {}
    for n, line in enumerate(lines, 1):
        line = line.strip()
        if not line:
            continue
        stack, _, count = line.rpartition(" ")
        try:
            c = int(count)
        except ValueError:
            raise ValueError("line %d is not `stack COUNT`: %r" % (n, line[:80])) from None
        stacks[stack] = stacks.get(stack, 0) + c
    return stacks


def _tree(stacks):
    root = {"name": "all", "value": 0, "children": {}}
    for stack, count in stacks.items():
        root["value"] += count
        node = root
        for frame in stack.split(";"):
            child = node["children"].setdefault(frame, {"name": frame, "value": 0, "children": {}})
            child["value"] += count
            node = child
    return root


def _color(name):
    # Warm palette, stable per function name so two graphs can be compared by eye.
    h = zlib.crc32(name.encode("utf-8", "replace"))
    return "rgb(%d,%d,%d)" % (205 + h % 50, 80 + (h >> 8) % 130, 40 + (h >> 16) % 50)


def render_svg(stacks, title="Flame graph", width=1200, frame_h=16, min_px=0.3):
    root = _tree(stacks)
    total = root["value"]
    depth = [0]

    def max_depth(node, d):
        depth[0] = max(depth[0], d)
        for c in node["children"].values():
            max_depth(c, d + 1)
    max_depth(root, 0)
    pad_top, pad_bottom = 40, 10
    height = pad_top + (depth[0] + 1) * frame_h + pad_bottom
    scale = (width - 20) / float(total) if total else 0
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           '<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'viewBox="0 0 %d %d" font-family="monospace" font-size="11">'
           % (width, height, width, height),
           '<rect width="100%" height="100%" fill="#f8f8f8"/>',
           '<text x="%d" y="22" text-anchor="middle" font-size="15">%s</text>'
           % (width // 2, html.escape(title)),
           '<text x="10" y="36" font-size="10" fill="#555">%d samples; width = share of samples, '
           'bottom = outermost frame; hover for details</text>' % total]

    def draw(node, x, d):
        w = node["value"] * scale
        if w < min_px:
            return
        y = height - pad_bottom - (d + 1) * frame_h
        pct = 100.0 * node["value"] / total if total else 0
        name = html.escape(node["name"])
        out.append('<g><title>%s (%d samples, %.2f%%)</title>'
                   '<rect x="%.2f" y="%d" width="%.2f" height="%d" fill="%s" rx="1"/>'
                   % (name, node["value"], pct, x, y, max(w - 0.5, 0.1), frame_h - 1,
                      _color(node["name"]) if d else "rgb(180,180,180)"))
        chars = int((w - 6) / 6.6)
        if chars >= 3:
            label = node["name"] if len(node["name"]) <= chars else node["name"][:chars - 2] + ".."
            out.append('<text x="%.2f" y="%d">%s</text>' % (x + 3, y + frame_h - 4,
                                                           html.escape(label)))
        out.append("</g>")
        cx = x
        for c in sorted(node["children"].values(), key=lambda c: c["name"]):
            draw(c, cx, d + 1)
            cx += c["value"] * scale

    draw(root, 10.0, 0)
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv):
    ap = ArgumentParser(prog="kbench_flame.py", description=__doc__,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fold", help="perf script output -> folded stacks")
    f.add_argument("input")
    s = sub.add_parser("svg", help="folded stacks -> flame graph SVG")
    s.add_argument("input")
    s.add_argument("--title", default="Flame graph")
    args = ap.parse_args(argv)
    try:
        with open(args.input, encoding="utf-8", errors="replace") as fh:
            if args.cmd == "fold":
                stacks = fold_perf_script(fh)
                for k in sorted(stacks):
                    sys.stdout.write("%s %d\n" % (k, stacks[k]))
            else:
                stacks = read_folded(fh)
                if not stacks:
                    die("%s has no samples" % args.input)
                sys.stdout.write(render_svg(stacks, args.title))
    except (OSError, ValueError) as e:
        die(e)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
