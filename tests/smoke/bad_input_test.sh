#!/usr/bin/env bash
# Every kind of bad input gives a clear message on stderr and exit status 2, before
# anything runs.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="${KBENCH_BIN:-$here/../../build/kbench}"
failures=0
passed=0

expect_usage_error() {
  local want="$1"; shift
  local err rc
  err="$(timeout 30 "$bin" --benchmark_list_tests "$@" 2>&1 >/dev/null)"
  rc=$?
  if [[ $rc -ne 2 ]]; then
    echo "FAIL: kbench $* exited $rc, want 2 (stderr: $err)"; failures=$((failures + 1)); return
  fi
  if [[ "$err" != *"$want"* ]]; then
    echo "FAIL: kbench $*: stderr lacks '$want': $err"; failures=$((failures + 1)); return
  fi
  passed=$((passed + 1))
}

expect_usage_error "valid codecs are none, gzip, " --codec=notacodec
expect_usage_error "valid levels are 1 to 9" --codec=gzip:12
expect_usage_error "valid levels are" --codec=zstd:99
expect_usage_error "is not an integer" --codec=zstd:fast
expect_usage_error "valid payloads are zeros, random, az" --payload=lorem
expect_usage_error "value_bound" --payload=value_bound:x
expect_usage_error "cannot read payload file" --payload=file:/nonexistent/records.txt --benchmark_filter=Codec/memcpy
expect_usage_error "reversed" --record-bytes=750-250
expect_usage_error "malformed setting" -X linger.ms
expect_usage_error "unknown librdkafka setting 'no.such.setting'" -X no.such.setting=1
expect_usage_error "invalid value for 'acks'" -X acks=maybe
expect_usage_error "cannot read" --client-config=/nonexistent/client.properties
expect_usage_error "unrecognized command-line flag" --benchmark_no_such_flag=1
expect_usage_error "acks must be 0, 1 or all" --produce 'acks=2'
expect_usage_error "unknown key 'foo'" --produce 'foo=1'
expect_usage_error "cannot exceed threads" --produce 'threads=2,producers=4'
expect_usage_error "is not key=value" --produce 'acks'
expect_usage_error "has an empty alternative" --produce 'acks=1|'
expect_usage_error "searches the rate itself" --produce 'variant=max_rate,rate=1000'
expect_usage_error "variant must be send, bare_producev or max_rate" --produce 'variant=fast'
expect_usage_error "keys must be none, uniform or zipf" --produce 'keys=hot'
# Found by trying: sizes of 0, negative sizes, empty payload files, bootstrap and
# broker-dir typos are refused before anything runs.
expect_usage_error "record size '0' includes 0" --record-bytes=0
expect_usage_error "record size '0-10' includes 0" --record-bytes=0-10
expect_usage_error "record size '-5' is neither" --record-bytes=-5
expect_usage_error "record size '1-' is neither" --record-bytes=1-
expect_usage_error "payload file '/dev/null' holds no records" --payload=file:/dev/null
expect_usage_error "--working-set-bytes '0' is not a whole number of bytes" --working-set-bytes=0
expect_usage_error "--working-set-bytes '16M' is not a whole number" --working-set-bytes=16M
expect_usage_error "--working-set-bytes '1e6' is not a whole number" --working-set-bytes=1e6
expect_usage_error "--working-set-bytes '-1' is not a whole number" --working-set-bytes=-1
expect_usage_error "--working-set-bytes '99999999999' is not a whole number" \
  --working-set-bytes=99999999999
expect_usage_error "--working-set-bytes needs a value" --working-set-bytes
expect_usage_error "cannot read payload file '/nonexistent-kbench'" --payload=file:/nonexistent-kbench
expect_usage_error "'nohostport' is not HOST:PORT" --bootstrap=nohostport
expect_usage_error "'h:99999' is not HOST:PORT" --bootstrap=h:99999
expect_usage_error "is not a directory" --broker-dir=/nonexistent-kbench
expect_usage_error "key_count=0 is not an integer" --produce 'keys=uniform,key_count=0'
expect_usage_error "transaction_records needs acks=all" --produce 'acks=1,transaction_records=100'
expect_usage_error "needs a producer per thread" --produce 'acks=all,threads=2,transaction_records=100'
expect_usage_error "bare_producev has no transactions" --produce 'variant=bare_producev,acks=all,transaction_records=100'
expect_usage_error "unknown key 'foo'" --end-to-end 'foo=1'
expect_usage_error "librdkafka cannot write snappy_xerial" --end-to-end 'codec=snappy_xerial'
expect_usage_error "is not a latency in microseconds" --max-rate-p99-us=soon
expect_usage_error "--consume: unknown key 'fetch'" --consume 'fetch=1'
expect_usage_error "--consume: partitions=0 is not an integer in 1..10000" --consume 'partitions=0'
expect_usage_error "more than the in-process mock cluster keeps" --consume 'records=100000,record_bytes=1000'
expect_usage_error "not a positive integer" --records-per-iteration=0
expect_usage_error "topic=t reads an existing topic: it needs a live cluster" --consume 'topic=t'
expect_usage_error "is not a Kafka topic name" --bootstrap=127.0.0.1:1 --consume 'topic=a/b'
expect_usage_error "reads the topic as it is" --bootstrap=127.0.0.1:1 --consume 'topic=t,records=10' 
expect_usage_error "--costs must be on or off, not 'maybe'" --costs=maybe
expect_usage_error "--end-to-end: acks must be 1 or all" --end-to-end 'acks=0'
expect_usage_error "--end-to-end: unknown key 'linger_ms'" --end-to-end 'linger_ms=5'
# A send-path payload smaller than the row's batches need repeats records inside a batch:
# refused (naming its size and the need) when a selected row would send it.
licences=/usr/share/common-licenses/GPL-3
expect_usage_error "payload file:GPL-3 holds 34475 bytes of values; the send path needs 16777216" \
  --payload=file:$licences --benchmark_filter='^Produce/send/acks:1/codec:none/record_bytes:100/'
expect_usage_error "Produce/send/acks:1/codec:none/record_bytes:100/threads:1/producers:1/payload:file:GPL-3/real_time: payload" \
  --produce "acks=1,payload=file:$licences"
expect_usage_error "EndToEnd/latency/acks:1/codec:none/record_bytes:100/rate:10000/partitions:2/payload:file:GPL-3/real_time: payload" \
  --end-to-end "payload=file:$licences"
expect_usage_error "more than the 4294967296 kbench generates" --produce 'partitions=10000,batch_bytes=2000000000'
# ... but not where no selected row sends it, and --allow-repeats names the rows that cycle.
expect_listed() {  # expect_listed PATTERN KBENCH_ARGS...: exit 0 and a listed name matching PATTERN
  local want="$1" out rc
  shift
  out="$(timeout 30 "$bin" --benchmark_list_tests "$@" 2>&1)"
  rc=$?
  if [[ $rc -ne 0 ]] || ! grep -Eq -- "$want" <<<"$out"; then
    echo "FAIL: kbench $* exited $rc or listed no /$want/: $out" | head -c 600; echo
    failures=$((failures + 1)); return
  fi
  passed=$((passed + 1))
}
expect_listed '^Codec/memcpy/payload:file:GPL-3/' --payload=file:$licences --benchmark_filter='^Codec/memcpy'
expect_listed '^Produce/send/acks:1/codec:none/record_bytes:100/threads:1/producers:1/payload:file:GPL-3/repeats:allowed/real_time' \
  --allow-repeats --produce "acks=1,payload=file:$licences"
expect_listed '^Produce/send/acks:1/codec:none/record_bytes:100/threads:1/producers:1/real_time$' \
  --allow-repeats --produce 'acks=1'
expect_usage_error "--window-seconds '0' is not a number of seconds" --window-seconds=0
expect_usage_error "--warmup-seconds '-1' is not a number of seconds" --warmup-seconds=-1
expect_usage_error "--start-at 'soon' is not a wall-clock time in Unix seconds" --start-at=soon

expect_usage_error "cannot write --benchmark_out '/proc/nope/x.json'" --benchmark_out=/proc/nope/x.json

# scripts/bench refuses a results folder it cannot write before building or running anything.
err="$(timeout 30 "$here/../../scripts/bench" --no-build --out /proc/nope 2>&1 >/dev/null)"
rc=$?
if [[ $rc -ne 2 || "$err" != *"--out /proc/nope: cannot write in /proc"* ]]; then
  echo "FAIL: scripts/bench --out /proc/nope exited $rc, want 2 (stderr: $err)"; failures=$((failures + 1))
else
  passed=$((passed + 1))
fi

# A secret in a rejected value must not be echoed.
err="$("$bin" --benchmark_list_tests -X sasl.mechanisms=hunter2-secret 2>&1 >/dev/null)"
if [[ "$err" == *"hunter2-secret"* && "$err" != *"(value rejected)"* ]]; then
  echo "FAIL: a rejected value was echoed: $err"; failures=$((failures + 1))
else
  passed=$((passed + 1))
fi

echo "$passed passed, $failures failed"
[[ $failures -eq 0 ]]
