/* Comparison ops against a reference that indexes the broadcast operands directly. */
#include "op_test.h"

static const char *const ops[] = {"less_than", "less_equal", "greater_than", "greater_equal",
                                  "equal", "not_equal"};

static bool ref_cmp(int op, double a, double b) {
  switch (op) {
  case 0: return a < b;
  case 1: return a <= b;
  case 2: return a > b;
  case 3: return a >= b;
  case 4: return a == b;
  default: return a != b;
  }
}

/* Y (rank ny) aligned at axis in X's rank-4 index space (X is 4-D). */
static void run_cmp(rill_dtype dt, const int64_t *xd, size_t nxd, const int64_t *yd, size_t ny, int axis) {
  cr_assert_eq(nxd, 4);
  int64_t nx = numel_of(xd, 4), nyel = numel_of(yd, ny);
  int al = axis < 0 ? 4 - (int)ny : axis;
  double *xv = malloc((size_t)nx * sizeof *xv), *yv = malloc((size_t)nyel * sizeof *yv);
  for (int64_t i = 0; i < nx; i++) xv[i] = (double)((i * 7) % 5) - 2;
  for (int64_t i = 0; i < nyel; i++) yv[i] = (double)((i * 3) % 4) - 1.5 * (dt == RILL_DTYPE_FP32);
  void *xb = malloc((size_t)nx * 8), *yb = malloc((size_t)nyel * 8);
  for (int64_t i = 0; i < nx; i++) {
    if (dt == RILL_DTYPE_FP32) ((float *)xb)[i] = (float)xv[i];
    else if (dt == RILL_DTYPE_INT64) ((int64_t *)xb)[i] = (int64_t)xv[i];
    else ((int32_t *)xb)[i] = (int32_t)xv[i];
  }
  for (int64_t i = 0; i < nyel; i++) {
    if (dt == RILL_DTYPE_FP32) ((float *)yb)[i] = (float)yv[i];
    else if (dt == RILL_DTYPE_INT64) ((int64_t *)yb)[i] = (int64_t)yv[i];
    else ((int32_t *)yb)[i] = (int32_t)yv[i];
    if (dt != RILL_DTYPE_FP32) yv[i] = (double)(int64_t)yv[i];
  }
  for (int op = 0; op < 6; op++) {
    op_harness *h = harness(ops[op]);
    bind_input(h, "X", "x", dt, xd, 4, xb);
    bind_input(h, "Y", "y", dt, yd, ny, yb);
    OK(op_harness_output(h, "Out", "mask"));
    OK(op_harness_attr_int(h, "axis", axis));
    OK(op_harness_run(h));
    rill_tensor *t = op_harness_tensor(h, "mask");
    cr_assert_eq(t->dtype, RILL_DTYPE_BOOL);
    expect_dims(t, xd, 4);
    const bool *m = rill_tensor_ptr(t);
    for (int64_t i = 0; i < nx; i++) {
      int64_t idx[4], r = i, yo = 0;
      for (int k = 3; k >= 0; k--) {
        idx[k] = r % xd[k];
        r /= xd[k];
      }
      for (size_t k = 0; k < ny; k++) yo = yo * yd[k] + (yd[k] == 1 ? 0 : idx[al + (int)k]);
      cr_assert_eq(m[i], ref_cmp(op, xv[i], yv[yo]), "%s [%lld]", ops[op], (long long)i);
    }
    op_harness_destroy(h);
  }
  free(xv); free(yv); free(xb); free(yb);
}

Test(compare, same_shape_scalar_and_broadcast) {
  run_cmp(RILL_DTYPE_FP32, DIMS(2, 3, 4, 5), DIMS(2, 3, 4, 5), -1);
  run_cmp(RILL_DTYPE_INT64, DIMS(2, 3, 4, 5), DIMS(1), -1);
  run_cmp(RILL_DTYPE_INT32, DIMS(2, 3, 4, 5), DIMS(4, 5), -1);
  run_cmp(RILL_DTYPE_FP32, DIMS(2, 3, 4, 5), DIMS(3), 1);      /* axis 1 */
  run_cmp(RILL_DTYPE_INT64, DIMS(2, 3, 4, 5), DIMS(3, 1), 1);
  run_cmp(RILL_DTYPE_FP32, DIMS(2, 3, 4, 5), DIMS(2, 1, 4, 1), -1);
}

Test(compare, scalar_x_and_bool_equal) {
  op_harness *h = harness("less_than");
  bind_input(h, "X", "i", RILL_DTYPE_INT64, DIMS(1), (int64_t[]){3});
  bind_input(h, "Y", "n", RILL_DTYPE_INT64, DIMS(1), (int64_t[]){500});
  OK(op_harness_output(h, "Out", "cond"));
  OK(op_harness_run(h));
  cr_assert(((bool *)rill_tensor_ptr(op_harness_tensor(h, "cond")))[0]);
  op_harness_destroy(h);

  h = harness("not_equal");
  bind_input(h, "X", "a", RILL_DTYPE_BOOL, DIMS(3), (bool[]){true, false, true});
  bind_input(h, "Y", "b", RILL_DTYPE_BOOL, DIMS(3), (bool[]){true, true, false});
  OK(op_harness_output(h, "Out", "o"));
  OK(op_harness_run(h));
  const bool *o = rill_tensor_ptr(op_harness_tensor(h, "o"));
  cr_assert(!o[0] && o[1] && o[2]);
  op_harness_destroy(h);
}

Test(compare, mismatches_fail_at_inference) {
  op_harness *h = harness("greater_than");
  bind_input(h, "X", "a", RILL_DTYPE_FP32, DIMS(2, 3), NULL);
  bind_input(h, "Y", "b", RILL_DTYPE_FP32, DIMS(4), NULL);
  OK(op_harness_output(h, "Out", "o"));
  EXPECT_ERROR(op_harness_run(h), "greater_than", "X (a)", "Y (b)");
  op_harness_destroy(h);

  h = harness("equal");
  bind_input(h, "X", "a", RILL_DTYPE_FP32, DIMS(2), NULL);
  bind_input(h, "Y", "b", RILL_DTYPE_INT64, DIMS(2), NULL);
  OK(op_harness_output(h, "Out", "o"));
  EXPECT_ERROR(op_harness_run(h), "equal", "X (a)", "int64");
  op_harness_destroy(h);
}
