#!/usr/bin/env bash
# Goal: the report for 200 runs x 400 benchmarks builds in <= 30 s and its largest page loads
# in headless Chromium in <= 3 s. A synthetic history (tests/scripts/history_json.py): 400
# benchmarks in 5 families (200 Codec, 100 Batch, 50 Format, 30 Produce, 20 Consume), 200
# commits, 5 processes per run, noise 1.5 % per run and 1 % per process, a 5 % step at
# commit 150 in every 10th benchmark. Output: scale/*.txt.
set -euo pipefail
# GOAL_DIR (added in session 5): write scale/*.txt into another evidence folder.
script_dir=$(cd "$(dirname "$0")" && pwd)
here=$(cd "${GOAL_DIR:-$script_dir}" && pwd)
root=$(cd "$script_dir/../../../.." && pwd)
tmp=${TMPDIR:-/tmp}/h13-scale
# --report-only: keep the database of an earlier run, rebuild the report, reload the page.
report_only=0
[[ ${1:-} == --report-only ]] && report_only=1
if [[ $report_only -eq 0 ]]; then
rm -rf "$tmp"; mkdir -p "$tmp"
/usr/bin/python3 - "$tmp" "$root" <<'PY'
import sys
sys.path.insert(0, sys.argv[2] + "/tests/scripts")
import history_json as hj
fams = [("Codec/compress/codec:lz4/level:%d/payload:az/record_bytes:1000", 200),
        ("Batch/build/magic:2/codec:lz4/payload:az/record_bytes:%d", 100),
        ("Format/validate/magic:2/codec:gzip/record_bytes:%d", 50),
        ("Produce/send/acks:1/codec:none/record_bytes:%d/real_time", 30),
        ("Consume/read/record_bytes:%d/partitions:4/real_time", 20)]
series = []
for pat, n in fams:
    for k in range(n):
        series.append((pat % k, 1000.0 + k, {150: 0.05} if len(series) % 10 == 0 else {}))
hj.write_history(sys.argv[1] + "/runs", 200, series, seed=5, run_noise=0.015,
                 process_noise=0.01)
PY
{
  echo "\$ uptime"; uptime
  echo "\$ time scripts/history --db \$tmp/h.sqlite add --repo \$tmp \$tmp/runs/*.json"
  { time "$root/scripts/history" --db "$tmp/h.sqlite" add --repo "$tmp" "$tmp"/runs/*.json; } 2>&1
  ls -la "$tmp/h.sqlite"
} > "$here/scale/add.txt"
fi
rm -rf "$tmp/site"
{
  echo "\$ time scripts/history --db \$tmp/h.sqlite report --out \$tmp/site"
  { time "$root/scripts/history" --db "$tmp/h.sqlite" report --out "$tmp/site"; } 2>&1
  ls -la "$tmp/site"
  echo "\$ uptime"; uptime
} > "$here/scale/report.txt"
# Page load: headless Chromium dumping the DOM (the page's script sets data-ready="1" when it
# ran, and data-load-ms: performance.now() at the load event), the largest page against an
# empty page, 3 times each.
largest=$(ls -S "$tmp"/site/family-*.html | head -1)
echo '<!DOCTYPE html><html><body>empty</body></html>' > "$tmp/empty.html"
{
  echo "largest page: $(basename "$largest") $(stat -c %s "$largest") bytes"
  for i in 1 2 3; do
    for page in "$tmp/empty.html" "$largest"; do
      s=$(date +%s.%N)
      chromium --headless --no-sandbox --disable-gpu --user-data-dir="$tmp/prof" \
        --dump-dom "file://$page" 2>/dev/null > "$tmp/dom.html"
      e=$(date +%s.%N)
      printf '%s: chromium wall %s s, in-page navigation to load event %s ms, ready=%s charts=%s\n' \
        "$(basename "$page")" "$(echo "$e - $s" | bc)" \
        "$(grep -o 'data-load-ms="[0-9]*"' "$tmp/dom.html" | tr -dc 0-9)" \
        "$(grep -c 'data-ready="1"' "$tmp/dom.html")" "$(grep -o '<polyline class="med"' "$tmp/dom.html" | wc -l)"
    done
  done
  echo "\$ uptime"; uptime
} > "$here/scale/page_load.txt"
cat "$here/scale/report.txt" "$here/scale/page_load.txt"
