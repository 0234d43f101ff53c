/* density_prior_box CPU kernels, Paddle's arithmetic: the step average truncated to an
 * integer, the grid shift step_average / density in integers, grid centres in float,
 * corners divided by the image size in double and clamped to [0, 1] as they are
 * written. */
#include <math.h>

#include "kernels/cpu/kernels.h"

#define DENSITY_PRIOR_BOX(T, DT, NAME)                                                         \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                    \
    rill_tensor *in = NULL, *img = rill_kin(ctx, 1, 0), *bo = NULL, *vo = NULL;                \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &in));                                               \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &bo));                                              \
    RILL_TRY(rill_kout_need(ctx, 1, 0, DT, &vo));                                              \
    if (!img || img->dims.n != 4 || in->dims.n != 4)                                           \
      return rill_kernel_error(ctx, "inputs Input (%s) and Image (%s) must be 4-D tensors",    \
                               rill_kin_name(ctx, 0, 0), rill_kin_name(ctx, 1, 0));            \
    const rill_attr_value *sizes = &ctx->attrs[RILL_DENSITY_PRIOR_BOX_ATTR_FIXED_SIZES];       \
    const rill_attr_value *ratios = &ctx->attrs[RILL_DENSITY_PRIOR_BOX_ATTR_FIXED_RATIOS];     \
    const int32_t *dens = ctx->attrs[RILL_DENSITY_PRIOR_BOX_ATTR_DENSITIES].list.ints;         \
    const float *vars = ctx->attrs[RILL_DENSITY_PRIOR_BOX_ATTR_VARIANCES].list.floats;         \
    int64_t H = in->dims.d[2], W = in->dims.d[3], np = 0;                                      \
    for (size_t s = 0; s < sizes->n; s++) np += (int64_t)dens[s] * dens[s];                    \
    np *= (int64_t)ratios->n;                                                                  \
    rill_dims want = {.n = 4, .d = {H, W, np, 4}};                                             \
    if (ctx->attrs[RILL_DENSITY_PRIOR_BOX_ATTR_FLATTEN_TO_2D].v.b)                             \
      want = (rill_dims){.n = 2, .d = {H * W * np, 4}};                                        \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, bo, &want));                                      \
    RILL_TRY(rill_kout_check_dims(ctx, 1, 0, vo, &want));                                      \
    int64_t iw = img->dims.d[3], ih = img->dims.d[2];                                          \
    T sw = (T)ctx->attrs[RILL_DENSITY_PRIOR_BOX_ATTR_STEP_W].v.f;                              \
    T sh = (T)ctx->attrs[RILL_DENSITY_PRIOR_BOX_ATTR_STEP_H].v.f;                              \
    if (sw == 0 || sh == 0) {                                                                  \
      sw = (T)iw / (T)W;                                                                       \
      sh = (T)ih / (T)H;                                                                       \
    }                                                                                          \
    T off = (T)ctx->attrs[RILL_DENSITY_PRIOR_BOX_ATTR_OFFSET].v.f;                             \
    int step_avg = (int)((sw + sh) * 0.5);                                                     \
    bool clip = ctx->attrs[RILL_DENSITY_PRIOR_BOX_ATTR_CLIP].v.b;                              \
    T *b = rill_tensor_ptr(bo);                                                                \
    for (int64_t h = 0; h < H; h++)                                                            \
      for (int64_t w = 0; w < W; w++) {                                                        \
        T cx = ((T)w + off) * sw, cy = ((T)h + off) * sh;                                      \
        for (size_t s = 0; s < sizes->n; s++) {                                                \
          float size = sizes->list.floats[s];                                                  \
          int d = dens[s], shift = step_avg / d;                                               \
          for (size_t r = 0; r < ratios->n; r++) {                                             \
            float sq = sqrtf(ratios->list.floats[r]);                                          \
            float bw = size * sq, bh = size / sq;                                              \
            float dcx = (float)(cx - step_avg / 2. + shift / 2.);                              \
            float dcy = (float)(cy - step_avg / 2. + shift / 2.);                              \
            for (int di = 0; di < d; di++)                                                     \
              for (int dj = 0; dj < d; dj++, b += 4) {                                         \
                float x = dcx + (float)(dj * shift), y = dcy + (float)(di * shift);            \
                double v[4] = {(x - bw / 2.) / (double)iw, (y - bh / 2.) / (double)ih,         \
                               (x + bw / 2.) / (double)iw, (y + bh / 2.) / (double)ih};        \
                b[0] = (T)(v[0] > 0 ? v[0] : 0.);                                              \
                b[1] = (T)(v[1] > 0 ? v[1] : 0.);                                              \
                b[2] = (T)(v[2] < 1 ? v[2] : 1.);                                              \
                b[3] = (T)(v[3] < 1 ? v[3] : 1.);                                              \
              }                                                                                \
          }                                                                                    \
        }                                                                                      \
      }                                                                                        \
    int64_t n = H * W * np * 4;                                                                \
    if (clip) {                                                                                \
      T *p = rill_tensor_ptr(bo);                                                              \
      for (int64_t i = 0; i < n; i++) p[i] = p[i] < 0 ? 0 : p[i] > 1 ? 1 : p[i];               \
    }                                                                                          \
    T *vp = rill_tensor_ptr(vo);                                                               \
    for (int64_t i = 0; i < n; i++) vp[i] = (T)vars[i % 4];                                    \
    return NULL;                                                                               \
  }

DENSITY_PRIOR_BOX(float, RILL_DTYPE_FP32, rill_cpu_density_prior_box_fp32)
DENSITY_PRIOR_BOX(double, RILL_DTYPE_FP64, rill_cpu_density_prior_box_fp64)
