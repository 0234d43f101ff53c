/* Arguments named @EMPTY@ (gradients nobody wants) are bound as absent under both
 * schedules: the kernel sees NULL, nothing is computed into them and no variable of that
 * name appears. */
#include <criterion/criterion.h>
#include <string.h>

#include "framework/exec/executor.h"
#include "framework/registry/registry.h"

#define OK(expr)                                                             \
  do {                                                                       \
    rill_status *st_ = (expr);                                               \
    cr_assert_null(st_, "%s: %s", #expr, rill_status_message(st_));          \
  } while (0)

static rill_tensor *filled(const int64_t *dims, float start) {
  rill_tensor *t;
  OK(rill_tensor_create(RILL_DTYPE_FP32, dims, 2, &t));
  float *p = rill_tensor_data(t);
  for (int64_t i = 0; i < rill_tensor_numel(t); i++) p[i] = start + 0.25f * (float)i;
  return t;
}

static void run_with(rill_schedule schedule) {
  rill_program *p;
  OK(rill_program_create(&p));
  const int64_t xd[] = {2, 3}, wd[] = {3, 4}, od[] = {2, 4};
  OK(rill_block_add_var(p, 0, "x", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, xd, 2, 0, false));
  OK(rill_block_add_var(p, 0, "w", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, wd, 2, 0, false));
  OK(rill_block_add_var(p, 0, "out@GRAD", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, od, 2, 0, false));
  OK(rill_block_add_var(p, 0, "x@GRAD", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, xd, 2, 0, false));
  rill_op_builder *b;
  const char *x[] = {"x"}, *w[] = {"w"}, *dout[] = {"out@GRAD"}, *dx[] = {"x@GRAD"},
             *none[] = {RILL_EMPTY_VAR};
  OK(rill_op_builder_create("mul_grad", &b));
  OK(rill_op_builder_input(b, "X", x, 1));
  OK(rill_op_builder_input(b, "Y", w, 1));
  OK(rill_op_builder_input(b, "Out@GRAD", dout, 1));
  OK(rill_op_builder_output(b, "X@GRAD", dx, 1));
  OK(rill_op_builder_output(b, "Y@GRAD", none, 1));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);

  rill_tensor *feeds[] = {filled(xd, 1), filled(wd, -1), filled(od, 0.5f)}, *got = NULL;
  const char *feed_names[] = {"x", "w", "out@GRAD"}, *fetch[] = {"x@GRAD"};
  rill_executor_options o = RILL_EXECUTOR_OPTIONS_INIT;
  o.num_threads = 2;
  rill_executor *e;
  rill_scope *s;
  OK(rill_executor_create(&o, &e));
  OK(rill_executor_set_schedule(e, schedule));
  OK(rill_scope_create(NULL, &s));
  rill_plan *plan;
  OK(rill_exec_prepare(e, p, feed_names, 3, fetch, 1, &plan));
  OK(rill_executor_run(e, p, s, feed_names, feeds, 3, fetch, 1, &got));
  cr_assert_not(rill_plan_holds(plan, RILL_EMPTY_VAR), "nothing was computed into @EMPTY@");
  cr_assert(rill_plan_holds(plan, "x@GRAD"));

  /* dX = dOut * W^T, computed naively. */
  const float *dxp = rill_tensor_data(got), *wp = rill_tensor_data(feeds[1]),
              *gp = rill_tensor_data(feeds[2]);
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++) {
      float want = 0;
      for (int k = 0; k < 4; k++) want += gp[i * 4 + k] * wp[j * 4 + k];
      cr_assert_float_eq(dxp[i * 3 + j], want, 1e-5f, "dX[%d][%d]", i, j);
    }
  cr_assert_null(rill_scope_find(s, RILL_EMPTY_VAR), "no variable is made for an absent argument");
  rill_tensor_destroy(got);
  for (int i = 0; i < 3; i++) rill_tensor_destroy(feeds[i]);
  rill_scope_destroy(s);
  rill_executor_destroy(e);
  rill_program_destroy(p);
}

Test(empty_args, absent_under_the_sequential_schedule) { run_with(RILL_SCHEDULE_SEQUENTIAL); }
Test(empty_args, absent_under_the_parallel_schedule) { run_with(RILL_SCHEDULE_PARALLEL); }
