/* add_position_encoding: Out = alpha * X + beta * PE, PE the sinusoid position encoding
 * of Paddle 1.8.5 (for position j of each sequence and k < P/2: sin(j / 10000^(k /
 * (P/2 - 1))) in column k and the cosine in column P/2 + k; j / 10000 when P is 2). X is
 * [N, T, P] (every sequence T long) or a level-1 LoD tensor [total, P]; P even.
 * add_position_encoding_grad: X@GRAD = alpha * Out@GRAD. */
#include "operators/op_util.h"

#include "operators/math_grad.h"

static const rill_slot_schema inputs[] = {{"X", 0, "[N, T, P], or [total, P] with one LoD level"}};
static const rill_slot_schema outputs[] = {{"Out", 0, "X's shape and LoD"}};
static const rill_attr_schema attrs[] = {
    {"alpha", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1.0f), "factor of X, >= 0"},
    {"beta", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1.0f), "factor of the encoding, >= 0"},
};

static rill_status *ape_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input X and output Out");
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  int64_t p = x->dims.n ? x->dims.d[x->dims.n - 1] : -1;
  if ((x->dims.n != 2 && x->dims.n != 3) || (p >= 0 && p % 2 != 0))
    return rill_infer_error(ctx, "input X (%s) must be [N, T, P] or a LoD [total, P] with P "
                            "even (rank %d, P %lld)", rill_infer_in_name(ctx, 0, 0),
                            (int)x->dims.n, (long long)p);
  double alpha = ctx->attrs[RILL_ADD_POSITION_ENCODING_ATTR_ALPHA].v.f;
  double beta = ctx->attrs[RILL_ADD_POSITION_ENCODING_ATTR_BETA].v.f;
  if (!(alpha >= 0) || !(beta >= 0)) /* Paddle's rule */
    return rill_infer_error(ctx, "attributes alpha %g and beta %g must not be negative", alpha,
                            beta);
  rill_meta_set(out, x->dtype, &x->dims, x->lod_level, 0, 0);
  return NULL;
}

static rill_status *ape_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit(ctx, NULL, RILL_NAMES("X"), RILL_NAMES("Out"), RILL_NAMES("X"));
}

const rill_op_schema rill_schema_add_position_encoding = {
    .type = "add_position_encoding",
    .doc = "Out = alpha * X + beta * the sinusoid encoding of each row's position in its "
           "sequence.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = ape_infer,
    .grad = ape_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema grad_inputs[] = {{"X", 0, "forward X (its shape and LoD)"},
                                               {"Out@GRAD", 0, "gradient of Out"}};
static const rill_slot_schema grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "alpha * Out@GRAD"}};

static rill_status *ape_grad_infer(rill_infer_ctx *ctx) {
  if (!rill_infer_in(ctx, 0, 0)) return rill_infer_error(ctx, "needs input X");
  if (rill_infer_out(ctx, 0, 0)) rill_grad_infer_like(ctx, 0, 0);
  return NULL;
}

const rill_op_schema rill_schema_add_position_encoding_grad = {
    .type = "add_position_encoding_grad",
    .doc = "X@GRAD = alpha * Out@GRAD.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = ape_grad_infer,
    .grad = NULL,
    .kernel_dtype_slot = 1,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(position_encoding);
