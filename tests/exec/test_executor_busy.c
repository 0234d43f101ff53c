/* One executor, two threads: a call made while another thread's run holds the executor
 * fails with FAILED_PRECONDITION naming the executor and the program, and leaves the
 * running call alone; every way out of a run releases the executor; two threads
 * hammering one executor only ever get right answers or that error. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>

#include "support/busy.h"
#include "framework/exec/executor.h"
#include "rill.h"

#define OK(expr)                                                                     \
  do {                                                                               \
    rill_status *st_ = (expr);                                                       \
    cr_assert_null(st_, "%s: %s", #expr, rill_status_message(st_));                  \
  } while (0)

enum { WIDTH = 4096, CHAIN = 24 };

typedef struct fixture {
  rill_executor *exe;
  rill_scope *scope;
  rill_program *prog;
  rill_tensor *x;
} fixture;

static const char *const feed_x[] = {"x"};
static const char *const fetch_y[] = {"y"};

static fixture setup(const char *type, int nops) {
  fixture f;
  cr_assert(busy_gate_register());
  rill_executor_options o = RILL_EXECUTOR_OPTIONS_INIT;
  o.num_threads = 1;
  OK(rill_executor_create(&o, &f.exe));
  OK(rill_scope_create(NULL, &f.scope));
  OK(busy_program(type, nops, WIDTH, &f.prog));
  int64_t dims[] = {2, WIDTH};
  OK(rill_tensor_create(RILL_DTYPE_FP32, dims, 2, &f.x));
  float *x = rill_tensor_data(f.x);
  for (int i = 0; i < 2 * WIDTH; i++) x[i] = (float)(i % 97);
  return f;
}

static void teardown(fixture *f) {
  rill_tensor_destroy(f->x);
  rill_program_destroy(f->prog);
  rill_scope_destroy(f->scope);
  rill_executor_destroy(f->exe);
}

static rill_status *run(fixture *f, rill_tensor **y) {
  return rill_executor_run(f->exe, f->prog, f->scope, feed_x, &f->x, 1, fetch_y, 1, y);
}

/* y = x + add, element by element, exactly. */
static bool answer_is(const rill_tensor *x, rill_tensor *y, float add) {
  if (rill_tensor_numel(y) != 2 * WIDTH) return false;
  const float *xp = rill_tensor_data((rill_tensor *)x), *yp = rill_tensor_data(y);
  for (int i = 0; i < 2 * WIDTH; i++)
    if (yp[i] != xp[i] + add) return false;
  return true;
}

typedef struct held_run {
  fixture *f;
  rill_status *st;
  rill_tensor *y;
} held_run;

static void *run_in_thread(void *arg) {
  held_run *h = arg;
  h->st = run(h->f, &h->y);
  return NULL;
}

static void expect_busy(rill_status *st, const char *what) {
  cr_assert_not_null(st, "%s succeeded while another thread's run held the executor", what);
  cr_assert_eq(rill_status_code(st), RILL_FAILED_PRECONDITION, "%s: %s", what,
               rill_status_message(st));
  const char *m = rill_status_message(st);
  cr_assert(strstr(m, "in use by another thread") && strstr(m, "rill_executor_create"),
            "%s: %s", what, m);
  rill_status_destroy(st);
}

Test(exec_busy, call_during_a_run_fails_with_failed_precondition) {
  fixture f = setup("test_gate", 1);
  busy_gate_arm(1);
  held_run h = {&f, NULL, NULL};
  pthread_t t;
  pthread_create(&t, NULL, run_in_thread, &h);
  cr_assert(busy_gate_wait_entered(1), "the first run never reached its kernel");

  rill_tensor *y = NULL;
  rill_status *st = run(&f, &y);
  char program[32];
  snprintf(program, sizeof program, "program #%llu", (unsigned long long)f.prog->id);
  cr_assert(st && strstr(rill_status_message(st), program), "%s does not name %s",
            rill_status_message(st), program);
  expect_busy(st, "rill_executor_run");
  cr_assert_null(y);
  expect_busy(rill_executor_prepare(f.exe, f.prog, feed_x, 1, fetch_y, 1), "rill_executor_prepare");
  expect_busy(rill_executor_set_plan_cache_size(f.exe, 1), "rill_executor_set_plan_cache_size");
  /* The guard is the executor's: another program on it collides too ... */
  rill_program *other = NULL;
  OK(busy_program("scale", 2, WIDTH, &other));
  expect_busy(rill_executor_run(f.exe, other, f.scope, feed_x, &f.x, 1, fetch_y, 1, &y),
              "rill_executor_run of another program");
  /* ... while another executor runs the same program at the same time. */
  rill_executor *second;
  rill_executor_options o = RILL_EXECUTOR_OPTIONS_INIT;
  o.num_threads = 1;
  OK(rill_executor_create(&o, &second));
  OK(rill_executor_run(second, f.prog, f.scope, feed_x, &f.x, 1, fetch_y, 1, &y));
  cr_assert(answer_is(f.x, y, 0.0f));
  rill_tensor_destroy(y);
  rill_executor_destroy(second);
  cr_assert_eq(busy_gate_entered(), 2);

  busy_gate_open();
  pthread_join(t, NULL);
  cr_assert_null(h.st, "the held run: %s", rill_status_message(h.st));
  cr_assert(answer_is(f.x, h.y, 0.0f), "the held run's answer changed");
  rill_tensor_destroy(h.y);
  /* Released: the next run, on either program, goes through. */
  OK(run(&f, &y));
  cr_assert(answer_is(f.x, y, 0.0f));
  rill_tensor_destroy(y);
  OK(rill_executor_run(f.exe, other, f.scope, feed_x, &f.x, 1, fetch_y, 1, &y));
  cr_assert(answer_is(f.x, y, 2.0f));
  rill_tensor_destroy(y);
  rill_program_destroy(other);
  teardown(&f);
}

Test(exec_busy, failing_calls_release_the_executor) {
  fixture f = setup("scale", 2);
  rill_tensor *y = NULL;
  /* Fails in the run (the feed is missing), in prepare (unknown fetch), then works. */
  rill_status *st = rill_executor_run(f.exe, f.prog, f.scope, NULL, NULL, 0, fetch_y, 1, &y);
  cr_assert_eq(rill_status_code(st), RILL_INVALID_ARGUMENT, "%s", rill_status_message(st));
  rill_status_destroy(st);
  const char *nowhere = "nowhere";
  st = rill_executor_run(f.exe, f.prog, f.scope, feed_x, &f.x, 1, &nowhere, 1, &y);
  cr_assert_not_null(st);
  cr_assert_neq(rill_status_code(st), RILL_FAILED_PRECONDITION, "%s", rill_status_message(st));
  rill_status_destroy(st);
  st = rill_executor_prepare(f.exe, f.prog, feed_x, 1, &nowhere, 1);
  cr_assert_neq(rill_status_code(st), RILL_FAILED_PRECONDITION, "%s", rill_status_message(st));
  rill_status_destroy(st);
  OK(run(&f, &y));
  cr_assert(answer_is(f.x, y, 2.0f));
  rill_tensor_destroy(y);
  teardown(&f);
}

static rill_status *hammer_run(void *ctx, rill_tensor **out) { return run(ctx, out); }
static bool hammer_check(void *ctx, rill_tensor *out) {
  return answer_is(((fixture *)ctx)->x, out, (float)CHAIN);
}

Test(exec_busy, two_threads_on_one_executor_get_right_answers_or_the_error) {
  fixture f = setup("scale", CHAIN);
  busy_result r;
  char message[512];
  busy_hammer(hammer_run, hammer_check, &f, 200, 20.0, &r, message, sizeof message);
  cr_log_info("%ld right answers, %ld collisions", r.ok, r.collided);
  cr_assert_eq(r.wrong, 0, "%ld wrong answers (%ld right, %ld collisions)", r.wrong, r.ok,
               r.collided);
  cr_assert_eq(r.other_errors, 0, "%ld other errors, the first: %s", r.other_errors, r.first_error);
  cr_assert_gt(r.collided, 0, "no collision in %ld runs", r.ok);
  cr_assert_gt(r.ok, 0);
  cr_assert(strstr(message, "in use by another thread"), "%s", message);
  teardown(&f);
}
