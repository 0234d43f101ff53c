/* matmul and matmul_v2 CUDA kernels, float32, on cuBLAS, with the CPU kernels' shape
 * rules (operators/matmul.h): matmul's alpha and shared operand, matmul_v2's numpy
 * broadcasting of the batch dims, 1-D operands. When each operand's matrices follow one
 * another at one stride (every batch its own, or one for all), one strided batched GEMM
 * does the lot; other broadcasts (X [2, 1, m, k] times Y [3, k, n]) run one GEMM a
 * batch. head_number > 1 is an error naming it. */
#include "kernels/cuda/cuda.h"
#include "operators/matmul.h"

/* The stride, in elements, of an operand's matrices over the plan's batches: `size`
 * each when it has one per batch, 0 when one serves all; -1 otherwise. */
static int64_t batch_stride(int64_t matrices, int64_t nbatch, int64_t size) {
  return matrices == nbatch ? size : matrices == 1 ? 0 : -1;
}

static rill_status *matmul(rill_kernel_ctx *ctx, bool v2) {
  rill_tensor *x = NULL, *y = NULL, *out = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_MATMUL_IN_X, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kin_need(ctx, RILL_MATMUL_IN_Y, 0, RILL_DTYPE_FP32, &y));
  RILL_TRY(rill_kout_need(ctx, RILL_MATMUL_OUT_OUT, 0, RILL_DTYPE_FP32, &out));
  if (!v2 && ctx->attrs[RILL_MATMUL_ATTR_HEAD_NUMBER].v.i != 1)
    return rill_kernel_error(ctx, "attribute head_number = %d is not supported",
                             ctx->attrs[RILL_MATMUL_ATTR_HEAD_NUMBER].v.i);
  rill_matmul_plan p;
  char why[200], a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
  if (!rill_matmul_plan_make(&x->dims, &y->dims, ctx->attrs[RILL_MATMUL_TRANS_X].v.b,
                             ctx->attrs[RILL_MATMUL_TRANS_Y].v.b, v2, &p, why, sizeof why))
    return rill_kernel_error(ctx, "input X (%s) of shape %s and input Y (%s) of shape %s: %s",
                             rill_kin_name(ctx, 0, 0), rill_dims_str(&x->dims, a, sizeof a),
                             rill_kin_name(ctx, 1, 0), rill_dims_str(&y->dims, b, sizeof b), why);
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
