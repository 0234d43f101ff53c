/* bmm, dot, cross, dist and addmm: shapes from inference, numbers against reference
 * loops, gradients against finite differences, and errors naming op and variable. */
#include "nn_test.h"

static op_harness *run_xy(const char *op, const int64_t *xd, size_t xn, const double *x,
                          const int64_t *yd, size_t yn, const double *y) {
  op_harness *h = harness(op);
  bind_input(h, "X", "x", RILL_DTYPE_FP64, xd, xn, x);
  bind_input(h, "Y", "y", RILL_DTYPE_FP64, yd, yn, y);
  OK(op_harness_output(h, "Out", "out"));
  return h;
}

Test(linalg, bmm_and_dot_numbers) {
  double x[12], y[12];
  fill_rand(x, 12, 1);
  fill_rand(y, 12, 2);
  op_harness *h = run_xy("bmm", DIMS(2, 2, 3), x, DIMS(2, 3, 2), y);
  OK(op_harness_run(h));
  rill_tensor *out = op_harness_tensor(h, "out");
  expect_dims(out, DIMS(2, 2, 2));
  double want[8];
  for (int b = 0; b < 2; b++)
    for (int m = 0; m < 2; m++)
      for (int n = 0; n < 2; n++) {
        double s = 0;
        for (int k = 0; k < 3; k++) s += x[b * 6 + m * 3 + k] * y[b * 6 + k * 2 + n];
        want[b * 4 + m * 2 + n] = s;
      }
  expect_close_f64(rill_tensor_ptr(out), want, 8, 1e-12);
  op_harness_destroy(h);

  h = run_xy("dot", DIMS(3, 4), x, DIMS(3, 4), y);
  OK(op_harness_run(h));
  out = op_harness_tensor(h, "out");
  expect_dims(out, DIMS(3, 1));
  for (int r = 0; r < 3; r++) {
    double s = 0;
    for (int j = 0; j < 4; j++) s += x[r * 4 + j] * y[r * 4 + j];
    want[r] = s;
  }
  expect_close_f64(rill_tensor_ptr(out), want, 3, 1e-12);
  op_harness_destroy(h);
}

Test(linalg, cross_dist_addmm_numbers) {
  double x[6] = {0, 1, 2, 3, 4, 5}, y[6] = {-2, -1, 0, 1, 2, 3};
  op_harness *h = run_xy("cross", DIMS(2, 3), x, DIMS(2, 3), y);
  OK(op_harness_run(h));
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "out")),
                   (double[]){2, -4, 2, 2, -4, 2}, 6, 0); /* Paddle 1.8.5's */
  op_harness_destroy(h);

  /* Paddle 1.8.5: dist([[0,1,2],[3,4,5]], [-2,-1,0], p) for p = 0, 1, 2, 3.5, inf, -inf */
  const float ps[] = {0, 1, 2, 3.5f, INFINITY, -INFINITY};
  const double wants[] = {6, 21, 9.32737922668457, 6.921719551086426, 5, 2};
  for (int i = 0; i < 6; i++) {
    h = run_xy("dist", DIMS(2, 3), x, DIMS(3), y);
    OK(op_harness_attr_float(h, "p", ps[i]));
    OK(op_harness_run(h));
    rill_tensor *out = op_harness_tensor(h, "out");
    expect_dims(out, DIMS(1));
    expect_close_f64(rill_tensor_ptr(out), &wants[i], 1, 1e-6);
    op_harness_destroy(h);
  }

  h = harness("addmm");
  bind_input(h, "Input", "in", RILL_DTYPE_FP64, DIMS(1, 2), (double[]){1, 2});
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(2, 3), x);
  bind_input(h, "Y", "y", RILL_DTYPE_FP64, DIMS(3, 2), (double[]){-2, 1, -1, 2, 0, 3});
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_float(h, "Alpha", 2.0f));
  OK(op_harness_attr_float(h, "Beta", 0.5f));
  OK(op_harness_run(h));
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "out")),
                   (double[]){-1.5, 17, -19.5, 53}, 4, 1e-12); /* Paddle 1.8.5's */
  op_harness_destroy(h);
}

static void xy_grad(const char *op, const int64_t *xd, size_t xn, const int64_t *yd, size_t yn,
                    void (*attrs)(op_harness *, const void *), const void *arg) {
  double x[64], y[64];
  fill_rand(x, numel_of(xd, xn), 5);
  fill_rand(y, numel_of(yd, yn), 6);
  fd_case fc = {.op = op, .out_slots = {"Out"}, .out_names = {"out"}, .nout = 1,
                .attrs = attrs, .arg = arg, .tol = 1e-6};
  fc.in[0] = (fd_input){"X", "x", {0}, xn, x, true};
  memcpy(fc.in[0].dims, xd, xn * sizeof(int64_t));
  fc.in[1] = (fd_input){"Y", "y", {0}, yn, y, true};
  memcpy(fc.in[1].dims, yd, yn * sizeof(int64_t));
  fc.nin = 2;
  fd_check(&fc);
}

static void set_p(op_harness *h, const void *arg) {
  OK(op_harness_attr_float(h, "p", *(const float *)arg));
}
static void set_dim(op_harness *h, const void *arg) {
  OK(op_harness_attr_int(h, "dim", *(const int *)arg));
}

Test(linalg, gradients_match_finite_differences) {
  xy_grad("bmm", DIMS(2, 3, 4), DIMS(2, 4, 2), NULL, NULL);
  xy_grad("dot", DIMS(3, 5), DIMS(3, 5), NULL, NULL);
  xy_grad("dot", DIMS(6), DIMS(6), NULL, NULL);
  xy_grad("cross", DIMS(2, 3), DIMS(2, 3), NULL, NULL);
  int dim = 1;
  xy_grad("cross", DIMS(2, 3, 4), DIMS(2, 3, 4), set_dim, &dim);
  float p2 = 2, p35 = 3.5f, p1 = 1;
  xy_grad("dist", DIMS(3, 4), DIMS(3, 4), set_p, &p2);
  xy_grad("dist", DIMS(3, 4), DIMS(4), set_p, &p35);
  xy_grad("dist", DIMS(2, 1, 3), DIMS(4, 1), set_p, &p1);

  double in[6], x[12], y[8];
  fill_rand(in, 6, 7);
  fill_rand(x, 12, 8);
  fill_rand(y, 8, 9);
  const int64_t in_dims[3][2] = {{3, 2}, {1, 2}, {3, 1}};
  for (int c = 0; c < 3; c++) {
    fd_case fc = {.op = "addmm", .out_slots = {"Out"}, .out_names = {"out"}, .nout = 1,
                  .tol = 1e-6, .nin = 3};
    fc.in[0] = (fd_input){"Input", "in", {in_dims[c][0], in_dims[c][1]}, 2, in, true};
    fc.in[1] = (fd_input){"X", "x", {3, 4}, 2, x, true};
    fc.in[2] = (fd_input){"Y", "y", {4, 2}, 2, y, true};
    fd_check(&fc);
  }
}

Test(linalg, bad_input_fails_naming_op_and_variable) {
  op_harness *h = run_xy("bmm", DIMS(2, 3, 4), NULL, DIMS(2, 3, 2), NULL);
  EXPECT_ERROR(op_harness_infer(h), "bmm", "X (x)", "Y (y)", "[B, K, N]");
  op_harness_destroy(h);
  h = run_xy("dot", DIMS(2, 3), NULL, DIMS(3, 2), NULL);
  EXPECT_ERROR(op_harness_infer(h), "dot", "X (x)", "1-D or 2-D");
  op_harness_destroy(h);
  h = run_xy("cross", DIMS(2, 4), NULL, DIMS(2, 4), NULL);
  EXPECT_ERROR(op_harness_infer(h), "cross", "X (x)", "no dim has extent 3");
  op_harness_destroy(h);
  h = run_xy("cross", DIMS(3, 4), NULL, DIMS(3, 4), NULL);
  OK(op_harness_attr_int(h, "dim", 1));
  EXPECT_ERROR(op_harness_infer(h), "cross", "X (x)", "dim 1 has extent 4");
  op_harness_destroy(h);
  h = run_xy("dist", DIMS(2, 3), NULL, DIMS(2), NULL);
  EXPECT_ERROR(op_harness_infer(h), "dist", "X (x)", "do not broadcast");
  op_harness_destroy(h);

  h = harness("addmm");
  bind_input(h, "Input", "bias", RILL_DTYPE_FP32, DIMS(2, 2), NULL);
  bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(3, 4), NULL);
  bind_input(h, "Y", "y", RILL_DTYPE_FP32, DIMS(4, 2), NULL);
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_infer(h), "addmm", "Input (bias)", "does not broadcast");
  op_harness_destroy(h);

  /* the kernels check what they are given too */
  double v[12] = {0};
  h = run_xy("dot", DIMS(3, 4), v, DIMS(4, 3), v);
  EXPECT_ERROR(op_harness_run(h), "dot", "X (x)");
  op_harness_destroy(h);
}
