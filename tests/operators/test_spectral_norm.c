/* spectral_norm: sigma of a matrix with known singular values, Out and Paddle 1.8.5's
 * gradient rule for a rank-3 Weight on each dim against a reference that transposes
 * Weight explicitly, and the errors naming op and variable. The gradient rule is not the
 * derivative of Out (Paddle's own), so no finite-difference check applies. */
#include "op_test.h"

static void sn_inputs(op_harness *h, rill_dtype dt, const int64_t *wd, size_t nw, const void *w,
                      const void *u, int64_t hn, const void *v, int64_t wn) {
  bind_input(h, "Weight", "weight", dt, wd, nw, w);
  bind_input(h, "U", "u", dt, DIMS(hn), u);
  bind_input(h, "V", "v", dt, DIMS(wn), v);
}

Test(spectral_norm, sigma_is_the_top_singular_value) {
  /* W = Q diag(4, 2, 1) with Q a permutation-and-sign matrix: singular values 4, 2, 1 */
  const double w[9] = {0, -2, 0, 4, 0, 0, 0, 0, 1};
  const double u[3] = {0.3, 0.5, 0.2}, v[3] = {0.1, 0.7, -0.4};
  op_harness *h = harness("spectral_norm");
  sn_inputs(h, RILL_DTYPE_FP64, DIMS(3, 3), w, u, 3, v, 3);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_int(h, "power_iters", 60));
  OK(op_harness_run(h));
  const double *o = rill_tensor_ptr(op_harness_tensor(h, "out"));
  for (int i = 0; i < 9; i++) cr_assert_float_eq(o[i], w[i] / 4, 1e-9, "[%d]", i);
  op_harness_destroy(h);
}

/* The reference for Weight [A, B, C] on `dim`: W rows are the dim's indices. */
static void reference(const double *wt, const int64_t d[3], int dim, const double *u0,
                      const double *v0, int iters, const double *g, double *out, double *dw) {
  int64_t hn = d[dim], wn = d[0] * d[1] * d[2] / hn;
  double W[64][64], u[64], v[64];
  for (int64_t a = 0; a < d[0]; a++)
    for (int64_t b = 0; b < d[1]; b++)
      for (int64_t c = 0; c < d[2]; c++) {
        int64_t idx[3] = {a, b, c}, r = idx[dim], col = 0;
        for (int k = 0; k < 3; k++)
          if (k != dim) col = col * d[k] + idx[k];
        W[r][col] = wt[(a * d[1] + b) * d[2] + c];
      }
  memcpy(u, u0, sizeof(double) * (size_t)hn);
  memcpy(v, v0, sizeof(double) * (size_t)wn);
  for (int it = 0; it < iters; it++) {
    double n = 0;
    for (int64_t c = 0; c < wn; c++) {
      v[c] = 0;
      for (int64_t r = 0; r < hn; r++) v[c] += W[r][c] * u[r];
      n += v[c] * v[c];
    }
    for (int64_t c = 0; c < wn; c++) v[c] /= sqrt(n) + 1e-12;
    n = 0;
    for (int64_t r = 0; r < hn; r++) {
      u[r] = 0;
      for (int64_t c = 0; c < wn; c++) u[r] += W[r][c] * v[c];
      n += u[r] * u[r];
    }
    for (int64_t r = 0; r < hn; r++) u[r] /= sqrt(n) + 1e-12;
  }
  double sigma = 0, total = 0;
  for (int64_t r = 0; r < hn; r++)
    for (int64_t c = 0; c < wn; c++) sigma += u[r] * W[r][c] * v[c];
  int64_t n = d[0] * d[1] * d[2];
  for (int64_t k = 0; k < n; k++) total += (out[k] = wt[k] / sigma);
  for (int64_t a = 0; a < d[0]; a++)
    for (int64_t b = 0; b < d[1]; b++)
      for (int64_t c = 0; c < d[2]; c++) {
        int64_t idx[3] = {a, b, c}, r = idx[dim], col = 0, k = (a * d[1] + b) * d[2] + c;
        for (int j = 0; j < 3; j++)
          if (j != dim) col = col * d[j] + idx[j];
        dw[k] = g[k] * (1 - u[r] * v[col] * total) / sigma;
      }
}

Test(spectral_norm, out_and_gradient_rule_on_every_dim) {
  const int64_t d[3] = {3, 4, 2};
  double w[24], g[24], u[8], v[12], want[24], want_dw[24];
  for (int i = 0; i < 24; i++) w[i] = sin(i * 0.7) + 0.3, g[i] = cos(i * 0.4);
  for (int dim = 0; dim < 2; dim++) {
    int64_t hn = d[dim], wn = 24 / hn;
    for (int i = 0; i < hn; i++) u[i] = 0.2 + 0.1 * i;
    for (int i = 0; i < wn; i++) v[i] = 0.5 - 0.07 * i;
    reference(w, d, dim, u, v, 2, g, want, want_dw);
    op_harness *h = harness("spectral_norm");
    sn_inputs(h, RILL_DTYPE_FP64, DIMS(3, 4, 2), w, u, hn, v, wn);
    OK(op_harness_output(h, "Out", "out"));
    OK(op_harness_attr_int(h, "dim", dim));
    OK(op_harness_attr_int(h, "power_iters", 2));
    OK(op_harness_run(h));
    expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "out")), want, 24, 1e-12);
    op_harness_destroy(h);
    h = harness("spectral_norm_grad");
    sn_inputs(h, RILL_DTYPE_FP64, DIMS(3, 4, 2), w, u, hn, v, wn);
    bind_input(h, "Out@GRAD", "out@GRAD", RILL_DTYPE_FP64, DIMS(3, 4, 2), g);
    OK(op_harness_output(h, "Weight@GRAD", "weight@GRAD"));
    OK(op_harness_attr_int(h, "dim", dim));
    OK(op_harness_attr_int(h, "power_iters", 2));
    OK(op_harness_run(h));
    expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "weight@GRAD")), want_dw, 24, 1e-12);
    op_harness_destroy(h);
  }
}

Test(spectral_norm, errors_name_op_and_variable) {
  float w[12] = {0}, u[4] = {0}, v[8] = {0};
  op_harness *h = harness("spectral_norm");
  sn_inputs(h, RILL_DTYPE_FP32, DIMS(3, 4), w, u, 4, v, 4);
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_run(h), "spectral_norm", "u", "4", "3");
  op_harness_destroy(h);
  h = harness("spectral_norm");
  sn_inputs(h, RILL_DTYPE_FP32, DIMS(12), w, u, 4, v, 3);
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_run(h), "spectral_norm", "weight", "rank 2 to 5");
  op_harness_destroy(h);
  h = harness("spectral_norm");
  sn_inputs(h, RILL_DTYPE_FP32, DIMS(2, 3, 2), w, u, 2, v, 6);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_int(h, "dim", 2));
  EXPECT_ERROR(op_harness_run(h), "spectral_norm", "weight", "dim", "0 or 1");
  op_harness_destroy(h);
}
