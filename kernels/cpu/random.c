/* uniform_random and gaussian_random CPU kernels (float32, float64). Seeding is
 * described in operators/random.c. */
#include <math.h>
#include <stdatomic.h>

#include "framework/base/hash.h"
#include "framework/base/random.h"
#include "kernels/cpu/tensor_ops.h"

/* The seed a kernel uses: the attribute, or (0) the default mixed with the output's name. */
uint64_t rill_random_seed(const rill_kernel_ctx *ctx, int32_t seed_attr) {
  if (seed_attr != 0) return (uint64_t)(uint32_t)seed_attr;
  return rill_fnv1a64_str(rill_kout_name(ctx, 0, 0)) ^ RILL_RANDOM_DEFAULT_SEED;
}

static atomic_uint_fast64_t unseeded_runs;

uint64_t rill_random_run_seed(const rill_kernel_ctx *ctx) {
  uint64_t n = ctx->dev ? ctx->dev->random_u64(ctx->dev)
                        : atomic_fetch_add_explicit(&unseeded_runs, 1, memory_order_relaxed);
  return rill_rng_run_seed(n);
}

uint64_t rill_random_seed_or_run(const rill_kernel_ctx *ctx, int32_t seed_attr) {
  return seed_attr != 0 ? (uint64_t)(uint32_t)seed_attr : rill_random_run_seed(ctx);
}

/* A: the op's attribute index prefix (RILL_<OP>_ATTR_). */
#define UNIFORM(T, DT, NEXT, NAME, A)                                                     \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *out;                                                                     \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                        \
    double lo = ctx->attrs[A##MIN].v.f, hi = ctx->attrs[A##MAX].v.f;                      \
    if (!(lo <= hi))                                                                      \
      return rill_kernel_error(ctx, "min %g is greater than max %g", lo, hi);             \
    rill_rng rng;                                                                         \
    rill_rng_seed(&rng, rill_random_seed(ctx, ctx->attrs[A##SEED].v.i));                  \
    T *p = rill_tensor_ptr(out);                                                          \
    int64_t n = rill_tensor_numel(out);                                                   \
    T tlo = (T)lo, thi = (T)hi;                                                           \
    for (int64_t i = 0; i < n; i++) {                                                     \
      T v = (T)(lo + (hi - lo) * rill_rng_uniform(&rng));                                 \
      p[i] = v < thi || tlo == thi ? v : NEXT(thi, tlo);                                  \
    }                                                                                     \
    int32_t dn = ctx->attrs[A##DIAG_NUM].v.i, ds = ctx->attrs[A##DIAG_STEP].v.i;          \
    if (dn > 0) {                                                                         \
      if (ds < 0 || (int64_t)(dn - 1) * (ds + 1) >= n)                                    \
        return rill_kernel_error(ctx, "diag_num %d with diag_step %d runs past the %lld " \
                                 "elements of output Out (%s)", (int)dn, (int)ds,         \
                                 (long long)n, rill_kout_name(ctx, 0, 0));                \
      for (int64_t i = 0; i < dn; i++) p[i * (ds + 1)] = (T)ctx->attrs[A##DIAG_VAL].v.f;  \
    }                                                                                     \
    return NULL;                                                                          \
  }

UNIFORM(float, RILL_DTYPE_FP32, nextafterf, rill_cpu_uniform_random_fp32, RILL_UNIFORM_RANDOM_ATTR_)
UNIFORM(double, RILL_DTYPE_FP64, nextafter, rill_cpu_uniform_random_fp64, RILL_UNIFORM_RANDOM_ATTR_)
UNIFORM(float, RILL_DTYPE_FP32, nextafterf, rill_cpu_uniform_random_batch_size_like_fp32,
        RILL_UNIFORM_RANDOM_BATCH_SIZE_LIKE_ATTR_)
UNIFORM(double, RILL_DTYPE_FP64, nextafter, rill_cpu_uniform_random_batch_size_like_fp64,
        RILL_UNIFORM_RANDOM_BATCH_SIZE_LIKE_ATTR_)

#define GAUSSIAN(T, DT, NAME, A)                                                          \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *out;                                                                     \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                        \
    double mean = ctx->attrs[A##MEAN].v.f, sd = ctx->attrs[A##STD].v.f;                   \
    rill_rng rng;                                                                         \
    rill_rng_seed(&rng, rill_random_seed(ctx, ctx->attrs[A##SEED].v.i));                  \
    T *p = rill_tensor_ptr(out);                                                          \
    int64_t n = rill_tensor_numel(out);                                                   \
    for (int64_t i = 0; i < n; i++) p[i] = (T)(mean + sd * rill_rng_normal(&rng));        \
    return NULL;                                                                          \
  }

GAUSSIAN(float, RILL_DTYPE_FP32, rill_cpu_gaussian_random_fp32, RILL_GAUSSIAN_RANDOM_ATTR_)
GAUSSIAN(double, RILL_DTYPE_FP64, rill_cpu_gaussian_random_fp64, RILL_GAUSSIAN_RANDOM_ATTR_)
GAUSSIAN(float, RILL_DTYPE_FP32, rill_cpu_gaussian_random_batch_size_like_fp32,
         RILL_GAUSSIAN_RANDOM_BATCH_SIZE_LIKE_ATTR_)
GAUSSIAN(double, RILL_DTYPE_FP64, rill_cpu_gaussian_random_batch_size_like_fp64,
         RILL_GAUSSIAN_RANDOM_BATCH_SIZE_LIKE_ATTR_)

/* A uniform integer in [0, n) without modulo bias. */
static uint64_t below(rill_rng *rng, uint64_t n) {
  uint64_t limit = UINT64_MAX - UINT64_MAX % n, v;
  do v = rill_rng_next(rng);
  while (v >= limit);
  return v % n;
}

#define RANDINT(T, DT, NAME)                                                              \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *out;                                                                     \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                        \
    int64_t lo = ctx->attrs[RILL_RANDINT_ATTR_LOW].v.i;                                   \
    int64_t hi = ctx->attrs[RILL_RANDINT_ATTR_HIGH].v.i;                                  \
    if (lo >= hi) return rill_kernel_error(ctx, "low %lld must be less than high %lld",   \
                                           (long long)lo, (long long)hi);                 \
    rill_rng rng;                                                                         \
    rill_rng_seed(&rng, rill_random_seed(ctx, ctx->attrs[RILL_RANDINT_ATTR_SEED].v.i));   \
    T *p = rill_tensor_ptr(out);                                                          \
    for (int64_t i = 0, n = rill_tensor_numel(out); i < n; i++)                           \
      p[i] = (T)(lo + (int64_t)below(&rng, (uint64_t)(hi - lo)));                         \
    return NULL;                                                                          \
  }

RANDINT(int32_t, RILL_DTYPE_INT32, rill_cpu_randint_int32)
RANDINT(int64_t, RILL_DTYPE_INT64, rill_cpu_randint_int64)

#define RANDPERM(T, DT, NAME)                                                             \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *out;                                                                     \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                        \
    int64_t n = rill_tensor_numel(out);                                                   \
    if (n != ctx->attrs[RILL_RANDPERM_ATTR_N].v.i)                                        \
      return rill_kernel_error(ctx, "output Out (%s) holds %lld elements, not n %d",      \
                               rill_kout_name(ctx, 0, 0), (long long)n,                   \
                               (int)ctx->attrs[RILL_RANDPERM_ATTR_N].v.i);                \
    rill_rng rng;                                                                         \
    rill_rng_seed(&rng, rill_random_seed(ctx, ctx->attrs[RILL_RANDPERM_ATTR_SEED].v.i));  \
    T *p = rill_tensor_ptr(out);                                                          \
    for (int64_t i = 0; i < n; i++) p[i] = (T)i;                                          \
    for (int64_t i = n - 1; i > 0; i--) { /* Fisher-Yates */                              \
      int64_t j = (int64_t)below(&rng, (uint64_t)i + 1);                                  \
      T t = p[i];                                                                         \
      p[i] = p[j];                                                                        \
      p[j] = t;                                                                           \
    }                                                                                     \
    return NULL;                                                                          \
  }

RANDPERM(int32_t, RILL_DTYPE_INT32, rill_cpu_randperm_int32)
RANDPERM(int64_t, RILL_DTYPE_INT64, rill_cpu_randperm_int64)

/* The inverse of erf on (-1, 1): Winitzki's closed form, then two Newton steps on erf. */
static double inverse_erf(double x) {
  const double a = 0.147, pi = 3.14159265358979323846;
  double l = log(1.0 - x * x), t = 2.0 / (pi * a) + l / 2.0;
  double y = copysign(sqrt(sqrt(t * t - l / a) - t), x);
  for (int k = 0; k < 2; k++) y -= (erf(y) - x) / (2.0 / sqrt(pi) * exp(-y * y));
  return y;
}

/* Paddle's sampling: u uniform in (0, 1) maps into [Phi(-2), Phi(2)] and back through the
 * inverse normal CDF, so every value lies within mean +- 2 std. */
#define TRUNCATED(T, DT, NAME)                                                            \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *out;                                                                     \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                        \
    double mean = ctx->attrs[RILL_TRUNCATED_GAUSSIAN_RANDOM_ATTR_MEAN].v.f;               \
    double sd = ctx->attrs[RILL_TRUNCATED_GAUSSIAN_RANDOM_ATTR_STD].v.f;                  \
    double lo = 0.5 * erfc(2.0 / sqrt(2.0)), hi = 1.0 - lo;                             \
    rill_rng rng;                                                                         \
    rill_rng_seed(&rng, rill_random_seed(ctx, ctx->attrs[RILL_TRUNCATED_GAUSSIAN_RANDOM_ATTR_SEED].v.i)); \
    T *p = rill_tensor_ptr(out);                                                          \
    int64_t n = rill_tensor_numel(out);                                                   \
    for (int64_t i = 0; i < n; i++) {                                                     \
      double q = lo + (hi - lo) * rill_rng_uniform(&rng);                                 \
      double z = sqrt(2.0) * inverse_erf(2.0 * q - 1.0);                                  \
      z = z < -2.0 ? -2.0 : z > 2.0 ? 2.0 : z;                                            \
      p[i] = (T)(mean + sd * z);                                                          \
    }                                                                                     \
    return NULL;                                                                          \
  }

TRUNCATED(float, RILL_DTYPE_FP32, rill_cpu_truncated_gaussian_random_fp32)
TRUNCATED(double, RILL_DTYPE_FP64, rill_cpu_truncated_gaussian_random_fp64)
