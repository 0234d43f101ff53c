/* less_than, less_equal, greater_than, greater_equal, equal, not_equal: Out (bool) =
 * X op Y elementwise with Paddle's broadcasting (operators/elementwise.h, `axis`). */
#include "operators/elementwise.h"
#include "operators/op_util.h"

static const rill_slot_schema inputs[] = {
    {"X", RILL_SLOT_NO_GRAD, "left operand"},
    {"Y", RILL_SLOT_NO_GRAD, "right operand, broadcast against X"},
};
static const rill_slot_schema outputs[] = {{"Out", 0, "bool tensor of the broadcast shape"}};
static const rill_attr_schema attrs[] = {
    {"axis", RILL_ATTR_INT, 0, RILL_DEF_INT(-1), "where the lower-rank operand aligns (-1: trailing)"},
    {"force_cpu", RILL_ATTR_BOOLEAN, RILL_ATTR_ON_HOST, RILL_DEF_BOOL(false),
     "run on the host whatever the executor's place, Out staying there"},
};

static rill_status *compare_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *y = rill_infer_in(ctx, 1, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !y || !out) return rill_infer_error(ctx, "needs inputs X, Y and output Out");
  if (!x->known || !y->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  const char *xn = rill_infer_in_name(ctx, 0, 0), *yn = rill_infer_in_name(ctx, 1, 0);
  if (x->dtype != y->dtype)
    return rill_infer_error(ctx, "input X (%s) is %s but input Y (%s) is %s", xn,
                            rill_dtype_name(x->dtype), yn, rill_dtype_name(y->dtype));
  rill_dims xa, ya, od;
  char why[160];
  if (!rill_elementwise_broadcast(&x->dims, &y->dims, ctx->attrs[RILL_EQUAL_ATTR_AXIS].v.i, &xa, &ya, &od, why,
                                  sizeof why)) {
    char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
    return rill_infer_error(ctx, "input X (%s) of shape %s does not broadcast with input Y (%s) "
                            "of shape %s: %s", xn, rill_dims_str(&x->dims, a, sizeof a), yn,
                            rill_dims_str(&y->dims, b, sizeof b), why);
  }
  bool x_is_out = rill_dims_equal(&x->dims, &od);
  rill_meta_set(out, RILL_DTYPE_BOOL, &od, x_is_out ? x->lod_level : 0, x_is_out ? 0 : -1,
                x_is_out ? 0 : -1);
  return NULL;
}

#define COMPARE_SCHEMA(NAME, DOC)                                                         \
  const rill_op_schema rill_schema_##NAME = {                                            \
      .type = #NAME,                                                                     \
      .doc = DOC,                                                                        \
      .inputs = inputs,                                                                  \
      .ninputs = RILL_COUNTOF(inputs),                                                   \
      .outputs = outputs,                                                                \
      .noutputs = RILL_COUNTOF(outputs),                                                 \
      .attrs = attrs,                                                                    \
      .nattrs = RILL_COUNTOF(attrs),                                                     \
      .flags = 0,                                                                        \
      .infer = compare_infer,                                                            \
      .grad = NULL,                                                                      \
      .kernel_dtype_slot = 0,                                                            \
      .dtype_attr = -1,                                                                  \
  };

COMPARE_SCHEMA(less_than, "Out = X < Y (bool, broadcast).")
COMPARE_SCHEMA(less_equal, "Out = X <= Y (bool, broadcast).")
COMPARE_SCHEMA(greater_than, "Out = X > Y (bool, broadcast).")
COMPARE_SCHEMA(greater_equal, "Out = X >= Y (bool, broadcast).")
COMPARE_SCHEMA(equal, "Out = X == Y (bool, broadcast).")
COMPARE_SCHEMA(not_equal, "Out = X != Y (bool, broadcast).")

RILL_OP_TABLE_CHECKS(compare);
