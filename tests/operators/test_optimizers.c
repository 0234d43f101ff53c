/* sgd, momentum, adam, adagrad against naive references written here, dense and
 * selected-rows gradients, in place (ParamOut = Param) and into separate outputs. */
#include "op_test.h"

#include "framework/data/scope.h"

#define R 5
#define C 3
#define N (R * C)

static void fill(double *v, int n, double a, double b) {
  for (int i = 0; i < n; i++) v[i] = a + b * (double)((i * 7) % 11) / 11.0 - b / 2;
}

/* Binds Grad as selected rows (rows may repeat) of fp64 values (nrows x C). */
static void bind_sparse_grad(op_harness *h, const char *name, const int64_t *rows, size_t nrows,
                             const double *vals) {
  rill_variable *v;
  OK(rill_scope_var(op_harness_scope(h), name, &v));
  rill_variable_clear(v);
  v->kind = RILL_VARKIND_SELECTED_ROWS;
  rill_selected_rows_init(&v->u.rows);
  v->u.rows.height = R;
  OK(rill_selected_rows_set_rows(&v->u.rows, rows, nrows));
  rill_dims d = {.n = 2, .d = {(int64_t)nrows, C}};
  OK(rill_tensor_alloc(&v->u.rows.value, RILL_DTYPE_FP64, &d));
  memcpy(rill_tensor_ptr(&v->u.rows.value), vals, nrows * C * sizeof(double));
  OK(op_harness_input(h, "Grad", name, NULL));
}

/* Dense equivalent of a selected-rows gradient. */
static void densify(const int64_t *rows, size_t nrows, const double *vals, double *g, bool *present) {
  memset(g, 0, N * sizeof *g);
  if (present) memset(present, 0, R * sizeof *present);
  for (size_t k = 0; k < nrows; k++) {
    for (int j = 0; j < C; j++) g[rows[k] * C + j] += vals[k * C + j];
    if (present) present[rows[k]] = true;
  }
}

static const double *t64(op_harness *h, const char *name) {
  rill_tensor *t = op_harness_tensor(h, name);
  cr_assert_not_null(t, "no tensor %s", name);
  return rill_tensor_ptr(t);
}

Test(optimizers, sgd_dense_in_place_f32_and_f64) {
  double p[N], g[N], want[N], lr = 0.25;
  fill(p, N, 1, 2);
  fill(g, N, -0.5, 3);
  for (int i = 0; i < N; i++) want[i] = p[i] - lr * g[i];
  op_harness *h = harness("sgd");
  bind_input(h, "Param", "w", RILL_DTYPE_FP64, DIMS(R, C), p);
  bind_input(h, "Grad", "w@GRAD", RILL_DTYPE_FP64, DIMS(R, C), g);
  bind_input(h, "LearningRate", "lr", RILL_DTYPE_FP64, DIMS(1), &lr);
  OK(op_harness_output(h, "ParamOut", "w"));
  OK(op_harness_run(h));
  expect_close_f64(t64(h, "w"), want, N, 1e-15);
  op_harness_destroy(h);

  float pf[N], gf[N], wf[N], lrf = 0.25f;
  for (int i = 0; i < N; i++) {
    pf[i] = (float)p[i];
    gf[i] = (float)g[i];
    wf[i] = pf[i] - lrf * gf[i];
  }
  h = harness("sgd");
  bind_input(h, "Param", "w", RILL_DTYPE_FP32, DIMS(R, C), pf);
  bind_input(h, "Grad", "g", RILL_DTYPE_FP32, DIMS(R, C), gf);
  bind_input(h, "LearningRate", "lr", RILL_DTYPE_FP32, DIMS(1), &lrf);
  OK(op_harness_output(h, "ParamOut", "w_out"));
  OK(op_harness_run(h));
  expect_close_f32(rill_tensor_ptr(op_harness_tensor(h, "w_out")), wf, N, 1e-6f);
  /* a separate ParamOut leaves Param alone */
  expect_close_f32(rill_tensor_ptr(op_harness_tensor(h, "w")), pf, N, 0);
  op_harness_destroy(h);
}

Test(optimizers, sgd_selected_rows_updates_only_its_rows_and_adds_duplicates) {
  double p[N], want[N], vals[3 * C], g[N], lr = 0.5;
  int64_t rows[3] = {3, 0, 3};
  fill(p, N, 0.5, 1);
  fill(vals, 3 * C, 1, 2);
  densify(rows, 3, vals, g, NULL);
  for (int i = 0; i < N; i++) want[i] = p[i] - lr * g[i];
  op_harness *h = harness("sgd");
  bind_input(h, "Param", "emb", RILL_DTYPE_FP64, DIMS(R, C), p);
  bind_sparse_grad(h, "emb@GRAD", rows, 3, vals);
  bind_input(h, "LearningRate", "lr", RILL_DTYPE_FP64, DIMS(1), &lr);
  OK(op_harness_output(h, "ParamOut", "emb"));
  OK(op_harness_run(h));
  const double *got = t64(h, "emb");
  expect_close_f64(got, want, N, 1e-15);
  for (int j = 0; j < C; j++) cr_assert_eq(got[1 * C + j], p[1 * C + j], "row 1 must not move");
  op_harness_destroy(h);
}

Test(optimizers, sgd_grad_shape_mismatch_names_op_and_variable) {
  op_harness *h = harness("sgd");
  bind_input(h, "Param", "fc_w", RILL_DTYPE_FP32, DIMS(4, 3), NULL);
  bind_input(h, "Grad", "fc_w@GRAD", RILL_DTYPE_FP32, DIMS(3, 4), NULL);
  bind_input(h, "LearningRate", "lr", RILL_DTYPE_FP32, DIMS(1), NULL);
  OK(op_harness_output(h, "ParamOut", "fc_w"));
  EXPECT_ERROR(op_harness_run(h), "sgd", "Grad", "fc_w@GRAD", "[3, 4]");
  op_harness_destroy(h);
  h = harness("sgd");
  bind_input(h, "Param", "fc_w", RILL_DTYPE_FP32, DIMS(4, 3), NULL);
  bind_input(h, "Grad", "fc_w@GRAD", RILL_DTYPE_FP32, DIMS(4, 3), NULL);
  bind_input(h, "LearningRate", "lr", RILL_DTYPE_FP32, DIMS(2), NULL);
  OK(op_harness_output(h, "ParamOut", "fc_w"));
  EXPECT_ERROR(op_harness_run(h), "sgd", "LearningRate", "lr", "one element");
  op_harness_destroy(h);
}

static void momentum_ref(double *p, double *v, const double *g, double lr, double mu, bool nesterov,
                         double l2) {
  for (int i = 0; i < N; i++) {
    double gi = g[i] + l2 * p[i];
    v[i] = mu * v[i] + gi;
    p[i] = nesterov ? p[i] - lr * (gi + mu * v[i]) : p[i] - lr * v[i];
  }
}

static void run_momentum(bool nesterov, bool sparse, double l2) {
  double p[N], v[N], g[N], vals[2 * C], lr = 0.1, mu = 0.9;
  int64_t rows[2] = {4, 1};
  fill(p, N, 1, 1);
  fill(v, N, 0.2, 0.5);
  fill(g, N, 0, 2);
  fill(vals, 2 * C, 0.3, 1);
  if (sparse) densify(rows, 2, vals, g, NULL);
  op_harness *h = harness("momentum");
  bind_input(h, "Param", "w", RILL_DTYPE_FP64, DIMS(R, C), p);
  if (sparse) bind_sparse_grad(h, "w@GRAD", rows, 2, vals);
  else bind_input(h, "Grad", "w@GRAD", RILL_DTYPE_FP64, DIMS(R, C), g);
  bind_input(h, "Velocity", "w_velocity", RILL_DTYPE_FP64, DIMS(R, C), v);
  bind_input(h, "LearningRate", "lr", RILL_DTYPE_FP64, DIMS(1), &lr);
  OK(op_harness_output(h, "ParamOut", "w"));
  OK(op_harness_output(h, "VelocityOut", "w_velocity"));
  OK(op_harness_attr_float(h, "mu", (float)mu));
  OK(op_harness_attr_bool(h, "use_nesterov", nesterov));
  if (l2 != 0) {
    OK(op_harness_attr_string(h, "regularization_method", "l2_decay"));
    OK(op_harness_attr_float(h, "regularization_coeff", (float)l2));
  }
  for (int step = 0; step < 3; step++) {
    OK(op_harness_run(h));
    momentum_ref(p, v, g, lr, (float)mu, nesterov, (float)l2);
  }
  expect_close_f64(t64(h, "w"), p, N, 1e-12);
  expect_close_f64(t64(h, "w_velocity"), v, N, 1e-12);
  op_harness_destroy(h);
}

Test(optimizers, momentum_plain_nesterov_sparse_and_l2) {
  run_momentum(false, false, 0);
  run_momentum(true, false, 0);
  run_momentum(false, true, 0);
  run_momentum(true, false, 0.01);
}

Test(optimizers, momentum_requires_mu) {
  op_harness *h = harness("momentum");
  bind_input(h, "Param", "w", RILL_DTYPE_FP32, DIMS(2), NULL);
  bind_input(h, "Grad", "g", RILL_DTYPE_FP32, DIMS(2), NULL);
  bind_input(h, "Velocity", "v", RILL_DTYPE_FP32, DIMS(2), NULL);
  bind_input(h, "LearningRate", "lr", RILL_DTYPE_FP32, DIMS(1), NULL);
  OK(op_harness_output(h, "ParamOut", "w"));
  OK(op_harness_output(h, "VelocityOut", "v"));
  EXPECT_ERROR(op_harness_run(h), "momentum", "mu");
  op_harness_destroy(h);
}

/* Fluid 1.x's adam (denominator sqrt(m2) + eps), written out step by step.
 * present == NULL: every row moves. sparse: the beta pows advance before the bias
 * correction reads them (Paddle 1.8.5's selected-rows step). */
static void adam_ref(double *p, double *m1, double *m2, double *b1p, double *b2p, const double *g,
                     const bool *present, bool sparse, double lr, double b1, double b2,
                     double eps) {
  if (sparse) {
    *b1p *= b1;
    *b2p *= b2;
  }
  double lr_t = lr * sqrt(1 - *b2p) / (1 - *b1p);
  for (int i = 0; i < N; i++) {
    if (present && !present[i / C]) continue;
    m1[i] = b1 * m1[i] + (1 - b1) * g[i];
    m2[i] = b2 * m2[i] + (1 - b2) * g[i] * g[i];
    p[i] -= lr_t * m1[i] / (sqrt(m2[i]) + eps);
  }
  if (!sparse) {
    *b1p *= b1;
    *b2p *= b2;
  }
}

static void run_adam(int mode /* 0 dense, 1 sparse lazy, 2 sparse non-lazy */) {
  double p[N], m1[N], m2[N], g[N], vals[2 * C], lr = 0.01;
  double b1 = (float)0.9, b2 = (float)0.999, eps = (float)1e-8;
  double b1p = b1, b2p = b2;
  int64_t rows[2] = {2, 2};
  bool present[R];
  fill(p, N, 1, 1);
  memset(m1, 0, sizeof m1);
  memset(m2, 0, sizeof m2);
  fill(g, N, 0.1, 2);
  fill(vals, 2 * C, -0.2, 1);
  if (mode) densify(rows, 2, vals, g, present);
  op_harness *h = harness("adam");
  bind_input(h, "Param", "w", RILL_DTYPE_FP64, DIMS(R, C), p);
  if (mode) bind_sparse_grad(h, "w@GRAD", rows, 2, vals);
  else bind_input(h, "Grad", "w@GRAD", RILL_DTYPE_FP64, DIMS(R, C), g);
  bind_input(h, "LearningRate", "lr", RILL_DTYPE_FP64, DIMS(1), &lr);
  bind_input(h, "Moment1", "m1", RILL_DTYPE_FP64, DIMS(R, C), m1);
  bind_input(h, "Moment2", "m2", RILL_DTYPE_FP64, DIMS(R, C), m2);
  bind_input(h, "Beta1Pow", "b1p", RILL_DTYPE_FP64, DIMS(1), &b1p);
  bind_input(h, "Beta2Pow", "b2p", RILL_DTYPE_FP64, DIMS(1), &b2p);
  OK(op_harness_output(h, "ParamOut", "w"));
  OK(op_harness_output(h, "Moment1Out", "m1"));
  OK(op_harness_output(h, "Moment2Out", "m2"));
  OK(op_harness_output(h, "Beta1PowOut", "b1p"));
  OK(op_harness_output(h, "Beta2PowOut", "b2p"));
  if (mode == 1) OK(op_harness_attr_bool(h, "lazy_mode", true));
  for (int step = 0; step < 4; step++) {
    OK(op_harness_run(h));
    adam_ref(p, m1, m2, &b1p, &b2p, g, mode == 1 ? present : NULL, mode != 0, lr, b1, b2, eps);
  }
  expect_close_f64(t64(h, "w"), p, N, 1e-12);
  expect_close_f64(t64(h, "m1"), m1, N, 1e-12);
  expect_close_f64(t64(h, "m2"), m2, N, 1e-12);
  expect_close_f64(t64(h, "b1p"), &b1p, 1, 1e-15);
  expect_close_f64(t64(h, "b2p"), &b2p, 1, 1e-15);
  if (mode == 1) {
    double p0[N];
    fill(p0, N, 1, 1);
    expect_close_f64(t64(h, "w"), p0, C, 0); /* row 0 never in the gradient */
  }
  op_harness_destroy(h);
}

Test(optimizers, adam_dense_and_beta_pows_advance) { run_adam(0); }
Test(optimizers, adam_selected_rows_lazy_and_not) {
  run_adam(1);
  run_adam(2);
}

/* Paddle Fluid 1.8.5's parameters after three adam steps (lr 0.1, beta1 0.9, beta2 0.99,
 * epsilon 0.05, large so that its place in the denominator shows) on a [2, 3] fp32
 * parameter whose gradient at step s is (s + 1) * g. */
Test(optimizers, adam_matches_paddle_fluid_1_8) {
  static const float want[3][6] = {
      {0.9625000357627869f, -1.9961538314819336f, 3.0f, 0.42500001192092896f,
       -0.00019960070494562387f, -0.9555555582046509f},
      {0.9072985649108887f, -1.9882477521896362f, 3.0f, 0.34112799167633057f,
       -0.0006283116526901722f, -0.8937519788742065f},
      {0.8412352800369263f, -1.9758316278457642f, 3.0f, 0.253406286239624f,
       -0.0013365470804274082f, -0.8221653699874878f},
  };
  static const float g0[6] = {0.3f, -0.02f, 0.0f, 1.5f, 0.001f, -0.4f};
  float p[6] = {1, -2, 3, 0.5f, 0, -1}, zero[6] = {0}, lr = 0.1f, b1p = 0.9f, b2p = 0.99f;
  op_harness *h = harness("adam");
  bind_input(h, "Param", "w", RILL_DTYPE_FP32, DIMS(2, 3), p);
  bind_input(h, "Grad", "g", RILL_DTYPE_FP32, DIMS(2, 3), g0);
  bind_input(h, "LearningRate", "lr", RILL_DTYPE_FP32, DIMS(1), &lr);
  bind_input(h, "Moment1", "m1", RILL_DTYPE_FP32, DIMS(2, 3), zero);
  bind_input(h, "Moment2", "m2", RILL_DTYPE_FP32, DIMS(2, 3), zero);
  bind_input(h, "Beta1Pow", "b1p", RILL_DTYPE_FP32, DIMS(1), &b1p);
  bind_input(h, "Beta2Pow", "b2p", RILL_DTYPE_FP32, DIMS(1), &b2p);
  OK(op_harness_output(h, "ParamOut", "w"));
  OK(op_harness_output(h, "Moment1Out", "m1"));
  OK(op_harness_output(h, "Moment2Out", "m2"));
  OK(op_harness_output(h, "Beta1PowOut", "b1p"));
  OK(op_harness_output(h, "Beta2PowOut", "b2p"));
  OK(op_harness_attr_float(h, "beta1", 0.9f));
  OK(op_harness_attr_float(h, "beta2", 0.99f));
  OK(op_harness_attr_float(h, "epsilon", 0.05f));
  for (int s = 0; s < 3; s++) {
    float *g = rill_tensor_ptr(op_harness_tensor(h, "g"));
    for (int i = 0; i < 6; i++) g[i] = g0[i] * (float)(s + 1);
    OK(op_harness_run(h));
    expect_close_f32(rill_tensor_ptr(op_harness_tensor(h, "w")), want[s], 6, 1e-6f);
  }
  op_harness_destroy(h);
}

Test(optimizers, adam_f32_matches_reference) {
  float p[N], g[N], m[N] = {0}, v[N] = {0}, lr = 0.05f, b1p = 0.9f, b2p = 0.999f;
  double pd[N], gd[N], m1[N] = {0}, m2[N] = {0}, b1pd = 0.9f, b2pd = 0.999f;
  fill(pd, N, 0, 1);
  fill(gd, N, 1, 1);
  for (int i = 0; i < N; i++) {
    p[i] = (float)pd[i];
    g[i] = (float)gd[i];
    pd[i] = p[i];
    gd[i] = g[i];
  }
  op_harness *h = harness("adam");
  bind_input(h, "Param", "w", RILL_DTYPE_FP32, DIMS(R, C), p);
  bind_input(h, "Grad", "g", RILL_DTYPE_FP32, DIMS(R, C), g);
  bind_input(h, "LearningRate", "lr", RILL_DTYPE_FP32, DIMS(1), &lr);
  bind_input(h, "Moment1", "m1", RILL_DTYPE_FP32, DIMS(R, C), m);
  bind_input(h, "Moment2", "m2", RILL_DTYPE_FP32, DIMS(R, C), v);
  bind_input(h, "Beta1Pow", "b1p", RILL_DTYPE_FP32, DIMS(1), &b1p);
  bind_input(h, "Beta2Pow", "b2p", RILL_DTYPE_FP32, DIMS(1), &b2p);
  OK(op_harness_output(h, "ParamOut", "w"));
  OK(op_harness_output(h, "Moment1Out", "m1"));
  OK(op_harness_output(h, "Moment2Out", "m2"));
  OK(op_harness_output(h, "Beta1PowOut", "b1p"));
  OK(op_harness_output(h, "Beta2PowOut", "b2p"));
  OK(op_harness_run(h));
  adam_ref(pd, m1, m2, &b1pd, &b2pd, gd, NULL, false, (double)lr, (float)0.9, (float)0.999, (float)1e-8);
  float want[N];
  for (int i = 0; i < N; i++) want[i] = (float)pd[i];
  expect_close_f32(rill_tensor_ptr(op_harness_tensor(h, "w")), want, N, 1e-5f);
  float b1f = *(float *)rill_tensor_ptr(op_harness_tensor(h, "b1p"));
  cr_assert_float_eq(b1f, 0.81f, 1e-6f);
  op_harness_destroy(h);
}

static void run_adagrad(bool sparse) {
  double p[N], m[N], g[N], vals[2 * C], lr = 0.1, eps = (float)1e-6;
  int64_t rows[2] = {0, 3};
  bool present[R];
  fill(p, N, 1, 1);
  fill(m, N, 0.5, 0.2);
  fill(g, N, 0, 2);
  fill(vals, 2 * C, 1, 1);
  if (sparse) densify(rows, 2, vals, g, present);
  op_harness *h = harness("adagrad");
  bind_input(h, "Param", "w", RILL_DTYPE_FP64, DIMS(R, C), p);
  if (sparse) bind_sparse_grad(h, "w@GRAD", rows, 2, vals);
  else bind_input(h, "Grad", "w@GRAD", RILL_DTYPE_FP64, DIMS(R, C), g);
  bind_input(h, "Moment", "w_moment", RILL_DTYPE_FP64, DIMS(R, C), m);
  bind_input(h, "LearningRate", "lr", RILL_DTYPE_FP64, DIMS(1), &lr);
  OK(op_harness_output(h, "ParamOut", "w"));
  OK(op_harness_output(h, "MomentOut", "w_moment"));
  for (int step = 0; step < 2; step++) {
    OK(op_harness_run(h));
    for (int i = 0; i < N; i++) {
      if (sparse && !present[i / C]) continue;
      m[i] += g[i] * g[i];
      p[i] -= lr * g[i] / (sqrt(m[i]) + eps);
    }
  }
  expect_close_f64(t64(h, "w"), p, N, 1e-12);
  expect_close_f64(t64(h, "w_moment"), m, N, 1e-12);
  op_harness_destroy(h);
}

Test(optimizers, adagrad_dense_and_selected_rows) {
  run_adagrad(false);
  run_adagrad(true);
}

Test(optimizers, moment_shape_mismatch_fails_at_inference) {
  op_harness *h = harness("adagrad");
  bind_input(h, "Param", "w", RILL_DTYPE_FP32, DIMS(4, 3), NULL);
  bind_input(h, "Grad", "g", RILL_DTYPE_FP32, DIMS(4, 3), NULL);
  bind_input(h, "Moment", "w_moment", RILL_DTYPE_FP32, DIMS(4), NULL);
  bind_input(h, "LearningRate", "lr", RILL_DTYPE_FP32, DIMS(1), NULL);
  OK(op_harness_output(h, "ParamOut", "w"));
  OK(op_harness_output(h, "MomentOut", "w_moment"));
  EXPECT_ERROR(op_harness_infer(h), "adagrad", "Moment", "w_moment", "[4]");
  op_harness_destroy(h);
}
