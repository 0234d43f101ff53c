/* batch_norm CUDA kernel, float32, X of rank 2 to 5 with its channels at dim 1 (NCHW)
 * or last (NHWC): the
 * CPU kernel's rules (kernels/cpu/batch_norm.c) for test mode, global statistics, the
 * batch's statistics and the running statistics' update, one block a channel. */
#include "kernels/cuda/cuda.h"
#include "operators/nn.h"

/* X [n, c, s] (NCHW) or [n, s, c] (NHWC, *nhwc set), of rank 2 to 5. */
static rill_status *bn_shape_of(rill_kernel_ctx *ctx, const rill_tensor *x, const rill_attr_value *layout,
                                int64_t *n, int64_t *c, int64_t *s, bool *nhwc) {
  if (x->dims.n < 2 || x->dims.n > 5)
    return rill_kernel_error(ctx, "input X (%s) must have rank 2 to 5, has rank %d", rill_kin_name(ctx, 0, 0),
                             (int)x->dims.n);
  *nhwc = !rill_nn_is_nchw(layout);
  *n = x->dims.d[0];
  *c = *nhwc ? x->dims.d[x->dims.n - 1] : x->dims.d[1];
  *s = *nhwc ? rill_dims_prod(&x->dims, 1, x->dims.n - 1) : rill_dims_prod(&x->dims, 2, x->dims.n);
  return NULL;
}

/* Input `slot` as a [c] float32 vector. */
static rill_status *cvec_in(rill_kernel_ctx *ctx, size_t slot, int64_t c, const float **out) {
  rill_tensor *t = NULL;
  RILL_TRY(rill_kin_need(ctx, slot, 0, RILL_DTYPE_FP32, &t));
  if (t->dims.n != 1 || t->dims.d[0] != c) {
    char s[RILL_DIMS_STR_MAX];
    return rill_kernel_error(ctx, "input %s (%s) has shape %s, expected [%lld]", ctx->schema->inputs[slot].name,
                             rill_kin_name(ctx, slot, 0), rill_dims_str(&t->dims, s, sizeof s), (long long)c);
  }
  *out = rill_tensor_ptr(t);
  return NULL;
}

/* Output `slot` as a [c] float32 vector; NULL when the op has none. */
static rill_status *cvec_out(rill_kernel_ctx *ctx, size_t slot, int64_t c, float **out) {
  *out = NULL;
  if (!rill_kout(ctx, slot, 0)) return NULL;
  rill_tensor *t = NULL;
  RILL_TRY(rill_kout_need(ctx, slot, 0, RILL_DTYPE_FP32, &t));
  rill_dims d = {1, {c}};
  RILL_TRY(rill_kout_check_dims(ctx, slot, 0, t, &d));
  *out = rill_tensor_ptr(t);
  return NULL;
}

rill_status *rill_cuda_batch_norm_fp32(rill_kernel_ctx *ctx) {
  const rill_attr_value *a = ctx->attrs;
  rill_tensor *x = NULL, *y = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_BATCH_NORM_IN_X, 0, RILL_DTYPE_FP32, &x));
  rill_cuda_bn p = {0};
  RILL_TRY(bn_shape_of(ctx, x, &a[RILL_BATCH_NORM_ATTR_DATA_LAYOUT], &p.n, &p.c, &p.s, &p.nhwc));
  p.x = rill_tensor_ptr(x);
  RILL_TRY(cvec_in(ctx, RILL_BATCH_NORM_IN_SCALE, p.c, &p.scale));
  RILL_TRY(cvec_in(ctx, RILL_BATCH_NORM_IN_BIAS, p.c, &p.bias));
  RILL_TRY(cvec_in(ctx, RILL_BATCH_NORM_IN_MEAN, p.c, &p.mean));
  RILL_TRY(cvec_in(ctx, RILL_BATCH_NORM_IN_VARIANCE, p.c, &p.var));
  RILL_TRY(rill_kout_need(ctx, RILL_BATCH_NORM_OUT_Y, 0, RILL_DTYPE_FP32, &y));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_BATCH_NORM_OUT_Y, 0, y, &x->dims));
  p.y = rill_tensor_ptr(y);
  RILL_TRY(cvec_out(ctx, RILL_BATCH_NORM_OUT_MEAN_OUT, p.c, &p.mean_out));
  RILL_TRY(cvec_out(ctx, RILL_BATCH_NORM_OUT_VARIANCE_OUT, p.c, &p.var_out));
  RILL_TRY(cvec_out(ctx, RILL_BATCH_NORM_OUT_SAVED_MEAN, p.c, &p.saved_mean));
  RILL_TRY(cvec_out(ctx, RILL_BATCH_NORM_OUT_SAVED_VARIANCE, p.c, &p.saved_inv_std));
  p.momentum = a[RILL_BATCH_NORM_ATTR_MOMENTUM].v.f;
  p.eps = a[RILL_BATCH_NORM_ATTR_EPSILON].v.f;
  rill_tensor *mt = rill_kin(ctx, RILL_BATCH_NORM_IN_MOMENTUM_TENSOR, 0);
  if (mt) {
    if (!rill_tensor_is_set(mt) || rill_tensor_numel(mt) != 1 ||
        (mt->dtype != RILL_DTYPE_FP32 && mt->dtype != RILL_DTYPE_FP64))
      return rill_kernel_error(ctx, "input MomentumTensor (%s) must be one float",
                               rill_kin_name(ctx, RILL_BATCH_NORM_IN_MOMENTUM_TENSOR, 0));
    if (mt->dtype == RILL_DTYPE_FP32)
      p.momentum_f32 = rill_tensor_ptr(mt);
    else
      p.momentum_f64 = rill_tensor_ptr(mt);
  }
  bool test_mode = a[RILL_BATCH_NORM_ATTR_IS_TEST].v.b && !a[RILL_BATCH_NORM_ATTR_TRAINABLE_STATISTICS].v.b;
  p.global = test_mode || a[RILL_BATCH_NORM_ATTR_USE_GLOBAL_STATS].v.b;
  if (!p.global && p.n * p.s <= 0)
    return rill_kernel_error(ctx, "input X (%s) is empty: no batch statistics", rill_kin_name(ctx, RILL_BATCH_NORM_IN_X, 0));
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, y, &d));
  return rill_cuda_kernel_check(ctx, rill_cuda_batch_norm_f32(&p, d->stream), "batch_norm launch");
}

/* batch_norm_grad CUDA kernel, float32, NCHW or NHWC: X@GRAD, Scale@GRAD and Bias@GRAD (each
 * may be absent) as the CPU kernel computes them. */
rill_status *rill_cuda_batch_norm_grad_fp32(rill_kernel_ctx *ctx) {
  const rill_attr_value *a = ctx->attrs;
  rill_tensor *x = NULL, *dy = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_BATCH_NORM_GRAD_IN_X, 0, RILL_DTYPE_FP32, &x));
  rill_cuda_bn_grad p = {0};
  RILL_TRY(bn_shape_of(ctx, x, &a[RILL_BATCH_NORM_GRAD_ATTR_DATA_LAYOUT], &p.n, &p.c, &p.s, &p.nhwc));
  p.x = rill_tensor_ptr(x);
  RILL_TRY(cvec_in(ctx, RILL_BATCH_NORM_GRAD_IN_SCALE, p.c, &p.scale));
  RILL_TRY(rill_kin_need(ctx, RILL_BATCH_NORM_GRAD_IN_Y_GRAD, 0, RILL_DTYPE_FP32, &dy));
  if (!rill_dims_equal(&dy->dims, &x->dims))
    return rill_kernel_error(ctx, "input Y@GRAD (%s) does not have the shape of X (%s)",
                             rill_kin_name(ctx, RILL_BATCH_NORM_GRAD_IN_Y_GRAD, 0),
                             rill_kin_name(ctx, RILL_BATCH_NORM_GRAD_IN_X, 0));
  p.dy = rill_tensor_ptr(dy);
  p.global = a[RILL_BATCH_NORM_GRAD_ATTR_USE_GLOBAL_STATS].v.b || a[RILL_BATCH_NORM_GRAD_ATTR_IS_TEST].v.b;
  if (p.global) {
    RILL_TRY(cvec_in(ctx, RILL_BATCH_NORM_GRAD_IN_MEAN, p.c, &p.mean));
    RILL_TRY(cvec_in(ctx, RILL_BATCH_NORM_GRAD_IN_VARIANCE, p.c, &p.var));
  } else {
    RILL_TRY(cvec_in(ctx, RILL_BATCH_NORM_GRAD_IN_SAVED_MEAN, p.c, &p.mean));
    RILL_TRY(cvec_in(ctx, RILL_BATCH_NORM_GRAD_IN_SAVED_VARIANCE, p.c, &p.inv_std));
  }
  rill_tensor *dx = NULL;
  if (rill_kout(ctx, RILL_BATCH_NORM_GRAD_OUT_X_GRAD, 0)) {
    RILL_TRY(rill_kout_need(ctx, RILL_BATCH_NORM_GRAD_OUT_X_GRAD, 0, RILL_DTYPE_FP32, &dx));
    RILL_TRY(rill_kout_check_dims(ctx, RILL_BATCH_NORM_GRAD_OUT_X_GRAD, 0, dx, &x->dims));
    p.dx = rill_tensor_ptr(dx);
  }
  RILL_TRY(cvec_out(ctx, RILL_BATCH_NORM_GRAD_OUT_SCALE_GRAD, p.c, &p.dscale));
  RILL_TRY(cvec_out(ctx, RILL_BATCH_NORM_GRAD_OUT_BIAS_GRAD, p.c, &p.dbias));
  if (!p.dx && !p.dscale && !p.dbias) return NULL;
  p.eps = a[RILL_BATCH_NORM_GRAD_ATTR_EPSILON].v.f;
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, x, &d));
  return rill_cuda_kernel_check(ctx, rill_cuda_batch_norm_grad_f32(&p, d->stream), "batch_norm_grad launch");
}
