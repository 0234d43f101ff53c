/* pool3d and pool3d_grad: output extents (explicit, asymmetric, SAME, VALID, ceil_mode,
 * global, adaptive), values against a direct reference, gradients against central
 * differences, and errors naming the op and the variable. */
#include <float.h>

#include "op_test.h"
#include "support/grad_check.h"

typedef struct p3 {
  const char *type;
  int32_t k[3], s[3], pads[6];
  int npads;
  bool exclusive, ceil, global, adaptive;
  const char *alg;
} p3;

static void set_attrs(op_harness *h, const p3 *c) {
  OK(op_harness_attr_string(h, "pooling_type", c->type));
  OK(op_harness_attr_ints(h, "ksize", c->k, 3));
  OK(op_harness_attr_ints(h, "strides", c->s, 3));
  if (c->npads == 3)
    OK(op_harness_attr_ints(h, "paddings", (const int32_t[]){c->pads[0], c->pads[2], c->pads[4]}, 3));
  else
    OK(op_harness_attr_ints(h, "paddings", c->pads, 6));
  OK(op_harness_attr_bool(h, "exclusive", c->exclusive));
  OK(op_harness_attr_bool(h, "ceil_mode", c->ceil));
  OK(op_harness_attr_bool(h, "global_pooling", c->global));
  OK(op_harness_attr_bool(h, "adaptive", c->adaptive));
  if (c->alg) OK(op_harness_attr_string(h, "padding_algorithm", c->alg));
}

/* The reference: window bounds per dim written out from Paddle's rules. */
static void ref_window(const p3 *c, int i, int64_t in, int64_t out, int64_t o, const int64_t pb[3],
                       const int64_t k[3], int64_t *lo, int64_t *hi, int64_t *full) {
  if (c->adaptive) {
    *lo = (int64_t)floor((double)o * in / out);
    *hi = (int64_t)ceil((double)(o + 1) * in / out);
    *full = *hi - *lo;
    return;
  }
  int64_t s = c->global ? 1 : c->s[i];
  *lo = o * s - pb[i];
  *hi = *lo + k[i];
  *full = k[i]; /* not exclusive: padding and a ceil_mode overhang past it both counted */
  if (*lo < 0) *lo = 0;
  if (*hi > in) *hi = in;
}

static void run_p3(const p3 *c, int64_t n, int64_t ch, int64_t d, int64_t hh, int64_t w,
                   const int64_t want_out[3]) {
  int64_t in[3] = {d, hh, w}, k[3], pb[3];
  for (int i = 0; i < 3; i++) {
    k[i] = c->global ? in[i] : c->k[i];
    bool valid = c->alg && !strcmp(c->alg, "VALID");
    pb[i] = c->global || c->adaptive || valid ? 0 : c->pads[2 * i];
  }
  if (c->alg && !strcmp(c->alg, "SAME"))
    for (int i = 0; i < 3; i++) {
      int64_t o = (in[i] + c->s[i] - 1) / c->s[i], t = (o - 1) * c->s[i] + k[i] - in[i];
      pb[i] = t > 0 ? t / 2 : 0;
    }
  int64_t nx = n * ch * d * hh * w;
  double *x = malloc((size_t)nx * sizeof *x);
  /* distinct values (a permutation), so that max has no ties */
  for (int64_t i = 0; i < nx; i++) x[i] = (double)((i * 37) % nx) / (double)nx - 0.5;
  op_harness *h = harness("pool3d");
  bind_input(h, "X", "vol", RILL_DTYPE_FP64, DIMS(n, ch, d, hh, w), x);
  OK(op_harness_output(h, "Out", "pooled"));
  set_attrs(h, c);
  OK(op_harness_run(h));
  rill_tensor *t = op_harness_tensor(h, "pooled");
  expect_dims(t, DIMS(n, ch, want_out[0], want_out[1], want_out[2]));
  const double *y = rill_tensor_ptr(t);
  bool max = !strcmp(c->type, "max");
  /* avg's X@GRAD for Out@GRAD dy: each window's dy / divisor added to its elements */
  int64_t ny = n * ch * want_out[0] * want_out[1] * want_out[2];
  double *dy = malloc((size_t)ny * sizeof *dy), *want_dx = calloc((size_t)nx, sizeof *want_dx);
  for (int64_t i = 0; i < ny; i++) dy[i] = sin(0.7 * (double)i) + 0.2;
  for (int64_t p = 0; p < n * ch; p++)
    for (int64_t a = 0; a < want_out[0]; a++)
      for (int64_t b = 0; b < want_out[1]; b++)
        for (int64_t e = 0; e < want_out[2]; e++) {
          int64_t lo[3], hi[3], full[3], o[3] = {a, b, e};
          for (int i = 0; i < 3; i++) ref_window(c, i, in[i], want_out[i], o[i], pb, k, &lo[i], &hi[i], &full[i]);
          double v = max ? -DBL_MAX : 0;
          for (int64_t i = lo[0]; i < hi[0]; i++)
            for (int64_t j = lo[1]; j < hi[1]; j++)
              for (int64_t l = lo[2]; l < hi[2]; l++) {
                double xv = x[((p * d + i) * hh + j) * w + l];
                v = max ? (xv > v ? xv : v) : v + xv;
              }
          int64_t at = (((p * want_out[0]) + a) * want_out[1] + b) * want_out[2] + e;
          if (!max) {
            int64_t div = c->exclusive || c->adaptive
                              ? (hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2])
                              : full[0] * full[1] * full[2];
            v /= (double)div;
            for (int64_t i = lo[0]; i < hi[0]; i++)
              for (int64_t j = lo[1]; j < hi[1]; j++)
                for (int64_t l = lo[2]; l < hi[2]; l++)
                  want_dx[((p * d + i) * hh + j) * w + l] += dy[at] / (double)div;
          }
          double got = y[at];
          cr_assert(fabs(got - v) <= 1e-12, "%s [%ld %ld %ld %ld]: %g != %g", c->type, (long)p,
                    (long)a, (long)b, (long)e, got, v);
        }
  if (!max) {
    op_harness *g = harness("pool3d_grad");
    bind_input(g, "X", "vol", RILL_DTYPE_FP64, DIMS(n, ch, d, hh, w), x);
    bind_input(g, "Out", "pooled", RILL_DTYPE_FP64, DIMS(n, ch, want_out[0], want_out[1], want_out[2]), y);
    bind_input(g, "Out@GRAD", "pooled@GRAD", RILL_DTYPE_FP64,
               DIMS(n, ch, want_out[0], want_out[1], want_out[2]), dy);
    OK(op_harness_output(g, "X@GRAD", "vol@GRAD"));
    set_attrs(g, c);
    OK(op_harness_run(g));
    const double *dx = rill_tensor_ptr(op_harness_tensor(g, "vol@GRAD"));
    for (int64_t i = 0; i < nx; i++)
      cr_assert(fabs(dx[i] - want_dx[i]) <= 1e-12, "avg X@GRAD[%ld]: %g != %g", (long)i, dx[i],
                want_dx[i]);
    op_harness_destroy(g);
  }
  free(dy);
  free(want_dx);
  op_harness_destroy(h);

  /* the gradient, on the same inputs (max: no ties; avg: linear) */
  h = harness("pool3d");
  bind_input(h, "X", "vol", RILL_DTYPE_FP64, DIMS(n, ch, d, hh, w), x);
  OK(op_harness_output(h, "Out", "pooled"));
  set_attrs(h, c);
  rill_status *st = grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), NULL);
  cr_assert_null(st, "%s: %s", c->type, rill_status_message(st));
  op_harness_destroy(h);
  free(x);
}

Test(pool3d, values_and_gradients) {
  /* 2x2x2 stride 2 */
  run_p3(&(p3){"max", {2, 2, 2}, {2, 2, 2}, {0}, 3, true, false, false, false, NULL}, 2, 2, 4, 4, 6,
         (const int64_t[]){2, 2, 3});
  run_p3(&(p3){"avg", {2, 2, 2}, {2, 2, 2}, {0}, 3, true, false, false, false, NULL}, 1, 2, 4, 5, 4,
         (const int64_t[]){2, 2, 2});
  /* padding, exclusive and not */
  run_p3(&(p3){"avg", {3, 3, 2}, {1, 2, 2}, {1, 1, 1, 1, 0, 0}, 3, true, false, false, false, NULL},
         1, 2, 3, 5, 4, (const int64_t[]){3, 3, 2});
  run_p3(&(p3){"avg", {3, 3, 2}, {1, 2, 2}, {1, 1, 1, 1, 0, 0}, 3, false, false, false, false, NULL},
         1, 2, 3, 5, 4, (const int64_t[]){3, 3, 2});
  /* asymmetric paddings with ceil_mode: the last windows overhang */
  run_p3(&(p3){"avg", {2, 3, 2}, {2, 2, 3}, {1, 0, 1, 0, 0, 1}, 6, false, true, false, false, NULL},
         1, 1, 4, 5, 7, (const int64_t[]){3, 3, 3});
  run_p3(&(p3){"max", {2, 3, 2}, {2, 2, 3}, {1, 0, 1, 0, 0, 1}, 6, true, true, false, false, NULL},
         1, 2, 4, 5, 7, (const int64_t[]){3, 3, 3});
  /* ceil_mode, not exclusive, the last windows past the padding in every dim */
  run_p3(&(p3){"avg", {3, 3, 3}, {2, 2, 2}, {1, 1, 1, 1, 1, 1}, 3, false, true, false, false, NULL},
         1, 2, 5, 6, 7, (const int64_t[]){3, 4, 4});
  /* more padding after than before, not exclusive */
  run_p3(&(p3){"avg", {2, 3, 3}, {2, 2, 2}, {1, 0, 0, 2, 1, 1}, 6, false, true, false, false, NULL},
         1, 2, 4, 5, 6, (const int64_t[]){3, 3, 4});
  run_p3(&(p3){"avg", {3, 4, 4}, {3, 3, 3}, {0}, 3, false, false, false, false, "SAME"}, 1, 1, 5,
         6, 7, (const int64_t[]){2, 2, 3});
  /* SAME and VALID */
  run_p3(&(p3){"max", {3, 2, 3}, {2, 2, 2}, {5, 5, 5, 5, 5, 5}, 3, true, false, false, false, "SAME"},
         1, 2, 5, 4, 5, (const int64_t[]){3, 2, 3});
  run_p3(&(p3){"avg", {2, 2, 2}, {1, 2, 1}, {3, 3, 3, 3, 3, 3}, 3, true, false, false, false, "VALID"},
         1, 1, 3, 4, 3, (const int64_t[]){2, 2, 2});
  /* global (ksize and paddings ignored) and adaptive (ksize is the output) */
  run_p3(&(p3){"avg", {1, 1, 1}, {1, 1, 1}, {1, 1, 1, 1, 1, 1}, 3, true, false, true, false, NULL},
         2, 3, 3, 2, 4, (const int64_t[]){1, 1, 1});
  run_p3(&(p3){"max", {2, 3, 2}, {1, 1, 1}, {1, 1, 1, 1, 1, 1}, 3, true, false, false, true, NULL},
         1, 2, 5, 7, 3, (const int64_t[]){2, 3, 2});
  run_p3(&(p3){"avg", {3, 2, 4}, {1, 1, 1}, {0}, 3, true, false, false, true, NULL}, 1, 2, 7, 5, 9,
         (const int64_t[]){3, 2, 4});
}

Test(pool3d, float32_matches_float64) {
  float xf[2 * 3 * 4 * 5];
  for (int i = 0; i < 120; i++) xf[i] = (float)sin(i * 0.7);
  op_harness *h = harness("pool3d");
  bind_input(h, "X", "v32", RILL_DTYPE_FP32, DIMS(1, 2, 3, 4, 5), xf);
  OK(op_harness_output(h, "Out", "o"));
  set_attrs(h, &(p3){"avg", {2, 2, 2}, {1, 1, 1}, {0}, 3, true, false, false, false, NULL});
  OK(op_harness_run(h));
  rill_tensor *t = op_harness_tensor(h, "o");
  expect_dims(t, DIMS(1, 2, 2, 3, 4));
  const float *y = rill_tensor_ptr(t);
  double want = 0;
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++)
      for (int l = 0; l < 2; l++) want += xf[(i * 4 + j) * 5 + l];
  cr_assert(fabs(y[0] - want / 8) < 1e-6, "%g vs %g", (double)y[0], want / 8);
  op_harness_destroy(h);
}

Test(pool3d, bad_inputs_fail_naming_op_and_variable) {
  op_harness *h = harness("pool3d");
  bind_input(h, "X", "img4d", RILL_DTYPE_FP32, DIMS(1, 2, 4, 4), NULL);
  OK(op_harness_output(h, "Out", "o"));
  set_attrs(h, &(p3){"max", {2, 2, 2}, {1, 1, 1}, {0}, 3, true, false, false, false, NULL});
  EXPECT_ERROR(op_harness_run(h), "pool3d", "img4d", "5-D");
  op_harness_destroy(h);

  h = harness("pool3d");
  bind_input(h, "X", "tiny", RILL_DTYPE_FP32, DIMS(1, 2, 1, 4, 4), NULL);
  OK(op_harness_output(h, "Out", "o"));
  set_attrs(h, &(p3){"max", {2, 2, 2}, {1, 1, 1}, {0}, 3, true, false, false, false, NULL});
  EXPECT_ERROR(op_harness_run(h), "pool3d", "tiny", "smaller than the window");
  op_harness_destroy(h);

  h = harness("pool3d");
  bind_input(h, "X", "vol", RILL_DTYPE_FP32, DIMS(1, 2, 4, 4, 4), NULL);
  OK(op_harness_output(h, "Out", "o"));
  set_attrs(h, &(p3){"sum", {2, 2, 2}, {1, 1, 1}, {0}, 3, true, false, false, false, NULL});
  EXPECT_ERROR(op_harness_run(h), "pool3d", "vol", "pooling_type");
  op_harness_destroy(h);

  h = harness("pool3d_grad");
  bind_input(h, "X", "vol", RILL_DTYPE_FP32, DIMS(1, 2, 4, 4, 4), NULL);
  bind_input(h, "Out", "o", RILL_DTYPE_FP32, DIMS(1, 2, 2, 2, 2), NULL);
  bind_input(h, "Out@GRAD", "o@GRAD", RILL_DTYPE_FP32, DIMS(1, 2, 3, 3, 3), NULL);
  OK(op_harness_output(h, "X@GRAD", "vol@GRAD"));
  set_attrs(h, &(p3){"max", {2, 2, 2}, {2, 2, 2}, {0}, 3, true, false, false, false, NULL});
  EXPECT_ERROR(op_harness_run(h), "pool3d_grad", "o@GRAD", "[1, 2, 2, 2, 2]");
  op_harness_destroy(h);
}

/* [N, C, D, H, W] -> [N, D, H, W, C] */
static void to_last(const double *a, double *b, const int64_t s[5]) {
  int64_t vol = s[2] * s[3] * s[4];
  for (int64_t n = 0; n < s[0]; n++)
    for (int64_t c = 0; c < s[1]; c++)
      for (int64_t v = 0; v < vol; v++) b[(n * vol + v) * s[1] + c] = a[(n * s[1] + c) * vol + v];
}

/* Runs pool3d then pool3d_grad in one layout; returns Out and X@GRAD (caller frees). */
static void run_layout(const p3 *c, bool last, const double *x, const int64_t *xd, size_t xn,
                       const double *dy, int64_t ny, double **out, double **dx) {
  op_harness *h = harness("pool3d");
  bind_input(h, "X", "vol", RILL_DTYPE_FP64, xd, xn, x);
  OK(op_harness_output(h, "Out", "pooled"));
  set_attrs(h, c);
  if (last) OK(op_harness_attr_string(h, "data_format", "NDHWC"));
  OK(op_harness_run(h));
  rill_tensor *t = op_harness_tensor(h, "pooled");
  cr_assert_eq(rill_tensor_numel(t), ny);
  rill_dims od = t->dims;
  *out = malloc((size_t)ny * sizeof **out);
  memcpy(*out, rill_tensor_ptr(t), (size_t)ny * sizeof **out);
  op_harness_destroy(h);

  h = harness("pool3d_grad");
  bind_input(h, "X", "vol", RILL_DTYPE_FP64, xd, xn, x);
  bind_input(h, "Out", "pooled", RILL_DTYPE_FP64, od.d, (size_t)od.n, *out);
  bind_input(h, "Out@GRAD", "pooled@GRAD", RILL_DTYPE_FP64, od.d, (size_t)od.n, dy);
  OK(op_harness_output(h, "X@GRAD", "vol@GRAD"));
  set_attrs(h, c);
  if (last) OK(op_harness_attr_string(h, "data_format", "NDHWC"));
  OK(op_harness_run(h));
  t = op_harness_tensor(h, "vol@GRAD");
  int64_t nx = rill_tensor_numel(t);
  *dx = malloc((size_t)nx * sizeof **dx);
  memcpy(*dx, rill_tensor_ptr(t), (size_t)nx * sizeof **dx);
  op_harness_destroy(h);
}

/* NDHWC equals NCDHW on transposed data: Out, X@GRAD, and the output dims' order. */
static void check_last(const p3 *c, int64_t n, int64_t ch, int64_t d, int64_t hh, int64_t w,
                       const int64_t o[3]) {
  int64_t xs[5] = {n, ch, d, hh, w}, ys[5] = {n, ch, o[0], o[1], o[2]};
  int64_t nx = n * ch * d * hh * w, ny = n * ch * o[0] * o[1] * o[2];
  double *x = malloc((size_t)nx * sizeof *x), *xt = malloc((size_t)nx * sizeof *x);
  double *dy = malloc((size_t)ny * sizeof *dy), *dyt = malloc((size_t)ny * sizeof *dy);
  for (int64_t i = 0; i < nx; i++) x[i] = (double)((i * 37) % nx) / (double)nx - 0.5;
  for (int64_t i = 0; i < ny; i++) dy[i] = sin(0.3 * (double)i) + 0.1;
  to_last(x, xt, xs);
  to_last(dy, dyt, ys);
  double *y0, *dx0, *y1, *dx1;
  run_layout(c, false, x, DIMS(n, ch, d, hh, w), dy, ny, &y0, &dx0);
  run_layout(c, true, xt, DIMS(n, d, hh, w, ch), dyt, ny, &y1, &dx1);
  double *y0t = malloc((size_t)ny * sizeof *y0t), *dx0t = malloc((size_t)nx * sizeof *dx0t);
  to_last(y0, y0t, ys);
  to_last(dx0, dx0t, xs);
  for (int64_t i = 0; i < ny; i++)
    cr_assert(fabs(y1[i] - y0t[i]) <= 1e-12, "%s Out[%ld]: %g != %g", c->type, (long)i, y1[i],
              y0t[i]);
  for (int64_t i = 0; i < nx; i++)
    cr_assert(fabs(dx1[i] - dx0t[i]) <= 1e-12, "%s X@GRAD[%ld]: %g != %g", c->type, (long)i,
              dx1[i], dx0t[i]);

  /* and the channel-last gradient against central differences */
  op_harness *h = harness("pool3d");
  bind_input(h, "X", "vol", RILL_DTYPE_FP64, DIMS(n, d, hh, w, ch), xt);
  OK(op_harness_output(h, "Out", "pooled"));
  set_attrs(h, c);
  OK(op_harness_attr_string(h, "data_format", "NDHWC"));
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "pooled"), DIMS(n, o[0], o[1], o[2], ch));
  op_harness_destroy(h);
  h = harness("pool3d");
  bind_input(h, "X", "vol", RILL_DTYPE_FP64, DIMS(n, d, hh, w, ch), xt);
  OK(op_harness_output(h, "Out", "pooled"));
  set_attrs(h, c);
  OK(op_harness_attr_string(h, "data_format", "NDHWC"));
  rill_status *st = grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), NULL);
  cr_assert_null(st, "%s NDHWC: %s", c->type, rill_status_message(st));
  op_harness_destroy(h);
  double *bufs[] = {x, xt, dy, dyt, y0, dx0, y1, dx1, y0t, dx0t};
  for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) free(bufs[i]);
}

Test(pool3d, ndhwc_matches_ncdhw_on_transposed_data) {
  check_last(&(p3){"max", {2, 2, 2}, {2, 2, 2}, {0}, 3, true, false, false, false, NULL}, 2, 3, 4, 4, 6,
             (const int64_t[]){2, 2, 3});
  check_last(&(p3){"avg", {3, 3, 2}, {1, 2, 2}, {1, 1, 1, 1, 0, 0}, 3, false, false, false, false, NULL},
             1, 2, 3, 5, 4, (const int64_t[]){3, 3, 2});
  check_last(&(p3){"max", {2, 3, 2}, {2, 2, 3}, {1, 0, 1, 0, 0, 1}, 6, true, true, false, false, NULL},
             1, 3, 4, 5, 7, (const int64_t[]){3, 3, 3});
  check_last(&(p3){"avg", {3, 3, 3}, {2, 2, 2}, {1, 1, 1, 1, 1, 1}, 3, false, true, false, false, NULL},
             1, 2, 5, 6, 7, (const int64_t[]){3, 4, 4});
  check_last(&(p3){"avg", {2, 2, 2}, {1, 2, 1}, {3, 3, 3, 3, 3, 3}, 3, true, false, false, false, "VALID"},
             1, 2, 3, 4, 3, (const int64_t[]){2, 2, 2});
  check_last(&(p3){"max", {3, 2, 3}, {2, 2, 2}, {5, 5, 5, 5, 5, 5}, 3, true, false, false, false, "SAME"},
             1, 2, 5, 4, 5, (const int64_t[]){3, 2, 3});
  check_last(&(p3){"avg", {1, 1, 1}, {1, 1, 1}, {0}, 3, true, false, true, false, NULL}, 2, 3, 3, 2, 4,
             (const int64_t[]){1, 1, 1});
  check_last(&(p3){"avg", {3, 2, 4}, {1, 1, 1}, {0}, 3, true, false, false, true, NULL}, 1, 2, 7, 5, 9,
             (const int64_t[]){3, 2, 4});
}

Test(pool3d, ndhwc_errors_name_op_variable_and_layout) {
  op_harness *h = harness("pool3d");
  bind_input(h, "X", "img4d", RILL_DTYPE_FP32, DIMS(1, 4, 4, 2), NULL);
  OK(op_harness_output(h, "Out", "o"));
  set_attrs(h, &(p3){"max", {2, 2, 2}, {1, 1, 1}, {0}, 3, true, false, false, false, NULL});
  OK(op_harness_attr_string(h, "data_format", "NDHWC"));
  EXPECT_ERROR(op_harness_run(h), "pool3d", "img4d", "NDHWC");
  op_harness_destroy(h);

  h = harness("pool3d");
  bind_input(h, "X", "vol", RILL_DTYPE_FP32, DIMS(1, 4, 4, 4, 2), NULL);
  OK(op_harness_output(h, "Out", "o"));
  set_attrs(h, &(p3){"max", {2, 2, 2}, {1, 1, 1}, {0}, 3, true, false, false, false, NULL});
  OK(op_harness_attr_string(h, "data_format", "NHWDC"));
  EXPECT_ERROR(op_harness_run(h), "pool3d", "vol", "data_format");
  op_harness_destroy(h);
}
