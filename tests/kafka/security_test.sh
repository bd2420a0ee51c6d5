#!/usr/bin/env bash
# Live test of TLS and SASL end to end, on one SASL_SSL cluster (scripts/kafka start
# --security sasl_ssl, one broker, Kafka 3.9.1: Debian's librdkafka 2.0.2 cannot
# authenticate with SCRAM to Kafka 4.x at all, see README "Secured clusters"):
#   1. a Produce and a Consume row with --client-config: they run, end offsets equal the
#      delivered count, the context names the protocol and mechanism and no secret;
#   2. each failure ends in exit 2 within 30 s with a message naming its cause: a wrong
#      password, an unknown user, an untrusted CA, a hostname mismatch (the certificate
#      names 127.0.0.1, the client connects to localhost), a TLS client on a plaintext port
#      (the controller's) and a plaintext client on the TLS port;
#   3. the wrong password once more through scripts/bench (-X on its command line, results
#      under a results folder): exit non-zero, and command.txt carries *** instead;
#   3b. canaries: a made-up value for every sensitive librdkafka setting the run does not
#      need, through -X and --client-config, with debug=all, in a run through scripts/bench
#      that works and in kbench runs that fail on values librdkafka must parse;
#   4. no secret (the cluster's passwords, the wrong password, the canaries) in any stdout,
#      stderr, JSON, summary, console copy or results file, nor in the cluster's logs, and
#      none left in the state directory after scripts/kafka stop.
# Each failure is its own kbench run of seconds; the cluster starts once (~30-60 s).
# `check && ok ... || not_ok ...` is intended: ok never fails.
# shellcheck disable=SC2015
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: tests/kafka/security_test.sh [--help]

Environment:
  KBENCH_BIN                    kbench binary (default build/kbench)
  KBENCH_SECURITY_TEST_VERSION  Kafka release of the cluster (default 3.9.1)
USAGE
}
# shellcheck source-path=SCRIPTDIR source=../lib/live_test_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/live_test_lib.sh"
live_test_init security-test "$@"
live_need_kbench
live_need_java

VERSION="${KBENCH_SECURITY_TEST_VERSION:-3.9.1}"
STATE="$WORK/kafka"
OUTS="$WORK/outputs" # everything kbench and scripts/bench print or write
mkdir -p "$OUTS" "$WORK/configs"
live_start_kafka "$STATE" --port-base auto --security sasl_ssl --version "$VERSION"
cp "$WORK/kafka-start-kafka.err" "$OUTS/kafka-start.err" # step 4 searches it for secrets too
PORT="${BOOTSTRAP##*:}"
CONFIG="$("$KAFKA" client-config --dir "$STATE")"
export KBENCH_BROKER_VERSION="$VERSION"
echo "# sasl_ssl, client settings $CONFIG"
grep -q '^security: *sasl_ssl (SASL_SSL, SCRAM-SHA-512)' <("$KAFKA" status --dir "$STATE") &&
  ok "status names the security mode" || not_ok "status: $("$KAFKA" status --dir "$STATE")"

# Every secret of this cluster: the client's SCRAM password, and the broker's keystore and
# SCRAM passwords from its configuration. Plus the wrong password the test makes up.
secret_values() {
  sed -nE 's/^[^#=]*password=(.*)$/\1/p; s/.*password="([^"]*)".*/\1/p' "$@" | sort -u
}
mapfile -t SECRETS < <(secret_values "$CONFIG" "$STATE"/node-*/server.properties)
WRONG="wrong-$(head -c 12 /dev/urandom | base64 | tr -dc A-Za-z0-9)"
SECRETS+=("$WRONG")
((${#SECRETS[@]} >= 4)) && ok "${#SECRETS[@]} secrets to look for" || not_ok "found only ${#SECRETS[@]} secrets in $CONFIG and server.properties"

# ---------------------------------------------------------------- 1. it works
PRODUCE='Produce/send/acks:all/codec:lz4/record_bytes:200/threads:1/producers:1/real_time'
CONSUME='Consume/read/record_bytes:100/partitions:4/records:20000/real_time'
if "$KBENCH_BIN" --bootstrap="$BOOTSTRAP" --client-config="$CONFIG" -X debug=security,broker \
  --produce 'acks=all,codec=lz4,record_bytes=200' --consume 'record_bytes=100,records=20000' \
  --benchmark_filter='^(Produce|Consume)/' --benchmark_min_time=0.01 --window-seconds=1 --warmup-seconds=0.3 \
  --benchmark_out="$OUTS/ok.json" --benchmark_out_format=json >"$OUTS/ok.out" 2>"$OUTS/ok.err"; then
  ok "Produce and Consume rows on SASL_SSL"
else
  not_ok "kbench on SASL_SSL exited $?: $(tail -c 800 "$OUTS/ok.err")"
fi
if "$PY" - "$OUTS/ok.json" "$PRODUCE" "$CONSUME" <<'PYEOF'; then ok "rows, end offsets and context"; else not_ok "JSON checks (above)"; fi
import json, sys
path, produce, consume = sys.argv[1:]
doc = json.load(open(path))
ctx = doc["context"]
bad = []
want = {"security_protocol": "sasl_ssl", "sasl_mechanism": "SCRAM-SHA-512",
        "tls_client_certificate": "false", "client.sasl.password": "***",
        "client.sasl.username": "***", "target": "live"}
for key, value in want.items():
    if ctx.get(key) != value:
        bad.append(f"context {key} = {ctx.get(key)!r}, want {value!r}")
by_name = {b["name"]: b for b in doc["benchmarks"]}
for name in (produce, consume):
    b = by_name.get(name)
    if b is None or b.get("error_occurred"):
        bad.append(f"{name}: {b and b.get('error_message')}")
p = by_name.get(produce, {})
if p and p.get("end_offsets") != p.get("delivered_records"):
    bad.append(f"end offsets {p.get('end_offsets')} != delivered {p.get('delivered_records')}")
for line in bad:
    print("  " + line, file=sys.stderr)
if not bad:
    print(f"  produce {p['items_per_second']:.0f} records/s, delivered {p['delivered_records']:.0f} = end offsets; "
          f"consume {by_name[consume]['items_per_second']:.0f} records/s")
sys.exit(1 if bad else 0)
PYEOF

# ---------------------------------------------------------------- 2. failures end cleanly
# A stranger CA for the untrusted case, made like the cluster's own.
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$WORK/configs/other-ca.key" -out "$WORK/configs/other-ca.pem" \
  -days 1 -subj "/CN=not the cluster's CA" >/dev/null 2>&1
sed "s|^sasl.password=.*|sasl.password=$WRONG|" "$CONFIG" >"$WORK/configs/wrong-password.properties"
sed "s|^sasl.username=.*|sasl.username=nobody-$RANDOM|" "$CONFIG" >"$WORK/configs/unknown-user.properties"
sed "s|^ssl.ca.location=.*|ssl.ca.location=$WORK/configs/other-ca.pem|" "$CONFIG" >"$WORK/configs/untrusted.properties"

# expect_failure NAME PATTERN kbench-args...: exit 2 within 30 s, stderr matching PATTERN.
expect_failure() {
  local name="$1" pattern="$2" start=$SECONDS rc=0
  shift 2
  timeout 60 "$KBENCH_BIN" --produce 'acks=all,codec=lz4,record_bytes=200' \
    --benchmark_filter="^$PRODUCE\$" --benchmark_min_time=0.01 --window-seconds=1 \
    --benchmark_out="$OUTS/$name.json" --benchmark_out_format=json "$@" \
    >"$OUTS/$name.out" 2>"$OUTS/$name.err" || rc=$?
  local took=$((SECONDS - start))
  if ((rc == 2 && took <= 30)) && grep -qE "$pattern" "$OUTS/$name.err"; then
    ok "$name: exit 2 after $took s: $(grep -oE "$pattern" "$OUTS/$name.err" | head -1)"
  else
    not_ok "$name: exit $rc after $took s (want 2 within 30 s, stderr matching /$pattern/): $(head -c 900 "$OUTS/$name.err")"
  fi
}
expect_failure wrong-password 'SASL authentication error: Authentication failed.*invalid credentials' \
  --bootstrap="$BOOTSTRAP" --client-config="$WORK/configs/wrong-password.properties"
expect_failure unknown-user 'SASL authentication error: Authentication failed.*invalid credentials' \
  --bootstrap="$BOOTSTRAP" --client-config="$WORK/configs/unknown-user.properties"
expect_failure untrusted-ca 'certificate rejected: self-signed certificate in certificate chain' \
  --bootstrap="$BOOTSTRAP" --client-config="$WORK/configs/untrusted.properties"
expect_failure hostname-mismatch 'certificate rejected: hostname mismatch' \
  --bootstrap="localhost:$PORT" --client-config="$CONFIG"
# The controller listens, plaintext, 100 ports above the broker (scripts/kafka).
expect_failure tls-to-plaintext-port 'SSL handshake failed.*is this a plaintext listener' \
  --bootstrap="127.0.0.1:$((PORT + 100))" --client-config="$CONFIG"
expect_failure plaintext-to-tls-port 'connecting to a SSL listener.*security.protocol is plaintext' \
  --bootstrap="$BOOTSTRAP"
# The secret on the command line (-X) this time, which a user should not do but may.
expect_failure wrong-password-on-command-line 'invalid credentials' \
  --bootstrap="$BOOTSTRAP" --client-config="$CONFIG" -X "sasl.password=$WRONG"

# ---------------------------------------------------------------- 3. through scripts/bench
RESULTS="$OUTS/results/runs/security-test"
rc=0
KBENCH_BOOTSTRAP="" timeout 120 "$ROOT/scripts/bench" --no-build --bootstrap "$BOOTSTRAP" --processes 1 \
  --filter "^$PRODUCE\$" --out "$RESULTS" -- --produce 'acks=all,codec=lz4,record_bytes=200' \
  --client-config="$CONFIG" -X "sasl.password=$WRONG" \
  >"$OUTS/bench.out" 2>"$OUTS/bench.err" || rc=$?
if ((rc != 0)) && grep -q 'invalid credentials' "$OUTS/bench.err" && grep -q 'sasl.password=\\\*\\\*\\\*\|sasl.password=\*\*\*' "$RESULTS/command.txt"; then
  ok "scripts/bench with a wrong password: exit $rc, command.txt says sasl.password=***"
else
  not_ok "scripts/bench: exit $rc; command.txt: $(head -c 400 "$RESULTS/command.txt" 2>/dev/null); stderr: $(tail -c 400 "$OUTS/bench.err")"
fi

# ---------------------------------------------------------------- 3b. canaries
# A made-up secret for every setting librdkafka marks sensitive (_RK_SENSITIVE in
# rdkafka_conf.c) that the run does not need, through each way kbench takes settings (-X on
# kbench's and scripts/bench's command line, --client-config), with debug=all logging: a
# run that works (the inert ones) and one that fails on each value librdkafka must parse.
# Step 4 then looks for every canary where it looks for the cluster's secrets.
canary() { echo "canary-$1-$(head -c 9 /dev/urandom | base64 | tr -dc A-Za-z0-9)"; }
C_KEYPASS=$(canary keypass) C_STOREPASS=$(canary storepass) C_OAUTH=$(canary oauth)
C_KEYPEM=$(canary keypem) C_CAPEM=$(canary capem) C_KEYLOC=$(canary keyloc)
SECRETS+=("$C_KEYPASS" "$C_STOREPASS" "$C_OAUTH" "$C_KEYPEM" "$C_CAPEM" "$C_KEYLOC")
cp "$CONFIG" "$WORK/configs/canary.properties"
printf '%s\n' "ssl.keystore.password=$C_STOREPASS" "sasl.oauthbearer.config=principal=$C_OAUTH" \
  >>"$WORK/configs/canary.properties"
CANARY_RESULTS="$OUTS/results/runs/canary"
rc=0
KBENCH_BOOTSTRAP="" timeout 180 "$ROOT/scripts/bench" --no-build --bootstrap "$BOOTSTRAP" --processes 1 \
  --filter "^$PRODUCE\$" --out "$CANARY_RESULTS" -- --produce 'acks=all,codec=lz4,record_bytes=200' \
  --client-config="$WORK/configs/canary.properties" -X "ssl.key.password=$C_KEYPASS" -X debug=all \
  --window-seconds=1 --warmup-seconds=0.3 >"$OUTS/canary-bench.out" 2>"$OUTS/canary-bench.err" || rc=$?
((rc == 0)) && [[ -s $CANARY_RESULTS/summary.txt ]] &&
  ok "a run with debug=all and canaries in -X and --client-config (scripts/bench: summary, console, JSON)" ||
  not_ok "canary run through scripts/bench: exit $rc: $(tail -c 600 "$OUTS/canary-bench.err")"
# Values librdkafka parses when the client starts: each fails, and must fail without echoing.
canary_failure() {
  local name="$1" rc=0
  shift
  timeout 60 "$KBENCH_BIN" --bootstrap="$BOOTSTRAP" --produce 'acks=all,codec=lz4,record_bytes=200' \
    --benchmark_filter="^$PRODUCE\$" --benchmark_min_time=0.01 --window-seconds=1 -X debug=all \
    --benchmark_out="$OUTS/$name.json" --benchmark_out_format=json "$@" \
    >"$OUTS/$name.out" 2>"$OUTS/$name.err" || rc=$?
  ((rc != 0)) && ok "$name: exit $rc: $(grep -m1 -o 'error:.*' "$OUTS/$name.err" | head -c 200)" ||
    not_ok "$name: a client with that value ran (exit 0)"
}
cp "$CONFIG" "$WORK/configs/canary-ca.properties"
echo "ssl.ca.pem=$C_CAPEM" >>"$WORK/configs/canary-ca.properties"
canary_failure canary-ssl-key-pem --client-config="$CONFIG" -X "ssl.key.pem=$C_KEYPEM"
canary_failure canary-ssl-ca-pem --client-config="$WORK/configs/canary-ca.properties"
canary_failure canary-ssl-key-location --client-config="$CONFIG" -X "ssl.key.location=/nonexistent/$C_KEYLOC"

# ---------------------------------------------------------------- 4. no secret anywhere
leaks() {
  local where="$1" s
  for s in "${SECRETS[@]}"; do
    grep -rlF -- "$s" "$where" 2>/dev/null | sed "s|^|    $s in |" || true
  done
}
echo "a planted $C_KEYPASS" >"$WORK/leak-probe.txt"
[[ -n $(leaks "$WORK/leak-probe.txt") ]] && ok "the search finds a planted canary" ||
  not_ok "the search does not find a canary planted in $WORK/leak-probe.txt"
found="$(leaks "$OUTS")"
[[ -z $found ]] && ok "no secret in $(find "$OUTS" -type f | wc -l) output and results files" ||
  not_ok "secrets leaked:"$'\n'"$found"
found="$(leaks "$STATE/logs")"
[[ -z $found ]] && ok "no secret in the cluster's logs" || not_ok "secrets in the cluster's logs:"$'\n'"$found"

"$KAFKA" stop --dir "$STATE" >/dev/null 2>"$OUTS/kafka-stop.err" || not_ok "stop failed: $(cat "$OUTS/kafka-stop.err")"
found="$(leaks "$STATE")"
[[ -z $found ]] && ok "no secret left in the state directory after stop" || not_ok "secrets left after stop:"$'\n'"$found"
[[ ! -e $STATE/tls && ! -e $STATE/client.properties ]] && ok "stop deleted the certificates and client settings" ||
  not_ok "stop left $(ls "$STATE")"

live_test_done
