/* Many sessions on one bundle in parallel threads, built with
 * -fsanitize=thread (tests/stress/CMakeLists.txt): any data race in the
 * runtime (bundle sharing, sessions, thread pools, CRC table and libsodium
 * initialization, the per-thread error message) is reported by TSan and
 * fails the test.
 *
 * usage: stress_sessions BUNDLE PUBKEY_FILE
 *   1. eight threads open the (signed) bundle at once, each with the public
 *      key, and fail to open a corrupt copy (error messages per thread);
 *   2. one shared bundle; eight threads each create a session (1 to 3 pool
 *      threads), run it on their own inputs many times, compare the outputs
 *      with a reference computed alone beforehand, and release it, again and
 *      again. */
#define _DEFAULT_SOURCE 1
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/ingot.h"

#define THREADS 8
#define ROUNDS 16
#define RUNS 16

static ingot_bundle_t* g_bundle;
static uint8_t* g_file;
static size_t g_size;
static uint8_t g_key[INGOT_PUBLIC_KEY_BYTES];
static float* g_reference[THREADS]; /* output 0 for thread t's inputs */
static int g_failed;                /* written only under g_lock */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

static void fail(const char* what, int thread) {
  pthread_mutex_lock(&g_lock);
  fprintf(stderr, "FAIL thread %d: %s: %s\n", thread, what, ingot_last_error());
  g_failed = 1;
  pthread_mutex_unlock(&g_lock);
}

static int read_file(const char* path, uint8_t** out, size_t* out_size) {
  FILE* f = fopen(path, "rb");
  if (!f) return 0;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  *out = malloc((size_t)n + 1);
  *out_size = fread(*out, 1, (size_t)n, f);
  fclose(f);
  return *out_size == (size_t)n;
}

static int read_public_key(const char* path) {
  uint8_t* text;
  size_t n;
  if (!read_file(path, &text, &n)) return 0;
  const char* hex = memchr(text, ' ', n);
  if (!hex || (size_t)(hex + 1 - (const char*)text) + 64 > n) return 0;
  for (int i = 0; i < 32; ++i) {
    unsigned v;
    if (sscanf(hex + 1 + 2 * i, "%2x", &v) != 1) return 0;
    g_key[i] = (uint8_t)v;
  }
  free(text);
  return 1;
}

static void fill_inputs(ingot_session_t* s, int seed) {
  for (uint32_t i = 0; i < ingot_bundle_input_count(g_bundle); ++i) {
    ingot_tensor_info_t info;
    ingot_bundle_input_info(g_bundle, i, &info);
    uint8_t* p = ingot_session_input_data(s, i);
    if (info.dtype == INGOT_DTYPE_F32) {
      for (size_t k = 0; k < info.bytes / 4; ++k)
        ((float*)p)[k] = (float)((k * 7 + (size_t)seed * 13) % 17) / 17.0f;
    } else {
      memset(p, seed, info.bytes);
    }
  }
}

static void* open_worker(void* arg) {
  int t = (int)(intptr_t)arg;
  ingot_bundle_options_t o;
  memset(&o, 0, sizeof o);
  o.signature_public_key = g_key;
  for (int r = 0; r < 3; ++r) {
    ingot_bundle_t* b = NULL;
    if (ingot_bundle_open_memory(g_file, g_size, &o, &b) != INGOT_OK) fail("open", t);
    ingot_bundle_release(b);
    /* A corrupt copy: each thread's error message is its own. */
    uint8_t* copy = malloc(g_size);
    memcpy(copy, g_file, g_size);
    copy[g_size / 2] ^= 1;
    if (ingot_bundle_open_memory(copy, g_size, &o, &b) == INGOT_OK || b) fail("corrupt copy opened", t);
    if (strstr(ingot_last_error(), "bundle:") == NULL) fail("no message for the corrupt copy", t);
    free(copy);
  }
  return NULL;
}

static void* session_worker(void* arg) {
  int t = (int)(intptr_t)arg;
  ingot_tensor_info_t out;
  ingot_bundle_output_info(g_bundle, 0, &out);
  for (int round = 0; round < ROUNDS; ++round) {
    ingot_session_options_t so;
    memset(&so, 0, sizeof so);
    so.threads = 1 + (uint32_t)((t + round) % 3);
    ingot_session_t* s = NULL;
    if (ingot_session_create(g_bundle, &so, &s) != INGOT_OK) {
      fail("session_create", t);
      return NULL;
    }
    for (int run = 0; run < RUNS; ++run) {
      fill_inputs(s, t);
      if (ingot_session_run(s) != INGOT_OK) fail("run", t);
      const float* y = ingot_session_output_data(s, 0);
      for (size_t k = 0; k < out.bytes / 4; ++k) {
        float want = g_reference[t][k];
        if (fabsf(y[k] - want) > 1e-5f * (1.0f + fabsf(want))) {
          fail("output differs from the reference", t);
          break;
        }
      }
    }
    ingot_session_release(s);
  }
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: stress_sessions BUNDLE PUBKEY_FILE\n");
    return 2;
  }
  if (!read_file(argv[1], &g_file, &g_size) || !read_public_key(argv[2])) {
    fprintf(stderr, "cannot read %s or %s\n", argv[1], argv[2]);
    return 1;
  }
  pthread_t threads[THREADS];
  for (int t = 0; t < THREADS; ++t) pthread_create(&threads[t], NULL, open_worker, (void*)(intptr_t)t);
  for (int t = 0; t < THREADS; ++t) pthread_join(threads[t], NULL);

  ingot_bundle_options_t o;
  memset(&o, 0, sizeof o);
  o.signature_public_key = g_key;
  if (ingot_bundle_open_memory(g_file, g_size, &o, &g_bundle) != INGOT_OK) {
    fprintf(stderr, "open: %s\n", ingot_last_error());
    return 1;
  }
  ingot_tensor_info_t out;
  if (ingot_bundle_output_count(g_bundle) == 0 || ingot_bundle_output_info(g_bundle, 0, &out) != INGOT_OK ||
      out.dtype != INGOT_DTYPE_F32) {
    fprintf(stderr, "the stress bundle needs a float32 output\n");
    return 1;
  }
  /* References, one thread, one session. */
  ingot_session_options_t so;
  memset(&so, 0, sizeof so);
  so.threads = 1;
  ingot_session_t* s = NULL;
  if (ingot_session_create(g_bundle, &so, &s) != INGOT_OK) return 1;
  for (int t = 0; t < THREADS; ++t) {
    fill_inputs(s, t);
    if (ingot_session_run(s) != INGOT_OK) return 1;
    g_reference[t] = malloc(out.bytes);
    memcpy(g_reference[t], ingot_session_output_data(s, 0), out.bytes);
  }
  ingot_session_release(s);

  for (int t = 0; t < THREADS; ++t) pthread_create(&threads[t], NULL, session_worker, (void*)(intptr_t)t);
  for (int t = 0; t < THREADS; ++t) pthread_join(threads[t], NULL);
  ingot_bundle_release(g_bundle);
  for (int t = 0; t < THREADS; ++t) free(g_reference[t]);
  free(g_file);
  if (g_failed) return 1;
  printf("stress: %d threads x %d sessions x %d runs on one bundle: ok\n", THREADS, ROUNDS, RUNS);
  return 0;
}
