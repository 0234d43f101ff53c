/* rpn_target_assign on two hand-worked images: a straddling anchor dropped, a crowd box
 * ignored, a foreground by threshold with its deltas, backgrounds; and an image whose
 * box touches no anchor, so that every anchor is both a best match and a background and
 * the sampled ones become zero-weight location rows. Sampling truncates with
 * use_random false; use_random keeps the counts. Inference and errors. */
#include <math.h>

#include "tensor_test.h"

/* A0 [0,0,9,9], A1 [10,10,19,19], A2 [0,10,9,19], A3 [15,0,24,9] (outside a 20-wide image) */
static const float ANCHOR[] = {0, 0, 9, 9, 10, 10, 19, 19, 0, 10, 9, 19, 15, 0, 24, 9};
/* image 0: [0,0,9,8] and a crowd box; image 1: [15,15,15.5,15.5] at scale 2 */
static const float GT[] = {0, 0, 9, 8, 10, 10, 19, 19, 15, 15, 15.5f, 15.5f};
static const int32_t CROWD[] = {0, 1, 0};
static const float INFO[] = {20, 20, 1, 40, 40, 2};

static rill_tensor *with_lod(rill_dtype dt, const int64_t *dims, size_t nd, const void *data,
                             const uint64_t *lod, size_t nl) {
  rill_tensor *t = op_harness_make(dt, dims, nd, data);
  cr_assert_not_null(t);
  OK(rill_tensor_set_lod(t, 1, (const uint64_t *const[]){lod}, &nl));
  return t;
}

static op_harness *setup_info(int batch, bool use_random, const char *info_name, int64_t rows) {
  static const uint64_t lod[] = {0, 2, 3};
  op_harness *h = harness("rpn_target_assign");
  bind_input(h, "Anchor", "anchor", RILL_DTYPE_FP32, DIMS(4, 4), ANCHOR);
  rill_tensor *t = with_lod(RILL_DTYPE_FP32, DIMS(3, 4), GT, lod, 3);
  OK(op_harness_input(h, "GtBoxes", "gt", t));
  op_harness_free_tensor(t);
  t = with_lod(RILL_DTYPE_INT32, DIMS(3, 1), CROWD, lod, 3);
  OK(op_harness_input(h, "IsCrowd", "crowd", t));
  op_harness_free_tensor(t);
  bind_input(h, "ImInfo", info_name, RILL_DTYPE_FP32, DIMS(rows, 3), INFO);
  OK(op_harness_attr_int(h, "rpn_batch_size_per_im", batch));
  OK(op_harness_attr_float(h, "rpn_fg_fraction", 0.5f));
  OK(op_harness_attr_bool(h, "use_random", use_random));
  OK(op_harness_output(h, "LocationIndex", "loc"));
  OK(op_harness_output(h, "ScoreIndex", "score"));
  OK(op_harness_output(h, "TargetBBox", "tbox"));
  OK(op_harness_output(h, "TargetLabel", "tlabel"));
  OK(op_harness_output(h, "BBoxInsideWeight", "weight"));
  return h;
}

static op_harness *setup(int batch, bool use_random) {
  return setup_info(batch, use_random, "im_info", 2);
}

static void expect_ints(const rill_tensor *t, const int32_t *want, int64_t n) {
  cr_assert_eq(rill_tensor_numel(t), n, "%lld values, expected %lld",
               (long long)rill_tensor_numel(t), (long long)n);
  const int32_t *p = rill_tensor_ptr(t);
  for (int64_t i = 0; i < n; i++) cr_assert_eq(p[i], want[i], "[%lld] %d, expected %d", (long long)i, p[i], want[i]);
}

static void expect_lod(const rill_tensor *t, uint64_t a, uint64_t b) {
  cr_assert(t->lod.nlevels == 1 && t->lod.levels[0].n == 3);
  cr_assert(t->lod.levels[0].offsets[1] == a && t->lod.levels[0].offsets[2] == b,
            "LoD [0, %llu, %llu]", (unsigned long long)t->lod.levels[0].offsets[1],
            (unsigned long long)t->lod.levels[0].offsets[2]);
}

Test(rpn_target_assign, hand_worked_targets) {
  op_harness *h = setup(4, false);
  OK(op_harness_run(h));
  const rill_tensor *loc = op_harness_tensor(h, "loc"), *score = op_harness_tensor(h, "score");
  expect_ints(loc, (const int32_t[]){0, 4, 4}, 3);
  expect_ints(score, (const int32_t[]){0, 1, 2, 4, 5}, 5);
  expect_ints(op_harness_tensor(h, "tlabel"), (const int32_t[]){1, 0, 0, 0, 0}, 5);
  expect_dims(op_harness_tensor(h, "tlabel"), DIMS(5, 1));
  expect_lod(loc, 1, 3);
  expect_lod(score, 3, 5);
  const rill_tensor *tb = op_harness_tensor(h, "tbox");
  expect_dims(tb, DIMS(3, 4));
  float l2 = logf(0.2f);
  const float want[] = {0, -0.05f, 0, logf(0.9f), 2.6f, 2.6f, l2, l2, 2.6f, 2.6f, l2, l2};
  expect_close_f32(rill_tensor_ptr(tb), want, 12, 1e-6f);
  const float ww[] = {1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0};
  expect_close_f32(rill_tensor_ptr(op_harness_tensor(h, "weight")), ww, 12, 0);
  expect_lod(op_harness_tensor(h, "weight"), 1, 3);
  op_harness_destroy(h);
}

Test(rpn_target_assign, no_sampling_without_fraction_and_straddle_off) {
  op_harness *h = setup(4, false);
  OK(op_harness_attr_float(h, "rpn_fg_fraction", 0.0f));
  OK(op_harness_attr_float(h, "rpn_straddle_thresh", -1.0f));
  OK(op_harness_run(h));
  /* image 0: A3 now inside (IoU 0: background); image 1: all four anchors are best
   * matches and backgrounds: four zero-weight rows, four backgrounds */
  expect_ints(op_harness_tensor(h, "score"), (const int32_t[]){0, 1, 2, 3, 4, 5, 6, 7}, 8);
  expect_ints(op_harness_tensor(h, "loc"), (const int32_t[]){0, 4, 4, 4, 4}, 5);
  op_harness_destroy(h);
}

Test(rpn_target_assign, random_sampling_keeps_counts) {
  for (int run = 0; run < 3; run++) {
    op_harness *h = setup(2, true);
    OK(op_harness_run(h));
    const rill_tensor *loc = op_harness_tensor(h, "loc"), *score = op_harness_tensor(h, "score");
    /* image 0: 1 foreground (quota 1), 1 of its 2 backgrounds; image 1: one of its four
     * anchors drawn as foreground, one as background: one location row either way (of
     * zero weight when the draws coincide), one or two score rows */
    uint64_t s2 = score->lod.levels[0].offsets[2];
    cr_assert_eq(score->lod.levels[0].offsets[1], 2);
    cr_assert(s2 == 3 || s2 == 4, "score rows %llu", (unsigned long long)s2);
    cr_assert_eq(loc->lod.levels[0].offsets[1], 1);
    cr_assert_eq(loc->lod.levels[0].offsets[2], 2);
    const int32_t *sp = rill_tensor_ptr(score);
    cr_assert(sp[0] == 0 && (sp[1] == 1 || sp[1] == 2) && sp[2] >= 4 && sp[2] < 8);
    const float *w = rill_tensor_ptr(op_harness_tensor(h, "weight"));
    cr_assert_float_eq(w[4], s2 == 3 ? 0.0f : 1.0f, 0);
    op_harness_destroy(h);
  }
  op_harness *h = setup(256, true); /* nothing to sample away: as without randomness */
  OK(op_harness_run(h));
  expect_ints(op_harness_tensor(h, "score"), (const int32_t[]){0, 1, 2, 4, 5, 6, 7}, 7);
  op_harness_destroy(h);
}

Test(rpn_target_assign, float64) {
  double an[16], gt[12], info[6];
  for (int i = 0; i < 16; i++) an[i] = ANCHOR[i];
  for (int i = 0; i < 12; i++) gt[i] = GT[i];
  for (int i = 0; i < 6; i++) info[i] = INFO[i];
  static const uint64_t lod[] = {0, 2, 3};
  op_harness *h = harness("rpn_target_assign");
  bind_input(h, "Anchor", "anchor", RILL_DTYPE_FP64, DIMS(4, 4), an);
  rill_tensor *t = with_lod(RILL_DTYPE_FP64, DIMS(3, 4), gt, lod, 3);
  OK(op_harness_input(h, "GtBoxes", "gt", t));
  op_harness_free_tensor(t);
  t = with_lod(RILL_DTYPE_INT32, DIMS(3, 1), CROWD, lod, 3);
  OK(op_harness_input(h, "IsCrowd", "crowd", t));
  op_harness_free_tensor(t);
  bind_input(h, "ImInfo", "im_info", RILL_DTYPE_FP64, DIMS(2, 3), info);
  OK(op_harness_attr_bool(h, "use_random", false));
  OK(op_harness_output(h, "LocationIndex", "loc"));
  OK(op_harness_output(h, "ScoreIndex", "score"));
  OK(op_harness_output(h, "TargetBBox", "tbox"));
  OK(op_harness_output(h, "TargetLabel", "tlabel"));
  OK(op_harness_output(h, "BBoxInsideWeight", "weight"));
  OK(op_harness_run(h));
  const double *tb = rill_tensor_ptr(op_harness_tensor(h, "tbox"));
  cr_assert_float_eq(tb[1], -0.05, 1e-12);
  cr_assert_float_eq(tb[3], log(0.9), 1e-12);
  op_harness_destroy(h);
}

Test(rpn_target_assign, compile_time_shapes) {
  op_harness *h = setup(4, false);
  rill_tensor_meta ins[4] = {meta_of(RILL_DTYPE_FP32, DIMS(-1, 4)), meta_of(RILL_DTYPE_FP32, DIMS(-1, 4)),
                             meta_of(RILL_DTYPE_INT32, DIMS(-1, 1)), meta_of(RILL_DTYPE_FP32, DIMS(-1, 3))};
  rill_tensor_meta outs[5];
  OK(compile_infer_n(h, ins, (const size_t[]){1, 1, 1, 1}, outs));
  expect_meta_dims(&outs[0], DIMS(-1));
  expect_meta_dims(&outs[2], DIMS(-1, 4));
  expect_meta_dims(&outs[3], DIMS(-1, 1));
  cr_assert(outs[0].dtype == RILL_DTYPE_INT32 && outs[2].dtype == RILL_DTYPE_FP32);
  ins[2] = meta_of(RILL_DTYPE_INT64, DIMS(-1, 1));
  EXPECT_ERROR(compile_infer_n(h, ins, (const size_t[]){1, 1, 1, 1}, outs), "rpn_target_assign",
               "IsCrowd", "int32");
  op_harness_destroy(h);
}

Test(rpn_target_assign, errors_name_op_and_variable) {
  op_harness *h = harness("rpn_target_assign");
  bind_input(h, "Anchor", "anchor", RILL_DTYPE_FP32, DIMS(4, 4), ANCHOR);
  bind_input(h, "GtBoxes", "gt_nolod", RILL_DTYPE_FP32, DIMS(3, 4), GT);
  bind_input(h, "IsCrowd", "crowd", RILL_DTYPE_INT32, DIMS(3, 1), CROWD);
  bind_input(h, "ImInfo", "im_info", RILL_DTYPE_FP32, DIMS(2, 3), INFO);
  OK(op_harness_output(h, "LocationIndex", "loc"));
  OK(op_harness_output(h, "ScoreIndex", "score"));
  OK(op_harness_output(h, "TargetBBox", "tbox"));
  OK(op_harness_output(h, "TargetLabel", "tlabel"));
  OK(op_harness_output(h, "BBoxInsideWeight", "weight"));
  EXPECT_ERROR(op_harness_run(h), "rpn_target_assign", "gt_nolod", "LoD");
  op_harness_destroy(h);
  static const uint64_t lod[] = {0, 3};
  h = harness("rpn_target_assign");
  bind_input(h, "Anchor", "anchor", RILL_DTYPE_FP32, DIMS(4, 4), ANCHOR);
  rill_tensor *t = with_lod(RILL_DTYPE_FP32, DIMS(3, 4), GT, lod, 2);
  OK(op_harness_input(h, "GtBoxes", "gt", t));
  op_harness_free_tensor(t);
  bind_input(h, "IsCrowd", "crowd_short", RILL_DTYPE_INT32, DIMS(2, 1), CROWD);
  bind_input(h, "ImInfo", "im_info", RILL_DTYPE_FP32, DIMS(1, 3), INFO);
  OK(op_harness_output(h, "LocationIndex", "loc"));
  OK(op_harness_output(h, "ScoreIndex", "score"));
  OK(op_harness_output(h, "TargetBBox", "tbox"));
  OK(op_harness_output(h, "TargetLabel", "tlabel"));
  OK(op_harness_output(h, "BBoxInsideWeight", "weight"));
  EXPECT_ERROR(op_harness_run(h), "rpn_target_assign", "crowd_short", "one flag per box");
  op_harness_destroy(h);
  h = setup_info(4, false, "im_info_3", 1);
  EXPECT_ERROR(op_harness_run(h), "rpn_target_assign", "im_info_3", "2 images");
  op_harness_destroy(h);
}
