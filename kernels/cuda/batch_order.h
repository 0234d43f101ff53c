/* The batch order of the CUDA recurrent kernels (lstm.c, gru.c): operators/recurrent.h's
 * order of a LoD input's sequences, built on the host as the CPU kernels build it, with
 * its row indices copied to the device once per run. */
#ifndef RILL_KERNELS_CUDA_BATCH_ORDER_H
#define RILL_KERNELS_CUDA_BATCH_ORDER_H

#include "kernels/cuda/cuda.h"
#include "operators/recurrent.h"

/* On the host (sb), and its indices on the device in one block (dev): row[rows] (the
 * LoD row of each batch row), order[nseq] (the sequence at each position) and
 * starts[steps + 1]. */
typedef struct rill_cuda_batch {
  rill_seq_batch sb;
  int64_t *dev, *row, *order, *starts;
  float *scratch; /* rill_cuda_batch_scratch's, freed with the batch */
} rill_cuda_batch;

/* The batch order of input `slot` (x, whose one LoD level ends at `rows`). */
rill_status *rill_cuda_batch_make(rill_kernel_ctx *ctx, rill_cuda_dev *d, const rill_tensor *x, size_t slot,
                                  int64_t rows, bool reverse, rill_cuda_batch *b);
/* n zeroed floats of device memory for the kernel's rows in batch order (b->scratch);
 * on failure the batch is freed too. */
rill_status *rill_cuda_batch_scratch(rill_kernel_ctx *ctx, rill_cuda_dev *d, rill_cuda_batch *b, int64_t n);
/* The indices and the scratch; safe while kernels reading them are queued (the
 * allocator's rule). */
void rill_cuda_batch_free(rill_cuda_dev *d, rill_cuda_batch *b);
/* Zeroes each of the n outputs that is not NULL (a gradient the kernel adds into); *d:
 * the device of the first, left as it was when there is none. */
rill_status *rill_cuda_zero_outputs(rill_kernel_ctx *ctx, rill_tensor *const *outs, size_t n, rill_cuda_dev **d);
/* n zeroed floats of device memory (*out, rill_cuda_mem_free'd by the caller). */
rill_status *rill_cuda_zeroed(rill_kernel_ctx *ctx, rill_cuda_dev *d, int64_t n, float **out);

#endif
