/* roi_align, roi_pool and their gradients on the CPU, following Paddle 1.8.5's kernels:
 * roi_align samples at roi_min + (bin + (i + 0.5) / grid) * bin_size, clamps samples
 * within one pixel of the map to it and drops the others (weight 0, still counted);
 * roi_pool rounds the ROI corners, spans [floor(p * bin), ceil((p + 1) * bin)) per bin
 * and keeps the first maximum. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "kernels/cpu/roi.h"

/* The four bilinear taps of sample (y, x) on an h x w map: flat positions and weights;
 * false when the sample lies more than one pixel outside the map. */
#define ROI_TAPS(T, NAME)                                                                      \
  static bool NAME(int64_t h, int64_t w, T y, T x, int64_t pos[4], T wt[4]) {                  \
    if (y < -1.0 || y > (T)h || x < -1.0 || x > (T)w) return false;                            \
    if (y <= 0) y = 0;                                                                         \
    if (x <= 0) x = 0;                                                                         \
    int64_t y0 = (int64_t)y, x0 = (int64_t)x, y1, x1;                                          \
    if (y0 >= h - 1) {                                                                         \
      y1 = y0 = h - 1;                                                                         \
      y = (T)y0;                                                                               \
    } else {                                                                                   \
      y1 = y0 + 1;                                                                             \
    }                                                                                          \
    if (x0 >= w - 1) {                                                                         \
      x1 = x0 = w - 1;                                                                         \
      x = (T)x0;                                                                               \
    } else {                                                                                   \
      x1 = x0 + 1;                                                                             \
    }                                                                                          \
    T ly = y - (T)y0, lx = x - (T)x0, hy = (T)1 - ly, hx = (T)1 - lx;                          \
    pos[0] = y0 * w + x0;                                                                      \
    pos[1] = y0 * w + x1;                                                                      \
    pos[2] = y1 * w + x0;                                                                      \
    pos[3] = y1 * w + x1;                                                                      \
    wt[0] = hy * hx;                                                                           \
    wt[1] = hy * lx;                                                                           \
    wt[2] = ly * hx;                                                                           \
    wt[3] = ly * lx;                                                                           \
    return true;                                                                               \
  }

/* Shared set-up: X, ROIs and the image of each ROI. */
static rill_status *roi_setup(rill_kernel_ctx *ctx, rill_dtype dt, rill_tensor **x,
                              rill_tensor **rois, int32_t **ids) {
  RILL_TRY(rill_kin_need(ctx, 0, 0, dt, x));
  RILL_TRY(rill_kin_need(ctx, 1, 0, dt, rois));
  if ((*x)->dims.n != 4 || (*rois)->dims.n != 2 || (*rois)->dims.d[1] != 4)
    return rill_kernel_error(ctx, "inputs X (%s) and ROIs (%s) must be [N, C, H, W] and [R, 4]",
                             rill_kin_name(ctx, 0, 0), rill_kin_name(ctx, 1, 0));
  return rill_roi_image_ids(ctx, 1, 2, false, (*x)->dims.d[0], ids);
}

/* One ROI's sampling geometry for roi_align. */
#define ROI_ALIGN_GEOM(T)                                                                      \
  const T *r = rp + n * 4;                                                                     \
  T x0 = r[0] * scale, y0 = r[1] * scale, x1 = r[2] * scale, y1 = r[3] * scale;                \
  T rw = x1 - x0 > (T)1 ? x1 - x0 : (T)1, rh = y1 - y0 > (T)1 ? y1 - y0 : (T)1;                \
  T bh = rh / (T)ph, bw = rw / (T)pw;                                                          \
  int64_t gh = ratio > 0 ? ratio : (int64_t)ceil(rh / (T)ph);                                  \
  int64_t gw = ratio > 0 ? ratio : (int64_t)ceil(rw / (T)pw);                                  \
  T count = (T)(gh * gw);

/* roi_align's forward (Out = bin averages of X) and backward (X@GRAD += Out@GRAD
 * spread through the same weights) walk the same samples: one function does both. */
#define ROI_ALIGN(T, DT, NAME)                                                                 \
  ROI_TAPS(T, NAME##_taps)                                                                     \
  static rill_status *NAME##_walk(rill_kernel_ctx *ctx, bool backward) {                       \
    rill_tensor *x = NULL, *rois = NULL, *res = rill_kout(ctx, 0, 0), *dout = NULL;            \
    int32_t *ids = NULL;                                                                       \
    if (!res && backward) return NULL;                                                         \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &res));                                             \
    if (backward) RILL_TRY(rill_kin_need(ctx, 3, 0, DT, &dout));                               \
    RILL_TRY(roi_setup(ctx, DT, &x, &rois, &ids));                                             \
    int64_t R = rois->dims.d[0], C = x->dims.d[1], H = x->dims.d[2], W = x->dims.d[3];         \
    int64_t ph = ctx->attrs[RILL_ROI_ALIGN_ATTR_POOLED_HEIGHT].v.i;                            \
    int64_t pw = ctx->attrs[RILL_ROI_ALIGN_ATTR_POOLED_WIDTH].v.i;                             \
    int64_t ratio = ctx->attrs[RILL_ROI_ALIGN_ATTR_SAMPLING_RATIO].v.i;                        \
    T scale = (T)ctx->attrs[RILL_ROI_ALIGN_ATTR_SPATIAL_SCALE].v.f;                            \
    rill_dims want = {.n = 4, .d = {R, C, ph, pw}};                                            \
    rill_status *st = backward ? rill_kin_check_dims(ctx, 3, dout, &want)                      \
                               : rill_kout_check_dims(ctx, 0, 0, res, &want);                  \
    if (!st && backward) st = rill_kout_check_dims(ctx, 0, 0, res, &x->dims);                  \
    const T *xp = rill_tensor_ptr(x), *rp = rill_tensor_ptr(rois);                             \
    const T *gp = backward ? (const T *)rill_tensor_ptr(dout) : NULL;                          \
    T *op = rill_tensor_ptr(res);                                                              \
    if (!st && backward) memset(op, 0, (size_t)rill_tensor_numel(res) * sizeof(T));           \
    for (int64_t n = 0; !st && n < R; n++) {                                                   \
      ROI_ALIGN_GEOM(T)                                                                        \
      for (int64_t c = 0; c < C; c++) {                                                        \
        int64_t plane = ((int64_t)ids[n] * C + c) * H * W;                                     \
        for (int64_t i = 0; i < ph; i++)                                                       \
          for (int64_t j = 0; j < pw; j++) {                                                   \
            int64_t k = ((n * C + c) * ph + i) * pw + j;                                       \
            T acc = 0, g = backward ? gp[k] : (T)0;                                            \
            for (int64_t iy = 0; iy < gh; iy++) {                                              \
              T y = y0 + (T)i * bh + (T)((float)iy + .5f) * bh / (T)gh;                        \
              for (int64_t ix = 0; ix < gw; ix++) {                                            \
                T xs = x0 + (T)j * bw + (T)((float)ix + .5f) * bw / (T)gw;                     \
                int64_t pos[4];                                                                \
                T wt[4];                                                                       \
                if (!NAME##_taps(H, W, y, xs, pos, wt)) continue;                              \
                for (int q = 0; q < 4; q++) {                                                  \
                  if (backward)                                                                \
                    op[plane + pos[q]] += g * wt[q] / count;                                   \
                  else                                                                         \
                    acc += wt[q] * xp[plane + pos[q]];                                         \
                }                                                                              \
              }                                                                                \
            }                                                                                  \
            if (!backward) op[k] = acc / count;                                                \
          }                                                                                    \
      }                                                                                        \
    }                                                                                          \
    rill_free(ids);                                                                            \
    return st;                                                                                 \
  }                                                                                            \
  rill_status *NAME(rill_kernel_ctx *ctx) { return NAME##_walk(ctx, false); }                  \
  rill_status *NAME##_grad(rill_kernel_ctx *ctx) { return NAME##_walk(ctx, true); }

ROI_ALIGN(float, RILL_DTYPE_FP32, rill_cpu_roi_align_fp32)
ROI_ALIGN(double, RILL_DTYPE_FP64, rill_cpu_roi_align_fp64)

/* One ROI's rounded corners and bin sizes for roi_pool. */
#define ROI_POOL_GEOM(T)                                                                       \
  const T *r = rp + n * 4;                                                                     \
  int64_t sw = (int64_t)round(r[0] * scale), sh = (int64_t)round(r[1] * scale);                \
  int64_t ew = (int64_t)round(r[2] * scale), eh = (int64_t)round(r[3] * scale);                \
  int64_t rh = eh - sh + 1 > 1 ? eh - sh + 1 : 1, rw = ew - sw + 1 > 1 ? ew - sw + 1 : 1;      \
  T bh = (T)rh / (T)ph, bw = (T)rw / (T)pw;

#define ROI_POOL(T, DT, NAME)                                                                  \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                    \
    rill_tensor *x = NULL, *rois = NULL, *out = NULL, *am = NULL;                              \
    int32_t *ids = NULL;                                                                       \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                             \
    if (rill_kout(ctx, 1, 0)) RILL_TRY(rill_kout_need(ctx, 1, 0, RILL_DTYPE_INT64, &am));      \
    RILL_TRY(roi_setup(ctx, DT, &x, &rois, &ids));                                             \
    int64_t R = rois->dims.d[0], C = x->dims.d[1], H = x->dims.d[2], W = x->dims.d[3];         \
    int64_t ph = ctx->attrs[RILL_ROI_POOL_ATTR_POOLED_HEIGHT].v.i;                             \
    int64_t pw = ctx->attrs[RILL_ROI_POOL_ATTR_POOLED_WIDTH].v.i;                              \
    T scale = (T)ctx->attrs[RILL_ROI_POOL_ATTR_SPATIAL_SCALE].v.f;                             \
    rill_dims want = {.n = 4, .d = {R, C, ph, pw}};                                            \
    rill_status *st = rill_kout_check_dims(ctx, 0, 0, out, &want);                             \
    if (!st && am) st = rill_kout_check_dims(ctx, 1, 0, am, &want);                            \
    const T *xp = rill_tensor_ptr(x), *rp = rill_tensor_ptr(rois);                             \
    T *op = rill_tensor_ptr(out);                                                              \
    int64_t *ap = am ? (int64_t *)rill_tensor_ptr(am) : NULL;                                  \
    for (int64_t n = 0; !st && n < R; n++) {                                                   \
      ROI_POOL_GEOM(T)                                                                         \
      const T *img = xp + (int64_t)ids[n] * C * H * W;                                         \
      for (int64_t c = 0; c < C; c++) {                                                        \
        const T *plane = img + c * H * W;                                                      \
        for (int64_t i = 0; i < ph; i++)                                                       \
          for (int64_t j = 0; j < pw; j++) {                                                   \
            int64_t hs = (int64_t)floor((T)i * bh) + sh, he = (int64_t)ceil((T)(i + 1) * bh) + sh; \
            int64_t ws = (int64_t)floor((T)j * bw) + sw, we = (int64_t)ceil((T)(j + 1) * bw) + sw; \
            hs = hs < 0 ? 0 : hs > H ? H : hs;                                                 \
            he = he < 0 ? 0 : he > H ? H : he;                                                 \
            ws = ws < 0 ? 0 : ws > W ? W : ws;                                                 \
            we = we < 0 ? 0 : we > W ? W : we;                                                 \
            int64_t k = ((n * C + c) * ph + i) * pw + j, best = -1;                            \
            T v = he <= hs || we <= ws ? (T)0 : (T)(sizeof(T) == 4 ? -FLT_MAX : -DBL_MAX);       \
            for (int64_t y = hs; y < he; y++)                                                  \
              for (int64_t xx = ws; xx < we; xx++)                                             \
                if (plane[y * W + xx] > v) {                                                   \
                  v = plane[y * W + xx];                                                       \
                  best = y * W + xx;                                                           \
                }                                                                              \
            op[k] = v;                                                                         \
            if (ap) ap[k] = best;                                                              \
          }                                                                                    \
      }                                                                                        \
    }                                                                                          \
    rill_free(ids);                                                                            \
    return st;                                                                                 \
  }                                                                                            \
  rill_status *NAME##_grad(rill_kernel_ctx *ctx) {                                             \
    rill_tensor *x = NULL, *rois = NULL, *am = NULL, *dout = NULL, *dx = rill_kout(ctx, 0, 0); \
    int32_t *ids = NULL;                                                                       \
    if (!dx) return NULL;                                                                      \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &dx));                                              \
    RILL_TRY(rill_kin_need(ctx, 3, 0, RILL_DTYPE_INT64, &am));                                 \
    RILL_TRY(rill_kin_need(ctx, 4, 0, DT, &dout));                                             \
    RILL_TRY(roi_setup(ctx, DT, &x, &rois, &ids));                                             \
    int64_t R = rois->dims.d[0], C = x->dims.d[1], H = x->dims.d[2], W = x->dims.d[3];         \
    int64_t ph = ctx->attrs[RILL_ROI_POOL_ATTR_POOLED_HEIGHT].v.i;                             \
    int64_t pw = ctx->attrs[RILL_ROI_POOL_ATTR_POOLED_WIDTH].v.i;                              \
    rill_dims want = {.n = 4, .d = {R, C, ph, pw}};                                            \
    rill_status *st = rill_kin_check_dims(ctx, 3, am, &want);                                  \
    if (!st) st = rill_kin_check_dims(ctx, 4, dout, &want);                                    \
    if (!st) st = rill_kout_check_dims(ctx, 0, 0, dx, &x->dims);                               \
    const int64_t *ap = rill_tensor_ptr(am);                                                   \
    const T *gp = rill_tensor_ptr(dout);                                                       \
    T *dp = rill_tensor_ptr(dx);                                                               \
    if (!st) memset(dp, 0, (size_t)rill_tensor_numel(dx) * sizeof(T));                         \
    for (int64_t n = 0; !st && n < R; n++)                                                     \
      for (int64_t c = 0; c < C; c++) {                                                        \
        T *plane = dp + ((int64_t)ids[n] * C + c) * H * W;                                     \
        for (int64_t k = (n * C + c) * ph * pw, e = k + ph * pw; k < e; k++) {                 \
          if (ap[k] < 0) continue;                                                             \
          if (ap[k] >= H * W) {                                                                \
            st = rill_kernel_error(ctx, "input Argmax (%s) holds %lld, outside the %lld x %lld " \
                                   "map", rill_kin_name(ctx, 3, 0), (long long)ap[k],          \
                                   (long long)H, (long long)W);                                \
            break;                                                                             \
          }                                                                                    \
          plane[ap[k]] += gp[k];                                                               \
        }                                                                                      \
      }                                                                                        \
    rill_free(ids);                                                                            \
    return st;                                                                                 \
  }

ROI_POOL(float, RILL_DTYPE_FP32, rill_cpu_roi_pool_fp32)
ROI_POOL(double, RILL_DTYPE_FP64, rill_cpu_roi_pool_fp64)
