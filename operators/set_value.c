/* set_value: Out = Input with the strided slice Input[starts:ends:steps] (on `axes`)
 * replaced by a value broadcast to the slice, Paddle's `x[...] = v`. The value is
 * ValueTensor, else the attribute list of `dtype` (fp32_values, int64_values, ...) with
 * dims `shape`. Starts/ends/steps come from StartsTensorList / EndsTensorList /
 * StepsTensorList when given. decrease_axes and none_axes describe how the value's dims
 * line up with the slice (sliced-away and inserted size-1 dims). Usually in place
 * (Out is Input). Out always has Input's shape. */
#include "operators/op_util.h"

#include "operators/set_value.h"

static const rill_slot_schema inputs[] = {
    [SV_IN_INPUT] = {"Input", 0, "tensor to update"},
    [SV_IN_VALUE] = {"ValueTensor", RILL_SLOT_DISPENSABLE, "value assigned to the slice"},
    [SV_IN_STARTS] = {"StartsTensorList", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD |
                                              RILL_SLOT_HOST_DATA,
                      "one-element int tensors overriding starts (read on the host)"},
    [SV_IN_ENDS] = {"EndsTensorList", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD |
                                          RILL_SLOT_HOST_DATA,
                    "one-element int tensors overriding ends (read on the host)"},
    [SV_IN_STEPS] = {"StepsTensorList", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD |
                                            RILL_SLOT_HOST_DATA,
                     "one-element int tensors overriding steps (read on the host)"},
};
static const rill_slot_schema outputs[] = {{"Out", 0, "Input with the slice replaced"}};
static const rill_attr_schema attrs[] = {
    [SV_A_AXES] = {"axes", RILL_ATTR_INTS, RILL_ATTR_REQUIRED, RILL_DEF_EMPTY(RILL_ATTR_INTS),
                   "sliced axes"},
    [SV_A_STARTS] = {"starts", RILL_ATTR_LONGS, 0, RILL_DEF_EMPTY(RILL_ATTR_LONGS), "per axis"},
    [SV_A_ENDS] = {"ends", RILL_ATTR_LONGS, 0, RILL_DEF_EMPTY(RILL_ATTR_LONGS), "per axis"},
    [SV_A_STEPS] = {"steps", RILL_ATTR_LONGS, 0, RILL_DEF_EMPTY(RILL_ATTR_LONGS),
                    "per axis (default 1)"},
    [SV_A_DECREASE] = {"decrease_axes", RILL_ATTR_INTS, 0, RILL_DEF_EMPTY(RILL_ATTR_INTS),
                       "axes indexed by an integer (absent from the value's dims)"},
    [SV_A_NONE] = {"none_axes", RILL_ATTR_INTS, 0, RILL_DEF_EMPTY(RILL_ATTR_INTS),
                   "positions of inserted size-1 dims (None in the index)"},
    [SV_A_DTYPE] = {"dtype", RILL_ATTR_INT, 0, RILL_DEF_INT(RILL_DTYPE_FP32),
                    "dtype of the attribute value list"},
    [SV_A_SHAPE] = {"shape", RILL_ATTR_LONGS, 0, RILL_DEF_EMPTY(RILL_ATTR_LONGS),
                    "dims of the attribute value list"},
    [SV_A_BOOL] = {"bool_values", RILL_ATTR_INTS, 0, RILL_DEF_EMPTY(RILL_ATTR_INTS), "bool value"},
    [SV_A_FP32] = {"fp32_values", RILL_ATTR_FLOATS, 0, RILL_DEF_EMPTY(RILL_ATTR_FLOATS), "float32 value"},
    [SV_A_INT32] = {"int32_values", RILL_ATTR_INTS, 0, RILL_DEF_EMPTY(RILL_ATTR_INTS), "int32 value"},
    [SV_A_INT64] = {"int64_values", RILL_ATTR_LONGS, 0, RILL_DEF_EMPTY(RILL_ATTR_LONGS), "int64 value"},
    [SV_A_FP64] = {"fp64_values", RILL_ATTR_FLOAT64S, 0, RILL_DEF_EMPTY(RILL_ATTR_FLOAT64S),
                   "float64 value"},
};

static rill_status *set_value_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, SV_IN_INPUT, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input Input and output Out");
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  const rill_attr_value *axes = &ctx->attrs[SV_A_AXES];
  for (size_t i = 0; i < axes->n; i++)
    if (axes->list.ints[i] < 0 || axes->list.ints[i] >= x->dims.n)
      return rill_infer_error(ctx, "attribute axes holds %d, outside input Input (%s)'s rank %d",
                              (int)axes->list.ints[i], rill_infer_in_name(ctx, SV_IN_INPUT, 0),
                              (int)x->dims.n);
  for (int s = SV_IN_STARTS; s <= SV_IN_STEPS; s++) {
    size_t n = ctx->nin[s];
    const rill_attr_value *a = &ctx->attrs[SV_A_STARTS + (s - SV_IN_STARTS)];
    if ((n > 0 && n != axes->n) || (n == 0 && a->n != axes->n && !(s == SV_IN_STEPS && a->n == 0)))
      return rill_infer_error(ctx, "%s / attribute %s must give one value per axis (%zu axes)",
                              ctx->schema->inputs[s].name, ctx->schema->attrs[SV_A_STARTS + (s - SV_IN_STARTS)].name,
                              axes->n);
  }
  const rill_tensor_meta *v = rill_infer_in(ctx, SV_IN_VALUE, 0);
  if (v && v->known && v->dtype != x->dtype)
    return rill_infer_error(ctx, "input ValueTensor (%s) is %s but input Input (%s) is %s",
                            rill_infer_in_name(ctx, SV_IN_VALUE, 0), rill_dtype_name(v->dtype),
                            rill_infer_in_name(ctx, SV_IN_INPUT, 0), rill_dtype_name(x->dtype));
  rill_meta_set(out, x->dtype, &x->dims, x->lod_level, SV_IN_INPUT, 0);
  return NULL;
}

const rill_op_schema rill_schema_set_value = {
    .type = "set_value",
    .doc = "Out = Input with Input[starts:ends:steps] (on axes) set to a broadcast value.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = set_value_infer,
    .grad = NULL,
    .kernel_dtype_slot = SV_IN_INPUT,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(set_value);
