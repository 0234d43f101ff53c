/* roi_perspective_transform: the shapes of Out, Mask and TransformMatrix, an axis-aligned
 * rectangle (a plain bilinear crop-resize), a trapezoid's hand-computed homography with its
 * corners landing on the grid's corners, samples outside the map masked, the gradient
 * against finite differences and the errors naming op and variable. */
#include "op_test.h"
#include "support/grad_check.h"

static void persp_inputs(op_harness *h, rill_dtype dt, const void *x, const int64_t *xd, size_t nx,
                         const void *rois, int64_t r, const uint64_t *lod, size_t nl) {
  bind_input(h, "X", "feat", dt, xd, nx, x);
  rill_tensor *t = op_harness_make(dt, DIMS(r, 8), rois);
  cr_assert_not_null(t);
  if (lod) OK(rill_tensor_set_lod(t, 1, (const uint64_t *const[]){lod}, &nl));
  OK(op_harness_input(h, "ROIs", "quads", t));
  op_harness_free_tensor(t);
}

static void persp_attrs(op_harness *h, int th, int tw, float scale) {
  OK(op_harness_attr_int(h, "transformed_height", th));
  OK(op_harness_attr_int(h, "transformed_width", tw));
  OK(op_harness_attr_float(h, "spatial_scale", scale));
}

static void persp_outputs(op_harness *h) {
  OK(op_harness_output(h, "Out", "warped"));
  OK(op_harness_output(h, "Mask", "mask"));
  OK(op_harness_output(h, "TransformMatrix", "matrix"));
}

/* X at an interior point (x, y) of an h x w plane, bilinearly. */
static double bilinear(const double *p, int w, double x, double y) {
  int x0 = (int)floor(x), y0 = (int)floor(y);
  double lx = x - x0, ly = y - y0;
  double v00 = p[y0 * w + x0], v01 = lx > 0 ? p[y0 * w + x0 + 1] : 0;
  double v10 = ly > 0 ? p[(y0 + 1) * w + x0] : 0, v11 = lx > 0 && ly > 0 ? p[(y0 + 1) * w + x0 + 1] : 0;
  return (1 - lx) * (1 - ly) * v00 + lx * (1 - ly) * v01 + (1 - lx) * ly * v10 + lx * ly * v11;
}

/* A rectangle 3 wide and 2 high on a 3 x 4 grid: the homography is affine and the output
 * samples the rectangle at its grid points, as a bilinear crop-resize. Two images, with
 * spatial_scale halving the ROI coordinates. */
Test(roi_perspective_transform, rectangle_is_bilinear_crop) {
  enum { N = 2, C = 2, H = 5, W = 6, TH = 3, TW = 4 };
  double x[N * C * H * W];
  for (int i = 0; i < N * C * H * W; i++) x[i] = sin(i * 0.61) * 3 + cos(i * 0.17);
  /* on the map: (0.5, 1) (3.5, 1) (3.5, 3) (0.5, 3), then (1.25, 0.5) ... (4.25, 2.5) */
  const double rois[] = {1, 2, 7, 2, 7, 6, 1, 6, 2.5, 1, 8.5, 1, 8.5, 5, 2.5, 5};
  const uint64_t lod[] = {0, 1, 2};
  op_harness *h = harness("roi_perspective_transform");
  persp_inputs(h, RILL_DTYPE_FP64, x, DIMS(N, C, H, W), rois, 2, lod, 3);
  persp_outputs(h);
  persp_attrs(h, TH, TW, 0.5f);
  OK(op_harness_run(h));
  const rill_tensor *o = op_harness_tensor(h, "warped"), *m = op_harness_tensor(h, "mask");
  const rill_tensor *t = op_harness_tensor(h, "matrix");
  expect_dims(o, DIMS(2, C, TH, TW));
  expect_dims(m, DIMS(2, 1, TH, TW));
  expect_dims(t, DIMS(2, 9));
  cr_assert_eq(m->dtype, RILL_DTYPE_INT32);
  const double *op = rill_tensor_ptr(o), *tp = rill_tensor_ptr(t);
  const int32_t *mp = rill_tensor_ptr(m);
  const double left[] = {0.5, 1.25}, top[] = {1, 0.5};
  for (int n = 0; n < 2; n++) {
    const double want_m[] = {1, 0, left[n], 0, 1, top[n], 0, 0, 1};
    for (int k = 0; k < 9; k++)
      cr_assert_float_eq(tp[n * 9 + k], want_m[k], 1e-5, "roi %d matrix[%d] = %g", n, k, tp[n * 9 + k]);
    for (int c = 0; c < C; c++)
      for (int i = 0; i < TH; i++)
        for (int j = 0; j < TW; j++) {
          double want = bilinear(x + (n * C + c) * H * W, W, left[n] + j, top[n] + i);
          cr_assert_float_eq(op[((n * C + c) * TH + i) * TW + j], want, 1e-4,
                             "roi %d c %d (%d, %d)", n, c, i, j);
          cr_assert_eq(mp[(n * TH + i) * TW + j], 1);
        }
  }
  op_harness_destroy(h);
}

/* The trapezoid (0, 0) (4, 0) (3, 2) (1, 2): sides 4, sqrt 5, 2, sqrt 5, so the grid is
 * normalized to 3 x round(3 * 2 / sqrt 5) + 1 = 4 points; dx1 = 1, dx2 = -2, dx3 = -2,
 * dy1 = -2, dy2 = dy3 = 0 give a31 = 0, a32 = -4 / (-4 + 1e-5) / 2, and the rest follows.
 * The bottom-left corner lands on output (h 2, w 0), the bottom-right on (2, 3); output
 * columns past 3 fall outside the quadrilateral and are masked. */
Test(roi_perspective_transform, trapezoid_matrix_by_hand) {
  enum { H = 4, W = 6, TH = 3, TW = 5 };
  float x[H * W];
  for (int i = 0; i < H * W; i++) x[i] = (float)(i * 3 % 7) + 0.5f;
  const float rois[] = {0, 0, 4, 0, 3, 2, 1, 2};
  const uint64_t lod[] = {0, 1};
  op_harness *h = harness("roi_perspective_transform");
  persp_inputs(h, RILL_DTYPE_FP32, x, DIMS(1, 1, H, W), rois, 1, lod, 2);
  persp_outputs(h);
  persp_attrs(h, TH, TW, 1.0f);
  OK(op_harness_run(h));
  double a32 = -4.0 / (-4.0 + 1e-5) / 2.0;
  const double want[9] = {4.0 / 3, 0.5 + a32, 0, 0, 1 + 2 * a32, 0, 0, a32, 1};
  const float *tp = rill_tensor_ptr(op_harness_tensor(h, "matrix"));
  for (int k = 0; k < 9; k++) cr_assert_float_eq(tp[k], want[k], 1e-5, "matrix[%d] = %g", k, tp[k]);
  const float *op = rill_tensor_ptr(op_harness_tensor(h, "warped"));
  const int32_t *mp = rill_tensor_ptr(op_harness_tensor(h, "mask"));
  cr_assert_float_eq(op[0], x[0], 1e-5);                /* (0, 0) -> top left */
  cr_assert_float_eq(op[2 * TW + 0], x[2 * W + 1], 1e-4); /* (2, 0) -> (1, 2) */
  cr_assert_float_eq(op[2 * TW + 3], x[2 * W + 3], 1e-4); /* (2, 3) -> (3, 2) */
  cr_assert_eq(mp[2 * TW + 3], 1);
  for (int i = 0; i < TH; i++) {
    cr_assert_eq(mp[i * TW + 4], 0, "row %d column 4 is outside the quadrilateral", i);
    cr_assert_float_eq(op[i * TW + 4], 0, 0);
  }
  op_harness_destroy(h);
}

/* A quadrilateral reaching past the map: samples half a pixel or more outside are 0. */
Test(roi_perspective_transform, outside_the_map_is_masked) {
  float x[3 * 3];
  for (int i = 0; i < 9; i++) x[i] = 2.0f;
  const float rois[] = {-2, 0, 2, 0, 2, 2, -2, 2};
  const uint64_t lod[] = {0, 1};
  op_harness *h = harness("roi_perspective_transform");
  persp_inputs(h, RILL_DTYPE_FP32, x, DIMS(1, 1, 3, 3), rois, 1, lod, 2);
  persp_outputs(h);
  persp_attrs(h, 3, 5, 1.0f);
  OK(op_harness_run(h));
  /* source x = -2, -1, 0, 1, 2 on every row */
  const float *op = rill_tensor_ptr(op_harness_tensor(h, "warped"));
  const int32_t *mp = rill_tensor_ptr(op_harness_tensor(h, "mask"));
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 5; j++) {
      cr_assert_eq(mp[i * 5 + j], j >= 2, "(%d, %d)", i, j);
      cr_assert_float_eq(op[i * 5 + j], j >= 2 ? 2.0f : 0.0f, 1e-5, "(%d, %d)", i, j);
    }
  op_harness_destroy(h);
}

Test(roi_perspective_transform, gradient_matches_finite_differences) {
  enum { N = 2, C = 2, H = 5, W = 6 };
  double x[N * C * H * W];
  for (int i = 0; i < N * C * H * W; i++) x[i] = sin(i * 0.37) * 2;
  const double rois[] = {0.6, 0.3, 4.7, 1.1, 4.2, 3.9, 0.9, 3.2, /* image 0 */
                         1.2, 0.4, 5.1, 0.2, 5.3, 4.6, 0.7, 4.1, /* image 1 */
                         2.0, 1.0, 6.5, 2.5, 5.0, 5.5, 0.5, 4.5};
  const uint64_t lod[] = {0, 1, 3};
  op_harness *h = harness("roi_perspective_transform");
  persp_inputs(h, RILL_DTYPE_FP64, x, DIMS(N, C, H, W), rois, 3, lod, 3);
  OK(op_harness_output(h, "Out", "warped"));
  persp_attrs(h, 3, 4, 0.9f);
  OK(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), NULL));
  op_harness_destroy(h);
}

Test(roi_perspective_transform, errors_name_op_and_variable) {
  float x[2 * 16] = {0}, rois[16] = {0, 0, 2, 0, 2, 2, 0, 2, 1, 1, 3, 1, 3, 3, 1, 3};
  const uint64_t lod[] = {0, 2};
  op_harness *h = harness("roi_perspective_transform");
  persp_inputs(h, RILL_DTYPE_FP32, x, DIMS(2, 1, 4, 4), rois, 2, lod, 2);
  OK(op_harness_output(h, "Out", "warped"));
  EXPECT_ERROR(op_harness_run(h), "roi_perspective_transform", "quads", "1 images", "2");
  op_harness_destroy(h);
  h = harness("roi_perspective_transform");
  persp_inputs(h, RILL_DTYPE_FP32, x, DIMS(1, 1, 4, 4), rois, 2, NULL, 0);
  OK(op_harness_output(h, "Out", "warped"));
  EXPECT_ERROR(op_harness_run(h), "roi_perspective_transform", "quads", "LoD");
  op_harness_destroy(h);
  h = harness("roi_perspective_transform");
  persp_inputs(h, RILL_DTYPE_FP32, x, DIMS(1, 1, 4, 4), rois, 2, lod, 2);
  OK(op_harness_output(h, "Out", "warped"));
  persp_attrs(h, 0, 2, 1.0f);
  EXPECT_ERROR(op_harness_run(h), "roi_perspective_transform", "transformed_height");
  op_harness_destroy(h);
  h = harness("roi_perspective_transform");
  bind_input(h, "X", "feat", RILL_DTYPE_FP32, DIMS(1, 1, 4, 4), x);
  bind_input(h, "ROIs", "boxes4", RILL_DTYPE_FP32, DIMS(4, 4), rois);
  OK(op_harness_output(h, "Out", "warped"));
  EXPECT_ERROR(op_harness_infer(h), "roi_perspective_transform", "boxes4", "[R, 8]");
  op_harness_destroy(h);
}
