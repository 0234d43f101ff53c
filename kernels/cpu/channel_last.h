/* Channel-last (NHWC / NDHWC) convolutions run their channel-first code between
 * transposes: per image, [a, b] <-> [b, a], with a = the spatial volume and b = the
 * channels (to channel-first) or a = the channels and b = the volume (back). */
#ifndef RILL_KERNELS_CPU_CHANNEL_LAST_H
#define RILL_KERNELS_CPU_CHANNEL_LAST_H

#include <stdint.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/kernels.h"

/* Tile edge of the transpose: a tile's rows and columns both stay in cache. Within a
 * tile the destination is written contiguously: with few channels the other order
 * writes a handful of values a whole volume apart, which collide in the cache sets. */
#define RILL_SWAP_TILE 32

#define RILL_SWAP_LAST2(T, src, dst, n, a, b)                                                  \
  do {                                                                                         \
    const T *s_ = (const T *)(src);                                                            \
    T *d_ = (T *)(dst);                                                                        \
    for (int64_t i_ = 0; i_ < (n); i_++, s_ += (a) * (b), d_ += (a) * (b))                     \
      for (int64_t r0_ = 0; r0_ < (a); r0_ += RILL_SWAP_TILE)                                  \
        for (int64_t c0_ = 0; c0_ < (b); c0_ += RILL_SWAP_TILE) {                              \
          int64_t r1_ = r0_ + RILL_SWAP_TILE < (a) ? r0_ + RILL_SWAP_TILE : (a);               \
          int64_t c1_ = c0_ + RILL_SWAP_TILE < (b) ? c0_ + RILL_SWAP_TILE : (b);               \
          for (int64_t c_ = c0_; c_ < c1_; c_++)                                               \
            for (int64_t r_ = r0_; r_ < r1_; r_++) d_[c_ * (a) + r_] = s_[r_ * (b) + c_];      \
        }                                                                                      \
  } while (0)

/* dst[i][c][r] = src[i][r][c] for n images of [a, b] float32 or float64 values. */
static inline void rill_swap_last2(rill_dtype dt, const void *src, void *dst, int64_t n, int64_t a,
                                   int64_t b) {
  if (dt == RILL_DTYPE_FP32) RILL_SWAP_LAST2(float, src, dst, n, a, b);
  else RILL_SWAP_LAST2(double, src, dst, n, a, b);
}

/* An aligned scratch buffer of count float32 or float64 values (at least one), or NULL. */
static inline void *rill_layout_scratch(rill_dtype dt, int64_t count) {
  size_t es = dt == RILL_DTYPE_FP32 ? sizeof(float) : sizeof(double);
  return rill_aligned_alloc((size_t)(count > 0 ? count : 1) * es, RILL_TENSOR_ALIGN);
}

#endif
