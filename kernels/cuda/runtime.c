/* The CUDA device runtime: device discovery, one context per device (stream, cuBLAS and
 * cuDNN handles on it, workspace, pinned staging), and the caching allocator. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cuda/cuda.h"

/* cuBLAS's workspace; cuDNN's algorithms get theirs from the allocator. */
#define WORKSPACE_BYTES ((size_t)32 << 20)
/* Pinned host memory each device stages copies through. */
#define STAGING_BYTES ((size_t)8 << 20)

static pthread_mutex_t devs_lock = PTHREAD_MUTEX_INITIALIZER;
static int ndevs;
static rill_cuda_dev **devs;

rill_status *rill_cuda_error(cudaError_t e, const char *what) {
  return rill_error(RILL_UNAVAILABLE, "%s: %s: %s", what, cudaGetErrorName(e), cudaGetErrorString(e));
}

rill_status *rill_cublas_error(cublasStatus_t e, const char *what) {
  return rill_error(e == CUBLAS_STATUS_ALLOC_FAILED ? RILL_OUT_OF_MEMORY : RILL_INTERNAL,
                    "%s: %s: %s", what, cublasGetStatusName(e), cublasGetStatusString(e));
}

rill_status *rill_cuda_runtime_start(void) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e == cudaErrorNoDevice || (e == cudaSuccess && n == 0))
    return rill_error(RILL_UNAVAILABLE, "no CUDA device: the driver reports none");
  if (e == cudaErrorInsufficientDriver)
    return rill_error(RILL_UNAVAILABLE,
                      "no usable CUDA driver: none is installed, or it is older than the CUDA "
                      "runtime this backend was built with (%s)",
                      cudaGetErrorString(e));
  if (e != cudaSuccess) {
    rill_status *st = rill_cuda_error(e, "no CUDA device: cudaGetDeviceCount");
    return st;
  }
  rill_cuda_dev **table = rill_calloc((size_t)n, sizeof *table);
  if (!table) return rill_oom();
  devs = table;
  ndevs = n;
  return NULL;
}

int32_t rill_cuda_runtime_devices(void) { return ndevs; }

bool rill_cuda_allow_tf32(void) {
  const char *v = getenv("RILL_CUDA_TF32");
  return v && strcmp(v, "1") == 0;
}

static void dev_destroy(rill_cuda_dev *d) {
  rill_cuda_conv_algos_free(d->conv_algos);
  if (d->staged) cudaEventDestroy(d->staged);
  if (d->staging) cudaFreeHost(d->staging);
  if (d->workspace) cudaFree(d->workspace);
  if (d->dnn) cudnnDestroy(d->dnn);
  if (d->blas) cublasDestroy(d->blas);
  if (d->stream) cudaStreamDestroy(d->stream);
  rill_free(d);
}

static rill_status *dev_create(int id, rill_cuda_dev **out) {
  char what[96];
  rill_cuda_dev *d = rill_calloc(1, sizeof *d);
  if (!d) return rill_oom();
  d->id = id;
  rill_status *st = NULL;
  cudaError_t e;
  cublasStatus_t be;
  cudnnStatus_t de;
#define FAIL_CUDA(call, text)                                                    \
  if ((e = (call)) != cudaSuccess) {                                             \
    snprintf(what, sizeof what, "cuda:%d: %s", id, text);                        \
    st = rill_cuda_error(e, what);                                               \
    goto fail;                                                                   \
  }
  FAIL_CUDA(cudaSetDevice(id), "cudaSetDevice");
  FAIL_CUDA(cudaStreamCreateWithFlags(&d->stream, cudaStreamNonBlocking), "cudaStreamCreate");
  if ((be = cublasCreate(&d->blas)) != CUBLAS_STATUS_SUCCESS) {
    snprintf(what, sizeof what, "cuda:%d: cublasCreate", id);
    st = rill_cublas_error(be, what);
    goto fail;
  }
  FAIL_CUDA(cudaMalloc(&d->workspace, WORKSPACE_BYTES), "the cuBLAS workspace");
  d->workspace_bytes = WORKSPACE_BYTES;
  if ((be = cublasSetStream(d->blas, d->stream)) != CUBLAS_STATUS_SUCCESS ||
      (be = cublasSetWorkspace(d->blas, d->workspace, d->workspace_bytes)) != CUBLAS_STATUS_SUCCESS ||
      (be = cublasSetMathMode(d->blas, rill_cuda_allow_tf32() ? CUBLAS_TF32_TENSOR_OP_MATH
                                                              : CUBLAS_DEFAULT_MATH)) !=
          CUBLAS_STATUS_SUCCESS) {
    snprintf(what, sizeof what, "cuda:%d: setting up cuBLAS", id);
    st = rill_cublas_error(be, what);
    goto fail;
  }
  if ((de = cudnnCreate(&d->dnn)) != CUDNN_STATUS_SUCCESS ||
      (de = cudnnSetStream(d->dnn, d->stream)) != CUDNN_STATUS_SUCCESS) {
    st = rill_error(RILL_UNAVAILABLE, "cuda:%d: setting up cuDNN: %s", id, cudnnGetErrorString(de));
    goto fail;
  }
  FAIL_CUDA(cudaMallocHost(&d->staging, STAGING_BYTES), "pinned staging memory");
  FAIL_CUDA(cudaEventCreateWithFlags(&d->staged, cudaEventDisableTiming), "cudaEventCreate");
  d->staging_bytes = STAGING_BYTES;
#undef FAIL_CUDA
  pthread_mutex_init(&d->lock, NULL);
  pthread_mutex_init(&d->mem_lock, NULL);
  *out = d;
  return NULL;
fail:
  dev_destroy(d);
  return st;
}

rill_status *rill_cuda_dev_get(int32_t id, rill_cuda_dev **out) {
  if (id < 0 || id >= ndevs)
    return rill_error(RILL_INVALID_ARGUMENT,
                      "place cuda:%d does not exist: this machine has %d CUDA device%s (cuda:0%s)",
                      (int)id, ndevs, ndevs == 1 ? "" : "s", ndevs == 1 ? "" : " and up");
  pthread_mutex_lock(&devs_lock);
  rill_status *st = devs[id] ? NULL : dev_create(id, &devs[id]);
  *out = devs[id];
  pthread_mutex_unlock(&devs_lock);
  return st;
}

/* ---- the caching allocator ---- */

/* Sizes round up to 512 bytes below 1 MiB and to 2 MiB above, so that a program's
 * repeated shapes land on the same few classes. */
static size_t class_size(size_t bytes) {
  size_t g = bytes < ((size_t)1 << 20) ? 512 : (size_t)2 << 20;
  return bytes > SIZE_MAX - g ? 0 : (bytes + g - 1) / g * g;
}

static size_t bucket_slot(const rill_cuda_dev *d, size_t size) {
  size_t h = (size / 512) * 0x9e3779b97f4a7c15ULL;
  size_t mask = d->nbuckets - 1;
  size_t i = h & mask;
  while (d->buckets[i].size && d->buckets[i].size != size) i = (i + 1) & mask;
  return i;
}

/* Makes sure size has a bucket, so that freeing a block never allocates. */
static bool bucket_ensure(rill_cuda_dev *d, size_t size) {
  if (d->nbuckets && d->buckets[bucket_slot(d, size)].size == size) return true;
  if ((d->usedbuckets + 1) * 2 > d->nbuckets) {
    size_t cap = d->nbuckets ? d->nbuckets * 2 : 64;
    rill_cuda_bucket *nb = rill_calloc(cap, sizeof *nb);
    if (!nb) return false;
    rill_cuda_bucket *old = d->buckets;
    size_t oldn = d->nbuckets;
    d->buckets = nb;
    d->nbuckets = cap;
    for (size_t i = 0; i < oldn; i++)
      if (old[i].size) d->buckets[bucket_slot(d, old[i].size)] = old[i];
    rill_free(old);
  }
  size_t i = bucket_slot(d, size);
  if (!d->buckets[i].size) {
    d->buckets[i].size = size;
    d->usedbuckets++;
  }
  return true;
}

/* Index of the first block whose address is >= p. */
static size_t block_lower(const rill_cuda_dev *d, const void *p) {
  size_t lo = 0, hi = d->nblocks;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if ((uintptr_t)d->blocks[mid]->ptr < (uintptr_t)p)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static void trim_locked(rill_cuda_dev *d) {
  size_t kept = 0;
  for (size_t i = 0; i < d->nblocks; i++) {
    rill_cuda_block *b = d->blocks[i];
    if (b->in_use) {
      d->blocks[kept++] = b;
      continue;
    }
    cudaFree(b->ptr);
    d->stats.reserved -= (int64_t)b->size;
    d->stats.cached -= (int64_t)b->size;
    rill_free(b);
  }
  d->nblocks = kept;
  for (size_t i = 0; i < d->nbuckets; i++) d->buckets[i].head = NULL;
}

void *rill_cuda_mem_alloc(rill_cuda_dev *d, size_t bytes) {
  size_t size = class_size(bytes ? bytes : 1);
  if (!size) return NULL;
  pthread_mutex_lock(&d->mem_lock);
  void *p = NULL;
  rill_cuda_block *b = NULL;
  if (d->nbuckets) {
    rill_cuda_bucket *k = &d->buckets[bucket_slot(d, size)];
    if (k->size == size && k->head) {
      b = k->head;
      k->head = b->next_free;
      d->stats.cached -= (int64_t)size;
    }
  }
  if (!b) {
    /* The cold path: a new block from the device. */
    if (!bucket_ensure(d, size)) goto out;
    if (d->nblocks == d->capblocks) {
      size_t cap = d->capblocks ? d->capblocks * 2 : 64;
      rill_cuda_block **nb = rill_malloc(cap * sizeof *nb);
      if (!nb) goto out;
      if (d->nblocks) memcpy(nb, d->blocks, d->nblocks * sizeof *nb);
      rill_free(d->blocks);
      d->blocks = nb;
      d->capblocks = cap;
    }
    b = rill_calloc(1, sizeof *b);
    if (!b) goto out;
    cudaSetDevice(d->id);
    if (cudaMalloc(&b->ptr, size) != cudaSuccess) {
      (void)cudaGetLastError();
      trim_locked(d);
      if (cudaMalloc(&b->ptr, size) != cudaSuccess) {
        (void)cudaGetLastError();
        rill_free(b);
        b = NULL;
        goto out;
      }
    }
    b->size = size;
    d->stats.reserved += (int64_t)size;
    d->stats.device_mallocs++;
    size_t at = block_lower(d, b->ptr);
    memmove(&d->blocks[at + 1], &d->blocks[at], (d->nblocks - at) * sizeof *d->blocks);
    d->blocks[at] = b;
    d->nblocks++;
  }
  b->in_use = true;
  b->next_free = NULL;
  d->stats.current += (int64_t)size;
  if (d->stats.current > d->stats.peak) d->stats.peak = d->stats.current;
  p = b->ptr;
out:
  pthread_mutex_unlock(&d->mem_lock);
  return p;
}

/* A freed block may still be read by kernels queued before the free: the next user of
 * the block is enqueued on the same stream, after them. */
void rill_cuda_mem_free(rill_cuda_dev *d, void *p) {
  if (!p) return;
  pthread_mutex_lock(&d->mem_lock);
  size_t at = block_lower(d, p);
  if (at < d->nblocks && d->blocks[at]->ptr == p && d->blocks[at]->in_use) {
    rill_cuda_block *b = d->blocks[at];
    rill_cuda_bucket *k = &d->buckets[bucket_slot(d, b->size)];
    b->in_use = false;
    b->next_free = k->head;
    k->head = b;
    d->stats.current -= (int64_t)b->size;
    d->stats.cached += (int64_t)b->size;
  }
  pthread_mutex_unlock(&d->mem_lock);
}

void rill_cuda_mem_get_stats(rill_cuda_dev *d, rill_cuda_mem_stats *out) {
  pthread_mutex_lock(&d->mem_lock);
  *out = d->stats;
  pthread_mutex_unlock(&d->mem_lock);
}

void rill_cuda_mem_trim(rill_cuda_dev *d) {
  pthread_mutex_lock(&d->mem_lock);
  cudaStreamSynchronize(d->stream);
  trim_locked(d);
  pthread_mutex_unlock(&d->mem_lock);
}

/* ---- kernels' helpers ---- */

rill_status *rill_cuda_kernel_dev(rill_kernel_ctx *ctx, const rill_tensor *t, rill_cuda_dev **out) {
  rill_place at = rill_tensor_place(t);
  if (at.device != RILL_DEVICE_CUDA)
    return rill_kernel_error(ctx, "a tensor of the CUDA kernel is on device kind %d, not on a CUDA place",
                             (int)at.device);
  RILL_TRY(rill_cuda_dev_get(at.id, out));
  cudaSetDevice(at.id);
  return NULL;
}

rill_status *rill_cuda_kernel_status(rill_kernel_ctx *ctx, rill_status *st) {
  if (!st) return NULL;
  rill_status *k = rill_kernel_error(ctx, "%s", rill_status_message(st));
  rill_status_destroy(st);
  return k;
}

rill_status *rill_cuda_kernel_check(rill_kernel_ctx *ctx, cudaError_t e, const char *what) {
  if (e == cudaSuccess) return NULL;
  return rill_kernel_error(ctx, "%s: %s: %s", what, cudaGetErrorName(e), cudaGetErrorString(e));
}

/* cuBLAS takes int sizes and leading dimensions. */
static rill_status *gemm_fits(int64_t m, int64_t n, int64_t k, int64_t batch, int64_t lda, int64_t ldb,
                              int64_t ldc) {
  if (m > INT_MAX || n > INT_MAX || k > INT_MAX || batch > INT_MAX || lda > INT_MAX || ldb > INT_MAX ||
      ldc > INT_MAX)
    return rill_error(RILL_OUT_OF_RANGE, "a matrix product of %lld x %lld x %lld (batch %lld) is "
                      "beyond cuBLAS's int sizes", (long long)m, (long long)n, (long long)k,
                      (long long)batch);
  return NULL;
}

rill_status *rill_cuda_sgemm(rill_cuda_dev *d, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                             float alpha, const float *a, int64_t stride_a, const float *b,
                             int64_t stride_b, float beta, float *c, int64_t stride_c,
                             int64_t batch) {
  int64_t lda = ta ? m : k, ldb = tb ? k : n;
  if (batch == 1) return rill_cuda_sgemm_ld(d, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, n);
  RILL_TRY(gemm_fits(m, n, k, batch, lda, ldb, n));
  if (m == 0 || n == 0 || batch == 0) return NULL;
  /* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: B comes first. */
  cublasOperation_t oa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, ob = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  pthread_mutex_lock(&d->lock);
  cublasStatus_t e = cublasSgemmStridedBatched(d->blas, ob, oa, (int)n, (int)m, (int)k, &alpha, b,
                                               ldb < 1 ? 1 : (int)ldb, stride_b, a, lda < 1 ? 1 : (int)lda,
                                               stride_a, &beta, c, (int)n, stride_c, (int)batch);
  pthread_mutex_unlock(&d->lock);
  return e == CUBLAS_STATUS_SUCCESS ? NULL : rill_cublas_error(e, "cublasSgemmStridedBatched");
}

rill_status *rill_cuda_sgemm_ld(rill_cuda_dev *d, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                                const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                                int64_t ldc) {
  RILL_TRY(gemm_fits(m, n, k, 1, lda, ldb, ldc));
  if (m == 0 || n == 0) return NULL;
  /* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: B comes first. */
  cublasOperation_t oa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, ob = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  pthread_mutex_lock(&d->lock);
  cublasStatus_t e = cublasSgemm(d->blas, ob, oa, (int)n, (int)m, (int)k, &alpha, b, ldb < 1 ? 1 : (int)ldb, a,
                                 lda < 1 ? 1 : (int)lda, &beta, c, (int)ldc);
  pthread_mutex_unlock(&d->lock);
  return e == CUBLAS_STATUS_SUCCESS ? NULL : rill_cublas_error(e, "cublasSgemm");
}
