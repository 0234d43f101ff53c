#include "nn_test.h"

typedef struct bn_cfg {
  int64_t dims[5];
  size_t nd;
  bool is_test, global, trainable;
  float momentum, eps;
  double mt; /* > 0: fed as MomentumTensor */
  bool nhwc;  /* data_layout NHWC: dims are still given as [N, C, ...] and X is fed channels last */
} bn_cfg;

static void set_bn_attrs(op_harness *h, const void *arg) {
  const bn_cfg *c = arg;
  OK(op_harness_attr_float(h, "momentum", c->momentum));
  OK(op_harness_attr_float(h, "epsilon", c->eps));
  if (c->is_test) OK(op_harness_attr_bool(h, "is_test", true));
  if (c->global) OK(op_harness_attr_bool(h, "use_global_stats", true));
  if (c->trainable) OK(op_harness_attr_bool(h, "trainable_statistics", true));
  if (c->nhwc) OK(op_harness_attr_string(h, "data_layout", "NHWC"));
}

/* The [N, C, ...] dims of c as the op sees them: channels moved last with NHWC. */
static size_t bn_op_dims(const bn_cfg *c, int64_t *d) {
  memcpy(d, c->dims, c->nd * sizeof *d);
  if (c->nhwc) {
    for (size_t i = 1; i + 1 < c->nd; i++) d[i] = c->dims[i + 1];
    d[c->nd - 1] = c->dims[1];
  }
  return c->nd;
}

/* x [N, C, S] moved to [N, S, C] (back with `back`), in place through a copy. */
static void bn_to_nhwc(double *x, int64_t n, int64_t ch, int64_t s, bool back) {
  double *t = malloc((size_t)(n * ch * s) * sizeof *t);
  memcpy(t, x, (size_t)(n * ch * s) * sizeof *t);
  for (int64_t i = 0; i < n; i++)
    for (int64_t k = 0; k < ch; k++)
      for (int64_t j = 0; j < s; j++) {
        int64_t nchw = (i * ch + k) * s + j, nhwc = (i * s + j) * ch + k;
        if (back)
          x[nchw] = t[nhwc];
        else
          x[nhwc] = t[nchw];
      }
  free(t);
}

static void check_bn(const bn_cfg *c, rill_dtype dt) {
  int64_t n = c->dims[0], ch = c->dims[1], s = 1;
  for (size_t i = 2; i < c->nd; i++) s *= c->dims[i];
  int64_t nx = n * ch * s;
  double *x = malloc((size_t)nx * sizeof *x), *y = malloc((size_t)nx * sizeof *y);
  double sc[16], b[16], m[16], v[16], mo[16], vo[16], sm[16], sv[16];
  fill_rand(x, nx, 21);
  for (int64_t i = 0; i < nx; i++) x[i] = x[i] * 3 + 0.5;
  fill_rand(sc, ch, 22);
  fill_rand(b, ch, 23);
  fill_rand(m, ch, 24);
  fill_rand(v, ch, 25);
  for (int64_t i = 0; i < ch; i++) v[i] = fabs(v[i]) + 0.5;
  double mom = c->mt > 0 ? c->mt : c->momentum;
  bool global = (c->is_test && !c->trainable) || c->global;
  for (int64_t k = 0; k < ch; k++) {
    double mu = 0, var = 0;
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < s; j++) mu += x[(i * ch + k) * s + j];
    mu /= (double)(n * s);
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < s; j++) var += pow(x[(i * ch + k) * s + j] - mu, 2);
    var /= (double)(n * s);
    if (global) {
      mu = m[k];
      var = v[k];
      mo[k] = m[k];
      vo[k] = v[k];
    } else {
      mo[k] = m[k] * mom + mu * (1 - mom);
      vo[k] = v[k] * mom + var * (1 - mom);
    }
    sm[k] = mu;
    sv[k] = 1 / sqrt(var + c->eps);
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < s; j++) {
        int64_t p = (i * ch + k) * s + j;
        y[p] = (x[p] - mu) / sqrt(var + c->eps) * sc[k] + b[k];
      }
  }
  if (c->nhwc) {
    bn_to_nhwc(x, n, ch, s, false);
    bn_to_nhwc(y, n, ch, s, false);
  }
  int64_t od[5];
  size_t ond = bn_op_dims(c, od);
  bool f64 = dt == RILL_DTYPE_FP64;
  float *xf = to_f32(x, nx), *scf = to_f32(sc, ch), *bf = to_f32(b, ch), *mf = to_f32(m, ch),
        *vf = to_f32(v, ch);
  op_harness *h = harness("batch_norm");
  bind_input(h, "X", "x", dt, od, ond, f64 ? (void *)x : (void *)xf);
  bind_input(h, "Scale", "scale", dt, DIMS(ch), f64 ? (void *)sc : (void *)scf);
  bind_input(h, "Bias", "bias", dt, DIMS(ch), f64 ? (void *)b : (void *)bf);
  bind_input(h, "Mean", "mean", dt, DIMS(ch), f64 ? (void *)m : (void *)mf);
  bind_input(h, "Variance", "var", dt, DIMS(ch), f64 ? (void *)v : (void *)vf);
  if (c->mt > 0) {
    float mt = (float)c->mt;
    bind_input(h, "MomentumTensor", "mt", RILL_DTYPE_FP32, DIMS(1), &mt);
  }
  /* Paddle's layout: Y in place of X, MeanOut / VarianceOut in place of Mean / Variance */
  OK(op_harness_output(h, "Y", "x"));
  OK(op_harness_output(h, "MeanOut", "mean"));
  OK(op_harness_output(h, "VarianceOut", "var"));
  OK(op_harness_output(h, "SavedMean", "saved_mean"));
  OK(op_harness_output(h, "SavedVariance", "saved_inv_std"));
  set_bn_attrs(h, c);
  OK(op_harness_run(h));
  const char *names[5] = {"x", "mean", "var", "saved_mean", "saved_inv_std"};
  const double *want[5] = {y, mo, vo, sm, sv};
  int64_t cnt[5] = {nx, ch, ch, ch, ch};
  for (int i = 0; i < 5; i++) {
    rill_tensor *t = op_harness_tensor(h, names[i]);
    cr_assert_eq(rill_tensor_numel(t), cnt[i]);
    if (f64) {
      expect_close_f64(rill_tensor_ptr(t), want[i], cnt[i], 1e-10);
    } else {
      float *wf = to_f32(want[i], cnt[i]);
      expect_close_f32(rill_tensor_ptr(t), wf, cnt[i], 2e-5f);
      free(wf);
    }
  }
  expect_dims(op_harness_tensor(h, "x"), od, ond);
  op_harness_destroy(h);
  free(x);
  free(y);
  free(xf);
  free(scf);
  free(bf);
  free(mf);
  free(vf);
}

#define BCFG(...) (&(bn_cfg){__VA_ARGS__})

Test(batch_norm, training_statistics_and_in_place_moving_averages) {
  for (int dt = 0; dt < 2; dt++) {
    rill_dtype t = dt ? RILL_DTYPE_FP64 : RILL_DTYPE_FP32;
    check_bn(BCFG({2, 3, 4, 5}, 4, false, false, false, 0.9f, 1e-5f, 0, false), t);
    check_bn(BCFG({6, 4}, 2, false, false, false, 0.8f, 1e-3f, 0, false), t);
    check_bn(BCFG({3, 2, 7}, 3, false, false, false, 0.5f, 1e-5f, 0, false), t);
    check_bn(BCFG({2, 3, 2, 2, 3}, 5, false, false, false, 0.9f, 1e-5f, 0.25, false), t);
  }
}

Test(batch_norm, nhwc_training_and_test_mode) {
  for (int dt = 0; dt < 2; dt++) {
    rill_dtype t = dt ? RILL_DTYPE_FP64 : RILL_DTYPE_FP32;
    /* 11 channels: an 8-lane chunk and a tail per row */
    check_bn(BCFG({2, 11, 4, 5}, 4, false, false, false, 0.9f, 1e-5f, 0, true), t);
    check_bn(BCFG({3, 2, 7}, 3, false, false, false, 0.5f, 1e-5f, 0, true), t);
    check_bn(BCFG({2, 3, 2, 2, 3}, 5, false, false, false, 0.9f, 1e-5f, 0.25, true), t);
    check_bn(BCFG({2, 3, 4, 5}, 4, true, false, false, 0.9f, 1e-5f, 0, true), t);
    check_bn(BCFG({5, 3, 2}, 3, false, true, false, 0.9f, 1e-5f, 0, true), t);
  }
}

/* Runs batch_norm and batch_norm_grad on x [2, 9, 3, 5] in one layout; writes Y, the
 * saved statistics, the moving ones and the three gradients into out (laid out as
 * NCHW whatever the layout run). */
static void bn_run_layout(bool nhwc, bool is_test, float *out) {
  const int64_t n = 2, ch = 9, s = 15, nx = n * ch * s;
  double x[270], dy[270], sc[9], b[9], m[9], v[9];
  fill_rand(x, nx, 41);
  fill_rand(dy, nx, 42);
  fill_rand(sc, ch, 43);
  fill_rand(b, ch, 44);
  fill_rand(m, ch, 45);
  fill_rand(v, ch, 46);
  for (int64_t i = 0; i < ch; i++) v[i] = fabs(v[i]) + 0.5;
  if (nhwc) {
    bn_to_nhwc(x, n, ch, s, false);
    bn_to_nhwc(dy, n, ch, s, false);
  }
  bn_cfg c = {{n, ch, 3, 5}, 4, is_test, false, false, 0.9f, 1e-5f, 0, nhwc};
  int64_t od[5];
  size_t ond = bn_op_dims(&c, od);
  float *xf = to_f32(x, nx), *dyf = to_f32(dy, nx), *scf = to_f32(sc, ch), *bf = to_f32(b, ch),
        *mf = to_f32(m, ch), *vf = to_f32(v, ch);
  op_harness *h = harness("batch_norm");
  bind_input(h, "X", "x", RILL_DTYPE_FP32, od, ond, xf);
  bind_input(h, "Scale", "scale", RILL_DTYPE_FP32, DIMS(ch), scf);
  bind_input(h, "Bias", "bias", RILL_DTYPE_FP32, DIMS(ch), bf);
  bind_input(h, "Mean", "mean", RILL_DTYPE_FP32, DIMS(ch), mf);
  bind_input(h, "Variance", "var", RILL_DTYPE_FP32, DIMS(ch), vf);
  OK(op_harness_output(h, "Y", "y"));
  OK(op_harness_output(h, "MeanOut", "mean"));
  OK(op_harness_output(h, "VarianceOut", "var"));
  OK(op_harness_output(h, "SavedMean", "sm"));
  OK(op_harness_output(h, "SavedVariance", "sv"));
  set_bn_attrs(h, &c);
  OK(op_harness_run(h));
  op_harness *g = harness("batch_norm_grad");
  const char *fwd[] = {"x", "scale", "bias", "mean", "var", "sm", "sv", "y"};
  const char *slots[] = {"X", "Scale", "Bias", "Mean", "Variance", "SavedMean", "SavedVariance", "Y"};
  for (int i = 0; i < 8; i++) {
    rill_tensor *t = op_harness_tensor(h, fwd[i]);
    bind_input(g, slots[i], fwd[i], RILL_DTYPE_FP32, t->dims.d, t->dims.n, rill_tensor_ptr(t));
  }
  bind_input(g, "Y@GRAD", "dy", RILL_DTYPE_FP32, od, ond, dyf);
  OK(op_harness_output(g, "X@GRAD", "dx"));
  OK(op_harness_output(g, "Scale@GRAD", "dscale"));
  OK(op_harness_output(g, "Bias@GRAD", "dbias"));
  set_bn_attrs(g, &c);
  OK(op_harness_run(g));
  const char *big[] = {"y", "dx"};
  for (int i = 0; i < 2; i++) {
    rill_tensor *t = op_harness_tensor(i ? g : h, big[i]);
    double tmp[270];
    for (int64_t k = 0; k < nx; k++) tmp[k] = ((float *)rill_tensor_ptr(t))[k];
    if (nhwc) bn_to_nhwc(tmp, n, ch, s, true);
    for (int64_t k = 0; k < nx; k++) out[i * nx + k] = (float)tmp[k];
  }
  const char *small[] = {"mean", "var", "sm", "sv", "dscale", "dbias"};
  for (int i = 0; i < 6; i++)
    memcpy(out + 2 * nx + i * ch, rill_tensor_ptr(op_harness_tensor(i < 4 ? h : g, small[i])),
           (size_t)ch * sizeof(float));
  op_harness_destroy(g);
  op_harness_destroy(h);
  free(xf);
  free(dyf);
  free(scf);
  free(bf);
  free(mf);
  free(vf);
}

Test(batch_norm, nhwc_gives_nchw_bits_forward_and_backward) {
  for (int is_test = 0; is_test < 2; is_test++) {
    float a[2 * 270 + 6 * 9], b[2 * 270 + 6 * 9];
    bn_run_layout(false, is_test, a);
    bn_run_layout(true, is_test, b);
    for (size_t i = 0; i < sizeof a / sizeof a[0]; i++)
      cr_assert(memcmp(&a[i], &b[i], sizeof a[i]) == 0, "is_test %d: element %zu: NCHW %.9g, NHWC %.9g",
                is_test, i, a[i], b[i]);
  }
}

Test(batch_norm, test_mode_and_global_stats_use_moving_statistics) {
  for (int dt = 0; dt < 2; dt++) {
    rill_dtype t = dt ? RILL_DTYPE_FP64 : RILL_DTYPE_FP32;
    check_bn(BCFG({2, 3, 4, 5}, 4, true, false, false, 0.9f, 1e-5f, 0, false), t);
    check_bn(BCFG({5, 3}, 2, false, true, false, 0.9f, 1e-5f, 0, false), t);
    /* trainable_statistics: is_test still normalises with the batch */
    check_bn(BCFG({2, 3, 3, 3}, 4, true, false, true, 0.9f, 1e-5f, 0, false), t);
  }
}

static void bn_grad(const bn_cfg *c) {
  int64_t ch = c->dims[1], nx = 1, od[5];
  size_t ond = bn_op_dims(c, od);
  for (size_t i = 0; i < c->nd; i++) nx *= c->dims[i];
  double *x = malloc((size_t)nx * sizeof *x), sc[8], b[8], m[8], v[8];
  fill_rand(x, nx, 31);
  fill_rand(sc, ch, 32);
  fill_rand(b, ch, 33);
  fill_rand(m, ch, 34);
  fill_rand(v, ch, 35);
  for (int64_t i = 0; i < ch; i++) v[i] = fabs(v[i]) + 0.5;
  fd_case fc = {.op = "batch_norm", .nin = 5,
                .out_slots = {"Y", "MeanOut", "VarianceOut", "SavedMean", "SavedVariance"},
                .out_names = {"y", "mean_out", "var_out", "saved_mean", "saved_var"}, .nout = 5,
                .attrs = set_bn_attrs, .arg = c, .tol = 1e-6};
  fc.in[0] = (fd_input){"X", "x", {0}, ond, x, true};
  memcpy(fc.in[0].dims, od, ond * sizeof(int64_t));
  fc.in[1] = (fd_input){"Scale", "scale", {ch}, 1, sc, true};
  fc.in[2] = (fd_input){"Bias", "bias", {ch}, 1, b, true};
  fc.in[3] = (fd_input){"Mean", "mean", {ch}, 1, m, false};
  fc.in[4] = (fd_input){"Variance", "var", {ch}, 1, v, false};
  fd_check(&fc);
  free(x);
}

Test(batch_norm, gradients_match_finite_differences) {
  bn_grad(BCFG({2, 3, 2, 3}, 4, false, false, false, 0.9f, 1e-5f, 0, false));
  bn_grad(BCFG({5, 2}, 2, false, false, false, 0.9f, 1e-3f, 0, false));
  bn_grad(BCFG({2, 2, 3}, 3, false, true, false, 0.9f, 1e-5f, 0, false));
  bn_grad(BCFG({2, 3, 2, 2}, 4, true, false, false, 0.9f, 1e-5f, 0, false));
  bn_grad(BCFG({2, 3, 2, 3}, 4, false, false, false, 0.9f, 1e-5f, 0, true));
  bn_grad(BCFG({2, 2, 3}, 3, false, true, false, 0.9f, 1e-5f, 0, true));
}

Test(batch_norm, bad_shapes_and_layout_fail_at_inference) {
  op_harness *h = harness("batch_norm");
  bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(2, 3, 4, 4), NULL);
  bind_input(h, "Scale", "bn.scale", RILL_DTYPE_FP32, DIMS(4), NULL);
  bind_input(h, "Bias", "bn.bias", RILL_DTYPE_FP32, DIMS(3), NULL);
  bind_input(h, "Mean", "bn.mean", RILL_DTYPE_FP32, DIMS(3), NULL);
  bind_input(h, "Variance", "bn.var", RILL_DTYPE_FP32, DIMS(3), NULL);
  const char *outs[] = {"Y", "MeanOut", "VarianceOut", "SavedMean", "SavedVariance"};
  for (int i = 0; i < 5; i++) OK(op_harness_output(h, outs[i], outs[i]));
  EXPECT_ERROR(op_harness_infer(h), "batch_norm", "Scale (bn.scale)", "[3]");
  /* NHWC takes the channels from the last dim, 4: Scale fits and Bias does not */
  OK(op_harness_attr_string(h, "data_layout", "NHWC"));
  EXPECT_ERROR(op_harness_infer(h), "batch_norm", "Bias (bn.bias)", "[4]", "(the channels of X (x))");
  OK(op_harness_attr_string(h, "data_layout", "NCWH"));
  EXPECT_ERROR(op_harness_infer(h), "batch_norm", "data_layout", "'NCWH'", "X (x)");
  op_harness_destroy(h);

  h = harness("batch_norm");
  bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(6), NULL);
  bind_input(h, "Scale", "s", RILL_DTYPE_FP32, DIMS(6), NULL);
  bind_input(h, "Bias", "b", RILL_DTYPE_FP32, DIMS(6), NULL);
  bind_input(h, "Mean", "m", RILL_DTYPE_FP32, DIMS(6), NULL);
  bind_input(h, "Variance", "v", RILL_DTYPE_FP32, DIMS(6), NULL);
  for (int i = 0; i < 5; i++) OK(op_harness_output(h, outs[i], outs[i]));
  EXPECT_ERROR(op_harness_infer(h), "batch_norm", "X (x)", "rank 1");
  op_harness_destroy(h);
}

Test(batch_norm, pruned_inference_program_with_only_y) {
  double x[12], one[3] = {1, 1, 1}, zero[3] = {0, 0, 0}, m[3] = {1, 2, 3}, v[3] = {4, 9, 16};
  fill_rand(x, 12, 71);
  op_harness *h = harness("batch_norm");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(2, 3, 2), x);
  bind_input(h, "Scale", "s", RILL_DTYPE_FP64, DIMS(3), one);
  bind_input(h, "Bias", "b", RILL_DTYPE_FP64, DIMS(3), zero);
  bind_input(h, "Mean", "m", RILL_DTYPE_FP64, DIMS(3), m);
  bind_input(h, "Variance", "v", RILL_DTYPE_FP64, DIMS(3), v);
  OK(op_harness_output(h, "Y", "y"));
  OK(op_harness_attr_bool(h, "is_test", true));
  OK(op_harness_attr_float(h, "epsilon", 0));
  OK(op_harness_run(h));
  const double *y = rill_tensor_ptr(op_harness_tensor(h, "y"));
  for (int i = 0; i < 12; i++) {
    int c = (i / 2) % 3;
    cr_assert(fabs(y[i] - (x[i] - m[c]) / sqrt(v[c])) < 1e-12);
  }
  op_harness_destroy(h);
}
