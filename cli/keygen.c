/* `ingot keygen -o NAME`: a new Ed25519 key pair for `ingot sign`, and the key
 * files both commands read.
 *
 * Key files are one line of text:
 *   NAME      "ingot-ed25519-secret-key <128 hex digits>\n"  (mode 0600)
 *             the 64-byte libsodium secret key (seed, then public key)
 *   NAME.pub  "ingot-ed25519-public-key <64 hex digits>\n"   (mode 0644)
 * keygen never overwrites: each file is written to a temporary file in the
 * same folder and then hard-linked into place, which fails when the name
 * exists; a failure leaves neither file behind. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

#define SECRET_TAG "ingot-ed25519-secret-key"
#define PUBLIC_TAG "ingot-ed25519-public-key"

static const char kKeygenHelp[] =
    "usage: ingot keygen -o NAME\n"
    "\n"
    "Makes a new Ed25519 key pair for signing bundles: the secret key goes to NAME\n"
    "(readable by you only), the public key to NAME.pub. Existing files are never\n"
    "overwritten. Keep NAME secret; give NAME.pub to whoever runs your bundles\n"
    "(`ingot run --require-signature NAME.pub`).\n"
    "\n"
    "options:\n"
    "  -o, --output NAME  where to write the key pair (required)\n"
    "  -h, --help         show this help\n"
    "\n"
    "example:\n"
    "  ingot keygen -o release && ingot sign model.ingot --key release\n";

/* Writes `text` to a new file at `path` with `mode`; fails if `path` exists. */
static ingot_status_t write_new_file(const char* path, const char* text, mode_t mode) {
  size_t n = strlen(path);
  char* tmp = ingot_xmalloc(n + 32);
  snprintf(tmp, n + 32, "%s.tmp.XXXXXX", path);
  int slot;
  int fd = ingot_cleanup_mkstemp(tmp, &slot); /* mode 0600 */
  if (fd < 0) {
    ingot_status_t s = ingot_fail(INGOT_ERROR_IO, "cannot create a file beside '%s': %s", path,
                                  strerror(errno));
    free(tmp);
    return s;
  }
  size_t left = strlen(text);
  const char* p = text;
  while (left) {
    ssize_t w = write(fd, p, left);
    if (w < 0) {
      if (errno == EINTR) continue;
      break;
    }
    p += w;
    left -= (size_t)w;
  }
  int ok = left == 0 && fchmod(fd, mode) == 0 && fsync(fd) == 0;
  ok = close(fd) == 0 && ok;
  ingot_status_t s = INGOT_OK;
  if (!ok) {
    s = ingot_fail(INGOT_ERROR_IO, "cannot write '%s': %s", path, strerror(errno));
  } else if (link(tmp, path) != 0) {
    s = errno == EEXIST
            ? ingot_fail(INGOT_ERROR_IO, "'%s' already exists; keygen never overwrites a key", path)
            : ingot_fail(INGOT_ERROR_IO, "cannot write '%s': %s", path, strerror(errno));
  }
  unlink(tmp);
  ingot_cleanup_drop(slot);
  free(tmp);
  return s;
}

static void to_hex(const uint8_t* bytes, size_t n, char* out) {
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = digits[bytes[i] >> 4];
    out[2 * i + 1] = digits[bytes[i] & 15];
  }
  out[2 * n] = '\0';
}

static int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

ingot_status_t ingot_cli_key_read(const char* path, bool secret, uint8_t* out) {
  const char* tag = secret ? SECRET_TAG : PUBLIC_TAG;
  size_t bytes = secret ? crypto_sign_SECRETKEYBYTES : crypto_sign_PUBLICKEYBYTES;
  const char* kind = secret ? "secret" : "public";
  uint8_t* data;
  size_t size;
  ingot_status_t s = ingot_file_read(path, &data, &size);
  if (s) return s;
  size_t tag_len = strlen(tag);
  size_t want = tag_len + 1 + 2 * bytes;
  /* The line, then optionally one newline. */
  bool shape = (size == want || (size == want + 1 && data[want] == '\n')) &&
               memcmp(data, tag, tag_len) == 0 && data[tag_len] == ' ';
  for (size_t i = 0; shape && i < bytes; ++i) {
    int hi = hex_value((char)data[tag_len + 1 + 2 * i]);
    int lo = hex_value((char)data[tag_len + 2 + 2 * i]);
    if (hi < 0 || lo < 0) shape = false;
    else out[i] = (uint8_t)(hi << 4 | lo);
  }
  if (!shape) {
    bool other = size > 24 && memcmp(data, secret ? PUBLIC_TAG : SECRET_TAG, tag_len) == 0;
    sodium_memzero(data, size);
    free(data);
    if (other)
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "'%s' is a %s key, a %s key is needed here",
                        path, secret ? "public" : "secret", kind);
    return ingot_fail(INGOT_ERROR_CORRUPT,
                      "'%s' is not an Ingot %s key (a line '%s <%zu hex digits>', made by "
                      "'ingot keygen')",
                      path, kind, tag, 2 * bytes);
  }
  sodium_memzero(data, size);
  free(data);
  if (secret) {
    /* The second half of a libsodium secret key is its public key. */
    uint8_t pk[crypto_sign_PUBLICKEYBYTES];
    crypto_sign_ed25519_sk_to_pk(pk, out);
    uint8_t seed[crypto_sign_SEEDBYTES], check_pk[crypto_sign_PUBLICKEYBYTES],
        check_sk[crypto_sign_SECRETKEYBYTES];
    crypto_sign_ed25519_sk_to_seed(seed, out);
    crypto_sign_seed_keypair(check_pk, check_sk, seed);
    bool ok = memcmp(pk, check_pk, sizeof pk) == 0;
    sodium_memzero(seed, sizeof seed);
    sodium_memzero(check_sk, sizeof check_sk);
    if (!ok) {
      sodium_memzero(out, bytes);
      return ingot_fail(INGOT_ERROR_CORRUPT, "'%s': the secret key is damaged (its two halves disagree)",
                        path);
    }
  }
  return INGOT_OK;
}

int ingot_cli_keygen(int argc, char** argv) {
  const char* output = NULL;
  static const struct option longs[] = {
      {"help", no_argument, NULL, 'h'},
      {"output", required_argument, NULL, 'o'},
      {NULL, 0, NULL, 0},
  };
  ingot_cli_args_t args;
  ingot_cli_args_init(&args, "keygen", argc, argv, "ho:", longs);
  for (int c; (c = ingot_cli_args_next(&args)) != INGOT_CLI_ARG_END;) {
    switch (c) {
      case INGOT_CLI_ARG_BAD: return INGOT_CLI_EXIT_USAGE;
      case 'h': fputs(kKeygenHelp, stdout); return INGOT_CLI_EXIT_OK;
      case 'o':
        if (!*args.value) return ingot_cli_usage_error("keygen", "--output needs a NAME");
        output = args.value;
        break;
      case INGOT_CLI_ARG_POSITIONAL:
        return ingot_cli_usage_error("keygen", "unexpected argument '%s' (use -o NAME)", args.value);
      default: return ingot_cli_usage_error("keygen", "unhandled option (a bug)");
    }
  }
  if (!output) return ingot_cli_usage_error("keygen", "no output given: add -o NAME");
  if (sodium_init() < 0) return ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "libsodium failed to initialize");

  size_t n = strlen(output);
  char* pub_path = ingot_xmalloc(n + 5);
  snprintf(pub_path, n + 5, "%s.pub", output);
  struct stat st;
  int rc = INGOT_CLI_EXIT_OK;
  if (lstat(output, &st) == 0 || lstat(pub_path, &st) == 0) {
    rc = ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "'%s' already exists; keygen never overwrites a key",
                         lstat(output, &st) == 0 ? output : pub_path);
    free(pub_path);
    return rc;
  }
  uint8_t pk[crypto_sign_PUBLICKEYBYTES], sk[crypto_sign_SECRETKEYBYTES];
  crypto_sign_keypair(pk, sk);
  char secret_line[sizeof(SECRET_TAG) + 2 * crypto_sign_SECRETKEYBYTES + 2];
  char public_line[sizeof(PUBLIC_TAG) + 2 * crypto_sign_PUBLICKEYBYTES + 2];
  char hex[2 * crypto_sign_SECRETKEYBYTES + 1], pk_hex[2 * crypto_sign_PUBLICKEYBYTES + 1];
  to_hex(sk, sizeof sk, hex);
  snprintf(secret_line, sizeof secret_line, "%s %s\n", SECRET_TAG, hex);
  to_hex(pk, sizeof pk, pk_hex);
  snprintf(public_line, sizeof public_line, "%s %s\n", PUBLIC_TAG, pk_hex);

  ingot_compiler_error_clear();
  ingot_status_t s = write_new_file(output, secret_line, 0600);
  if (s == INGOT_OK) {
    s = write_new_file(pub_path, public_line, 0644);
    if (s) unlink(output); /* we made it a moment ago: leave no half pair */
  }
  sodium_memzero(sk, sizeof sk);
  sodium_memzero(secret_line, sizeof secret_line);
  sodium_memzero(hex, sizeof hex);
  if (s) {
    rc = ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "%s", ingot_compiler_error());
  } else {
    printf("secret key: %s (keep it secret)\npublic key: %s (key id %02x%02x%02x%02x)\n", output,
           pub_path, pk[0], pk[1], pk[2], pk[3]);
  }
  free(pub_path);
  return rc;
}
