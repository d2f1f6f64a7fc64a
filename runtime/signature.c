/* The SIGNATURE section (runtime/ingot_format.h): where it may be, its shape,
 * and the Ed25519ph check against a caller's public key. Verification only:
 * the signing half lives in the compiler's `ingot sign`. Built with
 * INGOT_RT_SIGNATURES 0 (runtime_config.h), the shape is still checked but no
 * key can be: libsodium is not linked. */
#include <stdio.h>
#include <string.h>

#include "runtime_config.h"
#include "runtime_internal.h"

#if INGOT_RT_SIGNATURES
#include <sodium.h>
_Static_assert(INGOT_SIGNATURE_PUBLIC_KEY_BYTES == crypto_sign_PUBLICKEYBYTES, "Ed25519 key size");
_Static_assert(INGOT_SIGNATURE_BYTES == crypto_sign_BYTES, "Ed25519 signature size");
#endif
_Static_assert(sizeof(ingot_signature_record_t) == 112, "signature record layout");
_Static_assert(INGOT_PUBLIC_KEY_BYTES == INGOT_SIGNATURE_PUBLIC_KEY_BYTES, "public key size");

#if INGOT_RT_SIGNATURES

/* "a1b2c3d4": the first four bytes of a key, to tell keys apart in messages. */
static void key_id(const uint8_t* key, char out[9]) {
  snprintf(out, 9, "%02x%02x%02x%02x", key[0], key[1], key[2], key[3]);
}
#endif

ingot_status_t ingot_rt_signature_check(const uint8_t* file, size_t size,
                                        const ingot_bundle_header_t* header,
                                        const ingot_section_entry_t* entries,
                                        const uint8_t* public_key) {
#if !INGOT_RT_SIGNATURES
  if (public_key)
    return ingot_rt_fail(INGOT_ERROR_UNSUPPORTED,
                         "bundle: this libingot was built without signature verification "
                         "(-DINGOT_SIGNATURES=OFF), so it cannot check a bundle against a public key");
#endif
  uint32_t count = header->section_count;
  uint32_t found = count;
  for (uint32_t i = 0; i < count; ++i)
    if (entries[i].kind == INGOT_SECTION_SIGNATURE) found = i;
  if (found == count) {
    if (!public_key) return INGOT_OK;
    return ingot_rt_fail(INGOT_ERROR_SIGNATURE,
                         "bundle: not signed, and a signature is required (sign it with 'ingot sign')");
  }
  const ingot_section_entry_t* e = &entries[found];
  uint64_t table_end = sizeof *header + (uint64_t)count * sizeof(ingot_section_entry_t);
  /* Bounds first: with a key this runs before the table entries are checked. */
  if (found != count - 1 || e->offset < table_end || e->offset > size ||
      e->stored_size != size - e->offset)
    return ingot_rt_fail(INGOT_ERROR_CORRUPT,
                         "bundle: the signature section is not the last section of the file");
  if (e->codec != INGOT_CODEC_NONE || e->stored_size != sizeof(ingot_signature_record_t))
    return ingot_rt_fail(INGOT_ERROR_CORRUPT, "bundle: the signature section has %llu bytes, not %zu",
                         (unsigned long long)e->stored_size, sizeof(ingot_signature_record_t));
  ingot_signature_record_t record;
  memcpy(&record, file + e->offset, sizeof record);
  if (memcmp(record.magic, INGOT_SIGNATURE_MAGIC, 8) != 0 || record.reserved != 0)
    return ingot_rt_fail(INGOT_ERROR_CORRUPT, "bundle: malformed signature record");
  if (record.algorithm != INGOT_SIGNATURE_ED25519PH)
    return ingot_rt_fail(INGOT_ERROR_UNSUPPORTED, "bundle: signature algorithm %u (this runtime knows %u)",
                         record.algorithm, INGOT_SIGNATURE_ED25519PH);
  if (!public_key) return INGOT_OK;
#if INGOT_RT_SIGNATURES
  char have[9], want[9];
  key_id(record.public_key, have);
  key_id(public_key, want);
  if (sodium_memcmp(record.public_key, public_key, INGOT_SIGNATURE_PUBLIC_KEY_BYTES) != 0)
    return ingot_rt_fail(INGOT_ERROR_SIGNATURE,
                         "bundle: signed by another key (%s...), not the required one (%s...)", have,
                         want);
  if (sodium_init() < 0)
    return ingot_rt_fail(INGOT_ERROR_INTERNAL, "bundle: libsodium failed to initialize");

  /* M = file[0, offset) with the four signature-dependent CRC fields zero. */
  ingot_bundle_header_t h = *header;
  h.table_crc32 = 0;
  h.header_crc32 = 0;
  ingot_section_entry_t last = *e;
  last.stored_crc32 = 0;
  last.raw_crc32 = 0;
  crypto_sign_state state;
  crypto_sign_init(&state);
  crypto_sign_update(&state, (const unsigned char*)&h, sizeof h);
  crypto_sign_update(&state, (const unsigned char*)entries,
                     (unsigned long long)(count - 1) * sizeof(ingot_section_entry_t));
  crypto_sign_update(&state, (const unsigned char*)&last, sizeof last);
  crypto_sign_update(&state, file + table_end, e->offset - table_end);
  if (crypto_sign_final_verify(&state, record.signature, public_key) != 0)
    return ingot_rt_fail(INGOT_ERROR_SIGNATURE,
                         "bundle: the signature by key %s... does not match: the bundle was altered "
                         "after it was signed",
                         have);
  return INGOT_OK;
#else
  return INGOT_ERROR_INTERNAL; /* not reached: public_key is NULL here */
#endif
}
