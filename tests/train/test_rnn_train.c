/* The rnn op trained end to end (float32): Input -> rnn -> mean -> loss, the backward
 * pass, SGD, a few steps through the executor. A reference takes the same steps beside
 * it in double: the step-by-step rnn of tests/operators/rnn_test.h on the parameters it
 * holds, the gradient by central differences, the SGD update. Each step's loss and the
 * final parameters must agree, and the loss must fall. With dropout between layers the
 * reference uses the mask the step drew (fetched from DropoutState). */
#include "framework/program/program.h"
#include "operators/rnn_test.h"
#include "train/train_util.h"
#include "transform/prog_util.h"

#define F RILL_DTYPE_FP32

typedef struct rcase {
  cfg c;
  float dropout, lr;
  int steps;
} rcase;

typedef struct rnet {
  rill_program *main, *startup;
  rill_param_grads *pg;
  int64_t nw;
  char wname[64][32];
} rnet;

static void build_net(rnet *n, const rcase *rc) {
  const cfg *c = &rc->c;
  memset(n, 0, sizeof *n);
  n->main = prog_new();
  n->startup = prog_new();
  int64_t T = c->T, N = c->N, SD = c->L * c->D, W = c->D * c->H;
  prog_var(n->main, "x", F, "s", 3, T, N, c->I);
  prog_var(n->main, "len", RILL_DTYPE_INT64, "s", 1, N);
  prog_var(n->main, "h0", F, "s", 3, SD, N, c->H);
  prog_var(n->main, "c0", F, "s", 3, SD, N, c->H);
  prog_var(n->main, "out", F, "", 3, T, N, W);
  prog_var(n->main, "hn", F, "", 3, SD, N, c->H);
  prog_var(n->main, "cn", F, "", 3, SD, N, c->H);
  prog_var(n->main, "reserve", F, "", 1, (int64_t)-1);
  prog_var(n->main, "mask", RILL_DTYPE_UINT8, "s", 3, T, N, W);
  prog_var(n->main, "loss", F, "", 1, (int64_t)1);
  n->nw = nweights(c);
  const char *wl[64];
  for (int64_t k = 0; k < n->nw; k++) {
    int64_t dims[2];
    size_t nd = weight_shape(c, k, dims);
    snprintf(n->wname[k], sizeof n->wname[k], "rnn_0.w_%lld", (long long)k);
    POK(tu_param(n->main, n->startup, n->wname[k], F, dims, nd, 0.5f, (int)(k + 3)));
    wl[k] = n->wname[k];
  }
  rill_op_builder *b = NULL;
  POK(rill_op_builder_create("rnn", &b));
  const char *x = "x", *len = "len", *pre[2] = {"h0", "c0"}, *st[2] = {"hn", "cn"};
  const char *out = "out", *res = "reserve", *mask = "mask";
  size_t ns = c->mode == LSTM ? 2 : 1;
  POK(rill_op_builder_input(b, "Input", &x, 1));
  POK(rill_op_builder_input(b, "PreState", pre, ns));
  POK(rill_op_builder_input(b, "WeightList", wl, (size_t)n->nw));
  if (c->lens) POK(rill_op_builder_input(b, "SequenceLength", &len, 1));
  POK(rill_op_builder_output(b, "Out", &out, 1));
  POK(rill_op_builder_output(b, "State", st, ns));
  POK(rill_op_builder_output(b, "Reserve", &res, 1));
  POK(rill_op_builder_output(b, "DropoutState", &mask, 1));
  POK(rill_op_builder_attr_string(b, "mode", mode_names[c->mode]));
  POK(rill_op_builder_attr_int(b, "num_layers", c->L));
  POK(rill_op_builder_attr_int(b, "hidden_size", (int32_t)c->H));
  POK(rill_op_builder_attr_int(b, "input_size", (int32_t)c->I));
  POK(rill_op_builder_attr_bool(b, "is_bidirec", c->D == 2));
  POK(rill_op_builder_attr_bool(b, "is_test", false));
  POK(rill_op_builder_attr_float(b, "dropout_prob", rc->dropout));
  prog_op_end(b, n->main);
  prog_op(n->main, "mean", "X=out", "Out=loss");
  POK(rill_program_append_backward(n->main, "loss", NULL, 0, &n->pg));
  POK(tu_append_optimizer(n->main, n->startup, n->pg, TU_SGD, rc->lr));
  POK(rill_program_validate(n->main));
  cr_assert_eq(rill_param_grads_count(n->pg), (size_t)n->nw, "every weight is trained");
}

static void net_free(rnet *n) {
  rill_param_grads_destroy(n->pg);
  rill_program_destroy(n->main);
  rill_program_destroy(n->startup);
}

/* mean(Out) of the reference. */
static double ref_loss(const cfg *c, const double *x, const double *h0, const double *c0,
                       double *const *w, const uint8_t *mask, double keep) {
  int64_t n = c->T * c->N * c->D * c->H, sn = c->L * c->D * c->N * c->H;
  double *out = malloc((size_t)n * sizeof *out), *hn = malloc((size_t)sn * sizeof *hn);
  double *cn = malloc((size_t)sn * sizeof *cn);
  ref_rnn_dropout(c, x, h0, c0, w, mask, keep, out, hn, cn);
  double s = 0;
  for (int64_t i = 0; i < n; i++) s += out[i];
  free(out), free(hn), free(cn);
  return s / (double)n;
}

static const float *param_of(rill_scope *s, const char *name, rill_tensor **t) {
  POK(rill_scope_get_tensor(s, name, t));
  return rill_tensor_data(*t);
}

static void train_case(const rcase *rc) {
  const cfg *c = &rc->c;
  rnet n;
  build_net(&n, rc);
  int64_t T = c->T, N = c->N, SD = c->L * c->D, nx = T * N * c->I, ns = SD * N * c->H;
  int64_t nout = T * N * c->D * c->H;
  double *x = malloc((size_t)nx * sizeof *x), *h0 = malloc((size_t)ns * sizeof *h0);
  double *c0 = malloc((size_t)ns * sizeof *c0);
  fill_det(x, (size_t)nx, 11, 1.0);
  fill_det(h0, (size_t)ns, 12, 0.5);
  fill_det(c0, (size_t)ns, 13, 0.5);
  float *xf = malloc((size_t)nx * sizeof *xf), *h0f = malloc((size_t)ns * sizeof *h0f);
  float *c0f = malloc((size_t)ns * sizeof *c0f);
  for (int64_t i = 0; i < nx; i++) x[i] = xf[i] = (float)x[i];
  for (int64_t i = 0; i < ns; i++) h0[i] = h0f[i] = (float)h0[i], c0[i] = c0f[i] = (float)c0[i];
  int64_t lens[16];
  for (int64_t b = 0; b < N; b++) lens[b] = c->lens ? c->lens[b] : T;
  const char *feeds[4] = {"x", "len", "h0", "c0"};
  rill_tensor *ft[4] = {wrap(F, xf, 3, T, N, c->I), wrap(RILL_DTYPE_INT64, lens, 1, N),
                        wrap(F, h0f, 3, SD, N, c->H), wrap(F, c0f, 3, SD, N, c->H)};
  rill_scope *s = NULL;
  POK(rill_scope_create(NULL, &s));
  rill_executor *e = exe_new();
  POK(rill_executor_run(e, n.startup, s, NULL, NULL, 0, NULL, 0, NULL));
  /* the reference starts from the parameters the startup program drew */
  double *w[64];
  int64_t wn[64];
  for (int64_t k = 0; k < n.nw; k++) {
    int64_t dims[2];
    size_t nd = weight_shape(c, k, dims);
    wn[k] = dims[0] * (nd == 2 ? dims[1] : 1);
    w[k] = malloc((size_t)wn[k] * sizeof **w);
    rill_tensor *t;
    const float *p = param_of(s, n.wname[k], &t);
    for (int64_t i = 0; i < wn[k]; i++) w[k][i] = p[i];
    rill_tensor_destroy(t);
  }
  const double keep = (double)(1.0f - rc->dropout);
  const bool dropout = rc->dropout > 0 && c->L > 1;
  const char *fetch[2] = {"loss", "mask"};
  double first = 0, prev = 0;
  uint8_t *first_mask = calloc((size_t)nout, 1);
  for (int step = 0; step < rc->steps; step++) {
    rill_tensor *got[2] = {NULL, NULL};
    POK(rill_executor_run(e, n.main, s, feeds, ft, 4, fetch, 2, got));
    float loss = *(float *)rill_tensor_data(got[0]);
    const uint8_t *mask = rill_tensor_data(got[1]);
    const uint8_t *use = dropout ? mask : NULL;
    if (step == 0) memcpy(first_mask, mask, (size_t)nout);
    else if (dropout)
      cr_assert(memcmp(first_mask, mask, (size_t)nout) != 0, "step %d drew step 0's mask", step);
    double want = ref_loss(c, x, h0, c0, w, use, keep);
    cr_assert(fabs(loss - want) <= 1e-5 * (1 + fabs(want)), "%s step %d: loss %.8g, reference %.8g",
              mode_names[c->mode], step, (double)loss, want);
    if (step == 0) first = loss;
    else if (!dropout)
      cr_assert_lt(loss, prev, "%s step %d: the loss rose (%g -> %g)", mode_names[c->mode], step,
                   prev, (double)loss);
    prev = loss;
    /* the reference's step: central differences on the same mask, then SGD */
    double *gr[64];
    for (int64_t k = 0; k < n.nw; k++) {
      gr[k] = malloc((size_t)wn[k] * sizeof **gr);
      for (int64_t i = 0; i < wn[k]; i++) {
        double v = w[k][i], eps = 1e-6;
        w[k][i] = v + eps;
        double lp = ref_loss(c, x, h0, c0, w, use, keep);
        w[k][i] = v - eps;
        double lm = ref_loss(c, x, h0, c0, w, use, keep);
        w[k][i] = v;
        gr[k][i] = (lp - lm) / (2 * eps);
      }
    }
    for (int64_t k = 0; k < n.nw; k++) {
      for (int64_t i = 0; i < wn[k]; i++) w[k][i] -= (double)rc->lr * gr[k][i];
      free(gr[k]);
    }
    rill_tensor_destroy(got[0]);
    rill_tensor_destroy(got[1]);
  }
  /* the parameters the steps left, against the reference's */
  for (int64_t k = 0; k < n.nw; k++) {
    rill_tensor *t;
    const float *p = param_of(s, n.wname[k], &t);
    for (int64_t i = 0; i < wn[k]; i++)
      cr_assert(fabs(p[i] - w[k][i]) <= 1e-4 * (1 + fabs(w[k][i])), "%s: %s[%lld] %.8g, reference "
                "%.8g", mode_names[c->mode], n.wname[k], (long long)i, (double)p[i], w[k][i]);
    rill_tensor_destroy(t);
  }
  /* and the loss they give on step 0's batch and mask */
  double final = ref_loss(c, x, h0, c0, w, dropout ? first_mask : NULL, keep);
  cr_log_info("%s: loss %.6f -> %.6f after %d steps", mode_names[c->mode], first, final, rc->steps);
  cr_assert_lt(final, first - 1e-3, "%s: the loss did not fall (%g -> %g)", mode_names[c->mode],
               first, final);
  for (int64_t k = 0; k < n.nw; k++) free(w[k]);
  for (int i = 0; i < 4; i++) rill_tensor_destroy(ft[i]);
  free(first_mask);
  free(x), free(h0), free(c0), free(xf), free(h0f), free(c0f);
  rill_executor_destroy(e);
  rill_scope_destroy(s);
  net_free(&n);
}

static const int64_t lens3[] = {5, 2, 0}; /* T = 5: full, short, empty */

Test(train, rnn_lstm_bidirectional_with_dropout_sgd) {
  rcase rc = {.c = {.mode = LSTM, .L = 2, .D = 2, .T = 5, .N = 3, .I = 3, .H = 4, .lens = lens3},
              .dropout = 0.3f, .lr = 1.0f, .steps = 4};
  train_case(&rc);
}

Test(train, rnn_gru_two_layers_sgd) {
  rcase rc = {.c = {.mode = GRU, .L = 2, .D = 1, .T = 5, .N = 3, .I = 3, .H = 4, .lens = lens3},
              .lr = 1.0f, .steps = 4};
  train_case(&rc);
}

Test(train, rnn_simple_sgd) {
  rcase tanh_rc = {.c = {.mode = RNN_TANH, .L = 1, .D = 2, .T = 4, .N = 3, .I = 3, .H = 4},
                   .lr = 1.0f, .steps = 4};
  train_case(&tanh_rc);
  rcase relu_rc = {.c = {.mode = RNN_RELU, .L = 2, .D = 1, .T = 5, .N = 3, .I = 3, .H = 4,
                         .lens = lens3},
                   .lr = 0.2f, .steps = 4};
  train_case(&relu_rc);
}
