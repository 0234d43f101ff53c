/* Helpers shared by the neural-network ops (conv2d, depthwise_conv2d, conv2d_transpose,
 * pool2d, batch_norm, layer_norm, dropout): Paddle's padding rules, output sizes and a
 * gradient maker that names the slots explicitly. Used by inference and by the kernels,
 * so both compute the same geometry. */
#ifndef RILL_OPERATORS_NN_H
#define RILL_OPERATORS_NN_H

#include <stdio.h>
#include <string.h>

#include "operators/op_util.h"

/* The attributes of conv2d and depthwise_conv2d, in the order their kernels read them
 * (RILL_CONV_* below); conv2d_fusion starts with the same list so it can call the conv2d
 * kernel with its own context. */
#define RILL_CONV_ATTRS                                                                            \
  {"strides", RILL_ATTR_INTS, 0, {.type = RILL_ATTR_INTS, .n = 2, .list.ints = (int32_t[]){1, 1}}, \
   "stride per spatial dim"},                                                                   \
  {"paddings", RILL_ATTR_INTS, 0, {.type = RILL_ATTR_INTS, .n = 2, .list.ints = (int32_t[]){0, 0}}, \
   "2 values (per dim) or 4 (top, bottom, left, right)"},                                      \
  {"padding_algorithm", RILL_ATTR_STRING, 0, RILL_DEF_STRING("EXPLICIT"),                       \
   "EXPLICIT (use paddings), SAME or VALID"},                                                   \
  {"groups", RILL_ATTR_INT, 0, RILL_DEF_INT(1), "channel groups"},                              \
  {"dilations", RILL_ATTR_INTS, 0, {.type = RILL_ATTR_INTS, .n = 2, .list.ints = (int32_t[]){1, 1}}, \
   "dilation per spatial dim"},                                                                 \
  {"data_format", RILL_ATTR_STRING, 0, RILL_DEF_STRING("NCHW"),                                \
   "NCHW (or AnyLayout), or NHWC (conv2d, depthwise_conv2d; the others refuse it: UNIMPLEMENTED)"}, \
  {"use_cudnn", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},            \
  {"use_mkldnn", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},           \
  {"workspace_size_MB", RILL_ATTR_INT, RILL_ATTR_EXTRA, RILL_DEF_INT(512), "ignored"},           \
  {"exhaustive_search", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"}

/* The attributes of an int8 op (conv2d_int8, mul_int8) that quantizes its float input
 * itself (input InScale, the fake quantize op folded into it): the folded op's bit_length
 * and round_type, with fake_quantize's meaning (kernels/cpu/quant_levels.h). */
#define RILL_I8_QUANT_ATTRS                                                                         \
  {"bit_length", RILL_ATTR_INT, 0, RILL_DEF_INT(8), "with InScale: bits of the levels, 2..8"},      \
  {"round_type", RILL_ATTR_INT, 0, RILL_DEF_INT(1),                                              \
   "with InScale: 0 round half to even and clamp, 1 clip to the scale and round half away"}

/* With InScale, bit_length must be in [2, 8] (levels fit int8) and round_type 0 or 1. */
static inline bool rill_nn_i8_quant_attrs_ok(int bits, int round_type) {
  return bits >= 2 && bits <= 8 && (round_type == 0 || round_type == 1);
}

/* Reads an INTS attribute of exactly `n` values into out; false otherwise. */
static inline bool rill_nn_ints(const rill_attr_value *a, size_t n, int64_t *out) {
  if (a->type != RILL_ATTR_INTS || a->n != n) return false;
  for (size_t i = 0; i < n; i++) out[i] = a->list.ints[i];
  return true;
}

/* Paddle's padding_algorithm: 0 EXPLICIT, 1 SAME, 2 VALID, -1 unknown. */
static inline int rill_nn_padding_algorithm(const rill_attr_value *a) {
  const char *s = a->type == RILL_ATTR_STRING && a->v.s ? a->v.s : "";
  if (strcmp(s, "EXPLICIT") == 0 || s[0] == 0) return 0;
  if (strcmp(s, "SAME") == 0) return 1;
  if (strcmp(s, "VALID") == 0) return 2;
  return -1;
}

/* NCHW (also Paddle's "AnyLayout"): true; "NHWC": false with *known set. */
static inline bool rill_nn_is_nchw(const rill_attr_value *a) {
  const char *s = a->type == RILL_ATTR_STRING && a->v.s ? a->v.s : "NCHW";
  return strcmp(s, "NHWC") != 0 && strcmp(s, "NDHWC") != 0;
}

/* Paddle's UpdatePaddingAndDilation for 2 spatial dims. `pads` is the paddings attribute
 * (2 values: symmetric per dim; 4: top, bottom, left, right); in[i] may be -1 (compile
 * time), which leaves SAME's paddings at 0 (the output is then unknown anyway). Writes
 * pad[4] = {top, bottom, left, right}; with SAME the dilations become 1. On error writes
 * a message into err and returns false. */
static inline bool rill_nn_paddings(const rill_attr_value *pads, int algo, const int64_t in[2],
                                    const int64_t k[2], const int64_t stride[2], int64_t dil[2],
                                    int64_t pad[4], char *err, size_t errsz) {
  if (pads->type != RILL_ATTR_INTS || (pads->n != 2 && pads->n != 4)) {
    snprintf(err, errsz, "attribute paddings must hold 2 or 4 ints, has %zu", pads->n);
    return false;
  }
  if (pads->n == 2) {
    pad[0] = pad[1] = pads->list.ints[0];
    pad[2] = pad[3] = pads->list.ints[1];
  } else {
    for (int i = 0; i < 4; i++) pad[i] = pads->list.ints[i];
  }
  if (algo == 1) {
    for (int i = 0; i < 2; i++) {
      if (in[i] < 0) {
        pad[2 * i] = pad[2 * i + 1] = 0;
        continue;
      }
      int64_t out = (in[i] + stride[i] - 1) / stride[i];
      int64_t sum = (out - 1) * stride[i] + k[i] - in[i];
      if (sum < 0) sum = 0;
      pad[2 * i] = sum / 2;
      pad[2 * i + 1] = sum - sum / 2;
      dil[i] = 1;
    }
  } else if (algo == 2) {
    for (int i = 0; i < 4; i++) pad[i] = 0;
  }
  for (int i = 0; i < 4; i++)
    if (pad[i] < 0) {
      snprintf(err, errsz, "attribute paddings holds a negative value %lld", (long long)pad[i]);
      return false;
    }
  return true;
}

/* Convolution output extent; -1 when in is unknown, -2 when not positive. */
static inline int64_t rill_nn_conv_out(int64_t in, int64_t k, int64_t p0, int64_t p1, int64_t s,
                                       int64_t d) {
  if (in < 0 || k < 0) return -1;
  int64_t span = d * (k - 1) + 1;
  int64_t o = (in + p0 + p1 - span) / s + 1;
  if (in + p0 + p1 < span || o <= 0) return -2;
  return o;
}

/* Transposed-convolution output extent (before output_size / output_padding). */
static inline int64_t rill_nn_convt_out(int64_t in, int64_t k, int64_t p0, int64_t p1, int64_t s,
                                        int64_t d) {
  if (in < 0 || k < 0) return -1;
  int64_t o = (in - 1) * s - p0 - p1 + d * (k - 1) + 1;
  return o <= 0 ? -2 : o;
}

/* Sets output (slot, 0), when present, to input (islot, 0)'s meta (gradient outputs). */
static inline void rill_nn_same_meta(rill_infer_ctx *ctx, size_t oslot, size_t islot) {
  rill_tensor_meta *o = rill_infer_out(ctx, oslot, 0);
  const rill_tensor_meta *i = rill_infer_in(ctx, islot, 0);
  if (!o) return;
  if (!i || !i->known) {
    rill_meta_unknown(o);
    return;
  }
  rill_meta_set(o, i->dtype, &i->dims, i->lod_level, (int)islot, 0);
}

/* An error naming the first input slot of the schema that is neither dispensable nor
 * bound; NULL when all are. */
static inline rill_status *rill_nn_need_inputs(rill_infer_ctx *ctx) {
  for (size_t s = 0; s < ctx->schema->ninputs; s++)
    if (!(ctx->schema->inputs[s].flags & RILL_SLOT_DISPENSABLE) && !rill_infer_in(ctx, s, 0))
      return rill_infer_error(ctx, "needs input %s", ctx->schema->inputs[s].name);
  return NULL;
}

/* The gradient (oslot, 0) of a table (input islot): like the table, or with `sparse`
 * left unknown, since the kernel writes selected rows. */
static inline void rill_nn_table_grad_meta(rill_infer_ctx *ctx, size_t oslot, size_t islot,
                                           bool sparse) {
  rill_tensor_meta *o = rill_infer_out(ctx, oslot, 0);
  if (o && sparse) rill_meta_unknown(o);
  else rill_nn_same_meta(ctx, oslot, islot);
}

/* When x is not known yet, marks every present output unknown and returns true. */
static inline bool rill_nn_outputs_unknown(rill_infer_ctx *ctx, const rill_tensor_meta *x) {
  if (x->known) return false;
  for (size_t s = 0; s < ctx->schema->noutputs; s++) {
    rill_tensor_meta *m = rill_infer_out(ctx, s, 0);
    if (m) rill_meta_unknown(m);
  }
  return true;
}

/* Sets outputs (slot, 0) and (slot + 1, 0), where present, to [c] of x's dtype (the
 * per-channel Scale and Bias gradients of the normalisation ops); unknown while x is. */
static inline void rill_nn_channel_grads(rill_infer_ctx *ctx, size_t slot,
                                         const rill_tensor_meta *x, int64_t c) {
  for (size_t o = slot; o <= slot + 1; o++) {
    rill_tensor_meta *m = rill_infer_out(ctx, o, 0);
    if (!m) continue;
    if (!x->known) {
      rill_meta_unknown(m);
      continue;
    }
    rill_dims cd = {.n = 1, .d = {c}};
    rill_meta_set(m, x->dtype, &cd, 0, -1, -1);
  }
}

/* Convolution geometry. For conv2d / depthwise_conv2d the "image" is the Input and the
 * "columns" side is the Output; for conv2d_transpose it is the other way round (the
 * transposed conv's Output is the image of the equivalent conv2d, its Input the conv
 * output), so one set of kernels serves both. Filters are [m, c / groups, kh, kw]. */
typedef struct rill_conv_geom {
  int64_t n, c, h, w; /* image: batch, channels, extents */
  int64_t m, oh, ow;  /* conv output channels and extents */
  int64_t kh, kw, groups;
  int64_t sh, sw, dh, dw, pt, pb, pl, pr;
  bool nhwc; /* Input / Output are [N, H, W, C] (data_format NHWC); Filter stays OIHW */
} rill_conv_geom;

/* Attribute positions shared by every conv schema (and their _grad ops), taken from
 * conv2d's and conv2d_transpose's generated names; the others are asserted to agree. */
enum {
  RILL_CONV_STRIDES = RILL_CONV2D_ATTR_STRIDES,
  RILL_CONV_PADDINGS = RILL_CONV2D_ATTR_PADDINGS,
  RILL_CONV_PADALG = RILL_CONV2D_ATTR_PADDING_ALGORITHM,
  RILL_CONV_GROUPS = RILL_CONV2D_ATTR_GROUPS,
  RILL_CONV_DILATIONS = RILL_CONV2D_ATTR_DILATIONS,
  RILL_CONV_FORMAT = RILL_CONV2D_ATTR_DATA_FORMAT,
  RILL_CONV_OUTPUT_PADDING = RILL_CONV2D_TRANSPOSE_ATTR_OUTPUT_PADDING,
  RILL_CONV_OUTPUT_SIZE = RILL_CONV2D_TRANSPOSE_ATTR_OUTPUT_SIZE,
};
#define RILL_CONV_SAME_ATTRS(OP)                                                          \
  _Static_assert(RILL_SAME_POS(RILL_##OP##_ATTR_STRIDES, RILL_CONV_STRIDES) &&            \
                     RILL_SAME_POS(RILL_##OP##_ATTR_PADDINGS, RILL_CONV_PADDINGS) &&      \
                     RILL_SAME_POS(RILL_##OP##_ATTR_PADDING_ALGORITHM, RILL_CONV_PADALG) &&            \
                     RILL_SAME_POS(RILL_##OP##_ATTR_GROUPS, RILL_CONV_GROUPS) &&          \
                     RILL_SAME_POS(RILL_##OP##_ATTR_DILATIONS, RILL_CONV_DILATIONS) &&    \
                     RILL_SAME_POS(RILL_##OP##_ATTR_DATA_FORMAT, RILL_CONV_FORMAT),       \
                 #OP "'s first attributes must be conv2d's")
RILL_CONV_SAME_ATTRS(CONV2D_GRAD);
RILL_CONV_SAME_ATTRS(DEPTHWISE_CONV2D);
RILL_CONV_SAME_ATTRS(DEPTHWISE_CONV2D_GRAD);
RILL_CONV_SAME_ATTRS(CONV2D_FUSION);
RILL_CONV_SAME_ATTRS(CONV2D_INT8);
RILL_CONV_SAME_ATTRS(CONV2D_TRANSPOSE);
RILL_CONV_SAME_ATTRS(CONV2D_TRANSPOSE_GRAD);
RILL_CONV_SAME_ATTRS(CONV3D);
_Static_assert(RILL_SAME_POS(RILL_CONV2D_TRANSPOSE_GRAD_ATTR_OUTPUT_PADDING, RILL_CONV_OUTPUT_PADDING) &&
                   RILL_SAME_POS(RILL_CONV2D_TRANSPOSE_GRAD_ATTR_OUTPUT_SIZE, RILL_CONV_OUTPUT_SIZE),
               "conv2d_transpose_grad's attributes must be conv2d_transpose's");

/* Builds the geometry from Input dims x and Filter dims f (either may hold -1: compile
 * time; unknown extents come out -1). For a transposed conv `transpose` is true and
 * attrs must hold output_padding and output_size. Returns false with a message. */
static inline bool rill_nn_conv_geom_fmt(const rill_attr_value *attrs, bool transpose, bool allow_nhwc,
                                         const rill_dims *x, const rill_dims *f, rill_conv_geom *g,
                                         char *err, size_t errsz) {
  memset(g, 0, sizeof *g);
  bool nhwc = !rill_nn_is_nchw(&attrs[RILL_CONV_FORMAT]);
  if (x->n != 4) {
    snprintf(err, errsz, "input Input must be 4-D (%s), has rank %d", nhwc ? "NHWC" : "NCHW", (int)x->n);
    return false;
  }
  if (f->n != 4) {
    snprintf(err, errsz, "input Filter must be 4-D, has rank %d", (int)f->n);
    return false;
  }
  if (nhwc && !allow_nhwc) {
    snprintf(err, errsz, "data_format NHWC is not supported by this op (UNIMPLEMENTED): use NCHW");
    return false;
  }
  int64_t s[2], d[2], pad[4];
  if (!rill_nn_ints(&attrs[RILL_CONV_STRIDES], 2, s) || s[0] <= 0 || s[1] <= 0) {
    snprintf(err, errsz, "attribute strides must be 2 positive ints");
    return false;
  }
  if (!rill_nn_ints(&attrs[RILL_CONV_DILATIONS], 2, d) || d[0] <= 0 || d[1] <= 0) {
    snprintf(err, errsz, "attribute dilations must be 2 positive ints");
    return false;
  }
  int64_t groups = attrs[RILL_CONV_GROUPS].v.i;
  if (groups < 1) {
    snprintf(err, errsz, "attribute groups must be >= 1, is %lld", (long long)groups);
    return false;
  }
  int algo = rill_nn_padding_algorithm(&attrs[RILL_CONV_PADALG]);
  if (algo < 0) {
    snprintf(err, errsz, "attribute padding_algorithm '%s' is not EXPLICIT, SAME or VALID",
             attrs[RILL_CONV_PADALG].v.s ? attrs[RILL_CONV_PADALG].v.s : "");
    return false;
  }
  for (int i = 0; i < 4; i++)
    if (f->d[i] == 0 || x->d[i] == 0) {
      snprintf(err, errsz, "inputs Input and Filter must have no zero extent");
      return false;
    }
  int64_t k[2] = {f->d[2], f->d[3]}, in[2] = {x->d[nhwc ? 1 : 2], x->d[nhwc ? 2 : 3]};
  if (!rill_nn_paddings(&attrs[RILL_CONV_PADDINGS], algo, in, k, s, d, pad, err, errsz)) return false;
  g->n = x->d[0];
  g->kh = k[0];
  g->kw = k[1];
  g->groups = groups;
  g->sh = s[0];
  g->sw = s[1];
  g->dh = d[0];
  g->dw = d[1];
  g->pt = pad[0];
  g->pb = pad[1];
  g->pl = pad[2];
  g->pr = pad[3];
  g->nhwc = nhwc;
  if (!transpose) {
    g->c = x->d[nhwc ? 3 : 1];
    g->h = in[0];
    g->w = in[1];
    g->m = f->d[0];
    if (g->c >= 0 && f->d[1] >= 0 && g->c != f->d[1] * groups) {
      snprintf(err, errsz, "input Input has %lld channels but Filter takes %lld x groups %lld",
               (long long)g->c, (long long)f->d[1], (long long)groups);
      return false;
    }
    if (g->m >= 0 && g->m % groups) {
      snprintf(err, errsz, "Filter's %lld output channels do not divide into %lld groups",
               (long long)g->m, (long long)groups);
      return false;
    }
    int64_t o[2];
    for (int i = 0; i < 2; i++) {
      o[i] = rill_nn_conv_out(in[i], k[i], pad[2 * i], pad[2 * i + 1], s[i], d[i]);
      if (o[i] == -2) {
        snprintf(err, errsz, "input extent %lld with paddings %lld+%lld is smaller than the "
                 "dilated filter extent %lld", (long long)in[i], (long long)pad[2 * i],
                 (long long)pad[2 * i + 1], (long long)(d[i] * (k[i] - 1) + 1));
        return false;
      }
    }
    g->oh = o[0];
    g->ow = o[1];
    return true;
  }
  g->m = f->d[0];
  g->oh = in[0];
  g->ow = in[1];
  g->c = f->d[1] >= 0 ? f->d[1] * groups : -1;
  int64_t xc = x->d[nhwc ? 3 : 1];
  if (xc >= 0 && f->d[0] >= 0 && xc != f->d[0]) {
    snprintf(err, errsz, "input Input has %lld channels but Filter's first dim is %lld",
             (long long)xc, (long long)f->d[0]);
    return false;
  }
  if (g->m >= 0 && g->m % groups) {
    snprintf(err, errsz, "Filter's %lld input channels do not divide into %lld groups",
             (long long)g->m, (long long)groups);
    return false;
  }
  const rill_attr_value *osz = &attrs[RILL_CONV_OUTPUT_SIZE], *opad = &attrs[RILL_CONV_OUTPUT_PADDING];
  if (osz->n && osz->n != 2) {
    snprintf(err, errsz, "attribute output_size must be empty or 2 ints, has %zu", osz->n);
    return false;
  }
  if (opad->n && opad->n != 2) {
    snprintf(err, errsz, "attribute output_padding must be empty or 2 ints, has %zu", opad->n);
    return false;
  }
  int64_t o[2];
  for (int i = 0; i < 2; i++) {
    o[i] = rill_nn_convt_out(in[i], k[i], pad[2 * i], pad[2 * i + 1], s[i], d[i]);
    if (o[i] == -2) {
      snprintf(err, errsz, "transposed output extent is not positive (input %lld, paddings "
               "%lld+%lld)", (long long)in[i], (long long)pad[2 * i], (long long)pad[2 * i + 1]);
      return false;
    }
    if (osz->n && osz->list.ints[i] > 0) {
      int64_t want = osz->list.ints[i];
      if (o[i] >= 0 && (want < o[i] || want >= o[i] + s[i])) {
        snprintf(err, errsz, "output_size[%d] = %lld must lie in [%lld, %lld)", i, (long long)want,
                 (long long)o[i], (long long)(o[i] + s[i]));
        return false;
      }
      o[i] = want;
    } else if (opad->n) {
      int64_t op = opad->list.ints[i];
      if (op < 0 || (op >= s[i] && op >= d[i])) {
        snprintf(err, errsz, "output_padding[%d] = %lld must be >= 0 and below max(stride, "
                 "dilation)", i, (long long)op);
        return false;
      }
      if (o[i] >= 0) o[i] += op;
    }
  }
  g->h = o[0];
  g->w = o[1];
  return true;
}

/* rill_nn_conv_geom_fmt for the ops that run NCHW only (they refuse NHWC). */
static inline bool rill_nn_conv_geom(const rill_attr_value *attrs, bool transpose,
                                     const rill_dims *x, const rill_dims *f, rill_conv_geom *g,
                                     char *err, size_t errsz) {
  return rill_nn_conv_geom_fmt(attrs, transpose, false, x, f, g, err, errsz);
}

/* The conv output's dims: [N, M, OH, OW], or [N, OH, OW, M] for NHWC. */
static inline rill_dims rill_nn_conv_out_dims(const rill_conv_geom *g) {
  return g->nhwc ? (rill_dims){4, {g->n, g->oh, g->ow, g->m}} : (rill_dims){4, {g->n, g->m, g->oh, g->ow}};
}

/* A transposed conv's Output dims (the image side): [N, C, H, W], or [N, H, W, C] for NHWC. */
static inline rill_dims rill_nn_convt_out_dims(const rill_conv_geom *g) {
  return g->nhwc ? (rill_dims){4, {g->n, g->h, g->w, g->c}} : (rill_dims){4, {g->n, g->c, g->h, g->w}};
}

/* The forward geometry of a conv's Input x and Filter f (inputs 0 and 1) at shape
 * inference (NHWC refused unless allow_nhwc); an error names both with their shapes (UNIMPLEMENTED where the attributes
 * ask for what rill does not run). */
static inline rill_status *rill_nn_infer_conv_geom(rill_infer_ctx *ctx, bool allow_nhwc,
                                                   const rill_tensor_meta *x,
                                                   const rill_tensor_meta *f, rill_conv_geom *g) {
  char err[256];
  if (rill_nn_conv_geom_fmt(ctx->attrs, false, allow_nhwc, &x->dims, &f->dims, g, err, sizeof err))
    return NULL;
  char xs[RILL_DIMS_STR_MAX], fs[RILL_DIMS_STR_MAX];
  rill_status *st = rill_infer_error(ctx, "Input (%s) %s, Filter (%s) %s: %s", rill_infer_in_name(ctx, 0, 0),
                                     rill_dims_str(&x->dims, xs, sizeof xs), rill_infer_in_name(ctx, 1, 0),
                                     rill_dims_str(&f->dims, fs, sizeof fs), err);
  if (!strstr(err, "UNIMPLEMENTED")) return st;
  rill_status *u = rill_error(RILL_UNIMPLEMENTED, "%s", rill_status_message(st));
  rill_status_destroy(st);
  return u;
}

/* ---- pool2d ---- */

/* Attribute positions of pool2d (and pool2d_grad, which shares its table). */
enum {
  RILL_POOL_TYPE = RILL_POOL2D_ATTR_POOLING_TYPE,
  RILL_POOL_KSIZE = RILL_POOL2D_ATTR_KSIZE,
  RILL_POOL_GLOBAL = RILL_POOL2D_ATTR_GLOBAL_POOLING,
  RILL_POOL_STRIDES = RILL_POOL2D_ATTR_STRIDES,
  RILL_POOL_PADDINGS = RILL_POOL2D_ATTR_PADDINGS,
  RILL_POOL_EXCLUSIVE = RILL_POOL2D_ATTR_EXCLUSIVE,
  RILL_POOL_ADAPTIVE = RILL_POOL2D_ATTR_ADAPTIVE,
  RILL_POOL_CEIL = RILL_POOL2D_ATTR_CEIL_MODE,
  RILL_POOL_FORMAT = RILL_POOL2D_ATTR_DATA_FORMAT,
  RILL_POOL_PADALG = RILL_POOL2D_ATTR_PADDING_ALGORITHM,
};

typedef struct rill_pool_geom {
  int64_t n, c, h, w, oh, ow, kh, kw, sh, sw, pt, pb, pl, pr;
  bool max, adaptive, exclusive;
  bool last; /* NHWC: channels are the last dim */
} rill_pool_geom;

/* X's or Out's dims for geometry g with spatial extents h, w: [N, C, H, W] or, channel
 * last, [N, H, W, C]. */
static inline rill_dims rill_nn_pool_dims(const rill_pool_geom *g, int64_t h, int64_t w) {
  if (g->last) return (rill_dims){4, {g->n, h, w, g->c}};
  return (rill_dims){4, {g->n, g->c, h, w}};
}

/* Paddle's pool2d shape rules: paddings expanded / SAME / VALID, zeroed for global and
 * adaptive pooling; global pooling takes the whole image as the window; adaptive
 * pooling's output is ksize; otherwise (in - k + pads [+ stride - 1 with ceil_mode]) /
 * stride + 1. data_format NHWC reads X as [N, H, W, C]. x may hold -1 (compile time). */
static inline bool rill_nn_pool_geom(const rill_attr_value *attrs, const rill_dims *x,
                                     rill_pool_geom *g, char *err, size_t errsz) {
  memset(g, 0, sizeof *g);
  const rill_attr_value *fa = &attrs[RILL_POOL_FORMAT];
  const char *fmt = fa->type == RILL_ATTR_STRING && fa->v.s ? fa->v.s : "NCHW";
  if (!strcmp(fmt, "NDHWC")) {
    snprintf(err, errsz, "attribute data_format '%s' is not NCHW, NHWC or AnyLayout", fmt);
    return false;
  }
  g->last = !rill_nn_is_nchw(fa);
  if (x->n != 4) {
    snprintf(err, errsz, "input X must be 4-D (%s), has rank %d", g->last ? "NHWC" : "NCHW",
             (int)x->n);
    return false;
  }
  const char *type = attrs[RILL_POOL_TYPE].v.s ? attrs[RILL_POOL_TYPE].v.s : "";
  if (strcmp(type, "max") != 0 && strcmp(type, "avg") != 0) {
    snprintf(err, errsz, "attribute pooling_type '%s' is not max or avg", type);
    return false;
  }
  g->max = type[0] == 'm';
  int64_t k[2], s[2], pad[4], d[2] = {1, 1};
  bool global = attrs[RILL_POOL_GLOBAL].v.b;
  /* with global_pooling ksize is replaced by the image extent (files hold anything) */
  if (!rill_nn_ints(&attrs[RILL_POOL_KSIZE], 2, k) || (!global && (k[0] <= 0 || k[1] <= 0))) {
    snprintf(err, errsz, "attribute ksize must be 2 positive ints");
    return false;
  }
  if (global) k[0] = k[1] = 1;
  if (!rill_nn_ints(&attrs[RILL_POOL_STRIDES], 2, s) || s[0] <= 0 || s[1] <= 0) {
    snprintf(err, errsz, "attribute strides must be 2 positive ints");
    return false;
  }
  int algo = rill_nn_padding_algorithm(&attrs[RILL_POOL_PADALG]);
  if (algo < 0) {
    snprintf(err, errsz, "attribute padding_algorithm '%s' is not EXPLICIT, SAME or VALID",
             attrs[RILL_POOL_PADALG].v.s ? attrs[RILL_POOL_PADALG].v.s : "");
    return false;
  }
  int64_t in[2] = {x->d[g->last ? 1 : 2], x->d[g->last ? 2 : 3]};
  if (!rill_nn_paddings(&attrs[RILL_POOL_PADDINGS], algo, in, k, s, d, pad, err, errsz)) return false;
  g->adaptive = attrs[RILL_POOL_ADAPTIVE].v.b;
  g->exclusive = attrs[RILL_POOL_EXCLUSIVE].v.b;
  if (global || g->adaptive) pad[0] = pad[1] = pad[2] = pad[3] = 0;
  if (global) {
    k[0] = in[0];
    k[1] = in[1];
  }
  g->n = x->d[0];
  g->c = x->d[g->last ? 3 : 1];
  g->h = in[0];
  g->w = in[1];
  g->kh = k[0];
  g->kw = k[1];
  g->sh = s[0];
  g->sw = s[1];
  g->pt = pad[0];
  g->pb = pad[1];
  g->pl = pad[2];
  g->pr = pad[3];
  int64_t o[2];
  for (int i = 0; i < 2; i++) {
    if (g->adaptive) {
      o[i] = k[i];
      continue;
    }
    if (in[i] < 0) {
      o[i] = -1;
      continue;
    }
    int64_t span = in[i] - k[i] + pad[2 * i] + pad[2 * i + 1];
    if (attrs[RILL_POOL_CEIL].v.b) span += s[i] - 1;
    o[i] = span / s[i] + 1; /* C division truncates, as in Paddle */
    if (o[i] <= 0) {
      snprintf(err, errsz, "output extent is not positive: input %lld, ksize %lld, paddings "
               "%lld+%lld, stride %lld", (long long)in[i], (long long)k[i], (long long)pad[2 * i],
               (long long)pad[2 * i + 1], (long long)s[i]);
      return false;
    }
  }
  if (g->adaptive && (in[0] == 0 || in[1] == 0)) {
    snprintf(err, errsz, "adaptive pooling of an empty image");
    return false;
  }
  g->oh = o[0];
  g->ow = o[1];
  return true;
}

#endif
