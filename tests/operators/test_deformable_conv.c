/* deformable_conv and deformable_conv_v1 against a direct reference that samples every
 * tap through a bounds-checked accessor, against conv2d with zero offsets, and their
 * gradients against finite differences. */
#include "op_test.h"

#include "nn_test.h"
#include "support/grad_check.h"

typedef struct dcn_case {
  int64_t n, c, h, w, m, kh, kw, groups, dg;
  int32_t s[2], p[2], d[2];
} dcn_case;

static int64_t out_extent(int64_t in, int64_t k, int32_t s, int32_t p, int32_t d) {
  return (in + 2 * p - (d * (k - 1) + 1)) / s + 1;
}

static double pix(const double *img, int64_t h, int64_t w, int64_t y, int64_t x) {
  return y < 0 || y >= h || x < 0 || x >= w ? 0.0 : img[y * w + x];
}

/* The sample of img at (y, x): zero outside (-1, h) x (-1, w), else bilinear. */
static double sample(const double *img, int64_t h, int64_t w, double y, double x) {
  if (y <= -1 || x <= -1 || y >= (double)h || x >= (double)w) return 0;
  double y0 = floor(y), x0 = floor(x), ay = y - y0, ax = x - x0;
  int64_t yi = (int64_t)y0, xi = (int64_t)x0;
  return pix(img, h, w, yi, xi) * (1 - ay) * (1 - ax) + pix(img, h, w, yi, xi + 1) * (1 - ay) * ax +
         pix(img, h, w, yi + 1, xi) * ay * (1 - ax) + pix(img, h, w, yi + 1, xi + 1) * ay * ax;
}

static void reference(const dcn_case *k, const double *x, const double *off, const double *mask,
                      const double *f, double *out) {
  int64_t oh = out_extent(k->h, k->kh, k->s[0], k->p[0], k->d[0]);
  int64_t ow = out_extent(k->w, k->kw, k->s[1], k->p[1], k->d[1]);
  int64_t cg = k->c / k->groups, mg = k->m / k->groups, taps = k->kh * k->kw, cpd = k->c / k->dg;
  for (int64_t b = 0; b < k->n; b++)
    for (int64_t o = 0; o < k->m; o++)
      for (int64_t y = 0; y < oh; y++)
        for (int64_t xx = 0; xx < ow; xx++) {
          double acc = 0;
          for (int64_t cl = 0; cl < cg; cl++) {
            int64_t c = o / mg * cg + cl, g = c / cpd;
            for (int64_t i = 0; i < k->kh; i++)
              for (int64_t j = 0; j < k->kw; j++) {
                int64_t t = i * k->kw + j;
                double dy = off[(((b * k->dg + g) * 2 * taps + 2 * t) * oh + y) * ow + xx];
                double dx = off[(((b * k->dg + g) * 2 * taps + 2 * t + 1) * oh + y) * ow + xx];
                double mv = mask ? mask[(((b * k->dg + g) * taps + t) * oh + y) * ow + xx] : 1;
                double v = sample(x + (b * k->c + c) * k->h * k->w, k->h, k->w,
                                  (double)(y * k->s[0] - k->p[0] + i * k->d[0]) + dy,
                                  (double)(xx * k->s[1] - k->p[1] + j * k->d[1]) + dx);
                acc += v * mv * f[((o * cg + cl) * k->kh + i) * k->kw + j];
              }
          }
          out[((b * k->m + o) * oh + y) * ow + xx] = acc;
        }
}

static void set_attrs(op_harness *h, const dcn_case *k) {
  OK(op_harness_attr_ints(h, "strides", k->s, 2));
  OK(op_harness_attr_ints(h, "paddings", k->p, 2));
  OK(op_harness_attr_ints(h, "dilations", k->d, 2));
  OK(op_harness_attr_int(h, "groups", (int32_t)k->groups));
  OK(op_harness_attr_int(h, "deformable_groups", (int32_t)k->dg));
  OK(op_harness_attr_int(h, "im2col_step", 1));
}

typedef struct dcn_data {
  int64_t oh, ow, nx, noff, nm, nf, no;
  double *x, *off, *mask, *f;
} dcn_data;

/* Random data; offsets = spread * (integer part + a fraction in [0.2, 0.8]) so that no
 * sample lies on a pixel line (the bilinear kinks). */
static dcn_data make_data(const dcn_case *k, double spread, uint64_t seed) {
  dcn_data d;
  d.oh = out_extent(k->h, k->kh, k->s[0], k->p[0], k->d[0]);
  d.ow = out_extent(k->w, k->kw, k->s[1], k->p[1], k->d[1]);
  int64_t taps = k->kh * k->kw;
  d.nx = k->n * k->c * k->h * k->w;
  d.noff = k->n * k->dg * 2 * taps * d.oh * d.ow;
  d.nm = k->n * k->dg * taps * d.oh * d.ow;
  d.nf = k->m * (k->c / k->groups) * taps;
  d.no = k->n * k->m * d.oh * d.ow;
  d.x = malloc((size_t)d.nx * sizeof(double));
  d.off = malloc((size_t)d.noff * sizeof(double));
  d.mask = malloc((size_t)d.nm * sizeof(double));
  d.f = malloc((size_t)d.nf * sizeof(double));
  fill_rand(d.x, d.nx, seed);
  fill_rand(d.off, d.noff, seed + 1);
  fill_rand(d.mask, d.nm, seed + 2);
  fill_rand(d.f, d.nf, seed + 3);
  for (int64_t i = 0; i < d.noff; i++) {
    double r = d.off[i] * spread;
    d.off[i] = floor(r) + 0.5 + 0.3 * (d.off[i] * 7 - floor(d.off[i] * 7) - 0.5) * 2;
  }
  return d;
}

static void free_data(dcn_data *d) {
  free(d->x); free(d->off); free(d->mask); free(d->f);
}

static op_harness *dcn_harness(const dcn_case *k, const dcn_data *d, bool v2, rill_dtype dt,
                               const void *x, const void *off, const void *mask, const void *f) {
  op_harness *h = harness(v2 ? "deformable_conv" : "deformable_conv_v1");
  int64_t taps = k->kh * k->kw;
  bind_input(h, "Input", "x", dt, DIMS(k->n, k->c, k->h, k->w), x);
  bind_input(h, "Offset", "off", dt, DIMS(k->n, k->dg * 2 * taps, d->oh, d->ow), off);
  if (v2) bind_input(h, "Mask", "mask", dt, DIMS(k->n, k->dg * taps, d->oh, d->ow), mask);
  bind_input(h, "Filter", "w", dt, DIMS(k->m, k->c / k->groups, k->kh, k->kw), f);
  OK(op_harness_output(h, "Output", "out"));
  set_attrs(h, k);
  return h;
}

static void check_forward(const dcn_case *k, bool v2, double spread, uint64_t seed) {
  dcn_data d = make_data(k, spread, seed);
  double *want = malloc((size_t)d.no * sizeof(double));
  reference(k, d.x, d.off, v2 ? d.mask : NULL, d.f, want);
  /* float64 */
  op_harness *h = dcn_harness(k, &d, v2, RILL_DTYPE_FP64, d.x, d.off, d.mask, d.f);
  OK(op_harness_run(h));
  rill_tensor *t = op_harness_tensor(h, "out");
  expect_dims(t, DIMS(k->n, k->m, d.oh, d.ow));
  expect_close_f64(rill_tensor_ptr(t), want, d.no, 1e-10);
  op_harness_destroy(h);
  /* float32 */
  float *x = to_f32(d.x, d.nx), *off = to_f32(d.off, d.noff), *m = to_f32(d.mask, d.nm),
        *f = to_f32(d.f, d.nf), *w32 = to_f32(want, d.no);
  h = dcn_harness(k, &d, v2, RILL_DTYPE_FP32, x, off, m, f);
  OK(op_harness_run(h));
  expect_close_f32(rill_tensor_ptr(op_harness_tensor(h, "out")), w32, d.no, 1e-4f);
  op_harness_destroy(h);
  free(x); free(off); free(m); free(f); free(w32); free(want);
  free_data(&d);
}

Test(deformable_conv, matches_reference_with_random_offsets) {
  dcn_case a = {2, 4, 7, 6, 6, 3, 3, 2, 2, {2, 1}, {1, 1}, {1, 2}};
  dcn_case b = {1, 3, 5, 5, 4, 3, 2, 1, 1, {1, 1}, {0, 1}, {1, 1}};
  dcn_case c = {1, 4, 6, 5, 4, 1, 1, 4, 4, {1, 1}, {0, 0}, {1, 1}};
  for (int v2 = 0; v2 < 2; v2++) {
    check_forward(&a, v2, 3, 11);
    check_forward(&b, v2, 6, 21); /* many samples beyond the image */
    check_forward(&c, v2, 2, 31);
  }
}

Test(deformable_conv, output_shape_follows_conv_geometry) {
  dcn_case a = {2, 4, 9, 8, 6, 3, 2, 2, 1, {2, 3}, {2, 1}, {2, 1}};
  dcn_data d = make_data(&a, 1, 5);
  cr_assert_eq(d.oh, 5);
  cr_assert_eq(d.ow, 3);
  op_harness *h = dcn_harness(&a, &d, true, RILL_DTYPE_FP64, d.x, d.off, d.mask, d.f);
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "out"), DIMS(2, 6, 5, 3));
  op_harness_destroy(h);
  free_data(&d);
}

Test(deformable_conv, zero_offsets_and_unit_mask_equal_conv2d) {
  dcn_case k = {2, 4, 6, 7, 6, 3, 3, 2, 2, {1, 2}, {1, 1}, {2, 1}};
  dcn_data d = make_data(&k, 1, 77);
  for (int64_t i = 0; i < d.noff; i++) d.off[i] = 0;
  for (int64_t i = 0; i < d.nm; i++) d.mask[i] = 1;
  op_harness *c = harness("conv2d");
  bind_input(c, "Input", "x", RILL_DTYPE_FP64, DIMS(k.n, k.c, k.h, k.w), d.x);
  bind_input(c, "Filter", "w", RILL_DTYPE_FP64, DIMS(k.m, k.c / k.groups, k.kh, k.kw), d.f);
  OK(op_harness_output(c, "Output", "out"));
  OK(op_harness_attr_ints(c, "strides", k.s, 2));
  OK(op_harness_attr_ints(c, "paddings", k.p, 2));
  OK(op_harness_attr_ints(c, "dilations", k.d, 2));
  OK(op_harness_attr_int(c, "groups", (int32_t)k.groups));
  OK(op_harness_run(c));
  const double *want = rill_tensor_ptr(op_harness_tensor(c, "out"));
  for (int v2 = 0; v2 < 2; v2++) {
    op_harness *h = dcn_harness(&k, &d, v2, RILL_DTYPE_FP64, d.x, d.off, d.mask, d.f);
    OK(op_harness_run(h));
    rill_tensor *t = op_harness_tensor(h, "out");
    expect_dims(t, DIMS(k.n, k.m, d.oh, d.ow));
    expect_close_f64(rill_tensor_ptr(t), want, d.no, 1e-10);
    op_harness_destroy(h);
  }
  op_harness_destroy(c);
  free_data(&d);
}

static void grad_case(const dcn_case *k, bool v2, uint64_t seed) {
  dcn_data d = make_data(k, 2, seed);
  op_harness *h = dcn_harness(k, &d, v2, RILL_DTYPE_FP64, d.x, d.off, d.mask, d.f);
  grad_check_opts o = {.rtol = 1e-5, .atol = 1e-6};
  if (v2)
    OK(grad_check(h, GC_SLOTS("Input", "Offset", "Mask", "Filter"), GC_SLOTS("Output"), &o));
  else
    OK(grad_check(h, GC_SLOTS("Input", "Offset", "Filter"), GC_SLOTS("Output"), &o));
  op_harness_destroy(h);
  free_data(&d);
}

Test(deformable_conv, gradients_match_finite_differences) {
  dcn_case a = {2, 2, 4, 4, 2, 2, 2, 1, 1, {1, 1}, {1, 0}, {1, 1}};
  dcn_case b = {1, 4, 4, 3, 2, 2, 2, 2, 2, {2, 1}, {1, 1}, {1, 1}};
  for (int v2 = 0; v2 < 2; v2++) {
    grad_case(&a, v2, 301);
    grad_case(&b, v2, 401);
  }
}

/* Runs `type` on unset data of the given shapes (mask_c 0: no Mask) and expects an error
 * naming the op, `what` and the variable `var`. */
static void expect_bad(const char *type, int64_t dg, int64_t off_c, int64_t mask_c, int64_t mask_h,
                       int64_t filter_c, const char *what, const char *var) {
  dcn_case k = {1, 4, 5, 5, 2, 3, 3, 1, dg, {1, 1}, {1, 1}, {1, 1}};
  op_harness *h = harness(type);
  bind_input(h, "Input", "img", RILL_DTYPE_FP32, DIMS(1, 4, 5, 5), NULL);
  bind_input(h, "Offset", "offs", RILL_DTYPE_FP32, DIMS(1, off_c, 5, 5), NULL);
  if (mask_c) bind_input(h, "Mask", "msk", RILL_DTYPE_FP32, DIMS(1, mask_c, mask_h, 5), NULL);
  bind_input(h, "Filter", "flt", RILL_DTYPE_FP32, DIMS(2, filter_c, 3, 3), NULL);
  OK(op_harness_output(h, "Output", "o"));
  set_attrs(h, &k);
  EXPECT_ERROR(op_harness_run(h), type, what, var);
  op_harness_destroy(h);
}

Test(deformable_conv, bad_shapes_name_the_op_and_variable) {
  /* Offset with the channels of one deformable group, not two */
  expect_bad("deformable_conv", 2, 18, 18, 5, 4, "Offset", "offs");
  /* Mask of the wrong extent */
  expect_bad("deformable_conv", 2, 36, 18, 4, 4, "Mask", "msk");
  /* deformable_groups that do not divide the channels */
  expect_bad("deformable_conv_v1", 3, 54, 0, 0, 4, "deformable_groups", "img");
  /* Filter channels against Input's */
  expect_bad("deformable_conv_v1", 1, 18, 0, 0, 3, "flt", "img");
}
