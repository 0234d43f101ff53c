/* strided_slice against Paddle 1.8.5's results (negative strides that do not divide the
 * span, ends -1 running through index 0, clamped bounds, decrease_axis, bounds from
 * tensors), its gradient against finite differences, and its errors. */
#include "nn_test.h"

typedef struct ss_cfg {
  int32_t axes[4], starts[4], ends[4], strides[4], decrease[4];
  size_t n, ndec;
} ss_cfg;

static void set_ss_attrs(op_harness *h, const void *arg) {
  const ss_cfg *c = arg;
  OK(op_harness_attr_ints(h, "axes", c->axes, c->n));
  OK(op_harness_attr_ints(h, "starts", c->starts, c->n));
  OK(op_harness_attr_ints(h, "ends", c->ends, c->n));
  OK(op_harness_attr_ints(h, "strides", c->strides, c->n));
  if (c->ndec) OK(op_harness_attr_ints(h, "decrease_axis", c->decrease, c->ndec));
}

/* x = 0, 1, ..., 9 sliced along axis 0; want: what Paddle 1.8.5 prints. */
static void check_1d(ss_cfg c, const double *want, int64_t n) {
  double x[10];
  for (int i = 0; i < 10; i++) x[i] = i;
  op_harness *h = harness("strided_slice");
  bind_input(h, "Input", "x", RILL_DTYPE_FP64, DIMS(10), x);
  OK(op_harness_output(h, "Out", "out"));
  set_ss_attrs(h, &c);
  OK(op_harness_run(h));
  rill_tensor *out = op_harness_tensor(h, "out");
  cr_assert_eq(rill_tensor_numel(out), n, "start %d end %d stride %d: %lld elements",
               c.starts[0], c.ends[0], c.strides[0], (long long)rill_tensor_numel(out));
  expect_close_f64(rill_tensor_ptr(out), want, n, 0);
  op_harness_destroy(h);
}

#define ONE(s, e, st) ((ss_cfg){{0}, {s}, {e}, {st}, {0}, 1, 0})

Test(strided_slice, matches_paddle_1_8_5) {
  check_1d(ONE(9, 0, -3), (double[]){7, 4, 1}, 3); /* Python gives 9, 6, 3 */
  check_1d(ONE(8, 1, -3), (double[]){8, 5, 2}, 3);
  check_1d(ONE(0, 10, 3), (double[]){0, 3, 6, 9}, 4);
  check_1d(ONE(-1, -11, -1), (double[]){9, 8, 7, 6, 5, 4, 3, 2, 1, 0}, 10);
  check_1d(ONE(-1, -1, -1), (double[]){9, 8, 7, 6, 5, 4, 3, 2, 1, 0}, 10);
  check_1d(ONE(-2, -1, -2), (double[]){8, 6, 4, 2, 0}, 5);
  check_1d(ONE(20, -20, -4), (double[]){8, 4, 0}, 3);
  check_1d(ONE(2, 100, 4), (double[]){2, 6}, 2);
  check_1d(ONE(-100, 100, 1), (double[]){0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, 10);
}

Test(strided_slice, two_axes_decrease_axis_and_int_dtype) {
  int32_t x[12];
  for (int i = 0; i < 12; i++) x[i] = i;
  op_harness *h = harness("strided_slice");
  bind_input(h, "Input", "x", RILL_DTYPE_INT32, DIMS(3, 4), x);
  OK(op_harness_output(h, "Out", "out"));
  ss_cfg c = {{0, 1}, {1, 3}, {2, 0}, {1, -1}, {0}, 2, 1};
  set_ss_attrs(h, &c);
  OK(op_harness_run(h));
  rill_tensor *out = op_harness_tensor(h, "out");
  expect_dims(out, DIMS(3));
  const int32_t *o = rill_tensor_ptr(out);
  cr_assert(o[0] == 7 && o[1] == 6 && o[2] == 5, "got %d %d %d", o[0], o[1], o[2]);
  op_harness_destroy(h);
}

Test(strided_slice, bounds_from_tensors) {
  double x[12];
  for (int i = 0; i < 12; i++) x[i] = i;
  op_harness *h = harness("strided_slice");
  bind_input(h, "Input", "x", RILL_DTYPE_FP64, DIMS(3, 4), x);
  bind_input(h, "StartsTensor", "s", RILL_DTYPE_INT32, DIMS(2), (int32_t[]){2, 0});
  bind_input(h, "EndsTensor", "e", RILL_DTYPE_INT64, DIMS(2), (int64_t[]){-4, 4});
  bind_input(h, "StridesTensorList", "st0", RILL_DTYPE_INT32, DIMS(1), (int32_t[]){-1});
  bind_input(h, "StridesTensorList", "st1", RILL_DTYPE_INT32, DIMS(1), (int32_t[]){3});
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_ints(h, "axes", (int32_t[]){0, 1}, 2));
  OK(op_harness_attr_ints(h, "infer_flags", (int32_t[]){-1, -1}, 2));
  OK(op_harness_run(h));
  rill_tensor *out = op_harness_tensor(h, "out");
  expect_dims(out, DIMS(3, 2));
  expect_close_f64(rill_tensor_ptr(out), (double[]){8, 11, 4, 7, 0, 3}, 6, 0);
  op_harness_destroy(h);
}

static void ss_grad(const int64_t *xd, size_t nd, ss_cfg cfg) {
  int64_t nx = numel_of(xd, nd);
  double *x = malloc((size_t)nx * sizeof *x);
  fill_rand(x, nx, 17);
  fd_case fc = {.op = "strided_slice", .out_slots = {"Out"}, .out_names = {"out"}, .nout = 1,
                .attrs = set_ss_attrs, .arg = &cfg, .tol = 1e-7};
  fc.in[fc.nin] = (fd_input){"Input", "x", {0}, nd, x, true};
  memcpy(fc.in[fc.nin++].dims, xd, nd * sizeof(int64_t));
  fd_check(&fc);
  free(x);
}

Test(strided_slice, gradients_match_finite_differences) {
  ss_grad(DIMS(3, 4), (ss_cfg){{0, 1}, {0, 3}, {3, 0}, {2, -2}, {0}, 2, 0});
  ss_grad(DIMS(12), ONE(11, 0, -3));
  ss_grad(DIMS(2, 3, 5), (ss_cfg){{2, 0}, {-1, 1}, {-1, 2}, {-2, 1}, {0}, 2, 0});
  ss_grad(DIMS(3, 4), (ss_cfg){{0, 1}, {1, 3}, {2, 0}, {1, -1}, {0}, 2, 1});
}

Test(strided_slice, bad_input_fails_naming_op_and_variable) {
  op_harness *h = harness("strided_slice");
  bind_input(h, "Input", "feat", RILL_DTYPE_FP32, DIMS(10), NULL);
  OK(op_harness_output(h, "Out", "out"));
  ss_cfg c = ONE(5, 5, 1);
  set_ss_attrs(h, &c);
  EXPECT_ERROR(op_harness_infer(h), "strided_slice", "Input (feat)", "invalid for stride");
  op_harness_destroy(h);

  h = harness("strided_slice");
  bind_input(h, "Input", "feat", RILL_DTYPE_FP32, DIMS(10), NULL);
  OK(op_harness_output(h, "Out", "out"));
  c = ONE(1, 5, 0);
  set_ss_attrs(h, &c);
  EXPECT_ERROR(op_harness_infer(h), "strided_slice", "Input (feat)", "stride of axis 0 is 0");
  op_harness_destroy(h);

  h = harness("strided_slice");
  bind_input(h, "Input", "feat", RILL_DTYPE_FP32, DIMS(4, 3), NULL);
  OK(op_harness_output(h, "Out", "out"));
  c = (ss_cfg){{2}, {0}, {1}, {1}, {0}, 1, 0};
  set_ss_attrs(h, &c);
  EXPECT_ERROR(op_harness_infer(h), "strided_slice", "Input (feat)", "axis 2 is out of range");
  op_harness_destroy(h);

  h = harness("strided_slice");
  bind_input(h, "Input", "feat", RILL_DTYPE_FP32, DIMS(4, 3), NULL);
  OK(op_harness_output(h, "Out", "out"));
  c = (ss_cfg){{0}, {0}, {4}, {1}, {0}, 1, 1};
  set_ss_attrs(h, &c);
  EXPECT_ERROR(op_harness_infer(h), "strided_slice", "Input (feat)", "decrease_axis 0",
               "not 1");
  op_harness_destroy(h);

  h = harness("strided_slice");
  bind_input(h, "Input", "feat", RILL_DTYPE_FP32, DIMS(4, 3), NULL);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_ints(h, "axes", (int32_t[]){0}, 1));
  OK(op_harness_attr_ints(h, "starts", (int32_t[]){0}, 1));
  EXPECT_ERROR(op_harness_infer(h), "strided_slice", "1 axes but 1 starts, 0 ends");
  op_harness_destroy(h);
}
