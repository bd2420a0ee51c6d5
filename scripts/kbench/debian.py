"""deb-src lines for every deb line of the system's apt sources (one-line .list and deb822
.sources formats): the same archive and suites, so that scripts/symbols (kbench.commands.symbols)
finds the sources of the installed versions.
"""

import glob
import os


def one_line(path, lines):
    for raw in open(path, errors="replace"):
        w = raw.split("#", 1)[0].split()
        if len(w) >= 3 and w[0] == "deb":
            w = [x for x in w[1:] if not x.startswith("[")]
            lines.add("deb-src %s %s %s" % (w[0], w[1], " ".join(w[2:]) or "main"))


def deb822(path, lines):
    for block in open(path, errors="replace").read().split("\n\n"):
        f = {}
        for raw in block.splitlines():
            if raw.startswith("#") or ":" not in raw:
                continue
            k, v = raw.split(":", 1)
            f[k.strip().lower()] = v.split()
        if "deb" not in f.get("types", []) or f.get("enabled", ["yes"])[0] == "no":
            continue
        for uri in f.get("uris", []):
            for suite in f.get("suites", []):
                lines.add("deb-src %s %s %s" % (uri, suite, " ".join(f.get("components", ["main"]))))


def deb_src_lines(main, parts):
    lines = set()
    if os.path.exists(main):
        one_line(main, lines)
    for p in sorted(glob.glob(os.path.join(parts, "*.list"))):
        one_line(p, lines)
    for p in sorted(glob.glob(os.path.join(parts, "*.sources"))):
        deb822(p, lines)
    # Only Debian's archives: other vendors' repositories (cloud SDKs, nodesource) carry no
    # sources for these packages and may not be reachable.
    return sorted(x for x in lines if "debian.org" in x or "debian-security" in x)

