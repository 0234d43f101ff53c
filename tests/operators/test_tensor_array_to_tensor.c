/* tensor_array_to_tensor: concatenating and stacking items of shapes [2, k, 3] along
 * every axis against index arithmetic worked out here, in float32 and float64; its
 * gradient as the adjoint of the forward (<dOut, concat(X)> = sum_k <dX_k, X_k> for every
 * dOut, which a linear op's gradient must satisfy) and as the split of dOut; errors. */
#include "op_test.h"

#include "framework/data/scope.h"

enum { NI = 3 };
static const int64_t ext[NI] = {1, 3, 2}; /* item k is [2, ext[k], 3] for concat on axis 1 */

/* An array variable `name` in h's scope holding NI items; item k's element (a, b, c) is
 * 100 k + 10 a + b + 0.5 c (`same` gives every item the shape [2, 2, 3]). */
static void bind_array(op_harness *h, const char *slot, const char *name, rill_dtype dt,
                       bool same) {
  OK(op_harness_input(h, slot, name, NULL));
  rill_variable *v = rill_scope_find(op_harness_scope(h), name);
  cr_assert_not_null(v);
  rill_tensor_array *a = rill_variable_array(v);
  cr_assert_not_null(a);
  OK(rill_tensor_array_resize(a, NI));
  for (int k = 0; k < NI; k++) {
    int64_t e = same ? 2 : ext[k];
    rill_dims d = {.n = 3, .d = {2, e, 3}};
    OK(rill_tensor_alloc(&a->items[k], dt, &d));
    for (int i = 0; i < 2; i++)
      for (int j = 0; j < e; j++)
        for (int c = 0; c < 3; c++) {
          double val = 100.0 * k + 10.0 * i + j + 0.5 * c;
          size_t at = (size_t)((i * e + j) * 3 + c);
          if (dt == RILL_DTYPE_FP64) ((double *)rill_tensor_ptr(&a->items[k]))[at] = val;
          else ((float *)rill_tensor_ptr(&a->items[k]))[at] = (float)val;
        }
  }
}

static double get(const rill_tensor *t, size_t i) {
  return t->dtype == RILL_DTYPE_FP64 ? ((const double *)rill_tensor_ptr(t))[i]
                                     : ((const float *)rill_tensor_ptr(t))[i];
}

static void check_concat(rill_dtype dt) {
  op_harness *h = harness("tensor_array_to_tensor");
  bind_array(h, "X", "arr", dt, false);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_output(h, "OutIndex", "idx"));
  OK(op_harness_attr_int(h, "axis", 1));
  OK(op_harness_run(h));
  rill_tensor *o = op_harness_tensor(h, "out");
  expect_dims(o, DIMS(2, 6, 3));
  for (int i = 0; i < 2; i++)
    for (int r = 0; r < 6; r++)
      for (int c = 0; c < 3; c++) {
        int k = r < 1 ? 0 : r < 4 ? 1 : 2, j = r - (k == 0 ? 0 : k == 1 ? 1 : 4);
        double want = 100.0 * k + 10.0 * i + j + 0.5 * c;
        cr_assert(get(o, (size_t)((i * 6 + r) * 3 + c)) == want, "(%d, %d, %d)", i, r, c);
      }
  const int32_t *idx = rill_tensor_ptr(op_harness_tensor(h, "idx"));
  for (int k = 0; k < NI; k++) cr_assert_eq(idx[k], ext[k]);
  op_harness_destroy(h);
}

Test(tensor_array_to_tensor, concatenates_along_the_axis_fp32) { check_concat(RILL_DTYPE_FP32); }
Test(tensor_array_to_tensor, concatenates_along_the_axis_fp64) { check_concat(RILL_DTYPE_FP64); }

Test(tensor_array_to_tensor, stacks_along_a_new_axis_negative_too) {
  for (int axis = -4; axis < 4; axis++) {
    op_harness *h = harness("tensor_array_to_tensor");
    bind_array(h, "X", "arr", RILL_DTYPE_FP64, true);
    OK(op_harness_output(h, "Out", "out"));
    OK(op_harness_attr_int(h, "axis", axis));
    OK(op_harness_attr_bool(h, "use_stack", true));
    OK(op_harness_run(h));
    int ax = axis < 0 ? axis + 4 : axis;
    rill_tensor *o = op_harness_tensor(h, "out");
    int64_t src[3] = {2, 2, 3}, d[4];
    for (int i = 0, j = 0; i < 4; i++) d[i] = i == ax ? NI : src[j++];
    expect_dims(o, d, 4);
    /* element at out index (p0..p3): item p[ax], the rest its (a, b, c) */
    for (size_t flat = 0; flat < (size_t)(NI * 12); flat++) {
      int64_t p[4], rem = (int64_t)flat;
      for (int i = 3; i >= 0; i--) {
        p[i] = rem % d[i];
        rem /= d[i];
      }
      int64_t q[3];
      for (int i = 0, j = 0; i < 4; i++)
        if (i != ax) q[j++] = p[i];
      double want = 100.0 * p[ax] + 10.0 * q[0] + q[1] + 0.5 * q[2];
      cr_assert(get(o, flat) == want, "axis %d, element %zu", axis, flat);
    }
    op_harness_destroy(h);
  }
}

/* The gradient is the forward's adjoint, for concat and stack on every axis. */
Test(tensor_array_to_tensor, gradient_is_the_adjoint) {
  for (int stack = 0; stack < 2; stack++)
    for (int axis = 0; axis < 3 + stack; axis++) {
      if (!stack && axis != 1) continue; /* items differ along axis 1 only */
      op_harness *h = harness("tensor_array_to_tensor");
      bind_array(h, "X", "arr", RILL_DTYPE_FP64, stack);
      OK(op_harness_output(h, "Out", "out"));
      OK(op_harness_attr_int(h, "axis", axis));
      OK(op_harness_attr_bool(h, "use_stack", stack));
      OK(op_harness_run(h));
      rill_tensor *o = op_harness_tensor(h, "out");
      int64_t n = rill_tensor_numel(o);
      rill_tensor *g = op_harness_make(RILL_DTYPE_FP64, o->dims.d, (size_t)o->dims.n, NULL);
      double lhs = 0;
      for (int64_t i = 0; i < n; i++) {
        ((double *)rill_tensor_ptr(g))[i] = sin(0.37 * (double)i + axis);
        lhs += ((double *)rill_tensor_ptr(g))[i] * get(o, (size_t)i);
      }
      op_harness *gh = harness("tensor_array_to_tensor_grad");
      bind_array(gh, "X", "arr", RILL_DTYPE_FP64, stack);
      OK(op_harness_input(gh, "Out@GRAD", "out@GRAD", g));
      OK(op_harness_output(gh, "X@GRAD", "arr@GRAD"));
      OK(op_harness_attr_int(gh, "axis", axis));
      OK(op_harness_attr_bool(gh, "use_stack", stack));
      OK(op_harness_run(gh));
      rill_variable *xv = rill_scope_find(op_harness_scope(gh), "arr");
      rill_variable *gv = rill_scope_find(op_harness_scope(gh), "arr@GRAD");
      cr_assert(gv && gv->kind == RILL_VARKIND_TENSOR_ARRAY && gv->u.array.n == NI);
      double rhs = 0;
      for (int k = 0; k < NI; k++) {
        const rill_tensor *xk = &xv->u.array.items[k], *gk = &gv->u.array.items[k];
        cr_assert(rill_dims_equal(&xk->dims, &gk->dims), "item %d shaped like X's", k);
        for (int64_t i = 0; i < rill_tensor_numel(xk); i++) rhs += get(gk, (size_t)i) * get(xk, (size_t)i);
      }
      cr_assert(fabs(lhs - rhs) <= 1e-9 * (1 + fabs(lhs)), "stack %d axis %d: %.12g vs %.12g",
                stack, axis, lhs, rhs);
      op_harness_free_tensor(g);
      op_harness_destroy(gh);
      op_harness_destroy(h);
    }
}

Test(tensor_array_to_tensor, errors_name_the_op_and_the_variable) {
  op_harness *h = harness("tensor_array_to_tensor");
  bind_array(h, "X", "parts", RILL_DTYPE_FP32, false);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_int(h, "axis", 0)); /* the items differ along axis 1 */
  EXPECT_ERROR(op_harness_run(h), "tensor_array_to_tensor", "item 1 of X 'parts'", "axis 0");
  op_harness_destroy(h);
  h = harness("tensor_array_to_tensor");
  bind_array(h, "X", "parts", RILL_DTYPE_FP32, false);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_int(h, "axis", 3));
  EXPECT_ERROR(op_harness_run(h), "tensor_array_to_tensor", "axis 3 is out of range", "'parts'");
  op_harness_destroy(h);
}
