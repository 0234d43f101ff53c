/* center_loss against a reference loop (loss, diffs and the centre update), its gradient
 * against finite differences, and its errors. */
#include "nn_test.h"

#include "support/grad_check.h"

enum { N = 5, D = 3, K = 4 };
static const int64_t LAB[N] = {2, 0, 2, 3, 2};

static op_harness *center_harness(const double *x, const double *c, double rate, bool update) {
  op_harness *h = harness("center_loss");
  bind_input(h, "X", "feat", RILL_DTYPE_FP64, DIMS(N, D), x);
  bind_input(h, "Label", "cls", RILL_DTYPE_INT64, DIMS(N, 1), LAB);
  bind_input(h, "Centers", "ctr", RILL_DTYPE_FP64, DIMS(K, D), c);
  bind_input(h, "CenterUpdateRate", "rate", RILL_DTYPE_FP64, DIMS(1), &rate);
  OK(op_harness_output(h, "CentersOut", "ctr_out"));
  OK(op_harness_output(h, "SampleCenterDiff", "diff"));
  OK(op_harness_output(h, "Loss", "loss"));
  OK(op_harness_attr_int(h, "cluster_num", K));
  OK(op_harness_attr_bool(h, "need_update", update));
  return h;
}

Test(center_loss, matches_reference_and_moves_the_centres) {
  double x[N * D], c[K * D], diff[N * D], loss[N], cout[K * D];
  fill_rand(x, N * D, 3);
  fill_rand(c, K * D, 4);
  double acc[K * D] = {0};
  int cnt[K] = {0};
  for (int i = 0; i < N; i++) {
    loss[i] = 0;
    for (int j = 0; j < D; j++) {
      diff[i * D + j] = x[i * D + j] - c[LAB[i] * D + j];
      loss[i] += diff[i * D + j] * diff[i * D + j] / 2;
      acc[LAB[i] * D + j] += diff[i * D + j];
    }
    cnt[LAB[i]]++;
  }
  for (int q = 0; q < K; q++)
    for (int j = 0; j < D; j++) cout[q * D + j] = c[q * D + j] + 0.3 * acc[q * D + j] / (cnt[q] + 1);
  for (int update = 0; update < 2; update++) {
    op_harness *h = center_harness(x, c, 0.3, update);
    OK(op_harness_run(h));
    expect_dims(op_harness_tensor(h, "loss"), DIMS(N, 1));
    expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "loss")), loss, N, 1e-12);
    expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "diff")), diff, N * D, 1e-12);
    expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "ctr_out")), update ? cout : c,
                     K * D, 1e-12);
    op_harness_destroy(h);
  }
}

Test(center_loss, gradient_matches_finite_differences) {
  double x[N * D], c[K * D];
  fill_rand(x, N * D, 5);
  fill_rand(c, K * D, 6);
  op_harness *h = center_harness(x, c, 0.5, false);
  grad_check_opts o = {.rtol = 1e-6, .atol = 1e-6};
  OK(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Loss"), &o));
  op_harness_destroy(h);
}

/* A center_loss updating its centres in place ("ctr" both input and output), with a
 * Label of dtype lt and Centers of centre_dims. */
static op_harness *in_place(const double *x, rill_dtype lt, const int64_t *lab,
                            const int64_t *centre_dims, const double *c, const double *rate) {
  op_harness *h = harness("center_loss");
  bind_input(h, "X", "feat", RILL_DTYPE_FP64, DIMS(N, D), x);
  bind_input(h, "Label", "cls", lt, DIMS(N, 1), lab);
  bind_input(h, "Centers", "ctr", RILL_DTYPE_FP64, centre_dims, 2, c);
  bind_input(h, "CenterUpdateRate", "rate", RILL_DTYPE_FP64, DIMS(1), rate);
  OK(op_harness_output(h, "CentersOut", "ctr"));
  OK(op_harness_output(h, "SampleCenterDiff", "diff"));
  OK(op_harness_output(h, "Loss", "loss"));
  OK(op_harness_attr_int(h, "cluster_num", K));
  OK(op_harness_attr_bool(h, "need_update", true));
  return h;
}

Test(center_loss, bad_input_fails_naming_op_and_variable) {
  double x[N * D] = {0}, c[K * D] = {0}, rate = 0.1;
  op_harness *h = in_place(x, RILL_DTYPE_INT64, LAB, (int64_t[]){K, D + 1}, NULL, &rate);
  EXPECT_ERROR(op_harness_infer(h), "center_loss", "Centers (ctr)", "cluster_num = 4");
  op_harness_destroy(h);

  h = in_place(x, RILL_DTYPE_INT32, NULL, (int64_t[]){K, D}, c, &rate);
  EXPECT_ERROR(op_harness_infer(h), "center_loss", "Label (cls)", "int64");
  op_harness_destroy(h);

  /* a class outside [0, cluster_num) fails at run time and leaves the centres alone */
  static const int64_t bad[N] = {0, 1, 4, 0, 1};
  fill_rand(c, K * D, 8);
  h = in_place(x, RILL_DTYPE_INT64, bad, (int64_t[]){K, D}, c, &rate);
  EXPECT_ERROR(op_harness_run(h), "center_loss", "Label (cls)", "class 4 in row 2");
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "ctr")), c, K * D, 0);
  op_harness_destroy(h);
}
