/* The CPU backend: every kernel of kernels.def, tensor memory from the library's
 * allocator, and copies that are memcpy. */
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/kernels.h"

static const rill_kernel_def cpu_kernels[] = {
#define RILL_CPU_KERNEL(op, dtype, fn) {#op, RILL_DEVICE_CPU, dtype, fn},
#include "kernels/cpu/kernels.def"
#undef RILL_CPU_KERNEL
};

static void *cpu_alloc(const rill_device_memory *m, rill_place place, size_t bytes) {
  (void)m;
  (void)place;
  return rill_aligned_alloc(bytes ? bytes : 1, RILL_TENSOR_ALIGN);
}

static void cpu_free(const rill_device_memory *m, rill_place place, void *p) {
  (void)m;
  (void)place;
  rill_free(p);
}

static rill_status *cpu_copy_to_host(const rill_backend *b, void *dst, rill_place src_place,
                                     const void *src, size_t n) {
  (void)b;
  (void)src_place;
  if (n) memmove(dst, src, n);
  return NULL;
}

static rill_status *cpu_copy_from_host(const rill_backend *b, rill_place dst_place, void *dst,
                                       const void *src, size_t n) {
  (void)b;
  (void)dst_place;
  if (n) memmove(dst, src, n);
  return NULL;
}

static rill_status *cpu_copy(const rill_backend *b, rill_place dst_place, void *dst,
                             rill_place src_place, const void *src, size_t n) {
  (void)b;
  (void)dst_place;
  (void)src_place;
  if (n) memmove(dst, src, n);
  return NULL;
}

const rill_backend rill_cpu_backend = {
    .api_version = RILL_BACKEND_API_VERSION,
    .name = "cpu",
    .device = RILL_DEVICE_CPU,
    .kernels = cpu_kernels,
    .nkernels = RILL_COUNTOF(cpu_kernels),
    .memory = {.alloc = cpu_alloc, .free = cpu_free},
    .copy_to_host = cpu_copy_to_host,
    .copy_from_host = cpu_copy_from_host,
    .copy = cpu_copy,
};
