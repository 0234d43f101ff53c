/* similarity_focus: a hand-worked mask, every axis against a naive reference (repeatedly
 * take the largest entry whose row and column are both still free), and the errors naming
 * op and variable. */
#include "op_test.h"

/* The reference mask for X [N, d1, d2, d3]. */
static void reference(const double *x, const int64_t d[4], int axis, const int32_t *idx, int nidx,
                      double *mask) {
  int64_t st[4] = {d[1] * d[2] * d[3], d[2] * d[3], d[3], 1};
  int ra = axis == 1 ? 2 : 1, ca = axis == 3 ? 2 : 3;
  memset(mask, 0, sizeof(double) * (size_t)(d[0] * st[0]));
  for (int64_t n = 0; n < d[0]; n++)
    for (int k = 0; k < nidx; k++) {
      bool rt[16] = {0}, ct[16] = {0};
      int64_t picks = d[ra] < d[ca] ? d[ra] : d[ca];
      for (int64_t p = 0; p < picks; p++) {
        int64_t br = -1, bc = -1;
        double best = -INFINITY;
        for (int64_t r = 0; r < d[ra]; r++)
          for (int64_t c = 0; c < d[ca]; c++) {
            double v = x[n * st[0] + idx[k] * st[axis] + r * st[ra] + c * st[ca]];
            if (!rt[r] && !ct[c] && v > best) best = v, br = r, bc = c;
          }
        rt[br] = ct[bc] = true;
        for (int64_t a = 0; a < d[axis]; a++) mask[n * st[0] + a * st[axis] + br * st[ra] + bc * st[ca]] = 1;
      }
    }
}

Test(similarity_focus, hand_worked_mask) {
  /* X [1, 2, 2, 3], axis 1, index 0: slice [[0.8, 0.1, 0.5], [0.9, 0.3, 0.2]] takes 0.9
   * at (1, 0), then 0.5 at (0, 2): two picks (min of 2 rows, 3 columns) */
  const float x[12] = {0.8f, 0.1f, 0.5f, 0.9f, 0.3f, 0.2f, 7, 7, 7, 7, 7, 7};
  op_harness *h = harness("similarity_focus");
  bind_input(h, "X", "sim", RILL_DTYPE_FP32, DIMS(1, 2, 2, 3), x);
  OK(op_harness_output(h, "Out", "mask"));
  OK(op_harness_attr_int(h, "axis", 1));
  OK(op_harness_attr_ints(h, "indexes", (const int32_t[]){0}, 1));
  OK(op_harness_run(h));
  const float want[12] = {0, 0, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0};
  const rill_tensor *o = op_harness_tensor(h, "mask");
  expect_dims(o, DIMS(1, 2, 2, 3));
  expect_close_f32(rill_tensor_ptr(o), want, 12, 0);
  op_harness_destroy(h);
}

Test(similarity_focus, every_axis_matches_reference) {
  const int64_t d[4] = {2, 3, 4, 5};
  double x[2 * 3 * 4 * 5], want[2 * 3 * 4 * 5];
  for (int i = 0; i < 120; i++) x[i] = (double)((i * 53) % 120) / 7.0; /* distinct */
  const int32_t idx[] = {2, 0};
  for (int axis = 1; axis <= 3; axis++) {
    op_harness *h = harness("similarity_focus");
    bind_input(h, "X", "sim", RILL_DTYPE_FP64, d, 4, x);
    OK(op_harness_output(h, "Out", "mask"));
    OK(op_harness_attr_int(h, "axis", axis));
    OK(op_harness_attr_ints(h, "indexes", idx, 2));
    OK(op_harness_run(h));
    reference(x, d, axis, idx, 2, want);
    const double *got = rill_tensor_ptr(op_harness_tensor(h, "mask"));
    for (int i = 0; i < 120; i++) cr_assert_eq(got[i], want[i], "axis %d [%d]", axis, i);
    op_harness_destroy(h);
  }
}

Test(similarity_focus, errors_name_op_and_variable) {
  float x[2 * 3 * 4] = {0};
  op_harness *h = harness("similarity_focus");
  bind_input(h, "X", "sim", RILL_DTYPE_FP32, DIMS(1, 2, 3, 4), x);
  OK(op_harness_output(h, "Out", "mask"));
  OK(op_harness_attr_int(h, "axis", 2));
  OK(op_harness_attr_ints(h, "indexes", (const int32_t[]){3}, 1));
  EXPECT_ERROR(op_harness_run(h), "similarity_focus", "sim", "indexes", "3");
  op_harness_destroy(h);
  h = harness("similarity_focus");
  bind_input(h, "X", "flat", RILL_DTYPE_FP32, DIMS(2, 12), x);
  OK(op_harness_output(h, "Out", "mask"));
  OK(op_harness_attr_int(h, "axis", 1));
  OK(op_harness_attr_ints(h, "indexes", (const int32_t[]){0}, 1));
  EXPECT_ERROR(op_harness_run(h), "similarity_focus", "flat", "4-D");
  op_harness_destroy(h);
  h = harness("similarity_focus");
  bind_input(h, "X", "sim", RILL_DTYPE_FP32, DIMS(1, 2, 3, 4), x);
  OK(op_harness_output(h, "Out", "mask"));
  OK(op_harness_attr_int(h, "axis", 0));
  OK(op_harness_attr_ints(h, "indexes", (const int32_t[]){0}, 1));
  EXPECT_ERROR(op_harness_run(h), "similarity_focus", "axis");
  op_harness_destroy(h);
}
