/* A stand-in for kbench with three named functions, used by tests/scripts/test_profile.py
 * to check that a differential profile ranks a planted slowdown first.
 *
 * Built twice: without PLANT (side A) and with -DPLANT=5 (side B), where fake_checksum,
 * the middle-sized function, does PLANT % more work. Speaks enough of Google Benchmark's
 * command line for scripts/profile (--benchmark_filter, --benchmark_out).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef PLANT
#define PLANT 0
#endif

static volatile unsigned long sink;

__attribute__((noinline)) static void fake_compress(long n) {
  for (long i = 0; i < n * 600; i++) sink += (unsigned long)i * 7u;
}

__attribute__((noinline)) static void fake_checksum(long n) {
  for (long i = 0; i < n * 300 * (100 + PLANT) / 100; i++) sink ^= (unsigned long)i;
}

__attribute__((noinline)) static void fake_copy(long n) {
  for (long i = 0; i < n * 100; i++) sink += (unsigned long)i;
}

int main(int argc, char **argv) {
  const char *out = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strncmp(argv[i], "--benchmark_out=", 16)) out = argv[i] + 16;
  }
  const char *fixed = getenv("KBENCH_FIXED_ITERATIONS");
  long iterations = fixed ? atol(fixed) : 20;
  for (long it = 0; it < iterations; it++) {
    fake_compress(100);
    fake_checksum(100);
    fake_copy(100);
  }
  if (out) {
    FILE *f = fopen(out, "w");
    if (!f) return 1;
    fprintf(f, "{\"context\": {\"target\": \"none\"}, \"benchmarks\": [{\"name\": \"Fake/planted\","
               " \"iterations\": %ld, \"real_time\": 1, \"cpu_time\": 1, \"time_unit\": \"ns\"}]}\n",
            iterations);
    fclose(f);
  }
  printf("Fake/planted %ld\n", iterations);
  return 0;
}
