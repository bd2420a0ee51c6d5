"""Run kbench rows from many hosts at once through Apache Kafka's Trogdor, and merge the
agents' results into one Google Benchmark JSON.

    HOST=$(scripts/trogdor start --agents 3)
    BOOTSTRAP=$(scripts/kafka start --port-base auto --host "$HOST" --dir /tmp/k3)
    scripts/distributed run --agents 3 --bootstrap "$BOOTSTRAP" \\
        --produce 'acks=1,record_bytes=100,rate=20000' --out results/dist.json

One ExternalCommandSpec task per agent (scripts/trogdor-worker runs kbench there) goes
through the coordinator's REST API; all agents start kbench at one common time. The
merged file is what scripts/compare, scripts/plot and the summary read: each row's
throughput is the sum of the agents' rates over the window they all measured, its latency
percentiles are recomputed from the summed histogram buckets (never averaged), and the
agents' own JSON is kept under "kbench_agents". An agent that fails or disappears fails
every merged row with its name; the others' results are still written.

Exit status: 0 every row merged, 1 a row failed (the JSON is still written), 2 bad usage
or a spec kbench refuses.
"""

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

import kbench
from kbench import distributed as kd
from kbench.cli import ArgumentParser, check_out_file, die, dry_run_exit

ROOT = kbench.ROOT
SPEC_CLASS = "org.apache.kafka.trogdor.workload.ExternalCommandSpec"
# How long an agent may not answer before its row is failed as disappeared.
LOST_AFTER_SECONDS = 10.0


def parse_args():
    ap = ArgumentParser(prog="distributed", description=__doc__.split("\n\n")[0],
                        epilog=__doc__.split("\n\n", 2)[2],
                        formatter_class=__import__("argparse").RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run", help="run one task per agent and merge the results")
    run.add_argument("--agents", type=int, required=True, help="how many agents run the rows")
    spec = run.add_mutually_exclusive_group(required=True)
    spec.add_argument("--produce", metavar="SPEC", help="kbench --produce SPEC (one row set)")
    spec.add_argument("--consume", metavar="SPEC", help="kbench --consume SPEC")
    run.add_argument("--bootstrap", default=os.environ.get("KBENCH_BOOTSTRAP"),
                     help="bootstrap address as the agents reach it (env KBENCH_BOOTSTRAP)")
    run.add_argument("--filter", help="a --benchmark_filter (default: the spec's family)")
    run.add_argument("--window-seconds", type=float, default=2.0)
    run.add_argument("--warmup-seconds", type=float, default=1.0)
    run.add_argument("--repetitions", type=int, default=1)
    run.add_argument("-X", dest="settings", action="append", default=[], metavar="KEY=VALUE",
                     help="a librdkafka setting (no secrets: Trogdor logs the workload)")
    run.add_argument("--client-config", metavar="FILE",
                     help="a client config file at this path on every agent's host (secrets)")
    run.add_argument("--dir", default=os.environ.get("KBENCH_TROGDOR_DIR", "/tmp/kbench-trogdor"),
                     help="scripts/trogdor's state directory (default %(default)s)")
    run.add_argument("--kbench", default=os.path.join(ROOT, "build", "kbench"),
                     help="the kbench binary at this path on every agent's host")
    run.add_argument("--worker", default=os.path.join(ROOT, "scripts", "trogdor-worker"),
                     help="scripts/trogdor-worker at this path on every agent's host")
    run.add_argument("--start-delay", type=float, default=3.0,
                     help="seconds from submission to the common start (default %(default)s)")
    run.add_argument("--timeout", type=float, default=0,
                     help="seconds to wait for the agents (default: from the rows' windows)")
    run.add_argument("--out", default="distributed.json", help="merged JSON (default %(default)s)")
    return ap, ap.parse_args()


def http(method, url, body=None, timeout=10):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        text = r.read().decode()
    return json.loads(text) if text else {}


def read_cluster(d):
    try:
        coordinator = open(os.path.join(d, "coordinator")).read().strip()
        nodes = json.load(open(os.path.join(d, "cluster.json")))["nodes"]
    except (OSError, ValueError, KeyError) as e:
        die("no Trogdor cluster in %s (%s); run scripts/trogdor start first" % (d, e))
    agents = sorted((n for n, v in nodes.items() if "trogdor.agent.port" in v),
                    key=lambda n: (len(n), n))
    urls = {n: "http://%s:%s" % (nodes[n]["hostname"], nodes[n]["trogdor.agent.port"]) for n in agents}
    return coordinator, agents, urls


def check_spec(args):
    """kbench parses the spec itself: a spec it refuses is refused here, before any task."""
    if not os.access(args.kbench, os.X_OK):
        die("kbench not found at %s (build it, or give --kbench)" % args.kbench)
    argv = [args.kbench, "--benchmark_list_tests"]
    argv.append("--produce=" + args.produce if args.produce else "--consume=" + args.consume)
    argv.append("--benchmark_filter=" + (args.filter or ("^Produce/" if args.produce else "^Consume/")))
    for s in args.settings:
        argv += ["-X", s]
    p = subprocess.run(argv, capture_output=True, text=True)
    if p.returncode != 0:
        die("kbench refuses the spec: %s" % p.stderr.strip().splitlines()[0] if p.stderr.strip()
            else "kbench refuses the spec (exit %d)" % p.returncode)
    rows = [line for line in p.stdout.splitlines() if line.strip()]
    if not rows:
        die("the spec and filter select no kbench row")
    return rows


def main():
    ap, args = parse_args()
    if args.agents < 1:
        die("--agents must be at least 1")
    if not args.bootstrap:
        die("no bootstrap address: give --bootstrap HOST:PORT (as the agents reach it)")
    settings = {}
    for s in args.settings:
        key, sep, value = s.partition("=")
        if not sep or not key:
            die("-X takes KEY=VALUE, got %r" % s)
        if kd.is_secret_setting(key):
            die("-X %s is a secret: Trogdor logs and serves every workload, so pass secrets "
                "in --client-config FILE (a file on the agents' hosts)" % key)
        settings[key] = value
    if args.window_seconds <= 0 or args.warmup_seconds < 0 or args.repetitions < 1:
        die("--window-seconds must be > 0, --warmup-seconds >= 0, --repetitions >= 1")
    # The merged result is written after the whole workload: its path is checked first.
    check_out_file(args.out, "--out")
    rows = check_spec(args)
    dry_run_exit()
    coordinator, agents, agent_urls = read_cluster(args.dir)
    if args.agents > len(agents):
        die("--agents %d: the Trogdor cluster in %s has only %d agent(s)"
            % (args.agents, args.dir, len(agents)))
    agents = agents[:args.agents]

    t_submit = time.time()
    start_ms = int((t_submit + args.start_delay) * 1000)
    # Generous: each row runs warm-up, window and drain per repetition, plus start-up.
    budget = args.timeout or (args.start_delay + 30 + len(rows) * args.repetitions
                              * (args.warmup_seconds + args.window_seconds + 15))
    run_id = "kbench-%d" % int(t_submit * 1000)
    tasks = {}
    for agent in agents:
        workload = {"kbench": args.kbench, "bootstrap": args.bootstrap,
                    "window_seconds": args.window_seconds, "warmup_seconds": args.warmup_seconds,
                    "repetitions": args.repetitions, "settings": settings,
                    "start_unix_ms": start_ms, "agent": agent}
        workload["produce" if args.produce else "consume"] = args.produce or args.consume
        if args.filter:
            workload["filter"] = args.filter
        if args.client_config:
            workload["client_config_file"] = os.path.abspath(args.client_config)
        problems = kd.check_workload(workload)
        if problems:
            die("; ".join(problems))
        task = "%s-%s" % (run_id, agent)
        spec = {"class": SPEC_CLASS, "startMs": int(t_submit * 1000), "durationMs": int(budget * 1000),
                "commandNode": agent, "command": [args.worker], "workload": workload,
                "shutdownGracePeriodMs": 5000}
        try:
            http("POST", coordinator + "/coordinator/task/create", {"id": task, "spec": spec})
        except (urllib.error.URLError, OSError) as e:
            die("the coordinator at %s refused task %s: %s" % (coordinator, task, e), status=1)
        tasks[agent] = task
    print("distributed: %d task(s) submitted to %s; common start in %.1f s; rows: %s"
          % (len(tasks), coordinator, args.start_delay, ", ".join(rows)), file=sys.stderr)

    results, failures = wait_for(coordinator, tasks, agent_urls, t_submit + budget + 15)
    benchmarks, intervals, errors = kd.merge(results, failures, rows)
    context = dict(results[min(results)].get("context", {})) if results else {}
    context["distributed_agents"] = ",".join(agents)
    context["distributed_coordinator"] = coordinator
    context["distributed_start_unix_ms"] = str(start_ms)
    out = {"context": context, "benchmarks": benchmarks, "kbench_intervals": intervals,
           "kbench_agents": {a: results.get(a) for a in agents},
           "kbench_agent_failures": failures}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    # The results are in the file now: free the coordinator of them (each task holds its
    # agent's whole JSON), so a long-lived coordinator does not grow run after run.
    for task in tasks.values():
        try:
            http("DELETE", coordinator + "/coordinator/tasks?taskId=" + task)
        except (urllib.error.URLError, OSError, ValueError):
            pass
    for b in benchmarks:
        if b.get("error_occurred"):
            continue
        print("%s: %.0f records/s over %.2f s, p99 %s us (%d agents)"
              % (b["name"], b.get("items_per_second", 0), b.get("window_seconds", 0),
                 b.get("p99_us", b.get("queue_p99_us", "-")), len(agents)), file=sys.stderr)
    for e in errors:
        print("distributed: error: %s" % e, file=sys.stderr)
    print("distributed: wrote %s" % args.out, file=sys.stderr)
    return 1 if errors or not benchmarks else 0


def wait_for(coordinator, tasks, agent_urls, deadline):
    """Polls the coordinator until every task is DONE; returns ({agent: result},
    {agent: why it failed}). An agent that stops answering is failed by name."""
    results, failures, last_seen, progress = {}, {}, {}, {}
    pending = dict(tasks)
    while pending:
        now = time.time()
        try:
            query = "&".join("taskId=" + t for t in pending.values())
            states = http("GET", coordinator + "/coordinator/tasks?" + query).get("tasks", {})
        except (urllib.error.URLError, OSError, ValueError) as e:
            states = {}
            if now > deadline:
                for agent in pending:
                    failures[agent] = "the coordinator stopped answering (%s)" % e
                break
        for agent, task in list(pending.items()):
            state = states.get(task, {})
            status = state.get("status") or {}
            if isinstance(status, dict) and status.get("progress") and status["progress"] != progress.get(agent):
                progress[agent] = status["progress"]
                print("%s: %s" % (agent, status["progress"]), file=sys.stderr)
            if state.get("state") == "DONE":
                del pending[agent]
                result = status.get("result") if isinstance(status, dict) else None
                if result:
                    results[agent] = result
                # A row that failed on the agent fails its merged row by itself; anything
                # else that went wrong there fails every row.
                row_failed = result and any(b.get("error_occurred") for b in result.get("benchmarks", []))
                if state.get("error") and not row_failed:
                    failures[agent] = state["error"]
                elif not result:
                    failures[agent] = "finished without a result"
                continue
            try:
                http("GET", agent_urls[agent] + "/agent/status", timeout=3)
                last_seen[agent] = now
            except (urllib.error.URLError, OSError, ValueError):
                if now - last_seen.setdefault(agent, now) > LOST_AFTER_SECONDS:
                    failures[agent] = "the agent disappeared (no answer for %.0f s)" % LOST_AFTER_SECONDS
                    del pending[agent]
                    stop_task(coordinator, task)
            if agent in pending and now > deadline:
                failures[agent] = "no result within the time budget"
                del pending[agent]
                stop_task(coordinator, task)
        if pending:
            time.sleep(0.5)
    return results, failures


def stop_task(coordinator, task):
    try:
        http("PUT", coordinator + "/coordinator/task/stop", {"id": task})
    except (urllib.error.URLError, OSError, ValueError):
        pass


if __name__ == "__main__":
    sys.exit(main())
