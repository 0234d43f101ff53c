/* deformable_psroi_pooling and its gradient on the CPU, following Paddle 1.8.5's kernel:
 * the ROI's corners are rounded, the far ones made inclusive, all shifted by -0.5 and its
 * extents kept at least 0.1; sample (a, b) of bin (i, j) sits at start + (i, j) * bin +
 * (a, b) * bin / sample_per_part plus the bin's shift; a sample more than half a pixel off
 * the map is skipped (not counted), one within it clamped to the edge. The gradient
 * spreads Output@GRAD / count through the bilinear weights to Input and through their
 * slopes (times trans_std and the ROI's extent) to Trans. */
#include <math.h>
#include <string.h>

#include "kernels/cpu/roi.h"

#define DPS(T, DT, NAME)                                                                       \
  static rill_status *NAME##_walk(rill_kernel_ctx *ctx, bool backward) {                       \
    rill_tensor *x = NULL, *rois = NULL, *tr = NULL, *dout = NULL;                             \
    rill_tensor *res = rill_kout(ctx, 0, 0), *aux = rill_kout(ctx, 1, 0);                      \
    int32_t *ids = NULL;                                                                       \
    const rill_attr_value *a = ctx->attrs;                                                     \
    bool no_trans = a[RILL_DEFORMABLE_PSROI_POOLING_ATTR_NO_TRANS].v.b;                        \
    if (backward && !rill_kin(ctx, 2, 0)) aux = NULL;                            \
    if (backward && !res && !aux) return NULL;                                                 \
    if (res || !backward) RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &res));                       \
    if (aux) RILL_TRY(rill_kout_need(ctx, 1, 0, DT, &aux));                                    \
    if (backward) RILL_TRY(rill_kin_need(ctx, 4, 0, DT, &dout));                               \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                                \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &rois));                                             \
    if (!no_trans) RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &tr));                                \
    if (x->dims.n != 4 || rois->dims.n != 2 || rois->dims.d[1] != 4 || (tr && tr->dims.n != 4)) \
      return rill_kernel_error(ctx, "inputs Input (%s), ROIs (%s) and Trans (%s) must be "     \
                               "[N, C, H, W], [R, 4] and 4-D", rill_kin_name(ctx, 0, 0),       \
                               rill_kin_name(ctx, 1, 0), rill_kin_name(ctx, 2, 0));            \
    int64_t R = rois->dims.d[0], C = x->dims.d[1], H = x->dims.d[2], W = x->dims.d[3];         \
    int64_t od = a[RILL_DEFORMABLE_PSROI_POOLING_ATTR_OUTPUT_DIM].v.i;                         \
    int64_t ph = a[RILL_DEFORMABLE_PSROI_POOLING_ATTR_POOLED_HEIGHT].v.i;                      \
    int64_t pw = a[RILL_DEFORMABLE_PSROI_POOLING_ATTR_POOLED_WIDTH].v.i;                       \
    int64_t gh = a[RILL_DEFORMABLE_PSROI_POOLING_ATTR_GROUP_SIZE].list.ints[0];                \
    int64_t gw = a[RILL_DEFORMABLE_PSROI_POOLING_ATTR_GROUP_SIZE].list.ints[1];                \
    int64_t pth = a[RILL_DEFORMABLE_PSROI_POOLING_ATTR_PART_SIZE].list.ints[0];                \
    int64_t ptw = a[RILL_DEFORMABLE_PSROI_POOLING_ATTR_PART_SIZE].list.ints[1];                \
    int64_t sp = a[RILL_DEFORMABLE_PSROI_POOLING_ATTR_SAMPLE_PER_PART].v.i;                    \
    T scale = (T)a[RILL_DEFORMABLE_PSROI_POOLING_ATTR_SPATIAL_SCALE].v.f;                      \
    T tstd = (T)a[RILL_DEFORMABLE_PSROI_POOLING_ATTR_TRANS_STD].v.f;                           \
    int64_t classes = tr ? tr->dims.d[1] / 2 : 1, per_class = classes > 0 ? od / classes : 0;  \
    rill_dims want = {.n = 4, .d = {R, od, ph, pw}};                                           \
    rill_status *st = NULL;                                                                    \
    if (C < od * gh * gw)                                                                      \
      st = rill_kernel_error(ctx, "input Input (%s) has %lld channels, output_dim * "          \
                             "group_size reads %lld", rill_kin_name(ctx, 0, 0), (long long)C,  \
                             (long long)(od * gh * gw));                                       \
    else if (tr && (per_class < 1 || per_class * classes != od ||                              \
                    rill_tensor_numel(tr) < R * classes * 2 * pth * ptw))                      \
      st = rill_kernel_error(ctx, "input Trans (%s) must hold [%lld, 2 * classes, %lld, %lld] " \
                             "shifts, output_dim (%lld) a multiple of classes",                \
                             rill_kin_name(ctx, 2, 0), (long long)R, (long long)pth,           \
                             (long long)ptw, (long long)od);                                   \
    else if (backward) {                                                                       \
      st = rill_kin_check_dims(ctx, 4, dout, &want);                                           \
      if (!st && res) st = rill_kout_check_dims(ctx, 0, 0, res, &x->dims);                     \
      if (!st && aux) st = rill_kout_check_dims(ctx, 1, 0, aux, &rill_kin(ctx, 2, 0)->dims);                    \
    } else {                                                                                   \
      st = rill_kout_check_dims(ctx, 0, 0, res, &want);                                        \
      if (!st && aux) st = rill_kout_check_dims(ctx, 1, 0, aux, &want);                        \
    }                                                                                          \
    if (!st) st = rill_roi_image_ids(ctx, 1, RILL_ROI_NO_SLOT, false, x->dims.d[0], &ids);     \
    if (st) return st;                                                                         \
    const T *xp = rill_tensor_ptr(x), *rp = rill_tensor_ptr(rois);                             \
    const T *tp = tr ? (const T *)rill_tensor_ptr(tr) : NULL;                                  \
    const T *gp = backward ? (const T *)rill_tensor_ptr(dout) : NULL;                          \
    T *op = res ? (T *)rill_tensor_ptr(res) : NULL, *ap = aux ? (T *)rill_tensor_ptr(aux) : NULL; \
    if (backward && op) memset(op, 0, (size_t)rill_tensor_numel(res) * sizeof(T));            \
    if (backward && ap) memset(ap, 0, (size_t)rill_tensor_numel(aux) * sizeof(T));            \
    for (int64_t n = 0; n < R; n++) {                                                          \
      const T *r = rp + n * 4;                                                                 \
      T sw = (T)round(r[0]) * scale - (T)0.5, sh = (T)round(r[1]) * scale - (T)0.5;            \
      T ew = (T)(round(r[2]) + 1) * scale - (T)0.5, eh = (T)(round(r[3]) + 1) * scale - (T)0.5; \
      T rw = ew - sw > (T)0.1 ? ew - sw : (T)0.1, rh = eh - sh > (T)0.1 ? eh - sh : (T)0.1;    \
      T bw = rw / (T)pw, bh = rh / (T)ph, sbw = bw / (T)sp, sbh = bh / (T)sp;                  \
      for (int64_t c = 0; c < od; c++)                                                         \
        for (int64_t i = 0; i < ph; i++)                                                       \
          for (int64_t j = 0; j < pw; j++) {                                                   \
            int64_t k = ((n * od + c) * ph + i) * pw + j;                                      \
            int64_t pi = (int64_t)floor((T)i / (T)ph * (T)pth);                                \
            int64_t pj = (int64_t)floor((T)j / (T)pw * (T)ptw);                                \
            int64_t tx = tp ? ((n * classes + c / per_class) * 2 * pth + pi) * ptw + pj : 0;   \
            int64_t ty = tx + pth * ptw;                                                       \
            T dx = tp ? tp[tx] * tstd : (T)0, dy = tp ? tp[ty] * tstd : (T)0;                  \
            T ws = (T)j * bw + sw + dx * rw, hs = (T)i * bh + sh + dy * rh;                    \
            int64_t gj = (int64_t)floor((T)j * (T)gw / (T)pw), gi = (int64_t)floor((T)i * (T)gh / (T)ph); \
            gj = gj < 0 ? 0 : gj > gw - 1 ? gw - 1 : gj;                                       \
            gi = gi < 0 ? 0 : gi > gh - 1 ? gh - 1 : gi;                                       \
            int64_t plane = ((int64_t)ids[n] * C + (c * gh + gi) * gw + gj) * H * W;           \
            int64_t cnt = 0;                                                                   \
            for (int pass = backward ? 0 : 1; pass < 2; pass++) {                              \
              T acc = 0, g = pass && backward && cnt ? gp[k] / (T)cnt : (T)0;                  \
              if (pass && backward && !cnt) break;                                             \
              for (int64_t sa = 0; sa < sp; sa++)                                              \
                for (int64_t sb = 0; sb < sp; sb++) {                                          \
                  T w = ws + (T)sb * sbw, h = hs + (T)sa * sbh;                                \
                  if (w < (T)-0.5 || w > (T)W - (T)0.5 || h < (T)-0.5 || h > (T)H - (T)0.5)    \
                    continue;                                                                  \
                  if (!pass) {                                                                 \
                    cnt++;                                                                     \
                    continue;                                                                  \
                  }                                                                            \
                  w = w < 0 ? (T)0 : w > (T)(W - 1) ? (T)(W - 1) : w;                          \
                  h = h < 0 ? (T)0 : h > (T)(H - 1) ? (T)(H - 1) : h;                          \
                  int64_t x0 = (int64_t)floor(w), x1 = (int64_t)ceil(w);                       \
                  int64_t y0 = (int64_t)floor(h), y1 = (int64_t)ceil(h);                       \
                  T fx = w - (T)x0, fy = h - (T)y0;                                            \
                  const T *src = xp + plane;                                                   \
                  T u00 = src[y0 * W + x0], u01 = src[y1 * W + x0];                            \
                  T u10 = src[y0 * W + x1], u11 = src[y1 * W + x1];                            \
                  if (!backward) {                                                             \
                    acc += (1 - fx) * (1 - fy) * u00 + (1 - fx) * fy * u01 +                   \
                           fx * (1 - fy) * u10 + fx * fy * u11;                                \
                    cnt++;                                                                     \
                    continue;                                                                  \
                  }                                                                            \
                  if (op) {                                                                    \
                    op[plane + y0 * W + x0] += (1 - fx) * (1 - fy) * g;                        \
                    op[plane + y1 * W + x0] += (1 - fx) * fy * g;                              \
                    op[plane + y0 * W + x1] += fx * (1 - fy) * g;                              \
                    op[plane + y1 * W + x1] += fx * fy * g;                                    \
                  }                                                                            \
                  if (ap && tp) {                                                              \
                    ap[tx] += (u11 * fy + u10 * (1 - fy) - u01 * fy - u00 * (1 - fy)) * tstd * g * rw; \
                    ap[ty] += (u11 * fx + u01 * (1 - fx) - u10 * fx - u00 * (1 - fx)) * tstd * g * rh; \
                  }                                                                            \
                }                                                                              \
              if (!backward) {                                                                 \
                op[k] = cnt ? acc / (T)cnt : (T)0;                                             \
                if (ap) ap[k] = (T)cnt;                                                        \
              }                                                                                \
            }                                                                                  \
          }                                                                                    \
    }                                                                                          \
    rill_free(ids);                                                                            \
    return NULL;                                                                               \
  }                                                                                            \
  rill_status *NAME(rill_kernel_ctx *ctx) { return NAME##_walk(ctx, false); }                  \
  rill_status *NAME##_grad(rill_kernel_ctx *ctx) { return NAME##_walk(ctx, true); }

DPS(float, RILL_DTYPE_FP32, rill_cpu_deformable_psroi_pooling_fp32)
DPS(double, RILL_DTYPE_FP64, rill_cpu_deformable_psroi_pooling_fp64)
