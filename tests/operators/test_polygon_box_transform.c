/* polygon_box_transform: 4 * column - v on even channels, 4 * row - v on odd ones, for
 * every image; the errors (odd channel count, wrong rank). */
#include "op_test.h"

Test(polygon_box_transform, even_x_odd_y) {
  enum { N = 2, G = 4, H = 2, W = 3 };
  float in[N * G * H * W], want[N * G * H * W];
  for (int i = 0; i < N * G * H * W; i++) in[i] = (float)i * 0.5f - 3;
  for (int n = 0, i = 0; n < N; n++)
    for (int g = 0; g < G; g++)
      for (int r = 0; r < H; r++)
        for (int c = 0; c < W; c++, i++) want[i] = (float)(4 * (g % 2 ? r : c)) - in[i];
  op_harness *h = harness("polygon_box_transform");
  bind_input(h, "Input", "geo", RILL_DTYPE_FP32, DIMS(N, G, H, W), in);
  OK(op_harness_output(h, "Output", "quad"));
  OK(op_harness_run(h));
  const rill_tensor *o = op_harness_tensor(h, "quad");
  expect_dims(o, DIMS(N, G, H, W));
  expect_close_f32(rill_tensor_ptr(o), want, N * G * H * W, 0);
  /* Paddle's numbers for arange(24) as [1, 4, 2, 3]: channel 0 then channel 1 */
  op_harness_destroy(h);
  float a[24];
  for (int i = 0; i < 24; i++) a[i] = (float)i;
  h = harness("polygon_box_transform");
  bind_input(h, "Input", "geo", RILL_DTYPE_FP32, DIMS(1, 4, 2, 3), a);
  OK(op_harness_output(h, "Output", "quad"));
  OK(op_harness_run(h));
  const float pd[12] = {0, 3, 6, -3, 0, 3, -6, -7, -8, -5, -6, -7};
  expect_close_f32(rill_tensor_ptr(op_harness_tensor(h, "quad")), pd, 12, 0);
  op_harness_destroy(h);
}

Test(polygon_box_transform, errors_name_op_and_variable) {
  float in[3 * 4] = {0};
  op_harness *h = harness("polygon_box_transform");
  bind_input(h, "Input", "geo", RILL_DTYPE_FP32, DIMS(1, 3, 2, 2), in);
  OK(op_harness_output(h, "Output", "quad"));
  EXPECT_ERROR(op_harness_run(h), "polygon_box_transform", "geo", "G even");
  op_harness_destroy(h);
  h = harness("polygon_box_transform");
  bind_input(h, "Input", "geo3", RILL_DTYPE_FP32, DIMS(2, 2, 3), in);
  OK(op_harness_output(h, "Output", "quad"));
  EXPECT_ERROR(op_harness_infer(h), "polygon_box_transform", "geo3", "[N, G, H, W]");
  op_harness_destroy(h);
}
