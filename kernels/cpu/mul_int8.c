/* mul_int8: the product of a matrix of levels and a 2-D weight of levels in int8 with
 * int32 sums, dequantized as the dequantizer it replaces (operators/mul_int8.c). It runs
 * as the 1 x 1 conv of one image of K channels and B pixels: Out^T [N, B] = Y^T [N, K] x
 * X^T [K, B], the weight packed transposed (kept with an immutable buffer), X transposed
 * for B > 1, and Out^T transposed back. With InScale (a fake quantize op folded in) X
 * holds floats, quantized in the pass that converts them to int8. */
#include "framework/base/alloc.h"
#include "kernels/cpu/igemm.h"
#include "kernels/cpu/kernels.h"

rill_status *rill_cpu_mul_int8_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *x = NULL, *w = NULL, *y = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_MUL_INT8_IN_X, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kin_need(ctx, RILL_MUL_INT8_IN_Y, 0, RILL_DTYPE_FP32, &w));
  RILL_TRY(rill_kout_need(ctx, RILL_MUL_INT8_OUT_OUT, 0, RILL_DTYPE_FP32, &y));
  int xn = ctx->attrs[RILL_MUL_INT8_ATTR_X_NUM_COL_DIMS].v.i;
  if (xn < 1 || xn >= x->dims.n || w->dims.n != 2)
    return rill_kernel_error(ctx, "X (%s) of rank %d with x_num_col_dims %d and Y (%s) of rank %d: "
                             "needs 1 <= x_num_col_dims < rank of X and Y of rank 2",
                             rill_kin_name(ctx, 0, 0), x->dims.n, xn, rill_kin_name(ctx, 1, 0), w->dims.n);
  int64_t b = 1, k = w->dims.d[0], n = w->dims.d[1];
  for (int i = 0; i < xn; i++) b *= x->dims.d[i];
  if (b * k != rill_tensor_numel(x))
    return rill_kernel_error(ctx, "X (%s) does not flatten to rows of %lld, the rows of Y (%s)",
                             rill_kin_name(ctx, 0, 0), (long long)k, rill_kin_name(ctx, 1, 0));
  if (k > RILL_I8_MAX_K)
    return rill_kernel_error(ctx, "Y (%s) sums %lld products per output, more than int32 holds exactly (%d)",
                             rill_kin_name(ctx, 1, 0), (long long)k, RILL_I8_MAX_K);
  rill_i8_out out = {.f32 = NULL};
  RILL_TRY(rill_i8_dequant_of(ctx, RILL_MUL_INT8_IN_SCALE, RILL_MUL_INT8_IN_FILTER_SCALE, n,
                              ctx->attrs[RILL_MUL_INT8_ATTR_MAX_RANGE].v.f, &out));
  rill_dims od = {xn + 1, {0}};
  for (int i = 0; i < xn; i++) od.d[i] = x->dims.d[i];
  od.d[xn] = n;
  RILL_TRY(rill_kout_check_dims(ctx, RILL_MUL_INT8_OUT_OUT, 0, y, &od));
  if (b == 0 || n == 0) return NULL;
  int8_t *xq = NULL, *xt = NULL;
  float *yt = NULL;
  if (rill_kin(ctx, RILL_MUL_INT8_IN_IN_SCALE, 0)) { /* a fake quantize op folded in: X holds floats */
    rill_i8_quant q;
    RILL_TRY(rill_i8_quant_of(ctx, RILL_MUL_INT8_IN_IN_SCALE, ctx->attrs[RILL_MUL_INT8_ATTR_BIT_LENGTH].v.i,
                              ctx->attrs[RILL_MUL_INT8_ATTR_ROUND_TYPE].v.i, &q));
    int64_t bad = 0;
    xq = rill_aligned_alloc((size_t)(b * k) + 1, 64);
    if (!xq) return rill_oom();
    if (!rill_i8_quant_to_i8(rill_tensor_ptr(x), b * k, &q, xq, &bad)) {
      rill_free(xq);
      return rill_i8_quant_error(ctx, RILL_MUL_INT8_IN_X, RILL_MUL_INT8_IN_IN_SCALE, x, &q, bad);
    }
  } else {
    RILL_TRY(rill_i8_input_levels(ctx, RILL_MUL_INT8_IN_X, x, &xq));
  }
  rill_i8_weights local = {0};
  const rill_i8_weights *pw = NULL;
  rill_status *st = rill_i8_weights_for(ctx, RILL_MUL_INT8_IN_Y, w, n, k, 1, true, &local, &pw);
  if (!st && b > 1) {
    xt = rill_aligned_alloc((size_t)(b * k), 64);
    yt = rill_malloc((size_t)(b * n) * sizeof *yt);
    if (!xt || !yt) st = rill_oom();
    for (int64_t r = 0; !st && r < b; r++)
      for (int64_t c = 0; c < k; c++) xt[c * b + r] = xq[r * k + c];
  }
  float *dst = rill_tensor_ptr(y);
  out.f32 = b > 1 ? yt : dst;
  rill_conv_geom g = {.n = 1, .c = k, .h = 1, .w = b, .m = n, .oh = 1, .ow = b, .kh = 1, .kw = 1,
                      .groups = 1, .sh = 1, .sw = 1, .dh = 1, .dw = 1};
  if (!st && !rill_i8_conv(ctx->dev, rill_dev_threads(ctx->dev), rill_i8_path_for_cpu(), &g, b > 1 ? xt : xq, pw,
                           &out))
    st = rill_oom();
  for (int64_t r = 0; !st && b > 1 && r < b; r++)
    for (int64_t c = 0; c < n; c++) dst[r * n + c] = yt[c * b + r];
  rill_i8_weights_free(&local);
  rill_free(xq);
  rill_free(xt);
  rill_free(yt);
  return st;
}
