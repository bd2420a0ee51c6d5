#!/bin/bash
# Goal 3: EndToEnd p50 against the delivery-report p50 at 10,000 records/s, linger.ms 0,
# live Kafka 4.4.0 (scripts/kafka start --dir /tmp/h12/kafka --port-base auto), 5
# repetitions interleaved at random with the Produce row of the same shape.
cd "$(dirname "$0")/../../../../.."
KBENCH_KAFKA_DIR=/tmp/h12/kafka KBENCH_BROKER_VERSION=4.4.0 ./build/kbench --bootstrap=127.0.0.1:45451 \
  --produce 'acks=1,record_bytes=100,linger_ms=0,rate=1000' \
  --end-to-end 'acks=1,record_bytes=100,rate=1000,partitions=2' \
  '--benchmark_filter=^(Produce|EndToEnd)/' --benchmark_repetitions=5 \
  --benchmark_enable_random_interleaving=true \
  --benchmark_out=results/evidence/2026-12-01-s3/12/e2e-vs-delivery/run-1000-pollwait.json --benchmark_out_format=json
