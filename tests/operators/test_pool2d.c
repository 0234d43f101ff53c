/* Positional pool_cfg literals leave the trailing fields zero. */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#include <float.h>

#include "nn_test.h"

typedef struct pool_cfg {
  int64_t n, c, h, w;
  const char *type;
  int64_t kh, kw, sh, sw;
  int npads;
  int32_t pads[4];
  bool global, adaptive, ceil, exclusive_off;
  const char *algo;
} pool_cfg;

static void set_pool_attrs(op_harness *h, const void *arg) {
  const pool_cfg *c = arg;
  OK(op_harness_attr_string(h, "pooling_type", c->type));
  OK(op_harness_attr_ints(h, "ksize", (const int32_t[]){(int32_t)c->kh, (int32_t)c->kw}, 2));
  OK(op_harness_attr_ints(h, "strides", (const int32_t[]){(int32_t)c->sh, (int32_t)c->sw}, 2));
  if (c->npads) OK(op_harness_attr_ints(h, "paddings", c->pads, (size_t)c->npads));
  if (c->global) OK(op_harness_attr_bool(h, "global_pooling", true));
  if (c->adaptive) OK(op_harness_attr_bool(h, "adaptive", true));
  if (c->ceil) OK(op_harness_attr_bool(h, "ceil_mode", true));
  if (c->exclusive_off) OK(op_harness_attr_bool(h, "exclusive", false));
  if (c->algo) OK(op_harness_attr_string(h, "padding_algorithm", c->algo));
}

/* Independent reference: explicit window enumeration. */
static void ref_pool(const pool_cfg *c, const double *x, double *y, int64_t *oh_out, int64_t *ow_out) {
  int64_t p[4] = {0, 0, 0, 0}, k[2] = {c->kh, c->kw}, s[2] = {c->sh, c->sw}, in[2] = {c->h, c->w};
  if (c->npads == 2) {
    p[0] = p[1] = c->pads[0];
    p[2] = p[3] = c->pads[1];
  } else if (c->npads == 4) {
    for (int i = 0; i < 4; i++) p[i] = c->pads[i];
  }
  if (c->algo && !strcmp(c->algo, "SAME"))
    for (int i = 0; i < 2; i++) {
      int64_t o = (in[i] + s[i] - 1) / s[i], t = (o - 1) * s[i] + k[i] - in[i];
      if (t < 0) t = 0;
      p[2 * i] = t / 2;
      p[2 * i + 1] = t - t / 2;
    }
  if ((c->algo && !strcmp(c->algo, "VALID")) || c->global || c->adaptive)
    p[0] = p[1] = p[2] = p[3] = 0;
  if (c->global) {
    k[0] = c->h;
    k[1] = c->w;
  }
  int64_t o[2];
  for (int i = 0; i < 2; i++) {
    if (c->adaptive) {
      o[i] = k[i];
      continue;
    }
    int64_t num = in[i] - k[i] + p[2 * i] + p[2 * i + 1] + (c->ceil ? s[i] - 1 : 0);
    o[i] = num / s[i] + 1;
  }
  *oh_out = o[0];
  *ow_out = o[1];
  for (int64_t pl = 0; pl < c->n * c->c; pl++)
    for (int64_t i = 0; i < o[0]; i++)
      for (int64_t j = 0; j < o[1]; j++) {
        double acc = strcmp(c->type, "max") == 0 ? -DBL_MAX : 0;
        int64_t inside = 0;
        int64_t a0, a1, b0, b1;
        if (c->adaptive) {
          a0 = (int64_t)floor((double)i * c->h / o[0]);
          a1 = (int64_t)ceil((double)(i + 1) * c->h / o[0]);
          b0 = (int64_t)floor((double)j * c->w / o[1]);
          b1 = (int64_t)ceil((double)(j + 1) * c->w / o[1]);
        } else {
          a0 = i * s[0] - p[0];
          a1 = a0 + k[0];
          b0 = j * s[1] - p[2];
          b1 = b0 + k[1];
        }
        for (int64_t a = a0; a < a1; a++)
          for (int64_t b = b0; b < b1; b++) {
            if (a < 0 || a >= c->h || b < 0 || b >= c->w) continue;
            inside++;
            double v = x[(pl * c->h + a) * c->w + b];
            if (strcmp(c->type, "max") == 0)
              acc = v > acc ? v : acc;
            else
              acc += v;
          }
        if (strcmp(c->type, "avg") == 0) {
          /* not exclusive: the whole kernel, however much of it lies in the padding or
           * (ceil_mode) past it */
          int64_t d = c->exclusive_off && !c->adaptive ? k[0] * k[1] : inside;
          acc = d ? acc / (double)d : 0;
        }
        y[(pl * o[0] + i) * o[1] + j] = acc;
      }
}

static void check_pool(const pool_cfg *c) {
  int64_t nx = c->n * c->c * c->h * c->w;
  double *x = calloc((size_t)nx, sizeof *x), *want = malloc((size_t)nx * 4 * sizeof *want);
  fill_rand(x, nx, 11);
  int64_t oh, ow;
  ref_pool(c, x, want, &oh, &ow);
  int64_t ny = c->n * c->c * oh * ow;
  float *xf = to_f32(x, nx), *wantf = to_f32(want, ny);
  for (int dt = 0; dt < 2; dt++) {
    op_harness *h = harness("pool2d");
    bind_input(h, "X", "x", dt ? RILL_DTYPE_FP64 : RILL_DTYPE_FP32, DIMS(c->n, c->c, c->h, c->w),
               dt ? (void *)x : (void *)xf);
    OK(op_harness_output(h, "Out", "y"));
    set_pool_attrs(h, c);
    OK(op_harness_run(h));
    rill_tensor *y = op_harness_tensor(h, "y");
    expect_dims(y, DIMS(c->n, c->c, oh, ow));
    if (dt)
      expect_close_f64(rill_tensor_ptr(y), want, ny, 1e-12);
    else
      expect_close_f32(rill_tensor_ptr(y), wantf, ny, 1e-6f);
    op_harness_destroy(h);
  }
  free(x);
  free(want);
  free(xf);
  free(wantf);
}

#define PCFG(...) (&(pool_cfg){__VA_ARGS__})

Test(pool2d, max_matches_reference) {
  check_pool(PCFG(2, 3, 6, 6, "max", 2, 2, 2, 2));
  check_pool(PCFG(1, 2, 7, 8, "max", 3, 3, 2, 2, 2, {1, 1}));
  check_pool(PCFG(1, 2, 7, 8, "max", 3, 2, 2, 3, 4, {0, 2, 1, 0}));
  check_pool(PCFG(1, 2, 7, 7, "max", 3, 3, 2, 2, 2, {0, 0}, false, false, true));
}

/* 2x2 stride-2 max pooling runs 8 outputs at a time: widths around the vector width,
 * odd extents (the last row and column left out), ceil_mode (the last window clipped:
 * the general loop). */
Test(pool2d, max_2x2_stride_2_matches_reference_at_every_width) {
  for (int64_t w = 2; w <= 40; w += (w < 20 ? 1 : 5))
    check_pool(PCFG(2, 3, 5 + w % 3, w, "max", 2, 2, 2, 2));
  check_pool(PCFG(1, 2, 24, 24, "max", 2, 2, 2, 2, 2, {0, 0}));
  check_pool(PCFG(1, 2, 7, 19, "max", 2, 2, 2, 2, 2, {0, 0}, false, false, true));
}

/* The vectorised 2x2 pooling treats NaN, infinities and ties as the scalar loop does:
 * a NaN tap is skipped (all-NaN windows give -FLT_MAX), ties keep the first tap. */
Test(pool2d, max_2x2_special_values_bit_for_bit) {
  enum { W = 36, H = 2 };
  float x[H * W];
  for (int i = 0; i < H * W; i++) x[i] = (float)((i * 7) % 11) - 5.0f;
  x[0] = NAN, x[3] = INFINITY, x[W + 4] = -INFINITY, x[8] = x[9] = x[W + 8] = x[W + 9] = NAN;
  x[10] = -0.0f, x[11] = 0.0f, x[W + 10] = -0.0f, x[W + 11] = -0.0f;
  x[33] = NAN; /* in the scalar tail */
  op_harness *h = harness("pool2d");
  bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(1, 1, H, W), x);
  OK(op_harness_output(h, "Out", "y"));
  OK(op_harness_attr_string(h, "pooling_type", "max"));
  OK(op_harness_attr_ints(h, "ksize", (const int32_t[]){2, 2}, 2));
  OK(op_harness_attr_ints(h, "strides", (const int32_t[]){2, 2}, 2));
  OK(op_harness_attr_ints(h, "paddings", (const int32_t[]){0, 0}, 2));
  OK(op_harness_run(h));
  const float *y = rill_tensor_ptr(op_harness_tensor(h, "y"));
  for (int j = 0; j < W / 2; j++) {
    float v = -FLT_MAX;
    const float t[4] = {x[2 * j], x[2 * j + 1], x[W + 2 * j], x[W + 2 * j + 1]};
    for (int k = 0; k < 4; k++)
      if (t[k] > v) v = t[k];
    cr_assert(memcmp(&y[j], &v, sizeof v) == 0, "output %d: %g, the scalar loop gives %g", j,
              y[j], v);
  }
  op_harness_destroy(h);
}

Test(pool2d, avg_exclusive_and_inclusive_padding) {
  check_pool(PCFG(2, 2, 6, 5, "avg", 3, 3, 1, 1, 2, {1, 1}));
  check_pool(PCFG(2, 2, 6, 5, "avg", 3, 3, 1, 1, 2, {1, 1}, false, false, false, true));
  check_pool(PCFG(1, 2, 7, 7, "avg", 3, 3, 2, 2, 4, {1, 0, 0, 2}, false, false, false, true));
  /* ceil_mode: when inclusive, the last window still divides by kh * kw, the overhang
   * past the padded image counted too */
  check_pool(PCFG(1, 2, 8, 7, "avg", 3, 3, 2, 2, 2, {1, 1}, false, false, true, true));
  check_pool(PCFG(1, 2, 8, 7, "avg", 3, 3, 2, 2, 2, {1, 1}, false, false, true));
  check_pool(PCFG(1, 4, 6, 7, "avg", 3, 3, 2, 2, 2, {1, 1}, false, false, true, true));
  check_pool(PCFG(1, 2, 7, 8, "avg", 3, 2, 2, 3, 2, {0, 0}, false, false, true, true));
  /* more padding after than before: the last windows reach past the padding before */
  check_pool(PCFG(1, 2, 5, 6, "avg", 3, 3, 1, 1, 4, {0, 2, 1, 2}, false, false, false, true));
  check_pool(PCFG(1, 2, 5, 6, "avg", 3, 3, 2, 2, 4, {0, 2, 1, 2}, false, false, true, true));
  /* SAME with the odd pixel after */
  check_pool(PCFG(1, 2, 6, 7, "avg", 4, 4, 3, 3, 0, {0}, false, false, false, true, "SAME"));
}

/* The example of Paddle 1.8.5's rule: [1, 4, 6, 7], avg 3x3, stride 2, padding 1,
 * ceil_mode, not exclusive; on ones, the last output row's windows hold 1 image row by 2
 * or 3 columns (rows 5 to 7: row 5 in the image, 6 in the padding, 7 past it), and each
 * divides by 9. */
Test(pool2d, avg_inclusive_ceil_mode_divides_by_the_whole_kernel) {
  float x[4 * 6 * 7];
  for (int i = 0; i < 4 * 6 * 7; i++) x[i] = 1.0f;
  op_harness *h = harness("pool2d");
  bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(1, 4, 6, 7), x);
  OK(op_harness_output(h, "Out", "y"));
  set_pool_attrs(h, PCFG(1, 4, 6, 7, "avg", 3, 3, 2, 2, 2, {1, 1}, false, false, true, true));
  OK(op_harness_run(h));
  rill_tensor *t = op_harness_tensor(h, "y");
  expect_dims(t, DIMS(1, 4, 4, 4));
  const float *y = rill_tensor_ptr(t);
  const float last[4] = {2.0f / 9, 3.0f / 9, 3.0f / 9, 2.0f / 9};
  for (int c = 0; c < 4; c++)
    for (int j = 0; j < 4; j++)
      cr_assert(fabsf(y[(c * 4 + 3) * 4 + j] - last[j]) < 1e-6f, "Out[0, %d, 3, %d]: %g, not %g",
                c, j, (double)y[(c * 4 + 3) * 4 + j], (double)last[j]);
  op_harness_destroy(h);
}

Test(pool2d, global_adaptive_same_valid) {
  check_pool(PCFG(2, 3, 5, 4, "avg", 1, 1, 1, 1, 2, {1, 1}, true));
  check_pool(PCFG(1, 9, 7, 7, "avg", 1, 1, 1, 1, 0, {0}, true)); /* eight partial sums + tail */
  check_pool(PCFG(2, 3, 5, 4, "max", 2, 2, 1, 1, 0, {0}, true));
  check_pool(PCFG(1, 2, 7, 10, "avg", 3, 4, 1, 1, 0, {0}, false, true));
  check_pool(PCFG(1, 2, 7, 10, "max", 3, 4, 1, 1, 0, {0}, false, true));
  check_pool(PCFG(1, 2, 4, 4, "avg", 6, 5, 1, 1, 0, {0}, false, true));
  check_pool(PCFG(1, 2, 7, 6, "max", 3, 3, 2, 2, 2, {5, 5}, false, false, false, false, "SAME"));
  check_pool(PCFG(1, 2, 7, 6, "avg", 2, 3, 2, 1, 2, {0, 0}, false, false, false, true, "SAME"));
  check_pool(PCFG(1, 2, 7, 6, "avg", 3, 3, 2, 2, 2, {1, 1}, false, false, false, false, "VALID"));
}

static void pool_grad(const pool_cfg *c) {
  int64_t nx = c->n * c->c * c->h * c->w;
  double *x = malloc((size_t)nx * sizeof *x);
  fill_rand(x, nx, 12);
  fd_case fc = {.op = "pool2d", .nin = 1, .out_slots = {"Out"}, .out_names = {"y"}, .nout = 1,
                .attrs = set_pool_attrs, .arg = c, .tol = 1e-6};
  fc.in[0] = (fd_input){"X", "x", {c->n, c->c, c->h, c->w}, 4, x, true};
  fd_check(&fc);
  free(x);
}

Test(pool2d, gradients_match_finite_differences) {
  pool_grad(PCFG(1, 2, 5, 6, "max", 3, 3, 2, 2, 2, {1, 1}));
  pool_grad(PCFG(1, 2, 5, 6, "max", 2, 2, 2, 2, 0, {0}, false, false, true));
  pool_grad(PCFG(2, 1, 5, 6, "avg", 3, 3, 2, 2, 4, {1, 0, 1, 2}));
  pool_grad(PCFG(1, 2, 6, 5, "avg", 3, 3, 2, 2, 2, {1, 1}, false, false, true, true));
  pool_grad(PCFG(1, 2, 7, 5, "avg", 3, 2, 1, 1, 0, {0}, false, true));
  pool_grad(PCFG(1, 2, 4, 5, "max", 3, 3, 1, 1, 0, {0}, true));
}

Test(pool2d, missing_required_and_bad_attrs_fail) {
  op_harness *h = harness("pool2d");
  bind_input(h, "X", "feat", RILL_DTYPE_FP32, DIMS(1, 2, 4, 4), NULL);
  OK(op_harness_output(h, "Out", "y"));
  OK(op_harness_attr_ints(h, "ksize", (const int32_t[]){2, 2}, 2));
  EXPECT_ERROR(op_harness_infer(h), "pool2d", "pooling_type");
  OK(op_harness_attr_string(h, "pooling_type", "min"));
  EXPECT_ERROR(op_harness_infer(h), "pool2d", "X (feat)", "min");
  OK(op_harness_attr_string(h, "pooling_type", "max"));
  OK(op_harness_attr_ints(h, "ksize", (const int32_t[]){2}, 1));
  EXPECT_ERROR(op_harness_infer(h), "pool2d", "X (feat)", "ksize");
  OK(op_harness_attr_ints(h, "ksize", (const int32_t[]){5, 5}, 2));
  EXPECT_ERROR(op_harness_infer(h), "pool2d", "X (feat)", "not positive");
  op_harness_destroy(h);

  h = harness("pool2d");
  bind_input(h, "X", "feat", RILL_DTYPE_FP32, DIMS(2, 4, 4), NULL);
  OK(op_harness_output(h, "Out", "y"));
  OK(op_harness_attr_string(h, "pooling_type", "max"));
  OK(op_harness_attr_ints(h, "ksize", (const int32_t[]){2, 2}, 2));
  EXPECT_ERROR(op_harness_infer(h), "pool2d", "X (feat)", "rank 3");
  op_harness_destroy(h);
}

/* Max pooling's gradient goes to the first element (row-major) of the window equal to
 * the max, as Paddle's does; with every input equal, that is each window's top-left
 * in-image element, and overlapping windows add up there. */
Test(pool2d, max_gradient_ties_go_to_the_first_element) {
  const pool_cfg cfgs[2] = {{1, 1, 4, 4, "max", 2, 2, 2, 2},
                            {1, 1, 5, 5, "max", 3, 3, 2, 2, 2, {1, 1}}};
  for (int k = 0; k < 2; k++) {
    const pool_cfg *c = &cfgs[k];
    int64_t oh = k ? 3 : 2, ow = oh, n = c->h * c->w;
    float x[25], y[9], dy[9], want[25] = {0};
    for (int64_t i = 0; i < n; i++) x[i] = 1.5f;
    for (int64_t i = 0; i < oh * ow; i++) {
      y[i] = 1.5f;
      dy[i] = (float)(i + 1);
    }
    int64_t pad = k ? 1 : 0;
    for (int64_t i = 0; i < oh; i++)
      for (int64_t j = 0; j < ow; j++) {
        int64_t r = i * c->sh - pad, q = j * c->sw - pad;
        want[(r < 0 ? 0 : r) * c->w + (q < 0 ? 0 : q)] += dy[i * ow + j];
      }
    op_harness *h = harness("pool2d_grad");
    bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(1, 1, c->h, c->w), x);
    bind_input(h, "Out", "y", RILL_DTYPE_FP32, DIMS(1, 1, oh, ow), y);
    bind_input(h, "Out@GRAD", "y@GRAD", RILL_DTYPE_FP32, DIMS(1, 1, oh, ow), dy);
    OK(op_harness_output(h, "X@GRAD", "x@GRAD"));
    set_pool_attrs(h, c);
    OK(op_harness_run(h));
    rill_tensor *dx = op_harness_tensor(h, "x@GRAD");
    expect_close_f32(rill_tensor_ptr(dx), want, n, 0);
    op_harness_destroy(h);
  }
}

/* 2x2 max pooling with stride 2 tiling the image: its gradient goes to the first tap
 * equal to the max, as 0 + dy (so -0 comes out as +0), and nowhere for a window of
 * NaNs; bit for bit against that rule written here. */
Test(pool2d, max_2x2_tiled_gradient_bit_for_bit) {
  /* 19 outputs a row: chunks of 8 at 0, 8 and 11 (overlapping the one before) */
  enum { H = 4, W = 38, OH = 2, OW = 19 };
  float x[H * W], y[OH * OW], dy[OH * OW], want[H * W];
  for (int i = 0; i < H * W; i++) x[i] = (float)((i * 5) % 7) - 3.0f;
  x[0] = x[1] = 2.5f;                                 /* a tie: the first tap */
  x[2] = x[3] = x[W + 2] = x[W + 3] = NAN;            /* no tap equals the max */
  x[W + 4] = INFINITY;
  x[W + 8] = x[W + 9] = 3.5f;                         /* a tie in the second row */
  x[2 * W + 20] = NAN;                                /* a NaN tap beside a max */
  x[3 * W + 33] = -INFINITY;
  x[36] = x[37] = x[W + 36] = x[W + 37] = -1.0f;      /* a tie of four in the overlap */
  for (int i = 0; i < OH; i++)
    for (int j = 0; j < OW; j++) {
      const float t[4] = {x[2 * i * W + 2 * j], x[2 * i * W + 2 * j + 1],
                          x[(2 * i + 1) * W + 2 * j], x[(2 * i + 1) * W + 2 * j + 1]};
      float v = -FLT_MAX;
      for (int k = 0; k < 4; k++)
        if (t[k] > v) v = t[k];
      y[i * OW + j] = v;
      dy[i * OW + j] = (float)(i * OW + j) - 2.0f;
    }
  dy[5] = -0.0f;
  dy[OW + 10] = -0.0f;
  dy[12] = NAN;
  for (int i = 0; i < H * W; i++) want[i] = 0;
  for (int i = 0; i < OH; i++)
    for (int j = 0; j < OW; j++) {
      const int at[4] = {2 * i * W + 2 * j, 2 * i * W + 2 * j + 1, (2 * i + 1) * W + 2 * j,
                         (2 * i + 1) * W + 2 * j + 1};
      for (int k = 0; k < 4; k++)
        if (x[at[k]] == y[i * OW + j]) {
          want[at[k]] = 0.0f + dy[i * OW + j];
          break;
        }
    }
  op_harness *h = harness("pool2d_grad");
  bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(1, 1, H, W), x);
  bind_input(h, "Out", "y", RILL_DTYPE_FP32, DIMS(1, 1, OH, OW), y);
  bind_input(h, "Out@GRAD", "y@GRAD", RILL_DTYPE_FP32, DIMS(1, 1, OH, OW), dy);
  OK(op_harness_output(h, "X@GRAD", "x@GRAD"));
  const pool_cfg c = {1, 1, H, W, "max", 2, 2, 2, 2, 2, {0, 0}};
  set_pool_attrs(h, &c);
  OK(op_harness_run(h));
  const float *dx = rill_tensor_ptr(op_harness_tensor(h, "x@GRAD"));
  for (int i = 0; i < H * W; i++)
    cr_expect(memcmp(&dx[i], &want[i], sizeof want[i]) == 0, "X@GRAD[%d]: %g, want %g", i, dx[i],
              want[i]);
  op_harness_destroy(h);
}

/* pool2d and pool2d_grad of one configuration (float32) with `threads` device threads
 * (0: no device context); Out and X@GRAD copied out. */
static void run_pool_threads(const pool_cfg *c, int32_t threads, const float *x, const float *dy,
                             float *y, float *dx, int64_t ny) {
  op_harness *h = harness("pool2d");
  if (threads) op_harness_set_threads(h, threads);
  bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(c->n, c->c, c->h, c->w), x);
  OK(op_harness_output(h, "Out", "y"));
  set_pool_attrs(h, c);
  OK(op_harness_run(h));
  rill_tensor *ty = op_harness_tensor(h, "y");
  cr_assert_eq(rill_tensor_nbytes(ty), (size_t)ny * sizeof(float));
  memcpy(y, rill_tensor_ptr(ty), rill_tensor_nbytes(ty));
  int64_t oh = rill_tensor_dims(ty)[2], ow = rill_tensor_dims(ty)[3];
  op_harness_destroy(h);
  h = harness("pool2d_grad");
  if (threads) op_harness_set_threads(h, threads);
  bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(c->n, c->c, c->h, c->w), x);
  bind_input(h, "Out", "y", RILL_DTYPE_FP32, DIMS(c->n, c->c, oh, ow), y);
  bind_input(h, "Out@GRAD", "y@GRAD", RILL_DTYPE_FP32, DIMS(c->n, c->c, oh, ow), dy);
  OK(op_harness_output(h, "X@GRAD", "x@GRAD"));
  set_pool_attrs(h, c);
  OK(op_harness_run(h));
  rill_tensor *t = op_harness_tensor(h, "x@GRAD");
  memcpy(dx, rill_tensor_ptr(t), rill_tensor_nbytes(t));
  op_harness_destroy(h);
}

/* Batches large enough are split by images over the device's threads (2 and 3: uneven
 * ranges); forward and gradient equal the unthreaded run bit for bit. */
Test(pool2d, image_split_matches_one_thread) {
  const pool_cfg cfgs[] = {{37, 6, 28, 28, "max", 2, 2, 2, 2, 2, {0, 0}},
                           {37, 6, 28, 28, "avg", 3, 3, 2, 2, 2, {1, 1}},
                           {37, 6, 27, 28, "max", 3, 3, 2, 2, 2, {1, 1}}};
  for (size_t k = 0; k < sizeof cfgs / sizeof cfgs[0]; k++) {
    const pool_cfg *c = &cfgs[k];
    int64_t nx = c->n * c->c * c->h * c->w, ny = c->n * c->c * ((c->h + 1) / 2) * 14;
    double *xd = malloc((size_t)nx * sizeof *xd);
    fill_rand(xd, nx, 21);
    float *x = to_f32(xd, nx), *dy = malloc((size_t)ny * sizeof *dy);
    for (int64_t i = 0; i < ny; i++) dy[i] = x[i] * 0.5f + 0.25f;
    float *y0 = malloc((size_t)ny * 4), *dx0 = malloc((size_t)nx * 4);
    float *y = malloc((size_t)ny * 4), *dx = malloc((size_t)nx * 4);
    run_pool_threads(c, 0, x, dy, y0, dx0, ny);
    for (int32_t threads = 2; threads <= 3; threads++) {
      run_pool_threads(c, threads, x, dy, y, dx, ny);
      cr_expect(memcmp(y, y0, (size_t)ny * 4) == 0, "case %zu, %d threads: Out differs", k, (int)threads);
      cr_expect(memcmp(dx, dx0, (size_t)nx * 4) == 0, "case %zu, %d threads: X@GRAD differs", k,
                (int)threads);
    }
    free(xd), free(x), free(dy), free(y0), free(dx0), free(y), free(dx);
  }
}

/* [N, C, HW] -> [N, HW, C] */
static void to_last(const double *a, double *b, int64_t n, int64_t c, int64_t hw) {
  for (int64_t s = 0; s < n; s++)
    for (int64_t ch = 0; ch < c; ch++)
      for (int64_t v = 0; v < hw; v++) b[(s * hw + v) * c + ch] = a[(s * c + ch) * hw + v];
}

static void set_pool_attrs_nhwc(op_harness *h, const void *arg) {
  set_pool_attrs(h, arg);
  OK(op_harness_attr_string(h, "data_format", "NHWC"));
}

/* pool2d then pool2d_grad in one layout and dtype, with Out@GRAD at NCHW position q
 * (sample, channel, row, column) equal to sin(0.7 q) + 0.25 in either layout; Out and
 * X@GRAD come back as doubles in the layout's order (caller frees), Out's dims in *od. */
static void run_layout(const pool_cfg *c, bool last, rill_dtype dt, const double *x,
                       rill_dims *od, double **out, double **dx) {
  int64_t nx = c->n * c->c * c->h * c->w;
  int64_t xd[4] = {c->n, last ? c->h : c->c, last ? c->w : c->h, last ? c->c : c->w};
  float *xf = to_f32(x, nx);
  const void *xp = dt == RILL_DTYPE_FP64 ? (const void *)x : (const void *)xf;
  op_harness *h = harness("pool2d");
  bind_input(h, "X", "img", dt, xd, 4, xp);
  OK(op_harness_output(h, "Out", "pooled"));
  (last ? set_pool_attrs_nhwc : set_pool_attrs)(h, c);
  OK(op_harness_run(h));
  rill_tensor *t = op_harness_tensor(h, "pooled");
  *od = t->dims;
  int64_t ny = rill_tensor_numel(t);
  *out = malloc((size_t)ny * sizeof **out);
  for (int64_t i = 0; i < ny; i++)
    (*out)[i] = dt == RILL_DTYPE_FP64 ? ((const double *)rill_tensor_ptr(t))[i]
                                      : ((const float *)rill_tensor_ptr(t))[i];
  op_harness_destroy(h);

  int64_t oh = od->d[last ? 1 : 2], ow = od->d[last ? 2 : 3];
  double *dy = malloc((size_t)ny * sizeof *dy);
  for (int64_t s = 0; s < c->n; s++)
    for (int64_t ch = 0; ch < c->c; ch++)
      for (int64_t v = 0; v < oh * ow; v++) {
        int64_t q = (s * c->c + ch) * oh * ow + v;
        dy[last ? (s * oh * ow + v) * c->c + ch : q] = sin(0.7 * (double)q) + 0.25;
      }
  float *yf = to_f32(*out, ny), *dyf = to_f32(dy, ny);
  h = harness("pool2d_grad");
  bind_input(h, "X", "img", dt, xd, 4, xp);
  bind_input(h, "Out", "pooled", dt, od->d, (size_t)od->n,
             dt == RILL_DTYPE_FP64 ? (const void *)*out : (const void *)yf);
  bind_input(h, "Out@GRAD", "pooled@GRAD", dt, od->d, (size_t)od->n,
             dt == RILL_DTYPE_FP64 ? (const void *)dy : (const void *)dyf);
  OK(op_harness_output(h, "X@GRAD", "img@GRAD"));
  (last ? set_pool_attrs_nhwc : set_pool_attrs)(h, c);
  OK(op_harness_run(h));
  t = op_harness_tensor(h, "img@GRAD");
  expect_dims(t, xd, 4);
  *dx = malloc((size_t)nx * sizeof **dx);
  for (int64_t i = 0; i < nx; i++)
    (*dx)[i] = dt == RILL_DTYPE_FP64 ? ((const double *)rill_tensor_ptr(t))[i]
                                     : ((const float *)rill_tensor_ptr(t))[i];
  op_harness_destroy(h);
  free(xf);
  free(yf);
  free(dy);
  free(dyf);
}

/* avg's gradient against the reference: avg pooling is linear, so X@GRAD[e] is the
 * reference pooling of the unit vector at e, weighted by Out@GRAD (run_layout's), summed. */
static void check_avg_grad(const pool_cfg *c) {
  int64_t nx = c->n * c->c * c->h * c->w, oh, ow;
  double *x = calloc((size_t)nx, sizeof *x), *u = calloc((size_t)nx, sizeof *u);
  double *unit = malloc((size_t)nx * 4 * sizeof *unit), *want = calloc((size_t)nx, sizeof *want);
  fill_rand(x, nx, 15);
  rill_dims od;
  double *y, *dx;
  run_layout(c, false, RILL_DTYPE_FP64, x, &od, &y, &dx);
  for (int64_t e = 0; e < nx; e++) {
    u[e] = 1;
    ref_pool(c, u, unit, &oh, &ow);
    u[e] = 0;
    for (int64_t q = 0; q < c->n * c->c * oh * ow; q++) want[e] += unit[q] * (sin(0.7 * (double)q) + 0.25);
  }
  expect_close_f64(dx, want, nx, 1e-12);
  double *bufs[] = {x, u, unit, want, y, dx};
  for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) free(bufs[i]);
}

Test(pool2d, avg_gradient_matches_reference) {
  check_avg_grad(PCFG(1, 4, 6, 7, "avg", 3, 3, 2, 2, 2, {1, 1}, false, false, true, true));
  check_avg_grad(PCFG(1, 4, 6, 7, "avg", 3, 3, 2, 2, 2, {1, 1}, false, false, true));
  check_avg_grad(PCFG(1, 2, 5, 6, "avg", 3, 3, 2, 2, 4, {0, 2, 1, 2}, false, false, true, true));
  check_avg_grad(PCFG(1, 2, 6, 7, "avg", 4, 4, 3, 3, 0, {0}, false, false, false, true, "SAME"));
  check_avg_grad(PCFG(1, 2, 7, 5, "avg", 3, 2, 1, 1, 0, {0}, false, true));
}

/* NHWC equals NCHW on transposed data (Out, X@GRAD, Out's dims in NHWC order), in both
 * dtypes, and NHWC's gradient matches central differences. */
static void check_nhwc(const pool_cfg *c) {
  int64_t nx = c->n * c->c * c->h * c->w, hw = c->h * c->w;
  double *x = malloc((size_t)nx * sizeof *x), *xt = malloc((size_t)nx * sizeof *xt);
  fill_rand(x, nx, 13);
  to_last(x, xt, c->n, c->c, hw);
  for (int dt = 0; dt < 2; dt++) {
    rill_dtype t = dt ? RILL_DTYPE_FP64 : RILL_DTYPE_FP32;
    double tol = dt ? 1e-12 : 1e-5;
    rill_dims od0, od1;
    double *y0, *dx0, *y1, *dx1;
    run_layout(c, false, t, x, &od0, &y0, &dx0);
    run_layout(c, true, t, xt, &od1, &y1, &dx1);
    cr_assert(od1.n == 4 && od1.d[0] == c->n && od1.d[1] == od0.d[2] && od1.d[2] == od0.d[3] &&
                  od1.d[3] == c->c,
              "%s NHWC Out dims [%ld, %ld, %ld, %ld]", c->type, (long)od1.d[0], (long)od1.d[1],
              (long)od1.d[2], (long)od1.d[3]);
    int64_t ohw = od0.d[2] * od0.d[3], ny = c->n * c->c * ohw;
    double *y0t = malloc((size_t)ny * sizeof *y0t), *dx0t = malloc((size_t)nx * sizeof *dx0t);
    to_last(y0, y0t, c->n, c->c, ohw);
    to_last(dx0, dx0t, c->n, c->c, hw);
    for (int64_t i = 0; i < ny; i++)
      cr_assert(fabs(y1[i] - y0t[i]) <= tol, "%s %s Out[%ld]: %g != %g", c->type,
                dt ? "f64" : "f32", (long)i, y1[i], y0t[i]);
    for (int64_t i = 0; i < nx; i++)
      cr_assert(fabs(dx1[i] - dx0t[i]) <= tol, "%s %s X@GRAD[%ld]: %g != %g", c->type,
                dt ? "f64" : "f32", (long)i, dx1[i], dx0t[i]);
    double *bufs[] = {y0, dx0, y1, dx1, y0t, dx0t};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) free(bufs[i]);
  }
  fd_case fc = {.op = "pool2d", .nin = 1, .out_slots = {"Out"}, .out_names = {"y"}, .nout = 1,
                .attrs = set_pool_attrs_nhwc, .arg = c, .tol = 1e-6};
  fc.in[0] = (fd_input){"X", "x", {c->n, c->h, c->w, c->c}, 4, xt, true};
  fd_check(&fc);
  free(x);
  free(xt);
}

Test(pool2d, nhwc_matches_nchw_on_transposed_data) {
  /* explicit symmetric, the 2x2 stride-2 shape NCHW has fast paths for */
  check_nhwc(PCFG(2, 3, 6, 8, "max", 2, 2, 2, 2));
  check_nhwc(PCFG(2, 5, 6, 8, "avg", 2, 2, 2, 2));
  /* asymmetric paddings, exclusive and not */
  check_nhwc(PCFG(1, 3, 5, 6, "avg", 3, 3, 2, 2, 4, {1, 0, 1, 2}));
  check_nhwc(PCFG(1, 3, 5, 6, "avg", 3, 3, 2, 2, 4, {1, 0, 1, 2}, false, false, false, true));
  check_nhwc(PCFG(2, 2, 5, 7, "max", 3, 2, 2, 3, 4, {0, 1, 1, 0}));
  /* ceil_mode */
  check_nhwc(PCFG(1, 4, 6, 5, "max", 2, 2, 2, 2, 0, {0}, false, false, true));
  check_nhwc(PCFG(1, 2, 6, 5, "avg", 3, 3, 2, 2, 2, {1, 1}, false, false, true, true));
  check_nhwc(PCFG(1, 4, 6, 7, "avg", 3, 3, 2, 2, 2, {1, 1}, false, false, true, true));
  check_nhwc(PCFG(1, 2, 5, 6, "avg", 3, 3, 2, 2, 4, {0, 2, 1, 2}, false, false, true, true));
  /* global (also NCHW's global-average fast path) */
  check_nhwc(PCFG(2, 3, 4, 5, "avg", 1, 1, 1, 1, 0, {0}, true));
  check_nhwc(PCFG(2, 3, 4, 5, "max", 1, 1, 1, 1, 0, {0}, true));
  /* adaptive */
  check_nhwc(PCFG(1, 3, 7, 5, "avg", 3, 2, 1, 1, 0, {0}, false, true));
  check_nhwc(PCFG(2, 2, 7, 9, "max", 3, 4, 1, 1, 0, {0}, false, true));
  /* SAME and VALID */
  check_nhwc(PCFG(1, 3, 7, 6, "max", 3, 2, 2, 2, 2, {4, 4}, false, false, false, false, "SAME"));
  check_nhwc(PCFG(1, 3, 7, 6, "avg", 3, 2, 2, 1, 2, {4, 4}, false, false, false, false, "SAME"));
  check_nhwc(PCFG(1, 2, 7, 6, "avg", 3, 3, 2, 2, 2, {3, 3}, false, false, false, false, "VALID"));
}

Test(pool2d, nhwc_errors_name_op_variable_and_layout) {
  op_harness *h = harness("pool2d");
  bind_input(h, "X", "feat3d", RILL_DTYPE_FP32, DIMS(4, 4, 2), NULL);
  OK(op_harness_output(h, "Out", "y"));
  set_pool_attrs_nhwc(h, PCFG(1, 1, 1, 1, "max", 2, 2, 1, 1));
  EXPECT_ERROR(op_harness_infer(h), "pool2d", "X (feat3d)", "NHWC", "rank 3");
  op_harness_destroy(h);

  h = harness("pool2d");
  bind_input(h, "X", "feat", RILL_DTYPE_FP32, DIMS(1, 4, 4, 2), NULL);
  OK(op_harness_output(h, "Out", "y"));
  set_pool_attrs(h, PCFG(1, 1, 1, 1, "max", 2, 2, 1, 1));
  OK(op_harness_attr_string(h, "data_format", "NDHWC"));
  EXPECT_ERROR(op_harness_infer(h), "pool2d", "X (feat)", "data_format", "NDHWC");
  op_harness_destroy(h);

  /* the gradient's Out@GRAD must have the NHWC pooled shape */
  h = harness("pool2d_grad");
  bind_input(h, "X", "feat", RILL_DTYPE_FP32, DIMS(1, 4, 4, 2), NULL);
  bind_input(h, "Out", "o", RILL_DTYPE_FP32, DIMS(1, 2, 2, 2), NULL);
  bind_input(h, "Out@GRAD", "o@GRAD", RILL_DTYPE_FP32, DIMS(1, 2, 2, 2), NULL);
  OK(op_harness_output(h, "X@GRAD", "feat@GRAD"));
  set_pool_attrs_nhwc(h, PCFG(1, 1, 1, 1, "max", 2, 2, 1, 1));
  EXPECT_ERROR(op_harness_run(h), "pool2d_grad", "o@GRAD", "[1, 3, 3, 2]");
  op_harness_destroy(h);
}
