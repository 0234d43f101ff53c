/* dropout and dropout_grad. Training zeroes each element with probability dropout_prob
 * and records the kept ones in Mask (uint8, 1 = kept); downgrade_in_infer (the default)
 * keeps the survivors as they are and scales by (1 - p) at inference, upscale_in_train
 * divides the survivors by (1 - p) and passes X through at inference. */
#include "operators/nn.h"

static const rill_slot_schema inputs[] = {
    {"X", 0, "input"},
    {"Seed", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD, "[1] int32: overrides the seed"},
};
static const rill_slot_schema outputs[] = {
    {"Out", 0, "X's shape"},
    {"Mask", RILL_SLOT_DISPENSABLE | RILL_SLOT_INTERMEDIATE, "uint8, X's shape: 1 where kept"},
};
static const rill_attr_schema attrs[] = {
    {"dropout_prob", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.5f), "probability of dropping, in [0, 1]"},
    {"is_test", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false), "inference: no randomness"},
    {"fix_seed", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false), "use `seed` on every run"},
    {"seed", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "seed when fix_seed"},
    {"dropout_implementation", RILL_ATTR_STRING, 0, RILL_DEF_STRING("downgrade_in_infer"),
     "downgrade_in_infer or upscale_in_train"},
};

static rill_status *dropout_check(rill_infer_ctx *ctx, const rill_tensor_meta *x) {
  float p = ctx->attrs[RILL_DROPOUT_ATTR_DROPOUT_PROB].v.f;
  if (!(p >= 0 && p <= 1))
    return rill_infer_error(ctx, "dropout_prob %g must lie in [0, 1]", (double)p);
  const char *impl = ctx->attrs[RILL_DROPOUT_ATTR_DROPOUT_IMPLEMENTATION].v.s ? ctx->attrs[RILL_DROPOUT_ATTR_DROPOUT_IMPLEMENTATION].v.s : "";
  if (strcmp(impl, "downgrade_in_infer") != 0 && strcmp(impl, "upscale_in_train") != 0)
    return rill_infer_error(ctx, "dropout_implementation '%s' is not downgrade_in_infer or "
                            "upscale_in_train", impl);
  if (x && x->known && x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input %s (%s) is %s, dropout takes float32 or float64",
                            ctx->schema->inputs[0].name, rill_infer_in_name(ctx, 0, 0),
                            rill_dtype_name(x->dtype));
  return NULL;
}

static rill_status *dropout_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0), *mask = rill_infer_out(ctx, 1, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input X and output Out");
  if (!x->known) {
    rill_meta_unknown(out);
    if (mask) rill_meta_unknown(mask);
    return NULL;
  }
  RILL_TRY(dropout_check(ctx, x));
  const rill_tensor_meta *seed = rill_infer_in(ctx, 1, 0);
  if (seed && seed->known && seed->dtype != RILL_DTYPE_INT32)
    return rill_infer_error(ctx, "input Seed (%s) is %s, expected int32", rill_infer_in_name(ctx, 1, 0),
                            rill_dtype_name(seed->dtype));
  rill_meta_set(out, x->dtype, &x->dims, x->lod_level, 0, 0);
  if (mask) rill_meta_set(mask, RILL_DTYPE_UINT8, &x->dims, x->lod_level, 0, 0);
  return NULL;
}

static rill_status *dropout_grad_maker(rill_grad_ctx *ctx) {
  static const char *const fwd[] = {"Mask"};
  static const char *const gout[] = {"Out"};
  static const char *const gin[] = {"X"};
  return rill_grad_emit(ctx, "dropout_grad", fwd, RILL_COUNTOF(fwd), gout, RILL_COUNTOF(gout), gin,
                        RILL_COUNTOF(gin));
}

const rill_op_schema rill_schema_dropout = {
    .type = "dropout",
    .doc = "Randomly zeroes elements in training (Mask records the kept ones).",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = dropout_infer,
    .grad = dropout_grad_maker,
    .flags = RILL_OP_RANDOM,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema grad_inputs[] = {
    {"Mask", RILL_SLOT_DISPENSABLE, "forward Mask (required unless is_test)"},
    {"Out@GRAD", 0, "gradient of Out"},
};
static const rill_slot_schema grad_outputs[] = {{"X@GRAD", RILL_SLOT_DISPENSABLE, "gradient of X"}};

static rill_status *dropout_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *dy = rill_infer_in(ctx, 1, 0), *mask = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *dx = rill_infer_out(ctx, 0, 0);
  if (!dy) return rill_infer_error(ctx, "needs input Out@GRAD");
  RILL_TRY(dropout_check(ctx, NULL));
  if (!mask && !ctx->attrs[RILL_DROPOUT_ATTR_IS_TEST].v.b)
    return rill_infer_error(ctx, "input Mask is required in training (is_test false)");
  if (mask && mask->known && dy->known && rill_dims_known(&mask->dims) &&
      rill_dims_known(&dy->dims) && !rill_dims_equal(&mask->dims, &dy->dims))
    return rill_infer_error(ctx, "input Mask (%s) and Out@GRAD (%s) differ in shape",
                            rill_infer_in_name(ctx, 0, 0), rill_infer_in_name(ctx, 1, 0));
  if (!dx) return NULL;
  if (!dy->known)
    rill_meta_unknown(dx);
  else
    rill_meta_set(dx, dy->dtype, &dy->dims, dy->lod_level, 1, 0);
  return NULL;
}

const rill_op_schema rill_schema_dropout_grad = {
    .type = "dropout_grad",
    .doc = "Gradient of dropout: Out@GRAD through the mask (and the upscale factor).",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = dropout_grad_infer,
    .kernel_dtype_slot = 1,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(dropout);
