/* sigmoid_cross_entropy_with_logits: elementwise logistic loss of logits X against
 * Label (probabilities) of X's shape,
 *   Out = max(X, 0) - X * Label + log(1 + exp(-|X|)),
 * 0 where (int)Label == ignore_index; with normalize, divided by the number of labels
 * farther than 1e-6 from ignore_index (Paddle's count). */
#include "operators/math_grad.h"
#include "operators/op_util.h"

static const rill_slot_schema inputs[] = {
    {"X", 0, "logits"},
    {"Label", 0, "targets in [0, 1], X's shape"},
};
static const rill_slot_schema outputs[] = {{"Out", 0, "loss per element, X's shape"}};
static const rill_attr_schema attrs[] = {
    {"ignore_index", RILL_ATTR_INT, 0, RILL_DEF_INT(-100),
     "elements whose label truncates to this give 0 loss and gradient"},
    {"normalize", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
     "divide by the number of labels that are not ignore_index"},
};

static rill_status *check_xl(rill_infer_ctx *ctx, const rill_tensor_meta *x,
                             const rill_tensor_meta *l) {
  char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
  const char *xn = rill_infer_in_name(ctx, 0, 0), *ln = rill_infer_in_name(ctx, 1, 0);
  if (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input X (%s) is %s, expected float32 or float64", xn,
                            rill_dtype_name(x->dtype));
  if (l->dtype != x->dtype)
    return rill_infer_error(ctx, "input Label (%s) is %s but input X (%s) is %s", ln,
                            rill_dtype_name(l->dtype), xn, rill_dtype_name(x->dtype));
  bool bad = l->dims.n != x->dims.n;
  for (int i = 0; !bad && i < x->dims.n; i++)
    bad = x->dims.d[i] >= 0 && l->dims.d[i] >= 0 && x->dims.d[i] != l->dims.d[i];
  if (bad)
    return rill_infer_error(ctx, "input Label (%s) has shape %s, input X (%s) %s: they must be "
                            "equal", ln, rill_dims_str(&l->dims, a, sizeof a), xn,
                            rill_dims_str(&x->dims, b, sizeof b));
  return NULL;
}

static rill_status *sce_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *l = rill_infer_in(ctx, 1, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !l || !out) return rill_infer_error(ctx, "needs inputs X and Label and output Out");
  if (!x->known || !l->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  RILL_TRY(check_xl(ctx, x, l));
  rill_meta_set(out, x->dtype, &x->dims, x->lod_level, 0, 0);
  return NULL;
}

/* Paddle's maker: the grad op reads X, Label and Out@GRAD. */
static rill_status *sce_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit(ctx, "sigmoid_cross_entropy_with_logits_grad", RILL_NAMES("X", "Label"),
                        RILL_NAMES("Out"), RILL_NAMES("X"));
}

const rill_op_schema rill_schema_sigmoid_cross_entropy_with_logits = {
    .type = "sigmoid_cross_entropy_with_logits",
    .doc = "Out = max(X, 0) - X * Label + log(1 + exp(-|X|)) elementwise (0 at ignore_index; "
           "normalize: over the count of labels kept).",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = sce_infer,
    .grad = sce_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema grad_inputs[] = {
    {"X", 0, "forward X"},
    {"Label", 0, "forward Label"},
    {"Out@GRAD", 0, "gradient of Out"},
};
static const rill_slot_schema grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "dOut * (sigmoid(X) - Label), 0 at ignore_index"},
};

static rill_status *sce_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *l = rill_infer_in(ctx, 1, 0);
  if (!x || !l) return rill_infer_error(ctx, "needs inputs X and Label");
  if (x->known && l->known) RILL_TRY(check_xl(ctx, x, l));
  rill_grad_infer_like(ctx, 0, 0);
  return NULL;
}

const rill_op_schema rill_schema_sigmoid_cross_entropy_with_logits_grad = {
    .type = "sigmoid_cross_entropy_with_logits_grad",
    .doc = "X@GRAD = Out@GRAD * (sigmoid(X) - Label) (0 at ignore_index; normalize: over the "
           "count of labels kept).",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = sce_grad_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(sigmoid_cross_entropy_with_logits);
