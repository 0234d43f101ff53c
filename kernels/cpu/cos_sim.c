/* cos_sim CPU kernels: one pass per row for the norms and the dot product, in T as
 * Paddle computes them (a zero row gives NaN, as there). */
#include <math.h>
#include <string.h>

#include "kernels/cpu/kernels.h"

/* Rows and row width of X and Y; an error unless Y has X's width and 1 or N rows. */
static rill_status *cos_sim_shape(rill_kernel_ctx *ctx, const rill_tensor *x, const rill_tensor *y,
                                  int64_t *n, int64_t *ny, int64_t *d) {
  bool ok = x->dims.n >= 2 && y->dims.n == x->dims.n;
  for (int i = 1; ok && i < x->dims.n; i++) ok = x->dims.d[i] == y->dims.d[i];
  *n = x->dims.n ? x->dims.d[0] : 0;
  *ny = y->dims.n ? y->dims.d[0] : 0;
  ok = ok && (*ny == *n || *ny == 1);
  if (!ok) {
    char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
    return rill_kernel_error(ctx, "inputs X (%s) %s and Y (%s) %s do not fit: Y needs X's dims "
                             "after the first and 1 row or as many as X",
                             rill_kin_name(ctx, 0, 0), rill_dims_str(&x->dims, a, sizeof a),
                             rill_kin_name(ctx, 1, 0), rill_dims_str(&y->dims, b, sizeof b));
  }
  *d = rill_dims_prod(&x->dims, 1, x->dims.n);
  return NULL;
}

#define COS_SIM(T, DT, SQRT, NAME)                                                        \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *x, *y, *out, *xn, *yn;                                                   \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                           \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &y));                                           \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                        \
    RILL_TRY(rill_kout_need(ctx, 1, 0, DT, &xn));                                         \
    RILL_TRY(rill_kout_need(ctx, 2, 0, DT, &yn));                                         \
    int64_t n, ny, d;                                                                     \
    RILL_TRY(cos_sim_shape(ctx, x, y, &n, &ny, &d));                                      \
    rill_dims od = {.n = 2, .d = {n, 1}}, yd = {.n = 2, .d = {ny, 1}};                    \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &od));                                  \
    RILL_TRY(rill_kout_check_dims(ctx, 1, 0, xn, &od));                                   \
    RILL_TRY(rill_kout_check_dims(ctx, 2, 0, yn, &yd));                                   \
    const T *xp = rill_tensor_ptr(x), *yp = rill_tensor_ptr(y);                           \
    T *op = rill_tensor_ptr(out), *xnp = rill_tensor_ptr(xn), *ynp = rill_tensor_ptr(yn); \
    for (int64_t j = 0; j < ny; j++) {                                                    \
      T s = 0;                                                                            \
      for (int64_t k = 0; k < d; k++) s += yp[j * d + k] * yp[j * d + k];                 \
      ynp[j] = SQRT(s);                                                                   \
    }                                                                                     \
    for (int64_t i = 0; i < n; i++) {                                                     \
      const T *xr = xp + i * d, *yr = yp + (ny == 1 ? 0 : i) * d;                         \
      T s = 0, dot = 0;                                                                   \
      for (int64_t k = 0; k < d; k++) {                                                   \
        s += xr[k] * xr[k];                                                               \
        dot += xr[k] * yr[k];                                                             \
      }                                                                                   \
      xnp[i] = SQRT(s);                                                                   \
      op[i] = dot / (xnp[i] * ynp[ny == 1 ? 0 : i]);                                      \
    }                                                                                     \
    return NULL;                                                                          \
  }

COS_SIM(float, RILL_DTYPE_FP32, sqrtf, rill_cpu_cos_sim_fp32)
COS_SIM(double, RILL_DTYPE_FP64, sqrt, rill_cpu_cos_sim_fp64)

#define COS_SIM_GRAD(T, DT, NAME)                                                         \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *x, *y, *xn, *yn, *out, *dout, *dx = NULL, *dy = NULL;                    \
    if (!rill_kout(ctx, 0, 0) && !rill_kout(ctx, 1, 0)) return NULL;                      \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                           \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &y));                                           \
    RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &xn));                                          \
    RILL_TRY(rill_kin_need(ctx, 3, 0, DT, &yn));                                          \
    RILL_TRY(rill_kin_need(ctx, 4, 0, DT, &out));                                         \
    RILL_TRY(rill_kin_need(ctx, 5, 0, DT, &dout));                                        \
    int64_t n, ny, d;                                                                     \
    RILL_TRY(cos_sim_shape(ctx, x, y, &n, &ny, &d));                                      \
    if (rill_tensor_numel(xn) != n || rill_tensor_numel(out) != n ||                      \
        rill_tensor_numel(dout) != n || rill_tensor_numel(yn) != ny)                      \
      return rill_kernel_error(ctx, "inputs XNorm (%s), Out and Out@GRAD need %lld rows and " \
                               "YNorm %lld", rill_kin_name(ctx, 2, 0), (long long)n,      \
                               (long long)ny);                                            \
    if (rill_kout(ctx, 0, 0)) {                                                           \
      RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &dx));                                       \
      RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &x->dims));                            \
    }                                                                                     \
    if (rill_kout(ctx, 1, 0)) {                                                           \
      RILL_TRY(rill_kout_need(ctx, 1, 0, DT, &dy));                                       \
      RILL_TRY(rill_kout_check_dims(ctx, 1, 0, dy, &y->dims));                            \
      memset(rill_tensor_ptr(dy), 0, (size_t)(ny * d) * sizeof(T));                       \
    }                                                                                     \
    const T *xp = rill_tensor_ptr(x), *yp = rill_tensor_ptr(y), *xnp = rill_tensor_ptr(xn); \
    const T *ynp = rill_tensor_ptr(yn), *op = rill_tensor_ptr(out), *gp = rill_tensor_ptr(dout); \
    T *dxp = dx ? (T *)rill_tensor_ptr(dx) : NULL, *dyp = dy ? (T *)rill_tensor_ptr(dy) : NULL; \
    for (int64_t i = 0; i < n; i++) {                                                     \
      int64_t j = ny == 1 ? 0 : i;                                                        \
      const T *xr = xp + i * d, *yr = yp + j * d;                                         \
      T a = xnp[i], b = ynp[j], ab = a * b, o = op[i], g = gp[i];                         \
      if (dxp)                                                                            \
        for (int64_t k = 0; k < d; k++)                                                   \
          dxp[i * d + k] = g * (yr[k] / ab - o * xr[k] / (a * a));                        \
      if (dyp)                                                                            \
        for (int64_t k = 0; k < d; k++)                                                   \
          dyp[j * d + k] += g * (xr[k] / ab - o * yr[k] / (b * b));                       \
    }                                                                                     \
    return NULL;                                                                          \
  }

COS_SIM_GRAD(float, RILL_DTYPE_FP32, rill_cpu_cos_sim_grad_fp32)
COS_SIM_GRAD(double, RILL_DTYPE_FP64, rill_cpu_cos_sim_grad_fp64)
