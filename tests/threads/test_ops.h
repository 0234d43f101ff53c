/* Ops registered by the scheduler tests, the parallel stress program and the parallel
 * benchmark through the registration API (header-only, so plain-C programs can use it):
 *   test_add    Out = X + value, `cost` times over (busy compute; deterministic);
 *               fails with INTERNAL when `fail` is set;
 *   test_sleep  blocking: sleeps `us` microseconds, then Out = X + value;
 *   test_mark   side effect: appends `id` to a global log; no slots;
 *   test_loop   runs a sub-block (attr `sub_block`); its kernel does nothing;
 *   test_xfer   blocking, a concurrent side effect (as send and recv): Out = X + value
 *               after waiting (up to `us` microseconds) for another test_xfer kernel to
 *               be running too; test_xfer_peak records how many ran at once.
 * test_ops_started counts kernels entered (for cancel tests). */
#ifndef RILL_TESTS_THREADS_TEST_OPS_H
#define RILL_TESTS_THREADS_TEST_OPS_H

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "framework/registry/registry.h"

static atomic_int test_ops_started;
static int test_mark_log[4096];
static atomic_int test_mark_n;
static atomic_int test_sleeping; /* test_sleep kernels inside their sleep */
static atomic_int test_overlap;  /* test_add kernels that started while one slept */
/* When set, a test_add kernel first waits (up to 2 s) for a test_sleep kernel to be
 * inside its sleep, so that a test of overlap does not depend on which thread the OS
 * runs first on a loaded machine: a schedule that holds compute up behind the blocking
 * op still shows no overlap. */
static atomic_int test_add_waits_for_sleeper;
static atomic_int test_xfer_running, test_xfer_peak;

static rill_status *test_same_infer(rill_infer_ctx *c) {
  if (c->nin[0] < 1 || c->nout[0] < 1) return rill_infer_error(c, "needs X and Out");
  rill_tensor_meta *o = &c->out[0][0];
  *o = c->in[0][0];
  o->lod_from[0] = o->lod_from[1] = -1;
  return NULL;
}

static rill_status *test_apply(rill_kernel_ctx *c, float value, int32_t cost) {
  rill_tensor *x = rill_kin(c, 0, 0), *out = rill_kout(c, 0, 0);
  if (!x || !out || x->dtype != RILL_DTYPE_FP32 || !out->buf)
    return rill_kernel_error(c, "needs float32 X and Out");
  const float *xp = rill_tensor_ptr(x);
  float *op = rill_tensor_ptr(out);
  int64_t n = rill_tensor_numel(x);
  if (cost < 1) cost = 1;
  for (int32_t r = 0; r < cost; r++) {
    for (int64_t i = 0; i < n; i++) op[i] = xp[i] * 0.999f + value + (float)r * 1e-7f;
    __asm__ volatile("" ::"r"(op) : "memory");
  }
  return NULL;
}

static rill_status *test_add_kernel(rill_kernel_ctx *c) {
  atomic_fetch_add(&test_ops_started, 1);
  if (atomic_load(&test_add_waits_for_sleeper))
    for (int i = 0; i < 2000 && !atomic_load(&test_sleeping); i++) {
      struct timespec ms = {0, 1000000};
      nanosleep(&ms, NULL);
    }
  if (atomic_load(&test_sleeping)) atomic_fetch_add(&test_overlap, 1);
  if (c->attrs[2].v.b) return rill_error(RILL_INTERNAL, "injected failure");
  return test_apply(c, c->attrs[0].v.f, c->attrs[1].v.i);
}

static rill_status *test_sleep_kernel(rill_kernel_ctx *c) {
  atomic_fetch_add(&test_ops_started, 1);
  int32_t us = c->attrs[1].v.i;
  struct timespec ts = {us / 1000000, (long)(us % 1000000) * 1000};
  atomic_fetch_add(&test_sleeping, 1);
  nanosleep(&ts, NULL);
  atomic_fetch_sub(&test_sleeping, 1);
  return test_apply(c, c->attrs[0].v.f, 1);
}

static rill_status *test_mark_kernel(rill_kernel_ctx *c) {
  int n = atomic_fetch_add(&test_mark_n, 1);
  if (n < 4096) test_mark_log[n] = c->attrs[0].v.i;
  return NULL;
}

static rill_status *test_xfer_kernel(rill_kernel_ctx *c) {
  int now = atomic_fetch_add(&test_xfer_running, 1) + 1;
  for (int i = 0; i < c->attrs[1].v.i / 1000 && atomic_load(&test_xfer_running) < 2; i++) {
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
  now = atomic_load(&test_xfer_running) > now ? atomic_load(&test_xfer_running) : now;
  for (int peak = atomic_load(&test_xfer_peak); now > peak;)
    if (atomic_compare_exchange_weak(&test_xfer_peak, &peak, now)) break;
  rill_status *st = test_apply(c, c->attrs[0].v.f, 1);
  atomic_fetch_sub(&test_xfer_running, 1);
  return st;
}

static rill_status *test_nop_kernel(rill_kernel_ctx *c) {
  (void)c;
  return NULL;
}

static const rill_slot_schema test_in[] = {{"X", 0, "input"}};
static const rill_slot_schema test_out[] = {{"Out", 0, "output"}};
static const rill_attr_schema test_add_attrs[] = {
    {"value", RILL_ATTR_FLOAT, 0, {.type = RILL_ATTR_FLOAT, .v.f = 1.0f}, "added"},
    {"cost", RILL_ATTR_INT, 0, {.type = RILL_ATTR_INT, .v.i = 1}, "repetitions"},
    {"fail", RILL_ATTR_BOOLEAN, 0, {.type = RILL_ATTR_BOOLEAN, .v.b = false}, "fail"},
};
static const rill_attr_schema test_sleep_attrs[] = {
    {"value", RILL_ATTR_FLOAT, 0, {.type = RILL_ATTR_FLOAT, .v.f = 1.0f}, "added"},
    {"us", RILL_ATTR_INT, 0, {.type = RILL_ATTR_INT, .v.i = 100}, "sleep"},
};
static const rill_attr_schema test_mark_attrs[] = {
    {"id", RILL_ATTR_INT, 0, {.type = RILL_ATTR_INT, .v.i = 0}, "logged"},
};
static const rill_attr_schema test_loop_attrs[] = {
    {"sub_block", RILL_ATTR_BLOCK, 0, {.type = RILL_ATTR_BLOCK, .v.block = 0}, "body"},
};

static const rill_op_schema test_schemas[] = {
    {.type = "test_add", .doc = "test", .inputs = test_in, .ninputs = 1, .outputs = test_out,
     .noutputs = 1, .attrs = test_add_attrs, .nattrs = 3, .infer = test_same_infer,
     .kernel_dtype_slot = 0, .dtype_attr = -1},
    {.type = "test_sleep", .doc = "test", .inputs = test_in, .ninputs = 1, .outputs = test_out,
     .noutputs = 1, .attrs = test_sleep_attrs, .nattrs = 2, .flags = RILL_OP_BLOCKING,
     .infer = test_same_infer, .kernel_dtype_slot = 0, .dtype_attr = -1},
    {.type = "test_mark", .doc = "test", .attrs = test_mark_attrs, .nattrs = 1,
     .flags = RILL_OP_SIDE_EFFECT, .kernel_dtype_slot = -1, .dtype_attr = -1},
    {.type = "test_loop", .doc = "test", .attrs = test_loop_attrs, .nattrs = 1,
     .flags = RILL_OP_SUBBLOCK, .kernel_dtype_slot = -1, .dtype_attr = -1},
    {.type = "test_xfer", .doc = "test", .inputs = test_in, .ninputs = 1, .outputs = test_out,
     .noutputs = 1, .attrs = test_sleep_attrs, .nattrs = 2,
     .flags = RILL_OP_BLOCKING | RILL_OP_SIDE_EFFECT | RILL_OP_CONCURRENT_EFFECT,
     .infer = test_same_infer, .kernel_dtype_slot = 0, .dtype_attr = -1},
};
static const rill_kernel_def test_kernels[] = {
    {"test_add", RILL_DEVICE_CPU, RILL_DTYPE_FP32, test_add_kernel, NULL},
    {"test_sleep", RILL_DEVICE_CPU, RILL_DTYPE_FP32, test_sleep_kernel, NULL},
    {"test_mark", RILL_DEVICE_CPU, RILL_KERNEL_ANY_DTYPE, test_mark_kernel, NULL},
    {"test_loop", RILL_DEVICE_CPU, RILL_KERNEL_ANY_DTYPE, test_nop_kernel, NULL},
    {"test_xfer", RILL_DEVICE_CPU, RILL_DTYPE_FP32, test_xfer_kernel, NULL},
};

/* Registers the test ops once per process; false on failure. */
static bool test_ops_register(void) {
  static bool done;
  if (done) return true;
  for (size_t i = 0; i < RILL_COUNTOF(test_schemas); i++) {
    rill_status *st = rill_registry_add_op(&test_schemas[i]);
    if (st && rill_status_code(st) != RILL_ALREADY_EXISTS) {
      rill_status_destroy(st);
      return false;
    }
    rill_status_destroy(st);
    st = rill_registry_add_kernel(&test_kernels[i]);
    if (st && rill_status_code(st) != RILL_ALREADY_EXISTS) {
      rill_status_destroy(st);
      return false;
    }
    rill_status_destroy(st);
  }
  done = true;
  return true;
}

/* Appends `type` X -> Out with attrs (value, cost|us, fail) to block 0. */
static rill_status *test_op(rill_program *p, const char *type, const char *x, const char *out,
                            float value, int32_t n, bool failing) {
  rill_op_builder *b;
  RILL_TRY(rill_op_builder_create(type, &b));
  rill_status *st = rill_op_builder_input(b, "X", &x, 1);
  if (!st) st = rill_op_builder_output(b, "Out", &out, 1);
  if (!st) st = rill_op_builder_attr_float(b, "value", value);
  bool sleep = type[5] == 's' || type[5] == 'x';
  if (!st) st = rill_op_builder_attr_int(b, sleep ? "us" : "cost", n);
  if (!st && !sleep && failing) st = rill_op_builder_attr_bool(b, "fail", true);
  if (!st) st = rill_op_builder_append(b, p, 0);
  rill_op_builder_destroy(b);
  return st;
}

#endif
