/* sum CUDA kernel, float32 dense tensors of one shape: Out = X[0] + X[1] + ... Out may
 * be one of the inputs (gradient accumulation): the sum starts from that one. */
#include "kernels/cuda/cuda.h"

rill_status *rill_cuda_sum_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *out = NULL;
  RILL_TRY(rill_kout_need(ctx, RILL_SUM_OUT_OUT, 0, RILL_DTYPE_FP32, &out));
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, out, &d));
  size_t n = ctx->nin[RILL_SUM_IN_X];
  if (n == 0) return rill_kernel_error(ctx, "input X has no tensors");
  size_t start = n;
  for (size_t i = 0; i < n; i++) {
    rill_tensor *x = NULL;
    RILL_TRY(rill_kin_need(ctx, RILL_SUM_IN_X, i, RILL_DTYPE_FP32, &x));
    if (!rill_dims_equal(&x->dims, &out->dims)) {
      char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
      return rill_kernel_error(ctx, "input X #%zu (%s) has shape %s, output Out (%s) has %s", i,
                               rill_kin_name(ctx, 0, i), rill_dims_str(&x->dims, a, sizeof a),
                               rill_kout_name(ctx, 0, 0), rill_dims_str(&out->dims, b, sizeof b));
    }
    if (start == n && rill_tensor_ptr(x) == rill_tensor_ptr(out)) start = i;
  }
  int64_t numel = rill_tensor_numel(out);
  cudaError_t e = cudaSuccess;
  if (start == n) {
    start = 0;
    e = cudaMemcpyAsync(rill_tensor_ptr(out), rill_tensor_ptr(rill_kin(ctx, 0, 0)),
                        (size_t)numel * sizeof(float), cudaMemcpyDeviceToDevice, d->stream);
  }
  for (size_t i = 0; i < n && e == cudaSuccess; i++)
    if (i != start) e = rill_cuda_accumulate_f32(rill_tensor_ptr(out), rill_tensor_ptr(rill_kin(ctx, 0, i)), numel, d->stream);
  return rill_cuda_kernel_check(ctx, e, "sum launch");
}
