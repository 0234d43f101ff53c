/* sequence_mask: Y[..., j] = (j < X[...]) for j in [0, maxlen), Y = X's shape + [maxlen].
 * maxlen comes from MaxLenTensor when given, else the attribute; a negative maxlen means
 * max(X) (0 for an empty X), read when the op runs. */
#include "operators/op_util.h"

#include "framework/data/tensor.h"

enum { SM_X, SM_MAXLEN };
static const rill_slot_schema inputs[] = {
    [SM_X] = {"X", RILL_SLOT_NO_GRAD | RILL_SLOT_INFER_DATA, "int32/int64 lengths"},
    [SM_MAXLEN] = {"MaxLenTensor", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_INFER_DATA,
                   "one-element int32/int64 tensor overriding maxlen"},
};
static const rill_slot_schema outputs[] = {{"Y", 0, "X's shape + [maxlen], of out_dtype"}};
static const rill_attr_schema attrs[] = {
    {"maxlen", RILL_ATTR_INT, 0, RILL_DEF_INT(-1), "mask width; negative: max(X)"},
    {"out_dtype", RILL_ATTR_INT, 0, RILL_DEF_INT(RILL_DTYPE_INT64), "Y's dtype"},
};

static bool out_dtype_ok(int32_t dt) {
  return dt == RILL_DTYPE_BOOL || dt == RILL_DTYPE_UINT8 || dt == RILL_DTYPE_INT32 ||
         dt == RILL_DTYPE_INT64 || dt == RILL_DTYPE_FP32 || dt == RILL_DTYPE_FP64;
}

static int64_t len_at(const rill_tensor *t, int64_t i) {
  return t->dtype == RILL_DTYPE_INT32 ? ((const int32_t *)rill_tensor_ptr(t))[i]
                                      : ((const int64_t *)rill_tensor_ptr(t))[i];
}

static rill_status *sequence_mask_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, SM_X, 0);
  rill_tensor_meta *y = rill_infer_out(ctx, 0, 0);
  if (!x || !y) return rill_infer_error(ctx, "needs input X and output Y");
  if (!x->known) {
    rill_meta_unknown(y);
    return NULL;
  }
  const char *xn = rill_infer_in_name(ctx, SM_X, 0);
  if (x->dtype != RILL_DTYPE_INT32 && x->dtype != RILL_DTYPE_INT64)
    return rill_infer_error(ctx, "input X (%s) is %s, expected int32 or int64", xn,
                            rill_dtype_name(x->dtype));
  if (x->dims.n >= RILL_MAX_DIMS)
    return rill_infer_error(ctx, "input X (%s) has rank %d: Y would exceed %d dims", xn,
                            (int)x->dims.n, RILL_MAX_DIMS);
  int32_t dt = ctx->attrs[RILL_SEQUENCE_MASK_ATTR_OUT_DTYPE].v.i;
  if (!out_dtype_ok(dt))
    return rill_infer_error(ctx, "attribute out_dtype %d is not bool, uint8, int32, int64, "
                            "float32 or float64", (int)dt);
  int64_t maxlen = ctx->attrs[RILL_SEQUENCE_MASK_ATTR_MAXLEN].v.i;
  if (rill_infer_in(ctx, SM_MAXLEN, 0)) {
    const rill_tensor *t = rill_infer_tensor(ctx, SM_MAXLEN, 0);
    maxlen = -1;
    if (t) {
      if (!rill_tensor_ptr(t) || rill_tensor_numel(t) != 1 ||
          (t->dtype != RILL_DTYPE_INT32 && t->dtype != RILL_DTYPE_INT64))
        return rill_infer_error(ctx, "input MaxLenTensor (%s) must hold one int32/int64 value",
                                rill_infer_in_name(ctx, SM_MAXLEN, 0));
      maxlen = len_at(t, 0);
    }
  }
  if (maxlen < 0) { /* max(X), once X's values are there */
    const rill_tensor *t = rill_infer_tensor(ctx, SM_X, 0);
    if (t && (rill_tensor_ptr(t) || rill_tensor_numel(t) == 0)) {
      maxlen = 0;
      for (int64_t i = 0, n = rill_tensor_numel(t); i < n; i++)
        if (len_at(t, i) > maxlen) maxlen = len_at(t, i);
    }
  }
  rill_dims yd = x->dims;
  yd.d[yd.n++] = maxlen;
  rill_meta_set(y, (rill_dtype)dt, &yd, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_sequence_mask = {
    .type = "sequence_mask",
    .doc = "Y[..., j] = j < X[...] for j below maxlen (MaxLenTensor, the attribute, or max(X)).",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_INFER_READS_DATA,
    .infer = sequence_mask_infer,
    .grad = NULL,
    .kernel_dtype_slot = SM_X,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(sequence_mask);
