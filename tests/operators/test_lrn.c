/* lrn against a reference loop over each channel's window, its gradient against finite
 * differences, and its errors. */
#include "nn_test.h"

typedef struct lrn_cfg {
  int n;
  float k, alpha, beta;
  bool nhwc;
} lrn_cfg;

static void set_lrn_attrs(op_harness *h, const void *arg) {
  const lrn_cfg *c = arg;
  OK(op_harness_attr_int(h, "n", c->n));
  OK(op_harness_attr_float(h, "k", c->k));
  OK(op_harness_attr_float(h, "alpha", c->alpha));
  OK(op_harness_attr_float(h, "beta", c->beta));
  if (c->nhwc) OK(op_harness_attr_string(h, "data_format", "NHWC"));
}

static void check_lrn(const int64_t *xd, size_t nd, lrn_cfg cfg) {
  (void)nd;
  int64_t nx = numel_of(xd, 4), N = xd[0], C = cfg.nhwc ? xd[3] : xd[1];
  int64_t P = nx / (N * C);
  double *x = malloc((size_t)nx * sizeof *x), *y = malloc((size_t)nx * sizeof *y);
  double *m = malloc((size_t)nx * sizeof *m);
  fill_rand(x, nx, 91);
  for (int64_t i = 0; i < nx; i++) x[i] *= 3;
  for (int64_t s = 0; s < N; s++)
    for (int64_t c = 0; c < C; c++)
      for (int64_t p = 0; p < P; p++) {
        double sum = 0;
        for (int64_t j = c - (cfg.n - 1) / 2; j <= c + (cfg.n - 1) / 2; j++) {
          if (j < 0 || j >= C) continue;
          double v = x[cfg.nhwc ? (s * P + p) * C + j : (s * C + j) * P + p];
          sum += v * v;
        }
        int64_t i = cfg.nhwc ? (s * P + p) * C + c : (s * C + c) * P + p;
        m[i] = cfg.k + cfg.alpha * sum;
        y[i] = x[i] * pow(m[i], -cfg.beta);
      }
  op_harness *h = harness("lrn");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, xd, 4, x);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_output(h, "MidOut", "mid"));
  set_lrn_attrs(h, &cfg);
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "out"), xd, 4);
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "out")), y, nx, 1e-10);
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "mid")), m, nx, 1e-10);
  op_harness_destroy(h);
  free(x); free(y); free(m);
}

Test(lrn, matches_reference) {
  check_lrn(DIMS(2, 7, 3, 2), (lrn_cfg){5, 1.0f, 1e-4f, 0.75f, false});
  check_lrn(DIMS(1, 3, 2, 2), (lrn_cfg){5, 2.0f, 0.5f, 0.75f, false}); /* window over C */
  check_lrn(DIMS(2, 6, 2, 3), (lrn_cfg){3, 1.0f, 0.2f, 0.5f, false});
  check_lrn(DIMS(1, 5, 4, 4), (lrn_cfg){1, 0.5f, 0.3f, 1.0f, false});
  check_lrn(DIMS(2, 2, 3, 6), (lrn_cfg){3, 1.0f, 0.2f, 0.75f, true}); /* NHWC */
}

static void lrn_grad(const int64_t *xd, size_t nd, lrn_cfg cfg) {
  (void)nd;
  int64_t nx = numel_of(xd, 4);
  double *x = malloc((size_t)nx * sizeof *x);
  fill_rand(x, nx, 93);
  fd_case fc = {.op = "lrn", .out_slots = {"Out", "MidOut"}, .out_names = {"out", "mid"},
                .nout = 2, .attrs = set_lrn_attrs, .arg = &cfg, .tol = 1e-6};
  fc.in[fc.nin] = (fd_input){"X", "x", {0}, 4, x, true};
  memcpy(fc.in[fc.nin++].dims, xd, 4 * sizeof(int64_t));
  fd_check(&fc);
  free(x);
}

Test(lrn, gradients_match_finite_differences) {
  lrn_grad(DIMS(2, 7, 2, 2), (lrn_cfg){5, 1.0f, 0.3f, 0.75f, false});
  lrn_grad(DIMS(1, 4, 3, 2), (lrn_cfg){3, 2.0f, 0.5f, 0.5f, false});
  lrn_grad(DIMS(1, 3, 2, 2), (lrn_cfg){7, 1.0f, 0.4f, 1.5f, false});
  lrn_grad(DIMS(2, 2, 2, 5), (lrn_cfg){3, 1.0f, 0.3f, 0.75f, true});
}

Test(lrn, bad_input_fails_naming_op_and_variable) {
  op_harness *h = harness("lrn");
  bind_input(h, "X", "feat", RILL_DTYPE_FP32, DIMS(2, 3, 4), NULL);
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_infer(h), "lrn", "X (feat)", "4-D");
  op_harness_destroy(h);

  h = harness("lrn");
  bind_input(h, "X", "feat", RILL_DTYPE_FP32, DIMS(2, 3, 4, 4), NULL);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_int(h, "n", 4));
  EXPECT_ERROR(op_harness_infer(h), "lrn", "attribute n is 4");
  op_harness_destroy(h);

  h = harness("lrn_grad");
  bind_input(h, "X", "feat", RILL_DTYPE_FP32, DIMS(2, 3, 4, 4), NULL);
  bind_input(h, "Out@GRAD", "out@GRAD", RILL_DTYPE_FP32, DIMS(2, 3, 4, 4), NULL);
  OK(op_harness_output(h, "X@GRAD", "feat@GRAD"));
  EXPECT_ERROR(op_harness_infer(h), "lrn_grad", "MidOut");
  op_harness_destroy(h);
}
