/* sgd CUDA kernel, float32: ParamOut = Param - LearningRate * Grad, the rate read on the
 * device. A dense gradient is one fused pass; selected rows (a sparse embedding's
 * gradient) are merged as the CPU merges them (duplicate rows' values added in their
 * order, rows.c's groups) and each touched row updated once. */
#include "kernels/cuda/cuda.h"

/* ParamOut -= lr * the rows of Grad (selected rows, values on po's device). */
static rill_status *sparse_sgd(rill_kernel_ctx *ctx, rill_cuda_dev *d, const rill_selected_rows *sr,
                               const rill_tensor *p, const rill_tensor *lr, rill_tensor *po) {
  int64_t width;
  RILL_TRY(rill_cuda_grad_rows_check(ctx, RILL_SGD_IN_GRAD, sr, p, &width));
  cudaError_t e = cudaSuccess;
  if (rill_tensor_ptr(po) != rill_tensor_ptr(p))
    e = cudaMemcpyAsync(rill_tensor_ptr(po), rill_tensor_ptr(p), rill_tensor_nbytes(p), cudaMemcpyDeviceToDevice,
                        d->stream);
  RILL_TRY(rill_cuda_kernel_check(ctx, e, "copying Param"));
  rill_cuda_groups g;
  RILL_TRY(rill_cuda_groups_make(ctx, d, sr->rows, (int64_t)sr->nrows, NULL, &g));
  e = rill_cuda_sum_groups_f32(rill_tensor_ptr(&sr->value), g.dev, g.ngroups, width, rill_tensor_ptr(lr),
                               rill_tensor_ptr(po), d->stream);
  rill_cuda_groups_free(d, &g);
  return rill_cuda_kernel_check(ctx, e, "sparse sgd launch");
}

rill_status *rill_cuda_sgd_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *p = NULL, *lr = NULL, *g = NULL, *po = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_SGD_IN_PARAM, 0, RILL_DTYPE_FP32, &p));
  RILL_TRY(rill_kin_need(ctx, RILL_SGD_IN_LEARNING_RATE, 0, RILL_DTYPE_FP32, &lr));
  RILL_TRY(rill_kout_need(ctx, RILL_SGD_OUT_PARAM_OUT, 0, RILL_DTYPE_FP32, &po));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_SGD_OUT_PARAM_OUT, 0, po, &p->dims));
  if (rill_tensor_numel(lr) != 1)
    return rill_kernel_error(ctx, "input LearningRate (%s) must hold one element", rill_kin_name(ctx, 1, 0));
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, po, &d));
  rill_variable *gv = ctx->nin[RILL_SGD_IN_GRAD] ? ctx->in[RILL_SGD_IN_GRAD][0] : NULL;
  if (gv && gv->kind == RILL_VARKIND_SELECTED_ROWS) return sparse_sgd(ctx, d, &gv->u.rows, p, lr, po);
  RILL_TRY(rill_kin_need(ctx, RILL_SGD_IN_GRAD, 0, RILL_DTYPE_FP32, &g));
  RILL_TRY(rill_kin_check_dims(ctx, RILL_SGD_IN_GRAD, g, &p->dims));
  return rill_cuda_kernel_check(ctx,
                                rill_cuda_sgd_f32(rill_tensor_ptr(po), rill_tensor_ptr(p), rill_tensor_ptr(g),
                                                  rill_tensor_ptr(lr), rill_tensor_numel(p), d->stream),
                                "sgd launch");
}
