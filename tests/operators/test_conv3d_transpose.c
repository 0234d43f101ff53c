/* conv3d_transpose: output extents (paddings, output_size, SAME), the adjoint identity
 * <conv3d(v), u> = <v, conv3d_transpose(u)> with the same filter and attributes, the
 * gradients against central differences, errors naming the op and variables, and NDHWC
 * against NCDHW on transposed data. */
#include "conv3d_layout.h"
#include "op_test.h"
#include "support/grad_check.h"

typedef struct ct {
  int64_t n, cin, d, h, w, m, kd, kh, kw;
  int groups;
  int32_t s[3], dil[3], pads[6];
  int npads;
  const char *alg;
  int64_t out[3]; /* the transposed output extents expected */
} ct;

static void set_attrs(op_harness *h, const ct *c) {
  OK(op_harness_attr_ints(h, "strides", c->s, 3));
  OK(op_harness_attr_ints(h, "dilations", c->dil, 3));
  OK(op_harness_attr_ints(h, "paddings", c->pads, c->npads));
  OK(op_harness_attr_int(h, "groups", c->groups));
  if (c->alg) OK(op_harness_attr_string(h, "padding_algorithm", c->alg));
}

static void run_ct(const ct *c) {
  int64_t cg = c->m / c->groups;
  int64_t nu = c->n * c->cin * c->d * c->h * c->w, nf = c->cin * cg * c->kd * c->kh * c->kw;
  int64_t nv = c->n * c->m * c->out[0] * c->out[1] * c->out[2];
  double *u = malloc((size_t)nu * sizeof *u), *f = malloc((size_t)nf * sizeof *f);
  double *v = malloc((size_t)nv * sizeof *v);
  for (int64_t i = 0; i < nu; i++) u[i] = sin((double)i * 0.41) + 0.05;
  for (int64_t i = 0; i < nf; i++) f[i] = cos((double)i * 0.29) * 0.5;
  for (int64_t i = 0; i < nv; i++) v[i] = sin((double)i * 0.13 + 1.0);

  op_harness *h = harness("conv3d_transpose");
  bind_input(h, "Input", "u", RILL_DTYPE_FP64, DIMS(c->n, c->cin, c->d, c->h, c->w), u);
  bind_input(h, "Filter", "w", RILL_DTYPE_FP64, DIMS(c->cin, cg, c->kd, c->kh, c->kw), f);
  OK(op_harness_output(h, "Output", "t"));
  set_attrs(h, c);
  OK(op_harness_run(h));
  rill_tensor *t = op_harness_tensor(h, "t");
  expect_dims(t, DIMS(c->n, c->m, c->out[0], c->out[1], c->out[2]));
  const double *tp = rill_tensor_ptr(t);
  double lhs = 0;
  for (int64_t i = 0; i < nv; i++) lhs += tp[i] * v[i];
  op_harness_destroy(h);

  /* the conv3d with the same filter maps v back to u's shape */
  h = harness("conv3d");
  bind_input(h, "Input", "v", RILL_DTYPE_FP64, DIMS(c->n, c->m, c->out[0], c->out[1], c->out[2]), v);
  bind_input(h, "Filter", "w", RILL_DTYPE_FP64, DIMS(c->cin, cg, c->kd, c->kh, c->kw), f);
  OK(op_harness_output(h, "Output", "cv"));
  set_attrs(h, c);
  OK(op_harness_run(h));
  rill_tensor *cv = op_harness_tensor(h, "cv");
  expect_dims(cv, DIMS(c->n, c->cin, c->d, c->h, c->w));
  const double *cp = rill_tensor_ptr(cv);
  double rhs = 0;
  for (int64_t i = 0; i < nu; i++) rhs += cp[i] * u[i];
  cr_assert(fabs(lhs - rhs) <= 1e-9 * (1 + fabs(lhs)), "adjoint: %.12g vs %.12g", lhs, rhs);
  op_harness_destroy(h);

  h = harness("conv3d_transpose");
  bind_input(h, "Input", "u", RILL_DTYPE_FP64, DIMS(c->n, c->cin, c->d, c->h, c->w), u);
  bind_input(h, "Filter", "w", RILL_DTYPE_FP64, DIMS(c->cin, cg, c->kd, c->kh, c->kw), f);
  OK(op_harness_output(h, "Output", "t"));
  set_attrs(h, c);
  rill_status *st = grad_check(h, GC_SLOTS("Input", "Filter"), GC_SLOTS("Output"), NULL);
  cr_assert_null(st, "%s", rill_status_message(st));
  op_harness_destroy(h);
  free(u), free(f), free(v);
}

Test(conv3d_transpose, adjoint_and_gradients) {
  /* 3x3x3 stride 2 padding 1: out = (in - 1) * 2 - 2 + 3 */
  run_ct(&(ct){1, 2, 2, 3, 2, 3, 3, 3, 3, 1, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, 3, NULL, {3, 5, 3}});
  /* groups, asymmetric paddings, dilation */
  run_ct(&(ct){2, 4, 2, 2, 3, 2, 2, 3, 2, 2, {1, 2, 1}, {2, 1, 1}, {0, 1, 1, 0, 0, 1}, 6, NULL,
               {3, 4, 3}});
  /* SAME: the paddings a conv of the Input's extents would take */
  run_ct(&(ct){1, 2, 3, 2, 3, 2, 3, 2, 3, 1, {2, 2, 1}, {1, 1, 1}, {0, 0, 0}, 3, "SAME",
               {5, 4, 3}});
}

Test(conv3d_transpose, output_size_and_errors) {
  op_harness *h = harness("conv3d_transpose");
  bind_input(h, "Input", "u", RILL_DTYPE_FP32, DIMS(1, 2, 3, 3, 3), NULL);
  bind_input(h, "Filter", "w", RILL_DTYPE_FP32, DIMS(2, 4, 3, 3, 3), NULL);
  OK(op_harness_output(h, "Output", "t"));
  OK(op_harness_attr_ints(h, "strides", (const int32_t[]){2, 2, 2}, 3));
  OK(op_harness_attr_ints(h, "output_size", (const int32_t[]){7, 8, 7}, 3));
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "t"), DIMS(1, 4, 7, 8, 7));
  op_harness_destroy(h);

  h = harness("conv3d_transpose");
  bind_input(h, "Input", "u", RILL_DTYPE_FP32, DIMS(1, 2, 3, 3, 3), NULL);
  bind_input(h, "Filter", "w", RILL_DTYPE_FP32, DIMS(2, 4, 3, 3, 3), NULL);
  OK(op_harness_output(h, "Output", "t"));
  OK(op_harness_attr_ints(h, "strides", (const int32_t[]){2, 2, 2}, 3));
  OK(op_harness_attr_ints(h, "output_size", (const int32_t[]){9, 7, 7}, 3));
  EXPECT_ERROR(op_harness_run(h), "conv3d_transpose", "u", "w", "output_size");
  op_harness_destroy(h);

  h = harness("conv3d_transpose");
  bind_input(h, "Input", "u", RILL_DTYPE_FP32, DIMS(1, 3, 3, 3, 3), NULL);
  bind_input(h, "Filter", "w", RILL_DTYPE_FP32, DIMS(2, 4, 3, 3, 3), NULL);
  OK(op_harness_output(h, "Output", "t"));
  EXPECT_ERROR(op_harness_run(h), "conv3d_transpose", "u", "w", "dim 0");
  op_harness_destroy(h);

  h = layout_shape_harness("conv3d_transpose_grad", NULL, "u", DIMS(1, 2, 3, 3, 3),
                           DIMS5(2, 4, 3, 3, 3), "t", DIMS5(1, 4, 3, 3, 3));
  EXPECT_ERROR(op_harness_run(h), "conv3d_transpose_grad", "t@GRAD", "[1, 4, 5, 5, 5]");
  op_harness_destroy(h);
}

/* NDHWC: the same numbers as NCDHW, transposed, for the forward and both gradients */
Test(conv3d_transpose, ndhwc_matches_ncdhw) {
  static const layout_case cases[] = {
      /* stride 2, padding 1, output_size above the inferred extents */
      {{1, 2, 2, 3, 2}, {2, 3, 3, 3, 3}, 1, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, 3, {4, 6, 4}, NULL, "NDHWC"},
      /* groups, asymmetric paddings, dilation; the format as Paddle writes it (NHWC) */
      {{2, 4, 2, 2, 3}, {4, 1, 2, 3, 2}, 2, {1, 2, 1}, {2, 1, 1}, {0, 1, 1, 0, 0, 1}, 6, {0}, NULL, "NHWC"},
      /* SAME */
      {{1, 2, 3, 2, 3}, {2, 2, 3, 2, 3}, 1, {2, 2, 1}, {1, 1, 1}, {0, 0, 0}, 3, {0}, "SAME", "NDHWC"},
  };
  layout_check_cases("conv3d_transpose", cases, sizeof cases / sizeof cases[0]);
}

Test(conv3d_transpose, ndhwc_errors_name_op_and_variable) {
  op_harness *h = layout_shape_harness("conv3d_transpose", "NDHWC", "u", DIMS(1, 3, 3, 2),
                                       DIMS5(2, 4, 3, 3, 3), "t", NULL);
  EXPECT_ERROR(op_harness_run(h), "conv3d_transpose", "u", "5-D", "NDHWC");
  op_harness_destroy(h);

  /* the channels are the last dim (3), not Filter's dim 0 (2) */
  h = layout_shape_harness("conv3d_transpose", "NHWC", "u", DIMS(1, 2, 2, 2, 3),
                           DIMS5(2, 4, 3, 3, 3), "t", NULL);
  EXPECT_ERROR(op_harness_run(h), "conv3d_transpose", "u", "w", "dim 0", "NDHWC");
  op_harness_destroy(h);

  h = layout_shape_harness("conv3d_transpose_grad", "NDHWC", "u", DIMS(1, 3, 3, 3, 2),
                           DIMS5(2, 4, 3, 3, 3), "t", DIMS5(1, 4, 5, 5, 5));
  OK(op_harness_attr_ints(h, "strides", (const int32_t[]){2, 2, 2}, 3));
  OK(op_harness_attr_ints(h, "paddings", (const int32_t[]){1, 1, 1}, 3));
  EXPECT_ERROR(op_harness_run(h), "conv3d_transpose_grad", "t@GRAD", "[1, 5, 5, 5, 4]");
  op_harness_destroy(h);
}
