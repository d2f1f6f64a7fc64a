/* A program outside Ingot's tree that uses the installed runtime: opens the
 * bundle named on its command line, runs it once on zero inputs and prints
 * what it loaded. Built by tests/package/package_test.sh three ways. */
#include <ingot.h>
#include <stdio.h>

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: consumer MODEL.ingot\n");
    return 2;
  }
  ingot_bundle_t* bundle = NULL;
  ingot_session_t* session = NULL;
  ingot_status_t s = ingot_bundle_open_file(argv[1], NULL, &bundle);
  if (!s) s = ingot_session_create(bundle, NULL, &session);
  if (!s) s = ingot_session_run(session);
  if (s) {
    fprintf(stderr, "consumer: %s\n", ingot_status_name(s));
    ingot_session_release(session);
    ingot_bundle_release(bundle);
    return 1;
  }
  printf("ingot %u: ran %s (%u inputs, %u outputs, target %s)\n", ingot_version(), argv[1],
         ingot_bundle_input_count(bundle), ingot_bundle_output_count(bundle), ingot_bundle_target(bundle));
  ingot_session_release(session);
  ingot_bundle_release(bundle);
  return 0;
}
