/* softmax CUDA kernel, float32, over the last axis (a classifier's output): one block a
 * row. Another axis is an error naming it. */
#include "kernels/cuda/cuda.h"

rill_status *rill_cuda_softmax_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *x = NULL, *out = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_SOFTMAX_IN_X, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kout_need(ctx, RILL_SOFTMAX_OUT_OUT, 0, RILL_DTYPE_FP32, &out));
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &x->dims));
  int rank = x->dims.n;
  int64_t axis = ctx->attrs[RILL_SOFTMAX_ATTR_AXIS].v.i;
  if (axis < 0) axis += rank;
  if (rank == 0 || axis != rank - 1)
    return rill_kernel_error(ctx, "the CUDA kernel takes the last axis only; axis %lld of a rank-%d X (%s)",
                             (long long)ctx->attrs[RILL_SOFTMAX_ATTR_AXIS].v.i, rank,
                             rill_kin_name(ctx, 0, 0));
  int64_t cols = x->dims.d[rank - 1];
  int64_t rows = cols ? rill_tensor_numel(x) / cols : 0;
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, out, &d));
  return rill_cuda_kernel_check(
      ctx, rill_cuda_softmax_f32(rill_tensor_ptr(x), rill_tensor_ptr(out), rows, cols, d->stream),
      "softmax launch");
}

/* softmax_grad CUDA kernel, float32, over the last axis: X@GRAD from Out and Out@GRAD,
 * one block a row. */
rill_status *rill_cuda_softmax_grad_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *out = NULL, *g = NULL, *dx = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_SOFTMAX_GRAD_IN_OUT, 0, RILL_DTYPE_FP32, &out));
  RILL_TRY(rill_kin_need(ctx, RILL_SOFTMAX_GRAD_IN_OUT_GRAD, 0, RILL_DTYPE_FP32, &g));
  RILL_TRY(rill_kout_need(ctx, RILL_SOFTMAX_GRAD_OUT_X_GRAD, 0, RILL_DTYPE_FP32, &dx));
  RILL_TRY(rill_kin_check_dims(ctx, RILL_SOFTMAX_GRAD_IN_OUT_GRAD, g, &out->dims));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_SOFTMAX_GRAD_OUT_X_GRAD, 0, dx, &out->dims));
  int rank = out->dims.n;
  int64_t axis = ctx->attrs[RILL_SOFTMAX_GRAD_ATTR_AXIS].v.i;
  if (axis < 0) axis += rank;
  if (rank == 0 || axis != rank - 1)
    return rill_kernel_error(ctx, "the CUDA kernel takes the last axis only; axis %lld of a rank-%d Out (%s)",
                             (long long)ctx->attrs[RILL_SOFTMAX_GRAD_ATTR_AXIS].v.i, rank,
                             rill_kin_name(ctx, RILL_SOFTMAX_GRAD_IN_OUT, 0));
  int64_t cols = out->dims.d[rank - 1];
  int64_t rows = cols ? rill_tensor_numel(out) / cols : 0;
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, dx, &d));
  return rill_cuda_kernel_check(ctx,
                                rill_cuda_softmax_grad_f32(rill_tensor_ptr(out), rill_tensor_ptr(g),
                                                           rill_tensor_ptr(dx), rows, cols, d->stream),
                                "softmax gradient launch");
}
