/* sequence_pool and its gradient, CUDA kernels, float32: X's sequences are its LoD's
 * last level, on the host, checked by the CPU kernel's rules (operators/sequence_pool.h)
 * and copied to the device with the launch; the device walks each sequence as the CPU
 * kernel does (device/sequence.cu). The gradient of MAX reads MaxIndex back and checks
 * each row against its sequence, as the CPU does, before writing through it. */
#include "framework/base/alloc.h"
#include "kernels/cuda/cuda.h"
#include "operators/sequence_pool.h"

_Static_assert((int)RILL_CUDA_SEQPOOL_AVERAGE == (int)RILL_SEQPOOL_AVERAGE &&
                   (int)RILL_CUDA_SEQPOOL_SUM == (int)RILL_SEQPOOL_SUM &&
                   (int)RILL_CUDA_SEQPOOL_SQRT == (int)RILL_SEQPOOL_SQRT &&
                   (int)RILL_CUDA_SEQPOOL_MAX == (int)RILL_SEQPOOL_MAX &&
                   (int)RILL_CUDA_SEQPOOL_LAST == (int)RILL_SEQPOOL_LAST &&
                   (int)RILL_CUDA_SEQPOOL_FIRST == (int)RILL_SEQPOOL_FIRST,
               "the device numbers the pool kinds as operators/sequence_pool.h does");
_Static_assert(RILL_SEQUENCE_POOL_IN_X == 0 && RILL_SEQUENCE_POOL_GRAD_IN_X == 0 &&
                   RILL_SAME_POS(RILL_SEQUENCE_POOL_GRAD_ATTR_POOLTYPE, RILL_SEQUENCE_POOL_ATTR_POOLTYPE),
               "operators/sequence_pool.h reads X as input 0");

/* The sequences' offsets on the device (*dev, freed by the caller once its users are
 * queued). */
static rill_status *offsets_to_device(rill_kernel_ctx *ctx, rill_cuda_dev *d, const rill_lod_level *lv,
                                      int64_t **dev) {
  size_t bytes = lv->n * sizeof(int64_t);
  _Static_assert(sizeof(uint64_t) == sizeof(int64_t), "offsets copied as they are");
  if (!(*dev = rill_cuda_mem_alloc(d, bytes)))
    return rill_kernel_error(ctx, "out of device memory for %zu LoD offsets of input X (%s)", lv->n,
                             rill_kin_name(ctx, 0, 0));
  /* from pageable memory: staged before the call returns */
  rill_status *st = rill_cuda_kernel_check(
      ctx, cudaMemcpyAsync(*dev, lv->offsets, bytes, cudaMemcpyHostToDevice, d->stream), "copying LoD offsets");
  if (st) {
    rill_cuda_mem_free(d, *dev);
    *dev = NULL;
  }
  return st;
}

rill_status *rill_cuda_sequence_pool_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *x = NULL, *out = NULL, *mi = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_SEQUENCE_POOL_IN_X, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kout_need(ctx, RILL_SEQUENCE_POOL_OUT_OUT, 0, RILL_DTYPE_FP32, &out));
  int kind;
  RILL_TRY(rill_seqpool_kind_of(ctx, &ctx->attrs[RILL_SEQUENCE_POOL_ATTR_POOLTYPE], &kind));
  if (kind == RILL_SEQPOOL_MAX && rill_kout(ctx, RILL_SEQUENCE_POOL_OUT_MAX_INDEX, 0))
    RILL_TRY(rill_kout_need(ctx, RILL_SEQUENCE_POOL_OUT_MAX_INDEX, 0, RILL_DTYPE_INT32, &mi));
  const rill_lod_level *lv = NULL;
  int64_t nseq = 0, rows = 0, D = 0;
  RILL_TRY(rill_seqpool_sequences(ctx, x, &lv, &nseq, &rows, &D));
  rill_dims want = x->dims;
  want.d[0] = nseq;
  RILL_TRY(rill_kout_check_dims(ctx, RILL_SEQUENCE_POOL_OUT_OUT, 0, out, &want));
  if (mi) RILL_TRY(rill_kout_check_dims(ctx, RILL_SEQUENCE_POOL_OUT_MAX_INDEX, 0, mi, &want));
  if (x->lod.nlevels == 2) { /* Out keeps X's outer level */
    rill_lod lod = {0, NULL}, first = {1, x->lod.levels};
    RILL_TRY(rill_cuda_kernel_status(ctx, rill_lod_copy(&lod, &first)));
    rill_lod_clear(&out->lod);
    out->lod = lod;
  }
  if (nseq * D == 0) return NULL;
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, out, &d));
  rill_cuda_seqpool p = {.nseq = nseq, .width = D, .kind = kind,
                         .pad = (float)ctx->attrs[RILL_SEQUENCE_POOL_ATTR_PAD_VALUE].v.f};
  int64_t *offsets;
  RILL_TRY(offsets_to_device(ctx, d, lv, &offsets));
  p.offsets = offsets;
  cudaError_t e = rill_cuda_seqpool_f32(rill_tensor_ptr(x), rill_tensor_ptr(out), mi ? rill_tensor_ptr(mi) : NULL, &p,
                                        d->stream);
  rill_cuda_mem_free(d, offsets); /* queued behind the launch */
  return rill_cuda_kernel_check(ctx, e, "sequence_pool launch");
}

/* MaxIndex (on the device) read back: each row within its sequence, or the CPU's error. */
static rill_status *check_max_index(rill_kernel_ctx *ctx, rill_cuda_dev *d, const rill_tensor *mi,
                                    const rill_lod_level *lv, int64_t nseq, int64_t D) {
  size_t n = (size_t)(nseq * D);
  int32_t *h = rill_malloc(n * sizeof *h);
  if (!h) return rill_oom();
  cudaError_t e = cudaMemcpyAsync(h, rill_tensor_ptr(mi), n * sizeof *h, cudaMemcpyDefault, d->stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(d->stream);
  rill_status *st = rill_cuda_kernel_check(ctx, e, "reading MaxIndex back");
  for (int64_t i = 0; !st && i < nseq; i++) {
    int64_t a = (int64_t)lv->offsets[i], b = (int64_t)lv->offsets[i + 1];
    for (int64_t k = 0; a < b && k < D && !st; k++) {
      int64_t r = h[i * D + k];
      if (r < a || r >= b)
        st = rill_kernel_error(ctx, "input MaxIndex (%s) holds row %lld for sequence %lld, which spans rows %lld..%lld",
                               rill_kin_name(ctx, RILL_SEQUENCE_POOL_GRAD_IN_MAX_INDEX, 0), (long long)r, (long long)i,
                               (long long)a, (long long)(b - 1));
    }
  }
  rill_free(h);
  return st;
}

rill_status *rill_cuda_sequence_pool_grad_fp32(rill_kernel_ctx *ctx) {
  if (!rill_kout(ctx, RILL_SEQUENCE_POOL_GRAD_OUT_X_GRAD, 0)) return NULL; /* X@GRAD not wanted */
  rill_tensor *x = NULL, *mi = NULL, *g = NULL, *dx = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_SEQUENCE_POOL_GRAD_IN_X, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kin_need(ctx, RILL_SEQUENCE_POOL_GRAD_IN_OUT_GRAD, 0, RILL_DTYPE_FP32, &g));
  RILL_TRY(rill_kout_need(ctx, RILL_SEQUENCE_POOL_GRAD_OUT_X_GRAD, 0, RILL_DTYPE_FP32, &dx));
  int kind;
  RILL_TRY(rill_seqpool_kind_of(ctx, &ctx->attrs[RILL_SEQUENCE_POOL_GRAD_ATTR_POOLTYPE], &kind));
  if (kind == RILL_SEQPOOL_MAX)
    RILL_TRY(rill_kin_need(ctx, RILL_SEQUENCE_POOL_GRAD_IN_MAX_INDEX, 0, RILL_DTYPE_INT32, &mi));
  const rill_lod_level *lv = NULL;
  int64_t nseq = 0, rows = 0, D = 0;
  RILL_TRY(rill_seqpool_sequences(ctx, x, &lv, &nseq, &rows, &D));
  if (rill_tensor_numel(g) != nseq * D || (mi && rill_tensor_numel(mi) != nseq * D))
    return rill_kernel_error(ctx,
                             "inputs Out@GRAD (%s) and MaxIndex must hold %lld x %lld elements (one row per sequence "
                             "of X (%s))",
                             rill_kin_name(ctx, RILL_SEQUENCE_POOL_GRAD_IN_OUT_GRAD, 0), (long long)nseq, (long long)D,
                             rill_kin_name(ctx, RILL_SEQUENCE_POOL_GRAD_IN_X, 0));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_SEQUENCE_POOL_GRAD_OUT_X_GRAD, 0, dx, &x->dims));
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, dx, &d));
  if (mi && nseq * D != 0) RILL_TRY(check_max_index(ctx, d, mi, lv, nseq, D));
  cudaError_t e = rill_tensor_nbytes(dx) ? cudaMemsetAsync(rill_tensor_ptr(dx), 0, rill_tensor_nbytes(dx), d->stream)
                                         : cudaSuccess;
  RILL_TRY(rill_cuda_kernel_check(ctx, e, "zeroing X@GRAD"));
  if (nseq * D == 0) return NULL;
  rill_cuda_seqpool p = {.nseq = nseq, .width = D, .kind = kind};
  int64_t *offsets;
  RILL_TRY(offsets_to_device(ctx, d, lv, &offsets));
  p.offsets = offsets;
  e = rill_cuda_seqpool_grad_f32(rill_tensor_ptr(g), mi ? rill_tensor_ptr(mi) : NULL, rill_tensor_ptr(dx), &p,
                                 d->stream);
  rill_cuda_mem_free(d, offsets);
  return rill_cuda_kernel_check(ctx, e, "sequence_pool gradient launch");
}
