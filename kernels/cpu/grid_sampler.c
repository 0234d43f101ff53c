/* grid_sampler CPU kernels. Each output position's source coordinates (unnormalised,
 * padded) and corner weights are computed once and applied to every channel. */
#include <math.h>
#include <string.h>

#include "kernels/cpu/grad_out.h"
#include "kernels/cpu/grid_sample_coord.h"

/* X [N, C, H, W] and Grid [N, OH, OW, 2] of dtype dt; *od = [N, C, OH, OW]. */
static rill_status *gs_inputs(rill_kernel_ctx *ctx, rill_dtype dt, rill_tensor **x,
                              rill_tensor **g, rill_dims *od) {
  RILL_TRY(rill_kin_need(ctx, 0, 0, dt, x));
  RILL_TRY(rill_kin_need(ctx, 1, 0, dt, g));
  const rill_dims *xd = &(*x)->dims, *gd = &(*g)->dims;
  if (xd->n != 4 || gd->n != 4 || gd->d[3] != 2 || gd->d[0] != xd->d[0])
    return rill_kernel_error(ctx, "inputs X (%s) and Grid (%s) must be [N, C, H, W] and "
                             "[N, OH, OW, 2]", rill_kin_name(ctx, 0, 0), rill_kin_name(ctx, 1, 0));
  *od = (rill_dims){4, {xd->d[0], xd->d[1], gd->d[1], gd->d[2]}};
  return NULL;
}

#define GRID_SAMPLER(T, DT, NAME)                                                            \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                  \
    rill_tensor *x = NULL, *g = NULL, *out = NULL;                                           \
    rill_dims od;                                                                            \
    RILL_TRY(gs_inputs(ctx, DT, &x, &g, &od));                                               \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                           \
    int64_t N = od.d[0], C = od.d[1], H = x->dims.d[2], W = x->dims.d[3];                    \
    int64_t OH = od.d[2], OW = od.d[3];                                                      \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &od));                                     \
    bool ac = ctx->attrs[RILL_GRID_SAMPLER_ATTR_ALIGN_CORNERS].v.b;                          \
    const char *pm = ctx->attrs[RILL_GRID_SAMPLER_ATTR_PADDING_MODE].v.s ? ctx->attrs[RILL_GRID_SAMPLER_ATTR_PADDING_MODE].v.s : "zeros";                        \
    int pad = !strcmp(pm, "border") ? RILL_GRID_PAD_BORDER : !strcmp(pm, "reflection") ? RILL_GRID_PAD_REFLECT : RILL_GRID_PAD_ZEROS; \
    bool nearest = ctx->attrs[RILL_GRID_SAMPLER_ATTR_MODE].v.s && !strcmp(ctx->attrs[RILL_GRID_SAMPLER_ATTR_MODE].v.s, "nearest");               \
    const T *xp = rill_tensor_ptr(x), *gp = rill_tensor_ptr(g);                              \
    T *op = rill_tensor_ptr(out);                                                            \
    int64_t plane = OH * OW, ip = H * W;                                                     \
    for (int64_t n = 0; n < N; n++)                                                          \
      for (int64_t p = 0; p < plane; p++) {                                                  \
        double sx = rill_grid_source((double)gp[(n * plane + p) * 2], W, ac, pad);               \
        double sy = rill_grid_source((double)gp[(n * plane + p) * 2 + 1], H, ac, pad);           \
        const T *src = xp + n * C * ip;                                                      \
        T *dst = op + n * C * plane + p;                                                     \
        if (nearest) {                                                                       \
          double rx = round(sx), ry = round(sy);                                             \
          bool in = rx >= 0 && rx <= (double)(W - 1) && ry >= 0 && ry <= (double)(H - 1);    \
          int64_t off = in ? (int64_t)ry * W + (int64_t)rx : 0;                              \
          for (int64_t c = 0; c < C; c++) dst[c * plane] = in ? src[c * ip + off] : (T)0;    \
          continue;                                                                          \
        }                                                                                    \
        double fx = floor(sx), fy = floor(sy), wx = sx - fx, wy = sy - fy;                   \
        int64_t x0 = (int64_t)fx, y0 = (int64_t)fy;                                          \
        int64_t off[4];                                                                      \
        double w[4] = {(1 - wx) * (1 - wy), wx * (1 - wy), (1 - wx) * wy, wx * wy};          \
        for (int k = 0; k < 4; k++) {                                                        \
          int64_t cx = x0 + (k & 1), cy = y0 + (k >> 1);                                     \
          bool in = cx >= 0 && cx < W && cy >= 0 && cy < H;                                  \
          off[k] = in ? cy * W + cx : 0;                                                     \
          if (!in) w[k] = 0;                                                                 \
        }                                                                                    \
        for (int64_t c = 0; c < C; c++) {                                                    \
          const T *s = src + c * ip;                                                         \
          dst[c * plane] = (T)(s[off[0]] * w[0] + s[off[1]] * w[1] + s[off[2]] * w[2] +      \
                               s[off[3]] * w[3]);                                            \
        }                                                                                    \
      }                                                                                      \
    return NULL;                                                                             \
  }

GRID_SAMPLER(float, RILL_DTYPE_FP32, rill_cpu_grid_sampler_fp32)
GRID_SAMPLER(double, RILL_DTYPE_FP64, rill_cpu_grid_sampler_fp64)

/* The gradient: Output@GRAD scattered into X@GRAD with the forward weights, and the
 * weights' derivatives, times the pixels read, into Grid@GRAD. */
#define GRID_SAMPLER_GRAD(T, DT, NAME)                                                       \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                  \
    rill_tensor *x = NULL, *g = NULL, *dout = NULL, *dx = NULL, *dg = NULL;                  \
    rill_dims od;                                                                            \
    RILL_TRY(gs_inputs(ctx, DT, &x, &g, &od));                                               \
    RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &dout));                                           \
    int64_t N = od.d[0], C = od.d[1], H = x->dims.d[2], W = x->dims.d[3];                    \
    int64_t OH = od.d[2], OW = od.d[3];                                                      \
    RILL_TRY(rill_kin_check_dims(ctx, 2, dout, &od));                                        \
    bool ac = ctx->attrs[RILL_GRID_SAMPLER_ATTR_ALIGN_CORNERS].v.b;                          \
    const char *pm = ctx->attrs[RILL_GRID_SAMPLER_ATTR_PADDING_MODE].v.s;                    \
    if (pm && strcmp(pm, "zeros") && strcmp(pm, "border"))                                   \
      return rill_kernel_error(ctx, "attribute padding_mode \"%s\": the gradient takes zeros " \
                               "or border padding", pm);                                     \
    int pad = pm && !strcmp(pm, "border") ? RILL_GRID_PAD_BORDER : RILL_GRID_PAD_ZEROS;                          \
    bool nearest = ctx->attrs[RILL_GRID_SAMPLER_ATTR_MODE].v.s &&                            \
                   !strcmp(ctx->attrs[RILL_GRID_SAMPLER_ATTR_MODE].v.s, "nearest");          \
    RILL_TRY(rill_kout_zeroed(ctx, 0, DT, &x->dims, &dx));                                   \
    RILL_TRY(rill_kout_zeroed(ctx, 1, DT, &g->dims, &dg));                                   \
    const T *xp = rill_tensor_ptr(x), *gp = rill_tensor_ptr(g), *dp = rill_tensor_ptr(dout); \
    T *dxp = dx ? (T *)rill_tensor_ptr(dx) : NULL, *dgp = dg ? (T *)rill_tensor_ptr(dg) : NULL; \
    int64_t plane = OH * OW, ip = H * W;                                                     \
    for (int64_t n = 0; n < N; n++)                                                          \
      for (int64_t p = 0; p < plane; p++) {                                                  \
        double gx = (double)gp[(n * plane + p) * 2], gy = (double)gp[(n * plane + p) * 2 + 1]; \
        double sx = rill_grid_source(gx, W, ac, pad), sy = rill_grid_source(gy, H, ac, pad);         \
        const T *src = xp + n * C * ip, *go = dp + n * C * plane + p;                        \
        T *dsrc = dxp ? dxp + n * C * ip : NULL;                                             \
        if (nearest) {                                                                       \
          double rx = round(sx), ry = round(sy);                                             \
          if (!dsrc || rx < 0 || rx > (double)(W - 1) || ry < 0 || ry > (double)(H - 1))     \
            continue;                                                                        \
          int64_t off = (int64_t)ry * W + (int64_t)rx;                                       \
          for (int64_t c = 0; c < C; c++) dsrc[c * ip + off] += go[c * plane];               \
          continue;                                                                          \
        }                                                                                    \
        double fx = floor(sx), fy = floor(sy), wx = sx - fx, wy = sy - fy;                   \
        int64_t x0 = (int64_t)fx, y0 = (int64_t)fy;                                          \
        double w[4] = {(1 - wx) * (1 - wy), wx * (1 - wy), (1 - wx) * wy, wx * wy};          \
        double dwx[4] = {-(1 - wy), 1 - wy, -wy, wy}, dwy[4] = {-(1 - wx), -wx, 1 - wx, wx};  \
        double ddx = 0, ddy = 0;                                                             \
        for (int k = 0; k < 4; k++) {                                                        \
          int64_t cx = x0 + (k & 1), cy = y0 + (k >> 1);                                     \
          if (cx < 0 || cx >= W || cy < 0 || cy >= H) continue;                             \
          int64_t off = cy * W + cx;                                                         \
          for (int64_t c = 0; c < C; c++) {                                                  \
            double gv = (double)go[c * plane], v = (double)src[c * ip + off];                \
            if (dsrc) dsrc[c * ip + off] += (T)(gv * w[k]);                                  \
            ddx += gv * v * dwx[k];                                                          \
            ddy += gv * v * dwy[k];                                                          \
          }                                                                                  \
        }                                                                                    \
        if (dgp) {                                                                           \
          dgp[(n * plane + p) * 2] = (T)(ddx * rill_grid_source_slope(gx, W, ac, pad));                \
          dgp[(n * plane + p) * 2 + 1] = (T)(ddy * rill_grid_source_slope(gy, H, ac, pad));            \
        }                                                                                    \
      }                                                                                      \
    return NULL;                                                                             \
  }

GRID_SAMPLER_GRAD(float, RILL_DTYPE_FP32, rill_cpu_grid_sampler_grad_fp32)
GRID_SAMPLER_GRAD(double, RILL_DTYPE_FP64, rill_cpu_grid_sampler_grad_fp64)
