/* base/cleanup.c: a signal removes what is registered, stops the registered
 * child, and ends the process by that signal; dropped paths and a forked
 * child's signal leave things alone.
 *
 *   test_cleanup WORKDIR   (made and emptied here) */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "base/cleanup.h"

#include "base_check.h"

static void touch(const char* path) {
  FILE* f = fopen(path, "w");
  if (f) {
    fputs("x", f);
    fclose(f);
  }
}

static int exists(const char* path) {
  struct stat st;
  return lstat(path, &st) == 0;
}

/* Runs body() in a child process with the handlers installed; returns its
 * wait status. */
static int in_child(void (*body)(const char*), const char* dir) {
  pid_t pid = fork();
  if (pid == 0) {
    ingot_cleanup_install();
    body(dir);
    _exit(0);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

static char g_path[6][4200];

/* A file, a folder with files, a dropped file, and a child process; then
 * SIGTERM. The child's pid is left in a file for the parent to check. */
static void registered_then_killed(const char* dir) {
  snprintf(g_path[0], sizeof g_path[0], "%s/bundle.tmp.abc", dir);
  snprintf(g_path[1], sizeof g_path[1], "%s/ingot-cc-x", dir);
  snprintf(g_path[2], sizeof g_path[2], "%s/ingot-cc-x/module.c", dir);
  snprintf(g_path[3], sizeof g_path[3], "%s/ingot-cc-x/cc.log", dir);
  snprintf(g_path[4], sizeof g_path[4], "%s/kept", dir);
  snprintf(g_path[5], sizeof g_path[5], "%s/child.pid", dir);
  touch(g_path[0]);
  ingot_cleanup_add_file(g_path[0]);
  mkdir(g_path[1], 0700);
  ingot_cleanup_add_dir(g_path[1]);
  touch(g_path[2]);
  touch(g_path[3]);
  touch(g_path[4]);
  ingot_cleanup_drop(ingot_cleanup_add_file(g_path[4])); /* renamed into place, say */
  pid_t tool = fork();
  if (tool == 0) {
    /* The tool: writes one more file into the folder, then waits. */
    char extra[4300];
    snprintf(extra, sizeof extra, "%s/ingot-cc-x/ccAbc.s", dir);
    touch(extra);
    for (;;) pause();
  }
  ingot_cleanup_set_child(tool);
  FILE* f = fopen(g_path[5], "w");
  fprintf(f, "%d\n", (int)tool);
  fclose(f);
  struct timespec nap = {0, 50 * 1000 * 1000};
  nanosleep(&nap, NULL); /* let the tool write its file */
  raise(SIGTERM);
  _exit(3); /* not reached */
}

/* A forked child of the installing process gets the signal: it dies, and
 * leaves the installer's registered paths alone. */
static void forked_child_killed(const char* dir) {
  snprintf(g_path[0], sizeof g_path[0], "%s/still_here", dir);
  touch(g_path[0]);
  ingot_cleanup_add_file(g_path[0]);
  pid_t pid = fork();
  if (pid == 0) {
    raise(SIGTERM);
    _exit(3);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  _exit(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM ? 10 : 11);
}

/* A signal that comes between creating a folder and registering it, with
 * the step held, waits until the folder is registered, then removes it;
 * ingot_cleanup_mkdtemp makes and registers in one step too. */
static void signal_inside_held_step(const char* dir) {
  snprintf(g_path[0], sizeof g_path[0], "%s/ingot-llvm-XXXXXX", dir);
  int slot;
  CHECK(ingot_cleanup_mkdtemp(g_path[0], &slot) && slot >= 0, "ingot_cleanup_mkdtemp failed");
  snprintf(g_path[1], sizeof g_path[1], "%s/held-folder", dir);
  sigset_t saved;
  ingot_cleanup_hold(&saved);
  mkdir(g_path[1], 0700);
  raise(SIGTERM); /* pending: the folder is not registered yet */
  ingot_cleanup_add_dir(g_path[1]);
  ingot_cleanup_release(&saved); /* handled here: both folders go */
  _exit(3); /* not reached */
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_cleanup WORKDIR\n");
    return 2;
  }
  const char* dir = argv[1];
  char cmd[4400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", dir, dir);
  if (system(cmd) != 0) return 2;

  int status = in_child(registered_then_killed, dir);
  CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM, "not ended by SIGTERM (status %#x)", status);
  char path[4300];
  snprintf(path, sizeof path, "%s/bundle.tmp.abc", dir);
  CHECK(!exists(path), "registered file left: %s", path);
  snprintf(path, sizeof path, "%s/ingot-cc-x", dir);
  CHECK(!exists(path), "registered folder left (with the tool's file in it): %s", path);
  snprintf(path, sizeof path, "%s/kept", dir);
  CHECK(exists(path), "a dropped path was removed: %s", path);
  snprintf(path, sizeof path, "%s/child.pid", dir);
  FILE* f = fopen(path, "r");
  int tool = 0;
  CHECK(f && fscanf(f, "%d", &tool) == 1 && tool > 0, "no child pid written");
  if (f) fclose(f);
  if (tool > 0 && kill(tool, 0) == 0) {
    CHECK(0, "the tool process %d still runs", tool);
    kill(tool, SIGKILL); /* an orphan would hold the test's output open */
  }

  status = in_child(forked_child_killed, dir);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 10, "the forked child did not die of SIGTERM (status %#x)",
        status);
  snprintf(path, sizeof path, "%s/still_here", dir);
  CHECK(exists(path), "a forked child's signal removed its parent's path");

  status = in_child(signal_inside_held_step, dir);
  CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM, "a held step: not ended by SIGTERM (status %#x)",
        status);
  snprintf(path, sizeof path, "%s/held-folder", dir);
  CHECK(!exists(path), "a folder made while the signal was held was left: %s", path);
  snprintf(cmd, sizeof cmd, "ls -d '%s'/ingot-llvm-* >/dev/null 2>&1", dir);
  CHECK(system(cmd) != 0, "a folder from ingot_cleanup_mkdtemp was left in %s", dir);

  /* Registration limits: a path too long, then a full table. */
  char long_path[INGOT_CLEANUP_PATH_BYTES + 8];
  memset(long_path, 'a', sizeof long_path - 1);
  long_path[sizeof long_path - 1] = '\0';
  CHECK(ingot_cleanup_add_file(long_path) == -1, "a path too long was registered");
  int slots[INGOT_CLEANUP_SLOTS];
  for (int i = 0; i < INGOT_CLEANUP_SLOTS; ++i) {
    slots[i] = ingot_cleanup_add_file("/nonexistent/x");
    CHECK(slots[i] >= 0, "slot %d of %d refused", i, INGOT_CLEANUP_SLOTS);
  }
  CHECK(ingot_cleanup_add_file("/nonexistent/y") == -1, "a full table took one more");
  ingot_cleanup_drop(slots[3]);
  CHECK(ingot_cleanup_add_file("/nonexistent/z") == slots[3], "a dropped slot is not reused");

  if (g_failures) fprintf(stderr, "%d failure(s)\n", g_failures);
  else printf("base.cleanup: ok\n");
  return g_failures ? 1 : 0;
}
