/* softmax_with_cross_entropy: Softmax = softmax(Logits) along `axis`; Loss = cross
 * entropy of Softmax against Label along that axis (Loss has Logits' shape with the axis
 * dim 1). Hard labels (int64/int32, axis dim 1; ignore_index gives loss 0) or soft labels
 * (Logits' dtype and shape). With use_softmax false, Logits already holds probabilities
 * and Softmax is a copy of it.
 *
 * The hard/soft loss is computed as log-sum-exp(Logits) - Logits[label] (soft: the
 * label-weighted sum of it), the numerically stable form; Paddle's CPU kernel goes
 * through log(Softmax) instead, which agrees except where a probability underflows.
 *
 * Gradient in Paddle's layout (a custom maker): Label, Softmax, Loss@GRAD ->
 * Logits@GRAD = (Softmax - onehot(Label)) * Loss@GRAD (0 where ignored), or
 * (Softmax - Label) * Loss@GRAD for soft labels. Kernels: kernels/cpu/cross_entropy.c. */
#include "operators/activation.h"


static const rill_slot_schema inputs[] = {
    {"Logits", 0, "unscaled log probabilities"},
    {"Label", RILL_SLOT_NO_GRAD, "class ids (axis dim 1) or soft labels (Logits' shape)"},
};
static const rill_slot_schema outputs[] = {
    {"Softmax", RILL_SLOT_INTERMEDIATE, "softmax of Logits along axis, kept for the gradient"},
    {"Loss", 0, "cross entropy, Logits' shape with the axis dim 1"},
};
static const rill_attr_schema attrs[] = {
    {"soft_label", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false), "Label holds distributions"},
    {"use_softmax", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(true),
                       "false: Logits already holds probabilities"},
    {"numeric_stable_mode", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(true),
                          "always stable here; false only allowed with the last axis, as in Paddle"},
    {"ignore_index", RILL_ATTR_INT, 0, RILL_DEF_INT(-100),
                        "hard label whose loss and gradient are 0"},
    {"axis", RILL_ATTR_INT, 0, RILL_DEF_INT(-1), "class dim; negative counts from the end"},
};

/* Checks Logits (or Softmax) `x` of input slot `xs` against Label of slot `ls`; sets
 * *axis and *loss (Loss' dims). */
static rill_status *check_logits_label(const rill_infer_ctx *ctx, size_t xs, size_t ls,
                                       const rill_tensor_meta *x, const rill_tensor_meta *label,
                                       int *axis, rill_dims *loss) {
  bool soft = ctx->attrs[RILL_SOFTMAX_WITH_CROSS_ENTROPY_ATTR_SOFT_LABEL].v.b;
  int r = x->dims.n;
  const char *xslot = ctx->schema->inputs[xs].name, *xn = rill_infer_in_name(ctx, xs, 0),
             *ln = rill_infer_in_name(ctx, ls, 0);
  if (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input %s (%s) is %s; it must be float32 or float64", xslot, xn,
                            rill_dtype_name(x->dtype));
  if (r < 1) return rill_infer_error(ctx, "input %s (%s) has rank 0; it needs a class dim", xslot, xn);
  RILL_TRY(rill_act_check_axis(ctx, ctx->attrs[RILL_SOFTMAX_WITH_CROSS_ENTROPY_ATTR_AXIS].v.i, r, xs, axis));
  if (*axis != r - 1 && !ctx->attrs[RILL_SOFTMAX_WITH_CROSS_ENTROPY_ATTR_NUMERIC_STABLE_MODE].v.b)
    return rill_infer_error(ctx, "attribute axis %d must be the last dim when numeric_stable_mode "
                            "is false", ctx->attrs[RILL_SOFTMAX_WITH_CROSS_ENTROPY_ATTR_AXIS].v.i);
  if (soft ? label->dtype != x->dtype
           : label->dtype != RILL_DTYPE_INT64 && label->dtype != RILL_DTYPE_INT32)
    return rill_infer_error(ctx, "input Label (%s) is %s; %s", ln, rill_dtype_name(label->dtype),
                            soft ? "soft labels must have the dtype of the logits"
                                 : "hard labels are int64 or int32");
  char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
  rill_dims_str(&x->dims, a, sizeof a);
  rill_dims_str(&label->dims, b, sizeof b);
  if (label->dims.n != r)
    return rill_infer_error(ctx, "input Label (%s) %s must have the rank of %s (%s) %s", ln, b,
                            xslot, xn, a);
  for (int i = 0; i < r; i++) {
    int64_t xd = x->dims.d[i], ld = label->dims.d[i];
    if (i != *axis || soft) {
      if (xd >= 0 && ld >= 0 && xd != ld)
        return rill_infer_error(ctx, "input Label (%s) %s does not fit %s (%s) %s: dim %d differs",
                                ln, b, xslot, xn, a, i);
    } else if (ld >= 0 && ld != 1) {
      return rill_infer_error(ctx, "input Label (%s) %s: hard labels need extent 1 on axis %d",
                              ln, b, *axis);
    }
  }
  *loss = x->dims;
  loss->d[*axis] = 1;
  return NULL;
}

static rill_status *swce_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *label = rill_infer_in(ctx, 1, 0);
  rill_tensor_meta *sm = rill_infer_out(ctx, 0, 0), *loss = rill_infer_out(ctx, 1, 0);
  if (!x || !label || !sm || !loss)
    return rill_infer_error(ctx, "needs inputs Logits, Label and outputs Softmax, Loss");
  if (!x->known || !label->known) {
    rill_meta_unknown(sm);
    rill_meta_unknown(loss);
    return NULL;
  }
  int axis;
  rill_dims ld;
  RILL_TRY(check_logits_label(ctx, 0, 1, x, label, &axis, &ld));
  rill_meta_set(sm, x->dtype, &x->dims, x->lod_level, 0, 0);
  rill_meta_set(loss, x->dtype, &ld, x->lod_level, 0, 0);
  return NULL;
}

static rill_status *swce_grad_maker(rill_grad_ctx *ctx) {
  static const char *const fwd[] = {"Label", "Softmax"}, *const outs[] = {"Loss"},
                           *const ins[] = {"Logits"};
  return rill_grad_emit(ctx, NULL, fwd, 2, outs, 1, ins, 1);
}

const rill_op_schema rill_schema_softmax_with_cross_entropy = {
    .type = "softmax_with_cross_entropy",
    .doc = "Softmax = softmax(Logits) along axis; Loss = cross entropy of it against Label.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = swce_infer,
    .grad = swce_grad_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema grad_inputs[] = {
    {"Label", 0, "the forward labels"},
    {"Softmax", 0, "the forward Softmax output"},
    {"Loss@GRAD", 0, "gradient of Loss"},
};
static const rill_slot_schema grad_outputs[] = {
    {"Logits@GRAD", RILL_SLOT_DISPENSABLE, "gradient of Logits"},
};

static rill_status *swce_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *label = rill_infer_in(ctx, 0, 0), *sm = rill_infer_in(ctx, 1, 0),
                         *dl = rill_infer_in(ctx, 2, 0);
  rill_tensor_meta *dx = rill_infer_out(ctx, 0, 0);
  if (!label || !sm || !dl) return rill_infer_error(ctx, "needs inputs Label, Softmax and Loss@GRAD");
  if (!dx) return NULL;
  if (!sm->known || !label->known) {
    rill_meta_unknown(dx);
    return NULL;
  }
  int axis;
  rill_dims ld;
  RILL_TRY(check_logits_label(ctx, 1, 0, sm, label, &axis, &ld));
  if (dl->known) {
    int64_t a = 0, b = 0;
    if (dl->dtype != sm->dtype)
      return rill_infer_error(ctx, "input Loss@GRAD (%s) is %s, Softmax is %s",
                              rill_infer_in_name(ctx, 2, 0), rill_dtype_name(dl->dtype),
                              rill_dtype_name(sm->dtype));
    if (rill_dims_numel(&dl->dims, INT64_MAX, &a) && rill_dims_numel(&ld, INT64_MAX, &b) && a != b) {
      char s[RILL_DIMS_STR_MAX], t[RILL_DIMS_STR_MAX];
      return rill_infer_error(ctx, "input Loss@GRAD (%s) has shape %s, the loss has %s",
                              rill_infer_in_name(ctx, 2, 0), rill_dims_str(&dl->dims, s, sizeof s),
                              rill_dims_str(&ld, t, sizeof t));
    }
  }
  rill_meta_set(dx, sm->dtype, &sm->dims, sm->lod_level, 1, 0);
  return NULL;
}

const rill_op_schema rill_schema_softmax_with_cross_entropy_grad = {
    .type = "softmax_with_cross_entropy_grad",
    .doc = "Gradient of softmax_with_cross_entropy from its Softmax output.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = swce_grad_infer,
    .grad = NULL,
    .kernel_dtype_slot = 1,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(softmax_with_cross_entropy);
