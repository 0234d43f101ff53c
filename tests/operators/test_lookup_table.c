#include "tensor_test.h"

static const double table[5 * 3] = {0.1, 0.2, 0.3, 1.1, 1.2, 1.3, 2.1, 2.2, 2.3,
                                    3.1, 3.2, 3.3, 4.1, 4.2, 4.3};

static op_harness *lookup(const char *type, const int64_t *ids, const int64_t *idd, size_t idn,
                          int64_t pad) {
  op_harness *h = harness(type);
  bind_input(h, "W", "emb", RILL_DTYPE_FP64, DIMS(5, 3), table);
  bind_input(h, "Ids", "ids", RILL_DTYPE_INT64, idd, idn, ids);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_long(h, "padding_idx", pad));
  return h;
}

static void expect_rows(const rill_tensor *out, const int64_t *ids, int64_t n, int64_t pad) {
  const double *p = rill_tensor_ptr(out);
  for (int64_t i = 0; i < n; i++)
    for (int j = 0; j < 3; j++) {
      double want = ids[i] == pad ? 0 : table[ids[i] * 3 + j];
      cr_assert_eq(p[i * 3 + j], want, "row %lld col %d", (long long)i, j);
    }
}

Test(lookup_table, picks_rows_and_zeros_padding) {
  const int64_t ids[] = {4, 0, 2, 2};
  op_harness *h = lookup("lookup_table", ids, DIMS(4, 1), -1);
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "out"), DIMS(4, 3));
  expect_rows(op_harness_tensor(h, "out"), ids, 4, -1);
  OK(op_harness_attr_long(h, "padding_idx", 2));
  OK(op_harness_run(h));
  expect_rows(op_harness_tensor(h, "out"), ids, 4, 2);
  op_harness_destroy(h);
}

Test(lookup_table_v2, ids_of_any_shape) {
  const int64_t ids[] = {1, 3, 0, 4, 4, 1};
  op_harness *h = lookup("lookup_table_v2", ids, DIMS(2, 3), 0);
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "out"), DIMS(2, 3, 3));
  expect_rows(op_harness_tensor(h, "out"), ids, 6, 0);
  op_harness_destroy(h);
  h = harness("lookup_table_v2");
  bind_input(h, "W", "emb", RILL_DTYPE_FP32, DIMS(5, 2), (const float[]){0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  bind_input(h, "Ids", "ids", RILL_DTYPE_INT32, DIMS(2), (const int32_t[]){3, 1});
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_run(h));
  const float *p = rill_tensor_ptr(op_harness_tensor(h, "out"));
  cr_assert(p[0] == 6 && p[1] == 7 && p[2] == 2 && p[3] == 3);
  op_harness_destroy(h);
}

Test(lookup_table, bad_ids_name_op_and_variables) {
  op_harness *h = lookup("lookup_table", (const int64_t[]){1, 5}, DIMS(2, 1), -1);
  EXPECT_ERROR(op_harness_run(h), "lookup_table", "Ids (ids)", "5", "5 rows");
  op_harness_destroy(h);
  h = lookup("lookup_table_v2", (const int64_t[]){-1, 0}, DIMS(2), -2);
  EXPECT_ERROR(op_harness_run(h), "lookup_table_v2", "Ids (ids)", "-1");
  op_harness_destroy(h);
  h = lookup("lookup_table", (const int64_t[]){1, 2}, DIMS(1, 2), -1);
  EXPECT_ERROR(op_harness_run(h), "lookup_table", "Ids (ids)", "last dim must be 1");
  op_harness_destroy(h);
  h = harness("lookup_table");
  bind_input(h, "W", "emb", RILL_DTYPE_FP32, DIMS(5, 2), NULL);
  bind_input(h, "Ids", "ids", RILL_DTYPE_FP32, DIMS(2, 1), NULL);
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_run(h), "lookup_table", "Ids (ids)", "float32");
  op_harness_destroy(h);
  h = harness("lookup_table");
  bind_input(h, "W", "emb", RILL_DTYPE_FP32, DIMS(10), NULL);
  bind_input(h, "Ids", "ids", RILL_DTYPE_INT64, DIMS(2, 1), NULL);
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_run(h), "lookup_table", "W (emb)", "matrix");
  op_harness_destroy(h);
}

Test(lookup_table, compile_time_shapes) {
  op_harness *h = harness("lookup_table");
  rill_tensor_meta ins[2] = {meta_of(RILL_DTYPE_FP32, DIMS(100, 16)), meta_of(RILL_DTYPE_INT64, DIMS(-1, 1))};
  rill_tensor_meta outs[1];
  OK(compile_infer_n(h, ins, (const size_t[]){1, 1}, outs));
  expect_meta_dims(&outs[0], DIMS(-1, 16));
  op_harness_destroy(h);
  h = harness("lookup_table_v2");
  ins[1] = meta_of(RILL_DTYPE_INT64, DIMS(-1, 7));
  OK(compile_infer_n(h, ins, (const size_t[]){1, 1}, outs));
  expect_meta_dims(&outs[0], DIMS(-1, 7, 16));
  op_harness_destroy(h);
}

Test(lookup_table, finite_difference_gradient) {
  op_harness *h = lookup("lookup_table", (const int64_t[]){4, 0, 2, 2, 1}, DIMS(5, 1), 1);
  OK(grad_check(h, GC_SLOTS("W"), GC_SLOTS("Out"), NULL));
  op_harness_destroy(h);
  h = lookup("lookup_table_v2", (const int64_t[]){3, 3, 0, 4}, DIMS(2, 2), -1);
  OK(grad_check(h, GC_SLOTS("W"), GC_SLOTS("Out"), NULL));
  op_harness_destroy(h);
}

Test(lookup_table, sparse_gradient_is_selected_rows) {
  const int64_t ids[] = {3, 1, 3, 0};
  op_harness *h = harness("lookup_table_v2_grad");
  bind_input(h, "W", "emb", RILL_DTYPE_FP32, DIMS(5, 2), NULL);
  bind_input(h, "Ids", "ids", RILL_DTYPE_INT64, DIMS(4), ids);
  bind_input(h, "Out@GRAD", "out@GRAD", RILL_DTYPE_FP32, DIMS(4, 2),
             (const float[]){1, 2, 3, 4, 5, 6, 7, 8});
  OK(op_harness_output(h, "W@GRAD", "emb@GRAD"));
  OK(op_harness_attr_bool(h, "is_sparse", true));
  OK(op_harness_attr_long(h, "padding_idx", 0));
  OK(op_harness_run(h));
  rill_variable *v = rill_scope_find(op_harness_scope(h), "emb@GRAD");
  cr_assert_eq(v->kind, RILL_VARKIND_SELECTED_ROWS, "kind %s", rill_var_kind_name(v->kind));
  const rill_selected_rows *sr = &v->u.rows;
  cr_assert_eq(sr->nrows, 4);
  cr_assert_eq(sr->height, 5);
  for (int i = 0; i < 4; i++) cr_assert_eq(sr->rows[i], ids[i]);
  const int64_t vd[] = {4, 2};
  expect_dims(&sr->value, vd, 2);
  const float *p = rill_tensor_ptr(&sr->value);
  /* as in Paddle 1.8, the sparse gradient holds the padding row's position too */
  const float want[] = {1, 2, 3, 4, 5, 6, 7, 8};
  for (int i = 0; i < 8; i++) cr_assert_eq(p[i], want[i], "[%d]", i);
  /* the dense gradient sums the same rows but leaves the padding row at zero */
  OK(op_harness_attr_bool(h, "is_sparse", false));
  rill_scope_erase(op_harness_scope(h), "emb@GRAD");
  OK(op_harness_output(h, "W@GRAD", NULL));
  OK(op_harness_run(h));
  const float *d = rill_tensor_ptr(op_harness_tensor(h, "emb@GRAD"));
  const float dense[] = {0, 0, 3, 4, 0, 0, 6, 8, 0, 0};
  for (int i = 0; i < 10; i++) cr_assert_eq(d[i], dense[i], "[%d]", i);
  op_harness_destroy(h);
}

Test(lookup_table, maker_follows_paddle) {
  op_harness *h = lookup("lookup_table", (const int64_t[]){0}, DIMS(1, 1), -1);
  rill_grad_ctx g = run_maker(h);
  cr_assert_eq(g.nops, 1);
  cr_assert_str_eq(g.ops[0].type, "lookup_table_grad");
  expect_slot(&g.ops[0], true, "W", "emb");
  expect_slot(&g.ops[0], true, "Ids", "ids");
  expect_slot(&g.ops[0], true, "Out@GRAD", "out@GRAD");
  expect_slot(&g.ops[0], false, "W@GRAD", "emb@GRAD");
  cr_assert_eq(g.ops[0].noutputs, 1, "Ids gets no gradient");
  rill_grad_ctx_clear(&g);
  op_harness_destroy(h);
}
