/* Test driver for cli/npy.c, used by test_npy.py against numpy:
 *   npy_tool copy IN.npy OUT.npy            parse, then write back
 *   npy_tool npz OUT.npz NAME=IN.npy ...    parse each, write one .npz
 *   npy_tool member NAME                    print the .npz member name
 * Errors: one "ingot: error: " line on stderr, exit 1 (2 for usage). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/npy.h"

static int fail(void) {
  fprintf(stderr, "ingot: error: %s\n", ingot_compiler_error());
  return 1;
}

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "member") == 0) {
    char name[256];
    ingot_npz_member_name(argv[2], name, sizeof(name));
    printf("%s\n", name);
    return 0;
  }
  if (argc == 4 && strcmp(argv[1], "copy") == 0) {
    ingot_npy_array_t a;
    if (ingot_npy_read_file(argv[2], &a)) return fail();
    ingot_status_t s = ingot_npy_write_file(argv[3], a.dtype, a.rank, a.dims, a.data, a.bytes);
    ingot_npy_array_free(&a);
    return s ? fail() : 0;
  }
  if (argc >= 3 && strcmp(argv[1], "npz") == 0) {
    int n = argc - 3;
    ingot_npy_array_t* arrays = calloc((size_t)n + 1, sizeof(*arrays));
    ingot_npz_member_t* members = calloc((size_t)n + 1, sizeof(*members));
    int rc = 0;
    for (int i = 0; i < n && rc == 0; ++i) {
      char* arg = argv[3 + i];
      char* eq = strchr(arg, '=');
      if (!eq) {
        fprintf(stderr, "ingot: error: expected NAME=FILE\n");
        rc = 2;
        break;
      }
      *eq = '\0';
      if (ingot_npy_read_file(eq + 1, &arrays[i])) {
        rc = fail();
        break;
      }
      members[i] = (ingot_npz_member_t){arg, arrays[i].dtype, arrays[i].rank, arrays[i].dims,
                                        arrays[i].data, arrays[i].bytes};
    }
    if (rc == 0 && ingot_npz_write_file(argv[2], members, (uint32_t)n)) rc = fail();
    for (int i = 0; i < n; ++i) ingot_npy_array_free(&arrays[i]);
    free(arrays);
    free(members);
    return rc;
  }
  fprintf(stderr, "ingot: error: usage: npy_tool copy IN OUT | npz OUT NAME=IN... | member NAME\n");
  return 2;
}
