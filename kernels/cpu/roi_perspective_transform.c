/* roi_perspective_transform and its gradient on the CPU, following Paddle 1.8.5's kernel:
 * the homography maps the output grid onto the ROI, normalized to
 * max(2, th) x clamp(round(est_w * (max(2, th) - 1) / est_h) + 1, 2, tw) points, est_w and
 * est_h the means of opposite sides; an output pixel samples X bilinearly at its source
 * point when that point lies in the quadrilateral (edges included, 1e-4 tolerance) and
 * more than half a pixel inside the map, else it is 0 with Mask 0. The gradient scatters
 * Out@GRAD through the same bilinear weights. */
#include <math.h>
#include <string.h>

#include "kernels/cpu/roi.h"

#define PERSP_EPS 1e-4

static bool persp_ge(double a, double b) { return a > b || fabs(a - b) < PERSP_EPS; }
static bool persp_le(double a, double b) { return a < b || fabs(a - b) < PERSP_EPS; }
static bool persp_gt(double a, double b) { return a - b > PERSP_EPS; }

/* Whether (x, y) lies on an edge of the quadrilateral or inside it (odd crossings of the
 * ray towards +x). */
static bool persp_in_quad(double x, double y, const double qx[4], const double qy[4]) {
  for (int i = 0; i < 4; i++) {
    double xs = qx[i], ys = qy[i], xe = qx[(i + 1) % 4], ye = qy[(i + 1) % 4];
    if (fabs(ys - ye) < PERSP_EPS) {
      if (fabs(y - ys) < PERSP_EPS && fabs(y - ye) < PERSP_EPS &&
          persp_ge(x, fmin(xs, xe)) && persp_le(x, fmax(xs, xe)))
        return true;
    } else {
      double cx = (y - ys) * (xe - xs) / (ye - ys) + xs;
      if (fabs(cx - x) < PERSP_EPS && persp_ge(y, fmin(ys, ye)) && persp_le(y, fmax(ys, ye)))
        return true;
    }
  }
  int crossings = 0;
  for (int i = 0; i < 4; i++) {
    double xs = qx[i], ys = qy[i], xe = qx[(i + 1) % 4], ye = qy[(i + 1) % 4];
    if (fabs(ys - ye) < PERSP_EPS) continue;
    if (persp_le(y, fmin(ys, ye)) || persp_gt(y, fmax(ys, ye))) continue;
    double cx = (y - ys) * (xe - xs) / (ye - ys) + xs;
    if (fabs(cx - x) < PERSP_EPS) return true;
    if (persp_gt(cx, x)) crossings++;
  }
  return crossings % 2 == 1;
}

/* The four bilinear taps of source point (x, y) on an h x w map (flat positions and
 * weights); false when it lies half a pixel or more outside. */
static bool persp_taps(int64_t h, int64_t w, double x, double y, int64_t pos[4], double wt[4]) {
  if (persp_ge(-0.5, x) || persp_ge(x, (double)w - 0.5) || persp_ge(-0.5, y) ||
      persp_ge(y, (double)h - 0.5))
    return false;
  if (persp_ge(0, x)) x = 0;
  if (persp_ge(0, y)) y = 0;
  int64_t x0 = (int64_t)floor(x), y0 = (int64_t)floor(y), x1, y1;
  if (x0 >= w - 1) {
    x1 = x0 = w - 1;
    x = (double)x0;
  } else {
    x1 = x0 + 1;
  }
  if (y0 >= h - 1) {
    y1 = y0 = h - 1;
    y = (double)y0;
  } else {
    y1 = y0 + 1;
  }
  double lx = x - (double)x0, ly = y - (double)y0;
  pos[0] = y0 * w + x0;
  pos[1] = y1 * w + x0;
  pos[2] = y1 * w + x1;
  pos[3] = y0 * w + x1;
  wt[0] = (1 - lx) * (1 - ly);
  wt[1] = (1 - lx) * ly;
  wt[2] = lx * ly;
  wt[3] = lx * (1 - ly);
  return true;
}

#define PERSP(T, DT, NAME)                                                                     \
  /* The homography of one ROI (corners already scaled), as Paddle computes it in T. */      \
  static void NAME##_matrix(int64_t th, int64_t tw, const T qx[4], const T qy[4], T m[9]) {    \
    T l1 = (T)sqrt((double)((qx[0] - qx[1]) * (qx[0] - qx[1]) + (qy[0] - qy[1]) * (qy[0] - qy[1]))); \
    T l2 = (T)sqrt((double)((qx[1] - qx[2]) * (qx[1] - qx[2]) + (qy[1] - qy[2]) * (qy[1] - qy[2]))); \
    T l3 = (T)sqrt((double)((qx[2] - qx[3]) * (qx[2] - qx[3]) + (qy[2] - qy[3]) * (qy[2] - qy[3]))); \
    T l4 = (T)sqrt((double)((qx[3] - qx[0]) * (qx[3] - qx[0]) + (qy[3] - qy[0]) * (qy[3] - qy[0]))); \
    T eh = (T)((double)(l2 + l4) / 2.0), ew = (T)((double)(l1 + l3) / 2.0);                   \
    int64_t nh = th > 2 ? th : 2;                                                              \
    int64_t nw = (int64_t)round((double)(ew * (T)(nh - 1) / eh)) + 1;                         \
    nw = nw < tw ? nw : tw;                                                                    \
    nw = nw > 2 ? nw : 2;                                                                      \
    T dx1 = qx[1] - qx[2], dx2 = qx[3] - qx[2], dx3 = qx[0] - qx[1] + qx[2] - qx[3];           \
    T dy1 = qy[1] - qy[2], dy2 = qy[3] - qy[2], dy3 = qy[0] - qy[1] + qy[2] - qy[3];           \
    double den = (double)(dx1 * dy2 - dx2 * dy1) + 1e-5;                                       \
    m[6] = (T)((double)(dx3 * dy2 - dx2 * dy3) / den / (double)(nw - 1));                      \
    m[7] = (T)((double)(dx1 * dy3 - dx3 * dy1) / den / (double)(nh - 1));                      \
    m[8] = 1;                                                                                  \
    m[3] = (qy[1] - qy[0] + m[6] * (T)(nw - 1) * qy[1]) / (T)(nw - 1);                         \
    m[4] = (qy[3] - qy[0] + m[7] * (T)(nh - 1) * qy[3]) / (T)(nh - 1);                         \
    m[5] = qy[0];                                                                              \
    m[0] = (qx[1] - qx[0] + m[6] * (T)(nw - 1) * qx[1]) / (T)(nw - 1);                         \
    m[1] = (qx[3] - qx[0] + m[7] * (T)(nh - 1) * qx[3]) / (T)(nh - 1);                         \
    m[2] = qx[0];                                                                              \
  }                                                                                            \
  /* Forward (Out, Mask, TransformMatrix) and backward (X@GRAD) walk the same samples. */   \
  static rill_status *NAME##_walk(rill_kernel_ctx *ctx, bool backward) {                       \
    rill_tensor *x = NULL, *rois = NULL, *res = rill_kout(ctx, 0, 0), *dout = NULL;            \
    rill_tensor *mask = NULL, *mat = NULL, *idx = NULL, *wts = NULL;                           \
    int32_t *ids = NULL;                                                                       \
    if (!res && backward) return NULL;                                                         \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &res));                                             \
    if (backward) {                                                                            \
      RILL_TRY(rill_kin_need(ctx, 4, 0, DT, &dout));                                           \
    } else {                                                                                   \
      if (rill_kout(ctx, 1, 0)) RILL_TRY(rill_kout_need(ctx, 1, 0, RILL_DTYPE_INT32, &mask));  \
      if (rill_kout(ctx, 2, 0)) RILL_TRY(rill_kout_need(ctx, 2, 0, DT, &mat));                 \
      if (rill_kout(ctx, 3, 0)) RILL_TRY(rill_kout_need(ctx, 3, 0, RILL_DTYPE_INT32, &idx));   \
      if (rill_kout(ctx, 4, 0)) RILL_TRY(rill_kout_need(ctx, 4, 0, DT, &wts));                 \
    }                                                                                          \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                                \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &rois));                                             \
    if (x->dims.n != 4 || rois->dims.n != 2 || rois->dims.d[1] != 8)                           \
      return rill_kernel_error(ctx, "inputs X (%s) and ROIs (%s) must be [N, C, H, W] and "    \
                               "[R, 8]", rill_kin_name(ctx, 0, 0), rill_kin_name(ctx, 1, 0));  \
    RILL_TRY(rill_roi_image_ids(ctx, 1, RILL_ROI_NO_SLOT, false, x->dims.d[0], &ids));                        \
    int64_t R = rois->dims.d[0], C = x->dims.d[1], H = x->dims.d[2], W = x->dims.d[3];         \
    int64_t th = ctx->attrs[RILL_ROI_PERSPECTIVE_TRANSFORM_ATTR_TRANSFORMED_HEIGHT].v.i;       \
    int64_t tw = ctx->attrs[RILL_ROI_PERSPECTIVE_TRANSFORM_ATTR_TRANSFORMED_WIDTH].v.i;        \
    T scale = (T)ctx->attrs[RILL_ROI_PERSPECTIVE_TRANSFORM_ATTR_SPATIAL_SCALE].v.f;            \
    rill_dims want = {.n = 4, .d = {R, C, th, tw}}, mwant = {.n = 4, .d = {R, 1, th, tw}};     \
    rill_dims twant = {.n = 2, .d = {R, 9}};                                                   \
    rill_status *st = backward ? rill_kin_check_dims(ctx, 4, dout, &want)                      \
                               : rill_kout_check_dims(ctx, 0, 0, res, &want);                  \
    if (!st && backward) st = rill_kout_check_dims(ctx, 0, 0, res, &x->dims);                  \
    if (!st && mask) st = rill_kout_check_dims(ctx, 1, 0, mask, &mwant);                       \
    if (!st && mat) st = rill_kout_check_dims(ctx, 2, 0, mat, &twant);                         \
    if (!st && idx) st = rill_kout_check_dims(ctx, 3, 0, idx, &want);                          \
    if (!st && wts) st = rill_kout_check_dims(ctx, 4, 0, wts, &want);                          \
    if (st) {                                                                                  \
      rill_free(ids);                                                                          \
      return st;                                                                               \
    }                                                                                          \
    if (idx) memset(rill_tensor_ptr(idx), 0, (size_t)rill_tensor_numel(idx) * sizeof(int32_t)); \
    if (wts) memset(rill_tensor_ptr(wts), 0, (size_t)rill_tensor_numel(wts) * sizeof(T));     \
    const T *xp = rill_tensor_ptr(x), *rp = rill_tensor_ptr(rois);                             \
    const T *gp = backward ? (const T *)rill_tensor_ptr(dout) : NULL;                          \
    T *op = rill_tensor_ptr(res);                                                              \
    int32_t *mp = mask ? (int32_t *)rill_tensor_ptr(mask) : NULL;                              \
    T *tp = mat ? (T *)rill_tensor_ptr(mat) : NULL;                                            \
    if (backward) memset(op, 0, (size_t)rill_tensor_numel(res) * sizeof(T));                   \
    for (int64_t n = 0; n < R; n++) {                                                          \
      T qx[4], qy[4], m[9];                                                                    \
      double dqx[4], dqy[4];                                                                   \
      for (int k = 0; k < 4; k++) {                                                            \
        qx[k] = rp[n * 8 + 2 * k] * scale;                                                     \
        qy[k] = rp[n * 8 + 2 * k + 1] * scale;                                                 \
        dqx[k] = (double)qx[k];                                                                \
        dqy[k] = (double)qy[k];                                                                \
      }                                                                                        \
      NAME##_matrix(th, tw, qx, qy, m);                                                        \
      if (tp) memcpy(tp + n * 9, m, sizeof m);                                                 \
      for (int64_t i = 0; i < th; i++)                                                         \
        for (int64_t j = 0; j < tw; j++) {                                                     \
          T u = m[0] * (T)j + m[1] * (T)i + m[2], v = m[3] * (T)j + m[4] * (T)i + m[5];        \
          T s = m[6] * (T)j + m[7] * (T)i + m[8];                                              \
          T sx = u / s, sy = v / s;                                                            \
          int64_t pos[4];                                                                      \
          double wt[4];                                                                        \
          bool hit = persp_in_quad((double)sx, (double)sy, dqx, dqy) &&                        \
                     persp_taps(H, W, (double)sx, (double)sy, pos, wt);                        \
          if (mp) mp[(n * th + i) * tw + j] = hit ? 1 : 0;                                     \
          for (int64_t c = 0; c < C; c++) {                                                    \
            int64_t k = ((n * C + c) * th + i) * tw + j;                                       \
            int64_t plane = ((int64_t)ids[n] * C + c) * H * W;                                \
            if (backward) {                                                                    \
              if (hit)                                                                         \
                for (int q = 0; q < 4; q++) op[plane + pos[q]] += gp[k] * (T)wt[q];            \
            } else {                                                                           \
              T acc = 0;                                                                       \
              if (hit)                                                                         \
                for (int q = 0; q < 4; q++) acc += (T)wt[q] * xp[plane + pos[q]];              \
              op[k] = acc;                                                                     \
            }                                                                                  \
          }                                                                                    \
        }                                                                                      \
    }                                                                                          \
    rill_free(ids);                                                                            \
    return NULL;                                                                               \
  }                                                                                            \
  rill_status *NAME(rill_kernel_ctx *ctx) { return NAME##_walk(ctx, false); }                  \
  rill_status *NAME##_grad(rill_kernel_ctx *ctx) { return NAME##_walk(ctx, true); }

PERSP(float, RILL_DTYPE_FP32, rill_cpu_roi_perspective_transform_fp32)
PERSP(double, RILL_DTYPE_FP64, rill_cpu_roi_perspective_transform_fp64)
