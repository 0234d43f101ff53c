/* fill_constant: Out = a tensor of `shape` filled with `value`. */
#include "operators/op_util.h"

#include "framework/data/tensor.h"

enum { IN_VALUE, IN_SHAPE, IN_SHAPE_LIST };

static const rill_slot_schema inputs[] = {
    [IN_VALUE] = {"ValueTensor", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_HOST_DATA | RILL_SLOT_INFER_DATA,
                  "one-element tensor overriding value"},
    [IN_SHAPE] = {"ShapeTensor", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_HOST_DATA | RILL_SLOT_INFER_DATA,
                  "1-D int32/int64 tensor overriding shape"},
    [IN_SHAPE_LIST] = {"ShapeTensorList",
                       RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_HOST_DATA | RILL_SLOT_INFER_DATA,
                       "one-element int32/int64 tensors, one per dim, overriding shape"},
};
static const rill_slot_schema outputs[] = {{"Out", 0, "the filled tensor"}};
static const rill_attr_schema attrs[] = {
    {"shape", RILL_ATTR_LONGS, 0, RILL_DEF_EMPTY(RILL_ATTR_LONGS), "output shape"},
    {"value", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.0f), "fill value"},
    {"str_value", RILL_ATTR_STRING, 0, RILL_DEF_STRING(""),
                     "fill value as text (exact for int64, inf, nan); wins over value"},
    {"dtype", RILL_ATTR_INT, 0, RILL_DEF_INT(RILL_DTYPE_FP32), "output dtype"},
    {"force_cpu", RILL_ATTR_BOOLEAN, RILL_ATTR_ON_HOST, RILL_DEF_BOOL(false),
                     "run on the host whatever the executor's place, Out staying there"},
    {"place_type", RILL_ATTR_INT, RILL_ATTR_EXTRA, RILL_DEF_INT(-1), "ignored"},
};

static bool read_int(const rill_tensor *t, int64_t i, int64_t *out) {
  if (!t || !rill_tensor_ptr(t) || i >= rill_tensor_numel(t)) return false;
  if (t->dtype == RILL_DTYPE_INT32) *out = ((const int32_t *)rill_tensor_ptr(t))[i];
  else if (t->dtype == RILL_DTYPE_INT64) *out = ((const int64_t *)rill_tensor_ptr(t))[i];
  else return false;
  return true;
}

static rill_status *fill_constant_infer(rill_infer_ctx *ctx) {
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!out) return rill_infer_error(ctx, "needs output Out");
  int32_t dtype = ctx->attrs[RILL_FILL_CONSTANT_ATTR_DTYPE].v.i;
  if (dtype < 0 || dtype >= RILL_DTYPE_COUNT || !rill_dtype_size((rill_dtype)dtype))
    return rill_infer_error(ctx, "attribute dtype %d is not a tensor element type", (int)dtype);
  rill_dims d = {0};
  const rill_tensor_meta *st = rill_infer_in(ctx, IN_SHAPE, 0);
  if (st) {
    const rill_tensor *t = rill_infer_tensor(ctx, IN_SHAPE, 0);
    const char *name = rill_infer_in_name(ctx, IN_SHAPE, 0);
    if (t) {
      int64_t n = rill_tensor_numel(t);
      if (n > RILL_MAX_DIMS || (t->dtype != RILL_DTYPE_INT32 && t->dtype != RILL_DTYPE_INT64))
        return rill_infer_error(ctx, "input ShapeTensor (%s) must be a 1-D int32/int64 tensor "
                                "of at most %d elements", name, RILL_MAX_DIMS);
      d.n = (int32_t)n;
      for (int64_t i = 0; i < n; i++) read_int(t, i, &d.d[i]);
    } else if (st->known && st->dims.n == 1 && st->dims.d[0] >= 0 &&
               st->dims.d[0] <= RILL_MAX_DIMS) {
      d.n = (int32_t)st->dims.d[0];
      for (int i = 0; i < d.n; i++) d.d[i] = -1;
    } else {
      rill_meta_unknown(out);
      return NULL;
    }
  } else if (ctx->nin[IN_SHAPE_LIST] > 0) {
    size_t n = ctx->nin[IN_SHAPE_LIST];
    if (n > RILL_MAX_DIMS)
      return rill_infer_error(ctx, "input ShapeTensorList has %zu tensors, more than %d dims", n,
                              RILL_MAX_DIMS);
    d.n = (int32_t)n;
    for (size_t i = 0; i < n; i++) {
      const rill_tensor *t = rill_infer_tensor(ctx, IN_SHAPE_LIST, i);
      d.d[i] = -1;
      if (t && !read_int(t, 0, &d.d[i]))
        return rill_infer_error(ctx, "input ShapeTensorList (%s) must hold one int32/int64 value",
                                rill_infer_in_name(ctx, IN_SHAPE_LIST, i));
    }
  } else {
    const rill_attr_value *s = &ctx->attrs[RILL_FILL_CONSTANT_ATTR_SHAPE];
    if (s->n > RILL_MAX_DIMS)
      return rill_infer_error(ctx, "attribute shape has %zu dims, more than %d", s->n, RILL_MAX_DIMS);
    d.n = (int32_t)s->n;
    for (size_t i = 0; i < s->n; i++) d.d[i] = s->list.longs[i];
  }
  bool runtime = ctx->in_tensors != NULL;
  for (int i = 0; i < d.n; i++)
    if (d.d[i] < (runtime ? 0 : -1)) {
      char b[RILL_DIMS_STR_MAX];
      return rill_infer_error(ctx, "output Out (%s) would have shape %s: negative extent",
                              rill_infer_out_name(ctx, 0, 0), rill_dims_str(&d, b, sizeof b));
    }
  rill_meta_set(out, (rill_dtype)dtype, &d, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_fill_constant = {
    .type = "fill_constant",
    .doc = "Out = a tensor of `shape` and `dtype` filled with `value` (or str_value, or "
           "ValueTensor).",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_INFER_READS_DATA,
    .infer = fill_constant_infer,
    .grad = NULL,
    .kernel_dtype_slot = -1,
    .dtype_attr = RILL_FILL_CONSTANT_ATTR_DTYPE,
};

RILL_OP_TABLE_CHECKS(fill_constant);
