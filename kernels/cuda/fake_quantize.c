/* Quantization simulation with stored scales, float32, as a quantization-aware model
 * runs for inference: fake_quantize_moving_average_abs_max and
 * fake_quantize_dequantize_moving_average_abs_max with is_test (the scale InScale; their
 * training form, which measures and averages X's abs max, runs on the host), and
 * fake_dequantize_max_abs. The scale stays on the device and device/quant.cu reads it
 * there; the levels are the CPU kernel's (kernels/cpu/fake_quantize.c) bit for bit. */
#include "kernels/cuda/cuda.h"

#define MAVG(name) RILL_FAKE_QUANTIZE_MOVING_AVERAGE_ABS_MAX_##name

bool rill_cuda_fake_quantize_accepts(const rill_kernel_ctx *ctx) { return ctx->attrs[MAVG(ATTR_IS_TEST)].v.b; }

/* The one float32 of a [1] input (on the device). */
static rill_status *scalar_in(rill_kernel_ctx *ctx, size_t slot, rill_tensor **t) {
  RILL_TRY(rill_kin_need(ctx, slot, 0, RILL_DTYPE_FP32, t));
  if (rill_tensor_numel(*t) < 1)
    return rill_kernel_error(ctx, "input %s (%s) is empty, expected one value", ctx->schema->inputs[slot].name,
                             rill_kin_name(ctx, slot, 0));
  return NULL;
}

/* Output out_slot, when wanted, := input in_slot's value (0 without the input). */
static rill_status *pass_scalar(rill_kernel_ctx *ctx, rill_cuda_dev *d, size_t out_slot, size_t in_slot) {
  if (!rill_kout(ctx, out_slot, 0)) return NULL;
  rill_tensor *o, *in = NULL;
  RILL_TRY(rill_kout_need(ctx, out_slot, 0, RILL_DTYPE_FP32, &o));
  if (rill_tensor_numel(o) < 1)
    return rill_kernel_error(ctx, "output %s (%s) has no room for the value", ctx->schema->outputs[out_slot].name,
                             rill_kout_name(ctx, out_slot, 0));
  if (rill_kin(ctx, in_slot, 0)) RILL_TRY(scalar_in(ctx, in_slot, &in));
  cudaError_t e = cudaSuccess;
  if (!in)
    e = cudaMemsetAsync(rill_tensor_ptr(o), 0, sizeof(float), d->stream);
  else if (rill_tensor_ptr(in) != rill_tensor_ptr(o))
    e = cudaMemcpyAsync(rill_tensor_ptr(o), rill_tensor_ptr(in), sizeof(float), cudaMemcpyDeviceToDevice, d->stream);
  return rill_cuda_kernel_check(ctx, e, "passing the scale on");
}

static rill_status *mavg_test(rill_kernel_ctx *ctx, bool dq) {
  if (!ctx->attrs[MAVG(ATTR_IS_TEST)].v.b)
    return rill_kernel_error(ctx, "the CUDA kernel runs the inference form (is_test); training runs on the host");
  rill_tensor *x, *out, *scale;
  RILL_TRY(rill_kin_need(ctx, MAVG(IN_X), 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kout_need(ctx, MAVG(OUT_OUT), 0, RILL_DTYPE_FP32, &out));
  RILL_TRY(rill_kout_check_dims(ctx, MAVG(OUT_OUT), 0, out, &x->dims));
  RILL_TRY(scalar_in(ctx, MAVG(IN_IN_SCALE), &scale));
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, out, &d));
  /* The range of the levels, 2^(bit_length-1) - 1 (the schema keeps bit_length in 1..16). */
  float bin = (float)((1 << (ctx->attrs[MAVG(ATTR_BIT_LENGTH)].v.i - 1)) - 1);
  RILL_TRY(rill_cuda_kernel_check(
      ctx,
      rill_cuda_quant_f32(rill_tensor_ptr(x), rill_tensor_ptr(out), rill_tensor_numel(x), rill_tensor_ptr(scale), bin,
                          ctx->attrs[MAVG(ATTR_ROUND_TYPE)].v.i, dq, d->stream),
      "quantize launch"));
  RILL_TRY(pass_scalar(ctx, d, MAVG(OUT_OUT_SCALE), MAVG(IN_IN_SCALE)));
  RILL_TRY(pass_scalar(ctx, d, MAVG(OUT_OUT_STATE), MAVG(IN_IN_STATE)));
  return pass_scalar(ctx, d, MAVG(OUT_OUT_ACCUM), MAVG(IN_IN_ACCUM));
}

rill_status *rill_cuda_fake_quantize_moving_average_abs_max_fp32(rill_kernel_ctx *ctx) { return mavg_test(ctx, false); }

rill_status *rill_cuda_fake_quantize_dequantize_moving_average_abs_max_fp32(rill_kernel_ctx *ctx) {
  return mavg_test(ctx, true);
}

rill_status *rill_cuda_fake_dequantize_max_abs_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *x, *out, *scale;
  RILL_TRY(rill_kin_need(ctx, RILL_FAKE_DEQUANTIZE_MAX_ABS_IN_X, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kout_need(ctx, RILL_FAKE_DEQUANTIZE_MAX_ABS_OUT_OUT, 0, RILL_DTYPE_FP32, &out));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_FAKE_DEQUANTIZE_MAX_ABS_OUT_OUT, 0, out, &x->dims));
  RILL_TRY(scalar_in(ctx, RILL_FAKE_DEQUANTIZE_MAX_ABS_IN_SCALE, &scale));
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, out, &d));
  return rill_cuda_kernel_check(
      ctx,
      rill_cuda_dequant_f32(rill_tensor_ptr(x), rill_tensor_ptr(out), rill_tensor_numel(x), rill_tensor_ptr(scale),
                            ctx->attrs[RILL_FAKE_DEQUANTIZE_MAX_ABS_ATTR_MAX_RANGE].v.f, d->stream),
      "dequantize launch");
}
