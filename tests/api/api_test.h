/* Checks shared by the public-API tests, which use only rill.h as an application
 * would. */
#ifndef RILL_TESTS_API_API_TEST_H
#define RILL_TESTS_API_API_TEST_H

#include <criterion/criterion.h>
#include <string.h>

#include "rill.h"

#define OK(expr)                                                                   \
  do {                                                                             \
    rill_status *st_ = (expr);                                                     \
    cr_assert_null(st_, "%s: %s", #expr, rill_status_message(st_));                \
  } while (0)

/* st fails with `code` and a message containing `needle`; st is destroyed. */
static inline void expect_code(rill_status *st, rill_code code, const char *needle) {
  cr_assert_not_null(st, "expected %s", rill_code_name(code));
  cr_expect_eq(rill_status_code(st), code, "%s", rill_status_message(st));
  cr_expect(strstr(rill_status_message(st), needle), "'%s' lacks '%s'", rill_status_message(st),
            needle);
  rill_status_destroy(st);
}

/* A copy of p through its ProgramDesc bytes (rill_program_serialize, then _parse). */
static inline rill_program *reparsed(const rill_program *p) {
  void *bytes;
  size_t size;
  OK(rill_program_serialize(p, &bytes, &size));
  rill_program *q;
  OK(rill_program_parse(bytes, size, &q));
  rill_free_buffer(bytes);
  return q;
}

/* The position of attribute `name` among op #op's of block 0 (fails the test if none). */
static inline size_t attr_pos(const rill_program *p, size_t op, const char *name) {
  rill_op_info info;
  OK(rill_block_op_info(p, 0, op, &info));
  for (size_t k = 0; k < info.nattrs; k++) {
    rill_attr_value_info a;
    OK(rill_block_op_attr_value(p, 0, op, k, &a));
    if (strcmp(a.name, name) == 0) return k;
  }
  cr_assert_fail("op #%zu has no attribute %s", op, name);
  return 0;
}

/* A program declaring x [-1, 4] and w [4, 3], and out without a tensor description (for
 * the next op writing it to infer). */
static inline rill_program *declared_x_w_out(void) {
  rill_program *p;
  OK(rill_program_create(&p));
  const int64_t xd[] = {-1, 4}, wd[] = {4, 3};
  OK(rill_block_add_var(p, 0, "x", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, xd, 2, 0, false));
  OK(rill_block_add_var(p, 0, "w", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, wd, 2, 0, true));
  OK(rill_block_add_var(p, 0, "out", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, NULL, 0, 0, false));
  OK(rill_var_set_tensor(p, 0, "out", false, RILL_DTYPE_FP32, NULL, 0, 0));
  return p;
}

#endif
