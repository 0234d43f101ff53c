/* Quantization simulation (Paddle's fake_quantize / fake_dequantize family and 2.x's
 * quantize_linear / dequantize_linear): float tensors in, float tensors out, holding the
 * integer levels (quantize) or the values those levels stand for (dequantize). Scales
 * follow Paddle: abs max of the input, a moving average of it, or given. The kernels
 * (kernels/cpu/fake_quantize.c) hold the arithmetic; doc/design/inference_ops.md the
 * rules. */
#include "operators/op_util.h"

/* round_type: 0 rounds half to even and clamps to [-range-1, range] (Paddle >= 2.4's
 * QuantTensorFunctor); 1 clips X to [-scale, scale] and rounds half away from zero
 * (std::round, all Paddle versions before round_type existed). A file without the
 * attribute comes from such a version, hence default 1 for the fake_* ops. */
#define BIT_LENGTH_ATTR {"bit_length", RILL_ATTR_INT, 0, RILL_DEF_INT(8), "bits of the levels, 1..16"}
#define ROUND_TYPE_ATTR(d)                                                                \
  {"round_type", RILL_ATTR_INT, 0, RILL_DEF_INT(d),                                       \
   "0: round half to even, clamp; 1: clip to the scale, round half away from zero"}
#define IS_TEST_ATTR(d)                                                                   \
  {"is_test", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(d), "inference: use the given scale"}

/* Checks bit_length (1..16) and round_type (0 or 1), naming the op. */
static rill_status *check_bits_round(const rill_infer_ctx *ctx, int bits, int round) {
  if (bits < 1 || bits > 16)
    return rill_infer_error(ctx, "attribute bit_length is %d, must be between 1 and 16", bits);
  if (round != 0 && round != 1)
    return rill_infer_error(ctx, "attribute round_type is %d, must be 0 or 1", round);
  return NULL;
}

static void set_scalar(rill_tensor_meta *m, rill_dtype dt) {
  if (!m) return;
  rill_dims one = {.n = 1, .d = {1}};
  rill_meta_set(m, dt, &one, 0, -1, -1);
}

/* Out like X (LoD too); the listed outputs [1]. */
static rill_status *like_x(rill_infer_ctx *ctx, size_t out_slot, const size_t *scalars,
                           size_t nscalars) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, out_slot, 0);
  if (!x || !out)
    return rill_infer_error(ctx, "needs input X and output %s", ctx->schema->outputs[out_slot].name);
  if (!x->known) {
    rill_meta_unknown(out);
    for (size_t i = 0; i < nscalars; i++)
      if (rill_infer_out(ctx, scalars[i], 0)) rill_meta_unknown(rill_infer_out(ctx, scalars[i], 0));
    return NULL;
  }
  rill_meta_set(out, x->dtype, &x->dims, x->lod_level, 0, 0);
  for (size_t i = 0; i < nscalars; i++) set_scalar(rill_infer_out(ctx, scalars[i], 0), x->dtype);
  return NULL;
}

/* ---- fake_quantize_abs_max, fake_quantize_dequantize_abs_max ---- */

static const rill_slot_schema absmax_in[] = {{"X", 0, "float input"}};
static const rill_slot_schema absmax_out[] = {
    {"Out", 0, "levels (quantize) or their values (quantize-dequantize), X's shape"},
    {"OutScale", 0, "[1]: max |X|"},
};
static const rill_attr_schema absmax_attrs[] = {BIT_LENGTH_ATTR, ROUND_TYPE_ATTR(1)};

static rill_status *absmax_infer(rill_infer_ctx *ctx) {
  RILL_TRY(check_bits_round(ctx, ctx->attrs[RILL_FAKE_QUANTIZE_ABS_MAX_ATTR_BIT_LENGTH].v.i,
                            ctx->attrs[RILL_FAKE_QUANTIZE_ABS_MAX_ATTR_ROUND_TYPE].v.i));
  const size_t s[] = {RILL_FAKE_QUANTIZE_ABS_MAX_OUT_OUT_SCALE};
  return like_x(ctx, RILL_FAKE_QUANTIZE_ABS_MAX_OUT_OUT, s, 1);
}

const rill_op_schema rill_schema_fake_quantize_abs_max = {
    .type = "fake_quantize_abs_max",
    .flags = RILL_OP_NO_GRADIENT,
    .doc = "scale = max|X|; Out = round(X * range / scale), range = 2^(bit_length-1) - 1.",
    .inputs = absmax_in,
    .ninputs = RILL_COUNTOF(absmax_in),
    .outputs = absmax_out,
    .noutputs = RILL_COUNTOF(absmax_out),
    .attrs = absmax_attrs,
    .nattrs = RILL_COUNTOF(absmax_attrs),
    .infer = absmax_infer,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

/* Straight-through estimator: X@GRAD = Out@GRAD (Paddle's fake_quantize_dequantize_grad). */
static const char *const slot_x[] = {"X"}, *const slot_out[] = {"Out"};
static rill_status *qdq_grad_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit(ctx, "fake_quantize_dequantize_grad", slot_x, 1, slot_out, 1, slot_x, 1);
}

const rill_op_schema rill_schema_fake_quantize_dequantize_abs_max = {
    .type = "fake_quantize_dequantize_abs_max",
    .doc = "scale = max|X|; Out = round(X * range / scale) * scale / range.",
    .inputs = absmax_in,
    .ninputs = RILL_COUNTOF(absmax_in),
    .outputs = absmax_out,
    .noutputs = RILL_COUNTOF(absmax_out),
    .attrs = absmax_attrs,
    .nattrs = RILL_COUNTOF(absmax_attrs),
    .infer = absmax_infer,
    .grad = qdq_grad_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema qdq_grad_in[] = {
    {"X", RILL_SLOT_DISPENSABLE, "forward input (its shape)"},
    {"Out@GRAD", 0, "gradient of Out"},
};
static const rill_slot_schema qdq_grad_out[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "gradient of X: Out@GRAD unchanged"},
};

static rill_status *qdq_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *g = rill_infer_in(ctx, RILL_FAKE_QUANTIZE_DEQUANTIZE_GRAD_IN_OUT_GRAD, 0);
  rill_tensor_meta *dx = rill_infer_out(ctx, RILL_FAKE_QUANTIZE_DEQUANTIZE_GRAD_OUT_X_GRAD, 0);
  if (!dx) return NULL;
  if (!g) return rill_infer_error(ctx, "needs input Out@GRAD");
  if (!g->known) {
    rill_meta_unknown(dx);
    return NULL;
  }
  rill_meta_set(dx, g->dtype, &g->dims, g->lod_level, RILL_FAKE_QUANTIZE_DEQUANTIZE_GRAD_IN_OUT_GRAD, 0);
  return NULL;
}

const rill_op_schema rill_schema_fake_quantize_dequantize_grad = {
    .type = "fake_quantize_dequantize_grad",
    .doc = "Straight-through gradient of the quantize-dequantize ops: X@GRAD = Out@GRAD.",
    .inputs = qdq_grad_in,
    .ninputs = RILL_COUNTOF(qdq_grad_in),
    .outputs = qdq_grad_out,
    .noutputs = RILL_COUNTOF(qdq_grad_out),
    .flags = RILL_OP_INPLACE,
    .infer = qdq_grad_infer,
    .kernel_dtype_slot = RILL_FAKE_QUANTIZE_DEQUANTIZE_GRAD_IN_OUT_GRAD,
    .dtype_attr = -1,
};

/* ---- fake_quantize_range_abs_max ---- */

static const rill_slot_schema range_in[] = {
    {"X", 0, "float input"},
    {"InScale", RILL_SLOT_NO_GRAD, "[1]: the scale (is_test) or the last one"},
    {"Iter", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD, "global step (training)"},
};
static const rill_slot_schema range_out[] = {
    {"Out", 0, "levels, X's shape"},
    {"OutScale", 0, "[1]: the scale used"},
    {"OutScales", RILL_SLOT_DISPENSABLE, "[window_size]: the scale window (training)"},
};
static const rill_attr_schema range_attrs[] = {
    {"window_size", RILL_ATTR_INT, 0, RILL_DEF_INT(10000), "scales kept in training"},
    BIT_LENGTH_ATTR,
    ROUND_TYPE_ATTR(1),
    IS_TEST_ATTR(false),
};

static rill_status *range_infer(rill_infer_ctx *ctx) {
  RILL_TRY(check_bits_round(ctx, ctx->attrs[RILL_FAKE_QUANTIZE_RANGE_ABS_MAX_ATTR_BIT_LENGTH].v.i,
                            ctx->attrs[RILL_FAKE_QUANTIZE_RANGE_ABS_MAX_ATTR_ROUND_TYPE].v.i));
  int w = ctx->attrs[RILL_FAKE_QUANTIZE_RANGE_ABS_MAX_ATTR_WINDOW_SIZE].v.i;
  if (w < 1) return rill_infer_error(ctx, "attribute window_size is %d, must be >= 1", w);
  rill_tensor_meta *scales = rill_infer_out(ctx, RILL_FAKE_QUANTIZE_RANGE_ABS_MAX_OUT_OUT_SCALES, 0);
  /* the window is state read before it is written: left unknown, the executor keeps the
   * variable's tensor (the startup program's zeros, then the last run's scales) */
  if (scales) rill_meta_unknown(scales);
  const size_t s[] = {RILL_FAKE_QUANTIZE_RANGE_ABS_MAX_OUT_OUT_SCALE};
  return like_x(ctx, RILL_FAKE_QUANTIZE_RANGE_ABS_MAX_OUT_OUT, s, 1);
}

const rill_op_schema rill_schema_fake_quantize_range_abs_max = {
    .type = "fake_quantize_range_abs_max",
    .flags = RILL_OP_NO_GRADIENT,
    .doc = "Out = round(X * range / scale); scale = InScale (is_test) or the max of the last "
           "window_size abs maxima, kept in OutScales (training).",
    .inputs = range_in,
    .ninputs = RILL_COUNTOF(range_in),
    .outputs = range_out,
    .noutputs = RILL_COUNTOF(range_out),
    .attrs = range_attrs,
    .nattrs = RILL_COUNTOF(range_attrs),
    .infer = range_infer,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

/* ---- fake_quantize_moving_average_abs_max, fake_quantize_dequantize_moving_average_abs_max ---- */

static const rill_slot_schema mavg_in[] = {
    {"X", 0, "float input"},
    {"InScale", RILL_SLOT_NO_GRAD, "[1]: the scale (is_test)"},
    {"InAccum", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD, "[1]: last accumulator (training)"},
    {"InState", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD, "[1]: last state (training)"},
};
static const rill_slot_schema mavg_out[] = {
    {"Out", 0, "levels or their values, X's shape"},
    {"OutScale", 0, "[1]: accum / state"},
    {"OutState", RILL_SLOT_DISPENSABLE, "[1]: moving_rate * state + 1"},
    {"OutAccum", RILL_SLOT_DISPENSABLE, "[1]: moving_rate * accum + max|X|"},
};
static const rill_attr_schema mavg_attrs[] = {
    {"moving_rate", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.9f), "decay of state and accum"},
    BIT_LENGTH_ATTR,
    ROUND_TYPE_ATTR(1),
    IS_TEST_ATTR(false),
};

static rill_status *mavg_infer(rill_infer_ctx *ctx) {
  RILL_TRY(check_bits_round(
      ctx, ctx->attrs[RILL_FAKE_QUANTIZE_MOVING_AVERAGE_ABS_MAX_ATTR_BIT_LENGTH].v.i,
      ctx->attrs[RILL_FAKE_QUANTIZE_MOVING_AVERAGE_ABS_MAX_ATTR_ROUND_TYPE].v.i));
  const size_t s[] = {RILL_FAKE_QUANTIZE_MOVING_AVERAGE_ABS_MAX_OUT_OUT_SCALE,
                      RILL_FAKE_QUANTIZE_MOVING_AVERAGE_ABS_MAX_OUT_OUT_STATE,
                      RILL_FAKE_QUANTIZE_MOVING_AVERAGE_ABS_MAX_OUT_OUT_ACCUM};
  return like_x(ctx, RILL_FAKE_QUANTIZE_MOVING_AVERAGE_ABS_MAX_OUT_OUT, s, 3);
}

const rill_op_schema rill_schema_fake_quantize_moving_average_abs_max = {
    .type = "fake_quantize_moving_average_abs_max",
    .flags = RILL_OP_NO_GRADIENT,
    .doc = "Out = round(X * range / scale); scale = InScale (is_test) or the moving average "
           "of max|X| (training).",
    .inputs = mavg_in,
    .ninputs = RILL_COUNTOF(mavg_in),
    .outputs = mavg_out,
    .noutputs = RILL_COUNTOF(mavg_out),
    .attrs = mavg_attrs,
    .nattrs = RILL_COUNTOF(mavg_attrs),
    .infer = mavg_infer,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

const rill_op_schema rill_schema_fake_quantize_dequantize_moving_average_abs_max = {
    .type = "fake_quantize_dequantize_moving_average_abs_max",
    .doc = "Out = round(X * range / scale) * scale / range, scale as in "
           "fake_quantize_moving_average_abs_max.",
    .inputs = mavg_in,
    .ninputs = RILL_COUNTOF(mavg_in),
    .outputs = mavg_out,
    .noutputs = RILL_COUNTOF(mavg_out),
    .attrs = mavg_attrs,
    .nattrs = RILL_COUNTOF(mavg_attrs),
    .infer = mavg_infer,
    .grad = qdq_grad_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

/* ---- fake_dequantize_max_abs ---- */

static const rill_slot_schema deq_in[] = {
    {"X", 0, "levels"},
    {"Scale", RILL_SLOT_NO_GRAD, "[1]: the scale"},
};
static const rill_slot_schema deq_out[] = {{"Out", 0, "X * Scale / max_range"}};
static const rill_attr_schema deq_attrs[] = {
    {"max_range", RILL_ATTR_FLOAT, RILL_ATTR_REQUIRED, RILL_DEF_FLOAT(0.0f),
     "the level that stands for Scale, > 0"},
};

static rill_status *deq_infer(rill_infer_ctx *ctx) {
  float r = ctx->attrs[RILL_FAKE_DEQUANTIZE_MAX_ABS_ATTR_MAX_RANGE].v.f;
  if (!(r > 0)) return rill_infer_error(ctx, "attribute max_range is %g, must be > 0", (double)r);
  return like_x(ctx, RILL_FAKE_DEQUANTIZE_MAX_ABS_OUT_OUT, NULL, 0);
}

const rill_op_schema rill_schema_fake_dequantize_max_abs = {
    .type = "fake_dequantize_max_abs",
    .flags = RILL_OP_NO_GRADIENT,
    .doc = "Out = X * Scale / max_range.",
    .inputs = deq_in,
    .ninputs = RILL_COUNTOF(deq_in),
    .outputs = deq_out,
    .noutputs = RILL_COUNTOF(deq_out),
    .attrs = deq_attrs,
    .nattrs = RILL_COUNTOF(deq_attrs),
    .infer = deq_infer,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

/* ---- fake_channel_wise_quantize_abs_max ---- */

static const rill_slot_schema chq_out[] = {
    {"Out", 0, "levels, X's shape"},
    {"OutScale", 0, "[X.dims[quant_axis]]: each channel's max |X|"},
};
static const rill_attr_schema chq_attrs[] = {
    {"quant_axis", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "channel axis, 0 or 1"},
    BIT_LENGTH_ATTR,
    ROUND_TYPE_ATTR(1),
    IS_TEST_ATTR(false),
};

/* quant_axis 0 or 1 (or -1 where allow_tensor) within X's rank. */
static rill_status *check_axis(const rill_infer_ctx *ctx, int axis, bool allow_tensor) {
  if (!(axis == 0 || axis == 1 || (allow_tensor && axis == -1)))
    return rill_infer_error(ctx, "attribute quant_axis is %d, must be %s", axis,
                            allow_tensor ? "-1, 0 or 1" : "0 or 1");
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  if (axis >= 0 && x && x->known && x->dims.n <= axis)
    return rill_infer_error(ctx, "attribute quant_axis %d is out of range for input X (%s) of rank %d",
                            axis, rill_infer_in_name(ctx, 0, 0), (int)x->dims.n);
  return NULL;
}

static rill_status *chq_infer(rill_infer_ctx *ctx) {
  int axis = ctx->attrs[RILL_FAKE_CHANNEL_WISE_QUANTIZE_ABS_MAX_ATTR_QUANT_AXIS].v.i;
  RILL_TRY(check_bits_round(ctx, ctx->attrs[RILL_FAKE_CHANNEL_WISE_QUANTIZE_ABS_MAX_ATTR_BIT_LENGTH].v.i,
                            ctx->attrs[RILL_FAKE_CHANNEL_WISE_QUANTIZE_ABS_MAX_ATTR_ROUND_TYPE].v.i));
  RILL_TRY(check_axis(ctx, axis, false));
  RILL_TRY(like_x(ctx, RILL_FAKE_CHANNEL_WISE_QUANTIZE_ABS_MAX_OUT_OUT, NULL, 0));
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *s = rill_infer_out(ctx, RILL_FAKE_CHANNEL_WISE_QUANTIZE_ABS_MAX_OUT_OUT_SCALE, 0);
  if (!s) return rill_infer_error(ctx, "needs output OutScale");
  if (!x->known) {
    rill_meta_unknown(s);
    return NULL;
  }
  /* is_test reads OutScale's stored values: left unknown, the executor keeps its tensor */
  if (ctx->attrs[RILL_FAKE_CHANNEL_WISE_QUANTIZE_ABS_MAX_ATTR_IS_TEST].v.b) {
    rill_meta_unknown(s);
    return NULL;
  }
  rill_dims d = {.n = 1, .d = {x->dims.d[axis]}};
  rill_meta_set(s, x->dtype, &d, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_fake_channel_wise_quantize_abs_max = {
    .type = "fake_channel_wise_quantize_abs_max",
    .flags = RILL_OP_NO_GRADIENT,
    .doc = "Per channel c of quant_axis: scale_c = max|X_c| (is_test: OutScale as stored); "
           "Out_c = round(X_c * range / scale_c).",
    .inputs = absmax_in,
    .ninputs = RILL_COUNTOF(absmax_in),
    .outputs = chq_out,
    .noutputs = RILL_COUNTOF(chq_out),
    .attrs = chq_attrs,
    .nattrs = RILL_COUNTOF(chq_attrs),
    .infer = chq_infer,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

/* ---- fake_channel_wise_dequantize_max_abs ---- */

static const rill_slot_schema chd_in[] = {
    {"X", 0, "levels"},
    {"Scales", RILL_SLOT_DUPLICABLE | RILL_SLOT_NO_GRAD,
     "one (per channel of quant_axis) or two (per channel of dim x_num_col_dims, then [1])"},
};
static const int32_t quant_bits_default[] = {8};
static const rill_attr_schema chd_attrs[] = {
    {"quant_bits", RILL_ATTR_INTS, 0,
     {.type = RILL_ATTR_INTS, .n = 1, .list.ints = (int32_t *)quant_bits_default},
     "bits behind each scale"},
    {"quant_axis", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "channel axis of one scale, 0 or 1"},
    {"x_num_col_dims", RILL_ATTR_INT, 0, RILL_DEF_INT(1), "channel axis of two scales"},
};

static rill_status *chd_infer(rill_infer_ctx *ctx) {
  const rill_attr_value *qb = &ctx->attrs[RILL_FAKE_CHANNEL_WISE_DEQUANTIZE_MAX_ABS_ATTR_QUANT_BITS];
  size_t ns = ctx->nin[RILL_FAKE_CHANNEL_WISE_DEQUANTIZE_MAX_ABS_IN_SCALES];
  if (ns != 1 && ns != 2)
    return rill_infer_error(ctx, "input Scales holds %zu tensors, must hold 1 or 2", ns);
  if (qb->n < ns)
    return rill_infer_error(ctx, "attribute quant_bits has %zu values for %zu scales", qb->n, ns);
  for (size_t i = 0; i < ns; i++)
    if (qb->list.ints[i] < 1 || qb->list.ints[i] > 16)
      return rill_infer_error(ctx, "attribute quant_bits[%zu] is %d, must be between 1 and 16", i,
                              (int)qb->list.ints[i]);
  if (ns == 1)
    RILL_TRY(check_axis(ctx, ctx->attrs[RILL_FAKE_CHANNEL_WISE_DEQUANTIZE_MAX_ABS_ATTR_QUANT_AXIS].v.i, false));
  else {
    int c = ctx->attrs[RILL_FAKE_CHANNEL_WISE_DEQUANTIZE_MAX_ABS_ATTR_X_NUM_COL_DIMS].v.i;
    const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
    if (c < 0 || (x && x->known && c >= x->dims.n))
      return rill_infer_error(ctx, "attribute x_num_col_dims is %d, out of range for input X (%s)", c,
                              rill_infer_in_name(ctx, 0, 0));
  }
  return like_x(ctx, RILL_FAKE_CHANNEL_WISE_DEQUANTIZE_MAX_ABS_OUT_OUT, NULL, 0);
}

const rill_op_schema rill_schema_fake_channel_wise_dequantize_max_abs = {
    .type = "fake_channel_wise_dequantize_max_abs",
    .flags = RILL_OP_NO_GRADIENT,
    .doc = "One scale: Out = X * Scales[0][c] / range0 along quant_axis; two: "
           "Out = X * Scales[0][c] * Scales[1][0] / (range0 * range1), c along x_num_col_dims.",
    .inputs = chd_in,
    .ninputs = RILL_COUNTOF(chd_in),
    .outputs = deq_out,
    .noutputs = RILL_COUNTOF(deq_out),
    .attrs = chd_attrs,
    .nattrs = RILL_COUNTOF(chd_attrs),
    .infer = chd_infer,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

/* ---- quantize_linear, dequantize_linear (Paddle 2.x) ---- */

static const rill_slot_schema lin_in[] = {
    {"X", 0, "input"},
    {"Scale", RILL_SLOT_NO_GRAD, "[1] (quant_axis -1) or [X.dims[quant_axis]]"},
    {"ZeroPoint", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD, "zero points (Paddle's are 0; unused)"},
    {"InAccum", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD, "training only"},
    {"InState", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD, "training only"},
};
static const rill_slot_schema lin_out[] = {
    {"Y", 0, "levels (quantize) or values (dequantize), X's shape"},
    {"OutScale", RILL_SLOT_DISPENSABLE, "training only"},
    {"OutState", RILL_SLOT_DISPENSABLE, "training only"},
    {"OutAccum", RILL_SLOT_DISPENSABLE, "training only"},
};
static const rill_attr_schema lin_attrs[] = {
    {"quant_axis", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "channel axis; -1: one scale"},
    BIT_LENGTH_ATTR,
    {"qmin", RILL_ATTR_INT, RILL_ATTR_EXTRA, RILL_DEF_INT(-128), "lowest level (unused)"},
    {"qmax", RILL_ATTR_INT, RILL_ATTR_EXTRA, RILL_DEF_INT(127), "highest level (unused)"},
    ROUND_TYPE_ATTR(0),
    IS_TEST_ATTR(true),
    {"only_observer", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false), "Y = X, scales only"},
};

static rill_status *lin_infer(rill_infer_ctx *ctx) {
  RILL_TRY(check_bits_round(ctx, ctx->attrs[RILL_QUANTIZE_LINEAR_ATTR_BIT_LENGTH].v.i,
                            ctx->attrs[RILL_QUANTIZE_LINEAR_ATTR_ROUND_TYPE].v.i));
  int axis = ctx->attrs[RILL_QUANTIZE_LINEAR_ATTR_QUANT_AXIS].v.i;
  RILL_TRY(check_axis(ctx, axis, true));
  RILL_TRY(like_x(ctx, RILL_QUANTIZE_LINEAR_OUT_Y, NULL, 0));
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *os = rill_infer_out(ctx, RILL_QUANTIZE_LINEAR_OUT_OUT_SCALE, 0);
  if (os) {
    if (!x->known)
      rill_meta_unknown(os);
    else {
      rill_dims d = {.n = 1, .d = {axis < 0 ? 1 : x->dims.d[axis]}};
      rill_meta_set(os, RILL_DTYPE_FP32, &d, 0, -1, -1);
    }
  }
  set_scalar(rill_infer_out(ctx, RILL_QUANTIZE_LINEAR_OUT_OUT_STATE, 0), RILL_DTYPE_FP32);
  set_scalar(rill_infer_out(ctx, RILL_QUANTIZE_LINEAR_OUT_OUT_ACCUM, 0), RILL_DTYPE_FP32);
  return NULL;
}

const rill_op_schema rill_schema_quantize_linear = {
    .type = "quantize_linear",
    .doc = "Y = round(X * range / Scale) per tensor (quant_axis -1) or per channel.",
    .inputs = lin_in,
    .ninputs = RILL_COUNTOF(lin_in),
    .outputs = lin_out,
    .noutputs = RILL_COUNTOF(lin_out),
    .attrs = lin_attrs,
    .nattrs = RILL_COUNTOF(lin_attrs),
    .infer = lin_infer,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

const rill_op_schema rill_schema_dequantize_linear = {
    .type = "dequantize_linear",
    .doc = "Y = X * Scale / range per tensor (quant_axis -1) or per channel.",
    .inputs = lin_in,
    .ninputs = RILL_COUNTOF(lin_in),
    .outputs = lin_out,
    .noutputs = RILL_COUNTOF(lin_out),
    .attrs = lin_attrs,
    .nattrs = RILL_COUNTOF(lin_attrs),
    .infer = lin_infer,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(fake_quantize);
