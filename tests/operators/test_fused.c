/* fc and conv2d_fusion (the fused inference ops) against naive references: every
 * activation, Bias and ResidualData, the GEMV and GEMM paths of fc, and the errors. */
#include "op_test.h"

static float act(float v, const char *a) {
  if (!a[0] || strcmp(a, "identity") == 0) return v;
  if (strcmp(a, "relu") == 0) return v > 0 ? v : 0;
  if (strcmp(a, "relu6") == 0) return v < 0 ? 0 : (v > 6 ? 6 : v);
  if (strcmp(a, "sigmoid") == 0) return 1.0f / (1.0f + expf(-v));
  return tanhf(v);
}

static void fill(float *v, int64_t n, int seed, float scale) {
  for (int64_t i = 0; i < n; i++) v[i] = (float)(((i * 7 + seed * 13) % 23) - 11) * scale;
}

static void run_fc(int64_t m, int64_t k, int64_t n, const char *activation, bool bias) {
  float *x = malloc((size_t)(m * k) * sizeof *x), *w = malloc((size_t)(k * n) * sizeof *w);
  float *b = malloc((size_t)n * sizeof *b), *want = malloc((size_t)(m * n) * sizeof *want);
  fill(x, m * k, 1, 0.1f);
  fill(w, k * n, 2, 0.05f);
  fill(b, n, 3, 0.3f);
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double s = bias ? b[j] : 0;
      for (int64_t l = 0; l < k; l++) s += (double)x[i * k + l] * w[l * n + j];
      want[i * n + j] = act((float)s, activation);
    }
  op_harness *h = harness("fc");
  /* Input as [m, k / 2, 2] flattened at in_num_col_dims 1 */
  bind_input(h, "Input", "x", RILL_DTYPE_FP32, DIMS(m, k / 2, 2), x);
  bind_input(h, "W", "w", RILL_DTYPE_FP32, DIMS(k, n), w);
  if (bias) bind_input(h, "Bias", "b", RILL_DTYPE_FP32, DIMS(n), b);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_string(h, "activation_type", activation));
  OK(op_harness_run(h));
  rill_tensor *out = op_harness_tensor(h, "out");
  expect_dims(out, DIMS(m, n));
  expect_close_f32(rill_tensor_ptr(out), want, m * n, 1e-5f);
  op_harness_destroy(h);
  free(x);
  free(w);
  free(b);
  free(want);
}

Test(fused, fc_matches_reference) {
  run_fc(1, 8, 5, "", true);      /* one row, narrow: GEMM */
  run_fc(1, 64, 300, "relu", true); /* one row, wide: GEMV */
  run_fc(7, 16, 9, "relu", true);
  run_fc(3, 4, 200, "", false);
}

Test(fused, fc_rejects_what_it_cannot_do) {
  op_harness *h = harness("fc");
  bind_input(h, "Input", "x", RILL_DTYPE_FP32, DIMS(2, 3), (float[6]){0});
  bind_input(h, "W", "w", RILL_DTYPE_FP32, DIMS(4, 2), (float[8]){0});
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_run(h), "fc", "Input (x)", "3 columns", "W (w)", "4 rows");
  op_harness_destroy(h);
  h = harness("fc");
  bind_input(h, "Input", "x", RILL_DTYPE_FP32, DIMS(2, 3), (float[6]){0});
  bind_input(h, "W", "w", RILL_DTYPE_FP32, DIMS(3, 2), (float[6]){0});
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_string(h, "activation_type", "tanh"));
  EXPECT_ERROR(op_harness_run(h), "activation_type 'tanh' is not supported");
  op_harness_destroy(h);
}

static void run_conv(int groups, int64_t c, int64_t m, const char *activation, bool residual) {
  const int64_t n = 2, hh = 5, ww = 6, kh = 3, kw = 3, oh = 5, ow = 6; /* padding 1 */
  int64_t cg = c / groups, mg = m / groups;
  int64_t nx = n * c * hh * ww, nf = m * cg * kh * kw, no = n * m * oh * ow;
  float *x = malloc((size_t)nx * sizeof *x), *f = malloc((size_t)nf * sizeof *f);
  float *b = malloc((size_t)m * sizeof *b), *r = malloc((size_t)no * sizeof *r);
  float *want = malloc((size_t)no * sizeof *want);
  fill(x, nx, 4, 0.1f);
  fill(f, nf, 5, 0.07f);
  fill(b, m, 6, 0.2f);
  fill(r, no, 7, 0.05f);
  for (int64_t in = 0; in < n; in++)
    for (int64_t om = 0; om < m; om++)
      for (int64_t y = 0; y < oh; y++)
        for (int64_t xo = 0; xo < ow; xo++) {
          int64_t g = om / mg;
          double s = b[om];
          for (int64_t ic = 0; ic < cg; ic++)
            for (int64_t i = 0; i < kh; i++)
              for (int64_t j = 0; j < kw; j++) {
                int64_t iy = y + i - 1, ix = xo + j - 1;
                if (iy < 0 || iy >= hh || ix < 0 || ix >= ww) continue;
                s += (double)x[((in * c + g * cg + ic) * hh + iy) * ww + ix] *
                     f[((om * cg + ic) * kh + i) * kw + j];
              }
          int64_t o = ((in * m + om) * oh + y) * ow + xo;
          if (residual) s += r[o];
          want[o] = act((float)s, activation);
        }
  op_harness *h = harness("conv2d_fusion");
  bind_input(h, "Input", "x", RILL_DTYPE_FP32, DIMS(n, c, hh, ww), x);
  bind_input(h, "Filter", "f", RILL_DTYPE_FP32, DIMS(m, cg, kh, kw), f);
  bind_input(h, "Bias", "b", RILL_DTYPE_FP32, DIMS(m), b);
  if (residual) bind_input(h, "ResidualData", "r", RILL_DTYPE_FP32, DIMS(n, m, oh, ow), r);
  OK(op_harness_output(h, "Output", "out"));
  OK(op_harness_attr_ints(h, "paddings", (const int32_t[]){1, 1}, 2));
  OK(op_harness_attr_int(h, "groups", groups));
  OK(op_harness_attr_string(h, "activation", activation));
  OK(op_harness_run(h));
  rill_tensor *out = op_harness_tensor(h, "out");
  expect_dims(out, DIMS(n, m, oh, ow));
  expect_close_f32(rill_tensor_ptr(out), want, no, 1e-4f);
  op_harness_destroy(h);
  free(x);
  free(f);
  free(b);
  free(r);
  free(want);
}

Test(fused, conv2d_fusion_matches_reference) {
  const char *acts[] = {"identity", "relu", "relu6", "sigmoid", "tanh"};
  for (size_t i = 0; i < 5; i++) run_conv(1, 3, 4, acts[i], false);
  run_conv(3, 3, 3, "relu6", false); /* depthwise */
  run_conv(2, 4, 6, "relu", true);   /* groups and ResidualData */
}

Test(fused, conv2d_fusion_rejects_what_it_cannot_do) {
  op_harness *h = harness("conv2d_fusion");
  bind_input(h, "Input", "x", RILL_DTYPE_FP32, DIMS(1, 1, 3, 3), (float[9]){0});
  bind_input(h, "Filter", "f", RILL_DTYPE_FP32, DIMS(2, 1, 1, 1), (float[2]){0});
  bind_input(h, "Bias", "b", RILL_DTYPE_FP32, DIMS(3), (float[3]){0});
  OK(op_harness_output(h, "Output", "out"));
  EXPECT_ERROR(op_harness_run(h), "conv2d_fusion", "Bias (b)", "per output channel (2)");
  op_harness_destroy(h);
  h = harness("conv2d_fusion");
  bind_input(h, "Input", "x", RILL_DTYPE_FP32, DIMS(1, 1, 3, 3), (float[9]){0});
  bind_input(h, "Filter", "f", RILL_DTYPE_FP32, DIMS(2, 1, 1, 1), (float[2]){0});
  bind_input(h, "Bias", "b", RILL_DTYPE_FP32, DIMS(2), (float[2]){0});
  OK(op_harness_output(h, "Output", "out"));
  OK(op_harness_attr_string(h, "activation", "swish"));
  EXPECT_ERROR(op_harness_run(h), "activation 'swish' is not supported");
  op_harness_destroy(h);
}
