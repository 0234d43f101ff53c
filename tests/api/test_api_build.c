/* Building a program op by op through the public API, as a binding does: ops added
 * through a builder that keeps attributes the schema lacks, each op's shapes inferred by
 * one rill_block_infer_op call, variables redeclared or removed, programs copied. Uses
 * only rill.h. */
#include <criterion/criterion.h>
#include <string.h>

#include "rill.h"
#include "tests/api/api_test.h"

static rill_var_info info_of(const rill_program *p, int32_t block, const char *name) {
  size_t i;
  cr_assert(rill_block_var_index(p, block, name, &i), "no variable %s", name);
  rill_var_info v;
  OK(rill_block_var_info(p, block, i, &v));
  return v;
}

static rill_op_builder *mul_op(const char *out) {
  const char *x[] = {"x"}, *w[] = {"w"}, *o[] = {out};
  rill_op_builder *b;
  OK(rill_op_builder_create("mul", &b));
  OK(rill_op_builder_input(b, "X", x, 1));
  OK(rill_op_builder_input(b, "Y", w, 1));
  OK(rill_op_builder_output(b, "Out", o, 1));
  return b;
}

Test(api_build, infer_op_writes_the_outputs_of_one_op) {
  rill_program *p = declared_x_w_out();
  cr_assert_not(info_of(p, 0, "out").has_tensor, "declared without a tensor description");
  rill_op_builder *b = mul_op("out");
  OK(rill_op_builder_set_strict(b, false));
  OK(rill_op_builder_attr_int(b, "op_role", 0));
  OK(rill_op_builder_attr_string(b, "op_namescope", "/fc/"));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  uint64_t before = rill_program_version(p);
  OK(rill_block_infer_op(p, 0, 0));
  cr_assert_gt(rill_program_version(p), before, "inference is an edit");
  rill_var_info v = info_of(p, 0, "out");
  cr_assert(v.has_tensor);
  cr_assert_eq(v.dtype, RILL_DTYPE_FP32);
  cr_assert_eq(v.ndim, 2);
  cr_assert_eq(v.dims[0], -1);
  cr_assert_eq(v.dims[1], 3);
  OK(rill_program_validate(p));
  rill_program_destroy(p);
}

Test(api_build, a_strict_builder_refuses_attributes_the_schema_lacks) {
  rill_program *p = declared_x_w_out();
  rill_op_builder *b = mul_op("out");
  OK(rill_op_builder_attr_int(b, "op_role", 0));
  expect_code(rill_op_builder_append(b, p, 0), RILL_INVALID_ARGUMENT, "no attribute 'op_role'");
  cr_assert_eq(rill_block_num_ops(p, 0), 0, "nothing added");
  rill_op_builder_destroy(b);
  rill_program_destroy(p);
}

Test(api_build, infer_op_checks_declared_attributes_and_changes_nothing_on_error) {
  rill_program *p = declared_x_w_out();
  rill_op_builder *b = mul_op("out");
  OK(rill_op_builder_set_strict(b, false));
  OK(rill_op_builder_attr_string(b, "x_num_col_dims", "one"));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  uint64_t before = rill_program_version(p);
  expect_code(rill_block_infer_op(p, 0, 0), RILL_INVALID_ARGUMENT,
              "block 0, op #0 (mul): op 'mul': attribute 'x_num_col_dims' is STRING");
  cr_assert_eq(rill_program_version(p), before);
  cr_assert_not(info_of(p, 0, "out").has_tensor, "nothing written on error");
  rill_program_destroy(p);
}

Test(api_build, infer_op_names_the_op_the_slot_and_the_variable) {
  rill_program *p = declared_x_w_out();
  const int64_t bad[] = {5, 3};
  OK(rill_block_add_var(p, 0, "w5", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, bad, 2, 0, true));
  rill_op_builder *b = mul_op("out");
  OK(rill_op_builder_append(b, p, 0));
  const char *w5[] = {"w5"}, *nope[] = {"nope"};
  OK(rill_op_builder_input(b, "Y", w5, 1));
  OK(rill_op_builder_append(b, p, 0));
  OK(rill_op_builder_input(b, "Y", nope, 1));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  OK(rill_block_infer_op(p, 0, 0));
  rill_status *st = rill_block_infer_op(p, 0, 1);
  cr_assert_not_null(st);
  cr_expect(strstr(rill_status_message(st), "block 0, op #1 (mul)"), "%s", rill_status_message(st));
  rill_status_destroy(st);
  expect_code(rill_block_infer_op(p, 0, 2), RILL_NOT_FOUND,
              "input slot Y: variable 'nope' is not declared in block 0");
  expect_code(rill_block_infer_op(p, 0, 3), RILL_OUT_OF_RANGE, "no op #3");
  expect_code(rill_block_infer_op(p, 4, 0), RILL_INVALID_ARGUMENT, "block 4 does not exist");
  rill_program_destroy(p);
}

Test(api_build, infer_op_refuses_an_unknown_op_by_name) {
  rill_program *p = declared_x_w_out();
  const char *x[] = {"x"};
  rill_op_builder *b;
  OK(rill_op_builder_create("no_such_op", &b));
  OK(rill_op_builder_input(b, "X", x, 1));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  expect_code(rill_block_infer_op(p, 0, 0), RILL_UNIMPLEMENTED,
              "program uses ops rill does not have: no_such_op");
  rill_program_destroy(p);
}

Test(api_build, infer_op_sees_variables_of_parent_blocks) {
  rill_program *p = declared_x_w_out();
  int32_t sub;
  OK(rill_program_append_block(p, 0, &sub));
  OK(rill_block_add_var(p, sub, "inner", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, NULL, 0, 0, false));
  OK(rill_var_set_tensor(p, sub, "inner", false, RILL_DTYPE_FP32, NULL, 0, 0));
  rill_op_builder *b = mul_op("inner");
  OK(rill_op_builder_append(b, p, sub));
  rill_op_builder_destroy(b);
  OK(rill_block_infer_op(p, sub, 0));
  rill_var_info v = info_of(p, sub, "inner");
  cr_assert(v.has_tensor);
  cr_assert_eq(v.dims[1], 3);
  rill_program_destroy(p);
}

Test(api_build, set_tensor_and_need_check_feed) {
  rill_program *p = declared_x_w_out();
  const int64_t d[] = {2, -1, 7};
  OK(rill_var_set_tensor(p, 0, "x", true, RILL_DTYPE_INT64, d, 3, 1));
  rill_var_info v = info_of(p, 0, "x");
  cr_assert_eq(v.dtype, RILL_DTYPE_INT64);
  cr_assert_eq(v.ndim, 3);
  cr_assert_eq(v.dims[2], 7);
  cr_assert_eq(v.lod_level, 1);
  const int64_t neg[] = {-2};
  expect_code(rill_var_set_tensor(p, 0, "x", true, RILL_DTYPE_FP32, neg, 1, 0),
              RILL_INVALID_ARGUMENT, "dim 0 is -2");
  expect_code(rill_var_set_tensor(p, 0, "nope", true, RILL_DTYPE_FP32, NULL, 0, 0), RILL_NOT_FOUND,
              "no variable 'nope'");
  cr_assert_eq(info_of(p, 0, "x").dtype, RILL_DTYPE_INT64, "unchanged by a refused edit");
  OK(rill_block_add_var(p, 0, "feed", RILL_VAR_FEED_MINIBATCH, RILL_DTYPE_FP32, NULL, 0, 0, true));
  expect_code(rill_var_set_tensor(p, 0, "feed", true, RILL_DTYPE_FP32, NULL, 0, 0),
              RILL_INVALID_ARGUMENT, "no tensor description");
  OK(rill_var_set_need_check_feed(p, 0, "x", true));
  rill_program *q = reparsed(p);
  cr_assert_eq(info_of(q, 0, "x").lod_level, 1, "the edits are serialized");
  rill_program_destroy(q);
  rill_program_destroy(p);
}

Test(api_build, remove_var_and_copy) {
  rill_program *p = declared_x_w_out();
  rill_program *c;
  OK(rill_program_copy(p, &c));
  OK(rill_block_remove_var(p, 0, "w"));
  cr_assert_eq(rill_block_num_vars(p, 0), 2);
  cr_assert_not(rill_block_var_index(p, 0, "w", NULL));
  size_t i;
  cr_assert(rill_block_var_index(p, 0, "out", &i), "later variables are found after removal");
  cr_assert_eq(i, 1);
  expect_code(rill_block_remove_var(p, 0, "w"), RILL_NOT_FOUND, "no variable 'w'");
  cr_assert_eq(rill_block_num_vars(c, 0), 3, "the copy is independent");
  cr_assert(rill_block_var_index(c, 0, "w", NULL));
  rill_program_destroy(c);
  rill_program_destroy(p);
}

Test(api_build, attribute_values_read_back_typed) {
  rill_program *p = declared_x_w_out();
  rill_op_builder *b = mul_op("out");
  OK(rill_op_builder_set_strict(b, false));
  const int32_t ints[] = {3, -4};
  const float floats[] = {0.5f};
  const char *strs[] = {"fc_0.w_0", "fc_0.w_0@GRAD"};
  OK(rill_op_builder_attr_ints(b, "i", ints, 2));
  OK(rill_op_builder_attr_floats(b, "f", floats, 1));
  OK(rill_op_builder_attr_strings(b, "op_role_var", strs, 2));
  OK(rill_op_builder_attr_long(b, "l", 1LL << 40));
  OK(rill_op_builder_attr_double(b, "d", 0.25));
  OK(rill_op_builder_attr_string(b, "s", "NCHW"));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  rill_attr_value_info a;
  OK(rill_block_op_attr_value(p, 0, 0, attr_pos(p, 0, "i"), &a));
  cr_assert_eq(a.type, 3);
  cr_assert_eq(a.count, 2);
  cr_assert_eq(((const int32_t *)a.items)[1], -4);
  OK(rill_block_op_attr_value(p, 0, 0, attr_pos(p, 0, "f"), &a));
  cr_assert_eq(((const float *)a.items)[0], 0.5f);
  OK(rill_block_op_attr_value(p, 0, 0, attr_pos(p, 0, "op_role_var"), &a));
  cr_assert_str_eq(((const char *const *)a.items)[1], "fc_0.w_0@GRAD");
  OK(rill_block_op_attr_value(p, 0, 0, attr_pos(p, 0, "l"), &a));
  cr_assert_eq(a.i, 1LL << 40);
  OK(rill_block_op_attr_value(p, 0, 0, attr_pos(p, 0, "d"), &a));
  cr_assert_eq(a.f, 0.25);
  OK(rill_block_op_attr_value(p, 0, 0, attr_pos(p, 0, "s"), &a));
  cr_assert_str_eq(a.s, "NCHW");
  expect_code(rill_block_op_attr_value(p, 0, 0, 99, &a), RILL_OUT_OF_RANGE, "no attribute 99");
  rill_program_destroy(p);
}

Test(api_build, set_attrs_of_replaces_and_adds_and_refuses_whole) {
  rill_program *p = declared_x_w_out();
  rill_op_builder *b = mul_op("out");
  OK(rill_op_builder_attr_int(b, "x_num_col_dims", 1));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  rill_op_builder *e;
  OK(rill_op_builder_create("mul", &e));
  OK(rill_op_builder_attr_int(e, "x_num_col_dims", 2));
  OK(rill_op_builder_attr_int(e, "op_role", 1));
  expect_code(rill_op_builder_set_attrs_of(e, p, 0, 0), RILL_INVALID_ARGUMENT,
              "no attribute 'op_role'");
  rill_attr_value_info a;
  OK(rill_block_op_attr_value(p, 0, 0, attr_pos(p, 0, "x_num_col_dims"), &a));
  cr_assert_eq(a.i, 1, "a refused edit changes nothing");
  OK(rill_op_builder_set_strict(e, false));
  uint64_t before = rill_program_version(p);
  OK(rill_op_builder_set_attrs_of(e, p, 0, 0));
  cr_assert_gt(rill_program_version(p), before);
  OK(rill_block_op_attr_value(p, 0, 0, attr_pos(p, 0, "x_num_col_dims"), &a));
  cr_assert_eq(a.i, 2);
  OK(rill_block_op_attr_value(p, 0, 0, attr_pos(p, 0, "op_role"), &a));
  cr_assert_eq(a.i, 1);
  expect_code(rill_op_builder_set_attrs_of(e, p, 0, 5), RILL_OUT_OF_RANGE, "no op #5");
  rill_op_builder_destroy(e);
  rill_program_destroy(p);
}

Test(api_build, var_flags_read_back) {
  rill_program *p = declared_x_w_out();
  OK(rill_var_set_flags(p, 0, "w", true, true, true));
  OK(rill_var_set_need_check_feed(p, 0, "x", true));
  size_t i;
  rill_var_flags f;
  cr_assert(rill_block_var_index(p, 0, "w", &i));
  OK(rill_block_var_flags(p, 0, i, &f));
  cr_assert(f.stop_gradient);
  cr_assert_not(f.need_check_feed);
  cr_assert(rill_block_var_index(p, 0, "x", &i));
  OK(rill_block_var_flags(p, 0, i, &f));
  cr_assert(f.need_check_feed);
  cr_assert_not(f.stop_gradient);
  expect_code(rill_block_var_flags(p, 0, 9, &f), RILL_OUT_OF_RANGE, "no variable #9");
  rill_program_destroy(p);
}
