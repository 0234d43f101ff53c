/* im2sequence: rows and LoD against direct indexing, the real-size variant (Y with
 * out_stride: sequence lengths and the rows Paddle 1.8.5 gives), Y ignored for one image,
 * the gradient against finite differences, and the errors naming op and variable. */
#include "op_test.h"
#include "support/grad_check.h"

static void geometry(op_harness *h, int kh, int kw, int sh, int sw, const int32_t pad[4]) {
  OK(op_harness_attr_ints(h, "kernels", (const int32_t[]){kh, kw}, 2));
  OK(op_harness_attr_ints(h, "strides", (const int32_t[]){sh, sw}, 2));
  OK(op_harness_attr_ints(h, "paddings", pad, 4));
}

/* Row r of image n's windows on an oh x ow grid, checked entry by entry against X. */
static void expect_rows(const float *out, const float *x, int C, int H, int W, int kh, int kw,
                        int sh, int sw, const int32_t pad[4], int oh, int ow) {
  for (int oy = 0; oy < oh; oy++)
    for (int ox = 0; ox < ow; ox++)
      for (int c = 0; c < C; c++)
        for (int i = 0; i < kh; i++)
          for (int j = 0; j < kw; j++) {
            int yy = oy * sh - pad[0] + i, xx = ox * sw - pad[1] + j;
            float want = yy >= 0 && yy < H && xx >= 0 && xx < W ? x[(c * H + yy) * W + xx] : 0;
            float got = out[(oy * ow + ox) * C * kh * kw + (c * kh + i) * kw + j];
            cr_assert_float_eq(got, want, 0, "window (%d, %d) tap (%d, %d, %d)", oy, ox, c, i, j);
          }
}

Test(im2sequence, rows_and_lod_match_direct_indexing) {
  enum { N = 2, C = 2, H = 5, W = 4, KH = 2, KW = 3, SH = 2, SW = 1 };
  const int32_t pad[4] = {1, 1, 0, 2};
  float x[N * C * H * W];
  for (int i = 0; i < N * C * H * W; i++) x[i] = (float)(i + 1);
  op_harness *h = harness("im2sequence");
  bind_input(h, "X", "img", RILL_DTYPE_FP32, DIMS(N, C, H, W), x);
  OK(op_harness_output(h, "Out", "seq"));
  geometry(h, KH, KW, SH, SW, pad);
  OK(op_harness_run(h));
  int oh = (H + 1 + 0 - KH) / SH + 1, ow = (W + 1 + 2 - KW) / SW + 1;
  const rill_tensor *o = op_harness_tensor(h, "seq");
  expect_dims(o, DIMS(N * oh * ow, C * KH * KW));
  cr_assert_eq(o->lod.nlevels, 1u);
  cr_assert_eq(o->lod.levels[0].n, 3u);
  for (int n = 0; n <= N; n++) cr_assert_eq(o->lod.levels[0].offsets[n], (uint64_t)(n * oh * ow));
  const float *op = rill_tensor_ptr(o);
  for (int n = 0; n < N; n++)
    expect_rows(op + n * oh * ow * C * KH * KW, x + n * C * H * W, C, H, W, KH, KW, SH, SW, pad, oh, ow);
  op_harness_destroy(h);
}

/* Paddle 1.8.5 on this X and Y (kernels [2, 3], strides [1, 2], paddings [1, 0, 0, 1],
 * out_stride [2, 3]) gives LoD [0, 4, 7, 12]: image n's grid comes from its real size
 * ceil(h / 2) x ceil(w / 3). */
Test(im2sequence, real_sizes_shorten_the_sequences) {
  enum { N = 3, C = 2, H = 7, W = 8 };
  const int32_t pad[4] = {1, 0, 0, 1};
  float x[N * C * H * W];
  for (int i = 0; i < N * C * H * W; i++) x[i] = (float)i;
  const float real[] = {7, 8, 5, 6, 9, 4};
  op_harness *h = harness("im2sequence");
  bind_input(h, "X", "img", RILL_DTYPE_FP32, DIMS(N, C, H, W), x);
  bind_input(h, "Y", "real", RILL_DTYPE_FP32, DIMS(N, 2), real);
  OK(op_harness_output(h, "Out", "seq"));
  geometry(h, 2, 3, 1, 2, pad);
  OK(op_harness_attr_ints(h, "out_stride", (const int32_t[]){2, 3}, 2));
  OK(op_harness_run(h));
  const rill_tensor *o = op_harness_tensor(h, "seq");
  expect_dims(o, DIMS(12, 12));
  const uint64_t want[] = {0, 4, 7, 12};
  for (int i = 0; i < 4; i++) cr_assert_eq(o->lod.levels[0].offsets[i], want[i]);
  const int grids[3][2] = {{4, 1}, {3, 1}, {5, 1}};
  const float *op = rill_tensor_ptr(o);
  for (int n = 0; n < N; n++)
    expect_rows(op + want[n] * 12, x + n * C * H * W, C, H, W, 2, 3, 1, 2, pad, grids[n][0], grids[n][1]);
  const float row1[12] = {0, 1, 2, 8, 9, 10, 56, 57, 58, 64, 65, 66};
  expect_close_f32(op + 12, row1, 12, 0);
  op_harness_destroy(h);
}

Test(im2sequence, one_image_ignores_real_size) {
  float x[1 * 1 * 4 * 4];
  for (int i = 0; i < 16; i++) x[i] = (float)i;
  const float real[] = {1, 1};
  op_harness *h = harness("im2sequence");
  bind_input(h, "X", "img", RILL_DTYPE_FP32, DIMS(1, 1, 4, 4), x);
  bind_input(h, "Y", "real", RILL_DTYPE_FP32, DIMS(1, 2), real);
  OK(op_harness_output(h, "Out", "seq"));
  geometry(h, 2, 2, 2, 2, (const int32_t[]){0, 0, 0, 0});
  OK(op_harness_attr_ints(h, "out_stride", (const int32_t[]){4, 4}, 2));
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "seq"), DIMS(4, 4));
  op_harness_destroy(h);
}

Test(im2sequence, gradient_matches_finite_differences) {
  enum { N = 2, C = 2, H = 5, W = 4 };
  double x[N * C * H * W];
  for (int i = 0; i < N * C * H * W; i++) x[i] = cos(i * 0.29);
  for (int with_y = 0; with_y < 2; with_y++) {
    op_harness *h = harness("im2sequence");
    bind_input(h, "X", "img", RILL_DTYPE_FP64, DIMS(N, C, H, W), x);
    if (with_y) {
      const float real[] = {5, 4, 3, 2};
      bind_input(h, "Y", "real", RILL_DTYPE_FP32, DIMS(N, 2), real);
    }
    OK(op_harness_output(h, "Out", "seq"));
    geometry(h, 2, 2, 1, 2, (const int32_t[]){1, 0, 1, 1});
    OK(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), NULL));
    op_harness_destroy(h);
  }
}

Test(im2sequence, errors_name_op_and_variable) {
  float x[2 * 2 * 3 * 3] = {0};
  op_harness *h = harness("im2sequence");
  bind_input(h, "X", "img3", RILL_DTYPE_FP32, DIMS(2, 3, 3), x);
  OK(op_harness_output(h, "Out", "seq"));
  geometry(h, 2, 2, 1, 1, (const int32_t[]){0, 0, 0, 0});
  EXPECT_ERROR(op_harness_run(h), "im2sequence", "img3", "[N, C, H, W]");
  op_harness_destroy(h);
  h = harness("im2sequence");
  bind_input(h, "X", "img", RILL_DTYPE_FP32, DIMS(2, 1, 3, 3), x);
  const float real[] = {3, 3, 3, 3, 3, 3};
  bind_input(h, "Y", "real", RILL_DTYPE_FP32, DIMS(3, 2), real);
  OK(op_harness_output(h, "Out", "seq"));
  geometry(h, 2, 2, 1, 1, (const int32_t[]){0, 0, 0, 0});
  EXPECT_ERROR(op_harness_run(h), "im2sequence", "real", "[3, 2]");
  op_harness_destroy(h);
  h = harness("im2sequence");
  bind_input(h, "X", "img", RILL_DTYPE_FP32, DIMS(2, 1, 3, 3), x);
  const float bad[] = {3, 3, -1, 3};
  bind_input(h, "Y", "real", RILL_DTYPE_FP32, DIMS(2, 2), bad);
  OK(op_harness_output(h, "Out", "seq"));
  geometry(h, 2, 2, 1, 1, (const int32_t[]){0, 0, 0, 0});
  EXPECT_ERROR(op_harness_run(h), "im2sequence", "real", "row 1");
  op_harness_destroy(h);
  h = harness("im2sequence");
  bind_input(h, "X", "img", RILL_DTYPE_FP32, DIMS(2, 1, 3, 3), x);
  OK(op_harness_output(h, "Out", "seq"));
  geometry(h, 4, 2, 1, 1, (const int32_t[]){0, 0, 0, 0});
  EXPECT_ERROR(op_harness_run(h), "im2sequence", "img", "smaller than one window");
  op_harness_destroy(h);
}
