/* reshape2: Out = X with a new shape (0 copies the input extent, -1 is inferred), sharing
 * X's buffer; XShape = [0] + X's shape for the gradient. The target comes from
 * ShapeTensor (one-element int tensors), else Shape (a 1-D int tensor), else `shape`. */
#include "operators/math_grad.h"
#include "operators/tensor_ops.h"

enum { IN_X, IN_SHAPE, IN_SHAPE_TENSOR };
enum { OUT_OUT, OUT_XSHAPE };

static const rill_slot_schema inputs[] = {
    [IN_X] = {"X", RILL_SLOT_ANY_PLACE, "input (Out views its buffer)"},
    [IN_SHAPE] = {"Shape", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_INFER_DATA,
                  "1-D int32/int64 tensor overriding attribute shape"},
    [IN_SHAPE_TENSOR] = {"ShapeTensor",
                         RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_INFER_DATA,
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

/* reshape2_grad's own gradient, as Paddle's ReshapeDoubleGradOpMaker: DDOut is the
 * gradient of X@GRAD (DDX) in Out@GRAD's shape (DOut, read for its shape). */
static rill_status *reshape2_double_grad_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit_as(ctx, RILL_NAMES("Out@GRAD", "DOut"), RILL_NAMES("X@GRAD", "DDX"),
                           RILL_NAMES("Out@GRAD", "DDOut"));
}

RILL_XSHAPE_GRAD_SCHEMA(reshape2, attrs, RILL_COUNTOF(attrs), reshape2_double_grad_maker);

static const rill_slot_schema gg_inputs[] = {
    {"DOut", RILL_SLOT_ANY_PLACE | RILL_SLOT_NO_GRAD, "the gradient op's Out@GRAD (its shape)"},
    {"DDX", RILL_SLOT_ANY_PLACE, "gradient of the gradient op's X@GRAD"},
};
static const rill_slot_schema gg_outputs[] = {
    {"DDOut", RILL_SLOT_DISPENSABLE, "DDX viewed with DOut's shape; shares the buffer"},
};

static rill_status *reshape2_gg_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *dout = rill_infer_in(ctx, 0, 0), *ddx = rill_infer_in(ctx, 1, 0);
  rill_tensor_meta *ddout = rill_infer_out(ctx, 0, 0);
  if (!dout || !ddx) return rill_infer_error(ctx, "needs inputs DOut and DDX");
  if (!ddout) return NULL;
  if (!dout->known || !ddx->known) {
    rill_meta_unknown(ddout);
    return NULL;
  }
  int64_t a = rill_span_prod(&dout->dims, 0, dout->dims.n), b = rill_span_prod(&ddx->dims, 0, ddx->dims.n);
  if (a >= 0 && b >= 0 && a != b) {
    char s1[RILL_DIMS_STR_MAX], s2[RILL_DIMS_STR_MAX];
    return rill_infer_error(ctx, "input DDX (%s) of shape %s does not have the %lld elements of "
                            "DOut (%s) of shape %s", rill_infer_in_name(ctx, 1, 0),
                            rill_dims_str(&ddx->dims, s1, sizeof s1), (long long)a,
                            rill_infer_in_name(ctx, 0, 0), rill_dims_str(&dout->dims, s2, sizeof s2));
  }
  rill_meta_set(ddout, ddx->dtype, &dout->dims, ddx->lod_level, 1, 0);
  return NULL;
}

RILL_GRAD_GRAD_SCHEMA(reshape2, "Double gradient of reshape2: DDOut = DDX viewed with DOut's shape.",
                      gg_inputs, gg_outputs, attrs, reshape2_gg_infer, RILL_OP_KERNEL_SHAPES, 1);

RILL_OP_TABLE_CHECKS(reshape2);
