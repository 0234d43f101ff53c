/* sgd CUDA kernel, float32: ParamOut = Param - LearningRate * Grad, the rate read on the
 * device. A dense gradient is one fused pass; selected rows (a sparse embedding's
 * gradient) are merged as the CPU merges them (duplicate rows' values added in their
 * order, rows.c's groups) and each touched row updated once. */
#include <string.h>

#include "kernels/cuda/cuda.h"

/* ParamOut -= lr * the rows of Grad (selected rows, values on po's device). */
static rill_status *sparse_sgd(rill_kernel_ctx *ctx, rill_cuda_dev *d, const rill_selected_rows *sr,
                               const rill_tensor *p, const rill_tensor *lr, rill_tensor *po) {
  int64_t prow = p->dims.n ? p->dims.d[0] : 1, width = prow ? rill_tensor_numel(p) / prow : 0;
  const char *name = rill_kin_name(ctx, RILL_SGD_IN_GRAD, 0);
  if (sr->value.dtype != RILL_DTYPE_FP32)
    return rill_kernel_error(ctx, "input Grad (%s) is %s, Param is float32", name, rill_dtype_name(sr->value.dtype));
  if (sr->nrows && rill_tensor_numel(&sr->value) != (int64_t)sr->nrows * width)
    return rill_kernel_error(ctx, "input Grad (%s): %zu rows of %lld values do not match Param's rows of %lld", name,
                             sr->nrows, (long long)(rill_tensor_numel(&sr->value) / (int64_t)sr->nrows),
                             (long long)width);
  for (size_t i = 0; i < sr->nrows; i++)
    if (sr->rows[i] < 0 || sr->rows[i] >= prow)
      return rill_kernel_error(ctx, "input Grad (%s): row %lld outside Param's %lld rows", name,
                               (long long)sr->rows[i], (long long)prow);
  if (rill_tensor_place(&sr->value).device != RILL_DEVICE_CUDA && sr->nrows)
    return rill_kernel_error(ctx, "input Grad (%s): its values are not on the device", name);
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
