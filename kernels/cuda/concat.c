/* concat CUDA kernel, every dtype: each input is one strided copy into its columns of the
 * output viewed as [outer, extent at axis * inner] (cudaMemcpy2DAsync, device to device).
 * An input that shares memory with the output goes through a scratch block first. */
#include "kernels/cuda/cuda.h"
#include "operators/tensor_ops.h"

#define MAX_PIECES 64

/* Whether x fits the output at `axis`: the same rank and extents elsewhere. */
static bool fits(const rill_dims *x, const rill_dims *out, int axis) {
  if (x->n != out->n) return false;
  for (int k = 0; k < out->n; k++)
    if (k != axis && x->d[k] != out->d[k]) return false;
  return true;
}

/* The axis: attribute axis, or with an AxisTensor (whose value lives on the device) the
 * one axis at which the inputs fit the output and add up to it, the attribute's first. */
static rill_status *concat_axis(rill_kernel_ctx *ctx, rill_tensor *const *xs, size_t n, const rill_dims *out,
                                int *axis) {
  int64_t a = ctx->attrs[RILL_CONCAT_ATTR_AXIS].v.i;
  if (!rill_norm_axis(a, out->n, axis))
    return rill_kernel_error(ctx, "axis %lld is out of range for rank %d", (long long)a, (int)out->n);
  if (!rill_kin(ctx, RILL_CONCAT_IN_AXIS_TENSOR, 0)) return NULL;
  for (int k = -1; k < out->n; k++) {
    int cand = k < 0 ? *axis : k;
    int64_t sum = 0;
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++) {
      ok = fits(&xs[i]->dims, out, cand);
      sum += ok ? xs[i]->dims.d[cand] : 0;
    }
    if (ok && sum == out->d[cand]) {
      *axis = cand;
      return NULL;
    }
  }
  return rill_kernel_error(ctx, "the inputs X do not add up to output Out (%s) at any axis",
                           rill_kout_name(ctx, RILL_CONCAT_OUT_OUT, 0));
}

rill_status *rill_cuda_concat_kernel(rill_kernel_ctx *ctx) {
  size_t n = ctx->nin[RILL_CONCAT_IN_X];
  rill_tensor *x0 = rill_kin(ctx, RILL_CONCAT_IN_X, 0), *out = NULL;
  if (!x0 || !rill_tensor_is_set(x0))
    return rill_kernel_error(ctx, "input X (%s) is missing or holds no data", rill_kin_name(ctx, RILL_CONCAT_IN_X, 0));
  if (n > MAX_PIECES) return rill_kernel_error(ctx, "more than %d inputs X", MAX_PIECES);
  RILL_TRY(rill_kout_need(ctx, RILL_CONCAT_OUT_OUT, 0, x0->dtype, &out));
  rill_tensor *xs[MAX_PIECES];
  for (size_t i = 0; i < n; i++) RILL_TRY(rill_kin_need(ctx, RILL_CONCAT_IN_X, i, x0->dtype, &xs[i]));
  int axis = 0;
  RILL_TRY(concat_axis(ctx, xs, n, &out->dims, &axis));
  int64_t sum = 0;
  for (size_t i = 0; i < n; i++) {
    if (!fits(&xs[i]->dims, &out->dims, axis)) {
      char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
      return rill_kernel_error(ctx, "input X #%zu (%s) of shape %s does not fit shape %s at axis %d", i,
                               rill_kin_name(ctx, RILL_CONCAT_IN_X, i), rill_dims_str(&xs[i]->dims, a, sizeof a),
                               rill_dims_str(&out->dims, b, sizeof b), axis);
    }
    sum += xs[i]->dims.d[axis];
  }
  if (sum != out->dims.d[axis])
    return rill_kernel_error(ctx, "inputs X add up to %lld at axis %d, output Out (%s) has %lld", (long long)sum,
                             axis, rill_kout_name(ctx, RILL_CONCAT_OUT_OUT, 0), (long long)out->dims.d[axis]);
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, out, &d));
  size_t es = rill_dtype_size(out->dtype), obytes = rill_tensor_nbytes(out);
  int64_t outer = rill_dims_prod(&out->dims, 0, axis), inner = rill_dims_prod(&out->dims, axis + 1, out->dims.n);
  size_t pitch = (size_t)(out->dims.d[axis] * inner) * es;
  uint8_t *dst = rill_tensor_ptr(out), *scratch = NULL;
  for (size_t i = 0; i < n && !scratch; i++)
    if (rill_overlaps(rill_tensor_ptr(xs[i]), rill_tensor_nbytes(xs[i]), dst, obytes) &&
        !(scratch = rill_cuda_mem_alloc(d, obytes)))
      return rill_kernel_error(ctx, "out of device memory for a %zu-byte concat scratch block", obytes);
  uint8_t *to = scratch ? scratch : dst;
  cudaError_t e = cudaSuccess;
  size_t at = 0; /* bytes into each output row */
  for (size_t i = 0; i < n && e == cudaSuccess; i++) {
    size_t width = (size_t)(xs[i]->dims.d[axis] * inner) * es;
    if (width && outer)
      e = outer == 1 ? cudaMemcpyAsync(to + at, rill_tensor_ptr(xs[i]), width, cudaMemcpyDeviceToDevice, d->stream)
                     : cudaMemcpy2DAsync(to + at, pitch, rill_tensor_ptr(xs[i]), width, width, (size_t)outer,
                                         cudaMemcpyDeviceToDevice, d->stream);
    at += width;
  }
  if (scratch) {
    if (e == cudaSuccess) e = cudaMemcpyAsync(dst, scratch, obytes, cudaMemcpyDeviceToDevice, d->stream);
    /* Freed once queued: the next user of the block is queued behind these copies. */
    rill_cuda_mem_free(d, scratch);
  }
  return rill_cuda_kernel_check(ctx, e, "concat copy");
}
