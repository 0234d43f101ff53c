/* fc CUDA kernel, float32: Out = act(Input W + Bias), Input flattened to a matrix at
 * in_num_col_dims, on cuBLAS; the bias and relu in one pass after it. */
#include <string.h>

#include "kernels/cuda/cuda.h"
#include "operators/fused_act.h"

/* The activations the CPU kernel takes (none, identity, relu), without padding_weights
 * (which the CPU kernel does not read): the rest runs on the host. */
bool rill_cuda_fc_accepts(const rill_kernel_ctx *ctx) {
  return rill_fused_act_of(&ctx->attrs[RILL_FC_ATTR_ACTIVATION_TYPE], true) != RILL_FUSED_UNKNOWN &&
         !ctx->attrs[RILL_FC_ATTR_PADDING_WEIGHTS].v.b;
}

rill_status *rill_cuda_fc_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *x = NULL, *w = NULL, *out = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_FC_IN_INPUT, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kin_need(ctx, RILL_FC_IN_W, 0, RILL_DTYPE_FP32, &w));
  RILL_TRY(rill_kout_need(ctx, RILL_FC_OUT_OUT, 0, RILL_DTYPE_FP32, &out));
  rill_tensor *bias = rill_kin(ctx, RILL_FC_IN_BIAS, 0);
  if (!rill_cuda_fc_accepts(ctx))
    return rill_kernel_error(ctx, "the CUDA kernel takes activation_type \"\", \"identity\" or \"relu\" and no "
                             "padding_weights");
  bool relu = rill_fused_act_of(&ctx->attrs[RILL_FC_ATTR_ACTIVATION_TYPE], true) == RILL_FUSED_RELU;
  int64_t nc = ctx->attrs[RILL_FC_ATTR_IN_NUM_COL_DIMS].v.i;
  if (nc < 1 || nc >= x->dims.n || w->dims.n != 2)
    return rill_kernel_error(ctx, "in_num_col_dims %lld does not fit Input (%s, rank %d), or W (%s) is not a "
                             "matrix", (long long)nc, rill_kin_name(ctx, 0, 0), x->dims.n,
                             rill_kin_name(ctx, 1, 0));
  int64_t m = rill_dims_prod(&x->dims, 0, (int)nc), k = rill_dims_prod(&x->dims, (int)nc, x->dims.n);
  int64_t n = w->dims.d[1];
  if (w->dims.d[0] != k || rill_tensor_numel(out) != m * n ||
      (bias && (bias->dtype != RILL_DTYPE_FP32 || rill_tensor_numel(bias) != n))) {
    char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
    return rill_kernel_error(ctx, "Input (%s) of shape %s as %lld x %lld does not fit W (%s) of shape %s, "
                             "or Bias does not hold %lld float32", rill_kin_name(ctx, 0, 0),
                             rill_dims_str(&x->dims, a, sizeof a), (long long)m, (long long)k,
                             rill_kin_name(ctx, 1, 0), rill_dims_str(&w->dims, b, sizeof b), (long long)n);
  }
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, out, &d));
  RILL_TRY(rill_cuda_kernel_status(ctx, rill_cuda_sgemm(d, false, false, m, n, k, 1.0f, rill_tensor_ptr(x), 0,
                                                         rill_tensor_ptr(w), 0, 0.0f, rill_tensor_ptr(out), 0, 1)));
  if (!bias && !relu) return NULL;
  return rill_cuda_kernel_check(
      ctx, rill_cuda_bias_act_f32(rill_tensor_ptr(out), bias ? rill_tensor_ptr(bias) : NULL, m, n, relu, d->stream),
      "bias launch");
}
