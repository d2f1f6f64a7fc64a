/* .npy reading and writing, .npz (stored zip) writing. See npy.h. */
#include "npy.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/ingot.h"

static const uint8_t kNpyMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

typedef struct npy_descr_t {
  const char* descr;
  ingot_dtype_t dtype;
} npy_descr_t;

static const npy_descr_t kDescrs[] = {
    {"<f4", INGOT_DTYPE_F32}, {"<f8", INGOT_DTYPE_F64}, {"<f2", INGOT_DTYPE_F16},
    {"<i8", INGOT_DTYPE_I64}, {"<i4", INGOT_DTYPE_I32}, {"|u1", INGOT_DTYPE_U8},
    {"|i1", INGOT_DTYPE_I8},  {"|b1", INGOT_DTYPE_BOOL}, {"<i2", INGOT_DTYPE_I16},
    {"<u2", INGOT_DTYPE_U16}, {"<u4", INGOT_DTYPE_U32}, {"<u8", INGOT_DTYPE_U64},
    /* numpy has no bfloat16: its .npy files hold the raw bits as uint16
     * (written so; read as U16, which run.c accepts for a bfloat16 input) */
    {"<u2", INGOT_DTYPE_BF16},
    /* nor float8: the raw bits as uint8; int4 / uint4 one value a byte, as
     * int8 / uint8 (read as I8 / U8, which run.c accepts for them) */
    {"|u1", INGOT_DTYPE_F8E4M3FN}, {"|u1", INGOT_DTYPE_F8E4M3FNUZ}, {"|u1", INGOT_DTYPE_F8E5M2},
    {"|u1", INGOT_DTYPE_F8E5M2FNUZ}, {"|i1", INGOT_DTYPE_I4}, {"|u1", INGOT_DTYPE_U4},
};
enum { kDescrCount = sizeof(kDescrs) / sizeof(kDescrs[0]) };

const char* ingot_npy_descr(ingot_dtype_t dtype) {
  for (int i = 0; i < kDescrCount; ++i) {
    if (kDescrs[i].dtype == dtype) return kDescrs[i].descr;
  }
  return NULL;
}

void ingot_npy_array_free(ingot_npy_array_t* array) {
  if (!array) return;
  free(array->data);
  memset(array, 0, sizeof(*array));
}

/* ---- header dict parser --------------------------------------------------
 * The header is a Python dict literal such as
 *   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 * We accept exactly that grammar: string keys, a string, a bool, a tuple of
 * non-negative integers (a 1-tuple needs its trailing comma). */
typedef struct header_parser_t {
  const char* file;
  const char* start;
  const char* p;
  const char* end;
} header_parser_t;

static void skip_space(header_parser_t* hp) {
  while (hp->p < hp->end && (*hp->p == ' ' || *hp->p == '\t' || *hp->p == '\n' || *hp->p == '\r')) {
    ++hp->p;
  }
}

static bool accept(header_parser_t* hp, char c) {
  skip_space(hp);
  if (hp->p < hp->end && *hp->p == c) {
    ++hp->p;
    return true;
  }
  return false;
}

static ingot_status_t bad_header(header_parser_t* hp, const char* what) {
  return ingot_fail(INGOT_ERROR_CORRUPT, "'%s': bad .npy header: %s (at byte %d of the header dict)",
                    hp->file, what, (int)(hp->p - hp->start));
}

/* Reads a quoted string into out (cap bytes). */
static ingot_status_t parse_string(header_parser_t* hp, char* out, size_t cap) {
  skip_space(hp);
  if (hp->p >= hp->end || (*hp->p != '\'' && *hp->p != '"')) {
    return ingot_fail(INGOT_ERROR_CORRUPT, "'%s': bad .npy header: expected a quoted string",
                      hp->file);
  }
  char quote = *hp->p++;
  size_t n = 0;
  while (hp->p < hp->end && *hp->p != quote) {
    if (*hp->p == '\\' || n + 1 >= cap) {
      return ingot_fail(INGOT_ERROR_CORRUPT, "'%s': bad .npy header: unexpected string", hp->file);
    }
    out[n++] = *hp->p++;
  }
  if (hp->p >= hp->end) {
    return ingot_fail(INGOT_ERROR_CORRUPT, "'%s': bad .npy header: unterminated string",
                      hp->file);
  }
  ++hp->p;
  out[n] = '\0';
  return INGOT_OK;
}

static bool match_word(header_parser_t* hp, const char* word) {
  skip_space(hp);
  size_t n = strlen(word);
  if ((size_t)(hp->end - hp->p) < n || memcmp(hp->p, word, n) != 0) return false;
  const char* after = hp->p + n;
  if (after < hp->end && ((*after >= 'a' && *after <= 'z') || (*after >= 'A' && *after <= 'Z') ||
                          (*after >= '0' && *after <= '9') || *after == '_')) {
    return false;
  }
  hp->p = after;
  return true;
}

static ingot_status_t parse_shape(header_parser_t* hp, ingot_npy_array_t* out) {
  if (!accept(hp, '(')) {
    return ingot_fail(INGOT_ERROR_CORRUPT, "'%s': bad .npy header: 'shape' is not a tuple",
                      hp->file);
  }
  uint32_t rank = 0;
  bool trailing_comma = false;
  for (;;) {
    if (accept(hp, ')')) break;
    skip_space(hp);
    if (hp->p >= hp->end || *hp->p < '0' || *hp->p > '9') {
      return ingot_fail(INGOT_ERROR_CORRUPT,
                        "'%s': bad .npy header: 'shape' must hold non-negative integers",
                        hp->file);
    }
    uint64_t v = 0;
    while (hp->p < hp->end && *hp->p >= '0' && *hp->p <= '9') {
      if (!ingot_mul_u64(v, 10, &v) || !ingot_add_u64(v, (uint64_t)(*hp->p - '0'), &v) ||
          v > (uint64_t)INT64_MAX) {
        return ingot_fail(INGOT_ERROR_CORRUPT, "'%s': bad .npy header: a dimension overflows",
                          hp->file);
      }
      ++hp->p;
    }
    if (rank >= INGOT_MAX_RANK) {
      return ingot_fail(INGOT_ERROR_UNSUPPORTED, "'%s': arrays of rank above %u are not supported",
                        hp->file, INGOT_MAX_RANK);
    }
    out->dims[rank++] = (int64_t)v;
    trailing_comma = accept(hp, ',');
    if (trailing_comma) continue;
    if (!accept(hp, ')')) {
      return ingot_fail(INGOT_ERROR_CORRUPT, "'%s': bad .npy header: malformed 'shape' tuple",
                        hp->file);
    }
    break;
  }
  if (rank == 1 && !trailing_comma) {
    return ingot_fail(INGOT_ERROR_CORRUPT, "'%s': bad .npy header: 'shape' is not a tuple",
                      hp->file);
  }
  out->rank = rank;
  return INGOT_OK;
}

static ingot_status_t parse_header_dict(const char* file, const char* text, size_t length,
                                        ingot_npy_array_t* out) {
  header_parser_t hp = {file, text, text, text + length};
  bool have_descr = false, have_order = false, have_shape = false;
  if (!accept(&hp, '{')) return bad_header(&hp, "it is not a dict");
  for (;;) {
    if (accept(&hp, '}')) break;
    char key[32];
    ingot_status_t s = parse_string(&hp, key, sizeof(key));
    if (s) return s;
    if (!accept(&hp, ':')) return bad_header(&hp, "expected ':' after a key");
    if (strcmp(key, "descr") == 0) {
      if (have_descr) return bad_header(&hp, "'descr' appears twice");
      have_descr = true;
      char descr[32];
      s = parse_string(&hp, descr, sizeof(descr));
      if (s) {
        return ingot_fail(INGOT_ERROR_UNSUPPORTED,
                          "'%s': unsupported dtype (structured or not a simple type string)", file);
      }
      out->dtype = INGOT_DTYPE_INVALID;
      for (int i = 0; i < kDescrCount && out->dtype == INGOT_DTYPE_INVALID; ++i) {
        if (strcmp(descr, kDescrs[i].descr) == 0) out->dtype = kDescrs[i].dtype; /* the first: "<u2" is U16 */
      }
      if (out->dtype == INGOT_DTYPE_INVALID) {
        if (descr[0] == '>') {
          return ingot_fail(INGOT_ERROR_UNSUPPORTED,
                            "'%s': big-endian data ('%s') is not supported; save it little-endian",
                            file, descr);
        }
        return ingot_fail(INGOT_ERROR_UNSUPPORTED,
                          "'%s': dtype '%s' is not supported (supported: float32 float64 float16 "
                          "int64 int32 uint8 int8 bool)",
                          file, descr);
      }
    } else if (strcmp(key, "fortran_order") == 0) {
      if (have_order) return bad_header(&hp, "'fortran_order' appears twice");
      have_order = true;
      if (match_word(&hp, "True")) {
        return ingot_fail(INGOT_ERROR_UNSUPPORTED,
                          "'%s': Fortran-order arrays are not supported; save a C-order array "
                          "(numpy.ascontiguousarray)",
                          file);
      }
      if (!match_word(&hp, "False")) return bad_header(&hp, "'fortran_order' is not True/False");
    } else if (strcmp(key, "shape") == 0) {
      if (have_shape) return bad_header(&hp, "'shape' appears twice");
      have_shape = true;
      s = parse_shape(&hp, out);
      if (s) return s;
    } else {
      return ingot_fail(INGOT_ERROR_CORRUPT, "'%s': bad .npy header: unexpected key '%s'", file,
                        key);
    }
    if (accept(&hp, ',')) continue;
    if (accept(&hp, '}')) break;
    return bad_header(&hp, "expected ',' or '}'");
  }
  skip_space(&hp);
  if (hp.p != hp.end) return bad_header(&hp, "trailing bytes after the dict");
  if (!have_descr || !have_order || !have_shape) {
    return ingot_fail(INGOT_ERROR_CORRUPT, "'%s': bad .npy header: missing key '%s'", file,
                      !have_descr ? "descr" : !have_order ? "fortran_order" : "shape");
  }
  return INGOT_OK;
}

ingot_status_t ingot_npy_parse(const char* name, const uint8_t* bytes, size_t size,
                               ingot_npy_array_t* out) {
  memset(out, 0, sizeof(*out));
  if (size < 10 || memcmp(bytes, kNpyMagic, sizeof(kNpyMagic)) != 0) {
    return ingot_fail(INGOT_ERROR_CORRUPT, "'%s': not a .npy file (no \\x93NUMPY magic)", name);
  }
  uint8_t major = bytes[6], minor = bytes[7];
  size_t header_start;
  uint64_t header_length;
  if (major == 1 && minor == 0) {
    header_start = 10;
    header_length = (uint64_t)bytes[8] | ((uint64_t)bytes[9] << 8);
  } else if ((major == 2 || major == 3) && minor == 0) {
    if (size < 12) {
      return ingot_fail(INGOT_ERROR_CORRUPT, "'%s': truncated .npy header", name);
    }
    header_start = 12;
    header_length = (uint64_t)bytes[8] | ((uint64_t)bytes[9] << 8) |
                    ((uint64_t)bytes[10] << 16) | ((uint64_t)bytes[11] << 24);
  } else {
    return ingot_fail(INGOT_ERROR_VERSION, "'%s': .npy format version %u.%u is not supported", name,
                      major, minor);
  }
  if (header_length > size - header_start) {
    return ingot_fail(INGOT_ERROR_CORRUPT,
                      "'%s': truncated .npy file (header says %llu bytes, file has %zu)", name,
                      (unsigned long long)header_length, size - header_start);
  }
  const char* text = (const char*)bytes + header_start;
  for (uint64_t i = 0; i < header_length; ++i) {
    unsigned char c = (unsigned char)text[i];
    if (c >= 0x80 || (c < 0x20 && c != '\n' && c != '\t' && c != '\r')) {
      return ingot_fail(INGOT_ERROR_CORRUPT, "'%s': bad .npy header: unexpected byte 0x%02x", name,
                        c);
    }
  }
  ingot_npy_array_t array = {0};
  ingot_status_t s = parse_header_dict(name, text, (size_t)header_length, &array);
  if (s) return s;

  uint64_t count = 1;
  for (uint32_t i = 0; i < array.rank; ++i) {
    if (!ingot_mul_u64(count, (uint64_t)array.dims[i], &count)) {
      return ingot_fail(INGOT_ERROR_CORRUPT, "'%s': the shape's element count overflows", name);
    }
  }
  uint64_t bytes_needed;
  if (!ingot_mul_u64(count, ingot_dtype_size(array.dtype), &bytes_needed) ||
      bytes_needed > (uint64_t)SIZE_MAX) {
    return ingot_fail(INGOT_ERROR_CORRUPT, "'%s': the shape's byte size overflows", name);
  }
  size_t data_offset = header_start + (size_t)header_length;
  size_t data_size = size - data_offset;
  if ((uint64_t)data_size != bytes_needed) {
    char shape[256] = "(";
    size_t n = 1;
    for (uint32_t i = 0; i < array.rank && n < sizeof(shape) - 32; ++i) {
      n += (size_t)snprintf(shape + n, sizeof(shape) - n, i ? ", %lld" : "%lld",
                            (long long)array.dims[i]);
    }
    snprintf(shape + n, sizeof(shape) - n, array.rank == 1 ? ",)" : ")");
    return ingot_fail(INGOT_ERROR_CORRUPT,
                      "'%s': shape %s of %s needs %llu data bytes but the file holds %zu%s", name,
                      shape, ingot_dtype_name(array.dtype), (unsigned long long)bytes_needed,
                      data_size, (uint64_t)data_size < bytes_needed ? " (truncated?)" : "");
  }
  array.count = count;
  array.bytes = (size_t)bytes_needed;
  array.data = malloc(array.bytes ? array.bytes : 1);
  if (!array.data) {
    return ingot_fail(INGOT_ERROR_OUT_OF_MEMORY, "'%s': %zu bytes do not fit in memory", name,
                      array.bytes);
  }
  if (array.bytes) memcpy(array.data, bytes + data_offset, array.bytes);
  *out = array;
  return INGOT_OK;
}

ingot_status_t ingot_npy_read_file(const char* path, ingot_npy_array_t* out) {
  memset(out, 0, sizeof(*out));
  uint8_t* bytes = NULL;
  size_t size = 0;
  ingot_status_t s = ingot_file_read(path, &bytes, &size);
  if (s) return s;
  s = ingot_npy_parse(path, bytes, size, out);
  free(bytes);
  return s;
}

/* ---- writing ------------------------------------------------------------- */
ingot_status_t ingot_npy_encode(ingot_dtype_t dtype, uint32_t rank, const int64_t* dims,
                                const void* data, size_t bytes, ingot_strbuf_t* out) {
  const char* descr = ingot_npy_descr(dtype);
  if (!descr) {
    return ingot_fail(INGOT_ERROR_UNSUPPORTED, "dtype %s cannot be written to .npy",
                      ingot_dtype_name(dtype));
  }
  if (rank > INGOT_MAX_RANK) {
    return ingot_fail(INGOT_ERROR_UNSUPPORTED, "rank %u is above %u", rank, INGOT_MAX_RANK);
  }
  uint64_t count = 1;
  for (uint32_t i = 0; i < rank; ++i) {
    if (dims[i] < 0 || !ingot_mul_u64(count, (uint64_t)dims[i], &count)) {
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "bad shape for .npy");
    }
  }
  uint64_t expected;
  if (!ingot_mul_u64(count, ingot_dtype_size(dtype), &expected) || expected != (uint64_t)bytes) {
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                      "shape and data size disagree (%llu bytes expected, %zu given)",
                      (unsigned long long)expected, bytes);
  }
  char dict[512];
  int n = snprintf(dict, sizeof(dict), "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
  for (uint32_t i = 0; i < rank; ++i) {
    n += snprintf(dict + n, sizeof(dict) - (size_t)n, i ? ", %lld" : "%lld", (long long)dims[i]);
  }
  n += snprintf(dict + n, sizeof(dict) - (size_t)n, "%s), }", rank == 1 ? "," : "");
  /* magic(6) version(2) length(2) dict padding '\n': total a multiple of 64. */
  size_t total = 10 + (size_t)n + 1;
  size_t padded = (total + 63) / 64 * 64;
  size_t header_length = padded - 10;
  uint8_t prefix[10];
  memcpy(prefix, kNpyMagic, 6);
  prefix[6] = 1;
  prefix[7] = 0;
  prefix[8] = (uint8_t)(header_length & 0xff);
  prefix[9] = (uint8_t)(header_length >> 8);
  ingot_strbuf_append_bytes(out, prefix, sizeof(prefix));
  ingot_strbuf_append_bytes(out, dict, (size_t)n);
  for (size_t i = total; i < padded; ++i) ingot_strbuf_append_bytes(out, " ", 1);
  ingot_strbuf_append_bytes(out, "\n", 1);
  if (bytes) ingot_strbuf_append_bytes(out, data, bytes);
  return INGOT_OK;
}

ingot_status_t ingot_npy_write_file(const char* path, ingot_dtype_t dtype, uint32_t rank,
                                    const int64_t* dims, const void* data, size_t bytes) {
  ingot_strbuf_t sb = {0};
  ingot_status_t s = ingot_npy_encode(dtype, rank, dims, data, bytes, &sb);
  if (s == INGOT_OK) s = ingot_file_write_atomic(path, sb.data, sb.length);
  if (s) ingot_fail_prefix(s, "'%s'", path);
  ingot_strbuf_free(&sb);
  return s;
}

/* ---- .npz: a zip of stored members --------------------------------------- */
void ingot_npz_member_name(const char* name, char* out, size_t cap) {
  size_t n = 0;
  for (const char* p = name; *p && n + 1 < cap; ++p) {
    unsigned char c = (unsigned char)*p;
    out[n++] = (c == '/' || c == '\\' || c < 0x20 || c == 0x7f) ? '_' : (char)c;
  }
  if (cap) out[n] = '\0';
}

static void put16(ingot_strbuf_t* sb, uint32_t v) {
  uint8_t b[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
  ingot_strbuf_append_bytes(sb, b, 2);
}
static void put32(ingot_strbuf_t* sb, uint32_t v) {
  uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
  ingot_strbuf_append_bytes(sb, b, 4);
}

enum {
  kZipLocalSig = 0x04034b50,
  kZipCentralSig = 0x02014b50,
  kZipEndSig = 0x06054b50,
  kZipVersion = 20,
  kZipDosTime = 0,        /* 00:00:00: archives are reproducible */
  kZipDosDate = 0x21,     /* 1980-01-01 */
};
#define ZIP_MAX_OFFSET 0xffffffffull

typedef struct zip_record_t {
  char* name;
  uint32_t crc;
  uint32_t size;
  uint32_t offset;
} zip_record_t;

ingot_status_t ingot_npz_write_file(const char* path, const ingot_npz_member_t* members,
                                    uint32_t count) {
  if (count > 0xffffu) {
    return ingot_fail(INGOT_ERROR_LIMIT, "'%s': %u arrays are too many for an .npz without zip64",
                      path, count);
  }
  zip_record_t* records = ingot_xcalloc(count ? count : 1, sizeof(zip_record_t));
  ingot_strbuf_t zip = {0};
  ingot_strbuf_t npy = {0};
  ingot_status_t s = INGOT_OK;
  for (uint32_t i = 0; i < count && s == INGOT_OK; ++i) {
    const ingot_npz_member_t* m = &members[i];
    size_t base_len = strlen(m->name);
    if (base_len == 0 || base_len > 4096) {
      s = ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "'%s': array %u has an unusable name", path, i);
      break;
    }
    records[i].name = ingot_xmalloc(base_len + 5);
    ingot_npz_member_name(m->name, records[i].name, base_len + 1);
    memcpy(records[i].name + strlen(records[i].name), ".npy", 5);
    for (uint32_t j = 0; j < i; ++j) {
      if (strcmp(records[j].name, records[i].name) == 0) {
        s = ingot_fail(INGOT_ERROR_INVALID_ARGUMENT,
                       "'%s': two arrays would both be stored as '%s'", path, records[i].name);
      }
    }
    if (s) break;
    npy.length = 0;
    s = ingot_npy_encode(m->dtype, m->rank, m->dims, m->data, m->bytes, &npy);
    if (s) {
      ingot_fail_prefix(s, "'%s': array '%s'", path, m->name);
      break;
    }
    if ((uint64_t)zip.length + 30 + strlen(records[i].name) + npy.length > ZIP_MAX_OFFSET) {
      s = ingot_fail(INGOT_ERROR_LIMIT,
                     "'%s': the archive would pass 4 GiB, which needs zip64 (not supported); "
                     "write fewer or smaller outputs",
                     path);
      break;
    }
    records[i].crc = ingot_crc32(0, npy.data, npy.length);
    records[i].size = (uint32_t)npy.length;
    records[i].offset = (uint32_t)zip.length;
    uint32_t name_len = (uint32_t)strlen(records[i].name);
    put32(&zip, kZipLocalSig);
    put16(&zip, kZipVersion);
    put16(&zip, 0); /* flags */
    put16(&zip, 0); /* stored */
    put16(&zip, kZipDosTime);
    put16(&zip, kZipDosDate);
    put32(&zip, records[i].crc);
    put32(&zip, records[i].size);
    put32(&zip, records[i].size);
    put16(&zip, name_len);
    put16(&zip, 0); /* extra */
    ingot_strbuf_append_bytes(&zip, records[i].name, name_len);
    ingot_strbuf_append_bytes(&zip, npy.data, npy.length);
  }
  if (s == INGOT_OK) {
    uint64_t central_offset = zip.length;
    for (uint32_t i = 0; i < count; ++i) {
      uint32_t name_len = (uint32_t)strlen(records[i].name);
      put32(&zip, kZipCentralSig);
      put16(&zip, kZipVersion); /* made by */
      put16(&zip, kZipVersion); /* needed */
      put16(&zip, 0);
      put16(&zip, 0);
      put16(&zip, kZipDosTime);
      put16(&zip, kZipDosDate);
      put32(&zip, records[i].crc);
      put32(&zip, records[i].size);
      put32(&zip, records[i].size);
      put16(&zip, name_len);
      put16(&zip, 0); /* extra */
      put16(&zip, 0); /* comment */
      put16(&zip, 0); /* disk */
      put16(&zip, 0); /* internal attributes */
      put32(&zip, 0); /* external attributes */
      put32(&zip, records[i].offset);
      ingot_strbuf_append_bytes(&zip, records[i].name, name_len);
    }
    uint64_t central_size = zip.length - central_offset;
    if (central_offset + central_size + 22 > ZIP_MAX_OFFSET) {
      s = ingot_fail(INGOT_ERROR_LIMIT,
                     "'%s': the archive would pass 4 GiB, which needs zip64 (not supported)", path);
    } else {
      put32(&zip, kZipEndSig);
      put16(&zip, 0);
      put16(&zip, 0);
      put16(&zip, count);
      put16(&zip, count);
      put32(&zip, (uint32_t)central_size);
      put32(&zip, (uint32_t)central_offset);
      put16(&zip, 0); /* comment */
      s = ingot_file_write_atomic(path, zip.data ? zip.data : "", zip.length);
    }
  }
  for (uint32_t i = 0; i < count; ++i) free(records[i].name);
  free(records);
  ingot_strbuf_free(&npy);
  ingot_strbuf_free(&zip);
  return s;
}
