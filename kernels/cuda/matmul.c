/* matmul and matmul_v2 CUDA kernels and their gradients, float32, on cuBLAS, with the
 * CPU kernels' shape rules (operators/matmul.h): matmul's alpha and shared operand,
 * matmul_v2's numpy broadcasting of the batch dims, 1-D operands. When each operand's
 * matrices follow one another at one stride (every batch its own, or one for all), one
 * strided batched GEMM does the lot; other broadcasts (X [2, 1, m, k] times Y [3, k, n])
 * run one GEMM a batch. head_number > 1 is an error naming it. */
#include "kernels/cuda/cuda.h"
#include "operators/matmul.h"

/* The stride, in elements, of an operand's matrices over the plan's batches: `size`
 * each when it has one per batch, 0 when one serves all; -1 otherwise. */
static int64_t batch_stride(int64_t matrices, int64_t nbatch, int64_t size) {
  return matrices == nbatch ? size : matrices == 1 ? 0 : -1;
}

/* The plan of X times Y under the op's attributes (the gradients keep them at the
 * forward's positions), or the error naming both operands. */
static rill_status *plan_of(rill_kernel_ctx *ctx, const rill_tensor *x, const rill_tensor *y, bool v2,
                            rill_matmul_plan *p) {
  if (!v2 && ctx->attrs[RILL_MATMUL_ATTR_HEAD_NUMBER].v.i != 1)
    return rill_kernel_error(ctx, "attribute head_number = %d is not supported",
                             ctx->attrs[RILL_MATMUL_ATTR_HEAD_NUMBER].v.i);
  char why[200], a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
  if (!rill_matmul_plan_make(&x->dims, &y->dims, ctx->attrs[RILL_MATMUL_TRANS_X].v.b,
                             ctx->attrs[RILL_MATMUL_TRANS_Y].v.b, v2, p, why, sizeof why))
    return rill_kernel_error(ctx, "input X (%s) of shape %s and input Y (%s) of shape %s: %s",
                             rill_kin_name(ctx, 0, 0), rill_dims_str(&x->dims, a, sizeof a),
                             rill_kin_name(ctx, 1, 0), rill_dims_str(&y->dims, b, sizeof b), why);
  return NULL;
}

static rill_status *matmul(rill_kernel_ctx *ctx, bool v2) {
  rill_tensor *x = NULL, *y = NULL, *out = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_MATMUL_IN_X, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kin_need(ctx, RILL_MATMUL_IN_Y, 0, RILL_DTYPE_FP32, &y));
  RILL_TRY(rill_kout_need(ctx, RILL_MATMUL_OUT_OUT, 0, RILL_DTYPE_FP32, &out));
  rill_matmul_plan p;
  RILL_TRY(plan_of(ctx, x, y, v2, &p));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_MATMUL_OUT_OUT, 0, out, &p.out));
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, out, &d));
  float alpha = v2 ? 1.0f : (float)ctx->attrs[RILL_MATMUL_ATTR_ALPHA].v.f;
  int yb = y->dims.n > 2 ? y->dims.n - 2 : 0;
  int64_t mk = p.m * p.k, kn = p.k * p.n, mn = p.m * p.n;
  int64_t sx = batch_stride(p.xbatch, p.nbatch, mk), sy = batch_stride(rill_dims_prod(&y->dims, 0, yb), p.nbatch, kn);
  const float *xp = rill_tensor_ptr(x), *yp = rill_tensor_ptr(y);
  float *op = rill_tensor_ptr(out);
  if (sx >= 0 && sy >= 0)
    return rill_cuda_kernel_status(ctx, rill_cuda_sgemm(d, p.tx, p.ty, p.m, p.n, p.k, alpha, xp, sx, yp, sy, 0.0f,
                                                        op, mn, p.nbatch));
  for (int64_t i = 0; i < p.nbatch; i++) {
    int64_t xo, yo;
    rill_matmul_batch_offsets(&p, i, &xo, &yo);
    RILL_TRY(rill_cuda_kernel_status(ctx, rill_cuda_sgemm(d, p.tx, p.ty, p.m, p.n, p.k, alpha, xp + xo * mk, 0,
                                                          yp + yo * kn, 0, 0.0f, op + i * mn, 0, 1)));
  }
  return NULL;
}

rill_status *rill_cuda_matmul_fp32(rill_kernel_ctx *ctx) { return matmul(ctx, false); }

rill_status *rill_cuda_matmul_v2_fp32(rill_kernel_ctx *ctx) { return matmul(ctx, true); }

/* The gradients, as the CPU kernels compute them: with A = op(X) [m, k], B = op(Y)
 * [k, n] and G = Out@GRAD [m, n], dA = alpha G B^T and dB = alpha A^T G, each stored as
 * its operand is. A Y shared by every batch of an untransposed X: X and G stack into
 * tall matrices, one GEMM each. Every batch with its own X and Y: one strided batched
 * GEMM each. Other broadcasts: the gradients zeroed, then one GEMM a batch adding into
 * the matrix of the operand it read (beta = 1: the sum over the broadcast). */
_Static_assert(RILL_SAME_POS(RILL_MATMUL_V2_GRAD_IN_OUT_GRAD, RILL_MATMUL_GRAD_IN_OUT_GRAD) &&
                   RILL_SAME_POS(RILL_MATMUL_V2_GRAD_OUT_Y_GRAD, RILL_MATMUL_GRAD_OUT_Y_GRAD),
               "matmul_grad and matmul_v2_grad keep their operands at the same positions");

static rill_status *matmul_grad(rill_kernel_ctx *ctx, bool v2) {
  rill_tensor *x = NULL, *y = NULL, *g = NULL, *dx = NULL, *dy = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_MATMUL_GRAD_IN_X, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kin_need(ctx, RILL_MATMUL_GRAD_IN_Y, 0, RILL_DTYPE_FP32, &y));
  RILL_TRY(rill_kin_need(ctx, RILL_MATMUL_GRAD_IN_OUT_GRAD, 0, RILL_DTYPE_FP32, &g));
  if (rill_kout(ctx, RILL_MATMUL_GRAD_OUT_X_GRAD, 0))
    RILL_TRY(rill_kout_need(ctx, RILL_MATMUL_GRAD_OUT_X_GRAD, 0, RILL_DTYPE_FP32, &dx));
  if (rill_kout(ctx, RILL_MATMUL_GRAD_OUT_Y_GRAD, 0))
    RILL_TRY(rill_kout_need(ctx, RILL_MATMUL_GRAD_OUT_Y_GRAD, 0, RILL_DTYPE_FP32, &dy));
  rill_matmul_plan p;
  RILL_TRY(plan_of(ctx, x, y, v2, &p));
  if (rill_tensor_numel(g) != rill_dims_prod(&p.out, 0, p.out.n))
    return rill_kernel_error(ctx, "input Out@GRAD (%s) does not have the forward Out's size",
                             rill_kin_name(ctx, RILL_MATMUL_GRAD_IN_OUT_GRAD, 0));
  if (dx) RILL_TRY(rill_kout_check_dims(ctx, RILL_MATMUL_GRAD_OUT_X_GRAD, 0, dx, &x->dims));
  if (dy) RILL_TRY(rill_kout_check_dims(ctx, RILL_MATMUL_GRAD_OUT_Y_GRAD, 0, dy, &y->dims));
  if (!dx && !dy) return NULL;
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, dx ? dx : dy, &d));
  float alpha = v2 ? 1.0f : (float)ctx->attrs[RILL_MATMUL_ATTR_ALPHA].v.f;
  int64_t m = p.m, k = p.k, n = p.n, mk = m * k, kn = k * n, mn = m * n;
  int yb = y->dims.n > 2 ? y->dims.n - 2 : 0;
  int64_t sx = batch_stride(p.xbatch, p.nbatch, mk), sy = batch_stride(rill_dims_prod(&y->dims, 0, yb), p.nbatch, kn);
  const float *xp = rill_tensor_ptr(x), *yp = rill_tensor_ptr(y), *gp = rill_tensor_ptr(g);
  float *dxp = dx ? rill_tensor_ptr(dx) : NULL, *dyp = dy ? rill_tensor_ptr(dy) : NULL;
  bool own = sx == mk && sy == kn; /* every batch its own matrices: no sums */
  bool y_shared = !p.tx && sx == mk && sy == 0;
  /* cleared where the GEMMs add into them, or none runs */
  bool clear = (!own && !y_shared) || m * n * k * p.nbatch == 0;
  cudaError_t e = cudaSuccess;
  if (dx && clear) e = cudaMemsetAsync(dxp, 0, rill_tensor_nbytes(dx), d->stream);
  if (e == cudaSuccess && dy && clear) e = cudaMemsetAsync(dyp, 0, rill_tensor_nbytes(dy), d->stream);
  RILL_TRY(rill_cuda_kernel_check(ctx, e, "clearing the gradients"));
  if (m == 0 || n == 0 || k == 0 || p.nbatch == 0) return NULL;
  if (y_shared) {
    int64_t bm = m * p.nbatch;
    if (dx) RILL_TRY(rill_cuda_kernel_status(ctx, rill_cuda_sgemm(d, false, !p.ty, bm, k, n, alpha, gp, 0, yp, 0, 0.0f,
                                                                  dxp, 0, 1)));
    if (dy && !p.ty)
      RILL_TRY(rill_cuda_kernel_status(ctx, rill_cuda_sgemm(d, true, false, k, n, bm, alpha, xp, 0, gp, 0, 0.0f, dyp, 0, 1)));
    if (dy && p.ty)
      RILL_TRY(rill_cuda_kernel_status(ctx, rill_cuda_sgemm(d, true, false, n, k, bm, alpha, gp, 0, xp, 0, 0.0f, dyp, 0, 1)));
    return NULL;
  }
  /* own: all batches at once (beta 0); else batch by batch, adding (beta 1) */
  int64_t count = own ? 1 : p.nbatch, batch = own ? p.nbatch : 1;
  float beta = own ? 0.0f : 1.0f;
  for (int64_t i = 0; i < count; i++) {
    int64_t xo = 0, yo = 0;
    if (!own) rill_matmul_batch_offsets(&p, i, &xo, &yo);
    const float *gb = gp + i * mn, *xb = xp + xo * mk, *ybp = yp + yo * kn;
    if (dx) {
      float *db = dxp + xo * mk;
      RILL_TRY(rill_cuda_kernel_status(
          ctx, !p.tx ? rill_cuda_sgemm(d, false, !p.ty, m, k, n, alpha, gb, mn, ybp, kn, beta, db, mk, batch)
                     : rill_cuda_sgemm(d, p.ty, true, k, m, n, alpha, ybp, kn, gb, mn, beta, db, mk, batch)));
    }
    if (dy) {
      float *db = dyp + yo * kn;
      RILL_TRY(rill_cuda_kernel_status(
          ctx, !p.ty ? rill_cuda_sgemm(d, !p.tx, false, k, n, m, alpha, xb, mk, gb, mn, beta, db, kn, batch)
                     : rill_cuda_sgemm(d, true, p.tx, n, k, m, alpha, gb, mn, xb, mk, beta, db, kn, batch)));
    }
  }
  return NULL;
}

rill_status *rill_cuda_matmul_grad_fp32(rill_kernel_ctx *ctx) { return matmul_grad(ctx, false); }

rill_status *rill_cuda_matmul_v2_grad_fp32(rill_kernel_ctx *ctx) { return matmul_grad(ctx, true); }
