/* `rill run` on a model whose ops touch files: refused unless --allow-file-ops names a
 * directory holding the path. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "framework/io/npy.h"
#include "rill.h"
#include "support/shell.h"

#define RILL RILL_BINARY_DIR "/rill"

#define OK(expr)                                                                     \
  do {                                                                               \
    rill_status *st_ = (expr);                                                       \
    cr_assert_null(st_, "%s: %s", #expr, rill_status_message(st_));                  \
  } while (0)


static void add_op(rill_program *p, const char *type, const char *in_slot, const char *in,
                   const char *out_slot, const char *out, const char *path) {
  rill_op_builder *b;
  OK(rill_op_builder_create(type, &b));
  if (in) OK(rill_op_builder_input(b, in_slot, &in, 1));
  if (out) OK(rill_op_builder_output(b, out_slot, &out, 1));
  if (path) OK(rill_op_builder_attr_string(b, "file_path", path));
  if (!strcmp(type, "feed") || !strcmp(type, "fetch")) OK(rill_op_builder_attr_int(b, "col", 0));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
}

/* dir/model: y = relu(x) and a save of x to `path`; dir/x.npy: an input. */
static void write_model(const char *dir, const char *path) {
  rill_program *p;
  OK(rill_program_create(&p));
  const int64_t d[] = {-1, 3};
  OK(rill_block_add_var(p, 0, "feed", RILL_VAR_FEED_MINIBATCH, RILL_DTYPE_FP32, NULL, 0, 0, true));
  OK(rill_block_add_var(p, 0, "fetch", RILL_VAR_FETCH_LIST, RILL_DTYPE_FP32, NULL, 0, 0, true));
  OK(rill_block_add_var(p, 0, "x", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, d, 2, 0, false));
  OK(rill_block_add_var(p, 0, "y", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, d, 2, 0, false));
  add_op(p, "feed", "X", "feed", "Out", "x", NULL);
  add_op(p, "relu", "X", "x", "Out", "y", NULL);
  add_op(p, "save", "X", "x", NULL, NULL, path);
  add_op(p, "fetch", "X", "y", "Out", "fetch", NULL);
  char file[512];
  snprintf(file, sizeof file, "%s/model", dir);
  cr_assert(mkdir(file, 0777) == 0 || errno == EEXIST);
  snprintf(file, sizeof file, "%s/model/__model__", dir);
  OK(rill_program_save(p, file));
  rill_program_destroy(p);
  const int64_t xd[] = {1, 3};
  rill_tensor *x;
  OK(rill_tensor_create(RILL_DTYPE_FP32, xd, 2, &x));
  snprintf(file, sizeof file, "%s/x.npy", dir);
  OK(rill_npy_save(file, x));
  rill_tensor_destroy(x);
}

Test(cli_file_ops, run_refuses_save_unless_allowed_inside_a_directory) {
  char root[] = "/tmp/rill_cli_fileops_XXXXXX";
  cr_assert_not_null(mkdtemp(root));
  char allowed[128], outside[128], target[256];
  snprintf(allowed, sizeof allowed, "%s/allowed", root);
  snprintf(outside, sizeof outside, "%s/outside", root);
  cr_assert_eq(mkdir(allowed, 0777), 0);
  cr_assert_eq(mkdir(outside, 0777), 0);

  /* By default: refused, naming the op and the path; nothing written. */
  snprintf(target, sizeof target, "%s/x.bin", outside);
  write_model(root, target);
  char *out;
  int rc = sh(&out, "'%s' run '%s/model' --input '%s/x.npy' 2>&1", RILL, root, root);
  cr_assert_eq(rc, 1, "exit %d: %s", rc, out);
  cr_assert(strstr(out, "op #2 'save' writes files"), "%s", out);
  cr_assert(strstr(out, target), "%s", out);
  cr_assert(strstr(out, "--allow-file-ops"), "%s", out);
  cr_assert(access(target, F_OK) != 0, "save wrote %s", target);
  free(out);

  /* Allowed elsewhere: still refused. */
  rc = sh(&out, "'%s' run '%s/model' --input '%s/x.npy' --allow-file-ops '%s' 2>&1", RILL, root,
          root, allowed);
  cr_assert_eq(rc, 1, "exit %d: %s", rc, out);
  cr_assert(strstr(out, "outside the directory allowed for file ops"), "%s", out);
  cr_assert(access(target, F_OK) != 0, "save wrote %s", target);
  free(out);

  /* A relative path that climbs out with "..", run from inside the allowed directory. */
  write_model(root, "../outside/x.bin");
  rc = sh(&out, "cd '%s' && '%s' run '%s/model' --input '%s/x.npy' --allow-file-ops . 2>&1",
          allowed, RILL, root, root);
  cr_assert_eq(rc, 1, "exit %d: %s", rc, out);
  cr_assert(strstr(out, "file_path '../outside/x.bin'"), "%s", out);
  cr_assert(access(target, F_OK) != 0, "save wrote %s", target);
  free(out);

  /* Inside: runs and writes. */
  snprintf(target, sizeof target, "%s/x.bin", allowed);
  write_model(root, target);
  rc = sh(&out, "'%s' run '%s/model' --input '%s/x.npy' --allow-file-ops '%s' 2>&1", RILL, root,
          root, allowed);
  cr_assert_eq(rc, 0, "exit %d: %s", rc, out);
  cr_assert(access(target, F_OK) == 0, "save did not write %s: %s", target, out);
  free(out);

  /* A missing directory is a runtime error naming it. */
  rc = sh(&out, "'%s' run '%s/model' --input '%s/x.npy' --allow-file-ops '%s/nope' 2>&1", RILL,
          root, root, root);
  cr_assert_eq(rc, 1, "exit %d: %s", rc, out);
  cr_assert(strstr(out, "nope"), "%s", out);
  free(out);
  rc = sh(&out, "'%s' run '%s/model' --allow-file-ops 2>&1", RILL, root);
  cr_assert_eq(rc, 2, "no DIR is a usage error: %s", out);
  free(out);

  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  cr_assert_eq(system(cmd), 0);
}
