/* The CUDA backend's table: the kernels of kernels.def, tensor memory from each
 * device's caching allocator, and copies staged through pinned host memory on the
 * device's stream. */
#include <stdio.h>
#include <string.h>

#include <cuda_profiler_api.h>

#include "kernels/cuda/cuda.h"

static const rill_kernel_def cuda_kernels[] = {
#define RILL_CUDA_KERNEL(op, dtype, fn) {#op, RILL_DEVICE_CUDA, dtype, fn, NULL},
#define RILL_CUDA_KERNEL_IF(op, dtype, fn, accepts) {#op, RILL_DEVICE_CUDA, dtype, fn, accepts},
#include "kernels/cuda/kernels.def"
#undef RILL_CUDA_KERNEL_IF
#undef RILL_CUDA_KERNEL
};

static void *cuda_alloc(const rill_device_memory *m, rill_place place, size_t bytes) {
  (void)m;
  rill_cuda_dev *d = NULL;
  rill_status *st = rill_cuda_dev_get(place.id, &d);
  if (st) {
    /* The executor reports the failed allocation; the place was checked when it was
     * made (cuda_check_place). */
    rill_status_destroy(st);
    return NULL;
  }
  return rill_cuda_mem_alloc(d, bytes);
}

static void cuda_free(const rill_device_memory *m, rill_place place, void *p) {
  (void)m;
  rill_cuda_dev *d = NULL;
  if (!p) return;
  rill_status *st = rill_cuda_dev_get(place.id, &d);
  if (st) {
    rill_status_destroy(st);
    return;
  }
  rill_cuda_mem_free(d, p);
}

/* Waits for the device's queue: an error of a kernel enqueued earlier surfaces here. */
static rill_status *sync_locked(rill_cuda_dev *d, const char *what) {
  cudaError_t e = cudaStreamSynchronize(d->stream);
  if (e == cudaSuccess) return NULL;
  char msg[96];
  snprintf(msg, sizeof msg, "cuda:%d: %s", d->id, what);
  return rill_cuda_error(e, msg);
}

static rill_status *cuda_to_host(const rill_backend *b, void *dst, rill_place src_place,
                                 const void *src, size_t n) {
  (void)b;
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_dev_get(src_place.id, &d));
  rill_status *st = NULL;
  cudaSetDevice(d->id);
  pthread_mutex_lock(&d->lock);
  for (size_t off = 0; off < n && !st; off += d->staging_bytes) {
    size_t c = n - off < d->staging_bytes ? n - off : d->staging_bytes;
    cudaError_t e = cudaMemcpyAsync(d->staging, (const char *)src + off, c, cudaMemcpyDeviceToHost, d->stream);
    if (e != cudaSuccess) {
      st = rill_cuda_error(e, "copy from the device");
      break;
    }
    if (!(st = sync_locked(d, "copy from the device"))) memcpy((char *)dst + off, d->staging, c);
  }
  pthread_mutex_unlock(&d->lock);
  return st;
}

static rill_status *cuda_from_host(const rill_backend *b, rill_place dst_place, void *dst,
                                   const void *src, size_t n) {
  (void)b;
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_dev_get(dst_place.id, &d));
  rill_status *st = NULL;
  cudaSetDevice(d->id);
  pthread_mutex_lock(&d->lock);
  for (size_t off = 0; off < n && !st; off += d->staging_bytes) {
    size_t c = n - off < d->staging_bytes ? n - off : d->staging_bytes;
    /* The staging buffer is refilled once the copy out of it has finished; the copies
     * themselves stay queued, behind the kernels before them. */
    cudaError_t e = cudaEventSynchronize(d->staged);
    if (e == cudaSuccess) {
      memcpy(d->staging, (const char *)src + off, c);
      e = cudaMemcpyAsync((char *)dst + off, d->staging, c, cudaMemcpyHostToDevice, d->stream);
    }
    if (e == cudaSuccess) e = cudaEventRecord(d->staged, d->stream);
    if (e != cudaSuccess) st = rill_cuda_error(e, "copy to the device");
  }
  pthread_mutex_unlock(&d->lock);
  return st;
}

static rill_status *cuda_copy(const rill_backend *b, rill_place dst_place, void *dst,
                              rill_place src_place, const void *src, size_t n) {
  (void)b;
  rill_cuda_dev *dd = NULL, *sd = NULL;
  RILL_TRY(rill_cuda_dev_get(dst_place.id, &dd));
  RILL_TRY(rill_cuda_dev_get(src_place.id, &sd));
  if (!n) return NULL;
  cudaError_t e;
  if (dd == sd) {
    cudaSetDevice(dd->id);
    e = cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, dd->stream);
    return e == cudaSuccess ? NULL : rill_cuda_error(e, "copy on the device");
  }
  /* Between two devices: both queues drained first, then a synchronous peer copy. */
  pthread_mutex_lock(&sd->lock);
  rill_status *st = sync_locked(sd, "copy between devices");
  pthread_mutex_unlock(&sd->lock);
  if (st) return st;
  pthread_mutex_lock(&dd->lock);
  st = sync_locked(dd, "copy between devices");
  pthread_mutex_unlock(&dd->lock);
  if (st) return st;
  e = cudaMemcpyPeer(dst, dd->id, src, sd->id, n);
  return e == cudaSuccess ? NULL : rill_cuda_error(e, "copy between devices");
}

static rill_status *cuda_check_place(const rill_backend *b, rill_place place) {
  (void)b;
  rill_cuda_dev *d = NULL;
  return rill_cuda_dev_get(place.id, &d);
}

static rill_status *cuda_memory_stats(const rill_backend *b, rill_place place, rill_device_memory_stats *out) {
  (void)b;
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_dev_get(place.id, &d));
  rill_cuda_mem_stats s;
  rill_cuda_mem_get_stats(d, &s);
  *out = (rill_device_memory_stats){s.current, s.peak, s.cached, s.reserved, s.device_mallocs};
  return NULL;
}

static rill_status *cuda_profiler(const rill_backend *b, rill_place place, bool start) {
  (void)b;
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_dev_get(place.id, &d));
  cudaError_t e = cudaSetDevice(place.id);
  if (e == cudaSuccess) e = start ? cudaProfilerStart() : cudaProfilerStop();
  return e == cudaSuccess ? NULL : rill_cuda_error(e, start ? "cudaProfilerStart" : "cudaProfilerStop");
}

static void *cuda_pinned_alloc(const rill_backend *b, size_t bytes) {
  (void)b;
  void *p = NULL;
  return cudaHostAlloc(&p, bytes, cudaHostAllocPortable) == cudaSuccess ? p : NULL;
}

static void cuda_pinned_free(const rill_backend *b, void *p) {
  (void)b;
  cudaFreeHost(p);
}

static rill_status *cuda_accumulate(const rill_backend *b, rill_place place, rill_dtype dtype, void *dst,
                                    const void *src, size_t n) {
  (void)b;
  if (dtype != RILL_DTYPE_FP32)
    return rill_error(RILL_UNIMPLEMENTED, "the CUDA backend adds float32 tensors, not %s", rill_dtype_name(dtype));
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_dev_get(place.id, &d));
  if (!n) return NULL;
  cudaSetDevice(d->id);
  cudaError_t e = rill_cuda_accumulate_f32(dst, src, (int64_t)n, d->stream);
  return e == cudaSuccess ? NULL : rill_cuda_error(e, "adding on the device");
}

static rill_status *cuda_zero(const rill_backend *b, rill_place place, void *dst, size_t n) {
  (void)b;
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_dev_get(place.id, &d));
  if (!n) return NULL;
  cudaSetDevice(d->id);
  cudaError_t e = cudaMemsetAsync(dst, 0, n, d->stream);
  return e == cudaSuccess ? NULL : rill_cuda_error(e, "zeroing on the device");
}

static int32_t cuda_device_count(const rill_backend *b) {
  (void)b;
  return rill_cuda_runtime_devices();
}

const rill_backend rill_cuda_backend = {
    .api_version = RILL_BACKEND_API_VERSION,
    .name = "cuda",
    .device = RILL_DEVICE_CUDA,
    .kernels = cuda_kernels,
    .nkernels = RILL_COUNTOF(cuda_kernels),
    .memory = {.alloc = cuda_alloc, .free = cuda_free},
    .copy_to_host = cuda_to_host,
    .copy_from_host = cuda_from_host,
    .copy = cuda_copy,
    .check_place = cuda_check_place,
    .device_count = cuda_device_count,
    .memory_stats = cuda_memory_stats,
    .profiler = cuda_profiler,
    .pinned_alloc = cuda_pinned_alloc,
    .pinned_free = cuda_pinned_free,
    .accumulate = cuda_accumulate,
    .zero = cuda_zero,
};
