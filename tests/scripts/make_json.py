"""Synthetic Google Benchmark 1.7.1 JSON shaped like kbench's output.

Used by the tests of scripts/compare, scripts/plot and scripts/bench-commits so
they do not depend on the real binary. Values are drawn from a seeded
generator: base value * (1 + shift) * (1 + jitter), jitter uniform in
[-noise, +noise], so a test knows exactly which shift it planted.
"""

import json
import random
import statistics

CONTEXT = {
    "date": "2024-05-01T10:00:00+00:00",
    "host_name": "bench-host",
    "executable": "build/kbench",
    "num_cpus": 2,
    "mhz_per_cpu": 2400,
    "cpu_scaling_enabled": False,
    "caches": [{"type": "Data", "level": 1, "size": 32768, "num_sharing": 1}],
    "load_avg": [0.5, 0.4, 0.3],
    "library_build_type": "debug",
    "kbench_version": "0.1.0",
    "git_sha": "aaaaaaaaaaaa",
    "git_dirty": "false",
    "build_type": "Release",
    "compiler": "GNU 12.2.0",
    "cxx_flags": "-O3 -DNDEBUG",
    "librdkafka_version": "2.0.2",
    "zlib_version": "1.2.13",
    "zstd_version": "1.5.4",
    "lz4_version": "1.9.4",
    "snappy_version": "1.1.9",
    "target": "mock",
    "bootstrap": "",
    "broker_version": "",
    "payload_seed": "42",
    "cpu_model": "Synthetic CPU @ 2.40GHz",
    "kernel": "6.1.0",
}


def entry(name, index, reps, rep, metrics, time_unit="ns", iterations=1000,
          family_index=0):
    e = {
        "name": name, "family_index": family_index,
        "per_family_instance_index": index, "run_name": name,
        "run_type": "iteration", "repetitions": reps, "repetition_index": rep,
        "threads": 1, "iterations": iterations,
        "real_time": metrics.get("real_time", metrics.get("cpu_time", 1000.0)),
        "cpu_time": metrics.get("cpu_time", metrics.get("real_time", 1000.0)),
        "time_unit": time_unit,
    }
    for k, v in metrics.items():
        if k not in ("real_time", "cpu_time"):
            e[k] = v
    return e


def aggregates(name, index, reps, runs, time_unit="ns"):
    """mean/median/stddev/cv entries as Google Benchmark appends them."""
    out = []
    keys = [k for k in runs[0] if isinstance(runs[0][k], (int, float))]
    for agg in ("mean", "median", "stddev", "cv"):
        vals = {}
        for k in keys:
            xs = [r[k] for r in runs]
            if agg == "mean":
                vals[k] = statistics.mean(xs)
            elif agg == "median":
                vals[k] = statistics.median(xs)
            elif agg == "stddev":
                vals[k] = statistics.stdev(xs) if len(xs) > 1 else 0.0
            else:
                m = statistics.mean(xs)
                vals[k] = (statistics.stdev(xs) / m) if len(xs) > 1 and m else 0.0
        e = entry(name, index, reps, 0, vals, time_unit)
        e["name"] = "%s_%s" % (name, agg)
        e["run_type"] = "aggregate"
        e["aggregate_name"] = agg
        e["aggregate_unit"] = "percentage" if agg == "cv" else "time"
        del e["repetition_index"]
        out.append(e)
    return out


def make(specs, reps=10, seed=1, noise=0.01, context=None, with_aggregates=True,
         time_unit="ns", processes=0, process_noise=0.0):
    """specs: list of (name, {metric: base_value}, {metric: relative_shift}).

    processes > 0: a merged file of that many kbench processes with `reps` repetitions
    each (entries tagged kbench_process, as kbench.results.merge_runs writes them); each
    process is offset by its own factor, uniform in [-process_noise, +process_noise],
    the drift one process shares over its repetitions.
    Returns the JSON document as a dict.
    """
    rng = random.Random(seed)
    benches = []
    n_proc = processes or 1
    offsets = [1.0 + rng.uniform(-process_noise, process_noise) for _ in range(n_proc)]
    for idx, spec in enumerate(specs):
        name, base, shifts = spec[0], spec[1], (spec[2] if len(spec) > 2 else {})
        runs = []
        for proc in range(n_proc):
            for _rep in range(reps):
                m = {}
                for k, v in base.items():
                    jitter = 1.0 + rng.uniform(-noise, noise) if noise else 1.0
                    m[k] = v * (1.0 + shifts.get(k, 0.0)) * jitter * offsets[proc]
                runs.append(m)
                e = entry(name, idx, reps * n_proc, len(runs) - 1, m, time_unit)
                if processes:
                    e["kbench_process"] = proc
                benches.append(e)
        if with_aggregates and reps > 1 and not processes:
            benches.extend(aggregates(name, idx, reps, runs, time_unit))
    ctx = dict(CONTEXT)
    if context:
        ctx.update(context)
    return {"context": ctx, "benchmarks": benches}


def write(path, doc):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2)


# A representative slice of kbench's families, used by several tests.
CODEC = "Codec/compress/codec:%s/level:%d/payload:az/record_bytes:100/batch_bytes:65536"
DECODEC = "Codec/decompress/codec:%s/level:%d/payload:az/record_bytes:100/batch_bytes:65536"
PRODUCE = "Produce/send/acks:all/codec:lz4/record_bytes:500/threads:%d/producers:%d/real_time"
# An open-loop row (a fixed offered load): the only kind whose p*_us are judged.
PRODUCE_RATE = ("Produce/send/acks:all/codec:lz4/record_bytes:500/threads:%d/producers:%d/"
                "rate:20000/real_time")


def codec_specs():
    specs = []
    for codec, level, speed, ratio in (("lz4", 1, 600e6, 0.45), ("lz4", 9, 90e6, 0.40),
                                       ("zstd", 1, 400e6, 0.35), ("zstd", 3, 300e6, 0.33),
                                       ("gzip", 6, 40e6, 0.36), ("snappy", 0, 500e6, 0.50),
                                       ("none", 0, 5e9, 1.0)):
        batch = 65536
        specs.append((CODEC % (codec, level),
                      {"cpu_time": batch / speed * 1e9, "bytes_per_second": speed,
                       "items_per_second": speed / 100, "ratio": ratio,
                       "compressed_bytes": batch * ratio}))
        specs.append((DECODEC % (codec, level),
                      {"cpu_time": batch / (speed * 3) * 1e9, "bytes_per_second": speed * 3,
                       "items_per_second": speed * 3 / 100, "ratio": ratio}))
    return specs


def produce_specs():
    specs = []
    for threads in (1, 2, 4, 8):
        for producers in (1, 2, 4):
            if producers > threads:
                continue
            rate = 300e3 * min(threads, 4) / (1 + 0.1 * abs(threads / producers - 4))
            specs.append((PRODUCE % (threads, producers),
                          {"real_time": 1e9 / rate * 1000, "items_per_second": rate,
                           "bytes_per_second": rate * 500, "p50_us": 800.0, "p95_us": 2000.0,
                           "p99_us": 4000.0, "p999_us": 9000.0, "max_us": 15000.0,
                           "avg_batch_bytes": 16000.0, "records_per_batch": 32.0,
                           "requests_per_second": rate / 32, "errors": 0.0, "retries": 0.0}))
    return specs


if __name__ == "__main__":
    from kbench.cli import ArgumentParser
    ap = ArgumentParser(prog="make_json.py", description="Writes a sample of every family.")
    ap.add_argument("out", metavar="OUT.json")
    write(ap.parse_args().out, make(codec_specs() + produce_specs(), reps=5))
