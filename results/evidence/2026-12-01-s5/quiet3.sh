#!/usr/bin/env bash
# Quiet part 3: an A/A pair of default quick-profile runs on a live broker (issue 10 verdict
# rate, issue 11 interval CV on a quiet machine).
set -u
cd /work/main
while ! grep -q "== all done" /work/ev5/quiet2.log 2>/dev/null; do sleep 10; done
E=/work/main/results/evidence/2026-12-01-s5/10
for i in 1 2; do
  { date -u +%T; uptime; } > $E/aa-$i.uptime
  s=$(date +%s)
  scripts/bench --profile quick --no-build --no-history --out $E/aa-$i > $E/aa-$i.out 2>&1
  echo "aa $i rc=$? $(( $(date +%s) - s )) s $(date -u +%T) $(uptime)"
  uptime >> $E/aa-$i.uptime
done
echo "== all done $(date -u +%T)"
