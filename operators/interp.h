/* The interpolation ops (nearest_interp, bilinear_interp and their _v2): how the output
 * size and the source-coordinate ratios are resolved from attributes and the optional
 * OutSize / SizeTensor / Scale inputs. Shared by shape inference and the CPU kernels so
 * that both agree. Paddle's rules (interpolate_op.h, phi interpolate kernels):
 *
 *   SizeTensor (one 1-element tensor per spatial dim) wins; else the scale (Scale
 *   input, else attribute `scale`) gives out = (int)(in * scale) when positive, else the
 *   out_d/out_h/out_w attributes; OutSize (a 1-D tensor) then overrides the size.
 *   ratio = align_corners ? (in-1)/(out-1) : (v2 with a positive scale ? 1/scale : in/out),
 *   0 when out <= 1. */
#ifndef RILL_OPERATORS_INTERP_H
#define RILL_OPERATORS_INTERP_H

#include <string.h>

#include "framework/data/tensor.h"
#include "framework/registry/registry.h"

/* Input slots; the gradient ops add Out@GRAD after the forward's four. */
enum { INTERP_IN_X, INTERP_IN_OUT_SIZE, INTERP_IN_SIZE_TENSOR, INTERP_IN_SCALE, INTERP_IN_DOUT };
enum {
  INTERP_A_LAYOUT,
  INTERP_A_OUT_D,
  INTERP_A_OUT_H,
  INTERP_A_OUT_W,
  INTERP_A_SCALE,
  INTERP_A_METHOD,
  INTERP_A_ALIGN_CORNERS,
  INTERP_A_ALIGN_MODE,
  INTERP_A_COUNT
};
enum { INTERP_NEAREST, INTERP_BILINEAR, INTERP_TRILINEAR };

typedef struct interp_plan {
  int nsp;             /* spatial dims: 2 (4-D input) or 3 (5-D input) */
  bool channel_last;   /* NHWC / NDHWC */
  int method;          /* INTERP_NEAREST, INTERP_BILINEAR or INTERP_TRILINEAR */
  bool align_corners;
  int align_mode;
  int64_t n, c;
  int64_t in[3], out[3]; /* spatial extents, d/h/w order (nsp of them); -1 unknown */
  float scale[3];        /* the scale used, or -1 */
  float ratio[3];
} interp_plan;

/* Reads element i of an int32/int64 tensor. */
static inline bool interp_read_int(const rill_tensor *t, int64_t i, int64_t *v) {
  if (!t || !rill_tensor_ptr(t) || i >= rill_tensor_numel(t)) return false;
  if (t->dtype == RILL_DTYPE_INT32) *v = ((const int32_t *)rill_tensor_ptr(t))[i];
  else if (t->dtype == RILL_DTYPE_INT64) *v = ((const int64_t *)rill_tensor_ptr(t))[i];
  else return false;
  return true;
}

static inline bool interp_read_float(const rill_tensor *t, int64_t i, float *v) {
  if (!t || !rill_tensor_ptr(t) || i >= rill_tensor_numel(t)) return false;
  if (t->dtype == RILL_DTYPE_FP32) *v = ((const float *)rill_tensor_ptr(t))[i];
  else if (t->dtype == RILL_DTYPE_FP64) *v = (float)((const double *)rill_tensor_ptr(t))[i];
  else return false;
  return true;
}

/* Resolves the plan. `v2` selects the _v2 attribute set (scale is a list). The size
 * inputs are given as tensors (run time: NULL when absent) and as presence flags
 * (compile time: present but unknown gives -1 extents). Returns NULL or a message. */
static inline const char *interp_resolve(const rill_attr_value *attrs, bool v2, const rill_dims *xd,
                                         bool has_out_size, const rill_tensor *out_size,
                                         size_t n_size_tensor, const rill_tensor *const *size_tensors,
                                         bool has_scale, const rill_tensor *scale_t, bool runtime,
                                         interp_plan *p) {
  memset(p, 0, sizeof *p);
  if (xd->n != 4 && xd->n != 5) return "input X must be 4-D or 5-D";
  p->nsp = xd->n - 2;
  const char *layout = attrs[INTERP_A_LAYOUT].v.s ? attrs[INTERP_A_LAYOUT].v.s : "NCHW";
  if (!strcmp(layout, "NHWC") || !strcmp(layout, "NDHWC")) p->channel_last = true;
  else if (strcmp(layout, "NCHW") && strcmp(layout, "NCDHW") && strcmp(layout, "AnyLayout"))
    return "attribute data_layout must be NCHW, NHWC, NCDHW or NDHWC";
  const char *m = attrs[INTERP_A_METHOD].v.s ? attrs[INTERP_A_METHOD].v.s : "";
  if (!strcmp(m, "nearest")) p->method = INTERP_NEAREST;
  else if (!strcmp(m, "bilinear")) p->method = INTERP_BILINEAR;
  else if (!strcmp(m, "trilinear")) p->method = INTERP_TRILINEAR;
  else return "attribute interp_method must be \"nearest\", \"bilinear\" or \"trilinear\" (rill "
              "has no linear or bicubic interpolation yet)";
  if (p->method == INTERP_BILINEAR && p->nsp != 2) return "bilinear interpolation needs a 4-D input X";
  if (p->method == INTERP_TRILINEAR && p->nsp != 3) return "trilinear interpolation needs a 5-D input X";
  p->align_corners = attrs[INTERP_A_ALIGN_CORNERS].v.b;
  p->align_mode = attrs[INTERP_A_ALIGN_MODE].v.i;
  p->n = xd->d[0];
  p->c = p->channel_last ? xd->d[xd->n - 1] : xd->d[1];
  for (int i = 0; i < p->nsp; i++) {
    p->in[i] = xd->d[p->channel_last ? 1 + i : 2 + i];
    p->scale[i] = -1;
  }
  const int out_attr[3] = {INTERP_A_OUT_D, INTERP_A_OUT_H, INTERP_A_OUT_W};
  if (n_size_tensor > 0) {
    if (n_size_tensor != (size_t)p->nsp) return "input SizeTensor must hold one tensor per spatial dim";
    for (int i = 0; i < p->nsp; i++) {
      p->out[i] = -1;
      if (runtime && !interp_read_int(size_tensors[i], 0, &p->out[i]))
        return "input SizeTensor must hold int32/int64 one-element tensors";
    }
  } else {
    if (has_scale) {
      if (runtime) {
        int64_t ns = scale_t ? rill_tensor_numel(scale_t) : 0;
        if (ns < 1) return "input Scale holds no value";
        for (int i = 0; i < p->nsp; i++)
          if (!interp_read_float(scale_t, ns > 1 ? (i < ns ? i : ns - 1) : 0, &p->scale[i]))
            return "input Scale must be a float32/float64 tensor";
      } else {
        for (int i = 0; i < p->nsp; i++) p->scale[i] = 0; /* unknown */
      }
    } else if (v2) {
      const rill_attr_value *s = &attrs[INTERP_A_SCALE];
      if (s->n > 0)
        for (int i = 0; i < p->nsp; i++) p->scale[i] = s->list.floats[(size_t)i < s->n ? (size_t)i : s->n - 1];
    } else {
      for (int i = 0; i < p->nsp; i++) p->scale[i] = attrs[INTERP_A_SCALE].v.f;
    }
    bool all_pos = true;
    for (int i = 0; i < p->nsp; i++) all_pos = all_pos && p->scale[i] > 0;
    for (int i = 0; i < p->nsp; i++) {
      if (has_scale && !runtime) p->out[i] = -1;
      else if (all_pos) p->out[i] = p->in[i] < 0 ? -1 : (int64_t)(int)((float)p->in[i] * p->scale[i]);
      else p->out[i] = attrs[out_attr[3 - p->nsp + i]].v.i;
      if (!all_pos) p->scale[i] = -1;
    }
    if (has_out_size) {
      if (runtime) {
        if (!out_size || rill_tensor_numel(out_size) != p->nsp)
          return "input OutSize must hold one extent per spatial dim";
        for (int i = 0; i < p->nsp; i++)
          if (!interp_read_int(out_size, i, &p->out[i]))
            return "input OutSize must be an int32/int64 tensor";
      } else {
        for (int i = 0; i < p->nsp; i++) p->out[i] = -1;
      }
    }
  }
  for (int i = 0; i < p->nsp; i++) {
    if (runtime && p->out[i] <= 0) return "the output size must be positive (set out_h/out_w, "
                                          "scale, OutSize or SizeTensor)";
    if (!runtime && p->out[i] == 0) p->out[i] = -1; /* set by an input Paddle did not record */
    if (p->out[i] > INT32_MAX) return "the output size is too large";
    p->ratio[i] = 0;
    if (p->out[i] > 1 && p->in[i] >= 0) {
      if (p->align_corners) p->ratio[i] = (float)(p->in[i] - 1) / (float)(p->out[i] - 1);
      else if (v2 && p->scale[i] > 0) p->ratio[i] = (float)(1. / p->scale[i]);
      else p->ratio[i] = (float)p->in[i] / (float)p->out[i];
    }
  }
  return NULL;
}

/* A kernel's plan for input X: its dims, the attributes and the size inputs (on the
 * host: RILL_SLOT_HOST_DATA). */
static inline rill_status *interp_kernel_plan(rill_kernel_ctx *ctx, const rill_tensor *x, interp_plan *p) {
  bool v2 = ctx->schema->attrs[INTERP_A_SCALE].type == RILL_ATTR_FLOATS;
  size_t nsize = ctx->nin[INTERP_IN_SIZE_TENSOR];
  const rill_tensor *sizes[3] = {0};
  for (size_t i = 0; i < nsize && i < 3; i++) sizes[i] = rill_kin(ctx, INTERP_IN_SIZE_TENSOR, i);
  const char *err = interp_resolve(ctx->attrs, v2, &x->dims, rill_kin(ctx, INTERP_IN_OUT_SIZE, 0) != NULL,
                                   rill_kin(ctx, INTERP_IN_OUT_SIZE, 0), nsize, sizes,
                                   rill_kin(ctx, INTERP_IN_SCALE, 0) != NULL,
                                   rill_kin(ctx, INTERP_IN_SCALE, 0), true, p);
  if (err)
    return rill_kernel_error(ctx, "%s (input X (%s))", err,
                             ctx->in_names && ctx->nin[INTERP_IN_X] ? ctx->in_names[INTERP_IN_X][0] : "?");
  return NULL;
}

/* The output dims of a plan. */
static inline rill_dims interp_out_dims(const interp_plan *p) {
  rill_dims d = {.n = p->nsp + 2};
  d.d[0] = p->n;
  if (p->channel_last) {
    for (int i = 0; i < p->nsp; i++) d.d[1 + i] = p->out[i];
    d.d[d.n - 1] = p->c;
  } else {
    d.d[1] = p->c;
    for (int i = 0; i < p->nsp; i++) d.d[2 + i] = p->out[i];
  }
  return d;
}

/* Nearest source index of output index k along spatial dim i. */
static inline int64_t interp_nearest_src(const interp_plan *p, int i, int64_t k) {
  int64_t s = p->align_corners ? (int64_t)(int)(p->ratio[i] * (float)k + 0.5f)
                               : (int64_t)(int)(p->ratio[i] * (float)k);
  return s < p->in[i] ? s : p->in[i] - 1;
}

/* Bilinear source indices along spatial dim i: lo and hi, and the weight of hi (Paddle's
 * BilinearInterpolation). */
static inline void interp_bilinear_src(const interp_plan *p, int i, int64_t k, int64_t *lo, int64_t *hi,
                                       float *w_hi) {
  bool half = p->align_mode == 0 && !p->align_corners;
  float r = p->ratio[i];
  int64_t n = half ? (int64_t)(int)(r * (k + 0.5) - 0.5) : (int64_t)(int)(r * (float)k);
  if (n < 0) n = 0;
  if (n > p->in[i] - 1) n = p->in[i] - 1;
  *lo = n;
  *hi = n + 1 < p->in[i] - 1 ? n + 1 : p->in[i] - 1;
  float src = (float)(r * (k + 0.5) - 0.5);
  if (src < 0) src = 0;
  *w_hi = half ? src - (float)n : r * (float)k - (float)n;
}

/* The sources of output index k along axis a of the three (d, h, w; a 4-D input's d has
 * extent 1 and reads index 0): lo and hi, and the weight of hi (0 for nearest). */
static inline void interp_axis_src(const interp_plan *p, int a, int64_t k, int64_t *lo, int64_t *hi, float *w_hi) {
  int i = a - (3 - p->nsp);
  if (i < 0) {
    *lo = *hi = 0;
    *w_hi = 0;
  } else if (p->method == INTERP_NEAREST) {
    *lo = *hi = interp_nearest_src(p, i, k);
    *w_hi = 0;
  } else {
    interp_bilinear_src(p, i, k, lo, hi, w_hi);
  }
}

#endif
