/* transpose2 and transpose2_grad CUDA kernels, every dtype: one permuting pass
 * (device/transpose.cu), through a scratch block when the output shares memory with the
 * input. The permutation is read as the CPU reads it (operators/tensor_ops.h); the
 * gradient applies its inverse. XShape carries no data: the executor sized it. */
#include "kernels/cuda/cuda.h"
#include "operators/tensor_ops.h"

/* dst := src with dst dim i taken from src dim perm[i]. */
static rill_status *permute_into(rill_kernel_ctx *ctx, const rill_tensor *src, const int *perm, rill_tensor *dst) {
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, dst, &d));
  rill_cuda_perm p = {.n = src->dims.n, .numel = rill_tensor_numel(src)};
  int64_t stride[RILL_MAX_DIMS], s = 1;
  for (int i = src->dims.n - 1; i >= 0; i--) {
    stride[i] = s;
    s *= src->dims.d[i];
  }
  for (int i = 0; i < p.n; i++) {
    p.out_dims[i] = src->dims.d[perm[i]];
    p.src_strides[i] = stride[perm[i]];
  }
  size_t es = rill_dtype_size(src->dtype), bytes = rill_tensor_nbytes(src);
  if (!bytes) return NULL;
  uint8_t *to = rill_tensor_ptr(dst), *scratch = NULL;
  if (rill_overlaps(rill_tensor_ptr(src), bytes, to, rill_tensor_nbytes(dst)) &&
      !(scratch = rill_cuda_mem_alloc(d, bytes)))
    return rill_kernel_error(ctx, "out of device memory for a %zu-byte transpose scratch block", bytes);
  cudaError_t e = rill_cuda_permute(rill_tensor_ptr(src), scratch ? scratch : to, &p, es, d->stream);
  if (scratch) {
    if (e == cudaSuccess) e = cudaMemcpyAsync(to, scratch, bytes, cudaMemcpyDeviceToDevice, d->stream);
    rill_cuda_mem_free(d, scratch); /* its next user is queued behind these */
  }
  return rill_cuda_kernel_check(ctx, e, "transpose launch");
}

rill_status *rill_cuda_transpose2_kernel(rill_kernel_ctx *ctx) {
  rill_tensor *x = rill_kin(ctx, RILL_TRANSPOSE2_IN_X, 0), *out = NULL;
  if (!x || !rill_tensor_is_set(x))
    return rill_kernel_error(ctx, "input X (%s) is missing or holds no data", rill_kin_name(ctx, RILL_TRANSPOSE2_IN_X, 0));
  RILL_TRY(rill_kout_need(ctx, RILL_TRANSPOSE2_OUT_OUT, 0, x->dtype, &out));
  int perm[RILL_MAX_DIMS];
  char err[256];
  if (!rill_transpose_perm(&ctx->attrs[RILL_TRANSPOSE2_ATTR_AXIS], x->dims.n, perm, err, sizeof err))
    return rill_kernel_error(ctx, "input X (%s): %s", rill_kin_name(ctx, RILL_TRANSPOSE2_IN_X, 0), err);
  rill_dims dd = {.n = x->dims.n};
  for (int i = 0; i < dd.n; i++) dd.d[i] = x->dims.d[perm[i]];
  RILL_TRY(rill_kout_check_dims(ctx, RILL_TRANSPOSE2_OUT_OUT, 0, out, &dd));
  return permute_into(ctx, x, perm, out);
}

rill_status *rill_cuda_transpose2_grad_kernel(rill_kernel_ctx *ctx) {
  rill_tensor *dx = rill_kout(ctx, RILL_TRANSPOSE2_GRAD_OUT_X_GRAD, 0);
  rill_tensor *dout = rill_kin(ctx, RILL_TRANSPOSE2_GRAD_IN_OUT_GRAD, 0);
  if (!dx) return NULL; /* X@GRAD not wanted */
  if (!dout || !rill_tensor_is_set(dout))
    return rill_kernel_error(ctx, "input Out@GRAD (%s) is missing or holds no data",
                             rill_kin_name(ctx, RILL_TRANSPOSE2_GRAD_IN_OUT_GRAD, 0));
  RILL_TRY(rill_kout_need(ctx, RILL_TRANSPOSE2_GRAD_OUT_X_GRAD, 0, dout->dtype, &dx));
  int perm[RILL_MAX_DIMS], inv[RILL_MAX_DIMS];
  char err[256];
  if (!rill_transpose_perm(&ctx->attrs[RILL_TRANSPOSE2_GRAD_ATTR_AXIS], dout->dims.n, perm, err, sizeof err))
    return rill_kernel_error(ctx, "input Out@GRAD (%s): %s", rill_kin_name(ctx, RILL_TRANSPOSE2_GRAD_IN_OUT_GRAD, 0), err);
  for (int i = 0; i < dout->dims.n; i++) inv[perm[i]] = i;
  rill_dims dd = {.n = dout->dims.n};
  for (int i = 0; i < dd.n; i++) dd.d[i] = dout->dims.d[inv[i]];
  RILL_TRY(rill_kout_check_dims(ctx, RILL_TRANSPOSE2_GRAD_OUT_X_GRAD, 0, dx, &dd));
  return permute_into(ctx, dout, inv, dx);
}
