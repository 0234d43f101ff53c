/* im2sequence and im2sequence_grad on the CPU: per image, the patch walk of
 * kernels/cpu/patches.h in the [windows, C * kh * kw] layout, over the window grid of the
 * full image or, with Y and N > 1, of the image's real size. */
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/patches.h"

RILL_PATCH_WALK(float, i2s_walk_f32)
RILL_PATCH_WALK(double, i2s_walk_f64)

/* X, the full-image geometry and each image's window grid: grid[2 n] x grid[2 n + 1]
 * windows, rows[n] the first row of image n (rows[N] the total). */
static rill_status *i2s_plan(rill_kernel_ctx *ctx, rill_dtype dt, rill_tensor **x,
                             rill_patch_geom *g, int64_t **grid, uint64_t **rows) {
  RILL_TRY(rill_kin_need(ctx, 0, 0, dt, x));
  char s[RILL_DIMS_STR_MAX];
  const char *xn = rill_kin_name(ctx, 0, 0);
  if ((*x)->dims.n != 4)
    return rill_kernel_error(ctx, "input X (%s) has shape %s, expected [N, C, H, W]", xn,
                             rill_dims_str(&(*x)->dims, s, sizeof s));
  const char *err = rill_patch_geom_get(ctx->attrs, RILL_IM2SEQUENCE_ATTR_KERNELS, false,
                                        &(*x)->dims, g);
  if (err)
    return rill_kernel_error(ctx, "input X (%s) %s: %s", xn,
                             rill_dims_str(&(*x)->dims, s, sizeof s), err);
  int64_t n = (*x)->dims.d[0];
  rill_tensor *y = rill_kin(ctx, 1, 0);
  const float *real = NULL;
  if (y && n > 1) {
    const rill_attr_value *os = &ctx->attrs[RILL_IM2SEQUENCE_ATTR_OUT_STRIDE];
    if (os->n != 2 || os->list.ints[0] <= 0 || os->list.ints[1] <= 0)
      return rill_kernel_error(ctx, "attribute out_stride must hold 2 positive ints");
    rill_dims want = {.n = 2, .d = {n, 2}};
    RILL_TRY(rill_kin_need(ctx, 1, 0, RILL_DTYPE_FP32, &y));
    RILL_TRY(rill_kin_check_dims(ctx, 1, y, &want));
    real = rill_tensor_ptr(y);
  }
  *grid = rill_malloc((size_t)(2 * n + 1) * sizeof **grid);
  *rows = rill_malloc((size_t)(n + 1) * sizeof **rows);
  if (!*grid || !*rows) {
    rill_free(*grid);
    rill_free(*rows);
    return rill_oom();
  }
  (*rows)[0] = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t oh = g->oh, ow = g->ow;
    if (real) {
      const int32_t *os = ctx->attrs[RILL_IM2SEQUENCE_ATTR_OUT_STRIDE].list.ints;
      float rh = real[2 * i], rw = real[2 * i + 1];
      if (!(rh >= 0 && rh <= (float)INT32_MAX && rw >= 0 && rw <= (float)INT32_MAX)) {
        rill_free(*grid);
        rill_free(*rows);
        return rill_kernel_error(ctx, "input Y (%s) row %lld holds %g x %g, not an image size",
                                 rill_kin_name(ctx, 1, 0), (long long)i, (double)rh, (double)rw);
      }
      int64_t h = (int64_t)rh, w = (int64_t)rw;
      h = (h + os[0] - 1) / os[0];
      w = (w + os[1] - 1) / os[1];
      oh = rill_patch_extent(h, g->kh, 1, g->pt, g->pb, g->sh);
      ow = rill_patch_extent(w, g->kw, 1, g->pl, g->pr, g->sw);
      if (oh < 0) oh = 0;
      if (ow < 0) ow = 0;
    }
    (*grid)[2 * i] = oh;
    (*grid)[2 * i + 1] = ow;
    (*rows)[i + 1] = (*rows)[i] + (uint64_t)(oh * ow);
  }
  return NULL;
}

#define IM2SEQUENCE(T, DT, NAME, WALK)                                                         \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                    \
    rill_tensor *x = NULL, *out = rill_kout(ctx, 0, 0);                                        \
    rill_patch_geom g;                                                                         \
    int64_t *grid = NULL;                                                                      \
    uint64_t *rows = NULL;                                                                     \
    if (!out) return rill_kernel_error(ctx, "needs output Out");                               \
    RILL_TRY(i2s_plan(ctx, DT, &x, &g, &grid, &rows));                                         \
    int64_t n = x->dims.d[0], taps = g.c * g.kh * g.kw, img = g.c * g.h * g.w;                 \
    rill_dims d = {.n = 2, .d = {(int64_t)rows[n], taps}};                                     \
    rill_status *st = rill_tensor_alloc(out, DT, &d);                                          \
    T *xp = rill_tensor_ptr(x), *op = st ? NULL : rill_tensor_ptr(out);                        \
    for (int64_t i = 0; !st && i < n; i++) {                                                   \
      rill_patch_geom gi = g;                                                                  \
      gi.oh = grid[2 * i];                                                                     \
      gi.ow = grid[2 * i + 1];                                                                 \
      WALK(&gi, false, false, xp + i * img, op + (int64_t)rows[i] * taps);                     \
    }                                                                                          \
    if (!st) {                                                                                 \
      rill_lod_level lv = {(size_t)n + 1, rows};                                               \
      rill_lod src = {1, &lv}, lod = {0, NULL};                                                \
      st = rill_lod_copy(&lod, &src);                                                          \
      if (!st) {                                                                               \
        rill_lod_clear(&out->lod);                                                             \
        out->lod = lod;                                                                        \
      }                                                                                        \
    }                                                                                          \
    rill_free(grid);                                                                           \
    rill_free(rows);                                                                           \
    return st;                                                                                 \
  }                                                                                            \
  rill_status *NAME##_grad(rill_kernel_ctx *ctx) {                                             \
    rill_tensor *x = NULL, *dout = NULL, *dx = rill_kout(ctx, 0, 0);                           \
    rill_patch_geom g;                                                                         \
    int64_t *grid = NULL;                                                                      \
    uint64_t *rows = NULL;                                                                     \
    if (!dx) return NULL;                                                                      \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &dx));                                              \
    RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &dout));                                             \
    RILL_TRY(i2s_plan(ctx, DT, &x, &g, &grid, &rows));                                         \
    int64_t n = x->dims.d[0], taps = g.c * g.kh * g.kw, img = g.c * g.h * g.w;                 \
    rill_dims d = {.n = 2, .d = {(int64_t)rows[n], taps}};                                     \
    rill_status *st = rill_kin_check_dims(ctx, 2, dout, &d);                                   \
    if (!st) st = rill_kout_check_dims(ctx, 0, 0, dx, &x->dims);                               \
    T *dxp = rill_tensor_ptr(dx), *gp = rill_tensor_ptr(dout);                                 \
    if (!st) memset(dxp, 0, (size_t)rill_tensor_numel(dx) * sizeof(T));                        \
    for (int64_t i = 0; !st && i < n; i++) {                                                   \
      rill_patch_geom gi = g;                                                                  \
      gi.oh = grid[2 * i];                                                                     \
      gi.ow = grid[2 * i + 1];                                                                 \
      WALK(&gi, false, true, dxp + i * img, gp + (int64_t)rows[i] * taps);                     \
    }                                                                                          \
    rill_free(grid);                                                                           \
    rill_free(rows);                                                                           \
    return st;                                                                                 \
  }

IM2SEQUENCE(float, RILL_DTYPE_FP32, rill_cpu_im2sequence_fp32, i2s_walk_f32)
IM2SEQUENCE(double, RILL_DTYPE_FP64, rill_cpu_im2sequence_fp64, i2s_walk_f64)
