/* reduce_sum / reduce_mean / reduce_max / reduce_min / reduce_prod CPU kernels and their
 * gradients.
 *
 * X's dims are merged into runs that are all reduced or all kept; the walk keeps an
 * output offset per run (stride 0 over reduced runs). Sums go through an accumulator
 * of double (float types) or int64 (integer types) the size of Out; max, min and prod
 * accumulate in Out itself, in X's type, as Paddle does. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/kernels.h"
#include "operators/reduce.h"

typedef rill_reduce_plan red_plan;

static rill_status *red_plan_make(rill_kernel_ctx *ctx, const rill_tensor *x, red_plan *p) {
  char why[128];
  if (!rill_reduce_plan_make(&x->dims, &ctx->attrs[RILL_REDUCE_SUM_ATTR_DIM], ctx->attrs[RILL_REDUCE_SUM_ATTR_KEEP_DIM].v.b,
                             ctx->attrs[RILL_REDUCE_SUM_ATTR_REDUCE_ALL].v.b, p, why, sizeof why))
    return rill_kernel_error(ctx, "input X (%s): %s", rill_kin_name(ctx, 0, 0), why);
  return NULL;
}

/* Visits X run by run: BODY sees xo (X offset of the run), oo (Out offset), inner and
 * osi (the inner run's output stride, 0 when it is reduced). */
#define RED_WALK(p, ...)                                                                  \
  do {                                                                                    \
    int r_ = (p).n;                                                                       \
    int64_t inner = (p).dims[r_ - 1], osi = (p).os[r_ - 1];                               \
    int64_t outer_ = (p).xnumel / inner, idx_[RILL_MAX_DIMS] = {0}, oo = 0;               \
    for (int64_t oi_ = 0; oi_ < outer_; oi_++) {                                          \
      int64_t xo = oi_ * inner;                                                           \
      __VA_ARGS__;                                                                        \
      for (int k_ = r_ - 2; k_ >= 0; k_--) {                                              \
        oo += (p).os[k_];                                                                 \
        if (++idx_[k_] < (p).dims[k_]) break;                                             \
        oo -= (p).os[k_] * (p).dims[k_];                                                  \
        idx_[k_] = 0;                                                                     \
      }                                                                                   \
    }                                                                                     \
  } while (0)

#define REDUCE(T, ACC, DT, MEAN, NAME)                                                    \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *x, *out;                                                                 \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                           \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                        \
    red_plan p;                                                                           \
    RILL_TRY(red_plan_make(ctx, x, &p));                                                  \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &p.out));                               \
    ACC *acc = rill_calloc((size_t)(p.onumel ? p.onumel : 1), sizeof *acc);               \
    if (!acc) return rill_oom();                                                          \
    const T *xp = rill_tensor_ptr(x);                                                     \
    if (p.xnumel > 0)                                                                     \
      RED_WALK(p, {                                                                       \
        const T *src = xp + xo;                                                           \
        if (osi) {                                                                        \
          ACC *dst = acc + oo;                                                            \
          for (int64_t i = 0; i < inner; i++) dst[i] += (ACC)src[i];                      \
        } else {                                                                          \
          ACC s = 0;                                                                      \
          for (int64_t i = 0; i < inner; i++) s += (ACC)src[i];                           \
          acc[oo] += s;                                                                   \
        }                                                                                 \
      });                                                                                 \
    T *op = rill_tensor_ptr(out);                                                         \
    for (int64_t i = 0; i < p.onumel; i++)                                                \
      op[i] = MEAN ? (T)(acc[i] / (ACC)p.count) : (T)acc[i];                              \
    rill_free(acc);                                                                       \
    return NULL;                                                                          \
  }

REDUCE(float, double, RILL_DTYPE_FP32, 0, rill_cpu_reduce_sum_fp32)
REDUCE(double, double, RILL_DTYPE_FP64, 0, rill_cpu_reduce_sum_fp64)
REDUCE(int32_t, int64_t, RILL_DTYPE_INT32, 0, rill_cpu_reduce_sum_int32)
REDUCE(int64_t, int64_t, RILL_DTYPE_INT64, 0, rill_cpu_reduce_sum_int64)
REDUCE(float, double, RILL_DTYPE_FP32, 1, rill_cpu_reduce_mean_fp32)
REDUCE(double, double, RILL_DTYPE_FP64, 1, rill_cpu_reduce_mean_fp64)

#define REDUCE_GRAD(T, DT, MEAN, NAME)                                                    \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *x, *dout, *dx;                                                           \
    if (!rill_kout(ctx, 0, 0)) return NULL;                                               \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                           \
    RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &dout));                                        \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &dx));                                         \
    red_plan p;                                                                           \
    RILL_TRY(red_plan_make(ctx, x, &p));                                                  \
    if (rill_tensor_numel(dout) != p.onumel)                                              \
      return rill_kernel_error(ctx, "input Out@GRAD (%s) holds %lld elements, the forward " \
                               "Out %lld", rill_kin_name(ctx, 2, 0),                      \
                               (long long)rill_tensor_numel(dout), (long long)p.onumel);  \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &x->dims));                              \
    const T *gp = rill_tensor_ptr(dout);                                                  \
    T *dp = rill_tensor_ptr(dx);                                                          \
    T scale = MEAN && p.count ? (T)1 / (T)p.count : (T)1;                                 \
    if (p.xnumel > 0)                                                                     \
      RED_WALK(p, {                                                                       \
        T *dst = dp + xo;                                                                 \
        const T *g = gp + oo;                                                             \
        if (osi)                                                                          \
          for (int64_t i = 0; i < inner; i++) dst[i] = g[i] * scale;                      \
        else                                                                              \
          for (int64_t i = 0; i < inner; i++) dst[i] = g[0] * scale;                      \
      });                                                                                 \
    return NULL;                                                                          \
  }

REDUCE_GRAD(float, RILL_DTYPE_FP32, 0, rill_cpu_reduce_sum_grad_fp32)
REDUCE_GRAD(double, RILL_DTYPE_FP64, 0, rill_cpu_reduce_sum_grad_fp64)
REDUCE_GRAD(float, RILL_DTYPE_FP32, 1, rill_cpu_reduce_mean_grad_fp32)
REDUCE_GRAD(double, RILL_DTYPE_FP64, 1, rill_cpu_reduce_mean_grad_fp64)

/* max / min / prod: Out starts at INIT and takes COMBINE(acc, x) element by element. */
#define MAX2(a, b) ((b) > (a) ? (b) : (a))
#define MIN2(a, b) ((b) < (a) ? (b) : (a))
#define PROD2(a, b) ((a) * (b))

#define REDUCE_FOLD(T, DT, INIT, COMBINE, NAME)                                           \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *x, *out;                                                                 \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                           \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                        \
    red_plan p;                                                                           \
    RILL_TRY(red_plan_make(ctx, x, &p));                                                  \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &p.out));                               \
    const T *xp = rill_tensor_ptr(x);                                                     \
    T *op = rill_tensor_ptr(out);                                                         \
    for (int64_t i = 0; i < p.onumel; i++) op[i] = (INIT);                                \
    if (p.xnumel > 0)                                                                     \
      RED_WALK(p, {                                                                       \
        const T *src = xp + xo;                                                           \
        if (osi) {                                                                        \
          T *dst = op + oo;                                                               \
          for (int64_t i = 0; i < inner; i++) dst[i] = COMBINE(dst[i], src[i]);           \
        } else {                                                                          \
          T a = op[oo];                                                                   \
          for (int64_t i = 0; i < inner; i++) a = COMBINE(a, src[i]);                     \
          op[oo] = a;                                                                     \
        }                                                                                 \
      });                                                                                 \
    return NULL;                                                                          \
  }

REDUCE_FOLD(float, RILL_DTYPE_FP32, -INFINITY, MAX2, rill_cpu_reduce_max_fp32)
REDUCE_FOLD(double, RILL_DTYPE_FP64, -INFINITY, MAX2, rill_cpu_reduce_max_fp64)
REDUCE_FOLD(int32_t, RILL_DTYPE_INT32, INT32_MIN, MAX2, rill_cpu_reduce_max_int32)
REDUCE_FOLD(int64_t, RILL_DTYPE_INT64, INT64_MIN, MAX2, rill_cpu_reduce_max_int64)
REDUCE_FOLD(float, RILL_DTYPE_FP32, INFINITY, MIN2, rill_cpu_reduce_min_fp32)
REDUCE_FOLD(double, RILL_DTYPE_FP64, INFINITY, MIN2, rill_cpu_reduce_min_fp64)
REDUCE_FOLD(int32_t, RILL_DTYPE_INT32, INT32_MAX, MIN2, rill_cpu_reduce_min_int32)
REDUCE_FOLD(int64_t, RILL_DTYPE_INT64, INT64_MAX, MIN2, rill_cpu_reduce_min_int64)
REDUCE_FOLD(float, RILL_DTYPE_FP32, 1, PROD2, rill_cpu_reduce_prod_fp32)
REDUCE_FOLD(double, RILL_DTYPE_FP64, 1, PROD2, rill_cpu_reduce_prod_fp64)
REDUCE_FOLD(int32_t, RILL_DTYPE_INT32, 1, PROD2, rill_cpu_reduce_prod_int32)
REDUCE_FOLD(int64_t, RILL_DTYPE_INT64, 1, PROD2, rill_cpu_reduce_prod_int64)

#define AND2(a, b) ((a) && (b))
#define OR2(a, b) ((a) || (b))
REDUCE_FOLD(bool, RILL_DTYPE_BOOL, true, AND2, rill_cpu_reduce_all_bool)
REDUCE_FOLD(bool, RILL_DTYPE_BOOL, false, OR2, rill_cpu_reduce_any_bool)

/* isinf / isnan / isfinite: ANY true sets Out when some element passes TEST; else Out is
 * whether every element passes. */
#define FLAG(T, DT, TEST, ANY, NAME)                                                      \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *x, *out;                                                                 \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                           \
    RILL_TRY(rill_kout_need(ctx, 0, 0, RILL_DTYPE_BOOL, &out));                           \
    if (rill_tensor_numel(out) != 1)                                                      \
      return rill_kernel_error(ctx, "output Out (%s) must hold one element",              \
                               rill_kout_name(ctx, 0, 0));                                \
    const T *xp = rill_tensor_ptr(x);                                                     \
    int64_t n = rill_tensor_numel(x);                                                     \
    bool r = !(ANY);                                                                      \
    for (int64_t i = 0; i < n; i++)                                                       \
      if ((bool)(TEST(xp[i])) == (ANY)) {                                                 \
        r = (ANY);                                                                        \
        break;                                                                            \
      }                                                                                   \
    *(bool *)rill_tensor_ptr(out) = r;                                                    \
    return NULL;                                                                          \
  }

FLAG(float, RILL_DTYPE_FP32, isinf, true, rill_cpu_isinf_fp32)
FLAG(double, RILL_DTYPE_FP64, isinf, true, rill_cpu_isinf_fp64)
FLAG(float, RILL_DTYPE_FP32, isnan, true, rill_cpu_isnan_fp32)
FLAG(double, RILL_DTYPE_FP64, isnan, true, rill_cpu_isnan_fp64)
FLAG(float, RILL_DTYPE_FP32, isfinite, false, rill_cpu_isfinite_fp32)
FLAG(double, RILL_DTYPE_FP64, isfinite, false, rill_cpu_isfinite_fp64)

/* Gradients that read the forward Out: GRAD(x, out, g) per element of X. */
#define EQ_GRAD(x, o, g) ((x) == (o) ? (g) : 0)
#define PROD_GRAD(x, o, g) ((g) * (o) / (x))

#define REDUCE_OUT_GRAD(T, DT, GRAD, NAME)                                                \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *x, *out, *dout, *dx;                                                     \
    if (!rill_kout(ctx, 0, 0)) return NULL;                                               \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                           \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &out));                                         \
    RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &dout));                                        \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &dx));                                         \
    red_plan p;                                                                           \
    RILL_TRY(red_plan_make(ctx, x, &p));                                                  \
    for (size_t s_ = 1; s_ <= 2; s_++) {                                                  \
      const rill_tensor *t_ = s_ == 1 ? out : dout;                                       \
      if (rill_tensor_numel(t_) != p.onumel)                                              \
        return rill_kernel_error(ctx, "input %s (%s) holds %lld elements, the forward Out " \
                                 "%lld", s_ == 1 ? "Out" : "Out@GRAD",                    \
                                 rill_kin_name(ctx, s_, 0), (long long)rill_tensor_numel(t_), \
                                 (long long)p.onumel);                                    \
    }                                                                                     \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &x->dims));                              \
    const T *xp = rill_tensor_ptr(x), *yp = rill_tensor_ptr(out), *gp = rill_tensor_ptr(dout); \
    T *dp = rill_tensor_ptr(dx);                                                          \
    if (p.xnumel > 0)                                                                     \
      RED_WALK(p, {                                                                       \
        const T *src = xp + xo, *y = yp + oo, *g = gp + oo;                               \
        T *dst = dp + xo;                                                                 \
        if (osi)                                                                          \
          for (int64_t i = 0; i < inner; i++) dst[i] = GRAD(src[i], y[i], g[i]);          \
        else                                                                              \
          for (int64_t i = 0; i < inner; i++) dst[i] = GRAD(src[i], y[0], g[0]);          \
      });                                                                                 \
    return NULL;                                                                          \
  }

REDUCE_OUT_GRAD(float, RILL_DTYPE_FP32, EQ_GRAD, rill_cpu_reduce_max_grad_fp32)
REDUCE_OUT_GRAD(double, RILL_DTYPE_FP64, EQ_GRAD, rill_cpu_reduce_max_grad_fp64)
REDUCE_OUT_GRAD(float, RILL_DTYPE_FP32, EQ_GRAD, rill_cpu_reduce_min_grad_fp32)
REDUCE_OUT_GRAD(double, RILL_DTYPE_FP64, EQ_GRAD, rill_cpu_reduce_min_grad_fp64)
REDUCE_OUT_GRAD(float, RILL_DTYPE_FP32, PROD_GRAD, rill_cpu_reduce_prod_grad_fp32)
REDUCE_OUT_GRAD(double, RILL_DTYPE_FP64, PROD_GRAD, rill_cpu_reduce_prod_grad_fp64)
