/* affine_grid: the sampling grid of 2-D affine transforms. For Theta [N, 2, 3] and an
 * output shape [N, C, H, W] (attribute output_shape, or the int32 input OutputShape read
 * at run time) Output [N, H, W, 2] holds Theta[n] (x, y, 1) at each pixel, where
 * x = -1 + 2 w / (W - 1) and y = -1 + 2 h / (H - 1) (Paddle 1.8's linspace from -1 to 1,
 * the corners' centres). affine_grid_grad: Theta@GRAD[n][i][j] = sum over pixels of
 * Output@GRAD[n, pixel, i] * (x, y, 1)[j]. */
#include "operators/nn.h"
#include "operators/tensor_ops.h"

static const rill_slot_schema inputs[] = {
    {"Theta", 0, "[N, 2, 3] affine transforms"},
    {"OutputShape", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_INFER_DATA,
     "[4] int32: N, C, H, W (overrides output_shape)"},
};
static const rill_slot_schema outputs[] = {{"Output", 0, "[N, H, W, 2]"}};
static const rill_attr_schema attrs[] = {
    {"output_shape", RILL_ATTR_INTS, 0, RILL_DEF_EMPTY(RILL_ATTR_INTS),
     "N, C, H, W of the sampled output (without OutputShape)"},
    {"use_cudnn", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(true), "ignored"},
};

/* H and W of the grid: from OutputShape's values when bound and readable, else from
 * output_shape; -1 when known only at run time. */
static rill_status *ag_hw(rill_infer_ctx *ctx, size_t shape_slot, int64_t *h, int64_t *w) {
  *h = *w = -1;
  const rill_tensor_meta *s = rill_infer_in(ctx, shape_slot, 0);
  if (s) {
    const rill_tensor *t = ctx->in_tensors ? rill_infer_tensor(ctx, shape_slot, 0) : NULL;
    if (!t) return NULL;
    if (t->dtype != RILL_DTYPE_INT32 || rill_tensor_numel(t) != 4 ||
        !rill_int_tensor_at(t, 2, h) || !rill_int_tensor_at(t, 3, w))
      return rill_infer_error(ctx, "input OutputShape (%s) must hold 4 int32 values (N, C, H, W)",
                              rill_infer_in_name(ctx, shape_slot, 0));
  } else {
    const rill_attr_value *a = &ctx->attrs[RILL_AFFINE_GRID_ATTR_OUTPUT_SHAPE];
    if (a->n != 4)
      return rill_infer_error(ctx, "attribute output_shape holds %zu values; it needs N, C, H, "
                              "W (or input OutputShape)", a->n);
    *h = a->list.ints[2];
    *w = a->list.ints[3];
  }
  if (*h <= 0 || *w <= 0)
    return rill_infer_error(ctx, "the output height %lld and width %lld must be positive",
                            (long long)*h, (long long)*w);
  return NULL;
}

static rill_status *ag_theta(rill_infer_ctx *ctx, const rill_tensor_meta *t, const char *slot,
                             size_t idx) {
  char a[RILL_DIMS_STR_MAX];
  if ((t->dtype != RILL_DTYPE_FP32 && t->dtype != RILL_DTYPE_FP64) || t->dims.n != 3 ||
      (t->dims.d[1] >= 0 && t->dims.d[1] != 2) || (t->dims.d[2] >= 0 && t->dims.d[2] != 3))
    return rill_infer_error(ctx, "input %s (%s) is %s %s; it needs float [N, 2, 3]", slot,
                            rill_infer_in_name(ctx, idx, 0), rill_dtype_name(t->dtype),
                            rill_dims_str(&t->dims, a, sizeof a));
  return NULL;
}

static rill_status *ag_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *t = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!t || !out) return rill_infer_error(ctx, "needs input Theta and output Output");
  if (!t->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  RILL_TRY(ag_theta(ctx, t, "Theta", 0));
  int64_t h, w;
  RILL_TRY(ag_hw(ctx, 1, &h, &w));
  rill_dims od = {.n = 4, .d = {t->dims.d[0], h, w, 2}};
  rill_meta_set(out, t->dtype, &od, 0, -1, -1);
  return NULL;
}

static rill_status *ag_maker(rill_grad_ctx *ctx) {
  static const char *const fwd[] = {"OutputShape"};
  static const char *const gout[] = {"Output"};
  static const char *const gin[] = {"Theta"};
  return rill_grad_emit(ctx, NULL, fwd, RILL_COUNTOF(fwd), gout, RILL_COUNTOF(gout), gin,
                        RILL_COUNTOF(gin));
}

const rill_op_schema rill_schema_affine_grid = {
    .type = "affine_grid",
    .doc = "The [N, H, W, 2] sampling grid of affine transforms Theta [N, 2, 3].",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = ag_infer,
    .grad = ag_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
    .flags = RILL_OP_INFER_READS_DATA,
};

static const rill_slot_schema grad_inputs[] = {
    {"OutputShape", RILL_SLOT_DISPENSABLE, "forward OutputShape"},
    {"Output@GRAD", 0, "gradient of Output [N, H, W, 2]"},
};
static const rill_slot_schema grad_outputs[] = {
    {"Theta@GRAD", RILL_SLOT_DISPENSABLE, "[N, 2, 3]"},
};

static rill_status *ag_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *g = rill_infer_in(ctx, 1, 0);
  if (!g) return rill_infer_error(ctx, "needs input Output@GRAD");
  rill_tensor_meta *dt = rill_infer_out(ctx, 0, 0);
  if (!dt) return NULL;
  if (!g->known) {
    rill_meta_unknown(dt);
    return NULL;
  }
  char a[RILL_DIMS_STR_MAX];
  if (g->dims.n != 4 || (g->dims.d[3] >= 0 && g->dims.d[3] != 2))
    return rill_infer_error(ctx, "input Output@GRAD (%s) has shape %s, expected [N, H, W, 2]",
                            rill_infer_in_name(ctx, 1, 0), rill_dims_str(&g->dims, a, sizeof a));
  rill_dims td = {.n = 3, .d = {g->dims.d[0], 2, 3}};
  rill_meta_set(dt, g->dtype, &td, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_affine_grid_grad = {
    .type = "affine_grid_grad",
    .doc = "Theta@GRAD of affine_grid.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = ag_grad_infer,
    .kernel_dtype_slot = 1,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(affine_grid);
