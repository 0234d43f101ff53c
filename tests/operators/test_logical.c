/* logical_and / or / xor / not against the C operators over every input pair, and the
 * dtype and shape errors. */
#include "op_test.h"

static const bool xs[4] = {false, false, true, true}, ys[4] = {false, true, false, true};

static void check(const char *type, bool (*ref)(bool, bool)) {
  op_harness *h = harness(type);
  bind_input(h, "X", "a", RILL_DTYPE_BOOL, DIMS(2, 2), xs);
  if (ref) bind_input(h, "Y", "b", RILL_DTYPE_BOOL, DIMS(2, 2), ys);
  OK(op_harness_output(h, "Out", "c"));
  OK(op_harness_run(h));
  rill_tensor *c = op_harness_tensor(h, "c");
  expect_dims(c, DIMS(2, 2));
  const bool *got = rill_tensor_ptr(c);
  for (int i = 0; i < 4; i++) {
    bool want = ref ? ref(xs[i], ys[i]) : !xs[i];
    cr_assert_eq(got[i], want, "%s(%d, %d)", type, xs[i], ys[i]);
  }
  op_harness_destroy(h);
}

static bool and_(bool a, bool b) { return a && b; }
static bool or_(bool a, bool b) { return a || b; }
static bool xor_(bool a, bool b) { return a != b; }

Test(logical, every_op_matches_the_truth_table) {
  check("logical_and", and_);
  check("logical_or", or_);
  check("logical_xor", xor_);
  check("logical_not", NULL);
}

Test(logical, refuses_non_bool_and_mismatched_shapes) {
  op_harness *h = harness("logical_and");
  bind_input(h, "X", "a", RILL_DTYPE_FP32, DIMS(2), (const float[]){1, 0});
  bind_input(h, "Y", "b", RILL_DTYPE_BOOL, DIMS(2), ys);
  OK(op_harness_output(h, "Out", "c"));
  EXPECT_ERROR(op_harness_run(h), "logical_and", "X", "a", "bool");
  op_harness_destroy(h);
  h = harness("logical_or");
  bind_input(h, "X", "a", RILL_DTYPE_BOOL, DIMS(4), xs);
  bind_input(h, "Y", "b", RILL_DTYPE_BOOL, DIMS(2), ys);
  OK(op_harness_output(h, "Out", "c"));
  EXPECT_ERROR(op_harness_run(h), "logical_or", "a", "b", "shape");
  op_harness_destroy(h);
}
