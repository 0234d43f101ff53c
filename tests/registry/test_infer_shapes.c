/* rill_program_infer_shapes (rill.h "program support"): inferred descriptions are
 * written back into the variables, declared ones are checked, and an error leaves the
 * program as it was. rill_op_has_attribute answers from the schemas. */
#include <criterion/criterion.h>
#include <string.h>

#include "framework/program/program.h"
#include "rill.h"

#define OK(expr)                                                              \
  do {                                                                        \
    rill_status *ok_st_ = (expr);                                             \
    cr_assert_null(ok_st_, "%s: %s", #expr, rill_status_message(ok_st_));     \
  } while (0)

/* x [-1, 4] * w [4, 3] -> out, declared without a tensor description. */
static rill_program *mul_program(const int64_t *wdims) {
  rill_program *p;
  OK(rill_program_create(&p));
  int64_t xd[] = {-1, 4};
  OK(rill_block_add_var(p, 0, "x", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, xd, 2, 1, false));
  OK(rill_block_add_var(p, 0, "w", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, wdims, 2, 0, true));
  OK(rill_block_add_var(p, 0, "out", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, NULL, 0, 0, false));
  rill_block_find_var(p, 0, "out")->has_tensor = false;
  rill_op_builder *b;
  OK(rill_op_builder_create("mul", &b));
  const char *x = "x", *w = "w", *o = "out";
  OK(rill_op_builder_input(b, "X", &x, 1));
  OK(rill_op_builder_input(b, "Y", &w, 1));
  OK(rill_op_builder_output(b, "Out", &o, 1));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  return p;
}

Test(infer_shapes, writes_inferred_descriptions_back) {
  rill_program *p = mul_program((int64_t[]){4, 3});
  uint64_t v0 = rill_program_version(p);
  OK(rill_program_infer_shapes(p));
  const rill_var_desc *out = rill_block_find_var(p, 0, "out");
  cr_assert(out->has_tensor);
  cr_assert_eq(out->dtype, RILL_DTYPE_FP32);
  cr_assert_eq(out->dims.n, 2);
  cr_assert_eq(out->dims.d[0], -1);
  cr_assert_eq(out->dims.d[1], 3);
  cr_assert_eq(out->lod_level, 1, "mul passes X's LoD level on");
  cr_assert_neq(rill_program_version(p), v0);
  /* The result survives a serialize/parse round trip. */
  void *bytes;
  size_t size;
  OK(rill_program_serialize(p, &bytes, &size));
  rill_program *q;
  OK(rill_program_parse(bytes, size, &q));
  rill_free_buffer(bytes);
  cr_assert_eq(rill_block_find_var(q, 0, "out")->dims.d[1], 3);
  rill_program_destroy(q);
  rill_program_destroy(p);
}

Test(infer_shapes, mismatch_fails_and_changes_nothing) {
  rill_program *p = mul_program((int64_t[]){5, 3});
  uint64_t v0 = rill_program_version(p);
  rill_status *st = rill_program_infer_shapes(p);
  cr_assert_not_null(st);
  cr_assert(strstr(rill_status_message(st), "mul"), "%s", rill_status_message(st));
  rill_status_destroy(st);
  cr_assert(!rill_block_find_var(p, 0, "out")->has_tensor);
  cr_assert_eq(rill_program_version(p), v0);
  rill_program_destroy(p);
}

Test(op_has_attribute, answers_from_the_schema) {
  cr_assert(rill_op_has_attribute("dropout", "is_test"));
  cr_assert(rill_op_has_attribute("batch_norm", "momentum"));
  cr_assert(!rill_op_has_attribute("mul", "is_test"));
  cr_assert(!rill_op_has_attribute("no_such_op", "is_test"));
  cr_assert(!rill_op_has_attribute(NULL, "is_test"));
  cr_assert(!rill_op_has_attribute("dropout", NULL));
}
