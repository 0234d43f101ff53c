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

#define SAMPLING_ID(T, DT, NAME)                                                          \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *x, *out;                                                                 \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                           \
    if (x->dims.n != 2)                                                                   \
      return rill_kernel_error(ctx, "input X (%s) must be [N, C]", rill_kin_name(ctx, 0, 0)); \
    int64_t N = x->dims.d[0], C = x->dims.d[1];                                           \
    rill_dims od = {.n = 1, .d = {N}};                                                    \
    RILL_TRY(rill_kout_need(ctx, 0, 0, RILL_DTYPE_INT64, &out));                          \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &od));                                  \
    double lo = ctx->attrs[RILL_SAMPLING_ID_ATTR_MIN].v.f;                                \
    double hi = ctx->attrs[RILL_SAMPLING_ID_ATTR_MAX].v.f;                                \
    rill_rng rng;                                                                         \
    rill_rng_seed(&rng, rill_random_seed(ctx, ctx->attrs[RILL_SAMPLING_ID_ATTR_SEED].v.i)); \
    const T *xp = rill_tensor_ptr(x);                                                     \
    int64_t *op = rill_tensor_ptr(out);                                                   \
    for (int64_t i = 0; i < N; i++) {                                                     \
      double r = lo + (hi - lo) * rill_rng_uniform(&rng);                                 \
      int64_t id = C - 1;                                                                 \
      for (int64_t j = 0; j < C; j++)                                                     \
        if ((r -= (double)xp[i * C + j]) < 0) {                                           \
          id = j;                                                                         \
          break;                                                                          \
        }                                                                                 \
      op[i] = id;                                                                         \
    }                                                                                     \
    return NULL;                                                                          \
  }

SAMPLING_ID(float, RILL_DTYPE_FP32, rill_cpu_sampling_id_fp32)
SAMPLING_ID(double, RILL_DTYPE_FP64, rill_cpu_sampling_id_fp64)
