"""Reading, validating and merging Google Benchmark JSON as kbench writes it: the one merge
of processes' results (merge_runs, merge_files; combine, by each metric's rule in kbench
--describe=json). Pure stdlib, so that it can be imported without scipy or matplotlib.
"""

import functools
import json
import math
import os
import pathlib
import re
import statistics

from kbench import cli, facts


@functools.cache
def _tables():
    """The metric tables (module attributes: results.UNITS), from kbench --describe=json when
    first used. Directions: +1 higher is better, -1 lower is better, 0 informational."""
    try:
        ms, kinds, lat = facts.metrics(), facts.row_kinds(), facts.latency()
    except facts.FactsUnavailable as e:
        cli.die(str(e))
    return {
        "METRICS": {n: (m["direction"], m["meaning"]) for n, m in ms.items()},
        "METRIC_DIRECTIONS": {n: m["direction"] for n, m in ms.items()},
        "OPEN_LOOP_METRICS": {n for n, m in ms.items() if m["open_loop_latency"]},
        "DETERMINISTIC_METRICS": {n for n, m in ms.items() if m["deterministic"]},
        "UNITS": {n: m["unit"] for n, m in ms.items() if m["unit"]},
        "UNTIMED_ROW_COUNTERS": tuple(n for n, m in ms.items() if m["marks_untimed_row"]),
        "PRIMARY_METRICS": tuple((k["kind"], k["marker"] or None, tuple(k["primary"]), k["why"]) for k in kinds),
        "PRIMARY_DIRECTIONS": {n: m["primary_direction"] for n, m in ms.items()
                               if m["primary_direction"] != m["direction"]},
        "LATENCY_METRICS": [q["metric"] for q in sorted(lat["quantiles"], key=lambda q: q["q"])]
        + [lat["max"]["metric"]],
        "EQUIVALENCE_PCT": {n: float(m["equivalence_pct"]) for n, m in ms.items() if m.get("equivalence_pct")},
    }


def __getattr__(name):
    if name.isupper() and name in _tables():
        return _tables()[name]
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


# Which kbench process an entry came from, in files that merge several processes.
PROCESS_KEY = "kbench_process"
# The number of processes a file's rows combine, when they ran at the same time (merge_runs).
CONCURRENT_KEY = "kbench_concurrent_processes"
# Per-second interval samples of windowed rows, a top-level object next to "benchmarks".
INTERVALS_KEY = "kbench_intervals"
# The probes of each maximum-rate search (its latency curve), also top-level.
RATE_CURVES_KEY = "kbench_rate_curves"

def row_kind(name, runs=()):
    """The PRIMARY_METRICS kind of row `name` given its repetitions' metrics."""
    for kind, marker, _, _ in _tables()["PRIMARY_METRICS"]:
        if marker is None or (is_open_loop(name, runs) if kind == "open_loop" else any(marker in r for r in runs)):
            return kind
    return "timed"


def primary_metrics(name, runs=()):
    """[(metric, direction)] that decide row `name` (see PRIMARY_METRICS)."""
    kind = row_kind(name, runs)
    metrics = next(m for k, _, m, _ in _tables()["PRIMARY_METRICS"] if k == kind)
    return [(m, _tables()["PRIMARY_DIRECTIONS"].get(m) or metric_direction(m))
            for m in (time_metric(name) if m == "time" else m for m in metrics)]

# Keys Google Benchmark writes; every other numeric key of an entry is a user counter.
STANDARD_KEYS = {
    "name", "family_index", "per_family_instance_index", "run_name", "run_type",
    "repetitions", "repetition_index", "threads", "iterations", "real_time",
    "cpu_time", "time_unit", "error_occurred", "error_message", "aggregate_name",
    "aggregate_unit", "label", "big_o", "rms", "complexity", "complexity_n", PROCESS_KEY,
}

TIME_UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}

class BenchmarkJsonError(Exception):
    """Input that is not usable Google Benchmark JSON; message is user-facing."""


def metric_direction(metric):
    """+1 higher better, -1 lower better, 0 informational, None unknown."""
    directions = _tables()["METRIC_DIRECTIONS"]
    if metric in directions:
        return directions[metric]
    # Conventions for counters added later without updating the table above.
    if metric.startswith("queue_"):
        return 0
    if metric.endswith(("_us", "_ns", "_ms")):
        return -1
    if metric.endswith("_per_second"):
        return +1
    return None


def is_open_loop(name, runs=()):
    """A row with a fixed offered load: `rate:N` in its name or a target_rate counter."""
    _, _, params, _ = parse_name(name)
    return params.get("rate", "0") not in ("0", "") or any(r.get("target_rate", 0) > 0 for r in runs)


def judged_direction(metric, name, runs=()):
    """The direction compare judges `metric` of row `name` by (0 or None: not judged)."""
    direction = metric_direction(metric)
    if direction and metric in _tables()["OPEN_LOOP_METRICS"] and not is_open_loop(name, runs):
        return 0
    return direction


def load(path):
    """The validated Google Benchmark JSON of PATH (a result folder: its kbench.json), or BenchmarkJsonError."""
    if os.path.isdir(path):
        if not os.path.isfile(os.path.join(path, "kbench.json")):
            raise BenchmarkJsonError("%s is a folder without kbench.json (not a scripts/bench result folder)" % path)
        path = os.path.join(path, "kbench.json")
    try:
        text = pathlib.Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise BenchmarkJsonError("cannot read %s: %s" % (path, e.strerror or e)) from e
    except UnicodeDecodeError:
        raise BenchmarkJsonError("%s is not text (not UTF-8)" % path) from None
    if not text.strip():
        raise BenchmarkJsonError("%s is empty" % path)
    try:
        # Google Benchmark writes inf/nan for some counters; Python accepts them.
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise BenchmarkJsonError("%s is not valid JSON (line %d, column %d: %s)"
                                 % (path, e.lineno, e.colno, e.msg)) from e
    validate(data, path)
    facts.offer(data)
    return data


def validate(data, path="input"):
    if not isinstance(data, dict) or "benchmarks" not in data:
        raise BenchmarkJsonError(
            "%s is not Google Benchmark JSON (no top-level \"benchmarks\" list); "
            "write it with --benchmark_out=F --benchmark_out_format=json" % path)
    benches = data["benchmarks"]
    if not isinstance(benches, list):
        raise BenchmarkJsonError("%s: \"benchmarks\" is not a list" % path)
    for i, b in enumerate(benches):
        if not isinstance(b, dict) or not isinstance(b.get("name"), str):
            raise BenchmarkJsonError("%s: benchmarks[%d] has no \"name\"" % (path, i))
    ctx = data.get("context", {})
    if not isinstance(ctx, dict):
        raise BenchmarkJsonError("%s: \"context\" is not an object" % path)
    if not benches:
        raise BenchmarkJsonError("%s contains no benchmarks" % path)


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def time_metric(name):
    """real_time for the rows Google Benchmark names .../real_time or .../manual_time, else cpu_time."""
    timed = any(name.endswith("/" + t) or "/%s/" % t in name for t in ("real_time", "manual_time"))
    return "real_time" if timed else "cpu_time"


def entry_metrics(entry):
    """Numeric metrics of one entry: the time (in ns) and every user counter."""
    scale = TIME_UNIT_NS.get(entry.get("time_unit", "ns"), 1.0)
    out = {key: entry[key] * scale for key in ("real_time", "cpu_time") if is_number(entry.get(key))}
    out.update((key, float(v)) for key, v in entry.items() if key not in STANDARD_KEYS and is_number(v))
    return out


def invalid_metrics(entry):
    """Metrics of an entry that are not measurements: not finite, negative, or a zero that must be positive."""
    return [key for key, value in entry.items()
            if (key not in STANDARD_KEYS or key in ("real_time", "cpu_time"))
            and isinstance(value, (int, float)) and not isinstance(value, bool)
            and (not math.isfinite(value) or value < 0 or (value == 0 and must_be_positive(key)))]


def must_be_positive(metric):
    """Metrics for which zero is not a measurement: times, rates, latencies, instructions."""
    return (metric in ("cpu_time", "real_time", "instructions", "ratio")
            or metric.endswith(("_per_second", "_rate", "_us")))


def is_iteration(entry):
    return entry.get("run_type", "iteration") == "iteration"


def group_runs(data):
    """{name: {"runs": [metrics...], "errors": [...], "aggregates": {name: metrics}}} of a file."""
    groups = {}
    for b in data["benchmarks"]:
        name = b["name"] if is_iteration(b) else b.get("run_name") or _strip_aggregate_suffix(b)
        g = groups.setdefault(name, {"runs": [], "errors": [], "aggregates": {}})
        if not is_iteration(b):
            if b.get("aggregate_name"):
                g["aggregates"][b["aggregate_name"]] = entry_metrics(b)
        elif b.get("error_occurred"):
            g["errors"].append(str(b.get("error_message", "error")))
        else:
            g["runs"].append(entry_metrics(b))
    return groups


def _strip_aggregate_suffix(entry):
    name, agg = entry["name"], entry.get("aggregate_name")
    return name[: -len(agg) - 1] if agg and name.endswith("_" + agg) else name


def median_metrics(group):
    """Median of each metric over the repetitions (or the median aggregate)."""
    runs = group["runs"]
    if not runs:
        return dict(group["aggregates"].get("median") or group["aggregates"].get("mean") or {})
    keys = dict.fromkeys(k for r in runs for k in r)
    return {k: statistics.median([r[k] for r in runs if k in r]) for k in keys}


def parse_name(name):
    """(family, variant, params, extra) of `Family/variant/key:value/...`; extra: the other parts."""
    parts = name.split("/")
    family, variant, params, extra = parts[0], None, {}, []
    for i, p in enumerate(parts[1:]):
        if ":" in p:
            k, v = p.split(":", 1)
            params[k] = v
        elif i == 0:
            variant = p
        else:
            extra.append(p)
    return family, variant, params, extra


def processes(data):
    """[(process_id, [entries])] of a file, in order (a merged file tags entries with PROCESS_KEY)."""
    per = {}
    for b in data["benchmarks"]:
        per.setdefault(b.get(PROCESS_KEY, 0), []).append(b)
    return list(per.items())


def merge_runs(datas, sources=None, *, concurrent=False):
    """Merge several runs into one file of repetitions, each keeping its process in
    PROCESS_KEY (aggregates dropped; the first file's context). CONCURRENT (processes that
    ran the same rows at the same time): repetition i of every process becomes one entry,
    each metric combined by its rule (combine)."""
    if not datas:
        raise BenchmarkJsonError("nothing to merge")
    if concurrent:
        return _merge_concurrent(datas, sources or ["run %d" % (i + 1) for i in range(len(datas))])
    per_name, next_pid = {}, 0
    for data in datas:
        for _, entries in processes(data):
            for b in entries:
                if is_iteration(b):
                    per_name.setdefault(b["name"], []).append(dict(b, **{PROCESS_KEY: next_pid}))
            next_pid += 1
    benches = [dict(e, run_type="iteration", repetition_index=i, repetitions=len(entries))
               for entries in per_name.values() for i, e in enumerate(entries)]
    ctx = dict(datas[0].get("context", {}))
    ctx["kbench_merged_runs"] = next_pid
    for d in datas:  # a merge of concurrent runs' merges keeps the marker that says so
        if CONCURRENT_KEY in d.get("context", {}):
            ctx[CONCURRENT_KEY] = d["context"][CONCURRENT_KEY]
    if sources:
        ctx["kbench_merged_from"] = ",".join(os.path.basename(s) for s in sources)
    out = {"context": ctx, "benchmarks": benches}
    for key in (INTERVALS_KEY, RATE_CURVES_KEY):
        merged = _merge_per_run_samples(datas, key)
        if merged:
            out[key] = merged
    return out


def combine(values, weights=None):
    """{metric: value} of processes that ran a row at the same time (VALUES: a {metric: value}
    each, for the metrics all have), by facts.merge_rules: "sum", "max", "histogram" (the
    worst process's) or "mean" (the default), weighted by WEIGHTS when given."""
    rules = facts.merge_rules()
    weights = list(weights) if weights is not None else [1.0] * len(values)
    out = {}
    for key in dict.fromkeys(k for v in values for k in v):
        if not all(key in v for v in values):
            continue
        xs = [v[key] for v in values]
        rule = rules.get(key, "mean")
        if rule == "sum":
            out[key] = float(sum(xs))
        elif rule in ("max", "histogram"):
            out[key] = float(max(xs))
        else:
            out[key] = sum(x * w for x, w in zip(xs, weights)) / (sum(weights) or 1.0)
    return out


def _merge_concurrent(datas, sources):
    per_name = {}
    for data, source in zip(datas, sources):
        for name, g in group_runs(data).items():
            if g["errors"]:
                raise BenchmarkJsonError("%s failed in %s: %s" % (name, source, g["errors"][0]))
            if not g["runs"]:
                raise BenchmarkJsonError("%s in %s has no repetitions (aggregates only?)" % (name, source))
            per_name.setdefault(name, []).append(g["runs"])
    benches = []
    for name, procs in per_name.items():
        if len(procs) != len(datas):
            raise BenchmarkJsonError("%s ran in %d of %d processes" % (name, len(procs), len(datas)))
        reps = len(procs[0])
        if any(len(runs) != reps for runs in procs):
            raise BenchmarkJsonError("%s: the processes ran different numbers of repetitions" % name)
        benches += [dict({"name": name, "run_name": name, "run_type": "iteration", "repetitions": reps,
                          "repetition_index": i, "threads": 1, "iterations": 1, "time_unit": "ns"},
                         **combine([runs[i] for runs in procs])) for i in range(reps)]
    ctx = dict(datas[0].get("context", {}))
    ctx[CONCURRENT_KEY] = len(datas)
    ctx["kbench_summed_from"] = ",".join(os.path.basename(s) for s in sources)
    return {"context": ctx, "benchmarks": benches}


def merge_files(out, inputs, pairing=None):
    """Merges the run files INPUTS into OUT, labelled PAIRING (kbench_pairing) if given."""
    merged = merge_runs([load(p) for p in inputs], inputs)
    if pairing:
        merged["context"]["kbench_pairing"] = pairing
    write_json(out, merged)


def _merge_per_run_samples(datas, key):
    """The per-run samples under KEY for a merged file, numbered as merge_runs numbers them."""
    merged, next_pid = {}, 0
    for data in datas:
        ids = [pid for pid, _ in processes(data)]
        for name, reps in (data.get(key) or {}).items():
            for rep in reps:
                # A file written by one process has no process key: its only process.
                pid = rep.get(PROCESS_KEY, ids[0])
                r = dict(rep, **{PROCESS_KEY: next_pid + (ids.index(pid) if pid in ids else 0)})
                merged.setdefault(name, []).append(r)
        next_pid += len(ids)
    return merged


# glibc's allocator, by source file: its path depends on what other threads freed and when,
# so its instructions vary from run to run by more than a 2 % change of the send path.
ALLOCATOR_FILES = re.compile(r"(^|/)malloc/(malloc|arena)\.c:")


def allocator_instructions(path):
    """Ir spent in glibc's allocator (self cost) in a callgrind.out file (callgrind_annotate)."""
    import subprocess
    try:
        out = subprocess.run(["callgrind_annotate", "--threshold=100", path],
                             capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise BenchmarkJsonError("callgrind_annotate %s failed: %s" % (path, e)) from e
    rows = (re.match(r"\s*([\d,]+) \([\s\d.]+%\)\s+(\S.*)$", line) for line in out.splitlines())
    return sum(int(m.group(1).replace(",", "")) for m in rows if m and ALLOCATOR_FILES.search(m.group(2)))


def parse_callgrind_total(path):
    """Total Ir of a callgrind.out file (its `totals:` or `summary:` line)."""
    total = events = None
    try:
        with open(path, "r", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("events:"):
                    events = line.split()[1:]
                elif line.startswith("totals:") or (total is None and line.startswith("summary:")):
                    values = line.split()[1:]
                    idx = events.index("Ir") if events and "Ir" in events else 0
                    total = int(values[idx])
    except OSError as e:
        raise BenchmarkJsonError("cannot read %s: %s" % (path, e.strerror or e)) from e
    except (ValueError, IndexError):
        raise BenchmarkJsonError("%s: malformed totals/summary line" % path) from None
    if total is None:
        raise BenchmarkJsonError("%s has no totals: or summary: line (not a callgrind.out?)" % path)
    return total


def instructions_entry(name, ir_n, ir_2n, iterations, context_entry=None):
    """An entry of instructions/iteration, (Ir(2N) - Ir(N)) / N: start-up costs cancel out."""
    e = {
        "name": name, "run_name": name, "run_type": "iteration", "repetitions": 1, "repetition_index": 0, "threads": 1,
        "iterations": iterations, "instructions": (ir_2n - ir_n) / float(iterations),
        "instructions_total_n": ir_n, "instructions_total_2n": ir_2n, "time_unit": "ns",
    }
    e.update({k: context_entry[k] for k in ("family_index", "per_family_instance_index") if k in (context_entry or {})})
    return e


def has_rows(path):
    """True when the Google Benchmark JSON at PATH holds benchmark entries."""
    try:
        return bool(json.loads(pathlib.Path(path).read_text(encoding="utf-8")).get("benchmarks"))
    except (OSError, ValueError, AttributeError):
        return False


def context_text(path):
    """The run context of the JSON at PATH, one "KEY: VALUE" line each, keys sorted."""
    try:
        ctx = json.loads(pathlib.Path(path).read_text(encoding="utf-8")).get("context", {})
    except (OSError, ValueError, AttributeError) as e:
        return "# no context: %s\n" % e
    return "".join("%s: %s\n" % (k, ctx[k]) for k in sorted(ctx))


def callgrind_json(table, only=()):
    """The instruction JSON of TABLE's callgrind runs (name, N, out N, out 2N, run JSON), counting ONLY."""
    benches, ctx = [], None
    for name, n, out_n, out_2n, run_json in table:
        run = load(run_json)
        if ctx is None:
            ctx = dict(run.get("context", {}))
        src = next((b for b in run["benchmarks"] if b["name"] == name), None)
        ir_n, ir_2n = parse_callgrind_total(out_n), parse_callgrind_total(out_2n)
        if only:
            ir_n -= allocator_instructions(out_n)
            ir_2n -= allocator_instructions(out_2n)
        benches.append(instructions_entry(name, ir_n, ir_2n, int(n), src))
    if not benches:
        raise BenchmarkJsonError("no benchmarks were measured")
    ctx = ctx or {}
    ctx["kbench_measure"] = "callgrind_instructions_per_iteration"
    if only:
        # A function the row never calls would give 0 on both sides: "unchanged".
        for b in benches:
            if b["instructions"] <= 0:
                raise BenchmarkJsonError(
                    "%s: no instructions collected inside %s (is it called, and exported under "
                    "that name?)" % (b["name"], " ".join(only)))
        ctx["kbench_instructions_of"] = " ".join(only) + " (glibc allocator excluded)"
    return {"context": ctx, "benchmarks": benches}


def regex_escape(text):
    """TEXT as a literal extended regex (kbench's --benchmark_filter)."""
    return re.sub(r"([][\\.*^$+?(){}|])", r"\\\1", text)


def exact_filter(names):
    """A --benchmark_filter selecting exactly NAMES."""
    return "|".join("^%s$" % regex_escape(n) for n in names if n)


def write_json(path, data):
    """Writes JSON atomically (a reader never sees half a file)."""
    tmp = path + ".tmp"
    pathlib.Path(tmp).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)
