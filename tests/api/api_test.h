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

#endif
