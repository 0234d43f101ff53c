/* locality_aware_nms: a hand-worked merge and NMS on one class, the merged boxes shared
 * by a second class, keep_top_k, the empty marker, compile-time shapes, the errors. */
#include "tensor_test.h"

/* b0 and b1 overlap (IoU 0.8): merged into b0 = (b1 * 0.4 + b0 * 0.6) / 1.0 =
 * [0, 0, 1, 0.92], score 1.0. b2 starts a new run; b3 (IoU 1 / 1.1 with b2) merges into
 * it: ymax (3.1 * 0.3 + 3 * 0.5) / 0.8 = 3.0375, score 0.8. b4 overlaps neither run's
 * survivor and is one. NMS (0.3) on b0 1.0, b4 0.9, b2 0.8 drops b4 (IoU 0.818 with b0). */
static const float BOXES[] = {0, 0, 1, 1, 0, 0, 1, 0.8f, 2, 2, 3, 3, 2, 2, 3, 3.1f,
                              0.1f, 0, 1.1f, 0.92f};

/* BBoxes "boxes" of shape bd and Scores `sname` of shape sd (both 3-D). */
static op_harness *lanms_shapes(const float *b, const int64_t *bd, const float *s,
                                const char *sname, const int64_t *sd, int bg, float score_t,
                                int keep_top_k) {
  op_harness *h = harness("locality_aware_nms");
  bind_input(h, "BBoxes", "boxes", RILL_DTYPE_FP32, bd, 3, b);
  bind_input(h, "Scores", sname, RILL_DTYPE_FP32, sd, 3, s);
  OK(op_harness_output(h, "Out", "dets"));
  OK(op_harness_attr_int(h, "background_label", bg));
  OK(op_harness_attr_float(h, "score_threshold", score_t));
  OK(op_harness_attr_int(h, "nms_top_k", -1));
  OK(op_harness_attr_int(h, "keep_top_k", keep_top_k));
  OK(op_harness_attr_float(h, "nms_threshold", 0.3f));
  return h;
}

static op_harness *lanms(const float *b, const float *s, int64_t n, int64_t c, int64_t m,
                         int bg, float score_t, int keep_top_k) {
  return lanms_shapes(b, (const int64_t[]){n, m, 4}, s, "scores", (const int64_t[]){n, c, m},
                      bg, score_t, keep_top_k);
}

Test(locality_aware_nms, merges_runs_then_suppresses) {
  const float s[] = {0.6f, 0.4f, 0.5f, 0.3f, 0.9f};
  op_harness *h = lanms(BOXES, s, 1, 1, 5, -1, 0.2f, -1);
  OK(op_harness_run(h));
  float want[] = {0, 1.0f, 0, 0, 1, 0.92f, 0, 0.8f, 2, 2, 3, 3.0375f};
  rill_tensor *out = op_harness_tensor(h, "dets");
  expect_dims(out, DIMS(2, 6));
  expect_close_f32(rill_tensor_ptr(out), want, 12, 1e-6f);
  cr_assert(out->lod.nlevels == 1 && out->lod.levels[0].n == 2 &&
            out->lod.levels[0].offsets[1] == 2);
  /* the input is left as it was */
  const float *in = rill_tensor_ptr(op_harness_tensor(h, "boxes"));
  cr_assert_float_eq(in[3], 1.0f, 0);
  /* keep_top_k 1: the best (b0, 1.0) */
  OK(op_harness_attr_int(h, "keep_top_k", 1));
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "dets"), DIMS(1, 6));
  expect_close_f32(rill_tensor_ptr(op_harness_tensor(h, "dets")), want, 6, 1e-6f);
  /* nothing above the threshold: [1, 1] = -1 with LoD {0, 1} */
  OK(op_harness_attr_float(h, "score_threshold", 5.0f));
  OK(op_harness_run(h));
  out = op_harness_tensor(h, "dets");
  expect_dims(out, DIMS(1, 1));
  cr_assert_float_eq(*(float *)rill_tensor_ptr(out), -1.0f, 0);
  cr_assert(out->lod.levels[0].n == 2 && out->lod.levels[0].offsets[1] == 1);
  op_harness_destroy(h);
}

/* Class 1 (all scores 0.5) walks the boxes class 0 merged: b1 merges into [0, 0, 1, 0.92]
 * giving [0, 0, 1, 0.86], b3 into [2, 2, 3, 3.0375] giving ymax 3.06875; every row shows
 * the boxes as they are after both classes. */
Test(locality_aware_nms, classes_share_the_merged_boxes) {
  const float s[] = {0.6f, 0.4f, 0.5f, 0.3f, 0.9f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f};
  op_harness *h = lanms(BOXES, s, 1, 2, 5, -1, 0.2f, -1);
  OK(op_harness_run(h));
  float want[] = {0, 1.0f, 0, 0, 1, 0.86f, 0, 0.8f, 2, 2, 3, 3.06875f,
                  1, 1.0f, 0, 0, 1, 0.86f, 1, 1.0f, 2, 2, 3, 3.06875f};
  expect_dims(op_harness_tensor(h, "dets"), DIMS(4, 6));
  expect_close_f32(rill_tensor_ptr(op_harness_tensor(h, "dets")), want, 24, 1e-6f);
  /* background_label 0: class 1 alone sees the boxes unmerged */
  OK(op_harness_attr_int(h, "background_label", 0));
  OK(op_harness_run(h));
  float want1[] = {1, 1.0f, 0, 0, 1, 0.9f, 1, 1.0f, 2, 2, 3, 3.05f};
  expect_dims(op_harness_tensor(h, "dets"), DIMS(2, 6));
  expect_close_f32(rill_tensor_ptr(op_harness_tensor(h, "dets")), want1, 12, 1e-6f);
  op_harness_destroy(h);
}

Test(locality_aware_nms, compile_time_shapes_and_errors) {
  op_harness *h = lanms(BOXES, BOXES, 1, 1, 5, -1, 0.2f, -1);
  rill_tensor_meta ins[2] = {meta_of(RILL_DTYPE_FP32, (const int64_t[]){-1, 7, 4}, 3),
                             meta_of(RILL_DTYPE_FP32, (const int64_t[]){-1, 1, 7}, 3)};
  rill_tensor_meta outs[1];
  OK(compile_infer_n(h, ins, (const size_t[]){1, 1}, outs));
  expect_meta_dims(&outs[0], (const int64_t[]){7, 6}, 2);
  cr_assert_eq(outs[0].lod_level, 1);
  ins[0] = meta_of(RILL_DTYPE_FP32, (const int64_t[]){-1, 7, 8}, 3);
  EXPECT_ERROR(compile_infer_n(h, ins, (const size_t[]){1, 1}, outs), "locality_aware_nms",
               "BBoxes", "polygon");
  ins[0] = meta_of(RILL_DTYPE_FP32, (const int64_t[]){-1, 6, 4}, 3);
  EXPECT_ERROR(compile_infer_n(h, ins, (const size_t[]){1, 1}, outs), "locality_aware_nms",
               "Scores", "[N, C, M]");
  op_harness_destroy(h);
  float z[64] = {0};
  h = lanms_shapes(z, (const int64_t[]){1, 3, 4}, z, "probs", (const int64_t[]){1, 1, 2}, -1,
                   0.1f, -1);
  EXPECT_ERROR(op_harness_run(h), "locality_aware_nms", "probs", "boxes");
  op_harness_destroy(h);
}
