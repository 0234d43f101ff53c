/* uniform_random and gaussian_random CPU kernels (float32, float64). Seeding is
 * described in operators/random.c. */
#include <float.h>
#include <math.h>
#include <stdatomic.h>

#include "framework/base/hash.h"
#include "framework/base/std_random.h"
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

/* The minstd_rand seed of a uniform_random / gaussian_random run: a nonzero attribute
 * as Paddle passes it (an unsigned int), so that it draws Paddle's numbers; 0 the
 * default mixed with the output's name (rill_random_seed). */
static uint64_t minstd_seed_of(const rill_kernel_ctx *ctx, int32_t seed_attr) {
  return seed_attr != 0 ? (uint64_t)(uint32_t)seed_attr : rill_random_seed(ctx, 0);
}

/* diag_num elements diag_step + 1 apart set to diag_val (uniform_random's option). */
#define DIAGONAL(T, A)                                                                     \
  do {                                                                                     \
    int32_t dn = ctx->attrs[A##DIAG_NUM].v.i, ds = ctx->attrs[A##DIAG_STEP].v.i;           \
    if (dn > 0) {                                                                          \
      if (ds < 0 || (int64_t)(dn - 1) * (ds + 1) >= n)                                     \
        return rill_kernel_error(ctx, "diag_num %d with diag_step %d runs past the %lld "  \
                                 "elements of output Out (%s)", (int)dn, (int)ds,          \
                                 (long long)n, rill_kout_name(ctx, 0, 0));                 \
      for (int64_t i = 0; i < dn; i++) p[i * (ds + 1)] = (T)ctx->attrs[A##DIAG_VAL].v.f;   \
    }                                                                                      \
  } while (0)

/* std::uniform_real_distribution<T>(min, max) over minstd_rand (framework/base/std_random.h).
 * A: the op's attribute index prefix (RILL_<OP>_ATTR_). */
#define UNIFORM(T, DT, SUF, NAME, A)                                                       \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                \
    rill_tensor *out;                                                                      \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                         \
    double lo = ctx->attrs[A##MIN].v.f, hi = ctx->attrs[A##MAX].v.f;                       \
    if (!(lo <= hi))                                                                       \
      return rill_kernel_error(ctx, "min %g is greater than max %g", lo, hi);              \
    rill_minstd e;                                                                         \
    rill_minstd_seed(&e, minstd_seed_of(ctx, ctx->attrs[A##SEED].v.i));                    \
    T *p = rill_tensor_ptr(out);                                                           \
    int64_t n = rill_tensor_numel(out);                                                    \
    for (int64_t i = 0; i < n; i++) p[i] = rill_minstd_uniform_##SUF(&e, (T)lo, (T)hi);   \
    DIAGONAL(T, A);                                                                        \
    return NULL;                                                                           \
  }

UNIFORM(float, RILL_DTYPE_FP32, fp32, rill_cpu_uniform_random_fp32, RILL_UNIFORM_RANDOM_ATTR_)
UNIFORM(double, RILL_DTYPE_FP64, fp64, rill_cpu_uniform_random_fp64, RILL_UNIFORM_RANDOM_ATTR_)
UNIFORM(float, RILL_DTYPE_FP32, fp32, rill_cpu_uniform_random_batch_size_like_fp32,
        RILL_UNIFORM_RANDOM_BATCH_SIZE_LIKE_ATTR_)
UNIFORM(double, RILL_DTYPE_FP64, fp64, rill_cpu_uniform_random_batch_size_like_fp64,
        RILL_UNIFORM_RANDOM_BATCH_SIZE_LIKE_ATTR_)

/* std::normal_distribution<T>(mean, std) over minstd_rand. */
#define GAUSSIAN(T, DT, SUF, NAME, A)                                                      \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                \
    rill_tensor *out;                                                                      \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                         \
    T mean = (T)ctx->attrs[A##MEAN].v.f, sd = (T)ctx->attrs[A##STD].v.f;                   \
    rill_minstd_normal g;                                                                  \
    rill_minstd_normal_seed(&g, minstd_seed_of(ctx, ctx->attrs[A##SEED].v.i));             \
    T *p = rill_tensor_ptr(out);                                                           \
    int64_t n = rill_tensor_numel(out);                                                    \
    for (int64_t i = 0; i < n; i++) p[i] = rill_minstd_normal_##SUF(&g, mean, sd);        \
    return NULL;                                                                           \
  }

GAUSSIAN(float, RILL_DTYPE_FP32, fp32, rill_cpu_gaussian_random_fp32, RILL_GAUSSIAN_RANDOM_ATTR_)
GAUSSIAN(double, RILL_DTYPE_FP64, fp64, rill_cpu_gaussian_random_fp64, RILL_GAUSSIAN_RANDOM_ATTR_)
GAUSSIAN(float, RILL_DTYPE_FP32, fp32, rill_cpu_gaussian_random_batch_size_like_fp32,
         RILL_GAUSSIAN_RANDOM_BATCH_SIZE_LIKE_ATTR_)
GAUSSIAN(double, RILL_DTYPE_FP64, fp64, rill_cpu_gaussian_random_batch_size_like_fp64,
         RILL_GAUSSIAN_RANDOM_BATCH_SIZE_LIKE_ATTR_)

/* std::uniform_int_distribution<T>(low, high - 1) over minstd_rand, as Paddle 1.8.5. */
#define RANDINT(T, DT, NAME)                                                              \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *out;                                                                     \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                        \
    int64_t lo = ctx->attrs[RILL_RANDINT_ATTR_LOW].v.i;                                   \
    int64_t hi = ctx->attrs[RILL_RANDINT_ATTR_HIGH].v.i;                                  \
    if (lo >= hi) return rill_kernel_error(ctx, "low %lld must be less than high %lld",   \
                                           (long long)lo, (long long)hi);                 \
    rill_minstd e;                                                                        \
    rill_minstd_seed(&e, minstd_seed_of(ctx, ctx->attrs[RILL_RANDINT_ATTR_SEED].v.i));    \
    T *p = rill_tensor_ptr(out);                                                          \
    uint64_t range = (uint64_t)(hi - 1 - lo);                                             \
    for (int64_t i = 0, n = rill_tensor_numel(out); i < n; i++)                           \
      p[i] = (T)(lo + (int64_t)rill_minstd_uniform_int(&e, range));                       \
    return NULL;                                                                          \
  }

RANDINT(int32_t, RILL_DTYPE_INT32, rill_cpu_randint_int32)
RANDINT(int64_t, RILL_DTYPE_INT64, rill_cpu_randint_int64)

/* 0 .. n-1 shuffled as Paddle 1.8.5 does: srand(seed), then std::random_shuffle, which
 * swaps element i (from 1 up) with element rand() % (i + 1). */
#define RANDPERM(T, DT, NAME)                                                             \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *out;                                                                     \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                        \
    int64_t n = rill_tensor_numel(out);                                                   \
    if (n != ctx->attrs[RILL_RANDPERM_ATTR_N].v.i)                                        \
      return rill_kernel_error(ctx, "output Out (%s) holds %lld elements, not n %d",      \
                               rill_kout_name(ctx, 0, 0), (long long)n,                   \
                               (int)ctx->attrs[RILL_RANDPERM_ATTR_N].v.i);                \
    rill_glibc_rand g;                                                                    \
    rill_glibc_rand_seed(&g, (uint32_t)minstd_seed_of(ctx, ctx->attrs[RILL_RANDPERM_ATTR_SEED].v.i)); \
    T *p = rill_tensor_ptr(out);                                                          \
    for (int64_t i = 0; i < n; i++) p[i] = (T)i;                                          \
    for (int64_t i = 1; i < n; i++) {                                                     \
      int64_t j = (int64_t)(rill_glibc_rand_next(&g) % (uint64_t)(i + 1));                \
      T t = p[i];                                                                         \
      p[i] = p[j];                                                                        \
      p[j] = t;                                                                           \
    }                                                                                     \
    return NULL;                                                                          \
  }

RANDPERM(int32_t, RILL_DTYPE_INT32, rill_cpu_randperm_int32)
RANDPERM(int64_t, RILL_DTYPE_INT64, rill_cpu_randperm_int64)

/* truncated_gaussian_random as Paddle 1.8.5 draws it, number for number:
 * - u from uniform_real_distribution<T>(FLT_MIN, 1) over minstd_rand;
 * - p = Phi(-2) + (Phi(2) - Phi(-2)) u in T, Phi(t) = (1 + erf(t / sqrt 2)) / 2 rounded
 *   to T, and x = 2 p - 1;
 * - w(x), the central rational approximation of erf^-1 (Wichura's AS 241, its first
 *   range: x (A(r) / B(r)) with r = 0.180625 - x^2 / 4), used over the whole of
 *   (-1, 1): Paddle's code meant to switch to the tail forms beyond |x| = 0.85 but tests
 *   the integer part of |x|, which is 0 there. Out to |x| = 0.9545 (z = 2) the central
 *   form is still within 2.2e-6 of the inverse: values reach mean +- 1.999998 std;
 * - the value sqrt(2) w(x) std + mean, in double, rounded to T.
 * The polynomials run in T, r in double rounded to T, as the C++ promotions take them. */
#define TRUNCATED(T, DT, SUF, NAME)                                                        \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                \
    rill_tensor *out;                                                                      \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                         \
    T mean = (T)ctx->attrs[RILL_TRUNCATED_GAUSSIAN_RANDOM_ATTR_MEAN].v.f;                  \
    T sd = (T)ctx->attrs[RILL_TRUNCATED_GAUSSIAN_RANDOM_ATTR_STD].v.f;                     \
    static const T a[8] = {1.1975323115670912564578e0, 4.7072688112383978012285e1,         \
                           6.9706266534389598238465e2, 4.8548868893843886794648e3,         \
                           1.6235862515167575384252e4, 2.3782041382114385731252e4,         \
                           1.1819493347062294404278e4, 8.8709406962545514830200e2};        \
    static const T b[8] = {1.0, 4.2313330701600911252e1, 6.8718700749205790830e2,          \
                           5.3941960214247511077e3, 2.1213794301586595867e4,               \
                           3.9307895800092710610e4, 2.8729085735721942674e4,               \
                           5.2264952788528545610e3};                                       \
    T lo = (T)((1.0 + erf((double)(T)-2.0 / sqrt(2.0))) / 2.0);                            \
    T hi = (T)((1.0 + erf((double)(T)2.0 / sqrt(2.0))) / 2.0);                             \
    rill_minstd e;                                                                         \
    rill_minstd_seed(&e, minstd_seed_of(ctx, ctx->attrs[RILL_TRUNCATED_GAUSSIAN_RANDOM_ATTR_SEED].v.i)); \
    T *p = rill_tensor_ptr(out);                                                           \
    int64_t n = rill_tensor_numel(out);                                                    \
    for (int64_t i = 0; i < n; i++) {                                                      \
      T u = rill_minstd_uniform_##SUF(&e, (T)FLT_MIN, (T)1.0);                             \
      T q = (hi - lo) * u;                                                                 \
      q = lo + q;                                                                          \
      T x = (T)2 * q;                                                                      \
      x = x - (T)1;                                                                        \
      T w;                                                                                 \
      if (x == 1 || x == -1) {                                                             \
        w = x == 1 ? (T)INFINITY : (T)-INFINITY;                                           \
      } else {                                                                             \
        T r = (T)(0.180625 - 0.25 * x * x);                                                \
        T num = a[7], den = b[7];                                                          \
        for (int k = 6; k >= 0; k--) {                                                     \
          num = num * r;                                                                   \
          num = num + a[k];                                                                \
          den = den * r;                                                                   \
          den = den + b[k];                                                                \
        }                                                                                  \
        w = x * num;                                                                       \
        w = w / den;                                                                       \
      }                                                                                    \
      p[i] = (T)(sqrt(2.0) * (double)w * (double)sd + (double)mean);                      \
    }                                                                                      \
    return NULL;                                                                           \
  }

TRUNCATED(float, RILL_DTYPE_FP32, fp32, rill_cpu_truncated_gaussian_random_fp32)
TRUNCATED(double, RILL_DTYPE_FP64, fp64, rill_cpu_truncated_gaussian_random_fp64)
