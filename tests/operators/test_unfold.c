/* unfold: shapes, every column entry against a direct index computation (strides,
 * asymmetric paddings, dilations), the gradient against finite differences, and the
 * errors naming op and variable. */
#include "op_test.h"
#include "support/grad_check.h"

static void geometry(op_harness *h, int kh, int kw, int sh, int sw, const int32_t pad[4], int dh,
                     int dw) {
  OK(op_harness_attr_ints(h, "kernel_sizes", (const int32_t[]){kh, kw}, 2));
  OK(op_harness_attr_ints(h, "strides", (const int32_t[]){sh, sw}, 2));
  OK(op_harness_attr_ints(h, "paddings", pad, 4));
  OK(op_harness_attr_ints(h, "dilations", (const int32_t[]){dh, dw}, 2));
}

Test(unfold, columns_match_direct_indexing) {
  enum { N = 2, C = 3, H = 5, W = 6, KH = 2, KW = 3, SH = 2, SW = 1, DH = 2, DW = 1 };
  const int32_t pad[4] = {1, 0, 2, 1};
  float x[N * C * H * W];
  for (int i = 0; i < N * C * H * W; i++) x[i] = (float)(i + 1);
  op_harness *h = harness("unfold");
  bind_input(h, "X", "img", RILL_DTYPE_FP32, DIMS(N, C, H, W), x);
  OK(op_harness_output(h, "Y", "cols"));
  geometry(h, KH, KW, SH, SW, pad, DH, DW);
  OK(op_harness_run(h));
  int oh = (H + pad[0] + pad[2] - (DH * (KH - 1) + 1)) / SH + 1;
  int ow = (W + pad[1] + pad[3] - (DW * (KW - 1) + 1)) / SW + 1;
  const rill_tensor *y = op_harness_tensor(h, "cols");
  expect_dims(y, DIMS(N, C * KH * KW, oh * ow));
  const float *yp = rill_tensor_ptr(y);
  for (int n = 0; n < N; n++)
    for (int c = 0; c < C; c++)
      for (int i = 0; i < KH; i++)
        for (int j = 0; j < KW; j++)
          for (int oy = 0; oy < oh; oy++)
            for (int ox = 0; ox < ow; ox++) {
              int yy = oy * SH - pad[0] + i * DH, xx = ox * SW - pad[1] + j * DW;
              float want = yy >= 0 && yy < H && xx >= 0 && xx < W ? x[((n * C + c) * H + yy) * W + xx] : 0;
              int row = (c * KH + i) * KW + j;
              cr_assert_float_eq(yp[((int64_t)n * C * KH * KW + row) * oh * ow + oy * ow + ox], want, 0,
                                 "n %d row %d window (%d, %d)", n, row, oy, ox);
            }
  op_harness_destroy(h);
}

Test(unfold, shape_with_symmetric_padding) {
  op_harness *h = harness("unfold");
  float x[1 * 2 * 7 * 4] = {0};
  bind_input(h, "X", "img", RILL_DTYPE_FP32, DIMS(1, 2, 7, 4), x);
  OK(op_harness_output(h, "Y", "cols"));
  geometry(h, 3, 2, 2, 2, (const int32_t[]){1, 1, 1, 1}, 1, 1);
  OK(op_harness_run(h));
  /* OH = (7 + 2 - 3) / 2 + 1 = 4, OW = (4 + 2 - 2) / 2 + 1 = 3 */
  expect_dims(op_harness_tensor(h, "cols"), DIMS(1, 12, 12));
  op_harness_destroy(h);
}

Test(unfold, gradient_matches_finite_differences) {
  enum { N = 2, C = 2, H = 5, W = 4 };
  double x[N * C * H * W];
  for (int i = 0; i < N * C * H * W; i++) x[i] = sin(i * 0.41);
  op_harness *h = harness("unfold");
  bind_input(h, "X", "img", RILL_DTYPE_FP64, DIMS(N, C, H, W), x);
  OK(op_harness_output(h, "Y", "cols"));
  geometry(h, 3, 2, 1, 2, (const int32_t[]){1, 0, 0, 2}, 2, 1);
  OK(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Y"), NULL));
  op_harness_destroy(h);
}

Test(unfold, errors_name_op_and_variable) {
  float x[2 * 3 * 3] = {0};
  op_harness *h = harness("unfold");
  bind_input(h, "X", "img3", RILL_DTYPE_FP32, DIMS(2, 3, 3), x);
  OK(op_harness_output(h, "Y", "cols"));
  geometry(h, 2, 2, 1, 1, (const int32_t[]){0, 0, 0, 0}, 1, 1);
  EXPECT_ERROR(op_harness_run(h), "unfold", "img3", "[N, C, H, W]");
  op_harness_destroy(h);
  h = harness("unfold");
  bind_input(h, "X", "small", RILL_DTYPE_FP32, DIMS(1, 2, 3, 3), x);
  OK(op_harness_output(h, "Y", "cols"));
  geometry(h, 4, 2, 1, 1, (const int32_t[]){0, 0, 0, 0}, 1, 1);
  EXPECT_ERROR(op_harness_run(h), "unfold", "small", "smaller than one window");
  op_harness_destroy(h);
  h = harness("unfold");
  bind_input(h, "X", "img", RILL_DTYPE_FP32, DIMS(1, 2, 3, 3), x);
  OK(op_harness_output(h, "Y", "cols"));
  geometry(h, 2, 2, 0, 1, (const int32_t[]){0, 0, 0, 0}, 1, 1);
  EXPECT_ERROR(op_harness_run(h), "unfold", "img", "strides");
  op_harness_destroy(h);
}
