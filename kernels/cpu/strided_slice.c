/* strided_slice and strided_slice_grad CPU kernels (every dtype): element k of the output
 * along each dim reads input index first + k * step (operators/tensor_ops.h); the
 * gradient writes the same elements back into a zeroed Input@GRAD (a strided slice never
 * reads an element twice). */
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/tensor_ops.h"

static rill_status *kernel_plan(rill_kernel_ctx *ctx, const rill_tensor *x,
                                rill_strided_plan *plan) {
  char err[256];
  if (!rill_strided_kernel_plan(ctx, x, plan, err, sizeof err))
    return rill_kernel_error(ctx, "input Input (%s): %s", rill_kin_name(ctx, RILL_STRIDED_SLICE_IN_INPUT, 0), err);
  return NULL;
}

/* Copies between the packed slice and the full tensor: to_slice reads full, else writes. */
static void strided_copy(char *full, const rill_dims *dims, const rill_strided_plan *p,
                         char *slice, size_t es, bool to_slice) {
  int r = dims->n;
  int64_t n = 1, stride[RILL_MAX_DIMS], idx[RILL_MAX_DIMS] = {0}, off = 0;
  for (int d = r - 1, s = 1; d >= 0; d--) {
    stride[d] = s;
    s *= dims->d[d];
  }
  for (int d = 0; d < r; d++) {
    n *= p->len[d];
    off += p->first[d] * stride[d];
  }
  for (int64_t k = 0; k < n; k++) {
    if (to_slice) memcpy(slice + (size_t)k * es, full + (size_t)off * es, es);
    else memcpy(full + (size_t)off * es, slice + (size_t)k * es, es);
    for (int d = r - 1; d >= 0; d--) { /* odometer over the output */
      off += p->step[d] * stride[d];
      if (++idx[d] < p->len[d]) break;
      off -= p->step[d] * stride[d] * idx[d];
      idx[d] = 0;
    }
  }
}

rill_status *rill_cpu_strided_slice(rill_kernel_ctx *ctx) {
  rill_tensor *x = rill_kin(ctx, 0, 0), *out = NULL;
  if (!x || !rill_tensor_is_set(x))
    return rill_kernel_error(ctx, "input Input (%s) is missing or holds no data",
                             rill_kin_name(ctx, 0, 0));
  RILL_TRY(rill_kout_need(ctx, 0, 0, x->dtype, &out));
  rill_strided_plan plan;
  RILL_TRY(kernel_plan(ctx, x, &plan));
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &plan.out));
  size_t es = rill_dtype_size(x->dtype), ob = rill_tensor_nbytes(out);
  void *dst = rill_tensor_ptr(out), *tmp = dst;
  if (rill_overlaps(dst, ob, rill_tensor_ptr(x), rill_tensor_nbytes(x)) &&
      !(tmp = rill_aligned_alloc(ob, RILL_TENSOR_ALIGN)))
    return rill_oom();
  strided_copy(rill_tensor_ptr(x), &x->dims, &plan, tmp, es, true);
  if (tmp != dst) {
    memcpy(dst, tmp, ob);
    rill_free(tmp);
  }
  return NULL;
}

rill_status *rill_cpu_strided_slice_grad(rill_kernel_ctx *ctx) {
  rill_tensor *x, *dout, *dx;
  RILL_TRY(rill_cpu_grad_like_input(ctx, 0, RILL_STRIDED_SLICE_GRAD_IN_OUT_GRAD, &x, &dout, &dx));
  if (!dx) return NULL;
  rill_strided_plan plan;
  RILL_TRY(kernel_plan(ctx, x, &plan));
  int64_t want = 1;
  for (int i = 0; i < x->dims.n; i++) want *= plan.len[i];
  if (rill_tensor_numel(dout) != want)
    return rill_kernel_error(ctx, "input Out@GRAD (%s) has %lld elements, the slice %lld",
                             rill_kin_name(ctx, RILL_STRIDED_SLICE_GRAD_IN_OUT_GRAD, 0), (long long)rill_tensor_numel(dout),
                             (long long)want);
  if (rill_tensor_nbytes(dx)) memset(rill_tensor_ptr(dx), 0, rill_tensor_nbytes(dx));
  strided_copy(rill_tensor_ptr(dx), &dx->dims, &plan, rill_tensor_ptr(dout),
               rill_dtype_size(dout->dtype), false);
  return NULL;
}
