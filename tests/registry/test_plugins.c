/* Op plugins: the example plugin (examples/plugin/mish.c) loaded with
 * rill_load_op_library and used by the executor, validation, rill_op_describe and the
 * backward pass like a built-in op; every registration error; all-or-nothing
 * registration; the message for an op nobody registered; `rill run --plugin`. */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "framework/io/npy.h"
#include "support/fail_alloc.h"
#include "support/plugin_infer.h"
#include "rill.h"
#include "support/shell.h"

#define PLUGIN RILL_BINARY_DIR "/mish_plugin.so"
#define RILL RILL_BINARY_DIR "/rill"

#define OK(expr)                                                                     \
  do {                                                                               \
    rill_status *st_ = (expr);                                                       \
    cr_assert_null(st_, "%s: %s", #expr, rill_status_message(st_));                  \
  } while (0)

/* Asserts `st` is an error with `code` whose message contains each of the strings. */
static void expect_error(rill_status *st, rill_code code, const char *a, const char *b) {
  cr_assert_not_null(st, "expected %s, got success", rill_code_name(code));
  const char *m = rill_status_message(st);
  cr_assert_eq(rill_status_code(st), code, "code %s, want %s: %s",
               rill_code_name(rill_status_code(st)), rill_code_name(code), m);
  if (a) cr_assert(strstr(m, a), "'%s' not in: %s", a, m);
  if (b) cr_assert(strstr(m, b), "'%s' not in: %s", b, m);
  rill_status_destroy(st);
}

static double mish_ref(double x, double threshold) {
  double sp = x > threshold ? x : log1p(exp(x));
  return x * tanh(sp);
}

static const char *x_name = "x", *y_name = "y";

/* y = mish(x) (threshold: NAN for the default) over a [2, 3] variable of `dtype`. */
static rill_program *mish_program(rill_dtype dtype, float threshold) {
  rill_program *p;
  OK(rill_program_create(&p));
  const int64_t dims[] = {2, 3};
  OK(rill_block_add_var(p, 0, "x", RILL_VAR_LOD_TENSOR, dtype, dims, 2, 0, false));
  OK(rill_block_add_var(p, 0, "y", RILL_VAR_LOD_TENSOR, dtype, dims, 2, 0, false));
  rill_op_builder *b;
  OK(rill_op_builder_create("custom_mish", &b));
  OK(rill_op_builder_input(b, "X", &x_name, 1));
  OK(rill_op_builder_output(b, "Out", &y_name, 1));
  if (!isnan(threshold)) OK(rill_op_builder_attr_float(b, "threshold", threshold));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  return p;
}

static const double XS[6] = {-3.0, -0.5, 0.0, 0.75, 2.0, 25.0};

static rill_schedule schedule = RILL_SCHEDULE_SEQUENTIAL;

static rill_tensor *run_one(rill_program *p, rill_tensor *x, const char *fetch) {
  rill_executor *e;
  rill_scope *s;
  rill_executor_options opts = RILL_EXECUTOR_OPTIONS_INIT;
  opts.num_threads = 2;
  OK(rill_executor_create(&opts, &e));
  OK(rill_executor_set_schedule(e, schedule));
  OK(rill_scope_create(NULL, &s));
  const char *feed = "x";
  rill_tensor *out = NULL;
  OK(rill_executor_run(e, p, s, &feed, &x, 1, &fetch, 1, &out));
  rill_scope_destroy(s);
  rill_executor_destroy(e);
  return out;
}

Test(plugins, example_plugin_runs_in_a_program) {
  size_t before = rill_op_count();
  OK(rill_load_op_library(PLUGIN));
  cr_assert_eq(rill_op_count(), before + 2, "mish and mish_grad are registered");
  for (size_t i = 1; i < rill_op_count(); i++)
    cr_assert(strcmp(rill_op_name(i - 1), rill_op_name(i)) < 0, "names stay sorted");
  rill_program *p = mish_program(RILL_DTYPE_FP32, NAN);
  OK(rill_program_validate(p));
  const int64_t dims[] = {2, 3};
  rill_tensor *x;
  OK(rill_tensor_create(RILL_DTYPE_FP32, dims, 2, &x));
  float *xd = rill_tensor_data(x);
  for (int i = 0; i < 6; i++) xd[i] = (float)XS[i];
  for (int sched = 0; sched < 2; sched++) { /* both schedules run plugin ops */
    schedule = sched ? RILL_SCHEDULE_PARALLEL : RILL_SCHEDULE_SEQUENTIAL;
    rill_tensor *y = run_one(p, x, "y");
    cr_assert_eq(rill_tensor_dtype(y), RILL_DTYPE_FP32);
    cr_assert_eq(rill_tensor_ndim(y), 2);
    const float *yd = rill_tensor_data(y);
    for (int i = 0; i < 6; i++)
      cr_assert_float_eq(yd[i], mish_ref(XS[i], 20.0), 1e-5, "y[%d] = %g", i, yd[i]);
    rill_tensor_destroy(y);
  }
  schedule = RILL_SCHEDULE_SEQUENTIAL;
  rill_tensor_destroy(x);
  rill_program_destroy(p);
}

Test(plugins, attribute_and_float64_kernel) {
  OK(rill_load_op_library(PLUGIN));
  rill_program *p = mish_program(RILL_DTYPE_FP64, 0.5f);
  const int64_t dims[] = {2, 3};
  rill_tensor *x;
  OK(rill_tensor_create(RILL_DTYPE_FP64, dims, 2, &x));
  double *xd = rill_tensor_data(x);
  memcpy(xd, XS, sizeof XS);
  rill_tensor *y = run_one(p, x, "y");
  cr_assert_eq(rill_tensor_dtype(y), RILL_DTYPE_FP64);
  const double *yd = rill_tensor_data(y);
  for (int i = 0; i < 6; i++)
    cr_assert_float_eq(yd[i], mish_ref(XS[i], 0.5), 1e-12, "y[%d] = %g", i, yd[i]);
  /* threshold 0.5 changes x = 0.75 (softplus taken as x) */
  cr_assert(fabs(yd[3] - mish_ref(0.75, 20.0)) > 1e-3);
  rill_tensor_destroy(y);
  rill_tensor_destroy(x);
  rill_program_destroy(p);
}

Test(plugins, backward_pass_uses_the_plugin_gradient) {
  OK(rill_load_op_library(PLUGIN));
  rill_program *p = mish_program(RILL_DTYPE_FP32, NAN);
  const int64_t one[] = {1};
  OK(rill_block_add_var(p, 0, "loss", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, one, 1, 0, false));
  rill_op_builder *b;
  const char *loss = "loss";
  OK(rill_op_builder_create("mean", &b));
  OK(rill_op_builder_input(b, "X", &y_name, 1));
  OK(rill_op_builder_output(b, "Out", &loss, 1));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  rill_param_grads *pg = NULL;
  OK(rill_program_append_backward(p, "loss", NULL, 0, &pg));
  rill_param_grads_destroy(pg);
  OK(rill_program_validate(p));
  const int64_t dims[] = {2, 3};
  rill_tensor *x;
  OK(rill_tensor_create(RILL_DTYPE_FP32, dims, 2, &x));
  float *xd = rill_tensor_data(x);
  for (int i = 0; i < 6; i++) xd[i] = (float)XS[i];
  rill_tensor *g = run_one(p, x, "x@GRAD");
  const float *gd = rill_tensor_data(g);
  for (int i = 0; i < 6; i++) {
    double h = 1e-4, fd = (mish_ref(XS[i] + h, 20) - mish_ref(XS[i] - h, 20)) / (2 * h) / 6;
    cr_assert_float_eq(gd[i], fd, 1e-5, "dx[%d] = %g, finite difference %g", i, gd[i], fd);
  }
  rill_tensor_destroy(g);
  rill_tensor_destroy(x);
  rill_program_destroy(p);
}

Test(plugins, describe_names_the_plugin_op) {
  OK(rill_load_op_library(PLUGIN));
  char *text = NULL;
  OK(rill_op_describe("custom_mish", &text));
  cr_assert(strstr(text, "threshold"), "%s", text);
  cr_assert(strstr(text, "float64"), "%s", text);
  rill_free_buffer(text);
}

/* ---- errors ---- */

Test(plugins, missing_file) {
  size_t before = rill_op_count();
  expect_error(rill_load_op_library("/nonexistent/libnothing.so"), RILL_NOT_FOUND,
               "/nonexistent/libnothing.so", "no such file");
  cr_assert_eq(rill_op_count(), before);
}

Test(plugins, file_that_is_not_a_library) {
  char path[] = "/tmp/rill_plugin_XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  cr_assert_eq(write(fd, "not an ELF file\n", 16), 16);
  close(fd);
  expect_error(rill_load_op_library(path), RILL_IO, path, "cannot load");
  unlink(path);
}

Test(plugins, library_without_init_symbol) {
  /* libm is a shared library every system has and exports no rill_plugin_init. */
  const char *candidates[] = {"/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6",
                              "/lib64/libm.so.6", "/usr/lib/libm.so.6"};
  const char *libm = NULL;
  for (size_t i = 0; i < 4 && !libm; i++)
    if (access(candidates[i], R_OK) == 0) libm = candidates[i];
  if (!libm) cr_skip_test("no libm.so.6 found");
  expect_error(rill_load_op_library(libm), RILL_NOT_FOUND, libm, "rill_plugin_init");
}

Test(plugins, loading_twice_is_a_duplicate) {
  OK(rill_load_op_library(PLUGIN));
  size_t before = rill_op_count();
  expect_error(rill_load_op_library(PLUGIN), RILL_ALREADY_EXISTS, PLUGIN, "'custom_mish'");
  cr_assert_eq(rill_op_count(), before);
  /* the first registration still works */
  char *text = NULL;
  OK(rill_op_describe("custom_mish_grad", &text));
  rill_free_buffer(text);
}

static rill_status *infer_noop(rill_op_context *ctx, void *user) {
  (void)ctx;
  (void)user;
  return NULL;
}

static rill_status *kernel_noop(rill_op_context *ctx, void *user) {
  (void)ctx;
  (void)user;
  return NULL;
}

static const rill_plugin_slot one_in[] = {{"X", 0, NULL}};
static const rill_plugin_slot one_out[] = {{"Out", 0, NULL}};

static rill_plugin_op good_op(const char *type) {
  return (rill_plugin_op){.api_version = RILL_PLUGIN_API_VERSION, .type = type, .inputs = one_in,
                          .ninputs = 1, .outputs = one_out, .noutputs = 1,
                          .kernel_dtype_input = 0, .infer = infer_noop};
}

/* Each init adds "plug_ok" (and its kernel) first, then something wrong. */
static int variant;
static rill_status *bad_init(rill_plugin *pl) {
  rill_plugin_op ok = good_op("plug_ok");
  RILL_TRY(rill_plugin_add_op(pl, &ok));
  rill_plugin_kernel k = {RILL_PLUGIN_API_VERSION, "plug_ok", RILL_DEVICE_CPU, RILL_DTYPE_FP32,
                          kernel_noop, NULL};
  RILL_TRY(rill_plugin_add_kernel(pl, &k));
  rill_plugin_op op = good_op("plug_bad");
  static const rill_plugin_slot dup[] = {{"X", 0, NULL}, {"X", 0, NULL}};
  static const rill_plugin_attr str_attr[] = {{.name = "dtype", .type = RILL_PLUGIN_ATTR_STRING}};
  static const rill_plugin_attr list_attr[] = {
      {.name = "shape", .type = RILL_PLUGIN_ATTR_INTS, .def_count = 3}};
  switch (variant) {
  case 0: op.api_version = 99; break;
  case 1: op.infer = NULL; break;
  case 2: op.type = "bad name!"; break;
  case 3: op.inputs = dup; op.ninputs = 2; break;
  case 4: op.type = "relu"; break; /* built in */
  case 5: op.type = "plug_ok"; break;
  case 6:
    op.kernel_dtype_input = -1;
    op.attrs = str_attr;
    op.nattrs = 1;
    op.dtype_attr = "dtype";
    break;
  case 7: op.attrs = list_attr; op.nattrs = 1; break;
  case 8: op.kernel_dtype_input = 3; break;
  case 9: {
    rill_plugin_kernel wrong = k;
    wrong.op = "relu";
    return rill_plugin_add_kernel(pl, &wrong);
  }
  case 10: {
    rill_plugin_kernel wrong = k;
    wrong.dtype = (rill_dtype)17;
    return rill_plugin_add_kernel(pl, &wrong);
  }
  case 11: return rill_plugin_add_kernel(pl, &k); /* second float32 kernel */
  case 12: {
    rill_plugin_kernel wrong = k;
    wrong.api_version = 0;
    return rill_plugin_add_kernel(pl, &wrong);
  }
  case 13: op.flags = 0x100; break;
  case 14: return rill_status_create(RILL_UNAVAILABLE, "the plugin's own failure");
  }
  return rill_plugin_add_op(pl, &op);
}

Test(plugins, every_registration_error_names_library_and_op_and_registers_nothing) {
  static const struct {
    rill_code code;
    const char *a, *b;
  } want[] = {
      {RILL_FAILED_PRECONDITION, "'plug_bad'", "API version 99"},
      {RILL_INVALID_ARGUMENT, "'plug_bad'", "infer"},
      {RILL_INVALID_ARGUMENT, "'bad name!'", "op type"},
      {RILL_INVALID_ARGUMENT, "'plug_bad'", "'X' is declared twice"},
      {RILL_ALREADY_EXISTS, "'relu'", "already registered"},
      {RILL_ALREADY_EXISTS, "'plug_ok'", "added twice"},
      {RILL_INVALID_ARGUMENT, "'plug_bad'", "dtype_attr"},
      {RILL_INVALID_ARGUMENT, "'plug_bad'", "def_list is NULL"},
      {RILL_INVALID_ARGUMENT, "'plug_bad'", "kernel_dtype_input 3"},
      {RILL_NOT_FOUND, "'relu'", "its own ops"},
      {RILL_INVALID_ARGUMENT, "'plug_ok'", "invalid dtype"},
      {RILL_ALREADY_EXISTS, "'plug_ok'", "two float32 kernels"},
      {RILL_FAILED_PRECONDITION, "'plug_ok'", "API version 0"},
      {RILL_INVALID_ARGUMENT, "'plug_bad'", "flags"},
      {RILL_UNAVAILABLE, "init failed", "the plugin's own failure"},
  };
  size_t before = rill_op_count();
  for (variant = 0; variant < (int)(sizeof want / sizeof want[0]); variant++) {
    rill_status *st = rill_register_op_library("libbad.so", bad_init);
    cr_assert_not_null(st, "variant %d succeeded", variant);
    cr_assert(strstr(rill_status_message(st), "libbad.so"), "variant %d: %s", variant,
              rill_status_message(st));
    expect_error(st, want[variant].code, want[variant].a, want[variant].b);
    cr_assert_eq(rill_op_count(), before, "variant %d left ops registered", variant);
    char *text = NULL;
    rill_status *d = rill_op_describe("plug_ok", &text);
    cr_assert_not_null(d, "variant %d registered plug_ok", variant);
    rill_status_destroy(d);
  }
}

static rill_status *empty_init(rill_plugin *pl) {
  (void)pl;
  return NULL;
}

Test(plugins, library_that_adds_nothing) {
  expect_error(rill_register_op_library("libempty.so", empty_init), RILL_INVALID_ARGUMENT,
               "libempty.so", "adds no ops");
}

static rill_status *in_app_init(rill_plugin *pl) {
  cr_assert_str_eq(rill_plugin_name(pl), "in-app");
  rill_plugin_op op = good_op("plug_in_app");
  return rill_plugin_add_op(pl, &op);
}

Test(plugins, ops_compiled_into_the_application) {
  OK(rill_register_op_library("in-app", in_app_init));
  char *text = NULL;
  OK(rill_op_describe("plug_in_app", &text));
  rill_free_buffer(text);
}

/* Out of memory at the 1st, 2nd, ... allocation of a load: each failing load returns an
 * error, frees everything it allocated and registers nothing; then one succeeds. */
Test(plugins, allocation_failures_register_nothing_and_leak_nothing) {
  size_t before = rill_op_count(); /* builds the registry before counting */
  fail_alloc_install();
  bool loaded = false;
  for (uint64_t n = 1; n < 10000 && !loaded; n++) {
    fail_alloc_fail_at(n, false);
    rill_status *st = rill_load_op_library(PLUGIN);
    bool injected = fail_alloc_failed();
    fail_alloc_fail_at(0, false);
    if (!st) {
      loaded = true;
      break;
    }
    cr_assert(injected, "allocation %llu: failed without an injected failure: %s",
              (unsigned long long)n, rill_status_message(st));
    rill_status_destroy(st);
    cr_assert_eq(fail_alloc_live(), 0, "allocation %llu failed: %lld blocks leaked",
                 (unsigned long long)n, (long long)fail_alloc_live());
    cr_assert_eq(rill_op_count(), before, "allocation %llu failed: ops were registered",
                 (unsigned long long)n);
  }
  cr_assert(loaded, "the load never succeeded");
  cr_assert_eq(rill_op_count(), before + 2);
  /* the registry keeps what it registered: uninstalling with live blocks is expected */
  fail_alloc_uninstall();
}

/* A blocking op (say, one that waits on a device or a peer): flagged so, it runs on the
 * I/O pool under the parallel schedule, beside a compute op, with the right result. */
static pthread_t blocking_ran_on;

static rill_status *kernel_add_one(rill_op_context *ctx, void *user) {
  (void)user;
  blocking_ran_on = pthread_self();
  int64_t add;
  RILL_TRY(rill_op_context_attr_int(ctx, "add", &add));
  rill_tensor *x = rill_op_context_input(ctx, 0, 0), *y = rill_op_context_output(ctx, 0, 0);
  const float *xs = rill_tensor_data(x);
  float *ys = rill_tensor_data(y);
  usleep(2000);
  for (int64_t i = 0; i < rill_tensor_numel(x); i++) ys[i] = xs[i] + (float)add;
  return NULL;
}

static rill_status *blocking_init(rill_plugin *pl) {
  static const rill_plugin_attr attrs[] = {{.name = "add", .type = RILL_PLUGIN_ATTR_LONG, .def_int = 1}};
  rill_plugin_op op = good_op("plug_wait_add");
  op.flags = RILL_PLUGIN_OP_BLOCKING;
  op.infer = plugin_infer_same;
  op.attrs = attrs;
  op.nattrs = 1;
  RILL_TRY(rill_plugin_add_op(pl, &op));
  rill_plugin_kernel k = {RILL_PLUGIN_API_VERSION, "plug_wait_add", RILL_DEVICE_CPU,
                          RILL_DTYPE_FP32, kernel_add_one, NULL};
  return rill_plugin_add_kernel(pl, &k);
}

Test(plugins, blocking_op_runs_under_the_parallel_schedule) {
  OK(rill_register_op_library("blocking", blocking_init));
  char *text = NULL;
  OK(rill_op_describe("plug_wait_add", &text));
  cr_assert(strstr(text, "blocking"), "%s", text);
  rill_free_buffer(text);
  rill_program *p;
  OK(rill_program_create(&p));
  const int64_t dims[] = {2, 3};
  const char *names[] = {"x", "a", "b"};
  for (int i = 0; i < 3; i++)
    OK(rill_block_add_var(p, 0, names[i], RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, dims, 2, 0, false));
  rill_op_builder *b;
  OK(rill_op_builder_create("plug_wait_add", &b)); /* a = x + 1 (default), blocking */
  OK(rill_op_builder_input(b, "X", &names[0], 1));
  OK(rill_op_builder_output(b, "Out", &names[1], 1));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  OK(rill_op_builder_create("scale", &b)); /* b = 2 x, independent of it */
  OK(rill_op_builder_input(b, "X", &names[0], 1));
  OK(rill_op_builder_output(b, "Out", &names[2], 1));
  OK(rill_op_builder_attr_float(b, "scale", 2.0f));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  rill_tensor *x;
  OK(rill_tensor_create(RILL_DTYPE_FP32, dims, 2, &x));
  float *xd = rill_tensor_data(x);
  for (int i = 0; i < 6; i++) xd[i] = (float)i;
  schedule = RILL_SCHEDULE_PARALLEL;
  rill_tensor *a = run_one(p, x, "a");
  schedule = RILL_SCHEDULE_SEQUENTIAL;
  cr_assert(!pthread_equal(blocking_ran_on, pthread_self()), "the blocking op ran on the caller");
  const float *ad = rill_tensor_data(a);
  for (int i = 0; i < 6; i++) cr_assert_eq(ad[i], (float)i + 1.0f);
  rill_tensor_destroy(a);
  rill_tensor_destroy(x);
  rill_program_destroy(p);
}

/* Attribute accessors: defaults of every type, values a program sets, and the errors of
 * reading an attribute the op lacks or as the wrong type; set_output_meta's checks. */
static int accessor_checks;

static rill_status *kernel_accessors(rill_op_context *ctx, void *user) {
  (void)user;
  int64_t i;
  double f;
  const char *str;
  const void *items;
  size_t n;
  rill_plugin_attr_type t;
  OK(rill_op_context_attr_int(ctx, "flag", &i));
  cr_assert_eq(i, 1); /* BOOLEAN default true */
  OK(rill_op_context_attr_int(ctx, "count", &i));
  cr_assert_eq(i, 7); /* set by the program */
  OK(rill_op_context_attr_float(ctx, "ratio", &f));
  cr_assert_float_eq(f, 0.25, 1e-12);
  OK(rill_op_context_attr_string(ctx, "mode", &str));
  cr_assert_str_eq(str, "fast");
  OK(rill_op_context_attr_list(ctx, "sizes", &t, &items, &n));
  cr_assert_eq(t, RILL_PLUGIN_ATTR_INTS);
  cr_assert_eq(n, 3);
  cr_assert_eq(((const int32_t *)items)[2], 30);
  OK(rill_op_context_attr_list(ctx, "names", &t, &items, &n));
  cr_assert_eq(t, RILL_PLUGIN_ATTR_STRINGS);
  cr_assert_eq(n, 2);
  cr_assert_str_eq(((const char *const *)items)[1], "b");
  OK(rill_op_context_attr_list(ctx, "weights", &t, &items, &n));
  cr_assert_eq(n, 2);
  cr_assert_float_eq(((const float *)items)[1], -1.5f, 1e-6);
  expect_error(rill_op_context_attr_int(ctx, "nope", &i), RILL_NOT_FOUND, "plug_acc", "nope");
  expect_error(rill_op_context_attr_int(ctx, "mode", &i), RILL_INVALID_ARGUMENT, "'mode'", "STRING");
  expect_error(rill_op_context_attr_float(ctx, "sizes", &f), RILL_INVALID_ARGUMENT, "'sizes'", NULL);
  expect_error(rill_op_context_attr_list(ctx, "count", &t, &items, &n), RILL_INVALID_ARGUMENT,
               "'count'", NULL);
  const int64_t d[] = {2, 3};
  expect_error(rill_op_context_set_output_meta(ctx, 0, 0, RILL_DTYPE_FP32, d, 2, 0),
               RILL_FAILED_PRECONDITION, "plug_acc", "infer");
  cr_assert_str_eq(rill_op_context_op_type(ctx), "plug_acc");
  cr_assert_str_eq(rill_op_context_input_name(ctx, 0, 0), "x");
  cr_assert_str_eq(rill_op_context_output_name(ctx, 0, 0), "y");
  cr_assert_null(rill_op_context_input_name(ctx, 0, 1));
  cr_assert_null(rill_op_context_input(ctx, 5, 0));
  cr_assert_eq(rill_op_context_num_inputs(ctx, 0), 1);
  cr_assert_eq(rill_op_context_num_inputs(ctx, 9), 0);
  accessor_checks++;
  rill_tensor *x = rill_op_context_input(ctx, 0, 0), *y = rill_op_context_output(ctx, 0, 0);
  memcpy(rill_tensor_data(y), rill_tensor_data(x), rill_tensor_byte_size(x));
  return NULL;
}

static rill_status *infer_checked(rill_op_context *ctx, void *user) {
  (void)user;
  rill_dtype dt;
  int64_t dims[RILL_MAX_DIMS];
  size_t n;
  if (!rill_op_context_input_meta(ctx, 0, 0, &dt, dims, &n)) return NULL;
  const int64_t ten[10] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  expect_error(rill_op_context_set_output_meta(ctx, 0, 0, dt, ten, 10, 0), RILL_INVALID_ARGUMENT,
               "plug_acc", "rank 10");
  expect_error(rill_op_context_set_output_meta(ctx, 0, 0, (rill_dtype)17, dims, n, 0),
               RILL_INVALID_ARGUMENT, "plug_acc", "dtype");
  expect_error(rill_op_context_set_output_meta(ctx, 0, 0, dt, dims, n, 4), RILL_INVALID_ARGUMENT,
               "plug_acc", "lod_from_input");
  expect_error(rill_op_context_set_output_meta(ctx, 0, 3, dt, dims, n, 0), RILL_OUT_OF_RANGE,
               "plug_acc", NULL);
  return rill_op_context_set_output_meta(ctx, 0, 0, dt, dims, n, 0);
}

static rill_status *accessors_init(rill_plugin *pl) {
  static const int32_t sizes[] = {10, 20, 30};
  static const char *const names[] = {"a", "b"};
  static const float weights[] = {0.5f, -1.5f};
  static const rill_plugin_attr attrs[] = {
      {.name = "flag", .type = RILL_PLUGIN_ATTR_BOOLEAN, .def_int = 1},
      {.name = "count", .type = RILL_PLUGIN_ATTR_INT, .required = true},
      {.name = "ratio", .type = RILL_PLUGIN_ATTR_FLOAT64, .def_float = 0.25},
      {.name = "mode", .type = RILL_PLUGIN_ATTR_STRING, .def_string = "fast"},
      {.name = "sizes", .type = RILL_PLUGIN_ATTR_INTS, .def_list = sizes, .def_count = 3},
      {.name = "names", .type = RILL_PLUGIN_ATTR_STRINGS, .def_list = names, .def_count = 2},
      {.name = "weights", .type = RILL_PLUGIN_ATTR_FLOATS, .def_list = weights, .def_count = 2},
  };
  rill_plugin_op op = good_op("plug_acc");
  op.attrs = attrs;
  op.nattrs = sizeof attrs / sizeof attrs[0];
  op.infer = infer_checked;
  RILL_TRY(rill_plugin_add_op(pl, &op));
  rill_plugin_kernel k = {RILL_PLUGIN_API_VERSION, "plug_acc", RILL_DEVICE_CPU, RILL_DTYPE_FP32,
                          kernel_accessors, NULL};
  return rill_plugin_add_kernel(pl, &k);
}

Test(plugins, attribute_accessors_and_output_checks) {
  OK(rill_register_op_library("accessors", accessors_init));
  rill_program *p;
  OK(rill_program_create(&p));
  const int64_t dims[] = {2, 3};
  OK(rill_block_add_var(p, 0, "x", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, dims, 2, 0, false));
  OK(rill_block_add_var(p, 0, "y", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, dims, 2, 0, false));
  rill_op_builder *b;
  OK(rill_op_builder_create("plug_acc", &b));
  OK(rill_op_builder_input(b, "X", &x_name, 1));
  OK(rill_op_builder_output(b, "Out", &y_name, 1));
  OK(rill_op_builder_append(b, p, 0));
  /* the required attribute is missing: validation names it */
  expect_error(rill_program_validate(p), RILL_INVALID_ARGUMENT, "plug_acc", "count");
  OK(rill_block_remove_op(p, 0, 0));
  OK(rill_op_builder_attr_int(b, "count", 7));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  OK(rill_program_validate(p));
  rill_tensor *x;
  OK(rill_tensor_create(RILL_DTYPE_FP32, dims, 2, &x));
  float *xd = rill_tensor_data(x);
  for (int i = 0; i < 6; i++) xd[i] = (float)i;
  rill_tensor *y = run_one(p, x, "y");
  cr_assert_eq(accessor_checks, 1);
  cr_assert_eq(((const float *)rill_tensor_data(y))[5], 5.0f);
  rill_tensor_destroy(y);
  rill_tensor_destroy(x);
  rill_program_destroy(p);
}

/* ---- an op nobody registered ---- */

Test(plugins, unknown_op_fails_at_load_naming_it_and_how_to_add_it) {
  rill_program *p = mish_program(RILL_DTYPE_FP32, NAN); /* the builder accepts any type */
  rill_status *st = rill_program_validate(p);
  expect_error(st, RILL_UNIMPLEMENTED, "custom_mish", "--plugin");
  rill_executor *e;
  OK(rill_executor_create(NULL, &e));
  const char *feed = "x", *fetch = "y";
  st = rill_executor_prepare(e, p, &feed, 1, &fetch, 1);
  cr_assert_not_null(st);
  cr_assert(strstr(rill_status_message(st), "custom_mish"), "%s", rill_status_message(st));
  cr_assert(strstr(rill_status_message(st), "rill_load_op_library"), "%s", rill_status_message(st));
  rill_status_destroy(st);
  rill_executor_destroy(e);
  rill_program_destroy(p);
}

/* ---- the command line ---- */

/* A model directory whose program is feed -> mish -> fetch, and an input for it. */
static void write_mish_model(const char *dir) {
  rill_program *p;
  OK(rill_program_create(&p));
  const int64_t dims[] = {-1, 3};
  OK(rill_block_add_var(p, 0, "feed", RILL_VAR_FEED_MINIBATCH, RILL_DTYPE_FP32, NULL, 0, 0, true));
  OK(rill_block_add_var(p, 0, "fetch", RILL_VAR_FETCH_LIST, RILL_DTYPE_FP32, NULL, 0, 0, true));
  OK(rill_block_add_var(p, 0, "x", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, dims, 2, 0, false));
  OK(rill_block_add_var(p, 0, "y", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, dims, 2, 0, false));
  const char *feed = "feed", *fetch = "fetch";
  rill_op_builder *b;
  OK(rill_op_builder_create("feed", &b));
  OK(rill_op_builder_input(b, "X", &feed, 1));
  OK(rill_op_builder_output(b, "Out", &x_name, 1));
  OK(rill_op_builder_attr_int(b, "col", 0));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  OK(rill_op_builder_create("custom_mish", &b));
  OK(rill_op_builder_input(b, "X", &x_name, 1));
  OK(rill_op_builder_output(b, "Out", &y_name, 1));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  OK(rill_op_builder_create("fetch", &b));
  OK(rill_op_builder_input(b, "X", &y_name, 1));
  OK(rill_op_builder_output(b, "Out", &fetch, 1));
  OK(rill_op_builder_attr_int(b, "col", 0));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  void *bytes;
  size_t size;
  OK(rill_program_serialize(p, &bytes, &size));
  char path[1024];
  cr_assert_eq(mkdir(dir, 0777), 0);
  snprintf(path, sizeof path, "%s/__model__", dir);
  FILE *f = fopen(path, "wb");
  cr_assert_not_null(f);
  cr_assert_eq(fwrite(bytes, 1, size, f), size);
  fclose(f);
  rill_free_buffer(bytes);
  rill_program_destroy(p);
  const int64_t xd[] = {2, 3};
  rill_tensor *x;
  OK(rill_tensor_create(RILL_DTYPE_FP32, xd, 2, &x));
  float *v = rill_tensor_data(x);
  for (int i = 0; i < 6; i++) v[i] = (float)XS[i];
  snprintf(path, sizeof path, "%s/x.npy", dir);
  OK(rill_npy_save(path, x));
  rill_tensor_destroy(x);
}

Test(plugins, cli_run_with_and_without_the_plugin) {
  char dir[] = "/tmp/rill_plugin_model_XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  char model[600], cmd[2048];
  snprintf(model, sizeof model, "%s/m", dir);
  write_mish_model(model);
  char *out;
  snprintf(cmd, sizeof cmd, "'%s' run '%s' --input x='%s/x.npy' 2>&1", RILL, model, model);
  int rc = sh(&out, "%s", cmd);
  cr_assert_eq(rc, 1, "exit %d: %s", rc, out);
  cr_assert(strstr(out, "custom_mish"), "%s", out);
  cr_assert(strstr(out, "--plugin"), "%s", out);
  free(out);
  snprintf(cmd, sizeof cmd, "'%s' run '%s' --plugin '%s' --input x='%s/x.npy' 2>&1", RILL, model,
           PLUGIN, model);
  rc = sh(&out, "%s", cmd);
  cr_assert_eq(rc, 0, "exit %d: %s", rc, out);
  char want[64];
  snprintf(want, sizeof want, "first: %.6g", mish_ref(XS[0], 20));
  cr_assert(strstr(out, want), "'%s' not in: %s", want, out);
  free(out);
  snprintf(cmd, sizeof cmd, "'%s' ops --plugin '%s' custom_mish 2>&1", RILL, PLUGIN);
  rc = sh(&out, "%s", cmd);
  cr_assert_eq(rc, 0, "exit %d: %s", rc, out);
  cr_assert(strstr(out, "threshold"), "%s", out);
  free(out);
  snprintf(cmd, sizeof cmd, "'%s' ops --plugin /nonexistent.so 2>&1", RILL);
  rc = sh(&out, "%s", cmd);
  cr_assert_eq(rc, 1, "exit %d: %s", rc, out);
  cr_assert(strstr(out, "/nonexistent.so"), "%s", out);
  free(out);
  snprintf(cmd, sizeof cmd, "'%s' ops --plugin 2>&1", RILL);
  rc = sh(&out, "%s", cmd);
  cr_assert_eq(rc, 2, "exit %d: %s", rc, out);
  free(out);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  cr_assert_eq(system(cmd), 0);
}
