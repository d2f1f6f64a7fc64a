/* Replays files through a fuzz target's entry point, without libFuzzer:
 * linked with fuzz_importer.c or fuzz_bundle.c and built with ASan and UBSan
 * for the CTest replay of the seed corpus and the regression inputs.
 *
 * usage: replay FILE_OR_FOLDER...   (folders: every regular file in them)
 * Exits 0 when every input ran (a sanitizer report aborts the process),
 * 1 when an input could not be read, 2 when no input was found. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const unsigned char* data, size_t size);

static int replay_file(const char* path) {
  FILE* f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "replay: cannot open %s\n", path);
    return 0;
  }
  size_t cap = 1 << 16, size = 0;
  unsigned char* data = malloc(cap);
  for (;;) {
    if (size == cap) data = realloc(data, cap *= 2);
    size_t got = fread(data + size, 1, cap - size, f);
    if (got == 0) break;
    size += got;
  }
  fclose(f);
  /* An exact-size copy, so ASan sees reads past the end of the input. */
  unsigned char* exact = malloc(size ? size : 1);
  memcpy(exact, data, size);
  free(data);
  LLVMFuzzerTestOneInput(exact, size);
  free(exact);
  return 1;
}

static int compare_names(const void* a, const void* b) {
  return strcmp(*(char* const*)a, *(char* const*)b);
}

int main(int argc, char** argv) {
  long count = 0;
  int bad = 0;
  for (int i = 1; i < argc; ++i) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      fprintf(stderr, "replay: no such file or folder: %s\n", argv[i]);
      bad = 1;
      continue;
    }
    if (!S_ISDIR(st.st_mode)) {
      if (replay_file(argv[i])) ++count; else bad = 1;
      continue;
    }
    DIR* dir = opendir(argv[i]);
    if (!dir) continue;
    char** names = NULL;
    size_t n = 0;
    for (struct dirent* e; (e = readdir(dir));) {
      if (e->d_name[0] == '.') continue;
      names = realloc(names, sizeof(char*) * (n + 1));
      size_t len = strlen(argv[i]) + strlen(e->d_name) + 2;
      names[n] = malloc(len);
      snprintf(names[n], len, "%s/%s", argv[i], e->d_name);
      ++n;
    }
    closedir(dir);
    if (n) qsort(names, n, sizeof(char*), compare_names);
    for (size_t k = 0; k < n; ++k) {
      if (stat(names[k], &st) == 0 && S_ISREG(st.st_mode)) {
        if (replay_file(names[k])) ++count; else bad = 1;
      }
      free(names[k]);
    }
    free(names);
  }
  printf("replayed %ld inputs\n", count);
  if (bad) return 1;
  return count ? 0 : 2;
}
