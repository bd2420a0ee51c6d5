"""What the tools that were bash scripts share to keep their output as it was: commands
written the way bash's `printf %q` writes them (command.txt lines paste back into a shell),
a log's last lines as `tail -n` gives them, and signals handled as bash's traps handle them."""

import contextlib
import re
import signal
import subprocess
import sys
import time

_QUOTED = frozenset("\t\n !\"$&'()*,;<>?[\\]^`{|}")
_ANSI_C = {"\x1b": "E", "\a": "a", "\v": "v", "\b": "b", "\f": "f", "\n": "n", "\r": "r", "\t": "t",
           "\\": "\\", "'": "'"}


def bash_quote(word):
    """WORD as bash's `printf %q` writes it."""
    if not word:
        return "''"
    if not word.isprintable():
        out = []
        for c in word:
            if c in _ANSI_C:
                out.append("\\" + _ANSI_C[c])
            elif c.isprintable():
                out.append(c)
            else:
                out += ["\\%03o" % b for b in c.encode("utf-8", "surrogateescape")]
        return "$'%s'" % "".join(out)
    return "".join("\\" + c if c in _QUOTED or (c == "#" and i == 0) or
                   (c == "~" and (i == 0 or word[i - 1] in ":=")) else c for i, c in enumerate(word))


def command_line(cmd):
    """CMD as one line of `printf '%q ' CMD; echo` (a space after each word)."""
    return "".join(bash_quote(w) + " " for w in cmd) + "\n"


def last_lines(text, n):
    """The last N lines of TEXT as $(tail -N) gives them: trailing newlines dropped."""
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    return "\n".join(lines[-n:]).rstrip("\n")


class Trap:
    """bash's `trap 'exit N' SIGNAL` for each {SIGNAL: N} of STATUSES: the signal ends the
    tool with N (and its clean-up) at once between commands, and once the running command
    has ended during one (bash runs a trap only after its foreground child exits)."""

    def __init__(self, statuses):
        self.statuses = statuses
        self.in_child, self.pending = False, 0

    def install(self):
        for signum in self.statuses:
            # As bash's trap: a signal ignored on entry (a background job's SIGINT) stays so.
            if signal.getsignal(signum) != signal.SIG_IGN:
                signal.signal(signum, self.on_signal)

    def on_signal(self, signum, frame):
        if self.in_child:
            self.pending = self.pending or self.statuses[signum]
        else:
            sys.exit(self.statuses[signum])

    def run(self, cmd, **kwargs):
        with self.child():
            return subprocess.run(cmd, **kwargs)

    @contextlib.contextmanager
    def child(self):
        """While commands run: a signal ends the tool once they have ended."""
        self.in_child = True
        try:
            yield
        finally:
            self.in_child = False
            if self.pending:
                sys.exit(self.pending)

    def hold(self):
        """From here on (the clean-up) signals no longer end the tool."""
        self.in_child = True


def show_log(path, lines=None):
    """A log, or its last LINES (ending at "\\n" only, as tail counts them), on stderr."""
    with open(path, "rb") as f:
        data = f.read()
    if lines:
        data = b"".join(re.findall(rb"[^\n]*\n|[^\n]+$", data)[-lines:])
    sys.stderr.flush()
    sys.stderr.buffer.write(data)
    sys.stderr.buffer.flush()


def exit_status(returncode):
    """A child's exit status as the shell reports it: 128 + N for one killed by signal N."""
    return 128 - returncode if returncode < 0 else returncode


def run_stamp(root, sha_length=None):
    """<YYYYmmdd-HHMMSS>-<short sha of ROOT's HEAD, or nogit>: how a default results
    folder is named, so that a listing sorts by time and names the commit."""
    short = "--short" if sha_length is None else "--short=%d" % sha_length
    try:
        git = subprocess.run(["git", "-C", root, "rev-parse", short, "HEAD"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True)
        sha = git.stdout.strip() if git.returncode == 0 else "nogit"
    except OSError:
        sha = "nogit"
    return "%s-%s" % (time.strftime("%Y%m%d-%H%M%S"), sha)
