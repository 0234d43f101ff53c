/* grid_sampler against a reference that reflects by repeated folding and reads pixels
 * through a bounds-checked accessor. */
#include "op_test.h"

#include "nn_test.h"
#include "support/grad_check.h"

static double fold(double x, double lo, double hi) {
  if (hi <= lo) return lo;
  for (int i = 0; i < 100 && (x < lo || x > hi); i++) x = x < lo ? 2 * lo - x : 2 * hi - x;
  return x;
}

static double px(const float *img, int64_t h, int64_t w, int64_t y, int64_t x) {
  return y < 0 || y >= h || x < 0 || x >= w ? 0.0 : (double)img[y * w + x];
}

static double coord(double g, int64_t n, bool ac, const char *pad) {
  double x = ac ? (g + 1) * 0.5 * (double)(n - 1) : ((g + 1) * (double)n - 1) * 0.5;
  if (!strcmp(pad, "reflection")) x = ac ? fold(x, 0, (double)(n - 1)) : fold(x, -0.5, (double)n - 0.5);
  if (strcmp(pad, "zeros")) x = fmin(fmax(x, 0), (double)(n - 1));
  return x;
}

static void run_gs(int64_t n, int64_t c, int64_t h, int64_t w, int64_t oh, int64_t ow, bool ac,
                   const char *pad, const char *mode) {
  int64_t nx = n * c * h * w, ng = n * oh * ow * 2, no = n * c * oh * ow;
  float *x = malloc((size_t)nx * sizeof *x), *g = malloc((size_t)ng * sizeof *g);
  float *want = malloc((size_t)no * sizeof *want);
  for (int64_t i = 0; i < nx; i++) x[i] = (float)cos((double)i * 0.7) * 2;
  for (int64_t i = 0; i < ng; i++) g[i] = (float)(sin((double)i * 1.3) * 1.6); /* some outside [-1, 1] */
  for (int64_t b = 0; b < n; b++)
    for (int64_t i = 0; i < oh; i++)
      for (int64_t j = 0; j < ow; j++) {
        double sx = coord(g[((b * oh + i) * ow + j) * 2], w, ac, pad);
        double sy = coord(g[((b * oh + i) * ow + j) * 2 + 1], h, ac, pad);
        for (int64_t ch = 0; ch < c; ch++) {
          const float *img = x + (b * c + ch) * h * w;
          double v;
          if (!strcmp(mode, "nearest")) {
            v = px(img, h, w, (int64_t)round(sy), (int64_t)round(sx));
          } else {
            double x0 = floor(sx), y0 = floor(sy), ax = sx - x0, ay = sy - y0;
            int64_t xi = (int64_t)x0, yi = (int64_t)y0;
            v = px(img, h, w, yi, xi) * (1 - ax) * (1 - ay) + px(img, h, w, yi, xi + 1) * ax * (1 - ay) +
                px(img, h, w, yi + 1, xi) * (1 - ax) * ay + px(img, h, w, yi + 1, xi + 1) * ax * ay;
          }
          want[((b * c + ch) * oh + i) * ow + j] = (float)v;
        }
      }
  op_harness *hh = harness("grid_sampler");
  bind_input(hh, "X", "img", RILL_DTYPE_FP32, DIMS(n, c, h, w), x);
  bind_input(hh, "Grid", "grid", RILL_DTYPE_FP32, DIMS(n, oh, ow, 2), g);
  OK(op_harness_output(hh, "Output", "out"));
  OK(op_harness_attr_bool(hh, "align_corners", ac));
  OK(op_harness_attr_string(hh, "padding_mode", pad));
  OK(op_harness_attr_string(hh, "mode", mode));
  OK(op_harness_run(hh));
  rill_tensor *t = op_harness_tensor(hh, "out");
  expect_dims(t, DIMS(n, c, oh, ow));
  expect_close_f32(rill_tensor_ptr(t), want, no, 1e-5f);
  op_harness_destroy(hh);
  free(x); free(g); free(want);
}

Test(grid_sampler, all_modes_and_paddings) {
  const char *pads[] = {"zeros", "border", "reflection"};
  for (int p = 0; p < 3; p++)
    for (int ac = 0; ac < 2; ac++) {
      run_gs(2, 3, 5, 7, 4, 6, ac, pads[p], "bilinear");
      run_gs(1, 2, 4, 3, 3, 5, ac, pads[p], "nearest");
    }
  run_gs(1, 3, 32, 100, 1, 20, true, "zeros", "bilinear"); /* the OCR rectifier's shape */
}

Test(grid_sampler, bad_grid_fails_at_inference) {
  op_harness *h = harness("grid_sampler");
  bind_input(h, "X", "img", RILL_DTYPE_FP32, DIMS(1, 3, 4, 4), NULL);
  bind_input(h, "Grid", "grid", RILL_DTYPE_FP32, DIMS(1, 2, 2, 3), NULL);
  OK(op_harness_output(h, "Output", "o"));
  EXPECT_ERROR(op_harness_run(h), "grid_sampler", "img", "grid");
  op_harness_destroy(h);

  h = harness("grid_sampler");
  bind_input(h, "X", "img", RILL_DTYPE_FP32, DIMS(1, 3, 4, 4), NULL);
  bind_input(h, "Grid", "grid", RILL_DTYPE_FP32, DIMS(1, 2, 2, 2), NULL);
  OK(op_harness_attr_string(h, "mode", "bicubic"));
  OK(op_harness_output(h, "Output", "o"));
  EXPECT_ERROR(op_harness_run(h), "grid_sampler", "bicubic");
  op_harness_destroy(h);
}

/* The gradients of X and Grid against finite differences (grid points kept off the
 * pixel lines, where the bilinear weights have kinks), and the errors of the gradient. */
static void gs_grad(bool ac, const char *pad, const char *mode) {
  enum { N = 2, C = 2, H = 3, W = 4, OH = 2, OW = 3 };
  double x[N * C * H * W], g[N * OH * OW * 2];
  fill_rand(x, N * C * H * W, 141);
  fill_rand(g, N * OH * OW * 2, 142);
  for (int i = 0; i < N * OH * OW * 2; i++) g[i] *= 1.15; /* some outside [-1, 1] */
  op_harness *h = harness("grid_sampler");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(N, C, H, W), x);
  bind_input(h, "Grid", "grid", RILL_DTYPE_FP64, DIMS(N, OH, OW, 2), g);
  OK(op_harness_output(h, "Output", "out"));
  OK(op_harness_attr_bool(h, "align_corners", ac));
  OK(op_harness_attr_string(h, "padding_mode", pad));
  OK(op_harness_attr_string(h, "mode", mode));
  grad_check_opts o = {.rtol = 1e-6, .atol = 1e-6};
  if (strcmp(mode, "nearest") == 0)
    OK(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Output"), &o));
  else
    OK(grad_check(h, GC_SLOTS("X", "Grid"), GC_SLOTS("Output"), &o));
  op_harness_destroy(h);
}

Test(grid_sampler, gradients_match_finite_differences) {
  gs_grad(true, "zeros", "bilinear"); /* Fluid 1.8's grid_sampler */
  gs_grad(false, "zeros", "bilinear");
  gs_grad(true, "border", "bilinear");
  gs_grad(true, "zeros", "nearest");
}

Test(grid_sampler, gradient_refuses_reflection_padding) {
  op_harness *h = harness("grid_sampler_grad");
  bind_input(h, "X", "img", RILL_DTYPE_FP32, DIMS(1, 1, 2, 2), NULL);
  bind_input(h, "Grid", "grid", RILL_DTYPE_FP32, DIMS(1, 1, 1, 2), NULL);
  bind_input(h, "Output@GRAD", "out@GRAD", RILL_DTYPE_FP32, DIMS(1, 1, 1, 1), NULL);
  OK(op_harness_output(h, "X@GRAD", "img@GRAD"));
  OK(op_harness_attr_string(h, "padding_mode", "reflection"));
  EXPECT_ERROR(op_harness_infer(h), "grid_sampler_grad", "padding_mode", "reflection");
  op_harness_destroy(h);
}
