/* sequence_softmax against a per-sequence softmax worked out here, its gradient by finite
 * differences and by hand, and the errors. */
#include "op_test.h"

#include "support/grad_check.h"

static const uint64_t lod[] = {0, 3, 3, 4, 8}; /* 3, 0, 1 and 4 rows */

static void bind_lod(op_harness *h, const char *slot, const char *name, rill_dtype dt,
                     const int64_t *dims, size_t nd, const void *v) {
  rill_tensor *t = op_harness_make(dt, dims, nd, v);
  cr_assert_not_null(t);
  const uint64_t *levels[1] = {lod};
  size_t counts[1] = {RILL_COUNTOF(lod)};
  OK(rill_tensor_set_lod(t, 1, levels, counts));
  OK(op_harness_input(h, slot, name, t));
  op_harness_free_tensor(t);
}

Test(sequence_softmax, each_sequence_sums_to_one_and_keeps_the_lod) {
  const double x[8] = {0.5, -1.0, 2.0, 7.0, 1.0, 1.0, 3.0, 800.0};
  double want[8];
  for (int s = 0; s + 1 < (int)RILL_COUNTOF(lod); s++) {
    double top = -INFINITY, sum = 0;
    for (uint64_t k = lod[s]; k < lod[s + 1]; k++) top = fmax(top, x[k]);
    for (uint64_t k = lod[s]; k < lod[s + 1]; k++) sum += exp(x[k] - top);
    for (uint64_t k = lod[s]; k < lod[s + 1]; k++) want[k] = exp(x[k] - top) / sum;
  }
  cr_assert_eq(want[3], 1.0, "a sequence of one row gets 1");
  cr_assert(want[7] == 1.0 && want[4] == 0.0, "a large score takes all and stays finite");
  for (int f32 = 0; f32 < 2; f32++) {
    float xf[8];
    for (int i = 0; i < 8; i++) xf[i] = (float)x[i];
    op_harness *h = harness("sequence_softmax");
    bind_lod(h, "X", "x", f32 ? RILL_DTYPE_FP32 : RILL_DTYPE_FP64, DIMS(8, 1),
             f32 ? (const void *)xf : (const void *)x);
    OK(op_harness_output(h, "Out", "out"));
    OK(op_harness_run(h));
    rill_tensor *o = op_harness_tensor(h, "out");
    expect_dims(o, DIMS(8, 1));
    cr_assert_eq(o->lod.nlevels, 1, "Out keeps X's LoD");
    cr_assert_eq(o->lod.levels[0].n, RILL_COUNTOF(lod));
    if (f32) {
      float wf[8];
      for (int i = 0; i < 8; i++) wf[i] = (float)want[i];
      expect_close_f32(rill_tensor_ptr(o), wf, 8, 1e-6f);
    } else {
      expect_close_f64(rill_tensor_ptr(o), want, 8, 1e-15);
    }
    op_harness_destroy(h);
  }
}

Test(sequence_softmax, gradient_matches_finite_differences) {
  double x[8];
  for (int i = 0; i < 8; i++) x[i] = sin(1.3 * i + 0.2) * 2;
  for (int rank1 = 0; rank1 < 2; rank1++) {
    op_harness *h = harness("sequence_softmax");
    if (rank1)
      bind_lod(h, "X", "x", RILL_DTYPE_FP64, DIMS(8), x);
    else
      bind_lod(h, "X", "x", RILL_DTYPE_FP64, DIMS(8, 1), x);
    OK(op_harness_output(h, "Out", "out"));
    rill_status *st = grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), NULL);
    cr_assert_null(st, "%s", rill_status_message(st));
    op_harness_destroy(h);
  }
}

Test(sequence_softmax, gradient_by_hand) {
  /* one sequence: Out (0.25, 0.75), dOut (1, 3): sum 2.5, X@GRAD = (-0.375, 0.375) */
  static const uint64_t one[] = {0, 2};
  const uint64_t *levels[1] = {one};
  size_t counts[1] = {2};
  op_harness *h = harness("sequence_softmax_grad");
  const char *slots[3] = {"Out", "Out@GRAD", "X"};
  const double vals[3][2] = {{0.25, 0.75}, {1, 3}, {0, 0}};
  for (int k = 0; k < 3; k++) {
    rill_tensor *t = op_harness_make(RILL_DTYPE_FP64, DIMS(2, 1), vals[k]);
    cr_assert_not_null(t);
    OK(rill_tensor_set_lod(t, 1, levels, counts));
    OK(op_harness_input(h, slots[k], slots[k], t));
    op_harness_free_tensor(t);
  }
  OK(op_harness_output(h, "X@GRAD", "dx"));
  OK(op_harness_run(h));
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "dx")), (const double[]){-0.375, 0.375}, 2,
                   1e-15);
  op_harness_destroy(h);
}

Test(sequence_softmax, bad_inputs_are_errors_naming_them) {
  double x[8] = {0};
  op_harness *h = harness("sequence_softmax");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(8, 1), x);
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_run(h), "sequence_softmax", "X", "x", "no LoD");
  op_harness_destroy(h);
  static const uint64_t halves[] = {0, 2, 4};
  const uint64_t *levels[1] = {halves};
  size_t counts[1] = {3};
  h = harness("sequence_softmax");
  rill_tensor *t = op_harness_make(RILL_DTYPE_FP64, DIMS(4, 2), x);
  OK(rill_tensor_set_lod(t, 1, levels, counts));
  OK(op_harness_input(h, "X", "x", t));
  op_harness_free_tensor(t);
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_run(h), "sequence_softmax", "X", "x", "[T, 1] or [T]");
  op_harness_destroy(h);
  h = harness("sequence_softmax");
  bind_lod(h, "X", "x", RILL_DTYPE_INT64, DIMS(8, 1), (int64_t[8]){0});
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_run(h), "sequence_softmax", "X", "x", "float32 or float64");
  op_harness_destroy(h);
}
