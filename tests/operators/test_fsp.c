/* fsp against a reference loop, its gradients against finite differences, and its
 * errors. */
#include "nn_test.h"

#include "support/grad_check.h"

Test(fsp, matches_reference_and_finite_differences) {
  enum { N = 2, C1 = 3, C2 = 4, H = 2, W = 3, HW = H * W };
  double x[N * C1 * HW], y[N * C2 * HW], want[N * C1 * C2];
  fill_rand(x, N * C1 * HW, 111);
  fill_rand(y, N * C2 * HW, 112);
  for (int s = 0; s < N; s++)
    for (int i = 0; i < C1; i++)
      for (int j = 0; j < C2; j++) {
        double acc = 0;
        for (int p = 0; p < HW; p++) acc += x[(s * C1 + i) * HW + p] * y[(s * C2 + j) * HW + p];
        want[(s * C1 + i) * C2 + j] = acc / HW;
      }
  op_harness *h = harness("fsp");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(N, C1, H, W), x);
  bind_input(h, "Y", "y", RILL_DTYPE_FP64, DIMS(N, C2, H, W), y);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "out"), DIMS(N, C1, C2));
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "out")), want, N * C1 * C2, 1e-12);
  grad_check_opts o = {.rtol = 1e-6, .atol = 1e-6};
  OK(grad_check(h, GC_SLOTS("X", "Y"), GC_SLOTS("Out"), &o));
  op_harness_destroy(h);
}

Test(fsp, bad_input_fails_naming_op_and_variable) {
  op_harness *h = harness("fsp");
  bind_input(h, "X", "feat_a", RILL_DTYPE_FP32, DIMS(2, 3, 4, 4), NULL);
  bind_input(h, "Y", "feat_b", RILL_DTYPE_FP32, DIMS(2, 5, 4, 2), NULL);
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_infer(h), "fsp", "X (feat_a)", "Y (feat_b)", "height and width");
  op_harness_destroy(h);
}
