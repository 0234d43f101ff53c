/* The executor through the public C API: a small MLP built with the op builder,
 * checked against values computed here; plan caching; feeds, fetches and the errors
 * they can cause; allocation failures. Every test runs under the schedule
 * TEST_SCHEDULE: sequential here, parallel in test_executor_parallel.c, which includes
 * this file. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "support/fail_alloc.h"
#include "framework/exec/executor.h"
#include "framework/program/program.h"
#include "rill.h"

#define OK(expr)                                                                     \
  do {                                                                               \
    rill_status *st_ = (expr);                                                       \
    cr_assert_null(st_, "%s: %s", #expr, rill_status_message(st_));                  \
  } while (0)

#ifndef TEST_SCHEDULE
#define TEST_SCHEDULE RILL_SCHEDULE_SEQUENTIAL
#endif

/* An executor running every plan under TEST_SCHEDULE. */
static rill_status *new_exec(rill_executor **out) {
  rill_executor *e;
  RILL_TRY(rill_executor_create(NULL, &e));
  rill_status *st = rill_executor_set_schedule(e, TEST_SCHEDULE);
  if (st) {
    rill_executor_destroy(e);
    return st;
  }
  *out = e;
  return NULL;
}

enum { IN = 4, HID = 3, OUT = 2 };
static const float W2[HID * OUT] = {0.5f, -0.5f, 1.0f, 0.25f, -1.0f, 2.0f};
static const float B2[OUT] = {0.1f, -0.2f};

static rill_status *add_op(rill_program *p, const char *type, const char *in1, const char *v1,
                           const char *in2, const char *v2, const char *out) {
  rill_op_builder *b;
  RILL_TRY(rill_op_builder_create(type, &b));
  rill_status *st = NULL;
  if (in1 && !st) st = rill_op_builder_input(b, in1, &v1, 1);
  if (in2 && !st) st = rill_op_builder_input(b, in2, &v2, 1);
  if (!st) st = rill_op_builder_output(b, "Out", &out, 1);
  if (!st) st = rill_op_builder_append(b, p, 0);
  rill_op_builder_destroy(b);
  return st;
}

static rill_status *add_fill(rill_program *p, const char *out, const int64_t *shape, size_t n,
                             float value) {
  rill_op_builder *b;
  RILL_TRY(rill_op_builder_create("fill_constant", &b));
  rill_status *st = rill_op_builder_output(b, "Out", &out, 1);
  if (!st) st = rill_op_builder_attr_longs(b, "shape", shape, n);
  if (!st) st = rill_op_builder_attr_float(b, "value", value);
  if (!st) st = rill_op_builder_attr_int(b, "dtype", RILL_DTYPE_FP32);
  if (!st) st = rill_op_builder_append(b, p, 0);
  rill_op_builder_destroy(b);
  return st;
}

/* y = softmax(relu(x*W1 + b1)*W2 + b2), loss = mean(y); W1, b1 from fill_constant,
 * W2, b2 set in the scope by the caller. */
static rill_status *build_mlp(rill_program **out) {
  rill_program *p;
  RILL_TRY(rill_program_create(&p));
  const int64_t dx[] = {-1, IN}, dw1[] = {IN, HID}, db1[] = {HID}, dh[] = {-1, HID},
                dw2[] = {HID, OUT}, db2[] = {OUT}, dy[] = {-1, OUT}, dl[] = {1};
  rill_status *st = NULL;
#define V(name, dims, persist)                                                              \
  if (!st)                                                                                  \
  st = rill_block_add_var(p, 0, name, RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, dims,           \
                          sizeof dims / sizeof dims[0], 0, persist)
  V("x", dx, false);
  V("W1", dw1, true);
  V("b1", db1, true);
  V("h0", dh, false);
  V("h1", dh, false);
  V("h", dh, false);
  V("W2", dw2, true);
  V("b2", db2, true);
  V("o0", dy, false);
  V("o", dy, false);
  V("y", dy, false);
  V("loss", dl, false);
#undef V
  if (!st) st = add_fill(p, "W1", dw1, 2, 0.5f);
  if (!st) st = add_fill(p, "b1", db1, 1, 0.1f);
  if (!st) st = add_op(p, "mul", "X", "x", "Y", "W1", "h0");
  if (!st) st = add_op(p, "elementwise_add", "X", "h0", "Y", "b1", "h1");
  if (!st) st = add_op(p, "relu", "X", "h1", NULL, NULL, "h");
  if (!st) st = add_op(p, "mul", "X", "h", "Y", "W2", "o0");
  if (!st) st = add_op(p, "elementwise_add", "X", "o0", "Y", "b2", "o");
  if (!st) st = add_op(p, "softmax", "X", "o", NULL, NULL, "y");
  if (!st) st = add_op(p, "mean", "X", "y", NULL, NULL, "loss");
  if (st) {
    rill_program_destroy(p);
    return st;
  }
  *out = p;
  return NULL;
}

static rill_status *set_params(rill_scope *scope) {
  rill_tensor *w = NULL, *b = NULL;
  const int64_t dw[] = {HID, OUT}, db[] = {OUT};
  rill_status *st = rill_tensor_create(RILL_DTYPE_FP32, dw, 2, &w);
  if (!st) st = rill_tensor_create(RILL_DTYPE_FP32, db, 1, &b);
  if (!st) {
    memcpy(rill_tensor_data(w), W2, sizeof W2);
    memcpy(rill_tensor_data(b), B2, sizeof B2);
    st = rill_scope_set_tensor(scope, "W2", w);
  }
  if (!st) st = rill_scope_set_tensor(scope, "b2", b);
  rill_tensor_destroy(w);
  rill_tensor_destroy(b);
  return st;
}

static void reference(const float *x, int64_t rows, float *y) {
  for (int64_t r = 0; r < rows; r++) {
    float h[HID], o[OUT], s = 0;
    for (int j = 0; j < HID; j++) {
      float acc = 0.1f;
      for (int i = 0; i < IN; i++) acc += x[r * IN + i] * 0.5f;
      h[j] = acc > 0 ? acc : 0;
    }
    float mx = -INFINITY;
    for (int k = 0; k < OUT; k++) {
      o[k] = B2[k];
      for (int j = 0; j < HID; j++) o[k] += h[j] * W2[j * OUT + k];
      if (o[k] > mx) mx = o[k];
    }
    for (int k = 0; k < OUT; k++) s += (o[k] = expf(o[k] - mx));
    for (int k = 0; k < OUT; k++) y[r * OUT + k] = o[k] / s;
  }
}

static rill_tensor *make_x(int64_t rows, float seed) {
  rill_tensor *t;
  const int64_t d[] = {rows, IN};
  OK(rill_tensor_create(RILL_DTYPE_FP32, d, 2, &t));
  float *p = rill_tensor_data(t);
  for (int64_t i = 0; i < rows * IN; i++) p[i] = sinf(seed + (float)i * 0.7f) * 2.0f;
  return t;
}

static void check_y(const rill_tensor *x, const rill_tensor *y) {
  int64_t rows = rill_tensor_dims(x)[0];
  cr_assert_eq(rill_tensor_ndim(y), 2);
  cr_assert_eq(rill_tensor_dims(y)[0], rows);
  cr_assert_eq(rill_tensor_dims(y)[1], OUT);
  float want[64 * OUT];
  reference(rill_tensor_data((rill_tensor *)x), rows, want);
  const float *got = rill_tensor_data((rill_tensor *)y);
  for (int64_t i = 0; i < rows * OUT; i++)
    cr_assert_float_eq(got[i], want[i], 1e-5, "y[%lld] = %g, want %g", (long long)i, got[i], want[i]);
}

typedef struct fixture {
  rill_program *prog;
  rill_scope *scope;
  rill_executor *exe;
} fixture;

static fixture setup(void) {
  fixture f;
  OK(build_mlp(&f.prog));
  OK(rill_scope_create(NULL, &f.scope));
  OK(set_params(f.scope));
  OK(new_exec(&f.exe));
  return f;
}

static void teardown(fixture *f) {
  rill_executor_destroy(f->exe);
  rill_scope_destroy(f->scope);
  rill_program_destroy(f->prog);
}

static const char *feed_x[] = {"x"};

static rill_status *run_xy(fixture *f, rill_tensor *x, const char *fetch, rill_tensor **out) {
  return rill_executor_run(f->exe, f->prog, f->scope, feed_x, &x, 1, &fetch, 1, out);
}

Test(exec, mlp_matches_reference) {
  fixture f = setup();
  rill_tensor *x = make_x(5, 0.3f), *out[2] = {NULL, NULL};
  const char *fetch[] = {"y", "loss"};
  OK(rill_executor_run(f.exe, f.prog, f.scope, feed_x, &x, 1, fetch, 2, out));
  check_y(x, out[0]);
  cr_assert_eq(rill_tensor_numel(out[1]), 1);
  cr_assert_float_eq(*(float *)rill_tensor_data(out[1]), 0.5f, 1e-6); /* rows of 2 sum to 1 */
  cr_assert_eq(TEST_SCHEDULE == RILL_SCHEDULE_PARALLEL ? f.exe->parallel_runs : f.exe->sequential_runs, 1,
               "the run used the schedule under test");
  rill_tensor_destroy(out[0]);
  rill_tensor_destroy(out[1]);
  rill_tensor_destroy(x);
  teardown(&f);
}

Test(exec, second_run_hits_plan_cache) {
  fixture f = setup();
  rill_tensor *x = make_x(3, 1.0f), *y1 = NULL, *y2 = NULL;
  OK(run_xy(&f, x, "y", &y1));
  cr_assert_eq(rill_executor_plan_builds(f.exe), 1);
  cr_assert_eq(rill_executor_plan_hits(f.exe), 0);
  OK(run_xy(&f, x, "y", &y2));
  cr_assert_eq(rill_executor_plan_builds(f.exe), 1);
  cr_assert_eq(rill_executor_plan_hits(f.exe), 1);
  check_y(x, y2);
  /* Another fetch list is another plan. */
  rill_tensor *l = NULL;
  OK(run_xy(&f, x, "loss", &l));
  cr_assert_eq(rill_executor_plan_builds(f.exe), 2);
  rill_tensor_destroy(l);
  rill_tensor_destroy(y1);
  rill_tensor_destroy(y2);
  rill_tensor_destroy(x);
  teardown(&f);
}

Test(exec, editing_program_invalidates_plan) {
  fixture f = setup();
  rill_tensor *x = make_x(2, 2.0f), *y = NULL, *z = NULL;
  OK(run_xy(&f, x, "y", &y));
  uint64_t v = rill_program_version(f.prog);
  const int64_t dy[] = {-1, OUT};
  OK(rill_block_add_var(f.prog, 0, "z", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, dy, 2, 0, false));
  rill_op_builder *b;
  const char *in = "y", *out = "z";
  OK(rill_op_builder_create("scale", &b));
  OK(rill_op_builder_input(b, "X", &in, 1));
  OK(rill_op_builder_output(b, "Out", &out, 1));
  OK(rill_op_builder_attr_float(b, "scale", 3.0f));
  OK(rill_op_builder_append(b, f.prog, 0));
  rill_op_builder_destroy(b);
  cr_assert_neq(rill_program_version(f.prog), v);
  OK(run_xy(&f, x, "z", &z));
  rill_tensor_destroy(y);
  OK(run_xy(&f, x, "y", &y));
  cr_assert_eq(rill_executor_plan_builds(f.exe), 3, "old plans must not serve the new version");
  const float *py = rill_tensor_data(y), *pz = rill_tensor_data(z);
  for (int i = 0; i < 2 * OUT; i++) cr_assert_float_eq(pz[i], 3.0f * py[i], 1e-6);
  rill_tensor_destroy(y);
  rill_tensor_destroy(z);
  rill_tensor_destroy(x);
  teardown(&f);
}

Test(exec, persistables_live_in_scope_temporaries_do_not) {
  fixture f = setup();
  rill_tensor *x = make_x(2, 0.0f), *y = NULL, *w1 = NULL, *h = NULL;
  OK(run_xy(&f, x, "y", &y));
  OK(rill_scope_get_tensor(f.scope, "W1", &w1));
  cr_assert_eq(rill_tensor_numel(w1), IN * HID);
  cr_assert_float_eq(((float *)rill_tensor_data(w1))[IN * HID - 1], 0.5f, 0);
  rill_status *st = rill_scope_get_tensor(f.scope, "h", &h);
  cr_assert_eq(rill_status_code(st), RILL_NOT_FOUND);
  rill_status_destroy(st);
  rill_tensor_destroy(w1);
  rill_tensor_destroy(y);
  rill_tensor_destroy(x);
  teardown(&f);
}

Test(exec, fetched_outputs_survive_the_next_run) {
  fixture f = setup();
  rill_tensor *x1 = make_x(4, 0.1f), *x2 = make_x(4, 5.0f), *y1 = NULL, *y2 = NULL;
  OK(run_xy(&f, x1, "y", &y1));
  OK(run_xy(&f, x2, "y", &y2));
  cr_assert_neq(rill_tensor_data(y1), rill_tensor_data(y2));
  check_y(x1, y1);
  check_y(x2, y2);
  rill_tensor_destroy(y1);
  rill_tensor_destroy(y2);
  rill_tensor_destroy(x1);
  rill_tensor_destroy(x2);
  teardown(&f);
}

Test(exec, batch_size_may_change_between_runs) {
  fixture f = setup();
  for (int64_t rows = 1; rows <= 7; rows += 3) {
    rill_tensor *x = make_x(rows, (float)rows), *y = NULL;
    OK(run_xy(&f, x, "y", &y));
    check_y(x, y);
    rill_tensor_destroy(y);
    rill_tensor_destroy(x);
  }
  cr_assert_eq(rill_executor_plan_builds(f.exe), 1);
  teardown(&f);
}

static int deleted;
static void count_delete(void *data, void *ctx) {
  (void)ctx;
  deleted++;
  free(data);
}

Test(exec, feeds_are_borrowed_without_copy) {
  fixture f = setup();
  float *data = malloc(2 * IN * sizeof *data);
  for (int i = 0; i < 2 * IN; i++) data[i] = (float)i - 3.0f;
  rill_tensor *x = NULL, *y = NULL, *xo = NULL;
  const int64_t d[] = {2, IN};
  deleted = 0;
  OK(rill_tensor_create_from_data(RILL_DTYPE_FP32, d, 2, data, 2 * IN * sizeof *data,
                                  count_delete, NULL, &x));
  const char *fetch[] = {"y", "x"};
  rill_tensor *outs[2];
  OK(rill_executor_run(f.exe, f.prog, f.scope, feed_x, &x, 1, fetch, 2, outs));
  y = outs[0];
  xo = outs[1];
  cr_assert_eq(rill_tensor_data(xo), (void *)data, "the fed variable shares the caller's buffer");
  check_y(x, y);
  rill_tensor_destroy(x);
  rill_tensor_destroy(xo);
  cr_assert_eq(deleted, 1, "the executor keeps no reference to fed data after the run");
  rill_tensor_destroy(y);
  teardown(&f);
}

static void expect_error(rill_status *st, rill_code code, const char *needle) {
  cr_assert_not_null(st, "expected an error mentioning %s", needle);
  cr_assert_eq(rill_status_code(st), code, "code %s: %s", rill_code_name(rill_status_code(st)),
               rill_status_message(st));
  cr_assert(strstr(rill_status_message(st), needle), "'%s' does not mention %s",
            rill_status_message(st), needle);
  rill_status_destroy(st);
}

Test(exec, missing_feed_names_variable) {
  fixture f = setup();
  rill_tensor *y = (rill_tensor *)0x1;
  const char *fetch = "y";
  rill_status *st = rill_executor_run(f.exe, f.prog, f.scope, NULL, NULL, 0, &fetch, 1, &y);
  cr_assert_eq(y, (rill_tensor *)0x1, "outputs untouched on error");
  cr_assert(strstr(rill_status_message(st), "op #2 'mul'"), "%s", rill_status_message(st));
  expect_error(st, RILL_FAILED_PRECONDITION, "'x'");
  teardown(&f);
}

Test(exec, unknown_feed_and_fetch_are_named) {
  fixture f = setup();
  rill_tensor *x = make_x(1, 0), *y = NULL;
  const char *bad_feed[] = {"nope"};
  const char *fetch = "y";
  expect_error(rill_executor_run(f.exe, f.prog, f.scope, bad_feed, &x, 1, &fetch, 1, &y),
               RILL_INVALID_ARGUMENT, "nope");
  expect_error(run_xy(&f, x, "missing_var", &y), RILL_NOT_FOUND, "missing_var");
  cr_assert_eq(rill_executor_cached_plans(f.exe), 0, "failed prepares are not cached");
  rill_tensor_destroy(x);
  teardown(&f);
}

Test(exec, wrong_feed_dtype_or_shape_names_variable) {
  fixture f = setup();
  rill_tensor *y = NULL, *xi = NULL, *xs = NULL, *xr = NULL;
  const int64_t d[] = {2, IN}, ds[] = {2, IN + 1}, dr[] = {IN};
  OK(rill_tensor_create(RILL_DTYPE_INT32, d, 2, &xi));
  OK(rill_tensor_create(RILL_DTYPE_FP32, ds, 2, &xs));
  OK(rill_tensor_create(RILL_DTYPE_FP32, dr, 1, &xr));
  expect_error(run_xy(&f, xi, "y", &y), RILL_INVALID_ARGUMENT, "'x': dtype int32");
  /* x does not ask for its feeds' shapes to be checked (need_check_feed, as Paddle's
   * layers.data): the op that cannot take the shape says so */
  expect_error(run_xy(&f, xs, "y", &y), RILL_INVALID_ARGUMENT, "op 'mul': input X (x) of shape [2, 5]");
  expect_error(run_xy(&f, xr, "y", &y), RILL_INVALID_ARGUMENT, "input X (x) has shape [4]");
  /* with need_check_feed (fluid.data), the feed must match the declaration */
  OK(rill_var_set_need_check_feed(f.prog, 0, "x", true));
  expect_error(run_xy(&f, xs, "y", &y), RILL_INVALID_ARGUMENT, "feed 'x': shape [2, 5] does not match the variable's [-1, 4]");
  expect_error(run_xy(&f, xr, "y", &y), RILL_INVALID_ARGUMENT, "feed 'x': shape [4]");
  /* A good run afterwards still works. */
  rill_tensor *x = make_x(2, 0.5f);
  OK(run_xy(&f, x, "y", &y));
  check_y(x, y);
  rill_tensor_destroy(y);
  rill_tensor_destroy(x);
  rill_tensor_destroy(xi);
  rill_tensor_destroy(xs);
  rill_tensor_destroy(xr);
  teardown(&f);
}

Test(exec, op_without_kernel_names_op_and_dtype) {
  rill_program *p;
  rill_scope *s;
  rill_executor *e;
  OK(rill_program_create(&p));
  const int64_t d[] = {3};
  OK(rill_block_add_var(p, 0, "a", RILL_VAR_LOD_TENSOR, RILL_DTYPE_INT32, d, 1, 0, false));
  OK(rill_block_add_var(p, 0, "b", RILL_VAR_LOD_TENSOR, RILL_DTYPE_INT32, d, 1, 0, false));
  OK(add_op(p, "relu", "X", "a", NULL, NULL, "b"));
  OK(rill_scope_create(NULL, &s));
  OK(new_exec(&e));
  rill_tensor *a, *b = NULL;
  OK(rill_tensor_create(RILL_DTYPE_INT32, d, 1, &a));
  const char *feed = "a", *fetch = "b";
  rill_status *st = rill_executor_run(e, p, s, &feed, &a, 1, &fetch, 1, &b);
  cr_assert(strstr(rill_status_message(st), "op #0 'relu'"), "%s", rill_status_message(st));
  expect_error(st, RILL_UNIMPLEMENTED, "int32");
  rill_tensor_destroy(a);
  rill_executor_destroy(e);
  rill_scope_destroy(s);
  rill_program_destroy(p);
}

Test(exec, unknown_ops_are_all_named) {
  fixture f = setup();
  OK(add_op(f.prog, "no_such_op", "X", "y", NULL, NULL, "loss"));
  OK(add_op(f.prog, "another_missing_op", "X", "y", NULL, NULL, "loss"));
  rill_tensor *x = make_x(1, 0), *y = NULL;
  rill_status *st = run_xy(&f, x, "y", &y);
  cr_assert(strstr(rill_status_message(st), "another_missing_op"), "%s", rill_status_message(st));
  cr_assert(strstr(rill_status_message(st), "op #9"), "%s", rill_status_message(st));
  expect_error(st, RILL_UNIMPLEMENTED, "no_such_op");
  st = rill_executor_prepare(f.exe, f.prog, feed_x, 1, NULL, 0);
  expect_error(st, RILL_UNIMPLEMENTED, "no_such_op");
  rill_tensor_destroy(x);
  teardown(&f);
}

Test(exec, runtime_shape_error_names_op) {
  rill_program *p;
  rill_scope *s;
  rill_executor *e;
  OK(rill_program_create(&p));
  const int64_t d[] = {-1, -1};
  OK(rill_block_add_var(p, 0, "a", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, d, 2, 0, false));
  OK(rill_block_add_var(p, 0, "b", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, d, 2, 0, false));
  OK(rill_block_add_var(p, 0, "c", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, d, 2, 0, false));
  OK(add_op(p, "relu", "X", "a", NULL, NULL, "c"));
  OK(add_op(p, "mul", "X", "c", "Y", "b", "c"));
  OK(rill_scope_create(NULL, &s));
  OK(new_exec(&e));
  rill_tensor *t[2], *out = NULL;
  const int64_t da[] = {2, 3}, db[] = {4, 2};
  OK(rill_tensor_create(RILL_DTYPE_FP32, da, 2, &t[0]));
  OK(rill_tensor_create(RILL_DTYPE_FP32, db, 2, &t[1]));
  const char *feeds[] = {"a", "b"}, *fetch = "c";
  rill_status *st = rill_executor_run(e, p, s, feeds, t, 2, &fetch, 1, &out);
  expect_error(st, RILL_INVALID_ARGUMENT, "block 0, op #1 'mul'");
  rill_tensor_destroy(t[0]);
  rill_tensor_destroy(t[1]);
  rill_executor_destroy(e);
  rill_scope_destroy(s);
  rill_program_destroy(p);
}

Test(exec, in_place_op_reads_valid_data) {
  /* b = a*2; b = b*3 (in place); fetching b after each run must not change older
   * fetches, and the in-place op must see the data it was given. */
  rill_program *p;
  rill_scope *s;
  rill_executor *e;
  OK(rill_program_create(&p));
  const int64_t d[] = {4};
  OK(rill_block_add_var(p, 0, "a", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, d, 1, 0, false));
  OK(rill_block_add_var(p, 0, "b", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, d, 1, 0, false));
  for (int k = 0; k < 2; k++) {
    rill_op_builder *b;
    const char *in = k ? "b" : "a", *out = "b";
    OK(rill_op_builder_create("scale", &b));
    OK(rill_op_builder_input(b, "X", &in, 1));
    OK(rill_op_builder_output(b, "Out", &out, 1));
    OK(rill_op_builder_attr_float(b, "scale", k ? 3.0f : 2.0f));
    OK(rill_op_builder_append(b, p, 0));
    rill_op_builder_destroy(b);
  }
  OK(rill_scope_create(NULL, &s));
  OK(new_exec(&e));
  rill_tensor *a, *o1 = NULL, *o2 = NULL;
  OK(rill_tensor_create(RILL_DTYPE_FP32, d, 1, &a));
  float *pa = rill_tensor_data(a);
  for (int i = 0; i < 4; i++) pa[i] = (float)i + 1;
  const char *feed = "a", *fetch = "b";
  OK(rill_executor_run(e, p, s, &feed, &a, 1, &fetch, 1, &o1));
  pa[0] = 10;
  OK(rill_executor_run(e, p, s, &feed, &a, 1, &fetch, 1, &o2));
  cr_assert_float_eq(((float *)rill_tensor_data(o1))[0], 6.0f, 0);
  cr_assert_float_eq(((float *)rill_tensor_data(o1))[3], 24.0f, 0);
  cr_assert_float_eq(((float *)rill_tensor_data(o2))[0], 60.0f, 0);
  cr_assert_float_eq(pa[1], 2.0f, 0, "the fed tensor is never written");
  rill_tensor_destroy(o1);
  rill_tensor_destroy(o2);
  rill_tensor_destroy(a);
  rill_executor_destroy(e);
  rill_scope_destroy(s);
  rill_program_destroy(p);
}

static rill_status *add_feed_fetch(rill_program *p, const char *type, const char *x,
                                   const char *out, int col) {
  rill_op_builder *b;
  RILL_TRY(rill_op_builder_create(type, &b));
  rill_status *st = rill_op_builder_input(b, "X", &x, 1);
  if (!st) st = rill_op_builder_output(b, "Out", &out, 1);
  if (!st) st = rill_op_builder_attr_int(b, "col", col);
  if (!st) st = rill_op_builder_insert(b, p, 0, strcmp(type, "feed") == 0 ? 0 : rill_block_num_ops(p, 0));
  rill_op_builder_destroy(b);
  return st;
}

Test(exec, feed_and_fetch_ops_route_by_col) {
  fixture f = setup();
  OK(rill_block_add_var(f.prog, 0, "feed", RILL_VAR_FEED_MINIBATCH, RILL_DTYPE_FP32, NULL, 0, 0, true));
  OK(rill_block_add_var(f.prog, 0, "fetch", RILL_VAR_FETCH_LIST, RILL_DTYPE_FP32, NULL, 0, 0, true));
  OK(add_feed_fetch(f.prog, "feed", "feed", "x", 0));
  OK(add_feed_fetch(f.prog, "fetch", "loss", "fetch", 1));
  OK(add_feed_fetch(f.prog, "fetch", "y", "fetch", 0));
  rill_tensor *x = make_x(3, 0.9f), *out[2] = {NULL, NULL};
  const char *fetch[] = {"y", "loss"};
  OK(rill_executor_run(f.exe, f.prog, f.scope, feed_x, &x, 1, fetch, 2, out));
  check_y(x, out[0]);
  cr_assert_eq(rill_tensor_numel(out[1]), 1);
  /* The feed op's variable must be fed. */
  expect_error(rill_executor_run(f.exe, f.prog, f.scope, NULL, NULL, 0, fetch, 2, out),
               RILL_INVALID_ARGUMENT, "missing feed 'x'");
  rill_tensor_destroy(out[0]);
  rill_tensor_destroy(out[1]);
  rill_tensor_destroy(x);
  teardown(&f);
}

Test(exec, plan_cache_is_bounded) {
  fixture f = setup();
  OK(rill_executor_set_plan_cache_size(f.exe, 2));
  rill_tensor *x = make_x(1, 0), *o = NULL;
  const char *names[] = {"y", "loss", "h"};
  for (int i = 0; i < 3; i++) {
    OK(run_xy(&f, x, names[i], &o));
    rill_tensor_destroy(o);
  }
  cr_assert_eq(rill_executor_cached_plans(f.exe), 2);
  OK(run_xy(&f, x, "h", &o)); /* most recent: a hit */
  rill_tensor_destroy(o);
  cr_assert_eq(rill_executor_plan_builds(f.exe), 3);
  OK(run_xy(&f, x, "y", &o)); /* evicted: rebuilt */
  rill_tensor_destroy(o);
  cr_assert_eq(rill_executor_plan_builds(f.exe), 4);
  rill_tensor_destroy(x);
  teardown(&f);
}

Test(exec, one_plan_serves_two_scopes) {
  fixture f = setup();
  rill_scope *s2;
  OK(rill_scope_create(NULL, &s2));
  OK(set_params(s2));
  rill_tensor *x = make_x(2, 0.2f), *y = NULL;
  OK(run_xy(&f, x, "y", &y));
  rill_tensor_destroy(y);
  rill_scope_destroy(f.scope);
  f.scope = s2;
  OK(run_xy(&f, x, "y", &y));
  check_y(x, y);
  cr_assert_eq(rill_executor_plan_builds(f.exe), 1);
  rill_tensor_destroy(y);
  rill_tensor_destroy(x);
  teardown(&f);
}

static rill_status *alloc_round(void) {
  rill_program *p = NULL;
  rill_scope *s = NULL;
  rill_executor *e = NULL;
  rill_tensor *x = NULL, *out[2] = {NULL, NULL};
  const int64_t d[] = {2, IN};
  const char *fetch[] = {"y", "loss"};
  rill_status *st = build_mlp(&p);
  if (!st) st = rill_scope_create(NULL, &s);
  if (!st) st = set_params(s);
  if (!st) st = rill_tensor_create(RILL_DTYPE_FP32, d, 2, &x);
  if (!st) {
    memset(rill_tensor_data(x), 0, 2 * IN * sizeof(float));
    st = new_exec(&e);
  }
  for (int run = 0; run < 2 && !st; run++) {
    st = rill_executor_run(e, p, s, feed_x, &x, 1, fetch, 2, out);
    if (!st) {
      cr_assert_float_eq(*(float *)rill_tensor_data(out[1]), 0.5f, 1e-6);
      rill_tensor_destroy(out[0]);
      rill_tensor_destroy(out[1]);
    }
  }
  rill_tensor_destroy(x);
  rill_executor_destroy(e);
  rill_scope_destroy(s);
  rill_program_destroy(p);
  return st;
}

static rill_status *alloc_round_op(void *ctx) {
  (void)ctx;
  return alloc_round();
}

Test(exec, failing_each_allocation_leaks_nothing) {
  rill_status *st = rill_registry_init();
  cr_assert_null(st);
  char why[512] = "";
  /* Recovery is allowed: the program's name index degrades to a scan when it cannot be
   * built; every failure in the executor itself must surface as an error. */
  long runs = fail_alloc_sweep(alloc_round_op, NULL, NULL, 100000, true, why, sizeof why);
  cr_assert_geq(runs, 0, "%s", why);
  cr_assert_gt(runs, 100, "the round should take many allocations (%ld)", runs);
}

Test(exec, program_without_feeds_or_fetches_fills_the_scope) {
  rill_program *p;
  rill_scope *s;
  rill_executor *e;
  OK(rill_program_create(&p));
  const int64_t d[] = {2, 2};
  OK(rill_block_add_var(p, 0, "w", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, d, 2, 0, true));
  OK(add_fill(p, "w", d, 2, 7.0f));
  OK(rill_scope_create(NULL, &s));
  OK(new_exec(&e));
  OK(rill_executor_run(e, p, s, NULL, NULL, 0, NULL, 0, NULL));
  rill_tensor *w;
  OK(rill_scope_get_tensor(s, "w", &w));
  cr_assert_eq(rill_tensor_numel(w), 4);
  cr_assert_float_eq(((float *)rill_tensor_data(w))[3], 7.0f, 0);
  rill_tensor_destroy(w);
  rill_executor_destroy(e);
  rill_scope_destroy(s);
  rill_program_destroy(p);
}

Test(exec, rejects_null_arguments) {
  fixture f = setup();
  rill_tensor *x = make_x(1, 0), *y = NULL;
  const char *fetch = "y";
  expect_error(rill_executor_run(f.exe, f.prog, NULL, feed_x, &x, 1, &fetch, 1, &y),
               RILL_INVALID_ARGUMENT, "scope");
  const char *null_name[] = {NULL};
  expect_error(rill_executor_run(f.exe, f.prog, f.scope, null_name, &x, 1, &fetch, 1, &y),
               RILL_INVALID_ARGUMENT, "feed name 0");
  rill_tensor *null_feed = NULL;
  expect_error(rill_executor_run(f.exe, f.prog, f.scope, feed_x, &null_feed, 1, &fetch, 1, &y),
               RILL_INVALID_ARGUMENT, "'x'");
  rill_executor_options bad = RILL_EXECUTOR_OPTIONS_INIT;
  bad.place.device = RILL_DEVICE_CUDA;
  rill_executor *e2 = NULL;
  expect_error(rill_executor_create(&bad, &e2), RILL_UNIMPLEMENTED,
               "place cuda:0 has no registered backend (registered backends: cpu)");
  rill_tensor_destroy(x);
  teardown(&f);
}

Test(exec, steady_state_run_allocates_only_output_handles) {
  fixture f = setup();
  rill_tensor *x = make_x(4, 0.4f), *out[2] = {NULL, NULL};
  const char *fetch[] = {"y", "loss"};
  for (int i = 0; i < 2; i++) {
    OK(rill_executor_run(f.exe, f.prog, f.scope, feed_x, &x, 1, fetch, 2, out));
    rill_tensor_destroy(out[0]);
    rill_tensor_destroy(out[1]);
  }
  fail_alloc_install();
  rill_status *st = rill_executor_run(f.exe, f.prog, f.scope, feed_x, &x, 1, fetch, 2, out);
  long calls = (long)fail_alloc_calls();
  fail_alloc_uninstall();
  cr_assert_null(st);
  cr_assert_eq(calls, 2, "a warm run allocates one handle per fetch, not %ld blocks", calls);
  check_y(x, out[0]);
  rill_tensor_destroy(out[0]);
  rill_tensor_destroy(out[1]);
  rill_tensor_destroy(x);
  teardown(&f);
}

Test(exec, lod_follows_lod_from_and_never_goes_stale) {
  rill_program *p;
  rill_scope *s;
  rill_executor *e;
  OK(rill_program_create(&p));
  const int64_t d[] = {-1, 2};
  OK(rill_block_add_var(p, 0, "a", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, d, 2, 1, false));
  OK(rill_block_add_var(p, 0, "b", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, d, 2, 1, false));
  OK(add_op(p, "relu", "X", "a", NULL, NULL, "b"));
  OK(rill_scope_create(NULL, &s));
  OK(new_exec(&e));
  const int64_t da[] = {5, 2};
  rill_tensor *a, *b = NULL;
  OK(rill_tensor_create(RILL_DTYPE_FP32, da, 2, &a));
  memset(rill_tensor_data(a), 0, 10 * sizeof(float));
  const uint64_t level[] = {0, 2, 5};
  const uint64_t *levels[] = {level};
  const size_t counts[] = {3};
  OK(rill_tensor_set_lod(a, 1, levels, counts));
  const char *feed = "a", *fetch = "b";
  OK(rill_executor_run(e, p, s, &feed, &a, 1, &fetch, 1, &b));
  size_t n = 0;
  cr_assert_eq(rill_tensor_lod_levels(b), 1);
  const uint64_t *got = rill_tensor_lod(b, 0, &n);
  cr_assert_eq(n, 3);
  cr_assert_eq(got[1], 2);
  cr_assert_eq(got[2], 5);
  rill_tensor_destroy(b);
  /* The same plan with a tensor without LoD: the output has none either. */
  rill_tensor *a2;
  OK(rill_tensor_create(RILL_DTYPE_FP32, da, 2, &a2));
  memset(rill_tensor_data(a2), 0, 10 * sizeof(float));
  OK(rill_executor_run(e, p, s, &feed, &a2, 1, &fetch, 1, &b));
  cr_assert_eq(rill_tensor_lod_levels(b), 0);
  rill_tensor_destroy(b);
  rill_tensor_destroy(a);
  rill_tensor_destroy(a2);
  rill_executor_destroy(e);
  rill_scope_destroy(s);
  rill_program_destroy(p);
}
