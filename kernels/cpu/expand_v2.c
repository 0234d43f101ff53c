/* expand_v2 CPU kernel (any dtype): walks the output a row (innermost dim) at a time;
 * a row whose X extent matches is one memcpy, a broadcast row repeats one element. */
#include <string.h>

#include "kernels/cpu/kernels.h"

rill_status *rill_cpu_expand_v2(rill_kernel_ctx *ctx) {
  rill_tensor *x = rill_kin(ctx, 0, 0), *out = NULL;
  if (!x || !rill_tensor_is_set(x))
    return rill_kernel_error(ctx, "input X (%s) holds no data", rill_kin_name(ctx, 0, 0));
  RILL_TRY(rill_kout_need(ctx, 0, 0, x->dtype, &out));
  const rill_dims *od = &out->dims;
  int r = od->n, diff = r - x->dims.n;
  if (diff < 0)
    return rill_kernel_error(ctx, "output Out (%s) has lower rank than input X (%s)",
                             rill_kout_name(ctx, 0, 0), rill_kin_name(ctx, 0, 0));
  int64_t xd[RILL_MAX_DIMS], xs[RILL_MAX_DIMS], idx[RILL_MAX_DIMS] = {0}, acc = 1;
  for (int i = r - 1; i >= 0; i--) {
    xd[i] = i < diff ? 1 : x->dims.d[i - diff];
    if (xd[i] != 1 && xd[i] != od->d[i])
      return rill_kernel_error(ctx, "input X (%s) does not broadcast to output Out (%s) at dim %d",
                               rill_kin_name(ctx, 0, 0), rill_kout_name(ctx, 0, 0), i);
    xs[i] = xd[i] == 1 ? 0 : acc;
    acc *= xd[i];
  }
  int64_t n = rill_tensor_numel(out);
  if (n == 0) return NULL;
  size_t es = rill_dtype_size(x->dtype);
  const char *xp = rill_tensor_ptr(x);
  char *op = rill_tensor_ptr(out);
  if (r == 0) {
    memcpy(op, xp, es);
    return NULL;
  }
  int64_t inner = od->d[r - 1], xo = 0;
  bool bcast_inner = xd[r - 1] == 1 && inner != 1;
  for (int64_t o = 0; o < n; o += inner) {
    char *dst = op + (size_t)o * es;
    if (!bcast_inner) {
      memcpy(dst, xp + (size_t)xo * es, (size_t)inner * es);
    } else if (es == 4) {
      uint32_t v;
      memcpy(&v, xp + (size_t)xo * es, 4);
      for (int64_t j = 0; j < inner; j++) memcpy(dst + j * 4, &v, 4);
    } else {
      for (int64_t j = 0; j < inner; j++) memcpy(dst + (size_t)j * es, xp + (size_t)xo * es, es);
    }
    for (int k = r - 2; k >= 0; k--) {
      xo += xs[k];
      if (++idx[k] < od->d[k]) break;
      xo -= xs[k] * od->d[k];
      idx[k] = 0;
    }
  }
  return NULL;
}
