/* yolov3_loss and its gradient on the CPU, step by step as Paddle 1.8.5's kernels (see
 * operators/yolov3_loss.c): the IoU tests in T with half extents taken in double, sigmoid
 * cross entropy as max(x, 0) - x * t + log(1 + exp(-|x|)) in double, losses summed per
 * image in Paddle's order (each ground truth's location and class terms, then the
 * objectness of every cell); label smoothing moves min(1 / class_num, 1 / 40) of each
 * class target. The gradient writes each term's derivative times Loss@GRAD;
 * like Paddle's it assigns rather than adds, so two ground truths in one cell and anchor
 * leave the last one's location and class gradient. */
#include <math.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/kernels.h"

typedef struct yl_geom {
  int64_t n, b, h, w, stride, an_stride, mask_num, input_size, cls;
  const int32_t *anchors, *mask;
  int64_t nanchors;
} yl_geom;

/* Checks the inputs shared by both kernels and fills *g. */
static rill_status *yl_setup(rill_kernel_ctx *ctx, rill_dtype dt, rill_tensor **x,
                             rill_tensor **gb, rill_tensor **gl, rill_tensor **gs, yl_geom *g) {
  RILL_TRY(rill_kin_need(ctx, 0, 0, dt, x));
  RILL_TRY(rill_kin_need(ctx, 1, 0, dt, gb));
  RILL_TRY(rill_kin_need(ctx, 2, 0, RILL_DTYPE_INT32, gl));
  *gs = rill_kin(ctx, 3, 0);
  if (*gs) RILL_TRY(rill_kin_need(ctx, 3, 0, dt, gs));
  const rill_attr_value *mask = &ctx->attrs[RILL_YOLOV3_LOSS_ATTR_ANCHOR_MASK];
  g->cls = ctx->attrs[RILL_YOLOV3_LOSS_ATTR_CLASS_NUM].v.i;
  g->mask_num = (int64_t)mask->n;
  g->mask = mask->list.ints;
  g->anchors = ctx->attrs[RILL_YOLOV3_LOSS_ATTR_ANCHORS].list.ints;
  g->nanchors = (int64_t)ctx->attrs[RILL_YOLOV3_LOSS_ATTR_ANCHORS].n / 2;
  const rill_dims *xd = &(*x)->dims, *bd = &(*gb)->dims;
  if (xd->n != 4 || xd->d[1] != g->mask_num * (5 + g->cls) || xd->d[2] != xd->d[3])
    return rill_kernel_error(ctx, "input X (%s) must be [N, %lld, H, H]", rill_kin_name(ctx, 0, 0),
                             (long long)(g->mask_num * (5 + g->cls)));
  g->n = xd->d[0];
  g->h = xd->d[2];
  g->w = xd->d[3];
  if (bd->n != 3 || bd->d[0] != g->n || bd->d[2] != 4)
    return rill_kernel_error(ctx, "input GTBox (%s) must be [%lld, B, 4]", rill_kin_name(ctx, 1, 0),
                             (long long)g->n);
  g->b = bd->d[1];
  rill_dims nb = {.n = 2, .d = {g->n, g->b}};
  RILL_TRY(rill_kin_check_dims(ctx, 2, *gl, &nb));
  if (*gs) RILL_TRY(rill_kin_check_dims(ctx, 3, *gs, &nb));
  g->stride = g->h * g->w;
  g->an_stride = (5 + g->cls) * g->stride;
  g->input_size = ctx->attrs[RILL_YOLOV3_LOSS_ATTR_DOWNSAMPLE_RATIO].v.i * g->h;
  return NULL;
}

#define YOLOV3_LOSS(T, DT, EXP, LOG, FABS, NAME)                                               \
  typedef struct NAME##_box {                                                                  \
    T x, y, w, h;                                                                              \
  } NAME##_box;                                                                                \
  static T NAME##_sig(T v) { return (T)(1.0 / (1.0 + EXP(-v))); }                              \
  static T NAME##_sce(T v, T t) {                                                              \
    return (T)((v > 0 ? (double)v : 0.0) - (double)(v * t) + log(1.0 + (double)EXP(-FABS(v)))); \
  }                                                                                            \
  static T NAME##_overlap(T c1, T w1, T c2, T w2) {                                            \
    T l1 = (T)(c1 - w1 / 2.0), l2 = (T)(c2 - w2 / 2.0);                                        \
    T r1 = (T)(c1 + w1 / 2.0), r2 = (T)(c2 + w2 / 2.0);                                        \
    return (r1 < r2 ? r1 : r2) - (l1 > l2 ? l1 : l2);                                          \
  }                                                                                            \
  static T NAME##_iou(NAME##_box a, NAME##_box b) {                                            \
    T w = NAME##_overlap(a.x, a.w, b.x, b.w), h = NAME##_overlap(a.y, a.h, b.y, b.h);          \
    T inter = (w < 0 || h < 0) ? (T)0 : w * h;                                                 \
    return inter / (a.w * a.h + b.w * b.h - inter);                                            \
  }                                                                                            \
  /* Cell (gi, gj) of ground truth t, or an error when its centre is off the map. */           \
  static rill_status *NAME##_cell(rill_kernel_ctx *ctx, const yl_geom *g, NAME##_box gt,        \
                                  int64_t *gi, int64_t *gj) {                                  \
    *gi = (int64_t)(gt.x * (T)g->w);                                                           \
    *gj = (int64_t)(gt.y * (T)g->h);                                                           \
    if (*gi < 0 || *gi >= g->w || *gj < 0 || *gj >= g->h)                                      \
      return rill_kernel_error(ctx, "input GTBox (%s) has a box centred at (%g, %g), outside " \
                               "[0, 1)", rill_kin_name(ctx, 1, 0), (double)gt.x, (double)gt.y); \
    return NULL;                                                                               \
  }                                                                                            \
  /* The location targets of ground truth gt at cell (gi, gj) for anchor a, and the        \
   * weight (2 - w * h) * score. */                                                           \
  static void NAME##_targets(const yl_geom *g, NAME##_box gt, int64_t gi, int64_t gj,          \
                             int64_t a, T score, T t[4], T *ws) {                              \
    t[0] = gt.x * (T)g->h - (T)gi;                                                             \
    t[1] = gt.y * (T)g->h - (T)gj;                                                             \
    t[2] = LOG(gt.w * (T)g->input_size / (T)g->anchors[2 * a]);                                \
    t[3] = LOG(gt.h * (T)g->input_size / (T)g->anchors[2 * a + 1]);                            \
    *ws = (T)((2.0 - gt.w * gt.h) * score);                                                    \
  }                                                                                            \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                    \
    rill_tensor *x, *gb, *gl, *gs, *loss = NULL, *obj = rill_kout(ctx, 1, 0), *match = rill_kout(ctx, 2, 0); \
    yl_geom g;                                                                                 \
    RILL_TRY(yl_setup(ctx, DT, &x, &gb, &gl, &gs, &g));                                        \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &loss));                                            \
    rill_dims ld = {.n = 1, .d = {g.n}}, od = {.n = 4, .d = {g.n, g.mask_num, g.h, g.w}};      \
    rill_dims md = {.n = 2, .d = {g.n, g.b}};                                                  \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, loss, &ld));                                      \
    if (!obj || !match)                                                                        \
      return rill_kernel_error(ctx, "outputs ObjectnessMask (%s) and GTMatchMask (%s) are "    \
                               "needed", rill_kout_name(ctx, 1, 0), rill_kout_name(ctx, 2, 0)); \
    RILL_TRY(rill_kout_need(ctx, 1, 0, DT, &obj));                                             \
    RILL_TRY(rill_kout_need(ctx, 2, 0, RILL_DTYPE_INT32, &match));                             \
    RILL_TRY(rill_kout_check_dims(ctx, 1, 0, obj, &od));                                       \
    RILL_TRY(rill_kout_check_dims(ctx, 2, 0, match, &md));                                     \
    const T *xp = rill_tensor_ptr(x), *bp = rill_tensor_ptr(gb);                               \
    const T *sp = gs ? (const T *)rill_tensor_ptr(gs) : NULL;                                  \
    const int32_t *lp = rill_tensor_ptr(gl);                                                   \
    T *lo = rill_tensor_ptr(loss), *om = rill_tensor_ptr(obj);                                 \
    int32_t *mm = rill_tensor_ptr(match);                                                      \
    memset(lo, 0, (size_t)g.n * sizeof(T));                                                    \
    memset(om, 0, (size_t)(g.n * g.mask_num * g.stride) * sizeof(T));                          \
    bool smooth = ctx->attrs[RILL_YOLOV3_LOSS_ATTR_USE_LABEL_SMOOTH].v.b;                      \
    T sw = (T)(1.0 / (T)g.cls < 1.0 / 40 ? 1.0 / (T)g.cls : 1.0 / 40);                        \
    T pos = smooth ? (T)(1.0 - sw) : (T)1, neg = smooth ? sw : (T)0;                           \
    T ignore = (T)ctx->attrs[RILL_YOLOV3_LOSS_ATTR_IGNORE_THRESH].v.f;                         \
    T scale = (T)ctx->attrs[RILL_YOLOV3_LOSS_ATTR_SCALE_X_Y].v.f, bias = (T)(-0.5 * (scale - 1.)); \
    for (int64_t i = 0; i < g.n; i++) {                                                        \
      const T *gbi = bp + i * g.b * 4;                                                         \
      for (int64_t j = 0; j < g.mask_num; j++)                                                 \
        for (int64_t k = 0; k < g.h; k++)                                                      \
          for (int64_t l = 0; l < g.w; l++) {                                                  \
            int64_t bi = (i * g.mask_num + j) * g.an_stride + k * g.w + l;                     \
            int32_t a = g.mask[j];                                                             \
            NAME##_box p = {((T)l + NAME##_sig(xp[bi]) * scale + bias) / (T)g.h,               \
                            ((T)k + NAME##_sig(xp[bi + g.stride]) * scale + bias) / (T)g.h,    \
                            EXP(xp[bi + 2 * g.stride]) * (T)g.anchors[2 * a] / (T)g.input_size, \
                            EXP(xp[bi + 3 * g.stride]) * (T)g.anchors[2 * a + 1] / (T)g.input_size}; \
            T best = 0;                                                                        \
            for (int64_t t = 0; t < g.b; t++) {                                                \
              const T *q = gbi + t * 4;                                                        \
              if (q[2] < (T)1e-6 || q[3] < (T)1e-6) continue;                                  \
              T iou = NAME##_iou(p, (NAME##_box){q[0], q[1], q[2], q[3]});                     \
              if (iou > best) best = iou;                                                      \
            }                                                                                  \
            if (best > ignore) om[(i * g.mask_num + j) * g.stride + k * g.w + l] = -1;         \
          }                                                                                    \
      for (int64_t t = 0; t < g.b; t++) {                                                      \
        const T *q = gbi + t * 4;                                                              \
        if (q[2] < (T)1e-6 || q[3] < (T)1e-6) {                                                \
          mm[i * g.b + t] = -1;                                                                \
          continue;                                                                            \
        }                                                                                      \
        NAME##_box gt = {q[0], q[1], q[2], q[3]};                                              \
        int64_t gi, gj;                                                                        \
        RILL_TRY(NAME##_cell(ctx, &g, gt, &gi, &gj));                                          \
        T best = 0;                                                                            \
        int64_t best_n = 0;                                                                    \
        for (int64_t an = 0; an < g.nanchors; an++) {                                          \
          NAME##_box ab = {0, 0, (T)g.anchors[2 * an] / (T)g.input_size,                       \
                           (T)g.anchors[2 * an + 1] / (T)g.input_size};                        \
          float iou = (float)NAME##_iou(ab, (NAME##_box){0, 0, gt.w, gt.h});                   \
          if (iou > best) {                                                                    \
            best = (T)iou;                                                                     \
            best_n = an;                                                                       \
          }                                                                                    \
        }                                                                                      \
        int32_t mi = -1;                                                                       \
        for (int64_t j = 0; j < g.mask_num && mi < 0; j++)                                     \
          if (g.mask[j] == best_n) mi = (int32_t)j;                                            \
        mm[i * g.b + t] = mi;                                                                  \
        if (mi < 0) continue;                                                                  \
        T score = sp ? sp[i * g.b + t] : (T)1;                                                 \
        int64_t bi = (i * g.mask_num + mi) * g.an_stride + gj * g.w + gi;                      \
        T tg[4], ws;                                                                           \
        NAME##_targets(&g, gt, gi, gj, best_n, score, tg, &ws);                                \
        lo[i] += NAME##_sce(xp[bi], tg[0]) * ws;                                               \
        lo[i] += NAME##_sce(xp[bi + g.stride], tg[1]) * ws;                                    \
        lo[i] += FABS(tg[2] - xp[bi + 2 * g.stride]) * ws;                                     \
        lo[i] += FABS(tg[3] - xp[bi + 3 * g.stride]) * ws;                                     \
        om[(i * g.mask_num + mi) * g.stride + gj * g.w + gi] = score;                          \
        int32_t label = lp[i * g.b + t];                                                       \
        for (int64_t c = 0; c < g.cls; c++)                                                    \
          lo[i] += NAME##_sce(xp[bi + (5 + c) * g.stride], c == label ? pos : neg) * score;    \
      }                                                                                        \
    }                                                                                          \
    for (int64_t i = 0; i < g.n; i++)                                                          \
      for (int64_t j = 0; j < g.mask_num; j++)                                                 \
        for (int64_t k = 0; k < g.stride; k++) {                                               \
          T o = om[(i * g.mask_num + j) * g.stride + k];                                       \
          T v = xp[(i * g.mask_num + j) * g.an_stride + 4 * g.stride + k];                     \
          if (o > (T)1e-5)                                                                     \
            lo[i] += NAME##_sce(v, (T)1) * o;                                                  \
          else if (o > (T)-0.5)                                                                \
            lo[i] += NAME##_sce(v, (T)0);                                                      \
        }                                                                                      \
    return NULL;                                                                               \
  }                                                                                            \
  rill_status *NAME##_grad(rill_kernel_ctx *ctx) {                                             \
    rill_tensor *x, *gb, *gl, *gs, *om_t = NULL, *mm_t = NULL, *dl = NULL, *dx = rill_kout(ctx, 0, 0); \
    yl_geom g;                                                                                 \
    if (!dx) return NULL;                                                                      \
    RILL_TRY(yl_setup(ctx, DT, &x, &gb, &gl, &gs, &g));                                        \
    RILL_TRY(rill_kin_need(ctx, 4, 0, DT, &om_t));                                             \
    RILL_TRY(rill_kin_need(ctx, 5, 0, RILL_DTYPE_INT32, &mm_t));                               \
    RILL_TRY(rill_kin_need(ctx, 6, 0, DT, &dl));                                               \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &dx));                                              \
    rill_dims ld = {.n = 1, .d = {g.n}}, od = {.n = 4, .d = {g.n, g.mask_num, g.h, g.w}};      \
    rill_dims md = {.n = 2, .d = {g.n, g.b}};                                                  \
    RILL_TRY(rill_kin_check_dims(ctx, 4, om_t, &od));                                          \
    RILL_TRY(rill_kin_check_dims(ctx, 5, mm_t, &md));                                          \
    RILL_TRY(rill_kin_check_dims(ctx, 6, dl, &ld));                                            \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &x->dims));                                   \
    const T *xp = rill_tensor_ptr(x), *bp = rill_tensor_ptr(gb), *om = rill_tensor_ptr(om_t);  \
    const T *sp = gs ? (const T *)rill_tensor_ptr(gs) : NULL, *gp = rill_tensor_ptr(dl);       \
    const int32_t *lp = rill_tensor_ptr(gl), *mm = rill_tensor_ptr(mm_t);                      \
    T *dp = rill_tensor_ptr(dx);                                                               \
    memset(dp, 0, (size_t)rill_tensor_numel(dx) * sizeof(T));                                 \
    bool smooth = ctx->attrs[RILL_YOLOV3_LOSS_ATTR_USE_LABEL_SMOOTH].v.b;                      \
    T sw = (T)(1.0 / (T)g.cls < 1.0 / 40 ? 1.0 / (T)g.cls : 1.0 / 40);                        \
    T pos = smooth ? (T)(1.0 - sw) : (T)1, neg = smooth ? sw : (T)0;                           \
    for (int64_t i = 0; i < g.n; i++)                                                          \
      for (int64_t t = 0; t < g.b; t++) {                                                      \
        int32_t mi = mm[i * g.b + t];                                                          \
        if (mi < 0) continue;                                                                  \
        if (mi >= g.mask_num)                                                                  \
          return rill_kernel_error(ctx, "input GTMatchMask (%s) holds %d, beyond the %lld "    \
                                   "masked anchors", rill_kin_name(ctx, 5, 0), (int)mi,        \
                                   (long long)g.mask_num);                                     \
        const T *q = bp + (i * g.b + t) * 4;                                                   \
        NAME##_box gt = {q[0], q[1], q[2], q[3]};                                              \
        int64_t gi, gj, a = g.mask[mi];                                                        \
        RILL_TRY(NAME##_cell(ctx, &g, gt, &gi, &gj));                                          \
        T score = sp ? sp[i * g.b + t] : (T)1;                                                 \
        int64_t bi = (i * g.mask_num + mi) * g.an_stride + gj * g.w + gi;                      \
        T tg[4], ws;                                                                           \
        NAME##_targets(&g, gt, gi, gj, a, score, tg, &ws);                                     \
        dp[bi] = (T)(NAME##_sig(xp[bi]) - tg[0]) * ws * gp[i];                                 \
        dp[bi + g.stride] = (T)(NAME##_sig(xp[bi + g.stride]) - tg[1]) * ws * gp[i];           \
        dp[bi + 2 * g.stride] = (xp[bi + 2 * g.stride] > tg[2] ? (T)1 : (T)-1) * ws * gp[i];   \
        dp[bi + 3 * g.stride] = (xp[bi + 3 * g.stride] > tg[3] ? (T)1 : (T)-1) * ws * gp[i];   \
        int32_t label = lp[i * g.b + t];                                                       \
        for (int64_t c = 0; c < g.cls; c++) {                                                  \
          int64_t ci = bi + (5 + c) * g.stride;                                                \
          dp[ci] = (T)(NAME##_sig(xp[ci]) - (c == label ? pos : neg)) * score * gp[i];         \
        }                                                                                      \
      }                                                                                        \
    for (int64_t i = 0; i < g.n; i++)                                                          \
      for (int64_t j = 0; j < g.mask_num; j++)                                                 \
        for (int64_t k = 0; k < g.stride; k++) {                                               \
          T o = om[(i * g.mask_num + j) * g.stride + k];                                       \
          int64_t vi = (i * g.mask_num + j) * g.an_stride + 4 * g.stride + k;                  \
          if (o > (T)1e-5)                                                                     \
            dp[vi] = (T)(NAME##_sig(xp[vi]) - 1) * o * gp[i];                                  \
          else if (o > (T)-0.5)                                                                \
            dp[vi] = NAME##_sig(xp[vi]) * gp[i];                                               \
        }                                                                                      \
    return NULL;                                                                               \
  }

YOLOV3_LOSS(float, RILL_DTYPE_FP32, expf, logf, fabsf, rill_cpu_yolov3_loss_fp32)
YOLOV3_LOSS(double, RILL_DTYPE_FP64, exp, log, fabs, rill_cpu_yolov3_loss_fp64)
