/* sampling_id CPU kernel: Paddle 1.8.5's draw, number for number.
 *
 * Paddle seeds a std::minstd_rand with the `seed` attribute on every run and draws one
 * std::uniform_real_distribution<T>(min, max) number per row (framework/base/std_random.h
 * has the engine and the distribution as libstdc++ computes them).
 * The row's id is the first j where r - p_0 - ... - p_j (in T) is negative, else W - 1.
 * Seed 0 (Paddle: std::random_device) takes its seed from the executor's generator
 * (ctx->dev->random_u64; the op is flagged RILL_OP_RANDOM), or outside an executor from
 * a process-wide count. */
#include <math.h>
#include <stdatomic.h>

#include "framework/base/std_random.h"
#include "kernels/cpu/kernels.h"

static _Atomic uint64_t unseeded_runs;

static uint64_t minstd_seed(const rill_kernel_ctx *ctx) {
  uint32_t s = (uint32_t)ctx->attrs[RILL_SAMPLING_ID_ATTR_SEED].v.i;
  if (s == 0) {
    uint64_t n = ctx->dev ? ctx->dev->random_u64(ctx->dev)
                          : atomic_fetch_add_explicit(&unseeded_runs, 1, memory_order_relaxed) + 1;
    s = (uint32_t)(n ^ (n >> 32));
  }
  return s;
}

#define SAMPLING_ID(T, SUF, DT)                                                           \
  rill_status *rill_cpu_sampling_id_##SUF(rill_kernel_ctx *ctx) {                         \
    rill_tensor *x, *out;                                                                 \
    RILL_TRY(rill_kin_need(ctx, RILL_SAMPLING_ID_IN_X, 0, DT, &x));                       \
    RILL_TRY(rill_kout_need(ctx, RILL_SAMPLING_ID_OUT_OUT, 0, RILL_DTYPE_INT64, &out));   \
    if (x->dims.n != 2)                                                                   \
      return rill_kernel_error(ctx, "input X (%s) must be [N, W]",                        \
                               rill_kin_name(ctx, RILL_SAMPLING_ID_IN_X, 0));             \
    int64_t rows = x->dims.d[0], width = x->dims.d[1];                                    \
    rill_dims od = {.n = 1, .d = {rows}};                                                 \
    RILL_TRY(rill_kout_check_dims(ctx, RILL_SAMPLING_ID_OUT_OUT, 0, out, &od));           \
    const T lo = (T)ctx->attrs[RILL_SAMPLING_ID_ATTR_MIN].v.f;                            \
    const T hi = (T)ctx->attrs[RILL_SAMPLING_ID_ATTR_MAX].v.f;                            \
    const T *p = rill_tensor_ptr(x);                                                      \
    int64_t *ids = rill_tensor_ptr(out);                                                  \
    rill_minstd state;                                                                    \
    rill_minstd_seed(&state, minstd_seed(ctx));                                           \
    for (int64_t i = 0; i < rows; i++) {                                                  \
      T r = rill_minstd_uniform_##SUF(&state, lo, hi);                                    \
      int64_t id = width - 1;                                                             \
      for (int64_t j = 0; j < width; j++) {                                               \
        r -= p[i * width + j];                                                            \
        if (r < 0) {                                                                      \
          id = j;                                                                         \
          break;                                                                          \
        }                                                                                 \
      }                                                                                   \
      ids[i] = id;                                                                        \
    }                                                                                     \
    return NULL;                                                                          \
  }

SAMPLING_ID(float, fp32, RILL_DTYPE_FP32)
SAMPLING_ID(double, fp64, RILL_DTYPE_FP64)
