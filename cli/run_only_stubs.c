/* The subcommands that need the compiler, in the run-only build of the
 * `ingot` tool (-DINGOT_RUNTIME_ONLY=ON -DINGOT_RUN_TOOL=ON, e.g. a cross
 * build for a board): they say where to run them. */
#include "cli.h"

int ingot_cli_compile(int argc, char** argv) {
  (void)argc;
  (void)argv;
  return ingot_cli_error(INGOT_CLI_EXIT_FAILURE,
                         "this ingot is a runtime-only build: compile on the build machine with "
                         "'ingot compile MODEL.onnx -o OUT.ingot --target aarch64' and copy the bundle here");
}

int ingot_cli_check(int argc, char** argv) {
  (void)argc;
  (void)argv;
  return ingot_cli_error(INGOT_CLI_EXIT_FAILURE,
                         "this ingot is a runtime-only build: run 'ingot check' on the build machine");
}

int ingot_cli_log(int argc, char** argv) {
  (void)argc;
  (void)argv;
  return ingot_cli_error(INGOT_CLI_EXIT_FAILURE,
                         "this ingot is a runtime-only build: run 'ingot log' on the build machine");
}

int ingot_cli_tune(int argc, char** argv) {
  (void)argc;
  (void)argv;
  return ingot_cli_error(INGOT_CLI_EXIT_FAILURE,
                         "this ingot is a runtime-only build: run 'ingot tune' on the build machine");
}
