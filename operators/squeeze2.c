/* squeeze2 / unsqueeze2: Out = X with extent-1 axes removed / inserted, sharing X's
 * buffer; XShape = [0] + X's shape for the gradient. */
#include "operators/tensor_ops.h"

#include <stdio.h>

static const rill_slot_schema sq_inputs[] = {{"X", RILL_SLOT_ANY_PLACE, "input (Out views its buffer)"}};
static const rill_slot_schema outputs[] = {
    {"Out", 0, "X reshaped (shares X's buffer)"},
    {"XShape", RILL_SLOT_DISPENSABLE | RILL_SLOT_INTERMEDIATE,
     "[0] + X's shape, no data: kept for the gradient"},
};
static const rill_attr_schema sq_attrs[] = {
    {"axes", RILL_ATTR_INTS, 0, RILL_DEF_EMPTY(RILL_ATTR_INTS),
     "axes to remove when their extent is 1 (negative from the end); empty: every extent-1 axis"},
    {"use_mkldnn", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
    {"mkldnn_data_type", RILL_ATTR_STRING, RILL_ATTR_EXTRA, RILL_DEF_STRING("float32"), "ignored"},
};

static rill_status *unknown_outputs(rill_infer_ctx *ctx) {
  rill_meta_unknown(rill_infer_out(ctx, 0, 0));
  rill_tensor_meta *xs = rill_infer_out(ctx, 1, 0);
  if (xs) rill_meta_unknown(xs);
  return NULL;
}

static rill_status *squeeze2_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input X and output Out");
  if (!x->known) return unknown_outputs(ctx);
  RILL_TRY(rill_xshape_infer(ctx, 1, x));
  const rill_attr_value *axes = &ctx->attrs[RILL_SQUEEZE2_ATTR_AXES];
  rill_dims d;
  char err[256];
  if (!rill_squeeze_dims(axes->list.ints, axes->n, &x->dims, ctx->in_tensors != NULL, &d, err,
                         sizeof err))
    return rill_infer_error(ctx, "input X (%s): %s", rill_infer_in_name(ctx, 0, 0), err);
  rill_meta_set(out, x->dtype, &d, x->lod_level, 0, 0);
  return NULL;
}

const rill_op_schema rill_schema_squeeze2 = {
    .type = "squeeze2",
    .doc = "Out = X without the extent-1 axes listed in axes (all of them when empty).",
    .inputs = sq_inputs,
    .ninputs = RILL_COUNTOF(sq_inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = sq_attrs,
    .nattrs = RILL_COUNTOF(sq_attrs),
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = squeeze2_infer,
    .grad = rill_xshape_grad_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};
RILL_XSHAPE_GRAD_SCHEMA(squeeze2, sq_attrs, RILL_COUNTOF(sq_attrs), NULL);

static const rill_slot_schema unsq_inputs[] = {
    {"X", RILL_SLOT_ANY_PLACE, "input (Out views its buffer)"},
    {"AxesTensor", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_INFER_DATA,
     "1-D int32/int64 tensor overriding axes"},
    {"AxesTensorList", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_INFER_DATA,
     "one-element int32/int64 tensors overriding axes"},
};
static const rill_attr_schema unsq_attrs[] = {
    {"axes", RILL_ATTR_INTS, 0, RILL_DEF_EMPTY(RILL_ATTR_INTS),
     "where to insert extent-1 axes, one after another (negative from the end)"},
    {"use_mkldnn", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
    {"mkldnn_data_type", RILL_ATTR_STRING, RILL_ATTR_EXTRA, RILL_DEF_STRING("float32"), "ignored"},
};

bool rill_unsqueeze_axes(const rill_tensor *axes_t, const rill_tensor *const *list, size_t nlist,
                         const rill_attr_value *attr, int64_t *axes, size_t *n, char *err,
                         size_t errlen) {
  if (axes_t) {
    int64_t k = rill_tensor_numel(axes_t);
    if (k > RILL_MAX_DIMS || (axes_t->dtype != RILL_DTYPE_INT32 && axes_t->dtype != RILL_DTYPE_INT64)) {
      snprintf(err, errlen, "input AxesTensor must be a 1-D int32/int64 tensor of at most %d "
               "elements", RILL_MAX_DIMS);
      return false;
    }
    for (int64_t i = 0; i < k; i++) rill_int_tensor_at(axes_t, i, &axes[i]);
    *n = (size_t)k;
    return true;
  }
  if (nlist > 0) {
    if (nlist > RILL_MAX_DIMS) {
      snprintf(err, errlen, "input AxesTensorList has %zu tensors, more than %d", nlist, RILL_MAX_DIMS);
      return false;
    }
    for (size_t i = 0; i < nlist; i++)
      if (!list || !rill_int_tensor_at(list[i], 0, &axes[i])) {
        snprintf(err, errlen, "input AxesTensorList #%zu must hold one int32/int64 value", i);
        return false;
      }
    *n = nlist;
    return true;
  }
  if (attr->n > RILL_MAX_DIMS) {
    snprintf(err, errlen, "attribute axes has %zu entries, more than %d", attr->n, RILL_MAX_DIMS);
    return false;
  }
  for (size_t i = 0; i < attr->n; i++) axes[i] = attr->list.ints[i];
  *n = attr->n;
  return true;
}

static rill_status *unsqueeze2_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input X and output Out");
  if (!x->known) return unknown_outputs(ctx);
  RILL_TRY(rill_xshape_infer(ctx, 1, x));
  bool runtime = ctx->in_tensors != NULL;
  const rill_tensor_meta *at = rill_infer_in(ctx, 1, 0);
  size_t nlist = ctx->nin[2];
  rill_dims d;
  if (!runtime && (at || nlist)) {
    /* Compile time with the axes in tensors: the rank is known only from a list. */
    if (!nlist && !(at->known && at->dims.n == 1 && at->dims.d[0] >= 0)) {
      rill_meta_unknown(out);
      return NULL;
    }
    int64_t k = nlist ? (int64_t)nlist : at->dims.d[0];
    if (x->dims.n + k > RILL_MAX_DIMS)
      return rill_infer_error(ctx, "input X (%s) of rank %d with %lld new axes is more than %d dims",
                              rill_infer_in_name(ctx, 0, 0), (int)x->dims.n, (long long)k,
                              RILL_MAX_DIMS);
    d.n = x->dims.n + (int32_t)k;
    for (int i = 0; i < d.n; i++) d.d[i] = -1;
    rill_meta_set(out, x->dtype, &d, x->lod_level, 0, 0);
    return NULL;
  }
  int64_t axes[RILL_MAX_DIMS];
  size_t n;
  char err[256];
  const rill_tensor *const *list = runtime ? ctx->in_tensors[2] : NULL;
  const rill_tensor *axes_t = at ? rill_infer_tensor(ctx, 1, 0) : NULL;
  if (at && !axes_t)
    return rill_infer_error(ctx, "input AxesTensor (%s) holds no data", rill_infer_in_name(ctx, 1, 0));
  if (!rill_unsqueeze_axes(axes_t, list, nlist, &ctx->attrs[RILL_UNSQUEEZE2_ATTR_AXES], axes, &n, err, sizeof err) ||
      !rill_unsqueeze_dims(axes, n, &x->dims, &d, err, sizeof err))
    return rill_infer_error(ctx, "input X (%s): %s", rill_infer_in_name(ctx, 0, 0), err);
  rill_meta_set(out, x->dtype, &d, x->lod_level, 0, 0);
  return NULL;
}

const rill_op_schema rill_schema_unsqueeze2 = {
    .type = "unsqueeze2",
    .doc = "Out = X with extent-1 axes inserted at axes, sharing X's buffer.",
    .inputs = unsq_inputs,
    .ninputs = RILL_COUNTOF(unsq_inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = unsq_attrs,
    .nattrs = RILL_COUNTOF(unsq_attrs),
    .flags = RILL_OP_KERNEL_SHAPES | RILL_OP_INFER_READS_DATA,
    .infer = unsqueeze2_infer,
    .grad = rill_xshape_grad_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};
RILL_XSHAPE_GRAD_SCHEMA(unsqueeze2, unsq_attrs, RILL_COUNTOF(unsq_attrs), NULL);

RILL_OP_TABLE_CHECKS(squeeze2);
