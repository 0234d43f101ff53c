/* conv3d geometry (NCDHW, or NDHWC with channels last: data_format "NDHWC", or "NHWC" as
 * Paddle writes it for conv3d_transpose), shared by inference and the CPU kernel. The
 * Filter is [M, C / groups, kd, kh, kw] in either layout. Paddle's paddings
 * (3 values, one per dim, or 6: front, back, top, bottom, left, right), padding_algorithm
 * (SAME pads so that out = ceil(in / stride) and resets dilations to 1; VALID pads 0)
 * and output extents (in + p0 + p1 - (d * (k - 1) + 1)) / s + 1. */
#ifndef RILL_OPERATORS_CONV3D_H
#define RILL_OPERATORS_CONV3D_H

#include <string.h>

#include "framework/registry/registry.h"
#include "operators/op_util.h"

enum { CONV3D_IN_INPUT, CONV3D_IN_FILTER, CONV3D_IN_RESIDUAL };
/* conv3d_grad's inputs: Input, Filter, Output (not read), Output@GRAD. */
enum { CONV3D_GRAD_IN_OUT = 2, CONV3D_GRAD_IN_DOUT = 3 };
enum { CONV3D_A_STRIDES, CONV3D_A_PADDINGS, CONV3D_A_PADALG, CONV3D_A_GROUPS, CONV3D_A_DILATIONS,
       CONV3D_A_FORMAT, CONV3D_A_OUTPUT_SIZE /* conv3d_transpose only */ };

/* The attribute entries conv3d and conv3d_transpose share (at CONV3D_A_STRIDES ..
 * CONV3D_A_FORMAT), and the slots of their gradient ops (Paddle's layout). */
#define CONV3D_INTS3(a, b, c) {.type = RILL_ATTR_INTS, .n = 3, .list.ints = (int32_t[]){a, b, c}}
#define CONV3D_WINDOW_ATTRS                                                                    \
  [CONV3D_A_STRIDES] = {"strides", RILL_ATTR_INTS, 0, CONV3D_INTS3(1, 1, 1),                  \
                        "stride per spatial dim"},                                           \
  [CONV3D_A_PADDINGS] = {"paddings", RILL_ATTR_INTS, 0, CONV3D_INTS3(0, 0, 0),                \
                         "3 values (per dim) or 6 (front, back, top, bottom, left, right)"},  \
  [CONV3D_A_PADALG] = {"padding_algorithm", RILL_ATTR_STRING, 0, RILL_DEF_STRING("EXPLICIT"), \
                       "EXPLICIT (use paddings), SAME or VALID"},                            \
  [CONV3D_A_GROUPS] = {"groups", RILL_ATTR_INT, 0, RILL_DEF_INT(1), "channel groups"},         \
  [CONV3D_A_DILATIONS] = {"dilations", RILL_ATTR_INTS, 0, CONV3D_INTS3(1, 1, 1),              \
                          "dilation per spatial dim"},                                       \
  [CONV3D_A_FORMAT] = {"data_format", RILL_ATTR_STRING, 0, RILL_DEF_STRING("NCDHW"),          \
                       "NCDHW (or AnyLayout, NCHW) or NDHWC (or NHWC: channels last)"}
#define CONV3D_GRAD_SLOTS                                                                      \
  static const rill_slot_schema grad_inputs[] = {                                              \
      [CONV3D_IN_INPUT] = {"Input", 0, "forward Input"},                                       \
      [CONV3D_IN_FILTER] = {"Filter", 0, "forward Filter"},                                    \
      [CONV3D_GRAD_IN_OUT] = {"Output", RILL_SLOT_DISPENSABLE, "forward Output (not read)"},   \
      [CONV3D_GRAD_IN_DOUT] = {"Output@GRAD", 0, "gradient of Output"},                        \
  };                                                                                           \
  static const rill_slot_schema grad_outputs[] = {                                             \
      {"Input@GRAD", RILL_SLOT_DISPENSABLE, "gradient of Input"},                              \
      {"Filter@GRAD", RILL_SLOT_DISPENSABLE, "gradient of Filter"},                            \
  }

typedef struct conv3d_geom {
  bool last; /* Input / Output are channels last ([N, D, H, W, C]) */
  int64_t n, c, m, groups;
  int64_t in[3], out[3], k[3], s[3], d[3], p[6]; /* d/h/w order; p: before/after pairs */
} conv3d_geom;

/* Whether data_format puts the channels last: NDHWC, or NHWC (Paddle's name for it in
 * conv3d_transpose and in its 2-D-named format checks); anything else is channel first. */
static inline bool conv3d_format_last(const rill_attr_value *a) {
  const char *fmt = a[CONV3D_A_FORMAT].v.s ? a[CONV3D_A_FORMAT].v.s : "NCDHW";
  return !strcmp(fmt, "NDHWC") || !strcmp(fmt, "NHWC");
}

/* The dims of Input / Output / their gradients: [N, ch, sp...], or [N, sp..., ch] when
 * channels are last. */
static inline rill_dims conv3d_dims(const conv3d_geom *g, int64_t ch, const int64_t sp[3]) {
  return g->last ? (rill_dims){5, {g->n, sp[0], sp[1], sp[2], ch}}
                 : (rill_dims){5, {g->n, ch, sp[0], sp[1], sp[2]}};
}

/* Where x (Input) holds its channels and spatial dim i in g's layout. */
static inline int conv3d_ch_axis(const conv3d_geom *g) { return g->last ? 4 : 1; }
static inline int conv3d_sp_axis(const conv3d_geom *g, int i) { return g->last ? 1 + i : 2 + i; }

/* The attributes shared by conv3d and conv3d_transpose: groups, and per spatial dim the
 * filter extent, stride, dilation and paddings (SAME computed for a conv over Input's
 * extents, dilation reset to 1; VALID none). Input and Filter must be 5-D. */
static inline const char *conv3d_window_get(const rill_attr_value *a, const rill_dims *x,
                                            const rill_dims *f, conv3d_geom *g) {
  memset(g, 0, sizeof *g);
  g->last = conv3d_format_last(a);
  if (x->n != 5)
    return g->last ? "input Input must be 5-D [N, D, H, W, C] (NDHWC)"
                   : "input Input must be 5-D [N, C, D, H, W]";
  if (f->n != 5) return "input Filter must be 5-D [M, C / groups, kd, kh, kw]";
  const rill_attr_value *st = &a[CONV3D_A_STRIDES], *pd = &a[CONV3D_A_PADDINGS],
                        *dl = &a[CONV3D_A_DILATIONS];
  if (st->n != 3) return "attribute strides must hold 3 ints";
  if (dl->n != 3) return "attribute dilations must hold 3 ints";
  if (pd->n != 3 && pd->n != 6) return "attribute paddings must hold 3 or 6 ints";
  const char *alg = a[CONV3D_A_PADALG].v.s ? a[CONV3D_A_PADALG].v.s : "EXPLICIT";
  bool same = !strcmp(alg, "SAME"), valid = !strcmp(alg, "VALID");
  if (!same && !valid && strcmp(alg, "EXPLICIT") && alg[0])
    return "attribute padding_algorithm must be EXPLICIT, SAME or VALID";
  g->n = x->d[0];
  g->groups = a[CONV3D_A_GROUPS].v.i;
  if (g->groups < 1) return "attribute groups must be at least 1";
  for (int i = 0; i < 3; i++) {
    int64_t in = x->d[conv3d_sp_axis(g, i)];
    g->k[i] = f->d[2 + i];
    g->s[i] = st->list.ints[i];
    g->d[i] = dl->list.ints[i];
    g->p[2 * i] = pd->list.ints[pd->n == 3 ? i : 2 * i];
    g->p[2 * i + 1] = pd->list.ints[pd->n == 3 ? i : 2 * i + 1];
    if (g->s[i] < 1 || g->d[i] < 1) return "strides and dilations must be positive";
    if (g->k[i] < 0) return "Filter's spatial extents must be known";
    if (valid) g->p[2 * i] = g->p[2 * i + 1] = 0;
    if (same) {
      g->d[i] = 1;
      g->p[2 * i] = g->p[2 * i + 1] = 0;
      if (in >= 0) {
        int64_t o = (in + g->s[i] - 1) / g->s[i];
        int64_t sum = (o - 1) * g->s[i] + g->k[i] - in;
        if (sum < 0) sum = 0;
        g->p[2 * i] = sum / 2;
        g->p[2 * i + 1] = sum - sum / 2;
      }
    }
    if (g->p[2 * i] < 0 || g->p[2 * i + 1] < 0) return "attribute paddings holds a negative value";
  }
  return NULL;
}

/* Fills g from the attributes and the Input / Filter dims (extents may be -1 at compile
 * time: the matching output extent is then -1). Returns NULL or a message. */
static inline const char *conv3d_geom_get(const rill_attr_value *a, const rill_dims *x,
                                          const rill_dims *f, conv3d_geom *g) {
  const char *err = conv3d_window_get(a, x, f, g);
  if (err) return err;
  g->c = x->d[conv3d_ch_axis(g)];
  g->m = f->d[0];
  if (g->c >= 0 && f->d[1] >= 0 && g->c != f->d[1] * g->groups)
    return g->last ? "the channels of Input (last dim, NDHWC) must equal Filter's dim 1 times groups"
                   : "the channels of Input must equal Filter's dim 1 times groups";
  if (g->m >= 0 && g->m % g->groups) return "Filter's dim 0 (output channels) must divide by groups";
  for (int i = 0; i < 3; i++) {
    g->in[i] = x->d[conv3d_sp_axis(g, i)];
    if (g->in[i] < 0) {
      g->out[i] = -1;
      continue;
    }
    int64_t span = g->d[i] * (g->k[i] - 1) + 1, padded = g->in[i] + g->p[2 * i] + g->p[2 * i + 1];
    if (padded < span) return "the (padded) input is smaller than the dilated filter";
    g->out[i] = (padded - span) / g->s[i] + 1;
  }
  return NULL;
}

/* conv3d_transpose's geometry as the equivalent conv3d's: Input [N, C_in, D, H, W] is the
 * conv's output (g->out), Filter [C_in, M / groups, kd, kh, kw] the conv's filter
 * (g->m = C_in, g->c = M), and Output the conv's image, of extents
 * (in - 1) * stride - pads + dilation * (k - 1) + 1, or output_size where given (it must
 * lie in [that, that + stride)). SAME pads as for a conv of the Input's extents. */
static inline const char *conv3d_transpose_geom_get(const rill_attr_value *a, const rill_dims *x,
                                                    const rill_dims *f, conv3d_geom *g) {
  const char *err = conv3d_window_get(a, x, f, g);
  if (err) return err;
  const rill_attr_value *os = &a[CONV3D_A_OUTPUT_SIZE];
  if (os->n != 0 && os->n != 3) return "attribute output_size must be empty or hold 3 ints";
  g->m = f->d[0];
  g->c = f->d[1] >= 0 ? f->d[1] * g->groups : -1;
  int64_t cin = x->d[conv3d_ch_axis(g)];
  if (cin >= 0 && f->d[0] >= 0 && cin != f->d[0])
    return g->last ? "the channels of Input (last dim, NDHWC) must equal Filter's dim 0"
                   : "the channels of Input must equal Filter's dim 0";
  if (g->m >= 0 && g->m % g->groups) return "Filter's dim 0 (input channels) must divide by groups";
  for (int i = 0; i < 3; i++) {
    g->out[i] = x->d[conv3d_sp_axis(g, i)];
    if (g->out[i] < 0) {
      g->in[i] = -1;
      continue;
    }
    int64_t o = (g->out[i] - 1) * g->s[i] - g->p[2 * i] - g->p[2 * i + 1] + g->d[i] * (g->k[i] - 1) + 1;
    if (o <= 0) return "the transposed output extent is not positive";
    if (os->n && os->list.ints[i] > 0) {
      if (os->list.ints[i] < o || os->list.ints[i] >= o + g->s[i])
        return "attribute output_size must lie in [inferred, inferred + stride) per dim";
      o = os->list.ints[i];
    }
    g->in[i] = o;
  }
  return NULL;
}

/* The metas of conv3d_grad's and conv3d_transpose_grad's outputs: Input@GRAD like Input,
 * Filter@GRAD like Filter (either output may be absent). */
static inline void conv3d_grad_metas(rill_infer_ctx *ctx, const rill_tensor_meta *x,
                                     const rill_tensor_meta *f) {
  for (size_t i = 0; i < 2; i++) {
    rill_tensor_meta *o = rill_infer_out(ctx, i, 0);
    const rill_tensor_meta *src = i == 0 ? x : f;
    if (!o) continue;
    if (src->known) rill_meta_set(o, src->dtype, &src->dims, src->lod_level, -1, -1);
    else rill_meta_unknown(o);
  }
}

#endif
