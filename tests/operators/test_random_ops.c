/* randint, randperm, uniform/gaussian_random_batch_size_like and sampling_id: shapes,
 * ranges and distributions, seeds that repeat, and errors naming op and variable. */
#include "nn_test.h"

Test(random_ops, randint_range_shape_and_seed) {
  int64_t first[600];
  for (int run = 0; run < 2; run++) {
    op_harness *h = harness("randint");
    OK(op_harness_output(h, "Out", "out"));
    OK(op_harness_attr_longs(h, "shape", (int64_t[]){3, 200}, 2));
    OK(op_harness_attr_int(h, "low", -2));
    OK(op_harness_attr_int(h, "high", 3));
    OK(op_harness_attr_int(h, "seed", 11));
    OK(op_harness_run(h));
    rill_tensor *out = op_harness_tensor(h, "out");
    expect_dims(out, DIMS(3, 200));
    cr_assert_eq(out->dtype, RILL_DTYPE_INT64);
    const int64_t *p = rill_tensor_ptr(out);
    int count[5] = {0};
    for (int i = 0; i < 600; i++) {
      cr_assert(p[i] >= -2 && p[i] < 3, "value %lld", (long long)p[i]);
      count[p[i] + 2]++;
      if (run == 0) first[i] = p[i];
      else cr_assert_eq(p[i], first[i], "seed 11 repeats");
    }
    for (int v = 0; v < 5; v++) cr_assert(count[v] > 80 && count[v] < 160, "count %d", count[v]);
    op_harness_destroy(h);
  }
}

Test(random_ops, randperm_is_a_permutation) {
  op_harness *h = harness("randperm");
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_int(h, "n", 50));
  OK(op_harness_attr_int(h, "dtype", RILL_DTYPE_INT32));
  OK(op_harness_run(h));
  rill_tensor *out = op_harness_tensor(h, "out");
  expect_dims(out, DIMS(50));
  const int32_t *p = rill_tensor_ptr(out);
  bool seen[50] = {false};
  int fixed = 0;
  for (int i = 0; i < 50; i++) {
    cr_assert(p[i] >= 0 && p[i] < 50 && !seen[p[i]], "value %d", p[i]);
    seen[p[i]] = true;
    fixed += p[i] == i;
  }
  cr_assert(fixed < 50, "the identity is not shuffled");
  op_harness_destroy(h);
}

Test(random_ops, batch_size_like_shapes_and_statistics) {
  op_harness *h = harness("uniform_random_batch_size_like");
  bind_input(h, "Input", "x", RILL_DTYPE_FP32, DIMS(300, 2), NULL);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_ints(h, "shape", (int32_t[]){-1, 20}, 2));
  OK(op_harness_attr_float(h, "min", 2.0f));
  OK(op_harness_attr_float(h, "max", 5.0f));
  OK(op_harness_run(h));
  rill_tensor *out = op_harness_tensor(h, "out");
  expect_dims(out, DIMS(300, 20));
  const float *u = rill_tensor_ptr(out);
  double sum = 0;
  for (int i = 0; i < 6000; i++) {
    cr_assert(u[i] >= 2.0f && u[i] < 5.0f);
    sum += u[i];
  }
  cr_assert(fabs(sum / 6000 - 3.5) < 0.05, "mean %g", sum / 6000);
  op_harness_destroy(h);

  h = harness("gaussian_random_batch_size_like");
  bind_input(h, "Input", "x", RILL_DTYPE_FP32, DIMS(2, 500), NULL);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_ints(h, "shape", (int32_t[]){8, 1, 7}, 3));
  OK(op_harness_attr_int(h, "input_dim_idx", 1));
  OK(op_harness_attr_int(h, "output_dim_idx", 2));
  OK(op_harness_attr_float(h, "mean", 1.0f));
  OK(op_harness_attr_float(h, "std", 2.0f));
  OK(op_harness_attr_int(h, "dtype", RILL_DTYPE_FP64));
  OK(op_harness_run(h));
  out = op_harness_tensor(h, "out");
  expect_dims(out, DIMS(8, 1, 500));
  const double *g = rill_tensor_ptr(out);
  double s = 0, s2 = 0;
  for (int i = 0; i < 4000; i++) {
    s += g[i];
    s2 += g[i] * g[i];
  }
  double mean = s / 4000, sd = sqrt(s2 / 4000 - mean * mean);
  cr_assert(fabs(mean - 1.0) < 0.1 && fabs(sd - 2.0) < 0.1, "mean %g sd %g", mean, sd);
  op_harness_destroy(h);
}

Test(random_ops, sampling_id_follows_the_weights) {
  /* rows one-hot on ids 0, 2, 1: every draw picks them; the last row is uniform */
  float x[4 * 3] = {1, 0, 0, 0, 0, 1, 0, 1, 0, 1.0f / 3, 1.0f / 3, 1.0f / 3};
  int counts[3] = {0};
  for (int seed = 1; seed <= 300; seed++) {
    op_harness *h = harness("sampling_id");
    bind_input(h, "X", "probs", RILL_DTYPE_FP32, DIMS(4, 3), x);
    OK(op_harness_output(h, "Out", "ids"));
    OK(op_harness_attr_int(h, "seed", seed));
    OK(op_harness_run(h));
    rill_tensor *out = op_harness_tensor(h, "ids");
    expect_dims(out, DIMS(4));
    const int64_t *p = rill_tensor_ptr(out);
    cr_assert(p[0] == 0 && p[1] == 2 && p[2] == 1, "got %lld %lld %lld", (long long)p[0],
              (long long)p[1], (long long)p[2]);
    counts[p[3]]++;
    op_harness_destroy(h);
  }
  for (int i = 0; i < 3; i++) cr_assert(counts[i] > 60 && counts[i] < 140, "count %d", counts[i]);
}

Test(random_ops, bad_input_fails_naming_op_and_variable) {
  op_harness *h = harness("randint");
  OK(op_harness_output(h, "Out", "draws"));
  OK(op_harness_attr_longs(h, "shape", (int64_t[]){2}, 1));
  OK(op_harness_attr_int(h, "low", 4));
  OK(op_harness_attr_int(h, "high", 4));
  EXPECT_ERROR(op_harness_infer(h), "randint", "low 4 must be less than high 4");
  op_harness_destroy(h);

  h = harness("randint");
  OK(op_harness_output(h, "Out", "draws"));
  OK(op_harness_attr_longs(h, "shape", (int64_t[]){2}, 1));
  OK(op_harness_attr_int(h, "high", 4));
  OK(op_harness_attr_int(h, "dtype", RILL_DTYPE_FP32));
  EXPECT_ERROR(op_harness_infer(h), "randint", "Out (draws)", "not int32");
  op_harness_destroy(h);

  h = harness("randperm");
  OK(op_harness_output(h, "Out", "perm"));
  OK(op_harness_attr_int(h, "n", 0));
  EXPECT_ERROR(op_harness_infer(h), "randperm", "attribute n is 0");
  op_harness_destroy(h);

  h = harness("uniform_random_batch_size_like");
  bind_input(h, "Input", "batch", RILL_DTYPE_FP32, DIMS(3, 2), NULL);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_ints(h, "shape", (int32_t[]){-1, 4}, 2));
  OK(op_harness_attr_int(h, "input_dim_idx", 2));
  EXPECT_ERROR(op_harness_infer(h), "uniform_random_batch_size_like", "Input (batch)",
               "input_dim_idx 2");
  op_harness_destroy(h);

  h = harness("sampling_id");
  bind_input(h, "X", "probs", RILL_DTYPE_FP32, DIMS(3), NULL);
  OK(op_harness_output(h, "Out", "ids"));
  EXPECT_ERROR(op_harness_infer(h), "sampling_id", "X (probs)", "[N, W]");
  op_harness_destroy(h);
}
