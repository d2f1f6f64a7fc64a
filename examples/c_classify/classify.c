/* classify: which digit an 8x8 image shows, with a bundle of the digits model
 * (models/digits/model.onnx) and Ingot's runtime. A whole program against the
 * public API (ingot.h) and nothing else:
 *
 *   ingot compile models/digits/model.onnx -o digits.ingot --input-shape input=1x1x8x8
 *   classify digits.ingot examples/data/digit_7.pgm
 *   class 7 (probability 0.9708)
 *
 * The image is a PGM (P2, text, or P5, binary) of 8x8 pixels; a pixel is
 * scaled to [0, 1] by the file's maximum value, as the model was trained
 * (scikit-learn's digits: 0..16, so maxval 16). Prints "class N (probability
 * P)" and then every class's probability; exits 0, or 1 with one line on
 * stderr when something fails (2: bad usage). */
#include <ingot.h>
#include <stdio.h>
#include <string.h>

#define SIDE 8

/* The next number of a PGM header, skipping white space and # comments. */
static int pgm_number(FILE* f, int* out) {
  int c;
  for (;;) {
    c = fgetc(f);
    if (c == '#') {
      while (c != '\n' && c != EOF) c = fgetc(f);
    } else if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
      break;
    }
  }
  if (c < '0' || c > '9') return 0;
  long v = 0;
  while (c >= '0' && c <= '9') {
    v = v * 10 + (c - '0');
    if (v > 65535) return 0;
    c = fgetc(f);
  }
  *out = (int)v; /* the one white-space character after it is consumed */
  return 1;
}

/* Reads an 8x8 PGM into pixels[] scaled to [0, 1]; 0 with a message in why. */
static int read_pgm(const char* path, float pixels[SIDE * SIDE], char* why, size_t why_cap) {
  FILE* f = fopen(path, "rb");
  if (!f) {
    snprintf(why, why_cap, "cannot open '%s'", path);
    return 0;
  }
  char magic[2] = {0, 0};
  int width = 0, height = 0, maxval = 0;
  int ok = fread(magic, 1, 2, f) == 2 && magic[0] == 'P' && (magic[1] == '2' || magic[1] == '5') &&
           pgm_number(f, &width) && pgm_number(f, &height) && pgm_number(f, &maxval);
  if (!ok || width != SIDE || height != SIDE || maxval < 1 || maxval > 255) {
    snprintf(why, why_cap, "'%s' is not an 8x8 PGM (P2 or P5, maxval 1..255)", path);
    fclose(f);
    return 0;
  }
  for (int i = 0; i < SIDE * SIDE && ok; ++i) {
    int v = 0;
    if (magic[1] == '2') {
      ok = pgm_number(f, &v);
    } else {
      v = fgetc(f);
      ok = v != EOF;
    }
    ok = ok && v <= maxval;
    pixels[i] = (float)v / (float)maxval;
  }
  fclose(f);
  if (!ok) snprintf(why, why_cap, "'%s': missing or bad pixel values", path);
  return ok;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: classify DIGITS.ingot IMAGE.pgm\n");
    return 2;
  }
  float pixels[SIDE * SIDE];
  char why[512];
  if (!read_pgm(argv[2], pixels, why, sizeof why)) {
    fprintf(stderr, "classify: %s\n", why);
    return 1;
  }

  ingot_bundle_t* bundle = NULL;
  ingot_session_t* session = NULL;
  uint32_t in = 0, out = 0;
  ingot_tensor_info_t in_info, out_info;
  ingot_status_t s = ingot_bundle_open_file(argv[1], NULL, &bundle);
  if (!s) s = ingot_bundle_input_index(bundle, "input", &in);
  if (!s) s = ingot_bundle_output_index(bundle, "probabilities", &out);
  if (!s) s = ingot_bundle_input_info(bundle, in, &in_info);
  if (!s) s = ingot_bundle_output_info(bundle, out, &out_info);
  if (s) {
    fprintf(stderr, "classify: %s: %s (%s)\n", argv[1], ingot_last_error(), ingot_status_name(s));
    ingot_bundle_release(bundle);
    return 1;
  }
  if (in_info.dtype != INGOT_DTYPE_F32 || in_info.bytes != sizeof pixels || out_info.dtype != INGOT_DTYPE_F32 ||
      out_info.bytes != 10 * sizeof(float)) {
    fprintf(stderr, "classify: %s is not the digits model for one image (--input-shape input=1x1x8x8)\n",
            argv[1]);
    ingot_bundle_release(bundle);
    return 1;
  }

  /* NULL options: the runtime's defaults (threads, its own arena). */
  s = ingot_session_create(bundle, NULL, &session);
  if (!s) {
    memcpy(ingot_session_input_data(session, in), pixels, sizeof pixels);
    s = ingot_session_run(session);
  }
  if (s) {
    fprintf(stderr, "classify: %s (%s)\n", ingot_last_error(), ingot_status_name(s));
    ingot_session_release(session);
    ingot_bundle_release(bundle);
    return 1;
  }
  const float* p = ingot_session_output_data(session, out);
  int best = 0;
  for (int c = 1; c < 10; ++c)
    if (p[c] > p[best]) best = c;
  printf("class %d (probability %.4f)\n", best, p[best]);
  for (int c = 0; c < 10; ++c) printf("  %d: %.4f\n", c, p[c]);

  ingot_session_release(session);
  ingot_bundle_release(bundle);
  return 0;
}
