/* lstm, lstm_grad, lstm_unit and lstm_unit_grad CPU kernels (operators/lstm.c).
 *
 * lstm reorders Input into batch order once (operators/recurrent.h: the sequences
 * sorted by length, batch n the n-th rows of those still running), adds the gate biases,
 * then per time step runs one GEMM of the previous step's hidden rows [batch, D] by
 * Weight [D, 4D] into the step's gates and the elementwise cell update; Hidden and Cell
 * are scattered back to sequence order at the end. lstm_grad runs the steps backwards
 * with two GEMMs each (the previous hidden rows' gradient and Weight@GRAD). The
 * arithmetic, its order and the activations are Paddle 1.8's (math/detail/lstm_kernel.h,
 * lstm_cpu_kernel.h, activation_functions.h). lstmp, lstmp_grad: the same steps with the
 * previous step's projection in place of its hidden state (Paddle's lstmp_op.h). */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/kernels.h"
#include "operators/recurrent.h"
#include "kernels/cpu/sgemm.h"
#include "kernels/cpu/vexp.h"

/* The forward's per-step product g [cur, 4D] += h_prev [cur, D] W [D, 4D]: in float32
 * through W packed once for rill_sgemm's kernel (NULL where it has none) instead of on
 * every step. */
static rill_sgemm_packed *lstm_pack_fp32(const float *w, int64_t D) {
  return rill_sgemm_pack_b(w, 4 * D, D, 4 * D);
}

static void lstm_recur_fp32(const rill_kernel_ctx *ctx, const rill_sgemm_packed *pk, int64_t cur,
                            int64_t D, const float *ph, const float *w, float *g) {
  if (pk && rill_sgemm_prepacked(ctx->dev, rill_dev_threads(ctx->dev), CblasNoTrans, cur, 1.0f, ph,
                                 D, pk, 1.0f, g, 4 * D))
    return;
  RILL_KERNEL_SGEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)cur, (int)(4 * D), (int)D, 1.0f,
                    ph, (int)D, w, (int)(4 * D), 1.0f, g, (int)(4 * D));
}

static rill_sgemm_packed *lstm_pack_fp64(const double *w, int64_t D) {
  (void)w, (void)D;
  return NULL;
}

static void lstm_recur_fp64(const rill_kernel_ctx *ctx, const rill_sgemm_packed *pk, int64_t cur,
                            int64_t D, const double *ph, const double *w, double *g) {
  (void)ctx, (void)pk;
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)cur, (int)(4 * D), (int)D, 1.0, ph,
              (int)D, w, (int)(4 * D), 1.0, g, (int)(4 * D));
}

/* The step's activations in float32 over spans of a row: sigmoid and tanh by vexp.h's
 * 8-lane forms (libm's expf per element was a third of a forward), sigmoid's input
 * clipped to [-40, 13] as rill_ract's is. */
static void act_span_fp32(float *v, int64_t n, rill_ract k) {
  switch (k) {
    case RILL_RACT_SIGMOID:
      for (int64_t i = 0; i < n; i++) v[i] = v[i] < -40.0f ? -40.0f : v[i] > 13.0f ? 13.0f : v[i];
      rill_sigmoid_span_f32(v, v, n);
      break;
    case RILL_RACT_TANH:
      rill_tanh_span_f32(v, v, n);
      break;
    case RILL_RACT_RELU:
      for (int64_t i = 0; i < n; i++) v[i] = v[i] > 0.0f ? v[i] : 0.0f;
      break;
    default:
      break;
  }
}

#define T float
#define DT RILL_DTYPE_FP32
#define SUF fp32
#define GEMM(...) RILL_KERNEL_SGEMM(__VA_ARGS__)
#define EXP expf
#define ACT_SPAN act_span_fp32
#define TANH tanhf
#include "kernels/cpu/lstm_impl.inc"
#undef T
#undef DT
#undef SUF
#undef GEMM
#undef EXP
#undef ACT_SPAN
#undef TANH

#define T double
#define DT RILL_DTYPE_FP64
#define SUF fp64
#define GEMM cblas_dgemm
#define EXP exp
#define TANH tanh
#include "kernels/cpu/lstm_impl.inc"
#undef T
#undef DT
#undef SUF
#undef GEMM
#undef EXP
#undef TANH
