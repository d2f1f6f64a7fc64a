/* Status names, the per-thread error message, version, dtypes, the system
 * allocator and CRC-32. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "runtime_internal.h"

uint32_t ingot_version(void) {
  return ((uint32_t)INGOT_VERSION_MAJOR << 16) | ((uint32_t)INGOT_VERSION_MINOR << 8) |
         (uint32_t)INGOT_VERSION_PATCH;
}

const char* ingot_status_name(ingot_status_t status) {
  switch (status) {
    case INGOT_OK: return "ok";
    case INGOT_ERROR_INVALID_ARGUMENT: return "invalid argument";
    case INGOT_ERROR_OUT_OF_MEMORY: return "out of memory";
    case INGOT_ERROR_IO: return "i/o error";
    case INGOT_ERROR_CORRUPT: return "corrupt";
    case INGOT_ERROR_UNSUPPORTED: return "unsupported";
    case INGOT_ERROR_VERSION: return "version mismatch";
    case INGOT_ERROR_NOT_FOUND: return "not found";
    case INGOT_ERROR_LIMIT: return "limit exceeded";
    case INGOT_ERROR_INTERNAL: return "internal error";
    case INGOT_ERROR_SIGNATURE: return "signature refused";
    case INGOT_ERROR_CANCELLED: return "cancelled";
  }
  return "unknown status";
}

static _Thread_local char g_last_error[512];

const char* ingot_last_error(void) { return g_last_error; }

void ingot_rt_error_clear(void) { g_last_error[0] = '\0'; }

ingot_status_t ingot_rt_fail(ingot_status_t code, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  vsnprintf(g_last_error, sizeof g_last_error, fmt, args);
  va_end(args);
  return code;
}

size_t ingot_dtype_size(ingot_dtype_t dtype) {
  switch (dtype) {
    case INGOT_DTYPE_F32: return 4;
    case INGOT_DTYPE_U8: return 1;
    case INGOT_DTYPE_I8: return 1;
    case INGOT_DTYPE_I32: return 4;
    case INGOT_DTYPE_I64: return 8;
    case INGOT_DTYPE_BOOL: return 1;
    case INGOT_DTYPE_F16: return 2;
    case INGOT_DTYPE_F64: return 8;
    case INGOT_DTYPE_I16: return 2;
    case INGOT_DTYPE_U16: return 2;
    case INGOT_DTYPE_U32: return 4;
    case INGOT_DTYPE_U64: return 8;
    case INGOT_DTYPE_BF16: return 2;
    case INGOT_DTYPE_F8E4M3FN:
    case INGOT_DTYPE_F8E4M3FNUZ:
    case INGOT_DTYPE_F8E5M2:
    case INGOT_DTYPE_F8E5M2FNUZ:
    case INGOT_DTYPE_I4: /* one value per byte */
    case INGOT_DTYPE_U4: return 1;
    default: return 0;
  }
}

const char* ingot_dtype_name(ingot_dtype_t dtype) {
  switch (dtype) {
    case INGOT_DTYPE_F32: return "float32";
    case INGOT_DTYPE_U8: return "uint8";
    case INGOT_DTYPE_I8: return "int8";
    case INGOT_DTYPE_I32: return "int32";
    case INGOT_DTYPE_I64: return "int64";
    case INGOT_DTYPE_BOOL: return "bool";
    case INGOT_DTYPE_F16: return "float16";
    case INGOT_DTYPE_F64: return "float64";
    case INGOT_DTYPE_I16: return "int16";
    case INGOT_DTYPE_U16: return "uint16";
    case INGOT_DTYPE_U32: return "uint32";
    case INGOT_DTYPE_U64: return "uint64";
    case INGOT_DTYPE_BF16: return "bfloat16";
    case INGOT_DTYPE_F8E4M3FN: return "float8e4m3fn";
    case INGOT_DTYPE_F8E4M3FNUZ: return "float8e4m3fnuz";
    case INGOT_DTYPE_F8E5M2: return "float8e5m2";
    case INGOT_DTYPE_F8E5M2FNUZ: return "float8e5m2fnuz";
    case INGOT_DTYPE_I4: return "int4";
    case INGOT_DTYPE_U4: return "uint4";
    default: return "invalid";
  }
}

/* ---- System allocator: 64-byte aligned blocks. --------------------------- */

static void* system_allocator_fn(void* self, void* ptr, size_t size) {
  (void)self;
  if (size == 0) {
    free(ptr);
    return NULL;
  }
  if (ptr) return NULL; /* no realloc in this interface */
  if (size > SIZE_MAX - 63) return NULL;
  /* aligned_alloc wants a multiple of the alignment. */
  return aligned_alloc(64, (size + 63) & ~(size_t)63);
}

ingot_allocator_t ingot_allocator_system(void) {
  ingot_allocator_t allocator = {NULL, system_allocator_fn};
  return allocator;
}

void* ingot_rt_alloc(ingot_allocator_t allocator, size_t size) {
  return allocator.fn(allocator.self, NULL, size ? size : 1);
}

void ingot_rt_free(ingot_allocator_t allocator, void* ptr) {
  if (ptr) allocator.fn(allocator.self, ptr, 0);
}

/* ---- CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320), slicing by 8:
 * eight 256-entry tables let the loop take 8 bytes a step (several times
 * faster than a byte at a time on the ~100 MB weight sections of large
 * models). Table k maps a byte to its CRC after k further zero bytes. */

static uint32_t g_crc_table[8][256];
static pthread_once_t g_crc_once = PTHREAD_ONCE_INIT;

static void crc_table_init(void) {
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    g_crc_table[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; ++i)
    for (int t = 1; t < 8; ++t)
      g_crc_table[t][i] = g_crc_table[0][g_crc_table[t - 1][i] & 0xFFu] ^ (g_crc_table[t - 1][i] >> 8);
}

uint32_t ingot_crc32(uint32_t seed, const void* data, size_t size) {
  pthread_once(&g_crc_once, crc_table_init);
  const uint8_t* p = (const uint8_t*)data;
  uint32_t c = ~seed;
  while (size >= 8) {
    uint32_t lo = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
    uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
    c = g_crc_table[7][lo & 0xFFu] ^ g_crc_table[6][(lo >> 8) & 0xFFu] ^ g_crc_table[5][(lo >> 16) & 0xFFu] ^
        g_crc_table[4][lo >> 24] ^ g_crc_table[3][hi & 0xFFu] ^ g_crc_table[2][(hi >> 8) & 0xFFu] ^
        g_crc_table[1][(hi >> 16) & 0xFFu] ^ g_crc_table[0][hi >> 24];
    p += 8;
    size -= 8;
  }
  while (size--) c = g_crc_table[0][(c ^ *p++) & 0xFFu] ^ (c >> 8);
  return ~c;
}
