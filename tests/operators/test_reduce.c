/* reduce_sum / reduce_mean: forward against a naive reference over several dim sets,
 * gradients by finite differences, errors. */
#include "op_test.h"
#include "support/grad_check.h"

typedef struct red_case {
  int32_t dims[4];
  size_t ndims;
  bool keep, all;
  int64_t od[4];
  size_t on;
} red_case;

/* X is [2, 3, 4] in every case. */
static const red_case cases[] = {
    {{0}, 1, false, false, {3, 4}, 2},
    {{1}, 1, false, false, {2, 4}, 2},
    {{-1}, 1, true, false, {2, 3, 1}, 3},
    {{0, 2}, 2, false, false, {3}, 1},
    {{2, 0}, 2, true, false, {1, 3, 1}, 3},
    {{1, 2}, 2, false, false, {2}, 1},
    {{0}, 1, false, true, {1}, 1},
    {{0}, 1, true, true, {1, 1, 1}, 3},
    {{0, 1, 2}, 3, false, false, {1}, 1},
};

static void ref_reduce(const double *x, const red_case *c, bool mean, double *out, int64_t *cnt) {
  const int64_t xd[3] = {2, 3, 4};
  bool red[3] = {c->all, c->all, c->all};
  for (size_t k = 0; k < c->ndims; k++) red[c->dims[k] < 0 ? c->dims[k] + 3 : c->dims[k]] = true;
  int64_t on = 1, count = 1;
  for (int i = 0; i < 3; i++)
    if (red[i]) count *= xd[i];
    else on *= xd[i];
  for (int64_t i = 0; i < on; i++) out[i] = 0;
  for (int64_t a = 0; a < 2; a++)
    for (int64_t b = 0; b < 3; b++)
      for (int64_t d = 0; d < 4; d++) {
        int64_t idx[3] = {a, b, d}, o = 0;
        for (int i = 0; i < 3; i++)
          if (!red[i]) o = o * xd[i] + idx[i];
        out[o] += x[(a * 3 + b) * 4 + d];
      }
  if (mean)
    for (int64_t i = 0; i < on; i++) out[i] /= (double)count;
  *cnt = on;
}

static op_harness *reduce_harness(const char *op, rill_dtype dt, const void *x, const red_case *c) {
  op_harness *h = harness(op);
  bind_input(h, "X", "x", dt, DIMS(2, 3, 4), x);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_ints(h, "dim", c->dims, c->ndims));
  OK(op_harness_attr_bool(h, "keep_dim", c->keep));
  OK(op_harness_attr_bool(h, "reduce_all", c->all));
  return h;
}

Test(reduce, forward_matches_reference_for_every_dim_set) {
  double x[24];
  float xf[24];
  int32_t xi[24];
  int64_t xl[24];
  for (int i = 0; i < 24; i++) {
    x[i] = sin(i * 0.77) * 3;
    xf[i] = (float)x[i];
    xi[i] = (i * 7) % 11 - 5;
    xl[i] = (int64_t)xi[i] * 1000000000;
  }
  double xid[24];
  for (int i = 0; i < 24; i++) xid[i] = xi[i];
  for (size_t ci = 0; ci < RILL_COUNTOF(cases); ci++) {
    const red_case *c = &cases[ci];
    for (int mean = 0; mean < 2; mean++) {
      const char *op = mean ? "reduce_mean" : "reduce_sum";
      double want[24], wanti[24];
      int64_t n;
      ref_reduce(x, c, mean, want, &n);
      ref_reduce(xid, c, mean, wanti, &n);
      op_harness *h = reduce_harness(op, RILL_DTYPE_FP64, x, c);
      OK(op_harness_run(h));
      expect_dims(op_harness_tensor(h, "out"), c->od, c->on);
      expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "out")), want, n, 1e-12);
      op_harness_destroy(h);
      h = reduce_harness(op, RILL_DTYPE_FP32, xf, c);
      OK(op_harness_run(h));
      const float *of = rill_tensor_ptr(op_harness_tensor(h, "out"));
      for (int64_t i = 0; i < n; i++)
        cr_assert(fabs(of[i] - want[i]) < 1e-5, "%s case %zu", op, ci);
      op_harness_destroy(h);
      if (mean) continue;
      h = reduce_harness(op, RILL_DTYPE_INT32, xi, c);
      OK(op_harness_run(h));
      const int32_t *oi = rill_tensor_ptr(op_harness_tensor(h, "out"));
      for (int64_t i = 0; i < n; i++) cr_assert_eq(oi[i], (int32_t)wanti[i], "case %zu", ci);
      op_harness_destroy(h);
      h = reduce_harness(op, RILL_DTYPE_INT64, xl, c);
      OK(op_harness_run(h));
      const int64_t *ol = rill_tensor_ptr(op_harness_tensor(h, "out"));
      for (int64_t i = 0; i < n; i++)
        cr_assert_eq(ol[i], (int64_t)wanti[i] * 1000000000, "case %zu", ci);
      op_harness_destroy(h);
    }
  }
}

Test(reduce, defaults_reduce_dim_0) {
  float x[6] = {1, 2, 3, 4, 5, 6};
  op_harness *h = harness("reduce_sum");
  bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(2, 3), x);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_run(h));
  float want[3] = {5, 7, 9};
  expect_dims(op_harness_tensor(h, "out"), DIMS(3));
  expect_close_f32(rill_tensor_ptr(op_harness_tensor(h, "out")), want, 3, 0);
  op_harness_destroy(h);
}

Test(reduce, gradients_match_finite_differences) {
  double x[24];
  for (int i = 0; i < 24; i++) x[i] = cos(i * 0.31);
  for (size_t ci = 0; ci < RILL_COUNTOF(cases); ci++)
    for (int mean = 0; mean < 2; mean++) {
      op_harness *h = reduce_harness(mean ? "reduce_mean" : "reduce_sum", RILL_DTYPE_FP64, x,
                                     &cases[ci]);
      rill_status *st = grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), NULL);
      cr_assert_null(st, "case %zu: %s", ci, rill_status_message(st));
      op_harness_destroy(h);
    }
}

Test(reduce, bad_dim_and_cast_fail_at_inference) {
  op_harness *h = harness("reduce_sum");
  bind_input(h, "X", "feat", RILL_DTYPE_FP32, DIMS(2, 3), NULL);
  OK(op_harness_output(h, "Out", "o"));
  OK(op_harness_attr_ints(h, "dim", (const int32_t[]){2}, 1));
  EXPECT_ERROR(op_harness_infer(h), "reduce_sum", "X (feat)", "dim 2", "rank 2");
  OK(op_harness_attr_ints(h, "dim", (const int32_t[]){-3}, 1));
  EXPECT_ERROR(op_harness_infer(h), "reduce_sum", "X (feat)", "dim -3");
  OK(op_harness_attr_ints(h, "dim", (const int32_t[]){1}, 1));
  OK(op_harness_attr_int(h, "out_dtype", RILL_DTYPE_FP64));
  EXPECT_ERROR(op_harness_infer(h), "reduce_sum", "out_dtype");
  op_harness_destroy(h);
  h = harness("reduce_mean_grad");
  bind_input(h, "X", "feat", RILL_DTYPE_FP32, DIMS(2, 3), NULL);
  bind_input(h, "Out@GRAD", "g", RILL_DTYPE_FP32, DIMS(4), NULL);
  OK(op_harness_output(h, "X@GRAD", "dx"));
  EXPECT_ERROR(op_harness_infer(h), "reduce_mean_grad", "Out@GRAD (g)", "[4]");
  op_harness_destroy(h);
}

/* reduce_max / reduce_min / reduce_prod over X [2, 3, 4]: kind 0 max, 1 min, 2 prod. */
static void ref_fold(const double *x, const red_case *c, int kind, double *out, int64_t *cnt) {
  const int64_t xd[3] = {2, 3, 4};
  bool red[3] = {c->all, c->all, c->all};
  for (size_t k = 0; k < c->ndims; k++) red[c->dims[k] < 0 ? c->dims[k] + 3 : c->dims[k]] = true;
  int64_t on = 1;
  for (int i = 0; i < 3; i++)
    if (!red[i]) on *= xd[i];
  bool seen[24] = {false};
  for (int64_t a = 0; a < 2; a++)
    for (int64_t b = 0; b < 3; b++)
      for (int64_t d = 0; d < 4; d++) {
        int64_t idx[3] = {a, b, d}, o = 0;
        for (int i = 0; i < 3; i++)
          if (!red[i]) o = o * xd[i] + idx[i];
        double v = x[(a * 3 + b) * 4 + d];
        if (!seen[o]) out[o] = v;
        else if (kind == 0) out[o] = v > out[o] ? v : out[o];
        else if (kind == 1) out[o] = v < out[o] ? v : out[o];
        else out[o] *= v;
        seen[o] = true;
      }
  *cnt = on;
}

static const char *const fold_ops[] = {"reduce_max", "reduce_min", "reduce_prod"};

Test(reduce, max_min_prod_match_reference_for_every_dim_set) {
  double x[24], xid[24];
  float xf[24];
  int32_t xi[24];
  int64_t xl[24];
  for (int i = 0; i < 24; i++) {
    x[i] = 0.6 + sin(i * 0.77) * 0.5;
    xf[i] = (float)x[i];
    xi[i] = (i * 7) % 5 - 2;
    xl[i] = (int64_t)xi[i] * 3;
    xid[i] = xi[i];
  }
  for (size_t ci = 0; ci < RILL_COUNTOF(cases); ci++) {
    const red_case *c = &cases[ci];
    for (int kind = 0; kind < 3; kind++) {
      double want[24], wanti[24], xld[24];
      int64_t n;
      for (int i = 0; i < 24; i++) xld[i] = (double)xl[i];
      ref_fold(x, c, kind, want, &n);
      op_harness *h = reduce_harness(fold_ops[kind], RILL_DTYPE_FP64, x, c);
      OK(op_harness_run(h));
      expect_dims(op_harness_tensor(h, "out"), c->od, c->on);
      expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "out")), want, n, 1e-12);
      op_harness_destroy(h);
      h = reduce_harness(fold_ops[kind], RILL_DTYPE_FP32, xf, c);
      OK(op_harness_run(h));
      const float *of = rill_tensor_ptr(op_harness_tensor(h, "out"));
      for (int64_t i = 0; i < n; i++)
        cr_assert(fabs(of[i] - want[i]) < 1e-5, "%s case %zu", fold_ops[kind], ci);
      op_harness_destroy(h);
      ref_fold(xid, c, kind, wanti, &n);
      h = reduce_harness(fold_ops[kind], RILL_DTYPE_INT32, xi, c);
      OK(op_harness_run(h));
      const int32_t *oi = rill_tensor_ptr(op_harness_tensor(h, "out"));
      for (int64_t i = 0; i < n; i++)
        cr_assert_eq(oi[i], (int32_t)wanti[i], "%s case %zu", fold_ops[kind], ci);
      op_harness_destroy(h);
      ref_fold(xld, c, kind, wanti, &n);
      h = reduce_harness(fold_ops[kind], RILL_DTYPE_INT64, xl, c);
      OK(op_harness_run(h));
      const int64_t *ol = rill_tensor_ptr(op_harness_tensor(h, "out"));
      for (int64_t i = 0; i < n; i++)
        cr_assert_eq(ol[i], (int64_t)wanti[i], "%s case %zu", fold_ops[kind], ci);
      op_harness_destroy(h);
    }
  }
}

Test(reduce, max_min_prod_gradients_match_finite_differences) {
  /* Distinct values, away from zero (prod divides by X). */
  double x[24];
  for (int i = 0; i < 24; i++) x[i] = 0.5 + ((i * 7) % 24) * 0.05;
  for (size_t ci = 0; ci < RILL_COUNTOF(cases); ci++)
    for (int kind = 0; kind < 3; kind++) {
      op_harness *h = reduce_harness(fold_ops[kind], RILL_DTYPE_FP64, x, &cases[ci]);
      rill_status *st = grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), NULL);
      cr_assert_null(st, "%s case %zu: %s", fold_ops[kind], ci, rill_status_message(st));
      op_harness_destroy(h);
    }
}

Test(reduce, max_gradient_goes_to_every_tie) {
  /* Paddle's reduce_max_grad: dX = dOut where X == Out, so tied maxima each get dOut. */
  double x[6] = {1, 3, 3, 2, 2, 0}, dout[2] = {0.5, -2}, out[2];
  op_harness *h = harness("reduce_max");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(2, 3), x);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_ints(h, "dim", (const int32_t[]){1}, 1));
  OK(op_harness_run(h));
  memcpy(out, rill_tensor_ptr(op_harness_tensor(h, "out")), sizeof out);
  op_harness_destroy(h);
  h = harness("reduce_max_grad");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(2, 3), x);
  bind_input(h, "Out", "out", RILL_DTYPE_FP64, DIMS(2), out);
  bind_input(h, "Out@GRAD", "dout", RILL_DTYPE_FP64, DIMS(2), dout);
  OK(op_harness_output(h, "X@GRAD", "dx"));
  OK(op_harness_attr_ints(h, "dim", (const int32_t[]){1}, 1));
  OK(op_harness_run(h));
  double want[6] = {0, 0.5, 0.5, -2, -2, 0};
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "dx")), want, 6, 0);
  op_harness_destroy(h);
}
