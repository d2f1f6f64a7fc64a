/* Measuring, inside driver/: what driver_measure.c and measure_ssh.c share.
 * Private (included by bare name). */
#ifndef INGOT_DRIVER_MEASURE_SSH_H_
#define INGOT_DRIVER_MEASURE_SSH_H_

#include "driver/driver.h"
#include "measure_core.h"

/* The measuring options with every default applied. */
typedef struct ingot_driver_measure_config_t {
  ingot_measure_config_t run; /* what the measuring itself needs (measure_core.h) */
  double timeout_s, margin;
  uint32_t confirmations;
} ingot_driver_measure_config_t;

/* A parsed runner string (driver.h, ingot_driver_measure_options_t.runner). */
typedef enum ingot_driver_runner_kind_t {
  INGOT_DRIVER_RUNNER_LOCAL = 0,
  INGOT_DRIVER_RUNNER_SSH = 1,
} ingot_driver_runner_kind_t;

typedef struct ingot_driver_runner_t {
  ingot_driver_runner_kind_t kind;
  char text[256];  /* the runner as given (for messages and the cache) */
  char user[64];   /* "" : ssh's default */
  char host[128];
  uint32_t port;   /* 0: ssh's default */
} ingot_driver_runner_t;

/* NULL or "local": LOCAL; "ssh://[USER@]HOST[:PORT]": SSH. Anything else is
 * INVALID_ARGUMENT naming the string. */
ingot_status_t ingot_driver_runner_parse(const char* text, ingot_driver_runner_t* out_runner);

/* The result of a measurement from its summary (measurements = 1). */
void ingot_driver_measure_result_from_summary(const ingot_measure_summary_t* summary,
                                              ingot_driver_measure_result_t* out_result);

/* ingot_driver_measure through an ssh runner (measure_ssh.c). */
ingot_status_t ingot_driver_measure_ssh(const ingot_driver_runner_t* runner, const void* candidate,
                                        size_t candidate_size, const void* reference, size_t reference_size,
                                        const ingot_driver_measure_config_t* config,
                                        ingot_driver_measure_result_t* out_result);

#endif /* INGOT_DRIVER_MEASURE_SSH_H_ */
