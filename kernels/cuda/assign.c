/* assign CUDA kernel, every dtype: Out := X for a dense tensor, selected rows or a tensor
 * array, each tensor one device-to-device copy on the stream (its LoD kept), as the CPU
 * kernel copies them. */
#include "kernels/cuda/cuda.h"

/* dst := src (dims, dtype, LoD and elements) on src's device. */
static rill_status *copy_tensor(rill_kernel_ctx *ctx, rill_cuda_dev *d, rill_tensor *dst, const rill_tensor *src) {
  if (dst == src) return NULL;
  if (!rill_tensor_is_set(src)) {
    rill_tensor_clear(dst);
    return NULL;
  }
  if (!rill_tensor_is_set(dst) || dst->dtype != src->dtype || !rill_dims_equal(&dst->dims, &src->dims) ||
      rill_tensor_place(dst).device != RILL_DEVICE_CUDA || rill_tensor_place(dst).id != d->id)
    RILL_TRY(rill_cuda_kernel_status(
        ctx, rill_tensor_alloc_on(dst, src->dtype, &src->dims, rill_tensor_place(src), &rill_cuda_backend.memory)));
  if (dst->lod.nlevels || src->lod.nlevels) RILL_TRY(rill_cuda_kernel_status(ctx, rill_lod_copy(&dst->lod, &src->lod)));
  size_t n = rill_tensor_nbytes(src);
  if (!n || rill_tensor_ptr(dst) == rill_tensor_ptr(src)) return NULL;
  return rill_cuda_kernel_check(
      ctx, cudaMemcpyAsync(rill_tensor_ptr(dst), rill_tensor_ptr(src), n, cudaMemcpyDeviceToDevice, d->stream),
      "assign copy");
}

rill_status *rill_cuda_assign_kernel(rill_kernel_ctx *ctx) {
  if (!ctx->nin[RILL_ASSIGN_IN_X] || !ctx->in[RILL_ASSIGN_IN_X][0]) return NULL; /* X absent: nothing (Paddle) */
  if (!ctx->nout[RILL_ASSIGN_OUT_OUT] || !ctx->out[RILL_ASSIGN_OUT_OUT][0])
    return rill_kernel_error(ctx, "output Out (%s) is missing", rill_kout_name(ctx, RILL_ASSIGN_OUT_OUT, 0));
  rill_variable *xv = ctx->in[RILL_ASSIGN_IN_X][0], *ov = ctx->out[RILL_ASSIGN_OUT_OUT][0];
  if (xv == ov) return NULL;
  const char *xn = rill_kin_name(ctx, RILL_ASSIGN_IN_X, 0), *on = rill_kout_name(ctx, RILL_ASSIGN_OUT_OUT, 0);
  /* an output not yet written may take any kind */
  bool fresh = ov->kind == RILL_VARKIND_EMPTY || (ov->kind == RILL_VARKIND_TENSOR && !rill_tensor_is_set(&ov->u.tensor));
  if (fresh && xv->kind != RILL_VARKIND_TENSOR) rill_variable_clear(ov);
  rill_cuda_dev *d = NULL;
  switch (xv->kind) {
  case RILL_VARKIND_TENSOR: {
    rill_tensor *out = rill_variable_tensor(ov);
    if (!out) break;
    if (!rill_tensor_is_set(&xv->u.tensor)) return copy_tensor(ctx, NULL, out, &xv->u.tensor);
    RILL_TRY(rill_cuda_kernel_dev(ctx, &xv->u.tensor, &d));
    return copy_tensor(ctx, d, out, &xv->u.tensor);
  }
  case RILL_VARKIND_SELECTED_ROWS: {
    rill_selected_rows *out = rill_variable_selected_rows(ov);
    if (!out) break;
    const rill_selected_rows *in = &xv->u.rows;
    RILL_TRY(rill_cuda_kernel_status(ctx, rill_selected_rows_set_rows(out, in->rows, in->nrows)));
    out->height = in->height;
    if (!rill_tensor_is_set(&in->value)) return copy_tensor(ctx, NULL, &out->value, &in->value);
    RILL_TRY(rill_cuda_kernel_dev(ctx, &in->value, &d));
    return copy_tensor(ctx, d, &out->value, &in->value);
  }
  case RILL_VARKIND_TENSOR_ARRAY: {
    rill_tensor_array *out = rill_variable_array(ov);
    if (!out) break;
    const rill_tensor_array *in = &xv->u.array;
    RILL_TRY(rill_cuda_kernel_status(ctx, rill_tensor_array_resize(out, in->n)));
    for (size_t i = 0; i < in->n; i++) {
      const rill_tensor *t = &in->items[i];
      if (rill_tensor_is_set(t)) RILL_TRY(rill_cuda_kernel_dev(ctx, t, &d));
      RILL_TRY(copy_tensor(ctx, d, &out->items[i], t));
    }
    for (size_t i = in->n; i < out->n; i++) rill_tensor_clear(&out->items[i]);
    out->n = in->n;
    return NULL;
  }
  default:
    return rill_kernel_error(ctx, "input X (%s) holds nothing", xn);
  }
  return rill_kernel_error(ctx, "output Out (%s) holds a %s, input X (%s) a %s", on, rill_var_kind_name(ov->kind), xn,
                           rill_var_kind_name(xv->kind));
}
