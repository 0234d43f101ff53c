/* The profiler's buffers and C API: a full buffer drops and counts, the start/stop
 * state machine and its errors, a run's ops in the summary and the trace file,
 * asynchronous intervals, reset, and the events of a thread that exited before stop. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "framework/data/tensor.h"
#include "framework/exec/profiler.h"
#include "rill.h"
#include "support/slurp.h"

#define OK(expr)                                                                     \
  do {                                                                               \
    rill_status *st_ = (expr);                                                       \
    cr_assert_null(st_, "%s: %s", #expr, rill_status_message(st_));                  \
  } while (0)

static void expect_code(rill_status *st, rill_code code) {
  cr_assert_not_null(st);
  cr_expect_eq(rill_status_code(st), code, "%s", rill_status_message(st));
  rill_status_destroy(st);
}

static rill_profiler_summary *stop(const char *path) {
  rill_profiler_summary *s = NULL;
  OK(rill_profiler_stop(path, &s));
  cr_assert_not_null(s);
  return s;
}

static void start_with(uint32_t events) {
  rill_profiler_options o = RILL_PROFILER_OPTIONS_INIT;
  o.events_per_thread = events;
  OK(rill_profiler_start(&o));
}

Test(profiler, full_buffer_drops_and_counts) {
  start_with(4);
  for (int i = 0; i < 10; i++) rill_prof_op("scale", 0, i, 100 + i, 200 + i);
  rill_profiler_summary *s = stop(NULL);
  cr_expect_eq(rill_profiler_summary_events(s), 4);
  cr_expect_eq(rill_profiler_summary_dropped(s), 6);
  const rill_profiler_row *r = rill_profiler_summary_row(s, RILL_PROFILER_BY_TYPE, 0);
  cr_assert_not_null(r);
  cr_expect_str_eq(r->name, "scale");
  cr_expect_eq(r->calls, 4);
  cr_expect_eq(rill_profiler_summary_rows(s, RILL_PROFILER_BY_INSTANCE), 4);
  cr_expect_null(rill_profiler_summary_row(s, RILL_PROFILER_BY_TYPE, 1));
  rill_profiler_summary_destroy(s);
}

Test(profiler, start_and_stop_errors) {
  expect_code(rill_profiler_stop(NULL, NULL), RILL_FAILED_PRECONDITION);
  rill_profiler_options bad = RILL_PROFILER_OPTIONS_INIT;
  bad.struct_size = 3;
  expect_code(rill_profiler_start(&bad), RILL_INVALID_ARGUMENT);
  bad = rill_profiler_default_options();
  bad.state = (rill_profiler_state)9;
  expect_code(rill_profiler_start(&bad), RILL_INVALID_ARGUMENT);
  cr_expect_not(rill_profiler_enabled());
  OK(rill_profiler_start(NULL));
  cr_expect(rill_profiler_enabled());
  expect_code(rill_profiler_start(NULL), RILL_FAILED_PRECONDITION);
  OK(rill_profiler_stop(NULL, NULL));
  cr_expect_not(rill_profiler_enabled());
  /* off: nothing is recorded */
  rill_prof_op("scale", 0, 0, 1, 2);
  cr_expect_eq(rill_profiler_async_begin("rpc", "send", NULL), 0);
  OK(rill_profiler_start(NULL));
  rill_profiler_summary *s = stop(NULL);
  cr_expect_eq(rill_profiler_summary_events(s), 0);
  rill_profiler_summary_destroy(s);
}

Test(profiler, reset_drops_what_was_recorded) {
  OK(rill_profiler_start(NULL));
  rill_prof_op("relu", 0, 0, 1, 2);
  rill_profiler_reset();
  cr_expect(rill_profiler_enabled());
  rill_prof_op("tanh", 0, 1, 3, 4);
  rill_profiler_summary *s = stop(NULL);
  cr_expect_eq(rill_profiler_summary_events(s), 1);
  cr_expect_str_eq(rill_profiler_summary_row(s, RILL_PROFILER_BY_TYPE, 0)->name, "tanh");
  rill_profiler_summary_destroy(s);
}

static rill_program *scale_chain(int n) {
  rill_program *p;
  OK(rill_program_create(&p));
  const int64_t dims[] = {4};
  char name[16], prev[16] = "t0";
  OK(rill_block_add_var(p, 0, prev, RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, dims, 1, 0, false));
  rill_op_builder *b;
  OK(rill_op_builder_create("scale", &b));
  for (int i = 1; i <= n; i++) {
    snprintf(name, sizeof name, "t%d", i);
    OK(rill_block_add_var(p, 0, name, RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, dims, 1, 0, false));
    const char *in = prev, *out = name;
    OK(rill_op_builder_input(b, "X", &in, 1));
    OK(rill_op_builder_output(b, "Out", &out, 1));
    OK(rill_op_builder_append(b, p, 0));
    snprintf(prev, sizeof prev, "%s", name);
  }
  rill_op_builder_destroy(b);
  return p;
}

Test(profiler, runs_show_every_op_in_the_summary_and_the_trace) {
  rill_program *p = scale_chain(5);
  rill_scope *scope;
  rill_executor *exe;
  rill_tensor *x, *y = NULL;
  const int64_t dims[] = {4};
  OK(rill_scope_create(NULL, &scope));
  OK(rill_executor_create(NULL, &exe));
  OK(rill_executor_set_schedule(exe, RILL_SCHEDULE_SEQUENTIAL));
  OK(rill_tensor_create(RILL_DTYPE_FP32, dims, 1, &x));
  memset(rill_tensor_data(x), 0, 4 * sizeof(float));
  const char *feed = "t0", *fetch = "t5";
  OK(rill_profiler_start(NULL));
  rill_profiler_set_thread_name("test main");
  for (int r = 0; r < 3; r++) {
    OK(rill_executor_run(exe, p, scope, &feed, &x, 1, &fetch, 1, &y));
    rill_tensor_destroy(y);
  }
  uint64_t id = rill_profiler_async_begin("rpc", "send", "{\"bytes\":64,\"peer\":\"127.0.0.1:1\"}");
  cr_expect_neq(id, 0);
  rill_profiler_async_end(id, "rpc", "send", "{\"cut\":\"");  /* not an object: left out */
  char path[] = "/tmp/rill_prof_test_XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  close(fd);
  rill_profiler_summary *s = stop(path);
  cr_expect_eq(rill_profiler_summary_rows(s, RILL_PROFILER_BY_TYPE), 1);
  cr_expect_eq(rill_profiler_summary_row(s, RILL_PROFILER_BY_TYPE, 0)->calls, 15);
  cr_expect_eq(rill_profiler_summary_rows(s, RILL_PROFILER_BY_INSTANCE), 5);
  for (size_t i = 0; i < 5; i++) {
    const rill_profiler_row *r = rill_profiler_summary_row(s, RILL_PROFILER_BY_INSTANCE, i);
    cr_expect_eq(r->calls, 3);
    cr_expect(r->min_ms <= r->ave_ms && r->ave_ms <= r->max_ms);
  }
  cr_expect_eq(rill_profiler_summary_threads(s), 1);
  char *text = NULL;
  OK(rill_profiler_summary_format(s, RILL_PROFILER_SORT_CALLS, &text));
  cr_expect_not_null(strstr(text, "Sorted by number of calls"));
  cr_expect_not_null(strstr(text, "scale (block 0, op #4)"));
  rill_free_buffer(text);
  rill_profiler_summary_destroy(s);

  size_t n;
  char *json = (char *)slurp_file(path, &n);
  cr_assert_not_null(json);
  json[n] = '\0'; /* slurp_file leaves room for it */
  cr_expect_not_null(strstr(json, "\"traceEvents\""));
  cr_expect_not_null(strstr(json, "\"thread_name\""));
  cr_expect_not_null(strstr(json, "\"test main\""));
  cr_expect_not_null(strstr(json, "\"peer\":\"127.0.0.1:1\""));
  cr_expect_null(strstr(json, "\"cut\""));
  int ops = 0;
  for (const char *q = json; (q = strstr(q, "\"cat\":\"op\"")); q++) ops++;
  cr_expect_eq(ops, 15);
  free(json);
  remove(path);
  rill_tensor_destroy(x);
  rill_executor_destroy(exe);
  rill_scope_destroy(scope);
  rill_program_destroy(p);
}

static void *record_and_exit(void *arg) {
  (void)arg;
  rill_profiler_set_thread_name("short lived");
  for (int i = 0; i < 7; i++) rill_prof_op("relu", 0, i, 10 + i, 11 + i);
  return NULL;
}

Test(profiler, a_thread_that_exited_keeps_its_events) {
  OK(rill_profiler_start(NULL));
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, record_and_exit, NULL), 0);
  pthread_join(t, NULL);
  rill_profiler_summary *s = stop(NULL);
  cr_expect_eq(rill_profiler_summary_events(s), 7);
  rill_profiler_summary_destroy(s);
  /* its header is gone: the next session has nothing from it */
  OK(rill_profiler_start(NULL));
  s = stop(NULL);
  cr_expect_eq(rill_profiler_summary_events(s), 0);
  rill_profiler_summary_destroy(s);
}

Test(profiler, trace_path_errors_name_the_file) {
  OK(rill_profiler_start(NULL));
  rill_status *st = rill_profiler_stop("/nonexistent-dir/x/trace.json", NULL);
  cr_assert_not_null(st);
  cr_expect_not_null(strstr(rill_status_message(st), "/nonexistent-dir/x/trace.json"));
  rill_status_destroy(st);
  cr_expect_not(rill_profiler_enabled());
}

Test(profiler, buffer_bytes_count_allocations_and_releases) {
  int64_t before = rill_buffer_bytes_live();
  rill_buffer_bytes_reset_peak();
  const int64_t dims[] = {1 << 18};
  rill_tensor *t;
  OK(rill_tensor_create(RILL_DTYPE_FP32, dims, 1, &t));
  cr_expect_eq(rill_buffer_bytes_live(), before + (1 << 20));
  cr_expect_geq(rill_buffer_bytes_peak(), before + (1 << 20));
  rill_tensor_destroy(t);
  cr_expect_eq(rill_buffer_bytes_live(), before);
  cr_expect_geq(rill_buffer_bytes_peak(), before + (1 << 20));
  rill_buffer_bytes_reset_peak();
  cr_expect_eq(rill_buffer_bytes_peak(), before);
}
