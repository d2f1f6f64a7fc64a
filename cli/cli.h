/* Private to cli/: the subcommands of the `ingot` driver and the helpers they
 * share. Not installed, not used outside this folder.
 *
 * Conventions every subcommand follows (scripts rely on them):
 *   exit 0  success
 *   exit 1  the work failed (bad model, corrupt bundle, I/O, ...)
 *   exit 2  the command line was wrong (unknown flag, missing argument)
 * A failure prints exactly one line on stderr, starting "ingot: error: ".
 * Output files are written atomically (ingot_file_write_atomic): a failed
 * command leaves no partial file behind. */
#ifndef INGOT_CLI_H_
#define INGOT_CLI_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <getopt.h>

#include "base/base.h"
#include "runtime/ingot.h"

enum {
  INGOT_CLI_EXIT_OK = 0,
  INGOT_CLI_EXIT_FAILURE = 1,
  INGOT_CLI_EXIT_USAGE = 2,
};

/* Subcommands. argv[0] is the subcommand's name ("compile", ...); each returns
 * the process exit code. */
int ingot_cli_compile(int argc, char** argv);
int ingot_cli_run(int argc, char** argv);
int ingot_cli_inspect(int argc, char** argv);
int ingot_cli_verify(int argc, char** argv);
int ingot_cli_check(int argc, char** argv);
int ingot_cli_log(int argc, char** argv);
int ingot_cli_tune(int argc, char** argv);

/* `ingot inspect --plan` / `--svg FILE` (inspect_plan.c): the memory plan of
 * the bundle at `path` as a table on stdout (`table`; JSON with `as_json`;
 * rows by first step, or by offset when `sort` is "offset") and/or an SVG
 * picture written atomically to `svg_path` (NULL: none). Returns the exit
 * code, having printed the one error line on failure. */
int ingot_cli_inspect_plan(const char* path, bool table, bool as_json, const char* sort, const char* svg_path);

int ingot_cli_keygen(int argc, char** argv);
int ingot_cli_sign(int argc, char** argv);

/* Reads a key file written by `ingot keygen` (keygen.c): secret keys are the
 * 64-byte libsodium form, public keys INGOT_PUBLIC_KEY_BYTES. Fails with a
 * message (ingot_fail) naming the file. */
ingot_status_t ingot_cli_key_read(const char* path, bool secret, uint8_t* out);

/* Prints "ingot: error: <message>" as one line on stderr (newlines in the
 * message become spaces) and returns `exit_code`. */
int ingot_cli_error(int exit_code, const char* fmt, ...) INGOT_PRINTF(2, 3);
/* Same, for a wrong command line: appends " (see 'ingot <command> --help')"
 * and returns INGOT_CLI_EXIT_USAGE. */
int ingot_cli_usage_error(const char* command, const char* fmt, ...) INGOT_PRINTF(2, 3);
/* Prints "ingot: note: <message>" on stderr. */
void ingot_cli_note(const char* fmt, ...) INGOT_PRINTF(1, 2);

/* Option parsing shared by the subcommands: getopt_long in GNU's in-order
 * mode, so every option takes "--name VALUE" and "--name=VALUE" (a unique
 * prefix of a long name works too), short ones "-o VALUE", "-oVALUE" and
 * clusters ("-qv"), and positional arguments come back in their place among
 * the options ("--" ends the options). Usage errors are printed here, one
 * line, naming the option and the command.
 *
 *   ingot_cli_args_t args;
 *   ingot_cli_args_init(&args, "compile", argc, argv, "ho:qv", kLongOptions);
 *   for (int c; (c = ingot_cli_args_next(&args)) != INGOT_CLI_ARG_END;)
 *     switch (c) { case 'o': out = args.value; break; ...
 *                  case INGOT_CLI_ARG_POSITIONAL: ...; case INGOT_CLI_ARG_BAD: return INGOT_CLI_EXIT_USAGE; }
 *
 * `shorts` lists the short options as getopt spells them ("o:" takes a
 * value); `longs` ends with a zero entry; a long option with no short form
 * uses a `val` of 256 or more. Uses getopt's globals: one parse at a time. */
typedef struct ingot_cli_args_t {
  const char* command;
  int argc;
  char** argv;
  const struct option* longs;
  char shorts[64];   /* "-:" and the caller's short options */
  const char* value; /* the option's value, or the positional argument */
  bool rest;         /* after "--": only positional arguments remain */
} ingot_cli_args_t;

enum {
  INGOT_CLI_ARG_END = -1,
  INGOT_CLI_ARG_BAD = -2,       /* a usage error, already printed: exit 2 */
  INGOT_CLI_ARG_POSITIONAL = 1, /* value holds a non-option argument */
};

void ingot_cli_args_init(ingot_cli_args_t* args, const char* command, int argc, char** argv,
                         const char* shorts, const struct option* longs);
int ingot_cli_args_next(ingot_cli_args_t* args);

/* A target's options may follow its --target value as separate arguments,
 * unquoted: `--target cuda -arch=sm_90 --target llvm -mcpu=znver3`. Called
 * right after the option whose value is the target: the arguments that come
 * next and start with -arch=, -mcpu=, -mattr= or -mtriple= join args->value
 * with one space each into buf (cap bytes), and the parse moves past them.
 * Returns args->value itself when none follows, buf when some did, NULL when
 * the joined string does not fit (an error for the caller). */
const char* ingot_cli_args_target(ingot_cli_args_t* args, char* buf, size_t cap);
#define INGOT_CLI_TARGET_BYTES 256 /* room for one joined target string */

/* Values checked before any work, so that a wrong one is a usage error
 * (exit 2, printed here): an --input-shape NAME=DIMS (its syntax: whether the
 * model has that input is the compiler's to say, exit 1), and a --target
 * string (target/target.h's grammar and tables). 0 when fine, else
 * INGOT_CLI_EXIT_USAGE. */
int ingot_cli_check_input_shape(const char* command, const char* spec);
int ingot_cli_check_target(const char* command, const char* target);

/* Threads a session may run (the runtime's limit, runtime/ingot.h); --threads
 * takes 1 to this. */
#define INGOT_CLI_THREADS_MAX INGOT_SESSION_THREADS_MAX

/* Parses a whole decimal integer in [min, max]; false if it is not one. */
bool ingot_cli_parse_int(const char* text, int64_t min, int64_t max, int64_t* out_value);

#endif /* INGOT_CLI_H_ */
