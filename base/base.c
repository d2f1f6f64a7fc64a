/* Support for the compiler side: errors, arenas, strings, files. */
#define _GNU_SOURCE
#include "base/base.h"

#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { kErrorBytes = 4096 };
static _Thread_local char g_error[kErrorBytes];

ingot_status_t ingot_fail(ingot_status_t code, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  vsnprintf(g_error, sizeof(g_error), fmt, args);
  va_end(args);
  return code;
}

ingot_status_t ingot_fail_prefix(ingot_status_t code, const char* fmt, ...) {
  char prefix[1024];
  char old[kErrorBytes];
  va_list args;
  va_start(args, fmt);
  vsnprintf(prefix, sizeof(prefix), fmt, args);
  va_end(args);
  memcpy(old, g_error, sizeof(old));
  size_t n = strlen(prefix);
  if (n > sizeof(g_error) - 3) n = sizeof(g_error) - 3;
  memcpy(g_error, prefix, n);
  memcpy(g_error + n, ": ", 2);
  size_t rest = sizeof(g_error) - n - 3;
  size_t m = strnlen(old, rest);
  memcpy(g_error + n + 2, old, m);
  g_error[n + 2 + m] = '\0';
  return code;
}

const char* ingot_compiler_error(void) { return g_error; }
void ingot_compiler_error_clear(void) { g_error[0] = '\0'; }

static void out_of_memory(size_t bytes) {
  fprintf(stderr, "ingot: error: out of memory (allocating %zu bytes)\n", bytes);
  exit(1);
}

void* ingot_xmalloc(size_t bytes) {
  void* p = malloc(bytes ? bytes : 1);
  if (!p) out_of_memory(bytes);
  return p;
}
void* ingot_xcalloc(size_t count, size_t bytes) {
  void* p = calloc(count ? count : 1, bytes ? bytes : 1);
  if (!p) out_of_memory(count * bytes);
  return p;
}
void* ingot_xrealloc(void* ptr, size_t bytes) {
  void* p = realloc(ptr, bytes ? bytes : 1);
  if (!p) out_of_memory(bytes);
  return p;
}
char* ingot_xstrdup(const char* s) {
  size_t n = strlen(s) + 1;
  char* p = ingot_xmalloc(n);
  memcpy(p, s, n);
  return p;
}

/* ---- arena ---- */
struct ingot_arena_block_t {
  ingot_arena_block_t* next;
  size_t used, size;
  /* payload follows, 64-byte aligned */
};
enum { kBlockHeader = 64, kDefaultBlock = 256 * 1024 };

void ingot_arena_init(ingot_arena_t* arena, ingot_allocator_t allocator) {
  arena->allocator = allocator.fn ? allocator : ingot_allocator_system();
  arena->head = NULL;
  arena->block_bytes = kDefaultBlock;
}

void ingot_arena_deinit(ingot_arena_t* arena) {
  ingot_arena_block_t* b = arena->head;
  while (b) {
    ingot_arena_block_t* next = b->next;
    arena->allocator.fn(arena->allocator.self, b, 0);
    b = next;
  }
  arena->head = NULL;
}

void* ingot_arena_alloc(ingot_arena_t* arena, size_t bytes) {
  size_t align = bytes >= 64 ? 64 : 16;
  ingot_arena_block_t* b = arena->head;
  if (b) {
    size_t start = (b->used + align - 1) & ~(align - 1);
    if (start + bytes <= b->size) {
      b->used = start + bytes;
      uint8_t* p = (uint8_t*)b + kBlockHeader + start;
      memset(p, 0, bytes);
      return p;
    }
  }
  size_t size = bytes > arena->block_bytes ? bytes : arena->block_bytes;
  b = arena->allocator.fn(arena->allocator.self, NULL, kBlockHeader + size);
  if (!b) out_of_memory(kBlockHeader + size);
  b->next = arena->head;
  b->used = bytes;
  b->size = size;
  arena->head = b;
  uint8_t* p = (uint8_t*)b + kBlockHeader;
  memset(p, 0, bytes);
  return p;
}

char* ingot_arena_strdup(ingot_arena_t* arena, const char* s) {
  size_t n = strlen(s) + 1;
  char* p = ingot_arena_alloc(arena, n);
  memcpy(p, s, n);
  return p;
}

char* ingot_arena_printf(ingot_arena_t* arena, const char* fmt, ...) {
  va_list args, copy;
  va_start(args, fmt);
  va_copy(copy, args);
  int n = vsnprintf(NULL, 0, fmt, copy);
  va_end(copy);
  char* p = ingot_arena_alloc(arena, (size_t)(n < 0 ? 0 : n) + 1);
  if (n > 0) vsnprintf(p, (size_t)n + 1, fmt, args);
  va_end(args);
  return p;
}

/* ---- strbuf ---- */
static void strbuf_reserve(ingot_strbuf_t* sb, size_t extra) {
  size_t need = sb->length + extra + 1;
  if (need <= sb->cap) return;
  size_t cap = sb->cap ? sb->cap * 2 : 256;
  while (cap < need) cap *= 2;
  sb->data = ingot_xrealloc(sb->data, cap);
  sb->cap = cap;
}

void ingot_strbuf_append_bytes(ingot_strbuf_t* sb, const void* data, size_t bytes) {
  strbuf_reserve(sb, bytes);
  memcpy(sb->data + sb->length, data, bytes);
  sb->length += bytes;
  sb->data[sb->length] = '\0';
}

void ingot_strbuf_append(ingot_strbuf_t* sb, const char* s) {
  ingot_strbuf_append_bytes(sb, s, strlen(s));
}

void ingot_strbuf_vappendf(ingot_strbuf_t* sb, const char* fmt, va_list args) {
  va_list copy;
  va_copy(copy, args);
  int n = vsnprintf(NULL, 0, fmt, copy);
  va_end(copy);
  if (n <= 0) return;
  strbuf_reserve(sb, (size_t)n);
  vsnprintf(sb->data + sb->length, (size_t)n + 1, fmt, args);
  sb->length += (size_t)n;
}

void ingot_strbuf_appendf(ingot_strbuf_t* sb, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  ingot_strbuf_vappendf(sb, fmt, args);
  va_end(args);
}

void ingot_strbuf_free(ingot_strbuf_t* sb) {
  free(sb->data);
  sb->data = NULL;
  sb->length = sb->cap = 0;
}

bool ingot_mul_u64(uint64_t a, uint64_t b, uint64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}
bool ingot_add_u64(uint64_t a, uint64_t b, uint64_t* out) {
  return !__builtin_add_overflow(a, b, out);
}

/* ---- files ---- */
ingot_status_t ingot_file_read(const char* path, uint8_t** out_data, size_t* out_size) {
  *out_data = NULL;
  *out_size = 0;
  FILE* f = fopen(path, "rb");
  if (!f) return ingot_fail(INGOT_ERROR_IO, "cannot open '%s': %s", path, strerror(errno));
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    fclose(f);
    return ingot_fail(INGOT_ERROR_IO, "'%s' is not a regular file", path);
  }
  size_t size = (size_t)st.st_size;
  uint8_t* data = malloc(size ? size : 1);
  if (!data) {
    fclose(f);
    return ingot_fail(INGOT_ERROR_OUT_OF_MEMORY, "'%s': %zu bytes do not fit in memory", path, size);
  }
  if (size && fread(data, 1, size, f) != size) {
    free(data);
    fclose(f);
    return ingot_fail(INGOT_ERROR_IO, "cannot read '%s'", path);
  }
  fclose(f);
  *out_data = data;
  *out_size = size;
  return INGOT_OK;
}

/* Writes all of data to fd; false on an error. */
static bool write_all(int fd, const void* data, size_t size) {
  const uint8_t* p = data;
  size_t left = size;
  while (left) {
    ssize_t w = write(fd, p, left);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    left -= (size_t)w;
  }
  return true;
}

ingot_status_t ingot_file_write_atomic(const char* path, const void* data, size_t size) {
  /* A path that exists and is no regular file (/dev/null, a FIFO) is written
   * in place: renaming a finished copy over it would replace the device
   * (as root, /dev/null itself) with a regular file. */
  struct stat st;
  if (stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
    int fd = open(path, O_WRONLY);
    if (fd < 0) return ingot_fail(INGOT_ERROR_IO, "cannot write '%s': %s", path, strerror(errno));
    bool ok = write_all(fd, data, size);
    int err = errno;
    ok = close(fd) == 0 && ok;
    if (!ok) return ingot_fail(INGOT_ERROR_IO, "cannot write '%s': %s", path, strerror(err));
    return INGOT_OK;
  }
  size_t n = strlen(path);
  char* tmp = ingot_xmalloc(n + 32);
  snprintf(tmp, n + 32, "%s.tmp.XXXXXX", path);
  int slot; /* a signal while writing removes it */
  int fd = ingot_cleanup_mkstemp(tmp, &slot);
  if (fd < 0) {
    ingot_status_t s = ingot_fail(INGOT_ERROR_IO, "cannot create a file beside '%s': %s", path,
                                  strerror(errno));
    free(tmp);
    return s;
  }
  int ok = write_all(fd, data, size) && fsync(fd) == 0;
  ok = (close(fd) == 0) && ok;
  if (ok) chmod(tmp, 0644);
  if (!ok || rename(tmp, path) != 0) {
    ingot_status_t s = ingot_fail(INGOT_ERROR_IO, "cannot write '%s': %s", path, strerror(errno));
    unlink(tmp);
    ingot_cleanup_drop(slot);
    free(tmp);
    return s;
  }
  ingot_cleanup_drop(slot);
  free(tmp);
  return INGOT_OK;
}

/* ---- half-precision bits ---- */

double ingot_half_to_double(uint16_t h) {
  int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double v;
  if (exp == 0) v = ldexp((double)mant, -24);
  else if (exp == 31) v = mant ? NAN : INFINITY;
  else v = ldexp((double)(mant | 0x400), exp - 25);
  return (h & 0x8000) ? -v : v;
}

const ingot_f8_format_t* ingot_f8_format(ingot_dtype_t t) {
  static const ingot_f8_format_t kE4M3FN = {4, 3, 7, 0x7e, false, false};
  static const ingot_f8_format_t kE4M3FNUZ = {4, 3, 8, 0x7f, false, true};
  static const ingot_f8_format_t kE5M2 = {5, 2, 15, 0x7b, true, false};
  static const ingot_f8_format_t kE5M2FNUZ = {5, 2, 16, 0x7f, false, true};
  switch (t) {
    case INGOT_DTYPE_F8E4M3FN: return &kE4M3FN;
    case INGOT_DTYPE_F8E4M3FNUZ: return &kE4M3FNUZ;
    case INGOT_DTYPE_F8E5M2: return &kE5M2;
    case INGOT_DTYPE_F8E5M2FNUZ: return &kE5M2FNUZ;
    default: return NULL;
  }
}

double ingot_f8_to_double(ingot_dtype_t t, uint8_t b) {
  const ingot_f8_format_t* fm = ingot_f8_format(t);
  if (!fm) return NAN;
  int m = fm->mant_bits, emask = (1 << fm->exp_bits) - 1;
  int mag = b & 0x7f, e = mag >> m, mant = mag & ((1 << m) - 1);
  if (fm->uz && b == 0x80) return NAN;
  if (!fm->uz && !fm->ieee && mag == 0x7f) return NAN;
  double v;
  if (fm->ieee && e == emask) v = mant ? NAN : INFINITY;
  else if (e == 0) v = ldexp((double)mant, 1 - fm->bias - m);
  else v = ldexp((double)((1 << m) | mant), e - fm->bias - m);
  return (b & 0x80) ? -v : v;
}

double ingot_bf16_to_double(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
