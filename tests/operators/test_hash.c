/* hash against the values Paddle 1.8.5's hash op gives for the same rows (short rows, a
 * 32-byte stripe with a 4-byte tail, stripes with an 8-byte tail), its shape and LoD, and
 * its errors. */
#include "nn_test.h"

#include "framework/base/alloc.h"

static void check(rill_dtype dt, const int64_t *dims, size_t nd, const void *x, int nh, int mod,
                  const int64_t *want, int64_t n) {
  op_harness *h = harness("hash");
  bind_input(h, "X", "ids", dt, dims, nd, x);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_int(h, "num_hash", nh));
  OK(op_harness_attr_int(h, "mod_by", mod));
  OK(op_harness_run(h));
  rill_tensor *out = op_harness_tensor(h, "out");
  expect_dims(out, (int64_t[]){dims[0], nh, 1}, 3);
  cr_assert_eq(out->dtype, dt);
  for (int64_t i = 0; i < n; i++) {
    int64_t got = dt == RILL_DTYPE_INT32 ? ((const int32_t *)rill_tensor_ptr(out))[i]
                                         : ((const int64_t *)rill_tensor_ptr(out))[i];
    cr_assert_eq(got, want[i], "value %lld: %lld, Paddle %lld", (long long)i, (long long)got,
                 (long long)want[i]);
  }
  op_harness_destroy(h);
}

Test(hash, matches_paddle_1_8_5) {
  check(RILL_DTYPE_INT32, DIMS(3, 2), (int32_t[]){1, 2, 3, 4, -5, 70000}, 3, 1000,
        (int64_t[]){722, 407, 337, 603, 590, 386, 776, 29, 439}, 9);
  check(RILL_DTYPE_INT64, DIMS(2, 3), (int64_t[]){1, 2, 3, 0, 0, 0}, 1, 97, (int64_t[]){92, 13},
        2);
  int32_t a[18];
  for (int i = 0; i < 18; i++) a[i] = i * 7 - 20;
  check(RILL_DTYPE_INT32, DIMS(2, 9), a, 2, 100000, (int64_t[]){37145, 94961, 26015, 37150}, 4);
  int64_t b[10];
  for (int i = 0; i < 10; i++) b[i] = (int64_t)i * 123456789 - 5;
  check(RILL_DTYPE_INT64, DIMS(2, 5), b, 2, 1 << 30,
        (int64_t[]){933477742, 940207281, 420148513, 947457434}, 4);
}

Test(hash, keeps_the_lod) {
  op_harness *h = harness("hash");
  rill_tensor *t = op_harness_make(RILL_DTYPE_INT64, DIMS(3, 1), (int64_t[]){4, 5, 6});
  t->lod.levels = rill_calloc(1, sizeof *t->lod.levels);
  t->lod.nlevels = 1;
  t->lod.levels[0].offsets = rill_calloc(3, sizeof(uint64_t));
  t->lod.levels[0].n = 3;
  t->lod.levels[0].offsets[1] = 1;
  t->lod.levels[0].offsets[2] = 3;
  OK(op_harness_input(h, "X", "ids", t));
  op_harness_free_tensor(t);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_run(h));
  rill_tensor *out = op_harness_tensor(h, "out");
  cr_assert_eq(out->lod.nlevels, 1);
  cr_assert_eq(out->lod.levels[0].offsets[2], 3);
  op_harness_destroy(h);
}

Test(hash, bad_input_fails_naming_op_and_variable) {
  op_harness *h = harness("hash");
  bind_input(h, "X", "ids", RILL_DTYPE_FP32, DIMS(3, 2), NULL);
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_infer(h), "hash", "X (ids)", "int32/int64 [N, D]");
  op_harness_destroy(h);

  h = harness("hash");
  bind_input(h, "X", "ids", RILL_DTYPE_INT64, DIMS(3, 2), NULL);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_int(h, "mod_by", 0));
  EXPECT_ERROR(op_harness_infer(h), "hash", "mod_by 0 must be positive");
  op_harness_destroy(h);
}
