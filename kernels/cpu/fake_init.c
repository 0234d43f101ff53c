/* fake_init CPU kernel: Out is given its declared dtype and dims and no buffer; storage
 * it held before is released. */
#include "kernels/cpu/kernels.h"

rill_status *rill_cpu_fake_init(rill_kernel_ctx *ctx) {
  rill_tensor *o = rill_kout(ctx, RILL_FAKE_INIT_OUT_OUT, 0);
  if (!o) return rill_kernel_error(ctx, "output Out (%s) is not a dense tensor",
                                   rill_kout_name(ctx, RILL_FAKE_INIT_OUT_OUT, 0));
  const rill_attr_value *s = &ctx->attrs[RILL_FAKE_INIT_ATTR_SHAPE];
  int32_t dtype = ctx->attrs[RILL_FAKE_INIT_ATTR_DTYPE].v.i;
  if (s->n > RILL_MAX_DIMS || dtype < 0 || dtype >= RILL_DTYPE_COUNT ||
      !rill_dtype_size((rill_dtype)dtype))
    return rill_kernel_error(ctx, "shape of %zu dims or dtype %d is not a tensor's", s->n,
                             (int)dtype);
  rill_tensor_clear(o);
  o->dtype = (rill_dtype)dtype;
  o->dims.n = (int32_t)s->n;
  for (size_t i = 0; i < s->n; i++) o->dims.d[i] = s->list.longs[i];
  return NULL;
}
