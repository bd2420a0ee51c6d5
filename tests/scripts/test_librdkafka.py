"""Tests of scripts/librdkafka: usage errors, the cache layout, and the whole build pipeline
run on a fake npm package (a tiny C library posing as librdkafka), so no registry and no
80-second build are needed; --tree on a fake librdkafka git repository (fake_librdkafka.py).
tests/kafka/librdkafka_build_test.sh builds a real release."""

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import unittest
from unittest import mock

import fake_librdkafka as fake

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCRIPT = os.path.join(ROOT, "scripts", "librdkafka")

# What scripts/librdkafka must know; each row was checked against the bundled rdkafka.h.
EXPECTED_SOURCES = {
    "2.0.2": "node-rdkafka@2.15.0",
    "2.12.0": "node-rdkafka@3.6.1",
    "2.15.1": "@confluentinc/kafka-javascript@1.10.1",
}

# A stand-in for `npm pack SPEC`: writes SPEC's tarball into --pack-destination, shaped like
# the real ones (package/deps/librdkafka/{configure,src/...}), with behaviour set by FAKE_*.
FAKE_NPM = r'''#!/usr/bin/python3
import io, os, sys, tarfile
with open(os.environ["FAKE_NPM_LOG"], "a") as log:
    log.write(" ".join(sys.argv[1:]) + "\n")
args = sys.argv[1:]
if os.environ.get("FAKE_FAIL") == "pack" or args[0] != "pack":
    sys.stderr.write("npm ERR! network request failed\n")
    sys.exit(1)
dest = args[args.index("--pack-destination") + 1]
spec = args[-1]
name = spec.rsplit("@", 1)[0].lstrip("@").replace("/", "-") + "-" + spec.rsplit("@", 1)[1]
runtime = os.environ["FAKE_RUNTIME"]
features = os.environ.get("FAKE_FEATURES", "gzip,snappy,ssl,sasl,regex,lz4,zstd")
make_fail = "exit 1" if os.environ.get("FAKE_FAIL") == "make" else "true"
files = {
    "configure": (@CONFIGURE@, 0o755),
    "src/rdkafka.h": ("#define RD_KAFKA_VERSION  %s\n" % os.environ["FAKE_HEADER"], 0o644),
    "src/fake.c": ('#include <stddef.h>\n#include <string.h>\n'
                   'const char *rd_kafka_version_str(void) { return "%s"; }\n'
                   'void *rd_kafka_conf_new(void) { static int c; return &c; }\n'
                   'void rd_kafka_conf_destroy(void *c) { (void)c; }\n'
                   'int rd_kafka_conf_get(const void *c, const char *n, char *d, size_t *s) {\n'
                   '  const char *f = "%s"; (void)c;\n'
                   '  if (strcmp(n, "builtin.features") || *s <= strlen(f)) return -1;\n'
                   '  strcpy(d, f); *s = strlen(f) + 1; return 0; }\n' % (runtime, features),
                   0o644),
    "src/Makefile": ("librdkafka.so.1: fake.c\n\t%s\n\t$(CC) -shared -fPIC -o $@ fake.c\n"
                     % make_fail, 0o644),
}
with tarfile.open(os.path.join(dest, name + ".tgz"), "w:gz") as tar:
    for path, (text, mode) in files.items():
        data = text.encode()
        info = tarfile.TarInfo("package/deps/librdkafka/" + path)
        info.size, info.mode = len(data), mode
        tar.addfile(info, io.BytesIO(data))
    info = tarfile.TarInfo("package/package.json")
    info.size = 2
    tar.addfile(info, io.BytesIO(b"{}"))
print(name + ".tgz")
'''


def system_has_librdkafka():
    try:
        import ctypes
        ctypes.CDLL("librdkafka.so.1")
        return True
    except OSError:
        return False


class LibrdkafkaScript(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kbench-lrk-test.")
        self.addCleanup(shutil.rmtree, self.tmp)
        self.cache = os.path.join(self.tmp, "cache")
        self.npm_log = os.path.join(self.tmp, "npm.log")
        self.env = dict(os.environ, KBENCH_CACHE=self.cache, FAKE_NPM_LOG=self.npm_log)
        self.env.pop("LD_LIBRARY_PATH", None)

    def run_script(self, *args, env=None, timeout=60):
        return subprocess.run([SCRIPT] + list(args), capture_output=True, text=True,
                              env=env or self.env, timeout=timeout)

    def assert_usage_error(self, *args, says=""):
        proc = self.run_script(*args)
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertEqual(proc.stdout, "")
        self.assertIn(says, proc.stderr)
        return proc

    def version_dir(self, version):
        return os.path.join(self.cache, "librdkafka", version)

    def fake_built(self, version):
        """The layout a finished build leaves: lib/librdkafka.so.1 and the build.json stamp."""
        d = self.version_dir(version)
        os.makedirs(os.path.join(d, "lib"))
        with open(os.path.join(d, "lib", "librdkafka.so.1"), "w") as f:
            f.write("not a real library")
        with open(os.path.join(d, "build.json"), "w") as f:
            json.dump({"librdkafka_version": version, "configure_with": ["WITH_LDS"]}, f)
        return os.path.join(d, "lib")

    # --- usage -----------------------------------------------------------------------------

    def test_help(self):
        proc = self.run_script("--help")
        self.assertEqual(proc.returncode, 0)
        for word in ("build", "path", "list", "LD_LIBRARY_PATH", "KBENCH_CACHE"):
            self.assertIn(word, proc.stdout)

    def test_bad_usage_exits_2(self):
        self.assert_usage_error(says="the following arguments are required: command")
        self.assert_usage_error("frobnicate", says="invalid choice: 'frobnicate'")
        self.assert_usage_error("build", says="build takes one VERSION")
        self.assert_usage_error("path", says="the following arguments are required: VERSION|REV")
        self.assert_usage_error("build", "2.15", says="must look like")
        self.assert_usage_error("build", "../../etc", says="must look like")
        self.assert_usage_error("build", "2.15.1", "2.12.0", says="build takes one VERSION")
        self.assert_usage_error("build", "--bogus", "2.15.1", says="unrecognized arguments: --bogus")
        self.assert_usage_error("list", "2.15.1", says="unrecognized arguments: 2.15.1")
        self.assert_usage_error("build", "--from-source", "system", says="--from-source")

    def test_unknown_version_lists_known_ones(self):
        proc = self.assert_usage_error("build", "9.9.9", says="unknown librdkafka version")
        for version in EXPECTED_SOURCES:
            self.assertIn(version, proc.stderr)
        self.assertFalse(os.path.exists(self.cache), "nothing may be created for a bad version")

    # --- list and path ---------------------------------------------------------------------

    def test_list_shows_sources_and_build_state(self):
        lib = self.fake_built("2.12.0")
        proc = self.run_script("list")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        rows = {line.split()[0]: line for line in proc.stdout.splitlines()[2:]}
        for version, spec in EXPECTED_SOURCES.items():
            self.assertIn(version, rows)
            self.assertEqual(rows[version].split()[1], spec)
        self.assertIn("built: " + lib, rows["2.12.0"])
        self.assertIn("not built", rows["2.15.1"])
        self.assertIn("system", rows)

    def test_path_of_unbuilt_version_exits_1(self):
        proc = self.run_script("path", "2.15.1")
        self.assertEqual(proc.returncode, 1)
        self.assertEqual(proc.stdout, "")
        self.assertIn("scripts/librdkafka build 2.15.1", proc.stderr)

    def test_path_of_built_version(self):
        lib = self.fake_built("2.15.1")
        proc = self.run_script("path", "2.15.1")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stdout, lib + "\n")

    def test_relative_cache_gives_an_absolute_dir(self):
        lib = self.fake_built("2.15.1")
        proc = subprocess.run([SCRIPT, "path", "2.15.1"], capture_output=True, text=True,
                              timeout=60, cwd=self.tmp, env=dict(self.env, KBENCH_CACHE="cache"))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stdout, lib + "\n")

    def test_half_built_entry_is_not_built(self):
        # lib/ without the stamp: an interrupted build must never be used.
        self.fake_built("2.15.1")
        os.unlink(os.path.join(self.version_dir("2.15.1"), "build.json"))
        self.assertEqual(self.run_script("path", "2.15.1").returncode, 1)

    @unittest.skipUnless(system_has_librdkafka(), "no system librdkafka.so.1")
    def test_system_means_no_library_path(self):
        for cmd in ("build", "path"):
            proc = self.run_script(cmd, "system")
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertEqual(proc.stdout, "", "system needs no LD_LIBRARY_PATH")

    # --- build, on a fake npm --------------------------------------------------------------

    def fake_npm_env(self, header="0x020f01ff", runtime="2.15.1", **extra):
        bindir = os.path.join(self.tmp, "bin")
        os.makedirs(bindir, exist_ok=True)
        npm = os.path.join(bindir, "npm")
        with open(npm, "w") as f:
            f.write(FAKE_NPM.replace("@CONFIGURE@", repr(fake.configure_script())))
        os.chmod(npm, 0o755)
        env = dict(self.env, PATH=bindir + os.pathsep + self.env["PATH"],
                   FAKE_HEADER=header, FAKE_RUNTIME=runtime)
        env.update(extra)
        return env

    def npm_calls(self):
        if not os.path.exists(self.npm_log):
            return []
        with open(self.npm_log) as f:
            return f.read().splitlines()

    def assert_nothing_published(self, version):
        d = self.version_dir(version)
        self.assertFalse(os.path.exists(os.path.join(d, "lib")))
        self.assertFalse(os.path.exists(os.path.join(d, "build.json")))
        self.assertEqual(self.run_script("path", version).returncode, 1)

    @unittest.skipUnless(shutil.which("cc") and shutil.which("make"), "needs cc and make")
    def test_build_pipeline_and_cache(self):
        env = self.fake_npm_env()
        proc = self.run_script("build", "2.15.1", env=env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        d = self.version_dir("2.15.1")
        self.assertEqual(proc.stdout, os.path.join(d, "lib") + "\n", "one stdout line: the dir")
        self.assertEqual(self.npm_calls(), [
            "pack --silent --pack-destination %s @confluentinc/kafka-javascript@1.10.1"
            % os.path.join(d, "pack.tmp")])

        self.assertTrue(os.path.isfile(os.path.join(d, "lib", "librdkafka.so.1")))
        self.assertEqual(os.readlink(os.path.join(d, "lib", "librdkafka.so")), "librdkafka.so.1")
        self.assertEqual(sorted(os.listdir(os.path.join(d, "lib"))),
                         ["librdkafka.so", "librdkafka.so.1"], "lib/ must hold librdkafka only")
        self.assertTrue(os.path.isfile(os.path.join(d, "include", "rdkafka.h")))
        self.assertFalse(os.path.exists(os.path.join(d, "build")), "build tree removed")
        self.assertFalse(os.path.exists(os.path.join(d, "pack.tmp")))

        with open(os.path.join(d, "build.json")) as f:
            stamp = json.load(f)
        tgz = os.path.join(d, stamp["tarball"])
        with open(tgz, "rb") as f:
            self.assertEqual(stamp["tarball_sha256"], hashlib.sha256(f.read()).hexdigest())
        self.assertEqual(stamp["librdkafka_version"], "2.15.1")
        self.assertEqual(stamp["npm_source"], "@confluentinc/kafka-javascript@1.10.1")
        for flag in ("--disable-gssapi", "--disable-curl", "--enable-zstd"):
            self.assertIn(flag, stamp["configure_flags"])
        self.assertNotIn("--install-deps", stamp["configure_flags"])
        self.assertIn("zstd", stamp["builtin_features"])

        # Cached: no npm, no rebuild, same answer.
        again = self.run_script("build", "2.15.1", env=env)
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertEqual(again.stdout, proc.stdout)
        self.assertEqual(len(self.npm_calls()), 1)
        self.assertEqual(self.run_script("path", "2.15.1").stdout, proc.stdout)

    @unittest.skipUnless(shutil.which("cc") and shutil.which("make"), "needs cc and make")
    def test_rebuild_reuses_the_tarball(self):
        env = self.fake_npm_env()
        self.assertEqual(self.run_script("build", "2.15.1", env=env).returncode, 0)
        d = self.version_dir("2.15.1")
        shutil.rmtree(os.path.join(d, "lib"))
        proc = self.run_script("build", "2.15.1", env=env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(len(self.npm_calls()), 1, "the cached tarball needs no registry")

    def test_bundled_version_mismatch_fails(self):
        # A wrong source-table row: the header says 2.14.0 where 2.15.1 was asked for.
        env = self.fake_npm_env(header="0x020e00ff")
        proc = self.run_script("build", "2.15.1", env=env)
        self.assertEqual(proc.returncode, 1)
        self.assertEqual(proc.stdout, "")
        self.assertIn("bundles librdkafka 2.14.0, not 2.15.1", proc.stderr)
        self.assert_nothing_published("2.15.1")

    def test_prerelease_header_is_not_the_release(self):
        env = self.fake_npm_env(header="0x020f0101")
        proc = self.run_script("build", "2.15.1", env=env)
        self.assertEqual(proc.returncode, 1)
        self.assertIn("2.15.1-pre1, not 2.15.1", proc.stderr)

    @unittest.skipUnless(shutil.which("cc") and shutil.which("make"), "needs cc and make")
    def test_runtime_version_mismatch_fails(self):
        env = self.fake_npm_env(runtime="2.15.0")
        proc = self.run_script("build", "2.15.1", env=env)
        self.assertEqual(proc.returncode, 1)
        self.assertIn("rd_kafka_version_str() = '2.15.0', not 2.15.1", proc.stderr)
        self.assert_nothing_published("2.15.1")

    @unittest.skipUnless(shutil.which("cc") and shutil.which("make"), "needs cc and make")
    def test_missing_codec_fails(self):
        env = self.fake_npm_env(FAKE_FEATURES="gzip,snappy,lz4")
        proc = self.run_script("build", "2.15.1", env=env)
        self.assertEqual(proc.returncode, 1)
        self.assertIn("without zstd", proc.stderr)
        self.assert_nothing_published("2.15.1")

    @unittest.skipUnless(shutil.which("cc") and shutil.which("make"), "needs cc and make")
    def test_a_release_that_lost_a_speed_feature_is_refused(self):
        env = self.fake_npm_env(FAKE_WITHOUT="LDS")
        proc = self.run_script("build", "2.15.1", env=env)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertIn("WITH_LDS=n", proc.stderr)
        self.assert_nothing_published("2.15.1")
        d = self.version_dir("2.15.1")
        left = [n for n in os.listdir(d) if not n.endswith(".tgz")]
        self.assertEqual(sorted(left), [".lock", "build.log"], "only the log and the tarball stay")

    def test_npm_failure_is_reported(self):
        env = self.fake_npm_env(FAKE_FAIL="pack")
        proc = self.run_script("build", "2.12.0", env=env)
        self.assertEqual(proc.returncode, 1)
        self.assertIn("npm pack node-rdkafka@3.6.1 failed", proc.stderr)
        self.assertIn("network request failed", proc.stderr, "npm's own words are shown")
        self.assert_nothing_published("2.12.0")

    def test_configure_and_make_failures_are_reported(self):
        for stage in ("configure", "make"):
            with self.subTest(stage=stage):
                # A fresh cache entry: the tarball is where the fake's failure is baked in.
                shutil.rmtree(self.version_dir("2.15.1"), ignore_errors=True)
                env = self.fake_npm_env(FAKE_FAIL=stage)
                proc = self.run_script("build", "2.15.1", env=env)
                self.assertEqual(proc.returncode, 1)
                self.assertIn("%s failed for 2.15.1" % stage, proc.stderr)
                self.assertIn("build.log", proc.stderr)
                self.assert_nothing_published("2.15.1")

    def test_no_npm_is_a_clear_error(self):
        # A PATH holding every tool of the system except npm.
        bindir = os.path.join(self.tmp, "nonpm")
        os.makedirs(bindir)
        for d in ("/usr/local/bin", "/usr/bin", "/bin"):
            if not os.path.isdir(d):
                continue
            for name in os.listdir(d):
                dst = os.path.join(bindir, name)
                if name not in ("npm", "npx") and not os.path.lexists(dst):
                    os.symlink(os.path.join(d, name), dst)
        proc = self.run_script("build", "2.15.1", env=dict(self.env, PATH=bindir))
        self.assertEqual(proc.returncode, 2)
        self.assertIn("npm not found", proc.stderr)
        self.assertIn("apt-get install npm", proc.stderr)


HAVE_BUILD_TOOLS = all(shutil.which(t) for t in ("git", "cc", "make"))


@unittest.skipUnless(HAVE_BUILD_TOOLS, "needs git, cc and make")
class TreeScriptCase(unittest.TestCase):
    """scripts/librdkafka run on fake trees, with the fake configure's calls counted."""

    TIMEOUT = 120

    def run_script(self, *args, **extra):
        return subprocess.run([SCRIPT] + list(args), capture_output=True, text=True,
                              env=dict(self.env, **extra), timeout=self.TIMEOUT)

    def configure_calls(self):
        if not os.path.exists(self.configure_log):
            return 0
        with open(self.configure_log) as f:
            return len(f.read().splitlines())

    def assert_usage_error(self, *args, says):
        proc = self.run_script(*args)
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertEqual(proc.stdout, "")
        self.assertIn(says, proc.stderr)

    def not_librdkafka(self):
        """(a plain folder, a git repository of something else) under the test's tmp."""
        plain = os.path.join(self.tmp, "plain")
        os.makedirs(plain)
        other = os.path.join(self.tmp, "other")
        os.makedirs(other)
        fake.git(other, "init", "-q")
        with open(os.path.join(other, "README"), "w") as f:
            f.write("not librdkafka\n")
        fake.git(other, "add", "README")
        fake.git(other, "commit", "-qm", "readme")
        return plain, other


class LibrdkafkaTree(TreeScriptCase):
    """build --tree DIR REV: a commit of a local librdkafka git repository."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kbench-lrk-tree-test.")
        self.addCleanup(shutil.rmtree, self.tmp)
        self.cache = os.path.join(self.tmp, "cache")
        self.configure_log = os.path.join(self.tmp, "configure.log")
        self.env = dict(os.environ, KBENCH_CACHE=self.cache,
                        FAKE_CONFIGURE_LOG=self.configure_log)
        self.env.pop("LD_LIBRARY_PATH", None)
        self.env.pop("FAKE_FAIL", None)
        self.repo = os.path.join(self.tmp, "rdk")
        self.c1 = fake.make_repo(self.repo)
        fake.git(self.repo, "tag", "v2.15.1")
        self.c2 = fake.commit_change(self.repo, "a change on the send path")


    def test_bad_trees_and_revs_are_usage_errors(self):
        plain, other = self.not_librdkafka()
        self.assert_usage_error("build", "--tree", says="--tree: expected one argument")
        self.assert_usage_error("build", "--tree", self.repo, says="needs a REV")
        self.assert_usage_error("build", "--tree", self.repo, "--from-source", "HEAD",
                                says="--from-source is for releases")
        self.assert_usage_error("build", "--tree", os.path.join(self.tmp, "none"), "HEAD",
                                says="is not a directory")
        self.assert_usage_error("build", "--tree", plain, "HEAD",
                                says="is not inside a git repository")
        self.assert_usage_error("build", "--tree", self.repo, "no-such-branch",
                                says="'no-such-branch' is not a commit in")
        self.assert_usage_error("path", "--tree", self.repo, "no-such-branch",
                                says="is not a commit")
        self.assert_usage_error("build", "--tree", other, "HEAD",
                                says="is not a librdkafka source tree (no configure")
        self.assertFalse(os.path.exists(self.cache), "nothing may be created for bad input")

    def test_two_commits_build_once_each_and_leave_the_checkout_alone(self):
        # Uncommitted work in the checkout: never built, never touched.
        with open(os.path.join(self.repo, "src", "fake.c"), "a") as f:
            f.write("#error the working tree must not be built\n")
        status = fake.git(self.repo, "status", "--porcelain")

        proc = self.run_script("build", "--tree", self.repo, "v2.15.1")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        lib1 = proc.stdout.strip()
        self.assertEqual(proc.stdout, lib1 + "\n", "one stdout line: the dir")
        entry = os.path.dirname(lib1)
        self.assertEqual(os.path.dirname(entry), os.path.join(self.cache, "librdkafka", "tree"))
        self.assertTrue(os.path.basename(entry).startswith(self.c1 + "-"),
                        "cached by the full sha (and the flags)")
        self.assertTrue(os.path.isfile(os.path.join(lib1, "librdkafka.so.1")))
        self.assertTrue(os.path.isfile(os.path.join(entry, "include", "rdkafka.h")))
        self.assertFalse(os.path.exists(os.path.join(entry, "build")), "build tree removed")
        with open(os.path.join(entry, "build.json")) as f:
            stamp = json.load(f)
        self.assertEqual(stamp["source"], "tree:%s@%s" % (os.path.realpath(self.repo), self.c1))
        self.assertEqual(stamp["commit"], self.c1)
        self.assertEqual(stamp["describe"], "v2.15.1")
        self.assertEqual(stamp["librdkafka_version"], "2.15.1")
        # The same configure flags as a release.
        for flag in ("--disable-gssapi", "--disable-curl", "--enable-zstd"):
            self.assertIn(flag, stamp["configure_flags"])
        self.assertNotIn("--install-deps", stamp["configure_flags"])
        self.assertIn("zstd", stamp["builtin_features"])
        self.assertEqual(self.configure_calls(), 1)

        # Cached: the same answer without configuring again, by another spelling of the rev.
        again = self.run_script("build", "--tree", self.repo, self.c1[:10])
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertEqual(again.stdout, proc.stdout)
        self.assertEqual(self.configure_calls(), 1)
        self.assertEqual(self.run_script("path", "--tree", self.repo, "v2.15.1").stdout,
                         proc.stdout)

        # The other commit: not built yet, then its own entry.
        self.assertEqual(self.run_script("path", "--tree", self.repo, "HEAD").returncode, 1)
        proc2 = self.run_script("build", "--tree", self.repo, "HEAD")
        self.assertEqual(proc2.returncode, 0, proc2.stderr)
        self.assertTrue(os.path.basename(os.path.dirname(proc2.stdout.strip()))
                        .startswith(self.c2 + "-"))
        self.assertNotEqual(proc2.stdout, proc.stdout)
        self.assertEqual(self.configure_calls(), 2)

        self.assertEqual(fake.git(self.repo, "status", "--porcelain"), status)
        self.assertEqual(fake.git(self.repo, "rev-parse", "HEAD"), self.c2)
        self.assertEqual(sorted(os.listdir(os.path.join(self.repo, "src"))),
                         ["Makefile", "fake.c", "rdkafka.h"], "nothing built in the checkout")

        listing = self.run_script("list")
        self.assertEqual(listing.returncode, 0, listing.stderr)
        self.assertIn("built: " + lib1, listing.stdout)
        self.assertIn(self.c2, listing.stdout)

    def test_tree_in_a_subdirectory(self):
        # librdkafka vendored inside a bigger repository, as npm packages bundle it.
        mono = os.path.join(self.tmp, "mono")
        sha = fake.make_repo(mono, subdir=os.path.join("deps", "librdkafka"))
        proc = self.run_script("build", "--tree", os.path.join(mono, "deps", "librdkafka"),
                               "HEAD")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(os.path.join(os.path.dirname(proc.stdout.strip()), "build.json")) as f:
            self.assertEqual(json.load(f)["source"], "tree:%s/deps/librdkafka@%s"
                             % (os.path.realpath(mono), sha))

    def test_failed_builds_exit_1_and_publish_nothing(self):
        for stage in ("configure", "make"):
            with self.subTest(stage=stage):
                proc = self.run_script("build", "--tree", self.repo, "HEAD", FAKE_FAIL=stage)
                self.assertEqual(proc.returncode, 1, proc.stderr)
                self.assertEqual(proc.stdout, "")
                self.assertIn("%s failed for 2.15.1" % stage, proc.stderr)
                self.assertIn("build.log", proc.stderr)
                self.assertEqual(self.run_script("path", "--tree", self.repo, "HEAD").returncode,
                                 1)
        # A commit whose library is not the release its header names.
        bad = fake.commit_change(self.repo, "half-bumped version", runtime="2.15.0")
        proc = self.run_script("build", "--tree", self.repo, bad)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertIn("rd_kafka_version_str() = '2.15.0', not 2.15.1", proc.stderr)
        # A pre-release header is spelled as librdkafka spells it.
        rc = fake.commit_change(self.repo, "release candidate", header="0x020f01c9",
                                runtime="2.15.1-RC1")
        proc = self.run_script("build", "--tree", self.repo, rc)
        self.assertEqual(proc.returncode, 0, proc.stderr)

    # --- what configure turned off --------------------------------------------------------

    def entries(self):
        trees = os.path.join(self.cache, "librdkafka", "tree")
        return {name: sorted(os.listdir(os.path.join(trees, name)))
                for name in (os.listdir(trees) if os.path.isdir(trees) else [])}

    def test_a_build_that_lost_a_speed_feature_is_refused(self):
        # configure succeeds with these off; each changes the speed measured, so the build
        # stops there (exit 1) and leaves no half-built entry.
        says = {"LDS": "python-is-python3", "SSL": "OpenSSL", "ZSTD": "zstd",
                "LZ4_EXT": "liblz4", "CRC32C_HW": "SSE4.2"}
        for feature, why in says.items():
            with self.subTest(feature=feature):
                proc = self.run_script("build", "--tree", self.repo, "HEAD", FAKE_WITHOUT=feature)
                self.assertEqual(proc.returncode, 1, proc.stderr)
                self.assertEqual(proc.stdout, "")
                self.assertIn("refused", proc.stderr)
                self.assertIn("WITH_%s=n" % feature, proc.stderr)
                self.assertIn(why, proc.stderr)
                self.assertIn("build.log", proc.stderr)
                for name, files in self.entries().items():
                    self.assertEqual(files, [".lock", "build.log"], "left in %s" % name)
                self.assertEqual(self.run_script("path", "--tree", self.repo, "HEAD").returncode, 1)
        # Two at once: both named.
        proc = self.run_script("build", "--tree", self.repo, "HEAD", FAKE_WITHOUT="LDS SSL")
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertIn("WITH_LDS=n", proc.stderr)
        self.assertIn("WITH_SSL=n", proc.stderr)
        self.assertEqual(self.configure_calls(), 6)

    def test_configure_results_are_kept_with_the_build(self):
        proc = self.run_script("build", "--tree", self.repo, "HEAD")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        entry = os.path.dirname(proc.stdout.strip())
        for name in ("Makefile.config", "config.h"):
            self.assertTrue(os.path.isfile(os.path.join(entry, "configure", name)), name)
        stamp = self.stamp_of(proc)
        for name in ("WITH_LDS", "WITH_SSL", "WITH_ZSTD", "WITH_LZ4_EXT", "WITH_CRC32C_HW"):
            self.assertIn(name, stamp["configure_with"])
        self.assertEqual(stamp["configure_without"], [])

    def test_an_entry_stamped_before_the_checks_is_built_again(self):
        # As the tool left it before it read configure's results: maybe without the linker script.
        proc = self.run_script("build", "--tree", self.repo, "HEAD")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        path = os.path.join(os.path.dirname(proc.stdout.strip()), "build.json")
        with open(path) as f:
            old = {k: v for k, v in json.load(f).items() if not k.startswith("configure_with")}
        with open(path, "w") as f:
            json.dump(old, f)
        self.assertEqual(self.run_script("path", "--tree", self.repo, "HEAD").returncode, 1)
        again = self.run_script("build", "--tree", self.repo, "HEAD")
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertIn("building it again", again.stderr)
        self.assertEqual(again.stdout, proc.stdout)
        self.assertEqual(self.configure_calls(), 2)
        self.assertIn("WITH_LDS", self.stamp_of(again)["configure_with"])

    def test_configure_without_results_is_refused(self):
        proc = self.run_script("build", "--tree", self.repo, "HEAD", FAKE_NO_CONFIG="1")
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertIn("wrote no Makefile.config", proc.stderr)
        for name, files in self.entries().items():
            self.assertEqual(files, [".lock", "build.log"], "left in %s" % name)

    # --- bare repositories, old commits --------------------------------------------------

    def stamp_of(self, proc):
        with open(os.path.join(os.path.dirname(proc.stdout.strip()), "build.json")) as f:
            return json.load(f)

    def test_bare_repository_and_git_dir(self):
        # A mirror has no work tree: the commits are read from its objects alone.
        bare = os.path.join(self.tmp, "rdk.git")
        subprocess.run(["git", "clone", "-q", "--mirror", self.repo, bare], check=True)
        proc = self.run_script("build", "--tree", bare, "v2.15.1")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        stamp = self.stamp_of(proc)
        self.assertEqual(stamp["source"], "tree:%s@%s" % (os.path.realpath(bare), self.c1))
        self.assertEqual(stamp["describe"], "v2.15.1")
        self.assertEqual(self.run_script("path", "--tree", bare, "v2.15.1").stdout, proc.stdout)
        self.assert_usage_error("build", "--tree", bare, "no-such-branch",
                                says="'no-such-branch' is not a commit in")
        # The .git directory of a checkout is a repository too.
        proc = self.run_script("build", "--tree", os.path.join(self.repo, ".git"), "HEAD")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(self.stamp_of(proc)["commit"], self.c2)

    def test_configure_options_are_those_the_commit_knows(self):
        # As v1.7.0/v1.8.2: no --disable-curl; as v1.0.0: no --enable-zlib/--enable-zstd either.
        # Their configure rejects an option it does not know.
        for options, unknown in ((fake.OPTIONS_1_7, ["--disable-curl"]),
                                 (fake.OPTIONS_1_0, ["--disable-curl", "--enable-zlib",
                                                     "--enable-zstd"])):
            with self.subTest(unknown=unknown):
                sha = fake.commit_change(self.repo, "older configure %d" % len(options),
                                         options=options)
                proc = self.run_script("build", "--tree", self.repo, sha)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                stamp = self.stamp_of(proc)
                self.assertEqual(stamp["configure_flags_unknown"], unknown)
                for flag in unknown:
                    self.assertNotIn(flag, stamp["configure_flags"])
                for flag in ("--disable-gssapi", "--enable-lz4-ext"):
                    self.assertIn(flag, stamp["configure_flags"])
                self.assertIn("has no %s: left out" % " ".join(unknown), proc.stderr)
                with open(self.configure_log) as f:
                    self.assertEqual(f.read().splitlines()[-1], " ".join(stamp["configure_flags"]))
        # A configure that lists no option at all: nothing to go by, a clear failure.
        sha = fake.commit_change(self.repo, "no options", options=())
        proc = self.run_script("build", "--tree", self.repo, sha)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertIn("lists no --enable/--disable option", proc.stderr)

    def test_commits_before_1_0_0_are_refused(self):
        sha = fake.commit_change(self.repo, "0.11.6", header="0x000b06ff", runtime="0.11.6")
        for cmd in ("build", "path"):
            proc = self.run_script(cmd, "--tree", self.repo, sha)
            self.assertEqual(proc.returncode, 2, proc.stderr)
            self.assertIn("librdkafka 0.11.6, older than 1.0.0", proc.stderr)
            self.assertIn("no zstd", proc.stderr)
        self.assertEqual(self.configure_calls(), 0)


@unittest.skipUnless(HAVE_BUILD_TOOLS, "needs git, cc and make")
class LibrdkafkaReleases(TreeScriptCase):
    """releases --tree DIR, and build --tree DIR with several REVs or --releases, on a fake
    repository shaped like librdkafka's history (fake_librdkafka.make_release_repo)."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kbench-lrk-rel-test.")
        self.addCleanup(shutil.rmtree, self.tmp)
        self.cache = os.path.join(self.tmp, "cache")
        self.configure_log = os.path.join(self.tmp, "configure.log")
        self.env = dict(os.environ, KBENCH_CACHE=self.cache,
                        FAKE_CONFIGURE_LOG=self.configure_log)
        for name in ("LD_LIBRARY_PATH", "FAKE_FAIL", "FAKE_WITHOUT", "FAKE_NO_CONFIG"):
            self.env.pop(name, None)
        self.repo = os.path.join(self.tmp, "rdk")
        self.tags = fake.make_release_repo(self.repo)

    def assert_usage_error(self, *args, says):
        super().assert_usage_error(*args, says=says)
        self.assertFalse(os.path.exists(self.cache), "nothing may be created for bad input")

    def listing(self):
        proc = self.run_script("releases", "--tree", self.repo)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        lines = proc.stdout.splitlines()
        self.assertEqual(lines[0].split(), ["RELEASE", "COMMIT", "PARENT", "BUILT", "NOTES"])
        rows = {}
        for line in lines[2:]:  # under the header and its rule
            tag, commit, parent, built, *notes = line.split(None, 4)
            rows[tag] = {"commit": commit, "parent": parent, "built": built,
                         "notes": notes[0] if notes else ""}
        return list(rows), rows

    def test_releases_lists_final_releases_with_their_branch_parent(self):
        order, rows = self.listing()
        # Version order; no -RC tag, nothing before 1.0.0.
        self.assertEqual(order, ["v1.0.0", "v1.0.1", "v1.1.0", "v2.6.1", "v2.7.0", "v2.8.0",
                                 "v2.8.1"])
        for tag, row in rows.items():
            self.assertEqual(row["commit"], self.tags[tag][:12])
            self.assertEqual(row["built"], "no")
        parents = {tag: row["parent"] for tag, row in rows.items()}
        # v1.1.0 follows v1.0.0, not the maintenance release v1.0.1; v2.8.0 follows v2.6.1.
        self.assertEqual(parents, {"v1.0.0": "v0.11.6", "v1.0.1": "v1.0.0", "v1.1.0": "v1.0.0",
                                   "v2.6.1": "v1.1.0", "v2.7.0": "v2.6.1", "v2.8.0": "v2.6.1",
                                   "v2.8.1": "v2.8.0"})
        self.assertIn("= v2.6.1", rows["v2.7.0"]["notes"])
        self.assertIn("never released", rows["v2.7.0"]["notes"])
        self.assertIn("maintenance branch: not in v1.1.0's history", rows["v1.0.1"]["notes"])
        for tag in ("v1.0.0", "v1.0.1"):
            self.assertIn("`python`", rows[tag]["notes"])
        for tag in ("v1.1.0", "v2.6.1", "v2.8.0"):
            self.assertEqual(rows[tag]["notes"], "")
        self.assertIn("rdkafka.h says 2.8.0", rows["v2.8.1"]["notes"])

        # Built: v2.7.0 is v2.6.1's build.
        self.assertEqual(self.run_script("build", "--tree", self.repo, "v2.6.1").returncode, 0)
        _, rows = self.listing()
        self.assertEqual([t for t, row in rows.items() if row["built"] == "yes"], ["v2.6.1", "v2.7.0"])

    def test_releases_of_what_is_not_librdkafka_exit_2(self):
        plain, other = self.not_librdkafka()
        self.assert_usage_error("releases", "--tree", other, says="not a librdkafka repository")
        self.assert_usage_error("build", "--tree", other, "--releases", "all",
                                says="not a librdkafka repository")
        # Release tags, but not on librdkafka's sources.
        fake.git(other, "tag", "v1.2.3")
        self.assert_usage_error("releases", "--tree", other, says="not a librdkafka source tree")
        self.assert_usage_error("releases", "--tree", plain, says="not inside a git repository")
        self.assert_usage_error("releases", says="the following arguments are required: --tree")
        self.assert_usage_error("releases", "--tree", self.repo, "v1.0.0", says="unrecognized arguments: v1.0.0")

    def test_several_revs_build_once_each_a_line_each(self):
        proc = self.run_script("build", "--tree", self.repo, "v2.8.0", "v1.0.0", "v2.7.0",
                               "v2.6.1")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        lines = proc.stdout.splitlines()
        self.assertEqual(len(lines), 4, "a line per REV, in their order")
        for line, tag in zip(lines, ("v2.8.0", "v1.0.0", "v2.7.0", "v2.6.1")):
            self.assertIn("/tree/%s-" % self.tags[tag], line)
        self.assertEqual(lines[2], lines[3], "v2.7.0 is v2.6.1's commit: one build")
        self.assertEqual(self.configure_calls(), 3)
        self.assertIn("4 revisions: 3 built now, 1 already built, 0 failed", proc.stderr)
        # Cached: the same lines, nothing configured.
        again = self.run_script("build", "--tree", self.repo, "v2.8.0", "v1.0.0", "v2.7.0",
                                "v2.6.1")
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertEqual(again.stdout, proc.stdout)
        self.assertEqual(self.configure_calls(), 3)

    def test_releases_range(self):
        proc = self.run_script("build", "--tree", self.repo, "--releases", "v1.0.1..2.7.0")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        lines = proc.stdout.splitlines()
        for line, tag in zip(lines, ("v1.0.1", "v1.1.0", "v2.6.1", "v2.7.0"), strict=True):
            self.assertIn("/tree/%s-" % self.tags[tag], line)
        self.assertEqual(self.configure_calls(), 3)
        # Open ends; 'all'.
        proc = self.run_script("build", "--tree", self.repo, "--releases", "..v1.0.1")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(len(proc.stdout.splitlines()), 2)
        self.assertEqual(self.configure_calls(), 4)
        proc = self.run_script("build", "--tree", self.repo, "--releases=all")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(len(proc.stdout.splitlines()), 7)
        self.assertEqual(self.configure_calls(), 6)
        self.assertEqual(proc.stdout, self.run_script("build", "--tree", self.repo, "--releases",
                                                      "..").stdout)
        _, rows = self.listing()
        self.assertEqual({row["built"] for row in rows.values()}, {"yes"})

    def test_bad_revs_and_ranges_build_nothing(self):
        self.assert_usage_error("build", "--tree", self.repo, "v1.0.0", "v9.9.9",
                                says="'v9.9.9' is not a commit in")
        self.assert_usage_error("build", "--tree", self.repo, "v9.9.9",
                                says="scripts/librdkafka releases --tree")
        self.assert_usage_error("build", "--tree", self.repo, "--releases", "v1.0.0",
                                says="FROM..TO")
        self.assert_usage_error("build", "--tree", self.repo, "--releases", "v1.0.0..v9.9.9",
                                says="'v9.9.9' is not a final release")
        self.assert_usage_error("build", "--tree", self.repo, "--releases", "v1.1.0-RC1..",
                                says="'v1.1.0-RC1' is not a final release")
        self.assert_usage_error("build", "--tree", self.repo, "--releases", "v0.11.6..",
                                says="'v0.11.6' is not a final release")
        self.assert_usage_error("build", "--tree", self.repo, "--releases", "v2.8.0..v1.0.0",
                                says="holds no release")
        self.assert_usage_error("build", "--tree", self.repo, "v1.0.0", "--releases", "all",
                                says="not both")
        self.assert_usage_error("build", "--tree", self.repo, "--releases", says="expected one argument")
        self.assert_usage_error("build", "2.15.1", "--releases", "all",
                                says="--releases is for build --tree")
        self.assert_usage_error("path", "--tree", self.repo, "v1.0.0", "v1.1.0",
                                says="unrecognized arguments: v1.1.0")
        # A commit before 1.0.0 among several: refused before the others are built.
        proc = self.run_script("build", "--tree", self.repo, "v1.0.0", "v0.11.6")
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertIn("older than 1.0.0", proc.stderr)
        self.assertEqual(self.configure_calls(), 0)

    def test_dry_run_checks_and_builds_nothing(self):
        # tests/scripts/test_docs_commands.py checks the documented commands so.
        for args in (["build", "--tree", self.repo, "v1.0.0", "v2.8.0"],
                     ["build", "--tree", self.repo, "--releases", "all"],
                     ["releases", "--tree", self.repo]):
            with self.subTest(args=args):
                proc = self.run_script(*args, KBENCH_DRY_RUN="1")
                self.assertEqual(proc.returncode, 0, proc.stderr)
                self.assertEqual(proc.stdout, "")
                self.assertIn("dry run", proc.stderr)
        proc = self.run_script("build", "--tree", self.repo, "v9.9.9", KBENCH_DRY_RUN="1")
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertFalse(os.path.exists(self.cache))
        self.assertEqual(self.configure_calls(), 0)

    def test_a_failed_build_does_not_stop_the_others(self):
        bad = fake.commit_change(self.repo, "half-bumped", header=fake.header_of("2.9.0"),
                                 runtime="2.8.0")
        proc = self.run_script("build", "--tree", self.repo, bad, "v1.0.0")
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertEqual(len(proc.stdout.splitlines()), 1)
        self.assertIn("/tree/%s-" % self.tags["v1.0.0"], proc.stdout)
        self.assertIn("rd_kafka_version_str() = '2.8.0', not 2.9.0", proc.stderr)
        self.assertIn("1 failed", proc.stderr)
        self.assertIn("not built: " + bad, proc.stderr)
        # A refused one too; nothing of it is left.
        proc = self.run_script("build", "--tree", self.repo, "v1.1.0", "v1.0.1", FAKE_WITHOUT="LDS")
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertEqual(proc.stdout, "")
        self.assertIn("not built: v1.1.0 v1.0.1", proc.stderr)
        self.assertEqual(self.run_script("path", "--tree", self.repo, "v1.1.0").returncode, 1)


@unittest.skipUnless(HAVE_BUILD_TOOLS, "needs git, cc and make")
class LibrdkafkaFunctions(unittest.TestCase):
    """What other commands call: build, build_tree, path_tree and BuildError, in-process."""

    def setUp(self):
        from kbench.commands import librdkafka
        self.lrk = librdkafka
        self.tmp = tempfile.mkdtemp(prefix="kbench-lrk-api-test.")
        self.addCleanup(shutil.rmtree, self.tmp)
        env = mock.patch.dict(os.environ, KBENCH_CACHE=os.path.join(self.tmp, "cache"))
        env.start()
        self.addCleanup(env.stop)
        for name in ("FAKE_FAIL", "FAKE_WITHOUT", "FAKE_NO_CONFIG"):
            os.environ.pop(name, None)
        self.repo = os.path.join(self.tmp, "rdk")
        self.sha = fake.make_repo(self.repo)

    def test_tree_functions(self):
        self.assertIsNone(self.lrk.path_tree(self.repo, "HEAD"))
        lib = self.lrk.build_tree(self.repo, "HEAD")
        self.assertIn("/librdkafka/tree/%s-" % self.sha, lib)
        self.assertTrue(os.path.isfile(os.path.join(lib, "librdkafka.so.1")))
        self.assertEqual(self.lrk.path_tree(self.repo, self.sha[:10]), lib)
        with self.assertRaises(self.lrk.BuildError) as bad:
            self.lrk.build_tree(self.repo, "no-such-branch")
        self.assertEqual(bad.exception.status, 2)
        with mock.patch.dict(os.environ, FAKE_FAIL="make"):
            bad_sha = fake.commit_change(self.repo, "another")
            with self.assertRaises(self.lrk.BuildError) as failed:
                self.lrk.build_tree(self.repo, bad_sha)
        self.assertEqual(failed.exception.status, 1)
        self.assertIn("make failed", str(failed.exception))

    def test_release_functions(self):
        with self.assertRaises(self.lrk.BuildError) as bad:
            self.lrk.build("9.9.9")
        self.assertEqual(bad.exception.status, 2)
        if system_has_librdkafka():
            self.assertEqual(self.lrk.build("system"), "")


if __name__ == "__main__":
    unittest.main()
