/* fill_zeros_like and fill_any_like CUDA kernels: Out takes X's shape (X is read for its
 * shape alone and may lie on any place) and is filled on the device, so that a gradient
 * the backward pass zeroes (an output no op reads) is made where the ops reading it run,
 * not on the host and copied up on every run. fill_zeros_like takes every dtype (one
 * memset); of a tensor array it makes an array of zeros item by item, each item where
 * X's item lies, as the CPU kernel does. fill_any_like writes the value as the CPU
 * kernel converts it, for the dtypes rill_cuda_fill_value makes; another dtype attribute
 * is declined and runs on the host. */
#include <string.h>

#include "kernels/cuda/cuda.h"
#include "operators/fill_value.h"

_Static_assert(RILL_FILL_ZEROS_LIKE_IN_X == 0 && RILL_FILL_ZEROS_LIKE_OUT_OUT == 0 && RILL_FILL_ANY_LIKE_IN_X == 0 &&
                   RILL_FILL_ANY_LIKE_OUT_OUT == 0,
               "both ops read X at input 0 and write Out at output 0");

/* t := zeros of its dtype and dims where it lies (a device's stream, or host memory). */
static rill_status *zero_where_it_lies(rill_kernel_ctx *ctx, rill_tensor *t) {
  size_t n = rill_tensor_nbytes(t);
  if (!n) return NULL;
  if (rill_tensor_place(t).device != RILL_DEVICE_CUDA) {
    memset(rill_tensor_ptr(t), 0, n);
    return NULL;
  }
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, t, &d));
  return rill_cuda_kernel_check(ctx, cudaMemsetAsync(rill_tensor_ptr(t), 0, n, d->stream), "zero fill");
}

/* An array X (Paddle's LoDTensorArray case): an array of zero items shaped like X's. */
static rill_status *zeros_like_array(rill_kernel_ctx *ctx, const rill_tensor_array *x) {
  rill_variable *ov = ctx->out[0][0];
  if (ov->kind != RILL_VARKIND_TENSOR_ARRAY) rill_variable_clear(ov);
  rill_tensor_array *out = rill_variable_array(ov);
  if (!out)
    return rill_kernel_error(ctx, "output Out (%s) cannot hold a tensor array", rill_kout_name(ctx, 0, 0));
  for (size_t k = 0; k < out->n; k++) rill_tensor_clear(&out->items[k]);
  RILL_TRY(rill_cuda_kernel_status(ctx, rill_tensor_array_resize(out, x->n)));
  out->n = x->n;
  for (size_t k = 0; k < x->n; k++) {
    const rill_tensor *it = &x->items[k];
    if (!rill_tensor_is_set(it)) continue;
    rill_place place = rill_tensor_place(it);
    const rill_device_memory *mem = place.device == RILL_DEVICE_CUDA ? &rill_cuda_backend.memory : NULL;
    RILL_TRY(rill_cuda_kernel_status(ctx, rill_tensor_alloc_on(&out->items[k], it->dtype, &it->dims, place, mem)));
    RILL_TRY(zero_where_it_lies(ctx, &out->items[k]));
    RILL_TRY(rill_cuda_kernel_status(ctx, rill_lod_copy(&out->items[k].lod, &it->lod)));
  }
  return NULL;
}

/* Output Out on its device, shaped and typed as X (dtype dt): the executor allocated it
 * from the shapes it inferred; X's actual shape wins. */
static rill_status *like_output(rill_kernel_ctx *ctx, const rill_tensor *x, rill_dtype dt, rill_tensor **out,
                                rill_cuda_dev **d) {
  *out = rill_kout(ctx, 0, 0);
  if (!*out)
    return rill_kernel_error(ctx, "output Out (%s) is missing or not a dense tensor", rill_kout_name(ctx, 0, 0));
  RILL_TRY(rill_cuda_kernel_dev(ctx, *out, d));
  if (!rill_tensor_is_set(*out) || (*out)->dtype != dt || !rill_dims_equal(&(*out)->dims, &x->dims))
    RILL_TRY(rill_cuda_kernel_status(
        ctx, rill_tensor_alloc_on(*out, dt, &x->dims, rill_tensor_place(*out), &rill_cuda_backend.memory)));
  return NULL;
}

rill_status *rill_cuda_fill_zeros_like_kernel(rill_kernel_ctx *ctx) {
  rill_variable *xv = ctx->nin[0] ? ctx->in[0][0] : NULL;
  if (xv && xv->kind == RILL_VARKIND_TENSOR_ARRAY && ctx->nout[0] && ctx->out[0][0])
    return zeros_like_array(ctx, &xv->u.array);
  rill_tensor *x = rill_kin(ctx, 0, 0), *out = NULL;
  if (!x || !rill_tensor_is_set(x))
    return rill_kernel_error(ctx, "input X (%s) is missing or holds no dense tensor", rill_kin_name(ctx, 0, 0));
  rill_cuda_dev *d = NULL;
  RILL_TRY(like_output(ctx, x, x->dtype, &out, &d));
  return zero_where_it_lies(ctx, out);
}

bool rill_cuda_fill_any_like_accepts(const rill_kernel_ctx *ctx) {
  switch (ctx->attrs[RILL_FILL_ANY_LIKE_ATTR_DTYPE].v.i) {
    case -1: /* X's, one of the dtypes this kernel is listed for */
    case RILL_DTYPE_BOOL:
    case RILL_DTYPE_INT32:
    case RILL_DTYPE_INT64:
    case RILL_DTYPE_FP32:
    case RILL_DTYPE_FP64: return true;
    default: return false;
  }
}

rill_status *rill_cuda_fill_any_like_kernel(rill_kernel_ctx *ctx) {
  rill_tensor *x = rill_kin(ctx, 0, 0), *out = NULL;
  if (!x)
    return rill_kernel_error(ctx, "input X (%s) is missing or not a dense tensor", rill_kin_name(ctx, 0, 0));
  int32_t dt = ctx->attrs[RILL_FILL_ANY_LIKE_ATTR_DTYPE].v.i;
  rill_cuda_dev *d = NULL;
  RILL_TRY(like_output(ctx, x, dt == -1 ? x->dtype : (rill_dtype)dt, &out, &d));
  rill_fill_value v = {.d = ctx->attrs[RILL_FILL_ANY_LIKE_ATTR_VALUE].v.f};
  return rill_cuda_fill_value(ctx, d, out, &v);
}
