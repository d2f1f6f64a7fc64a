/* The firmware writer (packager.h, ingot_firmware_build): the bundle's data
 * as a freestanding C library instead of a file for the runtime.
 *
 * From the same spec the bundle is written from (tensors, steps, kernel
 * names, the code variant's weights) and the same memory plan
 * (ingot_bundle_plan), plus the kernels' C source from codegen:
 *
 *   ingot_model.h          the entry point, the arena size, and each input's
 *                          and output's name, dtype and shape as macros
 *   ingot_model.c          the kernel environment (a single-threaded
 *                          parallel_for, expf/logf/tanhf/erff/powf in plain
 *                          C), the step table, ingot_model_run
 *   ingot_model_kernels.c  the kernels: the codegen source, unchanged; its
 *                          kernel table (ingot_library_query) is how
 *                          ingot_model.c finds them, by name
 *   ingot_model_weights.c  every weight as a 64-byte aligned const array
 *
 * Inputs and outputs: the arena has a slot for each (the plan places them
 * like any tensor); ingot_model_run copies the inputs into their slots
 * first and the outputs out of theirs last. That is always correct (an
 * input a view of an output, an output read by a later step) at the price
 * of the copies and of the slots in the arena.
 *
 * The environment's fields come from runtime/ingot_kernel_env.def: a row of
 * a type this file does not know fails with INGOT_ERROR_INTERNAL (add its
 * declarator and value here with the row). */
#include <stdlib.h>
#include <string.h>

#include "packager/packager.h"

typedef struct env_row_t {
  const char* type;
  const char* name;
} env_row_t;

static const env_row_t k_env_rows[] = {
#define INGOT_KERNEL_ENV_FIELD(type, name) {#type, #name},
#include "runtime/ingot_kernel_env.def"
};

/* The environment's field declarator and value for ingot_model.c. */
static ingot_status_t env_row_text(const env_row_t* row, ingot_strbuf_t* decl, ingot_strbuf_t* value) {
  const char* t = row->type;
  const char* n = row->name;
  if (!strcmp(t, "U32")) {
    ingot_strbuf_appendf(decl, "  uint32_t %s;\n", n);
    if (!strcmp(n, "abi_version")) ingot_strbuf_appendf(value, "  %uu,\n", INGOT_KERNEL_ABI_VERSION);
    else if (!strcmp(n, "thread_count")) ingot_strbuf_append(value, "  1u,\n");
    else ingot_strbuf_append(value, "  0u,\n");
  } else if (!strcmp(t, "PTR")) {
    ingot_strbuf_appendf(decl, "  void* %s;\n", n);
    ingot_strbuf_append(value, "  0,\n");
  } else if (!strcmp(t, "PARALLEL_FOR")) {
    ingot_strbuf_appendf(decl, "  void (*%s)(void* pool, int64_t count, im_body_fn body, void* context);\n", n);
    ingot_strbuf_append(value, "  im_parallel_for,\n");
  } else if (!strcmp(t, "F32_F32")) {
    ingot_strbuf_appendf(decl, "  float (*%s)(float);\n", n);
    ingot_strbuf_appendf(value, "  im_%s,\n", n);
  } else if (!strcmp(t, "F32_F32_F32")) {
    ingot_strbuf_appendf(decl, "  float (*%s)(float, float);\n", n);
    ingot_strbuf_appendf(value, "  im_%s,\n", n);
  } else {
    return ingot_fail(INGOT_ERROR_INTERNAL, "firmware: kernel environment field '%s' has type %s, which the "
                      "firmware writer does not know", n, t);
  }
  return INGOT_OK;
}

/* What ingot_model.c holds whatever the model: the math, parallel_for,
 * a byte copy. Written for this project; the math is
 * within a few ulp of the correctly rounded float (about 1 ulp for most
 * result, a few near the ends of erf's pieces), in float only, so that a
 * machine with a single-precision FPU (Cortex-M4F) needs no double
 * emulation; no library call. */
static const char k_glue_prelude[] =
    "typedef union { float f; uint32_t u; } im_f32;\n"
    "\n"
    "static float im_f32_bits(uint32_t u) { im_f32 v; v.u = u; return v.f; }\n"
    "static uint32_t im_bits_f32(float f) { im_f32 v; v.f = f; return v.u; }\n"
    "#define IM_INFF im_f32_bits(0x7f800000u)\n"
    "#define IM_NANF im_f32_bits(0x7fc00000u)\n"
    "#define IM_LN2_HI 0.693145751953125f      /* ln 2 in 16 bits: k * hi is exact */\n"
    "#define IM_LN2_LO 1.42860682030941723e-06f /* ln 2 - IM_LN2_HI */\n"
    "\n"
    "/* 2^k for -126 <= k <= 127. */\n"
    "static float im_pow2f(int32_t k) { return im_f32_bits((uint32_t)(k + 127) << 23); }\n"
    "\n"
    "/* e^r - 1 for |r| <= 0.35: Taylor to r^9/9! by Horner. */\n"
    "static float im_expm1_small(float r) {\n"
    "  float p = 1.0f;\n"
    "  for (int32_t n = 9; n >= 2; --n) p = 1.0f + r * p / (float)n;\n"
    "  return r * p;\n"
    "}\n"
    "\n"
    "/* e^x: x = k ln2 + r, |r| <= ln2/2 (ln2 in two parts), e^r by Taylor,\n"
    " * times 2^k (in two factors where the result is subnormal). */\n"
    "static float im_expf(float x) {\n"
    "  if (x != x) return x;\n"
    "  if (x > 88.7228394f) return IM_INFF;\n"
    "  if (x < -103.972084f) return 0.0f;\n"
    "  float kf = x * 1.44269502f;\n"
    "  int32_t k = (int32_t)(kf + (kf >= 0.0f ? 0.5f : -0.5f));\n"
    "  float r = (x - (float)k * IM_LN2_HI) - (float)k * IM_LN2_LO;\n"
    "  float p = 1.0f + im_expm1_small(r);\n"
    "  if (k < -125) return p * im_pow2f(k + 64) * im_pow2f(-64);\n"
    "  if (k > 127) return p * im_pow2f(k - 1) * 2.0f;\n"
    "  return p * im_pow2f(k);\n"
    "}\n"
    "\n"
    "/* ln x: x = m 2^e with sqrt(1/2) < m <= sqrt(2), ln m = 2 atanh(s),\n"
    " * s = (m-1)/(m+1), by its series to s^11. */\n"
    "static float im_logf(float x) {\n"
    "  if (x != x || x < 0.0f) return IM_NANF;\n"
    "  if (x == 0.0f) return -IM_INFF;\n"
    "  if (x == IM_INFF) return x;\n"
    "  int32_t e = 0;\n"
    "  if (x < 1.17549435e-38f) { /* subnormal */\n"
    "    x *= 16777216.0f;        /* 2^24 */\n"
    "    e = -24;\n"
    "  }\n"
    "  uint32_t u = im_bits_f32(x);\n"
    "  e += (int32_t)((u >> 23) & 0xff) - 127;\n"
    "  float m = im_f32_bits((u & 0x007fffffu) | 0x3f800000u);\n"
    "  if (m > 1.41421354f) {\n"
    "    m *= 0.5f;\n"
    "    e += 1;\n"
    "  }\n"
    "  float s = (m - 1.0f) / (m + 1.0f), z = s * s;\n"
    "  float q = z * (1.0f / 3 + z * (1.0f / 5 + z * (1.0f / 7 + z * (1.0f / 9 + z * (1.0f / 11)))));\n"
    "  float ef = (float)e;\n"
    "  return ef * IM_LN2_HI + (ef * IM_LN2_LO + (2.0f * s + 2.0f * s * q));\n"
    "}\n"
    "\n"
    "/* tanh |x| = m / (m + 2) with m = e^(2|x|) - 1. */\n"
    "static float im_tanhf(float x) {\n"
    "  if (x != x) return x;\n"
    "  float a = x < 0.0f ? -x : x, r;\n"
    "  if (a > 10.0f) r = 1.0f;\n"
    "  else {\n"
    "    float m = 2.0f * a <= 0.35f ? im_expm1_small(2.0f * a) : im_expf(2.0f * a) - 1.0f;\n"
    "    r = m / (m + 2.0f);\n"
    "  }\n"
    "  return x < 0.0f ? -r : r;\n"
    "}\n"
    "\n"
    "/* erf: below 1 its Maclaurin series; from 1 to 4, 1 - erfc with erfc by\n"
    " * its continued fraction e^(-a^2) / sqrt(pi) / (a + 1/2 / (a + 1 / (a +\n"
    " * 3/2 / (a + ...)))), evaluated backwards; above 4, 1 (1 - erf(4) <\n"
    " * 2^-25). */\n"
    "static float im_erff(float x) {\n"
    "  if (x != x) return x;\n"
    "  float a = x < 0.0f ? -x : x, r = 1.0f;\n"
    "  if (a < 1.0f) {\n"
    "    float a2 = a * a, term = a, sum = 0.0f;\n"
    "    for (int32_t n = 0; n < 24; ++n) {\n"
    "      sum += term / (float)(2 * n + 1);\n"
    "      term *= -a2 / (float)(n + 1);\n"
    "    }\n"
    "    r = 1.12837917f * sum; /* 2 / sqrt(pi) */\n"
    "  } else if (a < 4.0f) {\n"
    "    float f = a;\n"
    "    for (int32_t n = 80; n >= 1; --n) f = a + 0.5f * (float)n / f;\n"
    "    /* e^(-a^2) with a^2 split so that the exponent is exact to float */\n"
    "    float hi = im_f32_bits(im_bits_f32(a) & 0xfffff000u), lo = a - hi;\n"
    "    float e = im_expf(-hi * hi) * im_expf(-(a + hi) * lo);\n"
    "    r = 1.0f - e * 0.564189584f / f; /* 1 / sqrt(pi) */\n"
    "  }\n"
    "  return x < 0.0f ? -r : r;\n"
    "}\n"
    "\n"
    "/* 1 when y is an odd integer, 0 when an even one, -1 when not an integer. */\n"
    "static int32_t im_parity(float y) {\n"
    "  float a = y < 0.0f ? -y : y;\n"
    "  if (a >= 16777216.0f) return 0; /* 2^24: every float above is even */\n"
    "  int32_t i = (int32_t)a;\n"
    "  if ((float)i != a) return -1;\n"
    "  return i & 1;\n"
    "}\n"
    "\n"
    "/* x^y: integer |y| <= 64 by squaring; else e^(y ln x), y ln x split in\n"
    " * two parts so that the product keeps its low bits (the log's own error,\n"
    " * |y ln x| ulp of the result at most, remains). */\n"
    "static float im_powf(float x, float y) {\n"
    "  if (y == 0.0f || x == 1.0f) return 1.0f;\n"
    "  if (x != x || y != y) return IM_NANF;\n"
    "  int32_t parity = im_parity(y);\n"
    "  float ax = x < 0.0f ? -x : x;\n"
    "  if (y == IM_INFF || y == -IM_INFF) {\n"
    "    if (ax == 1.0f) return 1.0f;\n"
    "    return (ax > 1.0f) == (y > 0.0f) ? IM_INFF : 0.0f;\n"
    "  }\n"
    "  int32_t negative = (int32_t)(im_bits_f32(x) >> 31);\n"
    "  if (x < 0.0f && parity < 0) return IM_NANF;\n"
    "  float sign = negative && parity == 1 ? -1.0f : 1.0f;\n"
    "  if (ax == 0.0f) return sign * (y < 0.0f ? IM_INFF : 0.0f);\n"
    "  if (ax == IM_INFF) return sign * (y < 0.0f ? 0.0f : IM_INFF);\n"
    "  if (parity >= 0 && y <= 64.0f && y >= -64.0f) { /* small integer powers by squaring */\n"
    "    int32_t n = (int32_t)(y < 0.0f ? -y : y);\n"
    "    float r = 1.0f, b = ax;\n"
    "    for (; n; n >>= 1, b *= b)\n"
    "      if (n & 1) r *= b;\n"
    "    return sign * (y < 0.0f ? 1.0f / r : r);\n"
    "  }\n"
    "  float l = im_logf(ax);\n"
    "  /* y * l in two parts: hi exact product of 12-bit halves, lo the rest */\n"
    "  float yh = im_f32_bits(im_bits_f32(y) & 0xfffff000u), yl = y - yh;\n"
    "  float lh = im_f32_bits(im_bits_f32(l) & 0xfffff000u), ll = l - lh;\n"
    "  float t_hi = yh * lh, t_lo = yh * ll + yl * l;\n"
    "  return sign * im_expf(t_hi) * im_expf(t_lo);\n"
    "}\n"
    "\n"
    "typedef void (*im_body_fn)(void* context, int64_t begin, int64_t end);\n"
    "\n"
    "/* Single-threaded: the whole range in one call. */\n"
    "static void im_parallel_for(void* pool, int64_t count, im_body_fn body, void* context) {\n"
    "  (void)pool;\n"
    "  if (count > 0) body(context, 0, count);\n"
    "}\n"
    "\n"
    "static void im_copy(uint8_t* dst, const uint8_t* src, uint32_t bytes) {\n"
    "  for (uint32_t i = 0; i < bytes; ++i) dst[i] = src[i];\n"
    "}\n"
    "\n"
    "static int im_same(const char* a, const char* b) {\n"
    "  while (*a && *a == *b) ++a, ++b;\n"
    "  return *a == *b;\n"
    "}\n"
    "\n"
    "\n";

static const char k_glue_run[] =
    "int ingot_model_run(void* arena, const void* const* inputs, void* const* outputs) {\n"
    "  uint8_t* a = (uint8_t*)arena;\n"
    "  if (!a || ((uintptr_t)a & (INGOT_MODEL_ARENA_ALIGN - 1u)) || !inputs || !outputs)\n"
    "    return INGOT_MODEL_ERROR_ARGUMENT;\n"
    "  const im_kernel_library* lib = ingot_library_query(IM_KERNEL_ABI);\n"
    "  if (!lib) return INGOT_MODEL_ERROR_KERNELS;\n"
    "  /* The kernels by name, once a run (the table is the kernels' own). */\n"
    "  im_kernel_fn fns[IM_KERNEL_COUNT];\n"
    "  for (uint32_t k = 0; k < IM_KERNEL_COUNT; ++k) {\n"
    "    fns[k] = 0;\n"
    "    for (uint32_t e = 0; e < lib->count && !fns[k]; ++e)\n"
    "      if (im_same(lib->entries[e].name, im_kernel_names[k])) fns[k] = lib->entries[e].fn;\n"
    "    if (!fns[k]) return INGOT_MODEL_ERROR_KERNELS;\n"
    "  }\n"
    "  for (uint32_t i = 0; i != INGOT_MODEL_INPUT_COUNT; ++i) {\n"
    "    if (!inputs[i]) return INGOT_MODEL_ERROR_ARGUMENT;\n"
    "    im_copy(a + im_inputs[i].offset, (const uint8_t*)inputs[i], im_inputs[i].bytes);\n"
    "  }\n"
    "  for (uint32_t s = 0; s < IM_STEP_COUNT; ++s) {\n"
    "    void* args[IM_MAX_ARGS];\n"
    "    const im_step* st = &im_steps[s];\n"
    "    for (uint32_t k = 0; k < st->arg_count; ++k) {\n"
    "      const im_arg* g = &im_args[st->first_arg + k];\n"
    "      args[k] = g->weight ? (void*)im_weights[g->at] : (void*)(a + g->at);\n"
    "    }\n"
    "    int32_t rc = fns[st->kernel](&im_env, args);\n"
    "    if (rc) return rc > 0 ? rc : INGOT_MODEL_ERROR_KERNELS;\n"
    "  }\n"
    "  for (uint32_t i = 0; i != INGOT_MODEL_OUTPUT_COUNT; ++i) {\n"
    "    if (!outputs[i]) return INGOT_MODEL_ERROR_ARGUMENT;\n"
    "    im_copy((uint8_t*)outputs[i], a + im_outputs[i].offset, im_outputs[i].bytes);\n"
    "  }\n"
    "  return 0;\n"
    "}\n";

static uint64_t tensor_bytes(const ingot_bundle_tensor_t* t) {
  uint64_t n = ingot_dtype_size(t->dtype);
  for (uint32_t d = 0; d < t->rank; ++d) n *= (uint64_t)t->dims[d];
  return n;
}

/* A name as the inside of a C string literal and of a comment. */
static void append_quoted(ingot_strbuf_t* sb, const char* s) {
  for (; s && *s; ++s) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') ingot_strbuf_appendf(sb, "\\%c", c);
    else if (c == '*' && s[1] == '/') ingot_strbuf_append(sb, "*\\x2f"); /* never closes a comment */
    else if (c < 0x20 || c >= 0x7f) ingot_strbuf_appendf(sb, "\\x%02x\"\"", c);
    else ingot_strbuf_appendf(sb, "%c", c);
  }
}

/* One input's or output's macros in ingot_model.h. */
static void header_tensor(ingot_strbuf_t* h, const char* kind, uint32_t i, const ingot_bundle_tensor_t* t) {
  uint64_t bytes = tensor_bytes(t);
  ingot_strbuf_appendf(h, "/* %s %u: ", kind, i);
  append_quoted(h, t->name);
  ingot_strbuf_appendf(h, ", %s, shape ", ingot_dtype_name(t->dtype));
  for (uint32_t d = 0; d < t->rank; ++d) ingot_strbuf_appendf(h, "%s%lld", d ? "x" : "", (long long)t->dims[d]);
  if (!t->rank) ingot_strbuf_append(h, "(scalar)");
  ingot_strbuf_append(h, " */\n");
  const char* K = kind[0] == 'i' ? "INPUT" : "OUTPUT";
  ingot_strbuf_appendf(h, "#define INGOT_MODEL_%s%u_NAME \"", K, i);
  append_quoted(h, t->name);
  ingot_strbuf_append(h, "\"\n");
  ingot_strbuf_appendf(h, "#define INGOT_MODEL_%s%u_DTYPE \"%s\"\n", K, i, ingot_dtype_name(t->dtype));
  ingot_strbuf_appendf(h, "#define INGOT_MODEL_%s%u_RANK %u\n", K, i, t->rank);
  ingot_strbuf_appendf(h, "#define INGOT_MODEL_%s%u_DIMS {", K, i);
  for (uint32_t d = 0; d < t->rank; ++d) ingot_strbuf_appendf(h, "%s%lld", d ? ", " : "", (long long)t->dims[d]);
  ingot_strbuf_append(h, "}\n");
  ingot_strbuf_appendf(h, "#define INGOT_MODEL_%s%u_ELEMENTS %lluu\n", K, i,
                       (unsigned long long)(bytes / ingot_dtype_size(t->dtype)));
  ingot_strbuf_appendf(h, "#define INGOT_MODEL_%s%u_BYTES %lluu\n\n", K, i, (unsigned long long)bytes);
}

void ingot_firmware_free(ingot_firmware_t* fw) {
  if (!fw) return;
  for (uint32_t f = 0; f < INGOT_FIRMWARE_FILE_COUNT; ++f) ingot_strbuf_free(&fw->files[f].text);
  memset(fw, 0, sizeof(*fw));
}

ingot_status_t ingot_firmware_build(const ingot_bundle_spec_t* spec, const char* kernel_source, size_t source_size,
                                    ingot_firmware_t* out) {
  if (out) memset(out, 0, sizeof(*out));
  if (!spec || !kernel_source || !source_size || !out)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "firmware: NULL spec, source or output");
  for (uint32_t i = 0; spec->input_range_dims && i < spec->input_count; ++i)
    if (spec->input_range_dims[i])
      return ingot_fail(INGOT_ERROR_UNSUPPORTED,
                        "firmware: input '%s' has ranged dims (--input-shape with a range), which firmware output "
                        "cannot take yet; give it one shape, or use a bundle", spec->tensors[spec->inputs[i]].name);
  for (uint32_t i = 0; spec->output_shapes && i < spec->output_count; ++i)
    if (spec->output_shapes[i] != UINT32_MAX)
      return ingot_fail(INGOT_ERROR_UNSUPPORTED,
                        "firmware: output '%s' has a size computed at run time, which firmware output cannot "
                        "report yet; use a bundle", spec->tensors[spec->outputs[i]].name);
  if (spec->check_count)
    return ingot_fail(INGOT_ERROR_UNSUPPORTED, "firmware: the model has checks a run must make (%s), which firmware "
                      "output cannot report yet; use a bundle", spec->check_messages[0]);
  const uint32_t nt = spec->tensor_count;
  uint64_t* offsets = ingot_xcalloc(nt ? nt : 1, sizeof(uint64_t));
  uint64_t arena_bytes = 0, lower_bound = 0;
  ingot_status_t s = ingot_bundle_plan(spec, offsets, &arena_bytes, &lower_bound);
  if (s) {
    free(offsets);
    return s;
  }
  /* The weights: the (first) variant's own layout where it has one. */
  const ingot_bundle_weight_t* own = spec->code_count ? spec->codes[0].weights : NULL;
  uint32_t max_args = 1;
  for (uint32_t k = 0; k < spec->step_count; ++k)
    if (spec->steps[k].arg_count > max_args) max_args = spec->steps[k].arg_count;
  const uint64_t limit = UINT32_MAX;
  if (arena_bytes > limit) s = ingot_fail(INGOT_ERROR_LIMIT, "firmware: an arena of %llu bytes does not fit 32 bits",
                                          (unsigned long long)arena_bytes);
  for (uint32_t i = 0; !s && i < nt; ++i)
    if (tensor_bytes(&spec->tensors[i]) > limit)
      s = ingot_fail(INGOT_ERROR_LIMIT, "firmware: tensor '%s' is over 4 GiB", spec->tensors[i].name);
  if (s) {
    free(offsets);
    return s;
  }

  ingot_firmware_file_t* F = out->files;
  F[0].name = "ingot_model.h";
  F[1].name = "ingot_model.c";
  F[2].name = "ingot_model_kernels.c";
  F[3].name = "ingot_model_weights.c";

  /* ---- ingot_model.h */
  ingot_strbuf_t* h = &F[0].text;
  ingot_strbuf_append(h,
      "/* Generated by Ingot (firmware output): do not edit.\n"
      " *\n"
      " * A freestanding C library: no libc, no malloc, no libm, single-threaded.\n"
      " * Build ingot_model.c, ingot_model_kernels.c and ingot_model_weights.c with\n"
      " * any C99 compiler (e.g. -ffreestanding -O2), little-endian targets only\n"
      " * (the weights are stored as little-endian bytes).\n"
      " *\n"
      " * ingot_model_run(arena, inputs, outputs) runs the model once:\n"
      " *   arena    INGOT_MODEL_ARENA_BYTES of scratch memory, aligned to\n"
      " *            INGOT_MODEL_ARENA_ALIGN, owned by the caller, not read before\n"
      " *            and free again after the call;\n"
      " *   inputs   INGOT_MODEL_INPUT_COUNT pointers, input i dense row-major\n"
      " *            with INGOT_MODEL_INPUTi_BYTES bytes (copied into the arena);\n"
      " *   outputs  INGOT_MODEL_OUTPUT_COUNT pointers to INGOT_MODEL_OUTPUTi_BYTES\n"
      " *            bytes each (copied out of the arena at the end).\n"
      " * Returns 0, or INGOT_MODEL_ERROR_ARGUMENT (NULL or misaligned arena, a NULL\n"
      " * pointer), INGOT_MODEL_ERROR_KERNELS (the kernels do not match this file:\n"
      " * regenerate all files together), or a kernel's own nonzero code.\n"
      " * Reentrant for distinct arenas; nothing is kept between calls.\n"
      " *\n"
      " * Symbols: ingot_model_run, ingot_library_query (the kernel table),\n"
      " * ingot_model_w0... (the weights), and memcpy, memmove and memset, which\n"
      " * ingot_model_kernels.c defines (hidden) because compilers emit calls to\n"
      " * them even in freestanding code: link one model per image. */\n"
      "#ifndef INGOT_MODEL_H_\n#define INGOT_MODEL_H_\n\n#include <stdint.h>\n\n");
  ingot_strbuf_appendf(h, "#define INGOT_MODEL_ARENA_BYTES %lluu\n", (unsigned long long)arena_bytes);
  ingot_strbuf_appendf(h, "#define INGOT_MODEL_ARENA_ALIGN 64u\n");
  ingot_strbuf_appendf(h, "#define INGOT_MODEL_ERROR_ARGUMENT (-1)\n#define INGOT_MODEL_ERROR_KERNELS (-2)\n\n");
  ingot_strbuf_appendf(h, "#define INGOT_MODEL_INPUT_COUNT %uu\n", spec->input_count);
  ingot_strbuf_appendf(h, "#define INGOT_MODEL_OUTPUT_COUNT %uu\n\n", spec->output_count);
  for (uint32_t i = 0; i < spec->input_count; ++i) header_tensor(h, "input", i, &spec->tensors[spec->inputs[i]]);
  for (uint32_t i = 0; i < spec->output_count; ++i)
    header_tensor(h, "output", i, &spec->tensors[spec->outputs[i]]);
  ingot_strbuf_append(h,
      "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
      "int ingot_model_run(void* arena, const void* const* inputs, void* const* outputs);\n\n"
      "#ifdef __cplusplus\n}\n#endif\n\n#endif /* INGOT_MODEL_H_ */\n");

  /* ---- ingot_model_kernels.c: the codegen source as it is. */
  ingot_strbuf_append_bytes(&F[2].text, kernel_source, source_size);

  /* ---- ingot_model_weights.c */
  ingot_strbuf_t* w = &F[3].text;
  ingot_strbuf_append(w,
      "/* Generated by Ingot (firmware output): do not edit. The weights, each\n"
      " * in the layout its kernels read, little-endian. */\n"
      "#include <stdint.h>\n\n"
      "#if defined(__GNUC__) || defined(__clang__)\n"
      "#define IM_ALIGNED(decl) decl __attribute__((aligned(64)))\n"
      "#else\n"
      "#define IM_ALIGNED(decl) _Alignas(64) decl\n"
      "#endif\n\n");
  uint32_t weight_count = 0;
  uint64_t weight_total = 0;
  for (uint32_t i = 0; i < nt; ++i) {
    const ingot_bundle_tensor_t* t = &spec->tensors[i];
    if (t->storage != INGOT_STORAGE_WEIGHT) continue;
    const uint8_t* data = own ? own[i].data : t->data;
    uint64_t bytes = own ? own[i].bytes : tensor_bytes(t);
    weight_total += bytes;
    ingot_strbuf_append(w, "/* ");
    append_quoted(w, t->name);
    ingot_strbuf_appendf(w, ": %s, %llu bytes */\n", ingot_dtype_name(t->dtype), (unsigned long long)bytes);
    ingot_strbuf_appendf(w, "IM_ALIGNED(const uint8_t ingot_model_w%u[%llu]) = {", weight_count,
                         (unsigned long long)(bytes ? bytes : 1));
    for (uint64_t b = 0; b < bytes; ++b)
      ingot_strbuf_appendf(w, "%s0x%02x,", b % 16 ? "" : "\n  ", data[b]);
    if (!bytes) ingot_strbuf_append(w, "0");
    ingot_strbuf_append(w, "\n};\n\n");
    ++weight_count;
  }

  /* ---- ingot_model.c */
  ingot_strbuf_t* c = &F[1].text;
  ingot_strbuf_append(c,
      "/* Generated by Ingot (firmware output): do not edit. The entry point, the\n"
      " * step table and the kernels' environment; see ingot_model.h. */\n"
      "#include <stddef.h>\n#include <stdint.h>\n\n#include \"ingot_model.h\"\n\n");
  ingot_strbuf_append(c, k_glue_prelude);
  ingot_strbuf_t decl = {0}, value = {0};
  for (size_t r = 0; !s && r < sizeof(k_env_rows) / sizeof(k_env_rows[0]); ++r)
    s = env_row_text(&k_env_rows[r], &decl, &value);
  if (!s) {
    ingot_strbuf_append(c, "/* The kernels' environment (runtime/ingot_kernel_env.def). */\n"
                           "typedef struct im_env {\n");
    ingot_strbuf_append(c, decl.data);
    ingot_strbuf_append(c, "} im_env_t;\n\nstatic const im_env_t im_env = {\n");
    ingot_strbuf_append(c, value.data);
    ingot_strbuf_append(c, "};\n\n");
  }
  ingot_strbuf_free(&decl);
  ingot_strbuf_free(&value);
  ingot_strbuf_appendf(c,
      "/* The kernel library of ingot_model_kernels.c (runtime/ingot_format.h). */\n"
      "typedef int32_t (*im_kernel_fn)(const im_env_t* env, void* const* args);\n"
      "typedef struct { const char* name; im_kernel_fn fn; } im_kernel_entry;\n"
      "typedef struct { uint32_t abi_version; uint32_t count; const im_kernel_entry* entries; } im_kernel_library;\n"
      "const im_kernel_library* ingot_library_query(uint32_t abi_version);\n"
      "#define IM_KERNEL_ABI %uu\n#define IM_KERNEL_COUNT %uu\n#define IM_STEP_COUNT %uu\n#define IM_MAX_ARGS %uu\n\n",
      INGOT_KERNEL_ABI_VERSION, spec->kernel_count, spec->step_count, max_args);
  ingot_strbuf_append(c, "static const char* const im_kernel_names[IM_KERNEL_COUNT] = {\n");
  for (uint32_t k = 0; k < spec->kernel_count; ++k) {
    ingot_strbuf_append(c, "  \"");
    append_quoted(c, spec->kernel_names[k]);
    ingot_strbuf_append(c, "\",\n");
  }
  ingot_strbuf_append(c, "};\n\n");
  /* Weights: declarations and the table the arguments index. */
  uint32_t* weight_index = ingot_xcalloc(nt ? nt : 1, sizeof(uint32_t));
  for (uint32_t i = 0, n = 0; i < nt; ++i)
    if (spec->tensors[i].storage == INGOT_STORAGE_WEIGHT) {
      weight_index[i] = n;
      ingot_strbuf_appendf(c, "extern const uint8_t ingot_model_w%u[];\n", n++);
    }
  ingot_strbuf_append(c, "static const uint8_t* const im_weights[] = {");
  for (uint32_t n = 0; n < weight_count; ++n) ingot_strbuf_appendf(c, "%singot_model_w%u,", n % 6 ? " " : "\n  ", n);
  if (!weight_count) ingot_strbuf_append(c, "0");
  ingot_strbuf_append(c, "\n};\n\n");
  /* The steps and their arguments: a weight by index, else an arena offset. */
  ingot_strbuf_append(c, "typedef struct { uint32_t weight; uint32_t at; } im_arg;\n"
                         "typedef struct { uint32_t kernel; uint32_t first_arg; uint32_t arg_count; } im_step;\n\n"
                         "static const im_arg im_args[] = {\n");
  uint32_t first_arg = 0, arg_total = 0;
  for (uint32_t k = 0; k < spec->step_count; ++k) {
    const ingot_bundle_step_t* st = &spec->steps[k];
    arg_total += st->arg_count;
    ingot_strbuf_appendf(c, "  /* step %u: ", k);
    append_quoted(c, st->name ? st->name : "");
    ingot_strbuf_append(c, " */\n ");
    for (uint32_t a = 0; a < st->arg_count; ++a) {
      uint32_t t = st->args[a];
      if (spec->tensors[t].storage == INGOT_STORAGE_WEIGHT) ingot_strbuf_appendf(c, " {1, %u},", weight_index[t]);
      else ingot_strbuf_appendf(c, " {0, %llu},", (unsigned long long)offsets[t]);
    }
    ingot_strbuf_append(c, "\n");
  }
  if (!arg_total) ingot_strbuf_append(c, "  {0, 0},\n"); /* no empty arrays in C */
  ingot_strbuf_append(c, "};\n\nstatic const im_step im_steps[IM_STEP_COUNT] = {\n");
  for (uint32_t k = 0; k < spec->step_count; ++k) {
    ingot_strbuf_appendf(c, "  {%u, %u, %u},\n", spec->steps[k].kernel, first_arg, spec->steps[k].arg_count);
    first_arg += spec->steps[k].arg_count;
  }
  ingot_strbuf_append(c, "};\n\n");
  ingot_strbuf_append(c, "typedef struct { uint32_t offset; uint32_t bytes; } im_io;\n");
  ingot_strbuf_append(c, "static const im_io im_inputs[] = {");
  for (uint32_t i = 0; i < spec->input_count; ++i)
    ingot_strbuf_appendf(c, "{%lluu, %lluu}, ", (unsigned long long)offsets[spec->inputs[i]],
                         (unsigned long long)tensor_bytes(&spec->tensors[spec->inputs[i]]));
  if (!spec->input_count) ingot_strbuf_append(c, "{0, 0}");
  ingot_strbuf_append(c, "};\nstatic const im_io im_outputs[] = {");
  for (uint32_t i = 0; i < spec->output_count; ++i)
    ingot_strbuf_appendf(c, "{%lluu, %lluu}, ", (unsigned long long)offsets[spec->outputs[i]],
                         (unsigned long long)tensor_bytes(&spec->tensors[spec->outputs[i]]));
  if (!spec->output_count) ingot_strbuf_append(c, "{0, 0}");
  ingot_strbuf_append(c, "};\n\n");
  ingot_strbuf_append(c, k_glue_run);
  free(weight_index);
  free(offsets);
  /* Graph outputs that are weights are refused by the driver; a weight
   * output here would be read from the arena. */
  for (uint32_t i = 0; !s && i < spec->output_count; ++i)
    if (spec->tensors[spec->outputs[i]].storage != INGOT_STORAGE_ARENA)
      s = ingot_fail(INGOT_ERROR_UNSUPPORTED, "firmware: output '%s' is not an arena tensor",
                     spec->tensors[spec->outputs[i]].name);
  if (s) {
    ingot_firmware_free(out);
    return s;
  }
  out->file_count = INGOT_FIRMWARE_FILE_COUNT;
  out->arena_bytes = arena_bytes;
  out->arena_lower_bound = lower_bound;
  out->weight_bytes = weight_total;
  return INGOT_OK;
}
