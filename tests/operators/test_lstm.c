/* lstm and lstm_unit against naive references written here (each sequence stepped on
 * its own, in double, from the raw Weight and Bias), with and without peepholes,
 * reversed, with initial states, other activations, an empty sequence; the batch order
 * of BatchCellPreAct; errors; and gradients by finite differences. */
#include "op_test.h"
#include "act_ref.h"
#include "support/grad_check.h"

typedef struct lstm_case {
  int64_t D;
  const uint64_t *lod;
  size_t nlod;
  bool peep, reverse, h0, c0;
  int gate, cell, cand;
} lstm_case;

/* Hidden and Cell of every row. */
static void ref_lstm(const lstm_case *c, const double *x, const double *w, const double *b,
                     const double *h0, const double *c0, double *hid, double *cell) {
  int64_t D = c->D;
  double g[64], ph[16], pc[16];
  for (size_t s = 0; s + 1 < c->nlod; s++) {
    int64_t st = (int64_t)c->lod[s], len = (int64_t)c->lod[s + 1] - st;
    for (int64_t i = 0; i < D; i++) {
      ph[i] = c->h0 ? h0[s * D + i] : 0;
      pc[i] = c->c0 ? c0[s * D + i] : 0;
    }
    for (int64_t k = 0; k < len; k++) {
      int64_t t = c->reverse ? st + len - 1 - k : st + k;
      for (int64_t j = 0; j < 4 * D; j++) {
        g[j] = x[t * 4 * D + j] + b[j];
        for (int64_t i = 0; i < D; i++) g[j] += ph[i] * w[i * 4 * D + j];
      }
      for (int64_t i = 0; i < D; i++) {
        double wic = c->peep ? b[4 * D + i] : 0, wfc = c->peep ? b[5 * D + i] : 0;
        double woc = c->peep ? b[6 * D + i] : 0;
        double cand = act(g[i], c->cand), ig = act(g[D + i] + wic * pc[i], c->gate);
        double fg = act(g[2 * D + i] + wfc * pc[i], c->gate);
        double cv = cand * ig + pc[i] * fg;
        double og = act(g[3 * D + i] + woc * cv, c->gate);
        cell[t * D + i] = cv;
        hid[t * D + i] = og * act(cv, c->cell);
      }
      for (int64_t i = 0; i < D; i++) {
        ph[i] = hid[t * D + i];
        pc[i] = cell[t * D + i];
      }
    }
  }
}

static void fill(double *v, int64_t n, double scale, double phase) {
  for (int64_t i = 0; i < n; i++) v[i] = scale * sin((double)i * 0.37 + phase);
}

/* The op with its inputs bound (dtype dt), outputs declared and attributes set. */
static op_harness *lstm_harness(const lstm_case *c, rill_dtype dt, const double *x,
                                const double *w, const double *b, const double *h0,
                                const double *c0) {
  int64_t D = c->D, T = (int64_t)c->lod[c->nlod - 1], N = (int64_t)c->nlod - 1;
  int64_t nb = (c->peep ? 7 : 4) * D;
  float xf[512], wf[512], bf[64], hf[64], cf[64];
  const void *px = x, *pw = w, *pb = b, *ph = h0, *pc = c0;
  if (dt == RILL_DTYPE_FP32) {
    for (int64_t i = 0; i < T * 4 * D; i++) xf[i] = (float)x[i];
    for (int64_t i = 0; i < 4 * D * D; i++) wf[i] = (float)w[i];
    for (int64_t i = 0; i < nb; i++) bf[i] = (float)b[i];
    for (int64_t i = 0; i < N * D; i++) hf[i] = (float)h0[i], cf[i] = (float)c0[i];
    px = xf, pw = wf, pb = bf, ph = hf, pc = cf;
  }
  op_harness *h = harness("lstm");
  rill_tensor *t = op_harness_make(dt, DIMS(T, 4 * D), px);
  size_t n = c->nlod;
  OK(rill_tensor_set_lod(t, 1, (const uint64_t *const[]){c->lod}, &n));
  OK(op_harness_input(h, "Input", "x", t));
  op_harness_free_tensor(t);
  if (c->h0) bind_input(h, "H0", "h0", dt, DIMS(N, D), ph);
  if (c->c0) bind_input(h, "C0", "c0", dt, DIMS(N, D), pc);
  bind_input(h, "Weight", "w", dt, DIMS(D, 4 * D), pw);
  bind_input(h, "Bias", "b", dt, DIMS(1, nb), pb);
  OK(op_harness_output(h, "Hidden", "hidden"));
  OK(op_harness_output(h, "Cell", "cell"));
  OK(op_harness_output(h, "BatchGate", "batch_gate"));
  OK(op_harness_output(h, "BatchCellPreAct", "batch_cell_pre_act"));
  OK(op_harness_attr_bool(h, "use_peepholes", c->peep));
  OK(op_harness_attr_bool(h, "is_reverse", c->reverse));
  OK(op_harness_attr_string(h, "gate_activation", act_names[c->gate]));
  OK(op_harness_attr_string(h, "cell_activation", act_names[c->cell]));
  OK(op_harness_attr_string(h, "candidate_activation", act_names[c->cand]));
  return h;
}

static void check_lstm(const lstm_case *c, rill_dtype dt) {
  int64_t D = c->D, T = (int64_t)c->lod[c->nlod - 1], N = (int64_t)c->nlod - 1;
  cr_assert(T * 4 * D <= 512 && D <= 8 && N <= 8);
  double x[512], w[512], b[64], h0[64], c0[64], hid[128], cell[128];
  fill(x, T * 4 * D, 0.8, 0.1);
  fill(w, 4 * D * D, 0.5, 1.3);
  fill(b, 7 * D, 0.3, 2.2);
  fill(h0, N * D, 0.6, 0.7);
  fill(c0, N * D, 0.9, 1.9);
  ref_lstm(c, x, w, b, h0, c0, hid, cell);
  op_harness *h = lstm_harness(c, dt, x, w, b, h0, c0);
  OK(op_harness_run(h));
  rill_tensor *ho = op_harness_tensor(h, "hidden"), *co = op_harness_tensor(h, "cell");
  expect_dims(ho, DIMS(T, D));
  expect_dims(co, DIMS(T, D));
  expect_dims(op_harness_tensor(h, "batch_gate"), DIMS(T, 4 * D));
  cr_assert_eq(ho->lod.nlevels, 1, "Hidden keeps Input's LoD");
  cr_assert_eq(co->lod.nlevels, 1, "Cell keeps Input's LoD");
  double tol = dt == RILL_DTYPE_FP32 ? 2e-5 : 1e-12;
  for (int64_t i = 0; i < T * D; i++) {
    double gh = dt == RILL_DTYPE_FP32 ? ((float *)rill_tensor_ptr(ho))[i] : ((double *)rill_tensor_ptr(ho))[i];
    double gc = dt == RILL_DTYPE_FP32 ? ((float *)rill_tensor_ptr(co))[i] : ((double *)rill_tensor_ptr(co))[i];
    cr_assert(fabs(gh - hid[i]) <= tol * (1 + fabs(hid[i])), "hidden[%lld] %g != %g", (long long)i, gh, hid[i]);
    cr_assert(fabs(gc - cell[i]) <= tol * (1 + fabs(cell[i])), "cell[%lld] %g != %g", (long long)i, gc, cell[i]);
  }
  op_harness_destroy(h);
}

static const uint64_t lod_a[] = {0, 2, 5, 6};        /* lengths 2, 3, 1 */
static const uint64_t lod_b[] = {0, 3, 3, 7, 9, 10}; /* 3, 0 (empty), 4, 2, 1 */
static const uint64_t lod_c[] = {0, 4};              /* one sequence */

Test(lstm, matches_reference) {
  const uint64_t *lods[] = {lod_a, lod_b, lod_c};
  const size_t nlods[] = {4, 6, 2};
  for (int l = 0; l < 3; l++)
    for (int m = 0; m < 16; m++) {
      bool c0 = (m & 4) || (m & 8);
      lstm_case c = {.D = 3, .lod = lods[l], .nlod = nlods[l], .peep = m & 1, .reverse = m & 2,
                     .h0 = m & 8, .c0 = c0, .gate = SIG, .cell = TANH_, .cand = TANH_};
      check_lstm(&c, RILL_DTYPE_FP64);
      check_lstm(&c, RILL_DTYPE_FP32);
    }
  /* other activations; D = 8 */
  lstm_case c = {.D = 8, .lod = lod_b, .nlod = 6, .peep = true, .reverse = true, .h0 = true,
                 .c0 = true, .gate = TANH_, .cell = RELU, .cand = IDENT};
  check_lstm(&c, RILL_DTYPE_FP64);
  check_lstm(&c, RILL_DTYPE_FP32);
  c = (lstm_case){.D = 2, .lod = lod_a, .nlod = 4, .gate = SIG, .cell = IDENT, .cand = RELU};
  check_lstm(&c, RILL_DTYPE_FP64);
}

/* Batch order: lengths 2, 3, 1 sort to sequences 1, 0, 2; step 0 holds rows 2, 0, 5,
 * step 1 rows 3, 1, step 2 row 4 (reversed: 4, 1, 5, then 3, 0, then 2). */
Test(lstm, batch_outputs_in_batch_order) {
  for (int rev = 0; rev < 2; rev++) {
    lstm_case c = {.D = 2, .lod = lod_a, .nlod = 4, .reverse = rev, .gate = SIG, .cell = TANH_,
                   .cand = TANH_};
    double x[48], w[16], b[14], z[6] = {0};
    fill(x, 48, 0.8, 0.1);
    fill(w, 16, 0.5, 1.3);
    fill(b, 8, 0.3, 2.2);
    op_harness *h = lstm_harness(&c, RILL_DTYPE_FP64, x, w, b, z, z);
    OK(op_harness_run(h));
    const int64_t fwd[] = {2, 0, 5, 3, 1, 4}, bwd[] = {4, 1, 5, 3, 0, 2};
    const double *cell = rill_tensor_ptr(op_harness_tensor(h, "cell"));
    const double *pre = rill_tensor_ptr(op_harness_tensor(h, "batch_cell_pre_act"));
    for (int i = 0; i < 6; i++)
      for (int k = 0; k < 2; k++)
        cr_assert_float_eq(pre[i * 2 + k], tanh(cell[(rev ? bwd : fwd)[i] * 2 + k]), 1e-12,
                           "batch row %d", i);
    op_harness_destroy(h);
  }
}

Test(lstm, errors_name_op_and_variable) {
  double x[48] = {0}, w[16] = {0}, b[14] = {0};
  /* a [1, 4D] Bias with use_peepholes */
  op_harness *h = harness("lstm");
  rill_tensor *t = op_harness_make(RILL_DTYPE_FP64, DIMS(6, 8), x);
  size_t n = 4;
  OK(rill_tensor_set_lod(t, 1, (const uint64_t *const[]){lod_a}, &n));
  OK(op_harness_input(h, "Input", "x", t));
  op_harness_free_tensor(t);
  bind_input(h, "Weight", "w", RILL_DTYPE_FP64, DIMS(2, 8), w);
  bind_input(h, "Bias", "lstm.b", RILL_DTYPE_FP64, DIMS(1, 8), b);
  OK(op_harness_output(h, "Hidden", "hidden"));
  OK(op_harness_output(h, "Cell", "cell"));
  OK(op_harness_output(h, "BatchGate", "bg"));
  OK(op_harness_output(h, "BatchCellPreAct", "bc"));
  EXPECT_ERROR(op_harness_run(h), "lstm", "Bias", "lstm.b", "[1, 14]");
  OK(op_harness_attr_bool(h, "use_peepholes", false));
  OK(op_harness_run(h));
  OK(op_harness_attr_string(h, "gate_activation", "softplus"));
  EXPECT_ERROR(op_harness_run(h), "lstm", "gate_activation", "softplus");
  op_harness_destroy(h);
  /* Input without LoD */
  h = harness("lstm");
  bind_input(h, "Input", "x.nolod", RILL_DTYPE_FP64, DIMS(6, 8), x);
  bind_input(h, "Weight", "w", RILL_DTYPE_FP64, DIMS(2, 8), w);
  bind_input(h, "Bias", "b", RILL_DTYPE_FP64, DIMS(1, 14), b);
  OK(op_harness_output(h, "Hidden", "hidden"));
  OK(op_harness_output(h, "Cell", "cell"));
  OK(op_harness_output(h, "BatchGate", "bg"));
  OK(op_harness_output(h, "BatchCellPreAct", "bc"));
  EXPECT_ERROR(op_harness_run(h), "lstm", "x.nolod", "LoD");
  op_harness_destroy(h);
}

static void check_lstm_grad(const lstm_case *c) {
  int64_t D = c->D, T = (int64_t)c->lod[c->nlod - 1], N = (int64_t)c->nlod - 1;
  double x[512], w[512], b[64], h0[64], c0[64];
  fill(x, T * 4 * D, 0.8, 0.1);
  fill(w, 4 * D * D, 0.5, 1.3);
  fill(b, 7 * D, 0.3, 2.2);
  fill(h0, N * D, 0.6, 0.7);
  fill(c0, N * D, 0.9, 1.9);
  op_harness *h = lstm_harness(c, RILL_DTYPE_FP64, x, w, b, h0, c0);
  grad_check_opts o = {.rtol = 1e-5, .atol = 1e-7};
  rill_status *st;
  if (c->h0)
    st = grad_check(h, GC_SLOTS("Input", "Weight", "Bias", "H0", "C0"), GC_SLOTS("Hidden"), &o);
  else if (c->c0)
    st = grad_check(h, GC_SLOTS("Input", "Weight", "Bias", "C0"), GC_SLOTS("Hidden"), &o);
  else
    st = grad_check(h, GC_SLOTS("Input", "Weight", "Bias"), GC_SLOTS("Hidden"), &o);
  cr_assert_null(st, "peep %d reverse %d h0 %d c0 %d: %s", c->peep, c->reverse, c->h0, c->c0,
                 rill_status_message(st));
  op_harness_destroy(h);
}

Test(lstm, gradients_match_finite_differences) {
  for (int m = 0; m < 8; m++) {
    lstm_case c = {.D = 2, .lod = lod_a, .nlod = 4, .peep = m & 1, .reverse = m & 2, .h0 = m & 4,
                   .c0 = m & 4, .gate = SIG, .cell = TANH_, .cand = TANH_};
    check_lstm_grad(&c);
  }
  lstm_case c = {.D = 2, .lod = lod_b, .nlod = 6, .peep = true, .reverse = true, .c0 = true,
                 .gate = SIG, .cell = TANH_, .cand = IDENT};
  check_lstm_grad(&c);
  c = (lstm_case){.D = 3, .lod = lod_b, .nlod = 6, .peep = true, .h0 = true, .c0 = true,
                  .gate = TANH_, .cell = SIG, .cand = TANH_};
  check_lstm_grad(&c);
}

/* ---- lstm_unit: gates [i, f, o, g] ---- */
static op_harness *unit_harness(int64_t N, int64_t D, const double *x, const double *cp, float fb) {
  op_harness *h = harness("lstm_unit");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(N, 4 * D), x);
  bind_input(h, "C_prev", "c_prev", RILL_DTYPE_FP64, DIMS(N, D), cp);
  OK(op_harness_output(h, "C", "c"));
  OK(op_harness_output(h, "H", "h"));
  OK(op_harness_attr_float(h, "forget_bias", fb));
  return h;
}

Test(lstm_unit, matches_reference_and_gradients) {
  const int64_t N = 3, D = 4;
  double x[48], cp[12];
  fill(x, N * 4 * D, 1.2, 0.3);
  fill(cp, N * D, 0.7, 1.1);
  op_harness *h = unit_harness(N, D, x, cp, 0.5f);
  OK(op_harness_run(h));
  const double *c = rill_tensor_ptr(op_harness_tensor(h, "c"));
  const double *hh = rill_tensor_ptr(op_harness_tensor(h, "h"));
  for (int64_t n = 0; n < N; n++)
    for (int64_t d = 0; d < D; d++) {
      const double *r = x + n * 4 * D;
      double i = act(r[d], SIG), f = act(r[D + d] + 0.5, SIG), o = act(r[2 * D + d], SIG);
      double g = tanh(r[3 * D + d]), cv = f * cp[n * D + d] + i * g;
      cr_assert_float_eq(c[n * D + d], cv, 1e-12);
      cr_assert_float_eq(hh[n * D + d], o * tanh(cv), 1e-12);
    }
  grad_check_opts o = {.rtol = 1e-6, .atol = 1e-8};
  rill_status *st = grad_check(h, GC_SLOTS("X", "C_prev"), GC_SLOTS("H", "C"), &o);
  cr_assert_null(st, "%s", rill_status_message(st));
  st = grad_check(h, GC_SLOTS("X", "C_prev"), GC_SLOTS("H"), &o);
  cr_assert_null(st, "%s", rill_status_message(st));
  op_harness_destroy(h);
}
