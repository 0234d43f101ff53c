/* The standard libraries' generators, number for number: C++'s std::minstd_rand with
 * the libstdc++ distributions drawn from it, and glibc's rand(). Paddle 1.8.5's CPU
 * random ops (uniform_random, gaussian_random, their batch_size_like forms,
 * truncated_gaussian_random, randint, dropout, sampling_id, random_crop) seed a
 * minstd_rand with their seed and draw through these, and randperm shuffles with
 * rand(), so the same seed gives Paddle's numbers.
 *
 * - minstd_rand: x <- 48271 x mod (2^31 - 1); seed(s) sets x = s mod (2^31 - 1), or 1
 *   when that is 0; a draw yields x - min = x - 1, in [0, 2^31 - 3].
 * - discard(n): n draws skipped, in O(log n) steps (x times 48271^n mod 2^31 - 1);
 * - uniform_int_distribution over [0, hi]: hi + 1 buckets scaled down from the draw's
 *   range, a draw past the last whole bucket rejected;
 * - generate_canonical<float>: one draw, (float)(x - 1) / (float)R with R = 2^31 - 2
 *   (R rounds to 2^31 in float); <double>: two draws, ((x1 - 1) + (x2 - 1) R) / R^2. A
 *   result that rounds up to 1 becomes the largest value below 1.
 * - uniform_real_distribution<T>(a, b): canonical (b - a) + a, in T.
 * - normal_distribution<T>(mean, sd): Marsaglia's polar method on pairs of canonicals
 *   (x, y = 2 u - 1, kept while 0 < x^2 + y^2 <= 1); a pair gives y m, then x m with
 *   m = sqrt(-2 log r2 / r2), each times sd plus mean, in T.
 *
 * Inline so that every backend draws the same numbers (a device's dropout draws its mask
 * on the host with these). Each product and sum must round on its own, as libstdc++'s
 * do: a fused multiply-add gives other bits. GCC fuses only for targets with FMA, and
 * the files that include this are built for the baseline x86-64.
 */
#ifndef RILL_FRAMEWORK_BASE_STD_RANDOM_H
#define RILL_FRAMEWORK_BASE_STD_RANDOM_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#define RILL_MINSTD_M 2147483647u
#define RILL_MINSTD_A 48271u

typedef struct rill_minstd {
  uint64_t x;
} rill_minstd;

/* seed: the value the engine's seed() receives, as an unsigned 64-bit number (an int
 * seed is sign-extended, an unsigned int one is not). */
static inline void rill_minstd_seed(rill_minstd *e, uint64_t seed) {
  e->x = seed % RILL_MINSTD_M;
  if (e->x == 0) e->x = 1;
}

/* The next draw minus the engine's minimum. */
static inline uint32_t rill_minstd_next(rill_minstd *e) {
  e->x = e->x * RILL_MINSTD_A % RILL_MINSTD_M;
  return (uint32_t)e->x - 1;
}

static inline void rill_minstd_discard(rill_minstd *e, uint64_t n) {
  uint64_t mul = 1, base = RILL_MINSTD_A;
  for (; n; n >>= 1, base = base * base % RILL_MINSTD_M)
    if (n & 1) mul = mul * base % RILL_MINSTD_M;
  e->x = e->x * mul % RILL_MINSTD_M;
}

/* A value of uniform_int_distribution over [0, range]: below the draws' own range
 * (2^31 - 3), range + 1 buckets scaled down from a draw, a draw past the last whole
 * bucket rejected; above it, a draw of the high part (range / 2^31-2, recursively)
 * times 2^31 - 2 plus a draw, rejected when past range or wrapped. */
static inline uint64_t rill_minstd_uniform_int(rill_minstd *e, uint64_t range) {
  const uint64_t own = RILL_MINSTD_M - 2;
  if (range == own) return rill_minstd_next(e);
  if (range < own) {
    uint64_t buckets = range + 1, scale = own / buckets, past = buckets * scale, r;
    do r = rill_minstd_next(e);
    while (r >= past);
    return r / scale;
  }
  uint64_t high, r;
  do {
    high = (own + 1) * rill_minstd_uniform_int(e, range / (own + 1));
    r = high + rill_minstd_next(e);
  } while (r > range || r < high);
  return r;
}

/* glibc's random() after srandom(seed) (its default additive feedback generator, the
 * one std::rand uses): r[0] = seed (1 for 0), r[i] = 16807 r[i-1] mod 2^31 - 1 up to
 * r[30], r[31..33] = r[0..2], then r[i] = r[i-31] + r[i-3] mod 2^32; the outputs are
 * r[344], r[345], ... shifted right once. Paddle 1.8.5's randperm shuffles with it. */
typedef struct rill_glibc_rand {
  uint32_t r[34];
  int i;
} rill_glibc_rand;

static inline uint32_t rill_glibc_rand_next(rill_glibc_rand *g) {
  int i = g->i, k = (i + 3) % 34, j = (i + 31) % 34; /* r[n-31] and r[n-3] of n = i + 34 */
  g->r[i] = g->r[k] + g->r[j];
  g->i = (i + 1) % 34;
  return g->r[i] >> 1;
}

static inline void rill_glibc_rand_seed(rill_glibc_rand *g, uint32_t seed) {
  int32_t w = (int32_t)(seed ? seed : 1);
  g->r[0] = (uint32_t)w;
  for (int i = 1; i < 31; i++) {
    int64_t v = (int64_t)w * 16807 % 2147483647;
    w = (int32_t)(v < 0 ? v + 2147483647 : v);
    g->r[i] = (uint32_t)w;
  }
  for (int i = 31; i < 34; i++) g->r[i] = g->r[i - 31];
  g->i = 0;
  for (int n = 34; n < 344; n++) rill_glibc_rand_next(g);
}

static inline float rill_minstd_canonical_fp32(rill_minstd *e) {
  float u = (float)rill_minstd_next(e) / (float)(RILL_MINSTD_M - 1);
  return u >= 1.0f ? nextafterf(1.0f, 0.0f) : u;
}

static inline double rill_minstd_canonical_fp64(rill_minstd *e) {
  const double r = (double)(RILL_MINSTD_M - 1);
  double sum = (double)rill_minstd_next(e);
  double hi = (double)rill_minstd_next(e) * r;
  sum += hi;
  double u = sum / (r * r);
  return u >= 1.0 ? nextafter(1.0, 0.0) : u;
}

static inline float rill_minstd_uniform_fp32(rill_minstd *e, float a, float b) {
  float span = b - a;
  float v = rill_minstd_canonical_fp32(e) * span;
  return v + a;
}

static inline double rill_minstd_uniform_fp64(rill_minstd *e, double a, double b) {
  double span = b - a;
  double v = rill_minstd_canonical_fp64(e) * span;
  return v + a;
}

/* A normal_distribution: the engine and the second value of the last pair. */
typedef struct rill_minstd_normal {
  rill_minstd e;
  bool have_saved;
  double saved; /* a float's value is held exactly */
} rill_minstd_normal;

static inline void rill_minstd_normal_seed(rill_minstd_normal *g, uint64_t seed) {
  rill_minstd_seed(&g->e, seed);
  g->have_saved = false;
}

/* rill_minstd_normal_fp32 and _fp64: the next value of normal_distribution<T>(mean, sd). */
#define RILL_MINSTD_NORMAL(T, SUF, LOG, SQRT)                                                  \
  static inline T rill_minstd_normal_##SUF(rill_minstd_normal *g, T mean, T sd) {              \
    T z;                                                                                       \
    if (g->have_saved) {                                                                       \
      g->have_saved = false;                                                                   \
      z = (T)g->saved;                                                                         \
    } else {                                                                                   \
      T x, y, r2;                                                                              \
      do {                                                                                     \
        x = (T)2 * rill_minstd_canonical_##SUF(&g->e) - (T)1;                                  \
        y = (T)2 * rill_minstd_canonical_##SUF(&g->e) - (T)1;                                  \
        T xx = x * x, yy = y * y;                                                              \
        r2 = xx + yy;                                                                          \
      } while (r2 > (T)1 || r2 == (T)0);                                                       \
      T l = (T)-2 * LOG(r2);                                                                   \
      T m = SQRT(l / r2);                                                                      \
      g->saved = x * m;                                                                        \
      g->have_saved = true;                                                                    \
      z = y * m;                                                                               \
    }                                                                                          \
    T s = z * sd;                                                                              \
    return s + mean;                                                                           \
  }

RILL_MINSTD_NORMAL(float, fp32, logf, sqrtf)
RILL_MINSTD_NORMAL(double, fp64, log, sqrt)

#endif
