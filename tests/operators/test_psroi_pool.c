/* psroi_pool and prroi_pool (one schema file): shapes, bins against naive references (a
 * direct bin mean of each bin's own channel; the integral of the bilinear map by a fine
 * midpoint rule), ROIs split by LoD and by BatchRoINums, empty bins; the gradients of X
 * (and of prroi_pool's ROIs) against finite differences; the errors naming op and
 * variable. */
#include "roi_test.h"
#include "support/grad_check.h"

Test(psroi_pool, bins_average_their_own_channel) {
  enum { OC = 2, PH = 2, PW = 3, C = OC * PH * PW, H = 6, W = 7 };
  double x[2 * C * H * W];
  for (int i = 0; i < 2 * C * H * W; i++) x[i] = sin(i * 0.61) * 3;
  /* ROI 0 on image 0, ROIs 1 and 2 on image 1; ROI 2 lies beyond the map (empty bins) */
  const double rois[] = {1.4, 0.6, 9.2, 8.8, 0, 2, 13, 11, 20, 20, 30, 30};
  const uint64_t lod[] = {0, 1, 3};
  const float scale = 0.5f;
  op_harness *h = harness("psroi_pool");
  roi_inputs(h, RILL_DTYPE_FP64, x, DIMS(2, C, H, W), rois, 3, lod, 3);
  OK(op_harness_output(h, "Out", "pooled"));
  pooled(h, PH, PW, scale);
  OK(op_harness_attr_int(h, "output_channels", OC));
  OK(op_harness_run(h));
  const rill_tensor *o = op_harness_tensor(h, "pooled");
  expect_dims(o, DIMS(3, OC, PH, PW));
  const double *op = rill_tensor_ptr(o);
  const int img[] = {0, 1, 1};
  int empty = 0;
  for (int n = 0; n < 3; n++) {
    const double *r = rois + 4 * n;
    double sw = round(r[0]) * scale, sh = round(r[1]) * scale;
    double bw = fmax((round(r[2]) + 1) * scale - sw, 0.1) / PW;
    double bh = fmax((round(r[3]) + 1) * scale - sh, 0.1) / PH;
    for (int c = 0; c < OC; c++)
      for (int i = 0; i < PH; i++)
        for (int j = 0; j < PW; j++) {
          const double *plane = x + ((img[n] * C) + (c * PH + i) * PW + j) * H * W;
          double sum = 0;
          int cnt = 0;
          for (int y = 0; y < H; y++)
            for (int xx = 0; xx < W; xx++)
              if (y >= floor(sh + i * bh) && y < ceil(sh + (i + 1) * bh) &&
                  xx >= floor(sw + j * bw) && xx < ceil(sw + (j + 1) * bw)) {
                sum += plane[y * W + xx];
                cnt++;
              }
          empty += cnt == 0;
          cr_assert_float_eq(op[((n * OC + c) * PH + i) * PW + j], cnt ? sum / cnt : 0, 1e-12,
                             "roi %d c %d (%d, %d)", n, c, i, j);
        }
  }
  cr_assert_eq(empty, OC * PH * PW, "ROI 2's bins are all empty, the others none");
  op_harness_destroy(h);
}

Test(psroi_pool, gradient_matches_finite_differences) {
  enum { OC = 2, PH = 2, PW = 2, C = OC * PH * PW, H = 5, W = 6 };
  double x[2 * C * H * W];
  for (int i = 0; i < 2 * C * H * W; i++) x[i] = cos(i * 0.23);
  const double rois[] = {0.6, 1.1, 8.3, 7.9, 1.7, 0.2, 11.6, 9.4, 0, 2, 6, 8};
  const uint64_t lod[] = {0, 1, 3};
  op_harness *h = harness("psroi_pool");
  roi_inputs(h, RILL_DTYPE_FP64, x, DIMS(2, C, H, W), rois, 3, lod, 3);
  OK(op_harness_output(h, "Out", "pooled"));
  pooled(h, PH, PW, 0.5f);
  OK(op_harness_attr_int(h, "output_channels", OC));
  OK(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), NULL));
  op_harness_destroy(h);
}

/* The bilinear interpolation of plane (zero outside the map) at (y, x). */
static double bilinear(const double *plane, int H, int W, double y, double x) {
  double v = 0;
  for (int py = (int)floor(y); py <= (int)floor(y) + 1; py++)
    for (int px = (int)floor(x); px <= (int)floor(x) + 1; px++)
      if (py >= 0 && py < H && px >= 0 && px < W)
        v += plane[py * W + px] * fmax(0, 1 - fabs(y - py)) * fmax(0, 1 - fabs(x - px));
  return v;
}

Test(prroi_pool, bins_integrate_the_bilinear_map) {
  enum { C = 2, H = 5, W = 6, PH = 2, PW = 3, S = 400 };
  double x[2 * C * H * W];
  for (int i = 0; i < 2 * C * H * W; i++) x[i] = sin(i * 0.41) * 2;
  /* ROI 2 runs off the map's right and bottom edges; ROI 3 has no width */
  const double rois[] = {1.4, 0.6, 7.2, 6.8, 0.3, 2.1, 9.5, 7.7, 4.0, 3.0, 13.0, 12.0, 3, 1, 3, 5};
  const int64_t nums[] = {1, 3};
  const float scale = 0.7f;
  op_harness *h = harness("prroi_pool");
  roi_inputs(h, RILL_DTYPE_FP64, x, DIMS(2, C, H, W), rois, 4, NULL, 0);
  bind_input(h, "BatchRoINums", "nums", RILL_DTYPE_INT64, DIMS(2), nums);
  OK(op_harness_output(h, "Out", "pooled"));
  pooled(h, PH, PW, scale);
  OK(op_harness_run(h));
  const rill_tensor *o = op_harness_tensor(h, "pooled");
  expect_dims(o, DIMS(4, C, PH, PW));
  const double *op = rill_tensor_ptr(o);
  const int img[] = {0, 1, 1, 1};
  for (int n = 0; n < 4; n++) {
    const double *r = rois + 4 * n;
    double x0 = r[0] * scale, y0 = r[1] * scale;
    double bw = fmax(r[2] * scale - x0, 0) / PW, bh = fmax(r[3] * scale - y0, 0) / PH;
    for (int c = 0; c < C; c++)
      for (int i = 0; i < PH; i++)
        for (int j = 0; j < PW; j++) {
          const double *plane = x + (img[n] * C + c) * H * W;
          double sum = 0; /* midpoint rule on an S x S grid */
          for (int a = 0; a < S; a++)
            for (int b = 0; b < S; b++)
              sum += bilinear(plane, H, W, y0 + (i + (a + 0.5) / S) * bh, x0 + (j + (b + 0.5) / S) * bw);
          double want = bw * bh > 0 ? sum / (S * S) : 0;
          cr_assert_float_eq(op[((n * C + c) * PH + i) * PW + j], want, 2e-3,
                             "roi %d c %d (%d, %d): %g", n, c, i, j, want);
        }
  }
  op_harness_destroy(h);
}

Test(prroi_pool, lod_and_counts_split_alike) {
  enum { C = 1, H = 4, W = 4 };
  float x[2 * H * W];
  for (int i = 0; i < 2 * H * W; i++) x[i] = (float)i;
  const float rois[] = {0.5f, 0.5f, 2.5f, 3, 1, 1, 3, 3};
  const uint64_t lod[] = {0, 1, 2};
  const int64_t nums[] = {1, 1};
  float got[2][2];
  for (int v = 0; v < 2; v++) {
    op_harness *h = harness("prroi_pool");
    roi_inputs(h, RILL_DTYPE_FP32, x, DIMS(2, C, H, W), rois, 2, v ? NULL : lod, v ? 0 : 3);
    if (v) bind_input(h, "BatchRoINums", "nums", RILL_DTYPE_INT64, DIMS(2), nums);
    OK(op_harness_output(h, "Out", "pooled"));
    pooled(h, 1, 1, 1.0f);
    OK(op_harness_run(h));
    memcpy(got[v], rill_tensor_ptr(op_harness_tensor(h, "pooled")), sizeof got[v]);
    op_harness_destroy(h);
  }
  /* x is linear inside the map: a bin's mean is x at its centre */
  cr_assert_float_eq(got[0][0], 4 * 1.75f + 1.5f, 1e-5);
  cr_assert_float_eq(got[0][1], 16 + 4 * 2 + 2, 1e-5);
  cr_assert_float_eq(got[1][0], got[0][0], 0);
  cr_assert_float_eq(got[1][1], got[0][1], 0);
}

Test(prroi_pool, gradient_matches_finite_differences) {
  enum { N = 2, C = 2, H = 5, W = 6 };
  double x[N * C * H * W];
  for (int i = 0; i < N * C * H * W; i++) x[i] = sin(i * 0.37) * 2;
  /* corners kept off integer map coordinates, where the ROI gradient has kinks */
  const double rois[] = {0.6, 1.1, 6.3, 5.9, 1.7, 0.2, 8.6, 7.4, -1.3, 2.2, 5.1, 9.3};
  const uint64_t lod[] = {0, 1, 3};
  op_harness *h = harness("prroi_pool");
  roi_inputs(h, RILL_DTYPE_FP64, x, DIMS(N, C, H, W), rois, 3, lod, 3);
  OK(op_harness_output(h, "Out", "pooled"));
  pooled(h, 2, 3, 0.7f);
  OK(grad_check(h, GC_SLOTS("X", "ROIs"), GC_SLOTS("Out"), NULL));
  op_harness_destroy(h);
}

Test(psroi_pool, errors_name_op_and_variable) {
  float x[4 * 16] = {0}, rois[8] = {0, 0, 2, 2, 1, 1, 3, 3};
  const uint64_t lod[] = {0, 2};
  op_harness *h = harness("psroi_pool");
  bind_input(h, "X", "feat", RILL_DTYPE_FP32, DIMS(1, 4, 4, 4), x);
  bind_input(h, "ROIs", "rois", RILL_DTYPE_FP32, DIMS(2, 4), rois);
  OK(op_harness_output(h, "Out", "pooled"));
  pooled(h, 1, 2, 1.0f);
  OK(op_harness_attr_int(h, "output_channels", 3));
  EXPECT_ERROR(op_harness_infer(h), "psroi_pool", "feat", "4 channels", "= 6");
  op_harness_destroy(h);
  h = harness("psroi_pool");
  roi_inputs(h, RILL_DTYPE_FP32, x, DIMS(1, 4, 4, 4), rois, 2, NULL, 0);
  OK(op_harness_output(h, "Out", "pooled"));
  pooled(h, 2, 2, 1.0f);
  OK(op_harness_attr_int(h, "output_channels", 1));
  EXPECT_ERROR(op_harness_run(h), "psroi_pool", "rois", "LoD");
  op_harness_destroy(h);
  h = harness("prroi_pool");
  roi_inputs(h, RILL_DTYPE_FP32, x, DIMS(2, 2, 4, 4), rois, 2, lod, 2);
  OK(op_harness_output(h, "Out", "pooled"));
  EXPECT_ERROR(op_harness_run(h), "prroi_pool", "rois", "1 images", "2");
  op_harness_destroy(h);
  const int64_t nums[] = {1, 2};
  h = harness("prroi_pool");
  roi_inputs(h, RILL_DTYPE_FP32, x, DIMS(2, 2, 4, 4), rois, 2, NULL, 0);
  bind_input(h, "BatchRoINums", "counts", RILL_DTYPE_INT64, DIMS(2), nums);
  OK(op_harness_output(h, "Out", "pooled"));
  EXPECT_ERROR(op_harness_run(h), "prroi_pool", "rois", "2 rows");
  op_harness_destroy(h);
  h = harness("prroi_pool");
  roi_inputs(h, RILL_DTYPE_FP32, x, DIMS(2, 2, 4, 4), rois, 2, NULL, 0);
  bind_input(h, "BatchRoINums", "counts", RILL_DTYPE_INT32, DIMS(2), (const int32_t[]){1, 1});
  OK(op_harness_output(h, "Out", "pooled"));
  EXPECT_ERROR(op_harness_infer(h), "prroi_pool", "counts", "int64 [N]");
  op_harness_destroy(h);
}
