/* The pooling window of one output index along one dim, as pool2d and pool3d take it
 * (Paddle 1.8's rules): it starts at o * stride - pad_before and ends at start + k
 * (adaptive: [floor(o * in / out), ceil((o + 1) * in / out))), then is clipped to [0, in).
 * `size` is the window's share of the divisor of a non-exclusive average: the kernel
 * extent k whatever the clipping (padding and a ceil_mode overhang past it both counted),
 * or, adaptive, the window's own extent. */
#ifndef RILL_KERNELS_CPU_POOL_WINDOW_H
#define RILL_KERNELS_CPU_POOL_WINDOW_H

#include <stdbool.h>
#include <stdint.h>

typedef struct rill_pool_window {
  int64_t start, end, size; /* clipped [start, end); size: see above */
} rill_pool_window;

/* The CUDA pooling kernel (kernels/cuda/device/pool.cu) takes its windows from here too. */
#ifdef __CUDACC__
#define RILL_POOL_WINDOW_FN __host__ __device__ static inline
#else
#define RILL_POOL_WINDOW_FN static inline
#endif

RILL_POOL_WINDOW_FN rill_pool_window rill_pool_window_at(int64_t o, int64_t in, int64_t out, int64_t k,
                                                   int64_t s, int64_t pad, bool adaptive) {
  rill_pool_window w;
  if (adaptive) {
    w.start = o * in / out;
    w.end = ((o + 1) * in + out - 1) / out;
    w.size = w.end - w.start;
    return w;
  }
  w.start = o * s - pad;
  w.end = w.start + k;
  w.size = k;
  if (w.start < 0) w.start = 0;
  if (w.end > in) w.end = in;
  if (w.end < w.start) w.end = w.start;
  return w;
}

#endif
