/* Running the external tools of code generation (the C compiler, ld.lld):
 * files in a private temporary folder, a child process without a shell, a
 * time limit, and the head of its log for error messages. Shared by the c
 * and llvm targets. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "codegen_internal.h"

extern char** environ;

ingot_status_t ingot_codegen_write_file(const char* path, const void* data, size_t size) {
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd < 0) return ingot_fail(INGOT_ERROR_IO, "codegen: cannot create '%s': %s", path, strerror(errno));
  const uint8_t* p = data;
  while (size) {
    ssize_t w = write(fd, p, size);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      close(fd);
      return ingot_fail(INGOT_ERROR_IO, "codegen: cannot write '%s': %s", path, strerror(errno));
    }
    p += w;
    size -= (size_t)w;
  }
  if (close(fd) != 0) return ingot_fail(INGOT_ERROR_IO, "codegen: cannot write '%s'", path);
  return INGOT_OK;
}

ingot_status_t ingot_codegen_run_tool(char* const* argv, const char* log_path, int timeout_seconds,
                                      ingot_codegen_tool_run_t* out) {
  out->exit_code = -1;
  out->timed_out = false;
  posix_spawn_file_actions_t fa;
  if (posix_spawn_file_actions_init(&fa) != 0)
    return ingot_fail(INGOT_ERROR_INTERNAL, "codegen: posix_spawn_file_actions_init failed");
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  /* Spawning and registering the child are one step to a signal (it stops
   * the child before removing its folder); the child gets the old mask. */
  sigset_t saved;
  ingot_cleanup_hold(&saved);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setsigmask(&attr, &saved);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  pid_t pid;
  int rc = posix_spawnp(&pid, argv[0], &fa, &attr, argv, environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&fa);
  if (rc == 0) ingot_cleanup_set_child(pid);
  ingot_cleanup_release(&saved);
  if (rc != 0)
    return ingot_fail(rc == ENOENT ? INGOT_ERROR_NOT_FOUND : INGOT_ERROR_INTERNAL, "codegen: cannot run '%s': %s",
                      argv[0], strerror(rc));
  struct timespec start, now, nap = {0, 2 * 1000 * 1000};
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (;;) {
    int status = 0;
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      ingot_cleanup_set_child(0);
      if (WIFEXITED(status) && !out->timed_out) out->exit_code = WEXITSTATUS(status);
      return INGOT_OK;
    }
    if (r < 0 && errno != EINTR) {
      ingot_cleanup_set_child(0);
      return ingot_fail(INGOT_ERROR_INTERNAL, "codegen: waitpid: %s", strerror(errno));
    }
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - start.tv_sec > timeout_seconds && !out->timed_out) {
      out->timed_out = true;
      kill(pid, SIGKILL);
    }
    nanosleep(&nap, NULL);
  }
}

void ingot_codegen_log_head(const char* path, char* out, size_t cap, size_t max_lines) {
  out[0] = '\0';
  uint8_t* text = NULL;
  size_t size = 0;
  if (ingot_file_read(path, &text, &size) != INGOT_OK) {
    ingot_compiler_error_clear();
    return;
  }
  size_t n = 0, lines = 0;
  for (size_t i = 0; i < size && n + 1 < cap && lines < max_lines; ++i) {
    out[n++] = (char)text[i];
    if (text[i] == '\n') ++lines;
  }
  out[n] = '\0';
  free(text);
}
