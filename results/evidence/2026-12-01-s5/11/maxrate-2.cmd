build/kbench --bootstrap 127.0.0.1:45211 --benchmark_filter='^Produce/max_rate/' --benchmark_out=maxrate-2.json
