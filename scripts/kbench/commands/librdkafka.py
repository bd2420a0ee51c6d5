"""scripts/librdkafka: build other librdkafka releases, or commits of a local librdkafka git
tree, so the same kbench binary can run against them: kbench only uses the C API, whose ABI
is stable across 2.x, and the run context records the version loaded. Debian ships no other
release and only package registries are reachable, so releases come from npm packages that
bundle librdkafka under deps/librdkafka (node-rdkafka, @confluentinc/kafka-javascript).

Each line on stdout is a directory to put on LD_LIBRARY_PATH; progress goes to stderr.
Cache layout, messages and exit statuses are those of the bash tool it replaces: see --help.
"""

import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

from kbench import cli, native, shell, stamp
from kbench.cli import die, info

PROG = "librdkafka"
COMMAND = "scripts/librdkafka"
# The oldest release a tree's commit may be (--tree): the first with zstd.
OLDEST_TREE = "1.0.0"

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

USAGE = """\
Usage: scripts/librdkafka build [--from-source] VERSION
       scripts/librdkafka build --tree DIR REV [REV...]
       scripts/librdkafka build --tree DIR --releases [FROM]..[TO]
       scripts/librdkafka path  [--from-source] VERSION
       scripts/librdkafka path  --tree DIR REV
       scripts/librdkafka list
       scripts/librdkafka releases --tree DIR

Builds a librdkafka release from the sources bundled in an npm package (or with --tree a
commit of a local librdkafka git repository), caches it and prints the directory to put on
LD_LIBRARY_PATH (a line on stdout for each build asked for; progress goes to stderr):

  LD_LIBRARY_PATH=$(scripts/librdkafka build 2.15.1) build/kbench ...
  scripts/bench --librdkafka 2.15.1 ...          (does the same)

  build VERSION   npm pack, extract, configure, make, verify; cached: later calls print at once
  build --tree DIR REV
                  commit REV (a branch, tag or sha) of the librdkafka git repository DIR
                  (bare, or a subdirectory holding src/rdkafka.h and configure), exported
                  with git archive (DIR's checkout is never touched nor built), then built
                  and verified as a release; any commit from v%(oldest)s on. Uncommitted
                  work: --tree DIR "$(git -C DIR stash create)". Several REVs: one line each,
                  in their order; every REV is checked before anything is built, and one
                  that fails to build does not stop the others (all named at the end, exit 1)
  build --tree DIR --releases FROM..TO
                  every final release (tag vX.Y.Z) of DIR from FROM to TO, both included, in
                  version order (not git's A..B: by version number, maintenance releases
                  included); either end may be left out, 'all' is '..'. Releases on one
                  commit (v2.7.0 is v2.6.1) are built once, a line each:
                    scripts/librdkafka build --tree DIR --releases v1.0.0..    # from 1.0.0 on
  path VERSION, path --tree DIR REV
                  print the directory if it is built; exit 1 if not
  list            known versions, their npm sources, whether they are built, and the
                  commits of local trees built so far
  releases --tree DIR
                  DIR's final releases from v%(oldest)s on, in version order: the commit, the
                  branch parent (the release it follows: the latest earlier release that is
                  its ancestor, so a maintenance release shows where it branched), whether it
                  is built, and notes (a tag on an earlier release's commit, a maintenance
                  branch, a linker script that needs `python`, an rdkafka.h that names
                  another version)

VERSION 'system' means the system's own librdkafka.so.1 (Debian's 2.0.2): nothing to build,
nothing printed, no LD_LIBRARY_PATH needed. So does a VERSION equal to the system library's,
unless --from-source asks to build it from npm anyway.

Cache: ${KBENCH_CACHE:-$HOME/.cache/kbench}/librdkafka/VERSION/, or tree/SHA-FLAGS/ for a
commit (FLAGS: a digest of the configure flags): lib/librdkafka.so.1, include/, configure/
(configure's Makefile.config and config.h), build.log and build.json (source, configure flags,
builtin.features, configure_with/configure_without: the WITH_* settings, ...). Delete one to
rebuild it. The configure flags, the checks of a build and build.json: docs/comparing.md.

A build that configure left without something that changes librdkafka's speed is refused
(exit 1, nothing cached, the reason on stderr): the linker script (WITH_LDS; releases before
1.4.2 need `python` on PATH for it: Debian's python-is-python3), SSL (when libssl-dev is
there), zstd, the system's lz4 (WITH_LZ4_EXT) or the SSE4.2 CRC32C (WITH_CRC32C_HW).

Needs npm, a C compiler, make, and zlib1g-dev libzstd-dev liblz4-dev (SSL with libssl-dev).
A build takes ~1.5 min on 2 cores.
Exit status: 0 ok; 1 build failure or refusal, or for 'path' not built; 2 bad usage or a missing
prerequisite (npm, compiler, headers), and for --tree: DIR not a git repository, REV not a
commit of it, that commit not a librdkafka source tree, or older than %(oldest)s; for
--releases and releases: DIR without a librdkafka release from %(oldest)s on, an end that is
not one of them.
""" % {"oldest": OLDEST_TREE}

# What configure may turn off without failing, each of which changes librdkafka's speed: a
# build without one is refused (exit 1), never cached. Read from the WITH_* lines configure
# writes to Makefile.config; "y" is on, anything else (or absent) off.
SPEED_FEATURES = (
    # The version script makes every symbol but the API local, so the library's internal
    # calls bind directly instead of through the PLT.
    ("WITH_LDS", "no linker script (every internal symbol exported, internal calls through the PLT)"),
    ("WITH_SSL", "no OpenSSL (no TLS, no SASL/SCRAM; Debian: libssl-dev)"),
    ("WITH_ZSTD", "no zstd (Debian: libzstd-dev)"),
    ("WITH_LZ4_EXT", "the bundled lz4 instead of the system's liblz4 (Debian: liblz4-dev)"),
    ("WITH_CRC32C_HW", "software CRC32C instead of the SSE4.2 instruction"),
)
WITH_LINE = re.compile(r"^(WITH_[A-Za-z0-9_]+)=[^\S\n]*(\S*)", re.M)

HEADER_VERSION = re.compile(r"^#define[^\S\n]+RD_KAFKA_VERSION[^\S\n]+0x([0-9a-fA-F]{8})", re.M)
CONFIGURE_OPTION = re.compile(r"--(?:enable|disable)-[A-Za-z0-9_-]+")


def cache_root():
    root = (os.environ.get("KBENCH_CACHE") or os.path.expanduser("~/.cache/kbench")) + "/librdkafka"
    # Printed directories go into LD_LIBRARY_PATH, where a relative path would depend on the cwd.
    if not root.startswith("/"):
        pwd = os.environ.get("PWD", "")  # the shell's spelling of the cwd, as bash's $PWD
        if not (pwd.startswith("/") and os.path.isdir(pwd) and os.path.samefile(pwd, ".")):
            pwd = os.getcwd()
        root = pwd + "/" + root
    return root


def system_version():
    """The version of the librdkafka.so.1 the loader picks without LD_LIBRARY_PATH; "" if none."""
    with open(os.devnull, "w") as quiet:
        return native.ask(["version", "librdkafka", "librdkafka.so.1"], quiet) or ""


def header_version(text):
    """RD_KAFKA_VERSION 0xMMmmrrpp -> "M.m.r" as rd_kafka_version_str() spells it: pp 0xff is a
    release, up to 200 -preN, above 200 -RC(pp-200) (a tree's development commit may carry one);
    None without the define."""
    m = HEADER_VERSION.search(text)
    if not m:
        return None
    n = [int(m.group(1)[i:i + 2], 16) for i in range(0, 8, 2)]
    suffix = "-pre%d" % n[3] if n[3] <= 200 else "-RC%d" % (n[3] - 200) if n[3] < 255 else ""
    return "%d.%d.%d%s" % (n[0], n[1], n[2], suffix)


def is_built(d):
    """Whether D holds a finished build whose configure results were checked: an entry stamped
    before kbench checked them (no configure_with in build.json) may lack the linker script,
    so it is built again."""
    if not os.path.isfile(d + "/lib/librdkafka.so.1"):
        return False
    try:
        with open(d + "/build.json", encoding="utf-8") as f:
            return "configure_with" in json.load(f)
    except (OSError, ValueError, TypeError):
        return False


def start_build(d):
    """A new build.log for D, and no stamp left from an older build of it."""
    if os.path.isfile(d + "/build.json"):
        info("%s was built before kbench checked configure's results: building it again" % d)
        os.unlink(d + "/build.json")
    open(d + "/build.log", "w").close()


def print_built(d):
    """Prints D's library directory if D is built; whether it is."""
    if is_built(d):
        print(d + "/lib", flush=True)
        return True
    return False


def means_system(version, from_source, system):
    """True when VERSION stands for the system library (no LD_LIBRARY_PATH); there must be one."""
    if not (version == "system" or (not from_source and system and version == system)):
        return False
    if not system:
        die("no system librdkafka.so.1 found (Debian: apt-get install librdkafka1)")
    return True


def stamp_field(d, key):
    """One field of D/build.json (empty when absent or unreadable)."""
    try:
        with open(d + "/build.json", encoding="utf-8") as f:
            return str(json.load(f).get(key, ""))
    except (OSError, ValueError, AttributeError):
        return ""


def cmd_list(root, system):
    row = "%-8s %-40s %s"
    print(row % ("VERSION", "NPM SOURCE", "STATUS"))
    for version, spec in SOURCES.items():
        status = "built: %s/%s/lib" % (root, version) if is_built(root + "/" + version) else "not built"
        if version == system:
            status += " (also the system library)"
        print(row % (version, spec, status))
    print(row % ("system", "-", "the system librdkafka.so.1: " + (system or "none found")))
    trees = root + "/tree"
    for name in sorted(os.listdir(trees)) if os.path.isdir(trees) else []:
        entry = trees + "/" + name
        if not name.startswith(".") and is_built(entry):
            print(row % ("tree", stamp_field(entry, "describe"),
                         "built: %s/lib (%s)" % (entry, stamp_field(entry, "source"))))


def header_ok(header):
    """True when the C compiler finds HEADER."""
    try:
        return subprocess.run(["cc", "-E", "-x", "c", "-"], input="#include <%s>\n" % header, text=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0
    except OSError:
        return False


def fresh_dir(path):
    """PATH as an empty folder (rm -rf, mkdir -p)."""
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)


def first_tgz(d):
    """The first *.tgz in D in directory order (as find -print -quit); None if none."""
    try:
        return next((d + "/" + n for n in os.listdir(d) if n.endswith(".tgz")), None)
    except OSError:
        return None


def check_build_tools():
    absent = [tool for tool in ("cc", "make", "tar") if not shutil.which(tool)]
    if absent:
        die("missing tools: %s (Debian: build-essential, tar)" % " ".join(absent))
    # The codecs are what kbench measures: a library built without one would silently send
    # uncompressed, so they are required, not "try".
    absent = [pkg for h, pkg in (("zlib.h", "zlib1g-dev"), ("zstd.h", "libzstd-dev"),
                                 ("lz4frame.h", "liblz4-dev")) if not header_ok(h)]
    if absent:
        die("missing codec headers; install: " + " ".join(absent))


def choose_flags():
    """The configure options kbench asks of every build: no --install-deps (it downloads from
    the internet); what is missing is off."""
    return ["--disable-gssapi", "--disable-curl", "--enable-zlib", "--enable-zstd", "--enable-lz4-ext",
            "--enable-ssl" if header_ok("openssl/ssl.h") else "--disable-ssl"]


def run_logged(argv, log, cwd=None, env=None):
    """Runs ARGV with stdout and stderr appended to LOG; whether it succeeded (a program that
    cannot start fails, its reason in the log, as the shell's would be)."""
    with open(log, "a") as out:
        try:
            return subprocess.run(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT).returncode == 0
        except OSError as e:
            out.write("%s: %s\n" % (argv[0], e.strerror or e))
            return False


def detect_flags(flags, src, log, what):
    """FLAGS reduced to the options SRC/configure's --help lists (mklove rejects any other;
    --disable-curl, --enable-zlib and --enable-zstd appeared after 1.0.0), and the others,
    dropped: nothing to turn off, and the codec check still proves every codec."""
    try:
        helptext = subprocess.run(["./configure", "--help"], cwd=src, capture_output=True).stdout
    except OSError:
        helptext = b""
    known = set(CONFIGURE_OPTION.findall(helptext.decode(errors="replace")))
    if not known:
        die("'configure --help' of %s lists no --enable/--disable option: cannot tell which options it takes"
            % what, status=1)
    kept, dropped = [f for f in flags if f in known], [f for f in flags if f not in known]
    if dropped:
        info("configure of %s has no %s: left out" % (what, " ".join(dropped)))
        with open(log, "a") as f:
            f.write("kbench: configure has no %s: left out\n" % " ".join(dropped))
    return kept, dropped


def compile_source(d, src, version, what, flags):
    """Configures and makes SRC with FLAGS, proves the library is VERSION with every codec,
    publishes D/lib, D/include and D/configure; returns (flags kept, flags dropped,
    builtin.features, configure's WITH_* settings). A feature of SPEED_FEATURES turned off
    stops it after configure."""
    log = d + "/build.log"
    info("building librdkafka %s (log: %s)" % (what, log))
    flags, dropped = detect_flags(flags, src, log, what)
    if "--disable-ssl" in flags:
        info("no OpenSSL headers (libssl-dev): building without SSL (no TLS, no SASL/SCRAM)")
    # ccache, when installed, makes a bisect's neighbouring commits cheap: most of their
    # sources are the same. BASEDIR and NOHASHDIR let a new checkout path hit the cache.
    env = None
    if shutil.which("ccache") and not os.environ.get("KBENCH_NO_CCACHE"):
        env = dict(os.environ, CC="ccache " + (os.environ.get("CC") or "gcc"), CCACHE_BASEDIR=src,
                   CCACHE_NOHASHDIR="true")
    if not run_logged(["./configure"] + flags, log, cwd=src, env=env):
        shell.show_log(log, 30)
        die("configure failed for %s (flags: %s); log: %s" % (what, " ".join(flags), log), status=1)

    with_ = configure_results(d, src, log, what)
    refused = refusals(with_, flags, log)
    if refused:
        die("librdkafka %s refused: configure turned off what changes its speed:\n  %s\nlog: %s"
            % (what, "\n  ".join(refused), log), status=1)

    # make: the shared library only (not the static ones, the examples or the tests).
    if not run_logged(["make", "-C", src + "/src", "-j%d" % len(os.sched_getaffinity(0)), "librdkafka.so.1"],
                      log, env=env):
        shell.show_log(log, 30)
        die("make failed for %s; log: %s" % (what, log), status=1)
    if not os.path.isfile(src + "/src/librdkafka.so.1"):
        die("make produced no src/librdkafka.so.1; log: " + log, status=1)

    # Stage, then prove the built library is the version asked for and has every codec.
    stage = d + "/lib.tmp"
    fresh_dir(stage)
    fresh_dir(d + "/include")
    shutil.copy(src + "/src/librdkafka.so.1", stage)
    os.symlink("librdkafka.so.1", stage + "/librdkafka.so")
    for header in ("rdkafka.h", "rdkafka_mock.h"):
        if header == "rdkafka.h" or os.path.isfile(src + "/src/" + header):
            shutil.copy(src + "/src/" + header, d + "/include")
    with open(log, "a") as errors:
        probe = native.ask(["probe", stage + "/librdkafka.so.1"], errors)  # VERSION<TAB>builtin.features
    if probe is None:
        die("the built librdkafka.so.1 does not load; log: " + log, status=1)
    runtime, tab, features = probe.partition("\t")
    features = features if tab else probe
    if runtime != version:
        die("the built library reports rd_kafka_version_str() = '%s', not %s" % (runtime, version), status=1)
    for codec in ("gzip", "snappy", "lz4", "zstd"):
        if codec not in features.split(","):
            die("librdkafka %s was built without %s (builtin.features: %s)" % (what, codec, features), status=1)

    # Publish: lib/ appears only complete; the stamp follows.
    shutil.rmtree(d + "/lib", ignore_errors=True)
    os.rename(stage, d + "/lib")
    return flags, dropped, features, with_


def configure_results(d, src, log, what):
    """The WITH_* settings configure wrote to SRC/Makefile.config ({name: value}), kept with
    SRC/config.h in D/configure/ beside the build."""
    try:
        with open(src + "/Makefile.config", errors="replace") as f:
            text = f.read()
    except OSError:
        die("configure of %s wrote no Makefile.config: what it turned on is unknown; log: %s" % (what, log),
            status=1)
    fresh_dir(d + "/configure")
    for name in ("Makefile.config", "config.h"):
        if os.path.isfile(src + "/" + name):
            shutil.copy(src + "/" + name, d + "/configure")
    return dict(WITH_LINE.findall(text))


def cpu_has_sse42():
    """Whether /proc/cpuinfo lists sse4_2; None when it cannot be read (not Linux)."""
    try:
        with open("/proc/cpuinfo", errors="replace") as f:
            return bool(re.search(r"^flags\s*:.*\bsse4_2\b", f.read(), re.M))
    except OSError:
        return None


def refusals(with_, flags, log):
    """Why a configure result WITH_ ({name: value}) is not the library kbench measures: the
    reasons, one per SPEED_FEATURES entry turned off (SSL only when FLAGS asked for it)."""
    try:
        with open(log, errors="replace") as f:
            text = f.read()
    except OSError:
        text = ""
    reasons = []
    for name, loss in SPEED_FEATURES:
        if with_.get(name) == "y" or (name == "WITH_SSL" and "--enable-ssl" not in flags):
            continue
        reason = "%s=%s: %s" % (name, with_.get(name, "(absent)"), loss)
        # mklove turns the linker script off when the interpreter of lds-gen.py is missing:
        # releases before 1.4.2 run it as `python`, which a clean Debian 12 lacks.
        m = re.search(r"disabling linker-script since (\S+) is not available", text)
        if name == "WITH_LDS" and m:
            reason += "; configure found no `%s` on PATH (Debian: apt-get install %s; scripts/setup does)" % (
                m.group(1), "python-is-python3" if m.group(1) == "python" else m.group(1))
        if name == "WITH_CRC32C_HW":
            sse42 = cpu_has_sse42()
            reason += ("; this CPU has no SSE4.2 (no sse4_2 in /proc/cpuinfo)" if sse42 is False else
                       "; configure's check of the SSE4.2 crc32 instruction failed (see the log)")
        reasons.append(reason)
    return reasons


@contextlib.contextmanager
def building(d):
    """A build of cache entry D: if it fails or is interrupted, whatever it made is removed
    (the build tree, staged and unstamped files); build.log, and an npm tarball, stay."""
    try:
        yield
    except BaseException:
        for name in ("build", "lib.tmp", "include", "configure") + (() if is_built(d) else ("lib",)):
            shutil.rmtree(d + "/" + name, ignore_errors=True)
        raise


def write_stamp(d, started, pairs, built):
    """D/build.json, which marks the entry valid (the pairs, flags, features, seconds,
    compiler); then prints the library directory."""
    flags, dropped, features, with_ = built
    seconds = int(time.time()) - started  # whole seconds crossed, as bash's $SECONDS counts
    stamp.write(d + "/build.json", pairs + [
        "configure_flags:words=" + " ".join(flags), "configure_flags_unknown:words=" + " ".join(dropped),
        "builtin_features:csv=" + features,
        "configure_with:words=" + " ".join(sorted(k for k, v in with_.items() if v == "y")),
        "configure_without:words=" + " ".join(sorted(k for k, v in with_.items() if v != "y")),
        "build_seconds:int=%d" % seconds,
        "compiler=" + stamp.compiler()])
    info("built librdkafka in %ds (features: %s)" % (seconds, features))
    shutil.rmtree(d + "/build", ignore_errors=True)
    print(d + "/lib", flush=True)


def cmd_path(root, version, from_source, system):
    if means_system(version, from_source, system):
        return
    if not print_built(root + "/" + version):
        info("librdkafka %s is not built; run: scripts/librdkafka build %s" % (version, version))
        sys.exit(1)


def fetch_tarball(d, spec, log):
    """The npm tarball, kept in the cache so a rebuild needs no registry."""
    tgz = first_tgz(d)
    if tgz:
        return tgz
    info("fetching %s from npm" % spec)
    packdir = d + "/pack.tmp"
    fresh_dir(packdir)
    if not run_logged(["npm", "pack", "--silent", "--pack-destination", packdir, spec], log, cwd=packdir):
        shell.show_log(log, 20)
        shutil.rmtree(packdir)
        die("npm pack %s failed (is the npm registry reachable?); log: %s" % (spec, log), status=1)
    tgz = first_tgz(packdir)
    if not tgz:
        shutil.rmtree(packdir)
        die("npm pack %s produced no tarball; log: %s" % (spec, log), status=1)
    shutil.move(tgz, d)
    shutil.rmtree(packdir)
    return d + "/" + os.path.basename(tgz)


def cmd_build(root, version, from_source, system):
    if means_system(version, from_source, system):
        info("librdkafka %s is the system library (%s): nothing to build, no LD_LIBRARY_PATH needed"
             % (version, system))
        if version != "system":
            info("(use --from-source to build %s from %s anyway)" % (version, SOURCES.get(version, "")))
        return
    d = root + "/" + version
    if print_built(d):
        return
    spec = SOURCES.get(version, "")
    # npm only when the entry holds no tarball yet (a rebuild is offline).
    if not first_tgz(d) and not shutil.which("npm"):
        die("npm not found: librdkafka sources are fetched as npm packages (Debian: apt-get install npm)")
    check_build_tools()
    with stamp.lock(d, version), building(d):
        if not print_built(d):
            build_release(d, version, spec)


def build_release(d, version, spec):
    """npm pack, extract, check the bundled version, configure, make, verify, stamp."""
    started, log = int(time.time()), d + "/build.log"
    start_build(d)
    tgz = fetch_tarball(d, spec, log)
    with open(tgz, "rb") as f:
        sha = hashlib.file_digest(f, "sha256").hexdigest()

    # Only deps/librdkafka, into a fresh build tree.
    src = d + "/build"
    fresh_dir(src)
    with open(log, "a") as errors:
        extracted = subprocess.run(["tar", "-xzf", tgz, "-C", src, "--strip-components=3",
                                    "package/deps/librdkafka"], stderr=errors).returncode == 0
    if not extracted:
        die("%s has no package/deps/librdkafka (wrong npm source for %s?); delete %s to fetch it again"
            % (os.path.basename(tgz), version, tgz), status=1)

    # The bundled release must be the one asked for.
    try:
        with open(src + "/src/rdkafka.h", errors="replace") as f:
            found = header_version(f.read())
    except OSError:
        found = None
    if not found:
        die("%s: no RD_KAFKA_VERSION in deps/librdkafka/src/rdkafka.h" % spec, status=1)
    if found != version:
        die("%s bundles librdkafka %s, not %s: the source table in scripts/librdkafka is wrong"
            % (spec, found, version), status=1)

    built = compile_source(d, src, version, "%s from %s" % (version, spec), choose_flags())
    write_stamp(d, started, ["librdkafka_version=" + version, "source=npm:" + spec, "npm_source=" + spec,
                             "tarball=" + os.path.basename(tgz), "tarball_sha256=" + sha], built)


def git(d, *args, quiet=True):
    """git -C D ARGS: (exit status, stdout less its trailing newlines); stderr shown unless quiet."""
    proc = subprocess.run(["git", "-C", d] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL if quiet else None)
    return proc.returncode, proc.stdout.decode(errors="replace").rstrip("\n")


def version_key(text):
    """"v1.4.2" or "1.4.2" -> (1, 4, 2); None for anything else (a pre-release suffix too)."""
    m = re.fullmatch(r"v?([0-9]+)\.([0-9]+)\.([0-9]+)", text)
    return tuple(int(n) for n in m.groups()) if m else None


OLDEST_KEY = version_key(OLDEST_TREE)


class Release:
    """A final release tag vX.Y.Z of a repository: tag, version (a tuple), sha (its commit)."""

    def __init__(self, tag, sha):
        self.tag, self.version, self.sha = tag, version_key(tag), sha


class Repo:
    """The git repository DIR holding librdkafka: top (the top, or a bare repository's git
    directory), prefix (DIR inside it, "" or "sub/dir/"), path. Only objects are read: DIR's
    checkout, index and uncommitted changes are left alone."""

    def __init__(self, tree):
        if not os.path.isdir(tree):
            cli.bad_usage("--tree '%s' is not a directory" % tree, COMMAND)
        if not shutil.which("git"):
            die("git not found (Debian: apt-get install git)")
        self.dir = tree
        if git(tree, "rev-parse", "--is-inside-git-dir")[1] == "true":
            # A bare repository, or a .git directory: the commits are all there is.
            rc, self.top = git(tree, "rev-parse", "--absolute-git-dir", quiet=False)
            if rc != 0:
                cli.bad_usage("--tree '%s' is not a git repository" % tree, COMMAND)
            self.prefix = ""
        else:
            rc, self.top = git(tree, "rev-parse", "--show-toplevel")
            if rc != 0:
                cli.bad_usage("--tree '%s' is not inside a git repository (nor a bare one)" % tree, COMMAND)
            rc, self.prefix = git(tree, "rev-parse", "--show-prefix", quiet=False)
            if rc != 0:
                sys.exit(rc)
        self.path = self.top + ("/" + self.prefix.removesuffix("/") if self.prefix else "")

    def git(self, *args, quiet=True):
        return git(self.dir, *args, quiet=quiet)

    def is_ancestor(self, old, new):
        return self.git("merge-base", "--is-ancestor", old, new)[0] == 0

    def all_releases(self):
        """Every final release tag (vX.Y.Z, no suffix) as a Release, in version order."""
        rc, out = self.git("for-each-ref", "--format=%(refname) %(objecttype) %(objectname) %(*objecttype) "
                           "%(*objectname)", "refs/tags")
        found = []
        for fields in (line.split() for line in out.splitlines()):
            tag = fields[0].removeprefix("refs/tags/")
            # An annotated tag names its commit through the peeled fields.
            kind, sha = (fields[3], fields[4]) if len(fields) == 5 else (fields[1], fields[2])
            if version_key(tag) and tag.startswith("v") and kind == "commit":
                found.append(Release(tag, sha))
        return sorted(found, key=lambda r: r.version)

    def final_releases(self):
        """The final releases kbench builds (from v1.0.0 on), in version order; exit 2 when the
        repository has none, or its newest is not a librdkafka source tree."""
        releases = [r for r in self.all_releases() if r.version >= OLDEST_KEY]
        if not releases:
            cli.bad_usage("%s is not a librdkafka repository: no final release tag (vX.Y.Z) from v%s on"
                          % (self.path, OLDEST_TREE), COMMAND)
        Tree(self, releases[-1].tag).check()
        return releases

    def releases_in(self, span):
        """The final releases of SPAN, "FROM..TO" (inclusive, by version; either end may be left
        out) or "all"; exit 2 for an end that is not one of them."""
        releases = self.final_releases()
        first, sep, last = ("", "..", "") if span == "all" else span.partition("..")
        if not sep:
            cli.bad_usage("--releases takes FROM..TO (either end may be left out) or 'all', not '%s'" % span,
                          COMMAND)

        def index(end, default):
            if not end:
                return default
            for i, r in enumerate(releases):
                if r.version == version_key(end):
                    return i
            cli.bad_usage("'%s' is not a final release of %s from v%s on (scripts/librdkafka releases --tree %s "
                          "lists them)" % (end, self.path, OLDEST_TREE, self.dir), COMMAND)

        i, j = index(first, 0), index(last, len(releases) - 1)
        if i > j:
            cli.bad_usage("--releases %s holds no release: %s comes after %s"
                          % (span, releases[i].tag, releases[j].tag), COMMAND)
        return releases[i:j + 1]


def tree_entry(root, sha, flags):
    """A commit's cache entry, keyed by the commit and the flags asked for (SSL is on with
    libssl-dev)."""
    return "%s/tree/%s-%s" % (root, sha, hashlib.sha256(" ".join(flags).encode()).hexdigest()[:8])


class Tree:
    """Commit REV of a Repo (exit 2 if it is none): sha; check() proves it a librdkafka source
    tree kbench builds and sets version."""

    def __init__(self, repo, rev):
        self.repo, self.rev, self.version = repo, rev, None
        rc, self.sha = repo.git("rev-parse", "--verify", "--quiet", rev + "^{commit}")
        if rc != 0:
            hint = ("; its final releases: scripts/librdkafka releases --tree %s" % repo.dir
                    if version_key(rev) else "")
            cli.bad_usage("'%s' is not a commit in %s%s" % (rev, repo.top, hint), COMMAND)

    def check(self):
        repo, short = self.repo, self.sha[:12]
        missing = [f for f in ("configure", "src/rdkafka.h", "src/Makefile")
                   if repo.git("cat-file", "-e", "%s:%s%s" % (self.sha, repo.prefix, f))[0] != 0]
        if missing:
            cli.bad_usage("%s at %s is not a librdkafka source tree (no %s)"
                          % (repo.path, short, " ".join(missing)), COMMAND)
        self.version = header_version(repo.git("show", "%s:%ssrc/rdkafka.h" % (self.sha, repo.prefix),
                                               quiet=False)[1])
        if not self.version:
            cli.bad_usage("%s at %s: no RD_KAFKA_VERSION in src/rdkafka.h: not a librdkafka source tree"
                          % (repo.top, short), COMMAND)
        # Before 1.0.0 librdkafka had no zstd: such a library fails the codec check, so refuse it now.
        if int(self.version.split(".")[0]) < 1:
            die("commit %s is librdkafka %s, older than %s: unsupported (no zstd compression before 1.0.0); "
                "the oldest commit kbench builds is %s" % (short, self.version, OLDEST_TREE, OLDEST_TREE))
        return self

    def entry(self, root, flags):
        return tree_entry(root, self.sha, flags)


def cmd_path_tree(root, tree, rev):
    t = Tree(Repo(tree), rev).check()
    if not print_built(t.entry(root, choose_flags())):
        info("commit %s of %s is not built; run: scripts/librdkafka build --tree %s %s"
             % (t.sha[:12], t.repo.top, tree, rev))
        sys.exit(1)


def cmd_build_tree(root, tree, revs, span):
    """Builds each of REVS (or the final releases of SPAN), printing its library directory;
    every one is checked before any is built. Of several, one that fails does not stop the
    others: all are named at the end (exit 1)."""
    repo = Repo(tree)
    if span is not None:
        revs = [r.tag for r in repo.releases_in(span)]
    trees = [Tree(repo, rev) for rev in revs]
    flags = choose_flags()
    todo = [t.check() for t in trees if not is_built(t.entry(root, flags))]
    cli.dry_run_exit()
    if todo:
        check_build_tools()
    if len(trees) == 1:
        build_tree(root, trees[0], flags)
        return
    started, done, failed = time.time(), 0, []
    for i, t in enumerate(trees, 1):
        if print_built(t.entry(root, flags)):
            continue
        info("[%d/%d] %s" % (i, len(trees), t.rev))
        try:
            build_tree(root, t, flags)
            done += 1
        except SystemExit as e:
            if not e.code:
                raise
            failed.append(t.rev)
    seconds = int(time.time() - started)
    info("%d revisions: %d built now, %d already built, %d failed, in %dm%02ds"
         % (len(trees), done, len(trees) - done - len(failed), len(failed), seconds // 60, seconds % 60))
    if failed:
        die("not built: %s (each one's reason above, and its build.log)" % " ".join(failed), status=1)


def build_tree(root, t, flags):
    """Commit T's cache entry, built unless it is; prints its library directory."""
    d = t.entry(root, flags)
    if print_built(d):
        return
    rc, describe = t.repo.git("describe", "--tags", "--always", "--abbrev=12", t.sha)
    if rc != 0:
        describe = t.sha[:12]
    with stamp.lock(d, "commit " + t.sha[:12]), building(d):
        if not print_built(d):
            build_commit(d, t, flags, describe)


def build_commit(d, t, flags, describe):
    """git archive, configure, make, verify, stamp."""
    repo = t.repo
    started, log, src = int(time.time()), d + "/build.log", d + "/build"
    start_build(d)
    # The commit's files only (no .git: librdkafka's Makefile would then stamp the version
    # with git describe, and a cache inside another repository would describe that one).
    fresh_dir(src)
    with open(log, "a") as errors:
        archive = subprocess.Popen(["git", "-C", repo.top, "archive", "--format=tar", "%s:%s" % (t.sha, repo.prefix)],
                                   stdout=subprocess.PIPE, stderr=errors)
        untar = subprocess.run(["tar", "-xf", "-", "-C", src], stdin=archive.stdout, stderr=errors)
        archive.stdout.close()
        if archive.wait() != 0 or untar.returncode != 0:
            die("git archive of %s failed; log: %s" % (t.sha[:12], log), status=1)
    built = compile_source(d, src, t.version, "%s, %s at %s" % (t.version, repo.path, describe), flags)
    write_stamp(d, started, ["librdkafka_version=" + t.version, "source=tree:%s@%s" % (repo.path, t.sha),
                             "tree=" + repo.path, "commit=" + t.sha, "describe=" + describe], built)


# mklove's check of the interpreter lds-gen.py runs with; before 1.4.2 it is `python`.
NEEDS_PYTHON = re.compile(r"mkl_command_check\s+python\s")


def cmd_releases(root, tree):
    """The final releases of DIR from v1.0.0 on, in version order: commit, branch parent
    (the latest earlier release that is its ancestor), built or not, notes."""
    repo = Repo(tree)
    shown = repo.final_releases()
    cli.dry_run_exit()
    every = repo.all_releases()
    first = {}  # sha -> its first release; a later tag on the same commit is no release of its own
    for r in every:
        first.setdefault(r.sha, r)
    originals = [r for r in every if first[r.sha].tag == r.tag]
    flags = choose_flags()
    row = "%-9s %-12s %-9s %-5s %s"
    print(row % ("RELEASE", "COMMIT", "PARENT", "BUILT", "NOTES"), flush=True)
    built = 0
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
            configure = repo.git("show", "%s:%sconfigure.self" % (r.sha, repo.prefix))[1]
            if NEEDS_PYTHON.search(configure):
                notes.append("its linker script needs `python` on PATH (python-is-python3)")
            # A packaging-only release may keep the previous version (v2.0.1 says 2.0.0): its
            # runs report that version, and only librdkafka_source tells them apart.
            header = header_version(repo.git("show", "%s:%ssrc/rdkafka.h" % (r.sha, repo.prefix))[1])
            if header != r.tag[1:]:
                notes.append("its rdkafka.h says %s, and so does the library" % header)
        is_done = is_built(tree_entry(root, r.sha, flags))
        built += is_done
        print((row % (r.tag, r.sha[:12], parent.tag if parent else "-", "yes" if is_done else "no",
                      "; ".join(notes))).rstrip(), flush=True)
    info("%d final release tags on %d commits, %d built in %s/tree"
         % (len(shown), len({r.sha for r in shown}), built, root))


def parse(argv):
    """(command, VERSIONs or REVs, --tree DIR, --from-source, --releases SPAN or None), or usage
    and exit."""
    if not argv:
        cli.bad_usage("a command is required: build, path, list or releases", COMMAND)
    cmd, args = argv[0], argv[1:]
    if cmd in ("-h", "--help", "help"):
        sys.stdout.write(USAGE)
        sys.exit(0)
    if cmd not in ("build", "path", "list", "releases"):
        cli.bad_usage("unknown command '%s' (build, path, list or releases)" % cmd, COMMAND)
    from_source, names, values = False, [], {"--tree": "", "--releases": None}
    i = 0
    while i < len(args):
        a = args[i]
        option, eq, value = a.partition("=")
        if a in ("-h", "--help"):
            sys.stdout.write(USAGE)
            sys.exit(0)
        elif a == "--from-source":
            from_source = True
        elif option in values:
            if not eq:
                if i + 1 >= len(args):
                    cli.bad_usage("option %s needs a value" % option, COMMAND)
                i += 1
                value = args[i]
            if not value:
                cli.bad_usage("option %s needs a value" % option, COMMAND)
            values[option] = value
        elif a.startswith("-"):
            cli.bad_usage("unknown option '%s'" % a, COMMAND)
        else:
            names.append(a)
        i += 1
    return cmd, names, values["--tree"], from_source, values["--releases"]


def main(argv):
    # Ctrl-C, or a reader that stops reading, ends the tool as they ended the shell script:
    # by the signal, no traceback.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    cli.prog = PROG
    cmd, names, tree, from_source, span = parse(argv)
    root = cache_root()
    system = system_version()

    if cmd == "list":
        if names or tree or from_source or span is not None:
            cli.bad_usage("list takes no arguments", COMMAND)
        cmd_list(root, system)
        return 0
    if cmd == "releases":
        if not tree:
            cli.bad_usage("releases needs --tree DIR (a librdkafka git repository)", COMMAND)
        if names or from_source or span is not None:
            cli.bad_usage("releases takes --tree DIR only", COMMAND)
        cmd_releases(root, tree)
        return 0
    if span is not None and not (cmd == "build" and tree):
        cli.bad_usage("--releases is for build --tree DIR", COMMAND)

    if tree:
        if from_source:
            cli.bad_usage("--from-source is for releases, not --tree", COMMAND)
        if span is not None and names:
            cli.bad_usage("build --tree DIR takes REVs or --releases, not both", COMMAND)
        if not names and span is None:
            cli.bad_usage("%s --tree DIR needs a REV (a commit, branch or tag of DIR)" % cmd, COMMAND)
        if cmd == "path":
            if len(names) > 1:
                cli.bad_usage("path --tree DIR takes one REV (got '%s' and '%s')" % tuple(names[:2]), COMMAND)
            cmd_path_tree(root, tree, names[0])
        else:
            cmd_build_tree(root, tree, names, span)
        return 0

    if len(names) > 1:
        cli.bad_usage("one VERSION only (got '%s' and '%s')" % tuple(names[:2]), COMMAND)
    version = names[0] if names else ""
    known = "system " + " ".join(SOURCES)
    if not version:
        cli.bad_usage("%s needs a VERSION (known: %s)" % (cmd, known), COMMAND)
    if version != "system":
        if not re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+", version):
            cli.bad_usage("VERSION must look like 2.15.1 or be 'system', not '%s'" % version, COMMAND)
        if version not in SOURCES and not means_system(version, from_source, system):
            cli.bad_usage("unknown librdkafka version '%s'; known: %s" % (version, known), COMMAND)
    elif from_source:
        cli.bad_usage("--from-source needs a version number, not 'system'", COMMAND)
    (cmd_build if cmd == "build" else cmd_path)(root, version, from_source, system)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
