/* Opening a bundle: verify everything, then decompress, parse, pick a code
 * variant, load it and resolve kernels.
 *
 * Format decisions taken here (the reader is strict so that any single
 * flipped byte is refused):
 *   - the header's flags and reserved bytes are zero; file_size equals the
 *     bytes given; at most INGOT_RT_MAX_SECTIONS sections;
 *   - every byte of the file not covered by the header, the section table or
 *     a section payload (alignment padding) is zero;
 *   - sections never overlap; exactly one MANIFEST and PLAN, at least one
 *     WEIGHTS and one CODE, at most one METADATA (decoded whatever the
 *     device, so that tools opening with device "none" read it), at most
 *     one SIGNATURE (the last entry and the
 *     last bytes of the file; verified when the caller gives a public key,
 *     before anything is decoded); a CODE target is
 *     NUL-terminated inside its 32 bytes with zero padding, other sections
 *     have an all-zero target;
 *   - codec NONE: stored and raw sizes and checksums are equal; codec ZSTD:
 *     the payload is exactly one frame whose content size is raw_size;
 *   - the MANIFEST ends exactly where its string table ends; the PLAN is its
 *     header and record_count records, nothing more;
 *   - tensor records carry offset 0 (the PLAN places ARENA tensors, each
 *     variant's weight records its WEIGHT tensors); dims past rank are zero;
 *     step records' reserved field is zero;
 *   - one variant record per CODE section, in table order; each names a
 *     WEIGHTS section, and every WEIGHTS section is named by some variant; a
 *     loader kind the format defines (one this runtime has no loader for
 *     makes the variant not runnable here, not the bundle corrupt); every
 *     launch record of every variant is checked against its kind, every
 *     weight record against its WEIGHTS section's size, whichever variant is
 *     loaded.
 * Only the CODE section of the variant picked for this machine (and the one
 * after it when its object is for another machine) and that variant's
 * WEIGHTS section are decompressed.
 *
 * Weights in place: when the file's bytes outlive the open (a file mapped
 * by ingot_bundle_open_file, or bytes borrowed with INGOT_BUNDLE_BORROW) and
 * the loaded variant's WEIGHTS section is stored raw (codec NONE) at a
 * 64-byte aligned address, the bundle's weights point into those bytes: no
 * copy, no second checksum pass (a raw section's stored checksum, checked
 * with every other section before anything is decoded, is its raw one). The
 * format puts every section at a 64-aligned file offset and every weight at
 * a 64-aligned section offset, which is the alignment kernels are promised
 * (INGOT_WEIGHT_ALIGN); a borrowed buffer that is not 64-aligned gets a
 * copy. The mapping is read-only: a kernel writing to a weight would fault,
 * and none does (weights are only ever kernel inputs: the compiler refuses a
 * weight as a graph output and packs layouts at compile time; the runtime
 * never writes them; GPU loaders copy them to the device from wherever they
 * are). */
#define _DEFAULT_SOURCE 1
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_createDCtx_advanced: our allocator */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>
#include <zstd_errors.h>
#include "runtime_config.h"

#include "runtime_internal.h"

#define INGOT_RT_MAX_SECTIONS 64u

static const ingot_limits_t g_default_limits = {
    .max_section_bytes = (uint64_t)4 << 30,
    .max_arena_bytes = (uint64_t)64 << 30,
    .max_tensors = 1u << 16,
    .max_steps = 1u << 20,
};

/* "bundle: <where>: <what>" with printf-style <what>. */
static ingot_status_t fail_va(ingot_status_t code, const char* where, const char* fmt, va_list args) {
  char what[384];
  vsnprintf(what, sizeof what, fmt, args);
  return ingot_rt_fail(code, "bundle: %s: %s", where, what);
}

static ingot_status_t fail_at(ingot_status_t code, const char* where, const char* fmt, ...)
    INGOT_RT_PRINTF(3, 4);
static ingot_status_t fail_at(ingot_status_t code, const char* where, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  ingot_status_t status = fail_va(code, where, fmt, args);
  va_end(args);
  return status;
}

/* "bundle: section 2 (weights): <what>". */
static ingot_status_t section_fail(ingot_status_t code, uint32_t i, const ingot_section_entry_t* e,
                                   const char* fmt, ...) INGOT_RT_PRINTF(4, 5);
static ingot_status_t section_fail(ingot_status_t code, uint32_t i, const ingot_section_entry_t* e,
                                   const char* fmt, ...) {
  char where[48];
  snprintf(where, sizeof where, "section %u (%s)", (unsigned)i, ingot_section_kind_name(e->kind));
  va_list args;
  va_start(args, fmt);
  ingot_status_t status = fail_va(code, where, fmt, args);
  va_end(args);
  return status;
}

/* ---- zstd through the bundle's allocator -------------------------------- */

static void* zstd_alloc(void* opaque, size_t size) {
  return ingot_rt_alloc(*(const ingot_allocator_t*)opaque, size);
}
static void zstd_free(void* opaque, void* ptr) {
  ingot_rt_free(*(const ingot_allocator_t*)opaque, ptr);
}

/* Decodes section i into a fresh buffer of raw_size bytes (64-aligned). */
static ingot_status_t section_decode(ingot_bundle_t* b, const uint8_t* file, uint32_t i,
                                     const ingot_section_entry_t* e, uint8_t** out) {
  *out = NULL;
  const uint8_t* src = file + e->offset;
  uint8_t* dst = (uint8_t*)ingot_rt_alloc(b->allocator, (size_t)e->raw_size);
  if (!dst) return section_fail(INGOT_ERROR_OUT_OF_MEMORY, i, e, "cannot allocate %llu bytes",
                                (unsigned long long)e->raw_size);
  if (e->codec == INGOT_CODEC_NONE) {
    memcpy(dst, src, (size_t)e->raw_size);
  } else {
    unsigned long long content = ZSTD_getFrameContentSize(src, (size_t)e->stored_size);
    size_t frame = ZSTD_findFrameCompressedSize(src, (size_t)e->stored_size);
    if (content != e->raw_size || ZSTD_isError(frame) || frame != e->stored_size) {
      ingot_rt_free(b->allocator, dst);
      return section_fail(INGOT_ERROR_CORRUPT, i, e, "zstd frame does not match its sizes");
    }
    ZSTD_customMem mem = {zstd_alloc, zstd_free, &b->allocator};
    ZSTD_DCtx* dctx = ZSTD_createDCtx_advanced(mem);
    if (!dctx) {
      ingot_rt_free(b->allocator, dst);
      return section_fail(INGOT_ERROR_OUT_OF_MEMORY, i, e, "cannot create a zstd decoder");
    }
    size_t got = ZSTD_decompressDCtx(dctx, dst, (size_t)e->raw_size, src, (size_t)e->stored_size);
    ZSTD_freeDCtx(dctx);
    if (ZSTD_isError(got) && ZSTD_getErrorCode(got) == ZSTD_error_memory_allocation) {
      ingot_rt_free(b->allocator, dst);
      return section_fail(INGOT_ERROR_OUT_OF_MEMORY, i, e, "zstd: out of memory");
    }
    if (ZSTD_isError(got) || got != e->raw_size) {
      ingot_rt_free(b->allocator, dst);
      return section_fail(INGOT_ERROR_CORRUPT, i, e, "zstd: %s",
                          ZSTD_isError(got) ? ZSTD_getErrorName(got) : "short output");
    }
  }
  if (ingot_crc32(0, dst, (size_t)e->raw_size) != e->raw_crc32) {
    ingot_rt_free(b->allocator, dst);
    return section_fail(INGOT_ERROR_CORRUPT, i, e, "checksum mismatch after decoding");
  }
  *out = dst;
  return INGOT_OK;
}

/* ---- Header and section table -------------------------------------------- */

static int all_zero(const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (p[i]) return 0;
  return 1;
}

static ingot_status_t check_header(const uint8_t* file, size_t size, ingot_bundle_header_t* h) {
  if (size < sizeof *h)
    return ingot_rt_fail(INGOT_ERROR_CORRUPT, "bundle: %zu bytes, shorter than the header", size);
  memcpy(h, file, sizeof *h);
  if (memcmp(h->magic, INGOT_BUNDLE_MAGIC, 8) != 0)
    return ingot_rt_fail(INGOT_ERROR_CORRUPT, "bundle: bad magic (not an Ingot bundle)");
  ingot_bundle_header_t copy = *h;
  copy.header_crc32 = 0;
  if (ingot_crc32(0, &copy, sizeof copy) != h->header_crc32)
    return ingot_rt_fail(INGOT_ERROR_CORRUPT, "bundle: header checksum mismatch");
  if (h->endian_mark != INGOT_ENDIAN_MARK)
    return ingot_rt_fail(INGOT_ERROR_UNSUPPORTED, "bundle: written with another byte order");
  if (h->format_version < INGOT_FORMAT_VERSION_MIN || h->format_version > INGOT_FORMAT_VERSION)
    return ingot_rt_fail(INGOT_ERROR_VERSION, "bundle: format version %u, this runtime reads %u to %u",
                         h->format_version, INGOT_FORMAT_VERSION_MIN, INGOT_FORMAT_VERSION);
  if (h->flags != 0 || !all_zero(h->reserved, sizeof h->reserved))
    return ingot_rt_fail(INGOT_ERROR_CORRUPT, "bundle: reserved header fields are not zero");
  if (h->file_size != size)
    return ingot_rt_fail(INGOT_ERROR_CORRUPT, "bundle: header says %llu bytes, got %zu",
                         (unsigned long long)h->file_size, size);
  if (h->section_count == 0 || h->section_count > INGOT_RT_MAX_SECTIONS)
    return ingot_rt_fail(INGOT_ERROR_CORRUPT, "bundle: %u sections", h->section_count);
  uint64_t table_end = sizeof *h + (uint64_t)h->section_count * sizeof(ingot_section_entry_t);
  if (table_end > size) return ingot_rt_fail(INGOT_ERROR_CORRUPT, "bundle: section table truncated");
  if (ingot_crc32(0, file + sizeof *h, (size_t)(table_end - sizeof *h)) != h->table_crc32)
    return ingot_rt_fail(INGOT_ERROR_CORRUPT, "bundle: section table checksum mismatch");
  return INGOT_OK;
}

static ingot_status_t check_entry(const uint8_t* file, size_t size, uint64_t table_end, uint32_t i,
                                  const ingot_section_entry_t* e, const ingot_limits_t* limits) {
  if (e->kind < INGOT_SECTION_MANIFEST || e->kind > INGOT_SECTION_KIND_LAST)
    return ingot_rt_fail(INGOT_ERROR_CORRUPT, "bundle: section %u: unknown kind %u", i, e->kind);
  if (e->codec != INGOT_CODEC_NONE && e->codec != INGOT_CODEC_ZSTD)
    return section_fail(INGOT_ERROR_UNSUPPORTED, i, e, "unknown codec %u", e->codec);
  if (e->offset % INGOT_SECTION_ALIGN != 0 || e->offset < table_end || e->offset > size ||
      e->stored_size > size - e->offset)
    return section_fail(INGOT_ERROR_CORRUPT, i, e, "offset %llu + %llu bytes outside the file",
                        (unsigned long long)e->offset, (unsigned long long)e->stored_size);
  if (e->raw_size > limits->max_section_bytes)
    return section_fail(INGOT_ERROR_LIMIT, i, e, "%llu bytes once decoded, limit %llu",
                        (unsigned long long)e->raw_size,
                        (unsigned long long)limits->max_section_bytes);
  if (e->raw_size > SIZE_MAX - 64)
    return section_fail(INGOT_ERROR_LIMIT, i, e, "does not fit in memory");
  if (e->codec == INGOT_CODEC_NONE &&
      (e->stored_size != e->raw_size || e->stored_crc32 != e->raw_crc32))
    return section_fail(INGOT_ERROR_CORRUPT, i, e, "stored and raw sizes differ");
  size_t len = strnlen(e->target, INGOT_TARGET_NAME_BYTES);
  if (e->kind == INGOT_SECTION_CODE) {
    if (len == 0 || len == INGOT_TARGET_NAME_BYTES ||
        !all_zero((const uint8_t*)e->target + len, INGOT_TARGET_NAME_BYTES - len))
      return section_fail(INGOT_ERROR_CORRUPT, i, e, "bad target name");
  } else if (len != 0 || !all_zero((const uint8_t*)e->target, INGOT_TARGET_NAME_BYTES)) {
    return section_fail(INGOT_ERROR_CORRUPT, i, e, "target name on a non-code section");
  }
  if (ingot_crc32(0, file + e->offset, (size_t)e->stored_size) != e->stored_crc32)
    return section_fail(INGOT_ERROR_CORRUPT, i, e, "checksum mismatch");
  return INGOT_OK;
}

/* Sections must not overlap and the bytes between them must be zero. */
static ingot_status_t check_layout(const uint8_t* file, size_t size, uint64_t table_end,
                                   const ingot_section_entry_t* entries, uint32_t count) {
  uint32_t order[INGOT_RT_MAX_SECTIONS];
  for (uint32_t i = 0; i < count; ++i) order[i] = i;
  for (uint32_t i = 1; i < count; ++i)
    for (uint32_t j = i; j > 0 && entries[order[j - 1]].offset > entries[order[j]].offset; --j) {
      uint32_t t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
  uint64_t pos = table_end;
  for (uint32_t k = 0; k < count; ++k) {
    const ingot_section_entry_t* e = &entries[order[k]];
    if (e->offset < pos)
      return section_fail(INGOT_ERROR_CORRUPT, order[k], e, "overlaps another section");
    if (!all_zero(file + pos, (size_t)(e->offset - pos)))
      return ingot_rt_fail(INGOT_ERROR_CORRUPT, "bundle: non-zero padding at offset %llu",
                           (unsigned long long)pos);
    pos = e->offset + e->stored_size;
  }
  if (!all_zero(file + pos, (size_t)(size - pos)))
    return ingot_rt_fail(INGOT_ERROR_CORRUPT, "bundle: non-zero bytes after the last section");
  return INGOT_OK;
}

/* ---- Manifest and plan ----------------------------------------------------- */

typedef struct cursor_t {
  const uint8_t* base;
  uint64_t size, pos;
} cursor_t;

/* The next array of `bytes`, starting at a multiple of 8; NULL if it does not fit. */
static const void* cursor_take(cursor_t* c, uint64_t bytes) {
  uint64_t start = (c->pos + 7) & ~(uint64_t)7;
  if (start > c->size || bytes > c->size - start) return NULL;
  c->pos = start + bytes;
  return c->base + start;
}

#define MANIFEST_FAIL(...) fail_at(INGOT_ERROR_CORRUPT, "manifest", __VA_ARGS__)

/* A launch record as its loader kind wants it (ingot_format.h). */
static int launch_record_ok(uint32_t loader, const ingot_launch_record_t* r) {
  if (loader == INGOT_LOADER_CPU_ELF)
    return r->shared_bytes == 0 && r->grid[0] == 0 && r->grid[1] == 0 && r->grid[2] == 0 &&
           r->block[0] == 0 && r->block[1] == 0 && r->block[2] == 0;
  for (int d = 0; d < 3; ++d)
    if (r->grid[d] == 0 || r->block[d] == 0) return 0;
  return 1;
}

/* Checks the variants, their launch and weight records against the section
 * table (nothing is decoded: the WEIGHTS sizes come from the table). */
static ingot_status_t parse_variants(const ingot_manifest_header_t* h,
                                     const ingot_variant_record_t* variants,
                                     const ingot_launch_record_t* launches,
                                     const ingot_weight_record_t* weights, uint32_t weight_count,
                                     const ingot_section_entry_t* entries, uint32_t section_count) {
  uint64_t weights_used = 0; /* bit i: WEIGHTS section i is named */
  uint32_t prev_code = 0;
  for (uint32_t v = 0; v < h->variant_count; ++v) {
    const ingot_variant_record_t* r = &variants[v];
    if (r->code_section >= section_count || entries[r->code_section].kind != INGOT_SECTION_CODE ||
        (v > 0 && r->code_section <= prev_code))
      return MANIFEST_FAIL("variant %u: code section %u is not the next CODE section", v,
                           r->code_section);
    prev_code = r->code_section;
    if (r->weights_section >= section_count ||
        entries[r->weights_section].kind != INGOT_SECTION_WEIGHTS)
      return MANIFEST_FAIL("variant %u: section %u is not a WEIGHTS section", v, r->weights_section);
    weights_used |= (uint64_t)1 << r->weights_section;
    if (r->loader == 0 || r->loader >= INGOT_LOADER_KIND_END_)
      return MANIFEST_FAIL("variant %u: unknown loader kind %u", v, r->loader);
    if (r->reserved != 0) return MANIFEST_FAIL("variant %u: reserved field is not zero", v);
    for (uint32_t s = 0; s < h->step_count; ++s) {
      const ingot_launch_record_t* l = &launches[(uint64_t)v * h->step_count + s];
      if (l->kernel >= h->kernel_count)
        return MANIFEST_FAIL("variant %u, step %u: bad kernel index", v, s);
      if (!launch_record_ok(r->loader, l))
        return MANIFEST_FAIL("variant %u, step %u: launch dims do not suit loader %s", v, s,
                             ingot_rt_loader_kind_name(r->loader));
    }
    uint64_t size = entries[r->weights_section].raw_size;
    for (uint32_t w = 0; w < weight_count; ++w) {
      const ingot_weight_record_t* wr = &weights[(uint64_t)v * weight_count + w];
      if (wr->offset % INGOT_WEIGHT_ALIGN != 0 || wr->offset > size || wr->bytes > size - wr->offset)
        return MANIFEST_FAIL("variant %u, weight %u: data outside its weights section", v, w);
    }
  }
  for (uint32_t i = 0; i < section_count; ++i)
    if (entries[i].kind == INGOT_SECTION_WEIGHTS && !(weights_used & ((uint64_t)1 << i)))
      return MANIFEST_FAIL("weights section %u is used by no variant", i);
  return INGOT_OK;
}

static ingot_status_t parse_manifest(ingot_bundle_t* b, const ingot_limits_t* limits,
                                     const ingot_section_entry_t* entries, uint32_t section_count) {
  cursor_t c = {b->manifest, b->manifest_bytes, 0};
  const ingot_manifest_header_t* h = (const ingot_manifest_header_t*)cursor_take(&c, sizeof *h);
  if (!h) return MANIFEST_FAIL("truncated header");
  if (h->tensor_count > limits->max_tensors)
    return ingot_rt_fail(INGOT_ERROR_LIMIT, "bundle: manifest: %u tensors, limit %u",
                         h->tensor_count, limits->max_tensors);
  if (h->step_count > limits->max_steps)
    return ingot_rt_fail(INGOT_ERROR_LIMIT, "bundle: manifest: %u steps, limit %u", h->step_count,
                         limits->max_steps);
  uint32_t code_sections = 0;
  for (uint32_t i = 0; i < section_count; ++i) code_sections += entries[i].kind == INGOT_SECTION_CODE;
  if (h->variant_count != code_sections)
    return MANIFEST_FAIL("%u variants for %u code sections", h->variant_count, code_sections);
  const ingot_tensor_record_t* tensors = (const ingot_tensor_record_t*)cursor_take(
      &c, (uint64_t)h->tensor_count * sizeof(ingot_tensor_record_t));
  uint32_t weight_count = 0;
  if (tensors)
    for (uint32_t t = 0; t < h->tensor_count; ++t) weight_count += tensors[t].storage == INGOT_STORAGE_WEIGHT;
  const uint32_t* inputs = tensors ? (const uint32_t*)cursor_take(&c, (uint64_t)h->input_count * 4) : NULL;
  const uint32_t* outputs = inputs ? (const uint32_t*)cursor_take(&c, (uint64_t)h->output_count * 4) : NULL;
  const uint32_t* output_shapes = NULL;
  const uint32_t* checks = NULL; /* [check_count][2] */
  uint32_t check_count = 0;
  if (outputs && b->format_version >= 4) {
    output_shapes = (const uint32_t*)cursor_take(&c, (uint64_t)h->output_count * 8);
    const uint32_t* count = output_shapes ? (const uint32_t*)cursor_take(&c, 8) : NULL;
    if (count) {
      check_count = count[0];
      if (count[1] != 0 || check_count > limits->max_steps) return MANIFEST_FAIL("bad check count %u", check_count);
      checks = (const uint32_t*)cursor_take(&c, (uint64_t)check_count * 8);
    }
    if (!checks) outputs = NULL;
  }
  const uint32_t* input_ranges = NULL; /* [input_count][2] */
  const int64_t* input_lo = NULL;      /* [input_count][INGOT_MAX_RANK] */
  if (outputs && b->format_version >= 5) {
    input_ranges = (const uint32_t*)cursor_take(&c, (uint64_t)h->input_count * 8);
    input_lo = input_ranges ? (const int64_t*)cursor_take(&c, (uint64_t)h->input_count * 8 * INGOT_MAX_RANK) : NULL;
    if (!input_lo) outputs = NULL;
  }
  const ingot_step_record_t* steps = outputs ? (const ingot_step_record_t*)cursor_take(
      &c, (uint64_t)h->step_count * sizeof(ingot_step_record_t)) : NULL;
  const uint32_t* args = steps ? (const uint32_t*)cursor_take(&c, (uint64_t)h->arg_count * 4) : NULL;
  const uint32_t* kernels = args ? (const uint32_t*)cursor_take(&c, (uint64_t)h->kernel_count * 4) : NULL;
  /* variant_count <= 64 (sections), step_count and weight_count < 2^32: the
   * products below fit in 64 bits. */
  const ingot_variant_record_t* variants = kernels ? (const ingot_variant_record_t*)cursor_take(
      &c, (uint64_t)h->variant_count * sizeof(ingot_variant_record_t)) : NULL;
  const ingot_launch_record_t* launches = variants ? (const ingot_launch_record_t*)cursor_take(
      &c, (uint64_t)h->variant_count * h->step_count * sizeof(ingot_launch_record_t)) : NULL;
  const ingot_weight_record_t* weights = launches ? (const ingot_weight_record_t*)cursor_take(
      &c, (uint64_t)h->variant_count * weight_count * sizeof(ingot_weight_record_t)) : NULL;
  const char* strings = weights ? (const char*)cursor_take(&c, h->string_bytes) : NULL;
  if (!strings) return MANIFEST_FAIL("arrays run past the section");
  if (c.pos != c.size) return MANIFEST_FAIL("%llu trailing bytes", (unsigned long long)(c.size - c.pos));
  uint32_t nstr = h->string_bytes;
  if (nstr > 0 && strings[nstr - 1] != '\0') return MANIFEST_FAIL("string table not terminated");
  /* A string offset is valid when it is inside the table (which ends in NUL). */
#define STRING_OK(off) ((off) < nstr)

  b->tensor_count = h->tensor_count;
  b->tensors = (ingot_rt_tensor_t*)ingot_rt_alloc(b->allocator,
                                                  sizeof(ingot_rt_tensor_t) * h->tensor_count);
  b->steps = (ingot_rt_step_t*)ingot_rt_alloc(b->allocator, sizeof(ingot_rt_step_t) * h->step_count);
  if (!b->tensors || !b->steps) return ingot_rt_fail(INGOT_ERROR_OUT_OF_MEMORY, "bundle: out of memory");

  for (uint32_t t = 0; t < h->tensor_count; ++t) {
    const ingot_tensor_record_t* r = &tensors[t];
    ingot_rt_tensor_t* out = &b->tensors[t];
    size_t esize = ingot_dtype_size((ingot_dtype_t)r->dtype);
    if (!STRING_OK(r->name)) return MANIFEST_FAIL("tensor %u: bad name offset", t);
    if (esize == 0) return MANIFEST_FAIL("tensor %u: unknown dtype %u", t, r->dtype);
    if (r->rank > INGOT_MAX_RANK) return MANIFEST_FAIL("tensor %u: rank %u", t, r->rank);
    uint64_t numel = 1;
    for (uint32_t d = 0; d < INGOT_MAX_RANK; ++d) {
      if (d >= r->rank) {
        if (r->dims[d] != 0) return MANIFEST_FAIL("tensor %u: dims past rank are not zero", t);
        continue;
      }
      if (r->dims[d] < 0) return MANIFEST_FAIL("tensor %u: negative dim", t);
      uint64_t dim = (uint64_t)r->dims[d];
      if (dim != 0 && numel > UINT64_MAX / dim) return MANIFEST_FAIL("tensor %u: size overflows", t);
      numel *= dim;
    }
    if (numel > UINT64_MAX / esize || numel * esize != r->bytes)
      return MANIFEST_FAIL("tensor %u: bytes %llu do not match its shape", t,
                           (unsigned long long)r->bytes);
    if (r->storage != INGOT_STORAGE_WEIGHT && r->storage != INGOT_STORAGE_ARENA)
      return MANIFEST_FAIL("tensor %u: unknown storage %u", t, r->storage);
    if (r->offset != 0) return MANIFEST_FAIL("tensor %u: an offset in the tensor record", t);
    out->offset = UINT64_MAX; /* set from the plan or the loaded variant */
    out->storage = r->storage;
    out->info.name = strings + r->name;
    out->info.dtype = (ingot_dtype_t)r->dtype;
    out->info.rank = r->rank;
    out->info.dims = r->dims;
    out->info.bytes = (size_t)r->bytes;
  }
  for (uint32_t i = 0; i < h->input_count; ++i)
    if (inputs[i] >= h->tensor_count || b->tensors[inputs[i]].storage != INGOT_STORAGE_ARENA)
      return MANIFEST_FAIL("input %u: bad tensor index", i);
  for (uint32_t i = 0; i < h->output_count; ++i)
    if (outputs[i] >= h->tensor_count) return MANIFEST_FAIL("output %u: bad tensor index", i);
  int ranged = 0;
  for (uint32_t i = 0; output_shapes && i < h->output_count; ++i) {
    uint32_t dims = output_shapes[2 * i + 1] & INGOT_OUTPUT_SHAPE_DIMS_MASK;
    if (output_shapes[2 * i + 1] & INGOT_OUTPUT_SHAPE_PADDED) {
      if (b->format_version < 5) return MANIFEST_FAIL("output %u: padded in a version %u bundle", i, b->format_version);
      if (!output_shapes[2 * i]) return MANIFEST_FAIL("output %u: padded without a shape tensor", i);
      ranged = 1;
    }
    if (!output_shapes[2 * i]) {
      if (dims) return MANIFEST_FAIL("output %u: run-time dims without a shape tensor", i);
      continue;
    }
    uint32_t t = output_shapes[2 * i] - 1;
    const ingot_rt_tensor_t* out = &b->tensors[outputs[i]];
    if (!dims || (out->info.rank < 32 && (dims >> out->info.rank)))
      return MANIFEST_FAIL("output %u: run-time dims 0x%x for rank %u", i, dims, out->info.rank);
    uint32_t top = 0;
    while (top < 32 && (dims >> top)) ++top;
    if (t >= h->tensor_count || b->tensors[t].storage != INGOT_STORAGE_ARENA ||
        b->tensors[t].info.dtype != INGOT_DTYPE_I64 || b->tensors[t].info.rank != 1 ||
        b->tensors[t].info.dims[0] < (int64_t)top || out->storage != INGOT_STORAGE_ARENA)
      return MANIFEST_FAIL("output %u: its shape tensor is not an int64 arena tensor that holds its dims", i);
  }
  for (uint32_t i = 0; input_ranges && i < h->input_count; ++i) {
    const ingot_tensor_info_t* in = &b->tensors[inputs[i]].info;
    uint32_t mask = input_ranges[2 * i + 1];
    if (in->rank < 32 && (mask >> in->rank))
      return MANIFEST_FAIL("input %u: ranged dims 0x%x past its rank %u", i, mask, in->rank);
    ranged |= mask != 0;
    for (uint32_t d = 0; d < INGOT_MAX_RANK; ++d) {
      int64_t lo = input_lo[(size_t)i * INGOT_MAX_RANK + d];
      if (d >= in->rank) {
        if (lo != 0) return MANIFEST_FAIL("input %u: least sizes past its rank are not zero", i);
      } else if ((mask >> d) & 1u) {
        if (lo < 1 || lo > in->dims[d])
          return MANIFEST_FAIL("input %u: dim %u ranges from %lld to %lld", i, d, (long long)lo, (long long)in->dims[d]);
      } else if (lo != in->dims[d]) {
        return MANIFEST_FAIL("input %u: fixed dim %u has least size %lld, not its size %lld", i, d, (long long)lo,
                             (long long)in->dims[d]);
      }
    }
    if (!input_ranges[2 * i]) continue;
    uint32_t t = input_ranges[2 * i] - 1;
    if (!mask) return MANIFEST_FAIL("input %u: a shape tensor but no ranged dim", i);
    if (t >= h->tensor_count || b->tensors[t].storage != INGOT_STORAGE_ARENA ||
        b->tensors[t].info.dtype != INGOT_DTYPE_I64 || b->tensors[t].info.bytes != 8u * in->rank)
      return MANIFEST_FAIL("input %u: its shape tensor is not an int64 arena tensor of %u elements", i, in->rank);
  }
  for (uint32_t i = 0; i < check_count; ++i) {
    uint32_t t = checks[2 * i];
    if (t >= h->tensor_count || b->tensors[t].storage != INGOT_STORAGE_ARENA ||
        b->tensors[t].info.dtype != INGOT_DTYPE_BOOL || b->tensors[t].info.bytes != 1)
      return MANIFEST_FAIL("check %u: not a bool arena tensor of one element", i);
    if (!STRING_OK(checks[2 * i + 1])) return MANIFEST_FAIL("check %u: bad message offset", i);
  }
  for (uint32_t i = 0; i < h->arg_count; ++i)
    if (args[i] >= h->tensor_count) return MANIFEST_FAIL("argument %u: bad tensor index", i);
  for (uint32_t i = 0; i < h->kernel_count; ++i)
    if (!STRING_OK(kernels[i])) return MANIFEST_FAIL("kernel %u: bad name offset", i);
  for (uint32_t s = 0; s < h->step_count; ++s) {
    const ingot_step_record_t* r = &steps[s];
    uint32_t guard_tensor = UINT32_MAX;
    if (r->guard != 0) {
      if (b->format_version < 3) return MANIFEST_FAIL("step %u: a guard in a version %u bundle", s, b->format_version);
      guard_tensor = (r->guard & INGOT_STEP_GUARD_TENSOR_MASK) - 1;
      if (guard_tensor >= h->tensor_count || b->tensors[guard_tensor].info.dtype != INGOT_DTYPE_BOOL ||
          b->tensors[guard_tensor].info.bytes != 1)
        return MANIFEST_FAIL("step %u: the guard is not a bool tensor of one element", s);
    }
    if ((uint64_t)r->arg_begin + r->arg_count > h->arg_count)
      return MANIFEST_FAIL("step %u: arguments out of range", s);
    if (!STRING_OK(r->name)) return MANIFEST_FAIL("step %u: bad name offset", s);
    memset(&b->steps[s], 0, sizeof b->steps[s]);
    b->steps[s].node_name = strings + r->name;
    b->steps[s].arg_begin = r->arg_begin;
    b->steps[s].arg_count = r->arg_count;
    b->steps[s].guard_tensor = guard_tensor;
    b->steps[s].guard_when = (r->guard & INGOT_STEP_GUARD_WHEN_TRUE) != 0;
  }
#undef STRING_OK
  ingot_status_t status = parse_variants(h, variants, launches, weights, weight_count, entries,
                                         section_count);
  if (status != INGOT_OK) return status;
  b->input_count = h->input_count;
  b->inputs = inputs;
  b->output_count = h->output_count;
  b->outputs = outputs;
  b->output_shapes = output_shapes;
  b->checks = checks;
  b->check_count = check_count;
  b->input_ranges = input_ranges;
  b->input_lo = input_lo;
  b->ranged = ranged;
  b->step_count = h->step_count;
  b->arg_count = h->arg_count;
  b->args = args;
  b->kernel_count = h->kernel_count;
  b->kernel_names = kernels;
  b->strings = strings;
  b->variant_count = h->variant_count;
  b->variants = variants;
  b->launches = launches;
  b->weight_count = weight_count;
  b->weight_records = weights;
  return INGOT_OK;
}

#define PLAN_FAIL(...) fail_at(INGOT_ERROR_CORRUPT, "plan", __VA_ARGS__)

static ingot_status_t parse_plan(ingot_bundle_t* b, const ingot_limits_t* limits) {
  cursor_t c = {b->plan, b->plan_bytes, 0};
  const ingot_plan_header_t* h = (const ingot_plan_header_t*)cursor_take(&c, sizeof *h);
  if (!h) return PLAN_FAIL("truncated header");
  const ingot_plan_record_t* recs = (const ingot_plan_record_t*)cursor_take(
      &c, (uint64_t)h->record_count * sizeof(ingot_plan_record_t));
  if (!recs || c.pos != c.size) return PLAN_FAIL("size does not match %u records", h->record_count);
  if (h->reserved != 0) return PLAN_FAIL("reserved field is not zero");
  if (h->arena_bytes > limits->max_arena_bytes || h->arena_bytes > SIZE_MAX - 64)
    return ingot_rt_fail(INGOT_ERROR_LIMIT, "bundle: plan: arena of %llu bytes, limit %llu",
                         (unsigned long long)h->arena_bytes,
                         (unsigned long long)limits->max_arena_bytes);
  if (h->lower_bound_bytes > h->arena_bytes) return PLAN_FAIL("lower bound above the arena size");
  uint32_t arena_tensors = 0;
  for (uint32_t t = 0; t < b->tensor_count; ++t)
    arena_tensors += b->tensors[t].storage == INGOT_STORAGE_ARENA;
  if (h->record_count != arena_tensors)
    return PLAN_FAIL("%u records for %u arena tensors", h->record_count, arena_tensors);
  uint32_t last_allowed = b->step_count ? b->step_count - 1 : 0;
  for (uint32_t i = 0; i < h->record_count; ++i) {
    const ingot_plan_record_t* r = &recs[i];
    if (r->tensor >= b->tensor_count || b->tensors[r->tensor].storage != INGOT_STORAGE_ARENA)
      return PLAN_FAIL("record %u: not an arena tensor", i);
    ingot_rt_tensor_t* t = &b->tensors[r->tensor];
    if (t->offset != UINT64_MAX) return PLAN_FAIL("record %u: tensor planned twice", i);
    if (r->reserved != 0 || r->bytes != t->info.bytes || r->offset % INGOT_WEIGHT_ALIGN != 0 ||
        r->offset > h->arena_bytes || r->bytes > h->arena_bytes - r->offset)
      return PLAN_FAIL("record %u: tensor '%s' outside the arena", i, t->info.name);
    if (r->first_step > r->last_step || r->last_step > last_allowed)
      return PLAN_FAIL("record %u: bad live interval", i);
    t->offset = r->offset;
    t->first_step = r->first_step;
    t->last_step = r->last_step;
  }
  b->arena_bytes = h->arena_bytes;
  b->arena_lower_bound = h->lower_bound_bytes;
  return INGOT_OK;
}

#define METADATA_FAIL(...) fail_at(INGOT_ERROR_CORRUPT, "metadata", __VA_ARGS__)

/* The METADATA section (ingot_format.h): bounds, NUL-terminated strings,
 * keys non-empty, short, sorted and unique. */
static ingot_status_t parse_metadata(ingot_bundle_t* b) {
  cursor_t c = {b->metadata, b->metadata_bytes, 0};
  const ingot_metadata_header_t* h = (const ingot_metadata_header_t*)cursor_take(&c, sizeof *h);
  if (!h) return METADATA_FAIL("truncated header");
  if (h->entry_count > INGOT_METADATA_MAX_ENTRIES)
    return METADATA_FAIL("%u entries, at most %u", h->entry_count, INGOT_METADATA_MAX_ENTRIES);
  const ingot_metadata_entry_t* e = (const ingot_metadata_entry_t*)cursor_take(
      &c, (uint64_t)h->entry_count * sizeof(ingot_metadata_entry_t));
  const char* strings = (const char*)cursor_take(&c, h->string_bytes);
  if (!e || !strings || c.pos != c.size) return METADATA_FAIL("size does not match its header");
  if (h->string_bytes == 0 || strings[h->string_bytes - 1] != '\0')
    return METADATA_FAIL("strings do not end with NUL");
  for (uint32_t i = 0; i < h->entry_count; ++i) {
    if (e[i].key >= h->string_bytes || e[i].value >= h->string_bytes)
      return METADATA_FAIL("entry %u: string offset outside the strings", i);
    size_t len = strlen(strings + e[i].key);
    if (len == 0 || len > INGOT_METADATA_MAX_KEY_BYTES)
      return METADATA_FAIL("entry %u: key of %zu bytes", i, len);
    if (i > 0 && strcmp(strings + e[i - 1].key, strings + e[i].key) >= 0)
      return METADATA_FAIL("entry %u: keys not sorted or not unique ('%s')", i, strings + e[i].key);
  }
  b->metadata_count = h->entry_count;
  b->metadata_entries = e;
  b->metadata_strings = strings;
  return INGOT_OK;
}

uint32_t ingot_bundle_metadata_count(const ingot_bundle_t* b) { return b ? b->metadata_count : 0; }

ingot_status_t ingot_bundle_metadata_entry(const ingot_bundle_t* b, uint32_t index, const char** out_key,
                                           const char** out_value) {
  if (out_key) *out_key = NULL;
  if (out_value) *out_value = NULL;
  if (!b || !out_key || !out_value)
    return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "bundle: NULL bundle or output");
  if (index >= b->metadata_count)
    return ingot_rt_fail(INGOT_ERROR_NOT_FOUND, "bundle: no metadata entry %u (it has %u)", index,
                         b->metadata_count);
  *out_key = b->metadata_strings + b->metadata_entries[index].key;
  *out_value = b->metadata_strings + b->metadata_entries[index].value;
  return INGOT_OK;
}

ingot_status_t ingot_bundle_metadata(const ingot_bundle_t* b, const char* key, const char** out_value) {
  if (out_value) *out_value = NULL;
  if (!b || !key || !out_value)
    return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "bundle: NULL bundle, key or output");
  for (uint32_t i = 0; i < b->metadata_count; ++i)
    if (strcmp(b->metadata_strings + b->metadata_entries[i].key, key) == 0) {
      *out_value = b->metadata_strings + b->metadata_entries[i].value;
      return INGOT_OK;
    }
  return ingot_rt_fail(INGOT_ERROR_NOT_FOUND, "bundle: no metadata '%.64s'%s", key,
                       b->metadata_count ? "" : " (the bundle carries no metadata)");
}

/* ---- Code variants ---------------------------------------------------------- */

/* Picks the variant to load: every variant ranked by its loader row's rank
 * (for CPU_ELF, cpu.c: the CPU features its target needs against this
 * CPU's; a kind this runtime has no loader for ranks 0), the best that runs
 * here loaded; only its CODE section is decoded (and the next one's when its
 * object turns out to be for another machine). The choice and the reasons are
 * kept in b->target_reason. */
static void reason_append(ingot_bundle_t* b, const char* fmt, ...) INGOT_RT_PRINTF(2, 3);
static void reason_append(ingot_bundle_t* b, const char* fmt, ...) {
  size_t n = strlen(b->target_reason);
  if (n + 1 >= sizeof b->target_reason) return;
  va_list args;
  va_start(args, fmt);
  vsnprintf(b->target_reason + n, sizeof b->target_reason - n, fmt, args);
  va_end(args);
}

/* forced_loader for options.device "none": no code is loaded. */
#define NO_DEVICE UINT32_MAX

/* The device name of a loader kind, as options.device spells it. */
static const char* device_name(uint32_t kind) {
  switch (kind) {
    case INGOT_LOADER_CPU_ELF: return "cpu";
    case INGOT_LOADER_CUDA: return "cuda";
    case INGOT_LOADER_HIP: return "rocm";
    default: return "unknown";
  }
}

/* options.device -> a loader kind (0: any); 1 when the name is known. */
static int device_kind(const char* device, uint32_t* out_kind) {
  *out_kind = 0;
  if (!device || !device[0] || strcmp(device, "auto") == 0) return 1;
  if (strcmp(device, "none") == 0) {
    *out_kind = NO_DEVICE;
    return 1;
  }
  for (uint32_t k = 1; k < INGOT_LOADER_KIND_END_; ++k)
    if (strcmp(device, device_name(k)) == 0) {
      *out_kind = k;
      return 1;
    }
  return 0;
}

static ingot_status_t load_code(ingot_bundle_t* b, const uint8_t* file,
                                const ingot_section_entry_t* entries) {
  int rank[INGOT_RT_MAX_SECTIONS];
  char why[INGOT_RT_MAX_SECTIONS][96];
  char skipped[768] = "";
  const uint32_t count = b->variant_count; /* <= INGOT_RT_MAX_SECTIONS: one per CODE section */
  for (uint32_t v = 0; v < count; ++v) {
    const ingot_rt_loader_t* loader = ingot_rt_loader_find(b->variants[v].loader);
    const char* target = entries[b->variants[v].code_section].target;
    if (b->forced_target && strcmp(target, b->forced_target) != 0) {
      rank[v] = 0;
      snprintf(why[v], sizeof why[v], "not the variant asked for");
    } else if (b->forced_loader && b->variants[v].loader != b->forced_loader) {
      rank[v] = 0;
      snprintf(why[v], sizeof why[v], "a %s variant, device %s asked for",
               ingot_rt_loader_kind_name(b->variants[v].loader), device_name(b->forced_loader));
    } else if (loader) {
      rank[v] = loader->rank(target, why[v], sizeof why[v]);
    } else {
      rank[v] = 0;
      snprintf(why[v], sizeof why[v], "this runtime has no %s loader",
               ingot_rt_loader_kind_name(b->variants[v].loader));
    }
  }
  if (b->forced_target) {
    uint32_t v = 0;
    while (v < count && strcmp(entries[b->variants[v].code_section].target, b->forced_target) != 0) ++v;
    if (v == count) return ingot_rt_fail(INGOT_ERROR_NOT_FOUND, "bundle: no variant for target '%.64s'", b->forced_target);
  }
  b->target_reason[0] = '\0';
  int picked = -1;
  for (;;) {
    int best = -1;
    for (uint32_t v = 0; v < count; ++v)
      if (rank[v] > 0 && (best < 0 || rank[v] > rank[best])) best = (int)v;
    if (best < 0) break;
    uint32_t section = b->variants[best].code_section;
    const ingot_section_entry_t* e = &entries[section];
    const ingot_rt_loader_t* loader = ingot_rt_loader_find(b->variants[best].loader);
    uint8_t* obj = NULL;
    ingot_status_t status = section_decode(b, file, section, e, &obj);
    if (status != INGOT_OK) return status;
    if (!loader->code_fits(obj, (size_t)e->raw_size)) {
      ingot_rt_free(b->allocator, obj);
      snprintf(why[best], sizeof why[best], "its code is for another machine");
      rank[best] = 0;
      continue;
    }
    status = loader->load(obj, (size_t)e->raw_size, b->allocator, &b->module);
    ingot_rt_free(b->allocator, obj);
    if (status != INGOT_OK) {
      char msg[256];
      snprintf(msg, sizeof msg, "%s", ingot_last_error());
      return section_fail(status, section, e, "target '%s': %s", e->target, msg);
    }
    b->loader = loader;
    b->variant = (uint32_t)best;
    memcpy(b->target, e->target, INGOT_TARGET_NAME_BYTES);
    b->target[INGOT_TARGET_NAME_BYTES] = '\0';
    picked = best;
    break;
  }
  for (uint32_t v = 0; v < count; ++v) {
    if ((int)v == picked) continue;
    size_t n = strlen(skipped);
    snprintf(skipped + n, sizeof skipped - n, "%s%.32s (%.95s)", n ? "; " : "",
             entries[b->variants[v].code_section].target,
             rank[v] > 0 ? "runs here, ranks lower" : why[v]);
  }
  if (picked < 0) {
    snprintf(b->target_reason, sizeof b->target_reason, "no variant runs here: %s", skipped);
    if (b->forced_target) {
      for (uint32_t v = 0; v < count; ++v)
        if (strcmp(entries[b->variants[v].code_section].target, b->forced_target) == 0)
          return ingot_rt_fail(INGOT_ERROR_UNSUPPORTED, "bundle: variant '%.64s' does not run on this machine: %s",
                               b->forced_target, why[v]);
    }
    if (b->forced_loader)
      return ingot_rt_fail(INGOT_ERROR_UNSUPPORTED, "bundle: no %s variant runs on this machine: %s",
                           device_name(b->forced_loader), skipped);
    return ingot_rt_fail(INGOT_ERROR_UNSUPPORTED, "bundle: no code variant runs on this machine: %s", skipped);
  }
  reason_append(b, "picked %s: %s", b->target, why[picked]);
  if (skipped[0]) reason_append(b, "; skipped %s", skipped);
  return INGOT_OK;
}

/* The loaded variant's weights (its WEIGHTS section, decoded, and its weight
 * records as tensor offsets) and steps (its launch records, each kernel
 * looked up once in its module). */
static ingot_status_t bind_variant(ingot_bundle_t* b, const uint8_t* file,
                                   const ingot_section_entry_t* entries) {
  const ingot_variant_record_t* var = &b->variants[b->variant];
  const ingot_section_entry_t* we = &entries[var->weights_section];
  if (b->file_kept && we->codec == INGOT_CODEC_NONE &&
      ((uintptr_t)(file + we->offset) & (INGOT_WEIGHT_ALIGN - 1)) == 0) {
    b->weights = file + we->offset; /* checked whole by check_entry */
  } else {
    ingot_status_t status = section_decode(b, file, var->weights_section, we, &b->weights_copy);
    if (status != INGOT_OK) return status;
    b->weights = b->weights_copy;
  }
  b->weights_bytes = we->raw_size;
  if (((uintptr_t)b->weights & (INGOT_WEIGHT_ALIGN - 1)) != 0 && b->weights_bytes >= 64)
    return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "bundle: the allocator broke 64-byte alignment");
  const ingot_weight_record_t* wr = &b->weight_records[(uint64_t)b->variant * b->weight_count];
  for (uint32_t t = 0, w = 0; t < b->tensor_count; ++t)
    if (b->tensors[t].storage == INGOT_STORAGE_WEIGHT) b->tensors[t].offset = wr[w++].offset;

  /* Manifest kernel names -> kernels, each looked up once, only those this
   * variant launches (another variant may name kernels this code lacks). */
  size_t bytes = (sizeof(ingot_rt_kernel_t) + 1) * (size_t)b->kernel_count;
  uint8_t* scratch = (uint8_t*)ingot_rt_alloc(b->allocator, bytes);
  if (!scratch) return ingot_rt_fail(INGOT_ERROR_OUT_OF_MEMORY, "bundle: out of memory");
  ingot_rt_kernel_t* kernels = (ingot_rt_kernel_t*)scratch;
  uint8_t* found = scratch + sizeof(ingot_rt_kernel_t) * (size_t)b->kernel_count;
  memset(found, 0, b->kernel_count);
  const ingot_launch_record_t* launches = &b->launches[(uint64_t)b->variant * b->step_count];
  for (uint32_t s = 0; s < b->step_count; ++s) {
    uint32_t k = launches[s].kernel;
    const char* name = b->strings + b->kernel_names[k];
    if (!found[k]) {
      if (b->loader->lookup(b->module, name, &kernels[k]) != INGOT_OK) {
        ingot_rt_free(b->allocator, scratch);
        return ingot_rt_fail(INGOT_ERROR_CORRUPT, "bundle: kernel '%s' is not in the code for '%s'",
                             name, b->target);
      }
      found[k] = 1;
    }
    b->steps[s].kernel = kernels[k];
    b->steps[s].launch = launches[s];
    b->steps[s].kernel_name = name;
  }
  ingot_rt_free(b->allocator, scratch);
  return INGOT_OK;
}

/* ---- Open / release ---------------------------------------------------------- */

/* With a public key, the signature is checked before any checksum, so that a
 * signed bundle altered anywhere its signature covers fails with
 * INGOT_ERROR_SIGNATURE rather than with the checksum the change broke. Only
 * what locating the signed bytes needs is read first: the magic, byte order
 * and format version (the layout of the table depends on them), and where
 * the section table ends. */
static ingot_status_t check_signature_first(const uint8_t* file, size_t size, const uint8_t* public_key,
                                            ingot_bundle_header_t* h, ingot_section_entry_t* entries) {
  if (size < sizeof *h)
    return ingot_rt_fail(INGOT_ERROR_CORRUPT, "bundle: %zu bytes, shorter than the header", size);
  memcpy(h, file, sizeof *h);
  if (memcmp(h->magic, INGOT_BUNDLE_MAGIC, 8) != 0)
    return ingot_rt_fail(INGOT_ERROR_CORRUPT, "bundle: bad magic (not an Ingot bundle)");
  if (h->endian_mark != INGOT_ENDIAN_MARK)
    return ingot_rt_fail(INGOT_ERROR_UNSUPPORTED, "bundle: written with another byte order");
  if (h->format_version < INGOT_FORMAT_VERSION_MIN || h->format_version > INGOT_FORMAT_VERSION)
    return ingot_rt_fail(INGOT_ERROR_VERSION, "bundle: format version %u, this runtime reads %u to %u",
                         h->format_version, INGOT_FORMAT_VERSION_MIN, INGOT_FORMAT_VERSION);
  if (h->section_count == 0 || h->section_count > INGOT_RT_MAX_SECTIONS)
    return ingot_rt_fail(INGOT_ERROR_CORRUPT, "bundle: %u sections", h->section_count);
  uint64_t table_end = sizeof *h + (uint64_t)h->section_count * sizeof(ingot_section_entry_t);
  if (table_end > size) return ingot_rt_fail(INGOT_ERROR_CORRUPT, "bundle: section table truncated");
  memcpy(entries, file + sizeof *h, (size_t)(table_end - sizeof *h));
  return ingot_rt_signature_check(file, size, h, entries, public_key);
}

/* The header, every table entry (with its stored checksum), the layout, and
 * the signature (checked against public_key, first, when it is not NULL).
 * Reads the file only: nothing is decoded or allocated. */
static ingot_status_t check_container(const uint8_t* file, size_t size, const ingot_limits_t* limits,
                                      const uint8_t* public_key, ingot_bundle_header_t* h,
                                      ingot_section_entry_t* entries) {
  ingot_status_t status;
  if (public_key) {
    status = check_signature_first(file, size, public_key, h, entries);
    if (status != INGOT_OK) return status;
  }
  status = check_header(file, size, h);
  if (status != INGOT_OK) return status;
  uint64_t table_end = sizeof *h + (uint64_t)h->section_count * sizeof(ingot_section_entry_t);
  memcpy(entries, file + sizeof *h, (size_t)(table_end - sizeof *h));
  uint32_t counts[INGOT_SECTION_KIND_LAST + 1] = {0};
  for (uint32_t i = 0; i < h->section_count; ++i) {
    status = check_entry(file, size, table_end, i, &entries[i], limits);
    if (status != INGOT_OK) return status;
    counts[entries[i].kind]++;
  }
  if (counts[INGOT_SECTION_MANIFEST] != 1 || counts[INGOT_SECTION_WEIGHTS] == 0 ||
      counts[INGOT_SECTION_PLAN] != 1 || counts[INGOT_SECTION_SIGNATURE] > 1 ||
      counts[INGOT_SECTION_METADATA] > 1 ||
      counts[INGOT_SECTION_CODE] == 0)
    return ingot_rt_fail(INGOT_ERROR_CORRUPT,
                         "bundle: needs one manifest and plan section, weights and some code (at most "
                         "one metadata and one signature section)");
  status = check_layout(file, size, table_end, entries, h->section_count);
  if (status != INGOT_OK) return status;
  /* Without a key: the signature section's place and shape only. */
  return public_key ? INGOT_OK : ingot_rt_signature_check(file, size, h, entries, NULL);
}

static ingot_status_t bundle_open(ingot_bundle_t* b, const uint8_t* file, size_t size,
                                  const ingot_limits_t* limits, const uint8_t* public_key) {
  ingot_bundle_header_t h;
  ingot_section_entry_t entries[INGOT_RT_MAX_SECTIONS];
  ingot_status_t status = check_container(file, size, limits, public_key, &h, entries);
  if (status != INGOT_OK) return status;
  int manifest = -1, plan = -1, metadata = -1;
  for (uint32_t i = 0; i < h.section_count; ++i) {
    if (entries[i].kind == INGOT_SECTION_MANIFEST) manifest = (int)i;
    if (entries[i].kind == INGOT_SECTION_PLAN) plan = (int)i;
    if (entries[i].kind == INGOT_SECTION_METADATA) metadata = (int)i;
  }

  status = section_decode(b, file, (uint32_t)manifest, &entries[manifest], &b->manifest);
  if (status != INGOT_OK) return status;
  b->manifest_bytes = entries[manifest].raw_size;
  status = section_decode(b, file, (uint32_t)plan, &entries[plan], &b->plan);
  if (status != INGOT_OK) return status;
  b->plan_bytes = entries[plan].raw_size;

  b->format_version = h.format_version;
  status = parse_manifest(b, limits, entries, h.section_count);
  if (status != INGOT_OK) return status;
  status = parse_plan(b, limits);
  if (status != INGOT_OK) return status;
  if (metadata >= 0) {
    status = section_decode(b, file, (uint32_t)metadata, &entries[metadata], &b->metadata);
    if (status != INGOT_OK) return status;
    b->metadata_bytes = entries[metadata].raw_size;
    status = parse_metadata(b);
    if (status != INGOT_OK) return status;
  }
  if (b->forced_loader == NO_DEVICE) {
    reason_append(b, "no code loaded (device none)");
    return INGOT_OK;
  }
  status = load_code(b, file, entries);
  if (status != INGOT_OK) return status;
  return bind_variant(b, file, entries);
}

void ingot_bundle_release(ingot_bundle_t* b) {
  if (!b) return;
  if (b->loader) b->loader->unload(b->module);
  ingot_rt_free(b->allocator, b->steps);
  ingot_rt_free(b->allocator, b->tensors);
  ingot_rt_free(b->allocator, b->plan);
  ingot_rt_free(b->allocator, b->metadata);
  ingot_rt_free(b->allocator, b->weights_copy);
  ingot_rt_free(b->allocator, b->manifest);
  if (b->map) munmap(b->map, b->map_bytes);
  ingot_rt_free(b->allocator, b);
}

static void resolve_options(const ingot_bundle_options_t* options, ingot_allocator_t* out_allocator,
                            ingot_limits_t* out_limits) {
  *out_allocator = ingot_allocator_system();
  *out_limits = g_default_limits;
  if (!options) return;
  if (options->allocator.fn) *out_allocator = options->allocator;
  if (options->limits.max_section_bytes) out_limits->max_section_bytes = options->limits.max_section_bytes;
  if (options->limits.max_arena_bytes) out_limits->max_arena_bytes = options->limits.max_arena_bytes;
  if (options->limits.max_tensors) out_limits->max_tensors = options->limits.max_tensors;
  if (options->limits.max_steps) out_limits->max_steps = options->limits.max_steps;
}

/* Opens `data`; file_kept: the bytes outlive the bundle (borrowed, or `map`,
 * a mapping of map_bytes that the bundle takes over whatever happens). */
static ingot_status_t open_bytes(const void* data, size_t size, const ingot_bundle_options_t* options,
                                 int file_kept, void* map, size_t map_bytes, ingot_bundle_t** out_bundle) {
  ingot_allocator_t allocator;
  ingot_limits_t limits;
  resolve_options(options, &allocator, &limits);
  uint32_t forced = 0;
  if (!device_kind(options ? options->device : NULL, &forced)) {
    if (map) munmap(map, map_bytes);
    return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "bundle: unknown device '%.32s' (auto, cpu, cuda, rocm, none)",
                         options->device);
  }
  ingot_bundle_t* b = (ingot_bundle_t*)ingot_rt_alloc(allocator, sizeof *b);
  if (!b) {
    if (map) munmap(map, map_bytes);
    return ingot_rt_fail(INGOT_ERROR_OUT_OF_MEMORY, "bundle: out of memory");
  }
  memset(b, 0, sizeof *b);
  b->allocator = allocator;
  b->forced_loader = forced;
  b->forced_target = options && options->target ? options->target : NULL;
  b->file_kept = file_kept;
  b->map = map;
  b->map_bytes = map_bytes;
  ingot_status_t status = bundle_open(b, (const uint8_t*)(data ? data : ""), size, &limits,
                                     options ? options->signature_public_key : NULL);
  b->forced_target = NULL;
  if (status != INGOT_OK) {
    ingot_bundle_release(b);
    return status;
  }
  if (b->map && !ingot_bundle_weights_in_place(b)) {
    /* Nothing points into the file any more. */
    munmap(b->map, b->map_bytes);
    b->map = NULL;
  } else if (b->map && b->weights) {
    /* Keep only the weights' pages resident: the rest of the file (code,
     * manifest, other variants) was read for its checksums and is not
     * needed again. Advice only; failure changes nothing. */
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t start = (uintptr_t)b->map, end = start + b->map_bytes;
    uintptr_t w0 = (uintptr_t)b->weights, w1 = w0 + (uintptr_t)b->weights_bytes;
    if (page > 0) {
      uintptr_t pg = (uintptr_t)page;
      uintptr_t head_end = w0 & ~(pg - 1), tail_start = (w1 + pg - 1) & ~(pg - 1);
      if (head_end > start) madvise(b->map, head_end - start, MADV_DONTNEED);
      if (tail_start < end) madvise((void*)tail_start, end - tail_start, MADV_DONTNEED);
    }
  }
  *out_bundle = b;
  return INGOT_OK;
}

ingot_status_t ingot_bundle_open_memory(const void* data, size_t size,
                                        const ingot_bundle_options_t* options,
                                        ingot_bundle_t** out_bundle) {
  if (!out_bundle) return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "bundle: out_bundle is NULL");
  *out_bundle = NULL;
  if (!data && size) return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "bundle: data is NULL");
  if (options && (options->flags & ~(INGOT_BUNDLE_BORROW | INGOT_BUNDLE_READ_FILE)))
    return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "bundle: unknown flags 0x%x", options->flags);
  int borrow = options && (options->flags & INGOT_BUNDLE_BORROW);
  return open_bytes(data, size, options, borrow, NULL, 0, out_bundle);
}

ingot_status_t ingot_bundle_verify_signature(const void* data, size_t size,
                                             const uint8_t* public_key) {
  if (!public_key) return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "bundle: public_key is NULL");
  if (!data && size) return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "bundle: data is NULL");
  ingot_bundle_header_t h;
  ingot_section_entry_t entries[INGOT_RT_MAX_SECTIONS];
  ingot_limits_t limits = g_default_limits;
  limits.max_section_bytes = UINT64_MAX; /* nothing is decoded here */
  return check_container((const uint8_t*)(data ? data : ""), size, &limits, public_key, &h, entries);
}

/* Reads the whole file into memory (INGOT_BUNDLE_READ_FILE). */
static ingot_status_t open_file_read(const char* path, int fd, size_t size, const ingot_bundle_options_t* options,
                                     ingot_allocator_t allocator, ingot_bundle_t** out_bundle) {
  uint8_t* data = (uint8_t*)ingot_rt_alloc(allocator, size);
  if (!data)
    return ingot_rt_fail(INGOT_ERROR_OUT_OF_MEMORY, "bundle: '%s': cannot allocate %zu bytes", path, size);
  size_t got = 0;
  while (got < size) {
    ssize_t n = read(fd, data + got, size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = n < 0 ? errno : 0;
      ingot_rt_free(allocator, data);
      return ingot_rt_fail(INGOT_ERROR_IO, "bundle: cannot read '%s': %s", path,
                           err ? strerror(err) : "the file shrank while it was read");
    }
    got += (size_t)n;
  }
  ingot_bundle_options_t copy = *options;
  copy.flags &= ~INGOT_BUNDLE_BORROW;
  ingot_status_t status = open_bytes(data, size, &copy, 0, NULL, 0, out_bundle);
  ingot_rt_free(allocator, data);
  return status;
}

ingot_status_t ingot_bundle_open_file(const char* path, const ingot_bundle_options_t* options,
                                      ingot_bundle_t** out_bundle) {
  if (!out_bundle) return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "bundle: out_bundle is NULL");
  *out_bundle = NULL;
  if (!path) return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "bundle: path is NULL");
  ingot_bundle_options_t opts;
  memset(&opts, 0, sizeof opts);
  if (options) opts = *options;
  if (opts.flags & ~(INGOT_BUNDLE_BORROW | INGOT_BUNDLE_READ_FILE))
    return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "bundle: unknown flags 0x%x", opts.flags);
  ingot_allocator_t allocator;
  ingot_limits_t limits;
  resolve_options(&opts, &allocator, &limits);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ingot_rt_fail(INGOT_ERROR_IO, "bundle: cannot open '%s': %s", path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int err = errno;
    close(fd);
    return ingot_rt_fail(INGOT_ERROR_IO, "bundle: cannot stat '%s': %s", path, strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return ingot_rt_fail(INGOT_ERROR_IO, "bundle: '%s' is not a regular file", path);
  }
  if (st.st_size < 0 || (uint64_t)st.st_size > SIZE_MAX / 2) {
    close(fd);
    return ingot_rt_fail(INGOT_ERROR_LIMIT, "bundle: '%s' is too large to open", path);
  }
  size_t size = (size_t)st.st_size;
  ingot_status_t status;
  if ((opts.flags & INGOT_BUNDLE_READ_FILE) || size == 0) {
    status = open_file_read(path, fd, size, &opts, allocator, out_bundle);
    close(fd);
    return status;
  }
  int map_flags = MAP_PRIVATE;
#ifdef MAP_POPULATE
  map_flags |= MAP_POPULATE; /* every page is read for its checksum anyway */
#endif
  void* map = mmap(NULL, size, PROT_READ, map_flags, fd, 0);
  int err = errno;
  close(fd);
  if (map == MAP_FAILED) return ingot_rt_fail(INGOT_ERROR_IO, "bundle: cannot map '%s': %s", path, strerror(err));
  opts.flags &= ~INGOT_BUNDLE_BORROW;
  return open_bytes(map, size, &opts, 1, map, size, out_bundle);
}

/* ---- Queries ------------------------------------------------------------------ */

uint32_t ingot_bundle_input_count(const ingot_bundle_t* b) { return b ? b->input_count : 0; }
uint32_t ingot_bundle_output_count(const ingot_bundle_t* b) { return b ? b->output_count : 0; }

ingot_status_t ingot_bundle_input_info(const ingot_bundle_t* b, uint32_t index,
                                       ingot_tensor_info_t* out_info) {
  if (!b || !out_info) return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "bundle: NULL argument");
  if (index >= b->input_count)
    return ingot_rt_fail(INGOT_ERROR_NOT_FOUND, "bundle: no input %u (have %u)", index, b->input_count);
  *out_info = b->tensors[b->inputs[index]].info;
  return INGOT_OK;
}

ingot_status_t ingot_bundle_output_info(const ingot_bundle_t* b, uint32_t index,
                                        ingot_tensor_info_t* out_info) {
  if (!b || !out_info) return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "bundle: NULL argument");
  if (index >= b->output_count)
    return ingot_rt_fail(INGOT_ERROR_NOT_FOUND, "bundle: no output %u (have %u)", index, b->output_count);
  *out_info = b->tensors[b->outputs[index]].info;
  return INGOT_OK;
}

/* The position in `list` (count tensor ids) of the tensor named `name`. */
static ingot_status_t tensor_index(const ingot_bundle_t* b, const uint32_t* list, uint32_t count,
                                   const char* what, const char* name, uint32_t* out_index) {
  if (!out_index) return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "bundle: out_index is NULL");
  *out_index = UINT32_MAX;
  if (!b || !name) return ingot_rt_fail(INGOT_ERROR_INVALID_ARGUMENT, "bundle: NULL argument");
  for (uint32_t i = 0; i < count; ++i)
    if (strcmp(b->tensors[list[i]].info.name, name) == 0) {
      *out_index = i;
      return INGOT_OK;
    }
  return ingot_rt_fail(INGOT_ERROR_NOT_FOUND, "bundle: no %s named '%.200s' (the bundle has %u %ss)", what,
                       name, count, what);
}

ingot_status_t ingot_bundle_input_index(const ingot_bundle_t* b, const char* name, uint32_t* out_index) {
  return tensor_index(b, b ? b->inputs : NULL, b ? b->input_count : 0, "input", name, out_index);
}

ingot_status_t ingot_bundle_output_index(const ingot_bundle_t* b, const char* name, uint32_t* out_index) {
  return tensor_index(b, b ? b->outputs : NULL, b ? b->output_count : 0, "output", name, out_index);
}

uint64_t ingot_bundle_arena_bytes(const ingot_bundle_t* b) { return b ? b->arena_bytes : 0; }
int ingot_bundle_weights_in_place(const ingot_bundle_t* b) { return b && b->weights && !b->weights_copy; }
uint64_t ingot_bundle_arena_lower_bound(const ingot_bundle_t* b) {
  return b ? b->arena_lower_bound : 0;
}
const char* ingot_bundle_target(const ingot_bundle_t* b) { return b ? b->target : ""; }
const char* ingot_bundle_target_reason(const ingot_bundle_t* b) { return b ? b->target_reason : ""; }

const char* ingot_bundle_device(const ingot_bundle_t* b) {
  return b && b->loader ? device_name(b->loader->kind) : "";
}

int ingot_device_probe(const char* device, char* out_why, size_t why_cap) {
  char dummy[8];
  if (!out_why || why_cap == 0) {
    out_why = dummy;
    why_cap = sizeof dummy;
  }
  uint32_t kind = 0;
  if (!device || !device_kind(device, &kind) || kind == 0) {
    snprintf(out_why, why_cap, "unknown device '%.32s' (cpu, cuda, rocm)", device ? device : "(null)");
    return 0;
  }
  if (kind == INGOT_LOADER_CPU_ELF) {
    ingot_rt_cpu_describe(out_why, why_cap);
    return 1;
  }
#if INGOT_RT_GPU_LOADERS
  if (kind == INGOT_LOADER_CUDA) return ingot_rt_cuda_probe(out_why, why_cap) > 0;
  return ingot_rt_hip_probe(out_why, why_cap) > 0;
#else
  snprintf(out_why, why_cap, "this libingot was built without GPU loaders (-DINGOT_GPU_LOADERS=OFF)");
  return 0;
#endif
}
