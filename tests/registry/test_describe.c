#include <criterion/criterion.h>
#include <string.h>

#include "rill.h"

static void has(const char *text, const char *part) {
  cr_assert_not_null(strstr(text, part), "description lacks \"%s\":\n%s", part, text);
}

Test(describe, mul_lists_slots_attrs_kernels_and_gradient) {
  char *s = NULL;
  rill_status *st = rill_op_describe("mul", &s);
  cr_assert_null(st, "%s", rill_status_message(st));
  has(s, "mul\n");
  has(s, "inputs:\n  X");
  has(s, "  Y");
  has(s, "outputs:\n  Out");
  has(s, "x_num_col_dims: INT = 1");
  has(s, "cpu: float32, float64");
  has(s, "gradient: yes");
  rill_free_buffer(s);
}

Test(describe, flags_and_dispensable_slots) {
  char *s = NULL;
  cr_assert_null(rill_op_describe("fill_constant", &s));
  has(s, "ShapeTensorList [duplicable, dispensable, no gradient, read on the host]");
  has(s, "str_value: STRING = \"\"");
  has(s, "place_type: INT = -1 [extra]");
  has(s, "flags: infers from data"); /* its shape tensors' values */
  rill_free_buffer(s);
  cr_assert_null(rill_op_describe("mean", &s));
  has(s, "flags: none");
  rill_free_buffer(s);
  cr_assert_null(rill_op_describe("relu", &s));
  has(s, "flags: in place, fusable activation, fc activation");
  rill_free_buffer(s);
  cr_assert_null(rill_op_describe("checkpoint", &s));
  has(s, "directory: STRING (required) [file path] [policy]");
  has(s, "every_n_steps: LONG = 0 [policy]");
  has(s, "max_to_keep: INT = 3 [policy]");
  rill_free_buffer(s);
  cr_assert_null(rill_op_describe("feed", &s));
  has(s, "flags: feed, kernel shapes");
  has(s, "cpu: any dtype");
  rill_free_buffer(s);
}

Test(describe, unknown_op_is_not_found) {
  char *s = NULL;
  rill_status *st = rill_op_describe("no_such_op", &s);
  cr_assert_eq(rill_status_code(st), RILL_NOT_FOUND);
  cr_assert_not_null(strstr(rill_status_message(st), "no_such_op"));
  cr_assert_null(s);
  rill_status_destroy(st);
}

Test(describe, every_registered_op_describes) {
  for (size_t i = 0; i < rill_op_count(); i++) {
    char *s = NULL;
    rill_status *st = rill_op_describe(rill_op_name(i), &s);
    cr_assert_null(st, "%s: %s", rill_op_name(i), rill_status_message(st));
    has(s, "gradient:");
    rill_free_buffer(s);
  }
  cr_assert_geq(rill_op_count(), 9);
}
