/* Tensor arrays and the while op: write_to_array grows an array and copies its input,
 * read_from_array and lod_array_length read it back, out-of-range and wrong-kind errors
 * name the op and the variable; while runs its block until the condition clears, in
 * both schedules, writing its parents' variables in place while the block's own stay in
 * the per-step scope; a condition the block never writes stops at the run's deadline or
 * on cancel instead of hanging the caller. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "framework/exec/executor.h"
#include "framework/program/program.h"
#include "rill.h"

#define OK(expr)                                                                     \
  do {                                                                               \
    rill_status *st_ = (expr);                                                       \
    cr_assert_null(st_, "%s: %s", #expr, rill_status_message(st_));                  \
  } while (0)

static const int64_t D1[] = {1}, D23[] = {2, 3};

static void var(rill_program *p, int32_t block, const char *name, rill_var_type type,
                rill_dtype dtype, const int64_t *dims, int32_t rank) {
  OK(rill_block_add_var(p, block, name, type, dtype, dims, rank, 0, false));
}

/* Appends `type` with one argument per slot ("" leaves a slot out). */
static void op(rill_program *p, int32_t block, const char *type, const char *const *in_slots,
               const char *const *ins, size_t nin, const char *const *out_slots,
               const char *const *outs, size_t nout, rill_op_builder **keep) {
  rill_op_builder *b;
  OK(rill_op_builder_create(type, &b));
  for (size_t i = 0; i < nin; i++) OK(rill_op_builder_input(b, in_slots[i], &ins[i], 1));
  for (size_t i = 0; i < nout; i++) OK(rill_op_builder_output(b, out_slots[i], &outs[i], 1));
  if (keep) {
    *keep = b;
    return;
  }
  OK(rill_op_builder_append(b, p, block));
  rill_op_builder_destroy(b);
}

static void fill(rill_program *p, int32_t block, const char *out, rill_dtype dtype,
                 const int64_t *dims, int32_t rank, float value) {
  rill_op_builder *b;
  const char *slots[] = {"Out"}, *outs[] = {out};
  op(p, block, "fill_constant", NULL, NULL, 0, slots, outs, 1, &b);
  int64_t shape[4];
  for (int32_t i = 0; i < rank; i++) shape[i] = dims[i];
  OK(rill_op_builder_attr_longs(b, "shape", shape, (size_t)rank));
  OK(rill_op_builder_attr_float(b, "value", value));
  OK(rill_op_builder_attr_int(b, "dtype", (int32_t)dtype));
  OK(rill_op_builder_append(b, p, block));
  rill_op_builder_destroy(b);
}

static void unary(rill_program *p, int32_t block, const char *type, const char *x,
                  const char *out) {
  const char *is[] = {"X"}, *os[] = {"Out"};
  op(p, block, type, is, &x, 1, os, &out, 1, NULL);
}

static void binary(rill_program *p, int32_t block, const char *type, const char *x,
                   const char *y, const char *out) {
  const char *is[] = {"X", "Y"}, *ins[] = {x, y}, *os[] = {"Out"};
  op(p, block, type, is, ins, 2, os, &out, 1, NULL);
}

static void write_arr(rill_program *p, int32_t block, const char *x, const char *i,
                      const char *arr) {
  const char *is[] = {"X", "I"}, *ins[] = {x, i}, *os[] = {"Out"};
  op(p, block, "write_to_array", is, ins, 2, os, &arr, 1, NULL);
}

static void read_arr(rill_program *p, int32_t block, const char *arr, const char *i,
                     const char *out) {
  const char *is[] = {"X", "I"}, *ins[] = {arr, i}, *os[] = {"Out"};
  op(p, block, "read_from_array", is, ins, 2, os, &out, 1, NULL);
}

static void while_op(rill_program *p, int32_t block, const char *const *x, size_t nx,
                     const char *cond, const char *const *out, size_t nout, int32_t sub,
                     const char *step_scopes) {
  rill_op_builder *b;
  OK(rill_op_builder_create("while", &b));
  if (nx) OK(rill_op_builder_input(b, "X", x, nx));
  OK(rill_op_builder_input(b, "Condition", &cond, 1));
  if (nout) OK(rill_op_builder_output(b, "Out", out, nout));
  if (step_scopes) OK(rill_op_builder_output(b, "StepScopes", &step_scopes, 1));
  OK(rill_op_builder_attr_block(b, "sub_block", sub));
  OK(rill_op_builder_append(b, p, block));
  rill_op_builder_destroy(b);
}

static rill_executor *new_exec(rill_schedule sched) {
  rill_executor_options o = RILL_EXECUTOR_OPTIONS_INIT;
  o.num_threads = 2;
  rill_executor *e;
  OK(rill_executor_create(&o, &e));
  OK(rill_executor_set_schedule(e, sched));
  return e;
}

static rill_tensor *ramp(float start) {
  rill_tensor *t;
  OK(rill_tensor_create(RILL_DTYPE_FP32, D23, 2, &t));
  float *v = rill_tensor_data(t);
  for (int i = 0; i < 6; i++) v[i] = start + (float)i;
  return t;
}

static rill_tensor *scalar_i64(int64_t v) {
  rill_tensor *t;
  OK(rill_tensor_create(RILL_DTYPE_INT64, D1, 1, &t));
  *(int64_t *)rill_tensor_data(t) = v;
  return t;
}

/* Block 0: i0, i1, i4 index constants; arr[0] = a, arr[1] = b, arr[4] = a (grows to 5,
 * items 2 and 3 empty), arr[0] = b (overwrites), then a += 100 in place: the array holds
 * copies; len = length(arr), r0 = arr[0], r4 = arr[4], n_empty = length(empty). */
static rill_program *arrays(void) {
  rill_program *p;
  OK(rill_program_create(&p));
  var(p, 0, "a", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, D23, 2);
  var(p, 0, "b", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, D23, 2);
  var(p, 0, "arr", RILL_VAR_LOD_TENSOR_ARRAY, RILL_DTYPE_FP32, NULL, 0);
  var(p, 0, "empty", RILL_VAR_LOD_TENSOR_ARRAY, RILL_DTYPE_FP32, NULL, 0);
  const char *idx[] = {"i0", "i1", "i4"};
  const float at[] = {0, 1, 4};
  for (int k = 0; k < 3; k++) {
    var(p, 0, idx[k], RILL_VAR_LOD_TENSOR, RILL_DTYPE_INT64, D1, 1);
    fill(p, 0, idx[k], RILL_DTYPE_INT64, D1, 1, at[k]);
  }
  write_arr(p, 0, "a", "i0", "arr");
  write_arr(p, 0, "b", "i1", "arr");
  write_arr(p, 0, "a", "i4", "arr");
  write_arr(p, 0, "b", "i0", "arr");
  rill_op_builder *sb;
  const char *is[] = {"X"}, *os[] = {"Out"}, *a = "a";
  op(p, 0, "scale", is, &a, 1, os, &a, 1, &sb);
  OK(rill_op_builder_attr_float(sb, "bias", 100.0f));
  OK(rill_op_builder_append(sb, p, 0));
  rill_op_builder_destroy(sb);
  unary(p, 0, "lod_array_length", "arr", "len");
  unary(p, 0, "lod_array_length", "empty", "n_empty");
  read_arr(p, 0, "arr", "i0", "r0");
  read_arr(p, 0, "arr", "i4", "r4");
  return p;
}

Test(tensor_array, write_grows_and_copies_read_and_length_see_it) {
  rill_program *p = arrays();
  rill_executor *e = new_exec(RILL_SCHEDULE_SEQUENTIAL);
  rill_scope *s;
  OK(rill_scope_create(NULL, &s));
  rill_tensor *a = ramp(1.0f), *b = ramp(-10.0f);
  const char *feeds[] = {"a", "b"}, *fetches[] = {"len", "n_empty", "r0", "r4"};
  rill_tensor *in[] = {a, b}, *out[4] = {NULL};
  OK(rill_executor_run(e, p, s, feeds, in, 2, fetches, 4, out));
  cr_assert_eq(rill_tensor_dtype(out[0]), RILL_DTYPE_INT64);
  cr_assert_eq(*(const int64_t *)rill_tensor_data(out[0]), 5);
  cr_assert_eq(*(const int64_t *)rill_tensor_data(out[1]), 0);
  const float *r0 = rill_tensor_data(out[2]), *r4 = rill_tensor_data(out[3]);
  for (int i = 0; i < 6; i++) {
    cr_assert_eq(r0[i], -10.0f + (float)i, "r0[%d] = %g: item 0 was overwritten by b", i, r0[i]);
    cr_assert_eq(r4[i], 1.0f + (float)i, "r4[%d] = %g: a's later in-place change must not show",
                 i, r4[i]);
  }
  for (int k = 0; k < 4; k++) rill_tensor_destroy(out[k]);
  rill_tensor_destroy(a);
  rill_tensor_destroy(b);
  rill_scope_destroy(s);
  rill_executor_destroy(e);
  rill_program_destroy(p);
}

static void expect_error(rill_program *p, const char *feed, rill_tensor *x, const char *fetch,
                         rill_code code, const char *const *parts, size_t nparts) {
  rill_executor *e = new_exec(RILL_SCHEDULE_SEQUENTIAL);
  rill_scope *s;
  OK(rill_scope_create(NULL, &s));
  rill_tensor *out[1] = {NULL};
  rill_status *st = rill_executor_run(e, p, s, &feed, &x, feed ? 1 : 0, &fetch, 1, out);
  cr_assert_not_null(st, "the run should fail");
  const char *msg = rill_status_message(st);
  cr_assert_eq(rill_status_code(st), code, "%s", msg);
  for (size_t k = 0; k < nparts; k++)
    cr_assert(strstr(msg, parts[k]), "'%s' missing from: %s", parts[k], msg);
  rill_status_destroy(st);
  rill_scope_destroy(s);
  rill_executor_destroy(e);
}

Test(tensor_array, read_past_the_end_names_op_and_array) {
  rill_program *p;
  OK(rill_program_create(&p));
  var(p, 0, "a", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, D23, 2);
  var(p, 0, "names", RILL_VAR_LOD_TENSOR_ARRAY, RILL_DTYPE_FP32, NULL, 0);
  fill(p, 0, "i0", RILL_DTYPE_INT64, D1, 1, 0);
  fill(p, 0, "i3", RILL_DTYPE_INT64, D1, 1, 3);
  write_arr(p, 0, "a", "i0", "names");
  read_arr(p, 0, "names", "i3", "r");
  rill_tensor *a = ramp(0.0f);
  const char *parts[] = {"read_from_array", "'names'", "index 3", "1 items"};
  expect_error(p, "a", a, "r", RILL_INVALID_ARGUMENT, parts, 4);
  rill_tensor_destroy(a);
  rill_program_destroy(p);
}

Test(tensor_array, negative_index_and_wrong_kind_are_errors) {
  rill_program *p;
  OK(rill_program_create(&p));
  var(p, 0, "a", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, D23, 2);
  var(p, 0, "arr", RILL_VAR_LOD_TENSOR_ARRAY, RILL_DTYPE_FP32, NULL, 0);
  fill(p, 0, "neg", RILL_DTYPE_INT64, D1, 1, -1);
  write_arr(p, 0, "a", "neg", "arr");
  unary(p, 0, "lod_array_length", "arr", "len");
  rill_tensor *a = ramp(0.0f);
  const char *parts[] = {"write_to_array", "'neg'", "negative"};
  expect_error(p, "a", a, "len", RILL_INVALID_ARGUMENT, parts, 3);
  rill_program_destroy(p);

  OK(rill_program_create(&p));
  var(p, 0, "a", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, D23, 2);
  fill(p, 0, "i0", RILL_DTYPE_INT64, D1, 1, 0);
  read_arr(p, 0, "a", "i0", "r");
  const char *parts2[] = {"read_from_array", "'a'", "not a tensor array"};
  expect_error(p, "a", a, "r", RILL_INVALID_ARGUMENT, parts2, 3);
  rill_tensor_destroy(a);
  rill_program_destroy(p);
}

/* Block 0: i = 0, acc = 0, n fed, c = i < n; while c (block 1): local = acc + i,
 * acc = local, arr[i] = i, i += 1, c = i < n; then len = length(arr), total = acc.
 * Block 1 declares `local` (its own, new at every step); the rest are block 0's. */
static rill_program *loop(const char *step_scopes) {
  rill_program *p;
  OK(rill_program_create(&p));
  if (step_scopes) var(p, 0, step_scopes, RILL_VAR_STEP_SCOPES, RILL_DTYPE_FP32, NULL, 0);
  var(p, 0, "n", RILL_VAR_LOD_TENSOR, RILL_DTYPE_INT64, D1, 1);
  var(p, 0, "i", RILL_VAR_LOD_TENSOR, RILL_DTYPE_INT64, D1, 1);
  var(p, 0, "acc", RILL_VAR_LOD_TENSOR, RILL_DTYPE_INT64, D1, 1);
  var(p, 0, "c", RILL_VAR_LOD_TENSOR, RILL_DTYPE_BOOL, D1, 1);
  var(p, 0, "arr", RILL_VAR_LOD_TENSOR_ARRAY, RILL_DTYPE_INT64, NULL, 0);
  fill(p, 0, "i", RILL_DTYPE_INT64, D1, 1, 0);
  fill(p, 0, "acc", RILL_DTYPE_INT64, D1, 1, 0);
  binary(p, 0, "less_than", "i", "n", "c");
  int32_t b1 = -1;
  OK(rill_program_append_block(p, 0, &b1));
  var(p, b1, "local", RILL_VAR_LOD_TENSOR, RILL_DTYPE_INT64, D1, 1);
  binary(p, b1, "elementwise_add", "acc", "i", "local");
  unary(p, b1, "assign", "local", "acc");
  write_arr(p, b1, "i", "i", "arr");
  unary(p, b1, "increment", "i", "i");
  binary(p, b1, "less_than", "i", "n", "c");
  const char *x[] = {"acc", "i", "n"}, *out[] = {"acc", "i", "c", "arr"};
  while_op(p, 0, x, 3, "c", out, 4, b1, step_scopes);
  unary(p, 0, "lod_array_length", "arr", "len");
  unary(p, 0, "assign", "acc", "total");
  return p;
}

static void check_loop(rill_schedule sched) {
  rill_program *p = loop(NULL);
  rill_executor *e = new_exec(sched);
  rill_scope *s;
  OK(rill_scope_create(NULL, &s));
  const char *feeds[] = {"n"}, *fetches[] = {"total", "len", "i"};
  const int64_t counts[] = {5, 2, 0, 7};
  for (int r = 0; r < 4; r++) {
    int64_t n = counts[r];
    rill_tensor *in = scalar_i64(n), *out[3] = {NULL};
    OK(rill_executor_run(e, p, s, feeds, &in, 1, fetches, 3, out));
    int64_t total = *(const int64_t *)rill_tensor_data(out[0]);
    int64_t len = *(const int64_t *)rill_tensor_data(out[1]);
    int64_t i = *(const int64_t *)rill_tensor_data(out[2]);
    cr_assert_eq(total, n * (n - 1) / 2, "n = %lld: total %lld", (long long)n, (long long)total);
    cr_assert_eq(len, n, "n = %lld: the array has %lld items (a fresh array every run)",
                 (long long)n, (long long)len);
    cr_assert_eq(i, n);
    for (int k = 0; k < 3; k++) rill_tensor_destroy(out[k]);
    rill_tensor_destroy(in);
  }
  cr_assert_null(rill_scope_find(s, "local"), "block 1's local leaked into the caller's scope");
  cr_assert_eq(rill_exec_subplan_builds(e), 1, "one plan for the loop's block, reused");
  cr_assert_eq(rill_exec_subblock_runs(e), 5 + 2 + 0 + 7, "one block run per step");
  rill_scope_destroy(s);
  rill_executor_destroy(e);
  rill_program_destroy(p);
}

/* The loop again with StepScopes: the training form, a new scope per step kept until
 * the run ends; without it (as with is_test), one scope serves every step. Both give the
 * same values, and neither leaves a scope behind. */
Test(while_op, step_scopes_kept_or_one_scope_for_every_step) {
  for (int kept = 0; kept < 2; kept++) {
    rill_program *p = loop(kept ? "steps" : NULL);
    rill_executor *e = new_exec(RILL_SCHEDULE_SEQUENTIAL);
    rill_scope *s;
    OK(rill_scope_create(NULL, &s));
    size_t before = 0; /* after the first run, which makes the plans' own scopes */
    const char *feeds[] = {"n"}, *fetches[] = {"total"};
    for (int r = 0; r < 3; r++) {
      rill_tensor *in = scalar_i64(6), *out = NULL;
      OK(rill_executor_run(e, p, s, feeds, &in, 1, fetches, 1, &out));
      cr_assert_eq(*(const int64_t *)rill_tensor_data(out), 15, "kept %d, run %d", kept, r);
      rill_tensor_destroy(out);
      rill_tensor_destroy(in);
      if (r == 0) before = rill_scope_live_count();
      cr_assert_eq(rill_scope_live_count(), before, "kept %d: %zu scopes live, %zu before", kept,
                   rill_scope_live_count(), before);
    }
    rill_scope_destroy(s);
    rill_executor_destroy(e);
    rill_program_destroy(p);
  }
}

Test(while_op, loop_sequential) { check_loop(RILL_SCHEDULE_SEQUENTIAL); }
Test(while_op, loop_parallel) { check_loop(RILL_SCHEDULE_PARALLEL); }

/* while c: i += 1, and nothing writes c. */
static rill_program *endless(bool empty_block) {
  rill_program *p;
  OK(rill_program_create(&p));
  var(p, 0, "i", RILL_VAR_LOD_TENSOR, RILL_DTYPE_INT64, D1, 1);
  var(p, 0, "c", RILL_VAR_LOD_TENSOR, RILL_DTYPE_BOOL, D1, 1);
  fill(p, 0, "i", RILL_DTYPE_INT64, D1, 1, 0);
  fill(p, 0, "c", RILL_DTYPE_BOOL, D1, 1, 1);
  int32_t b1 = -1;
  OK(rill_program_append_block(p, 0, &b1));
  if (!empty_block) unary(p, b1, "increment", "i", "i");
  const char *x[] = {"i"};
  while_op(p, 0, x, 1, "c", x, 1, b1, NULL);
  unary(p, 0, "assign", "i", "out");
  return p;
}

Test(while_op, a_condition_never_written_stops_at_the_deadline) {
  for (int empty = 0; empty < 2; empty++) {
    rill_program *p = endless(empty);
    rill_executor *e = new_exec(RILL_SCHEDULE_SEQUENTIAL);
    OK(rill_executor_set_timeout(e, 50 * 1000));
    rill_scope *s;
    OK(rill_scope_create(NULL, &s));
    const char *fetch = "out";
    rill_tensor *out[1] = {NULL};
    rill_status *st = rill_executor_run(e, p, s, NULL, NULL, 0, &fetch, 1, out);
    cr_assert_eq(rill_status_code(st), RILL_DEADLINE_EXCEEDED, "%s", rill_status_message(st));
    cr_assert(strstr(rill_status_message(st), "while"), "%s", rill_status_message(st));
    rill_status_destroy(st);
    rill_scope_destroy(s);
    rill_executor_destroy(e);
    rill_program_destroy(p);
  }
}

static void *cancel_later(void *arg) {
  usleep(30 * 1000);
  rill_executor_cancel(arg);
  return NULL;
}

Test(while_op, a_condition_never_written_stops_on_cancel) {
  rill_program *p = endless(true);
  rill_executor *e = new_exec(RILL_SCHEDULE_SEQUENTIAL);
  rill_scope *s;
  OK(rill_scope_create(NULL, &s));
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, cancel_later, e), 0);
  const char *fetch = "out";
  rill_tensor *out[1] = {NULL};
  rill_status *st = rill_executor_run(e, p, s, NULL, NULL, 0, &fetch, 1, out);
  pthread_join(t, NULL);
  cr_assert_eq(rill_status_code(st), RILL_CANCELLED, "%s", rill_status_message(st));
  rill_status_destroy(st);
  rill_scope_destroy(s);
  rill_executor_destroy(e);
  rill_program_destroy(p);
}

Test(while_op, condition_must_be_one_bool) {
  rill_program *p;
  OK(rill_program_create(&p));
  var(p, 0, "flag", RILL_VAR_LOD_TENSOR, RILL_DTYPE_INT64, D1, 1);
  fill(p, 0, "flag", RILL_DTYPE_INT64, D1, 1, 1);
  int32_t b1 = -1;
  OK(rill_program_append_block(p, 0, &b1));
  unary(p, b1, "assign", "flag", "flag");
  while_op(p, 0, NULL, 0, "flag", NULL, 0, b1, NULL);
  unary(p, 0, "assign", "flag", "out");
  const char *parts[] = {"while", "'flag'", "bool"};
  expect_error(p, NULL, NULL, "out", RILL_INVALID_ARGUMENT, parts, 3);
  rill_program_destroy(p);
}
