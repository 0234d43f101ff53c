/* Sub-blocks run from several threads at once: an op that runs two blocks on two
 * threads of its own (as listen_and_serv runs its optimize blocks), and two
 * conditional_blocks the parallel schedule runs side by side. Every run must give the
 * single-threaded answer; under ThreadSanitizer this checks that the table of sub-block
 * plans and the per-block running flags keep the runs apart. */
#include <string.h>

#include "../support/subblock_ops.h"
#include "check.h"
#include "rill.h"

enum { RUNS = 200 };

static const int64_t DIMS[] = {4, 8};

static rill_status *tvar(rill_program *p, int32_t block, const char *name) {
  return rill_block_add_var(p, block, name, RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, DIMS, 2, 0,
                            false);
}

static rill_status *add(rill_program *p, int32_t block, const char *type, const char *x,
                        const char *out, float scale) {
  rill_op_builder *b;
  RILL_TRY(rill_op_builder_create(type, &b));
  rill_status *st = rill_op_builder_input(b, "X", &x, 1);
  if (!st) st = rill_op_builder_output(b, "Out", &out, 1);
  if (!st && strcmp(type, "scale") == 0) st = rill_op_builder_attr_float(b, "scale", scale);
  if (!st && strcmp(type, "scale") == 0) st = rill_op_builder_attr_float(b, "bias", 1.0f);
  if (!st) st = rill_op_builder_append(b, p, block);
  rill_op_builder_destroy(b);
  return st;
}

static rill_status *run_op(rill_program *p, const char *type, const char *cond, int32_t b1,
                           int32_t b2, const char *out) {
  rill_op_builder *b;
  const char *x = "x";
  RILL_TRY(rill_op_builder_create(type, &b));
  rill_status *st = NULL;
  if (cond) {
    st = rill_op_builder_input(b, "Cond", &cond, 1);
    if (!st) st = rill_op_builder_input(b, "Input", &x, 1);
    if (!st) st = rill_op_builder_output(b, "Out", &out, 1);
    if (!st) st = rill_op_builder_attr_block(b, "sub_block", b1);
    if (!st) st = rill_op_builder_attr_bool(b, "is_scalar_condition", true);
  } else {
    const char *outs[] = {"a", "b"};
    st = rill_op_builder_input(b, "X", &x, 1);
    if (!st) st = rill_op_builder_output(b, "Out", outs, 2);
    if (!st) st = rill_op_builder_attr_block(b, "block_a", b1);
    if (!st) st = rill_op_builder_attr_block(b, "block_b", b2);
  }
  if (!st) st = rill_op_builder_append(b, p, 0);
  rill_op_builder_destroy(b);
  return st;
}

/* a = 2 * gate(x) + 1 (block 1), b = 3 * (x) + 1 (block 2), each through a local; with
 * conditional_blocks on c instead of test_blocks when `cond`. */
static rill_status *build(bool cond, rill_program **out) {
  rill_program *p;
  RILL_TRY(rill_program_create(&p));
  int32_t b1 = -1, b2 = -1;
  const int64_t one[] = {1};
  rill_status *st = tvar(p, 0, "x");
  if (!st) st = tvar(p, 0, "a");
  if (!st) st = tvar(p, 0, "b");
  if (!st)
    st = rill_block_add_var(p, 0, "c", RILL_VAR_LOD_TENSOR, RILL_DTYPE_BOOL, one, 1, 0, false);
  if (!st) st = rill_program_append_block(p, 0, &b1);
  if (!st) st = rill_program_append_block(p, 0, &b2);
  if (!st) st = tvar(p, b1, "g");
  if (!st) st = tvar(p, b2, "g");
  if (!st) st = add(p, b1, "test_gate", "x", "g", 0.0f);
  if (!st) st = add(p, b1, "scale", "g", "a", 2.0f);
  if (!st) st = add(p, b2, "scale", "x", "g", 1.0f);
  if (!st) st = add(p, b2, "scale", "g", "b", 3.0f);
  if (!st && cond) st = run_op(p, "conditional_block", "c", b1, -1, "a");
  if (!st && cond) st = run_op(p, "conditional_block", "c", b2, -1, "b");
  if (!st && !cond) st = run_op(p, "test_blocks", NULL, b1, b2, NULL);
  if (st) {
    rill_program_destroy(p);
    return st;
  }
  *out = p;
  return NULL;
}

static void stress(bool cond) {
  rill_program *p = NULL;
  rill_status *st = build(cond, &p);
  CHECK(!st, "build: %s", rill_status_message(st));
  if (st) {
    rill_status_destroy(st);
    return;
  }
  rill_executor_options o = RILL_EXECUTOR_OPTIONS_INIT;
  o.num_threads = 2;
  rill_executor *e = NULL;
  rill_scope *s = NULL;
  rill_tensor *x = NULL, *c = NULL;
  const int64_t one[] = {1};
  st = rill_executor_create(&o, &e);
  if (!st) st = rill_executor_set_schedule(e, RILL_SCHEDULE_PARALLEL);
  if (!st) st = rill_scope_create(NULL, &s);
  if (!st) st = rill_tensor_create(RILL_DTYPE_FP32, DIMS, 2, &x);
  if (!st) st = rill_tensor_create(RILL_DTYPE_BOOL, one, 1, &c);
  CHECK(!st, "setup: %s", rill_status_message(st));
  if (!st) {
    float *xv = rill_tensor_data(x);
    for (int i = 0; i < 32; i++) xv[i] = (float)(i % 7);
    *(bool *)rill_tensor_data(c) = true;
    const char *feeds[] = {"x", "c"}, *fetches[] = {"a", "b"};
    rill_tensor *in[] = {x, c};
    int bad = 0;
    for (int r = 0; r < RUNS && !bad; r++) {
      rill_tensor *out[2] = {NULL, NULL};
      st = rill_executor_run(e, p, s, feeds, in, cond ? 2 : 1, fetches, 2, out);
      if (st) {
        CHECK(false, "run %d: %s", r, rill_status_message(st));
        rill_status_destroy(st);
        st = NULL;
        bad = 1;
        break;
      }
      const float *a = rill_tensor_data(out[0]), *b = rill_tensor_data(out[1]),
                  *xv2 = rill_tensor_data(x);
      for (int i = 0; i < 32; i++)
        if (a[i] != 2.0f * xv2[i] + 1.0f || b[i] != 3.0f * (xv2[i] + 1.0f) + 1.0f) bad = 1;
      CHECK(!bad, "run %d gave a wrong answer", r);
      rill_tensor_destroy(out[0]);
      rill_tensor_destroy(out[1]);
    }
  }
  rill_status_destroy(st);
  rill_tensor_destroy(x);
  rill_tensor_destroy(c);
  rill_scope_destroy(s);
  rill_executor_destroy(e);
  rill_program_destroy(p);
}

int main(void) {
  CHECK(subblk_register(), "registering the test ops");
  busy_gate_arm(0);
  stress(false);
  stress(true);
  return check_report();
}
