/* Per-channel ops of Fluid's layers:
 *   affine_channel(X, Scale [C], Bias [C]) -> Out = X Scale[c] + Bias[c] (`data_layout`
 *     NCHW: channel dim 1, NHWC: the last); affine_channel_grad(X, Scale, Out@GRAD) ->
 *     X@GRAD, Scale@GRAD, Bias@GRAD;
 *   maxout(X [N, C, H, W]) -> Out: the maximum of each `groups` consecutive channels
 *     along `axis` (1 or 3 / -1); maxout_grad(X, Out, Out@GRAD) -> X@GRAD gives each
 *     output's gradient to the first input of its group equal to it, as Paddle.
 * Kernels: kernels/cpu/channel.c. */
#include <string.h>

#include "operators/math_grad.h"
#include "operators/op_util.h"

static rill_status *need_float(rill_infer_ctx *ctx, const rill_tensor_meta *x) {
  if (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input X (%s) is %s, expected float32 or float64",
                            rill_infer_in_name(ctx, 0, 0), rill_dtype_name(x->dtype));
  return NULL;
}

/* ------------------------------------------------------------ affine_channel ---- */

static const rill_slot_schema ac_in[] = {
    {"X", 0, "[N, C, ...] (NCHW) or [N, ..., C] (NHWC)"},
    {"Scale", 0, "[C]"},
    {"Bias", 0, "[C]"},
};
static const rill_slot_schema ac_out[] = {{"Out", 0, "X's shape"}};
static const rill_attr_schema ac_attrs[] = {
    {"data_layout", RILL_ATTR_STRING, 0, RILL_DEF_STRING("AnyLayout"),
     "NHWC puts channels last; anything else (NCHW, AnyLayout) at dim 1"},
};

/* The channel count of X (-1 unknown); an error unless X has rank >= 2. */
static rill_status *ac_channels(rill_infer_ctx *ctx, const rill_tensor_meta *x, const char *layout,
                                int64_t *c) {
  char a[RILL_DIMS_STR_MAX];
  if (x->dims.n < 2)
    return rill_infer_error(ctx, "input X (%s) has shape %s, expected rank 2 or more",
                            rill_infer_in_name(ctx, 0, 0), rill_dims_str(&x->dims, a, sizeof a));
  *c = x->dims.d[layout && strcmp(layout, "NHWC") == 0 ? x->dims.n - 1 : 1];
  return NULL;
}

static rill_status *ac_check(rill_infer_ctx *ctx, size_t xs, size_t ss, size_t bs) {
  const rill_tensor_meta *x = rill_infer_in(ctx, xs, 0);
  int64_t c = -1;
  RILL_TRY(need_float(ctx, x));
  RILL_TRY(ac_channels(ctx, x, ctx->attrs[0].v.s, &c));
  size_t slots[2] = {ss, bs};
  for (int i = 0; i < 2; i++) {
    const rill_tensor_meta *m = rill_infer_in(ctx, slots[i], 0);
    if (!m || !m->known) continue;
    char a[RILL_DIMS_STR_MAX];
    if (m->dtype != x->dtype || m->dims.n != 1 || (c >= 0 && m->dims.d[0] >= 0 && m->dims.d[0] != c))
      return rill_infer_error(ctx, "input %s (%s) is %s %s; it needs input X's dtype %s and "
                              "shape [%lld] (X's channels)", ctx->schema->inputs[slots[i]].name,
                              rill_infer_in_name(ctx, slots[i], 0), rill_dtype_name(m->dtype),
                              rill_dims_str(&m->dims, a, sizeof a), rill_dtype_name(x->dtype),
                              (long long)c);
  }
  return NULL;
}

static rill_status *ac_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !out || !rill_infer_in(ctx, 1, 0) || !rill_infer_in(ctx, 2, 0))
    return rill_infer_error(ctx, "needs inputs X, Scale and Bias and output Out");
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  RILL_TRY(ac_check(ctx, 0, 1, 2));
  rill_meta_set(out, x->dtype, &x->dims, x->lod_level, 0, 0);
  return NULL;
}

static rill_status *ac_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit(ctx, NULL, RILL_NAMES("X", "Scale"), RILL_NAMES("Out"),
                        RILL_NAMES("X", "Scale", "Bias"));
}

const rill_op_schema rill_schema_affine_channel = {
    .type = "affine_channel",
    .doc = "Out = X Scale[c] + Bias[c] per channel c.",
    .inputs = ac_in,
    .ninputs = RILL_COUNTOF(ac_in),
    .outputs = ac_out,
    .noutputs = RILL_COUNTOF(ac_out),
    .attrs = ac_attrs,
    .nattrs = RILL_COUNTOF(ac_attrs),
    .infer = ac_infer,
    .grad = ac_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema ac_grad_in[] = {
    {"X", 0, "forward X"},
    {"Scale", 0, "forward Scale"},
    {"Out@GRAD", 0, "gradient of Out"},
};
static const rill_slot_schema ac_grad_out[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "dOut Scale[c]"},
    {"Scale@GRAD", RILL_SLOT_DISPENSABLE, "sum of dOut X over each channel"},
    {"Bias@GRAD", RILL_SLOT_DISPENSABLE, "sum of dOut over each channel"},
};

static rill_status *ac_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  if (!x) return rill_infer_error(ctx, "needs input X");
  if (x->known) RILL_TRY(ac_check(ctx, 0, 1, 1));
  RILL_TRY(rill_grad_infer_same(ctx, 2, 0));
  rill_grad_infer_like(ctx, 0, 0);
  rill_grad_infer_like(ctx, 1, 1);
  rill_grad_infer_like(ctx, 2, 1);
  return NULL;
}

const rill_op_schema rill_schema_affine_channel_grad = {
    .type = "affine_channel_grad",
    .doc = "X@GRAD, Scale@GRAD and Bias@GRAD of affine_channel.",
    .inputs = ac_grad_in,
    .ninputs = RILL_COUNTOF(ac_grad_in),
    .outputs = ac_grad_out,
    .noutputs = RILL_COUNTOF(ac_grad_out),
    .attrs = ac_attrs,
    .nattrs = RILL_COUNTOF(ac_attrs),
    .infer = ac_grad_infer,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

/* -------------------------------------------------------------------- maxout ---- */

static const rill_slot_schema mo_in[] = {{"X", 0, "[N, C, H, W] or [N, H, W, C]"}};
static const rill_slot_schema mo_out[] = {{"Out", 0, "C / groups channels"}};
static const rill_attr_schema mo_attrs[] = {
    {"groups", RILL_ATTR_INT, 0, RILL_DEF_INT(1), "channels per maximum; must divide C"},
    {"axis", RILL_ATTR_INT, 0, RILL_DEF_INT(1), "the channel dim: 1, or 3 / -1 for NHWC"},
};

static rill_status *mo_out_dims(rill_infer_ctx *ctx, const rill_tensor_meta *x, rill_dims *od) {
  RILL_TRY(need_float(ctx, x));
  int32_t g = ctx->attrs[0].v.i, axis = ctx->attrs[1].v.i;
  char a[RILL_DIMS_STR_MAX];
  if (x->dims.n != 4)
    return rill_infer_error(ctx, "input X (%s) has shape %s, expected 4-D",
                            rill_infer_in_name(ctx, 0, 0), rill_dims_str(&x->dims, a, sizeof a));
  if (axis != 1 && axis != 3 && axis != -1)
    return rill_infer_error(ctx, "attribute axis is %d, expected 1, 3 or -1", (int)axis);
  int ax = axis == 1 ? 1 : 3;
  int64_t c = x->dims.d[ax];
  if (g < 1 || (c >= 0 && c % g))
    return rill_infer_error(ctx, "attribute groups %d must be >= 1 and divide the %lld channels "
                            "of input X (%s)", (int)g, (long long)c, rill_infer_in_name(ctx, 0, 0));
  *od = x->dims;
  od->d[ax] = c < 0 ? -1 : c / g;
  return NULL;
}

static rill_status *mo_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x;
  rill_tensor_meta *out;
  RILL_TRY(rill_infer_unary_begin(ctx, &x, &out));
  if (!x) return NULL;
  rill_dims od;
  RILL_TRY(mo_out_dims(ctx, x, &od));
  rill_meta_set(out, x->dtype, &od, x->lod_level, 0, 0);
  return NULL;
}

static rill_status *mo_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit(ctx, NULL, RILL_NAMES("X", "Out"), RILL_NAMES("Out"), RILL_NAMES("X"));
}

const rill_op_schema rill_schema_maxout = {
    .type = "maxout",
    .doc = "Out = the maximum of each `groups` consecutive channels of X.",
    .inputs = mo_in,
    .ninputs = RILL_COUNTOF(mo_in),
    .outputs = mo_out,
    .noutputs = RILL_COUNTOF(mo_out),
    .attrs = mo_attrs,
    .nattrs = RILL_COUNTOF(mo_attrs),
    .infer = mo_infer,
    .grad = mo_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema mo_grad_in[] = {
    {"X", 0, "forward X"},
    {"Out", 0, "forward Out"},
    {"Out@GRAD", 0, "gradient of Out"},
};
static const rill_slot_schema mo_grad_out[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "dOut at the first maximum of each group, else 0"},
};

static rill_status *mo_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  if (!x) return rill_infer_error(ctx, "needs input X");
  if (x->known) {
    rill_dims od;
    RILL_TRY(mo_out_dims(ctx, x, &od));
  }
  RILL_TRY(rill_grad_infer_same(ctx, 2, 1));
  rill_grad_infer_like(ctx, 0, 0);
  return NULL;
}

const rill_op_schema rill_schema_maxout_grad = {
    .type = "maxout_grad",
    .doc = "X@GRAD of maxout.",
    .inputs = mo_grad_in,
    .ninputs = RILL_COUNTOF(mo_grad_in),
    .outputs = mo_grad_out,
    .noutputs = RILL_COUNTOF(mo_grad_out),
    .attrs = mo_attrs,
    .nattrs = RILL_COUNTOF(mo_attrs),
    .infer = mo_grad_infer,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(channel);
