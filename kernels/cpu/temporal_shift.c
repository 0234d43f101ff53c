/* temporal_shift CPU kernels: one copy per (frame, channel) plane. Forward, channel c of
 * frame t reads frame t - 1 (c < c1), t + 1 (c1 <= c < c2) or t; the gradient writes
 * each plane of Out@GRAD back to the frame it was read from. */
#include <string.h>

#include "kernels/cpu/kernels.h"

/* grad false: out[t] = in[src(t)]; true: out[src(t)] = in[t] (zeros elsewhere). */
static rill_status *ts_run(rill_kernel_ctx *ctx, rill_dtype dt, bool grad) {
  rill_tensor *in = NULL, *out = NULL;
  RILL_TRY(rill_kin_need(ctx, 0, 0, dt, &in));
  if (!rill_kout(ctx, 0, 0)) return NULL;
  RILL_TRY(rill_kout_need(ctx, 0, 0, dt, &out));
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &in->dims));
  int64_t seg = ctx->attrs[RILL_TEMPORAL_SHIFT_ATTR_SEG_NUM].v.i;
  double r = ctx->attrs[RILL_TEMPORAL_SHIFT_ATTR_SHIFT_RATIO].v.f;
  if (in->dims.n != 4 || seg <= 0 || in->dims.d[0] % seg)
    return rill_kernel_error(ctx, "input %s (%s) must be 4-D with a first dim that is a "
                             "multiple of seg_num %lld", ctx->schema->inputs[0].name,
                             rill_kin_name(ctx, 0, 0), (long long)seg);
  int64_t clips = in->dims.d[0] / seg, c = in->dims.d[1], hw = in->dims.d[2] * in->dims.d[3];
  int64_t c1 = (int64_t)((double)c * r), c2 = (int64_t)((double)c * 2 * r);
  size_t es = rill_dtype_size(dt), plane = (size_t)hw * es;
  const char *ip = rill_tensor_ptr(in);
  char *op = rill_tensor_ptr(out);
  memset(op, 0, rill_tensor_nbytes(out));
  for (int64_t n = 0; n < clips; n++)
    for (int64_t t = 0; t < seg; t++)
      for (int64_t ch = 0; ch < c; ch++) {
        int64_t src = ch < c1 ? t - 1 : ch < c2 ? t + 1 : t;
        if (src < 0 || src >= seg) continue;
        size_t at = (size_t)(((n * seg + t) * c + ch)) * plane;
        size_t from = (size_t)(((n * seg + src) * c + ch)) * plane;
        if (grad) memcpy(op + from, ip + at, plane);
        else memcpy(op + at, ip + from, plane);
      }
  return NULL;
}

rill_status *rill_cpu_temporal_shift_fp32(rill_kernel_ctx *ctx) {
  return ts_run(ctx, RILL_DTYPE_FP32, false);
}
rill_status *rill_cpu_temporal_shift_fp64(rill_kernel_ctx *ctx) {
  return ts_run(ctx, RILL_DTYPE_FP64, false);
}
rill_status *rill_cpu_temporal_shift_grad_fp32(rill_kernel_ctx *ctx) {
  return ts_run(ctx, RILL_DTYPE_FP32, true);
}
rill_status *rill_cpu_temporal_shift_grad_fp64(rill_kernel_ctx *ctx) {
  return ts_run(ctx, RILL_DTYPE_FP64, true);
}
