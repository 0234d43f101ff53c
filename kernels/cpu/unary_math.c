/* CPU kernels of square, sqrt, exp, log, clip and their gradients: flat loops over
 * same-shaped tensors; Out may alias X. */
#include <math.h>

#include "kernels/cpu/kernels.h"
#include "kernels/cpu/selected_rows.h"

#define UNARY(T, DT, EXPR, NAME)                                                          \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *x, *out;                                                                 \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                           \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                        \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &x->dims));                             \
    const T *xp = rill_tensor_ptr(x);                                                     \
    T *op = rill_tensor_ptr(out);                                                         \
    int64_t n = rill_tensor_numel(x);                                                     \
    for (int64_t i = 0; i < n; i++) {                                                     \
      T v = xp[i];                                                                        \
      op[i] = EXPR;                                                                       \
    }                                                                                     \
    return NULL;                                                                          \
  }

UNARY(float, RILL_DTYPE_FP32, v * v, rill_cpu_square_fp32)
UNARY(double, RILL_DTYPE_FP64, v * v, rill_cpu_square_fp64)
UNARY(float, RILL_DTYPE_FP32, sqrtf(v), rill_cpu_sqrt_fp32)
UNARY(double, RILL_DTYPE_FP64, sqrt(v), rill_cpu_sqrt_fp64)
UNARY(float, RILL_DTYPE_FP32, expf(v), rill_cpu_exp_fp32)
UNARY(double, RILL_DTYPE_FP64, exp(v), rill_cpu_exp_fp64)
UNARY(float, RILL_DTYPE_FP32, logf(v), rill_cpu_log_fp32)
UNARY(double, RILL_DTYPE_FP64, log(v), rill_cpu_log_fp64)

/* Gradients: SRC is the forward slot read (0: X, 1: Out); EXPR sees v (that value) and
 * g (the upstream gradient). */
#define UNARY_GRAD(T, DT, SRC, EXPR, NAME)                                                \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *src, *dout, *dx;                                                         \
    if (!rill_kout(ctx, 0, 0)) return NULL;                                               \
    RILL_TRY(rill_kin_need(ctx, SRC, 0, DT, &src));                                       \
    RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &dout));                                        \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &dx));                                         \
    if (!rill_dims_equal(&src->dims, &dout->dims))                                        \
      return rill_kernel_error(ctx, "inputs %s (%s) and Out@GRAD (%s) differ in shape",   \
                               ctx->schema->inputs[SRC].name, rill_kin_name(ctx, SRC, 0), \
                               rill_kin_name(ctx, 2, 0));                                 \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &dout->dims));                           \
    const T *sp = rill_tensor_ptr(src), *gp = rill_tensor_ptr(dout);                      \
    T *dp = rill_tensor_ptr(dx);                                                          \
    int64_t n = rill_tensor_numel(dout);                                                  \
    for (int64_t i = 0; i < n; i++) {                                                     \
      T v = sp[i], g = gp[i];                                                             \
      dp[i] = EXPR;                                                                       \
    }                                                                                     \
    return NULL;                                                                          \
  }

UNARY_GRAD(float, RILL_DTYPE_FP32, 0, 2 * v * g, rill_cpu_square_grad_fp32)
UNARY_GRAD(double, RILL_DTYPE_FP64, 0, 2 * v * g, rill_cpu_square_grad_fp64)
UNARY_GRAD(float, RILL_DTYPE_FP32, 1, 0.5f * g / v, rill_cpu_sqrt_grad_fp32)
UNARY_GRAD(double, RILL_DTYPE_FP64, 1, 0.5 * g / v, rill_cpu_sqrt_grad_fp64)
UNARY_GRAD(float, RILL_DTYPE_FP32, 1, g * v, rill_cpu_exp_grad_fp32)
UNARY_GRAD(double, RILL_DTYPE_FP64, 1, g * v, rill_cpu_exp_grad_fp64)
UNARY_GRAD(float, RILL_DTYPE_FP32, 0, g / v, rill_cpu_log_grad_fp32)
UNARY_GRAD(double, RILL_DTYPE_FP64, 0, g / v, rill_cpu_log_grad_fp64)

/* clip's bounds: the Min / Max tensors (slots 1, 2) when present, else the attrs. */
#define CLIP_BOUNDS(T, DT, lo, hi)                                                        \
  do {                                                                                    \
    lo = (T)ctx->attrs[RILL_CLIP_ATTR_MIN].v.f;                                           \
    hi = (T)ctx->attrs[RILL_CLIP_ATTR_MAX].v.f;                                           \
    for (size_t s_ = 1; s_ <= 2; s_++) {                                                  \
      rill_tensor *b_ = rill_kin(ctx, s_, 0);                                             \
      if (!b_) continue;                                                                  \
      RILL_TRY(rill_kin_need(ctx, s_, 0, DT, &b_));                                       \
      if (rill_tensor_numel(b_) != 1)                                                     \
        return rill_kernel_error(ctx, "input %s (%s) must hold one element",              \
                                 ctx->schema->inputs[s_].name, rill_kin_name(ctx, s_, 0)); \
      if (s_ == 1) lo = *(const T *)rill_tensor_ptr(b_);                                  \
      else hi = *(const T *)rill_tensor_ptr(b_);                                          \
    }                                                                                     \
    if (!(lo <= hi))                                                                      \
      return rill_kernel_error(ctx, "min (%g) must not exceed max (%g)", (double)lo,      \
                               (double)hi);                                               \
  } while (0)

/* A selected-rows X (a sparse gradient) is merged first, as Paddle's kernel does: Out
 * holds each row once with the sum of its values, clipped. */
#define CLIP(T, DT, NAME)                                                                 \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *x, *out;                                                                 \
    T lo, hi;                                                                             \
    rill_status *rerr_;                                                                   \
    rill_selected_rows *xr_ = rill_cpu_rows_in(ctx, DT, &rerr_);                          \
    RILL_TRY(rerr_);                                                                      \
    CLIP_BOUNDS(T, DT, lo, hi);                                                           \
    if (xr_) {                                                                            \
      RILL_TRY(rill_cpu_rows_out_merged(ctx, xr_, &out));                                 \
      x = out;                                                                            \
    } else {                                                                              \
      RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                         \
      RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                      \
      RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &x->dims));                           \
    }                                                                                     \
    const T *xp = rill_tensor_ptr(x);                                                     \
    T *op = rill_tensor_ptr(out);                                                         \
    int64_t n = rill_tensor_numel(x);                                                     \
    for (int64_t i = 0; i < n; i++) {                                                     \
      T v = xp[i];                                                                        \
      op[i] = v < lo ? lo : v > hi ? hi : v;                                              \
    }                                                                                     \
    return NULL;                                                                          \
  }

#define CLIP_GRAD(T, DT, NAME)                                                            \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *x, *dout, *dx;                                                           \
    T lo, hi;                                                                             \
    if (!rill_kout(ctx, 0, 0)) return NULL;                                               \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                           \
    RILL_TRY(rill_kin_need(ctx, 3, 0, DT, &dout));                                        \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &dx));                                         \
    if (!rill_dims_equal(&x->dims, &dout->dims))                                          \
      return rill_kernel_error(ctx, "inputs X (%s) and Out@GRAD (%s) differ in shape",    \
                               rill_kin_name(ctx, 0, 0), rill_kin_name(ctx, 3, 0));       \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &x->dims));                              \
    CLIP_BOUNDS(T, DT, lo, hi);                                                           \
    const T *xp = rill_tensor_ptr(x), *gp = rill_tensor_ptr(dout);                        \
    T *dp = rill_tensor_ptr(dx);                                                          \
    int64_t n = rill_tensor_numel(x);                                                     \
    for (int64_t i = 0; i < n; i++) dp[i] = xp[i] > lo && xp[i] < hi ? gp[i] : 0;         \
    return NULL;                                                                          \
  }

CLIP(float, RILL_DTYPE_FP32, rill_cpu_clip_fp32)
CLIP(double, RILL_DTYPE_FP64, rill_cpu_clip_fp64)
CLIP_GRAD(float, RILL_DTYPE_FP32, rill_cpu_clip_grad_fp32)
CLIP_GRAD(double, RILL_DTYPE_FP64, rill_cpu_clip_grad_fp64)

/* square_grad_grad, sqrt_grad_grad and elu_grad_grad: inputs A (X; Out; X), B (DOut;
 * DX; DOut) and DDX (absent: zero), outputs O0 (DX; DOut; DX) and O1 (DDOut), in
 * Paddle's order of operations. */
#define UNARY_GRAD_GRAD(T, DT, EXPR0, EXPR1, NAME)                                        \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *ta, *tb, *tdd = NULL, *o0 = NULL, *o1 = NULL;                            \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &ta));                                          \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &tb));                                          \
    if (rill_kin(ctx, 2, 0)) RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &tdd));                \
    for (size_t s_ = 1; s_ <= 2; s_++) {                                                  \
      rill_tensor *t_ = s_ == 1 ? tb : tdd;                                               \
      if (t_ && !rill_dims_equal(&t_->dims, &ta->dims))                                   \
        return rill_kernel_error(ctx, "inputs %s (%s) and %s (%s) differ in shape",       \
                                 ctx->schema->inputs[s_].name, rill_kin_name(ctx, s_, 0), \
                                 ctx->schema->inputs[0].name, rill_kin_name(ctx, 0, 0));  \
    }                                                                                     \
    if (rill_kout(ctx, 0, 0)) {                                                           \
      RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &o0));                                       \
      RILL_TRY(rill_kout_check_dims(ctx, 0, 0, o0, &ta->dims));                           \
    }                                                                                     \
    if (rill_kout(ctx, 1, 0)) {                                                           \
      RILL_TRY(rill_kout_need(ctx, 1, 0, DT, &o1));                                       \
      RILL_TRY(rill_kout_check_dims(ctx, 1, 0, o1, &ta->dims));                           \
    }                                                                                     \
    const T *ap = rill_tensor_ptr(ta), *bp = rill_tensor_ptr(tb);                         \
    const T *ddp = tdd ? (const T *)rill_tensor_ptr(tdd) : NULL;                          \
    T *p0 = o0 ? (T *)rill_tensor_ptr(o0) : NULL, *p1 = o1 ? (T *)rill_tensor_ptr(o1) : NULL; \
    int64_t n = rill_tensor_numel(ta);                                                    \
    for (int64_t i = 0; i < n; i++) {                                                     \
      T a = ap[i], b = bp[i], dd = ddp ? ddp[i] : (T)0;                                   \
      (void)a;                                                                            \
      (void)b;                                                                            \
      if (p0) p0[i] = EXPR0;                                                              \
      if (p1) p1[i] = EXPR1;                                                              \
    }                                                                                     \
    return NULL;                                                                          \
  }

UNARY_GRAD_GRAD(float, RILL_DTYPE_FP32, dd * 2 * b, dd * 2 * a, rill_cpu_square_grad_grad_fp32)
UNARY_GRAD_GRAD(double, RILL_DTYPE_FP64, dd * 2 * b, dd * 2 * a, rill_cpu_square_grad_grad_fp64)
UNARY_GRAD_GRAD(float, RILL_DTYPE_FP32, b * dd * -1 / a, dd * 0.5f / a, rill_cpu_sqrt_grad_grad_fp32)
UNARY_GRAD_GRAD(double, RILL_DTYPE_FP64, b * dd * -1 / a, dd * 0.5 / a, rill_cpu_sqrt_grad_grad_fp64)
#define ELU_ALPHA ctx->attrs[RILL_ELU_GRAD_GRAD_ATTR_ALPHA].v.f
UNARY_GRAD_GRAD(float, RILL_DTYPE_FP32, dd * b * ELU_ALPHA * expf(a) * (float)(a < 0),
                dd * ((float)(a > 0) + ELU_ALPHA * expf(a) * (float)(a <= 0)),
                rill_cpu_elu_grad_grad_fp32)
UNARY_GRAD_GRAD(double, RILL_DTYPE_FP64, dd * b * ELU_ALPHA * exp(a) * (double)(a < 0),
                dd * ((double)(a > 0) + ELU_ALPHA * exp(a) * (double)(a <= 0)),
                rill_cpu_elu_grad_grad_fp64)
