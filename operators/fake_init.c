/* fake_init: Out gets `shape` and `dtype` but no storage. The distribute transpiler puts
 * it in a trainer's startup program in place of a distributed lookup table's
 * initializer: the table lives on the pservers, and the trainer's lookups read only its
 * declared shape. */
#include "operators/op_util.h"

#include "framework/data/tensor.h"

static const rill_slot_schema outputs[] = {{"Out", 0, "the variable declared, left without data"}};
static const rill_attr_schema attrs[] = {
    {"shape", RILL_ATTR_LONGS, 0, RILL_DEF_EMPTY(RILL_ATTR_LONGS), "the declared shape"},
    {"dtype", RILL_ATTR_INT, 0, RILL_DEF_INT(RILL_DTYPE_FP32), "the declared element type"},
};

static rill_status *fake_init_infer(rill_infer_ctx *ctx) {
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!out) return rill_infer_error(ctx, "needs output Out");
  int32_t dtype = ctx->attrs[RILL_FAKE_INIT_ATTR_DTYPE].v.i;
  if (dtype < 0 || dtype >= RILL_DTYPE_COUNT || !rill_dtype_size((rill_dtype)dtype))
    return rill_infer_error(ctx, "attribute dtype %d is not a tensor element type", (int)dtype);
  const rill_attr_value *s = &ctx->attrs[RILL_FAKE_INIT_ATTR_SHAPE];
  if (s->n > RILL_MAX_DIMS)
    return rill_infer_error(ctx, "attribute shape has %zu dims, more than %d", s->n, RILL_MAX_DIMS);
  rill_dims d = {.n = (int32_t)s->n};
  for (size_t i = 0; i < s->n; i++) {
    if (s->list.longs[i] < 0)
      return rill_infer_error(ctx, "attribute shape[%zu] is %lld: negative extent", i,
                              (long long)s->list.longs[i]);
    d.d[i] = s->list.longs[i];
  }
  rill_meta_set(out, (rill_dtype)dtype, &d, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_fake_init = {
    .type = "fake_init",
    .doc = "Out = a declaration of `shape` and `dtype` holding no data (a table kept elsewhere).",
    .inputs = NULL,
    .ninputs = 0,
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = fake_init_infer,
    .grad = NULL,
    .kernel_dtype_slot = -1,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(fake_init);
