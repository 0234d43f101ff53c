/* box_coder CPU kernels, Paddle's arithmetic: a prior's centre is xmin + width / 2, and
 * with box_normalized false widths and heights count both end pixels (+1 on encode and
 * on the prior, -1 on the decoded xmax/ymax). */
#include <math.h>
#include <string.h>

#include "kernels/cpu/kernels.h"


#define BOX_CODER(T, DT, EXP, LOG, NAME)                                                        \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                     \
    rill_tensor *prior = NULL, *pvar = NULL, *target = NULL, *out = NULL;                       \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &prior));                                             \
    if (rill_kin(ctx, 1, 0)) RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &pvar));                     \
    RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &target));                                            \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                              \
    bool encode = strcmp(ctx->attrs[RILL_BOX_CODER_ATTR_CODE_TYPE].v.s ? ctx->attrs[RILL_BOX_CODER_ATTR_CODE_TYPE].v.s : "",                 \
                         "encode_center_size") == 0;                                            \
    int axis = ctx->attrs[RILL_BOX_CODER_ATTR_AXIS].v.i;                                        \
    T norm = ctx->attrs[RILL_BOX_CODER_ATTR_BOX_NORMALIZED].v.b ? (T)0 : (T)1;                  \
    const rill_attr_value *va = &ctx->attrs[RILL_BOX_CODER_ATTR_VARIANCE];                      \
    if (target->lod.nlevels > 1)                                                                \
      return rill_kernel_error(ctx, "input TargetBox (%s) has %zu LoD levels, at most 1 is "    \
                               "supported", rill_kin_name(ctx, 2, 0), target->lod.nlevels);    \
    int64_t m = prior->dims.d[0];                                                               \
    int64_t rows = target->dims.d[0], cols = encode ? m : target->dims.d[1];                    \
    rill_dims want = {.n = 3, .d = {rows, cols, 4}};                                            \
    bool ok = prior->dims.n == 2 && prior->dims.d[1] == 4 &&                                    \
              (!pvar || rill_dims_equal(&pvar->dims, &prior->dims)) &&                          \
              (encode ? target->dims.n == 2 && target->dims.d[1] == 4                           \
                      : target->dims.n == 3 && target->dims.d[2] == 4 &&                        \
                            target->dims.d[axis == 0 ? 1 : 0] == m);                            \
    if (!ok)                                                                                    \
      return rill_kernel_error(ctx, "inputs PriorBox (%s), PriorBoxVar and TargetBox (%s) "     \
                               "have shapes that do not fit %s with axis %d",                   \
                               rill_kin_name(ctx, 0, 0), rill_kin_name(ctx, 2, 0),              \
                               encode ? "encode_center_size" : "decode_center_size", axis);     \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &want));                                      \
    const T *pb = rill_tensor_ptr(prior), *tb = rill_tensor_ptr(target);                        \
    const T *pv = pvar ? (const T *)rill_tensor_ptr(pvar) : NULL;                               \
    T *o = rill_tensor_ptr(out);                                                                \
    for (int64_t i = 0; i < rows; i++)                                                          \
      for (int64_t j = 0; j < cols; j++) {                                                      \
        int64_t pj = encode || axis == 0 ? j : i;                                               \
        const T *p = pb + pj * 4;                                                               \
        T pw = p[2] - p[0] + norm, ph = p[3] - p[1] + norm;                                     \
        T pcx = p[0] + pw / 2, pcy = p[1] + ph / 2;                                             \
        T var[4] = {1, 1, 1, 1};                                                                \
        if (pv)                                                                                 \
          for (int k = 0; k < 4; k++) var[k] = pv[pj * 4 + k];                                  \
        else if (va->n == 4)                                                                    \
          for (int k = 0; k < 4; k++) var[k] = (T)va->list.floats[k];                           \
        T *op = o + (i * cols + j) * 4;                                                         \
        if (encode) {                                                                           \
          const T *t = tb + i * 4;                                                              \
          T tcx = (t[2] + t[0]) / 2, tcy = (t[3] + t[1]) / 2;                                   \
          T tw = t[2] - t[0] + norm, th = t[3] - t[1] + norm;                                   \
          op[0] = (tcx - pcx) / pw;                                                             \
          op[1] = (tcy - pcy) / ph;                                                             \
          op[2] = LOG(fabs(tw / pw));                                                           \
          op[3] = LOG(fabs(th / ph));                                                           \
          if (pv || va->n == 4)                                                                 \
            for (int k = 0; k < 4; k++) op[k] /= var[k];                                        \
        } else {                                                                                \
          const T *t = tb + (i * cols + j) * 4;                                                 \
          T tcx = var[0] * t[0] * pw + pcx, tcy = var[1] * t[1] * ph + pcy;                     \
          T tw = EXP(var[2] * t[2]) * pw, th = EXP(var[3] * t[3]) * ph;                         \
          op[0] = tcx - tw / 2;                                                                 \
          op[1] = tcy - th / 2;                                                                 \
          op[2] = tcx + tw / 2 - norm;                                                          \
          op[3] = tcy + th / 2 - norm;                                                          \
        }                                                                                       \
      }                                                                                         \
    return NULL;                                                                                \
  }

BOX_CODER(float, RILL_DTYPE_FP32, expf, logf, rill_cpu_box_coder_fp32)
BOX_CODER(double, RILL_DTYPE_FP64, exp, log, rill_cpu_box_coder_fp64)
