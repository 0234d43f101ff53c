/* affine_channel (NCHW and NHWC) and maxout (axis 1 and -1): forward against references,
 * gradients by finite differences (maxout's inputs without ties), and errors. */
#include "op_test.h"
#include "support/grad_check.h"

static op_harness *ac_h(const double *x, const double *s, const double *b, bool nhwc) {
  op_harness *h = harness("affine_channel");
  if (nhwc) bind_input(h, "X", "img", RILL_DTYPE_FP64, DIMS(2, 2, 2, 3), x);
  else bind_input(h, "X", "img", RILL_DTYPE_FP64, DIMS(2, 3, 2, 2), x);
  bind_input(h, "Scale", "scale", RILL_DTYPE_FP64, DIMS(3), s);
  bind_input(h, "Bias", "bias", RILL_DTYPE_FP64, DIMS(3), b);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_string(h, "data_layout", nhwc ? "NHWC" : "NCHW"));
  return h;
}

Test(channel, affine_channel_both_layouts_and_gradients) {
  double x[24], s[3] = {0.5, -1.5, 2.0}, b[3] = {0.1, 0.2, -0.3};
  for (int i = 0; i < 24; i++) x[i] = sin(i * 0.9);
  for (int nhwc = 0; nhwc < 2; nhwc++) {
    op_harness *h = ac_h(x, s, b, nhwc);
    OK(op_harness_run(h));
    const double *o = rill_tensor_ptr(op_harness_tensor(h, "out"));
    for (int i = 0; i < 24; i++) {
      int c = nhwc ? i % 3 : (i / 4) % 3;
      cr_assert(fabs(o[i] - (x[i] * s[c] + b[c])) < 1e-12, "layout %d [%d]", nhwc, i);
    }
    OK(grad_check(h, GC_SLOTS("X", "Scale", "Bias"), GC_SLOTS("Out"), NULL));
    op_harness_destroy(h);
  }
}

Test(channel, affine_channel_names_a_scale_of_the_wrong_size) {
  op_harness *h = harness("affine_channel");
  bind_input(h, "X", "img", RILL_DTYPE_FP32, DIMS(1, 3, 2, 2), NULL);
  bind_input(h, "Scale", "scale", RILL_DTYPE_FP32, DIMS(4), NULL);
  bind_input(h, "Bias", "bias", RILL_DTYPE_FP32, DIMS(3), NULL);
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_infer(h), "affine_channel", "Scale (scale)", "[4]", "[3]");
  op_harness_destroy(h);
}

Test(channel, maxout_both_axes_and_gradients) {
  double x[2 * 6 * 2 * 2];
  for (int i = 0; i < 48; i++) x[i] = sin(i * 1.3) + 0.01 * i; /* no ties */
  for (int last = 0; last < 2; last++) {
    op_harness *h = harness("maxout");
    if (last) bind_input(h, "X", "feat", RILL_DTYPE_FP64, DIMS(2, 2, 2, 6), x);
    else bind_input(h, "X", "feat", RILL_DTYPE_FP64, DIMS(2, 6, 2, 2), x);
    OK(op_harness_output(h, "Out", "out"));
    OK(op_harness_attr_int(h, "groups", 3));
    OK(op_harness_attr_int(h, "axis", last ? -1 : 1));
    OK(op_harness_run(h));
    const rill_tensor *ot = op_harness_tensor(h, "out");
    if (last) expect_dims(ot, DIMS(2, 2, 2, 2));
    else expect_dims(ot, DIMS(2, 2, 2, 2));
    const double *o = rill_tensor_ptr(ot);
    for (int i = 0; i < 16; i++) {
      double m = -1e300;
      for (int j = 0; j < 3; j++) {
        int src = last ? (i / 2) * 6 + (i % 2) * 3 + j
                       : ((i / 8) * 6 + ((i / 4) % 2) * 3 + j) * 4 + i % 4;
        m = fmax(m, x[src]);
      }
      cr_assert_eq(o[i], m, "axis %d [%d]", last, i);
    }
    OK(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), NULL));
    op_harness_destroy(h);
  }
}

Test(channel, maxout_gives_a_tie_to_the_first_maximum) {
  double x[4] = {1, 5, 5, 2}, out[2] = {5, 5}, g[2] = {7, 9};
  op_harness *h = harness("maxout_grad");
  bind_input(h, "X", "feat", RILL_DTYPE_FP64, DIMS(1, 4, 1, 1), x);
  bind_input(h, "Out", "out", RILL_DTYPE_FP64, DIMS(1, 2, 1, 1), out);
  bind_input(h, "Out@GRAD", "d_out", RILL_DTYPE_FP64, DIMS(1, 2, 1, 1), g);
  OK(op_harness_output(h, "X@GRAD", "d_feat"));
  OK(op_harness_attr_int(h, "groups", 2));
  OK(op_harness_run(h));
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "d_feat")), (double[]){0, 7, 9, 0}, 4, 0);
  op_harness_destroy(h);
}

Test(channel, maxout_names_groups_that_do_not_divide) {
  op_harness *h = harness("maxout");
  bind_input(h, "X", "feat", RILL_DTYPE_FP32, DIMS(1, 5, 2, 2), NULL);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_int(h, "groups", 2));
  EXPECT_ERROR(op_harness_infer(h), "maxout", "groups 2", "5 channels", "X (feat)");
  op_harness_destroy(h);
}
