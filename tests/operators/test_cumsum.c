/* cumsum and tril_triu: forward against loops written here, gradients by finite
 * differences, bad axes. */
#include "tensor_test.h"

static const double X12[12] = {1, -2, 3, 0.5, 4, 6, -1, 2, 0.25, 7, -3, 5};

/* Reference cumsum of a [2, 3, 2] tensor along axis a. */
static void ref_cumsum(const double *x, int a, bool excl, bool rev, double *out) {
  const int64_t e[3] = {2, 3, 2};
  for (int64_t i = 0; i < 12; i++) {
    int64_t c[3] = {i / 6, (i / 2) % 3, i % 2};
    double s = 0;
    for (int64_t k = 0; k < e[a]; k++) {
      int64_t cc[3] = {c[0], c[1], c[2]};
      cc[a] = k;
      bool take = rev ? (excl ? k > c[a] : k >= c[a]) : (excl ? k < c[a] : k <= c[a]);
      if (take) s += x[(cc[0] * 3 + cc[1]) * 2 + cc[2]];
    }
    out[i] = s;
  }
}

Test(cumsum, axes_exclusive_reverse_and_gradient) {
  for (int a = -3; a < 3; a++)
    for (int mode = 0; mode < 4; mode++) {
      bool excl = mode & 1, rev = mode & 2;
      op_harness *h = harness("cumsum");
      bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(2, 3, 2), X12);
      OK(op_harness_output(h, "Out", "out"));
      OK(op_harness_attr_int(h, "axis", a));
      OK(op_harness_attr_bool(h, "exclusive", excl));
      OK(op_harness_attr_bool(h, "reverse", rev));
      OK(op_harness_run(h));
      double want[12];
      ref_cumsum(X12, a < 0 ? a + 3 : a, excl, rev, want);
      expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "out")), want, 12, 1e-12);
      OK(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), &(grad_check_opts){.no_subsets = true}));
      op_harness_destroy(h);
    }
}

Test(cumsum, int64_and_bad_axis) {
  op_harness *h = harness("cumsum");
  bind_input(h, "X", "x", RILL_DTYPE_INT64, DIMS(4), (const int64_t[]){1, 2, 3, 4});
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_run(h));
  const int64_t *o = rill_tensor_ptr(op_harness_tensor(h, "out"));
  cr_assert(o[0] == 1 && o[1] == 3 && o[2] == 6 && o[3] == 10);
  OK(op_harness_attr_int(h, "axis", 1));
  EXPECT_ERROR(op_harness_run(h), "cumsum", "X (x)", "axis 1 is out of range");
  op_harness_destroy(h);
}

Test(tril_triu, triangles_and_gradient) {
  for (int lower = 0; lower < 2; lower++)
    for (int diag = -3; diag <= 4; diag++) {
      op_harness *h = harness("tril_triu");
      bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(2, 2, 3), X12);
      OK(op_harness_output(h, "Out", "out"));
      OK(op_harness_attr_int(h, "diagonal", diag));
      OK(op_harness_attr_bool(h, "lower", lower));
      OK(op_harness_run(h));
      const double *o = rill_tensor_ptr(op_harness_tensor(h, "out"));
      for (int64_t m = 0; m < 2; m++)
        for (int64_t i = 0; i < 2; i++)
          for (int64_t j = 0; j < 3; j++) {
            bool keep = lower ? j - i <= diag : j - i >= diag;
            int64_t at = (m * 2 + i) * 3 + j;
            cr_assert_eq(o[at], keep ? X12[at] : 0.0, "lower %d diagonal %d at %lld", lower, diag,
                         (long long)at);
          }
      OK(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), &(grad_check_opts){.no_subsets = true}));
      op_harness_destroy(h);
    }
}

Test(tril_triu, rank_one_input_is_an_error) {
  op_harness *h = harness("tril_triu");
  bind_input(h, "X", "v", RILL_DTYPE_FP32, DIMS(3), NULL);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_bool(h, "lower", true));
  EXPECT_ERROR(op_harness_run(h), "tril_triu", "X (v)", "rank 1");
  op_harness_destroy(h);
}
