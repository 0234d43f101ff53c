/* sampling_id: the ids Paddle 1.8.5 draws for fixed seeds (float32 and float64, the
 * default and a narrowed [min, max), a negative seed), the same ids on every run with a
 * seed, a draw past every row's total giving the last id, and the errors. */
#include "op_test.h"

/* three distributions, each three times: Paddle's draws move on from row to row */
static const double PROBS[9][4] = {
    {0.1, 0.2, 0.3, 0.4}, {0.7, 0.1, 0.1, 0.1}, {0.25, 0.25, 0.25, 0.25},
    {0.1, 0.2, 0.3, 0.4}, {0.7, 0.1, 0.1, 0.1}, {0.25, 0.25, 0.25, 0.25},
    {0.1, 0.2, 0.3, 0.4}, {0.7, 0.1, 0.1, 0.1}, {0.25, 0.25, 0.25, 0.25},
};

static op_harness *sampling(rill_dtype dt, int32_t seed, float lo, float hi) {
  float f[9][4];
  for (int i = 0; i < 9; i++)
    for (int j = 0; j < 4; j++) f[i][j] = (float)PROBS[i][j];
  op_harness *h = harness("sampling_id");
  const void *data = dt == RILL_DTYPE_FP32 ? (const void *)f : (const void *)PROBS;
  bind_input(h, "X", "probs", dt, DIMS(9, 4), data);
  OK(op_harness_output(h, "Out", "ids"));
  OK(op_harness_attr_int(h, "seed", seed));
  OK(op_harness_attr_float(h, "min", lo));
  OK(op_harness_attr_float(h, "max", hi));
  return h;
}

static void expect_ids(op_harness *h, const int64_t want[9]) {
  OK(op_harness_run(h));
  rill_tensor *out = op_harness_tensor(h, "ids");
  expect_dims(out, DIMS(9));
  cr_assert_eq(out->dtype, RILL_DTYPE_INT64);
  const int64_t *got = rill_tensor_ptr(out);
  for (int i = 0; i < 9; i++)
    cr_assert_eq(got[i], want[i], "row %d: %lld, expected %lld", i, (long long)got[i],
                 (long long)want[i]);
}

Test(sampling_id, paddle_ids_for_fixed_seeds) {
  struct {
    rill_dtype dt;
    int32_t seed;
    float lo, hi;
    int64_t want[9];
  } cases[] = {
      /* printed by Paddle 1.8.5's fluid.layers.sampling_id on the same rows */
      {RILL_DTYPE_FP32, 7, 0.0f, 1.0f, {0, 0, 0, 1, 1, 1, 3, 1, 3}},
      {RILL_DTYPE_FP64, 7, 0.0f, 1.0f, {2, 0, 1, 3, 0, 3, 3, 0, 3}},
      {RILL_DTYPE_FP32, 99, 0.2f, 0.9f, {1, 0, 2, 2, 1, 2, 3, 0, 0}},
      {RILL_DTYPE_FP64, -5, 0.0f, 1.0f, {3, 0, 1, 3, 1, 1, 2, 0, 0}},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    op_harness *h = sampling(cases[c].dt, cases[c].seed, cases[c].lo, cases[c].hi);
    expect_ids(h, cases[c].want);
    expect_ids(h, cases[c].want); /* reseeded: the same ids again */
    op_harness_destroy(h);
  }
}

Test(sampling_id, a_draw_past_the_row_total_takes_the_last_id) {
  /* rows summing to 0.5 with draws from [0.6, 1): every row runs out */
  float x[3][2] = {{0.25f, 0.25f}, {0.5f, 0.0f}, {0.0f, 0.5f}};
  op_harness *h = harness("sampling_id");
  bind_input(h, "X", "probs", RILL_DTYPE_FP32, DIMS(3, 2), x);
  OK(op_harness_output(h, "Out", "ids"));
  OK(op_harness_attr_int(h, "seed", 3));
  OK(op_harness_attr_float(h, "min", 0.6f));
  OK(op_harness_run(h));
  const int64_t *got = rill_tensor_ptr(op_harness_tensor(h, "ids"));
  for (int i = 0; i < 3; i++) cr_assert_eq(got[i], 1);
  op_harness_destroy(h);
}

Test(sampling_id, unseeded_runs_draw_ids_in_range) {
  op_harness *h = sampling(RILL_DTYPE_FP32, 0, 0.0f, 1.0f);
  OK(op_harness_run(h));
  const int64_t *got = rill_tensor_ptr(op_harness_tensor(h, "ids"));
  for (int i = 0; i < 9; i++) cr_assert(got[i] >= 0 && got[i] < 4);
  op_harness_destroy(h);
}

Test(sampling_id, bad_inputs_name_op_and_variable) {
  op_harness *h = harness("sampling_id");
  bind_input(h, "X", "probs", RILL_DTYPE_FP32, DIMS(2, 3, 4), NULL);
  OK(op_harness_output(h, "Out", "ids"));
  EXPECT_ERROR(op_harness_run(h), "sampling_id", "probs", "[N, W]");
  op_harness_destroy(h);

  h = harness("sampling_id");
  bind_input(h, "X", "counts", RILL_DTYPE_INT64, DIMS(2, 3), NULL);
  OK(op_harness_output(h, "Out", "ids"));
  EXPECT_ERROR(op_harness_run(h), "sampling_id", "counts", "int64");
  op_harness_destroy(h);

  h = sampling(RILL_DTYPE_FP32, 1, 0.5f, 0.5f);
  EXPECT_ERROR(op_harness_run(h), "sampling_id", "min", "max", "ids");
  op_harness_destroy(h);
}
