/* prior_box CPU kernels: one pass over the cells writing each prior's corners, then
 * the optional clamp, then the variances. Arithmetic follows Paddle's kernel (box half
 * sizes in float, centres and divisions in T). */
#include <math.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/kernels.h"
#include "operators/detection.h"


#define PRIOR_BOX(T, DT, NAME)                                                                 \
  static inline T *NAME##_put(T *b, T cx, T cy, T bw, T bh, T iw, T ih) {                      \
    b[0] = (cx - bw) / iw;                                                                     \
    b[1] = (cy - bh) / ih;                                                                     \
    b[2] = (cx + bw) / iw;                                                                     \
    b[3] = (cy + bh) / ih;                                                                     \
    return b + 4;                                                                              \
  }                                                                                            \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                    \
    rill_tensor *in = NULL, *img = rill_kin(ctx, 1, 0), *bo = NULL, *vo = NULL;                \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &in));                                               \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &bo));                                              \
    RILL_TRY(rill_kout_need(ctx, 1, 0, DT, &vo));                                              \
    if (!img || img->dims.n != 4 || in->dims.n != 4)                                           \
      return rill_kernel_error(ctx, "inputs Input (%s) and Image (%s) must be 4-D tensors",    \
                               rill_kin_name(ctx, 0, 0), rill_kin_name(ctx, 1, 0));            \
    const rill_attr_value *mins = &ctx->attrs[RILL_PRIOR_BOX_ATTR_MIN_SIZES], *maxs = &ctx->attrs[RILL_PRIOR_BOX_ATTR_MAX_SIZES];              \
    const rill_attr_value *vars = &ctx->attrs[RILL_PRIOR_BOX_ATTR_VARIANCES];                  \
    float *ratios = rill_malloc((1 + 2 * ctx->attrs[RILL_PRIOR_BOX_ATTR_ASPECT_RATIOS].n) * sizeof *ratios);            \
    if (!ratios) return rill_oom();                                                            \
    size_t nr = rill_prior_box_ratios(ctx->attrs[RILL_PRIOR_BOX_ATTR_ASPECT_RATIOS].list.floats, ctx->attrs[RILL_PRIOR_BOX_ATTR_ASPECT_RATIOS].n, \
                                      ctx->attrs[RILL_PRIOR_BOX_ATTR_FLIP].v.b, ratios);       \
    int64_t H = in->dims.d[2], W = in->dims.d[3];                                              \
    int64_t np = (int64_t)(nr * mins->n + maxs->n);                                            \
    rill_dims want = {.n = 4, .d = {H, W, np, 4}};                                             \
    rill_status *st = rill_kout_check_dims(ctx, 0, 0, bo, &want);                              \
    if (!st) st = rill_kout_check_dims(ctx, 1, 0, vo, &want);                                  \
    if (st) {                                                                                  \
      rill_free(ratios);                                                                       \
      return st;                                                                               \
    }                                                                                          \
    T iw = (T)img->dims.d[3], ih = (T)img->dims.d[2];                                          \
    T sw = (T)ctx->attrs[RILL_PRIOR_BOX_ATTR_STEP_W].v.f, sh = (T)ctx->attrs[RILL_PRIOR_BOX_ATTR_STEP_H].v.f;                      \
    if (sw == 0 || sh == 0) {                                                                  \
      sw = iw / (T)W;                                                                          \
      sh = ih / (T)H;                                                                          \
    }                                                                                          \
    T off = (T)ctx->attrs[RILL_PRIOR_BOX_ATTR_OFFSET].v.f;                                     \
    bool order = ctx->attrs[RILL_PRIOR_BOX_ATTR_MIN_MAX_ASPECT_RATIOS_ORDER].v.b;              \
    T *b = rill_tensor_ptr(bo);                                                                \
    for (int64_t h = 0; h < H; h++)                                                            \
      for (int64_t w = 0; w < W; w++) {                                                        \
        T cx = ((T)w + off) * sw, cy = ((T)h + off) * sh;                                      \
        for (size_t s = 0; s < mins->n; s++) {                                                 \
          float mn = mins->list.floats[s];                                                     \
          T half;                                                                              \
          if (order) {                                                                         \
            half = (T)(mn / 2.);                                                               \
            b = NAME##_put(b, cx, cy, half, half, iw, ih);                                     \
            if (maxs->n) {                                                                     \
              half = (T)(sqrt(mn * maxs->list.floats[s]) / 2.);                                \
              b = NAME##_put(b, cx, cy, half, half, iw, ih);                                   \
            }                                                                                  \
            for (size_t r = 0; r < nr; r++) {                                                  \
              if (fabs(ratios[r] - 1.) < 1e-6) continue;                                       \
              b = NAME##_put(b, cx, cy, (T)(mn * sqrt(ratios[r]) / 2.),                        \
                             (T)(mn / sqrt(ratios[r]) / 2.), iw, ih);                          \
            }                                                                                  \
          } else {                                                                             \
            for (size_t r = 0; r < nr; r++)                                                    \
              b = NAME##_put(b, cx, cy, (T)(mn * sqrt(ratios[r]) / 2.),                        \
                             (T)(mn / sqrt(ratios[r]) / 2.), iw, ih);                          \
            if (maxs->n) {                                                                     \
              half = (T)(sqrt(mn * maxs->list.floats[s]) / 2.);                                \
              b = NAME##_put(b, cx, cy, half, half, iw, ih);                                   \
            }                                                                                  \
          }                                                                                    \
        }                                                                                      \
      }                                                                                        \
    rill_free(ratios);                                                                         \
    int64_t n = H * W * np * 4;                                                                \
    if (ctx->attrs[RILL_PRIOR_BOX_ATTR_CLIP].v.b) {                                            \
      T *p = rill_tensor_ptr(bo);                                                              \
      for (int64_t i = 0; i < n; i++) p[i] = p[i] < 0 ? 0 : p[i] > 1 ? 1 : p[i];               \
    }                                                                                          \
    T *vp = rill_tensor_ptr(vo);                                                               \
    for (int64_t i = 0; i < n; i++) vp[i] = (T)vars->list.floats[i % 4];                       \
    return NULL;                                                                               \
  }

PRIOR_BOX(float, RILL_DTYPE_FP32, rill_cpu_prior_box_fp32)
PRIOR_BOX(double, RILL_DTYPE_FP64, rill_cpu_prior_box_fp64)
