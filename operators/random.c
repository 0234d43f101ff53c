/* uniform_random and gaussian_random: Out = random values of `shape` (or ShapeTensor /
 * ShapeTensorList) and `dtype`, drawn from framework/base/random.h's generator.
 *
 * Seeding: a nonzero `seed` seeds the generator, so every run gives the same values
 * (Paddle's behaviour for a fixed seed). seed 0 means "any seed" in Paddle; until the
 * kernels draw from the executor's generator, rill derives the seed from
 * RILL_RANDOM_DEFAULT_SEED mixed with the output variable's name (FNV-1a): reproducible
 * across runs and machines, and different for each parameter a startup program fills. */
#include "operators/tensor_ops.h"

enum { IN_SHAPE, IN_SHAPE_LIST };
enum { U_SHAPE, U_MIN, U_MAX, U_SEED, U_DTYPE, U_DIAG_NUM, U_DIAG_STEP, U_DIAG_VAL };
enum { G_SHAPE, G_MEAN, G_STD, G_SEED, G_DTYPE };
enum { T_SHAPE, T_MEAN, T_STD, T_SEED, T_DTYPE };

static const rill_slot_schema inputs[] = {
    [IN_SHAPE] = {"ShapeTensor", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD,
                  "1-D int32/int64 tensor overriding shape"},
    [IN_SHAPE_LIST] = {"ShapeTensorList",
                       RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD,
                       "one-element int32/int64 tensors, one per dim, overriding shape"},
};
static const rill_slot_schema outputs[] = {{"Out", 0, "the random tensor"}};

static const rill_attr_schema uniform_attrs[] = {
    [U_SHAPE] = {"shape", RILL_ATTR_LONGS, 0, RILL_DEF_EMPTY(RILL_ATTR_LONGS), "output shape"},
    [U_MIN] = {"min", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(-1.0f), "lower bound (inclusive)"},
    [U_MAX] = {"max", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1.0f), "upper bound (exclusive)"},
    [U_SEED] = {"seed", RILL_ATTR_INT, 0, RILL_DEF_INT(0),
                "nonzero: fixed seed; 0: derived from the output's name (see random.c)"},
    [U_DTYPE] = {"dtype", RILL_ATTR_INT, 0, RILL_DEF_INT(RILL_DTYPE_FP32), "float32 or float64"},
    [U_DIAG_NUM] = {"diag_num", RILL_ATTR_INT, 0, RILL_DEF_INT(0),
                    "number of diagonal elements set to diag_val"},
    [U_DIAG_STEP] = {"diag_step", RILL_ATTR_INT, 0, RILL_DEF_INT(0),
                     "element i of the diagonal is at i * (diag_step + 1)"},
    [U_DIAG_VAL] = {"diag_val", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1.0f), "diagonal value"},
};

static const rill_attr_schema gaussian_attrs[] = {
    [G_SHAPE] = {"shape", RILL_ATTR_LONGS, 0, RILL_DEF_EMPTY(RILL_ATTR_LONGS), "output shape"},
    [G_MEAN] = {"mean", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.0f), "mean"},
    [G_STD] = {"std", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1.0f), "standard deviation"},
    [G_SEED] = {"seed", RILL_ATTR_INT, 0, RILL_DEF_INT(0),
                "nonzero: fixed seed; 0: derived from the output's name (see random.c)"},
    [G_DTYPE] = {"dtype", RILL_ATTR_INT, 0, RILL_DEF_INT(RILL_DTYPE_FP32), "float32 or float64"},
    {"use_mkldnn", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
};

static const rill_attr_schema truncated_attrs[] = {
    [T_SHAPE] = {"shape", RILL_ATTR_INTS, 0, RILL_DEF_EMPTY(RILL_ATTR_INTS), "output shape"},
    [T_MEAN] = {"mean", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.0f), "mean"},
    [T_STD] = {"std", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1.0f),
               "standard deviation of the normal before truncation"},
    [T_SEED] = {"seed", RILL_ATTR_INT, 0, RILL_DEF_INT(0),
                "nonzero: fixed seed; 0: derived from the output's name (see random.c)"},
    [T_DTYPE] = {"dtype", RILL_ATTR_INT, 0, RILL_DEF_INT(RILL_DTYPE_FP32), "float32 or float64"},
};

static rill_status *random_infer(rill_infer_ctx *ctx, int dtype_attr, int shape_attr) {
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!out) return rill_infer_error(ctx, "needs output Out");
  int32_t dt = ctx->attrs[dtype_attr].v.i;
  if (dt != RILL_DTYPE_FP32 && dt != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "attribute dtype %d of output Out (%s) is not float32 (5) or "
                            "float64 (6)", (int)dt, rill_infer_out_name(ctx, 0, 0));
  rill_dims d;
  bool known;
  RILL_TRY(rill_shape_from_inputs(ctx, IN_SHAPE, IN_SHAPE_LIST, &ctx->attrs[shape_attr], &d, &known));
  if (!known) {
    rill_meta_unknown(out);
    return NULL;
  }
  rill_meta_set(out, (rill_dtype)dt, &d, 0, -1, -1);
  return NULL;
}

/* truncated_gaussian_random has no shape inputs and an int32 shape attribute. */
static rill_status *truncated_infer(rill_infer_ctx *ctx) {
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!out) return rill_infer_error(ctx, "needs output Out");
  const char *name = rill_infer_out_name(ctx, 0, 0);
  int32_t dt = ctx->attrs[T_DTYPE].v.i;
  if (dt != RILL_DTYPE_FP32 && dt != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "attribute dtype %d of output Out (%s) is not float32 (5) or "
                            "float64 (6)", (int)dt, name);
  if (!(ctx->attrs[T_STD].v.f >= 0.0f))
    return rill_infer_error(ctx, "attribute std %g of output Out (%s) is negative",
                            (double)ctx->attrs[T_STD].v.f, name);
  const rill_attr_value *shape = &ctx->attrs[T_SHAPE];
  if (shape->n == 0 || shape->n > RILL_MAX_DIMS)
    return rill_infer_error(ctx, "attribute shape of output Out (%s) has %zu dims, not 1 to %d",
                            name, shape->n, RILL_MAX_DIMS);
  rill_dims d = {.n = (int32_t)shape->n};
  for (size_t i = 0; i < shape->n; i++) {
    d.d[i] = shape->list.ints[i];
    if (d.d[i] < 0)
      return rill_infer_error(ctx, "attribute shape of output Out (%s) has the negative extent "
                              "%lld", name, (long long)d.d[i]);
  }
  rill_meta_set(out, (rill_dtype)dt, &d, 0, -1, -1);
  return NULL;
}

static rill_status *uniform_infer(rill_infer_ctx *ctx) { return random_infer(ctx, U_DTYPE, U_SHAPE); }
static rill_status *gaussian_infer(rill_infer_ctx *ctx) { return random_infer(ctx, G_DTYPE, G_SHAPE); }

const rill_op_schema rill_schema_uniform_random = {
    .type = "uniform_random",
    .doc = "Out = values uniform in [min, max) of shape and dtype (seeded: see seed).",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = uniform_attrs,
    .nattrs = RILL_COUNTOF(uniform_attrs),
    .flags = RILL_OP_RANDOM | RILL_OP_INFER_READS_DATA,
    .infer = uniform_infer,
    .grad = NULL,
    .kernel_dtype_slot = -1,
    .dtype_attr = U_DTYPE,
};

const rill_op_schema rill_schema_gaussian_random = {
    .type = "gaussian_random",
    .doc = "Out = normal values of mean and std, of shape and dtype (seeded: see seed).",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = gaussian_attrs,
    .nattrs = RILL_COUNTOF(gaussian_attrs),
    .flags = RILL_OP_RANDOM | RILL_OP_INFER_READS_DATA,
    .infer = gaussian_infer,
    .grad = NULL,
    .kernel_dtype_slot = -1,
    .dtype_attr = G_DTYPE,
};

const rill_op_schema rill_schema_truncated_gaussian_random = {
    .type = "truncated_gaussian_random",
    .doc = "Out = normal values of mean and std kept within mean +- 2 std (Paddle's inverse-CDF "
           "sampling), of shape and dtype (seeded: see seed).",
    .inputs = NULL,
    .ninputs = 0,
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = truncated_attrs,
    .nattrs = RILL_COUNTOF(truncated_attrs),
    .flags = RILL_OP_RANDOM,
    .infer = truncated_infer,
    .grad = NULL,
    .kernel_dtype_slot = -1,
    .dtype_attr = T_DTYPE,
};

RILL_OP_TABLE_CHECKS(random);
