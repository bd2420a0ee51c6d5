"""The supervisor of kbench's JVM services (scripts/kafka, scripts/trogdor): their state
directories, Java, classpaths resolved by Maven, and their JVMs, each started detached with
a pid file and a log, waited for, reported and stopped (SIGTERM, then SIGKILL). The service
modules (kbench.commands.kafka, kbench.commands.trogdor) keep what is theirs: configuration,
command lines, readiness checks and messages.
"""

import contextlib
import fcntl
import glob
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request

from kbench import cli, shell

# Attempts before free_ports gives up: each takes a fresh port from the kernel, and only a
# machine whose ports are nearly all taken fails them all.
ATTEMPTS = 50
# Pinned so that resolution behaves the same on every machine.
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"


def read_text(path):
    """A file's text as $(<FILE) gives it: trailing newlines dropped."""
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        return f.read().rstrip("\n")


def write_line(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text + "\n")


def remove(*patterns):
    """rm -rf of each glob pattern."""
    for pattern in patterns:
        for p in glob.glob(pattern):
            if os.path.isdir(p) and not os.path.islink(p):
                shutil.rmtree(p, ignore_errors=True)
            else:
                with contextlib.suppress(FileNotFoundError):
                    os.remove(p)


def split_opts(value):
    """An option string split on blanks as `read -ra` splits it (its first line only)."""
    return (value or "").split("\n")[0].split()


def tail_log(path):
    """A log's last lines, indented, for error messages ("" when there is none)."""
    if not os.path.isfile(path):
        return ""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = shell.last_lines(f.read(), 15)
    return ("\n" + "\n".join("    " + line for line in text.split("\n"))) if text else ""


def seconds():
    """bash's SECONDS: whole seconds, for the durations the messages report."""
    return int(time.monotonic())


class Service:
    """One service: PROG (the script's name), NAME (in messages: Kafka, Trogdor), the file
    that marks a state directory as its own, the environment variable and default of that
    directory, and USAGE (prints the help)."""

    def __init__(self, prog, name, marker, dir_env, default_dir, usage):
        self.prog, self.name, self.marker = prog, name, marker
        self.dir_env, self.default_dir, self.usage = dir_env, default_dir, usage
        self.command = "scripts/" + prog
        self.locks = []  # open lock files: held until the process ends
        self.cleanup = None
        cli.prog = prog

    def bad_usage(self, message):
        cli.bad_usage(message, self.command)

    # ------------------------------------------------------------ state directories

    def state_dir(self, d=""):
        """DIR, else $DIR_ENV, else the default; absolute, so that pid checks against
        /proc/PID/cmdline compare like with like."""
        d = d or os.environ.get(self.dir_env) or self.default_dir
        if not d:
            self.bad_usage("empty state directory")
        return os.path.realpath(d)

    def check_dir(self, d):
        """Refuse (exit 2) a DIR that is not new, empty or ours (start deletes what an
        earlier start left), or not writable."""
        cli.check_out_dir(d, "--dir")
        if os.path.exists(d) and not os.path.isfile(os.path.join(d, self.marker)):
            if not os.path.isdir(d) or os.listdir(d):
                self.bad_usage("%s is not empty and not a kbench %s state directory (no %s); pick a new or empty --dir"
                               % (d, self.name, self.marker))

    def claim_dir(self, d, text):
        os.makedirs(os.path.join(d, "logs"), exist_ok=True)
        write_line(os.path.join(d, self.marker), text)

    def lock(self, d, wait):
        """One start or stop at a time per DIR (WAIT 0: do not wait)."""
        if not flock(os.path.join(d, ".lock"), wait, self.locks):
            cli.die("another scripts/%s start/stop is working on %s" % (self.prog, d), 1)

    def check_timeout(self, t):
        if not (cli.is_uint(t) and int(t) >= 1):
            self.bad_usage("--timeout must be a positive number of seconds, got '%s'" % t)
        return int(t)

    def opts(self, cmd, spec, argv):
        """A command's options: SPEC maps --NAME to its default value, or to False for a flag
        (then True when given); -h/--help prints the usage; anything else is refused."""
        values = {k.lstrip("-").replace("-", "_"): v for k, v in spec.items()}
        i = 0
        while i < len(argv):
            a = argv[i]
            if a in ("-h", "--help"):
                self.usage()
                sys.exit(0)
            if a not in spec:
                self.bad_usage("%s: unknown argument '%s'" % (cmd, a))
            key = a.lstrip("-").replace("-", "_")
            if spec[a] is False:
                values[key] = True
                i += 1
            else:
                values[key] = self.need_value(argv, i)
                i += 2
        return values

    def need_value(self, argv, i):
        if i + 1 >= len(argv) or not argv[i + 1]:
            self.bad_usage("option %s needs a value" % argv[i])
        return argv[i + 1]

    def cmd_stop(self, argv, timeout, stop):
        """The stop command: --dir, --timeout (default TIMEOUT), then STOP(DIR, TIMEOUT) under
        DIR's lock."""
        o = self.opts("stop", {"--dir": "", "--timeout": str(timeout)}, argv)
        d = self.state_dir(o["dir"])
        timeout = self.check_timeout(o["timeout"])
        cli.dry_run_exit()
        if not os.path.isfile(os.path.join(d, self.marker)):
            cli.info("nothing to stop: %s is not a kbench %s state directory" % (d, self.name))
            return 0
        self.lock(d, 60)
        stop(d, timeout)
        cli.info("stopped; logs kept in %s/logs" % d)
        return 0

    # ------------------------------------------------------------ guard

    def guard(self, cleanup):
        """From now until unguard, any end of the tool (an error, a timeout, Ctrl-C) runs
        CLEANUP first, quietly, so that a start that fails takes down what it started."""
        self.cleanup = cleanup
        shell.Trap({signal.SIGINT: 130, signal.SIGTERM: 130}).install()

    def unguard(self):
        self.cleanup = None
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)

    def run(self, main):
        """cli.run(MAIN), with the guard's clean-up on the way out."""
        def guarded(argv):
            try:
                return main(argv)
            finally:
                if self.cleanup:
                    cleanup, self.cleanup = self.cleanup, None
                    with open(os.devnull, "w") as null, contextlib.redirect_stderr(null), \
                            contextlib.redirect_stdout(null), contextlib.suppress(Exception):
                        cleanup()
        cli.run(guarded)


def flock(path, wait, held):
    """Lock PATH (waiting up to WAIT s; 0: not at all); the open file goes to HELD."""
    f = open(path, "w")  # noqa: SIM115 — held until released or the process ends
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            held.append(f)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                f.close()
                return False
            time.sleep(0.1)


# ---------------------------------------------------------------- Java

def find_java():
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "java"), os.X_OK):
        return os.path.join(home, "bin", "java")
    java = shutil.which("java")
    if not java:
        cli.die("java not found. Run scripts/setup, or: apt-get install openjdk-17-jre-headless (or set JAVA_HOME)")
    return java


def java_major(java):
    """Major Java version of a java binary (8 for "1.8.0_x", else the first number)."""
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, errors="replace").stderr
    except OSError:
        return 0
    m = re.search(r'"([0-9]+)(\.([0-9]+))?', (out.split("\n") or [""])[0])
    if not m:
        return 0
    return int(m.group(3) or 0) if m.group(1) == "1" else int(m.group(1))


def check_java(java, need, what):
    """Exit 2 unless JAVA is Java NEED or newer."""
    have = java_major(java)
    if have < need:
        cli.die("%s needs Java %d or newer, but %s is Java %d; install openjdk-17-jre-headless or set JAVA_HOME"
                % (what, need, java, have))


# ---------------------------------------------------------------- classpaths

def cache_home():
    if os.environ.get("KBENCH_CACHE"):
        return os.environ["KBENCH_CACHE"]
    if not os.environ.get("HOME"):
        cli.die("HOME is not set; set KBENCH_CACHE", 1)
    return os.environ["HOME"] + "/.cache/kbench"


def maven_repo():
    # One local Maven repository for every service: Kafka's client jars are shared.
    return cache_home() + "/kafka/m2"


def classpath_valid(path):
    try:
        with open(path) as f:
            entries = f.readline().rstrip("\n").split(":")
    except OSError:
        return False
    return os.path.getsize(path) > 0 and all(e and os.path.isfile(e) for e in entries)


def classpath(c, what, fill):
    """The classpath of the jars in C/lib. The first time, FILL(C) puts them in C/lib.new
    (a Maven run takes minutes; a lock makes a second script wait for the first one's
    instead of starting its own)."""
    if classpath_valid(c + "/classpath"):
        return read_text(c + "/classpath")
    if not shutil.which("mvn"):
        cli.die("mvn not found (needed once to fetch the jars of %s). Run scripts/setup, or: apt-get install maven"
                % what)
    os.makedirs(c, exist_ok=True)
    held = []
    if not flock(c + "/.lock", 900, held):
        cli.die("timed out waiting for another resolution of %s (%s/.lock)" % (what, c), 1)
    if not classpath_valid(c + "/classpath"):  # else someone else just finished
        t0 = seconds()
        cli.info("resolving %s with Maven into %s (jars not cached yet)" % (what, c))
        fill(c)
        shutil.rmtree(c + "/lib", ignore_errors=True)
        os.rename(c + "/lib.new", c + "/lib")
        jars = sorted(glob.glob(c + "/lib/*.jar"))
        write_line(c + "/classpath.new", ":".join(jars))
        os.rename(c + "/classpath.new", c + "/classpath")
        cli.info("resolved %s: %d jars in %d s" % (what, len(jars), seconds() - t0))
    held[0].close()  # release the lock before any JVM starts
    return read_text(c + "/classpath")


def write_pom(path, prog, version, what, gavs):
    """A throwaway pom whose runtime dependencies (GROUP:ARTIFACT:VERSION) are the classpath."""
    deps = ""
    for gav in gavs:
        g, a, v = (gav.split(":", 2) + ["", ""])[:3]
        deps += ("    <dependency>\n      <groupId>%s</groupId>\n      <artifactId>%s</artifactId>\n"
                 "      <version>%s</version>\n    </dependency>\n" % (g, a, v))
    with open(path, "w") as f:
        f.write('<?xml version="1.0" encoding="UTF-8"?>\n'
                "<!-- Generated by kbench scripts/%s: the runtime classpath of %s. -->\n"
                '<project xmlns="http://maven.apache.org/POM/4.0.0">\n  <modelVersion>4.0.0</modelVersion>\n'
                "  <groupId>kbench.local</groupId>\n  <artifactId>%s-runtime</artifactId>\n"
                "  <version>%s</version>\n  <packaging>pom</packaging>\n  <dependencies>\n%s"
                "  </dependencies>\n</project>\n" % (prog, what, prog, version, deps))


def mvn(c, probe=""):
    """Copy the runtime dependencies of C/pom.xml into C/lib.new; offline first when the
    local repository holds PROBE (a path under it), as it then may hold everything. False
    on failure: C/mvn.log says why."""
    repo = maven_repo()
    args = ["-B", "-q", "-f", c + "/pom.xml", "-Dmaven.repo.local=" + repo,
            DEPENDENCY_PLUGIN + ":copy-dependencies", "-DincludeScope=runtime", "-DoutputDirectory=" + c + "/lib.new"]

    def run(extra):
        shutil.rmtree(c + "/lib.new", ignore_errors=True)
        with open(c + "/mvn.log", "w") as log:
            return subprocess.run(["mvn"] + extra + args, stdout=log, stderr=subprocess.STDOUT).returncode == 0
    if probe and os.path.isdir(repo + "/" + probe) and run(["-o"]):
        return True
    return run([])


def render_template(src, out, values):
    """SRC with @KEY@ replaced by VALUES[KEY], to OUT; a leftover placeholder is refused."""
    if not os.path.isfile(src):
        cli.die("template %s is missing" % src, 1)
    text = read_text(src)
    for key, value in values.items():
        text = text.replace("@%s@" % key, str(value))
    m = re.search(r"@[A-Z_]+@", text)
    if m:
        cli.die("template %s has an unfilled placeholder %s" % (src, m.group(0)), 1)
    write_line(out, text)


# ---------------------------------------------------------------- processes

def _as_background_job():
    # What bash gives a job started with `&` without job control: SIGINT and SIGQUIT ignored.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGQUIT, signal.SIG_IGN)


def launch(prog, pidfile, log, label, ns, cmd):
    """Start CMD detached (in network namespace NS unless empty), stdout and stderr to LOG,
    its pid in PIDFILE. setsid: the JVM outlives the tool and does not get the caller's
    Ctrl-C. The inner shell writes its own pid and then becomes the JVM (exec), so the pid
    file names the JVM itself. The JVM carries its pid file's name as a system property:
    pid() knows it by that, so a recycled pid is never taken for it."""
    wrap = ["ip", "netns", "exec", ns] if ns else []
    with contextlib.suppress(FileNotFoundError):
        os.remove(pidfile)
    with open(log, "w") as out:
        subprocess.Popen(wrap + ["setsid", "bash", "-c", 'echo $$ >"$1"; shift; exec "$@"', "kbench-" + prog,
                                 pidfile, cmd[0], "-Dkbench.pidfile=" + pidfile] + cmd[1:],
                         stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                         preexec_fn=_as_background_job)
    for _ in range(50):
        if os.path.isfile(pidfile) and os.path.getsize(pidfile) > 0:
            return
        time.sleep(0.1)
    cli.die("%s did not start; see %s:%s" % (label, log, tail_log(log)), 1)


def pid(pidfile):
    """The pid if it is alive and is the JVM launch() started with this pid file, else None.
    A recycled pid or a zombie fails the check, so stop never signals a stranger."""
    try:
        p = read_text(pidfile)
        if not cli.is_uint(p):
            return None
        with open("/proc/%s/cmdline" % p, "rb") as f:
            cmdline = f.read().replace(b"\0", b" ").decode("utf-8", "surrogateescape")
    except OSError:
        return None
    if "java" in cmdline and (" -Dkbench.pidfile=%s " % pidfile) in cmdline[cmdline.index("java"):]:
        return p
    # A JVM started by an older checkout, before the property, runs a file of this folder.
    folder = re.escape(os.path.dirname(pidfile) + "/")
    if " -Dkbench.pidfile=" not in cmdline and re.search("java.* " + folder, cmdline):
        return p
    return None


def state(pidfiles):
    """running, stopped or partial."""
    alive = sum(1 for f in pidfiles if pid(f))
    return "stopped" if alive == 0 else "running" if alive == len(pidfiles) else "partial"


def status_exit(st):
    """What status exits with: 0 running, 3 stopped, 1 partial."""
    return {"running": 0, "stopped": 3}.get(st, 1)


def wait(timeout, period, ready, died, late, pidfiles):
    """Every PERIOD s until READY() is true. When a JVM of the PIDFILES exits first,
    DIED(PIDFILE) explains and False is returned; after TIMEOUT s, LATE(TIMEOUT) does."""
    deadline = seconds() + timeout
    while True:
        for f in pidfiles:
            if not pid(f):
                died(f)
                return False
        if ready():
            return True
        if seconds() >= deadline:
            late(timeout)
            return False
        time.sleep(period)


def stop(sig, timeout, what, pidfiles):
    """Send SIG (TERM, KILL) to the live JVMs of the PIDFILES, SIGKILL those left after
    TIMEOUT s, then delete the PIDFILES. False, signalling nothing, when none was alive."""
    live = [(f, pid(f)) for f in pidfiles]
    live = [(f, p) for f, p in live if p]
    if live:
        pids = [p for _, p in live]
        cli.info("stopping %s: pid %s (SIG%s)" % (what, " ".join(pids), sig))
        kill(getattr(signal, "SIG" + sig), pids)
        deadline, killed = seconds() + timeout, False
        while True:
            left = [p for p in (pid(f) for f, _ in live) if p]
            if not left:
                break
            if seconds() >= deadline and not killed:
                cli.info("%s: pid %s did not stop within %d s; sending SIGKILL" % (what, " ".join(left), timeout))
                kill(signal.SIGKILL, left)
                # SIGKILL cannot be ignored: a few seconds more is only for the kernel to reap them.
                killed, deadline = True, seconds() + 5
            elif seconds() >= deadline:
                break
            time.sleep(0.2)
    for f in pidfiles:
        with contextlib.suppress(FileNotFoundError):
            os.remove(f)
    return bool(live)


def kill(sig, pids):
    for p in pids:
        with contextlib.suppress(OSError):
            os.kill(int(p), sig)


def exec_java(cmd):
    """Become CMD, as bash's exec (with SIGPIPE as a shell leaves it)."""
    sys.stdout.flush()
    sys.stderr.flush()
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    os.execv(cmd[0], cmd)


# ---------------------------------------------------------------- network

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
    """A port P such that P..P+COUNT-1 and P+OFFSET..P+OFFSET+COUNT-1 can all be bound on
    HOST now, or None, so that scripts and tests never collide on fixed ports."""
    # The kernel picks P (bind to port 0), which avoids its ephemeral range's busy ports;
    # the others are only tried. They are all free at once, but only at this moment:
    # the caller still checks them before it starts anything.
    for _ in range(ATTEMPTS):
        first = bind(host, 0)
        if first is None:
            return None
        base = first.getsockname()[1]
        ports = list(range(base + 1, base + count)) + list(range(base + offset, base + offset + count))
        held = [first] + [bind(host, p) if p <= 65535 else None for p in ports]
        for s in held:
            if s:
                s.close()
        if all(held):
            return base
    return None


def answers(urls):
    """Every URL answers a GET with 2xx within 5 s (a readiness probe). The first that does
    not ends the probe: each further URL could only add its own timeout to the wait."""
    for url in urls:
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                r.read()
        except Exception:  # noqa: BLE001 — whatever fails, the service is not ready yet
            return False
    return True


def cluster_node(path, node, role):
    """(hostname, port) of NODE in a Trogdor cluster file, or an error message."""
    try:
        with open(path) as f:
            nodes = json.load(f)["nodes"]
        entry = nodes.get(node)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        return None, '%s is not a Trogdor cluster file ({"nodes": {...}}): %s' % (path, e)
    port = "trogdor.%s.port" % role
    if not isinstance(entry, dict) or port not in entry or "hostname" not in entry:
        return None, "%s has no node %r with hostname and %s" % (path, node, port)
    return (entry["hostname"], entry[port]), None

