/* sampling_id: one id per row of X [N, W] (each row a distribution over W ids), drawn as
 * Paddle 1.8.5 draws it: a generator seeded afresh on every run walks the rows in order,
 * one uniform number r in [min, max) per row; the id is the first j at which r minus the
 * row's first j + 1 values falls below 0 (W - 1 when none does). Out is int64 [N] with
 * X's LoD. No gradient. The kernel (kernels/cpu/sampling_id.c) reproduces libstdc++'s
 * minstd_rand and uniform_real_distribution, so a nonzero seed gives Paddle's ids. */
#include "operators/tensor_ops.h"

static const rill_slot_schema inputs[] = {
    {"X", RILL_SLOT_NO_GRAD, "float32/float64 [N, W]: the rows' probabilities"},
};
static const rill_slot_schema outputs[] = {{"Out", 0, "int64 [N]: the drawn ids"}};
static const rill_attr_schema attrs[] = {
    {"min", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.0f), "lower bound of the uniform draw"},
    {"max", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1.0f), "upper bound of the uniform draw"},
    {"seed", RILL_ATTR_INT, 0, RILL_DEF_INT(0),
     "nonzero: the same ids on every run; 0: drawn from the executor's generator"},
};

static rill_status *sampling_id_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, RILL_SAMPLING_ID_IN_X, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, RILL_SAMPLING_ID_OUT_OUT, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input X and output Out");
  float lo = ctx->attrs[RILL_SAMPLING_ID_ATTR_MIN].v.f, hi = ctx->attrs[RILL_SAMPLING_ID_ATTR_MAX].v.f;
  if (!(lo < hi))
    return rill_infer_error(ctx, "attributes min (%g) and max (%g) of output Out (%s): min must be "
                            "less than max", (double)lo, (double)hi,
                            rill_infer_out_name(ctx, RILL_SAMPLING_ID_OUT_OUT, 0));
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  if (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input X (%s) is %s, expected float32 or float64",
                            rill_infer_in_name(ctx, RILL_SAMPLING_ID_IN_X, 0), rill_dtype_name(x->dtype));
  if (x->dims.n != 2) {
    char a[RILL_DIMS_STR_MAX];
    return rill_infer_error(ctx, "input X (%s) has shape %s, expected [N, W]",
                            rill_infer_in_name(ctx, RILL_SAMPLING_ID_IN_X, 0),
                            rill_dims_str(&x->dims, a, sizeof a));
  }
  rill_dims d = {.n = 1, .d = {x->dims.d[0]}};
  rill_meta_set(out, RILL_DTYPE_INT64, &d, x->lod_level, RILL_SAMPLING_ID_IN_X, 0);
  return NULL;
}

const rill_op_schema rill_schema_sampling_id = {
    .type = "sampling_id",
    .doc = "Out[i] = an id drawn from row i of X taken as a distribution (Paddle's draw).",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_RANDOM,
    .infer = sampling_id_infer,
    .grad = NULL,
    .kernel_dtype_slot = RILL_SAMPLING_ID_IN_X,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(sampling_id);
