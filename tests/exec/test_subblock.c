/* Sub-blocks: conditional_block runs the right branch in both schedules; a sub-block
 * reads and writes its parents' variables where they live, and its own variables stay
 * in the step scope; nested blocks; sub-block plans are built once and kept apart from
 * the plan cache; the run_block service's errors (bad index, block 0, recursion, no
 * program, a block already running) and two blocks run at once on two threads. */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "framework/exec/executor.h"
#include "framework/program/program.h"
#include "rill.h"
#include "support/subblock_ops.h"
#include "support/subblock_prog.h"
#include "threads/test_ops.h"

#define OK(expr)                                                                     \
  do {                                                                               \
    rill_status *st_ = (expr);                                                       \
    cr_assert_null(st_, "%s: %s", #expr, rill_status_message(st_));                  \
  } while (0)

static const int64_t D23[] = {2, 3}, D1[] = {1};

static void bvar(rill_program *p, const char *name) {
  OK(rill_block_add_var(p, 0, name, RILL_VAR_LOD_TENSOR, RILL_DTYPE_BOOL, D1, 1, 0, false));
}

static int32_t new_block(rill_program *p, int32_t parent) {
  int32_t idx = -1;
  OK(rill_program_append_block(p, parent, &idx));
  return idx;
}

static void cond_op(rill_program *p, int32_t block, const char *cond, const char *const *in,
                    size_t nin, const char *const *out, size_t nout, int32_t sub, bool scalar) {
  rill_op_builder *b;
  OK(rill_op_builder_create("conditional_block", &b));
  if (cond) OK(rill_op_builder_input(b, "Cond", &cond, 1));
  if (nin) OK(rill_op_builder_input(b, "Input", in, nin));
  if (nout) OK(rill_op_builder_output(b, "Out", out, nout));
  OK(rill_op_builder_attr_block(b, "sub_block", sub));
  OK(rill_op_builder_attr_bool(b, "is_scalar_condition", scalar));
  OK(rill_op_builder_append(b, p, block));
  rill_op_builder_destroy(b);
}

static rill_tensor *flag(bool on) {
  rill_tensor *t;
  OK(rill_tensor_create(RILL_DTYPE_BOOL, D1, 1, &t));
  *(bool *)rill_tensor_data(t) = on;
  return t;
}

static void set_tensor(rill_scope *s, const char *name, rill_tensor *t) {
  OK(rill_scope_set_tensor(s, name, t));
  rill_tensor_destroy(t);
}

static float scope_value(rill_scope *s, const char *name, int i) {
  rill_tensor *t = NULL;
  OK(rill_scope_get_tensor(s, name, &t));
  float v = ((float *)rill_tensor_data(t))[i];
  rill_tensor_destroy(t);
  return v;
}

/* Block 0: y = c ? 2 * (x + w) : -x (two conditional_blocks, on c and on nc), z = y;
 * the true branch also counts its runs in the persistable `counter`. Block 1's `t` is
 * its own. */
static rill_program *branches(void) {
  rill_program *p;
  OK(rill_program_create(&p));
  sbp_tvar(p, 0, "x", false);
  sbp_tvar(p, 0, "w", true);
  sbp_tvar(p, 0, "y", false);
  sbp_tvar(p, 0, "z", false);
  OK(rill_block_add_var(p, 0, "counter", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, D1, 1, 0, true));
  bvar(p, "c");
  bvar(p, "nc");
  int32_t b1 = new_block(p, 0), b2 = new_block(p, 0);
  sbp_tvar(p, b1, "t", false);
  sbp_op(p, b1, "elementwise_add", "x", "w", "t");
  sbp_scale(p, b1, "t", "y", 2.0f, 0.0f);
  sbp_scale(p, b1, "counter", "counter", 1.0f, 1.0f);
  sbp_scale(p, b2, "x", "y", -1.0f, 0.0f);
  const char *in1[] = {"x", "w", "counter"}, *out1[] = {"y", "counter"};
  cond_op(p, 0, "c", in1, 3, out1, 2, b1, true);
  const char *in2[] = {"x"}, *out2[] = {"y"};
  cond_op(p, 0, "nc", in2, 1, out2, 1, b2, true);
  sbp_scale(p, 0, "y", "z", 1.0f, 0.0f);
  return p;
}

static void check_branches(rill_schedule sched) {
  rill_program *p = branches();
  rill_executor *e = sbp_executor(sched);
  rill_scope *s;
  OK(rill_scope_create(NULL, &s));
  set_tensor(s, "w", sbp_ramp(10.0f));
  rill_tensor *counter;
  OK(rill_tensor_create(RILL_DTYPE_FP32, D1, 1, &counter));
  *(float *)rill_tensor_data(counter) = 0.0f;
  set_tensor(s, "counter", counter);
  rill_tensor *x = sbp_ramp(1.0f);
  const char *feeds[] = {"x", "c", "nc"}, *fetches[] = {"z", "y"};
  for (int run = 0; run < 4; run++) {
    bool on = run % 2 == 0;
    rill_tensor *in[] = {x, flag(on), flag(!on)}, *out[2] = {NULL, NULL};
    OK(rill_executor_run(e, p, s, feeds, in, 3, fetches, 2, out));
    const float *z = rill_tensor_data(out[0]), *y = rill_tensor_data(out[1]);
    for (int i = 0; i < 6; i++) {
      float xv = 1.0f + (float)i, want = on ? 2.0f * (xv + 10.0f + (float)i) : -xv;
      cr_assert_eq(z[i], want, "run %d, z[%d] = %g, want %g", run, i, z[i], want);
      cr_assert_eq(y[i], want, "run %d, y[%d] = %g, want %g", run, i, y[i], want);
    }
    cr_assert_eq(scope_value(s, "counter", 0), (float)(run / 2 + 1), "the true branch ran %d times",
                 run / 2 + 1);
    rill_tensor_destroy(in[1]);
    rill_tensor_destroy(in[2]);
    rill_tensor_destroy(out[0]);
    rill_tensor_destroy(out[1]);
  }
  /* The sub-block's own variable stays in the step scope. */
  cr_assert_null(rill_scope_find(s, "t"), "block 1's t leaked into the caller's scope");
  rill_plan *plan;
  OK(rill_exec_prepare(e, p, feeds, 3, fetches, 2, &plan));
  cr_assert(!rill_plan_holds(plan, "t"), "block 1's t leaked into block 0's plan");
  /* One plan per sub-block, built on first use, apart from the plan cache. */
  cr_assert_eq(rill_exec_subplan_builds(e), 2);
  cr_assert_eq(rill_exec_subblock_runs(e), 4);
  cr_assert_eq(rill_executor_cached_plans(e), 1);
  cr_assert_eq(rill_executor_plan_builds(e), 1);
  rill_tensor_destroy(x);
  rill_scope_destroy(s);
  rill_executor_destroy(e);
  rill_program_destroy(p);
}

Test(subblock, conditional_block_branches_sequential) { check_branches(RILL_SCHEDULE_SEQUENTIAL); }
Test(subblock, conditional_block_branches_parallel) { check_branches(RILL_SCHEDULE_PARALLEL); }

/* A new revision of the program gets new sub-block plans. */
/* An ancestor's persistable variable that no scope holds yet and that no op of block 0
 * names (a pserver's learning rate, written by its LR block and read by its optimize
 * blocks) is made in the outermost scope by the sub-block that writes it: it outlives
 * the run of that sub-block, where a temporary of block 0 would not. */
static void check_outer_persistable(rill_schedule sched) {
  rill_program *p;
  OK(rill_program_create(&p));
  sbp_tvar(p, 0, "x", false);
  sbp_tvar(p, 0, "z", false);
  sbp_tvar(p, 0, "rate", true);
  bvar(p, "c");
  int32_t b1 = new_block(p, 0), b2 = new_block(p, 0);
  sbp_scale(p, b1, "x", "rate", 3.0f, 0.0f);
  sbp_scale(p, b2, "rate", "z", 1.0f, 1.0f);
  const char *in[] = {"x"};
  cond_op(p, 0, "c", in, 1, NULL, 0, b1, true);
  const char *out2[] = {"z"};
  cond_op(p, 0, "c", NULL, 0, out2, 1, b2, true);
  rill_executor *e = sbp_executor(sched);
  rill_scope *s;
  OK(rill_scope_create(NULL, &s));
  rill_tensor *x = sbp_ramp(1.0f), *on = flag(true), *zt = NULL;
  const char *feeds[] = {"x", "c"}, *fetches[] = {"z"};
  rill_tensor *ins[] = {x, on};
  OK(rill_executor_run(e, p, s, feeds, ins, 2, fetches, 1, &zt));
  const float *z = rill_tensor_data(zt);
  for (int i = 0; i < 6; i++) cr_assert_eq(z[i], 3.0f * (1.0f + (float)i) + 1.0f, "z[%d] = %g", i, z[i]);
  cr_assert_not_null(rill_scope_find_local(s, "rate"), "the rate is not in the caller's scope");
  cr_assert_eq(scope_value(s, "rate", 5), 18.0f);
  rill_tensor_destroy(zt);
  rill_tensor_destroy(x);
  rill_tensor_destroy(on);
  rill_scope_destroy(s);
  rill_executor_destroy(e);
  rill_program_destroy(p);
}

Test(subblock, outer_persistable_made_by_a_sub_block_outlives_it_sequential) {
  check_outer_persistable(RILL_SCHEDULE_SEQUENTIAL);
}
Test(subblock, outer_persistable_made_by_a_sub_block_outlives_it_parallel) {
  check_outer_persistable(RILL_SCHEDULE_PARALLEL);
}

Test(subblock, sub_plans_follow_the_program_revision) {
  rill_program *p = branches();
  rill_executor *e = sbp_executor(RILL_SCHEDULE_SEQUENTIAL);
  rill_scope *s;
  OK(rill_scope_create(NULL, &s));
  set_tensor(s, "w", sbp_ramp(0.0f));
  rill_tensor *counter;
  OK(rill_tensor_create(RILL_DTYPE_FP32, D1, 1, &counter));
  set_tensor(s, "counter", counter);
  rill_tensor *x = sbp_ramp(1.0f), *in[] = {x, flag(true), flag(false)}, *out = NULL;
  const char *feeds[] = {"x", "c", "nc"}, *fetches[] = {"z"};
  OK(rill_executor_run(e, p, s, feeds, in, 3, fetches, 1, &out));
  rill_tensor_destroy(out);
  cr_assert_eq(rill_exec_subplan_builds(e), 1);
  /* Block 1 now computes y = 2 * (x + w) + 5. */
  sbp_scale(p, 1, "y", "y", 1.0f, 5.0f);
  OK(rill_executor_run(e, p, s, feeds, in, 3, fetches, 1, &out));
  cr_assert_eq(rill_exec_subplan_builds(e), 2);
  cr_assert_eq(((float *)rill_tensor_data(out))[1], 2.0f * (2.0f + 1.0f) + 5.0f);
  rill_tensor_destroy(out);
  for (int i = 0; i < 3; i++) rill_tensor_destroy(in[i]);
  rill_scope_destroy(s);
  rill_executor_destroy(e);
  rill_program_destroy(p);
}

/* y = 0; if c1 { t = 2x; y = t; if c2 { y = t + x } }: block 2 reads block 1's t and
 * block 0's x, and writes block 0's y. */
static rill_program *nested(void) {
  rill_program *p;
  OK(rill_program_create(&p));
  sbp_tvar(p, 0, "x", false);
  sbp_tvar(p, 0, "y", false);
  bvar(p, "c1");
  bvar(p, "c2");
  int32_t b1 = new_block(p, 0), b2 = new_block(p, b1);
  sbp_tvar(p, b1, "t", false);
  sbp_scale(p, 0, "x", "y", 0.0f, 0.0f);
  const char *in1[] = {"x"}, *out1[] = {"y"};
  cond_op(p, 0, "c1", in1, 1, out1, 1, b1, true);
  sbp_scale(p, b1, "x", "t", 2.0f, 0.0f);
  sbp_scale(p, b1, "t", "y", 1.0f, 0.0f);
  const char *in2[] = {"t", "x"}, *out2[] = {"y"};
  cond_op(p, b1, "c2", in2, 2, out2, 1, b2, true);
  sbp_op(p, b2, "elementwise_add", "t", "x", "y");
  return p;
}

static void check_nested(rill_schedule sched) {
  rill_program *p = nested();
  rill_executor *e = sbp_executor(sched);
  rill_scope *s;
  OK(rill_scope_create(NULL, &s));
  rill_tensor *x = sbp_ramp(1.0f);
  const char *feeds[] = {"x", "c1", "c2"}, *fetches[] = {"y"};
  const bool cases[][2] = {{false, false}, {false, true}, {true, false}, {true, true}};
  const float factor[] = {0.0f, 0.0f, 2.0f, 3.0f};
  for (int k = 0; k < 4; k++) {
    rill_tensor *in[] = {x, flag(cases[k][0]), flag(cases[k][1])}, *out = NULL;
    OK(rill_executor_run(e, p, s, feeds, in, 3, fetches, 1, &out));
    const float *y = rill_tensor_data(out);
    for (int i = 0; i < 6; i++)
      cr_assert_eq(y[i], factor[k] * (1.0f + (float)i), "case %d, y[%d] = %g", k, i, y[i]);
    rill_tensor_destroy(in[1]);
    rill_tensor_destroy(in[2]);
    rill_tensor_destroy(out);
  }
  cr_assert_null(rill_scope_find(s, "t"));
  rill_tensor_destroy(x);
  rill_scope_destroy(s);
  rill_executor_destroy(e);
  rill_program_destroy(p);
}

Test(subblock, nested_blocks_sequential) { check_nested(RILL_SCHEDULE_SEQUENTIAL); }
Test(subblock, nested_blocks_parallel) { check_nested(RILL_SCHEDULE_PARALLEL); }

/* Without is_scalar_condition the block runs when every Input has elements. */
Test(subblock, non_scalar_condition_runs_when_inputs_are_not_empty) {
  rill_program *p;
  OK(rill_program_create(&p));
  const int64_t dyn[] = {-1, 3};
  OK(rill_block_add_var(p, 0, "e", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, dyn, 2, 0, false));
  sbp_tvar(p, 0, "x", false);
  sbp_tvar(p, 0, "y", false);
  bvar(p, "c");
  int32_t b1 = new_block(p, 0);
  sbp_scale(p, 0, "x", "y", 1.0f, 0.0f);
  const char *in[] = {"e"}, *out[] = {"y"};
  cond_op(p, 0, "c", in, 1, out, 1, b1, false);
  sbp_scale(p, b1, "x", "y", 3.0f, 0.0f);
  rill_executor *e = sbp_executor(RILL_SCHEDULE_SEQUENTIAL);
  rill_scope *s;
  OK(rill_scope_create(NULL, &s));
  const char *feeds[] = {"x", "c", "e"}, *fetches[] = {"y"};
  for (int k = 0; k < 2; k++) {
    const int64_t de[] = {k, 3};
    rill_tensor *et;
    OK(rill_tensor_create(RILL_DTYPE_FP32, de, 2, &et));
    rill_tensor *x = sbp_ramp(1.0f), *c = flag(false), *ins[] = {x, c, et}, *o = NULL;
    OK(rill_executor_run(e, p, s, feeds, ins, 3, fetches, 1, &o));
    cr_assert_eq(((float *)rill_tensor_data(o))[2], k ? 9.0f : 3.0f, "Input with %d rows", k);
    rill_tensor_destroy(o);
    rill_tensor_destroy(x);
    rill_tensor_destroy(c);
    rill_tensor_destroy(et);
  }
  rill_scope_destroy(s);
  rill_executor_destroy(e);
  rill_program_destroy(p);
}

/* Runs `p` (feeding c = true) and returns the status. */
static rill_status *run_flagged(rill_program *p) {
  rill_executor *e = sbp_executor(RILL_SCHEDULE_SEQUENTIAL);
  rill_scope *s;
  OK(rill_scope_create(NULL, &s));
  rill_tensor *x = sbp_ramp(1.0f), *c = flag(true), *in[] = {x, c}, *out = NULL;
  const char *feeds[] = {"x", "c"}, *fetches[] = {"y"};
  rill_status *st = rill_executor_run(e, p, s, feeds, in, 2, fetches, 1, &out);
  if (!st) rill_tensor_destroy(out);
  rill_tensor_destroy(x);
  rill_tensor_destroy(c);
  rill_scope_destroy(s);
  rill_executor_destroy(e);
  return st;
}

/* y = x, then test_run_block runs block `target` (from block 1 when from_block1, which
 * block 0 enters through conditional_block on c). */
static rill_program *one_run(int32_t target, bool from_block1) {
  cr_assert(subblk_register());
  rill_program *p;
  OK(rill_program_create(&p));
  sbp_tvar(p, 0, "x", false);
  sbp_tvar(p, 0, "y", false);
  bvar(p, "c");
  int32_t b1 = new_block(p, 0);
  sbp_scale(p, 0, "x", "y", 1.0f, 0.0f);
  const char *in[] = {"x"}, *out[] = {"y"};
  if (from_block1) cond_op(p, 0, "c", in, 1, out, 1, b1, true);
  else sbp_scale(p, b1, "x", "y", 2.0f, 0.0f);
  rill_op_builder *b;
  OK(rill_op_builder_create("test_run_block", &b));
  OK(rill_op_builder_input(b, "X", in, 1));
  OK(rill_op_builder_output(b, "Out", out, 1));
  OK(rill_op_builder_attr_int(b, "block", target));
  OK(rill_op_builder_append(b, p, from_block1 ? b1 : 0));
  rill_op_builder_destroy(b);
  return p;
}

static void expect_error(rill_status *st, rill_code code, const char *part) {
  cr_assert_not_null(st, "the run succeeded; want an error with '%s'", part);
  const char *msg = rill_status_message(st);
  cr_assert_eq(rill_status_code(st), code, "code %d: %s", (int)rill_status_code(st), msg);
  cr_assert(strstr(msg, part), "message lacks '%s': %s", part, msg);
  rill_status_destroy(st);
}

Test(subblock, bad_block_index_is_an_error) {
  rill_program *p = one_run(7, false);
  expect_error(run_flagged(p), RILL_INVALID_ARGUMENT, "block 7 does not exist");
  rill_program_destroy(p);
  p = one_run(-2, false);
  expect_error(run_flagged(p), RILL_INVALID_ARGUMENT, "block -2 does not exist");
  rill_program_destroy(p);
}

Test(subblock, block_zero_is_an_error) {
  rill_program *p = one_run(0, false);
  expect_error(run_flagged(p), RILL_INVALID_ARGUMENT, "block 0 is the main block");
  rill_program_destroy(p);
}

Test(subblock, recursion_is_an_error) {
  rill_program *p = one_run(1, true);
  rill_status *st = run_flagged(p);
  cr_assert_not_null(st);
  const char *msg = rill_status_message(st);
  cr_assert(strstr(msg, "block 0, op #1 'conditional_block'") &&
                strstr(msg, "block 1, op #0 'test_run_block'"),
            "the message names neither op: %s", msg);
  expect_error(st, RILL_FAILED_PRECONDITION, "would run inside itself");
  rill_program_destroy(p);
}

Test(subblock, condition_must_be_one_bool) {
  rill_program *p;
  OK(rill_program_create(&p));
  sbp_tvar(p, 0, "x", false);
  sbp_tvar(p, 0, "y", false);
  OK(rill_block_add_var(p, 0, "c", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, D23, 2, 0, false));
  int32_t b1 = new_block(p, 0);
  sbp_scale(p, b1, "x", "y", 2.0f, 0.0f);
  const char *in[] = {"x"}, *out[] = {"y"};
  cond_op(p, 0, "c", in, 1, out, 1, b1, true);
  rill_executor *e = sbp_executor(RILL_SCHEDULE_SEQUENTIAL);
  rill_scope *s;
  OK(rill_scope_create(NULL, &s));
  rill_tensor *x = sbp_ramp(1.0f), *c = sbp_ramp(0.0f), *ins[] = {x, c}, *o = NULL;
  const char *feeds[] = {"x", "c"}, *fetches[] = {"y"};
  expect_error(rill_executor_run(e, p, s, feeds, ins, 2, fetches, 1, &o), RILL_INVALID_ARGUMENT,
               "must be a bool tensor of one element");
  rill_tensor_destroy(x);
  rill_tensor_destroy(c);
  rill_scope_destroy(s);
  rill_executor_destroy(e);
  rill_program_destroy(p);
}

/* A plan run without its program (rill_exec_run_plan) cannot run sub-blocks. */
Test(subblock, plan_run_without_program_is_an_error) {
  rill_program *p;
  OK(rill_program_create(&p));
  sbp_tvar(p, 0, "x", false);
  sbp_tvar(p, 0, "y", false);
  bvar(p, "c");
  int32_t b1 = new_block(p, 0);
  sbp_scale(p, 0, "x", "y", 1.0f, 0.0f);
  sbp_scale(p, b1, "x", "y", 2.0f, 0.0f);
  const char *cin[] = {"x"}, *cout[] = {"y"};
  cond_op(p, 0, "c", cin, 1, cout, 1, b1, true);
  rill_executor *e = sbp_executor(RILL_SCHEDULE_SEQUENTIAL);
  rill_scope *s;
  OK(rill_scope_create(NULL, &s));
  rill_tensor *x = sbp_ramp(1.0f), *c = flag(true), *in[] = {x, c}, *out = NULL;
  const char *feeds[] = {"x", "c"}, *fetches[] = {"y"};
  rill_plan *plan;
  OK(rill_exec_prepare(e, p, feeds, 2, fetches, 1, &plan));
  expect_error(rill_exec_run_plan(e, plan, s, in, &out), RILL_FAILED_PRECONDITION,
               "no program is being run");
  /* Through the executor, the same plan runs the block. */
  OK(rill_exec_run_prepared(e, p, plan, s, in, &out));
  cr_assert_eq(((float *)rill_tensor_data(out))[3], 8.0f);
  rill_tensor_destroy(out);
  rill_tensor_destroy(x);
  rill_tensor_destroy(c);
  rill_scope_destroy(s);
  rill_executor_destroy(e);
  rill_program_destroy(p);
}

/* Block 0: test_blocks(a <- block 1, b <- block 2); blocks 1 and 2: test_gate copies x. */
static rill_program *two_blocks(int32_t block_b) {
  cr_assert(subblk_register());
  rill_program *p;
  OK(rill_program_create(&p));
  sbp_tvar(p, 0, "x", false);
  sbp_tvar(p, 0, "a", false);
  sbp_tvar(p, 0, "b", false);
  int32_t b1 = new_block(p, 0), b2 = new_block(p, 0);
  const char *x = "x", *a = "a", *bb = "b";
  rill_op_builder *b;
  OK(rill_op_builder_create("test_gate", &b));
  OK(rill_op_builder_input(b, "X", &x, 1));
  OK(rill_op_builder_output(b, "Out", &a, 1));
  OK(rill_op_builder_append(b, p, b1));
  rill_op_builder_destroy(b);
  OK(rill_op_builder_create("test_gate", &b));
  OK(rill_op_builder_input(b, "X", &x, 1));
  OK(rill_op_builder_output(b, "Out", &bb, 1));
  OK(rill_op_builder_append(b, p, b2));
  rill_op_builder_destroy(b);
  const char *outs[] = {"a", "b"};
  OK(rill_op_builder_create("test_blocks", &b));
  OK(rill_op_builder_input(b, "X", &x, 1));
  OK(rill_op_builder_output(b, "Out", outs, 2));
  OK(rill_op_builder_attr_block(b, "block_a", b1));
  OK(rill_op_builder_attr_block(b, "block_b", block_b < 0 ? b2 : block_b));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  return p;
}

typedef struct held {
  rill_executor *e;
  rill_program *p;
  rill_scope *s;
  rill_tensor *x;
  rill_tensor *out[2];
  rill_status *st;
} held;

static void *run_held(void *arg) {
  held *h = arg;
  const char *feeds[] = {"x"}, *fetches[] = {"a", "b"};
  h->st = rill_executor_run(h->e, h->p, h->s, feeds, &h->x, 1, fetches, 2, h->out);
  return NULL;
}

static held start(rill_program *p) {
  held h = {.p = p, .e = sbp_executor(RILL_SCHEDULE_SEQUENTIAL)};
  OK(rill_scope_create(NULL, &h.s));
  h.x = sbp_ramp(4.0f);
  return h;
}

static void finish(held *h) {
  rill_tensor_destroy(h->x);
  rill_scope_destroy(h->s);
  rill_executor_destroy(h->e);
  rill_program_destroy(h->p);
}

Test(subblock, two_blocks_run_at_once_on_two_threads) {
  held h = start(two_blocks(-1));
  busy_gate_arm(2);
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, run_held, &h), 0);
  /* Both blocks are inside their gate at the same time. */
  bool both = busy_gate_wait_entered(2);
  busy_gate_open();
  pthread_join(t, NULL);
  cr_assert(both, "only %d of the two blocks ran at once", busy_gate_entered());
  cr_assert_null(h.st, "%s", rill_status_message(h.st));
  for (int k = 0; k < 2; k++) {
    const float *v = rill_tensor_data(h.out[k]);
    for (int i = 0; i < 6; i++) cr_assert_eq(v[i], 4.0f + (float)i);
    rill_tensor_destroy(h.out[k]);
  }
  cr_assert_eq(rill_exec_subplan_builds(h.e), 2);
  finish(&h);
}

Test(subblock, same_block_twice_at_once_is_refused) {
  held h = start(two_blocks(1));
  busy_gate_arm(1);
  int done = subblk_second_done();
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, run_held, &h), 0);
  /* The first thread holds block 1 inside the gate until the second has tried it. */
  for (int i = 0; i < 10000 && subblk_second_done() == done; i++) busy_sleep_ms(1);
  busy_gate_open();
  pthread_join(t, NULL);
  expect_error(h.st, RILL_FAILED_PRECONDITION, "block 1 of program");
  /* The executor and the block are free again. */
  busy_gate_arm(0);
  held h2 = h;
  h2.p = two_blocks(-1);
  run_held(&h2);
  cr_assert_null(h2.st, "%s", rill_status_message(h2.st));
  rill_tensor_destroy(h2.out[0]);
  rill_tensor_destroy(h2.out[1]);
  rill_program_destroy(h2.p);
  finish(&h);
}

/* The run's deadline and unsupported ops reach into sub-blocks. */
Test(subblock, deadline_stops_a_sub_block) {
  cr_assert(test_ops_register());
  (void)test_op; /* blocks other than 0 are built here */
  rill_program *p;
  OK(rill_program_create(&p));
  sbp_tvar(p, 0, "x", false);
  sbp_tvar(p, 0, "y", false);
  bvar(p, "c");
  int32_t b1 = new_block(p, 0);
  sbp_tvar(p, b1, "a", false);
  const char *in[] = {"x"}, *out[] = {"y"};
  cond_op(p, 0, "c", in, 1, out, 1, b1, true);
  for (int k = 0; k < 2; k++) {
    rill_op_builder *b;
    const char *x = k ? "a" : "x", *o = k ? "y" : "a";
    OK(rill_op_builder_create("test_sleep", &b));
    OK(rill_op_builder_input(b, "X", &x, 1));
    OK(rill_op_builder_output(b, "Out", &o, 1));
    OK(rill_op_builder_attr_int(b, "us", 200000));
    OK(rill_op_builder_append(b, p, b1));
    rill_op_builder_destroy(b);
  }
  rill_executor *e = sbp_executor(RILL_SCHEDULE_SEQUENTIAL);
  OK(rill_executor_set_timeout(e, 100000));
  rill_scope *s;
  OK(rill_scope_create(NULL, &s));
  rill_tensor *x = sbp_ramp(1.0f), *c = flag(true), *ins[] = {x, c}, *o = NULL;
  const char *feeds[] = {"x", "c"}, *fetches[] = {"y"};
  rill_status *st = rill_executor_run(e, p, s, feeds, ins, 2, fetches, 1, &o);
  cr_assert_not_null(st);
  cr_assert(strstr(rill_status_message(st), "before block 1, op #1 'test_sleep'"), "%s",
            rill_status_message(st));
  expect_error(st, RILL_DEADLINE_EXCEEDED, "deadline");
  rill_tensor_destroy(x);
  rill_tensor_destroy(c);
  rill_scope_destroy(s);
  rill_executor_destroy(e);
  rill_program_destroy(p);
}

Test(subblock, prepare_reports_unsupported_ops_of_sub_blocks) {
  rill_program *p = one_run(1, false);
  int32_t b2 = new_block(p, 1);
  rill_op_builder *b;
  const char *x = "x", *y = "y";
  OK(rill_op_builder_create("no_such_op_in_a_block", &b));
  OK(rill_op_builder_input(b, "X", &x, 1));
  OK(rill_op_builder_output(b, "Out", &y, 1));
  OK(rill_op_builder_append(b, p, b2));
  rill_op_builder_destroy(b);
  rill_executor *e = sbp_executor(RILL_SCHEDULE_SEQUENTIAL);
  const char *feeds[] = {"x", "c"}, *fetches[] = {"y"};
  expect_error(rill_executor_prepare(e, p, feeds, 2, fetches, 1), RILL_UNIMPLEMENTED,
               "block 2: 1 op of unsupported type: 'no_such_op_in_a_block' (op #0)");
  rill_executor_destroy(e);
  rill_program_destroy(p);
}
