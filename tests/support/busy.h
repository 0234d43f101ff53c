/* Helpers for the tests of one executor or predictor used from two threads at once
 * (header-only, so the plain-C thread stress programs can use it too):
 *
 *   test_gate   an op, Out = X (float32), whose kernel can hold a run inside it: after
 *               busy_gate_arm(n), the next n kernel entries wait until busy_gate_open()
 *               (10 s at most). busy_gate_entered() counts entries, so a test knows a
 *               run is inside the kernel before it makes the colliding call.
 *   busy_chain_program  x -> `nops` scale ops (scale 1, bias 1) -> y, with feed and
 *               fetch ops; y = x + nops exactly for small integers x.
 *   busy_hammer two threads call the same run function as fast as they can; every call
 *               must succeed with the right answer or fail with FAILED_PRECONDITION;
 *               they stop once both have made `min_calls` calls and at least one call
 *               collided, or after `max_seconds`.
 */
#ifndef RILL_TESTS_SUPPORT_BUSY_H
#define RILL_TESTS_SUPPORT_BUSY_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "framework/registry/registry.h"
#include "rill.h"

static atomic_int busy_gate_holds;   /* entries still to hold */
static atomic_int busy_gate_in;      /* kernel entries so far */
static atomic_bool busy_gate_is_open;

static inline void busy_sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static inline void busy_gate_arm(int n) {
  atomic_store(&busy_gate_is_open, false);
  atomic_store(&busy_gate_in, 0);
  atomic_store(&busy_gate_holds, n);
}
static inline void busy_gate_open(void) { atomic_store(&busy_gate_is_open, true); }
static inline int busy_gate_entered(void) { return atomic_load(&busy_gate_in); }

/* Waits (10 s at most) until `n` kernels have entered the gate; false on time-out. */
static inline bool busy_gate_wait_entered(int n) {
  for (int i = 0; i < 10000 && busy_gate_entered() < n; i++) busy_sleep_ms(1);
  return busy_gate_entered() >= n;
}

static rill_status *busy_gate_infer(rill_infer_ctx *c) {
  if (c->nin[0] < 1 || c->nout[0] < 1) return rill_infer_error(c, "needs X and Out");
  rill_tensor_meta *o = &c->out[0][0];
  *o = c->in[0][0];
  o->lod_from[0] = o->lod_from[1] = -1;
  return NULL;
}

static rill_status *busy_gate_kernel(rill_kernel_ctx *c) {
  atomic_fetch_add(&busy_gate_in, 1);
  if (atomic_fetch_sub(&busy_gate_holds, 1) > 0)
    for (int i = 0; i < 10000 && !atomic_load(&busy_gate_is_open); i++) busy_sleep_ms(1);
  rill_tensor *x = rill_kin(c, 0, 0), *out = rill_kout(c, 0, 0);
  if (!x || !out || x->dtype != RILL_DTYPE_FP32 || !out->buf)
    return rill_kernel_error(c, "needs float32 X and Out");
  memmove(rill_tensor_ptr(out), rill_tensor_ptr(x), (size_t)rill_tensor_numel(x) * sizeof(float));
  return NULL;
}

static const rill_slot_schema busy_gate_in_slots[] = {{"X", 0, "input"}};
static const rill_slot_schema busy_gate_out_slots[] = {{"Out", 0, "output"}};
static const rill_op_schema busy_gate_schema = {
    .type = "test_gate", .doc = "test: holds a run inside its kernel", .inputs = busy_gate_in_slots,
    .ninputs = 1, .outputs = busy_gate_out_slots, .noutputs = 1, .infer = busy_gate_infer,
    .kernel_dtype_slot = 0, .dtype_attr = -1};
static const rill_kernel_def busy_gate_kernel_def = {"test_gate", RILL_DEVICE_CPU, RILL_DTYPE_FP32,
                                                     busy_gate_kernel, NULL};

/* Registers test_gate once per process; false on failure. */
static inline bool busy_gate_register(void) {
  rill_status *st = rill_registry_init();
  if (!st) st = rill_registry_add_op(&busy_gate_schema);
  if (st && rill_status_code(st) == RILL_ALREADY_EXISTS) {
    rill_status_destroy(st);
    st = NULL;
  }
  if (!st) st = rill_registry_add_kernel(&busy_gate_kernel_def);
  if (st && rill_status_code(st) == RILL_ALREADY_EXISTS) {
    rill_status_destroy(st);
    st = NULL;
  }
  if (st) {
    fprintf(stderr, "test_gate: %s\n", rill_status_message(st));
    rill_status_destroy(st);
    return false;
  }
  return true;
}

static inline rill_status *busy_add_op(rill_program *p, const char *type, const char *in,
                                       const char *in_slot, const char *out, int32_t col) {
  rill_op_builder *b;
  RILL_TRY(rill_op_builder_create(type, &b));
  rill_status *st = rill_op_builder_input(b, in_slot, &in, 1);
  if (!st) st = rill_op_builder_output(b, "Out", &out, 1);
  if (!st && col >= 0) st = rill_op_builder_attr_int(b, "col", col);
  if (!st && strcmp(type, "scale") == 0) st = rill_op_builder_attr_float(b, "bias", 1.0f);
  if (!st) st = rill_op_builder_append(b, p, 0);
  rill_op_builder_destroy(b);
  return st;
}

/* feed -> x -> `middle` ops of `type` -> y -> fetch, x and y float32 [-1, width]. */
static inline rill_status *busy_program(const char *type, int nops, int64_t width,
                                        rill_program **out) {
  rill_program *p;
  RILL_TRY(rill_program_create(&p));
  int64_t dims[] = {-1, width};
  rill_status *st =
      rill_block_add_var(p, 0, "feed", RILL_VAR_FEED_MINIBATCH, RILL_DTYPE_FP32, NULL, 0, 0, true);
  if (!st)
    st = rill_block_add_var(p, 0, "fetch", RILL_VAR_FETCH_LIST, RILL_DTYPE_FP32, NULL, 0, 0, true);
  if (!st) st = rill_block_add_var(p, 0, "x", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, dims, 2, 0, false);
  if (!st) st = busy_add_op(p, "feed", "feed", "X", "x", 0);
  char prev[32] = "x", next[32];
  for (int i = 0; !st && i < nops; i++) {
    if (i == nops - 1)
      snprintf(next, sizeof next, "y");
    else
      snprintf(next, sizeof next, "t%d", i);
    st = rill_block_add_var(p, 0, next, RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, dims, 2, 0, false);
    if (!st) st = busy_add_op(p, type, prev, "X", next, -1);
    memcpy(prev, next, sizeof prev);
  }
  if (!st) st = busy_add_op(p, "fetch", "y", "X", "fetch", 0);
  if (st) {
    rill_program_destroy(p);
    return st;
  }
  *out = p;
  return NULL;
}

/* One call of the code under test: NULL or a status; on success *out holds the answer. */
typedef rill_status *(*busy_run_fn)(void *ctx, rill_tensor **out);
/* True when `out` is the right answer. */
typedef bool (*busy_check_fn)(void *ctx, rill_tensor *out);

typedef struct busy_result {
  long ok, collided, other_errors, wrong;
  char first_error[512];
} busy_result;

typedef struct busy_worker {
  busy_run_fn run;
  busy_check_fn check;
  void *ctx;
  long min_calls;
  double max_seconds;
  atomic_long *collisions; /* shared by both workers */
  busy_result r;
  char message[512];       /* the message of one collision */
} busy_worker;

static inline double busy_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *busy_work(void *arg) {
  busy_worker *w = arg;
  double end = busy_now() + w->max_seconds;
  for (long calls = 0;; calls++) {
    if (calls >= w->min_calls && atomic_load(w->collisions) > 0) break;
    if (busy_now() > end) break;
    rill_tensor *out = NULL;
    rill_status *st = w->run(w->ctx, &out);
    if (!st) {
      if (w->check(w->ctx, out))
        w->r.ok++;
      else
        w->r.wrong++;
      rill_tensor_destroy(out);
    } else if (rill_status_code(st) == RILL_FAILED_PRECONDITION) {
      w->r.collided++;
      atomic_fetch_add(w->collisions, 1);
      if (!w->message[0]) snprintf(w->message, sizeof w->message, "%s", rill_status_message(st));
    } else {
      if (!w->r.other_errors++)
        snprintf(w->r.first_error, sizeof w->r.first_error, "%s", rill_status_message(st));
    }
    rill_status_destroy(st);
  }
  return NULL;
}

/* Two threads on one `run`; the counts of both are added into *r, and one collision's
 * message is copied into `message`. */
static inline void busy_hammer(busy_run_fn run, busy_check_fn check, void *ctx, long min_calls,
                               double max_seconds, busy_result *r, char *message, size_t size) {
  atomic_long collisions;
  atomic_init(&collisions, 0);
  busy_worker w[2];
  memset(w, 0, sizeof w);
  pthread_t t[2];
  for (int i = 0; i < 2; i++) {
    w[i].run = run;
    w[i].check = check;
    w[i].ctx = ctx;
    w[i].min_calls = min_calls;
    w[i].max_seconds = max_seconds;
    w[i].collisions = &collisions;
    pthread_create(&t[i], NULL, busy_work, &w[i]);
  }
  memset(r, 0, sizeof *r);
  message[0] = 0;
  for (int i = 0; i < 2; i++) {
    pthread_join(t[i], NULL);
    r->ok += w[i].r.ok;
    r->collided += w[i].r.collided;
    r->other_errors += w[i].r.other_errors;
    r->wrong += w[i].r.wrong;
    if (!r->first_error[0]) memcpy(r->first_error, w[i].r.first_error, sizeof r->first_error);
    if (!message[0] && w[i].message[0]) snprintf(message, size, "%s", w[i].message);
  }
}

#endif
