/* A test op that runs two sub-blocks at once, one thread each, through the device's
 * run_block service (header-only, for the Criterion tests and the plain-C thread stress
 * programs):
 *
 *   test_blocks  attrs block_a, block_b (BLOCK). Its kernel starts two threads; the
 *                first runs block_a in a child scope of the op's scope, the second waits
 *                until the first is inside a test_gate kernel (busy.h) and then runs
 *                block_b in another child scope. The first error (block_a's, then
 *                block_b's) is the op's. subblk_second_done() tells when the second
 *                thread's run_block returned, so a test can hold the first inside the
 *                gate until then.
 *   test_run_block  attr block (INT, so that no program check vets it): runs that block
 *                in a child scope of the op's scope, for the service's error cases.
 */
#ifndef RILL_TESTS_SUPPORT_SUBBLOCK_OPS_H
#define RILL_TESTS_SUPPORT_SUBBLOCK_OPS_H

#include <pthread.h>
#include <stdatomic.h>

#include "busy.h"

static atomic_int subblk_second_runs; /* second-thread run_block calls that returned */

static inline int subblk_second_done(void) { return atomic_load(&subblk_second_runs); }

typedef struct subblk_job {
  rill_kernel_ctx *ctx;
  int32_t block;
  int wait_entered; /* < 0: start at once; else wait for that many gate entries */
  rill_status *st;
} subblk_job;

static void *subblk_thread(void *arg) {
  subblk_job *j = arg;
  if (j->wait_entered >= 0)
    for (int i = 0; i < 10000 && busy_gate_entered() < j->wait_entered; i++) busy_sleep_ms(1);
  rill_scope *s = NULL;
  j->st = rill_scope_create(j->ctx->scope, &s);
  if (!j->st) j->st = rill_dev_run_block(j->ctx->dev, j->block, s);
  rill_scope_destroy(s);
  if (j->wait_entered >= 0) atomic_fetch_add(&subblk_second_runs, 1);
  return NULL;
}

static rill_status *subblk_kernel(rill_kernel_ctx *c) {
  int base = busy_gate_entered();
  subblk_job jobs[2] = {{c, c->attrs[0].v.block, -1, NULL},
                        {c, c->attrs[1].v.block, base + 1, NULL}};
  pthread_t t[2];
  int started = 0;
  for (; started < 2; started++)
    if (pthread_create(&t[started], NULL, subblk_thread, &jobs[started])) break;
  for (int i = 0; i < started; i++) pthread_join(t[i], NULL);
  if (started < 2) {
    rill_status_destroy(jobs[0].st);
    return rill_kernel_error(c, "cannot start a thread");
  }
  if (jobs[0].st) {
    rill_status_destroy(jobs[1].st);
    return jobs[0].st;
  }
  return jobs[1].st;
}

static const rill_slot_schema subblk_in_slots[] = {
    {"X", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE, "read by the blocks"}};
static const rill_slot_schema subblk_out_slots[] = {
    {"Out", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE, "written by the blocks"}};
static const rill_attr_schema subblk_attrs[] = {
    {"block_a", RILL_ATTR_BLOCK, 0, {.type = RILL_ATTR_BLOCK, .v.block = 0}, "first block"},
    {"block_b", RILL_ATTR_BLOCK, 0, {.type = RILL_ATTR_BLOCK, .v.block = 0}, "second block"},
};
static const rill_op_schema subblk_schema = {
    .type = "test_blocks", .doc = "test: runs two blocks on two threads", .inputs = subblk_in_slots,
    .ninputs = 1, .outputs = subblk_out_slots, .noutputs = 1, .attrs = subblk_attrs, .nattrs = 2,
    .flags = RILL_OP_SUBBLOCK | RILL_OP_KERNEL_SHAPES, .kernel_dtype_slot = -1, .dtype_attr = -1};
static const rill_kernel_def subblk_kernel_def = {"test_blocks", RILL_DEVICE_CPU,
                                                  RILL_KERNEL_ANY_DTYPE, subblk_kernel, NULL};

static rill_status *subblk_run_kernel(rill_kernel_ctx *c) {
  rill_scope *s = NULL;
  RILL_TRY(rill_scope_create(c->scope, &s));
  rill_status *st = rill_dev_run_block(c->dev, c->attrs[0].v.i, s);
  rill_scope_destroy(s);
  return st;
}

static const rill_attr_schema subblk_run_attrs[] = {
    {"block", RILL_ATTR_INT, 0, {.type = RILL_ATTR_INT, .v.i = 0}, "block to run"},
};
static const rill_op_schema subblk_run_schema = {
    .type = "test_run_block", .doc = "test: runs the block its INT attr names",
    .inputs = subblk_in_slots, .ninputs = 1, .outputs = subblk_out_slots, .noutputs = 1,
    .attrs = subblk_run_attrs, .nattrs = 1, .flags = RILL_OP_SIDE_EFFECT | RILL_OP_KERNEL_SHAPES,
    .kernel_dtype_slot = -1, .dtype_attr = -1};
static const rill_kernel_def subblk_run_kernel_def = {"test_run_block", RILL_DEVICE_CPU,
                                                      RILL_KERNEL_ANY_DTYPE, subblk_run_kernel, NULL};

static inline bool subblk_ok(rill_status *st) {
  if (st && rill_status_code(st) == RILL_ALREADY_EXISTS) {
    rill_status_destroy(st);
    return true;
  }
  if (!st) return true;
  fprintf(stderr, "subblock test ops: %s\n", rill_status_message(st));
  rill_status_destroy(st);
  return false;
}

/* Registers test_blocks, test_run_block and test_gate once per process; false on
 * failure. */
static inline bool subblk_register(void) {
  return busy_gate_register() && subblk_ok(rill_registry_add_op(&subblk_schema)) &&
         subblk_ok(rill_registry_add_kernel(&subblk_kernel_def)) &&
         subblk_ok(rill_registry_add_op(&subblk_run_schema)) &&
         subblk_ok(rill_registry_add_kernel(&subblk_run_kernel_def));
}

#endif
