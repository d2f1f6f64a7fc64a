/* The bundle writer: validates a spec, plans the arena, lays out weights and
 * serializes everything in the format of runtime/ingot_format.h.
 *
 * Decisions (the reader in runtime/bundle.c enforces the same):
 *   - sections in a fixed order: MANIFEST, PLAN, the WEIGHTS sections in the
 *     order variants first use them, then CODE in spec order; each at the
 *     next 64-byte aligned offset, padding zero; the file ends where the last
 *     section ends;
 *   - a variant's weights: its WEIGHT tensors in tensor order, each at the
 *     next 64-byte aligned offset, padding zero; a WEIGHTS section is shared
 *     by every variant whose weights come out byte-identical (all variants
 *     that give no weights of their own, and any others that match);
 *   - one variant record per code, in spec order; launch records as given,
 *     else {steps[s].kernel, 0...};
 *   - each section is zstd-compressed at the spec's level (default: 19 below
 *     1 MiB of raw bytes, 3 above; one frame, content
 *     size recorded); if that does not make it smaller it is stored with
 *     codec NONE; WEIGHTS sections follow spec.weights_codec (AUTO: zstd
 *     only when it saves INGOT_BUNDLE_WEIGHTS_MIN_SAVING_PERCENT, else NONE,
 *     so that the runtime maps them in place; RAW: always NONE), a choice
 *     made from the bytes alone, so the bundle stays reproducible;
 *   - the string table holds the tensor names, then the step (node) names,
 *     then the kernel names, each once in that order, no deduplication;
 *   - live intervals come from the steps (ingot_bundle_live_intervals in
 *     plan.c): inputs for the whole run, outputs to the last step; aliases
 *     (alias_of chains) form one plan item covering the union of their
 *     intervals and the largest of their sizes, and share its offset;
 *   - PLAN records follow tensor index order, one per ARENA tensor, with its
 *     own bytes and the interval of its storage: the tensor's own
 *     (extended) interval, or for a member of an alias group the group's
 *     union (since 0.4; before, the member's own), so that two records
 *     whose bytes overlap share storage exactly when their intervals
 *     overlap (what the runtime's buffer binding tests);
 *   - METADATA (spec.metadata, optional): after the CODE sections, entries
 *     sorted by key, keys then values in the string table in that order. */
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "packager/packager.h"

/* The reader's cap on sections (runtime/bundle.c), the signature included. */
#define INGOT_MAX_SECTIONS 64u

#define ALIGN_UP(x, a) (((x) + (uint64_t)(a) - 1) & ~((uint64_t)(a) - 1))

static const char* tensor_name(const ingot_bundle_tensor_t* t) { return t->name ? t->name : ""; }

static void pad_to(ingot_strbuf_t* sb, size_t align) {
  static const uint8_t zeros[64];
  size_t pad = (size_t)(ALIGN_UP(sb->length, align) - sb->length);
  if (pad) ingot_strbuf_append_bytes(sb, zeros, pad);
}

/* The format's rule for launch records (runtime/ingot_format.h). */
static int launch_dims_ok(ingot_loader_kind_t loader, const ingot_launch_record_t* l) {
  if (loader == INGOT_LOADER_CPU_ELF)
    return l->shared_bytes == 0 && !l->grid[0] && !l->grid[1] && !l->grid[2] && !l->block[0] &&
           !l->block[1] && !l->block[2];
  for (int d = 0; d < 3; ++d)
    if (!l->grid[d] || !l->block[d]) return 0;
  return 1;
}

/* One variant's WEIGHTS section: its weight tensors in tensor order, each
 * 64-byte aligned; records[w] gets the w-th weight's place. `weights` is the
 * variant's own data or NULL (the tensors' data). *out_data is heap. */
static ingot_status_t weights_layout(const ingot_bundle_spec_t* spec, const uint64_t* tensor_bytes,
                                     const ingot_bundle_weight_t* weights,
                                     ingot_weight_record_t* records, uint8_t** out_data,
                                     uint64_t* out_size) {
  *out_data = NULL;
  *out_size = 0;
  uint64_t size = 0;
  uint32_t w = 0;
  for (uint32_t i = 0; i < spec->tensor_count; ++i) {
    if (spec->tensors[i].storage != INGOT_STORAGE_WEIGHT) continue;
    records[w].offset = ALIGN_UP(size, INGOT_WEIGHT_ALIGN);
    records[w].bytes = weights ? weights[i].bytes : tensor_bytes[i];
    size = records[w].offset + records[w].bytes;
    if (size > (UINT64_MAX >> 4) || size > SIZE_MAX / 2)
      return ingot_fail(INGOT_ERROR_LIMIT, "bundle: weights too large");
    ++w;
  }
  uint8_t* data = ingot_xcalloc(size ? (size_t)size : 1, 1);
  w = 0;
  for (uint32_t i = 0; i < spec->tensor_count; ++i) {
    if (spec->tensors[i].storage != INGOT_STORAGE_WEIGHT) continue;
    const void* src = weights ? weights[i].data : spec->tensors[i].data;
    if (records[w].bytes) memcpy(data + records[w].offset, src, (size_t)records[w].bytes);
    ++w;
  }
  *out_data = data;
  *out_size = size;
  return INGOT_OK;
}

/* Whether an output's shape is computed at run time, or a run checks a
 * condition: a version 4 bundle. */
static bool bundle_is_version4(const ingot_bundle_spec_t* spec) {
  for (uint32_t i = 0; spec->output_shapes && i < spec->output_count; ++i)
    if (spec->output_shapes[i] != UINT32_MAX) return true;
  return spec->check_count > 0;
}

/* Whether an input has a ranged dim or an output is padded: a version 5
 * bundle. */
static bool bundle_is_version5(const ingot_bundle_spec_t* spec) {
  for (uint32_t i = 0; spec->input_range_dims && i < spec->input_count; ++i)
    if (spec->input_range_dims[i]) return true;
  for (uint32_t i = 0; spec->output_padded && i < spec->output_count; ++i)
    if (spec->output_padded[i]) return true;
  return false;
}

static uint32_t bundle_format_version(const ingot_bundle_spec_t* spec) {
  if (bundle_is_version5(spec)) return INGOT_FORMAT_VERSION;
  return bundle_is_version4(spec) ? INGOT_FORMAT_VERSION_RUN_SHAPES : INGOT_FORMAT_VERSION_FIXED_SHAPES;
}

/* The ranged-input fields of the spec (the reader's rules, runtime/bundle.c). */
static ingot_status_t validate_ranges(const ingot_bundle_spec_t* spec, const uint64_t* tensor_bytes) {
  if ((spec->input_range_dims != NULL) != (spec->input_range_lo != NULL) ||
      (spec->input_shapes && !spec->input_range_dims))
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "bundle spec: give input_range_dims and input_range_lo together");
  for (uint32_t i = 0; spec->input_range_dims && i < spec->input_count; ++i) {
    const ingot_bundle_tensor_t* in = &spec->tensors[spec->inputs[i]];
    uint32_t mask = spec->input_range_dims[i];
    if (in->rank < 32 && (mask >> in->rank))
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "bundle spec: input '%s': ranged dims 0x%x past its rank %u",
                        tensor_name(in), mask, in->rank);
    for (uint32_t d = 0; d < in->rank; ++d) {
      int64_t lo = spec->input_range_lo[i][d];
      bool ranged = (mask >> d) & 1u;
      if (ranged ? (lo < 1 || lo > in->dims[d]) : lo != in->dims[d])
        return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                          "bundle spec: input '%s': dim %u has least size %lld, its bound %lld (%s)", tensor_name(in),
                          d, (long long)lo, (long long)in->dims[d], ranged ? "ranged" : "fixed");
    }
    uint32_t t = spec->input_shapes ? spec->input_shapes[i] : UINT32_MAX;
    if (t == UINT32_MAX) continue;
    if (!mask || t >= spec->tensor_count || spec->tensors[t].storage != INGOT_STORAGE_ARENA ||
        spec->tensors[t].dtype != INGOT_DTYPE_I64 || tensor_bytes[t] != 8u * in->rank ||
        spec->tensors[t].alias_of != UINT32_MAX)
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                        "bundle spec: input '%s': its shape tensor %u is not an int64 arena tensor of %u elements "
                        "(and it is ranged)", tensor_name(in), t, in->rank);
  }
  for (uint32_t i = 0; spec->output_padded && i < spec->output_count; ++i)
    if (spec->output_padded[i] && (!spec->output_shapes || spec->output_shapes[i] == UINT32_MAX))
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "bundle spec: output '%s' is padded but has no run-time shape",
                        tensor_name(&spec->tensors[spec->outputs[i]]));
  return INGOT_OK;
}

/* Checks the spec; `with_codes` false: everything but the code variants
 * (what the plan and the firmware writer read). */
static ingot_status_t validate_spec(const ingot_bundle_spec_t* spec, bool with_codes, uint64_t* tensor_bytes) {
  if ((spec->tensor_count && !spec->tensors) || (spec->input_count && !spec->inputs) ||
      (spec->output_count && !spec->outputs) || (spec->step_count && !spec->steps) ||
      (spec->kernel_count && !spec->kernel_names) || (spec->code_count && !spec->codes))
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "bundle spec: an array with a count is NULL");
  if (with_codes && spec->code_count == 0)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "bundle spec: no code variant");
  for (uint32_t i = 0; i < spec->tensor_count; ++i) {
    const ingot_bundle_tensor_t* t = &spec->tensors[i];
    size_t esize = ingot_dtype_size(t->dtype);
    if (esize == 0)
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "bundle spec: tensor '%s': bad dtype %d",
                        tensor_name(t), (int)t->dtype);
    if (t->rank > INGOT_MAX_RANK)
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "bundle spec: tensor '%s': rank %u > %u",
                        tensor_name(t), t->rank, INGOT_MAX_RANK);
    uint64_t bytes = esize;
    for (uint32_t d = 0; d < t->rank; ++d) {
      if (t->dims[d] < 0)
        return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "bundle spec: tensor '%s': dim %u is %lld",
                          tensor_name(t), d, (long long)t->dims[d]);
      if (!ingot_mul_u64(bytes, (uint64_t)t->dims[d], &bytes) || bytes > (UINT64_MAX >> 4))
        return ingot_fail(INGOT_ERROR_LIMIT, "bundle spec: tensor '%s': size overflows",
                          tensor_name(t));
    }
    tensor_bytes[i] = bytes;
    if (t->storage == INGOT_STORAGE_WEIGHT) {
      if (bytes && !t->data)
        return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "bundle spec: weight '%s' has no data",
                          tensor_name(t));
    } else if (t->storage == INGOT_STORAGE_ARENA) {
      if (t->alias_of != UINT32_MAX &&
          (t->alias_of >= spec->tensor_count || t->alias_of == i ||
           spec->tensors[t->alias_of].storage != INGOT_STORAGE_ARENA))
        return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                          "bundle spec: tensor '%s': alias_of %u is not another arena tensor",
                          tensor_name(t), t->alias_of);
    } else {
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "bundle spec: tensor '%s': storage %d",
                        tensor_name(t), (int)t->storage);
    }
  }
  for (uint32_t i = 0; i < spec->input_count; ++i)
    if (spec->inputs[i] >= spec->tensor_count ||
        spec->tensors[spec->inputs[i]].storage != INGOT_STORAGE_ARENA)
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                        "bundle spec: input %u: tensor %u is not an arena tensor", i, spec->inputs[i]);
  for (uint32_t i = 0; i < spec->output_count; ++i)
    if (spec->outputs[i] >= spec->tensor_count)
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "bundle spec: output %u: bad tensor %u", i,
                        spec->outputs[i]);
  for (uint32_t i = 0; spec->output_shapes && i < spec->output_count; ++i) {
    uint32_t t = spec->output_shapes[i];
    if (t == UINT32_MAX) continue;
    const ingot_bundle_tensor_t* out = &spec->tensors[spec->outputs[i]];
    uint32_t dims = spec->output_shape_dims ? spec->output_shape_dims[i] : 0;
    uint32_t top = 0; /* 1 + the highest dim a run decides */
    while (top < 32 && (dims >> top)) ++top;
    if (t >= spec->tensor_count || spec->tensors[t].storage != INGOT_STORAGE_ARENA ||
        spec->tensors[t].dtype != INGOT_DTYPE_I64 || spec->tensors[t].rank != 1 ||
        spec->tensors[t].dims[0] < (int64_t)top || !dims || top > out->rank || out->storage != INGOT_STORAGE_ARENA)
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                        "bundle spec: output %u: its shape tensor %u is not an int64 arena tensor that holds dims 0x%x "
                        "of rank %u", i, t, dims, out->rank);
  }
  ingot_status_t ranges = validate_ranges(spec, tensor_bytes);
  if (ranges != INGOT_OK) return ranges;
  if (spec->check_count && (!spec->checks || !spec->check_messages))
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "bundle spec: checks with a count are NULL");
  for (uint32_t i = 0; i < spec->check_count; ++i) {
    uint32_t t = spec->checks[i];
    if (t >= spec->tensor_count || spec->tensors[t].storage != INGOT_STORAGE_ARENA ||
        spec->tensors[t].dtype != INGOT_DTYPE_BOOL || tensor_bytes[t] != 1 || !spec->check_messages[i])
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "bundle spec: check %u: tensor %u is not a bool arena tensor of "
                        "one element, or it has no message", i, t);
  }
  uint64_t arg_total = 0;
  for (uint32_t s = 0; s < spec->step_count; ++s) {
    const ingot_bundle_step_t* st = &spec->steps[s];
    const char* name = st->name ? st->name : "";
    if (st->kernel >= spec->kernel_count)
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "bundle spec: step %u ('%s'): kernel %u of %u",
                        s, name, st->kernel, spec->kernel_count);
    uint32_t guard = (st->guard & INGOT_STEP_GUARD_TENSOR_MASK) - 1;
    int64_t guard_numel = 1;
    for (uint32_t d = 0; st->guard && guard < spec->tensor_count && d < spec->tensors[guard].rank; ++d)
      guard_numel *= spec->tensors[guard].dims[d];
    if (st->guard && (guard >= spec->tensor_count || spec->tensors[guard].dtype != INGOT_DTYPE_BOOL ||
                      guard_numel != 1))
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "bundle spec: step %u ('%s'): bad guard %u", s, name,
                        st->guard);
    if (st->arg_count && !st->args)
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "bundle spec: step %u ('%s'): args is NULL", s,
                        name);
    for (uint32_t a = 0; a < st->arg_count; ++a)
      if (st->args[a] >= spec->tensor_count)
        return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                          "bundle spec: step %u ('%s'): argument %u is tensor %u of %u", s, name,
                          a, st->args[a], spec->tensor_count);
    arg_total += st->arg_count;
  }
  if (arg_total > UINT32_MAX)
    return ingot_fail(INGOT_ERROR_LIMIT, "bundle spec: %llu step arguments",
                      (unsigned long long)arg_total);
  for (uint32_t k = 0; k < spec->kernel_count; ++k)
    if (!spec->kernel_names[k] || !spec->kernel_names[k][0])
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "bundle spec: kernel %u has no name", k);
  for (uint32_t c = 0; with_codes && c < spec->code_count; ++c) {
    const ingot_bundle_code_t* code = &spec->codes[c];
    size_t len = code->target ? strlen(code->target) : 0;
    if (len == 0 || len >= INGOT_TARGET_NAME_BYTES)
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                        "bundle spec: code %u: target name must have 1 to %u characters", c,
                        INGOT_TARGET_NAME_BYTES - 1);
    if (!code->data || code->size == 0)
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "bundle spec: code %u ('%s') is empty", c,
                        code->target);
    if ((uint32_t)code->loader == 0 || (uint32_t)code->loader >= INGOT_LOADER_KIND_END_)
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                        "bundle spec: code %u ('%s'): loader kind %d is not one of the format's", c,
                        code->target, (int)code->loader);
    for (uint32_t s = 0; code->launches && s < spec->step_count; ++s) {
      const ingot_launch_record_t* l = &code->launches[s];
      if (l->kernel >= spec->kernel_count)
        return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                          "bundle spec: code %u ('%s'), step %u: kernel %u of %u", c, code->target,
                          s, l->kernel, spec->kernel_count);
      if (!launch_dims_ok(code->loader, l))
        return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                          "bundle spec: code %u ('%s'), step %u: launch dims do not suit its loader "
                          "(CPU: all zero; GPU: every grid and block dim >= 1)",
                          c, code->target, s);
    }
    for (uint32_t t = 0; code->weights && t < spec->tensor_count; ++t) {
      const ingot_bundle_weight_t* w = &code->weights[t];
      if (spec->tensors[t].storage != INGOT_STORAGE_WEIGHT) {
        if (w->data || w->bytes)
          return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                            "bundle spec: code %u ('%s'): weight data for tensor '%s', which is "
                            "not a weight", c, code->target, tensor_name(&spec->tensors[t]));
      } else if ((w->bytes && !w->data) || w->bytes > (UINT64_MAX >> 4)) {
        return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                          "bundle spec: code %u ('%s'): weight '%s' has %llu bytes and %s data", c,
                          code->target, tensor_name(&spec->tensors[t]),
                          (unsigned long long)w->bytes, w->data ? "some" : "no");
      }
    }
  }
  if (spec->weights_codec != INGOT_BUNDLE_WEIGHTS_AUTO && spec->weights_codec != INGOT_BUNDLE_WEIGHTS_ZSTD &&
      spec->weights_codec != INGOT_BUNDLE_WEIGHTS_RAW)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "bundle spec: weights codec %d", (int)spec->weights_codec);
  if (spec->zstd_level < 0 || spec->zstd_level > ZSTD_maxCLevel())
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "bundle spec: zstd level %d", spec->zstd_level);
  return INGOT_OK;
}

/* The representative of t's alias group; UINT32_MAX on a cycle. */
static uint32_t alias_root(const ingot_bundle_spec_t* spec, uint32_t t) {
  for (uint32_t hops = 0; hops <= spec->tensor_count; ++hops) {
    if (spec->tensors[t].alias_of == UINT32_MAX) return t;
    t = spec->tensors[t].alias_of;
  }
  return UINT32_MAX;
}

typedef struct section_t {
  uint32_t kind;
  const char* target;
  const uint8_t* raw;
  size_t raw_size;
} section_t;

typedef struct encoded_t {
  ingot_section_entry_t entry;
  uint8_t* stored; /* heap; NULL when stored raw */
} encoded_t;

/* Section k of the file: MANIFEST, PLAN, the weights blobs, the codes, the
 * metadata when there is some. */
static void section_payload(const ingot_bundle_spec_t* spec, const ingot_strbuf_t* manifest,
                            const ingot_strbuf_t* plan, const ingot_strbuf_t* metadata, uint8_t* const* blobs,
                            const uint64_t* blob_sizes, uint32_t blob_count, uint32_t k,
                            section_t* out) {
  memset(out, 0, sizeof *out);
  if (k == 0) {
    *out = (section_t){INGOT_SECTION_MANIFEST, NULL, (const uint8_t*)manifest->data, manifest->length};
  } else if (k == 1) {
    *out = (section_t){INGOT_SECTION_PLAN, NULL, (const uint8_t*)plan->data, plan->length};
  } else if (k < 2 + blob_count) {
    *out = (section_t){INGOT_SECTION_WEIGHTS, NULL, blobs[k - 2], (size_t)blob_sizes[k - 2]};
  } else if (k == 2 + blob_count + spec->code_count) {
    *out = (section_t){INGOT_SECTION_METADATA, NULL, (const uint8_t*)metadata->data, metadata->length};
  } else {
    const ingot_bundle_code_t* code = &spec->codes[k - 2 - blob_count];
    *out = (section_t){INGOT_SECTION_CODE, code->target, (const uint8_t*)code->data, code->size};
  }
}

/* The METADATA section of spec->metadata (ingot_format.h): checked, sorted
 * by key, serialized into `out`. */
static ingot_status_t build_metadata(const ingot_bundle_spec_t* spec, ingot_strbuf_t* out) {
  const uint32_t n = spec->metadata_count;
  if (n > INGOT_METADATA_MAX_ENTRIES)
    return ingot_fail(INGOT_ERROR_LIMIT, "bundle: %u metadata entries, at most %u", n, INGOT_METADATA_MAX_ENTRIES);
  if (!spec->metadata) return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "bundle spec: metadata is NULL");
  const ingot_bundle_metadata_t* sorted[INGOT_METADATA_MAX_ENTRIES];
  for (uint32_t i = 0; i < n; ++i) {
    const ingot_bundle_metadata_t* m = &spec->metadata[i];
    size_t len = m->key ? strlen(m->key) : 0;
    if (len == 0 || len > INGOT_METADATA_MAX_KEY_BYTES || !m->value)
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                        "bundle spec: metadata entry %u: key of 1 to %u bytes and a value needed", i,
                        INGOT_METADATA_MAX_KEY_BYTES);
    uint32_t j = i;
    for (; j > 0 && strcmp(sorted[j - 1]->key, m->key) > 0; --j) sorted[j] = sorted[j - 1];
    sorted[j] = m;
  }
  for (uint32_t i = 1; i < n; ++i)
    if (strcmp(sorted[i - 1]->key, sorted[i]->key) == 0)
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "bundle spec: metadata key '%s' given twice", sorted[i]->key);
  ingot_strbuf_t strings = {0};
  ingot_metadata_entry_t entries[INGOT_METADATA_MAX_ENTRIES];
  for (uint32_t i = 0; i < n; ++i) {
    entries[i].key = (uint32_t)strings.length;
    ingot_strbuf_append_bytes(&strings, sorted[i]->key, strlen(sorted[i]->key) + 1);
    entries[i].value = (uint32_t)strings.length;
    ingot_strbuf_append_bytes(&strings, sorted[i]->value, strlen(sorted[i]->value) + 1);
  }
  if (strings.length > UINT32_MAX / 2) {
    ingot_strbuf_free(&strings);
    return ingot_fail(INGOT_ERROR_LIMIT, "bundle: metadata strings too long");
  }
  ingot_metadata_header_t h = {n, (uint32_t)strings.length};
  ingot_strbuf_append_bytes(out, &h, sizeof h);
  if (n) ingot_strbuf_append_bytes(out, entries, sizeof(ingot_metadata_entry_t) * n);
  ingot_strbuf_append_bytes(out, strings.data, strings.length);
  ingot_strbuf_free(&strings);
  return INGOT_OK;
}

/* Whether a WEIGHTS section of raw_size bytes that zstd makes `stored` bytes
 * long is kept compressed under `codec`. */
static int weights_keep_zstd(ingot_bundle_weights_codec_t codec, uint64_t raw_size, uint64_t stored) {
  if (codec == INGOT_BUNDLE_WEIGHTS_ZSTD) return stored < raw_size;
  /* AUTO: saved >= ceil(raw * percent / 100), without overflow for any size. */
  const uint64_t pct = INGOT_BUNDLE_WEIGHTS_MIN_SAVING_PERCENT;
  uint64_t need = raw_size / 100 * pct + (raw_size % 100 * pct + 99) / 100;
  uint64_t saved = stored < raw_size ? raw_size - stored : 0;
  return saved > 0 && saved >= need;
}

static ingot_status_t encode_section(const section_t* s, int level, ingot_bundle_weights_codec_t weights_codec,
                                     ZSTD_CCtx* cctx, encoded_t* out) {
  memset(out, 0, sizeof *out);
  out->entry.kind = s->kind;
  if (s->target) memcpy(out->entry.target, s->target, strlen(s->target));
  out->entry.raw_size = s->raw_size;
  out->entry.raw_crc32 = ingot_crc32(0, s->raw, s->raw_size);
  out->entry.codec = INGOT_CODEC_NONE;
  out->entry.stored_size = s->raw_size;
  out->entry.stored_crc32 = out->entry.raw_crc32;
  int weights = s->kind == INGOT_SECTION_WEIGHTS;
  if (weights && weights_codec == INGOT_BUNDLE_WEIGHTS_RAW) return INGOT_OK;
  size_t bound = ZSTD_compressBound(s->raw_size);
  uint8_t* buf = ingot_xmalloc(bound ? bound : 1);
  size_t n = ZSTD_compressCCtx(cctx, buf, bound, s->raw, s->raw_size, level);
  if (ZSTD_isError(n)) {
    free(buf);
    return ingot_fail(INGOT_ERROR_INTERNAL, "bundle: zstd: %s", ZSTD_getErrorName(n));
  }
  if (weights ? weights_keep_zstd(weights_codec, s->raw_size, n) : n < s->raw_size) {
    out->entry.codec = INGOT_CODEC_ZSTD;
    out->entry.stored_size = n;
    out->entry.stored_crc32 = ingot_crc32(0, buf, n);
    out->stored = buf;
  } else {
    free(buf);
  }
  return INGOT_OK;
}

/* The arena offset of every ARENA tensor (offsets[i]; weights keep 0), from
 * the live intervals first/last: an alias group is one item covering the
 * union of its members' intervals and the largest of their sizes. item_of
 * and items are scratch arrays of tensor_count entries. */
static ingot_status_t plan_spec(const ingot_bundle_spec_t* spec, const uint64_t* tensor_bytes, const uint32_t* first,
                                const uint32_t* last, uint32_t* item_of, ingot_plan_item_t* items, uint64_t* offsets,
                                uint64_t* out_arena_bytes, uint64_t* out_lower_bound) {
  const uint32_t nt = spec->tensor_count;
  uint32_t item_count = 0;
  for (uint32_t i = 0; i < nt; ++i) {
    if (spec->tensors[i].storage != INGOT_STORAGE_ARENA || spec->tensors[i].alias_of != UINT32_MAX)
      continue;
    item_of[i] = item_count;
    items[item_count].bytes = tensor_bytes[i];
    items[item_count].first_step = first[i];
    items[item_count].last_step = last[i];
    ++item_count;
  }
  for (uint32_t i = 0; i < nt; ++i) {
    if (spec->tensors[i].storage != INGOT_STORAGE_ARENA || spec->tensors[i].alias_of == UINT32_MAX)
      continue;
    uint32_t root = alias_root(spec, i);
    if (root == UINT32_MAX)
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "bundle spec: tensor '%s': alias_of cycle",
                        tensor_name(&spec->tensors[i]));
    ingot_plan_item_t* item = &items[item_of[root]];
    item_of[i] = item_of[root];
    if (tensor_bytes[i] > item->bytes) item->bytes = tensor_bytes[i];
    if (first[i] < item->first_step) item->first_step = first[i];
    if (last[i] > item->last_step) item->last_step = last[i];
  }
  ingot_status_t status = ingot_memory_plan(items, item_count, out_arena_bytes, out_lower_bound);
  if (status != INGOT_OK) return status;
  for (uint32_t i = 0; i < nt; ++i)
    offsets[i] = spec->tensors[i].storage == INGOT_STORAGE_ARENA ? items[item_of[i]].offset : 0;
  return INGOT_OK;
}

ingot_status_t ingot_bundle_plan(const ingot_bundle_spec_t* spec, uint64_t* out_offsets, uint64_t* out_arena_bytes,
                                 uint64_t* out_lower_bound) {
  if (out_arena_bytes) *out_arena_bytes = 0;
  if (out_lower_bound) *out_lower_bound = 0;
  if (!spec || !out_offsets || !out_arena_bytes || !out_lower_bound)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "bundle plan: NULL spec or output");
  const uint32_t nt = spec->tensor_count;
  uint64_t* tensor_bytes = ingot_xcalloc(nt ? nt : 1, sizeof(uint64_t));
  uint32_t* first = ingot_xcalloc(nt ? nt : 1, sizeof(uint32_t));
  uint32_t* last = ingot_xcalloc(nt ? nt : 1, sizeof(uint32_t));
  uint32_t* item_of = ingot_xcalloc(nt ? nt : 1, sizeof(uint32_t));
  ingot_plan_item_t* items = ingot_xcalloc(nt ? nt : 1, sizeof(ingot_plan_item_t));
  ingot_status_t status = validate_spec(spec, false, tensor_bytes);
  if (status == INGOT_OK) {
    ingot_bundle_live_intervals(spec, first, last);
    status = plan_spec(spec, tensor_bytes, first, last, item_of, items, out_offsets, out_arena_bytes,
                       out_lower_bound);
  }
  free(items);
  free(item_of);
  free(last);
  free(first);
  free(tensor_bytes);
  return status;
}

ingot_status_t ingot_bundle_build(const ingot_bundle_spec_t* spec, uint8_t** out_data,
                                  size_t* out_size, ingot_bundle_report_t* out_report) {
  if (out_data) *out_data = NULL;
  if (out_size) *out_size = 0;
  if (out_report) memset(out_report, 0, sizeof *out_report);
  if (!spec || !out_data || !out_size)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "bundle: NULL spec or output");

  const uint32_t nt = spec->tensor_count;
  uint64_t* tensor_bytes = ingot_xcalloc(nt ? nt : 1, sizeof(uint64_t));
  uint64_t* offsets = ingot_xcalloc(nt ? nt : 1, sizeof(uint64_t));
  uint32_t* first = ingot_xcalloc(nt ? nt : 1, sizeof(uint32_t));
  uint32_t* last = ingot_xcalloc(nt ? nt : 1, sizeof(uint32_t));
  uint32_t* item_of = ingot_xcalloc(nt ? nt : 1, sizeof(uint32_t));
  ingot_plan_item_t* items = ingot_xcalloc(nt ? nt : 1, sizeof(ingot_plan_item_t));
  ingot_strbuf_t manifest = {0}, plan = {0}, strings = {0}, metadata_section = {0};
  uint8_t** blobs = NULL;       /* the distinct WEIGHTS sections */
  uint64_t* blob_sizes = NULL;
  uint32_t blob_count = 0;
  uint32_t* variant_blob = NULL;  /* per code: its blob */
  ingot_weight_record_t* wrecords = NULL; /* [code][weight] */
  uint8_t* file = NULL;
  encoded_t* encoded = NULL;
  uint32_t section_count = 0;
  ZSTD_CCtx* cctx = NULL;
  ingot_status_t status = validate_spec(spec, true, tensor_bytes);
  if (status != INGOT_OK) goto done;

  /* ---- Live intervals, alias groups, the plan. */
  ingot_bundle_live_intervals(spec, first, last);
  uint64_t arena_bytes = 0, lower_bound = 0;
  status = plan_spec(spec, tensor_bytes, first, last, item_of, items, offsets, &arena_bytes, &lower_bound);
  if (status != INGOT_OK) goto done;
  uint32_t arena_tensors = 0, weight_count = 0;
  for (uint32_t i = 0; i < nt; ++i) {
    if (spec->tensors[i].storage == INGOT_STORAGE_WEIGHT) ++weight_count;
    else ++arena_tensors;
  }

  /* ---- Weights: one layout per variant, identical ones stored once. */
  const uint32_t nc = spec->code_count;
  wrecords = ingot_xcalloc((size_t)nc * weight_count + 1, sizeof(ingot_weight_record_t));
  blobs = ingot_xcalloc(nc, sizeof(uint8_t*));
  blob_sizes = ingot_xcalloc(nc, sizeof(uint64_t));
  variant_blob = ingot_xcalloc(nc, sizeof(uint32_t));
  uint64_t weights_total = 0;
  int shared_blob = -1;   /* the blob of the variants that give no weights ... */
  uint32_t shared_source = 0; /* ... and the first of them, whose records they copy */
  for (uint32_t c = 0; c < nc; ++c) {
    ingot_weight_record_t* rec = &wrecords[(size_t)c * weight_count];
    const ingot_bundle_weight_t* own = spec->codes[c].weights;
    if (!own && shared_blob >= 0) {
      memcpy(rec, &wrecords[(size_t)shared_source * weight_count],
             sizeof(ingot_weight_record_t) * weight_count);
      variant_blob[c] = (uint32_t)shared_blob;
      continue;
    }
    uint8_t* data = NULL;
    uint64_t size = 0;
    status = weights_layout(spec, tensor_bytes, own, rec, &data, &size);
    if (status != INGOT_OK) goto done;
    uint32_t b = 0;
    while (b < blob_count && !(blob_sizes[b] == size && memcmp(blobs[b], data, (size_t)size) == 0)) ++b;
    if (b < blob_count) {
      free(data);
    } else {
      blobs[b] = data;
      blob_sizes[b] = size;
      weights_total += size;
      ++blob_count;
    }
    variant_blob[c] = b;
    if (!own) {
      shared_blob = (int)b;
      shared_source = c;
    }
  }
  section_count = 2 + blob_count + nc;
  if (spec->metadata_count) {
    status = build_metadata(spec, &metadata_section);
    if (status != INGOT_OK) goto done;
    ++section_count;
  }
  if (section_count + 1 > INGOT_MAX_SECTIONS) { /* + 1: room for a signature */
    status = ingot_fail(INGOT_ERROR_LIMIT,
                        "bundle: %u code variants with %u distinct weights need %u sections, "
                        "at most %u", nc, blob_count, section_count + 1, INGOT_MAX_SECTIONS);
    goto done;
  }

  /* ---- Strings, then the manifest. */
  uint32_t* tensor_str = ingot_xcalloc(nt ? nt : 1, sizeof(uint32_t));
  uint32_t* step_str = ingot_xcalloc(spec->step_count ? spec->step_count : 1, sizeof(uint32_t));
  uint32_t* kernel_str = ingot_xcalloc(spec->kernel_count ? spec->kernel_count : 1, sizeof(uint32_t));
  for (uint32_t i = 0; i < nt; ++i) {
    tensor_str[i] = (uint32_t)strings.length;
    ingot_strbuf_append_bytes(&strings, tensor_name(&spec->tensors[i]),
                              strlen(tensor_name(&spec->tensors[i])) + 1);
  }
  for (uint32_t s = 0; s < spec->step_count; ++s) {
    const char* name = spec->steps[s].name ? spec->steps[s].name : "";
    step_str[s] = (uint32_t)strings.length;
    ingot_strbuf_append_bytes(&strings, name, strlen(name) + 1);
  }
  for (uint32_t k = 0; k < spec->kernel_count; ++k) {
    kernel_str[k] = (uint32_t)strings.length;
    ingot_strbuf_append_bytes(&strings, spec->kernel_names[k], strlen(spec->kernel_names[k]) + 1);
  }
  uint32_t* check_str = ingot_xcalloc(spec->check_count ? spec->check_count : 1, sizeof(uint32_t));
  for (uint32_t k = 0; k < spec->check_count; ++k) {
    check_str[k] = (uint32_t)strings.length;
    ingot_strbuf_append_bytes(&strings, spec->check_messages[k], strlen(spec->check_messages[k]) + 1);
  }
  if (strings.length > UINT32_MAX) {
    free(tensor_str);
    free(step_str);
    free(kernel_str);
    free(check_str);
    status = ingot_fail(INGOT_ERROR_LIMIT, "bundle: string table over 4 GiB");
    goto done;
  }
  uint32_t arg_total = 0;
  for (uint32_t s = 0; s < spec->step_count; ++s) arg_total += spec->steps[s].arg_count;

  ingot_manifest_header_t mh = {
      .tensor_count = nt,
      .input_count = spec->input_count,
      .output_count = spec->output_count,
      .step_count = spec->step_count,
      .arg_count = arg_total,
      .kernel_count = spec->kernel_count,
      .string_bytes = (uint32_t)strings.length,
      .variant_count = nc,
  };
  ingot_strbuf_append_bytes(&manifest, &mh, sizeof mh);
  pad_to(&manifest, 8);
  for (uint32_t i = 0; i < nt; ++i) {
    const ingot_bundle_tensor_t* t = &spec->tensors[i];
    ingot_tensor_record_t r;
    memset(&r, 0, sizeof r);
    r.name = tensor_str[i];
    r.dtype = (uint32_t)t->dtype;
    r.rank = t->rank;
    r.storage = (uint32_t)t->storage;
    r.offset = 0; /* ARENA: the plan; WEIGHT: each variant's weight records */
    r.bytes = tensor_bytes[i];
    for (uint32_t d = 0; d < t->rank; ++d) r.dims[d] = t->dims[d];
    ingot_strbuf_append_bytes(&manifest, &r, sizeof r);
  }
  pad_to(&manifest, 8);
  ingot_strbuf_append_bytes(&manifest, spec->inputs ? (const void*)spec->inputs : "", 4 * (size_t)spec->input_count);
  pad_to(&manifest, 8);
  ingot_strbuf_append_bytes(&manifest, spec->outputs ? (const void*)spec->outputs : "", 4 * (size_t)spec->output_count);
  pad_to(&manifest, 8);
  const uint32_t format_version = bundle_format_version(spec);
  if (format_version >= INGOT_FORMAT_VERSION_RUN_SHAPES) {
    for (uint32_t i = 0; i < spec->output_count; ++i) {
      bool varies = spec->output_shapes && spec->output_shapes[i] != UINT32_MAX;
      bool padded = spec->output_padded && spec->output_padded[i];
      uint32_t r[2] = {varies ? spec->output_shapes[i] + 1 : 0,
                       (varies ? spec->output_shape_dims[i] : 0) | (padded ? INGOT_OUTPUT_SHAPE_PADDED : 0)};
      ingot_strbuf_append_bytes(&manifest, r, sizeof r);
    }
    pad_to(&manifest, 8);
    uint32_t count[2] = {spec->check_count, 0};
    ingot_strbuf_append_bytes(&manifest, count, sizeof count);
    for (uint32_t k = 0; k < spec->check_count; ++k) {
      uint32_t r[2] = {spec->checks[k], check_str[k]};
      ingot_strbuf_append_bytes(&manifest, r, sizeof r);
    }
  }
  if (format_version >= 5) {
    for (uint32_t i = 0; i < spec->input_count; ++i) {
      uint32_t t = spec->input_shapes ? spec->input_shapes[i] : UINT32_MAX;
      uint32_t r[2] = {t == UINT32_MAX ? 0 : t + 1, spec->input_range_dims ? spec->input_range_dims[i] : 0};
      ingot_strbuf_append_bytes(&manifest, r, sizeof r);
    }
    for (uint32_t i = 0; i < spec->input_count; ++i) {
      int64_t lo[INGOT_MAX_RANK] = {0};
      const ingot_bundle_tensor_t* in = &spec->tensors[spec->inputs[i]];
      for (uint32_t d = 0; d < in->rank; ++d) lo[d] = spec->input_range_lo ? spec->input_range_lo[i][d] : in->dims[d];
      ingot_strbuf_append_bytes(&manifest, lo, sizeof lo);
    }
  }
  uint32_t arg_begin = 0;
  for (uint32_t s = 0; s < spec->step_count; ++s) {
    ingot_step_record_t r = {spec->steps[s].guard, arg_begin, spec->steps[s].arg_count, step_str[s]};
    ingot_strbuf_append_bytes(&manifest, &r, sizeof r);
    arg_begin += spec->steps[s].arg_count;
  }
  pad_to(&manifest, 8);
  for (uint32_t s = 0; s < spec->step_count; ++s)
    if (spec->steps[s].arg_count)
      ingot_strbuf_append_bytes(&manifest, spec->steps[s].args, 4 * (size_t)spec->steps[s].arg_count);
  pad_to(&manifest, 8);
  ingot_strbuf_append_bytes(&manifest, kernel_str, 4 * (size_t)spec->kernel_count);
  pad_to(&manifest, 8);
  for (uint32_t c = 0; c < nc; ++c) {
    ingot_variant_record_t r = {2 + blob_count + c, 2 + variant_blob[c], (uint32_t)spec->codes[c].loader, 0};
    ingot_strbuf_append_bytes(&manifest, &r, sizeof r);
  }
  pad_to(&manifest, 8);
  for (uint32_t c = 0; c < nc; ++c)
    for (uint32_t s = 0; s < spec->step_count; ++s) {
      ingot_launch_record_t r;
      memset(&r, 0, sizeof r);
      if (spec->codes[c].launches) r = spec->codes[c].launches[s];
      else r.kernel = spec->steps[s].kernel;
      ingot_strbuf_append_bytes(&manifest, &r, sizeof r);
    }
  pad_to(&manifest, 8);
  ingot_strbuf_append_bytes(&manifest, wrecords, sizeof(ingot_weight_record_t) * (size_t)nc * weight_count);
  pad_to(&manifest, 8);
  ingot_strbuf_append_bytes(&manifest, strings.data ? strings.data : "", strings.length);
  free(tensor_str);
  free(step_str);
  free(kernel_str);
  free(check_str);

  /* ---- The plan section. */
  ingot_plan_header_t ph = {arena_bytes, lower_bound, arena_tensors, 0};
  ingot_strbuf_append_bytes(&plan, &ph, sizeof ph);
  pad_to(&plan, 8);
  for (uint32_t i = 0; i < nt; ++i) {
    if (spec->tensors[i].storage != INGOT_STORAGE_ARENA) continue;
    ingot_plan_record_t r;
    memset(&r, 0, sizeof r);
    r.tensor = i;
    r.first_step = items[item_of[i]].first_step; /* the storage's interval */
    r.last_step = items[item_of[i]].last_step;
    r.offset = offsets[i];
    r.bytes = tensor_bytes[i];
    ingot_strbuf_append_bytes(&plan, &r, sizeof r);
  }

  /* ---- Encode the sections and lay out the file. */
  cctx = ZSTD_createCCtx();
  if (!cctx) {
    status = ingot_fail(INGOT_ERROR_OUT_OF_MEMORY, "bundle: cannot create a zstd encoder");
    goto done;
  }
  /* Default level: 19 for small sections (code, manifest), where it is cheap;
   * 3 for large ones (weights), where 19 costs seconds per model and float
   * weights gain little from it. */
  enum { kLargeSection = 1 << 20 };
  encoded = ingot_xcalloc(section_count, sizeof(encoded_t));
  for (uint32_t k = 0; k < section_count; ++k) {
    section_t s;
    memset(&s, 0, sizeof s);
    section_payload(spec, &manifest, &plan, &metadata_section, blobs, blob_sizes, blob_count, k, &s);
    if (!s.raw) s.raw = (const uint8_t*)"";
    int level = spec->zstd_level ? spec->zstd_level : (s.raw_size >= kLargeSection ? 3 : 19);
    status = encode_section(&s, level, spec->weights_codec, cctx, &encoded[k]);
    if (status != INGOT_OK) goto done;
  }
  uint64_t pos = sizeof(ingot_bundle_header_t) + (uint64_t)section_count * sizeof(ingot_section_entry_t);
  for (uint32_t k = 0; k < section_count; ++k) {
    pos = ALIGN_UP(pos, INGOT_SECTION_ALIGN);
    encoded[k].entry.offset = pos;
    pos += encoded[k].entry.stored_size;
  }
  if (pos > SIZE_MAX / 2) {
    status = ingot_fail(INGOT_ERROR_LIMIT, "bundle: %llu bytes", (unsigned long long)pos);
    goto done;
  }
  file = ingot_xcalloc((size_t)pos, 1);
  ingot_section_entry_t* table = (ingot_section_entry_t*)(file + sizeof(ingot_bundle_header_t));
  for (uint32_t k = 0; k < section_count; ++k) {
    const uint8_t* payload = encoded[k].stored;
    if (!payload) {
      section_t s;
      section_payload(spec, &manifest, &plan, &metadata_section, blobs, blob_sizes, blob_count, k, &s);
      payload = s.raw;
    }
    if (encoded[k].entry.stored_size)
      memcpy(file + encoded[k].entry.offset, payload, (size_t)encoded[k].entry.stored_size);
    memcpy(&table[k], &encoded[k].entry, sizeof encoded[k].entry);
  }
  ingot_bundle_header_t header;
  memset(&header, 0, sizeof header);
  memcpy(header.magic, INGOT_BUNDLE_MAGIC, 8);
  header.format_version = format_version;
  header.endian_mark = INGOT_ENDIAN_MARK;
  header.file_size = pos;
  header.section_count = section_count;
  header.table_crc32 = ingot_crc32(0, table, sizeof(ingot_section_entry_t) * section_count);
  header.header_crc32 = ingot_crc32(0, &header, sizeof header);
  memcpy(file, &header, sizeof header);

  *out_data = file;
  *out_size = (size_t)pos;
  file = NULL;
  if (out_report) {
    out_report->arena_bytes = arena_bytes;
    out_report->arena_lower_bound = lower_bound;
    out_report->weight_bytes = weights_total;
    out_report->weight_sections = blob_count;
    out_report->bundle_bytes = pos;
  }

done:
  if (encoded)
    for (uint32_t k = 0; k < section_count; ++k) free(encoded[k].stored);
  free(encoded);
  ZSTD_freeCCtx(cctx);
  free(file);
  for (uint32_t b = 0; b < blob_count; ++b) free(blobs[b]);
  free(blobs);
  free(blob_sizes);
  free(variant_blob);
  free(wrecords);
  ingot_strbuf_free(&strings);
  ingot_strbuf_free(&plan);
  ingot_strbuf_free(&manifest);
  ingot_strbuf_free(&metadata_section);
  free(items);
  free(item_of);
  free(last);
  free(first);
  free(offsets);
  free(tensor_bytes);
  return status;
}
