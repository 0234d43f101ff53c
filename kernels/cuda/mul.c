/* mul CUDA kernel, float32, on cuBLAS: X flattened to a matrix at x_num_col_dims times
 * Y flattened at y_num_col_dims. */
#include "kernels/cuda/cuda.h"

rill_status *rill_cuda_mul_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *x = NULL, *y = NULL, *out = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_MUL_IN_X, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kin_need(ctx, RILL_MUL_IN_Y, 0, RILL_DTYPE_FP32, &y));
  RILL_TRY(rill_kout_need(ctx, RILL_MUL_OUT_OUT, 0, RILL_DTYPE_FP32, &out));
  int64_t xc = ctx->attrs[RILL_MUL_ATTR_X_NUM_COL_DIMS].v.i, yc = ctx->attrs[RILL_MUL_ATTR_Y_NUM_COL_DIMS].v.i;
  if (xc < 1 || xc >= x->dims.n + (x->dims.n == 1) || yc < 1 || yc >= y->dims.n + (y->dims.n == 1))
    return rill_kernel_error(ctx, "x_num_col_dims %lld or y_num_col_dims %lld is out of range for X (%s, "
                             "rank %d) and Y (%s, rank %d)", (long long)xc, (long long)yc,
                             rill_kin_name(ctx, 0, 0), x->dims.n, rill_kin_name(ctx, 1, 0), y->dims.n);
  int64_t m = rill_dims_prod(&x->dims, 0, (int)xc), k = rill_dims_prod(&x->dims, (int)xc, x->dims.n);
  int64_t k2 = rill_dims_prod(&y->dims, 0, (int)yc), n = rill_dims_prod(&y->dims, (int)yc, y->dims.n);
  if (k != k2 || rill_tensor_numel(out) != m * n) {
    char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
    return rill_kernel_error(ctx, "X (%s) of shape %s as a %lld x %lld matrix does not multiply Y (%s) of "
                             "shape %s as a %lld x %lld matrix", rill_kin_name(ctx, 0, 0),
                             rill_dims_str(&x->dims, a, sizeof a), (long long)m, (long long)k,
                             rill_kin_name(ctx, 1, 0), rill_dims_str(&y->dims, b, sizeof b),
                             (long long)k2, (long long)n);
  }
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, out, &d));
  return rill_cuda_kernel_status(ctx, rill_cuda_sgemm(d, false, false, m, n, k, 1.0f, rill_tensor_ptr(x), 0,
                                                     rill_tensor_ptr(y), 0, 0.0f, rill_tensor_ptr(out), 0, 1));
}

/* mul_grad CUDA kernel, float32, on cuBLAS: X@GRAD = Out@GRAD * Y^T and Y@GRAD = X^T *
 * Out@GRAD on the flattened matrices; either output may be absent. */
rill_status *rill_cuda_mul_grad_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *x = NULL, *y = NULL, *g = NULL, *dx = NULL, *dy = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_MUL_GRAD_IN_X, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kin_need(ctx, RILL_MUL_GRAD_IN_Y, 0, RILL_DTYPE_FP32, &y));
  RILL_TRY(rill_kin_need(ctx, RILL_MUL_GRAD_IN_OUT_GRAD, 0, RILL_DTYPE_FP32, &g));
  if (rill_kout(ctx, RILL_MUL_GRAD_OUT_X_GRAD, 0))
    RILL_TRY(rill_kout_need(ctx, RILL_MUL_GRAD_OUT_X_GRAD, 0, RILL_DTYPE_FP32, &dx));
  if (rill_kout(ctx, RILL_MUL_GRAD_OUT_Y_GRAD, 0))
    RILL_TRY(rill_kout_need(ctx, RILL_MUL_GRAD_OUT_Y_GRAD, 0, RILL_DTYPE_FP32, &dy));
  int64_t xc = ctx->attrs[RILL_MUL_GRAD_ATTR_X_NUM_COL_DIMS].v.i;
  int64_t yc = ctx->attrs[RILL_MUL_GRAD_ATTR_Y_NUM_COL_DIMS].v.i;
  if (xc < 1 || xc >= x->dims.n || yc < 1 || yc >= y->dims.n)
    return rill_kernel_error(ctx, "inputs X (%s, rank %d) and Y (%s, rank %d) do not fit x_num_col_dims %lld / "
                             "y_num_col_dims %lld", rill_kin_name(ctx, RILL_MUL_GRAD_IN_X, 0), x->dims.n,
                             rill_kin_name(ctx, RILL_MUL_GRAD_IN_Y, 0), y->dims.n, (long long)xc, (long long)yc);
  int64_t m = rill_dims_prod(&x->dims, 0, (int)xc), k = rill_dims_prod(&x->dims, (int)xc, x->dims.n);
  int64_t n = rill_dims_prod(&y->dims, (int)yc, y->dims.n);
  if (k != rill_dims_prod(&y->dims, 0, (int)yc) || rill_tensor_numel(g) != m * n)
    return rill_kernel_error(ctx, "inputs X (%s), Y (%s) and Out@GRAD (%s) do not fit one another",
                             rill_kin_name(ctx, RILL_MUL_GRAD_IN_X, 0), rill_kin_name(ctx, RILL_MUL_GRAD_IN_Y, 0),
                             rill_kin_name(ctx, RILL_MUL_GRAD_IN_OUT_GRAD, 0));
  if (dx) RILL_TRY(rill_kout_check_dims(ctx, RILL_MUL_GRAD_OUT_X_GRAD, 0, dx, &x->dims));
  if (dy) RILL_TRY(rill_kout_check_dims(ctx, RILL_MUL_GRAD_OUT_Y_GRAD, 0, dy, &y->dims));
  if (!dx && !dy) return NULL;
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, dx ? dx : dy, &d));
  /* With n (or m) zero, cuBLAS's k of zero is not asked for: the gradient is zeros. */
  if (dx && m > 0 && k > 0) {
    if (n == 0)
      RILL_TRY(rill_cuda_kernel_check(ctx, cudaMemsetAsync(rill_tensor_ptr(dx), 0, rill_tensor_nbytes(dx), d->stream),
                                      "X@GRAD clear"));
    else
      RILL_TRY(rill_cuda_kernel_status(ctx, rill_cuda_sgemm(d, false, true, m, k, n, 1.0f, rill_tensor_ptr(g), 0,
                                                            rill_tensor_ptr(y), 0, 0.0f, rill_tensor_ptr(dx), 0, 1)));
  }
  if (dy && k > 0 && n > 0) {
    if (m == 0)
      RILL_TRY(rill_cuda_kernel_check(ctx, cudaMemsetAsync(rill_tensor_ptr(dy), 0, rill_tensor_nbytes(dy), d->stream),
                                      "Y@GRAD clear"));
    else
      RILL_TRY(rill_cuda_kernel_status(ctx, rill_cuda_sgemm(d, true, false, k, n, m, 1.0f, rill_tensor_ptr(x), 0,
                                                            rill_tensor_ptr(g), 0, 0.0f, rill_tensor_ptr(dy), 0, 1)));
  }
  return NULL;
}
