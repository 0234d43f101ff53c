/* The CUDA runtime, cuBLAS and cuDNN calls that librill_cuda.so makes, emulated on the
 * host for the emulated backend (doc/design/cuda.md, "Tests"): one device whose memory
 * is host memory (filled with 0xcd when allocated, so a kernel that reads what nothing
 * wrote shows it) that only the device can touch (below), every copy a memmove, every
 * stream and event synchronous; cuBLAS's
 * sgemm and cuDNN's NCHW float convolutions (forward and both gradients, groups,
 * strides, paddings, dilations) as direct loops summing in double, their descriptors
 * checked against each other as cuDNN checks them. */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---- device memory ----
 *
 * On a GPU, host code that dereferences a device pointer faults or reads garbage; on
 * plain host memory it would read the right numbers, and a kernel of the host that
 * reads a tensor where it lies on the device (rather than through a copy) would pass
 * every emulated test. So the emulated device's memory is one reserved range of
 * addresses that is inaccessible (PROT_NONE) except while the device works on it: an
 * emulated kernel launch, copy, memset, cuBLAS or cuDNN call opens it (device_open)
 * and closes it when done (device_close, the last of concurrent ones). A host read or
 * write of device memory outside those faults, and the fault names the address as
 * emulated device memory before the process dies of it. Allocation is first fit over
 * the freed blocks, else from the top of the range; the backend caches its blocks, so
 * frees are rare. Pinned host memory (cudaHostAlloc) is ordinary host memory. */

#define ARENA_RESERVE (64ull << 30) /* address space, not memory: pages come when touched */
#define ARENA_ALIGN 256

typedef struct {
  size_t at, size;
} arena_block;

static struct {
  pthread_mutex_t lock;
  char *base;
  size_t top;         /* bytes handed out from the start of the range */
  size_t open_top;    /* bytes made accessible by the open that is in force */
  int opened;         /* device_open calls not yet closed */
  arena_block *freed; /* blocks given back, for reuse */
  size_t nfreed, capfreed;
  arena_block *live; /* blocks in use (for cudaFree's size) */
  size_t nlive, caplive;
  struct sigaction previous;
} dev = {.lock = PTHREAD_MUTEX_INITIALIZER};

static size_t page_up(size_t n) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  return (n + page - 1) / page * page;
}

static void report_fault(int sig, siginfo_t *info, void *uctx) {
  (void)uctx;
  char *addr = info->si_addr;
  if (dev.base && addr >= dev.base && addr < dev.base + ARENA_RESERVE) {
    char msg[160];
    int n = snprintf(msg, sizeof msg,
                     "emulated CUDA: host code touched device memory at %p (offset %zu), outside any "
                     "kernel, copy or library call of the device\n",
                     (void *)addr, (size_t)(addr - dev.base));
    if (n > 0) (void)!write(2, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
  }
  /* The faulting access runs again under the handler there was before, which reports
   * it as it would have (a sanitizer, a test runner) or lets the signal kill. */
  sigaction(sig, &dev.previous, NULL);
}

/* Reserves the range on first use. Under dev.lock. */
static bool arena_ready(void) {
  if (dev.base) return true;
  void *p = mmap(NULL, ARENA_RESERVE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return false;
  dev.base = p;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = report_fault;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, &dev.previous);
  return true;
}

static bool push_block(arena_block **v, size_t *n, size_t *cap, arena_block b) {
  if (*n == *cap) {
    size_t c = *cap ? *cap * 2 : 64;
    arena_block *nv = realloc(*v, c * sizeof *nv);
    if (!nv) return false;
    *v = nv;
    *cap = c;
  }
  (*v)[(*n)++] = b;
  return true;
}

/* Makes [open_top, top) accessible while the device is open. Under dev.lock. */
static void open_new_pages(void) {
  size_t want = page_up(dev.top);
  if (dev.opened && want > dev.open_top) {
    mprotect(dev.base + dev.open_top, want - dev.open_top, PROT_READ | PROT_WRITE);
    dev.open_top = want;
  }
}

static void device_open(void) {
  pthread_mutex_lock(&dev.lock);
  if (dev.opened++ == 0 && dev.base) {
    dev.open_top = page_up(dev.top);
    if (dev.open_top) mprotect(dev.base, dev.open_top, PROT_READ | PROT_WRITE);
  }
  pthread_mutex_unlock(&dev.lock);
}

static void device_close(void) {
  pthread_mutex_lock(&dev.lock);
  if (--dev.opened == 0 && dev.base && dev.open_top) {
    mprotect(dev.base, dev.open_top, PROT_NONE);
    dev.open_top = 0;
  }
  pthread_mutex_unlock(&dev.lock);
}

/* For the launches of the device code (prelude.h). */
void rill_emu_device_open(void) { device_open(); }
void rill_emu_device_close(void) { device_close(); }

static void *arena_alloc(size_t n) {
  size_t size = (n + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN;
  if (!size) size = ARENA_ALIGN;
  void *p = NULL;
  pthread_mutex_lock(&dev.lock);
  if (!arena_ready()) goto out;
  size_t best = SIZE_MAX;
  for (size_t i = 0; i < dev.nfreed; i++)
    if (dev.freed[i].size >= size && (best == SIZE_MAX || dev.freed[i].size < dev.freed[best].size)) best = i;
  arena_block b;
  if (best != SIZE_MAX) {
    b = dev.freed[best];
    dev.freed[best] = dev.freed[--dev.nfreed];
  } else {
    if (size > ARENA_RESERVE - dev.top) goto out;
    b = (arena_block){dev.top, size};
  }
  if (!push_block(&dev.live, &dev.nlive, &dev.caplive, b)) {
    if (best != SIZE_MAX) dev.freed[dev.nfreed++] = b;
    goto out;
  }
  if (best == SIZE_MAX) dev.top += size;
  open_new_pages();
  p = dev.base + b.at;
out:
  pthread_mutex_unlock(&dev.lock);
  return p;
}

static bool arena_free(void *p) {
  pthread_mutex_lock(&dev.lock);
  bool found = false;
  for (size_t i = 0; i < dev.nlive && !found; i++) {
    if (dev.base + dev.live[i].at != (char *)p) continue;
    found = push_block(&dev.freed, &dev.nfreed, &dev.capfreed, dev.live[i]);
    if (found) dev.live[i] = dev.live[--dev.nlive];
  }
  pthread_mutex_unlock(&dev.lock);
  return found;
}

/* ---- runtime ---- */

cudaError_t cudaGetLastError(void) { return cudaSuccess; }
const char *cudaGetErrorName(cudaError_t e) { return e == cudaSuccess ? "cudaSuccess" : "cudaErrorEmulated"; }
const char *cudaGetErrorString(cudaError_t e) { return e == cudaSuccess ? "no error" : "emulated error"; }

cudaError_t cudaGetDeviceCount(int *n) {
  *n = 1;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int d) { return d == 0 ? cudaSuccess : cudaErrorInvalidDevice; }

cudaError_t cudaMalloc(void **p, size_t n) {
  *p = arena_alloc(n);
  if (!*p) return cudaErrorMemoryAllocation;
  device_open();
  memset(*p, 0xcd, n);
  device_close();
  return cudaSuccess;
}

cudaError_t cudaFree(void *p) {
  if (p && !arena_free(p)) return cudaErrorInvalidValue;
  return cudaSuccess;
}

cudaError_t cudaMallocHost(void **p, size_t n) {
  size_t rounded = (n + 255) / 256 * 256;
  *p = aligned_alloc(256, rounded ? rounded : 256);
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaHostAlloc(void **p, size_t n, unsigned flags) {
  (void)flags;
  return cudaMallocHost(p, n);
}

cudaError_t cudaFreeHost(void *p) {
  free(p);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind, cudaStream_t s) {
  (void)kind;
  (void)s;
  device_open();
  if (n) memmove(dst, src, n);
  device_close();
  return cudaSuccess;
}

cudaError_t cudaMemcpyPeer(void *dst, int dst_dev, const void *src, int src_dev, size_t n) {
  (void)dst_dev;
  (void)src_dev;
  device_open();
  if (n) memmove(dst, src, n);
  device_close();
  return cudaSuccess;
}

cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                              enum cudaMemcpyKind kind, cudaStream_t s) {
  (void)kind;
  (void)s;
  device_open();
  for (size_t r = 0; r < height; r++) memmove((char *)dst + r * dpitch, (const char *)src + r * spitch, width);
  device_close();
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *dst, int value, size_t n, cudaStream_t s) {
  (void)s;
  device_open();
  if (n) memset(dst, value, n);
  device_close();
  return cudaSuccess;
}

/* Streams and events are tokens: the work is done when it is queued. */
static void *token(void) { return malloc(1); }

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags) {
  (void)flags;
  *s = token();
  return *s ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaStreamDestroy(cudaStream_t s) {
  free(s);
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  (void)s;
  return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags) {
  (void)flags;
  *e = token();
  return *e ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaEventDestroy(cudaEvent_t e) {
  free(e);
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  (void)e;
  (void)s;
  return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  (void)e;
  return cudaSuccess;
}

cudaError_t cudaProfilerStart(void) { return cudaSuccess; }
cudaError_t cudaProfilerStop(void) { return cudaSuccess; }

/* ---- cuBLAS ---- */

cublasStatus_t cublasCreate_v2(cublasHandle_t *h) {
  *h = token();
  return *h ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t h) {
  free(h);
  return CUBLAS_STATUS_SUCCESS;
}

const char *cublasGetStatusName(cublasStatus_t s) {
  return s == CUBLAS_STATUS_SUCCESS ? "CUBLAS_STATUS_SUCCESS" : "CUBLAS_STATUS_EMULATED_ERROR";
}
const char *cublasGetStatusString(cublasStatus_t s) { return s == CUBLAS_STATUS_SUCCESS ? "success" : "emulated error"; }

cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t mode) {
  (void)h;
  (void)mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t h, cudaStream_t s) {
  (void)h;
  (void)s;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t h, void *ws, size_t bytes) {
  (void)h;
  (void)ws;
  (void)bytes;
  return CUBLAS_STATUS_SUCCESS;
}

/* Column-major C = alpha op(A) op(B) + beta C, as cuBLAS defines it (beta 0: C not read). */
static void sgemm(bool ta, bool tb, int m, int n, int k, float alpha, const float *a, int lda, const float *b, int ldb,
                  float beta, float *c, int ldc) {
  device_open();
  for (int j = 0; j < n; j++)
    for (int i = 0; i < m; i++) {
      double acc = 0;
      for (int p = 0; p < k; p++) {
        float x = ta ? a[p + (size_t)i * lda] : a[i + (size_t)p * lda];
        float y = tb ? b[j + (size_t)p * ldb] : b[p + (size_t)j * ldb];
        acc += (double)x * y;
      }
      float *out = &c[i + (size_t)j * ldc];
      *out = (float)(alpha * acc + (beta == 0.0f ? 0.0 : (double)beta * *out));
    }
  device_close();
}

cublasStatus_t cublasSgemm_v2(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                              const float *alpha, const float *a, int lda, const float *b, int ldb, const float *beta,
                              float *c, int ldc) {
  (void)h;
  sgemm(ta != CUBLAS_OP_N, tb != CUBLAS_OP_N, m, n, k, *alpha, a, lda, b, ldb, *beta, c, ldc);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                         int k, const float *alpha, const float *a, int lda, long long stride_a,
                                         const float *b, int ldb, long long stride_b, const float *beta, float *c,
                                         int ldc, long long stride_c, int batch) {
  (void)h;
  for (int i = 0; i < batch; i++)
    sgemm(ta != CUBLAS_OP_N, tb != CUBLAS_OP_N, m, n, k, *alpha, a + i * stride_a, lda, b + i * stride_b, ldb, *beta,
          c + i * stride_c, ldc);
  return CUBLAS_STATUS_SUCCESS;
}

/* ---- cuDNN ---- */

/* 4-D tensors, filters and 2-D convolutions have depth 1 (and the depth's padding 0,
 * stride and dilation 1); N-D ones (5-D, 3 spatial dims) their own. */
struct cudnnTensorStruct {
  int nd; /* 4 or 5 */
  int n, c, d, h, w;
  bool nhwc; /* CUDNN_TENSOR_NHWC: [n, (d,) h, w, c] in memory */
};

/* The offset of element (s, ch, z, y, x) of tensor t in its format. */
static size_t at(const struct cudnnTensorStruct *t, int s, int ch, int z, int y, int x) {
  return t->nhwc ? ((((size_t)s * t->d + z) * t->h + y) * t->w + x) * t->c + ch
                 : ((((size_t)s * t->c + ch) * t->d + z) * t->h + y) * t->w + x;
}
struct cudnnFilterStruct {
  int nd;
  int k, c, d, h, w;
};
struct cudnnConvolutionStruct {
  int nsp; /* spatial dims: 2 or 3 */
  int pd, ph, pw, sd, sh, sw, dd, dh, dw, groups;
};
struct cudnnActivationStruct {
  cudnnActivationMode_t mode;
  cudnnNanPropagation_t nan;
};

cudnnStatus_t cudnnCreate(cudnnHandle_t *h) {
  *h = token();
  return *h ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_ALLOC_FAILED;
}

cudnnStatus_t cudnnDestroy(cudnnHandle_t h) {
  free(h);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetStream(cudnnHandle_t h, cudaStream_t s) {
  (void)h;
  (void)s;
  return CUDNN_STATUS_SUCCESS;
}

const char *cudnnGetErrorString(cudnnStatus_t s) {
  return s == CUDNN_STATUS_SUCCESS ? "CUDNN_STATUS_SUCCESS" : "CUDNN_STATUS_EMULATED_ERROR";
}

cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t *d) {
  *d = calloc(1, sizeof **d);
  return *d ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_ALLOC_FAILED;
}

cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t *d) {
  *d = calloc(1, sizeof **d);
  return *d ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_ALLOC_FAILED;
}

cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t *d) {
  *d = calloc(1, sizeof **d);
  if (!*d) return CUDNN_STATUS_ALLOC_FAILED;
  (*d)->groups = 1;
  (*d)->nsp = 2;
  (*d)->sd = (*d)->dd = 1;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t d) {
  free(d);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t d) {
  free(d);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t d) {
  free(d);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t d, cudnnTensorFormat_t format, cudnnDataType_t type,
                                         int n, int c, int h, int w) {
  if ((format != CUDNN_TENSOR_NCHW && format != CUDNN_TENSOR_NHWC) || type != CUDNN_DATA_FLOAT)
    return CUDNN_STATUS_NOT_SUPPORTED;
  if (n < 1 || c < 1 || h < 1 || w < 1) return CUDNN_STATUS_BAD_PARAM;
  *d = (struct cudnnTensorStruct){4, n, c, 1, h, w, format == CUDNN_TENSOR_NHWC};
  return CUDNN_STATUS_SUCCESS;
}

/* dims in logical order [n, c, d, h, w] whatever the format (as cuDNN takes them); 5-D
 * only here, what the 3-D convolutions use. */
cudnnStatus_t cudnnSetTensorNdDescriptorEx(cudnnTensorDescriptor_t d, cudnnTensorFormat_t format, cudnnDataType_t type,
                                           int nb, const int dims[]) {
  if ((format != CUDNN_TENSOR_NCHW && format != CUDNN_TENSOR_NHWC) || type != CUDNN_DATA_FLOAT || nb != 5)
    return CUDNN_STATUS_NOT_SUPPORTED;
  for (int i = 0; i < 5; i++)
    if (dims[i] < 1) return CUDNN_STATUS_BAD_PARAM;
  *d = (struct cudnnTensorStruct){5, dims[0], dims[1], dims[2], dims[3], dims[4], format == CUDNN_TENSOR_NHWC};
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t d, cudnnDataType_t type, cudnnTensorFormat_t format,
                                         int k, int c, int h, int w) {
  if (format != CUDNN_TENSOR_NCHW || type != CUDNN_DATA_FLOAT) return CUDNN_STATUS_NOT_SUPPORTED;
  if (k < 1 || c < 1 || h < 1 || w < 1) return CUDNN_STATUS_BAD_PARAM;
  *d = (struct cudnnFilterStruct){4, k, c, 1, h, w};
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetFilterNdDescriptor(cudnnFilterDescriptor_t d, cudnnDataType_t type, cudnnTensorFormat_t format,
                                         int nb, const int dims[]) {
  if (format != CUDNN_TENSOR_NCHW || type != CUDNN_DATA_FLOAT || nb != 5) return CUDNN_STATUS_NOT_SUPPORTED;
  for (int i = 0; i < 5; i++)
    if (dims[i] < 1) return CUDNN_STATUS_BAD_PARAM;
  *d = (struct cudnnFilterStruct){5, dims[0], dims[1], dims[2], dims[3], dims[4]};
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t d, int ph, int pw, int sh, int sw, int dh,
                                              int dw, cudnnConvolutionMode_t mode, cudnnDataType_t type) {
  if (mode != CUDNN_CROSS_CORRELATION || type != CUDNN_DATA_FLOAT) return CUDNN_STATUS_NOT_SUPPORTED;
  if (ph < 0 || pw < 0 || sh < 1 || sw < 1 || dh < 1 || dw < 1) return CUDNN_STATUS_BAD_PARAM;
  d->nsp = 2;
  d->pd = 0;
  d->sd = d->dd = 1;
  d->ph = ph;
  d->pw = pw;
  d->sh = sh;
  d->sw = sw;
  d->dh = dh;
  d->dw = dw;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionNdDescriptor(cudnnConvolutionDescriptor_t d, int n, const int pad[],
                                              const int stride[], const int dilation[], cudnnConvolutionMode_t mode,
                                              cudnnDataType_t type) {
  if (mode != CUDNN_CROSS_CORRELATION || type != CUDNN_DATA_FLOAT || n != 3) return CUDNN_STATUS_NOT_SUPPORTED;
  for (int i = 0; i < 3; i++)
    if (pad[i] < 0 || stride[i] < 1 || dilation[i] < 1) return CUDNN_STATUS_BAD_PARAM;
  d->nsp = 3;
  d->pd = pad[0];
  d->ph = pad[1];
  d->pw = pad[2];
  d->sd = stride[0];
  d->sh = stride[1];
  d->sw = stride[2];
  d->dd = dilation[0];
  d->dh = dilation[1];
  d->dw = dilation[2];
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t d, int groups) {
  if (groups < 1) return CUDNN_STATUS_BAD_PARAM;
  d->groups = groups;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t d, cudnnMathType_t type) {
  (void)d;
  (void)type;
  return CUDNN_STATUS_SUCCESS;
}

/* Whether x, w and y fit convolution c: channels and groups, and y's extents; x and y
 * of one format (the filter is KCRS in either). */
static bool consistent(const struct cudnnTensorStruct *x, const struct cudnnFilterStruct *w,
                       const struct cudnnConvolutionStruct *c, const struct cudnnTensorStruct *y) {
  if (x->nhwc != y->nhwc || x->c != w->c * c->groups || w->k % c->groups || y->c != w->k || y->n != x->n) return false;
  if (x->nd != c->nsp + 2 || y->nd != x->nd || w->nd != x->nd) return false;
  int od = (x->d + 2 * c->pd - (c->dd * (w->d - 1) + 1)) / c->sd + 1;
  int oh = (x->h + 2 * c->ph - (c->dh * (w->h - 1) + 1)) / c->sh + 1;
  int ow = (x->w + 2 * c->pw - (c->dw * (w->w - 1) + 1)) / c->sw + 1;
  return od == y->d && oh == y->h && ow == y->w;
}

/* One algorithm (number 0), deterministic, needing no workspace. */
#define ONE_ALGORITHM(perf, got)                \
  do {                                          \
    memset(perf, 0, sizeof *(perf));            \
    (perf)->status = CUDNN_STATUS_SUCCESS;      \
    (perf)->determinism = CUDNN_DETERMINISTIC;  \
    *(got) = 1;                                 \
  } while (0)

/* An algorithm query, heuristic (Get..._v7) or timed (Find...), of descriptors (A, B, c,
 * C) taken as convolution input X, filter W and output Y. */
#define ALGO_QUERY(NAME, A_T, A, B_T, B, C_T, C, PERF_T, X, W, Y)                                          \
  cudnnStatus_t NAME(cudnnHandle_t h, A_T A, B_T B, cudnnConvolutionDescriptor_t c, C_T C, int n, int *got, \
                     PERF_T *perf) {                                                                        \
    (void)h;                                                                                                \
    if (n < 1 || !consistent(X, W, c, Y)) return CUDNN_STATUS_BAD_PARAM;                                    \
    ONE_ALGORITHM(perf, got);                                                                               \
    return CUDNN_STATUS_SUCCESS;                                                                            \
  }
#define FWD_QUERY(NAME)                                                                                   \
  ALGO_QUERY(NAME, cudnnTensorDescriptor_t, x, cudnnFilterDescriptor_t, w, cudnnTensorDescriptor_t, y,     \
             cudnnConvolutionFwdAlgoPerf_t, x, w, y)
#define BWD_DATA_QUERY(NAME)                                                                              \
  ALGO_QUERY(NAME, cudnnFilterDescriptor_t, w, cudnnTensorDescriptor_t, dy, cudnnTensorDescriptor_t, dx,   \
             cudnnConvolutionBwdDataAlgoPerf_t, dx, w, dy)
#define BWD_FILTER_QUERY(NAME)                                                                            \
  ALGO_QUERY(NAME, cudnnTensorDescriptor_t, x, cudnnTensorDescriptor_t, dy, cudnnFilterDescriptor_t, dw,   \
             cudnnConvolutionBwdFilterAlgoPerf_t, x, dw, dy)
FWD_QUERY(cudnnGetConvolutionForwardAlgorithm_v7)
FWD_QUERY(cudnnFindConvolutionForwardAlgorithm)
BWD_DATA_QUERY(cudnnGetConvolutionBackwardDataAlgorithm_v7)
BWD_DATA_QUERY(cudnnFindConvolutionBackwardDataAlgorithm)
BWD_FILTER_QUERY(cudnnGetConvolutionBackwardFilterAlgorithm_v7)
BWD_FILTER_QUERY(cudnnFindConvolutionBackwardFilterAlgorithm)

/* The direction of a convolution loop: what it sums into. */
enum { INTO_Y, INTO_X, INTO_W };

/* Every (sample, output channel, output position, input channel of the group, filter
 * tap) that reads inside the image, summed in double into y, x or w; then the target =
 * alpha * sum + beta * target. */
static cudnnStatus_t convolve(int into, const struct cudnnTensorStruct *x, const struct cudnnFilterStruct *w,
                              const struct cudnnConvolutionStruct *c, const struct cudnnTensorStruct *y,
                              const float *xp, const float *wp, const float *yp, float *out, float alpha,
                              float beta) {
  if (!consistent(x, w, c, y)) return CUDNN_STATUS_BAD_PARAM;
  size_t n = into == INTO_Y   ? (size_t)y->n * y->c * y->d * y->h * y->w
             : into == INTO_X ? (size_t)x->n * x->c * x->d * x->h * x->w
                              : (size_t)w->k * w->c * w->d * w->h * w->w;
  double *acc = calloc(n, sizeof *acc);
  if (!acc) return CUDNN_STATUS_ALLOC_FAILED;
  int per_group = w->k / c->groups;
  device_open();
  for (int s = 0; s < y->n; s++)
    for (int m = 0; m < y->c; m++)
      for (int oz = 0; oz < y->d; oz++)
        for (int oy = 0; oy < y->h; oy++)
          for (int ox = 0; ox < y->w; ox++)
            for (int ci = 0; ci < w->c; ci++)
              for (int kz = 0; kz < w->d; kz++)
                for (int ky = 0; ky < w->h; ky++)
                  for (int kx = 0; kx < w->w; kx++) {
                    int iz = oz * c->sd - c->pd + kz * c->dd;
                    int iy = oy * c->sh - c->ph + ky * c->dh, ix = ox * c->sw - c->pw + kx * c->dw;
                    if (iz < 0 || iz >= x->d || iy < 0 || iy >= x->h || ix < 0 || ix >= x->w) continue;
                    size_t xi = at(x, s, (m / per_group) * w->c + ci, iz, iy, ix);
                    size_t wi = ((((size_t)m * w->c + ci) * w->d + kz) * w->h + ky) * w->w + kx;
                    size_t yi = at(y, s, m, oz, oy, ox);
                    if (into == INTO_Y) acc[yi] += (double)xp[xi] * wp[wi];
                    else if (into == INTO_X) acc[xi] += (double)yp[yi] * wp[wi];
                    else acc[wi] += (double)yp[yi] * xp[xi];
                  }
  for (size_t i = 0; i < n; i++) out[i] = (float)(alpha * acc[i] + (beta == 0.0f ? 0.0 : (double)beta * out[i]));
  device_close();
  free(acc);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t h, const void *alpha, cudnnTensorDescriptor_t x, const void *xp,
                                      cudnnFilterDescriptor_t w, const void *wp, cudnnConvolutionDescriptor_t c,
                                      cudnnConvolutionFwdAlgo_t algo, void *ws, size_t ws_bytes, const void *beta,
                                      cudnnTensorDescriptor_t y, void *yp) {
  (void)h;
  (void)algo;
  (void)ws;
  (void)ws_bytes;
  return convolve(INTO_Y, x, w, c, y, xp, wp, NULL, yp, *(const float *)alpha, *(const float *)beta);
}

cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t h, const void *alpha, cudnnFilterDescriptor_t w,
                                           const void *wp, cudnnTensorDescriptor_t dy, const void *dyp,
                                           cudnnConvolutionDescriptor_t c, cudnnConvolutionBwdDataAlgo_t algo, void *ws,
                                           size_t ws_bytes, const void *beta, cudnnTensorDescriptor_t dx, void *dxp) {
  (void)h;
  (void)algo;
  (void)ws;
  (void)ws_bytes;
  return convolve(INTO_X, dx, w, c, dy, NULL, wp, dyp, dxp, *(const float *)alpha, *(const float *)beta);
}

cudnnStatus_t cudnnConvolutionBackwardFilter(cudnnHandle_t h, const void *alpha, cudnnTensorDescriptor_t x,
                                             const void *xp, cudnnTensorDescriptor_t dy, const void *dyp,
                                             cudnnConvolutionDescriptor_t c, cudnnConvolutionBwdFilterAlgo_t algo,
                                             void *ws, size_t ws_bytes, const void *beta, cudnnFilterDescriptor_t dw,
                                             void *dwp) {
  (void)h;
  (void)algo;
  (void)ws;
  (void)ws_bytes;
  return convolve(INTO_W, x, dw, c, dy, xp, NULL, dyp, dwp, *(const float *)alpha, *(const float *)beta);
}

cudnnStatus_t cudnnCreateActivationDescriptor(cudnnActivationDescriptor_t *d) {
  *d = calloc(1, sizeof **d);
  return *d ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_ALLOC_FAILED;
}

cudnnStatus_t cudnnDestroyActivationDescriptor(cudnnActivationDescriptor_t d) {
  free(d);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetActivationDescriptor(cudnnActivationDescriptor_t d, cudnnActivationMode_t mode,
                                           cudnnNanPropagation_t nan, double coef) {
  (void)coef;
  d->mode = mode;
  d->nan = nan;
  return CUDNN_STATUS_SUCCESS;
}

/* y = act(alpha1 conv(x) + alpha2 z + bias[channel]), relu or identity (the latter with
 * IMPLICIT_PRECOMP_GEMM only, as cuDNN requires); bias is [1, C, 1, 1]. */
cudnnStatus_t cudnnConvolutionBiasActivationForward(
    cudnnHandle_t h, const void *alpha1, cudnnTensorDescriptor_t x, const void *xp, cudnnFilterDescriptor_t w,
    const void *wp, cudnnConvolutionDescriptor_t c, cudnnConvolutionFwdAlgo_t algo, void *ws, size_t ws_bytes,
    const void *alpha2, cudnnTensorDescriptor_t z, const void *zp, cudnnTensorDescriptor_t bias, const void *bp,
    cudnnActivationDescriptor_t act, cudnnTensorDescriptor_t y, void *yp) {
  (void)h;
  (void)ws;
  (void)ws_bytes;
  if (act->mode != CUDNN_ACTIVATION_RELU &&
      (act->mode != CUDNN_ACTIVATION_IDENTITY || algo != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM))
    return CUDNN_STATUS_NOT_SUPPORTED;
  if (y->nd != 4 || z->nd != 4 || bias->nd != 4) return CUDNN_STATUS_NOT_SUPPORTED;
  if (z->n != y->n || z->c != y->c || z->h != y->h || z->w != y->w || z->nhwc != y->nhwc || bias->n != 1 ||
      bias->c != y->c || bias->h != 1 || bias->w != 1)
    return CUDNN_STATUS_BAD_PARAM;
  size_t n = (size_t)y->n * y->c * y->h * y->w, plane = y->nhwc ? 1 : (size_t)y->h * y->w;
  float *conv = malloc((n ? n : 1) * sizeof *conv);
  if (!conv) return CUDNN_STATUS_ALLOC_FAILED;
  cudnnStatus_t s = convolve(INTO_Y, x, w, c, y, xp, wp, NULL, conv, *(const float *)alpha1, 0.0f);
  float a2 = *(const float *)alpha2;
  const float *zv = zp, *b = bp;
  float *out = yp;
  device_open();
  for (size_t i = 0; s == CUDNN_STATUS_SUCCESS && i < n; i++) {
    float v = conv[i] + (a2 == 0.0f ? 0.0f : a2 * zv[i]) + b[(i / plane) % (size_t)y->c];
    if (act->mode == CUDNN_ACTIVATION_RELU)
      v = act->nan == CUDNN_PROPAGATE_NAN ? (v < 0.0f ? 0.0f : v) : (v > 0.0f ? v : 0.0f);
    out[i] = v;
  }
  device_close();
  free(conv);
  return s;
}
