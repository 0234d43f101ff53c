/* strided_slice: Out = Input[starts:ends:strides] along `axes` by Paddle 1.8.5's rules
 * (operators/tensor_ops.h, rill_strided_plan), with decrease_axis removed. Bounds and
 * strides may come from 1-D int tensors (StartsTensor, ...) or lists of one-element
 * tensors (StartsTensorList, ...). strided_slice_grad scatters Out@GRAD back into a zeroed
 * Input@GRAD. */
#include "operators/tensor_ops.h"

#include <stdio.h>

enum { IN_INPUT, IN_STARTS_T, IN_ENDS_T, IN_STRIDES_T, IN_STARTS_L, IN_ENDS_L, IN_STRIDES_L };

#define BOUND_SLOTS                                                                          \
  [IN_STARTS_T] = {"StartsTensor", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_HOST_DATA | RILL_SLOT_INFER_DATA, \
                   "1-D int32/int64 tensor of starts, one per axis; wins over the others"},  \
  [IN_ENDS_T] = {"EndsTensor", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_HOST_DATA | RILL_SLOT_INFER_DATA, \
                 "1-D int32/int64 tensor of ends, one per axis; wins over the others"},      \
  [IN_STRIDES_T] = {"StridesTensor", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_HOST_DATA | RILL_SLOT_INFER_DATA, \
                    "1-D int32/int64 tensor of strides, one per axis; wins over the others"}, \
  [IN_STARTS_L] = {"StartsTensorList",                                                       \
                   RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_HOST_DATA | RILL_SLOT_INFER_DATA, \
                   "one-element int32/int64 tensors, one start per axis"},                   \
  [IN_ENDS_L] = {"EndsTensorList",                                                           \
                 RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_HOST_DATA | RILL_SLOT_INFER_DATA, \
                 "one-element int32/int64 tensors, one end per axis"},                       \
  [IN_STRIDES_L] = {"StridesTensorList",                                                     \
                    RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_HOST_DATA | RILL_SLOT_INFER_DATA, \
                    "one-element int32/int64 tensors, one stride per axis"}

static const rill_slot_schema inputs[] = {
    [IN_INPUT] = {"Input", 0, "the tensor to slice"},
    BOUND_SLOTS,
};
static const rill_slot_schema outputs[] = {{"Out", 0, "the strided slice"}};
static const rill_attr_schema attrs[] = {
    {"axes", RILL_ATTR_INTS, RILL_ATTR_REQUIRED, RILL_DEF_EMPTY(RILL_ATTR_INTS),
     "axes sliced"},
    {"starts", RILL_ATTR_INTS, 0, RILL_DEF_EMPTY(RILL_ATTR_INTS),
     "first index per axis (negative from the end)"},
    {"ends", RILL_ATTR_INTS, 0, RILL_DEF_EMPTY(RILL_ATTR_INTS),
     "end per axis (negative from the end; -1 with a negative stride: through index 0)"},
    {"strides", RILL_ATTR_INTS, 0, RILL_DEF_EMPTY(RILL_ATTR_INTS),
     "step per axis, not 0 (negative: backwards)"},
    {"infer_flags", RILL_ATTR_INTS, 0, RILL_DEF_EMPTY(RILL_ATTR_INTS),
     "-1 for an axis whose bounds are known only at run time"},
    {"decrease_axis", RILL_ATTR_INTS, 0, RILL_DEF_EMPTY(RILL_ATTR_INTS),
     "axes (of extent 1 after slicing) removed from Out"},
};


static bool infer_plan(rill_infer_ctx *ctx, const rill_dims *in, rill_strided_plan *plan,
                       char *err, size_t errlen) {
  bool runtime = ctx->in_tensors != NULL;
  rill_slice_bounds b[3];
  static const int attr_of[] = {RILL_STRIDED_SLICE_ATTR_STARTS, RILL_STRIDED_SLICE_ATTR_ENDS,
                                RILL_STRIDED_SLICE_ATTR_STRIDES};
  for (int k = 0; k < 3; k++) {
    b[k] = (rill_slice_bounds){
        .tensor_present = rill_infer_in(ctx, IN_STARTS_T + k, 0) != NULL,
        .tensor = rill_infer_tensor(ctx, IN_STARTS_T + k, 0),
        .list = runtime ? ctx->in_tensors[IN_STARTS_L + k] : NULL,
        .nlist = ctx->nin[IN_STARTS_L + k],
        .attr = &ctx->attrs[attr_of[k]],
    };
  }
  return rill_strided_plan_make(in, &ctx->attrs[RILL_STRIDED_SLICE_ATTR_AXES], &b[0], &b[1],
                                &b[2], &ctx->attrs[RILL_STRIDED_SLICE_ATTR_INFER_FLAGS],
                                &ctx->attrs[RILL_STRIDED_SLICE_ATTR_DECREASE_AXIS], runtime,
                                plan, err, errlen);
}

static rill_status *strided_slice_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, IN_INPUT, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input Input and output Out");
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  rill_strided_plan plan;
  char err[256];
  if (!infer_plan(ctx, &x->dims, &plan, err, sizeof err))
    return rill_infer_error(ctx, "input Input (%s): %s", rill_infer_in_name(ctx, IN_INPUT, 0),
                            err);
  rill_meta_set(out, x->dtype, &plan.out, 0, -1, -1);
  return NULL;
}

static rill_status *strided_slice_maker(rill_grad_ctx *ctx) {
  if (rill_grad_none_wanted(ctx, "Input")) return NULL;
  rill_op_desc *op;
  RILL_TRY(rill_grad_begin(ctx, "strided_slice_grad", &op));
  for (size_t i = 0; i < RILL_COUNTOF(inputs); i++)
    RILL_TRY(rill_grad_forward(ctx, op, inputs[i].name));
  RILL_TRY(rill_grad_of_output(ctx, op, "Out"));
  RILL_TRY(rill_grad_of_input(ctx, op, "Input"));
  return NULL;
}

const rill_op_schema rill_schema_strided_slice = {
    .type = "strided_slice",
    .doc = "Out = Input[starts:ends:strides] along axes (Paddle 1.8.5's rules), "
           "decrease_axis removed.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_INFER_READS_DATA,
    .infer = strided_slice_infer,
    .grad = strided_slice_maker,
    .kernel_dtype_slot = IN_INPUT,
    .dtype_attr = -1,
};

enum { G_DOUT = 7 };
static const rill_slot_schema grad_inputs[] = {
    [IN_INPUT] = {"Input", 0, "the forward input (only its shape is read)"},
    BOUND_SLOTS,
    [G_DOUT] = {"Out@GRAD", 0, "gradient of Out"},
};
static const rill_slot_schema grad_outputs[] = {
    {"Input@GRAD", RILL_SLOT_DISPENSABLE, "zeros with Out@GRAD at the sliced elements"}};

static rill_status *strided_slice_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, IN_INPUT, 0);
  const rill_tensor_meta *dout = rill_infer_in(ctx, G_DOUT, 0);
  rill_tensor_meta *dx = rill_infer_out(ctx, 0, 0);
  if (!x || !dout) return rill_infer_error(ctx, "needs inputs Input and Out@GRAD");
  if (!dx) return NULL;
  if (!x->known || !dout->known) {
    rill_meta_unknown(dx);
    return NULL;
  }
  rill_strided_plan plan;
  char err[256];
  if (!infer_plan(ctx, &x->dims, &plan, err, sizeof err))
    return rill_infer_error(ctx, "input Input (%s): %s", rill_infer_in_name(ctx, IN_INPUT, 0),
                            err);
  return rill_slice_grad_meta(ctx, IN_INPUT, G_DOUT, &plan.out, false);
}

const rill_op_schema rill_schema_strided_slice_grad = {
    .type = "strided_slice_grad",
    .doc = "Input@GRAD = zeros of Input's shape with Out@GRAD at the elements "
           "strided_slice read.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_INFER_READS_DATA,
    .infer = strided_slice_grad_infer,
    .grad = NULL,
    .kernel_dtype_slot = G_DOUT,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(strided_slice);
