/* pixel_shuffle (upscale_factor r: [N, C, H, W] -> [N, C/r^2, H r, W r]),
 * shuffle_channel (group g: channel a C/g + b -> b g + a) and space_to_depth (blocksize
 * bs: [N, C, H, W] -> [N, C bs^2, H/bs, W/bs] with Paddle's element order): NCHW
 * rearrangements of any dtype whose maps are in operators/rearrange.h. Each has an
 * <op>_grad in Paddle's layout (space_to_depth_grad also reads X) applying the inverse
 * map, except shuffle_channel_grad: Paddle 1.8's shuffles Out@GRAD with the forward map
 * again, which is the gradient only when C = group^2, and rill matches its numbers. */
#include "operators/math_grad.h"
#include "operators/op_util.h"
#include "operators/rearrange.h"

static const rill_slot_schema fwd_in[] = {{"X", 0, "[N, C, H, W]"}};
static const rill_slot_schema fwd_out[] = {{"Out", 0, "the rearranged tensor"}};
static const rill_attr_schema ps_attrs[] = {
    {"upscale_factor", RILL_ATTR_INT, 0, RILL_DEF_INT(1), "r: C must be a multiple of r^2"},
};
static const rill_attr_schema sc_attrs[] = {
    {"group", RILL_ATTR_INT, 0, RILL_DEF_INT(1), "g: C must be a multiple of g"},
};
static const rill_attr_schema sd_attrs[] = {
    {"blocksize", RILL_ATTR_INT, 0, RILL_DEF_INT(1),
     "bs: C a multiple of bs^2 (as Paddle requires), H and W of bs"},
};

static int kind_of(const rill_op_schema *s) {
  const char *a = s->attrs[0].name;
  return a[0] == 'u' ? REARRANGE_PIXEL_SHUFFLE
                     : (a[0] == 'g' ? REARRANGE_SHUFFLE_CHANNEL : REARRANGE_SPACE_TO_DEPTH);
}

/* X's dims from the grad op's Out@GRAD dims (or Out's from X's with to_out). Checks the
 * factor against the extents it must divide. */
static rill_status *map_dims(rill_infer_ctx *ctx, const rill_dims *in, bool to_out,
                             const char *slot, rill_dims *res) {
  int kind = kind_of(ctx->schema);
  int64_t f = ctx->attrs[0].v.i;
  char a[RILL_DIMS_STR_MAX];
  const char *vn = rill_infer_in_name(ctx, 0, 0);
  if (f < 1)
    return rill_infer_error(ctx, "attribute %s is %lld, expected >= 1", ctx->schema->attrs[0].name,
                            (long long)f);
  if (in->n != 4)
    return rill_infer_error(ctx, "input %s (%s) has shape %s, expected 4-D NCHW", slot, vn,
                            rill_dims_str(in, a, sizeof a));
  *res = *in;
  int64_t c = in->d[1], h = in->d[2], w = in->d[3];
  bool ps = kind == REARRANGE_PIXEL_SHUFFLE, sd = kind == REARRANGE_SPACE_TO_DEPTH;
  if (kind == REARRANGE_SHUFFLE_CHANNEL) {
    if (c >= 0 && c % f)
      return rill_infer_error(ctx, "input %s (%s) has %lld channels, not a multiple of group "
                              "%lld", slot, vn, (long long)c, (long long)f);
    return NULL;
  }
  /* pixel_shuffle forward and space_to_depth backward shrink channels and grow H, W. */
  bool shrink_c = ps == to_out;
  int64_t ff = f * f;
  if (shrink_c) {
    if (c >= 0 && c % ff)
      return rill_infer_error(ctx, "input %s (%s) has %lld channels, not a multiple of %s^2 = "
                              "%lld", slot, vn, (long long)c, ctx->schema->attrs[0].name,
                              (long long)ff);
    res->d[1] = c < 0 ? -1 : c / ff;
    res->d[2] = h < 0 ? -1 : h * f;
    res->d[3] = w < 0 ? -1 : w * f;
  } else {
    if ((h >= 0 && h % f) || (w >= 0 && w % f) || (sd && to_out && c >= 0 && c % ff))
      return rill_infer_error(ctx, "input %s (%s) has shape %s: H and W must be multiples of "
                              "%s %lld%s", slot, vn, rill_dims_str(in, a, sizeof a),
                              ctx->schema->attrs[0].name, (long long)f,
                              sd && to_out ? " and C of its square" : "");
    res->d[1] = c < 0 ? -1 : c * ff;
    res->d[2] = h < 0 ? -1 : h / f;
    res->d[3] = w < 0 ? -1 : w / f;
  }
  return NULL;
}

static rill_status *fwd_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x;
  rill_tensor_meta *out;
  RILL_TRY(rill_infer_unary_begin(ctx, &x, &out));
  if (!x) return NULL;
  rill_dims od;
  RILL_TRY(map_dims(ctx, &x->dims, true, "X", &od));
  rill_meta_set(out, x->dtype, &od, 0, -1, -1);
  return NULL;
}

/* The grad op's input 0 is X (space_to_depth_grad) or Out@GRAD (the others). */
static rill_status *grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *m = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *dx = rill_infer_out(ctx, 0, 0);
  if (!m) return rill_infer_error(ctx, "needs input %s", ctx->schema->inputs[0].name);
  if (!dx) return NULL;
  if (!m->known) {
    rill_meta_unknown(dx);
    return NULL;
  }
  rill_dims xd = m->dims;
  if (ctx->schema->ninputs == 1) RILL_TRY(map_dims(ctx, &m->dims, false, "Out@GRAD", &xd));
  rill_meta_set(dx, m->dtype, &xd, 0, -1, -1);
  return NULL;
}

static rill_status *dout_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit(ctx, NULL, NULL, 0, RILL_NAMES("Out"), RILL_NAMES("X"));
}

static rill_status *x_dout_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit(ctx, NULL, RILL_NAMES("X"), RILL_NAMES("Out"), RILL_NAMES("X"));
}

static const rill_slot_schema grad_dout_in[] = {{"Out@GRAD", 0, "gradient of Out"}};
static const rill_slot_schema grad_x_dout_in[] = {
    {"X", 0, "forward X (its shape)"},
    {"Out@GRAD", 0, "gradient of Out"},
};
static const rill_slot_schema grad_out[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE,
     "Out@GRAD moved back by the inverse map (shuffle_channel: by the forward map)"},
};

#define REARRANGE_SCHEMAS(NAME, ATTRS, MAKER, GIN, DOC)                                   \
  const rill_op_schema rill_schema_##NAME = {                                            \
      .type = #NAME,                                                                     \
      .doc = DOC,                                                                        \
      .inputs = fwd_in,                                                                  \
      .ninputs = RILL_COUNTOF(fwd_in),                                                   \
      .outputs = fwd_out,                                                                \
      .noutputs = RILL_COUNTOF(fwd_out),                                                 \
      .attrs = ATTRS,                                                                    \
      .nattrs = RILL_COUNTOF(ATTRS),                                                     \
      .infer = fwd_infer,                                                                \
      .grad = MAKER,                                                                     \
      .kernel_dtype_slot = 0,                                                            \
      .dtype_attr = -1,                                                                  \
  };                                                                                     \
  const rill_op_schema rill_schema_##NAME##_grad = {                                     \
      .type = #NAME "_grad",                                                             \
      .doc = "X@GRAD of " #NAME ".",                                                     \
      .inputs = GIN,                                                                     \
      .ninputs = RILL_COUNTOF(GIN),                                                      \
      .outputs = grad_out,                                                               \
      .noutputs = RILL_COUNTOF(grad_out),                                                \
      .attrs = ATTRS,                                                                    \
      .nattrs = RILL_COUNTOF(ATTRS),                                                     \
      .infer = grad_infer,                                                               \
      .kernel_dtype_slot = RILL_COUNTOF(GIN) - 1,                                        \
      .dtype_attr = -1,                                                                  \
  };

REARRANGE_SCHEMAS(pixel_shuffle, ps_attrs, dout_maker, grad_dout_in,
                  "Out[n, c, h r + i, w r + j] = X[n, c r^2 + i r + j, h, w].")
REARRANGE_SCHEMAS(shuffle_channel, sc_attrs, dout_maker, grad_dout_in,
                  "Channel a C/g + b of X becomes channel b g + a of Out.")
REARRANGE_SCHEMAS(space_to_depth, sd_attrs, x_dout_maker, grad_x_dout_in,
                  "Paddle's space_to_depth (Darknet reorg order): [N, C, H, W] -> "
                  "[N, C bs^2, H/bs, W/bs].")

RILL_OP_TABLE_CHECKS(rearrange);
