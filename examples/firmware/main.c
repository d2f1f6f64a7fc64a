/* A firmware-style program around the files `ingot compile --emit-firmware`
 * writes: a static arena, one call of ingot_model_run, no malloc. On a board
 * the input would come from a sensor; here (built for the host, as the tests
 * do) it comes from files so that the result can be checked:
 *
 *   main [INPUT0.bin ... OUTPUT0.bin ...]
 *
 * reads each input (raw, INGOT_MODEL_INPUTi_BYTES bytes; zeros without
 * arguments), runs the model, writes each output raw if given a path, and
 * prints the index of the largest element of output 0 (the class of a
 * classifier, for float32 outputs). Exit status 0 on success. */
#include <stdio.h>
#include <string.h>

#include "ingot_model.h"

static unsigned char arena[INGOT_MODEL_ARENA_BYTES] __attribute__((aligned(INGOT_MODEL_ARENA_ALIGN)));

#define EX_MAX(a, b) ((a) > (b) ? (a) : (b))
#if INGOT_MODEL_INPUT_COUNT > 1
#define EX_INPUT_BYTES EX_MAX(INGOT_MODEL_INPUT0_BYTES, INGOT_MODEL_INPUT1_BYTES)
#else
#define EX_INPUT_BYTES INGOT_MODEL_INPUT0_BYTES
#endif
#if INGOT_MODEL_OUTPUT_COUNT > 1
#define EX_OUTPUT_BYTES EX_MAX(INGOT_MODEL_OUTPUT0_BYTES, INGOT_MODEL_OUTPUT1_BYTES)
#else
#define EX_OUTPUT_BYTES INGOT_MODEL_OUTPUT0_BYTES
#endif

static const unsigned input_bytes[] = {
    INGOT_MODEL_INPUT0_BYTES,
#if INGOT_MODEL_INPUT_COUNT > 1
    INGOT_MODEL_INPUT1_BYTES,
#endif
#if INGOT_MODEL_INPUT_COUNT > 2
#error "this example reads at most two inputs"
#endif
};
static const unsigned output_bytes[] = {
    INGOT_MODEL_OUTPUT0_BYTES,
#if INGOT_MODEL_OUTPUT_COUNT > 1
    INGOT_MODEL_OUTPUT1_BYTES,
#endif
#if INGOT_MODEL_OUTPUT_COUNT > 2
#error "this example writes at most two outputs"
#endif
};

/* Static buffers, as firmware would have them. */
static float input_data[INGOT_MODEL_INPUT_COUNT][(EX_INPUT_BYTES + 3) / 4];
static float output_data[INGOT_MODEL_OUTPUT_COUNT][(EX_OUTPUT_BYTES + 3) / 4];

int main(int argc, char** argv) {
  const void* inputs[INGOT_MODEL_INPUT_COUNT];
  void* outputs[INGOT_MODEL_OUTPUT_COUNT];
  if (argc != 1 && argc != 1 + (int)(INGOT_MODEL_INPUT_COUNT + INGOT_MODEL_OUTPUT_COUNT)) {
    fprintf(stderr, "usage: %s [INPUT.bin x%u OUTPUT.bin x%u]\n", argv[0], (unsigned)INGOT_MODEL_INPUT_COUNT,
            (unsigned)INGOT_MODEL_OUTPUT_COUNT);
    return 2;
  }
  for (unsigned i = 0; i < INGOT_MODEL_INPUT_COUNT; ++i) {
    inputs[i] = input_data[i];
    if (argc == 1) continue;
    FILE* f = fopen(argv[1 + i], "rb");
    if (!f || fread(input_data[i], 1, input_bytes[i], f) != input_bytes[i]) {
      fprintf(stderr, "%s: cannot read %u bytes\n", argv[1 + i], input_bytes[i]);
      if (f) fclose(f);
      return 1;
    }
    fclose(f);
  }
  for (unsigned i = 0; i < INGOT_MODEL_OUTPUT_COUNT; ++i) {
    outputs[i] = output_data[i];
  }

  int rc = ingot_model_run(arena, inputs, outputs);
  if (rc != 0) {
    fprintf(stderr, "ingot_model_run: %d\n", rc);
    return 1;
  }

  for (unsigned i = 0; argc > 1 && i < INGOT_MODEL_OUTPUT_COUNT; ++i) {
    const char* path = argv[1 + INGOT_MODEL_INPUT_COUNT + i];
    FILE* f = fopen(path, "wb");
    if (!f || fwrite(output_data[i], 1, output_bytes[i], f) != output_bytes[i] || fclose(f) != 0) {
      fprintf(stderr, "%s: cannot write\n", path);
      return 1;
    }
  }
  if (!strcmp(INGOT_MODEL_OUTPUT0_DTYPE, "float32")) {
    unsigned best = 0;
    for (unsigned k = 1; k < INGOT_MODEL_OUTPUT0_ELEMENTS; ++k)
      if (output_data[0][k] > output_data[0][best]) best = k;
    printf("%s: class %u (%g)\n", INGOT_MODEL_OUTPUT0_NAME, best, (double)output_data[0][best]);
  }
  return 0;
}
