/* dpsgd CPU kernels: Paddle's dpsgd. The squared norm is summed in float as Paddle's
 * kernel does; the noise is one normal draw per run from framework/base/random.h's
 * generator, seeded by `seed` when nonzero (the same noise every run, as Paddle with a
 * fixed seed) and otherwise by the executor's generator, so runs differ (Paddle seeds
 * from the clock; only the noise's distribution is meant to match, not its values). */
#include <math.h>

#include "framework/base/random.h"
#include "kernels/cpu/optimizer_rows.h"
#include "kernels/cpu/tensor_ops.h"

#define DPSGD(T, DT, NAME)                                                                  \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                 \
    rill_tensor *p;                                                                         \
    double lr;                                                                              \
    rill_opt_grad g;                                                                        \
    void *po;                                                                               \
    RILL_TRY(rill_kin_need(ctx, RILL_DPSGD_IN_PARAM, 0, DT, &p));                           \
    RILL_TRY(rill_opt_scalar(ctx, RILL_DPSGD_IN_LEARNING_RATE, &lr));                       \
    float clip = ctx->attrs[RILL_DPSGD_ATTR_CLIP].v.f;                                      \
    float batch = ctx->attrs[RILL_DPSGD_ATTR_BATCH_SIZE].v.f;                               \
    float sigma = ctx->attrs[RILL_DPSGD_ATTR_SIGMA].v.f;                                    \
    if (!(clip > 0.0f) || !(batch > 0.0f) || !(sigma >= 0.0f))                              \
      return rill_kernel_error(ctx, "clip %g and batch_size %g must be positive and sigma " \
                               "%g not negative (Param %s)", (double)clip, (double)batch,   \
                               (double)sigma, rill_kin_name(ctx, RILL_DPSGD_IN_PARAM, 0));  \
    RILL_TRY(rill_opt_dense_grad(ctx, RILL_DPSGD_IN_GRAD, DT, p, &g));                      \
    rill_status *st = rill_opt_state(ctx, RILL_DPSGD_IN_PARAM, RILL_DPSGD_OUT_PARAM_OUT, DT, \
                                     NULL, &po);                                            \
    if (st) {                                                                               \
      rill_opt_grad_free(&g);                                                               \
      return st;                                                                            \
    }                                                                                       \
    T *pp = po;                                                                             \
    const T *gd = g.dense;                                                                  \
    int64_t n = rill_tensor_numel(p);                                                       \
    float norm = 0.0f;                                                                      \
    for (int64_t i = 0; i < n; i++) norm += (float)(gd[i] * gd[i]);                         \
    norm = sqrtf(norm);                                                                     \
    float scale = norm > clip ? norm / clip : 1.0f;                                         \
    rill_rng rng;                                                                           \
    int32_t seed_attr = ctx->attrs[RILL_DPSGD_ATTR_SEED].v.i;                               \
    rill_rng_seed(&rng, rill_random_seed_or_run(ctx, seed_attr));                           \
    float noise = (float)rill_rng_normal(&rng) * sigma;                                     \
    T l = (T)lr;                                                                            \
    for (int64_t i = 0; i < n; i++) pp[i] = pp[i] - l * (gd[i] / (T)scale + (T)(noise / batch)); \
    rill_opt_grad_free(&g);                                                                 \
    return NULL;                                                                            \
  }

DPSGD(float, RILL_DTYPE_FP32, rill_cpu_dpsgd_fp32)
DPSGD(double, RILL_DTYPE_FP64, rill_cpu_dpsgd_fp64)
