/* Building a training program through the C API, the baseline of bench_python.py's
 * "build and minimize" figure.
 *
 * Usage: bench_build MAIN STARTUP LOSS ROUNDS
 *
 * MAIN and STARTUP are the forward program and its startup program as the Python
 * layers built them (ProgramDesc files). Each round builds both again from nothing,
 * as the Python package does: every variable declared (rill_block_add_var and its
 * flags), every op added through the op builder with all its attributes, and each
 * op's shapes inferred by one rill_block_infer_op call; then minimize: the learning
 * rate variable and its fill_constant, rill_program_append_backward from LOSS, and one
 * sgd op per (parameter, gradient) pair, each inferred. The descriptions are read
 * from the files before timing; only the building is timed. Prints the best round:
 * "RESULT build_ms=<ms> ops=<ops in the built main program>". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rill.h"

#define CHECK(expr)                                                              \
  do {                                                                           \
    rill_status *st_ = (expr);                                                   \
    if (st_) {                                                                   \
      fprintf(stderr, "%s: %s\n", #expr, rill_status_message(st_));              \
      exit(1);                                                                   \
    }                                                                            \
  } while (0)

typedef struct {
  rill_op_info info;
  rill_slot_info *in, *out;
  rill_attr_value_info *attrs;
  bool has_block;
} op_rec;

typedef struct {
  rill_program *src; /* kept unedited: the records point into it */
  size_t nvars, nops;
  rill_var_info *vars;
  rill_var_flags *flags;
  op_rec *ops;
} prog_rec;

static void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size);
  if (!p) {
    fprintf(stderr, "out of memory\n");
    exit(1);
  }
  return p;
}

static prog_rec record(const char *path) {
  prog_rec r = {0};
  CHECK(rill_program_load(path, &r.src));
  if (rill_program_num_blocks(r.src) != 1) {
    fprintf(stderr, "%s: one block expected\n", path);
    exit(1);
  }
  r.nvars = rill_block_num_vars(r.src, 0);
  r.nops = rill_block_num_ops(r.src, 0);
  r.vars = xcalloc(r.nvars, sizeof *r.vars);
  r.flags = xcalloc(r.nvars, sizeof *r.flags);
  r.ops = xcalloc(r.nops, sizeof *r.ops);
  for (size_t i = 0; i < r.nvars; i++) {
    CHECK(rill_block_var_info(r.src, 0, i, &r.vars[i]));
    CHECK(rill_block_var_flags(r.src, 0, i, &r.flags[i]));
  }
  for (size_t i = 0; i < r.nops; i++) {
    op_rec *o = &r.ops[i];
    CHECK(rill_block_op_info(r.src, 0, i, &o->info));
    o->in = xcalloc(o->info.ninputs, sizeof *o->in);
    o->out = xcalloc(o->info.noutputs, sizeof *o->out);
    o->attrs = xcalloc(o->info.nattrs, sizeof *o->attrs);
    for (size_t k = 0; k < o->info.ninputs; k++)
      CHECK(rill_block_op_input_info(r.src, 0, i, k, &o->in[k]));
    for (size_t k = 0; k < o->info.noutputs; k++)
      CHECK(rill_block_op_output_info(r.src, 0, i, k, &o->out[k]));
    for (size_t k = 0; k < o->info.nattrs; k++) {
      CHECK(rill_block_op_attr_value(r.src, 0, i, k, &o->attrs[k]));
      if (o->attrs[k].type == 8 || o->attrs[k].type == 10) o->has_block = true;
    }
  }
  return r;
}

static void set_attr(rill_op_builder *b, const rill_attr_value_info *a) {
  switch (a->type) {
    case 0: CHECK(rill_op_builder_attr_int(b, a->name, (int32_t)a->i)); break;
    case 1: CHECK(rill_op_builder_attr_float(b, a->name, (float)a->f)); break;
    case 2: CHECK(rill_op_builder_attr_string(b, a->name, a->s)); break;
    case 3: CHECK(rill_op_builder_attr_ints(b, a->name, a->items, a->count)); break;
    case 4: CHECK(rill_op_builder_attr_floats(b, a->name, a->items, a->count)); break;
    case 5: CHECK(rill_op_builder_attr_strings(b, a->name, a->items, a->count)); break;
    case 6: CHECK(rill_op_builder_attr_bool(b, a->name, a->i != 0)); break;
    case 7: CHECK(rill_op_builder_attr_bools(b, a->name, a->items, a->count)); break;
    case 8: CHECK(rill_op_builder_attr_block(b, a->name, (int32_t)a->i)); break;
    case 9: CHECK(rill_op_builder_attr_long(b, a->name, a->i)); break;
    case 11: CHECK(rill_op_builder_attr_longs(b, a->name, a->items, a->count)); break;
    case 15: CHECK(rill_op_builder_attr_double(b, a->name, a->f)); break;
    default: fprintf(stderr, "attribute %s: type %d not replayed\n", a->name, (int)a->type); exit(1);
  }
}

static void add_var(rill_program *p, const rill_var_info *v, const rill_var_flags *f) {
  CHECK(rill_block_add_var(p, 0, v->name, (rill_var_type)v->type, v->dtype, v->dims, v->ndim,
                           v->lod_level, v->persistable));
  if (v->is_parameter || f->stop_gradient)
    CHECK(rill_var_set_flags(p, 0, v->name, v->persistable, v->is_parameter, f->stop_gradient));
  if (f->need_check_feed) CHECK(rill_var_set_need_check_feed(p, 0, v->name, true));
}

static void add_op(rill_program *p, const op_rec *o) {
  rill_op_builder *b;
  CHECK(rill_op_builder_create(o->info.type, &b));
  CHECK(rill_op_builder_set_strict(b, false));
  for (size_t k = 0; k < o->info.ninputs; k++)
    CHECK(rill_op_builder_input(b, o->in[k].name, o->in[k].args, o->in[k].nargs));
  for (size_t k = 0; k < o->info.noutputs; k++)
    CHECK(rill_op_builder_output(b, o->out[k].name, o->out[k].args, o->out[k].nargs));
  for (size_t k = 0; k < o->info.nattrs; k++) set_attr(b, &o->attrs[k]);
  CHECK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  if (!o->has_block) CHECK(rill_block_infer_op(p, 0, rill_block_num_ops(p, 0) - 1));
}

static rill_program *replay(const prog_rec *r) {
  rill_program *p;
  CHECK(rill_program_create(&p));
  for (size_t i = 0; i < r->nvars; i++) add_var(p, &r->vars[i], &r->flags[i]);
  for (size_t i = 0; i < r->nops; i++) add_op(p, &r->ops[i]);
  return p;
}

/* The learning rate, a [1] float persistable, set by a fill_constant in startup. */
static void add_lr(rill_program *main, rill_program *startup) {
  const int64_t one[] = {1};
  const char *lr[] = {"learning_rate_0"};
  CHECK(rill_block_add_var(main, 0, lr[0], RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, one, 1, 0, true));
  CHECK(rill_block_add_var(startup, 0, lr[0], RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, one, 1, 0, true));
  rill_op_builder *b;
  CHECK(rill_op_builder_create("fill_constant", &b));
  CHECK(rill_op_builder_set_strict(b, false));
  CHECK(rill_op_builder_output(b, "Out", lr, 1));
  const int32_t shape[] = {1};
  CHECK(rill_op_builder_attr_ints(b, "shape", shape, 1));
  CHECK(rill_op_builder_attr_float(b, "value", 0.01f));
  CHECK(rill_op_builder_attr_int(b, "dtype", RILL_DTYPE_FP32));
  CHECK(rill_op_builder_attr_int(b, "op_role", 0));
  CHECK(rill_op_builder_append(b, startup, 0));
  rill_op_builder_destroy(b);
  CHECK(rill_block_infer_op(startup, 0, rill_block_num_ops(startup, 0) - 1));
}

static void minimize(rill_program *main, rill_program *startup, const char *loss) {
  add_lr(main, startup);
  rill_param_grads *pairs;
  CHECK(rill_program_append_backward(main, loss, NULL, 0, &pairs));
  const char *lr[] = {"learning_rate_0"};
  for (size_t i = 0; i < rill_param_grads_count(pairs); i++) {
    const char *p[] = {rill_param_grads_param(pairs, i)};
    const char *g[] = {rill_param_grads_grad(pairs, i)};
    const char *role_var[] = {p[0], g[0]};
    rill_op_builder *b;
    CHECK(rill_op_builder_create("sgd", &b));
    CHECK(rill_op_builder_set_strict(b, false));
    CHECK(rill_op_builder_input(b, "Param", p, 1));
    CHECK(rill_op_builder_input(b, "Grad", g, 1));
    CHECK(rill_op_builder_input(b, "LearningRate", lr, 1));
    CHECK(rill_op_builder_output(b, "ParamOut", p, 1));
    CHECK(rill_op_builder_attr_int(b, "op_role", 2));
    CHECK(rill_op_builder_attr_strings(b, "op_role_var", role_var, 2));
    CHECK(rill_op_builder_append(b, main, 0));
    rill_op_builder_destroy(b);
    CHECK(rill_block_infer_op(main, 0, rill_block_num_ops(main, 0) - 1));
  }
  rill_param_grads_destroy(pairs);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s MAIN STARTUP LOSS ROUNDS\n", argv[0]);
    return 2;
  }
  prog_rec main_rec = record(argv[1]), startup_rec = record(argv[2]);
  int rounds = atoi(argv[4]);
  double best = 1e30;
  size_t nops = 0;
  for (int r = 0; r < (rounds > 0 ? rounds : 1); r++) {
    double t = now_s();
    rill_program *main = replay(&main_rec), *startup = replay(&startup_rec);
    minimize(main, startup, argv[3]);
    t = now_s() - t;
    if (t < best) best = t;
    nops = rill_block_num_ops(main, 0);
    rill_program_destroy(main);
    rill_program_destroy(startup);
  }
  printf("RESULT build_ms=%.3f ops=%zu\n", best * 1e3, nops);
  return 0;
}
