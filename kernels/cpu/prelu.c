/* prelu CPU kernels. Element i of X (of n, in N samples) uses alpha 0 (all), its
 * channel (i / inner) % C (channel: inner = the elements after dim 1) or i % (n / N)
 * (element); the gradient adds X * Out@GRAD into its alpha where X <= 0. */
#include <string.h>

#include "kernels/cpu/kernels.h"

_Static_assert(RILL_SAME_POS(RILL_PRELU_IN_X, RILL_PRELU_GRAD_IN_X) &&
                   RILL_SAME_POS(RILL_PRELU_IN_ALPHA, RILL_PRELU_GRAD_IN_ALPHA) &&
                   RILL_SAME_POS(RILL_PRELU_ATTR_MODE, RILL_PRELU_GRAD_ATTR_MODE),
               "prelu and its gradient read X, Alpha and mode alike");

/* How element i maps to its alpha: (i / div) % mod. */
typedef struct alpha_map {
  int64_t div, mod;
} alpha_map;

static rill_status *alpha_map_of(rill_kernel_ctx *ctx, const rill_tensor *x, const rill_tensor *a,
                                 alpha_map *m) {
  const char *mode = ctx->attrs[RILL_PRELU_ATTR_MODE].v.s ? ctx->attrs[RILL_PRELU_ATTR_MODE].v.s : "";
  int64_t want;
  if (!strcmp(mode, "all")) {
    m->div = 1, m->mod = 1, want = 1;
  } else if (!strcmp(mode, "channel") && x->dims.n >= 2) {
    want = x->dims.d[1];
    m->div = rill_dims_prod(&x->dims, 2, x->dims.n), m->mod = want > 0 ? want : 1;
  } else if (!strcmp(mode, "element") && x->dims.n >= 1) {
    want = rill_dims_prod(&x->dims, 1, x->dims.n);
    m->div = 1, m->mod = want > 0 ? want : 1;
  } else {
    return rill_kernel_error(ctx, "attribute mode \"%s\" does not apply to input X (%s) of %d dims",
                             mode, rill_kin_name(ctx, RILL_PRELU_IN_X, 0), (int)x->dims.n);
  }
  if (m->div < 1) m->div = 1;
  if (rill_tensor_numel(a) != want)
    return rill_kernel_error(ctx, "input Alpha (%s) holds %lld values: mode %s needs %lld for "
                             "input X (%s)", rill_kin_name(ctx, RILL_PRELU_IN_ALPHA, 0),
                             (long long)rill_tensor_numel(a), mode, (long long)want,
                             rill_kin_name(ctx, RILL_PRELU_IN_X, 0));
  return NULL;
}

#define PRELU(T, DT, NAME)                                                                 \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                \
    rill_tensor *x = NULL, *a = NULL, *out = NULL;                                         \
    RILL_TRY(rill_kin_need(ctx, RILL_PRELU_IN_X, 0, DT, &x));                               \
    RILL_TRY(rill_kin_need(ctx, RILL_PRELU_IN_ALPHA, 0, DT, &a));                           \
    RILL_TRY(rill_kout_need(ctx, RILL_PRELU_OUT_OUT, 0, DT, &out));                         \
    RILL_TRY(rill_kout_check_dims(ctx, RILL_PRELU_OUT_OUT, 0, out, &x->dims));              \
    alpha_map m;                                                                           \
    RILL_TRY(alpha_map_of(ctx, x, a, &m));                                                 \
    const T *xp = rill_tensor_ptr(x), *ap = rill_tensor_ptr(a);                            \
    T *op = rill_tensor_ptr(out);                                                          \
    for (int64_t i = 0, n = rill_tensor_numel(x); i < n; i++)                              \
      op[i] = xp[i] > 0 ? xp[i] : ap[(i / m.div) % m.mod] * xp[i];                         \
    return NULL;                                                                           \
  }

PRELU(float, RILL_DTYPE_FP32, rill_cpu_prelu_fp32)
PRELU(double, RILL_DTYPE_FP64, rill_cpu_prelu_fp64)

#define PRELU_GRAD(T, DT, NAME)                                                            \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                \
    rill_tensor *x = NULL, *a = NULL, *g = NULL, *dx = NULL, *da = NULL;                   \
    RILL_TRY(rill_kin_need(ctx, RILL_PRELU_GRAD_IN_X, 0, DT, &x));                          \
    RILL_TRY(rill_kin_need(ctx, RILL_PRELU_GRAD_IN_ALPHA, 0, DT, &a));                      \
    RILL_TRY(rill_kin_need(ctx, RILL_PRELU_GRAD_IN_OUT_GRAD, 0, DT, &g));                   \
    RILL_TRY(rill_kin_check_dims(ctx, RILL_PRELU_GRAD_IN_OUT_GRAD, g, &x->dims));           \
    alpha_map m;                                                                           \
    RILL_TRY(alpha_map_of(ctx, x, a, &m));                                                 \
    if (rill_kout(ctx, RILL_PRELU_GRAD_OUT_X_GRAD, 0)) {                                    \
      RILL_TRY(rill_kout_need(ctx, RILL_PRELU_GRAD_OUT_X_GRAD, 0, DT, &dx));                \
      RILL_TRY(rill_kout_check_dims(ctx, RILL_PRELU_GRAD_OUT_X_GRAD, 0, dx, &x->dims));     \
    }                                                                                      \
    if (rill_kout(ctx, RILL_PRELU_GRAD_OUT_ALPHA_GRAD, 0)) {                                \
      RILL_TRY(rill_kout_need(ctx, RILL_PRELU_GRAD_OUT_ALPHA_GRAD, 0, DT, &da));            \
      RILL_TRY(rill_kout_check_dims(ctx, RILL_PRELU_GRAD_OUT_ALPHA_GRAD, 0, da, &a->dims));  \
    }                                                                                      \
    const T *xp = rill_tensor_ptr(x), *ap = rill_tensor_ptr(a), *gp = rill_tensor_ptr(g);  \
    int64_t n = rill_tensor_numel(x);                                                      \
    if (dx) {                                                                              \
      T *d = rill_tensor_ptr(dx);                                                          \
      for (int64_t i = 0; i < n; i++) d[i] = xp[i] > 0 ? gp[i] : ap[(i / m.div) % m.mod] * gp[i]; \
    }                                                                                      \
    if (da) {                                                                              \
      T *d = rill_tensor_ptr(da);                                                          \
      memset(d, 0, rill_tensor_nbytes(da));                                                \
      for (int64_t i = 0; i < n; i++)                                                      \
        if (!(xp[i] > 0)) d[(i / m.div) % m.mod] += xp[i] * gp[i];                          \
    }                                                                                      \
    return NULL;                                                                           \
  }

PRELU_GRAD(float, RILL_DTYPE_FP32, rill_cpu_prelu_grad_fp32)
PRELU_GRAD(double, RILL_DTYPE_FP64, rill_cpu_prelu_grad_fp64)
