/* The CPU backend: every kernel of kernels.def, tensor memory from the library's
 * allocator, copies that are memcpy, and OpenBLAS kept to one thread. */
#include <cblas.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/kernels.h"

static const rill_kernel_def cpu_kernels[] = {
#define RILL_CPU_KERNEL(op, dtype, fn) {#op, RILL_DEVICE_CPU, dtype, fn, NULL},
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

#define ADD_ALL(T)                                         \
  do {                                                     \
    T *d_ = dst;                                           \
    const T *s_ = src;                                     \
    for (size_t i = 0; i < n; i++) d_[i] = d_[i] + s_[i]; \
  } while (0)

static rill_status *cpu_accumulate(const rill_backend *b, rill_place place, rill_dtype dtype, void *dst,
                                   const void *src, size_t n) {
  (void)b;
  (void)place;
  switch (dtype) {
    case RILL_DTYPE_FP32:
      ADD_ALL(float);
      return NULL;
    case RILL_DTYPE_FP64:
      ADD_ALL(double);
      return NULL;
    case RILL_DTYPE_INT32:
      ADD_ALL(int32_t);
      return NULL;
    case RILL_DTYPE_INT64:
      ADD_ALL(int64_t);
      return NULL;
    default:
      return rill_error(RILL_UNIMPLEMENTED, "the CPU backend adds float32, float64, int32 and int64 tensors, not %s",
                        rill_dtype_name(dtype));
  }
}
#undef ADD_ALL

/* Kernels split their work over the process-wide compute pool (parallel_for), whose
 * workers are sized to the cores; OpenBLAS threads of its own, one per core, would
 * share those cores with the pool's and, under several executors at once, with every
 * other caller's. So each BLAS call runs on the thread that makes it. */
static void cpu_start(const rill_backend *b) {
  (void)b;
  openblas_set_num_threads(1);
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
    .start = cpu_start,
    .accumulate = cpu_accumulate,
};
