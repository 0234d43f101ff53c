/* matrix_nms: hand-worked decays (linear and Gaussian), post_threshold, keep_top_k, the
 * index across a batch, an image with nothing kept, compile-time shapes, the errors. */
#include "tensor_test.h"

/* Four boxes; class 0 is background. Candidates of class 1 by score: b0, b1, b2, b3.
 * iou(b1, b0) = 0.8, iou(b2, b0) = 0.25 / 1.75 = 1/7, iou(b2, b1) = 0.15 / 1.65 = 1/11,
 * b3 overlaps nothing; max_iou = {0, 0.8, 1/7, 0}. */
static const float BOXES[] = {0, 0, 1, 1, 0, 0, 1, 0.8f, 0.5f, 0.5f, 1.5f, 1.5f, 2, 2, 3, 3};

static op_harness *mnms(const float *boxes, const float *scores, int64_t n, int64_t c, int64_t m,
                        float score_t, float post_t, int top_k, int keep_top_k, bool gaussian) {
  op_harness *h = harness("matrix_nms");
  bind_input(h, "BBoxes", "boxes", RILL_DTYPE_FP32, DIMS(n, m, 4), boxes);
  bind_input(h, "Scores", "scores", RILL_DTYPE_FP32, DIMS(n, c, m), scores);
  OK(op_harness_output(h, "Out", "dets"));
  OK(op_harness_output(h, "Index", "index"));
  OK(op_harness_attr_float(h, "score_threshold", score_t));
  OK(op_harness_attr_float(h, "post_threshold", post_t));
  OK(op_harness_attr_int(h, "nms_top_k", top_k));
  OK(op_harness_attr_int(h, "keep_top_k", keep_top_k));
  OK(op_harness_attr_bool(h, "use_gaussian", gaussian));
  OK(op_harness_attr_float(h, "gaussian_sigma", 2.0f));
  return h;
}

static void expect_index(op_harness *h, const int32_t *want, int64_t n) {
  rill_tensor *t = op_harness_tensor(h, "index");
  expect_dims(t, DIMS(n, 1));
  for (int64_t i = 0; i < n; i++)
    cr_assert_eq(((const int32_t *)rill_tensor_ptr(t))[i], want[i], "Index[%lld]", (long long)i);
}

/* Gaussian, sigma 2: b1 decays by exp(-0.64 * 2) (its overlap with b0), b2 by
 * exp(-(1/7)^2 * 2) (with b0; its term for b1 exceeds 1), b3 not at all. */
Test(matrix_nms, gaussian_decay) {
  const float s[] = {0.9f, 0.9f, 0.9f, 0.9f, 0.9f, 0.8f, 0.7f, 0.6f};
  op_harness *h = mnms(BOXES, s, 1, 2, 4, 0.1f, 0.0f, -1, -1, true);
  OK(op_harness_run(h));
  double d1 = 0.8 * exp(-1.28), d2 = 0.7 * exp(-2.0 / 49.0);
  float want[] = {1, 0.9f, 0, 0, 1, 1,       1, (float)d2, 0.5f, 0.5f, 1.5f, 1.5f,
                  1, 0.6f, 2, 2, 3, 3,       1, (float)d1, 0, 0, 1, 0.8f};
  rill_tensor *out = op_harness_tensor(h, "dets");
  expect_dims(out, DIMS(4, 6));
  expect_close_f32(rill_tensor_ptr(out), want, 24, 1e-6f);
  expect_index(h, (const int32_t[]){0, 2, 3, 1}, 4);
  cr_assert_eq(out->lod.nlevels, 1);
  cr_assert(out->lod.levels[0].n == 2 && out->lod.levels[0].offsets[1] == 4);
  op_harness_destroy(h);
}

/* Linear: b1 gets 1 - 0.8 = 0.2 (0.16), b2 1 - 1/7 (0.6; its term for b1, (1 - 1/11) /
 * 0.2, is above 1), b3 1 (0.5). post_threshold 0.2 drops b1; keep_top_k 2 keeps the two
 * best. The second image repeats the first with class 1's scores as class 0's (the
 * background), so it keeps nothing; Index counts rows across images. */
Test(matrix_nms, linear_decay_thresholds_and_batch) {
  const float s[] = {0.9f, 0.9f, 0.9f, 0.9f, 0.9f, 0.8f, 0.7f, 0.5f};
  op_harness *h = mnms(BOXES, s, 1, 2, 4, 0.1f, 0.0f, -1, -1, false);
  OK(op_harness_run(h));
  float want[] = {1, 0.9f, 0, 0, 1, 1, 1, 0.6f, 0.5f, 0.5f, 1.5f, 1.5f,
                  1, 0.5f, 2, 2, 3, 3, 1, 0.16f, 0, 0, 1, 0.8f};
  expect_dims(op_harness_tensor(h, "dets"), DIMS(4, 6));
  expect_close_f32(rill_tensor_ptr(op_harness_tensor(h, "dets")), want, 24, 1e-6f);
  op_harness_destroy(h);

  float b2[32], s2[16];
  memcpy(b2, BOXES, sizeof BOXES);
  memcpy(b2 + 16, BOXES, sizeof BOXES);
  const float img2[] = {0.9f, 0.8f, 0.7f, 0.5f, 0.05f, 0.05f, 0.05f, 0.05f};
  memcpy(s2, img2, sizeof img2);
  memcpy(s2 + 8, s, sizeof s);
  h = mnms(b2, s2, 2, 2, 4, 0.1f, 0.2f, -1, 2, false);
  OK(op_harness_run(h));
  rill_tensor *out = op_harness_tensor(h, "dets");
  expect_dims(out, DIMS(2, 6));
  expect_close_f32(rill_tensor_ptr(out), want, 12, 1e-6f);
  expect_index(h, (const int32_t[]){4, 6}, 2);
  cr_assert(out->lod.levels[0].n == 3 && out->lod.levels[0].offsets[1] == 0 &&
            out->lod.levels[0].offsets[2] == 2);
  op_harness_destroy(h);

  /* nms_top_k 1: only b0 is a candidate; nothing above 0.95: [0, 6] with LoD {0, 0} */
  h = mnms(BOXES, s, 1, 2, 4, 0.1f, 0.0f, 1, -1, false);
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "dets"), DIMS(1, 6));
  op_harness_destroy(h);
  h = mnms(BOXES, s, 1, 2, 4, 0.95f, 0.0f, -1, -1, false);
  OK(op_harness_run(h));
  out = op_harness_tensor(h, "dets");
  expect_dims(out, DIMS(0, 6));
  expect_dims(op_harness_tensor(h, "index"), DIMS(0, 1));
  cr_assert(out->lod.levels[0].n == 2 && out->lod.levels[0].offsets[1] == 0);
  op_harness_destroy(h);
}

Test(matrix_nms, compile_time_shapes) {
  op_harness *h = mnms(BOXES, BOXES, 1, 2, 4, 0.1f, 0.0f, -1, -1, false);
  rill_tensor_meta ins[2] = {meta_of(RILL_DTYPE_FP64, (const int64_t[]){-1, 7, 4}, 3),
                             meta_of(RILL_DTYPE_FP64, (const int64_t[]){-1, 3, 7}, 3)};
  rill_tensor_meta outs[2];
  OK(compile_infer_n(h, ins, (const size_t[]){1, 1}, outs));
  expect_meta_dims(&outs[0], (const int64_t[]){7, 6}, 2);
  expect_meta_dims(&outs[1], (const int64_t[]){7, 1}, 2);
  cr_assert(outs[0].dtype == RILL_DTYPE_FP64 && outs[1].dtype == RILL_DTYPE_INT32);
  cr_assert_eq(outs[0].lod_level, 1);
  ins[1] = meta_of(RILL_DTYPE_FP64, (const int64_t[]){-1, 3, 5}, 3);
  EXPECT_ERROR(compile_infer_n(h, ins, (const size_t[]){1, 1}, outs), "matrix_nms", "Scores",
               "[N, C, M]");
  ins[1] = meta_of(RILL_DTYPE_FP32, (const int64_t[]){-1, 3, 7}, 3);
  EXPECT_ERROR(compile_infer_n(h, ins, (const size_t[]){1, 1}, outs), "matrix_nms", "Scores",
               "float32");
  op_harness_destroy(h);
}

/* One run on inputs of the given shapes, named "boxes" and "scores" unless given. */
static rill_status *run_shapes(const char *bname, const int64_t *bd, const char *sname,
                               const int64_t *sd) {
  static const float z[64] = {0};
  op_harness *h = harness("matrix_nms");
  bind_input(h, "BBoxes", bname, RILL_DTYPE_FP32, bd, 3, z);
  bind_input(h, "Scores", sname, RILL_DTYPE_FP32, sd, 3, z);
  OK(op_harness_output(h, "Out", "o"));
  OK(op_harness_attr_float(h, "score_threshold", 0.1f));
  OK(op_harness_attr_int(h, "nms_top_k", -1));
  OK(op_harness_attr_int(h, "keep_top_k", -1));
  rill_status *st = op_harness_run(h);
  op_harness_destroy(h);
  return st;
}

Test(matrix_nms, errors_name_op_and_variable) {
  OK(run_shapes("boxes", (const int64_t[]){1, 4, 4}, "scores", (const int64_t[]){1, 2, 4}));
  EXPECT_ERROR(run_shapes("quads", (const int64_t[]){1, 2, 8}, "scores",
                          (const int64_t[]){1, 2, 2}), "matrix_nms", "quads", "polygon");
  EXPECT_ERROR(run_shapes("boxes", (const int64_t[]){1, 3, 4}, "probs",
                          (const int64_t[]){1, 2, 2}), "matrix_nms", "probs", "boxes");
}
