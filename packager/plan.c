/* The static memory planner (see packager.h for the contract).
 *
 * Items are placed largest first (ties: earlier first_step, then lower index,
 * so the result is deterministic). For each item we collect the items already
 * placed whose live intervals overlap its own, sorted by offset, and choose
 * the smallest gap between them that fits (best fit); if none fits, the item
 * goes right after the highest of them. Sizes are rounded up to 64 bytes. */
#include <stdlib.h>

#include "packager/packager.h"

#define PLAN_ALIGN 64u

typedef struct plan_entry_t {
  uint32_t index;
  uint64_t size; /* aligned */
} plan_entry_t;

static int by_size_desc(const void* a, const void* b, const ingot_plan_item_t* items) {
  const plan_entry_t* x = (const plan_entry_t*)a;
  const plan_entry_t* y = (const plan_entry_t*)b;
  if (x->size != y->size) return x->size > y->size ? -1 : 1;
  uint32_t fx = items[x->index].first_step, fy = items[y->index].first_step;
  if (fx != fy) return fx < fy ? -1 : 1;
  return x->index < y->index ? -1 : (x->index > y->index);
}

/* qsort has no context argument in C11: a small stable merge sort. */
static void sort_entries(plan_entry_t* v, plan_entry_t* tmp, uint32_t n,
                         const ingot_plan_item_t* items) {
  if (n < 2) return;
  uint32_t mid = n / 2;
  sort_entries(v, tmp, mid, items);
  sort_entries(v + mid, tmp, n - mid, items);
  uint32_t i = 0, j = mid, k = 0;
  while (i < mid && j < n) tmp[k++] = by_size_desc(&v[j], &v[i], items) < 0 ? v[j++] : v[i++];
  while (i < mid) tmp[k++] = v[i++];
  while (j < n) tmp[k++] = v[j++];
  for (k = 0; k < n; ++k) v[k] = tmp[k];
}

typedef struct placed_t {
  uint64_t begin, end;
} placed_t;

static int by_begin(const void* a, const void* b) {
  const placed_t* x = (const placed_t*)a;
  const placed_t* y = (const placed_t*)b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  return (x->end > y->end) - (x->end < y->end);
}

typedef struct plan_event_t {
  uint64_t step; /* first_step, or last_step + 1 for a release */
  int64_t delta_sign;
  uint64_t bytes;
} plan_event_t;

static int by_event(const void* a, const void* b) {
  const plan_event_t* x = (const plan_event_t*)a;
  const plan_event_t* y = (const plan_event_t*)b;
  if (x->step != y->step) return x->step < y->step ? -1 : 1;
  return (int)(x->delta_sign - y->delta_sign); /* releases (-1) before allocations (+1) */
}

ingot_status_t ingot_memory_plan(ingot_plan_item_t* items, uint32_t count,
                                 uint64_t* out_arena_bytes, uint64_t* out_lower_bound) {
  *out_arena_bytes = 0;
  *out_lower_bound = 0;
  if (count == 0) return INGOT_OK;
  if (!items) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "memory plan: items is NULL");
  for (uint32_t i = 0; i < count; ++i) {
    if (items[i].last_step < items[i].first_step)
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                        "memory plan: item %u lives from step %u to step %u", i,
                        items[i].first_step, items[i].last_step);
    if (items[i].bytes > UINT64_MAX / 4)
      return ingot_fail(INGOT_ERROR_LIMIT, "memory plan: item %u has %llu bytes", i,
                        (unsigned long long)items[i].bytes);
  }
  plan_entry_t* order = ingot_xmalloc(sizeof(plan_entry_t) * (size_t)count * 2);
  plan_entry_t* tmp = order + count;
  for (uint32_t i = 0; i < count; ++i) {
    order[i].index = i;
    order[i].size = (items[i].bytes + PLAN_ALIGN - 1) & ~(uint64_t)(PLAN_ALIGN - 1);
  }
  sort_entries(order, tmp, count, items);

  placed_t* live = ingot_xmalloc(sizeof(placed_t) * count);
  uint64_t arena = 0;
  ingot_status_t status = INGOT_OK;
  for (uint32_t k = 0; k < count; ++k) {
    ingot_plan_item_t* item = &items[order[k].index];
    uint64_t size = order[k].size;
    uint32_t n = 0;
    for (uint32_t p = 0; p < k; ++p) {
      const ingot_plan_item_t* other = &items[order[p].index];
      if (order[p].size == 0 || other->last_step < item->first_step ||
          item->last_step < other->first_step)
        continue;
      live[n].begin = other->offset;
      live[n].end = other->offset + order[p].size;
      ++n;
    }
    qsort(live, n, sizeof *live, by_begin);
    uint64_t best = UINT64_MAX, best_gap = UINT64_MAX, cursor = 0;
    for (uint32_t p = 0; p < n; ++p) {
      if (live[p].begin > cursor) {
        uint64_t gap = live[p].begin - cursor;
        if (gap >= size && gap < best_gap) {
          best_gap = gap;
          best = cursor;
        }
      }
      if (live[p].end > cursor) cursor = live[p].end;
    }
    if (best == UINT64_MAX) best = cursor; /* after the highest overlapping item */
    if (size == 0) best = 0;
    item->offset = best;
    if (best + size > arena) arena = best + size;
    if (arena > UINT64_MAX / 4) {
      status = ingot_fail(INGOT_ERROR_LIMIT, "memory plan: arena overflows");
      break;
    }
  }
  free(live);

  if (status == INGOT_OK) {
    /* Lower bound: sweep the interval ends; a release at step s+1 comes
     * before an allocation at step s+1. */
    plan_event_t* events = ingot_xmalloc(sizeof(plan_event_t) * (size_t)count * 2);
    for (size_t k = 0; k < count; ++k) {
      const ingot_plan_item_t* item = &items[order[k].index];
      events[2 * k] = (plan_event_t){item->first_step, +1, order[k].size};
      events[2 * k + 1] = (plan_event_t){(uint64_t)item->last_step + 1, -1, order[k].size};
    }
    qsort(events, (size_t)count * 2, sizeof *events, by_event);
    uint64_t now = 0, peak = 0;
    for (size_t e = 0; e < (size_t)count * 2; ++e) {
      if (events[e].delta_sign > 0) {
        now += events[e].bytes;
        if (now > peak) peak = now;
      } else {
        now -= events[e].bytes;
      }
    }
    free(events);
    *out_arena_bytes = arena;
    *out_lower_bound = peak;
  }
  free(order);
  return status;
}

/* ---- Live intervals (packager.h) ---------------------------------------- */

void ingot_bundle_live_intervals(const ingot_bundle_spec_t* spec, uint32_t* out_first, uint32_t* out_last) {
  const uint32_t last_step = spec->step_count ? spec->step_count - 1 : 0;
  for (uint32_t t = 0; t < spec->tensor_count; ++t) {
    out_first[t] = UINT32_MAX; /* no step seen yet */
    out_last[t] = 0;
  }
  for (uint32_t s = 0; s < spec->step_count; ++s) {
    const ingot_bundle_step_t* step = &spec->steps[s];
    for (uint32_t a = 0; a < step->arg_count; ++a) {
      uint32_t t = step->args[a];
      if (out_first[t] == UINT32_MAX || out_first[t] > s) out_first[t] = s;
      if (out_last[t] < s) out_last[t] = s;
    }
  }
  for (uint32_t i = 0; i < spec->input_count; ++i) {
    out_first[spec->inputs[i]] = 0;
    out_last[spec->inputs[i]] = last_step;
    if (spec->input_shapes && spec->input_shapes[i] != UINT32_MAX) {
      out_first[spec->input_shapes[i]] = 0;
      out_last[spec->input_shapes[i]] = last_step;
    }
  }
  for (uint32_t i = 0; i < spec->output_count; ++i) {
    out_last[spec->outputs[i]] = last_step;
    if (spec->output_shapes && spec->output_shapes[i] != UINT32_MAX) out_last[spec->output_shapes[i]] = last_step;
  }
  for (uint32_t i = 0; i < spec->check_count; ++i) out_last[spec->checks[i]] = last_step;
  for (uint32_t t = 0; t < spec->tensor_count; ++t) {
    if (out_first[t] == UINT32_MAX) out_first[t] = 0;
    if (out_last[t] < out_first[t]) out_last[t] = out_first[t];
  }
}
