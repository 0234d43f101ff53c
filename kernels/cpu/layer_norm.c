/* layer_norm and layer_norm_grad CPU kernels: X as [left, right] rows; statistics in
 * double. Y may be X (each row's statistics are taken before the row is written). */
#include <math.h>

#include "kernels/cpu/kernels.h"

static rill_status *ln_shape(rill_kernel_ctx *ctx, const rill_tensor *x, int64_t *left, int64_t *right) {
  int axis = ctx->attrs[RILL_LAYER_NORM_ATTR_BEGIN_NORM_AXIS].v.i;
  if (axis < 1 || axis >= x->dims.n)
    return rill_kernel_error(ctx, "begin_norm_axis %d must lie in [1, rank) for input X (%s) of rank %d",
                             axis, rill_kin_name(ctx, 0, 0), (int)x->dims.n);
  *left = rill_dims_prod(&x->dims, 0, axis);
  *right = rill_dims_prod(&x->dims, axis, x->dims.n);
  return NULL;
}

/* Optional [n] vector input (slot, 0): NULL when absent. */
static rill_status *opt_vec(rill_kernel_ctx *ctx, size_t slot, rill_dtype dt, int64_t n, rill_tensor **t) {
  *t = NULL;
  if (!rill_kin(ctx, slot, 0)) return NULL;
  RILL_TRY(rill_kin_need(ctx, slot, 0, dt, t));
  if (rill_tensor_numel(*t) == n) return NULL;
  return rill_kernel_error(ctx, "input %s (%s) has %lld elements, expected %lld",
                           ctx->schema->inputs[slot].name, rill_kin_name(ctx, slot, 0),
                           (long long)rill_tensor_numel(*t), (long long)n);
}

static rill_status *vec_out(rill_kernel_ctx *ctx, size_t slot, rill_dtype dt, int64_t n, rill_tensor **t) {
  *t = NULL;
  if (!rill_kout(ctx, slot, 0)) return NULL;
  RILL_TRY(rill_kout_need(ctx, slot, 0, dt, t));
  if (rill_tensor_numel(*t) == n) return NULL;
  return rill_kernel_error(ctx, "output %s (%s) has %lld elements, expected %lld",
                           ctx->schema->outputs[slot].name, rill_kout_name(ctx, slot, 0),
                           (long long)rill_tensor_numel(*t), (long long)n);
}

#define LN(T, SUF, DT)                                                                          \
  static rill_status *ln_fwd_##SUF(rill_kernel_ctx *ctx) {                                      \
    rill_tensor *x, *scale, *bias, *y, *mean, *var;                                             \
    int64_t left, right;                                                                        \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                                 \
    RILL_TRY(ln_shape(ctx, x, &left, &right));                                                  \
    RILL_TRY(opt_vec(ctx, 1, DT, right, &scale));                                               \
    RILL_TRY(opt_vec(ctx, 2, DT, right, &bias));                                                \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &y));                                                \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, y, &x->dims));                                     \
    RILL_TRY(vec_out(ctx, 1, DT, left, &mean));                                                 \
    RILL_TRY(vec_out(ctx, 2, DT, left, &var));                                                  \
    double eps = ctx->attrs[RILL_LAYER_NORM_ATTR_EPSILON].v.f;                                  \
    const T *xp = rill_tensor_ptr(x);                                                           \
    const T *sp = scale ? rill_tensor_ptr(scale) : NULL, *bp = bias ? rill_tensor_ptr(bias) : NULL; \
    T *yp = rill_tensor_ptr(y);                                                                 \
    for (int64_t r = 0; r < left; r++) {                                                        \
      const T *xr = xp + r * right;                                                             \
      T *yr = yp + r * right;                                                                   \
      double s = 0, q = 0;                                                                      \
      for (int64_t j = 0; j < right; j++) s += xr[j];                                           \
      double mu = right ? s / (double)right : 0;                                                \
      for (int64_t j = 0; j < right; j++) q += ((double)xr[j] - mu) * ((double)xr[j] - mu);     \
      double v = right ? q / (double)right : 0, inv = 1.0 / sqrt(v + eps);                      \
      if (mean) ((T *)rill_tensor_ptr(mean))[r] = (T)mu;                                        \
      if (var) ((T *)rill_tensor_ptr(var))[r] = (T)v;                                           \
      T a = (T)inv, b = (T)(-mu * inv);                                                         \
      for (int64_t j = 0; j < right; j++) {                                                     \
        T o = xr[j] * a + b;                                                                    \
        if (sp) o *= sp[j];                                                                     \
        if (bp) o += bp[j];                                                                     \
        yr[j] = o;                                                                              \
      }                                                                                         \
    }                                                                                           \
    return NULL;                                                                                \
  }                                                                                             \
                                                                                                \
  static rill_status *ln_bwd_##SUF(rill_kernel_ctx *ctx) {                                      \
    rill_tensor *x, *scale, *mean, *var, *dy, *dx, *dscale, *dbias;                             \
    int64_t left, right;                                                                        \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                                 \
    RILL_TRY(ln_shape(ctx, x, &left, &right));                                                  \
    RILL_TRY(opt_vec(ctx, 1, DT, right, &scale));                                               \
    RILL_TRY(rill_kin_need(ctx, 3, 0, DT, &mean));                                              \
    RILL_TRY(rill_kin_need(ctx, 4, 0, DT, &var));                                               \
    RILL_TRY(rill_kin_need(ctx, 5, 0, DT, &dy));                                                \
    if (rill_tensor_numel(mean) != left || rill_tensor_numel(var) != left)                      \
      return rill_kernel_error(ctx, "inputs Mean (%s) and Variance (%s) must have %lld elements", \
                               rill_kin_name(ctx, 3, 0), rill_kin_name(ctx, 4, 0), (long long)left); \
    if (!rill_dims_equal(&dy->dims, &x->dims))                                                  \
      return rill_kernel_error(ctx, "input Y@GRAD (%s) does not have the shape of X (%s)",      \
                               rill_kin_name(ctx, 5, 0), rill_kin_name(ctx, 0, 0));             \
    dx = NULL;                                                                                  \
    if (rill_kout(ctx, 0, 0)) {                                                                 \
      RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &dx));                                             \
      RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &x->dims));                                  \
    }                                                                                           \
    RILL_TRY(vec_out(ctx, 1, DT, right, &dscale));                                              \
    RILL_TRY(vec_out(ctx, 2, DT, right, &dbias));                                               \
    double eps = ctx->attrs[RILL_LAYER_NORM_GRAD_ATTR_EPSILON].v.f;                             \
    const T *xp = rill_tensor_ptr(x), *dyp = rill_tensor_ptr(dy);                               \
    const T *mp = rill_tensor_ptr(mean), *vp = rill_tensor_ptr(var);                            \
    const T *sp = scale ? rill_tensor_ptr(scale) : NULL;                                        \
    T *dsp = dscale ? rill_tensor_ptr(dscale) : NULL, *dbp = dbias ? rill_tensor_ptr(dbias) : NULL; \
    T *dxp = dx ? rill_tensor_ptr(dx) : NULL;                                                   \
    for (int64_t j = 0; j < right; j++) {                                                       \
      if (dsp) dsp[j] = 0;                                                                      \
      if (dbp) dbp[j] = 0;                                                                      \
    }                                                                                           \
    for (int64_t r = 0; r < left; r++) {                                                        \
      const T *xr = xp + r * right, *dr = dyp + r * right;                                      \
      double mu = mp[r], inv = 1.0 / sqrt((double)vp[r] + eps);                                 \
      if (dsp)                                                                                  \
        for (int64_t j = 0; j < right; j++) dsp[j] += (T)(dr[j] * ((xr[j] - mu) * inv));        \
      if (dbp)                                                                                  \
        for (int64_t j = 0; j < right; j++) dbp[j] += dr[j];                                    \
      if (!dxp || right == 0) continue;                                                         \
      double mg = 0, mgx = 0;                                                                   \
      for (int64_t j = 0; j < right; j++) {                                                     \
        double gj = sp ? (double)dr[j] * sp[j] : (double)dr[j];                                 \
        mg += gj;                                                                               \
        mgx += gj * ((xr[j] - mu) * inv);                                                       \
      }                                                                                         \
      mg /= (double)right;                                                                      \
      mgx /= (double)right;                                                                     \
      T *o = dxp + r * right;                                                                   \
      for (int64_t j = 0; j < right; j++) {                                                     \
        double gj = sp ? (double)dr[j] * sp[j] : (double)dr[j];                                 \
        o[j] = (T)(inv * (gj - mg - (xr[j] - mu) * inv * mgx));                                 \
      }                                                                                         \
    }                                                                                           \
    return NULL;                                                                                \
  }

LN(float, f32, RILL_DTYPE_FP32)
LN(double, f64, RILL_DTYPE_FP64)

rill_status *rill_cpu_layer_norm_fp32(rill_kernel_ctx *ctx) { return ln_fwd_f32(ctx); }
rill_status *rill_cpu_layer_norm_fp64(rill_kernel_ctx *ctx) { return ln_fwd_f64(ctx); }
rill_status *rill_cpu_layer_norm_grad_fp32(rill_kernel_ctx *ctx) { return ln_bwd_f32(ctx); }
rill_status *rill_cpu_layer_norm_grad_fp64(rill_kernel_ctx *ctx) { return ln_bwd_f64(ctx); }
