/* grid_sampler: samples X [N, C, H, W] at the normalised (x, y) positions of Grid
 * [N, OH, OW, 2] (-1 .. 1 spans the input; x indexes W), bilinearly or at the nearest
 * pixel, with zeros / border / reflection padding outside the input. Output is
 * [N, C, OH, OW]. grid_sampler_grad (zeros or border padding): X@GRAD gathers each
 * output's gradient back into the pixels it read, with their weights; Grid@GRAD is the
 * derivative of the bilinear weights (zero for nearest, and where border clamps). */
#include "operators/op_util.h"

#include <string.h>

static const rill_slot_schema inputs[] = {
    {"X", 0, "input [N, C, H, W]"},
    {"Grid", 0, "sampling positions [N, OH, OW, 2], (x, y) in [-1, 1]"},
};
static const rill_slot_schema outputs[] = {{"Output", 0, "[N, C, OH, OW]"}};
static const rill_attr_schema attrs[] = {
    {"align_corners", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(true),
     "-1 and 1 are the centres of the corner pixels (else their outer edges)"},
    {"padding_mode", RILL_ATTR_STRING, 0, RILL_DEF_STRING("zeros"), "zeros, border or reflection"},
    {"mode", RILL_ATTR_STRING, 0, RILL_DEF_STRING("bilinear"), "bilinear or nearest"},
    {"use_cudnn", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
};

static rill_status *grid_sampler_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *g = rill_infer_in(ctx, 1, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !g || !out) return rill_infer_error(ctx, "needs inputs X, Grid and output Output");
  if (!x->known || !g->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  const char *pm = ctx->attrs[RILL_GRID_SAMPLER_ATTR_PADDING_MODE].v.s ? ctx->attrs[RILL_GRID_SAMPLER_ATTR_PADDING_MODE].v.s : "", *m = ctx->attrs[RILL_GRID_SAMPLER_ATTR_MODE].v.s ? ctx->attrs[RILL_GRID_SAMPLER_ATTR_MODE].v.s : "";
  if (strcmp(pm, "zeros") && strcmp(pm, "border") && strcmp(pm, "reflection"))
    return rill_infer_error(ctx, "attribute padding_mode \"%s\" is not zeros, border or reflection", pm);
  if (strcmp(m, "bilinear") && strcmp(m, "nearest"))
    return rill_infer_error(ctx, "attribute mode \"%s\" is not bilinear or nearest", m);
  char xs[RILL_DIMS_STR_MAX], gs[RILL_DIMS_STR_MAX];
  rill_dims_str(&x->dims, xs, sizeof xs);
  rill_dims_str(&g->dims, gs, sizeof gs);
  const char *xn = rill_infer_in_name(ctx, 0, 0), *gn = rill_infer_in_name(ctx, 1, 0);
  if (x->dtype != g->dtype || (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64))
    return rill_infer_error(ctx, "input X (%s) is %s and input Grid (%s) is %s: both must be "
                            "float32 or both float64", xn, rill_dtype_name(x->dtype), gn,
                            rill_dtype_name(g->dtype));
  if (x->dims.n != 4 || g->dims.n != 4 || (g->dims.d[3] >= 0 && g->dims.d[3] != 2) ||
      (x->dims.d[0] >= 0 && g->dims.d[0] >= 0 && x->dims.d[0] != g->dims.d[0]))
    return rill_infer_error(ctx, "input X (%s) %s and input Grid (%s) %s must be [N, C, H, W] and "
                            "[N, OH, OW, 2]", xn, xs, gn, gs);
  rill_dims od = {4, {x->dims.d[0] >= 0 ? x->dims.d[0] : g->dims.d[0], x->dims.d[1], g->dims.d[1],
                      g->dims.d[2]}};
  rill_meta_set(out, x->dtype, &od, 0, -1, -1);
  return NULL;
}

static rill_status *grid_sampler_maker(rill_grad_ctx *ctx) {
  static const char *const fwd[] = {"X", "Grid"};
  static const char *const gout[] = {"Output"};
  static const char *const gin[] = {"X", "Grid"};
  return rill_grad_emit(ctx, NULL, fwd, RILL_COUNTOF(fwd), gout, RILL_COUNTOF(gout), gin,
                        RILL_COUNTOF(gin));
}

const rill_op_schema rill_schema_grid_sampler = {
    .type = "grid_sampler",
    .doc = "Output = X sampled at Grid's normalised positions (bilinear or nearest).",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = grid_sampler_infer,
    .grad = grid_sampler_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema grad_inputs[] = {
    {"X", 0, "forward X"},
    {"Grid", 0, "forward Grid"},
    {"Output@GRAD", 0, "gradient of Output [N, C, OH, OW]"},
};
static const rill_slot_schema grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "X's shape"},
    {"Grid@GRAD", RILL_SLOT_DISPENSABLE, "Grid's shape"},
};

static rill_status *grid_sampler_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *g = rill_infer_in(ctx, 1, 0);
  if (!x || !g || !rill_infer_in(ctx, 2, 0))
    return rill_infer_error(ctx, "needs inputs X, Grid and Output@GRAD");
  const char *pm = ctx->attrs[RILL_GRID_SAMPLER_ATTR_PADDING_MODE].v.s;
  if (pm && strcmp(pm, "zeros") && strcmp(pm, "border"))
    return rill_infer_error(ctx, "attribute padding_mode \"%s\": the gradient takes zeros or "
                            "border padding", pm);
  for (size_t s = 0; s < 2; s++) {
    rill_tensor_meta *o = rill_infer_out(ctx, s, 0);
    const rill_tensor_meta *i = rill_infer_in(ctx, s, 0);
    if (!o) continue;
    if (i->known) rill_meta_set(o, i->dtype, &i->dims, 0, -1, -1);
    else rill_meta_unknown(o);
  }
  return NULL;
}

const rill_op_schema rill_schema_grid_sampler_grad = {
    .type = "grid_sampler_grad",
    .doc = "Gradients of grid_sampler with respect to X and Grid.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = grid_sampler_grad_infer,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(grid_sampler);
