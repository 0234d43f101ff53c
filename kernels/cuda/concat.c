/* concat, concat_grad and split CUDA kernels, every dtype. Each tensor is viewed as
 * [outer, extent at axis * inner]; each piece is one strided copy into or out of its
 * columns of the whole (cudaMemcpy2DAsync, device to device). A piece that shares
 * memory with the whole goes through a scratch block. The executor has sized the
 * outputs from inference; the kernels check them as the CPU kernels do. */
#include "kernels/cuda/cuda.h"
#include "operators/tensor_ops.h"

#define MAX_PIECES 64

_Static_assert(RILL_SAME_POS(RILL_SPLIT_ATTR_AXIS, RILL_CONCAT_ATTR_AXIS) &&
                   RILL_SAME_POS(RILL_CONCAT_GRAD_ATTR_AXIS, RILL_CONCAT_ATTR_AXIS),
               "concat, concat_grad and split read their axis at one position");

/* Whether a piece of dims pd fits the whole wd outside `axis`. */
static bool fits(const rill_dims *pd, const rill_dims *wd, int axis) {
  if (pd->n != wd->n) return false;
  for (int k = 0; k < wd->n; k++)
    if (k != axis && pd->d[k] != wd->d[k]) return false;
  return true;
}

/* The axis: attribute axis, or with an AxisTensor (input `slot`, whose value lives on
 * the device) the one axis at which the pieces fit the whole and add up to it, the
 * attribute's first. */
static rill_status *find_axis(rill_kernel_ctx *ctx, size_t slot, const rill_dims *const *dims, size_t n,
                              const rill_dims *whole, int *axis) {
  int64_t a = ctx->attrs[RILL_CONCAT_ATTR_AXIS].v.i;
  if (!rill_norm_axis(a, whole->n, axis))
    return rill_kernel_error(ctx, "axis %lld is out of range for rank %d", (long long)a, (int)whole->n);
  if (!rill_kin(ctx, slot, 0)) return NULL;
  for (int k = -1; k < whole->n; k++) {
    int cand = k < 0 ? *axis : k;
    int64_t sum = 0;
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++) {
      ok = fits(dims[i], whole, cand);
      sum += ok ? dims[i]->d[cand] : 0;
    }
    if (ok && sum == whole->d[cand]) {
      *axis = cand;
      return NULL;
    }
  }
  return rill_kernel_error(ctx, "the pieces do not add up to the whole at any axis (input AxisTensor %s)",
                           rill_kin_name(ctx, slot, 0));
}

/* Copies between `whole` and the pieces (gather: pieces into whole). dims[i] is piece
 * i's shape; pieces[i] may be NULL when scattering (an unwanted gradient). */
static rill_status *move(rill_kernel_ctx *ctx, rill_tensor *whole, const rill_dims *const *dims,
                         rill_tensor *const *pieces, size_t n, size_t axis_slot, bool gather, const char *what) {
  int axis = 0;
  RILL_TRY(find_axis(ctx, axis_slot, dims, n, &whole->dims, &axis));
  int64_t sum = 0;
  for (size_t i = 0; i < n; i++) {
    if (!fits(dims[i], &whole->dims, axis)) {
      char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
      return rill_kernel_error(ctx, "%s #%zu of shape %s does not fit shape %s at axis %d", what, i,
                               rill_dims_str(dims[i], a, sizeof a), rill_dims_str(&whole->dims, b, sizeof b), axis);
    }
    if (pieces[i] && pieces[i]->dtype != whole->dtype)
      return rill_kernel_error(ctx, "%s #%zu is %s, expected %s", what, i, rill_dtype_name(pieces[i]->dtype),
                               rill_dtype_name(whole->dtype));
    sum += dims[i]->d[axis];
  }
  if (sum != whole->dims.d[axis])
    return rill_kernel_error(ctx, "%s add up to %lld at axis %d, the whole has %lld", what, (long long)sum, axis,
                             (long long)whole->dims.d[axis]);
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, whole, &d));
  size_t es = rill_dtype_size(whole->dtype), wbytes = rill_tensor_nbytes(whole);
  int64_t outer = rill_dims_prod(&whole->dims, 0, axis), inner = rill_dims_prod(&whole->dims, axis + 1, whole->dims.n);
  size_t pitch = (size_t)(whole->dims.d[axis] * inner) * es;
  uint8_t *w = rill_tensor_ptr(whole), *scratch = NULL;
  cudaError_t e = cudaSuccess;
  for (size_t i = 0; i < n && !scratch; i++)
    if (pieces[i] && rill_overlaps(rill_tensor_ptr(pieces[i]), rill_tensor_nbytes(pieces[i]), w, wbytes)) {
      if (!(scratch = rill_cuda_mem_alloc(d, wbytes ? wbytes : 1)))
        return rill_kernel_error(ctx, "out of device memory for a %zu-byte scratch block", wbytes);
      if (!gather && wbytes) e = cudaMemcpyAsync(scratch, w, wbytes, cudaMemcpyDeviceToDevice, d->stream);
    }
  uint8_t *base = scratch ? scratch : w;
  size_t at = 0; /* bytes into each row of the whole */
  for (size_t i = 0; i < n && e == cudaSuccess; i++) {
    size_t width = (size_t)(dims[i]->d[axis] * inner) * es;
    if (pieces[i] && width && outer) {
      uint8_t *p = rill_tensor_ptr(pieces[i]);
      void *dst = gather ? (void *)(base + at) : (void *)p;
      const void *src = gather ? (const void *)p : (const void *)(base + at);
      e = outer == 1 ? cudaMemcpyAsync(dst, src, width, cudaMemcpyDeviceToDevice, d->stream)
                     : cudaMemcpy2DAsync(dst, gather ? pitch : width, src, gather ? width : pitch, width,
                                         (size_t)outer, cudaMemcpyDeviceToDevice, d->stream);
    }
    at += width;
  }
  if (scratch) {
    if (e == cudaSuccess && gather && wbytes) e = cudaMemcpyAsync(w, scratch, wbytes, cudaMemcpyDeviceToDevice, d->stream);
    /* Freed once queued: the next user of the block is queued behind these copies. */
    rill_cuda_mem_free(d, scratch);
  }
  return rill_cuda_kernel_check(ctx, e, gather ? "concat copy" : "split copy");
}

rill_status *rill_cuda_concat_kernel(rill_kernel_ctx *ctx) {
  size_t n = ctx->nin[RILL_CONCAT_IN_X];
  rill_tensor *x0 = rill_kin(ctx, RILL_CONCAT_IN_X, 0), *out = NULL;
  if (!x0 || !rill_tensor_is_set(x0))
    return rill_kernel_error(ctx, "input X (%s) is missing or holds no data", rill_kin_name(ctx, RILL_CONCAT_IN_X, 0));
  if (n > MAX_PIECES) return rill_kernel_error(ctx, "more than %d inputs X", MAX_PIECES);
  RILL_TRY(rill_kout_need(ctx, RILL_CONCAT_OUT_OUT, 0, x0->dtype, &out));
  rill_tensor *xs[MAX_PIECES];
  const rill_dims *dims[MAX_PIECES];
  for (size_t i = 0; i < n; i++) {
    RILL_TRY(rill_kin_need(ctx, RILL_CONCAT_IN_X, i, x0->dtype, &xs[i]));
    dims[i] = &xs[i]->dims;
  }
  return move(ctx, out, dims, xs, n, RILL_CONCAT_IN_AXIS_TENSOR, true, "input X");
}

rill_status *rill_cuda_concat_grad_kernel(rill_kernel_ctx *ctx) {
  size_t n = ctx->nin[RILL_CONCAT_GRAD_IN_X];
  rill_tensor *dout = rill_kin(ctx, RILL_CONCAT_GRAD_IN_OUT_GRAD, 0);
  if (!dout || !rill_tensor_is_set(dout))
    return rill_kernel_error(ctx, "input Out@GRAD (%s) is missing or holds no data",
                             rill_kin_name(ctx, RILL_CONCAT_GRAD_IN_OUT_GRAD, 0));
  if (n != ctx->nout[RILL_CONCAT_GRAD_OUT_X_GRAD] || n > MAX_PIECES)
    return rill_kernel_error(ctx, "has %zu inputs X and %zu outputs X@GRAD", n, ctx->nout[RILL_CONCAT_GRAD_OUT_X_GRAD]);
  rill_tensor *dxs[MAX_PIECES];
  const rill_dims *dims[MAX_PIECES];
  for (size_t i = 0; i < n; i++) {
    rill_tensor *x = rill_kin(ctx, RILL_CONCAT_GRAD_IN_X, i);
    if (!x) return rill_kernel_error(ctx, "input X (%s) is missing", rill_kin_name(ctx, RILL_CONCAT_GRAD_IN_X, i));
    dims[i] = &x->dims;
    dxs[i] = rill_kout(ctx, RILL_CONCAT_GRAD_OUT_X_GRAD, i);
    if (dxs[i]) {
      RILL_TRY(rill_kout_need(ctx, RILL_CONCAT_GRAD_OUT_X_GRAD, i, dout->dtype, &dxs[i]));
      RILL_TRY(rill_kout_check_dims(ctx, RILL_CONCAT_GRAD_OUT_X_GRAD, i, dxs[i], &x->dims));
    }
  }
  return move(ctx, dout, dims, dxs, n, RILL_CONCAT_GRAD_IN_AXIS_TENSOR, false, "input X");
}

rill_status *rill_cuda_split_kernel(rill_kernel_ctx *ctx) {
  rill_tensor *x = rill_kin(ctx, RILL_SPLIT_IN_X, 0);
  if (!x || !rill_tensor_is_set(x))
    return rill_kernel_error(ctx, "input X (%s) is missing or holds no data", rill_kin_name(ctx, RILL_SPLIT_IN_X, 0));
  size_t n = ctx->nout[RILL_SPLIT_OUT_OUT];
  if (n > MAX_PIECES) return rill_kernel_error(ctx, "more than %d outputs Out", MAX_PIECES);
  rill_tensor *outs[MAX_PIECES];
  const rill_dims *dims[MAX_PIECES];
  for (size_t i = 0; i < n; i++) {
    RILL_TRY(rill_kout_need(ctx, RILL_SPLIT_OUT_OUT, i, x->dtype, &outs[i]));
    dims[i] = &outs[i]->dims;
  }
  return move(ctx, x, dims, outs, n, RILL_SPLIT_IN_AXIS_TENSOR, false, "output Out");
}
