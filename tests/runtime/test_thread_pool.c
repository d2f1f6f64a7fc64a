/* Thread pool: parallel_for visits every index of [0, count) exactly once,
 * for several counts and thread counts, repeatedly, and nested calls run. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime_internal.h"

typedef struct visit_t {
  atomic_int* hits;
  atomic_int calls;
  void* pool;
} visit_t;

static void body(void* ctx, int64_t begin, int64_t end) {
  visit_t* v = (visit_t*)ctx;
  atomic_fetch_add(&v->calls, 1);
  for (int64_t i = begin; i < end; ++i) atomic_fetch_add(&v->hits[i], 1);
}

static void nested_inner(void* ctx, int64_t begin, int64_t end) {
  atomic_int* counter = (atomic_int*)ctx;
  atomic_fetch_add(counter, (int)(end - begin));
}

typedef struct nested_t {
  void* pool;
  atomic_int inner;
} nested_t;

static void nested_outer(void* ctx, int64_t begin, int64_t end) {
  nested_t* n = (nested_t*)ctx;
  for (int64_t i = begin; i < end; ++i) ingot_thread_pool_parallel_for(n->pool, 10, nested_inner, &n->inner);
}

int main(void) {
  static const uint32_t threads[] = {1, 2, 3, 4, 7, 16};
  static const int64_t counts[] = {0, 1, 2, 3, 5, 16, 17, 100, 1000, 4099};
  atomic_int* hits = malloc(sizeof(atomic_int) * 5000);
  int failures = 0;
  for (size_t ti = 0; ti < sizeof threads / sizeof threads[0]; ++ti) {
    ingot_thread_pool_t* pool = NULL;
    if (ingot_thread_pool_create(threads[ti], ingot_allocator_system(), &pool) != INGOT_OK) {
      fprintf(stderr, "create(%u): %s\n", threads[ti], ingot_last_error());
      return 1;
    }
    if (ingot_thread_pool_thread_count(pool) != threads[ti]) ++failures;
    for (int rep = 0; rep < 20; ++rep) {
      for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ++ci) {
        int64_t count = counts[ci];
        for (int64_t i = 0; i < count; ++i) atomic_init(&hits[i], 0);
        visit_t v = {hits, 0, pool};
        ingot_thread_pool_parallel_for(pool, count, body, &v);
        for (int64_t i = 0; i < count; ++i)
          if (atomic_load(&hits[i]) != 1) {
            fprintf(stderr, "threads %u count %lld: index %lld hit %d times\n", threads[ti],
                    (long long)count, (long long)i, atomic_load(&hits[i]));
            ++failures;
            break;
          }
        int64_t max_calls = count < (int64_t)threads[ti] ? count : (int64_t)threads[ti];
        if (atomic_load(&v.calls) > max_calls) {
          fprintf(stderr, "threads %u count %lld: %d chunks\n", threads[ti], (long long)count,
                  atomic_load(&v.calls));
          ++failures;
        }
      }
    }
    nested_t n = {pool, 0};
    ingot_thread_pool_parallel_for(pool, 50, nested_outer, &n);
    if (atomic_load(&n.inner) != 500) {
      fprintf(stderr, "threads %u: nested loops did %d of 500\n", threads[ti], atomic_load(&n.inner));
      ++failures;
    }
    ingot_thread_pool_release(pool);
  }
  ingot_thread_pool_t* pool = NULL;
  if (ingot_thread_pool_create(0, ingot_allocator_system(), &pool) != INGOT_ERROR_INVALID_ARGUMENT || pool) {
    fprintf(stderr, "create(0) was accepted\n");
    ++failures;
  }
  free(hits);
  if (failures) return 1;
  printf("thread pool: ok\n");
  return 0;
}
