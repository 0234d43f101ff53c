/* random_crop: crops the last len(shape) dims of X to `shape` at a random offset drawn per
 * instance (each index of the leading dims), with Paddle 1.8.5's generator: the C++
 * minstd_rand (x <- 48271 x mod 2^31 - 1) seeded by Seed (int64 [1]) or, while Seed holds
 * no data, by startup_seed; instance i skips i * len(shape) draws, then draws each
 * offset uniformly in [0, dim - shape] by std::uniform_int_distribution's rejection
 * rule. SeedOut is the generator's next value after batch * len(shape) draws; Fluid's
 * layer feeds it back as the next run's Seed. Out has no LoD and there is no gradient, as
 * in Paddle 1.8.5. */
#include "operators/op_util.h"

enum { RC_IN_X, RC_IN_SEED };
enum { RC_OUT_OUT, RC_OUT_SEED };

static const rill_slot_schema inputs[] = {
    [RC_IN_X] = {"X", RILL_SLOT_NO_GRAD, "tensor to crop"},
    [RC_IN_SEED] = {"Seed", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD,
                    "int64 [1] generator seed; no data: startup_seed"},
};
static const rill_slot_schema outputs[] = {
    [RC_OUT_OUT] = {"Out", 0, "X's leading dims, then shape"},
    [RC_OUT_SEED] = {"SeedOut", RILL_SLOT_INTERMEDIATE, "int64 [1]: the seed of the next run"},
};
static const rill_attr_schema attrs[] = {
    {"shape", RILL_ATTR_INTS, RILL_ATTR_REQUIRED, RILL_DEF_EMPTY(RILL_ATTR_INTS),
     "extent of each trailing dim after the crop"},
    {"startup_seed", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "seed while Seed holds no data"},
};

static rill_status *random_crop_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, RC_IN_X, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, RC_OUT_OUT, 0), *so = rill_infer_out(ctx, RC_OUT_SEED, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input X and output Out");
  const rill_attr_value *shape = &ctx->attrs[0];
  if (shape->n == 0) return rill_infer_error(ctx, "attribute shape is empty");
  if (so) {
    rill_dims sd = {.n = 1, .d = {1}};
    rill_meta_set(so, RILL_DTYPE_INT64, &sd, 0, -1, -1);
  }
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  const char *xn = rill_infer_in_name(ctx, RC_IN_X, 0);
  char s[RILL_DIMS_STR_MAX];
  if ((size_t)x->dims.n < shape->n)
    return rill_infer_error(ctx, "input X (%s) has shape %s, fewer dims than attribute shape (%zu)",
                            xn, rill_dims_str(&x->dims, s, sizeof s), shape->n);
  rill_dims d = x->dims;
  size_t lead = (size_t)x->dims.n - shape->n;
  for (size_t i = 0; i < shape->n; i++) {
    int64_t c = shape->list.ints[i], in = x->dims.d[lead + i];
    if (c <= 0 || (in >= 0 && c > in))
      return rill_infer_error(ctx, "attribute shape[%zu] is %lld, input X (%s) %s has %lld there",
                              i, (long long)c, xn, rill_dims_str(&x->dims, s, sizeof s),
                              (long long)in);
    d.d[lead + i] = c;
  }
  rill_meta_set(out, x->dtype, &d, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_random_crop = {
    .type = "random_crop",
    .doc = "Crops the trailing dims at seeded random offsets, one draw per instance.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = random_crop_infer,
    .kernel_dtype_slot = RC_IN_X,
    .dtype_attr = -1,
    .flags = RILL_OP_KERNEL_SHAPES,
};

RILL_OP_TABLE_CHECKS(random_crop);
