/* sequence_mask CPU kernel: row i of Y (the last dim, maxlen wide, as inference sized
 * it) is 1 below X[i] and 0 from there on, in Y's dtype. */
#include <string.h>

#include "kernels/cpu/kernels.h"

rill_status *rill_cpu_sequence_mask(rill_kernel_ctx *ctx) {
  rill_tensor *x = rill_kin(ctx, RILL_SEQUENCE_MASK_IN_X, 0), *y = rill_kout(ctx, RILL_SEQUENCE_MASK_OUT_Y, 0);
  if (!x || !rill_tensor_is_set(x) || (x->dtype != RILL_DTYPE_INT32 && x->dtype != RILL_DTYPE_INT64))
    return rill_kernel_error(ctx, "input X (%s) must be an int32 or int64 tensor with data",
                             rill_kin_name(ctx, RILL_SEQUENCE_MASK_IN_X, 0));
  if (!y || !y->dims.n)
    return rill_kernel_error(ctx, "output Y (%s) is missing or has no mask dim",
                             rill_kout_name(ctx, RILL_SEQUENCE_MASK_OUT_Y, 0));
  int64_t rows = rill_tensor_numel(x), width = y->dims.d[y->dims.n - 1];
  if (rows == 0 || width == 0) return NULL;
  RILL_TRY(rill_kout_need(ctx, RILL_SEQUENCE_MASK_OUT_Y, 0, y->dtype, &y));
  if (rill_tensor_numel(y) != rows * width)
    return rill_kernel_error(ctx, "output Y (%s) holds %lld values for %lld lengths of %lld",
                             rill_kout_name(ctx, RILL_SEQUENCE_MASK_OUT_Y, 0),
                             (long long)rill_tensor_numel(y), (long long)rows, (long long)width);
  size_t es = rill_dtype_size(y->dtype);
  char *out = rill_tensor_ptr(y);
  memset(out, 0, (size_t)(rows * width) * es);
  for (int64_t i = 0; i < rows; i++) {
    int64_t len = x->dtype == RILL_DTYPE_INT32 ? ((const int32_t *)rill_tensor_ptr(x))[i]
                                               : ((const int64_t *)rill_tensor_ptr(x))[i];
    if (len > width) len = width;
    for (int64_t j = 0; j < len; j++) {
      void *e = out + (size_t)(i * width + j) * es;
      switch (y->dtype) {
        case RILL_DTYPE_BOOL: *(bool *)e = true; break;
        case RILL_DTYPE_UINT8: *(uint8_t *)e = 1; break;
        case RILL_DTYPE_INT32: *(int32_t *)e = 1; break;
        case RILL_DTYPE_INT64: *(int64_t *)e = 1; break;
        case RILL_DTYPE_FP32: *(float *)e = 1.0f; break;
        case RILL_DTYPE_FP64: *(double *)e = 1.0; break;
        default:
          return rill_kernel_error(ctx, "output Y (%s) is %s: not a mask dtype",
                                   rill_kout_name(ctx, RILL_SEQUENCE_MASK_OUT_Y, 0),
                                   rill_dtype_name(y->dtype));
      }
    }
  }
  return NULL;
}
