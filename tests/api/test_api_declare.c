/* rill_block_declare_var: a variable's whole description in one call, the same as the
 * calls it stands for (add_var, set_flags, set_need_check_feed, set_tensor), and on error
 * nothing declared. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "rill.h"
#include "tests/api/api_test.h"

/* The ProgramDesc bytes of p, compared with q's. */
static void expect_same_bytes(const rill_program *p, const rill_program *q) {
  void *a, *b;
  size_t na, nb;
  OK(rill_program_serialize(p, &a, &na));
  OK(rill_program_serialize(q, &b, &nb));
  cr_expect_eq(na, nb, "%zu bytes against %zu", na, nb);
  cr_expect(na == nb && memcmp(a, b, na) == 0, "the serialized programs differ");
  rill_free_buffer(a);
  rill_free_buffer(b);
}

static void var_at(const rill_program *p, const char *name, rill_var_info *v,
                   rill_var_flags *f) {
  size_t i;
  cr_assert(rill_block_var_index(p, 0, name, &i), "%s declared", name);
  OK(rill_block_var_info(p, 0, i, v));
  OK(rill_block_var_flags(p, 0, i, f));
}

Test(api_declare, same_description_as_the_separate_calls) {
  rill_program *one, *many;
  OK(rill_program_create(&one));
  OK(rill_program_create(&many));
  const int64_t wd[] = {4, 3}, xd[] = {-1, 4};
  /* a parameter */
  OK(rill_block_declare_var(one, 0, "w", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, wd, 2, 0,
                            RILL_DECLARE_PERSISTABLE | RILL_DECLARE_IS_PARAMETER));
  OK(rill_block_add_var(many, 0, "w", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, wd, 2, 0, true));
  OK(rill_var_set_flags(many, 0, "w", true, true, false));
  /* a checked feed that stops gradients */
  OK(rill_block_declare_var(one, 0, "x", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, xd, 2, 1,
                            RILL_DECLARE_STOP_GRADIENT | RILL_DECLARE_NEED_CHECK_FEED));
  OK(rill_block_add_var(many, 0, "x", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, xd, 2, 1, false));
  OK(rill_var_set_flags(many, 0, "x", false, false, true));
  OK(rill_var_set_need_check_feed(many, 0, "x", true));
  /* a temporary left to inference */
  OK(rill_block_declare_var(one, 0, "t", RILL_VAR_LOD_TENSOR, RILL_DTYPE_INT64, NULL, 0, 0,
                            RILL_DECLARE_NO_TENSOR));
  OK(rill_block_add_var(many, 0, "t", RILL_VAR_LOD_TENSOR, RILL_DTYPE_INT64, NULL, 0, 0, false));
  OK(rill_var_set_tensor(many, 0, "t", false, RILL_DTYPE_FP32, NULL, 0, 0));
  /* a plain variable and one without a tensor type (NO_TENSOR changes nothing there) */
  OK(rill_block_declare_var(one, 0, "y", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, xd, 2, 0, 0));
  OK(rill_block_add_var(many, 0, "y", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, xd, 2, 0, false));
  OK(rill_block_declare_var(one, 0, "s", RILL_VAR_STEP_SCOPES, RILL_DTYPE_FP32, NULL, 0, 0,
                            RILL_DECLARE_NO_TENSOR));
  OK(rill_block_add_var(many, 0, "s", RILL_VAR_STEP_SCOPES, RILL_DTYPE_FP32, NULL, 0, 0, false));
  expect_same_bytes(one, many);

  rill_var_info v;
  rill_var_flags f;
  var_at(one, "w", &v, &f);
  cr_expect(v.persistable && v.is_parameter && !f.stop_gradient && v.has_tensor);
  cr_expect_eq(v.ndim, 2);
  cr_expect_eq(v.dims[1], 3);
  var_at(one, "x", &v, &f);
  cr_expect(!v.persistable && f.stop_gradient && f.need_check_feed);
  cr_expect_eq(v.lod_level, 1);
  var_at(one, "t", &v, &f);
  cr_expect(!v.has_tensor, "left for the next op's inference");
  cr_expect_eq(v.ndim, 0);
  rill_program_destroy(one);
  rill_program_destroy(many);
}

Test(api_declare, a_declared_temporary_is_inferred_by_its_op) {
  rill_program *p;
  OK(rill_program_create(&p));
  const int64_t xd[] = {-1, 4}, wd[] = {4, 3};
  OK(rill_block_declare_var(p, 0, "x", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, xd, 2, 0, 0));
  OK(rill_block_declare_var(p, 0, "w", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, wd, 2, 0,
                            RILL_DECLARE_PERSISTABLE | RILL_DECLARE_IS_PARAMETER));
  OK(rill_block_declare_var(p, 0, "out", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, NULL, 0, 0,
                            RILL_DECLARE_NO_TENSOR));
  const char *x[] = {"x"}, *w[] = {"w"}, *out[] = {"out"};
  rill_op_builder *b;
  OK(rill_op_builder_create("mul", &b));
  OK(rill_op_builder_input(b, "X", x, 1));
  OK(rill_op_builder_input(b, "Y", w, 1));
  OK(rill_op_builder_output(b, "Out", out, 1));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  OK(rill_block_infer_op(p, 0, 0));
  rill_var_info v;
  rill_var_flags f;
  var_at(p, "out", &v, &f);
  cr_assert(v.has_tensor);
  cr_assert_eq(v.ndim, 2);
  cr_assert_eq(v.dims[0], -1);
  cr_assert_eq(v.dims[1], 3);
  rill_program_destroy(p);
}

Test(api_declare, errors_name_the_variable_and_declare_nothing) {
  rill_program *p;
  OK(rill_program_create(&p));
  const int64_t d[] = {2};
  OK(rill_block_declare_var(p, 0, "a", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, d, 1, 0, 0));
  uint64_t version = rill_program_version(p);
  expect_code(rill_block_declare_var(p, 0, "a", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, d, 1, 0,
                                     RILL_DECLARE_IS_PARAMETER),
              RILL_ALREADY_EXISTS, "'a'");
  expect_code(rill_block_declare_var(p, 0, "b", RILL_VAR_LOD_TENSOR, (rill_dtype)99, d, 1, 0, 0),
              RILL_INVALID_ARGUMENT, "'b'");
  expect_code(rill_block_declare_var(p, 0, "c", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, d, 1, 0,
                                     64),
              RILL_INVALID_ARGUMENT, "'c'");
  const int64_t bad[] = {-3};
  expect_code(rill_block_declare_var(p, 0, "e", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, bad, 1, 0,
                                     RILL_DECLARE_NO_TENSOR),
              RILL_INVALID_ARGUMENT, "'e'");
  expect_code(rill_block_declare_var(p, 3, "f", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, d, 1, 0, 0),
              RILL_INVALID_ARGUMENT, "block 3");
  cr_expect_eq(rill_block_num_vars(p, 0), 1, "nothing declared by the failed calls");
  cr_expect_eq(rill_program_version(p), version);
  rill_var_info v;
  rill_var_flags f;
  var_at(p, "a", &v, &f);
  cr_expect(!v.is_parameter, "the existing variable is unchanged");
  rill_program_destroy(p);
}
