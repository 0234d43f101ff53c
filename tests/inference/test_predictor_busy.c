/* One predictor, two threads: a run made while another thread's run holds the predictor
 * fails with FAILED_PRECONDITION naming the model and pointing at rill_predictor_clone,
 * and leaves the running call alone; a clone runs meanwhile; every way out of a run
 * releases the predictor; two threads hammering one predictor over a real model only
 * ever get the single-threaded answer or that error. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/busy.h"
#include "framework/io/npy.h"
#include "rill.h"

#define OK(expr)                                                                     \
  do {                                                                               \
    rill_status *st_ = (expr);                                                       \
    cr_assert_null(st_, "%s: %s", #expr, rill_status_message(st_));                  \
  } while (0)

#define MODELS RILL_SHARED_DIR "/models/"

enum { WIDTH = 64 };

static const char *const input_x[] = {"x"};

typedef struct gated {
  char dir[64], file[96];
  rill_predictor *p;
  rill_tensor *x;
} gated;

/* A saved model whose one op is test_gate, and a predictor over it. */
static gated open_gated(void) {
  gated g;
  cr_assert(busy_gate_register());
  snprintf(g.dir, sizeof g.dir, "/tmp/rill_busy_XXXXXX");
  cr_assert_not_null(mkdtemp(g.dir));
  snprintf(g.file, sizeof g.file, "%s/__model__", g.dir);
  rill_program *prog = NULL;
  OK(busy_program("test_gate", 1, WIDTH, &prog));
  OK(rill_program_save(prog, g.file));
  rill_program_destroy(prog);
  rill_predictor_config *c;
  OK(rill_predictor_config_create(g.dir, &c));
  OK(rill_predictor_config_set_threads(c, 1));
  OK(rill_predictor_create(c, &g.p));
  rill_predictor_config_destroy(c);
  int64_t dims[] = {3, WIDTH};
  OK(rill_tensor_create(RILL_DTYPE_FP32, dims, 2, &g.x));
  float *x = rill_tensor_data(g.x);
  for (int i = 0; i < 3 * WIDTH; i++) x[i] = (float)i * 0.5f;
  return g;
}

static void close_gated(gated *g) {
  rill_tensor_destroy(g->x);
  rill_predictor_destroy(g->p);
  unlink(g->file);
  rmdir(g->dir);
}

static bool same(rill_tensor *a, rill_tensor *b) {
  return rill_tensor_numel(a) == rill_tensor_numel(b) &&
         memcmp(rill_tensor_data(a), rill_tensor_data(b),
                (size_t)rill_tensor_numel(a) * sizeof(float)) == 0;
}

typedef struct held_run {
  rill_predictor *p;
  rill_tensor *x;
  rill_status *st;
  rill_tensor *y;
} held_run;

static void *run_in_thread(void *arg) {
  held_run *h = arg;
  h->st = rill_predictor_run(h->p, input_x, &h->x, 1, &h->y);
  return NULL;
}

Test(predictor_busy, run_during_a_run_fails_with_failed_precondition) {
  gated g = open_gated();
  busy_gate_arm(1);
  held_run h = {g.p, g.x, NULL, NULL};
  pthread_t t;
  pthread_create(&t, NULL, run_in_thread, &h);
  cr_assert(busy_gate_wait_entered(1), "the first run never reached its kernel");

  rill_tensor *y = NULL;
  rill_status *st = rill_predictor_run(g.p, input_x, &g.x, 1, &y);
  cr_assert_not_null(st, "a second run went through while the first held the predictor");
  cr_assert_eq(rill_status_code(st), RILL_FAILED_PRECONDITION, "%s", rill_status_message(st));
  const char *m = rill_status_message(st);
  cr_assert(strstr(m, "predictor is in use by another thread; use rill_predictor_clone"), "%s", m);
  cr_assert(strstr(m, g.dir), "%s does not name the model", m);
  rill_status_destroy(st);
  cr_assert_null(y);
  /* Even a call with bad arguments is refused before it touches the predictor. */
  st = rill_predictor_run(g.p, NULL, NULL, 0, &y);
  cr_assert_eq(rill_status_code(st), RILL_FAILED_PRECONDITION, "%s", rill_status_message(st));
  rill_status_destroy(st);
  /* A clone is the way: it runs while the original is held. */
  rill_predictor *clone;
  OK(rill_predictor_clone(g.p, &clone));
  OK(rill_predictor_run(clone, input_x, &g.x, 1, &y));
  cr_assert(same(g.x, y));
  rill_tensor_destroy(y);
  rill_predictor_destroy(clone);

  busy_gate_open();
  pthread_join(t, NULL);
  cr_assert_null(h.st, "the held run: %s", rill_status_message(h.st));
  cr_assert(same(g.x, h.y), "the held run's answer changed");
  rill_tensor_destroy(h.y);
  OK(rill_predictor_run(g.p, input_x, &g.x, 1, &y));
  cr_assert(same(g.x, y));
  rill_tensor_destroy(y);
  close_gated(&g);
}

Test(predictor_busy, failing_runs_release_the_predictor) {
  gated g = open_gated();
  rill_tensor *y = NULL;
  const char *wrong = "nothing";
  rill_status *st = rill_predictor_run(g.p, &wrong, &g.x, 1, &y);
  cr_assert_eq(rill_status_code(st), RILL_INVALID_ARGUMENT, "%s", rill_status_message(st));
  rill_status_destroy(st);
  st = rill_predictor_run(g.p, input_x, &g.x, 0, &y);
  cr_assert_eq(rill_status_code(st), RILL_INVALID_ARGUMENT, "%s", rill_status_message(st));
  rill_status_destroy(st);
  int64_t dims[] = {3, WIDTH};
  rill_tensor *bad;
  OK(rill_tensor_create(RILL_DTYPE_INT32, dims, 2, &bad));
  st = rill_predictor_run(g.p, input_x, &bad, 1, &y);
  cr_assert_eq(rill_status_code(st), RILL_INVALID_ARGUMENT, "%s", rill_status_message(st));
  rill_status_destroy(st);
  rill_tensor_destroy(bad);
  OK(rill_predictor_run(g.p, input_x, &g.x, 1, &y));
  cr_assert(same(g.x, y));
  rill_tensor_destroy(y);
  close_gated(&g);
}

typedef struct real_model {
  rill_predictor *p;
  rill_tensor *input;
  const char *name;
  rill_tensor *want;
} real_model;

static rill_status *hammer_run(void *ctx, rill_tensor **out) {
  real_model *r = ctx;
  return rill_predictor_run(r->p, &r->name, &r->input, 1, out);
}
static bool hammer_check(void *ctx, rill_tensor *out) { return same(((real_model *)ctx)->want, out); }

static void hammer(rill_schedule schedule) {
  real_model r;
  rill_predictor_config *c;
  OK(rill_predictor_config_create(MODELS "mnist_conv_bn_etienne", &c));
  OK(rill_predictor_config_set_threads(c, 2));
  OK(rill_predictor_config_set_schedule(c, schedule));
  OK(rill_predictor_create(c, &r.p));
  rill_predictor_config_destroy(c);
  OK(rill_npy_load(MODELS "mnist_conv_bn_etienne/refs/input_img.npy", &r.input));
  r.name = rill_predictor_input_name(r.p, 0);
  OK(rill_predictor_run(r.p, &r.name, &r.input, 1, &r.want));
  busy_result res;
  char message[512];
  busy_hammer(hammer_run, hammer_check, &r, 100, 20.0, &res, message, sizeof message);
  cr_log_info("%ld right answers, %ld collisions", res.ok, res.collided);
  cr_assert_eq(res.wrong, 0, "%ld wrong answers (%ld right, %ld collisions)", res.wrong, res.ok,
               res.collided);
  cr_assert_eq(res.other_errors, 0, "%ld other errors, the first: %s", res.other_errors,
               res.first_error);
  cr_assert_gt(res.collided, 0, "no collision in %ld runs", res.ok);
  cr_assert_gt(res.ok, 0);
  cr_assert(strstr(message, "use rill_predictor_clone"), "%s", message);
  rill_tensor_destroy(r.want);
  rill_tensor_destroy(r.input);
  rill_predictor_destroy(r.p);
}

Test(predictor_busy, two_threads_on_one_predictor_get_right_answers_or_the_error) {
  hammer(RILL_SCHEDULE_SEQUENTIAL);
  hammer(RILL_SCHEDULE_PARALLEL);
}
