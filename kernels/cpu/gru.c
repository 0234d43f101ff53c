/* gru, gru_grad, gru_unit and gru_unit_grad CPU kernels (operators/gru.c).
 *
 * gru reorders Input into batch order once (operators/recurrent.h), adds the bias,
 * then per time step runs one GEMM of the previous hidden rows [batch, D] by the gate
 * weight W_ur [D, 2D] into the update and reset gates, the reset product, one GEMM of
 * (r * h_prev) [batch, D] by W_c [D, D] into the candidate, and the output; Hidden is
 * scattered back to sequence order. gru_grad runs the steps backwards. The arithmetic
 * and its order are Paddle 1.8's (math/gru_compute.cc, detail/gru_kernel.h), with one
 * difference: Paddle skips the recurrent products of the first step when H0 is given
 * but its gradient is not wanted, losing the reset gate's gradient and Weight@GRAD's
 * part from H0 there; rill computes them. */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/kernels.h"
#include "operators/recurrent.h"
#include "kernels/cpu/sgemm.h"

_Static_assert(RILL_SAME_POS(RILL_GRU_UNIT_IN_INPUT, RILL_GRU_UNIT_GRAD_IN_INPUT) &&
                   RILL_SAME_POS(RILL_GRU_UNIT_IN_HIDDEN_PREV, RILL_GRU_UNIT_GRAD_IN_HIDDEN_PREV) &&
                   RILL_SAME_POS(RILL_GRU_UNIT_IN_WEIGHT, RILL_GRU_UNIT_GRAD_IN_WEIGHT) &&
                   RILL_SAME_POS(RILL_GRU_UNIT_IN_BIAS, RILL_GRU_UNIT_GRAD_IN_BIAS),
               "gru_unit_grad's first inputs are gru_unit's");

static rill_status *gru_unit_check(const rill_kernel_ctx *ctx, const rill_tensor *x,
                                   const rill_tensor *hp, const rill_tensor *w, const rill_tensor *b,
                                   int64_t *N, int64_t *D) {
  char a[RILL_DIMS_STR_MAX], c[RILL_DIMS_STR_MAX], e[RILL_DIMS_STR_MAX];
  if (x->dims.n != 2 || hp->dims.n != 2 || w->dims.n != 2 || x->dims.d[0] != hp->dims.d[0] ||
      w->dims.d[0] != hp->dims.d[1] || x->dims.d[1] != 3 * hp->dims.d[1] ||
      w->dims.d[1] != 3 * hp->dims.d[1])
    return rill_kernel_error(ctx, "inputs Input (%s) %s, HiddenPrev (%s) %s and Weight (%s) %s do "
                             "not fit: expected [N, 3 * D], [N, D] and [D, 3 * D]",
                             rill_kin_name(ctx, 0, 0), rill_dims_str(&x->dims, a, sizeof a),
                             rill_kin_name(ctx, 1, 0), rill_dims_str(&hp->dims, c, sizeof c),
                             rill_kin_name(ctx, 2, 0), rill_dims_str(&w->dims, e, sizeof e));
  *N = hp->dims.d[0];
  *D = hp->dims.d[1];
  if (b && rill_tensor_numel(b) != 3 * *D)
    return rill_kernel_error(ctx, "input Bias (%s) has shape %s, expected [1, %lld]",
                             rill_kin_name(ctx, 3, 0), rill_dims_str(&b->dims, a, sizeof a),
                             (long long)(3 * *D));
  return NULL;
}

#define T float
#define DT RILL_DTYPE_FP32
#define SUF fp32
#define GEMM(...) RILL_KERNEL_SGEMM(__VA_ARGS__)
#define EXP expf
#define TANH tanhf
#include "kernels/cpu/gru_impl.inc"
#undef T
#undef DT
#undef SUF
#undef GEMM
#undef EXP
#undef TANH

#define T double
#define DT RILL_DTYPE_FP64
#define SUF fp64
#define GEMM cblas_dgemm
#define EXP exp
#define TANH tanh
#include "kernels/cpu/gru_impl.inc"
#undef T
#undef DT
#undef SUF
#undef GEMM
#undef EXP
#undef TANH
