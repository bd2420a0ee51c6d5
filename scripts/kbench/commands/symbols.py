"""scripts/symbols: rebuilds the system's codec libraries and librdkafka from their Debian
source packages, unstripped and with frame pointers, so that profiles name their functions.
Debian's debug-symbol archive is not reachable here, its source archive is; built with the
package's own flags, the library computes exactly what the system's does (the context's
`loaded_libraries` records which files ran).

    python -m kbench.commands.symbols build|path|list [LIB...]
"""

import hashlib
import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
import time

from kbench import cli, debian, native, stamp

COMMAND = "scripts/symbols"
ALL_LIBS = ["zstd", "lz4", "snappy", "zlib", "librdkafka"]
# LIB -> the Debian binary package holding the library the system loads, its SONAME.
LIB_TABLE = {
    "zstd": ("libzstd1", "libzstd.so.1"),
    "lz4": ("liblz4-1", "liblz4.so.1"),
    "snappy": ("libsnappy1v5", "libsnappy.so.1"),
    "zlib": ("zlib1g", "libz.so.1"),
    "librdkafka": ("librdkafka1", "librdkafka.so.1"),
}
# Added to Debian's flags: frame pointers everywhere (perf --call-graph fp gives whole stacks
# through the library; Debian's flags already carry -g).
EXTRA_CFLAGS = "-fno-omit-frame-pointer -mno-omit-leaf-frame-pointer"
TOOLS = ["apt-get", "apt-cache", "dpkg-source", "dpkg-buildflags", "dpkg-query", "cc", "c++",
         "make", "cmake", "readelf", "nm"]

USAGE = """\
Usage: scripts/symbols build [LIB...]
       scripts/symbols path  [LIB...]
       scripts/symbols list

Builds the Debian source packages of the installed zstd, lz4, snappy, zlib and librdkafka
(default: all five; LIB is one of: {libs}) with the package's own flags (dpkg-buildflags,
as its debian/rules sets them) plus debug info and frame pointers ({extra}),
caches them and prints the LD_LIBRARY_PATH that runs kbench on them (the only line on
stdout; progress goes to stderr):

  LD_LIBRARY_PATH=$(scripts/symbols build) build/kbench ...
  scripts/profile --symbols FILTER        (does the same)

  build [LIB...]  download (apt-get source), build, verify; cached: later calls print at once
  path  [LIB...]  print the LD_LIBRARY_PATH if every LIB is built; exit 1 if one is not
  list            each library: installed package version, built version, cache directory

Only the shared library is built. It must report the installed library's version, carry a
symbol table and DWARF, and (librdkafka) every codec in builtin.features. When the installed
Debian revision's source is gone, the newest of the same upstream version is built and
build.json says so (`debian_revision_mismatch`); see docs/profiling.md.

Cache: ${{KBENCH_CACHE:-$HOME/.cache/kbench}}/symbols/: apt/ (a private apt configuration:
the system's is never touched), src/ (source packages), and SOURCE_DEBVERSION/ per library
with lib/, build.json and build.log. Delete a directory to rebuild it.

Needs apt-get, dpkg-dev, a C/C++ compiler, make, cmake, and librdkafka's build dependencies:
scripts/setup --symbols installs them. About 4 minutes once on 2 cores.
Exit status: 0 ok; 1 a download or build failed, or for 'path' not built; 2 bad usage or a
missing prerequisite.
""".format(libs=" ".join(ALL_LIBS), extra=EXTRA_CFLAGS)


def no_epoch(version):
    """1:1.2.13.dfsg-1 -> 1.2.13.dfsg-1 (file and folder names carry no epoch)."""
    return version.split(":", 1)[-1]


def no_revision(version):
    """1.9.4-1 -> 1.9.4: the upstream version."""
    return version.rsplit("-", 1)[0]


# --- what is installed -------------------------------------------------------------------------

def installed(lib):
    """"SOURCE_PACKAGE SOURCE_VERSION" of LIB's installed binary package; "" when it is not."""
    try:
        proc = subprocess.run(["dpkg-query", "-W", "-f=${source:Package} ${source:Version}\\n",
                               LIB_TABLE[lib][0]], capture_output=True, text=True)
    except OSError:
        return ""
    return proc.stdout.rstrip("\n") if proc.returncode == 0 else ""


def source_version(inst):
    """installed()'s answer as (SOURCE_PACKAGE, SOURCE_VERSION)."""
    return inst.split(" ", 1)[0], inst.split(" ", 1)[-1]


def system_file(lib):
    """The file the loader resolves LIB's SONAME to without LD_LIBRARY_PATH, or None."""
    try:
        text = subprocess.run(["/sbin/ldconfig", "-p"], env=native.without_ld_path(), text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout
    except OSError:
        return None
    for line in text.splitlines():
        w = line.split()
        if w and w[0] == LIB_TABLE[lib][1] and re.search("x86-64|x86_64|64bit", line):
            return os.path.realpath(w[-1])
    return None


def runtime_version(lib, path, log):
    """The version the library itself reports, loaded by path; None when it does not load."""
    if lib == "snappy":
        # No runtime query in snappy's API: the versioned file name (libsnappy.so.1.1.9).
        name = os.path.basename(os.path.realpath(path))
        return name[len("libsnappy.so."):] if name.startswith("libsnappy.so.") else name
    return native.ask(["version", lib, path], log)


def exported(path):
    """The names of the functions and data a shared library exports, sorted."""
    proc = subprocess.run(["nm", "-D", "--defined-only", path], stdout=subprocess.PIPE, text=True)
    return sorted({(line.split() or [""])[-1] for line in proc.stdout.splitlines()})


class Symbols:
    """The cache of symbol builds, ${KBENCH_CACHE:-$HOME/.cache/kbench}/symbols."""

    def __init__(self):
        cache = os.environ.get("KBENCH_CACHE") or os.environ.get("HOME", "") + "/.cache/kbench"
        root = cache + "/symbols"
        # $PWD, as bash has it: the folder named the way the caller named it.
        self.root = root if root.startswith("/") else (os.environ.get("PWD") or os.getcwd()) + "/" + root
        self.apt_dir = self.root + "/apt"
        self.apt_opts = None  # set once the deb-src index is read

    def lib_dir(self, lib):
        """The cache folder for LIB's installed version; None when it is not installed."""
        inst = installed(lib)
        if not inst:
            return None
        source, version = source_version(inst)
        return "%s/%s_%s" % (self.root, source, no_epoch(version))

    @staticmethod
    def is_built(d):
        return d is not None and os.path.isfile(d + "/build.json") and os.path.isdir(d + "/lib")

    def ld_path(self, libs):
        """The LD_LIBRARY_PATH for LIBS (all built)."""
        return ":".join(self.lib_dir(lib) + "/lib" for lib in libs)

    # --- the private apt configuration -------------------------------------------------------

    def write_sources(self):
        """deb-src lines for every deb line of the system's sources: the same archive and
        suites, so the installed versions' sources are found."""
        os.makedirs(self.apt_dir + "/lists/partial", exist_ok=True)
        os.makedirs(self.apt_dir + "/cache/archives/partial", exist_ok=True)
        lines = debian.deb_src_lines("/etc/apt/sources.list", "/etc/apt/sources.list.d")
        tmp = self.apt_dir + "/sources.list.tmp"
        with open(tmp, "w") as f:
            f.writelines(line + "\n" for line in lines)
        if not lines:
            cli.die("no Debian deb lines in /etc/apt/sources.list{,.d}: cannot find the source archive")
        os.replace(tmp, self.apt_dir + "/sources.list")
        return lines

    def apt_update_once(self):
        if self.apt_opts is not None:
            return
        lines = self.write_sources()
        a = self.apt_dir
        opts = ["-o", "Dir::Etc::SourceList=%s/sources.list" % a, "-o", "Dir::Etc::SourceParts=/dev/null",
                "-o", "Dir::State::Lists=%s/lists" % a, "-o", "Dir::Cache=%s/cache" % a,
                "-o", "Debug::NoLocking=1", "-o", "APT::Sandbox::User=" + pwd.getpwuid(os.getuid()).pw_name,
                "-qq"]
        cli.info("reading the Debian source index (deb-src of: %s)"
                 % ",".join(" ".join(line.split()[1:3]) for line in lines))
        if self.apt(opts + ["update"]) != 0:
            cli.die("apt-get update of the deb-src index failed (log: %s/apt.log)" % self.root, status=1)
        self.apt_opts = opts

    def apt(self, args, cwd=None):
        """apt-get ARGS, its output appended to apt.log; its exit status."""
        with open(self.root + "/apt.log", "a") as log:
            return subprocess.run(["apt-get"] + args, cwd=cwd, stdout=log, stderr=subprocess.STDOUT).returncode

    def fetch_source(self, source, version):
        """(the version fetched, its .dsc). When the installed revision's source is not
        downloadable (security uploads are pruned from some mirrors), the newest other
        revision of the same upstream version is taken."""
        d = self.root + "/src"
        upstream = no_revision(no_epoch(version))
        os.makedirs(d, exist_ok=True)
        dsc = "%s/%s_%s.dsc" % (d, source, no_epoch(version))
        if os.path.isfile(dsc):
            return version, dsc
        self.apt_update_once()
        proc = subprocess.run(["apt-cache"] + self.apt_opts + ["showsrc", source], text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        listed = [line.split()[1] for line in proc.stdout.splitlines()
                  if line.startswith("Version:") and len(line.split()) > 1]
        # GNU sort's version order, newest first.
        newest = subprocess.run(["sort", "-u", "-r", "-V"], input="".join(v + "\n" for v in listed),
                                stdout=subprocess.PIPE, text=True).stdout.split()
        for candidate in [version] + [v for v in newest if v != version]:
            if no_revision(no_epoch(candidate)) != upstream:
                continue
            dsc = "%s/%s_%s.dsc" % (d, source, no_epoch(candidate))
            if not os.path.isfile(dsc):
                self.apt(self.apt_opts + ["source", "--download-only", "%s=%s" % (source, candidate)], cwd=d)
            if not os.path.isfile(dsc):
                continue
            if candidate != version:
                cli.info("warning: the source of %s %s is not downloadable; building %s (same upstream "
                         "version %s)" % (source, version, candidate, upstream))
            return candidate, dsc
        cli.die("no downloadable Debian source for %s %s (log: %s/apt.log)" % (source, version, self.root),
                status=1)

    # --- building ------------------------------------------------------------------------------

    def build_one(self, lib):
        """Builds LIB into its cache folder unless it is there, verifies it and stamps it."""
        package, soname = LIB_TABLE[lib]
        inst = installed(lib)
        if not inst:
            cli.die("%s is not installed: nothing to match (scripts/setup installs it)" % package)
        d = self.lib_dir(lib)
        if self.is_built(d):
            return
        source, version = source_version(inst)
        # The lock is held until this returns, or the process ends.
        with stamp.lock(d, lib):
            if not self.is_built(d):
                self.build_locked(lib, soname, d, source, version)

    def build_locked(self, lib, soname, d, source, version):
        started = time.monotonic()
        log_path = d + "/build.log"
        with open(log_path, "w") as log:
            src_version, dsc = self.fetch_source(source, version)
            tree = d + "/build"
            for old in (tree, d + "/lib.tmp"):
                shutil.rmtree(old, ignore_errors=True)
            os.makedirs(d + "/lib.tmp")
            cli.info("building %s from %s (log: %s)" % (lib, os.path.basename(dsc), log_path))
            build = Build(log)
            # -x applies Debian's patches (quilt format 3.0): the tree is what Debian compiled.
            if not build.run(["dpkg-source", "--no-check", "-x", dsc, tree]):
                cli.die("dpkg-source -x %s failed; log: %s" % (os.path.basename(dsc), log_path), status=1)
            cflags = build.library(lib, tree, d + "/lib.tmp")
        if cflags is None:
            with open(log_path, errors="replace") as f:
                sys.stderr.writelines(f.readlines()[-25:])
            cli.die("building %s failed; log: %s" % (lib, log_path), status=1)
        with open(log_path, "a") as log:
            facts = self.verify(lib, soname, d, log_path, log)

        shutil.rmtree(d + "/lib", ignore_errors=True)
        os.rename(d + "/lib.tmp", d + "/lib")
        seconds = int(time.monotonic() - started)
        with open(dsc, "rb") as f:
            dsc_sha256 = hashlib.sha256(f.read()).hexdigest()
        doc = {"library": lib, "source_package": source, "installed_debian_version": version,
               "built_debian_version": src_version, "debian_revision_mismatch": src_version != version,
               "library_version": facts["built_v"], "system_library_version": facts["system_v"],
               "system_library_file": facts["sysfile"], "cflags": cflags, "extra_cflags": EXTRA_CFLAGS,
               "exports_match_system": facts["exports_match"], "dsc_sha256": dsc_sha256,
               "compiler": stamp.compiler(), "build_seconds": seconds}
        if facts["features"]:
            doc["builtin_features"] = facts["features"].split(",")
            if facts["system_features"]:
                doc["system_builtin_features"] = facts["system_features"].split(",")
        stamp.write_doc(d + "/build.json", doc)
        shutil.rmtree(d + "/build", ignore_errors=True)
        cli.info("built %s %s (Debian %s) in %ds" % (lib, facts["built_v"], src_version, seconds))

    def verify(self, lib, soname, d, log_path, log):
        """Before publishing: the same library version as the system's, symbols and DWARF
        present; the facts build.json records."""
        so = "%s/lib.tmp/%s" % (d, soname)
        if not os.path.exists(so):
            cli.die("the build produced no %s; log: %s" % (soname, log_path), status=1)
        sysfile = system_file(lib)
        if not sysfile:
            cli.die("no system %s found to compare with" % soname, status=1)
        built_v = runtime_version(lib, so, log)
        if built_v is None:
            cli.die("the built %s does not load; log: %s" % (soname, log_path), status=1)
        system_v = runtime_version(lib, sysfile, log)
        if system_v is None:
            cli.die("cannot read the version of %s" % sysfile, status=1)
        if built_v != system_v:
            cli.die("%s: the build reports version '%s', the system library '%s'" % (lib, built_v, system_v),
                    status=1)
        real = os.path.realpath(so)
        readelf = subprocess.run(["readelf", "-S", "-W", real], stdout=subprocess.PIPE, text=True)
        if readelf.returncode != 0:
            sys.exit(readelf.returncode)  # its own message on stderr, as under bash's set -e
        sections = readelf.stdout
        if " .symtab " not in sections:
            cli.die("%s: the built library has no symbol table" % lib, status=1)
        if " .debug_info " not in sections:
            cli.die("%s: the built library has no DWARF (.debug_info)" % lib, status=1)
        # Same configuration as Debian's build: the same exported functions.
        exports_match = diff_exports(real, sysfile, d + "/exports.diff")
        if not exports_match:
            cli.info("warning: %s exports other functions than the system library (%s/exports.diff)" % (lib, d))
        features = system_features = ""
        if lib == "librdkafka":
            features = native.ask(["features", so]) or ""
            system_features = native.ask(["features", sysfile]) or ""
            for f in ("gzip", "snappy", "lz4", "zstd"):
                if f not in features.split(","):
                    cli.die("librdkafka was built without %s (builtin.features: %s)" % (f, features), status=1)
            if features != system_features:
                cli.info("warning: builtin.features differ from the system library's: built '%s', system "
                         "'%s' (install the missing build dependencies: scripts/setup --symbols)"
                         % (features, system_features))
        return {"sysfile": sysfile, "built_v": built_v, "system_v": system_v, "exports_match": exports_match,
                "features": features, "system_features": system_features}


def diff_exports(built, system, out):
    """Writes diff's report of the two libraries' exported names to OUT; True when they are
    the same."""
    with tempfile.TemporaryDirectory() as d:
        for name, path in (("built", built), ("system", system)):
            with open("%s/%s" % (d, name), "w") as f:
                f.writelines(n + "\n" for n in exported(path))
        with open(out, "w") as f:
            return subprocess.run(["diff", d + "/built", d + "/system"], stdout=f,
                                  stderr=subprocess.STDOUT).returncode == 0


class Build:
    """The shared library only, the way the package's rules build it, its output to LOG.
    Each recipe mirrors debian/rules of the bookworm package (DEB_BUILD_MAINT_OPTIONS, extra
    defines, optimisation level, configure options); Debian's own build of the package runs
    the programs and tests too, which profiles do not need."""

    def __init__(self, log):
        self.log = log
        try:
            self.jobs = subprocess.run(["nproc"], stdout=subprocess.PIPE, text=True).stdout.strip() or "2"
        except OSError:
            self.jobs = "2"

    def run(self, cmd, env=None, cwd=None):
        """One step; False when it fails."""
        self.log.flush()
        env = dict(os.environ, **env) if env else None
        try:
            return subprocess.run(cmd, env=env, cwd=cwd, stdout=self.log, stderr=subprocess.STDOUT).returncode == 0
        except OSError as e:
            print(e, file=self.log)
            return False

    def flags(self, tree, maint_options):
        """cflags, cxxflags, cppflags and ldflags as the package's rules see them. Run in the
        source tree, as Debian's build does: -ffile-prefix-map maps that tree to "."."""
        env = dict(os.environ, DEB_BUILD_MAINT_OPTIONS=maint_options, DEB_CFLAGS_MAINT_APPEND=EXTRA_CFLAGS,
                   DEB_CXXFLAGS_MAINT_APPEND=EXTRA_CFLAGS)
        self.log.flush()
        return [subprocess.run(["dpkg-buildflags", "--get", var], cwd=tree, env=env, text=True,
                               stdout=subprocess.PIPE, stderr=self.log).stdout.rstrip("\n")
                for var in ("CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS")]

    def stage(self, path, stage):
        """The real file under its own name, plus the SONAME link (what the loader looks
        for); build trees link into object directories that are deleted later."""
        real = os.path.realpath(path)
        if not os.path.isfile(real):
            print("no " + path, file=self.log)
            return False
        shutil.copy(real, stage)
        if os.path.basename(real) != os.path.basename(path):
            link = os.path.join(stage, os.path.basename(path))
            if os.path.lexists(link):
                os.remove(link)
            os.symlink(os.path.basename(real), link)
        return True

    def library(self, lib, src, stage):
        """Builds LIB's shared library from the tree SRC into STAGE; its CFLAGS, or None when
        a step fails."""
        j = "-j" + self.jobs
        if lib == "zstd":
            cflags, _, cppflags, ldflags = self.flags(src, "hardening=+all")
            # Flags through the environment, as dh passes them: the Makefile appends its own
            # (-fPIC, -DZSTD_MULTITHREAD, warnings), which command-line values would override.
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
                           dict(CFLAGS=cflags + " " + cppflags, CXXFLAGS=cxxflags + " " + cppflags,
                                LDFLAGS=ldflags))
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
            # debian/rules: plain dh (mklove's configure, features detected from the installed
            # build dependencies) with hardening=+bindnow.
            cflags, cxxflags, cppflags, ldflags = self.flags(src, "hardening=+bindnow")
            ok = (self.run(["./configure", "--prefix=/usr"],
                           dict(CFLAGS=cflags, CXXFLAGS=cxxflags, CPPFLAGS=cppflags, LDFLAGS=ldflags), cwd=src)
                  and self.run(["make", "-C", src + "/src", j, "librdkafka.so.1"])
                  and self.stage(src + "/src/librdkafka.so.1", stage))
        return cflags if ok else None


def list_libs(symbols):
    row = "%-11s %-12s %-28s %-28s %s"
    print(row % ("LIB", "SOURCE", "INSTALLED", "BUILT", "DIRECTORY"), flush=True)
    for lib in ALL_LIBS:
        inst = installed(lib)
        d = symbols.lib_dir(lib)
        built = "not built"
        if symbols.is_built(d):
            built = cli.read_json(d + "/build.json", status=1).get("built_debian_version", "")
        print(row % ((lib,) + source_version(inst) + (built, d or "-")), flush=True)


def parse(argv):
    """(command, libraries); -h/--help prints the usage and exits 0, bad usage exits 2."""
    if not argv:
        cli.bad_usage("a command is required: build, path or list", COMMAND)
    cmd, rest = argv[0], argv[1:]
    if cmd in ("-h", "--help", "help"):
        print(USAGE, end="")
        sys.exit(0)
    if cmd not in ("build", "path", "list"):
        cli.bad_usage("unknown command '%s' (build, path or list)" % cmd, COMMAND)
    for a in rest:
        if a in ("-h", "--help"):
            print(USAGE, end="")
            sys.exit(0)
        if a.startswith("-"):
            cli.bad_usage("unknown option '%s'" % a, COMMAND)
        if a not in ALL_LIBS:
            cli.bad_usage("unknown library '%s' (one of: %s)" % (a, " ".join(ALL_LIBS)), COMMAND)
    if cmd == "list" and rest:
        cli.bad_usage("list takes no arguments", COMMAND)
    return cmd, rest or ALL_LIBS


def main(argv):
    cli.prog = "symbols"
    cmd, libs = parse(argv)
    symbols = Symbols()
    if cmd == "list":
        list_libs(symbols)
        return 0
    if cmd == "path":
        for lib in libs:
            if not symbols.is_built(symbols.lib_dir(lib)):
                cli.info("%s is not built; run: scripts/symbols build %s" % (lib, lib))
                return 1
        print(symbols.ld_path(libs))
        return 0
    absent = [t for t in TOOLS if not shutil.which(t)]
    if absent:
        cli.die("missing tools: %s (scripts/setup --symbols installs them)" % " ".join(absent))
    os.makedirs(symbols.root, exist_ok=True)
    for lib in libs:
        symbols.build_one(lib)
    print(symbols.ld_path(libs))
    return 0


if __name__ == "__main__":
    cli.run(main)
