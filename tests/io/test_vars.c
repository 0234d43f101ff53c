/* rill_program_save_vars / rill_program_load_vars (rill.h "program support"): one file
 * per variable or one combined file, byte-identical round trips, and loads that fail
 * (missing, truncated, extra bytes, wrong shape, escaping names) leave the scope as it
 * was. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "framework/program/program.h"
#include "rill.h"
#include "support/fail_alloc.h"

#define OK(expr)                                                              \
  do {                                                                        \
    rill_status *ok_st_ = (expr);                                             \
    cr_assert_null(ok_st_, "%s: %s", #expr, rill_status_message(ok_st_));     \
  } while (0)

static char dir[64];

static void make_dir(void) {
  strcpy(dir, "/tmp/rill_vars_XXXXXX");
  cr_assert_not_null(mkdtemp(dir));
}

static void remove_dir(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  cr_assert_eq(system(cmd), 0);
}

TestSuite(program_vars, .init = make_dir, .fini = remove_dir);

static rill_program *program(int64_t bdim) {
  rill_program *p;
  OK(rill_program_create(&p));
  OK(rill_block_add_var(p, 0, "a", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, (int64_t[]){2, 3}, 2, 0,
                        true));
  OK(rill_block_add_var(p, 0, "b", RILL_VAR_LOD_TENSOR, RILL_DTYPE_INT64, (int64_t[]){bdim}, 1, 0,
                        true));
  return p;
}

static void fill(rill_scope *s, const char *name, rill_dtype dt, const int64_t *dims, size_t nd,
                 int seed) {
  rill_tensor *t;
  OK(rill_tensor_create(dt, dims, nd, &t));
  unsigned char *d = rill_tensor_data(t);
  for (size_t i = 0; i < rill_tensor_byte_size(t); i++) d[i] = (unsigned char)(i * 7 + seed);
  OK(rill_scope_set_tensor(s, name, t));
  rill_tensor_destroy(t);
}

static rill_scope *filled_scope(int seed) {
  rill_scope *s;
  OK(rill_scope_create(NULL, &s));
  fill(s, "a", RILL_DTYPE_FP32, (int64_t[]){2, 3}, 2, seed);
  fill(s, "b", RILL_DTYPE_INT64, (int64_t[]){4}, 1, seed + 1);
  return s;
}

static bool same(rill_scope *x, rill_scope *y, const char *name) {
  rill_tensor *a, *b;
  OK(rill_scope_get_tensor(x, name, &a));
  OK(rill_scope_get_tensor(y, name, &b));
  bool eq = rill_tensor_byte_size(a) == rill_tensor_byte_size(b) &&
            memcmp(rill_tensor_data(a), rill_tensor_data(b), rill_tensor_byte_size(a)) == 0;
  rill_tensor_destroy(a);
  rill_tensor_destroy(b);
  return eq;
}

static const char *names[] = {"a", "b"};

Test(program_vars, separate_and_combined_round_trip) {
  rill_program *p = program(4);
  rill_scope *src = filled_scope(1);
  for (int combined = 0; combined < 2; combined++) {
    const char *file = combined ? "all" : NULL;
    OK(rill_program_save_vars(p, src, dir, names, 2, file));
    rill_scope *dst = filled_scope(50);
    OK(rill_program_load_vars(p, dst, dir, names, 2, file));
    cr_assert(same(src, dst, "a") && same(src, dst, "b"));
    rill_scope_destroy(dst);
  }
  char path[128];
  struct stat sa, sb, sc;
  snprintf(path, sizeof path, "%s/a", dir);
  cr_assert_eq(stat(path, &sa), 0);
  snprintf(path, sizeof path, "%s/b", dir);
  cr_assert_eq(stat(path, &sb), 0);
  snprintf(path, sizeof path, "%s/all", dir);
  cr_assert_eq(stat(path, &sc), 0);
  cr_assert_eq(sc.st_size, sa.st_size + sb.st_size, "combined = the streams back to back");
  rill_scope_destroy(src);
  rill_program_destroy(p);
}

static void expect_failure_keeps_scope(rill_program *p, const char *file, rill_code code,
                                       const char *needle) {
  rill_scope *dst = filled_scope(9), *ref = filled_scope(9);
  rill_status *st = rill_program_load_vars(p, dst, dir, names, 2, file);
  cr_assert_not_null(st);
  cr_assert_eq(rill_status_code(st), code, "%s", rill_status_message(st));
  cr_assert(strstr(rill_status_message(st), needle), "'%s' lacks '%s'", rill_status_message(st),
            needle);
  rill_status_destroy(st);
  cr_assert(same(dst, ref, "a") && same(dst, ref, "b"), "a failed load changed the scope");
  rill_scope_destroy(dst);
  rill_scope_destroy(ref);
}

Test(program_vars, bad_files_fail_and_change_nothing) {
  rill_program *p = program(4);
  rill_scope *src = filled_scope(1);
  OK(rill_program_save_vars(p, src, dir, names, 2, NULL));
  OK(rill_program_save_vars(p, src, dir, names, 2, "all"));
  char path[128];
  snprintf(path, sizeof path, "%s/b", dir);
  cr_assert_eq(unlink(path), 0);
  expect_failure_keeps_scope(p, NULL, RILL_NOT_FOUND, "'b'");
  snprintf(path, sizeof path, "%s/all", dir);
  struct stat sb;
  cr_assert_eq(stat(path, &sb), 0);
  cr_assert_eq(truncate(path, sb.st_size - 3), 0);
  expect_failure_keeps_scope(p, "all", RILL_CORRUPT, "'b'");
  OK(rill_program_save_vars(p, src, dir, names, 2, "all"));
  FILE *f = fopen(path, "ab");
  fputs("junk", f);
  fclose(f);
  expect_failure_keeps_scope(p, "all", RILL_CORRUPT, "bytes left");
  /* A declaration the stored tensor does not match. */
  rill_program *q = program(5);
  OK(rill_program_save_vars(p, src, dir, names, 2, "all"));
  expect_failure_keeps_scope(q, "all", RILL_INVALID_ARGUMENT, "declared [5]");
  rill_program_destroy(q);
  rill_scope_destroy(src);
  rill_program_destroy(p);
}

Test(program_vars, argument_errors) {
  rill_program *p = program(4);
  rill_scope *s = filled_scope(1);
  const char *undeclared[] = {"zzz"}, *twice[] = {"a", "a"}, *escape[] = {"a"};
  rill_status *st = rill_program_save_vars(p, s, dir, undeclared, 1, NULL);
  cr_assert_eq(rill_status_code(st), RILL_NOT_FOUND);
  cr_assert(strstr(rill_status_message(st), "'zzz'"));
  rill_status_destroy(st);
  st = rill_program_load_vars(p, s, dir, twice, 2, NULL);
  cr_assert_eq(rill_status_code(st), RILL_INVALID_ARGUMENT);
  rill_status_destroy(st);
  st = rill_program_save_vars(p, s, dir, escape, 1, "../outside");
  cr_assert_not_null(st);
  rill_status_destroy(st);
  rill_scope *empty;
  OK(rill_scope_create(NULL, &empty));
  st = rill_program_save_vars(p, empty, dir, names, 2, NULL);
  cr_assert_eq(rill_status_code(st), RILL_NOT_FOUND);
  cr_assert(strstr(rill_status_message(st), "'a'"));
  rill_status_destroy(st);
  rill_scope_destroy(empty);
  rill_scope_destroy(s);
  rill_program_destroy(p);
}

typedef struct load_ctx {
  rill_program *p;
  rill_scope *s;
} load_ctx;

static rill_status *load_op(void *ctx) {
  load_ctx *c = ctx;
  rill_status *st = rill_scope_create(NULL, &c->s);
  if (st) return st;
  return rill_program_load_vars(c->p, c->s, dir, names, 2, "all");
}

static void load_cleanup(void *ctx) {
  load_ctx *c = ctx;
  rill_scope_destroy(c->s);
  c->s = NULL;
}

Test(program_vars, failing_each_allocation_leaks_nothing) {
  rill_program *p = program(4);
  rill_scope *src = filled_scope(1);
  OK(rill_program_save_vars(p, src, dir, names, 2, "all"));
  rill_scope_destroy(src);
  load_ctx c = {p, NULL};
  char why[512] = "";
  long runs = fail_alloc_sweep(load_op, load_cleanup, &c, 10000, false, why, sizeof why);
  cr_assert_gt(runs, 5, "%s", why);
  rill_program_destroy(p);
}

Test(program_vars, program_save_round_trips_and_reports_errors) {
  rill_program *p = program(4);
  char path[128];
  snprintf(path, sizeof path, "%s/__model__", dir);
  OK(rill_program_save(p, path));
  rill_program *q = NULL;
  OK(rill_program_load(path, &q));
  void *a, *b;
  size_t na, nb;
  OK(rill_program_serialize(p, &a, &na));
  OK(rill_program_serialize(q, &b, &nb));
  cr_assert(na == nb && memcmp(a, b, na) == 0);
  rill_free_buffer(a);
  rill_free_buffer(b);
  rill_program_destroy(q);
  snprintf(path, sizeof path, "%s/no/such/dir/__model__", dir);
  rill_status *st = rill_program_save(p, path);
  cr_assert_not_null(st);
  cr_assert(strstr(rill_status_message(st), "no/such/dir"), "%s", rill_status_message(st));
  rill_status_destroy(st);
  rill_program_destroy(p);
}
