"""Folded stacks (`root;child;leaf COUNT`, for any flame graph tool), flame graph SVGs and the
views scripts/profile derives from them: per thread role, off-CPU, differential. Debian 12
packages no flame graph tool."""

import html
import itertools
import json
import os
import pathlib
import re
import zlib
from collections import Counter

from kbench import text

_OFFSET = re.compile(r"\+0x[0-9a-f]+$")
_HEX = re.compile(r"^(0x)?[0-9a-fA-F]{6,}$")


def _parse_frame(line):
    """One frame line of `perf script` -> (symbol, dso, address), or None without a symbol field.
    Unknown symbols are named after their library, as flame graph tools do."""
    parts = line.strip().split(None, 1)
    if len(parts) < 2:
        return None
    rest, dso = parts[1], ""
    if rest.endswith(")") and " (" in rest:
        rest, dso = rest[:-1].rsplit(" (", 1)
    sym = _OFFSET.sub("", rest.strip())
    if not sym or sym == "[unknown]":
        sym = "[%s]" % (dso.rsplit("/", 1)[-1] if dso and dso != "[unknown]" else "unknown")
    return sym, dso, parts[0]


def _samples(lines):
    """The samples of `perf script`: (header line, [(symbol, dso, address)] leaf first), from a
    header (`comm pid [cpu] time: period event:`), one frame a line, then a blank line."""
    header, frames = None, []
    for raw in itertools.chain(lines, [""]):  # the last sample ends at the end
        line = raw.rstrip("\n")
        if not line.strip() or line[0] not in " \t":
            if header is not None:
                yield header, frames
            header, frames = line if line.strip() else None, []
        elif header is not None:
            frame = _parse_frame(line)
            if frame is not None:
                frames.append(frame)


def fold_perf_script(lines):
    """Collapse `perf script` samples into {stack: samples}."""
    stacks = Counter()
    for header, frames in _samples(lines):
        # The command name may contain spaces; the pid/tid field follows it.
        m = re.match(r"^(.*?)\s+\d+(/\d+)?\s", header)
        comm = (m.group(1) if m else header.split()[0]).strip().replace(";", ":")
        stacks[";".join([comm] + [f[0].replace(";", ":") for f in reversed(frames)])] += 1
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


def _render(tree, title, note, describe, stroke="", width=1200, frame_h=16, min_px=0.3):
    """A flame graph of tree; describe(node, path, depth) gives a frame's (hover text, fill)."""
    def depth(node):
        return 1 + max((depth(c) for c in node["children"].values()), default=0)

    pad_top, pad_bottom = 40, 10
    height = pad_top + depth(tree) * frame_h + pad_bottom
    px = (width - 20) / float(tree["value"]) if tree["value"] else 0
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           '<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'viewBox="0 0 %d %d" font-family="monospace" font-size="11">'
           % (width, height, width, height),
           '<rect width="100%" height="100%" fill="#f8f8f8"/>',
           '<text x="%d" y="22" text-anchor="middle" font-size="15">%s</text>' % (width // 2, html.escape(title)),
           '<text x="10" y="36" font-size="10" fill="#555">%s</text>' % note]

    def draw(node, x, d, path):
        w = node["value"] * px
        if w < min_px:
            return
        y = height - pad_bottom - (d + 1) * frame_h
        tip, fill = describe(node, path, d)
        out.append('<g><title>%s (%s)</title><rect x="%.2f" y="%d" width="%.2f" height="%d" fill="%s"%s rx="1"/>'
                   % (html.escape(node["name"]), tip, x, y, max(w - 0.5, 0.1), frame_h - 1, fill, stroke))
        chars = int((w - 6) / 6.6)
        if chars >= 3:
            label = node["name"] if len(node["name"]) <= chars else node["name"][:chars - 2] + ".."
            out.append('<text x="%.2f" y="%d">%s</text>' % (x + 3, y + frame_h - 4, html.escape(label)))
        out.append("</g>")
        for c in sorted(node["children"].values(), key=lambda c: c["name"]):
            draw(c, x, d + 1, path + (c["name"],))
            x += c["value"] * px

    draw(tree, 10.0, 0, ())
    out.append("</svg>")
    return "\n".join(out) + "\n"


def render_svg(stacks, title="Flame graph"):
    tree = _tree(stacks)
    total = tree["value"]

    def describe(node, _path, d):
        pct = 100.0 * node["value"] / total if total else 0
        return ("%d samples, %.2f%%" % (node["value"], pct), _color(node["name"]) if d else "rgb(180,180,180)")
    return _render(tree, title, "%d samples; width = share of samples, bottom = outermost frame; "
                   "hover for details" % total, describe)


def fold_callgrind(lines):
    """Self cost of the first event (Ir) per call chain, from a callgrind.out written with
    --separate-callers=N: a function is then named `fn'caller'caller...`, one folded stack."""
    tables = {"fn": {}, "fl": {}, "ob": {}}  # compressed names, one table per kind
    stacks = Counter()
    npos, fn, ob, skip_next = 1, None, "", False

    def name_of(value, kind="fn"):
        """A compressed name: "(id) name" defines id, "(id)" refers to it."""
        m = re.fullmatch(r"\((\w+)\)\s*(.*)", value.strip())
        if not m:
            return value.strip()
        if m.group(2):
            tables[kind][m.group(1)] = m.group(2)
        return tables[kind].get(m.group(1), value.strip())

    for raw in lines:
        line = raw.rstrip("\n")
        if not line or line[0] == "#":
            continue
        key, _, value = line.partition("=")
        if line.startswith("positions:"):
            npos = len(line.split()[1:]) or 1
        elif key == "ob":
            ob = name_of(value, "ob")
        elif key == "fn":
            chain = name_of(value).split("'")
            if _HEX.match(chain[0]) and ob:
                chain[0] = "[%s]" % ob.rsplit("/", 1)[-1]  # as perf names an unknown symbol
            fn = ";".join(f.replace(";", ":") for f in reversed(chain))
            skip_next = False
        elif key in ("cfn", "cfi", "cfl", "cob", "fl", "fi", "fe"):
            name_of(value, {"cfn": "fn", "cob": "ob"}.get(key, "fl"))  # defines names used later
        elif key == "calls":
            skip_next = True  # the next cost line is the call's inclusive cost
        elif line[0].isdigit() or line[0] in "+-*":
            if skip_next:
                skip_next = False
                continue
            parts = line.split()
            if fn is not None and len(parts) > npos:
                try:
                    cost = int(parts[npos])
                except ValueError:
                    continue
                if cost:
                    stacks[fn] += cost
    return stacks


def is_named(frame):
    """False for frames a profiler could not name: `[libfoo.so]`, `[unknown]`, bare hex."""
    return not (frame.startswith("[") and frame.endswith("]")) and not _HEX.match(frame)


def self_costs(stacks):
    out = Counter()
    for stack, count in stacks.items():
        out[stack.rsplit(";", 1)[-1]] += count
    return out


def inclusive_costs(stacks, skip_root=False):
    out = Counter()
    for stack, count in stacks.items():
        for f in set(stack.split(";")[1 if skip_root else 0:]):
            out[f] += count
    return out


def named_fraction(stacks):
    total = sum(stacks.values())
    named = sum(c for s, c in stacks.items() if is_named(s.rsplit(";", 1)[-1]))
    return (named / total) if total else 0.0


def _table(headers, align, rows):
    """text.table with ALIGN a letter per column: l left, r right."""
    return text.table(headers, rows, align=["left" if a == "l" else "right" for a in align])


def _share(part, total):
    return "%.2f%%" % (100.0 * part / total if total else 0.0)


def summary_text(stacks, top=25, unit="samples", root_is_thread=True):
    total = sum(stacks.values())
    if not total:
        return "no samples\n"
    unnamed = Counter({k: c for k, c in self_costs(stacks).items() if not is_named(k)})
    out = ["%d %s; %s in named functions (leaf frame has a symbol)" % (total, unit, _share(named_fraction(stacks), 1))]
    if unnamed:
        out.append("unnamed leaves: " + ", ".join("%s %s" % (k, _share(v, total)) for k, v in unnamed.most_common(5)))
    for what, costs in (("self", self_costs(stacks)), ("inclusive", inclusive_costs(stacks, skip_root=root_is_thread))):
        out += ["", "top functions by %s %s:" % (what, unit),
                _table((what[:4] + "%", unit, "function"), "rrl",
                       [(_share(c, total), c, name) for name, c in costs.most_common(top)])]
    return "\n".join(out) + "\n"


def thread_role(comm):
    """librdkafka names its threads rdk:main, rdk:broker<id>, rdk:mock...; the rest are the application's."""
    for role in ("main", "broker", "mock"):
        if comm.startswith("rdk:" + role):
            return "librdkafka-" + role
    return "librdkafka-other" if comm.startswith("rdk:") else "application"


def split_roles(stacks):
    out = {}
    for stack, count in stacks.items():
        out.setdefault(thread_role(stack.split(";", 1)[0]), Counter())[stack] += count
    return out


def roles_table(stacks):
    total = sum(stacks.values())
    threads = Counter()
    for stack, count in stacks.items():
        threads[stack.split(";", 1)[0]] += count
    rows = []
    for role, st in sorted(split_roles(stacks).items(), key=lambda kv: -sum(kv[1].values())):
        n = sum(st.values())
        name, cost = self_costs(st).most_common(1)[0]
        rows.append((role, n, _share(n, total), "%s (%s of role)" % (name, _share(cost, n))))
    return (_table(("role", "samples", "share", "top self function"), "lrrl", rows) + "\n\n"
            + _table(("thread (comm)", "role", "samples", "share"), "llrr",
                     [(comm, thread_role(comm), n, _share(n, total)) for comm, n in threads.most_common()]) + "\n")


_HDR = re.compile(r"^(.*?)\s+(\d+)(?:/(\d+))?\s+(?:\[\d+\]\s+)?(\d+\.\d+):\s+(.*)$")
_RUNNABLE = "[runnable: preempted, waiting for a CPU]"
_STATE = {"R": _RUNNABLE, "R+": _RUNNABLE, "S": "[sleeping: futex, poll, timer...]",
          "D": "[uninterruptible: disk or kernel lock]"}
_SYSTEM_DSO = re.compile(r"(^\[kernel|^\[vdso|/libc\.so|/libpthread|/ld-linux|/libstdc\+\+\.so)")
_LIBC_NAMES = re.compile(r"^(_|lll_|futex|poll|select|epoll|nanosleep|clock_nanosleep|usleep|sleep|"
                         r"pthread_|cnd_|thrd_|mtx_|sem_|malloc|free|calloc|realloc|mmap|munmap|"
                         r"mprotect|read|write|recv|send|start_thread|clone)")


def _is_system_frame(name, dso):
    """C library, kernel and vDSO frames: where a thread waits, not who chose to wait."""
    if dso and dso != "?":
        return bool(_SYSTEM_DSO.search(dso))
    return bool(_LIBC_NAMES.match(name))


def fold_offcpu(lines, sites):
    """Off-CPU microseconds per stack (thread;state;frames...), from `perf script
    --show-switch-events` of sched:sched_switch samples (stack, state) and switch records
    (when the thread came back). SITES gets blocked time per wait site: the innermost frame
    outside the C library and kernel, and the call it waits in."""
    stacks = Counter()
    pending = {}  # tid -> (time, comm, state, frames, site)
    for header, sample in _samples(lines):
        m = _HDR.match(header)
        if not m:
            continue
        comm, pid, tid, t, rest = m.groups()
        tid = tid or pid
        comm = comm.strip().replace(";", ":")
        t = float(t)
        if "sched:sched_switch:" in rest:
            sm = re.search(r"prev_state=(\S+)", rest)
            state = sm.group(1) if sm else "?"
            # flame graph tools mark kernel frames with _[k]
            frames = [(sym + "_[k]" if dso.startswith("[kernel") else sym).replace(";", ":") for sym, dso, _ in sample]
            dsos = [dso for _, dso, _ in sample]
            # perf prints inlined frames before the frame holding them, with "(inlined)" for
            # a DSO: take the DSO of the next frame at the same address; else judge by name.
            for i in range(len(dsos) - 1, -1, -1):
                if dsos[i] == "inlined":
                    dsos[i] = dsos[i + 1] if i + 1 < len(dsos) and sample[i + 1][2] == sample[i][2] else "?"
            waits = [f for f, d in zip(frames, dsos) if not d.startswith("[kernel")]
            caller = next((f for f, d in zip(frames, dsos) if not _is_system_frame(f, d)), None)
            wait = waits[0] if waits else (frames[-1] if frames else "?")
            site = "%s: %s" % (thread_role(comm), "%s > %s" % (caller, wait) if caller and caller != wait else wait)
            pending[tid] = (t, comm, state, frames, site)
        elif "PERF_RECORD_SWITCH IN" in rest or "PERF_RECORD_SWITCH_CPU_WIDE IN" in rest:
            p = pending.pop(tid, None)
            if p is not None:
                t0, pcomm, state, frames, site = p
                us = int(round((t - t0) * 1e6))
                if us > 0:
                    label = _STATE.get(state, "[state %s]" % state)
                    stacks[";".join([pcomm, label] + frames[::-1])] += us
                    if state not in ("R", "R+"):
                        sites[site] = sites.get(site, 0) + us
    return stacks


def offcpu_table(stacks, sites, top=20):
    """Off-CPU time per thread, blocked and runnable, and the top wait SITES (fold_offcpu's)."""
    total = sum(stacks.values())
    per = {}
    for stack, us in stacks.items():
        comm, state = stack.split(";")[:2]
        per.setdefault(comm, Counter())[state] += us
    rows = []
    for comm, d in sorted(per.items(), key=lambda kv: -kv[1].total()):
        blocked = sum(v for k, v in d.items() if k.startswith(("[sleeping", "[uninterruptible")))
        runnable = sum(v for k, v in d.items() if k.startswith("[runnable"))
        rows.append((comm, thread_role(comm), "%.1f" % (blocked / 1e3), "%.1f" % (runnable / 1e3),
                     "%.1f" % ((d.total() - blocked - runnable) / 1e3)))
    return "\n".join([
        "off-CPU time: %.3f s over all threads" % (total / 1e6), "",
        _table(("thread", "role", "blocked ms", "runnable ms", "other ms"), "llrrr", rows), "",
        "where threads wait (blocked time by wait site: the innermost frame outside the C library and kernel "
        "> the call it waits in):",
        _table(("blocked", "share", "wait site"), "rrl",
               [("%.1f ms" % (us / 1e3), _share(us, total), site) for site, us in Counter(sites).most_common(top)]),
    ]) + "\n"


def _totals(a, b, normalize):
    """A's and B's totals and the factor that scales B to A (1 unless NORMALIZE: sampled profiles)."""
    ta, tb = sum(a.values()), sum(b.values())
    return ta, tb, (ta / tb) if (normalize and tb) else 1.0


def diff_profiles(a, b, normalize):
    """Per function (leaf frame): self cost of A and B and the change, B scaled; largest first."""
    ta, tb, scale = _totals(a, b, normalize)
    sa, sb = self_costs(a), self_costs(b)
    rows = []
    for name in set(sa) | set(sb):
        va, vb = sa.get(name, 0), sb.get(name, 0)
        delta = vb * scale - va
        rows.append({"function": name, "a": va, "b": vb,
                     "share_a": va / ta if ta else 0.0, "share_b": vb / tb if tb else 0.0, "delta": delta,
                     "delta_pct_of_function": (100.0 * delta / va) if va else None,
                     "delta_pct_of_total": (100.0 * delta / ta) if ta else 0.0})
    rows.sort(key=lambda r: (-abs(r["delta"]), r["function"]))
    return rows, ta, tb


def diff_table(rows, ta, tb, unit, normalize, top=30):
    return "\n".join([
        "A total %d %s, B total %d %s (%+.3f%%); %s" % (
            ta, unit, tb, unit, (100.0 * (tb - ta) / ta) if ta else 0.0,
            "B scaled to A's total (shares compared)" if normalize else "raw counts compared"),
        "ranked by |change of self cost|; d fn% = change relative to the function's A cost", "",
        _table(("rank", "A self", "B self", "A share", "B share", "d total%", "d fn%", "function"), "rrrrrrrl",
               [(i, r["a"], r["b"], "%.3f%%" % (100 * r["share_a"]), "%.3f%%" % (100 * r["share_b"]),
                 "%+.3f%%" % r["delta_pct_of_total"], "new" if r["delta_pct_of_function"] is None
                 else "%+.2f%%" % r["delta_pct_of_function"], r["function"])
                for i, r in enumerate(rows[:top], 1)])]) + "\n"


def _path_values(stacks):
    """{path (a tuple of frames from the root): its inclusive count}; () holds the total."""
    out = Counter()
    for stack, count in stacks.items():
        frames = tuple(stack.split(";"))
        for i in range(len(frames) + 1):
            out[frames[:i]] += count
    return out


def render_diff_svg(a, b, title, normalize):
    """B's flame graph, each frame coloured by the change of its inclusive cost from A."""
    _, _, scale = _totals(a, b, normalize)
    tb_tree, va, vb = _tree(b), _path_values(a), _path_values(b)
    deltas = {path: v * scale - va[path] for path, v in vb.items() if path}
    maxabs = max([abs(v) for v in deltas.values()] + [1e-12])

    def describe(node, path, d):
        delta, base = deltas.get(path, 0.0), va[path]
        v = int(round(255 - 200 * min(abs(delta) / maxabs, 1.0)))
        color = "rgb(255,%d,%d)" % (v, v) if delta > 0 else ("rgb(%d,%d,255)" % (v, v) if delta < 0
                                                              else "rgb(250,250,250)")
        return ("B %d, A %d, change %s" % (node["value"], base, ("%+.2f%%" % (100.0 * delta / base)) if base
                                           else "new"), color if d else "rgb(200,200,200)")
    return _render(tb_tree, title, "widths: B (%d); colour: change from A (red grew, blue shrank); hover "
                   "for details" % tb_tree["value"], describe, stroke=' stroke="#ccc" stroke-width="0.3"')


def write_views(stacks, folded, svg, title, roles=None):
    """STACKS as the folded file FOLDED and the flame graph SVG and, given ROLES (a folder and
    a title), one of each per thread role with roles.txt; False when STACKS is empty."""
    pathlib.Path(folded).write_text("".join("%s %d\n" % (k, stacks[k]) for k in sorted(stacks)))
    if not stacks:
        return False
    pathlib.Path(svg).write_text(render_svg(stacks, title))
    if roles:
        folder, roles_title = roles
        os.makedirs(folder, exist_ok=True)
        for role, st in split_roles(stacks).items():
            write_views(st, "%s/%s.folded" % (folder, role), "%s/%s.svg" % (folder, role),
                        "%s: %s threads" % (roles_title, role))
        pathlib.Path(folder, "roles.txt").write_text(roles_table(stacks))
    return True


def write_diff(a, b, folder, title, unit="samples", raw=False):
    """diff.svg, diff.txt and diff.json of stacks A and B in FOLDER; the top of the table."""
    if not a or not b:
        raise ValueError("side %s has no samples" % ("A" if not a else "B"))
    rows, ta, tb = diff_profiles(a, b, normalize=not raw)
    pathlib.Path(folder, "diff.txt").write_text(diff_table(rows, ta, tb, unit, not raw))
    pathlib.Path(folder, "diff.svg").write_text(render_diff_svg(a, b, title, normalize=not raw))
    pathlib.Path(folder, "diff.json").write_text(
        json.dumps({"a_total": ta, "b_total": tb, "normalized": not raw, "rows": rows[:200]}, indent=1))
    return diff_table(rows, ta, tb, unit, not raw, top=10)
