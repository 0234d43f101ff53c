/* pad, pad_constant_like, pad2d and their gradients. The constant paddings place the
 * input as a box of the output (rill_cpu_box_copy) after filling the output; pad2d maps
 * each output position of a plane to its source position (or none). */
#include <string.h>

#include "kernels/cpu/tensor_ops.h"

/* Out := pad_value everywhere, then `in` as the box starting at `start`. */
static rill_status *place_box(rill_kernel_ctx *ctx, rill_tensor *in, rill_tensor *out,
                              const int64_t *start, float value) {
  if (!rill_cpu_fill_elems(rill_tensor_ptr(out), rill_tensor_numel(out), out->dtype, value))
    return rill_kernel_error(ctx, "output Out (%s) is %s, which holds no numbers",
                             rill_kout_name(ctx, 0, 0), rill_dtype_name(out->dtype));
  if (rill_tensor_numel(in))
    rill_cpu_box_copy(rill_tensor_ptr(out), &out->dims, start, in->dims.d, rill_tensor_ptr(in),
                      rill_dtype_size(in->dtype), false);
  return NULL;
}

/* dx := the box of g starting at start with dx's dims. */
static void cut_box(rill_tensor *g, rill_tensor *dx, const int64_t *start) {
  if (rill_tensor_numel(dx))
    rill_cpu_box_copy(rill_tensor_ptr(g), &g->dims, start, dx->dims.d, rill_tensor_ptr(dx),
                      rill_dtype_size(g->dtype), true);
}

static rill_status *pad_starts(rill_kernel_ctx *ctx, const rill_dims *in, int sign, rill_dims *d,
                               int64_t *start) {
  char err[160];
  const rill_attr_value *pads = &ctx->attrs[RILL_PAD_ATTR_PADDINGS];
  if (!rill_pad_dims(pads, in, sign, d, err, sizeof err))
    return rill_kernel_error(ctx, "input %s (%s): %s", ctx->schema->inputs[0].name,
                             rill_kin_name(ctx, 0, 0), err);
  for (int i = 0; i < in->n; i++) start[i] = pads->list.ints[2 * i];
  return NULL;
}

rill_status *rill_cpu_pad(rill_kernel_ctx *ctx) {
  rill_tensor *x = rill_kin(ctx, 0, 0), *out = NULL;
  if (!x || !rill_tensor_is_set(x))
    return rill_kernel_error(ctx, "input X (%s) is missing or holds no data", rill_kin_name(ctx, 0, 0));
  RILL_TRY(rill_kout_need(ctx, 0, 0, x->dtype, &out));
  rill_dims d;
  int64_t start[RILL_MAX_DIMS];
  RILL_TRY(pad_starts(ctx, &x->dims, 1, &d, start));
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &d));
  return place_box(ctx, x, out, start, ctx->attrs[RILL_PAD_ATTR_PAD_VALUE].v.f);
}

rill_status *rill_cpu_pad_grad(rill_kernel_ctx *ctx) {
  rill_tensor *g = rill_kin(ctx, 0, 0), *dx = rill_kout(ctx, 0, 0);
  if (!dx) return NULL;
  if (!g || !rill_tensor_is_set(g))
    return rill_kernel_error(ctx, "input Out@GRAD (%s) is missing or holds no data",
                             rill_kin_name(ctx, 0, 0));
  RILL_TRY(rill_kout_need(ctx, 0, 0, g->dtype, &dx));
  rill_dims d;
  int64_t start[RILL_MAX_DIMS];
  RILL_TRY(pad_starts(ctx, &g->dims, -1, &d, start));
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &d));
  cut_box(g, dx, start);
  return NULL;
}

rill_status *rill_cpu_pad_constant_like(rill_kernel_ctx *ctx) {
  rill_tensor *x = rill_kin(ctx, 0, 0), *y = rill_kin(ctx, 1, 0), *out = NULL;
  if (!x || !y || !rill_tensor_is_set(y))
    return rill_kernel_error(ctx, "inputs X (%s) and Y (%s) must be dense tensors with data",
                             rill_kin_name(ctx, 0, 0), rill_kin_name(ctx, 1, 0));
  RILL_TRY(rill_kout_need(ctx, 0, 0, y->dtype, &out));
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &x->dims));
  bool fits = y->dims.n == x->dims.n;
  for (int i = 0; fits && i < x->dims.n; i++) fits = y->dims.d[i] <= x->dims.d[i];
  if (!fits)
    return rill_kernel_error(ctx, "input Y (%s) does not fit in input X (%s)",
                             rill_kin_name(ctx, 1, 0), rill_kin_name(ctx, 0, 0));
  int64_t zero[RILL_MAX_DIMS] = {0};
  return place_box(ctx, y, out, zero, ctx->attrs[RILL_PAD_CONSTANT_LIKE_ATTR_PAD_VALUE].v.f);
}

rill_status *rill_cpu_pad_constant_like_grad(rill_kernel_ctx *ctx) {
  rill_tensor *y, *g, *dy;
  RILL_TRY(rill_cpu_grad_like_input(ctx, 0, 1, &y, &g, &dy));
  if (!dy) return NULL;
  bool fits = y->dims.n == g->dims.n;
  for (int i = 0; fits && i < y->dims.n; i++) fits = y->dims.d[i] <= g->dims.d[i];
  if (!fits)
    return rill_kernel_error(ctx, "input Y (%s) does not fit in input Out@GRAD (%s)",
                             rill_kin_name(ctx, 0, 0), rill_kin_name(ctx, 1, 0));
  int64_t zero[RILL_MAX_DIMS] = {0};
  cut_box(g, dy, zero);
  return NULL;
}

/* pad2d: the source coordinate of output coordinate o along a dim of extent n padded
 * by `before`, or -1 (constant padding). */
static int64_t src_coord(int64_t o, int64_t before, int64_t n, int mode) {
  int64_t i = o - before;
  if (i >= 0 && i < n) return i;
  if (mode == 0) return -1;
  if (mode == 2) return i < 0 ? 0 : n - 1;
  if (i < 0) i = -i;
  if (i >= n) i = 2 * (n - 1) - i;
  return i;
}

static rill_status *pad2d_setup(rill_kernel_ctx *ctx, const rill_tensor *x, size_t pslot,
                                rill_pad2d *p) {
  int64_t pads[4];
  rill_tensor *pt = rill_kin(ctx, pslot, 0);
  if (pt) {
    for (int i = 0; i < 4; i++)
      if (!rill_int_tensor_at(pt, i, &pads[i]))
        return rill_kernel_error(ctx, "input Paddings (%s) must hold 4 int32 values",
                                 rill_kin_name(ctx, pslot, 0));
  } else {
    const rill_attr_value *a = &ctx->attrs[RILL_PAD2D_ATTR_PADDINGS];
    if (a->n != 4)
      return rill_kernel_error(ctx, "attribute paddings has %zu entries; it needs 4", a->n);
    for (int i = 0; i < 4; i++) pads[i] = a->list.ints[i];
  }
  char err[200];
  if (!rill_pad2d_plan(&x->dims, pads, ctx->attrs[RILL_PAD2D_ATTR_MODE].v.s,
                       ctx->attrs[RILL_PAD2D_ATTR_DATA_FORMAT].v.s, p, err, sizeof err))
    return rill_kernel_error(ctx, "input X (%s): %s", rill_kin_name(ctx, 0, 0), err);
  return NULL;
}

/* Calls BODY for every output position with its offset oo and source offset so (-1 for
 * constant padding), in elements, per run of `inner` elements. */
#define PAD2D_WALK(p, x, BODY)                                                            \
  do {                                                                                    \
    int64_t n_ = (x)->dims.d[0], c_ = (p).nhwc ? (x)->dims.d[3] : (x)->dims.d[1];         \
    int64_t outer_ = (p).nhwc ? n_ : n_ * c_, inner = (p).nhwc ? c_ : 1;                  \
    int64_t oh_ = (p).h + (p).pad[0] + (p).pad[1], ow_ = (p).w + (p).pad[2] + (p).pad[3]; \
    for (int64_t o_ = 0; o_ < outer_; o_++)                                               \
      for (int64_t y_ = 0; y_ < oh_; y_++) {                                              \
        int64_t sy_ = src_coord(y_, (p).pad[0], (p).h, (p).mode);                         \
        for (int64_t x_ = 0; x_ < ow_; x_++) {                                            \
          int64_t sx_ = src_coord(x_, (p).pad[2], (p).w, (p).mode);                       \
          int64_t oo = ((o_ * oh_ + y_) * ow_ + x_) * inner;                              \
          int64_t so = sy_ < 0 || sx_ < 0 ? -1 : ((o_ * (p).h + sy_) * (p).w + sx_) * inner; \
          BODY;                                                                           \
        }                                                                                 \
      }                                                                                   \
  } while (0)

rill_status *rill_cpu_pad2d(rill_kernel_ctx *ctx) {
  rill_tensor *x = rill_kin(ctx, 0, 0), *out = NULL;
  if (!x || !rill_tensor_is_set(x))
    return rill_kernel_error(ctx, "input X (%s) is missing or holds no data", rill_kin_name(ctx, 0, 0));
  RILL_TRY(rill_kout_need(ctx, 0, 0, x->dtype, &out));
  if (out == x) return rill_kernel_error(ctx, "output Out (%s) is input X", rill_kout_name(ctx, 0, 0));
  rill_pad2d p;
  RILL_TRY(pad2d_setup(ctx, x, 1, &p));
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &p.out));
  size_t es = rill_dtype_size(x->dtype);
  char value[16];
  if (!rill_cpu_fill_elems(value, 1, x->dtype, ctx->attrs[RILL_PAD2D_ATTR_PAD_VALUE].v.f))
    return rill_kernel_error(ctx, "input X (%s) is %s, which holds no numbers",
                             rill_kin_name(ctx, 0, 0), rill_dtype_name(x->dtype));
  const char *xp = rill_tensor_ptr(x);
  char *op = rill_tensor_ptr(out);
  PAD2D_WALK(p, x, {
    if (so >= 0) memcpy(op + (size_t)oo * es, xp + (size_t)so * es, (size_t)inner * es);
    else
      for (int64_t k = 0; k < inner; k++) memcpy(op + (size_t)(oo + k) * es, value, es);
  });
  return NULL;
}

rill_status *rill_cpu_pad2d_grad(rill_kernel_ctx *ctx) {
  rill_tensor *x, *g, *dx;
  RILL_TRY(rill_cpu_grad_like_input(ctx, 0, 1, &x, &g, &dx));
  if (!dx) return NULL;
  rill_pad2d p;
  RILL_TRY(pad2d_setup(ctx, x, 2, &p));
  if (!rill_dims_equal(&g->dims, &p.out))
    return rill_kernel_error(ctx, "input Out@GRAD (%s) does not have pad2d's output shape",
                             rill_kin_name(ctx, 1, 0));
  size_t es = rill_dtype_size(g->dtype);
  const char *gp = rill_tensor_ptr(g);
  char *dp = rill_tensor_ptr(dx);
  memset(dp, 0, rill_tensor_nbytes(dx));
  bool ok = true;
  PAD2D_WALK(p, x, {
    if (so >= 0 && ok) ok = rill_cpu_add_elems(dp + (size_t)so * es, gp + (size_t)oo * es, inner, g->dtype);
  });
  if (!ok)
    return rill_kernel_error(ctx, "input Out@GRAD (%s) is %s; gradients are float32/64 or int32/64",
                             rill_kin_name(ctx, 1, 0), rill_dtype_name(g->dtype));
  return NULL;
}
