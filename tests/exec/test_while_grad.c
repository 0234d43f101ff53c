/* while_grad: y = 0 w; while (i < n) { y = y + w; i++ }; loss = mean(y), so d loss / d w
 * = n / 6 everywhere. The backward pass builds the loop's gradient block (the counter
 * stepped back, y's gradient carried in the enclosing block, w's summed over the steps);
 * checked for n = 0 (zeros), 1 and 3 in both schedules, kept step scopes freed by the end
 * of every run, and errors naming the op and the variable. */
#include <criterion/criterion.h>
#include <string.h>

#include "framework/data/scope.h"
#include "rill.h"
#include "support/subblock_prog.h"

#define OK(expr)                                                                     \
  do {                                                                               \
    rill_status *st_ = (expr);                                                       \
    cr_assert_null(st_, "%s: %s", #expr, rill_status_message(st_));                  \
  } while (0)

static const int64_t D23[] = {2, 3}, D1[] = {1};

static rill_program *program(bool is_test) {
  rill_program *p;
  OK(rill_program_create(&p));
  sbp_tvar(p, 0, "w", true);
  sbp_tvar(p, 0, "y", false);
  OK(rill_block_add_var(p, 0, "loss", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, D1, 1, 0, false));
  OK(rill_block_add_var(p, 0, "i", RILL_VAR_LOD_TENSOR, RILL_DTYPE_INT64, D1, 1, 0, false));
  OK(rill_block_add_var(p, 0, "n", RILL_VAR_LOD_TENSOR, RILL_DTYPE_INT64, D1, 1, 0, false));
  OK(rill_block_add_var(p, 0, "c", RILL_VAR_LOD_TENSOR, RILL_DTYPE_BOOL, D1, 1, 0, false));
  OK(rill_block_add_var(p, 0, "sc", RILL_VAR_STEP_SCOPES, RILL_DTYPE_FP32, NULL, 0, 0, false));
  int32_t b1 = -1;
  OK(rill_program_append_block(p, 0, &b1));
  sbp_op(p, b1, "elementwise_add", "y", "w", "y");
  rill_op_builder *b = sbp_op_begin("increment", "i", NULL, "i");
  OK(rill_op_builder_attr_float(b, "step", 1.0f));
  sbp_op_end(b, p, b1);
  sbp_op(p, b1, "less_than", "i", "n", "c");
  const char *i = "i";
  OK(rill_op_builder_create("fill_constant", &b));
  OK(rill_op_builder_output(b, "Out", &i, 1));
  OK(rill_op_builder_attr_longs(b, "shape", D1, 1));
  OK(rill_op_builder_attr_int(b, "dtype", (int32_t)RILL_DTYPE_INT64));
  OK(rill_op_builder_attr_float(b, "value", 0.0f));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  sbp_scale(p, 0, "w", "y", 0.0f, 0.0f);
  sbp_op(p, 0, "less_than", "i", "n", "c");
  const char *xs[] = {"w", "i", "n", "y"}, *outs[] = {"y", "i", "c"}, *c = "c", *sc = "sc";
  OK(rill_op_builder_create("while", &b));
  OK(rill_op_builder_input(b, "X", xs, 4));
  OK(rill_op_builder_input(b, "Condition", &c, 1));
  OK(rill_op_builder_output(b, "Out", outs, 3));
  OK(rill_op_builder_output(b, "StepScopes", &sc, 1));
  OK(rill_op_builder_attr_block(b, "sub_block", b1));
  OK(rill_op_builder_attr_bool(b, "is_test", is_test));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  sbp_op(p, 0, "mean", "y", NULL, "loss");
  return p;
}

/* One run with n steps; w@GRAD into g, the loss returned. */
static rill_status *run_once(rill_executor *e, rill_program *p, rill_scope *s, int64_t n,
                             float *g, float *loss) {
  rill_tensor *nv;
  OK(rill_tensor_create(RILL_DTYPE_INT64, D1, 1, &nv));
  *(int64_t *)rill_tensor_data(nv) = n;
  const char *feeds[] = {"n"}, *fetch[] = {"w@GRAD", "loss"};
  rill_tensor *out[2] = {0};
  rill_status *st = rill_executor_run(e, p, s, feeds, &nv, 1, fetch, 2, out);
  if (!st) {
    memcpy(g, rill_tensor_data(out[0]), 6 * sizeof *g);
    *loss = *(float *)rill_tensor_data(out[1]);
  }
  rill_tensor_destroy(out[0]);
  rill_tensor_destroy(out[1]);
  rill_tensor_destroy(nv);
  return st;
}

static void check_grad(rill_schedule sched) {
  rill_program *p = program(false);
  OK(rill_program_append_backward(p, "loss", NULL, 0, NULL));
  cr_assert_eq(rill_program_num_blocks(p), 3, "one gradient block");
  rill_executor *e = sbp_executor(sched);
  rill_scope *s = sbp_scope_with_ramp("w", -2.0f);
  static const int64_t counts[] = {3, 0, 1, 3};
  for (size_t r = 0; r < sizeof counts / sizeof *counts; r++) {
    float g[6], loss;
    OK(run_once(e, p, s, counts[r], g, &loss));
    /* mean(n w) with w = -2 .. 3: n / 2 */
    cr_assert_float_eq(loss, (float)counts[r] * 0.5f,
                       1e-5, "n = %lld: loss %g", (long long)counts[r], loss);
    for (int k = 0; k < 6; k++)
      cr_assert_float_eq(g[k], (float)counts[r] / 6.0f, 1e-6, "n = %lld: g[%d] = %g",
                         (long long)counts[r], k, g[k]);
  }
  rill_scope_destroy(s);
  rill_executor_destroy(e);
  rill_program_destroy(p);
}

Test(while_grad, gradient_over_zero_one_and_three_steps_sequential) {
  check_grad(RILL_SCHEDULE_SEQUENTIAL);
}
Test(while_grad, gradient_over_zero_one_and_three_steps_parallel) {
  check_grad(RILL_SCHEDULE_PARALLEL);
}

Test(while_grad, step_scopes_do_not_outlive_the_run) {
  rill_program *p = program(false);
  OK(rill_program_append_backward(p, "loss", NULL, 0, NULL));
  rill_executor *e = sbp_executor(RILL_SCHEDULE_SEQUENTIAL);
  rill_scope *s = sbp_scope_with_ramp("w", -2.0f);
  float g[6], loss;
  OK(run_once(e, p, s, 4, g, &loss));
  size_t after_first = rill_scope_live_count();
  for (int k = 0; k < 20; k++) {
    OK(run_once(e, p, s, 4 + k % 3, g, &loss));
    cr_assert_eq(rill_scope_live_count(), after_first, "run %d: %zu scopes live, %zu after the first",
                 k, rill_scope_live_count(), after_first);
  }
  rill_scope_destroy(s);
  rill_executor_destroy(e);
  rill_program_destroy(p);
}

Test(while_grad, an_is_test_loop_has_no_gradient_and_the_error_names_the_op) {
  rill_program *p = program(true);
  OK(rill_program_append_backward(p, "loss", NULL, 0, NULL));
  rill_executor *e = sbp_executor(RILL_SCHEDULE_SEQUENTIAL);
  rill_scope *s = sbp_scope_with_ramp("w", -2.0f);
  float g[6], loss;
  rill_status *st = run_once(e, p, s, 2, g, &loss);
  cr_assert_not_null(st, "is_test keeps no step scopes to differentiate");
  const char *msg = rill_status_message(st);
  cr_assert(strstr(msg, "while_grad") && strstr(msg, "is_test"), "message: %s", msg);
  rill_status_destroy(st);
  rill_scope_destroy(s);
  rill_executor_destroy(e);
  rill_program_destroy(p);
}

Test(while_grad, step_scopes_of_another_kind_name_the_op_and_variable) {
  rill_program *p;
  OK(rill_program_create(&p));
  OK(rill_block_add_var(p, 0, "x", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, D23, 2, 0, false));
  OK(rill_block_add_var(p, 0, "x@GRAD", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, D23, 2, 0, false));
  int32_t b1 = -1;
  OK(rill_program_append_block(p, 0, &b1));
  rill_op_builder *b;
  const char *x = "x", *xg = "x@GRAD";
  OK(rill_op_builder_create("while_grad", &b));
  OK(rill_op_builder_input(b, "X", &x, 1));
  OK(rill_op_builder_input(b, "StepScopes", &x, 1));
  OK(rill_op_builder_output(b, "X@GRAD", &xg, 1));
  OK(rill_op_builder_attr_block(b, "sub_block", b1));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  rill_executor *e = sbp_executor(RILL_SCHEDULE_SEQUENTIAL);
  rill_scope *s;
  OK(rill_scope_create(NULL, &s));
  rill_tensor *t;
  OK(rill_tensor_create(RILL_DTYPE_FP32, D23, 2, &t));
  memset(rill_tensor_data(t), 0, 6 * sizeof(float));
  const char *feeds[] = {"x"};
  rill_status *st = rill_executor_run(e, p, s, feeds, &t, 1, NULL, 0, NULL);
  cr_assert_not_null(st, "StepScopes holding a tensor is an error");
  const char *msg = rill_status_message(st);
  cr_assert(strstr(msg, "while_grad") && strstr(msg, "StepScopes 'x'"), "message: %s", msg);
  rill_status_destroy(st);
  rill_tensor_destroy(t);
  rill_scope_destroy(s);
  rill_executor_destroy(e);
  rill_program_destroy(p);
}
