/* add_position_encoding against a reference loop on padded and LoD inputs, its gradient
 * against finite differences, and its errors. */
#include "nn_test.h"

#include "framework/base/alloc.h"

/* Out for rows whose positions in their sequences are pos[r]. */
static void reference(const double *x, const int64_t *pos, int64_t rows, int64_t P, double alpha,
                      double beta, double *out) {
  int64_t half = P / 2;
  for (int64_t r = 0; r < rows; r++)
    for (int64_t k = 0; k < half; k++) {
      double v = half > 1 ? pos[r] / pow(10000.0, (double)k / (half - 1)) : pos[r] / 10000.0;
      out[r * P + k] = alpha * x[r * P + k] + beta * sin(v);
      out[r * P + half + k] = alpha * x[r * P + half + k] + beta * cos(v);
    }
}

static void set_ab(op_harness *h, const void *arg) {
  const float *ab = arg;
  OK(op_harness_attr_float(h, "alpha", ab[0]));
  OK(op_harness_attr_float(h, "beta", ab[1]));
}

Test(add_position_encoding, padded_and_lod_match_reference) {
  double x[2 * 3 * 6], want[36];
  fill_rand(x, 36, 4);
  float ab[2] = {0.5f, 2.0f};
  op_harness *h = harness("add_position_encoding");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(2, 3, 6), x);
  OK(op_harness_output(h, "Out", "out"));
  set_ab(h, ab);
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "out"), DIMS(2, 3, 6));
  reference(x, (int64_t[]){0, 1, 2, 0, 1, 2}, 6, 6, 0.5, 2.0, want);
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "out")), want, 36, 1e-12);
  op_harness_destroy(h);

  /* sequences of 1, 0 and 3 rows of P = 4 */
  h = harness("add_position_encoding");
  rill_tensor *t = op_harness_make(RILL_DTYPE_FP64, DIMS(4, 4), x);
  t->lod.levels = rill_calloc(1, sizeof *t->lod.levels);
  t->lod.nlevels = 1;
  t->lod.levels[0].offsets = rill_calloc(4, sizeof(uint64_t));
  t->lod.levels[0].n = 4;
  t->lod.levels[0].offsets[1] = 1;
  t->lod.levels[0].offsets[2] = 1;
  t->lod.levels[0].offsets[3] = 4;
  OK(op_harness_input(h, "X", "seq", t));
  op_harness_free_tensor(t);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_run(h));
  rill_tensor *out = op_harness_tensor(h, "out");
  reference(x, (int64_t[]){0, 0, 1, 2}, 4, 4, 1.0, 1.0, want);
  expect_close_f64(rill_tensor_ptr(out), want, 16, 1e-12);
  cr_assert_eq(out->lod.nlevels, 1, "Out keeps X's LoD");
  op_harness_destroy(h);
}

Test(add_position_encoding, gradient_matches_finite_differences) {
  double x[24];
  fill_rand(x, 24, 6);
  float ab[2] = {0.75f, 1.5f};
  fd_case fc = {.op = "add_position_encoding", .out_slots = {"Out"}, .out_names = {"out"},
                .nout = 1, .attrs = set_ab, .arg = ab, .tol = 1e-7, .nin = 1};
  fc.in[0] = (fd_input){"X", "x", {2, 3, 4}, 3, x, true};
  fd_check(&fc);
}

Test(add_position_encoding, bad_input_fails_naming_op_and_variable) {
  op_harness *h = harness("add_position_encoding");
  bind_input(h, "X", "emb", RILL_DTYPE_FP32, DIMS(2, 3, 5), NULL);
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_infer(h), "add_position_encoding", "X (emb)", "P even");
  op_harness_destroy(h);

  h = harness("add_position_encoding");
  bind_input(h, "X", "emb", RILL_DTYPE_FP32, DIMS(2, 3, 4), NULL);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_float(h, "beta", -1.0f));
  EXPECT_ERROR(op_harness_infer(h), "add_position_encoding", "must not be negative");
  op_harness_destroy(h);

  /* a 2-D input needs its LoD when the kernel runs */
  double v[8] = {0};
  h = harness("add_position_encoding");
  bind_input(h, "X", "emb", RILL_DTYPE_FP64, DIMS(2, 4), v);
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_run(h), "add_position_encoding", "X (emb)", "one LoD level");
  op_harness_destroy(h);
}
