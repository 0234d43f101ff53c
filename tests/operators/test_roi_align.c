/* roi_align and roi_pool (one schema file): shapes, hand-computed bins (a constant map,
 * a ramp whose bilinear average is exact, the maximum and its argmax), ROIs split by LoD
 * and by RoisLod, empty and out-of-map bins; the gradients against finite differences;
 * the errors naming op and variable. */
#include "roi_test.h"
#include "support/grad_check.h"

/* X[c][y][x] = 10 c + 2 x + y: bilinear sampling reproduces a linear map exactly, so each
 * bin is the ramp at the mean of its sample points. */
Test(roi_align, ramp_is_exact) {
  enum { C = 2, H = 6, W = 7 };
  float x[C * H * W];
  for (int c = 0; c < C; c++)
    for (int y = 0; y < H; y++)
      for (int xx = 0; xx < W; xx++) x[(c * H + y) * W + xx] = (float)(10 * c + 2 * xx + y);
  const float rois[] = {1, 1, 5, 4, 0.5f, 0, 2.5f, 4};
  const uint64_t lod[] = {0, 2};
  op_harness *h = harness("roi_align");
  roi_inputs(h, RILL_DTYPE_FP32, x, DIMS(1, C, H, W), rois, 2, lod, 2);
  OK(op_harness_output(h, "Out", "pooled"));
  pooled(h, 2, 2, 1.0f);
  OK(op_harness_run(h));
  const rill_tensor *o = op_harness_tensor(h, "pooled");
  expect_dims(o, DIMS(2, C, 2, 2));
  const float *op = rill_tensor_ptr(o);
  const float *r = rois;
  for (int n = 0; n < 2; n++, r += 4) {
    double rw = fmax(r[2] - r[0], 1), rh = fmax(r[3] - r[1], 1);
    for (int c = 0; c < C; c++)
      for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
          double cy = r[1] + (i + 0.5) * rh / 2, cx = r[0] + (j + 0.5) * rw / 2;
          double want = 10 * c + 2 * cx + cy;
          cr_assert_float_eq(op[((n * C + c) * 2 + i) * 2 + j], want, 1e-4, "roi %d c %d (%d, %d)", n, c, i, j);
        }
  }
  op_harness_destroy(h);
}

/* Samples more than a pixel outside the map count zero but still divide: a ROI half off
 * a constant map averages to less than the constant. */
Test(roi_align, outside_samples_count_zero) {
  double x[4 * 4];
  for (int i = 0; i < 16; i++) x[i] = 3.0;
  const double rois[] = {-8, 0, 0, 4};
  const uint64_t lod[] = {0, 1};
  op_harness *h = harness("roi_align");
  roi_inputs(h, RILL_DTYPE_FP64, x, DIMS(1, 1, 4, 4), rois, 1, lod, 2);
  OK(op_harness_output(h, "Out", "pooled"));
  pooled(h, 1, 1, 1.0f);
  OK(op_harness_attr_int(h, "sampling_ratio", 4));
  OK(op_harness_run(h));
  /* x samples at -7, -5, -3, -1: only -1 is within one pixel */
  cr_assert_float_eq(*(const double *)rill_tensor_ptr(op_harness_tensor(h, "pooled")), 0.75, 1e-12);
  op_harness_destroy(h);
}

Test(roi_pool, max_and_argmax_with_rois_lod) {
  enum { H = 4, W = 5 };
  float x[2 * H * W];
  for (int i = 0; i < 2 * H * W; i++) x[i] = (float)((i * 7) % 11);
  /* ROI 0 on image 0 covers rows 0-1 and columns 1-3 (corners rounded); ROI 1 on image 1
   * is the whole map; ROI 2 lies beyond it (empty bins) */
  const float rois[] = {1.2f, 0, 3.4f, 1.4f, 0, 0, 4, 3, 9, 9, 12, 12};
  op_harness *h = harness("roi_pool");
  roi_inputs(h, RILL_DTYPE_FP32, x, DIMS(2, 1, H, W), rois, 3, NULL, 0);
  const int64_t rl[] = {0, 1, 3};
  bind_input(h, "RoisLod", "rois_lod", RILL_DTYPE_INT64, DIMS(3), rl);
  OK(op_harness_output(h, "Out", "pooled"));
  OK(op_harness_output(h, "Argmax", "argmax"));
  pooled(h, 1, 1, 1.0f);
  OK(op_harness_run(h));
  const float *o = rill_tensor_ptr(op_harness_tensor(h, "pooled"));
  const int64_t *a = rill_tensor_ptr(op_harness_tensor(h, "argmax"));
  float m0 = -1, m1 = -1;
  int64_t a0 = -1, a1 = -1;
  for (int y = 0; y < 2; y++)
    for (int xx = 1; xx <= 3; xx++)
      if (x[y * W + xx] > m0) { m0 = x[y * W + xx]; a0 = y * W + xx; }
  for (int k = 0; k < H * W; k++)
    if (x[H * W + k] > m1) { m1 = x[H * W + k]; a1 = k; }
  cr_assert_float_eq(o[0], m0, 0);
  cr_assert_eq(a[0], a0);
  cr_assert_float_eq(o[1], m1, 0);
  cr_assert_eq(a[1], a1);
  cr_assert_float_eq(o[2], 0, 0);
  cr_assert_eq(a[2], -1);
  op_harness_destroy(h);
}

Test(roi_align, gradient_matches_finite_differences) {
  enum { N = 2, C = 2, H = 5, W = 6 };
  double x[N * C * H * W];
  for (int i = 0; i < N * C * H * W; i++) x[i] = sin(i * 0.37) * 2;
  const double rois[] = {0.6, 1.1, 4.3, 3.9, 1.7, 0.2, 5.6, 4.4, -0.8, 2.2, 3.1, 6.0};
  const uint64_t lod[] = {0, 1, 3};
  for (int ratio = -1; ratio <= 2; ratio += 3) {
    op_harness *h = harness("roi_align");
    roi_inputs(h, RILL_DTYPE_FP64, x, DIMS(N, C, H, W), rois, 3, lod, 3);
    OK(op_harness_output(h, "Out", "pooled"));
    pooled(h, 2, 3, 0.9f);
    OK(op_harness_attr_int(h, "sampling_ratio", ratio));
    OK(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), NULL));
    op_harness_destroy(h);
  }
}

Test(roi_pool, gradient_matches_finite_differences) {
  enum { N = 2, C = 2, H = 5, W = 6 };
  double x[N * C * H * W];
  for (int i = 0; i < N * C * H * W; i++) x[i] = (double)((i * 37) % 61) * 0.1; /* distinct */
  const double rois[] = {0.6, 1.1, 4.3, 3.9, 1.7, 0.2, 5.6, 4.4, 0, 2, 3, 4};
  const uint64_t lod[] = {0, 1, 3};
  op_harness *h = harness("roi_pool");
  roi_inputs(h, RILL_DTYPE_FP64, x, DIMS(N, C, H, W), rois, 3, lod, 3);
  OK(op_harness_output(h, "Out", "pooled"));
  OK(op_harness_output(h, "Argmax", "argmax"));
  pooled(h, 2, 2, 1.0f);
  OK(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), NULL));
  op_harness_destroy(h);
}

Test(roi_align, errors_name_op_and_variable) {
  float x[2 * 16] = {0}, rois[8] = {0, 0, 2, 2, 1, 1, 3, 3};
  const uint64_t lod[] = {0, 2};
  op_harness *h = harness("roi_align");
  roi_inputs(h, RILL_DTYPE_FP32, x, DIMS(2, 1, 4, 4), rois, 2, lod, 2);
  OK(op_harness_output(h, "Out", "pooled"));
  EXPECT_ERROR(op_harness_run(h), "roi_align", "rois", "1 images", "2");
  op_harness_destroy(h);
  h = harness("roi_pool");
  roi_inputs(h, RILL_DTYPE_FP32, x, DIMS(1, 1, 4, 4), rois, 2, NULL, 0);
  OK(op_harness_output(h, "Out", "pooled"));
  EXPECT_ERROR(op_harness_run(h), "roi_pool", "rois", "LoD");
  op_harness_destroy(h);
  h = harness("roi_align");
  roi_inputs(h, RILL_DTYPE_FP32, x, DIMS(1, 1, 4, 4), rois, 2, lod, 2);
  OK(op_harness_output(h, "Out", "pooled"));
  pooled(h, 0, 2, 1.0f);
  EXPECT_ERROR(op_harness_run(h), "roi_align", "pooled_height");
  op_harness_destroy(h);
  h = harness("roi_align");
  bind_input(h, "X", "feat3", RILL_DTYPE_FP32, DIMS(1, 4, 4), x);
  bind_input(h, "ROIs", "rois", RILL_DTYPE_FP32, DIMS(2, 4), rois);
  OK(op_harness_output(h, "Out", "pooled"));
  EXPECT_ERROR(op_harness_infer(h), "roi_align", "feat3", "[N, C, H, W]");
  op_harness_destroy(h);
}
