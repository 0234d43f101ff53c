/* The two schedules: bitwise-identical results (a two-tower MLP, the shared models),
 * the dependency graph (read-after-write, write-after-read, write-after-write, sub-blocks,
 * side-effect order), blocking ops beside compute, the schedule AUTO picks, errors,
 * cancellation from another thread, deadlines and the release of temporaries. */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "framework/exec/executor.h"
#include "framework/io/npy.h"
#include "rill.h"
#include "threads/test_ops.h"

#define OK(expr)                                                                     \
  do {                                                                               \
    rill_status *st_ = (expr);                                                       \
    cr_assert_null(st_, "%s: %s", #expr, rill_status_message(st_));                  \
  } while (0)

static rill_executor *new_exec(rill_schedule sched, int32_t threads) {
  rill_executor_options o = RILL_EXECUTOR_OPTIONS_INIT;
  o.num_threads = threads;
  rill_executor *e;
  OK(rill_executor_create(&o, &e));
  OK(rill_executor_set_schedule(e, sched));
  return e;
}

static void var(rill_program *p, const char *name, const int64_t *dims, size_t n, bool persist) {
  OK(rill_block_add_var(p, 0, name, RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, dims, n, 0, persist));
}

static void op2(rill_program *p, const char *type, const char *x, const char *y, const char *out) {
  rill_op_builder *b;
  OK(rill_op_builder_create(type, &b));
  OK(rill_op_builder_input(b, "X", &x, 1));
  if (y) OK(rill_op_builder_input(b, "Y", &y, 1));
  OK(rill_op_builder_output(b, "Out", &out, 1));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
}

static rill_tensor *filled(const int64_t *dims, size_t n, float seed) {
  rill_tensor *t;
  OK(rill_tensor_create(RILL_DTYPE_FP32, dims, n, &t));
  float *v = rill_tensor_data(t);
  for (int64_t i = 0; i < rill_tensor_numel(t); i++) v[i] = sinf(seed + 0.37f * (float)i);
  return t;
}

static bool same_bits(rill_tensor *a, rill_tensor *b) {
  return rill_tensor_byte_size(a) == rill_tensor_byte_size(b) &&
         memcmp(rill_tensor_data(a), rill_tensor_data(b), rill_tensor_byte_size(a)) == 0;
}

/* Two towers over one input: y_k = softmax(relu(x*Wk + bk)*Vk), loss = mean(y1) + ... */
static rill_program *two_tower_mlp(void) {
  rill_program *p;
  OK(rill_program_create(&p));
  const int64_t dx[] = {-1, 16}, dw[] = {16, 32}, db[] = {32}, dh[] = {-1, 32}, dv[] = {32, 8},
                dy[] = {-1, 8}, dl[] = {1};
  var(p, "x", dx, 2, false);
  for (int k = 0; k < 2; k++) {
    char w[8], b[8], v[8], h0[8], h1[8], h[8], o[8], y[8], l[8];
    snprintf(w, 8, "W%d", k);
    snprintf(b, 8, "b%d", k);
    snprintf(v, 8, "V%d", k);
    snprintf(h0, 8, "h0%d", k);
    snprintf(h1, 8, "h1%d", k);
    snprintf(h, 8, "h%d", k);
    snprintf(o, 8, "o%d", k);
    snprintf(y, 8, "y%d", k);
    snprintf(l, 8, "l%d", k);
    var(p, w, dw, 2, true);
    var(p, b, db, 1, true);
    var(p, v, dv, 2, true);
    var(p, h0, dh, 2, false);
    var(p, h1, dh, 2, false);
    var(p, h, dh, 2, false);
    var(p, o, dy, 2, false);
    var(p, y, dy, 2, false);
    var(p, l, dl, 1, false);
    op2(p, "mul", "x", w, h0);
    op2(p, "elementwise_add", h0, b, h1);
    op2(p, "relu", h1, NULL, h);
    op2(p, "mul", h, v, o);
    op2(p, "softmax", o, NULL, y);
    op2(p, "mean", y, NULL, l);
  }
  var(p, "loss", dl, 1, false);
  op2(p, "elementwise_add", "l0", "l1", "loss");
  return p;
}

static void set_param(rill_scope *s, const char *name, const int64_t *dims, size_t n, float seed) {
  rill_tensor *t = filled(dims, n, seed);
  OK(rill_scope_set_tensor(s, name, t));
  rill_tensor_destroy(t);
}

Test(sched, mlp_bitwise_identical_under_both_schedules) {
  rill_program *p = two_tower_mlp();
  rill_scope *s;
  OK(rill_scope_create(NULL, &s));
  const int64_t dw[] = {16, 32}, db[] = {32}, dv[] = {32, 8}, dx[] = {64, 16};
  for (int k = 0; k < 2; k++) {
    char n[8];
    snprintf(n, 8, "W%d", k);
    set_param(s, n, dw, 2, 1.0f + (float)k);
    snprintf(n, 8, "b%d", k);
    set_param(s, n, db, 1, 2.0f + (float)k);
    snprintf(n, 8, "V%d", k);
    set_param(s, n, dv, 2, 3.0f + (float)k);
  }
  rill_tensor *x = filled(dx, 2, 0.5f);
  const char *feed = "x", *fetch[] = {"y0", "y1", "loss", "h1"};
  rill_tensor *ref[4], *got[4];
  rill_executor *seq = new_exec(RILL_SCHEDULE_SEQUENTIAL, 1);
  OK(rill_executor_run(seq, p, s, &feed, &x, 1, fetch, 4, ref));
  const int32_t threads[] = {2, 4};
  for (int t = 0; t < 2; t++)
    for (int rel = 0; rel < 2; rel++) {
      rill_executor *par = new_exec(RILL_SCHEDULE_PARALLEL, threads[t]);
      OK(rill_executor_set_release_temporaries(par, rel));
      for (int r = 0; r < 20; r++) {
        OK(rill_executor_run(par, p, s, &feed, &x, 1, fetch, 4, got));
        for (int i = 0; i < 4; i++) {
          cr_assert(same_bits(ref[i], got[i]), "%s differs (threads %d, run %d)", fetch[i], threads[t], r);
          rill_tensor_destroy(got[i]);
        }
      }
      cr_assert_eq(par->parallel_runs, 20);
      rill_executor_destroy(par);
    }
  for (int i = 0; i < 4; i++) rill_tensor_destroy(ref[i]);
  rill_tensor_destroy(x);
  rill_executor_destroy(seq);
  rill_scope_destroy(s);
  rill_program_destroy(p);
}

static void model_both_schedules(const char *name) {
  char path[1024];
  rill_model *m;
  snprintf(path, sizeof path, RILL_SHARED_DIR "/models/%s", name);
  OK(rill_model_load(path, NULL, &m));
  size_t nin = rill_model_num_inputs(m), nout = rill_model_num_outputs(m);
  cr_assert(nin <= 8 && nout <= 8);
  const char *feeds[8], *fetch[8];
  rill_tensor *in[8], *ref[8], *got[8];
  for (size_t i = 0; i < nin; i++) {
    feeds[i] = rill_model_input_name(m, i);
    snprintf(path, sizeof path, RILL_SHARED_DIR "/models/%s/refs/input_%s.npy", name, feeds[i]);
    OK(rill_npy_load(path, &in[i]));
  }
  for (size_t i = 0; i < nout; i++) fetch[i] = rill_model_output_name(m, i);
  rill_scope *s;
  OK(rill_scope_create(rill_model_scope(m), &s));
  rill_executor *seq = new_exec(RILL_SCHEDULE_SEQUENTIAL, 1), *par = new_exec(RILL_SCHEDULE_PARALLEL, 4);
  const rill_program *prog = rill_model_program(m);
  OK(rill_executor_run(seq, prog, s, feeds, in, nin, fetch, nout, ref));
  for (int r = 0; r < 5; r++) {
    OK(rill_executor_set_release_temporaries(par, r & 1));
    OK(rill_executor_run(par, prog, s, feeds, in, nin, fetch, nout, got));
    for (size_t i = 0; i < nout; i++) {
      cr_assert(same_bits(ref[i], got[i]), "%s output %zu differs between the schedules", name, i);
      rill_tensor_destroy(got[i]);
    }
  }
  cr_assert_eq(par->parallel_runs, 5);
  for (size_t i = 0; i < nout; i++) rill_tensor_destroy(ref[i]);
  for (size_t i = 0; i < nin; i++) rill_tensor_destroy(in[i]);
  rill_executor_destroy(seq);
  rill_executor_destroy(par);
  rill_scope_destroy(s);
  rill_model_destroy(m);
}

Test(sched, fit_a_line_bitwise_identical_under_both_schedules) { model_both_schedules("fit_a_line_raftliu"); }
Test(sched, mnist_mlp_bitwise_identical_under_both_schedules) { model_both_schedules("mnist_mlp_handwriting"); }

/* Every shared model whose ops rill has (more as ops land). */
Test(sched, every_supported_model_bitwise_identical_under_both_schedules) {
  static const char *const all[] = {
      "abalone_bn_mlp",          "fit_a_line_raftliu",   "luotao1_example_mlp_2018",
      "mnist_conv_bn_etienne",   "mnist_mlp_handwriting", "paddlejs_gesture_rec",
      "paddlelite_simple_model", "pureboys_word2vec",
  };
  int checked = 0;
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
    char path[1024];
    rill_model *m;
    snprintf(path, sizeof path, RILL_SHARED_DIR "/models/%s", all[i]);
    OK(rill_model_load(path, NULL, &m));
    rill_status *st = rill_program_validate(rill_model_program(m));
    rill_model_destroy(m);
    if (rill_status_code(st) == RILL_UNIMPLEMENTED) {
      rill_status_destroy(st);
      continue;
    }
    cr_assert_null(st, "%s: %s", all[i], rill_status_message(st));
    model_both_schedules(all[i]);
    checked++;
  }
  cr_assert_geq(checked, 2);
}

static rill_plan *prepare(rill_executor *e, rill_program *p, const char *feed, const char *fetch) {
  rill_plan *plan;
  OK(rill_exec_prepare(e, p, &feed, feed ? 1 : 0, &fetch, fetch ? 1 : 0, &plan));
  return plan;
}

Test(sched, edges_follow_reads_and_writes) {
  cr_assert(test_ops_register());
  rill_program *p;
  OK(rill_program_create(&p));
  const int64_t d[] = {4};
  const char *names[] = {"x", "a", "b", "c", "d"};
  for (int i = 0; i < 5; i++) var(p, names[i], d, 1, false);
  OK(test_op(p, "test_add", "x", "a", 1, 1, false)); /* 0 */
  OK(test_op(p, "test_add", "a", "b", 1, 1, false)); /* 1: RAW on a */
  OK(test_op(p, "test_add", "x", "a", 2, 1, false)); /* 2: WAR (1 read a), WAW (0) */
  OK(test_op(p, "test_add", "x", "c", 1, 1, false)); /* 3: independent */
  OK(test_op(p, "test_add", "a", "d", 1, 1, false)); /* 4: RAW on 2's a */
  rill_executor *e = new_exec(RILL_SCHEDULE_AUTO, 2);
  rill_plan *plan = prepare(e, p, "x", "d");
  cr_assert(rill_plan_has_edge(plan, 0, 1));
  cr_assert(rill_plan_has_edge(plan, 1, 2));
  cr_assert(rill_plan_has_edge(plan, 0, 2));
  cr_assert(rill_plan_has_edge(plan, 2, 4));
  cr_assert(!rill_plan_has_edge(plan, 0, 4), "0's value of a is overwritten by 2");
  for (int i = 0; i < 5; i++) cr_assert(!rill_plan_has_edge(plan, (size_t)i, 3) && !rill_plan_has_edge(plan, 3, (size_t)i));
  cr_assert_eq(rill_plan_critical_path(plan), 4);
  rill_executor_destroy(e);
  rill_program_destroy(p);
}

Test(sched, sub_block_op_reads_and_writes_what_its_block_does) {
  cr_assert(test_ops_register());
  rill_program *p;
  OK(rill_program_create(&p));
  const int64_t d[] = {4};
  const char *names[] = {"x", "a", "b", "c", "u"};
  for (int i = 0; i < 5; i++) var(p, names[i], d, 1, false);
  int32_t sub;
  OK(rill_program_append_block(p, 0, &sub));
  /* Block `sub`: b = a + 1. */
  rill_op_builder *b;
  const char *in = "a", *out = "b";
  OK(rill_op_builder_create("test_add", &b));
  OK(rill_op_builder_input(b, "X", &in, 1));
  OK(rill_op_builder_output(b, "Out", &out, 1));
  OK(rill_op_builder_append(b, p, sub));
  rill_op_builder_destroy(b);
  OK(test_op(p, "test_add", "x", "a", 1, 1, false)); /* 0 writes a */
  OK(rill_op_builder_create("test_loop", &b));       /* 1 runs the block: reads a, writes b */
  OK(rill_op_builder_attr_block(b, "sub_block", sub));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  OK(test_op(p, "test_add", "b", "c", 1, 1, false)); /* 2 reads b */
  OK(test_op(p, "test_add", "x", "u", 1, 1, false)); /* 3 independent */
  rill_executor *e = new_exec(RILL_SCHEDULE_AUTO, 2);
  rill_plan *plan = prepare(e, p, "x", "u");
  cr_assert(rill_plan_has_edge(plan, 0, 1));
  cr_assert(rill_plan_has_edge(plan, 1, 2));
  cr_assert(!rill_plan_has_edge(plan, 0, 3) && !rill_plan_has_edge(plan, 1, 3));
  rill_executor_destroy(e);
  rill_program_destroy(p);
}

Test(sched, side_effect_ops_keep_program_order) {
  cr_assert(test_ops_register());
  rill_program *p;
  OK(rill_program_create(&p));
  const int64_t d[] = {64};
  var(p, "x", d, 1, false);
  rill_op_builder *b;
  OK(rill_op_builder_create("test_mark", &b));
  for (int i = 0; i < 40; i++) {
    char out[16];
    snprintf(out, sizeof out, "v%d", i);
    var(p, out, d, 1, false);
    OK(test_op(p, "test_add", "x", out, (float)i, 50, false));
    OK(rill_op_builder_attr_int(b, "id", i));
    OK(rill_op_builder_append(b, p, 0));
  }
  rill_op_builder_destroy(b);
  rill_executor *e = new_exec(RILL_SCHEDULE_PARALLEL, 4);
  rill_tensor *x = filled(d, 1, 0);
  rill_scope *s;
  OK(rill_scope_create(NULL, &s));
  const char *feed = "x";
  for (int r = 0; r < 10; r++) {
    atomic_store(&test_mark_n, 0);
    OK(rill_executor_run(e, p, s, &feed, &x, 1, NULL, 0, NULL));
    cr_assert_eq(atomic_load(&test_mark_n), 40);
    for (int i = 0; i < 40; i++) cr_assert_eq(test_mark_log[i], i, "run %d: mark %d is %d", r, i, test_mark_log[i]);
  }
  rill_tensor_destroy(x);
  rill_scope_destroy(s);
  rill_executor_destroy(e);
  rill_program_destroy(p);
}

static void mark(rill_program *p, int id) {
  rill_op_builder *b;
  OK(rill_op_builder_create("test_mark", &b));
  OK(rill_op_builder_attr_int(b, "id", id));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
}

/* Concurrent side effects (send, recv): among themselves only data orders them; the
 * ordered side-effect ops around them still come before and after all of them. */
Test(sched, concurrent_effects_run_together_between_ordered_ones) {
  cr_assert(test_ops_register());
  rill_program *p;
  OK(rill_program_create(&p));
  const int64_t d[] = {8};
  const char *names[] = {"x", "a", "b", "c", "e"};
  for (int i = 0; i < 5; i++) var(p, names[i], d, 1, false);
  mark(p, 0);                                            /* 0 */
  OK(test_op(p, "test_xfer", "x", "a", 1, 2000000, false)); /* 1 */
  OK(test_op(p, "test_xfer", "x", "b", 2, 2000000, false)); /* 2: beside 1 */
  OK(test_op(p, "test_xfer", "a", "e", 3, 0, false));   /* 3: reads 1's a */
  mark(p, 1);                                            /* 4: after 1, 2, 3 */
  OK(test_op(p, "test_xfer", "x", "c", 4, 0, false));   /* 5: after 4 */
  rill_executor *e = new_exec(RILL_SCHEDULE_PARALLEL, 2);
  rill_plan *plan = prepare(e, p, "x", "c");
  cr_assert(rill_plan_has_edge(plan, 0, 1) && rill_plan_has_edge(plan, 0, 2));
  cr_assert(!rill_plan_has_edge(plan, 1, 2) && !rill_plan_has_edge(plan, 2, 1));
  cr_assert(!rill_plan_has_edge(plan, 2, 3), "3 does not read what 2 writes");
  cr_assert(rill_plan_has_edge(plan, 1, 3), "3 reads 1's a");
  for (size_t i = 1; i <= 3; i++) cr_assert(rill_plan_has_edge(plan, i, 4), "xfer %zu before the mark", i);
  cr_assert(rill_plan_has_edge(plan, 4, 5));
  cr_assert(!rill_plan_has_edge(plan, 3, 5) && !rill_plan_has_edge(plan, 1, 5));

  /* A run: 1 and 2 are on the I/O pool at the same time, the marks keep their order. */
  rill_tensor *x = filled(d, 1, 0);
  rill_scope *s;
  OK(rill_scope_create(NULL, &s));
  const char *feed = "x";
  atomic_store(&test_mark_n, 0);
  atomic_store(&test_xfer_peak, 0);
  const char *fetch = "c";
  rill_tensor *c = NULL;
  OK(rill_executor_run(e, p, s, &feed, &x, 1, &fetch, 1, &c));
  cr_assert_eq(atomic_load(&test_xfer_peak), 2, "the two independent transfers ran one after the other");
  cr_assert_eq(atomic_load(&test_mark_n), 2);
  cr_assert(test_mark_log[0] == 0 && test_mark_log[1] == 1);
  cr_assert_float_eq(((float *)rill_tensor_data(c))[0], ((float *)rill_tensor_data(x))[0] * 0.999f + 4.0f, 1e-6);
  rill_tensor_destroy(c);
  rill_tensor_destroy(x);
  rill_scope_destroy(s);
  rill_executor_destroy(e);
  rill_program_destroy(p);
}

/* x -> 20 compute ops (chain a) beside a chain of `nsleep` blocking ops (chain b). */
static rill_program *compute_beside_blocking(int nsleep, int sleep_us) {
  rill_program *p;
  OK(rill_program_create(&p));
  const int64_t d[] = {256};
  var(p, "x", d, 1, false);
  char prev[16] = "x", name[16];
  for (int i = 0; i < 20; i++) {
    snprintf(name, sizeof name, "a%d", i);
    var(p, name, d, 1, false);
    OK(test_op(p, "test_add", prev, name, 1, 2000, false));
    snprintf(prev, sizeof prev, "%s", name);
  }
  snprintf(prev, sizeof prev, "x");
  for (int i = 0; i < nsleep; i++) {
    snprintf(name, sizeof name, "b%d", i);
    var(p, name, d, 1, false);
    OK(test_op(p, "test_sleep", prev, name, 2, sleep_us, false));
    snprintf(prev, sizeof prev, "%s", name);
  }
  return p;
}

Test(sched, blocking_ops_do_not_hold_up_compute) {
  cr_assert(test_ops_register());
  rill_program *p = compute_beside_blocking(1, 300000);
  rill_scope *s;
  OK(rill_scope_create(NULL, &s));
  const int64_t d[] = {256};
  rill_tensor *x = filled(d, 1, 1), *ref[2], *got[2];
  const char *feed = "x", *fetch[] = {"a19", "b0"};
  rill_executor *seq = new_exec(RILL_SCHEDULE_SEQUENTIAL, 2), *par = new_exec(RILL_SCHEDULE_AUTO, 2);
  atomic_store(&test_overlap, 0);
  OK(rill_executor_run(seq, p, s, &feed, &x, 1, fetch, 2, ref));
  cr_assert_eq(atomic_load(&test_overlap), 0, "sequential: nothing overlaps");
  atomic_store(&test_add_waits_for_sleeper, 1);
  OK(rill_executor_run(par, p, s, &feed, &x, 1, fetch, 2, got));
  atomic_store(&test_add_waits_for_sleeper, 0);
  cr_assert_eq(par->parallel_runs, 1, "AUTO runs a program with blocking ops in parallel");
  cr_assert_gt(atomic_load(&test_overlap), 0, "compute ran while the blocking op slept");
  for (int i = 0; i < 2; i++) {
    cr_assert(same_bits(ref[i], got[i]));
    rill_tensor_destroy(ref[i]);
    rill_tensor_destroy(got[i]);
  }
  rill_tensor_destroy(x);
  rill_executor_destroy(seq);
  rill_executor_destroy(par);
  rill_scope_destroy(s);
  rill_program_destroy(p);
}

Test(sched, auto_picks_by_graph) {
  cr_assert(test_ops_register());
  rill_program *chain, *wide, *tiny;
  OK(rill_program_create(&chain));
  OK(rill_program_create(&wide));
  OK(rill_program_create(&tiny));
  const int64_t d[] = {4};
  var(chain, "v0", d, 1, false);
  var(wide, "v0", d, 1, false);
  var(tiny, "v0", d, 1, false);
  for (int i = 1; i <= 32; i++) {
    char n[16], prev[16];
    snprintf(n, sizeof n, "v%d", i);
    snprintf(prev, sizeof prev, "v%d", i - 1);
    var(chain, n, d, 1, false);
    var(wide, n, d, 1, false);
    OK(test_op(chain, "test_add", prev, n, 1, 1, false));
    OK(test_op(wide, "test_add", "v0", n, 1, 1, false));
    if (i <= 4) {
      var(tiny, n, d, 1, false);
      OK(test_op(tiny, "test_add", "v0", n, 1, 1, false));
    }
  }
  rill_executor *two = new_exec(RILL_SCHEDULE_AUTO, 2), *one = new_exec(RILL_SCHEDULE_AUTO, 1);
  cr_assert_eq(rill_plan_auto_schedule(prepare(two, chain, "v0", "v32")), RILL_SCHEDULE_SEQUENTIAL);
  cr_assert_eq(rill_plan_auto_schedule(prepare(two, wide, "v0", "v32")), RILL_SCHEDULE_PARALLEL);
  cr_assert_eq(rill_plan_auto_schedule(prepare(two, tiny, "v0", "v4")), RILL_SCHEDULE_SEQUENTIAL);
  cr_assert_eq(rill_plan_auto_schedule(prepare(one, wide, "v0", "v32")), RILL_SCHEDULE_SEQUENTIAL);
  rill_program *blocking = compute_beside_blocking(1, 10);
  cr_assert_eq(rill_plan_auto_schedule(prepare(one, blocking, "x", "b0")), RILL_SCHEDULE_PARALLEL);
  rill_executor_destroy(two);
  rill_executor_destroy(one);
  rill_program_destroy(chain);
  rill_program_destroy(wide);
  rill_program_destroy(tiny);
  rill_program_destroy(blocking);
}

static void expect(rill_status *st, rill_code code, const char *needle) {
  cr_assert_not_null(st, "expected %s", rill_code_name(code));
  cr_assert_eq(rill_status_code(st), code, "%s: %s", rill_code_name(rill_status_code(st)),
               rill_status_message(st));
  cr_assert(strstr(rill_status_message(st), needle), "'%s' lacks '%s'", rill_status_message(st), needle);
  rill_status_destroy(st);
}

Test(sched, first_error_is_returned_with_op_context) {
  cr_assert(test_ops_register());
  rill_program *p;
  OK(rill_program_create(&p));
  const int64_t d[] = {8};
  var(p, "x", d, 1, false);
  for (int i = 0; i < 30; i++) {
    char n[16];
    snprintf(n, sizeof n, "v%d", i);
    var(p, n, d, 1, false);
    OK(test_op(p, i % 3 ? "test_add" : "test_sleep", "x", n, 1, 200, i == 17));
  }
  rill_scope *s;
  OK(rill_scope_create(NULL, &s));
  rill_tensor *x = filled(d, 1, 0), *out = (rill_tensor *)0x1;
  const char *feed = "x", *fetch = "v29";
  for (int sched = RILL_SCHEDULE_SEQUENTIAL; sched <= RILL_SCHEDULE_PARALLEL; sched++) {
    rill_executor *e = new_exec((rill_schedule)sched, 2);
    for (int r = 0; r < 5; r++)
      expect(rill_executor_run(e, p, s, &feed, &x, 1, &fetch, 1, &out), RILL_INTERNAL,
             "block 0, op #17 'test_add': injected failure");
    cr_assert_eq(out, (rill_tensor *)0x1, "outputs untouched on error");
    /* The executor still runs other programs. */
    rill_program *ok;
    OK(rill_program_create(&ok));
    var(ok, "x", d, 1, false);
    var(ok, "y", d, 1, false);
    OK(test_op(ok, "test_add", "x", "y", 1, 1, false));
    const char *fy = "y";
    OK(rill_executor_run(e, ok, s, &feed, &x, 1, &fy, 1, &out));
    rill_tensor_destroy(out);
    out = (rill_tensor *)0x1;
    rill_program_destroy(ok);
    rill_executor_destroy(e);
  }
  rill_tensor_destroy(x);
  rill_scope_destroy(s);
  rill_program_destroy(p);
}

typedef struct canceller {
  rill_executor *e;
  int after;
} canceller;

static void *cancel_later(void *arg) {
  canceller *c = arg;
  while (atomic_load(&test_ops_started) < c->after) {
    struct timespec ts = {0, 200000};
    nanosleep(&ts, NULL);
  }
  rill_executor_cancel(c->e);
  return NULL;
}

static double seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* 200 blocking ops of 2 ms in a chain (0.4 s), beside a compute chain. */
static rill_program *long_program(void) {
  rill_program *p = compute_beside_blocking(200, 2000);
  return p;
}

Test(sched, cancel_from_another_thread_stops_the_run) {
  cr_assert(test_ops_register());
  rill_program *p = long_program();
  rill_scope *s;
  OK(rill_scope_create(NULL, &s));
  const int64_t d[] = {256};
  rill_tensor *x = filled(d, 1, 0), *out = NULL;
  const char *feed = "x", *fetch = "b199";
  for (int sched = RILL_SCHEDULE_SEQUENTIAL; sched <= RILL_SCHEDULE_PARALLEL; sched++) {
    rill_executor *e = new_exec((rill_schedule)sched, 2);
    rill_executor_cancel(e); /* no run in progress: nothing happens */
    atomic_store(&test_ops_started, 0);
    canceller c = {e, 25};
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, cancel_later, &c), 0);
    expect(rill_executor_run(e, p, s, &feed, &x, 1, &fetch, 1, &out), RILL_CANCELLED, "cancelled");
    pthread_join(th, NULL);
    cr_assert_lt(atomic_load(&test_ops_started), 220, "the run stopped early");
    /* The next run is not cancelled. */
    rill_program *ok;
    OK(rill_program_create(&ok));
    var(ok, "x", d, 1, false);
    var(ok, "y", d, 1, false);
    OK(test_op(ok, "test_sleep", "x", "y", 1, 1000, false));
    const char *fy = "y";
    OK(rill_executor_run(e, ok, s, &feed, &x, 1, &fy, 1, &out));
    rill_tensor_destroy(out);
    rill_program_destroy(ok);
    rill_executor_destroy(e);
  }
  rill_tensor_destroy(x);
  rill_scope_destroy(s);
  rill_program_destroy(p);
}

Test(sched, deadline_stops_the_run) {
  cr_assert(test_ops_register());
  rill_program *p = long_program();
  rill_scope *s;
  OK(rill_scope_create(NULL, &s));
  const int64_t d[] = {256};
  rill_tensor *x = filled(d, 1, 0), *out = NULL;
  const char *feed = "x", *fetch = "b199";
  for (int sched = RILL_SCHEDULE_SEQUENTIAL; sched <= RILL_SCHEDULE_PARALLEL; sched++) {
    rill_executor *e = new_exec((rill_schedule)sched, 2);
    OK(rill_executor_set_timeout(e, 30000));
    atomic_store(&test_ops_started, 0);
    double t0 = seconds();
    expect(rill_executor_run(e, p, s, &feed, &x, 1, &fetch, 1, &out), RILL_DEADLINE_EXCEEDED,
           "deadline");
    double dt = seconds() - t0;
    /* Op counts, not wall time, show the run stopped early: a loaded machine may take
     * any time, but never runs all 200 sleeps of a chain that a deadline cut. */
    cr_assert_lt(atomic_load(&test_ops_started), 220, "the run stopped early");
    cr_assert_geq(dt, 0.029, "the deadline never fires early");
    OK(rill_executor_set_timeout(e, 0));
    OK(rill_executor_run(e, p, s, &feed, &x, 1, &fetch, 1, &out));
    rill_tensor_destroy(out);
    rill_executor_destroy(e);
  }
  rill_tensor_destroy(x);
  rill_scope_destroy(s);
  rill_program_destroy(p);
}

Test(sched, temporaries_are_released_after_last_use) {
  cr_assert(test_ops_register());
  rill_program *p;
  OK(rill_program_create(&p));
  const int64_t d[] = {1024};
  const char *names[] = {"x", "t1", "t2", "t3", "y", "w"};
  for (int i = 0; i < 6; i++) var(p, names[i], d, 1, i == 5);
  OK(test_op(p, "test_add", "x", "t1", 1, 1, false));
  OK(test_op(p, "test_add", "t1", "t2", 1, 1, false));
  OK(test_op(p, "test_add", "t1", "t3", 1, 1, false));
  OK(test_op(p, "test_add", "t2", "y", 1, 1, false));
  OK(test_op(p, "test_add", "t3", "w", 1, 1, false));
  rill_scope *s;
  OK(rill_scope_create(NULL, &s));
  rill_tensor *x = filled(d, 1, 0), *ref = NULL, *got = NULL;
  const char *feed = "x", *fetch = "y";
  for (int sched = RILL_SCHEDULE_SEQUENTIAL; sched <= RILL_SCHEDULE_PARALLEL; sched++) {
    rill_executor *e = new_exec((rill_schedule)sched, 2);
    rill_plan *plan = prepare(e, p, "x", "y");
    OK(rill_executor_run(e, p, s, &feed, &x, 1, &fetch, 1, &ref));
    cr_assert(rill_plan_holds(plan, "t1") && rill_plan_holds(plan, "t3"), "kept by default");
    OK(rill_executor_set_release_temporaries(e, true));
    for (int r = 0; r < 3; r++) {
      OK(rill_executor_run(e, p, s, &feed, &x, 1, &fetch, 1, &got));
      cr_assert(same_bits(ref, got));
      rill_tensor_destroy(got);
      cr_assert(!rill_plan_holds(plan, "t1") && !rill_plan_holds(plan, "t2") && !rill_plan_holds(plan, "t3"),
                "temporaries released");
      cr_assert(rill_plan_holds(plan, "y"), "the fetched variable is kept");
    }
    rill_tensor *w;
    OK(rill_scope_get_tensor(s, "w", &w));
    cr_assert_eq(rill_tensor_numel(w), 1024, "persistables are never released");
    rill_tensor_destroy(w);
    rill_tensor_destroy(ref);
    rill_executor_destroy(e);
  }
  rill_tensor_destroy(x);
  rill_scope_destroy(s);
  rill_program_destroy(p);
}
