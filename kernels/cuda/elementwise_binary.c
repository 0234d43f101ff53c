/* CUDA kernels of elementwise_add / _sub / _mul / _div / _max / _min, float32, with
 * Paddle's broadcasting (operators/elementwise.h): each operand gets an element stride
 * per output dim, 0 where it broadcasts. */
#include "kernels/cuda/cuda.h"
#include "operators/elementwise.h"

static rill_status *bcast_plan(rill_kernel_ctx *ctx, const rill_tensor *x, const rill_tensor *y,
                               const rill_tensor *out, rill_cuda_bcast *b) {
  rill_dims xa, ya, o;
  char why[160], a[RILL_DIMS_STR_MAX], c[RILL_DIMS_STR_MAX];
  if (!rill_elementwise_broadcast(&x->dims, &y->dims, (int)ctx->attrs[RILL_ELEMENTWISE_ADD_ATTR_AXIS].v.i,
                                  &xa, &ya, &o, why, sizeof why))
    return rill_kernel_error(ctx, "input X (%s) of shape %s does not broadcast with input Y (%s) of shape %s: %s",
                             rill_kin_name(ctx, 0, 0), rill_dims_str(&x->dims, a, sizeof a),
                             rill_kin_name(ctx, 1, 0), rill_dims_str(&y->dims, c, sizeof c), why);
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &o));
  b->n = o.n ? o.n : 1;
  b->numel = 1;
  int64_t sx = 1, sy = 1;
  for (int i = b->n - 1; i >= 0; i--) {
    int64_t ext = o.n ? o.d[i] : 1, ex = o.n ? xa.d[i] : 1, ey = o.n ? ya.d[i] : 1;
    b->dims[i] = ext;
    b->xs[i] = ex == 1 && ext != 1 ? 0 : sx;
    b->ys[i] = ey == 1 && ext != 1 ? 0 : sy;
    sx *= ex;
    sy *= ey;
    b->numel *= ext;
  }
  return NULL;
}

static rill_status *binary(rill_kernel_ctx *ctx, int op) {
  rill_tensor *x = NULL, *y = NULL, *out = NULL;
  RILL_TRY(rill_kin_need(ctx, 0, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kin_need(ctx, 1, 0, RILL_DTYPE_FP32, &y));
  RILL_TRY(rill_kout_need(ctx, 0, 0, RILL_DTYPE_FP32, &out));
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, out, &d));
  rill_cuda_bcast b;
  RILL_TRY(bcast_plan(ctx, x, y, out, &b));
  return rill_cuda_kernel_check(
      ctx, rill_cuda_binary_f32(op, rill_tensor_ptr(x), rill_tensor_ptr(y), rill_tensor_ptr(out), &b, d->stream),
      "elementwise launch");
}

rill_status *rill_cuda_elementwise_add_fp32(rill_kernel_ctx *ctx) { return binary(ctx, RILL_CUDA_ADD); }
rill_status *rill_cuda_elementwise_sub_fp32(rill_kernel_ctx *ctx) { return binary(ctx, RILL_CUDA_SUB); }
rill_status *rill_cuda_elementwise_mul_fp32(rill_kernel_ctx *ctx) { return binary(ctx, RILL_CUDA_MUL); }
rill_status *rill_cuda_elementwise_div_fp32(rill_kernel_ctx *ctx) { return binary(ctx, RILL_CUDA_DIV); }
rill_status *rill_cuda_elementwise_max_fp32(rill_kernel_ctx *ctx) { return binary(ctx, RILL_CUDA_MAX); }
rill_status *rill_cuda_elementwise_min_fp32(rill_kernel_ctx *ctx) { return binary(ctx, RILL_CUDA_MIN); }
