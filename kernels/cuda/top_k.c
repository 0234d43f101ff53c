/* top_k (float32), accuracy and arg_max / arg_min CUDA kernels: the metrics of a
 * classifier's step, so that its scores stay on the device. top_k orders as the CPU
 * kernel does (descending, ties in Paddle's order, NaN first); a K tensor is on the host
 * (RILL_SLOT_HOST_DATA). */
#include "kernels/cuda/cuda.h"
#include "operators/tensor_ops.h"

/* k from the attribute, or from input K (int32 or int64), checked against the last dim
 * n as the CPU checks it. */
static rill_status *top_k_value(rill_kernel_ctx *ctx, int64_t n, int64_t *k) {
  *k = ctx->attrs[RILL_TOP_K_ATTR_K].v.i;
  rill_tensor *kt = rill_kin(ctx, RILL_TOP_K_IN_K, 0);
  if (kt && !rill_int_tensor_at(kt, 0, k))
    return rill_kernel_error(ctx, "input K (%s) must hold one int32/int64 value", rill_kin_name(ctx, RILL_TOP_K_IN_K, 0));
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
  RILL_TRY(top_k_value(ctx, n, &k));
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

/* arg_max / arg_min of float32, float64, int32 or int64 X along `axis` (or all of X with
 * flatten), as int64 or int32 (attribute dtype), positions as the CPU kernel picks them. */
static rill_status *arg_max(rill_kernel_ctx *ctx, bool min) {
  _Static_assert(RILL_SAME_POS(RILL_ARG_MIN_ATTR_DTYPE, RILL_ARG_MAX_ATTR_DTYPE) &&
                     RILL_SAME_POS(RILL_ARG_MIN_ATTR_AXIS, RILL_ARG_MAX_ATTR_AXIS) &&
                     RILL_SAME_POS(RILL_ARG_MIN_ATTR_KEEPDIMS, RILL_ARG_MAX_ATTR_KEEPDIMS) &&
                     RILL_SAME_POS(RILL_ARG_MIN_ATTR_FLATTEN, RILL_ARG_MAX_ATTR_FLATTEN),
                 "arg_max and arg_min read their attributes at the same positions");
  rill_tensor *x = rill_kin(ctx, RILL_ARG_MAX_IN_X, 0), *out = NULL;
  if (!x || !rill_tensor_is_set(x))
    return rill_kernel_error(ctx, "input X (%s) holds no data", rill_kin_name(ctx, RILL_ARG_MAX_IN_X, 0));
  bool i64 = ctx->attrs[RILL_ARG_MAX_ATTR_DTYPE].v.i != RILL_DTYPE_INT32;
  RILL_TRY(rill_kout_need(ctx, RILL_ARG_MAX_OUT_OUT, 0, i64 ? RILL_DTYPE_INT64 : RILL_DTYPE_INT32, &out));
  rill_dims od;
  int axis;
  char err[128];
  bool flatten = ctx->attrs[RILL_ARG_MAX_ATTR_FLATTEN].v.b;
  if (!rill_arg_max_dims(&x->dims, ctx->attrs[RILL_ARG_MAX_ATTR_AXIS].v.l, ctx->attrs[RILL_ARG_MAX_ATTR_KEEPDIMS].v.b,
                         flatten, &od, &axis, err, sizeof err))
    return rill_kernel_error(ctx, "input X (%s): %s", rill_kin_name(ctx, RILL_ARG_MAX_IN_X, 0), err);
  RILL_TRY(rill_kout_check_dims(ctx, RILL_ARG_MAX_OUT_OUT, 0, out, &od));
  int64_t outer = 1, n = rill_tensor_numel(x), inner = 1;
  if (!flatten) {
    outer = rill_dims_prod(&x->dims, 0, axis);
    n = x->dims.d[axis];
    inner = rill_dims_prod(&x->dims, axis + 1, x->dims.n);
  }
  if (n == 0 && outer * inner > 0)
    return rill_kernel_error(ctx, "input X (%s) is empty along the axis", rill_kin_name(ctx, RILL_ARG_MAX_IN_X, 0));
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, out, &d));
  cudaError_t e = rill_cuda_arg_max(rill_tensor_ptr(x), x->dtype, min, outer, n, inner, rill_tensor_ptr(out), i64,
                                    d->stream);
  if (e == cudaErrorInvalidValue)
    return rill_kernel_error(ctx, "input X (%s) is %s; the CUDA kernel takes float32, float64, int32 or int64",
                             rill_kin_name(ctx, RILL_ARG_MAX_IN_X, 0), rill_dtype_name(x->dtype));
  return rill_cuda_kernel_check(ctx, e, "arg_max launch");
}

rill_status *rill_cuda_arg_max_kernel(rill_kernel_ctx *ctx) { return arg_max(ctx, false); }
rill_status *rill_cuda_arg_min_kernel(rill_kernel_ctx *ctx) { return arg_max(ctx, true); }
