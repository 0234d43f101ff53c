/* crop and crop_tensor: Out = the box of X at offsets with the given shape. crop takes
 * the shape from Y's dims or attribute shape and the offsets from the Offsets tensor or
 * attribute offsets; crop_tensor takes both from a 1-D tensor (Shape, Offsets), a list of
 * one-element tensors (ShapeTensor, OffsetsTensor) or the attributes, in that order, and
 * a shape entry -1 means X's extent minus the offset. The gradients are zeros with
 * Out@GRAD placed back in the box. */
#include "operators/tensor_ops.h"

#include <stdio.h>

/* Values from a 1-D int tensor, a list of one-element int tensors, or an INTS
 * attribute, the first given. n is X's rank; known false at compile time when a tensor
 * decides (the values are then -1). Returns false with a message on a bad count. */
bool rill_crop_values(const rill_tensor *t, bool t_bound, const rill_tensor *const *list,
                      size_t nlist, const rill_attr_value *attr, int n, int64_t *v, bool *known,
                      char *err, size_t errlen) {
  *known = true;
  if (t_bound) {
    if (!t) {
      *known = false;
    } else if (rill_tensor_numel(t) != n) {
      snprintf(err, errlen, "holds %lld values for rank %d", (long long)rill_tensor_numel(t), n);
      return false;
    } else {
      for (int i = 0; i < n; i++)
        if (!rill_int_tensor_at(t, i, &v[i])) {
          snprintf(err, errlen, "must be an int32/int64 tensor");
          return false;
        }
    }
  } else if (nlist) {
    if (nlist != (size_t)n) {
      snprintf(err, errlen, "has %zu tensors for rank %d", nlist, n);
      return false;
    }
    for (int i = 0; i < n; i++) {
      if (!list || !list[i]) {
        *known = false;
        v[i] = -1;
      } else if (!rill_int_tensor_at(list[i], 0, &v[i])) {
        snprintf(err, errlen, "item %d must hold one int32/int64 value", i);
        return false;
      }
    }
    return true;
  } else if (attr->n == 0) {
    for (int i = 0; i < n; i++) v[i] = 0;
    return true;
  } else {
    if (attr->n != (size_t)n) {
      snprintf(err, errlen, "has %zu values for rank %d", attr->n, n);
      return false;
    }
    for (int i = 0; i < n; i++) v[i] = attr->list.ints[i];
  }
  if (!*known)
    for (int i = 0; i < n; i++) v[i] = -1;
  return true;
}

bool rill_crop_box(const rill_dims *x, const int64_t *shape, const int64_t *offsets,
                   bool offsets_known, rill_dims *out, char *err, size_t errlen) {
  out->n = x->n;
  for (int i = 0; i < x->n; i++) {
    int64_t o = offsets_known ? offsets[i] : -1, s = shape[i];
    if (offsets_known && o < 0) {
      snprintf(err, errlen, "offset %lld of dim %d is negative", (long long)o, i);
      return false;
    }
    if (s == -1) s = x->d[i] >= 0 && o >= 0 ? x->d[i] - o : -1;
    else if (s < -1 || s == 0) {
      snprintf(err, errlen, "shape %lld of dim %d must be positive or -1", (long long)s, i);
      return false;
    }
    if (s >= 0 && o >= 0 && x->d[i] >= 0 && o + s > x->d[i]) {
      snprintf(err, errlen, "the box [%lld, %lld) of dim %d exceeds its extent %lld",
               (long long)o, (long long)(o + s), i, (long long)x->d[i]);
      return false;
    }
    out->d[i] = s;
  }
  return true;
}

/* ---- crop ---- */

static const rill_slot_schema crop_inputs[] = {
    {"X", 0, "input"},
    {"Y", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD, "gives the shape of Out (its dims)"},
    {"Offsets", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_INFER_DATA, "1-D int32 offsets per dim"},
};
static const rill_slot_schema crop_outputs[] = {{"Out", 0, "the box of X"}};
static const rill_attr_schema crop_attrs[] = {
    {"offsets", RILL_ATTR_INTS, 0, RILL_DEF_EMPTY(RILL_ATTR_INTS), "offset per dim (empty: 0)"},
    {"shape", RILL_ATTR_INTS, 0, RILL_DEF_EMPTY(RILL_ATTR_INTS), "extent per dim without Y"},
};

static rill_status *crop_shape_offsets(rill_infer_ctx *ctx, const rill_tensor_meta *x, bool tensor_crop,
                                       rill_dims *out) {
  int n = x->dims.n;
  int64_t shape[RILL_MAX_DIMS], offs[RILL_MAX_DIMS];
  bool sk = true, ok, known;
  char err[160];
  const char *what;
  if (!tensor_crop) {
    const rill_tensor_meta *y = rill_infer_in(ctx, RILL_CROP_IN_Y, 0);
    if (y) {
      if (!y->known || y->dims.n != n)
        return rill_infer_error(ctx, "input Y (%s) must have input X (%s)'s rank %d",
                                rill_infer_in_name(ctx, RILL_CROP_IN_Y, 0),
                                rill_infer_in_name(ctx, 0, 0), n);
      for (int i = 0; i < n; i++) shape[i] = y->dims.d[i];
      ok = true;
    } else {
      ok = rill_crop_values(NULL, false, NULL, 0, &ctx->attrs[RILL_CROP_ATTR_SHAPE], n, shape, &sk,
                            err, sizeof err);
      if (ok && ctx->attrs[RILL_CROP_ATTR_SHAPE].n == 0)
        for (int i = 0; i < n; i++) shape[i] = -1;
    }
    what = "shape";
    if (!ok) return rill_infer_error(ctx, "attribute shape %s", err);
    ok = rill_crop_values(rill_infer_tensor(ctx, RILL_CROP_IN_OFFSETS, 0),
                          rill_infer_in(ctx, RILL_CROP_IN_OFFSETS, 0) != NULL, NULL, 0,
                          &ctx->attrs[RILL_CROP_ATTR_OFFSETS], n, offs, &known, err, sizeof err);
    what = "offsets (input Offsets or attribute offsets)";
  } else {
    ok = rill_crop_values(rill_infer_tensor(ctx, RILL_CROP_TENSOR_IN_SHAPE, 0),
                          rill_infer_in(ctx, RILL_CROP_TENSOR_IN_SHAPE, 0) != NULL,
                          ctx->in_tensors ? ctx->in_tensors[RILL_CROP_TENSOR_IN_SHAPE_TENSOR] : NULL,
                          ctx->nin[RILL_CROP_TENSOR_IN_SHAPE_TENSOR],
                          &ctx->attrs[RILL_CROP_TENSOR_ATTR_SHAPE], n, shape, &sk, err, sizeof err);
    if (ok && !rill_infer_in(ctx, RILL_CROP_TENSOR_IN_SHAPE, 0) &&
        !ctx->nin[RILL_CROP_TENSOR_IN_SHAPE_TENSOR] && ctx->attrs[RILL_CROP_TENSOR_ATTR_SHAPE].n == 0)
      return rill_infer_error(ctx, "needs a shape: input Shape, ShapeTensor or attribute shape");
    if (!ok) return rill_infer_error(ctx, "the shape (input Shape, ShapeTensor or attribute shape) %s", err);
    ok = rill_crop_values(rill_infer_tensor(ctx, RILL_CROP_TENSOR_IN_OFFSETS, 0),
                          rill_infer_in(ctx, RILL_CROP_TENSOR_IN_OFFSETS, 0) != NULL,
                          ctx->in_tensors ? ctx->in_tensors[RILL_CROP_TENSOR_IN_OFFSETS_TENSOR] : NULL,
                          ctx->nin[RILL_CROP_TENSOR_IN_OFFSETS_TENSOR],
                          &ctx->attrs[RILL_CROP_TENSOR_ATTR_OFFSETS], n, offs, &known, err, sizeof err);
    what = "offsets (input Offsets, OffsetsTensor or attribute offsets)";
  }
  if (!ok) return rill_infer_error(ctx, "the %s %s", what, err);
  if (!rill_crop_box(&x->dims, shape, offs, known && sk, out, err, sizeof err))
    return rill_infer_error(ctx, "input X (%s): %s", rill_infer_in_name(ctx, 0, 0), err);
  if (!sk) /* the shape comes from tensors not read yet */
    for (int i = 0; i < n; i++) out->d[i] = -1;
  return NULL;
}

static rill_status *crop_infer_common(rill_infer_ctx *ctx, bool tensor_crop) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input X and output Out");
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  rill_dims d;
  RILL_TRY(crop_shape_offsets(ctx, x, tensor_crop, &d));
  rill_meta_set(out, x->dtype, &d, 0, -1, -1);
  return NULL;
}

static rill_status *crop_infer(rill_infer_ctx *ctx) { return crop_infer_common(ctx, false); }
static rill_status *crop_tensor_infer(rill_infer_ctx *ctx) { return crop_infer_common(ctx, true); }

static rill_status *crop_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit(ctx, NULL, (const char *const[]){"X", "Offsets"}, 2,
                        (const char *const[]){"Out"}, 1, (const char *const[]){"X"}, 1);
}

static rill_status *crop_tensor_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit(ctx, NULL, (const char *const[]){"X", "Offsets", "OffsetsTensor"}, 3,
                        (const char *const[]){"Out"}, 1, (const char *const[]){"X"}, 1);
}

const rill_op_schema rill_schema_crop = {
    .type = "crop",
    .doc = "Out = the box of X at offsets with Y's shape (or attribute shape).",
    .inputs = crop_inputs,
    .ninputs = RILL_COUNTOF(crop_inputs),
    .outputs = crop_outputs,
    .noutputs = RILL_COUNTOF(crop_outputs),
    .attrs = crop_attrs,
    .nattrs = RILL_COUNTOF(crop_attrs),
    .flags = RILL_OP_INFER_READS_DATA,
    .infer = crop_infer,
    .grad = crop_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema crop_tensor_inputs[] = {
    {"X", 0, "input"},
    {"Shape", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_INFER_DATA, "1-D int32 shape of Out"},
    {"Offsets", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_INFER_DATA, "1-D int32 offsets per dim"},
    {"ShapeTensor", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_INFER_DATA,
     "one-element int32 tensors: Out's extents"},
    {"OffsetsTensor", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_INFER_DATA,
     "one-element int32 tensors: the offsets"},
};

const rill_op_schema rill_schema_crop_tensor = {
    .type = "crop_tensor",
    .doc = "Out = the box of X at offsets with the given shape (-1: X's extent minus the offset).",
    .inputs = crop_tensor_inputs,
    .ninputs = RILL_COUNTOF(crop_tensor_inputs),
    .outputs = crop_outputs,
    .noutputs = RILL_COUNTOF(crop_outputs),
    .attrs = crop_attrs,
    .nattrs = RILL_COUNTOF(crop_attrs),
    .flags = RILL_OP_INFER_READS_DATA,
    .infer = crop_tensor_infer,
    .grad = crop_tensor_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

/* Gradients: X (its shape), Out@GRAD and the offsets' inputs -> X@GRAD. */
static const rill_slot_schema crop_grad_inputs[] = {
    {"X", 0, "forward X (its shape)"},
    {"Out@GRAD", 0, "gradient of Out"},
    {"Offsets", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD, "forward Offsets"},
};
static const rill_slot_schema crop_tensor_grad_inputs[] = {
    {"X", 0, "forward X (its shape)"},
    {"Out@GRAD", 0, "gradient of Out"},
    {"Offsets", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD, "forward Offsets"},
    {"OffsetsTensor", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD,
     "forward OffsetsTensor"},
};
static const rill_slot_schema crop_grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "zeros with Out@GRAD in the box"}};

const rill_op_schema rill_schema_crop_grad = {
    .type = "crop_grad",
    .doc = "X@GRAD = zeros of X's shape with Out@GRAD in the cropped box.",
    .inputs = crop_grad_inputs,
    .ninputs = RILL_COUNTOF(crop_grad_inputs),
    .outputs = crop_grad_outputs,
    .noutputs = RILL_COUNTOF(crop_grad_outputs),
    .attrs = crop_attrs,
    .nattrs = RILL_COUNTOF(crop_attrs),
    .flags = 0,
    .infer = rill_grad_like_input_infer,
    .grad = NULL,
    .kernel_dtype_slot = 1,
    .dtype_attr = -1,
};

const rill_op_schema rill_schema_crop_tensor_grad = {
    .type = "crop_tensor_grad",
    .doc = "X@GRAD = zeros of X's shape with Out@GRAD in the cropped box.",
    .inputs = crop_tensor_grad_inputs,
    .ninputs = RILL_COUNTOF(crop_tensor_grad_inputs),
    .outputs = crop_grad_outputs,
    .noutputs = RILL_COUNTOF(crop_grad_outputs),
    .attrs = crop_attrs,
    .nattrs = RILL_COUNTOF(crop_attrs),
    .flags = 0,
    .infer = rill_grad_like_input_infer,
    .grad = NULL,
    .kernel_dtype_slot = 1,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(crop);
