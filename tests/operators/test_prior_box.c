/* prior_box against a naive reference, both prior orders, explicit and automatic steps,
 * clipping; a hand-computed case; and the errors. */
#include "op_test.h"

static void attr_floats(op_harness *h, const char *name, const float *v, size_t n) {
  rill_attr_value a = {.type = RILL_ATTR_FLOATS, .n = n, .list.floats = (float *)v};
  OK(op_harness_attr(h, name, &a));
}

typedef struct pb_case {
  int64_t fh, fw, ih, iw;
  const float *mins, *maxs, *ratios;
  size_t nmin, nmax, nratio;
  bool flip, clip, order;
  float step_w, step_h, offset;
} pb_case;

/* Reference: ratio list built as Paddle documents it, then boxes cell by cell. */
static size_t ref_prior_box(const pb_case *c, float *boxes) {
  float r[32];
  size_t nr = 0;
  r[nr++] = 1;
  for (size_t i = 0; i < c->nratio; i++) {
    bool dup = false;
    for (size_t j = 0; j < nr; j++) dup = dup || fabsf(r[j] - c->ratios[i]) < 1e-6f;
    if (dup) continue;
    r[nr++] = c->ratios[i];
    if (c->flip) r[nr++] = 1 / c->ratios[i];
  }
  float sw = c->step_w, sh = c->step_h;
  if (sw == 0 || sh == 0) {
    sw = (float)c->iw / (float)c->fw;
    sh = (float)c->ih / (float)c->fh;
  }
  size_t k = 0;
#define PUT(hw, hh)                                                                    \
  do {                                                                                 \
    float v[4] = {(cx - (hw)) / (float)c->iw, (cy - (hh)) / (float)c->ih,              \
                  (cx + (hw)) / (float)c->iw, (cy + (hh)) / (float)c->ih};             \
    for (int e = 0; e < 4; e++)                                                        \
      boxes[k++] = c->clip ? fminf(fmaxf(v[e], 0), 1) : v[e];                          \
  } while (0)
  for (int64_t y = 0; y < c->fh; y++)
    for (int64_t x = 0; x < c->fw; x++) {
      float cx = ((float)x + c->offset) * sw, cy = ((float)y + c->offset) * sh;
      for (size_t s = 0; s < c->nmin; s++) {
        float m = c->mins[s];
        if (c->order) {
          PUT(m / 2, m / 2);
          if (c->nmax) PUT(sqrtf(m * c->maxs[s]) / 2, sqrtf(m * c->maxs[s]) / 2);
          for (size_t q = 0; q < nr; q++)
            if (fabsf(r[q] - 1) >= 1e-6f) PUT(m * sqrtf(r[q]) / 2, m / sqrtf(r[q]) / 2);
        } else {
          for (size_t q = 0; q < nr; q++) PUT(m * sqrtf(r[q]) / 2, m / sqrtf(r[q]) / 2);
          if (c->nmax) PUT(sqrtf(m * c->maxs[s]) / 2, sqrtf(m * c->maxs[s]) / 2);
        }
      }
    }
#undef PUT
  return k / 4 / (size_t)(c->fh * c->fw);
}

static op_harness *pb_harness(const pb_case *c) {
  op_harness *h = harness("prior_box");
  bind_input(h, "Input", "feat", RILL_DTYPE_FP32, DIMS(1, 2, c->fh, c->fw), NULL);
  bind_input(h, "Image", "image", RILL_DTYPE_FP32, DIMS(1, 3, c->ih, c->iw), NULL);
  OK(op_harness_output(h, "Boxes", "boxes"));
  OK(op_harness_output(h, "Variances", "vars"));
  attr_floats(h, "min_sizes", c->mins, c->nmin);
  if (c->nmax) attr_floats(h, "max_sizes", c->maxs, c->nmax);
  if (c->nratio) attr_floats(h, "aspect_ratios", c->ratios, c->nratio);
  attr_floats(h, "variances", (const float[]){0.1f, 0.1f, 0.2f, 0.2f}, 4);
  OK(op_harness_attr_bool(h, "flip", c->flip));
  OK(op_harness_attr_bool(h, "clip", c->clip));
  OK(op_harness_attr_bool(h, "min_max_aspect_ratios_order", c->order));
  OK(op_harness_attr_float(h, "step_w", c->step_w));
  OK(op_harness_attr_float(h, "step_h", c->step_h));
  OK(op_harness_attr_float(h, "offset", c->offset));
  return h;
}

static void check(const pb_case *c) {
  float *want = malloc(65536 * sizeof *want);
  size_t np = ref_prior_box(c, want);
  op_harness *h = pb_harness(c);
  OK(op_harness_run(h));
  rill_tensor *b = op_harness_tensor(h, "boxes"), *v = op_harness_tensor(h, "vars");
  expect_dims(b, DIMS(c->fh, c->fw, (int64_t)np, 4));
  expect_dims(v, DIMS(c->fh, c->fw, (int64_t)np, 4));
  int64_t n = c->fh * c->fw * (int64_t)np * 4;
  expect_close_f32(rill_tensor_ptr(b), want, n, 1e-5f);
  const float *vp = rill_tensor_ptr(v);
  for (int64_t i = 0; i < n; i++) cr_assert_float_eq(vp[i], i % 4 < 2 ? 0.1f : 0.2f, 1e-7f);
  op_harness_destroy(h);
  free(want);
}

Test(prior_box, matches_reference) {
  const float m1[] = {60}, m2[] = {105, 150}, x2[] = {150, 195}, r1[] = {2}, r2[] = {2, 3};
  const float r3[] = {1, 2, 2, 0.5f};
  /* the SSD program's settings */
  check(&(pb_case){19, 19, 300, 300, m1, NULL, r1, 1, 0, 1, true, false, false, 0, 0, 0.5f});
  check(&(pb_case){10, 10, 300, 300, m2, x2, r2, 2, 2, 2, true, false, false, 0, 0, 0.5f});
  /* Caffe's order, clipping, explicit steps, no flip, duplicate ratios */
  check(&(pb_case){3, 5, 64, 80, m2, x2, r2, 2, 2, 2, true, true, true, 0, 0, 0.5f});
  check(&(pb_case){4, 4, 32, 32, m1, NULL, r3, 1, 0, 4, false, true, false, 8, 8, 0.0f});
  check(&(pb_case){2, 3, 40, 30, m1, x2, r3, 1, 1, 4, true, false, true, 10, 0, 0.25f});
  check(&(pb_case){1, 1, 300, 300, m2, NULL, NULL, 2, 0, 0, true, true, false, 0, 0, 0.5f});
}

/* One cell of a 10x10 image: min 4, max 9, ratio 2 with flip. */
Test(prior_box, hand_computed_cell) {
  pb_case c = {1, 1, 10, 10, (const float[]){4}, (const float[]){9}, (const float[]){2}, 1, 1, 1,
               true, false, false, 0, 0, 0.5f};
  op_harness *h = pb_harness(&c);
  OK(op_harness_run(h));
  const float *b = rill_tensor_ptr(op_harness_tensor(h, "boxes"));
  float s2 = sqrtf(2.0f);
  float want[] = {0.3f, 0.3f, 0.7f, 0.7f,                                           /* ratio 1 */
                  (5 - 2 * s2) / 10, (5 - s2) / 10, (5 + 2 * s2) / 10, (5 + s2) / 10, /* 2 */
                  (5 - s2) / 10, (5 - 2 * s2) / 10, (5 + s2) / 10, (5 + 2 * s2) / 10, /* 1/2 */
                  0.2f, 0.2f, 0.8f, 0.8f};                                          /* max */
  expect_dims(op_harness_tensor(h, "boxes"), DIMS(1, 1, 4, 4));
  expect_close_f32(b, want, 16, 1e-6f);
  op_harness_destroy(h);
}

Test(prior_box, errors_name_op_and_attribute) {
  pb_case c = {2, 2, 8, 8, (const float[]){4}, (const float[]){3}, NULL, 1, 1, 0, true, false,
               false, 0, 0, 0.5f};
  op_harness *h = pb_harness(&c); /* max 3 < min 4 */
  EXPECT_ERROR(op_harness_run(h), "prior_box", "max_sizes[0]", "min_sizes[0]");
  op_harness_destroy(h);
  c.maxs = (const float[]){9, 10};
  c.nmax = 2;
  h = pb_harness(&c);
  EXPECT_ERROR(op_harness_run(h), "prior_box", "max_sizes", "equal in number");
  op_harness_destroy(h);
  c.nmax = 0;
  h = pb_harness(&c);
  attr_floats(h, "variances", (const float[]){0.1f, 0.2f}, 2);
  EXPECT_ERROR(op_harness_run(h), "prior_box", "variances", "expected 4");
  op_harness_destroy(h);
  h = harness("prior_box");
  bind_input(h, "Input", "feat", RILL_DTYPE_FP32, DIMS(2, 2, 2), NULL);
  bind_input(h, "Image", "image", RILL_DTYPE_FP32, DIMS(1, 3, 8, 8), NULL);
  OK(op_harness_output(h, "Boxes", "boxes"));
  OK(op_harness_output(h, "Variances", "vars"));
  attr_floats(h, "min_sizes", (const float[]){4}, 1);
  attr_floats(h, "variances", (const float[]){0.1f, 0.1f, 0.2f, 0.2f}, 4);
  EXPECT_ERROR(op_harness_run(h), "prior_box", "Input (feat)", "[N, C, H, W]");
  op_harness_destroy(h);
}
