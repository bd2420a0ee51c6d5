"""What the tools that were bash scripts share to keep their output as it was: commands
written the way bash's `printf %q` writes them (command.txt lines paste back into a shell),
and a log's last lines as `tail -n` gives them."""

import re
import sys

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


def show_log(path, lines=None):
    """A log, or its last LINES (ending at "\\n" only, as tail counts them), on stderr."""
    with open(path, "rb") as f:
        data = f.read()
    if lines:
        data = b"".join(re.findall(rb"[^\n]*\n|[^\n]+$", data)[-lines:])
    sys.stderr.flush()
    sys.stderr.buffer.write(data)
    sys.stderr.buffer.flush()
