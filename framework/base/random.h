/* A small, fast, reproducible random generator (xoshiro256** seeded by splitmix64).
 * Same seed, same stream, on every machine: random ops and dropout use it so two runs
 * with the same seed give bitwise-identical results. The generator is inline: the CUDA
 * backend draws dropout's masks with it too, so both places drop the same elements. */
#ifndef RILL_FRAMEWORK_BASE_RANDOM_H
#define RILL_FRAMEWORK_BASE_RANDOM_H

#include <stdint.h>

typedef struct rill_rng {
  uint64_t s[4];
} rill_rng;

static inline uint64_t rill_splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static inline void rill_rng_seed(rill_rng *r, uint64_t seed) {
  for (int i = 0; i < 4; i++) r->s[i] = rill_splitmix64(&seed);
}

static inline uint64_t rill_rng_next(rill_rng *r) {
  uint64_t *s = r->s;
  uint64_t x = s[1] * 5;
  uint64_t result = ((x << 7) | (x >> 57)) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = (s[3] << 45) | (s[3] >> 19);
  return result;
}

/* Uniform in [0, 1). */
static inline double rill_rng_uniform(rill_rng *r) { return (double)(rill_rng_next(r) >> 11) * 0x1.0p-53; }

/* Standard normal (Box-Muller, one value per call). */
double rill_rng_normal(rill_rng *r);

/* The seed of one run of an op that draws anew each run, from the n-th draw of the
 * executor's generator (rill_device_services.random_u64). */
static inline uint64_t rill_rng_run_seed(uint64_t n) { return (n + 1) * 0xD1B54A32D192ED03ull; }

#endif
