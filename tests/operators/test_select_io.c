/* select_input and select_output: each branch taken, LoD kept, the branches not taken
 * left alone; the makers emit each other (only the chosen branch's X@GRAD written by
 * select_input's gradient); errors naming op and variable. */
#include "op_test.h"

#include "framework/program/program.h"
#include "framework/registry/registry.h"

static const uint64_t lod[] = {0, 1, 3};

static void bind_mask(op_harness *h, const char *name, int32_t v) {
  bind_input(h, "Mask", name, RILL_DTYPE_INT32, DIMS(1), &v);
}

Test(select_input, takes_the_masked_branch) {
  const double a[] = {1, 2, 3}, b[] = {4, 5, 6}, c[] = {7, 8, 9};
  for (int32_t m = 0; m < 3; m++) {
    op_harness *h = harness("select_input");
    bind_input(h, "X", "a", RILL_DTYPE_FP64, DIMS(3, 1), a);
    bind_input(h, "X", "b", RILL_DTYPE_FP64, DIMS(3, 1), b);
    rill_tensor *t = op_harness_make(RILL_DTYPE_FP64, DIMS(3, 1), c);
    size_t n = 3;
    OK(rill_tensor_set_lod(t, 1, (const uint64_t *const[]){lod}, &n));
    OK(op_harness_input(h, "X", "c", t));
    op_harness_free_tensor(t);
    bind_mask(h, "mask", m);
    OK(op_harness_output(h, "Out", "out"));
    OK(op_harness_run(h));
    rill_tensor *o = op_harness_tensor(h, "out");
    expect_dims(o, DIMS(3, 1));
    const double *want = m == 0 ? a : m == 1 ? b : c;
    for (int i = 0; i < 3; i++) cr_assert_eq(((double *)rill_tensor_ptr(o))[i], want[i]);
    cr_assert_eq(o->lod.nlevels, m == 2 ? 1u : 0u, "the chosen tensor's LoD comes along");
    op_harness_destroy(h);
  }
}

Test(select_output, writes_only_the_masked_branch) {
  const int64_t x[] = {3, 1, 4, 1};
  for (int32_t m = 0; m < 2; m++) {
    op_harness *h = harness("select_output");
    bind_input(h, "X", "x", RILL_DTYPE_INT64, DIMS(2, 2), x);
    bind_mask(h, "mask", m);
    OK(op_harness_output(h, "Out", "o0"));
    OK(op_harness_output(h, "Out", "o1"));
    OK(op_harness_run(h));
    rill_tensor *taken = op_harness_tensor(h, m ? "o1" : "o0");
    rill_tensor *other = op_harness_tensor(h, m ? "o0" : "o1");
    expect_dims(taken, DIMS(2, 2));
    cr_assert_eq(((int64_t *)rill_tensor_ptr(taken))[2], 4);
    cr_assert(!other || !rill_tensor_is_set(other), "the branch not taken holds no tensor");
    op_harness_destroy(h);
  }
}

Test(select_input, errors_name_op_and_variable) {
  const double a[] = {1}, b[] = {2};
  op_harness *h = harness("select_input");
  bind_input(h, "X", "a", RILL_DTYPE_FP64, DIMS(1), a);
  bind_input(h, "X", "b", RILL_DTYPE_FP64, DIMS(1), b);
  bind_mask(h, "cond.mask", 2);
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_run(h), "select_input", "Mask", "cond.mask", "2", "2 branches");
  op_harness_destroy(h);
  const int64_t m64 = 0;
  h = harness("select_output");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(1), a);
  bind_input(h, "Mask", "mask64", RILL_DTYPE_INT64, DIMS(1), &m64);
  OK(op_harness_output(h, "Out", "o0"));
  EXPECT_ERROR(op_harness_run(h), "select_output", "Mask", "mask64", "int32");
  op_harness_destroy(h);
}

/* Every forward variable but the mask and "b" wants a gradient. */
static bool wants(void *impl, const char *var) {
  (void)impl;
  return strcmp(var, "mask") != 0 && strcmp(var, "b") != 0;
}

Test(select_input, gradient_is_select_output_writing_the_chosen_branch) {
  const double a[] = {1}, b[] = {2}, c[] = {3};
  op_harness *h = harness("select_input");
  bind_input(h, "X", "a", RILL_DTYPE_FP64, DIMS(1), a);
  bind_input(h, "X", "b", RILL_DTYPE_FP64, DIMS(1), b);
  bind_input(h, "X", "c", RILL_DTYPE_FP64, DIMS(1), c);
  bind_mask(h, "mask", 2);
  OK(op_harness_output(h, "Out", "out"));
  const rill_op_schema *s = rill_schema_find("select_input");
  rill_grad_ctx g = {op_harness_desc(h), s, wants, NULL, NULL, 0, 0};
  OK(s->grad(&g));
  cr_assert_eq(g.nops, 1);
  cr_assert_str_eq(g.ops[0].type, "select_output");
  const rill_op_slot *x = rill_op_input(&g.ops[0], "X"), *out = rill_op_output(&g.ops[0], "Out");
  const rill_op_slot *mask = rill_op_input(&g.ops[0], "Mask");
  cr_assert(x && x->nargs == 1 && strcmp(x->args[0], "out@GRAD") == 0);
  cr_assert(mask && mask->nargs == 1 && strcmp(mask->args[0], "mask") == 0);
  cr_assert(out && out->nargs == 3 && strcmp(out->args[0], "a@GRAD") == 0 &&
            strcmp(out->args[1], RILL_EMPTY_VAR) == 0 && strcmp(out->args[2], "c@GRAD") == 0);
  rill_grad_ctx_clear(&g);
  op_harness_destroy(h);
  /* select_output's gradient is select_input over the Out gradients */
  h = harness("select_output");
  bind_input(h, "X", "a", RILL_DTYPE_FP64, DIMS(1), a);
  bind_mask(h, "mask", 0);
  OK(op_harness_output(h, "Out", "o0"));
  OK(op_harness_output(h, "Out", "o1"));
  s = rill_schema_find("select_output");
  g = (rill_grad_ctx){op_harness_desc(h), s, wants, NULL, NULL, 0, 0};
  OK(s->grad(&g));
  cr_assert_eq(g.nops, 1);
  cr_assert_str_eq(g.ops[0].type, "select_input");
  x = rill_op_input(&g.ops[0], "X");
  cr_assert(x && x->nargs == 2 && strcmp(x->args[1], "o1@GRAD") == 0);
  out = rill_op_output(&g.ops[0], "Out");
  cr_assert(out && out->nargs == 1 && strcmp(out->args[0], "a@GRAD") == 0);
  rill_grad_ctx_clear(&g);
  op_harness_destroy(h);
}
