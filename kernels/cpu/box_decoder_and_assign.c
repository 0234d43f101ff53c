/* box_decoder_and_assign CPU kernels, Paddle 1.8.5's arithmetic: ROI widths count both
 * end pixels, its centre is (xmin + xmax) / 2, decoded xmax and ymax subtract 1; the
 * class scores compare in float. */
#include <math.h>

#include "kernels/cpu/kernels.h"

#define BOX_DECODER_AND_ASSIGN(T, DT, EXP, NAME)                                               \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                    \
    rill_tensor *p = NULL, *v = NULL, *t = NULL, *s = NULL, *dec = NULL, *as = NULL;           \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &p));                                                \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &v));                                                \
    RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &t));                                                \
    RILL_TRY(rill_kin_need(ctx, 3, 0, DT, &s));                                                \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &dec));                                             \
    RILL_TRY(rill_kout_need(ctx, 1, 0, DT, &as));                                              \
    int64_t r = p->dims.n == 2 ? p->dims.d[0] : -1, c = s->dims.n == 2 ? s->dims.d[1] : -1;    \
    if (p->dims.n != 2 || p->dims.d[1] != 4 || rill_tensor_numel(v) != 4 || s->dims.n != 2 ||  \
        s->dims.d[0] != r || t->dims.n != 2 || t->dims.d[0] != r || t->dims.d[1] != 4 * c)     \
      return rill_kernel_error(ctx, "inputs PriorBox (%s), PriorBoxVar (%s), TargetBox (%s) "  \
                               "and BoxScore (%s) must be [R, 4], [4], [R, C * 4] and [R, C]", \
                               rill_kin_name(ctx, 0, 0), rill_kin_name(ctx, 1, 0),             \
                               rill_kin_name(ctx, 2, 0), rill_kin_name(ctx, 3, 0));            \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dec, &t->dims));                                  \
    RILL_TRY(rill_kout_check_dims(ctx, 1, 0, as, &p->dims));                                   \
    const T *pp = rill_tensor_ptr(p), *vp = rill_tensor_ptr(v), *tp = rill_tensor_ptr(t);      \
    const T *sp = rill_tensor_ptr(s);                                                          \
    T *dp = rill_tensor_ptr(dec), *ap = rill_tensor_ptr(as);                                   \
    float clip = ctx->attrs[RILL_BOX_DECODER_AND_ASSIGN_ATTR_BOX_CLIP].v.f;                    \
    for (int64_t i = 0; i < r; i++) {                                                          \
      const T *b = pp + i * 4;                                                                 \
      T pw = b[2] - b[0] + 1, ph = b[3] - b[1] + 1;                                            \
      T pcx = b[0] + pw / 2, pcy = b[1] + ph / 2;                                              \
      for (int64_t j = 0; j < c; j++) {                                                        \
        const T *d = tp + (i * c + j) * 4;                                                     \
        T *o = dp + (i * c + j) * 4;                                                           \
        T dw = vp[2] * d[2], dh = vp[3] * d[3];                                                \
        if (dw > (T)clip) dw = (T)clip;                                                        \
        if (dh > (T)clip) dh = (T)clip;                                                        \
        T cx = vp[0] * d[0] * pw + pcx, cy = vp[1] * d[1] * ph + pcy;                          \
        T w = EXP(dw) * pw, h = EXP(dh) * ph;                                                  \
        o[0] = cx - w / 2;                                                                     \
        o[1] = cy - h / 2;                                                                     \
        o[2] = cx + w / 2 - 1;                                                                 \
        o[3] = cy + h / 2 - 1;                                                                 \
      }                                                                                        \
      float best = -1;                                                                         \
      int64_t bj = -1;                                                                         \
      for (int64_t j = 1; j < c; j++) {                                                        \
        float sc = (float)sp[i * c + j];                                                       \
        if (sc > best) {                                                                       \
          best = sc;                                                                           \
          bj = j;                                                                              \
        }                                                                                      \
      }                                                                                        \
      const T *src = bj > 0 ? dp + (i * c + bj) * 4 : b;                                       \
      for (int q = 0; q < 4; q++) ap[i * 4 + q] = src[q];                                      \
    }                                                                                          \
    return NULL;                                                                               \
  }

BOX_DECODER_AND_ASSIGN(float, RILL_DTYPE_FP32, expf, rill_cpu_box_decoder_and_assign_fp32)
BOX_DECODER_AND_ASSIGN(double, RILL_DTYPE_FP64, exp, rill_cpu_box_decoder_and_assign_fp64)
