/* conv3d against a naive 7-loop reference, over strides, paddings (symmetric, asymmetric,
 * SAME, VALID), dilations and groups; conv3d_grad against central differences; NDHWC
 * against NCDHW on transposed data. */
#include "conv3d_layout.h"
#include "op_test.h"
#include "support/grad_check.h"

typedef struct c3 {
  int64_t n, c, d, h, w, m, kd, kh, kw, groups;
  int s[3], dil[3], pads[6]; /* pads: front, back, top, bottom, left, right */
  int npads;                 /* 3 or 6: how the attribute is written */
  const char *alg;
} c3;

static void run_c3(const c3 *k) {
  int64_t pf = k->pads[0], pt = k->pads[2], pl = k->pads[4];
  int64_t pbk = k->pads[1], pb = k->pads[3], pr = k->pads[5];
  int dil[3] = {k->dil[0], k->dil[1], k->dil[2]};
  int64_t in[3] = {k->d, k->h, k->w}, kk[3] = {k->kd, k->kh, k->kw};
  int64_t p0[3] = {pf, pt, pl}, p1[3] = {pbk, pb, pr};
  if (k->alg && !strcmp(k->alg, "SAME"))
    for (int i = 0; i < 3; i++) {
      int64_t o = (in[i] + k->s[i] - 1) / k->s[i], t = (o - 1) * k->s[i] + kk[i] - in[i];
      if (t < 0) t = 0;
      p0[i] = t / 2;
      p1[i] = t - t / 2;
      dil[i] = 1;
    }
  if (k->alg && !strcmp(k->alg, "VALID"))
    for (int i = 0; i < 3; i++) p0[i] = p1[i] = 0;
  int64_t o[3];
  for (int i = 0; i < 3; i++) o[i] = (in[i] + p0[i] + p1[i] - (dil[i] * (kk[i] - 1) + 1)) / k->s[i] + 1;
  int64_t cg = k->c / k->groups, mg = k->m / k->groups;
  int64_t nx = k->n * k->c * k->d * k->h * k->w, nf = k->m * cg * k->kd * k->kh * k->kw;
  int64_t no = k->n * k->m * o[0] * o[1] * o[2];
  float *x = malloc((size_t)nx * sizeof *x), *f = malloc((size_t)nf * sizeof *f);
  float *want = calloc((size_t)no, sizeof *want);
  for (int64_t i = 0; i < nx; i++) x[i] = (float)sin((double)i * 0.31);
  for (int64_t i = 0; i < nf; i++) f[i] = (float)cos((double)i * 0.57) * 0.5f;
  for (int64_t n = 0; n < k->n; n++)
    for (int64_t m = 0; m < k->m; m++)
      for (int64_t a = 0; a < o[0]; a++)
        for (int64_t b = 0; b < o[1]; b++)
          for (int64_t c = 0; c < o[2]; c++) {
            double s = 0;
            int64_t gi = m / mg;
            for (int64_t ci = 0; ci < cg; ci++)
              for (int64_t i = 0; i < k->kd; i++)
                for (int64_t j = 0; j < k->kh; j++)
                  for (int64_t l = 0; l < k->kw; l++) {
                    int64_t zd = a * k->s[0] - p0[0] + i * dil[0];
                    int64_t zh = b * k->s[1] - p0[1] + j * dil[1];
                    int64_t zw = c * k->s[2] - p0[2] + l * dil[2];
                    if (zd < 0 || zd >= k->d || zh < 0 || zh >= k->h || zw < 0 || zw >= k->w) continue;
                    s += (double)x[(((n * k->c + gi * cg + ci) * k->d + zd) * k->h + zh) * k->w + zw] *
                         f[(((m * cg + ci) * k->kd + i) * k->kh + j) * k->kw + l];
                  }
            want[(((n * k->m + m) * o[0] + a) * o[1] + b) * o[2] + c] = (float)s;
          }
  op_harness *h = harness("conv3d");
  bind_input(h, "Input", "vol", RILL_DTYPE_FP32, DIMS(k->n, k->c, k->d, k->h, k->w), x);
  bind_input(h, "Filter", "conv3d_0.w_0", RILL_DTYPE_FP32, DIMS(k->m, cg, k->kd, k->kh, k->kw), f);
  OK(op_harness_output(h, "Output", "out"));
  OK(op_harness_attr_ints(h, "strides", k->s, 3));
  OK(op_harness_attr_ints(h, "dilations", k->dil, 3));
  if (k->npads == 3) OK(op_harness_attr_ints(h, "paddings", (const int32_t[]){k->pads[0], k->pads[2], k->pads[4]}, 3));
  else OK(op_harness_attr_ints(h, "paddings", k->pads, 6));
  OK(op_harness_attr_int(h, "groups", (int)k->groups));
  if (k->alg) OK(op_harness_attr_string(h, "padding_algorithm", k->alg));
  OK(op_harness_run(h));
  rill_tensor *t = op_harness_tensor(h, "out");
  expect_dims(t, DIMS(k->n, k->m, o[0], o[1], o[2]));
  expect_close_f32(rill_tensor_ptr(t), want, no, 1e-4f);
  op_harness_destroy(h);
  free(x);
  free(f);
  free(want);
}

Test(conv3d, matches_reference) {
  /* TSM's temporal conv: 3x1x1, paddings [1, 0, 0] */
  run_c3(&(c3){2, 4, 5, 3, 3, 6, 3, 1, 1, 1, {1, 1, 1}, {1, 1, 1}, {1, 1, 0, 0, 0, 0}, 3, NULL});
  /* 3x3x3, padding 1, stride 2 */
  run_c3(&(c3){1, 3, 6, 7, 5, 4, 3, 3, 3, 1, {2, 2, 2}, {1, 1, 1}, {1, 1, 1, 1, 1, 1}, 3, NULL});
  /* asymmetric paddings, mixed strides, dilation */
  run_c3(&(c3){1, 2, 5, 6, 7, 3, 2, 3, 2, 1, {1, 2, 3}, {2, 1, 2}, {0, 2, 1, 0, 2, 1}, 6, NULL});
  /* groups */
  run_c3(&(c3){2, 6, 4, 4, 4, 4, 2, 2, 2, 2, {1, 1, 1}, {1, 1, 1}, {1, 0, 0, 1, 1, 1}, 6, NULL});
  run_c3(&(c3){1, 4, 3, 3, 3, 4, 1, 3, 3, 4, {1, 1, 1}, {1, 1, 1}, {0, 0, 1, 1, 1, 1}, 3, NULL});
  /* SAME (dilations reset to 1) and VALID */
  run_c3(&(c3){1, 2, 5, 6, 4, 3, 3, 2, 3, 1, {2, 1, 2}, {2, 2, 2}, {7, 7, 7, 7, 7, 7}, 3, "SAME"});
  run_c3(&(c3){1, 2, 5, 6, 4, 3, 3, 2, 3, 1, {1, 2, 1}, {1, 1, 1}, {3, 3, 3, 3, 3, 3}, 3, "VALID"});
  /* pointwise fast path */
  run_c3(&(c3){2, 5, 3, 4, 2, 7, 1, 1, 1, 1, {1, 1, 1}, {1, 1, 1}, {0, 0, 0, 0, 0, 0}, 3, NULL});
  /* a column buffer of several depth blocks: kc * plane large */
  run_c3(&(c3){1, 64, 9, 24, 24, 2, 3, 3, 3, 1, {1, 1, 1}, {1, 1, 1}, {1, 1, 1, 1, 1, 1}, 3, NULL});
}

Test(conv3d, bad_shapes_fail_at_inference) {
  op_harness *h = harness("conv3d");
  bind_input(h, "Input", "vol", RILL_DTYPE_FP32, DIMS(1, 3, 4, 4, 4), NULL);
  bind_input(h, "Filter", "w", RILL_DTYPE_FP32, DIMS(2, 2, 1, 1, 1), NULL);
  OK(op_harness_output(h, "Output", "o"));
  EXPECT_ERROR(op_harness_run(h), "conv3d", "vol", "w", "groups");
  op_harness_destroy(h);

  h = harness("conv3d");
  bind_input(h, "Input", "vol", RILL_DTYPE_FP32, DIMS(1, 3, 4, 4), NULL);
  bind_input(h, "Filter", "w", RILL_DTYPE_FP32, DIMS(2, 3, 1, 1, 1), NULL);
  OK(op_harness_output(h, "Output", "o"));
  EXPECT_ERROR(op_harness_run(h), "conv3d", "vol", "5-D");
  op_harness_destroy(h);
}

/* Finite-difference checks of Input@GRAD and Filter@GRAD in float64. */
static void grad_c3(int64_t n, int64_t c, int64_t d, int64_t hh, int64_t w, int64_t m,
                    int64_t kd, int64_t kh, int64_t kw, int groups, const int32_t s[3],
                    const int32_t dil[3], const int32_t *pads, int npads, const char *alg) {
  int64_t nx = n * c * d * hh * w, nf = m * (c / groups) * kd * kh * kw;
  double *x = malloc((size_t)nx * sizeof *x), *f = malloc((size_t)nf * sizeof *f);
  for (int64_t i = 0; i < nx; i++) x[i] = sin((double)i * 0.37) + 0.1;
  for (int64_t i = 0; i < nf; i++) f[i] = cos((double)i * 0.53) * 0.5;
  op_harness *h = harness("conv3d");
  bind_input(h, "Input", "vol", RILL_DTYPE_FP64, DIMS(n, c, d, hh, w), x);
  bind_input(h, "Filter", "w", RILL_DTYPE_FP64, DIMS(m, c / groups, kd, kh, kw), f);
  OK(op_harness_output(h, "Output", "out"));
  OK(op_harness_attr_ints(h, "strides", s, 3));
  OK(op_harness_attr_ints(h, "dilations", dil, 3));
  OK(op_harness_attr_ints(h, "paddings", pads, npads));
  OK(op_harness_attr_int(h, "groups", groups));
  if (alg) OK(op_harness_attr_string(h, "padding_algorithm", alg));
  rill_status *st = grad_check(h, GC_SLOTS("Input", "Filter"), GC_SLOTS("Output"), NULL);
  cr_assert_null(st, "%s", rill_status_message(st));
  op_harness_destroy(h);
  free(x);
  free(f);
}

Test(conv3d, grad_check_fp64) {
  grad_c3(2, 2, 3, 4, 3, 3, 2, 3, 2, 1, (const int32_t[]){1, 1, 1}, (const int32_t[]){1, 1, 1},
          (const int32_t[]){1, 0, 1}, 3, NULL);
  grad_c3(1, 4, 5, 4, 5, 2, 3, 2, 2, 2, (const int32_t[]){2, 1, 2}, (const int32_t[]){1, 2, 1},
          (const int32_t[]){0, 1, 1, 0, 2, 1}, 6, NULL);
  grad_c3(1, 2, 4, 3, 5, 2, 3, 3, 3, 1, (const int32_t[]){2, 2, 1}, (const int32_t[]){1, 1, 1},
          (const int32_t[]){0, 0, 0}, 3, "SAME");
  /* 1x1x1: the forward takes the pointwise path, the gradient the column path */
  grad_c3(2, 3, 2, 2, 3, 4, 1, 1, 1, 1, (const int32_t[]){1, 1, 1}, (const int32_t[]){1, 1, 1},
          (const int32_t[]){0, 0, 0}, 3, NULL);
}

Test(conv3d, grad_float32_matches_float64) {
  /* a column buffer of several depth blocks in float32, against the float64 gradients */
  int64_t nx = 1 * 48 * 6 * 20 * 20, nf = 2 * 48 * 27, ny = 2 * 6 * 20 * 20;
  float *x = malloc((size_t)nx * sizeof *x), *f = malloc((size_t)nf * sizeof *f);
  float *dy = malloc((size_t)ny * sizeof *dy);
  double *xd = malloc((size_t)nx * sizeof *xd), *fd = malloc((size_t)nf * sizeof *fd);
  double *dyd = malloc((size_t)ny * sizeof *dyd);
  for (int64_t i = 0; i < nx; i++) xd[i] = x[i] = (float)sin((double)i * 0.31);
  for (int64_t i = 0; i < nf; i++) fd[i] = f[i] = (float)cos((double)i * 0.57) * 0.5f;
  for (int64_t i = 0; i < ny; i++) dyd[i] = dy[i] = (float)sin((double)i * 0.11);
  rill_tensor *got[2][2];
  op_harness *hs[2];
  for (int k = 0; k < 2; k++) {
    rill_dtype dt = k ? RILL_DTYPE_FP64 : RILL_DTYPE_FP32;
    op_harness *h = hs[k] = harness("conv3d_grad");
    bind_input(h, "Input", "vol", dt, DIMS(1, 48, 6, 20, 20), k ? (void *)xd : (void *)x);
    bind_input(h, "Filter", "w", dt, DIMS(2, 48, 3, 3, 3), k ? (void *)fd : (void *)f);
    bind_input(h, "Output@GRAD", "out@GRAD", dt, DIMS(1, 2, 6, 20, 20), k ? (void *)dyd : (void *)dy);
    OK(op_harness_output(h, "Input@GRAD", "vol@GRAD"));
    OK(op_harness_output(h, "Filter@GRAD", "w@GRAD"));
    OK(op_harness_attr_ints(h, "paddings", (const int32_t[]){1, 1, 1}, 3));
    OK(op_harness_run(h));
    got[k][0] = op_harness_tensor(h, "vol@GRAD");
    got[k][1] = op_harness_tensor(h, "w@GRAD");
    expect_dims(got[k][0], DIMS(1, 48, 6, 20, 20));
    expect_dims(got[k][1], DIMS(2, 48, 3, 3, 3));
  }
  for (int j = 0; j < 2; j++) {
    const float *a = rill_tensor_ptr(got[0][j]);
    const double *b = rill_tensor_ptr(got[1][j]);
    for (int64_t i = 0; i < rill_tensor_numel(got[1][j]); i++)
      cr_assert(fabs(a[i] - b[i]) <= 1e-3 * (1 + fabs(b[i])), "grad %d [%ld]: %g vs %g", j, (long)i,
                (double)a[i], b[i]);
  }
  op_harness_destroy(hs[0]);
  op_harness_destroy(hs[1]);
  free(x), free(f), free(dy), free(xd), free(fd), free(dyd);
}

Test(conv3d, grad_bad_output_grad_fails) {
  op_harness *h = layout_shape_harness("conv3d_grad", NULL, "vol", DIMS(1, 2, 4, 4, 4),
                                       DIMS5(3, 2, 3, 3, 3), "out", DIMS5(1, 3, 4, 4, 4));
  EXPECT_ERROR(op_harness_run(h), "conv3d_grad", "out@GRAD", "[1, 3, 2, 2, 2]");
  op_harness_destroy(h);

  h = harness("conv3d_grad");
  bind_input(h, "Input", "vol", RILL_DTYPE_FP32, DIMS(1, 3, 4, 4, 4), NULL);
  bind_input(h, "Filter", "w", RILL_DTYPE_FP32, DIMS(2, 2, 1, 1, 1), NULL);
  bind_input(h, "Output@GRAD", "out@GRAD", RILL_DTYPE_FP32, DIMS(1, 2, 4, 4, 4), NULL);
  OK(op_harness_output(h, "Filter@GRAD", "w@GRAD"));
  EXPECT_ERROR(op_harness_run(h), "conv3d_grad", "vol", "w", "groups");
  op_harness_destroy(h);
}

/* NDHWC: the same numbers as NCDHW, transposed, for the forward and both gradients */
Test(conv3d, ndhwc_matches_ncdhw) {
  static const layout_case cases[] = {
      /* groups, mixed strides, dilation, asymmetric paddings */
      {{2, 4, 5, 6, 7}, {6, 2, 3, 2, 3}, 2, {1, 2, 1}, {1, 1, 2}, {1, 0, 0, 2, 1, 1}, 6, {0}, NULL, "NDHWC"},
      /* 3x3x3, stride 2, padding 1 */
      {{1, 3, 4, 5, 4}, {4, 3, 3, 3, 3}, 1, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, 3, {0}, NULL, "NDHWC"},
      /* pointwise fast path */
      {{2, 5, 3, 4, 2}, {7, 5, 1, 1, 1}, 1, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, 3, {0}, NULL, "NDHWC"},
      /* SAME, and the format written NHWC */
      {{1, 2, 5, 6, 4}, {3, 2, 3, 2, 3}, 1, {2, 1, 2}, {1, 1, 1}, {0, 0, 0}, 3, {0}, "SAME", "NHWC"},
  };
  layout_check_cases("conv3d", cases, sizeof cases / sizeof cases[0]);
}

Test(conv3d, ndhwc_errors_name_op_and_variable) {
  /* a 4-D Input */
  op_harness *h = layout_shape_harness("conv3d", "NDHWC", "vol", DIMS(1, 4, 4, 3),
                                       DIMS5(2, 3, 1, 1, 1), "o", NULL);
  EXPECT_ERROR(op_harness_run(h), "conv3d", "vol", "5-D", "NDHWC");
  op_harness_destroy(h);

  /* channels are read from the last dim: 4 do not match Filter's 3 */
  h = layout_shape_harness("conv3d", "NDHWC", "vol", DIMS(1, 3, 3, 3, 4), DIMS5(2, 3, 1, 1, 1),
                           "o", NULL);
  EXPECT_ERROR(op_harness_run(h), "conv3d", "vol", "w", "groups", "NDHWC");
  op_harness_destroy(h);

  /* Output@GRAD is checked against the channel-last forward output */
  h = layout_shape_harness("conv3d_grad", "NDHWC", "vol", DIMS(1, 4, 4, 4, 2),
                           DIMS5(3, 2, 3, 3, 3), "out", DIMS5(1, 3, 2, 2, 2));
  EXPECT_ERROR(op_harness_run(h), "conv3d_grad", "out@GRAD", "[1, 2, 2, 2, 3]");
  op_harness_destroy(h);
}
