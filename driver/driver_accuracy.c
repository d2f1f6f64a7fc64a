/* The accuracy of compressed weights (driver.h, ingot_driver_compare_bundles):
 * a bundle and its float32 reference run once each on the same inputs
 * through the runtime API, and each output's largest error is measured.
 *
 * Inputs the caller does not give are random and deterministic: a
 * splitmix64 stream from the seed, float inputs uniform in [-1, 1),
 * integer and bool inputs 0 or 1 (valid token ids, types and masks for
 * any vocabulary), in input order. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver_internal.h"
#include "graph/graph.h"
#include "runtime/ingot.h"

static uint64_t splitmix64(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Element i of a tensor of `dtype` as a double (NaN for a dtype it cannot read). */
static double element(const void* data, ingot_dtype_t dtype, size_t i) {
  switch (dtype) {
    case INGOT_DTYPE_F32: return ((const float*)data)[i];
    case INGOT_DTYPE_F64: return ((const double*)data)[i];
    case INGOT_DTYPE_F16: return ingot_half_to_double(((const uint16_t*)data)[i]);
    case INGOT_DTYPE_BF16: return ingot_bf16_to_double(((const uint16_t*)data)[i]);
    case INGOT_DTYPE_U8: return ((const uint8_t*)data)[i];
    case INGOT_DTYPE_BOOL: return ((const uint8_t*)data)[i];
    case INGOT_DTYPE_I8: return ((const int8_t*)data)[i];
    case INGOT_DTYPE_I16: return ((const int16_t*)data)[i];
    case INGOT_DTYPE_U16: return ((const uint16_t*)data)[i];
    case INGOT_DTYPE_I32: return ((const int32_t*)data)[i];
    case INGOT_DTYPE_U32: return ((const uint32_t*)data)[i];
    case INGOT_DTYPE_I64: return (double)((const int64_t*)data)[i];
    case INGOT_DTYPE_U64: return (double)((const uint64_t*)data)[i];
    default: return NAN;
  }
}

/* Fills a tensor with random values as the header says. */
static void fill_random(void* data, const ingot_tensor_info_t* info, uint64_t* state) {
  size_t n = info->bytes / (ingot_dtype_size(info->dtype) ? ingot_dtype_size(info->dtype) : 1);
  for (size_t i = 0; i < n; ++i) {
    uint64_t r = splitmix64(state);
    float u = (float)((double)(r >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0);
    int bit = (int)(r >> 63);
    switch (info->dtype) {
      case INGOT_DTYPE_F32: ((float*)data)[i] = u; break;
      case INGOT_DTYPE_F64: ((double*)data)[i] = u; break;
      case INGOT_DTYPE_F16: ((uint16_t*)data)[i] = ingot_f32_to_f16_bits(u); break;
      case INGOT_DTYPE_BF16: ((uint16_t*)data)[i] = ingot_f32_to_bf16_bits(u); break;
      case INGOT_DTYPE_I64: ((int64_t*)data)[i] = bit; break;
      case INGOT_DTYPE_U64: ((uint64_t*)data)[i] = (uint64_t)bit; break;
      case INGOT_DTYPE_I32: ((int32_t*)data)[i] = bit; break;
      case INGOT_DTYPE_U32: ((uint32_t*)data)[i] = (uint32_t)bit; break;
      case INGOT_DTYPE_I16: ((int16_t*)data)[i] = (int16_t)bit; break;
      case INGOT_DTYPE_U16: ((uint16_t*)data)[i] = (uint16_t)bit; break;
      default: ((uint8_t*)data)[i] = (uint8_t)bit; break; /* int8, uint8, bool */
    }
  }
}

static ingot_status_t runtime_fail(ingot_status_t s, const char* what) {
  return ingot_fail(s, "accuracy check: %s: %s", what, ingot_last_error());
}

ingot_status_t ingot_driver_compare_bundles(const void* bundle, size_t bundle_size, const void* reference,
                                            size_t reference_size, const ingot_driver_const_t* inputs,
                                            uint32_t input_count, uint64_t seed, ingot_driver_accuracy_t* out) {
  memset(out, 0, sizeof(*out));
  ingot_bundle_t* b[2] = {NULL, NULL};
  ingot_session_t* sess[2] = {NULL, NULL};
  ingot_bundle_options_t bo = {.device = "cpu"};
  ingot_status_t s = ingot_bundle_open_memory(bundle, bundle_size, &bo, &b[0]);
  if (s) return runtime_fail(s, "open the bundle");
  if ((s = ingot_bundle_open_memory(reference, reference_size, &bo, &b[1]))) {
    ingot_bundle_release(b[0]);
    return runtime_fail(s, "open the float32 bundle");
  }
  uint32_t nin = ingot_bundle_input_count(b[0]), nout = ingot_bundle_output_count(b[0]);
  if (nin != ingot_bundle_input_count(b[1]) || nout != ingot_bundle_output_count(b[1])) {
    s = ingot_fail(INGOT_ERROR_INTERNAL, "accuracy check: the bundles have different inputs or outputs");
    goto done;
  }
  ingot_session_options_t so = {.threads = 0};
  for (int k = 0; k < 2 && !s; ++k)
    if ((s = ingot_session_create(b[k], &so, &sess[k]))) s = runtime_fail(s, "create a session");
  if (s) goto done;
  /* Every given input names one of the bundle's, with its dtype and size. */
  for (uint32_t g = 0; g < input_count; ++g) {
    uint32_t idx;
    if (ingot_bundle_input_index(b[0], inputs[g].name, &idx) != INGOT_OK) {
      s = ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "--accuracy-input %s: the model has no input of that name",
                     inputs[g].name);
      goto done;
    }
    ingot_tensor_info_t info;
    ingot_bundle_input_info(b[0], idx, &info);
    uint64_t n = 1;
    for (uint32_t d = 0; d < inputs[g].rank; ++d) n *= (uint64_t)inputs[g].dims[d];
    if (inputs[g].dtype != info.dtype || n * ingot_dtype_size(info.dtype) != info.bytes) {
      s = ingot_fail(INGOT_ERROR_INVALID_ARGUMENT, "--accuracy-input %s: the file holds %llu %s values, the input %zu bytes of %s",
                     inputs[g].name, (unsigned long long)n, ingot_dtype_name(inputs[g].dtype), info.bytes,
                     ingot_dtype_name(info.dtype));
      goto done;
    }
  }
  uint64_t state = seed;
  for (uint32_t i = 0; i < nin; ++i) {
    ingot_tensor_info_t info;
    ingot_bundle_input_info(b[0], i, &info);
    void* x0 = ingot_session_input_data(sess[0], i);
    void* x1 = ingot_session_input_data(sess[1], i);
    const ingot_driver_const_t* given = NULL;
    for (uint32_t g = 0; g < input_count; ++g)
      if (!strcmp(inputs[g].name, info.name)) given = &inputs[g];
    if (given)
      memcpy(x0, given->data, info.bytes);
    else
      fill_random(x0, &info, &state);
    memcpy(x1, x0, info.bytes);
  }
  for (int k = 0; k < 2 && !s; ++k)
    if ((s = ingot_session_run(sess[k]))) s = runtime_fail(s, k ? "run the float32 bundle" : "run the bundle");
  if (s) goto done;
  out->outputs = ingot_xcalloc(nout ? nout : 1, sizeof(*out->outputs));
  out->output_count = nout;
  for (uint32_t o = 0; o < nout; ++o) {
    ingot_tensor_info_t info;
    ingot_bundle_output_info(b[0], o, &info);
    ingot_driver_accuracy_output_t* r = &out->outputs[o];
    snprintf(r->name, sizeof r->name, "%s", info.name);
    const void* y = ingot_session_output_data(sess[0], o);
    const void* ref = ingot_session_output_data(sess[1], o);
    size_t n = info.bytes / (ingot_dtype_size(info.dtype) ? ingot_dtype_size(info.dtype) : 1);
    for (size_t i = 0; i < n; ++i) {
      double a = element(y, info.dtype, i), e = element(ref, info.dtype, i);
      double d = fabs(a - e);
      if (d > r->max_abs_error || isnan(d)) r->max_abs_error = isnan(d) ? INFINITY : d;
      if (fabs(e) > r->reference_max_abs) r->reference_max_abs = fabs(e);
    }
    r->max_rel_error = r->reference_max_abs > 0 ? r->max_abs_error / r->reference_max_abs : r->max_abs_error;
  }
done:
  for (int k = 0; k < 2; ++k) {
    ingot_session_release(sess[k]);
    ingot_bundle_release(b[k]);
  }
  if (s) ingot_driver_accuracy_free(out);
  return s;
}

void ingot_driver_accuracy_free(ingot_driver_accuracy_t* accuracy) {
  free(accuracy->outputs);
  memset(accuracy, 0, sizeof(*accuracy));
}
