/* random_crop: the offsets and SeedOut Paddle 1.8.5 draws for two chained runs, a naive
 * generator (discarding one draw at a time) for other shapes and dtypes, startup_seed
 * while Seed holds no data, and the errors naming op and variable. */
#include "op_test.h"

/* Crops X [B, 3, 6, 5] to [B, 2, 4, 3]: checks every element against offsets[b]. */
static void expect_crop(const float *out, const float *x, int B, const int off[][3]) {
  for (int b = 0; b < B; b++)
    for (int c = 0; c < 2; c++)
      for (int y = 0; y < 4; y++)
        for (int xx = 0; xx < 3; xx++)
          cr_assert_float_eq(out[((b * 2 + c) * 4 + y) * 3 + xx],
                             x[((b * 3 + c + off[b][0]) * 6 + y + off[b][1]) * 5 + xx + off[b][2]], 0,
                             "instance %d (%d, %d, %d)", b, c, y, xx);
}

static op_harness *crop_harness(const float *x, const int64_t *seed) {
  op_harness *h = harness("random_crop");
  bind_input(h, "X", "img", RILL_DTYPE_FP32, DIMS(4, 3, 6, 5), x);
  if (seed) bind_input(h, "Seed", "seed", RILL_DTYPE_INT64, DIMS(1), seed);
  OK(op_harness_output(h, "Out", "crop"));
  OK(op_harness_output(h, "SeedOut", "seed_out"));
  OK(op_harness_attr_ints(h, "shape", (const int32_t[]){2, 4, 3}, 3));
  return h;
}

Test(random_crop, draws_equal_paddle) {
  float x[4 * 90];
  for (int i = 0; i < 360; i++) x[i] = (float)i;
  /* Paddle 1.8.5, random_crop(x, [2, 4, 3], seed=12345), run twice */
  const int first[4][3] = {{0, 2, 2}, {1, 1, 2}, {0, 1, 1}, {1, 1, 0}};
  const int second[4][3] = {{0, 0, 0}, {0, 0, 0}, {1, 2, 1}, {0, 0, 1}};
  op_harness *h = crop_harness(x, NULL);
  OK(op_harness_attr_int(h, "startup_seed", 12345));
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "crop"), DIMS(4, 2, 4, 3));
  expect_crop(rill_tensor_ptr(op_harness_tensor(h, "crop")), x, 4, first);
  int64_t next = *(const int64_t *)rill_tensor_ptr(op_harness_tensor(h, "seed_out"));
  cr_assert_eq(next, 1343410726);
  op_harness_destroy(h);
  h = crop_harness(x, &next);
  OK(op_harness_attr_int(h, "startup_seed", 99)); /* Seed has data: ignored */
  OK(op_harness_run(h));
  expect_crop(rill_tensor_ptr(op_harness_tensor(h, "crop")), x, 4, second);
  cr_assert_eq(*(const int64_t *)rill_tensor_ptr(op_harness_tensor(h, "seed_out")), 271082770);
  op_harness_destroy(h);
}

/* The generator the slow way: seed, i * k single steps, rejection draws. */
static uint64_t slow_offset(int64_t seed, int64_t skip, int nth, const int64_t *hi) {
  const uint64_t m = 2147483647u;
  uint64_t s = (uint64_t)seed % m, r = 0;
  if (!s) s = 1;
  for (int64_t i = 0; i < skip; i++) s = s * 48271u % m;
  for (int j = 0; j <= nth; j++) {
    uint64_t buckets = (uint64_t)hi[j] + 1, scale = (m - 2) / buckets;
    do {
      s = s * 48271u % m;
      r = s - 1;
    } while (r >= buckets * scale);
    r /= scale;
  }
  return r;
}

Test(random_crop, int_rows_match_slow_generator) {
  enum { B = 37, L = 50, K = 7 };
  int32_t x[B * L];
  for (int i = 0; i < B * L; i++) x[i] = i;
  const int64_t seed = -987654321;
  op_harness *h = harness("random_crop");
  bind_input(h, "X", "rows", RILL_DTYPE_INT32, DIMS(B, L), x);
  bind_input(h, "Seed", "seed", RILL_DTYPE_INT64, DIMS(1), &seed);
  OK(op_harness_output(h, "Out", "crop"));
  OK(op_harness_attr_ints(h, "shape", (const int32_t[]){K}, 1));
  OK(op_harness_run(h));
  const int32_t *o = rill_tensor_ptr(op_harness_tensor(h, "crop"));
  const int64_t hi[] = {L - K};
  for (int b = 0; b < B; b++) {
    int64_t off = (int64_t)slow_offset(seed, b, 0, hi);
    for (int j = 0; j < K; j++) cr_assert_eq(o[b * K + j], x[b * L + off + j], "row %d", b);
  }
  op_harness_destroy(h);
}

Test(random_crop, errors_name_op_and_variable) {
  float x[4 * 90] = {0};
  op_harness *h = harness("random_crop");
  bind_input(h, "X", "img", RILL_DTYPE_FP32, DIMS(4, 3, 6, 5), x);
  OK(op_harness_output(h, "Out", "crop"));
  OK(op_harness_attr_ints(h, "shape", (const int32_t[]){2, 7, 3}, 3));
  EXPECT_ERROR(op_harness_run(h), "random_crop", "img", "shape[1]", "7");
  op_harness_destroy(h);
  h = harness("random_crop");
  bind_input(h, "X", "img", RILL_DTYPE_FP32, DIMS(4, 90), x);
  OK(op_harness_output(h, "Out", "crop"));
  OK(op_harness_attr_ints(h, "shape", (const int32_t[]){2, 2, 2}, 3));
  EXPECT_ERROR(op_harness_run(h), "random_crop", "img", "fewer dims");
  op_harness_destroy(h);
  const float bad_seed[1] = {3};
  h = harness("random_crop");
  bind_input(h, "X", "img", RILL_DTYPE_FP32, DIMS(4, 90), x);
  bind_input(h, "Seed", "fseed", RILL_DTYPE_FP32, DIMS(1), bad_seed);
  OK(op_harness_output(h, "Out", "crop"));
  OK(op_harness_attr_ints(h, "shape", (const int32_t[]){9}, 1));
  EXPECT_ERROR(op_harness_run(h), "random_crop", "fseed", "int64");
  op_harness_destroy(h);
}
