/* uniform_random and gaussian_random CPU kernels (float32, float64). Seeding is
 * described in operators/random.c. */
#include <math.h>

#include "framework/base/random.h"
#include "kernels/cpu/tensor_ops.h"

/* The seed a kernel uses: the attribute, or (0) the default mixed with the output's name. */
uint64_t rill_random_seed(const rill_kernel_ctx *ctx, int32_t seed_attr) {
  if (seed_attr != 0) return (uint64_t)(uint32_t)seed_attr;
  uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */
  const char *name = rill_kout_name(ctx, 0, 0);
  for (const unsigned char *p = (const unsigned char *)name; *p; p++) h = (h ^ *p) * 0x100000001b3ULL;
  return h ^ RILL_RANDOM_DEFAULT_SEED;
}

uint64_t rill_random_run_seed(const rill_kernel_ctx *ctx, int32_t seed_attr) {
  if (seed_attr != 0) return (uint64_t)(uint32_t)seed_attr;
  uint64_t n = ctx->dev ? ctx->dev->random_u64(ctx->dev) : RILL_RANDOM_DEFAULT_SEED;
  return n ^ 0x9E3779B97F4A7C15ull;
}

#define UNIFORM(T, DT, NEXT, NAME)                                                        \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *out;                                                                     \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                        \
    double lo = ctx->attrs[RILL_UNIFORM_RANDOM_ATTR_MIN].v.f, hi = ctx->attrs[RILL_UNIFORM_RANDOM_ATTR_MAX].v.f;                                \
    if (!(lo <= hi))                                                                      \
      return rill_kernel_error(ctx, "min %g is greater than max %g", lo, hi);             \
    rill_rng rng;                                                                         \
    rill_rng_seed(&rng, rill_random_seed(ctx, ctx->attrs[RILL_UNIFORM_RANDOM_ATTR_SEED].v.i));                        \
    T *p = rill_tensor_ptr(out);                                                          \
    int64_t n = rill_tensor_numel(out);                                                   \
    T tlo = (T)lo, thi = (T)hi;                                                           \
    for (int64_t i = 0; i < n; i++) {                                                     \
      T v = (T)(lo + (hi - lo) * rill_rng_uniform(&rng));                                 \
      p[i] = v < thi || tlo == thi ? v : NEXT(thi, tlo);                                  \
    }                                                                                     \
    int32_t dn = ctx->attrs[RILL_UNIFORM_RANDOM_ATTR_DIAG_NUM].v.i, ds = ctx->attrs[RILL_UNIFORM_RANDOM_ATTR_DIAG_STEP].v.i;                               \
    if (dn > 0) {                                                                         \
      if (ds < 0 || (int64_t)(dn - 1) * (ds + 1) >= n)                                    \
        return rill_kernel_error(ctx, "diag_num %d with diag_step %d runs past the %lld " \
                                 "elements of output Out (%s)", (int)dn, (int)ds,         \
                                 (long long)n, rill_kout_name(ctx, 0, 0));                \
      for (int64_t i = 0; i < dn; i++) p[i * (ds + 1)] = (T)ctx->attrs[RILL_UNIFORM_RANDOM_ATTR_DIAG_VAL].v.f;            \
    }                                                                                     \
    return NULL;                                                                          \
  }

UNIFORM(float, RILL_DTYPE_FP32, nextafterf, rill_cpu_uniform_random_fp32)
UNIFORM(double, RILL_DTYPE_FP64, nextafter, rill_cpu_uniform_random_fp64)

#define GAUSSIAN(T, DT, NAME)                                                             \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *out;                                                                     \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                        \
    double mean = ctx->attrs[RILL_GAUSSIAN_RANDOM_ATTR_MEAN].v.f, sd = ctx->attrs[RILL_GAUSSIAN_RANDOM_ATTR_STD].v.f;                              \
    rill_rng rng;                                                                         \
    rill_rng_seed(&rng, rill_random_seed(ctx, ctx->attrs[RILL_GAUSSIAN_RANDOM_ATTR_SEED].v.i));                        \
    T *p = rill_tensor_ptr(out);                                                          \
    int64_t n = rill_tensor_numel(out);                                                   \
    for (int64_t i = 0; i < n; i++) p[i] = (T)(mean + sd * rill_rng_normal(&rng));        \
    return NULL;                                                                          \
  }

GAUSSIAN(float, RILL_DTYPE_FP32, rill_cpu_gaussian_random_fp32)
GAUSSIAN(double, RILL_DTYPE_FP64, rill_cpu_gaussian_random_fp64)
