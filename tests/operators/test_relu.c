#include "op_test.h"

Test(relu, matches_reference_fp32_fp64) {
  float x[12];
  double xd[12];
  for (int i = 0; i < 12; i++) xd[i] = x[i] = (float)(i - 6) * 0.75f;
  op_harness *h = harness("relu");
  bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(3, 4), x);
  OK(op_harness_output(h, "Out", "o"));
  OK(op_harness_run(h));
  rill_tensor *o = op_harness_tensor(h, "o");
  expect_dims(o, DIMS(3, 4));
  const float *of = rill_tensor_ptr(o);
  for (int i = 0; i < 12; i++) cr_assert_eq(of[i], x[i] > 0 ? x[i] : 0.0f);
  op_harness_destroy(h);

  h = harness("relu");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(2, 2, 3), xd);
  OK(op_harness_output(h, "Out", "x")); /* in place */
  OK(op_harness_run(h));
  const double *od = rill_tensor_ptr(op_harness_tensor(h, "x"));
  for (int i = 0; i < 12; i++) cr_assert_eq(od[i], xd[i] > 0 ? xd[i] : 0.0);
  op_harness_destroy(h);
}

Test(relu, keeps_lod_of_x) {
  float x[4] = {-1, 2, -3, 4};
  rill_tensor *t = op_harness_make(RILL_DTYPE_FP32, DIMS(4, 1), x);
  uint64_t offs[3] = {0, 1, 4};
  rill_lod_level lv = {3, offs};
  rill_lod lod = {1, &lv};
  OK(rill_lod_copy(&t->lod, &lod));
  op_harness *h = harness("relu");
  OK(op_harness_input(h, "X", "x", t));
  OK(op_harness_output(h, "Out", "o"));
  OK(op_harness_run(h));
  rill_tensor *o = op_harness_tensor(h, "o");
  cr_assert_eq(o->lod.nlevels, 1);
  cr_assert_eq(o->lod.levels[0].n, 3);
  cr_assert_eq(o->lod.levels[0].offsets[2], 4);
  op_harness_free_tensor(t);
  op_harness_destroy(h);
}

Test(relu, int_input_has_no_kernel) {
  op_harness *h = harness("relu");
  bind_input(h, "X", "x", RILL_DTYPE_INT64, DIMS(2), NULL);
  OK(op_harness_output(h, "Out", "o"));
  EXPECT_ERROR(op_harness_run(h), "relu", "int64");
  op_harness_destroy(h);
}

/* The float32 kernel runs 8 lanes at a time: NaN, infinities and -0 give what the scalar
 * select x < 0 ? 0 : x gives (NaN stays NaN, -0 stays -0, as std::max(x, 0) behind
 * Paddle's cwiseMax) in the vector body and in the tail alike. */
Test(relu, special_values_in_vector_body_and_tail) {
  float x[19];
  for (int i = 0; i < 19; i++) x[i] = (float)(i % 5) - 2.0f;
  x[1] = NAN, x[3] = -0.0f, x[5] = INFINITY, x[6] = -INFINITY, x[17] = NAN, x[18] = -0.0f;
  op_harness *h = harness("relu");
  bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(19), x);
  OK(op_harness_output(h, "Out", "o"));
  OK(op_harness_run(h));
  const float *o = rill_tensor_ptr(op_harness_tensor(h, "o"));
  for (int i = 0; i < 19; i++) {
    float want = x[i] < 0 ? 0.0f : x[i];
    cr_assert(isnan(want) ? isnan(o[i]) : memcmp(&o[i], &want, sizeof want) == 0,
              "relu(%g) = %g at %d", x[i], o[i], i);
  }
  op_harness_destroy(h);
}

/* relu6 keeps NaN (the scalar select x < 0 ? 0 : x > t ? t : x does) in both parts. */
Test(relu6, nan_and_infinities_in_vector_body_and_tail) {
  float x[19];
  for (int i = 0; i < 19; i++) x[i] = (float)i - 4.0f;
  x[2] = NAN, x[4] = INFINITY, x[7] = -INFINITY, x[16] = NAN, x[18] = 100.0f;
  op_harness *h = harness("relu6");
  bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(19), x);
  OK(op_harness_output(h, "Out", "o"));
  OK(op_harness_run(h));
  const float *o = rill_tensor_ptr(op_harness_tensor(h, "o"));
  for (int i = 0; i < 19; i++) {
    if (isnan(x[i])) {
      cr_assert(isnan(o[i]), "relu6(NaN) = %g at %d", o[i], i);
      continue;
    }
    float want = x[i] < 0 ? 0.0f : (x[i] > 6 ? 6.0f : x[i]);
    cr_assert_eq(o[i], want, "relu6(%g) = %g at %d", x[i], o[i], i);
  }
  op_harness_destroy(h);
}
