/* unfold and unfold_grad on the CPU: per image, the patch walk of kernels/cpu/patches.h
 * in unfold's [C * kh * kw, OH * OW] layout. */
#include <string.h>

#include "kernels/cpu/kernels.h"
#include "kernels/cpu/patches.h"

RILL_PATCH_WALK(float, unfold_walk_f32)
RILL_PATCH_WALK(double, unfold_walk_f64)

/* X (or, backward, X@GRAD's shape from X), the geometry and the column tensor's shape. */
static rill_status *unfold_setup(rill_kernel_ctx *ctx, rill_dtype dt, rill_tensor **x,
                                 rill_patch_geom *g, rill_dims *cols) {
  RILL_TRY(rill_kin_need(ctx, 0, 0, dt, x));
  char s[RILL_DIMS_STR_MAX];
  if ((*x)->dims.n != 4)
    return rill_kernel_error(ctx, "input X (%s) has shape %s, expected [N, C, H, W]",
                             rill_kin_name(ctx, 0, 0), rill_dims_str(&(*x)->dims, s, sizeof s));
  const char *err = rill_patch_geom_get(ctx->attrs, RILL_UNFOLD_ATTR_KERNEL_SIZES, true,
                                        &(*x)->dims, g);
  if (err)
    return rill_kernel_error(ctx, "input X (%s) %s: %s", rill_kin_name(ctx, 0, 0),
                             rill_dims_str(&(*x)->dims, s, sizeof s), err);
  *cols = (rill_dims){.n = 3, .d = {(*x)->dims.d[0], g->c * g->kh * g->kw, g->oh * g->ow}};
  return NULL;
}

#define UNFOLD(T, DT, NAME, WALK)                                                              \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                    \
    rill_tensor *x = NULL, *y = NULL;                                                          \
    rill_patch_geom g;                                                                         \
    rill_dims want;                                                                            \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &y));                                               \
    RILL_TRY(unfold_setup(ctx, DT, &x, &g, &want));                                            \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, y, &want));                                       \
    int64_t img = g.c * g.h * g.w, cols = want.d[1] * want.d[2];                               \
    T *xp = rill_tensor_ptr(x), *yp = rill_tensor_ptr(y);                                      \
    for (int64_t n = 0; n < want.d[0]; n++) WALK(&g, true, false, xp + n * img, yp + n * cols); \
    return NULL;                                                                               \
  }                                                                                            \
  rill_status *NAME##_grad(rill_kernel_ctx *ctx) {                                             \
    rill_tensor *x = NULL, *dy = NULL, *dx = rill_kout(ctx, 0, 0);                             \
    rill_patch_geom g;                                                                         \
    rill_dims want;                                                                            \
    if (!dx) return NULL;                                                                      \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &dx));                                              \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &dy));                                               \
    RILL_TRY(unfold_setup(ctx, DT, &x, &g, &want));                                            \
    RILL_TRY(rill_kin_check_dims(ctx, 1, dy, &want));                                          \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &x->dims));                                   \
    int64_t img = g.c * g.h * g.w, cols = want.d[1] * want.d[2];                               \
    T *dxp = rill_tensor_ptr(dx), *dyp = rill_tensor_ptr(dy);                                  \
    memset(dxp, 0, (size_t)rill_tensor_numel(dx) * sizeof(T));                                 \
    for (int64_t n = 0; n < want.d[0]; n++)                                                    \
      WALK(&g, true, true, dxp + n * img, dyp + n * cols);                                     \
    return NULL;                                                                               \
  }

UNFOLD(float, RILL_DTYPE_FP32, rill_cpu_unfold_fp32, unfold_walk_f32)
UNFOLD(double, RILL_DTYPE_FP64, rill_cpu_unfold_fp64, unfold_walk_f64)
