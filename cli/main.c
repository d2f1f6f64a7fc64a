/* The `ingot` driver: dispatches to the subcommands, prints the version and
 * the overview, and holds the helpers the subcommands share (cli.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "runtime/ingot.h"
#include "runtime/ingot_format.h"

static void print_one_line(FILE* f, const char* prefix, const char* fmt, va_list args) {
  char message[4096];
  vsnprintf(message, sizeof(message), fmt, args);
  /* One line, whatever the message holds: scripts count on it. */
  size_t n = strlen(message);
  while (n > 0 && (message[n - 1] == '\n' || message[n - 1] == ' ')) message[--n] = '\0';
  for (char* p = message; *p; ++p) {
    if (*p == '\n' || *p == '\r') *p = ' ';
    /* Other control bytes (names from a model or bundle may hold any): never
     * a line break or a terminal escape sequence. */
    else if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
  }
  fprintf(f, "%s%s\n", prefix, message);
  fflush(f);
}

int ingot_cli_error(int exit_code, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  print_one_line(stderr, "ingot: error: ", fmt, args);
  va_end(args);
  return exit_code;
}

int ingot_cli_usage_error(const char* command, const char* fmt, ...) {
  char message[3072];
  va_list args;
  va_start(args, fmt);
  vsnprintf(message, sizeof(message), fmt, args);
  va_end(args);
  if (command) {
    return ingot_cli_error(INGOT_CLI_EXIT_USAGE, "%s (see 'ingot %s --help')", message, command);
  }
  return ingot_cli_error(INGOT_CLI_EXIT_USAGE, "%s (see 'ingot --help')", message);
}

void ingot_cli_note(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  print_one_line(stderr, "ingot: note: ", fmt, args);
  va_end(args);
}

void ingot_cli_args_init(ingot_cli_args_t* args, const char* command, int argc, char** argv,
                         const char* shorts, const struct option* longs) {
  memset(args, 0, sizeof *args);
  args->command = command;
  args->argc = argc;
  args->argv = argv;
  args->longs = longs;
  /* '-': non-options come back in order (code 1); ':': a missing value is
   * ':', not '?', and getopt prints nothing itself. */
  snprintf(args->shorts, sizeof args->shorts, "-:%s", shorts);
  opterr = 0;
  optind = 0; /* glibc and musl: start a fresh parse */
}

/* The long option whose val is `val`, or NULL. */
static const struct option* long_by_val(const ingot_cli_args_t* args, int val) {
  for (const struct option* o = args->longs; o && o->name; ++o)
    if (o->val == val) return o;
  return NULL;
}

/* A usage error for the argument at argv[word] (what getopt refused). */
static int args_error(ingot_cli_args_t* args, int code, int word) {
  const char* text = word < args->argc ? args->argv[word] : "";
  int c = optopt;
  if (code == ':') {
    const struct option* o = c >= 256 || strncmp(text, "--", 2) == 0 ? long_by_val(args, c) : NULL;
    if (o) ingot_cli_usage_error(args->command, "option '--%s' needs a value", o->name);
    else ingot_cli_usage_error(args->command, "option '-%c' needs a value", c);
    return INGOT_CLI_ARG_BAD;
  }
  if (strncmp(text, "--", 2) == 0) {
    /* An unknown or ambiguous long name, or a value given to a flag. */
    const char* eq = strchr(text, '=');
    int n = eq ? (int)(eq - text) : (int)strlen(text);
    if (c != 0 && eq) {
      ingot_cli_usage_error(args->command, "option '%.*s' takes no value", n, text);
      return INGOT_CLI_ARG_BAD;
    }
    char which[256] = "";
    int matches = 0;
    size_t used = 0;
    for (const struct option* o = args->longs; o && o->name && n > 2; ++o) {
      if (strncmp(o->name, text + 2, (size_t)n - 2) != 0) continue;
      ++matches;
      if (used < sizeof which)
        used += (size_t)snprintf(which + used, sizeof which - used, "%s--%s", used ? ", " : "", o->name);
    }
    if (matches > 1)
      ingot_cli_usage_error(args->command, "ambiguous option '%.*s' (%s)", n, text, which);
    else
      ingot_cli_usage_error(args->command, "unknown option '%.*s'", n, text);
    return INGOT_CLI_ARG_BAD;
  }
  /* A short option: the whole word when it is the word's first letter
   * ("-arch=sm_90" where no target came before). */
  if (text[0] == '-' && text[1] == (char)c)
    ingot_cli_usage_error(args->command, "unknown option '%s'", text);
  else
    ingot_cli_usage_error(args->command, "unknown option '-%c' in '%s'", c, text);
  return INGOT_CLI_ARG_BAD;
}

int ingot_cli_args_next(ingot_cli_args_t* args) {
  args->value = NULL;
  if (!args->rest) {
    int word = optind > 0 ? optind : 1;
    int c = getopt_long(args->argc, args->argv, args->shorts, args->longs, NULL);
    if (c == '?' || c == ':') return args_error(args, c, word);
    if (c != -1) {
      args->value = optarg;
      return c;
    }
    args->rest = true; /* the end, or "--" */
  }
  if (optind >= args->argc) return INGOT_CLI_ARG_END;
  args->value = args->argv[optind++];
  return INGOT_CLI_ARG_POSITIONAL;
}

static bool is_target_option(const char* arg) {
  static const char* const prefixes[] = {"-arch=", "-mcpu=", "-mattr=", "-mtriple="};
  for (size_t k = 0; k < sizeof prefixes / sizeof prefixes[0]; ++k)
    if (strncmp(arg, prefixes[k], strlen(prefixes[k])) == 0) return true;
  return false;
}

const char* ingot_cli_args_target(ingot_cli_args_t* args, char* buf, size_t cap) {
  const char* value = args->value;
  /* After an option with its value, getopt has finished that word (or two):
   * optind is the next one, which may be moved past in in-order mode. */
  if (optind >= args->argc || !is_target_option(args->argv[optind])) return value;
  int n = snprintf(buf, cap, "%s", value);
  for (; optind < args->argc && is_target_option(args->argv[optind]); ++optind) {
    if (n < 0 || (size_t)n >= cap) return NULL;
    n += snprintf(buf + n, cap - (size_t)n, " %s", args->argv[optind]);
  }
  return n >= 0 && (size_t)n < cap ? buf : NULL;
}

bool ingot_cli_parse_int(const char* text, int64_t min, int64_t max, int64_t* out_value) {
  if (!text || !*text) return false;
  const char* p = text;
  if (*p == '+' || *p == '-') ++p;
  if (*p < '0' || *p > '9') return false; /* strtoll would skip spaces */
  errno = 0;
  char* end = NULL;
  long long v = strtoll(text, &end, 10);
  if (errno != 0 || *end != '\0' || v < min || v > max) return false;
  *out_value = (int64_t)v;
  return true;
}

static void print_version(void) {
  uint32_t v = ingot_version();
  printf("ingot %u.%u.%u (runtime %u.%u.%u, bundle format %u, kernel ABI %u)\n",
         INGOT_VERSION_MAJOR, INGOT_VERSION_MINOR, INGOT_VERSION_PATCH, (v >> 16) & 0xffu,
         (v >> 8) & 0xffu, v & 0xffu, INGOT_FORMAT_VERSION, INGOT_KERNEL_ABI_VERSION);
}

static void print_help(void) {
  printf(
      "usage: ingot <command> [options]\n"
      "\n"
      "Ingot compiles an ONNX model into one self-contained bundle file and runs it.\n"
      "\n"
      "commands:\n"
      "  compile   ONNX model -> .ingot bundle\n"
      "  run       run a bundle on .npy inputs; write .npz outputs, or benchmark\n"
      "  inspect   show a bundle's inputs, outputs, targets, sections, signer and memory plan\n"
      "  verify    check a bundle through (format, checksums, signature, each variant's\n"
      "            code loads) without running it\n"
      "  check     list everything in an ONNX model that Ingot cannot compile\n"
      "  tune      search each kernel's schedules, append to a tuning log\n"
      "  log       tuning logs: stats, best records, merge\n"
      "  keygen    make an Ed25519 key pair for signing bundles\n"
      "  sign      sign a bundle in place (ingot run --require-signature checks it)\n"
      "\n"
      "options:\n"
      "  -h, --help     show this help (each command has its own: ingot run --help)\n"
      "  -V, --version  show the version\n"
      "\n"
      "exit codes: 0 success, 1 failure, 2 bad command line.\n"
      "examples:\n"
      "  ingot compile model.onnx -o model.ingot --input-shape input=1x3x224x224\n"
      "  ingot run model.ingot --input input=image.npy --output out.npz\n"
      "  ingot inspect model.ingot --json\n"
      "  ingot check model.onnx --json\n");
}

int main(int argc, char** argv) {
  /* SIGINT, SIGTERM, SIGHUP: temporary bundles and tool folders go first. */
  ingot_cleanup_install();
  if (argc < 2) {
    return ingot_cli_usage_error(NULL, "no command given");
  }
  const char* command = argv[1];
  if (strcmp(command, "-h") == 0 || strcmp(command, "--help") == 0 ||
      strcmp(command, "help") == 0) {
    print_help();
    return INGOT_CLI_EXIT_OK;
  }
  if (strcmp(command, "-V") == 0 || strcmp(command, "--version") == 0 ||
      strcmp(command, "version") == 0) {
    print_version();
    return INGOT_CLI_EXIT_OK;
  }
  if (strcmp(command, "compile") == 0) return ingot_cli_compile(argc - 1, argv + 1);
  if (strcmp(command, "run") == 0) return ingot_cli_run(argc - 1, argv + 1);
  if (strcmp(command, "inspect") == 0) return ingot_cli_inspect(argc - 1, argv + 1);
  if (strcmp(command, "verify") == 0) return ingot_cli_verify(argc - 1, argv + 1);
  if (strcmp(command, "check") == 0) return ingot_cli_check(argc - 1, argv + 1);
  if (strcmp(command, "keygen") == 0) return ingot_cli_keygen(argc - 1, argv + 1);
  if (strcmp(command, "sign") == 0) return ingot_cli_sign(argc - 1, argv + 1);
  if (strcmp(command, "log") == 0) return ingot_cli_log(argc - 1, argv + 1);
  if (strcmp(command, "tune") == 0) return ingot_cli_tune(argc - 1, argv + 1);
  if (command[0] == '-') return ingot_cli_usage_error(NULL, "unknown option '%s'", command);
  return ingot_cli_usage_error(NULL, "unknown command '%s'", command);
}
