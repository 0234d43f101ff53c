/* Helpers shared by the detection ops' schemas and kernels (prior_box, box_coder,
 * yolo_box, multiclass_nms). */
#ifndef RILL_OPERATORS_DETECTION_H
#define RILL_OPERATORS_DETECTION_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>

/* prior_box's aspect ratios as Paddle expands them: 1 first, then each given ratio not
 * already present (within 1e-6), followed by its inverse when `flip`. `out` has room for
 * 1 + 2 * n values; returns how many were written. */
static inline size_t rill_prior_box_ratios(const float *in, size_t n, bool flip, float *out) {
  size_t k = 0;
  out[k++] = 1.0f;
  for (size_t i = 0; i < n; i++) {
    bool seen = false;
    for (size_t j = 0; j < k && !seen; j++) seen = fabsf(in[i] - out[j]) < 1e-6f;
    if (seen) continue;
    out[k++] = in[i];
    if (flip) out[k++] = 1.0f / in[i];
  }
  return k;
}

#endif
