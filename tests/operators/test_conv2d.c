/* Positional conv_cfg literals leave the trailing fields zero. */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#include "kernels/cpu/conv.h"
#include "nn_test.h"
#include "support/fail_alloc.h"

/* One convolution configuration; pads as given to the op (2 or 4 values). */
typedef struct conv_cfg {
  int64_t n, c, h, w, m, kh, kw, groups, sh, sw, dh, dw;
  int npads;
  int32_t pads[4];
  const char *algo; /* NULL: EXPLICIT */
  int nosize, nopad;
  int32_t osize[2], opad[2]; /* conv2d_transpose */
} conv_cfg;

/* Paddings and dilations the op must use, computed here independently. */
static void expected_pads(const conv_cfg *c, int64_t in_h, int64_t in_w, int64_t p[4],
                          int64_t *dh, int64_t *dw) {
  *dh = c->dh;
  *dw = c->dw;
  if (c->npads == 2) {
    p[0] = p[1] = c->pads[0];
    p[2] = p[3] = c->pads[1];
  } else {
    for (int i = 0; i < 4; i++) p[i] = c->pads[i];
  }
  if (c->algo && strcmp(c->algo, "VALID") == 0) p[0] = p[1] = p[2] = p[3] = 0;
  if (c->algo && strcmp(c->algo, "SAME") == 0) {
    int64_t in[2] = {in_h, in_w}, k[2] = {c->kh, c->kw}, s[2] = {c->sh, c->sw};
    for (int i = 0; i < 2; i++) {
      int64_t o = in[i] % s[i] ? in[i] / s[i] + 1 : in[i] / s[i];
      int64_t total = (o - 1) * s[i] + k[i] - in[i];
      if (total < 0) total = 0;
      p[2 * i] = total / 2;
      p[2 * i + 1] = total - total / 2;
    }
    *dh = *dw = 1;
  }
}

static void set_conv_attrs(op_harness *h, const void *arg) {
  const conv_cfg *c = arg;
  OK(op_harness_attr_ints(h, "strides", (const int32_t[]){(int32_t)c->sh, (int32_t)c->sw}, 2));
  OK(op_harness_attr_ints(h, "dilations", (const int32_t[]){(int32_t)c->dh, (int32_t)c->dw}, 2));
  OK(op_harness_attr_ints(h, "paddings", c->pads, (size_t)c->npads));
  OK(op_harness_attr_int(h, "groups", (int32_t)c->groups));
  if (c->algo) OK(op_harness_attr_string(h, "padding_algorithm", c->algo));
  if (c->nosize) OK(op_harness_attr_ints(h, "output_size", c->osize, 2));
  if (c->nopad) OK(op_harness_attr_ints(h, "output_padding", c->opad, 2));
}

/* Direct 7-loop convolution. */
static void ref_conv(const conv_cfg *c, const double *x, const double *w, double *y, int64_t oh,
                     int64_t ow) {
  int64_t p[4], dh, dw;
  expected_pads(c, c->h, c->w, p, &dh, &dw);
  int64_t cg = c->c / c->groups, mg = c->m / c->groups;
  for (int64_t n = 0; n < c->n; n++)
    for (int64_t oc = 0; oc < c->m; oc++)
      for (int64_t i = 0; i < oh; i++)
        for (int64_t j = 0; j < ow; j++) {
          double s = 0;
          int64_t g = oc / mg;
          for (int64_t ic = 0; ic < cg; ic++)
            for (int64_t ki = 0; ki < c->kh; ki++)
              for (int64_t kj = 0; kj < c->kw; kj++) {
                int64_t ih = i * c->sh - p[0] + ki * dh, iw = j * c->sw - p[2] + kj * dw;
                if (ih < 0 || ih >= c->h || iw < 0 || iw >= c->w) continue;
                s += x[((n * c->c + g * cg + ic) * c->h + ih) * c->w + iw] *
                     w[((oc * cg + ic) * c->kh + ki) * c->kw + kj];
              }
          y[((n * c->m + oc) * oh + i) * ow + j] = s;
        }
}

static void conv_out_size(const conv_cfg *c, int64_t *oh, int64_t *ow) {
  int64_t p[4], dh, dw;
  expected_pads(c, c->h, c->w, p, &dh, &dw);
  *oh = (c->h + p[0] + p[1] - (dh * (c->kh - 1) + 1)) / c->sh + 1;
  *ow = (c->w + p[2] + p[3] - (dw * (c->kw - 1) + 1)) / c->sw + 1;
}

/* Threads the kernels may use (op_harness_set_threads); 0: no device context. */
static int32_t conv_threads;

static void check_conv(const char *op, const conv_cfg *c) {
  int64_t oh, ow;
  conv_out_size(c, &oh, &ow);
  int64_t nx = c->n * c->c * c->h * c->w, nw = c->m * (c->c / c->groups) * c->kh * c->kw;
  int64_t ny = c->n * c->m * oh * ow;
  double *x = malloc((size_t)nx * sizeof *x), *w = malloc((size_t)nw * sizeof *w);
  double *want = malloc((size_t)ny * sizeof *want);
  fill_rand(x, nx, 1);
  fill_rand(w, nw, 2);
  ref_conv(c, x, w, want, oh, ow);
  float *xf = to_f32(x, nx), *wf = to_f32(w, nw), *wantf = to_f32(want, ny);
  const int paths[] = {RILL_CONV_PATH_AUTO, RILL_CONV_PATH_IM2COL, RILL_CONV_PATH_1X1,
                       RILL_CONV_PATH_DIRECT, RILL_CONV_PATH_DIRECT_GENERIC};
  for (size_t pi = 0; pi < 5; pi++)
    for (int dt = 0; dt < 2; dt++) {
      rill_conv_force_path = paths[pi];
      op_harness *h = harness(op);
      if (conv_threads) op_harness_set_threads(h, conv_threads);
      rill_dtype t = dt ? RILL_DTYPE_FP64 : RILL_DTYPE_FP32;
      bind_input(h, "Input", "x", t, DIMS(c->n, c->c, c->h, c->w), dt ? (void *)x : (void *)xf);
      bind_input(h, "Filter", "w", t, DIMS(c->m, c->c / c->groups, c->kh, c->kw),
                 dt ? (void *)w : (void *)wf);
      OK(op_harness_output(h, "Output", "y"));
      set_conv_attrs(h, c);
      OK(op_harness_run(h));
      rill_tensor *y = op_harness_tensor(h, "y");
      expect_dims(y, DIMS(c->n, c->m, oh, ow));
      if (dt)
        expect_close_f64(rill_tensor_ptr(y), want, ny, 1e-12);
      else
        expect_close_f32(rill_tensor_ptr(y), wantf, ny, 1e-5f);
      op_harness_destroy(h);
    }
  rill_conv_force_path = RILL_CONV_PATH_AUTO;
  free(x);
  free(w);
  free(want);
  free(xf);
  free(wf);
  free(wantf);
}

#define CFG(...) (&(conv_cfg){__VA_ARGS__})

Test(conv2d, every_path_matches_direct_reference) {
  /* plain 3x3, padding 1 */
  check_conv("conv2d", CFG(1, 3, 7, 7, 4, 3, 3, 1, 1, 1, 1, 1, 2, {1, 1}));
  /* enough output channels for im2col in auto mode, batch 2 */
  check_conv("conv2d", CFG(2, 5, 6, 7, 16, 3, 3, 1, 1, 1, 1, 1, 2, {1, 1}));
  /* strided, grouped, asymmetric padding (top, bottom, left, right) */
  check_conv("conv2d", CFG(2, 4, 9, 8, 6, 3, 3, 2, 2, 2, 1, 1, 4, {1, 2, 0, 1}));
  /* dilated, non-square filter, stride 3 in width */
  check_conv("conv2d", CFG(1, 2, 10, 11, 3, 3, 2, 1, 1, 3, 2, 2, 2, {2, 1}));
  /* 1x1 stride 1 (plain GEMM), grouped */
  check_conv("conv2d", CFG(2, 6, 5, 6, 9, 1, 1, 3, 1, 1, 1, 1, 2, {0, 0}));
  /* 1x1 strided and 1x1 padded: not the GEMM path */
  check_conv("conv2d", CFG(1, 4, 8, 8, 8, 1, 1, 1, 2, 2, 1, 1, 2, {0, 0}));
  check_conv("conv2d", CFG(1, 4, 5, 5, 8, 1, 1, 1, 1, 1, 1, 1, 2, {1, 0}));
  /* large enough that im2col works in several blocks of output rows */
  check_conv("conv2d", CFG(1, 20, 40, 40, 8, 3, 3, 1, 1, 1, 1, 1, 2, {1, 1}));
  /* filter as large as the padded input: one output */
  check_conv("conv2d", CFG(1, 2, 3, 3, 2, 5, 5, 1, 1, 1, 1, 1, 2, {1, 1}));
}

Test(conv2d, same_and_valid_padding_algorithms) {
  /* SAME: pads from Paddle's formula, dilation reset to 1 */
  check_conv("conv2d", CFG(1, 3, 9, 7, 5, 3, 3, 1, 2, 2, 2, 2, 2, {0, 0}, "SAME"));
  check_conv("conv2d", CFG(1, 2, 8, 8, 4, 4, 4, 1, 1, 1, 1, 1, 2, {0, 0}, "SAME"));
  check_conv("conv2d", CFG(2, 2, 5, 6, 3, 2, 3, 1, 3, 2, 1, 1, 4, {1, 1, 1, 1}, "SAME"));
  /* VALID: paddings ignored */
  check_conv("conv2d", CFG(1, 3, 6, 6, 2, 3, 3, 1, 1, 1, 1, 1, 2, {2, 2}, "VALID"));
  check_conv("conv2d", CFG(1, 3, 7, 6, 10, 3, 2, 1, 2, 1, 1, 2, 2, {2, 2}, "VALID"));
}

Test(depthwise_conv2d, matches_reference) {
  check_conv("depthwise_conv2d", CFG(2, 4, 7, 7, 4, 3, 3, 4, 1, 1, 1, 1, 2, {1, 1}));
  check_conv("depthwise_conv2d", CFG(1, 3, 9, 8, 6, 3, 3, 3, 2, 2, 1, 1, 4, {0, 1, 1, 2}));
  check_conv("depthwise_conv2d", CFG(1, 2, 9, 9, 2, 3, 3, 2, 1, 1, 2, 2, 2, {2, 2}));
  check_conv("depthwise_conv2d", CFG(1, 4, 10, 9, 4, 5, 5, 4, 2, 2, 1, 1, 2, {0, 0}, "SAME"));
  /* groups below the channel count: general paths */
  check_conv("depthwise_conv2d", CFG(1, 4, 6, 6, 8, 3, 3, 2, 1, 1, 1, 1, 2, {1, 1}));
}

/* The 3x3 depthwise kernel (stride 1 and 2) runs 8 output columns at a time inside the
 * row and scalar at its borders: widths from 1 to 37 put the vector/border split
 * everywhere, with every padding from 0 to 2 on each side and heights that put rows in
 * the padding. */
Test(depthwise_conv2d, vectorised_3x3_matches_reference_at_every_width) {
  for (int64_t w = 1; w <= 37; w += (w < 20 ? 1 : 4))
    for (int32_t s = 1; s <= 2; s++) {
      int32_t pl = (int32_t)(w % 3), pr = (int32_t)((w / 3) % 3), pt = (int32_t)(w % 2);
      int64_t h = 1 + w % 5;
      if (w + pl + pr < 3 || h + pt + 1 < 3) continue;
      check_conv("depthwise_conv2d", CFG(1, 2, h, w, 2, 3, 3, 2, s, s, 1, 1, 4, {pt, 1, pl, pr}));
    }
  /* MobileNet's shapes: 112 wide, stride 1 and 2, padding 1 */
  check_conv("depthwise_conv2d", CFG(1, 3, 14, 112, 3, 3, 3, 3, 1, 1, 1, 1, 2, {1, 1}));
  check_conv("depthwise_conv2d", CFG(2, 3, 13, 113, 3, 3, 3, 3, 2, 2, 1, 1, 2, {1, 1}));
}

/* Large direct convs split their groups over the device's threads (3 threads over 37
 * groups: uneven ranges), for every image; the results equal the reference. */
Test(depthwise_conv2d, threaded_direct_conv_matches_reference) {
  conv_threads = 3;
  check_conv("depthwise_conv2d", CFG(2, 37, 60, 61, 37, 3, 3, 37, 1, 1, 1, 1, 2, {1, 1}));
  check_conv("depthwise_conv2d", CFG(1, 37, 90, 91, 37, 3, 3, 37, 2, 2, 1, 1, 2, {1, 1}));
  /* 5x5 and two output channels per group: the generic direct loops, threaded */
  check_conv("depthwise_conv2d", CFG(1, 20, 50, 50, 40, 5, 5, 20, 1, 1, 1, 1, 2, {2, 2}));
  conv_threads = 0;
}

/* The im2col path's GEMMs with k <= 32 (3 channels x 3 x 3 = 27) run the small-k
 * kernel: 4 rows x 24 columns at a time, masked column tails. Output channels 1 to 9 and
 * widths that leave every tail; k = 32 and 33 (OpenBLAS) through 1x1 filters with
 * padding (im2col); a strided first layer over two images. */
Test(conv2d, small_k_gemm_matches_reference_at_every_tail) {
  for (int64_t m = 1; m <= 9; m++)
    for (int64_t w = 1; w <= 26; w += 5)
      check_conv("conv2d", CFG(1, 3, 3, w, m, 3, 3, 1, 1, 1, 1, 1, 2, {1, 1}));
  check_conv("conv2d", CFG(1, 32, 7, 9, 13, 1, 1, 1, 1, 1, 1, 1, 2, {1, 1}));
  check_conv("conv2d", CFG(1, 33, 7, 9, 13, 1, 1, 1, 1, 1, 1, 1, 2, {1, 1}));
  /* first-layer shape, stride 2 */
  check_conv("conv2d", CFG(2, 3, 31, 33, 10, 3, 3, 1, 2, 2, 1, 1, 2, {1, 1}));
}

/* ---- conv2d_transpose ---- */

static void convt_out_size(const conv_cfg *c, int64_t *oh, int64_t *ow) {
  int64_t p[4], dh, dw;
  expected_pads(c, c->h, c->w, p, &dh, &dw);
  *oh = (c->h - 1) * c->sh - p[0] - p[1] + dh * (c->kh - 1) + 1;
  *ow = (c->w - 1) * c->sw - p[2] - p[3] + dw * (c->kw - 1) + 1;
  if (c->nosize) {
    *oh = c->osize[0];
    *ow = c->osize[1];
  } else if (c->nopad) {
    *oh += c->opad[0];
    *ow += c->opad[1];
  }
}

/* Transposed convolution by scattering each input element: Input [n, c, h, w], Filter
 * [c, m / groups, kh, kw], Output [n, m, oh, ow]. */
static void ref_convt(const conv_cfg *c, const double *x, const double *w, double *y, int64_t oh,
                      int64_t ow) {
  int64_t p[4], dh, dw;
  expected_pads(c, c->h, c->w, p, &dh, &dw);
  int64_t cg = c->c / c->groups, mg = c->m / c->groups;
  memset(y, 0, (size_t)(c->n * c->m * oh * ow) * sizeof *y);
  for (int64_t n = 0; n < c->n; n++)
    for (int64_t ic = 0; ic < c->c; ic++)
      for (int64_t i = 0; i < c->h; i++)
        for (int64_t j = 0; j < c->w; j++)
          for (int64_t oc = 0; oc < mg; oc++)
            for (int64_t ki = 0; ki < c->kh; ki++)
              for (int64_t kj = 0; kj < c->kw; kj++) {
                int64_t yi = i * c->sh - p[0] + ki * dh, yj = j * c->sw - p[2] + kj * dw;
                if (yi < 0 || yi >= oh || yj < 0 || yj >= ow) continue;
                int64_t g = ic / cg;
                y[((n * c->m + g * mg + oc) * oh + yi) * ow + yj] +=
                    x[((n * c->c + ic) * c->h + i) * c->w + j] *
                    w[((ic * mg + oc) * c->kh + ki) * c->kw + kj];
              }
}

static void check_convt_op(const char *op, const conv_cfg *c) {
  int64_t oh, ow;
  convt_out_size(c, &oh, &ow);
  int64_t nx = c->n * c->c * c->h * c->w, nw = c->c * (c->m / c->groups) * c->kh * c->kw;
  int64_t ny = c->n * c->m * oh * ow;
  double *x = malloc((size_t)nx * sizeof *x), *w = malloc((size_t)nw * sizeof *w);
  double *want = malloc((size_t)ny * sizeof *want);
  fill_rand(x, nx, 3);
  fill_rand(w, nw, 4);
  ref_convt(c, x, w, want, oh, ow);
  float *xf = to_f32(x, nx), *wf = to_f32(w, nw), *wantf = to_f32(want, ny);
  const int paths[] = {RILL_CONV_PATH_AUTO, RILL_CONV_PATH_IM2COL, RILL_CONV_PATH_DIRECT};
  for (size_t pi = 0; pi < 3; pi++)
    for (int dt = 0; dt < 2; dt++) {
      rill_conv_force_path = paths[pi];
      op_harness *h = harness(op);
      rill_dtype t = dt ? RILL_DTYPE_FP64 : RILL_DTYPE_FP32;
      bind_input(h, "Input", "x", t, DIMS(c->n, c->c, c->h, c->w), dt ? (void *)x : (void *)xf);
      bind_input(h, "Filter", "w", t, DIMS(c->c, c->m / c->groups, c->kh, c->kw),
                 dt ? (void *)w : (void *)wf);
      OK(op_harness_output(h, "Output", "y"));
      set_conv_attrs(h, c);
      OK(op_harness_run(h));
      rill_tensor *y = op_harness_tensor(h, "y");
      expect_dims(y, DIMS(c->n, c->m, oh, ow));
      if (dt)
        expect_close_f64(rill_tensor_ptr(y), want, ny, 1e-12);
      else
        expect_close_f32(rill_tensor_ptr(y), wantf, ny, 1e-5f);
      op_harness_destroy(h);
    }
  rill_conv_force_path = RILL_CONV_PATH_AUTO;
  free(x);
  free(w);
  free(want);
  free(xf);
  free(wf);
  free(wantf);
}

static void check_convt(const conv_cfg *c) { check_convt_op("conv2d_transpose", c); }

Test(conv2d_transpose, matches_scatter_reference) {
  check_convt(CFG(1, 3, 4, 5, 2, 3, 3, 1, 1, 1, 1, 1, 2, {0, 0}));
  check_convt(CFG(2, 4, 3, 4, 6, 3, 3, 2, 2, 2, 1, 1, 4, {1, 0, 0, 1}));
  check_convt(CFG(1, 2, 4, 4, 12, 3, 2, 1, 2, 3, 2, 1, 2, {1, 1}));
  check_convt(CFG(1, 2, 5, 5, 3, 1, 1, 1, 1, 1, 1, 1, 2, {0, 0}));
  /* output_size within [inferred, inferred + stride), and output_padding */
  check_convt(CFG(1, 2, 3, 3, 2, 3, 3, 1, 2, 2, 1, 1, 2, {1, 1}, NULL, 2, 0, {6, 5}));
  check_convt(CFG(1, 2, 3, 4, 4, 3, 3, 2, 3, 2, 1, 1, 2, {0, 1}, NULL, 0, 2, {0, 0}, {2, 1}));
  /* SAME and VALID */
  check_convt(CFG(1, 2, 4, 5, 3, 3, 3, 1, 2, 2, 1, 1, 2, {0, 0}, "SAME"));
  check_convt(CFG(1, 2, 4, 5, 3, 3, 3, 1, 2, 1, 1, 1, 2, {3, 3}, "VALID"));
}

Test(conv2d_transpose, output_size_out_of_range_fails) {
  op_harness *h = harness("conv2d_transpose");
  bind_input(h, "Input", "x", RILL_DTYPE_FP32, DIMS(1, 2, 3, 3), NULL);
  bind_input(h, "Filter", "w", RILL_DTYPE_FP32, DIMS(2, 2, 3, 3), NULL);
  OK(op_harness_output(h, "Output", "y"));
  OK(op_harness_attr_ints(h, "strides", (const int32_t[]){2, 2}, 2));
  OK(op_harness_attr_ints(h, "output_size", (const int32_t[]){9, 7}, 2));
  EXPECT_ERROR(op_harness_run(h), "conv2d_transpose", "output_size", "Input (x)");
  op_harness_destroy(h);
}

/* ---- errors ---- */

Test(conv2d, channel_mismatch_names_op_and_variables) {
  op_harness *h = harness("conv2d");
  bind_input(h, "Input", "image", RILL_DTYPE_FP32, DIMS(1, 3, 8, 8), NULL);
  bind_input(h, "Filter", "conv1.w", RILL_DTYPE_FP32, DIMS(4, 2, 3, 3), NULL);
  OK(op_harness_output(h, "Output", "y"));
  EXPECT_ERROR(op_harness_run(h), "conv2d", "Input (image)", "Filter (conv1.w)", "channels");
  op_harness_destroy(h);
}

Test(conv2d, bad_rank_dtype_and_attrs_fail_at_inference) {
  op_harness *h = harness("conv2d");
  bind_input(h, "Input", "x", RILL_DTYPE_FP32, DIMS(3, 8, 8), NULL);
  bind_input(h, "Filter", "w", RILL_DTYPE_FP32, DIMS(4, 3, 3, 3), NULL);
  OK(op_harness_output(h, "Output", "y"));
  EXPECT_ERROR(op_harness_infer(h), "conv2d", "Input (x)", "rank 3");
  op_harness_destroy(h);

  h = harness("conv2d");
  bind_input(h, "Input", "x", RILL_DTYPE_FP32, DIMS(1, 3, 8, 8), NULL);
  bind_input(h, "Filter", "w", RILL_DTYPE_FP64, DIMS(4, 3, 3, 3), NULL);
  OK(op_harness_output(h, "Output", "y"));
  EXPECT_ERROR(op_harness_infer(h), "conv2d", "Filter (w)", "float64");
  op_harness_destroy(h);

  h = harness("conv2d");
  bind_input(h, "Input", "x", RILL_DTYPE_FP32, DIMS(1, 3, 8, 8), NULL);
  bind_input(h, "Filter", "w", RILL_DTYPE_FP32, DIMS(4, 3, 3, 3), NULL);
  OK(op_harness_output(h, "Output", "y"));
  OK(op_harness_attr_ints(h, "paddings", (const int32_t[]){1, 1, 1}, 3));
  EXPECT_ERROR(op_harness_infer(h), "conv2d", "paddings");
  op_harness_destroy(h);

  h = harness("conv2d");
  bind_input(h, "Input", "x", RILL_DTYPE_FP32, DIMS(1, 3, 2, 2), NULL);
  bind_input(h, "Filter", "w", RILL_DTYPE_FP32, DIMS(4, 3, 3, 3), NULL);
  OK(op_harness_output(h, "Output", "y"));
  EXPECT_ERROR(op_harness_infer(h), "conv2d", "smaller than the dilated filter");
  op_harness_destroy(h);

  h = harness("conv2d");
  bind_input(h, "Input", "x", RILL_DTYPE_FP32, DIMS(1, 3, 8, 8), NULL);
  bind_input(h, "Filter", "w", RILL_DTYPE_FP32, DIMS(4, 3, 3, 3), NULL);
  OK(op_harness_output(h, "Output", "y"));
  OK(op_harness_attr_string(h, "padding_algorithm", "FULL"));
  EXPECT_ERROR(op_harness_infer(h), "conv2d", "padding_algorithm", "FULL");
  op_harness_destroy(h);
}

/* ---- data_format NHWC: the NCHW op on transposed data ---- */

/* [n, a, b] -> [n, b, a] per image. */
static double *swap_last2(const double *src, int64_t n, int64_t a, int64_t b) {
  double *dst = malloc((size_t)(n * a * b) * sizeof *dst);
  for (int64_t i = 0; i < n; i++)
    for (int64_t r = 0; r < a; r++)
      for (int64_t c = 0; c < b; c++) dst[(i * b + c) * a + r] = src[(i * a + r) * b + c];
  return dst;
}

/* Filter dims and output extents of c: conv2d's filter is [M, C/groups, kh, kw], the
 * transposed convolution's (transpose) [C, M/groups, kh, kw]. */
static void layout_shapes(const conv_cfg *c, bool transpose, int64_t wd[4], int64_t *oh,
                          int64_t *ow) {
  if (transpose) {
    convt_out_size(c, oh, ow);
    wd[0] = c->c, wd[1] = c->m / c->groups;
  } else {
    conv_out_size(c, oh, ow);
    wd[0] = c->m, wd[1] = c->c / c->groups;
  }
  wd[2] = c->kh, wd[3] = c->kw;
}

/* Runs `op` (forward) and `op`_grad in one layout, in dtype t; Input x and Output@GRAD dy
 * (float64, in that layout) are converted to t, the outputs copied back into y, dx, dw as
 * float64. transpose: op is a transposed convolution (layout_shapes). */
static void run_layout(const char *op, const conv_cfg *c, bool transpose, bool nhwc, rill_dtype t,
                       const double *x, const double *w, const double *dy, double *y, double *dx,
                       double *dw) {
  int64_t oh, ow, wd[4];
  layout_shapes(c, transpose, wd, &oh, &ow);
  const int64_t xd[4] = {c->n, nhwc ? c->h : c->c, nhwc ? c->w : c->h, nhwc ? c->c : c->w};
  const int64_t yd[4] = {c->n, nhwc ? oh : c->m, nhwc ? ow : oh, nhwc ? c->m : ow};
  int64_t nx = c->n * c->c * c->h * c->w, ny = c->n * c->m * oh * ow, nw = wd[0] * wd[1] * wd[2] * wd[3];
  bool f32 = t == RILL_DTYPE_FP32;
  float *xf = to_f32(x, nx), *wf = to_f32(w, nw), *dyf = to_f32(dy, ny);
  char grad[64];
  snprintf(grad, sizeof grad, "%s_grad", op);
  for (int pass = 0; pass < 2; pass++) {
    op_harness *h = harness(pass ? grad : op);
    bind_input(h, "Input", "x", t, xd, 4, f32 ? (const void *)xf : (const void *)x);
    bind_input(h, "Filter", "w", t, wd, 4, f32 ? (const void *)wf : (const void *)w);
    if (pass) {
      bind_input(h, "Output@GRAD", "dy", t, yd, 4, f32 ? (const void *)dyf : (const void *)dy);
      OK(op_harness_output(h, "Input@GRAD", "dx"));
      OK(op_harness_output(h, "Filter@GRAD", "dw"));
    } else {
      OK(op_harness_output(h, "Output", "y"));
    }
    set_conv_attrs(h, c);
    OK(op_harness_attr_string(h, "data_format", nhwc ? "NHWC" : "NCHW"));
    OK(op_harness_run(h));
    const char *names[] = {pass ? "dx" : "y", "dw"};
    double *dsts[] = {pass ? dx : y, dw};
    for (int k = 0; k < 1 + pass; k++) {
      rill_tensor *r = op_harness_tensor(h, names[k]);
      if (k == 0) expect_dims(r, pass ? xd : yd, 4);
      else expect_dims(r, wd, 4);
      size_t cnt = rill_tensor_nbytes(r) / (f32 ? sizeof(float) : sizeof(double));
      for (size_t i = 0; i < cnt; i++)
        dsts[k][i] = f32 ? (double)((const float *)rill_tensor_ptr(r))[i] : ((const double *)rill_tensor_ptr(r))[i];
    }
    op_harness_destroy(h);
  }
  free(xf);
  free(wf);
  free(dyf);
}

/* `op` with NHWC equals NCHW on the same data transposed: Output, Input@GRAD and
 * Filter@GRAD; in float64, and for the transposed convolutions (transpose) in float32 too.
 * seed: the first of the three data seeds. */
static void check_layouts(const char *op, const conv_cfg *c, bool transpose, uint64_t seed) {
  int64_t oh, ow, wd[4];
  layout_shapes(c, transpose, wd, &oh, &ow);
  int64_t hw = c->h * c->w, ohw = oh * ow, nx = c->n * c->c * hw, ny = c->n * c->m * ohw;
  int64_t nw = wd[0] * wd[1] * wd[2] * wd[3];
  double *x = calloc((size_t)nx, 8), *w = calloc((size_t)nw, 8), *dy = calloc((size_t)ny, 8);
  double *y1 = calloc((size_t)ny, 8), *dx1 = calloc((size_t)nx, 8), *dw1 = calloc((size_t)nw, 8);
  double *y2 = calloc((size_t)ny, 8), *dx2 = calloc((size_t)nx, 8), *dw2 = calloc((size_t)nw, 8);
  fill_rand(x, nx, seed);
  fill_rand(w, nw, seed + 1);
  fill_rand(dy, ny, seed + 2);
  double *xt = swap_last2(x, c->n, c->c, hw), *dyt = swap_last2(dy, c->n, c->m, ohw);
  for (int dt = transpose ? 0 : 1; dt < 2; dt++) {
    rill_dtype t = dt ? RILL_DTYPE_FP64 : RILL_DTYPE_FP32;
    double tol = dt ? 1e-12 : 1e-5;
    run_layout(op, c, transpose, false, t, x, w, dy, y1, dx1, dw1);
    run_layout(op, c, transpose, true, t, xt, w, dyt, y2, dx2, dw2);
    double *y2n = swap_last2(y2, c->n, ohw, c->m), *dx2n = swap_last2(dx2, c->n, hw, c->c);
    expect_close_f64(y2n, y1, ny, tol);
    expect_close_f64(dx2n, dx1, nx, tol);
    expect_close_f64(dw2, dw1, nw, tol);
    free(y2n);
    free(dx2n);
  }
  double *bufs[] = {x, w, dy, y1, dx1, dw1, y2, dx2, dw2, xt, dyt};
  for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) free(bufs[i]);
}

static void check_nhwc(const char *op, const conv_cfg *c) { check_layouts(op, c, false, 21); }

Test(conv2d, nhwc_matches_nchw_on_transposed_data) {
  /* strides, asymmetric paddings, dilations, groups, SAME and VALID, a 1x1 */
  check_nhwc("conv2d", CFG(2, 3, 7, 6, 4, 3, 3, 1, 1, 1, 1, 1, 2, {1, 1}));
  check_nhwc("conv2d", CFG(1, 4, 9, 8, 6, 3, 2, 2, 2, 1, 2, 1, 4, {0, 2, 1, 0}));
  check_nhwc("conv2d", CFG(2, 6, 8, 7, 3, 3, 3, 3, 1, 2, 1, 1, 2, {0, 0}, "SAME"));
  check_nhwc("conv2d", CFG(1, 2, 8, 9, 5, 2, 3, 1, 3, 2, 1, 1, 2, {4, 4}, "VALID"));
  check_nhwc("conv2d", CFG(2, 5, 4, 6, 7, 1, 1, 1, 1, 1, 1, 1, 2, {0, 0}));
}

Test(depthwise_conv2d, nhwc_matches_nchw_on_transposed_data) {
  check_nhwc("depthwise_conv2d", CFG(2, 4, 7, 8, 4, 3, 3, 4, 1, 2, 1, 1, 2, {1, 1}));
  check_nhwc("depthwise_conv2d", CFG(1, 3, 9, 6, 6, 3, 3, 3, 2, 1, 1, 2, 4, {1, 0, 2, 1}));
}

Test(conv2d, nhwc_reads_channels_from_the_last_dim) {
  op_harness *h;
  /* 3 channels against a 2-channel filter */
  h = harness("conv2d");
  bind_input(h, "Input", "x", RILL_DTYPE_FP32, DIMS(1, 8, 8, 3), NULL);
  bind_input(h, "Filter", "w", RILL_DTYPE_FP32, DIMS(4, 2, 3, 3), NULL);
  OK(op_harness_output(h, "Output", "y"));
  OK(op_harness_attr_string(h, "data_format", "NHWC"));
  EXPECT_ERROR(op_harness_infer(h), "conv2d", "Input", "3 channels");
  op_harness_destroy(h);
}

Test(conv2d_fusion, nhwc_is_unimplemented) {
  op_harness *h = harness("conv2d_fusion");
  bind_input(h, "Input", "x", RILL_DTYPE_FP32, DIMS(1, 8, 8, 4), NULL);
  bind_input(h, "Filter", "w", RILL_DTYPE_FP32, DIMS(4, 4, 3, 3), NULL);
  bind_input(h, "Bias", "b", RILL_DTYPE_FP32, DIMS(4), NULL);
  OK(op_harness_output(h, "Output", "y"));
  OK(op_harness_attr_string(h, "data_format", "NHWC"));
  rill_status *st = op_harness_infer(h);
  cr_assert_eq(rill_status_code(st), RILL_UNIMPLEMENTED);
  EXPECT_ERROR(st, "conv2d_fusion", "NHWC");
  op_harness_destroy(h);
}

/* conv2d_transpose with NHWC equals NCHW on the same data transposed, in float32 and
 * float64. */
static void check_convt_nhwc_op(const char *op, const conv_cfg *c) { check_layouts(op, c, true, 31); }

static void check_convt_nhwc(const conv_cfg *c) { check_convt_nhwc_op("conv2d_transpose", c); }

Test(conv2d_transpose, nhwc_matches_nchw_on_transposed_data) {
  /* plain; strided with groups and asymmetric paddings; dilated; output_size;
   * output_padding; SAME and VALID; a 1x1 */
  check_convt_nhwc(CFG(2, 3, 4, 5, 2, 3, 3, 1, 1, 1, 1, 1, 2, {1, 1}));
  check_convt_nhwc(CFG(2, 4, 3, 4, 6, 3, 3, 2, 2, 2, 1, 1, 4, {1, 0, 0, 2}));
  check_convt_nhwc(CFG(1, 2, 4, 4, 4, 3, 2, 1, 2, 3, 2, 1, 2, {1, 1}));
  check_convt_nhwc(CFG(1, 2, 3, 3, 2, 3, 3, 1, 2, 2, 1, 1, 2, {1, 1}, NULL, 2, 0, {6, 5}));
  check_convt_nhwc(CFG(2, 4, 3, 4, 4, 3, 3, 2, 3, 2, 1, 1, 2, {0, 1}, NULL, 0, 2, {0, 0}, {2, 1}));
  check_convt_nhwc(CFG(1, 3, 4, 5, 3, 3, 3, 1, 2, 2, 1, 1, 2, {0, 0}, "SAME"));
  check_convt_nhwc(CFG(1, 2, 4, 5, 3, 3, 3, 1, 2, 1, 1, 1, 2, {3, 3}, "VALID"));
  check_convt_nhwc(CFG(2, 5, 3, 4, 3, 1, 1, 1, 1, 1, 1, 1, 2, {0, 0}));
}

Test(conv2d_transpose, nhwc_reads_channels_from_the_last_dim) {
  /* Input [1, 8, 8, 3] NHWC has 3 channels; Filter's first dim is 4 */
  op_harness *h = harness("conv2d_transpose");
  bind_input(h, "Input", "x", RILL_DTYPE_FP32, DIMS(1, 8, 8, 3), NULL);
  bind_input(h, "Filter", "w", RILL_DTYPE_FP32, DIMS(4, 2, 3, 3), NULL);
  OK(op_harness_output(h, "Output", "y"));
  OK(op_harness_attr_string(h, "data_format", "NHWC"));
  EXPECT_ERROR(op_harness_infer(h), "conv2d_transpose", "Input (x)", "Filter (w)", "3 channels");
  op_harness_destroy(h);
  /* NHWC's output is [N, OH, OW, C]: an Output@GRAD in NCHW order is refused */
  float x[1 * 3 * 3 * 4] = {0}, w[4 * 2 * 3 * 3] = {0}, dy[1 * 2 * 5 * 5] = {0};
  h = harness("conv2d_transpose_grad");
  bind_input(h, "Input", "x", RILL_DTYPE_FP32, DIMS(1, 3, 3, 4), x);
  bind_input(h, "Filter", "w", RILL_DTYPE_FP32, DIMS(4, 2, 3, 3), w);
  bind_input(h, "Output@GRAD", "dy", RILL_DTYPE_FP32, DIMS(1, 2, 5, 5), dy);
  OK(op_harness_output(h, "Input@GRAD", "dx"));
  OK(op_harness_attr_string(h, "data_format", "NHWC"));
  EXPECT_ERROR(op_harness_run(h), "conv2d_transpose_grad", "Output@GRAD (dy)", "[1, 5, 5, 2]");
  op_harness_destroy(h);
}

Test(conv2d, compile_time_unknown_extents_stay_unknown) {
  const rill_op_schema *s = rill_schema_find("conv2d");
  cr_assert_not_null(s);
  rill_attr_value attrs[16];
  cr_assert(s->nattrs <= 16);
  for (size_t i = 0; i < s->nattrs; i++) attrs[i] = s->attrs[i].def;
  rill_tensor_meta in[2] = {
      {.dtype = RILL_DTYPE_FP32, .dims = {4, {-1, 3, -1, 8}}, .known = true},
      {.dtype = RILL_DTYPE_FP32, .dims = {4, {6, 3, 3, 3}}, .known = true}};
  rill_tensor_meta outm;
  const rill_tensor_meta *ins[4] = {&in[0], &in[1], NULL, NULL};
  rill_tensor_meta *outs[1] = {&outm};
  size_t nin[4] = {1, 1, 0, 0}, nout[1] = {1};
  rill_infer_ctx ctx = {.schema = s, .attrs = attrs, .nin = nin, .in = ins, .nout = nout, .out = outs};
  OK(s->infer(&ctx));
  cr_assert(outm.known);
  cr_assert_eq(outm.dims.n, 4);
  cr_assert_eq(outm.dims.d[0], -1);
  cr_assert_eq(outm.dims.d[1], 6);
  cr_assert_eq(outm.dims.d[2], -1);
  cr_assert_eq(outm.dims.d[3], 6);
}

/* ---- gradients (float64 central differences) ---- */

static void grad_case(const char *op, const conv_cfg *c, bool transpose) {
  int64_t nx = c->n * c->c * c->h * c->w;
  int64_t nw = transpose ? c->c * (c->m / c->groups) * c->kh * c->kw
                         : c->m * (c->c / c->groups) * c->kh * c->kw;
  double *x = malloc((size_t)nx * sizeof *x), *w = malloc((size_t)nw * sizeof *w);
  fill_rand(x, nx, 5);
  fill_rand(w, nw, 6);
  fd_case fc = {.op = op, .nin = 2, .out_slots = {"Output"}, .out_names = {"y"}, .nout = 1,
                .attrs = set_conv_attrs, .arg = c, .tol = 1e-6};
  fc.in[0] = (fd_input){"Input", "x", {c->n, c->c, c->h, c->w}, 4, x, true};
  if (transpose)
    fc.in[1] = (fd_input){"Filter", "w", {c->c, c->m / c->groups, c->kh, c->kw}, 4, w, true};
  else
    fc.in[1] = (fd_input){"Filter", "w", {c->m, c->c / c->groups, c->kh, c->kw}, 4, w, true};
  const int paths[] = {RILL_CONV_PATH_AUTO, RILL_CONV_PATH_IM2COL, RILL_CONV_PATH_1X1,
                       RILL_CONV_PATH_DIRECT, RILL_CONV_PATH_DIRECT_GENERIC};
  for (size_t pi = 0; pi < 5; pi++) {
    rill_conv_force_path = paths[pi];
    fd_check(&fc);
  }
  rill_conv_force_path = RILL_CONV_PATH_AUTO;
  free(x);
  free(w);
}

Test(conv2d, gradients_match_finite_differences) {
  grad_case("conv2d", CFG(2, 2, 5, 4, 3, 3, 3, 1, 1, 1, 1, 1, 2, {1, 1}), false);
  grad_case("conv2d", CFG(1, 4, 6, 5, 4, 3, 2, 2, 2, 1, 2, 1, 4, {1, 2, 0, 1}), false);
  grad_case("conv2d", CFG(2, 2, 3, 3, 4, 1, 1, 2, 1, 1, 1, 1, 2, {0, 0}), false);
  grad_case("conv2d", CFG(1, 2, 5, 5, 2, 3, 3, 1, 2, 2, 1, 1, 2, {0, 0}, "SAME"), false);
}

Test(depthwise_conv2d, gradients_match_finite_differences) {
  grad_case("depthwise_conv2d", CFG(2, 3, 5, 5, 3, 3, 3, 3, 1, 1, 1, 1, 2, {1, 1}), false);
  grad_case("depthwise_conv2d", CFG(1, 2, 6, 5, 4, 3, 3, 2, 2, 2, 2, 1, 4, {1, 0, 2, 1}), false);
}

Test(conv2d_transpose, gradients_match_finite_differences) {
  grad_case("conv2d_transpose", CFG(1, 2, 3, 3, 2, 3, 3, 1, 2, 2, 1, 1, 2, {1, 1}), true);
  grad_case("conv2d_transpose", CFG(2, 4, 2, 3, 2, 2, 3, 2, 1, 2, 1, 2, 4, {0, 1, 1, 0}, NULL, 0, 2, {0, 0}, {0, 1}), true);
}

/* depthwise_conv2d_transpose (groups == input channels, Paddle's layer writes it when
 * num_filters equals them too): the scatter reference, NHWC against NCHW, and its own
 * gradient op by finite differences; groups that differ from the channels name the op
 * and Input. */
Test(depthwise_conv2d_transpose, matches_reference_layouts_and_gradients) {
  check_convt_op("depthwise_conv2d_transpose", CFG(2, 3, 4, 5, 3, 3, 3, 3, 1, 1, 1, 1, 2, {1, 1}));
  check_convt_op("depthwise_conv2d_transpose", CFG(1, 4, 3, 4, 8, 3, 3, 4, 2, 2, 1, 1, 4, {1, 0, 0, 1}));
  check_convt_op("depthwise_conv2d_transpose", CFG(1, 2, 4, 5, 2, 3, 3, 2, 2, 2, 1, 1, 2, {0, 0}, "SAME"));
  check_convt_nhwc_op("depthwise_conv2d_transpose", CFG(2, 3, 4, 5, 3, 3, 3, 3, 2, 1, 2, 1, 2, {1, 1}));
  grad_case("depthwise_conv2d_transpose", CFG(1, 3, 3, 3, 3, 3, 3, 3, 2, 2, 1, 1, 2, {1, 1}), true);
}

Test(depthwise_conv2d_transpose, groups_other_than_channels_fail) {
  op_harness *h = harness("depthwise_conv2d_transpose");
  bind_input(h, "Input", "x", RILL_DTYPE_FP32, DIMS(1, 4, 3, 3), NULL);
  bind_input(h, "Filter", "w", RILL_DTYPE_FP32, DIMS(4, 2, 3, 3), NULL);
  OK(op_harness_output(h, "Output", "y"));
  OK(op_harness_attr_int(h, "groups", 2));
  EXPECT_ERROR(op_harness_infer(h), "depthwise_conv2d_transpose", "Input (x)", "groups is 2", "4 channels");
  op_harness_destroy(h);
}

Test(conv2d, absent_gradient_outputs_are_skipped) {
  conv_cfg c = {1, 2, 4, 4, 2, 3, 3, 1, 1, 1, 1, 1, 2, {1, 1}};
  double x[32], w[36], dy[32];
  fill_rand(x, 32, 1);
  fill_rand(w, 36, 2);
  fill_rand(dy, 32, 3);
  op_harness *h = harness("conv2d_grad");
  bind_input(h, "Input", "x", RILL_DTYPE_FP64, DIMS(1, 2, 4, 4), x);
  bind_input(h, "Filter", "w", RILL_DTYPE_FP64, DIMS(2, 2, 3, 3), w);
  bind_input(h, "Output@GRAD", "y@GRAD", RILL_DTYPE_FP64, DIMS(1, 2, 4, 4), dy);
  OK(op_harness_output(h, "Filter@GRAD", "w@GRAD"));
  set_conv_attrs(h, &c);
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "w@GRAD"), DIMS(2, 2, 3, 3));
  cr_assert_null(op_harness_tensor(h, "x@GRAD"));
  op_harness_destroy(h);
}

/* ---- larger shapes: im2col in several row blocks against the direct path ---- */

static void run_grad_op(const char *type, const conv_cfg *c, const double *x, const double *w,
                        const double *dy, int path, double *dx, double *dw) {
  int64_t oh, ow;
  conv_out_size(c, &oh, &ow);
  rill_conv_force_path = path;
  op_harness *h = harness(type);
  bind_input(h, "Input", "x", RILL_DTYPE_FP64, DIMS(c->n, c->c, c->h, c->w), x);
  bind_input(h, "Filter", "w", RILL_DTYPE_FP64, DIMS(c->m, c->c / c->groups, c->kh, c->kw), w);
  bind_input(h, "Output@GRAD", "dy", RILL_DTYPE_FP64, DIMS(c->n, c->m, oh, ow), dy);
  OK(op_harness_output(h, "Input@GRAD", "dx"));
  OK(op_harness_output(h, "Filter@GRAD", "dw"));
  set_conv_attrs(h, c);
  OK(op_harness_run(h));
  rill_tensor *a = op_harness_tensor(h, "dx"), *b = op_harness_tensor(h, "dw");
  memcpy(dx, rill_tensor_ptr(a), rill_tensor_nbytes(a));
  memcpy(dw, rill_tensor_ptr(b), rill_tensor_nbytes(b));
  op_harness_destroy(h);
  rill_conv_force_path = RILL_CONV_PATH_AUTO;
}

Test(conv2d, blocked_im2col_gradients_match_direct) {
  /* 40x40 output rows with K = 180 and a 256 KiB budget: the float64 column buffer
   * takes several blocks */
  size_t saved_budget = rill_conv_col_budget;
  rill_conv_col_budget = 256 * 1024;
  const conv_cfg cfgs[] = {{2, 20, 40, 40, 8, 3, 3, 1, 1, 1, 1, 1, 2, {1, 1}},
                           {1, 20, 44, 40, 8, 3, 3, 2, 1, 1, 1, 1, 4, {0, 2, 1, 1}}};
  for (size_t k = 0; k < 2; k++) {
    const conv_cfg *c = &cfgs[k];
    int64_t oh, ow;
    conv_out_size(c, &oh, &ow);
    int64_t nx = c->n * c->c * c->h * c->w, nw = c->m * (c->c / c->groups) * 9, ny = c->n * c->m * oh * ow;
    double *x = malloc((size_t)nx * 8), *w = malloc((size_t)nw * 8), *dy = malloc((size_t)ny * 8);
    double *dx1 = malloc((size_t)nx * 8), *dx2 = malloc((size_t)nx * 8);
    double *dw1 = malloc((size_t)nw * 8), *dw2 = malloc((size_t)nw * 8);
    fill_rand(x, nx, 7);
    fill_rand(w, nw, 8);
    fill_rand(dy, ny, 9);
    run_grad_op("conv2d_grad", c, x, w, dy, RILL_CONV_PATH_IM2COL, dx1, dw1);
    run_grad_op("conv2d_grad", c, x, w, dy, RILL_CONV_PATH_DIRECT, dx2, dw2);
    expect_close_f64(dx1, dx2, nx, 1e-11);
    expect_close_f64(dw1, dw2, nw, 1e-11);
    free(x);
    free(w);
    free(dy);
    free(dx1);
    free(dx2);
    free(dw1);
    free(dw2);
  }
  rill_conv_col_budget = saved_budget;
}

/* ---- batches of small images split over threads ---- */

/* conv2d (y) and conv2d_grad (dx, dw) of one configuration in dtype t with `threads`
 * device threads; the outputs copied out. */
static void run_split_case(const conv_cfg *c, rill_dtype t, int32_t threads, const void *x,
                           const void *w, const void *dy, void *y, void *dx, void *dw) {
  int64_t oh, ow;
  conv_out_size(c, &oh, &ow);
  op_harness *h = harness("conv2d");
  op_harness_set_threads(h, threads);
  bind_input(h, "Input", "x", t, DIMS(c->n, c->c, c->h, c->w), x);
  bind_input(h, "Filter", "w", t, DIMS(c->m, c->c / c->groups, c->kh, c->kw), w);
  OK(op_harness_output(h, "Output", "y"));
  set_conv_attrs(h, c);
  OK(op_harness_run(h));
  rill_tensor *ty = op_harness_tensor(h, "y");
  memcpy(y, rill_tensor_ptr(ty), rill_tensor_nbytes(ty));
  op_harness_destroy(h);
  h = harness("conv2d_grad");
  op_harness_set_threads(h, threads);
  bind_input(h, "Input", "x", t, DIMS(c->n, c->c, c->h, c->w), x);
  bind_input(h, "Filter", "w", t, DIMS(c->m, c->c / c->groups, c->kh, c->kw), w);
  bind_input(h, "Output@GRAD", "dy", t, DIMS(c->n, c->m, oh, ow), dy);
  OK(op_harness_output(h, "Input@GRAD", "dx"));
  OK(op_harness_output(h, "Filter@GRAD", "dw"));
  set_conv_attrs(h, c);
  OK(op_harness_run(h));
  rill_tensor *a = op_harness_tensor(h, "dx"), *b = op_harness_tensor(h, "dw");
  memcpy(dx, rill_tensor_ptr(a), rill_tensor_nbytes(a));
  memcpy(dw, rill_tensor_ptr(b), rill_tensor_nbytes(b));
  op_harness_destroy(h);
}

/* Batches of small images run split by images over the device's threads (1, 2 and 3:
 * uneven ranges), the filter gradient summed over fixed chunks of images. All three
 * outputs are the same bit for bit for every thread count and on repeated runs, and
 * close to the per-image path's (whose GEMMs have other shapes, so BLAS rounds them
 * otherwise). */
Test(conv2d, image_split_matches_per_image_path) {
  const conv_cfg cfgs[] = {
      /* LeNet's first layer: one channel, padding, 13 images (a short last chunk) */
      {13, 1, 12, 12, 6, 5, 5, 1, 1, 1, 1, 1, 2, {2, 2}},
      /* its second: 6 -> 16 channels, no padding */
      {9, 6, 9, 9, 16, 5, 5, 1, 1, 1, 1, 1, 2, {0, 0}},
      /* stride 2, dilation, two groups, uneven padding */
      {6, 4, 11, 10, 6, 3, 3, 2, 2, 2, 2, 1, 4, {1, 0, 2, 1}},
      /* rows of more than 8 columns and a row wider than the chunk copy's reach */
      {5, 2, 6, 21, 3, 3, 3, 1, 1, 1, 1, 1, 2, {1, 1}}};
  for (size_t k = 0; k < sizeof cfgs / sizeof cfgs[0]; k++)
    for (int dt = 0; dt < 2; dt++) {
      const conv_cfg *c = &cfgs[k];
      rill_dtype t = dt ? RILL_DTYPE_FP64 : RILL_DTYPE_FP32;
      size_t es = dt ? 8 : 4;
      int64_t oh, ow;
      conv_out_size(c, &oh, &ow);
      int64_t nx = c->n * c->c * c->h * c->w, nw = c->m * (c->c / c->groups) * c->kh * c->kw;
      int64_t ny = c->n * c->m * oh * ow;
      double *xd = malloc((size_t)nx * 8), *wd = malloc((size_t)nw * 8), *dyd = malloc((size_t)ny * 8);
      fill_rand(xd, nx, 11);
      fill_rand(wd, nw, 12);
      fill_rand(dyd, ny, 13);
      float *xf = to_f32(xd, nx), *wf = to_f32(wd, nw), *dyf = to_f32(dyd, ny);
      const void *x = dt ? (void *)xd : (void *)xf, *w = dt ? (void *)wd : (void *)wf;
      const void *dy = dt ? (void *)dyd : (void *)dyf;
      char *y0 = malloc((size_t)ny * es), *dx0 = malloc((size_t)nx * es), *dw0 = malloc((size_t)nw * es);
      char *y = malloc((size_t)ny * es), *dx = malloc((size_t)nx * es), *dw = malloc((size_t)nw * es);
      char *y1 = malloc((size_t)ny * es), *dx1 = malloc((size_t)nx * es), *dw1 = malloc((size_t)nw * es);
      rill_conv_force_path = RILL_CONV_PATH_IM2COL;
      rill_conv_split_images = false;
      run_split_case(c, t, 1, x, w, dy, y0, dx0, dw0);
      rill_conv_split_images = true;
      run_split_case(c, t, 1, x, w, dy, y1, dx1, dw1);
      /* The split path unfolds a chunk of images into one GEMM, whose shape differs from
       * the per-image path's: BLAS blocks the two differently (by CPU and by
       * OPENBLAS_CORETYPE), so the paths agree within rounding, not bit for bit. */
      if (dt) {
        expect_close_f64((const double *)y1, (const double *)y0, ny, 1e-12);
        expect_close_f64((const double *)dx1, (const double *)dx0, nx, 1e-12);
        expect_close_f64((const double *)dw1, (const double *)dw0, nw, 1e-12);
      } else {
        expect_close_f32((const float *)y1, (const float *)y0, ny, 1e-5f);
        expect_close_f32((const float *)dx1, (const float *)dx0, nx, 1e-5f);
        expect_close_f32((const float *)dw1, (const float *)dw0, nw, 1e-5f);
      }
      for (int32_t threads = 1; threads <= 3; threads++)
        for (int rep = 0; rep < 2; rep++) {
          run_split_case(c, t, threads, x, w, dy, y, dx, dw);
          cr_expect(memcmp(y, y1, (size_t)ny * es) == 0,
                    "case %zu, %d threads: forward differs from one thread's", k, (int)threads);
          cr_expect(memcmp(dx, dx1, (size_t)nx * es) == 0,
                    "case %zu, %d threads: Input@GRAD differs from one thread's", k, (int)threads);
          cr_expect(memcmp(dw, dw1, (size_t)nw * es) == 0,
                    "case %zu, %d threads: Filter@GRAD differs from one thread's", k, (int)threads);
        }
      rill_conv_force_path = RILL_CONV_PATH_AUTO;
      free(xd), free(wd), free(dyd), free(xf), free(wf), free(dyf);
      free(y0), free(dx0), free(dw0), free(y), free(dx), free(dw);
      free(y1), free(dx1), free(dw1);
    }
}

/* ---- out of memory: every allocation of a run may fail, leaking nothing ---- */

typedef struct oom_ctx {
  const char *type;
  int path;
  int64_t n; /* batch; 0: 2 */
} oom_ctx;

static rill_status *oom_run(void *arg) {
  const oom_ctx *o = arg;
  float x[5 * 3 * 6 * 6], w[4 * 3 * 3 * 3], dy[5 * 4 * 6 * 6];
  int64_t n = o->n ? o->n : 2;
  for (size_t i = 0; i < sizeof x / sizeof x[0]; i++) x[i] = (float)(i % 7) - 3;
  for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) w[i] = (float)(i % 5) - 2;
  for (size_t i = 0; i < sizeof dy / sizeof dy[0]; i++) dy[i] = (float)(i % 3) - 1;
  bool grad = strstr(o->type, "_grad") != NULL;
  rill_conv_force_path = o->path;
  op_harness *h = NULL;
  rill_status *st = op_harness_create(o->type, &h);
  if (st) return st;
  rill_tensor *tx = op_harness_make(RILL_DTYPE_FP32, DIMS(n, 3, 6, 6), x);
  rill_tensor *tw = op_harness_make(RILL_DTYPE_FP32, DIMS(4, 3, 3, 3), w);
  rill_tensor *tdy = op_harness_make(RILL_DTYPE_FP32, DIMS(n, 4, 6, 6), dy);
  if (!tx || !tw || !tdy) st = rill_oom();
  if (!st) st = op_harness_input(h, "Input", "x", tx);
  if (!st) st = op_harness_input(h, "Filter", "w", tw);
  if (!st) st = op_harness_attr_ints(h, "paddings", (const int32_t[]){1, 1}, 2);
  if (grad) {
    if (!st) st = op_harness_input(h, "Output@GRAD", "dy", tdy);
    if (!st) st = op_harness_output(h, "Input@GRAD", "dx");
    if (!st) st = op_harness_output(h, "Filter@GRAD", "dw");
  } else if (!st) {
    st = op_harness_output(h, "Output", "y");
  }
  if (!st) st = op_harness_run(h);
  op_harness_free_tensor(tx);
  op_harness_free_tensor(tw);
  op_harness_free_tensor(tdy);
  op_harness_destroy(h);
  rill_conv_force_path = RILL_CONV_PATH_AUTO;
  return st;
}

Test(conv2d, out_of_memory_fails_cleanly) {
  OK(rill_registry_init());
  const oom_ctx cases[] = {{"conv2d", RILL_CONV_PATH_IM2COL},
                           {"conv2d_grad", RILL_CONV_PATH_IM2COL},
                           {"conv2d", RILL_CONV_PATH_DIRECT},
                           /* a batch of 5 small images: the image split */
                           {"conv2d", RILL_CONV_PATH_IM2COL, 5},
                           {"conv2d_grad", RILL_CONV_PATH_IM2COL, 5}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char why[512] = "";
    long runs = fail_alloc_sweep(oom_run, NULL, (void *)&cases[i], 100000, false, why, sizeof why);
    cr_assert_geq(runs, 1, "%s: %s", cases[i].type, why);
  }
}
