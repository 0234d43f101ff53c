/* adagrad CUDA kernel, float32: one fused pass for a dense gradient; a selected-rows
 * gradient updates only its rows (as on the CPU), each with its rows merged as the CPU
 * merges them (rows.c's groups). */
#include "kernels/cuda/cuda.h"

/* multi_precision (master weights of float16 parameters) runs on the host. */
bool rill_cuda_adagrad_accepts(const rill_kernel_ctx *ctx) { return !ctx->attrs[RILL_ADAGRAD_ATTR_MULTI_PRECISION].v.b; }

rill_status *rill_cuda_adagrad_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *p = NULL, *g = NULL, *m = NULL, *lr = NULL, *po = NULL, *mo = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_ADAGRAD_IN_PARAM, 0, RILL_DTYPE_FP32, &p));
  RILL_TRY(rill_kin_need(ctx, RILL_ADAGRAD_IN_MOMENT, 0, RILL_DTYPE_FP32, &m));
  RILL_TRY(rill_kin_need(ctx, RILL_ADAGRAD_IN_LEARNING_RATE, 0, RILL_DTYPE_FP32, &lr));
  RILL_TRY(rill_kout_need(ctx, RILL_ADAGRAD_OUT_PARAM_OUT, 0, RILL_DTYPE_FP32, &po));
  RILL_TRY(rill_kout_need(ctx, RILL_ADAGRAD_OUT_MOMENT_OUT, 0, RILL_DTYPE_FP32, &mo));
  if (ctx->attrs[RILL_ADAGRAD_ATTR_MULTI_PRECISION].v.b)
    return rill_kernel_error(ctx, "the CUDA kernel takes no multi_precision");
  RILL_TRY(rill_kin_check_dims(ctx, RILL_ADAGRAD_IN_MOMENT, m, &p->dims));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_ADAGRAD_OUT_PARAM_OUT, 0, po, &p->dims));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_ADAGRAD_OUT_MOMENT_OUT, 0, mo, &p->dims));
  if (rill_tensor_numel(lr) != 1)
    return rill_kernel_error(ctx, "input LearningRate (%s) must hold one element",
                             rill_kin_name(ctx, RILL_ADAGRAD_IN_LEARNING_RATE, 0));
  float eps = ctx->attrs[RILL_ADAGRAD_ATTR_EPSILON].v.f;
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, po, &d));
  rill_variable *gv = ctx->nin[RILL_ADAGRAD_IN_GRAD] ? ctx->in[RILL_ADAGRAD_IN_GRAD][0] : NULL;
  if (gv && gv->kind == RILL_VARKIND_SELECTED_ROWS) {
    int64_t width;
    RILL_TRY(rill_cuda_grad_rows_check(ctx, RILL_ADAGRAD_IN_GRAD, &gv->u.rows, p, &width));
    cudaError_t e = rill_cuda_copy_unless_same(po, p, d->stream);
    if (e == cudaSuccess) e = rill_cuda_copy_unless_same(mo, m, d->stream);
    RILL_TRY(rill_cuda_kernel_check(ctx, e, "copying Param and Moment"));
    rill_cuda_groups gr;
    RILL_TRY(rill_cuda_groups_make(ctx, d, gv->u.rows.rows, (int64_t)gv->u.rows.nrows, NULL, &gr));
    e = rill_cuda_adagrad_rows_f32(rill_tensor_ptr(po), rill_tensor_ptr(mo), rill_tensor_ptr(&gv->u.rows.value), gr.dev,
                                   gr.ngroups, width, rill_tensor_ptr(lr), eps, d->stream);
    rill_cuda_groups_free(d, &gr);
    return rill_cuda_kernel_check(ctx, e, "sparse adagrad launch");
  }
  RILL_TRY(rill_kin_need(ctx, RILL_ADAGRAD_IN_GRAD, 0, RILL_DTYPE_FP32, &g));
  RILL_TRY(rill_kin_check_dims(ctx, RILL_ADAGRAD_IN_GRAD, g, &p->dims));
  return rill_cuda_kernel_check(ctx,
                                rill_cuda_adagrad_f32(rill_tensor_ptr(po), rill_tensor_ptr(mo), rill_tensor_ptr(p),
                                                      rill_tensor_ptr(g), rill_tensor_ptr(m), rill_tensor_ptr(lr),
                                                      rill_tensor_numel(p), eps, d->stream),
                                "adagrad launch");
}
