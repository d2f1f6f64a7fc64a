/* `ingot check`: the command-line front end of ingot_driver_check
 * (driver/driver.h), which lists everything a model needs that Ingot does
 * not support, in one pass. Here: parse the flags, print the report (text or
 * --json), exit 0 when there is nothing, 1 when there is anything. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "driver/driver.h"

/* ---- the subcommand ---- */

static const char kCheckHelp[] =
    "usage: ingot check MODEL.onnx [options]\n"
    "\n"
    "Lists everything in the model that Ingot cannot compile, in one pass: unsupported\n"
    "ops, attributes, dtypes and unresolved dimensions, with the node names. Nodes\n"
    "downstream of a problem are skipped, not reported again. Exits 0 and prints\n"
    "\"ok: N nodes, all supported\" when there is nothing; 1 when there is anything.\n"
    "\n"
    "options:\n"
    "  --input-shape NAME=DIMS  fix a graph input's shape, as for compile (repeatable)\n"
    "  --json                   print {\"ok\", \"nodes\", \"skipped\", \"problems\": [{\"node\",\n"
    "                           \"op\", \"kind\": op|attribute|dtype|shape, \"message\"}]}\n"
    "  -h, --help               show this help\n";

int ingot_cli_check(int argc, char** argv) {
  const char* model = NULL;
  const char* shapes[64];
  int shape_count = 0;
  bool json = false;
  static const struct option longs[] = {
      {"help", no_argument, NULL, 'h'},
      {"json", no_argument, NULL, 256},
      {"input-shape", required_argument, NULL, 257},
      {NULL, 0, NULL, 0},
  };
  ingot_cli_args_t args;
  ingot_cli_args_init(&args, "check", argc, argv, "h", longs);
  for (int c; (c = ingot_cli_args_next(&args)) != INGOT_CLI_ARG_END;) {
    int rc = 0;
    switch (c) {
      case INGOT_CLI_ARG_BAD: return INGOT_CLI_EXIT_USAGE;
      case 'h': fputs(kCheckHelp, stdout); return INGOT_CLI_EXIT_OK;
      case 256: json = true; break;
      case 257:
        if (shape_count == 64) return ingot_cli_usage_error("check", "too many --input-shape options%s", "");
        if ((rc = ingot_cli_check_input_shape("check", args.value))) return rc;
        shapes[shape_count++] = args.value;
        break;
      case INGOT_CLI_ARG_POSITIONAL:
        if (model) return ingot_cli_usage_error("check", "unexpected argument '%s': one model at a time", args.value);
        model = args.value;
        break;
      default: return ingot_cli_usage_error("check", "unhandled option (a bug)%s", "");
    }
  }
  if (!model) return ingot_cli_usage_error("check", "no model given%s", "");

  ingot_driver_check_report_t r;
  ingot_compiler_error_clear();
  ingot_driver_options_t options = {.model_path = model, .input_shapes = shapes, .input_shape_count = (uint32_t)shape_count};
  ingot_status_t s = ingot_driver_check(&options, &r);
  if (s) return ingot_cli_error(INGOT_CLI_EXIT_FAILURE, "%s", ingot_compiler_error());
  bool ok = r.problems.count == 0;
  if (json) {
    json_t* root = json_object();
    json_object_set_new(root, "ok", json_boolean(ok));
    json_object_set_new(root, "nodes", json_integer(r.node_count));
    json_object_set_new(root, "skipped", json_integer(r.skipped));
    json_t* list = json_array();
    for (size_t i = 0; i < r.problems.count; ++i) {
      const ingot_driver_problem_t* p = &r.problems.data[i];
      json_t* o = json_object();
      json_object_set_new(o, "node", p->node ? json_string(p->node) : json_null());
      json_object_set_new(o, "op", p->op ? json_string(p->op) : json_null());
      json_object_set_new(o, "kind", json_string(p->kind));
      json_object_set_new(o, "message", json_string(p->message));
      json_array_append_new(list, o);
    }
    json_object_set_new(root, "problems", list);
    char* text = json_dumps(root, JSON_INDENT(2));
    if (text) printf("%s\n", text);
    free(text);
    json_decref(root);
  } else if (ok) {
    printf("ok: %u nodes, all supported\n", r.node_count);
  } else {
    printf("%s: %zu problem%s (%u nodes, %u skipped downstream of a problem):\n", model, r.problems.count,
           r.problems.count == 1 ? "" : "s", r.node_count, r.skipped);
    for (size_t i = 0; i < r.problems.count; ++i) {
      ingot_strbuf_t sb = {0};
      ingot_driver_problem_format(&r.problems.data[i], &sb);
      printf("  [%s] %s\n", r.problems.data[i].kind, sb.data ? sb.data : "");
      ingot_strbuf_free(&sb);
    }
  }
  ingot_driver_check_report_free(&r);
  return ok ? INGOT_CLI_EXIT_OK : INGOT_CLI_EXIT_FAILURE;
}
