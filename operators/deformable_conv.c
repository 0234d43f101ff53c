/* deformable_conv (DCN v2: sampling offsets and a modulation Mask) and
 * deformable_conv_v1 (offsets only), NCHW. Each filter tap (i, j) at output (y, x) reads
 * Input bilinearly at (y * sh - pt + i * dh + dy, x * sw - pl + j * dw + dx), where
 * (dy, dx) come from Offset [N, 2 * dg * kh * kw, OH, OW] (dy at channel 2 * tap, dx at
 * 2 * tap + 1, within deformable group g's block of 2 * kh * kw) and the sample is scaled
 * by Mask [N, dg * kh * kw, OH, OW]. A sample is zero unless the point lies in
 * (-1, H) x (-1, W); corners outside the image count as zero. Filter is
 * [M, C / groups, kh, kw]; the C input channels split into dg deformable groups. */
#include "operators/nn.h"

#define DCN_ATTRS                                                                              \
  RILL_CONV_ATTRS,                                                                             \
  {"deformable_groups", RILL_ATTR_INT, 0, RILL_DEF_INT(1),                                     \
   "groups of input channels sharing one set of offsets"},                                     \
  {"im2col_step", RILL_ATTR_INT, 0, RILL_DEF_INT(64), "images unfolded at once (no effect on results)"}

static const rill_attr_schema attrs[] = {DCN_ATTRS};
static const rill_attr_schema attrs_v1[] = {DCN_ATTRS};

static const rill_slot_schema inputs[] = {
    {"Input", 0, "[N, C, H, W]"},
    {"Offset", 0, "[N, 2 * deformable_groups * kh * kw, OH, OW]"},
    {"Mask", 0, "[N, deformable_groups * kh * kw, OH, OW]"},
    {"Filter", 0, "[M, C / groups, kh, kw]"},
};
static const rill_slot_schema inputs_v1[] = {
    {"Input", 0, "[N, C, H, W]"},
    {"Offset", 0, "[N, 2 * deformable_groups * kh * kw, OH, OW]"},
    {"Filter", 0, "[M, C / groups, kh, kw]"},
};
static const rill_slot_schema outputs[] = {{"Output", 0, "[N, M, OH, OW]"}};

/* An error naming input `slot` unless its dims agree with `want` (-1 matches anything). */
static rill_status *dcn_expect_dims(rill_infer_ctx *ctx, size_t slot, const char *what,
                                    const rill_dims *got, const rill_dims *want) {
  bool ok = got->n == want->n;
  for (int i = 0; ok && i < want->n; i++)
    ok = want->d[i] < 0 || got->d[i] < 0 || want->d[i] == got->d[i];
  if (ok) return NULL;
  char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
  return rill_infer_error(ctx, "input %s (%s) has shape %s, expected %s", what,
                          rill_infer_in_name(ctx, slot, 0), rill_dims_str(got, a, sizeof a),
                          rill_dims_str(want, b, sizeof b));
}

/* Checks Input, Offset, (Mask) and Filter against each other; *od gets Output's dims. */
static rill_status *dcn_check(rill_infer_ctx *ctx, bool mask, rill_dims *od, bool *known) {
  size_t fs = mask ? 3 : 2;
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *o = rill_infer_in(ctx, 1, 0),
                         *m = mask ? rill_infer_in(ctx, 2, 0) : NULL, *f = rill_infer_in(ctx, fs, 0);
  if (!x || !o || !f || (mask && !m))
    return rill_infer_error(ctx, mask ? "needs inputs Input, Offset, Mask and Filter"
                                      : "needs inputs Input, Offset and Filter");
  *known = x->known && o->known && f->known && (!m || m->known);
  if (!*known) return NULL;
  const rill_tensor_meta *ins[4] = {x, o, m, f};
  for (size_t s = 1; s <= fs; s++)
    if (ins[mask ? s : (s == 2 ? 3 : s)]->dtype != x->dtype)
      return rill_infer_error(ctx, "input %s (%s) is %s but input Input (%s) is %s",
                              ctx->schema->inputs[s].name, rill_infer_in_name(ctx, s, 0),
                              rill_dtype_name(ins[mask ? s : (s == 2 ? 3 : s)]->dtype),
                              rill_infer_in_name(ctx, 0, 0), rill_dtype_name(x->dtype));
  if (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input Input (%s) is %s: float32 or float64 only",
                            rill_infer_in_name(ctx, 0, 0), rill_dtype_name(x->dtype));
  rill_conv_geom g;
  char err[256];
  if (!rill_nn_conv_geom(ctx->attrs, false, &x->dims, &f->dims, &g, err, sizeof err))
    return rill_infer_error(ctx, "Input (%s), Filter (%s): %s", rill_infer_in_name(ctx, 0, 0),
                            rill_infer_in_name(ctx, fs, 0), err);
  int64_t dg = ctx->attrs[RILL_DEFORMABLE_CONV_ATTR_DEFORMABLE_GROUPS].v.i;
  if (dg < 1 || (g.c >= 0 && g.c % dg))
    return rill_infer_error(ctx, "attribute deformable_groups %lld must be >= 1 and divide "
                            "input Input's (%s) %lld channels", (long long)dg,
                            rill_infer_in_name(ctx, 0, 0), (long long)g.c);
  if (ctx->attrs[RILL_DEFORMABLE_CONV_ATTR_IM2COL_STEP].v.i < 1)
    return rill_infer_error(ctx, "attribute im2col_step must be >= 1");
  *od = (rill_dims){4, {g.n, g.m, g.oh, g.ow}};
  int64_t taps = g.kh * g.kw;
  for (int k = 0; k < (mask ? 2 : 1); k++) {
    const rill_tensor_meta *t = k ? m : o;
    rill_dims want = {4, {g.n, (k ? 1 : 2) * dg * taps, g.oh, g.ow}};
    RILL_TRY(dcn_expect_dims(ctx, k ? 2 : 1, k ? "Mask" : "Offset", &t->dims, &want));
  }
  return NULL;
}

static rill_status *dcn_infer_common(rill_infer_ctx *ctx, bool mask) {
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!out) return rill_infer_error(ctx, "needs output Output");
  rill_dims od;
  bool known;
  RILL_TRY(dcn_check(ctx, mask, &od, &known));
  if (!known) rill_meta_unknown(out);
  else rill_meta_set(out, rill_infer_in(ctx, 0, 0)->dtype, &od, 0, -1, -1);
  return NULL;
}
static rill_status *dcn_infer(rill_infer_ctx *ctx) { return dcn_infer_common(ctx, true); }
static rill_status *dcn_v1_infer(rill_infer_ctx *ctx) { return dcn_infer_common(ctx, false); }

static rill_status *dcn_grad_maker(rill_grad_ctx *ctx) {
  static const char *const fwd[] = {"Input", "Offset", "Mask", "Filter"};
  static const char *const gout[] = {"Output"};
  return rill_grad_emit(ctx, NULL, fwd, RILL_COUNTOF(fwd), gout, RILL_COUNTOF(gout), fwd,
                        RILL_COUNTOF(fwd));
}
static rill_status *dcn_v1_grad_maker(rill_grad_ctx *ctx) {
  static const char *const fwd[] = {"Input", "Offset", "Filter"};
  static const char *const gout[] = {"Output"};
  return rill_grad_emit(ctx, NULL, fwd, RILL_COUNTOF(fwd), gout, RILL_COUNTOF(gout), fwd,
                        RILL_COUNTOF(fwd));
}

const rill_op_schema rill_schema_deformable_conv = {
    .type = "deformable_conv",
    .doc = "Modulated deformable convolution (DCN v2): conv2d sampling Input at learned "
           "offsets, each sample scaled by Mask.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = dcn_infer,
    .grad = dcn_grad_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

const rill_op_schema rill_schema_deformable_conv_v1 = {
    .type = "deformable_conv_v1",
    .doc = "Deformable convolution (DCN v1): conv2d sampling Input at learned offsets.",
    .inputs = inputs_v1,
    .ninputs = RILL_COUNTOF(inputs_v1),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs_v1,
    .nattrs = RILL_COUNTOF(attrs_v1),
    .infer = dcn_v1_infer,
    .grad = dcn_v1_grad_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

/* ---- gradients ---- */

static const rill_slot_schema grad_inputs[] = {
    {"Input", 0, "forward Input"},
    {"Offset", 0, "forward Offset"},
    {"Mask", 0, "forward Mask"},
    {"Filter", 0, "forward Filter"},
    {"Output@GRAD", 0, "gradient of Output"},
};
static const rill_slot_schema grad_outputs[] = {
    {"Input@GRAD", RILL_SLOT_DISPENSABLE, "Input's shape"},
    {"Offset@GRAD", RILL_SLOT_DISPENSABLE, "Offset's shape"},
    {"Mask@GRAD", RILL_SLOT_DISPENSABLE, "Mask's shape"},
    {"Filter@GRAD", RILL_SLOT_DISPENSABLE, "Filter's shape"},
};
static const rill_slot_schema grad_inputs_v1[] = {
    {"Input", 0, "forward Input"},
    {"Offset", 0, "forward Offset"},
    {"Filter", 0, "forward Filter"},
    {"Output@GRAD", 0, "gradient of Output"},
};
static const rill_slot_schema grad_outputs_v1[] = {
    {"Input@GRAD", RILL_SLOT_DISPENSABLE, "Input's shape"},
    {"Offset@GRAD", RILL_SLOT_DISPENSABLE, "Offset's shape"},
    {"Filter@GRAD", RILL_SLOT_DISPENSABLE, "Filter's shape"},
};

static rill_status *dcn_grad_infer_common(rill_infer_ctx *ctx, bool mask) {
  size_t nin = mask ? 4 : 3;
  rill_dims od;
  bool known;
  RILL_TRY(dcn_check(ctx, mask, &od, &known));
  const rill_tensor_meta *dy = rill_infer_in(ctx, nin, 0);
  if (!dy) return rill_infer_error(ctx, "needs input Output@GRAD");
  if (known && dy->known) RILL_TRY(dcn_expect_dims(ctx, nin, "Output@GRAD", &dy->dims, &od));
  for (size_t s = 0; s < nin; s++) rill_nn_same_meta(ctx, s, s);
  return NULL;
}
static rill_status *dcn_grad_infer(rill_infer_ctx *ctx) { return dcn_grad_infer_common(ctx, true); }
static rill_status *dcn_v1_grad_infer(rill_infer_ctx *ctx) {
  return dcn_grad_infer_common(ctx, false);
}

const rill_op_schema rill_schema_deformable_conv_grad = {
    .type = "deformable_conv_grad",
    .doc = "Gradients of deformable_conv for Input, Offset, Mask and Filter.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = dcn_grad_infer,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

const rill_op_schema rill_schema_deformable_conv_v1_grad = {
    .type = "deformable_conv_v1_grad",
    .doc = "Gradients of deformable_conv_v1 for Input, Offset and Filter.",
    .inputs = grad_inputs_v1,
    .ninputs = RILL_COUNTOF(grad_inputs_v1),
    .outputs = grad_outputs_v1,
    .noutputs = RILL_COUNTOF(grad_outputs_v1),
    .attrs = attrs_v1,
    .nattrs = RILL_COUNTOF(attrs_v1),
    .infer = dcn_v1_grad_infer,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_CONV_SAME_ATTRS(DEFORMABLE_CONV);
RILL_CONV_SAME_ATTRS(DEFORMABLE_CONV_V1);
RILL_CONV_SAME_ATTRS(DEFORMABLE_CONV_GRAD);
RILL_CONV_SAME_ATTRS(DEFORMABLE_CONV_V1_GRAD);
_Static_assert(RILL_SAME_POS(RILL_DEFORMABLE_CONV_ATTR_DEFORMABLE_GROUPS,
                             RILL_DEFORMABLE_CONV_V1_ATTR_DEFORMABLE_GROUPS) &&
                   RILL_SAME_POS(RILL_DEFORMABLE_CONV_ATTR_IM2COL_STEP,
                                 RILL_DEFORMABLE_CONV_V1_GRAD_ATTR_IM2COL_STEP),
               "deformable_conv's ops share their attribute positions");

RILL_OP_TABLE_CHECKS(deformable_conv);
