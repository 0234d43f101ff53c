/* lstmp against a naive reference written here (each sequence stepped on its own, in
 * double, from the raw weights): peepholes, reverse, initial states, cell and projection
 * clipping, the projection activation (cell_activation's function unless identity, as in
 * Paddle 1.8), an empty sequence; errors; and gradients by finite differences. */
#include "op_test.h"
#include "act_ref.h"
#include "support/grad_check.h"

/* The clip attributes are float32: the kernels clip at their float32 value. */
static double clip(double v, double c) {
  c = (double)(float)c;
  return c > 0 ? (v < -c ? -c : v > c ? c : v) : v;
}

typedef struct lstmp_case {
  int64_t D, P;
  const uint64_t *lod;
  size_t nlod;
  bool peep, reverse, h0, c0;
  int gate, cell, cand, proj;
  double cell_clip, proj_clip;
} lstmp_case;

/* Projection and Cell of every row. */
static void ref_lstmp(const lstmp_case *c, const double *x, const double *w, const double *pw,
                      const double *b, const double *h0, const double *c0, double *proj,
                      double *cell) {
  int64_t D = c->D, P = c->P;
  double g[64], pr[16], pc[16], hid[16];
  for (size_t s = 0; s + 1 < c->nlod; s++) {
    int64_t st = (int64_t)c->lod[s], len = (int64_t)c->lod[s + 1] - st;
    for (int64_t i = 0; i < P; i++) pr[i] = c->h0 ? h0[s * P + i] : 0;
    for (int64_t i = 0; i < D; i++) pc[i] = c->c0 ? c0[s * D + i] : 0;
    for (int64_t k = 0; k < len; k++) {
      int64_t t = c->reverse ? st + len - 1 - k : st + k;
      for (int64_t j = 0; j < 4 * D; j++) {
        g[j] = x[t * 4 * D + j] + b[j];
        for (int64_t i = 0; i < P; i++) g[j] += pr[i] * w[i * 4 * D + j];
      }
      for (int64_t i = 0; i < D; i++) {
        double wic = c->peep ? b[4 * D + i] : 0, wfc = c->peep ? b[5 * D + i] : 0;
        double woc = c->peep ? b[6 * D + i] : 0;
        double cand = act(g[i], c->cand), ig = act(g[D + i] + wic * pc[i], c->gate);
        double fg = act(g[2 * D + i] + wfc * pc[i], c->gate);
        double cv = clip(cand * ig + pc[i] * fg, c->cell_clip);
        double og = act(g[3 * D + i] + woc * cv, c->gate);
        cell[t * D + i] = cv;
        hid[i] = og * act(cv, c->cell);
      }
      for (int64_t j = 0; j < P; j++) {
        double r = 0;
        for (int64_t i = 0; i < D; i++) r += hid[i] * pw[i * P + j];
        if (c->proj != IDENT) r = act(r, c->cell);
        proj[t * P + j] = clip(r, c->proj_clip);
      }
      for (int64_t i = 0; i < P; i++) pr[i] = proj[t * P + i];
      for (int64_t i = 0; i < D; i++) pc[i] = cell[t * D + i];
    }
  }
}

static void fill(double *v, int64_t n, double scale, double phase) {
  for (int64_t i = 0; i < n; i++) v[i] = scale * sin((double)i * 0.37 + phase);
}

static void to_f32(const double *src, float *dst, int64_t n) {
  for (int64_t i = 0; i < n; i++) dst[i] = (float)src[i];
}

typedef struct lstmp_data {
  double x[512], w[256], pw[64], b[64], h0[64], c0[64];
} lstmp_data;

static void make_data(const lstmp_case *c, lstmp_data *d) {
  int64_t T = (int64_t)c->lod[c->nlod - 1], N = (int64_t)c->nlod - 1;
  fill(d->x, T * 4 * c->D, 0.8, 0.1);
  fill(d->w, c->P * 4 * c->D, 0.5, 1.3);
  fill(d->pw, c->D * c->P, 0.7, 0.4);
  fill(d->b, 7 * c->D, 0.3, 2.2);
  fill(d->h0, N * c->P, 0.6, 0.7);
  fill(d->c0, N * c->D, 0.9, 1.9);
}

/* The op with its inputs bound (dtype dt), outputs declared and attributes set. */
static op_harness *lstmp_harness(const lstmp_case *c, rill_dtype dt, const lstmp_data *d) {
  int64_t D = c->D, P = c->P, T = (int64_t)c->lod[c->nlod - 1], N = (int64_t)c->nlod - 1;
  int64_t nb = (c->peep ? 7 : 4) * D;
  static float xf[512], wf[256], pwf[64], bf[64], hf[64], cf[64];
  const void *px = d->x, *pwt = d->w, *ppw = d->pw, *pb = d->b, *ph = d->h0, *pc = d->c0;
  if (dt == RILL_DTYPE_FP32) {
    to_f32(d->x, xf, T * 4 * D);
    to_f32(d->w, wf, P * 4 * D);
    to_f32(d->pw, pwf, D * P);
    to_f32(d->b, bf, nb);
    to_f32(d->h0, hf, N * P);
    to_f32(d->c0, cf, N * D);
    px = xf, pwt = wf, ppw = pwf, pb = bf, ph = hf, pc = cf;
  }
  op_harness *h = harness("lstmp");
  rill_tensor *t = op_harness_make(dt, DIMS(T, 4 * D), px);
  size_t n = c->nlod;
  OK(rill_tensor_set_lod(t, 1, (const uint64_t *const[]){c->lod}, &n));
  OK(op_harness_input(h, "Input", "x", t));
  op_harness_free_tensor(t);
  if (c->h0) bind_input(h, "H0", "h0", dt, DIMS(N, P), ph);
  if (c->c0) bind_input(h, "C0", "c0", dt, DIMS(N, D), pc);
  bind_input(h, "Weight", "w", dt, DIMS(P, 4 * D), pwt);
  bind_input(h, "ProjWeight", "pw", dt, DIMS(D, P), ppw);
  bind_input(h, "Bias", "b", dt, DIMS(1, nb), pb);
  OK(op_harness_output(h, "Projection", "proj"));
  OK(op_harness_output(h, "Cell", "cell"));
  OK(op_harness_output(h, "BatchGate", "batch_gate"));
  OK(op_harness_output(h, "BatchCellPreAct", "batch_cell_pre_act"));
  OK(op_harness_output(h, "BatchHidden", "batch_hidden"));
  OK(op_harness_attr_bool(h, "use_peepholes", c->peep));
  OK(op_harness_attr_bool(h, "is_reverse", c->reverse));
  OK(op_harness_attr_float(h, "cell_clip", (float)c->cell_clip));
  OK(op_harness_attr_float(h, "proj_clip", (float)c->proj_clip));
  OK(op_harness_attr_string(h, "gate_activation", act_names[c->gate]));
  OK(op_harness_attr_string(h, "cell_activation", act_names[c->cell]));
  OK(op_harness_attr_string(h, "candidate_activation", act_names[c->cand]));
  OK(op_harness_attr_string(h, "proj_activation", act_names[c->proj]));
  return h;
}

static double at(const rill_tensor *t, int64_t i) {
  return t->dtype == RILL_DTYPE_FP32 ? ((const float *)rill_tensor_ptr(t))[i]
                                     : ((const double *)rill_tensor_ptr(t))[i];
}

static void check_lstmp(const lstmp_case *c, rill_dtype dt) {
  int64_t D = c->D, P = c->P, T = (int64_t)c->lod[c->nlod - 1];
  cr_assert(T * 4 * D <= 512 && D <= 8 && P <= 8 && c->nlod <= 9);
  lstmp_data d;
  double proj[128], cell[128];
  make_data(c, &d);
  ref_lstmp(c, d.x, d.w, d.pw, d.b, d.h0, d.c0, proj, cell);
  op_harness *h = lstmp_harness(c, dt, &d);
  OK(op_harness_run(h));
  rill_tensor *po = op_harness_tensor(h, "proj"), *co = op_harness_tensor(h, "cell");
  expect_dims(po, DIMS(T, P));
  expect_dims(co, DIMS(T, D));
  expect_dims(op_harness_tensor(h, "batch_hidden"), DIMS(T, D));
  cr_assert_eq(po->lod.nlevels, 1, "Projection keeps Input's LoD");
  cr_assert_eq(co->lod.nlevels, 1, "Cell keeps Input's LoD");
  double tol = dt == RILL_DTYPE_FP32 ? 2e-5 : 1e-12;
  for (int64_t i = 0; i < T * D; i++)
    cr_assert(fabs(at(co, i) - cell[i]) <= tol * (1 + fabs(cell[i])), "cell[%lld] %.17g != %.17g",
              (long long)i, at(co, i), cell[i]);
  for (int64_t i = 0; i < T * P; i++)
    cr_assert(fabs(at(po, i) - proj[i]) <= tol * (1 + fabs(proj[i])), "proj[%lld] %.17g != %.17g",
              (long long)i, at(po, i), proj[i]);
  op_harness_destroy(h);
}

static const uint64_t lod_a[] = {0, 2, 5, 6};        /* lengths 2, 3, 1 */
static const uint64_t lod_b[] = {0, 3, 3, 7, 9, 10}; /* 3, 0 (empty), 4, 2, 1 */

Test(lstmp, matches_reference) {
  const uint64_t *lods[] = {lod_a, lod_b};
  const size_t nlods[] = {4, 6};
  for (int l = 0; l < 2; l++)
    for (int m = 0; m < 32; m++) {
      bool c0 = (m & 4) || (m & 8);
      lstmp_case c = {.D = 3, .P = 2, .lod = lods[l], .nlod = nlods[l], .peep = m & 1,
                      .reverse = m & 2, .h0 = m & 8, .c0 = c0, .gate = SIG, .cell = TANH_,
                      .cand = TANH_, .proj = (m & 16) ? IDENT : TANH_};
      check_lstmp(&c, RILL_DTYPE_FP64);
      check_lstmp(&c, RILL_DTYPE_FP32);
    }
  /* clipping: some cells and projections reach their bounds */
  lstmp_case c = {.D = 4, .P = 3, .lod = lod_b, .nlod = 6, .peep = true, .h0 = true, .c0 = true,
                  .gate = SIG, .cell = TANH_, .cand = IDENT, .proj = TANH_, .cell_clip = 0.3,
                  .proj_clip = 0.2};
  check_lstmp(&c, RILL_DTYPE_FP64);
  check_lstmp(&c, RILL_DTYPE_FP32);
  /* proj_activation relu with cell_activation sigmoid: the projection gets sigmoid */
  c = (lstmp_case){.D = 2, .P = 4, .lod = lod_a, .nlod = 4, .reverse = true, .gate = TANH_,
                   .cell = SIG, .cand = RELU, .proj = RELU};
  check_lstmp(&c, RILL_DTYPE_FP64);
  check_lstmp(&c, RILL_DTYPE_FP32);
}

static void lstmp_bind_seq(op_harness *h, const char *name, const double *x) {
  rill_tensor *t = op_harness_make(RILL_DTYPE_FP64, DIMS(6, 8), x);
  size_t n = 4;
  OK(rill_tensor_set_lod(t, 1, (const uint64_t *const[]){lod_a}, &n));
  OK(op_harness_input(h, "Input", name, t));
  op_harness_free_tensor(t);
}

static void lstmp_outputs(op_harness *h) {
  OK(op_harness_output(h, "Projection", "proj"));
  OK(op_harness_output(h, "Cell", "cell"));
  OK(op_harness_output(h, "BatchGate", "bg"));
  OK(op_harness_output(h, "BatchCellPreAct", "bc"));
  OK(op_harness_output(h, "BatchHidden", "bh"));
}

/* An lstmp with Weight [3, 8] (P = 3), ProjWeight pw [2, 3] (D = 2), Bias b, its
 * outputs, and Input `x_name` with or without lod_a. */
static op_harness *lstmp_err_harness(const char *x_name, bool lod, const double *x,
                                     const double *w, const double *pw, const double *b,
                                     int64_t nb) {
  op_harness *h = harness("lstmp");
  if (lod)
    lstmp_bind_seq(h, x_name, x);
  else
    bind_input(h, "Input", x_name, RILL_DTYPE_FP64, DIMS(6, 8), x);
  bind_input(h, "Weight", "w", RILL_DTYPE_FP64, DIMS(3, 8), w);
  bind_input(h, "ProjWeight", "pw", RILL_DTYPE_FP64, DIMS(2, 3), pw);
  bind_input(h, "Bias", "lstmp.b", RILL_DTYPE_FP64, DIMS(1, nb), b);
  lstmp_outputs(h);
  return h;
}

Test(lstmp, errors_name_op_and_variable) {
  double x[48] = {0}, w[24] = {0}, pw[6] = {0}, b[14] = {0}, h0[9] = {0};
  op_harness *h = harness("lstmp");
  lstmp_bind_seq(h, "x", x);
  bind_input(h, "Weight", "w", RILL_DTYPE_FP64, DIMS(3, 8), w);
  bind_input(h, "ProjWeight", "lstmp.pw", RILL_DTYPE_FP64, DIMS(3, 2), pw);
  bind_input(h, "Bias", "b", RILL_DTYPE_FP64, DIMS(1, 14), b);
  lstmp_outputs(h);
  /* ProjWeight [3, 2] against Input [6, 8] (D = 2) and Weight [3, 8] (P = 3) */
  EXPECT_ERROR(op_harness_run(h), "lstmp", "ProjWeight", "lstmp.pw");
  op_harness_destroy(h);
  h = lstmp_err_harness("x", true, x, w, pw, b, 8);
  bind_input(h, "H0", "h0", RILL_DTYPE_FP64, DIMS(3, 3), h0);
  bind_input(h, "C0", "c0", RILL_DTYPE_FP64, DIMS(3, 2), h0);
  EXPECT_ERROR(op_harness_run(h), "lstmp", "Bias", "lstmp.b", "[1, 14]");
  OK(op_harness_attr_bool(h, "use_peepholes", false));
  OK(op_harness_run(h));
  OK(op_harness_attr_string(h, "proj_activation", "softplus"));
  EXPECT_ERROR(op_harness_run(h), "lstmp", "proj_activation", "softplus");
  op_harness_destroy(h);
  /* H0 must be [N, P] */
  h = lstmp_err_harness("x", true, x, w, pw, b, 8);
  bind_input(h, "H0", "lstmp.h0", RILL_DTYPE_FP64, DIMS(3, 2), h0);
  bind_input(h, "C0", "c0", RILL_DTYPE_FP64, DIMS(3, 2), h0);
  OK(op_harness_attr_bool(h, "use_peepholes", false));
  EXPECT_ERROR(op_harness_run(h), "lstmp", "H0", "lstmp.h0");
  op_harness_destroy(h);
  /* Input without LoD */
  h = lstmp_err_harness("x.nolod", false, x, w, pw, b, 14);
  EXPECT_ERROR(op_harness_run(h), "lstmp", "x.nolod", "LoD");
  op_harness_destroy(h);
}

static void check_lstmp_grad(const lstmp_case *c) {
  lstmp_data d;
  make_data(c, &d);
  op_harness *h = lstmp_harness(c, RILL_DTYPE_FP64, &d);
  grad_check_opts o = {.rtol = 1e-5, .atol = 1e-7};
  rill_status *st;
  if (c->h0)
    st = grad_check(h, GC_SLOTS("Input", "Weight", "ProjWeight", "Bias", "H0", "C0"),
                    GC_SLOTS("Projection"), &o);
  else if (c->c0)
    st = grad_check(h, GC_SLOTS("Input", "Weight", "ProjWeight", "Bias", "C0"),
                    GC_SLOTS("Projection"), &o);
  else
    st = grad_check(h, GC_SLOTS("Input", "Weight", "ProjWeight", "Bias"), GC_SLOTS("Projection"), &o);
  cr_assert_null(st, "peep %d reverse %d h0 %d c0 %d: %s", c->peep, c->reverse, c->h0, c->c0,
                 rill_status_message(st));
  op_harness_destroy(h);
}

Test(lstmp, gradients_match_finite_differences) {
  for (int m = 0; m < 16; m++) {
    lstmp_case c = {.D = 2, .P = 3, .lod = lod_a, .nlod = 4, .peep = m & 1, .reverse = m & 2,
                    .h0 = m & 4, .c0 = m & 4, .gate = SIG, .cell = TANH_, .cand = TANH_,
                    .proj = (m & 8) ? IDENT : TANH_};
    check_lstmp_grad(&c);
  }
  lstmp_case c = {.D = 2, .P = 2, .lod = lod_b, .nlod = 6, .peep = true, .reverse = true,
                  .c0 = true, .gate = SIG, .cell = SIG, .cand = IDENT, .proj = TANH_};
  check_lstmp_grad(&c);
  /* clipped cells and projections pass no gradient */
  c = (lstmp_case){.D = 3, .P = 2, .lod = lod_a, .nlod = 4, .peep = true, .h0 = true, .c0 = true,
                   .gate = SIG, .cell = TANH_, .cand = TANH_, .proj = TANH_, .cell_clip = 0.35,
                   .proj_clip = 0.25};
  check_lstmp_grad(&c);
}
