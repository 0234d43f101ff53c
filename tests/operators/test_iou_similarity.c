/* iou_similarity: hand-computed overlaps (normalised and pixel boxes, disjoint boxes),
 * X's LoD carried to Out, a naive reference on float64, and the errors. */
#include "op_test.h"

static op_harness *iou_harness(const float *x, int64_t n, const float *y, int64_t m, bool norm) {
  op_harness *h = harness("iou_similarity");
  bind_input(h, "X", "gt_box", RILL_DTYPE_FP32, DIMS(n, 4), x);
  bind_input(h, "Y", "prior", RILL_DTYPE_FP32, DIMS(m, 4), y);
  OK(op_harness_output(h, "Out", "iou"));
  OK(op_harness_attr_bool(h, "box_normalized", norm));
  return h;
}

Test(iou_similarity, hand_computed) {
  const float x[] = {0, 0, 2, 2, 1, 1, 3, 4};
  const float y[] = {1, 1, 2, 2, 0, 0, 1, 1, 5, 5, 6, 6};
  op_harness *h = iou_harness(x, 2, y, 3, true);
  OK(op_harness_run(h));
  const rill_tensor *o = op_harness_tensor(h, "iou");
  expect_dims(o, DIMS(2, 3));
  /* [0,0,2,2] with [1,1,2,2]: 1 / 4; with [0,0,1,1]: 1 / 4; [1,1,3,4] (area 6) with
   * [1,1,2,2]: 1 / 6; with [0,0,1,1]: touching only, 0 */
  const float want[] = {0.25f, 0.25f, 0, 1.f / 6, 0, 0};
  expect_close_f32(rill_tensor_ptr(o), want, 6, 1e-6f);
  op_harness_destroy(h);
  /* pixel boxes count both ends: [0,0,2,2] is 3 x 3, [1,1,2,2] 2 x 2 inside it */
  h = iou_harness(x, 1, y, 2, false);
  OK(op_harness_run(h));
  const float wantp[] = {4.f / 9, 4.f / 9};
  expect_close_f32(rill_tensor_ptr(op_harness_tensor(h, "iou")), wantp, 2, 1e-6f);
  op_harness_destroy(h);
}

Test(iou_similarity, lod_and_float64) {
  enum { N = 5, M = 4 };
  double x[N * 4], y[M * 4], want[N * M];
  for (int i = 0; i < N * 4; i += 4) {
    x[i] = 0.1 * i; x[i + 1] = 0.05 * i; x[i + 2] = x[i] + 1 + 0.1 * i; x[i + 3] = x[i + 1] + 2;
  }
  for (int i = 0; i < M * 4; i += 4) {
    y[i] = 0.2 * i; y[i + 1] = 0.3; y[i + 2] = y[i] + 1.5; y[i + 3] = 1.8 + 0.1 * i;
  }
  for (int i = 0; i < N; i++)
    for (int j = 0; j < M; j++) {
      const double *a = x + i * 4, *b = y + j * 4;
      double iw = fmin(a[2], b[2]) - fmax(a[0], b[0]), ih = fmin(a[3], b[3]) - fmax(a[1], b[1]);
      double in = fmax(iw, 0) * fmax(ih, 0);
      want[i * M + j] = in / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - in);
    }
  op_harness *h = harness("iou_similarity");
  rill_tensor *xt = op_harness_make(RILL_DTYPE_FP64, DIMS(N, 4), x);
  const uint64_t lod[] = {0, 2, 5};
  size_t nl = 3;
  OK(rill_tensor_set_lod(xt, 1, (const uint64_t *const[]){lod}, &nl));
  OK(op_harness_input(h, "X", "gt_box", xt));
  op_harness_free_tensor(xt);
  bind_input(h, "Y", "prior", RILL_DTYPE_FP64, DIMS(M, 4), y);
  OK(op_harness_output(h, "Out", "iou"));
  OK(op_harness_run(h));
  const rill_tensor *o = op_harness_tensor(h, "iou");
  expect_dims(o, DIMS(N, M));
  expect_close_f64(rill_tensor_ptr(o), want, N * M, 1e-12);
  cr_assert(o->lod.nlevels == 1 && o->lod.levels[0].n == 3 && o->lod.levels[0].offsets[1] == 2);
  op_harness_destroy(h);
}

Test(iou_similarity, errors_name_op_and_variable) {
  float b[12] = {0};
  op_harness *h = harness("iou_similarity");
  bind_input(h, "X", "gt_box", RILL_DTYPE_FP32, DIMS(2, 6), b);
  bind_input(h, "Y", "prior", RILL_DTYPE_FP32, DIMS(3, 4), b);
  OK(op_harness_output(h, "Out", "iou"));
  EXPECT_ERROR(op_harness_infer(h), "iou_similarity", "gt_box", "[N, 4]");
  op_harness_destroy(h);
  h = harness("iou_similarity");
  bind_input(h, "X", "gt_box", RILL_DTYPE_FP32, DIMS(3, 4), b);
  bind_input(h, "Y", "prior64", RILL_DTYPE_FP64, DIMS(1, 4), b);
  OK(op_harness_output(h, "Out", "iou"));
  EXPECT_ERROR(op_harness_run(h), "iou_similarity", "prior64", "float64");
  op_harness_destroy(h);
}
