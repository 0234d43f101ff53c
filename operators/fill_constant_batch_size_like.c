/* fill_constant_batch_size_like: Out = a tensor of `shape` filled with a constant, except
 * that dim output_dim_idx takes Input's dim input_dim_idx (the batch size). With a LoD
 * Input and input_dim_idx 0, the batch is the number of sequences (Paddle's rule). */
#include "operators/op_util.h"

#include "framework/data/tensor.h"


static const rill_slot_schema inputs[] = {{"Input", RILL_SLOT_NO_GRAD, "tensor giving the batch size"}};
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
    {"force_cpu", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
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
  const rill_attr_value *s = &ctx->attrs[RILL_FILL_CONSTANT_BATCH_SIZE_LIKE_ATTR_SHAPE];
  if (s->n < 1 || s->n > RILL_MAX_DIMS)
    return rill_infer_error(ctx, "attribute shape has %zu dims: must have 1 to %d", s->n, RILL_MAX_DIMS);
  int32_t ii = ctx->attrs[RILL_FILL_CONSTANT_BATCH_SIZE_LIKE_ATTR_INPUT_DIM_IDX].v.i, oi = ctx->attrs[RILL_FILL_CONSTANT_BATCH_SIZE_LIKE_ATTR_OUTPUT_DIM_IDX].v.i;
  if (oi < 0 || (size_t)oi >= s->n)
    return rill_infer_error(ctx, "attribute output_dim_idx %d is outside shape's %zu dims", (int)oi, s->n);
  rill_dims d = {.n = (int32_t)s->n};
  for (size_t i = 0; i < s->n; i++) d.d[i] = s->list.ints[i];
  int64_t batch = -1;
  if (in->known) {
    if (ii < 0 || ii >= in->dims.n)
      return rill_infer_error(ctx, "attribute input_dim_idx %d is outside input Input (%s)'s rank %d",
                              (int)ii, rill_infer_in_name(ctx, 0, 0), (int)in->dims.n);
    batch = in->dims.d[ii];
  }
  const rill_tensor *t = rill_infer_tensor(ctx, 0, 0);
  if (t && ii == 0 && t->lod.nlevels > 0) {
    const rill_lod_level *last = &t->lod.levels[t->lod.nlevels - 1];
    batch = last->n > 0 ? (int64_t)last->n - 1 : 0;
  }
  d.d[oi] = batch;
  bool runtime = ctx->in_tensors != NULL;
  for (int i = 0; i < d.n; i++)
    if (d.d[i] < (runtime ? 0 : -1))
      return rill_infer_error(ctx, "output Out (%s) would have a negative extent at dim %d",
                              rill_infer_out_name(ctx, 0, 0), i);
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
    .flags = RILL_OP_INFER_READS_DATA,
    .infer = fcbsl_infer,
    .grad = NULL,
    .kernel_dtype_slot = -1,
    .dtype_attr = RILL_FILL_CONSTANT_BATCH_SIZE_LIKE_ATTR_DTYPE,
};

RILL_OP_TABLE_CHECKS(fill_constant_batch_size_like);
