/* fetch CPU kernel: the fetch list's item `col` shares X. */
#include "kernels/cpu/kernels.h"

rill_status *rill_cpu_fetch(rill_kernel_ctx *ctx) {
  int32_t col = ctx->attrs[RILL_FETCH_ATTR_COL].v.i;
  rill_tensor *x = rill_kin(ctx, 0, 0);
  if (!x || !rill_tensor_is_set(x))
    return rill_kernel_error(ctx, "input X (%s) holds no tensor to fetch", rill_kin_name(ctx, 0, 0));
  rill_variable *ov = ctx->nout[0] ? ctx->out[0][0] : NULL;
  rill_tensor_array *list = ov ? rill_variable_array(ov) : NULL;
  if (!list)
    return rill_kernel_error(ctx, "output Out (%s) is not a fetch list", rill_kout_name(ctx, 0, 0));
  if (col < 0) return rill_kernel_error(ctx, "attribute col is %d, must be >= 0", (int)col);
  RILL_TRY(rill_tensor_array_resize(list, (size_t)col + 1));
  return rill_tensor_share(&list->items[col], x);
}
