/* generate_mask_labels CPU kernel (float32, as in Fluid). Polygons are rasterized the
 * COCO way: vertices scaled by 5 and rounded, edges walked point by point, the points
 * where the boundary crosses a column centre turned into a column-major run-length code,
 * decoded, then transposed to row-major. Every offset of the LoD inputs is checked
 * against the data before it is followed. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/kernels.h"
#include "operators/detection.h"

enum { IN_IM_INFO, IN_GT_CLASSES, IN_IS_CROWD, IN_GT_SEGMS, IN_ROIS, IN_LABELS };
enum { OUT_MASK_ROIS, OUT_HAS_MASK, OUT_MASK };

/* polygon vertices in mask cells beyond this are rejected: the rasterizer walks every
 * upsampled boundary point */
#define MASK_COORD_LIMIT 1e6

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x > y ? 1 : x < y ? -1 : 0;
}

/* Rasterizes the closed polygon of k points xy (x, y pairs in cells) into the row-major
 * h x w mask `out` (0/1). Returns false when out of memory. */
static bool poly_to_mask(const float *xy, int k, int h, int w, uint8_t *out) {
  const double scale = 5;
  bool ok = false;
  int *x = rill_malloc((size_t)(k + 1) * sizeof *x), *y = rill_malloc((size_t)(k + 1) * sizeof *y);
  int *u = NULL, *v = NULL, *bx = NULL, *by = NULL;
  uint32_t *a = NULL;
  uint8_t *col = NULL;
  if (!x || !y) goto done;
  for (int j = 0; j < k; j++) {
    x[j] = (int)(scale * xy[2 * j] + .5);
    y[j] = (int)(scale * xy[2 * j + 1] + .5);
  }
  x[k] = x[0];
  y[k] = y[0];
  size_t n = 0;
  for (int j = 0; j < k; j++) {
    int dx = abs(x[j] - x[j + 1]), dy = abs(y[j] - y[j + 1]);
    n += (size_t)(dx > dy ? dx : dy) + 1;
  }
  u = rill_malloc(n * sizeof *u);
  v = rill_malloc(n * sizeof *v);
  if (!u || !v) goto done;
  size_t m = 0;
  for (int j = 0; j < k; j++) {
    int xs = x[j], xe = x[j + 1], ys = y[j], ye = y[j + 1];
    int dx = abs(xe - xs), dy = abs(ys - ye);
    bool flip = (dx >= dy && xs > xe) || (dx < dy && ys > ye);
    if (flip) {
      int t = xs;
      xs = xe;
      xe = t;
      t = ys;
      ys = ye;
      ye = t;
    }
    if (dx == 0 && dy == 0) {
      /* a repeated vertex: the slope is 0/0 and its one point's row converts from NaN,
       * which x86 makes INT_MIN */
      u[m] = xs;
      v[m] = INT32_MIN;
      m++;
    } else if (dx >= dy) {
      double s = (double)(ye - ys) / dx;
      for (int d = 0; d <= dx; d++) {
        int t = flip ? dx - d : d;
        u[m] = t + xs;
        v[m] = (int)(ys + s * t + .5);
        m++;
      }
    } else {
      double s = (double)(xe - xs) / dy;
      for (int d = 0; d <= dy; d++) {
        int t = flip ? dy - d : d;
        v[m] = t + ys;
        u[m] = (int)(xs + s * t + .5);
        m++;
      }
    }
  }
  bx = rill_malloc((m + 1) * sizeof *bx);
  by = rill_malloc((m + 1) * sizeof *by);
  a = rill_malloc((m + 1) * sizeof *a);
  col = rill_malloc((size_t)h * (size_t)w);
  if (!bx || !by || !a || !col) goto done;
  size_t nb = 0;
  for (size_t j = 1; j < m; j++) {
    if (u[j] == u[j - 1]) continue;
    double xd = (double)(u[j] < u[j - 1] ? u[j] : u[j] - 1);
    xd = (xd + .5) / scale - .5;
    if (floor(xd) != xd || xd < 0 || xd > w - 1) continue;
    double yd = (double)(v[j] < v[j - 1] ? v[j] : v[j - 1]);
    yd = (yd + .5) / scale - .5;
    if (yd < 0) yd = 0;
    else if (yd > h) yd = h;
    bx[nb] = (int)xd;
    by[nb] = (int)ceil(yd);
    nb++;
  }
  size_t na = 0;
  for (size_t j = 0; j < nb; j++) a[na++] = (uint32_t)(bx[j] * h + by[j]);
  a[na++] = (uint32_t)(h * w);
  qsort(a, na, sizeof *a, cmp_u32);
  uint32_t prev = 0;
  for (size_t j = 0; j < na; j++) {
    uint32_t t = a[j];
    a[j] -= prev;
    prev = t;
  }
  /* merge the empty runs into their neighbours, then decode column-major */
  size_t nr = 0, j = 0;
  a[nr++] = a[j++];
  while (j < na) {
    if (a[j] > 0) {
      a[nr++] = a[j++];
    } else {
      j++;
      if (j < na) a[nr - 1] += a[j++];
    }
  }
  size_t total = (size_t)h * (size_t)w, at = 0;
  uint8_t val = 0;
  for (size_t r = 0; r < nr && at < total; r++, val = !val)
    for (uint32_t c = 0; c < a[r] && at < total; c++) col[at++] = val;
  for (; at < total; at++) col[at] = 0;
  for (int i = 0; i < h; i++)
    for (int jj = 0; jj < w; jj++) out[i * w + jj] = col[(size_t)jj * h + i];
  ok = true;
done:
  rill_free(x);
  rill_free(y);
  rill_free(u);
  rill_free(v);
  rill_free(bx);
  rill_free(by);
  rill_free(a);
  rill_free(col);
  return ok;
}

typedef struct {
  const float *pts;      /* GtSegms points */
  const uint64_t *l1;    /* gt -> polygons */
  const uint64_t *l2;    /* polygon -> points */
} segms;

/* The union of gt `g`'s polygons rasterized in `box` on an res x res grid into mask. */
static rill_status *gt_mask(const rill_kernel_ctx *ctx, const segms *sg, uint64_t g,
                            const float *box, int res, uint8_t *mask, uint8_t *tmp,
                            float *buf) {
  float w = box[2] - box[0], h = box[3] - box[1];
  if (!(w >= 1.f)) w = 1.f;
  if (!(h >= 1.f)) h = 1.f;
  size_t cells = (size_t)res * (size_t)res;
  memset(mask, 0, cells);
  for (uint64_t p = sg->l1[g]; p < sg->l1[g + 1]; p++) {
    uint64_t s = sg->l2[p], e = sg->l2[p + 1];
    int k = (int)(e - s);
    for (int j = 0; j < k; j++) {
      float px = (sg->pts[(s + j) * 2] - box[0]) * res / w;
      float py = (sg->pts[(s + j) * 2 + 1] - box[1]) * res / h;
      if (!(fabs(px) <= MASK_COORD_LIMIT && fabs(py) <= MASK_COORD_LIMIT))
        return rill_kernel_error(ctx, "input GtSegms (%s): point %llu lies %g, %g cells from "
                                 "its ROI, beyond what a mask can rasterize",
                                 rill_kin_name(ctx, IN_GT_SEGMS, 0),
                                 (unsigned long long)(s + j), (double)px, (double)py);
      buf[2 * j] = px;
      buf[2 * j + 1] = py;
    }
    uint8_t *dst = p == sg->l1[g] ? mask : tmp;
    if (!poly_to_mask(buf, k, res, res, dst)) return rill_oom();
    if (dst == tmp)
      for (size_t c = 0; c < cells; c++) mask[c] = (uint8_t)(mask[c] + tmp[c] > 0);
  }
  return NULL;
}

/* Checks that `lv` has n + 1 non-decreasing offsets ending at most at `limit`. */
static rill_status *check_level(const rill_kernel_ctx *ctx, size_t slot, const rill_lod_level *lv,
                                size_t level, uint64_t n, uint64_t limit) {
  const char *what = ctx->schema->inputs[slot].name;
  if (lv->n != n + 1)
    return rill_kernel_error(ctx, "input %s (%s): LoD level %zu has %zu offsets, expected "
                             "%llu", what, rill_kin_name(ctx, slot, 0), level, lv->n,
                             (unsigned long long)n + 1);
  for (size_t i = 0; i < lv->n; i++)
    if ((i > 0 && lv->offsets[i] < lv->offsets[i - 1]) || lv->offsets[i] > limit)
      return rill_kernel_error(ctx, "input %s (%s): LoD level %zu is not non-decreasing "
                               "within %llu", what, rill_kin_name(ctx, slot, 0), level,
                               (unsigned long long)limit);
  return NULL;
}

static rill_status *set_lod1(rill_tensor *t, const uint64_t *offs, size_t n) {
  return rill_tensor_set_lod(t, 1, (const uint64_t *const[]){offs}, &n);
}

rill_status *rill_cpu_generate_mask_labels_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *im = NULL, *cls = NULL, *crowd = NULL, *sgt = NULL, *rois = NULL, *lab = NULL;
  RILL_TRY(rill_kin_need(ctx, IN_IM_INFO, 0, RILL_DTYPE_FP32, &im));
  RILL_TRY(rill_kin_need(ctx, IN_GT_CLASSES, 0, RILL_DTYPE_INT32, &cls));
  RILL_TRY(rill_kin_need(ctx, IN_IS_CROWD, 0, RILL_DTYPE_INT32, &crowd));
  RILL_TRY(rill_kin_need(ctx, IN_GT_SEGMS, 0, RILL_DTYPE_FP32, &sgt));
  RILL_TRY(rill_kin_need(ctx, IN_ROIS, 0, RILL_DTYPE_FP32, &rois));
  RILL_TRY(rill_kin_need(ctx, IN_LABELS, 0, RILL_DTYPE_INT32, &lab));
  rill_tensor *out_rois = rill_kout(ctx, OUT_MASK_ROIS, 0), *out_has = rill_kout(ctx, OUT_HAS_MASK, 0);
  rill_tensor *out_mask = rill_kout(ctx, OUT_MASK, 0);
  if (!out_rois || !out_has || !out_mask)
    return rill_kernel_error(ctx, "outputs MaskRois (%s), RoiHasMaskInt32 (%s) and MaskInt32 "
                             "(%s) must be dense tensors", rill_kout_name(ctx, OUT_MASK_ROIS, 0),
                             rill_kout_name(ctx, OUT_HAS_MASK, 0), rill_kout_name(ctx, OUT_MASK, 0));
  int64_t nc = ctx->attrs[RILL_GENERATE_MASK_LABELS_ATTR_NUM_CLASSES].v.i;
  int64_t res = ctx->attrs[RILL_GENERATE_MASK_LABELS_ATTR_RESOLUTION].v.i;
  if (!rill_mask_labels_attrs_ok(nc, res))
    return rill_kernel_error(ctx, "attributes num_classes and resolution are out of range");
  size_t cells = (size_t)(res * res), mask_dim = (size_t)nc * cells;
  static const size_t one_level[] = {IN_GT_CLASSES, IN_IS_CROWD, IN_ROIS, IN_LABELS};
  rill_tensor *one[] = {cls, crowd, rois, lab};
  for (size_t i = 0; i < 4; i++)
    if (one[i]->lod.nlevels != 1)
      return rill_kernel_error(ctx, "input %s (%s) has %zu LoD levels, needs 1 (its rows per "
                               "image)", ctx->schema->inputs[one_level[i]].name,
                               rill_kin_name(ctx, one_level[i], 0), one[i]->lod.nlevels);
  if (sgt->lod.nlevels != 3)
    return rill_kernel_error(ctx, "input GtSegms (%s) has %zu LoD levels, needs 3 (image, gt, "
                             "polygon)", rill_kin_name(ctx, IN_GT_SEGMS, 0), sgt->lod.nlevels);
  if (sgt->dims.n != 2 || sgt->dims.d[1] != 2 || rois->dims.n != 2 || rois->dims.d[1] != 4 ||
      im->dims.n != 2 || im->dims.d[1] < 3)
    return rill_kernel_error(ctx, "inputs GtSegms (%s), Rois (%s) and ImInfo (%s) must be "
                             "[S, 2], [R, 4] and [N, 3]", rill_kin_name(ctx, IN_GT_SEGMS, 0),
                             rill_kin_name(ctx, IN_ROIS, 0), rill_kin_name(ctx, IN_IM_INFO, 0));
  uint64_t n = cls->lod.levels[0].n - 1;
  if (cls->lod.levels[0].n == 0 || (uint64_t)im->dims.d[0] < n)
    return rill_kernel_error(ctx, "input ImInfo (%s) has %lld rows for the %llu images of "
                             "GtClasses (%s)", rill_kin_name(ctx, IN_IM_INFO, 0),
                             (long long)im->dims.d[0], (unsigned long long)n,
                             rill_kin_name(ctx, IN_GT_CLASSES, 0));
  for (size_t i = 0; i < 4; i++)
    RILL_TRY(check_level(ctx, one_level[i], &one[i]->lod.levels[0], 0, n,
                         (uint64_t)one[i]->dims.d[0]));
  const rill_lod_level *s0 = &sgt->lod.levels[0], *s1 = &sgt->lod.levels[1], *s2 = &sgt->lod.levels[2];
  if (s1->n == 0 || s2->n == 0)
    return rill_kernel_error(ctx, "input GtSegms (%s) has an empty LoD level",
                             rill_kin_name(ctx, IN_GT_SEGMS, 0));
  RILL_TRY(check_level(ctx, IN_GT_SEGMS, s0, 0, n, s1->n - 1));
  RILL_TRY(check_level(ctx, IN_GT_SEGMS, s1, 1, s1->n - 1, s2->n - 1));
  RILL_TRY(check_level(ctx, IN_GT_SEGMS, s2, 2, s2->n - 1, (uint64_t)sgt->dims.d[0]));
  const uint64_t *gl = cls->lod.levels[0].offsets, *cl = crowd->lod.levels[0].offsets;
  const uint64_t *rl = rois->lod.levels[0].offsets, *ll = lab->lod.levels[0].offsets;
  const int32_t *gc = rill_tensor_ptr(cls), *ic = rill_tensor_ptr(crowd), *lp = rill_tensor_ptr(lab);
  const float *rp = rill_tensor_ptr(rois), *ip = rill_tensor_ptr(im);
  segms sg = {rill_tensor_ptr(sgt), s1->offsets, s2->offsets};
  /* first pass: the checks that need the data, and each image's row count */
  uint64_t *starts = rill_malloc((size_t)(n + 1) * sizeof *starts);
  if (!starts) return rill_oom();
  starts[0] = 0;
  size_t max_gt = 0, max_pts = 1;
  rill_status *st = NULL;
  for (uint64_t i = 0; i < n; i++) {
    uint64_t nr = rl[i + 1] - rl[i], ng = gl[i + 1] - gl[i];
    starts[i + 1] = starts[i];
    if (nr == 0) continue;
    if (ll[i + 1] - ll[i] != nr || cl[i + 1] - cl[i] != ng || s0->offsets[i + 1] - s0->offsets[i] != ng) {
      st = rill_kernel_error(ctx, "image %llu: Rois (%s) has %llu rows and LabelsInt32 (%s) "
                             "%llu; GtClasses (%s) %llu, IsCrowd (%s) %llu and GtSegms (%s) "
                             "%llu objects: they must agree", (unsigned long long)i,
                             rill_kin_name(ctx, IN_ROIS, 0), (unsigned long long)nr,
                             rill_kin_name(ctx, IN_LABELS, 0),
                             (unsigned long long)(ll[i + 1] - ll[i]),
                             rill_kin_name(ctx, IN_GT_CLASSES, 0), (unsigned long long)ng,
                             rill_kin_name(ctx, IN_IS_CROWD, 0),
                             (unsigned long long)(cl[i + 1] - cl[i]),
                             rill_kin_name(ctx, IN_GT_SEGMS, 0),
                             (unsigned long long)(s0->offsets[i + 1] - s0->offsets[i]));
      goto done;
    }
    size_t fg = 0, bg = 0, masked = 0;
    for (uint64_t r = 0; r < nr; r++) {
      int32_t c = lp[ll[i] + r];
      if (c >= nc) {
        st = rill_kernel_error(ctx, "input LabelsInt32 (%s) holds class %d, beyond num_classes "
                               "%lld", rill_kin_name(ctx, IN_LABELS, 0), (int)c, (long long)nc);
        goto done;
      }
      fg += c > 0;
      bg += c == 0;
    }
    for (uint64_t g = 0; g < ng; g++) {
      if (gc[gl[i] + g] <= 0 || ic[cl[i] + g] != 0) continue;
      masked++;
      uint64_t sg_g = s0->offsets[i] + g;
      for (uint64_t p = s1->offsets[sg_g]; p < s1->offsets[sg_g + 1]; p++) {
        uint64_t np = s2->offsets[p + 1] - s2->offsets[p];
        if (np == 0 || np > INT32_MAX / 4) {
          st = rill_kernel_error(ctx, "input GtSegms (%s): polygon %llu has %llu points",
                                 rill_kin_name(ctx, IN_GT_SEGMS, 0), (unsigned long long)p,
                                 (unsigned long long)np);
          goto done;
        }
        if (np > max_pts) max_pts = np;
      }
    }
    if (fg > 0 && masked == 0) {
      st = rill_kernel_error(ctx, "image %llu has foreground Rois (%s) but no non-crowd "
                             "foreground object in GtClasses (%s) to take a mask from",
                             (unsigned long long)i, rill_kin_name(ctx, IN_ROIS, 0),
                             rill_kin_name(ctx, IN_GT_CLASSES, 0));
      goto done;
    }
    if (fg == 0 && bg == 0) {
      st = rill_kernel_error(ctx, "image %llu: LabelsInt32 (%s) has neither a foreground nor "
                             "a background ROI", (unsigned long long)i,
                             rill_kin_name(ctx, IN_LABELS, 0));
      goto done;
    }
    if (masked > max_gt) max_gt = masked;
    starts[i + 1] = starts[i] + (fg > 0 ? fg : 1);
  }
  int64_t total = (int64_t)starts[n];
  rill_dims d = {.n = 2, .d = {total, 4}};
  if ((st = rill_tensor_alloc(out_rois, RILL_DTYPE_FP32, &d))) goto done;
  d.d[1] = 1;
  if ((st = rill_tensor_alloc(out_has, RILL_DTYPE_INT32, &d))) goto done;
  d.d[1] = (int64_t)mask_dim;
  if ((st = rill_tensor_alloc(out_mask, RILL_DTYPE_INT32, &d))) goto done;
  float *orp = rill_tensor_ptr(out_rois);
  int32_t *ohp = rill_tensor_ptr(out_has), *omp = rill_tensor_ptr(out_mask);
  for (size_t q = 0; q < (size_t)total * mask_dim; q++) omp[q] = -1;
  uint64_t *gts = rill_malloc((max_gt + 1) * sizeof *gts);
  float *boxes = rill_malloc((max_gt + 1) * 4 * sizeof *boxes);
  float *buf = rill_malloc(max_pts * 2 * sizeof *buf);
  uint8_t *mask = rill_malloc(cells * 2);
  if (!gts || !boxes || !buf || !mask) {
    st = rill_oom();
    goto free_work;
  }
  for (uint64_t i = 0; i < n; i++) {
    uint64_t nr = rl[i + 1] - rl[i], row = starts[i];
    if (nr == 0) continue;
    float scale = ip[i * (uint64_t)im->dims.d[1] + 2];
    const float *ri = rp + rl[i] * 4;
    const int32_t *li = lp + ll[i];
    bool any_fg = false;
    for (uint64_t r = 0; r < nr; r++) any_fg = any_fg || li[r] > 0;
    if (!any_fg) {
      /* no foreground: the image's first ROI, class 0, every cell ignored */
      uint64_t b = 0;
      while (li[b] != 0) b++;
      for (int c = 0; c < 4; c++) orp[row * 4 + c] = ri[c] / scale * scale;
      ohp[row] = (int32_t)b;
      continue;
    }
    size_t ng = 0;
    for (uint64_t g = 0; g < gl[i + 1] - gl[i]; g++) {
      if (gc[gl[i] + g] <= 0 || ic[cl[i] + g] != 0) continue;
      uint64_t sg_g = s0->offsets[i] + g;
      float x0 = FLT_MAX, x1 = FLT_MIN, y0 = FLT_MAX, y1 = FLT_MIN;
      for (uint64_t q = s2->offsets[s1->offsets[sg_g]]; q < s2->offsets[s1->offsets[sg_g + 1]]; q++) {
        float px = sg.pts[q * 2], py = sg.pts[q * 2 + 1];
        x0 = px < x0 ? px : x0;
        x1 = px > x1 ? px : x1;
        y0 = py < y0 ? py : y0;
        y1 = py > y1 ? py : y1;
      }
      float *bx = boxes + ng * 4;
      bx[0] = x0;
      bx[1] = y0;
      bx[2] = x1;
      bx[3] = y1;
      gts[ng++] = sg_g;
    }
    for (uint64_t r = 0; r < nr; r++) {
      if (li[r] <= 0) continue;
      float box[4];
      for (int c = 0; c < 4; c++) box[c] = ri[r * 4 + c] / scale;
      float area = (box[2] - box[0] + 1) * (box[3] - box[1] + 1), best = FLT_MIN;
      size_t id = 0;
      for (size_t g = 0; g < ng; g++) {
        const float *b = boxes + g * 4;
        float garea = (b[2] - b[0] + 1) * (b[3] - b[1] + 1);
        float iw = (box[2] < b[2] ? box[2] : b[2]) - (box[0] > b[0] ? box[0] : b[0]) + 1;
        float ih = (box[3] < b[3] ? box[3] : b[3]) - (box[1] > b[1] ? box[1] : b[1]) + 1;
        iw = iw > 0 ? iw : 0;
        ih = ih > 0 ? ih : 0;
        float inter = iw * ih, ov = inter == 0.f ? 0.f : inter / (area + garea - inter);
        if (ov > best) {
          best = ov;
          id = g;
        }
      }
      if ((st = gt_mask(ctx, &sg, gts[id], box, (int)res, mask, mask + cells, buf)))
        goto free_work;
      int32_t *dst = omp + row * mask_dim + (size_t)li[r] * cells;
      for (size_t c = 0; c < cells; c++) dst[c] = mask[c];
      for (int c = 0; c < 4; c++) orp[row * 4 + c] = box[c] * scale;
      ohp[row] = (int32_t)r;
      row++;
    }
  }
  if ((st = set_lod1(out_rois, starts, (size_t)n + 1))) goto free_work;
  if ((st = set_lod1(out_has, starts, (size_t)n + 1))) goto free_work;
  st = set_lod1(out_mask, starts, (size_t)n + 1);
free_work:
  rill_free(gts);
  rill_free(boxes);
  rill_free(buf);
  rill_free(mask);
done:
  rill_free(starts);
  return st;
}
