#!/usr/bin/env bash
# The noise of this machine, from real runs: 20 scripts/bench runs (5 processes each, the
# default) of 12 in-process rows, one after another, with main's build (f6752a2). Each
# run's merged kbench.json is kept under noise/. Used by synthetic_goal.py.
set -euo pipefail
F='^Codec/(compress|decompress)/codec:(lz4/level:1|zstd/level:3|gzip/level:6)/payload:az/record_bytes:1000/batch_bytes:65536$|^Batch/(build|read)/magic:2/codec:(none|lz4)/payload:az/record_bytes:1000/batch_bytes:65536$|^Format/validate/magic:(1|2)/codec:gzip/timestamp:create/payload:az/record_bytes:100/batch_bytes:65536$'
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$here/noise"
for i in $(seq -w 1 20); do
  uptime >"$here/noise/run-$i.uptime"
  /work/main/scripts/bench --mock --no-build --filter "$F" --out "/tmp/h13-noise/run-$i" >/dev/null 2>&1
  cp "/tmp/h13-noise/run-$i/kbench.json" "$here/noise/run-$i.json"
done
