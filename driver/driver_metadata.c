/* The bundle's METADATA (runtime/ingot_format.h, keys INGOT_METADATA_* in
 * runtime/ingot.h): what a compile was made from and with which options.
 * Reproducible by construction: no timestamps, no folders (file names
 * only), options in a fixed order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver_internal.h"
#include "runtime/ingot.h"

static const char* base_name(const char* path) {
  const char* slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

/* Appends ` value`, single-quoted as a shell would need it. */
static void append_word(ingot_strbuf_t* sb, const char* value) {
  int plain = value[0] != '\0';
  for (const char* p = value; *p; ++p)
    if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./=:,+-@#", *p)) plain = 0;
  ingot_strbuf_appendf(sb, " ");
  if (plain) {
    ingot_strbuf_appendf(sb, "%s", value);
    return;
  }
  ingot_strbuf_appendf(sb, "'");
  for (const char* p = value; *p; ++p) {
    if (*p == '\'') ingot_strbuf_appendf(sb, "'\\''");
    else ingot_strbuf_appendf(sb, "%c", *p);
  }
  ingot_strbuf_appendf(sb, "'");
}

static void append_option(ingot_strbuf_t* sb, const char* option, const char* value) {
  ingot_strbuf_appendf(sb, "%s%s", sb->length ? " " : "", option);
  if (value) append_word(sb, value);
}

/* The first 16 hex digits of a SHA-256: enough to tell two files apart. */
static void short_hash(const void* data, size_t size, char out[17]) {
  char hex[65];
  ingot_sha256_hex(data, size, hex);
  memcpy(out, hex, 16);
  out[16] = '\0';
}

ingot_status_t driver_metadata(ingot_arena_t* arena, const ingot_driver_options_t* o, const ingot_graph_t* graph,
                               const ingot_target_t* targets, uint32_t target_count,
                               ingot_bundle_metadata_t** out_entries, uint32_t* out_count) {
  *out_entries = NULL;
  *out_count = 0;
  ingot_bundle_metadata_t* m = INGOT_ARENA_ARRAY(arena, ingot_bundle_metadata_t, 8);
  uint32_t n = 0;
  char text[128];

  const char* name = graph->name ? graph->name : "";
  if (!name[0] && o->model_path) {
    char* own = ingot_arena_strdup(arena, base_name(o->model_path));
    size_t len = strlen(own);
    if (len > 5 && strcmp(own + len - 5, ".onnx") == 0) own[len - 5] = '\0';
    name = own;
  }
  m[n++] = (ingot_bundle_metadata_t){INGOT_METADATA_NAME, name};
  snprintf(text, sizeof text, "%lld", (long long)graph->model_version);
  m[n++] = (ingot_bundle_metadata_t){INGOT_METADATA_MODEL_VERSION, ingot_arena_strdup(arena, text)};
  m[n++] = (ingot_bundle_metadata_t){INGOT_METADATA_PRODUCER, graph->producer_name ? graph->producer_name : ""};
  m[n++] = (ingot_bundle_metadata_t){INGOT_METADATA_PRODUCER_VERSION,
                                     graph->producer_version ? graph->producer_version : ""};
  /* The source file's hash, when the graph was imported from it here (a
   * caller's graph may have been changed since). */
  if (!o->graph && o->model_path) {
    uint8_t* bytes = NULL;
    size_t size = 0;
    ingot_status_t s = ingot_file_read(o->model_path, &bytes, &size);
    if (s != INGOT_OK) return s;
    char hex[65];
    ingot_sha256_hex(bytes, size, hex);
    free(bytes);
    m[n++] = (ingot_bundle_metadata_t){INGOT_METADATA_SOURCE, ingot_arena_strdup(arena, base_name(o->model_path))};
    m[n++] = (ingot_bundle_metadata_t){INGOT_METADATA_SOURCE_SHA256, ingot_arena_strdup(arena, hex)};
  }

  /* The options that shape the code, in `ingot compile`'s spelling. */
  ingot_strbuf_t flags = {0};
  for (uint32_t t = 0; t < target_count; ++t) append_option(&flags, "--target", targets[t].name);
  if (!o->graph) {
    for (uint32_t i = 0; i < o->input_shape_count; ++i) append_option(&flags, "--input-shape", o->input_shapes[i]);
    for (uint32_t i = 0; i < o->const_count; ++i) {
      const ingot_driver_const_t* c = &o->consts[i];
      uint64_t elems = 1;
      for (uint32_t d = 0; d < c->rank; ++d) elems *= (uint64_t)(c->dims[d] > 0 ? c->dims[d] : 0);
      char h[17];
      short_hash(c->data, (size_t)(elems * ingot_dtype_size(c->dtype)), h);
      snprintf(text, sizeof text, "%s=#sha256:%s", c->name ? c->name : "", h);
      append_option(&flags, "--const", text);
    }
    if (o->max_trips > 0) {
      snprintf(text, sizeof text, "%lld", (long long)o->max_trips);
      append_option(&flags, "--max-trips", text);
    }
  }
  if (o->tuning_log_path) {
    uint8_t* bytes = NULL;
    size_t size = 0;
    char h[17] = "unreadable";
    if (ingot_file_read(o->tuning_log_path, &bytes, &size) == INGOT_OK) short_hash(bytes, size, h);
    free(bytes);
    char* word = ingot_arena_printf(arena, "%s#sha256:%s", base_name(o->tuning_log_path), h);
    append_option(&flags, "--tuning-log", word);
  } else if (o->tuning_log) {
    append_option(&flags, "--tuning-log", "(a log given in memory)");
  } else if (o->builtin_tuning_log) {
    append_option(&flags, "--tuning-log", "(built in)");
  }
  if ((o->tuning_log_path || o->tuning_log || o->builtin_tuning_log) && o->tuning_cpu_model)
    append_option(&flags, "--tuning-cpu", o->tuning_cpu_model);
  static const char* const codecs[] = {"auto", "zstd", "raw"};
  append_option(&flags, "--weights", o->weights_codec < 3 ? codecs[o->weights_codec] : "?");
  if (o->weight_dtype == INGOT_DTYPE_F16 || o->weight_dtype == INGOT_DTYPE_BF16 || o->weight_dtype == INGOT_DTYPE_I8)
    append_option(&flags, "--weights",
                  o->weight_dtype == INGOT_DTYPE_F16 ? "fp16" : o->weight_dtype == INGOT_DTYPE_BF16 ? "bf16" : "int8");
  if (o->cc) append_option(&flags, "--cc", base_name(o->cc));
  m[n++] = (ingot_bundle_metadata_t){INGOT_METADATA_COMPILE_FLAGS, ingot_arena_strdup(arena, flags.data ? flags.data : "")};
  ingot_strbuf_free(&flags);
  snprintf(text, sizeof text, "ingot %d.%d.%d", INGOT_VERSION_MAJOR, INGOT_VERSION_MINOR, INGOT_VERSION_PATCH);
  m[n++] = (ingot_bundle_metadata_t){INGOT_METADATA_COMPILER, ingot_arena_strdup(arena, text)};
  *out_entries = m;
  *out_count = n;
  return INGOT_OK;
}
