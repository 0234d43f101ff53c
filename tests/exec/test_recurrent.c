/* recurrent (StaticRNN) and recurrent_grad: h = h_prev * w + x_t over the T rows of x
 * (last row first with reverse), h_prev starting at h0, every step's h stacked into ho;
 * loss = mean(ho). The forward is checked against a loop over the rows, in float32 and
 * float64, both directions and both schedules; the gradients of w, h0 and x the backward
 * pass gives against central differences of the loss; no step scope outlives a run;
 * and errors name the op and the variable. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "framework/data/scope.h"
#include "rill.h"
#include "support/subblock_prog.h"

#define OK(expr)                                                                     \
  do {                                                                               \
    rill_status *st_ = (expr);                                                       \
    cr_assert_null(st_, "%s: %s", #expr, rill_status_message(st_));                  \
  } while (0)

enum { T = 3, N = 6 };
static const int64_t DX[] = {T, 2, 3}, D23[] = {2, 3}, D1[] = {1};

static void var(rill_program *p, int32_t b, const char *name, rill_dtype dt, const int64_t *d,
                size_t n, bool persist) {
  OK(rill_block_add_var(p, b, name, RILL_VAR_LOD_TENSOR, dt, d, n, 0, persist));
}

static void strings(rill_op_builder *b, const char *slot, const char *one) {
  OK(rill_op_builder_attr_strings(b, slot, &one, 1));
}

static rill_program *program(rill_dtype dt, bool reverse, bool is_train) {
  rill_program *p;
  OK(rill_program_create(&p));
  var(p, 0, "x", dt, DX, 3, false);
  var(p, 0, "h0", dt, D23, 2, false);
  var(p, 0, "w", dt, D23, 2, true);
  var(p, 0, "ho", dt, DX, 3, false);
  var(p, 0, "loss", dt, D1, 1, false);
  OK(rill_block_add_var(p, 0, "sc", RILL_VAR_STEP_SCOPES, RILL_DTYPE_FP32, NULL, 0, 0, false));
  int32_t b1 = -1;
  OK(rill_program_append_block(p, 0, &b1));
  static const char *const locals[] = {"x", "hp", "m", "h", "hn", "ho"};
  for (size_t i = 0; i < sizeof locals / sizeof *locals; i++) var(p, b1, locals[i], dt, D23, 2, false);
  sbp_op(p, b1, "elementwise_mul", "hp", "w", "m");
  sbp_op(p, b1, "elementwise_add", "m", "x", "h");
  sbp_op(p, b1, "rnn_memory_helper", "h", NULL, "hn");
  sbp_op(p, b1, "rnn_memory_helper", "h", NULL, "ho");
  const char *x = "x", *h0 = "h0", *w = "w", *ho = "ho", *sc = "sc";
  rill_op_builder *b;
  OK(rill_op_builder_create("recurrent", &b));
  OK(rill_op_builder_input(b, "inputs", &x, 1));
  OK(rill_op_builder_input(b, "initial_states", &h0, 1));
  OK(rill_op_builder_input(b, "parameters", &w, 1));
  OK(rill_op_builder_output(b, "outputs", &ho, 1));
  OK(rill_op_builder_output(b, "step_scopes", &sc, 1));
  strings(b, "ex_states", "hp");
  strings(b, "states", "hn");
  OK(rill_op_builder_attr_bool(b, "has_states", true));
  OK(rill_op_builder_attr_bool(b, "reverse", reverse));
  OK(rill_op_builder_attr_bool(b, "is_train", is_train));
  OK(rill_op_builder_attr_block(b, "sub_block", b1));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  sbp_op(p, 0, "mean", "ho", NULL, "loss");
  return p;
}

/* The values every test feeds: x, h0 and w, as doubles. */
typedef struct values {
  double x[T * N], h0[N], w[N];
} values;

static values start_values(void) {
  values v;
  for (int i = 0; i < T * N; i++) v.x[i] = sin(0.7 * i) * 0.9;
  for (int i = 0; i < N; i++) {
    v.h0[i] = cos(1.3 * i) * 0.5;
    v.w[i] = 0.3 + 0.1 * i;
  }
  return v;
}

/* The reference: ho[row] for the steps in order; returns mean(ho). */
static double naive(const values *v, bool reverse, double *ho) {
  double h[N], sum = 0;
  memcpy(h, v->h0, sizeof h);
  for (int i = 0; i < T; i++) {
    int row = reverse ? T - 1 - i : i;
    for (int k = 0; k < N; k++) {
      h[k] = h[k] * v->w[k] + v->x[row * N + k];
      ho[row * N + k] = h[k];
      sum += h[k];
    }
  }
  return sum / (T * N);
}

static rill_tensor *tensor_of(rill_dtype dt, const int64_t *d, size_t nd, const double *src,
                              int n) {
  rill_tensor *t;
  OK(rill_tensor_create(dt, d, nd, &t));
  for (int i = 0; i < n; i++) {
    if (dt == RILL_DTYPE_FP64) ((double *)rill_tensor_data(t))[i] = src[i];
    else ((float *)rill_tensor_data(t))[i] = (float)src[i];
  }
  return t;
}

static double at(rill_tensor *t, rill_dtype dt, int i) {
  return dt == RILL_DTYPE_FP64 ? ((const double *)rill_tensor_data(t))[i]
                               : ((const float *)rill_tensor_data(t))[i];
}

/* One run; fetches `nfetch` names into out (caller destroys). */
static rill_status *run(rill_executor *e, rill_program *p, rill_scope *s, rill_dtype dt,
                        const values *v, const char *const *fetch, size_t nfetch,
                        rill_tensor **out) {
  rill_tensor *w = tensor_of(dt, D23, 2, v->w, N);
  OK(rill_scope_set_tensor(s, "w", w));
  rill_tensor_destroy(w);
  rill_tensor *feeds[2] = {tensor_of(dt, DX, 3, v->x, T * N), tensor_of(dt, D23, 2, v->h0, N)};
  const char *names[] = {"x", "h0"};
  rill_status *st = rill_executor_run(e, p, s, names, feeds, 2, fetch, nfetch, out);
  rill_tensor_destroy(feeds[0]);
  rill_tensor_destroy(feeds[1]);
  return st;
}

static void check_forward(rill_dtype dt, bool reverse, rill_schedule sched, bool is_train) {
  rill_program *p = program(dt, reverse, is_train);
  rill_executor *e = sbp_executor(sched);
  rill_scope *s;
  OK(rill_scope_create(NULL, &s));
  values v = start_values();
  double want[T * N];
  double loss = naive(&v, reverse, want);
  const char *fetch[] = {"ho", "loss"};
  rill_tensor *out[2] = {0};
  OK(run(e, p, s, dt, &v, fetch, 2, out));
  const int64_t *d = rill_tensor_dims(out[0]);
  cr_assert(d[0] == T && d[1] == 2 && d[2] == 3, "ho is [%lld, %lld, %lld]", (long long)d[0],
            (long long)d[1], (long long)d[2]);
  double tol = dt == RILL_DTYPE_FP64 ? 1e-12 : 1e-5;
  for (int i = 0; i < T * N; i++)
    cr_assert(fabs(at(out[0], dt, i) - want[i]) <= tol, "ho[%d] = %g, want %g", i,
              at(out[0], dt, i), want[i]);
  cr_assert(fabs(at(out[1], dt, 0) - loss) <= tol, "loss %g, want %g", at(out[1], dt, 0), loss);
  rill_tensor_destroy(out[0]);
  rill_tensor_destroy(out[1]);
  rill_scope_destroy(s);
  rill_executor_destroy(e);
  rill_program_destroy(p);
}

Test(recurrent, forward_fp32_both_directions_both_schedules) {
  for (int r = 0; r < 2; r++) {
    check_forward(RILL_DTYPE_FP32, r, RILL_SCHEDULE_SEQUENTIAL, true);
    check_forward(RILL_DTYPE_FP32, r, RILL_SCHEDULE_PARALLEL, true);
  }
}

Test(recurrent, forward_fp64_and_without_is_train) {
  for (int r = 0; r < 2; r++) {
    check_forward(RILL_DTYPE_FP64, r, RILL_SCHEDULE_SEQUENTIAL, true);
    check_forward(RILL_DTYPE_FP64, r, RILL_SCHEDULE_SEQUENTIAL, false);
  }
}

/* The loss of a forward run at v. */
static double loss_at(rill_executor *e, rill_program *p, rill_scope *s, const values *v) {
  const char *fetch[] = {"loss"};
  rill_tensor *out = NULL;
  OK(run(e, p, s, RILL_DTYPE_FP64, v, fetch, 1, &out));
  double l = at(out, RILL_DTYPE_FP64, 0);
  rill_tensor_destroy(out);
  return l;
}

static void check_grad(bool reverse, rill_schedule sched) {
  rill_program *fwd = program(RILL_DTYPE_FP64, reverse, true);
  rill_program *p = program(RILL_DTYPE_FP64, reverse, true);
  OK(rill_program_append_backward(p, "loss", NULL, 0, NULL));
  cr_assert_eq(rill_program_num_blocks(p), 3, "one gradient block");
  rill_executor *e = sbp_executor(sched);
  rill_scope *s;
  OK(rill_scope_create(NULL, &s));
  values v = start_values();
  const char *fetch[] = {"w@GRAD", "h0@GRAD", "x@GRAD"};
  rill_tensor *out[3] = {0};
  OK(run(e, p, s, RILL_DTYPE_FP64, &v, fetch, 3, out));
  double *targets[] = {v.w, v.h0, v.x};
  int sizes[] = {N, N, T * N};
  const double eps = 1e-6;
  for (int g = 0; g < 3; g++) {
    double maxabs = 0;
    for (int i = 0; i < sizes[g]; i++) {
      double keep = targets[g][i];
      targets[g][i] = keep + eps;
      double up = loss_at(e, fwd, s, &v);
      targets[g][i] = keep - eps;
      double dn = loss_at(e, fwd, s, &v);
      targets[g][i] = keep;
      double num = (up - dn) / (2 * eps), got = at(out[g], RILL_DTYPE_FP64, i);
      maxabs = fmax(maxabs, fabs(num));
      cr_assert(fabs(num - got) <= 1e-6 + 1e-5 * fabs(num), "%s[%d] = %.9g, differences %.9g",
                fetch[g], i, got, num);
    }
    cr_assert(maxabs > 1e-3, "%s is not trivially zero", fetch[g]);
    rill_tensor_destroy(out[g]);
  }
  rill_scope_destroy(s);
  rill_executor_destroy(e);
  rill_program_destroy(p);
  rill_program_destroy(fwd);
}

Test(recurrent, gradients_match_finite_differences) {
  check_grad(false, RILL_SCHEDULE_SEQUENTIAL);
  check_grad(true, RILL_SCHEDULE_PARALLEL);
}

/* A float32 training program (with or without is_train), a sequential executor, a
 * scope and the start values: what the last tests share. */
typedef struct trainer {
  rill_program *p;
  rill_executor *e;
  rill_scope *s;
  values v;
} trainer;

static trainer trainer_make(bool is_train) {
  trainer t = {.p = program(RILL_DTYPE_FP32, false, is_train), .v = start_values()};
  OK(rill_program_append_backward(t.p, "loss", NULL, 0, NULL));
  t.e = sbp_executor(RILL_SCHEDULE_SEQUENTIAL);
  OK(rill_scope_create(NULL, &t.s));
  return t;
}

static void trainer_free(trainer *t) {
  rill_scope_destroy(t->s);
  rill_executor_destroy(t->e);
  rill_program_destroy(t->p);
}

/* One run fetching w@GRAD (destroyed at once). */
static rill_status *train_once(trainer *t) {
  const char *fetch[] = {"w@GRAD"};
  rill_tensor *out = NULL;
  rill_status *st = run(t->e, t->p, t->s, RILL_DTYPE_FP32, &t->v, fetch, 1, &out);
  rill_tensor_destroy(out);
  return st;
}

Test(recurrent, step_scopes_do_not_outlive_the_run) {
  trainer t = trainer_make(true);
  OK(train_once(&t));
  size_t after_first = rill_scope_live_count();
  for (int k = 0; k < 10; k++) {
    OK(train_once(&t));
    cr_assert_eq(rill_scope_live_count(), after_first, "run %d: %zu scopes live, %zu after the "
                 "first", k, rill_scope_live_count(), after_first);
  }
  trainer_free(&t);
}

static void expect_error(rill_status *st, const char *const *parts, size_t n) {
  cr_assert_not_null(st, "the run should fail");
  const char *msg = rill_status_message(st);
  for (size_t i = 0; i < n; i++)
    cr_assert_not_null(strstr(msg, parts[i]), "'%s' not in: %s", parts[i], msg);
  rill_status_destroy(st);
}

Test(recurrent, gradient_without_kept_scopes_is_an_error) {
  trainer t = trainer_make(false);
  static const char *const parts[] = {"recurrent_grad", "step_scopes 'sc'", "is_train"};
  expect_error(train_once(&t), parts, 3);
  trainer_free(&t);
}

Test(recurrent, mismatched_state_lists_are_an_error) {
  rill_program *p;
  OK(rill_program_create(&p));
  var(p, 0, "x", RILL_DTYPE_FP32, DX, 3, false);
  var(p, 0, "ho", RILL_DTYPE_FP32, DX, 3, false);
  OK(rill_block_add_var(p, 0, "sc", RILL_VAR_STEP_SCOPES, RILL_DTYPE_FP32, NULL, 0, 0, false));
  int32_t b1 = -1;
  OK(rill_program_append_block(p, 0, &b1));
  var(p, b1, "x", RILL_DTYPE_FP32, D23, 2, false);
  var(p, b1, "ho", RILL_DTYPE_FP32, D23, 2, false);
  sbp_op(p, b1, "rnn_memory_helper", "x", NULL, "ho");
  const char *x = "x", *ho = "ho", *sc = "sc";
  rill_op_builder *b;
  OK(rill_op_builder_create("recurrent", &b));
  OK(rill_op_builder_input(b, "inputs", &x, 1));
  OK(rill_op_builder_output(b, "outputs", &ho, 1));
  OK(rill_op_builder_output(b, "step_scopes", &sc, 1));
  strings(b, "ex_states", "hp");
  OK(rill_op_builder_attr_bool(b, "has_states", true));
  OK(rill_op_builder_attr_block(b, "sub_block", b1));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  rill_executor *e = sbp_executor(RILL_SCHEDULE_SEQUENTIAL);
  rill_scope *s;
  OK(rill_scope_create(NULL, &s));
  values v = start_values();
  rill_tensor *feed = tensor_of(RILL_DTYPE_FP32, DX, 3, v.x, T * N);
  const char *fetch[] = {"ho"};
  rill_tensor *out = NULL;
  static const char *const parts[] = {"recurrent", "1 ex_states, 0 states and 0 initial_states"};
  expect_error(rill_executor_run(e, p, s, &x, &feed, 1, fetch, 1, &out), parts, 2);
  rill_tensor_destroy(feed);
  rill_scope_destroy(s);
  rill_executor_destroy(e);
  rill_program_destroy(p);
}
