/* anchor_generator: Paddle's numbers for a hand-checked anchor (stride 8 x 12, ratio 0.5,
 * size 16 gives base 14 x 7, anchor 28 x 9.33), the order ratios outer and sizes inner,
 * centres stepping by the stride, the variances; the errors. */
#include "op_test.h"

static op_harness *ag_harness(rill_dtype dt, const void *feat, const int64_t *dims, size_t nd) {
  op_harness *h = harness("anchor_generator");
  bind_input(h, "Input", "feat", dt, dims, nd, feat);
  OK(op_harness_output(h, "Anchors", "anchors"));
  OK(op_harness_output(h, "Variances", "vars"));
  return h;
}

static void attr_floats(op_harness *h, const char *name, const float *v, size_t n) {
  rill_attr_value a = {.type = RILL_ATTR_FLOATS, .n = n, .list.floats = (float *)v};
  OK(op_harness_attr(h, name, &a));
}

Test(anchor_generator, paddle_numbers) {
  float feat[2 * 3] = {0};
  op_harness *h = ag_harness(RILL_DTYPE_FP32, feat, DIMS(1, 1, 2, 3));
  attr_floats(h, "anchor_sizes", (const float[]){16, 32}, 2);
  attr_floats(h, "aspect_ratios", (const float[]){0.5f, 1.0f}, 2);
  attr_floats(h, "variances", (const float[]){0.1f, 0.1f, 0.2f, 0.2f}, 4);
  attr_floats(h, "stride", (const float[]){8, 12}, 2);
  OK(op_harness_run(h));
  const rill_tensor *a = op_harness_tensor(h, "anchors");
  expect_dims(a, DIMS(2, 3, 4, 4));
  expect_dims(op_harness_tensor(h, "vars"), DIMS(2, 3, 4, 4));
  /* Paddle 1.8.5's first anchors of cell (0, 0): (ratio 0.5, size 16), (0.5, 32), (1, 16),
   * (1, 32); then cell (0, 1) starts 8 pixels to the right */
  const float want[] = {-10, 1.333333f, 17, 9.666667f, -24, -3.333334f, 31, 14.333334f,
                        -6, -0.666667f, 13, 11.666667f, -16, -7.333334f, 23, 18.333334f,
                        -2, 1.333333f, 25, 9.666667f};
  expect_close_f32(rill_tensor_ptr(a), want, 20, 1e-6f);
  const float *v = rill_tensor_ptr(op_harness_tensor(h, "vars"));
  for (int i = 0; i < 2 * 3 * 4 * 4; i++) cr_assert_float_eq(v[i], i % 4 < 2 ? 0.1f : 0.2f, 1e-7f);
  op_harness_destroy(h);
}

Test(anchor_generator, float64_rows_step_by_stride) {
  double feat[3 * 2] = {0};
  op_harness *h = ag_harness(RILL_DTYPE_FP64, feat, DIMS(1, 1, 3, 2));
  attr_floats(h, "anchor_sizes", (const float[]){64}, 1);
  attr_floats(h, "aspect_ratios", (const float[]){2.0f}, 1);
  attr_floats(h, "stride", (const float[]){16, 16}, 2);
  OK(op_harness_attr_float(h, "offset", 0.0f));
  OK(op_harness_run(h));
  const double *a = rill_tensor_ptr(op_harness_tensor(h, "anchors"));
  /* base_w = round(sqrt(128)) = 11, base_h = 22; scaled by 4: 44 x 88 */
  const double c0[4] = {-21.5, -43.5, 21.5, 43.5};
  for (int r = 0; r < 3; r++)
    for (int c = 0; c < 2; c++)
      for (int k = 0; k < 4; k++)
        cr_assert_float_eq(a[(r * 2 + c) * 4 + k], c0[k] + 16.0 * (k % 2 ? r : c), 1e-12);
  const double *v = rill_tensor_ptr(op_harness_tensor(h, "vars"));
  cr_assert_float_eq(v[2], 0.2, 1e-7); /* the default variances */
  op_harness_destroy(h);
}

Test(anchor_generator, errors_name_op_and_variable) {
  float feat[4] = {0};
  op_harness *h = ag_harness(RILL_DTYPE_FP32, feat, DIMS(1, 4));
  attr_floats(h, "anchor_sizes", (const float[]){16}, 1);
  attr_floats(h, "aspect_ratios", (const float[]){1}, 1);
  attr_floats(h, "stride", (const float[]){8, 8}, 2);
  EXPECT_ERROR(op_harness_infer(h), "anchor_generator", "feat", "[N, C, H, W]");
  op_harness_destroy(h);
  h = ag_harness(RILL_DTYPE_FP32, feat, DIMS(1, 1, 2, 2));
  attr_floats(h, "anchor_sizes", (const float[]){16}, 1);
  attr_floats(h, "aspect_ratios", (const float[]){1}, 1);
  attr_floats(h, "stride", (const float[]){8}, 1);
  EXPECT_ERROR(op_harness_run(h), "anchor_generator", "stride");
  attr_floats(h, "stride", (const float[]){8, 8}, 2);
  attr_floats(h, "anchor_sizes", (const float[]){-1}, 1);
  EXPECT_ERROR(op_harness_run(h), "anchor_generator", "anchor_sizes[0]");
  op_harness_destroy(h);
}
