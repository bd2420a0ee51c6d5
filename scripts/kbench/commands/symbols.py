"""Rebuilds the installed zstd, lz4, snappy, zlib and librdkafka from their Debian source
packages, unstripped and with frame pointers, so that profiles name their functions, and
prints the LD_LIBRARY_PATH that runs kbench on them (the only line on stdout):

  LD_LIBRARY_PATH=$(scripts/symbols build) build/kbench ...
  scripts/profile --symbols FILTER        (does the same)

Each library is built with its package's flags (dpkg-buildflags) plus frame pointers, and
must report the installed library's version, carry a symbol table and DWARF, and
(librdkafka) every codec. When the installed Debian revision's source is gone, the newest
of the same upstream version is built (docs/profiling.md).

Cache: ${KBENCH_CACHE:-$HOME/.cache/kbench}/symbols/, a folder per library; delete one to
rebuild it. Needs what scripts/setup --symbols installs; about 4 minutes once on 2 cores.
Exit status: 0 ok; 1 a download or build failed, or `path`: not built; 2 bad usage or a
missing prerequisite.
"""

import argparse
import difflib
import glob
import hashlib
import os
import pathlib
import pwd
import re
import shutil
import sys
import time

from kbench import build_stamp, cli, facts, library_probe, proc, text
from kbench.build_stamp import BuildError

# LIB -> the Debian binary package of the library the system loads (its soname: facts.libraries()).
LIBRARIES = {"zstd": "libzstd1", "lz4": "liblz4-1", "snappy": "libsnappy1v5", "zlib": "zlib1g",
             "librdkafka": "librdkafka1"}
# Added to Debian's flags (which carry -g): frame pointers, so that perf --call-graph fp sees whole stacks.
EXTRA_CFLAGS = "-fno-omit-frame-pointer -mno-omit-leaf-frame-pointer"
TOOLS = ["apt-get", "apt-cache", "dpkg-source", "dpkg-buildflags", "dpkg-query", "cc", "c++",
         "make", "cmake", "readelf", "nm"]


def no_epoch(version):
    """1:1.2.13.dfsg-1 -> 1.2.13.dfsg-1 (file and folder names carry no epoch)."""
    return version.split(":", 1)[-1]


def upstream(version):
    """1:1.9.4-1 -> 1.9.4."""
    return no_epoch(version).rsplit("-", 1)[0]


def version_order(version):
    """A sort key putting 1.9.10 after 1.9.9, as `sort -V` does."""
    return [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", version)]


def installed(lib):
    """(SOURCE_PACKAGE, SOURCE_VERSION) of LIB's installed binary package; None when it is not."""
    answer = proc.output(["dpkg-query", "-W", "-f=${source:Package} ${source:Version}", LIBRARIES[lib]])
    return tuple(answer.split(" ", 1)) if answer and " " in answer else None


def system_file(lib):
    """The file the loader resolves LIB's SONAME to without LD_LIBRARY_PATH, or None."""
    listing = proc.output(["/sbin/ldconfig", "-p"], env=library_probe.system_environment()) or ""
    for line in listing.splitlines():
        w = line.split()
        if w and w[0] == facts.libraries()[lib]["soname"] and re.search("x86-64|x86_64|64bit", line):
            return os.path.realpath(w[-1])
    return None


def ask(lib, path, log):
    """What the library at PATH itself reports, {"version", "features"}; None when it does not load."""
    if lib == "snappy":
        # No runtime query in snappy's API: the versioned file name (libsnappy.so.1.1.9).
        return {"version": os.path.basename(os.path.realpath(path)).removeprefix("libsnappy.so."), "features": ""}
    return library_probe.probe(facts.version_functions()[lib], path, log)


def exported(path):
    """The names of the functions and data a shared library exports, sorted."""
    listing = proc.output(["nm", "-D", "--defined-only", path]) or ""
    return sorted({(line.split() or [""])[-1] for line in listing.splitlines()})


def deb_src_lines(main="/etc/apt/sources.list", parts="/etc/apt/sources.list.d"):
    """deb-src lines for every deb line of the system's apt sources (one-line .list and deb822
    .sources formats) of Debian's archives: other vendors' carry no sources for these packages."""
    lines = set()
    for path in [main] * os.path.exists(main) + sorted(glob.glob(os.path.join(parts, "*.list"))):
        with open(path, errors="replace") as f:
            for w in (raw.split("#", 1)[0].split() for raw in f):
                if len(w) >= 3 and w[0] == "deb":
                    w = [x for x in w[1:] if not x.startswith("[")]
                    lines.add("deb-src %s %s %s" % (w[0], w[1], " ".join(w[2:]) or "main"))
    for path in sorted(glob.glob(os.path.join(parts, "*.sources"))):
        for block in pathlib.Path(path).read_text(errors="replace").split("\n\n"):
            fields = {k.strip().lower(): v.split() for k, _, v in
                      (raw.partition(":") for raw in block.splitlines() if ":" in raw and raw[0] != "#")}
            if "deb" in fields.get("types", []) and fields.get("enabled", ["yes"])[0] != "no":
                for uri in fields.get("uris", []):
                    for suite in fields.get("suites", []):
                        lines.add("deb-src %s %s %s" % (uri, suite, " ".join(fields.get("components", ["main"]))))
    return sorted(x for x in lines if "debian.org" in x or "debian-security" in x)


class Cache:
    """The cache of symbol builds, ${KBENCH_CACHE:-$HOME/.cache/kbench}/symbols."""

    def __init__(self):
        self.root = build_stamp.cache_dir("symbols")
        self.apt_opts = None  # set once the deb-src index is read

    def lib_dir(self, lib):
        """The cache folder for LIB's installed version; None when it is not installed."""
        found = installed(lib)
        return "%s/%s_%s" % (self.root, found[0], no_epoch(found[1])) if found else None

    @staticmethod
    def is_built(d):
        return d is not None and os.path.isfile(d + "/build.json") and os.path.isdir(d + "/lib")

    def apt(self, args, cwd=None):
        """apt-get ARGS, its output appended to apt.log; its exit status."""
        return proc.run(["apt-get"] + args, log=self.root + "/apt.log", cwd=cwd).returncode

    def apt_update_once(self):
        """The index of deb_src_lines(), in the private apt configuration."""
        if self.apt_opts is not None:
            return
        a = self.root + "/apt"
        os.makedirs(a + "/lists/partial", exist_ok=True)
        os.makedirs(a + "/cache/archives/partial", exist_ok=True)
        lines = deb_src_lines()
        if not lines:
            raise BuildError("no Debian deb lines in /etc/apt/sources.list{,.d}: cannot find the source archive", 2)
        pathlib.Path(a, "sources.list").write_text("".join(line + "\n" for line in lines))
        opts = ["-o", "Dir::Etc::SourceList=%s/sources.list" % a, "-o", "Dir::Etc::SourceParts=/dev/null",
                "-o", "Dir::State::Lists=%s/lists" % a, "-o", "Dir::Cache=%s/cache" % a,
                "-o", "Debug::NoLocking=1", "-o", "APT::Sandbox::User=" + pwd.getpwuid(os.getuid()).pw_name, "-qq"]
        cli.info("reading the Debian source index (deb-src of: %s)"
                 % ",".join(" ".join(line.split()[1:3]) for line in lines))
        if self.apt(opts + ["update"]) != 0:
            raise BuildError("apt-get update of the deb-src index failed (log: %s/apt.log)" % self.root)
        self.apt_opts = opts

    def fetch_source(self, source, version):
        """(the version fetched, its .dsc): else the newest revision of the same upstream version."""
        d = self.root + "/src"
        os.makedirs(d, exist_ok=True)
        dsc = "%s/%s_%s.dsc" % (d, source, no_epoch(version))
        if os.path.isfile(dsc):
            return version, dsc
        self.apt_update_once()
        showsrc = proc.output(["apt-cache"] + self.apt_opts + ["showsrc", source]) or ""
        listed = {line.split()[1] for line in showsrc.splitlines()
                  if line.startswith("Version:") and len(line.split()) > 1}
        for candidate in [version] + sorted(listed - {version}, key=version_order, reverse=True):
            if upstream(candidate) != upstream(version):
                continue
            dsc = "%s/%s_%s.dsc" % (d, source, no_epoch(candidate))
            if not os.path.isfile(dsc):
                self.apt(self.apt_opts + ["source", "--download-only", "%s=%s" % (source, candidate)], cwd=d)
            if os.path.isfile(dsc):
                if candidate != version:
                    cli.info("warning: the source of %s %s is not downloadable; building %s (same upstream "
                             "version %s)" % (source, version, candidate, upstream(version)))
                return candidate, dsc
        raise BuildError("no downloadable Debian source for %s %s (log: %s/apt.log)" % (source, version, self.root))

    def build_one(self, lib):
        """LIB's library folder, built into its cache folder unless it is there, verified and stamped."""
        package, soname = LIBRARIES[lib], facts.libraries()[lib]["soname"]
        found = installed(lib)
        if not found:
            raise BuildError("%s is not installed: nothing to match (scripts/setup installs it)" % package, 2)
        d = self.lib_dir(lib)
        if not self.is_built(d):
            with build_stamp.lock(d, lib):
                if not self.is_built(d):
                    self.build_locked(lib, soname, d, *found)
        return d + "/lib"

    def build_locked(self, lib, soname, d, source, version):
        started, log = time.monotonic(), d + "/build.log"
        open(log, "w").close()
        src_version, dsc = self.fetch_source(source, version)
        tree = d + "/build"
        for old in (tree, d + "/lib.tmp"):
            shutil.rmtree(old, ignore_errors=True)
        os.makedirs(d + "/lib.tmp")
        cli.info("building %s from %s (log: %s)" % (lib, os.path.basename(dsc), log))
        build = Build(log)
        # -x applies Debian's patches (quilt format 3.0): the tree is what Debian compiled.
        if not build.run(["dpkg-source", "--no-check", "-x", dsc, tree]):
            raise BuildError("dpkg-source -x %s failed; log: %s" % (os.path.basename(dsc), log))
        cflags = build.library(lib, tree, d + "/lib.tmp")
        if cflags is None:
            print(proc.tail(log, 25), file=sys.stderr)
            raise BuildError("building %s failed; log: %s" % (lib, log))
        verified = verify(lib, soname, d, log)
        shutil.rmtree(d + "/lib", ignore_errors=True)
        os.rename(d + "/lib.tmp", d + "/lib")
        seconds = int(time.monotonic() - started)
        dsc_sha256 = hashlib.sha256(pathlib.Path(dsc).read_bytes()).hexdigest()
        build_stamp.write(d + "/build.json", {
            "library": lib, "source_package": source, "installed_debian_version": version,
            "built_debian_version": src_version, "debian_revision_mismatch": src_version != version,
            **verified, "cflags": cflags, "extra_cflags": EXTRA_CFLAGS, "dsc_sha256": dsc_sha256,
            "compiler": build_stamp.compiler(), "build_seconds": seconds})
        shutil.rmtree(tree, ignore_errors=True)
        cli.info("built %s %s (Debian %s) in %ds" % (lib, verified["library_version"], src_version, seconds))


def verify(lib, soname, d, log):
    """The same version as the system's, symbols and DWARF present: the facts build.json records."""
    so, sysfile = "%s/lib.tmp/%s" % (d, soname), system_file(lib)
    if not os.path.exists(so):
        raise BuildError("the build produced no %s; log: %s" % (soname, log))
    if not sysfile:
        raise BuildError("no system %s found to compare with" % soname)
    built, system = ask(lib, so, log), ask(lib, sysfile, log)
    if built is None or system is None:
        raise BuildError("%s does not load; log: %s" % (so if built is None else sysfile, log))
    if built["version"] != system["version"]:
        raise BuildError("%s: the build reports version '%s', the system library '%s'"
                         % (lib, built["version"], system["version"]))
    sections = proc.output(["readelf", "-S", "-W", os.path.realpath(so)]) or ""
    if " .symtab " not in sections:
        raise BuildError("%s: the built library has no symbol table" % lib)
    if " .debug_info " not in sections:
        raise BuildError("%s: the built library has no DWARF (.debug_info)" % lib)
    # Same configuration as Debian's build: the same exported functions.
    built_names, system_names = exported(so), exported(sysfile)
    diff = difflib.unified_diff(built_names, system_names, "built", "system", lineterm="")
    pathlib.Path(d, "exports.diff").write_text("".join(line + "\n" for line in diff))
    if built_names != system_names:
        cli.info("warning: %s exports other functions than the system library (%s/exports.diff)" % (lib, d))
    verified = {"library_version": built["version"], "system_library_version": system["version"],
                "system_library_file": sysfile, "exports_match_system": built_names == system_names}
    if lib == "librdkafka":
        features = built["features"].split(",")
        missing = [codec for codec in facts.librdkafka_codecs() if codec not in features]
        if missing:
            raise BuildError("librdkafka was built without %s (builtin.features: %s)"
                             % (" ".join(missing), built["features"]))
        if built["features"] != system["features"]:
            cli.info("warning: builtin.features differ from the system library's: built '%s', system '%s' "
                     "(install the missing build dependencies: scripts/setup --symbols)"
                     % (built["features"], system["features"]))
        verified.update(builtin_features=features, system_builtin_features=system["features"].split(","))
    return verified


class Build:
    """The shared library only, as debian/rules of the bookworm package builds it (maintainer
    options, defines, optimisation level, configure options), its output to the file LOG."""

    def __init__(self, log):
        self.log, self.jobs = log, str(len(os.sched_getaffinity(0)))

    def run(self, cmd, env=None, cwd=None):
        """One step; False when it fails."""
        return proc.run(cmd, log=self.log, env=dict(os.environ, **env) if env else None, cwd=cwd).returncode == 0

    def flags(self, tree, maint_options):
        """cflags, cxxflags, cppflags and ldflags as the package's rules see them, in its source tree."""
        env = dict(os.environ, DEB_BUILD_MAINT_OPTIONS=maint_options, DEB_CFLAGS_MAINT_APPEND=EXTRA_CFLAGS,
                   DEB_CXXFLAGS_MAINT_APPEND=EXTRA_CFLAGS)
        return [proc.output(["dpkg-buildflags", "--get", var], cwd=tree, env=env) or ""
                for var in ("CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS")]

    def stage(self, path, stage):
        """The real file under its own name, plus the SONAME link the loader looks for."""
        real = os.path.realpath(path)
        if not os.path.isfile(real):
            return False
        shutil.copy(real, stage)
        if os.path.basename(real) != os.path.basename(path):
            os.symlink(os.path.basename(real), os.path.join(stage, os.path.basename(path)))
        return True

    def library(self, lib, src, stage):
        """Builds LIB's shared library from the tree SRC into STAGE; its CFLAGS, or None on failure."""
        j = "-j" + self.jobs
        if lib == "zstd":
            cflags, _, cppflags, ldflags = self.flags(src, "hardening=+all")
            # Flags through the environment, as dh passes them: the Makefile appends its own.
            ok = (self.run(["make", "-C", src + "/lib", j, "libzstd", "V=1"],
                           dict(CFLAGS=cflags, CPPFLAGS=cppflags, LDFLAGS=ldflags, PREFIX="/usr"))
                  and self.stage(src + "/lib/libzstd.so.1", stage))
        elif lib == "lz4":
            cflags, _, cppflags, ldflags = self.flags(src, "")
            cppflags += " -DLZ4F_PUBLISH_STATIC_FUNCTIONS"
            cflags += " " + cppflags
            ok = (self.run(["make", "-C", src + "/lib", j, "liblz4", "CC=gcc", "V=1"],
                           dict(CFLAGS=cflags, CPPFLAGS=cppflags, LDFLAGS=ldflags, PREFIX="/usr"))
                  and self.stage(src + "/lib/liblz4.so.1", stage))
        elif lib == "snappy":
            cflags, cxxflags, cppflags, ldflags = self.flags(src, "")
            ok = (self.run(["cmake", "-S", src, "-B", src + "/build", "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
                            "-DBUILD_SHARED_LIBS=ON", "-DSNAPPY_ENABLE_RTTI=ON", "-DSNAPPY_BUILD_TESTS=OFF",
                            "-DSNAPPY_BUILD_BENCHMARKS=OFF", "-DCMAKE_VERBOSE_MAKEFILE=ON"],
                           dict(CFLAGS=cflags + " " + cppflags, CXXFLAGS=cxxflags + " " + cppflags, LDFLAGS=ldflags))
                  and self.run(["cmake", "--build", src + "/build", "-j", self.jobs, "--target", "snappy"])
                  and self.stage(src + "/build/libsnappy.so.1", stage))
        elif lib == "zlib":
            cflags, _, cppflags, ldflags = self.flags(src, "")
            cflags += " %s -Wall -D_REENTRANT -O3" % cppflags
            ok = self.run(["./configure", "--shared", "--prefix=/usr"],
                          dict(CC="gcc", CFLAGS=cflags, LDFLAGS=ldflags, uname="GNU"), cwd=src)
            if ok:
                # The shared library only: its target is the versioned file name (libz.so.1.2.13).
                with open(src + "/Makefile", errors="replace") as f:
                    target = "\n".join(line[len("SHAREDLIBV="):].rstrip("\n") for line in f
                                       if line.startswith("SHAREDLIBV="))
                ok = self.run(["make", "-C", src, j, target]) and self.stage(src + "/libz.so.1", stage)
        else:
            # debian/rules: plain dh (mklove's configure) with hardening=+bindnow.
            cflags, cxxflags, cppflags, ldflags = self.flags(src, "hardening=+bindnow")
            ok = (self.run(["./configure", "--prefix=/usr"],
                           dict(CFLAGS=cflags, CXXFLAGS=cxxflags, CPPFLAGS=cppflags, LDFLAGS=ldflags), cwd=src)
                  and self.run(["make", "-C", src + "/src", j, "librdkafka.so.1"])
                  and self.stage(src + "/src/librdkafka.so.1", stage))
        return cflags if ok else None


def build(libs=tuple(LIBRARIES)):
    """The library folders of symbol builds of LIBS, built unless they are."""
    absent = [t for t in TOOLS if not shutil.which(t)]
    if absent:
        raise BuildError("missing tools: %s (scripts/setup --symbols installs them)" % " ".join(absent), 2)
    cache = Cache()
    os.makedirs(cache.root, exist_ok=True)
    return [cache.build_one(lib) for lib in libs]


def library(name):
    if name not in LIBRARIES:
        raise argparse.ArgumentTypeError("unknown library '%s' (one of: %s)" % (name, " ".join(LIBRARIES)))
    return name


def add_arguments(parser):
    sub = parser.add_subparsers(dest="command", required=True)
    for name, what in (("build", "download (apt-get source), build and verify; cached: later calls print at once"),
                       ("path", "print the LD_LIBRARY_PATH if every LIB is built; exit 1 if one is not")):
        sub.add_parser(name, help=what).add_argument(
            "libs", nargs="*", metavar="LIB", type=library, help="one of %s (default: all)" % ", ".join(LIBRARIES))
    sub.add_parser("list", help="each library: installed package version, built version, cache folder")


def main(args):
    if args.command == "list":
        cache, rows = Cache(), []
        for lib in LIBRARIES:
            d = cache.lib_dir(lib)
            built = build_stamp.read(d + "/build.json").get("built_debian_version", "") if cache.is_built(d) else ""
            rows.append((lib, *(installed(lib) or ("", "")), built or "not built", d or "-"))
        print(text.table(("LIB", "SOURCE", "INSTALLED", "BUILT", "FOLDER"), rows))
        return 0
    libs = args.libs or list(LIBRARIES)
    if args.command == "path":
        cache = Cache()
        for lib in libs:
            if not cache.is_built(cache.lib_dir(lib)):
                cli.info("%s is not built; run: scripts/symbols build %s" % (lib, lib))
                return 1
        print(":".join(cache.lib_dir(lib) + "/lib" for lib in libs))
        return 0
    try:
        print(":".join(build(libs)))
    except BuildError as e:
        cli.die(e, e.status)
    return 0
