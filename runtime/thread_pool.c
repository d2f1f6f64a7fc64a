/* A fixed pool of worker threads for the kernels' parallel loops.
 *
 * A parallel_for writes the job (body, context, count), sets `pending` to
 * the number of workers and bumps `generation` (release). Each worker waits
 * for a new generation, spinning a short while (when the pool does not
 * oversubscribe the CPUs) before it sleeps on a condition variable, runs its contiguous chunk and decrements `pending`.
 * The caller runs chunk 0 itself, then waits (spinning, then yielding) until
 * `pending` is zero. Nothing is allocated per call.
 *
 * Lost wake-ups: a worker about to sleep takes the mutex, counts itself in
 * `sleepers` and re-reads `generation` before waiting; the caller bumps
 * `generation` first and then, if `sleepers` is non-zero, broadcasts under
 * the mutex. Both sides use sequentially consistent atomics, so one of them
 * sees the other.
 *
 * Bodies that call parallel_for again (nested loops) run inline. */
#define _DEFAULT_SOURCE 1
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "runtime_internal.h"

/* Iterations a waiting worker polls (one load each) before it sleeps. */
#define POOL_SPIN_ITERATIONS 200000

struct ingot_thread_pool_t {
  ingot_allocator_t allocator;
  uint32_t thread_count; /* including the caller */
  uint32_t worker_count; /* threads started */
  pthread_t* workers;
  pthread_mutex_t mutex;
  pthread_cond_t wake;
  pthread_cond_t registered;
  uint32_t arrivals;     /* workers that took their index (under mutex) */
  int spin;              /* polls before sleeping; 0 when oversubscribed */
  atomic_uint_fast64_t generation;
  atomic_uint pending;
  atomic_uint sleepers;
  atomic_int shutdown;
  /* The current job; written by the caller before generation is bumped. */
  ingot_parallel_body_fn_t body;
  void* context;
  int64_t count;
};

static _Thread_local int t_inside_pool;

/* One poll's pause. Not PAUSE on x86: under KVM a loop of PAUSE can make
 * the hypervisor's pause-loop exiting deschedule the vCPU, and the worker
 * then answers the next parallel loop late. (On the 2-vCPU development VM the
 * 2-thread latency also jumps between two levels on its own, so no figure
 * here is credited to this choice.) */
static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  atomic_signal_fence(memory_order_seq_cst);
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* Chunk i of n over [0, count): the first count % n chunks get one extra. */
static void chunk_range(int64_t count, uint32_t n, uint32_t i, int64_t* begin, int64_t* end) {
  int64_t base = count / n, rem = count % n;
  *begin = (int64_t)i * base + ((int64_t)i < rem ? (int64_t)i : rem);
  *end = *begin + base + ((int64_t)i < rem ? 1 : 0);
}

/* Waits for a generation other than `seen`; returns it. */
static uint64_t wait_generation(ingot_thread_pool_t* pool, uint64_t seen) {
  for (int i = 0; i < pool->spin; ++i) {
    uint64_t g = atomic_load(&pool->generation);
    if (g != seen) return g;
    cpu_relax();
  }
  pthread_mutex_lock(&pool->mutex);
  atomic_fetch_add(&pool->sleepers, 1);
  uint64_t g;
  while ((g = atomic_load(&pool->generation)) == seen) pthread_cond_wait(&pool->wake, &pool->mutex);
  atomic_fetch_sub(&pool->sleepers, 1);
  pthread_mutex_unlock(&pool->mutex);
  return g;
}

static void* worker_main(void* raw) {
  ingot_thread_pool_t* pool = (ingot_thread_pool_t*)raw;
  t_inside_pool = 1;
  /* A worker's chunk index is its arrival order (1..); create() waits until
   * every worker has arrived before the pool is used. */
  pthread_mutex_lock(&pool->mutex);
  uint32_t index = ++pool->arrivals;
  uint64_t seen = atomic_load(&pool->generation);
  pthread_cond_signal(&pool->registered);
  pthread_mutex_unlock(&pool->mutex);
  /* shutdown is stored before the generation bump, so a worker that
   * registered after the bump sees it here instead of waiting forever. */
  while (!atomic_load(&pool->shutdown)) {
    seen = wait_generation(pool, seen);
    if (atomic_load(&pool->shutdown)) break;
    int64_t begin, end;
    chunk_range(pool->count, pool->thread_count, index, &begin, &end);
    if (begin < end) pool->body(pool->context, begin, end);
    atomic_fetch_sub(&pool->pending, 1);
  }
  return NULL;
}

static void bump_generation(ingot_thread_pool_t* pool) {
  atomic_fetch_add(&pool->generation, 1);
  if (atomic_load(&pool->sleepers) != 0) {
    pthread_mutex_lock(&pool->mutex);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->mutex);
  }
}

ingot_status_t ingot_thread_pool_create(uint32_t threads, ingot_allocator_t allocator,
                                        ingot_thread_pool_t** out_pool) {
  *out_pool = NULL;
  if (threads == 0 || threads > INGOT_SESSION_THREADS_MAX)
    return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "thread pool: %u threads", threads);
  ingot_thread_pool_t* pool = (ingot_thread_pool_t*)ingot_rt_alloc(allocator, sizeof *pool);
  if (!pool) return ingot_rt_fail(INGOT_ERROR_OUT_OF_MEMORY, "thread pool: out of memory");
  memset(pool, 0, sizeof *pool);
  pool->allocator = allocator;
  pool->thread_count = threads;
  /* Spinning only pays when every thread has a CPU of its own. */
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  pool->spin = (cpus > 0 && threads <= (uint32_t)cpus) ? POOL_SPIN_ITERATIONS : 0;
  atomic_init(&pool->generation, 0);
  atomic_init(&pool->pending, 0);
  atomic_init(&pool->sleepers, 0);
  atomic_init(&pool->shutdown, 0);
  if (threads > 1) {
    pool->workers = (pthread_t*)ingot_rt_alloc(allocator, sizeof(pthread_t) * (threads - 1));
    if (!pool->workers) {
      ingot_rt_free(allocator, pool);
      return ingot_rt_fail(INGOT_ERROR_OUT_OF_MEMORY, "thread pool: out of memory");
    }
  }
  pthread_mutex_init(&pool->mutex, NULL);
  pthread_cond_init(&pool->wake, NULL);
  pthread_cond_init(&pool->registered, NULL);
  for (uint32_t i = 0; i + 1 < threads; ++i) {
    if (pthread_create(&pool->workers[i], NULL, worker_main, pool) != 0) {
      ingot_thread_pool_release(pool);
      return ingot_rt_fail(INGOT_ERROR_OUT_OF_MEMORY, "thread pool: cannot start thread %u", i + 1);
    }
    pool->worker_count++;
  }
  pthread_mutex_lock(&pool->mutex);
  while (pool->arrivals < pool->worker_count) pthread_cond_wait(&pool->registered, &pool->mutex);
  pthread_mutex_unlock(&pool->mutex);
  *out_pool = pool;
  return INGOT_OK;
}

uint32_t ingot_thread_pool_thread_count(const ingot_thread_pool_t* pool) {
  return pool->thread_count;
}

void ingot_thread_pool_parallel_for(void* raw, int64_t count, ingot_parallel_body_fn_t body,
                                    void* context) {
  ingot_thread_pool_t* pool = (ingot_thread_pool_t*)raw;
  if (count <= 0) return;
  if (!pool || pool->worker_count == 0 || count == 1 || t_inside_pool) {
    body(context, 0, count);
    return;
  }
  pool->body = body;
  pool->context = context;
  pool->count = count;
  atomic_store(&pool->pending, pool->worker_count);
  bump_generation(pool);

  int64_t begin, end;
  chunk_range(count, pool->thread_count, 0, &begin, &end);
  t_inside_pool = 1;
  if (begin < end) body(context, begin, end);
  t_inside_pool = 0;

  for (int i = 0; atomic_load(&pool->pending) != 0; ++i) {
    if (i < pool->spin) cpu_relax();
    else sched_yield();
  }
}

void ingot_thread_pool_release(ingot_thread_pool_t* pool) {
  if (!pool) return;
  if (pool->worker_count) {
    atomic_store(&pool->shutdown, 1);
    bump_generation(pool);
    for (uint32_t i = 0; i < pool->worker_count; ++i) pthread_join(pool->workers[i], NULL);
  }
  pthread_cond_destroy(&pool->registered);
  pthread_cond_destroy(&pool->wake);
  pthread_mutex_destroy(&pool->mutex);
  ingot_rt_free(pool->allocator, pool->workers);
  ingot_rt_free(pool->allocator, pool);
}

/* ---- Shared pools (ingot_threads_t, ingot.h) ---------------------------------
 * One parallel loop at a time: `busy` is taken with an atomic exchange; a
 * loop that finds it taken (another session's loop is on the pool) runs
 * inline on its own thread instead of waiting. So sessions running at once
 * never block one another, each makes progress on its own thread, and the
 * pool's workers serve whichever loop got them. A nested loop from inside a
 * body finds the pool busy (or, on a worker, t_inside_pool) and runs inline,
 * as with a private pool. */
struct ingot_threads_t {
  ingot_allocator_t allocator;
  ingot_thread_pool_t* pool;
  atomic_int busy;
};

uint32_t ingot_rt_online_cpus(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1) return 1;
  return n > (long)INGOT_SESSION_THREADS_MAX ? INGOT_SESSION_THREADS_MAX : (uint32_t)n;
}

ingot_status_t ingot_threads_create(uint32_t count, ingot_allocator_t allocator, ingot_threads_t** out_threads) {
  if (!out_threads) return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "threads: out_threads is NULL");
  *out_threads = NULL;
  if (!allocator.fn) allocator = ingot_allocator_system();
  if (count == 0) count = ingot_rt_online_cpus();
  if (count > INGOT_SESSION_THREADS_MAX)
    return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "threads: %u threads (at most %u)", count,
                         INGOT_SESSION_THREADS_MAX);
  ingot_threads_t* t = (ingot_threads_t*)ingot_rt_alloc(allocator, sizeof *t);
  if (!t) return ingot_rt_fail(INGOT_ERROR_OUT_OF_MEMORY, "threads: out of memory");
  memset(t, 0, sizeof *t);
  t->allocator = allocator;
  atomic_init(&t->busy, 0);
  ingot_status_t status = ingot_thread_pool_create(count, allocator, &t->pool);
  if (status != INGOT_OK) {
    ingot_rt_free(allocator, t);
    return status;
  }
  *out_threads = t;
  return INGOT_OK;
}

void ingot_threads_release(ingot_threads_t* t) {
  if (!t) return;
  ingot_thread_pool_release(t->pool);
  ingot_rt_free(t->allocator, t);
}

uint32_t ingot_threads_count(const ingot_threads_t* t) { return t ? t->pool->thread_count : 0; }

void ingot_rt_threads_parallel_for(void* raw, int64_t count, ingot_parallel_body_fn_t body, void* context) {
  ingot_threads_t* t = (ingot_threads_t*)raw;
  if (count <= 0) return;
  if (t_inside_pool || atomic_load_explicit(&t->busy, memory_order_relaxed) ||
      atomic_exchange_explicit(&t->busy, 1, memory_order_acquire)) {
    body(context, 0, count);
    return;
  }
  ingot_thread_pool_parallel_for(t->pool, count, body, context);
  atomic_store_explicit(&t->busy, 0, memory_order_release);
}
