/* box_coder CPU kernels, Paddle's arithmetic: a prior's centre is xmin + width / 2, and
 * with box_normalized false widths and heights count both end pixels (+1 on encode and
 * on the prior, -1 on the decoded xmax/ymax). Each box by the function the device code
 * uses too (kernels/cpu/box_decode.h). */
#include "kernels/cpu/box_decode.h"
#include "kernels/cpu/detection_check.h"


#define BOX_CODER(T, DT, S, NAME)                                                                     \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                           \
    rill_tensor *prior = NULL, *pvar = NULL, *target = NULL, *out = NULL;                             \
    rill_box_coder_geom g;                                                                            \
    RILL_TRY(rill_kin_need(ctx, RILL_BOX_CODER_IN_PRIOR_BOX, 0, DT, &prior));                         \
    if (rill_kin(ctx, RILL_BOX_CODER_IN_PRIOR_BOX_VAR, 0))                                            \
      RILL_TRY(rill_kin_need(ctx, RILL_BOX_CODER_IN_PRIOR_BOX_VAR, 0, DT, &pvar));                    \
    RILL_TRY(rill_kin_need(ctx, RILL_BOX_CODER_IN_TARGET_BOX, 0, DT, &target));                       \
    RILL_TRY(rill_kout_need(ctx, RILL_BOX_CODER_OUT_OUTPUT_BOX, 0, DT, &out));                        \
    RILL_TRY(rill_box_coder_check(ctx, prior, pvar, target, out, &g));                                \
    T norm = ctx->attrs[RILL_BOX_CODER_ATTR_BOX_NORMALIZED].v.b ? (T)0 : (T)1;                        \
    const float *va = ctx->attrs[RILL_BOX_CODER_ATTR_VARIANCE].list.floats;                           \
    const T *pb = rill_tensor_ptr(prior), *tb = rill_tensor_ptr(target);                              \
    const T *pv = pvar ? (const T *)rill_tensor_ptr(pvar) : NULL;                                     \
    T *o = rill_tensor_ptr(out);                                                                      \
    T attr_var[4] = {1, 1, 1, 1}; /* ones without variances */                                        \
    if (g.var_attr)                                                                                   \
      for (int k = 0; k < 4; k++) attr_var[k] = (T)va[k];                                             \
    for (int64_t i = 0; i < g.rows; i++)                                                              \
      for (int64_t j = 0; j < g.cols; j++) {                                                          \
        int64_t pj = g.encode || g.axis == 0 ? j : i;                                                 \
        const T *var = pv ? pv + pj * 4 : attr_var;                                                   \
        const T *t = g.encode ? tb + i * 4 : tb + (i * g.cols + j) * 4;                               \
        rill_box_code_##S(g.encode, pb + pj * 4, var, t, norm, o + (i * g.cols + j) * 4);             \
      }                                                                                               \
    return NULL;                                                                                      \
  }

BOX_CODER(float, RILL_DTYPE_FP32, f32, rill_cpu_box_coder_fp32)
BOX_CODER(double, RILL_DTYPE_FP64, f64, rill_cpu_box_coder_fp64)
