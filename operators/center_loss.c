/* center_loss: for features X [N, D] with class Label [N] (int64, [N] or [N, 1]) and the
 * class centres Centers [cluster_num, D]:
 *   SampleCenterDiff[i] = X[i] - Centers[Label[i]],  Loss[i] = |SampleCenterDiff[i]|^2 / 2.
 * With need_update the op also moves the centres (CentersOut, normally Centers itself):
 *   CentersOut[c] = Centers[c] + rate * (sum of the diffs of class c) / (1 + count of c),
 * rate being CenterUpdateRate[0]. The gradient reaches X only: X@GRAD = Loss@GRAD * diff. */
#include "operators/nn.h"

static const rill_slot_schema inputs[] = {
    {"X", 0, "[N, D] features"},
    {"Label", RILL_SLOT_NO_GRAD, "[N] or [N, 1] int64: class of each row, in [0, cluster_num)"},
    {"Centers", RILL_SLOT_NO_GRAD, "[cluster_num, D] class centres"},
    {"CenterUpdateRate", RILL_SLOT_NO_GRAD, "[1] X's dtype: the centres' update rate"},
};
static const rill_slot_schema outputs[] = {
    {"CentersOut", 0, "Centers' shape: the updated centres (Centers itself in Fluid)"},
    {"SampleCenterDiff", 0, "[N, D]: X - its centre"},
    {"Loss", 0, "[N, 1]"},
};
static const rill_attr_schema attrs[] = {
    {"cluster_num", RILL_ATTR_INT, RILL_ATTR_REQUIRED, RILL_DEF_EMPTY(RILL_ATTR_INT),
     "number of classes (rows of Centers)"},
    {"need_update", RILL_ATTR_BOOLEAN, RILL_ATTR_REQUIRED, RILL_DEF_EMPTY(RILL_ATTR_BOOLEAN),
     "whether CentersOut moves towards the batch's features"},
};

static rill_status *cl_check(rill_infer_ctx *ctx, const rill_tensor_meta *x,
                             const rill_tensor_meta *l, const rill_tensor_meta *c,
                             const rill_tensor_meta *r) {
  char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
  const char *xn = rill_infer_in_name(ctx, 0, 0);
  if (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input X (%s) is %s, expected float32 or float64", xn,
                            rill_dtype_name(x->dtype));
  if (x->dims.n != 2)
    return rill_infer_error(ctx, "input X (%s) has shape %s, expected [N, D]", xn,
                            rill_dims_str(&x->dims, a, sizeof a));
  int64_t n = x->dims.d[0], d = x->dims.d[1];
  bool lshape = (l->dims.n == 1 || (l->dims.n == 2 && (l->dims.d[1] < 0 || l->dims.d[1] == 1))) &&
                (l->dims.d[0] < 0 || n < 0 || l->dims.d[0] == n);
  if (l->dtype != RILL_DTYPE_INT64 || !lshape)
    return rill_infer_error(ctx, "input Label (%s) is %s %s; it needs int64 [N] or [N, 1] with "
                            "X (%s)'s %s rows", rill_infer_in_name(ctx, 1, 0),
                            rill_dtype_name(l->dtype), rill_dims_str(&l->dims, a, sizeof a), xn,
                            rill_dims_str(&x->dims, b, sizeof b));
  int k = ctx->attrs[RILL_CENTER_LOSS_ATTR_CLUSTER_NUM].v.i;
  if (k <= 0) return rill_infer_error(ctx, "attribute cluster_num is %d, must be positive", k);
  if (c->dtype != x->dtype || c->dims.n != 2 || (c->dims.d[0] >= 0 && c->dims.d[0] != k) ||
      (c->dims.d[1] >= 0 && d >= 0 && c->dims.d[1] != d))
    return rill_infer_error(ctx, "input Centers (%s) is %s %s; it needs %s [cluster_num = %d, "
                            "D] with X (%s)'s D", rill_infer_in_name(ctx, 2, 0),
                            rill_dtype_name(c->dtype), rill_dims_str(&c->dims, a, sizeof a),
                            rill_dtype_name(x->dtype), k, xn);
  if (r->dtype != x->dtype || (r->dims.n >= 1 && r->dims.d[0] == 0))
    return rill_infer_error(ctx, "input CenterUpdateRate (%s) is %s %s; it needs one %s value",
                            rill_infer_in_name(ctx, 3, 0), rill_dtype_name(r->dtype),
                            rill_dims_str(&r->dims, a, sizeof a), rill_dtype_name(x->dtype));
  return NULL;
}

static rill_status *cl_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *l = rill_infer_in(ctx, 1, 0);
  const rill_tensor_meta *c = rill_infer_in(ctx, 2, 0), *r = rill_infer_in(ctx, 3, 0);
  if (!x || !l || !c || !r || !rill_infer_out(ctx, 0, 0) || !rill_infer_out(ctx, 1, 0) ||
      !rill_infer_out(ctx, 2, 0))
    return rill_infer_error(ctx, "needs inputs X, Label, Centers and CenterUpdateRate and "
                            "outputs CentersOut, SampleCenterDiff and Loss");
  if (!x->known || !l->known || !c->known || !r->known) {
    for (size_t s = 0; s < 3; s++) rill_meta_unknown(rill_infer_out(ctx, s, 0));
    return NULL;
  }
  RILL_TRY(cl_check(ctx, x, l, c, r));
  rill_meta_set(rill_infer_out(ctx, 0, 0), c->dtype, &c->dims, 0, 2, 0);
  rill_meta_set(rill_infer_out(ctx, 1, 0), x->dtype, &x->dims, 0, 0, 0);
  rill_dims ld = {.n = 2, .d = {x->dims.d[0], 1}};
  rill_meta_set(rill_infer_out(ctx, 2, 0), x->dtype, &ld, x->lod_level, 0, 0);
  return NULL;
}

static rill_status *cl_maker(rill_grad_ctx *ctx) {
  static const char *const fwd[] = {"X", "SampleCenterDiff"};
  static const char *const gout[] = {"Loss"};
  static const char *const gin[] = {"X"};
  return rill_grad_emit(ctx, NULL, fwd, RILL_COUNTOF(fwd), gout, RILL_COUNTOF(gout), gin,
                        RILL_COUNTOF(gin));
}

const rill_op_schema rill_schema_center_loss = {
    .type = "center_loss",
    .doc = "Half the squared distance of each feature row to its class centre; moves the "
           "centres when need_update.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = cl_infer,
    .grad = cl_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema grad_inputs[] = {
    {"X", RILL_SLOT_DISPENSABLE | RILL_SLOT_DECL_ONLY, "forward X (its shape only)"},
    {"SampleCenterDiff", 0, "forward SampleCenterDiff [N, D]"},
    {"Loss@GRAD", 0, "gradient of Loss [N, 1]"},
};
static const rill_slot_schema grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "X's shape"},
};

static rill_status *cl_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *d = rill_infer_in(ctx, 1, 0), *g = rill_infer_in(ctx, 2, 0);
  if (!d || !g) return rill_infer_error(ctx, "needs inputs SampleCenterDiff and Loss@GRAD");
  if (d->known && g->known) {
    char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
    if (d->dims.n != 2 || g->dims.n != 2 || (g->dims.d[1] >= 0 && g->dims.d[1] != 1) ||
        (g->dims.d[0] >= 0 && d->dims.d[0] >= 0 && g->dims.d[0] != d->dims.d[0]))
      return rill_infer_error(ctx, "inputs SampleCenterDiff (%s) %s and Loss@GRAD (%s) %s must "
                              "be [N, D] and [N, 1]", rill_infer_in_name(ctx, 1, 0),
                              rill_dims_str(&d->dims, a, sizeof a), rill_infer_in_name(ctx, 2, 0),
                              rill_dims_str(&g->dims, b, sizeof b));
  }
  rill_nn_same_meta(ctx, 0, 1);
  return NULL;
}

const rill_op_schema rill_schema_center_loss_grad = {
    .type = "center_loss_grad",
    .doc = "X@GRAD of center_loss: Loss@GRAD times SampleCenterDiff.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = cl_grad_infer,
    .kernel_dtype_slot = 1,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(center_loss);
