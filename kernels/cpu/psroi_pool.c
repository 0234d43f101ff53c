/* psroi_pool, prroi_pool and their gradients on the CPU, following Paddle 1.8.5's kernels:
 * psroi_pool rounds the ROI corners, adds one pixel to the far ones, keeps an extent of at
 * least 0.1 and spans [floor(start + p * bin), ceil(start + (p + 1) * bin)) per bin, 0 for
 * an empty bin; prroi_pool integrates the tent-weighted map exactly: a bin [ys, ye] x
 * [xs, xe] weighs pixel (y, x) by A(y) B(x), A(y) the integral over [ys, ye] of
 * max(0, 1 - |t - y|), so Out = sum A B X / area, 0 for a bin without area. */
#include <math.h>
#include <string.h>

#include "kernels/cpu/roi.h"

/* Shared set-up: X, ROIs and the image of each ROI. */
static rill_status *pool_setup(rill_kernel_ctx *ctx, rill_dtype dt, size_t nums_slot,
                               rill_tensor **x, rill_tensor **rois, int32_t **ids) {
  RILL_TRY(rill_kin_need(ctx, 0, 0, dt, x));
  RILL_TRY(rill_kin_need(ctx, 1, 0, dt, rois));
  if ((*x)->dims.n != 4 || (*rois)->dims.n != 2 || (*rois)->dims.d[1] != 4)
    return rill_kernel_error(ctx, "inputs X (%s) and ROIs (%s) must be [N, C, H, W] and [R, 4]",
                             rill_kin_name(ctx, 0, 0), rill_kin_name(ctx, 1, 0));
  return rill_roi_image_ids(ctx, 1, nums_slot, true, (*x)->dims.d[0], ids);
}

/* psroi_pool's forward (Out = bin means of the bin's own channel) and backward (X@GRAD +=
 * Out@GRAD / bin area) walk the same bins: one function does both. */
#define PSROI_POOL(T, DT, NAME)                                                                \
  static rill_status *NAME##_walk(rill_kernel_ctx *ctx, bool backward) {                       \
    rill_tensor *x = NULL, *rois = NULL, *res = rill_kout(ctx, 0, 0), *dout = NULL;            \
    int32_t *ids = NULL;                                                                       \
    if (!res && backward) return NULL;                                                         \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &res));                                             \
    if (backward) RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &dout));                               \
    RILL_TRY(pool_setup(ctx, DT, RILL_ROI_NO_SLOT, &x, &rois, &ids));                          \
    int64_t R = rois->dims.d[0], C = x->dims.d[1], H = x->dims.d[2], W = x->dims.d[3];         \
    int64_t ph = ctx->attrs[RILL_PSROI_POOL_ATTR_POOLED_HEIGHT].v.i;                           \
    int64_t pw = ctx->attrs[RILL_PSROI_POOL_ATTR_POOLED_WIDTH].v.i;                            \
    int64_t oc = ctx->attrs[RILL_PSROI_POOL_ATTR_OUTPUT_CHANNELS].v.i;                          \
    T scale = (T)ctx->attrs[RILL_PSROI_POOL_ATTR_SPATIAL_SCALE].v.f;                           \
    rill_dims want = {.n = 4, .d = {R, oc, ph, pw}};                                           \
    rill_status *st = NULL;                                                                    \
    if (C != oc * ph * pw)                                                                     \
      st = rill_kernel_error(ctx, "input X (%s) has %lld channels, expected output_channels * " \
                             "pooled_height * pooled_width = %lld", rill_kin_name(ctx, 0, 0),  \
                             (long long)C, (long long)(oc * ph * pw));                         \
    if (!st)                                                                                   \
      st = backward ? rill_kin_check_dims(ctx, 2, dout, &want)                                 \
                    : rill_kout_check_dims(ctx, 0, 0, res, &want);                             \
    if (!st && backward) st = rill_kout_check_dims(ctx, 0, 0, res, &x->dims);                  \
    const T *xp = rill_tensor_ptr(x), *rp = rill_tensor_ptr(rois);                             \
    const T *gp = backward ? (const T *)rill_tensor_ptr(dout) : NULL;                          \
    T *op = rill_tensor_ptr(res);                                                              \
    if (!st && backward) memset(op, 0, (size_t)rill_tensor_numel(res) * sizeof(T));           \
    for (int64_t n = 0; !st && n < R; n++) {                                                   \
      const T *r = rp + n * 4;                                                                 \
      T sw = (T)round(r[0]) * scale, sh = (T)round(r[1]) * scale;                              \
      T ew = (T)(round(r[2]) + 1) * scale, eh = (T)(round(r[3]) + 1) * scale;                  \
      T bh = (eh - sh > (T)0.1 ? eh - sh : (T)0.1) / (T)ph;                                    \
      T bw = (ew - sw > (T)0.1 ? ew - sw : (T)0.1) / (T)pw;                                    \
      for (int64_t c = 0; c < oc; c++)                                                         \
        for (int64_t i = 0; i < ph; i++)                                                       \
          for (int64_t j = 0; j < pw; j++) {                                                   \
            int64_t hs = (int64_t)floor((T)i * bh + sh), he = (int64_t)ceil((T)(i + 1) * bh + sh); \
            int64_t ws = (int64_t)floor((T)j * bw + sw), we = (int64_t)ceil((T)(j + 1) * bw + sw); \
            hs = hs < 0 ? 0 : hs > H ? H : hs;                                                 \
            he = he < 0 ? 0 : he > H ? H : he;                                                 \
            ws = ws < 0 ? 0 : ws > W ? W : ws;                                                 \
            we = we < 0 ? 0 : we > W ? W : we;                                                 \
            int64_t k = ((n * oc + c) * ph + i) * pw + j;                                      \
            int64_t plane = ((int64_t)ids[n] * C + (c * ph + i) * pw + j) * H * W;             \
            bool empty = he <= hs || we <= ws;                                                 \
            T area = empty ? (T)1 : (T)((he - hs) * (we - ws)), acc = 0;                       \
            T g = backward && !empty ? gp[k] / area : (T)0;                                    \
            for (int64_t y = hs; y < he; y++)                                                  \
              for (int64_t xx = ws; xx < we; xx++) {                                           \
                if (backward)                                                                  \
                  op[plane + y * W + xx] += g;                                                 \
                else                                                                           \
                  acc += xp[plane + y * W + xx];                                               \
              }                                                                                \
            if (!backward) op[k] = empty ? (T)0 : acc / area;                                  \
          }                                                                                    \
    }                                                                                          \
    rill_free(ids);                                                                            \
    return st;                                                                                 \
  }                                                                                            \
  rill_status *NAME(rill_kernel_ctx *ctx) { return NAME##_walk(ctx, false); }                  \
  rill_status *NAME##_grad(rill_kernel_ctx *ctx) { return NAME##_walk(ctx, true); }

PSROI_POOL(float, RILL_DTYPE_FP32, rill_cpu_psroi_pool_fp32)
PSROI_POOL(double, RILL_DTYPE_FP64, rill_cpu_psroi_pool_fp64)

/* prroi_pool. NAME##_tent: the integral over [a, b] of max(0, 1 - |t - p|) for each pixel
 * p of [0, n), into wt; *lo and *hi bound the pixels it touches. NAME##_line: the
 * integral of the interpolated map along a bin edge: rows weighted by wa (at rows
 * [lo, hi)) at column x, or with `along_x` columns weighted by wa at row x. */
#define PRROI_POOL(T, DT, NAME)                                                                \
  static T NAME##_prim(T t) {                                                                  \
    return t <= (T)-1 ? (T)0 : t < (T)0 ? (t + 1) * (t + 1) / 2 : t < (T)1 ? 1 - (1 - t) * (1 - t) / 2 : (T)1; \
  }                                                                                            \
  static void NAME##_tent(T a, T b, int64_t n, T *wt, int64_t *lo, int64_t *hi) {              \
    int64_t s = (int64_t)floor(a), e = (int64_t)ceil(b) + 1;                                   \
    *lo = s < 0 ? 0 : s > n ? n : s;                                                           \
    *hi = e < 0 ? 0 : e > n ? n : e;                                                           \
    if (*hi < *lo) *hi = *lo;                                                                  \
    for (int64_t p = *lo; p < *hi; p++) wt[p] = NAME##_prim(b - (T)p) - NAME##_prim(a - (T)p); \
  }                                                                                            \
  static T NAME##_line(const T *plane, int64_t H, int64_t W, const T *wa, int64_t lo,          \
                       int64_t hi, T x, bool along_x) {                                        \
    int64_t n = along_x ? H : W, p0 = (int64_t)floor(x);                                       \
    T acc = 0;                                                                                 \
    for (int64_t q = p0; q <= p0 + 1; q++) {                                                   \
      if (q < 0 || q >= n) continue;                                                           \
      T t = (T)1 - fabs(x - (T)q);                                                             \
      if (t <= 0) continue;                                                                    \
      for (int64_t p = lo; p < hi; p++)                                                        \
        acc += t * wa[p] * (along_x ? plane[q * W + p] : plane[p * W + q]);                    \
    }                                                                                          \
    return acc;                                                                                \
  }                                                                                            \
  static rill_status *NAME##_walk(rill_kernel_ctx *ctx, bool backward) {                       \
    rill_tensor *x = NULL, *rois = NULL, *res = rill_kout(ctx, 0, 0), *dout = NULL;            \
    rill_tensor *droi = backward ? rill_kout(ctx, 1, 0) : NULL;                                \
    int32_t *ids = NULL;                                                                       \
    if (backward && !res && !droi) return NULL;                                                \
    if (res) RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &res));                                    \
    if (droi) RILL_TRY(rill_kout_need(ctx, 1, 0, DT, &droi));                                  \
    if (backward) RILL_TRY(rill_kin_need(ctx, 4, 0, DT, &dout));                               \
    RILL_TRY(pool_setup(ctx, DT, 2, &x, &rois, &ids));                                         \
    int64_t R = rois->dims.d[0], C = x->dims.d[1], H = x->dims.d[2], W = x->dims.d[3];         \
    int64_t ph = ctx->attrs[RILL_PRROI_POOL_ATTR_POOLED_HEIGHT].v.i;                           \
    int64_t pw = ctx->attrs[RILL_PRROI_POOL_ATTR_POOLED_WIDTH].v.i;                            \
    T scale = (T)ctx->attrs[RILL_PRROI_POOL_ATTR_SPATIAL_SCALE].v.f;                           \
    rill_dims want = {.n = 4, .d = {R, C, ph, pw}};                                            \
    rill_status *st = NULL;                                                                    \
    if (backward) {                                                                            \
      st = rill_kin_check_dims(ctx, 4, dout, &want);                                           \
      if (!st && res) st = rill_kout_check_dims(ctx, 0, 0, res, &x->dims);                    \
      if (!st && droi) st = rill_kout_check_dims(ctx, 1, 0, droi, &rois->dims);                \
    } else {                                                                                   \
      st = rill_kout_check_dims(ctx, 0, 0, res, &want);                                        \
    }                                                                                          \
    T *wy = st ? NULL : rill_malloc((size_t)(H + W + 1) * sizeof(T));                          \
    if (!st && !wy) st = rill_oom();                                                           \
    T *wx = wy ? wy + H : NULL;                                                                \
    const T *xp = rill_tensor_ptr(x), *rp = rill_tensor_ptr(rois);                             \
    const T *gp = backward ? (const T *)rill_tensor_ptr(dout) : NULL;                          \
    T *op = res ? (T *)rill_tensor_ptr(res) : NULL, *dr = droi ? (T *)rill_tensor_ptr(droi) : NULL; \
    if (!st && backward && op) memset(op, 0, (size_t)rill_tensor_numel(res) * sizeof(T));     \
    if (!st && dr) memset(dr, 0, (size_t)rill_tensor_numel(droi) * sizeof(T));                \
    for (int64_t n = 0; !st && n < R; n++) {                                                   \
      const T *r = rp + n * 4;                                                                 \
      T x0 = r[0] * scale, y0 = r[1] * scale, x1 = r[2] * scale, y1 = r[3] * scale;            \
      T bw = (x1 - x0 > 0 ? x1 - x0 : (T)0) / (T)pw, bh = (y1 - y0 > 0 ? y1 - y0 : (T)0) / (T)ph; \
      T win = bw * bh;                                                                         \
      for (int64_t i = 0; i < ph; i++)                                                         \
        for (int64_t j = 0; j < pw; j++) {                                                     \
          T ys = y0 + (T)i * bh, ye = ys + bh, xs = x0 + (T)j * bw, xe = xs + bw;              \
          int64_t ylo, yhi, xlo, xhi;                                                          \
          if (!(win > 0)) {                                                                    \
            if (!backward)                                                                     \
              for (int64_t c = 0; c < C; c++) op[((n * C + c) * ph + i) * pw + j] = 0;         \
            continue;                                                                          \
          }                                                                                    \
          NAME##_tent(ys, ye, H, wy, &ylo, &yhi);                                              \
          NAME##_tent(xs, xe, W, wx, &xlo, &xhi);                                              \
          for (int64_t c = 0; c < C; c++) {                                                    \
            int64_t k = ((n * C + c) * ph + i) * pw + j;                                       \
            int64_t base = ((int64_t)ids[n] * C + c) * H * W;                                  \
            const T *plane = xp + base;                                                        \
            T g = backward ? gp[k] : (T)0, o = 0;                                              \
            for (int64_t y = ylo; y < yhi; y++)                                                \
              for (int64_t xx = xlo; xx < xhi; xx++) {                                         \
                T wgt = wy[y] * wx[xx] / win;                                                  \
                if (!backward)                                                                 \
                  o += wgt * plane[y * W + xx];                                                \
                else if (op)                                                                   \
                  op[base + y * W + xx] += g * wgt;                                            \
                if (dr) o += wgt * plane[y * W + xx];                                          \
              }                                                                                \
            if (!backward) {                                                                   \
              op[k] = o;                                                                       \
              continue;                                                                        \
            }                                                                                  \
            if (!dr) continue;                                                                 \
            T px1 = (o * bh - NAME##_line(plane, H, W, wy, ylo, yhi, xs, false)) / win;        \
            T px2 = (NAME##_line(plane, H, W, wy, ylo, yhi, xe, false) - o * bh) / win;        \
            T py1 = (o * bw - NAME##_line(plane, H, W, wx, xlo, xhi, ys, true)) / win;         \
            T py2 = (NAME##_line(plane, H, W, wx, xlo, xhi, ye, true) - o * bw) / win;         \
            T fj = (T)j / (T)pw, fj1 = (T)(j + 1) / (T)pw;                                     \
            T fi = (T)i / (T)ph, fi1 = (T)(i + 1) / (T)ph, gs = g * scale;                     \
            dr[n * 4 + 0] += gs * (px1 * (1 - fj) + px2 * (1 - fj1));                          \
            dr[n * 4 + 1] += gs * (py1 * (1 - fi) + py2 * (1 - fi1));                          \
            dr[n * 4 + 2] += gs * (px1 * fj + px2 * fj1);                                      \
            dr[n * 4 + 3] += gs * (py1 * fi + py2 * fi1);                                      \
          }                                                                                    \
        }                                                                                      \
    }                                                                                          \
    rill_free(wy);                                                                             \
    rill_free(ids);                                                                            \
    return st;                                                                                 \
  }                                                                                            \
  rill_status *NAME(rill_kernel_ctx *ctx) { return NAME##_walk(ctx, false); }                  \
  rill_status *NAME##_grad(rill_kernel_ctx *ctx) { return NAME##_walk(ctx, true); }

PRROI_POOL(float, RILL_DTYPE_FP32, rill_cpu_prroi_pool_fp32)
PRROI_POOL(double, RILL_DTYPE_FP64, rill_cpu_prroi_pool_fp64)
