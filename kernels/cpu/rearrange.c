/* CPU kernels of pixel_shuffle, shuffle_channel, space_to_depth and their gradients, any
 * dtype: each element of X is copied to (forward) or from (gradient) the place the op's
 * map in operators/rearrange.h gives it; shuffle_channel_grad, as Paddle's, applies the
 * forward map to Out@GRAD. */
#include <string.h>

#include "kernels/cpu/kernels.h"
#include "operators/rearrange.h"

static int kind_of(const rill_kernel_ctx *ctx) {
  const char *a = ctx->schema->attrs[0].name;
  return a[0] == 'u' ? REARRANGE_PIXEL_SHUFFLE
                     : (a[0] == 'g' ? REARRANGE_SHUFFLE_CHANNEL : REARRANGE_SPACE_TO_DEPTH);
}

/* Copies between the X-shaped tensor `x` (dims xd) and the Out-shaped `o`: to_out moves
 * x[i] to o[map(i)], else o[map(i)] to x[i]. */
static rill_status *move(rill_kernel_ctx *ctx, rill_tensor *x, rill_tensor *o, bool to_out) {
  const rill_dims *xd = &x->dims;
  int64_t f = ctx->attrs[0].v.i;
  int kind = kind_of(ctx);
  int64_t div = kind == REARRANGE_SHUFFLE_CHANNEL ? f : f * f;
  if (xd->n != 4 || f < 1 || xd->d[1] % div || rill_tensor_numel(o) != rill_tensor_numel(x) ||
      o->dtype != x->dtype)
    return rill_kernel_error(ctx, "tensors %s (%s) and %s (%s) do not fit the op's map",
                             ctx->schema->inputs[0].name, rill_kin_name(ctx, 0, 0),
                             ctx->schema->outputs[0].name, rill_kout_name(ctx, 0, 0));
  size_t es = rill_dtype_size(x->dtype);
  char *xp = rill_tensor_ptr(x), *op = rill_tensor_ptr(o);
  const int64_t *d = xd->d;
  int64_t i = 0;
  for (int64_t n = 0; n < d[0]; n++)
    for (int64_t c = 0; c < d[1]; c++)
      for (int64_t h = 0; h < d[2]; h++)
        for (int64_t w = 0; w < d[3]; w++, i++) {
          int64_t j = rearrange_dst(kind, d, f, n, c, h, w);
          if (to_out)
            memcpy(op + (size_t)j * es, xp + (size_t)i * es, es);
          else
            memcpy(xp + (size_t)i * es, op + (size_t)j * es, es);
        }
  return NULL;
}

rill_status *rill_cpu_rearrange(rill_kernel_ctx *ctx) {
  rill_tensor *x = rill_kin(ctx, 0, 0), *out;
  if (!x || !rill_tensor_is_set(x))
    return rill_kernel_error(ctx, "input X (%s) is missing or holds no data", rill_kin_name(ctx, 0, 0));
  RILL_TRY(rill_kout_need(ctx, 0, 0, x->dtype, &out));
  return move(ctx, x, out, true);
}

/* The last input is Out@GRAD; X@GRAD has X's shape (the executor sizes it). */
rill_status *rill_cpu_rearrange_grad(rill_kernel_ctx *ctx) {
  size_t g = ctx->schema->ninputs - 1;
  rill_tensor *dout = rill_kin(ctx, g, 0), *dx;
  if (!rill_kout(ctx, 0, 0)) return NULL;
  if (!dout || !rill_tensor_is_set(dout))
    return rill_kernel_error(ctx, "input Out@GRAD (%s) is missing or holds no data",
                             rill_kin_name(ctx, g, 0));
  RILL_TRY(rill_kout_need(ctx, 0, 0, dout->dtype, &dx));
  if (g == 1) {
    rill_tensor *x = rill_kin(ctx, 0, 0);
    if (!x) return rill_kernel_error(ctx, "input X is missing");
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &x->dims));
  }
  /* Paddle's shuffle_channel_grad shuffles Out@GRAD forward again (the inverse only when
   * C = group^2); rill gives its numbers. */
  if (kind_of(ctx) == REARRANGE_SHUFFLE_CHANNEL) return move(ctx, dout, dx, true);
  return move(ctx, dx, dout, false);
}
