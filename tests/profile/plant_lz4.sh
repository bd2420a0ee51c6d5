#!/usr/bin/env bash
# Experiment helper for scripts/profile --diff (a planted slowdown in one function must rank
# first): builds a copy of the lz4 symbol build (scripts/symbols) whose
# LZ4_compress_fast_extState_fastReset also spins srcSize / $KBENCH_PLANT_DIV times per call
# (no spin when the variable is unset), with the same flags. Never used by kbench itself.
#
#   dir=$(tests/profile/plant_lz4.sh OUT_DIR)     # prints OUT_DIR/lib
#   KBENCH_PLANT_DIV=64 scripts/profile --diff libs=$(scripts/symbols path lz4) libs=$dir FILTER
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PROG=plant_lz4
# shellcheck source-path=SCRIPTDIR source=../lib/cli_lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib/cli_lib.sh"
[[ $# -eq 1 ]] || usage_error "usage: tests/profile/plant_lz4.sh OUT_DIR"
out=$(mkdir -p "$1" && cd "$1" && pwd)
sym=$("$ROOT/scripts/symbols" path lz4) || die 2 "build lz4 first: scripts/symbols build lz4"
json="$sym/../build.json"
dsc=$(find "${KBENCH_CACHE:-$HOME/.cache/kbench}/symbols/src" -name 'lz4_*.dsc' -print -quit)
cflags=$("$ROOT/scripts/lib/python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["cflags"])' "$json")
rm -rf "${out:?}/src" "${out:?}/lib"
dpkg-source --no-check -x "$dsc" "$out/src" >"$out/build.log" 2>&1
# The plant: first statement of the function; the divisor is read once per process.
"$ROOT/scripts/lib/python" - "$out/src/lib/lz4.c" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
head = ("int LZ4_compress_fast_extState_fastReset(void* state, const char* src, char* dst, "
        "int srcSize, int dstCapacity, int acceleration)\n{\n")
assert s.count(head) == 1, "lz4.c changed: update plant_lz4.sh"
plant = ("    { static long kbench_div = -1; static volatile unsigned kbench_sink;\n"
         "      if (kbench_div < 0) { const char* e = getenv(\"KBENCH_PLANT_DIV\"); kbench_div = e ? atol(e) : 0; }\n"
         "      if (kbench_div > 0) { int i; for (i = 0; i < srcSize / kbench_div; i++) kbench_sink += (unsigned)i; } }\n")
open(p, "w").write(s.replace(head, head + plant))
PY
CFLAGS="$cflags" PREFIX=/usr make -C "$out/src/lib" -j"$(nproc)" liblz4 CC=gcc >>"$out/build.log" 2>&1 ||
  die 1 "build failed: $out/build.log"
mkdir -p "$out/lib"
real=$(readlink -f "$out/src/lib/liblz4.so.1")
cp "$real" "$out/lib/"
ln -sfn "$(basename "$real")" "$out/lib/liblz4.so.1"
rm -rf "$out/src"
echo "$out/lib"
