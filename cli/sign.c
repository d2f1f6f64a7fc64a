/* `ingot sign BUNDLE --key NAME`: adds (or replaces) the bundle's SIGNATURE
 * section, in place and atomically (a temporary file, then rename).
 *
 * What is signed is defined in runtime/ingot_format.h. The signer:
 *   1. reads the header and section table and checks them (magic, version,
 *      header and table checksums, every section inside the file with its
 *      stored checksum, no overlaps), dropping an existing signature, which
 *      must be the last entry and the last bytes of the file;
 *   2. lays the file out again with one more table entry: the sections keep
 *      their order and contents and move by the same multiple of 64 bytes
 *      when the longer table needs the room; the signature goes at the next
 *      64-byte boundary after the last section, and the file ends with it;
 *   3. signs the first `offset` bytes with the four CRC fields zero, fills
 *      the record, then the CRCs;
 *   4. checks the result with the runtime's own verifier before writing it.
 * Nothing is decoded and no code of the bundle is loaded. */
#define _POSIX_C_SOURCE 200809L
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "runtime/ingot.h"
#include "runtime/ingot_format.h"

#define MAX_SECTIONS 64u
#define ALIGN64(x) (((x) + 63u) & ~(uint64_t)63u)

static const char kSignHelp[] =
    "usage: ingot sign BUNDLE --key NAME\n"
    "\n"
    "Signs a bundle in place with the Ed25519 secret key NAME (from `ingot keygen`),\n"
    "replacing any signature it had. The file is rewritten atomically: it is either\n"
    "the old bundle or the signed one, never half of either.\n"
    "\n"
    "options:\n"
    "  --key NAME   the secret key file (required)\n"
    "  -h, --help   show this help\n"
    "\n"
    "example:\n"
    "  ingot sign model.ingot --key release\n"
    "  ingot run model.ingot --require-signature release.pub\n";

/* Checks the container and fills the entries without the signature's;
 * *out_end is where the last kept section ends. */
static ingot_status_t read_container(const char* path, const uint8_t* file, size_t size,
                                     ingot_bundle_header_t* h, ingot_section_entry_t* entries,
                                     uint32_t* out_count, uint64_t* out_end) {
  if (size < sizeof *h || memcmp(file, INGOT_BUNDLE_MAGIC, 8) != 0)
    return ingot_fail(INGOT_ERROR_CORRUPT, "'%s' is not an Ingot bundle (bad magic)", path);
  memcpy(h, file, sizeof *h);
  ingot_bundle_header_t copy = *h;
  copy.header_crc32 = 0;
  if (ingot_crc32(0, &copy, sizeof copy) != h->header_crc32)
    return ingot_fail(INGOT_ERROR_CORRUPT, "'%s': header checksum mismatch", path);
  if (h->format_version < INGOT_FORMAT_VERSION_MIN || h->format_version > INGOT_FORMAT_VERSION ||
      h->endian_mark != INGOT_ENDIAN_MARK)
    return ingot_fail(INGOT_ERROR_VERSION, "'%s': format version %u, this signer reads %u to %u", path,
                      h->format_version, INGOT_FORMAT_VERSION_MIN, INGOT_FORMAT_VERSION);
  if (h->file_size != size)
    return ingot_fail(INGOT_ERROR_CORRUPT, "'%s': header says %llu bytes, the file has %zu", path,
                      (unsigned long long)h->file_size, size);
  if (h->section_count == 0 || h->section_count > MAX_SECTIONS)
    return ingot_fail(INGOT_ERROR_CORRUPT, "'%s': %u sections", path, h->section_count);
  uint64_t table_end = sizeof *h + (uint64_t)h->section_count * sizeof(ingot_section_entry_t);
  if (table_end > size || ingot_crc32(0, file + sizeof *h, (size_t)(table_end - sizeof *h)) != h->table_crc32)
    return ingot_fail(INGOT_ERROR_CORRUPT, "'%s': section table truncated or its checksum mismatches",
                      path);
  memcpy(entries, file + sizeof *h, (size_t)(table_end - sizeof *h));
  uint32_t count = h->section_count;
  const ingot_section_entry_t* last = &entries[count - 1];
  if (last->kind == INGOT_SECTION_SIGNATURE) {
    if (last->offset > size || last->stored_size != size - last->offset)
      return ingot_fail(INGOT_ERROR_CORRUPT, "'%s': its signature is not at the end of the file", path);
    --count; /* replaced below */
  }
  if (count == 0) return ingot_fail(INGOT_ERROR_CORRUPT, "'%s': no sections besides a signature", path);
  uint64_t end = 0;
  for (uint32_t i = 0; i < count; ++i) {
    const ingot_section_entry_t* e = &entries[i];
    if (e->kind == INGOT_SECTION_SIGNATURE)
      return ingot_fail(INGOT_ERROR_CORRUPT, "'%s': a signature section that is not the last one", path);
    if (e->offset % INGOT_SECTION_ALIGN != 0 || e->offset < table_end || e->offset > size ||
        e->stored_size > size - e->offset)
      return ingot_fail(INGOT_ERROR_CORRUPT, "'%s': section %u lies outside the file", path, i);
    if (ingot_crc32(0, file + e->offset, (size_t)e->stored_size) != e->stored_crc32)
      return ingot_fail(INGOT_ERROR_CORRUPT, "'%s': section %u: checksum mismatch", path, i);
    for (uint32_t j = 0; j < i; ++j) {
      const ingot_section_entry_t* o = &entries[j];
      if (e->offset < o->offset + o->stored_size && o->offset < e->offset + e->stored_size)
        return ingot_fail(INGOT_ERROR_CORRUPT, "'%s': sections %u and %u overlap", path, j, i);
    }
    if (e->offset + e->stored_size > end) end = e->offset + e->stored_size;
  }
  *out_count = count;
  *out_end = end;
  return INGOT_OK;
}

/* Builds the signed bundle into a heap buffer. */
static ingot_status_t sign_bundle(const char* path, const uint8_t* file, size_t size,
                                  const uint8_t* secret_key, uint8_t** out_data, size_t* out_size) {
  *out_data = NULL;
  *out_size = 0;
  ingot_bundle_header_t h;
  ingot_section_entry_t entries[MAX_SECTIONS + 1];
  uint32_t count = 0;
  uint64_t end = 0;
  ingot_status_t s = read_container(path, file, size, &h, entries, &count, &end);
  if (s) return s;
  if (count + 1 > MAX_SECTIONS)
    return ingot_fail(INGOT_ERROR_LIMIT, "'%s': no room for a signature (%u sections)", path, count);

  uint64_t first = UINT64_MAX;
  for (uint32_t i = 0; i < count; ++i)
    if (entries[i].offset < first) first = entries[i].offset;
  uint64_t new_table_end = sizeof h + (uint64_t)(count + 1) * sizeof(ingot_section_entry_t);
  uint64_t shift = ALIGN64(new_table_end) > first ? ALIGN64(new_table_end) - first : 0;
  uint64_t sig_offset = ALIGN64(end + shift);
  uint64_t new_size = sig_offset + sizeof(ingot_signature_record_t);
  uint8_t* out = ingot_xcalloc(1, (size_t)new_size);

  for (uint32_t i = 0; i < count; ++i) {
    memcpy(out + entries[i].offset + shift, file + entries[i].offset, (size_t)entries[i].stored_size);
    entries[i].offset += shift;
  }
  ingot_section_entry_t* sig = &entries[count];
  memset(sig, 0, sizeof *sig);
  sig->kind = INGOT_SECTION_SIGNATURE;
  sig->codec = INGOT_CODEC_NONE;
  sig->offset = sig_offset;
  sig->stored_size = sig->raw_size = sizeof(ingot_signature_record_t);
  h.section_count = count + 1;
  h.file_size = new_size;
  h.table_crc32 = 0;
  h.header_crc32 = 0;
  memcpy(out, &h, sizeof h);
  memcpy(out + sizeof h, entries, (size_t)(count + 1) * sizeof(ingot_section_entry_t));

  /* The message: out[0, sig_offset) with the four CRC fields still zero. */
  ingot_signature_record_t record;
  memset(&record, 0, sizeof record);
  memcpy(record.magic, INGOT_SIGNATURE_MAGIC, 8);
  record.algorithm = INGOT_SIGNATURE_ED25519PH;
  crypto_sign_ed25519_sk_to_pk(record.public_key, secret_key);
  crypto_sign_state state;
  crypto_sign_init(&state);
  crypto_sign_update(&state, out, sig_offset);
  crypto_sign_final_create(&state, record.signature, NULL, secret_key);
  memcpy(out + sig_offset, &record, sizeof record);

  sig->stored_crc32 = sig->raw_crc32 = ingot_crc32(0, &record, sizeof record);
  memcpy(out + sizeof h, entries, (size_t)(count + 1) * sizeof(ingot_section_entry_t));
  h.table_crc32 = ingot_crc32(0, entries, (size_t)(count + 1) * sizeof(ingot_section_entry_t));
  h.header_crc32 = ingot_crc32(0, &h, sizeof h);
  memcpy(out, &h, sizeof h);

  if (ingot_bundle_verify_signature(out, (size_t)new_size, record.public_key) != INGOT_OK) {
    s = ingot_fail(INGOT_ERROR_INTERNAL, "'%s': the signed bundle does not verify: %s", path,
                   ingot_last_error());
    free(out);
    return s;
  }
  *out_data = out;
  *out_size = (size_t)new_size;
  return INGOT_OK;
}

int ingot_cli_sign(int argc, char** argv) {
  const char* bundle_path = NULL;
  const char* key_path = NULL;
  static const struct option longs[] = {
      {"help", no_argument, NULL, 'h'},
      {"key", required_argument, NULL, 256},
      {NULL, 0, NULL, 0},
  };
  ingot_cli_args_t args;
  ingot_cli_args_init(&args, "sign", argc, argv, "h", longs);
  for (int c; (c = ingot_cli_args_next(&args)) != INGOT_CLI_ARG_END;) {
    switch (c) {
      case INGOT_CLI_ARG_BAD: return INGOT_CLI_EXIT_USAGE;
      case 'h': fputs(kSignHelp, stdout); return INGOT_CLI_EXIT_OK;
      case 256:
        if (!*args.value) return ingot_cli_usage_error("sign", "--key needs the secret key file");
        key_path = args.value;
        break;
      case INGOT_CLI_ARG_POSITIONAL:
        if (bundle_path) return ingot_cli_usage_error("sign", "unexpected argument '%s' (one bundle at a time)", args.value);
        bundle_path = args.value;
        break;
      default: return ingot_cli_usage_error("sign", "unhandled option (a bug)");
    }
  }
  if (!bundle_path) return ingot_cli_usage_error("sign", "no bundle given");
  if (!key_path) return ingot_cli_usage_error("sign", "no key given: add --key NAME");
  if (sodium_init() < 0) return ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "libsodium failed to initialize");

  ingot_compiler_error_clear();
  uint8_t sk[crypto_sign_SECRETKEYBYTES];
  ingot_status_t s = ingot_cli_key_read(key_path, true, sk);
  if (s) return ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "%s", ingot_compiler_error());
  uint8_t* file = NULL;
  size_t size = 0;
  uint8_t* signed_data = NULL;
  size_t signed_size = 0;
  s = ingot_file_read(bundle_path, &file, &size);
  if (!s) s = sign_bundle(bundle_path, file, size, sk, &signed_data, &signed_size);
  if (!s) s = ingot_file_write_atomic(bundle_path, signed_data, signed_size);
  sodium_memzero(sk, sizeof sk);
  free(file);
  if (s) {
    free(signed_data);
    return ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "%s", ingot_compiler_error());
  }
  const ingot_signature_record_t* rec =
      (const ingot_signature_record_t*)(signed_data + signed_size - sizeof(ingot_signature_record_t));
  printf("signed %s (%zu bytes, key id %02x%02x%02x%02x)\n", bundle_path, signed_size,
         rec->public_key[0], rec->public_key[1], rec->public_key[2], rec->public_key[3]);
  free(signed_data);
  return INGOT_CLI_EXIT_OK;
}
