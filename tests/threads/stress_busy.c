/* One predictor and one executor, each used from two threads at once (which the API
 * does not support): every call must either give the single-threaded answer or fail
 * with FAILED_PRECONDITION, and at least one call must collide. Under ThreadSanitizer
 * this checks that the busy flags keep the second thread out of everything the first
 * one's run touches. */
#include <string.h>

#include "../support/busy.h"
#include "check.h"
#include "framework/io/npy.h"
#include "rill.h"

#define MODELS RILL_SHARED_DIR "/models/"

enum { WIDTH = 2048, CHAIN = 16 };

typedef struct target {
  rill_predictor *p;
  rill_executor *exe;
  rill_program *prog;
  rill_scope *scope;
  rill_tensor *input;
  const char *name;
  rill_tensor *want;
} target;

static bool same(rill_tensor *a, rill_tensor *b) {
  return rill_tensor_numel(a) == rill_tensor_numel(b) &&
         memcmp(rill_tensor_data(a), rill_tensor_data(b),
                (size_t)rill_tensor_numel(a) * sizeof(float)) == 0;
}

static rill_status *run_predictor(void *ctx, rill_tensor **out) {
  target *t = ctx;
  return rill_predictor_run(t->p, &t->name, &t->input, 1, out);
}

static rill_status *run_executor(void *ctx, rill_tensor **out) {
  target *t = ctx;
  const char *fetch = "y";
  return rill_executor_run(t->exe, t->prog, t->scope, &t->name, &t->input, 1, &fetch, 1, out);
}

static bool right(void *ctx, rill_tensor *out) { return same(((target *)ctx)->want, out); }

static void report(const char *what, const busy_result *r, const char *message, const char *hint) {
  printf("%s: %ld right answers, %ld collisions\n", what, r->ok, r->collided);
  CHECK(r->wrong == 0, "%s: %ld wrong answers", what, r->wrong);
  CHECK(r->other_errors == 0, "%s: %ld other errors, the first: %s", what, r->other_errors,
        r->first_error);
  CHECK(r->collided > 0 && r->ok > 0, "%s: %ld collisions, %ld right answers", what, r->collided,
        r->ok);
  CHECK(strstr(message, hint) != NULL, "%s: collision message '%s'", what, message);
}

static void predictor(rill_schedule schedule) {
  target t = {0};
  rill_predictor_config *c = NULL;
  rill_status *st = rill_predictor_config_create(MODELS "mnist_conv_bn_etienne", &c);
  if (!st) st = rill_predictor_config_set_threads(c, 2);
  if (!st) st = rill_predictor_config_set_schedule(c, schedule);
  if (!st) st = rill_predictor_create(c, &t.p);
  rill_predictor_config_destroy(c);
  if (!st) st = rill_npy_load(MODELS "mnist_conv_bn_etienne/refs/input_img.npy", &t.input);
  if (!st) t.name = rill_predictor_input_name(t.p, 0);
  if (!st) st = rill_predictor_run(t.p, &t.name, &t.input, 1, &t.want);
  CHECK(st == NULL, "predictor: %s", rill_status_message(st));
  if (!st) {
    busy_result r;
    char message[512];
    busy_hammer(run_predictor, right, &t, 50, 60.0, &r, message, sizeof message);
    report(schedule == RILL_SCHEDULE_PARALLEL ? "predictor, parallel" : "predictor, sequential",
           &r, message, "use rill_predictor_clone");
  }
  rill_status_destroy(st);
  rill_tensor_destroy(t.want);
  rill_tensor_destroy(t.input);
  rill_predictor_destroy(t.p);
}

static void executor(void) {
  target t = {0};
  rill_executor_options o = RILL_EXECUTOR_OPTIONS_INIT;
  o.num_threads = 2;
  int64_t dims[] = {2, WIDTH};
  rill_status *st = rill_executor_create(&o, &t.exe);
  if (!st) st = rill_scope_create(NULL, &t.scope);
  if (!st) st = busy_program("scale", CHAIN, WIDTH, &t.prog);
  if (!st) st = rill_tensor_create(RILL_DTYPE_FP32, dims, 2, &t.input);
  if (!st) st = rill_tensor_create(RILL_DTYPE_FP32, dims, 2, &t.want);
  if (!st) {
    float *x = rill_tensor_data(t.input), *y = rill_tensor_data(t.want);
    for (int i = 0; i < 2 * WIDTH; i++) {
      x[i] = (float)(i % 89);
      y[i] = x[i] + (float)CHAIN;
    }
    t.name = "x";
  }
  CHECK(st == NULL, "executor: %s", rill_status_message(st));
  if (!st) {
    busy_result r;
    char message[512];
    busy_hammer(run_executor, right, &t, 50, 60.0, &r, message, sizeof message);
    report("executor", &r, message, "rill_executor_create");
  }
  rill_status_destroy(st);
  rill_tensor_destroy(t.want);
  rill_tensor_destroy(t.input);
  rill_program_destroy(t.prog);
  rill_scope_destroy(t.scope);
  rill_executor_destroy(t.exe);
}

int main(void) {
  predictor(RILL_SCHEDULE_SEQUENTIAL);
  predictor(RILL_SCHEDULE_PARALLEL);
  executor();
  return check_report();
}
