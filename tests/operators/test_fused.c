/* fc and conv2d_fusion (the fused inference ops) against naive references: every
 * activation, Bias and ResidualData, the GEMV and GEMM paths of fc, and the errors. */
#include "op_test.h"

#include "framework/base/isa.h"

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

/* ---- conv2d_fusion split into parts over threads (kernels/cpu/conv2d.c) ---- */

typedef struct split_cfg {
  int64_t n, c, h, w, m, k, stride, pad, groups;
} split_cfg;

/* conv2d_fusion (or conv2d when activation is NULL) of x with f, b, r on `threads`
 * device threads (0: no device context); the output copied into out. */
static void run_split(const split_cfg *s, const float *x, const float *f, const float *b, const float *r,
                      const char *activation, int32_t threads, float *out, int64_t no) {
  int64_t oh = (s->h + 2 * s->pad - s->k) / s->stride + 1, ow = (s->w + 2 * s->pad - s->k) / s->stride + 1;
  op_harness *h = harness(activation ? "conv2d_fusion" : "conv2d");
  if (threads) op_harness_set_threads(h, threads);
  bind_input(h, "Input", "x", RILL_DTYPE_FP32, DIMS(s->n, s->c, s->h, s->w), (void *)x);
  bind_input(h, "Filter", "f", RILL_DTYPE_FP32, DIMS(s->m, s->c / s->groups, s->k, s->k), (void *)f);
  if (activation) bind_input(h, "Bias", "b", RILL_DTYPE_FP32, DIMS(s->m), (void *)b);
  if (activation && r) bind_input(h, "ResidualData", "r", RILL_DTYPE_FP32, DIMS(s->n, s->m, oh, ow), (void *)r);
  OK(op_harness_output(h, "Output", "out"));
  OK(op_harness_attr_ints(h, "paddings", (const int32_t[]){(int32_t)s->pad, (int32_t)s->pad}, 2));
  OK(op_harness_attr_ints(h, "strides", (const int32_t[]){(int32_t)s->stride, (int32_t)s->stride}, 2));
  OK(op_harness_attr_int(h, "groups", (int32_t)s->groups));
  if (activation) OK(op_harness_attr_string(h, "activation", activation));
  OK(op_harness_run(h));
  rill_tensor *t = op_harness_tensor(h, "out");
  expect_dims(t, DIMS(s->n, s->m, oh, ow));
  memcpy(out, rill_tensor_ptr(t), (size_t)no * sizeof *out);
  op_harness_destroy(h);
}

/* conv (without bias) of x with f in double: conv [n, m, oh, ow]. */
static void split_ref(const split_cfg *s, const float *x, const float *f, double *conv) {
  int64_t oh = (s->h + 2 * s->pad - s->k) / s->stride + 1, ow = (s->w + 2 * s->pad - s->k) / s->stride + 1;
  int64_t cg = s->c / s->groups, mg = s->m / s->groups;
  for (int64_t in = 0; in < s->n; in++)
    for (int64_t om = 0; om < s->m; om++)
      for (int64_t y = 0; y < oh; y++)
        for (int64_t xo = 0; xo < ow; xo++) {
          int64_t g = om / mg;
          double sum = 0;
          for (int64_t ic = 0; ic < cg; ic++)
            for (int64_t i = 0; i < s->k; i++)
              for (int64_t j = 0; j < s->k; j++) {
                int64_t iy = y * s->stride + i - s->pad, ix = xo * s->stride + j - s->pad;
                if (iy < 0 || iy >= s->h || ix < 0 || ix >= s->w) continue;
                sum += (double)x[((in * s->c + g * cg + ic) * s->h + iy) * s->w + ix] *
                       f[((om * cg + ic) * s->k + i) * s->k + j];
              }
          conv[((in * s->m + om) * oh + y) * ow + xo] = sum;
        }
}

/* Convs large enough to be cut into several parts on each path that splits (1x1 by
 * columns and by rows, depthwise 3x3 at stride 1 and 2, a first layer's small-K
 * im2col, medium im2col GEMMs by blocks of rows on OpenBLAS) and convs that run whole
 * (a 3x3 conv with k = 72, and larger ones whose unfolding and epilogue split), with row and
 * column counts off the kernels' blocks: every activation, with and without
 * ResidualData, matches the double reference, and the output on 1, 2 and 3 threads and
 * without a device context is the same bit for bit; so is plain conv2d's. */
Test(fused, conv2d_fusion_split_over_threads_matches_reference_bitwise) {
  const split_cfg cfgs[] = {
      {2, 16, 45, 45, 22, 1, 1, 0, 1}, /* 1x1, by columns */
      {1, 72, 7, 7, 90, 1, 1, 0, 1},   /* 1x1, 7x7: by rows */
      {1, 160, 7, 7, 200, 1, 1, 0, 1}, /* 1x1, 7x7, 1.6 M multiply-adds: 2 row blocks on OpenBLAS */
      {1, 40, 33, 33, 40, 3, 1, 1, 40}, /* depthwise, stride 1 */
      {2, 40, 34, 34, 40, 3, 2, 1, 40}, /* depthwise, stride 2 */
      {1, 3, 100, 100, 10, 3, 2, 1, 1}, /* first layer: im2col, k = 27 */
      {1, 8, 20, 20, 12, 3, 1, 1, 1},   /* k = 72: whole, then the epilogue pass */
      {1, 20, 12, 12, 50, 5, 1, 0, 1},  /* k = 500, 1.6 M multiply-adds: 2 row blocks on OpenBLAS */
      {2, 24, 15, 15, 30, 3, 1, 1, 1},  /* k = 216, padded: 8 + 7 rows on OpenBLAS */
      /* whole, above the blocks' range: the unfolding by ranges of channels (16 parts,
       * 4 for the strided 1x1) and the epilogue by ranges of output channels */
      {1, 16, 72, 72, 24, 3, 1, 1, 1},  /* k = 144, 17.9 M multiply-adds */
      {1, 96, 100, 100, 96, 1, 2, 0, 1}, /* 1x1 at stride 2: im2col, 23 M */
  };
  const char *acts[] = {"identity", "relu", "relu6", "sigmoid", "tanh"};
  for (size_t ci = 0; ci < sizeof cfgs / sizeof cfgs[0]; ci++) {
    const split_cfg *s = &cfgs[ci];
    int64_t oh = (s->h + 2 * s->pad - s->k) / s->stride + 1, ow = (s->w + 2 * s->pad - s->k) / s->stride + 1;
    int64_t cg = s->c / s->groups;
    int64_t nx = s->n * s->c * s->h * s->w, nf = s->m * cg * s->k * s->k, no = s->n * s->m * oh * ow;
    float *x = malloc((size_t)nx * sizeof *x), *f = malloc((size_t)nf * sizeof *f);
    float *b = malloc((size_t)s->m * sizeof *b), *r = malloc((size_t)no * sizeof *r);
    double *conv = malloc((size_t)no * sizeof *conv);
    float *want = malloc((size_t)no * sizeof *want), *got = malloc((size_t)no * sizeof *got);
    float *one = malloc((size_t)no * sizeof *one);
    fill(x, nx, 4, 0.1f);
    fill(f, nf, 5, 0.07f);
    fill(b, s->m, 6, 0.5f);
    fill(r, no, 7, 0.3f);
    split_ref(s, x, f, conv);
    for (int res = 0; res < 2; res++)
      for (size_t ai = 0; ai <= 5; ai++) {
        const char *a = ai < 5 ? acts[ai] : NULL; /* NULL: conv2d */
        if (!a && res) continue;
        for (int64_t o = 0; o < no; o++) {
          double v = conv[o];
          if (a) v += (res ? r[o] : 0) + b[(o / (oh * ow)) % s->m];
          want[o] = a ? act((float)v, a) : (float)v;
        }
        for (int32_t threads = 0; threads <= 3; threads++) {
          run_split(s, x, f, b, res ? r : NULL, a, threads, threads ? got : one, no);
          if (!threads) {
            expect_close_f32(one, want, no, 1e-4f);
            continue;
          }
          cr_expect(memcmp(got, one, (size_t)no * sizeof *got) == 0,
                    "case %zu, %s, residual %d, %d threads: differs from the run without threads", ci,
                    a ? a : "conv2d", res, (int)threads);
        }
      }
    free(x);
    free(f);
    free(b);
    free(r);
    free(conv);
    free(want);
    free(got);
    free(one);
  }
}

/* ---- the small-K GEMM at each vector level (kernels/cpu/conv2d.c) ---- */

static void restore_level(void) { rill_cpu_isa_level_set(rill_cpu_isa_level_native()); }

/* One conv of the small-K kernel's paths at the AVX2 and the AVX-512 levels, on 2
 * threads: for conv2d and every activation of conv2d_fusion, with and without
 * ResidualData (one element of it NaN), the two outputs are the same bits, and match the
 * double reference; the NaN comes through the sum, the bias and every activation. */
static void check_levels(const split_cfg *s) {
  int64_t oh = (s->h + 2 * s->pad - s->k) / s->stride + 1, ow = (s->w + 2 * s->pad - s->k) / s->stride + 1;
  int64_t cg = s->c / s->groups, p = oh * ow;
  int64_t nx = s->n * s->c * s->h * s->w, nf = s->m * cg * s->k * s->k, no = s->n * s->m * p;
  float *x = malloc((size_t)nx * sizeof *x), *f = malloc((size_t)nf * sizeof *f);
  float *b = malloc((size_t)s->m * sizeof *b), *r = malloc((size_t)no * sizeof *r);
  float *want = malloc((size_t)no * sizeof *want), *got[2];
  double *conv = malloc((size_t)no * sizeof *conv);
  got[0] = malloc((size_t)no * sizeof *got[0]);
  got[1] = malloc((size_t)no * sizeof *got[1]);
  /* outputs over about [-12, 12]: relu6 clamps at both ends */
  fill(x, nx, 4, 0.3f);
  fill(f, nf, 5, 0.25f);
  fill(b, s->m, 6, 0.5f);
  fill(r, no, 7, 0.3f);
  /* NaNs in the last element (a tail column, a row of its own) and in the middle */
  const int64_t nan_at[2] = {no / 2, no - 1};
  r[nan_at[0]] = r[nan_at[1]] = NAN;
  split_ref(s, x, f, conv);
  const char *acts[] = {"identity", "relu", "relu6", "sigmoid", "tanh", NULL}; /* NULL: conv2d */
  for (int res = 0; res < 2; res++)
    for (size_t ai = 0; ai < 6; ai++) {
      const char *a = acts[ai];
      if (!a && res) continue;
      for (int l = 0; l < 2; l++) {
        rill_cpu_isa_level_set(l ? RILL_CPU_ISA_AVX512 : RILL_CPU_ISA_AVX2);
        run_split(s, x, f, b, res ? r : NULL, a, 2, got[l], no);
      }
      restore_level();
      cr_expect(memcmp(got[0], got[1], (size_t)no * sizeof *got[0]) == 0,
                "n %ld c %ld %ldx%ld m %ld k %ld groups %ld, %s, residual %d: AVX-512 differs from AVX2",
                (long)s->n, (long)s->c, (long)s->h, (long)s->w, (long)s->m, (long)s->k, (long)s->groups,
                a ? a : "conv2d", res);
      for (int64_t o = 0; o < no; o++) {
        double v = conv[o];
        if (a) v += (res ? r[o] : 0) + b[(o / p) % s->m];
        want[o] = a ? act((float)v, a) : (float)v;
      }
      for (int q = 0; res && q < 2; q++) {
        cr_expect(isnan(got[1][nan_at[q]]), "c %ld %ldx%ld m %ld k %ld, %s: the residual's NaN at %ld is lost",
                  (long)s->c, (long)s->h, (long)s->w, (long)s->m, (long)s->k, a, (long)nan_at[q]);
        got[1][nan_at[q]] = want[nan_at[q]] = 0;
      }
      expect_close_f32(got[1], want, no, 1e-4f);
    }
  free(x);
  free(f);
  free(b);
  free(r);
  free(want);
  free(conv);
  free(got[0]);
  free(got[1]);
}

/* The AVX-512 small-K kernel (blocks of 4 rows x 48 columns, masked last columns) gives
 * the AVX2 kernel's bits (4 x 24): every element is the same FMA chain over k in order
 * and the same epilogue, whatever the block and the split. Column counts below, at and
 * beyond one block with every tail length, 7 rows (a block of 4 and 3 single rows), on
 * each path that runs the kernel: 1x1 by rows (small images, the last 1-2 columns as
 * dot products), 1x1 by columns (parts of 48k columns on AVX-512, 24k on AVX2), a
 * first layer's im2col (k = 27) split by output rows and a grouped one that runs whole. */
Test(fused, small_k_gemm_avx512_matches_avx2_bitwise, .fini = restore_level) {
  if (rill_cpu_isa_level_native() < RILL_CPU_ISA_AVX512) cr_skip_test("this CPU has no AVX-512: one path only");
  for (int64_t w = 1; w <= 100; w++) {
    check_levels(&(split_cfg){1, 5, 1, w, 7, 1, 1, 0, 1}); /* 1x1, by rows */
    check_levels(&(split_cfg){1, 3, 1, w, 7, 3, 1, 1, 1}); /* im2col, k = 27 */
  }
  for (int64_t w = 192; w <= 240; w++) check_levels(&(split_cfg){1, 4, 1, w, 7, 1, 1, 0, 1}); /* by columns */
  check_levels(&(split_cfg){2, 16, 45, 45, 22, 1, 1, 0, 1});  /* by columns, several parts */
  check_levels(&(split_cfg){1, 3, 100, 100, 10, 3, 2, 1, 1}); /* first layer, several parts */
  check_levels(&(split_cfg){1, 6, 9, 37, 10, 3, 1, 1, 2});    /* grouped, k = 27: whole */
}

/* The AVX-512 3x3 depthwise kernel (16 columns per vector, masked tails) gives the AVX2
 * kernel's bits (8 per vector): each output is the same FMA chain over the 9 taps and the
 * same epilogue. Output widths with every tail length mod 16, strides 1 and 2, with and
 * without padding, heights from 1 row to a ring of three padded rows (100x100), and a row
 * too wide for the AVX-512 padded rows (the AVX2 kernel runs it at both levels). */
Test(fused, depthwise_avx512_matches_avx2_bitwise, .fini = restore_level) {
  if (rill_cpu_isa_level_native() < RILL_CPU_ISA_AVX512) cr_skip_test("this CPU has no AVX-512: one path only");
  for (int64_t w = 1; w <= 40; w++)
    for (int64_t st = 1; st <= 2; st++)
      for (int64_t pad = 0; pad <= 1; pad++) {
        if (w + 2 * pad < 3) continue;
        check_levels(&(split_cfg){1, 3, 3 + w % 5 - 2 * pad, w, 3, 3, st, pad, 3});
        check_levels(&(split_cfg){1, 4, 7 + w % 3, w, 4, 3, st, pad, 4});
      }
  check_levels(&(split_cfg){2, 5, 100, 100, 5, 3, 1, 1, 5});
  check_levels(&(split_cfg){1, 4, 100, 99, 4, 3, 2, 1, 4});
  check_levels(&(split_cfg){1, 2, 3, 2020, 2, 3, 1, 1, 2});
}
