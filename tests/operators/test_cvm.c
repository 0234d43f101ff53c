/* cvm (continuous_value_model): forward with and without use_cvm against a naive
 * reference, Y's shape and LoD; cvm_grad's Paddle semantics (dY's columns, the row's or
 * its sequence's CVM pair in front) by hand, a finite-difference check where dX is a
 * true derivative (use_cvm false with a zero CVM), and the errors naming op and
 * variable. */
#include <math.h>

#include "op_test.h"
#include "support/grad_check.h"

enum { N = 4, D = 5 };
static const uint64_t LOD[] = {0, 1, 4}; /* sequences of 1 and 3 rows */

static op_harness *cvm_harness(const double *x, const double *c, int64_t nc, bool use, bool lod) {
  op_harness *h = harness("cvm");
  rill_tensor *t = op_harness_make(RILL_DTYPE_FP64, DIMS(N, D), x);
  if (lod) {
    const uint64_t *levels[1] = {LOD};
    size_t counts[1] = {3};
    OK(rill_tensor_set_lod(t, 1, levels, counts));
  }
  OK(op_harness_input(h, "X", "emb", t));
  op_harness_free_tensor(t);
  bind_input(h, "CVM", "show_clk", RILL_DTYPE_FP64, (const int64_t[]){nc, 2}, 2, c);
  OK(op_harness_output(h, "Y", "y"));
  OK(op_harness_attr_bool(h, "use_cvm", use));
  return h;
}

static void fill(double *x) {
  for (int i = 0; i < N * D; i++) x[i] = (double)((i * 5) % 11) / 3.0;
}

Test(cvm, forward_matches_reference) {
  double x[N * D], c[2 * N] = {1, 2, 3, 4, 5, 6, 7, 8};
  fill(x);
  for (int use = 0; use < 2; use++) {
    op_harness *h = cvm_harness(x, c, N, use, use);
    OK(op_harness_run(h));
    const rill_tensor *y = op_harness_tensor(h, "y");
    int w = use ? D : D - 2;
    expect_dims(y, DIMS(N, w));
    const double *got = rill_tensor_ptr(y);
    for (int i = 0; i < N; i++)
      for (int j = 0; j < w; j++) {
        double want = x[i * D + j + (use ? 0 : 2)];
        if (use && j == 0) want = log(x[i * D] + 1);
        if (use && j == 1) want = log(x[i * D + 1] + 1) - log(x[i * D] + 1);
        cr_assert_float_eq(got[i * w + j], want, 1e-12, "use_cvm %d [%d, %d]", use, i, j);
      }
    cr_assert_eq(y->lod.nlevels, (size_t)use, "Y keeps X's LoD");
    op_harness_destroy(h);
  }
}

/* X@GRAD by hand: with use_cvm, dY with its first two columns replaced by the CVM pair of
 * the row's sequence; without, the pair then dY. */
Test(cvm, grad_writes_cvm_pairs) {
  double x[N * D], c[4] = {0.5, 0.25, 3, 4};
  fill(x);
  for (int use = 0; use < 2; use++) {
    op_harness *h = cvm_harness(x, c, 2, use, true);
    OK(op_harness_run(h));
    int w = use ? D : D - 2;
    double dy[N * D];
    for (int i = 0; i < N * w; i++) dy[i] = 0.1 * i - 1;
    op_harness *g = harness("cvm_grad");
    rill_tensor *t = op_harness_make(RILL_DTYPE_FP64, DIMS(N, D), x);
    const uint64_t *levels[1] = {LOD};
    size_t counts[1] = {3};
    OK(rill_tensor_set_lod(t, 1, levels, counts));
    OK(op_harness_input(g, "X", "emb", t));
    op_harness_free_tensor(t);
    bind_input(g, "CVM", "show_clk", RILL_DTYPE_FP64, DIMS(2, 2), c);
    bind_input(g, "Y@GRAD", "y@GRAD", RILL_DTYPE_FP64, (const int64_t[]){N, w}, 2, dy);
    OK(op_harness_output(g, "X@GRAD", "emb@GRAD"));
    OK(op_harness_attr_bool(g, "use_cvm", use));
    OK(op_harness_run(g));
    const rill_tensor *dx = op_harness_tensor(g, "emb@GRAD");
    expect_dims(dx, DIMS(N, D));
    const double *got = rill_tensor_ptr(dx);
    for (int i = 0; i < N; i++) {
      int s = i == 0 ? 0 : 1;
      for (int j = 0; j < D; j++) {
        double want = j < 2 ? c[2 * s + j] : dy[i * w + j - (use ? 0 : 2)];
        cr_assert_float_eq(got[i * D + j], want, 0, "use_cvm %d [%d, %d]", use, i, j);
      }
    }
    op_harness_destroy(g);
    op_harness_destroy(h);
  }
}

Test(cvm, finite_difference_gradient) {
  double x[N * D], c[2 * N] = {0};
  fill(x);
  op_harness *h = cvm_harness(x, c, N, false, false);
  OK(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Y"), NULL));
  op_harness_destroy(h);
}

Test(cvm, errors_name_op_and_variable) {
  double x[N * D] = {0}, c[3 * N] = {0}; /* room for the (N, 3) case */
  op_harness *h = harness("cvm");
  bind_input(h, "X", "emb", RILL_DTYPE_FP64, DIMS(N * D), x);
  bind_input(h, "CVM", "show_clk", RILL_DTYPE_FP64, DIMS(N, 2), c);
  OK(op_harness_output(h, "Y", "y"));
  EXPECT_ERROR(op_harness_run(h), "cvm", "emb", "[N, D]");
  op_harness_destroy(h);
  h = harness("cvm");
  bind_input(h, "X", "emb", RILL_DTYPE_FP64, DIMS(N, D), x);
  bind_input(h, "CVM", "show_clk", RILL_DTYPE_FP64, DIMS(N, 3), c);
  OK(op_harness_output(h, "Y", "y"));
  EXPECT_ERROR(op_harness_run(h), "cvm", "show_clk", "[N, 2]");
  op_harness_destroy(h);
  h = harness("cvm");
  bind_input(h, "X", "emb", RILL_DTYPE_FP64, DIMS(N, D), x);
  bind_input(h, "CVM", "show_clk", RILL_DTYPE_FP32, DIMS(N, 2), (float[2 * N]){0});
  OK(op_harness_output(h, "Y", "y"));
  EXPECT_ERROR(op_harness_run(h), "cvm", "show_clk", "float32");
  op_harness_destroy(h);
  /* the gradient needs one CVM pair per row of X without LoD */
  h = harness("cvm_grad");
  bind_input(h, "X", "emb", RILL_DTYPE_FP64, DIMS(N, D), x);
  bind_input(h, "CVM", "show_clk", RILL_DTYPE_FP64, DIMS(2, 2), c);
  bind_input(h, "Y@GRAD", "y@GRAD", RILL_DTYPE_FP64, DIMS(N, D), x);
  OK(op_harness_output(h, "X@GRAD", "emb@GRAD"));
  EXPECT_ERROR(op_harness_run(h), "cvm_grad", "show_clk");
  op_harness_destroy(h);
}
