/* The gradients of nearest_interp(_v2) and bilinear_interp(_v2) by finite differences in
 * each layout, alignment and size source; and the error a wrong Out@GRAD gives. */
#include "op_test.h"
#include "support/grad_check.h"

typedef struct gcase {
  const char *op;
  const char *layout;
  int64_t dims[5];
  int nd;
  int out_d, out_h, out_w;
  float scale; /* v1: one float; v2: a list of it */
  bool align_corners;
  int align_mode;
} gcase;

static void check_case(const gcase *k) {
  int64_t nx = numel_of(k->dims, (size_t)k->nd);
  double *x = malloc((size_t)nx * sizeof *x);
  for (int64_t i = 0; i < nx; i++) x[i] = sin((double)i * 0.37) * 2;
  op_harness *h = harness(k->op);
  bind_input(h, "X", "img", RILL_DTYPE_FP64, k->dims, (size_t)k->nd, x);
  OK(op_harness_output(h, "Out", "resized"));
  OK(op_harness_attr_string(h, "data_layout", k->layout));
  OK(op_harness_attr_string(h, "interp_method", strstr(k->op, "bilinear") ? "bilinear" : "nearest"));
  OK(op_harness_attr_bool(h, "align_corners", k->align_corners));
  OK(op_harness_attr_int(h, "align_mode", k->align_mode));
  if (k->out_d) OK(op_harness_attr_int(h, "out_d", k->out_d));
  if (k->out_h) OK(op_harness_attr_int(h, "out_h", k->out_h));
  if (k->out_w) OK(op_harness_attr_int(h, "out_w", k->out_w));
  if (k->scale > 0 && strstr(k->op, "_v2")) {
    float s[3] = {k->scale, k->scale, k->scale};
    rill_attr_value v = {.type = RILL_ATTR_FLOATS, .n = (size_t)k->nd - 2};
    v.list.floats = s;
    OK(op_harness_attr(h, "scale", &v));
  } else if (k->scale > 0) {
    OK(op_harness_attr_float(h, "scale", k->scale));
  }
  rill_status *st = grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), NULL);
  cr_assert_null(st, "%s %s: %s", k->op, k->layout, rill_status_message(st));
  op_harness_destroy(h);
  free(x);
}

Test(interp_grad, bilinear_every_alignment_and_layout) {
  check_case(&(gcase){"bilinear_interp", "NCHW", {2, 2, 3, 4}, 4, 0, 5, 7, 0, true, 1});
  check_case(&(gcase){"bilinear_interp", "NCHW", {1, 2, 4, 5}, 4, 0, 6, 3, 0, false, 0});
  check_case(&(gcase){"bilinear_interp", "NHWC", {1, 3, 4, 3}, 4, 0, 7, 5, 0, false, 1});
  check_case(&(gcase){"bilinear_interp_v2", "NCHW", {1, 2, 3, 3}, 4, 0, 0, 0, 1.5f, false, 0});
  check_case(&(gcase){"bilinear_interp_v2", "NHWC", {2, 3, 3, 2}, 4, 0, 0, 0, 2.0f, true, 1});
}

Test(interp_grad, nearest_up_down_and_five_d) {
  check_case(&(gcase){"nearest_interp", "NCHW", {1, 2, 3, 4}, 4, 0, 7, 9, 0, true, 1});
  check_case(&(gcase){"nearest_interp", "NHWC", {2, 5, 6, 2}, 4, 0, 3, 4, 0, false, 1});
  check_case(&(gcase){"nearest_interp_v2", "NCHW", {1, 2, 3, 3}, 4, 0, 0, 0, 2.0f, false, 1});
  check_case(&(gcase){"nearest_interp_v2", "NDHWC", {1, 2, 3, 2, 2}, 5, 3, 4, 3, 0, false, 1});
}

Test(interp_grad, out_grad_of_another_shape_is_named) {
  op_harness *h = harness("bilinear_interp_grad");
  bind_input(h, "X", "img", RILL_DTYPE_FP32, DIMS(1, 1, 2, 2), NULL);
  bind_input(h, "Out@GRAD", "d_resized", RILL_DTYPE_FP32, DIMS(1, 1, 3, 3), NULL);
  OK(op_harness_output(h, "X@GRAD", "d_img"));
  OK(op_harness_attr_int(h, "out_h", 4));
  OK(op_harness_attr_int(h, "out_w", 4));
  EXPECT_ERROR(op_harness_run(h), "bilinear_interp_grad", "Out@GRAD (d_resized)", "[1, 1, 4, 4]");
  op_harness_destroy(h);
}
