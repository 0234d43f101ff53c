/* softmax and log_softmax CUDA kernels and their gradients, float32, along any axis: the
 * tensor viewed as [outer, n, inner] around it, as the CPU kernels view it
 * (device/softmax.cu). */
#include "kernels/cuda/cuda.h"

_Static_assert(RILL_SAME_POS(RILL_LOG_SOFTMAX_ATTR_AXIS, RILL_SOFTMAX_ATTR_AXIS) &&
                   RILL_SAME_POS(RILL_SOFTMAX_GRAD_ATTR_AXIS, RILL_SOFTMAX_ATTR_AXIS) &&
                   RILL_SAME_POS(RILL_LOG_SOFTMAX_GRAD_ATTR_AXIS, RILL_SOFTMAX_ATTR_AXIS) &&
                   RILL_SOFTMAX_IN_X == 0 && RILL_LOG_SOFTMAX_IN_X == 0 && RILL_SOFTMAX_GRAD_IN_OUT == 0 &&
                   RILL_LOG_SOFTMAX_GRAD_IN_OUT == 0 && RILL_SOFTMAX_GRAD_IN_OUT_GRAD == 1 &&
                   RILL_LOG_SOFTMAX_GRAD_IN_OUT_GRAD == 1,
               "the four ops read axis, X (or Out) and Out@GRAD at the same positions");

/* outer, n, inner of tensor t (input `slot`) around the op's axis; a rank-0 t is one
 * element, along axis 0 or -1. */
static rill_status *axis_view(rill_kernel_ctx *ctx, size_t slot, const rill_tensor *t, int64_t *outer, int64_t *n,
                              int64_t *inner) {
  int r = t->dims.n, axis = ctx->attrs[RILL_SOFTMAX_ATTR_AXIS].v.i;
  if (r == 0 ? (axis != 0 && axis != -1) : (axis < -r || axis >= r))
    return rill_kernel_error(ctx, "attribute axis %d is out of range for input %s (%s) of rank %d", axis,
                             ctx->schema->inputs[slot].name, rill_kin_name(ctx, slot, 0), r);
  if (r == 0) {
    *outer = *n = *inner = 1;
    return NULL;
  }
  if (axis < 0) axis += r;
  *outer = rill_dims_prod(&t->dims, 0, axis);
  *n = t->dims.d[axis];
  *inner = rill_dims_prod(&t->dims, axis + 1, r);
  return NULL;
}

static rill_status *forward(rill_kernel_ctx *ctx, bool log) {
  rill_tensor *x = NULL, *out = NULL;
  RILL_TRY(rill_kin_need(ctx, 0, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kout_need(ctx, 0, 0, RILL_DTYPE_FP32, &out));
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &x->dims));
  int64_t outer, n, inner;
  RILL_TRY(axis_view(ctx, 0, x, &outer, &n, &inner));
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, out, &d));
  return rill_cuda_kernel_check(
      ctx, rill_cuda_softmax_f32(rill_tensor_ptr(x), rill_tensor_ptr(out), outer, n, inner, log, d->stream),
      log ? "log_softmax launch" : "softmax launch");
}

static rill_status *backward(rill_kernel_ctx *ctx, bool log) {
  if (!rill_kout(ctx, 0, 0)) return NULL; /* X@GRAD not wanted */
  rill_tensor *out = NULL, *g = NULL, *dx = NULL;
  RILL_TRY(rill_kin_need(ctx, 0, 0, RILL_DTYPE_FP32, &out));
  RILL_TRY(rill_kin_need(ctx, 1, 0, RILL_DTYPE_FP32, &g));
  RILL_TRY(rill_kout_need(ctx, 0, 0, RILL_DTYPE_FP32, &dx));
  RILL_TRY(rill_kin_check_dims(ctx, 1, g, &out->dims));
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &out->dims));
  int64_t outer, n, inner;
  RILL_TRY(axis_view(ctx, 0, out, &outer, &n, &inner));
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, dx, &d));
  return rill_cuda_kernel_check(ctx,
                                rill_cuda_softmax_grad_f32(rill_tensor_ptr(out), rill_tensor_ptr(g), rill_tensor_ptr(dx),
                                                           outer, n, inner, log, d->stream),
                                log ? "log_softmax gradient launch" : "softmax gradient launch");
}

rill_status *rill_cuda_softmax_fp32(rill_kernel_ctx *ctx) { return forward(ctx, false); }
rill_status *rill_cuda_log_softmax_fp32(rill_kernel_ctx *ctx) { return forward(ctx, true); }
rill_status *rill_cuda_softmax_grad_fp32(rill_kernel_ctx *ctx) { return backward(ctx, false); }
rill_status *rill_cuda_log_softmax_grad_fp32(rill_kernel_ctx *ctx) { return backward(ctx, true); }
