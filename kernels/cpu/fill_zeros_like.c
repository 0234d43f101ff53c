/* fill_zeros_like CPU kernel: any dtype, Out = zeros shaped like X. */
#include <string.h>

#include "kernels/cpu/kernels.h"

/* An array X (Paddle's LoDTensorArray case): an array of zero items shaped like X's. */
static rill_status *zeros_like_array(rill_kernel_ctx *ctx, const rill_tensor_array *x) {
  rill_variable *ov = ctx->out[0][0];
  if (ov->kind != RILL_VARKIND_TENSOR_ARRAY) rill_variable_clear(ov);
  rill_tensor_array *out = rill_variable_array(ov);
  if (!out)
    return rill_kernel_error(ctx, "output Out (%s) cannot hold a tensor array",
                             rill_kout_name(ctx, 0, 0));
  for (size_t k = 0; k < out->n; k++) rill_tensor_clear(&out->items[k]);
  RILL_TRY(rill_tensor_array_resize(out, x->n));
  out->n = x->n;
  for (size_t k = 0; k < x->n; k++) {
    const rill_tensor *it = &x->items[k];
    if (!rill_tensor_is_set(it)) continue;
    RILL_TRY(rill_tensor_alloc(&out->items[k], it->dtype, &it->dims));
    memset(rill_tensor_ptr(&out->items[k]), 0, rill_tensor_nbytes(&out->items[k]));
    RILL_TRY(rill_lod_copy(&out->items[k].lod, &it->lod));
  }
  return NULL;
}

rill_status *rill_cpu_fill_zeros_like(rill_kernel_ctx *ctx) {
  rill_variable *xv = ctx->nin[0] ? ctx->in[0][0] : NULL;
  if (xv && xv->kind == RILL_VARKIND_TENSOR_ARRAY && ctx->nout[0] && ctx->out[0][0])
    return zeros_like_array(ctx, &xv->u.array);
  rill_tensor *x = rill_kin(ctx, 0, 0), *out = rill_kout(ctx, 0, 0);
  if (!x || !rill_tensor_is_set(x))
    return rill_kernel_error(ctx, "input X (%s) is missing or holds no dense tensor",
                             rill_kin_name(ctx, 0, 0));
  if (!out)
    return rill_kernel_error(ctx, "output Out (%s) is missing or not a dense tensor",
                             rill_kout_name(ctx, 0, 0));
  if (!rill_tensor_is_set(out) || out->dtype != x->dtype || !rill_dims_equal(&out->dims, &x->dims))
    RILL_TRY(rill_tensor_alloc(out, x->dtype, &x->dims));
  memset(rill_tensor_ptr(out), 0, rill_tensor_nbytes(out));
  return NULL;
}
