/* sequence_softmax: the softmax of each sequence of a LoD tensor X of one value per row
 * ([T, 1] or [T]); the sequences are X's last LoD level, which must cover its T rows. Out
 * has X's shape and LoD. sequence_softmax_grad (Paddle's layout: Out, Out@GRAD, X ->
 * X@GRAD) gives each row Out * (Out@GRAD - the sequence's sum of Out@GRAD * Out). */
#include "operators/math_grad.h"
#include "operators/op_util.h"

enum { IN_X };
static const rill_slot_schema inputs[] = {
    [IN_X] = {"X", 0, "float [T, 1] or [T] with LoD: one score per row"},
};
static const rill_slot_schema outputs[] = {
    {"Out", 0, "X's shape and LoD: each sequence's softmax"},
};
static const rill_attr_schema attrs[] = {
    {"use_cudnn", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
    {"data_format", RILL_ATTR_STRING, RILL_ATTR_EXTRA, RILL_DEF_STRING("AnyLayout"), "ignored"},
};

static rill_status *check_x(rill_infer_ctx *ctx, size_t slot, const rill_tensor_meta *x) {
  const char *xn = rill_infer_in_name(ctx, slot, 0);
  char s[RILL_DIMS_STR_MAX];
  if (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input %s (%s) is %s, expected float32 or float64",
                            ctx->schema->inputs[slot].name, xn, rill_dtype_name(x->dtype));
  if (x->dims.n < 1 || x->dims.n > 2 || (x->dims.n == 2 && x->dims.d[1] != 1 && x->dims.d[1] >= 0))
    return rill_infer_error(ctx, "input %s (%s) has shape %s, expected [T, 1] or [T]",
                            ctx->schema->inputs[slot].name, xn, rill_dims_str(&x->dims, s, sizeof s));
  return NULL;
}

static rill_status *sequence_softmax_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, IN_X, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input X and output Out");
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  RILL_TRY(check_x(ctx, IN_X, x));
  rill_meta_set(out, x->dtype, &x->dims, x->lod_level, IN_X, 0);
  return NULL;
}

static rill_status *sequence_softmax_maker(rill_grad_ctx *ctx) {
  static const char *const fwd[] = {"Out", "X"}, *const outs[] = {"Out"}, *const ins[] = {"X"};
  return rill_grad_emit(ctx, "sequence_softmax_grad", fwd, 2, outs, 1, ins, 1);
}

const rill_op_schema rill_schema_sequence_softmax = {
    .type = "sequence_softmax",
    .doc = "Out = exp(X - max) / sum(exp(X - max)) over each sequence of X's last LoD level.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = sequence_softmax_infer,
    .grad = sequence_softmax_maker,
    .kernel_dtype_slot = IN_X,
    .dtype_attr = -1,
};

enum { G_OUT, G_DOUT, G_X };
static const rill_slot_schema grad_inputs[] = {
    [G_OUT] = {"Out", 0, "the forward output"},
    [G_DOUT] = {"Out@GRAD", 0, "gradient of Out"},
    [G_X] = {"X", 0, "the forward input (its LoD gives the sequences)"},
};
static const rill_slot_schema grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "gradient of X, X's shape and LoD"},
};

static rill_status *sequence_softmax_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *o = rill_infer_in(ctx, G_OUT, 0), *x = rill_infer_in(ctx, G_X, 0);
  if (!o || !rill_infer_in(ctx, G_DOUT, 0) || !x)
    return rill_infer_error(ctx, "needs inputs Out, Out@GRAD and X");
  if (x->known) RILL_TRY(check_x(ctx, G_X, x));
  RILL_TRY(rill_grad_infer_same(ctx, G_OUT, G_X));
  RILL_TRY(rill_grad_infer_same(ctx, G_DOUT, G_X));
  rill_grad_infer_like(ctx, 0, G_X);
  return NULL;
}

const rill_op_schema rill_schema_sequence_softmax_grad = {
    .type = "sequence_softmax_grad",
    .doc = "X@GRAD = Out * (Out@GRAD - sum(Out@GRAD * Out)) over each sequence.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = sequence_softmax_grad_infer,
    .grad = NULL,
    .kernel_dtype_slot = G_X,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(sequence_softmax);
