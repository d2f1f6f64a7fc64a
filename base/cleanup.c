/* Temporary files and folders removed when a signal ends the process
 * (base.h, "cleanup on a signal").
 *
 * The table is fixed and static: a slot is claimed with a compare-and-swap on
 * its state, filled, then armed; the handler reads only armed slots and calls
 * nothing that is not async-signal-safe (open, close, unlinkat, rmdir, kill,
 * waitpid, nanosleep, getpid, raise, lseek, and on Linux the getdents64
 * system call, made directly: readdir may allocate). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/syscall.h>
#endif

#include "base/base.h"
#include "base/cleanup.h"

enum { SLOT_FREE = 0, SLOT_BUSY = 1, SLOT_ARMED = 2 };

typedef struct cleanup_slot_t {
  atomic_int state;
  bool is_dir;
  char path[INGOT_CLEANUP_PATH_BYTES];
} cleanup_slot_t;

static cleanup_slot_t g_slots[INGOT_CLEANUP_SLOTS];
static atomic_int g_child;       /* the tool process running now, 0: none */
static atomic_int g_owner;       /* the pid that installed the handlers, 0: none */

static int claim(const char* path, bool is_dir) {
  if (!path || strlen(path) >= INGOT_CLEANUP_PATH_BYTES) return -1;
  for (int i = 0; i < INGOT_CLEANUP_SLOTS; ++i) {
    int expected = SLOT_FREE;
    if (!atomic_compare_exchange_strong(&g_slots[i].state, &expected, SLOT_BUSY)) continue;
    g_slots[i].is_dir = is_dir;
    memcpy(g_slots[i].path, path, strlen(path) + 1);
    atomic_store(&g_slots[i].state, SLOT_ARMED);
    return i;
  }
  return -1;
}

int ingot_cleanup_add_file(const char* path) { return claim(path, false); }
int ingot_cleanup_add_dir(const char* path) { return claim(path, true); }

void ingot_cleanup_drop(int slot) {
  if (slot < 0 || slot >= INGOT_CLEANUP_SLOTS) return;
  atomic_store(&g_slots[slot].state, SLOT_BUSY);
  g_slots[slot].path[0] = '\0';
  atomic_store(&g_slots[slot].state, SLOT_FREE);
}

void ingot_cleanup_set_child(pid_t pid) { atomic_store(&g_child, (int)pid); }

static void cleanup_signals(sigset_t* set) {
  sigemptyset(set);
  sigaddset(set, SIGINT);
  sigaddset(set, SIGTERM);
  sigaddset(set, SIGHUP);
}

void ingot_cleanup_hold(sigset_t* saved) {
  sigset_t set;
  cleanup_signals(&set);
  pthread_sigmask(SIG_BLOCK, &set, saved);
}

void ingot_cleanup_release(const sigset_t* saved) { pthread_sigmask(SIG_SETMASK, saved, NULL); }

char* ingot_cleanup_mkdtemp(char* templ, int* slot) {
  sigset_t saved;
  ingot_cleanup_hold(&saved);
  char* dir = mkdtemp(templ);
  int err = errno;
  *slot = dir ? ingot_cleanup_add_dir(dir) : -1;
  ingot_cleanup_release(&saved);
  errno = err;
  return dir;
}

int ingot_cleanup_mkstemp(char* templ, int* slot) {
  sigset_t saved;
  ingot_cleanup_hold(&saved);
  int fd = mkstemp(templ);
  int err = errno;
  *slot = fd >= 0 ? ingot_cleanup_add_file(templ) : -1;
  ingot_cleanup_release(&saved);
  errno = err;
  return fd;
}

/* ---- the handler: async-signal-safe from here on ---- */

static bool is_dot_name(const char* name) {
  return name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
}

/* Removes the plain files directly in `dir` (the tools' folders hold no
 * others). Without getdents64 the folder is left when it is not empty. */
static void remove_entries(const char* dir) {
#if defined(__linux__) && defined(SYS_getdents64)
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  /* Unlinking while reading may skip names: read again until a pass finds
   * nothing to remove. */
  for (int pass = 0; pass < 8; ++pass) {
    bool removed = false;
    if (lseek(fd, 0, SEEK_SET) != 0) break;
    for (;;) {
      _Alignas(8) char buf[4096];
      long n = syscall(SYS_getdents64, fd, buf, sizeof buf);
      if (n <= 0) break;
      for (long off = 0; off < n;) {
        /* struct linux_dirent64: ino (8), off (8), reclen (2), type (1), name */
        const char* rec = buf + off;
        unsigned short reclen;
        memcpy(&reclen, rec + 16, sizeof reclen);
        const char* name = rec + 19;
        if (reclen == 0) break;
        if (!is_dot_name(name) && unlinkat(fd, name, 0) == 0) removed = true;
        off += reclen;
      }
    }
    if (!removed) break;
  }
  close(fd);
#else
  (void)dir;
#endif
}

/* Stops the tool that works in the folders (it gets the same signal first,
 * so that a compiler removes its own temporary files), then waits for it:
 * up to about two seconds, then SIGKILL. */
static void stop_child(int sig) {
  pid_t child = (pid_t)atomic_load(&g_child);
  if (child <= 0) return;
  kill(child, sig);
  struct timespec nap = {0, 10 * 1000 * 1000};
  for (int i = 0; i < 200; ++i) {
    pid_t r = waitpid(child, NULL, WNOHANG);
    if (r == child || (r < 0 && errno != EINTR)) return;
    nanosleep(&nap, NULL);
  }
  kill(child, SIGKILL);
  while (waitpid(child, NULL, 0) < 0 && errno == EINTR) {
  }
}

static void on_signal(int sig) {
  int saved = errno;
  if (atomic_load(&g_owner) == (int)getpid()) {
    stop_child(sig);
    /* Files first, then folders (a registered file may sit in one). */
    for (int pass = 0; pass < 2; ++pass)
      for (int i = INGOT_CLEANUP_SLOTS - 1; i >= 0; --i) {
        cleanup_slot_t* s = &g_slots[i];
        if (atomic_load(&s->state) != SLOT_ARMED || s->is_dir != (pass == 1)) continue;
        if (s->is_dir) {
          remove_entries(s->path);
          rmdir(s->path);
        } else {
          unlink(s->path);
        }
      }
  }
  errno = saved;
  /* SA_RESETHAND put the default action back: the signal, blocked while this
   * runs, ends the process when the handler returns. */
  raise(sig);
}

void ingot_cleanup_install(void) {
  atomic_store(&g_owner, (int)getpid());
  static const int signals[] = {SIGINT, SIGTERM, SIGHUP};
  for (size_t i = 0; i < sizeof signals / sizeof signals[0]; ++i) {
    struct sigaction old;
    /* A signal ignored at start (nohup, a shell's background job) stays
     * ignored. */
    if (sigaction(signals[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN) continue;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigfillset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    sigaction(signals[i], &sa, NULL);
  }
}
