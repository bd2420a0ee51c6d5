"""acks-replication — seed 001 (Bert Corderman, 2014): MB/s and records/s by record size
{200, 300, 1000, 2200}, acks {0, 1, all} and replication {2, 3} on a three-broker cluster,
batches of 1 record against batches of 200, one producer process against three concurrent
ones (their records/s summed). A 3-broker cluster is started here unless --bootstrap names
one of at least 3 brokers (checked before anything runs; exit 2 if it is smaller). Every
process uses socket.nagle.disable=true (the Java client's TCP_NODELAY)."""

import itertools
import os

from kbench.cli import die, info
from kbench.scenario_runner import Scenario

BROKERS = 3


def matrix(scn):
    """(sizes, acks, replications, repetitions, warm-up s, window s, modes run by three processes) of the scale."""
    if scn.tiny:
        return [300], ["0", "1", "all"], [3], 1, 0.5, 1, ["b200"]
    if scn.scale == "full":
        return [200, 300, 1000, 2200], ["0", "1", "all"], [2, 3], 5, 5, 30, ["b1", "b200"]
    return [200, 300, 1000, 2200], ["0", "1", "all"], [2, 3], 3, 1, 2, ["b200"]


def case_args(mode, size, acks, rf):
    """kbench arguments of one case. A closed loop keeps the client's queue full: it is capped
    so that a slow unbatched case stays far from the 30 s message timeout."""
    spec = "acks=%s,codec=none,record_bytes=%d,partitions=3,replication=%d" % (acks, size, rf)
    batch, linger, records, queue = (size, 0, 1, 1000) if mode == "b1" else (200 * size, 10, 200, 20000)
    # acks=0 may lose records by design: the case reports lost_records instead of failing.
    return (["--produce=%s,linger_ms=%d,batch_bytes=%d" % (spec, linger, batch), "-X",
             "batch.num.messages=%d" % records, "-X", "queue.buffering.max.messages=%d" % queue]
            + (["--allow-loss"] if acks == "0" else []))


def run_case(scn, common, mode, size, acks, rf, procs):
    """One case, in PROCS concurrent kbench processes; a failed case is recorded and the rest go on."""
    tag = "%s-s%d-a%s-r%d-p%d" % (mode, size, acks, rf, procs)
    args = common + case_args(mode, size, acks, rf)
    raw = ["%s/raw/%s-%d.json" % (scn.out, tag, i) for i in range(1, procs + 1)]
    logs = [scn.log_of(path) for path in raw]
    for path in raw:
        scn.note_kbench(path, args, " &")
    if any(scn.run_together([(scn.kbench_command(path, args), log) for path, log in zip(raw, logs)])):
        scn.fail(tag, "case " + tag, logs)
        for path in raw:
            if os.path.exists(path):
                os.remove(path)
        return
    if procs > 1:
        scn.merge("%s/raw/%s-sum.json" % (scn.out, tag), raw, tag, concurrent=True)


def main(args):
    with Scenario(args, __file__) as scn:
        sizes, acks_list, rfs, reps, warmup, window, triple_modes = matrix(scn)
        if scn.bootstrap:
            # Refuse before running anything: replication 3 on a smaller cluster cannot be created.
            scn.require_brokers(scn.bootstrap, BROKERS)
        else:
            scn.local_cluster("three", BROKERS)
        os.makedirs(scn.out + "/raw", exist_ok=True)

        common = ["--bootstrap=" + scn.bootstrap, "--benchmark_filter=^Produce/", "--benchmark_min_time=0",
                  "--benchmark_repetitions=%d" % reps, "--warmup-seconds=%s" % warmup,
                  "--window-seconds=%s" % window, "-X", "socket.nagle.disable=true"]
        total = 0
        for mode in ("b1", "b200"):
            for size, acks, rf in itertools.product(sizes, acks_list, rfs):
                for procs in (1, 3) if mode in triple_modes else (1,):
                    run_case(scn, common, mode, size, acks, rf, procs)
                    total += 1
            info("batches of %s: done (%d s so far)" % (mode[1:], scn.elapsed()))

        if not scn.merge_rounds("single", "*-p1-1.json"):
            die("every case failed (see %s/logs/)" % scn.out, 1)
        scn.merge_rounds("three-processes", "*-p3-sum.json")

        scn.notes = ["Each of %d repetition(s): a %s s warm-up, then a %s s steady-state window; cells show "
                     "the median [lowest–highest] over repetitions; one topic of 3 partitions per case and "
                     "process." % (reps, warmup, window)]
        scn.finish(total, "cases", "missing from the tables")
