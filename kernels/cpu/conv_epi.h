/* What conv2d_fusion applies to its conv's output (kernels/cpu/conv2d.c, fused.c):
 * y = act((y + res) + bias[c]) per element, in that order, so that applying it inside a
 * kernel (on a block still in registers or cache) or in a pass over the whole output
 * gives the same bits. */
#ifndef RILL_KERNELS_CPU_CONV_EPI_H
#define RILL_KERNELS_CPU_CONV_EPI_H

#include <math.h>
#include <stdint.h>

#include "framework/base/isa.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/vexp.h"
#include "operators/fused_act.h"

typedef struct rill_conv_epi {
  const float *bias; /* [m], or NULL for none */
  const float *res;  /* the output's shape, or NULL for none */
  rill_fused_act act;
} rill_conv_epi;

static inline float rill_epi_act(float v, rill_fused_act act) {
  switch (act) {
    case RILL_FUSED_RELU: return v < 0.0f ? 0.0f : v;
    case RILL_FUSED_RELU6: return v < 0.0f ? 0.0f : (v > 6.0f ? 6.0f : v);
    case RILL_FUSED_SIGMOID: return rill_sigmoid1(v);
    case RILL_FUSED_TANH: return rill_tanh1(v);
    default: return v;
  }
}

#if RILL_X86_SIMD
RILL_AVX2_BEGIN
/* rill_epi_span's relu, relu6 and identity on 8 lanes; returns how many it did. */
static inline int64_t rill_epi_lanes_avx2(float *p, int64_t n, float b, bool has_b, rill_fused_act act) {
  int64_t i = 0;
  __m256 vb = _mm256_set1_ps(b), lo = _mm256_setzero_ps(), hi = _mm256_set1_ps(6.0f);
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(p + i);
    if (has_b) v = _mm256_add_ps(v, vb);
    if (act != RILL_FUSED_IDENTITY) v = _mm256_max_ps(lo, v);
    if (act == RILL_FUSED_RELU6) v = _mm256_min_ps(hi, v);
    _mm256_storeu_ps(p + i, v);
  }
  return i;
}
RILL_AVX2_END
#endif

/* p[i] = act((p[i] + r[i]) + b) for i < n (r may be NULL: no residual; has_b false: no
 * bias). relu, relu6 and the identity run 8 at a time where the CPU has AVX2: relu as
 * max(0, v) and relu6 as min(6, max(0, v)), v the second operand so that a NaN comes
 * through as the scalar selects let it (maxps/minps return their second operand when
 * either is NaN); sigmoid and tanh with vexp.h's spans (the same bits on every path). */
static inline void rill_epi_span(float *p, const float *r, int64_t n, float b, bool has_b,
                                 rill_fused_act act) {
  if (r)
    for (int64_t i = 0; i < n; i++) p[i] += r[i];
  if (!has_b && act == RILL_FUSED_IDENTITY) return;
  int64_t i = 0;
  if (act == RILL_FUSED_RELU || act == RILL_FUSED_RELU6 || act == RILL_FUSED_IDENTITY) {
#if RILL_X86_SIMD
    if (rill_cpu_avx2()) i = rill_epi_lanes_avx2(p, n, b, has_b, act);
#endif
  }
  if (act == RILL_FUSED_SIGMOID || act == RILL_FUSED_TANH) {
    if (has_b)
      for (; i < n; i++) p[i] += b;
    if (act == RILL_FUSED_SIGMOID) rill_sigmoid_span_f32(p, p, n);
    else rill_tanh_span_f32(p, p, n);
    return;
  }
  for (; i < n; i++) p[i] = rill_epi_act(has_b ? p[i] + b : p[i], act);
}

/* The epilogue over channels [c0, c1) of one image's output y [m, p] (columns [s0, s1)
 * of each), res the same image's residual (or NULL). */
static inline void rill_epi_apply(const rill_conv_epi *e, float *y, const float *res, int64_t p,
                                  int64_t c0, int64_t c1, int64_t s0, int64_t s1) {
  for (int64_t c = c0; c < c1; c++)
    rill_epi_span(y + c * p + s0, res ? res + c * p + s0 : NULL, s1 - s0, e->bias ? e->bias[c] : 0.0f,
                  e->bias != NULL, e->act);
}

/* The conv2d kernel (conv2d.c) on ctx (conv2d's slots and attributes; Bias and
 * ResidualData hidden) with an epilogue: epi->res, when given, must have the output's
 * shape and epi->bias one value per output channel (the caller checks both). */
rill_status *rill_cpu_conv2d_epi_fp32(rill_kernel_ctx *ctx, const rill_conv_epi *epi);

#endif
