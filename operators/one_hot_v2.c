/* one_hot_v2 and one_hot: 1 at each index of X and 0 elsewhere. one_hot_v2 (Paddle 2.x)
 * appends the depth dim: Out = X's shape + [depth]; Fluid 1.x's one_hot replaces X's
 * trailing dim, which must be 1: [N, 1] -> [N, depth]. depth comes from depth_tensor
 * when given. An index outside [0, depth) is an error unless allow_out_of_range, which
 * leaves its row all zeros. Both run the same kernels (the output is numel(X) rows of
 * depth either way). */
#include "operators/op_util.h"

#include "framework/data/tensor.h"

enum { IN_X, IN_DEPTH };

static const rill_slot_schema inputs[] = {
    [IN_X] = {"X", 0, "int32/int64 indices"},
    [IN_DEPTH] = {"depth_tensor", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_INFER_DATA,
                  "one-element int32/int64 tensor overriding depth"},
};
static const rill_slot_schema outputs[] = {{"Out", 0, "X's shape + [depth]"}};
static const rill_attr_schema attrs[] = {
    {"depth", RILL_ATTR_INT, 0, RILL_DEF_INT(-1), "number of classes"},
    {"dtype", RILL_ATTR_INT, 0, RILL_DEF_INT(RILL_DTYPE_FP32), "output dtype"},
    {"allow_out_of_range", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
                 "indices outside [0, depth) give zero rows instead of an error"},
};

static rill_status *one_hot_infer_common(rill_infer_ctx *ctx, bool replace_last) {
  const rill_tensor_meta *x = rill_infer_in(ctx, IN_X, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input X and output Out");
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  const char *xn = rill_infer_in_name(ctx, IN_X, 0);
  if (x->dtype != RILL_DTYPE_INT32 && x->dtype != RILL_DTYPE_INT64)
    return rill_infer_error(ctx, "input X (%s) is %s, expected int32 or int64", xn,
                            rill_dtype_name(x->dtype));
  int32_t dt = ctx->attrs[RILL_ONE_HOT_V2_ATTR_DTYPE].v.i;
  if (dt != RILL_DTYPE_FP32 && dt != RILL_DTYPE_FP64 && dt != RILL_DTYPE_INT32 && dt != RILL_DTYPE_INT64)
    return rill_infer_error(ctx, "attribute dtype %d is not float32, float64, int32 or int64", (int)dt);
  if (replace_last) {
    if (x->dims.n < 2 || (x->dims.d[x->dims.n - 1] >= 0 && x->dims.d[x->dims.n - 1] != 1))
      return rill_infer_error(ctx, "input X (%s) must be [..., 1] with rank >= 2 (one_hot "
                              "replaces the trailing 1 by depth; one_hot_v2 appends it)", xn);
  } else if (x->dims.n >= RILL_MAX_DIMS) {
    return rill_infer_error(ctx, "input X (%s) has rank %d: the output would exceed %d dims", xn,
                            (int)x->dims.n, RILL_MAX_DIMS);
  }
  int64_t depth = ctx->attrs[RILL_ONE_HOT_V2_ATTR_DEPTH].v.i;
  if (rill_infer_in(ctx, IN_DEPTH, 0)) {
    const rill_tensor *t = rill_infer_tensor(ctx, IN_DEPTH, 0);
    depth = -1;
    if (t) {
      const void *p = rill_tensor_ptr(t);
      if (!p || rill_tensor_numel(t) < 1 ||
          (t->dtype != RILL_DTYPE_INT32 && t->dtype != RILL_DTYPE_INT64))
        return rill_infer_error(ctx, "input depth_tensor (%s) must hold one int32/int64 value",
                                rill_infer_in_name(ctx, IN_DEPTH, 0));
      depth = t->dtype == RILL_DTYPE_INT32 ? *(const int32_t *)p : *(const int64_t *)p;
      if (depth < 1)
        return rill_infer_error(ctx, "input depth_tensor (%s) holds depth %lld: must be positive",
                                rill_infer_in_name(ctx, IN_DEPTH, 0), (long long)depth);
    }
  } else if (depth < 1) {
    return rill_infer_error(ctx, "attribute depth is %lld: must be positive (or give depth_tensor)",
                            (long long)depth);
  }
  rill_dims od = x->dims;
  if (replace_last) od.d[od.n - 1] = depth;
  else od.d[od.n++] = depth;
  rill_meta_set(out, (rill_dtype)dt, &od, x->lod_level, IN_X, 0);
  return NULL;
}

static rill_status *one_hot_v2_infer(rill_infer_ctx *ctx) { return one_hot_infer_common(ctx, false); }
static rill_status *one_hot_infer(rill_infer_ctx *ctx) { return one_hot_infer_common(ctx, true); }

const rill_op_schema rill_schema_one_hot_v2 = {
    .type = "one_hot_v2",
    .doc = "Out = one-hot encoding of the indices X, with a new trailing dim of size depth.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_INFER_READS_DATA,
    .infer = one_hot_v2_infer,
    .grad = NULL,
    .kernel_dtype_slot = IN_X,
    .dtype_attr = -1,
};

static const rill_slot_schema outputs_v1[] = {{"Out", 0, "X's shape with the trailing 1 replaced by depth"}};

const rill_op_schema rill_schema_one_hot = {
    .type = "one_hot",
    .doc = "Out = one-hot encoding of the indices X [..., 1], the trailing 1 replaced by depth "
           "(Fluid 1.x).",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs_v1,
    .noutputs = RILL_COUNTOF(outputs_v1),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_INFER_READS_DATA,
    .infer = one_hot_infer,
    .grad = NULL,
    .kernel_dtype_slot = IN_X,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(one_hot_v2);
