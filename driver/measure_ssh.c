/* Measuring on another machine through ssh (driver.h: the `runner` of
 * ingot_driver_measure_options_t).
 *
 * Every contact is one run of the system's `ssh` (fork + exec, the arguments
 * an array; the remote command is a POSIX shell line built here from numbers
 * and single-quoted paths of safe characters only):
 *   setup      once per runner and program: make a temporary folder on the
 *              remote machine and copy ingot-measure into it (its bytes on
 *              ssh's standard input, `cat >` there), print the folder;
 *   reference  copy the reference bundle, when it is not the one already there;
 *   run        copy the candidate, run ingot-measure on the two with the
 *              options and --phases, remove the candidate, exit with the
 *              program's status. ingot-measure writes "phase N" lines as it
 *              goes and one result line (measure_core.h).
 * The exit status tells the rest: 255 is ssh's own failure (its message on
 * standard error), 128+N the program killed by signal N (SIGALRM: its own
 * time-out, set by --timeout). Here ssh is killed, with its process group,
 * when it runs past the time-out plus a grace for connecting and copying. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "driver/driver.h"
#include "measure_core.h"
#include "measure_ssh.h"
#include "runtime/ingot.h"

#define GRACE_S 30.0          /* beyond the time-out: connecting and copying */
#define COPY_BYTES_PER_S 1e6  /* the slowest link allowed for, for copying */
#define MAX_SSH_OPTIONS 64
#define MAX_RUNNERS 8

static const char k_remote_program[] = "ingot-measure";

/* ---- The runner string ---- */

static bool safe_name_char(char ch, const char* extra) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
         (ch && strchr(extra, ch));
}

ingot_status_t ingot_driver_runner_parse(const char* text, ingot_driver_runner_t* out) {
  memset(out, 0, sizeof *out);
  if (!text || strcmp(text, "local") == 0) {
    snprintf(out->text, sizeof out->text, "local");
    return INGOT_OK;
  }
  static const char k_usage[] = "expected \"local\" or ssh://USER@HOST[:PORT]";
  static const char k_scheme[] = "ssh://";
  if (strlen(text) >= sizeof out->text || strncmp(text, k_scheme, sizeof k_scheme - 1) != 0)
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "runner '%s': %s", text, k_usage);
  snprintf(out->text, sizeof out->text, "%s", text);
  const char* p = text + sizeof k_scheme - 1;
  const char* at = strchr(p, '@');
  if (at) {
    size_t n = (size_t)(at - p);
    if (n == 0 || n >= sizeof out->user || p[0] == '-')
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "runner '%s': a bad user name; %s", text, k_usage);
    for (size_t i = 0; i < n; ++i)
      if (!safe_name_char(p[i], "._-"))
        return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "runner '%s': a bad character in the user name; %s", text,
                          k_usage);
    memcpy(out->user, p, n);
    p = at + 1;
  }
  size_t n = strcspn(p, ":");
  if (n == 0 || n >= sizeof out->host || p[0] == '-' || p[0] == '.')
    return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "runner '%s': no host, or a bad one; %s", text, k_usage);
  for (size_t i = 0; i < n; ++i)
    if (!safe_name_char(p[i], "._-"))
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "runner '%s': a bad character in the host name; %s", text,
                        k_usage);
  memcpy(out->host, p, n);
  p += n;
  if (*p == ':') {
    char* end = NULL;
    unsigned long port = strtoul(p + 1, &end, 10);
    if (end == p + 1 || *end || port == 0 || port > 65535 || p[1] < '0' || p[1] > '9')
      return ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "runner '%s': the port must be 1 to 65535; %s", text, k_usage);
    out->port = (uint32_t)port;
  }
  out->kind = INGOT_DRIVER_RUNNER_SSH;
  return INGOT_OK;
}

/* ---- The program to copy ---- */

static ingot_status_t find_program(char* out_path, size_t size) {
  const char* env = getenv("INGOT_MEASURE_BINARY");
  if (env && *env) {
    snprintf(out_path, size, "%s", env);
    if (access(out_path, X_OK) != 0)
      return ingot_fail(INGOT_ERROR_NOT_FOUND, "measure: INGOT_MEASURE_BINARY names '%s', which is not an executable "
                        "file (%s)", env, strerror(errno));
    return INGOT_OK;
  }
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0)
    return ingot_fail(INGOT_ERROR_NOT_FOUND, "measure: cannot tell where this program is (/proc/self/exe: %s); "
                      "name the ingot-measure program in INGOT_MEASURE_BINARY", strerror(errno));
  self[n] = '\0';
  char* slash = strrchr(self, '/');
  if (slash) *slash = '\0';
  int len = snprintf(out_path, size, "%s/%s", self, k_remote_program);
  if (len < 0 || (size_t)len >= size || access(out_path, X_OK) != 0)
    return ingot_fail(INGOT_ERROR_NOT_FOUND, "measure: no ingot-measure program beside this one (%s: %s); install it "
                      "there or name it in INGOT_MEASURE_BINARY", out_path, strerror(errno));
  return INGOT_OK;
}

ingot_status_t ingot_driver_measure_runner_check(const char* runner) {
  ingot_driver_runner_t r;
  ingot_status_t s = ingot_driver_runner_parse(runner, &r);
  if (s || r.kind != INGOT_DRIVER_RUNNER_SSH) return s;
  char path[PATH_MAX];
  return find_program(path, sizeof path);
}

/* ---- One ssh call ---- */

typedef struct ssh_call_t {
  char out[8192];      /* standard output (what fits) */
  size_t out_len;
  char err[1024];      /* standard error (the start of it) */
  size_t err_len;
  int status;          /* waitpid's */
  bool timed_out;      /* killed at the deadline */
} ssh_call_t;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* One connection per runner, shared by all calls (ssh's ControlMaster): a
 * call then costs a session, not a key exchange. The sockets live in a
 * folder of this process, made on first use; a master ends when
 * ingot_driver_measure_runners_release asks it to, or 60 s after its last
 * session. INGOT_SSH_OPTIONS "-o ControlMaster=no" turns it off. */
static char g_control_dir[64];
static char g_control_path[96];

static const char* control_path(void) {
  if (!g_control_dir[0]) {
    /* /tmp, not $TMPDIR: a socket path has to be short. */
    char dir[] = "/tmp/ingot-ssh.XXXXXX";
    if (!mkdtemp(dir)) return NULL;
    snprintf(g_control_dir, sizeof g_control_dir, "%s", dir);
    snprintf(g_control_path, sizeof g_control_path, "ControlPath=%s/%%C", dir);
  }
  return g_control_path;
}

/* The ssh command line: INGOT_SSH_OPTIONS first (ssh keeps the first value
 * it gets of an option), then ours, the port and user, host, command (NULL:
 * "-O exit", which ends the runner's shared connection). `words` holds the
 * split copy of the options. */
static uint32_t ssh_argv(const ingot_driver_runner_t* r, const char* command, char* words, size_t words_size,
                         char* port, size_t port_size, const char** argv, uint32_t max) {
  uint32_t n = 0;
  argv[n++] = "ssh";
  const char* env = getenv("INGOT_SSH_OPTIONS");
  snprintf(words, words_size, "%s", env ? env : "");
  for (char *save = NULL, *w = strtok_r(words, " \t\n", &save); w && n + 28 < max; w = strtok_r(NULL, " \t\n", &save))
    argv[n++] = w;
  static const char* const k_ours[] = {"-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "-o", "LogLevel=ERROR", "-T"};
  for (size_t i = 0; i < sizeof k_ours / sizeof k_ours[0]; ++i) argv[n++] = k_ours[i];
  const char* control = control_path();
  if (control) {
    static const char* const k_shared[] = {"-o", "ControlMaster=auto", "-o", "ControlPersist=60", "-o"};
    for (size_t i = 0; i < sizeof k_shared / sizeof k_shared[0]; ++i) argv[n++] = k_shared[i];
    argv[n++] = control;
  }
  if (!command) {
    argv[n++] = "-O";
    argv[n++] = "exit";
  }
  if (r->port) {
    snprintf(port, port_size, "%u", r->port);
    argv[n++] = "-p";
    argv[n++] = port;
  }
  if (r->user[0]) {
    argv[n++] = "-l";
    argv[n++] = r->user;
  }
  argv[n++] = r->host;
  if (command) argv[n++] = command;
  argv[n] = NULL;
  return n;
}

/* Runs ssh with `command` for the remote shell, `input` on its standard
 * input, until it ends or `timeout_ms` passes (then it is killed). False
 * only when ssh could not be started (message in call->err). */
static bool ssh_call(const ingot_driver_runner_t* r, const char* command, const void* input, size_t input_size,
                     double timeout_ms, ssh_call_t* call) {
  memset(call, 0, sizeof *call);
  char words[2048], port[16];
  const char* argv[MAX_SSH_OPTIONS + 32];
  ssh_argv(r, command, words, sizeof words, port, sizeof port, argv, MAX_SSH_OPTIONS + 32);

  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
  if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) {
    call->err_len = (size_t)snprintf(call->err, sizeof call->err, "pipe: %s", strerror(errno));
    for (int i = 0; i < 2; ++i) {
      if (in[i] >= 0) close(in[i]);
      if (out[i] >= 0) close(out[i]);
      if (err[i] >= 0) close(err[i]);
    }
    return false;
  }
  pid_t pid = fork();
  if (pid < 0) {
    call->err_len = (size_t)snprintf(call->err, sizeof call->err, "fork: %s", strerror(errno));
    close(in[0]), close(in[1]), close(out[0]), close(out[1]), close(err[0]), close(err[1]);
    return false;
  }
  if (pid == 0) {
    setpgid(0, 0); /* its own group: killed with whatever it starts */
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
    signal(SIGPIPE, SIG_DFL);
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    execvp(argv[0], (char* const*)argv);
    char msg[256];
    int n = snprintf(msg, sizeof msg, "cannot run %s: %s\n", argv[0], strerror(errno));
    if (n > 0 && write(2, msg, (size_t)n) < 0) {}
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  close(err[1]);
  fcntl(in[1], F_SETFL, fcntl(in[1], F_GETFL) | O_NONBLOCK);
  /* A remote side that stops reading must not kill this process. */
  struct sigaction ignore = {.sa_handler = SIG_IGN}, saved;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGPIPE, &ignore, &saved);

  const uint8_t* data = input;
  size_t sent = 0;
  int fd_in = in[1], fd_out = out[0], fd_err = err[0];
  if (!input_size) {
    close(fd_in);
    fd_in = -1;
  }
  double deadline = now_ms() + timeout_ms;
  while (fd_out >= 0 || fd_err >= 0) {
    double left = deadline - now_ms();
    if (left <= 0) {
      call->timed_out = true;
      break;
    }
    struct pollfd p[3];
    int np = 0, i_in = -1, i_out = -1, i_err = -1;
    if (fd_in >= 0) p[i_in = np++] = (struct pollfd){fd_in, POLLOUT, 0};
    if (fd_out >= 0) p[i_out = np++] = (struct pollfd){fd_out, POLLIN, 0};
    if (fd_err >= 0) p[i_err = np++] = (struct pollfd){fd_err, POLLIN, 0};
    int pr = poll(p, (nfds_t)np, left > 1e9 ? 1000000000 : (int)ceil(left));
    if (pr < 0 && errno == EINTR) continue;
    if (pr <= 0) continue;
    if (i_in >= 0 && p[i_in].revents) {
      ssize_t n = write(fd_in, data + sent, input_size - sent > 65536 ? 65536 : input_size - sent);
      if (n > 0) sent += (size_t)n;
      if ((n < 0 && errno != EAGAIN && errno != EINTR) || sent == input_size) {
        close(fd_in);
        fd_in = -1;
      }
    }
    int* fds[2] = {&fd_out, &fd_err};
    int idx[2] = {i_out, i_err};
    for (int k = 0; k < 2; ++k) {
      if (idx[k] < 0 || !p[idx[k]].revents) continue;
      char buf[4096];
      ssize_t n = read(*fds[k], buf, sizeof buf);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) {
        close(*fds[k]);
        *fds[k] = -1;
        continue;
      }
      char* dst = k ? call->err : call->out;
      size_t* len = k ? &call->err_len : &call->out_len;
      size_t cap = (k ? sizeof call->err : sizeof call->out) - 1;
      size_t take = (size_t)n < cap - *len ? (size_t)n : cap - *len;
      memcpy(dst + *len, buf, take);
      *len += take;
      dst[*len] = '\0';
    }
  }
  if (fd_in >= 0) close(fd_in);
  if (fd_out >= 0) close(fd_out);
  if (fd_err >= 0) close(fd_err);
  if (call->timed_out) {
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
  }
  while (waitpid(pid, &call->status, 0) < 0 && errno == EINTR) {}
  sigaction(SIGPIPE, &saved, NULL);
  return true;
}

/* ssh's (or the remote shell's) message: standard error on one line, trimmed. */
static const char* call_message(ssh_call_t* call) {
  char* s = call->err;
  for (char* p = s; *p; ++p)
    if (*p == '\n' || *p == '\r' || *p == '\t') *p = ' ';
  while (call->err_len && call->err[call->err_len - 1] == ' ') call->err[--call->err_len] = '\0';
  return call->err_len ? s : "(no message)";
}

/* Exit status of the remote command (ssh passes it on), or -1 when ssh was
 * killed itself. */
static int call_exit(const ssh_call_t* call) {
  return WIFEXITED(call->status) ? WEXITSTATUS(call->status) : -1;
}

/* 'text' for the remote shell. */
static void shell_quote(char* dst, size_t size, const char* text) {
  size_t n = 0;
  if (n + 1 < size) dst[n++] = '\'';
  for (const char* p = text; *p && n + 5 < size; ++p) {
    if (*p == '\'') {
      memcpy(dst + n, "'\\''", 4);
      n += 4;
    } else {
      dst[n++] = *p;
    }
  }
  if (n + 1 < size) dst[n++] = '\'';
  dst[n] = '\0';
}

/* ---- Runners set up so far ---- */

typedef struct runner_entry_t {
  char text[256];        /* the runner string */
  char program[PATH_MAX];
  off_t program_size;
  time_t program_mtime;
  char dir[256];         /* the remote folder */
  bool stale;            /* a call failed: set up afresh (removing dir) next time */
  bool have_reference;   /* the remote reference.ingot is reference_crc/size */
  uint32_t reference_crc;
  size_t reference_size;
} runner_entry_t;

static runner_entry_t g_runners[MAX_RUNNERS];
static uint32_t g_runner_count;

static bool remote_dir_ok(const char* dir) {
  if (dir[0] != '/' || strlen(dir) > 200 || strstr(dir, "..")) return false;
  for (const char* p = dir; *p; ++p)
    if (!safe_name_char(*p, "._-/+")) return false;
  return true;
}

static void remove_remote_dir(const ingot_driver_runner_t* r, const char* dir) {
  char quoted[300], command[400];
  shell_quote(quoted, sizeof quoted, dir);
  snprintf(command, sizeof command, "rm -rf %s", quoted);
  ssh_call_t call;
  ssh_call(r, command, NULL, 0, GRACE_S * 1e3, &call);
}

static void forget_runner(uint32_t i) {
  memmove(&g_runners[i], &g_runners[i + 1], (g_runner_count - i - 1) * sizeof g_runners[0]);
  --g_runner_count;
}

void ingot_driver_measure_runners_release(void) {
  for (uint32_t i = 0; i < g_runner_count; ++i) {
    ingot_driver_runner_t r;
    if (ingot_driver_runner_parse(g_runners[i].text, &r) != INGOT_OK || r.kind != INGOT_DRIVER_RUNNER_SSH) continue;
    remove_remote_dir(&r, g_runners[i].dir);
    ssh_call_t call;
    ssh_call(&r, NULL, NULL, 0, GRACE_S * 1e3, &call); /* ends the shared connection */
  }
  g_runner_count = 0;
  if (g_control_dir[0]) {
    /* Sockets of runners that never got set up: their masters end on their own. */
    DIR* d = opendir(g_control_dir);
    for (struct dirent* e = d ? readdir(d) : NULL; e; e = readdir(d)) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
      char path[sizeof g_control_dir + 300];
      snprintf(path, sizeof path, "%s/%s", g_control_dir, e->d_name);
      unlink(path);
    }
    if (d) closedir(d);
    rmdir(g_control_dir);
    g_control_dir[0] = '\0';
  }
}

static void result_error(ingot_driver_measure_result_t* out, ingot_driver_measure_kind_t kind, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void result_error(ingot_driver_measure_result_t* out, ingot_driver_measure_kind_t kind, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  out->kind = kind;
  vsnprintf(out->message, sizeof out->message, fmt, ap);
  va_end(ap);
}

/* The runner's entry, set up on its machine (a folder holding the program)
 * when it is not yet; NULL with out_result an ERROR when that fails. */
static runner_entry_t* runner_entry(const ingot_driver_runner_t* r, const char* program, const struct stat* st,
                                    ingot_driver_measure_result_t* out_result) {
  char old_dir[256] = "";
  for (uint32_t i = 0; i < g_runner_count; ++i) {
    runner_entry_t* e = &g_runners[i];
    if (strcmp(e->text, r->text) != 0) continue;
    if (!e->stale && strcmp(e->program, program) == 0 && e->program_size == st->st_size &&
        e->program_mtime == st->st_mtime)
      return e;
    snprintf(old_dir, sizeof old_dir, "%s", e->dir); /* a fresh folder, the old one removed */
    forget_runner(i);
    break;
  }
  if (g_runner_count == MAX_RUNNERS) {
    ingot_driver_runner_t oldest;
    if (ingot_driver_runner_parse(g_runners[0].text, &oldest) == INGOT_OK) remove_remote_dir(&oldest, g_runners[0].dir);
    forget_runner(0);
  }
  uint8_t* bytes = NULL;
  size_t size = 0;
  if (ingot_file_read(program, &bytes, &size) != INGOT_OK) {
    result_error(out_result, INGOT_DRIVER_MEASURE_ERROR, "%s", ingot_compiler_error());
    return NULL;
  }
  char command[1024], quoted_old[300] = "";
  if (old_dir[0]) shell_quote(quoted_old, sizeof quoted_old, old_dir);
  snprintf(command, sizeof command,
           "%s%s%sumask 077 && d=$(mktemp -d \"${TMPDIR:-/tmp}/ingot-measure.XXXXXX\") && cat > \"$d/%s\" && "
           "chmod 700 \"$d/%s\" && echo \"$d\"",
           old_dir[0] ? "rm -rf " : "", quoted_old, old_dir[0] ? "; " : "", k_remote_program, k_remote_program);
  ssh_call_t call;
  bool started = ssh_call(r, command, bytes, size, (GRACE_S + (double)size / COPY_BYTES_PER_S) * 1e3, &call);
  free(bytes);
  if (!started) {
    result_error(out_result, INGOT_DRIVER_MEASURE_ERROR, "%s: %s", r->text, call.err);
    return NULL;
  }
  if (call.timed_out) {
    result_error(out_result, INGOT_DRIVER_MEASURE_ERROR, "%s: no answer while copying %s there; ssh was killed",
                 r->text, program);
    return NULL;
  }
  if (call_exit(&call) != 0) {
    result_error(out_result, INGOT_DRIVER_MEASURE_ERROR, "%s: setting up (ssh exit %d): %s", r->text,
                 call_exit(&call), call_message(&call));
    return NULL;
  }
  size_t n = strcspn(call.out, "\r\n");
  call.out[n] = '\0';
  if (!remote_dir_ok(call.out)) {
    result_error(out_result, INGOT_DRIVER_MEASURE_ERROR, "%s: setting up: the remote folder '%.100s' is unusable",
                 r->text, call.out);
    return NULL;
  }
  runner_entry_t* e = &g_runners[g_runner_count++];
  memset(e, 0, sizeof *e);
  snprintf(e->text, sizeof e->text, "%s", r->text);
  snprintf(e->program, sizeof e->program, "%s", program);
  e->program_size = st->st_size;
  e->program_mtime = st->st_mtime;
  snprintf(e->dir, sizeof e->dir, "%s", call.out);
  return e;
}

/* The last "phase N" line of the program's output (0: none). */
static int last_phase(const char* out) {
  int phase = 0;
  for (const char* p = out; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
    if (strncmp(p, "phase ", 6) == 0) phase = atoi(p + 6);
  return phase;
}

static bool find_result_line(const char* out, ingot_measure_summary_t* summary) {
  for (const char* p = out; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
    const char* end = strchr(p, '\n');
    if (!end) return false; /* a line cut off is no answer */
    if (ingot_measure_core_parse_line(p, summary)) return true;
  }
  return false;
}

ingot_status_t ingot_driver_measure_ssh(const ingot_driver_runner_t* r, const void* candidate,
                                        size_t candidate_size, const void* reference, size_t reference_size,
                                        const ingot_driver_measure_config_t* c,
                                        ingot_driver_measure_result_t* out_result) {
  char program[PATH_MAX];
  ingot_status_t s = find_program(program, sizeof program);
  if (s) return s;
  struct stat st;
  if (stat(program, &st) != 0)
    return ingot_fail(INGOT_ERROR_NOT_FOUND, "measure: %s: %s", program, strerror(errno));
  runner_entry_t* e = runner_entry(r, program, &st, out_result);
  if (!e) return INGOT_OK;
  uint32_t entry_index = (uint32_t)(e - g_runners);
  char dir[300], cand_path[400], ref_path[400], prog_path[400], command[2048];
  shell_quote(dir, sizeof dir, e->dir);
  snprintf(cand_path, sizeof cand_path, "%s/candidate.ingot", e->dir);
  snprintf(ref_path, sizeof ref_path, "%s/reference.ingot", e->dir);
  snprintf(prog_path, sizeof prog_path, "%s/%s", e->dir, k_remote_program);
  char q_cand[450], q_ref[450], q_prog[450];
  shell_quote(q_cand, sizeof q_cand, cand_path);
  shell_quote(q_ref, sizeof q_ref, ref_path);
  shell_quote(q_prog, sizeof q_prog, prog_path);
  ssh_call_t call;

  /* The reference, unless the same bytes are there already. */
  uint32_t ref_crc = ingot_crc32(0, reference, reference_size);
  if (!e->have_reference || e->reference_crc != ref_crc || e->reference_size != reference_size) {
    e->have_reference = false;
    snprintf(command, sizeof command, "cat > %s", q_ref);
    if (!ssh_call(r, command, reference, reference_size, (GRACE_S + (double)reference_size / COPY_BYTES_PER_S) * 1e3,
                  &call)) {
      result_error(out_result, INGOT_DRIVER_MEASURE_ERROR, "%s: %s", r->text, call.err);
      return INGOT_OK;
    }
    if (call.timed_out || call_exit(&call) != 0) {
      result_error(out_result, INGOT_DRIVER_MEASURE_ERROR, "%s: copying the reference: %s", r->text,
                   call.timed_out ? "no answer; ssh was killed" : call_message(&call));
      g_runners[entry_index].stale = true;
      return INGOT_OK;
    }
    e->have_reference = true;
    e->reference_crc = ref_crc;
    e->reference_size = reference_size;
  }

  /* The candidate and the run, in one call. */
  const ingot_measure_config_t* m = &c->run;
  snprintf(command, sizeof command,
           "cat > %s && %s --phases --timeout %.17g --rounds %u --repeats %u --warmup %u --min-repeat-ms %.17g "
           "--threads %u --seed %llu --rtol %.17g --atol %.17g%s%s %s %s; s=$?; rm -f %s; exit $s",
           q_cand, q_prog, c->timeout_s, m->rounds, m->repeats, m->warmup, m->min_repeat_ms, m->threads,
           (unsigned long long)m->seed, m->rtol, m->atol, m->wall_clock ? " --wall-clock" : "",
           m->candidate_first ? " --candidate-first" : "", q_cand, q_ref, q_cand);
  double limit_s = c->timeout_s + GRACE_S + (double)candidate_size / COPY_BYTES_PER_S;
  if (!ssh_call(r, command, candidate, candidate_size, limit_s * 1e3, &call)) {
    result_error(out_result, INGOT_DRIVER_MEASURE_ERROR, "%s: %s", r->text, call.err);
    return INGOT_OK;
  }
  int phase = last_phase(call.out);
  const char* phase_name = ingot_measure_core_phase_name(phase);
  if (call.timed_out) {
    result_error(out_result, INGOT_DRIVER_MEASURE_TIMEOUT,
                 "%s: no answer within %.1f s (last while %s); ssh was killed", r->text, limit_s, phase_name);
    g_runners[entry_index].stale = true; /* the shared connection may have gone with it */
    return INGOT_OK;
  }
  ingot_measure_summary_t summary;
  if (find_result_line(call.out, &summary)) {
    ingot_driver_measure_result_from_summary(&summary, out_result);
    return INGOT_OK;
  }
  int code = call_exit(&call);
  if (code > 128 && code < 128 + 65) {
    int sig = code - 128;
    if (sig == SIGALRM) {
      result_error(out_result, INGOT_DRIVER_MEASURE_TIMEOUT,
                   "timed out while %s (after %.1f s) on %s; the remote program was killed", phase_name, c->timeout_s,
                   r->text);
    } else {
      out_result->signal = sig;
      result_error(out_result, INGOT_DRIVER_MEASURE_CRASH, "killed by signal %d (%s) while %s on %s", sig,
                   strsignal(sig), phase_name, r->text);
    }
    return INGOT_OK;
  }
  /* ssh's failure (255), a remote folder gone (127), ... */
  result_error(out_result, INGOT_DRIVER_MEASURE_ERROR, "%s: %s (exit %d): %s", r->text,
               code == 255 ? "ssh failed" : "the measuring program gave no result", code, call_message(&call));
  g_runners[entry_index].stale = true; /* set up afresh next time */
  return INGOT_OK;
}
