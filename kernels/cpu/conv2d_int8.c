/* conv2d_int8: the convolution of integer levels in int8 with int32 sums, dequantized
 * as fake_dequantize_max_abs does (operators/conv2d_int8.c, kernels/cpu/igemm.h). A
 * filter whose buffer is immutable (a predictor's weights) is packed once and kept with
 * the buffer; any other is packed on each call. With InScale the input is floats that
 * the parts quantize as they unfold them (a fake quantize op folded in); a level outside
 * int8 is then an error after the conv, the output unspecified. */
#include "framework/base/alloc.h"
#include "kernels/cpu/igemm.h"
#include "kernels/cpu/kernels.h"

rill_status *rill_cpu_conv2d_int8_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *x = NULL, *f = NULL, *y = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_CONV2D_INT8_IN_INPUT, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kin_need(ctx, RILL_CONV2D_INT8_IN_FILTER, 0, RILL_DTYPE_FP32, &f));
  RILL_TRY(rill_kout_need(ctx, RILL_CONV2D_INT8_OUT_OUTPUT, 0, RILL_DTYPE_FP32, &y));
  if (!rill_nn_is_nchw(&ctx->attrs[RILL_CONV_FORMAT]))
    return rill_error(RILL_UNIMPLEMENTED, "conv2d_int8: only NCHW is supported");
  rill_conv_geom g;
  char err[256];
  if (!rill_nn_conv_geom(ctx->attrs, false, &x->dims, &f->dims, &g, err, sizeof err))
    return rill_kernel_error(ctx, "Input (%s), Filter (%s): %s", rill_kin_name(ctx, 0, 0),
                             rill_kin_name(ctx, 1, 0), err);
  rill_i8_out out = {.f32 = rill_tensor_ptr(y)};
  RILL_TRY(rill_i8_dequant_of(ctx, RILL_CONV2D_INT8_IN_SCALE, RILL_CONV2D_INT8_IN_FILTER_SCALE, g.m,
                              ctx->attrs[RILL_CONV2D_INT8_ATTR_MAX_RANGE].v.f, &out));
  int64_t k = g.c / g.groups * g.kh * g.kw;
  if (k > RILL_I8_MAX_K)
    return rill_kernel_error(ctx, "Filter (%s) sums %lld products per output, more than int32 holds "
                             "exactly (%d)", rill_kin_name(ctx, 1, 0), (long long)k, RILL_I8_MAX_K);
  rill_dims od = {4, {g.n, g.m, g.oh, g.ow}};
  RILL_TRY(rill_kout_check_dims(ctx, RILL_CONV2D_INT8_OUT_OUTPUT, 0, y, &od));
  if (rill_overlaps(rill_tensor_ptr(y), rill_tensor_nbytes(y), rill_tensor_ptr(x), rill_tensor_nbytes(x)))
    return rill_kernel_error(ctx, "output Output (%s) must not share memory with Input (%s)",
                             rill_kout_name(ctx, 0, 0), rill_kin_name(ctx, 0, 0));
  /* With InScale (a fake quantize op folded in), each part quantizes the floats it
   * unfolds; else the levels are checked here and converted as each part unfolds them. */
  bool fold = rill_kin(ctx, RILL_CONV2D_INT8_IN_IN_SCALE, 0) != NULL;
  rill_i8_quant q;
  if (fold)
    RILL_TRY(rill_i8_quant_of(ctx, RILL_CONV2D_INT8_IN_IN_SCALE, ctx->attrs[RILL_CONV2D_INT8_ATTR_BIT_LENGTH].v.i,
                              ctx->attrs[RILL_CONV2D_INT8_ATTR_ROUND_TYPE].v.i, &q));
  else
    RILL_TRY(rill_i8_input_check(ctx, RILL_CONV2D_INT8_IN_INPUT, x));
  rill_i8_weights local = {0};
  const rill_i8_weights *w = NULL;
  rill_status *st = rill_i8_weights_for(ctx, RILL_CONV2D_INT8_IN_FILTER, f, g.m, k, g.groups, false, &local, &w);
  int64_t threads = rill_dev_threads(ctx->dev);
  bool bad = false;
  if (!st && !(fold ? rill_i8_conv_quant(ctx->dev, threads, rill_i8_path_for_cpu(), &g, rill_tensor_ptr(x), &q, w,
                                         &out, &bad)
                    : rill_i8_conv_levels(ctx->dev, threads, rill_i8_path_for_cpu(), &g, rill_tensor_ptr(x), w, &out)))
    st = rill_oom();
  rill_i8_weights_free(&local);
  if (!st && bad) { /* the first value whose level is outside int8, for the message */
    int64_t n = rill_tensor_numel(x), at = 0;
    int8_t *tmp = rill_aligned_alloc((size_t)n + 1, 64);
    if (!tmp) return rill_oom();
    rill_i8_quant_to_i8(rill_tensor_ptr(x), n, &q, tmp, &at);
    rill_free(tmp);
    st = rill_i8_quant_error(ctx, RILL_CONV2D_INT8_IN_INPUT, RILL_CONV2D_INT8_IN_IN_SCALE, x, &q, at);
  }
  return st;
}
