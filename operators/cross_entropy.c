/* cross_entropy (Paddle 1.x): X holds probabilities over its last dim; Label is int64
 * (or int32) class ids shaped like X with last dim 1 (or without the last dim), or with
 * soft_label, float distributions shaped like X. Y = -log(X[label]) (hard; 0 where
 * label == ignore_index) or -sum(label * log(X)) (soft), shaped like Label with last dim
 * 1. log(0) is clipped to -1e20 as Paddle's TolerableValue does.
 * cross_entropy_grad: X, Label, Y@GRAD -> X@GRAD. Kernels: kernels/cpu/cross_entropy.c. */
#include "operators/activation.h"

static const rill_slot_schema inputs[] = {
    {"X", 0, "probabilities, [..., D]"},
    {"Label", RILL_SLOT_NO_GRAD, "class ids [..., 1] (int64/int32) or soft labels [..., D]"},
};
static const rill_slot_schema outputs[] = {{"Y", 0, "loss, [..., 1]"}};
static const rill_attr_schema attrs[] = {
    {"soft_label", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false), "Label holds distributions"},
    {"ignore_index", RILL_ATTR_INT, 0, RILL_DEF_INT(-100), "hard label whose loss and gradient are 0"},
};

static bool is_float(rill_dtype t) { return t == RILL_DTYPE_FP32 || t == RILL_DTYPE_FP64; }
static bool is_index(rill_dtype t) { return t == RILL_DTYPE_INT64 || t == RILL_DTYPE_INT32; }

/* Checks X against Label; sets *y (when non-NULL) to Y's dims. */
static rill_status *check_x_label(const rill_infer_ctx *ctx, bool soft, const rill_tensor_meta *x,
                                  const rill_tensor_meta *label, rill_dims *y) {
  int r = x->dims.n, lr = label->dims.n;
  const char *xn = rill_infer_in_name(ctx, 0, 0), *ln = rill_infer_in_name(ctx, 1, 0);
  char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
  rill_dims_str(&x->dims, a, sizeof a);
  rill_dims_str(&label->dims, b, sizeof b);
  if (r < 1) return rill_infer_error(ctx, "input X (%s) has rank 0; it needs a class dim", xn);
  if (!is_float(x->dtype))
    return rill_infer_error(ctx, "input X (%s) is %s; it must be float32 or float64", xn,
                            rill_dtype_name(x->dtype));
  if (soft) {
    if (label->dtype != x->dtype)
      return rill_infer_error(ctx, "with soft_label, input Label (%s) must have X's dtype %s, not %s",
                              ln, rill_dtype_name(x->dtype), rill_dtype_name(label->dtype));
    if (lr != r)
      return rill_infer_error(ctx, "with soft_label, input Label (%s) %s must have the rank of X (%s) %s",
                              ln, b, xn, a);
  } else {
    if (!is_index(label->dtype))
      return rill_infer_error(ctx, "input Label (%s) is %s; hard labels are int64 or int32", ln,
                              rill_dtype_name(label->dtype));
    if (lr != r && lr != r - 1)
      return rill_infer_error(ctx, "input Label (%s) %s must have the rank of X (%s) %s, or one less",
                              ln, b, xn, a);
  }
  for (int i = 0; i < lr && i < r; i++) {
    int64_t xd = x->dims.d[i], ld = label->dims.d[i];
    if (xd < 0 || ld < 0) continue;
    bool last = i == r - 1;
    if (!last ? xd != ld : (soft ? xd != ld : ld != 1))
      return rill_infer_error(ctx, "input Label (%s) %s does not fit X (%s) %s: %s", ln, b, xn, a,
                              !last ? "dims other than the last must be equal"
                              : soft ? "with soft_label the last dims must be equal"
                                     : "the last dim of hard labels must be 1");
  }
  if (y) {
    *y = label->dims;
    if (lr == r) y->d[r - 1] = 1;
  }
  return NULL;
}

static rill_status *cross_entropy_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *label = rill_infer_in(ctx, 1, 0);
  rill_tensor_meta *y = rill_infer_out(ctx, 0, 0);
  if (!x || !label || !y) return rill_infer_error(ctx, "needs inputs X, Label and output Y");
  if (!x->known || !label->known) {
    rill_meta_unknown(y);
    return NULL;
  }
  rill_dims yd;
  RILL_TRY(check_x_label(ctx, ctx->attrs[RILL_CROSS_ENTROPY_ATTR_SOFT_LABEL].v.b, x, label, &yd));
  rill_meta_set(y, x->dtype, &yd, x->lod_level, 0, 0);
  return NULL;
}

static rill_status *cross_entropy_grad_maker(rill_grad_ctx *ctx) {
  static const char *const fwd[] = {"X", "Label"}, *const outs[] = {"Y"}, *const ins[] = {"X"};
  return rill_grad_emit(ctx, NULL, fwd, 2, outs, 1, ins, 1);
}

const rill_op_schema rill_schema_cross_entropy = {
    .type = "cross_entropy",
    .doc = "Y = -log(X[Label]) (hard labels) or -sum(Label * log(X)) (soft_label), over X's last dim.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = cross_entropy_infer,
    .grad = cross_entropy_grad_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema grad_inputs[] = {
    {"X", 0, "the forward input"},
    {"Label", 0, "the forward labels"},
    {"Y@GRAD", 0, "gradient of Y"},
};
static const rill_slot_schema grad_outputs[] = {{"X@GRAD", RILL_SLOT_DISPENSABLE, "gradient of X"}};

static rill_status *cross_entropy_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *label = rill_infer_in(ctx, 1, 0),
                         *dy = rill_infer_in(ctx, 2, 0);
  rill_tensor_meta *dx = rill_infer_out(ctx, 0, 0);
  if (!x || !label || !dy) return rill_infer_error(ctx, "needs inputs X, Label and Y@GRAD");
  if (!dx) return NULL;
  if (!x->known || !label->known) {
    rill_meta_unknown(dx);
    return NULL;
  }
  rill_dims yd;
  RILL_TRY(check_x_label(ctx, ctx->attrs[RILL_CROSS_ENTROPY_ATTR_SOFT_LABEL].v.b, x, label, &yd));
  if (dy->known) {
    int64_t a = 0, b = 0;
    if (dy->dtype != x->dtype)
      return rill_infer_error(ctx, "input Y@GRAD (%s) is %s, X is %s", rill_infer_in_name(ctx, 2, 0),
                              rill_dtype_name(dy->dtype), rill_dtype_name(x->dtype));
    if (rill_dims_numel(&dy->dims, INT64_MAX, &a) && rill_dims_numel(&yd, INT64_MAX, &b) && a != b) {
      char s[RILL_DIMS_STR_MAX], t[RILL_DIMS_STR_MAX];
      return rill_infer_error(ctx, "input Y@GRAD (%s) has shape %s, the loss has %s",
                              rill_infer_in_name(ctx, 2, 0), rill_dims_str(&dy->dims, s, sizeof s),
                              rill_dims_str(&yd, t, sizeof t));
    }
  }
  rill_meta_set(dx, x->dtype, &x->dims, x->lod_level, 0, 0);
  return NULL;
}

const rill_op_schema rill_schema_cross_entropy_grad = {
    .type = "cross_entropy_grad",
    .doc = "Gradient of cross_entropy: -Y@GRAD / X at the label (hard), -Y@GRAD * Label / X (soft).",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = cross_entropy_grad_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

/* ---- cross_entropy2 (hard labels only; what fluid.layers.cross_entropy emits for
 * soft_label=False since Paddle 1.5) ----
 * Outputs Y, XShape (X's dims with a trailing 0: shape only, no data) and MatchX
 * (X[label] per row, 0 where ignored); its gradient, cross_entropy_grad2, reads
 * Label, MatchX, XShape and Y@GRAD: X@GRAD = -Y@GRAD / MatchX at the label, else 0. */
static const rill_slot_schema inputs2[] = {
    {"X", 0, "probabilities, [..., D]"},
    {"Label", RILL_SLOT_NO_GRAD, "class ids [..., 1] or [...], int64/int32"},
};
static const rill_slot_schema outputs2[] = {
    {"Y", 0, "loss, [..., 1]"},
    {"XShape", RILL_SLOT_INTERMEDIATE, "X's dims plus a trailing 0, no data"},
    {"MatchX", RILL_SLOT_INTERMEDIATE, "X at the label, [..., 1]"},
};
static const rill_attr_schema attrs2[] = {
    {"ignore_index", RILL_ATTR_INT, 0, RILL_DEF_INT(-100), "label whose loss and gradient are 0"},
};

static rill_status *cross_entropy2_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *label = rill_infer_in(ctx, 1, 0);
  rill_tensor_meta *y = rill_infer_out(ctx, 0, 0), *xs = rill_infer_out(ctx, 1, 0),
                   *mx = rill_infer_out(ctx, 2, 0);
  if (!x || !label || !y || !xs || !mx)
    return rill_infer_error(ctx, "needs inputs X, Label and outputs Y, XShape, MatchX");
  if (!x->known || !label->known) {
    rill_meta_unknown(y);
    rill_meta_unknown(xs);
    rill_meta_unknown(mx);
    return NULL;
  }
  rill_dims yd;
  RILL_TRY(check_x_label(ctx, false, x, label, &yd));
  if (x->dims.n >= RILL_MAX_DIMS)
    return rill_infer_error(ctx, "input X (%s) has rank %d; XShape needs one more dim",
                            rill_infer_in_name(ctx, 0, 0), x->dims.n);
  rill_dims sd = x->dims, md = x->dims;
  sd.d[sd.n++] = 0;
  md.d[md.n - 1] = 1;
  rill_meta_set(y, x->dtype, &yd, x->lod_level, 0, 0);
  rill_meta_set(xs, x->dtype, &sd, x->lod_level, 0, 0);
  rill_meta_set(mx, x->dtype, &md, x->lod_level, 0, 0);
  return NULL;
}

static rill_status *cross_entropy2_grad_maker(rill_grad_ctx *ctx) {
  static const char *const fwd[] = {"Label", "MatchX", "XShape"}, *const outs[] = {"Y"},
                           *const ins[] = {"X"};
  return rill_grad_emit(ctx, "cross_entropy_grad2", fwd, 3, outs, 1, ins, 1);
}

const rill_op_schema rill_schema_cross_entropy2 = {
    .type = "cross_entropy2",
    .doc = "Y = -log(X[Label]) over X's last dim (hard labels); MatchX = X[Label].",
    .inputs = inputs2,
    .ninputs = RILL_COUNTOF(inputs2),
    .outputs = outputs2,
    .noutputs = RILL_COUNTOF(outputs2),
    .attrs = attrs2,
    .nattrs = RILL_COUNTOF(attrs2),
    .flags = 0,
    .infer = cross_entropy2_infer,
    .grad = cross_entropy2_grad_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema grad2_inputs[] = {
    {"Label", 0, "the forward labels"},
    {"MatchX", 0, "the forward MatchX output"},
    {"XShape", RILL_SLOT_ANY_PLACE, "the forward XShape output (its dims give X's)"},
    {"Y@GRAD", 0, "gradient of Y"},
};

static rill_status *cross_entropy_grad2_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *label = rill_infer_in(ctx, 0, 0), *mx = rill_infer_in(ctx, 1, 0),
                         *xs = rill_infer_in(ctx, 2, 0), *dy = rill_infer_in(ctx, 3, 0);
  rill_tensor_meta *dx = rill_infer_out(ctx, 0, 0);
  if (!label || !mx || !xs || !dy)
    return rill_infer_error(ctx, "needs inputs Label, MatchX, XShape and Y@GRAD");
  if (!dx) return NULL;
  if (!xs->known || !mx->known) {
    rill_meta_unknown(dx);
    return NULL;
  }
  if (xs->dims.n < 2 || xs->dims.d[xs->dims.n - 1] != 0)
    return rill_infer_error(ctx, "input XShape (%s) must be X's dims plus a trailing 0",
                            rill_infer_in_name(ctx, 2, 0));
  rill_dims xd = xs->dims;
  xd.n--;
  rill_meta_set(dx, mx->dtype, &xd, xs->lod_level, 2, 0);
  return NULL;
}

const rill_op_schema rill_schema_cross_entropy_grad2 = {
    .type = "cross_entropy_grad2",
    .doc = "Gradient of cross_entropy2: X@GRAD = -Y@GRAD / MatchX at the label, else 0.",
    .inputs = grad2_inputs,
    .ninputs = RILL_COUNTOF(grad2_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs2,
    .nattrs = RILL_COUNTOF(attrs2),
    .flags = 0,
    .infer = cross_entropy_grad2_infer,
    .grad = NULL,
    .kernel_dtype_slot = 1,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(cross_entropy);
