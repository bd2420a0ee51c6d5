"""kbench as a Trogdor workload: the command of an ExternalCommandSpec task.

A Trogdor agent writes one line {"id": TASK, "workload": {...}} (distributed.WORKLOAD_KEYS)
on its stdin and reads JSON lines from its stdout: {"status": ...} replaces the task's
status, {"error": "..."} fails the task. kbench's progress lines become statuses; the last
is {"state": "done", "exit_code": N, "result": <kbench's JSON>}.
Exit status: kbench's, 2 for a workload that cannot run, 1 when interrupted.
"""

import contextlib
import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

from kbench.commands import distributed

_out_lock = threading.Lock()


def emit(obj):
    # One line per message, flushed: the agent reads stdout line by line.
    with _out_lock:
        sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
        sys.stdout.flush()


def die_with_parent():
    """kbench ends when this worker does: prctl(PR_SET_PDEATHSIG, SIGKILL) in kbench (SIGTERM
    would finish a window that nobody is left to collect)."""
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)


def kbench_argv(w, out_json):
    family = "Produce" if w.get("produce") else "Consume"
    argv = [w["kbench"], "--bootstrap=" + w["bootstrap"]]
    argv += ["--%s=%s" % (key, w[key]) for key in ("produce", "consume") if w.get(key)]
    argv.append("--benchmark_filter=" + (w.get("filter") or "^%s/" % family))
    argv += ["%s=%s" % (opt, w[key]) for key, opt in (("window_seconds", "--window-seconds"),
             ("warmup_seconds", "--warmup-seconds"), ("repetitions", "--benchmark_repetitions")) if key in w]
    argv += [word for key, value in sorted(w.get("settings", {}).items()) for word in ("-X", "%s=%s" % (key, value))]
    if w.get("client_config_file"):
        argv.append("--client-config=" + w["client_config_file"])
    if w.get("produce"):
        # Set up now, the first record at the common start: set-up times do not skew windows.
        argv.append("--start-at=%.3f" % (w["start_unix_ms"] / 1000.0))
    argv += ["--benchmark_out=" + out_json, "--benchmark_out_format=json"]
    return argv


def watch_agent(on_gone):
    """ON_GONE() at the end of stdin, which the agent keeps open until it dies."""
    def run():
        while sys.stdin.readline():
            pass
        on_gone()
    threading.Thread(target=run, daemon=True).start()


def add_arguments(parser):
    """No options: the task comes on stdin."""


def main(_args):
    line = sys.stdin.readline()
    try:
        request = json.loads(line)
        task, workload = request["id"], request["workload"]
    except (ValueError, KeyError, TypeError):
        emit({"error": "expected {\"id\", \"workload\"} on stdin, got %r" % line[:200]})
        return 2
    problems = distributed.check_workload(workload)
    if problems:
        emit({"status": {"state": "refused"}, "error": "; ".join(problems)})
        return 2
    agent = workload.get("agent", "")
    made_dir = not workload.get("out_dir")
    out_dir = workload.get("out_dir") or tempfile.mkdtemp(prefix="kbench-trogdor-%s-" % task)
    os.makedirs(out_dir, exist_ok=True)
    out_json = os.path.join(out_dir, "kbench.json")
    argv = kbench_argv(workload, out_json)

    child = None

    def on_term(signum, _frame):
        # The result can no longer be delivered: kbench gets a second, not a window, to end.
        if child and child.poll() is None:
            child.terminate()
            try:
                child.wait(timeout=1)
            except subprocess.TimeoutExpired:
                child.kill()
        emit({"error": "stopped by signal %d before kbench finished" % signum})
        sys.exit(1)

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    # From the watcher thread: a signal to ourselves runs on_term in the main thread.
    watch_agent(lambda: os.kill(os.getpid(), signal.SIGTERM))

    start = workload["start_unix_ms"] / 1000.0
    emit({"status": {"state": "starting", "agent": agent, "start_in_seconds": round(start - time.time(), 3)}})
    if not workload.get("produce") and start > time.time():
        time.sleep(start - time.time())  # Consume rows have no --start-at: start them then
    started = time.time()
    log_path = os.path.join(out_dir, "kbench.log")
    # kbench's table goes to the log, its progress lines (nothing secret) become statuses.
    with open(log_path, "w") as log:
        child = subprocess.Popen(argv, stdout=log, stderr=subprocess.PIPE, text=True, preexec_fn=die_with_parent)
        tail = []
        for text in child.stderr:
            text = text.rstrip("\n")
            log.write(text + "\n")
            log.flush()
            tail = (tail + [text])[-5:]
            emit({"status": {"state": "running", "agent": agent, "progress": text}})
        rc = child.wait()
    try:
        with open(out_json) as f:
            result = json.load(f)
    except (OSError, ValueError):
        result = None
    emit({"status": {"state": "done", "agent": agent, "exit_code": rc,
                     "start_unix_seconds": started, "out_dir": out_dir, "result": result}})
    if rc != 0:
        emit({"error": "kbench exited with status %d: %s (log: %s)" % (rc, " | ".join(tail), log_path)})
    elif made_dir:
        shutil.rmtree(out_dir, ignore_errors=True)  # the result went out in the status
    return rc

