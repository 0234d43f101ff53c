/* assign_value: Out = a constant tensor of `shape` and `dtype` whose elements are stored
 * in the op itself, in the value list of its dtype (fp32_values, int32_values,
 * int64_values, bool_values, fp64_values). Paddle writes it for numpy initializers and
 * constant lists in dygraph-to-static programs. */
#include "operators/op_util.h"

#include "framework/data/tensor.h"


static const rill_slot_schema outputs[] = {{"Out", 0, "the constant tensor"}};
static const rill_attr_schema attrs[] = {
    {"shape", RILL_ATTR_INTS, RILL_ATTR_REQUIRED, RILL_DEF_EMPTY(RILL_ATTR_INTS),
                 "output shape"},
    {"dtype", RILL_ATTR_INT, 0, RILL_DEF_INT(RILL_DTYPE_FP32),
                 "output dtype: bool, int32, int64, float32 or float64"},
    {"fp32_values", RILL_ATTR_FLOATS, 0, RILL_DEF_EMPTY(RILL_ATTR_FLOATS),
                "values when dtype is float32"},
    {"int32_values", RILL_ATTR_INTS, 0, RILL_DEF_EMPTY(RILL_ATTR_INTS),
                 "values when dtype is int32"},
    {"int64_values", RILL_ATTR_LONGS, 0, RILL_DEF_EMPTY(RILL_ATTR_LONGS),
                 "values when dtype is int64"},
    {"bool_values", RILL_ATTR_INTS, 0, RILL_DEF_EMPTY(RILL_ATTR_INTS),
                "values when dtype is bool (0 or not)"},
    {"fp64_values", RILL_ATTR_FLOAT64S, 0, RILL_DEF_EMPTY(RILL_ATTR_FLOAT64S),
                "values when dtype is float64 (Paddle 2.5+)"},
};

/* The attribute holding the values of `dtype`, or -1 when assign_value has none. */
static int values_attr(int32_t dtype) {
  switch (dtype) {
  case RILL_DTYPE_FP32: return RILL_ASSIGN_VALUE_ATTR_FP32_VALUES;
  case RILL_DTYPE_INT32: return RILL_ASSIGN_VALUE_ATTR_INT32_VALUES;
  case RILL_DTYPE_INT64: return RILL_ASSIGN_VALUE_ATTR_INT64_VALUES;
  case RILL_DTYPE_BOOL: return RILL_ASSIGN_VALUE_ATTR_BOOL_VALUES;
  case RILL_DTYPE_FP64: return RILL_ASSIGN_VALUE_ATTR_FP64_VALUES;
  default: return -1;
  }
}

static rill_status *assign_value_infer(rill_infer_ctx *ctx) {
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!out) return rill_infer_error(ctx, "needs output Out");
  int32_t dtype = ctx->attrs[RILL_ASSIGN_VALUE_ATTR_DTYPE].v.i;
  int va = values_attr(dtype);
  if (va < 0)
    return rill_infer_error(ctx, "attribute dtype %d is not bool, int32, int64, float32 or "
                            "float64", (int)dtype);
  const rill_attr_value *s = &ctx->attrs[RILL_ASSIGN_VALUE_ATTR_SHAPE];
  if (s->n > RILL_MAX_DIMS)
    return rill_infer_error(ctx, "attribute shape has %zu dims, more than %d", s->n, RILL_MAX_DIMS);
  rill_dims d = {.n = (int32_t)s->n};
  for (size_t i = 0; i < s->n; i++) {
    if (s->list.ints[i] < 0)
      return rill_infer_error(ctx, "attribute shape has a negative extent %d for output Out (%s)",
                              (int)s->list.ints[i], rill_infer_out_name(ctx, 0, 0));
    d.d[i] = s->list.ints[i];
  }
  int64_t numel;
  if (!rill_dims_numel(&d, INT64_MAX, &numel) || (size_t)numel != ctx->attrs[va].n) {
    char b[RILL_DIMS_STR_MAX];
    return rill_infer_error(ctx, "attribute shape %s does not match the %zu values of %s for "
                            "output Out (%s)", rill_dims_str(&d, b, sizeof b), ctx->attrs[va].n,
                            ctx->schema->attrs[va].name, rill_infer_out_name(ctx, 0, 0));
  }
  rill_meta_set(out, (rill_dtype)dtype, &d, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_assign_value = {
    .type = "assign_value",
    .doc = "Out = a tensor of `shape` and `dtype` holding the op's own value list.",
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = assign_value_infer,
    .grad = NULL,
    .kernel_dtype_slot = -1,
    .dtype_attr = RILL_ASSIGN_VALUE_ATTR_DTYPE,
};

RILL_OP_TABLE_CHECKS(assign_value);
