/* select_input and select_output: each branch taken, LoD kept, the branches not taken
 * left alone; the makers emit each other (only the chosen branch's X@GRAD written by
 * select_input's gradient); errors naming op and variable. */
#include "op_test.h"

#include "framework/data/scope.h"
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

/* Variable `name` bound to `slot`, made an array of n float64 items [1, k + 1] whose
 * elements are base + k. */
static void bind_array(op_harness *h, const char *slot, const char *name, size_t n, double base) {
  OK(op_harness_input(h, slot, name, NULL));
  rill_tensor_array *a = rill_variable_array(rill_scope_find(op_harness_scope(h), name));
  cr_assert_not_null(a);
  OK(rill_tensor_array_resize(a, n));
  for (size_t k = 0; k < n; k++) {
    rill_dims d = {.n = 2, .d = {1, (int64_t)k + 1}};
    OK(rill_tensor_alloc(&a->items[k], RILL_DTYPE_FP64, &d));
    for (size_t i = 0; i <= k; i++) ((double *)rill_tensor_ptr(&a->items[k]))[i] = base + (double)k;
  }
}

Test(select_input, passes_tensor_arrays_on) {
  for (int32_t m = 0; m < 2; m++) {
    op_harness *h = harness("select_input");
    bind_array(h, "X", "a0", 2, 10);
    bind_array(h, "X", "a1", 3, 20);
    bind_mask(h, "mask", m);
    OK(op_harness_output(h, "Out", "out"));
    OK(op_harness_run(h));
    rill_variable *o = rill_scope_find(op_harness_scope(h), "out");
    cr_assert(o && o->kind == RILL_VARKIND_TENSOR_ARRAY, "branch %d: Out is an array", (int)m);
    size_t n = m ? 3 : 2;
    cr_assert_eq(o->u.array.n, n);
    for (size_t k = 0; k < n; k++) {
      expect_dims(&o->u.array.items[k], DIMS(1, (int64_t)k + 1));
      cr_assert_eq(((double *)rill_tensor_ptr(&o->u.array.items[k]))[k], (m ? 20 : 10) + (double)k);
    }
    op_harness_destroy(h);
  }
}

Test(select_output, passes_selected_rows_on_to_the_masked_branch) {
  op_harness *h = harness("select_output");
  OK(op_harness_input(h, "X", "g", NULL));
  rill_variable *v = rill_scope_find(op_harness_scope(h), "g");
  rill_selected_rows *sr = rill_variable_selected_rows(v);
  cr_assert_not_null(sr);
  const int64_t rows[] = {4, 1};
  OK(rill_selected_rows_set_rows(sr, rows, 2));
  sr->height = 6;
  const double vals[] = {1, 2, 3, 4};
  rill_dims d = {.n = 2, .d = {2, 2}};
  OK(rill_tensor_alloc(&sr->value, RILL_DTYPE_FP64, &d));
  memcpy(rill_tensor_ptr(&sr->value), vals, sizeof vals);
  bind_mask(h, "mask", 1);
  OK(op_harness_output(h, "Out", "o0"));
  OK(op_harness_output(h, "Out", "o1"));
  OK(op_harness_run(h));
  rill_variable *taken = rill_scope_find(op_harness_scope(h), "o1");
  cr_assert(taken && taken->kind == RILL_VARKIND_SELECTED_ROWS, "Out[1] holds selected rows");
  cr_assert_eq(taken->u.rows.nrows, 2);
  cr_assert_eq(taken->u.rows.height, 6);
  cr_assert_eq(taken->u.rows.rows[0], 4);
  expect_close_f64(rill_tensor_ptr(&taken->u.rows.value), vals, 4, 0);
  rill_variable *other = rill_scope_find(op_harness_scope(h), "o0");
  cr_assert(!other || other->kind == RILL_VARKIND_EMPTY ||
                (other->kind == RILL_VARKIND_TENSOR && !rill_tensor_is_set(&other->u.tensor)),
            "the branch not taken holds nothing");
  op_harness_destroy(h);
}

Test(select_input, an_output_of_another_kind_is_an_error_naming_both) {
  op_harness *h = harness("select_input");
  bind_array(h, "X", "arr", 1, 0);
  bind_mask(h, "mask", 0);
  const double one = 1;
  bind_input(h, "X", "dense_out", RILL_DTYPE_FP64, DIMS(1), &one);
  OK(op_harness_output(h, "Out", "dense_out"));
  rill_status *st = op_harness_run(h);
  cr_assert_not_null(st);
  const char *msg = rill_status_message(st);
  cr_assert(strstr(msg, "select_input") && strstr(msg, "dense_out") && strstr(msg, "arr"), "%s", msg);
  rill_status_destroy(st);
  op_harness_destroy(h);
}
