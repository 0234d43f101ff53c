/* softmax_with_cross_entropy and its gradient: Softmax and Loss against a long double
 * reference (hard/soft labels, ignore_index, any axis, large logits, use_softmax false,
 * in place), float64 gradient checks through the custom maker (gradient from Softmax),
 * the gradient kernel in place on Softmax, and errors. */
#include <stdio.h>

#include "op_test.h"
#include "support/fail_alloc.h"
#include "support/grad_check.h"

static double at(const rill_tensor *t, int64_t i) {
  return t->dtype == RILL_DTYPE_FP32 ? ((float *)rill_tensor_ptr(t))[i] : ((double *)rill_tensor_ptr(t))[i];
}

typedef struct swce_case {
  rill_dtype dt;
  int64_t d[4];
  int r, axis;
  bool soft, use_softmax, inplace;
  int ignore;     /* ignore_index to set, and put in one label */
  double scale;   /* logits magnitude */
} swce_case;

/* Fills logits and labels for case c; returns numel. */
static int64_t fill(const swce_case *c, double *x, double *soft, int64_t *hard, int64_t *outer,
                    int64_t *n, int64_t *inner) {
  int ax = c->axis < 0 ? c->axis + c->r : c->axis;
  *outer = *inner = 1;
  for (int i = 0; i < ax; i++) *outer *= c->d[i];
  for (int i = ax + 1; i < c->r; i++) *inner *= c->d[i];
  *n = c->d[ax];
  int64_t total = *outer * *n * *inner;
  for (int64_t i = 0; i < total; i++) {
    x[i] = c->use_softmax ? sin((double)i * 0.7 + 0.3) * c->scale : 0.05 + 0.9 * (double)((i * 13) % 17) / 17.0;
    if (c->dt == RILL_DTYPE_FP32) x[i] = (float)x[i];
    soft[i] = (double)((i * 5) % 3) / 4.0;
  }
  /* Soft labels sum to 1 along the axis, as Paddle requires (its gradient,
   * Softmax - Label, assumes it). */
  for (int64_t o = 0; o < *outer; o++)
    for (int64_t j = 0; j < *inner; j++) {
      double s = 0;
      for (int64_t k = 0; k < *n; k++) s += soft[(o * *n + k) * *inner + j] += 0.125;
      for (int64_t k = 0; k < *n; k++) soft[(o * *n + k) * *inner + j] /= s;
    }
  if (c->dt == RILL_DTYPE_FP32)
    for (int64_t i = 0; i < total; i++) soft[i] = (float)soft[i];
  for (int64_t i = 0; i < *outer * *inner; i++) hard[i] = (i * 7 + 2) % *n;
  if (*outer * *inner > 1 && !c->soft) hard[1] = c->ignore;
  return total;
}

static void *as(rill_dtype dt, const double *src, int64_t n, float *buf) {
  if (dt == RILL_DTYPE_FP64) return (void *)src;
  for (int64_t i = 0; i < n; i++) buf[i] = (float)src[i];
  return buf;
}

static void set_attrs(op_harness *h, const swce_case *c) {
  OK(op_harness_attr_int(h, "axis", c->axis));
  OK(op_harness_attr_bool(h, "soft_label", c->soft));
  OK(op_harness_attr_bool(h, "use_softmax", c->use_softmax));
  OK(op_harness_attr_int(h, "ignore_index", c->ignore));
}

/* Binds Logits "logits" and Label "label" for c. */
static void bind(op_harness *h, const swce_case *c, const char *slot_x, const double *x,
                 const double *soft, const int64_t *hard, float *buf, float *buf2) {
  int64_t total = numel_of(c->d, (size_t)c->r);
  bind_input(h, slot_x, slot_x[0] == 'L' ? "logits" : "sm", c->dt, c->d, (size_t)c->r, as(c->dt, x, total, buf));
  int64_t ld[4];
  memcpy(ld, c->d, sizeof ld);
  if (c->soft) {
    bind_input(h, "Label", "label", c->dt, c->d, (size_t)c->r, as(c->dt, soft, total, buf2));
  } else {
    ld[c->axis < 0 ? c->axis + c->r : c->axis] = 1;
    bind_input(h, "Label", "label", RILL_DTYPE_INT64, ld, (size_t)c->r, hard);
  }
}

static void run_forward(const swce_case *c) {
  double x[256], soft[256], want_sm[256];
  float xf[256], sf[256];
  int64_t hard[64], outer, n, inner;
  int64_t total = fill(c, x, soft, hard, &outer, &n, &inner);
  double want_loss[64];
  for (int64_t o = 0; o < outer; o++)
    for (int64_t j = 0; j < inner; j++) {
      long double mx = -INFINITY, s = 0;
      for (int64_t k = 0; k < n; k++) mx = fmaxl(mx, x[(o * n + k) * inner + j]);
      /* Paddle's CPU softmax: shifted logits clipped from below at -64 */
      for (int64_t k = 0; k < n; k++) s += expl(fmaxl(x[(o * n + k) * inner + j] - mx, -64));
      long double loss = 0;
      for (int64_t k = 0; k < n; k++) {
        int64_t i = (o * n + k) * inner + j;
        long double logp = c->use_softmax ? fmaxl(x[i] - mx, -64) - logl(s) : logl(x[i]);
        want_sm[i] = c->use_softmax ? (double)expl(logp) : x[i];
        if (c->soft) loss -= soft[i] * logp;
        else if (hard[o * inner + j] == k) loss = -logp;
      }
      want_loss[o * inner + j] = (double)loss;
    }
  op_harness *h = harness("softmax_with_cross_entropy");
  bind(h, c, "Logits", x, soft, hard, xf, sf);
  OK(op_harness_output(h, "Softmax", c->inplace ? "logits" : "softmax"));
  OK(op_harness_output(h, "Loss", "loss"));
  set_attrs(h, c);
  OK(op_harness_run(h));
  rill_tensor *sm = op_harness_tensor(h, c->inplace ? "logits" : "softmax"), *loss = op_harness_tensor(h, "loss");
  expect_dims(sm, c->d, (size_t)c->r);
  int64_t ld[4];
  memcpy(ld, c->d, sizeof ld);
  ld[c->axis < 0 ? c->axis + c->r : c->axis] = 1;
  expect_dims(loss, ld, (size_t)c->r);
  double tol = c->dt == RILL_DTYPE_FP32 ? 2e-6 : 1e-13;
  for (int64_t i = 0; i < total; i++)
    cr_assert(fabs(at(sm, i) - want_sm[i]) <= tol, "softmax[%lld] %g != %g", (long long)i, at(sm, i), want_sm[i]);
  for (int64_t i = 0; i < outer * inner; i++) {
    double want = !c->soft && hard[i] == c->ignore ? 0 : want_loss[i];
    cr_assert(fabs(at(loss, i) - want) <= tol * (1 + fabs(want)), "loss[%lld] %.10g != %.10g",
              (long long)i, at(loss, i), want);
    cr_assert(isfinite(at(loss, i)));
  }
  op_harness_destroy(h);
}

#define F32 RILL_DTYPE_FP32
#define F64 RILL_DTYPE_FP64

Test(softmax_with_cross_entropy, hard_labels_last_axis) {
  run_forward(&(swce_case){F32, {6, 5}, 2, -1, false, true, false, -100, 2});
  run_forward(&(swce_case){F64, {6, 5}, 2, -1, false, true, false, -100, 2});
  run_forward(&(swce_case){F64, {2, 3, 4}, 3, 2, false, true, false, -100, 3});
}

Test(softmax_with_cross_entropy, hard_labels_other_axis_and_ignore_index) {
  run_forward(&(swce_case){F32, {2, 4, 3}, 3, 1, false, true, false, -100, 2});
  run_forward(&(swce_case){F64, {3, 4, 2, 2}, 4, 1, false, true, false, 0, 2});
  run_forward(&(swce_case){F32, {5, 4}, 2, -1, false, true, false, 3, 1});
}

Test(softmax_with_cross_entropy, soft_labels) {
  run_forward(&(swce_case){F32, {4, 6}, 2, -1, true, true, false, -100, 2});
  run_forward(&(swce_case){F64, {2, 5, 3}, 3, 1, true, true, false, -100, 2});
}

Test(softmax_with_cross_entropy, large_logits_stay_finite) {
  run_forward(&(swce_case){F32, {4, 6}, 2, -1, false, true, false, -100, 200});
  run_forward(&(swce_case){F64, {4, 6}, 2, -1, true, true, false, -100, 2000});
}

/* A label logit 100 below the maximum: Paddle's loss is -log(exp(-64) / sum), 64 + log(sum),
 * not 100 + log(sum); its softmax entry is exp(-64) / sum, not exp(-100) / sum. */
Test(softmax_with_cross_entropy, shifted_logits_clip_at_minus_64) {
  for (int dt = 0; dt < 2; dt++) {
    double x[3] = {0, -100, -1}, sum = 1 + exp(-64.0) + exp(-1.0);
    float xf[3] = {0, -100, -1};
    int64_t label[1] = {1};
    op_harness *h = harness("softmax_with_cross_entropy");
    bind_input(h, "Logits", "logits", dt ? F64 : F32, DIMS(1, 3), dt ? (void *)x : (void *)xf);
    bind_input(h, "Label", "label", RILL_DTYPE_INT64, DIMS(1, 1), label);
    OK(op_harness_output(h, "Softmax", "softmax"));
    OK(op_harness_output(h, "Loss", "loss"));
    OK(op_harness_run(h));
    double loss = at(op_harness_tensor(h, "loss"), 0), p1 = at(op_harness_tensor(h, "softmax"), 1);
    double want = 64 + log(sum), rel = dt ? 1e-14 : 1e-6;
    cr_expect(fabs(loss - want) <= rel * want, "loss %.10g, want %.10g", loss, want);
    cr_expect(fabs(p1 - exp(-64.0) / sum) <= rel * exp(-64.0), "softmax[1] %.10g, want %.10g", p1,
              exp(-64.0) / sum);
    op_harness_destroy(h);
  }
}

Test(softmax_with_cross_entropy, use_softmax_false_takes_probabilities) {
  run_forward(&(swce_case){F32, {5, 4}, 2, -1, false, false, false, -100, 1});
  run_forward(&(swce_case){F64, {3, 4, 2}, 3, 1, true, false, false, -100, 1});
}

Test(softmax_with_cross_entropy, softmax_in_place_over_logits) {
  run_forward(&(swce_case){F32, {6, 5}, 2, -1, false, true, true, -100, 2});
  run_forward(&(swce_case){F64, {2, 4, 3}, 3, 1, true, true, true, -100, 2});
  run_forward(&(swce_case){F64, {2, 4, 3}, 3, 1, false, false, true, -100, 1});
}

static void check_grad(const swce_case *c) {
  double x[256], soft[256];
  float xf[256], sf[256];
  int64_t hard[64], outer, n, inner;
  fill(c, x, soft, hard, &outer, &n, &inner);
  op_harness *h = harness("softmax_with_cross_entropy");
  bind(h, c, "Logits", x, soft, hard, xf, sf);
  OK(op_harness_output(h, "Softmax", "softmax"));
  OK(op_harness_output(h, "Loss", "loss"));
  set_attrs(h, c);
  rill_status *st = grad_check(h, GC_SLOTS("Logits"), GC_SLOTS("Loss"), NULL);
  cr_assert_null(st, "%s", rill_status_message(st));
  op_harness_destroy(h);
}

Test(softmax_with_cross_entropy, grad_check_fp64) {
  check_grad(&(swce_case){F64, {4, 5}, 2, -1, false, true, false, -100, 2});
  check_grad(&(swce_case){F64, {2, 3, 4}, 3, 1, false, true, false, 1, 2});
  check_grad(&(swce_case){F64, {3, 4}, 2, -1, true, true, false, -100, 2});
  check_grad(&(swce_case){F64, {2, 3, 2}, 3, 1, true, true, false, -100, 2});
  check_grad(&(swce_case){F64, {4, 3}, 2, -1, false, false, false, -100, 1});
  check_grad(&(swce_case){F64, {3, 4}, 2, -1, true, false, false, -100, 1});
}

/* The gradient op alone, writing into Softmax (Paddle's in-place pair) or a new variable. */
static void run_grad_op(const swce_case *c, bool inplace, double *out) {
  double x[256], soft[256], dl[64];
  float xf[256], sf[256], dlf[64];
  int64_t hard[64], outer, n, inner;
  int64_t total = fill(c, x, soft, hard, &outer, &n, &inner);
  /* Softmax input: normalize the fill so it is a distribution along the axis. */
  for (int64_t o = 0; o < outer; o++)
    for (int64_t j = 0; j < inner; j++) {
      double s = 0;
      for (int64_t k = 0; k < n; k++) s += fabs(x[(o * n + k) * inner + j]) + 0.1;
      for (int64_t k = 0; k < n; k++) x[(o * n + k) * inner + j] = (fabs(x[(o * n + k) * inner + j]) + 0.1) / s;
    }
  for (int64_t i = 0; i < outer * inner; i++) dl[i] = 0.5 + 0.25 * (double)(i % 3);
  op_harness *h = harness("softmax_with_cross_entropy_grad");
  bind(h, c, "Softmax", x, soft, hard, xf, sf);
  int64_t ld[4];
  memcpy(ld, c->d, sizeof ld);
  ld[c->axis < 0 ? c->axis + c->r : c->axis] = 1;
  bind_input(h, "Loss@GRAD", "loss@GRAD", c->dt, ld, (size_t)c->r, as(c->dt, dl, outer * inner, dlf));
  const char *dname = inplace ? "sm" : "logits@GRAD";
  OK(op_harness_output(h, "Logits@GRAD", dname));
  set_attrs(h, c);
  OK(op_harness_run(h));
  rill_tensor *g = op_harness_tensor(h, dname);
  expect_dims(g, c->d, (size_t)c->r);
  for (int64_t i = 0; i < total; i++) out[i] = at(g, i);
  /* Reference: (softmax - onehot) * dloss, 0 on ignored positions. */
  for (int64_t o = 0; o < outer; o++)
    for (int64_t j = 0; j < inner; j++)
      for (int64_t k = 0; k < n; k++) {
        int64_t i = (o * n + k) * inner + j, li = o * inner + j;
        double p = c->dt == RILL_DTYPE_FP32 ? (double)(float)x[i] : x[i];
        double want;
        if (c->soft) want = (p - soft[i]) * dl[li];
        else if (hard[li] == c->ignore) want = 0;
        else want = (p - (hard[li] == k)) * dl[li];
        cr_assert(fabs(out[i] - want) <= 1e-6 * (1 + fabs(want)), "[%lld] %g != %g", (long long)i, out[i], want);
      }
  op_harness_destroy(h);
}

Test(softmax_with_cross_entropy, grad_op_in_place_on_softmax) {
  const swce_case cases[] = {
      {F32, {6, 5}, 2, -1, false, true, false, -100, 2},
      {F64, {2, 4, 3}, 3, 1, false, true, false, 2, 2},
      {F32, {2, 4, 3}, 3, 1, true, true, false, -100, 2},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    double a[256], b[256];
    run_grad_op(&cases[k], false, a);
    run_grad_op(&cases[k], true, b);
    expect_close_f64(b, a, numel_of(cases[k].d, (size_t)cases[k].r), 0);
  }
}

static bool want_all(void *impl, const char *var) {
  (void)impl, (void)var;
  return true;
}

Test(softmax_with_cross_entropy, grad_maker_reads_softmax_not_logits) {
  cr_assert_null(rill_registry_init());
  char *xa[] = {"logits"}, *la[] = {"label"}, *sa[] = {"sm"}, *oa[] = {"loss"};
  rill_op_slot ins[] = {{"Logits", xa, 1}, {"Label", la, 1}};
  rill_op_slot outs[] = {{"Softmax", sa, 1}, {"Loss", oa, 1}};
  rill_attr attrs[] = {{"soft_label", {.type = RILL_ATTR_BOOLEAN, .v.b = true}, {0, NULL}}};
  rill_op_desc fwd = {"softmax_with_cross_entropy", ins, 2, outs, 2, attrs, 1, false, false, {0, NULL}};
  const rill_op_schema *s = rill_schema_find("softmax_with_cross_entropy");
  rill_grad_ctx ctx = {&fwd, s, want_all, NULL, NULL, 0, 0};
  cr_assert_null(s->grad(&ctx));
  cr_assert_eq(ctx.nops, 1);
  const rill_op_desc *g = &ctx.ops[0];
  cr_assert_str_eq(g->type, "softmax_with_cross_entropy_grad");
  cr_assert_eq(g->ninputs, 3);
  cr_assert_str_eq(rill_op_input(g, "Label")->args[0], "label");
  cr_assert_str_eq(rill_op_input(g, "Softmax")->args[0], "sm");
  cr_assert_str_eq(rill_op_input(g, "Loss@GRAD")->args[0], "loss@GRAD");
  cr_assert(rill_op_input(g, "Logits") == NULL);
  cr_assert(rill_op_input(g, "Softmax@GRAD") == NULL);
  cr_assert_eq(g->noutputs, 1);
  cr_assert_str_eq(rill_op_output(g, "Logits@GRAD")->args[0], "logits@GRAD");
  cr_assert(g->attrs[0].value.v.b);
  rill_grad_ctx_clear(&ctx);
}

Test(softmax_with_cross_entropy, errors_name_op_and_variable) {
  op_harness *h = harness("softmax_with_cross_entropy");
  bind_input(h, "Logits", "fc_out", RILL_DTYPE_FP32, DIMS(4, 3), NULL);
  bind_input(h, "Label", "gold", RILL_DTYPE_INT64, DIMS(4, 3), NULL);
  OK(op_harness_output(h, "Softmax", "sm"));
  OK(op_harness_output(h, "Loss", "loss"));
  EXPECT_ERROR(op_harness_infer(h), "softmax_with_cross_entropy", "gold", "extent 1");
  op_harness_destroy(h);

  h = harness("softmax_with_cross_entropy");
  bind_input(h, "Logits", "fc_out", RILL_DTYPE_FP32, DIMS(4, 3, 2), NULL);
  bind_input(h, "Label", "gold", RILL_DTYPE_INT64, DIMS(4, 1, 2), NULL);
  OK(op_harness_output(h, "Softmax", "sm"));
  OK(op_harness_output(h, "Loss", "loss"));
  OK(op_harness_attr_int(h, "axis", 1));
  OK(op_harness_attr_bool(h, "numeric_stable_mode", false));
  EXPECT_ERROR(op_harness_infer(h), "softmax_with_cross_entropy", "axis", "numeric_stable_mode");
  op_harness_destroy(h);

  h = harness("softmax_with_cross_entropy");
  bind_input(h, "Logits", "fc_out", RILL_DTYPE_FP32, DIMS(4, 3), NULL);
  bind_input(h, "Label", "gold", RILL_DTYPE_INT64, DIMS(4, 1), NULL);
  OK(op_harness_output(h, "Softmax", "sm"));
  OK(op_harness_output(h, "Loss", "loss"));
  OK(op_harness_attr_int(h, "axis", 2));
  EXPECT_ERROR(op_harness_infer(h), "softmax_with_cross_entropy", "fc_out", "axis 2");
  op_harness_destroy(h);

  h = harness("softmax_with_cross_entropy");
  bind_input(h, "Logits", "fc_out", RILL_DTYPE_FP32, DIMS(4, 3), NULL);
  bind_input(h, "Label", "gold", RILL_DTYPE_FP32, DIMS(4, 3), NULL);
  OK(op_harness_output(h, "Softmax", "sm"));
  OK(op_harness_output(h, "Loss", "loss"));
  EXPECT_ERROR(op_harness_infer(h), "softmax_with_cross_entropy", "gold", "int64");
  op_harness_destroy(h);

  float x[6] = {0};
  int64_t lbl[2] = {1, -7};
  h = harness("softmax_with_cross_entropy");
  bind_input(h, "Logits", "fc_out", RILL_DTYPE_FP32, DIMS(2, 3), x);
  bind_input(h, "Label", "gold", RILL_DTYPE_INT64, DIMS(2, 1), lbl);
  OK(op_harness_output(h, "Softmax", "sm"));
  OK(op_harness_output(h, "Loss", "loss"));
  EXPECT_ERROR(op_harness_run(h), "softmax_with_cross_entropy", "gold", "-7");
  op_harness_destroy(h);
}

Test(softmax_with_cross_entropy, compile_time_unknown_batch) {
  const rill_op_schema *s = rill_schema_find("softmax_with_cross_entropy");
  rill_tensor_meta x = {.dtype = RILL_DTYPE_FP32, .dims = {3, {-1, 10, 4}}, .known = true};
  rill_tensor_meta l = {.dtype = RILL_DTYPE_INT64, .dims = {3, {-1, 1, 4}}, .known = true};
  rill_tensor_meta sm = {0}, loss = {0};
  const rill_tensor_meta *ins[] = {&x, &l};
  rill_tensor_meta *outs[] = {&sm, &loss};
  size_t nin[] = {1, 1}, nout[] = {1, 1};
  rill_attr_value attrs[] = {{.type = RILL_ATTR_BOOLEAN, .v.b = false}, {.type = RILL_ATTR_BOOLEAN, .v.b = true},
                             {.type = RILL_ATTR_BOOLEAN, .v.b = true}, {.type = RILL_ATTR_INT, .v.i = -100},
                             {.type = RILL_ATTR_INT, .v.i = 1}};
  cr_assert_eq(s->nattrs, 5);
  rill_infer_ctx ic = {.schema = s, .attrs = attrs, .nin = nin, .in = ins, .nout = nout, .out = outs};
  cr_assert_null(s->infer(&ic));
  cr_assert(sm.known && loss.known);
  cr_assert_eq(sm.dims.d[0], -1);
  cr_assert_eq(sm.dims.d[1], 10);
  cr_assert_eq(loss.dims.n, 3);
  cr_assert_eq(loss.dims.d[0], -1);
  cr_assert_eq(loss.dims.d[1], 1);
  cr_assert_eq(loss.dims.d[2], 4);
  cr_assert_eq(loss.lod_from[0], 0, "Loss takes Logits' LoD");
}

/* Out-of-memory: every allocation of a run (harness, inputs, outputs, scratch) may fail
 * and the run must report it and free everything. */
typedef struct oom_ctx {
  const char *op;
  op_harness *h;
} oom_ctx;

static rill_status *oom_run(void *p) {
  oom_ctx *c = p;
  RILL_TRY(op_harness_create(c->op, &c->h));
  float x[24];
  int64_t lbl[6];
  for (int i = 0; i < 24; i++) x[i] = (float)i / 7;
  for (int i = 0; i < 6; i++) lbl[i] = i % 4;
  rill_tensor *t = op_harness_make(RILL_DTYPE_FP32, DIMS(2, 4, 3), x);
  if (!t) return rill_oom();
  rill_status *st = op_harness_input(c->h, strcmp(c->op, "log_softmax") ? "Logits" : "X", "x", t);
  op_harness_free_tensor(t);
  RILL_TRY(st);
  if (strcmp(c->op, "log_softmax") == 0) {
    RILL_TRY(op_harness_output(c->h, "Out", "out"));
  } else {
    rill_tensor *l = op_harness_make(RILL_DTYPE_INT64, DIMS(2, 1, 3), lbl);
    if (!l) return rill_oom();
    st = op_harness_input(c->h, "Label", "label", l);
    op_harness_free_tensor(l);
    RILL_TRY(st);
    RILL_TRY(op_harness_output(c->h, "Softmax", "sm"));
    RILL_TRY(op_harness_output(c->h, "Loss", "loss"));
  }
  RILL_TRY(op_harness_attr_int(c->h, "axis", 1));
  return op_harness_run(c->h);
}

static void oom_cleanup(void *p) {
  oom_ctx *c = p;
  op_harness_destroy(c->h);
  c->h = NULL;
}

Test(softmax_with_cross_entropy, out_of_memory_is_an_error_and_leaks_nothing) {
  cr_assert_null(rill_registry_init());
  const char *ops[] = {"softmax_with_cross_entropy", "log_softmax"};
  for (int k = 0; k < 2; k++) {
    oom_ctx c = {ops[k], NULL};
    char why[512] = "";
    long runs = fail_alloc_sweep(oom_run, oom_cleanup, &c, 2000, false, why, sizeof why);
    cr_assert_gt(runs, 0, "%s: %s", ops[k], why);
  }
}
