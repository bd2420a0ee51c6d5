"""The supervisor of kbench's JVM services (kbench.kafka_cluster, kbench.commands.trogdor): state
directories, Java, classpaths resolved by Maven, and JVMs started detached with a pid file
and a log, waited for and stopped. Failures raise ServiceError(message, status).
"""

import contextlib
import fcntl
import glob
import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.request

from kbench import build_stamp, cli, proc

# Attempts before free_ports gives up, each with a fresh port from the kernel.
ATTEMPTS = 50
# Pinned so that resolution behaves the same on every machine.
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"


class ServiceError(Exception):
    """A service cannot do what it was asked; STATUS is the exit status it means."""

    def __init__(self, message, status=1):
        super().__init__(message)
        self.status = status


def terminate(signum, _frame):
    """A SIGTERM handler: end as Ctrl-C does (clean-ups run), exit status 128 + SIGTERM."""
    raise SystemExit(128 + signum)


def run_command(args):
    """The main of a service's command: SIGTERM stops what it began; a ServiceError is its
    message and exit status."""
    signal.signal(signal.SIGTERM, terminate)
    try:
        return args.run(args) or 0
    except ServiceError as e:
        cli.die(str(e), e.status)


def read(path):
    """A file's text without its trailing newlines."""
    return pathlib.Path(path).read_text(encoding="utf-8", errors="surrogateescape").rstrip("\n")


def read_or(path, default):
    return read(path) if os.path.isfile(path) else default


def write_line(path, text):
    pathlib.Path(path).write_text(text + "\n", encoding="utf-8")


def remove(*patterns):
    """Delete what each glob pattern matches, folders with their contents."""
    for pattern in patterns:
        for p in glob.glob(pattern):
            if os.path.isdir(p) and not os.path.islink(p):
                shutil.rmtree(p, ignore_errors=True)
            else:
                pathlib.Path(p).unlink(missing_ok=True)


def env_opts(name, default=""):
    """JVM options from environment variable NAME, split on blanks as KAFKA_OPTS is."""
    return (os.environ.get(name) or default).split()


def log_tail(path):
    """A log's last lines, indented, for error messages ("" when there is none)."""
    text = proc.tail(path, 15)
    return ("\n" + "\n".join("    " + line for line in text.split("\n"))) if text else ""


class Service:
    """One service: NAME, its state directory's marker file, and the directory's variable and default."""

    def __init__(self, name, marker, dir_env, default_dir):
        self.name, self.marker, self.dir_env, self.default_dir = name, marker, dir_env, default_dir
        self.command = "scripts/" + name.lower()

    def state_dir(self, d=None):
        """D, else $DIR_ENV, else the default; absolute, as pid() compares it."""
        return os.path.realpath(d or os.environ.get(self.dir_env) or self.default_dir)

    def owns(self, d):
        return os.path.isfile(os.path.join(d, self.marker))

    def check_dir(self, d):
        """Refuse (status 2) a D that is not new, empty or ours, or not writable."""
        cli.check_out_dir(d, "--dir")
        if os.path.exists(d) and not self.owns(d) and (not os.path.isdir(d) or os.listdir(d)):
            raise ServiceError("%s is not empty and not a kbench %s state directory (no %s); pick a new or "
                               "empty --dir" % (d, self.name, self.marker), 2)

    def claim_dir(self, d, text):
        os.makedirs(os.path.join(d, "logs"), exist_ok=True)
        write_line(os.path.join(d, self.marker), text)

    def lock(self, d, wait):
        """One start or stop at a time per D (WAIT 0: do not wait)."""
        return locked(os.path.join(d, ".lock"), wait, "another %s start/stop is working on %s" % (self.command, d))

    def stop(self, d, timeout, stop):
        """Stop what D runs: STOP(D, TIMEOUT) under D's lock; nothing to stop is fine."""
        if not self.owns(d):
            cli.info("nothing to stop: %s is not a kbench %s state directory" % (d, self.name))
            return
        with self.lock(d, 60):
            stop(d, timeout)
        cli.info("stopped; logs kept in %s/logs" % d)


@contextlib.contextmanager
def locked(path, wait, busy):
    """Hold an exclusive lock on PATH, waiting up to WAIT s for it (else ServiceError BUSY)."""
    with open(path, "w") as f:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise ServiceError(busy) from None
                time.sleep(0.1)
        yield


def find_java():
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "java"), os.X_OK):
        return os.path.join(home, "bin", "java")
    java = shutil.which("java")
    if not java:
        raise ServiceError("java not found. Run scripts/setup, or: apt-get install openjdk-17-jre-headless "
                           "(or set JAVA_HOME)", 2)
    return java


def java_major(java):
    """Major Java version of a java binary (8 for "1.8.0_x", else the first number)."""
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, errors="replace").stderr
    except OSError:
        return 0
    m = re.search(r'"([0-9]+)(\.([0-9]+))?', out.split("\n")[0])
    if not m:
        return 0
    return int(m.group(3) or 0) if m.group(1) == "1" else int(m.group(1))


def java(need, what):
    """The java binary, if it is Java NEED or newer (else ServiceError, status 2)."""
    binary = find_java()
    have = java_major(binary)
    if have < need:
        raise ServiceError("%s needs Java %d or newer, but %s is Java %d; install openjdk-17-jre-headless or "
                           "set JAVA_HOME" % (what, need, binary, have), 2)
    return binary


def classpath_valid(path):
    try:
        entries = pathlib.Path(path).read_text().partition("\n")[0].split(":")
    except OSError:
        return False
    return os.path.getsize(path) > 0 and all(e and os.path.isfile(e) for e in entries)


def classpath(c, what, fill):
    """The classpath of the jars in C/lib, which FILL(C) puts in C/lib.new the first time (locked)."""
    if classpath_valid(c + "/classpath"):
        return read(c + "/classpath")
    if not shutil.which("mvn"):
        raise ServiceError("mvn not found (needed once to fetch the jars of %s). Run scripts/setup, or: "
                           "apt-get install maven" % what, 2)
    os.makedirs(c, exist_ok=True)
    with locked(c + "/.lock", 900, "timed out waiting for another resolution of %s (%s/.lock)" % (what, c)):
        if not classpath_valid(c + "/classpath"):  # else someone else just finished
            t0 = time.monotonic()
            cli.info("resolving %s with Maven into %s (jars not cached yet)" % (what, c))
            fill(c)
            shutil.rmtree(c + "/lib", ignore_errors=True)
            os.rename(c + "/lib.new", c + "/lib")
            jars = sorted(glob.glob(c + "/lib/*.jar"))
            write_line(c + "/classpath.new", ":".join(jars))
            os.rename(c + "/classpath.new", c + "/classpath")
            cli.info("resolved %s: %d jars in %.0f s" % (what, len(jars), time.monotonic() - t0))
    return read(c + "/classpath")


def write_pom(path, prog, version, what, gavs):
    """A throwaway pom whose runtime dependencies (GROUP:ARTIFACT:VERSION) are the classpath."""
    deps = "".join("    <dependency>\n      <groupId>%s</groupId>\n      <artifactId>%s</artifactId>\n"
                   "      <version>%s</version>\n    </dependency>\n" % tuple(gav.split(":", 2)) for gav in gavs)
    pathlib.Path(path).write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        "<!-- Generated by kbench scripts/%s: the runtime classpath of %s. -->\n"
        '<project xmlns="http://maven.apache.org/POM/4.0.0">\n  <modelVersion>4.0.0</modelVersion>\n'
        "  <groupId>kbench.local</groupId>\n  <artifactId>%s-runtime</artifactId>\n"
        "  <version>%s</version>\n  <packaging>pom</packaging>\n  <dependencies>\n%s"
        "  </dependencies>\n</project>\n" % (prog, what, prog, version, deps))


def mvn(c, probe=""):
    """Copy C/pom.xml's runtime dependencies into C/lib.new, offline first if PROBE is cached; False: failed."""
    # One local Maven repository for every service: Kafka's client jars are shared.
    repo = build_stamp.cache_dir("kafka/m2")
    args = ["-B", "-q", "-f", c + "/pom.xml", "-Dmaven.repo.local=" + repo,
            DEPENDENCY_PLUGIN + ":copy-dependencies", "-DincludeScope=runtime", "-DoutputDirectory=" + c + "/lib.new"]

    def run(extra):
        shutil.rmtree(c + "/lib.new", ignore_errors=True)
        pathlib.Path(c, "mvn.log").unlink(missing_ok=True)
        return proc.run(["mvn"] + extra + args, log=c + "/mvn.log").returncode == 0
    if probe and os.path.isdir(repo + "/" + probe) and run(["-o"]):
        return True
    return run([])


def render_template(src, out, values):
    """SRC with @KEY@ replaced by VALUES[KEY], to OUT; a leftover placeholder is refused."""
    text = read(src)
    for key, value in values.items():
        text = text.replace("@%s@" % key, str(value))
    m = re.search(r"@[A-Z_]+@", text)
    if m:
        raise ServiceError("template %s has an unfilled placeholder %s" % (src, m.group(0)))
    write_line(out, text)


def launch(pidfile, log, label, ns, cmd):
    """Start CMD detached (in namespace NS unless empty), output to LOG, pid in PIDFILE (pid() checks it)."""
    wrap = ["ip", "netns", "exec", ns] if ns else []  # ip execs CMD: the pid stays the JVM's
    with open(log, "w") as out:
        child = subprocess.Popen(wrap + [cmd[0], "-Dkbench.pidfile=" + pidfile] + cmd[1:],
                                 stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                 start_new_session=True)
    write_line(pidfile, str(child.pid))
    # The command line is the check of pid(): ip's and then the JVM's carry the pid file.
    for _ in range(50):
        if pid(pidfile) or child.poll() is not None:
            break
        time.sleep(0.1)
    if not pid(pidfile):
        raise ServiceError("%s did not start; see %s:%s" % (label, log, log_tail(log)))


def pid(pidfile):
    """The pid if it is the live JVM launch() started with this pid file (never a recycled pid), else None."""
    try:
        p = int(read(pidfile))
    except (OSError, ValueError):
        return None
    # Between two programs (ip netns exec becoming java) the kernel shows an empty command line
    # for a moment, longer on a loaded machine; so does a process that has exited (a zombie).
    deadline = time.monotonic() + 2
    while True:
        try:
            cmdline = pathlib.Path("/proc/%d/cmdline" % p).read_bytes()
            if cmdline or exited(p) or time.monotonic() > deadline:
                break
        except OSError:
            return None
        time.sleep(0.001)
    words = cmdline.decode("utf-8", "surrogateescape").split("\0")
    return str(p) if "-Dkbench.pidfile=" + pidfile in words else None


def exited(p):
    """Whether process P has exited and waits to be reaped (or is being)."""
    try:
        return pathlib.Path("/proc/%d/stat" % p).read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (OSError, IndexError):
        return True


def state(pidfiles):
    """running, stopped or partial."""
    alive = sum(1 for f in pidfiles if pid(f))
    return "stopped" if alive == 0 else "running" if alive == len(pidfiles) else "partial"


def status_exit(st):
    """What status exits with: 0 running, 3 stopped, 1 partial."""
    return {"running": 0, "stopped": 3}.get(st, 1)


def wait(timeout, period, ready, died, late, pidfiles):
    """Every PERIOD s until READY(); ServiceError(DIED(PIDFILE)) when a JVM exits, LATE() after TIMEOUT s."""
    deadline = time.monotonic() + timeout
    while True:
        for f in pidfiles:
            if not pid(f):
                raise ServiceError(died(f))
        if ready():
            return
        if time.monotonic() >= deadline:
            raise ServiceError(late())
        time.sleep(period)


def stop(sig, timeout, what, pidfiles):
    """SIG, then SIGKILL after TIMEOUT s, to the live JVMs of PIDFILES; False when none was alive."""
    live = [(f, p) for f, p in ((f, pid(f)) for f in pidfiles) if p]
    if live:
        pids = [p for _, p in live]
        cli.info("stopping %s: pid %s (%s)" % (what, " ".join(pids), signal.Signals(sig).name))
        kill(sig, pids)
        deadline, killed = time.monotonic() + timeout, False
        while True:
            left = [p for p in (pid(f) for f, _ in live) if p]
            if not left:
                break
            if time.monotonic() >= deadline:
                if killed:
                    break
                cli.info("%s: pid %s did not stop within %d s; sending SIGKILL" % (what, " ".join(left), timeout))
                kill(signal.SIGKILL, left)
                killed, deadline = True, time.monotonic() + 5
            time.sleep(0.2)
    for f in pidfiles:
        pathlib.Path(f).unlink(missing_ok=True)
    return bool(live)


def kill(sig, pids):
    for p in pids:
        with contextlib.suppress(OSError):
            os.kill(int(p), sig)


def port_open(host, port):
    """Something accepts connections on HOST:PORT."""
    try:
        with socket.create_connection((host, int(port)), timeout=2):
            return True
    except OSError:
        return False


def bind(host, port):
    """A socket bound to (host, port), or None when the port is taken."""
    s = socket.socket()
    try:
        s.bind((host, port))
        return s
    except OSError:
        s.close()
        return None


def free_ports(host, count, offset):
    """P with P..P+COUNT-1 and P+OFFSET..P+OFFSET+COUNT-1 free on HOST now, or None."""
    for _ in range(ATTEMPTS):
        first = bind(host, 0)
        if first is None:
            return None
        base = first.getsockname()[1]
        ports = list(range(base + 1, base + count)) + list(range(base + offset, base + offset + count))
        held = [first] + [bind(host, p) if p <= 65535 else None for p in ports]
        for s in filter(None, held):
            s.close()
        if all(held):
            return base
    return None


def answers(urls):
    """Every URL answers a GET with 2xx within 5 s (the first that does not ends the probe)."""
    for url in urls:
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                r.read()
        except Exception:  # noqa: BLE001 — whatever fails, the service is not ready yet
            return False
    return True
