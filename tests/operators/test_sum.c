/* sum and fill_zeros_like: dense sums (also in place), selected rows (concatenated, or
 * added into a dense Out), the gradient maker, and the errors. */
#include "op_test.h"

#include "framework/data/scope.h"
#include "support/grad_check.h"

static void bind_rows(op_harness *h, const char *name, const int64_t *rows, size_t n,
                      const double *vals, int64_t width, int64_t height) {
  rill_variable *v;
  OK(rill_scope_var(op_harness_scope(h), name, &v));
  rill_variable_clear(v);
  v->kind = RILL_VARKIND_SELECTED_ROWS;
  rill_selected_rows_init(&v->u.rows);
  v->u.rows.height = height;
  OK(rill_selected_rows_set_rows(&v->u.rows, rows, n));
  rill_dims d = {.n = 2, .d = {(int64_t)n, width}};
  OK(rill_tensor_alloc(&v->u.rows.value, RILL_DTYPE_FP64, &d));
  memcpy(rill_tensor_ptr(&v->u.rows.value), vals, (size_t)(n * (size_t)width) * sizeof(double));
  OK(op_harness_input(h, "X", name, NULL));
}

Test(sum, dense_inputs_add_up) {
  double a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {0.5, -1, 2, 0, 1, 1}, c[6] = {1, 1, 1, 1, 1, 1};
  double want[6];
  for (int i = 0; i < 6; i++) want[i] = a[i] + b[i] + c[i];
  op_harness *h = harness("sum");
  bind_input(h, "X", "a", RILL_DTYPE_FP64, DIMS(2, 3), a);
  bind_input(h, "X", "b", RILL_DTYPE_FP64, DIMS(2, 3), b);
  bind_input(h, "X", "c", RILL_DTYPE_FP64, DIMS(2, 3), c);
  OK(op_harness_output(h, "Out", "s"));
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "s"), DIMS(2, 3));
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "s")), want, 6, 0);
  op_harness_destroy(h);

  float af[3] = {1, 2, 3}, bf[3] = {4, 5, 6}, wf[3] = {5, 7, 9};
  h = harness("sum");
  bind_input(h, "X", "a", RILL_DTYPE_FP32, DIMS(3), af);
  bind_input(h, "X", "b", RILL_DTYPE_FP32, DIMS(3), bf);
  OK(op_harness_output(h, "Out", "s"));
  OK(op_harness_run(h));
  expect_close_f32(rill_tensor_ptr(op_harness_tensor(h, "s")), wf, 3, 0);
  op_harness_destroy(h);
}

Test(sum, out_may_be_an_input) {
  double a[4] = {1, 2, 3, 4}, b[4] = {10, 20, 30, 40}, want[4] = {11, 22, 33, 44};
  op_harness *h = harness("sum");
  bind_input(h, "X", "a", RILL_DTYPE_FP64, DIMS(4), a);
  bind_input(h, "X", "b", RILL_DTYPE_FP64, DIMS(4), b);
  OK(op_harness_output(h, "Out", "a"));
  OK(op_harness_run(h));
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "a")), want, 4, 0);
  op_harness_destroy(h);
  /* Out as the second input */
  h = harness("sum");
  bind_input(h, "X", "a", RILL_DTYPE_FP64, DIMS(4), a);
  bind_input(h, "X", "b", RILL_DTYPE_FP64, DIMS(4), b);
  OK(op_harness_output(h, "Out", "b"));
  OK(op_harness_run(h));
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "b")), want, 4, 0);
  op_harness_destroy(h);
}

Test(sum, selected_rows_concatenate) {
  double v1[4] = {1, 2, 3, 4}, v2[2] = {5, 6};
  int64_t r1[2] = {4, 1}, r2[1] = {4};
  op_harness *h = harness("sum");
  bind_rows(h, "g1", r1, 2, v1, 2, 6);
  bind_rows(h, "g2", r2, 1, v2, 2, 6);
  OK(op_harness_output(h, "Out", "g"));
  OK(op_harness_run(h));
  rill_variable *g = rill_scope_find(op_harness_scope(h), "g");
  cr_assert_eq(g->kind, RILL_VARKIND_SELECTED_ROWS);
  cr_assert_eq(g->u.rows.nrows, 3);
  cr_assert_eq(g->u.rows.height, 6);
  int64_t wr[3] = {4, 1, 4};
  double wv[6] = {1, 2, 3, 4, 5, 6};
  for (int i = 0; i < 3; i++) cr_assert_eq(g->u.rows.rows[i], wr[i]);
  expect_close_f64(rill_tensor_ptr(&g->u.rows.value), wv, 6, 0);
  op_harness_destroy(h);
}

Test(sum, dense_and_selected_rows_give_dense) {
  double d[6] = {1, 1, 1, 1, 1, 1}, v[4] = {1, 2, 3, 4};
  int64_t r[2] = {2, 2};
  double want[6] = {1, 1, 1, 1, 1 + 1 + 3, 1 + 2 + 4};
  op_harness *h = harness("sum");
  bind_input(h, "X", "d", RILL_DTYPE_FP64, DIMS(3, 2), d);
  bind_rows(h, "g", r, 2, v, 2, 3);
  OK(op_harness_output(h, "Out", "s"));
  OK(op_harness_run(h));
  rill_tensor *s = op_harness_tensor(h, "s");
  expect_dims(s, DIMS(3, 2));
  expect_close_f64(rill_tensor_ptr(s), want, 6, 0);
  op_harness_destroy(h);
}

Test(sum, selected_rows_out_in_place_with_a_dense_input_keeps_its_rows) {
  /* g (selected rows) += decay (dense), written to g: as L2 decay adds to a sparse
   * gradient. g's rows must be added, not dropped when g turns dense. */
  double d[6] = {0.1, 0.1, 0.1, 0.1, 0.1, 0.1}, v[4] = {1, 2, 3, 4};
  int64_t r[2] = {2, 0};
  double want[6] = {3.1, 4.1, 0.1, 0.1, 1.1, 2.1};
  for (int order = 0; order < 2; order++) {
    op_harness *h = harness("sum");
    if (order == 0) bind_rows(h, "g", r, 2, v, 2, 3);
    bind_input(h, "X", "decay", RILL_DTYPE_FP64, DIMS(3, 2), d);
    if (order == 1) bind_rows(h, "g", r, 2, v, 2, 3);
    OK(op_harness_output(h, "Out", "g"));
    OK(op_harness_run(h));
    rill_variable *g = rill_scope_find(op_harness_scope(h), "g");
    cr_assert_eq(g->kind, RILL_VARKIND_TENSOR, "order %d", order);
    expect_dims(&g->u.tensor, DIMS(3, 2));
    expect_close_f64(rill_tensor_ptr(&g->u.tensor), want, 6, 0);
    op_harness_destroy(h);
  }
}

Test(sum, mismatched_shapes_name_the_variables) {
  op_harness *h = harness("sum");
  bind_input(h, "X", "fc_0.w_0@GRAD@RENAME@block0@0", RILL_DTYPE_FP32, DIMS(2, 3), NULL);
  bind_input(h, "X", "fc_0.w_0@GRAD@RENAME@block0@1", RILL_DTYPE_FP32, DIMS(3, 2), NULL);
  OK(op_harness_output(h, "Out", "fc_0.w_0@GRAD"));
  EXPECT_ERROR(op_harness_run(h), "sum", "X[1]", "fc_0.w_0@GRAD@RENAME@block0@1", "[3, 2]");
  op_harness_destroy(h);
  h = harness("sum");
  bind_input(h, "X", "a", RILL_DTYPE_FP32, DIMS(2), NULL);
  bind_input(h, "X", "b", RILL_DTYPE_FP64, DIMS(2), NULL);
  OK(op_harness_output(h, "Out", "s"));
  EXPECT_ERROR(op_harness_run(h), "sum", "X[1]", "float64");
  op_harness_destroy(h);
}

Test(sum, gradient_matches_finite_differences) {
  double a[6], b[6];
  for (int i = 0; i < 6; i++) {
    a[i] = 0.1 * i - 0.3;
    b[i] = 1 - 0.2 * i;
  }
  op_harness *h = harness("sum");
  bind_input(h, "X", "a", RILL_DTYPE_FP64, DIMS(2, 3), a);
  bind_input(h, "X", "b", RILL_DTYPE_FP64, DIMS(2, 3), b);
  OK(op_harness_output(h, "Out", "s"));
  OK(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), NULL));
  op_harness_destroy(h);
}

Test(fill_zeros_like, zeros_with_the_shape_and_dtype_of_x) {
  double x[6] = {1, 2, 3, 4, 5, 6}, z[6] = {0};
  op_harness *h = harness("fill_zeros_like");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(3, 2), x);
  OK(op_harness_output(h, "Out", "x@GRAD"));
  OK(op_harness_run(h));
  rill_tensor *o = op_harness_tensor(h, "x@GRAD");
  expect_dims(o, DIMS(3, 2));
  cr_assert_eq(o->dtype, RILL_DTYPE_FP64);
  expect_close_f64(rill_tensor_ptr(o), z, 6, 0);
  OK(op_harness_run(h)); /* again over a reused buffer */
  expect_close_f64(rill_tensor_ptr(o), z, 6, 0);
  op_harness_destroy(h);
  int64_t ids[3] = {7, 8, 9};
  h = harness("fill_zeros_like");
  bind_input(h, "X", "ids", RILL_DTYPE_INT64, DIMS(3), ids);
  OK(op_harness_output(h, "Out", "zi"));
  OK(op_harness_run(h));
  cr_assert_eq(op_harness_tensor(h, "zi")->dtype, RILL_DTYPE_INT64);
  cr_assert_eq(((int64_t *)rill_tensor_ptr(op_harness_tensor(h, "zi")))[2], 0);
  op_harness_destroy(h);
}

Test(sum, first_two_dense_inputs_added_in_one_pass_keep_the_order) {
  /* an unset input first (skipped), the same dense input twice, then selected rows:
   * Out = a + a + rows, in that order */
  double a[6] = {1, 2, 3, 4, 5, 6}, rv[3] = {10, 20, 30};
  int64_t rows[1] = {1};
  double want[6] = {2, 4, 6, 18, 30, 42};
  op_harness *h = harness("sum");
  rill_variable *u;
  OK(rill_scope_var(op_harness_scope(h), "u", &u));
  OK(op_harness_input(h, "X", "u", NULL));
  bind_input(h, "X", "a", RILL_DTYPE_FP64, DIMS(2, 3), a);
  OK(op_harness_input(h, "X", "a", NULL));
  bind_rows(h, "r", rows, 1, rv, 3, 2);
  OK(op_harness_output(h, "Out", "s"));
  OK(op_harness_run(h));
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "s")), want, 6, 0);
  /* a second run over the kept buffer gives the same (Out is written, not accumulated) */
  OK(op_harness_run(h));
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "s")), want, 6, 0);
  op_harness_destroy(h);
}
