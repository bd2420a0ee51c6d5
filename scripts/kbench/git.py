"""git, the one way kbench's scripts ask it anything: run (GitError on failure), try_run (None)."""

import subprocess
import time


class GitError(Exception):
    """git failed: the message is its command and its own error text."""


def run(repo, *args, strip=True):
    try:
        done = subprocess.run(["git", "-C", repo, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    except OSError as e:
        raise GitError("git: %s" % e) from e
    if done.returncode != 0:
        raise GitError("git %s: %s" % (" ".join(args), done.stderr.strip() or "exit status %d" % done.returncode))
    return done.stdout.strip() if strip else done.stdout


def try_run(repo, *args):
    try:
        return run(repo, *args)
    except GitError:
        return None


def head(repo, short=False):
    return try_run(repo, "rev-parse", *(["--short"] if short else []), "HEAD")


def run_stamp(root):
    """A default results folder's name, "<YYYYmmdd-HHMMSS>-<short sha|nogit>": sorted by time."""
    return "%s-%s" % (time.strftime("%Y%m%d-%H%M%S"), head(root, short=True) or "nogit")
