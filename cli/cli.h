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

#include "base/base.h"

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
int ingot_cli_check(int argc, char** argv);
int ingot_cli_log(int argc, char** argv);
int ingot_cli_tune(int argc, char** argv);

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

/* Option parsing shared by the subcommands. ingot_cli_flag_value matches
 * argv[*i] against `flag` in either form "--flag VALUE" or "--flag=VALUE";
 * on a match it sets *out_value (NULL when the value is missing) and advances
 * *i past what it consumed. */
bool ingot_cli_flag_value(int argc, char** argv, int* i, const char* flag,
                          const char** out_value);
/* A target's options may follow its --target value as separate arguments,
 * unquoted: `--target cuda -arch=sm_90 --target llvm -mcpu=znver3`. The
 * arguments from argv[*i] on that start with -arch=, -mcpu=, -mattr= or
 * -mtriple= join `value` with one space each into buf (cap bytes), and *i
 * moves past them. Returns `value` itself when none follows, buf when some
 * did, NULL when the joined string does not fit (an error for the caller). */
const char* ingot_cli_target_join(int argc, char** argv, int* i, const char* value, char* buf, size_t cap);
#define INGOT_CLI_TARGET_BYTES 256 /* room for one joined target string */

/* Parses a whole decimal integer in [min, max]; false if it is not one. */
bool ingot_cli_parse_int(const char* text, int64_t min, int64_t max, int64_t* out_value);

#endif /* INGOT_CLI_H_ */
