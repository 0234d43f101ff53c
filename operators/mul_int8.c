/* mul_int8: a matrix product over quantized levels computed in int8 with int32 sums,
 * then dequantized: Out[:, n] = flatten(X) [B, K] x Y [K, N] [:, n] * FilterScale[n] *
 * Scale / max_range, each scale only where given (at least one). X holds integer levels
 * in [-128, 127] (flattened at x_num_col_dims, as mul's), Y is a 2-D weight of levels in
 * [-127, 127]; it is what the INT8 inference pass makes of mul or matmul (2-D weight)
 * -> fake_dequantize_max_abs or fake_channel_wise_dequantize_max_abs when X comes from a
 * fake quantize op (doc/design/int8.md). With InScale, X holds floats that the op quantizes
 * as the fake quantize op it absorbed (bit_length, round_type) while it reads them. */
#include "operators/nn.h"

static const rill_slot_schema inputs[] = {
    {"X", 0, "[..., K] integer levels in [-128, 127], rows at x_num_col_dims"},
    {"Y", 0, "[K, N] integer levels in [-127, 127]"},
    {"Scale", RILL_SLOT_DISPENSABLE, "[1], the dequantizing (activation) scale"},
    {"FilterScale", RILL_SLOT_DISPENSABLE, "[N], one scale per output column"},
    {"InScale", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD,
     "[1]: X holds floats, quantized here as the folded fake quantize op did with this scale"},
};
static const rill_slot_schema outputs[] = {
    {"Out", 0, "X dims[:x_num_col_dims] + [N]"},
};
static const rill_attr_schema attrs[] = {
    {"x_num_col_dims", RILL_ATTR_INT, 0, RILL_DEF_INT(1), "leading dims of X that form rows"},
    {"max_range", RILL_ATTR_FLOAT, RILL_ATTR_REQUIRED, RILL_DEF_FLOAT(0.0f),
     "divisor of the dequantization, > 0"},
    RILL_I8_QUANT_ATTRS,
};

static rill_status *mul_int8_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *y = rill_infer_in(ctx, 1, 0),
                         *s = rill_infer_in(ctx, 2, 0), *fs = rill_infer_in(ctx, 3, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !y || (!s && !fs) || !out)
    return rill_infer_error(ctx, "needs inputs X, Y, Scale or FilterScale, and output Out");
  float r = ctx->attrs[RILL_MUL_INT8_ATTR_MAX_RANGE].v.f;
  if (!(r > 0)) return rill_infer_error(ctx, "attribute max_range is %g, must be > 0", (double)r);
  int bits = ctx->attrs[RILL_MUL_INT8_ATTR_BIT_LENGTH].v.i, rt = ctx->attrs[RILL_MUL_INT8_ATTR_ROUND_TYPE].v.i;
  if (rill_infer_in(ctx, RILL_MUL_INT8_IN_IN_SCALE, 0) && !rill_nn_i8_quant_attrs_ok(bits, rt))
    return rill_infer_error(ctx, "with InScale, bit_length is %d (must be 2..8) and round_type %d (0 or 1)", bits, rt);
  if (!x->known || !y->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  int xn = ctx->attrs[RILL_MUL_INT8_ATTR_X_NUM_COL_DIMS].v.i;
  if (xn < 1 || xn >= x->dims.n)
    return rill_infer_error(ctx, "input X (%s) has rank %d: x_num_col_dims %d must be in [1, rank)",
                            rill_infer_in_name(ctx, 0, 0), x->dims.n, xn);
  if (y->dims.n != 2)
    return rill_infer_error(ctx, "input Y (%s) has rank %d, must be 2", rill_infer_in_name(ctx, 1, 0), y->dims.n);
  int64_t k = 1;
  for (int i = xn; i < x->dims.n; i++) k = x->dims.d[i] < 0 || k < 0 ? -1 : k * x->dims.d[i];
  if (k >= 0 && y->dims.d[0] >= 0 && k != y->dims.d[0])
    return rill_infer_error(ctx, "input X (%s) flattens to %lld columns but input Y (%s) has %lld rows",
                            rill_infer_in_name(ctx, 0, 0), (long long)k, rill_infer_in_name(ctx, 1, 0),
                            (long long)y->dims.d[0]);
  rill_dims od;
  od.n = xn + 1;
  for (int i = 0; i < xn; i++) od.d[i] = x->dims.d[i];
  od.d[xn] = y->dims.d[1];
  rill_meta_set(out, RILL_DTYPE_FP32, &od, x->lod_level, 0, 0);
  return NULL;
}

const rill_op_schema rill_schema_mul_int8 = {
    .type = "mul_int8",
    .doc = "Out[:, n] = (flatten(X) x Y)[:, n] * FilterScale[n] * Scale / max_range over integer levels "
           "(each scale where given), computed in int8 with exact int32 sums.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = mul_int8_infer,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(mul_int8);
