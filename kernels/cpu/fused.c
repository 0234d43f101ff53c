/* Kernels of the fused inference ops. conv2d_fusion runs the conv2d kernel with an
 * epilogue (bias, ResidualData, activation: conv_epi.h) that each part of the conv
 * applies to its own outputs. fc runs OpenBLAS GEMM as mul does, then one pass over the
 * output adding the bias and applying the activation; with one row (batch 1) and a wide
 * W it uses a matrix-vector product, which skips GEMM's packing of W. A W that cannot
 * change (a predictor's weight) is packed for the GEMM once and kept with its buffer
 * (rill_sgemm_weight). */
#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <string.h>

#include "kernels/cpu/conv_epi.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/sgemm.h"
#include "kernels/cpu/vexp.h"
#include "operators/fused_act.h"

/* Below this many output columns OpenBLAS's sgemm beats its sgemv at M = 1 (the
 * row-major transposed GEMV runs K short axpys): bench/bench_gemv measures both. */
#define RILL_FC_GEMV_MIN_N 160

/* Rows of [m, n] with a per-column bias: the same pass, columns innermost. */
static void row_bias_act_f32(float *out, const float *bias, int64_t m, int64_t n, rill_fused_act act) {
  for (int64_t r = 0; r < m; r++) {
    float *p = out + r * n;
    switch (act) {
      case RILL_FUSED_RELU:
        for (int64_t j = 0; j < n; j++) {
          float v = p[j] + (bias ? bias[j] : 0.0f);
          p[j] = v < 0.0f ? 0.0f : v; /* NaN comes through */
        }
        break;
      case RILL_FUSED_IDENTITY:
        if (bias)
          for (int64_t j = 0; j < n; j++) p[j] += bias[j];
        break;
      case RILL_FUSED_SIGMOID:
      case RILL_FUSED_TANH:
        if (bias)
          for (int64_t j = 0; j < n; j++) p[j] += bias[j];
        if (act == RILL_FUSED_SIGMOID) rill_sigmoid_span_f32(p, p, n);
        else rill_tanh_span_f32(p, p, n);
        break;
      default:
        for (int64_t j = 0; j < n; j++) p[j] = rill_epi_act(p[j] + (bias ? bias[j] : 0.0f), act);
    }
  }
}

rill_status *rill_cpu_fc_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *x, *w, *out, *b = NULL;
  RILL_TRY(rill_kin_need(ctx, 0, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kin_need(ctx, 1, 0, RILL_DTYPE_FP32, &w));
  if (rill_kin(ctx, 2, 0)) RILL_TRY(rill_kin_need(ctx, 2, 0, RILL_DTYPE_FP32, &b));
  RILL_TRY(rill_kout_need(ctx, 0, 0, RILL_DTYPE_FP32, &out));
  rill_fused_act act = rill_fused_act_of(&ctx->attrs[RILL_FC_ATTR_ACTIVATION_TYPE], true);
  int xn = ctx->attrs[RILL_FC_ATTR_IN_NUM_COL_DIMS].v.i;
  if (w->dims.n != 2 || xn < 1 || xn >= x->dims.n)
    return rill_kernel_error(ctx, "Input (%s, rank %d) and W (%s, rank %d) do not fit in_num_col_dims %d",
                             rill_kin_name(ctx, 0, 0), (int)x->dims.n, rill_kin_name(ctx, 1, 0),
                             (int)w->dims.n, xn);
  int64_t m = rill_dims_prod(&x->dims, 0, xn), k = rill_dims_prod(&x->dims, xn, x->dims.n);
  int64_t n = w->dims.d[1];
  if (k != w->dims.d[0])
    return rill_kernel_error(ctx, "Input (%s) flattens to %lld columns but W (%s) has %lld rows",
                             rill_kin_name(ctx, 0, 0), (long long)k, rill_kin_name(ctx, 1, 0),
                             (long long)w->dims.d[0]);
  if (b && rill_tensor_numel(b) != n)
    return rill_kernel_error(ctx, "Bias (%s) holds %lld values, W (%s) has %lld columns",
                             rill_kin_name(ctx, 2, 0), (long long)rill_tensor_numel(b),
                             rill_kin_name(ctx, 1, 0), (long long)n);
  if (m > INT_MAX || k > INT_MAX || n > INT_MAX)
    return rill_kernel_error(ctx, "matrix of %lld x %lld x %lld is too large for BLAS", (long long)m,
                             (long long)k, (long long)n);
  rill_dims od;
  od.n = xn + 1;
  for (int i = 0; i < xn; i++) od.d[i] = x->dims.d[i];
  od.d[xn] = n;
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &od));
  size_t obytes = (size_t)(m * n) * sizeof(float);
  if (!obytes) return NULL;
  const float *xp = rill_tensor_ptr(x), *wp = rill_tensor_ptr(w);
  float *op = rill_tensor_ptr(out);
  if (rill_overlaps(op, obytes, xp, rill_tensor_nbytes(x)) || rill_overlaps(op, obytes, wp, rill_tensor_nbytes(w)))
    return rill_kernel_error(ctx, "output Out (%s) must not share memory with its inputs",
                             rill_kout_name(ctx, 0, 0));
  bool gemv = m == 1 && n >= RILL_FC_GEMV_MIN_N;
  int64_t threads = rill_dev_threads(ctx->dev);
  if (k == 0) {
    memset(op, 0, obytes);
  } else if (m == 1 && rill_sgemv_row(ctx->dev, threads, xp, wp, op, k, n)) {
    /* one row on rill's own vector blocks (no AVX2: OpenBLAS below) */
  } else if (gemv || rill_sgemm_has_kernels() || !rill_cpu_sgemm_blocks(ctx->dev, threads, m, n, k, xp, wp, op)) {
    if (gemv && k * n >= RILL_BLAS_THREADED_GEMV)
      rill_dev_quiet(ctx->dev); /* OpenBLAS may run its threads (rill_sgemm quiets them itself) */
    if (gemv)
      cblas_sgemv(CblasRowMajor, CblasTrans, (int)k, (int)n, 1.0f, wp, (int)n, xp, 1, 0.0f, op, 1);
    else if (!rill_sgemm_weight(ctx->dev, threads, m, n, k, 1.0f, xp, k, w, 0.0f, op, n))
      rill_sgemm(ctx->dev, threads, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, xp, k, wp, n, 0.0f, op, n);
  }
  row_bias_act_f32(op, b ? rill_tensor_ptr(b) : NULL, m, n, act);
  return NULL;
}

rill_status *rill_cpu_conv2d_fusion_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *b, *out, *res = NULL;
  RILL_TRY(rill_kin_need(ctx, 2, 0, RILL_DTYPE_FP32, &b));
  if (rill_kin(ctx, 3, 0)) RILL_TRY(rill_kin_need(ctx, 3, 0, RILL_DTYPE_FP32, &res));
  RILL_TRY(rill_kout_need(ctx, 0, 0, RILL_DTYPE_FP32, &out));
  /* The conv checks the output's shape against its geometry; these hold for that shape. */
  if (out->dims.n == 4) {
    int64_t ch = out->dims.d[1];
    if (rill_tensor_numel(b) != ch)
      return rill_kernel_error(ctx, "Bias (%s) holds %lld values for %lld output channels",
                               rill_kin_name(ctx, 2, 0), (long long)rill_tensor_numel(b), (long long)ch);
    if (res && !rill_dims_equal(&res->dims, &out->dims))
      return rill_kernel_error(ctx, "ResidualData (%s) does not have the output's shape",
                               rill_kin_name(ctx, 3, 0));
  }
  size_t nact = 0;
  while (nact < ctx->schema->nattrs && strcmp(ctx->schema->attrs[nact].name, "activation") != 0) nact++;
  rill_conv_epi epi = {.bias = rill_tensor_ptr(b), .res = res ? rill_tensor_ptr(res) : NULL,
                       .act = nact < ctx->schema->nattrs ? rill_fused_act_of(&ctx->attrs[nact], false)
                                                         : RILL_FUSED_IDENTITY};
  /* The convolution itself: the conv2d kernel on this context without Bias and
   * ResidualData (the attributes start with conv2d's, in its order), the bias, residual
   * and activation applied by it as it writes each part of the output. */
  size_t nin[4] = {ctx->nin[0], ctx->nin[1], 0, 0};
  rill_kernel_ctx conv = *ctx;
  conv.nin = nin;
  return rill_cpu_conv2d_epi_fp32(&conv, &epi);
}
