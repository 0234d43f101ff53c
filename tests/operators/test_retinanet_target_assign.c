/* retinanet_target_assign on two hand-worked images: every anchor kept (no straddle
 * pruning, no sampling), a foreground labelled with its box's class, backgrounds, an
 * image whose box touches no anchor (every anchor a best match and a background: four
 * zero-weight location rows), ForegroundNumber; inference and errors. */
#include <math.h>

#include "tensor_test.h"

static const float ANCHOR[] = {0, 0, 9, 9, 10, 10, 19, 19, 0, 10, 9, 19, 15, 0, 24, 9};
static const float GT[] = {0, 0, 9, 8, 10, 10, 19, 19, 15, 15, 15.5f, 15.5f};
static const int32_t LABELS[] = {2, 1, 3}, CROWD[] = {0, 1, 0};
static const float INFO[] = {20, 20, 1, 40, 40, 2};

static void bind_lod(op_harness *h, const char *slot, const char *name, rill_dtype dt,
                     const int64_t *dims, size_t nd, const void *data) {
  static const uint64_t lod[] = {0, 2, 3};
  size_t nl = 3;
  rill_tensor *t = op_harness_make(dt, dims, nd, data);
  cr_assert_not_null(t);
  OK(rill_tensor_set_lod(t, 1, (const uint64_t *const[]){lod}, &nl));
  OK(op_harness_input(h, slot, name, t));
  op_harness_free_tensor(t);
}

static op_harness *setup(const char *labels_name, int64_t nlabels) {
  op_harness *h = harness("retinanet_target_assign");
  bind_input(h, "Anchor", "anchor", RILL_DTYPE_FP32, DIMS(4, 4), ANCHOR);
  bind_lod(h, "GtBoxes", "gt", RILL_DTYPE_FP32, DIMS(3, 4), GT);
  if (nlabels == 3)
    bind_lod(h, "GtLabels", labels_name, RILL_DTYPE_INT32, DIMS(3, 1), LABELS);
  else
    bind_input(h, "GtLabels", labels_name, RILL_DTYPE_INT32, DIMS(nlabels, 1), LABELS);
  bind_lod(h, "IsCrowd", "crowd", RILL_DTYPE_INT32, DIMS(3, 1), CROWD);
  bind_input(h, "ImInfo", "im_info", RILL_DTYPE_FP32, DIMS(2, 3), INFO);
  OK(op_harness_output(h, "LocationIndex", "loc"));
  OK(op_harness_output(h, "ScoreIndex", "score"));
  OK(op_harness_output(h, "TargetBBox", "tbox"));
  OK(op_harness_output(h, "TargetLabel", "tlabel"));
  OK(op_harness_output(h, "BBoxInsideWeight", "weight"));
  OK(op_harness_output(h, "ForegroundNumber", "fg_num"));
  return h;
}

static void expect_ints(const rill_tensor *t, const int32_t *want, int64_t n) {
  cr_assert_eq(rill_tensor_numel(t), n, "%lld values, expected %lld",
               (long long)rill_tensor_numel(t), (long long)n);
  const int32_t *p = rill_tensor_ptr(t);
  for (int64_t i = 0; i < n; i++)
    cr_assert_eq(p[i], want[i], "[%lld] %d, expected %d", (long long)i, p[i], want[i]);
}

Test(retinanet_target_assign, hand_worked_targets) {
  op_harness *h = setup("labels", 3);
  OK(op_harness_run(h));
  const rill_tensor *loc = op_harness_tensor(h, "loc"), *score = op_harness_tensor(h, "score");
  expect_ints(loc, (const int32_t[]){0, 4, 4, 4, 4}, 5);
  expect_ints(score, (const int32_t[]){0, 1, 2, 3, 4, 5, 6, 7}, 8);
  expect_ints(op_harness_tensor(h, "tlabel"), (const int32_t[]){2, 0, 0, 0, 0, 0, 0, 0}, 8);
  const rill_tensor *fg = op_harness_tensor(h, "fg_num");
  expect_dims(fg, DIMS(2, 1));
  expect_ints(fg, (const int32_t[]){2, 5}, 2);
  cr_assert(fg->lod.nlevels == 1 && fg->lod.levels[0].offsets[1] == 1 &&
            fg->lod.levels[0].offsets[2] == 2);
  cr_assert(loc->lod.levels[0].offsets[1] == 1 && loc->lod.levels[0].offsets[2] == 5);
  cr_assert(score->lod.levels[0].offsets[1] == 4 && score->lod.levels[0].offsets[2] == 8);
  const float *tb = rill_tensor_ptr(op_harness_tensor(h, "tbox"));
  const float want0[] = {0, -0.05f, 0, logf(0.9f)};
  expect_close_f32(tb, want0, 4, 1e-6f);
  const float *w = rill_tensor_ptr(op_harness_tensor(h, "weight"));
  for (int i = 0; i < 20; i++) cr_assert_float_eq(w[i], i < 4 ? 1.0f : 0.0f, 0, "[%d]", i);
  op_harness_destroy(h);
}

Test(retinanet_target_assign, compile_time_shapes) {
  op_harness *h = setup("labels", 3);
  rill_tensor_meta ins[5] = {meta_of(RILL_DTYPE_FP32, DIMS(-1, 4)), meta_of(RILL_DTYPE_FP32, DIMS(-1, 4)),
                             meta_of(RILL_DTYPE_INT32, DIMS(-1, 1)), meta_of(RILL_DTYPE_INT32, DIMS(-1, 1)),
                             meta_of(RILL_DTYPE_FP32, DIMS(-1, 3))};
  rill_tensor_meta outs[6];
  OK(compile_infer_n(h, ins, (const size_t[]){1, 1, 1, 1, 1}, outs));
  expect_meta_dims(&outs[2], DIMS(-1, 4));
  expect_meta_dims(&outs[5], DIMS(-1, 1));
  cr_assert_eq(outs[5].dtype, RILL_DTYPE_INT32);
  ins[2] = meta_of(RILL_DTYPE_FP32, DIMS(-1, 1));
  EXPECT_ERROR(compile_infer_n(h, ins, (const size_t[]){1, 1, 1, 1, 1}, outs),
               "retinanet_target_assign", "GtLabels", "int32");
  op_harness_destroy(h);
}

Test(retinanet_target_assign, errors_name_op_and_variable) {
  op_harness *h = setup("labels_short", 2);
  EXPECT_ERROR(op_harness_run(h), "retinanet_target_assign", "labels_short", "one label per box");
  op_harness_destroy(h);
}
