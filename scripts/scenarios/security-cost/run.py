"""security-cost — what encryption and authentication cost a producer and a consumer:
records/s, MB/s, client CPU per MB and latency on plaintext, TLS, SASL_SSL (SCRAM-SHA-512)
and mutual TLS. One one-broker cluster per protocol (Kafka KBENCH_KAFKA_VERSION, default
3.9.1), all started first, then rounds in which every protocol runs the same kbench rows
once, in a rotating order. --bootstrap is refused: every protocol needs its own cluster."""

import os

from kbench.cli import die, info
from kbench.scenario_runner import Scenario, kafka_version

# Debian's librdkafka 2.0.2 cannot authenticate with SCRAM to Kafka 4.x (3.9.1 accepts it):
# the same broker release for every protocol keeps the ratios about the protocol alone.
DEFAULT_BROKER = "3.9.1"


def main(args):
    if args.bootstrap:
        die("--bootstrap is not supported: security-cost starts one cluster per protocol itself")
    with Scenario(args, __file__) as scn:
        version = kafka_version(DEFAULT_BROKER)
        produce = ["acks=1|all,codec=none|lz4,record_bytes=100|1000",
                   "acks=all,codec=none,record_bytes=100|1000,rate=2000"]
        consume = ["record_bytes=100|1000"]
        if scn.tiny:
            protocols, rounds, window = ["plaintext", "ssl"], 1, 1
            produce, consume = ["acks=1,codec=none,record_bytes=100|1000"], ["record_bytes=100,records=20000"]
        elif scn.scale == "full":
            protocols, rounds, window = ["plaintext", "ssl", "sasl_plaintext", "sasl_ssl", "mtls"], 5, 10
        else:
            protocols, rounds, window = ["plaintext", "ssl", "sasl_ssl", "mtls"], 3, 2

        clusters = {p: scn.cluster_start(p, 1, version, p) for p in protocols}
        os.environ["KBENCH_BROKER_VERSION"] = version
        os.makedirs(scn.out + "/raw", exist_ok=True)
        kargs = ["--benchmark_filter=^(Produce/send|Consume/read)/", "--benchmark_min_time=0",
                "--window-seconds=%d" % window, "--warmup-seconds=1"]
        kargs += ["--produce=" + s for s in produce] + ["--consume=" + s for s in consume]

        n = len(protocols)
        for r in range(1, rounds + 1):
            for i in range(n):
                p = protocols[(i + r - 1) % n]
                bootstrap, config = clusters[p]
                # The client settings come from the cluster's file: no secret on a command line or in a log.
                scn.try_kbench("%s-round%d" % (p, r), "%s/round%d" % (p, r), "%s, round %d" % (p, r),
                               ["--bootstrap=" + bootstrap, "--client-config=" + config] + kargs)
            info("round %d of %d done (%d s so far)" % (r, rounds, scn.elapsed()))

        if not any([scn.merge_rounds(p, p + "-round*.json", "the %s results" % p) for p in protocols]):
            die("every run failed (see %s/logs/)" % scn.out, 1)
        if not os.path.isfile(scn.out + "/plaintext.json"):
            die("the plaintext runs failed: no baseline for the ratios (see %s/logs/)" % scn.out, 1)
        scn.notes = ["%d round(s); in each, every protocol ran the same rows once in a rotating order "
                     "(median of the rounds shown); windows of %d s after 1 s of warm-up; Kafka %s, one "
                     "broker per protocol, all started before the first round." % (rounds, window, version)]
        scn.finish(rounds * n, "protocol runs", "missing", "--protocols", " ".join(protocols))
