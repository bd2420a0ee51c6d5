/* Fake kbench for the tests of scripts/bench-commits (see CMakeLists.txt).
 *
 * Two benchmarks whose work per iteration is proportional to COST (cost.h).
 * Reported times are synthetic: COST microseconds with a per-process jitter
 * of under 1 %, so a test knows the planted shift without timing noise.
 * KBENCH_FIXED_ITERATIONS=N fixes the iteration count, as the real kbench does.
 * --fake-scale=P or KBENCH_FAKE_SCALE=P scales the reported times to P % (default 100), so
 * that a test can tell two argument sets or two environments of one build apart.
 * Names follow Google Benchmark: with fixed iterations NAME/iterations:N, before a
 * /real_time suffix. The context records KBENCH_LIBRDKAFKA_SOURCE (as librdkafka_source,
 * like the real kbench) and LD_LIBRARY_PATH (standing in for its loaded_libraries).
 */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cost.h"

static const char* names[] = {
    "Codec/compress/codec:fake/level:1/payload:az/record_bytes:100/batch_bytes:65536",
    "Fake/loop/n:2/real_time",
    /* Listed only with KBENCH_BOOTSTRAP set: a live row, for the cluster warm-up. */
    "Produce/fake/real_time",
};

static volatile unsigned long sink;

/* Set to 1 by a test: every benchmark fails its checks, as kbench reports it
 * (error_occurred in the JSON, exit status 1 at the end). */
static const int fake_error = 0;

/* noinline: a differential profile (bench-commits --profile) must see it by name. */
__attribute__((noinline)) static void work(long iterations, int scale) {
  for (long i = 0; i < iterations; i++)
    for (long j = 0; j < (long)COST * 50 * scale; j++) sink += (unsigned long)j ^ (unsigned long)i;
}

/* The scripts read what metrics mean from --describe=json: the fake answers with the real
 * kbench's description, copied beside its sources by the test that builds it. */
static int describe(void) {
#ifdef FAKE_DESCRIBE
  FILE* f = fopen(FAKE_DESCRIBE, "r");
  if (f) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) fwrite(buf, 1, n, stdout);
    fclose(f);
    return 0;
  }
#endif
  fprintf(stderr, "fake kbench: no description beside its sources\n");
  return 1;
}

int main(int argc, char** argv) {
  const char *filter = ".", *out = NULL;
  int list = 0;
  const char* mock = "embedded";
  const char* scale_env = getenv("KBENCH_FAKE_SCALE");
  double scale = scale_env ? atof(scale_env) / 100.0 : 1.0;
  for (int i = 1; i < argc; i++) {
    if (!strncmp(argv[i], "--benchmark_filter=", 19))
      filter = argv[i] + 19;
    else if (!strncmp(argv[i], "--benchmark_out=", 16))
      out = argv[i] + 16;
    else if (!strncmp(argv[i], "--benchmark_list_tests", 22))
      list = 1;
    else if (!strcmp(argv[i], "--describe=json"))
      return describe();
    else if (!strncmp(argv[i], "--fake-scale=", 13))
      scale = atof(argv[i] + 13) / 100.0;
    /* Recorded as mock_cluster, as kbench's context says which mock ran. */
    else if (!strncmp(argv[i], "--mock=", 7))
      mock = argv[i] + 7;
    else if (!strncmp(argv[i], "--benchmark_", 12))
      continue;
    /* scripts/bench alternates this across processes; the fake has no references. */
    else if (!strcmp(argv[i], "--references-last"))
      continue;
    /* The cluster warm-up's short windows. */
    else if (!strncmp(argv[i], "--window-seconds=", 17) ||
             !strncmp(argv[i], "--warmup-seconds=", 17))
      continue;
    else {
      fprintf(stderr, "fake kbench: unknown argument %s\n", argv[i]);
      return 1;
    }
  }
  regex_t re;
  if (regcomp(&re, filter, REG_EXTENDED | REG_NOSUB)) {
    fprintf(stderr, "bad filter\n");
    return 1;
  }
  const char* fixed = getenv("KBENCH_FIXED_ITERATIONS");
  long iterations = fixed ? atol(fixed) : 50;
  const char* source = getenv("KBENCH_LIBRDKAFKA_SOURCE");
  const char* ld_path = getenv("LD_LIBRARY_PATH");
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  srand((unsigned)(ts.tv_nsec ^ getpid()));
  /* The commit of the checkout the binary was built in (build/kbench: its parent), as
   * the real kbench records it, so that results can go into scripts/history. */
  char sha[64] = "unknown", exe[4096] = {0}, cmd[4300];
  if (readlink("/proc/self/exe", exe, sizeof exe - 1) > 0) {
    char* slash = strrchr(exe, '/');
    if (slash) *slash = 0;
    snprintf(cmd, sizeof cmd, "git -C '%s/..' rev-parse HEAD 2>/dev/null", exe);
    FILE* g = popen(cmd, "r");
    if (g) {
      if (fscanf(g, "%63s", sha) != 1) strcpy(sha, "unknown");
      pclose(g);
    }
  }
  FILE* f = NULL;
  if (out && !list) {
    f = fopen(out, "w");
    if (!f) {
      perror(out);
      return 1;
    }
    fprintf(f,
            "{\n  \"context\": {\"host_name\": \"fake\", \"num_cpus\": 2, \"target\": \"none\","
            " \"build_type\": \"Release\", \"cpu_model\": \"fake\", \"git_sha\": \"%s\","
            " \"git_dirty\": \"false\", \"kbench_version\": \"fake\", \"cost\": %d,"
            " \"mock_cluster\": \"%s\", \"ld_library_path\": \"%s\"%s%s%s},\n"
            "  \"benchmarks\": [\n",
            sha, COST, mock, ld_path ? ld_path : "",
            source && *source ? ", \"librdkafka_source\": \"" : "", source && *source ? source : "",
            source && *source ? "\"" : "");
  }
  int first = 1;
  const char* bootstrap = getenv("KBENCH_BOOTSTRAP");
  const int live = bootstrap && *bootstrap;
  for (size_t b = 0; b < sizeof names / sizeof *names; b++) {
    char name[512];
    const size_t len = strlen(names[b]), suffix = strlen("/real_time");
    if (fixed && len > suffix && !strcmp(names[b] + len - suffix, "/real_time"))
      snprintf(name, sizeof name, "%.*s/iterations:%ld/real_time", (int)(len - suffix), names[b],
               iterations);
    else if (fixed)
      snprintf(name, sizeof name, "%s/iterations:%ld", names[b], iterations);
    else
      snprintf(name, sizeof name, "%s", names[b]);
    if (regexec(&re, name, 0, NULL, 0)) continue;
    if (!live && !strncmp(names[b], "Produce/", 8)) continue;
    if (list) {
      printf("%s\n", name);
      continue;
    }
    work(iterations, (int)b + 1);
    double t = scale * COST * 1000.0 * (b + 1) * (1.0 + (rand() % 1000) / 100000.0);
    if (f) {
      fprintf(
          f,
          "%s    {\"name\": \"%s\", \"run_name\": \"%s\", \"run_type\": \"iteration\","
          " \"repetitions\": 1, \"repetition_index\": 0, \"threads\": 1,"
          " \"iterations\": %ld, \"real_time\": %f, \"cpu_time\": %f,"
          " \"time_unit\": \"ns\", \"items_per_second\": %f%s}",
          first ? "" : ",\n", name, name, iterations, t, t, 1e9 / t,
          fake_error ? ", \"error_occurred\": true, \"error_message\": \"fake check failed\"" : "");
      first = 0;
    }
    printf("%-80s %12.0f ns\n", name, t);
  }
  if (f) {
    fprintf(f, "\n  ]\n}\n");
    fclose(f);
  }
  regfree(&re);
  return fake_error ? 1 : 0;
}
