/* Quantization simulation kernels, float32, with Paddle's arithmetic to the bit:
 *   range = 2^(bit_length-1) - 1, inv(s) = 1 / (s <= 1e-30 ? s + 1e-6 : s)
 *   round_type 0: q = clamp(rint_even(range * inv(s) * x), -range - 1, range)
 *   round_type 1: q = round_half_away(range * inv(s) * clip(x, -s, s))
 *   dequantized: q * s / range
 * products evaluated left to right in float, as Paddle's Eigen expressions do. Scales,
 * states and accumulators are read before any output is written, so OutScale may be
 * InScale's variable (the usual layout of Paddle's programs). */
#include <math.h>
#include <string.h>

#include "framework/base/isa.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/quant_levels.h"

#if RILL_X86_SIMD
/* round_type 1 over the first multiple of 8 (AVX2) or 16 (AVX-512) of n: the count done.
 * Dequantized as the scalar loop does, (q * s) / bin. */
RILL_AVX2_BEGIN
static int64_t quant_span_away8(const float *x, float *out, int64_t n, float s, float binv_s, float bin, bool dq) {
  const __m256 sv = _mm256_set1_ps(s), ns = _mm256_set1_ps(-s), binv = _mm256_set1_ps(binv_s),
               sbin = _mm256_set1_ps(bin);
  int64_t i = 0;
  if (dq)
    for (; i + 8 <= n; i += 8)
      _mm256_storeu_ps(out + i,
                       _mm256_div_ps(_mm256_mul_ps(rill_quant8_away(_mm256_loadu_ps(x + i), sv, ns, binv), sv), sbin));
  else
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, rill_quant8_away(_mm256_loadu_ps(x + i), sv, ns, binv));
  return i;
}
RILL_AVX2_END
RILL_AVX512_BEGIN
static int64_t quant_span_away16(const float *x, float *out, int64_t n, float s, float binv_s, float bin, bool dq) {
  const __m512 sv = _mm512_set1_ps(s), ns = _mm512_set1_ps(-s), binv = _mm512_set1_ps(binv_s),
               sbin = _mm512_set1_ps(bin);
  int64_t i = 0;
  if (dq)
    for (; i + 16 <= n; i += 16)
      _mm512_storeu_ps(out + i,
                       _mm512_div_ps(_mm512_mul_ps(rill_quant16_away(_mm512_loadu_ps(x + i), sv, ns, binv), sv), sbin));
  else
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(out + i, rill_quant16_away(_mm512_loadu_ps(x + i), sv, ns, binv));
  return i;
}
RILL_AVX512_END
#endif

void rill_quant_span(const float *x, float *out, int64_t n, float s, float bin, int round_type, bool dq) {
  float inv = rill_quant_inv_scale(s);
  int64_t i = 0;
#if RILL_X86_SIMD
  if (round_type == 1 && rill_cpu_avx512()) i = quant_span_away16(x, out, n, s, bin * inv, bin, dq);
  else if (round_type == 1 && rill_cpu_avx2()) i = quant_span_away8(x, out, n, s, bin * inv, bin, dq);
  if (round_type == 1) {
    __m128 sv = _mm_set1_ps(s), ns = _mm_set1_ps(-s), binv = _mm_set1_ps(bin * inv), sbin = _mm_set1_ps(bin);
    if (dq)
      for (; i + 4 <= n; i += 4)
        _mm_storeu_ps(out + i, _mm_div_ps(_mm_mul_ps(rill_quant4_away(_mm_loadu_ps(x + i), sv, ns, binv), sv), sbin));
    else
      for (; i + 4 <= n; i += 4) _mm_storeu_ps(out + i, rill_quant4_away(_mm_loadu_ps(x + i), sv, ns, binv));
  }
#endif
  for (; i < n; i++) {
    float q = rill_quant_one(x[i], s, inv, bin, round_type);
    out[i] = dq ? q * s / bin : q;
  }
}

static float abs_max(const float *x, int64_t n) {
  float m = 0.0f;
  for (int64_t i = 0; i < n; i++) {
    float a = fabsf(x[i]);
    if (a > m) m = a;
  }
  return m;
}


/* Paddle's channel layout: axis 0 gives `outer` 1, axis 1 gives outer = dims[0]; each
 * (o, c) block holds `inner` contiguous elements. */
static void channel_split(const rill_tensor *x, int axis, int64_t *outer, int64_t *channels,
                          int64_t *inner) {
  *outer = 1;
  for (int i = 0; i < axis; i++) *outer *= x->dims.d[i];
  *channels = x->dims.d[axis];
  int64_t n = rill_tensor_numel(x);
  int64_t blocks = *outer * *channels;
  *inner = blocks > 0 ? n / blocks : 0;
}

/* One scale per channel of `axis`: quantize (and dequantize when dq). */
static void quant_channels(const rill_tensor *x, float *out, const float *scales, int axis,
                           float bin, int round_type, bool dq) {
  int64_t outer, ch, inner;
  channel_split(x, axis, &outer, &ch, &inner);
  const float *xp = rill_tensor_ptr((rill_tensor *)x);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t c = 0; c < ch; c++) {
      int64_t off = (o * ch + c) * inner;
      rill_quant_span(xp + off, out + off, inner, scales[c], bin, round_type, dq);
    }
}

static void channel_abs_max(const rill_tensor *x, int axis, float *scales) {
  int64_t outer, ch, inner;
  channel_split(x, axis, &outer, &ch, &inner);
  const float *xp = rill_tensor_ptr((rill_tensor *)x);
  for (int64_t c = 0; c < ch; c++) scales[c] = 0.0f;
  for (int64_t o = 0; o < outer; o++)
    for (int64_t c = 0; c < ch; c++) {
      float m = abs_max(xp + (o * ch + c) * inner, inner);
      if (m > scales[c]) scales[c] = m;
    }
}

/* The one value of a [1] scale-like input; `what` names it in errors. */
static rill_status *scalar_in(rill_kernel_ctx *ctx, size_t slot, float *v) {
  rill_tensor *t;
  RILL_TRY(rill_kin_need(ctx, slot, 0, RILL_DTYPE_FP32, &t));
  if (rill_tensor_numel(t) < 1)
    return rill_kernel_error(ctx, "input %s (%s) is empty, expected one value",
                             ctx->schema->inputs[slot].name, rill_kin_name(ctx, slot, 0));
  *v = *(const float *)rill_tensor_ptr(t);
  return NULL;
}

/* Writes v into output slot's [1] tensor when the output is there. */
static rill_status *scalar_out(rill_kernel_ctx *ctx, size_t slot, float v) {
  if (!rill_kout(ctx, slot, 0)) return NULL;
  rill_tensor *t;
  RILL_TRY(rill_kout_need(ctx, slot, 0, RILL_DTYPE_FP32, &t));
  if (rill_tensor_numel(t) < 1)
    return rill_kernel_error(ctx, "output %s (%s) has no room for the value",
                             ctx->schema->outputs[slot].name, rill_kout_name(ctx, slot, 0));
  *(float *)rill_tensor_ptr(t) = v;
  return NULL;
}

/* X and Out of the same shape. */
static rill_status *x_and_out(rill_kernel_ctx *ctx, size_t out_slot, rill_tensor **x, float **out) {
  rill_tensor *o;
  RILL_TRY(rill_kin_need(ctx, 0, 0, RILL_DTYPE_FP32, x));
  RILL_TRY(rill_kout_need(ctx, out_slot, 0, RILL_DTYPE_FP32, &o));
  RILL_TRY(rill_kout_check_dims(ctx, out_slot, 0, o, &(*x)->dims));
  *out = rill_tensor_ptr(o);
  return NULL;
}

/* ---- abs max ---- */

static rill_status *abs_max_kernel(rill_kernel_ctx *ctx, bool dq) {
  rill_tensor *x;
  float *out;
  RILL_TRY(x_and_out(ctx, RILL_FAKE_QUANTIZE_ABS_MAX_OUT_OUT, &x, &out));
  float bin = rill_quant_bin_count(ctx->attrs[RILL_FAKE_QUANTIZE_ABS_MAX_ATTR_BIT_LENGTH].v.i);
  int rt = ctx->attrs[RILL_FAKE_QUANTIZE_ABS_MAX_ATTR_ROUND_TYPE].v.i;
  int64_t n = rill_tensor_numel(x);
  float s = abs_max(rill_tensor_ptr(x), n);
  rill_quant_span(rill_tensor_ptr(x), out, n, s, bin, rt, dq);
  return scalar_out(ctx, RILL_FAKE_QUANTIZE_ABS_MAX_OUT_OUT_SCALE, s);
}

rill_status *rill_cpu_fake_quantize_abs_max_fp32(rill_kernel_ctx *ctx) {
  return abs_max_kernel(ctx, false);
}

rill_status *rill_cpu_fake_quantize_dequantize_abs_max_fp32(rill_kernel_ctx *ctx) {
  return abs_max_kernel(ctx, true);
}

rill_status *rill_cpu_fake_quantize_dequantize_grad_fp32(rill_kernel_ctx *ctx) {
  if (!rill_kout(ctx, RILL_FAKE_QUANTIZE_DEQUANTIZE_GRAD_OUT_X_GRAD, 0)) return NULL;
  rill_tensor *g, *dx;
  RILL_TRY(rill_kin_need(ctx, RILL_FAKE_QUANTIZE_DEQUANTIZE_GRAD_IN_OUT_GRAD, 0, RILL_DTYPE_FP32, &g));
  RILL_TRY(rill_kout_need(ctx, RILL_FAKE_QUANTIZE_DEQUANTIZE_GRAD_OUT_X_GRAD, 0, RILL_DTYPE_FP32, &dx));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_FAKE_QUANTIZE_DEQUANTIZE_GRAD_OUT_X_GRAD, 0, dx, &g->dims));
  if (rill_tensor_ptr(dx) != rill_tensor_ptr(g))
    memcpy(rill_tensor_ptr(dx), rill_tensor_ptr(g), (size_t)rill_tensor_numel(g) * sizeof(float));
  return NULL;
}

/* ---- range abs max ---- */

/* Training: the window OutScales[window_size] holds the abs maxima of the last steps,
 * step `it` at it % window_size. The scale is the last one (InScale) unless the new abs
 * max exceeds it, or the maximum just left the window (then the window's max over its
 * filled part; Paddle leaves the empty window at step 0 undefined, here it is the new
 * abs max). Iter is only read: an increment op of the program advances it. */
static rill_status *range_train(rill_kernel_ctx *ctx, const rill_tensor *x, float *s) {
  rill_tensor *iter, *win;
  RILL_TRY(rill_kin_need(ctx, RILL_FAKE_QUANTIZE_RANGE_ABS_MAX_IN_ITER, 0, RILL_DTYPE_INT64, &iter));
  if (!rill_kout(ctx, RILL_FAKE_QUANTIZE_RANGE_ABS_MAX_OUT_OUT_SCALES, 0))
    return rill_kernel_error(ctx, "training (is_test false) needs output OutScales");
  RILL_TRY(rill_kout_need(ctx, RILL_FAKE_QUANTIZE_RANGE_ABS_MAX_OUT_OUT_SCALES, 0, RILL_DTYPE_FP32, &win));
  int64_t w = ctx->attrs[RILL_FAKE_QUANTIZE_RANGE_ABS_MAX_ATTR_WINDOW_SIZE].v.i;
  if (rill_tensor_numel(win) != w)
    return rill_kernel_error(ctx, "output OutScales (%s) holds %lld values, window_size is %lld",
                             rill_kout_name(ctx, RILL_FAKE_QUANTIZE_RANGE_ABS_MAX_OUT_OUT_SCALES, 0),
                             (long long)rill_tensor_numel(win), (long long)w);
  if (rill_tensor_numel(iter) < 1)
    return rill_kernel_error(ctx, "input Iter (%s) is empty",
                             rill_kin_name(ctx, RILL_FAKE_QUANTIZE_RANGE_ABS_MAX_IN_ITER, 0));
  int64_t it = *(const int64_t *)rill_tensor_ptr(iter);
  if (it < 0)
    return rill_kernel_error(ctx, "input Iter (%s) is %lld, must be >= 0",
                             rill_kin_name(ctx, RILL_FAKE_QUANTIZE_RANGE_ABS_MAX_IN_ITER, 0), (long long)it);
  float *arr = rill_tensor_ptr(win);
  float cur = abs_max(rill_tensor_ptr((rill_tensor *)x), rill_tensor_numel(x));
  int64_t idx = it % w;
  float removed = arr[idx];
  arr[idx] = cur;
  if (*s < cur) {
    *s = cur;
  } else if (fabs((double)(removed - *s)) < 1e-6) {
    int64_t size = it > w ? w : it;
    *s = abs_max(arr, size > 0 ? size : 1);
  }
  return NULL;
}

rill_status *rill_cpu_fake_quantize_range_abs_max_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *x;
  float *out, s;
  RILL_TRY(scalar_in(ctx, RILL_FAKE_QUANTIZE_RANGE_ABS_MAX_IN_IN_SCALE, &s));
  RILL_TRY(x_and_out(ctx, RILL_FAKE_QUANTIZE_RANGE_ABS_MAX_OUT_OUT, &x, &out));
  if (!ctx->attrs[RILL_FAKE_QUANTIZE_RANGE_ABS_MAX_ATTR_IS_TEST].v.b) RILL_TRY(range_train(ctx, x, &s));
  float bin = rill_quant_bin_count(ctx->attrs[RILL_FAKE_QUANTIZE_RANGE_ABS_MAX_ATTR_BIT_LENGTH].v.i);
  int rt = ctx->attrs[RILL_FAKE_QUANTIZE_RANGE_ABS_MAX_ATTR_ROUND_TYPE].v.i;
  rill_quant_span(rill_tensor_ptr(x), out, rill_tensor_numel(x), s, bin, rt, false);
  return scalar_out(ctx, RILL_FAKE_QUANTIZE_RANGE_ABS_MAX_OUT_OUT_SCALE, s);
}

/* ---- moving average abs max ---- */

static rill_status *mavg_kernel(rill_kernel_ctx *ctx, bool dq) {
  bool is_test = ctx->attrs[RILL_FAKE_QUANTIZE_MOVING_AVERAGE_ABS_MAX_ATTR_IS_TEST].v.b;
  float bin = rill_quant_bin_count(ctx->attrs[RILL_FAKE_QUANTIZE_MOVING_AVERAGE_ABS_MAX_ATTR_BIT_LENGTH].v.i);
  int rt = ctx->attrs[RILL_FAKE_QUANTIZE_MOVING_AVERAGE_ABS_MAX_ATTR_ROUND_TYPE].v.i;
  float rate = ctx->attrs[RILL_FAKE_QUANTIZE_MOVING_AVERAGE_ABS_MAX_ATTR_MOVING_RATE].v.f;
  float s, state = 0.0f, accum = 0.0f;
  RILL_TRY(scalar_in(ctx, RILL_FAKE_QUANTIZE_MOVING_AVERAGE_ABS_MAX_IN_IN_SCALE, &s));
  bool have_state = rill_kin(ctx, RILL_FAKE_QUANTIZE_MOVING_AVERAGE_ABS_MAX_IN_IN_STATE, 0) != NULL;
  bool have_accum = rill_kin(ctx, RILL_FAKE_QUANTIZE_MOVING_AVERAGE_ABS_MAX_IN_IN_ACCUM, 0) != NULL;
  if (have_state) RILL_TRY(scalar_in(ctx, RILL_FAKE_QUANTIZE_MOVING_AVERAGE_ABS_MAX_IN_IN_STATE, &state));
  if (have_accum) RILL_TRY(scalar_in(ctx, RILL_FAKE_QUANTIZE_MOVING_AVERAGE_ABS_MAX_IN_IN_ACCUM, &accum));
  rill_tensor *x;
  float *out;
  RILL_TRY(x_and_out(ctx, RILL_FAKE_QUANTIZE_MOVING_AVERAGE_ABS_MAX_OUT_OUT, &x, &out));
  int64_t n = rill_tensor_numel(x);
  if (!is_test) {
    if (!have_state || !have_accum)
      return rill_kernel_error(ctx, "training (is_test false) needs inputs InState and InAccum");
    float cur = abs_max(rill_tensor_ptr(x), n);
    state = rate * state + 1.0f;
    accum = rate * accum + cur;
    s = accum / state;
  }
  rill_quant_span(rill_tensor_ptr(x), out, n, s, bin, rt, dq);
  RILL_TRY(scalar_out(ctx, RILL_FAKE_QUANTIZE_MOVING_AVERAGE_ABS_MAX_OUT_OUT_SCALE, s));
  RILL_TRY(scalar_out(ctx, RILL_FAKE_QUANTIZE_MOVING_AVERAGE_ABS_MAX_OUT_OUT_STATE, state));
  return scalar_out(ctx, RILL_FAKE_QUANTIZE_MOVING_AVERAGE_ABS_MAX_OUT_OUT_ACCUM, accum);
}

rill_status *rill_cpu_fake_quantize_moving_average_abs_max_fp32(rill_kernel_ctx *ctx) {
  return mavg_kernel(ctx, false);
}

rill_status *rill_cpu_fake_quantize_dequantize_moving_average_abs_max_fp32(rill_kernel_ctx *ctx) {
  return mavg_kernel(ctx, true);
}

/* ---- dequantize ---- */

rill_status *rill_cpu_fake_dequantize_max_abs_fp32(rill_kernel_ctx *ctx) {
  float s;
  RILL_TRY(scalar_in(ctx, RILL_FAKE_DEQUANTIZE_MAX_ABS_IN_SCALE, &s));
  rill_tensor *x;
  float *out;
  RILL_TRY(x_and_out(ctx, RILL_FAKE_DEQUANTIZE_MAX_ABS_OUT_OUT, &x, &out));
  float r = ctx->attrs[RILL_FAKE_DEQUANTIZE_MAX_ABS_ATTR_MAX_RANGE].v.f;
  const float *xp = rill_tensor_ptr(x);
  int64_t n = rill_tensor_numel(x);
  for (int64_t i = 0; i < n; i++) out[i] = xp[i] * s / r;
  return NULL;
}

/* A per-channel scale input holding at least `need` values. */
static rill_status *scales_in(rill_kernel_ctx *ctx, size_t slot, size_t i, int64_t need,
                              const float **p) {
  rill_tensor *t;
  RILL_TRY(rill_kin_need(ctx, slot, i, RILL_DTYPE_FP32, &t));
  if (rill_tensor_numel(t) < need)
    return rill_kernel_error(ctx, "input %s (%s) holds %lld scales, needs %lld",
                             ctx->schema->inputs[slot].name, rill_kin_name(ctx, slot, i),
                             (long long)rill_tensor_numel(t), (long long)need);
  *p = rill_tensor_ptr(t);
  return NULL;
}

rill_status *rill_cpu_fake_channel_wise_dequantize_max_abs_fp32(rill_kernel_ctx *ctx) {
  const rill_attr_value *qb = &ctx->attrs[RILL_FAKE_CHANNEL_WISE_DEQUANTIZE_MAX_ABS_ATTR_QUANT_BITS];
  size_t ns = ctx->nin[RILL_FAKE_CHANNEL_WISE_DEQUANTIZE_MAX_ABS_IN_SCALES];
  rill_tensor *x;
  float *out;
  RILL_TRY(x_and_out(ctx, RILL_FAKE_CHANNEL_WISE_DEQUANTIZE_MAX_ABS_OUT_OUT, &x, &out));
  const float *xp = rill_tensor_ptr(x), *s0, *s1;
  int axis = ns == 1 ? ctx->attrs[RILL_FAKE_CHANNEL_WISE_DEQUANTIZE_MAX_ABS_ATTR_QUANT_AXIS].v.i
                     : ctx->attrs[RILL_FAKE_CHANNEL_WISE_DEQUANTIZE_MAX_ABS_ATTR_X_NUM_COL_DIMS].v.i;
  int64_t outer, ch, inner;
  channel_split(x, axis, &outer, &ch, &inner);
  RILL_TRY(scales_in(ctx, RILL_FAKE_CHANNEL_WISE_DEQUANTIZE_MAX_ABS_IN_SCALES, 0, ch, &s0));
  float r0 = rill_quant_bin_count(qb->list.ints[0]);
  if (ns == 1) {
    for (int64_t o = 0; o < outer; o++)
      for (int64_t c = 0; c < ch; c++) {
        int64_t off = (o * ch + c) * inner;
        for (int64_t k = 0; k < inner; k++) out[off + k] = xp[off + k] * s0[c] / r0;
      }
    return NULL;
  }
  RILL_TRY(scales_in(ctx, RILL_FAKE_CHANNEL_WISE_DEQUANTIZE_MAX_ABS_IN_SCALES, 1, 1, &s1));
  float r = r0 * rill_quant_bin_count(qb->list.ints[1]);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t c = 0; c < ch; c++) {
      int64_t off = (o * ch + c) * inner;
      for (int64_t k = 0; k < inner; k++) out[off + k] = xp[off + k] * s0[c] * s1[0] / r;
    }
  return NULL;
}

/* ---- channel-wise quantize ---- */

rill_status *rill_cpu_fake_channel_wise_quantize_abs_max_fp32(rill_kernel_ctx *ctx) {
  int axis = ctx->attrs[RILL_FAKE_CHANNEL_WISE_QUANTIZE_ABS_MAX_ATTR_QUANT_AXIS].v.i;
  float bin = rill_quant_bin_count(ctx->attrs[RILL_FAKE_CHANNEL_WISE_QUANTIZE_ABS_MAX_ATTR_BIT_LENGTH].v.i);
  int rt = ctx->attrs[RILL_FAKE_CHANNEL_WISE_QUANTIZE_ABS_MAX_ATTR_ROUND_TYPE].v.i;
  rill_tensor *x, *os;
  float *out;
  RILL_TRY(x_and_out(ctx, RILL_FAKE_CHANNEL_WISE_QUANTIZE_ABS_MAX_OUT_OUT, &x, &out));
  RILL_TRY(rill_kout_need(ctx, RILL_FAKE_CHANNEL_WISE_QUANTIZE_ABS_MAX_OUT_OUT_SCALE, 0,
                          RILL_DTYPE_FP32, &os));
  int64_t ch = x->dims.d[axis];
  if (rill_tensor_numel(os) != ch)
    return rill_kernel_error(ctx, "output OutScale (%s) holds %lld values, X has %lld channels",
                             rill_kout_name(ctx, RILL_FAKE_CHANNEL_WISE_QUANTIZE_ABS_MAX_OUT_OUT_SCALE, 0),
                             (long long)rill_tensor_numel(os), (long long)ch);
  float *scales = rill_tensor_ptr(os);
  /* is_test: OutScale holds the stored scales (a persistable of the program) */
  if (!ctx->attrs[RILL_FAKE_CHANNEL_WISE_QUANTIZE_ABS_MAX_ATTR_IS_TEST].v.b) channel_abs_max(x, axis, scales);
  quant_channels(x, out, scales, axis, bin, rt, false);
  return NULL;
}

/* ---- quantize_linear, dequantize_linear ---- */

static rill_status *linear_kernel(rill_kernel_ctx *ctx, bool quantize) {
  int axis = ctx->attrs[RILL_QUANTIZE_LINEAR_ATTR_QUANT_AXIS].v.i;
  float bin = rill_quant_bin_count(ctx->attrs[RILL_QUANTIZE_LINEAR_ATTR_BIT_LENGTH].v.i);
  int rt = ctx->attrs[RILL_QUANTIZE_LINEAR_ATTR_ROUND_TYPE].v.i;
  if (quantize && !ctx->attrs[RILL_QUANTIZE_LINEAR_ATTR_IS_TEST].v.b)
    return rill_kernel_error(ctx, "the training form (is_test false) is not implemented");
  rill_tensor *x;
  float *out;
  RILL_TRY(x_and_out(ctx, RILL_QUANTIZE_LINEAR_OUT_Y, &x, &out));
  int64_t n = rill_tensor_numel(x);
  const float *xp = rill_tensor_ptr(x), *s;
  if (quantize && ctx->attrs[RILL_QUANTIZE_LINEAR_ATTR_ONLY_OBSERVER].v.b) {
    if (out != xp) memcpy(out, xp, (size_t)n * sizeof(float));
    return NULL;
  }
  int64_t ch = axis < 0 ? 1 : x->dims.d[axis];
  RILL_TRY(scales_in(ctx, RILL_QUANTIZE_LINEAR_IN_SCALE, 0, ch, &s));
  if (quantize) {
    if (axis < 0)
      rill_quant_span(xp, out, n, s[0], bin, rt, false);
    else
      quant_channels(x, out, s, axis, bin, rt, false);
    return NULL;
  }
  if (axis < 0) {
    for (int64_t i = 0; i < n; i++) out[i] = xp[i] * s[0] / bin;
    return NULL;
  }
  int64_t outer, c_n, inner;
  channel_split(x, axis, &outer, &c_n, &inner);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t c = 0; c < c_n; c++) {
      int64_t off = (o * c_n + c) * inner;
      for (int64_t k = 0; k < inner; k++) out[off + k] = xp[off + k] * s[c] / bin;
    }
  return NULL;
}

rill_status *rill_cpu_quantize_linear_fp32(rill_kernel_ctx *ctx) { return linear_kernel(ctx, true); }

rill_status *rill_cpu_dequantize_linear_fp32(rill_kernel_ctx *ctx) { return linear_kernel(ctx, false); }
