/* Tensor array CPU kernels: write_to_array, read_from_array, lod_array_length. Items
 * are deep copies, so a later in-place write of the source never reaches the array. */
#include <inttypes.h>
#include <string.h>

#include "kernels/cpu/tensor_array.h"

rill_status *rill_cpu_array_index(rill_kernel_ctx *ctx, size_t slot, size_t *out) {
  *out = 0;
  rill_tensor *i = rill_kin(ctx, slot, 0);
  const char *name = rill_kin_name(ctx, slot, 0);
  if (!i || !i->buf) return rill_kernel_error(ctx, "index I '%s' holds no tensor", name);
  if (rill_tensor_numel(i) != 1 ||
      (i->dtype != RILL_DTYPE_INT64 && i->dtype != RILL_DTYPE_INT32))
    return rill_kernel_error(ctx, "index I '%s' must be an int64 tensor of one element, not %s "
                             "with %lld",
                             name, rill_dtype_name(i->dtype), (long long)rill_tensor_numel(i));
  int64_t v = i->dtype == RILL_DTYPE_INT64 ? *(const int64_t *)rill_tensor_ptr(i)
                                           : *(const int32_t *)rill_tensor_ptr(i);
  if (v < 0) return rill_kernel_error(ctx, "index I '%s' is negative (%" PRId64 ")", name, v);
  *out = (size_t)v;
  return NULL;
}

/* The array of variable v (turning an empty variable into one). */
static rill_status *array_of(rill_kernel_ctx *ctx, rill_variable *v, const char *name,
                             rill_tensor_array **out) {
  if (!v) return rill_kernel_error(ctx, "needs the tensor array '%s'", name);
  *out = rill_variable_array(v);
  if (!*out)
    return rill_kernel_error(ctx, "variable '%s' holds a %s, not a tensor array", name,
                             rill_var_kind_name(v->kind));
  return NULL;
}

rill_status *rill_cpu_write_to_array(rill_kernel_ctx *ctx) {
  size_t at;
  RILL_TRY(rill_cpu_array_index(ctx, RILL_WRITE_TO_ARRAY_IN_I, &at));
  rill_tensor *x = rill_kin(ctx, RILL_WRITE_TO_ARRAY_IN_X, 0);
  if (!x)
    return rill_kernel_error(ctx, "input X '%s' is not a dense tensor",
                             rill_kin_name(ctx, RILL_WRITE_TO_ARRAY_IN_X, 0));
  const char *name = rill_kout_name(ctx, RILL_WRITE_TO_ARRAY_OUT_OUT, 0);
  rill_tensor_array *a;
  RILL_TRY(array_of(ctx, ctx->nout[RILL_WRITE_TO_ARRAY_OUT_OUT]
                             ? ctx->out[RILL_WRITE_TO_ARRAY_OUT_OUT][0]
                             : NULL,
                    name, &a));
  if (at == SIZE_MAX) return rill_kernel_error(ctx, "index into '%s' too large", name);
  RILL_TRY(rill_status_wrap(rill_tensor_array_resize(a, at + 1), "write_to_array '%s'", name));
  rill_tensor *item = &a->items[at];
  if (!x->buf || rill_tensor_numel(x) == 0) {
    /* Paddle keeps an empty item with X's LoD. */
    rill_tensor_clear(item);
    item->dtype = x->dtype;
    item->dims = x->dims;
    return rill_status_wrap(rill_lod_copy(&item->lod, &x->lod), "write_to_array '%s'", name);
  }
  return rill_status_wrap(rill_tensor_copy(item, x), "write_to_array '%s'[%zu]", name, at);
}

rill_status *rill_cpu_read_from_array(rill_kernel_ctx *ctx) {
  size_t at;
  RILL_TRY(rill_cpu_array_index(ctx, RILL_READ_FROM_ARRAY_IN_I, &at));
  const char *name = rill_kin_name(ctx, RILL_READ_FROM_ARRAY_IN_X, 0);
  rill_variable *v = ctx->nin[RILL_READ_FROM_ARRAY_IN_X] ? ctx->in[RILL_READ_FROM_ARRAY_IN_X][0]
                                                          : NULL;
  rill_tensor *out = rill_kout(ctx, RILL_READ_FROM_ARRAY_OUT_OUT, 0);
  if (!out)
    return rill_kernel_error(ctx, "output Out '%s' is not a dense tensor",
                             rill_kout_name(ctx, RILL_READ_FROM_ARRAY_OUT_OUT, 0));
  /* As write_to_array's gradient (X_W given), an item no gradient reached reads as
   * zeros shaped like the forward's written tensor. */
  rill_tensor *xw = ctx->nin[RILL_READ_FROM_ARRAY_IN_X_W] ? rill_kin(ctx, RILL_READ_FROM_ARRAY_IN_X_W, 0)
                                                         : NULL;
  bool empty_var = v && v->kind == RILL_VARKIND_EMPTY;
  if (xw && (empty_var || (v && v->kind == RILL_VARKIND_TENSOR_ARRAY &&
                           (at >= v->u.array.n || !v->u.array.items[at].buf)))) {
    if (!rill_tensor_is_set(xw))
      return rill_kernel_error(ctx, "X_W '%s' holds no tensor to shape the zeros for item %zu "
                               "of '%s'", rill_kin_name(ctx, RILL_READ_FROM_ARRAY_IN_X_W, 0),
                               at, name);
    RILL_TRY(rill_tensor_alloc(out, xw->dtype, &xw->dims));
    memset(rill_tensor_ptr(out), 0, rill_tensor_nbytes(out));
    return rill_lod_copy(&out->lod, &xw->lod);
  }
  if (!v || v->kind != RILL_VARKIND_TENSOR_ARRAY)
    return rill_kernel_error(ctx, "input X '%s' holds a %s, not a tensor array", name,
                             v ? rill_var_kind_name(v->kind) : "nothing");
  const rill_tensor_array *a = &v->u.array;
  if (at >= a->n)
    return rill_kernel_error(ctx, "index %zu is out of range of tensor array '%s' (%zu items)",
                             at, name, a->n);
  const rill_tensor *item = &a->items[at];
  if (!item->buf)
    return rill_kernel_error(ctx, "item %zu of tensor array '%s' was never written", at, name);
  return rill_status_wrap(rill_tensor_copy(out, item), "read_from_array '%s'[%zu]", name, at);
}

rill_status *rill_cpu_lod_array_length(rill_kernel_ctx *ctx) {
  const char *name = rill_kin_name(ctx, RILL_LOD_ARRAY_LENGTH_IN_X, 0);
  rill_variable *v = ctx->nin[RILL_LOD_ARRAY_LENGTH_IN_X] ? ctx->in[RILL_LOD_ARRAY_LENGTH_IN_X][0]
                                                           : NULL;
  if (!v || (v->kind != RILL_VARKIND_TENSOR_ARRAY && v->kind != RILL_VARKIND_EMPTY))
    return rill_kernel_error(ctx, "input X '%s' holds a %s, not a tensor array", name,
                             v ? rill_var_kind_name(v->kind) : "nothing");
  rill_tensor *out = NULL;
  RILL_TRY(rill_kout_need(ctx, RILL_LOD_ARRAY_LENGTH_OUT_OUT, 0, RILL_DTYPE_INT64, &out));
  if (rill_tensor_numel(out) != 1)
    return rill_kernel_error(ctx, "output Out '%s' must hold one element",
                             rill_kout_name(ctx, RILL_LOD_ARRAY_LENGTH_OUT_OUT, 0));
  *(int64_t *)rill_tensor_ptr(out) =
      v->kind == RILL_VARKIND_TENSOR_ARRAY ? (int64_t)v->u.array.n : 0;
  return NULL;
}
