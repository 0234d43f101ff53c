/* The CUDA backend's loading and its errors. On a machine without a CUDA device (or a
 * build without the backend) the place is refused with the reason, and the CPU path
 * still runs; a device id that does not exist is refused naming it. The tests that need
 * a device skip without one, saying so. */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cuda_test.h"
#include "framework/registry/registry.h"

REPORT_GPU_SKIPS("cuda_runtime")

static const int64_t D4[] = {4};

/* y = 2x + 1 on an executor at `place`, in `keep` (NULL: a scope of its own); the error
 * of making or running it. */
static rill_status *scale_in(rill_place place, rill_scope *keep, float *got) {
  rill_program *p = NULL;
  rill_executor *e = NULL;
  rill_scope *scope = NULL;
  rill_tensor *x = NULL, *y = NULL;
  rill_op_builder *b = NULL;
  const char *xn = "x", *yn = "y";
  OK(rill_program_create(&p));
  OK(rill_block_add_var(p, 0, "x", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, D4, 1, 0, false));
  /* Persistable: kept in the scope after the run. */
  OK(rill_block_add_var(p, 0, "y", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, D4, 1, 0, keep != NULL));
  OK(rill_op_builder_create("scale", &b));
  OK(rill_op_builder_input(b, "X", &xn, 1));
  OK(rill_op_builder_output(b, "Out", &yn, 1));
  OK(rill_op_builder_attr_float(b, "scale", 2.0f));
  OK(rill_op_builder_attr_float(b, "bias", 1.0f));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  rill_executor_options o = RILL_EXECUTOR_OPTIONS_INIT;
  o.place = place;
  rill_status *st = rill_executor_create(&o, &e);
  if (!st) {
    if (keep) scope = keep;
    else OK(rill_scope_create(NULL, &scope));
    OK(rill_tensor_create(RILL_DTYPE_FP32, D4, 1, &x));
    float *xd = rill_tensor_data(x);
    for (int i = 0; i < 4; i++) xd[i] = (float)i;
    st = rill_executor_run(e, p, scope, &xn, &x, 1, &yn, 1, &y);
    if (!st) memcpy(got, rill_tensor_data(y), 4 * sizeof *got);
    rill_tensor_destroy(y);
    rill_tensor_destroy(x);
    if (!keep) rill_scope_destroy(scope);
    rill_executor_destroy(e);
  }
  rill_program_destroy(p);
  return st;
}

static rill_status *scale_on(rill_place place, float *got) { return scale_in(place, NULL, got); }

static void expect_cpu_still_works(void) {
  float got[4];
  OK(scale_on((rill_place){RILL_DEVICE_CPU, 0}, got));
  for (int i = 0; i < 4; i++) cr_assert_float_eq(got[i], 2.0f * (float)i + 1.0f, 0.0f);
}

Test(cuda_runtime, build_says_whether_it_has_the_backend) {
  cr_assert_eq(rill_is_compiled_with_cuda(), RILL_TEST_WITH_CUDA != 0);
  int32_t n = -1;
  rill_status *st = rill_cuda_device_count(&n);
  cr_assert_geq(n, 0);
  if (!RILL_TEST_WITH_CUDA) {
    cr_assert_eq(rill_status_code(st), RILL_NOT_FOUND, "%s", rill_status_message(st));
    cr_assert(strstr(rill_status_message(st), "no backend for cuda:0"), "%s", rill_status_message(st));
    cr_assert_eq(n, 0);
  }
  rill_status_destroy(st);
}

Test(cuda_runtime, no_device_is_a_clear_error_and_the_cpu_still_works) {
  char why[512];
  if (!cuda_missing(why, sizeof why)) cr_skip_test("a CUDA device is present: this test covers machines without one");
  int32_t n = -1;
  rill_status *st = rill_cuda_device_count(&n);
  cr_assert_eq(n, 0);
  cr_assert(rill_status_code(st) == RILL_UNAVAILABLE || rill_status_code(st) == RILL_NOT_FOUND, "%s",
            rill_status_message(st));
  /* The same reason every time: the backend is tried once. */
  rill_status *again = rill_cuda_device_count(&n);
  cr_assert_str_eq(rill_status_message(again), rill_status_message(st));
  rill_status_destroy(again);
  float got[4];
  rill_status *ex = scale_on((rill_place){RILL_DEVICE_CUDA, 0}, got);
  cr_assert_eq(rill_status_code(ex), RILL_UNIMPLEMENTED, "%s", rill_status_message(ex));
  const char *msg = rill_status_message(ex);
  cr_assert(strstr(msg, "place cuda:0 has no registered backend"), "%s", msg);
  if (RILL_TEST_WITH_CUDA) cr_assert(strstr(msg, rill_status_message(st)), "'%s' lacks the reason", msg);
  rill_status_destroy(ex);
  rill_status_destroy(st);
  expect_cpu_still_works();
}

Test(cuda_runtime, a_backend_library_that_does_not_load_is_named) {
  if (!RILL_TEST_WITH_CUDA) cr_skip_test("this build has no CUDA backend");
  setenv("RILL_CUDA_LIB", "/nonexistent/librill_cuda.so", 1);
  int32_t n = -1;
  rill_status *st = rill_cuda_device_count(&n);
  cr_assert_eq(n, 0);
  cr_assert_eq(rill_status_code(st), RILL_UNAVAILABLE);
  cr_assert(strstr(rill_status_message(st), "/nonexistent/librill_cuda.so did not load"), "%s",
            rill_status_message(st));
  rill_status_destroy(st);
  expect_cpu_still_works();
}

Test(cuda_runtime, an_empty_library_variable_disables_the_backend) {
  if (!RILL_TEST_WITH_CUDA) cr_skip_test("this build has no CUDA backend");
  setenv("RILL_CUDA_LIB", "", 1);
  float got[4];
  rill_status *st = scale_on((rill_place){RILL_DEVICE_CUDA, 0}, got);
  cr_assert(strstr(rill_status_message(st), "RILL_CUDA_LIB is set and empty"), "%s", rill_status_message(st));
  rill_status_destroy(st);
  expect_cpu_still_works();
}

Test(cuda_runtime, a_device_id_that_does_not_exist_is_named) {
  NEED_CUDA_DEVICE();
  int32_t n = 0;
  OK(rill_cuda_device_count(&n));
  float got[4];
  rill_status *st = scale_on((rill_place){RILL_DEVICE_CUDA, n}, got);
  char want[64];
  snprintf(want, sizeof want, "place cuda:%d does not exist", (int)n);
  cr_assert(strstr(rill_status_message(st), want), "%s", rill_status_message(st));
  rill_status_destroy(st);
  expect_cpu_still_works();
}

Test(cuda_runtime, a_program_runs_on_the_device) {
  NEED_CUDA_DEVICE();
  float got[4];
  OK(scale_on((rill_place){RILL_DEVICE_CUDA, 0}, got));
  for (int i = 0; i < 4; i++) cr_assert_float_eq(got[i], 2.0f * (float)i + 1.0f, 0.0f);
}

Test(cuda_runtime, the_cpu_keeps_no_device_memory_statistics) {
  rill_device_memory_stats s;
  rill_status *st = rill_device_memory_stats_get((rill_place){RILL_DEVICE_CPU, 0}, &s);
  cr_assert_eq(rill_status_code(st), RILL_UNIMPLEMENTED, "%s", rill_status_message(st));
  cr_assert(strstr(rill_status_message(st), "cpu:0 keeps no memory statistics"), "%s", rill_status_message(st));
  rill_status_destroy(st);
}

/* The caching allocator: after the first run, 1,000 more runs of the same program take
 * every block from its cache (no cudaMalloc, nothing more reserved), and the peak is at
 * least what a run holds. */
Test(cuda_runtime, runs_reuse_device_memory_without_growth) {
  NEED_CUDA_DEVICE();
  rill_place gpu = {RILL_DEVICE_CUDA, 0};
  float got[4];
  OK(scale_on(gpu, got));
  rill_device_memory_stats first, later;
  OK(rill_device_memory_stats_get(gpu, &first));
  cr_assert_gt(first.device_allocs, 0);
  cr_assert_geq(first.peak_bytes, first.current_bytes);
  for (int i = 0; i < 1000; i++) OK(scale_on(gpu, got));
  OK(rill_device_memory_stats_get(gpu, &later));
  cr_assert_eq(later.device_allocs, first.device_allocs, "%lld cudaMalloc calls after the first run, %lld after 1000 more",
               (long long)first.device_allocs, (long long)later.device_allocs);
  cr_assert_eq(later.reserved_bytes, first.reserved_bytes);
  cr_assert_eq(later.current_bytes, first.current_bytes);
  for (int i = 0; i < 4; i++) cr_assert_float_eq(got[i], 2.0f * (float)i + 1.0f, 0.0f);
}

/* Pinned host memory: page-locked from the backend with a device, plain host memory
 * without one; either way writable, readable and freed with the flag it came with. */
Test(cuda_runtime, pinned_host_memory_is_pinned_exactly_when_a_device_exists) {
  char why[512];
  bool missing = cuda_missing(why, sizeof why);
  void *p = NULL;
  bool pinned = missing; /* the opposite of what it must become */
  OK(rill_pinned_host_alloc(4096, &p, &pinned));
  cr_assert_not_null(p);
  cr_assert_eq(pinned, !missing, "pinned %d with a device missing %d", pinned, missing);
  unsigned char *c = p;
  for (int i = 0; i < 4096; i++) c[i] = (unsigned char)(i * 7);
  for (int i = 0; i < 4096; i++) cr_assert_eq(c[i], (unsigned char)(i * 7));
  rill_pinned_host_free(p, pinned);
  rill_pinned_host_free(NULL, false);
  rill_status *st = rill_pinned_host_alloc(0, &p, &pinned);
  cr_assert_eq(rill_status_code(st), RILL_INVALID_ARGUMENT);
  rill_status_destroy(st);
}

Test(cuda_runtime, the_cpu_has_no_device_profiler) {
  rill_status *st = rill_device_profiler_start((rill_place){RILL_DEVICE_CPU, 0});
  cr_assert_eq(rill_status_code(st), RILL_UNIMPLEMENTED, "%s", rill_status_message(st));
  cr_assert(strstr(rill_status_message(st), "cpu:0 has no profiler to start"), "%s", rill_status_message(st));
  rill_status_destroy(st);
}

Test(cuda_runtime, without_a_device_the_profiler_says_why) {
  char why[512];
  if (!cuda_missing(why, sizeof why)) cr_skip_test("a CUDA device is present");
  rill_status *st = rill_device_profiler_start((rill_place){RILL_DEVICE_CUDA, 0});
  cr_assert_not_null(st);
  const char *want = RILL_TEST_WITH_CUDA ? why : "cuda:0";
  cr_assert(strstr(rill_status_message(st), want), "\"%s\" lacks \"%s\"", rill_status_message(st), want);
  rill_status_destroy(st);
}

Test(cuda_runtime, the_profiler_starts_and_stops_around_a_run) {
  NEED_CUDA_DEVICE();
  rill_place gpu = {RILL_DEVICE_CUDA, 0};
  float got[4];
  OK(rill_device_profiler_start(gpu));
  OK(scale_on(gpu, got));
  OK(rill_device_profiler_stop(gpu));
  for (int i = 0; i < 4; i++) cr_assert_float_eq(got[i], 2.0f * (float)i + 1.0f, 0.0f);
}

/* A variable a run left on the device comes back from rill_scope_get_tensor as a host
 * copy: rill_tensor_data is host memory the caller can read (on a GPU, the device
 * pointer would fault), and writing it leaves the variable as it was. */
Test(cuda_runtime, a_variable_on_the_device_is_read_through_a_host_copy) {
  NEED_CUDA_DEVICE();
  rill_scope *scope = NULL;
  OK(rill_scope_create(NULL, &scope));
  float got[4];
  OK(scale_in((rill_place){RILL_DEVICE_CUDA, 0}, scope, got));
  rill_tensor *y = NULL, *again = NULL;
  OK(rill_scope_get_tensor(scope, "y", &y));
  cr_assert_eq(rill_tensor_numel(y), 4);
  float *yd = rill_tensor_data(y);
  for (int i = 0; i < 4; i++) cr_assert_float_eq(yd[i], 2.0f * (float)i + 1.0f, 0.0f);
  yd[0] = 99.0f;
  OK(rill_scope_get_tensor(scope, "y", &again));
  cr_assert_float_eq(((float *)rill_tensor_data(again))[0], 1.0f, 0.0f);
  rill_tensor_destroy(again);
  rill_tensor_destroy(y);
  rill_scope_destroy(scope);
}

/* The emulated device (tests/cuda/emulator) keeps its memory to itself: host code that
 * reads it outside a kernel, copy or library call faults, naming the address as device
 * memory, as a host read of a GPU's memory would fail. Without that, a host kernel that
 * read a device tensor where it lies would pass every emulated test. */
Test(cuda_runtime, the_emulated_device_memory_faults_on_a_host_read) {
  const char *lib = getenv("RILL_CUDA_LIB");
  if (!lib || !strstr(lib, "rill_cuda_emu")) cr_skip_test("not the emulated device");
  NEED_CUDA_DEVICE();
  rill_place gpu = {RILL_DEVICE_CUDA, 0};
  OK(rill_place_check(gpu));
  const rill_backend *b = rill_backend_find(RILL_DEVICE_CUDA);
  cr_assert_not_null(b);
  unsigned char *d = b->memory.alloc(&b->memory, gpu, 64);
  cr_assert_not_null(d);
  const unsigned char seven[4] = {7, 7, 7, 7};
  unsigned char back[4] = {0};
  OK(rill_backend_copy(gpu, d, (rill_place){RILL_DEVICE_CPU, 0}, seven, 4));
  OK(rill_backend_copy((rill_place){RILL_DEVICE_CPU, 0}, back, gpu, d, 4));
  cr_assert_eq(back[3], 7, "the device's own copies reach its memory");
  int err[2];
  cr_assert_eq(pipe(err), 0);
  pid_t child = fork();
  cr_assert_geq(child, 0);
  if (child == 0) {
    dup2(err[1], 2);
    volatile unsigned char v = d[0];
    (void)v;
    _exit(0); /* the read went through: the parent fails the test */
  }
  close(err[1]);
  char msg[1024] = {0};
  size_t got = 0;
  ssize_t r;
  while (got < sizeof msg - 1 && (r = read(err[0], msg + got, sizeof msg - 1 - got)) > 0) got += (size_t)r;
  close(err[0]);
  int status = 0;
  cr_assert_eq(waitpid(child, &status, 0), child);
  cr_assert(!(WIFEXITED(status) && WEXITSTATUS(status) == 0), "the host read device memory and went on");
  cr_assert(strstr(msg, "host code touched device memory"), "the fault's report: '%s'", msg);
  b->memory.free(&b->memory, gpu, d);
}
