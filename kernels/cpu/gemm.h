/* Medium float GEMMs in blocks that OpenBLAS runs on one thread each, over the kernel
 * device's threads (rill_device_services.parallel_for).
 *
 * OpenBLAS 0.3.21 threads a GEMM from about 2^20 multiply-adds, and on these 2-core
 * machines a GEMM it threads runs only 1.1x to 1.4x faster than on one thread, while
 * two GEMMs of half the size, each below that threshold, run at the full single-thread
 * speed side by side (50 x 64 x 500: 35 us whole on one thread, 25 us threaded, 13.7 us
 * for each half). A GEMM of RILL_BLAS_SPLIT_MIN to RILL_BLAS_SPLIT_MAX multiply-adds is
 * therefore cut into an even count of blocks of at most RILL_BLAS_PART_MACS each
 * (983,040: OpenBLAS runs each in the calling thread; the fewer the blocks, the less
 * packing is repeated). Above RILL_BLAS_SPLIT_MAX, blocks that small would repack an
 * operand too often to beat OpenBLAS's own threads. conv2d.c cuts its medium GEMMs
 * the same way, with the unfolding and the epilogue inside each block. */
#ifndef RILL_KERNELS_CPU_GEMM_H
#define RILL_KERNELS_CPU_GEMM_H

#include <stdbool.h>
#include <stdint.h>

#include "framework/registry/registry.h"

/* The sizes from which OpenBLAS runs its own threads (its GEMM_MULTITHREAD_THRESHOLD
 * defaults), for kernels that let the device's threads sleep first (rill_dev_quiet). */
#define RILL_BLAS_THREADED_GEMM (1 << 18)
#define RILL_BLAS_THREADED_GEMV (1 << 13)

#define RILL_BLAS_PART_MACS (15 << 16)
#define RILL_BLAS_SPLIT_MIN (1 << 19)
#define RILL_BLAS_SPLIT_MAX (1 << 24)

/* c = a b, row-major without transposes (a [m, k], b [k, n], c [m, n], dense), in
 * blocks of rows of c when m >= n (each block packs the rows of a it reads and all of
 * b), else of columns (each packs its columns of b and all of a), on up to `threads`
 * threads of `dev`. The blocks depend on m, n and k only, so c does not depend on the threads.
 * False, with nothing written, when threads < 2 or the size is outside
 * [RILL_BLAS_SPLIT_MIN, RILL_BLAS_SPLIT_MAX]: the caller runs the GEMM whole. */
bool rill_cpu_sgemm_blocks(const rill_device_services *dev, int64_t threads, int64_t m, int64_t n, int64_t k, const float *a, const float *b,
                           float *c);

#endif
