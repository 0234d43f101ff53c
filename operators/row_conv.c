/* row_conv: lookahead convolution over time. For each sequence of X (the last LoD level
 * of X [T, D], or each row of a padded X [B, T, D] without LoD) and Filter [k + 1, D]:
 *   Out[t, d] = sum over i in 0..k with t + i inside the sequence of X[t + i, d] * Filter[i, d].
 * row_conv_grad: X@GRAD[t + i] += Out@GRAD[t] * Filter[i], Filter@GRAD[i] += Out@GRAD[t] *
 * X[t + i], over the same pairs. */
#include "operators/nn.h"

static const rill_slot_schema inputs[] = {
    {"X", 0, "[T, D] with LoD, or [B, T, D]"},
    {"Filter", 0, "[future_context_size + 1, D]"},
};
static const rill_slot_schema outputs[] = {{"Out", 0, "X's shape and LoD"}};

static rill_status *rc_check(rill_infer_ctx *ctx, const rill_tensor_meta *x,
                             const rill_tensor_meta *f) {
  char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
  int64_t d = x->dims.n ? x->dims.d[x->dims.n - 1] : -1;
  if ((x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64) ||
      (x->dims.n != 2 && x->dims.n != 3))
    return rill_infer_error(ctx, "input X (%s) is %s %s; it needs float [T, D] with LoD or "
                            "[B, T, D]", rill_infer_in_name(ctx, 0, 0), rill_dtype_name(x->dtype),
                            rill_dims_str(&x->dims, a, sizeof a));
  if (f->dtype != x->dtype || f->dims.n != 2 || (f->dims.d[0] >= 0 && f->dims.d[0] < 1) ||
      (f->dims.d[1] >= 0 && d >= 0 && f->dims.d[1] != d))
    return rill_infer_error(ctx, "input Filter (%s) is %s %s; it needs %s [context + 1, D] "
                            "with X (%s)'s D of %s", rill_infer_in_name(ctx, 1, 0),
                            rill_dtype_name(f->dtype), rill_dims_str(&f->dims, a, sizeof a),
                            rill_dtype_name(x->dtype), rill_infer_in_name(ctx, 0, 0),
                            rill_dims_str(&x->dims, b, sizeof b));
  return NULL;
}

static rill_status *rc_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *f = rill_infer_in(ctx, 1, 0);
  if (!x || !f || !rill_infer_out(ctx, 0, 0))
    return rill_infer_error(ctx, "needs inputs X and Filter and output Out");
  if (x->known && f->known) RILL_TRY(rc_check(ctx, x, f));
  rill_nn_same_meta(ctx, 0, 0);
  return NULL;
}

static rill_status *rc_maker(rill_grad_ctx *ctx) {
  static const char *const fwd[] = {"X", "Filter"};
  static const char *const gout[] = {"Out"};
  static const char *const gin[] = {"X", "Filter"};
  return rill_grad_emit(ctx, NULL, fwd, RILL_COUNTOF(fwd), gout, RILL_COUNTOF(gout), gin,
                        RILL_COUNTOF(gin));
}

const rill_op_schema rill_schema_row_conv = {
    .type = "row_conv",
    .doc = "Lookahead convolution over the future steps of each sequence.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .infer = rc_infer,
    .grad = rc_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema grad_inputs[] = {
    {"X", 0, "forward X"},
    {"Filter", 0, "forward Filter"},
    {"Out@GRAD", 0, "gradient of Out"},
};
static const rill_slot_schema grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "X's shape"},
    {"Filter@GRAD", RILL_SLOT_DISPENSABLE, "Filter's shape"},
};

static rill_status *rc_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *f = rill_infer_in(ctx, 1, 0);
  if (!x || !f || !rill_infer_in(ctx, 2, 0))
    return rill_infer_error(ctx, "needs inputs X, Filter and Out@GRAD");
  if (x->known && f->known) RILL_TRY(rc_check(ctx, x, f));
  rill_nn_same_meta(ctx, 0, 0);
  rill_nn_same_meta(ctx, 1, 1);
  return NULL;
}

const rill_op_schema rill_schema_row_conv_grad = {
    .type = "row_conv_grad",
    .doc = "Gradients of row_conv with respect to X and Filter.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .infer = rc_grad_infer,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(row_conv);
