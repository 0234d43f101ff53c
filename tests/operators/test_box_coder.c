/* box_coder against a naive reference: encode and decode, normalized and pixel boxes,
 * variances from PriorBoxVar, from the attribute or none, decode along axis 0 and 1;
 * a hand-computed decode; encode then decode gives the boxes back; the errors. */
#include "op_test.h"

static void attr_floats(op_harness *h, const char *name, const float *v, size_t n) {
  rill_attr_value a = {.type = RILL_ATTR_FLOATS, .n = n, .list.floats = (float *)v};
  OK(op_harness_attr(h, name, &a));
}

enum { VAR_NONE, VAR_INPUT, VAR_ATTR };

/* prior j as (cx, cy, w, h) the way the reference sees it */
static void pcs(const float *p, bool norm, double *cx, double *cy, double *w, double *h) {
  *w = p[2] - p[0] + (norm ? 0 : 1);
  *h = p[3] - p[1] + (norm ? 0 : 1);
  *cx = p[0] + *w / 2;
  *cy = p[1] + *h / 2;
}

static void make_boxes(float *b, int64_t n, double seed) {
  for (int64_t i = 0; i < n; i++) {
    double x = fabs(sin(seed + (double)i)) * 20, y = fabs(cos(seed * 2 + (double)i)) * 20;
    b[i * 4] = (float)x;
    b[i * 4 + 1] = (float)y;
    b[i * 4 + 2] = (float)(x + 1 + fabs(sin((double)i * 3.1)) * 10);
    b[i * 4 + 3] = (float)(y + 1 + fabs(cos((double)i * 1.7)) * 10);
  }
}

static void check_encode(int64_t n, int64_t m, bool norm, int var) {
  float *t = malloc((size_t)n * 4 * sizeof *t), *p = malloc((size_t)m * 4 * sizeof *p);
  float *pv = malloc((size_t)m * 4 * sizeof *pv), *want = malloc((size_t)(n * m * 4) * sizeof *want);
  const float av[4] = {0.1f, 0.2f, 0.3f, 0.4f};
  make_boxes(t, n, 1.0);
  make_boxes(p, m, 2.5);
  for (int64_t i = 0; i < m * 4; i++) pv[i] = 0.1f + 0.05f * (float)(i % 5);
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < m; j++) {
      double cx, cy, w, h;
      pcs(p + j * 4, norm, &cx, &cy, &w, &h);
      const float *b = t + i * 4;
      double tw = b[2] - b[0] + (norm ? 0 : 1), th = b[3] - b[1] + (norm ? 0 : 1);
      double e[4] = {((b[0] + b[2]) / 2.0 - cx) / w, ((b[1] + b[3]) / 2.0 - cy) / h,
                     log(fabs(tw / w)), log(fabs(th / h))};
      for (int k = 0; k < 4; k++) {
        double v = var == VAR_INPUT ? pv[j * 4 + k] : var == VAR_ATTR ? av[k] : 1;
        want[(i * m + j) * 4 + k] = (float)(e[k] / v);
      }
    }
  op_harness *hh = harness("box_coder");
  bind_input(hh, "PriorBox", "prior", RILL_DTYPE_FP32, DIMS(m, 4), p);
  if (var == VAR_INPUT) bind_input(hh, "PriorBoxVar", "prior_var", RILL_DTYPE_FP32, DIMS(m, 4), pv);
  if (var == VAR_ATTR) attr_floats(hh, "variance", av, 4);
  bind_input(hh, "TargetBox", "gt", RILL_DTYPE_FP32, DIMS(n, 4), t);
  OK(op_harness_output(hh, "OutputBox", "enc"));
  OK(op_harness_attr_bool(hh, "box_normalized", norm));
  OK(op_harness_run(hh)); /* code_type defaults to encode_center_size */
  expect_dims(op_harness_tensor(hh, "enc"), DIMS(n, m, 4));
  expect_close_f32(rill_tensor_ptr(op_harness_tensor(hh, "enc")), want, n * m * 4, 1e-4f);
  op_harness_destroy(hh);
  free(t); free(p); free(pv); free(want);
}

static void check_decode(int64_t n, int64_t m, bool norm, int var, int axis) {
  int64_t rows = axis == 0 ? n : m, cols = axis == 0 ? m : n;
  float *t = malloc((size_t)(n * m * 4) * sizeof *t), *p = malloc((size_t)m * 4 * sizeof *p);
  float *pv = malloc((size_t)m * 4 * sizeof *pv), *want = malloc((size_t)(n * m * 4) * sizeof *want);
  const float av[4] = {0.1f, 0.1f, 0.2f, 0.2f};
  for (int64_t i = 0; i < n * m * 4; i++) t[i] = (float)sin((double)i * 0.9);
  make_boxes(p, m, 0.5);
  for (int64_t i = 0; i < m * 4; i++) pv[i] = 0.1f + 0.05f * (float)(i % 3);
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < cols; j++) {
      int64_t pj = axis == 0 ? j : i;
      double cx, cy, w, h, v[4];
      pcs(p + pj * 4, norm, &cx, &cy, &w, &h);
      for (int k = 0; k < 4; k++) v[k] = var == VAR_INPUT ? pv[pj * 4 + k] : var == VAR_ATTR ? av[k] : 1;
      const float *d = t + (i * cols + j) * 4;
      double ocx = v[0] * d[0] * w + cx, ocy = v[1] * d[1] * h + cy;
      double ow = exp(v[2] * d[2]) * w, oh = exp(v[3] * d[3]) * h;
      float *o = want + (i * cols + j) * 4;
      o[0] = (float)(ocx - ow / 2);
      o[1] = (float)(ocy - oh / 2);
      o[2] = (float)(ocx + ow / 2 - (norm ? 0 : 1));
      o[3] = (float)(ocy + oh / 2 - (norm ? 0 : 1));
    }
  op_harness *hh = harness("box_coder");
  bind_input(hh, "PriorBox", "prior", RILL_DTYPE_FP32, DIMS(m, 4), p);
  if (var == VAR_INPUT) bind_input(hh, "PriorBoxVar", "prior_var", RILL_DTYPE_FP32, DIMS(m, 4), pv);
  if (var == VAR_ATTR) attr_floats(hh, "variance", av, 4);
  bind_input(hh, "TargetBox", "deltas", RILL_DTYPE_FP32, DIMS(rows, cols, 4), t);
  OK(op_harness_output(hh, "OutputBox", "dec"));
  OK(op_harness_attr_string(hh, "code_type", "decode_center_size"));
  OK(op_harness_attr_bool(hh, "box_normalized", norm));
  OK(op_harness_attr_int(hh, "axis", axis));
  OK(op_harness_run(hh));
  expect_dims(op_harness_tensor(hh, "dec"), DIMS(rows, cols, 4));
  expect_close_f32(rill_tensor_ptr(op_harness_tensor(hh, "dec")), want, n * m * 4, 1e-4f);
  op_harness_destroy(hh);
  free(t); free(p); free(pv); free(want);
}

Test(box_coder, encode_matches_reference) {
  for (int var = 0; var < 3; var++)
    for (int norm = 0; norm < 2; norm++) {
      check_encode(3, 5, norm, var);
      check_encode(1, 1, norm, var);
      check_encode(7, 2, norm, var);
    }
}

Test(box_coder, decode_matches_reference) {
  for (int var = 0; var < 3; var++)
    for (int norm = 0; norm < 2; norm++)
      for (int axis = 0; axis < 2; axis++) {
        check_decode(2, 6, norm, var, axis);
        check_decode(1, 1, norm, var, axis);
        check_decode(4, 3, norm, var, axis);
      }
}

/* Zero deltas decode to the prior itself; a dx of 1 with variance 0.1 moves the centre
 * by a tenth of the prior's width. */
Test(box_coder, hand_computed_decode) {
  float prior[] = {0.2f, 0.2f, 0.6f, 0.4f};
  float deltas[] = {0, 0, 0, 0, 1, 0, 0, 0};
  op_harness *h = harness("box_coder");
  bind_input(h, "PriorBox", "prior", RILL_DTYPE_FP32, DIMS(1, 4), prior);
  bind_input(h, "TargetBox", "deltas", RILL_DTYPE_FP32, DIMS(2, 1, 4), deltas);
  attr_floats(h, "variance", (const float[]){0.1f, 0.1f, 0.2f, 0.2f}, 4);
  OK(op_harness_output(h, "OutputBox", "dec"));
  OK(op_harness_attr_string(h, "code_type", "decode_center_size"));
  OK(op_harness_run(h));
  float want[] = {0.2f, 0.2f, 0.6f, 0.4f, 0.24f, 0.2f, 0.64f, 0.4f};
  expect_close_f32(rill_tensor_ptr(op_harness_tensor(h, "dec")), want, 8, 1e-6f);
  op_harness_destroy(h);
}

/* Encoding boxes against priors, then decoding the result with the same priors and
 * variances, gives every box back when normalized. Pixel boxes come back shifted by
 * half a pixel, as in Paddle: encode takes the target centre as (xmin + xmax) / 2 but
 * its width as xmax - xmin + 1, and decode subtracts the 1 again from xmax only. */
Test(box_coder, encode_then_decode_round_trips) {
  float t[12], p[8], pv[8];
  make_boxes(t, 3, 0.3);
  make_boxes(p, 2, 1.9);
  for (int i = 0; i < 8; i++) pv[i] = 0.1f * (float)(1 + i % 4);
  for (int norm = 0; norm < 2; norm++) {
    op_harness *h = harness("box_coder");
    bind_input(h, "PriorBox", "prior", RILL_DTYPE_FP32, DIMS(2, 4), p);
    bind_input(h, "PriorBoxVar", "pv", RILL_DTYPE_FP32, DIMS(2, 4), pv);
    bind_input(h, "TargetBox", "gt", RILL_DTYPE_FP32, DIMS(3, 4), t);
    OK(op_harness_output(h, "OutputBox", "enc"));
    OK(op_harness_attr_bool(h, "box_normalized", norm));
    OK(op_harness_run(h));
    rill_tensor *enc = op_harness_tensor(h, "enc");
    op_harness *d = harness("box_coder");
    bind_input(d, "PriorBox", "prior", RILL_DTYPE_FP32, DIMS(2, 4), p);
    bind_input(d, "PriorBoxVar", "pv", RILL_DTYPE_FP32, DIMS(2, 4), pv);
    OK(op_harness_input(d, "TargetBox", "enc", enc));
    OK(op_harness_output(d, "OutputBox", "dec"));
    OK(op_harness_attr_string(d, "code_type", "decode_center_size"));
    OK(op_harness_attr_bool(d, "box_normalized", norm));
    OK(op_harness_run(d));
    const float *o = rill_tensor_ptr(op_harness_tensor(d, "dec"));
    for (int i = 0; i < 3; i++) {
      float back[4];
      for (int k = 0; k < 4; k++) back[k] = t[i * 4 + k] - (norm ? 0.0f : 0.5f);
      for (int j = 0; j < 2; j++) expect_close_f32(o + (i * 2 + j) * 4, back, 4, 1e-4f);
    }
    op_harness_destroy(h);
    op_harness_destroy(d);
  }
}

Test(box_coder, float64_decode) {
  double prior[] = {1, 2, 5, 8}, d[] = {0.5, -0.5, 0.1, 0.2};
  rill_tensor *pt = op_harness_make(RILL_DTYPE_FP64, DIMS(1, 4), prior);
  rill_tensor *dt = op_harness_make(RILL_DTYPE_FP64, DIMS(1, 1, 4), d);
  op_harness *h = harness("box_coder");
  OK(op_harness_input(h, "PriorBox", "prior", pt));
  OK(op_harness_input(h, "TargetBox", "d", dt));
  op_harness_free_tensor(pt);
  op_harness_free_tensor(dt);
  OK(op_harness_output(h, "OutputBox", "o"));
  OK(op_harness_attr_string(h, "code_type", "decode_center_size"));
  OK(op_harness_attr_bool(h, "box_normalized", false));
  OK(op_harness_run(h));
  double w = 5, hh = 7, cx = 1 + 2.5 + 0.5 * 5, cy = 2 + 3.5 - 0.5 * 7;
  double ow = exp(0.1) * w, oh = exp(0.2) * hh;
  double want[] = {cx - ow / 2, cy - oh / 2, cx + ow / 2 - 1, cy + oh / 2 - 1};
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "o")), want, 4, 1e-12);
  op_harness_destroy(h);
}

Test(box_coder, errors_name_op_and_variable) {
  float b[48] = {0};
  op_harness *h = harness("box_coder");
  bind_input(h, "PriorBox", "prior", RILL_DTYPE_FP32, DIMS(3, 4), b);
  bind_input(h, "PriorBoxVar", "prior_var", RILL_DTYPE_FP32, DIMS(3, 4), b);
  bind_input(h, "TargetBox", "deltas", RILL_DTYPE_FP32, DIMS(2, 3, 4), b);
  OK(op_harness_output(h, "OutputBox", "o"));
  OK(op_harness_attr_string(h, "code_type", "decode_center_size"));
  attr_floats(h, "variance", (const float[]){1, 1, 1, 1}, 4);
  EXPECT_ERROR(op_harness_run(h), "box_coder", "prior_var", "variance", "together");
  attr_floats(h, "variance", NULL, 0);
  OK(op_harness_run(h));
  OK(op_harness_attr_int(h, "axis", 1)); /* TargetBox [2, 3, 4] has 2 rows, not 3 priors */
  EXPECT_ERROR(op_harness_run(h), "box_coder", "deltas", "axis is 1");
  OK(op_harness_attr_string(h, "code_type", "decode_corner"));
  EXPECT_ERROR(op_harness_run(h), "box_coder", "code_type", "decode_corner");
  op_harness_destroy(h);
  h = harness("box_coder");
  bind_input(h, "PriorBox", "prior", RILL_DTYPE_FP32, DIMS(3, 5), b);
  bind_input(h, "TargetBox", "gt", RILL_DTYPE_FP32, DIMS(2, 4), b);
  OK(op_harness_output(h, "OutputBox", "o"));
  EXPECT_ERROR(op_harness_run(h), "box_coder", "PriorBox (prior)", "[M, 4]");
  op_harness_destroy(h);
}

/* Encoding keeps TargetBox's LoD (one sequence of boxes per image); decoding along axis
 * 1 takes PriorBox's. */
Test(box_coder, output_lod_follows_paddle) {
  float t[12], p[8];
  make_boxes(t, 3, 0.1);
  make_boxes(p, 2, 0.2);
  size_t n = 3;
  rill_tensor *tt = op_harness_make(RILL_DTYPE_FP32, DIMS(3, 4), t);
  OK(rill_tensor_set_lod(tt, 1, (const uint64_t *const[]){(const uint64_t[]){0, 1, 3}}, &n));
  op_harness *h = harness("box_coder");
  bind_input(h, "PriorBox", "prior", RILL_DTYPE_FP32, DIMS(2, 4), p);
  OK(op_harness_input(h, "TargetBox", "gt", tt));
  op_harness_free_tensor(tt);
  OK(op_harness_output(h, "OutputBox", "enc"));
  OK(op_harness_run(h));
  rill_tensor *o = op_harness_tensor(h, "enc");
  cr_assert_eq(o->lod.nlevels, 1);
  cr_assert(o->lod.levels[0].n == 3 && o->lod.levels[0].offsets[1] == 1 && o->lod.levels[0].offsets[2] == 3);
  op_harness_destroy(h);

  float d[2 * 3 * 4] = {0};
  n = 2;
  rill_tensor *pt = op_harness_make(RILL_DTYPE_FP32, DIMS(2, 4), p);
  OK(rill_tensor_set_lod(pt, 1, (const uint64_t *const[]){(const uint64_t[]){0, 2}}, &n));
  h = harness("box_coder");
  OK(op_harness_input(h, "PriorBox", "prior", pt));
  op_harness_free_tensor(pt);
  bind_input(h, "TargetBox", "deltas", RILL_DTYPE_FP32, DIMS(2, 3, 4), d);
  OK(op_harness_output(h, "OutputBox", "dec"));
  OK(op_harness_attr_string(h, "code_type", "decode_center_size"));
  OK(op_harness_attr_int(h, "axis", 1));
  OK(op_harness_run(h));
  o = op_harness_tensor(h, "dec");
  expect_dims(o, DIMS(2, 3, 4));
  cr_assert_eq(o->lod.nlevels, 1);
  cr_assert(o->lod.levels[0].n == 2 && o->lod.levels[0].offsets[1] == 2);
  /* zero deltas decode to the prior of each row (axis 1: row i uses prior i) */
  const float *op = rill_tensor_ptr(o);
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++) expect_close_f32(op + (i * 3 + j) * 4, p + i * 4, 4, 1e-6f);
  op_harness_destroy(h);
}
