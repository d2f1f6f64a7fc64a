/* The host-side conversions of weight-only compression (graph/passes_weights.c)
 * as a filter, for compress_weights_test.py to check against numpy:
 *
 *   compress_weights_tool i8 NUMEL OUTER_SIZE INNER  < float32 > int8 q, then float32 scales
 *   compress_weights_tool f16|bf16 NUMEL             < float32 > uint16 bits
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s i8 NUMEL OUTER_SIZE INNER | f16 NUMEL | bf16 NUMEL\n", argv[0]);
    return 2;
  }
  long long numel = atoll(argv[2]);
  if (numel <= 0) return 2;
  float* w = malloc(sizeof(float) * (size_t)numel);
  if (!w || fread(w, sizeof(float), (size_t)numel, stdin) != (size_t)numel) return 1;
  if (!strcmp(argv[1], "i8")) {
    if (argc != 5) return 2;
    long long outer = atoll(argv[3]), inner = atoll(argv[4]);
    if (outer <= 0 || inner <= 0 || numel % outer) return 2;
    long long channels = (numel / outer) * inner;
    int8_t* q = malloc((size_t)numel);
    float* scales = malloc(sizeof(float) * (size_t)channels);
    ingot_quantize_i8_channels(w, numel, outer, inner, q, scales);
    fwrite(q, 1, (size_t)numel, stdout);
    fwrite(scales, sizeof(float), (size_t)channels, stdout);
    free(q);
    free(scales);
  } else {
    bool bf16 = !strcmp(argv[1], "bf16");
    for (long long i = 0; i < numel; ++i) {
      uint16_t h = bf16 ? ingot_f32_to_bf16_bits(w[i]) : ingot_f32_to_f16_bits(w[i]);
      fwrite(&h, sizeof(h), 1, stdout);
    }
  }
  free(w);
  return 0;
}
