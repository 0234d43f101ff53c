/* multiclass_nms, multiclass_nms2 and multiclass_nms3 against a naive reference
 * (selection by repeated maximum, earliest first among equals), on [N, C, M] and
 * [M, C] layouts with LoD and RoisNum; hand-computed cases for the exact order of the
 * kept boxes; the empty results of each version; the errors. */
#include "op_test.h"

typedef struct nms_attrs {
  int bg, nms_top_k, keep_top_k;
  float score_t, nms_t, eta;
  bool normalized;
} nms_attrs;

typedef struct det {
  int label, idx; /* idx: box row within the image */
  float score;
} det;

static double area(const float *b, bool n) {
  if (b[2] < b[0] || b[3] < b[1]) return 0;
  return n ? (double)(b[2] - b[0]) * (b[3] - b[1]) : (double)(b[2] - b[0] + 1) * (b[3] - b[1] + 1);
}
static double iou(const float *a, const float *b, bool n) {
  if (b[0] > a[2] || b[2] < a[0] || b[1] > a[3] || b[3] < a[1]) return 0;
  double w = fmin(a[2], b[2]) - fmax(a[0], b[0]) + (n ? 0 : 1);
  double h = fmin(a[3], b[3]) - fmax(a[1], b[1]) + (n ? 0 : 1);
  return w * h / (area(a, n) + area(b, n) - w * h);
}

/* One image: score(c, j) and box(c, j) given by strides; returns the kept detections in
 * output order. per_class: [M, C] layout (kept indices of a class in box order). */
static int ref_image(const nms_attrs *at, const float *s, int64_t scs, int64_t sjs, const float *b,
                     int64_t bcs, int64_t bjs, int m, int classes, bool per_class, det *out) {
  det *all = malloc((size_t)(m * classes + 1) * sizeof *all);
  int nall = 0;
  int *used = calloc((size_t)m + 1, sizeof *used);
  for (int c = 0; c < classes; c++) {
    if (c == at->bg) continue;
    memset(used, 0, (size_t)m * sizeof *used);
    int kept[512], nk = 0, seen = 0;
    float thr = at->nms_t;
    for (;;) { /* next best candidate above the threshold */
      int best = -1;
      for (int j = 0; j < m; j++)
        if (!used[j] && s[c * scs + j * sjs] > at->score_t &&
            (best < 0 || s[c * scs + j * sjs] > s[c * scs + best * sjs]))
          best = j;
      if (best < 0 || (at->nms_top_k > -1 && seen >= at->nms_top_k)) break;
      used[best] = 1;
      seen++;
      bool keep = true;
      for (int q = 0; q < nk && keep; q++) keep = iou(b + c * bcs + best * bjs, b + c * bcs + kept[q] * bjs, at->normalized) <= thr;
      if (!keep) continue;
      kept[nk++] = best;
      if (at->eta < 1 && thr > 0.5f) thr *= at->eta;
    }
    if (per_class) /* box order */
      for (int i = 1; i < nk; i++)
        for (int q = i; q > 0 && kept[q - 1] > kept[q]; q--) {
          int t = kept[q]; kept[q] = kept[q - 1]; kept[q - 1] = t;
        }
    for (int q = 0; q < nk; q++) all[nall++] = (det){c, kept[q], s[c * scs + kept[q] * sjs]};
  }
  int n = nall;
  if (at->keep_top_k > -1 && nall > at->keep_top_k) {
    /* pick keep_top_k by repeated maximum (earliest in `all` among equals) */
    det *pick = malloc((size_t)nall * sizeof *pick);
    memset(used, 0, (size_t)m * sizeof *used);
    int *taken = calloc((size_t)nall, sizeof *taken);
    for (int k = 0; k < at->keep_top_k; k++) {
      int best = -1;
      for (int i = 0; i < nall; i++)
        if (!taken[i] && (best < 0 || all[i].score > all[best].score)) best = i;
      taken[best] = 1;
      pick[k] = all[best];
    }
    n = 0; /* regroup by class in picked order */
    for (int c = 0; c < classes; c++) {
      int from = n;
      for (int k = 0; k < at->keep_top_k; k++)
        if (pick[k].label == c) all[n++] = pick[k];
      if (per_class)
        for (int i = from + 1; i < n; i++)
          for (int q = i; q > from && all[q - 1].idx > all[q].idx; q--) {
            det t = all[q]; all[q] = all[q - 1]; all[q - 1] = t;
          }
    }
    free(pick);
    free(taken);
  }
  memcpy(out, all, (size_t)n * sizeof *out);
  free(all);
  free(used);
  return n;
}

static void set_attrs(op_harness *h, const nms_attrs *a) {
  OK(op_harness_attr_int(h, "background_label", a->bg));
  OK(op_harness_attr_int(h, "nms_top_k", a->nms_top_k));
  OK(op_harness_attr_int(h, "keep_top_k", a->keep_top_k));
  OK(op_harness_attr_float(h, "score_threshold", a->score_t));
  OK(op_harness_attr_float(h, "nms_threshold", a->nms_t));
  OK(op_harness_attr_float(h, "nms_eta", a->eta));
  OK(op_harness_attr_bool(h, "normalized", a->normalized));
}

static void fill_boxes(float *b, int64_t n, double seed, bool normalized) {
  double k = normalized ? 1.0 : 100.0;
  for (int64_t i = 0; i < n; i++) {
    double x = fabs(sin(seed + (double)i * 1.7)) * 0.7 * k, y = fabs(cos(seed + (double)i * 0.9)) * 0.7 * k;
    b[i * 4] = (float)x;
    b[i * 4 + 1] = (float)y;
    b[i * 4 + 2] = (float)(x + (0.1 + fabs(sin((double)i))) * 0.3 * k);
    b[i * 4 + 3] = (float)(y + (0.1 + fabs(cos((double)i * 2))) * 0.3 * k);
  }
}

/* Out rows must equal the reference detections (label, score, box). */
static void expect_rows(const float *o, const det *d, int n, const float *const *box_of) {
  for (int r = 0; r < n; r++) {
    cr_assert_eq((int)o[r * 6], d[r].label, "row %d label %g, expected %d", r, o[r * 6], d[r].label);
    cr_assert_float_eq(o[r * 6 + 1], d[r].score, 0, "row %d score", r);
    for (int k = 0; k < 4; k++) cr_assert_float_eq(o[r * 6 + 2 + k], box_of[r][k], 0, "row %d box", r);
  }
}

static void check_batched(const char *op, int64_t n, int64_t c, int64_t m, const nms_attrs *a) {
  float *s = malloc((size_t)(n * c * m) * sizeof *s), *b = malloc((size_t)(n * m * 4) * sizeof *b);
  for (int64_t i = 0; i < n * c * m; i++) s[i] = (float)fabs(sin((double)i * 12.9898) * 0.9);
  fill_boxes(b, n * m, 0.4, a->normalized);
  det *want = malloc((size_t)(n * c * m + 1) * sizeof *want);
  const float **box_of = malloc((size_t)(n * c * m + 1) * sizeof *box_of);
  int *idx = malloc((size_t)(n * c * m + 1) * sizeof *idx);
  uint64_t starts[16] = {0};
  int total = 0;
  for (int64_t i = 0; i < n; i++) {
    int k = ref_image(a, s + i * c * m, m, 1, b + i * m * 4, 0, 4, (int)m, (int)c, false, want + total);
    for (int q = 0; q < k; q++) {
      box_of[total + q] = b + (i * m + want[total + q].idx) * 4;
      idx[total + q] = (int)(i * m) + want[total + q].idx;
    }
    total += k;
    starts[i + 1] = (uint64_t)total;
  }
  cr_assert_gt(total, 0, "the case should keep something");
  op_harness *h = harness(op);
  bind_input(h, "BBoxes", "boxes", RILL_DTYPE_FP32, DIMS(n, m, 4), b);
  bind_input(h, "Scores", "scores", RILL_DTYPE_FP32, DIMS(n, c, m), s);
  OK(op_harness_output(h, "Out", "dets"));
  bool has_index = strcmp(op, "multiclass_nms") != 0;
  if (has_index) OK(op_harness_output(h, "Index", "index"));
  set_attrs(h, a);
  OK(op_harness_run(h));
  rill_tensor *out = op_harness_tensor(h, "dets");
  expect_dims(out, DIMS(total, 6));
  expect_rows(rill_tensor_ptr(out), want, total, box_of);
  cr_assert_eq(out->lod.nlevels, 1);
  cr_assert_eq(out->lod.levels[0].n, (size_t)n + 1);
  for (int64_t i = 0; i <= n; i++) cr_assert_eq(out->lod.levels[0].offsets[i], starts[i]);
  if (has_index) {
    const int32_t *ip = rill_tensor_ptr(op_harness_tensor(h, "index"));
    expect_dims(op_harness_tensor(h, "index"), DIMS(total, 1));
    for (int r = 0; r < total; r++) cr_assert_eq(ip[r], idx[r], "Index[%d]", r);
  }
  op_harness_destroy(h);
  free(s); free(b); free(want); free(box_of); free(idx);
}

Test(multiclass_nms, batched_layout_matches_reference) {
  check_batched("multiclass_nms", 1, 3, 20, &(nms_attrs){0, 400, 200, 0.01f, 0.45f, 1.0f, true});
  check_batched("multiclass_nms2", 2, 4, 30, &(nms_attrs){0, -1, -1, 0.2f, 0.3f, 1.0f, true});
  check_batched("multiclass_nms", 3, 3, 25, &(nms_attrs){-1, 5, 7, 0.1f, 0.5f, 1.0f, false});
  check_batched("multiclass_nms2", 2, 5, 40, &(nms_attrs){1, 10, 12, 0.05f, 0.7f, 0.9f, true});
  check_batched("multiclass_nms3", 1, 2, 60, &(nms_attrs){0, -1, 3, 0.0f, 0.2f, 1.0f, true});
}

/* [M, C] scores with [M, C, 4] boxes; images given by LoD (multiclass_nms2) or by
 * RoisNum (multiclass_nms3, with an empty image in the middle). */
static void check_per_class(const char *op, bool rois, const uint64_t *lod, size_t nl, int64_t c,
                            const nms_attrs *a) {
  int64_t rows = (int64_t)lod[nl - 1], nimg = (int64_t)nl - 1;
  float *s = malloc((size_t)(rows * c + 1) * sizeof *s), *b = malloc((size_t)(rows * c * 4 + 1) * sizeof *b);
  for (int64_t i = 0; i < rows * c; i++) s[i] = (float)fabs(cos((double)i * 7.31) * 0.95);
  fill_boxes(b, rows * c, 1.3, a->normalized);
  det *want = malloc((size_t)(rows * c + 1) * sizeof *want);
  const float **box_of = malloc((size_t)(rows * c + 1) * sizeof *box_of);
  int *idx = malloc((size_t)(rows * c + 1) * sizeof *idx);
  int counts[16], total = 0;
  for (int64_t i = 0; i < nimg; i++) {
    int64_t r0 = (int64_t)lod[i], m = (int64_t)(lod[i + 1] - lod[i]);
    int k = m ? ref_image(a, s + r0 * c, 1, c, b + r0 * c * 4, 4, c * 4, (int)m, (int)c, true, want + total) : 0;
    for (int q = 0; q < k; q++) {
      det *d = &want[total + q];
      box_of[total + q] = b + ((r0 + d->idx) * c + d->label) * 4;
      idx[total + q] = (int)((r0 + d->idx) * c + d->label);
    }
    counts[i] = k;
    total += k;
  }
  cr_assert_gt(total, 0);
  op_harness *h = harness(op);
  rill_tensor *bt = op_harness_make(RILL_DTYPE_FP32, DIMS(rows, c, 4), b);
  if (!rois) OK(rill_tensor_set_lod(bt, 1, (const uint64_t *const[]){lod}, &nl));
  OK(op_harness_input(h, "BBoxes", "rois", bt));
  op_harness_free_tensor(bt);
  bind_input(h, "Scores", "cls_prob", RILL_DTYPE_FP32, DIMS(rows, c), s);
  if (rois) {
    int32_t rn[16];
    for (int64_t i = 0; i < nimg; i++) rn[i] = (int32_t)(lod[i + 1] - lod[i]);
    bind_input(h, "RoisNum", "rois_num", RILL_DTYPE_INT32, DIMS(nimg), rn);
  }
  OK(op_harness_output(h, "Out", "dets"));
  OK(op_harness_output(h, "Index", "index"));
  if (!strcmp(op, "multiclass_nms3")) OK(op_harness_output(h, "NmsRoisNum", "nms_num"));
  set_attrs(h, a);
  OK(op_harness_run(h));
  rill_tensor *out = op_harness_tensor(h, "dets");
  expect_dims(out, DIMS(total, 6));
  expect_rows(rill_tensor_ptr(out), want, total, box_of);
  const int32_t *ip = rill_tensor_ptr(op_harness_tensor(h, "index"));
  for (int r = 0; r < total; r++) cr_assert_eq(ip[r], idx[r], "Index[%d]", r);
  if (!strcmp(op, "multiclass_nms3")) {
    const int32_t *np = rill_tensor_ptr(op_harness_tensor(h, "nms_num"));
    expect_dims(op_harness_tensor(h, "nms_num"), DIMS(nimg));
    for (int64_t i = 0; i < nimg; i++) cr_assert_eq(np[i], counts[i], "NmsRoisNum[%lld]", (long long)i);
  }
  op_harness_destroy(h);
  free(s); free(b); free(want); free(box_of); free(idx);
}

Test(multiclass_nms, per_class_layout_matches_reference) {
  const uint64_t l1[] = {0, 12, 30}, l2[] = {0, 9, 9, 25};
  check_per_class("multiclass_nms2", false, l1, 3, 3, &(nms_attrs){0, -1, -1, 0.3f, 0.5f, 1.0f, true});
  check_per_class("multiclass_nms2", false, l2, 4, 4, &(nms_attrs){-1, 6, 8, 0.2f, 0.4f, 1.0f, false});
  check_per_class("multiclass_nms3", true, l2, 4, 3, &(nms_attrs){0, -1, 5, 0.1f, 0.3f, 0.8f, true});
  check_per_class("multiclass_nms3", false, l1, 3, 1, &(nms_attrs){-1, 4, -1, 0.1f, 0.3f, 1.0f, true});
}

/* Four boxes, classes 0 (background), 1 and 2. Class 1: box 0 (0.9) is kept, box 1
 * (0.8) overlaps it and goes, box 2 (0.7) stays. Class 2: boxes 2 and 3 tie at 0.6 (the
 * earlier box first), then box 1 (0.2): rows within a class come in the order NMS kept
 * them, by score, not by box. keep_top_k 3 keeps 0.9, 0.7 and the first 0.6 (box 2). */
Test(multiclass_nms, hand_computed_order) {
  float boxes[] = {0, 0, 10, 10, 1, 1, 11, 11, 20, 20, 30, 30, 40, 40, 50, 50};
  float scores[] = {0.9f, 0.9f, 0.9f, 0.9f,  /* background */
                    0.9f, 0.8f, 0.7f, 0.1f,  /* class 1 */
                    0.05f, 0.2f, 0.6f, 0.6f}; /* class 2 */
  op_harness *h = harness("multiclass_nms3");
  bind_input(h, "BBoxes", "boxes", RILL_DTYPE_FP32, DIMS(1, 4, 4), boxes);
  bind_input(h, "Scores", "scores", RILL_DTYPE_FP32, DIMS(1, 3, 4), scores);
  OK(op_harness_output(h, "Out", "dets"));
  OK(op_harness_output(h, "Index", "index"));
  OK(op_harness_output(h, "NmsRoisNum", "num"));
  set_attrs(h, &(nms_attrs){0, -1, -1, 0.15f, 0.5f, 1.0f, false});
  OK(op_harness_run(h));
  float want[] = {1, 0.9f, 0, 0, 10, 10, 1, 0.7f, 20, 20, 30, 30,
                  2, 0.6f, 20, 20, 30, 30, 2, 0.6f, 40, 40, 50, 50, 2, 0.2f, 1, 1, 11, 11};
  expect_dims(op_harness_tensor(h, "dets"), DIMS(5, 6));
  expect_close_f32(rill_tensor_ptr(op_harness_tensor(h, "dets")), want, 30, 0);
  const int32_t *ip = rill_tensor_ptr(op_harness_tensor(h, "index"));
  cr_assert(ip[0] == 0 && ip[1] == 2 && ip[2] == 2 && ip[3] == 3 && ip[4] == 1);
  cr_assert_eq(*(int32_t *)rill_tensor_ptr(op_harness_tensor(h, "num")), 5);
  /* keep_top_k 3: 0.9 (c1 b0), 0.7 (c1 b2), then the first 0.6 of class 2 (box 2) */
  set_attrs(h, &(nms_attrs){0, -1, 3, 0.15f, 0.5f, 1.0f, false});
  OK(op_harness_run(h));
  float want3[] = {1, 0.9f, 0, 0, 10, 10, 1, 0.7f, 20, 20, 30, 30, 2, 0.6f, 20, 20, 30, 30};
  expect_dims(op_harness_tensor(h, "dets"), DIMS(3, 6));
  expect_close_f32(rill_tensor_ptr(op_harness_tensor(h, "dets")), want3, 18, 0);
  /* nms_top_k 1: only the best candidate of each class enters NMS */
  set_attrs(h, &(nms_attrs){0, 1, -1, 0.15f, 0.5f, 1.0f, false});
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "dets"), DIMS(2, 6));
  /* background_label -1: class 0 takes part too (its 4 boxes: 0 and 1 overlap) */
  set_attrs(h, &(nms_attrs){-1, -1, -1, 0.15f, 0.5f, 1.0f, false});
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "dets"), DIMS(8, 6));
  op_harness_destroy(h);
}

/* nms_eta 0.5 with threshold 0.9: after the first kept box the threshold becomes 0.45,
 * so box 1 (IoU 0.6 with box 0) is checked against 0.45 and dropped; without eta it is
 * checked against 0.9 and stays. */
Test(multiclass_nms, adaptive_threshold) {
  float boxes[] = {0, 0, 1, 1, 0, 0, 1, 0.6f};
  float scores[] = {0.9f, 0.8f};
  for (int with_eta = 0; with_eta < 2; with_eta++) {
    op_harness *h = harness("multiclass_nms");
    bind_input(h, "BBoxes", "boxes", RILL_DTYPE_FP32, DIMS(1, 2, 4), boxes);
    bind_input(h, "Scores", "scores", RILL_DTYPE_FP32, DIMS(1, 1, 2), scores);
    OK(op_harness_output(h, "Out", "dets"));
    set_attrs(h, &(nms_attrs){-1, -1, -1, 0.0f, 0.9f, with_eta ? 0.5f : 1.0f, true});
    OK(op_harness_run(h));
    expect_dims(op_harness_tensor(h, "dets"), DIMS(with_eta ? 1 : 2, 6));
    op_harness_destroy(h);
  }
}

/* Nothing above the threshold: multiclass_nms writes Paddle's [[-1]] with LoD {0, 1};
 * the versions with Index return 0 rows, LoD all zeros and zero counts. */
Test(multiclass_nms, empty_results_per_version) {
  float boxes[8] = {0, 0, 1, 1, 0, 0, 2, 2}, scores[4] = {0.1f, 0.1f, 0.1f, 0.1f};
  op_harness *h = harness("multiclass_nms");
  bind_input(h, "BBoxes", "boxes", RILL_DTYPE_FP32, DIMS(1, 2, 4), boxes);
  bind_input(h, "Scores", "scores", RILL_DTYPE_FP32, DIMS(1, 2, 2), scores);
  OK(op_harness_output(h, "Out", "dets"));
  set_attrs(h, &(nms_attrs){0, -1, -1, 0.5f, 0.3f, 1.0f, true});
  OK(op_harness_run(h));
  rill_tensor *o = op_harness_tensor(h, "dets");
  expect_dims(o, DIMS(1, 1));
  cr_assert_float_eq(*(float *)rill_tensor_ptr(o), -1.0f, 0);
  cr_assert(o->lod.nlevels == 1 && o->lod.levels[0].n == 2 && o->lod.levels[0].offsets[1] == 1);
  op_harness_destroy(h);

  h = harness("multiclass_nms3");
  bind_input(h, "BBoxes", "boxes", RILL_DTYPE_FP32, DIMS(1, 2, 4), boxes);
  bind_input(h, "Scores", "scores", RILL_DTYPE_FP32, DIMS(1, 2, 2), scores);
  OK(op_harness_output(h, "Out", "dets"));
  OK(op_harness_output(h, "Index", "index"));
  OK(op_harness_output(h, "NmsRoisNum", "num"));
  set_attrs(h, &(nms_attrs){0, -1, -1, 0.5f, 0.3f, 1.0f, true});
  OK(op_harness_run(h));
  o = op_harness_tensor(h, "dets");
  expect_dims(o, DIMS(0, 6));
  expect_dims(op_harness_tensor(h, "index"), DIMS(0, 1));
  cr_assert(o->lod.nlevels == 1 && o->lod.levels[0].n == 2 && o->lod.levels[0].offsets[1] == 0);
  cr_assert_eq(*(int32_t *)rill_tensor_ptr(op_harness_tensor(h, "num")), 0);
  op_harness_destroy(h);
}

Test(multiclass_nms, float64) {
  double boxes[] = {0, 0, 1, 1, 0.1, 0.1, 1, 1, 2, 2, 3, 3};
  double scores[] = {0.3, 0.9, 0.5};
  rill_tensor *bt = op_harness_make(RILL_DTYPE_FP64, DIMS(1, 3, 4), boxes);
  rill_tensor *st = op_harness_make(RILL_DTYPE_FP64, DIMS(1, 1, 3), scores);
  op_harness *h = harness("multiclass_nms");
  OK(op_harness_input(h, "BBoxes", "b", bt));
  OK(op_harness_input(h, "Scores", "s", st));
  op_harness_free_tensor(bt);
  op_harness_free_tensor(st);
  OK(op_harness_output(h, "Out", "o"));
  set_attrs(h, &(nms_attrs){-1, -1, -1, 0.0f, 0.5f, 1.0f, true});
  OK(op_harness_run(h));
  double want[] = {0, 0.9, 0.1, 0.1, 1, 1, 0, 0.5, 2, 2, 3, 3};
  expect_dims(op_harness_tensor(h, "o"), DIMS(2, 6));
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "o")), want, 12, 0);
  op_harness_destroy(h);
}

Test(multiclass_nms, errors_name_op_and_variable) {
  float z[64] = {0};
  op_harness *h = harness("multiclass_nms");
  bind_input(h, "BBoxes", "quads", RILL_DTYPE_FP32, DIMS(1, 2, 8), z);
  bind_input(h, "Scores", "scores", RILL_DTYPE_FP32, DIMS(1, 2, 2), z);
  OK(op_harness_output(h, "Out", "o"));
  set_attrs(h, &(nms_attrs){0, -1, -1, 0.5f, 0.3f, 1.0f, true});
  EXPECT_ERROR(op_harness_run(h), "multiclass_nms", "quads", "polygon");
  op_harness_destroy(h);
  h = harness("multiclass_nms2");
  bind_input(h, "BBoxes", "boxes", RILL_DTYPE_FP32, DIMS(1, 3, 4), z);
  bind_input(h, "Scores", "scores", RILL_DTYPE_FP32, DIMS(1, 2, 2), z);
  OK(op_harness_output(h, "Out", "o"));
  OK(op_harness_output(h, "Index", "i"));
  set_attrs(h, &(nms_attrs){0, -1, -1, 0.5f, 0.3f, 1.0f, true});
  EXPECT_ERROR(op_harness_run(h), "multiclass_nms2", "scores", "boxes", "[N, C, M]");
  op_harness_destroy(h);
  /* [M, C] scores need LoD or RoisNum */
  h = harness("multiclass_nms2");
  bind_input(h, "BBoxes", "rois", RILL_DTYPE_FP32, DIMS(4, 2, 4), z);
  bind_input(h, "Scores", "probs", RILL_DTYPE_FP32, DIMS(4, 2), z);
  OK(op_harness_output(h, "Out", "o"));
  OK(op_harness_output(h, "Index", "i"));
  set_attrs(h, &(nms_attrs){0, -1, -1, 0.5f, 0.3f, 1.0f, true});
  EXPECT_ERROR(op_harness_run(h), "multiclass_nms2", "rois", "LoD");
  op_harness_destroy(h);
  /* RoisNum counts must add up to the rows */
  h = harness("multiclass_nms3");
  bind_input(h, "BBoxes", "rois", RILL_DTYPE_FP32, DIMS(4, 2, 4), z);
  bind_input(h, "Scores", "probs", RILL_DTYPE_FP32, DIMS(4, 2), z);
  bind_input(h, "RoisNum", "rois_num", RILL_DTYPE_INT32, DIMS(2), (const int32_t[]){3, 3});
  OK(op_harness_output(h, "Out", "o"));
  OK(op_harness_output(h, "Index", "i"));
  set_attrs(h, &(nms_attrs){0, -1, -1, 0.5f, 0.3f, 1.0f, true});
  EXPECT_ERROR(op_harness_run(h), "multiclass_nms3", "rois_num", "add up");
  op_harness_destroy(h);
  /* a required attribute missing */
  h = harness("multiclass_nms");
  bind_input(h, "BBoxes", "boxes", RILL_DTYPE_FP32, DIMS(1, 2, 4), z);
  bind_input(h, "Scores", "scores", RILL_DTYPE_FP32, DIMS(1, 2, 2), z);
  OK(op_harness_output(h, "Out", "o"));
  EXPECT_ERROR(op_harness_run(h), "multiclass_nms", "score_threshold");
  op_harness_destroy(h);
}
