/* teacher_student_sigmoid_loss CPU kernels, in double per row. */
#include <math.h>

#include "kernels/cpu/kernels.h"

static rill_status *tss_inputs(rill_kernel_ctx *ctx, rill_dtype dt, rill_tensor **x,
                               rill_tensor **l) {
  RILL_TRY(rill_kin_need(ctx, 0, 0, dt, x));
  RILL_TRY(rill_kin_need(ctx, 1, 0, dt, l));
  if ((*x)->dims.n != 2 || (*x)->dims.d[1] != 1)
    return rill_kernel_error(ctx, "input X (%s) must be [N, 1]", rill_kin_name(ctx, 0, 0));
  rill_dims ld = {.n = 2, .d = {(*x)->dims.d[0], 1}};
  return rill_kin_check_dims(ctx, 1, *l, &ld);
}

/* max(x, 0) + log(1 + e^-|x|) */
static double softplus(double x) { return (x > 0 ? x : 0) + log1p(exp(-fabs(x))); }

#define TSS(T, DT, SUF)                                                                   \
  rill_status *rill_cpu_teacher_student_sigmoid_loss_##SUF(rill_kernel_ctx *ctx) {       \
    rill_tensor *x, *l, *y;                                                               \
    RILL_TRY(tss_inputs(ctx, DT, &x, &l));                                                \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &y));                                          \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, y, &x->dims));                               \
    const T *xp = rill_tensor_ptr(x), *lp = rill_tensor_ptr(l);                           \
    T *yp = rill_tensor_ptr(y);                                                           \
    for (int64_t i = 0; i < x->dims.d[0]; i++) {                                          \
      double v = (double)xp[i], lab = (double)lp[i], sp = softplus(v);                    \
      yp[i] = (T)(lab < -1.0 ? sp : lab < 0.0 ? sp - v : 2 * sp - lab * v);               \
    }                                                                                     \
    return NULL;                                                                          \
  }                                                                                       \
                                                                                          \
  rill_status *rill_cpu_teacher_student_sigmoid_loss_grad_##SUF(rill_kernel_ctx *ctx) {  \
    rill_tensor *x, *l, *g, *dx;                                                          \
    RILL_TRY(tss_inputs(ctx, DT, &x, &l));                                                \
    RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &g));                                           \
    RILL_TRY(rill_kin_check_dims(ctx, 2, g, &x->dims));                                   \
    if (!rill_kout(ctx, 0, 0)) return NULL;                                               \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &dx));                                         \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &x->dims));                              \
    double up = ctx->attrs[RILL_TEACHER_STUDENT_SIGMOID_LOSS_ATTR_SOFT_MAX_UP_BOUND].v.f;  \
    double lo = ctx->attrs[RILL_TEACHER_STUDENT_SIGMOID_LOSS_ATTR_SOFT_MAX_LOWER_BOUND].v.f; \
    const T *xp = rill_tensor_ptr(x), *lp = rill_tensor_ptr(l), *gp = rill_tensor_ptr(g); \
    T *o = rill_tensor_ptr(dx);                                                           \
    for (int64_t i = 0; i < x->dims.d[0]; i++) {                                          \
      double v = (double)xp[i], lab = (double)lp[i];                                      \
      v = v > up ? up : v < lo ? lo : v;                                                  \
      double p = 1.0 / (1.0 + exp(-v));                                                   \
      double d = lab < -1.0 ? -p : lab < 0.0 ? 1.0 - p : lab - 2.0 * p;                   \
      if (v >= up || v <= lo) d = 0;                                                      \
      o[i] = (T)(-d * (double)gp[i]);                                                     \
    }                                                                                     \
    return NULL;                                                                          \
  }

TSS(float, RILL_DTYPE_FP32, fp32)
TSS(double, RILL_DTYPE_FP64, fp64)
