/* split_selected_rows (a SelectedRows gradient cut into the row blocks the pservers
 * hold) and split_byref (a dense gradient cut into row blocks): outputs against a
 * naive reference, and the errors. */
#include "op_test.h"

#include "framework/data/scope.h"

static void bind_rows(op_harness *h, const char *name, const int64_t *rows, size_t n,
                      const float *vals, int64_t width, int64_t height) {
  rill_variable *v;
  OK(rill_scope_var(op_harness_scope(h), name, &v));
  rill_variable_clear(v);
  v->kind = RILL_VARKIND_SELECTED_ROWS;
  rill_selected_rows_init(&v->u.rows);
  v->u.rows.height = height;
  OK(rill_selected_rows_set_rows(&v->u.rows, rows, n));
  rill_dims d = {.n = 2, .d = {(int64_t)n, width}};
  OK(rill_tensor_alloc(&v->u.rows.value, RILL_DTYPE_FP32, &d));
  memcpy(rill_tensor_ptr(&v->u.rows.value), vals, n * (size_t)width * sizeof(float));
  OK(op_harness_input(h, "X", name, NULL));
}

Test(split_selected_rows, rows_go_to_their_section_renumbered) {
  /* height 10 in sections 4, 6; rows in X's order, duplicates kept */
  int64_t rows[5] = {7, 1, 4, 1, 9};
  float vals[10] = {70, 71, 10, 11, 40, 41, 12, 13, 90, 91};
  op_harness *h = harness("split_selected_rows");
  bind_rows(h, "g", rows, 5, vals, 2, 10);
  OK(op_harness_output(h, "Out", "g0"));
  OK(op_harness_output(h, "Out", "g1"));
  OK(op_harness_attr_longs(h, "height_sections", (int64_t[]){4, 6}, 2));
  OK(op_harness_run(h));
  rill_variable *a = rill_scope_find(op_harness_scope(h), "g0");
  rill_variable *b = rill_scope_find(op_harness_scope(h), "g1");
  cr_assert_eq(a->kind, RILL_VARKIND_SELECTED_ROWS);
  cr_assert_eq(a->u.rows.height, 4);
  cr_assert_eq(a->u.rows.nrows, 2);
  cr_assert_eq(a->u.rows.rows[0], 1);
  cr_assert_eq(a->u.rows.rows[1], 1);
  float wa[4] = {10, 11, 12, 13};
  expect_close_f32(rill_tensor_ptr(&a->u.rows.value), wa, 4, 0);
  cr_assert_eq(b->u.rows.height, 6);
  cr_assert_eq(b->u.rows.nrows, 3);
  int64_t wr[3] = {3, 0, 5};
  for (int i = 0; i < 3; i++) cr_assert_eq(b->u.rows.rows[i], wr[i]);
  float wb[6] = {70, 71, 40, 41, 90, 91};
  expect_close_f32(rill_tensor_ptr(&b->u.rows.value), wb, 6, 0);
  op_harness_destroy(h);
}

Test(split_selected_rows, sections_must_cover_the_height) {
  int64_t rows[1] = {0};
  float vals[2] = {1, 2};
  op_harness *h = harness("split_selected_rows");
  bind_rows(h, "g", rows, 1, vals, 2, 10);
  OK(op_harness_output(h, "Out", "g0"));
  OK(op_harness_output(h, "Out", "g1"));
  OK(op_harness_attr_longs(h, "height_sections", (int64_t[]){4, 5}, 2));
  rill_status *st = op_harness_run(h);
  cr_assert_not_null(st);
  cr_assert(strstr(rill_status_message(st), "add up to 9 but X (g) has height 10"), "%s",
            rill_status_message(st));
  rill_status_destroy(st);
  op_harness_destroy(h);
}

Test(split_byref, cuts_rows_by_sections) {
  float x[12];
  for (int i = 0; i < 12; i++) x[i] = (float)i;
  op_harness *h = harness("split_byref");
  bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(4, 3), x);
  OK(op_harness_output(h, "Out", "a"));
  OK(op_harness_output(h, "Out", "b"));
  OK(op_harness_attr_ints(h, "sections", (int32_t[]){3, 1}, 2));
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "a"), DIMS(3, 3));
  expect_dims(op_harness_tensor(h, "b"), DIMS(1, 3));
  expect_close_f32(rill_tensor_ptr(op_harness_tensor(h, "a")), x, 9, 0);
  expect_close_f32(rill_tensor_ptr(op_harness_tensor(h, "b")), x + 9, 3, 0);
  op_harness_destroy(h);
}

Test(split_byref, aligned_row_blocks_are_views_of_x) {
  /* rows of 16 floats (64 bytes): every block starts aligned, so no block is copied */
  enum { R = 32, W = 16 };
  float x[R * W];
  for (int i = 0; i < R * W; i++) x[i] = (float)i;
  op_harness *h = harness("split_byref");
  bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(R, W), x);
  OK(op_harness_output(h, "Out", "a"));
  OK(op_harness_output(h, "Out", "b"));
  OK(op_harness_attr_ints(h, "sections", (int32_t[]){20, -1}, 2));
  OK(op_harness_run(h));
  rill_tensor *tx = op_harness_tensor(h, "x"), *a = op_harness_tensor(h, "a"),
              *b = op_harness_tensor(h, "b");
  expect_dims(a, DIMS(20, W));
  expect_dims(b, DIMS(12, W));
  cr_assert_eq(a->buf, tx->buf, "block 0 is a copy, not a view of X");
  cr_assert_eq(b->buf, tx->buf, "block 1 is a copy, not a view of X");
  cr_assert_eq(b->offset, tx->offset + 20 * W * sizeof(float));
  expect_close_f32(rill_tensor_ptr(a), x, 20 * W, 0);
  expect_close_f32(rill_tensor_ptr(b), x + 20 * W, 12 * W, 0);
  /* the next writer of X takes a buffer of its own: the blocks keep their bytes */
  OK(rill_tensor_alloc(tx, RILL_DTYPE_FP32, &tx->dims));
  cr_assert_neq(tx->buf, a->buf);
  memset(rill_tensor_ptr(tx), 0, sizeof x);
  expect_close_f32(rill_tensor_ptr(b), x + 20 * W, 12 * W, 0);
  /* a second run replaces the views (no stale reference to the old buffer is kept) */
  OK(op_harness_run(h));
  cr_assert_eq(op_harness_tensor(h, "a")->buf, tx->buf);
  op_harness_destroy(h);
}

Test(split_byref, unaligned_blocks_are_copied) {
  float x[12];
  for (int i = 0; i < 12; i++) x[i] = (float)i;
  op_harness *h = harness("split_byref");
  bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(4, 3), x);
  OK(op_harness_output(h, "Out", "a"));
  OK(op_harness_output(h, "Out", "b"));
  OK(op_harness_attr_ints(h, "sections", (int32_t[]){1, 3}, 2));
  OK(op_harness_run(h));
  cr_assert_neq(op_harness_tensor(h, "b")->buf, op_harness_tensor(h, "x")->buf);
  expect_close_f32(rill_tensor_ptr(op_harness_tensor(h, "b")), x + 3, 9, 0);
  op_harness_destroy(h);
}
