/* Helpers of the sgemm tests: the CPU device's services, the choice of rill's own
 * kernels and its undoing, and a small deterministic random source. */
#ifndef RILL_TESTS_KERNELS_SGEMM_TEST_H
#define RILL_TESTS_KERNELS_SGEMM_TEST_H

#include "framework/base/isa.h"
#include "framework/exec/device.h"
#include "kernels/cpu/sgemm.h"

/* The CPU device's services, for calls that take a thread count. */
static inline const rill_device_services *cpu_dev(void) {
  static struct rill_device_ctx d;
  if (!d.services.parallel_for)
    rill_device_ctx_init(&d, (rill_place){RILL_DEVICE_CPU, 0}, RILL_DEVICE_MAX_THREADS, 1);
  return &d.services;
}

static inline void restore_level(void) {
  rill_cpu_isa_level_set(rill_cpu_isa_level_native());
  rill_sgemm_use = RILL_SGEMM_AUTO;
}

/* rill's kernels at every level the CPU has, whatever OpenBLAS would have been chosen */
static inline void own_kernels(void) { rill_sgemm_use = RILL_SGEMM_OWN; }

static inline float frand(unsigned *s) {
  *s = *s * 1103515245u + 12345u;
  return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

#endif
