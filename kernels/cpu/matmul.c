/* matmul / matmul_v2 CPU kernels and gradients: one OpenBLAS GEMM per batch matrix
 * (a single GEMM when Y is shared by every batch and X is not transposed: the batches
 * of X then stack into one tall matrix, for the gradients too). Otherwise gradients
 * zero their outputs and accumulate per batch (beta = 1), which sums over the batch
 * dims an operand was broadcast along. */
#include <cblas.h>
#include <limits.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/sgemm.h"
#include "operators/matmul.h"

static rill_status *mm_prepare(rill_kernel_ctx *ctx, const rill_tensor *x, const rill_tensor *y,
                               rill_matmul_plan *p, float *alpha) {
  bool v2 = strcmp(ctx->schema->attrs[RILL_MATMUL_TRANS_X].name, "trans_x") == 0; /* v2: no alpha */
  *alpha = v2 ? 1.0f : ctx->attrs[RILL_MATMUL_ATTR_ALPHA].v.f;
  char why[200], a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
  if (!rill_matmul_plan_make(&x->dims, &y->dims, ctx->attrs[RILL_MATMUL_TRANS_X].v.b,
                             ctx->attrs[RILL_MATMUL_TRANS_Y].v.b, v2, p, why, sizeof why))
    return rill_kernel_error(ctx, "input X (%s) of shape %s and input Y (%s) of shape %s: %s",
                             rill_kin_name(ctx, 0, 0), rill_dims_str(&x->dims, a, sizeof a),
                             rill_kin_name(ctx, 1, 0), rill_dims_str(&y->dims, b, sizeof b), why);
  if (!v2 && ctx->attrs[RILL_MATMUL_ATTR_HEAD_NUMBER].v.i != 1)
    return rill_kernel_error(ctx, "attribute head_number = %d is not supported",
                             ctx->attrs[RILL_MATMUL_ATTR_HEAD_NUMBER].v.i);
  if (p->m > INT_MAX || p->k > INT_MAX || p->n > INT_MAX || p->m * p->nbatch > INT_MAX)
    return rill_kernel_error(ctx, "matrices of %lld x %lld x %lld are too large for BLAS",
                             (long long)p->m, (long long)p->k, (long long)p->n);
  return NULL;
}

static bool mm_y_shared(const rill_matmul_plan *p) {
  for (int i = 0; i < p->nb; i++)
    if (p->ys[i] && p->bd[i] != 1) return false;
  return !p->tx && p->xbatch == p->nbatch;
}

#define TR(t) ((t) ? CblasTrans : CblasNoTrans)

#define MATMUL(T, DT, GEMM, PACKED, NAME)                                                 \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *x, *y, *out;                                                             \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                           \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &y));                                           \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                        \
    rill_matmul_plan p;                                                                   \
    float alpha;                                                                          \
    RILL_TRY(mm_prepare(ctx, x, y, &p, &alpha));                                          \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &p.out));                               \
    size_t obytes = rill_tensor_nbytes(out);                                              \
    if (obytes == 0) return NULL;                                                         \
    T *op = rill_tensor_ptr(out), *dst = op;                                              \
    if (p.k == 0) {                                                                       \
      memset(op, 0, obytes);                                                              \
      return NULL;                                                                        \
    }                                                                                     \
    const T *xp = rill_tensor_ptr(x), *yp = rill_tensor_ptr(y);                           \
    if (rill_overlaps(op, obytes, xp, rill_tensor_nbytes(x)) ||                           \
        rill_overlaps(op, obytes, yp, rill_tensor_nbytes(y))) {                           \
      dst = rill_aligned_alloc(obytes, RILL_TENSOR_ALIGN);                                \
      if (!dst) return rill_oom();                                                        \
    }                                                                                     \
    int m = (int)p.m, k = (int)p.k, n = (int)p.n;                                         \
    int lx = p.tx ? m : k, ly = p.ty ? k : n;                                             \
    if (mm_y_shared(&p) && !p.ty &&                                                      \
        PACKED(ctx->dev, rill_dev_threads(ctx->dev), p.m * p.nbatch, n, k, alpha, xp, y, dst)) { \
    } else if (mm_y_shared(&p)) {                                                         \
      GEMM(CblasRowMajor, CblasNoTrans, TR(p.ty), (int)(p.m * p.nbatch), n, k, alpha, xp,  \
           lx, yp, ly, 0, dst, n);                                                        \
    } else {                                                                              \
      for (int64_t b = 0; b < p.nbatch; b++) {                                            \
        int64_t xo, yo;                                                                   \
        rill_matmul_batch_offsets(&p, b, &xo, &yo);                                       \
        GEMM(CblasRowMajor, TR(p.tx), TR(p.ty), m, n, k, alpha, xp + xo * p.m * p.k, lx,  \
             yp + yo * p.k * p.n, ly, 0, dst + b * p.m * p.n, n);                         \
      }                                                                                   \
    }                                                                                     \
    if (dst != op) {                                                                      \
      memcpy(op, dst, obytes);                                                            \
      rill_free(dst);                                                                     \
    }                                                                                     \
    return NULL;                                                                          \
  }

/* a Y shared by every batch that cannot change (a predictor's weight), not transposed:
 * its packed form (rill_sgemm_weight) */
#define PACKED_F32(dev, threads, m, n, k, alpha, x, w, o) \
  rill_sgemm_weight(dev, threads, m, n, k, alpha, x, k, w, 0.0f, o, n)
#define NOT_PACKED(dev, threads, m, n, k, alpha, x, w, o) \
  ((void)(dev), (void)(threads), (void)(alpha), (void)(x), (void)(w), (void)(o), false)
MATMUL(float, RILL_DTYPE_FP32, RILL_KERNEL_SGEMM, PACKED_F32, rill_cpu_matmul_fp32)
MATMUL(double, RILL_DTYPE_FP64, cblas_dgemm, NOT_PACKED, rill_cpu_matmul_fp64)
MATMUL(float, RILL_DTYPE_FP32, RILL_KERNEL_SGEMM, PACKED_F32, rill_cpu_matmul_v2_fp32)
MATMUL(double, RILL_DTYPE_FP64, cblas_dgemm, NOT_PACKED, rill_cpu_matmul_v2_fp64)

/* With A = op(X) [m, k], B = op(Y) [k, n], G = dOut [m, n]:
 *   dA = alpha G B^T, stored as X is (transposed when tx): dX = alpha B G^T;
 *   dB = alpha A^T G, stored as Y is (transposed when ty): dY = alpha G^T A. */
#define MATMUL_GRAD(T, DT, GEMM, NAME)                                                    \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *x, *y, *dout, *dx = NULL, *dy = NULL;                                    \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                           \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &y));                                           \
    RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &dout));                                        \
    if (rill_kout(ctx, 0, 0)) RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &dx));               \
    if (rill_kout(ctx, 1, 0)) RILL_TRY(rill_kout_need(ctx, 1, 0, DT, &dy));               \
    rill_matmul_plan p;                                                                   \
    float alpha;                                                                          \
    RILL_TRY(mm_prepare(ctx, x, y, &p, &alpha));                                          \
    if (rill_tensor_numel(dout) != rill_dims_prod(&p.out, 0, p.out.n))                    \
      return rill_kernel_error(ctx, "input Out@GRAD (%s) does not have the forward Out's " \
                               "size", rill_kin_name(ctx, 2, 0));                         \
    if (dx) RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &x->dims));                      \
    if (dy) RILL_TRY(rill_kout_check_dims(ctx, 1, 0, dy, &y->dims));                      \
    if (dx) memset(rill_tensor_ptr(dx), 0, rill_tensor_nbytes(dx));                       \
    if (dy) memset(rill_tensor_ptr(dy), 0, rill_tensor_nbytes(dy));                       \
    if (p.m == 0 || p.n == 0 || p.k == 0 || p.nbatch == 0) return NULL;                   \
    const T *xp = rill_tensor_ptr(x), *yp = rill_tensor_ptr(y), *gp = rill_tensor_ptr(dout); \
    int m = (int)p.m, k = (int)p.k, n = (int)p.n;                                         \
    int lx = p.tx ? m : k, ly = p.ty ? k : n;                                             \
    if (mm_y_shared(&p)) {                                                                \
      /* X and dOut stack to [nbatch * m, k] / [nbatch * m, n]: one GEMM each */          \
      int bm = (int)(p.m * p.nbatch);                                                     \
      if (dx)                                                                             \
        GEMM(CblasRowMajor, CblasNoTrans, p.ty ? CblasNoTrans : CblasTrans, bm, k, n,     \
             alpha, gp, n, yp, ly, 0, rill_tensor_ptr(dx), k);                            \
      if (dy && !p.ty)                                                                    \
        GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, k, n, bm, alpha, xp, k, gp, n, 0,   \
             rill_tensor_ptr(dy), n);                                                     \
      if (dy && p.ty)                                                                     \
        GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, n, k, bm, alpha, gp, n, xp, k, 0,   \
             rill_tensor_ptr(dy), k);                                                     \
      return NULL;                                                                        \
    }                                                                                     \
    for (int64_t b = 0; b < p.nbatch; b++) {                                              \
      int64_t xo, yo;                                                                     \
      rill_matmul_batch_offsets(&p, b, &xo, &yo);                                         \
      const T *g = gp + b * p.m * p.n, *xb = xp + xo * p.m * p.k, *yb = yp + yo * p.k * p.n; \
      if (dx) {                                                                           \
        T *d = (T *)rill_tensor_ptr(dx) + xo * p.m * p.k;                                 \
        if (!p.tx)                                                                        \
          GEMM(CblasRowMajor, CblasNoTrans, p.ty ? CblasNoTrans : CblasTrans, m, k, n,    \
               alpha, g, n, yb, ly, 1, d, k);                                             \
        else                                                                              \
          GEMM(CblasRowMajor, TR(p.ty), CblasTrans, k, m, n, alpha, yb, ly, g, n, 1, d, m); \
      }                                                                                   \
      if (dy) {                                                                           \
        T *d = (T *)rill_tensor_ptr(dy) + yo * p.k * p.n;                                 \
        if (!p.ty)                                                                        \
          GEMM(CblasRowMajor, p.tx ? CblasNoTrans : CblasTrans, CblasNoTrans, k, n, m,    \
               alpha, xb, lx, g, n, 1, d, n);                                             \
        else                                                                              \
          GEMM(CblasRowMajor, CblasTrans, TR(p.tx), n, k, m, alpha, g, n, xb, lx, 1, d, k); \
      }                                                                                   \
    }                                                                                     \
    return NULL;                                                                          \
  }

MATMUL_GRAD(float, RILL_DTYPE_FP32, RILL_KERNEL_SGEMM, rill_cpu_matmul_grad_fp32)
MATMUL_GRAD(double, RILL_DTYPE_FP64, cblas_dgemm, rill_cpu_matmul_grad_fp64)
MATMUL_GRAD(float, RILL_DTYPE_FP32, RILL_KERNEL_SGEMM, rill_cpu_matmul_v2_grad_fp32)
MATMUL_GRAD(double, RILL_DTYPE_FP64, cblas_dgemm, rill_cpu_matmul_v2_grad_fp64)
