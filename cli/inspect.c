/* `ingot inspect`: what a bundle holds. The bundle is first opened through the
 * public API (so it is verified exactly as a program would); only then are the
 * header and section table read from the file bytes (runtime/ingot_format.h),
 * with every offset and size checked again. */
#include <jansson.h>
#include <stddef.h>
#include <zstd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "runtime/ingot.h"
#include "runtime/ingot_format.h"

static const char kInspectHelp[] =
    "usage: ingot inspect BUNDLE [--json]\n"
    "       ingot inspect BUNDLE --plan [--json] [--sort step|offset] [--svg FILE]\n"
    "       ingot inspect BUNDLE --extract-code TARGET -o PATH\n"
    "\n"
    "Shows a bundle's metadata (model name and version, producer, the source\n"
    "model's SHA-256, compile flags), its inputs and outputs (name, dtype, shape),\n"
    "its code targets (CPU\n"
    "variants) and the one this machine loads and why, each variant's loader, code\n"
    "and weights sections and launch records, its sections (kind, codec, stored and\n"
    "raw size), the signer's key id and its memory plan (arena bytes beside the\n"
    "planner's lower bound).\n"
    "The bundle is verified first.\n"
    "\n"
    "options:\n"
    "  --json      print one JSON object (keys: format_version, file_bytes, metadata\n"
    "              {key: value; {} for a bundle without any}, inputs (a ranged\n"
    "              input also shape_min, shape_max),\n"
    "              outputs, targets, loaded_target, target_reason, loaded_device,\n"
    "              cuda_device and rocm_device {usable, why}, variants, signature\n"
    "              {signed, key_id, public_key}, sections, arena_bytes,\n"
    "              arena_lower_bound_bytes)\n"
    "  --extract-code TARGET -o PATH\n"
    "              write the code of the variant for TARGET (as `targets` lists it),\n"
    "              decoded, to PATH: an ELF shared object (CPU), a CUDA code set\n"
    "              (a CUBIN and PTX, runtime/ingot_format.h) or an AMD GPU code object\n"
    "  --plan      print the memory plan instead: one row per arena tensor (offset,\n"
    "              bytes, live steps first..last inclusive, input/output/intermediate,\n"
    "              name, the node of its first step), the arena size and its lower\n"
    "              bound; with --json one object (arena_bytes, arena_lower_bound_bytes,\n"
    "              steps [{step, node, kernel}], tensors [{name, kind, offset, bytes,\n"
    "              first_step, last_step, first_node}])\n"
    "  --sort step|offset\n"
    "              order of the plan's rows: by first step (the default) or offset\n"
    "  --svg FILE  write the memory plan as an SVG picture to FILE (steps on x, arena\n"
    "              offset on y, one rectangle per tensor with its name and size as a\n"
    "              tooltip); alone it prints nothing, with --plan the table too\n"
    "  -h, --help  show this help\n"
    "\n"
    "A bundle none of whose variants runs on this machine (GPU code where that GPU\n"
    "is missing) is still shown; loaded_target is then empty and target_reason says\n"
    "why each variant was skipped.\n";

typedef struct inspect_section_t {
  uint32_t kind, codec;
  uint64_t offset, stored_size, raw_size;
  char target[INGOT_TARGET_NAME_BYTES + 1];
} inspect_section_t;

static const char* codec_name(uint32_t codec) {
  switch (codec) {
    case INGOT_CODEC_NONE: return "none";
    case INGOT_CODEC_ZSTD: return "zstd";
    default: return "unknown";
  }
}

static uint32_t read_u32(const uint8_t* p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static uint64_t read_u64(const uint8_t* p) {
  return (uint64_t)read_u32(p) | ((uint64_t)read_u32(p + 4) << 32);
}

/* Reads the header and section table; *out_sections is heap (free()). */
static int read_sections(const char* path, const uint8_t* bytes, size_t size,
                         uint32_t* out_version, inspect_section_t** out_sections,
                         uint32_t* out_count) {
  *out_sections = NULL;
  *out_count = 0;
  if (size < sizeof(ingot_bundle_header_t) ||
      memcmp(bytes, INGOT_BUNDLE_MAGIC, 8) != 0) {
    return ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "'%s': not an Ingot bundle (bad magic)", path);
  }
  /* Little-endian fields read at the struct's own offsets. */
  const uint8_t* h = bytes;
  uint32_t version = read_u32(h + offsetof(ingot_bundle_header_t, format_version));
  uint64_t file_size = read_u64(h + offsetof(ingot_bundle_header_t, file_size));
  uint32_t count = read_u32(h + offsetof(ingot_bundle_header_t, section_count));
  if (file_size != size) {
    return ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "'%s': header says %llu bytes, file has %zu",
                           path, (unsigned long long)file_size, size);
  }
  uint64_t table_bytes;
  if (!ingot_mul_u64(count, sizeof(ingot_section_entry_t), &table_bytes) ||
      table_bytes > size - sizeof(ingot_bundle_header_t)) {
    return ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "'%s': section table runs past the file", path);
  }
  inspect_section_t* sections = ingot_xcalloc(count ? count : 1, sizeof(*sections));
  for (uint32_t i = 0; i < count; ++i) {
    const uint8_t* e = bytes + sizeof(ingot_bundle_header_t) + (size_t)i * sizeof(ingot_section_entry_t);
    inspect_section_t* s = &sections[i];
    s->kind = read_u32(e + offsetof(ingot_section_entry_t, kind));
    s->codec = read_u32(e + offsetof(ingot_section_entry_t, codec));
    s->offset = read_u64(e + offsetof(ingot_section_entry_t, offset));
    s->stored_size = read_u64(e + offsetof(ingot_section_entry_t, stored_size));
    s->raw_size = read_u64(e + offsetof(ingot_section_entry_t, raw_size));
    memcpy(s->target, e + offsetof(ingot_section_entry_t, target), INGOT_TARGET_NAME_BYTES);
    s->target[INGOT_TARGET_NAME_BYTES] = '\0';
    uint64_t end;
    if (!ingot_add_u64(s->offset, s->stored_size, &end) || end > size) {
      free(sections);
      return ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "'%s': section %u runs past the file", path, i);
    }
  }
  *out_version = version;
  *out_sections = sections;
  *out_count = count;
  return INGOT_CLI_EXIT_OK;
}

/* One code variant as the manifest describes it (runtime/ingot_format.h). */
typedef struct inspect_variant_t {
  ingot_variant_record_t record;
  uint32_t grid_steps;         /* steps whose launch has a grid (GPU kinds) */
  ingot_launch_record_t first; /* the launch of step 0 */
} inspect_variant_t;

static const char* loader_name(uint32_t kind) {
  switch (kind) {
#define KIND_NAME_(name, value, text) \
  case value: return text;
    INGOT_LOADER_KIND_LIST(KIND_NAME_)
#undef KIND_NAME_
    default: return "unknown";
  }
}

/* Decodes the MANIFEST and reads its variant and launch records; every
 * offset is checked again. *out_variants is heap (free()). */
static int read_variants(const char* path, const uint8_t* bytes, const inspect_section_t* sections,
                         uint32_t section_count, inspect_variant_t** out_variants, uint32_t* out_count) {
  *out_variants = NULL;
  *out_count = 0;
  const inspect_section_t* ms = NULL;
  for (uint32_t i = 0; i < section_count; ++i)
    if (sections[i].kind == INGOT_SECTION_MANIFEST) ms = &sections[i];
  if (!ms || ms->raw_size > ((uint64_t)1 << 32))
    return ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "'%s': no readable manifest", path);
  uint8_t* m = ingot_xmalloc(ms->raw_size ? (size_t)ms->raw_size : 1);
  size_t n = (size_t)ms->raw_size;
  if (ms->codec == INGOT_CODEC_NONE) {
    if (ms->stored_size != ms->raw_size) n = 0;
    else memcpy(m, bytes + ms->offset, n);
  } else {
    size_t got = ZSTD_decompress(m, n, bytes + ms->offset, (size_t)ms->stored_size);
    if (ZSTD_isError(got) || got != n) n = 0;
  }
  ingot_manifest_header_t h;
  if (n < sizeof h) {
    free(m);
    return ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "'%s': cannot decode the manifest", path);
  }
  memcpy(&h, m, sizeof h);
  /* The arrays in order, each at a multiple of 8 (ingot_format.h). */
  uint64_t pos = 0;
  ingot_bundle_header_t fh;
  memcpy(&fh, bytes, sizeof fh); /* checked by the runtime's open before */
  uint64_t sizes[9] = {sizeof h, (uint64_t)h.tensor_count * sizeof(ingot_tensor_record_t),
                       4ull * h.input_count, 4ull * h.output_count,
                       fh.format_version >= 4 ? 8ull * h.output_count : 0, /* output_shapes */
                       fh.format_version >= 4 ? 8 : 0,                     /* check_count, reserved */
                       (uint64_t)h.step_count * sizeof(ingot_step_record_t), 4ull * h.arg_count,
                       4ull * h.kernel_count};
  for (int a = 0; a < 9; ++a) {
    pos = (pos + 7) & ~(uint64_t)7;
    if (a == 6 && fh.format_version >= 4 && pos >= 8 && pos <= n) { /* after the count: the checks */
      uint32_t checks;
      memcpy(&checks, m + pos - 8, 4);
      pos += 8ull * checks;
      if (fh.format_version >= 5) pos += 8ull * h.input_count * (1 + INGOT_MAX_RANK); /* input_ranges, input_lo */
    }
    pos += sizes[a];
  }
  pos = (pos + 7) & ~(uint64_t)7;
  uint64_t variants_at = pos;
  uint64_t launches_at = (variants_at + (uint64_t)h.variant_count * sizeof(ingot_variant_record_t) + 7) & ~(uint64_t)7;
  uint64_t launches_end = launches_at + (uint64_t)h.variant_count * h.step_count * sizeof(ingot_launch_record_t);
  if (h.variant_count > 64 || pos > n || launches_end > n) {
    free(m);
    return ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "'%s': manifest arrays run past the section", path);
  }
  inspect_variant_t* vs = ingot_xcalloc(h.variant_count ? h.variant_count : 1, sizeof(*vs));
  for (uint32_t v = 0; v < h.variant_count; ++v) {
    memcpy(&vs[v].record, m + variants_at + v * sizeof(ingot_variant_record_t), sizeof vs[v].record);
    for (uint32_t s = 0; s < h.step_count; ++s) {
      ingot_launch_record_t l;
      memcpy(&l, m + launches_at + ((uint64_t)v * h.step_count + s) * sizeof l, sizeof l);
      if (s == 0) vs[v].first = l;
      vs[v].grid_steps += l.grid[0] != 0;
    }
    if (vs[v].record.code_section >= section_count || vs[v].record.weights_section >= section_count) {
      free(vs);
      free(m);
      return ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "'%s': variant %u names a missing section", path, v);
    }
  }
  free(m);
  *out_variants = vs;
  *out_count = h.variant_count;
  return INGOT_CLI_EXIT_OK;
}

/* How many variants use weights section `w`. */
static uint32_t weights_users(const inspect_variant_t* vs, uint32_t count, uint32_t w) {
  uint32_t users = 0;
  for (uint32_t v = 0; v < count; ++v) users += vs[v].record.weights_section == w;
  return users;
}

/* The signer, from the SIGNATURE section (not checked here: `ingot verify`
 * does that): "" when unsigned, else the key id (the first four bytes of
 * the public key, as `ingot keygen` and `ingot sign` print it) and the whole
 * key in hex. */
static void signer_text(const uint8_t* bytes, const inspect_section_t* sections, uint32_t count, char key_id[9],
                        char public_key[2 * INGOT_SIGNATURE_PUBLIC_KEY_BYTES + 1]) {
  key_id[0] = public_key[0] = '\0';
  for (uint32_t i = 0; i < count; ++i) {
    if (sections[i].kind != INGOT_SECTION_SIGNATURE || sections[i].stored_size != sizeof(ingot_signature_record_t))
      continue;
    ingot_signature_record_t r;
    memcpy(&r, bytes + sections[i].offset, sizeof r);
    for (uint32_t b = 0; b < INGOT_SIGNATURE_PUBLIC_KEY_BYTES; ++b)
      snprintf(public_key + 2 * b, 3, "%02x", r.public_key[b]);
    snprintf(key_id, 9, "%.8s", public_key);
  }
}

/* "kernel only" or "grid 4x1x1, block 256x1x1, 0 B shared (step 0)". */
static void launch_text(const inspect_variant_t* v, char* out, size_t cap) {
  if (v->grid_steps == 0) {
    snprintf(out, cap, "kernel only");
    return;
  }
  const ingot_launch_record_t* l = &v->first;
  snprintf(out, cap, "grid %ux%ux%u, block %ux%ux%u, %u B shared (step 0)", l->grid[0], l->grid[1],
           l->grid[2], l->block[0], l->block[1], l->block[2], l->shared_bytes);
}

/* `varies`: an output whose size a run computes; its dims are bounds. */
static json_t* tensor_json(const ingot_tensor_info_t* info, bool varies) {
  json_t* shape = json_array();
  for (uint32_t d = 0; d < info->rank; ++d) json_array_append_new(shape, json_integer(info->dims[d]));
  json_t* t = json_pack("{s:s, s:s, s:o}", "name", info->name, "dtype", ingot_dtype_name(info->dtype), "shape", shape);
  if (varies) json_object_set_new(t, "shape_computed_at_run_time", json_true());
  return t;
}

/* A ranged input (lo: each dim's least size, NULL for none): its JSON gains
 * "shape_min" and "shape_max" (= "shape", the largest). */
static json_t* input_json(const ingot_tensor_info_t* info, const int64_t* lo) {
  json_t* t = tensor_json(info, false);
  if (!lo) return t;
  json_t* min = json_array();
  json_t* max = json_array();
  for (uint32_t d = 0; d < info->rank; ++d) {
    json_array_append_new(min, json_integer(lo[d]));
    json_array_append_new(max, json_integer(info->dims[d]));
  }
  json_object_set_new(t, "shape_min", min);
  json_object_set_new(t, "shape_max", max);
  return t;
}

/* `lo`: a ranged input's least sizes (a ranged dim prints "lo..hi"), or NULL. */
static void print_tensor_text(const ingot_tensor_info_t* info, bool varies, const int64_t* lo) {
  char shape[256];
  size_t n = (size_t)snprintf(shape, sizeof(shape), "[");
  for (uint32_t d = 0; d < info->rank && n < sizeof(shape); ++d) {
    if (d && n < sizeof(shape)) n += (size_t)snprintf(shape + n, sizeof(shape) - n, ",");
    if (lo && lo[d] != info->dims[d] && n < sizeof(shape))
      n += (size_t)snprintf(shape + n, sizeof(shape) - n, "%lld..", (long long)lo[d]);
    if (n < sizeof(shape)) n += (size_t)snprintf(shape + n, sizeof(shape) - n, "%lld", (long long)info->dims[d]);
  }
  if (n < sizeof(shape)) snprintf(shape + n, sizeof(shape) - n, "]");
  printf("  %-24s %-8s %s%s\n", info->name, ingot_dtype_name(info->dtype), shape,
         varies ? " at most (its size is computed by each run)" : "");
}

/* --extract-code: the CODE section of `target`, decoded, to `out_path`
 * (written whole or not at all). */
static int extract_code(const char* path, const uint8_t* bytes, const inspect_section_t* sections,
                        uint32_t section_count, const char* target, const char* out_path) {
  const inspect_section_t* sec = NULL;
  ingot_strbuf_t have = {0};
  for (uint32_t i = 0; i < section_count; ++i) {
    if (sections[i].kind != INGOT_SECTION_CODE) continue;
    if (!strcmp(sections[i].target, target)) sec = &sections[i];
    ingot_strbuf_appendf(&have, "%s'%s'", have.length ? ", " : "", sections[i].target);
  }
  if (!sec) {
    int rc = ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "'%s': no code for target '%s' (the bundle has %s)", path,
                             target, have.length ? have.data : "none");
    ingot_strbuf_free(&have);
    return rc;
  }
  ingot_strbuf_free(&have);
  if (sec->raw_size > ((uint64_t)1 << 32))
    return ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "'%s': code for '%s' is too large to extract", path, target);
  size_t n = (size_t)sec->raw_size;
  uint8_t* code = ingot_xmalloc(n ? n : 1);
  bool ok = true;
  if (sec->codec == INGOT_CODEC_NONE) {
    ok = sec->stored_size == sec->raw_size;
    if (ok) memcpy(code, bytes + sec->offset, n);
  } else {
    size_t got = ZSTD_decompress(code, n, bytes + sec->offset, (size_t)sec->stored_size);
    ok = !ZSTD_isError(got) && got == n;
  }
  int rc = INGOT_CLI_EXIT_OK;
  if (!ok)
    rc = ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "'%s': cannot decode the code for '%s'", path, target);
  else if (ingot_file_write_atomic(out_path, code, n) != INGOT_OK)
    rc = ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "%s", ingot_compiler_error());
  free(code);
  return rc;
}

/* The bundle's METADATA entries (runtime/ingot.h), sorted by key. */
static json_t* metadata_json(const ingot_bundle_t* bundle) {
  json_t* o = json_object();
  for (uint32_t i = 0; i < ingot_bundle_metadata_count(bundle); ++i) {
    const char *key, *value;
    if (ingot_bundle_metadata_entry(bundle, i, &key, &value) == INGOT_OK)
      json_object_set_new(o, key, json_string(value));
  }
  return o;
}

static void print_metadata_text(const ingot_bundle_t* bundle) {
  uint32_t n = ingot_bundle_metadata_count(bundle);
  if (n == 0) {
    printf("metadata: none (written before Ingot 0.4, or by a tool that records none)\n");
    return;
  }
  printf("metadata:\n");
  for (uint32_t i = 0; i < n; ++i) {
    const char *key, *value;
    if (ingot_bundle_metadata_entry(bundle, i, &key, &value) == INGOT_OK) printf("  %-18s %s\n", key, value);
  }
}

/* Input i's least sizes into lo (INGOT_MAX_RANK) when it is ranged, else NULL. */
static const int64_t* input_lo(const ingot_bundle_t* bundle, uint32_t i, int64_t* lo) {
  uint32_t rank = 0;
  int64_t hi[INGOT_MAX_RANK];
  if (!ingot_bundle_input_shape_varies(bundle, i) || ingot_bundle_input_range(bundle, i, &rank, lo, hi) != INGOT_OK)
    return NULL;
  return lo;
}

static int inspect_main(const char* path, bool as_json, const char* extract_target, const char* extract_path) {
  int rc = INGOT_CLI_EXIT_FAILURE;
  ingot_bundle_t* bundle = NULL;        /* no code loaded: what the bundle holds */
  ingot_bundle_t* loaded_bundle = NULL; /* the variant this machine loads, if any */
  uint8_t* bytes = NULL;
  size_t size = 0;
  inspect_section_t* sections = NULL;
  uint32_t section_count = 0, version = 0;
  ingot_tensor_info_t* inputs = NULL;
  ingot_tensor_info_t* outputs = NULL;
  inspect_variant_t* variants = NULL;
  uint32_t variant_count = 0;

  /* First verified and read with no code loaded, so that any well-formed
   * bundle is shown, whatever machine its variants are for; then opened as
   * a program would, only to say which variant loads here and why. */
  ingot_bundle_options_t look = {.device = "none"};
  ingot_status_t s = ingot_bundle_open_file(path, &look, &bundle);
  if (s) {
    rc = ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "cannot open bundle '%s': %s (%s)", path,
                         ingot_last_error(), ingot_status_name(s));
    goto done;
  }
  char no_variant[1024] = "";
  s = ingot_bundle_open_file(path, NULL, &loaded_bundle);
  if (s) snprintf(no_variant, sizeof no_variant, "%s", ingot_last_error());

  if (ingot_file_read(path, &bytes, &size) != INGOT_OK) {
    rc = ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "%s", ingot_compiler_error());
    goto done;
  }
  rc = read_sections(path, bytes, size, &version, &sections, &section_count);
  if (rc != INGOT_CLI_EXIT_OK) goto done;
  if (extract_target) {
    rc = extract_code(path, bytes, sections, section_count, extract_target, extract_path);
    goto done;
  }
  rc = read_variants(path, bytes, sections, section_count, &variants, &variant_count);
  if (rc != INGOT_CLI_EXIT_OK) goto done;
  rc = INGOT_CLI_EXIT_FAILURE;

  uint32_t n_in = ingot_bundle_input_count(bundle), n_out = ingot_bundle_output_count(bundle);
  inputs = ingot_xcalloc(n_in ? n_in : 1, sizeof(*inputs));
  outputs = ingot_xcalloc(n_out ? n_out : 1, sizeof(*outputs));
  for (uint32_t i = 0; i < n_in; ++i) {
    if (ingot_bundle_input_info(bundle, i, &inputs[i]) != INGOT_OK) {
      rc = ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "'%s': input %u: %s", path, i, ingot_last_error());
      goto done;
    }
  }
  for (uint32_t i = 0; i < n_out; ++i) {
    if (ingot_bundle_output_info(bundle, i, &outputs[i]) != INGOT_OK) {
      rc = ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "'%s': output %u: %s", path, i,
                           ingot_last_error());
      goto done;
    }
  }
  uint64_t arena = ingot_bundle_arena_bytes(bundle);
  uint64_t lower = ingot_bundle_arena_lower_bound(bundle);
  const char* loaded = loaded_bundle ? ingot_bundle_target(loaded_bundle) : "";
  if (!loaded) loaded = "";
  const char* reason = loaded_bundle ? ingot_bundle_target_reason(loaded_bundle) : no_variant;
  char cuda_why[256], rocm_why[256];
  int cuda_ok = ingot_device_probe("cuda", cuda_why, sizeof cuda_why);
  int rocm_ok = ingot_device_probe("rocm", rocm_why, sizeof rocm_why);
  char signer_id[9], signer_key[2 * INGOT_SIGNATURE_PUBLIC_KEY_BYTES + 1];
  signer_text(bytes, sections, section_count, signer_id, signer_key);

  int64_t lo[INGOT_MAX_RANK];
  if (as_json) {
    json_t* root = json_object();
    json_object_set_new(root, "format_version", json_integer(version));
    json_object_set_new(root, "file_bytes", json_integer((json_int_t)size));
    json_object_set_new(root, "metadata", metadata_json(bundle));
    json_t* ins = json_array();
    for (uint32_t i = 0; i < n_in; ++i) json_array_append_new(ins, input_json(&inputs[i], input_lo(bundle, i, lo)));
    json_object_set_new(root, "inputs", ins);
    json_t* outs = json_array();
    for (uint32_t i = 0; i < n_out; ++i) json_array_append_new(outs, tensor_json(&outputs[i], ingot_bundle_output_shape_varies(bundle, i)));
    json_object_set_new(root, "outputs", outs);
    json_t* targets = json_array();
    json_t* secs = json_array();
    for (uint32_t i = 0; i < section_count; ++i) {
      const inspect_section_t* sec = &sections[i];
      json_t* o = json_pack("{s:s, s:s, s:I, s:I, s:I}", "kind", ingot_section_kind_name(sec->kind),
                            "codec", codec_name(sec->codec), "offset", (json_int_t)sec->offset,
                            "stored_bytes", (json_int_t)sec->stored_size, "raw_bytes",
                            (json_int_t)sec->raw_size);
      if (sec->kind == INGOT_SECTION_CODE) {
        json_object_set_new(o, "target", json_string(sec->target));
        json_array_append_new(targets, json_string(sec->target));
      }
      json_array_append_new(secs, o);
    }
    json_object_set_new(root, "targets", targets);
    json_object_set_new(root, "loaded_target", json_string(loaded));
    json_object_set_new(root, "target_reason", json_string(reason));
    json_object_set_new(root, "loaded_device", json_string(loaded_bundle ? ingot_bundle_device(loaded_bundle) : ""));
    json_object_set_new(root, "cuda_device", json_pack("{s:b, s:s}", "usable", cuda_ok, "why", cuda_why));
    json_object_set_new(root, "rocm_device", json_pack("{s:b, s:s}", "usable", rocm_ok, "why", rocm_why));
    json_t* vars = json_array();
    for (uint32_t v = 0; v < variant_count; ++v) {
      const ingot_variant_record_t* r = &variants[v].record;
      char launch[128];
      launch_text(&variants[v], launch, sizeof launch);
      json_array_append_new(
          vars, json_pack("{s:s, s:s, s:i, s:i, s:I, s:i, s:s}", "target", sections[r->code_section].target,
                          "loader", loader_name(r->loader), "code_section", (int)r->code_section,
                          "weights_section", (int)r->weights_section, "weights_bytes",
                          (json_int_t)sections[r->weights_section].raw_size, "weights_shared_by",
                          (int)weights_users(variants, variant_count, r->weights_section), "launch",
                          launch));
    }
    json_object_set_new(root, "variants", vars);
    json_object_set_new(root, "signature",
                        signer_id[0] ? json_pack("{s:b, s:s, s:s}", "signed", 1, "key_id", signer_id, "public_key",
                                                 signer_key)
                                     : json_pack("{s:b}", "signed", 0));
    json_object_set_new(root, "sections", secs);
    json_object_set_new(root, "arena_bytes", json_integer((json_int_t)arena));
    json_object_set_new(root, "arena_lower_bound_bytes", json_integer((json_int_t)lower));
    char* text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(root);
    if (!text) {
      rc = ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "cannot format JSON (out of memory?)");
      goto done;
    }
    printf("%s\n", text);
    free(text);
  } else {
    printf("bundle: %s (%zu bytes, format version %u)\n", path, size, version);
    print_metadata_text(bundle);
    printf("inputs:\n");
    for (uint32_t i = 0; i < n_in; ++i) print_tensor_text(&inputs[i], false, input_lo(bundle, i, lo));
    printf("outputs:\n");
    for (uint32_t i = 0; i < n_out; ++i) print_tensor_text(&outputs[i], ingot_bundle_output_shape_varies(bundle, i), NULL);
    printf("targets:");
    for (uint32_t i = 0; i < section_count; ++i) {
      if (sections[i].kind == INGOT_SECTION_CODE) printf(" %s", sections[i].target);
    }
    printf(" (loaded here: %s)\n", loaded);
    printf("variant: %s\n", reason);
    printf("cuda: %s%s\n", cuda_ok ? "" : "none: ", cuda_why);
    printf("rocm: %s%s\n", rocm_ok ? "" : "none: ", rocm_why);
    printf("variants:\n");
    for (uint32_t v = 0; v < variant_count; ++v) {
      const ingot_variant_record_t* r = &variants[v].record;
      char launch[128];
      launch_text(&variants[v], launch, sizeof launch);
      uint32_t users = weights_users(variants, variant_count, r->weights_section);
      printf("  %u %-20s loader %s, code section %u, weights section %u (%llu bytes%s), launch: %s\n", v,
             sections[r->code_section].target, loader_name(r->loader), r->code_section,
             r->weights_section, (unsigned long long)sections[r->weights_section].raw_size,
             users > 1 ? ", shared" : "", launch);
    }
    if (signer_id[0])
      printf("signature: signed by key id %s (public key %s; not checked here: ingot verify)\n", signer_id,
             signer_key);
    else
      printf("signature: none\n");
    printf("sections:\n");
    printf("  %-10s %-6s %12s %12s  %s\n", "kind", "codec", "stored", "raw", "target");
    for (uint32_t i = 0; i < section_count; ++i) {
      const inspect_section_t* sec = &sections[i];
      printf("  %-10s %-6s %12llu %12llu  %s\n", ingot_section_kind_name(sec->kind),
             codec_name(sec->codec), (unsigned long long)sec->stored_size,
             (unsigned long long)sec->raw_size,
             sec->kind == INGOT_SECTION_CODE ? sec->target : "");
    }
    printf("arena: %llu bytes (lower bound %llu bytes", (unsigned long long)arena,
           (unsigned long long)lower);
    if (lower > 0) printf(", %.2fx", (double)arena / (double)lower);
    printf(")\n");
  }
  fflush(stdout);
  rc = INGOT_CLI_EXIT_OK;

done:
  free(inputs);
  free(outputs);
  free(variants);
  free(sections);
  free(bytes);
  if (bundle) ingot_bundle_release(bundle);
  if (loaded_bundle) ingot_bundle_release(loaded_bundle);
  return rc;
}

enum { OPT_JSON = 256, OPT_EXTRACT_CODE, OPT_PLAN, OPT_SORT, OPT_SVG };

static const struct option kInspectOptions[] = {
    {"help", no_argument, NULL, 'h'},
    {"json", no_argument, NULL, OPT_JSON},
    {"extract-code", required_argument, NULL, OPT_EXTRACT_CODE},
    {"output", required_argument, NULL, 'o'},
    {"plan", no_argument, NULL, OPT_PLAN},
    {"sort", required_argument, NULL, OPT_SORT},
    {"svg", required_argument, NULL, OPT_SVG},
    {NULL, 0, NULL, 0},
};

int ingot_cli_inspect(int argc, char** argv) {
  const char* path = NULL;
  bool as_json = false;
  const char* extract_target = NULL;
  const char* extract_path = NULL;
  bool plan = false;
  const char* sort = NULL;
  const char* svg_path = NULL;
  char target_text[INGOT_CLI_TARGET_BYTES];
  ingot_cli_args_t args;
  ingot_cli_args_init(&args, "inspect", argc, argv, "ho:", kInspectOptions);
  for (int c; (c = ingot_cli_args_next(&args)) != INGOT_CLI_ARG_END;) {
    switch (c) {
      case INGOT_CLI_ARG_BAD: return INGOT_CLI_EXIT_USAGE;
      case 'h': fputs(kInspectHelp, stdout); return INGOT_CLI_EXIT_OK;
      case OPT_JSON: as_json = true; break;
      case OPT_PLAN: plan = true; break;
      case OPT_SORT:
        if (strcmp(args.value, "step") != 0 && strcmp(args.value, "offset") != 0)
          return ingot_cli_usage_error("inspect", "--sort takes step or offset, not '%s'", args.value);
        sort = args.value;
        break;
      case OPT_SVG:
        if (!*args.value) return ingot_cli_usage_error("inspect", "--svg needs a FILE");
        svg_path = args.value;
        break;
      case 'o':
        if (!*args.value) return ingot_cli_usage_error("inspect", "-o needs a PATH");
        extract_path = args.value;
        break;
      case OPT_EXTRACT_CODE:
        /* The target's options may follow unquoted, as after --target. */
        extract_target = ingot_cli_args_target(&args, target_text, sizeof target_text);
        if (!extract_target) return ingot_cli_usage_error("inspect", "target '%s ...': too long", args.value);
        break;
      case INGOT_CLI_ARG_POSITIONAL:
        if (path) return ingot_cli_usage_error("inspect", "unexpected argument '%s' (one bundle at a time)", args.value);
        path = args.value;
        break;
      default: return ingot_cli_usage_error("inspect", "unhandled option (a bug)");
    }
  }
  if (!path) return ingot_cli_usage_error("inspect", "no bundle given");
  if (!extract_target != !extract_path)
    return ingot_cli_usage_error("inspect", "%s", extract_target ? "--extract-code needs -o PATH"
                                                                   : "-o needs --extract-code TARGET");
  if ((plan || svg_path) && extract_target)
    return ingot_cli_usage_error("inspect", "--extract-code does not go with --plan or --svg");
  if (sort && !plan) return ingot_cli_usage_error("inspect", "--sort needs --plan");
  if (plan || svg_path) return ingot_cli_inspect_plan(path, plan, as_json, sort, svg_path);
  return inspect_main(path, as_json, extract_target, extract_path);
}
