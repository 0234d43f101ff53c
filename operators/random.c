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
    [IN_SHAPE] = {"ShapeTensor", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_INFER_DATA,
                  "1-D int32/int64 tensor overriding shape"},
    [IN_SHAPE_LIST] = {"ShapeTensorList",
                       RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_INFER_DATA,
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

static rill_status *uniform_infer(rill_infer_ctx *ctx) { return random_infer(ctx, U_DTYPE, U_SHAPE); }
static rill_status *gaussian_infer(rill_infer_ctx *ctx) { return random_infer(ctx, G_DTYPE, G_SHAPE); }

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

/* ---- uniform_random_batch_size_like, gaussian_random_batch_size_like ---- */

static const rill_slot_schema bsl_inputs[] = {
    {"Input", RILL_SLOT_NO_GRAD, "tensor giving the batch size"}};

#define BSL_ATTRS                                                                          \
  {"shape", RILL_ATTR_INTS, RILL_ATTR_REQUIRED, RILL_DEF_EMPTY(RILL_ATTR_INTS),            \
   "output shape (dim output_dim_idx is replaced)"},                                       \
      {"input_dim_idx", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "dim of Input to copy"},        \
      {"output_dim_idx", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "dim of Out to set"},          \
      {"seed", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "0: rill's default seed (see above)"},   \
      {"dtype", RILL_ATTR_INT, 0, RILL_DEF_INT(RILL_DTYPE_FP32), "float32 or float64"}

static const rill_attr_schema ubsl_attrs[] = {
    BSL_ATTRS,
    {"min", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(-1.0f), "lower bound (inclusive)"},
    {"max", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1.0f), "upper bound (exclusive)"},
    {"diag_num", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "diagonal elements set to diag_val"},
    {"diag_step", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "step between them"},
    {"diag_val", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1.0f), "diagonal value"},
};
static const rill_attr_schema gbsl_attrs[] = {
    BSL_ATTRS,
    {"mean", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.0f), "mean"},
    {"std", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1.0f), "standard deviation"},
};
/* The positions BSL_ATTRS gives both. */
enum { BSL_SHAPE, BSL_IN_DIM, BSL_OUT_DIM, BSL_SEED, BSL_DTYPE };

static rill_status *bsl_infer(rill_infer_ctx *ctx) {
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!rill_infer_in(ctx, 0, 0) || !out)
    return rill_infer_error(ctx, "needs input Input and output Out");
  int32_t dt = ctx->attrs[BSL_DTYPE].v.i;
  if (dt != RILL_DTYPE_FP32 && dt != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "attribute dtype %d of output Out (%s) is not float32 (5) or "
                            "float64 (6)", (int)dt, rill_infer_out_name(ctx, 0, 0));
  rill_dims d;
  RILL_TRY(rill_batch_size_like_dims(ctx, 0, &ctx->attrs[BSL_SHAPE], ctx->attrs[BSL_IN_DIM].v.i,
                                     ctx->attrs[BSL_OUT_DIM].v.i, &d));
  rill_meta_set(out, (rill_dtype)dt, &d, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_uniform_random_batch_size_like = {
    .type = "uniform_random_batch_size_like",
    .doc = "uniform_random of `shape` whose dim output_dim_idx is Input's dim input_dim_idx.",
    .inputs = bsl_inputs,
    .ninputs = RILL_COUNTOF(bsl_inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = ubsl_attrs,
    .nattrs = RILL_COUNTOF(ubsl_attrs),
    .flags = RILL_OP_RANDOM,
    .infer = bsl_infer,
    .grad = NULL,
    .kernel_dtype_slot = -1,
    .dtype_attr = BSL_DTYPE,
};

const rill_op_schema rill_schema_gaussian_random_batch_size_like = {
    .type = "gaussian_random_batch_size_like",
    .doc = "gaussian_random of `shape` whose dim output_dim_idx is Input's dim input_dim_idx.",
    .inputs = bsl_inputs,
    .ninputs = RILL_COUNTOF(bsl_inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = gbsl_attrs,
    .nattrs = RILL_COUNTOF(gbsl_attrs),
    .flags = RILL_OP_RANDOM,
    .infer = bsl_infer,
    .grad = NULL,
    .kernel_dtype_slot = -1,
    .dtype_attr = BSL_DTYPE,
};

/* ---- randint, randperm ---- */

static const rill_attr_schema randint_attrs[] = {
    {"shape", RILL_ATTR_LONGS, 0, RILL_DEF_EMPTY(RILL_ATTR_LONGS), "output shape"},
    {"low", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "lower bound (inclusive)"},
    {"high", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "upper bound (exclusive), above low"},
    {"seed", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "0: rill's default seed (see above)"},
    {"dtype", RILL_ATTR_INT, 0, RILL_DEF_INT(RILL_DTYPE_INT64), "int32 or int64"},
};

static rill_status *int_dtype(rill_infer_ctx *ctx, int32_t dt) {
  if (dt == RILL_DTYPE_INT32 || dt == RILL_DTYPE_INT64) return NULL;
  return rill_infer_error(ctx, "attribute dtype %d of output Out (%s) is not int32 (2) or "
                          "int64 (3)", (int)dt, rill_infer_out_name(ctx, 0, 0));
}

static rill_status *randint_infer(rill_infer_ctx *ctx) {
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!out) return rill_infer_error(ctx, "needs output Out");
  int32_t dt = ctx->attrs[RILL_RANDINT_ATTR_DTYPE].v.i;
  RILL_TRY(int_dtype(ctx, dt));
  if (ctx->attrs[RILL_RANDINT_ATTR_LOW].v.i >= ctx->attrs[RILL_RANDINT_ATTR_HIGH].v.i)
    return rill_infer_error(ctx, "low %d must be less than high %d",
                            (int)ctx->attrs[RILL_RANDINT_ATTR_LOW].v.i,
                            (int)ctx->attrs[RILL_RANDINT_ATTR_HIGH].v.i);
  rill_dims d;
  bool known;
  RILL_TRY(rill_shape_from_inputs(ctx, IN_SHAPE, IN_SHAPE_LIST,
                                  &ctx->attrs[RILL_RANDINT_ATTR_SHAPE], &d, &known));
  if (!known) rill_meta_unknown(out);
  else rill_meta_set(out, (rill_dtype)dt, &d, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_randint = {
    .type = "randint",
    .doc = "Out = integers uniform in [low, high) of shape and dtype (seeded as above).",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = randint_attrs,
    .nattrs = RILL_COUNTOF(randint_attrs),
    .flags = RILL_OP_RANDOM | RILL_OP_INFER_READS_DATA,
    .infer = randint_infer,
    .grad = NULL,
    .kernel_dtype_slot = -1,
    .dtype_attr = RILL_RANDINT_ATTR_DTYPE,
};

static const rill_attr_schema randperm_attrs[] = {
    {"n", RILL_ATTR_INT, RILL_ATTR_REQUIRED, RILL_DEF_INT(0), "permuted count, > 0"},
    {"dtype", RILL_ATTR_INT, 0, RILL_DEF_INT(RILL_DTYPE_INT64), "int32 or int64"},
    {"seed", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "0: rill's default seed (see above)"},
};

static rill_status *randperm_infer(rill_infer_ctx *ctx) {
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!out) return rill_infer_error(ctx, "needs output Out");
  int32_t dt = ctx->attrs[RILL_RANDPERM_ATTR_DTYPE].v.i, n = ctx->attrs[RILL_RANDPERM_ATTR_N].v.i;
  RILL_TRY(int_dtype(ctx, dt));
  if (n <= 0) return rill_infer_error(ctx, "attribute n is %d; it must be positive", (int)n);
  rill_dims d = {.n = 1, .d = {n}};
  rill_meta_set(out, (rill_dtype)dt, &d, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_randperm = {
    .type = "randperm",
    .doc = "Out = a random permutation of 0 .. n-1 (seeded as above).",
    .inputs = NULL,
    .ninputs = 0,
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = randperm_attrs,
    .nattrs = RILL_COUNTOF(randperm_attrs),
    .flags = RILL_OP_RANDOM,
    .infer = randperm_infer,
    .grad = NULL,
    .kernel_dtype_slot = -1,
    .dtype_attr = RILL_RANDPERM_ATTR_DTYPE,
};

RILL_OP_TABLE_CHECKS(random);
