#!/bin/bash
# Mock, 1000 partitions: what does parsing librdkafka's statistics (every 100 ms by
# default) cost the producing thread? statistics.interval.ms 100 vs 5000, and bare.
B=/work/main/build/kbench
uptime > uptime.before
for i in 1 2 3; do
  for cfg in s100 s5000 bare; do
    spec='acks=1,record_bytes=500,partitions=1000,keys=uniform,key_count=100000'
    case $cfg in
      s100) args=(--produce "variant=send,$spec");;
      s5000) args=(--produce "variant=send,$spec" -X statistics.interval.ms=5000);;
      bare) args=(--produce "variant=bare_producev,$spec");;
    esac
    $B --benchmark_filter='^Produce/' "${args[@]}" --benchmark_repetitions=3 --benchmark_out=$cfg.$i.json --benchmark_out_format=json > $cfg.$i.txt 2> $cfg.$i.err
  done
done
uptime > uptime.after
