/* A plugin kernel uses the device's services through rill_op_context: parallel_for over
 * the compute pool (every part once, on a slot below the thread count), scratch memory,
 * and blocking work run after the run returns; shape inference gets a clear error for
 * submit_blocking, and a NULL function is refused. */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <string.h>

#include "rill.h"
#include "support/plugin_infer.h"

#define OK(expr)                                                                     \
  do {                                                                               \
    rill_status *st_ = (expr);                                                       \
    cr_assert_null(st_, "%s: %s", #expr, rill_status_message(st_));                  \
  } while (0)

enum { N = 4096, PARTS = 16 };

static atomic_int bad_slots, after_run, infer_refused, null_refused;
static atomic_int from_infer; /* stays 0: infer may not submit */
static int32_t seen_threads;

typedef struct square_arg {
  const float *x;
  float *y;
  float *scratch; /* one float per part */
  int threads;
} square_arg;

static bool square_part(void *p, int64_t part, int slot) {
  square_arg *a = p;
  if (slot < 0 || slot >= a->threads) atomic_fetch_add(&bad_slots, 1);
  int64_t lo = part * (N / PARTS), hi = lo + N / PARTS;
  float sum = 0;
  for (int64_t i = lo; i < hi; i++) {
    a->y[i] = a->x[i] * a->x[i];
    sum += a->y[i];
  }
  a->scratch[part] = sum;
  return true;
}

static void mark_done(void *arg) { atomic_store((atomic_int *)arg, 1); }

static rill_status *infer_same(rill_op_context *ctx, void *user) {
  rill_status *st = rill_op_context_submit_blocking(ctx, mark_done, &from_infer);
  if (st && rill_status_code(st) == RILL_FAILED_PRECONDITION &&
      strstr(rill_status_message(st), "svc_square"))
    atomic_store(&infer_refused, 1);
  rill_status_destroy(st);
  return plugin_infer_same(ctx, user);
}

static rill_status *kernel_square(rill_op_context *ctx, void *user) {
  (void)user;
  rill_tensor *x = rill_op_context_input(ctx, 0, 0), *y = rill_op_context_output(ctx, 0, 0);
  if (rill_tensor_numel(x) != N) return rill_op_context_error(ctx, "want %d elements", N);
  seen_threads = rill_op_context_num_threads(ctx);
  square_arg a = {rill_tensor_data(x), rill_tensor_data(y), NULL, seen_threads};
  a.scratch = rill_op_context_scratch_alloc(ctx, PARTS * sizeof(float));
  if (!a.scratch) return rill_op_context_error(ctx, "out of memory");
  bool ok = rill_op_context_parallel_for(ctx, seen_threads, PARTS, square_part, &a);
  float total = 0;
  for (int p = 0; p < PARTS; p++) total += a.scratch[p];
  rill_op_context_scratch_free(ctx, a.scratch);
  if (!ok || total <= 0) return rill_op_context_error(ctx, "parts failed");
  rill_status *st = rill_op_context_submit_blocking(ctx, NULL, NULL);
  if (st && rill_status_code(st) == RILL_INVALID_ARGUMENT) atomic_store(&null_refused, 1);
  rill_status_destroy(st);
  return rill_op_context_submit_blocking(ctx, mark_done, &after_run);
}

static rill_status *services_init(rill_plugin *pl) {
  static const rill_plugin_slot in[] = {{"X", 0, NULL}}, out[] = {{"Out", 0, NULL}};
  rill_plugin_op op = {.api_version = RILL_PLUGIN_API_VERSION,
                       .type = "svc_square",
                       .inputs = in,
                       .ninputs = 1,
                       .outputs = out,
                       .noutputs = 1,
                       .kernel_dtype_input = 0,
                       .infer = infer_same};
  rill_status *st = rill_plugin_add_op(pl, &op);
  if (st) return st;
  rill_plugin_kernel k = {RILL_PLUGIN_API_VERSION, "svc_square", RILL_DEVICE_CPU, RILL_DTYPE_FP32,
                          kernel_square, NULL};
  return rill_plugin_add_kernel(pl, &k);
}

Test(plugin_services, a_plugin_kernel_splits_work_uses_scratch_and_submits_blocking_work) {
  OK(rill_register_op_library("services", services_init));
  rill_program *p;
  OK(rill_program_create(&p));
  const int64_t dims[] = {N};
  OK(rill_block_add_var(p, 0, "x", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, dims, 1, 0, false));
  OK(rill_block_add_var(p, 0, "y", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, dims, 1, 0, false));
  rill_op_builder *b;
  OK(rill_op_builder_create("svc_square", &b));
  const char *xn = "x", *yn = "y";
  OK(rill_op_builder_input(b, "X", &xn, 1));
  OK(rill_op_builder_output(b, "Out", &yn, 1));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);

  for (int threads = 1; threads <= 3; threads++) {
    atomic_store(&after_run, 0);
    atomic_store(&bad_slots, 0);
    rill_executor_options o = RILL_EXECUTOR_OPTIONS_INIT;
    o.num_threads = threads;
    rill_executor *e;
    OK(rill_executor_create(&o, &e));
    rill_scope *s;
    OK(rill_scope_create(NULL, &s));
    rill_tensor *x;
    OK(rill_tensor_create(RILL_DTYPE_FP32, dims, 1, &x));
    float *xv = rill_tensor_data(x);
    for (int i = 0; i < N; i++) xv[i] = (float)(i % 97) - 48.0f;
    rill_tensor *y;
    OK(rill_executor_run(e, p, s, &xn, &x, 1, &yn, 1, &y));
    const float *yv = rill_tensor_data(y);
    for (int i = 0; i < N; i++) cr_assert_eq(yv[i], xv[i] * xv[i], "%d threads, element %d", threads, i);
    cr_expect_eq(seen_threads, threads);
    cr_expect_eq(atomic_load(&bad_slots), 0, "%d threads: a slot out of range", threads);
    cr_expect_eq(atomic_load(&null_refused), 1, "a NULL blocking job was accepted");
    rill_tensor_destroy(y);
    rill_tensor_destroy(x);
    rill_executor_destroy(e); /* waits for the blocking job */
    cr_expect_eq(atomic_load(&after_run), 1, "%d threads: the blocking job did not run", threads);
    rill_scope_destroy(s);
  }
  /* prepare and the run infer the op's shapes */
  cr_expect_eq(atomic_load(&infer_refused), 1, "submit_blocking from infer was not refused by name");
  cr_expect_eq(atomic_load(&from_infer), 0, "a job submitted from infer ran");
  rill_program_destroy(p);
}

Test(plugin_services, outside_a_kernel_the_services_run_inline) {
  cr_expect_eq(rill_op_context_num_threads(NULL), 1);
  float x[N], y[N], scratch[PARTS];
  for (int i = 0; i < N; i++) x[i] = (float)i;
  square_arg a = {x, y, scratch, 1};
  atomic_store(&bad_slots, 0);
  cr_expect(rill_op_context_parallel_for(NULL, 4, PARTS, square_part, &a));
  cr_expect_eq(atomic_load(&bad_slots), 0);
  cr_expect_eq(y[N - 1], x[N - 1] * x[N - 1]);
  cr_expect(!rill_op_context_parallel_for(NULL, 4, PARTS, NULL, &a), "a NULL function was accepted");
  void *m = rill_op_context_scratch_alloc(NULL, 100);
  cr_assert(m);
  cr_expect_eq((uintptr_t)m % 64, 0, "scratch not aligned");
  rill_op_context_scratch_free(NULL, m);
  rill_status *st = rill_op_context_submit_blocking(NULL, mark_done, &after_run);
  cr_expect(st && rill_status_code(st) == RILL_INVALID_ARGUMENT);
  rill_status_destroy(st);
}
