/* The table of code loaders (runtime/loader.h). To add a kind: write its row
 * in a file of its own (loader_<kind>.c), declare it in loader.h and list it
 * here; bundle.c and session.c need no change. */
#include "loader.h"
#include "runtime_config.h"

static const ingot_rt_loader_t* const k_loaders[] = {
    &ingot_rt_loader_cpu_elf,
#if INGOT_RT_GPU_LOADERS
    &ingot_rt_loader_cuda,
    &ingot_rt_loader_hip,
#endif
};

const ingot_rt_loader_t* ingot_rt_loader_find(uint32_t kind) {
  for (size_t i = 0; i < sizeof k_loaders / sizeof k_loaders[0]; ++i)
    if (k_loaders[i]->kind == kind) return k_loaders[i];
  return NULL;
}

#define KIND_COUNT_(name, value, text) +1
_Static_assert(0 INGOT_LOADER_KIND_LIST(KIND_COUNT_) == INGOT_LOADER_KIND_END_ - 1,
               "INGOT_LOADER_KIND_END_ follows the kind list");
#undef KIND_COUNT_

const char* ingot_rt_loader_kind_name(uint32_t kind) {
  switch (kind) {
#define KIND_NAME_(name, value, text) \
  case value: return text;
    INGOT_LOADER_KIND_LIST(KIND_NAME_)
#undef KIND_NAME_
    default: return "unknown";
  }
}
