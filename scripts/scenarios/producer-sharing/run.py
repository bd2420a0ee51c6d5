"""producer-sharing — seed 000 (Garry Turkington, 2015): records/s of one client host as
application threads {4, 8, 16, 24} and the number of producer instances they share vary
(random 250-750 byte records, acks=1, batch.size 64 KiB, linger.ms 0 and 1, warm-up
excluded; and the same with repeated bodies and random keys), on one broker started here
unless --bootstrap is given. Cells show the median [lowest-highest] over repetitions."""

from kbench.cli import info
from kbench.scenario_runner import Scenario


def specs(scn):
    """(--produce specs, warm-up s, window s, repetitions) of the scale."""
    common = "acks=1,codec=none,record_bytes=250-750,batch_bytes=65536"
    if scn.tiny:
        return ([common + ",payload=random|repeated,linger_ms=1,threads=4,producers=1|per_thread",
                 common + ",payload=random,linger_ms=1,threads=8,producers=1|2|per_thread"], 0.5, 1, 1)
    if scn.scale == "full":
        warmup, window, reps, variants = 10, 60, 3, ["payload=random|repeated,linger_ms=0|1"]
    else:
        warmup, window, reps = 1, 2, 3
        variants = ["payload=random,linger_ms=0|1", "payload=repeated,linger_ms=1"]
    out = []
    # producers = threads / threads-per-producer for threads-per-producer in {all, 8, 4, 2, 1},
    # without duplicates (with 4 threads, "shared by 4" is "shared by all").
    for threads in (4, 8, 16, 24):
        producers = [1] + [threads // k for k in (8, 4, 2) if k < threads and threads % k == 0]
        listed = "".join("%d|" % p for p in producers) + "per_thread"
        out += ["%s,%s,threads=%d,producers=%s" % (common, v, threads, listed) for v in variants]
    return out, warmup, window, reps


def main(args):
    with Scenario(args, __file__) as scn:
        produce, warmup, window, reps = specs(scn)
        if not scn.bootstrap:
            scn.local_cluster("single", 1)
        else:
            info("using the cluster at %s (set KBENCH_BROKER_VERSION to record its version)" % scn.bootstrap)
        kargs = ["--bootstrap=" + scn.bootstrap, "--warmup-seconds=%s" % warmup,
                "--window-seconds=%s" % window, "--benchmark_filter=^Produce/", "--benchmark_min_time=0",
                "--benchmark_repetitions=%d" % reps] + [w for s in produce for w in ("--produce", s)]
        info("running %d threads x producers specs, %d repetition(s) of a %s s window..."
             % (len(produce), reps, window))
        scn.kbench(scn.out + "/producer-sharing.json", kargs)
        scn.report("--note", "Each of %d repetition(s): a %s s warm-up, then a %s s steady-state window "
                   "(original: 100M records measured after 25M of warm-up); cells show the median "
                   "[lowest–highest] over repetitions; one kbench process." % (reps, warmup, window))
