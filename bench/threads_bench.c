/* Throughput of several sessions run at once, each in its own application
 * thread, with three ways of giving them threads (runtime API 0.4):
 *   private-N  each session a pool of its own of N threads (the default);
 *   private-1  each session one thread (no pool workers);
 *   shared-N   one ingot_threads_t of N threads shared by all sessions.
 * Prints one line per mode: inferences per second over all sessions.
 * Inputs are zeros (every bundle accepts them: ids 0, images of 0).
 *
 * usage: ingot_threads_bench BUNDLE [--sessions S] [--threads N] [--seconds T] */
#define _DEFAULT_SOURCE 1
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/ingot.h"

#define MAX_SESSIONS 64

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct job_t {
  ingot_session_t* session;
  double deadline;
  long runs;
  ingot_status_t status;
} job_t;

static atomic_int g_go;

static void* job_main(void* raw) {
  job_t* j = raw;
  while (!atomic_load(&g_go)) {
  }
  while (now_s() < j->deadline) {
    ingot_status_t s = ingot_session_run(j->session);
    if (s != INGOT_OK) {
      j->status = s;
      break;
    }
    j->runs++;
  }
  return NULL;
}

/* Runs `count` sessions made with `options` for `seconds`; inferences/s. */
static double measure(ingot_bundle_t* b, const ingot_session_options_t* options, int count, double seconds) {
  ingot_session_t* s[MAX_SESSIONS];
  job_t jobs[MAX_SESSIONS];
  pthread_t th[MAX_SESSIONS];
  for (int i = 0; i < count; ++i) {
    if (ingot_session_create(b, options, &s[i]) != INGOT_OK) {
      fprintf(stderr, "session: %s\n", ingot_last_error());
      exit(1);
    }
    for (uint32_t k = 0; k < ingot_bundle_input_count(b); ++k) {
      ingot_tensor_info_t info;
      ingot_bundle_input_info(b, k, &info);
      memset(ingot_session_input_data(s[i], k), 0, info.bytes);
    }
    if (ingot_session_run(s[i]) != INGOT_OK) { /* warm up */
      fprintf(stderr, "run: %s\n", ingot_last_error());
      exit(1);
    }
  }
  atomic_store(&g_go, 0);
  double start = now_s();
  for (int i = 0; i < count; ++i) {
    jobs[i] = (job_t){s[i], start + seconds, 0, INGOT_OK};
    pthread_create(&th[i], NULL, job_main, &jobs[i]);
  }
  start = now_s();
  for (int i = 0; i < count; ++i) jobs[i].deadline = start + seconds;
  atomic_store(&g_go, 1);
  long runs = 0;
  for (int i = 0; i < count; ++i) {
    pthread_join(th[i], NULL);
    if (jobs[i].status != INGOT_OK) fprintf(stderr, "session %d: %s\n", i, ingot_status_name(jobs[i].status));
    runs += jobs[i].runs;
  }
  double elapsed = now_s() - start;
  for (int i = 0; i < count; ++i) ingot_session_release(s[i]);
  return (double)runs / elapsed;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s BUNDLE [--sessions S] [--threads N] [--seconds T]\n", argv[0]);
    return 2;
  }
  int sessions = 4, threads = 2;
  double seconds = 5.0;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--sessions")) sessions = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--seconds")) seconds = atof(argv[i + 1]);
  }
  if (sessions < 1 || sessions > MAX_SESSIONS || threads < 1 || seconds <= 0) return 2;
  ingot_bundle_t* b = NULL;
  if (ingot_bundle_open_file(argv[1], NULL, &b) != INGOT_OK) {
    fprintf(stderr, "open: %s\n", ingot_last_error());
    return 1;
  }
  printf("cpu: %s; %d sessions, each in its own thread, %.1f s a mode\n", ingot_cpu_model(), sessions, seconds);
  ingot_session_options_t o;
  memset(&o, 0, sizeof o);
  o.threads = (uint32_t)threads;
  printf("private-%d  %8.1f inferences/s\n", threads, measure(b, &o, sessions, seconds));
  o.threads = 1;
  printf("private-1  %8.1f inferences/s\n", measure(b, &o, sessions, seconds));
  ingot_threads_t* pool = NULL;
  if (ingot_threads_create((uint32_t)threads, (ingot_allocator_t){0}, &pool) != INGOT_OK) return 1;
  memset(&o, 0, sizeof o);
  o.shared_threads = pool;
  printf("shared-%d   %8.1f inferences/s\n", threads, measure(b, &o, sessions, seconds));
  ingot_threads_release(pool);
  ingot_bundle_release(b);
  return 0;
}
