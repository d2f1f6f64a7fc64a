/* Shape inference of Einsum, MatMulInteger, ConvTranspose, the recurrent ops
 * (LSTM, GRU, RNN), Attention, RotaryEmbedding, CausalConvWithState,
 * LinearAttention, DeformConv, ConvInteger and Det.
 *
 * Canonical forms written back for the lowering:
 * - Einsum: "equation" becomes explicit and ellipsis-free ("ij,jk->ik"): each
 *   ellipsis dimension gets a letter of its own that the equation does not
 *   use, and an implicit output is spelled out.
 * - ConvTranspose: "pads" always holds the begin/end padding of every spatial
 *   axis (auto_pad and output_shape resolved; an end pad may be negative when
 *   output_shape asks for more than the natural size), "strides",
 *   "dilations" always present, auto_pad "NOTSET".
 * - LSTM/GRU/RNN (and DynamicQuantizeLSTM, an LSTM of 8-bit weights): the
 *   node always has its Y output (and LSTM its Y_c, GRU its
 *   Y_h): when the model leaves one out, an intermediate is added, because the
 *   lowering keeps the recurrent state there. LinearAttention likewise always
 *   has its present_state output. */
#include <stdio.h>
#include <string.h>

#include "graph_internal.h"
#include "infer_internal.h"

/* ---- Einsum ---- */

#define EINSUM_MAX_TERMS 8
#define EINSUM_MAX_LEN 64

static int letter_index(char ch) {
  if (ch >= 'a' && ch <= 'z') return ch - 'a';
  if (ch >= 'A' && ch <= 'Z') return 26 + (ch - 'A');
  return -1;
}

static char index_letter(int i) { return (char)(i < 26 ? 'a' + i : 'A' + (i - 26)); }

/* Splits one term into the letters before and after "..." (has_ellipsis). */
typedef struct einsum_term_t {
  char before[EINSUM_MAX_LEN], after[EINSUM_MAX_LEN];
  bool has_ellipsis;
} einsum_term_t;

static ingot_status_t parse_term(const infer_ctx_t* c, const char* s, size_t len, einsum_term_t* t) {
  memset(t, 0, sizeof(*t));
  size_t nb = 0, na = 0;
  for (size_t i = 0; i < len; ++i) {
    if (s[i] == '.') {
      if (t->has_ellipsis || i + 2 >= len || s[i + 1] != '.' || s[i + 2] != '.') {
        return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "equation: malformed or repeated '...'");
      }
      t->has_ellipsis = true;
      i += 2;
      continue;
    }
    if (letter_index(s[i]) < 0) {
      return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "equation: unexpected character '%c'", s[i]);
    }
    if (nb + na + 1 >= EINSUM_MAX_LEN) return infer_fail(c->n, INGOT_ERROR_LIMIT, "equation: term too long");
    if (t->has_ellipsis) {
      t->after[na++] = s[i];
    } else {
      t->before[nb++] = s[i];
    }
  }
  return INGOT_OK;
}

ingot_status_t infer_einsum(infer_ctx_t* c) {
  const char* eq_attr = ingot_node_attr_string(c->n, "equation", NULL);
  if (!eq_attr) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "attribute 'equation' is required");
  char eq[512];
  size_t n = 0;
  for (const char* p = eq_attr; *p; ++p) {
    if (*p == ' ' || *p == '\t') continue;
    if (n + 1 >= sizeof(eq)) return infer_fail(c->n, INGOT_ERROR_LIMIT, "equation is too long");
    eq[n++] = *p;
  }
  eq[n] = '\0';
  const char* arrow = strstr(eq, "->");
  size_t lhs_len = arrow ? (size_t)(arrow - eq) : n;
  uint32_t ninputs = c->n->input_count;
  einsum_term_t terms[EINSUM_MAX_TERMS];
  uint32_t nterms = 0;
  size_t start = 0;
  for (size_t i = 0; i <= lhs_len; ++i) {
    if (i == lhs_len || eq[i] == ',') {
      if (nterms >= EINSUM_MAX_TERMS) return infer_fail(c->n, INGOT_ERROR_LIMIT, "too many operands");
      ingot_status_t s = parse_term(c, eq + start, i - start, &terms[nterms++]);
      if (s) return s;
      start = i + 1;
    }
  }
  if (nterms != ninputs) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "equation has %u operands, the node %u inputs", nterms, ninputs);
  }
  bool used[52] = {false};
  int count[52] = {0};
  uint32_t ell_rank[EINSUM_MAX_TERMS];
  uint32_t max_ell = 0;
  ingot_dtype_t dtype = INGOT_DTYPE_INVALID;
  for (uint32_t t = 0; t < nterms; ++t) {
    const ingot_value_t* v = infer_input(c, t);
    if (!v) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "input %u is missing", t);
    if (t == 0) dtype = v->dtype;
    if (v->dtype != dtype) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "inputs have different types");
    size_t letters = strlen(terms[t].before) + strlen(terms[t].after);
    if ((!terms[t].has_ellipsis && (int32_t)letters != v->rank) || (int32_t)letters > v->rank) {
      return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "operand %u has rank %d, the equation names %zu axes", t,
                        v->rank, letters);
    }
    ell_rank[t] = (uint32_t)(v->rank - (int32_t)letters);
    if (ell_rank[t] > max_ell) max_ell = ell_rank[t];
    for (int part = 0; part < 2; ++part) {
      for (const char* p = part ? terms[t].after : terms[t].before; *p; ++p) {
        int li = letter_index(*p);
        if (li >= 0) used[li] = true, count[li]++;
      }
    }
  }
  if (dtype != INGOT_DTYPE_F32 && dtype != INGOT_DTYPE_F64 && dtype != INGOT_DTYPE_I32 && dtype != INGOT_DTYPE_I64) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "input type %s is not supported", ingot_graph_dtype_name(dtype));
  }
  einsum_term_t out;
  bool explicit_out = arrow != NULL;
  if (explicit_out) {
    ingot_status_t s = parse_term(c, arrow + 2, strlen(arrow + 2), &out);
    if (s) return s;
  }
  bool out_used[52] = {false};
  if (explicit_out) {
    for (const char* p = out.before; *p; ++p) out_used[letter_index(*p)] = true;
    for (const char* p = out.after; *p; ++p) out_used[letter_index(*p)] = true;
  }
  char ell[INGOT_MAX_RANK + 1];
  uint32_t ne = 0;
  for (int i = 0; i < 52 && ne < max_ell; ++i) {
    if (!used[i] && !out_used[i]) ell[ne++] = index_letter(i);
  }
  ell[ne] = '\0';
  if (ne < max_ell) return infer_fail(c->n, INGOT_ERROR_LIMIT, "no letters left for the '...' axes");
  /* Explicit, ellipsis-free equation and the size of every letter. */
  char canon[512];
  size_t cl = 0;
  int64_t size[52];
  for (int i = 0; i < 52; ++i) size[i] = -1;
  for (uint32_t t = 0; t < nterms; ++t) {
    const ingot_value_t* v = infer_input(c, t);
    char full[EINSUM_MAX_LEN + INGOT_MAX_RANK];
    size_t fl = 0;
    for (const char* p = terms[t].before; *p; ++p) full[fl++] = *p;
    for (uint32_t e = max_ell - ell_rank[t]; e < max_ell; ++e) full[fl++] = ell[e];
    for (const char* p = terms[t].after; *p; ++p) full[fl++] = *p;
    for (size_t k = 0; k < fl; ++k) {
      int li = letter_index(full[k]);
      int64_t d = v->dims[k];
      if (size[li] < 0 || size[li] == 1) {
        size[li] = d;
      } else if (d != size[li] && d != 1) {
        return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "axis '%c' has sizes %lld and %lld", full[k],
                          (long long)size[li], (long long)d);
      }
      canon[cl++] = full[k];
    }
    canon[cl++] = t + 1 < nterms ? ',' : '-';
  }
  if (nterms == 0) canon[cl++] = '-';
  canon[cl++] = '>';
  int64_t dims[INGOT_MAX_RANK];
  int32_t rank = 0;
  char outl[64];
  size_t ol = 0;
  if (explicit_out) {
    for (const char* p = out.before; *p; ++p) outl[ol++] = *p;
    if (out.has_ellipsis) {
      for (uint32_t e = 0; e < max_ell; ++e) outl[ol++] = ell[e];
    }
    for (const char* p = out.after; *p; ++p) outl[ol++] = *p;
  } else {
    for (uint32_t e = 0; e < max_ell; ++e) outl[ol++] = ell[e];
    /* letters that appear once, in ASCII order (upper case first), as numpy */
    for (int pass = 0; pass < 2; ++pass) {
      for (int i = 0; i < 26; ++i) {
        int li = pass == 0 ? 26 + i : i;
        if (count[li] == 1) outl[ol++] = index_letter(li);
      }
    }
  }
  bool seen[52] = {false};
  for (size_t k = 0; k < ol; ++k) {
    int li = letter_index(outl[k]);
    if (size[li] < 0) {
      return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "output axis '%c' appears in no operand", outl[k]);
    }
    if (seen[li]) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "output axis '%c' appears twice", outl[k]);
    seen[li] = true;
    if (rank >= (int32_t)INGOT_MAX_RANK) return infer_fail(c->n, INGOT_ERROR_LIMIT, "output rank is too large");
    dims[rank++] = size[li];
    canon[cl++] = outl[k];
  }
  canon[cl] = '\0';
  ingot_attr_t* a = ingot_graph_node_add_attr(c->g, c->id, "equation", INGOT_ATTR_STRING);
  a->s = ingot_arena_strdup(&c->g->arena, canon);
  c->n = &c->g->nodes[c->id];
  infer_set_output(c, 0, dtype, rank, dims);
  return INGOT_OK;
}

/* ---- MatMulInteger ---- */

ingot_status_t infer_matmulinteger(infer_ctx_t* c) { return infer_matmul_integer_shape(c, 0, 1, 2, 3, INGOT_DTYPE_I32); }

ingot_status_t infer_matmul_integer_shape(infer_ctx_t* c, uint32_t a_in, uint32_t b_in, uint32_t az_in, uint32_t bz_in,
                                          ingot_dtype_t out_dtype) {
  const ingot_value_t* a = infer_input(c, a_in);
  const ingot_value_t* b = infer_input(c, b_in);
  /* packed as dot4 words (ingot_graph_pack_weights): its [K, N] shape; the
   * zero point is folded into the words (its type is not b's then) */
  bool packed = c->n->weight_dot4_channels != 0;
  ingot_value_t b_logical;
  if (packed && !(b = ingot_node_logical_input(c->n, b_in, b, &b_logical))) {
    return infer_fail(c->n, INGOT_ERROR_INTERNAL, "B is not the dot4 words of %lld rows",
                      (long long)c->n->weight_dot4_channels);
  }
  const uint32_t ins[4] = {a_in, b_in, az_in, bz_in};
  for (uint32_t i = 0; i < 4; ++i) {
    const ingot_value_t* v = i == 1 ? b : infer_input(c, ins[i]);
    if (v && v->dtype != INGOT_DTYPE_U8 && v->dtype != INGOT_DTYPE_I8) {
      return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "input '%s' has type %s (uint8 or int8 expected)", v->name,
                        ingot_graph_dtype_name(v->dtype));
    }
  }
  const ingot_value_t* az = infer_input(c, az_in);
  const ingot_value_t* bz = infer_input(c, bz_in);
  if ((az && az->dtype != a->dtype) || (bz && !packed && bz->dtype != b->dtype)) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "a zero point differs in type from its matrix");
  }
  if (a->rank < 1 || b->rank < 1) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "inputs must not be scalars");
  int64_t ad[INGOT_MAX_RANK + 1], bd[INGOT_MAX_RANK + 1];
  int32_t ar = a->rank, br = b->rank;
  if (ar == 1) {
    ad[0] = 1, ad[1] = a->dims[0], ar = 2;
  } else {
    memcpy(ad, a->dims, sizeof(int64_t) * (size_t)ar);
  }
  if (br == 1) {
    bd[0] = b->dims[0], bd[1] = 1, br = 2;
  } else {
    memcpy(bd, b->dims, sizeof(int64_t) * (size_t)br);
  }
  if (ad[ar - 1] != bd[br - 2]) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "inner dimensions differ: %lld vs %lld", (long long)ad[ar - 1],
                      (long long)bd[br - 2]);
  }
  int32_t batch_a = ar - 2, batch_b = br - 2, batch = batch_a > batch_b ? batch_a : batch_b;
  int64_t dims[INGOT_MAX_RANK];
  int32_t rank = 0;
  for (int32_t i = 0; i < batch; ++i) {
    int32_t ia = i - (batch - batch_a), ib = i - (batch - batch_b);
    int64_t da = ia >= 0 ? ad[ia] : 1, db = ib >= 0 ? bd[ib] : 1;
    if (da != db && da != 1 && db != 1) {
      return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "batch dimensions do not broadcast");
    }
    dims[rank++] = da == 1 ? db : da;
  }
  if (a->rank > 1) dims[rank++] = ad[ar - 2];
  if (b->rank > 1) dims[rank++] = bd[br - 1];
  if (rank > (int32_t)INGOT_MAX_RANK) return infer_fail(c->n, INGOT_ERROR_LIMIT, "output rank is too large");
  int64_t m = ad[ar - 2], nn = bd[br - 1];
  if (az && !(ingot_value_numel(az) == 1 || (az->rank == 1 && az->dims[0] == m))) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "a_zero_point must be a scalar or a vector of %lld rows",
                      (long long)m);
  }
  if (bz && !(ingot_value_numel(bz) == 1 || (bz->rank == 1 && bz->dims[0] == nn))) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "b_zero_point must be a scalar or a vector of %lld columns",
                      (long long)nn);
  }
  infer_set_output(c, 0, out_dtype, rank, dims);
  return INGOT_OK;
}

/* ---- ConvTranspose ---- */

static int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

static ingot_status_t read_list(const ingot_node_t* n, const char* name, uint32_t want, int64_t lo, int64_t fallback,
                                int64_t* out, bool* out_present) {
  const ingot_attr_t* a = ingot_node_attr(n, name);
  if (out_present) *out_present = a && a->count > 0;
  if (!a || a->count == 0) {
    for (uint32_t i = 0; i < want; ++i) out[i] = fallback;
    return INGOT_OK;
  }
  if (a->type != INGOT_ATTR_INTS) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "attribute '%s' must be a list of ints", name);
  }
  if (a->count != want) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "attribute '%s' has %u entries, expected %u", name, a->count,
                      want);
  }
  for (uint32_t i = 0; i < want; ++i) {
    if (a->ints[i] < lo || a->ints[i] > INT32_MAX) {
      return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "attribute '%s'[%u] = %lld is out of range", name, i,
                        (long long)a->ints[i]);
    }
    out[i] = a->ints[i];
  }
  return INGOT_OK;
}

/* ConvTranspose's parameters: kernel from the weight, strides, dilations,
 * output_padding, group, and pads with auto_pad and output_shape resolved. */
ingot_status_t params_parse_convtranspose(const ingot_graph_t* graph, uint32_t node, ingot_convtranspose_params_t* out) {
  const ingot_node_t* n = &graph->nodes[node];
  const ingot_value_t* x = n->input_count > 0 && n->inputs[0] != INGOT_NO_VALUE ? &graph->values[n->inputs[0]] : NULL;
  const ingot_value_t* w = n->input_count > 1 && n->inputs[1] != INGOT_NO_VALUE ? &graph->values[n->inputs[1]] : NULL;
  if (!x || !w) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "input and weight are required");
  if (x->rank < 3 || x->rank > 5) {
    return infer_fail(n, INGOT_ERROR_UNSUPPORTED, "input rank %d is not supported (1-D, 2-D or 3-D)", x->rank);
  }
  if (w->rank != x->rank) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "weight rank differs from input rank");
  uint32_t sp = (uint32_t)x->rank - 2;
  int64_t group = ingot_node_attr_int(n, "group", 1);
  if (group < 1 || x->dims[1] != w->dims[0] || x->dims[1] % group != 0) {
    return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "group %lld does not fit %lld input channels and weight of %lld",
                      (long long)group, (long long)x->dims[1], (long long)w->dims[0]);
  }
  int64_t* k = out->kernel;
  int64_t* strides = out->strides;
  int64_t* dil = out->dilations;
  int64_t* pads = out->pads;
  int64_t* outpad = out->output_padding;
  int64_t oshape[3];
  bool has_pads, has_oshape, has_k;
  ingot_status_t s;
  if ((s = read_list(n, "kernel_shape", sp, 1, 1, k, &has_k))) return s;
  for (uint32_t i = 0; i < sp; ++i) {
    if (has_k && k[i] != w->dims[2 + i]) {
      return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "kernel_shape disagrees with the weight");
    }
    k[i] = w->dims[2 + i];
  }
  if ((s = read_list(n, "strides", sp, 1, 1, strides, NULL)) || (s = read_list(n, "dilations", sp, 1, 1, dil, NULL)) ||
      (s = read_list(n, "pads", 2 * sp, INT32_MIN, 0, pads, &has_pads)) ||
      (s = read_list(n, "output_padding", sp, 0, 0, outpad, NULL))) {
    return s;
  }
  const ingot_attr_t* os = ingot_node_attr(n, "output_shape");
  has_oshape = os && os->type == INGOT_ATTR_INTS && os->count > 0;
  if (has_oshape) {
    if (os->count != sp && os->count != sp + 2) {
      return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "output_shape has %u entries, expected %u", os->count, sp);
    }
    for (uint32_t i = 0; i < sp; ++i) oshape[i] = os->ints[os->count - sp + i];
  }
  const char* auto_pad = ingot_node_attr_string(n, "auto_pad", "NOTSET");
  bool same = strcmp(auto_pad, "SAME_UPPER") == 0 || strcmp(auto_pad, "SAME_LOWER") == 0;
  bool upper = strcmp(auto_pad, "SAME_UPPER") == 0;
  if (!same && strcmp(auto_pad, "NOTSET") != 0 && strcmp(auto_pad, "VALID") != 0 && auto_pad[0] != '\0') {
    return infer_fail(n, INGOT_ERROR_UNSUPPORTED, "auto_pad '%s' is not supported", auto_pad);
  }
  if (strcmp(auto_pad, "VALID") == 0) {
    for (uint32_t i = 0; i < 2 * sp; ++i) pads[i] = 0;
  }
  for (uint32_t i = 0; i < sp; ++i) {
    if (outpad[i] >= strides[i] && outpad[i] >= dil[i]) {
      return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "output_padding[%u] must be below the stride or dilation", i);
    }
    int64_t natural = strides[i] * (x->dims[2 + i] - 1) + outpad[i] + (k[i] - 1) * dil[i] + 1;
    int64_t o;
    if (has_oshape || same) {
      /* As the ONNX spec: pads from the requested size, the extra on the end
       * (SAME_UPPER) or the beginning (otherwise). */
      o = has_oshape ? oshape[i] : x->dims[2 + i] * strides[i];
      int64_t total = natural - o;
      int64_t half = floor_div(total, 2);
      pads[i] = upper ? half : total - half;
      pads[sp + i] = total - pads[i];
    } else {
      o = natural - pads[i] - pads[sp + i];
    }
    if (o < 1) return infer_fail(n, INGOT_ERROR_INVALID_ARGUMENT, "spatial axis %u: empty output", i);
    out->out[i] = o;
  }
  out->spatial = (int32_t)sp;
  out->group = group;
  (void)has_pads;
  return INGOT_OK;
}

ingot_status_t infer_convtranspose(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  const ingot_value_t* w = infer_input(c, 1);
  const ingot_value_t* b = infer_input(c, 2);
  if (!infer_is_float(x->dtype) || w->dtype != x->dtype) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "input and weight must be the same float type");
  }
  const ingot_convtranspose_params_t p = c->n->params.u.convtranspose; /* graph/params.def */
  uint32_t sp = (uint32_t)p.spatial;
  int64_t m = w->dims[1] * p.group;
  if (b && (b->rank != 1 || b->dims[0] != m || b->dtype != x->dtype)) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "bias must be a vector of %lld", (long long)m);
  }
  int64_t dims[INGOT_MAX_RANK];
  dims[0] = x->dims[0];
  dims[1] = m;
  for (uint32_t i = 0; i < sp; ++i) dims[2 + i] = p.out[i];
  /* Canonical attributes for readers of the attributes. */
  ingot_graph_node_set_ints(c->g, c->id, "pads", p.pads, 2 * sp);
  ingot_graph_node_set_ints(c->g, c->id, "strides", p.strides, sp);
  ingot_graph_node_set_ints(c->g, c->id, "dilations", p.dilations, sp);
  ingot_attr_t* ap = ingot_graph_node_add_attr(c->g, c->id, "auto_pad", INGOT_ATTR_STRING);
  ap->s = "NOTSET";
  c->n = &c->g->nodes[c->id];
  infer_set_output(c, 0, x->dtype, x->rank, dims);
  return INGOT_OK;
}

/* ---- LSTM, GRU, RNN ---- */

/* DynamicQuantizeLSTM's W_scale / W_zero_point (k = 8) or R_scale /
 * R_zero_point (k = 10): float32 scales [ndir] (per direction) or
 * [ndir, 4*hidden] (per gate column), zero points of W's dtype and the
 * scale's shape. */
static ingot_status_t infer_dq_scales(infer_ctx_t* c, uint32_t k, int64_t ndir, int64_t columns,
                                      ingot_dtype_t wdtype) {
  const ingot_value_t* s = infer_input(c, k);
  const ingot_value_t* z = infer_input(c, k + 1);
  const char* which = k == 8 ? "W" : "R";
  if (!s || !z) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "%s_scale and %s_zero_point are required", which, which);
  bool per_dir = s->rank == 1 && s->dims[0] == ndir;
  bool per_col = s->rank == 2 && s->dims[0] == ndir && s->dims[1] == columns;
  if (s->dtype != INGOT_DTYPE_F32 || (!per_dir && !per_col)) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "%s_scale must be float32 [%lld] or [%lld, %lld]", which,
                      (long long)ndir, (long long)ndir, (long long)columns);
  }
  bool same = z->rank == s->rank && z->dims[0] == s->dims[0] && (z->rank < 2 || z->dims[1] == s->dims[1]);
  if (z->dtype != wdtype || !same) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "%s_zero_point must be %s of %s_scale's shape", which,
                      ingot_graph_dtype_name(wdtype), which);
  }
  return INGOT_OK;
}

ingot_status_t infer_rnn(infer_ctx_t* c) {
  ingot_op_t op = c->n->op;
  /* DynamicQuantizeLSTM (com.microsoft): an LSTM whose W and R are 8-bit,
   * laid out [ndir, input, 4*hidden] and [ndir, hidden, 4*hidden] (ONNX's
   * transposed), with their scales and zero points at inputs 8 to 11. */
  bool dq = op == INGOT_OP_DYNAMICQUANTIZELSTM;
  bool lstm = op == INGOT_OP_LSTM || dq;
  uint32_t gates = lstm ? 4 : op == INGOT_OP_GRU ? 3 : 1;
  const ingot_value_t* x = infer_input(c, 0);
  ingot_value_t w_logical, r_logical;
  const ingot_value_t* w = ingot_node_logical_input(c->n, 1, infer_input(c, 1), &w_logical);
  const ingot_value_t* r = ingot_node_logical_input(c->n, 2, infer_input(c, 2), &r_logical);
  if (!w || !r) return infer_fail(c->n, INGOT_ERROR_INTERNAL, "W and R are not re-laid [D, 4H, cols] weights");
  if (x->dtype != INGOT_DTYPE_F32 && (dq || x->dtype != INGOT_DTYPE_F64)) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "input type %s is not supported", ingot_graph_dtype_name(x->dtype));
  }
  if (x->rank != 3 || w->rank != 3 || r->rank != 3) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "X, W and R must have rank 3");
  }
  /* DynamicQuantizeLSTM has no layout attribute: layout 0 (quantize_dynamic
   * drops the LSTM's). */
  int64_t layout = ingot_node_attr_int(c->n, "layout", 0);
  if (layout != 0 && layout != 1) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "layout must be 0 or 1");
  if (dq && layout != 0) return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "layout=1 is not supported (only 0)");
  const char* dir = ingot_node_attr_string(c->n, "direction", "forward");
  int64_t ndir;
  if (strcmp(dir, "forward") == 0 || strcmp(dir, "reverse") == 0) {
    ndir = 1;
  } else if (strcmp(dir, "bidirectional") == 0) {
    ndir = 2;
  } else {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "direction '%s' is not forward, reverse or bidirectional", dir);
  }
  int64_t seq = layout ? x->dims[1] : x->dims[0], batch = layout ? x->dims[0] : x->dims[1], in = x->dims[2];
  int64_t hidden = dq ? r->dims[1] : r->dims[2];
  int64_t attr_h = ingot_node_attr_int(c->n, "hidden_size", hidden);
  if (dq) {
    if (attr_h != hidden || w->dims[0] != ndir || r->dims[0] != ndir || w->dims[1] != in ||
        w->dims[2] != (int64_t)gates * hidden || r->dims[2] != (int64_t)gates * hidden ||
        (w->dtype != INGOT_DTYPE_I8 && w->dtype != INGOT_DTYPE_U8) || r->dtype != w->dtype) {
      return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT,
                        "W must be [%lld, %lld, %lld] and R [%lld, %lld, %lld], both int8 or both uint8 (hidden_size %lld)",
                        (long long)ndir, (long long)in, (long long)(gates * hidden), (long long)ndir,
                        (long long)hidden, (long long)(gates * hidden), (long long)hidden);
    }
    ingot_status_t s;
    if ((s = infer_dq_scales(c, 8, ndir, gates * hidden, w->dtype)) ||
        (s = infer_dq_scales(c, 10, ndir, gates * hidden, w->dtype))) {
      return s;
    }
  } else if (attr_h != hidden || w->dims[0] != ndir || r->dims[0] != ndir || w->dims[1] != (int64_t)gates * hidden ||
      r->dims[1] != (int64_t)gates * hidden || w->dims[2] != in || w->dtype != x->dtype || r->dtype != x->dtype) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT,
                      "W must be [%lld, %lld, %lld] and R [%lld, %lld, %lld] of the input's type (hidden_size %lld)",
                      (long long)ndir, (long long)(gates * hidden), (long long)in, (long long)ndir,
                      (long long)(gates * hidden), (long long)hidden, (long long)hidden);
  }
  const ingot_value_t* b = infer_input(c, 3);
  if (b && (b->rank != 2 || b->dims[0] != ndir || b->dims[1] != 2 * (int64_t)gates * hidden || b->dtype != x->dtype)) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "B must be [%lld, %lld]", (long long)ndir,
                      (long long)(2 * gates * hidden));
  }
  const ingot_value_t* lens = infer_input(c, 4);
  if (lens) {
    if (lens->rank != 1 || lens->dims[0] != batch || (lens->dtype != INGOT_DTYPE_I32 && lens->dtype != INGOT_DTYPE_I64)) {
      return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "sequence_lens must be an int32 vector of %lld",
                        (long long)batch);
    }
    if (lens->kind == INGOT_VALUE_WEIGHT && lens->data) {
      for (int64_t i = 0; i < batch; ++i) {
        int64_t l = lens->dtype == INGOT_DTYPE_I32 ? ((const int32_t*)lens->data)[i] : ((const int64_t*)lens->data)[i];
        if (l < 0 || l > seq) {
          return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "sequence_lens[%lld] = %lld is outside [0, %lld]",
                            (long long)i, (long long)l, (long long)seq);
        }
      }
    }
  }
  int64_t state_dims[3];
  if (layout) {
    state_dims[0] = batch, state_dims[1] = ndir, state_dims[2] = hidden;
  } else {
    state_dims[0] = ndir, state_dims[1] = batch, state_dims[2] = hidden;
  }
  uint32_t state_inputs[2] = {5, lstm ? 6u : UINT32_MAX};
  for (uint32_t k = 0; k < 2; ++k) {
    const ingot_value_t* h = state_inputs[k] != UINT32_MAX ? infer_input(c, state_inputs[k]) : NULL;
    if (!h) continue;
    if (h->rank != 3 || h->dims[0] != state_dims[0] || h->dims[1] != state_dims[1] || h->dims[2] != state_dims[2] ||
        h->dtype != x->dtype) {
      return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "%s must be [%lld, %lld, %lld]",
                        k ? "initial_c" : "initial_h", (long long)state_dims[0], (long long)state_dims[1],
                        (long long)state_dims[2]);
    }
  }
  const ingot_value_t* p = lstm ? infer_input(c, 7) : NULL;
  if (p && (p->rank != 2 || p->dims[0] != ndir || p->dims[1] != 3 * hidden || p->dtype != x->dtype)) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "P must be [%lld, %lld]", (long long)ndir,
                      (long long)(3 * hidden));
  }
  if (lstm && ingot_node_attr_int(c->n, "input_forget", 0) != 0) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "input_forget=1 is not supported");
  }
  /* activations, activation_alpha, activation_beta: read and checked where
   * they are applied (lower/lower_rnn.c). */
  infer_ensure_output(c, 0, "Y");
  if (lstm) infer_ensure_output(c, 2, "Y_c");
  if (op == INGOT_OP_GRU) infer_ensure_output(c, 1, "Y_h");
  int64_t ydims[4];
  if (layout) {
    ydims[0] = batch, ydims[1] = seq, ydims[2] = ndir, ydims[3] = hidden;
  } else {
    ydims[0] = seq, ydims[1] = ndir, ydims[2] = batch, ydims[3] = hidden;
  }
  infer_set_output(c, 0, x->dtype, 4, ydims);
  infer_set_output(c, 1, x->dtype, 3, state_dims);
  infer_set_output(c, 2, x->dtype, 3, state_dims);
  return INGOT_OK;
}

/* ---- Attention (opset 23/24) ---- */

ingot_status_t infer_attention(infer_ctx_t* c) {
  const ingot_value_t* q = infer_input(c, 0);
  const ingot_value_t* k = infer_input(c, 1);
  const ingot_value_t* v = infer_input(c, 2);
  const ingot_value_t* mask = infer_input(c, 3);
  const ingot_value_t* pk = infer_input(c, 4);
  const ingot_value_t* pv = infer_input(c, 5);
  const ingot_value_t* nonpad = infer_input(c, 6);
  if (q->dtype != INGOT_DTYPE_F32 && q->dtype != INGOT_DTYPE_F64) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "input type %s is not supported", ingot_graph_dtype_name(q->dtype));
  }
  if (k->dtype != q->dtype || v->dtype != q->dtype) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "Q, K and V must have the same type");
  }
  if ((q->rank != 3 && q->rank != 4) || k->rank != q->rank || v->rank != q->rank) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "Q, K and V must all be 3-D or all 4-D");
  }
  int64_t batch = q->dims[0], hq, hkv, sq, skv, dqk, dv;
  if (q->rank == 4) {
    hq = q->dims[1], sq = q->dims[2], dqk = q->dims[3];
    hkv = k->dims[1], skv = k->dims[2], dv = v->dims[3];
    if (k->dims[3] != dqk || v->dims[1] != hkv || v->dims[2] != skv) {
      return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "K and V do not fit Q");
    }
  } else {
    hq = c->n->params.u.attention.q_num_heads; /* graph/params.c */
    hkv = c->n->params.u.attention.kv_num_heads;
    if (hq < 1 || hkv < 1 || q->dims[2] % hq != 0 || k->dims[2] % hkv != 0 || v->dims[2] % hkv != 0) {
      return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT,
                        "3-D inputs need q_num_heads and kv_num_heads that divide the hidden sizes");
    }
    sq = q->dims[1], dqk = q->dims[2] / hq, skv = k->dims[1], dv = v->dims[2] / hkv;
    if (k->dims[2] / hkv != dqk || v->dims[1] != skv) {
      return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "K and V do not fit Q");
    }
  }
  if (k->dims[0] != batch || v->dims[0] != batch || hq % hkv != 0) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "batch or head counts do not fit (%lld query heads, %lld kv heads)",
                      (long long)hq, (long long)hkv);
  }
  int64_t past = 0;
  if ((pk == NULL) != (pv == NULL)) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "past_key and past_value come together");
  }
  if (pk) {
    past = pk->dims[2];
    if (pk->rank != 4 || pv->rank != 4 || pk->dims[0] != batch || pk->dims[1] != hkv || pk->dims[3] != dqk ||
        pv->dims[0] != batch || pv->dims[1] != hkv || pv->dims[2] != past || pv->dims[3] != dv ||
        pk->dtype != q->dtype || pv->dtype != q->dtype) {
      return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "past_key/past_value must be [%lld, %lld, P, %lld/%lld]",
                        (long long)batch, (long long)hkv, (long long)dqk, (long long)dv);
    }
  }
  int64_t total = past + skv;
  if (mask) {
    if (mask->rank < 2 || mask->rank > 4 || (mask->dtype != q->dtype && mask->dtype != INGOT_DTYPE_BOOL) ||
        mask->dims[mask->rank - 1] > total) {
      return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT,
                        "attn_mask must be a bool or %s tensor of rank 2..4 with at most %lld columns",
                        ingot_graph_dtype_name(q->dtype), (long long)total);
    }
    int64_t want[4] = {batch, hq, sq, total};
    for (int32_t i = 0; i < mask->rank - 1; ++i) {
      int64_t w = want[4 - mask->rank + i], d = mask->dims[i];
      if (d != 1 && d != w) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "attn_mask does not broadcast");
    }
  }
  if (nonpad && (nonpad->rank != 1 || nonpad->dims[0] != batch || nonpad->dtype != INGOT_DTYPE_I64)) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "nonpad_kv_seqlen must be an int64 vector of %lld",
                      (long long)batch);
  }
  /* qk_matmul_output_mode: 0..3, node.params (graph/params.c) */
  int64_t ydims[4];
  if (q->rank == 4) {
    ydims[0] = batch, ydims[1] = hq, ydims[2] = sq, ydims[3] = dv;
  } else {
    ydims[0] = batch, ydims[1] = sq, ydims[2] = hq * dv;
  }
  infer_set_output(c, 0, q->dtype, q->rank, ydims);
  int64_t pkd[4] = {batch, hkv, total, dqk}, pvd[4] = {batch, hkv, total, dv}, qkd[4] = {batch, hq, sq, total};
  infer_set_output(c, 1, q->dtype, 4, pkd);
  infer_set_output(c, 2, q->dtype, 4, pvd);
  infer_set_output(c, 3, q->dtype, 4, qkd);
  return INGOT_OK;
}

/* ---- RotaryEmbedding (opset 23) ---- */

ingot_status_t infer_rotary(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  const ingot_value_t* cosv = infer_input(c, 1);
  const ingot_value_t* sinv = infer_input(c, 2);
  const ingot_value_t* pos = infer_input(c, 3);
  if (x->dtype != INGOT_DTYPE_F32 && x->dtype != INGOT_DTYPE_F64) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "input type %s is not supported", ingot_graph_dtype_name(x->dtype));
  }
  if (x->rank != 3 && x->rank != 4) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "input must be 3-D or 4-D");
  int64_t heads = x->rank == 4 ? x->dims[1] : c->n->params.u.attention.num_heads; /* graph/params.c */
  int64_t seq = x->rank == 4 ? x->dims[2] : x->dims[1];
  if (heads < 1 || (x->rank == 3 && x->dims[2] % heads != 0)) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "3-D input needs num_heads dividing the hidden size");
  }
  int64_t head = x->rank == 4 ? x->dims[3] : x->dims[2] / heads;
  int64_t rd = c->n->params.u.attention.rotary_embedding_dim;
  if (rd == 0) rd = head;
  if (rd < 2 || rd > head || rd % 2 != 0) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "rotary_embedding_dim %lld does not fit head size %lld",
                      (long long)rd, (long long)head);
  }
  bool ok = cosv->dtype == x->dtype && sinv->dtype == x->dtype && cosv->rank == sinv->rank;
  for (int32_t i = 0; ok && i < cosv->rank; ++i) ok = cosv->dims[i] == sinv->dims[i];
  if (ok && pos) {
    ok = cosv->rank == 2 && cosv->dims[1] == rd / 2 && pos->rank == 2 && pos->dims[0] == x->dims[0] &&
         pos->dims[1] == seq && pos->dtype == INGOT_DTYPE_I64;
  } else if (ok) {
    ok = cosv->rank == 3 && cosv->dims[0] == x->dims[0] && cosv->dims[1] == seq && cosv->dims[2] == rd / 2;
  }
  if (!ok) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT,
                      "cos/sin caches must be [max_pos, %lld] with int64 position_ids [batch, seq], or [batch, seq, %lld]",
                      (long long)(rd / 2), (long long)(rd / 2));
  }
  infer_copy_output(c, 0, x);
  return INGOT_OK;
}

/* ---- CausalConvWithState ---- */

ingot_status_t infer_causalconv(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  const ingot_value_t* w = infer_input(c, 1);
  const ingot_value_t* b = infer_input(c, 2);
  const ingot_value_t* past = infer_input(c, 3);
  if (x->dtype != INGOT_DTYPE_F32 && x->dtype != INGOT_DTYPE_F64) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "input type %s is not supported", ingot_graph_dtype_name(x->dtype));
  }
  if (x->rank != 3 || w->rank != 3 || w->dims[0] != x->dims[1] || w->dims[1] != 1 || w->dtype != x->dtype ||
      w->dims[2] < 1) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "input must be [B, C, L] and weight [C, 1, k]");
  }
  int64_t k = w->dims[2];
  if (b && (b->rank != 1 || b->dims[0] != x->dims[1] || b->dtype != x->dtype)) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "bias must be a vector of %lld", (long long)x->dims[1]);
  }
  if (past && (past->rank != 3 || past->dims[0] != x->dims[0] || past->dims[1] != x->dims[1] ||
               past->dims[2] != k - 1 || past->dtype != x->dtype)) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "past_state must be [%lld, %lld, %lld]", (long long)x->dims[0],
                      (long long)x->dims[1], (long long)(k - 1));
  }
  const char* act = ingot_node_attr_string(c->n, "activation", "none");
  if (strcmp(act, "none") != 0 && strcmp(act, "silu") != 0 && strcmp(act, "swish") != 0) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "activation '%s' is not none, silu or swish", act);
  }
  infer_copy_output(c, 0, x);
  int64_t sd[3] = {x->dims[0], x->dims[1], k - 1};
  infer_set_output(c, 1, x->dtype, 3, sd);
  return INGOT_OK;
}

/* ---- LinearAttention ---- */

ingot_status_t infer_linattn(infer_ctx_t* c) {
  const ingot_value_t* q = infer_input(c, 0);
  const ingot_value_t* k = infer_input(c, 1);
  const ingot_value_t* v = infer_input(c, 2);
  const ingot_value_t* past = infer_input(c, 3);
  const ingot_value_t* decay = infer_input(c, 4);
  const ingot_value_t* beta = infer_input(c, 5);
  if (q->dtype != INGOT_DTYPE_F32) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "input type %s is not supported (float32)",
                      ingot_graph_dtype_name(q->dtype));
  }
  int64_t hq = c->n->params.u.attention.q_num_heads, hkv = c->n->params.u.attention.kv_num_heads; /* graph/params.c */
  if (hq < 1 || hkv < 1 || hq % hkv != 0) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "q_num_heads must be a positive multiple of kv_num_heads");
  }
  if (q->rank != 3 || k->rank != 3 || v->rank != 3 || k->dtype != q->dtype || v->dtype != q->dtype ||
      q->dims[2] % hq != 0 || k->dims[2] % hkv != 0 || v->dims[2] % hkv != 0 || k->dims[0] != q->dims[0] ||
      v->dims[0] != q->dims[0] || k->dims[1] != q->dims[1] || v->dims[1] != q->dims[1] ||
      q->dims[2] / hq != k->dims[2] / hkv) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "query, key, value must be [B, T, heads*D] of one type");
  }
  int64_t b = q->dims[0], t = q->dims[1], dk = q->dims[2] / hq, dv = v->dims[2] / hkv;
  const char* rule = ingot_node_attr_string(c->n, "update_rule", "gated_delta");
  bool gating = strcmp(rule, "gated") == 0 || strcmp(rule, "gated_delta") == 0;
  bool delta = strcmp(rule, "delta") == 0 || strcmp(rule, "gated_delta") == 0;
  if (!gating && !delta && strcmp(rule, "linear") != 0) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "update_rule '%s' is not linear, gated, delta or gated_delta", rule);
  }
  if (gating != (decay != NULL) || delta != (beta != NULL)) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "update_rule '%s' %s decay and %s beta", rule,
                      gating ? "needs" : "forbids", delta ? "needs" : "forbids");
  }
  if (decay && (decay->rank != 3 || decay->dims[0] != b || decay->dims[1] != t || decay->dtype != q->dtype ||
                (decay->dims[2] != hkv && decay->dims[2] != hkv * dk))) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "decay must be [B, T, kv_heads or kv_heads*d_k]");
  }
  if (beta && (beta->rank != 3 || beta->dims[0] != b || beta->dims[1] != t || beta->dtype != q->dtype ||
               (beta->dims[2] != hkv && beta->dims[2] != 1))) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "beta must be [B, T, kv_heads or 1]");
  }
  int64_t sd[4] = {b, hkv, dk, dv};
  if (past && (past->rank != 4 || past->dims[0] != b || past->dims[1] != hkv || past->dims[2] != dk ||
               past->dims[3] != dv || past->dtype != q->dtype)) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "past_state must be [%lld, %lld, %lld, %lld]", (long long)b,
                      (long long)hkv, (long long)dk, (long long)dv);
  }
  infer_ensure_output(c, 1, "present_state"); /* the lowering keeps the state there */
  int64_t yd[3] = {b, t, hq * dv};
  infer_set_output(c, 0, q->dtype, 3, yd);
  infer_set_output(c, 1, q->dtype, 4, sd);
  return INGOT_OK;
}

/* ---- DeformConv (2-D) ---- */

ingot_status_t infer_deformconv(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  const ingot_value_t* w = infer_input(c, 1);
  const ingot_value_t* off = infer_input(c, 2);
  const ingot_value_t* b = infer_input(c, 3);
  const ingot_value_t* mask = infer_input(c, 4);
  if (x->dtype != INGOT_DTYPE_F32 && x->dtype != INGOT_DTYPE_F64) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "input type %s is not supported", ingot_graph_dtype_name(x->dtype));
  }
  if (x->rank != 4 || w->rank != 4 || off->rank != 4) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "only 2-D DeformConv (rank-4 X, W, offset) is supported");
  }
  int64_t group = ingot_node_attr_int(c->n, "group", 1), og = ingot_node_attr_int(c->n, "offset_group", 1);
  int64_t cin = x->dims[1], cout = w->dims[0], kh = w->dims[2], kw = w->dims[3];
  if (group < 1 || og < 1 || cin != w->dims[1] * group || cout % group != 0 || cin % og != 0) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "group/offset_group do not fit the channels");
  }
  if (w->dtype != x->dtype || off->dtype != x->dtype || off->dims[0] != x->dims[0] || off->dims[1] != og * 2 * kh * kw) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "offset must be [N, %lld, oH, oW]", (long long)(og * 2 * kh * kw));
  }
  if (b && (b->rank != 1 || b->dims[0] != cout || b->dtype != x->dtype)) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "bias must be a vector of %lld", (long long)cout);
  }
  if (mask && (mask->rank != 4 || mask->dims[0] != x->dims[0] || mask->dims[1] != og * kh * kw ||
               mask->dims[2] != off->dims[2] || mask->dims[3] != off->dims[3] || mask->dtype != x->dtype)) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "mask must be [N, %lld, oH, oW]", (long long)(og * kh * kw));
  }
  int64_t k[2] = {kh, kw}, st[2], dil[2], pads[4];
  ingot_status_t s;
  bool has;
  if ((s = read_list(c->n, "strides", 2, 1, 1, st, NULL)) || (s = read_list(c->n, "dilations", 2, 1, 1, dil, NULL)) ||
      (s = read_list(c->n, "pads", 4, 0, 0, pads, NULL)) || (s = read_list(c->n, "kernel_shape", 2, 1, 1, k, &has))) {
    return s;
  }
  if (has && (k[0] != kh || k[1] != kw)) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "kernel_shape disagrees with W");
  for (int i = 0; i < 2; ++i) {
    int64_t kk = i ? kw : kh;
    int64_t out = (x->dims[2 + i] + pads[i] + pads[2 + i] - ((kk - 1) * dil[i] + 1)) / st[i] + 1;
    if (out != off->dims[2 + i]) {
      return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "offset spatial size %lld does not match the output (%lld)",
                        (long long)off->dims[2 + i], (long long)out);
    }
  }
  int64_t dims[4] = {x->dims[0], cout, off->dims[2], off->dims[3]};
  infer_set_output(c, 0, x->dtype, 4, dims);
  return INGOT_OK;
}

/* ---- ConvInteger ---- */

ingot_status_t infer_convinteger(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  const ingot_value_t* w = infer_input(c, 1);
  ingot_value_t unpacked; /* packed in panels by ingot_graph_pack_weights: its ONNX shape */
  if (!(w = ingot_node_logical_input(c->n, 1, w, &unpacked))) {
    return infer_fail(c->n, INGOT_ERROR_INTERNAL, "packed weight (panels of %u) has the wrong shape", c->n->weight_block);
  }
  ingot_value_t x_logical; /* x given as dot4 words (node.x_dot4_words): x's own shape */
  if (!(x = ingot_node_logical_input(c->n, 0, x, &x_logical))) {
    return infer_fail(c->n, INGOT_ERROR_INTERNAL, "input is not the dot4 words of %lld channels",
                      (long long)c->n->weight_dot4_channels);
  }
  for (uint32_t i = 0; i < 4; ++i) {
    const ingot_value_t* v = i == 1 ? w : infer_input(c, i);
    if (v && v->dtype != INGOT_DTYPE_U8 && v->dtype != INGOT_DTYPE_I8) {
      return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "input '%s' has type %s (uint8 or int8 expected)", v->name,
                        ingot_graph_dtype_name(v->dtype));
    }
  }
  if (x->rank < 3 || x->rank > 5 || w->rank != x->rank) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "1-D to 3-D ConvInteger only (ranks %d, %d)", x->rank, w->rank);
  }
  /* group and window: node.params (graph/params.c), as for Conv */
  const ingot_window_params_t* win = &c->n->params.u.conv.window;
  int64_t dims[INGOT_MAX_RANK] = {x->dims[0], w->dims[0]};
  for (int32_t i = 0; i < win->spatial; ++i) dims[2 + i] = win->out[i];
  uint32_t rq = c->n->epilogue.requant_input;
  if (rq) { /* fused requantization: the bytes (maybe padded), then the int32 sums */
    const ingot_value_t* yz = infer_input(c, rq + 3);
    const ingot_epilogue_t* ep = &c->n->epilogue;
    int64_t zdims[INGOT_MAX_RANK];
    for (int32_t i = 0; i < x->rank; ++i) zdims[i] = dims[i];
    for (int32_t i = 0; ep->output_padded && i < win->spatial; ++i)
      zdims[2 + i] += ep->output_pads[i] + ep->output_pads[win->spatial + i];
    infer_set_output(c, 1, INGOT_DTYPE_I32, x->rank, dims);
    infer_set_output(c, 0, yz ? yz->dtype : INGOT_DTYPE_U8, x->rank, zdims);
    return INGOT_OK;
  }
  infer_set_output(c, 0, INGOT_DTYPE_I32, x->rank, dims);
  return INGOT_OK;
}

/* Dot4Words (domain ai.ingot): uint8/int8 x [N, C, spatial..] -> int32
 * [N, ceil(C / 4), spatial..], four channels' bytes a word (node.x_dot4_words
 * describes the layout); with node.dot_pairs [N, ceil(C / 2), spatial..],
 * two channels' 16-bit halves a word; with node.words_last the words' axis
 * last, [N, spatial.., G]. */
ingot_status_t infer_dot4_words(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  if ((x->dtype != INGOT_DTYPE_U8 && x->dtype != INGOT_DTYPE_I8) || x->rank < 3) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "'%s' must be uint8 or int8 [N, C, spatial..] (is %s, rank %d)",
                      x->name, ingot_graph_dtype_name(x->dtype), x->rank);
  }
  int64_t dims[INGOT_MAX_RANK];
  bool last = c->n->words_last; /* [N, spatial.., G] */
  dims[0] = x->dims[0];
  for (int32_t i = 2; i < x->rank; ++i) dims[last ? i - 1 : i] = x->dims[i];
  int64_t per = ingot_node_dot_channels(c->n);
  dims[last ? x->rank - 1 : 1] = (x->dims[1] + per - 1) / per;
  infer_set_output(c, 0, INGOT_DTYPE_I32, x->rank, dims);
  return INGOT_OK;
}

/* Im2Col (domain ai.ingot): uint8/int8 x [N, C, H, W] -> [N, C*KH*KW,
 * OH, OW], channel (c*KH + rh)*KW + rw at (oh, ow) holding x[n, c, oh*sh +
 * rh*dh, ow*sw + rw*dw]: a conv's patches as channels, no padding
 * (attributes kernel_shape, strides, dilations; ingot_graph_pack_weights).
 * With node.x_dot4_words: int32 [N, ceil(C*KH*KW / 4), OH, OW], the dot4
 * words of those channels as a Dot4Words node would make them (2 channels
 * a word with node.dot_pairs). */
ingot_status_t infer_im2col(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  if ((x->dtype != INGOT_DTYPE_U8 && x->dtype != INGOT_DTYPE_I8) || x->rank != 4) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "'%s' must be uint8 or int8 [N, C, H, W] (is %s, rank %d)",
                      x->name, ingot_graph_dtype_name(x->dtype), x->rank);
  }
  uint32_t nk = 0, ns = 0, nd = 0;
  const int64_t* k = ingot_node_attr_ints(c->n, "kernel_shape", &nk);
  const int64_t* s = ingot_node_attr_ints(c->n, "strides", &ns);
  const int64_t* d = ingot_node_attr_ints(c->n, "dilations", &nd);
  if (!k || !s || !d || nk != 2 || ns != 2 || nd != 2)
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "needs kernel_shape, strides and dilations of 2 entries");
  int64_t dims[4] = {x->dims[0], x->dims[1] * k[0] * k[1], 0, 0};
  for (int i = 0; i < 2; ++i) {
    int64_t span = (k[i] - 1) * d[i] + 1;
    if (k[i] < 1 || s[i] < 1 || d[i] < 1 || x->dims[2 + i] < span)
      return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "window %lld (stride %lld, dilation %lld) does not fit %lld",
                        (long long)k[i], (long long)s[i], (long long)d[i], (long long)x->dims[2 + i]);
    dims[2 + i] = (x->dims[2 + i] - span) / s[i] + 1;
  }
  if (c->n->x_dot4_words) { /* the int32 words of the patches (node.x_dot4_words) */
    int64_t per = ingot_node_dot_channels(c->n);
    dims[1] = (dims[1] + per - 1) / per;
    infer_set_output(c, 0, INGOT_DTYPE_I32, 4, dims);
    return INGOT_OK;
  }
  infer_set_output(c, 0, x->dtype, 4, dims);
  return INGOT_OK;
}

/* Det: X [..., M, M] (float32 or float64) -> Y [...]. The node gets a
 * second output, [..., M, M] of X's dtype, when it has none: the scratch
 * matrix that the lowering copies X into and factors in place (see the file
 * comment). A second output that the model names is refused unless nothing
 * reads it (it holds LU factors, not anything ONNX defines). */
ingot_status_t infer_det(infer_ctx_t* c) {
  const ingot_value_t* x = infer_input(c, 0);
  if (x->rank < 2 || x->dims[x->rank - 1] != x->dims[x->rank - 2]) {
    return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "input must be [..., M, M] (square matrices)");
  }
  if (x->dtype != INGOT_DTYPE_F32 && x->dtype != INGOT_DTYPE_F64) {
    return infer_fail(c->n, INGOT_ERROR_UNSUPPORTED, "input must be float32 or float64, not %s",
                      ingot_graph_dtype_name(x->dtype));
  }
  if (c->n->output_count > 1 && c->n->outputs[1] != INGOT_NO_VALUE) {
    uint32_t lu = c->n->outputs[1];
    bool read = c->g->values[lu].is_output;
    for (uint32_t i = 0; i < c->g->node_count && !read; ++i) {
      const ingot_node_t* m = &c->g->nodes[i];
      for (uint32_t k = 0; k < m->input_count && !read; ++k) read = m->inputs[k] == lu;
    }
    if (read) return infer_fail(c->n, INGOT_ERROR_INVALID_ARGUMENT, "has one output; a second one is read");
  }
  infer_ensure_output(c, 1, "lu");
  infer_set_output(c, 0, x->dtype, x->rank - 2, x->dims);
  infer_set_output(c, 1, x->dtype, x->rank, x->dims);
  return INGOT_OK;
}
