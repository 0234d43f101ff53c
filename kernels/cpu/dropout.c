/* dropout and dropout_grad CPU kernels, with the rules of operators/dropout.h (the
 * seed of a run, the mask its stream draws, the scales). Outside an executor (no
 * device) a process-wide count of non-fixed runs stands in for the executor's
 * generator (rill_random_run_seed). */
#include <string.h>

#include "kernels/cpu/kernels.h"
#include "kernels/cpu/tensor_ops.h"
#include "operators/dropout.h"

static bool upscale(const rill_kernel_ctx *ctx) {
  return rill_dropout_upscale(ctx->attrs[RILL_DROPOUT_ATTR_DROPOUT_IMPLEMENTATION].v.s);
}

/* The op is flagged RILL_OP_RANDOM, so the parallel schedule keeps the draws in
 * program order. */
static uint64_t next_run_draw(void *ctx) { return rill_random_run_seed(ctx); }

static rill_status *run_seed(rill_kernel_ctx *ctx, uint64_t *seed) {
  rill_tensor *st = rill_kin(ctx, RILL_DROPOUT_IN_SEED, 0);
  if (st && (!rill_tensor_is_set(st) || st->dtype != RILL_DTYPE_INT32 || rill_tensor_numel(st) < 1))
    return rill_kernel_error(ctx, "input Seed (%s) must hold an int32", rill_kin_name(ctx, RILL_DROPOUT_IN_SEED, 0));
  *seed = rill_dropout_seed(st ? (const int32_t *)rill_tensor_ptr(st) : NULL, ctx->attrs[RILL_DROPOUT_ATTR_SEED].v.i,
                            ctx->attrs[RILL_DROPOUT_ATTR_FIX_SEED].v.b, next_run_draw, ctx);
  return NULL;
}

#define DROPOUT(T, SUF, DT)                                                                    \
  static rill_status *dropout_fwd_##SUF(rill_kernel_ctx *ctx) {                                \
    rill_tensor *x, *out, *mask = NULL;                                                        \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                                \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                             \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &x->dims));                                  \
    if (rill_kout(ctx, 1, 0)) {                                                                \
      RILL_TRY(rill_kout_need(ctx, 1, 0, RILL_DTYPE_UINT8, &mask));                            \
      RILL_TRY(rill_kout_check_dims(ctx, 1, 0, mask, &x->dims));                               \
    }                                                                                          \
    double p = ctx->attrs[RILL_DROPOUT_ATTR_DROPOUT_PROB].v.f;                                 \
    if (!(p >= 0 && p <= 1))                                                                   \
      return rill_kernel_error(ctx, "dropout_prob %g must lie in [0, 1]", p);                  \
    int64_t n = rill_tensor_numel(x);                                                          \
    const T *xp = rill_tensor_ptr(x);                                                          \
    T *op = rill_tensor_ptr(out);                                                              \
    uint8_t *mp = mask ? rill_tensor_ptr(mask) : NULL;                                         \
    bool up = upscale(ctx);                                                                    \
    if (ctx->attrs[RILL_DROPOUT_ATTR_IS_TEST].v.b) {                                           \
      T k = (T)rill_dropout_test_scale(p, up);                                                 \
      for (int64_t i = 0; i < n; i++) op[i] = xp[i] * k;                                       \
      if (mp) memset(mp, 1, (size_t)n);                                                        \
      return NULL;                                                                             \
    }                                                                                          \
    if (n && !mp)                                                                              \
      return rill_kernel_error(ctx, "output Mask is required in training (is_test false)");    \
    uint64_t seed;                                                                             \
    RILL_TRY(run_seed(ctx, &seed));                                                            \
    rill_dropout_mask(seed, p, n, mp);                                                         \
    T k = (T)rill_dropout_train_scale(p, up);                                                  \
    for (int64_t i = 0; i < n; i++) op[i] = mp[i] ? xp[i] * k : (T)0;                          \
    return NULL;                                                                               \
  }                                                                                            \
                                                                                               \
  static rill_status *dropout_bwd_##SUF(rill_kernel_ctx *ctx) {                                \
    rill_tensor *dy, *dx, *mask = NULL;                                                        \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &dy));                                               \
    if (!rill_kout(ctx, 0, 0)) return NULL;                                                    \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &dx));                                              \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &dy->dims));                                  \
    double p = ctx->attrs[RILL_DROPOUT_ATTR_DROPOUT_PROB].v.f;                                 \
    bool up = upscale(ctx), test = ctx->attrs[RILL_DROPOUT_ATTR_IS_TEST].v.b;                  \
    int64_t n = rill_tensor_numel(dy);                                                         \
    const T *dyp = rill_tensor_ptr(dy);                                                        \
    T *dxp = rill_tensor_ptr(dx);                                                              \
    if (test) {                                                                                \
      T k = (T)rill_dropout_test_scale(p, up);                                                 \
      for (int64_t i = 0; i < n; i++) dxp[i] = dyp[i] * k;                                     \
      return NULL;                                                                             \
    }                                                                                          \
    RILL_TRY(rill_kin_need(ctx, 0, 0, RILL_DTYPE_UINT8, &mask));                               \
    if (!rill_dims_equal(&mask->dims, &dy->dims))                                              \
      return rill_kernel_error(ctx, "input Mask (%s) and Out@GRAD (%s) differ in shape",       \
                               rill_kin_name(ctx, 0, 0), rill_kin_name(ctx, 1, 0));            \
    const uint8_t *mp = rill_tensor_ptr(mask);                                                 \
    T k = (T)rill_dropout_train_scale(p, up);                                                  \
    for (int64_t i = 0; i < n; i++) dxp[i] = mp[i] ? dyp[i] * k : (T)0;                        \
    return NULL;                                                                               \
  }

DROPOUT(float, f32, RILL_DTYPE_FP32)
DROPOUT(double, f64, RILL_DTYPE_FP64)

rill_status *rill_cpu_dropout_fp32(rill_kernel_ctx *ctx) { return dropout_fwd_f32(ctx); }
rill_status *rill_cpu_dropout_fp64(rill_kernel_ctx *ctx) { return dropout_fwd_f64(ctx); }
rill_status *rill_cpu_dropout_grad_fp32(rill_kernel_ctx *ctx) { return dropout_bwd_f32(ctx); }
rill_status *rill_cpu_dropout_grad_fp64(rill_kernel_ctx *ctx) { return dropout_bwd_f64(ctx); }
