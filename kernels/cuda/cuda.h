/* The CUDA backend's shared declarations: device contexts, the caching allocator, and
 * helpers its kernels share. Everything here lives in librill_cuda.so (cmake/cuda.cmake);
 * the rill functions its kernels call are those of the library that loaded it, reached
 * through the table in host.c (framework/registry/backend_host.h). */
#ifndef RILL_KERNELS_CUDA_CUDA_H
#define RILL_KERNELS_CUDA_CUDA_H

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <pthread.h>

#include "framework/registry/backend_host.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cuda/launch.h"

/* The host library's table, set once by rill_cuda_backend_open. */
extern const rill_backend_host *rill_cuda_host;
/* The backend's own table (backend.c): its device memory is what kernels allocate
 * outputs they size themselves from. */
extern const rill_backend rill_cuda_backend;

/* ---- the caching allocator (runtime.c) ----
 * Device blocks are rounded up to a size class and, when freed, kept on their class's
 * free list for the next allocation of that class: after the first run of a program,
 * its allocations take blocks from the lists and never call cudaMalloc. When cudaMalloc
 * fails, the cached blocks are released and it is tried once more. The bookkeeping
 * (one record per block) comes from the host library's allocator. */
typedef struct rill_cuda_block {
  void *ptr;
  size_t size; /* the class's size */
  bool in_use;
  struct rill_cuda_block *next_free;
} rill_cuda_block;

/* A size class's free list. */
typedef struct rill_cuda_bucket {
  size_t size; /* 0: an empty slot */
  rill_cuda_block *head;
} rill_cuda_bucket;

typedef struct rill_cuda_mem_stats {
  int64_t current;  /* bytes of blocks handed out */
  int64_t peak;     /* the most `current` has been */
  int64_t cached;   /* bytes of blocks on the free lists */
  int64_t reserved; /* bytes obtained from cudaMalloc and not yet released */
  int64_t device_mallocs; /* cudaMalloc calls so far */
} rill_cuda_mem_stats;

/* One device's context: its stream, on which every kernel and copy of the device is
 * enqueued in order; the cuBLAS and cuDNN handles bound to that stream; a workspace for
 * them; pinned host memory for staging copies; and the allocator's pools. */
typedef struct rill_cuda_dev {
  int id;
  cudaStream_t stream;
  cublasHandle_t blas;
  cudnnHandle_t dnn;
  /* Serialises the handles (neither may be used from two threads at once) and the
   * staging buffer. */
  pthread_mutex_t lock;
  void *workspace;
  size_t workspace_bytes;
  void *staging; /* pinned host memory */
  size_t staging_bytes;
  cudaEvent_t staged; /* recorded after each copy out of the staging buffer */
  /* conv.c's algorithm choices by convolution shape, under `lock`; NULL until the
   * first convolution. */
  struct rill_cuda_conv_algos *conv_algos;
  /* The allocator's state. */
  pthread_mutex_t mem_lock;
  rill_cuda_block **blocks; /* every block from cudaMalloc, by address */
  size_t nblocks, capblocks;
  rill_cuda_bucket *buckets; /* open addressing by size; a power of two of them */
  size_t nbuckets, usedbuckets;
  rill_cuda_mem_stats stats;
} rill_cuda_dev;

/* Starts the runtime: NULL when at least one device is usable; else UNAVAILABLE saying
 * why (no driver, a driver older than the runtime, no device). */
rill_status *rill_cuda_runtime_start(void);
int32_t rill_cuda_runtime_devices(void);
/* The context of device `id`, made on first use; an error names the device. */
rill_status *rill_cuda_dev_get(int32_t id, rill_cuda_dev **out);
/* A status for a failed CUDA runtime / cuBLAS / cuDNN call: "<what>: <error name>: <text>". */
rill_status *rill_cuda_error(cudaError_t e, const char *what);
rill_status *rill_cublas_error(cublasStatus_t e, const char *what);

void *rill_cuda_mem_alloc(rill_cuda_dev *d, size_t bytes);
void rill_cuda_mem_free(rill_cuda_dev *d, void *p);
void rill_cuda_mem_get_stats(rill_cuda_dev *d, rill_cuda_mem_stats *out);
/* Releases every cached block to the device. */
void rill_cuda_mem_trim(rill_cuda_dev *d);

/* ---- kernels' helpers ---- */

/* The context of the device a kernel's output lives on: an error when it is not on a
 * CUDA place. */
rill_status *rill_cuda_kernel_dev(rill_kernel_ctx *ctx, const rill_tensor *t, rill_cuda_dev **out);
/* st (consumed) as the op's error; NULL stays NULL. */
rill_status *rill_cuda_kernel_status(rill_kernel_ctx *ctx, rill_status *st);
/* A kernel's launch error (from cudaGetLastError after the launch), naming the op. */
rill_status *rill_cuda_kernel_check(rill_kernel_ctx *ctx, cudaError_t e, const char *what);

/* Every element of out (output 0, on d) := v, converted to out's dtype as the CPU's fill
 * kernels convert it (operators/fill_value.h); an error for a dtype other than bool,
 * int32, int64, float32 and float64 (kernels/cuda/fill_constant.c). */
struct rill_fill_value;
rill_status *rill_cuda_fill_value(rill_kernel_ctx *ctx, rill_cuda_dev *d, rill_tensor *out,
                                  const struct rill_fill_value *v);

/* Whether TF32 may be used by cuBLAS (RILL_CUDA_TF32=1 in the environment); off by
 * default, so results stay close to the CPU's. */
bool rill_cuda_allow_tf32(void);

/* C = alpha * op(A) * op(B) + beta * C on row-major matrices (A m x k, B k x n, C m x n
 * after the transposes), batched with strides (0 repeats a matrix), on d's stream
 * under d's lock. */
rill_status *rill_cuda_sgemm(rill_cuda_dev *d, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                             float alpha, const float *a, int64_t stride_a, const float *b,
                             int64_t stride_b, float beta, float *c, int64_t stride_c,
                             int64_t batch);

/* rill_cuda_sgemm's one product with the row-major leading dimensions given: lda, ldb and
 * ldc elements between the rows of A, B and C as stored (a gate block of a wider
 * matrix). */
rill_status *rill_cuda_sgemm_ld(rill_cuda_dev *d, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                                const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                                int64_t ldc);

/* ---- ids and row groups (rows.c) ---- */

/* Input `slot`'s ids (int64 or int32, on the device or the host) as int64 on the host
 * (*out, rill_free'd by the caller; *n of them), waiting for d's queue. */
rill_status *rill_cuda_ids_to_host(rill_kernel_ctx *ctx, rill_cuda_dev *d, size_t slot, int64_t **out, int64_t *n);
/* Every id but *pad (pad NULL: every id) within [0, rows), or an error naming input
 * `slot`, the position, the id and the input `table_slot` it addresses. */
rill_status *rill_cuda_check_ids(rill_kernel_ctx *ctx, size_t slot, size_t table_slot, const int64_t *ids,
                                 int64_t n, int64_t rows, const int64_t *pad);

/* Positions grouped by the row they address, on the device, for rill_cuda_sum_groups_f32:
 * the rows ascending, and each row's positions in their order. */
typedef struct rill_cuda_groups {
  int64_t ngroups;
  int64_t *dev; /* rows | offsets | positions; NULL when there are no groups */
} rill_cuda_groups;

/* Groups ids[0..n) (leaving out those equal to *skip, when skip is not NULL). */
rill_status *rill_cuda_groups_make(rill_kernel_ctx *ctx, rill_cuda_dev *d, const int64_t *ids, int64_t n,
                                   const int64_t *skip, rill_cuda_groups *g);
/* out := in on the device (queued), unless they are one buffer: the state a sparse update
 * then changes in place. */
cudaError_t rill_cuda_copy_unless_same(rill_tensor *out, const rill_tensor *in, cudaStream_t s);
/* Safe while kernels reading the groups are queued (the allocator's rule). */
void rill_cuda_groups_free(rill_cuda_dev *d, rill_cuda_groups *g);

/* A selected-rows gradient (input `slot`) of float32 Param: its values' dtype and
 * width, its rows within Param's, its values on the device, checked as the CPU checks
 * them; *width: the elements of a Param row. */
rill_status *rill_cuda_grad_rows_check(rill_kernel_ctx *ctx, size_t slot, const rill_selected_rows *sr,
                                       const rill_tensor *param, int64_t *width);
/* The gradient as a dense block of Param's shape on the device (rill_cuda_mem_free'd by
 * the caller): zero in the rows it lacks, and its rows merged as the CPU merges them. */
rill_status *rill_cuda_grad_rows_densify(rill_kernel_ctx *ctx, rill_cuda_dev *d, size_t slot,
                                         const rill_selected_rows *sr, const rill_tensor *param, float **dense);

/* ---- strided walks (strided.c) ---- */

/* Appends a dim of `extent` elements `stride` apart (on the walk's strided side) to p,
 * inside the dims it has: merged into the last one when the two make one run, and left
 * out when its extent is 1. False when p would need more than RILL_CUDA_BCAST_DIMS dims. */
bool rill_cuda_walk_add(rill_cuda_perm *p, int64_t extent, int64_t stride);
/* Row-major element strides of dims. */
void rill_cuda_strides(const rill_dims *dims, int64_t *strides);

/* out := float32 selected rows `in` (input 0, X) merged as the CPU merges them: each row
 * once, ascending, with the sum of its values in their order. */
rill_status *rill_cuda_rows_merge(rill_kernel_ctx *ctx, rill_cuda_dev *d, const rill_selected_rows *in,
                                  rill_selected_rows *out);

/* Frees a device's cache of convolution algorithms (conv.c). */
void rill_cuda_conv_algos_free(struct rill_cuda_conv_algos *c);

/* Prototypes of every kernel of kernels.def, and of the accepts functions of those that
 * decline some ops (rill_kernel_def.accepts). */
#define RILL_CUDA_KERNEL(op, dtype, fn) rill_status *fn(rill_kernel_ctx *ctx);
#define RILL_CUDA_KERNEL_IF(op, dtype, fn, accepts) \
  rill_status *fn(rill_kernel_ctx *ctx);            \
  bool accepts(const rill_kernel_ctx *ctx);
#include "kernels/cuda/kernels.def"
#undef RILL_CUDA_KERNEL_IF
#undef RILL_CUDA_KERNEL

#endif
