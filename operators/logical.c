/* logical_and, logical_or, logical_xor (X, Y -> Out) and logical_not (X -> Out): bool
 * tensors elementwise, as Paddle 1.8's logical ops (X and Y of one shape). */
#include "operators/op_util.h"

static const rill_slot_schema bin_inputs[] = {
    {"X", RILL_SLOT_NO_GRAD, "bool tensor"},
    {"Y", RILL_SLOT_NO_GRAD, "bool tensor of X's shape"},
};
static const rill_slot_schema not_inputs[] = {{"X", RILL_SLOT_NO_GRAD, "bool tensor"}};
static const rill_slot_schema outputs[] = {{"Out", 0, "bool tensor of X's shape"}};

static rill_status *logical_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  const rill_tensor_meta *y = ctx->schema->ninputs > 1 ? rill_infer_in(ctx, 1, 0) : NULL;
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !out || (ctx->schema->ninputs > 1 && !y))
    return rill_infer_error(ctx, "needs input%s and output Out",
                            ctx->schema->ninputs > 1 ? "s X, Y" : " X");
  if (!x->known || (y && !y->known)) {
    rill_meta_unknown(out);
    return NULL;
  }
  for (size_t s = 0; s < ctx->schema->ninputs; s++) {
    const rill_tensor_meta *m = rill_infer_in(ctx, s, 0);
    if (m->dtype != RILL_DTYPE_BOOL)
      return rill_infer_error(ctx, "input %s (%s) is %s, expected bool",
                              ctx->schema->inputs[s].name, rill_infer_in_name(ctx, s, 0),
                              rill_dtype_name(m->dtype));
  }
  if (y && !rill_dims_equal(&x->dims, &y->dims)) {
    bool unknown = false;
    for (int k = 0; k < x->dims.n && x->dims.n == y->dims.n; k++)
      unknown = unknown || x->dims.d[k] < 0 || y->dims.d[k] < 0;
    if (!unknown || x->dims.n != y->dims.n) {
      char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
      return rill_infer_error(ctx, "input X (%s) has shape %s but input Y (%s) has shape %s",
                              rill_infer_in_name(ctx, 0, 0), rill_dims_str(&x->dims, a, sizeof a),
                              rill_infer_in_name(ctx, 1, 0), rill_dims_str(&y->dims, b, sizeof b));
    }
  }
  rill_meta_set(out, RILL_DTYPE_BOOL, &x->dims, x->lod_level, 0, 0);
  return NULL;
}

#define LOGICAL_SCHEMA(NAME, INPUTS, DOC)                                                  \
  const rill_op_schema rill_schema_##NAME = {                                             \
      .type = #NAME,                                                                      \
      .doc = DOC,                                                                         \
      .inputs = INPUTS,                                                                   \
      .ninputs = RILL_COUNTOF(INPUTS),                                                    \
      .outputs = outputs,                                                                 \
      .noutputs = RILL_COUNTOF(outputs),                                                  \
      .attrs = NULL,                                                                      \
      .nattrs = 0,                                                                        \
      .flags = 0,                                                                         \
      .infer = logical_infer,                                                             \
      .grad = NULL,                                                                       \
      .kernel_dtype_slot = 0,                                                             \
      .dtype_attr = -1,                                                                   \
  };

LOGICAL_SCHEMA(logical_and, bin_inputs, "Out = X and Y (bool, elementwise).")
LOGICAL_SCHEMA(logical_or, bin_inputs, "Out = X or Y (bool, elementwise).")
LOGICAL_SCHEMA(logical_xor, bin_inputs, "Out = X xor Y (bool, elementwise).")
LOGICAL_SCHEMA(logical_not, not_inputs, "Out = not X (bool, elementwise).")

RILL_OP_TABLE_CHECKS(logical);
