/* Reading programs through the public API (blocks, variables, ops, slots, attributes),
 * the predictor's pass counts and .npy files: what `rill inspect`, `rill dot` and
 * `rill run` are built on. Uses only rill.h, as an application would. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rill.h"
#include "tests/api/api_test.h"

/* feed x -> scale(x) = y -> fetch y, with a second block under block 0. */
static rill_program *small_program(void) {
  rill_program *p;
  OK(rill_program_create(&p));
  const int64_t dims[] = {-1, 3};
  OK(rill_block_add_var(p, 0, "feed", RILL_VAR_FEED_MINIBATCH, RILL_DTYPE_FP32, NULL, 0, 0, true));
  OK(rill_block_add_var(p, 0, "fetch", RILL_VAR_FETCH_LIST, RILL_DTYPE_FP32, NULL, 0, 0, true));
  OK(rill_block_add_var(p, 0, "x", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, dims, 2, 1, false));
  OK(rill_block_add_var(p, 0, "y", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, dims, 2, 0, true));
  const char *feed[] = {"feed"}, *fetch[] = {"fetch"}, *x[] = {"x"}, *y[] = {"y"};
  rill_op_builder *b;
  OK(rill_op_builder_create("feed", &b));
  OK(rill_op_builder_input(b, "X", feed, 1));
  OK(rill_op_builder_output(b, "Out", x, 1));
  OK(rill_op_builder_attr_int(b, "col", 0));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  OK(rill_op_builder_create("scale", &b));
  OK(rill_op_builder_input(b, "X", x, 1));
  OK(rill_op_builder_output(b, "Out", y, 1));
  OK(rill_op_builder_attr_float(b, "scale", 2.0f));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  OK(rill_op_builder_create("fetch", &b));
  OK(rill_op_builder_input(b, "X", y, 1));
  OK(rill_op_builder_output(b, "Out", fetch, 1));
  OK(rill_op_builder_attr_int(b, "col", 0));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  int32_t sub;
  OK(rill_program_append_block(p, 0, &sub));
  cr_assert_eq(sub, 1);
  return p;
}

Test(api_inspect, blocks_and_variables) {
  rill_program *p = small_program();
  cr_assert_eq(rill_program_num_blocks(p), 2);
  cr_assert_eq(rill_block_parent(p, 0), -1);
  cr_assert_eq(rill_block_parent(p, 1), 0);
  cr_assert_eq(rill_block_parent(p, 7), -1);
  cr_assert_not(rill_program_file_version(p, NULL), "a built program has no file version");
  size_t i;
  cr_assert(rill_block_var_index(p, 0, "x", &i));
  rill_var_info v;
  OK(rill_block_var_info(p, 0, i, &v));
  cr_assert_str_eq(v.name, "x");
  cr_assert_eq(v.type, RILL_VAR_LOD_TENSOR);
  cr_assert(v.has_tensor);
  cr_assert_eq(v.dtype, RILL_DTYPE_FP32);
  cr_assert_eq(v.ndim, 2);
  cr_assert_eq(v.dims[0], -1);
  cr_assert_eq(v.dims[1], 3);
  cr_assert_eq(v.lod_level, 1);
  cr_assert_not(v.persistable);
  cr_assert(rill_block_var_index(p, 0, "y", &i));
  OK(rill_block_var_info(p, 0, i, &v));
  cr_assert(v.persistable);
  cr_assert_not(rill_block_var_index(p, 1, "x", NULL), "parents are not searched");
  cr_assert_not(rill_block_var_index(p, 0, "nope", NULL));
  expect_code(rill_block_var_info(p, 0, 99, &v), RILL_OUT_OF_RANGE, "no variable #99");
  expect_code(rill_block_var_info(p, 5, 0, &v), RILL_OUT_OF_RANGE, "block 5 does not exist");
  rill_program_destroy(p);
}

/* rill_block_vars_packed: every variable from #from, ten NUL-terminated fields each,
 * agreeing with rill_block_var_info and rill_block_var_flags. */
Test(api_inspect, variables_packed) {
  rill_program *p = small_program();
  OK(rill_var_set_flags(p, 0, "y", true, true, true));
  OK(rill_var_set_need_check_feed(p, 0, "x", true));
  void *buf;
  size_t size;
  OK(rill_block_vars_packed(p, 0, 0, &buf, &size));
  static const char want[] =
      "feed\0\0" "9\0" "0\0" "5\0" "0\0" "1\0" "0\0" "0\0" "0\0"
      "fetch\0\0" "10\0" "0\0" "5\0" "0\0" "1\0" "0\0" "0\0" "0\0"
      "x\0" "-1,3\0" "7\0" "1\0" "5\0" "1\0" "0\0" "0\0" "0\0" "1\0"
      "y\0" "-1,3\0" "7\0" "1\0" "5\0" "0\0" "1\0" "1\0" "1\0" "0";
  cr_assert_eq(size, sizeof want, "%zu bytes, %zu expected", size, sizeof want);
  cr_assert_eq(memcmp(buf, want, sizeof want), 0);
  rill_free_buffer(buf);
  OK(rill_block_vars_packed(p, 0, 3, &buf, &size));
  cr_assert_eq(size, 23);
  cr_assert_str_eq(buf, "y", "from #3: y alone");
  rill_free_buffer(buf);
  OK(rill_block_vars_packed(p, 0, 4, &buf, &size));
  cr_assert_eq(size, 0, "from the count: nothing");
  rill_free_buffer(buf);
  OK(rill_block_vars_packed(p, 1, 0, &buf, &size));
  cr_assert_eq(size, 0, "block 1 declares none");
  rill_free_buffer(buf);
  expect_code(rill_block_vars_packed(p, 0, 5, &buf, &size), RILL_OUT_OF_RANGE,
              "no variable #5");
  expect_code(rill_block_vars_packed(p, 2, 0, &buf, &size), RILL_OUT_OF_RANGE,
              "block 2 does not exist");
  expect_code(rill_block_vars_packed(p, 0, 0, NULL, &size), RILL_INVALID_ARGUMENT,
              "NULL argument");
  rill_program_destroy(p);
}

Test(api_inspect, ops_slots_and_attributes) {
  rill_program *p = small_program();
  cr_assert_eq(rill_block_num_ops(p, 0), 3);
  rill_op_info op;
  OK(rill_block_op_info(p, 0, 0, &op));
  cr_assert_str_eq(op.type, "feed");
  cr_assert(op.registered && op.is_feed && !op.is_fetch);
  OK(rill_block_op_info(p, 0, 2, &op));
  cr_assert(op.is_fetch && !op.is_feed);
  OK(rill_block_op_info(p, 0, 1, &op));
  cr_assert_str_eq(op.type, "scale");
  cr_assert(op.registered && !op.is_feed && !op.is_fetch);
  cr_assert_eq(op.ninputs, 1);
  cr_assert_eq(op.noutputs, 1);
  rill_slot_info s;
  OK(rill_block_op_input_info(p, 0, 1, 0, &s));
  cr_assert_str_eq(s.name, "X");
  cr_assert_eq(s.nargs, 1);
  cr_assert_str_eq(s.args[0], "x");
  OK(rill_block_op_output_info(p, 0, 1, 0, &s));
  cr_assert_str_eq(s.name, "Out");
  cr_assert_str_eq(s.args[0], "y");
  expect_code(rill_block_op_input_info(p, 0, 1, 3, &s), RILL_OUT_OF_RANGE, "no slot 3");
  expect_code(rill_block_op_info(p, 0, 3, &op), RILL_OUT_OF_RANGE, "no op #3");

  bool saw_scale = false;
  for (size_t k = 0; k < op.nattrs; k++) {
    rill_attr_info a;
    OK(rill_block_op_attr_info(p, 0, 1, k, &a));
    cr_assert_eq(a.nblocks, 0);
    if (strcmp(a.name, "scale") != 0) continue;
    saw_scale = true;
    cr_assert_eq(a.type, RILL_PLUGIN_ATTR_FLOAT);
    cr_assert_eq(a.count, 1);
    cr_assert_not(a.has_int);
    char *text;
    OK(rill_block_op_attr_text(p, 0, 1, k, &text));
    cr_assert_str_eq(text, "2");
    rill_free_buffer(text);
  }
  cr_assert(saw_scale);
  OK(rill_block_op_info(p, 0, 0, &op));
  rill_attr_info a;
  bool saw_col = false;
  for (size_t k = 0; k < op.nattrs; k++) {
    OK(rill_block_op_attr_info(p, 0, 0, k, &a));
    if (strcmp(a.name, "col") == 0) {
      saw_col = true;
      cr_assert(a.has_int);
      cr_assert_eq(a.int_value, 0);
      cr_assert_eq(a.type, RILL_PLUGIN_ATTR_INT);
    }
  }
  cr_assert(saw_col);
  expect_code(rill_block_op_attr_info(p, 0, 0, op.nattrs, &a), RILL_OUT_OF_RANGE, "attributes");
  rill_program_destroy(p);
}

Test(api_inspect, a_parsed_program_keeps_its_file_version) {
  rill_program *p = small_program();
  rill_program *q = reparsed(p);
  int64_t v = -7;
  if (rill_program_file_version(q, &v)) cr_assert_geq(v, 0);
  else cr_assert_eq(v, -7, "untouched when absent");
  cr_assert_eq(rill_block_num_vars(q, 0), 4);
  rill_program_destroy(q);
  rill_program_destroy(p);
}

Test(api_inspect, npy_round_trip) {
  const int64_t dims[] = {2, 3};
  rill_tensor *t;
  OK(rill_tensor_create(RILL_DTYPE_FP32, dims, 2, &t));
  float *d = rill_tensor_data(t);
  for (int i = 0; i < 6; i++) d[i] = (float)i * 0.5f - 1.0f;
  char path[] = "/tmp/rill_api_npy_XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  close(fd);
  OK(rill_tensor_save_npy(t, path));
  rill_tensor *back;
  OK(rill_tensor_load_npy(path, &back));
  cr_assert_eq(rill_tensor_dtype(back), RILL_DTYPE_FP32);
  cr_assert_eq(rill_tensor_ndim(back), 2);
  cr_assert_eq(rill_tensor_dims(back)[1], 3);
  cr_assert_eq(memcmp(rill_tensor_data(back), d, 6 * sizeof(float)), 0);
  rill_tensor_destroy(back);
  rill_tensor_destroy(t);
  unlink(path);
  rill_tensor *none = NULL;
  rill_status *st = rill_tensor_load_npy("/nonexistent/rill.npy", &none);
  cr_assert_not_null(st);
  cr_assert(strstr(rill_status_message(st), "/nonexistent/rill.npy"), "%s", rill_status_message(st));
  rill_status_destroy(st);
  cr_assert_null(none);
}

Test(api_inspect, predictor_pass_counts) {
  rill_predictor_config *c;
  OK(rill_predictor_config_create(RILL_SHARED_DIR "/models/abalone_bn_mlp", &c));
  rill_predictor *p;
  OK(rill_predictor_create(c, &p));
  rill_pass_counts n;
  OK(rill_predictor_pass_counts(p, &n));
  cr_assert_geq(n.dropouts, 3);
  cr_assert_geq(n.bn_folded, 1);
  cr_assert_geq(n.fc_fused, 6);
  rill_predictor_destroy(p);
  OK(rill_predictor_config_set_opt_level(c, 0));
  OK(rill_predictor_create(c, &p));
  OK(rill_predictor_pass_counts(p, &n));
  cr_assert_eq(n.dropouts + n.bn_folded + n.fc_fused + n.conv_fused + n.inplace, 0);
  rill_predictor_destroy(p);
  rill_predictor_config_destroy(c);
  expect_code(rill_predictor_pass_counts(NULL, &n), RILL_INVALID_ARGUMENT, "NULL");
}

Test(api_inspect, status_wrap_prefixes_context) {
  rill_status *st = rill_status_create(RILL_NOT_FOUND, "no such thing");
  st = rill_status_wrap(st, "input '%s'", "x");
  cr_assert_str_eq(rill_status_message(st), "input 'x': no such thing");
  cr_assert_eq(rill_status_code(st), RILL_NOT_FOUND);
  rill_status_destroy(st);
  cr_assert_null(rill_status_wrap(NULL, "nothing"));
}
