/* dropout and dropout_grad CUDA kernels, float32, with the rules of operators/dropout.h:
 * the mask of a training run is drawn on the host from the run's seed, with the CPU
 * kernel's generator and order, and copied to the device's Mask output, so the device
 * drops exactly the elements the CPU drops for the same seed; one pass then keeps and
 * scales. A Seed input on the device is read back (one int32). */
#include "framework/base/alloc.h"
#include "framework/base/random.h"
#include "kernels/cpu/tensor_ops.h"
#include "kernels/cuda/cuda.h"
#include "operators/dropout.h"

_Static_assert(RILL_SAME_POS(RILL_DROPOUT_GRAD_ATTR_DROPOUT_PROB, RILL_DROPOUT_ATTR_DROPOUT_PROB) &&
                   RILL_SAME_POS(RILL_DROPOUT_GRAD_ATTR_IS_TEST, RILL_DROPOUT_ATTR_IS_TEST) &&
                   RILL_SAME_POS(RILL_DROPOUT_GRAD_ATTR_DROPOUT_IMPLEMENTATION, RILL_DROPOUT_ATTR_DROPOUT_IMPLEMENTATION),
               "dropout and its gradient read the same attributes");

static uint64_t next_run_draw(void *ctx) { return rill_random_run_seed(ctx); }

/* dropout_prob and the implementation, and the device of `out`. */
static rill_status *setup(rill_kernel_ctx *ctx, const rill_tensor *out, double *p, bool *up, rill_cuda_dev **d) {
  *p = ctx->attrs[RILL_DROPOUT_ATTR_DROPOUT_PROB].v.f;
  *up = rill_dropout_upscale(ctx->attrs[RILL_DROPOUT_ATTR_DROPOUT_IMPLEMENTATION].v.s);
  if (!(*p >= 0 && *p <= 1)) return rill_kernel_error(ctx, "dropout_prob %g must lie in [0, 1]", *p);
  return rill_cuda_kernel_dev(ctx, out, d);
}

/* At test time every element is scaled, forward and backward alike. */
static cudaError_t test_scale(const rill_tensor *in, rill_tensor *out, double p, bool up, cudaStream_t s) {
  return rill_cuda_unary_f32(RILL_CUDA_SCALE, rill_tensor_ptr(in), rill_tensor_ptr(out), rill_tensor_numel(in),
                             (float)rill_dropout_test_scale(p, up), 0.0f, 0.0f, s);
}

/* The training mask into `mask` (device memory, n bytes). */
static rill_status *draw_mask(rill_kernel_ctx *ctx, rill_cuda_dev *d, double p, int64_t n, uint8_t *mask) {
  rill_tensor *st = rill_kin(ctx, RILL_DROPOUT_IN_SEED, 0);
  int32_t given = 0;
  if (st) {
    if (!rill_tensor_is_set(st) || st->dtype != RILL_DTYPE_INT32 || rill_tensor_numel(st) < 1)
      return rill_kernel_error(ctx, "input Seed (%s) must hold an int32", rill_kin_name(ctx, RILL_DROPOUT_IN_SEED, 0));
    cudaError_t e = cudaMemcpyAsync(&given, rill_tensor_ptr(st), sizeof given, cudaMemcpyDefault, d->stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(d->stream);
    RILL_TRY(rill_cuda_kernel_check(ctx, e, "reading Seed"));
  }
  if (!ctx->dev && !st && !ctx->attrs[RILL_DROPOUT_ATTR_FIX_SEED].v.b)
    return rill_kernel_error(ctx, "a dropout that draws anew each run needs an executor's generator");
  uint64_t seed = rill_dropout_seed(st ? &given : NULL, ctx->attrs[RILL_DROPOUT_ATTR_SEED].v.i,
                                    ctx->attrs[RILL_DROPOUT_ATTR_FIX_SEED].v.b, next_run_draw, ctx);
  uint8_t *host = rill_malloc((size_t)(n ? n : 1));
  if (!host) return rill_oom();
  rill_dropout_mask(seed, p, n, host);
  /* From pageable memory: staged before the call returns, so host may go. */
  cudaError_t e = n ? cudaMemcpyAsync(mask, host, (size_t)n, cudaMemcpyHostToDevice, d->stream) : cudaSuccess;
  rill_free(host);
  return rill_cuda_kernel_check(ctx, e, "copying the mask");
}

rill_status *rill_cuda_dropout_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *x = NULL, *out = NULL, *mask = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_DROPOUT_IN_X, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kout_need(ctx, RILL_DROPOUT_OUT_OUT, 0, RILL_DTYPE_FP32, &out));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_DROPOUT_OUT_OUT, 0, out, &x->dims));
  if (rill_kout(ctx, RILL_DROPOUT_OUT_MASK, 0)) {
    RILL_TRY(rill_kout_need(ctx, RILL_DROPOUT_OUT_MASK, 0, RILL_DTYPE_UINT8, &mask));
    RILL_TRY(rill_kout_check_dims(ctx, RILL_DROPOUT_OUT_MASK, 0, mask, &x->dims));
  }
  double p;
  bool up;
  rill_cuda_dev *d = NULL;
  RILL_TRY(setup(ctx, out, &p, &up, &d));
  int64_t n = rill_tensor_numel(x);
  if (ctx->attrs[RILL_DROPOUT_ATTR_IS_TEST].v.b) {
    cudaError_t e = test_scale(x, out, p, up, d->stream);
    if (e == cudaSuccess && mask && n) e = cudaMemsetAsync(rill_tensor_ptr(mask), 1, (size_t)n, d->stream);
    return rill_cuda_kernel_check(ctx, e, "dropout launch");
  }
  if (n && !mask) return rill_kernel_error(ctx, "output Mask is required in training (is_test false)");
  RILL_TRY(draw_mask(ctx, d, p, n, mask ? rill_tensor_ptr(mask) : NULL));
  return rill_cuda_kernel_check(ctx,
                                rill_cuda_masked_scale_f32(rill_tensor_ptr(x), mask ? rill_tensor_ptr(mask) : NULL,
                                                           rill_tensor_ptr(out), n,
                                                           (float)rill_dropout_train_scale(p, up), d->stream),
                                "dropout launch");
}

rill_status *rill_cuda_dropout_grad_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *dy = NULL, *dx = NULL, *mask = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_DROPOUT_GRAD_IN_OUT_GRAD, 0, RILL_DTYPE_FP32, &dy));
  if (!rill_kout(ctx, RILL_DROPOUT_GRAD_OUT_X_GRAD, 0)) return NULL; /* X@GRAD not wanted */
  RILL_TRY(rill_kout_need(ctx, RILL_DROPOUT_GRAD_OUT_X_GRAD, 0, RILL_DTYPE_FP32, &dx));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_DROPOUT_GRAD_OUT_X_GRAD, 0, dx, &dy->dims));
  double p;
  bool up;
  rill_cuda_dev *d = NULL;
  RILL_TRY(setup(ctx, dx, &p, &up, &d));
  int64_t n = rill_tensor_numel(dy);
  if (ctx->attrs[RILL_DROPOUT_ATTR_IS_TEST].v.b)
    return rill_cuda_kernel_check(ctx, test_scale(dy, dx, p, up, d->stream), "dropout gradient launch");
  RILL_TRY(rill_kin_need(ctx, RILL_DROPOUT_GRAD_IN_MASK, 0, RILL_DTYPE_UINT8, &mask));
  if (!rill_dims_equal(&mask->dims, &dy->dims))
    return rill_kernel_error(ctx, "input Mask (%s) and Out@GRAD (%s) differ in shape",
                             rill_kin_name(ctx, RILL_DROPOUT_GRAD_IN_MASK, 0),
                             rill_kin_name(ctx, RILL_DROPOUT_GRAD_IN_OUT_GRAD, 0));
  return rill_cuda_kernel_check(ctx,
                                rill_cuda_masked_scale_f32(rill_tensor_ptr(dy), rill_tensor_ptr(mask), rill_tensor_ptr(dx),
                                                           n, (float)rill_dropout_train_scale(p, up), d->stream),
                                "dropout gradient launch");
}
