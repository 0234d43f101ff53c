/* The batch order of the CUDA recurrent kernels (batch_order.h). */
#include "kernels/cuda/batch_order.h"

#include "framework/base/alloc.h"

void rill_cuda_batch_free(rill_cuda_dev *d, rill_cuda_batch *b) {
  rill_cuda_mem_free(d, b->dev); /* queued behind its last reader */
  rill_cuda_mem_free(d, b->scratch);
  b->dev = b->row = b->order = b->starts = NULL;
  b->scratch = NULL;
  rill_seq_batch_free(&b->sb);
}

rill_status *rill_cuda_batch_scratch(rill_kernel_ctx *ctx, rill_cuda_dev *d, rill_cuda_batch *b, int64_t n) {
  rill_status *st = rill_cuda_zeroed(ctx, d, n, &b->scratch);
  if (st) rill_cuda_batch_free(d, b);
  return st;
}

rill_status *rill_cuda_batch_make(rill_kernel_ctx *ctx, rill_cuda_dev *d, const rill_tensor *x, size_t slot,
                                  int64_t rows, bool reverse, rill_cuda_batch *b) {
  memset(b, 0, sizeof *b);
  RILL_TRY(rill_seq_batch_make(&x->lod.levels[0], rows, reverse, &b->sb));
  const rill_seq_batch *sb = &b->sb;
  size_t n = (size_t)(sb->rows + sb->nseq + sb->steps + 1), bytes = n * sizeof(int64_t);
  int64_t *host = rill_malloc(bytes);
  if (!host) {
    rill_seq_batch_free(&b->sb);
    return rill_oom();
  }
  memcpy(host, sb->row, (size_t)sb->rows * sizeof(int64_t));
  memcpy(host + sb->rows, sb->order, (size_t)sb->nseq * sizeof(int64_t));
  memcpy(host + sb->rows + sb->nseq, sb->starts, (size_t)(sb->steps + 1) * sizeof(int64_t));
  rill_status *st = NULL;
  if (!(b->dev = rill_cuda_mem_alloc(d, bytes)))
    st = rill_kernel_error(ctx, "out of device memory for the batch order of input %s (%s)",
                           ctx->schema->inputs[slot].name, rill_kin_name(ctx, slot, 0));
  else /* from pageable memory: staged before the call returns */
    st = rill_cuda_kernel_check(ctx, cudaMemcpyAsync(b->dev, host, bytes, cudaMemcpyHostToDevice, d->stream),
                                "copying the batch order");
  rill_free(host);
  if (st) {
    rill_cuda_batch_free(d, b);
    return st;
  }
  b->row = b->dev;
  b->order = b->row + sb->rows;
  b->starts = b->order + sb->nseq;
  return NULL;
}

rill_status *rill_cuda_zeroed(rill_kernel_ctx *ctx, rill_cuda_dev *d, int64_t n, float **out) {
  size_t bytes = (size_t)(n ? n : 1) * sizeof(float);
  if (!(*out = rill_cuda_mem_alloc(d, bytes)))
    return rill_kernel_error(ctx, "out of device memory for %zu bytes of batch-order rows", bytes);
  rill_status *st = rill_cuda_kernel_check(ctx, cudaMemsetAsync(*out, 0, bytes, d->stream), "zeroing the rows");
  if (st) {
    rill_cuda_mem_free(d, *out);
    *out = NULL;
  }
  return st;
}

rill_status *rill_cuda_zero_outputs(rill_kernel_ctx *ctx, rill_tensor *const *outs, size_t n, rill_cuda_dev **d) {
  for (size_t o = 0; o < n; o++) {
    if (!outs[o]) continue;
    if (!*d) RILL_TRY(rill_cuda_kernel_dev(ctx, outs[o], d));
    size_t nb = rill_tensor_nbytes(outs[o]);
    if (nb)
      RILL_TRY(rill_cuda_kernel_check(ctx, cudaMemsetAsync(rill_tensor_ptr(outs[o]), 0, nb, (*d)->stream),
                                      "zeroing the gradients"));
  }
  return NULL;
}
