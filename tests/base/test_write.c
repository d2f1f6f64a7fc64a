/* base/base.c's ingot_file_write_atomic: a regular file gets the bytes
 * through a finished copy renamed over it (nothing else left beside it);
 * a path that is no regular file (a FIFO here, /dev/null for a user's
 * `-o /dev/null`) is written in place and stays what it was.
 *
 *   test_write WORKDIR   (made and emptied here) */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/base.h"

#include "base_check.h"

static int entries(const char* dir) {
  DIR* d = opendir(dir);
  int n = 0;
  for (struct dirent* e; d && (e = readdir(d));) n += e->d_name[0] != '.';
  if (d) closedir(d);
  return n;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_write WORKDIR\n");
    return 2;
  }
  const char* dir = argv[1];
  char cmd[8600], file[4200], fifo[4200], got[4200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", dir, dir);
  if (system(cmd) != 0) return 2;
  static const char k_text[] = "bundle bytes\n";

  snprintf(file, sizeof file, "%s/out.ingot", dir);
  CHECK(ingot_file_write_atomic(file, "old", 3) == INGOT_OK, "first write");
  CHECK(ingot_file_write_atomic(file, k_text, sizeof k_text - 1) == INGOT_OK, "second write");
  uint8_t* data = NULL;
  size_t size = 0;
  CHECK(ingot_file_read(file, &data, &size) == INGOT_OK && size == sizeof k_text - 1 &&
            memcmp(data, k_text, size) == 0,
        "a regular file holds the last bytes");
  free(data);
  CHECK(entries(dir) == 1, "no temporary copy left beside it (%d entries)", entries(dir));

  /* a FIFO with a reader that copies what comes into `got` */
  snprintf(fifo, sizeof fifo, "%s/pipe", dir);
  snprintf(got, sizeof got, "%s/got", dir);
  CHECK(mkfifo(fifo, 0600) == 0, "mkfifo: %s", strerror(errno));
  pid_t pid = fork();
  if (pid == 0) {
    snprintf(cmd, sizeof cmd, "cat '%s' > '%s'", fifo, got);
    _exit(system(cmd) == 0 ? 0 : 1);
  }
  CHECK(ingot_file_write_atomic(fifo, k_text, sizeof k_text - 1) == INGOT_OK, "write into the FIFO");
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  struct stat st;
  CHECK(lstat(fifo, &st) == 0 && S_ISFIFO(st.st_mode), "the FIFO is still a FIFO");
  data = NULL;
  CHECK(ingot_file_read(got, &data, &size) == INGOT_OK && size == sizeof k_text - 1 &&
            memcmp(data, k_text, size) == 0,
        "its reader got the bytes");
  free(data);
  CHECK(entries(dir) == 3, "nothing else beside the FIFO (%d entries)", entries(dir));
  if (g_failures) fprintf(stderr, "%d failure(s)\n", g_failures);
  else printf("ok\n");
  return g_failures ? 1 : 0;
}
