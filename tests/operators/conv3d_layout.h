/* conv3d / conv3d_transpose in NDHWC against the same op in NCDHW on transposed data:
 * the forward, and Input@GRAD and Filter@GRAD from the gradient op, in float32 or
 * float64 (header-only, included by the conv3d test files). */
#ifndef RILL_TESTS_OPERATORS_CONV3D_LAYOUT_H
#define RILL_TESTS_OPERATORS_CONV3D_LAYOUT_H

#include <stdio.h>
#include <stdlib.h>

#include "op_test.h"

typedef struct layout_case {
  int64_t x[5]; /* Input, NCDHW */
  int64_t f[5]; /* Filter (the same in both layouts) */
  int groups;
  int32_t s[3], dil[3], pads[6];
  int npads;             /* 3 or 6 */
  int32_t out_size[3];   /* conv3d_transpose's output_size; {0} for none */
  const char *alg;       /* padding_algorithm, NULL for EXPLICIT */
  const char *last;      /* the channel-last data_format: "NDHWC" (or "NHWC") */
} layout_case;

/* dst [n, vol, c] from src [n, c, vol] (to_last) or the reverse. */
static inline void layout_swap(const double *src, double *dst, const int64_t *cf, bool to_last) {
  int64_t n = cf[0], c = cf[1], vol = cf[2] * cf[3] * cf[4];
  for (int64_t i = 0; i < n; i++)
    for (int64_t ch = 0; ch < c; ch++)
      for (int64_t v = 0; v < vol; v++) {
        int64_t first = (i * c + ch) * vol + v, last = (i * vol + v) * c + ch;
        if (to_last) dst[last] = src[first];
        else dst[first] = src[last];
      }
}

static inline void layout_last_dims(const int64_t *cf, int64_t *cl) {
  cl[0] = cf[0], cl[1] = cf[2], cl[2] = cf[3], cl[3] = cf[4], cl[4] = cf[1];
}

/* A tensor's values as doubles (a fresh array). */
static inline double *layout_values(const rill_tensor *t) {
  int64_t n = rill_tensor_numel(t);
  double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
  for (int64_t i = 0; i < n; i++)
    v[i] = t->dtype == RILL_DTYPE_FP32 ? ((const float *)rill_tensor_ptr(t))[i]
                                       : ((const double *)rill_tensor_ptr(t))[i];
  return v;
}

static inline void layout_bind(op_harness *h, const char *slot, const char *name, rill_dtype dt,
                               const int64_t *dims, const double *v) {
  int64_t n = numel_of(dims, 5);
  if (dt == RILL_DTYPE_FP64) {
    bind_input(h, slot, name, dt, dims, 5, v);
    return;
  }
  float *f = malloc((size_t)n * sizeof *f);
  for (int64_t i = 0; i < n; i++) f[i] = (float)v[i];
  bind_input(h, slot, name, dt, dims, 5, f);
  free(f);
}

static inline void layout_attrs(op_harness *h, const layout_case *c, bool last) {
  OK(op_harness_attr_ints(h, "strides", c->s, 3));
  OK(op_harness_attr_ints(h, "dilations", c->dil, 3));
  OK(op_harness_attr_ints(h, "paddings", c->pads, c->npads));
  OK(op_harness_attr_int(h, "groups", c->groups));
  if (c->alg) OK(op_harness_attr_string(h, "padding_algorithm", c->alg));
  if (c->out_size[0]) OK(op_harness_attr_ints(h, "output_size", c->out_size, 3));
  OK(op_harness_attr_string(h, "data_format", last ? c->last : "NCDHW"));
}

static inline void layout_expect(const char *what, const double *got, const double *want, int64_t n,
                                 rill_dtype dt) {
  double tol = dt == RILL_DTYPE_FP32 ? 1e-5 : 1e-12;
  for (int64_t i = 0; i < n; i++)
    cr_assert(fabs(got[i] - want[i]) <= tol * (1 + fabs(want[i])), "%s [%lld]: %.9g vs %.9g", what,
              (long long)i, got[i], want[i]);
}

/* A harness on float32 shapes alone (no data) for the error checks: op's Input `in`
 * [x] and Filter "w" [f]; with dy, op is a gradient op given Output@GRAD `out`@GRAD
 * [dy] and asked for Input@GRAD `in`@GRAD, else it is asked for Output `out`;
 * data_format fmt unless NULL. */
static inline op_harness *layout_shape_harness(const char *op, const char *fmt, const char *in,
                                               const int64_t *x, size_t nx, const int64_t *f,
                                               const char *out, const int64_t *dy) {
  char name[64];
  op_harness *h = harness(op);
  bind_input(h, "Input", in, RILL_DTYPE_FP32, x, nx, NULL);
  bind_input(h, "Filter", "w", RILL_DTYPE_FP32, f, 5, NULL);
  if (dy) {
    snprintf(name, sizeof name, "%s@GRAD", out);
    bind_input(h, "Output@GRAD", name, RILL_DTYPE_FP32, dy, 5, NULL);
    snprintf(name, sizeof name, "%s@GRAD", in);
    OK(op_harness_output(h, "Input@GRAD", name));
  } else {
    OK(op_harness_output(h, "Output", out));
  }
  if (fmt) OK(op_harness_attr_string(h, "data_format", fmt));
  return h;
}

/* Five dims, for Filter and Output@GRAD. */
#define DIMS5(...) ((const int64_t[5]){__VA_ARGS__})

/* Runs op (conv3d or conv3d_transpose) and its gradient op in both layouts and compares. */
static inline void layout_check(const char *op, rill_dtype dt, const layout_case *c) {
  int64_t nx = numel_of(c->x, 5), nf = numel_of(c->f, 5), xl[5];
  layout_last_dims(c->x, xl);
  double *x = malloc((size_t)nx * sizeof *x), *xt = malloc((size_t)nx * sizeof *xt);
  double *f = malloc((size_t)nf * sizeof *f);
  for (int64_t i = 0; i < nx; i++) x[i] = sin((double)i * 0.37) + 0.1;
  for (int64_t i = 0; i < nf; i++) f[i] = cos((double)i * 0.53) * 0.5;
  layout_swap(x, xt, c->x, true);

  /* the forward */
  int64_t od[5], ol[5];
  double *y[2];
  for (int last = 0; last < 2; last++) {
    op_harness *h = harness(op);
    layout_bind(h, "Input", "vol", dt, last ? xl : c->x, last ? xt : x);
    layout_bind(h, "Filter", "w", dt, c->f, f);
    OK(op_harness_output(h, "Output", "out"));
    layout_attrs(h, c, last);
    OK(op_harness_run(h));
    rill_tensor *t = op_harness_tensor(h, "out");
    cr_assert_eq(t->dims.n, 5);
    if (!last) {
      memcpy(od, t->dims.d, sizeof od);
      layout_last_dims(od, ol);
    }
    expect_dims(t, last ? ol : od, 5);
    y[last] = layout_values(t);
    op_harness_destroy(h);
  }
  int64_t ny = numel_of(od, 5);
  double *yt = malloc((size_t)ny * sizeof *yt);
  layout_swap(y[0], yt, od, true);
  layout_expect("Output", y[1], yt, ny, dt);

  /* the gradients, from the same Output@GRAD in either layout */
  double *dy = malloc((size_t)ny * sizeof *dy), *dyt = malloc((size_t)ny * sizeof *dyt);
  for (int64_t i = 0; i < ny; i++) dy[i] = sin((double)i * 0.11 + 0.5);
  layout_swap(dy, dyt, od, true);
  char gop[64];
  snprintf(gop, sizeof gop, "%s_grad", op);
  double *dx[2], *df[2];
  for (int last = 0; last < 2; last++) {
    op_harness *h = harness(gop);
    layout_bind(h, "Input", "vol", dt, last ? xl : c->x, last ? xt : x);
    layout_bind(h, "Filter", "w", dt, c->f, f);
    layout_bind(h, "Output@GRAD", "out@GRAD", dt, last ? ol : od, last ? dyt : dy);
    OK(op_harness_output(h, "Input@GRAD", "vol@GRAD"));
    OK(op_harness_output(h, "Filter@GRAD", "w@GRAD"));
    layout_attrs(h, c, last);
    OK(op_harness_run(h));
    expect_dims(op_harness_tensor(h, "vol@GRAD"), last ? xl : c->x, 5);
    expect_dims(op_harness_tensor(h, "w@GRAD"), c->f, 5);
    dx[last] = layout_values(op_harness_tensor(h, "vol@GRAD"));
    df[last] = layout_values(op_harness_tensor(h, "w@GRAD"));
    op_harness_destroy(h);
  }
  layout_swap(dx[0], xt, c->x, true);
  layout_expect("Input@GRAD", dx[1], xt, nx, dt);
  layout_expect("Filter@GRAD", df[1], df[0], nf, dt);
  /* the gradients are not all zero: the comparison has something to compare */
  double sum = 0;
  for (int64_t i = 0; i < nx; i++) sum += fabs(dx[0][i]);
  cr_assert(sum > 0, "Input@GRAD is zero");
  free(x), free(xt), free(f), free(y[0]), free(y[1]), free(yt), free(dy), free(dyt);
  free(dx[0]), free(dx[1]), free(df[0]), free(df[1]);
}

/* layout_check for each of the n cases, in float32 and float64. */
static inline void layout_check_cases(const char *op, const layout_case *cases, size_t n) {
  for (size_t i = 0; i < n; i++) {
    layout_check(op, RILL_DTYPE_FP32, &cases[i]);
    layout_check(op, RILL_DTYPE_FP64, &cases[i]);
  }
}

#endif
