/* rill_program_prune (rill.h "program support"): the ops and variables a target needs
 * from given feeds, and nothing else; errors for names the program lacks; no leak when
 * an allocation fails. */
#include <criterion/criterion.h>
#include <string.h>

#include "framework/program/program.h"
#include "framework/registry/registry.h"
#include "rill.h"
#include "support/fail_alloc.h"

#define OK(expr)                                                              \
  do {                                                                        \
    rill_status *ok_st_ = (expr);                                             \
    cr_assert_null(ok_st_, "%s: %s", #expr, rill_status_message(ok_st_));     \
  } while (0)

static void var(rill_program *p, const char *name, bool persistable) {
  int64_t dims[] = {-1, 3};
  OK(rill_block_add_var(p, 0, name, RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, dims, 2, 0, persistable));
}

static void unary(rill_program *p, const char *type, const char *x, const char *out) {
  rill_op_builder *b;
  OK(rill_op_builder_create(type, &b));
  OK(rill_op_builder_input(b, "X", &x, 1));
  OK(rill_op_builder_output(b, "Out", &out, 1));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
}

/* raw -> (relu) x -> (scale) a -> (sigmoid) y ; x -> (tanh) unused ; w persistable,
 * read by an elementwise_add into z (not a target). */
static rill_program *sample(void) {
  rill_program *p;
  OK(rill_program_create(&p));
  const char *names[] = {"raw", "x", "a", "y", "unused", "z"};
  for (size_t i = 0; i < 6; i++) var(p, names[i], false);
  var(p, "w", true);
  unary(p, "relu", "raw", "x");
  unary(p, "scale", "x", "a");
  unary(p, "sigmoid", "a", "y");
  unary(p, "tanh", "x", "unused");
  rill_op_builder *b;
  OK(rill_op_builder_create("elementwise_add", &b));
  const char *x = "a", *w = "w", *z = "z";
  OK(rill_op_builder_input(b, "X", &x, 1));
  OK(rill_op_builder_input(b, "Y", &w, 1));
  OK(rill_op_builder_output(b, "Out", &z, 1));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  return p;
}

static bool has_var(const rill_program *p, const char *name) {
  return rill_block_find_var(p, 0, name) != NULL;
}

Test(prune, keeps_what_the_target_needs_from_the_feeds) {
  rill_program *p = sample();
  const char *feeds[] = {"x"}, *targets[] = {"y"};
  rill_program *q = NULL;
  OK(rill_program_prune(p, feeds, 1, targets, 1, &q));
  cr_assert_eq(rill_block_num_ops(q, 0), 2);
  cr_assert_str_eq(q->blocks[0].ops[0].type, "scale");
  cr_assert_str_eq(q->blocks[0].ops[1].type, "sigmoid");
  cr_assert(has_var(q, "x") && has_var(q, "a") && has_var(q, "y"));
  cr_assert(!has_var(q, "raw") && !has_var(q, "unused") && !has_var(q, "z") && !has_var(q, "w"));
  OK(rill_program_validate(q));
  /* The source program is untouched. */
  cr_assert_eq(rill_block_num_ops(p, 0), 5);
  rill_program_destroy(q);

  /* Without feeds the walk goes back to the start; two targets keep both paths. */
  const char *both[] = {"y", "z"};
  OK(rill_program_prune(p, NULL, 0, both, 2, &q));
  cr_assert_eq(rill_block_num_ops(q, 0), 4);
  cr_assert(has_var(q, "raw") && has_var(q, "w") && !has_var(q, "unused"));
  rill_program_destroy(q);
  rill_program_destroy(p);
}

Test(prune, drops_feed_and_fetch_ops) {
  rill_program *p = sample();
  OK(rill_block_add_var(p, 0, "feed", RILL_VAR_FEED_MINIBATCH, RILL_DTYPE_FP32, NULL, 0, 0, true));
  rill_op_builder *b;
  OK(rill_op_builder_create("feed", &b));
  const char *f = "feed", *x = "x";
  OK(rill_op_builder_input(b, "X", &f, 1));
  OK(rill_op_builder_output(b, "Out", &x, 1));
  OK(rill_op_builder_attr_int(b, "col", 0));
  OK(rill_op_builder_insert(b, p, 0, 0));
  rill_op_builder_destroy(b);
  const char *feeds[] = {"x"}, *targets[] = {"y"};
  rill_program *q = NULL;
  OK(rill_program_prune(p, feeds, 1, targets, 1, &q));
  for (size_t i = 0; i < rill_block_num_ops(q, 0); i++)
    cr_assert_str_neq(q->blocks[0].ops[i].type, "feed");
  rill_program_destroy(q);
  rill_program_destroy(p);
}

Test(prune, unknown_names_and_no_targets_are_errors) {
  rill_program *p = sample();
  const char *feeds[] = {"nope"}, *targets[] = {"y"}, *bad[] = {"missing"};
  rill_program *q = NULL;
  rill_status *st = rill_program_prune(p, feeds, 1, targets, 1, &q);
  cr_assert_eq(rill_status_code(st), RILL_NOT_FOUND);
  cr_assert(strstr(rill_status_message(st), "'nope'"), "%s", rill_status_message(st));
  rill_status_destroy(st);
  st = rill_program_prune(p, NULL, 0, bad, 1, &q);
  cr_assert(strstr(rill_status_message(st), "'missing'"), "%s", rill_status_message(st));
  rill_status_destroy(st);
  st = rill_program_prune(p, NULL, 0, targets, 0, &q);
  cr_assert_eq(rill_status_code(st), RILL_INVALID_ARGUMENT);
  rill_status_destroy(st);
  cr_assert_null(q);
  rill_program_destroy(p);
}

typedef struct prune_ctx {
  rill_program *p, *q;
} prune_ctx;

static rill_status *prune_op(void *ctx) {
  prune_ctx *c = ctx;
  const char *feeds[] = {"x"}, *targets[] = {"y", "z"};
  return rill_program_prune(c->p, feeds, 1, targets, 2, &c->q);
}

static void prune_cleanup(void *ctx) {
  prune_ctx *c = ctx;
  rill_program_destroy(c->q);
  c->q = NULL;
}

Test(prune, failing_each_allocation_leaks_nothing) {
  cr_assert_null(rill_registry_init());
  prune_ctx c = {sample(), NULL};
  char why[512] = "";
  long runs = fail_alloc_sweep(prune_op, prune_cleanup, &c, 10000, false, why, sizeof why);
  cr_assert_gt(runs, 5, "%s", why);
  rill_program_destroy(c.p);
}
