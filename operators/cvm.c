/* cvm (continuous_value_model): X [N, D] rows start with two continuous values, show and
 * click. With use_cvm, Y [N, D] is X with those two replaced by log(show + 1) and
 * log(click + 1) - log(show + 1); without, Y [N, D - 2] is X without them. Y keeps X's
 * LoD. CVM holds the show/click pair [., 2] per instance (X without LoD) or per sequence
 * of X's first LoD level; the forward pass does not read it.
 * cvm_grad, as Paddle defines it: dX's columns from 2 on are dY's matching columns
 * (their true derivative), and dX's first two columns of each row are its CVM pair (the
 * row's, or its sequence's), not a derivative. */
#include "operators/nn.h"

static const rill_slot_schema inputs[] = {
    {"X", 0, "[N, D] rows of show, click, then D - 2 values"},
    {"CVM", RILL_SLOT_NO_GRAD, "[N or sequences, 2] show and click, written into X@GRAD"},
};
static const rill_slot_schema outputs[] = {{"Y", 0, "[N, D] with use_cvm, else [N, D - 2]"}};
static const rill_attr_schema attrs[] = {
    {"use_cvm", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(true),
     "keep the two columns as log-transformed show and click, else drop them"},
};

/* X and CVM: one float dtype, both 2-D, X at least 2 columns, CVM exactly 2. */
static rill_status *cvm_check(rill_infer_ctx *ctx, const rill_tensor_meta *x,
                              const rill_tensor_meta *c) {
  char a[RILL_DIMS_STR_MAX];
  const char *xn = rill_infer_in_name(ctx, 0, 0), *cn = rill_infer_in_name(ctx, 1, 0);
  if (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input X (%s) is %s, expected float32 or float64", xn,
                            rill_dtype_name(x->dtype));
  if (x->dims.n != 2 || (x->dims.d[1] >= 0 && x->dims.d[1] < 2))
    return rill_infer_error(ctx, "input X (%s) has shape %s, expected [N, D] with D >= 2", xn,
                            rill_dims_str(&x->dims, a, sizeof a));
  if (c->dtype != x->dtype)
    return rill_infer_error(ctx, "input CVM (%s) is %s, expected X (%s)'s %s", cn,
                            rill_dtype_name(c->dtype), xn, rill_dtype_name(x->dtype));
  if (c->dims.n != 2 || (c->dims.d[1] >= 0 && c->dims.d[1] != 2))
    return rill_infer_error(ctx, "input CVM (%s) has shape %s, expected [N, 2]", cn,
                            rill_dims_str(&c->dims, a, sizeof a));
  return NULL;
}

static rill_status *cvm_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *c = rill_infer_in(ctx, 1, 0);
  rill_tensor_meta *y = rill_infer_out(ctx, 0, 0);
  if (!x || !c || !y) return rill_infer_error(ctx, "needs inputs X and CVM and output Y");
  if (!x->known || !c->known) {
    rill_meta_unknown(y);
    return NULL;
  }
  RILL_TRY(cvm_check(ctx, x, c));
  int64_t d = x->dims.d[1];
  rill_dims yd = {.n = 2, .d = {x->dims.d[0], d < 0 || ctx->attrs[0].v.b ? d : d - 2}};
  rill_meta_set(y, x->dtype, &yd, x->lod_level, 0, 0);
  return NULL;
}

static rill_status *cvm_maker(rill_grad_ctx *ctx) {
  static const char *const fwd[] = {"X", "CVM"};
  static const char *const gout[] = {"Y"};
  static const char *const gin[] = {"X"};
  return rill_grad_emit(ctx, NULL, fwd, RILL_COUNTOF(fwd), gout, RILL_COUNTOF(gout), gin,
                        RILL_COUNTOF(gin));
}

const rill_op_schema rill_schema_cvm = {
    .type = "cvm",
    .doc = "Log-transformed (or dropped) show and click columns of CTR embeddings.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = cvm_infer,
    .grad = cvm_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema grad_inputs[] = {
    {"X", 0, "forward X"},
    {"CVM", 0, "forward CVM"},
    {"Y@GRAD", 0, "gradient of Y"},
};
static const rill_slot_schema grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "X's shape and LoD"},
};

static rill_status *cvm_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *c = rill_infer_in(ctx, 1, 0);
  if (!x || !c || !rill_infer_in(ctx, 2, 0))
    return rill_infer_error(ctx, "needs inputs X, CVM and Y@GRAD");
  if (x->known && c->known) RILL_TRY(cvm_check(ctx, x, c));
  rill_nn_same_meta(ctx, 0, 0);
  return NULL;
}

const rill_op_schema rill_schema_cvm_grad = {
    .type = "cvm_grad",
    .doc = "X@GRAD of cvm: dY's columns, with each row's CVM pair in front.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = cvm_grad_infer,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(cvm);
