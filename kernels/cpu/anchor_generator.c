/* anchor_generator CPU kernels, Paddle's arithmetic: the base width round(sqrt(stride_w *
 * stride_h / ratio)) and height round(base_w * ratio) in T, scaled by size / stride, the
 * corners centre -/+ (extent - 1) / 2. */
#include <math.h>

#include "kernels/cpu/kernels.h"

static const float anchor_default_vars[4] = {0.1f, 0.1f, 0.2f, 0.2f};

#define ANCHOR_GENERATOR(T, DT, SQRT, ROUND, NAME)                                             \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                    \
    rill_tensor *in = NULL, *ao = NULL, *vo = NULL;                                            \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &in));                                               \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &ao));                                              \
    RILL_TRY(rill_kout_need(ctx, 1, 0, DT, &vo));                                              \
    const rill_attr_value *sizes = &ctx->attrs[RILL_ANCHOR_GENERATOR_ATTR_ANCHOR_SIZES];       \
    const rill_attr_value *ratios = &ctx->attrs[RILL_ANCHOR_GENERATOR_ATTR_ASPECT_RATIOS];     \
    const rill_attr_value *va = &ctx->attrs[RILL_ANCHOR_GENERATOR_ATTR_VARIANCES];             \
    const float *stride = ctx->attrs[RILL_ANCHOR_GENERATOR_ATTR_STRIDE].list.floats;           \
    if (in->dims.n != 4)                                                                       \
      return rill_kernel_error(ctx, "input Input (%s) must be a 4-D tensor",                   \
                               rill_kin_name(ctx, 0, 0));                                      \
    int64_t H = in->dims.d[2], W = in->dims.d[3], na = (int64_t)(sizes->n * ratios->n);        \
    rill_dims want = {.n = 4, .d = {H, W, na, 4}};                                             \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, ao, &want));                                      \
    RILL_TRY(rill_kout_check_dims(ctx, 1, 0, vo, &want));                                      \
    T sw = (T)stride[0], sh = (T)stride[1], off = (T)ctx->attrs[RILL_ANCHOR_GENERATOR_ATTR_OFFSET].v.f; \
    T *a = rill_tensor_ptr(ao);                                                                \
    for (int64_t h = 0; h < H; h++)                                                            \
      for (int64_t w = 0; w < W; w++) {                                                        \
        T xc = (T)w * sw + off * (sw - 1), yc = (T)h * sh + off * (sh - 1);                    \
        for (size_t r = 0; r < ratios->n; r++)                                                 \
          for (size_t s = 0; s < sizes->n; s++, a += 4) {                                      \
            T ar = (T)ratios->list.floats[r], size = (T)sizes->list.floats[s];                 \
            T base_w = ROUND(SQRT(sw * sh / ar)), base_h = ROUND(base_w * ar);                 \
            T aw = size / sw * base_w, ah = size / sh * base_h;                                \
            a[0] = (T)(xc - 0.5 * (aw - 1));                                                   \
            a[1] = (T)(yc - 0.5 * (ah - 1));                                                   \
            a[2] = (T)(xc + 0.5 * (aw - 1));                                                   \
            a[3] = (T)(yc + 0.5 * (ah - 1));                                                   \
          }                                                                                    \
      }                                                                                        \
    const float *vars = va->n == 4 ? va->list.floats : anchor_default_vars;                    \
    T *v = rill_tensor_ptr(vo);                                                                \
    for (int64_t i = 0, n = H * W * na * 4; i < n; i++) v[i] = (T)vars[i % 4];                 \
    return NULL;                                                                               \
  }

ANCHOR_GENERATOR(float, RILL_DTYPE_FP32, sqrtf, roundf, rill_cpu_anchor_generator_fp32)
ANCHOR_GENERATOR(double, RILL_DTYPE_FP64, sqrt, round, rill_cpu_anchor_generator_fp64)
