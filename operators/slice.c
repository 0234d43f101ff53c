/* slice: Out = Input[starts:ends] along `axes` (negative bounds count from the end and
 * are clamped to the extent, as Paddle), with decrease_axis removed. Bounds may come
 * from StartsTensor/EndsTensor (1-D) or StartsTensorList/EndsTensorList (one value each).
 * slice_grad writes Out@GRAD into a zeroed Input@GRAD. */
#include "operators/tensor_ops.h"

enum { IN_INPUT, IN_STARTS_T, IN_ENDS_T, IN_STARTS_L, IN_ENDS_L };

static const rill_slot_schema inputs[] = {
    [IN_INPUT] = {"Input", 0, "the tensor to slice"},
    [IN_STARTS_T] = {"StartsTensor", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_HOST_DATA | RILL_SLOT_INFER_DATA,
                     "1-D int32/int64 tensor of starts, one per axis; wins over the others"},
    [IN_ENDS_T] = {"EndsTensor", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_HOST_DATA | RILL_SLOT_INFER_DATA,
                   "1-D int32/int64 tensor of ends, one per axis; wins over the others"},
    [IN_STARTS_L] = {"StartsTensorList",
                     RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_HOST_DATA | RILL_SLOT_INFER_DATA,
                     "one-element int32/int64 tensors, one start per axis"},
    [IN_ENDS_L] = {"EndsTensorList", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_HOST_DATA | RILL_SLOT_INFER_DATA,
                   "one-element int32/int64 tensors, one end per axis"},
};
static const rill_slot_schema outputs[] = {{"Out", 0, "the slice"}};
static const rill_attr_schema attrs[] = {
    {"axes", RILL_ATTR_INTS, RILL_ATTR_REQUIRED, RILL_DEF_EMPTY(RILL_ATTR_INTS),
                "axes sliced (negative from the end)"},
    {"starts", RILL_ATTR_INTS, 0, RILL_DEF_EMPTY(RILL_ATTR_INTS),
                  "first index per axis (negative from the end, clamped)"},
    {"ends", RILL_ATTR_INTS, 0, RILL_DEF_EMPTY(RILL_ATTR_INTS),
                "one past the last index per axis (negative from the end, clamped)"},
    {"infer_flags", RILL_ATTR_INTS, 0, RILL_DEF_EMPTY(RILL_ATTR_INTS),
                       "-1 for an axis whose bounds are known only at run time"},
    {"decrease_axis", RILL_ATTR_INTS, 0, RILL_DEF_EMPTY(RILL_ATTR_INTS),
                    "axes (of extent 1 after slicing) removed from Out"},
    {"use_mkldnn", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
    {"mkldnn_data_type", RILL_ATTR_STRING, RILL_ATTR_EXTRA, RILL_DEF_STRING("float32"), "ignored"},
};

/* Builds the plan from the infer context (works at compile and run time). */
static bool infer_plan(rill_infer_ctx *ctx, const rill_dims *in, rill_slice_plan *plan, char *err,
                       size_t errlen) {
  bool runtime = ctx->in_tensors != NULL;
  rill_slice_bounds s = {
      .tensor_present = rill_infer_in(ctx, IN_STARTS_T, 0) != NULL,
      .tensor = rill_infer_tensor(ctx, IN_STARTS_T, 0),
      .list = runtime ? ctx->in_tensors[IN_STARTS_L] : NULL,
      .nlist = ctx->nin[IN_STARTS_L],
      .attr = &ctx->attrs[RILL_SLICE_ATTR_STARTS],
  };
  rill_slice_bounds e = {
      .tensor_present = rill_infer_in(ctx, IN_ENDS_T, 0) != NULL,
      .tensor = rill_infer_tensor(ctx, IN_ENDS_T, 0),
      .list = runtime ? ctx->in_tensors[IN_ENDS_L] : NULL,
      .nlist = ctx->nin[IN_ENDS_L],
      .attr = &ctx->attrs[RILL_SLICE_ATTR_ENDS],
  };
  return rill_slice_plan_make(in, &ctx->attrs[RILL_SLICE_ATTR_AXES], &s, &e, &ctx->attrs[RILL_SLICE_ATTR_INFER_FLAGS],
                              &ctx->attrs[RILL_SLICE_ATTR_DECREASE_AXIS], runtime, plan, err, errlen);
}

static rill_status *slice_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, IN_INPUT, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input Input and output Out");
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  rill_slice_plan plan;
  char err[256];
  if (!infer_plan(ctx, &x->dims, &plan, err, sizeof err))
    return rill_infer_error(ctx, "input Input (%s): %s", rill_infer_in_name(ctx, IN_INPUT, 0), err);
  rill_meta_set(out, x->dtype, &plan.out, x->lod_level, IN_INPUT, 0);
  return NULL;
}

/* slice's gradient, as Paddle: slice_grad(Input, bound tensors, Out@GRAD) -> Input@GRAD. */
static rill_status *slice_maker(rill_grad_ctx *ctx) {
  if (rill_grad_none_wanted(ctx, "Input")) return NULL;
  rill_op_desc *op;
  RILL_TRY(rill_grad_begin(ctx, "slice_grad", &op));
  for (size_t i = 0; i < RILL_COUNTOF(inputs); i++) RILL_TRY(rill_grad_forward(ctx, op, inputs[i].name));
  RILL_TRY(rill_grad_of_output(ctx, op, "Out"));
  RILL_TRY(rill_grad_of_input(ctx, op, "Input"));
  return NULL;
}

const rill_op_schema rill_schema_slice = {
    .type = "slice",
    .doc = "Out = Input[starts:ends] along axes, decrease_axis removed.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_INFER_READS_DATA,
    .infer = slice_infer,
    .grad = slice_maker,
    .kernel_dtype_slot = IN_INPUT,
    .dtype_attr = -1,
};

enum { G_DOUT = 5 };
static const rill_slot_schema grad_inputs[] = {
    [IN_INPUT] = {"Input", RILL_SLOT_ANY_PLACE, "the forward input (only its shape is read)"},
    [IN_STARTS_T] = {"StartsTensor", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_HOST_DATA | RILL_SLOT_INFER_DATA, "as slice"},
    [IN_ENDS_T] = {"EndsTensor", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_HOST_DATA | RILL_SLOT_INFER_DATA, "as slice"},
    [IN_STARTS_L] = {"StartsTensorList", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_HOST_DATA | RILL_SLOT_INFER_DATA,
                     "as slice"},
    [IN_ENDS_L] = {"EndsTensorList", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_HOST_DATA | RILL_SLOT_INFER_DATA,
                   "as slice"},
    [G_DOUT] = {"Out@GRAD", 0, "gradient of Out"},
};
static const rill_slot_schema grad_outputs[] = {
    {"Input@GRAD", RILL_SLOT_DISPENSABLE, "zeros with Out@GRAD in the sliced box"}};

static rill_status *slice_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, IN_INPUT, 0), *dout = rill_infer_in(ctx, G_DOUT, 0);
  rill_tensor_meta *dx = rill_infer_out(ctx, 0, 0);
  if (!x || !dout) return rill_infer_error(ctx, "needs inputs Input and Out@GRAD");
  if (!dx) return NULL;
  if (!x->known || !dout->known) {
    rill_meta_unknown(dx);
    return NULL;
  }
  rill_slice_plan plan;
  char err[256];
  if (!infer_plan(ctx, &x->dims, &plan, err, sizeof err))
    return rill_infer_error(ctx, "input Input (%s): %s", rill_infer_in_name(ctx, IN_INPUT, 0), err);
  return rill_slice_grad_meta(ctx, IN_INPUT, G_DOUT, &plan.out, true);
}

const rill_op_schema rill_schema_slice_grad = {
    .type = "slice_grad",
    .doc = "Input@GRAD = zeros of Input's shape with Out@GRAD written into the sliced box.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_INFER_READS_DATA,
    .infer = slice_grad_infer,
    .grad = NULL,
    .kernel_dtype_slot = G_DOUT,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(slice);
