/* unfold (im2col): every kernel_sizes window of X [N, C, H, W], taken at strides over X
 * padded by paddings (top, left, bottom, right) with dilations between the taps, becomes
 * one column of Y [N, C * kh * kw, L], L = OH * OW, rows ordered (c, i, j); taps in the
 * padding read 0. OH = (H + top + bottom - (dh * (kh - 1) + 1)) / sh + 1, OW likewise.
 * unfold_grad adds each column back onto the pixels it read (col2im). */
#include "operators/op_util.h"
#include "operators/patches.h"

enum { UNFOLD_A_KERNEL, UNFOLD_A_STRIDES, UNFOLD_A_PADDINGS, UNFOLD_A_DILATIONS };

static const rill_slot_schema inputs[] = {{"X", 0, "[N, C, H, W]"}};
static const rill_slot_schema outputs[] = {{"Y", 0, "[N, C * kh * kw, OH * OW]"}};

#define INTS2(a, b) {.type = RILL_ATTR_INTS, .n = 2, .list.ints = (int32_t[]){a, b}}
static const rill_attr_schema attrs[] = {
    [UNFOLD_A_KERNEL] = {"kernel_sizes", RILL_ATTR_INTS, RILL_ATTR_REQUIRED,
                         RILL_DEF_EMPTY(RILL_ATTR_INTS), "window [kh, kw]"},
    [UNFOLD_A_STRIDES] = {"strides", RILL_ATTR_INTS, RILL_ATTR_REQUIRED, INTS2(1, 1),
                          "[sh, sw]"},
    [UNFOLD_A_PADDINGS] = {"paddings", RILL_ATTR_INTS, RILL_ATTR_REQUIRED,
                           {.type = RILL_ATTR_INTS, .n = 4, .list.ints = (int32_t[]){0, 0, 0, 0}},
                           "[top, left, bottom, right]"},
    [UNFOLD_A_DILATIONS] = {"dilations", RILL_ATTR_INTS, RILL_ATTR_REQUIRED, INTS2(1, 1),
                            "[dh, dw]"},
};

/* X's checks and Y's shape. */
static rill_status *unfold_shape(rill_infer_ctx *ctx, const rill_tensor_meta *x, rill_dims *y) {
  const char *xn = rill_infer_in_name(ctx, 0, 0);
  char s[RILL_DIMS_STR_MAX];
  if (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input X (%s) is %s, expected float32 or float64", xn,
                            rill_dtype_name(x->dtype));
  if (x->dims.n != 4)
    return rill_infer_error(ctx, "input X (%s) has shape %s, expected [N, C, H, W]", xn,
                            rill_dims_str(&x->dims, s, sizeof s));
  rill_patch_geom g;
  const char *err = rill_patch_geom_get(ctx->attrs, UNFOLD_A_KERNEL, true, &x->dims, &g);
  if (err)
    return rill_infer_error(ctx, "input X (%s) %s: %s", xn, rill_dims_str(&x->dims, s, sizeof s),
                            err);
  *y = (rill_dims){.n = 3, .d = {x->dims.d[0], g.c < 0 ? -1 : g.c * g.kh * g.kw,
                               g.oh < 0 || g.ow < 0 ? -1 : g.oh * g.ow}};
  return NULL;
}

static rill_status *unfold_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *y = rill_infer_out(ctx, 0, 0);
  if (!x || !y) return rill_infer_error(ctx, "needs input X and output Y");
  if (!x->known) {
    rill_meta_unknown(y);
    return NULL;
  }
  rill_dims d;
  RILL_TRY(unfold_shape(ctx, x, &d));
  rill_meta_set(y, x->dtype, &d, 0, -1, -1);
  return NULL;
}

static rill_status *unfold_grad_maker(rill_grad_ctx *ctx) {
  static const char *const fwd[] = {"X"};
  static const char *const gout[] = {"Y"};
  static const char *const gin[] = {"X"};
  return rill_grad_emit(ctx, "unfold_grad", fwd, RILL_COUNTOF(fwd), gout, RILL_COUNTOF(gout), gin,
                        RILL_COUNTOF(gin));
}

const rill_op_schema rill_schema_unfold = {
    .type = "unfold",
    .doc = "im2col: each sliding window of an NCHW image becomes a column.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = unfold_infer,
    .grad = unfold_grad_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema grad_inputs[] = {
    {"X", 0, "forward X"},
    {"Y@GRAD", 0, "gradient of Y"},
};
static const rill_slot_schema grad_outputs[] = {{"X@GRAD", RILL_SLOT_DISPENSABLE, "gradient of X"}};

static rill_status *unfold_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  if (!x || !rill_infer_in(ctx, 1, 0)) return rill_infer_error(ctx, "needs inputs X and Y@GRAD");
  rill_tensor_meta *dx = rill_infer_out(ctx, 0, 0);
  if (!x->known) {
    if (dx) rill_meta_unknown(dx);
    return NULL;
  }
  rill_dims d;
  RILL_TRY(unfold_shape(ctx, x, &d));
  if (dx) rill_meta_set(dx, x->dtype, &x->dims, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_unfold_grad = {
    .type = "unfold_grad",
    .doc = "Gradient of unfold (col2im): each column is added back onto the pixels it read.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = unfold_grad_infer,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(unfold);
