/* retinanet_detection_output: a hand-worked decode, per-class NMS across two levels, the
 * last level's zero threshold, nms_top_k, keep_top_k, nothing kept, compile-time shapes,
 * the errors. */
#include "tensor_test.h"

/* Level 0: anchors A0 [0, 0, 9, 9], A1 [1, 1, 10, 10] (pixel IoU 81 / 119), zero deltas
 * so the boxes are the anchors; scores (A0: 0.8, 0.1; A1: 0.7, 0.6). Level 1 (the last,
 * threshold 0): anchor [20, 20, 29, 29], deltas (0.1, 0, ln 2, 0): centre 26, width 20,
 * x from 16 to 26 + 10 - 1 = 35 clamped to the 30-pixel image's 29; scores 0.05, 0.2. */
static const float D0[] = {0, 0, 0, 0, 0, 0, 0, 0}, S0[] = {0.8f, 0.1f, 0.7f, 0.6f};
static const float A0[] = {0, 0, 9, 9, 1, 1, 10, 10};
static const float D1[] = {0.1f, 0, 0.6931472f, 0}, S1[] = {0.05f, 0.2f};
static const float A1[] = {20, 20, 29, 29}, INFO[] = {30, 30, 1};

/* The two levels above; the second level's scores are [1, 1, classes1] (2 for S1). */
static op_harness *rdo_levels(int top_k, int keep_top_k, float score_t, const char *s1name,
                              int64_t classes1) {
  op_harness *h = harness("retinanet_detection_output");
  bind_input(h, "BBoxes", "d0", RILL_DTYPE_FP32, DIMS(1, 2, 4), D0);
  bind_input(h, "BBoxes", "d1", RILL_DTYPE_FP32, DIMS(1, 1, 4), D1);
  bind_input(h, "Scores", "s0", RILL_DTYPE_FP32, DIMS(1, 2, 2), S0);
  bind_input(h, "Scores", s1name, RILL_DTYPE_FP32, DIMS(1, 1, classes1),
             classes1 == 2 ? S1 : A0);
  bind_input(h, "Anchors", "a0", RILL_DTYPE_FP32, DIMS(2, 4), A0);
  bind_input(h, "Anchors", "a1", RILL_DTYPE_FP32, DIMS(1, 4), A1);
  bind_input(h, "ImInfo", "info", RILL_DTYPE_FP32, DIMS(1, 3), INFO);
  OK(op_harness_output(h, "Out", "dets"));
  OK(op_harness_attr_float(h, "score_threshold", score_t));
  OK(op_harness_attr_int(h, "nms_top_k", top_k));
  OK(op_harness_attr_int(h, "keep_top_k", keep_top_k));
  OK(op_harness_attr_float(h, "nms_threshold", 0.3f));
  OK(op_harness_attr_float(h, "nms_eta", 1.0f));
  return h;
}

static op_harness *rdo(int top_k, int keep_top_k, float score_t) {
  return rdo_levels(top_k, keep_top_k, score_t, "s1", 2);
}

/* Class 0: 0.8 (A0) kept, 0.7 (A1) suppressed, 0.05 (level 1) kept; class 1: 0.6 (A1),
 * 0.2 (level 1). By score: 0.8, 0.6, 0.2, 0.05; keep_top_k 3. Labels are class + 1. */
Test(retinanet_detection_output, decode_nms_and_top_k) {
  op_harness *h = rdo(-1, 3, 0.5f);
  OK(op_harness_run(h));
  float want[] = {1, 0.8f, 0, 0, 9, 9, 2, 0.6f, 1, 1, 10, 10, 2, 0.2f, 16, 20, 29, 29};
  rill_tensor *out = op_harness_tensor(h, "dets");
  expect_dims(out, DIMS(3, 6));
  expect_close_f32(rill_tensor_ptr(out), want, 18, 1e-4f);
  cr_assert(out->lod.nlevels == 1 && out->lod.levels[0].n == 2 &&
            out->lod.levels[0].offsets[1] == 3);
  op_harness_destroy(h);
  /* nms_top_k 1, per level: 0.8 from level 0, 0.2 from level 1 */
  h = rdo(1, -1, 0.5f);
  OK(op_harness_run(h));
  float want1[] = {1, 0.8f, 0, 0, 9, 9, 2, 0.2f, 16, 20, 29, 29};
  expect_dims(op_harness_tensor(h, "dets"), DIMS(2, 6));
  expect_close_f32(rill_tensor_ptr(op_harness_tensor(h, "dets")), want1, 12, 1e-4f);
  op_harness_destroy(h);
}

Test(retinanet_detection_output, nothing_kept) {
  static const float z[4] = {0};
  op_harness *h = harness("retinanet_detection_output");
  bind_input(h, "BBoxes", "d0", RILL_DTYPE_FP32, DIMS(1, 1, 4), z);
  bind_input(h, "Scores", "s0", RILL_DTYPE_FP32, DIMS(1, 1, 2), z);
  bind_input(h, "Anchors", "a0", RILL_DTYPE_FP32, DIMS(1, 4), A1);
  bind_input(h, "ImInfo", "info", RILL_DTYPE_FP32, DIMS(1, 3), INFO);
  OK(op_harness_output(h, "Out", "dets"));
  OK(op_harness_attr_float(h, "score_threshold", 0.5f));
  OK(op_harness_attr_int(h, "nms_top_k", -1));
  OK(op_harness_attr_int(h, "keep_top_k", -1));
  OK(op_harness_attr_float(h, "nms_threshold", 0.3f));
  OK(op_harness_attr_float(h, "nms_eta", 1.0f));
  OK(op_harness_run(h));
  rill_tensor *out = op_harness_tensor(h, "dets");
  expect_dims(out, DIMS(0, 6));
  cr_assert(out->lod.levels[0].n == 2 && out->lod.levels[0].offsets[1] == 0);
  op_harness_destroy(h);
}

Test(retinanet_detection_output, compile_time_shapes_and_errors) {
  op_harness *h = rdo(-1, 3, 0.5f);
  rill_tensor_meta ins[4] = {meta_of(RILL_DTYPE_FP32, (const int64_t[]){-1, 9, 4}, 3),
                             meta_of(RILL_DTYPE_FP32, (const int64_t[]){-1, 9, 5}, 3),
                             meta_of(RILL_DTYPE_FP32, (const int64_t[]){9, 4}, 2),
                             meta_of(RILL_DTYPE_FP32, (const int64_t[]){-1, 3}, 2)};
  rill_tensor_meta outs[1];
  OK(compile_infer_n(h, ins, (const size_t[]){1, 1, 1, 1}, outs));
  expect_meta_dims(&outs[0], (const int64_t[]){9, 6}, 2);
  ins[2] = meta_of(RILL_DTYPE_FP32, (const int64_t[]){8, 4}, 2);
  EXPECT_ERROR(compile_infer_n(h, ins, (const size_t[]){1, 1, 1, 1}, outs),
               "retinanet_detection_output", "Anchors", "[M, 4]");
  op_harness_destroy(h);
  /* the levels disagree on the class count */
  h = rdo_levels(-1, -1, 0.5f, "s1_three", 3);
  EXPECT_ERROR(op_harness_run(h), "retinanet_detection_output", "s1_three");
  op_harness_destroy(h);
}
