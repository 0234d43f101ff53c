/* similarity_focus: a 0/1 mask of X's shape [N, A, B, C]. For each image and each entry
 * k of indexes, the slice X[n, ..., k, ...] on `axis` (1, 2 or 3) is a matrix over the
 * two other axes; its entries are taken from the largest down, skipping any whose row
 * or column was already taken, until min(rows, columns) are taken; the mask is 1 along
 * `axis` through every entry taken, for any of the indexes. No gradient. */
#include "operators/op_util.h"

enum { SF_A_AXIS, SF_A_INDEXES };

static const rill_slot_schema inputs[] = {{"X", RILL_SLOT_NO_GRAD, "[N, A, B, C] similarities"}};
static const rill_slot_schema outputs[] = {{"Out", 0, "X's shape and dtype: 0 or 1"}};
static const rill_attr_schema attrs[] = {
    [SF_A_AXIS] = {"axis", RILL_ATTR_INT, RILL_ATTR_REQUIRED, RILL_DEF_INT(1),
                   "the axis (1, 2 or 3) the indexes select on"},
    [SF_A_INDEXES] = {"indexes", RILL_ATTR_INTS, RILL_ATTR_REQUIRED, RILL_DEF_EMPTY(RILL_ATTR_INTS),
                      "positions on axis whose slices are focused"},
};

static rill_status *similarity_focus_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input X and output Out");
  int32_t axis = ctx->attrs[SF_A_AXIS].v.i;
  const rill_attr_value *idx = &ctx->attrs[SF_A_INDEXES];
  if (axis < 1 || axis > 3)
    return rill_infer_error(ctx, "attribute axis is %d, expected 1, 2 or 3", (int)axis);
  if (idx->n == 0) return rill_infer_error(ctx, "attribute indexes is empty");
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  const char *xn = rill_infer_in_name(ctx, 0, 0);
  char s[RILL_DIMS_STR_MAX];
  if (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input X (%s) is %s, expected float32 or float64", xn,
                            rill_dtype_name(x->dtype));
  if (x->dims.n != 4)
    return rill_infer_error(ctx, "input X (%s) has shape %s, expected 4-D", xn,
                            rill_dims_str(&x->dims, s, sizeof s));
  for (size_t i = 0; i < idx->n; i++)
    if (idx->list.ints[i] < 0 || (x->dims.d[axis] >= 0 && idx->list.ints[i] >= x->dims.d[axis]))
      return rill_infer_error(ctx, "attribute indexes holds %d, outside dim %d of input X (%s) "
                              "%s", (int)idx->list.ints[i], (int)axis, xn,
                              rill_dims_str(&x->dims, s, sizeof s));
  rill_meta_set(out, x->dtype, &x->dims, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_similarity_focus = {
    .type = "similarity_focus",
    .doc = "Greedy one-per-row-and-column mask of the largest similarities of chosen slices.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = similarity_focus_infer,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(similarity_focus);
