/* gru and gru_unit against naive references written here (each sequence stepped on its
 * own, in double, reading Weight's buffer as Paddle does: a [D, 2D] gate matrix, then a
 * [D, D] candidate matrix), reversed, with H0, origin_mode, other activations, an empty
 * sequence; the batch outputs' order; errors; and gradients by finite differences. */
#include "op_test.h"
#include "act_ref.h"
#include "support/grad_check.h"

typedef struct gru_case {
  int64_t D;
  const uint64_t *lod;
  size_t nlod;
  bool reverse, h0, bias, origin;
  int act, gate;
} gru_case;

/* One step from the previous hidden ph: gates g [3D] (in: Input + Bias), hidden out. */
static void ref_step(int64_t D, const double *w, double *g, const double *ph, double *out,
                     int a, int ga, bool origin) {
  double u[16], r[16];
  for (int64_t j = 0; j < 2 * D; j++)
    for (int64_t i = 0; i < D; i++) g[j] += ph[i] * w[i * 2 * D + j];
  for (int64_t i = 0; i < D; i++) u[i] = act(g[i], ga), r[i] = act(g[D + i], ga);
  for (int64_t j = 0; j < D; j++)
    for (int64_t i = 0; i < D; i++) g[2 * D + j] += r[i] * ph[i] * w[2 * D * D + i * D + j];
  for (int64_t i = 0; i < D; i++) {
    double c = act(g[2 * D + i], a);
    out[i] = origin ? u[i] * ph[i] + (1 - u[i]) * c : u[i] * c + (1 - u[i]) * ph[i];
  }
}

static void ref_gru(const gru_case *c, const double *x, const double *w, const double *b,
                    const double *h0, double *hid) {
  int64_t D = c->D;
  double g[48], ph[16];
  for (size_t s = 0; s + 1 < c->nlod; s++) {
    int64_t st = (int64_t)c->lod[s], len = (int64_t)c->lod[s + 1] - st;
    for (int64_t i = 0; i < D; i++) ph[i] = c->h0 ? h0[s * D + i] : 0;
    for (int64_t k = 0; k < len; k++) {
      int64_t t = c->reverse ? st + len - 1 - k : st + k;
      for (int64_t j = 0; j < 3 * D; j++) g[j] = x[t * 3 * D + j] + (c->bias ? b[j] : 0);
      ref_step(D, w, g, ph, hid + t * D, c->act, c->gate, c->origin);
      for (int64_t i = 0; i < D; i++) ph[i] = hid[t * D + i];
    }
  }
}

static void fill(double *v, int64_t n, double scale, double phase) {
  for (int64_t i = 0; i < n; i++) v[i] = scale * sin((double)i * 0.37 + phase);
}

static op_harness *gru_harness(const gru_case *c, rill_dtype dt, const double *x, const double *w,
                               const double *b, const double *h0) {
  int64_t D = c->D, T = (int64_t)c->lod[c->nlod - 1], N = (int64_t)c->nlod - 1;
  float xf[512], wf[512], bf[64], hf[64];
  const void *px = x, *pw = w, *pb = b, *ph = h0;
  if (dt == RILL_DTYPE_FP32) {
    for (int64_t i = 0; i < T * 3 * D; i++) xf[i] = (float)x[i];
    for (int64_t i = 0; i < 3 * D * D; i++) wf[i] = (float)w[i];
    for (int64_t i = 0; i < 3 * D; i++) bf[i] = (float)b[i];
    for (int64_t i = 0; i < N * D; i++) hf[i] = (float)h0[i];
    px = xf, pw = wf, pb = bf, ph = hf;
  }
  op_harness *h = harness("gru");
  rill_tensor *t = op_harness_make(dt, DIMS(T, 3 * D), px);
  size_t n = c->nlod;
  OK(rill_tensor_set_lod(t, 1, (const uint64_t *const[]){c->lod}, &n));
  OK(op_harness_input(h, "Input", "x", t));
  op_harness_free_tensor(t);
  if (c->h0) bind_input(h, "H0", "h0", dt, DIMS(N, D), ph);
  bind_input(h, "Weight", "w", dt, DIMS(D, 3 * D), pw);
  if (c->bias) bind_input(h, "Bias", "b", dt, DIMS(1, 3 * D), pb);
  OK(op_harness_output(h, "BatchGate", "batch_gate"));
  OK(op_harness_output(h, "BatchResetHiddenPrev", "batch_reset_hidden_prev"));
  OK(op_harness_output(h, "BatchHidden", "batch_hidden"));
  OK(op_harness_output(h, "Hidden", "hidden"));
  OK(op_harness_attr_bool(h, "is_reverse", c->reverse));
  OK(op_harness_attr_bool(h, "origin_mode", c->origin));
  OK(op_harness_attr_string(h, "activation", act_names[c->act]));
  OK(op_harness_attr_string(h, "gate_activation", act_names[c->gate]));
  return h;
}

static void check_gru(const gru_case *c, rill_dtype dt) {
  int64_t D = c->D, T = (int64_t)c->lod[c->nlod - 1], N = (int64_t)c->nlod - 1;
  cr_assert(T * 3 * D <= 512 && D <= 8 && N <= 8);
  double x[512], w[512], b[64], h0[64], hid[128];
  fill(x, T * 3 * D, 0.8, 0.1);
  fill(w, 3 * D * D, 0.5, 1.3);
  fill(b, 3 * D, 0.3, 2.2);
  fill(h0, N * D, 0.6, 0.7);
  ref_gru(c, x, w, b, h0, hid);
  op_harness *h = gru_harness(c, dt, x, w, b, h0);
  OK(op_harness_run(h));
  rill_tensor *ho = op_harness_tensor(h, "hidden");
  expect_dims(ho, DIMS(T, D));
  cr_assert_eq(ho->lod.nlevels, 1, "Hidden keeps Input's LoD");
  double tol = dt == RILL_DTYPE_FP32 ? 2e-5 : 1e-12;
  for (int64_t i = 0; i < T * D; i++) {
    double gh = dt == RILL_DTYPE_FP32 ? ((float *)rill_tensor_ptr(ho))[i] : ((double *)rill_tensor_ptr(ho))[i];
    cr_assert(fabs(gh - hid[i]) <= tol * (1 + fabs(hid[i])), "hidden[%lld] %g != %g", (long long)i, gh, hid[i]);
  }
  op_harness_destroy(h);
}

static const uint64_t lod_a[] = {0, 2, 5, 6};        /* lengths 2, 3, 1 */
static const uint64_t lod_b[] = {0, 3, 3, 7, 9, 10}; /* 3, 0 (empty), 4, 2, 1 */
static const uint64_t lod_c[] = {0, 4};              /* one sequence */

Test(gru, matches_reference) {
  const uint64_t *lods[] = {lod_a, lod_b, lod_c};
  const size_t nlods[] = {4, 6, 2};
  for (int l = 0; l < 3; l++)
    for (int m = 0; m < 16; m++) {
      gru_case c = {.D = 3, .lod = lods[l], .nlod = nlods[l], .reverse = m & 1, .h0 = m & 2,
                    .bias = !(m & 4), .origin = m & 8, .act = TANH_, .gate = SIG};
      check_gru(&c, RILL_DTYPE_FP64);
      check_gru(&c, RILL_DTYPE_FP32);
    }
  gru_case c = {.D = 8, .lod = lod_b, .nlod = 6, .reverse = true, .h0 = true, .bias = true,
                .act = RELU, .gate = TANH_};
  check_gru(&c, RILL_DTYPE_FP64);
  check_gru(&c, RILL_DTYPE_FP32);
  c = (gru_case){.D = 2, .lod = lod_a, .nlod = 4, .bias = true, .act = IDENT, .gate = SIG};
  check_gru(&c, RILL_DTYPE_FP64);
}

/* BatchHidden holds Hidden's rows in batch order (lengths 2, 3, 1: rows 2, 0, 5, 3, 1, 4);
 * BatchResetHiddenPrev is the reset gate times the previous hidden row. */
Test(gru, batch_outputs_in_batch_order) {
  gru_case c = {.D = 2, .lod = lod_a, .nlod = 4, .bias = true, .act = TANH_, .gate = SIG};
  double x[36], w[12], b[6], z[6] = {0};
  fill(x, 36, 0.8, 0.1);
  fill(w, 12, 0.5, 1.3);
  fill(b, 6, 0.3, 2.2);
  op_harness *h = gru_harness(&c, RILL_DTYPE_FP64, x, w, b, z);
  OK(op_harness_run(h));
  const int64_t row[] = {2, 0, 5, 3, 1, 4}, prev[] = {-1, -1, -1, 2, 0, 3};
  const double *hid = rill_tensor_ptr(op_harness_tensor(h, "hidden"));
  const double *bh = rill_tensor_ptr(op_harness_tensor(h, "batch_hidden"));
  const double *rh = rill_tensor_ptr(op_harness_tensor(h, "batch_reset_hidden_prev"));
  const double *bg = rill_tensor_ptr(op_harness_tensor(h, "batch_gate"));
  for (int i = 0; i < 6; i++)
    for (int k = 0; k < 2; k++) {
      cr_assert_eq(bh[i * 2 + k], hid[row[i] * 2 + k], "batch row %d", i);
      double p = prev[i] < 0 ? 0 : hid[prev[i] * 2 + k];
      cr_assert_float_eq(rh[i * 2 + k], bg[i * 6 + 2 + k] * p, 1e-15, "batch row %d", i);
    }
  op_harness_destroy(h);
}

Test(gru, errors_name_op_and_variable) {
  double x[36] = {0}, w[12] = {0}, b[6] = {0};
  op_harness *h = harness("gru");
  rill_tensor *t = op_harness_make(RILL_DTYPE_FP64, DIMS(6, 6), x);
  size_t n = 4;
  OK(rill_tensor_set_lod(t, 1, (const uint64_t *const[]){lod_a}, &n));
  OK(op_harness_input(h, "Input", "x", t));
  op_harness_free_tensor(t);
  bind_input(h, "Weight", "gru.w", RILL_DTYPE_FP64, DIMS(2, 6), w);
  bind_input(h, "Bias", "gru.b", RILL_DTYPE_FP64, DIMS(1, 4), b);
  OK(op_harness_output(h, "Hidden", "hidden"));
  EXPECT_ERROR(op_harness_run(h), "gru", "Bias", "gru.b", "[1, 6]");
  op_harness_destroy(h);
  /* H0 of the wrong width; an unknown activation */
  h = harness("gru");
  t = op_harness_make(RILL_DTYPE_FP64, DIMS(6, 6), x);
  OK(rill_tensor_set_lod(t, 1, (const uint64_t *const[]){lod_a}, &n));
  OK(op_harness_input(h, "Input", "x", t));
  op_harness_free_tensor(t);
  bind_input(h, "Weight", "gru.w", RILL_DTYPE_FP64, DIMS(2, 6), w);
  bind_input(h, "H0", "gru.h0", RILL_DTYPE_FP64, DIMS(3, 3), x);
  OK(op_harness_output(h, "Hidden", "hidden"));
  EXPECT_ERROR(op_harness_run(h), "gru", "H0", "gru.h0");
  op_harness_destroy(h);
  h = harness("gru");
  bind_input(h, "Input", "x.nolod", RILL_DTYPE_FP64, DIMS(6, 6), x);
  bind_input(h, "Weight", "gru.w", RILL_DTYPE_FP64, DIMS(2, 6), w);
  OK(op_harness_output(h, "Hidden", "hidden"));
  EXPECT_ERROR(op_harness_run(h), "gru", "x.nolod", "LoD");
  OK(op_harness_attr_string(h, "activation", "gelu"));
  EXPECT_ERROR(op_harness_run(h), "gru", "activation", "gelu");
  op_harness_destroy(h);
}

static void check_gru_grad(const gru_case *c) {
  int64_t D = c->D, T = (int64_t)c->lod[c->nlod - 1], N = (int64_t)c->nlod - 1;
  double x[512], w[512], b[64], h0[64];
  fill(x, T * 3 * D, 0.8, 0.1);
  fill(w, 3 * D * D, 0.5, 1.3);
  fill(b, 3 * D, 0.3, 2.2);
  fill(h0, N * D, 0.6, 0.7);
  op_harness *h = gru_harness(c, RILL_DTYPE_FP64, x, w, b, h0);
  grad_check_opts o = {.rtol = 1e-5, .atol = 1e-7};
  rill_status *st;
  if (c->h0 && c->bias)
    st = grad_check(h, GC_SLOTS("Input", "Weight", "Bias", "H0"), GC_SLOTS("Hidden"), &o);
  else if (c->h0)
    st = grad_check(h, GC_SLOTS("Input", "Weight", "H0"), GC_SLOTS("Hidden"), &o);
  else if (c->bias)
    st = grad_check(h, GC_SLOTS("Input", "Weight", "Bias"), GC_SLOTS("Hidden"), &o);
  else
    st = grad_check(h, GC_SLOTS("Input", "Weight"), GC_SLOTS("Hidden"), &o);
  cr_assert_null(st, "reverse %d h0 %d bias %d origin %d: %s", c->reverse, c->h0, c->bias,
                 c->origin, rill_status_message(st));
  op_harness_destroy(h);
}

Test(gru, gradients_match_finite_differences) {
  for (int m = 0; m < 16; m++) {
    gru_case c = {.D = 2, .lod = lod_a, .nlod = 4, .reverse = m & 1, .h0 = m & 2,
                  .bias = !(m & 4), .origin = m & 8, .act = TANH_, .gate = SIG};
    check_gru_grad(&c);
  }
  gru_case c = {.D = 3, .lod = lod_b, .nlod = 6, .reverse = true, .h0 = true, .bias = true,
                .act = IDENT, .gate = TANH_};
  check_gru_grad(&c);
}

/* ---- gru_unit ---- */
Test(gru_unit, matches_reference_and_gradients) {
  const int64_t N = 3, D = 3;
  double x[27], hp[9], w[27], b[9], want[9];
  fill(x, N * 3 * D, 0.8, 0.1);
  fill(hp, N * D, 0.6, 0.7);
  fill(w, 3 * D * D, 0.5, 1.3);
  fill(b, 3 * D, 0.3, 2.2);
  for (int origin = 0; origin < 2; origin++) {
    for (int64_t r = 0; r < N; r++) {
      double g[9];
      for (int64_t j = 0; j < 3 * D; j++) g[j] = x[r * 3 * D + j] + b[j];
      ref_step(D, w, g, hp + r * D, want + r * D, TANH_, SIG, origin);
    }
    op_harness *h = harness("gru_unit");
    bind_input(h, "Input", "x", RILL_DTYPE_FP64, DIMS(N, 3 * D), x);
    bind_input(h, "HiddenPrev", "hp", RILL_DTYPE_FP64, DIMS(N, D), hp);
    bind_input(h, "Weight", "w", RILL_DTYPE_FP64, DIMS(D, 3 * D), w);
    bind_input(h, "Bias", "b", RILL_DTYPE_FP64, DIMS(1, 3 * D), b);
    OK(op_harness_output(h, "Gate", "gate"));
    OK(op_harness_output(h, "ResetHiddenPrev", "rhp"));
    OK(op_harness_output(h, "Hidden", "hidden"));
    OK(op_harness_attr_bool(h, "origin_mode", origin));
    OK(op_harness_run(h));
    expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "hidden")), want, N * D, 1e-12);
    grad_check_opts o = {.rtol = 1e-6, .atol = 1e-8};
    rill_status *st = grad_check(h, GC_SLOTS("Input", "HiddenPrev", "Weight", "Bias"),
                                 GC_SLOTS("Hidden"), &o);
    cr_assert_null(st, "origin %d: %s", origin, rill_status_message(st));
    op_harness_destroy(h);
  }
}
