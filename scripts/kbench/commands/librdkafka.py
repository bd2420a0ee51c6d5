"""Builds other librdkafka releases, or commits of a local librdkafka git repository, into a
cache, so that the same kbench binary runs against them (kbench uses only the C API, whose
ABI is stable across 2.x). Each line on stdout is a folder to put on LD_LIBRARY_PATH:

  LD_LIBRARY_PATH=$(scripts/librdkafka build 2.15.1) build/kbench ...
  scripts/bench --librdkafka 2.15.1 ...          (does the same)

Releases come from npm packages that bundle librdkafka; --tree DIR builds commits of a
librdkafka git repository from v1.0.0 on (DIR's checkout is never touched). VERSION
'system' is the system's librdkafka.so.1 (nothing to build, nothing printed); so is its
version number, unless --from-source. Of several REVs, one that fails does not stop the others.

Cache: ${KBENCH_CACHE:-$HOME/.cache/kbench}/librdkafka/VERSION/, or tree/SHA-FLAGS/
(docs/comparing.md); delete one to rebuild it. A build must report the version asked for
and every codec, and keep what changes librdkafka's speed (WITH_LDS, SSL, zstd,
WITH_LZ4_EXT, WITH_CRC32C_HW). Needs npm or git, a C compiler, make, zlib1g-dev libzstd-dev
liblz4-dev (libssl-dev for SSL).
Exit status: 0 ok; 1 a build failed or was refused, or `path`: not built; 2 bad usage, bad
input or a missing prerequisite.
"""

import collections
import functools
import hashlib
import os
import pathlib
import re
import shutil
import sys
import time

from kbench import build_stamp, cli, git, library_probe, proc, text
from kbench.build_stamp import BuildError

OLDEST_TREE = "1.0.0"  # the oldest release a --tree commit may be: the first with zstd

# librdkafka version -> the npm package@version bundling exactly that release. A build checks
# it (the header before, rd_kafka_version_str() after): a wrong row fails, never mislabels.
SOURCES = {
    "2.0.2": "node-rdkafka@2.15.0",
    "2.1.1": "node-rdkafka@2.16.1",
    "2.2.0": "node-rdkafka@2.17.0",
    "2.3.0": "node-rdkafka@3.0.1",
    "2.5.0": "node-rdkafka@3.1.0",
    "2.6.1": "node-rdkafka@3.2.1",
    "2.8.0": "node-rdkafka@3.3.1",
    "2.10.0": "node-rdkafka@3.4.0",
    "2.11.1": "node-rdkafka@3.5.0",
    "2.12.0": "node-rdkafka@3.6.1",
    "2.15.1": "@confluentinc/kafka-javascript@1.10.1",
}

# What configure may turn off, each changing librdkafka's speed: a build without one is refused,
# never cached. From the WITH_* lines of Makefile.config: "y" is on, anything else off.
SPEED_FEATURES = (
    ("WITH_LDS", "no linker script (every internal symbol exported, internal calls through the PLT)"),
    ("WITH_SSL", "no OpenSSL (no TLS, no SASL/SCRAM; Debian: libssl-dev)"),
    ("WITH_ZSTD", "no zstd (Debian: libzstd-dev)"),
    ("WITH_LZ4_EXT", "the bundled lz4 instead of the system's liblz4 (Debian: liblz4-dev)"),
    ("WITH_CRC32C_HW", "software CRC32C instead of the SSE4.2 instruction"),
)
WITH_LINE = re.compile(r"^(WITH_[A-Za-z0-9_]+)=[^\S\n]*(\S*)", re.M)
HEADER_VERSION = re.compile(r"^#define[^\S\n]+RD_KAFKA_VERSION[^\S\n]+0x([0-9a-fA-F]{8})", re.M)
CONFIGURE_OPTION = re.compile(r"--(?:enable|disable)-[A-Za-z0-9_-]+")
# mklove's check of the interpreter lds-gen.py runs with; before 1.4.2 it is `python`.
NEEDS_PYTHON = re.compile(r"mkl_command_check\s+python\s")
CODECS = ("gzip", "snappy", "lz4", "zstd")


@functools.cache
def system_version():
    """The version of the librdkafka.so.1 the loader picks without LD_LIBRARY_PATH; "" if none."""
    return (library_probe.probe(library_probe.LIBRDKAFKA_VERSION_FUNCTION, "librdkafka.so.1") or {}).get("version", "")


def header_version(header):
    """RD_KAFKA_VERSION 0xMMmmrrpp -> "M.m.r" as rd_kafka_version_str() spells it (pp 0xff a
    release, up to 200 -preN, above -RC(pp-200)); None without the define."""
    m = HEADER_VERSION.search(header)
    if not m:
        return None
    n = [int(m.group(1)[i:i + 2], 16) for i in range(0, 8, 2)]
    suffix = "-pre%d" % n[3] if n[3] <= 200 else "-RC%d" % (n[3] - 200) if n[3] < 255 else ""
    return "%d.%d.%d%s" % (n[0], n[1], n[2], suffix)


def version_key(name):
    """"v1.4.2" or "1.4.2" -> (1, 4, 2); None for anything else (a pre-release suffix too)."""
    m = re.fullmatch(r"v?([0-9]+)\.([0-9]+)\.([0-9]+)", name)
    return tuple(int(n) for n in m.groups()) if m else None


def is_built(d):
    """D holds a finished build whose configure results were checked (configure_with)."""
    return os.path.isfile(d + "/lib/librdkafka.so.1") and "configure_with" in build_stamp.read(d + "/build.json")


def fresh_dir(path):
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)


@functools.cache
def header_ok(header):
    """True when the C compiler finds HEADER."""
    return proc.output(["cc", "-E", "-x", "c", "-include", header, os.devnull]) is not None


@functools.cache
def check_build_tools():
    absent = [tool for tool in ("cc", "make", "tar") if not shutil.which(tool)]
    if absent:
        raise BuildError("missing tools: %s (Debian: build-essential, tar)" % " ".join(absent), 2)
    # Required, not "try": a library without a codec would silently send uncompressed.
    absent = [pkg for h, pkg in (("zlib.h", "zlib1g-dev"), ("zstd.h", "libzstd-dev"),
                                 ("lz4frame.h", "liblz4-dev")) if not header_ok(h)]
    if absent:
        raise BuildError("missing codec headers; install: " + " ".join(absent), 2)


def choose_flags():
    """The configure options of every build: no --install-deps (it downloads); what is missing is off."""
    return ["--disable-gssapi", "--disable-curl", "--enable-zlib", "--enable-zstd", "--enable-lz4-ext",
            "--enable-ssl" if header_ok("openssl/ssl.h") else "--disable-ssl"]


def step(cmd, log, failure, **kwargs):
    """One build step logged to LOG; a failure shows the log's end and raises BuildError(FAILURE)."""
    if proc.run(cmd, log=log, **kwargs).returncode != 0:
        print(proc.tail(log, 30), file=sys.stderr)
        raise BuildError(failure)


def make(d, lock_name, version, flags, unpack):
    """Cache entry D's library folder, built unless it is, one build at a time: UNPACK(src, log)
    puts the sources into src and returns (what they are, build.json's fields of their origin).
    A failed or interrupted build leaves only build.log (and an npm tarball)."""
    if not is_built(d):
        check_build_tools()
        with build_stamp.lock(d, lock_name):
            if not is_built(d):
                try:
                    build_into(d, version, flags, unpack)
                except BaseException:
                    for name in ("build", "lib.tmp", "include", "configure", "lib"):
                        shutil.rmtree(d + "/" + name, ignore_errors=True)
                    raise
    return d + "/lib"


def build_into(d, version, flags, unpack):
    if os.path.isfile(d + "/build.json"):
        cli.info("%s was built before kbench checked configure's results: building it again" % d)
        os.unlink(d + "/build.json")
    started, log, src = time.monotonic(), d + "/build.log", d + "/build"
    open(log, "w").close()
    fresh_dir(src)
    what, doc = unpack(src, log)
    built = compile_source(d, src, version, what, flags)
    seconds = int(time.monotonic() - started)
    build_stamp.write(d + "/build.json", dict(doc, **built, build_seconds=seconds, compiler=build_stamp.compiler()))
    cli.info("built librdkafka in %ds (features: %s)" % (seconds, ",".join(built["builtin_features"])))
    shutil.rmtree(src)


def known_options(flags, src, what):
    """(FLAGS that SRC/configure --help lists, the others): mklove rejects unknown options."""
    known = set(CONFIGURE_OPTION.findall(proc.output(["./configure", "--help"], cwd=src) or ""))
    if not known:
        raise BuildError("'configure --help' of %s lists no --enable/--disable option: cannot tell which "
                         "options it takes" % what)
    kept, dropped = [f for f in flags if f in known], [f for f in flags if f not in known]
    if dropped:
        cli.info("configure of %s has no %s: left out" % (what, " ".join(dropped)))
    return kept, dropped


def compile_source(d, src, version, what, flags):
    """Makes SRC, proves it VERSION with every codec, publishes D/lib: build.json's fields of the build."""
    log = d + "/build.log"
    cli.info("building librdkafka %s (log: %s)" % (what, log))
    flags, dropped = known_options(flags, src, what)
    if "--disable-ssl" in flags:
        cli.info("no OpenSSL headers (libssl-dev): building without SSL (no TLS, no SASL/SCRAM)")
    # ccache makes a bisect's neighbouring commits cheap; BASEDIR and NOHASHDIR let a new path hit it.
    env = None
    if shutil.which("ccache") and not os.environ.get("KBENCH_NO_CCACHE"):
        env = dict(os.environ, CC="ccache " + (os.environ.get("CC") or "gcc"), CCACHE_BASEDIR=src,
                   CCACHE_NOHASHDIR="true")
    step(["./configure"] + flags, log, "configure failed for %s (flags: %s); log: %s" % (what, " ".join(flags), log),
         cwd=src, env=env)
    with_ = configure_results(d, src, log, what)
    refused = refusals(with_, flags, log)
    if refused:
        raise BuildError("librdkafka %s refused: configure turned off what changes its speed:\n  %s\nlog: %s"
                         % (what, "\n  ".join(refused), log))
    # The shared library only (not the static ones, the examples or the tests).
    step(["make", "-C", src + "/src", "-j%d" % len(os.sched_getaffinity(0)), "librdkafka.so.1"], log,
         "make failed for %s; log: %s" % (what, log), env=env)
    if not os.path.isfile(src + "/src/librdkafka.so.1"):
        raise BuildError("make produced no src/librdkafka.so.1; log: " + log)

    # Stage, then prove the built library is the version asked for and has every codec.
    stage = d + "/lib.tmp"
    fresh_dir(stage)
    fresh_dir(d + "/include")
    shutil.copy(src + "/src/librdkafka.so.1", stage)
    os.symlink("librdkafka.so.1", stage + "/librdkafka.so")
    for header in ("rdkafka.h", "rdkafka_mock.h"):
        if os.path.isfile(src + "/src/" + header):
            shutil.copy(src + "/src/" + header, d + "/include")
    answer = library_probe.probe(library_probe.LIBRDKAFKA_VERSION_FUNCTION, stage + "/librdkafka.so.1", log)
    if answer is None:
        raise BuildError("the built librdkafka.so.1 does not load; log: " + log)
    if answer["version"] != version:
        raise BuildError("the built library reports rd_kafka_version_str() = '%s', not %s"
                         % (answer["version"], version))
    features = answer["features"]
    missing = [codec for codec in CODECS if codec not in features.split(",")]
    if missing:
        raise BuildError("librdkafka %s was built without %s (builtin.features: %s)"
                         % (what, " ".join(missing), features))
    # Publish: lib/ appears only complete; the stamp follows.
    shutil.rmtree(d + "/lib", ignore_errors=True)
    os.rename(stage, d + "/lib")
    return {"configure_flags": flags, "configure_flags_unknown": dropped, "builtin_features": features.split(","),
            "configure_with": sorted(k for k, v in with_.items() if v == "y"),
            "configure_without": sorted(k for k, v in with_.items() if v != "y")}


def configure_results(d, src, log, what):
    """{name: value} of the WITH_* lines of SRC/Makefile.config, kept with config.h in D/configure/."""
    try:
        config = pathlib.Path(src, "Makefile.config").read_text(errors="replace")
    except OSError:
        raise BuildError("configure of %s wrote no Makefile.config: what it turned on is unknown; log: %s"
                         % (what, log)) from None
    fresh_dir(d + "/configure")
    for name in ("Makefile.config", "config.h"):
        if os.path.isfile(src + "/" + name):
            shutil.copy(src + "/" + name, d + "/configure")
    return dict(WITH_LINE.findall(config))


def refusals(with_, flags, log):
    """One reason per SPEED_FEATURES entry configure turned off (SSL only when FLAGS asked for it)."""
    said = pathlib.Path(log).read_text(errors="replace")
    reasons = []
    for name, loss in SPEED_FEATURES:
        if with_.get(name) == "y" or (name == "WITH_SSL" and "--enable-ssl" not in flags):
            continue
        reason = "%s=%s: %s" % (name, with_.get(name, "(absent)"), loss)
        # mklove drops the linker script without lds-gen.py's interpreter (`python` before 1.4.2).
        m = re.search(r"disabling linker-script since (\S+) is not available", said)
        if name == "WITH_LDS" and m:
            reason += "; configure found no `%s` on PATH (Debian: apt-get install %s; scripts/setup does)" % (
                m.group(1), "python-is-python3" if m.group(1) == "python" else m.group(1))
        if name == "WITH_CRC32C_HW":
            sse42 = re.search(r"(?m)^flags\s*:.*\bsse4_2\b", pathlib.Path("/proc/cpuinfo").read_text(errors="replace"))
            reason += ("; configure's check of the SSE4.2 crc32 instruction failed (see the log)" if sse42 else
                       "; this CPU has no SSE4.2 (no sse4_2 in /proc/cpuinfo)")
        reasons.append(reason)
    return reasons


def release_entry(version, from_source=False):
    """The cache entry of release VERSION; None when VERSION means the system library."""
    if version == "system" or (not from_source and version == system_version()):
        if not system_version():
            raise BuildError("no system librdkafka.so.1 found (Debian: apt-get install librdkafka1)", 2)
        return None
    if not re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+", version):
        raise BuildError("VERSION must look like 2.15.1 or be 'system', not '%s'" % version, 2)
    if version not in SOURCES:
        raise BuildError("unknown librdkafka version '%s'; known: system %s" % (version, " ".join(SOURCES)), 2)
    return build_stamp.cache_dir("librdkafka/" + version)


def path(version, from_source=False):
    """Release VERSION's library folder if it is built ("" for the system library), else None."""
    d = release_entry(version, from_source)
    return "" if d is None else d + "/lib" if is_built(d) else None


def build(version, from_source=False):
    """Release VERSION's library folder, built unless it is ("" for the system library)."""
    d = release_entry(version, from_source)
    if d is None:
        if version != "system":
            cli.info("librdkafka %s is the system library: nothing to build, no LD_LIBRARY_PATH needed "
                     "(--from-source builds it from %s anyway)" % (version, SOURCES.get(version, "npm")))
        return ""
    if not is_built(d) and not build_stamp.first_tgz(d) and not shutil.which("npm"):
        raise BuildError("npm not found: librdkafka sources are fetched as npm packages "
                         "(Debian: apt-get install npm)", 2)
    spec = SOURCES[version]

    def unpack(src, log):
        tgz = build_stamp.npm_tarball(d, spec, log)
        sha = hashlib.sha256(pathlib.Path(d, tgz).read_bytes()).hexdigest()
        if proc.run(["tar", "-xzf", d + "/" + tgz, "-C", src, "--strip-components=3", "package/deps/librdkafka"],
                    log=log).returncode != 0:
            raise BuildError("%s has no package/deps/librdkafka (wrong npm source for %s?); delete %s/%s to fetch "
                             "it again" % (tgz, version, d, tgz))
        try:
            found = header_version(pathlib.Path(src, "src/rdkafka.h").read_text(errors="replace"))
        except OSError:
            found = None
        if not found:
            raise BuildError("%s: no RD_KAFKA_VERSION in deps/librdkafka/src/rdkafka.h" % spec)
        if found != version:
            raise BuildError("%s bundles librdkafka %s, not %s: the source table of scripts/librdkafka is wrong"
                             % (spec, found, version))
        return "%s from %s" % (version, spec), {"librdkafka_version": version, "source": "npm:" + spec,
                                                "npm_source": spec, "tarball": tgz, "tarball_sha256": sha}
    return make(d, version, version, choose_flags(), unpack)


# A final release tag vX.Y.Z of a repository: version (a tuple), tag, sha (its commit).
Release = collections.namedtuple("Release", "version tag sha")


class Repo:
    """The git repository DIR holding librdkafka: top (its top or git directory), prefix (DIR
    inside it, "" or "sub/dir/"), path. Only objects are read, never DIR's checkout."""

    def __init__(self, tree):
        if not os.path.isdir(tree):
            raise BuildError("--tree '%s' is not a directory" % tree, 2)
        self.dir, self.prefix = tree, ""
        if git.try_run(tree, "rev-parse", "--is-inside-git-dir") == "true":
            self.top = git.try_run(tree, "rev-parse", "--absolute-git-dir")
            if self.top is None:
                raise BuildError("--tree '%s' is not a git repository" % tree, 2)
        else:
            self.top = git.try_run(tree, "rev-parse", "--show-toplevel")
            if self.top is None:
                raise BuildError("--tree '%s' is not inside a git repository (nor a bare one)" % tree, 2)
            self.prefix = git.run(tree, "rev-parse", "--show-prefix")
        self.path = self.top + ("/" + self.prefix.removesuffix("/") if self.prefix else "")

    def show(self, sha, name):
        """The file NAME (relative to DIR) at commit SHA; "" when it has none."""
        return git.try_run(self.dir, "show", "%s:%s%s" % (sha, self.prefix, name)) or ""

    def is_ancestor(self, old, new):
        return git.try_run(self.dir, "merge-base", "--is-ancestor", old, new) is not None

    def all_releases(self):
        """Every final release tag (vX.Y.Z, no suffix) as a Release, in version order."""
        refs = git.run(self.dir, "for-each-ref", "--format=%(refname) %(objecttype) %(objectname) "
                       "%(*objecttype) %(*objectname)", "refs/tags")
        found = []
        for fields in (line.split() for line in refs.splitlines()):
            tag = fields[0].removeprefix("refs/tags/")
            # An annotated tag names its commit through the peeled fields.
            kind, sha = (fields[3], fields[4]) if len(fields) == 5 else (fields[1], fields[2])
            if version_key(tag) and tag.startswith("v") and kind == "commit":
                found.append(Release(version_key(tag), tag, sha))
        return sorted(found)

    def final_releases(self):
        """The final releases from v1.0.0 on, in version order (the newest checked to be librdkafka)."""
        releases = [r for r in self.all_releases() if r.version >= version_key(OLDEST_TREE)]
        if not releases:
            raise BuildError("%s is not a librdkafka repository: no final release tag (vX.Y.Z) from v%s on"
                             % (self.path, OLDEST_TREE), 2)
        Tree(self, releases[-1].tag).check()
        return releases

    def releases_in(self, span):
        """The final releases of SPAN, "FROM..TO" (inclusive, either end optional) or "all"."""
        releases = self.final_releases()
        first, sep, last = ("", "..", "") if span == "all" else span.partition("..")
        if not sep:
            raise BuildError("--releases takes FROM..TO (either end may be left out) or 'all', not '%s'" % span, 2)

        def index(end, default):
            if not end:
                return default
            found = [i for i, r in enumerate(releases) if r.version == version_key(end)]
            if not found:
                raise BuildError("'%s' is not a final release of %s from v%s on (scripts/librdkafka releases "
                                 "--tree %s lists them)" % (end, self.path, OLDEST_TREE, self.dir), 2)
            return found[0]

        i, j = index(first, 0), index(last, len(releases) - 1)
        if i > j:
            raise BuildError("--releases %s holds no release: %s comes after %s"
                             % (span, releases[i].tag, releases[j].tag), 2)
        return releases[i:j + 1]


def tree_entry(sha, flags):
    """A commit's cache entry, keyed by the commit and the flags (SSL is on with libssl-dev)."""
    digest = hashlib.sha256(" ".join(flags).encode()).hexdigest()[:8]
    return build_stamp.cache_dir("librdkafka/tree/%s-%s" % (sha, digest))


class Tree:
    """Commit REV of a Repo: sha; check() proves it a librdkafka source tree and sets version."""

    def __init__(self, repo, rev):
        self.repo, self.rev, self.version = repo, rev, None
        self.sha = git.try_run(repo.dir, "rev-parse", "--verify", "--quiet", rev + "^{commit}")
        if not self.sha:
            hint = "; its final releases: scripts/librdkafka releases --tree %s" % repo.dir if version_key(rev) else ""
            raise BuildError("'%s' is not a commit in %s%s" % (rev, repo.top, hint), 2)

    def check(self):
        if self.version:
            return self
        repo, short = self.repo, self.sha[:12]
        missing = [f for f in ("configure", "src/rdkafka.h", "src/Makefile")
                   if git.try_run(repo.dir, "cat-file", "-e", "%s:%s%s" % (self.sha, repo.prefix, f)) is None]
        if missing:
            raise BuildError("%s at %s is not a librdkafka source tree (no %s)"
                             % (repo.path, short, " ".join(missing)), 2)
        self.version = header_version(repo.show(self.sha, "src/rdkafka.h"))
        if not self.version:
            raise BuildError("%s at %s: no RD_KAFKA_VERSION in src/rdkafka.h: not a librdkafka source tree"
                             % (repo.top, short), 2)
        # Before 1.0.0 librdkafka had no zstd: such a library fails the codec check, so refuse it now.
        if int(self.version.split(".")[0]) < 1:
            raise BuildError("commit %s is librdkafka %s, older than %s: unsupported (no zstd compression before "
                             "1.0.0); the oldest commit kbench builds is %s"
                             % (short, self.version, OLDEST_TREE, OLDEST_TREE), 2)
        return self

    def build(self, flags):
        """This commit's library folder, built unless it is."""
        d = tree_entry(self.sha, flags)
        if is_built(d):
            return d + "/lib"
        repo, short = self.check().repo, self.sha[:12]

        def unpack(src, log):
            # git archive, no .git: librdkafka's Makefile would stamp the version with git describe.
            describe = git.try_run(repo.dir, "describe", "--tags", "--always", "--abbrev=12", self.sha) or short
            step(["git", "-C", repo.top, "archive", "--format=tar", "-o", src + ".tar",
                  "%s:%s" % (self.sha, repo.prefix)], log, "git archive of %s failed; log: %s" % (short, log))
            step(["tar", "-xf", src + ".tar", "-C", src], log, "unpacking git archive of %s failed" % short)
            os.remove(src + ".tar")
            return "%s, %s at %s" % (self.version, repo.path, describe), {
                "librdkafka_version": self.version, "source": "tree:%s@%s" % (repo.path, self.sha), "tree": repo.path,
                "commit": self.sha, "describe": describe}
        return make(d, "commit " + short, self.version, flags, unpack)


def build_tree(tree, rev):
    """Commit REV of the librdkafka git repository TREE: its library folder, built unless it is."""
    return Tree(Repo(tree), rev).build(choose_flags())


def path_tree(tree, rev):
    """Commit REV of TREE: its library folder if it is built, else None."""
    d = tree_entry(Tree(Repo(tree), rev).check().sha, choose_flags())
    return d + "/lib" if is_built(d) else None


def add_arguments(parser):
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="build (cached: later calls print at once) and print the library folder")
    p = sub.add_parser("path", help="print the library folder if it is built; exit 1 if not")
    for s in (b, p):
        s.add_argument("--from-source", action="store_true",
                       help="build the release from npm even when it is the system library's version")
        s.add_argument("--tree", metavar="DIR", help="a librdkafka git repository (bare, or a folder of one "
                       "holding configure and src/rdkafka.h); uncommitted work: \"$(git -C DIR stash create)\"")
    b.add_argument("--releases", metavar="FROM..TO", help="with --tree: every final release (tag vX.Y.Z) from "
                   "FROM to TO, both included, by version number; either end may be left out; 'all' is '..'")
    b.add_argument("names", nargs="*", metavar="VERSION|REV", help="a release (2.15.1, 'system'), or with "
                   "--tree a commit, branch or tag of DIR")
    p.add_argument("names", nargs=1, metavar="VERSION|REV")
    sub.add_parser("list", help="known versions, their npm sources, whether they are built, and the commits "
                   "of local trees built so far")
    r = sub.add_parser("releases", help="a repository's final releases from v1.0.0 on: commit, branch parent "
                       "(the latest earlier release that is its ancestor), built or not, and notes")
    r.add_argument("--tree", metavar="DIR", required=True, help="a librdkafka git repository")


def main(args):
    try:
        return run(args)
    except (BuildError, git.GitError) as e:
        cli.die(e, getattr(e, "status", 1))


def run(args):
    if args.command == "list":
        return list_builds()
    if args.command == "releases":
        return list_releases(Repo(args.tree))
    if args.tree and args.from_source:
        raise BuildError("--from-source is for releases, not --tree", 2)
    if args.command == "build" and args.tree:
        return build_trees(Repo(args.tree), args.names, args.releases)
    if args.command == "build" and args.releases is not None:
        raise BuildError("--releases is for build --tree DIR", 2)
    if len(args.names) != 1:
        raise BuildError("build takes one VERSION (known: system %s)" % " ".join(SOURCES), 2)
    name, hint = args.names[0], "build " + args.names[0]
    if args.tree:
        found, hint = path_tree(args.tree, name), "build --tree %s %s" % (args.tree, name)
    elif name == "system" and args.from_source:
        raise BuildError("--from-source needs a version number, not 'system'", 2)
    else:
        found = (build if args.command == "build" else path)(name, args.from_source)
    if found is None:
        cli.info("%s is not built; run: scripts/librdkafka %s" % (name, hint))
        return 1
    if found:
        print(found)
    return 0


def build_trees(repo, revs, span):
    """Builds each of REVS (or the releases of SPAN), printing its library folder; a failure stops none."""
    if span is not None:
        if revs:
            raise BuildError("build --tree DIR takes REVs or --releases, not both", 2)
        revs = [r.tag for r in repo.releases_in(span)]
    if not revs:
        raise BuildError("build --tree DIR needs a REV (a commit, branch or tag of DIR)", 2)
    trees = [Tree(repo, rev) for rev in revs]
    flags = choose_flags()
    todo = [t.check() for t in trees if not is_built(tree_entry(t.sha, flags))]
    cli.dry_run_exit()
    if todo:
        check_build_tools()
    if len(trees) == 1:
        print(trees[0].build(flags))
        return 0
    started, done, failed = time.monotonic(), 0, []
    for i, t in enumerate(trees, 1):
        if not is_built(tree_entry(t.sha, flags)):
            cli.info("[%d/%d] %s" % (i, len(trees), t.rev))
            try:
                t.build(flags)
                done += 1
            except BuildError as e:
                cli.info("error: %s" % e)
                failed.append(t.rev)
                continue
        print(tree_entry(t.sha, flags) + "/lib", flush=True)
    minutes, seconds = divmod(int(time.monotonic() - started), 60)
    cli.info("%d revisions: %d built now, %d already built, %d failed, in %dm%02ds"
             % (len(trees), done, len(trees) - done - len(failed), len(failed), minutes, seconds))
    if failed:
        raise BuildError("not built: %s (each one's reason above, and its build.log)" % " ".join(failed))
    return 0


def list_builds():
    root, system = build_stamp.cache_dir("librdkafka"), system_version()
    rows = [(version, spec, ("built: %s/%s/lib" % (root, version) if is_built(root + "/" + version) else "not built")
             + (" (also the system library)" if version == system else "")) for version, spec in SOURCES.items()]
    rows.append(("system", "-", "the system librdkafka.so.1: " + (system or "none found")))
    trees = root + "/tree"
    for name in sorted(os.listdir(trees)) if os.path.isdir(trees) else []:
        entry = trees + "/" + name
        if not name.startswith(".") and is_built(entry):
            doc = build_stamp.read(entry + "/build.json")
            rows.append(("tree", doc.get("describe", ""), "built: %s/lib (%s)" % (entry, doc.get("source", ""))))
    print(text.table(("VERSION", "NPM SOURCE", "STATUS"), rows))
    return 0


def list_releases(repo):
    shown = repo.final_releases()
    cli.dry_run_exit()
    every = repo.all_releases()
    first = {}  # sha -> its first release; a later tag on the same commit is no release of its own
    for r in every:
        first.setdefault(r.sha, r)
    originals = [r for r in every if first[r.sha].tag == r.tag]
    flags = choose_flags()
    rows, built = [], 0
    for r in shown:
        notes, twin = [], first[r.sha]
        if twin.tag != r.tag:
            parent = twin
            notes.append("= %s (the same commit: never released on its own)" % twin.tag)
        else:
            earlier = [o for o in originals if o.version < r.version]
            parent = next((o for o in reversed(earlier) if repo.is_ancestor(o.sha, r.sha)), None)
            # The next feature release (a higher X.Y) leaves a maintenance release out of its history.
            feature = next((o for o in originals if o.version[:2] > r.version[:2]), None)
            if feature and not repo.is_ancestor(r.sha, feature.sha):
                notes.append("maintenance branch: not in %s's history" % feature.tag)
            if NEEDS_PYTHON.search(repo.show(r.sha, "configure.self")):
                notes.append("its linker script needs `python` on PATH (python-is-python3)")
            # A packaging-only release may keep the previous version (v2.0.1 says 2.0.0).
            header = header_version(repo.show(r.sha, "src/rdkafka.h"))
            if header != r.tag[1:]:
                notes.append("its rdkafka.h says %s, and so does the library" % header)
        is_done = is_built(tree_entry(r.sha, flags))
        built += is_done
        rows.append((r.tag, r.sha[:12], parent.tag if parent else "-", "yes" if is_done else "no", "; ".join(notes)))
    print(text.table(("RELEASE", "COMMIT", "PARENT", "BUILT", "NOTES"), rows))
    cli.info("%d final release tags on %d commits, %d built in %s/tree"
             % (len(shown), len({r.sha for r in shown}), built, build_stamp.cache_dir("librdkafka")))
    return 0
