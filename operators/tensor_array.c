/* Tensor arrays (Paddle's LOD_TENSOR_ARRAY variables): write_to_array, read_from_array
 * and lod_array_length. An array variable holds a list of LoD tensors; it starts empty
 * and grows when an item past its end is written. */
#include "operators/op_util.h"

static const rill_slot_schema write_inputs[] = {
    {"X", 0, "the tensor to store (copied; its LoD too)"},
    {"I", RILL_SLOT_NO_GRAD, "int64 tensor of one element: the index to write"},
};
static const rill_slot_schema write_outputs[] = {
    {"Out", 0, "the array; grown to I + 1 items when shorter"},
};

const rill_op_schema rill_schema_write_to_array = {
    .type = "write_to_array",
    .doc = "Out[I] = a copy of X, Out a tensor array grown to I + 1 items when shorter (the "
           "items between stay empty). I is an int64 (or int32) tensor of one element.",
    .inputs = write_inputs,
    .ninputs = RILL_COUNTOF(write_inputs),
    .outputs = write_outputs,
    .noutputs = RILL_COUNTOF(write_outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = NULL,
    .grad = NULL,
    .kernel_dtype_slot = -1,
    .dtype_attr = -1,
};


static const rill_slot_schema read_inputs[] = {
    {"X", 0, "the tensor array"},
    {"I", RILL_SLOT_NO_GRAD, "int64 tensor of one element: the index to read"},
};
static const rill_slot_schema read_outputs[] = {
    {"Out", 0, "a copy of X[I] (its LoD too)"},
};

const rill_op_schema rill_schema_read_from_array = {
    .type = "read_from_array",
    .doc = "Out = a copy of X[I], X a tensor array, I an int64 (or int32) tensor of one "
           "element; an index past the array's end is an error naming the array.",
    .inputs = read_inputs,
    .ninputs = RILL_COUNTOF(read_inputs),
    .outputs = read_outputs,
    .noutputs = RILL_COUNTOF(read_outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = NULL,
    .grad = NULL,
    .kernel_dtype_slot = -1,
    .dtype_attr = -1,
};


static const rill_slot_schema length_inputs[] = {
    {"X", RILL_SLOT_NO_GRAD, "the tensor array"},
};
static const rill_slot_schema length_outputs[] = {
    {"Out", 0, "int64 tensor of shape [1]: the number of items"},
};

static rill_status *length_infer(rill_infer_ctx *ctx) {
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!out) return rill_infer_error(ctx, "needs output Out");
  rill_dims d = {.n = 1, .d = {1}};
  rill_meta_set(out, RILL_DTYPE_INT64, &d, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_lod_array_length = {
    .type = "lod_array_length",
    .doc = "Out (int64, [1]) = the number of items of the tensor array X (layers.array_length).",
    .inputs = length_inputs,
    .ninputs = RILL_COUNTOF(length_inputs),
    .outputs = length_outputs,
    .noutputs = RILL_COUNTOF(length_outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = 0,
    .infer = length_infer,
    .grad = NULL,
    .kernel_dtype_slot = -1,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(tensor_array);
