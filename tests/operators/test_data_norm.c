/* data_norm against a reference loop (plain, with slots, with scale and shift), its
 * gradients: X's, scale_w's and bias's against finite differences, the batch statistics
 * written as the summary parameters' gradients; and its errors. */
#include "nn_test.h"

#include "support/grad_check.h"

enum { N = 4, C = 6 };

typedef struct dn_cfg {
  int slot_dim;
  bool ss;
} dn_cfg;

/* Summary statistics and (with ss) scale and bias. */
static void stats(double *bs, double *bsum, double *bsq, double *w, double *b) {
  for (int j = 0; j < C; j++) {
    bs[j] = 50 + 10 * j;
    bsum[j] = 3.0 * (j - 2);
    bsq[j] = 40 + 7 * j;
    w[j] = 0.5 + 0.2 * j;
    b[j] = 0.1 * j - 0.2;
  }
}

static op_harness *dn_harness(const double *x, dn_cfg cfg) {
  double bs[C], bsum[C], bsq[C], w[C], b[C];
  stats(bs, bsum, bsq, w, b);
  op_harness *h = harness("data_norm");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(N, C), x);
  bind_input(h, "BatchSize", "dn.batch_size", RILL_DTYPE_FP64, DIMS(C), bs);
  bind_input(h, "BatchSum", "dn.batch_sum", RILL_DTYPE_FP64, DIMS(C), bsum);
  bind_input(h, "BatchSquareSum", "dn.batch_square_sum", RILL_DTYPE_FP64, DIMS(C), bsq);
  if (cfg.ss) {
    bind_input(h, "scale_w", "dn.scale_w", RILL_DTYPE_FP64, DIMS(C), w);
    bind_input(h, "bias", "dn.bias", RILL_DTYPE_FP64, DIMS(C), b);
    OK(op_harness_attr_bool(h, "enable_scale_and_shift", true));
  }
  if (cfg.slot_dim > 0) OK(op_harness_attr_int(h, "slot_dim", cfg.slot_dim));
  OK(op_harness_output(h, "Y", "y"));
  OK(op_harness_output(h, "Means", "means"));
  OK(op_harness_output(h, "Scales", "scales"));
  return h;
}

/* x with row 1's second slot (of 3) and row 3's first not shown. */
static void input(double *x, uint64_t seed) {
  fill_rand(x, N * C, seed);
  for (int i = 0; i < N * C; i++) x[i] += x[i] < 0 ? -0.2 : 0.2; /* shows away from 0 */
  x[1 * C + 2] = 0;
  x[3 * C + 0] = 0;
}

static void check_forward(dn_cfg cfg) {
  double x[N * C], y[N * C], m[C], s[C], bs[C], bsum[C], bsq[C], w[C], b[C];
  input(x, 21);
  stats(bs, bsum, bsq, w, b);
  int width = cfg.slot_dim > 0 ? cfg.slot_dim : C;
  for (int j = 0; j < C; j++) {
    m[j] = bsum[j] / bs[j];
    s[j] = sqrt(bs[j] / bsq[j]);
  }
  for (int i = 0; i < N; i++)
    for (int j = 0; j < C; j++) {
      bool shown = cfg.slot_dim <= 0 || x[i * C + j / width * width] != 0;
      double v = (x[i * C + j] - m[j]) * s[j];
      y[i * C + j] = !shown ? 0 : cfg.ss ? v * w[j] + b[j] : v;
    }
  op_harness *h = dn_harness(x, cfg);
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "y"), DIMS(N, C));
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "y")), y, N * C, 1e-12);
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "means")), m, C, 1e-12);
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "scales")), s, C, 1e-12);
  op_harness_destroy(h);
}

Test(data_norm, matches_reference) {
  check_forward((dn_cfg){-1, false});
  check_forward((dn_cfg){2, false});
  check_forward((dn_cfg){3, true});
  check_forward((dn_cfg){-1, true});
}

Test(data_norm, gradients_match_finite_differences) {
  double x[N * C];
  input(x, 23);
  x[1 * C + 2] = 0.7; /* every slot shown: finite differences cannot cross a show of 0 */
  x[3 * C + 0] = -0.4;
  grad_check_opts o = {.rtol = 1e-6, .atol = 1e-6};
  op_harness *h = dn_harness(x, (dn_cfg){-1, false});
  OK(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Y"), &o));
  op_harness_destroy(h);
  h = dn_harness(x, (dn_cfg){-1, true});
  OK(grad_check(h, GC_SLOTS("X", "scale_w", "bias"), GC_SLOTS("Y"), &o));
  op_harness_destroy(h);
  h = dn_harness(x, (dn_cfg){3, true});
  OK(grad_check(h, GC_SLOTS("X", "scale_w", "bias"), GC_SLOTS("Y"), &o));
  op_harness_destroy(h);
}

/* The statistics' gradients: the batch's count, sum and centred square sum (+ N eps);
 * with slots, per-slot averages over the rows that show it and a count of 1. */
static void check_stats(int slot_dim) {
  double x[N * C], dy[N * C], bs[C], bsum[C], bsq[C], w[C], b[C], m[C], s[C];
  input(x, 25);
  fill_rand(dy, N * C, 26);
  stats(bs, bsum, bsq, w, b);
  for (int j = 0; j < C; j++) {
    m[j] = bsum[j] / bs[j];
    s[j] = sqrt(bs[j] / bsq[j]);
  }
  op_harness *h = harness("data_norm_grad");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(N, C), x);
  bind_input(h, "Means", "means", RILL_DTYPE_FP64, DIMS(C), m);
  bind_input(h, "Scales", "scales", RILL_DTYPE_FP64, DIMS(C), s);
  bind_input(h, "Y@GRAD", "y@GRAD", RILL_DTYPE_FP64, DIMS(N, C), dy);
  OK(op_harness_output(h, "X@GRAD", "x@GRAD"));
  OK(op_harness_output(h, "BatchSize@GRAD", "bs@GRAD"));
  OK(op_harness_output(h, "BatchSum@GRAD", "bsum@GRAD"));
  OK(op_harness_output(h, "BatchSquareSum@GRAD", "bsq@GRAD"));
  OK(op_harness_attr_float(h, "epsilon", 1e-4f));
  if (slot_dim > 0) OK(op_harness_attr_int(h, "slot_dim", slot_dim));
  OK(op_harness_run(h));
  double cnt[C] = {0}, sum[C] = {0}, sq[C] = {0}, dx[N * C];
  int width = slot_dim > 0 ? slot_dim : C;
  for (int i = 0; i < N; i++)
    for (int j = 0; j < C; j++) {
      dx[i * C + j] = dy[i * C + j] * s[j]; /* every value, shown or not */
      if (slot_dim > 0 && x[i * C + j / width * width] == 0) continue;
      cnt[j] += 1;
      sum[j] += x[i * C + j];
      sq[j] += (x[i * C + j] - m[j]) * (x[i * C + j] - m[j]);
    }
  double eps = (double)1e-4f;
  for (int j = 0; j < C; j++) {
    if (slot_dim > 0) {
      sum[j] /= cnt[j];
      sq[j] = sq[j] / cnt[j] + cnt[j] * eps;
      cnt[j] = 1;
    } else {
      sq[j] += N * eps;
    }
  }
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "x@GRAD")), dx, N * C, 1e-12);
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "bs@GRAD")), cnt, C, 1e-12);
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "bsum@GRAD")), sum, C, 1e-12);
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "bsq@GRAD")), sq, C, 1e-12);
  op_harness_destroy(h);
}

Test(data_norm, statistics_gradients_are_the_batch_statistics) {
  check_stats(-1);
  check_stats(2);
}

/* A data_norm of float32 X (xd, nd dims, no data) with statistics of c values. */
static op_harness *declared(const int64_t *xd, size_t nd, int64_t c) {
  op_harness *h = harness("data_norm");
  bind_input(h, "X", "feat", RILL_DTYPE_FP32, xd, nd, NULL);
  bind_input(h, "BatchSize", "dn.batch_size", RILL_DTYPE_FP32, &c, 1, NULL);
  bind_input(h, "BatchSum", "dn.batch_sum", RILL_DTYPE_FP32, (int64_t[]){C}, 1, NULL);
  bind_input(h, "BatchSquareSum", "dn.batch_square_sum", RILL_DTYPE_FP32, (int64_t[]){C}, 1,
             NULL);
  OK(op_harness_output(h, "Y", "y"));
  OK(op_harness_output(h, "Means", "m"));
  OK(op_harness_output(h, "Scales", "s"));
  return h;
}

Test(data_norm, bad_input_fails_naming_op_and_variable) {
  op_harness *h = declared(DIMS(N, C), C + 1);
  EXPECT_ERROR(op_harness_infer(h), "data_norm", "BatchSize (dn.batch_size)", "feat");
  op_harness_destroy(h);

  h = declared(DIMS(N, 2, 3), C);
  EXPECT_ERROR(op_harness_infer(h), "data_norm", "X (feat)", "[N, C]");
  op_harness_destroy(h);

  h = declared(DIMS(N, C), C);
  OK(op_harness_attr_int(h, "slot_dim", 4));
  EXPECT_ERROR(op_harness_infer(h), "data_norm", "X (feat)", "slot_dim 4");
  op_harness_destroy(h);

  h = declared(DIMS(N, C), C);
  OK(op_harness_attr_bool(h, "enable_scale_and_shift", true));
  EXPECT_ERROR(op_harness_infer(h), "data_norm", "scale_w");
  op_harness_destroy(h);
}
