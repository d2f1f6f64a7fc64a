/* Memory pools: arenas for sessions within a byte budget (runtime/ingot.h).
 *
 * A pool is one of two kinds:
 *   - budget: each arena is one allocation from the pool's allocator, made
 *     when the arena is taken and freed when it is given back; the pool only
 *     counts bytes against its budget;
 *   - buffer: arenas are ranges of the caller's buffer, placed first fit
 *     among the ranges in use (kept sorted by offset in a fixed table of
 *     INGOT_POOL_MAX_ARENAS, so taking and giving back allocate nothing).
 * Either way an arena is counted at its size rounded up to 64 bytes, and
 * used / high-water figures are those counted sizes. The arena record itself
 * (ingot_arena_t) comes from the pool's allocator.
 *
 * An arena is reference-counted: ingot_pool_arena_create returns it with one
 * reference, each session that uses it holds one more; the memory goes back
 * when the last is dropped. Sessions sharing an arena mark it busy for the
 * length of a run (an atomic flag), so two runs at once are refused instead
 * of corrupting each other. */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "runtime_internal.h"

#define POOL_ALIGN 64u

typedef struct pool_range_t {
  uint64_t offset, bytes;
} pool_range_t;

struct ingot_pool_t {
  ingot_allocator_t allocator;
  pthread_mutex_t mutex;
  uint64_t budget;
  uint64_t used;
  uint64_t high_water;
  uint8_t* buffer;          /* buffer kind: the caller's; NULL for the budget kind */
  uint32_t range_count;     /* buffer kind: ranges in use, sorted by offset */
  pool_range_t ranges[INGOT_POOL_MAX_ARENAS];
};

struct ingot_arena_t {
  ingot_pool_t* pool;
  uint8_t* base;
  uint64_t bytes;           /* as counted (rounded up to 64) */
  atomic_uint refs;
  atomic_flag busy;         /* a session of this arena is running */
};

static uint64_t round_up(uint64_t bytes) {
  if (bytes == 0) bytes = 1;
  return (bytes + POOL_ALIGN - 1) & ~(uint64_t)(POOL_ALIGN - 1);
}

static ingot_status_t pool_new(ingot_allocator_t allocator, uint64_t budget, uint8_t* buffer,
                               ingot_pool_t** out_pool) {
  if (!allocator.fn) allocator = ingot_allocator_system();
  ingot_pool_t* p = (ingot_pool_t*)ingot_rt_alloc(allocator, sizeof *p);
  if (!p) return ingot_rt_fail(INGOT_ERROR_OUT_OF_MEMORY, "pool: out of memory");
  memset(p, 0, sizeof *p);
  if (pthread_mutex_init(&p->mutex, NULL) != 0) {
    ingot_rt_free(allocator, p);
    return ingot_rt_fail(INGOT_ERROR_OUT_OF_MEMORY, "pool: cannot create a mutex");
  }
  p->allocator = allocator;
  p->budget = budget;
  p->buffer = buffer;
  *out_pool = p;
  return INGOT_OK;
}

ingot_status_t ingot_pool_create(uint64_t budget_bytes, ingot_allocator_t allocator, ingot_pool_t** out_pool) {
  if (!out_pool) return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "pool: out_pool is NULL");
  *out_pool = NULL;
  return pool_new(allocator, budget_bytes, NULL, out_pool);
}

ingot_status_t ingot_pool_create_in(void* buffer, uint64_t bytes, ingot_allocator_t allocator,
                                    ingot_pool_t** out_pool) {
  if (!out_pool) return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "pool: out_pool is NULL");
  *out_pool = NULL;
  if (!buffer || bytes == 0)
    return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "pool: no buffer (%" PRIu64 " bytes at %p)", bytes, buffer);
  if ((uintptr_t)buffer % POOL_ALIGN != 0)
    return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "pool: the buffer at %p is not 64-byte aligned", buffer);
  /* Only whole 64-byte blocks are handed out. */
  return pool_new(allocator, bytes & ~(uint64_t)(POOL_ALIGN - 1), (uint8_t*)buffer, out_pool);
}

void ingot_pool_release(ingot_pool_t* pool) {
  if (!pool) return;
  pthread_mutex_destroy(&pool->mutex);
  ingot_rt_free(pool->allocator, pool);
}

static uint64_t pool_read(const ingot_pool_t* pool, const uint64_t* field) {
  ingot_pool_t* p = (ingot_pool_t*)pool; /* the mutex only; nothing else changes */
  pthread_mutex_lock(&p->mutex);
  uint64_t v = *field;
  pthread_mutex_unlock(&p->mutex);
  return v;
}

uint64_t ingot_pool_budget_bytes(const ingot_pool_t* pool) { return pool ? pool->budget : 0; }
uint64_t ingot_pool_used_bytes(const ingot_pool_t* pool) { return pool ? pool_read(pool, &pool->used) : 0; }
uint64_t ingot_pool_high_water_bytes(const ingot_pool_t* pool) {
  return pool ? pool_read(pool, &pool->high_water) : 0;
}

/* Buffer kind: the offset of the first free range of `bytes`, or UINT64_MAX.
 * Sets *out_slot to where its record goes in the sorted table. */
static uint64_t buffer_fit(const ingot_pool_t* p, uint64_t bytes, uint32_t* out_slot) {
  uint64_t pos = 0;
  for (uint32_t i = 0; i <= p->range_count; ++i) {
    uint64_t end = i < p->range_count ? p->ranges[i].offset : p->budget;
    if (end >= pos && end - pos >= bytes) {
      *out_slot = i;
      return pos;
    }
    if (i < p->range_count) pos = p->ranges[i].offset + p->ranges[i].bytes;
  }
  return UINT64_MAX;
}

/* Takes `bytes` from the pool: its memory in *out_base. Under the mutex. */
static ingot_status_t pool_take_locked(ingot_pool_t* p, uint64_t bytes, uint8_t** out_base) {
  if (bytes > p->budget || p->used > p->budget - bytes)
    return ingot_rt_fail(INGOT_ERROR_LIMIT,
                         "pool: an arena of %" PRIu64 " bytes would exceed the budget (%" PRIu64
                         " of %" PRIu64 " bytes in use)", bytes, p->used, p->budget);
  if (!p->buffer) {
    if (bytes > SIZE_MAX) return ingot_rt_fail(INGOT_ERROR_LIMIT, "pool: %" PRIu64 " bytes do not fit in memory", bytes);
    *out_base = (uint8_t*)ingot_rt_alloc(p->allocator, (size_t)bytes);
    if (!*out_base)
      return ingot_rt_fail(INGOT_ERROR_OUT_OF_MEMORY, "pool: cannot allocate an arena of %" PRIu64 " bytes", bytes);
    if ((uintptr_t)*out_base % POOL_ALIGN != 0) {
      ingot_rt_free(p->allocator, *out_base);
      return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "pool: the allocator broke 64-byte alignment");
    }
  } else {
    if (p->range_count == INGOT_POOL_MAX_ARENAS)
      return ingot_rt_fail(INGOT_ERROR_LIMIT, "pool: %u arenas in use, the most a buffer pool holds",
                           INGOT_POOL_MAX_ARENAS);
    uint32_t slot = 0;
    uint64_t at = buffer_fit(p, bytes, &slot);
    if (at == UINT64_MAX)
      return ingot_rt_fail(INGOT_ERROR_LIMIT,
                           "pool: no free range of %" PRIu64 " bytes in the buffer (%" PRIu64 " of %" PRIu64
                           " bytes in use, fragmented)", bytes, p->used, p->budget);
    memmove(&p->ranges[slot + 1], &p->ranges[slot], sizeof(pool_range_t) * (p->range_count - slot));
    p->ranges[slot] = (pool_range_t){at, bytes};
    p->range_count++;
    *out_base = p->buffer + at;
  }
  p->used += bytes;
  if (p->used > p->high_water) p->high_water = p->used;
  return INGOT_OK;
}

static void pool_give_back(ingot_pool_t* p, uint8_t* base, uint64_t bytes) {
  pthread_mutex_lock(&p->mutex);
  if (!p->buffer) {
    ingot_rt_free(p->allocator, base);
  } else {
    uint64_t at = (uint64_t)(base - p->buffer);
    for (uint32_t i = 0; i < p->range_count; ++i)
      if (p->ranges[i].offset == at) {
        memmove(&p->ranges[i], &p->ranges[i + 1], sizeof(pool_range_t) * (p->range_count - i - 1));
        p->range_count--;
        break;
      }
  }
  p->used -= bytes;
  pthread_mutex_unlock(&p->mutex);
}

ingot_status_t ingot_rt_pool_take(ingot_pool_t* pool, uint64_t bytes, ingot_arena_t** out_arena) {
  *out_arena = NULL;
  ingot_arena_t* a = (ingot_arena_t*)ingot_rt_alloc(pool->allocator, sizeof *a);
  if (!a) return ingot_rt_fail(INGOT_ERROR_OUT_OF_MEMORY, "pool: out of memory");
  memset(a, 0, sizeof *a);
  a->pool = pool;
  a->bytes = round_up(bytes);
  atomic_init(&a->refs, 1u);
  atomic_flag_clear(&a->busy);
  pthread_mutex_lock(&pool->mutex);
  ingot_status_t status = pool_take_locked(pool, a->bytes, &a->base);
  pthread_mutex_unlock(&pool->mutex);
  if (status != INGOT_OK) {
    ingot_rt_free(pool->allocator, a);
    return status;
  }
  *out_arena = a;
  return INGOT_OK;
}

ingot_status_t ingot_pool_arena_create(ingot_pool_t* pool, const ingot_bundle_t* const* bundles, uint32_t count,
                                       ingot_arena_t** out_arena) {
  if (!out_arena) return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "pool: out_arena is NULL");
  *out_arena = NULL;
  if (!pool || !bundles || count == 0)
    return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "pool: an arena needs a pool and at least one bundle");
  uint64_t largest = 0;
  for (uint32_t i = 0; i < count; ++i) {
    if (!bundles[i]) return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "pool: bundle %u is NULL", i);
    if (bundles[i]->arena_bytes > largest) largest = bundles[i]->arena_bytes;
  }
  return ingot_rt_pool_take(pool, largest, out_arena);
}

void ingot_arena_release(ingot_arena_t* arena) {
  if (!arena) return;
  if (atomic_fetch_sub(&arena->refs, 1u) != 1u) return;
  ingot_pool_t* pool = arena->pool;
  pool_give_back(pool, arena->base, arena->bytes);
  ingot_rt_free(pool->allocator, arena);
}

uint64_t ingot_arena_bytes(const ingot_arena_t* arena) { return arena ? arena->bytes : 0; }

void ingot_rt_arena_retain(ingot_arena_t* arena) { atomic_fetch_add(&arena->refs, 1u); }
uint8_t* ingot_rt_arena_base(const ingot_arena_t* arena) { return arena->base; }
int ingot_rt_arena_enter(ingot_arena_t* arena) { return !atomic_flag_test_and_set(&arena->busy); }
void ingot_rt_arena_leave(ingot_arena_t* arena) { atomic_flag_clear(&arena->busy); }
