/* CPU kernels of log_softmax, log_softmax_grad and softmax_grad. Tensors are viewed as
 * [outer, n, inner] around `axis`; per-position accumulators live in a scratch row of
 * `inner` values so memory is walked contiguously. In-place safe (Out = X, X@GRAD =
 * Out@GRAD): every pass reads a row fully before the last pass writes it. */
#include <math.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/kernels.h"

/* outer, n, inner of tensor t around the op's `axis` attribute (attribute 0). */
static rill_status *axis_view(const rill_kernel_ctx *ctx, size_t slot, const rill_tensor *t,
                              int64_t *outer, int64_t *n, int64_t *inner) {
  int r = t->dims.n, axis = ctx->attrs[RILL_LOG_SOFTMAX_ATTR_AXIS].v.i;
  if (r == 0 ? (axis != 0 && axis != -1) : (axis < -r || axis >= r))
    return rill_kernel_error(ctx, "attribute axis %d is out of range for input %s (%s) of rank %d",
                             axis, ctx->schema->inputs[slot].name, rill_kin_name(ctx, slot, 0), r);
  if (r == 0) {
    *outer = *n = *inner = 1;
    return NULL;
  }
  if (axis < 0) axis += r;
  *outer = rill_dims_prod(&t->dims, 0, axis);
  *n = t->dims.d[axis];
  *inner = rill_dims_prod(&t->dims, axis + 1, r);
  return NULL;
}

/* Inputs 0 and 1 (Out, Out@GRAD) of a gradient op, same shape, and output 0 (X@GRAD). */
static rill_status *grad_io(rill_kernel_ctx *ctx, rill_dtype dt, rill_tensor **out,
                            rill_tensor **dout, rill_tensor **dx) {
  RILL_TRY(rill_kin_need(ctx, 0, 0, dt, out));
  RILL_TRY(rill_kin_need(ctx, 1, 0, dt, dout));
  if (!rill_dims_equal(&(*out)->dims, &(*dout)->dims)) {
    char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
    return rill_kernel_error(ctx, "input Out@GRAD (%s) has shape %s but Out (%s) has shape %s",
                             rill_kin_name(ctx, 1, 0), rill_dims_str(&(*dout)->dims, a, sizeof a),
                             rill_kin_name(ctx, 0, 0), rill_dims_str(&(*out)->dims, b, sizeof b));
  }
  RILL_TRY(rill_kout_need(ctx, 0, 0, dt, dx));
  return rill_kout_check_dims(ctx, 0, 0, *dx, &(*out)->dims);
}

#define LOG_SOFTMAX(T, DT, EXP, LOG, NAME)                                                \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *x, *out;                                                                 \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                           \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                        \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &x->dims));                             \
    int64_t outer, n, inner;                                                              \
    RILL_TRY(axis_view(ctx, 0, x, &outer, &n, &inner));                                   \
    if (outer * n * inner == 0) return NULL;                                              \
    T *mx = rill_calloc((size_t)inner * 2, sizeof(T));                                    \
    if (!mx) return rill_oom();                                                           \
    T *sum = mx + inner;                                                                  \
    const T *xp = rill_tensor_ptr(x);                                                     \
    T *op = rill_tensor_ptr(out);                                                         \
    for (int64_t o = 0; o < outer; o++) {                                                 \
      const T *a = xp + o * n * inner;                                                    \
      T *d = op + o * n * inner;                                                          \
      for (int64_t j = 0; j < inner; j++) {                                               \
        mx[j] = a[j];                                                                     \
        sum[j] = 0;                                                                       \
      }                                                                                   \
      for (int64_t i = 1; i < n; i++)                                                     \
        for (int64_t j = 0; j < inner; j++)                                               \
          mx[j] = a[i * inner + j] > mx[j] ? a[i * inner + j] : mx[j];                    \
      for (int64_t i = 0; i < n; i++)                                                     \
        for (int64_t j = 0; j < inner; j++) sum[j] += EXP(a[i * inner + j] - mx[j]);      \
      for (int64_t j = 0; j < inner; j++) mx[j] += LOG(sum[j]);                           \
      for (int64_t i = 0; i < n; i++)                                                     \
        for (int64_t j = 0; j < inner; j++) d[i * inner + j] = a[i * inner + j] - mx[j];  \
    }                                                                                     \
    rill_free(mx);                                                                        \
    return NULL;                                                                          \
  }

/* ROW_TERM(out, dout): what is summed along the axis; RESULT(out, dout, s): X@GRAD. */
#define SOFTMAX_LIKE_GRAD(T, DT, NAME, ROW_TERM, RESULT)                                  \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    if (!rill_kout(ctx, 0, 0)) return NULL; /* X@GRAD not wanted */                       \
    rill_tensor *out, *dout, *dx;                                                         \
    RILL_TRY(grad_io(ctx, DT, &out, &dout, &dx));                                         \
    int64_t outer, n, inner;                                                              \
    RILL_TRY(axis_view(ctx, 0, out, &outer, &n, &inner));                                 \
    if (outer * n * inner == 0) return NULL;                                              \
    T *s = rill_calloc((size_t)inner, sizeof(T));                                         \
    if (!s) return rill_oom();                                                            \
    const T *yp = rill_tensor_ptr(out), *gp = rill_tensor_ptr(dout);                      \
    T *dp = rill_tensor_ptr(dx);                                                          \
    for (int64_t o = 0; o < outer; o++) {                                                 \
      const T *y = yp + o * n * inner, *g = gp + o * n * inner;                           \
      T *d = dp + o * n * inner;                                                          \
      for (int64_t j = 0; j < inner; j++) s[j] = 0;                                       \
      for (int64_t i = 0; i < n; i++)                                                     \
        for (int64_t j = 0; j < inner; j++) {                                             \
          T yv = y[i * inner + j], gv = g[i * inner + j];                                 \
          s[j] += ROW_TERM(yv, gv);                                                       \
        }                                                                                 \
      for (int64_t i = 0; i < n; i++)                                                     \
        for (int64_t j = 0; j < inner; j++) {                                             \
          T yv = y[i * inner + j], gv = g[i * inner + j];                                 \
          d[i * inner + j] = RESULT(yv, gv, s[j]);                                        \
        }                                                                                 \
    }                                                                                     \
    rill_free(s);                                                                         \
    return NULL;                                                                          \
  }

#define SM_TERM(y, g) ((y) * (g))
#define SM_RESULT(y, g, s) ((y) * ((g) - (s)))
#define LSM_TERM(y, g) ((void)(y), (g))
#define LSM_RESULT_F(y, g, s) ((g) - expf(y) * (s))
#define LSM_RESULT_D(y, g, s) ((g) - exp(y) * (s))

LOG_SOFTMAX(float, RILL_DTYPE_FP32, expf, logf, rill_cpu_log_softmax_fp32)
LOG_SOFTMAX(double, RILL_DTYPE_FP64, exp, log, rill_cpu_log_softmax_fp64)
SOFTMAX_LIKE_GRAD(float, RILL_DTYPE_FP32, rill_cpu_softmax_grad_fp32, SM_TERM, SM_RESULT)
SOFTMAX_LIKE_GRAD(double, RILL_DTYPE_FP64, rill_cpu_softmax_grad_fp64, SM_TERM, SM_RESULT)
SOFTMAX_LIKE_GRAD(float, RILL_DTYPE_FP32, rill_cpu_log_softmax_grad_fp32, LSM_TERM, LSM_RESULT_F)
SOFTMAX_LIKE_GRAD(double, RILL_DTYPE_FP64, rill_cpu_log_softmax_grad_fp64, LSM_TERM, LSM_RESULT_D)
