/* affine_grid against a reference grid (attribute and input output shapes), its gradient
 * against finite differences, and its errors. */
#include "nn_test.h"

#include "support/grad_check.h"

enum { N = 2, H = 3, W = 4 };

static void reference(const double *th, double *out) {
  for (int s = 0; s < N; s++)
    for (int i = 0; i < H; i++)
      for (int j = 0; j < W; j++) {
        double x = -1 + 2.0 * j / (W - 1), y = -1 + 2.0 * i / (H - 1);
        const double *t = th + s * 6;
        double *o = out + ((s * H + i) * W + j) * 2;
        o[0] = t[0] * x + t[1] * y + t[2];
        o[1] = t[3] * x + t[4] * y + t[5];
      }
}

Test(affine_grid, matches_reference_and_finite_differences) {
  double th[N * 6], want[N * H * W * 2];
  fill_rand(th, N * 6, 121);
  reference(th, want);
  static const int32_t shape[4] = {N, 5, H, W};
  for (int from_input = 0; from_input < 2; from_input++) {
    op_harness *h = harness("affine_grid");
    bind_input(h, "Theta", "theta", RILL_DTYPE_FP64, DIMS(N, 2, 3), th);
    if (from_input)
      bind_input(h, "OutputShape", "shape", RILL_DTYPE_INT32, DIMS(4), shape);
    else
      OK(op_harness_attr_ints(h, "output_shape", shape, 4));
    OK(op_harness_output(h, "Output", "grid"));
    OK(op_harness_run(h));
    expect_dims(op_harness_tensor(h, "grid"), DIMS(N, H, W, 2));
    expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "grid")), want, N * H * W * 2, 1e-12);
    grad_check_opts o = {.rtol = 1e-6, .atol = 1e-6};
    OK(grad_check(h, GC_SLOTS("Theta"), GC_SLOTS("Output"), &o));
    op_harness_destroy(h);
  }
}

Test(affine_grid, bad_input_fails_naming_op_and_variable) {
  op_harness *h = harness("affine_grid");
  bind_input(h, "Theta", "theta", RILL_DTYPE_FP32, DIMS(N, 3, 3), NULL);
  OK(op_harness_attr_ints(h, "output_shape", (const int32_t[]){N, 1, H, W}, 4));
  OK(op_harness_output(h, "Output", "grid"));
  EXPECT_ERROR(op_harness_infer(h), "affine_grid", "Theta (theta)", "[N, 2, 3]");
  op_harness_destroy(h);

  h = harness("affine_grid");
  bind_input(h, "Theta", "theta", RILL_DTYPE_FP32, DIMS(N, 2, 3), NULL);
  OK(op_harness_attr_ints(h, "output_shape", (const int32_t[]){N, H, W}, 3));
  OK(op_harness_output(h, "Output", "grid"));
  EXPECT_ERROR(op_harness_infer(h), "affine_grid", "output_shape holds 3");
  op_harness_destroy(h);

  double th[N * 6] = {0};
  h = harness("affine_grid");
  bind_input(h, "Theta", "theta", RILL_DTYPE_FP64, DIMS(N, 2, 3), th);
  bind_input(h, "OutputShape", "shape", RILL_DTYPE_INT32, DIMS(3), (const int32_t[]){N, H, W});
  OK(op_harness_output(h, "Output", "grid"));
  EXPECT_ERROR(op_harness_run(h), "affine_grid", "OutputShape (shape)", "4 int32");
  op_harness_destroy(h);
}
