/* density_prior_box against a reference written from the op's definition (the integer
 * step average and shift, float centres), with and without clip and flatten_to_2d, a
 * set step; hand-checked first boxes; the errors. */
#include "op_test.h"

static void attr_floats(op_harness *h, const char *name, const float *v, size_t n) {
  rill_attr_value a = {.type = RILL_ATTR_FLOATS, .n = n, .list.floats = (float *)v};
  OK(op_harness_attr(h, name, &a));
}

/* A harness over a feature map of `fdims` (named `feat`) and a 1 x 1 x ih x iw image,
 * with one fixed size, ratio and density and the variances 0.1 0.1 0.2 0.2. */
static op_harness *dpb_harness(const char *feat, const int64_t *fdims, size_t nf, int64_t ih,
                               int64_t iw) {
  op_harness *h = harness("density_prior_box");
  rill_tensor *ft = op_harness_make(RILL_DTYPE_FP32, fdims, nf, NULL);
  rill_tensor *it = op_harness_make(RILL_DTYPE_FP32, DIMS(1, 1, ih, iw), NULL);
  OK(op_harness_input(h, "Input", feat, ft));
  OK(op_harness_input(h, "Image", "image", it));
  op_harness_free_tensor(ft);
  op_harness_free_tensor(it);
  OK(op_harness_output(h, "Boxes", "boxes"));
  OK(op_harness_output(h, "Variances", "vars"));
  attr_floats(h, "fixed_sizes", (const float[]){6}, 1);
  attr_floats(h, "fixed_ratios", (const float[]){1}, 1);
  OK(op_harness_attr_ints(h, "densities", (const int32_t[]){2}, 1));
  attr_floats(h, "variances", (const float[]){0.1f, 0.1f, 0.2f, 0.2f}, 4);
  return h;
}

typedef struct dpb_case {
  int64_t fh, fw, ih, iw;
  const float *sizes, *ratios;
  const int32_t *dens;
  size_t ns, nr;
  float step_w, step_h, offset;
  bool clip, flat;
} dpb_case;

static void check(const dpb_case *c) {
  op_harness *h = dpb_harness("feat", DIMS(1, 1, c->fh, c->fw), c->ih, c->iw);
  attr_floats(h, "fixed_sizes", c->sizes, c->ns);
  attr_floats(h, "fixed_ratios", c->ratios, c->nr);
  OK(op_harness_attr_ints(h, "densities", c->dens, c->ns));
  attr_floats(h, "variances", (const float[]){0.1f, 0.2f, 0.3f, 0.4f}, 4);
  OK(op_harness_attr_float(h, "step_w", c->step_w));
  OK(op_harness_attr_float(h, "step_h", c->step_h));
  OK(op_harness_attr_float(h, "offset", c->offset));
  OK(op_harness_attr_bool(h, "clip", c->clip));
  OK(op_harness_attr_bool(h, "flatten_to_2d", c->flat));
  OK(op_harness_run(h));
  int64_t np = 0;
  for (size_t s = 0; s < c->ns; s++) np += (int64_t)c->dens[s] * c->dens[s] * (int64_t)c->nr;
  const rill_tensor *b = op_harness_tensor(h, "boxes");
  if (c->flat)
    expect_dims(b, DIMS(c->fh * c->fw * np, 4));
  else
    expect_dims(b, DIMS(c->fh, c->fw, np, 4));
  double sw = c->step_w, sh = c->step_h;
  if (sw == 0 || sh == 0) {
    sw = (double)(float)((float)c->iw / (float)c->fw);
    sh = (double)(float)((float)c->ih / (float)c->fh);
  }
  int avg = (int)((sw + sh) * 0.5);
  const float *bp = rill_tensor_ptr(b);
  int64_t k = 0;
  for (int64_t y = 0; y < c->fh; y++)
    for (int64_t x = 0; x < c->fw; x++)
      for (size_t s = 0; s < c->ns; s++) {
        int d = c->dens[s], shift = avg / d;
        for (size_t r = 0; r < c->nr; r++) {
          double bw = c->sizes[s] * sqrt(c->ratios[r]), bh = c->sizes[s] / sqrt(c->ratios[r]);
          double cx = (x + c->offset) * sw - avg / 2. + shift / 2.;
          double cy = (y + c->offset) * sh - avg / 2. + shift / 2.;
          for (int di = 0; di < d; di++)
            for (int dj = 0; dj < d; dj++, k += 4) {
              double px = cx + dj * shift, py = cy + di * shift;
              double want[4] = {fmax((px - bw / 2) / c->iw, 0), fmax((py - bh / 2) / c->ih, 0),
                                fmin((px + bw / 2) / c->iw, 1), fmin((py + bh / 2) / c->ih, 1)};
              for (int q = 0; q < 4; q++) {
                double w = c->clip ? fmin(fmax(want[q], 0), 1) : want[q];
                cr_assert(fabs(bp[k + q] - w) < 1e-5, "box %lld[%d]: %g != %g", (long long)k / 4, q,
                          bp[k + q], w);
              }
            }
        }
      }
  cr_assert_eq(k, c->fh * c->fw * np * 4);
  const float *v = rill_tensor_ptr(op_harness_tensor(h, "vars"));
  for (int64_t i = 0; i < k; i++) cr_assert_float_eq(v[i], 0.1f * (float)(i % 4 + 1), 1e-7f);
  op_harness_destroy(h);
}

Test(density_prior_box, against_reference) {
  check(&(dpb_case){3, 4, 24, 40, (const float[]){6, 12}, (const float[]){1, 2},
                    (const int32_t[]){2, 1}, 2, 2, 0, 0, 0.5f, true, false});
  check(&(dpb_case){3, 4, 24, 40, (const float[]){5}, (const float[]){0.5f},
                    (const int32_t[]){3}, 1, 1, 9, 7, 0.3f, false, true});
  check(&(dpb_case){2, 2, 32, 32, (const float[]){4, 8, 16}, (const float[]){1, 2, 3},
                    (const int32_t[]){4, 2, 1}, 3, 3, 0, 0, 0.5f, false, false});
}

/* Paddle 1.8.5's first boxes for a 3 x 4 map of a 40 x 24 image, size 6, density 2,
 * ratio 1: steps 10 x 8, average 9, shift 4. */
Test(density_prior_box, paddle_numbers) {
  op_harness *h = dpb_harness("feat", DIMS(1, 1, 3, 4), 24, 40);
  OK(op_harness_run(h));
  /* centre (5, 4); grid centres 2.5 + 4 j, 1.5 + 4 i; boxes 6 x 6 */
  const float want[] = {0, 0, 5.5f / 40, 4.5f / 24, 3.5f / 40, 0, 9.5f / 40, 4.5f / 24,
                        0, 2.5f / 24, 5.5f / 40, 8.5f / 24};
  expect_close_f32(rill_tensor_ptr(op_harness_tensor(h, "boxes")), want, 12, 1e-6f);
  op_harness_destroy(h);
}

Test(density_prior_box, errors_name_op_and_variable) {
  op_harness *h = dpb_harness("feat3", DIMS(1, 3, 4), 24, 40);
  EXPECT_ERROR(op_harness_infer(h), "density_prior_box", "feat3", "[N, C, H, W]");
  OK(op_harness_attr_ints(h, "densities", (const int32_t[]){2, 1}, 2));
  EXPECT_ERROR(op_harness_infer(h), "density_prior_box", "densities", "fixed_sizes");
  OK(op_harness_attr_ints(h, "densities", (const int32_t[]){0}, 1));
  EXPECT_ERROR(op_harness_infer(h), "density_prior_box", "densities[0]");
  op_harness_destroy(h);
}
