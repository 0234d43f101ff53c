/* bmm, dot, cross, dist, addmm and their gradients on the CPU. Sums accumulate in
 * double; the matrix products are plain loops (the ops serve small Fluid 1.8 layers). */
#include <math.h>
#include <string.h>

#include "kernels/cpu/kernels.h"
#include "operators/elementwise.h"
#include "operators/linalg.h"

static rill_status *shape_error(rill_kernel_ctx *ctx, const char *what) {
  return rill_kernel_error(ctx, "inputs X (%s) and Y (%s): %s", rill_kin_name(ctx, 0, 0),
                           rill_kin_name(ctx, 1, 0), what);
}

/* Optional gradient output `slot` shaped like `like`: NULL when not wanted. */
static rill_status *grad_out(rill_kernel_ctx *ctx, size_t slot, rill_dtype dt,
                             const rill_tensor *like, rill_tensor **out) {
  *out = rill_kout(ctx, slot, 0);
  if (!*out) return NULL;
  RILL_TRY(rill_kout_need(ctx, slot, 0, dt, out));
  return rill_kout_check_dims(ctx, slot, 0, *out, &like->dims);
}

/* ---- matrix products: bmm, and addmm's gradients ---- */

/* c = alpha * op(a) op(b) for op(a) [M, K], op(b) [K, N]; ta / tb: a is stored [K, M],
 * b [N, K]. */
#define MM(T, NAME)                                                                         \
  static void NAME(const T *a, const T *b, T *c, int64_t M, int64_t K, int64_t N, bool ta,  \
                   bool tb, double alpha) {                                                 \
    for (int64_t m = 0; m < M; m++)                                                         \
      for (int64_t n = 0; n < N; n++) {                                                     \
        double s = 0;                                                                       \
        for (int64_t k = 0; k < K; k++)                                                     \
          s += (double)a[ta ? k * M + m : m * K + k] * (double)b[tb ? n * K + k : k * N + n]; \
        c[m * N + n] = (T)(alpha * s);                                                      \
      }                                                                                     \
  }

MM(float, mm_fp32)
MM(double, mm_fp64)

/* bmm's extents: X is [B, M, K] and Y [B, K, N]. */
static rill_status *bmm_dims(rill_kernel_ctx *ctx, const rill_tensor *x, const rill_tensor *y,
                             int64_t *B, int64_t *M, int64_t *K, int64_t *N) {
  const rill_dims *a = &x->dims, *b = &y->dims;
  if (a->n != 3 || b->n != 3 || a->d[0] != b->d[0] || a->d[2] != b->d[1])
    return shape_error(ctx, "must be [B, M, K] and [B, K, N]");
  *B = a->d[0];
  *M = a->d[1];
  *K = a->d[2];
  *N = b->d[2];
  return NULL;
}

#define BMM(T, DT, NAME, GRAD, MMF)                                                          \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                 \
    rill_tensor *x, *y, *out;                                                               \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                             \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &y));                                             \
    int64_t B = 0, M = 0, K = 0, N = 0;                                                     \
    RILL_TRY(bmm_dims(ctx, x, y, &B, &M, &K, &N));                                          \
    rill_dims od = {.n = 3, .d = {B, M, N}};                                                \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                          \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &od));                                    \
    const T *xp = rill_tensor_ptr(x), *yp = rill_tensor_ptr(y);                             \
    T *op = rill_tensor_ptr(out);                                                           \
    for (int64_t i = 0; i < B; i++)                                                         \
      MMF(xp + i * M * K, yp + i * K * N, op + i * M * N, M, K, N, false, false, 1.0);     \
    return NULL;                                                                            \
  }                                                                                         \
  rill_status *GRAD(rill_kernel_ctx *ctx) {                                                 \
    rill_tensor *x, *y, *g, *dx, *dy;                                                       \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                             \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &y));                                             \
    RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &g));                                             \
    int64_t B = 0, M = 0, K = 0, N = 0;                                                     \
    RILL_TRY(bmm_dims(ctx, x, y, &B, &M, &K, &N));                                          \
    rill_dims od = {.n = 3, .d = {B, M, N}};                                                \
    RILL_TRY(rill_kin_check_dims(ctx, 2, g, &od));                                          \
    RILL_TRY(grad_out(ctx, 0, DT, x, &dx));                                                 \
    RILL_TRY(grad_out(ctx, 1, DT, y, &dy));                                                 \
    const T *xp = rill_tensor_ptr(x), *yp = rill_tensor_ptr(y), *gp = rill_tensor_ptr(g);   \
    for (int64_t i = 0; i < B; i++) {                                                       \
      if (dx) /* [M, N] [K, N]^T */                                                         \
        MMF(gp + i * M * N, yp + i * K * N, (T *)rill_tensor_ptr(dx) + i * M * K, M, N, K,    \
            false, true, 1.0);                                                              \
      if (dy) /* [M, K]^T [M, N] */                                                         \
        MMF(xp + i * M * K, gp + i * M * N, (T *)rill_tensor_ptr(dy) + i * K * N, K, M, N,    \
            true, false, 1.0);                                                              \
    }                                                                                       \
    return NULL;                                                                            \
  }

BMM(float, RILL_DTYPE_FP32, rill_cpu_bmm_fp32, rill_cpu_bmm_grad_fp32, mm_fp32)
BMM(double, RILL_DTYPE_FP64, rill_cpu_bmm_fp64, rill_cpu_bmm_grad_fp64, mm_fp64)

/* ---- dot ---- */

static rill_status *dot_rows(rill_kernel_ctx *ctx, const rill_tensor *x, const rill_tensor *y,
                             int64_t *rows, int64_t *len) {
  const rill_dims *a = &x->dims, *b = &y->dims;
  bool ok = a->n == b->n && (a->n == 1 || a->n == 2);
  for (int i = 0; ok && i < a->n; i++) ok = a->d[i] == b->d[i];
  if (!ok) return shape_error(ctx, "must have one 1-D or 2-D shape");
  *len = a->d[a->n - 1];
  *rows = a->n == 2 ? a->d[0] : 1;
  return NULL;
}

#define DOT(T, DT, NAME, GRAD)                                                               \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                 \
    rill_tensor *x, *y, *out;                                                               \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                             \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &y));                                             \
    int64_t R, L;                                                                           \
    RILL_TRY(dot_rows(ctx, x, y, &R, &L));                                                  \
    rill_dims od = x->dims;                                                                 \
    od.d[od.n - 1] = 1;                                                                     \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                          \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &od));                                    \
    const T *xp = rill_tensor_ptr(x), *yp = rill_tensor_ptr(y);                             \
    T *op = rill_tensor_ptr(out);                                                           \
    for (int64_t r = 0; r < R; r++) {                                                       \
      T s = 0;                                                                              \
      for (int64_t j = 0; j < L; j++) s += xp[r * L + j] * yp[r * L + j];                   \
      op[r] = s;                                                                            \
    }                                                                                       \
    return NULL;                                                                            \
  }                                                                                         \
  rill_status *GRAD(rill_kernel_ctx *ctx) {                                                 \
    rill_tensor *x, *y, *g, *dx, *dy;                                                       \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                             \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &y));                                             \
    RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &g));                                             \
    int64_t R, L;                                                                           \
    RILL_TRY(dot_rows(ctx, x, y, &R, &L));                                                  \
    if (rill_tensor_numel(g) != R)                                                          \
      return rill_kernel_error(ctx, "input Out@GRAD (%s) has %lld elements, not %lld",      \
                               rill_kin_name(ctx, 2, 0), (long long)rill_tensor_numel(g),   \
                               (long long)R);                                               \
    RILL_TRY(grad_out(ctx, 0, DT, x, &dx));                                                 \
    RILL_TRY(grad_out(ctx, 1, DT, y, &dy));                                                 \
    const T *xp = rill_tensor_ptr(x), *yp = rill_tensor_ptr(y), *gp = rill_tensor_ptr(g);   \
    T *dxp = dx ? (T *)rill_tensor_ptr(dx) : NULL, *dyp = dy ? (T *)rill_tensor_ptr(dy) : NULL; \
    for (int64_t r = 0; r < R; r++)                                                         \
      for (int64_t j = 0; j < L; j++) {                                                     \
        if (dxp) dxp[r * L + j] = gp[r] * yp[r * L + j];                                    \
        if (dyp) dyp[r * L + j] = gp[r] * xp[r * L + j];                                    \
      }                                                                                     \
    return NULL;                                                                            \
  }

DOT(float, RILL_DTYPE_FP32, rill_cpu_dot_fp32, rill_cpu_dot_grad_fp32)
DOT(double, RILL_DTYPE_FP64, rill_cpu_dot_fp64, rill_cpu_dot_grad_fp64)
DOT(int32_t, RILL_DTYPE_INT32, rill_cpu_dot_int32, rill_cpu_dot_grad_int32)
DOT(int64_t, RILL_DTYPE_INT64, rill_cpu_dot_int64, rill_cpu_dot_grad_int64)

/* ---- cross ---- */

static rill_status *cross_geometry(rill_kernel_ctx *ctx, const rill_tensor *x,
                                   const rill_tensor *y, int64_t *outer, int64_t *inner) {
  bool same = x->dims.n == y->dims.n;
  for (int i = 0; same && i < x->dims.n; i++) same = x->dims.d[i] == y->dims.d[i];
  if (!same) return shape_error(ctx, "must have one shape");
  int d;
  char err[128];
  if (!rill_cross_dim(&x->dims, ctx->attrs[RILL_CROSS_ATTR_DIM].v.i, &d, err, sizeof err))
    return rill_kernel_error(ctx, "input X (%s): %s", rill_kin_name(ctx, 0, 0), err);
  *outer = rill_dims_prod(&x->dims, 0, d);
  *inner = rill_dims_prod(&x->dims, d + 1, x->dims.n);
  return NULL;
}

/* c = a x b along the dim of extent 3 (a, b, c may not alias). */
#define CROSS_LOOP(T, a, b, c, outer, inner)                                                 \
  for (int64_t o = 0; o < (outer); o++)                                                     \
    for (int64_t i = 0; i < (inner); i++) {                                                 \
      int64_t p0 = o * 3 * (inner) + i, p1 = p0 + (inner), p2 = p1 + (inner);               \
      (c)[p0] = (T)((a)[p1] * (b)[p2] - (a)[p2] * (b)[p1]);                                 \
      (c)[p1] = (T)((a)[p2] * (b)[p0] - (a)[p0] * (b)[p2]);                                 \
      (c)[p2] = (T)((a)[p0] * (b)[p1] - (a)[p1] * (b)[p0]);                                 \
    }

#define CROSS(T, DT, NAME, GRAD)                                                             \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                 \
    rill_tensor *x, *y, *out;                                                               \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                             \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &y));                                             \
    int64_t outer, inner;                                                                   \
    RILL_TRY(cross_geometry(ctx, x, y, &outer, &inner));                                    \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                          \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &x->dims));                               \
    const T *xp = rill_tensor_ptr(x), *yp = rill_tensor_ptr(y);                             \
    T *op = rill_tensor_ptr(out);                                                           \
    CROSS_LOOP(T, xp, yp, op, outer, inner)                                                 \
    return NULL;                                                                            \
  }                                                                                         \
  rill_status *GRAD(rill_kernel_ctx *ctx) {                                                 \
    rill_tensor *x, *y, *g, *dx, *dy;                                                       \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                             \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &y));                                             \
    RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &g));                                             \
    int64_t outer, inner;                                                                   \
    RILL_TRY(cross_geometry(ctx, x, y, &outer, &inner));                                    \
    RILL_TRY(rill_kin_check_dims(ctx, 2, g, &x->dims));                                     \
    RILL_TRY(grad_out(ctx, 0, DT, x, &dx));                                                 \
    RILL_TRY(grad_out(ctx, 1, DT, y, &dy));                                                 \
    const T *xp = rill_tensor_ptr(x), *yp = rill_tensor_ptr(y), *gp = rill_tensor_ptr(g);   \
    if (dx) {                                                                               \
      T *dxp = rill_tensor_ptr(dx);                                                         \
      CROSS_LOOP(T, yp, gp, dxp, outer, inner)                                              \
    }                                                                                       \
    if (dy) {                                                                               \
      T *dyp = rill_tensor_ptr(dy);                                                         \
      CROSS_LOOP(T, gp, xp, dyp, outer, inner)                                              \
    }                                                                                       \
    return NULL;                                                                            \
  }

CROSS(float, RILL_DTYPE_FP32, rill_cpu_cross_fp32, rill_cpu_cross_grad_fp32)
CROSS(double, RILL_DTYPE_FP64, rill_cpu_cross_fp64, rill_cpu_cross_grad_fp64)
CROSS(int32_t, RILL_DTYPE_INT32, rill_cpu_cross_int32, rill_cpu_cross_grad_int32)
CROSS(int64_t, RILL_DTYPE_INT64, rill_cpu_cross_int64, rill_cpu_cross_grad_int64)

/* ---- dist ---- */

/* The broadcast walk of X - Y: element offsets of X and Y for each element of the
 * broadcast shape, in order. */
typedef struct bcast_walk {
  int r;
  int64_t n, len[RILL_MAX_DIMS], xs[RILL_MAX_DIMS], ys[RILL_MAX_DIMS];
} bcast_walk;

static rill_status *bcast_make(rill_kernel_ctx *ctx, const rill_tensor *x, const rill_tensor *y,
                               bcast_walk *w) {
  rill_dims xa, ya, od;
  char why[128];
  if (!rill_elementwise_broadcast(&x->dims, &y->dims, -1, &xa, &ya, &od, why, sizeof why))
    return shape_error(ctx, why);
  w->r = od.n;
  w->n = 1;
  int64_t sx = 1, sy = 1;
  for (int d = od.n - 1; d >= 0; d--) {
    w->len[d] = od.d[d];
    w->xs[d] = xa.d[d] == 1 ? 0 : sx;
    w->ys[d] = ya.d[d] == 1 ? 0 : sy;
    sx *= xa.d[d];
    sy *= ya.d[d];
    w->n *= od.d[d];
  }
  return NULL;
}

/* Advances (idx, xo, yo) to the next element of the walk. */
static inline void bcast_next(const bcast_walk *w, int64_t *idx, int64_t *xo, int64_t *yo) {
  for (int d = w->r - 1; d >= 0; d--) {
    *xo += w->xs[d];
    *yo += w->ys[d];
    if (++idx[d] < w->len[d]) return;
    *xo -= w->xs[d] * w->len[d];
    *yo -= w->ys[d] * w->len[d];
    idx[d] = 0;
  }
}

#define DIST(T, DT, NAME, GRAD)                                                              \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                 \
    rill_tensor *x, *y, *out;                                                               \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                             \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &y));                                             \
    bcast_walk w;                                                                           \
    RILL_TRY(bcast_make(ctx, x, y, &w));                                                    \
    rill_dims od = {.n = 1, .d = {1}};                                                      \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                          \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &od));                                    \
    double p = ctx->attrs[RILL_DIST_ATTR_P].v.f, acc = p == -INFINITY ? INFINITY : 0;       \
    const T *xp = rill_tensor_ptr(x), *yp = rill_tensor_ptr(y);                             \
    int64_t idx[RILL_MAX_DIMS] = {0}, xo = 0, yo = 0;                                       \
    for (int64_t k = 0; k < w.n; k++, bcast_next(&w, idx, &xo, &yo)) {                      \
      double z = fabs((double)xp[xo] - (double)yp[yo]);                                     \
      if (p == 0) acc += z != 0;                                                            \
      else if (p == INFINITY) acc = z > acc ? z : acc;                                      \
      else if (p == -INFINITY) acc = z < acc ? z : acc;                                     \
      else acc += pow(z, p);                                                                \
    }                                                                                       \
    if (p != 0 && !isinf(p)) acc = pow(acc, 1.0 / p);                                       \
    *(T *)rill_tensor_ptr(out) = (T)acc;                                                    \
    return NULL;                                                                            \
  }                                                                                         \
  rill_status *GRAD(rill_kernel_ctx *ctx) {                                                 \
    rill_tensor *x, *y, *o, *g, *dx, *dy;                                                   \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                             \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &y));                                             \
    RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &o));                                             \
    RILL_TRY(rill_kin_need(ctx, 3, 0, DT, &g));                                             \
    if (rill_tensor_numel(o) != 1 || rill_tensor_numel(g) != 1)                             \
      return rill_kernel_error(ctx, "inputs Out (%s) and Out@GRAD (%s) must hold one value", \
                               rill_kin_name(ctx, 2, 0), rill_kin_name(ctx, 3, 0));         \
    bcast_walk w;                                                                           \
    RILL_TRY(bcast_make(ctx, x, y, &w));                                                    \
    RILL_TRY(grad_out(ctx, 0, DT, x, &dx));                                                 \
    RILL_TRY(grad_out(ctx, 1, DT, y, &dy));                                                 \
    T *dxp = dx ? (T *)rill_tensor_ptr(dx) : NULL, *dyp = dy ? (T *)rill_tensor_ptr(dy) : NULL; \
    if (dxp) memset(dxp, 0, rill_tensor_nbytes(dx));                                        \
    if (dyp) memset(dyp, 0, rill_tensor_nbytes(dy));                                        \
    double p = ctx->attrs[RILL_DIST_ATTR_P].v.f;                                            \
    T norm = *(const T *)rill_tensor_ptr(o), dout = *(const T *)rill_tensor_ptr(g);         \
    const T *xp = rill_tensor_ptr(x), *yp = rill_tensor_ptr(y);                             \
    int64_t idx[RILL_MAX_DIMS] = {0}, xo = 0, yo = 0;                                       \
    for (int64_t k = 0; k < w.n && p != 0; k++, bcast_next(&w, idx, &xo, &yo)) {           \
      T z = xp[xo] - yp[yo], az = z < 0 ? -z : z;                                           \
      T sign = (T)((z > 0) - (z < 0)), v;                                                   \
      if (isinf(p)) v = (T)(az == norm) * sign * dout;                                      \
      else v = (T)pow((double)(az / norm), p - 1) * sign * dout;                            \
      if (dxp) dxp[xo] += v;                                                                \
      if (dyp) dyp[yo] -= v;                                                                \
    }                                                                                       \
    return NULL;                                                                            \
  }

DIST(float, RILL_DTYPE_FP32, rill_cpu_dist_fp32, rill_cpu_dist_grad_fp32)
DIST(double, RILL_DTYPE_FP64, rill_cpu_dist_fp64, rill_cpu_dist_grad_fp64)

/* ---- addmm ---- */

static rill_status *addmm_dims(rill_kernel_ctx *ctx, const rill_tensor *in, const rill_tensor *x,
                               const rill_tensor *y, int64_t *M, int64_t *K, int64_t *N) {
  const rill_dims *a = &x->dims, *b = &y->dims, *c = &in->dims;
  if (a->n != 2 || b->n != 2 || c->n != 2 || a->d[1] != b->d[0] ||
      (c->d[0] != 1 && c->d[0] != a->d[0]) || (c->d[1] != 1 && c->d[1] != b->d[1]))
    return rill_kernel_error(ctx, "inputs Input (%s), X (%s) and Y (%s) must be 2-D, X's "
                             "columns Y's rows, Input broadcasting to [X rows, Y columns]",
                             rill_kin_name(ctx, 0, 0), rill_kin_name(ctx, 1, 0),
                             rill_kin_name(ctx, 2, 0));
  *M = a->d[0];
  *K = a->d[1];
  *N = b->d[1];
  return NULL;
}

#define ADDMM(T, DT, NAME, GRAD, MMF)                                                             \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                 \
    rill_tensor *in, *x, *y, *out;                                                          \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &in));                                            \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &x));                                             \
    RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &y));                                             \
    int64_t M, K, N;                                                                        \
    RILL_TRY(addmm_dims(ctx, in, x, y, &M, &K, &N));                                        \
    rill_dims od = {.n = 2, .d = {M, N}};                                                   \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                          \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &od));                                    \
    double alpha = ctx->attrs[RILL_ADDMM_ATTR_ALPHA].v.f;                                   \
    double beta = ctx->attrs[RILL_ADDMM_ATTR_BETA].v.f;                                     \
    int64_t im = in->dims.d[0], in_ = in->dims.d[1];                                        \
    const T *ip = rill_tensor_ptr(in), *xp = rill_tensor_ptr(x), *yp = rill_tensor_ptr(y);  \
    T *op = rill_tensor_ptr(out);                                                           \
    for (int64_t m = 0; m < M; m++)                                                         \
      for (int64_t n = 0; n < N; n++) {                                                     \
        double s = 0;                                                                       \
        for (int64_t k = 0; k < K; k++) s += (double)xp[m * K + k] * (double)yp[k * N + n]; \
        op[m * N + n] = (T)(beta * (double)ip[(m % im) * in_ + n % in_] + alpha * s);       \
      }                                                                                     \
    return NULL;                                                                            \
  }                                                                                         \
  rill_status *GRAD(rill_kernel_ctx *ctx) {                                                 \
    rill_tensor *in, *x, *y, *g, *din, *dx, *dy;                                            \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &in));                                            \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &x));                                             \
    RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &y));                                             \
    RILL_TRY(rill_kin_need(ctx, 3, 0, DT, &g));                                             \
    int64_t M, K, N;                                                                        \
    RILL_TRY(addmm_dims(ctx, in, x, y, &M, &K, &N));                                        \
    rill_dims od = {.n = 2, .d = {M, N}};                                                   \
    RILL_TRY(rill_kin_check_dims(ctx, 3, g, &od));                                          \
    RILL_TRY(grad_out(ctx, 0, DT, in, &din));                                               \
    RILL_TRY(grad_out(ctx, 1, DT, x, &dx));                                                 \
    RILL_TRY(grad_out(ctx, 2, DT, y, &dy));                                                 \
    double alpha = ctx->attrs[RILL_ADDMM_ATTR_ALPHA].v.f;                                   \
    double beta = ctx->attrs[RILL_ADDMM_ATTR_BETA].v.f;                                     \
    const T *xp = rill_tensor_ptr(x), *yp = rill_tensor_ptr(y), *gp = rill_tensor_ptr(g);   \
    if (din) {                                                                              \
      int64_t im = in->dims.d[0], in_ = in->dims.d[1];                                      \
      T *dp = rill_tensor_ptr(din);                                                         \
      memset(dp, 0, rill_tensor_nbytes(din));                                               \
      for (int64_t m = 0; m < M; m++)                                                       \
        for (int64_t n = 0; n < N; n++) dp[(m % im) * in_ + n % in_] += (T)(beta * gp[m * N + n]); \
    }                                                                                       \
    if (dx) /* alpha Out@GRAD Y^T */                                                        \
      MMF(gp, yp, (T *)rill_tensor_ptr(dx), M, N, K, false, true, alpha);                   \
    if (dy) /* alpha X^T Out@GRAD */                                                        \
      MMF(xp, gp, (T *)rill_tensor_ptr(dy), K, M, N, true, false, alpha);                   \
    return NULL;                                                                            \
  }

ADDMM(float, RILL_DTYPE_FP32, rill_cpu_addmm_fp32, rill_cpu_addmm_grad_fp32, mm_fp32)
ADDMM(double, RILL_DTYPE_FP64, rill_cpu_addmm_fp64, rill_cpu_addmm_grad_fp64, mm_fp64)
