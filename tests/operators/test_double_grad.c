/* The double-gradient ops (doc/design/backward.md, "Double gradients"): each gradient op
 * with a maker of its own gradient is checked as grad_check checks a forward op, its
 * gradient op's outputs against central differences of the gradient op's own kernel. */
#include <math.h>

#include "op_test.h"
#include "support/grad_check.h"

/* n doubles in [-1, 1] from a fixed pattern; `away` moves them at least that far from 0
 * (the kinks of relu, leaky_relu and elu, and the poles of sqrt's and div's gradients). */
static void fill(double *p, int64_t n, int salt, double away) {
  for (int64_t i = 0; i < n; i++) {
    double v = sin((double)(i * 7 + salt * 13) * 0.37);
    p[i] = v < 0 ? v - away : v + away;
  }
}

Test(double_grad, square_and_elu) {
  const char *ops[] = {"square_grad", "elu_grad"};
  for (int k = 0; k < 2; k++) {
    double x[6], d[6];
    fill(x, 6, 1, 0.05);
    fill(d, 6, 2, 0);
    op_harness *h = harness(ops[k]);
    bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(2, 3), x);
    bind_input(h, "Out@GRAD", "dout", RILL_DTYPE_FP64, DIMS(2, 3), d);
    OK(op_harness_output(h, "X@GRAD", "dx"));
    if (k == 1) OK(op_harness_attr_float(h, "alpha", 0.7f));
    OK(grad_check(h, GC_SLOTS("X", "Out@GRAD"), GC_SLOTS("X@GRAD"), NULL));
    op_harness_destroy(h);
  }
}

Test(double_grad, sqrt) {
  double out[6], d[6];
  fill(out, 6, 3, 0);
  for (int i = 0; i < 6; i++) out[i] = fabs(out[i]) + 0.5;
  fill(d, 6, 4, 0);
  op_harness *h = harness("sqrt_grad");
  bind_input(h, "Out", "out", RILL_DTYPE_FP64, DIMS(6), out);
  bind_input(h, "Out@GRAD", "dout", RILL_DTYPE_FP64, DIMS(6), d);
  OK(op_harness_output(h, "X@GRAD", "dx"));
  OK(grad_check(h, GC_SLOTS("Out", "Out@GRAD"), GC_SLOTS("X@GRAD"), NULL));
  op_harness_destroy(h);
}

/* relu and leaky_relu: the gradient is piecewise linear in Out@GRAD and constant in X
 * (or Out), so only Out@GRAD gets one. */
Test(double_grad, relu_and_leaky_relu) {
  const char *ops[] = {"relu_grad", "leaky_relu_grad"}, *src[] = {"Out", "X"};
  for (int k = 0; k < 2; k++) {
    double v[8], d[8];
    fill(v, 8, 5, 0.1);
    fill(d, 8, 6, 0);
    op_harness *h = harness(ops[k]);
    bind_input(h, src[k], "v", RILL_DTYPE_FP64, DIMS(2, 4), v);
    bind_input(h, "Out@GRAD", "dout", RILL_DTYPE_FP64, DIMS(2, 4), d);
    OK(op_harness_output(h, "X@GRAD", "dx"));
    if (k == 1) OK(op_harness_attr_float(h, "alpha", 0.2f));
    OK(grad_check(h, GC_SLOTS("Out@GRAD"), GC_SLOTS("X@GRAD"), NULL));
    op_harness_destroy(h);
  }
}

Test(double_grad, mul_with_flattened_operands) {
  double x[12], y[6], d[8];
  fill(x, 12, 7, 0);
  fill(y, 6, 8, 0);
  fill(d, 8, 9, 0);
  op_harness *h = harness("mul_grad");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(2, 2, 3), x);
  bind_input(h, "Y", "y", RILL_DTYPE_FP64, DIMS(3, 2), y);
  bind_input(h, "Out@GRAD", "dout", RILL_DTYPE_FP64, DIMS(2, 2, 2), d);
  OK(op_harness_attr_int(h, "x_num_col_dims", 2));
  OK(op_harness_output(h, "X@GRAD", "dx"));
  OK(op_harness_output(h, "Y@GRAD", "dy"));
  OK(grad_check(h, GC_SLOTS("X", "Y", "Out@GRAD"), GC_SLOTS("X@GRAD", "Y@GRAD"), NULL));
  op_harness_destroy(h);
}

/* Y [3] broadcast over X [2, 3] (axis -1) and Y [2] on axis 0. */
static void check_elementwise(const char *op, bool with_x, const int64_t *yd, size_t yn, int axis,
                              const char *const *slots, size_t nslots) {
  double x[6], y[3], d[6], out[6];
  fill(x, 6, 10, 0.2);
  fill(y, 3, 11, 0.5);
  fill(d, 6, 12, 0);
  op_harness *h = harness(op);
  if (with_x) bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(2, 3), x);
  bind_input(h, "Y", "y", RILL_DTYPE_FP64, yd, yn, y);
  if (!with_x) { /* elementwise_div_grad in Paddle's layout: Out instead of X */
    for (int i = 0; i < 6; i++) out[i] = x[i] / y[axis == 0 ? i / 3 : i % 3];
    bind_input(h, "Out", "out", RILL_DTYPE_FP64, DIMS(2, 3), out);
  }
  bind_input(h, "Out@GRAD", "dout", RILL_DTYPE_FP64, DIMS(2, 3), d);
  OK(op_harness_attr_int(h, "axis", axis));
  OK(op_harness_output(h, "X@GRAD", "dx"));
  OK(op_harness_output(h, "Y@GRAD", "dy"));
  OK(grad_check(h, slots, nslots, GC_SLOTS("X@GRAD", "Y@GRAD"), NULL));
  op_harness_destroy(h);
}

Test(double_grad, elementwise_with_broadcasting) {
  check_elementwise("elementwise_add_grad", true, DIMS(3), -1, GC_SLOTS("Out@GRAD"));
  check_elementwise("elementwise_sub_grad", true, DIMS(2), 0, GC_SLOTS("Out@GRAD"));
  check_elementwise("elementwise_mul_grad", true, DIMS(3), -1, GC_SLOTS("X", "Y", "Out@GRAD"));
  check_elementwise("elementwise_mul_grad", true, DIMS(2), 0, GC_SLOTS("X", "Y", "Out@GRAD"));
  check_elementwise("elementwise_div_grad", false, DIMS(3), -1, GC_SLOTS("Y", "Out", "Out@GRAD"));
  check_elementwise("elementwise_div_grad", false, DIMS(2), 0, GC_SLOTS("Y", "Out", "Out@GRAD"));
}

Test(double_grad, reductions_and_reshape) {
  double x[6], d[6];
  fill(x, 6, 13, 0);
  fill(d, 6, 14, 0);
  const char *ops[] = {"reduce_sum_grad", "reduce_mean_grad"};
  for (int k = 0; k < 2; k++) {
    op_harness *h = harness(ops[k]);
    bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(2, 3), x);
    bind_input(h, "Out@GRAD", "dout", RILL_DTYPE_FP64, DIMS(2), d);
    OK(op_harness_attr_ints(h, "dim", (const int32_t[]){1}, 1));
    OK(op_harness_output(h, "X@GRAD", "dx"));
    OK(grad_check(h, GC_SLOTS("Out@GRAD"), GC_SLOTS("X@GRAD"), NULL));
    op_harness_destroy(h);
  }
  op_harness *h = harness("mean_grad");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(2, 3), x);
  bind_input(h, "Out@GRAD", "dout", RILL_DTYPE_FP64, DIMS(1), d);
  OK(op_harness_output(h, "X@GRAD", "dx"));
  OK(grad_check(h, GC_SLOTS("Out@GRAD"), GC_SLOTS("X@GRAD"), NULL));
  op_harness_destroy(h);
  double xs[1] = {0};
  h = harness("reshape2_grad");
  bind_input(h, "XShape", "xshape", RILL_DTYPE_FP64, DIMS(0, 3, 2), xs);
  bind_input(h, "Out@GRAD", "dout", RILL_DTYPE_FP64, DIMS(2, 3), d);
  OK(op_harness_output(h, "X@GRAD", "dx"));
  OK(grad_check(h, GC_SLOTS("Out@GRAD"), GC_SLOTS("X@GRAD"), NULL));
  op_harness_destroy(h);
}

Test(double_grad, conv2d_with_stride_padding_groups) {
  double x[2 * 4 * 5 * 4], w[4 * 2 * 2 * 3], d[2 * 4 * 3 * 2];
  fill(x, 160, 15, 0);
  fill(w, 48, 16, 0);
  fill(d, 48, 17, 0);
  op_harness *h = harness("conv2d_grad");
  bind_input(h, "Input", "x", RILL_DTYPE_FP64, DIMS(2, 4, 5, 4), x);
  bind_input(h, "Filter", "w", RILL_DTYPE_FP64, DIMS(4, 2, 2, 3), w);
  bind_input(h, "Output@GRAD", "dout", RILL_DTYPE_FP64, DIMS(2, 4, 3, 2), d);
  OK(op_harness_attr_ints(h, "strides", (const int32_t[]){2, 2}, 2));
  OK(op_harness_attr_ints(h, "paddings", (const int32_t[]){1, 1}, 2));
  OK(op_harness_attr_int(h, "groups", 2));
  OK(op_harness_output(h, "Input@GRAD", "dx"));
  OK(op_harness_output(h, "Filter@GRAD", "dw"));
  grad_check_opts o = {.rtol = 1e-5, .atol = 1e-6};
  OK(grad_check(h, GC_SLOTS("Input", "Filter", "Output@GRAD"), GC_SLOTS("Input@GRAD", "Filter@GRAD"), &o));
  op_harness_destroy(h);
}
