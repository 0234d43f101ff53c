/* rill_block_insert_op_packed: an op described in one buffer of NUL-terminated fields,
 * inserted and inferred in one call; every malformed description is refused with the
 * field at fault and leaves the program as it was. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "rill.h"
#include "tests/api/api_test.h"

/* The description's bytes: a string literal whose fields are separated by "\0", with
 * the final NUL of the literal ending the last field. */
#define PACKED(lit) lit, sizeof(lit)

static const char MUL[] =
    "mul\0" "2\0" "X\0" "1\0" "x\0" "Y\0" "1\0" "w\0"
    "1\0" "Out\0" "1\0" "out\0"
    "3\0" "x_num_col_dims\0" "0\0" "1\0" "op_role\0" "0\0" "0\0" "op_namescope\0" "2\0" "/fc/";

Test(api_packed, inserts_and_infers_in_one_call) {
  rill_program *p = declared_x_w_out();
  uint64_t before = rill_program_version(p);
  OK(rill_block_insert_op_packed(p, 0, SIZE_MAX, PACKED(MUL), true));
  cr_assert_gt(rill_program_version(p), before);
  cr_assert_eq(rill_block_num_ops(p, 0), 1);
  size_t i;
  cr_assert(rill_block_var_index(p, 0, "out", &i));
  rill_var_info v;
  OK(rill_block_var_info(p, 0, i, &v));
  cr_assert(v.has_tensor, "inferred by the same call");
  cr_assert_eq(v.ndim, 2);
  cr_assert_eq(v.dims[0], -1);
  cr_assert_eq(v.dims[1], 3);
  rill_attr_value_info a;
  OK(rill_block_op_attr_value(p, 0, 0, attr_pos(p, 0, "op_namescope"), &a));
  cr_assert_str_eq(a.s, "/fc/");
  OK(rill_program_validate(p));
  rill_program_destroy(p);
}

Test(api_packed, every_attribute_type_reads_back) {
  rill_program *p = declared_x_w_out();
  static const char spec[] =
      "mul\0" "2\0" "X\0" "1\0" "x\0" "Y\0" "1\0" "w\0" "1\0" "Out\0" "1\0" "out\0"
      "10\0"
      "i\0" "0\0" "-7\0"
      "f\0" "1\0" "0.1\0"
      "s\0" "2\0" "NCHW\0"
      "is\0" "3\0" "2\0" "3\0" "-2147483648\0"
      "fs\0" "4\0" "1\0" "2.5\0"
      "ss\0" "5\0" "2\0" "a\0" "\0"
      "b\0" "6\0" "1\0"
      "l\0" "9\0" "1099511627776\0"
      "ls\0" "11\0" "0\0"
      "d\0" "15\0" "0.1";
  OK(rill_block_insert_op_packed(p, 0, 0, PACKED(spec), false));
  rill_attr_value_info a;
  OK(rill_block_op_attr_value(p, 0, 0, attr_pos(p, 0, "i"), &a));
  cr_assert_eq(a.i, -7);
  OK(rill_block_op_attr_value(p, 0, 0, attr_pos(p, 0, "f"), &a));
  cr_assert_eq((float)a.f, (float)0.1, "FLOAT is the double rounded to float");
  OK(rill_block_op_attr_value(p, 0, 0, attr_pos(p, 0, "s"), &a));
  cr_assert_str_eq(a.s, "NCHW");
  OK(rill_block_op_attr_value(p, 0, 0, attr_pos(p, 0, "is"), &a));
  cr_assert_eq(a.count, 2);
  cr_assert_eq(((const int32_t *)a.items)[1], INT32_MIN);
  OK(rill_block_op_attr_value(p, 0, 0, attr_pos(p, 0, "fs"), &a));
  cr_assert_eq(((const float *)a.items)[0], 2.5f);
  OK(rill_block_op_attr_value(p, 0, 0, attr_pos(p, 0, "ss"), &a));
  cr_assert_eq(a.count, 2);
  cr_assert_str_eq(((const char *const *)a.items)[1], "", "an empty string item");
  OK(rill_block_op_attr_value(p, 0, 0, attr_pos(p, 0, "b"), &a));
  cr_assert_eq(a.i, 1);
  OK(rill_block_op_attr_value(p, 0, 0, attr_pos(p, 0, "l"), &a));
  cr_assert_eq(a.i, 1LL << 40);
  OK(rill_block_op_attr_value(p, 0, 0, attr_pos(p, 0, "ls"), &a));
  cr_assert_eq(a.count, 0);
  OK(rill_block_op_attr_value(p, 0, 0, attr_pos(p, 0, "d"), &a));
  cr_assert_eq(a.f, 0.1, "FLOAT64 keeps every bit");
  rill_program_destroy(p);
}

static void refused(const char *spec, size_t len, const char *want) {
  rill_program *p = declared_x_w_out();
  uint64_t before = rill_program_version(p);
  expect_code(rill_block_insert_op_packed(p, 0, SIZE_MAX, spec, len, true),
              RILL_INVALID_ARGUMENT, want);
  cr_assert_eq(rill_block_num_ops(p, 0), 0, "nothing added for: %s", want);
  cr_assert_eq(rill_program_version(p), before, "nothing changed for: %s", want);
  rill_program_destroy(p);
}

Test(api_packed, malformed_descriptions_are_refused_by_field) {
  refused(MUL, sizeof MUL - 1, "ends before its op_namescope"); /* last NUL cut */
  refused(MUL, 3, "ends before its op type");
  refused(PACKED("mul\0" "x\0"), "input slot count 'x' is not an integer");
  refused(PACKED("mul\0" "999\0"), "input slot count '999' is not an integer in [0, 5]");
  refused(PACKED("mul\0" "0\0" "0\0" "1\0" "i\0" "0\0" "2147483648"),
          "i '2147483648' is not an integer");
  refused(PACKED("mul\0" "0\0" "0\0" "1\0" "b\0" "6\0" "2"), "b '2' is not an integer in [0, 1]");
  refused(PACKED("mul\0" "0\0" "0\0" "1\0" "f\0" "1\0" "1.5x"), "f '1.5x' is not a number");
  refused(PACKED("mul\0" "0\0" "0\0" "1\0" "v\0" "13\0" "x"), "cannot carry");
  refused(PACKED("mul\0" "0\0" "0\0" "1\0" "v\0" "99\0" "x"), "attribute type '99'");
  refused(PACKED("mul\0" "0\0" "0\0" "0\0" "extra"), "6 bytes left after the description");
  refused(PACKED("\0" "0\0" "0\0" "0"), "empty op type");
}

Test(api_packed, a_failed_inference_removes_the_op) {
  rill_program *p = declared_x_w_out();
  static const char bad[] = /* Y names a variable nobody declared */
      "mul\0" "2\0" "X\0" "1\0" "x\0" "Y\0" "1\0" "nope\0" "1\0" "Out\0" "1\0" "out\0" "0";
  uint64_t before = rill_program_version(p);
  rill_status *st = rill_block_insert_op_packed(p, 0, SIZE_MAX, PACKED(bad), true);
  cr_assert(st, "inference must fail");
  cr_assert(strstr(rill_status_message(st), "mul") && strstr(rill_status_message(st), "nope"),
            "names the op and the variable: %s", rill_status_message(st));
  rill_status_destroy(st);
  cr_assert_eq(rill_block_num_ops(p, 0), 0);
  cr_assert_eq(rill_program_version(p) > before, true, "the insert and removal are edits");
  size_t i;
  cr_assert(rill_block_var_index(p, 0, "out", &i));
  rill_var_info v;
  OK(rill_block_var_info(p, 0, i, &v));
  cr_assert_not(v.has_tensor, "the output is left as declared");
  expect_code(rill_block_insert_op_packed(p, 7, SIZE_MAX, PACKED(MUL), true),
              RILL_INVALID_ARGUMENT, "block 7 does not exist");
  expect_code(rill_block_insert_op_packed(p, 0, 5, PACKED(MUL), true), RILL_OUT_OF_RANGE,
              "past the end");
  rill_program_destroy(p);
}
