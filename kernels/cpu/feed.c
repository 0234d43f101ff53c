/* feed / fetch CPU kernels: move tensors between the run's lists and variables without
 * copying data. */
#include "kernels/cpu/kernels.h"

rill_status *rill_cpu_feed(rill_kernel_ctx *ctx) {
  int32_t col = ctx->attrs[RILL_FEED_ATTR_COL].v.i;
  rill_variable *xv = ctx->nin[0] ? ctx->in[0][0] : NULL;
  rill_tensor_array *list = xv ? rill_variable_array(xv) : NULL;
  if (!list)
    return rill_kernel_error(ctx, "input X (%s) is not a feed list", rill_kin_name(ctx, 0, 0));
  if (col < 0 || (size_t)col >= list->n || !rill_tensor_is_set(&list->items[col]))
    return rill_kernel_error(ctx, "nothing was fed at col %d for output Out (%s)", (int)col,
                             rill_kout_name(ctx, 0, 0));
  rill_tensor *out = rill_kout(ctx, 0, 0);
  if (!out)
    return rill_kernel_error(ctx, "output Out (%s) is missing or not a dense tensor",
                             rill_kout_name(ctx, 0, 0));
  return rill_tensor_share(out, &list->items[col]);
}
