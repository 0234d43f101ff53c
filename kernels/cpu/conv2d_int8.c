/* conv2d_int8: the convolution of integer levels in int8 with int32 sums, dequantized
 * as fake_dequantize_max_abs does (operators/conv2d_int8.c, kernels/cpu/igemm.h). A
 * filter whose buffer is immutable (a predictor's weights) is packed once and kept with
 * the buffer; any other is packed on each call. */
#include "framework/base/alloc.h"
#include "kernels/cpu/igemm.h"
#include "kernels/cpu/kernels.h"

static void packed_destroy(rill_buffer_derived *d) {
  rill_i8_weights *w = (rill_i8_weights *)d;
  rill_i8_weights_free(w);
  rill_free(w);
}

static bool packed_fits(const rill_i8_weights *w, const float *src, int64_t m, int64_t k, int64_t groups) {
  return w->src == src && w->m == m && w->k == k && w->groups == groups;
}

static rill_status *pack_error(rill_kernel_ctx *ctx, rill_i8_pack_result r, int64_t bad, const float *f) {
  if (r == RILL_I8_OOM) return rill_oom();
  return rill_kernel_error(ctx, "Filter (%s) value %lld is %g, not an integer level in [-127, 127]",
                           rill_kin_name(ctx, RILL_CONV2D_INT8_IN_FILTER, 0), (long long)bad, (double)f[bad]);
}

/* The packed filter: the one kept with an immutable buffer, else *local (freed by the caller). */
static rill_status *weights_for(rill_kernel_ctx *ctx, const rill_tensor *f, int64_t m, int64_t k,
                                int64_t groups, rill_i8_weights *local, const rill_i8_weights **out) {
  const float *src = rill_tensor_ptr(f);
  rill_buffer *buf = f->buf;
  int64_t bad = 0;
  if (rill_buffer_immutable(buf)) {
    rill_buffer_derived *d = rill_buffer_derived_get(buf);
    if (!d && rill_buffer_derived_claim(buf)) {
      rill_i8_weights *w = rill_malloc(sizeof *w);
      rill_i8_pack_result r = w ? rill_i8_weights_pack(src, m, k, groups, w, &bad) : RILL_I8_OOM;
      if (r == RILL_I8_PACKED) {
        w->hdr.destroy = packed_destroy;
        d = &w->hdr;
      } else {
        rill_free(w);
      }
      rill_buffer_derived_publish(buf, d);
      if (r != RILL_I8_PACKED) return pack_error(ctx, r, bad, src);
    }
    if (d && d->destroy == packed_destroy && packed_fits((const rill_i8_weights *)d, src, m, k, groups)) {
      *out = (const rill_i8_weights *)d;
      return NULL;
    }
  }
  rill_i8_pack_result r = rill_i8_weights_pack(src, m, k, groups, local, &bad);
  if (r != RILL_I8_PACKED) return pack_error(ctx, r, bad, src);
  *out = local;
  return NULL;
}

rill_status *rill_cpu_conv2d_int8_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *x = NULL, *f = NULL, *s = NULL, *fs = NULL, *y = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_CONV2D_INT8_IN_INPUT, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kin_need(ctx, RILL_CONV2D_INT8_IN_FILTER, 0, RILL_DTYPE_FP32, &f));
  bool has_s = rill_kin(ctx, RILL_CONV2D_INT8_IN_SCALE, 0) != NULL;
  bool has_fs = rill_kin(ctx, RILL_CONV2D_INT8_IN_FILTER_SCALE, 0) != NULL;
  if (!has_s && !has_fs) return rill_kernel_error(ctx, "needs input Scale or FilterScale");
  if (has_s) RILL_TRY(rill_kin_need(ctx, RILL_CONV2D_INT8_IN_SCALE, 0, RILL_DTYPE_FP32, &s));
  if (has_fs) RILL_TRY(rill_kin_need(ctx, RILL_CONV2D_INT8_IN_FILTER_SCALE, 0, RILL_DTYPE_FP32, &fs));
  RILL_TRY(rill_kout_need(ctx, RILL_CONV2D_INT8_OUT_OUTPUT, 0, RILL_DTYPE_FP32, &y));
  if (s && rill_tensor_numel(s) < 1)
    return rill_kernel_error(ctx, "input Scale (%s) is empty, expected one value",
                             rill_kin_name(ctx, RILL_CONV2D_INT8_IN_SCALE, 0));
  float range = ctx->attrs[RILL_CONV2D_INT8_ATTR_MAX_RANGE].v.f;
  if (!(range > 0)) return rill_kernel_error(ctx, "attribute max_range is %g, must be > 0", (double)range);
  if (!rill_nn_is_nchw(&ctx->attrs[RILL_CONV_FORMAT]))
    return rill_error(RILL_UNIMPLEMENTED, "conv2d_int8: only NCHW is supported");
  rill_conv_geom g;
  char err[256];
  if (!rill_nn_conv_geom(ctx->attrs, false, &x->dims, &f->dims, &g, err, sizeof err))
    return rill_kernel_error(ctx, "Input (%s), Filter (%s): %s", rill_kin_name(ctx, 0, 0),
                             rill_kin_name(ctx, 1, 0), err);
  int64_t k = g.c / g.groups * g.kh * g.kw;
  if (k > RILL_I8_MAX_K)
    return rill_kernel_error(ctx, "Filter (%s) sums %lld products per output, more than int32 holds "
                             "exactly (%d)", rill_kin_name(ctx, 1, 0), (long long)k, RILL_I8_MAX_K);
  if (fs && rill_tensor_numel(fs) != g.m)
    return rill_kernel_error(ctx, "input FilterScale (%s) holds %lld scales, Filter (%s) has %lld output channels",
                             rill_kin_name(ctx, RILL_CONV2D_INT8_IN_FILTER_SCALE, 0),
                             (long long)rill_tensor_numel(fs), rill_kin_name(ctx, 1, 0), (long long)g.m);
  rill_dims od = {4, {g.n, g.m, g.oh, g.ow}};
  RILL_TRY(rill_kout_check_dims(ctx, RILL_CONV2D_INT8_OUT_OUTPUT, 0, y, &od));
  if (rill_overlaps(rill_tensor_ptr(y), rill_tensor_nbytes(y), rill_tensor_ptr(x), rill_tensor_nbytes(x)))
    return rill_kernel_error(ctx, "output Output (%s) must not share memory with Input (%s)",
                             rill_kout_name(ctx, 0, 0), rill_kin_name(ctx, 0, 0));

  int64_t nx = rill_tensor_numel(x), bad = 0;
  int8_t *xq = rill_aligned_alloc((size_t)nx + 1, RILL_TENSOR_ALIGN);
  if (!xq) return rill_oom();
  if (!rill_i8_from_levels(rill_tensor_ptr(x), nx, xq, &bad)) {
    rill_status *st = rill_kernel_error(ctx, "Input (%s) value %lld is %g, not an integer level in [-128, 127]",
                                        rill_kin_name(ctx, 0, 0), (long long)bad,
                                        (double)((const float *)rill_tensor_ptr(x))[bad]);
    rill_free(xq);
    return st;
  }
  rill_i8_weights local = {0};
  const rill_i8_weights *w = NULL;
  rill_status *st = weights_for(ctx, f, g.m, k, g.groups, &local, &w);
  if (!st) {
    rill_i8_out out = {.f32 = rill_tensor_ptr(y),
                       .row_scale = fs ? rill_tensor_ptr(fs) : NULL,
                       .no_scale = !s,
                       .scale = s ? *(const float *)rill_tensor_ptr(s) : 1.0f,
                       .range = range};
    if (!rill_i8_conv(ctx->dev, rill_dev_threads(ctx->dev), rill_i8_path_for_cpu(), &g, xq, w, &out))
      st = rill_oom();
  }
  rill_i8_weights_free(&local);
  rill_free(xq);
  return st;
}
