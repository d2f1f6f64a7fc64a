/* `ingot log`: tuning logs as a whole (schedule/schedule.h does the JSON).
 *
 *   ingot log stats LOG [--json]      per workload and target: records, best
 *                                     and default time, errors
 *   ingot log best LOG -o OUT         the fastest record of each workload
 *                                     and target
 *   ingot log merge A B ... -o OUT    every record once, in a fixed order
 *
 * Outputs are written atomically; a missing file or malformed line fails
 * with one message naming the file and line (exit 1), a wrong command line
 * exits 2. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "cli.h"
#include "schedule/schedule.h"

#define LOG_MAX_INPUTS 256

static void log_usage(FILE* out) {
  fprintf(out,
          "usage: ingot log stats LOG [--json]\n"
          "       ingot log best LOG -o OUT\n"
          "       ingot log merge LOG LOG... -o OUT\n"
          "\n"
          "Reads tuning logs (JSON lines, one record a line; see README).\n"
          "\n"
          "  stats   per workload and target: records, the best time, the default\n"
          "          schedule's time (records marked \"default\": true) and error records\n"
          "  best    one record per workload and target: the fastest that is not an error\n"
          "  merge   every record of every log, exact duplicates once, sorted by\n"
          "          workload, target and time\n"
          "\n"
          "options:\n"
          "  -o, --output PATH   the log to write (best, merge)\n"
          "  --json              stats as one JSON object\n");
}

int ingot_cli_log(int argc, char** argv) {
  if (argc < 2) return ingot_cli_usage_error("log", "no subcommand given: stats, best or merge%s", "");
  const char* sub = argv[1];
  if (!strcmp(sub, "-h") || !strcmp(sub, "--help")) {
    log_usage(stdout);
    return INGOT_CLI_EXIT_OK;
  }
  bool is_stats = !strcmp(sub, "stats"), is_best = !strcmp(sub, "best"), is_merge = !strcmp(sub, "merge");
  if (!is_stats && !is_best && !is_merge) return ingot_cli_usage_error("log", "unknown subcommand '%s'", sub);
  const char* inputs[LOG_MAX_INPUTS];
  uint32_t input_count = 0;
  const char* output = NULL;
  bool json = false;
  static const struct option longs[] = {
      {"help", no_argument, NULL, 'h'},
      {"output", required_argument, NULL, 'o'},
      {"json", no_argument, NULL, 256},
      {NULL, 0, NULL, 0},
  };
  ingot_cli_args_t args;
  ingot_cli_args_init(&args, "log", argc - 1, argv + 1, "ho:", longs);
  for (int c; (c = ingot_cli_args_next(&args)) != INGOT_CLI_ARG_END;) {
    switch (c) {
      case INGOT_CLI_ARG_BAD: return INGOT_CLI_EXIT_USAGE;
      case 'h': log_usage(stdout); return INGOT_CLI_EXIT_OK;
      case 'o':
        if (!*args.value) return ingot_cli_usage_error("log", "option '--output' needs a value%s", "");
        output = args.value;
        break;
      case 256: json = true; break;
      case INGOT_CLI_ARG_POSITIONAL:
        if (input_count == LOG_MAX_INPUTS) return ingot_cli_usage_error("log", "at most %d logs", LOG_MAX_INPUTS);
        inputs[input_count++] = args.value;
        break;
      default: return ingot_cli_usage_error("log", "unhandled option (a bug)%s", "");
    }
  }
  if (input_count == 0) return ingot_cli_usage_error("log", "%s: no log given", sub);
  if (!is_merge && input_count > 1)
    return ingot_cli_usage_error("log", "%s: one log at a time ('%s' is a second)", sub, inputs[1]);
  if (is_stats && output) return ingot_cli_usage_error("log", "stats prints; it takes no -o%s", "");
  if (!is_stats && json) return ingot_cli_usage_error("log", "%s: --json is for stats", sub);
  if (!is_stats && !output) return ingot_cli_usage_error("log", "%s: no output given: add -o OUT", sub);

  ingot_compiler_error_clear();
  ingot_strbuf_t sb = {0};
  ingot_status_t s;
  if (is_stats)
    s = ingot_tuning_log_stats(inputs[0], json, &sb);
  else if (is_best)
    s = ingot_tuning_log_best(inputs[0], &sb);
  else
    s = ingot_tuning_log_merge(inputs, input_count, &sb);
  if (!s) {
    if (is_stats)
      fputs(sb.data ? sb.data : "", stdout);
    else
      s = ingot_file_write_atomic(output, sb.data ? sb.data : "", sb.data ? strlen(sb.data) : 0);
  }
  ingot_strbuf_free(&sb);
  if (s) return ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "%s", ingot_compiler_error());
  return INGOT_CLI_EXIT_OK;
}
