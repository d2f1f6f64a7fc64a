/* The failure counter and CHECK of the base/ tests: a failed condition is
 * printed with its place and counted; main returns non-zero if any. */
#ifndef INGOT_TESTS_BASE_CHECK_H
#define INGOT_TESTS_BASE_CHECK_H

#include <stdio.h>

static int g_failures;

#define CHECK(cond, ...)                                   \
  do {                                                     \
    if (!(cond)) {                                         \
      ++g_failures;                                        \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                        \
      fputc('\n', stderr);                                 \
    }                                                      \
  } while (0)

#endif
