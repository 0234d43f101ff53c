/* stack and unstack: forward against index arithmetic written here, the gradients by
 * finite differences (each op's gradient is the other's forward), and bad axes. */
#include "tensor_test.h"

static const double A[6] = {0, 1, 2, 3, 4, 5}, B[6] = {10, 11, 12, 13, 14, 15};

Test(stack, every_axis_and_gradient) {
  for (int axis = -3; axis < 3; axis++) {
    op_harness *h = harness("stack");
    rill_tensor *a = op_harness_make(RILL_DTYPE_FP64, DIMS(2, 3), A);
    rill_tensor *b = op_harness_make(RILL_DTYPE_FP64, DIMS(2, 3), B);
    OK(op_harness_input(h, "X", "a", a));
    OK(op_harness_input(h, "X", "b", b));
    op_harness_free_tensor(a);
    op_harness_free_tensor(b);
    OK(op_harness_output(h, "Y", "y"));
    OK(op_harness_attr_int(h, "axis", axis));
    OK(op_harness_run(h));
    rill_tensor *y = op_harness_tensor(h, "y");
    int ax = axis < 0 ? axis + 3 : axis;
    int64_t want[3] = {2, 3, 3};
    for (int i = 0, j = 0; i < 3; i++) want[i] = i == ax ? 2 : (j++ == 0 ? 2 : 3);
    expect_dims(y, want, 3);
    const double *yp = rill_tensor_ptr(y);
    for (int64_t i0 = 0; i0 < want[0]; i0++)
      for (int64_t i1 = 0; i1 < want[1]; i1++)
        for (int64_t i2 = 0; i2 < want[2]; i2++) {
          int64_t c[3] = {i0, i1, i2}, xc[2], k = c[ax];
          for (int i = 0, j = 0; i < 3; i++)
            if (i != ax) xc[j++] = c[i];
          double w = (k == 0 ? A : B)[xc[0] * 3 + xc[1]];
          cr_assert_eq(yp[(i0 * want[1] + i1) * want[2] + i2], w, "axis %d at %lld %lld %lld", axis,
                       (long long)i0, (long long)i1, (long long)i2);
        }
    OK(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Y"), NULL));
    op_harness_destroy(h);
  }
}

Test(stack, mismatched_inputs_and_bad_axis) {
  op_harness *h = harness("stack");
  rill_tensor *a = op_harness_make(RILL_DTYPE_FP32, DIMS(2, 3), NULL);
  rill_tensor *b = op_harness_make(RILL_DTYPE_FP32, DIMS(3, 2), NULL);
  OK(op_harness_input(h, "X", "a", a));
  OK(op_harness_input(h, "X", "b", b));
  OK(op_harness_output(h, "Y", "y"));
  EXPECT_ERROR(op_harness_run(h), "stack", "X (b)", "[3, 2]", "X (a)");
  op_harness_destroy(h);

  h = harness("stack");
  OK(op_harness_input(h, "X", "a", a));
  OK(op_harness_output(h, "Y", "y"));
  OK(op_harness_attr_int(h, "axis", 3));
  EXPECT_ERROR(op_harness_run(h), "stack", "X (a)", "axis 3");
  op_harness_destroy(h);
  op_harness_free_tensor(a);
  op_harness_free_tensor(b);
}

Test(unstack, slices_and_gradient) {
  op_harness *h = harness("unstack");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(2, 3), A);
  for (int i = 0; i < 3; i++) {
    char name[8];
    snprintf(name, sizeof name, "y%d", i);
    OK(op_harness_output(h, "Y", name));
  }
  OK(op_harness_attr_int(h, "axis", -1));
  OK(op_harness_attr_int(h, "num", 3));
  OK(op_harness_run(h));
  for (int i = 0; i < 3; i++) {
    char name[8];
    snprintf(name, sizeof name, "y%d", i);
    rill_tensor *y = op_harness_tensor(h, name);
    expect_dims(y, DIMS(2));
    const double *p = rill_tensor_ptr(y);
    cr_assert(p[0] == A[i] && p[1] == A[3 + i], "slice %d", i);
  }
  OK(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Y"), NULL));
  op_harness_destroy(h);

  h = harness("unstack");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(2, 3), A);
  OK(op_harness_output(h, "Y", "y0"));
  OK(op_harness_output(h, "Y", "y1"));
  OK(op_harness_attr_int(h, "axis", 1));
  EXPECT_ERROR(op_harness_run(h), "unstack", "X (x)", "extent 3", "2 outputs Y");
  OK(op_harness_attr_int(h, "axis", 2));
  EXPECT_ERROR(op_harness_run(h), "unstack", "X (x)", "axis 2");
  op_harness_destroy(h);
}
