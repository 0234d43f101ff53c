/* detection_map against mAP worked out by hand: integral and 11-point AP, difficult
 * boxes with evaluate_difficult on and off, two batches accumulated through the states,
 * and the errors for bad input. */
#include "op_test.h"

/* Binds a [rows, width] float32 input with a one-level LoD of n offsets. */
static void bind_lod(op_harness *h, const char *slot, const char *name, const float *v,
                     int64_t rows, int64_t width, const uint64_t *lod, size_t n) {
  rill_tensor *t = op_harness_make(RILL_DTYPE_FP32, DIMS(rows, width), v);
  cr_assert_not_null(t);
  OK(rill_tensor_set_lod(t, 1, (const uint64_t *const[]){lod}, &n));
  OK(op_harness_input(h, slot, name, t));
  op_harness_free_tensor(t);
}

static op_harness *dmap(int32_t classes, const char *ap_type, bool difficult) {
  op_harness *h = harness("detection_map");
  OK(op_harness_attr_int(h, "class_num", classes));
  OK(op_harness_attr_string(h, "ap_type", ap_type));
  OK(op_harness_attr_bool(h, "evaluate_difficult", difficult));
  OK(op_harness_attr_float(h, "overlap_threshold", 0.5f));
  OK(op_harness_output(h, "MAP", "map"));
  OK(op_harness_output(h, "AccumPosCount", "pos_count"));
  OK(op_harness_output(h, "AccumTruePos", "true_pos"));
  OK(op_harness_output(h, "AccumFalsePos", "false_pos"));
  return h;
}

static float map_of(op_harness *h) {
  rill_tensor *m = op_harness_tensor(h, "map");
  cr_assert_eq(m->dtype, RILL_DTYPE_FP32);
  return *(const float *)rill_tensor_ptr(m);
}

/* One image: class 1 has boxes A and B, class 2 box C. Class 1's detections, by score:
 * 0.9 on A (true), 0.8 elsewhere (false), 0.7 on B (true): precision 1, 1/2, 2/3 at
 * recall 1/2, 1/2, 1. Class 2's one detection is on C. */
static const float LABEL1[] = {1, 0, 0.1f, 0.1f, 0.3f, 0.3f,
                               1, 0, 0.6f, 0.6f, 0.8f, 0.8f,
                               2, 0, 0.2f, 0.5f, 0.4f, 0.7f};
static const float DET1[] = {2, 0.6f, 0.2f, 0.5f, 0.4f, 0.7f,
                             1, 0.7f, 0.6f, 0.6f, 0.8f, 0.8f,
                             1, 0.9f, 0.1f, 0.1f, 0.3f, 0.3f,
                             1, 0.8f, 0.0f, 0.8f, 0.05f, 0.9f};

static op_harness *batch1(const char *ap_type) {
  op_harness *h = dmap(3, ap_type, true);
  bind_lod(h, "Label", "gt", LABEL1, 3, 6, (const uint64_t[]){0, 3}, 2);
  bind_lod(h, "DetectRes", "det", DET1, 4, 6, (const uint64_t[]){0, 4}, 2);
  return h;
}

Test(detection_map, integral_ap) {
  op_harness *h = batch1("integral");
  OK(op_harness_run(h));
  /* class 1: 1 * 1/2 + 2/3 * 1/2; class 2: 1 */
  cr_assert_float_eq(map_of(h), (5.0 / 6.0 + 1.0) / 2.0, 1e-6);
  const int32_t *pc = rill_tensor_ptr(op_harness_tensor(h, "pos_count"));
  cr_assert(pc[0] == 0 && pc[1] == 2 && pc[2] == 1);
  op_harness_destroy(h);
}

Test(detection_map, eleven_point_ap) {
  op_harness *h = batch1("11point");
  OK(op_harness_run(h));
  /* class 1: precision 1 at recall 0 .. 0.5 (six points), 2/3 at 0.6 .. 1 (five) */
  cr_assert_float_eq(map_of(h), ((6.0 + 5.0 * 2.0 / 3.0) / 11.0 + 1.0) / 2.0, 1e-6);
  op_harness_destroy(h);
}

/* Class 1's box A is difficult. Detections: 0.95 far from both (false), 0.9 on A, 0.8 on
 * B. Evaluated: 2 positives, precision 0, 1/2, 2/3 at recall 0, 1/2, 1. Not evaluated:
 * 1 positive, the detection on A is dropped, precision 0, 1/2 at recall 0, 1. */
static void difficult_case(bool evaluate, double want, int32_t want_pos, int64_t want_rows) {
  static const float gt[] = {1, 1, 0.1f, 0.1f, 0.3f, 0.3f, 1, 0, 0.6f, 0.6f, 0.8f, 0.8f};
  static const float det[] = {1, 0.9f, 0.1f, 0.1f, 0.3f, 0.3f,
                              1, 0.8f, 0.6f, 0.6f, 0.8f, 0.8f,
                              1, 0.95f, 0.4f, 0.0f, 0.5f, 0.05f};
  op_harness *h = dmap(2, "integral", evaluate);
  bind_lod(h, "Label", "gt", gt, 2, 6, (const uint64_t[]){0, 2}, 2);
  bind_lod(h, "DetectRes", "det", det, 3, 6, (const uint64_t[]){0, 3}, 2);
  OK(op_harness_run(h));
  cr_assert_float_eq(map_of(h), want, 1e-6, "evaluate_difficult %d", evaluate);
  cr_assert_eq(((const int32_t *)rill_tensor_ptr(op_harness_tensor(h, "pos_count")))[1], want_pos);
  rill_tensor *tp = op_harness_tensor(h, "true_pos");
  cr_assert_eq(tp->dims.d[0], want_rows);
  op_harness_destroy(h);
}

Test(detection_map, difficult_boxes) {
  difficult_case(true, 0.5 * 0.5 + 2.0 / 3.0 * 0.5, 2, 3);
  difficult_case(false, 0.5, 1, 2);
}

/* A [N, 5] Label has no difficult flag: every box counts. */
Test(detection_map, label_without_difficult_flag) {
  static const float gt[] = {1, 0.1f, 0.1f, 0.3f, 0.3f};
  static const float det[] = {1, 0.9f, 0.1f, 0.1f, 0.3f, 0.3f, 1, 0.8f, 0.1f, 0.1f, 0.3f, 0.3f};
  op_harness *h = dmap(2, "integral", false);
  bind_lod(h, "Label", "gt", gt, 1, 5, (const uint64_t[]){0, 1}, 2);
  bind_lod(h, "DetectRes", "det", det, 2, 6, (const uint64_t[]){0, 2}, 2);
  OK(op_harness_run(h));
  /* the second detection of the matched box is false: precision 1 then 1/2, recall 1 */
  cr_assert_float_eq(map_of(h), 1.0, 1e-6);
  const float *fp = rill_tensor_ptr(op_harness_tensor(h, "false_pos"));
  cr_assert(fp[1] == 0 && fp[3] == 1, "the 0.8 detection is the false one");
  op_harness_destroy(h);
}

/* Batch 2 adds class 1's box D with a 0.75 detection on it, and a 0.5 class-2 detection
 * in an image without class 2. Class 1 then has 3 positives and rows 0.9 T, 0.8 F,
 * 0.75 T, 0.7 T: AP = (1 + 2/3 + 3/4) / 3; class 2 rows 0.6 T, 0.5 F: AP 1. */
Test(detection_map, accumulates_over_batches) {
  op_harness *h = batch1("integral");
  int32_t zero = 0, one = 1;
  bind_input(h, "HasState", "has_state", RILL_DTYPE_INT32, DIMS(1), &zero);
  OK(op_harness_input(h, "PosCount", "pos_count", NULL));
  OK(op_harness_input(h, "TruePos", "true_pos", NULL));
  OK(op_harness_input(h, "FalsePos", "false_pos", NULL));
  OK(op_harness_run(h));
  cr_assert_float_eq(map_of(h), (5.0 / 6.0 + 1.0) / 2.0, 1e-6);

  static const float gt2[] = {1, 0, 0.5f, 0.1f, 0.7f, 0.3f};
  static const float det2[] = {2, 0.5f, 0.1f, 0.1f, 0.2f, 0.2f, 1, 0.75f, 0.5f, 0.1f, 0.7f, 0.3f};
  bind_input(h, "HasState", "has_state", RILL_DTYPE_INT32, DIMS(1), &one);
  bind_lod(h, "Label", "gt", gt2, 1, 6, (const uint64_t[]){0, 1}, 2);
  bind_lod(h, "DetectRes", "det", det2, 2, 6, (const uint64_t[]){0, 2}, 2);
  OK(op_harness_run(h));
  cr_assert_float_eq(map_of(h), ((1.0 + 2.0 / 3.0 + 0.75) / 3.0 + 1.0) / 2.0, 1e-6);
  const int32_t *pc = rill_tensor_ptr(op_harness_tensor(h, "pos_count"));
  cr_assert(pc[0] == 0 && pc[1] == 3 && pc[2] == 1);
  rill_tensor *tp = op_harness_tensor(h, "true_pos"), *fp = op_harness_tensor(h, "false_pos");
  const float want_tp[] = {0.9f, 1, 0.8f, 0, 0.7f, 1, 0.75f, 1, 0.6f, 1, 0.5f, 0};
  expect_dims(tp, DIMS(6, 2));
  expect_close_f32(rill_tensor_ptr(tp), want_tp, 12, 0);
  const float *f = rill_tensor_ptr(fp);
  for (int i = 0; i < 6; i++) cr_assert_eq(f[2 * i + 1], 1 - want_tp[2 * i + 1], "row %d", i);
  cr_assert_eq(tp->lod.nlevels, 1);
  const uint64_t want_lod[] = {0, 0, 4, 6};
  cr_assert_eq(tp->lod.levels[0].n, 4);
  for (int i = 0; i < 4; i++) cr_assert_eq(tp->lod.levels[0].offsets[i], want_lod[i]);
  op_harness_destroy(h);
}

Test(detection_map, double_precision) {
  static const double gt[] = {1, 0, 0.1, 0.1, 0.3, 0.3};
  static const double det[] = {1, 0.9, 0.2, 0.1, 0.4, 0.3};
  op_harness *h = dmap(2, "integral", true);
  rill_tensor *t = op_harness_make(RILL_DTYPE_FP64, DIMS(1, 6), gt);
  size_t n = 2;
  OK(rill_tensor_set_lod(t, 1, (const uint64_t *const[]){(const uint64_t[]){0, 1}}, &n));
  OK(op_harness_input(h, "Label", "gt", t));
  op_harness_free_tensor(t);
  t = op_harness_make(RILL_DTYPE_FP64, DIMS(1, 6), det);
  OK(rill_tensor_set_lod(t, 1, (const uint64_t *const[]){(const uint64_t[]){0, 1}}, &n));
  OK(op_harness_input(h, "DetectRes", "det", t));
  op_harness_free_tensor(t);
  OK(op_harness_run(h));
  /* IoU 1/3 is not above 0.5: a false positive, AP 0 */
  rill_tensor *m = op_harness_tensor(h, "map");
  cr_assert_eq(m->dtype, RILL_DTYPE_FP64);
  cr_assert_eq(*(const double *)rill_tensor_ptr(m), 0.0);
  op_harness_destroy(h);
}

Test(detection_map, errors_name_the_op_and_variable) {
  op_harness *h = batch1("integral");
  bind_lod(h, "DetectRes", "det", DET1, 4, 6, (const uint64_t[]){0, 2, 4}, 3);
  EXPECT_ERROR(op_harness_run(h), "detection_map", "DetectRes", "det", "offsets");
  op_harness_destroy(h);

  h = batch1("integral");
  static const float bad[] = {7, 0.5f, 0, 0, 1, 1};
  bind_lod(h, "DetectRes", "det", bad, 1, 6, (const uint64_t[]){0, 1}, 2);
  EXPECT_ERROR(op_harness_run(h), "detection_map", "DetectRes", "det", "label 7");
  op_harness_destroy(h);

  h = batch1("voc");
  EXPECT_ERROR(op_harness_run(h), "detection_map", "ap_type", "voc");
  op_harness_destroy(h);

  h = batch1("integral");
  int32_t one = 1;
  bind_input(h, "HasState", "has_state", RILL_DTYPE_INT32, DIMS(1), &one);
  bind_input(h, "PosCount", "pc", RILL_DTYPE_INT32, DIMS(2, 1), (const int32_t[]){1, 1});
  OK(op_harness_input(h, "TruePos", "tp", NULL));
  OK(op_harness_input(h, "FalsePos", "fp", NULL));
  EXPECT_ERROR(op_harness_run(h), "detection_map", "PosCount", "pc", "class_num 3");
  op_harness_destroy(h);

  h = batch1("integral");
  rill_tensor *t = op_harness_make(RILL_DTYPE_FP32, DIMS(3, 6), LABEL1);
  OK(op_harness_input(h, "Label", "gt", t));
  op_harness_free_tensor(t);
  EXPECT_ERROR(op_harness_run(h), "detection_map", "Label", "gt", "LoD");
  op_harness_destroy(h);
}
