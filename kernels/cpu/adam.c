/* adam CPU kernels: Paddle Fluid 1.x's update, beta pows advanced by the op.
 *   lr_t = lr * sqrt(1 - beta2_pow) / (1 - beta1_pow)
 *   param -= lr_t * m1 / (sqrt(m2) + epsilon)
 * The denominator is Fluid 1.x's `sqrt(m2) + epsilon`, not Paddle 2.x's
 * `sqrt(m2) + epsilon * sqrt(1 - beta2_pow)`: rill runs Fluid 1.x programs and keeps
 * their numbers. With a selected-rows gradient, lazy_mode updates only the rows
 * present; otherwise absent rows count as zero gradient. A selected-rows step reads
 * Beta1Pow/Beta2Pow after writing Beta1PowOut/Beta2PowOut, as Paddle 1.8.5's does: when
 * they are the same variables (as the optimizer builds them), sparse step t is
 * bias-corrected as step t + 1 while a dense step t is corrected as step t. */
#include <math.h>
#include <string.h>

#include "kernels/cpu/optimizer.h"


static rill_status *opt_override(rill_kernel_ctx *ctx, size_t slot, double *v) {
  if (!rill_kin(ctx, slot, 0)) return NULL;
  return rill_opt_scalar(ctx, slot, v);
}

/* Beta pow (in -> out) = in * beta, in the beta pow's own dtype. */
static rill_status *advance_pow(rill_kernel_ctx *ctx, size_t in, size_t out, double beta,
                                bool advance) {
  rill_tensor *t = rill_kin(ctx, in, 0);
  double cur;
  RILL_TRY(rill_opt_scalar(ctx, in, &cur));
  void *o;
  RILL_TRY(rill_opt_state(ctx, in, out, t->dtype, NULL, &o));
  if (!advance) return NULL;
  if (t->dtype == RILL_DTYPE_FP32) *(float *)o = (float)(cur * beta);
  else *(double *)o = cur * beta;
  return NULL;
}

/* The beta pow a selected-rows step corrects with: Paddle 1.8.5's reads Beta1Pow after
 * writing Beta1PowOut, so where the two are one variable it sees the advanced value. */
static void sparse_pow(rill_kernel_ctx *ctx, size_t in, size_t out, double *v) {
  const char *a = rill_kin_name(ctx, in, 0), *b = rill_kout_name(ctx, out, 0);
  rill_tensor *t = rill_kin(ctx, in, 0), *o = rill_kout(ctx, out, 0);
  bool same = o == t || (strcmp(a, "?") != 0 && strcmp(a, b) == 0);
  if (!same || !o) return;
  *v = o->dtype == RILL_DTYPE_FP32 ? *(const float *)rill_tensor_ptr(o)
                                   : *(const double *)rill_tensor_ptr(o);
}

static bool skip_update(rill_kernel_ctx *ctx) {
  rill_tensor *t = rill_kin(ctx, RILL_ADAM_IN_SKIP_UPDATE, 0);
  return t && rill_tensor_is_set(t) && rill_tensor_numel(t) == 1 && t->dtype == RILL_DTYPE_BOOL &&
         *(const bool *)rill_tensor_ptr(t);
}

#define ADAM_STEP(SQRT, i, gi)                                                               \
  do {                                                                                    \
    m1[i] = b1 * m1[i] + (1 - b1) * (gi);                                                 \
    m2[i] = b2 * m2[i] + (1 - b2) * (gi) * (gi);                                          \
    pp[i] -= lr_t * (m1[i] / (SQRT(m2[i]) + eps));                                        \
  } while (0)

#define ADAM(T, DT, SQRT, NAME)                                                           \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *p;                                                                       \
    double lr, b1pow, b2pow, beta1 = ctx->attrs[RILL_ADAM_ATTR_BETA1].v.f,                \
                             beta2 = ctx->attrs[RILL_ADAM_ATTR_BETA2].v.f, epsd = ctx->attrs[RILL_ADAM_ATTR_EPSILON].v.f;\
    rill_opt_grad g;                                                                      \
    void *po, *m1o, *m2o;                                                                 \
    RILL_TRY(rill_kin_need(ctx, RILL_ADAM_IN_PARAM, 0, DT, &p));                          \
    RILL_TRY(rill_opt_scalar(ctx, RILL_ADAM_IN_LEARNING_RATE, &lr));                      \
    RILL_TRY(rill_opt_scalar(ctx, RILL_ADAM_IN_BETA1_POW, &b1pow));                       \
    RILL_TRY(rill_opt_scalar(ctx, RILL_ADAM_IN_BETA2_POW, &b2pow));                       \
    RILL_TRY(opt_override(ctx, RILL_ADAM_IN_BETA1_TENSOR, &beta1));                       \
    RILL_TRY(opt_override(ctx, RILL_ADAM_IN_BETA2_TENSOR, &beta2));                       \
    RILL_TRY(opt_override(ctx, RILL_ADAM_IN_EPSILON_TENSOR, &epsd));                      \
    bool skip = skip_update(ctx);                                                         \
    RILL_TRY(rill_opt_grad_get(ctx, RILL_ADAM_IN_GRAD, DT, p, &g));                       \
    rill_status *st = rill_opt_state(ctx, RILL_ADAM_IN_MOMENT1, RILL_ADAM_OUT_MOMENT1_OUT, DT, p, &m1o);                       \
    if (!st) st = rill_opt_state(ctx, RILL_ADAM_IN_MOMENT2, RILL_ADAM_OUT_MOMENT2_OUT, DT, p, &m2o);                           \
    if (!st) st = rill_opt_state(ctx, RILL_ADAM_IN_PARAM, RILL_ADAM_OUT_PARAM_OUT, DT, NULL, &po);                   \
    bool adv = !skip && !ctx->attrs[RILL_ADAM_ATTR_USE_GLOBAL_BETA_POW].v.b;              \
    if (!st) st = advance_pow(ctx, RILL_ADAM_IN_BETA1_POW, RILL_ADAM_OUT_BETA1_POW_OUT, beta1, adv);                         \
    if (!st) st = advance_pow(ctx, RILL_ADAM_IN_BETA2_POW, RILL_ADAM_OUT_BETA2_POW_OUT, beta2, adv);                         \
    if (st || skip) {                                                                     \
      rill_opt_grad_free(&g);                                                             \
      return st;                                                                          \
    }                                                                                     \
    if (g.sparse) {                                                                       \
      sparse_pow(ctx, RILL_ADAM_IN_BETA1_POW, RILL_ADAM_OUT_BETA1_POW_OUT, &b1pow);        \
      sparse_pow(ctx, RILL_ADAM_IN_BETA2_POW, RILL_ADAM_OUT_BETA2_POW_OUT, &b2pow);        \
    }                                                                                     \
    T *pp = po, *m1 = m1o, *m2 = m2o;                                                     \
    T b1 = (T)beta1, b2 = (T)beta2, eps = (T)epsd;                        \
    T lr_t = (T)lr * SQRT(1 - (T)b2pow) / (1 - (T)b1pow);                                      \
    int64_t n = rill_tensor_numel(p);                                                     \
    if (!g.sparse) {                                                                      \
      const T *gd = g.dense;                                                              \
      for (int64_t i = 0; i < n; i++) ADAM_STEP(SQRT, i, gd[i]);                             \
    } else if (ctx->attrs[RILL_ADAM_ATTR_LAZY_MODE].v.b) {                                      \
      for (size_t k = 0; k < g.nrows; k++) {                                              \
        const T *gv = (const T *)g.vals + (int64_t)k * g.width;                           \
        for (int64_t j = 0; j < g.width; j++) ADAM_STEP(SQRT, g.rows[k] * g.width + j, gv[j]);  \
      }                                                                                   \
    } else {                                                                              \
      size_t k = 0;                                                                       \
      int64_t rows = g.width ? n / g.width : 0;                                           \
      for (int64_t r = 0; r < rows; r++) {                                                \
        while (k < g.nrows && g.rows[k] < r) k++;                                         \
        const T *gv = k < g.nrows && g.rows[k] == r ? (const T *)g.vals + (int64_t)k * g.width \
                                                    : NULL;                               \
        for (int64_t j = 0; j < g.width; j++) ADAM_STEP(SQRT, r * g.width + j, gv ? gv[j] : 0);  \
      }                                                                                   \
    }                                                                                     \
    rill_opt_grad_free(&g);                                                               \
    return NULL;                                                                          \
  }

ADAM(float, RILL_DTYPE_FP32, sqrtf, rill_cpu_adam_fp32)
ADAM(double, RILL_DTYPE_FP64, sqrt, rill_cpu_adam_fp64)
