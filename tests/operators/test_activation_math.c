/* The math family of operators/activation.c (abs ... pow): every forward against a
 * double reference written here from the definitions, float32 and float64, on ordinary
 * and edge inputs (0, negatives, large magnitudes, NaN); every gradient through the
 * finite-difference checker (grad_check); the zero gradients of ceil, floor and round,
 * sign's scale-by-0 gradient, and pow's FactorTensor. */
#include <stdio.h>

#include "op_test.h"
#include "support/grad_check.h"

typedef struct math_case {
  const char *op;
  const char *attr[2];
  double val[2]; /* the attribute values the reference uses (defaults when attr unset) */
  double (*ref)(double x, const double *p);
  double lo, hi; /* the domain the ordinary inputs and the gradient check draw from */
} math_case;

static double sgn(double x) { return (double)((x > 0) - (x < 0)); }
static double r_abs(double x, const double *p) { (void)p; return fabs(x); }
static double r_ceil(double x, const double *p) { (void)p; return ceil(x); }
static double r_floor(double x, const double *p) { (void)p; return floor(x); }
static double r_round(double x, const double *p) { (void)p; return nearbyint(x); }
static double r_sign(double x, const double *p) { (void)p; return sgn(x); }
static double r_cos(double x, const double *p) { (void)p; return cos(x); }
static double r_sin(double x, const double *p) { (void)p; return sin(x); }
static double r_acos(double x, const double *p) { (void)p; return acos(x); }
static double r_asin(double x, const double *p) { (void)p; return asin(x); }
static double r_atan(double x, const double *p) { (void)p; return atan(x); }
static double r_recip(double x, const double *p) { (void)p; return 1 / x; }
static double r_rsqrt(double x, const double *p) { (void)p; return 1 / sqrt(x); }
static double r_softplus(double x, const double *p) { (void)p; return x > 30 ? x : log1p(exp(x)); }
static double r_softsign(double x, const double *p) { (void)p; return x / (1 + fabs(x)); }
static double r_logsig(double x, const double *p) { (void)p; return x < -30 ? x : -log1p(exp(-x)); }
static double r_tshrink(double x, const double *p) { (void)p; return x - tanh(x); }
static double r_sshrink(double x, const double *p) {
  return x != x ? x : x > p[0] ? x - p[0] : x < -p[0] ? x + p[0] : 0;
}
static double r_hshrink(double x, const double *p) { return x != x ? x : fabs(x) > p[0] ? x : 0; }
static double r_trelu(double x, const double *p) { return x != x ? x : x > p[0] ? x : 0; }
static double r_elu(double x, const double *p) { return x > 0 ? x : p[0] * expm1(x); }
static double r_selu(double x, const double *p) { return p[0] * (x > 0 ? x : p[1] * expm1(x)); }
static double r_brelu(double x, const double *p) { return x != x ? x : x < p[0] ? p[0] : x > p[1] ? p[1] : x; }
static double r_srelu(double x, const double *p) {
  return x != x ? x : log1p(exp(x < -p[0] ? -p[0] : x > p[0] ? p[0] : x));
}
static double r_stanh(double x, const double *p) { return p[1] * tanh(p[0] * x); }
static double r_erf(double x, const double *p) { (void)p; return erf(x); }
static double r_mish(double x, const double *p) {
  double sp = x > p[0] ? x : x < -p[0] ? exp(x) : log1p(exp(x));
  return x * tanh(sp);
}
static double r_log1p(double x, const double *p) { (void)p; return log1p(x); }
static double r_pow(double x, const double *p) { return pow(x, p[0]); }

#define SELU_S 1.0507009873554804934193349852946
#define SELU_A 1.6732632423543772848170429916717
static const math_case cases[] = {
    {"abs", {NULL}, {0}, r_abs, -3, 3},
    {"ceil", {NULL}, {0}, r_ceil, -3, 3},
    {"floor", {NULL}, {0}, r_floor, -3, 3},
    {"round", {NULL}, {0}, r_round, -3, 3},
    {"sign", {NULL}, {0}, r_sign, -3, 3},
    {"cos", {NULL}, {0}, r_cos, -4, 4},
    {"sin", {NULL}, {0}, r_sin, -4, 4},
    {"acos", {NULL}, {0}, r_acos, -0.9, 0.9},
    {"asin", {NULL}, {0}, r_asin, -0.9, 0.9},
    {"atan", {NULL}, {0}, r_atan, -4, 4},
    {"reciprocal", {NULL}, {0}, r_recip, 0.3, 4},
    {"rsqrt", {NULL}, {0}, r_rsqrt, 0.3, 4},
    {"softplus", {NULL}, {0}, r_softplus, -6, 6},
    {"softsign", {NULL}, {0}, r_softsign, -6, 6},
    {"logsigmoid", {NULL}, {0}, r_logsig, -6, 6},
    {"tanh_shrink", {NULL}, {0}, r_tshrink, -3, 3},
    {"softshrink", {NULL}, {0.5}, r_sshrink, -3, 3},
    {"softshrink", {"lambda"}, {1.25}, r_sshrink, -3, 3},
    {"hard_shrink", {NULL}, {0.5}, r_hshrink, -3, 3},
    {"hard_shrink", {"threshold"}, {1.25}, r_hshrink, -3, 3},
    {"thresholded_relu", {NULL}, {1}, r_trelu, -3, 3},
    {"thresholded_relu", {"threshold"}, {-0.25}, r_trelu, -3, 3},
    {"elu", {NULL}, {1}, r_elu, -4, 4},
    {"elu", {"alpha"}, {0.5}, r_elu, -4, 4},
    {"selu", {NULL}, {(float)SELU_S, (float)SELU_A}, r_selu, -4, 4},
    {"selu", {"scale", "alpha"}, {1.5, 2}, r_selu, -4, 4},
    {"brelu", {NULL}, {0, 24}, r_brelu, -3, 30},
    {"brelu", {"t_min", "t_max"}, {-1, 1.5}, r_brelu, -3, 3},
    {"soft_relu", {NULL}, {40}, r_srelu, -6, 6},
    {"soft_relu", {"threshold"}, {2}, r_srelu, -4, 4},
    {"stanh", {NULL}, {(float)0.67, (float)1.7159}, r_stanh, -4, 4},
    {"stanh", {"scale_a", "scale_b"}, {1.5, 0.5}, r_stanh, -4, 4},
    {"erf", {NULL}, {0}, r_erf, -3, 3},
    {"mish", {NULL}, {20}, r_mish, -6, 6},
    {"mish", {"threshold"}, {2}, r_mish, -4, 4},
    {"log1p", {NULL}, {0}, r_log1p, -0.8, 4},
    {"pow", {NULL}, {1}, r_pow, 0.2, 3},
    {"pow", {"factor"}, {2.5}, r_pow, 0.2, 3},
};
#define NCASES (sizeof cases / sizeof cases[0])

static void set_attrs(op_harness *h, const math_case *c) {
  for (int i = 0; i < 2 && c->attr[i]; i++) OK(op_harness_attr_float(h, c->attr[i], (float)c->val[i]));
}

static bool zero_grad(const char *op) {
  return !strcmp(op, "ceil") || !strcmp(op, "floor") || !strcmp(op, "round") || !strcmp(op, "sign");
}

/* Domain values, then edges: 0, -0, negatives and large magnitudes inside the domain,
 * NaN. */
enum { NORD = 40, NEDGE = 9, NALL = NORD + NEDGE };
static void fill_inputs(const math_case *c, double *x) {
  for (int i = 0; i < NORD; i++) x[i] = c->lo + (c->hi - c->lo) * (i + 0.37) / NORD;
  double big = c->hi >= 10 ? 1e4 : c->hi, small = c->lo <= -10 ? -1e4 : c->lo;
  if (c->hi > 5) big = 1e4;
  if (c->lo < -5) small = -1e4;
  const double edge[NEDGE] = {c->lo <= 0 && c->hi >= 0 ? 0.0 : c->hi, c->lo <= 0 && c->hi >= 0 ? -0.0 : c->lo,
                              big, small, c->lo, c->hi, 0.5 * (c->lo + c->hi), NAN, c->lo * 0.999};
  for (int i = 0; i < NEDGE; i++) x[NORD + i] = edge[i];
}

static void check_forward(const math_case *c, rill_dtype dt) {
  double x[NALL];
  float xf[NALL];
  fill_inputs(c, x);
  for (int i = 0; i < NALL; i++) xf[i] = (float)x[i];
  op_harness *h = harness(c->op);
  bool f32 = dt == RILL_DTYPE_FP32;
  bind_input(h, "X", "x", dt, DIMS(7, 7), f32 ? (void *)xf : (void *)x);
  OK(op_harness_output(h, "Out", "out"));
  set_attrs(h, c);
  OK(op_harness_run(h));
  rill_tensor *o = op_harness_tensor(h, "out");
  expect_dims(o, DIMS(7, 7));
  cr_assert_eq(o->dtype, dt);
  for (int i = 0; i < NALL; i++) {
    double in = f32 ? (double)xf[i] : x[i];
    double want = c->ref(in, c->val);
    double got = f32 ? ((float *)rill_tensor_ptr(o))[i] : ((double *)rill_tensor_ptr(o))[i];
    if (want != want) {
      cr_assert(got != got, "%s(%g) = %g, expected NaN", c->op, in, got);
      continue;
    }
    double tol = f32 ? 4e-6 : 1e-13;
    cr_assert(fabs(got - want) <= tol * (1 + fabs(want)), "%s(%.9g) = %.17g, expected %.17g (%s)",
              c->op, in, got, want, f32 ? "float32" : "float64");
  }
  op_harness_destroy(h);
}

Test(activation_math, forward_matches_reference_with_edges) {
  for (size_t k = 0; k < NCASES; k++) {
    check_forward(&cases[k], RILL_DTYPE_FP32);
    check_forward(&cases[k], RILL_DTYPE_FP64);
  }
}

/* Finite-difference check of every gradient on inputs away from the kinks. */
static bool near_kink(const math_case *c, double x) {
  double k[] = {0, c->val[0], -c->val[0], c->val[1], -c->val[1]};
  for (size_t i = 0; i < 5; i++)
    if (fabs(x - k[i]) < 1e-3) return true;
  return false;
}

Test(activation_math, grad_check_fp64) {
  for (size_t k = 0; k < NCASES; k++) {
    const math_case *c = &cases[k];
    if (zero_grad(c->op)) continue;
    double x[24];
    for (int i = 0; i < 24; i++) {
      x[i] = c->lo + (c->hi - c->lo) * (i + 0.43) / 24;
      if (near_kink(c, x[i])) x[i] += 0.01;
      /* Paddle's gradients of soft_relu (masked by Out, not X, against +-threshold) and
       * mish (sigmoid(X) for softplus's derivative where the forward takes softplus as
       * X or exp(X)) are the derivative only where X is inside +-threshold. */
      bool banded = !strcmp(c->op, "soft_relu") || !strcmp(c->op, "mish");
      if (banded && fabs(x[i]) >= c->val[0]) x[i] *= 0.9 * c->val[0] / fabs(x[i]);
    }
    op_harness *h = harness(c->op);
    bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(4, 6), x);
    OK(op_harness_output(h, "Out", "out"));
    set_attrs(h, c);
    grad_check_opts o = {.rtol = 1e-5, .atol = 1e-6};
    rill_status *st = grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), &o);
    cr_assert_null(st, "%s: %s", c->op, rill_status_message(st));
    op_harness_destroy(h);
  }
}

/* ceil, floor, round and sign are flat: their gradient, Paddle's, is zero everywhere; the
 * checker compares it with the central difference (zero away from the steps). */
Test(activation_math, zero_gradients_check) {
  for (size_t k = 0; k < NCASES; k++) {
    const math_case *c = &cases[k];
    if (!zero_grad(c->op)) continue;
    double x[12];
    for (int i = 0; i < 12; i++) x[i] = -2.7 + 0.45 * i + 0.013;
    op_harness *h = harness(c->op);
    bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(12), x);
    OK(op_harness_output(h, "Out", "out"));
    rill_status *st = grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), NULL);
    cr_assert_null(st, "%s: %s", c->op, rill_status_message(st));
    op_harness_destroy(h);
  }
}

static bool want_all(void *impl, const char *var) {
  (void)impl, (void)var;
  return true;
}

Test(activation_math, grad_layouts_follow_paddle) {
  cr_assert_null(rill_registry_init());
  static const struct { const char *op, *type; size_t nin; const char *dep; } lay[] = {
      {"ceil", "ceil_grad", 1, NULL}, {"round", "round_grad", 1, NULL},
      {"sign", "scale", 1, NULL}, {"abs", "abs_grad", 2, "X"},
      {"reciprocal", "reciprocal_grad", 2, "Out"}, {"selu", "selu_grad", 2, "Out"},
      {"soft_relu", "soft_relu_grad", 2, "Out"}, {"elu", "elu_grad", 2, "X"},
      {"mish", "mish_grad", 2, "X"}, {"pow", "pow_grad", 3, "X"},
  };
  for (size_t k = 0; k < sizeof lay / sizeof lay[0]; k++) {
    char *xa[] = {"a"}, *oa[] = {"b"}, *fa[] = {"f"};
    rill_op_slot ins[] = {{"X", xa, 1}, {"FactorTensor", fa, 1}}, outs[] = {{"Out", oa, 1}};
    bool is_pow = !strcmp(lay[k].op, "pow");
    rill_op_desc fwd = {(char *)lay[k].op, ins, is_pow ? 2 : 1, outs, 1, NULL, 0, false, false, {0, NULL}};
    const rill_op_schema *s = rill_schema_find(lay[k].op);
    cr_assert_not_null(s);
    rill_grad_ctx ctx = {&fwd, s, want_all, NULL, NULL, 0, 0};
    cr_assert_null(s->grad(&ctx));
    cr_assert_eq(ctx.nops, 1, "%s", lay[k].op);
    const rill_op_desc *g = &ctx.ops[0];
    cr_assert_str_eq(g->type, lay[k].type);
    cr_assert_eq(g->ninputs, lay[k].nin, "%s: %zu inputs", g->type, g->ninputs);
    if (!strcmp(g->type, "scale")) {
      cr_assert_str_eq(g->inputs[0].param, "X");
      cr_assert_str_eq(g->inputs[0].args[0], "b@GRAD");
      cr_assert_str_eq(g->outputs[0].param, "Out");
      cr_assert_str_eq(g->outputs[0].args[0], "a@GRAD");
      bool zero = false;
      for (size_t i = 0; i < g->nattrs; i++)
        if (!strcmp(g->attrs[i].name, "scale")) zero = g->attrs[i].value.v.f == 0.0f;
      cr_assert(zero, "sign's gradient scales by 0");
    } else if (lay[k].dep) {
      bool found = false;
      for (size_t i = 0; i < g->ninputs; i++)
        if (!strcmp(g->inputs[i].param, lay[k].dep))
          found = !strcmp(g->inputs[i].args[0], !strcmp(lay[k].dep, "X") ? "a" : "b");
      cr_assert(found, "%s reads %s", g->type, lay[k].dep);
    } else {
      cr_assert_str_eq(g->inputs[0].param, "Out@GRAD");
    }
    rill_grad_ctx_clear(&ctx);
  }
}

Test(activation_math, ceil_grad_is_zero_times_dout) {
  double d[4] = {1.5, -2, 0, NAN};
  op_harness *h = harness("floor_grad");
  bind_input(h, "Out@GRAD", "d", RILL_DTYPE_FP64, DIMS(2, 2), d);
  OK(op_harness_output(h, "X@GRAD", "g"));
  OK(op_harness_run(h));
  const double *g = rill_tensor_ptr(op_harness_tensor(h, "g"));
  cr_assert(g[0] == 0 && g[1] == 0 && g[2] == 0 && g[3] != g[3]);
  op_harness_destroy(h);
}

Test(activation_math, pow_factor_tensor_overrides_attribute) {
  double x[3] = {0.5, 2, 3}, dout[3] = {1, 1, 0.5};
  float f = 3;
  op_harness *h = harness("pow");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(3), x);
  bind_input(h, "FactorTensor", "f", RILL_DTYPE_FP32, DIMS(1), &f);
  OK(op_harness_output(h, "Out", "o"));
  OK(op_harness_attr_float(h, "factor", 2));
  OK(op_harness_run(h));
  const double *o = rill_tensor_ptr(op_harness_tensor(h, "o"));
  cr_assert(o[0] == 0.125 && o[1] == 8 && o[2] == 27);
  op_harness_destroy(h);

  h = harness("pow_grad");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(3), x);
  bind_input(h, "Out@GRAD", "d", RILL_DTYPE_FP64, DIMS(3), dout);
  bind_input(h, "FactorTensor", "f", RILL_DTYPE_FP32, DIMS(1), &f);
  OK(op_harness_output(h, "X@GRAD", "g"));
  OK(op_harness_run(h));
  const double *g = rill_tensor_ptr(op_harness_tensor(h, "g"));
  cr_assert(g[0] == 0.75 && g[1] == 12 && g[2] == 13.5);
  op_harness_destroy(h);

  float two[2] = {1, 2};
  h = harness("pow");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(3), x);
  bind_input(h, "FactorTensor", "fac2", RILL_DTYPE_FP32, DIMS(2), two);
  OK(op_harness_output(h, "Out", "o"));
  EXPECT_ERROR(op_harness_run(h), "pow", "FactorTensor", "fac2", "one element");
  op_harness_destroy(h);
}

Test(activation_math, int_input_has_no_kernel) {
  op_harness *h = harness("softplus");
  bind_input(h, "X", "ids", RILL_DTYPE_INT64, DIMS(2), NULL);
  OK(op_harness_output(h, "Out", "o"));
  EXPECT_ERROR(op_harness_run(h), "softplus", "int64");
  op_harness_destroy(h);
}
