/* distribute_fpn_proposals and collect_fpn_proposals: hand-worked levels, LoDs and
 * RestoreIndex; the top rows over levels regrouped by image, equal scores in Paddle's
 * order; compile-time shapes; the errors. */
#include "tensor_test.h"

/* Pixel sizes sqrt((w + 1) * (h + 1)): 11 -> level floor(log2(11 / 224) + 4) = -1,
 * clamped to 2; 501 -> 5; 101 -> 2; 296 -> 4; 61 -> 2. Images: rows 0-2 and 3-4. */
static const float ROIS[] = {0, 0, 10, 10, 0, 0, 500, 500, 0, 0, 100, 100,
                             5, 5, 300, 300, 0, 0, 60, 60};

static op_harness *distribute(const uint64_t *lod, size_t nl, int64_t rows, const float *rois) {
  op_harness *h = harness("distribute_fpn_proposals");
  rill_tensor *t = op_harness_make(RILL_DTYPE_FP32, DIMS(rows, 4), rois);
  if (lod) OK(rill_tensor_set_lod(t, 1, (const uint64_t *const[]){lod}, &nl));
  OK(op_harness_input(h, "FpnRois", "rois", t));
  op_harness_free_tensor(t);
  static const char *const names[] = {"l2", "l3", "l4", "l5"};
  for (int i = 0; i < 4; i++) OK(op_harness_output(h, "MultiFpnRois", names[i]));
  OK(op_harness_output(h, "RestoreIndex", "restore"));
  OK(op_harness_attr_int(h, "min_level", 2));
  OK(op_harness_attr_int(h, "max_level", 5));
  OK(op_harness_attr_int(h, "refer_level", 4));
  OK(op_harness_attr_int(h, "refer_scale", 224));
  return h;
}

static void expect_lod(const rill_tensor *t, const uint64_t *want, size_t n) {
  cr_assert_eq(t->lod.nlevels, 1);
  cr_assert_eq(t->lod.levels[0].n, n);
  for (size_t i = 0; i < n; i++)
    cr_assert_eq(t->lod.levels[0].offsets[i], want[i], "LoD offset %zu is %llu, expected %llu",
                 i, (unsigned long long)t->lod.levels[0].offsets[i], (unsigned long long)want[i]);
}

Test(distribute_fpn_proposals, levels_lod_and_restore_index) {
  const uint64_t lod[] = {0, 3, 5};
  op_harness *h = distribute(lod, 3, 5, ROIS);
  OK(op_harness_run(h));
  rill_tensor *l2 = op_harness_tensor(h, "l2"), *l3 = op_harness_tensor(h, "l3");
  rill_tensor *l4 = op_harness_tensor(h, "l4"), *l5 = op_harness_tensor(h, "l5");
  expect_dims(l2, DIMS(3, 4));
  expect_dims(l3, DIMS(0, 4));
  expect_dims(l4, DIMS(1, 4));
  expect_dims(l5, DIMS(1, 4));
  float w2[] = {0, 0, 10, 10, 0, 0, 100, 100, 0, 0, 60, 60};
  expect_close_f32(rill_tensor_ptr(l2), w2, 12, 0);
  expect_close_f32(rill_tensor_ptr(l4), ROIS + 12, 4, 0);
  expect_close_f32(rill_tensor_ptr(l5), ROIS + 4, 4, 0);
  expect_lod(l2, (const uint64_t[]){0, 2, 3}, 3);
  expect_lod(l3, (const uint64_t[]){0, 0, 0}, 3);
  expect_lod(l4, (const uint64_t[]){0, 0, 1}, 3);
  expect_lod(l5, (const uint64_t[]){0, 1, 1}, 3);
  rill_tensor *r = op_harness_tensor(h, "restore");
  expect_dims(r, DIMS(5, 1));
  const int32_t *ri = rill_tensor_ptr(r);
  const int32_t want[] = {0, 4, 1, 3, 2}; /* concatenated: l2 rows 0 2 4, l4 row 3, l5 row 1 */
  for (int i = 0; i < 5; i++) cr_assert_eq(ri[i], want[i], "RestoreIndex[%d] is %d", i, ri[i]);
  op_harness_destroy(h);
}

/* An image with no rows, and an inverted box (area 0) that goes to min_level. */
Test(distribute_fpn_proposals, empty_image_and_inverted_box) {
  const float rois[] = {0, 0, 500, 500, 10, 10, 5, 5};
  const uint64_t lod[] = {0, 1, 1, 2};
  op_harness *h = distribute(lod, 4, 2, rois);
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "l2"), DIMS(1, 4));
  expect_lod(op_harness_tensor(h, "l2"), (const uint64_t[]){0, 0, 0, 1}, 4);
  expect_lod(op_harness_tensor(h, "l5"), (const uint64_t[]){0, 1, 1, 1}, 4);
  const int32_t *ri = rill_tensor_ptr(op_harness_tensor(h, "restore"));
  cr_assert(ri[0] == 1 && ri[1] == 0);
  op_harness_destroy(h);
}

Test(distribute_fpn_proposals, compile_time_shapes_and_errors) {
  op_harness *h = distribute(NULL, 0, 5, ROIS);
  EXPECT_ERROR(op_harness_run(h), "distribute_fpn_proposals", "rois", "LoD");
  rill_tensor_meta in = meta_of(RILL_DTYPE_FP64, (const int64_t[]){-1, 4}, 2);
  rill_tensor_meta outs[2];
  /* compile_infer_n binds one output per slot: one level */
  OK(op_harness_attr_int(h, "max_level", 2));
  OK(compile_infer_n(h, &in, (const size_t[]){1}, outs));
  expect_meta_dims(&outs[0], (const int64_t[]){-1, 4}, 2);
  expect_meta_dims(&outs[1], (const int64_t[]){-1, 1}, 2);
  cr_assert(outs[0].dtype == RILL_DTYPE_FP64 && outs[1].dtype == RILL_DTYPE_INT32);
  OK(op_harness_attr_int(h, "max_level", 5));
  EXPECT_ERROR(compile_infer_n(h, &in, (const size_t[]){1}, outs), "distribute_fpn_proposals",
               "MultiFpnRois", "max_level - min_level + 1");
  OK(op_harness_attr_int(h, "max_level", 2));
  in = meta_of(RILL_DTYPE_FP32, (const int64_t[]){-1, 5}, 2);
  EXPECT_ERROR(compile_infer_n(h, &in, (const size_t[]){1}, outs), "distribute_fpn_proposals",
               "FpnRois", "[R, 4]");
  op_harness_destroy(h);
}

static void bind_level(op_harness *h, int i, const float *rois, const float *scores, int64_t n,
                       const uint64_t *lod, size_t nl) {
  char rn[16], sn[16];
  snprintf(rn, sizeof rn, "rois%d", i);
  snprintf(sn, sizeof sn, "scores%d", i);
  rill_tensor *t = op_harness_make(RILL_DTYPE_FP32, DIMS(n, 4), rois);
  OK(rill_tensor_set_lod(t, 1, (const uint64_t *const[]){lod}, &nl));
  OK(op_harness_input(h, "MultiLevelRois", rn, t));
  op_harness_free_tensor(t);
  t = op_harness_make(RILL_DTYPE_FP32, DIMS(n, 1), scores);
  OK(rill_tensor_set_lod(t, 1, (const uint64_t *const[]){lod}, &nl));
  OK(op_harness_input(h, "MultiLevelScores", sn, t));
  op_harness_free_tensor(t);
}

/* Level 0: rows 0 (image 0, 0.9), 1 and 2 (image 1, 0.2 and 0.5); level 1: rows 3 and 4
 * (image 1, 0.8 and 0.1). The best four: 0.9, 0.8, 0.5, 0.2, then by image. */
Test(collect_fpn_proposals, top_rows_grouped_by_image) {
  op_harness *h = harness("collect_fpn_proposals");
  bind_level(h, 0, ROIS, (const float[]){0.9f, 0.2f, 0.5f}, 3, (const uint64_t[]){0, 1, 3}, 3);
  bind_level(h, 1, ROIS + 12, (const float[]){0.8f, 0.1f}, 2, (const uint64_t[]){0, 0, 2}, 3);
  OK(op_harness_output(h, "FpnRois", "out"));
  OK(op_harness_attr_int(h, "post_nms_topN", 4));
  OK(op_harness_run(h));
  rill_tensor *out = op_harness_tensor(h, "out");
  expect_dims(out, DIMS(4, 4));
  float want[] = {0, 0, 10, 10, 5, 5, 300, 300, 0, 0, 100, 100, 0, 0, 500, 500};
  expect_close_f32(rill_tensor_ptr(out), want, 16, 0);
  expect_lod(out, (const uint64_t[]){0, 1, 4}, 3);
  /* more than there are: all five */
  OK(op_harness_attr_int(h, "post_nms_topN", 50));
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "out"), DIMS(5, 4));
  op_harness_destroy(h);
}

/* Equal scores come out later row first, as Paddle's sort leaves them. */
Test(collect_fpn_proposals, equal_scores_in_paddles_order) {
  op_harness *h = harness("collect_fpn_proposals");
  bind_level(h, 0, ROIS, (const float[]){0.5f, 0.5f, 0.5f}, 3, (const uint64_t[]){0, 3}, 2);
  OK(op_harness_output(h, "FpnRois", "out"));
  OK(op_harness_attr_int(h, "post_nms_topN", 2));
  OK(op_harness_run(h));
  float want[] = {0, 0, 100, 100, 0, 0, 500, 500};
  expect_close_f32(rill_tensor_ptr(op_harness_tensor(h, "out")), want, 8, 0);
  op_harness_destroy(h);
}

Test(collect_fpn_proposals, compile_time_shapes_and_errors) {
  op_harness *h = harness("collect_fpn_proposals");
  bind_level(h, 0, ROIS, (const float[]){0.5f, 0.4f}, 2, (const uint64_t[]){0, 2}, 2);
  OK(op_harness_output(h, "FpnRois", "out"));
  OK(op_harness_attr_int(h, "post_nms_topN", 7));
  rill_tensor_meta ins[2] = {meta_of(RILL_DTYPE_FP32, (const int64_t[]){-1, 4}, 2),
                             meta_of(RILL_DTYPE_FP32, (const int64_t[]){-1, 1}, 2)};
  rill_tensor_meta outs[1];
  OK(compile_infer_n(h, ins, (const size_t[]){1, 1}, outs));
  expect_meta_dims(&outs[0], (const int64_t[]){7, 4}, 2);
  cr_assert_eq(outs[0].lod_level, 1);
  ins[1] = meta_of(RILL_DTYPE_FP32, (const int64_t[]){-1, 2}, 2);
  EXPECT_ERROR(compile_infer_n(h, ins, (const size_t[]){1, 1}, outs), "collect_fpn_proposals",
               "MultiLevelScores", "[R, 1]");
  op_harness_destroy(h);
  /* scores without LoD */
  h = harness("collect_fpn_proposals");
  bind_input(h, "MultiLevelRois", "r", RILL_DTYPE_FP32, DIMS(2, 4), ROIS);
  bind_input(h, "MultiLevelScores", "s_nolod", RILL_DTYPE_FP32, DIMS(2, 1), ROIS);
  OK(op_harness_output(h, "FpnRois", "out"));
  OK(op_harness_attr_int(h, "post_nms_topN", 2));
  EXPECT_ERROR(op_harness_run(h), "collect_fpn_proposals", "s_nolod", "LoD");
  op_harness_destroy(h);
}
