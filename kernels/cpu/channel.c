/* CPU kernels of affine_channel, maxout and their gradients (operators/channel.c). A
 * tensor is viewed as [pre, C, post] around its channel dim. */
#include <string.h>

#include "kernels/cpu/kernels.h"

/* [pre, C, post] of X around channel dim `ax`. */
static void around(const rill_tensor *x, int ax, int64_t *pre, int64_t *c, int64_t *post) {
  *pre = rill_dims_prod(&x->dims, 0, ax);
  *c = x->dims.d[ax];
  *post = rill_dims_prod(&x->dims, ax + 1, x->dims.n);
}

/* affine_channel's channel dim, and Scale (and Bias) checked to hold C values. */
static rill_status *ac_shape(rill_kernel_ctx *ctx, const rill_tensor *x, const rill_tensor *s,
                             const rill_tensor *b, int64_t *pre, int64_t *c, int64_t *post) {
  const char *layout = ctx->attrs[0].v.s;
  if (x->dims.n < 2)
    return rill_kernel_error(ctx, "input X (%s) needs rank 2 or more", rill_kin_name(ctx, 0, 0));
  around(x, layout && strcmp(layout, "NHWC") == 0 ? x->dims.n - 1 : 1, pre, c, post);
  if (rill_tensor_numel(s) != *c || (b && rill_tensor_numel(b) != *c))
    return rill_kernel_error(ctx, "inputs Scale (%s) and Bias need %lld values, X (%s)'s "
                             "channels", rill_kin_name(ctx, 1, 0), (long long)*c,
                             rill_kin_name(ctx, 0, 0));
  return NULL;
}

/* maxout's [pre, C, post] view and groups. */
static rill_status *mo_shape(rill_kernel_ctx *ctx, const rill_tensor *x, int64_t *pre,
                             int64_t *c, int64_t *post, int64_t *g) {
  int32_t axis = ctx->attrs[RILL_MAXOUT_ATTR_AXIS].v.i;
  *g = ctx->attrs[RILL_MAXOUT_ATTR_GROUPS].v.i;
  if (x->dims.n != 4 || (axis != 1 && axis != 3 && axis != -1))
    return rill_kernel_error(ctx, "input X (%s) must be 4-D and axis 1, 3 or -1",
                             rill_kin_name(ctx, 0, 0));
  around(x, axis == 1 ? 1 : 3, pre, c, post);
  if (*g < 1 || *c % *g)
    return rill_kernel_error(ctx, "attribute groups %lld must divide the %lld channels of input "
                             "X (%s)", (long long)*g, (long long)*c, rill_kin_name(ctx, 0, 0));
  return NULL;
}

#define CHANNEL_KERNELS(T, DT, SUF)                                                       \
  rill_status *rill_cpu_affine_channel_##SUF(rill_kernel_ctx *ctx) {                      \
    rill_tensor *x, *s, *b, *out;                                                         \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                           \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &s));                                           \
    RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &b));                                           \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                        \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &x->dims));                             \
    int64_t pre, c, post;                                                                 \
    RILL_TRY(ac_shape(ctx, x, s, b, &pre, &c, &post));                                    \
    const T *xp = rill_tensor_ptr(x), *sp = rill_tensor_ptr(s), *bp = rill_tensor_ptr(b); \
    T *op = rill_tensor_ptr(out);                                                         \
    for (int64_t p = 0; p < pre; p++)                                                     \
      for (int64_t k = 0; k < c; k++)                                                     \
        for (int64_t q = 0, i = (p * c + k) * post; q < post; q++, i++)                   \
          op[i] = xp[i] * sp[k] + bp[k];                                                  \
    return NULL;                                                                          \
  }                                                                                       \
                                                                                          \
  rill_status *rill_cpu_affine_channel_grad_##SUF(rill_kernel_ctx *ctx) {                 \
    rill_tensor *x, *s, *g, *dx = NULL, *ds = NULL, *db = NULL;                           \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                           \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &s));                                           \
    RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &g));                                           \
    RILL_TRY(rill_kin_check_dims(ctx, 2, g, &x->dims));                                   \
    int64_t pre, c, post;                                                                 \
    RILL_TRY(ac_shape(ctx, x, s, NULL, &pre, &c, &post));                                 \
    if (rill_kout(ctx, 0, 0)) {                                                           \
      RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &dx));                                       \
      RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &x->dims));                            \
    }                                                                                     \
    if (rill_kout(ctx, 1, 0)) {                                                           \
      RILL_TRY(rill_kout_need(ctx, 1, 0, DT, &ds));                                       \
      RILL_TRY(rill_kout_check_dims(ctx, 1, 0, ds, &s->dims));                            \
      memset(rill_tensor_ptr(ds), 0, (size_t)c * sizeof(T));                              \
    }                                                                                     \
    if (rill_kout(ctx, 2, 0)) {                                                           \
      RILL_TRY(rill_kout_need(ctx, 2, 0, DT, &db));                                       \
      RILL_TRY(rill_kout_check_dims(ctx, 2, 0, db, &s->dims));                            \
      memset(rill_tensor_ptr(db), 0, (size_t)c * sizeof(T));                              \
    }                                                                                     \
    const T *xp = rill_tensor_ptr(x), *sp = rill_tensor_ptr(s), *gp = rill_tensor_ptr(g); \
    T *dxp = dx ? (T *)rill_tensor_ptr(dx) : NULL, *dsp = ds ? (T *)rill_tensor_ptr(ds) : NULL; \
    T *dbp = db ? (T *)rill_tensor_ptr(db) : NULL;                                        \
    for (int64_t p = 0; p < pre; p++)                                                     \
      for (int64_t k = 0; k < c; k++)                                                     \
        for (int64_t q = 0, i = (p * c + k) * post; q < post; q++, i++) {                 \
          if (dxp) dxp[i] = gp[i] * sp[k];                                                \
          if (dsp) dsp[k] += gp[i] * xp[i];                                               \
          if (dbp) dbp[k] += gp[i];                                                       \
        }                                                                                 \
    return NULL;                                                                          \
  }                                                                                       \
                                                                                          \
  rill_status *rill_cpu_maxout_##SUF(rill_kernel_ctx *ctx) {                              \
    rill_tensor *x, *out;                                                                 \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                           \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                        \
    int64_t pre, c, post, g;                                                              \
    RILL_TRY(mo_shape(ctx, x, &pre, &c, &post, &g));                                      \
    if (rill_tensor_numel(out) * g != rill_tensor_numel(x))                               \
      return rill_kernel_error(ctx, "output Out (%s) does not hold 1/groups of input X",  \
                               rill_kout_name(ctx, 0, 0));                                \
    const T *xp = rill_tensor_ptr(x);                                                     \
    T *op = rill_tensor_ptr(out);                                                         \
    int64_t oc = c / g;                                                                   \
    for (int64_t p = 0; p < pre; p++)                                                     \
      for (int64_t k = 0; k < oc; k++)                                                    \
        for (int64_t q = 0; q < post; q++) {                                              \
          const T *src = xp + (p * c + k * g) * post + q;                                 \
          T m = src[0];                                                                   \
          for (int64_t j = 1; j < g; j++)                                                 \
            if (src[j * post] > m) m = src[j * post];                                     \
          op[(p * oc + k) * post + q] = m;                                                \
        }                                                                                 \
    return NULL;                                                                          \
  }                                                                                       \
                                                                                          \
  rill_status *rill_cpu_maxout_grad_##SUF(rill_kernel_ctx *ctx) {                         \
    rill_tensor *x, *out, *gout, *dx;                                                     \
    if (!rill_kout(ctx, 0, 0)) return NULL;                                               \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                           \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &out));                                         \
    RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &gout));                                        \
    RILL_TRY(rill_kin_check_dims(ctx, 2, gout, &out->dims));                              \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &dx));                                         \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &x->dims));                              \
    int64_t pre, c, post, g;                                                              \
    RILL_TRY(mo_shape(ctx, x, &pre, &c, &post, &g));                                      \
    if (rill_tensor_numel(out) * g != rill_tensor_numel(x))                               \
      return rill_kernel_error(ctx, "input Out (%s) does not hold 1/groups of input X",   \
                               rill_kin_name(ctx, 1, 0));                                 \
    const T *xp = rill_tensor_ptr(x), *op = rill_tensor_ptr(out), *gp = rill_tensor_ptr(gout); \
    T *dp = rill_tensor_ptr(dx);                                                          \
    memset(dp, 0, (size_t)rill_tensor_numel(dx) * sizeof(T));                             \
    int64_t oc = c / g;                                                                   \
    for (int64_t p = 0; p < pre; p++)                                                     \
      for (int64_t k = 0; k < oc; k++)                                                    \
        for (int64_t q = 0; q < post; q++) {                                              \
          int64_t o = (p * oc + k) * post + q, base = (p * c + k * g) * post + q;         \
          for (int64_t j = 0; j < g; j++)                                                 \
            if (xp[base + j * post] == op[o]) {                                           \
              dp[base + j * post] += gp[o];                                               \
              break;                                                                      \
            }                                                                             \
        }                                                                                 \
    return NULL;                                                                          \
  }

CHANNEL_KERNELS(float, RILL_DTYPE_FP32, fp32)
CHANNEL_KERNELS(double, RILL_DTYPE_FP64, fp64)
