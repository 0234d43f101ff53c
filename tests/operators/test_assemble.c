/* meshgrid, diag_embed, multiplex and allclose: shapes, numbers (Paddle 1.8.5's where
 * noted), the gradients of meshgrid and multiplex against finite differences, and
 * errors naming op and variable. */
#include "nn_test.h"

Test(assemble, meshgrid_numbers_and_shapes) {
  op_harness *h = harness("meshgrid");
  bind_input(h, "X", "a", RILL_DTYPE_FP32, DIMS(2), (float[]){0, 1});
  bind_input(h, "X", "b", RILL_DTYPE_FP32, DIMS(3), (float[]){-2, -1, 0});
  OK(op_harness_output(h, "Out", "ga"));
  OK(op_harness_output(h, "Out", "gb"));
  OK(op_harness_run(h));
  rill_tensor *ga = op_harness_tensor(h, "ga"), *gb = op_harness_tensor(h, "gb");
  expect_dims(ga, DIMS(2, 3));
  expect_close_f32(rill_tensor_ptr(ga), (float[]){0, 0, 0, 1, 1, 1}, 6, 0);
  expect_close_f32(rill_tensor_ptr(gb), (float[]){-2, -1, 0, -2, -1, 0}, 6, 0);
  op_harness_destroy(h);
}

Test(assemble, diag_embed_as_paddle) {
  float x[6] = {0, 1, 2, 3, 4, 5};
  op_harness *h = harness("diag_embed");
  bind_input(h, "Input", "x", RILL_DTYPE_FP32, DIMS(2, 3), x);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_int(h, "offset", 1));
  OK(op_harness_attr_int(h, "dim1", 0));
  OK(op_harness_attr_int(h, "dim2", 2));
  OK(op_harness_run(h));
  rill_tensor *out = op_harness_tensor(h, "out");
  expect_dims(out, DIMS(4, 2, 4));
  float want[32] = {0};
  /* Paddle 1.8.5: out[i, b, i + 1] = x[b, i] */
  for (int b = 0; b < 2; b++)
    for (int i = 0; i < 3; i++) want[i * 8 + b * 4 + i + 1] = x[b * 3 + i];
  expect_close_f32(rill_tensor_ptr(out), want, 32, 0);
  op_harness_destroy(h);

  h = harness("diag_embed");
  bind_input(h, "Input", "x", RILL_DTYPE_INT64, DIMS(2), (int64_t[]){7, 8});
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_int(h, "offset", -1));
  OK(op_harness_run(h));
  out = op_harness_tensor(h, "out");
  expect_dims(out, DIMS(3, 3));
  const int64_t *o = rill_tensor_ptr(out);
  const int64_t w[9] = {0, 0, 0, 7, 0, 0, 0, 8, 0};
  for (int i = 0; i < 9; i++) cr_assert_eq(o[i], w[i], "element %d: %lld", i, (long long)o[i]);
  op_harness_destroy(h);
}

Test(assemble, multiplex_and_allclose_numbers) {
  op_harness *h = harness("multiplex");
  bind_input(h, "Ids", "ids", RILL_DTYPE_INT32, DIMS(3, 1), (int32_t[]){1, 0, 1});
  bind_input(h, "X", "a", RILL_DTYPE_FP64, DIMS(3, 2), (double[]){1, 2, 3, 4, 5, 6});
  bind_input(h, "X", "b", RILL_DTYPE_FP64, DIMS(3, 2), (double[]){-1, -2, -3, -4, -5, -6});
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_run(h));
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "out")),
                   (double[]){-1, -2, 3, 4, -5, -6}, 6, 0);
  op_harness_destroy(h);

  const double a[3] = {1, NAN, 3};
  const double b[][3] = {{1, NAN, 3}, {1, NAN, 3}, {1.5, NAN, 3}};
  const float rtol[] = {1e-5f, 1e-5f, 0.1f}, atol[] = {1e-8f, 1e-8f, 0.4f};
  const bool equal_nan[] = {false, true, true}, want[] = {false, true, true};
  for (int c = 0; c < 3; c++) {
    h = harness("allclose");
    bind_input(h, "Input", "a", RILL_DTYPE_FP64, DIMS(3), a);
    bind_input(h, "Other", "b", RILL_DTYPE_FP64, DIMS(3), b[c]);
    OK(op_harness_output(h, "Out", "out"));
    OK(op_harness_attr_float(h, "rtol", rtol[c]));
    OK(op_harness_attr_float(h, "atol", atol[c]));
    OK(op_harness_attr_bool(h, "equal_nan", equal_nan[c]));
    OK(op_harness_run(h));
    rill_tensor *out = op_harness_tensor(h, "out");
    expect_dims(out, DIMS(1));
    cr_assert_eq(*(bool *)rill_tensor_ptr(out), want[c], "case %d", c);
    op_harness_destroy(h);
  }
}

static void set_nothing(op_harness *h, const void *arg) {
  (void)h;
  (void)arg;
}

Test(assemble, gradients_match_finite_differences) {
  double a[3], b[4];
  fill_rand(a, 3, 1);
  fill_rand(b, 4, 2);
  fd_case fc = {.op = "meshgrid", .out_slots = {"Out", "Out"}, .out_names = {"ga", "gb"},
                .nout = 2, .attrs = set_nothing, .tol = 1e-7, .nin = 2};
  fc.in[0] = (fd_input){"X", "a", {3}, 1, a, true};
  fc.in[1] = (fd_input){"X", "b", {4}, 1, b, false}; /* slot X: both checked */
  fd_check(&fc);

  double x0[6], x1[6];
  fill_rand(x0, 6, 4);
  fill_rand(x1, 6, 5);
  op_harness *h = harness("multiplex");
  bind_input(h, "Ids", "ids", RILL_DTYPE_INT32, DIMS(3, 1), (int32_t[]){1, 1, 0});
  bind_input(h, "X", "x0", RILL_DTYPE_FP64, DIMS(3, 2), x0);
  bind_input(h, "X", "x1", RILL_DTYPE_FP64, DIMS(3, 2), x1);
  OK(op_harness_output(h, "Out", "out"));
  const char *slots[] = {"X"}, *outs[] = {"Out"};
  grad_check_opts o = {.rtol = 1e-7, .atol = 1e-7};
  OK(grad_check(h, slots, 1, outs, 1, &o));
  op_harness_destroy(h);
}

Test(assemble, bad_input_fails_naming_op_and_variable) {
  op_harness *h = harness("meshgrid");
  bind_input(h, "X", "grid_a", RILL_DTYPE_FP32, DIMS(2, 2), NULL);
  OK(op_harness_output(h, "Out", "ga"));
  EXPECT_ERROR(op_harness_infer(h), "meshgrid", "X #0 (grid_a)", "1-D");
  op_harness_destroy(h);

  h = harness("diag_embed");
  bind_input(h, "Input", "diag", RILL_DTYPE_FP32, DIMS(2, 3), NULL);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_int(h, "dim1", 0));
  OK(op_harness_attr_int(h, "dim2", -3));
  EXPECT_ERROR(op_harness_infer(h), "diag_embed", "Input (diag)", "same dim");
  op_harness_destroy(h);

  h = harness("multiplex");
  bind_input(h, "Ids", "ids", RILL_DTYPE_FP32, DIMS(3, 1), NULL);
  bind_input(h, "X", "a", RILL_DTYPE_FP32, DIMS(3, 2), NULL);
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_infer(h), "multiplex", "Ids (ids)", "int32/int64 [N, 1]");
  op_harness_destroy(h);

  h = harness("multiplex");
  bind_input(h, "Ids", "ids", RILL_DTYPE_INT32, DIMS(2, 1), (int32_t[]){0, 2});
  bind_input(h, "X", "a", RILL_DTYPE_FP32, DIMS(2, 2), (float[]){1, 2, 3, 4});
  bind_input(h, "X", "b", RILL_DTYPE_FP32, DIMS(2, 2), (float[]){1, 2, 3, 4});
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_run(h), "multiplex", "Ids (ids)", "row 1 names input 2");
  op_harness_destroy(h);

  h = harness("allclose");
  bind_input(h, "Input", "a", RILL_DTYPE_FP32, DIMS(3), NULL);
  bind_input(h, "Other", "b", RILL_DTYPE_FP32, DIMS(4), NULL);
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_infer(h), "allclose", "Input (a)", "Other (b)", "differ");
  op_harness_destroy(h);
}
