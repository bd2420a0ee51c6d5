#!/usr/bin/env bash
# Quiet-machine measurements, one after another (nothing else runs meanwhile).
set -uo pipefail
cd /work/main
EV=/work/main/results/evidence/2026-12-01-s4
log() { echo "$(date +%T) $* ($(uptime | sed 's/.*load/load/'))" | tee -a /work/ev4/quiet.log; }

# 1. Issue 17: the five symbol builds from scratch (a private cache: the shared one is warm).
log "symbols build start"
rm -rf /tmp/symcache && mkdir -p /tmp/symcache
start=$SECONDS
KBENCH_CACHE=/tmp/symcache /usr/bin/time -v scripts/symbols build >"$EV/17/symbols-build.out" 2>"$EV/17/symbols-build.err"
echo "rc=$? wall=$((SECONDS - start)) s" >>"$EV/17/symbols-build.out"
KBENCH_CACHE=/tmp/symcache scripts/symbols list >>"$EV/17/symbols-build.out" 2>&1
log "symbols build done in $((SECONDS - start)) s"

# 2. Issue 12: cost of measuring costs (mock, interleaved on/off).
log "costs on/off start"
ROUNDS=6 /work/ev4/costs.sh >/dev/null 2>&1
log "costs on/off done"

# 3. Issue 11: two maximum-rate searches in a row on a fresh local broker.
log "max-rate start"
BOOT=$(scripts/kafka start --dir /tmp/kq --port-base auto 2>/dev/null)
ROW='Produce/max_rate/acks:1/codec:none/record_bytes:500/threads:1/producers:1/real_time'
for i in 1 2; do
  uptime >"$EV/11/maxrate-$i.uptime"
  build/kbench --bootstrap="$BOOT" --benchmark_filter="^$ROW\$" \
    --benchmark_out="$EV/11/maxrate-$i.json" --benchmark_out_format=json >"$EV/11/maxrate-$i.txt" 2>&1
  log "max-rate $i rc=$?"
done
scripts/kafka stop --dir /tmp/kq >/dev/null 2>&1
log "max-rate done"

# 4. Issue 11: the quick profile on a live broker scripts/bench starts (wall time, interval CV).
log "quick profile start"
start=$SECONDS
scripts/bench --profile quick --no-history --out "$EV/11/quick-live" >"$EV/11/quick-live.out" 2>&1
echo "rc=$? wall=$((SECONDS - start)) s" >>"$EV/11/quick-live.out"
log "quick profile done in $((SECONDS - start)) s"
