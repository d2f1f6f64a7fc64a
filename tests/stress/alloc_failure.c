/* Allocation failure along the whole open and run path, built with ASan and
 * UBSan (LeakSanitizer on): an allocator that fails its Nth allocation, for
 * every N from 1 until a pass makes no more allocations than N - 1, over
 *   open from a file (with a signature requirement), session create, run;
 *   open from memory, session create (another allocator), run.
 * Each time: the failing call returns INGOT_ERROR_OUT_OF_MEMORY with a
 * message and a NULL output, everything made before it is released cleanly,
 * and the allocator ends with nothing live (LSan would see a leak too). A
 * run never allocates.
 *
 * usage: alloc_failure BUNDLE PUBKEY_FILE */
#define _DEFAULT_SOURCE 1
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/ingot.h"
#include "runtime/ingot_format.h"

typedef struct counting_t {
  long calls;     /* allocations asked for */
  long fail_at;   /* the call that fails (1-based); 0: never */
  long live;      /* allocations not yet freed */
  long failed;    /* allocations refused */
} counting_t;

static void* counting_fn(void* self, void* ptr, size_t size) {
  counting_t* c = (counting_t*)self;
  if (size == 0) {
    if (ptr) {
      c->live--;
      free(ptr);
    }
    return NULL;
  }
  if (ptr) return NULL;
  c->calls++;
  if (c->calls == c->fail_at) {
    c->failed++;
    return NULL;
  }
  void* p = aligned_alloc(64, (size + 63) & ~(size_t)63);
  if (p) c->live++;
  return p;
}

static int g_failures;
#define CHECK(cond, ...)                                                  \
  do {                                                                    \
    if (!(cond)) {                                                        \
      fprintf(stderr, "FAILED %s: ", #cond);                              \
      fprintf(stderr, __VA_ARGS__);                                       \
      fprintf(stderr, "\n");                                              \
      ++g_failures;                                                       \
    }                                                                     \
  } while (0)

static uint8_t* g_file;
static size_t g_size;
static uint8_t g_key[INGOT_PUBLIC_KEY_BYTES];

static int read_file(const char* path, uint8_t** out, size_t* out_size) {
  FILE* f = fopen(path, "rb");
  if (!f) return 0;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  *out = malloc((size_t)n + 1);
  *out_size = fread(*out, 1, (size_t)n, f);
  fclose(f);
  return *out_size == (size_t)n;
}

/* One pass; returns 1 when the allocator's fail_at was reached. */
static int one_pass(const char* path, int from_memory, counting_t* bundle_alloc, counting_t* session_alloc,
                    long n) {
  const char* where = from_memory ? "memory" : "file";
  ingot_bundle_options_t bo;
  memset(&bo, 0, sizeof bo);
  bo.allocator.self = bundle_alloc;
  bo.allocator.fn = counting_fn;
  bo.signature_public_key = g_key;
  ingot_bundle_t* bundle = (ingot_bundle_t*)(uintptr_t)1;
  ingot_status_t s = from_memory ? ingot_bundle_open_memory(g_file, g_size, &bo, &bundle)
                                 : ingot_bundle_open_file(path, &bo, &bundle);
  if (s != INGOT_OK) {
    CHECK(s == INGOT_ERROR_OUT_OF_MEMORY, "%s N=%ld: open returned %s: %s", where, n, ingot_status_name(s),
          ingot_last_error());
    CHECK(bundle == NULL, "%s N=%ld: open failed but set its output", where, n);
    CHECK(ingot_last_error()[0] != '\0', "%s N=%ld: no message", where, n);
    return 1;
  }
  ingot_session_options_t so;
  memset(&so, 0, sizeof so);
  so.threads = 2;
  if (session_alloc) {
    so.allocator.self = session_alloc;
    so.allocator.fn = counting_fn;
  }
  ingot_session_t* session = (ingot_session_t*)(uintptr_t)1;
  s = ingot_session_create(bundle, &so, &session);
  int hit = 0;
  if (s != INGOT_OK) {
    CHECK(s == INGOT_ERROR_OUT_OF_MEMORY, "%s N=%ld: session_create returned %s: %s", where, n,
          ingot_status_name(s), ingot_last_error());
    CHECK(session == NULL, "%s N=%ld: session_create failed but set its output", where, n);
    hit = 1;
  } else {
    for (uint32_t i = 0; i < ingot_bundle_input_count(bundle); ++i) {
      ingot_tensor_info_t info;
      ingot_bundle_input_info(bundle, i, &info);
      memset(ingot_session_input_data(session, i), 0, info.bytes);
    }
    long before = bundle_alloc->calls + (session_alloc ? session_alloc->calls : 0);
    s = ingot_session_run(session);
    CHECK(s == INGOT_OK, "%s N=%ld: run: %s", where, n, ingot_last_error());
    long after = bundle_alloc->calls + (session_alloc ? session_alloc->calls : 0);
    CHECK(after == before, "%s N=%ld: run made %ld allocations", where, n, after - before);
    ingot_session_release(session);
  }
  ingot_bundle_release(bundle);
  return hit;
}

static void sweep(const char* path, int from_memory, int own_session_allocator) {
  long n;
  for (n = 1;; ++n) {
    counting_t b = {0, 0, 0, 0}, se = {0, 0, 0, 0};
    /* The Nth allocation over both allocators, in call order, fails: the
     * session allocator's counter continues the bundle's. */
    b.fail_at = n;
    int hit = one_pass(path, from_memory, &b, own_session_allocator ? &se : NULL, n);
    if (own_session_allocator && !hit && b.calls < n) {
      /* Not reached in the bundle allocator: retry with the failure moved
       * into the session allocator. */
      counting_t b2 = {0, 0, 0, 0}, se2 = {0, 0, 0, 0};
      b2.fail_at = 0;
      long bundle_calls = b.calls;
      se2.fail_at = n - bundle_calls;
      hit = one_pass(path, from_memory, &b2, &se2, n);
      CHECK(b2.live == 0 && se2.live == 0, "N=%ld: %ld + %ld allocations leaked", n, b2.live, se2.live);
      if (!hit) break;
      continue;
    }
    CHECK(b.live == 0 && se.live == 0, "%s N=%ld: %ld + %ld allocations leaked",
          from_memory ? "memory" : "file", n, b.live, se.live);
    if (!hit) break;
  }
  printf("%s%s: failed each of the first %ld allocations in turn, then a clean pass\n",
         from_memory ? "open from memory" : "open from a file",
         own_session_allocator ? " + session allocator" : "", n - 1);
}

/* With a key, an altered bundle (a code byte flipped, every checksum
 * repaired) is refused before anything is decoded or mapped: the allocator
 * sees only the bundle object itself. */
static void refused_before_decoding(void) {
  uint8_t* copy = malloc(g_size);
  memcpy(copy, g_file, g_size);
  ingot_bundle_header_t h;
  memcpy(&h, copy, sizeof h);
  ingot_section_entry_t* table = (ingot_section_entry_t*)(copy + sizeof h);
  for (uint32_t i = 0; i < h.section_count; ++i) {
    ingot_section_entry_t e;
    memcpy(&e, &table[i], sizeof e);
    if (e.kind != INGOT_SECTION_CODE) continue;
    copy[e.offset + e.stored_size / 2] ^= 0x10;
    e.stored_crc32 = ingot_crc32(0, copy + e.offset, (size_t)e.stored_size);
    if (e.codec == INGOT_CODEC_NONE) e.raw_crc32 = e.stored_crc32;
    memcpy(&table[i], &e, sizeof e);
  }
  h.table_crc32 = ingot_crc32(0, table, h.section_count * sizeof(ingot_section_entry_t));
  h.header_crc32 = 0;
  h.header_crc32 = ingot_crc32(0, &h, sizeof h);
  memcpy(copy, &h, sizeof h);
  counting_t c = {0, 0, 0, 0};
  ingot_bundle_options_t bo;
  memset(&bo, 0, sizeof bo);
  bo.allocator.self = &c;
  bo.allocator.fn = counting_fn;
  bo.signature_public_key = g_key;
  ingot_bundle_t* bundle = NULL;
  ingot_status_t s = ingot_bundle_open_memory(copy, g_size, &bo, &bundle);
  CHECK(s == INGOT_ERROR_SIGNATURE, "altered bundle: %s: %s", ingot_status_name(s), ingot_last_error());
  CHECK(c.calls <= 1 && c.live == 0, "altered bundle: %ld allocations before the signature was refused", c.calls);
  CHECK(ingot_bundle_verify_signature(copy, g_size, g_key) == INGOT_ERROR_SIGNATURE, "verify_signature");
  CHECK(ingot_bundle_verify_signature(g_file, g_size, g_key) == INGOT_OK, "verify_signature on the original: %s",
        ingot_last_error());
  free(copy);
  printf("an altered signed bundle is refused after %ld allocation(s), before any decoding\n", c.calls);
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: alloc_failure BUNDLE PUBKEY_FILE\n");
    return 2;
  }
  uint8_t* text;
  size_t n;
  if (!read_file(argv[1], &g_file, &g_size) || !read_file(argv[2], &text, &n)) {
    fprintf(stderr, "cannot read %s or %s\n", argv[1], argv[2]);
    return 1;
  }
  const char* hex = memchr(text, ' ', n);
  for (int i = 0; hex && i < 32; ++i) {
    unsigned v = 0;
    if (sscanf(hex + 1 + 2 * i, "%2x", &v) != 1) break;
    g_key[i] = (uint8_t)v;
  }
  free(text);
  refused_before_decoding();
  sweep(argv[1], 0, 0);
  sweep(argv[1], 1, 0);
  sweep(argv[1], 1, 1);
  free(g_file);
  if (g_failures) {
    fprintf(stderr, "%d failure(s)\n", g_failures);
    return 1;
  }
  return 0;
}
