/* The ops Paddle's gradient clipping applies to a sparse (selected-rows) gradient:
 * merge_selected_rows, get_tensor_from_selected_rows, clip of selected rows (merged
 * first) and elementwise_mul of selected rows by one element. */
#include "tensor_test.h"

/* Puts selected rows (rows, width 2, float values) in variable `name` of h's scope. */
static void put_rows(op_harness *h, const char *name, const int64_t *rows, size_t n,
                     const float *vals) {
  OK(op_harness_input(h, "X", name, NULL));
  rill_selected_rows *sr = rill_variable_selected_rows(rill_scope_find(op_harness_scope(h), name));
  cr_assert_not_null(sr);
  OK(rill_selected_rows_set_rows(sr, rows, n));
  sr->height = 6;
  rill_dims d = {2, {(int64_t)n, 2}};
  OK(rill_tensor_alloc(&sr->value, RILL_DTYPE_FP32, &d));
  for (size_t i = 0; i < 2 * n; i++) ((float *)rill_tensor_ptr(&sr->value))[i] = vals[i];
}

static const rill_selected_rows *rows_of(op_harness *h, const char *name) {
  rill_variable *v = rill_scope_find(op_harness_scope(h), name);
  cr_assert_eq(v->kind, RILL_VARKIND_SELECTED_ROWS, "%s holds a %s", name,
               rill_var_kind_name(v->kind));
  return &v->u.rows;
}

static const int64_t ROWS[] = {4, 1, 4, 0, 1};
static const float VALS[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};

Test(merge_selected_rows, rows_once_ascending_with_summed_values) {
  op_harness *h = harness("merge_selected_rows");
  put_rows(h, "g", ROWS, 5, VALS);
  OK(op_harness_output(h, "Out", "m"));
  OK(op_harness_run(h));
  const rill_selected_rows *m = rows_of(h, "m");
  cr_assert_eq(m->nrows, 3);
  cr_assert_eq(m->height, 6);
  const int64_t want_rows[] = {0, 1, 4};
  const float want[] = {7, 8, 3 + 9, 4 + 10, 1 + 5, 2 + 6};
  for (int i = 0; i < 3; i++) cr_assert_eq(m->rows[i], want_rows[i]);
  expect_dims(&m->value, DIMS(3, 2));
  for (int i = 0; i < 6; i++) cr_assert_eq(((float *)rill_tensor_ptr(&m->value))[i], want[i]);
  /* the input is left as it was */
  cr_assert_eq(rows_of(h, "g")->nrows, 5);
  op_harness_destroy(h);
}

Test(merge_selected_rows, no_rows_and_errors) {
  op_harness *h = harness("merge_selected_rows");
  put_rows(h, "g", NULL, 0, NULL);
  OK(op_harness_output(h, "Out", "m"));
  OK(op_harness_run(h));
  cr_assert_eq(rows_of(h, "m")->nrows, 0);
  op_harness_destroy(h);
  /* a dense X is an error naming the op and the variable */
  h = harness("merge_selected_rows");
  bind_input(h, "X", "dense", RILL_DTYPE_FP32, DIMS(2), (const float[]){1, 2});
  OK(op_harness_output(h, "Out", "m"));
  EXPECT_ERROR(op_harness_run(h), "merge_selected_rows", "X (dense)", "not selected rows");
  op_harness_destroy(h);
  /* merging in place is refused */
  h = harness("merge_selected_rows");
  put_rows(h, "g", ROWS, 5, VALS);
  OK(op_harness_output(h, "Out", "g"));
  EXPECT_ERROR(op_harness_run(h), "merge_selected_rows", "Out (g)", "not in place");
  op_harness_destroy(h);
}

Test(get_tensor_from_selected_rows, the_values) {
  op_harness *h = harness("get_tensor_from_selected_rows");
  put_rows(h, "g", ROWS, 5, VALS);
  OK(op_harness_output(h, "Out", "t"));
  OK(op_harness_run(h));
  rill_tensor *t = op_harness_tensor(h, "t");
  expect_dims(t, DIMS(5, 2));
  for (int i = 0; i < 10; i++) cr_assert_eq(((float *)rill_tensor_ptr(t))[i], VALS[i]);
  op_harness_destroy(h);
}

Test(clip, selected_rows_are_merged_then_clipped) {
  op_harness *h = harness("clip");
  put_rows(h, "g", ROWS, 5, VALS);
  OK(op_harness_output(h, "Out", "c"));
  OK(op_harness_attr_float(h, "min", 2.5f));
  OK(op_harness_attr_float(h, "max", 8.5f));
  OK(op_harness_run(h));
  const rill_selected_rows *c = rows_of(h, "c");
  cr_assert_eq(c->nrows, 3);
  const float want[] = {7, 8, 8.5f, 8.5f, 6, 8}; /* merged {7, 8, 12, 14, 6, 8} */
  for (int i = 0; i < 6; i++) cr_assert_eq(((float *)rill_tensor_ptr(&c->value))[i], want[i]);
  op_harness_destroy(h);
}

Test(elementwise_mul, selected_rows_times_one_element) {
  op_harness *h = harness("elementwise_mul");
  put_rows(h, "g", ROWS, 5, VALS);
  bind_input(h, "Y", "s", RILL_DTYPE_FP32, DIMS(1), (const float[]){0.5f});
  OK(op_harness_output(h, "Out", "o"));
  OK(op_harness_attr_int(h, "axis", -1));
  OK(op_harness_run(h));
  const rill_selected_rows *o = rows_of(h, "o");
  cr_assert_eq(o->nrows, 5);
  cr_assert_eq(o->height, 6);
  for (int i = 0; i < 5; i++) cr_assert_eq(o->rows[i], ROWS[i]);
  for (int i = 0; i < 10; i++)
    cr_assert_eq(((float *)rill_tensor_ptr(&o->value))[i], VALS[i] * 0.5f);
  op_harness_destroy(h);
  /* in place: the rows stay, the values scale */
  h = harness("elementwise_mul");
  put_rows(h, "g", ROWS, 5, VALS);
  bind_input(h, "Y", "s", RILL_DTYPE_FP32, DIMS(1), (const float[]){0.5f});
  OK(op_harness_output(h, "Out", "g"));
  OK(op_harness_run(h));
  const rill_selected_rows *g = rows_of(h, "g");
  cr_assert_eq(g->nrows, 5);
  cr_assert_eq(g->rows[4], 1);
  cr_assert_eq(((float *)rill_tensor_ptr(&g->value))[9], 5.0f);
  op_harness_destroy(h);
  /* Y of more than one element is an error */
  h = harness("elementwise_mul");
  put_rows(h, "g", ROWS, 5, VALS);
  bind_input(h, "Y", "two", RILL_DTYPE_FP32, DIMS(2), (const float[]){1, 2});
  OK(op_harness_output(h, "Out", "o"));
  EXPECT_ERROR(op_harness_run(h), "elementwise_mul", "Y (two)", "one element");
  op_harness_destroy(h);
}
