/* Fuzz target: the bundle reader (runtime/bundle.c, signature.c, the ELF
 * loader) and session creation.
 *
 * Each input is opened up to three times:
 *   1. as given: checksums and everything else as the file says;
 *   2. with every checksum recomputed (header, table, each section's stored
 *      and decoded bytes), so that mutations reach the manifest and plan
 *      parsers and the ELF loader instead of stopping at a CRC;
 *   3. the repaired copy again, requiring a signature by the test key
 *      (tests/fuzz/keys/test_key.pub; the seed corpus has bundles signed
 *      with it), to exercise the signature's placement and verification.
 * A bundle that opens gets a session (one thread), which is released again.
 *
 * Code from a fuzzed bundle is never called: this target is built with
 * INGOT_RT_FUZZING=1 (runtime_internal.h), so open loads the code object
 * with the ELF loader but does not call its query function, and no session
 * ever runs. Repaired checksums make "any bytes with valid checksums" the
 * input, which includes arbitrary machine code; trusting code is what
 * signatures are for, not what a reader can check.
 *
 * Built with clang -fsanitize=fuzzer by scripts/fuzz.sh, and linked with
 * replay_main.c for the CTest replay of the corpus under ASan and UBSan. */
#define ZSTD_STATIC_LINKING_ONLY
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "runtime/ingot.h"
#include "runtime/ingot_format.h"

#if !defined(INGOT_RT_FUZZING) || !INGOT_RT_FUZZING
#error "build the bundle fuzz target with -DINGOT_RT_FUZZING=1: it must never run fuzzed code"
#endif

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

/* The public half of tests/fuzz/keys/test_key. */
static const uint8_t k_test_public_key[INGOT_PUBLIC_KEY_BYTES] = {
#include "test_key_pub.inc"
};

#define MAX_DECODED ((uint64_t)16 << 20)

/* Recomputes every checksum in place (what a careful forger would do). */
static void repair_checksums(uint8_t* file, size_t size) {
  ingot_bundle_header_t h;
  if (size < sizeof h) return;
  memcpy(&h, file, sizeof h);
  if (h.section_count == 0 || h.section_count > 64) return;
  size_t table_end = sizeof h + (size_t)h.section_count * sizeof(ingot_section_entry_t);
  if (table_end > size) return;
  ingot_section_entry_t* table = (ingot_section_entry_t*)malloc(table_end - sizeof h);
  if (!table) return;
  memcpy(table, file + sizeof h, table_end - sizeof h);
  for (uint32_t i = 0; i < h.section_count; ++i) {
    ingot_section_entry_t* e = &table[i];
    if (e->offset > size || e->stored_size > size - e->offset) continue;
    const uint8_t* src = file + e->offset;
    e->stored_crc32 = ingot_crc32(0, src, (size_t)e->stored_size);
    if (e->codec == INGOT_CODEC_NONE) {
      e->raw_crc32 = e->stored_crc32;
    } else if (e->codec == INGOT_CODEC_ZSTD && e->raw_size <= MAX_DECODED) {
      void* raw = malloc(e->raw_size ? (size_t)e->raw_size : 1);
      if (!raw) continue;
      size_t got = ZSTD_decompress(raw, (size_t)e->raw_size, src, (size_t)e->stored_size);
      if (!ZSTD_isError(got) && got == e->raw_size) e->raw_crc32 = ingot_crc32(0, raw, got);
      free(raw);
    }
  }
  memcpy(file + sizeof h, table, table_end - sizeof h);
  h.table_crc32 = ingot_crc32(0, table, table_end - sizeof h);
  h.header_crc32 = 0;
  h.header_crc32 = ingot_crc32(0, &h, sizeof h);
  memcpy(file, &h, sizeof h);
  free(table);
}

static void open_and_release(const uint8_t* data, size_t size, const uint8_t* public_key, uint32_t flags) {
  ingot_bundle_options_t options;
  memset(&options, 0, sizeof options);
  options.flags = flags;
  options.limits.max_section_bytes = MAX_DECODED;
  options.limits.max_arena_bytes = (uint64_t)64 << 20;
  options.limits.max_tensors = 4096;
  options.limits.max_steps = 4096;
  options.signature_public_key = public_key;
  ingot_bundle_t* bundle = NULL;
  if (ingot_bundle_open_memory(data, size, &options, &bundle) != INGOT_OK) return;
  ingot_session_options_t session_options;
  memset(&session_options, 0, sizeof session_options);
  session_options.threads = 1;
  ingot_session_t* session = NULL;
  if (ingot_session_create(bundle, &session_options, &session) == INGOT_OK) {
    for (uint32_t i = 0; i < ingot_bundle_input_count(bundle); ++i) {
      ingot_tensor_info_t info;
      if (ingot_bundle_input_info(bundle, i, &info) == INGOT_OK && info.bytes)
        memset(ingot_session_input_data(session, i), 0, info.bytes);
    }
    ingot_session_release(session);
  }
  ingot_bundle_release(bundle);
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  open_and_release(data, size, NULL, 0);
  if (size < sizeof(ingot_bundle_header_t) || size > ((size_t)64 << 20)) return 0;
  /* 64-aligned, so that raw weights are used in place when borrowed. */
  uint8_t* copy = (uint8_t*)aligned_alloc(64, (size + 63) & ~(size_t)63);
  if (!copy) return 0;
  memcpy(copy, data, size);
  repair_checksums(copy, size);
  open_and_release(copy, size, NULL, 0);
  open_and_release(copy, size, NULL, INGOT_BUNDLE_BORROW);
  open_and_release(copy, size, k_test_public_key, 0);
  free(copy);
  return 0;
}
