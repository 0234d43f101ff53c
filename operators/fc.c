/* fc: Paddle's fused fully connected op (what its fc_fuse_pass makes of mul +
 * elementwise_add [+ relu]): Out = act(flatten(Input) * W + Bias). rill's inference
 * passes produce it; Paddle-optimized programs carry it too. */
#include "operators/fused_act.h"
#include "operators/op_util.h"

static const rill_slot_schema inputs[] = {
    {"Input", 0, "flattened to [prod(dims[:in_num_col_dims]), prod(rest)]"},
    {"W", 0, "[K, N]"},
    {"Bias", RILL_SLOT_DISPENSABLE, "[N] or [1, N]"},
};
static const rill_slot_schema outputs[] = {
    {"Out", 0, "Input dims[:in_num_col_dims] + [N]"},
};
static const rill_attr_schema attrs[] = {
    {"in_num_col_dims", RILL_ATTR_INT, 0, RILL_DEF_INT(1), "leading dims of Input that form rows"},
    {"activation_type", RILL_ATTR_STRING, 0, RILL_DEF_STRING(""), "\"\" or \"relu\""},
    {"padding_weights", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
     "W padded by 4 rows and columns (oneDNN layout): unimplemented"},
    {"use_mkldnn", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
};

static rill_status *fc_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *w = rill_infer_in(ctx, 1, 0),
                         *b = rill_infer_in(ctx, 2, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !w || !out) return rill_infer_error(ctx, "needs inputs Input, W and output Out");
  if (rill_fused_act_of(&ctx->attrs[RILL_FC_ATTR_ACTIVATION_TYPE], true) == RILL_FUSED_UNKNOWN)
    return rill_infer_error(ctx, "activation_type '%s' is not supported (\"\" or \"relu\")",
                            ctx->attrs[RILL_FC_ATTR_ACTIVATION_TYPE].v.s ? ctx->attrs[RILL_FC_ATTR_ACTIVATION_TYPE].v.s : "");
  if (ctx->attrs[RILL_FC_ATTR_PADDING_WEIGHTS].v.b)
    return rill_error(RILL_UNIMPLEMENTED, "fc: padding_weights (oneDNN's padded W) is not supported");
  if (!x->known || !w->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  int n = ctx->attrs[RILL_FC_ATTR_IN_NUM_COL_DIMS].v.i;
  char xs[RILL_DIMS_STR_MAX], ws[RILL_DIMS_STR_MAX];
  rill_dims_str(&x->dims, xs, sizeof xs);
  rill_dims_str(&w->dims, ws, sizeof ws);
  if (x->dtype != w->dtype)
    return rill_infer_error(ctx, "input Input (%s) is %s but W (%s) is %s", rill_infer_in_name(ctx, 0, 0),
                            rill_dtype_name(x->dtype), rill_infer_in_name(ctx, 1, 0),
                            rill_dtype_name(w->dtype));
  if (w->dims.n != 2)
    return rill_infer_error(ctx, "W (%s) has shape %s: it must be 2-D", rill_infer_in_name(ctx, 1, 0), ws);
  if (n < 1 || n >= x->dims.n)
    return rill_infer_error(ctx, "Input (%s) has shape %s: rank must exceed in_num_col_dims = %d",
                            rill_infer_in_name(ctx, 0, 0), xs, n);
  int64_t k = 1;
  bool known = true;
  for (int i = n; i < x->dims.n; i++) {
    if (x->dims.d[i] < 0) known = false;
    else if (__builtin_mul_overflow(k, x->dims.d[i], &k))
      return rill_infer_error(ctx, "Input shape %s overflows", xs);
  }
  if (known && w->dims.d[0] >= 0 && k != w->dims.d[0])
    return rill_infer_error(ctx, "Input (%s) of shape %s flattens to %lld columns but W (%s) of "
                            "shape %s has %lld rows", rill_infer_in_name(ctx, 0, 0), xs, (long long)k,
                            rill_infer_in_name(ctx, 1, 0), ws, (long long)w->dims.d[0]);
  if (b && b->known) {
    int64_t bn = 1;
    bool bk = true;
    for (int i = 0; i < b->dims.n; i++) {
      if (b->dims.d[i] < 0) bk = false;
      else bn *= b->dims.d[i];
    }
    if (bk && w->dims.d[1] >= 0 && (bn != w->dims.d[1] || b->dims.n > 2))
      return rill_infer_error(ctx, "Bias (%s) must hold [%lld] values", rill_infer_in_name(ctx, 2, 0),
                              (long long)w->dims.d[1]);
  }
  rill_dims od;
  od.n = n + 1;
  for (int i = 0; i < n; i++) od.d[i] = x->dims.d[i];
  od.d[n] = w->dims.d[1];
  rill_meta_set(out, x->dtype, &od, x->lod_level, 0, 0);
  return NULL;
}

const rill_op_schema rill_schema_fc = {
    .type = "fc",
    .doc = "Out = act(flatten(Input) * W + Bias), act \"\" or \"relu\": Paddle's fused fully "
           "connected layer.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = fc_infer,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(fc);
