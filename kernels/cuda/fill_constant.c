/* fill_constant and fill_constant_batch_size_like CUDA kernels, bool, int32, int64,
 * float32 and float64: the value read as the CPU kernels read it (operators/fill_value.h;
 * a ValueTensor is on the host, RILL_SLOT_HOST_DATA), written by one fill (a memset for
 * zeros). */
#include <string.h>

#include "kernels/cuda/cuda.h"
#include "operators/fill_value.h"

_Static_assert(RILL_SAME_POS(RILL_FILL_CONSTANT_BATCH_SIZE_LIKE_OUT_OUT, RILL_FILL_CONSTANT_OUT_OUT),
               "both fill ops write output Out at one position");

/* Output Out, a dense tensor, and its device. */
static rill_status *fill_output(rill_kernel_ctx *ctx, rill_tensor **out, rill_cuda_dev **d) {
  *out = rill_kout(ctx, RILL_FILL_CONSTANT_OUT_OUT, 0);
  if (!*out || !rill_tensor_ptr(*out))
    return rill_kernel_error(ctx, "output Out (%s) is missing or not a dense tensor",
                             rill_kout_name(ctx, RILL_FILL_CONSTANT_OUT_OUT, 0));
  return rill_cuda_kernel_dev(ctx, *out, d);
}

rill_status *rill_cuda_fill_value(rill_kernel_ctx *ctx, rill_cuda_dev *d, rill_tensor *out,
                                  const rill_fill_value *v) {
  uint64_t bits;
  if (!rill_fill_value_bits(v, out->dtype, &bits))
    return rill_kernel_error(ctx, "output Out (%s) is %s, which the fill ops do not make", rill_kout_name(ctx, 0, 0),
                             rill_dtype_name(out->dtype));
  return rill_cuda_kernel_check(
      ctx, rill_cuda_fill_bits(rill_tensor_ptr(out), rill_tensor_numel(out), bits, rill_dtype_size(out->dtype), d->stream),
      "fill launch");
}

rill_status *rill_cuda_fill_constant_kernel(rill_kernel_ctx *ctx) {
  rill_tensor *out;
  rill_cuda_dev *d = NULL;
  RILL_TRY(fill_output(ctx, &out, &d));
  rill_tensor *vt = rill_kin(ctx, RILL_FILL_CONSTANT_IN_VALUE_TENSOR, 0);
  uint64_t first = 0; /* ValueTensor's first element */
  if (vt) {
    size_t es = rill_dtype_size(vt->dtype);
    if (rill_tensor_numel(vt) < 1 || !rill_tensor_ptr(vt) || es > sizeof first)
      return rill_kernel_error(ctx, "input ValueTensor (%s) holds no value",
                               rill_kin_name(ctx, RILL_FILL_CONSTANT_IN_VALUE_TENSOR, 0));
    memcpy(&first, rill_tensor_ptr(vt), es);
  }
  rill_fill_value v;
  const char *str = ctx->attrs[RILL_FILL_CONSTANT_ATTR_STR_VALUE].v.s;
  if (!rill_fill_value_get(ctx->attrs[RILL_FILL_CONSTANT_ATTR_VALUE].v.f, str, vt ? (const void *)&first : NULL,
                           vt ? vt->dtype : RILL_DTYPE_FP32, out->dtype == RILL_DTYPE_INT64, &v)) {
    if (vt)
      return rill_kernel_error(ctx, "input ValueTensor (%s) is %s, expected a number",
                               rill_kin_name(ctx, RILL_FILL_CONSTANT_IN_VALUE_TENSOR, 0), rill_dtype_name(vt->dtype));
    return rill_kernel_error(ctx, "attribute str_value \"%s\" is not a number", str);
  }
  return rill_cuda_fill_value(ctx, d, out, &v);
}

rill_status *rill_cuda_fill_constant_batch_size_like_kernel(rill_kernel_ctx *ctx) {
  rill_tensor *out;
  rill_cuda_dev *d = NULL;
  RILL_TRY(fill_output(ctx, &out, &d));
  const char *str = ctx->attrs[RILL_FILL_CONSTANT_BATCH_SIZE_LIKE_ATTR_STR_VALUE].v.s;
  rill_fill_value v;
  if (!rill_fill_value_get(ctx->attrs[RILL_FILL_CONSTANT_BATCH_SIZE_LIKE_ATTR_VALUE].v.f, str, NULL, RILL_DTYPE_FP32,
                           out->dtype == RILL_DTYPE_INT64, &v))
    return rill_kernel_error(ctx, "attribute str_value \"%s\" is not a number", str);
  return rill_cuda_fill_value(ctx, d, out, &v);
}
