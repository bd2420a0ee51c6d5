"""Install everything kbench needs: Debian's packages, and the PyPI packages of
scripts/requirements.txt into a venv (the one scripts/lib/python runs). Does nothing when all
is present. Debian's python3 runs this command, as the venv does not exist before it.

exit status: 0 all present or installed, 1 an install failed (or, with --check, something is
missing), 2 bad usage.
"""

import hashlib
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

from kbench import ROOT, build_stamp, cli, proc

# Libraries: Google Benchmark 1.7.1, GoogleTest, librdkafka 2.0.2, nlohmann-json, simdjson
# (librdkafka's statistics). Tests: clang and its sanitizer/fuzzer runtime. Scripts: python3
# with scipy/statsmodels/matplotlib (compare, plot), valgrind and linux-perf (instruction
# counts, profiles), Java + Maven (Apache Kafka and Trogdor from Maven Central, golden
# batches), iproute2 (Trogdor agents in network namespaces), chromium (the history pages'
# test), python3-yaml (docs/ci-workflow.yml's test), python3-tabulate (the scripts' tables),
# openssl (scripts/kafka --security), linux-doc (the text corpus of scenario compression-cost),
# ccache (scripts/librdkafka build --tree: a bisect's neighbouring commits build fast),
# python-is-python3 (librdkafka's configure before 1.4.2 runs lds-gen.py as `python` and,
# finding none, turns the linker script off). Lint: shellcheck, clang-format and clang-tidy
# (Debian's 14); ruff comes from PyPI (Debian 12's is too old for our rules).
PACKAGES = """
    build-essential cmake ninja-build pkg-config git ca-certificates procps file openssl
    libbenchmark-dev libbenchmark-tools libgtest-dev
    librdkafka-dev nlohmann-json3-dev libsimdjson-dev
    libxxhash-dev libisal-dev libssl-dev
    clang libclang-rt-14-dev llvm
    python3 python3-venv python-is-python3 python3-scipy python3-statsmodels python3-matplotlib
    python3-numpy python3-yaml python3-tabulate
    valgrind linux-perf graphviz shellcheck iproute2 chromium clang-format clang-tidy
    openjdk-17-jdk-headless maven linux-doc ccache
""".split()

# scripts/symbols: dpkg-source and dpkg-buildflags, and librdkafka's build dependencies beyond
# the codecs (SASL: Debian's librdkafka is built with GSSAPI, so builtin.features match only with it).
SYMBOL_PACKAGES = ["dpkg-dev", "libsasl2-dev"]

REQUIREMENTS = os.path.join(ROOT, "scripts", "requirements.txt")


def add_arguments(parser):
    parser.add_argument("--kafka", action="store_true",
                        help="also resolve the default Apache Kafka release from Maven Central (cached)")
    parser.add_argument("--symbols", action="store_true",
                        help="also the symbol builds of scripts/symbols (minutes once, cached)")
    parser.add_argument("--check", action="store_true", help="only report what is missing; exit 1 if anything is")


def logged(name, cmd):
    """Run CMD with its output in a log; a failure shows the log's tail and where it is."""
    fd, log = tempfile.mkstemp(prefix="kbench-setup-%s." % name, suffix=".log")
    with os.fdopen(fd, "w") as out:
        if subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT).returncode == 0:
            return True
    print(proc.tail(log, 20), file=sys.stderr)
    cli.info("full log: %s" % log)
    return False


def codec_packages():
    """The Debian package of each kbench_codec() line of harness/codecs/CMakeLists.txt (written
    there once, beside the codec's build)."""
    with open(os.path.join(ROOT, "harness", "codecs", "CMakeLists.txt")) as f:
        found = re.findall(r"^kbench_codec\(.* DEBIAN ([^ )]+)", f.read(), re.M)
    if not found:
        cli.die("no codec packages found in harness/codecs/CMakeLists.txt", status=1)
    return found


def missing_packages(packages):
    installed = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${Status}\\n"] + packages,
                               capture_output=True, text=True).stdout
    present = {line.split()[0] for line in installed.splitlines() if line.endswith("install ok installed")}
    # npm (scripts/librdkafka fetches librdkafka's sources from npm packages): any npm will do;
    # some machines have it from a nodejs package that conflicts with Debian's npm.
    return ([] if shutil.which("npm") else ["npm"]) + [p for p in packages if p not in present]


def install_debian(packages, check):
    missing = missing_packages(packages)
    if not missing or check:
        cli.info("missing Debian packages: %s" % " ".join(missing) if missing else
                 "all %d Debian packages present" % len(packages))
        return not missing
    cli.info("installing %d Debian package(s): %s" % (len(missing), " ".join(missing)))
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    if sudo and not shutil.which("sudo"):
        cli.info("need root (or sudo) to install: %s" % " ".join(missing))
        return False
    os.environ["DEBIAN_FRONTEND"] = "noninteractive"
    if subprocess.run(sudo + ["apt-get", "update", "-qq"]).returncode != 0:
        cli.info("'apt-get update' failed: is Debian's package mirror reachable?")
        return False
    if not logged("apt", sudo + ["apt-get", "install", "-y", "-qq", "--no-install-recommends"] + missing):
        cli.info("apt-get install failed for: %s" % " ".join(missing))
        return False
    cli.info("installed %s" % " ".join(missing))
    return True


def requirements_digest():
    return hashlib.sha256(pathlib.Path(REQUIREMENTS).read_bytes()).hexdigest()


def venv_dir():
    """One venv per requirements file (scripts/lib/venv.sh names it by the same rule)."""
    return os.environ.get("KBENCH_VENV") or build_stamp.cache_dir("venv-" + requirements_digest()[:12])


def install_venv(check):
    """PyPI packages, pinned, into a venv on top of Debian's python3 (so scipy and numpy stay
    Debian's). A stamp holds the requirements' hash: nothing runs when it matches."""
    want, venv = requirements_digest(), venv_dir()
    stamp, python = os.path.join(venv, ".kbench-stamp"), os.path.join(venv, "bin", "python3")
    try:
        current = pathlib.Path(stamp).read_text().strip() == want and os.access(python, os.X_OK)
    except OSError:
        current = False
    if current or check:
        cli.info(("Python venv up to date (%s)" if current else "Python venv missing or stale: %s") % venv)
        return current
    cli.info("installing scripts/requirements.txt into %s" % venv)
    if not (logged("venv", [sys.executable, "-m", "venv", "--system-site-packages", venv])
            and logged("pip", [python, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                               "-r", REQUIREMENTS])):
        cli.info("could not install the PyPI packages: is PyPI reachable?")
        return False
    pathlib.Path(stamp).write_text(want + "\n")
    cli.info("Python venv ready")
    return True


def main(args):
    packages = PACKAGES + codec_packages() + (SYMBOL_PACKAGES if args.symbols else [])
    if not (install_debian(packages, args.check) and install_venv(args.check)):
        return 1
    if args.check:
        return 0
    # Imported here: they need the Debian packages just installed.
    from kbench import jvm_service, kafka_cluster
    from kbench.commands import symbols
    try:
        if args.kafka:
            kafka_cluster.classpath(None)
            cli.info("Apache Kafka resolved")
        if args.symbols:
            symbols.build()
            cli.info("symbol builds ready (scripts/symbols list)")
    except (jvm_service.ServiceError, symbols.BuildError) as e:
        cli.info(e)
        return 1
    return 0
