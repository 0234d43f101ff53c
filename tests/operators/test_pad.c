/* pad, pad_constant_like and pad2d: forward against loops written here, gradients by
 * finite differences, bad paddings. */
#include "tensor_test.h"

static const double X12[12] = {1, -2, 3, 0.5, 4, 6, -1, 2, 0.25, 7, -3, 5};

Test(pad, constant_box_and_gradient) {
  op_harness *h = harness("pad");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(3, 4), X12);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_ints(h, "paddings", (const int32_t[]){1, 0, 2, 1}, 4));
  OK(op_harness_attr_float(h, "pad_value", 1.5f));
  OK(op_harness_run(h));
  rill_tensor *out = op_harness_tensor(h, "out");
  expect_dims(out, DIMS(4, 7));
  const double *o = rill_tensor_ptr(out);
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 7; j++) {
      bool inside = i >= 1 && j >= 2 && j < 6;
      cr_assert_eq(o[i * 7 + j], inside ? X12[(i - 1) * 4 + j - 2] : 1.5, "(%d, %d)", i, j);
    }
  OK(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), NULL));
  OK(op_harness_attr_ints(h, "paddings", (const int32_t[]){1, 0, 2}, 3));
  EXPECT_ERROR(op_harness_run(h), "pad", "X (x)", "paddings has 3 entries");
  OK(op_harness_attr_ints(h, "paddings", (const int32_t[]){1, 0, -2, 1}, 4));
  EXPECT_ERROR(op_harness_run(h), "pad", "X (x)", ">= 0");
  op_harness_destroy(h);
}

Test(pad_constant_like, origin_box_and_gradient) {
  op_harness *h = harness("pad_constant_like");
  bind_input(h, "X", "big", RILL_DTYPE_FP64, DIMS(4, 5), NULL);
  bind_input(h, "Y", "y", RILL_DTYPE_FP64, DIMS(3, 4), X12);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_float(h, "pad_value", -1.0f));
  OK(op_harness_run(h));
  const double *o = rill_tensor_ptr(op_harness_tensor(h, "out"));
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 5; j++)
      cr_assert_eq(o[i * 5 + j], i < 3 && j < 4 ? X12[i * 4 + j] : -1.0, "(%d, %d)", i, j);
  OK(grad_check(h, GC_SLOTS("Y"), GC_SLOTS("Out"), NULL));
  op_harness_destroy(h);

  h = harness("pad_constant_like");
  bind_input(h, "X", "big", RILL_DTYPE_FP64, DIMS(2, 5), NULL);
  bind_input(h, "Y", "y", RILL_DTYPE_FP64, DIMS(3, 4), X12);
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_run(h), "pad_constant_like", "Y (y)", "X (big)");
  op_harness_destroy(h);
}

/* Reference pad2d of one [3, 4] plane. */
static double ref_pad2d(const double *x, int64_t i, int64_t j, const int32_t *p, int mode, double v) {
  int64_t r = i - p[0], c = j - p[2];
  if (mode == 0 && (r < 0 || r >= 3 || c < 0 || c >= 4)) return v;
  if (mode == 1) {
    r = r < 0 ? -r : r >= 3 ? 4 - r : r;
    c = c < 0 ? -c : c >= 4 ? 6 - c : c;
  } else if (mode == 2) {
    r = r < 0 ? 0 : r >= 3 ? 2 : r;
    c = c < 0 ? 0 : c >= 4 ? 3 : c;
  }
  return x[r * 4 + c];
}

Test(pad2d, modes_layouts_and_gradient) {
  const char *modes[3] = {"constant", "reflect", "edge"};
  const int32_t pads[4] = {2, 1, 1, 2};
  for (int m = 0; m < 3; m++)
    for (int nhwc = 0; nhwc < 2; nhwc++) {
      op_harness *h = harness("pad2d");
      if (nhwc) bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(1, 3, 4, 1), X12);
      else bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(1, 1, 3, 4), X12);
      OK(op_harness_output(h, "Out", "out"));
      OK(op_harness_attr_ints(h, "paddings", pads, 4));
      OK(op_harness_attr_string(h, "mode", modes[m]));
      OK(op_harness_attr_string(h, "data_format", nhwc ? "NHWC" : "NCHW"));
      OK(op_harness_attr_float(h, "pad_value", 0.5f));
      OK(op_harness_run(h));
      rill_tensor *out = op_harness_tensor(h, "out");
      if (nhwc) expect_dims(out, DIMS(1, 6, 7, 1));
      else expect_dims(out, DIMS(1, 1, 6, 7));
      const double *o = rill_tensor_ptr(out);
      for (int64_t i = 0; i < 6; i++)
        for (int64_t j = 0; j < 7; j++)
          cr_assert_eq(o[i * 7 + j], ref_pad2d(X12, i, j, pads, m, 0.5), "%s (%lld, %lld)", modes[m],
                       (long long)i, (long long)j);
      OK(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), &(grad_check_opts){.no_subsets = true}));
      op_harness_destroy(h);
    }
}

Test(pad2d, paddings_tensor_and_errors) {
  op_harness *h = harness("pad2d");
  bind_input(h, "X", "img", RILL_DTYPE_FP32, DIMS(1, 1, 3, 4), NULL);
  bind_input(h, "Paddings", "p", RILL_DTYPE_INT32, DIMS(4), (const int32_t[]){0, 1, 0, 0});
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "out"), DIMS(1, 1, 4, 4));
  op_harness_destroy(h);

  h = harness("pad2d");
  bind_input(h, "X", "img", RILL_DTYPE_FP32, DIMS(1, 1, 3, 4), NULL);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_ints(h, "paddings", (const int32_t[]){3, 0, 0, 0}, 4));
  OK(op_harness_attr_string(h, "mode", "reflect"));
  EXPECT_ERROR(op_harness_run(h), "pad2d", "X (img)", "reflect padding");
  OK(op_harness_attr_string(h, "mode", "wrap"));
  EXPECT_ERROR(op_harness_run(h), "pad2d", "X (img)", "wrap");
  op_harness_destroy(h);
}
