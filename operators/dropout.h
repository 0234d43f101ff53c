/* dropout's rules, shared by its kernels on every backend, so a GPU drops exactly the
 * elements the CPU drops for the same seed:
 * - the seed of a run: the Seed input's value when given, else the `seed` attribute
 *   when fix_seed is set (the same mask every run), else the attribute mixed with a
 *   fresh draw of the executor's generator (successive runs differ; the same executor
 *   seed gives the same masks);
 * - element i is dropped when the i-th draw of std::uniform_real_distribution<float>(0, 1)
 *   over a minstd_rand seeded with it (framework/base/std_random.h) is below dropout_prob,
 *   as Paddle 1.8.5 draws: a fixed seed drops Paddle's elements;
 * - kept elements are scaled by 1 / (1 - p) with upscale_in_train (0 when p is 1), by
 *   1 with downgrade_in_infer; at test time every element is scaled by 1 or (1 - p). */
#ifndef RILL_OPERATORS_DROPOUT_H
#define RILL_OPERATORS_DROPOUT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "framework/base/std_random.h"

static inline bool rill_dropout_upscale(const char *implementation) {
  return implementation && strcmp(implementation, "upscale_in_train") == 0;
}

/* seed_input: the Seed input's value, or NULL; next_draw: the executor generator's next
 * draw, called only when the run draws anew. A fixed seed is an int that Paddle hands
 * the engine sign-extended. */
static inline uint64_t rill_dropout_seed(const int32_t *seed_input, int32_t seed, bool fix_seed,
                                         uint64_t (*next_draw)(void *arg), void *arg) {
  if (seed_input) return (uint64_t)(int64_t)*seed_input;
  uint64_t attr = (uint64_t)(int64_t)seed;
  if (fix_seed) return attr;
  return attr * 0x9E3779B97F4A7C15ull ^ next_draw(arg);
}

/* mask[i] = 1 where element i is kept, 0 where dropped. */
static inline void rill_dropout_mask(uint64_t seed, double p, int64_t n, uint8_t *mask) {
  rill_minstd e;
  rill_minstd_seed(&e, seed);
  float pf = (float)p;
  for (int64_t i = 0; i < n; i++) mask[i] = rill_minstd_canonical_fp32(&e) < pf ? 0 : 1;
}

/* The factor of kept elements in training, and of every element at test time. */
static inline double rill_dropout_train_scale(double p, bool upscale) { return upscale ? (p < 1 ? 1 / (1 - p) : 0) : 1; }
static inline double rill_dropout_test_scale(double p, bool upscale) { return upscale ? 1 : 1 - p; }

#endif
