/* pixel_shuffle, shuffle_channel and space_to_depth: forward against references (Paddle
 * 1.8.5's output for space_to_depth's odd order), gradients by finite differences, an
 * integer input, and the errors bad factors give. */
#include "op_test.h"
#include "support/grad_check.h"

static op_harness *make(const char *op, const char *attr, int f, rill_dtype dt,
                        const int64_t *dims, const void *x) {
  op_harness *h = harness(op);
  bind_input(h, "X", "feat", dt, dims, 4, x);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_int(h, attr, f));
  return h;
}

Test(rearrange, pixel_shuffle_forward_and_gradient) {
  double x[2 * 8 * 2 * 3];
  for (int i = 0; i < 96; i++) x[i] = i;
  op_harness *h = make("pixel_shuffle", "upscale_factor", 2, RILL_DTYPE_FP64,
                       (int64_t[]){2, 8, 2, 3}, x);
  OK(op_harness_run(h));
  const rill_tensor *o = op_harness_tensor(h, "out");
  expect_dims(o, DIMS(2, 2, 4, 6));
  const double *op = rill_tensor_ptr(o);
  for (int n = 0; n < 2; n++)
    for (int c = 0; c < 2; c++)
      for (int oh = 0; oh < 4; oh++)
        for (int ow = 0; ow < 6; ow++) {
          int ic = c * 4 + (oh % 2) * 2 + ow % 2;
          double want = x[((n * 8 + ic) * 2 + oh / 2) * 3 + ow / 2];
          cr_assert_eq(op[((n * 2 + c) * 4 + oh) * 6 + ow], want);
        }
  OK(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), NULL));
  op_harness_destroy(h);
}

Test(rearrange, shuffle_channel_forward_and_gradient) {
  double x[1 * 6 * 2 * 2];
  for (int i = 0; i < 24; i++) x[i] = i;
  op_harness *h = make("shuffle_channel", "group", 3, RILL_DTYPE_FP64, (int64_t[]){1, 6, 2, 2}, x);
  OK(op_harness_run(h));
  const double *op = rill_tensor_ptr(op_harness_tensor(h, "out"));
  /* channels a*2 + b -> b*3 + a: out channel order 0, 2, 4, 1, 3, 5 */
  const int src[6] = {0, 2, 4, 1, 3, 5};
  for (int c = 0; c < 6; c++)
    for (int k = 0; k < 4; k++) cr_assert_eq(op[c * 4 + k], x[src[c] * 4 + k]);
  op_harness_destroy(h);
  /* with C = group^2 the map is its own inverse and Paddle's gradient is the gradient */
  double y[9 * 2 * 2];
  for (int i = 0; i < 36; i++) y[i] = sin(i * 0.3);
  h = make("shuffle_channel", "group", 3, RILL_DTYPE_FP64, (int64_t[]){1, 9, 2, 2}, y);
  OK(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), NULL));
  op_harness_destroy(h);
}

/* Paddle 1.8's shuffle_channel_grad shuffles Out@GRAD forward: X@GRAD channel c is
 * Out@GRAD channel src[c] with the forward's src (0, 2, 4, 1, 3, 5 for C 6, group 3). */
Test(rearrange, shuffle_channel_grad_follows_paddle) {
  double g[6];
  for (int i = 0; i < 6; i++) g[i] = 10 + i;
  op_harness *h = harness("shuffle_channel_grad");
  bind_input(h, "Out@GRAD", "d_out", RILL_DTYPE_FP64, DIMS(1, 6, 1, 1), g);
  OK(op_harness_output(h, "X@GRAD", "d_x"));
  OK(op_harness_attr_int(h, "group", 3));
  OK(op_harness_run(h));
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "d_x")),
                   (double[]){10, 12, 14, 11, 13, 15}, 6, 0);
  op_harness_destroy(h);
}

/* Paddle 1.8.5's space_to_depth(arange(192) as [1, 8, 4, 6], 2): its first 24 values. */
Test(rearrange, space_to_depth_forward_as_paddle_and_gradient) {
  static const double paddle[24] = {0,  48, 1,  49, 2,  50, 3,  51, 4,  52, 5,  53,
                                    96, 144, 97, 145, 98, 146, 99, 147, 100, 148, 101, 149};
  double x[192];
  for (int i = 0; i < 192; i++) x[i] = i;
  op_harness *h = make("space_to_depth", "blocksize", 2, RILL_DTYPE_FP64,
                       (int64_t[]){1, 8, 4, 6}, x);
  OK(op_harness_run(h));
  const rill_tensor *o = op_harness_tensor(h, "out");
  expect_dims(o, DIMS(1, 32, 2, 3));
  expect_close_f64(rill_tensor_ptr(o), paddle, 24, 0);
  /* a bijection: every input value appears once */
  const double *op = rill_tensor_ptr(o);
  double sum = 0;
  for (int i = 0; i < 192; i++) sum += op[i];
  cr_assert_eq(sum, 191.0 * 192 / 2);
  OK(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), NULL));
  op_harness_destroy(h);
}

Test(rearrange, integer_input_moves_like_float) {
  int64_t x[16];
  for (int i = 0; i < 16; i++) x[i] = 100 + i;
  op_harness *h = make("pixel_shuffle", "upscale_factor", 2, RILL_DTYPE_INT64,
                       (int64_t[]){1, 4, 2, 2}, x);
  OK(op_harness_run(h));
  const int64_t *op = rill_tensor_ptr(op_harness_tensor(h, "out"));
  cr_assert_eq(op[0], 100);
  cr_assert_eq(op[1], 104); /* (0, 0, 1): channel 1 */
  cr_assert_eq(op[4], 108); /* (1, 0): channel 2 */
  op_harness_destroy(h);
}

Test(rearrange, bad_factors_name_op_and_variable) {
  op_harness *h = make("pixel_shuffle", "upscale_factor", 2, RILL_DTYPE_FP32,
                       (int64_t[]){1, 6, 2, 2}, NULL);
  EXPECT_ERROR(op_harness_infer(h), "pixel_shuffle", "X (feat)", "6 channels", "upscale_factor");
  op_harness_destroy(h);
  h = make("shuffle_channel", "group", 4, RILL_DTYPE_FP32, (int64_t[]){1, 6, 2, 2}, NULL);
  EXPECT_ERROR(op_harness_infer(h), "shuffle_channel", "X (feat)", "group 4");
  op_harness_destroy(h);
  h = make("space_to_depth", "blocksize", 2, RILL_DTYPE_FP32, (int64_t[]){1, 4, 3, 4}, NULL);
  EXPECT_ERROR(op_harness_infer(h), "space_to_depth", "X (feat)", "[1, 4, 3, 4]", "blocksize 2");
  op_harness_destroy(h);
  h = make("space_to_depth", "blocksize", 0, RILL_DTYPE_FP32, (int64_t[]){1, 4, 2, 2}, NULL);
  EXPECT_ERROR(op_harness_infer(h), "space_to_depth", "blocksize", ">= 1");
  op_harness_destroy(h);
}
