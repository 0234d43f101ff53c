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
