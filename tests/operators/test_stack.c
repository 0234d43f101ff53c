/* stack and stack_grad: values against the index arithmetic, the gradient against
 * finite differences, mismatched inputs named in the error. */
#include <stdio.h>

#include "support/grad_check.h"
#include "tensor_test.h"

static op_harness *stack3(int axis, const double *a, const double *b, const double *c) {
  op_harness *h = harness("stack");
  bind_input(h, "X", "a", RILL_DTYPE_FP64, DIMS(2, 3), a);
  bind_input(h, "X", "b", RILL_DTYPE_FP64, DIMS(2, 3), b);
  bind_input(h, "X", "c", RILL_DTYPE_FP64, DIMS(2, 3), c);
  OK(op_harness_output(h, "Y", "y"));
  OK(op_harness_attr_int(h, "axis", axis));
  return h;
}

Test(stack, new_dim_at_each_axis) {
  double x[3][6];
  for (int i = 0; i < 3; i++)
    for (int k = 0; k < 6; k++) x[i][k] = 10 * i + k;
  const int64_t shapes[3][3] = {{3, 2, 3}, {2, 3, 3}, {2, 3, 3}};
  const int axes[3] = {0, 1, -1};
  for (int t = 0; t < 3; t++) {
    op_harness *h = stack3(axes[t], x[0], x[1], x[2]);
    OK(op_harness_run(h));
    rill_tensor *y = op_harness_tensor(h, "y");
    expect_dims(y, shapes[t], 3);
    const double *p = rill_tensor_ptr(y);
    for (int r = 0; r < 2; r++)
      for (int c = 0; c < 3; c++)
        for (int i = 0; i < 3; i++) {
          size_t at = t == 0 ? (size_t)(i * 6 + r * 3 + c)
                      : t == 1 ? (size_t)(r * 9 + i * 3 + c) : (size_t)(r * 9 + c * 3 + i);
          cr_assert_eq(p[at], x[i][r * 3 + c], "axis %d x%d[%d][%d]", axes[t], i, r, c);
        }
    op_harness_destroy(h);
  }
}

Test(stack, gradient_matches_finite_differences) {
  double a[6], b[6], c[6];
  for (int k = 0; k < 6; k++) a[k] = 0.1 * k, b[k] = -0.2 * k, c[k] = 0.3 + k;
  for (int axis = -3; axis <= 2; axis++) {
    op_harness *h = stack3(axis, a, b, c);
    OK(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Y"), NULL));
    op_harness_destroy(h);
  }
}

Test(stack, mismatched_inputs_and_bad_axis_are_errors) {
  op_harness *h = harness("stack");
  bind_input(h, "X", "a", RILL_DTYPE_FP32, DIMS(2, 3), NULL);
  bind_input(h, "X", "odd", RILL_DTYPE_FP32, DIMS(3, 2), NULL);
  OK(op_harness_output(h, "Y", "y"));
  EXPECT_ERROR(op_harness_run(h), "stack", "X (odd)");
  op_harness_destroy(h);
  h = harness("stack");
  bind_input(h, "X", "a", RILL_DTYPE_FP32, DIMS(2, 3), NULL);
  OK(op_harness_output(h, "Y", "y"));
  OK(op_harness_attr_int(h, "axis", 3));
  EXPECT_ERROR(op_harness_run(h), "stack", "axis 3");
  op_harness_destroy(h);
}

static op_harness *unstack_op(int axis, int num, const double *x, const int64_t *dims) {
  op_harness *h = harness("unstack");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, dims, 3, x);
  for (int i = 0; i < num; i++) {
    char name[16];
    snprintf(name, sizeof name, "y%d", i);
    OK(op_harness_output(h, "Y", name));
  }
  OK(op_harness_attr_int(h, "axis", axis));
  OK(op_harness_attr_int(h, "num", num));
  return h;
}

Test(unstack, slices_and_gradient) {
  double x[24];
  for (int k = 0; k < 24; k++) x[k] = 0.25 * k - 2;
  /* x [2, 3, 4] cut at axis 1: y_i[a][c] = x[a][i][c] */
  op_harness *h = unstack_op(1, 3, x, (const int64_t[]){2, 3, 4});
  OK(op_harness_run(h));
  for (int i = 0; i < 3; i++) {
    char name[16];
    snprintf(name, sizeof name, "y%d", i);
    rill_tensor *y = op_harness_tensor(h, name);
    expect_dims(y, DIMS(2, 4));
    for (int a = 0; a < 2; a++)
      for (int c = 0; c < 4; c++)
        cr_assert_eq(((double *)rill_tensor_ptr(y))[a * 4 + c], x[a * 12 + i * 4 + c]);
  }
  OK(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Y"), NULL));
  op_harness_destroy(h);
  h = unstack_op(-1, 4, x, (const int64_t[]){2, 3, 4});
  OK(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Y"), NULL));
  op_harness_destroy(h);
  /* num must be X's extent at axis */
  h = unstack_op(0, 3, x, (const int64_t[]){2, 3, 4});
  EXPECT_ERROR(op_harness_run(h), "unstack", "X (x)", "num is 3");
  op_harness_destroy(h);
}
