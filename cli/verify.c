/* `ingot verify`: checks a bundle through and through without running it.
 *
 * In order, stopping at the first failure (exit 1, one error line naming the
 * check and the section):
 *   1. format      magic, version, size and section table, enough to find
 *                  the signature (nothing else is trusted yet)
 *   2. signature   a SIGNATURE section is checked against the key it names
 *                  (and, with --require-signature, that key must be the one
 *                  given); checked before any checksum, so that a signed
 *                  bundle altered in any byte is a signature error whether or
 *                  not its checksums were repaired
 *   3. container   the runtime's own open with no code loaded: header and
 *                  table checksums, every section's stored checksum, layout,
 *                  manifest and plan (runtime/bundle.c)
 *   4. sections    every section decoded: its size and raw checksum
 *   5. variants    each code variant loaded on its own through the public API
 *                  (ingot_bundle_options_t.target), its kernels looked up;
 *                  a variant this machine cannot load (another architecture,
 *                  a GPU that is not here) is listed as not load-checked, with
 *                  why, and is not a failure
 * What passed is printed on stdout as it goes. */
#include <sodium.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "cli.h"
#include "runtime/ingot.h"
#include "runtime/ingot_format.h"

static const char kVerifyHelp[] =
    "usage: ingot verify BUNDLE [--require-signature KEY.pub]\n"
    "\n"
    "Checks everything in a bundle without running it: its format, every\n"
    "checksum, every section decoded, its signature, and that the code of each\n"
    "variant loads (on this machine: variants for another architecture or for a\n"
    "GPU that is not here are listed as not load-checked, and why). Exits 0 when\n"
    "all checks pass, 1 at the first that fails, with one error line that names\n"
    "it ('signature: ...' for a signature problem, the section for the others).\n"
    "\n"
    "options:\n"
    "  --require-signature KEY.pub\n"
    "              the bundle must be signed by this public key (from\n"
    "              `ingot keygen`); without it a signature is still checked\n"
    "              against the key it names\n"
    "  -h, --help  show this help\n";

/* "section 3 (code, llvm x86-64-v3)" */
static void section_label(const ingot_section_entry_t* e, uint32_t i, char* out, size_t cap) {
  if (e->kind == INGOT_SECTION_CODE)
    snprintf(out, cap, "section %u (%s, %.*s)", i, ingot_section_kind_name(e->kind), (int)INGOT_TARGET_NAME_BYTES, e->target);
  else
    snprintf(out, cap, "section %u (%s)", i, ingot_section_kind_name(e->kind));
}

static void key_id(const uint8_t* key, char out[9]) {
  snprintf(out, 9, "%02x%02x%02x%02x", key[0], key[1], key[2], key[3]);
}

/* Step 1: the header and table as far as the signature needs them. */
static int check_format(const char* path, const uint8_t* file, size_t size, ingot_bundle_header_t* h,
                        ingot_section_entry_t** out_entries) {
  *out_entries = NULL;
  if (size < sizeof *h || memcmp(file, INGOT_BUNDLE_MAGIC, 8) != 0)
    return ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "'%s': format: not an Ingot bundle (bad magic)", path);
  memcpy(h, file, sizeof *h);
  if (h->endian_mark != INGOT_ENDIAN_MARK)
    return ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "'%s': format: written with another byte order", path);
  if (h->format_version < INGOT_FORMAT_VERSION_MIN || h->format_version > INGOT_FORMAT_VERSION)
    return ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "'%s': format: version %u, this ingot reads %u to %u", path,
                           h->format_version, INGOT_FORMAT_VERSION_MIN, INGOT_FORMAT_VERSION);
  if (h->file_size != size)
    return ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "'%s': format: the header says %llu bytes, the file has %zu",
                           path, (unsigned long long)h->file_size, size);
  uint64_t table_bytes = (uint64_t)h->section_count * sizeof(ingot_section_entry_t);
  if (h->section_count == 0 || h->section_count > 64 || table_bytes > size - sizeof *h)
    return ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "'%s': format: %u sections, the table does not fit", path,
                           h->section_count);
  ingot_section_entry_t* entries = ingot_xmalloc((size_t)table_bytes);
  memcpy(entries, file + sizeof *h, (size_t)table_bytes);
  for (uint32_t i = 0; i < h->section_count; ++i) {
    const ingot_section_entry_t* e = &entries[i];
    if (e->offset > size || e->stored_size > size - e->offset) {
      char label[96];
      section_label(e, i, label, sizeof label);
      free(entries);
      return ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "'%s': format: %s runs past the end of the file", path, label);
    }
  }
  *out_entries = entries;
  return INGOT_CLI_EXIT_OK;
}

/* Step 2. `required` is NULL or the key the bundle must be signed by. */
static int check_signature(const char* path, const uint8_t* file, size_t size, const ingot_bundle_header_t* h,
                           const ingot_section_entry_t* entries, const uint8_t* required) {
  uint32_t count = h->section_count, found = count, signatures = 0;
  for (uint32_t i = 0; i < count; ++i)
    if (entries[i].kind == INGOT_SECTION_SIGNATURE) {
      found = i;
      ++signatures;
    }
  char want[9] = "";
  if (required) key_id(required, want);
  if (signatures == 0) {
    if (required)
      return ingot_cli_error(INGOT_CLI_EXIT_FAILURE,
                             "'%s': signature: not signed, and a signature by key %s is required", path, want);
    printf("signature: none (unsigned bundle)\n");
    return INGOT_CLI_EXIT_OK;
  }
  const ingot_section_entry_t* e = &entries[found];
  if (signatures > 1 || found != count - 1 || e->offset + e->stored_size != size)
    return ingot_cli_error(INGOT_CLI_EXIT_FAILURE,
                           "'%s': signature: section %u is not the one last section of the file", path, found);
  if (e->codec != INGOT_CODEC_NONE || e->stored_size != sizeof(ingot_signature_record_t))
    return ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "'%s': signature: section %u holds %llu bytes, not %zu", path,
                           found, (unsigned long long)e->stored_size, sizeof(ingot_signature_record_t));
  ingot_signature_record_t record;
  memcpy(&record, file + e->offset, sizeof record);
  if (memcmp(record.magic, INGOT_SIGNATURE_MAGIC, 8) != 0 || record.reserved != 0)
    return ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "'%s': signature: section %u is not a signature record", path,
                           found);
  if (record.algorithm != INGOT_SIGNATURE_ED25519PH)
    return ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "'%s': signature: algorithm %u (this ingot knows %u, Ed25519ph)",
                           path, record.algorithm, INGOT_SIGNATURE_ED25519PH);
  char have[9];
  key_id(record.public_key, have);
  if (required && sodium_memcmp(record.public_key, required, INGOT_SIGNATURE_PUBLIC_KEY_BYTES) != 0)
    return ingot_cli_error(INGOT_CLI_EXIT_FAILURE,
                           "'%s': signature: signed by key %s, not by the required key %s", path, have, want);
  if (sodium_init() < 0) return ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "libsodium failed to initialize");
  /* The signed message (runtime/ingot_format.h): the file up to the
   * signature with the four checksums that depend on it zero. */
  ingot_bundle_header_t zh = *h;
  zh.table_crc32 = 0;
  zh.header_crc32 = 0;
  ingot_section_entry_t last = *e;
  last.stored_crc32 = 0;
  last.raw_crc32 = 0;
  uint64_t table_end = sizeof zh + (uint64_t)count * sizeof(ingot_section_entry_t);
  if (e->offset < table_end)
    return ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "'%s': signature: section %u overlaps the section table", path,
                           found);
  crypto_sign_state state;
  crypto_sign_init(&state);
  crypto_sign_update(&state, (const unsigned char*)&zh, sizeof zh);
  crypto_sign_update(&state, (const unsigned char*)entries, (unsigned long long)(count - 1) * sizeof *entries);
  crypto_sign_update(&state, (const unsigned char*)&last, sizeof last);
  crypto_sign_update(&state, file + table_end, e->offset - table_end);
  if (crypto_sign_final_verify(&state, record.signature, record.public_key) != 0)
    return ingot_cli_error(INGOT_CLI_EXIT_FAILURE,
                           "'%s': signature: the signature by key %s does not match: the bundle was altered "
                           "after it was signed", path, have);
  printf("signature: valid, Ed25519ph, key id %s%s\n", have,
         required ? " (the required key)" : " (no key required: checked against the key it names)");
  return INGOT_CLI_EXIT_OK;
}

/* Step 4: every section decoded, its raw size and checksum. */
static int check_sections(const char* path, const uint8_t* file, const ingot_section_entry_t* entries,
                          uint32_t count) {
  for (uint32_t i = 0; i < count; ++i) {
    const ingot_section_entry_t* e = &entries[i];
    char label[96];
    section_label(e, i, label, sizeof label);
    uint32_t crc;
    if (e->codec == INGOT_CODEC_NONE) {
      crc = ingot_crc32(0, file + e->offset, (size_t)e->stored_size);
    } else {
      /* The container check held raw_size to the runtime's section limit. */
      size_t n = (size_t)e->raw_size;
      uint8_t* raw = malloc(n ? n : 1);
      if (!raw) return ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "'%s': %s: %zu bytes do not fit in memory", path, label, n);
      size_t got = ZSTD_decompress(raw, n, file + e->offset, (size_t)e->stored_size);
      if (ZSTD_isError(got) || got != n) {
        free(raw);
        return ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "'%s': %s: does not decode to %zu bytes (%s)", path, label,
                               n, ZSTD_isError(got) ? ZSTD_getErrorName(got) : "wrong size");
      }
      crc = ingot_crc32(0, raw, n);
      free(raw);
    }
    if (crc != e->raw_crc32)
      return ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "'%s': %s: checksum mismatch once decoded", path, label);
    printf("  %-40s ok: %llu bytes stored, %llu decoded\n", label, (unsigned long long)e->stored_size,
           (unsigned long long)e->raw_size);
  }
  return INGOT_CLI_EXIT_OK;
}

/* Step 5: each code variant loaded by itself. */
static int check_variants(const char* path, const uint8_t* file, size_t size, const ingot_section_entry_t* entries,
                          uint32_t count, const uint8_t* required) {
  uint32_t loaded = 0, variants = 0;
  for (uint32_t i = 0; i < count; ++i) {
    if (entries[i].kind != INGOT_SECTION_CODE) continue;
    ++variants;
    char target[INGOT_TARGET_NAME_BYTES + 1];
    memcpy(target, entries[i].target, INGOT_TARGET_NAME_BYTES);
    target[INGOT_TARGET_NAME_BYTES] = '\0';
    ingot_bundle_options_t options = {.signature_public_key = required, .target = target};
    ingot_bundle_t* bundle = NULL;
    ingot_status_t s = ingot_bundle_open_memory(file, size, &options, &bundle);
    if (s == INGOT_OK) {
      printf("  variant %-32s loads here (%s, %u steps)\n", target, ingot_bundle_device(bundle),
             ingot_bundle_step_count(bundle));
      ++loaded;
      ingot_bundle_release(bundle);
    } else if (s == INGOT_ERROR_UNSUPPORTED) {
      /* "bundle: variant 'T' does not run on this machine: WHY" */
      const char* why = ingot_last_error();
      const char* colon = strstr(why, "machine: ");
      printf("  variant %-32s not load-checked here: %s\n", target, colon ? colon + 9 : why);
    } else {
      return ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "'%s': variant '%s': %s (%s)", path, target,
                             ingot_last_error(), ingot_status_name(s));
    }
  }
  printf("verified %s: %u of %u variant%s load-checked here\n", path, loaded, variants, variants == 1 ? "" : "s");
  return INGOT_CLI_EXIT_OK;
}

static int verify_main(const char* path, const char* key_path) {
  uint8_t key[INGOT_PUBLIC_KEY_BYTES];
  ingot_compiler_error_clear();
  if (key_path && ingot_cli_key_read(key_path, false, key) != INGOT_OK)
    return ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "%s", ingot_compiler_error());
  const uint8_t* required = key_path ? key : NULL;
  uint8_t* file = NULL;
  size_t size = 0;
  if (ingot_file_read(path, &file, &size) != INGOT_OK)
    return ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "%s", ingot_compiler_error());
  ingot_bundle_header_t h;
  ingot_section_entry_t* entries = NULL;
  int rc = check_format(path, file, size, &h, &entries);
  if (rc == INGOT_CLI_EXIT_OK) {
    printf("bundle: %s (%zu bytes, format version %u, %u sections)\n", path, size, h.format_version,
           h.section_count);
    rc = check_signature(path, file, size, &h, entries, required);
  }
  if (rc == INGOT_CLI_EXIT_OK) {
    ingot_bundle_options_t options = {.signature_public_key = required, .device = "none"};
    ingot_bundle_t* bundle = NULL;
    ingot_status_t s = ingot_bundle_open_memory(file, size, &options, &bundle);
    if (s != INGOT_OK) {
      rc = ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "'%s': %s (%s)", path, ingot_last_error(), ingot_status_name(s));
    } else {
      printf("container: header, section table, stored checksums, layout, manifest and plan ok\n");
      ingot_bundle_release(bundle);
    }
  }
  if (rc == INGOT_CLI_EXIT_OK) {
    printf("sections:\n");
    rc = check_sections(path, file, entries, h.section_count);
  }
  if (rc == INGOT_CLI_EXIT_OK) {
    printf("code:\n");
    rc = check_variants(path, file, size, entries, h.section_count, required);
  }
  fflush(stdout);
  free(entries);
  free(file);
  return rc;
}

int ingot_cli_verify(int argc, char** argv) {
  static const struct option longs[] = {
      {"help", no_argument, NULL, 'h'},
      {"require-signature", required_argument, NULL, 256},
      {NULL, 0, NULL, 0},
  };
  const char* path = NULL;
  const char* key_path = NULL;
  ingot_cli_args_t args;
  ingot_cli_args_init(&args, "verify", argc, argv, "h", longs);
  for (int c; (c = ingot_cli_args_next(&args)) != INGOT_CLI_ARG_END;) {
    switch (c) {
      case INGOT_CLI_ARG_BAD: return INGOT_CLI_EXIT_USAGE;
      case 'h': fputs(kVerifyHelp, stdout); return INGOT_CLI_EXIT_OK;
      case 256:
        if (!*args.value) return ingot_cli_usage_error("verify", "--require-signature needs a public key file");
        key_path = args.value;
        break;
      case INGOT_CLI_ARG_POSITIONAL:
        if (path) return ingot_cli_usage_error("verify", "unexpected argument '%s' (one bundle at a time)", args.value);
        path = args.value;
        break;
      default: return ingot_cli_usage_error("verify", "unhandled option (a bug)");
    }
  }
  if (!path) return ingot_cli_usage_error("verify", "no bundle given");
  return verify_main(path, key_path);
}
