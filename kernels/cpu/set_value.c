/* set_value CPU kernel (bool, int32, int64, float32, float64): the plan of
 * kernels/cpu/set_value_plan.h (the normalised slice, the value's strides over it), then
 * the value scattered element by element. */
#include <string.h>

#include "kernels/cpu/set_value_plan.h"

rill_status *rill_cpu_set_value(rill_kernel_ctx *ctx) {
  rill_tensor *x = rill_kin(ctx, SV_IN_INPUT, 0), *out = NULL;
  if (!x || !rill_tensor_is_set(x))
    return rill_kernel_error(ctx, "input Input (%s) holds no data", rill_kin_name(ctx, 0, 0));
  rill_dtype dt = x->dtype;
  if (dt != RILL_DTYPE_BOOL && dt != RILL_DTYPE_FP32 && dt != RILL_DTYPE_FP64 &&
      dt != RILL_DTYPE_INT32 && dt != RILL_DTYPE_INT64)
    return rill_kernel_error(ctx, "input Input (%s) is %s: set_value takes bool, int32, int64, "
                             "float32 or float64", rill_kin_name(ctx, 0, 0), rill_dtype_name(dt));
  RILL_TRY(rill_kout_need(ctx, 0, 0, dt, &out));
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &x->dims));
  sv_plan p;
  RILL_TRY(sv_plan_make(ctx, x, dt, &p));
  const rill_dims *xd = &x->dims;
  size_t es = rill_dtype_size(dt);
  char *op = rill_tensor_ptr(out);
  const char *xp = rill_tensor_ptr(x);
  const char *vp = p.value ? rill_tensor_ptr(p.value) : p.attr_values;
  void *vcopy = NULL;
  if (p.value && p.total > 0 && rill_overlaps(op, rill_tensor_nbytes(out), vp, rill_tensor_nbytes(p.value))) {
    if (!(vcopy = rill_malloc(rill_tensor_nbytes(p.value)))) {
      sv_plan_free(&p);
      return rill_oom();
    }
    vp = memcpy(vcopy, vp, rill_tensor_nbytes(p.value));
  }
  if (op != xp) memmove(op, xp, rill_tensor_nbytes(x));
  if (p.total > 0) {
    int r = p.rank;
    int64_t ostride[RILL_MAX_DIMS], idx[RILL_MAX_DIMS] = {0}, oo = 0, vo = 0, acc = 1;
    for (int i = r - 1; i >= 0; i--) {
      ostride[i] = acc;
      acc *= xd->d[i];
      oo += p.start[i] * ostride[i];
    }
    for (int64_t e = 0; e < p.total; e++) {
      memcpy(op + (size_t)oo * es, vp + (size_t)vo * es, es);
      for (int k = r - 1; k >= 0; k--) {
        oo += p.step[k] * ostride[k];
        vo += p.vstride[k];
        if (++idx[k] < p.cnt[k]) break;
        oo -= p.step[k] * ostride[k] * p.cnt[k];
        vo -= p.vstride[k] * p.cnt[k];
        idx[k] = 0;
      }
    }
  }
  rill_free(vcopy);
  sv_plan_free(&p);
  return NULL;
}
