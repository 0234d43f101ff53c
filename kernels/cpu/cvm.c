/* cvm and cvm_grad on the CPU, row by row. The gradient reads one CVM pair per row of X,
 * or per sequence of X's first LoD level when X has LoD. */
#include <math.h>
#include <string.h>

#include "kernels/cpu/kernels.h"

/* X [N, D >= 2] and CVM [., 2] of dtype dt; *pairs is CVM's required row count. */
static rill_status *cvm_inputs(rill_kernel_ctx *ctx, rill_dtype dt, rill_tensor **x,
                               rill_tensor **c, int64_t *pairs) {
  RILL_TRY(rill_kin_need(ctx, 0, 0, dt, x));
  RILL_TRY(rill_kin_need(ctx, 1, 0, dt, c));
  char s[RILL_DIMS_STR_MAX];
  if ((*x)->dims.n != 2 || (*x)->dims.d[1] < 2)
    return rill_kernel_error(ctx, "input X (%s) has shape %s, expected [N, D] with D >= 2",
                             rill_kin_name(ctx, 0, 0), rill_dims_str(&(*x)->dims, s, sizeof s));
  *pairs = (*x)->dims.d[0];
  if ((*x)->lod.nlevels) {
    const rill_lod_level *lv = &(*x)->lod.levels[0];
    if (lv->n < 1 || lv->offsets[0] != 0 || lv->offsets[lv->n - 1] != (uint64_t)(*x)->dims.d[0])
      return rill_kernel_error(ctx, "input X (%s): its first LoD level does not cover its %lld "
                               "rows", rill_kin_name(ctx, 0, 0), (long long)(*x)->dims.d[0]);
    *pairs = (int64_t)lv->n - 1;
  }
  return NULL;
}

#define CVM(T, DT, SUF)                                                                        \
  rill_status *rill_cpu_cvm_##SUF(rill_kernel_ctx *ctx) {                                      \
    rill_tensor *x, *c, *y;                                                                    \
    int64_t pairs;                                                                             \
    RILL_TRY(cvm_inputs(ctx, DT, &x, &c, &pairs));                                             \
    bool use = ctx->attrs[RILL_CVM_ATTR_USE_CVM].v.b;                                          \
    int64_t n = x->dims.d[0], d = x->dims.d[1], skip = use ? 0 : 2, yw = d - skip;             \
    rill_dims yd = {.n = 2, .d = {n, yw}};                                                     \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &y));                                               \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, y, &yd));                                         \
    const T *xp = rill_tensor_ptr(x);                                                          \
    T *yp = rill_tensor_ptr(y);                                                                \
    for (int64_t i = 0; i < n; i++) {                                                          \
      const T *xr = xp + i * d;                                                                \
      T *yr = yp + i * yw;                                                                     \
      memcpy(yr, xr + skip, (size_t)yw * sizeof(T));                                           \
      if (use) {                                                                               \
        double show = log((double)xr[0] + 1.0);                                                \
        yr[0] = (T)show;                                                                       \
        yr[1] = (T)(log((double)xr[1] + 1.0) - (double)yr[0]);                                 \
      }                                                                                        \
    }                                                                                          \
    return NULL;                                                                               \
  }                                                                                            \
                                                                                               \
  rill_status *rill_cpu_cvm_grad_##SUF(rill_kernel_ctx *ctx) {                                 \
    rill_tensor *x, *c, *g, *dx;                                                               \
    int64_t pairs;                                                                             \
    RILL_TRY(cvm_inputs(ctx, DT, &x, &c, &pairs));                                             \
    bool use = ctx->attrs[RILL_CVM_ATTR_USE_CVM].v.b;                                          \
    int64_t n = x->dims.d[0], d = x->dims.d[1], skip = use ? 0 : 2, yw = d - skip;             \
    rill_dims gd = {.n = 2, .d = {n, yw}}, cd = {.n = 2, .d = {pairs, 2}};                     \
    RILL_TRY(rill_kin_check_dims(ctx, 1, c, &cd));                                             \
    RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &g));                                                \
    RILL_TRY(rill_kin_check_dims(ctx, 2, g, &gd));                                             \
    if (!rill_kout(ctx, 0, 0)) return NULL;                                                    \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &dx));                                              \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &x->dims));                                   \
    const T *cp = rill_tensor_ptr(c), *gp = rill_tensor_ptr(g);                                \
    T *o = rill_tensor_ptr(dx);                                                                \
    const uint64_t *off = x->lod.nlevels ? x->lod.levels[0].offsets : NULL;                    \
    int64_t seq = 0;                                                                           \
    for (int64_t i = 0; i < n; i++) {                                                          \
      T *r = o + i * d;                                                                        \
      memcpy(r + skip, gp + i * yw, (size_t)yw * sizeof(T));                                   \
      int64_t p = i;                                                                           \
      if (off) {                                                                               \
        while (off[seq + 1] <= (uint64_t)i) seq++;                                             \
        p = seq;                                                                               \
      }                                                                                        \
      r[0] = cp[2 * p];                                                                        \
      r[1] = cp[2 * p + 1];                                                                    \
    }                                                                                          \
    return NULL;                                                                               \
  }

CVM(float, RILL_DTYPE_FP32, fp32)
CVM(double, RILL_DTYPE_FP64, fp64)
