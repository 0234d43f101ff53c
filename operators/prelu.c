/* prelu: Out = X where X > 0, Alpha * X elsewhere, Alpha picked by `mode`: "all" (one
 * alpha), "channel" (one per index of X's dim 1) or "element" (one per element of a
 * sample, X's dims after the first). prelu_grad(X, Alpha, Out@GRAD) -> X@GRAD,
 * Alpha@GRAD, Paddle's maker layout. */
#include <string.h>

#include "operators/math_grad.h"
#include "operators/op_util.h"

enum { IN_X, IN_ALPHA };
static const rill_slot_schema inputs[] = {
    [IN_X] = {"X", 0, "float32/float64 input, [N, C, ...] for mode channel"},
    [IN_ALPHA] = {"Alpha", 0, "the slopes: 1, C or prod(X.dims[1:]) elements, X's dtype"},
};
static const rill_slot_schema outputs[] = {{"Out", 0, "X's shape and LoD"}};
static const rill_attr_schema attrs[] = {
    {"mode", RILL_ATTR_STRING, 0, RILL_DEF_STRING("all"), "all, channel or element"},
};

/* How many alphas `mode` needs for X's dims (-1: not known yet); 0 for an unknown mode. */
static int64_t alphas_for(const char *mode, const rill_dims *x) {
  if (!mode) return 0;
  if (!strcmp(mode, "all")) return 1;
  if (!strcmp(mode, "channel")) return x->n >= 2 ? x->d[1] : 0;
  if (!strcmp(mode, "element")) {
    if (x->n < 1) return 0;
    int64_t n = 1;
    for (int i = 1; i < x->n; i++) {
      if (x->d[i] < 0) return -1;
      n *= x->d[i];
    }
    return n;
  }
  return 0;
}

static rill_status *check_alpha(rill_infer_ctx *ctx, const rill_tensor_meta *x,
                                const rill_tensor_meta *a, const char *mode) {
  const char *xn = rill_infer_in_name(ctx, IN_X, 0), *an = rill_infer_in_name(ctx, IN_ALPHA, 0);
  if (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input X (%s) is %s, expected float32 or float64", xn,
                            rill_dtype_name(x->dtype));
  if (a->dtype != x->dtype)
    return rill_infer_error(ctx, "input Alpha (%s) is %s but input X (%s) is %s", an,
                            rill_dtype_name(a->dtype), xn, rill_dtype_name(x->dtype));
  int64_t want = alphas_for(mode, &x->dims);
  char s[RILL_DIMS_STR_MAX];
  if (want == 0)
    return rill_infer_error(ctx, "attribute mode \"%s\" is not all, channel or element for "
                            "input X (%s) of shape %s (channel needs 2 dims or more)",
                            mode ? mode : "", xn, rill_dims_str(&x->dims, s, sizeof s));
  int64_t have = 1;
  for (int i = 0; i < a->dims.n; i++) {
    if (a->dims.d[i] < 0) return NULL;
    have *= a->dims.d[i];
  }
  if (want > 0 && have != want)
    return rill_infer_error(ctx, "input Alpha (%s) has shape %s: mode %s needs %lld alphas "
                            "for input X (%s)", an, rill_dims_str(&a->dims, s, sizeof s), mode,
                            (long long)want, xn);
  return NULL;
}

static rill_status *prelu_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, IN_X, 0), *a = rill_infer_in(ctx, IN_ALPHA, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !a || !out) return rill_infer_error(ctx, "needs inputs X, Alpha and output Out");
  if (!x->known || !a->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  RILL_TRY(check_alpha(ctx, x, a, ctx->attrs[RILL_PRELU_ATTR_MODE].v.s));
  rill_meta_set(out, x->dtype, &x->dims, x->lod_level, IN_X, 0);
  return NULL;
}

static rill_status *prelu_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit(ctx, "prelu_grad", RILL_NAMES("X", "Alpha"), RILL_NAMES("Out"),
                        RILL_NAMES("X", "Alpha"));
}

const rill_op_schema rill_schema_prelu = {
    .type = "prelu",
    .doc = "Out = X where X > 0, else Alpha * X (one alpha, one per channel, or one per "
           "element of a sample).",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = prelu_infer,
    .grad = prelu_maker,
    .kernel_dtype_slot = IN_X,
    .dtype_attr = -1,
};

enum { G_X, G_ALPHA, G_DOUT };
static const rill_slot_schema grad_inputs[] = {
    [G_X] = {"X", 0, "forward X"},
    [G_ALPHA] = {"Alpha", 0, "forward Alpha"},
    [G_DOUT] = {"Out@GRAD", 0, "gradient of Out"},
};
static const rill_slot_schema grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "Out@GRAD where X > 0, Alpha * Out@GRAD elsewhere"},
    {"Alpha@GRAD", RILL_SLOT_DISPENSABLE, "sum of X * Out@GRAD where X <= 0, per alpha"},
};

static rill_status *prelu_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, G_X, 0), *a = rill_infer_in(ctx, G_ALPHA, 0);
  if (!x || !a || !rill_infer_in(ctx, G_DOUT, 0))
    return rill_infer_error(ctx, "needs inputs X, Alpha and Out@GRAD");
  if (x->known && a->known) RILL_TRY(check_alpha(ctx, x, a, ctx->attrs[RILL_PRELU_GRAD_ATTR_MODE].v.s));
  RILL_TRY(rill_grad_infer_same(ctx, G_DOUT, G_X));
  rill_grad_infer_like(ctx, 0, G_X);
  rill_grad_infer_like(ctx, 1, G_ALPHA);
  return NULL;
}

const rill_op_schema rill_schema_prelu_grad = {
    .type = "prelu_grad",
    .doc = "X@GRAD and Alpha@GRAD of prelu.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = prelu_grad_infer,
    .grad = NULL,
    .kernel_dtype_slot = G_X,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(prelu);
