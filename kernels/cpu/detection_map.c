/* detection_map CPU kernel. The batch's ground-truth boxes are counted per class (those
 * marked difficult only when evaluate_difficult); each image's detections of a class are
 * matched, highest score first, against its boxes of that class: the best overlap (after
 * clipping the detection to [0, 1]) above overlap_threshold with a box not yet matched is
 * a true positive, with a matched one or too little overlap a false positive, and with a
 * difficult box, when those are not evaluated, nothing. A (score, flag) row goes to both
 * TruePos and FalsePos per detection. The states read in (HasState nonzero) come first.
 * AP per class sorts its rows by score (stably), accumulates the flags into precision and
 * recall and integrates them (integral) or takes the VOC2007 11-point maximum; MAP is the
 * mean over the classes that have ground truth. Arithmetic follows Paddle 1.8's kernel
 * step by step in the tensor's type (each double result is rounded to float for fp32,
 * which for one +, -, * or / equals the float operation), so float32 MAP agrees bit for
 * bit. Every state input is copied before any output is written: the outputs are often
 * the same variables. */
#include <math.h>
#include <string.h>

#include "kernels/cpu/nms.h"

typedef struct dm_row {
  double score;
  int32_t label, flag;
  int64_t order;
} dm_row;

typedef struct dm_rows {
  dm_row *v;
  int64_t n, cap;
} dm_rows;

static rill_status *dm_push(dm_rows *r, double score, int32_t label, int32_t flag) {
  if (r->n == r->cap) {
    int64_t cap = r->cap ? r->cap * 2 : 64;
    dm_row *v = rill_realloc(r->v, (size_t)cap * sizeof *v);
    if (!v) return rill_oom();
    r->v = v;
    r->cap = cap;
  }
  r->v[r->n] = (dm_row){score, label, flag, r->n};
  r->n++;
  return NULL;
}

/* Label ascending, then the order the rows were added. */
static int dm_by_label(const void *pa, const void *pb) {
  const dm_row *a = pa, *b = pb;
  if (a->label != b->label) return a->label < b->label ? -1 : 1;
  return a->order < b->order ? -1 : a->order > b->order;
}

/* Score (as float, like Paddle's comparator) descending, then order. */
static int dm_by_score(const void *pa, const void *pb) {
  const dm_row *a = pa, *b = pb;
  float sa = (float)a->score, sb = (float)b->score;
  if (sa != sb) return sa > sb ? -1 : 1;
  return a->order < b->order ? -1 : a->order > b->order;
}

static double dm_t(double x, bool f32) { return f32 ? (double)(float)x : x; }

typedef struct dm_input {
  const void *data;
  const uint64_t *offs;
  int64_t rows, width;
} dm_input;

static double dm_at(const dm_input *in, bool f32, int64_t r, int64_t c) {
  return f32 ? (double)((const float *)in->data)[r * in->width + c]
             : ((const double *)in->data)[r * in->width + c];
}

/* A [rows, width] input of the kernel's type with a one-level LoD of nimg + 1 offsets
 * (nimg < 0: any count) that starts at 0, never decreases and ends at its rows. */
static rill_status *dm_lod_input(rill_kernel_ctx *ctx, size_t slot, rill_dtype dt, int64_t width,
                                 int64_t width2, int64_t nimg, dm_input *out) {
  rill_tensor *t = NULL;
  RILL_TRY(rill_kin_need(ctx, slot, 0, dt, &t));
  const char *sn = ctx->schema->inputs[slot].name, *vn = rill_kin_name(ctx, slot, 0);
  char s[RILL_DIMS_STR_MAX];
  if (t->dims.n != 2 || (t->dims.d[1] != width && t->dims.d[1] != width2))
    return rill_kernel_error(ctx, "input %s (%s) has shape %s, expected [N, %lld]%s", sn, vn,
                             rill_dims_str(&t->dims, s, sizeof s), (long long)width,
                             width2 != width ? " or [N, 5]" : "");
  if (t->lod.nlevels != 1 || t->lod.levels[0].n < 1)
    return rill_kernel_error(ctx, "input %s (%s) needs a one-level LoD, it has %zu levels", sn,
                             vn, t->lod.nlevels);
  const rill_lod_level *lv = &t->lod.levels[0];
  if (nimg >= 0 && (int64_t)lv->n != nimg + 1)
    return rill_kernel_error(ctx, "input %s (%s) has a LoD of %zu offsets, expected %lld", sn, vn,
                             lv->n, (long long)nimg + 1);
  bool ok = lv->offsets[0] == 0 && lv->offsets[lv->n - 1] == (uint64_t)t->dims.d[0];
  for (size_t i = 1; ok && i < lv->n; i++) ok = lv->offsets[i] >= lv->offsets[i - 1];
  if (!ok)
    return rill_kernel_error(ctx, "input %s (%s): its LoD must rise from 0 to its %lld rows", sn,
                             vn, (long long)t->dims.d[0]);
  *out = (dm_input){rill_tensor_ptr(t), lv->offsets, t->dims.d[0], t->dims.d[1]};
  return NULL;
}

/* Appends a state's rows (LoD by class) to r. */
static rill_status *dm_read_state(rill_kernel_ctx *ctx, size_t slot, rill_dtype dt, int64_t classes,
                                  dm_rows *r, int64_t *per_class) {
  dm_input in;
  bool f32 = dt == RILL_DTYPE_FP32;
  RILL_TRY(dm_lod_input(ctx, slot, dt, 2, 2, -1, &in));
  int64_t nl = (int64_t)rill_kin(ctx, slot, 0)->lod.levels[0].n - 1;
  if (nl > classes)
    return rill_kernel_error(ctx, "input %s (%s) has rows for %lld classes, class_num is %lld",
                             ctx->schema->inputs[slot].name, rill_kin_name(ctx, slot, 0),
                             (long long)nl, (long long)classes);
  for (int64_t c = 0; c < nl; c++)
    for (uint64_t j = in.offs[c]; j < in.offs[c + 1]; j++) {
      per_class[c]++;
      RILL_TRY(dm_push(r, dm_at(&in, f32, (int64_t)j, 0), (int32_t)c,
                       (int32_t)dm_at(&in, f32, (int64_t)j, 1)));
    }
  return NULL;
}

/* Adds to *map the average precision of one class's rows (tp and fp, score-sorted, n
 * each) with num_pos ground-truth boxes, in the steps Paddle adds it. */
static void dm_ap(const dm_row *tp, const dm_row *fp, int64_t n, int64_t num_pos, bool eleven,
                  bool f32, double *prec, double *rec, double *map) {
  int64_t ts = 0, fs = 0;
  for (int64_t i = 0; i < n; i++) {
    ts += tp[i].flag;
    fs += fp[i].flag;
    prec[i] = dm_t((double)ts / (double)(ts + fs), f32);
    rec[i] = dm_t((double)ts / (double)num_pos, f32);
  }
  if (eleven) {
    double maxp[11] = {0};
    int64_t start = n - 1;
    for (int j = 10; j >= 0; j--)
      for (int64_t i = start; i >= 0; i--) {
        if (rec[i] < j / 10.) {
          start = i;
          if (j > 0) maxp[j - 1] = maxp[j];
          break;
        }
        if (maxp[j] < prec[i]) maxp[j] = prec[i];
      }
    for (int j = 10; j >= 0; j--) *map = dm_t(*map + dm_t(maxp[j] / 11, f32), f32);
    return;
  }
  float sum = 0, prev = 0; /* Paddle keeps these two in float whatever the type */
  for (int64_t i = 0; i < n; i++) {
    double d = dm_t(fabs(dm_t(rec[i] - (double)prev, f32)), f32);
    if (d > 1e-6) sum = (float)(f32 ? (double)(float)((double)sum + dm_t(prec[i] * d, true))
                                    : (double)sum + prec[i] * d);
    prev = (float)rec[i];
  }
  *map = dm_t(*map + (double)sum, f32);
}

static rill_status *dm_write_state(rill_kernel_ctx *ctx, size_t slot, rill_dtype dt, dm_rows *r,
                                   int64_t classes, uint64_t *offs) {
  rill_tensor *o = rill_kout(ctx, slot, 0);
  if (!o)
    return rill_kernel_error(ctx, "output %s (%s) is missing or not a dense tensor",
                             ctx->schema->outputs[slot].name, rill_kout_name(ctx, slot, 0));
  qsort(r->v, (size_t)r->n, sizeof *r->v, dm_by_label);
  int64_t kept = 0;
  offs[0] = 0;
  for (int64_t c = 0, i = 0; c < classes; c++) {
    while (i < r->n && r->v[i].label < c) i++;
    while (i < r->n && r->v[i].label == c) r->v[kept++] = r->v[i++];
    offs[c + 1] = (uint64_t)kept;
  }
  rill_dims d = {.n = 2, .d = {kept, 2}};
  RILL_TRY(rill_tensor_alloc(o, dt, &d));
  for (int64_t i = 0; i < kept; i++) {
    if (dt == RILL_DTYPE_FP32) {
      ((float *)rill_tensor_ptr(o))[2 * i] = (float)r->v[i].score;
      ((float *)rill_tensor_ptr(o))[2 * i + 1] = (float)r->v[i].flag;
    } else {
      ((double *)rill_tensor_ptr(o))[2 * i] = r->v[i].score;
      ((double *)rill_tensor_ptr(o))[2 * i + 1] = (double)r->v[i].flag;
    }
  }
  size_t noffs = (size_t)classes + 1;
  return rill_tensor_set_lod(o, 1, (const uint64_t *const[]){offs}, &noffs);
}

typedef struct dm_work {
  dm_rows tp, fp;
  int64_t *pos, *ntp, *nfp, *cnt;
  bool *has_pos, *visited;
  uint64_t *offs;
  double *prec, *rec;
} dm_work;

static rill_status *dm_image(rill_kernel_ctx *ctx, bool f32, const dm_input *det, const dm_input *lab,
                             int64_t img, dm_work *w) {
  bool eval_difficult = ctx->attrs[RILL_DETECTION_MAP_ATTR_EVALUATE_DIFFICULT].v.b;
  double thr = ctx->attrs[RILL_DETECTION_MAP_ATTR_OVERLAP_THRESHOLD].v.f;
  int64_t g0 = (int64_t)lab->offs[img], g1 = (int64_t)lab->offs[img + 1];
  int64_t d0 = (int64_t)det->offs[img], d1 = (int64_t)det->offs[img + 1], nd = d1 - d0;
  int64_t box_at = lab->width == 6 ? 2 : 1;
  /* this image's detections by label, then row */
  dm_row *dets = rill_malloc((size_t)(nd > 0 ? nd : 1) * sizeof *dets);
  if (!dets) return rill_oom();
  for (int64_t i = 0; i < nd; i++)
    dets[i] = (dm_row){dm_at(det, f32, d0 + i, 1), (int32_t)dm_at(det, f32, d0 + i, 0), 0, d0 + i};
  qsort(dets, (size_t)nd, sizeof *dets, dm_by_label);
  rill_status *st = NULL;
  for (int64_t a = 0, b; a < nd; a = b) {
    int32_t label = dets[a].label;
    for (b = a; b < nd && dets[b].label == label; b++) {}
    int64_t ngt = 0;
    for (int64_t g = g0; g < g1; g++)
      if ((int32_t)dm_at(lab, f32, g, 0) == label) w->visited[ngt++] = false;
    if (ngt == 0) { /* no box of this class in the image (or none at all): all false */
      for (int64_t i = a; i < b && !st; i++)
        if (!(st = dm_push(&w->tp, dets[i].score, label, 0))) st = dm_push(&w->fp, dets[i].score, label, 1);
      continue;
    }
    qsort(dets + a, (size_t)(b - a), sizeof *dets, dm_by_score);
    for (int64_t i = a; i < b && !st; i++) {
      double best = -1.0;
      int64_t best_g = -1, best_k = 0, k = 0;
      double pd[4];
      float pf[4];
      for (int c = 0; c < 4; c++) {
        double v = dm_at(det, f32, dets[i].order, 2 + c);
        pd[c] = v < 0 ? 0 : v > 1 ? 1 : v;
        pf[c] = (float)pd[c];
      }
      for (int64_t g = g0; g < g1; g++) {
        if ((int32_t)dm_at(lab, f32, g, 0) != label) continue;
        double iou;
        if (f32) {
          iou = rill_nms_iou(pf, (const float *)lab->data + g * lab->width + box_at, true);
        } else {
          iou = rill_nms_iou(pd, (const double *)lab->data + g * lab->width + box_at, true);
        }
        if (iou > best) {
          best = iou;
          best_g = g;
          best_k = k;
        }
        k++;
      }
      int32_t tp;
      if (best > thr) {
        bool difficult = lab->width == 6 && !(fabs(dm_at(lab, f32, best_g, 1)) < 1e-6);
        if (!eval_difficult && difficult) continue;
        tp = !w->visited[best_k];
        w->visited[best_k] = true;
      } else {
        tp = 0;
      }
      if (!(st = dm_push(&w->tp, dets[i].score, label, tp))) st = dm_push(&w->fp, dets[i].score, label, !tp);
    }
  }
  rill_free(dets);
  return st;
}

static rill_status *dm_run(rill_kernel_ctx *ctx, rill_dtype dt, dm_work *w) {
  bool f32 = dt == RILL_DTYPE_FP32;
  int64_t classes = ctx->attrs[RILL_DETECTION_MAP_ATTR_CLASS_NUM].v.i;
  int64_t background = ctx->attrs[RILL_DETECTION_MAP_ATTR_BACKGROUND_LABEL].v.i;
  const char *ap_type = ctx->attrs[RILL_DETECTION_MAP_ATTR_AP_TYPE].v.s;
  bool eleven = ap_type && !strcmp(ap_type, "11point");
  if (!eleven && !(ap_type && !strcmp(ap_type, "integral")))
    return rill_kernel_error(ctx, "ap_type is \"%s\"; it must be integral or 11point",
                             ap_type ? ap_type : "");
  if (classes < 1 || classes > (1 << 24))
    return rill_kernel_error(ctx, "class_num (%lld) must be at least 1", (long long)classes);
  dm_input det, lab;
  RILL_TRY(dm_lod_input(ctx, RILL_DETECTION_MAP_IN_LABEL, dt, 6, 5, -1, &lab));
  int64_t nimg = (int64_t)rill_kin(ctx, RILL_DETECTION_MAP_IN_LABEL, 0)->lod.levels[0].n - 1;
  RILL_TRY(dm_lod_input(ctx, RILL_DETECTION_MAP_IN_DETECT_RES, dt, 6, 6, nimg, &det));
  for (int s = 0; s < 2; s++) {
    const dm_input *in = s ? &det : &lab;
    size_t slot = s ? RILL_DETECTION_MAP_IN_DETECT_RES : RILL_DETECTION_MAP_IN_LABEL;
    for (int64_t r = 0; r < in->rows; r++) {
      double l = dm_at(in, f32, r, 0);
      if (!(l >= 0 && l < (double)classes))
        return rill_kernel_error(ctx, "input %s (%s): row %lld has label %g, outside [0, "
                                 "class_num %lld)", ctx->schema->inputs[slot].name,
                                 rill_kin_name(ctx, slot, 0), (long long)r, l, (long long)classes);
    }
  }
  size_t nc = (size_t)classes;
  w->pos = rill_calloc(nc, sizeof *w->pos);
  w->ntp = rill_calloc(nc, sizeof *w->ntp);
  w->nfp = rill_calloc(nc, sizeof *w->nfp);
  w->has_pos = rill_calloc(nc, sizeof *w->has_pos);
  w->offs = rill_malloc((nc + 1) * sizeof *w->offs);
  w->visited = rill_malloc((size_t)(lab.rows > 0 ? lab.rows : 1) * sizeof *w->visited);
  w->cnt = rill_malloc(nc * sizeof *w->cnt);
  if (!w->pos || !w->ntp || !w->nfp || !w->has_pos || !w->offs || !w->visited || !w->cnt)
    return rill_oom();

  rill_tensor *hs = rill_kin(ctx, RILL_DETECTION_MAP_IN_HAS_STATE, 0);
  rill_tensor *pc = rill_kin(ctx, RILL_DETECTION_MAP_IN_POS_COUNT, 0);
  bool state = false;
  if (hs) {
    if (!rill_tensor_is_set(hs) || rill_tensor_numel(hs) < 1 ||
        (hs->dtype != RILL_DTYPE_INT32 && hs->dtype != RILL_DTYPE_INT64))
      return rill_kernel_error(ctx, "input HasState (%s) must be an int32 [1] tensor with data",
                               rill_kin_name(ctx, RILL_DETECTION_MAP_IN_HAS_STATE, 0));
    state = hs->dtype == RILL_DTYPE_INT32 ? ((const int32_t *)rill_tensor_ptr(hs))[0] != 0
                                          : ((const int64_t *)rill_tensor_ptr(hs))[0] != 0;
  }
  if (state && pc) {
    RILL_TRY(rill_kin_need(ctx, RILL_DETECTION_MAP_IN_POS_COUNT, 0, RILL_DTYPE_INT32, &pc));
    if (rill_tensor_numel(pc) != classes)
      return rill_kernel_error(ctx, "input PosCount (%s) holds %lld counts for class_num %lld",
                               rill_kin_name(ctx, RILL_DETECTION_MAP_IN_POS_COUNT, 0),
                               (long long)rill_tensor_numel(pc), (long long)classes);
    for (int64_t c = 0; c < classes; c++) {
      w->pos[c] = ((const int32_t *)rill_tensor_ptr(pc))[c];
      w->has_pos[c] = true;
    }
    RILL_TRY(dm_read_state(ctx, RILL_DETECTION_MAP_IN_TRUE_POS, dt, classes, &w->tp, w->ntp));
    RILL_TRY(dm_read_state(ctx, RILL_DETECTION_MAP_IN_FALSE_POS, dt, classes, &w->fp, w->nfp));
    for (int64_t c = 0; c < classes; c++)
      if (w->ntp[c] != w->nfp[c])
        return rill_kernel_error(ctx, "inputs TruePos (%s) and FalsePos (%s) hold %lld and %lld "
                                 "rows for class %lld; they must match",
                                 rill_kin_name(ctx, RILL_DETECTION_MAP_IN_TRUE_POS, 0),
                                 rill_kin_name(ctx, RILL_DETECTION_MAP_IN_FALSE_POS, 0),
                                 (long long)w->ntp[c], (long long)w->nfp[c], (long long)c);
  }
  bool eval_difficult = ctx->attrs[RILL_DETECTION_MAP_ATTR_EVALUATE_DIFFICULT].v.b;
  for (int64_t i = 0; i < nimg; i++) {
    int64_t *cnt = w->cnt; /* this image's boxes per class */
    memset(cnt, 0, nc * sizeof *cnt);
    for (uint64_t g = lab.offs[i]; g < lab.offs[i + 1]; g++) {
      bool difficult = lab.width == 6 && !(fabs(dm_at(&lab, f32, (int64_t)g, 1)) < 1e-6);
      if (eval_difficult || !difficult) cnt[(int32_t)dm_at(&lab, f32, (int64_t)g, 0)]++;
    }
    for (size_t c = 0; c < nc; c++)
      if (cnt[c]) {
        w->pos[c] += cnt[c];
        w->has_pos[c] = true;
      }
  }
  for (int64_t i = 0; i < nimg; i++) RILL_TRY(dm_image(ctx, f32, &det, &lab, i, w));

  /* AP per class over the rows grouped by class, each group sorted by score */
  qsort(w->tp.v, (size_t)w->tp.n, sizeof *w->tp.v, dm_by_label);
  qsort(w->fp.v, (size_t)w->fp.n, sizeof *w->fp.v, dm_by_label);
  w->prec = rill_malloc((size_t)(w->tp.n > 0 ? w->tp.n : 1) * sizeof *w->prec);
  w->rec = rill_malloc((size_t)(w->tp.n > 0 ? w->tp.n : 1) * sizeof *w->rec);
  if (!w->prec || !w->rec) return rill_oom();
  double map = 0;
  int64_t count = 0;
  for (int64_t c = 0, a = 0; c < classes; c++) {
    int64_t b = a;
    while (b < w->tp.n && w->tp.v[b].label == c) b++;
    if (w->has_pos[c] && w->pos[c] != background) {
      if (b > a) {
        qsort(w->tp.v + a, (size_t)(b - a), sizeof *w->tp.v, dm_by_score);
        qsort(w->fp.v + a, (size_t)(b - a), sizeof *w->fp.v, dm_by_score);
        dm_ap(w->tp.v + a, w->fp.v + a, b - a, w->pos[c], eleven, f32, w->prec, w->rec, &map);
      }
      count++;
    }
    a = b;
  }
  if (count) map = dm_t(map / (double)count, f32);

  /* the states, class by class in the order the rows were added (dm_write_state sorts
   * them back) */
  rill_tensor *opc = rill_kout(ctx, RILL_DETECTION_MAP_OUT_ACCUM_POS_COUNT, 0);
  rill_tensor *om = rill_kout(ctx, RILL_DETECTION_MAP_OUT_MAP, 0);
  if (!opc || !om)
    return rill_kernel_error(ctx, "outputs AccumPosCount (%s) and MAP (%s) must be dense tensors",
                             rill_kout_name(ctx, RILL_DETECTION_MAP_OUT_ACCUM_POS_COUNT, 0),
                             rill_kout_name(ctx, RILL_DETECTION_MAP_OUT_MAP, 0));
  rill_dims cd = {.n = 2, .d = {classes, 1}}, one = {.n = 1, .d = {1}};
  RILL_TRY(rill_tensor_alloc(opc, RILL_DTYPE_INT32, &cd));
  rill_lod_clear(&opc->lod);
  for (int64_t c = 0; c < classes; c++)
    ((int32_t *)rill_tensor_ptr(opc))[c] = (int32_t)w->pos[c];
  RILL_TRY(dm_write_state(ctx, RILL_DETECTION_MAP_OUT_ACCUM_TRUE_POS, dt, &w->tp, classes, w->offs));
  RILL_TRY(dm_write_state(ctx, RILL_DETECTION_MAP_OUT_ACCUM_FALSE_POS, dt, &w->fp, classes, w->offs));
  RILL_TRY(rill_tensor_alloc(om, dt, &one));
  rill_lod_clear(&om->lod);
  if (f32) *(float *)rill_tensor_ptr(om) = (float)map;
  else *(double *)rill_tensor_ptr(om) = map;
  return NULL;
}

static rill_status *dm_kernel(rill_kernel_ctx *ctx, rill_dtype dt) {
  dm_work w;
  memset(&w, 0, sizeof w);
  rill_status *st = dm_run(ctx, dt, &w);
  rill_free(w.tp.v);
  rill_free(w.fp.v);
  rill_free(w.pos);
  rill_free(w.ntp);
  rill_free(w.nfp);
  rill_free(w.cnt);
  rill_free(w.has_pos);
  rill_free(w.visited);
  rill_free(w.offs);
  rill_free(w.prec);
  rill_free(w.rec);
  return st;
}

rill_status *rill_cpu_detection_map_fp32(rill_kernel_ctx *ctx) { return dm_kernel(ctx, RILL_DTYPE_FP32); }
rill_status *rill_cpu_detection_map_fp64(rill_kernel_ctx *ctx) { return dm_kernel(ctx, RILL_DTYPE_FP64); }
