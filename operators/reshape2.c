/* reshape2: Out = X with a new shape (0 copies the input extent, -1 is inferred), sharing
 * X's buffer; XShape = [0] + X's shape for the gradient. The target comes from
 * ShapeTensor (one-element int tensors), else Shape (a 1-D int tensor), else `shape`. */
#include "operators/tensor_ops.h"

enum { IN_X, IN_SHAPE, IN_SHAPE_TENSOR };
enum { OUT_OUT, OUT_XSHAPE };

static const rill_slot_schema inputs[] = {
    [IN_X] = {"X", RILL_SLOT_ANY_PLACE, "input (Out views its buffer)"},
    [IN_SHAPE] = {"Shape", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD,
                  "1-D int32/int64 tensor overriding attribute shape"},
    [IN_SHAPE_TENSOR] = {"ShapeTensor",
                         RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD,
                         "one-element int32/int64 tensors, one per dim; win over Shape"},
};
static const rill_slot_schema outputs[] = {
    [OUT_OUT] = {"Out", 0, "X reshaped (shares X's buffer)"},
    [OUT_XSHAPE] = {"XShape", RILL_SLOT_DISPENSABLE | RILL_SLOT_INTERMEDIATE,
                    "[0] + X's shape, no data: kept for the gradient"},
};
static const rill_attr_schema attrs[] = {
    {"shape", RILL_ATTR_INTS, 0, RILL_DEF_EMPTY(RILL_ATTR_INTS),
                 "target shape; 0 copies the input extent, one -1 is inferred"},
    {"use_mkldnn", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
    {"mkldnn_data_type", RILL_ATTR_STRING, RILL_ATTR_EXTRA, RILL_DEF_STRING("float32"), "ignored"},
    {"use_quantizer", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
};

static rill_status *reshape2_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, IN_X, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, OUT_OUT, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input X and output Out");
  rill_tensor_meta *xs = rill_infer_out(ctx, OUT_XSHAPE, 0);
  if (!x->known) {
    rill_meta_unknown(out);
    if (xs) rill_meta_unknown(xs);
    return NULL;
  }
  RILL_TRY(rill_xshape_infer(ctx, OUT_XSHAPE, x));
  bool runtime = ctx->in_tensors != NULL;
  const rill_attr_value *attr = &ctx->attrs[RILL_RESHAPE2_ATTR_SHAPE];
  size_t nlist = ctx->nin[IN_SHAPE_TENSOR];
  const rill_tensor_meta *shape_meta = rill_infer_in(ctx, IN_SHAPE, 0);
  rill_dims d;
  if (!runtime && (nlist > 0 || (shape_meta && attr->n == 0))) {
    /* Compile time with the target in tensors: only the rank may be known. */
    int64_t n = (int64_t)nlist;
    if (!nlist) {
      if (!shape_meta->known || shape_meta->dims.n != 1 || shape_meta->dims.d[0] < 0) {
        rill_meta_unknown(out);
        return NULL;
      }
      n = shape_meta->dims.d[0];
    }
    if (n > RILL_MAX_DIMS)
      return rill_infer_error(ctx, "the target shape has %lld dims, more than %d", (long long)n,
                              RILL_MAX_DIMS);
    d.n = (int32_t)n;
    for (int i = 0; i < d.n; i++) d.d[i] = -1;
    rill_meta_set(out, x->dtype, &d, x->lod_level, IN_X, 0);
    return NULL;
  }
  int64_t target[RILL_MAX_DIMS];
  size_t n;
  char err[256];
  const rill_tensor *const *list = runtime ? ctx->in_tensors[IN_SHAPE_TENSOR] : NULL;
  const rill_tensor *shape_t = runtime ? rill_infer_tensor(ctx, IN_SHAPE, 0) : NULL;
  if (runtime && nlist == 0 && shape_meta && !shape_t)
    return rill_infer_error(ctx, "input Shape (%s) holds no data", rill_infer_in_name(ctx, IN_SHAPE, 0));
  if (!rill_reshape_target(list, nlist, shape_t, attr, target, &n, err, sizeof err) ||
      !rill_reshape_dims(target, n, &x->dims, &d, err, sizeof err))
    return rill_infer_error(ctx, "input X (%s): %s", rill_infer_in_name(ctx, IN_X, 0), err);
  bool same_first = x->dims.n > 0 && d.n > 0 && x->dims.d[0] == d.d[0];
  rill_meta_set(out, x->dtype, &d, same_first ? x->lod_level : 0, same_first ? IN_X : -1, 0);
  return NULL;
}

const rill_op_schema rill_schema_reshape2 = {
    .type = "reshape2",
    .doc = "Out = X with a new shape (no copy: Out shares X's buffer); XShape = [0] + X's shape.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_KERNEL_SHAPES | RILL_OP_INFER_READS_DATA,
    .infer = reshape2_infer,
    .grad = rill_xshape_grad_maker,
    .kernel_dtype_slot = IN_X,
    .dtype_attr = -1,
};

RILL_XSHAPE_GRAD_SCHEMA(reshape2, attrs, RILL_COUNTOF(attrs));

RILL_OP_TABLE_CHECKS(reshape2);
