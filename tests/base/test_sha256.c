/* base/sha256.c against the FIPS 180-4 / NIST example vectors, including
 * the lengths around the padding boundary (55, 56, 63, 64 bytes). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

static int check(const char* what, const void* data, size_t size, const char* want) {
  char got[65];
  ingot_sha256_hex(data, size, got);
  if (strcmp(got, want) != 0) {
    fprintf(stderr, "FAIL sha256(%s): %s, want %s\n", what, got, want);
    return 1;
  }
  return 0;
}

int main(void) {
  int fails = 0;
  fails += check("empty", "", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  fails += check("abc", "abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const char* m56 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  fails += check("56 bytes", m56, strlen(m56), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  const char* m112 =
      "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";
  fails += check("112 bytes", m112, strlen(m112),
                 "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  size_t n = 1000000;
  char* a = malloc(n);
  memset(a, 'a', n);
  fails += check("a x 1e6", a, n, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  /* 55 and 64 'a's (one and two padding blocks). */
  fails += check("a x 55", a, 55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
  fails += check("a x 64", a, 64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
  free(a);
  if (fails) return 1;
  printf("sha256: 7 vectors ok\n");
  return 0;
}
