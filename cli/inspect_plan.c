/* `ingot inspect --plan` and `--svg FILE`: a bundle's memory plan as a table
 * (every arena tensor's offset, size and live steps) and as a picture (steps
 * on x, arena offset on y, one rectangle per tensor).
 *
 * The bundle is opened through the public API first (so it is verified as a
 * program would verify it; step names come from there); the tensor names and
 * the plan records are then read from the MANIFEST and PLAN sections of the
 * file bytes (runtime/ingot_format.h), every offset and size checked again.
 * The SVG is written by a small writer here (no dependency), atomically
 * (ingot_file_write_atomic): a failed write leaves no file. The same bundle
 * and options give the same bytes. */
#include <inttypes.h>
#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "cli.h"
#include "runtime/ingot.h"
#include "runtime/ingot_format.h"

/* One arena tensor of the plan. */
typedef struct plan_row_t {
  uint32_t tensor;      /* tensor index in the manifest */
  const char* name;     /* into plan_t.manifest */
  const char* kind;     /* "input", "output" or "intermediate" */
  uint32_t first_step, last_step;
  uint64_t offset, bytes;
} plan_row_t;

typedef struct plan_t {
  uint64_t arena_bytes, lower_bound_bytes;
  uint32_t step_count;
  const char** kernels; /* per step, the kernel it calls (heap array, names into manifest) */
  plan_row_t* rows;     /* heap */
  uint32_t row_count;
  uint8_t* manifest;    /* decoded MANIFEST (heap): the names point into it */
  uint8_t* plan;        /* decoded PLAN (heap) */
} plan_t;

static void plan_free(plan_t* p) {
  free(p->rows);
  free(p->kernels);
  free(p->manifest);
  free(p->plan);
  memset(p, 0, sizeof(*p));
}

static uint32_t get_u32(const uint8_t* p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static uint64_t get_u64(const uint8_t* p) { return (uint64_t)get_u32(p) | ((uint64_t)get_u32(p + 4) << 32); }

/* The decoded bytes of the first section of `kind` (heap, *out_size bytes);
 * NULL when there is none or it does not decode. Offsets are checked against
 * the file. */
static uint8_t* section_bytes(const uint8_t* file, size_t size, uint32_t kind, size_t* out_size) {
  *out_size = 0;
  if (size < sizeof(ingot_bundle_header_t) || memcmp(file, INGOT_BUNDLE_MAGIC, 8) != 0) return NULL;
  uint32_t count = get_u32(file + offsetof(ingot_bundle_header_t, section_count));
  uint64_t table;
  if (!ingot_mul_u64(count, sizeof(ingot_section_entry_t), &table) || table > size - sizeof(ingot_bundle_header_t))
    return NULL;
  for (uint32_t i = 0; i < count; ++i) {
    const uint8_t* e = file + sizeof(ingot_bundle_header_t) + (size_t)i * sizeof(ingot_section_entry_t);
    if (get_u32(e + offsetof(ingot_section_entry_t, kind)) != kind) continue;
    uint32_t codec = get_u32(e + offsetof(ingot_section_entry_t, codec));
    uint64_t offset = get_u64(e + offsetof(ingot_section_entry_t, offset));
    uint64_t stored = get_u64(e + offsetof(ingot_section_entry_t, stored_size));
    uint64_t raw = get_u64(e + offsetof(ingot_section_entry_t, raw_size));
    uint64_t end;
    if (!ingot_add_u64(offset, stored, &end) || end > size || raw > ((uint64_t)1 << 32) ||
        (codec != INGOT_CODEC_NONE && codec != INGOT_CODEC_ZSTD))
      return NULL;
    uint8_t* out = ingot_xmalloc(raw ? (size_t)raw : 1);
    bool ok;
    if (codec == INGOT_CODEC_NONE) {
      ok = stored == raw;
      if (ok && raw) memcpy(out, file + offset, (size_t)raw);
    } else {
      size_t got = ZSTD_decompress(out, (size_t)raw, file + offset, (size_t)stored);
      ok = !ZSTD_isError(got) && got == raw;
    }
    if (!ok) {
      free(out);
      return NULL;
    }
    *out_size = (size_t)raw;
    return out;
  }
  return NULL;
}

/* Takes `bytes` at the next multiple of 8 from *pos; NULL past `size`. */
static const uint8_t* take(const uint8_t* base, size_t size, uint64_t* pos, uint64_t bytes) {
  uint64_t start = (*pos + 7) & ~(uint64_t)7;
  if (start > size || bytes > size - start) return NULL;
  *pos = start + bytes;
  return base + start;
}

static int plan_read(const char* path, const uint8_t* file, size_t size, plan_t* out) {
  memset(out, 0, sizeof(*out));
  size_t msize = 0, psize = 0;
  out->manifest = section_bytes(file, size, INGOT_SECTION_MANIFEST, &msize);
  out->plan = section_bytes(file, size, INGOT_SECTION_PLAN, &psize);
  if (!out->manifest || !out->plan)
    return ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "'%s': cannot decode its %s section", path,
                           out->manifest ? "plan" : "manifest");
  const uint8_t* m = out->manifest;
  uint64_t pos = 0;
  ingot_manifest_header_t h;
  const uint8_t* p = take(m, msize, &pos, sizeof h);
  if (p) memcpy(&h, p, sizeof h);
  const uint8_t* tensors = p ? take(m, msize, &pos, (uint64_t)h.tensor_count * sizeof(ingot_tensor_record_t)) : NULL;
  uint32_t weight_count = 0;
  for (uint32_t t = 0; tensors && t < h.tensor_count; ++t) {
    ingot_tensor_record_t r;
    memcpy(&r, tensors + (size_t)t * sizeof r, sizeof r);
    weight_count += r.storage == INGOT_STORAGE_WEIGHT;
  }
  const uint8_t* inputs = tensors ? take(m, msize, &pos, 4ull * h.input_count) : NULL;
  const uint8_t* outputs = inputs ? take(m, msize, &pos, 4ull * h.output_count) : NULL;
  ingot_bundle_header_t fh;
  memcpy(&fh, file, sizeof fh); /* checked by the runtime's open before */
  if (outputs && fh.format_version >= 4) { /* output_shapes, then the checks */
    const uint8_t* count = take(m, msize, &pos, 8ull * h.output_count) ? take(m, msize, &pos, 8) : NULL;
    uint32_t checks = 0;
    if (count) memcpy(&checks, count, 4);
    outputs = count && take(m, msize, &pos, 8ull * checks) ? outputs : NULL;
  }
  if (outputs && fh.format_version >= 5) /* input_ranges, input_lo */
    outputs = take(m, msize, &pos, 8ull * h.input_count) && take(m, msize, &pos, 8ull * INGOT_MAX_RANK * h.input_count)
                  ? outputs : NULL;
  const uint8_t* rest = outputs ? take(m, msize, &pos, (uint64_t)h.step_count * sizeof(ingot_step_record_t)) : NULL;
  if (rest) rest = take(m, msize, &pos, 4ull * h.arg_count);
  const uint8_t* kernel_names = rest ? take(m, msize, &pos, 4ull * h.kernel_count) : NULL;
  const uint8_t* launches = NULL;
  if (kernel_names && h.variant_count >= 1 && h.variant_count <= 64) {
    rest = take(m, msize, &pos, (uint64_t)h.variant_count * sizeof(ingot_variant_record_t));
    launches = rest ? take(m, msize, &pos, (uint64_t)h.variant_count * h.step_count * sizeof(ingot_launch_record_t))
                    : NULL;
    rest = launches ? take(m, msize, &pos, (uint64_t)h.variant_count * weight_count * sizeof(ingot_weight_record_t))
                    : NULL;
  } else {
    rest = NULL;
  }
  const char* strings = rest ? (const char*)take(m, msize, &pos, h.string_bytes) : NULL;
  if (!strings || (h.string_bytes && strings[h.string_bytes - 1] != '\0'))
    return ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "'%s': manifest arrays run past the section", path);
  /* Every variant calls kernels of the same names at each step: the first
   * variant's launch records name them. */
  out->kernels = ingot_xcalloc(h.step_count ? h.step_count : 1, sizeof(const char*));
  for (uint32_t st = 0; st < h.step_count; ++st) {
    ingot_launch_record_t l;
    memcpy(&l, launches + (size_t)st * sizeof l, sizeof l);
    uint32_t name = l.kernel < h.kernel_count ? get_u32(kernel_names + 4 * l.kernel) : UINT32_MAX;
    out->kernels[st] = name < h.string_bytes ? strings + name : "";
  }

  ingot_plan_header_t ph;
  uint64_t ppos = 0;
  const uint8_t* pp = take(out->plan, psize, &ppos, sizeof ph);
  if (pp) memcpy(&ph, pp, sizeof ph);
  const uint8_t* records = pp ? take(out->plan, psize, &ppos, (uint64_t)ph.record_count * sizeof(ingot_plan_record_t))
                              : NULL;
  if (!records) return ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "'%s': plan records run past the section", path);
  out->arena_bytes = ph.arena_bytes;
  out->lower_bound_bytes = ph.lower_bound_bytes;
  out->step_count = h.step_count;
  out->rows = ingot_xcalloc(ph.record_count ? ph.record_count : 1, sizeof(plan_row_t));
  for (uint32_t i = 0; i < ph.record_count; ++i) {
    ingot_plan_record_t r;
    memcpy(&r, records + (size_t)i * sizeof r, sizeof r);
    ingot_tensor_record_t t;
    uint64_t end;
    if (r.tensor >= h.tensor_count || r.first_step > r.last_step || (h.step_count && r.last_step >= h.step_count) ||
        !ingot_add_u64(r.offset, r.bytes, &end) || end > ph.arena_bytes)
      return ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "'%s': plan record %u is out of range", path, i);
    memcpy(&t, tensors + (size_t)r.tensor * sizeof t, sizeof t);
    if (t.name >= h.string_bytes)
      return ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "'%s': tensor %u has no name", path, r.tensor);
    plan_row_t* row = &out->rows[i];
    row->tensor = r.tensor;
    row->name = strings + t.name;
    row->kind = "intermediate";
    for (uint32_t k = 0; k < h.output_count; ++k)
      if (get_u32(outputs + 4 * k) == r.tensor) row->kind = "output";
    for (uint32_t k = 0; k < h.input_count; ++k)
      if (get_u32(inputs + 4 * k) == r.tensor) row->kind = "input";
    row->first_step = r.first_step;
    row->last_step = r.last_step;
    row->offset = r.offset;
    row->bytes = r.bytes;
  }
  out->row_count = ph.record_count;
  return INGOT_CLI_EXIT_OK;
}

/* ---- the table ---------------------------------------------------------- */

static int by_step(const void* a, const void* b) {
  const plan_row_t* x = a;
  const plan_row_t* y = b;
  if (x->first_step != y->first_step) return x->first_step < y->first_step ? -1 : 1;
  if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
  return (x->tensor > y->tensor) - (x->tensor < y->tensor);
}

static int by_offset(const void* a, const void* b) {
  const plan_row_t* x = a;
  const plan_row_t* y = b;
  if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
  if (x->first_step != y->first_step) return x->first_step < y->first_step ? -1 : 1;
  return (x->tensor > y->tensor) - (x->tensor < y->tensor);
}

static const char* step_node(const ingot_bundle_t* bundle, uint32_t step) {
  const char* node = NULL;
  if (ingot_bundle_step_info(bundle, step, &node, NULL) != INGOT_OK || !node) return "";
  return node;
}

static int print_table(const char* path, const ingot_bundle_t* bundle, const plan_t* p, bool as_json) {
  if (as_json) {
    json_t* root = json_object();
    json_object_set_new(root, "arena_bytes", json_integer((json_int_t)p->arena_bytes));
    json_object_set_new(root, "arena_lower_bound_bytes", json_integer((json_int_t)p->lower_bound_bytes));
    json_t* steps = json_array();
    for (uint32_t s = 0; s < p->step_count; ++s)
      json_array_append_new(steps, json_pack("{s:i, s:s, s:s}", "step", (int)s, "node", step_node(bundle, s),
                                             "kernel", p->kernels[s]));
    json_object_set_new(root, "steps", steps);
    json_t* tensors = json_array();
    for (uint32_t i = 0; i < p->row_count; ++i) {
      const plan_row_t* r = &p->rows[i];
      json_array_append_new(tensors, json_pack("{s:s, s:s, s:I, s:I, s:i, s:i, s:s}", "name", r->name, "kind", r->kind,
                                               "offset", (json_int_t)r->offset, "bytes", (json_int_t)r->bytes,
                                               "first_step", (int)r->first_step, "last_step", (int)r->last_step,
                                               "first_node", step_node(bundle, r->first_step)));
    }
    json_object_set_new(root, "tensors", tensors);
    char* text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(root);
    if (!text) return ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "cannot format JSON (out of memory?)");
    printf("%s\n", text);
    free(text);
    return INGOT_CLI_EXIT_OK;
  }
  printf("memory plan of %s: %u steps, %u arena tensors\n", path, p->step_count, p->row_count);
  printf("arena: %" PRIu64 " bytes (lower bound %" PRIu64 " bytes", p->arena_bytes, p->lower_bound_bytes);
  if (p->lower_bound_bytes) printf(", %.2fx", (double)p->arena_bytes / (double)p->lower_bound_bytes);
  printf(")\n");
  printf("  %12s %12s  %-11s %-12s  %-28s %s\n", "offset", "bytes", "steps", "kind", "tensor", "first step's node");
  for (uint32_t i = 0; i < p->row_count; ++i) {
    const plan_row_t* r = &p->rows[i];
    char steps[32];
    snprintf(steps, sizeof steps, "%u..%u", r->first_step, r->last_step);
    printf("  %12" PRIu64 " %12" PRIu64 "  %-11s %-12s  %-28s %s\n", r->offset, r->bytes, steps, r->kind, r->name,
           step_node(bundle, r->first_step));
  }
  return INGOT_CLI_EXIT_OK;
}

/* ---- the picture -------------------------------------------------------- */

/* Text with &, <, >, " and ' escaped for XML. */
static void xml_text(ingot_strbuf_t* sb, const char* s) {
  for (; *s; ++s) {
    switch (*s) {
      case '&': ingot_strbuf_append(sb, "&amp;"); break;
      case '<': ingot_strbuf_append(sb, "&lt;"); break;
      case '>': ingot_strbuf_append(sb, "&gt;"); break;
      case '"': ingot_strbuf_append(sb, "&quot;"); break;
      case '\'': ingot_strbuf_append(sb, "&apos;"); break;
      default:
        /* Control characters are not allowed in XML 1.0. */
        if ((unsigned char)*s < 0x20 && *s != '\t' && *s != '\n') ingot_strbuf_append(sb, "?");
        else ingot_strbuf_append_bytes(sb, s, 1);
    }
  }
}

/* A tick step of 1, 2 or 5 times a power of ten giving at most `most` ticks. */
static uint64_t tick_step(uint64_t range, uint64_t most) {
  uint64_t step = 1;
  for (;;) {
    if (range / step <= most) return step;
    if (range / (2 * step) <= most) return 2 * step;
    if (range / (5 * step) <= most) return 5 * step;
    step *= 10;
  }
}

/* "1.5 MiB", "640 B". */
static void bytes_text(uint64_t bytes, char* out, size_t cap) {
  if (bytes >= ((uint64_t)1 << 20)) snprintf(out, cap, "%.1f MiB", (double)bytes / (1024.0 * 1024.0));
  else if (bytes >= 1024) snprintf(out, cap, "%.1f KiB", (double)bytes / 1024.0);
  else snprintf(out, cap, "%" PRIu64 " B", bytes);
}

#define SVG_LEFT 90.0
#define SVG_TOP 50.0
#define SVG_PLOT_W 800.0
#define SVG_PLOT_H 400.0

static void svg_write(const char* path, const ingot_bundle_t* bundle, const plan_t* p, ingot_strbuf_t* sb) {
  static const char* const kColors[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                        "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
  const double width = SVG_LEFT + SVG_PLOT_W + 30.0, height = SVG_TOP + SVG_PLOT_H + 70.0;
  const uint32_t steps = p->step_count ? p->step_count : 1;
  const double arena = p->arena_bytes ? (double)p->arena_bytes : 1.0;
  const double col = SVG_PLOT_W / steps;
  const char* base = strrchr(path, '/');
  base = base ? base + 1 : path;
  char arena_text[32], lower_text[32];
  bytes_text(p->arena_bytes, arena_text, sizeof arena_text);
  bytes_text(p->lower_bound_bytes, lower_text, sizeof lower_text);

  ingot_strbuf_appendf(sb,
                       "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                       "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                       "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n",
                       width, height, width, height);
  ingot_strbuf_append(sb, "<title>memory plan of ");
  xml_text(sb, base);
  ingot_strbuf_append(sb, "</title>\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
  ingot_strbuf_appendf(sb, "<text x=\"%.0f\" y=\"24\" font-size=\"15\">memory plan of ", SVG_LEFT);
  xml_text(sb, base);
  ingot_strbuf_appendf(sb, ": arena %s, lower bound %s, %u steps, %u tensors</text>\n", arena_text, lower_text,
                       p->step_count, p->row_count);
  /* The plot's frame. */
  ingot_strbuf_appendf(sb,
                       "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#f7f7f7\" "
                       "stroke=\"#333\"/>\n",
                       SVG_LEFT, SVG_TOP, SVG_PLOT_W, SVG_PLOT_H);
  /* One rectangle per tensor: x its live steps, y its bytes in the arena. */
  ingot_strbuf_append(sb, "<g stroke=\"#222\" stroke-width=\"0.5\">\n");
  for (uint32_t i = 0; i < p->row_count; ++i) {
    const plan_row_t* r = &p->rows[i];
    double x = SVG_LEFT + col * r->first_step;
    double w = col * (double)(r->last_step - r->first_step + 1);
    double y = SVG_TOP + SVG_PLOT_H * ((double)r->offset / arena);
    double h = SVG_PLOT_H * ((double)r->bytes / arena);
    if (h < 1.0) h = 1.0;
    char size_text[32];
    bytes_text(r->bytes, size_text, sizeof size_text);
    ingot_strbuf_appendf(sb,
                         "<rect class=\"tensor\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
                         "fill=\"%s\" fill-opacity=\"0.85\" data-offset=\"%" PRIu64 "\" data-bytes=\"%" PRIu64
                         "\" data-first-step=\"%u\" data-last-step=\"%u\"><title>",
                         x, y, w, h, kColors[r->tensor % (sizeof kColors / sizeof kColors[0])], r->offset, r->bytes,
                         r->first_step, r->last_step);
    xml_text(sb, r->name);
    ingot_strbuf_appendf(sb, " (%s): %" PRIu64 " bytes (%s) at offset %" PRIu64 ", steps %u..%u, from node '", r->kind,
                         r->bytes, size_text, r->offset, r->first_step, r->last_step);
    xml_text(sb, step_node(bundle, r->first_step));
    ingot_strbuf_append(sb, "'</title></rect>\n");
  }
  ingot_strbuf_append(sb, "</g>\n");
  /* The lower bound: no plan can have its arena end above this line. */
  if (p->lower_bound_bytes && p->lower_bound_bytes <= p->arena_bytes) {
    double y = SVG_TOP + SVG_PLOT_H * ((double)p->lower_bound_bytes / arena);
    ingot_strbuf_appendf(sb,
                         "<line x1=\"%.1f\" y1=\"%.2f\" x2=\"%.1f\" y2=\"%.2f\" stroke=\"#c00\" "
                         "stroke-dasharray=\"6 4\"/>\n"
                         "<text x=\"%.1f\" y=\"%.2f\" fill=\"#c00\" text-anchor=\"end\">lower bound</text>\n",
                         SVG_LEFT, y, SVG_LEFT + SVG_PLOT_W, y, SVG_LEFT + SVG_PLOT_W - 4, y - 4);
  }
  /* Axes: steps along x, offsets down y (0 at the top, like an address). */
  uint64_t xs = tick_step(steps, 20);
  for (uint64_t s = 0; s < steps; s += xs) {
    double x = SVG_LEFT + col * ((double)s + 0.5);
    ingot_strbuf_appendf(sb,
                         "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"#333\"/>"
                         "<text x=\"%.2f\" y=\"%.1f\" text-anchor=\"middle\">%" PRIu64 "</text>\n",
                         x, SVG_TOP + SVG_PLOT_H, x, SVG_TOP + SVG_PLOT_H + 5, x, SVG_TOP + SVG_PLOT_H + 19, s);
  }
  uint64_t ys = tick_step(p->arena_bytes ? p->arena_bytes : 1, 8);
  for (uint64_t o = 0; o <= p->arena_bytes; o += ys) {
    double y = SVG_TOP + SVG_PLOT_H * ((double)o / arena);
    char text[32];
    bytes_text(o, text, sizeof text);
    ingot_strbuf_appendf(sb,
                         "<line x1=\"%.1f\" y1=\"%.2f\" x2=\"%.1f\" y2=\"%.2f\" stroke=\"#333\"/>"
                         "<text x=\"%.1f\" y=\"%.2f\" text-anchor=\"end\">%s</text>\n",
                         SVG_LEFT - 5, y, SVG_LEFT, y, SVG_LEFT - 8, y + 4, text);
    if (ys > p->arena_bytes - o) break;
  }
  ingot_strbuf_appendf(sb, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">step (execution order)</text>\n",
                       SVG_LEFT + SVG_PLOT_W / 2, SVG_TOP + SVG_PLOT_H + 40);
  ingot_strbuf_appendf(sb,
                       "<text x=\"16\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 16 %.1f)\">"
                       "arena offset</text>\n",
                       SVG_TOP + SVG_PLOT_H / 2, SVG_TOP + SVG_PLOT_H / 2);
  ingot_strbuf_append(sb, "</svg>\n");
}

int ingot_cli_inspect_plan(const char* path, bool table, bool as_json, const char* sort, const char* svg_path) {
  int rc = INGOT_CLI_EXIT_FAILURE;
  ingot_bundle_t* bundle = NULL;
  uint8_t* bytes = NULL;
  size_t size = 0;
  plan_t plan;
  memset(&plan, 0, sizeof plan);
  ingot_bundle_options_t look = {.device = "none"};
  ingot_status_t s = ingot_bundle_open_file(path, &look, &bundle);
  if (s) {
    rc = ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "cannot open bundle '%s': %s (%s)", path, ingot_last_error(),
                         ingot_status_name(s));
    goto done;
  }
  ingot_compiler_error_clear();
  if (ingot_file_read(path, &bytes, &size) != INGOT_OK) {
    rc = ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "%s", ingot_compiler_error());
    goto done;
  }
  if ((rc = plan_read(path, bytes, size, &plan)) != INGOT_CLI_EXIT_OK) goto done;
  rc = INGOT_CLI_EXIT_FAILURE;
  qsort(plan.rows, plan.row_count, sizeof(plan_row_t), sort && !strcmp(sort, "offset") ? by_offset : by_step);
  if (svg_path) {
    ingot_strbuf_t svg = {0};
    svg_write(path, bundle, &plan, &svg);
    s = ingot_file_write_atomic(svg_path, svg.data, svg.length);
    ingot_strbuf_free(&svg);
    if (s) {
      rc = ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "--svg: %s", ingot_compiler_error());
      goto done;
    }
  }
  if (table && (rc = print_table(path, bundle, &plan, as_json)) != INGOT_CLI_EXIT_OK) goto done;
  fflush(stdout);
  rc = INGOT_CLI_EXIT_OK;

done:
  plan_free(&plan);
  free(bytes);
  if (bundle) ingot_bundle_release(bundle);
  return rc;
}
