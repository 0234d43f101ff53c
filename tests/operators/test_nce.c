/* nce: with custom_neg_classes (the deterministic path) against a reference loop for each
 * sampler's probabilities, its gradients against finite differences, the sparse weight
 * gradient against the dense one; the random path's draws checked for range, for the
 * same draws under a fixed seed, and for their frequencies under the uniform and custom
 * samplers; and its errors. */
#include "nn_test.h"

#include "support/grad_check.h"

enum { N = 3, D = 4, K = 6, NT = 2, NEG = 3, S = NT + NEG };
static const int64_t LAB[N * NT] = {0, 3, 5, 2, 1, 1};
static const int32_t NEGS[NEG] = {4, 0, 5};
/* the custom distribution and alias tables fluid.layers.nce builds for it */
static const float PROBS[K] = {0.05f, 0.1f, 0.3f, 0.15f, 0.25f, 0.15f};
static const int32_t ALIAS[K] = {2, 4, -1, 2, -1, 4};
static const float KEEP[K] = {0.3f, 0.6f, 1.0f, 0.9f, 1.0f, 0.9f};

typedef struct nce_cfg {
  int sampler;
  bool bias, weight, custom_negs;
  int seed;
} nce_cfg;

static void set_attrs(op_harness *h, const nce_cfg *c) {
  OK(op_harness_attr_int(h, "num_total_classes", K));
  OK(op_harness_attr_int(h, "num_neg_samples", NEG));
  OK(op_harness_attr_int(h, "sampler", c->sampler));
  OK(op_harness_attr_int(h, "seed", c->seed));
  if (c->custom_negs) OK(op_harness_attr_ints(h, "custom_neg_classes", NEGS, NEG));
}

static op_harness *nce_harness(const nce_cfg *c, const double *x, const double *w,
                               const double *b, const double *sw, int64_t n, const int64_t *lab) {
  op_harness *h = harness("nce");
  bind_input(h, "Input", "x", RILL_DTYPE_FP64, (int64_t[]){n, D}, 2, x);
  bind_input(h, "Label", "lab", RILL_DTYPE_INT64, (int64_t[]){n, NT}, 2, lab);
  bind_input(h, "Weight", "w", RILL_DTYPE_FP64, DIMS(K, D), w);
  if (c->bias) bind_input(h, "Bias", "b", RILL_DTYPE_FP64, DIMS(K, 1), b);
  if (c->weight) bind_input(h, "SampleWeight", "sw", RILL_DTYPE_FP64, (int64_t[]){n, 1}, 2, sw);
  if (c->sampler == 2) {
    bind_input(h, "CustomDistProbs", "probs", RILL_DTYPE_FP32, DIMS(K), PROBS);
    bind_input(h, "CustomDistAlias", "alias", RILL_DTYPE_INT32, DIMS(K), ALIAS);
    bind_input(h, "CustomDistAliasProbs", "keep", RILL_DTYPE_FP32, DIMS(K), KEEP);
  }
  OK(op_harness_output(h, "Cost", "cost"));
  OK(op_harness_output(h, "SampleLogits", "logits"));
  OK(op_harness_output(h, "SampleLabels", "labels"));
  set_attrs(h, c);
  return h;
}

static double prob(int sampler, int64_t t) {
  if (sampler == 0) return (float)(1.0 / K);
  if (sampler == 1) return (float)(log((t + 2.0) / (t + 1.0)) / log((double)K));
  return PROBS[t];
}

static void check_forward(nce_cfg c) {
  double x[N * D], w[K * D], b[K], sw[N] = {0.5, 1.5, 1.0}, cost[N], o[N * S];
  int64_t sl[N * S];
  fill_rand(x, N * D, 61);
  fill_rand(w, K * D, 62);
  fill_rand(b, K, 63);
  for (int i = 0; i < N; i++) {
    cost[i] = 0;
    for (int j = 0; j < S; j++) {
      int64_t t = j < NT ? LAB[i * NT + j] : NEGS[j - NT];
      sl[i * S + j] = t;
      double z = c.bias ? b[t] : 0;
      for (int q = 0; q < D; q++) z += x[i * D + q] * w[t * D + q];
      o[i * S + j] = 1 / (1 + exp(-z));
      double bb = (float)prob(c.sampler, t) * (float)NEG, oo = o[i * S + j];
      cost[i] += j < NT ? -log(oo / (oo + bb)) : -log(bb / (oo + bb));
    }
    if (c.weight) cost[i] *= sw[i];
  }
  op_harness *h = nce_harness(&c, x, w, b, sw, N, LAB);
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "cost"), DIMS(N, 1));
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "cost")), cost, N, 1e-9);
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "logits")), o, N * S, 1e-12);
  const int64_t *got = rill_tensor_ptr(op_harness_tensor(h, "labels"));
  for (int i = 0; i < N * S; i++) cr_assert_eq(got[i], sl[i], "SampleLabels[%d]", i);
  op_harness_destroy(h);
}

Test(nce, custom_negatives_match_reference) {
  check_forward((nce_cfg){0, true, true, true, 0});
  check_forward((nce_cfg){1, false, false, true, 0});
  check_forward((nce_cfg){2, true, false, true, 0});
}

Test(nce, gradients_match_finite_differences) {
  double x[N * D], w[K * D], b[K], sw[N] = {0.5, 1.5, 1.0};
  fill_rand(x, N * D, 71);
  fill_rand(w, K * D, 72);
  fill_rand(b, K, 73);
  nce_cfg cs[] = {{0, true, true, true, 0}, {1, false, false, true, 0}, {2, true, true, true, 0}};
  grad_check_opts o = {.rtol = 1e-6, .atol = 1e-6};
  for (size_t k = 0; k < RILL_COUNTOF(cs); k++) {
    op_harness *h = nce_harness(&cs[k], x, w, b, sw, N, LAB);
    if (cs[k].bias)
      OK(grad_check(h, GC_SLOTS("Input", "Weight", "Bias"), GC_SLOTS("Cost"), &o));
    else
      OK(grad_check(h, GC_SLOTS("Input", "Weight"), GC_SLOTS("Cost"), &o));
    op_harness_destroy(h);
  }
}

Test(nce, sparse_weight_gradient_is_selected_rows) {
  double x[N * D], w[K * D], b[K], sw[N] = {1, 1, 1}, dc[N] = {1, -0.5, 2};
  fill_rand(x, N * D, 81);
  fill_rand(w, K * D, 82);
  fill_rand(b, K, 83);
  nce_cfg c = {0, true, false, true, 0};
  op_harness *f = nce_harness(&c, x, w, b, sw, N, LAB);
  OK(op_harness_run(f));
  double dense[K * D];
  for (int sparse = 0; sparse < 2; sparse++) {
    op_harness *h = harness("nce_grad");
    bind_input(h, "Input", "x", RILL_DTYPE_FP64, DIMS(N, D), x);
    bind_input(h, "Label", "lab", RILL_DTYPE_INT64, DIMS(N, NT), LAB);
    bind_input(h, "Weight", "w", RILL_DTYPE_FP64, DIMS(K, D), w);
    OK(op_harness_input(h, "SampleLogits", "logits", op_harness_tensor(f, "logits")));
    OK(op_harness_input(h, "SampleLabels", "labels", op_harness_tensor(f, "labels")));
    bind_input(h, "Cost@GRAD", "cost@GRAD", RILL_DTYPE_FP64, DIMS(N, 1), dc);
    OK(op_harness_output(h, "Weight@GRAD", "w@GRAD"));
    set_attrs(h, &c);
    OK(op_harness_attr_bool(h, "is_sparse", sparse));
    OK(op_harness_run(h));
    rill_variable *v = rill_scope_find(op_harness_scope(h), "w@GRAD");
    if (!sparse) {
      memcpy(dense, rill_tensor_ptr(op_harness_tensor(h, "w@GRAD")), sizeof dense);
    } else {
      cr_assert_eq(v->kind, RILL_VARKIND_SELECTED_ROWS, "kind %s", rill_var_kind_name(v->kind));
      const rill_selected_rows *sr = &v->u.rows;
      /* the distinct sampled classes 0, 1, 2, 3, 4, 5 less those never sampled */
      static const int64_t rows[] = {0, 1, 2, 3, 4, 5};
      cr_assert_eq(sr->nrows, 6);
      cr_assert_eq(sr->height, K);
      for (int r = 0; r < 6; r++) cr_assert_eq(sr->rows[r], rows[r]);
      expect_close_f64(rill_tensor_ptr(&sr->value), dense, K * D, 1e-15);
    }
    op_harness_destroy(h);
  }
  op_harness_destroy(f);
}

/* The negatives of `rows` rows drawn by sampler `s` with seed `seed`, counted per class. */
static void draw(int s, int seed, int64_t rows, int64_t *count, int64_t *labels_out) {
  double *x = calloc((size_t)(rows * D), sizeof *x), w[K * D] = {0}, b[K] = {0};
  int64_t *lab = calloc((size_t)(rows * NT), sizeof *lab);
  nce_cfg c = {s, false, false, false, seed};
  op_harness *h = nce_harness(&c, x, w, b, NULL, rows, lab);
  OK(op_harness_run(h));
  const int64_t *sl = rill_tensor_ptr(op_harness_tensor(h, "labels"));
  for (int64_t i = 0; i < rows; i++)
    for (int j = NT; j < S; j++) {
      int64_t t = sl[i * S + j];
      cr_assert(t >= 0 && t < K, "negative %lld out of range", (long long)t);
      count[t]++;
    }
  if (labels_out) memcpy(labels_out, sl, (size_t)(rows * S) * sizeof *sl);
  op_harness_destroy(h);
  free(x);
  free(lab);
}

Test(nce, random_negatives_follow_the_sampler) {
  enum { ROWS = 4000 };
  int64_t total = (int64_t)ROWS * NEG;
  /* uniform: every class near 1 / K */
  int64_t cu[K] = {0};
  draw(0, 7, ROWS, cu, NULL);
  for (int t = 0; t < K; t++)
    cr_assert(fabs((double)cu[t] / total - 1.0 / K) < 0.02, "uniform class %d: %lld", t,
              (long long)cu[t]);
  /* custom: the alias tables reproduce PROBS */
  int64_t cc[K] = {0};
  draw(2, 7, ROWS, cc, NULL);
  for (int t = 0; t < K; t++)
    cr_assert(fabs((double)cc[t] / total - PROBS[t]) < 0.02, "custom class %d: %lld", t,
              (long long)cc[t]);
  /* log-uniform: small classes more often, and never class K - 1 (Paddle's modulo) */
  int64_t cl[K] = {0};
  draw(1, 7, ROWS, cl, NULL);
  cr_assert(cl[0] > cl[2] && cl[2] > cl[4], "log-uniform counts %lld %lld %lld",
            (long long)cl[0], (long long)cl[2], (long long)cl[4]);
  /* a fixed seed draws the same negatives on every run */
  int64_t a[50 * S], bb[50 * S], c1[K] = {0}, c2[K] = {0};
  draw(0, 11, 50, c1, a);
  draw(0, 11, 50, c2, bb);
  cr_assert(memcmp(a, bb, sizeof a) == 0);
}

Test(nce, bad_input_fails_naming_op_and_variable) {
  double x[N * D] = {0}, w[K * D] = {0};
  nce_cfg c = {0, false, false, true, 0};
  static const int64_t bad[N * NT] = {0, 3, 9, 2, 1, 1};
  op_harness *h = nce_harness(&c, x, w, NULL, NULL, N, bad);
  EXPECT_ERROR(op_harness_run(h), "nce", "Label (lab)", "class 9 in row 1");
  op_harness_destroy(h);

  h = harness("nce");
  bind_input(h, "Input", "x", RILL_DTYPE_FP64, DIMS(N, D), x);
  bind_input(h, "Label", "lab", RILL_DTYPE_INT64, DIMS(N, NT), LAB);
  bind_input(h, "Weight", "emb", RILL_DTYPE_FP64, DIMS(K + 1, D), NULL);
  OK(op_harness_output(h, "Cost", "cost"));
  set_attrs(h, &c);
  EXPECT_ERROR(op_harness_infer(h), "nce", "Weight (emb)", "num_total_classes = 6");
  op_harness_destroy(h);

  h = harness("nce");
  bind_input(h, "Input", "x", RILL_DTYPE_FP64, DIMS(N, D), x);
  bind_input(h, "Label", "lab", RILL_DTYPE_INT64, DIMS(N, NT), LAB);
  bind_input(h, "Weight", "w", RILL_DTYPE_FP64, DIMS(K, D), w);
  OK(op_harness_output(h, "Cost", "cost"));
  nce_cfg cu = {2, false, false, false, 0};
  set_attrs(h, &cu);
  EXPECT_ERROR(op_harness_infer(h), "nce", "CustomDistProbs");
  op_harness_destroy(h);

  h = harness("nce");
  bind_input(h, "Input", "x", RILL_DTYPE_FP64, DIMS(N, D), x);
  bind_input(h, "Label", "lab", RILL_DTYPE_INT64, DIMS(N, NT), LAB);
  bind_input(h, "Weight", "w", RILL_DTYPE_FP64, DIMS(K, D), w);
  OK(op_harness_output(h, "Cost", "cost"));
  set_attrs(h, &c);
  OK(op_harness_attr_int(h, "num_neg_samples", 2));
  EXPECT_ERROR(op_harness_infer(h), "nce", "custom_neg_classes holds 3");
  op_harness_destroy(h);
}
