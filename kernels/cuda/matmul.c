/* matmul CUDA kernel, float32, on cuBLAS: Out = alpha * op(X) op(Y) over the last two
 * dims, batched over the leading ones; an operand of rank 2 (or with one batch) is
 * used for every batch. Rank-1 operands and head_number > 1 are errors naming them. */
#include "kernels/cuda/cuda.h"

rill_status *rill_cuda_matmul_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *x = NULL, *y = NULL, *out = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_MATMUL_IN_X, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kin_need(ctx, RILL_MATMUL_IN_Y, 0, RILL_DTYPE_FP32, &y));
  RILL_TRY(rill_kout_need(ctx, RILL_MATMUL_OUT_OUT, 0, RILL_DTYPE_FP32, &out));
  if (ctx->attrs[RILL_MATMUL_ATTR_HEAD_NUMBER].v.i != 1)
    return rill_kernel_error(ctx, "the CUDA kernel takes head_number 1, not %lld",
                             (long long)ctx->attrs[RILL_MATMUL_ATTR_HEAD_NUMBER].v.i);
  if (x->dims.n < 2 || y->dims.n < 2)
    return rill_kernel_error(ctx, "the CUDA kernel takes X (%s) and Y (%s) of rank 2 or more; they have "
                             "rank %d and %d", rill_kin_name(ctx, 0, 0), rill_kin_name(ctx, 1, 0),
                             x->dims.n, y->dims.n);
  bool ta = ctx->attrs[RILL_MATMUL_ATTR_TRANSPOSE_X].v.b, tb = ctx->attrs[RILL_MATMUL_ATTR_TRANSPOSE_Y].v.b;
  int64_t xr = x->dims.d[x->dims.n - 2], xc = x->dims.d[x->dims.n - 1];
  int64_t yr = y->dims.d[y->dims.n - 2], yc = y->dims.d[y->dims.n - 1];
  int64_t m = ta ? xc : xr, k = ta ? xr : xc, k2 = tb ? yc : yr, n = tb ? yr : yc;
  int64_t bx = rill_dims_prod(&x->dims, 0, x->dims.n - 2), by = rill_dims_prod(&y->dims, 0, y->dims.n - 2), batch = bx > by ? bx : by;
  if (k != k2 || (bx != by && bx != 1 && by != 1) || rill_tensor_numel(out) != batch * m * n) {
    char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
    return rill_kernel_error(ctx, "X (%s) of shape %s does not multiply Y (%s) of shape %s "
                             "(transpose_X %d, transpose_Y %d)", rill_kin_name(ctx, 0, 0),
                             rill_dims_str(&x->dims, a, sizeof a), rill_kin_name(ctx, 1, 0),
                             rill_dims_str(&y->dims, b, sizeof b), ta, tb);
  }
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, out, &d));
  float alpha = (float)ctx->attrs[RILL_MATMUL_ATTR_ALPHA].v.f;
  return rill_cuda_kernel_status(
      ctx, rill_cuda_sgemm(d, ta, tb, m, n, k, alpha, rill_tensor_ptr(x), bx == 1 ? 0 : m * k,
                           rill_tensor_ptr(y), by == 1 ? 0 : k * n, 0.0f, rill_tensor_ptr(out), m * n, batch));
}
