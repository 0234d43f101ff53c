/* top_k (float32) and accuracy CUDA kernels: the metrics of a classifier's step, so that
 * its scores stay on the device. top_k orders as the CPU kernel does (descending, ties
 * by lower position, NaN first); a K tensor is read back from the device (one value). */
#include "kernels/cuda/cuda.h"

/* k from the attribute, or from input K (int32 or int64, on the device), checked
 * against the last dim n as the CPU checks it. */
static rill_status *top_k_value(rill_kernel_ctx *ctx, rill_cuda_dev *d, int64_t n, int64_t *k) {
  *k = ctx->attrs[RILL_TOP_K_ATTR_K].v.i;
  rill_tensor *kt = rill_kin(ctx, RILL_TOP_K_IN_K, 0);
  if (kt) {
    if (!rill_tensor_ptr(kt) || rill_tensor_numel(kt) < 1 ||
        (kt->dtype != RILL_DTYPE_INT32 && kt->dtype != RILL_DTYPE_INT64))
      return rill_kernel_error(ctx, "input K (%s) must hold one int32/int64 value",
                               rill_kin_name(ctx, RILL_TOP_K_IN_K, 0));
    int64_t v64 = 0;
    int32_t v32 = 0;
    bool wide = kt->dtype == RILL_DTYPE_INT64;
    cudaError_t e = cudaMemcpyAsync(wide ? (void *)&v64 : (void *)&v32, rill_tensor_ptr(kt), wide ? 8 : 4,
                                    cudaMemcpyDefault, d->stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(d->stream);
    RILL_TRY(rill_cuda_kernel_check(ctx, e, "reading K"));
    *k = wide ? v64 : v32;
  }
  if (*k < 1 || *k > n)
    return rill_kernel_error(ctx, "k = %lld is not in [1, %lld] (the last dim of input X (%s))", (long long)*k,
                             (long long)n, rill_kin_name(ctx, RILL_TOP_K_IN_X, 0));
  return NULL;
}

rill_status *rill_cuda_top_k_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *x = NULL, *out = NULL, *idx = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_TOP_K_IN_X, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kout_need(ctx, RILL_TOP_K_OUT_OUT, 0, RILL_DTYPE_FP32, &out));
  RILL_TRY(rill_kout_need(ctx, RILL_TOP_K_OUT_INDICES, 0, RILL_DTYPE_INT64, &idx));
  if (x->dims.n < 1)
    return rill_kernel_error(ctx, "input X (%s) must have rank >= 1", rill_kin_name(ctx, RILL_TOP_K_IN_X, 0));
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, out, &d));
  int64_t n = x->dims.d[x->dims.n - 1], k;
  RILL_TRY(top_k_value(ctx, d, n, &k));
  rill_dims want = x->dims;
  want.d[want.n - 1] = k;
  RILL_TRY(rill_kout_check_dims(ctx, RILL_TOP_K_OUT_OUT, 0, out, &want));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_TOP_K_OUT_INDICES, 0, idx, &want));
  int64_t rows = n ? rill_tensor_numel(x) / n : 0;
  return rill_cuda_kernel_check(
      ctx, rill_cuda_top_k_f32(rill_tensor_ptr(x), rill_tensor_ptr(out), rill_tensor_ptr(idx), rows, n, k, d->stream),
      "top_k launch");
}

/* accuracy: Indices [N, k] (int64) against Label (int64 or int32, N of them at least);
 * Out, when given, must have Indices' shape. */
rill_status *rill_cuda_accuracy_kernel(rill_kernel_ctx *ctx) {
  rill_tensor *o = rill_kin(ctx, RILL_ACCURACY_IN_OUT, 0), *idx = NULL, *label = rill_kin(ctx, RILL_ACCURACY_IN_LABEL, 0);
  rill_tensor *acc = NULL, *correct = NULL, *total = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_ACCURACY_IN_INDICES, 0, RILL_DTYPE_INT64, &idx));
  if (!label || !rill_tensor_is_set(label) || (label->dtype != RILL_DTYPE_INT64 && label->dtype != RILL_DTYPE_INT32))
    return rill_kernel_error(ctx, "input Label (%s) must be an int64 tensor with data",
                             rill_kin_name(ctx, RILL_ACCURACY_IN_LABEL, 0));
  RILL_TRY(rill_kout_need(ctx, RILL_ACCURACY_OUT_ACCURACY, 0, RILL_DTYPE_FP32, &acc));
  RILL_TRY(rill_kout_need(ctx, RILL_ACCURACY_OUT_CORRECT, 0, RILL_DTYPE_INT32, &correct));
  RILL_TRY(rill_kout_need(ctx, RILL_ACCURACY_OUT_TOTAL, 0, RILL_DTYPE_INT32, &total));
  const rill_dims *shape = o && o->dims.n == 2 ? &o->dims : &idx->dims;
  if (shape->n != 2 || !rill_dims_equal(shape, &idx->dims))
    return rill_kernel_error(ctx, "input Indices (%s) must be [N, k] like input Out",
                             rill_kin_name(ctx, RILL_ACCURACY_IN_INDICES, 0));
  int64_t n = shape->d[0], k = shape->d[1];
  if (rill_tensor_numel(label) < n)
    return rill_kernel_error(ctx, "input Label (%s) has %lld labels for %lld samples",
                             rill_kin_name(ctx, RILL_ACCURACY_IN_LABEL, 0), (long long)rill_tensor_numel(label),
                             (long long)n);
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, acc, &d));
  return rill_cuda_kernel_check(ctx,
                                rill_cuda_accuracy(rill_tensor_ptr(idx), rill_tensor_ptr(label),
                                                   label->dtype == RILL_DTYPE_INT64, n, k, rill_tensor_ptr(acc),
                                                   rill_tensor_ptr(correct), rill_tensor_ptr(total), d->stream),
                                "accuracy launch");
}
