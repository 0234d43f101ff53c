/* kron, trace and their gradients (float32, float64). */
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/tensor_ops.h"

/* kron's geometry: per X element its offset in Out, per Y element its offset in Out
 * relative to that (the lower rank padded with leading 1s). */
typedef struct kron_plan {
  int64_t nx, ny, *xoff, *yoff;
} kron_plan;

static rill_status *kron_plan_make(const rill_dims *x, const rill_dims *y, kron_plan *p) {
  rill_dims od;
  rill_kron_dims(x, y, &od);
  int r = od.n;
  int64_t xd[RILL_MAX_DIMS], yd[RILL_MAX_DIMS], os[RILL_MAX_DIMS];
  for (int i = 0; i < r; i++) {
    int xi = i - (r - x->n), yi = i - (r - y->n);
    xd[i] = xi >= 0 ? x->d[xi] : 1;
    yd[i] = yi >= 0 ? y->d[yi] : 1;
  }
  int64_t s = 1;
  for (int i = r - 1; i >= 0; i--) {
    os[i] = s;
    s *= od.d[i];
  }
  p->nx = rill_dims_prod(x, 0, x->n);
  p->ny = rill_dims_prod(y, 0, y->n);
  p->xoff = rill_malloc((size_t)(p->nx + 1) * sizeof *p->xoff);
  p->yoff = rill_malloc((size_t)(p->ny + 1) * sizeof *p->yoff);
  if (!p->xoff || !p->yoff) {
    rill_free(p->xoff);
    rill_free(p->yoff);
    return rill_oom();
  }
  for (int64_t i = 0; i < p->nx; i++) {
    int64_t rest = i, off = 0;
    for (int d = r - 1; d >= 0; d--) {
      off += (rest % xd[d]) * yd[d] * os[d];
      rest /= xd[d];
    }
    p->xoff[i] = off;
  }
  for (int64_t j = 0; j < p->ny; j++) {
    int64_t rest = j, off = 0;
    for (int d = r - 1; d >= 0; d--) {
      off += (rest % yd[d]) * os[d];
      rest /= yd[d];
    }
    p->yoff[j] = off;
  }
  return NULL;
}

static void kron_plan_free(kron_plan *p) {
  rill_free(p->xoff);
  rill_free(p->yoff);
}

#define KRON(T, DT, NAME, GRAD_NAME)                                                      \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *x, *y, *out;                                                             \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                           \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &y));                                           \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                        \
    rill_dims od;                                                                         \
    rill_kron_dims(&x->dims, &y->dims, &od);                                              \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &od));                                  \
    kron_plan p;                                                                          \
    RILL_TRY(kron_plan_make(&x->dims, &y->dims, &p));                                     \
    const T *xp = rill_tensor_ptr(x), *yp = rill_tensor_ptr(y);                           \
    T *op = rill_tensor_ptr(out);                                                         \
    for (int64_t i = 0; i < p.nx; i++)                                                    \
      for (int64_t j = 0; j < p.ny; j++) op[p.xoff[i] + p.yoff[j]] = xp[i] * yp[j];       \
    kron_plan_free(&p);                                                                   \
    return NULL;                                                                          \
  }                                                                                       \
  rill_status *GRAD_NAME(rill_kernel_ctx *ctx) {                                          \
    rill_tensor *x, *y, *g, *dx = rill_kout(ctx, 0, 0), *dy = rill_kout(ctx, 1, 0);       \
    if (!dx && !dy) return NULL;                                                          \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                           \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &y));                                           \
    RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &g));                                           \
    rill_dims od;                                                                         \
    rill_kron_dims(&x->dims, &y->dims, &od);                                              \
    RILL_TRY(rill_kin_check_dims(ctx, 2, g, &od));                                        \
    if (dx) {                                                                             \
      RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &dx));                                       \
      RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &x->dims));                            \
    }                                                                                     \
    if (dy) {                                                                             \
      RILL_TRY(rill_kout_need(ctx, 1, 0, DT, &dy));                                       \
      RILL_TRY(rill_kout_check_dims(ctx, 1, 0, dy, &y->dims));                            \
    }                                                                                     \
    kron_plan p;                                                                          \
    RILL_TRY(kron_plan_make(&x->dims, &y->dims, &p));                                     \
    const T *xp = rill_tensor_ptr(x), *yp = rill_tensor_ptr(y), *gp = rill_tensor_ptr(g); \
    T *dxp = dx ? rill_tensor_ptr(dx) : NULL, *dyp = dy ? rill_tensor_ptr(dy) : NULL;     \
    if (dyp) memset(dyp, 0, (size_t)p.ny * sizeof(T));                                    \
    for (int64_t i = 0; i < p.nx; i++) {                                                  \
      T s = 0;                                                                            \
      for (int64_t j = 0; j < p.ny; j++) {                                                \
        T gv = gp[p.xoff[i] + p.yoff[j]];                                                 \
        s += gv * yp[j];                                                                  \
        if (dyp) dyp[j] += gv * xp[i];                                                    \
      }                                                                                   \
      if (dxp) dxp[i] = s;                                                                \
    }                                                                                     \
    kron_plan_free(&p);                                                                   \
    return NULL;                                                                          \
  }

KRON(float, RILL_DTYPE_FP32, rill_cpu_kron_fp32, rill_cpu_kron_grad_fp32)
KRON(double, RILL_DTYPE_FP64, rill_cpu_kron_fp64, rill_cpu_kron_grad_fp64)

/* trace's walk: for each output element o, the offset of its diagonal's first element
 * in Input and the diagonal's length and step. */
typedef struct trace_plan {
  rill_dims out;
  int64_t n, len, step, *base;
} trace_plan;

static rill_status *trace_plan_make(rill_kernel_ctx *ctx, const rill_tensor *x, trace_plan *p,
                                    int32_t offset, int32_t dim1, int32_t dim2) {
  int d1, d2;
  char err[160];
  if (!rill_trace_dims(&x->dims, dim1, dim2, &p->out, &d1, &d2, err, sizeof err))
    return rill_kernel_error(ctx, "input Input (%s): %s", rill_kin_name(ctx, 0, 0), err);
  int r = x->dims.n;
  int64_t st[RILL_MAX_DIMS];
  int64_t s = 1;
  for (int i = r - 1; i >= 0; i--) {
    st[i] = s;
    s *= x->dims.d[i];
  }
  int64_t i0 = offset < 0 ? -(int64_t)offset : 0, j0 = offset > 0 ? offset : 0;
  int64_t a = x->dims.d[d1] - i0, b = x->dims.d[d2] - j0;
  p->len = a < b ? a : b;
  if (p->len < 0) p->len = 0;
  p->step = st[d1] + st[d2];
  p->n = rill_dims_prod(&p->out, 0, p->out.n);
  if (!(p->base = rill_malloc((size_t)(p->n + 1) * sizeof *p->base))) return rill_oom();
  int64_t start = i0 * st[d1] + j0 * st[d2];
  for (int64_t o = 0; o < p->n; o++) {
    int64_t rest = o, off = start;
    for (int i = r - 1; i >= 0; i--) {
      if (i == d1 || i == d2) continue;
      off += (rest % x->dims.d[i]) * st[i];
      rest /= x->dims.d[i];
    }
    p->base[o] = off;
  }
  return NULL;
}

#define TRACE(T, DT, NAME, GRAD_NAME)                                                     \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *x, *out;                                                                 \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                           \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                        \
    trace_plan p;                                                                         \
    RILL_TRY(trace_plan_make(ctx, x, &p, ctx->attrs[RILL_TRACE_ATTR_OFFSET].v.i,          \
                             ctx->attrs[RILL_TRACE_ATTR_DIM1].v.i,                        \
                             ctx->attrs[RILL_TRACE_ATTR_DIM2].v.i));                      \
    rill_status *st = rill_kout_check_dims(ctx, 0, 0, out, &p.out);                       \
    if (!st) {                                                                            \
      const T *xp = rill_tensor_ptr(x);                                                   \
      T *op = rill_tensor_ptr(out);                                                       \
      for (int64_t o = 0; o < p.n; o++) {                                                 \
        T s = 0;                                                                          \
        for (int64_t k = 0; k < p.len; k++) s += xp[p.base[o] + k * p.step];              \
        op[o] = s;                                                                        \
      }                                                                                   \
    }                                                                                     \
    rill_free(p.base);                                                                    \
    return st;                                                                            \
  }                                                                                       \
  rill_status *GRAD_NAME(rill_kernel_ctx *ctx) {                                          \
    rill_tensor *x = rill_kin(ctx, 0, 0), *g, *dx = rill_kout(ctx, 0, 0);                 \
    if (!dx) return NULL;                                                                 \
    if (!x) return rill_kernel_error(ctx, "input Input (%s) is missing", rill_kin_name(ctx, 0, 0)); \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &g));                                           \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &dx));                                         \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &x->dims));                              \
    trace_plan p;                                                                         \
    RILL_TRY(trace_plan_make(ctx, x, &p, ctx->attrs[RILL_TRACE_GRAD_ATTR_OFFSET].v.i,     \
                             ctx->attrs[RILL_TRACE_GRAD_ATTR_DIM1].v.i,                   \
                             ctx->attrs[RILL_TRACE_GRAD_ATTR_DIM2].v.i));                 \
    rill_status *st = rill_kin_check_dims(ctx, 1, g, &p.out);                             \
    if (!st) {                                                                            \
      const T *gp = rill_tensor_ptr(g);                                                   \
      T *dp = rill_tensor_ptr(dx);                                                        \
      memset(dp, 0, rill_tensor_nbytes(dx));                                              \
      for (int64_t o = 0; o < p.n; o++)                                                   \
        for (int64_t k = 0; k < p.len; k++) dp[p.base[o] + k * p.step] = gp[o];           \
    }                                                                                     \
    rill_free(p.base);                                                                    \
    return st;                                                                            \
  }

TRACE(float, RILL_DTYPE_FP32, rill_cpu_trace_fp32, rill_cpu_trace_grad_fp32)
TRACE(double, RILL_DTYPE_FP64, rill_cpu_trace_fp64, rill_cpu_trace_grad_fp64)
