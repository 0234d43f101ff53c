/* Shared pieces of the normalisation kernels (group_norm, instance_norm). */
#ifndef RILL_KERNELS_CPU_NORM_H
#define RILL_KERNELS_CPU_NORM_H

#include "kernels/cpu/kernels.h"

/* Writes the n per-channel sums v (accumulated in double) to t, float32 or float64; a
 * NULL t (the gradient is not wanted) is skipped. */
static inline void rill_cpu_norm_store_sums(rill_tensor *t, const double *v, int64_t n) {
  if (!t) return;
  if (t->dtype == RILL_DTYPE_FP64) {
    double *p = rill_tensor_ptr(t);
    for (int64_t i = 0; i < n; i++) p[i] = v[i];
  } else {
    float *p = rill_tensor_ptr(t);
    for (int64_t i = 0; i < n; i++) p[i] = (float)v[i];
  }
}

#endif
