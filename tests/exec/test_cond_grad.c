/* conditional_block_grad: the backward pass builds a gradient block from the forward
 * block (summing the two uses of a parent variable inside it), the gradient op runs it
 * in the step scope the forward kept, and a skipped branch gives zeros; in both
 * schedules. The kept step scopes are freed when each run ends, and a gradient op
 * without its forward's scope fails naming the op and the variable. */
#include <criterion/criterion.h>
#include <math.h>
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

/* y = 0 * w; if (c) { t = 3 w; y = t + w } (a block reading w twice); loss = mean(y).
 * d loss / d w = 4/6 when c holds, 0 when it does not. */
static rill_program *program(void) {
  rill_program *p;
  OK(rill_program_create(&p));
  sbp_tvar(p, 0, "w", true);
  sbp_tvar(p, 0, "y", false);
  OK(rill_block_add_var(p, 0, "loss", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, D1, 1, 0, false));
  OK(rill_block_add_var(p, 0, "c", RILL_VAR_LOD_TENSOR, RILL_DTYPE_BOOL, D1, 1, 0, false));
  OK(rill_block_add_var(p, 0, "sc", RILL_VAR_STEP_SCOPES, RILL_DTYPE_FP32, NULL, 0, 0, false));
  int32_t b1 = -1;
  OK(rill_program_append_block(p, 0, &b1));
  sbp_tvar(p, b1, "t", false);
  sbp_scale(p, b1, "w", "t", 3.0f, 0.0f);
  sbp_op(p, b1, "elementwise_add", "t", "w", "y");
  sbp_scale(p, 0, "w", "y", 0.0f, 0.0f);
  rill_op_builder *b;
  const char *c = "c", *w = "w", *y = "y", *sc = "sc";
  OK(rill_op_builder_create("conditional_block", &b));
  OK(rill_op_builder_input(b, "Cond", &c, 1));
  OK(rill_op_builder_input(b, "Input", &w, 1));
  OK(rill_op_builder_output(b, "Out", &y, 1));
  OK(rill_op_builder_output(b, "Scope", &sc, 1));
  OK(rill_op_builder_attr_block(b, "sub_block", b1));
  OK(rill_op_builder_attr_bool(b, "is_scalar_condition", true));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  sbp_op(p, 0, "mean", "y", NULL, "loss");
  return p;
}

/* Runs once with c; returns w@GRAD[0..5] in g. */
static void run_once(rill_executor *e, rill_program *p, rill_scope *s, bool on, float *g) {
  rill_tensor *c;
  OK(rill_tensor_create(RILL_DTYPE_BOOL, D1, 1, &c));
  *(bool *)rill_tensor_data(c) = on;
  const char *feeds[] = {"c"}, *fetch[] = {"w@GRAD", "loss"};
  rill_tensor *out[2] = {0};
  OK(rill_executor_run(e, p, s, feeds, &c, 1, fetch, 2, out));
  memcpy(g, rill_tensor_data(out[0]), 6 * sizeof *g);
  rill_tensor_destroy(out[0]);
  rill_tensor_destroy(out[1]);
  rill_tensor_destroy(c);
}

static void check_grad(rill_schedule sched) {
  rill_program *p = program();
  OK(rill_program_append_backward(p, "loss", NULL, 0, NULL));
  cr_assert_eq(rill_program_num_blocks(p), 3, "one gradient block");
  /* the gradient block sums the two gradients of w before handing it out */
  bool sum = false;
  for (size_t i = 0;; i++) {
    rill_op_info info;
    rill_status *end = rill_block_op_info(p, 2, i, &info);
    if (end) { /* past the last op */
      rill_status_destroy(end);
      break;
    }
    sum |= strcmp(info.type, "sum") == 0;
  }
  cr_assert(sum, "the gradient block adds the two uses of w");
  rill_executor *e = sbp_executor(sched);
  rill_scope *s = sbp_scope_with_ramp("w", -2.0f);
  float g[6];
  for (int round = 0; round < 2; round++) {
    run_once(e, p, s, true, g);
    for (int i = 0; i < 6; i++) cr_assert_float_eq(g[i], 4.0f / 6.0f, 1e-6, "ran: g[%d] = %g", i, g[i]);
    run_once(e, p, s, false, g);
    for (int i = 0; i < 6; i++) cr_assert_eq(g[i], 0.0f, "skipped: g[%d] = %g", i, g[i]);
  }
  rill_scope_destroy(s);
  rill_executor_destroy(e);
  rill_program_destroy(p);
}

Test(cond_grad, gradient_through_the_branch_sequential) { check_grad(RILL_SCHEDULE_SEQUENTIAL); }
Test(cond_grad, gradient_through_the_branch_parallel) { check_grad(RILL_SCHEDULE_PARALLEL); }

Test(cond_grad, step_scopes_do_not_outlive_the_run) {
  rill_program *p = program();
  OK(rill_program_append_backward(p, "loss", NULL, 0, NULL));
  rill_executor *e = sbp_executor(RILL_SCHEDULE_SEQUENTIAL);
  rill_scope *s = sbp_scope_with_ramp("w", -2.0f);
  float g[6];
  run_once(e, p, s, true, g);
  size_t after_first = rill_scope_live_count();
  for (int i = 0; i < 20; i++) {
    run_once(e, p, s, i % 2 == 0, g);
    cr_assert_eq(rill_scope_live_count(), after_first, "run %d: %zu scopes live, %zu after the first",
                 i, rill_scope_live_count(), after_first);
  }
  rill_scope_destroy(s);
  rill_executor_destroy(e);
  rill_program_destroy(p);
}

Test(cond_grad, gradient_without_the_forward_scope_names_op_and_variable) {
  rill_program *p;
  OK(rill_program_create(&p));
  sbp_tvar(p, 0, "x", false);
  sbp_tvar(p, 0, "x@GRAD", false);
  OK(rill_block_add_var(p, 0, "c", RILL_VAR_LOD_TENSOR, RILL_DTYPE_BOOL, D1, 1, 0, false));
  OK(rill_block_add_var(p, 0, "kept", RILL_VAR_STEP_SCOPES, RILL_DTYPE_FP32, NULL, 0, 0, false));
  int32_t b1 = -1;
  OK(rill_program_append_block(p, 0, &b1));
  /* kept is written by a forward whose condition (off) does not hold, so it holds no
   * scope, while the gradient op's condition (c) holds */
  OK(rill_block_add_var(p, 0, "off", RILL_VAR_LOD_TENSOR, RILL_DTYPE_BOOL, D1, 1, 0, false));
  rill_op_builder *b;
  const char *c = "c", *off = "off", *x = "x", *xg = "x@GRAD", *kept = "kept";
  OK(rill_op_builder_create("conditional_block", &b));
  OK(rill_op_builder_input(b, "Cond", &off, 1));
  OK(rill_op_builder_output(b, "Scope", &kept, 1));
  OK(rill_op_builder_attr_block(b, "sub_block", b1));
  OK(rill_op_builder_attr_bool(b, "is_scalar_condition", true));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  OK(rill_op_builder_create("conditional_block_grad", &b));
  OK(rill_op_builder_input(b, "Cond", &c, 1));
  OK(rill_op_builder_input(b, "Input", &x, 1));
  OK(rill_op_builder_input(b, "Scope", &kept, 1));
  OK(rill_op_builder_output(b, "Input@GRAD", &xg, 1));
  OK(rill_op_builder_attr_block(b, "sub_block", b1));
  OK(rill_op_builder_attr_bool(b, "is_scalar_condition", true));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  rill_executor *e = sbp_executor(RILL_SCHEDULE_SEQUENTIAL);
  rill_scope *s;
  OK(rill_scope_create(NULL, &s));
  rill_tensor *t, *cv, *ov;
  OK(rill_tensor_create(RILL_DTYPE_FP32, D23, 2, &t));
  memset(rill_tensor_data(t), 0, 6 * sizeof(float));
  OK(rill_tensor_create(RILL_DTYPE_BOOL, D1, 1, &cv));
  *(bool *)rill_tensor_data(cv) = true;
  OK(rill_tensor_create(RILL_DTYPE_BOOL, D1, 1, &ov));
  *(bool *)rill_tensor_data(ov) = false;
  const char *feeds[] = {"x", "c", "off"};
  rill_tensor *fv[] = {t, cv, ov};
  rill_status *st = rill_executor_run(e, p, s, feeds, fv, 3, NULL, 0, NULL);
  cr_assert_not_null(st, "a gradient op on a true condition needs the kept scope");
  const char *msg = rill_status_message(st);
  cr_assert(strstr(msg, "conditional_block_grad") && strstr(msg, "'kept'"), "message: %s", msg);
  rill_status_destroy(st);
  rill_tensor_destroy(t);
  rill_tensor_destroy(cv);
  rill_tensor_destroy(ov);
  rill_scope_destroy(s);
  rill_executor_destroy(e);
  rill_program_destroy(p);
}
