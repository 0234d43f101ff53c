#include "support/subblock_prog.h"

#include <criterion/criterion.h>

#define OK(expr)                                                                     \
  do {                                                                               \
    rill_status *st_ = (expr);                                                       \
    cr_assert_null(st_, "%s: %s", #expr, rill_status_message(st_));                  \
  } while (0)

static const int64_t SBP_D23[2] = {2, 3};

void sbp_tvar(rill_program *p, int32_t block, const char *name, bool persist) {
  OK(rill_block_add_var(p, block, name, RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, SBP_D23, 2, 0,
                        persist));
}

rill_op_builder *sbp_op_begin(const char *type, const char *x, const char *y, const char *out) {
  rill_op_builder *b;
  OK(rill_op_builder_create(type, &b));
  OK(rill_op_builder_input(b, "X", &x, 1));
  if (y) OK(rill_op_builder_input(b, "Y", &y, 1));
  OK(rill_op_builder_output(b, "Out", &out, 1));
  return b;
}

void sbp_op_end(rill_op_builder *b, rill_program *p, int32_t block) {
  OK(rill_op_builder_append(b, p, block));
  rill_op_builder_destroy(b);
}

void sbp_op(rill_program *p, int32_t block, const char *type, const char *x, const char *y,
            const char *out) {
  sbp_op_end(sbp_op_begin(type, x, y, out), p, block);
}

void sbp_scale(rill_program *p, int32_t block, const char *x, const char *out, float scale,
               float bias) {
  rill_op_builder *b = sbp_op_begin("scale", x, NULL, out);
  OK(rill_op_builder_attr_float(b, "scale", scale));
  OK(rill_op_builder_attr_float(b, "bias", bias));
  sbp_op_end(b, p, block);
}

rill_executor *sbp_executor(rill_schedule sched) {
  rill_executor_options o = RILL_EXECUTOR_OPTIONS_INIT;
  o.num_threads = 2;
  rill_executor *e;
  OK(rill_executor_create(&o, &e));
  OK(rill_executor_set_schedule(e, sched));
  return e;
}

rill_tensor *sbp_ramp(float start) {
  rill_tensor *t;
  OK(rill_tensor_create(RILL_DTYPE_FP32, SBP_D23, 2, &t));
  float *v = rill_tensor_data(t);
  for (int i = 0; i < 6; i++) v[i] = start + (float)i;
  return t;
}

rill_scope *sbp_scope_with_ramp(const char *name, float start) {
  rill_scope *s;
  OK(rill_scope_create(NULL, &s));
  rill_tensor *t = sbp_ramp(start);
  OK(rill_scope_set_tensor(s, name, t));
  rill_tensor_destroy(t);
  return s;
}
