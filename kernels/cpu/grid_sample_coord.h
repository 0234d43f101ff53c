/* grid_sampler's source coordinates, shared by its CPU kernels (kernels/cpu/grid_sampler.c)
 * and its device code (kernels/cuda/device/grid_sample.cu): a Grid value g (in [-1, 1]
 * inside the input) as a point along an axis of `size` elements, with align_corners (ac)
 * or half-pixel unnormalising, and zeros (none), border (clamped) or reflection padding
 * (folded back, then clamped); and its derivative in g. All in double. */
#ifndef RILL_KERNELS_CPU_GRID_SAMPLE_COORD_H
#define RILL_KERNELS_CPU_GRID_SAMPLE_COORD_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

enum { RILL_GRID_PAD_ZEROS, RILL_GRID_PAD_BORDER, RILL_GRID_PAD_REFLECT };

#ifdef __CUDACC__
#define RILL_GRID_COORD_FN __host__ __device__ static inline
#else
#define RILL_GRID_COORD_FN static inline
#endif

/* Triangle-wave reflection of x into [lo2 / 2, hi2 / 2] (bounds given doubled). */
RILL_GRID_COORD_FN double rill_grid_reflect(double x, double lo2, double hi2) {
  if (lo2 == hi2) return 0;
  double mn = lo2 / 2, span = (hi2 - lo2) / 2;
  x = fabs(x - mn);
  double extra = fmod(x, span);
  int64_t flips = (int64_t)floor(x / span);
  return flips % 2 == 0 ? extra + mn : span - extra + mn;
}

RILL_GRID_COORD_FN double rill_grid_source(double g, int64_t size, bool ac, int pad) {
  double x = ac ? (g + 1) / 2 * (double)(size - 1) : ((g + 1) * (double)size - 1) / 2;
  if (pad == RILL_GRID_PAD_BORDER) {
    x = x < 0 ? 0 : x > (double)(size - 1) ? (double)(size - 1) : x;
  } else if (pad == RILL_GRID_PAD_REFLECT) {
    x = ac ? rill_grid_reflect(x, 0, 2.0 * (double)(size - 1)) : rill_grid_reflect(x, -1, 2.0 * (double)size - 1);
    x = x < 0 ? 0 : x > (double)(size - 1) ? (double)(size - 1) : x;
  }
  return x;
}

/* d rill_grid_source / d g: the unnormalising scale, 0 where border padding clamps. */
RILL_GRID_COORD_FN double rill_grid_source_slope(double g, int64_t size, bool ac, int pad) {
  double x = ac ? (g + 1) / 2 * (double)(size - 1) : ((g + 1) * (double)size - 1) / 2;
  if (pad == RILL_GRID_PAD_BORDER && (x < 0 || x > (double)(size - 1))) return 0;
  return ac ? (double)(size - 1) / 2 : (double)size / 2;
}

#endif
