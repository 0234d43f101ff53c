/* sequence_conv and its gradient, CUDA kernels, float32. The host works out, from X's
 * LoD and the CPU kernel's rules (operators/sequence_conv.h), which row each context slot
 * of each output row reads: a row of X, a row of PaddingData (paddingTrainable), or
 * zeros. The device gathers those rows into the context matrix [rows, contextLength * D]
 * and multiplies it by Filter with cuBLAS. The gradient: Filter@GRAD = context^T
 * Out@GRAD; the context's gradient Out@GRAD Filter^T goes back to the rows it read,
 * each row summing its slots in the CPU's order (rows.c's groups). */
#include "framework/base/alloc.h"
#include "kernels/cuda/cuda.h"
#include "operators/sequence_conv.h"

_Static_assert(RILL_SEQUENCE_CONV_IN_X == 0 && RILL_SEQUENCE_CONV_IN_FILTER == 2 && RILL_SEQUENCE_CONV_GRAD_IN_X == 0 &&
                   RILL_SEQUENCE_CONV_GRAD_IN_FILTER == 2,
               "operators/sequence_conv.h reads X and Filter as inputs 0 and 2");

/* The row each context slot reads, slot j of output row t at [t * len + j]: a row of X,
 * rows + a row of PaddingData (has_pad), or -1 for zeros; on the host (*host,
 * rill_free'd by the caller) and on the device (*dev, rill_cuda_mem_free'd). */
static rill_status *context_sources(rill_kernel_ctx *ctx, rill_cuda_dev *d, const rill_tensor *x, int64_t len,
                                    int64_t start, int64_t up, bool has_pad, int64_t **host, int64_t **dev) {
  const rill_lod_level *lv = &x->lod.levels[0];
  int64_t rows = x->dims.d[0], n = rows * len;
  *dev = NULL;
  if (!(*host = rill_malloc((size_t)(n ? n : 1) * sizeof **host))) return rill_oom();
  size_t seq = 0;
  for (int64_t t = 0; t < rows; t++) {
    while (lv->offsets[seq + 1] <= (uint64_t)t) seq++;
    int64_t s = (int64_t)lv->offsets[seq], e = (int64_t)lv->offsets[seq + 1];
    for (int64_t j = 0; j < len; j++) {
      bool from_pad;
      int64_t r = rill_seqconv_context_row(t, j, start, s, e, up, has_pad, &from_pad);
      (*host)[t * len + j] = r < 0 ? -1 : from_pad ? rows + r : r;
    }
  }
  size_t bytes = (size_t)n * sizeof **host;
  rill_status *st = NULL;
  if (!(*dev = rill_cuda_mem_alloc(d, bytes)))
    st = rill_kernel_error(ctx, "out of device memory for %lld context rows of input X (%s)", (long long)n,
                           rill_kin_name(ctx, 0, 0));
  else /* from pageable memory: staged before the call returns */
    st = rill_cuda_kernel_check(ctx, cudaMemcpyAsync(*dev, *host, bytes, cudaMemcpyHostToDevice, d->stream),
                                "copying the context rows");
  if (st) {
    rill_free(*host);
    *host = NULL;
    rill_cuda_mem_free(d, *dev);
    *dev = NULL;
  }
  return st;
}

/* The context matrix [rows * len, D] (*col, rill_cuda_mem_free'd by the caller) gathered
 * from X and, when given, PaddingData (copied below X into one table for the gather). */
static rill_status *context_matrix(rill_kernel_ctx *ctx, rill_cuda_dev *d, const rill_tensor *x,
                                   const rill_tensor *pad, const int64_t *src_dev, int64_t len, float **col) {
  int64_t rows = x->dims.d[0], D = x->dims.d[1];
  const float *table = rill_tensor_ptr(x);
  float *both = NULL;
  cudaError_t e = cudaSuccess;
  if (pad && rill_tensor_numel(pad)) {
    size_t xb = rill_tensor_nbytes(x), pb = rill_tensor_nbytes(pad);
    if (!(both = rill_cuda_mem_alloc(d, xb + pb)))
      return rill_kernel_error(ctx, "out of device memory for X (%s) and PaddingData together", rill_kin_name(ctx, 0, 0));
    e = cudaMemcpyAsync(both, table, xb, cudaMemcpyDeviceToDevice, d->stream);
    if (e == cudaSuccess)
      e = cudaMemcpyAsync((char *)both + xb, rill_tensor_ptr(pad), pb, cudaMemcpyDeviceToDevice, d->stream);
    table = both;
  }
  size_t bytes = (size_t)(rows * len * D) * sizeof(float);
  rill_status *st = NULL;
  if (!(*col = rill_cuda_mem_alloc(d, bytes ? bytes : sizeof(float))))
    st = rill_kernel_error(ctx, "out of device memory for the %zu-byte context matrix of input X (%s)", bytes,
                           rill_kin_name(ctx, 0, 0));
  if (!st && e == cudaSuccess) e = rill_cuda_gather_rows_f32(table, src_dev, true, rows * len, D, -1, *col, d->stream);
  if (!st) st = rill_cuda_kernel_check(ctx, e, "gathering the context rows");
  rill_cuda_mem_free(d, both); /* queued behind the gather */
  if (st) {
    rill_cuda_mem_free(d, *col);
    *col = NULL;
  }
  return st;
}

rill_status *rill_cuda_sequence_conv_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *x = NULL, *pad = NULL, *f = NULL, *out = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_SEQUENCE_CONV_IN_X, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kin_need(ctx, RILL_SEQUENCE_CONV_IN_FILTER, 0, RILL_DTYPE_FP32, &f));
  RILL_TRY(rill_kout_need(ctx, RILL_SEQUENCE_CONV_OUT_OUT, 0, RILL_DTYPE_FP32, &out));
  if (ctx->attrs[RILL_SEQUENCE_CONV_ATTR_PADDING_TRAINABLE].v.b)
    RILL_TRY(rill_kin_need(ctx, RILL_SEQUENCE_CONV_IN_PADDING_DATA, 0, RILL_DTYPE_FP32, &pad));
  int64_t len = ctx->attrs[RILL_SEQUENCE_CONV_ATTR_CONTEXT_LENGTH].v.i;
  int64_t start = ctx->attrs[RILL_SEQUENCE_CONV_ATTR_CONTEXT_START].v.i;
  int64_t up, down, rows, D, N;
  RILL_TRY(rill_seqconv_geometry(ctx, x, f, pad, len, start, &up, &down, &rows, &D, &N));
  rill_dims want = {.n = 2, .d = {rows, N}};
  RILL_TRY(rill_kout_check_dims(ctx, RILL_SEQUENCE_CONV_OUT_OUT, 0, out, &want));
  if (rows == 0 || N == 0) return NULL;
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, out, &d));
  if (D == 0)
    return rill_cuda_kernel_check(ctx, cudaMemsetAsync(rill_tensor_ptr(out), 0, rill_tensor_nbytes(out), d->stream),
                                  "zeroing Out");
  int64_t *src = NULL, *src_dev = NULL;
  float *col = NULL;
  RILL_TRY(context_sources(ctx, d, x, len, start, up, pad != NULL, &src, &src_dev));
  rill_free(src);
  rill_status *st = context_matrix(ctx, d, x, pad, src_dev, len, &col);
  if (!st)
    st = rill_cuda_kernel_status(ctx, rill_cuda_sgemm(d, false, false, rows, N, len * D, 1.0f, col, 0,
                                                      rill_tensor_ptr(f), 0, 0.0f, rill_tensor_ptr(out), 0, 1));
  rill_cuda_mem_free(d, col); /* both queued behind their last users */
  rill_cuda_mem_free(d, src_dev);
  return st;
}

/* dst (rows x D, zeroed) := for each of its rows, the sum in order of the context
 * gradient's slots (dcol viewed as [rows * len, D]) whose source, less `base`, is that
 * row; sources outside [base, base + nrows) belong to the other target. */
static rill_status *slots_back(rill_kernel_ctx *ctx, rill_cuda_dev *d, const int64_t *src, int64_t nslots,
                               int64_t base, int64_t nrows, int64_t D, const float *dcol, rill_tensor *dst) {
  int64_t *ids = rill_malloc((size_t)(nslots ? nslots : 1) * sizeof *ids), skip = -1;
  if (!ids) return rill_oom();
  for (int64_t i = 0; i < nslots; i++) ids[i] = src[i] >= base && src[i] < base + nrows ? src[i] - base : skip;
  rill_cuda_groups grp = {0};
  rill_status *st = rill_cuda_groups_make(ctx, d, ids, nslots, &skip, &grp);
  rill_free(ids);
  if (st) return st;
  cudaError_t e = rill_tensor_nbytes(dst) ? cudaMemsetAsync(rill_tensor_ptr(dst), 0, rill_tensor_nbytes(dst), d->stream)
                                          : cudaSuccess;
  if (e == cudaSuccess && grp.ngroups)
    e = rill_cuda_sum_groups_f32(dcol, grp.dev, grp.ngroups, D, NULL, rill_tensor_ptr(dst), d->stream);
  rill_cuda_groups_free(d, &grp);
  return rill_cuda_kernel_check(ctx, e, "adding the context gradient back");
}

rill_status *rill_cuda_sequence_conv_grad_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *x = NULL, *pad = NULL, *f = NULL, *g = NULL, *dx = NULL, *dpad = NULL, *df = NULL;
  if (!rill_kout(ctx, RILL_SEQUENCE_CONV_GRAD_OUT_X_GRAD, 0) &&
      !rill_kout(ctx, RILL_SEQUENCE_CONV_GRAD_OUT_PADDING_DATA_GRAD, 0) &&
      !rill_kout(ctx, RILL_SEQUENCE_CONV_GRAD_OUT_FILTER_GRAD, 0))
    return NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_SEQUENCE_CONV_GRAD_IN_X, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kin_need(ctx, RILL_SEQUENCE_CONV_GRAD_IN_FILTER, 0, RILL_DTYPE_FP32, &f));
  RILL_TRY(rill_kin_need(ctx, RILL_SEQUENCE_CONV_GRAD_IN_OUT_GRAD, 0, RILL_DTYPE_FP32, &g));
  if (ctx->attrs[RILL_SEQUENCE_CONV_GRAD_ATTR_PADDING_TRAINABLE].v.b)
    RILL_TRY(rill_kin_need(ctx, RILL_SEQUENCE_CONV_GRAD_IN_PADDING_DATA, 0, RILL_DTYPE_FP32, &pad));
  if (rill_kout(ctx, RILL_SEQUENCE_CONV_GRAD_OUT_PADDING_DATA_GRAD, 0) && !pad)
    return rill_kernel_error(ctx, "output PaddingData@GRAD needs paddingTrainable and input PaddingData");
  int64_t len = ctx->attrs[RILL_SEQUENCE_CONV_GRAD_ATTR_CONTEXT_LENGTH].v.i;
  int64_t start = ctx->attrs[RILL_SEQUENCE_CONV_GRAD_ATTR_CONTEXT_START].v.i;
  int64_t up, down, rows, D, N;
  RILL_TRY(rill_seqconv_geometry(ctx, x, f, pad, len, start, &up, &down, &rows, &D, &N));
  if (g->dims.n != 2 || g->dims.d[0] != rows || g->dims.d[1] != N)
    return rill_kernel_error(ctx, "input Out@GRAD (%s) must have shape [%lld, %lld]",
                             rill_kin_name(ctx, RILL_SEQUENCE_CONV_GRAD_IN_OUT_GRAD, 0), (long long)rows, (long long)N);
  const struct {
    size_t slot;
    rill_tensor *like, **t;
  } outs[] = {{RILL_SEQUENCE_CONV_GRAD_OUT_X_GRAD, x, &dx},
              {RILL_SEQUENCE_CONV_GRAD_OUT_PADDING_DATA_GRAD, pad, &dpad},
              {RILL_SEQUENCE_CONV_GRAD_OUT_FILTER_GRAD, f, &df}};
  for (size_t i = 0; i < 3; i++) {
    if (!rill_kout(ctx, outs[i].slot, 0)) continue;
    RILL_TRY(rill_kout_need(ctx, outs[i].slot, 0, RILL_DTYPE_FP32, outs[i].t));
    RILL_TRY(rill_kout_check_dims(ctx, outs[i].slot, 0, *outs[i].t, &outs[i].like->dims));
  }
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, dx ? dx : dpad ? dpad : df, &d));
  int64_t K = len * D;
  if (rows == 0 || N == 0 || K == 0) { /* nothing flows back: the gradients are zero */
    cudaError_t e = cudaSuccess;
    for (size_t i = 0; i < 3 && e == cudaSuccess; i++)
      if (*outs[i].t && rill_tensor_nbytes(*outs[i].t))
        e = cudaMemsetAsync(rill_tensor_ptr(*outs[i].t), 0, rill_tensor_nbytes(*outs[i].t), d->stream);
    return rill_cuda_kernel_check(ctx, e, "zeroing the gradients");
  }
  int64_t *src = NULL, *src_dev = NULL;
  float *col = NULL, *dcol = NULL;
  RILL_TRY(context_sources(ctx, d, x, len, start, up, pad != NULL, &src, &src_dev));
  rill_status *st = NULL;
  if (df) {
    st = context_matrix(ctx, d, x, pad, src_dev, len, &col);
    if (!st)
      st = rill_cuda_kernel_status(ctx, rill_cuda_sgemm(d, true, false, K, N, rows, 1.0f, col, 0, rill_tensor_ptr(g), 0,
                                                        0.0f, rill_tensor_ptr(df), 0, 1));
  }
  if (!st && (dx || dpad)) {
    size_t bytes = (size_t)(rows * K) * sizeof(float);
    if (!(dcol = rill_cuda_mem_alloc(d, bytes)))
      st = rill_kernel_error(ctx, "out of device memory for the %zu-byte context gradient", bytes);
    if (!st)
      st = rill_cuda_kernel_status(ctx, rill_cuda_sgemm(d, false, true, rows, K, N, 1.0f, rill_tensor_ptr(g), 0,
                                                        rill_tensor_ptr(f), 0, 0.0f, dcol, 0, 1));
    if (!st && dx) st = slots_back(ctx, d, src, rows * len, 0, rows, D, dcol, dx);
    if (!st && dpad) st = slots_back(ctx, d, src, rows * len, rows, up + down, D, dcol, dpad);
  }
  rill_free(src);
  rill_cuda_mem_free(d, col); /* each queued behind its last user */
  rill_cuda_mem_free(d, dcol);
  rill_cuda_mem_free(d, src_dev);
  return st;
}
