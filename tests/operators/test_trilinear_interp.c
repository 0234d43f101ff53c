/* trilinear_interp: output extents (out_d/out_h/out_w, scale), values against a direct
 * reference for align_corners and both align_modes (channel-first and channel-last),
 * the gradient against central differences, and errors naming the op and variable. */
#include "op_test.h"
#include "support/grad_check.h"

typedef struct tri {
  bool corners;
  int mode;
  bool last; /* NDHWC */
} tri;

/* Source index pair and the weight of the upper one, from Paddle's rule. */
static void src_of(const tri *t, int64_t in, int64_t out, int64_t k, int64_t *lo, int64_t *hi,
                   float *w) {
  float r = out > 1 ? (t->corners ? (float)(in - 1) / (float)(out - 1) : (float)in / (float)out) : 0.f;
  bool half = t->mode == 0 && !t->corners;
  float src = half ? r * ((float)k + 0.5f) - 0.5f : r * (float)k;
  if (src < 0) src = 0;
  *lo = (int64_t)src;
  if (*lo > in - 1) *lo = in - 1;
  *hi = *lo + 1 < in - 1 ? *lo + 1 : in - 1;
  *w = src - (float)*lo;
}

static void run_tri(const tri *t, int64_t n, int64_t c, const int64_t in[3], const int64_t out[3]) {
  int64_t nx = n * c * in[0] * in[1] * in[2], ny = n * c * out[0] * out[1] * out[2];
  double *x = malloc((size_t)nx * sizeof *x), *want = malloc((size_t)ny * sizeof *want);
  for (int64_t i = 0; i < nx; i++) x[i] = sin((double)i * 0.53);
  for (int64_t b = 0; b < n; b++)
    for (int64_t ch = 0; ch < c; ch++)
      for (int64_t od = 0; od < out[0]; od++)
        for (int64_t oh = 0; oh < out[1]; oh++)
          for (int64_t ow = 0; ow < out[2]; ow++) {
            int64_t lo[3], hi[3], o[3] = {od, oh, ow};
            float w[3];
            for (int i = 0; i < 3; i++) src_of(t, in[i], out[i], o[i], &lo[i], &hi[i], &w[i]);
            double v = 0;
            for (int a = 0; a < 8; a++) {
              int64_t p[3];
              double wt = 1;
              for (int i = 0; i < 3; i++) {
                bool up = (a >> (2 - i)) & 1;
                p[i] = up ? hi[i] : lo[i];
                wt *= up ? w[i] : 1.0 - w[i];
              }
              int64_t sp = (p[0] * in[1] + p[1]) * in[2] + p[2];
              v += wt * x[t->last ? ((b * in[0] * in[1] * in[2]) + sp) * c + ch
                                  : (b * c + ch) * in[0] * in[1] * in[2] + sp];
            }
            int64_t so = (od * out[1] + oh) * out[2] + ow;
            want[t->last ? ((b * out[0] * out[1] * out[2]) + so) * c + ch
                         : (b * c + ch) * out[0] * out[1] * out[2] + so] = v;
          }
  for (int pass = 0; pass < 2; pass++) {
    op_harness *h = harness("trilinear_interp");
    if (t->last)
      bind_input(h, "X", "vol", RILL_DTYPE_FP64, DIMS(n, in[0], in[1], in[2], c), x);
    else
      bind_input(h, "X", "vol", RILL_DTYPE_FP64, DIMS(n, c, in[0], in[1], in[2]), x);
    OK(op_harness_output(h, "Out", "big"));
    OK(op_harness_attr_int(h, "out_d", (int)out[0]));
    OK(op_harness_attr_int(h, "out_h", (int)out[1]));
    OK(op_harness_attr_int(h, "out_w", (int)out[2]));
    OK(op_harness_attr_bool(h, "align_corners", t->corners));
    OK(op_harness_attr_int(h, "align_mode", t->mode));
    OK(op_harness_attr_string(h, "data_layout", t->last ? "NDHWC" : "NCDHW"));
    if (pass == 0) {
      OK(op_harness_run(h));
      rill_tensor *y = op_harness_tensor(h, "big");
      cr_assert_eq(rill_tensor_numel(y), ny);
      expect_close_f64(rill_tensor_ptr(y), want, ny, 1e-6);
    } else {
      rill_status *st = grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), NULL);
      cr_assert_null(st, "%s", rill_status_message(st));
    }
    op_harness_destroy(h);
  }
  free(x);
  free(want);
}

Test(trilinear_interp, values_and_gradient) {
  run_tri(&(tri){true, 1, false}, 1, 2, (const int64_t[]){3, 4, 2}, (const int64_t[]){5, 6, 3});
  run_tri(&(tri){false, 0, false}, 2, 1, (const int64_t[]){4, 3, 5}, (const int64_t[]){3, 5, 4});
  run_tri(&(tri){false, 1, true}, 1, 3, (const int64_t[]){2, 4, 3}, (const int64_t[]){3, 3, 5});
}

Test(trilinear_interp, scale_and_errors) {
  op_harness *h = harness("trilinear_interp");
  bind_input(h, "X", "vol", RILL_DTYPE_FP32, DIMS(1, 2, 3, 4, 5), NULL);
  OK(op_harness_output(h, "Out", "o"));
  OK(op_harness_attr_float(h, "scale", 2.0f));
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "o"), DIMS(1, 2, 6, 8, 10));
  op_harness_destroy(h);

  h = harness("trilinear_interp");
  bind_input(h, "X", "img", RILL_DTYPE_FP32, DIMS(1, 2, 4, 5), NULL);
  OK(op_harness_output(h, "Out", "o"));
  OK(op_harness_attr_float(h, "scale", 2.0f));
  EXPECT_ERROR(op_harness_run(h), "trilinear_interp", "img", "5-D");
  op_harness_destroy(h);

  h = harness("trilinear_interp");
  bind_input(h, "X", "vol", RILL_DTYPE_FP32, DIMS(1, 2, 3, 4, 5), NULL);
  OK(op_harness_output(h, "Out", "o"));
  EXPECT_ERROR(op_harness_run(h), "trilinear_interp", "vol", "positive");
  op_harness_destroy(h);
}
