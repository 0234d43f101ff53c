/* bilinear_tensor_product against a reference loop, its gradients (X, Y, Weight, Bias)
 * against finite differences, and its errors. */
#include "nn_test.h"

Test(bilinear_tensor_product, matches_reference) {
  double x[6], y[4], w[2 * 3 * 2], b[2] = {0.5, -0.25}, want[4];
  fill_rand(x, 6, 1);
  fill_rand(y, 4, 2);
  fill_rand(w, 12, 3);
  op_harness *h = harness("bilinear_tensor_product");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(2, 3), x);
  bind_input(h, "Y", "y", RILL_DTYPE_FP64, DIMS(2, 2), y);
  bind_input(h, "Weight", "w", RILL_DTYPE_FP64, DIMS(2, 3, 2), w);
  bind_input(h, "Bias", "b", RILL_DTYPE_FP64, DIMS(1, 2), b);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_run(h));
  for (int s = 0; s < 2; s++)
    for (int i = 0; i < 2; i++) {
      double acc = b[i];
      for (int m = 0; m < 3; m++)
        for (int n = 0; n < 2; n++) acc += x[s * 3 + m] * w[(i * 3 + m) * 2 + n] * y[s * 2 + n];
      want[s * 2 + i] = acc;
    }
  rill_tensor *out = op_harness_tensor(h, "out");
  expect_dims(out, DIMS(2, 2));
  expect_close_f64(rill_tensor_ptr(out), want, 4, 1e-12);
  op_harness_destroy(h);
}

Test(bilinear_tensor_product, gradients_match_finite_differences) {
  double x[6], y[8], w[2 * 3 * 4], b[2];
  fill_rand(x, 6, 4);
  fill_rand(y, 8, 5);
  fill_rand(w, 24, 6);
  fill_rand(b, 2, 7);
  for (int with_bias = 0; with_bias < 2; with_bias++) {
    fd_case fc = {.op = "bilinear_tensor_product", .out_slots = {"Out"}, .out_names = {"out"},
                  .nout = 1, .tol = 1e-7, .nin = 3 + with_bias};
    fc.in[0] = (fd_input){"X", "x", {2, 3}, 2, x, true};
    fc.in[1] = (fd_input){"Y", "y", {2, 4}, 2, y, true};
    fc.in[2] = (fd_input){"Weight", "w", {2, 3, 4}, 3, w, true};
    fc.in[3] = (fd_input){"Bias", "b", {1, 2}, 2, b, true};
    fd_check(&fc);
  }
}

Test(bilinear_tensor_product, bad_input_fails_naming_op_and_variable) {
  op_harness *h = harness("bilinear_tensor_product");
  bind_input(h, "X", "left", RILL_DTYPE_FP32, DIMS(2, 3), NULL);
  bind_input(h, "Y", "right", RILL_DTYPE_FP32, DIMS(2, 4), NULL);
  bind_input(h, "Weight", "w", RILL_DTYPE_FP32, DIMS(5, 3, 3), NULL);
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_infer(h), "bilinear_tensor_product", "X (left)", "Weight (w)",
               "[size, M, N]");
  op_harness_destroy(h);

  h = harness("bilinear_tensor_product");
  bind_input(h, "X", "left", RILL_DTYPE_FP32, DIMS(2, 3), NULL);
  bind_input(h, "Y", "right", RILL_DTYPE_FP32, DIMS(2, 4), NULL);
  bind_input(h, "Weight", "w", RILL_DTYPE_FP32, DIMS(5, 3, 4), NULL);
  bind_input(h, "Bias", "bias", RILL_DTYPE_FP32, DIMS(1, 4), NULL);
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_infer(h), "bilinear_tensor_product", "Bias (bias)", "[1, 5]");
  op_harness_destroy(h);
}
