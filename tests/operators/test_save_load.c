/* save, load, save_combine, load_combine, increment. Bytes are Paddle's tensor streams
 * (checked against the 50-byte example of FORMATS.md), files are written crash-safely,
 * overwrite=false refuses an existing file, load_combine insists on EOF, and a bad file
 * leaves the outputs untouched. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "framework/base/alloc.h"
#include "framework/io/file.h"
#include "op_test.h"

static char dir[256];

static void make_dir(void) {
  snprintf(dir, sizeof dir, "%s/op_save_XXXXXX", RILL_BINARY_DIR);
  cr_assert_not_null(mkdtemp(dir));
}
static void drop_dir(void) { rill_status_destroy(rill_dir_remove_tree(dir)); }

TestSuite(save, .init = make_dir, .fini = drop_dir);

static const float X[6] = {1, 2, 3, 4, 5, 6};

static void save_one(const char *path, const char *type, bool overwrite, rill_status **st) {
  op_harness *h = harness(type);
  bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(2, 3), X);
  OK(op_harness_attr_string(h, "file_path", path));
  OK(op_harness_attr_bool(h, "overwrite", overwrite));
  *st = op_harness_run(h);
  op_harness_destroy(h);
}

Test(save, writes_paddles_bytes_and_load_reads_them_back) {
  char path[400];
  snprintf(path, sizeof path, "%s/sub/dir/x", dir); /* directories are created */
  rill_status *st;
  save_one(path, "save", true, &st);
  OK(st);
  uint8_t *data;
  size_t n;
  OK(rill_file_read_all(path, 1 << 20, &data, &n));
  cr_assert_eq(n, 50);
  static const uint8_t head[26] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 6, 0, 0, 0,
                                   0x08, 0x05, 0x10, 0x02, 0x10, 0x03};
  cr_assert(memcmp(data, head, 26) == 0);
  cr_assert(memcmp(data + 26, X, 24) == 0);
  rill_free(data);
  op_harness *h = harness("load");
  OK(op_harness_output(h, "Out", "y"));
  OK(op_harness_attr_string(h, "file_path", path));
  OK(op_harness_run(h));
  rill_tensor *y = op_harness_tensor(h, "y");
  expect_dims(y, DIMS(2, 3));
  cr_assert(memcmp(rill_tensor_ptr(y), X, 24) == 0);
  op_harness_destroy(h);
}

Test(save, overwrite_false_refuses_an_existing_file) {
  char path[400];
  snprintf(path, sizeof path, "%s/x", dir);
  rill_status *st;
  save_one(path, "save", false, &st);
  OK(st);
  save_one(path, "save", false, &st);
  cr_assert_eq(rill_status_code(st), RILL_ALREADY_EXISTS);
  EXPECT_ERROR(st, "save", path, "overwrite is false");
  save_one(path, "save_combine", false, &st);
  EXPECT_ERROR(st, "save_combine", path, "overwrite is false");
  save_one(path, "save", true, &st);
  OK(st);
}

Test(save, failed_write_keeps_the_old_file) {
  char path[400];
  snprintf(path, sizeof path, "%s/x", dir);
  rill_status *st;
  save_one(path, "save", true, &st);
  OK(st);
  for (int f = RILL_FILE_FAULT_OPEN; f <= RILL_FILE_FAULT_RENAME; f++) {
    rill_file_inject_fault((rill_file_fault)f);
    save_one(path, "save_combine", true, &st);
    rill_file_inject_fault(RILL_FILE_FAULT_NONE);
    cr_assert_eq(rill_status_code(st), RILL_IO, "fault %d", f);
    EXPECT_ERROR(st, "save_combine", path);
    size_t n;
    uint8_t *data;
    OK(rill_file_read_all(path, 1 << 20, &data, &n));
    cr_assert_eq(n, 50);
    rill_free(data);
  }
}

static op_harness *load_combine(const char *path, int nout) {
  op_harness *h = harness("load_combine");
  static const char *names[] = {"a", "b", "c"};
  for (int i = 0; i < nout; i++) OK(op_harness_output(h, "Out", names[i]));
  OK(op_harness_attr_string(h, "file_path", path));
  return h;
}

Test(save, combine_roundtrip_checks_eof_and_leaves_outputs_on_error) {
  char path[400];
  snprintf(path, sizeof path, "%s/params", dir);
  op_harness *h = harness("save_combine");
  bind_input(h, "X", "a", RILL_DTYPE_FP32, DIMS(2, 3), X);
  int64_t ids[2] = {7, 9};
  bind_input(h, "X", "b", RILL_DTYPE_INT64, DIMS(2), ids);
  OK(op_harness_attr_string(h, "file_path", path));
  OK(op_harness_run(h));
  op_harness_destroy(h);

  h = load_combine(path, 2);
  OK(op_harness_run(h));
  cr_assert(memcmp(rill_tensor_ptr(op_harness_tensor(h, "a")), X, 24) == 0);
  cr_assert_eq(((int64_t *)rill_tensor_ptr(op_harness_tensor(h, "b")))[1], 9);
  op_harness_destroy(h);

  /* one output for two variables: bytes left */
  h = load_combine(path, 1);
  EXPECT_ERROR(op_harness_run(h), "load_combine", path, "bytes left after the last variable");
  rill_tensor *a0 = op_harness_tensor(h, "a");
  cr_assert(!a0 || !rill_tensor_is_set(a0), "a failed load must leave the outputs untouched");
  op_harness_destroy(h);
  /* three outputs: the third is missing */
  h = load_combine(path, 3);
  EXPECT_ERROR(op_harness_run(h), "load_combine", "'c'");
  rill_tensor *a = op_harness_tensor(h, "a");
  cr_assert(!a || !rill_tensor_is_set(a), "a failed load must leave the outputs untouched");
  op_harness_destroy(h);
  /* every truncation is an error naming the file */
  size_t n;
  uint8_t *data;
  OK(rill_file_read_all(path, 1 << 20, &data, &n));
  char cut[400];
  snprintf(cut, sizeof cut, "%s/cut", dir);
  for (size_t k = 0; k < n; k++) {
    FILE *f = fopen(cut, "wb");
    cr_assert_eq(fwrite(data, 1, k, f), k);
    fclose(f);
    h = load_combine(cut, 2);
    EXPECT_ERROR(op_harness_run(h), "load_combine", cut);
    op_harness_destroy(h);
  }
  rill_free(data);
  /* a missing file */
  h = load_combine("/nonexistent/params", 1);
  EXPECT_ERROR(op_harness_run(h), "load_combine", "/nonexistent/params");
  op_harness_destroy(h);
}

Test(save, fp16_on_save_and_on_load) {
  char path[400];
  snprintf(path, sizeof path, "%s/h", dir);
  op_harness *h = harness("save");
  float v[4] = {1.0f, -2.5f, 65504.0f, 1e-8f};
  bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(4), v);
  OK(op_harness_attr_string(h, "file_path", path));
  OK(op_harness_attr_bool(h, "save_as_fp16", true));
  OK(op_harness_run(h));
  op_harness_destroy(h);
  h = harness("load");
  OK(op_harness_output(h, "Out", "y"));
  OK(op_harness_attr_string(h, "file_path", path));
  OK(op_harness_run(h));
  rill_tensor *y = op_harness_tensor(h, "y");
  cr_assert_eq(y->dtype, RILL_DTYPE_FP16);
  const uint16_t *hv = rill_tensor_ptr(y);
  cr_assert_eq(hv[0], 0x3c00);
  cr_assert_eq(hv[1], 0xc100);
  cr_assert_eq(hv[2], 0x7bff);
  cr_assert_eq(hv[3], 0x0000); /* below half's smallest subnormal */
  op_harness_destroy(h);
  /* load_as_fp16 converts a float32 file */
  char p32[400];
  snprintf(p32, sizeof p32, "%s/f", dir);
  rill_status *st;
  save_one(p32, "save", true, &st);
  OK(st);
  h = harness("load");
  OK(op_harness_output(h, "Out", "y"));
  OK(op_harness_attr_string(h, "file_path", p32));
  OK(op_harness_attr_bool(h, "load_as_fp16", true));
  OK(op_harness_run(h));
  y = op_harness_tensor(h, "y");
  cr_assert_eq(y->dtype, RILL_DTYPE_FP16);
  cr_assert_eq(((const uint16_t *)rill_tensor_ptr(y))[5], 0x4600); /* 6.0 */
  op_harness_destroy(h);
}

Test(save, unsupported_modes_say_so) {
  op_harness *h = harness("load_combine");
  OK(op_harness_output(h, "Out", "a"));
  OK(op_harness_attr_string(h, "file_path", "bytes"));
  OK(op_harness_attr_bool(h, "model_from_memory", true));
  rill_status *st = op_harness_run(h);
  cr_assert_eq(rill_status_code(st), RILL_UNIMPLEMENTED);
  EXPECT_ERROR(st, "model_from_memory");
  op_harness_destroy(h);
  h = harness("load");
  OK(op_harness_output(h, "Out", "a"));
  OK(op_harness_attr_string(h, "file_path", "x"));
  OK(op_harness_attr_long(h, "seek", 4));
  EXPECT_ERROR(op_harness_run(h), "seek 4");
  op_harness_destroy(h);
}

Test(increment, adds_step_in_place) {
  op_harness *h = harness("increment");
  int64_t v = 41;
  bind_input(h, "X", "c", RILL_DTYPE_INT64, DIMS(1), &v);
  OK(op_harness_output(h, "Out", "c"));
  OK(op_harness_run(h));
  OK(op_harness_run(h));
  cr_assert_eq(*(int64_t *)rill_tensor_ptr(op_harness_tensor(h, "c")), 43);
  op_harness_destroy(h);
  h = harness("increment");
  float f[2] = {1, 2};
  bind_input(h, "X", "c", RILL_DTYPE_FP32, DIMS(2), f);
  OK(op_harness_output(h, "Out", "c"));
  EXPECT_ERROR(op_harness_run(h), "increment", "one element");
  op_harness_destroy(h);
}

Test(save, checkpoint_op_outside_an_executor_writes_before_returning) {
  op_harness *h = harness("checkpoint");
  bind_input(h, "X", "w", RILL_DTYPE_FP32, DIMS(2, 3), X);
  int64_t step = 5;
  bind_input(h, "Step", "step", RILL_DTYPE_INT64, DIMS(1), &step);
  char ck[400];
  snprintf(ck, sizeof ck, "%s/ck", dir);
  OK(op_harness_attr_string(h, "directory", ck));
  OK(op_harness_run(h));
  char path[500];
  snprintf(path, sizeof path, "%s/checkpoint_5/w", ck);
  uint8_t *data;
  size_t n;
  OK(rill_file_read_all(path, 1 << 20, &data, &n));
  cr_assert_eq(n, 50);
  cr_assert(memcmp(data + 26, X, 24) == 0);
  rill_free(data);
  snprintf(path, sizeof path, "%s/checkpoint_5/step", ck);
  cr_assert(rill_path_is_file(path), "the step counter is saved with X");
  /* a Step that is not an integer */
  op_harness_destroy(h);
  h = harness("checkpoint");
  bind_input(h, "X", "w", RILL_DTYPE_FP32, DIMS(2, 3), X);
  bind_input(h, "Step", "fstep", RILL_DTYPE_FP32, DIMS(1), X);
  OK(op_harness_attr_string(h, "directory", ck));
  EXPECT_ERROR(op_harness_run(h), "checkpoint", "Step", "fstep");
  op_harness_destroy(h);
}
