/* Open-time and peak-memory probe for bench/open_bench.py: opens one bundle
 * the way an application would, creates a session, runs it once, and prints
 * one JSON line with the times and the process's memory figures
 * (/proc/self/status, KiB):
 *   rss_base   VmRSS before the open (the program itself)
 *   hwm_open   VmHWM after open + session create: peak while opening
 *   rss_steady VmRSS after one run: the steady state
 *   hwm_end    VmHWM at the end
 *
 * usage: ingot_open_bench BUNDLE [--read-file] [--threads N] */
#define _DEFAULT_SOURCE 1
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/ingot.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void vm(long* hwm, long* rss) {
  *hwm = *rss = -1;
  FILE* f = fopen("/proc/self/status", "r");
  if (!f) return;
  char line[256];
  while (fgets(line, sizeof line, f)) {
    sscanf(line, "VmHWM: %ld kB", hwm);
    sscanf(line, "VmRSS: %ld kB", rss);
  }
  fclose(f);
}

int main(int argc, char** argv) {
  const char* path = NULL;
  ingot_bundle_options_t options;
  memset(&options, 0, sizeof options);
  uint32_t threads = 1;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--read-file")) options.flags |= INGOT_BUNDLE_READ_FILE;
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = (uint32_t)atoi(argv[++i]);
    else if (!path && argv[i][0] != '-') path = argv[i];
    else {
      fprintf(stderr, "usage: %s BUNDLE [--read-file] [--threads N]\n", argv[0]);
      return 2;
    }
  }
  if (!path) {
    fprintf(stderr, "usage: %s BUNDLE [--read-file] [--threads N]\n", argv[0]);
    return 2;
  }
  long hwm0, rss_base;
  vm(&hwm0, &rss_base);
  double t0 = now_s();
  ingot_bundle_t* bundle = NULL;
  if (ingot_bundle_open_file(path, &options, &bundle) != INGOT_OK) {
    fprintf(stderr, "open: %s\n", ingot_last_error());
    return 1;
  }
  double t1 = now_s();
  ingot_session_options_t so = {{0}, threads, NULL, 0, NULL, NULL};
  ingot_session_t* session = NULL;
  if (ingot_session_create(bundle, &so, &session) != INGOT_OK) {
    fprintf(stderr, "session: %s\n", ingot_last_error());
    return 1;
  }
  double t2 = now_s();
  long hwm_open, rss_open;
  vm(&hwm_open, &rss_open);
  for (uint32_t i = 0; i < ingot_bundle_input_count(bundle); ++i) {
    ingot_tensor_info_t info;
    ingot_bundle_input_info(bundle, i, &info);
    memset(ingot_session_input_data(session, i), 0, info.bytes); /* zeros: valid ids, masks, images */
  }
  if (ingot_session_run(session) != INGOT_OK) {
    fprintf(stderr, "run: %s\n", ingot_last_error());
    return 1;
  }
  double t3 = now_s();
  long hwm_end, rss_steady;
  vm(&hwm_end, &rss_steady);
  printf("{\"open_s\": %.6f, \"session_s\": %.6f, \"run_s\": %.6f, \"rss_base\": %ld, \"hwm_open\": %ld, "
         "\"rss_open\": %ld, \"rss_steady\": %ld, \"hwm_end\": %ld, \"in_place\": %d, \"arena\": %llu}\n",
         t1 - t0, t2 - t1, t3 - t2, rss_base, hwm_open, rss_open, rss_steady, hwm_end,
         ingot_bundle_weights_in_place(bundle), (unsigned long long)ingot_bundle_arena_bytes(bundle));
  ingot_session_release(session);
  ingot_bundle_release(bundle);
  return 0;
}
