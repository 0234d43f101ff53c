/* fill_constant_batch_size_like: Out = a tensor of `shape` filled with a constant, except
 * that dim output_dim_idx takes Input's dim input_dim_idx (the batch size). With a LoD
 * Input and input_dim_idx 0, the batch is the number of sequences (Paddle's rule). */
#include "operators/tensor_ops.h"


static const rill_slot_schema inputs[] = {{"Input", RILL_SLOT_NO_GRAD | RILL_SLOT_ANY_PLACE, "tensor giving the batch size"}};
static const rill_slot_schema outputs[] = {{"Out", 0, "the filled tensor"}};
static const rill_attr_schema attrs[] = {
    {"shape", RILL_ATTR_INTS, RILL_ATTR_REQUIRED, RILL_DEF_EMPTY(RILL_ATTR_INTS),
                 "output shape (dim output_dim_idx is replaced)"},
    {"value", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.0f), "fill value"},
    {"str_value", RILL_ATTR_STRING, 0, RILL_DEF_STRING(""),
                     "fill value as text; wins over value when set"},
    {"dtype", RILL_ATTR_INT, 0, RILL_DEF_INT(RILL_DTYPE_FP32), "output dtype"},
    {"input_dim_idx", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "dim of Input to copy"},
    {"output_dim_idx", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "dim of Out to set"},
    {"force_cpu", RILL_ATTR_BOOLEAN, RILL_ATTR_ON_HOST, RILL_DEF_BOOL(false),
     "run on the host whatever the executor's place, Out staying there"},
};

static rill_status *fcbsl_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *in = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!in || !out) return rill_infer_error(ctx, "needs input Input and output Out");
  int32_t dtype = ctx->attrs[RILL_FILL_CONSTANT_BATCH_SIZE_LIKE_ATTR_DTYPE].v.i;
  if (dtype != RILL_DTYPE_FP32 && dtype != RILL_DTYPE_FP64 && dtype != RILL_DTYPE_INT32 &&
      dtype != RILL_DTYPE_INT64 && dtype != RILL_DTYPE_BOOL)
    return rill_infer_error(ctx, "attribute dtype %d is not bool, int32, int64, float32 or "
                            "float64", (int)dtype);
  rill_dims d;
  RILL_TRY(rill_batch_size_like_dims(
      ctx, 0, &ctx->attrs[RILL_FILL_CONSTANT_BATCH_SIZE_LIKE_ATTR_SHAPE],
      ctx->attrs[RILL_FILL_CONSTANT_BATCH_SIZE_LIKE_ATTR_INPUT_DIM_IDX].v.i,
      ctx->attrs[RILL_FILL_CONSTANT_BATCH_SIZE_LIKE_ATTR_OUTPUT_DIM_IDX].v.i, &d));
  rill_meta_set(out, (rill_dtype)dtype, &d, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_fill_constant_batch_size_like = {
    .type = "fill_constant_batch_size_like",
    .doc = "Out = a constant tensor of `shape` whose dim output_dim_idx is Input's dim "
           "input_dim_idx.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = fcbsl_infer,
    .grad = NULL,
    .kernel_dtype_slot = -1,
    .dtype_attr = RILL_FILL_CONSTANT_BATCH_SIZE_LIKE_ATTR_DTYPE,
};

RILL_OP_TABLE_CHECKS(fill_constant_batch_size_like);
