/* Run-time shape inference is skipped for an op whose input metas are unchanged since
 * its last run, except when its inference reads input values: fill_constant sized by a
 * fed ShapeTensor gets the new shape although the fed tensor's own shape (int64 [2])
 * stays the same, while the op after it (relu) is inferred again only when its input
 * shape changes. */
#include <criterion/criterion.h>

#include "framework/exec/executor.h"
#include "rill.h"

#define OK(expr)                                                                     \
  do {                                                                               \
    rill_status *st_ = (expr);                                                       \
    cr_assert_null(st_, "%s: %s", #expr, rill_status_message(st_));                  \
  } while (0)

static rill_program *build(void) {
  rill_program *p;
  OK(rill_program_create(&p));
  const int64_t ds[] = {2}, dy[] = {-1, -1};
  OK(rill_block_add_var(p, 0, "shape", RILL_VAR_LOD_TENSOR, RILL_DTYPE_INT64, ds, 1, 0, false));
  OK(rill_block_add_var(p, 0, "y", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, dy, 2, 0, false));
  OK(rill_block_add_var(p, 0, "z", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, dy, 2, 0, false));
  rill_op_builder *b;
  const char *shape = "shape", *y = "y", *z = "z";
  const int64_t unused[] = {1, 1};
  OK(rill_op_builder_create("fill_constant", &b));
  OK(rill_op_builder_input(b, "ShapeTensor", &shape, 1));
  OK(rill_op_builder_output(b, "Out", &y, 1));
  OK(rill_op_builder_attr_longs(b, "shape", unused, 2));
  OK(rill_op_builder_attr_float(b, "value", 2.0f));
  OK(rill_op_builder_attr_int(b, "dtype", RILL_DTYPE_FP32));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  OK(rill_op_builder_create("relu", &b));
  OK(rill_op_builder_input(b, "X", &y, 1));
  OK(rill_op_builder_output(b, "Out", &z, 1));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  return p;
}

typedef struct fixture {
  rill_program *prog;
  rill_executor *exe;
  rill_scope *scope;
  rill_plan *plan;
} fixture;

/* Runs with ShapeTensor = {rows, cols}; checks z's shape and values; returns how many
 * ops the run inferred. */
static uint64_t run(fixture *f, int64_t rows, int64_t cols) {
  const int64_t two[] = {2};
  rill_tensor *shape;
  OK(rill_tensor_create(RILL_DTYPE_INT64, two, 1, &shape));
  int64_t *s = rill_tensor_data(shape);
  s[0] = rows;
  s[1] = cols;
  const char *feed = "shape", *fetch = "z";
  rill_tensor *out = NULL;
  uint64_t before = f->plan ? rill_plan_infer_runs(f->plan) : 0;
  OK(rill_executor_run(f->exe, f->prog, f->scope, &feed, &shape, 1, &fetch, 1, &out));
  OK(rill_exec_prepare(f->exe, f->prog, &feed, 1, &fetch, 1, &f->plan)); /* the cached plan */
  cr_assert_eq(rill_tensor_ndim(out), 2);
  cr_assert_eq(rill_tensor_dims(out)[0], rows, "rows %lld, want %lld",
               (long long)rill_tensor_dims(out)[0], (long long)rows);
  cr_assert_eq(rill_tensor_dims(out)[1], cols, "cols %lld, want %lld",
               (long long)rill_tensor_dims(out)[1], (long long)cols);
  const float *z = rill_tensor_data(out);
  for (int64_t i = 0; i < rows * cols; i++) cr_assert_eq(z[i], 2.0f);
  rill_tensor_destroy(out);
  rill_tensor_destroy(shape);
  return rill_plan_infer_runs(f->plan) - before;
}

Test(exec, inference_that_reads_values_runs_every_time) {
  fixture f = {build(), NULL, NULL, NULL};
  OK(rill_executor_create(NULL, &f.exe));
  OK(rill_scope_create(NULL, &f.scope));
  run(&f, 2, 3);
  /* Same fed shape, new values: fill_constant is inferred again, and since its output
   * changed shape, so is relu. */
  cr_assert_eq(run(&f, 3, 1), 2);
  /* Same values: fill_constant still re-infers (it reads data); relu's input did not
   * change, so relu is not inferred. */
  cr_assert_eq(run(&f, 3, 1), 1);
  cr_assert_eq(run(&f, 1, 4), 2);
  rill_scope_destroy(f.scope);
  rill_executor_destroy(f.exe);
  rill_program_destroy(f.prog);
}
