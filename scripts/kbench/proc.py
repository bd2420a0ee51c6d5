"""Running the programs kbench starts (kbench itself, the JVM, compilers, git): one way. A
sibling command is never started as a process: import it and call its function."""

import contextlib
import os
import shlex
import subprocess
import sys


def run(cmd, *, log=None, cwd=None, env=None, capture=False, check=False, stdin=None, timeout=None):
    """subprocess.run of CMD. LOG (a path) gets stdout and stderr, appended; CAPTURE returns
    stdout as text (stderr to LOG, or the console)."""
    kwargs = dict(cwd=cwd, env=env, stdin=stdin, timeout=timeout, check=check)
    if capture:
        kwargs.update(stdout=subprocess.PIPE, text=True)
    if log is None:
        return subprocess.run(cmd, **kwargs)
    os.makedirs(os.path.dirname(os.path.abspath(log)), exist_ok=True)
    with open(log, "ab") as f:
        if not capture:
            kwargs["stdout"] = f
        return subprocess.run(cmd, stderr=f if capture else subprocess.STDOUT, **kwargs)


def output(cmd, *, cwd=None, env=None):
    """CMD's stdout, stripped; None when it exits non-zero or cannot start."""
    try:
        done = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    except OSError:
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def quote(cmd):
    return shlex.join(str(word) for word in cmd)


def tail(path, lines=20):
    """The last LINES lines of the text file at PATH ("" when it cannot be read)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return "".join(f.readlines()[-lines:]).rstrip("\n")
    except OSError:
        return ""


def status(returncode):
    """A child's exit status as a shell reports it: 128 + N when signal N killed it."""
    return 128 - returncode if returncode < 0 else returncode


@contextlib.contextmanager
def output_to(path):
    """stdout and stderr (the file descriptors) appended to the log PATH meanwhile: the console
    of a sibling command called as a function."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(path, "ab") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, copy in zip((1, 2), saved):
            os.dup2(copy, fd)
            os.close(copy)
