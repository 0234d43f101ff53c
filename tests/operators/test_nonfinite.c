/* NaN, +inf and -inf through every elementwise activation (and clip, square, sqrt, exp,
 * log) and through the activations fused into conv2d_fusion and fc: each gives the
 * output of doc/design/kernels.md's table, in float and double, wherever the value sits
 * in a span (the 8-lane vector body, its first lane, the scalar tail). A NaN never
 * comes out as a plausible number. */
#include <stdio.h>

#include "op_test.h"

#define QNAN ((double)NAN)
#define PINF ((double)INFINITY)

typedef struct nf_case {
  const char *op;
  const char *attr[3];
  double val[3];
  double want[3]; /* outputs for NaN, +inf, -inf (NaN: NaN expected) */
} nf_case;

static const nf_case cases[] = {
    {"relu", {NULL}, {0}, {QNAN, PINF, 0}},
    {"relu6", {NULL}, {0}, {QNAN, 6, 0}},
    {"relu6", {"threshold"}, {2.5}, {QNAN, 2.5, 0}},
    {"leaky_relu", {"alpha"}, {0.25}, {QNAN, PINF, -PINF}},
    {"sigmoid", {NULL}, {0}, {QNAN, 1, 0}},
    {"tanh", {NULL}, {0}, {QNAN, 1, -1}},
    {"hard_sigmoid", {NULL}, {0}, {QNAN, 1, 0}},
    {"hard_swish", {NULL}, {0}, {QNAN, PINF, QNAN}}, /* min(max(x+3, 0), 6) x / 6: 0 * -inf */
    {"swish", {"beta"}, {1.5}, {QNAN, PINF, QNAN}},  /* x / (1 + exp(-b x)): -inf / inf */
    {"silu", {NULL}, {0}, {QNAN, PINF, QNAN}},
    {"gelu", {NULL}, {0}, {QNAN, PINF, QNAN}},            /* 0.5 x (1 + erf): -inf * 0 */
    {"gelu", {"approximate"}, {1}, {QNAN, PINF, QNAN}},   /* 0.5 x (1 + tanh): -inf * 0 */
    {"clip", {"min", "max"}, {-1, 2}, {QNAN, 2, -1}},
    {"square", {NULL}, {0}, {QNAN, PINF, PINF}},
    {"sqrt", {NULL}, {0}, {QNAN, PINF, QNAN}},
    {"exp", {NULL}, {0}, {QNAN, PINF, 0}},
    {"log", {NULL}, {0}, {QNAN, PINF, QNAN}},
};
#define NCASES (sizeof cases / sizeof cases[0])

/* 8 lanes x 4 plus a tail of 5: specials in the body (first lane of a vector too), in
 * the last full vector and in the tail. */
enum { N = 37 };
static const int at_nan[] = {0, 11, 30, 33, 36};
static const int at_pinf[] = {3, 8, 31, 34};
static const int at_ninf[] = {5, 16, 29, 32, 35};

static void fill_specials(double *x, int64_t n, int64_t step) {
  for (int64_t i = 0; i < n; i++) x[i] = 0.5 + 0.25 * (double)(i % 7); /* positive: sqrt, log */
  for (size_t k = 0; k < sizeof at_nan / sizeof *at_nan; k++) x[at_nan[k] * step] = QNAN;
  for (size_t k = 0; k < sizeof at_pinf / sizeof *at_pinf; k++) x[at_pinf[k] * step] = PINF;
  for (size_t k = 0; k < sizeof at_ninf / sizeof *at_ninf; k++) x[at_ninf[k] * step] = -PINF;
}

/* 0: NaN, 1: +inf, 2: -inf, -1: finite */
static int special_of(double v) { return isnan(v) ? 0 : isinf(v) ? (v > 0 ? 1 : 2) : -1; }

static void expect_value(const char *what, int64_t i, double in, double got, double want) {
  if (isnan(want))
    cr_assert(isnan(got), "%s[%lld](%g) = %.9g, expected NaN", what, (long long)i, in, got);
  else
    cr_assert(got == want, "%s[%lld](%g) = %.9g, expected %.9g", what, (long long)i, in, got, want);
}

static void run_case(const nf_case *c, rill_dtype dt) {
  double x[N];
  float xf[N];
  fill_specials(x, N, 1);
  for (int i = 0; i < N; i++) xf[i] = (float)x[i];
  op_harness *h = harness(c->op);
  bind_input(h, "X", "x", dt, DIMS(N), dt == RILL_DTYPE_FP32 ? (const void *)xf : (const void *)x);
  OK(op_harness_output(h, "Out", "out"));
  for (int k = 0; k < 3 && c->attr[k]; k++) {
    if (strcmp(c->attr[k], "approximate") == 0) OK(op_harness_attr_bool(h, c->attr[k], true));
    else OK(op_harness_attr_float(h, c->attr[k], (float)c->val[k]));
  }
  OK(op_harness_run(h));
  rill_tensor *o = op_harness_tensor(h, "out");
  char what[64];
  snprintf(what, sizeof what, "%s %s", c->op, dt == RILL_DTYPE_FP32 ? "float32" : "float64");
  for (int64_t i = 0; i < N; i++) {
    double got = dt == RILL_DTYPE_FP32 ? ((float *)rill_tensor_ptr(o))[i] : ((double *)rill_tensor_ptr(o))[i];
    int s = special_of(x[i]);
    if (s >= 0) expect_value(what, i, x[i], got, c->want[s]);
    else cr_assert(isfinite(got), "%s[%lld](%g) = %g", what, (long long)i, x[i], got);
  }
  op_harness_destroy(h);
}

Test(nonfinite, every_activation_follows_the_table_fp32_fp64) {
  for (size_t k = 0; k < NCASES; k++) {
    run_case(&cases[k], RILL_DTYPE_FP32);
    run_case(&cases[k], RILL_DTYPE_FP64);
  }
}

/* act(NaN), act(+inf), act(-inf) of the fused activations. */
static void fused_want(const char *act, double want[3]) {
  double id[3] = {QNAN, PINF, -PINF}, relu[3] = {QNAN, PINF, 0}, relu6[3] = {QNAN, 6, 0},
         sig[3] = {QNAN, 1, 0}, th[3] = {QNAN, 1, -1};
  const double *w = strcmp(act, "relu") == 0    ? relu
                    : strcmp(act, "relu6") == 0 ? relu6
                    : strcmp(act, "sigmoid") == 0 ? sig
                    : strcmp(act, "tanh") == 0  ? th
                                                : id;
  memcpy(want, w, 3 * sizeof *want);
}

/* conv2d_fusion with the specials in ResidualData (added before the activation): a
 * 3x3 conv (padding 1) of n images, c channels, m outputs in `groups` groups over
 * [hh, ww]; every other output element must be finite. */
static void run_conv(int groups, int64_t c, int64_t m, int64_t hh, int64_t ww, const char *act) {
  const int64_t n = 2;
  int64_t cg = c / groups, nx = n * c * hh * ww, nf = m * cg * 9, no = n * m * hh * ww;
  float *x = malloc((size_t)nx * sizeof *x), *f = malloc((size_t)nf * sizeof *f);
  float *b = malloc((size_t)m * sizeof *b), *r = malloc((size_t)no * sizeof *r);
  double *rd = malloc((size_t)no * sizeof *rd);
  for (int64_t i = 0; i < nx; i++) x[i] = (float)((i * 7) % 13 - 6) * 0.1f;
  for (int64_t i = 0; i < nf; i++) f[i] = (float)((i * 5) % 11 - 5) * 0.05f;
  for (int64_t i = 0; i < m; i++) b[i] = 0.1f * (float)i - 0.2f;
  /* The specials at the table's span positions of the first channel's row run, and
   * spread over the rest with a stride. */
  for (int64_t i = 0; i < no; i++) rd[i] = 0.01 * (double)(i % 17);
  double spec[N];
  fill_specials(spec, N, 1);
  for (int64_t i = 0; i < N && i < no; i++)
    if (special_of(spec[i]) >= 0) rd[i] = spec[i];
  for (int64_t i = N; i < no; i += 23) rd[i] = spec[(i / 23) % 3 == 0 ? 0 : (i / 23) % 3 == 1 ? 3 : 5];
  for (int64_t i = 0; i < no; i++) r[i] = (float)rd[i];

  op_harness *h = harness("conv2d_fusion");
  bind_input(h, "Input", "x", RILL_DTYPE_FP32, DIMS(n, c, hh, ww), x);
  bind_input(h, "Filter", "f", RILL_DTYPE_FP32, DIMS(m, cg, 3, 3), f);
  bind_input(h, "Bias", "b", RILL_DTYPE_FP32, DIMS(m), b);
  bind_input(h, "ResidualData", "r", RILL_DTYPE_FP32, DIMS(n, m, hh, ww), r);
  OK(op_harness_output(h, "Output", "out"));
  OK(op_harness_attr_ints(h, "paddings", (const int32_t[]){1, 1}, 2));
  OK(op_harness_attr_int(h, "groups", groups));
  OK(op_harness_attr_string(h, "activation", act));
  OK(op_harness_run(h));
  const float *o = rill_tensor_ptr(op_harness_tensor(h, "out"));
  double want[3];
  fused_want(act, want);
  char what[96];
  snprintf(what, sizeof what, "conv2d_fusion %s (groups %d, %lld -> %lld, %lldx%lld)", act, groups,
           (long long)c, (long long)m, (long long)hh, (long long)ww);
  for (int64_t i = 0; i < no; i++) {
    int s = special_of(rd[i]);
    if (s >= 0) expect_value(what, i, rd[i], o[i], want[s]);
    else cr_assert(isfinite(o[i]), "%s[%lld] = %g", what, (long long)i, o[i]);
  }
  op_harness_destroy(h);
  free(x);
  free(f);
  free(b);
  free(r);
  free(rd);
}

Test(nonfinite, conv2d_fusion_epilogues_follow_the_table) {
  const char *acts[] = {"identity", "relu", "relu6", "sigmoid", "tanh"};
  for (size_t a = 0; a < 5; a++) {
    run_conv(1, 3, 4, 5, 13, acts[a]);   /* small K */
    run_conv(1, 16, 8, 6, 21, acts[a]);  /* larger K */
    run_conv(8, 8, 8, 7, 19, acts[a]);   /* depthwise */
    run_conv(2, 4, 6, 4, 11, acts[a]);   /* groups */
  }
}

/* fc with the specials in Bias (added before the activation), over columns enough for
 * the vector body and a tail; one row (GEMV) and several (GEMM). */
static void run_fc(int64_t m, int64_t k, int64_t n, const char *act) {
  float *x = malloc((size_t)(m * k) * sizeof *x), *w = malloc((size_t)(k * n) * sizeof *w);
  float *b = malloc((size_t)n * sizeof *b);
  double *bd = malloc((size_t)n * sizeof *bd);
  for (int64_t i = 0; i < m * k; i++) x[i] = (float)((i * 3) % 7 - 3) * 0.1f;
  for (int64_t i = 0; i < k * n; i++) w[i] = (float)((i * 5) % 9 - 4) * 0.05f;
  for (int64_t j = 0; j < n; j++) bd[j] = 0.05 * (double)(j % 5);
  double spec[N];
  fill_specials(spec, N, 1);
  for (int64_t j = 0; j < N && j < n; j++)
    if (special_of(spec[j]) >= 0) bd[j] = spec[j];
  for (int64_t j = N; j < n; j += 41) bd[j] = spec[(j / 41) % 2 ? 0 : 5];
  for (int64_t j = 0; j < n; j++) b[j] = (float)bd[j];
  op_harness *h = harness("fc");
  bind_input(h, "Input", "x", RILL_DTYPE_FP32, DIMS(m, k), x);
  bind_input(h, "W", "w", RILL_DTYPE_FP32, DIMS(k, n), w);
  bind_input(h, "Bias", "b", RILL_DTYPE_FP32, DIMS(n), b);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_string(h, "activation_type", act));
  OK(op_harness_run(h));
  const float *o = rill_tensor_ptr(op_harness_tensor(h, "out"));
  double want[3];
  fused_want(act, want);
  char what[64];
  snprintf(what, sizeof what, "fc '%s' (%lldx%lldx%lld)", act, (long long)m, (long long)k, (long long)n);
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      int s = special_of(bd[j]);
      if (s >= 0) expect_value(what, i * n + j, bd[j], o[i * n + j], want[s]);
      else cr_assert(isfinite(o[i * n + j]), "%s[%lld] = %g", what, (long long)(i * n + j), o[i * n + j]);
    }
  op_harness_destroy(h);
  free(x);
  free(w);
  free(b);
  free(bd);
}

Test(nonfinite, fc_epilogues_follow_the_table) {
  const char *acts[] = {"", "relu"};
  for (size_t a = 0; a < 2; a++) {
    run_fc(1, 64, 300, acts[a]); /* GEMV */
    run_fc(3, 16, 45, acts[a]);  /* GEMM */
  }
}
