/* gather, gather_nd, scatter, scatter_nd_add: forward against loops written here, the
 * gradients by finite differences, and errors for bad indices. */
#include "tensor_test.h"

static const double X12[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};

Test(gather, rows_and_overwrite_gradient) {
  op_harness *h = harness("gather");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(3, 4), X12);
  bind_input(h, "Index", "ids", RILL_DTYPE_INT32, DIMS(3, 1), (const int32_t[]){2, 0, 2});
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_run(h));
  rill_tensor *out = op_harness_tensor(h, "out");
  expect_dims(out, DIMS(3, 4));
  const double *o = rill_tensor_ptr(out);
  const int rows[3] = {2, 0, 2};
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 4; j++) cr_assert_eq(o[i * 4 + j], X12[rows[i] * 4 + j]);
  op_harness_destroy(h);

  /* Distinct rows: the gradient is exact whatever overwrite says. */
  for (int ow = 0; ow < 2; ow++) {
    h = harness("gather");
    bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(3, 2, 2), X12);
    bind_input(h, "Index", "ids", RILL_DTYPE_INT64, DIMS(2), (const int64_t[]){2, 0});
    OK(op_harness_output(h, "Out", "out"));
    OK(op_harness_attr_bool(h, "overwrite", ow));
    OK(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), NULL));
    op_harness_destroy(h);
  }
}

/* A repeated index: overwrite keeps the last Out@GRAD row, else rows are summed. */
Test(gather, repeated_index_gradient_follows_overwrite) {
  for (int ow = 0; ow < 2; ow++) {
    op_harness *h = harness("gather_grad");
    bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(3, 2), NULL);
    bind_input(h, "Index", "ids", RILL_DTYPE_INT64, DIMS(3), (const int64_t[]){2, 0, 2});
    bind_input(h, "Out@GRAD", "dout", RILL_DTYPE_FP32, DIMS(3, 2), (const float[]){1, 2, 3, 4, 5, 6});
    OK(op_harness_output(h, "X@GRAD", "dx"));
    OK(op_harness_attr_bool(h, "overwrite", ow));
    OK(op_harness_run(h));
    const float want_ow[] = {3, 4, 0, 0, 5, 6}, want_sum[] = {3, 4, 0, 0, 6, 8};
    expect_close_f32(rill_tensor_ptr(op_harness_tensor(h, "dx")), ow ? want_ow : want_sum, 6, 0);
    op_harness_destroy(h);
  }
}

Test(gather, bad_index_names_op_and_variable) {
  op_harness *h = harness("gather");
  bind_input(h, "X", "emb", RILL_DTYPE_FP32, DIMS(3, 2), NULL);
  bind_input(h, "Index", "ids", RILL_DTYPE_INT64, DIMS(2), (const int64_t[]){1, 3});
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_run(h), "gather", "Index (ids)", "holds 3", "X (emb)");
  op_harness_destroy(h);

  h = harness("gather");
  bind_input(h, "X", "emb", RILL_DTYPE_FP32, DIMS(3, 2), NULL);
  bind_input(h, "Index", "ids", RILL_DTYPE_INT64, DIMS(2, 2), (const int64_t[]){1, 0, 0, 1});
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_run(h), "gather", "Index (ids)", "[N] or [N, 1]");
  op_harness_destroy(h);

  h = harness("gather");
  bind_input(h, "X", "emb", RILL_DTYPE_FP32, DIMS(3, 2), NULL);
  bind_input(h, "Index", "ids", RILL_DTYPE_FP32, DIMS(2), (const float[]){1, 0});
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_run(h), "gather", "Index (ids)", "int32 or int64");
  op_harness_destroy(h);
}

Test(gather_nd, tuples_and_gradient) {
  /* X [2, 3, 2]; tuples of length 2 pick rows of the last dim. */
  op_harness *h = harness("gather_nd");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(2, 3, 2), X12);
  bind_input(h, "Index", "ix", RILL_DTYPE_INT64, DIMS(2, 1, 2), (const int64_t[]){1, 2, 0, 1});
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_run(h));
  rill_tensor *out = op_harness_tensor(h, "out");
  expect_dims(out, DIMS(2, 1, 2));
  const double want[] = {10, 11, 2, 3};
  expect_close_f64(rill_tensor_ptr(out), want, 4, 0);
  OK(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), NULL));
  op_harness_destroy(h);

  /* Full tuples give scalars; a repeated tuple adds up in the gradient. */
  h = harness("gather_nd");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(3, 4), X12);
  bind_input(h, "Index", "ix", RILL_DTYPE_INT32, DIMS(3, 2), (const int32_t[]){2, 3, 0, 1, 2, 3});
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "out"), DIMS(3));
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "out")), (const double[]){11, 1, 11}, 3, 0);
  OK(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), NULL));
  op_harness_destroy(h);

  h = harness("gather_nd");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(3, 4), X12);
  bind_input(h, "Index", "ix", RILL_DTYPE_INT32, DIMS(1, 2), (const int32_t[]){1, 4});
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_run(h), "gather_nd", "Index (ix)", "holds 4", "dim 1", "X (x)");
  op_harness_destroy(h);

  h = harness("gather_nd");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(3, 4), X12);
  bind_input(h, "Index", "ix", RILL_DTYPE_INT32, DIMS(1, 3), (const int32_t[]){1, 1, 1});
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_run(h), "gather_nd", "Index (ix)", "addresses 3 dims", "X (x)");
  op_harness_destroy(h);
}

Test(scatter, overwrite_and_accumulate) {
  const float x[6] = {0, 10, 20, 30, 40, 50}, up[6] = {-1, -2, -3, -4, -5, -6};
  for (int ow = 0; ow < 2; ow++) {
    op_harness *h = harness("scatter");
    bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(3, 2), x);
    bind_input(h, "Ids", "ids", RILL_DTYPE_INT64, DIMS(3), (const int64_t[]){2, 0, 2});
    bind_input(h, "Updates", "up", RILL_DTYPE_FP32, DIMS(3, 2), up);
    OK(op_harness_output(h, "Out", "out"));
    OK(op_harness_attr_bool(h, "overwrite", ow));
    OK(op_harness_run(h));
    const float want_ow[] = {-3, -4, 20, 30, -5, -6}, want_sum[] = {-3, -4, 20, 30, -6, -8};
    expect_close_f32(rill_tensor_ptr(op_harness_tensor(h, "out")), ow ? want_ow : want_sum, 6, 0);
    op_harness_destroy(h);
  }
}

Test(scatter, gradients) {
  for (int ow = 0; ow < 2; ow++) {
    op_harness *h = harness("scatter");
    bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(4, 3), X12);
    bind_input(h, "Ids", "ids", RILL_DTYPE_INT32, DIMS(2), (const int32_t[]){3, 1});
    bind_input(h, "Updates", "up", RILL_DTYPE_FP64, DIMS(2, 3), X12 + 3);
    OK(op_harness_output(h, "Out", "out"));
    OK(op_harness_attr_bool(h, "overwrite", ow));
    OK(grad_check(h, GC_SLOTS("X", "Updates"), GC_SLOTS("Out"), NULL));
    op_harness_destroy(h);
  }
}

Test(scatter, bad_input_names_op_and_variable) {
  op_harness *h = harness("scatter");
  bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(3, 2), NULL);
  bind_input(h, "Ids", "ids", RILL_DTYPE_INT64, DIMS(2), (const int64_t[]){0, -1});
  bind_input(h, "Updates", "up", RILL_DTYPE_FP32, DIMS(2, 2), NULL);
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_run(h), "scatter", "Ids (ids)", "holds -1");
  op_harness_destroy(h);

  h = harness("scatter");
  bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(3, 2), NULL);
  bind_input(h, "Ids", "ids", RILL_DTYPE_INT64, DIMS(2), (const int64_t[]){0, 1});
  bind_input(h, "Updates", "up", RILL_DTYPE_FP32, DIMS(2, 3), NULL);
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_run(h), "scatter", "Updates (up)", "[2, 2]");
  op_harness_destroy(h);
}

Test(scatter_nd_add, adds_slices_and_gradients) {
  op_harness *h = harness("scatter_nd_add");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(3, 4), X12);
  bind_input(h, "Index", "ix", RILL_DTYPE_INT64, DIMS(3, 1), (const int64_t[]){1, 2, 1});
  bind_input(h, "Updates", "up", RILL_DTYPE_FP64, DIMS(3, 4), X12);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_run(h));
  const double want[] = {0, 1, 2, 3, 4 + 0 + 8, 5 + 1 + 9, 6 + 2 + 10, 7 + 3 + 11, 8 + 4, 9 + 5, 10 + 6, 11 + 7};
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "out")), want, 12, 0);
  OK(grad_check(h, GC_SLOTS("X", "Updates"), GC_SLOTS("Out"), NULL));
  op_harness_destroy(h);

  h = harness("scatter_nd_add");
  bind_input(h, "X", "x", RILL_DTYPE_INT32, DIMS(2, 2), (const int32_t[]){1, 2, 3, 4});
  bind_input(h, "Index", "ix", RILL_DTYPE_INT32, DIMS(2, 2), (const int32_t[]){1, 1, 1, 1});
  bind_input(h, "Updates", "up", RILL_DTYPE_INT32, DIMS(2), (const int32_t[]){10, 20});
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_run(h));
  const int32_t *o = rill_tensor_ptr(op_harness_tensor(h, "out"));
  cr_assert(o[0] == 1 && o[1] == 2 && o[2] == 3 && o[3] == 34);
  op_harness_destroy(h);

  h = harness("scatter_nd_add");
  bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(2, 2), NULL);
  bind_input(h, "Index", "ix", RILL_DTYPE_INT32, DIMS(1, 2), (const int32_t[]){2, 0});
  bind_input(h, "Updates", "up", RILL_DTYPE_FP32, DIMS(1), NULL);
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_run(h), "scatter_nd_add", "Index (ix)", "holds 2", "dim 0");
  op_harness_destroy(h);
}

Test(gather, compile_time_shapes) {
  op_harness *h = harness("gather_nd");
  OK(op_harness_output(h, "Out", "out"));
  rill_tensor_meta ins[2] = {meta_of(RILL_DTYPE_FP32, (const int64_t[]){-1, 5, 6}, 3),
                             meta_of(RILL_DTYPE_INT64, (const int64_t[]){-1, 4, 2}, 3)};
  rill_tensor_meta outs[1];
  OK(compile_infer_n(h, ins, (const size_t[]){1, 1}, outs));
  expect_meta_dims(&outs[0], (const int64_t[]){-1, 4, 6}, 3);
  op_harness_destroy(h);
}

Test(index_select, every_dim_and_gradient) {
  /* X [2, 3, 2]; Index picks along dim with a repeat. */
  const int64_t e[3] = {2, 3, 2};
  for (int dim = -3; dim < 3; dim++) {
    int a = dim < 0 ? dim + 3 : dim;
    const int64_t ids[3] = {e[a] - 1, 0, e[a] - 1};
    op_harness *h = harness("index_select");
    bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(2, 3, 2), X12);
    bind_input(h, "Index", "ix", RILL_DTYPE_INT64, DIMS(3), ids);
    OK(op_harness_output(h, "Out", "out"));
    OK(op_harness_attr_int(h, "dim", dim));
    OK(op_harness_run(h));
    int64_t od[3] = {2, 3, 2};
    od[a] = 3;
    rill_tensor *out = op_harness_tensor(h, "out");
    expect_dims(out, od, 3);
    const double *o = rill_tensor_ptr(out);
    for (int64_t i = 0; i < od[0]; i++)
      for (int64_t j = 0; j < od[1]; j++)
        for (int64_t k = 0; k < od[2]; k++) {
          int64_t c[3] = {i, j, k};
          c[a] = ids[c[a]];
          cr_assert_eq(o[(i * od[1] + j) * od[2] + k], X12[(c[0] * 3 + c[1]) * 2 + c[2]], "dim %d", dim);
        }
    OK(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), &(grad_check_opts){.no_subsets = true}));
    op_harness_destroy(h);
  }
}

Test(index_select, bad_dim_and_index) {
  op_harness *h = harness("index_select");
  bind_input(h, "X", "feat", RILL_DTYPE_FP32, DIMS(2, 3), NULL);
  bind_input(h, "Index", "ix", RILL_DTYPE_INT32, DIMS(2), (const int32_t[]){0, 3});
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_int(h, "dim", 1));
  EXPECT_ERROR(op_harness_run(h), "index_select", "Index (ix)", "holds 3", "dim 1", "X (feat)");
  OK(op_harness_attr_int(h, "dim", 2));
  EXPECT_ERROR(op_harness_run(h), "index_select", "dim 2 is out of range", "X (feat)");
  op_harness_destroy(h);
}

Test(index_sample, per_row_and_gradient) {
  op_harness *h = harness("index_sample");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(3, 4), X12);
  bind_input(h, "Index", "ix", RILL_DTYPE_INT64, DIMS(3, 2), (const int64_t[]){3, 0, 1, 1, 2, 3});
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "out"), DIMS(3, 2));
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "out")), (const double[]){3, 0, 5, 5, 10, 11}, 6, 0);
  OK(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), NULL));
  op_harness_destroy(h);

  h = harness("index_sample");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(3, 4), X12);
  bind_input(h, "Index", "ix", RILL_DTYPE_INT64, DIMS(2, 1), (const int64_t[]){0, 1});
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_run(h), "index_sample", "X (x)", "Index (ix)", "same first extent");
  op_harness_destroy(h);
}
