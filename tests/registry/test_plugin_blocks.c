/* A plugin kernel draws from the executor's seeded generator (ops flagged
 * RILL_PLUGIN_OP_RANDOM only) and runs a block of the program named by a BLOCK
 * attribute, in a child scope it makes, as built-in control-flow kernels do. */
#include <criterion/criterion.h>
#include <string.h>

#include "rill.h"
#include "support/plugin_infer.h"

#define OK(expr)                                                                     \
  do {                                                                               \
    rill_status *st_ = (expr);                                                       \
    cr_assert_null(st_, "%s: %s", #expr, rill_status_message(st_));                  \
  } while (0)

enum { N = 8 };

/* Out = X + one draw per element, scaled into [0, 1). */
static rill_status *kernel_noise(rill_op_context *ctx, void *user) {
  (void)user;
  const float *x = rill_tensor_data(rill_op_context_input(ctx, 0, 0));
  float *y = rill_tensor_data(rill_op_context_output(ctx, 0, 0));
  for (int i = 0; i < N; i++) {
    uint64_t r;
    rill_status *st = rill_op_context_random_u64(ctx, &r);
    if (st) return st;
    y[i] = x[i] + (float)(r >> 40) / (float)(1 << 24);
  }
  return NULL;
}

/* Runs block `sub_block` `times` times in one child scope; Out = X afterwards. */
static rill_status *kernel_repeat(rill_op_context *ctx, void *user) {
  (void)user;
  int64_t block, times;
  rill_status *st = rill_op_context_attr_int(ctx, "sub_block", &block);
  if (!st) st = rill_op_context_attr_int(ctx, "times", &times);
  if (st) return st;
  rill_scope *child;
  st = rill_scope_create(rill_op_context_scope(ctx), &child);
  for (int64_t t = 0; t < times && !st; t++) st = rill_op_context_run_block(ctx, (int32_t)block, child);
  rill_scope_destroy(child);
  if (st) return st;
  rill_tensor *x = rill_op_context_input(ctx, 0, 0), *y = rill_op_context_output(ctx, 0, 0);
  memcpy(rill_tensor_data(y), rill_tensor_data(x), N * sizeof(float));
  return NULL;
}

static rill_status *blocks_init(rill_plugin *pl) {
  static const rill_plugin_slot in[] = {{"X", 0, NULL}}, out[] = {{"Out", 0, NULL}};
  static const rill_plugin_attr attrs[] = {
      {.name = "sub_block", .type = RILL_PLUGIN_ATTR_BLOCK, .required = true},
      {.name = "times", .type = RILL_PLUGIN_ATTR_INT, .def_int = 1}};
  const struct {
    const char *type;
    uint32_t flags;
    size_t nattrs;
    rill_plugin_kernel_fn fn;
  } ops[] = {{"pb_noise", RILL_PLUGIN_OP_RANDOM, 0, kernel_noise},
             {"pb_noise_unflagged", 0, 0, kernel_noise},
             {"pb_repeat", 0, 2, kernel_repeat}};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
    rill_plugin_op op = {.api_version = RILL_PLUGIN_API_VERSION,
                         .type = ops[i].type,
                         .inputs = in,
                         .ninputs = 1,
                         .outputs = out,
                         .noutputs = 1,
                         .attrs = ops[i].nattrs ? attrs : NULL,
                         .nattrs = ops[i].nattrs,
                         .flags = ops[i].flags,
                         .kernel_dtype_input = 0,
                         .infer = plugin_infer_same};
    rill_status *st = rill_plugin_add_op(pl, &op);
    if (st) return st;
    rill_plugin_kernel k = {RILL_PLUGIN_API_VERSION, ops[i].type, RILL_DEVICE_CPU, RILL_DTYPE_FP32,
                            ops[i].fn, NULL};
    if ((st = rill_plugin_add_kernel(pl, &k))) return st;
  }
  return NULL;
}

static void registered(void) {
  static bool done;
  if (!done) OK(rill_register_op_library("plugin_blocks", blocks_init));
  done = true;
}

static void add_op(rill_program *p, int32_t block, const char *type, const char *x,
                   const char *y) {
  rill_op_builder *b;
  OK(rill_op_builder_create(type, &b));
  OK(rill_op_builder_input(b, "X", &x, 1));
  OK(rill_op_builder_output(b, "Out", &y, 1));
  OK(rill_op_builder_append(b, p, block));
  rill_op_builder_destroy(b);
}

static rill_program *program_of(const char *op) {
  rill_program *p;
  OK(rill_program_create(&p));
  const int64_t dims[] = {N};
  OK(rill_block_add_var(p, 0, "x", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, dims, 1, 0, false));
  OK(rill_block_add_var(p, 0, "y", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, dims, 1, 0, false));
  add_op(p, 0, op, "x", "y");
  return p;
}

/* Runs p once on `e` with x = 0..N-1 and copies y out. */
static void run(rill_executor *e, rill_program *p, float *y_out) {
  rill_scope *s;
  OK(rill_scope_create(NULL, &s));
  const int64_t dims[] = {N};
  rill_tensor *x, *y;
  OK(rill_tensor_create(RILL_DTYPE_FP32, dims, 1, &x));
  float *xv = rill_tensor_data(x);
  for (int i = 0; i < N; i++) xv[i] = (float)i;
  const char *xn = "x", *yn = "y";
  OK(rill_executor_run(e, p, s, &xn, &x, 1, &yn, 1, &y));
  memcpy(y_out, rill_tensor_data(y), sizeof(float) * N);
  rill_tensor_destroy(x);
  rill_tensor_destroy(y);
  rill_scope_destroy(s);
}

static rill_executor *executor(void) {
  rill_executor_options o = RILL_EXECUTOR_OPTIONS_INIT;
  rill_executor *e;
  OK(rill_executor_create(&o, &e));
  return e;
}

Test(plugin_blocks, random_draws_are_seeded_and_advance_from_run_to_run) {
  registered();
  rill_program *p = program_of("pb_noise");
  float a1[N], a2[N], b1[N];
  rill_executor *a = executor(), *b = executor();
  run(a, p, a1);
  run(a, p, a2);
  run(b, p, b1);
  bool differ = false;
  for (int i = 0; i < N; i++) {
    cr_assert(a1[i] >= (float)i && a1[i] < (float)i + 1, "element %d: %f", i, a1[i]);
    cr_assert_eq(a1[i], b1[i], "element %d: a fresh executor draws the same numbers", i);
    differ |= a1[i] != a2[i];
  }
  cr_assert(differ, "the second run drew the same numbers as the first");
  rill_executor_destroy(a);
  rill_executor_destroy(b);
  rill_program_destroy(p);
}

Test(plugin_blocks, an_op_without_the_random_flag_may_not_draw) {
  registered();
  rill_program *p = program_of("pb_noise_unflagged");
  rill_executor *e = executor();
  rill_scope *s;
  OK(rill_scope_create(NULL, &s));
  const int64_t dims[] = {N};
  rill_tensor *x, *y = NULL;
  OK(rill_tensor_create(RILL_DTYPE_FP32, dims, 1, &x));
  const char *xn = "x", *yn = "y";
  rill_status *st = rill_executor_run(e, p, s, &xn, &x, 1, &yn, 1, &y);
  cr_assert(st, "the draw was allowed");
  cr_assert_eq(rill_status_code(st), RILL_FAILED_PRECONDITION);
  cr_assert(strstr(rill_status_message(st), "pb_noise_unflagged") &&
                strstr(rill_status_message(st), "RILL_PLUGIN_OP_RANDOM"),
            "%s", rill_status_message(st));
  rill_status_destroy(st);
  rill_tensor_destroy(x);
  rill_scope_destroy(s);
  rill_executor_destroy(e);
  rill_program_destroy(p);
}

Test(plugin_blocks, a_plugin_kernel_runs_a_sub_block_in_a_child_scope) {
  registered();
  rill_program *p;
  OK(rill_program_create(&p));
  const int64_t dims[] = {N};
  OK(rill_block_add_var(p, 0, "x", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, dims, 1, 0, false));
  OK(rill_block_add_var(p, 0, "y", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, dims, 1, 0, false));
  int32_t sub;
  OK(rill_program_append_block(p, 0, &sub));
  /* block 1: x = x * 2, through a temporary of its own */
  OK(rill_block_add_var(p, sub, "t", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, dims, 1, 0, false));
  const char *xn = "x", *tn = "t";
  rill_op_builder *b;
  OK(rill_op_builder_create("scale", &b));
  OK(rill_op_builder_input(b, "X", &xn, 1));
  OK(rill_op_builder_output(b, "Out", &tn, 1));
  OK(rill_op_builder_attr_float(b, "scale", 2.0f));
  OK(rill_op_builder_append(b, p, sub));
  rill_op_builder_destroy(b);
  OK(rill_op_builder_create("assign", &b));
  OK(rill_op_builder_input(b, "X", &tn, 1));
  OK(rill_op_builder_output(b, "Out", &xn, 1));
  OK(rill_op_builder_append(b, p, sub));
  rill_op_builder_destroy(b);
  const char *yn = "y";
  OK(rill_op_builder_create("pb_repeat", &b));
  OK(rill_op_builder_input(b, "X", &xn, 1));
  OK(rill_op_builder_output(b, "Out", &yn, 1));
  OK(rill_op_builder_attr_block(b, "sub_block", sub));
  OK(rill_op_builder_attr_int(b, "times", 3));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  OK(rill_program_validate(p));

  rill_executor *e = executor();
  float y[N];
  run(e, p, y);
  for (int i = 0; i < N; i++) cr_assert_eq(y[i], 8.0f * (float)i, "element %d: %f", i, y[i]);

  /* an op naming its own block is refused when it is added, by name */
  rill_program *bad;
  OK(rill_program_create(&bad));
  OK(rill_block_add_var(bad, 0, "x", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, dims, 1, 0, false));
  OK(rill_block_add_var(bad, 0, "y", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, dims, 1, 0, false));
  OK(rill_op_builder_create("pb_repeat", &b));
  OK(rill_op_builder_input(b, "X", &xn, 1));
  OK(rill_op_builder_output(b, "Out", &yn, 1));
  OK(rill_op_builder_attr_block(b, "sub_block", 0));
  rill_status *st = rill_op_builder_append(b, bad, 0);
  rill_op_builder_destroy(b);
  cr_assert(st, "an op running its own block was added");
  cr_assert(strstr(rill_status_message(st), "pb_repeat") &&
                strstr(rill_status_message(st), "sub_block"),
            "%s", rill_status_message(st));
  rill_status_destroy(st);
  rill_program_destroy(bad);
  rill_executor_destroy(e);
  rill_program_destroy(p);
}

Test(plugin_blocks, outside_a_run_the_services_refuse) {
  uint64_t r;
  rill_status *st = rill_op_context_random_u64(NULL, &r);
  cr_assert(st && rill_status_code(st) == RILL_INVALID_ARGUMENT);
  rill_status_destroy(st);
  cr_assert_null(rill_op_context_scope(NULL));
  st = rill_op_context_run_block(NULL, 1, NULL);
  cr_assert(st && rill_status_code(st) == RILL_INVALID_ARGUMENT);
  rill_status_destroy(st);
}
