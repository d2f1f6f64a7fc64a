/* Helper for the mutation test: rewrites a bundle with every section stored
 * uncompressed (codec NONE), so that a Python mutator can change manifest,
 * plan and weight bytes and recompute every checksum with zlib.crc32.
 *
 * usage: bundle_tool uncompress IN OUT
 * The output is a valid bundle (the runtime accepts codec NONE): the same
 * table order, sections in the same file order at 64-byte aligned offsets, a
 * signature section dropped (it would no longer verify). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "runtime/ingot.h"
#include "runtime/ingot_format.h"

static int die(const char* msg) {
  fprintf(stderr, "bundle_tool: %s\n", msg);
  return 1;
}

int main(int argc, char** argv) {
  if (argc != 4 || strcmp(argv[1], "uncompress") != 0) return die("usage: bundle_tool uncompress IN OUT");
  FILE* f = fopen(argv[2], "rb");
  if (!f) return die("cannot open the input");
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t* in = malloc((size_t)n);
  if (!in || fread(in, 1, (size_t)n, f) != (size_t)n) return die("cannot read the input");
  fclose(f);
  ingot_bundle_header_t h;
  if ((size_t)n < sizeof h) return die("too short");
  memcpy(&h, in, sizeof h);
  if (h.section_count == 0 || h.section_count > 64) return die("bad section count");
  ingot_section_entry_t e[64];
  memcpy(e, in + sizeof h, h.section_count * sizeof e[0]);
  uint32_t count = h.section_count;
  if (e[count - 1].kind == INGOT_SECTION_SIGNATURE) --count;
  /* Decode each section. */
  uint8_t* raw[64];
  uint64_t total = 0;
  for (uint32_t i = 0; i < count; ++i) {
    raw[i] = malloc(e[i].raw_size ? (size_t)e[i].raw_size : 1);
    if (e[i].codec == INGOT_CODEC_NONE) {
      memcpy(raw[i], in + e[i].offset, (size_t)e[i].raw_size);
    } else {
      size_t got = ZSTD_decompress(raw[i], (size_t)e[i].raw_size, in + e[i].offset, (size_t)e[i].stored_size);
      if (ZSTD_isError(got) || got != e[i].raw_size) return die("zstd");
    }
    total += e[i].raw_size + 64;
  }
  /* Lay out again in the original file order. */
  uint32_t order[64];
  for (uint32_t i = 0; i < count; ++i) order[i] = i;
  for (uint32_t i = 1; i < count; ++i)
    for (uint32_t j = i; j > 0 && e[order[j - 1]].offset > e[order[j]].offset; --j) {
      uint32_t t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
  uint64_t pos = (sizeof h + count * sizeof e[0] + 63) & ~(uint64_t)63;
  uint8_t* out = calloc(1, (size_t)(pos + total));
  for (uint32_t k = 0; k < count; ++k) {
    ingot_section_entry_t* x = &e[order[k]];
    memcpy(out + pos, raw[order[k]], (size_t)x->raw_size);
    x->offset = pos;
    x->codec = INGOT_CODEC_NONE;
    x->stored_size = x->raw_size;
    x->stored_crc32 = x->raw_crc32 = ingot_crc32(0, out + pos, (size_t)x->raw_size);
    pos += x->raw_size;
    if (k + 1 < count) pos = (pos + 63) & ~(uint64_t)63;
    free(raw[order[k]]);
  }
  h.section_count = count;
  h.file_size = pos;
  h.table_crc32 = ingot_crc32(0, e, count * sizeof e[0]);
  h.header_crc32 = 0;
  h.header_crc32 = ingot_crc32(0, &h, sizeof h);
  memcpy(out, &h, sizeof h);
  memcpy(out + sizeof h, e, count * sizeof e[0]);
  f = fopen(argv[3], "wb");
  if (!f || fwrite(out, 1, (size_t)pos, f) != (size_t)pos || fclose(f) != 0) return die("cannot write");
  free(out);
  free(in);
  return 0;
}
