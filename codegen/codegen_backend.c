/* The backend table (rows: codegen_backends.def) and the dispatch through it. */
#include "codegen/codegen.h"

static const ingot_codegen_backend_t k_backends[] = {
#define INGOT_CODEGEN_BACKEND(kind, name, vectors, emit, build) {kind, name, vectors, emit, build},
#include "codegen_backends.def"
};

const ingot_codegen_backend_t* ingot_codegen_backend_find(ingot_target_kind_t kind) {
  for (size_t i = 0; i < sizeof(k_backends) / sizeof(k_backends[0]); ++i)
    if (k_backends[i].kind == kind) return &k_backends[i];
  return NULL;
}

/* The backend for `target` (NULL: c), or a failure naming the target. */
static ingot_status_t backend_for(const ingot_target_t* target, const ingot_codegen_backend_t** out) {
  *out = ingot_codegen_backend_find(target ? target->kind : INGOT_TARGET_C);
  if (!*out)
    return ingot_fail(INGOT_ERROR_UNSUPPORTED, "codegen: no backend for target '%s' in this build",
                      target->name);
  return INGOT_OK;
}

ingot_status_t ingot_codegen_emit(ingot_ir_func_t* const* funcs, uint32_t count,
                                  const ingot_target_t* target, ingot_strbuf_t* out_text) {
  if (!out_text) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "codegen: missing output");
  const ingot_codegen_backend_t* backend;
  ingot_status_t st = backend_for(target, &backend);
  if (st != INGOT_OK) return st;
  ingot_codegen_prepared_t prepared;
  st = ingot_codegen_prepare(funcs, count, target, &prepared);
  if (st == INGOT_OK) st = backend->emit(prepared.funcs, prepared.count, target, out_text);
  ingot_codegen_prepared_free(&prepared);
  return st;
}

ingot_status_t ingot_codegen_build(ingot_ir_func_t* const* funcs, uint32_t count,
                                   const ingot_target_t* target, const char* cc,
                                   const char* keep_source_path, uint8_t** out_object,
                                   size_t* out_size) {
  if (!out_object || !out_size)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "codegen: missing output");
  *out_object = NULL;
  *out_size = 0;
  const ingot_codegen_backend_t* backend;
  ingot_status_t st = backend_for(target, &backend);
  if (st != INGOT_OK) return st;
  ingot_codegen_options_t options = {.cc = cc, .keep_source_path = keep_source_path};
  ingot_codegen_prepared_t prepared;
  st = ingot_codegen_prepare(funcs, count, target, &prepared);
  if (st == INGOT_OK) st = backend->build(prepared.funcs, prepared.count, target, &options, out_object, out_size);
  ingot_codegen_prepared_free(&prepared);
  return st;
}
