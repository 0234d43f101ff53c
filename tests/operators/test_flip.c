/* flip, reverse and roll: forward against index arithmetic written here, gradients by
 * finite differences, and bad attributes. */
#include "tensor_test.h"

static const double X24[24] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11,
                               12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23};

static void run_flip(const char *type, const char *attr, const int32_t *axes, size_t n,
                     const bool *rev) {
  op_harness *h = harness(type);
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(2, 3, 4), X24);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_ints(h, attr, axes, n));
  OK(op_harness_run(h));
  const double *o = rill_tensor_ptr(op_harness_tensor(h, "out"));
  const int64_t e[3] = {2, 3, 4};
  for (int64_t i = 0; i < 2; i++)
    for (int64_t j = 0; j < 3; j++)
      for (int64_t k = 0; k < 4; k++) {
        int64_t c[3] = {i, j, k};
        for (int a = 0; a < 3; a++)
          if (rev[a]) c[a] = e[a] - 1 - c[a];
        cr_assert_eq(o[(i * 3 + j) * 4 + k], X24[(c[0] * 3 + c[1]) * 4 + c[2]], "%s at %lld %lld %lld",
                     type, (long long)i, (long long)j, (long long)k);
      }
  OK(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), NULL));
  op_harness_destroy(h);
}

Test(flip, reverses_listed_dims) {
  run_flip("flip", "dims", (const int32_t[]){0}, 1, (const bool[]){true, false, false});
  run_flip("flip", "dims", (const int32_t[]){-1, 1}, 2, (const bool[]){false, true, true});
  run_flip("reverse", "axis", (const int32_t[]){2}, 1, (const bool[]){false, false, true});
  run_flip("reverse", "axis", (const int32_t[]){0, 1, 2}, 3, (const bool[]){true, true, true});
}

Test(flip, bad_axes_name_op_and_variable) {
  op_harness *h = harness("flip");
  bind_input(h, "X", "img", RILL_DTYPE_FP32, DIMS(2, 3), NULL);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_ints(h, "dims", (const int32_t[]){2}, 1));
  EXPECT_ERROR(op_harness_run(h), "flip", "X (img)", "axis 2 is out of range");
  OK(op_harness_attr_ints(h, "dims", (const int32_t[]){1, -1}, 2));
  EXPECT_ERROR(op_harness_run(h), "flip", "X (img)", "listed twice");
  op_harness_destroy(h);

  h = harness("reverse");
  bind_input(h, "X", "img", RILL_DTYPE_FP32, DIMS(2, 3), NULL);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_ints(h, "axis", NULL, 0));
  EXPECT_ERROR(op_harness_run(h), "reverse", "X (img)", "empty");
  op_harness_destroy(h);
}

static void run_roll(const int64_t *shifts, const int64_t *dims, size_t n, const double *want) {
  op_harness *h = harness("roll");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(2, 3), X24);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_longs(h, "shifts", shifts, n ? n : 1));
  OK(op_harness_attr_longs(h, "dims", dims, n));
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "out"), DIMS(2, 3));
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "out")), want, 6, 0);
  OK(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), NULL));
  op_harness_destroy(h);
}

Test(roll, shifts_per_dim_and_flattened) {
  run_roll((const int64_t[]){1}, (const int64_t[]){1}, 1, (const double[]){2, 0, 1, 5, 3, 4});
  run_roll((const int64_t[]){-4, 1}, (const int64_t[]){1, 0}, 2, (const double[]){4, 5, 3, 1, 2, 0});
  run_roll((const int64_t[]){2}, NULL, 0, (const double[]){4, 5, 0, 1, 2, 3});
  run_roll((const int64_t[]){-7}, NULL, 0, (const double[]){1, 2, 3, 4, 5, 0});
}

Test(roll, bad_attributes) {
  op_harness *h = harness("roll");
  bind_input(h, "X", "seq", RILL_DTYPE_FP32, DIMS(2, 3), NULL);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_longs(h, "shifts", (const int64_t[]){1, 2}, 2));
  OK(op_harness_attr_longs(h, "dims", (const int64_t[]){0}, 1));
  EXPECT_ERROR(op_harness_run(h), "roll", "X (seq)", "shifts has 2 entries");
  OK(op_harness_attr_longs(h, "shifts", (const int64_t[]){1}, 1));
  OK(op_harness_attr_longs(h, "dims", (const int64_t[]){-3}, 1));
  EXPECT_ERROR(op_harness_run(h), "roll", "X (seq)", "dim -3 is out of range");
  op_harness_destroy(h);
}
