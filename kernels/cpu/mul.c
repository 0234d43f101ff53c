/* mul CPU kernels: X and Y flattened to 2-D, multiplied with OpenBLAS GEMM. When Out
 * overlaps an input the product goes through a scratch buffer. */
#include <cblas.h>
#include <limits.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/sgemm.h"

typedef struct mul_shape {
  int64_t m, k, n;
  rill_dims out;
} mul_shape;

static rill_status *mul_prepare(rill_kernel_ctx *ctx, rill_dtype dt, rill_tensor **x,
                                rill_tensor **y, rill_tensor **out, mul_shape *s) {
  RILL_TRY(rill_kin_need(ctx, 0, 0, dt, x));
  RILL_TRY(rill_kin_need(ctx, 1, 0, dt, y));
  RILL_TRY(rill_kout_need(ctx, 0, 0, dt, out));
  const rill_dims *xd = &(*x)->dims, *yd = &(*y)->dims;
  int xn = ctx->attrs[RILL_MUL_ATTR_X_NUM_COL_DIMS].v.i, yn = ctx->attrs[RILL_MUL_ATTR_Y_NUM_COL_DIMS].v.i;
  if (xn < 1 || xn >= xd->n || yn < 1 || yn >= yd->n || xn + yd->n - yn > RILL_MAX_DIMS)
    return rill_kernel_error(ctx, "inputs X (%s, rank %d) and Y (%s, rank %d) do not fit "
                             "x_num_col_dims %d / y_num_col_dims %d", rill_kin_name(ctx, 0, 0),
                             (int)xd->n, rill_kin_name(ctx, 1, 0), (int)yd->n, xn, yn);
  s->m = rill_dims_prod(xd, 0, xn);
  s->k = rill_dims_prod(xd, xn, xd->n);
  s->n = rill_dims_prod(yd, yn, yd->n);
  int64_t k2 = rill_dims_prod(yd, 0, yn);
  if (s->k != k2)
    return rill_kernel_error(ctx, "input X (%s) flattens to %lld columns but input Y (%s) to "
                             "%lld rows", rill_kin_name(ctx, 0, 0), (long long)s->k,
                             rill_kin_name(ctx, 1, 0), (long long)k2);
  if (s->m > INT_MAX || s->k > INT_MAX || s->n > INT_MAX)
    return rill_kernel_error(ctx, "matrix of %lld x %lld x %lld is too large for BLAS",
                             (long long)s->m, (long long)s->k, (long long)s->n);
  s->out.n = xn + yd->n - yn;
  for (int i = 0; i < xn; i++) s->out.d[i] = xd->d[i];
  for (int i = yn; i < yd->n; i++) s->out.d[xn + i - yn] = yd->d[i];
  return rill_kout_check_dims(ctx, 0, 0, *out, &s->out);
}

/* out[n] = x[k] . y[k, n] for one row of X, as four rows of Y at a time added into out:
 * one pass over Y, contiguous, vectorised by the compiler, on the calling thread. At
 * batch 1 OpenBLAS's GEMM spends most of its time packing Y and its GEMV wakes its
 * threads, both of which cost more than the product on fc-sized layers. */
#define ROW_GEMV(T, SUF)                                                                  \
  static void row_gemv_##SUF(const T *restrict x, const T *restrict y, T *restrict out,  \
                             int64_t k, int64_t n) {                                      \
    for (int64_t j = 0; j < n; j++) out[j] = 0;                                           \
    int64_t r = 0;                                                                        \
    for (; r + 4 <= k; r += 4) {                                                          \
      const T a0 = x[r], a1 = x[r + 1], a2 = x[r + 2], a3 = x[r + 3];                     \
      const T *y0 = y + r * n, *y1 = y0 + n, *y2 = y1 + n, *y3 = y2 + n;                  \
      for (int64_t j = 0; j < n; j++)                                                     \
        out[j] += a0 * y0[j] + a1 * y1[j] + a2 * y2[j] + a3 * y3[j];                      \
    }                                                                                     \
    for (; r < k; r++) {                                                                  \
      const T a = x[r], *yr = y + r * n;                                                  \
      for (int64_t j = 0; j < n; j++) out[j] += a * yr[j];                                \
    }                                                                                     \
  }
ROW_GEMV(float, f32)
ROW_GEMV(double, f64)

/* Double GEMMs always run whole. */
static bool no_blocks(const rill_device_services *dev, int64_t threads, int64_t m, int64_t n, int64_t k, const double *a, const double *b,
                      double *c) {
  (void)dev, (void)threads, (void)m, (void)n, (void)k, (void)a, (void)b, (void)c;
  return false;
}

/* Medium float GEMMs (batches of an fc layer) run in blocks on the executor's threads
 * (gemm.h), the others whole. */
#define MUL(T, DT, GEMM, GEMV, BLOCKS, PACKED, NAME)                                      \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *x, *y, *out;                                                             \
    mul_shape s;                                                                          \
    RILL_TRY(mul_prepare(ctx, DT, &x, &y, &out, &s));                                     \
    size_t obytes = (size_t)(s.m * s.n) * sizeof(T);                                      \
    if (obytes == 0) return NULL;                                                         \
    const T *xp = rill_tensor_ptr(x), *yp = rill_tensor_ptr(y);                           \
    T *op = rill_tensor_ptr(out), *dst = op;                                              \
    if (s.k == 0) {                                                                       \
      memset(op, 0, obytes);                                                              \
      return NULL;                                                                        \
    }                                                                                     \
    if (rill_overlaps(op, obytes, xp, rill_tensor_nbytes(x)) ||                           \
        rill_overlaps(op, obytes, yp, rill_tensor_nbytes(y))) {                           \
      dst = rill_aligned_alloc(obytes, RILL_TENSOR_ALIGN);                                \
      if (!dst) return rill_oom();                                                        \
    }                                                                                     \
    int64_t threads = rill_dev_threads(ctx->dev);                                          \
    if (s.m == 1) /* one row (fc at batch 1): no GEMM packing of Y per call */             \
      GEMV(xp, yp, dst, s.k, s.n);                                                        \
    else if (PACKED(ctx->dev, threads, s.m, s.n, s.k, xp, y, dst)) {                      \
    } else if (!BLOCKS(ctx->dev, threads, s.m, s.n, s.k, xp, yp, dst)) {                              \
      if ((DT) == RILL_DTYPE_FP64 && s.m * s.k * s.n >= RILL_BLAS_THREADED_GEMM)          \
        rill_dev_quiet(ctx->dev); /* OpenBLAS may run its threads */                      \
      GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)s.m, (int)s.n, (int)s.k, 1, xp, \
           (int)s.k, yp, (int)s.n, 0, dst, (int)s.n);                                     \
    }                                                                                     \
    if (dst != op) {                                                                      \
      memcpy(op, dst, obytes);                                                            \
      rill_free(dst);                                                                     \
    }                                                                                     \
    return NULL;                                                                          \
  }

/* float rows: rill_sgemv_row's vector blocks (over the kernel's threads) where the CPU
 * has AVX2, else the loop above */
#define ROW_GEMV_F32(x, y, o, k, n) \
  ((void)(rill_sgemv_row(ctx->dev, threads, x, y, o, k, n) || (row_gemv_f32(x, y, o, k, n), 1)))
/* the one-thread OpenBLAS blocks only where rill_sgemm has no kernels of its own */
#define BLOCKS_F32(...) (!rill_sgemm_has_kernels() && rill_cpu_sgemm_blocks(__VA_ARGS__))
/* a Y that cannot change (a predictor's weight): its packed form (rill_sgemm_weight) */
#define PACKED_F32(dev, threads, m, n, k, x, w, o) \
  rill_sgemm_weight(dev, threads, m, n, k, 1.0f, x, k, w, 0.0f, o, n)
#define NOT_PACKED(dev, threads, m, n, k, x, w, o) \
  ((void)(dev), (void)(threads), (void)(x), (void)(w), (void)(o), false)
MUL(float, RILL_DTYPE_FP32, RILL_KERNEL_SGEMM, ROW_GEMV_F32, BLOCKS_F32, PACKED_F32, rill_cpu_mul_fp32)
MUL(double, RILL_DTYPE_FP64, cblas_dgemm, row_gemv_f64, no_blocks, NOT_PACKED, rill_cpu_mul_fp64)

/* mul_grad: with X as [m, k], Y as [k, n] and dOut as [m, n],
 * X@GRAD = dOut * Y^T and Y@GRAD = X^T * dOut; absent outputs are skipped. */
static rill_status *mul_grad_shape(rill_kernel_ctx *ctx, const rill_tensor *x,
                                   const rill_tensor *y, const rill_tensor *dout, mul_shape *s) {
  const rill_dims *xd = &x->dims, *yd = &y->dims;
  int xn = ctx->attrs[RILL_MUL_GRAD_ATTR_X_NUM_COL_DIMS].v.i, yn = ctx->attrs[RILL_MUL_GRAD_ATTR_Y_NUM_COL_DIMS].v.i;
  if (xn < 1 || xn >= xd->n || yn < 1 || yn >= yd->n)
    return rill_kernel_error(ctx, "inputs X (%s, rank %d) and Y (%s, rank %d) do not fit "
                             "x_num_col_dims %d / y_num_col_dims %d", rill_kin_name(ctx, 0, 0),
                             (int)xd->n, rill_kin_name(ctx, 1, 0), (int)yd->n, xn, yn);
  s->m = rill_dims_prod(xd, 0, xn);
  s->k = rill_dims_prod(xd, xn, xd->n);
  s->n = rill_dims_prod(yd, yn, yd->n);
  if (s->k != rill_dims_prod(yd, 0, yn) || rill_tensor_numel(dout) != s->m * s->n)
    return rill_kernel_error(ctx, "inputs X (%s), Y (%s) and %s (%s) do not fit one "
                             "another", rill_kin_name(ctx, 0, 0), rill_kin_name(ctx, 1, 0),
                             ctx->schema->inputs[2].name, rill_kin_name(ctx, 2, 0));
  if (s->m > INT_MAX || s->k > INT_MAX || s->n > INT_MAX)
    return rill_kernel_error(ctx, "matrix of %lld x %lld x %lld is too large for BLAS",
                             (long long)s->m, (long long)s->k, (long long)s->n);
  return NULL;
}

#define MUL_GRAD(T, DT, GEMM, NAME)                                                       \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *x, *y, *dout, *dx = NULL, *dy = NULL;                                    \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                           \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &y));                                           \
    RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &dout));                                        \
    if (rill_kout(ctx, 0, 0)) RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &dx));               \
    if (rill_kout(ctx, 1, 0)) RILL_TRY(rill_kout_need(ctx, 1, 0, DT, &dy));               \
    mul_shape s;                                                                          \
    RILL_TRY(mul_grad_shape(ctx, x, y, dout, &s));                                        \
    if (dx) RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &x->dims));                      \
    if (dy) RILL_TRY(rill_kout_check_dims(ctx, 1, 0, dy, &y->dims));                      \
    const T *xp = rill_tensor_ptr(x), *yp = rill_tensor_ptr(y), *gp = rill_tensor_ptr(dout); \
    if (dx && s.m > 0 && s.k > 0) {                                                                \
      if (s.n == 0)                                                                       \
        memset(rill_tensor_ptr(dx), 0, rill_tensor_nbytes(dx));                           \
      else                                                                                \
        GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (int)s.m, (int)s.k, (int)s.n, 1, gp, \
             (int)s.n, yp, (int)s.n, 0, rill_tensor_ptr(dx), (int)s.k);                   \
    }                                                                                     \
    if (dy && s.k > 0 && s.n > 0) {                                                                \
      if (s.m == 0)                                                                       \
        memset(rill_tensor_ptr(dy), 0, rill_tensor_nbytes(dy));                           \
      else                                                                                \
        GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, (int)s.k, (int)s.n, (int)s.m, 1, xp, \
             (int)s.k, gp, (int)s.n, 0, rill_tensor_ptr(dy), (int)s.n);                   \
    }                                                                                     \
    return NULL;                                                                          \
  }

MUL_GRAD(float, RILL_DTYPE_FP32, RILL_KERNEL_SGEMM, rill_cpu_mul_grad_fp32)
MUL_GRAD(double, RILL_DTYPE_FP64, cblas_dgemm, rill_cpu_mul_grad_fp64)

/* mul_grad_grad on the 2-D views (X [m, k], Y [k, n], DOut [m, n]): DDOut = DDX * Y +
 * X * DDY, DX = DOut * DDY^T, DY = DDX^T * DOut, as Paddle's MulDoubleGradKernel; an
 * absent DDX or DDY is zero. */
#define MUL_GRAD_GRAD(T, DT, GEMM, NAME)                                                  \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *x, *y, *dout, *dd[2] = {NULL, NULL}, *out[3] = {NULL, NULL, NULL};       \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                           \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &y));                                           \
    RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &dout));                                        \
    mul_shape s;                                                                          \
    RILL_TRY(mul_grad_shape(ctx, x, y, dout, &s));                                        \
    const rill_tensor *like[3] = {x, y, dout};                                            \
    for (size_t i = 0; i < 2; i++) {                                                      \
      if (!rill_kin(ctx, 3 + i, 0)) continue;                                             \
      RILL_TRY(rill_kin_need(ctx, 3 + i, 0, DT, &dd[i]));                                 \
      if (!rill_dims_equal(&dd[i]->dims, &like[i]->dims))                                 \
        return rill_kernel_error(ctx, "input %s (%s) does not have the shape of %s (%s)", \
                                 i ? "DDY" : "DDX", rill_kin_name(ctx, 3 + i, 0),         \
                                 i ? "Y" : "X", rill_kin_name(ctx, i, 0));                \
    }                                                                                     \
    RILL_TRY(rill_kout_like(ctx, 3, DT, like, (const size_t[]){0, 1, 2}, 7u, out));       \
    if (s.m == 0 || s.k == 0 || s.n == 0) return NULL;                                    \
    const T *xp = rill_tensor_ptr(x), *yp = rill_tensor_ptr(y), *gp = rill_tensor_ptr(dout); \
    const T *ddx = dd[0] ? (const T *)rill_tensor_ptr(dd[0]) : NULL;                      \
    const T *ddy = dd[1] ? (const T *)rill_tensor_ptr(dd[1]) : NULL;                      \
    int m = (int)s.m, k = (int)s.k, n = (int)s.n;                                         \
    if (out[2] && ddx)                                                                    \
      GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1, ddx, k, yp, n, 0,       \
           rill_tensor_ptr(out[2]), n);                                                   \
    if (out[2] && ddy)                                                                    \
      GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1, xp, k, ddy, n, ddx ? 1 : 0, \
           rill_tensor_ptr(out[2]), n);                                                   \
    if (out[0] && ddy)                                                                    \
      GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, m, k, n, 1, gp, n, ddy, n, 0,         \
           rill_tensor_ptr(out[0]), k);                                                   \
    if (out[1] && ddx)                                                                    \
      GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, k, n, m, 1, ddx, k, gp, n, 0,         \
           rill_tensor_ptr(out[1]), n);                                                   \
    return NULL;                                                                          \
  }

MUL_GRAD_GRAD(float, RILL_DTYPE_FP32, RILL_KERNEL_SGEMM, rill_cpu_mul_grad_grad_fp32)
MUL_GRAD_GRAD(double, RILL_DTYPE_FP64, cblas_dgemm, rill_cpu_mul_grad_grad_fp64)
