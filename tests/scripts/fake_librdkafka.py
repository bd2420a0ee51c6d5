"""A tiny git repository posing as a librdkafka source tree, for the tests of
`scripts/librdkafka build --tree` and `scripts/bench-commits --librdkafka-a tree:...`: a stub
configure and src/Makefile that build a shared library answering rd_kafka_version_str() and
builtin.features, so the whole export-configure-make-verify path runs in a second.

Its configure behaves as librdkafka's (mklove) does where kbench depends on it: --help lists
the --enable-*/--disable-* options it knows, any other option fails configure. The options
are chosen per commit (OPTIONS as of 2.x; OPTIONS_1_7 without libcurl's; OPTIONS_1_0 also
without zlib's and zstd's, as v1.0.0).

At build time FAKE_FAIL=configure or FAKE_FAIL=make makes that step fail, and every configure
call (not --help) appends its arguments to $FAKE_CONFIGURE_LOG when set (to count builds).
configure writes Makefile.config and config.h as mklove does: every WITH_* it knows on, those
named in FAKE_WITHOUT (e.g. "LDS SSL") off, with mklove's words when the linker script is off
for want of python; FAKE_NO_CONFIG=1 writes neither file."""

import os
import subprocess


def _toggles(*features):
    return tuple("--%s-%s" % (way, f) for f in features for way in ("enable", "disable"))


OPTIONS_1_0 = _toggles("devel", "ssl", "gssapi", "sasl", "lz4-ext", "lz4")
OPTIONS_1_7 = OPTIONS_1_0 + _toggles("zlib", "zstd", "regex-ext", "syslog")
OPTIONS = OPTIONS_1_7 + _toggles("curl")

CONFIGURE = r"""#!/bin/sh
options="%s"
if [ "$1" = --help ]; then
  echo "Usage: ./configure [OPTIONS...]"
  for o in $options; do echo "   $o                 a feature"; done
  exit 0
fi
[ "$FAKE_FAIL" = configure ] && { echo 'checking for zstd... failed'; exit 1; }
for a in "$@"; do
  case " $options " in
    *" $a "*) ;;
    *) echo "configure: error: Unknown option $a"; exit 1 ;;
  esac
done
[ -n "$FAKE_CONFIGURE_LOG" ] && echo "$@" >> "$FAKE_CONFIGURE_LOG"
[ -n "$FAKE_NO_CONFIG" ] && exit 0
: > Makefile.config
: > config.h
for f in GCC LDS ZLIB SSL ZSTD LZ4_EXT SNAPPY CRC32C_HW; do
  case " $FAKE_WITHOUT " in
    *" $f "*) v=n ;;
    *) v=y ;;
  esac
  if [ $f = LDS ] && [ $v = n ]; then
    echo 'checking for python (by command)... failed (disable)'
    echo 'disabling linker-script since python is not available'
  fi
  printf 'WITH_%%s=\t%%s\n' $f $v >> Makefile.config
  [ $v = y ] && echo "#define WITH_$f 1" >> config.h
done
exit 0
"""


def configure_script(options=OPTIONS):
    """A configure that knows exactly options (and --help)."""
    return CONFIGURE % " ".join(options)


MAKEFILE = ("librdkafka.so.1: fake.c\n"
            "\t@if [ \"$$FAKE_FAIL\" = make ]; then echo 'fake.c: error'; exit 1; fi\n"
            "\t$(CC) -shared -fPIC -o $@ fake.c\n")

SOURCE = r'''#include <stddef.h>
#include <string.h>
const char *rd_kafka_version_str(void) { return "%(runtime)s"; }
void *rd_kafka_conf_new(void) { static int c; return &c; }
void rd_kafka_conf_destroy(void *c) { (void)c; }
int rd_kafka_conf_get(const void *c, const char *n, char *d, size_t *s) {
  const char *f = "%(features)s"; (void)c;
  if (strcmp(n, "builtin.features") || *s <= strlen(f)) return -1;
  strcpy(d, f); *s = strlen(f) + 1; return 0; }
/* %(note)s */
'''


def git(repo, *args):
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.invalid",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.invalid")
    return subprocess.run(["git", "-C", repo] + list(args), check=True, env=env,
                          capture_output=True, text=True).stdout.strip()


def write_tree(root, header="0x020f01ff", runtime="2.15.1",
               features="gzip,snappy,ssl,sasl,regex,lz4,zstd", note="as released",
               options=OPTIONS, extra=None):
    """Writes (or rewrites) the librdkafka-shaped files under root; extra: more files,
    {path: text}."""
    files = {
        "configure": (configure_script(options), 0o755),
        "src/Makefile": (MAKEFILE, 0o644),
        "src/rdkafka.h": ("#define RD_KAFKA_VERSION  %s\n" % header, 0o644),
        "src/fake.c": (SOURCE % {"runtime": runtime, "features": features, "note": note},
                       0o644),
    }
    files.update({path: (text, 0o644) for path, text in (extra or {}).items()})
    for path, (text, mode) in files.items():
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text)
        os.chmod(full, mode)


def make_repo(repo, subdir="", **tree):
    """A git repository at repo holding the fake tree (under subdir, if given), one commit;
    returns its full sha."""
    os.makedirs(repo, exist_ok=True)
    git(repo, "init", "-q")
    write_tree(os.path.join(repo, subdir), **tree)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "librdkafka " + tree.get("note", "as released"))
    return git(repo, "rev-parse", "HEAD")


def commit_change(repo, note, subdir="", **tree):
    """A second commit: the same release with another fake.c; returns its full sha."""
    write_tree(os.path.join(repo, subdir), note=note, **tree)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", note)
    return git(repo, "rev-parse", "HEAD")


def header_of(version):
    """"2.6.1" -> "0x020601ff", RD_KAFKA_VERSION of that final release."""
    return "0x%02x%02x%02xff" % tuple(int(n) for n in version.split("."))


def make_release_repo(repo):
    """A repository shaped like librdkafka's release history; returns {tag: sha}:

        v0.11.6 - v1.0.0 - v1.1.0-RC1 - v1.1.0 - v2.6.1 = v2.7.0 - v2.8.0 - v2.8.1   (the main line)
                        \\- v1.0.1                                                  (a maintenance branch)

    v2.7.0 is a second tag on v2.6.1's commit (lightweight, as v0.11.6; the others are
    annotated); v2.8.1's rdkafka.h still says 2.8.0, as librdkafka's v2.0.1 says 2.0.0;
    before 1.1.0 configure.self checks for `python` (the linker script's interpreter), from
    1.1.0 on for `python3`."""
    def configure_self(interpreter):
        return {"configure.self": 'mkl_command_check %s "HAVE_PYTHON" "disable" "%s -V"\n'
                                  % (interpreter, interpreter)}

    tags = {"v0.11.6": make_repo(repo, header=header_of("0.11.6"), runtime="0.11.6",
                                 extra=configure_self("python"))}
    git(repo, "tag", "v0.11.6")
    main = git(repo, "rev-parse", "--abbrev-ref", "HEAD")

    def release(tag, interpreter, header=None, runtime=None):
        version = tag[1:]
        tags[tag] = commit_change(repo, "librdkafka " + tag, header=header or header_of(version),
                                  runtime=runtime or version, extra=configure_self(interpreter))
        git(repo, "tag", "-a", "-m", "librdkafka " + tag, tag)  # annotated, as librdkafka's

    release("v1.0.0", "python")
    git(repo, "checkout", "-q", "-b", "1.0.x")
    release("v1.0.1", "python")
    git(repo, "checkout", "-q", main)
    release("v1.1.0-RC1", "python3", header="0x010100c9")  # RD_KAFKA_VERSION's -RC1
    release("v1.1.0", "python3")
    release("v2.6.1", "python3")
    git(repo, "tag", "v2.7.0")
    tags["v2.7.0"] = tags["v2.6.1"]
    release("v2.8.0", "python3")
    release("v2.8.1", "python3", header=header_of("2.8.0"), runtime="2.8.0")  # as v2.0.1: not bumped
    return tags
