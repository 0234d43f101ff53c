/* The predictor and ops that touch files (schema flags READS_FILES / WRITES_FILES): a
 * model holding one is refused unless the config allows file ops inside a directory,
 * and then only on paths that resolve inside it. The executor runs them as before. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "framework/registry/registry.h"
#include "rill.h"

#define OK(expr)                                                                     \
  do {                                                                               \
    rill_status *st_ = (expr);                                                       \
    cr_assert_null(st_, "%s: %s", #expr, rill_status_message(st_));                  \
  } while (0)

static rill_status *add_op(rill_program *p, const char *type, const char *in_slot, const char *in,
                           const char *out_slot, const char *out, const char *path) {
  rill_op_builder *b;
  RILL_TRY(rill_op_builder_create(type, &b));
  rill_status *st = NULL;
  if (in) st = rill_op_builder_input(b, in_slot, &in, 1);
  if (!st && out) st = rill_op_builder_output(b, out_slot, &out, 1);
  if (!st && path) st = rill_op_builder_attr_string(b, "file_path", path);
  if (!st && (!strcmp(type, "feed") || !strcmp(type, "fetch")))
    st = rill_op_builder_attr_int(b, "col", 0);
  if (!st) st = rill_op_builder_append(b, p, 0);
  rill_op_builder_destroy(b);
  return st;
}

/* A model directory `dir`: y = relu(x) with feed and fetch ops, and one op `type`
 * (save: X = x; load: Out = z) at `path` (NULL: none). */
static void write_model(const char *dir, const char *type, const char *path) {
  rill_program *p;
  OK(rill_program_create(&p));
  const int64_t d[] = {-1, 3};
  OK(rill_block_add_var(p, 0, "feed", RILL_VAR_FEED_MINIBATCH, RILL_DTYPE_FP32, NULL, 0, 0, true));
  OK(rill_block_add_var(p, 0, "fetch", RILL_VAR_FETCH_LIST, RILL_DTYPE_FP32, NULL, 0, 0, true));
  const char *const vars[] = {"x", "y", "z"};
  for (int i = 0; i < 3; i++)
    OK(rill_block_add_var(p, 0, vars[i], RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, d, 2, 0, false));
  OK(add_op(p, "feed", "X", "feed", "Out", "x", NULL));
  OK(add_op(p, "relu", "X", "x", "Out", "y", NULL));
  if (type && !strcmp(type, "save")) OK(add_op(p, "save", "X", "x", NULL, NULL, path));
  if (type && !strcmp(type, "load")) OK(add_op(p, "load", NULL, NULL, "Out", "z", path));
  OK(add_op(p, "fetch", "X", "y", "Out", "fetch", NULL));
  cr_assert(mkdir(dir, 0777) == 0 || errno == EEXIST);
  char file[1024];
  snprintf(file, sizeof file, "%s/__model__", dir);
  OK(rill_program_save(p, file));
  rill_program_destroy(p);
}

/* rill_predictor_create on `dir` with file ops allowed in `allow` (NULL: not). */
static rill_status *create(const char *dir, const char *allow, rill_predictor **out) {
  rill_predictor_config *c;
  OK(rill_predictor_config_create(dir, &c));
  OK(rill_predictor_config_set_threads(c, 1));
  if (allow) OK(rill_predictor_config_allow_file_ops(c, allow));
  rill_status *st = rill_predictor_create(c, out);
  rill_predictor_config_destroy(c);
  return st;
}

static void run_once(rill_predictor *p) {
  const int64_t dims[] = {2, 3};
  rill_tensor *x, *y = NULL;
  OK(rill_tensor_create(RILL_DTYPE_FP32, dims, 2, &x));
  float *v = rill_tensor_data(x);
  for (int i = 0; i < 6; i++) v[i] = (float)i - 2.5f;
  const char *name = "x";
  OK(rill_predictor_run(p, &name, &x, 1, &y));
  cr_assert_eq(((const float *)rill_tensor_data(y))[5], 2.5f);
  rill_tensor_destroy(x);
  rill_tensor_destroy(y);
}

/* Creating fails; the message names the op and the path; nothing is written there. */
static void expect_refused(const char *model, const char *allow, const char *op, const char *path,
                           const char *check_absent) {
  rill_predictor *p = NULL;
  rill_status *st = create(model, allow, &p);
  cr_assert_not_null(st, "%s at '%s' was allowed", op, path);
  cr_assert_null(p);
  cr_assert_eq(rill_status_code(st), RILL_FAILED_PRECONDITION, "%s", rill_status_message(st));
  const char *msg = rill_status_message(st);
  char want[1200];
  snprintf(want, sizeof want, "'%s'", op);
  cr_assert(strstr(msg, want), "no op in: %s", msg);
  snprintf(want, sizeof want, "file_path '%s'", path);
  cr_assert(strstr(msg, want), "no path in: %s", msg);
  cr_assert(strstr(msg, model), "no model in: %s", msg);
  rill_status_destroy(st);
  if (check_absent) cr_assert(access(check_absent, F_OK) != 0, "%s was created", check_absent);
}

typedef struct tmp {
  char root[64];
  char model[128], allowed[128], outside[128];
} tmp;

static void tmp_init(tmp *t) {
  strcpy(t->root, "/tmp/rill_fileops_XXXXXX");
  cr_assert_not_null(mkdtemp(t->root));
  snprintf(t->model, sizeof t->model, "%s/model", t->root);
  snprintf(t->allowed, sizeof t->allowed, "%s/allowed", t->root);
  snprintf(t->outside, sizeof t->outside, "%s/outside", t->root);
  cr_assert_eq(mkdir(t->allowed, 0777), 0);
  cr_assert_eq(mkdir(t->outside, 0777), 0);
}

static void tmp_cleanup(tmp *t) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", t->root);
  cr_assert_eq(system(cmd), 0);
}

Test(file_ops, schemas_flag_the_ops_that_touch_files) {
  OK(rill_registry_init());
  const char *const writers[] = {"save", "save_combine", "checkpoint"};
  const char *const readers[] = {"load", "load_combine"};
  for (size_t i = 0; i < 3; i++)
    cr_assert(rill_schema_find(writers[i])->flags & RILL_OP_WRITES_FILES, "%s", writers[i]);
  for (size_t i = 0; i < 2; i++)
    cr_assert(rill_schema_find(readers[i])->flags & RILL_OP_READS_FILES, "%s", readers[i]);
  cr_assert_not(rill_schema_find("relu")->flags & (RILL_OP_WRITES_FILES | RILL_OP_READS_FILES));
}

Test(file_ops, save_is_refused_by_default) {
  tmp t;
  tmp_init(&t);
  char target[256];
  snprintf(target, sizeof target, "%s/stolen", t.outside);
  write_model(t.model, "save", target);
  expect_refused(t.model, NULL, "save", target, target);
  /* The same model without the op loads and runs. */
  write_model(t.model, NULL, NULL);
  rill_predictor *p;
  OK(create(t.model, NULL, &p));
  run_once(p);
  rill_predictor_destroy(p);
  tmp_cleanup(&t);
}

Test(file_ops, load_is_refused_by_default) {
  write_model("/tmp/rill_fileops_load_model", "load", "/etc/passwd");
  expect_refused("/tmp/rill_fileops_load_model", NULL, "load", "/etc/passwd", NULL);
  cr_assert_eq(system("rm -rf /tmp/rill_fileops_load_model"), 0);
}

Test(file_ops, save_inside_the_allowed_directory_runs) {
  tmp t;
  tmp_init(&t);
  char target[256];
  snprintf(target, sizeof target, "%s/sub/x.bin", t.allowed);
  write_model(t.model, "save", target);
  rill_predictor *p;
  OK(create(t.model, t.allowed, &p));
  cr_assert(access(target, F_OK) != 0, "written before any run");
  run_once(p);
  rill_predictor_destroy(p);
  cr_assert(access(target, F_OK) == 0, "save did not write %s", target);
  /* A relative directory is resolved when set: the same model, allowed through "..". */
  char rel[256];
  snprintf(rel, sizeof rel, "%s/../allowed/.", t.outside);
  OK(create(t.model, rel, &p));
  rill_predictor_destroy(p);
  tmp_cleanup(&t);
}

Test(file_ops, paths_outside_the_allowed_directory_are_refused) {
  tmp t;
  tmp_init(&t);
  char target[256], link[256];
  /* An absolute path elsewhere. */
  snprintf(target, sizeof target, "%s/x.bin", t.outside);
  write_model(t.model, "save", target);
  expect_refused(t.model, t.allowed, "save", target, target);
  /* A ".." that climbs out, through a directory that exists and one that does not. */
  snprintf(target, sizeof target, "%s/../outside/x.bin", t.allowed);
  write_model(t.model, "save", target);
  expect_refused(t.model, t.allowed, "save", target, NULL);
  snprintf(target, sizeof target, "%s/new/../../outside/x.bin", t.allowed);
  write_model(t.model, "save", target);
  expect_refused(t.model, t.allowed, "save", target, NULL);
  char escaped[256];
  snprintf(escaped, sizeof escaped, "%s/x.bin", t.outside);
  cr_assert(access(escaped, F_OK) != 0);
  /* A symbolic link inside that points out. */
  snprintf(link, sizeof link, "%s/link", t.allowed);
  cr_assert_eq(symlink(t.outside, link), 0);
  snprintf(target, sizeof target, "%s/link/x.bin", t.allowed);
  write_model(t.model, "save", target);
  expect_refused(t.model, t.allowed, "save", target, escaped);
  /* The allowed directory's own parent, and a load from elsewhere. */
  write_model(t.model, "save", t.root);
  expect_refused(t.model, t.allowed, "save", t.root, NULL);
  write_model(t.model, "load", "/etc/passwd");
  expect_refused(t.model, t.allowed, "load", "/etc/passwd", NULL);
  /* An allowed directory that does not exist is an error of its own. */
  rill_predictor_config *c;
  OK(rill_predictor_config_create(t.model, &c));
  snprintf(target, sizeof target, "%s/missing", t.root);
  rill_status *st = rill_predictor_config_allow_file_ops(c, target);
  cr_assert_not_null(st);
  cr_assert(strstr(rill_status_message(st), "missing"), "%s", rill_status_message(st));
  rill_status_destroy(st);
  rill_predictor_config_destroy(c);
  tmp_cleanup(&t);
}

/* Training programs run through the executor, which keeps running save as written. */
Test(file_ops, the_executor_still_runs_save) {
  tmp t;
  tmp_init(&t);
  char target[256];
  snprintf(target, sizeof target, "%s/x.bin", t.outside);
  rill_program *p;
  OK(rill_program_create(&p));
  const int64_t d[] = {2};
  OK(rill_block_add_var(p, 0, "x", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, d, 1, 0, false));
  OK(add_op(p, "save", "X", "x", NULL, NULL, target));
  rill_scope *scope;
  rill_executor *exe;
  rill_tensor *x;
  OK(rill_scope_create(NULL, &scope));
  OK(rill_executor_create(NULL, &exe));
  OK(rill_tensor_create(RILL_DTYPE_FP32, d, 1, &x));
  const char *name = "x";
  OK(rill_executor_run(exe, p, scope, &name, &x, 1, NULL, 0, NULL));
  cr_assert(access(target, F_OK) == 0, "the executor's save did not write %s", target);
  rill_tensor_destroy(x);
  rill_executor_destroy(exe);
  rill_scope_destroy(scope);
  rill_program_destroy(p);
  tmp_cleanup(&t);
}
