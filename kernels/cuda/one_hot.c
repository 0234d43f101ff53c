/* one_hot and one_hot_v2 CUDA kernels: int32 or int64 indices, the output dtype from the
 * dtype attribute (float32/64, int32/64), the depth Out's last extent (inference sized
 * Out). Without allow_out_of_range the indices are read back to the host and checked
 * as the CPU checks them; then Out is zeroed and one thread an index writes its 1. */
#include "framework/base/alloc.h"
#include "kernels/cuda/cuda.h"

_Static_assert(RILL_SAME_POS(RILL_ONE_HOT_IN_X, RILL_ONE_HOT_V2_IN_X) &&
                   RILL_SAME_POS(RILL_ONE_HOT_OUT_OUT, RILL_ONE_HOT_V2_OUT_OUT) &&
                   RILL_SAME_POS(RILL_ONE_HOT_ATTR_DTYPE, RILL_ONE_HOT_V2_ATTR_DTYPE) &&
                   RILL_SAME_POS(RILL_ONE_HOT_ATTR_ALLOW_OUT_OF_RANGE, RILL_ONE_HOT_V2_ATTR_ALLOW_OUT_OF_RANGE),
               "one_hot and one_hot_v2 run one kernel: their slots and attributes must agree");

rill_status *rill_cuda_one_hot_kernel(rill_kernel_ctx *ctx) {
  rill_tensor *x = rill_kin(ctx, RILL_ONE_HOT_V2_IN_X, 0), *out = NULL;
  if (!x || !rill_tensor_is_set(x) || (x->dtype != RILL_DTYPE_INT32 && x->dtype != RILL_DTYPE_INT64))
    return rill_kernel_error(ctx, "input X (%s) must be an int32/int64 tensor with data",
                             rill_kin_name(ctx, RILL_ONE_HOT_V2_IN_X, 0));
  rill_dtype odt = (rill_dtype)ctx->attrs[RILL_ONE_HOT_V2_ATTR_DTYPE].v.i;
  if (odt != RILL_DTYPE_FP32 && odt != RILL_DTYPE_FP64 && odt != RILL_DTYPE_INT32 && odt != RILL_DTYPE_INT64)
    return rill_kernel_error(ctx, "output Out (%s) is %s: one_hot writes float32, float64, int32 or int64",
                             rill_kout_name(ctx, RILL_ONE_HOT_V2_OUT_OUT, 0), rill_dtype_name(odt));
  RILL_TRY(rill_kout_need(ctx, RILL_ONE_HOT_V2_OUT_OUT, 0, odt, &out));
  int64_t n = rill_tensor_numel(x), depth = out->dims.n ? out->dims.d[out->dims.n - 1] : 0;
  if (rill_tensor_numel(out) != n * depth)
    return rill_kernel_error(ctx, "output Out (%s) does not have X's shape + [depth]",
                             rill_kout_name(ctx, RILL_ONE_HOT_V2_OUT_OUT, 0));
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, out, &d));
  if (!ctx->attrs[RILL_ONE_HOT_V2_ATTR_ALLOW_OUT_OF_RANGE].v.b) {
    int64_t *ids, got;
    RILL_TRY(rill_cuda_ids_to_host(ctx, d, RILL_ONE_HOT_V2_IN_X, &ids, &got));
    rill_status *st = NULL;
    for (int64_t i = 0; i < got && !st; i++)
      if (ids[i] < 0 || ids[i] >= depth)
        st = rill_kernel_error(ctx, "input X (%s) holds index %lld at %lld, outside [0, %lld) (set "
                               "allow_out_of_range to ignore it)", rill_kin_name(ctx, RILL_ONE_HOT_V2_IN_X, 0),
                               (long long)ids[i], (long long)i, (long long)depth);
    rill_free(ids);
    if (st) return st;
  }
  cudaError_t e = rill_tensor_nbytes(out) ? cudaMemsetAsync(rill_tensor_ptr(out), 0, rill_tensor_nbytes(out), d->stream)
                                          : cudaSuccess;
  if (e == cudaSuccess)
    e = rill_cuda_one_hot(rill_tensor_ptr(x), x->dtype == RILL_DTYPE_INT64, n, depth, rill_tensor_ptr(out), (int)odt,
                          d->stream);
  return rill_cuda_kernel_check(ctx, e, "one_hot launch");
}
