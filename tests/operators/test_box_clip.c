/* box_clip: each image's rows clamped to round(size / scale) - 1, x and y separately,
 * LoD kept; a 3-D input; the errors (no LoD, ImInfo rows not matching the images). */
#include "op_test.h"

static rill_tensor *with_lod(rill_dtype dt, const int64_t *dims, size_t nd, const void *data,
                             const uint64_t *lod, size_t nl) {
  rill_tensor *t = op_harness_make(dt, dims, nd, data);
  cr_assert_not_null(t);
  OK(rill_tensor_set_lod(t, 1, (const uint64_t *const[]){lod}, &nl));
  return t;
}

Test(box_clip, clamps_each_image) {
  const float in[] = {-5, -5, 100, 100, 3, 4, 60, 10, 1, 1, 20, 30};
  const float info[] = {20, 30, 1, 40, 40, 2}; /* image 0: 30 x 20; image 1: 20 x 20 */
  const uint64_t lod[] = {0, 2, 3};
  op_harness *h = harness("box_clip");
  rill_tensor *t = with_lod(RILL_DTYPE_FP32, DIMS(3, 4), in, lod, 3);
  OK(op_harness_input(h, "Input", "rois", t));
  op_harness_free_tensor(t);
  bind_input(h, "ImInfo", "im_info", RILL_DTYPE_FP32, DIMS(2, 3), info);
  OK(op_harness_output(h, "Output", "clipped"));
  OK(op_harness_run(h));
  const rill_tensor *o = op_harness_tensor(h, "clipped");
  expect_dims(o, DIMS(3, 4));
  const float want[] = {0, 0, 29, 19, 3, 4, 29, 10, 1, 1, 19, 19};
  expect_close_f32(rill_tensor_ptr(o), want, 12, 0);
  cr_assert(o->lod.nlevels == 1 && o->lod.levels[0].offsets[1] == 2);
  op_harness_destroy(h);
}

Test(box_clip, three_d_float64) {
  double in[2 * 2 * 4];
  for (int i = 0; i < 16; i++) in[i] = -3.0 + 2.5 * i;
  const double info[] = {11.2, 7.6, 1.0};  /* bounds x <= 7, y <= 10 */
  const uint64_t lod[] = {0, 2};
  op_harness *h = harness("box_clip");
  rill_tensor *t = with_lod(RILL_DTYPE_FP64, DIMS(2, 2, 4), in, lod, 2);
  OK(op_harness_input(h, "Input", "rois", t));
  op_harness_free_tensor(t);
  bind_input(h, "ImInfo", "im_info", RILL_DTYPE_FP64, DIMS(1, 3), info);
  OK(op_harness_output(h, "Output", "clipped"));
  OK(op_harness_run(h));
  const double *o = rill_tensor_ptr(op_harness_tensor(h, "clipped"));
  for (int i = 0; i < 16; i++) {
    double b = i % 2 ? 10 : 7;
    cr_assert_float_eq(o[i], fmax(fmin(in[i], b), 0), 1e-12, "[%d]", i);
  }
  op_harness_destroy(h);
}

Test(box_clip, errors_name_op_and_variable) {
  float in[10] = {0}, info[6] = {10, 10, 1, 10, 10, 1};
  op_harness *h = harness("box_clip");
  bind_input(h, "Input", "rois_nolod", RILL_DTYPE_FP32, DIMS(2, 4), in);
  bind_input(h, "ImInfo", "im_info", RILL_DTYPE_FP32, DIMS(1, 3), info);
  OK(op_harness_output(h, "Output", "clipped"));
  EXPECT_ERROR(op_harness_run(h), "box_clip", "rois_nolod", "LoD");
  op_harness_destroy(h);
  const uint64_t lod[] = {0, 1, 2};
  h = harness("box_clip");
  rill_tensor *t = with_lod(RILL_DTYPE_FP32, DIMS(2, 4), in, lod, 3);
  OK(op_harness_input(h, "Input", "rois", t));
  op_harness_free_tensor(t);
  bind_input(h, "ImInfo", "im_info", RILL_DTYPE_FP32, DIMS(1, 3), info);
  OK(op_harness_output(h, "Output", "clipped"));
  EXPECT_ERROR(op_harness_run(h), "box_clip", "im_info", "2 images");
  op_harness_destroy(h);
  h = harness("box_clip");
  bind_input(h, "Input", "rois", RILL_DTYPE_FP32, DIMS(2, 5), in);
  bind_input(h, "ImInfo", "im_info", RILL_DTYPE_FP32, DIMS(2, 3), info);
  OK(op_harness_output(h, "Output", "clipped"));
  EXPECT_ERROR(op_harness_infer(h), "box_clip", "rois", "[R, ..., 4]");
  op_harness_destroy(h);
}
