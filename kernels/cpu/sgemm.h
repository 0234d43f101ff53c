/* rill's own single-precision GEMM: c = alpha op(a) op(b) + beta c, row-major, with
 * microkernels for AVX2+FMA and AVX-512 chosen at run time (framework/base/isa.h).
 *
 * Why not OpenBLAS everywhere: Debian's OpenBLAS 0.3.21 picks its kernels from the CPU
 * model, and misdetects the newest cores (Sapphire Rapids, Zen 5): there it runs its
 * SSE3 "Prescott" kernels at a quarter of the machine's speed unless OPENBLAS_CORETYPE
 * is set in the environment, and it never uses 512-bit vectors on AMD. rill's speed must
 * not depend on that variable, so the float GEMMs of the kernels go through rill_sgemm,
 * which reads the vector level from cpuid itself. On a CPU without AVX2 (and on arm64)
 * it calls cblas_sgemm, as it does on an AVX2 CPU whose OpenBLAS runs its own AVX2
 * kernels (they are faster than rill's AVX2 one; kit_for_cpu in sgemm.c).
 *
 * The algorithm is the Goto/BLIS one: b is packed in panels of KC x NC (NR-column
 * slivers, k-major), a in blocks of MC x KC (MR-row slivers), and an MR x NR microkernel
 * keeps a tile of c in registers over the KC steps. Every element of c is summed over k
 * in the same order (k blocks of KC in order, each in order) whatever the shape of the
 * split or the thread count, so the result does not depend on either.
 *
 * Large products are split over the device's threads (rill_dev_parallel_for) by blocks of columns of c (or
 * of rows, when c is taller than it is wide), each block a GEMM of its own. */
#ifndef RILL_KERNELS_CPU_SGEMM_H
#define RILL_KERNELS_CPU_SGEMM_H

#include <cblas.h>
#include <stdbool.h>
#include <stdint.h>

#include "framework/registry/registry.h"

/* c = alpha op(a) op(b) + beta c for row-major a, b, c (op: CblasNoTrans or CblasTrans),
 * on up to `threads` threads of `dev` (1 or dev NULL: the calling thread only). With
 * beta == 0, c is written without being read (NaN in c does not propagate). */
void rill_sgemm(const rill_device_services *dev, int64_t threads, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int64_t m, int64_t n,
                int64_t k, float alpha, const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                float *c, int64_t ldc);

/* cblas_sgemm's arguments after a thread count (order must be CblasRowMajor, or the
 * product is computed transposed), for kernels written against CBLAS. */
void rill_sgemm_cblas(const rill_device_services *dev, int64_t threads, enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta,
                      enum CBLAS_TRANSPOSE tb, int m, int n, int k, float alpha, const float *a, int lda,
                      const float *b, int ldb, float beta, float *c, int ldc);

/* For a kernel's GEMM macros: cblas_sgemm's arguments on the threads of the kernel's
 * device (`ctx` in scope). */
#define RILL_KERNEL_SGEMM(...) \
  rill_sgemm_cblas(ctx->dev, rill_dev_threads(ctx->dev), __VA_ARGS__)

/* y[j] = sum over p of x[p] w[p][j] for one row x [k] and a row-major w [k, n] (fc and
 * mul at batch 1), on up to `threads` threads, each column summed in order with FMAs
 * (so the result does not depend on the threads). False, with nothing written, where
 * the CPU has no AVX2 or k or n is 0: the caller computes it. */
bool rill_sgemv_row(const rill_device_services *dev, int64_t threads, const float *x, const float *w, float *y, int64_t k, int64_t n);

/* b packed once: a constant weight (K x N, row-major, not transposed) laid out as
 * rill_sgemm packs it on every call, in the panels of the kernel the process runs (the
 * kit chosen from cpuid). rill_sgemm_prepacked then multiplies by it with the same
 * microkernel in the same order, so the result is rill_sgemm's bit for bit, and skips
 * both the packing and the strided reads of b that products of few rows make in place. */
typedef struct rill_sgemm_packed rill_sgemm_packed;

/* The packed form of b [k, n] (row stride ldb); NULL where rill_sgemm has no kernels of
 * its own (it calls cblas_sgemm), k or n is 0, or memory runs out: callers then call
 * rill_sgemm. b must stay alive and unchanged while the packed form is used (it is the
 * fallback when the packing space for a cannot be had). */
rill_sgemm_packed *rill_sgemm_pack_b(const float *b, int64_t ldb, int64_t k, int64_t n);
void rill_sgemm_packed_destroy(rill_sgemm_packed *pk);
/* Bytes of the panels. */
size_t rill_sgemm_packed_bytes(const rill_sgemm_packed *pk);
/* True when pk was packed from b [k, n] (stride ldb) for the kernel that runs now. */
bool rill_sgemm_packed_fits(const rill_sgemm_packed *pk, const float *b, int64_t ldb, int64_t k, int64_t n);
/* c [m, n] = alpha op(a) b + beta c, b packed (its k and n), split over the pool as
 * rill_sgemm splits it (by whole slivers of columns, or of rows when c is taller than
 * wide). False, with nothing written, when pk is NULL, was packed for another kernel
 * than the one that runs now (rill_sgemm_use changed) or alpha is 0: call rill_sgemm. */
bool rill_sgemm_prepacked(const rill_device_services *dev, int64_t threads, enum CBLAS_TRANSPOSE ta, int64_t m,
                          float alpha, const float *a, int64_t lda, const rill_sgemm_packed *b, float beta,
                          float *c, int64_t ldc);

/* c [m, n] = alpha a [m, k] w + beta c for a weight w [k, n] (row-major, contiguous)
 * whose buffer is immutable (rill_buffer_set_immutable: a predictor's constant weights),
 * through w's packed form: made by the first caller, kept with the buffer and freed
 * with it; callers on other threads meanwhile take rill_sgemm. False, with nothing
 * written, where it does not apply (the buffer may change, no kernels of rill's own,
 * memory ran short, another view of the buffer holds the slot): call rill_sgemm, which
 * gives the same bits. */
bool rill_sgemm_weight(const rill_device_services *dev, int64_t threads, int64_t m, int64_t n, int64_t k,
                       float alpha, const float *a, int64_t lda, const rill_tensor *w, float beta, float *c,
                       int64_t ldc);

/* Process-wide counts (tests, the memory report): packed forms made, products run on
 * one, and the bytes the live ones hold. */
typedef struct rill_sgemm_packed_stats {
  int64_t packs_made, packed_calls, bytes_live;
} rill_sgemm_packed_stats;
rill_sgemm_packed_stats rill_sgemm_packed_counters(void);

/* True where rill_sgemm runs its own kernels (AVX2 or AVX-512), which split a product
 * over the pool themselves: callers then skip the OpenBLAS blocks of gemm.h. */
bool rill_sgemm_has_kernels(void);

/* Which GEMM runs: AUTO, rill's kernels where they win (AVX-512; AVX2 when OpenBLAS
 * has no wide kernels for the CPU); OWN, rill's wherever the CPU has AVX2 (tests, so
 * the AVX2 kernel is covered on every machine); BLAS, cblas_sgemm always (and no rows). */
typedef enum rill_sgemm_policy { RILL_SGEMM_AUTO, RILL_SGEMM_OWN, RILL_SGEMM_BLAS } rill_sgemm_policy;
extern rill_sgemm_policy rill_sgemm_use;

#endif
