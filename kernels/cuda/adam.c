/* adam CUDA kernel, float32: Fluid 1.x's update (kernels/cpu/adam.c) in one pass, and the
 * beta pows advanced by one-element kernels.
 *
 * A dense gradient: the update, then the pows, queued in that order so that a pow that
 * is its own output is read before it is written. A selected-rows gradient (a sparse
 * embedding's): its rows merged as the CPU merges them (rows.c), the pows advanced
 * first and, where a pow is its own output, the advanced value corrects the step, as
 * Paddle 1.8.5's sparse adam does (so sparse step t is corrected as step t + 1); with
 * lazy_mode only the rows present are updated, else the absent rows take a zero
 * gradient. Beta1Tensor, Beta2Tensor, EpsilonTensor, SkipUpdate and MasterParam are
 * errors naming them. */
#include <string.h>

#include "kernels/cuda/cuda.h"

static const size_t unsupported[] = {RILL_ADAM_IN_BETA1_TENSOR, RILL_ADAM_IN_BETA2_TENSOR,
                                     RILL_ADAM_IN_EPSILON_TENSOR, RILL_ADAM_IN_SKIP_UPDATE,
                                     RILL_ADAM_IN_MASTER_PARAM};

static const size_t pows[2][2] = {{RILL_ADAM_IN_BETA1_POW, RILL_ADAM_OUT_BETA1_POW_OUT},
                                  {RILL_ADAM_IN_BETA2_POW, RILL_ADAM_OUT_BETA2_POW_OUT}};

/* Each beta pow's output := its input times beta (or the input as is with
 * use_global_beta_pow), and in eff[k] the pow a sparse step corrects with: the output
 * when it is the input's variable, else the input. */
static rill_status *advance_pows(rill_kernel_ctx *ctx, rill_cuda_dev *d, const float beta[2], const float *eff[2]) {
  bool advance = !ctx->attrs[RILL_ADAM_ATTR_USE_GLOBAL_BETA_POW].v.b;
  for (int k = 0; k < 2; k++) {
    rill_tensor *in = rill_kin(ctx, pows[k][0], 0), *out = rill_kout(ctx, pows[k][1], 0);
    eff[k] = rill_tensor_ptr(in);
    if (!out || !rill_tensor_is_set(out)) continue;
    if (out->dtype != RILL_DTYPE_FP32 || rill_tensor_numel(out) != 1)
      return rill_kernel_error(ctx, "output %s (%s) must be one float32", ctx->schema->outputs[pows[k][1]].name,
                               rill_kout_name(ctx, pows[k][1], 0));
    cudaError_t e = cudaSuccess;
    if (advance)
      e = rill_cuda_scale_scalar_f32(rill_tensor_ptr(out), rill_tensor_ptr(in), beta[k], d->stream);
    else if (rill_tensor_ptr(out) != rill_tensor_ptr(in))
      e = cudaMemcpyAsync(rill_tensor_ptr(out), rill_tensor_ptr(in), sizeof(float), cudaMemcpyDeviceToDevice, d->stream);
    RILL_TRY(rill_cuda_kernel_check(ctx, e, "advancing the beta pows"));
    const char *a = rill_kin_name(ctx, pows[k][0], 0), *b = rill_kout_name(ctx, pows[k][1], 0);
    if (out == in || (strcmp(a, "?") != 0 && strcmp(a, b) == 0)) eff[k] = rill_tensor_ptr(out);
  }
  return NULL;
}

/* Beta1Tensor, Beta2Tensor, EpsilonTensor, SkipUpdate and MasterParam run on the host. */
bool rill_cuda_adam_accepts(const rill_kernel_ctx *ctx) {
  for (size_t i = 0; i < RILL_COUNTOF(unsupported); i++)
    if (unsupported[i] < ctx->schema->ninputs && ctx->nin[unsupported[i]]) return false;
  return true;
}

rill_status *rill_cuda_adam_fp32(rill_kernel_ctx *ctx) {
  for (size_t i = 0; i < RILL_COUNTOF(unsupported); i++)
    if (rill_kin(ctx, unsupported[i], 0))
      return rill_kernel_error(ctx, "the CUDA kernel does not take input %s (%s)",
                               ctx->schema->inputs[unsupported[i]].name, rill_kin_name(ctx, unsupported[i], 0));
  rill_tensor *p = NULL, *g = NULL, *m1 = NULL, *m2 = NULL, *lr = NULL, *b1p = NULL, *b2p = NULL;
  rill_tensor *po = NULL, *m1o = NULL, *m2o = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_ADAM_IN_PARAM, 0, RILL_DTYPE_FP32, &p));
  RILL_TRY(rill_kin_need(ctx, RILL_ADAM_IN_MOMENT1, 0, RILL_DTYPE_FP32, &m1));
  RILL_TRY(rill_kin_need(ctx, RILL_ADAM_IN_MOMENT2, 0, RILL_DTYPE_FP32, &m2));
  RILL_TRY(rill_kin_need(ctx, RILL_ADAM_IN_LEARNING_RATE, 0, RILL_DTYPE_FP32, &lr));
  RILL_TRY(rill_kin_need(ctx, RILL_ADAM_IN_BETA1_POW, 0, RILL_DTYPE_FP32, &b1p));
  RILL_TRY(rill_kin_need(ctx, RILL_ADAM_IN_BETA2_POW, 0, RILL_DTYPE_FP32, &b2p));
  RILL_TRY(rill_kout_need(ctx, RILL_ADAM_OUT_PARAM_OUT, 0, RILL_DTYPE_FP32, &po));
  RILL_TRY(rill_kout_need(ctx, RILL_ADAM_OUT_MOMENT1_OUT, 0, RILL_DTYPE_FP32, &m1o));
  RILL_TRY(rill_kout_need(ctx, RILL_ADAM_OUT_MOMENT2_OUT, 0, RILL_DTYPE_FP32, &m2o));
  RILL_TRY(rill_kin_check_dims(ctx, RILL_ADAM_IN_MOMENT1, m1, &p->dims));
  RILL_TRY(rill_kin_check_dims(ctx, RILL_ADAM_IN_MOMENT2, m2, &p->dims));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_ADAM_OUT_PARAM_OUT, 0, po, &p->dims));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_ADAM_OUT_MOMENT1_OUT, 0, m1o, &p->dims));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_ADAM_OUT_MOMENT2_OUT, 0, m2o, &p->dims));
  if (rill_tensor_numel(lr) != 1 || rill_tensor_numel(b1p) != 1 || rill_tensor_numel(b2p) != 1)
    return rill_kernel_error(ctx, "LearningRate (%s), Beta1Pow (%s) and Beta2Pow (%s) must hold one element each",
                             rill_kin_name(ctx, RILL_ADAM_IN_LEARNING_RATE, 0),
                             rill_kin_name(ctx, RILL_ADAM_IN_BETA1_POW, 0), rill_kin_name(ctx, RILL_ADAM_IN_BETA2_POW, 0));
  const float beta[2] = {ctx->attrs[RILL_ADAM_ATTR_BETA1].v.f, ctx->attrs[RILL_ADAM_ATTR_BETA2].v.f};
  float eps = ctx->attrs[RILL_ADAM_ATTR_EPSILON].v.f;
  const float *eff[2];
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, po, &d));
  rill_variable *gv = ctx->nin[RILL_ADAM_IN_GRAD] ? ctx->in[RILL_ADAM_IN_GRAD][0] : NULL;
  if (gv && gv->kind == RILL_VARKIND_SELECTED_ROWS) {
    RILL_TRY(advance_pows(ctx, d, beta, eff));
    if (ctx->attrs[RILL_ADAM_ATTR_LAZY_MODE].v.b) {
      int64_t width;
      RILL_TRY(rill_cuda_grad_rows_check(ctx, RILL_ADAM_IN_GRAD, &gv->u.rows, p, &width));
      cudaError_t e = rill_cuda_copy_unless_same(po, p, d->stream);
      if (e == cudaSuccess) e = rill_cuda_copy_unless_same(m1o, m1, d->stream);
      if (e == cudaSuccess) e = rill_cuda_copy_unless_same(m2o, m2, d->stream);
      RILL_TRY(rill_cuda_kernel_check(ctx, e, "copying Param and the moments"));
      rill_cuda_groups gr;
      RILL_TRY(rill_cuda_groups_make(ctx, d, gv->u.rows.rows, (int64_t)gv->u.rows.nrows, NULL, &gr));
      e = rill_cuda_adam_rows_f32(rill_tensor_ptr(po), rill_tensor_ptr(m1o), rill_tensor_ptr(m2o),
                                  rill_tensor_ptr(&gv->u.rows.value), gr.dev, gr.ngroups, width, rill_tensor_ptr(lr),
                                  eff[0], eff[1], beta[0], beta[1], eps, d->stream);
      rill_cuda_groups_free(d, &gr);
      return rill_cuda_kernel_check(ctx, e, "lazy adam launch");
    }
    float *dense = NULL;
    RILL_TRY(rill_cuda_grad_rows_densify(ctx, d, RILL_ADAM_IN_GRAD, &gv->u.rows, p, &dense));
    cudaError_t e = rill_cuda_adam_f32(rill_tensor_ptr(po), rill_tensor_ptr(m1o), rill_tensor_ptr(m2o), rill_tensor_ptr(p),
                                       dense, rill_tensor_ptr(m1), rill_tensor_ptr(m2), rill_tensor_ptr(lr), eff[0],
                                       eff[1], rill_tensor_numel(p), beta[0], beta[1], eps, d->stream);
    rill_cuda_mem_free(d, dense); /* its next user is queued behind the update */
    return rill_cuda_kernel_check(ctx, e, "sparse adam launch");
  }
  RILL_TRY(rill_kin_need(ctx, RILL_ADAM_IN_GRAD, 0, RILL_DTYPE_FP32, &g));
  RILL_TRY(rill_kin_check_dims(ctx, RILL_ADAM_IN_GRAD, g, &p->dims));
  RILL_TRY(rill_cuda_kernel_check(
      ctx,
      rill_cuda_adam_f32(rill_tensor_ptr(po), rill_tensor_ptr(m1o), rill_tensor_ptr(m2o), rill_tensor_ptr(p),
                         rill_tensor_ptr(g), rill_tensor_ptr(m1), rill_tensor_ptr(m2), rill_tensor_ptr(lr),
                         rill_tensor_ptr(b1p), rill_tensor_ptr(b2p), rill_tensor_numel(p), beta[0], beta[1], eps,
                         d->stream),
      "adam launch"));
  return advance_pows(ctx, d, beta, eff);
}
