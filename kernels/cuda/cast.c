/* cast CUDA kernel: converts between bool, int32, int64, float32 and float64 (X's
 * dtype to Out's, which the executor allocated from out_dtype). */
#include "kernels/cuda/cuda.h"

rill_status *rill_cuda_cast_kernel(rill_kernel_ctx *ctx) {
  rill_tensor *x = rill_kin(ctx, RILL_CAST_IN_X, 0), *out = rill_kout(ctx, RILL_CAST_OUT_OUT, 0);
  if (!x || !rill_tensor_is_set(x)) return rill_kernel_error(ctx, "input X (%s) holds no data", rill_kin_name(ctx, 0, 0));
  if (!out || !rill_tensor_is_set(out))
    return rill_kernel_error(ctx, "output Out (%s) was not allocated", rill_kout_name(ctx, 0, 0));
  if (!rill_cuda_cast_supported(x->dtype) || !rill_cuda_cast_supported(out->dtype))
    return rill_kernel_error(ctx, "the CUDA kernel does not convert %s to %s", rill_dtype_name(x->dtype),
                             rill_dtype_name(out->dtype));
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &x->dims));
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, out, &d));
  cudaError_t e;
  if (x->dtype == out->dtype)
    e = rill_tensor_ptr(x) == rill_tensor_ptr(out)
            ? cudaSuccess
            : cudaMemcpyAsync(rill_tensor_ptr(out), rill_tensor_ptr(x), rill_tensor_nbytes(x),
                              cudaMemcpyDeviceToDevice, d->stream);
  else
    e = rill_cuda_cast(rill_tensor_ptr(x), x->dtype, rill_tensor_ptr(out), out->dtype, rill_tensor_numel(x),
                       d->stream);
  return rill_cuda_kernel_check(ctx, e, "cast launch");
}
