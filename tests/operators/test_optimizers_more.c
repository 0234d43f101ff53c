/* rmsprop, adadelta, adamax, decayed_adagrad, ftrl, lars_momentum, lamb against scalar
 * references of Paddle 1.8.5's update rules written here: fp64 in place over two steps,
 * selected-rows gradients with repeated rows where Paddle takes them (rmsprop, lamb:
 * rows the gradient lacks count as zero), an fp32 run, and the dense-only ops refusing
 * selected rows. */
#include <math.h>

#include "op_test.h"

#include "framework/data/scope.h"

#define R 5
#define C 3
#define N (R * C)

static void fill(double *v, int n, double a, double b) {
  for (int i = 0; i < n; i++) v[i] = a + b * (double)((i * 5) % 13) / 13.0 - b / 2;
}

static void sparse_grad(op_harness *h, const int64_t *rows, size_t nrows, const double *vals) {
  rill_variable *v;
  OK(rill_scope_var(op_harness_scope(h), "w@GRAD", &v));
  rill_variable_clear(v);
  v->kind = RILL_VARKIND_SELECTED_ROWS;
  rill_selected_rows_init(&v->u.rows);
  v->u.rows.height = R;
  OK(rill_selected_rows_set_rows(&v->u.rows, rows, nrows));
  rill_dims d = {.n = 2, .d = {(int64_t)nrows, C}};
  OK(rill_tensor_alloc(&v->u.rows.value, RILL_DTYPE_FP64, &d));
  if (nrows) memcpy(rill_tensor_ptr(&v->u.rows.value), vals, nrows * C * sizeof(double));
  OK(op_harness_input(h, "Grad", "w@GRAD", NULL));
}

/* Binds Grad: dense g, or three selected rows {3, 0, 3} (row 3 twice) whose dense sum
 * is written to g. */
static void bind_grad(op_harness *h, bool sparse, double *g) {
  if (!sparse) {
    bind_input(h, "Grad", "w@GRAD", RILL_DTYPE_FP64, DIMS(R, C), g);
    return;
  }
  static const int64_t rows[3] = {3, 0, 3};
  double vals[3 * C];
  fill(vals, 3 * C, 0.5, 2);
  memset(g, 0, N * sizeof *g);
  for (int k = 0; k < 3; k++)
    for (int j = 0; j < C; j++) g[rows[k] * C + j] += vals[k * C + j];
  sparse_grad(h, rows, 3, vals);
}

/* A harness for `type` updating Param w (p) in place from Grad (bind_grad's, or an empty
 * selected rows where g is NULL) and LearningRate lr (none where lr is NULL). */
static op_harness *optimizer(const char *type, double *p, bool sparse, double *g, double *lr) {
  op_harness *h = harness(type);
  bind_input(h, "Param", "w", RILL_DTYPE_FP64, DIMS(R, C), p);
  if (g) bind_grad(h, sparse, g);
  else sparse_grad(h, NULL, 0, NULL);
  if (lr) bind_input(h, "LearningRate", "lr", RILL_DTYPE_FP64, DIMS(1), lr);
  OK(op_harness_output(h, "ParamOut", "w"));
  return h;
}

static void state(op_harness *h, const char *in, const char *out, const char *name, double *v) {
  bind_input(h, in, name, RILL_DTYPE_FP64, DIMS(R, C), v);
  OK(op_harness_output(h, out, name));
}

static const double *t64(op_harness *h, const char *name) {
  rill_tensor *t = op_harness_tensor(h, name);
  cr_assert_not_null(t, "no tensor %s", name);
  return rill_tensor_ptr(t);
}

static void run_rmsprop(bool sparse, bool centered) {
  double p[N], ms[N], mg[N], mom[N], g[N], lr = 0.05;
  float eps = 1e-6f, rho = 0.9f, mu = 0.3f;
  fill(p, N, 1, 2);
  fill(ms, N, 0.5, 0.4);
  fill(mg, N, 0.1, 0.2);
  fill(mom, N, 0, 0.2);
  fill(g, N, 0, 3);
  op_harness *h = optimizer("rmsprop", p, sparse, g, &lr);
  state(h, "Moment", "MomentOut", "w_mom", mom);
  state(h, "MeanSquare", "MeanSquareOut", "w_ms", ms);
  state(h, "MeanGrad", "MeanGradOut", "w_mg", mg);
  OK(op_harness_attr_float(h, "epsilon", eps));
  OK(op_harness_attr_float(h, "decay", rho));
  OK(op_harness_attr_float(h, "momentum", mu));
  OK(op_harness_attr_bool(h, "centered", centered));
  double mg0[N];
  memcpy(mg0, mg, sizeof mg);
  for (int step = 0; step < 2; step++) {
    OK(op_harness_run(h));
    for (int i = 0; i < N; i++) {
      ms[i] = rho * ms[i] + (1 - (double)rho) * g[i] * g[i];
      double denom = ms[i] + eps;
      if (centered) {
        mg[i] = rho * mg[i] + (1 - (double)rho) * g[i];
        denom -= mg[i] * mg[i];
      }
      mom[i] = mu * mom[i] + lr * g[i] / sqrt(denom);
      p[i] -= mom[i];
    }
  }
  expect_close_f64(t64(h, "w"), p, N, 1e-12);
  expect_close_f64(t64(h, "w_ms"), ms, N, 1e-12);
  expect_close_f64(t64(h, "w_mom"), mom, N, 1e-12);
  expect_close_f64(t64(h, "w_mg"), centered ? mg : mg0, N, 1e-12);
  op_harness_destroy(h);
}

Test(optimizers_more, rmsprop_dense_sparse_centered) {
  run_rmsprop(false, false);
  run_rmsprop(false, true);
  run_rmsprop(true, false);
  run_rmsprop(true, true);
}

static void run_adadelta(bool in_place) {
  double p[N], g2[N], u2[N], g[N];
  float rho = 0.9f, eps = 1e-4f;
  fill(p, N, 1, 2);
  fill(g2, N, 0.3, 0.2);
  fill(u2, N, 0.2, 0.1);
  fill(g, N, 0, 3);
  op_harness *h = optimizer("adadelta", p, false, g, NULL);
  state(h, "AvgSquaredGrad", "AvgSquaredGradOut", "w_g2", g2);
  bind_input(h, "AvgSquaredUpdate", "w_u2", RILL_DTYPE_FP64, DIMS(R, C), u2);
  OK(op_harness_output(h, "AvgSquaredUpdateOut", in_place ? "w_u2" : "w_u2_out"));
  OK(op_harness_attr_float(h, "rho", rho));
  OK(op_harness_attr_float(h, "epsilon", eps));
  OK(op_harness_run(h));
  for (int i = 0; i < N; i++) {
    g2[i] = rho * g2[i] + (1 - (double)rho) * g[i] * g[i];
    double u = -sqrt((u2[i] + eps) / (g2[i] + eps)) * g[i];
    double u2_new = rho * u2[i] + (1 - (double)rho) * u * u;
    /* in place, Paddle's step reads the updated average */
    if (in_place) u = -sqrt((u2_new + eps) / (g2[i] + eps)) * g[i];
    u2[i] = u2_new;
    p[i] += u;
  }
  expect_close_f64(t64(h, "w"), p, N, 1e-12);
  expect_close_f64(t64(h, "w_g2"), g2, N, 1e-12);
  expect_close_f64(t64(h, in_place ? "w_u2" : "w_u2_out"), u2, N, 1e-12);
  op_harness_destroy(h);
}

Test(optimizers_more, adadelta_dense_in_place_and_not) {
  run_adadelta(true);
  run_adadelta(false);
}

Test(optimizers_more, adamax_dense_reads_beta1_pow) {
  double p[N], m[N], u[N], g[N], lr = 0.1, b1p = 0.9 * 0.9;
  float b1 = 0.9f, b2 = 0.99f, eps = 1e-3f;
  fill(p, N, 1, 2);
  fill(m, N, 0, 0.4);
  fill(u, N, 0.2, 0.3);
  fill(g, N, 0, 3);
  g[4] = 0; /* |g| below the decayed norm */
  op_harness *h = optimizer("adamax", p, false, g, &lr);
  bind_input(h, "Beta1Pow", "b1p", RILL_DTYPE_FP64, DIMS(1), &b1p);
  state(h, "Moment", "MomentOut", "w_m", m);
  state(h, "InfNorm", "InfNormOut", "w_u", u);
  OK(op_harness_attr_float(h, "beta1", b1));
  OK(op_harness_attr_float(h, "beta2", b2));
  OK(op_harness_attr_float(h, "epsilon", eps));
  OK(op_harness_run(h));
  for (int i = 0; i < N; i++) {
    m[i] = b1 * m[i] + (1 - (double)b1) * g[i];
    u[i] = fmax(b2 * u[i] + (double)eps, fabs(g[i]));
    p[i] -= lr / (1 - b1p) * (m[i] / u[i]);
  }
  expect_close_f64(t64(h, "w"), p, N, 1e-12);
  expect_close_f64(t64(h, "w_m"), m, N, 1e-12);
  expect_close_f64(t64(h, "w_u"), u, N, 1e-12);
  cr_assert_eq(*t64(h, "b1p"), 0.81, "the op leaves Beta1Pow to the scale op");
  op_harness_destroy(h);
}

Test(optimizers_more, decayed_adagrad_dense) {
  double p[N], m[N], g[N], lr = 0.1;
  float decay = 0.8f, eps = 1e-6f;
  fill(p, N, 1, 2);
  fill(m, N, 0.4, 0.3);
  fill(g, N, 0, 3);
  op_harness *h = optimizer("decayed_adagrad", p, false, g, &lr);
  state(h, "Moment", "MomentOut", "w_m", m);
  OK(op_harness_attr_float(h, "decay", decay));
  OK(op_harness_attr_float(h, "epsilon", eps));
  for (int step = 0; step < 2; step++) {
    OK(op_harness_run(h));
    for (int i = 0; i < N; i++) {
      m[i] = decay * m[i] + (1 - (double)decay) * g[i] * g[i];
      p[i] -= lr * g[i] / (sqrt(m[i]) + eps);
    }
  }
  expect_close_f64(t64(h, "w"), p, N, 1e-12);
  expect_close_f64(t64(h, "w_m"), m, N, 1e-12);
  op_harness_destroy(h);
}

static void run_ftrl(float lr_power) {
  double p[N], n2[N], z[N], g[N], lr = 0.2;
  float l1 = 0.05f, l2 = 0.1f;
  fill(p, N, 0.5, 2);
  fill(n2, N, 0.3, 0.2);
  fill(z, N, 0, 0.4);
  fill(g, N, 0, 3);
  op_harness *h = optimizer("ftrl", p, false, g, &lr);
  state(h, "SquaredAccumulator", "SquaredAccumOut", "w_sq", n2);
  state(h, "LinearAccumulator", "LinearAccumOut", "w_lin", z);
  OK(op_harness_attr_float(h, "l1", l1));
  OK(op_harness_attr_float(h, "l2", l2));
  OK(op_harness_attr_float(h, "lr_power", lr_power));
  int zeroed = 0;
  for (int step = 0; step < 2; step++) {
    OK(op_harness_run(h));
    double L1 = (double)l1 + 1e-10, L2 = (double)l2 + 1e-10;
    for (int i = 0; i < N; i++) {
      double acc = n2[i] + g[i] * g[i];
      double now = pow(acc, -(double)lr_power), before = pow(n2[i], -(double)lr_power);
      z[i] += g[i] - (now - before) / lr * p[i];
      double sgn = z[i] > 0 ? 1 : z[i] < 0 ? -1 : 0;
      if (fabs(z[i]) > L1) {
        p[i] = (L1 * sgn - z[i]) / (now / lr + 2 * L2);
      } else {
        p[i] = 0;
        zeroed++;
      }
      n2[i] = acc;
    }
  }
  cr_assert_gt(zeroed, 0, "the l1 shrink should zero some weights");
  expect_close_f64(t64(h, "w"), p, N, 1e-12);
  expect_close_f64(t64(h, "w_sq"), n2, N, 1e-12);
  expect_close_f64(t64(h, "w_lin"), z, N, 1e-12);
  op_harness_destroy(h);
}

Test(optimizers_more, ftrl_dense_sqrt_and_pow) {
  run_ftrl(-0.5f);
  run_ftrl(-0.7f);
}

Test(optimizers_more, lars_momentum_dense) {
  double p[N], v[N], g[N], lr = 0.5;
  float mu = 0.9f, coeff = 0.01f, wd = 0.005f;
  fill(p, N, 1, 2);
  fill(v, N, 0, 0.2);
  fill(g, N, 0, 3);
  op_harness *h = optimizer("lars_momentum", p, false, g, &lr);
  state(h, "Velocity", "VelocityOut", "w_v", v);
  OK(op_harness_attr_float(h, "mu", mu));
  OK(op_harness_attr_float(h, "lars_coeff", coeff));
  OK(op_harness_attr_float(h, "lars_weight_decay", wd));
  for (int step = 0; step < 2; step++) {
    OK(op_harness_run(h));
    double pn = 0, gn = 0;
    for (int i = 0; i < N; i++) {
      pn += p[i] * p[i];
      gn += g[i] * g[i];
    }
    pn = sqrt(pn);
    gn = sqrt(gn);
    double local = lr * coeff * pn / (gn + wd * pn);
    for (int i = 0; i < N; i++) {
      v[i] = v[i] * mu + local * (g[i] + wd * p[i]);
      p[i] -= v[i];
    }
  }
  expect_close_f64(t64(h, "w"), p, N, 1e-12);
  expect_close_f64(t64(h, "w_v"), v, N, 1e-12);
  op_harness_destroy(h);
}

/* lamb (as optimizer's) with Beta1Pow b1p, Beta2Pow b2p and moments m1, m2 updated in
 * place. */
static op_harness *lamb(double *p, bool sparse, double *g, double *lr, double *b1p, double *b2p,
                        double *m1, double *m2) {
  op_harness *h = optimizer("lamb", p, sparse, g, lr);
  bind_input(h, "Beta1Pow", "b1p", RILL_DTYPE_FP64, DIMS(1), b1p);
  bind_input(h, "Beta2Pow", "b2p", RILL_DTYPE_FP64, DIMS(1), b2p);
  state(h, "Moment1", "Moment1Out", "w_m1", m1);
  state(h, "Moment2", "Moment2Out", "w_m2", m2);
  return h;
}

static void run_lamb(bool sparse, bool zero_param) {
  double p[N], m1[N], m2[N], g[N], lr = 0.1, b1p = 0.9, b2p = 0.999;
  float wd = 0.01f, b1 = 0.9f, b2 = 0.999f, eps = 1e-6f;
  fill(p, N, 1, 2);
  if (zero_param) memset(p, 0, sizeof p);
  fill(m1, N, 0, 0.2);
  fill(m2, N, 0.3, 0.2);
  fill(g, N, 0, 3);
  op_harness *h = lamb(p, sparse, g, &lr, &b1p, &b2p, m1, m2);
  OK(op_harness_attr_float(h, "weight_decay", wd));
  OK(op_harness_attr_float(h, "beta1", b1));
  OK(op_harness_attr_float(h, "beta2", b2));
  OK(op_harness_attr_float(h, "epsilon", eps));
  for (int step = 0; step < 2; step++) {
    OK(op_harness_run(h));
    double r[N], pn = 0, rn = 0;
    for (int i = 0; i < N; i++) {
      m1[i] = b1 * m1[i] + (1 - (double)b1) * g[i];
      m2[i] = b2 * m2[i] + (1 - (double)b2) * g[i] * g[i];
      r[i] = m1[i] / (sqrt(m2[i]) + eps) + wd * p[i];
      pn += p[i] * p[i];
      rn += r[i] * r[i];
    }
    pn = sqrt(pn);
    rn = sqrt(rn);
    double ratio = pn > 0 && rn > 0 ? pn / rn : 1;
    for (int i = 0; i < N; i++) p[i] -= lr * ratio * r[i];
  }
  expect_close_f64(t64(h, "w"), p, N, 1e-12);
  expect_close_f64(t64(h, "w_m1"), m1, N, 1e-12);
  expect_close_f64(t64(h, "w_m2"), m2, N, 1e-12);
  op_harness_destroy(h);
}

Test(optimizers_more, lamb_dense_sparse_and_zero_param) {
  run_lamb(false, false);
  run_lamb(true, false);
  run_lamb(false, true);
}

Test(optimizers_more, lamb_empty_selected_rows_changes_nothing) {
  double p[N], m1[N], m2[N], lr = 0.1, b1p = 0.9, b2p = 0.999;
  fill(p, N, 1, 2);
  fill(m1, N, 0, 0.2);
  fill(m2, N, 0.3, 0.2);
  op_harness *h = lamb(p, false, NULL, &lr, &b1p, &b2p, m1, m2);
  OK(op_harness_run(h));
  expect_close_f64(t64(h, "w"), p, N, 0);
  expect_close_f64(t64(h, "w_m1"), m1, N, 0);
  op_harness_destroy(h);
}

Test(optimizers_more, rmsprop_fp32_into_separate_outputs) {
  float p[N], ms[N], mom[N], g[N], want[N], lr = 0.01f;
  for (int i = 0; i < N; i++) {
    p[i] = 0.1f * (float)i - 0.5f;
    g[i] = 0.3f * (float)(i % 4) - 0.4f;
    ms[i] = 0.2f;
    mom[i] = 0.1f;
    float s = 0.9f * ms[i] + 0.1f * g[i] * g[i];
    float mo = 0.0f * mom[i] + lr * g[i] / sqrtf(s + 1e-10f);
    want[i] = p[i] - mo;
  }
  op_harness *h = harness("rmsprop");
  bind_input(h, "Param", "w", RILL_DTYPE_FP32, DIMS(R, C), p);
  bind_input(h, "Grad", "g", RILL_DTYPE_FP32, DIMS(R, C), g);
  bind_input(h, "LearningRate", "lr", RILL_DTYPE_FP32, DIMS(1), &lr);
  bind_input(h, "Moment", "mom", RILL_DTYPE_FP32, DIMS(R, C), mom);
  bind_input(h, "MeanSquare", "ms", RILL_DTYPE_FP32, DIMS(R, C), ms);
  OK(op_harness_output(h, "ParamOut", "w_out"));
  OK(op_harness_output(h, "MomentOut", "mom_out"));
  OK(op_harness_output(h, "MeanSquareOut", "ms_out"));
  OK(op_harness_run(h));
  expect_close_f32(rill_tensor_ptr(op_harness_tensor(h, "w_out")), want, N, 1e-6f);
  expect_close_f32(rill_tensor_ptr(op_harness_tensor(h, "w")), p, N, 0);
  op_harness_destroy(h);
}

static void expect_sparse_refused(const char *type, const char *const *slots, size_t nslots) {
  double p[N], acc[N], lr = 0.1, b1p = 0.9, g[N];
  fill(p, N, 1, 1);
  fill(acc, N, 0.5, 0.1);
  op_harness *h = optimizer(type, p, true, g, NULL);
  for (size_t i = 0; i < nslots; i++) {
    if (strcmp(slots[i], "LearningRate") == 0)
      bind_input(h, "LearningRate", "lr", RILL_DTYPE_FP64, DIMS(1), &lr);
    else if (strcmp(slots[i], "Beta1Pow") == 0)
      bind_input(h, "Beta1Pow", "b1p", RILL_DTYPE_FP64, DIMS(1), &b1p);
    else
      bind_input(h, slots[i], slots[i], RILL_DTYPE_FP64, DIMS(R, C), acc);
  }
  if (strcmp(type, "lars_momentum") == 0) OK(op_harness_attr_float(h, "mu", 0.9f));
  EXPECT_ERROR(op_harness_run(h), type, "w@GRAD", "selected rows");
  op_harness_destroy(h);
}

Test(optimizers_more, dense_only_ops_refuse_selected_rows) {
  expect_sparse_refused("adadelta", (const char *[]){"AvgSquaredGrad", "AvgSquaredUpdate"}, 2);
  expect_sparse_refused("adamax", (const char *[]){"LearningRate", "Moment", "InfNorm", "Beta1Pow"}, 4);
  expect_sparse_refused("decayed_adagrad", (const char *[]){"LearningRate", "Moment"}, 2);
  expect_sparse_refused("ftrl", (const char *[]){"LearningRate", "SquaredAccumulator", "LinearAccumulator"}, 3);
  expect_sparse_refused("lars_momentum", (const char *[]){"LearningRate", "Velocity"}, 2);
}

Test(optimizers_more, accumulator_shape_mismatch_fails_at_inference) {
  op_harness *h = harness("rmsprop");
  bind_input(h, "Param", "w", RILL_DTYPE_FP32, DIMS(4, 3), NULL);
  bind_input(h, "Grad", "g", RILL_DTYPE_FP32, DIMS(4, 3), NULL);
  bind_input(h, "Moment", "w_mom", RILL_DTYPE_FP32, DIMS(4, 3), NULL);
  bind_input(h, "MeanSquare", "w_ms", RILL_DTYPE_FP32, DIMS(3, 4), NULL);
  bind_input(h, "LearningRate", "lr", RILL_DTYPE_FP32, DIMS(1), NULL);
  OK(op_harness_output(h, "ParamOut", "w"));
  EXPECT_ERROR(op_harness_infer(h), "rmsprop", "MeanSquare", "w_ms", "[3, 4]");
  op_harness_destroy(h);
}
