/* A program outside Ingot's tree that uses the installed runtime, built by
 * tests/package/package_test.sh against each install and subproject:
 *
 *   consumer MODEL.ingot [KEY.pub]
 *
 * opens the bundle (checking its signature by the public key in KEY.pub,
 * `ingot keygen`'s format, when one is named), runs it once on zero inputs,
 * and prints one line starting "ok": the runtime's version as
 * MAJOR.MINOR.PATCH, what it ran. On failure it prints "failed: STATUS_NAME:
 * MESSAGE" on stdout and exits 1; bad usage exits 2. */
#include <ingot.h>
#include <stdio.h>
#include <string.h>

/* NAME.pub: "ingot-ed25519-public-key <64 hex digits>\n". */
static int read_public_key(const char* path, uint8_t key[INGOT_PUBLIC_KEY_BYTES]) {
  FILE* f = fopen(path, "r");
  if (!f) return 0;
  char hex[2 * INGOT_PUBLIC_KEY_BYTES + 1];
  int ok = fscanf(f, "ingot-ed25519-public-key %64s", hex) == 1 && strlen(hex) == 2 * INGOT_PUBLIC_KEY_BYTES;
  fclose(f);
  for (unsigned i = 0; ok && i < INGOT_PUBLIC_KEY_BYTES; ++i) {
    unsigned byte;
    ok = sscanf(hex + 2 * i, "%2x", &byte) == 1;
    key[i] = (uint8_t)byte;
  }
  return ok;
}

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) {
    fprintf(stderr, "usage: consumer MODEL.ingot [KEY.pub]\n");
    return 2;
  }
  ingot_bundle_options_t options;
  memset(&options, 0, sizeof options);
  uint8_t key[INGOT_PUBLIC_KEY_BYTES];
  if (argc == 3) {
    if (!read_public_key(argv[2], key)) {
      fprintf(stderr, "consumer: cannot read a public key from %s\n", argv[2]);
      return 2;
    }
    options.signature_public_key = key;
  }
  ingot_bundle_t* bundle = NULL;
  ingot_session_t* session = NULL;
  ingot_status_t s = ingot_bundle_open_file(argv[1], &options, &bundle);
  if (!s) s = ingot_session_create(bundle, NULL, &session);
  if (!s) s = ingot_session_run(session);
  if (s) {
    printf("failed: %s: %s\n", ingot_status_name(s), ingot_last_error());
    ingot_session_release(session);
    ingot_bundle_release(bundle);
    return 1;
  }
  uint32_t v = ingot_version();
  printf("ok: ingot %u.%u.%u ran %s (%u inputs, %u outputs, target %s)\n", (unsigned)(v >> 16),
         (unsigned)((v >> 8) & 0xff), (unsigned)(v & 0xff), argv[1], ingot_bundle_input_count(bundle),
         ingot_bundle_output_count(bundle), ingot_bundle_target(bundle));
  ingot_session_release(session);
  ingot_bundle_release(bundle);
  return 0;
}
