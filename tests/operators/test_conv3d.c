/* conv3d against a naive 7-loop reference, over strides, paddings (symmetric, asymmetric,
 * SAME, VALID), dilations and groups. */
#include "op_test.h"

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
