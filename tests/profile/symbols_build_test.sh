#!/usr/bin/env bash
# Slow integration test of scripts/symbols and scripts/profile: a real build of Debian's lz4
# source package (the smallest of the five; about 30 s on 2 cores, needs Debian's source
# archive), then a callgrind profile of kbench's lz4 Codec row on it:
#   - the build reports the system library's version, exports the same functions, and
#     carries a symbol table (build.json);
#   - the profile names lz4 functions that the system's stripped liblz4 does not export
#     (so a profile of the system library could not have named them);
#   - the run context's loaded_libraries names the symbol build's file.
#
# Builds into a fresh temporary cache so that the build itself is tested, never the user's
# cache. KBENCH_BIN picks the binary (default build/kbench).
# `check && ok ... || not_ok ...` is intended: ok never fails.
# shellcheck disable=SC2015
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
KBENCH_BIN="${KBENCH_BIN:-$ROOT/build/kbench}"
export KBENCH_BIN
WORK="$(mktemp -d "${TMPDIR:-/tmp}/kbench-symbols-test.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
# The scratch cache holds no venv: the scripts keep kbench's (scripts/lib/python reads
# KBENCH_VENV first).
# shellcheck source-path=SCRIPTDIR source=../../scripts/lib/venv.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/venv.sh"
KBENCH_VENV=$(kbench_venv)
export KBENCH_VENV
export KBENCH_CACHE="$WORK/cache"
unset LD_LIBRARY_PATH

passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok   - $*"; }
not_ok() { failed=$((failed + 1)); echo "FAIL - $*"; }

start=$SECONDS
rc=0
"$ROOT/scripts/symbols" build lz4 >"$WORK/out" 2>"$WORK/err" </dev/null || rc=$?
took=$((SECONDS - start))
libdir=$(cat "$WORK/out")
if [[ $rc -eq 0 && -f "$libdir/liblz4.so.1" ]]; then
  ok "scripts/symbols build lz4 printed $libdir (${took}s)"
else
  not_ok "scripts/symbols build lz4 failed (exit $rc)"; cat "$WORK/err"
  echo "passed $passed, failed $failed"; exit 1
fi
json="$libdir/../build.json"
"$ROOT/scripts/lib/python" - "$json" <<'PY' && ok "build.json: same version and exports as the system library" || not_ok "build.json: $(cat "$json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["library_version"] == d["system_library_version"], d
assert d["exports_match_system"], d
assert "-fno-omit-frame-pointer" in d["cflags"] and "-g" in d["cflags"].split(), d
PY
readelf -S -W "$(readlink -f "$libdir/liblz4.so.1")" | grep -q ' \.symtab ' && ok "the build has a symbol table" ||
  not_ok "the build has no .symtab"
rc=0
"$ROOT/scripts/symbols" path lz4 >"$WORK/path" 2>/dev/null || rc=$?
[[ $rc -eq 0 && "$(cat "$WORK/path")" == "$libdir" ]] && ok "path lz4 prints the cached directory" ||
  not_ok "path lz4: exit $rc, '$(cat "$WORK/path")'"
rc=0
"$ROOT/scripts/symbols" path zstd >/dev/null 2>&1 || rc=$?
[[ $rc -eq 1 ]] && ok "path of a library not built exits 1" || not_ok "path zstd exited $rc"

if [[ ! -x "$KBENCH_BIN" ]]; then
  echo "skip - no kbench binary at $KBENCH_BIN"
  skipped=1
else
  out="$WORK/profile"
  rc=0
  LD_LIBRARY_PATH="$libdir" KBENCH_FIXED_ITERATIONS=3 "$ROOT/scripts/profile" --tool callgrind --out-dir "$out" \
    '^Codec/compress/codec:lz4/level:1/payload:zeros/record_bytes:100/batch_bytes:65536(/iterations:[0-9]+)?$' \
    >"$WORK/profile.out" 2>"$WORK/profile.err" </dev/null || rc=$?
  if [[ $rc -ne 0 ]]; then
    not_ok "scripts/profile exited $rc"; tail -n 20 "$WORK/profile.err"
  else
    # Function names in the profile that the system's liblz4 does not export.
    sys_lz4=$(/sbin/ldconfig -p | awk '$1 == "liblz4.so.1" { print $NF; exit }')
    nm -D --defined-only "$(readlink -f "$sys_lz4")" | awk '{print $NF}' | sort -u >"$WORK/exported"
    nm --defined-only "$(readlink -f "$libdir/liblz4.so.1")" | awk '$2 ~ /^[tT]$/ {print $NF}' | sort -u >"$WORK/all"
    comm -23 "$WORK/all" "$WORK/exported" >"$WORK/local"
    tr ';' '\n' <"$out/stacks.folded" | sed 's/ [0-9]*$//' | sort -u >"$WORK/frames"
    named=$(comm -12 "$WORK/frames" "$WORK/local" | grep -E '^LZ4' | head -n 3 | paste -sd, -)
    [[ -n "$named" ]] && ok "the profile names lz4 functions the stripped system library hides: $named" ||
      not_ok "no local lz4 function in the profile (frames: $(grep -iE 'lz4' "$WORK/frames" | head -n 5 | paste -sd, -))"
    grep -q "liblz4.so.1=$(readlink -f "$libdir/liblz4.so.1")" "$out/context.txt" &&
      ok "context.txt: loaded_libraries names the symbol build" ||
      not_ok "context.txt has no loaded_libraries entry for the symbol build: $(grep loaded_libraries "$out/context.txt")"
    grep -q "LD_LIBRARY_PATH=$libdir" "$out/command.txt" && ok "command.txt records LD_LIBRARY_PATH" ||
      not_ok "command.txt lacks LD_LIBRARY_PATH"
  fi
fi
echo "passed $passed, failed $failed ($((SECONDS - start))s)"
[[ $failed -eq 0 ]] || exit 1
# A part that could not run is a skip (ctest's SKIP_RETURN_CODE), not a pass.
[[ ${skipped:-0} -eq 0 ]] || exit 77
