/* generate_proposals on a hand-worked 1 x 2 feature map with two anchors per cell:
 * decoding with variances, clipping, the min_size filter, NMS, pre/post top-n, no NMS,
 * an image left empty (no rows), the LoD and RpnRoisLod, float64, inference and
 * the errors. */
#include <math.h>

#include "tensor_test.h"

/* Anchor p = w * 2 + a: p0 [0,0,9,9] 0.9 (moved by deltas), p1 [1,1,10,10] 0.8 (overlaps
 * p0), p2 [20,5,40,15] 0.7 (clipped at x 29), p3 [5,5,5.5,12] 0.95 (1.5 wide: below
 * min_size 2). */
static const float SCORES[] = {0.9f, 0.7f, 0.8f, 0.95f}; /* [1, A=2, 1, W=2] */
static const float ANCHORS[] = {0, 0, 9, 9, 1, 1, 10, 10, 20, 5, 40, 15, 5, 5, 5.5f, 12};
static float deltas[16], variances[16]; /* deltas [1, 8, 1, 2] */

static void fill(void) {
  for (int i = 0; i < 16; i++) deltas[i] = 0;
  deltas[0 * 2 + 0] = 0.1f;                  /* p0 dx */
  deltas[2 * 2 + 0] = (float)log(2.0);       /* p0 dw */
  for (int i = 0; i < 16; i++) variances[i] = 1;
  variances[2] = 0.5f;                       /* p0: width scaled by exp(0.5 ln 2) */
}

static op_harness *setup(int nimg, const float *info, int pre, int post, float nms, float min_size) {
  fill();
  float sc[8], dl[32];
  for (int i = 0; i < nimg; i++) {
    memcpy(sc + i * 4, SCORES, sizeof SCORES);
    memcpy(dl + i * 16, deltas, sizeof deltas);
  }
  op_harness *h = harness("generate_proposals");
  bind_input(h, "Scores", "scores", RILL_DTYPE_FP32, DIMS(nimg, 2, 1, 2), sc);
  bind_input(h, "BboxDeltas", "deltas", RILL_DTYPE_FP32, DIMS(nimg, 8, 1, 2), dl);
  bind_input(h, "ImInfo", "im_info", RILL_DTYPE_FP32, DIMS(nimg, 3), info);
  bind_input(h, "Anchors", "anchors", RILL_DTYPE_FP32, DIMS(1, 2, 2, 4), ANCHORS);
  bind_input(h, "Variances", "variances", RILL_DTYPE_FP32, DIMS(1, 2, 2, 4), variances);
  OK(op_harness_attr_int(h, "pre_nms_topN", pre));
  OK(op_harness_attr_int(h, "post_nms_topN", post));
  OK(op_harness_attr_float(h, "nms_thresh", nms));
  OK(op_harness_attr_float(h, "min_size", min_size));
  OK(op_harness_output(h, "RpnRois", "rois"));
  OK(op_harness_output(h, "RpnRoiProbs", "probs"));
  return h;
}

static const float INFO1[] = {20, 30, 1};
/* p0 decoded: centre x 5 + 0.1 * 10 = 6, width 10 * sqrt(2), so x from 6 - 5 sqrt 2
 * (clipped to 0) to 6 + 5 sqrt 2 - 1. */
#define P0_X1 (float)(6 + 5 * sqrt(2.0) - 1)

Test(generate_proposals, decode_clip_filter_nms) {
  op_harness *h = setup(1, INFO1, 6000, 1000, 0.5f, 2.0f);
  OK(op_harness_output(h, "RpnRoisLod", "rois_lod"));
  OK(op_harness_run(h));
  const rill_tensor *r = op_harness_tensor(h, "rois"), *p = op_harness_tensor(h, "probs");
  expect_dims(r, DIMS(2, 4));
  expect_dims(p, DIMS(2, 1));
  const float want[] = {0, 0, P0_X1, 9, 20, 5, 29, 15}, wantp[] = {0.9f, 0.7f};
  expect_close_f32(rill_tensor_ptr(r), want, 8, 1e-5f);
  expect_close_f32(rill_tensor_ptr(p), wantp, 2, 0);
  cr_assert(r->lod.nlevels == 1 && r->lod.levels[0].n == 2 && r->lod.levels[0].offsets[1] == 2);
  cr_assert(p->lod.nlevels == 1 && p->lod.levels[0].offsets[1] == 2);
  const rill_tensor *l = op_harness_tensor(h, "rois_lod");
  expect_dims(l, DIMS(1));
  cr_assert_eq(((const int64_t *)rill_tensor_ptr(l))[0], 2);
  op_harness_destroy(h);
}

Test(generate_proposals, min_size_one_keeps_thin_box) {
  op_harness *h = setup(1, INFO1, 6000, 1000, 0.5f, 0.1f); /* min_size raised to 1 */
  OK(op_harness_run(h));
  const rill_tensor *p = op_harness_tensor(h, "probs");
  const float wantp[] = {0.95f, 0.9f, 0.7f};
  expect_dims(p, DIMS(3, 1));
  expect_close_f32(rill_tensor_ptr(p), wantp, 3, 0);
  op_harness_destroy(h);
}

Test(generate_proposals, scale_divides_the_size_test) {
  /* scale 8: p0 is 13.07 x 10 px, 2.51 x 2.125 at the original scale; p2 10 x 11 px,
   * 2.125 x 2.25: both kept at min_size 2.1, neither at 2.2 (both would be at scale 1) */
  const float info[] = {20, 30, 8};
  op_harness *h = setup(1, info, 6000, 1000, 0.5f, 2.1f);
  OK(op_harness_run(h));
  const float wantp[] = {0.9f, 0.7f};
  expect_dims(op_harness_tensor(h, "probs"), DIMS(2, 1));
  expect_close_f32(rill_tensor_ptr(op_harness_tensor(h, "probs")), wantp, 2, 0);
  op_harness_destroy(h);
  h = setup(1, info, 6000, 1000, 0.5f, 2.2f);
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "probs"), DIMS(0, 1));
  op_harness_destroy(h);
}

Test(generate_proposals, pre_and_post_top_n) {
  /* the 2 best anchors are p3 (filtered) and p0 */
  op_harness *h = setup(1, INFO1, 2, 1000, 0.5f, 2.0f);
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "rois"), DIMS(1, 4));
  op_harness_destroy(h);
  h = setup(1, INFO1, 0, 1, 0.5f, 2.0f);
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "rois"), DIMS(1, 4));
  cr_assert_float_eq(((const float *)rill_tensor_ptr(op_harness_tensor(h, "probs")))[0], 0.9f, 0);
  op_harness_destroy(h);
}

Test(generate_proposals, no_nms_keeps_overlaps_and_ignores_post) {
  op_harness *h = setup(1, INFO1, 6000, 1, 0.0f, 2.0f);
  OK(op_harness_run(h));
  const rill_tensor *r = op_harness_tensor(h, "rois"), *p = op_harness_tensor(h, "probs");
  expect_dims(r, DIMS(3, 4));
  const float wantp[] = {0.9f, 0.8f, 0.7f};
  expect_close_f32(rill_tensor_ptr(p), wantp, 3, 0);
  const float want1[] = {1, 1, 10, 10};
  expect_close_f32((const float *)rill_tensor_ptr(r) + 4, want1, 4, 0);
  op_harness_destroy(h);
}

Test(generate_proposals, empty_image_adds_no_row) {
  const float info[] = {20, 30, 100, 20, 30, 1}; /* image 0: every box too small */
  op_harness *h = setup(2, info, 6000, 1000, 0.5f, 2.0f);
  OK(op_harness_output(h, "RpnRoisLod", "rois_lod"));
  OK(op_harness_run(h));
  const rill_tensor *r = op_harness_tensor(h, "rois"), *p = op_harness_tensor(h, "probs");
  expect_dims(r, DIMS(2, 4));
  const float wantp[] = {0.9f, 0.7f};
  expect_close_f32(rill_tensor_ptr(p), wantp, 2, 0);
  cr_assert(r->lod.levels[0].n == 3 && r->lod.levels[0].offsets[1] == 0 &&
            r->lod.levels[0].offsets[2] == 2);
  const int64_t *l = rill_tensor_ptr(op_harness_tensor(h, "rois_lod"));
  cr_assert(l[0] == 0 && l[1] == 2, "RpnRoisLod %lld %lld", (long long)l[0], (long long)l[1]);
  op_harness_destroy(h);
  h = setup(1, info, 6000, 1000, 0.5f, 2.0f);
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "rois"), DIMS(0, 4));
  op_harness_destroy(h);
}

Test(generate_proposals, float64) {
  fill();
  double sc[4], dl[16], an[16], var[16], info[] = {20, 30, 1};
  for (int i = 0; i < 4; i++) sc[i] = SCORES[i];
  for (int i = 0; i < 16; i++) dl[i] = deltas[i];
  for (int i = 0; i < 16; i++) an[i] = ANCHORS[i], var[i] = variances[i];
  op_harness *h = harness("generate_proposals");
  bind_input(h, "Scores", "scores", RILL_DTYPE_FP64, DIMS(1, 2, 1, 2), sc);
  bind_input(h, "BboxDeltas", "deltas", RILL_DTYPE_FP64, DIMS(1, 8, 1, 2), dl);
  bind_input(h, "ImInfo", "im_info", RILL_DTYPE_FP64, DIMS(1, 3), info);
  bind_input(h, "Anchors", "anchors", RILL_DTYPE_FP64, DIMS(1, 2, 2, 4), an);
  bind_input(h, "Variances", "variances", RILL_DTYPE_FP64, DIMS(1, 2, 2, 4), var);
  OK(op_harness_attr_float(h, "min_size", 2.0f));
  OK(op_harness_output(h, "RpnRois", "rois"));
  OK(op_harness_output(h, "RpnRoiProbs", "probs"));
  OK(op_harness_run(h));
  const rill_tensor *r = op_harness_tensor(h, "rois");
  expect_dims(r, DIMS(2, 4));
  const double want[] = {0, 0, 6 + 5 * sqrt(2.0) - 1, 9, 20, 5, 29, 15};
  expect_close_f64(rill_tensor_ptr(r), want, 8, 1e-6);
  op_harness_destroy(h);
}

Test(generate_proposals, compile_time_rows_unknown) {
  op_harness *h = setup(1, INFO1, 6000, 1000, 0.5f, 2.0f);
  OK(op_harness_output(h, "RpnRoisLod", "rois_lod"));
  rill_tensor_meta ins[5] = {meta_of(RILL_DTYPE_FP32, DIMS(-1, 2, 1, 2)),
                             meta_of(RILL_DTYPE_FP32, DIMS(-1, 8, 1, 2)),
                             meta_of(RILL_DTYPE_FP32, DIMS(-1, 3)),
                             meta_of(RILL_DTYPE_FP32, DIMS(1, 2, 2, 4)),
                             meta_of(RILL_DTYPE_FP32, DIMS(1, 2, 2, 4))};
  rill_tensor_meta outs[3];
  OK(compile_infer_n(h, ins, (const size_t[]){1, 1, 1, 1, 1}, outs));
  expect_meta_dims(&outs[0], DIMS(-1, 4));
  expect_meta_dims(&outs[1], DIMS(-1, 1));
  expect_meta_dims(&outs[2], DIMS(-1));
  cr_assert(outs[0].lod_level == 1 && outs[1].lod_level == 1);
  cr_assert_eq(outs[2].dtype, RILL_DTYPE_INT64);
  ins[4] = meta_of(RILL_DTYPE_FP64, DIMS(1, 2, 2, 4));
  EXPECT_ERROR(compile_infer_n(h, ins, (const size_t[]){1, 1, 1, 1, 1}, outs),
               "generate_proposals", "Variances", "float64");
  op_harness_destroy(h);
}

Test(generate_proposals, errors_name_op_and_variable) {
  fill();
  float z[64] = {0}; /* zero deltas */
  op_harness *h = harness("generate_proposals");
  bind_input(h, "Scores", "scores", RILL_DTYPE_FP32, DIMS(1, 2, 1, 2), SCORES);
  bind_input(h, "BboxDeltas", "deltas_bad", RILL_DTYPE_FP32, DIMS(1, 4, 1, 2), z);
  bind_input(h, "ImInfo", "im_info", RILL_DTYPE_FP32, DIMS(1, 3), INFO1);
  bind_input(h, "Anchors", "anchors", RILL_DTYPE_FP32, DIMS(1, 2, 2, 4), ANCHORS);
  bind_input(h, "Variances", "variances", RILL_DTYPE_FP32, DIMS(1, 2, 2, 4), variances);
  OK(op_harness_output(h, "RpnRois", "rois"));
  OK(op_harness_output(h, "RpnRoiProbs", "probs"));
  EXPECT_ERROR(op_harness_run(h), "generate_proposals", "deltas_bad", "[N, 4A, H, W]");
  op_harness_destroy(h);
  h = harness("generate_proposals");
  bind_input(h, "Scores", "scores", RILL_DTYPE_FP32, DIMS(1, 2, 1, 2), SCORES);
  bind_input(h, "BboxDeltas", "deltas", RILL_DTYPE_FP32, DIMS(1, 8, 1, 2), z);
  bind_input(h, "ImInfo", "im_info", RILL_DTYPE_FP32, DIMS(1, 3), INFO1);
  bind_input(h, "Anchors", "anchors_short", RILL_DTYPE_FP32, DIMS(1, 1, 2, 4), ANCHORS);
  bind_input(h, "Variances", "variances", RILL_DTYPE_FP32, DIMS(1, 2, 2, 4), variances);
  OK(op_harness_output(h, "RpnRois", "rois"));
  OK(op_harness_output(h, "RpnRoiProbs", "probs"));
  EXPECT_ERROR(op_harness_run(h), "generate_proposals", "anchors_short", "4 anchors");
  op_harness_destroy(h);
  h = harness("generate_proposals");
  bind_input(h, "Scores", "scores3", RILL_DTYPE_FP32, DIMS(2, 1, 2), SCORES);
  bind_input(h, "BboxDeltas", "deltas", RILL_DTYPE_FP32, DIMS(1, 8, 1, 2), z);
  bind_input(h, "ImInfo", "im_info", RILL_DTYPE_FP32, DIMS(1, 3), INFO1);
  bind_input(h, "Anchors", "anchors", RILL_DTYPE_FP32, DIMS(1, 2, 2, 4), ANCHORS);
  bind_input(h, "Variances", "variances", RILL_DTYPE_FP32, DIMS(1, 2, 2, 4), variances);
  OK(op_harness_output(h, "RpnRois", "rois"));
  OK(op_harness_output(h, "RpnRoiProbs", "probs"));
  EXPECT_ERROR(op_harness_infer(h), "generate_proposals", "scores3", "[N, A, H, W]");
  op_harness_destroy(h);
}
