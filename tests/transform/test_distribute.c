/* The distribute transpiler (framework/transform/distribute.c): block layout against
 * Paddle's slice_variable rule, placement, the trainer / pserver / pserver startup
 * programs op by op, the startup rows guarantee (run), and the errors. */
#include <math.h>

#include "framework/registry/registry.h"
#include "framework/transform/distribute.h"
#include "framework/transform/opedit.h"
#include "transform/prog_util.h"

/* ---- block layout ---- */

/* Paddle 1.8's slice_variable, written from its description with its float arithmetic:
 * rows of each block of a variable of `dims` over n pservers. */
static size_t ref_slice(const int64_t *dims, int nd, int64_t n, int64_t minb, int64_t *rows) {
  int64_t numel = 1, width = 1;
  for (int i = 0; i < nd; i++) numel *= dims[i];
  for (int i = 1; i < nd; i++) width *= dims[i];
  int64_t maxc = (int64_t)floor((double)numel / (double)minb);
  if (maxc == 0) maxc = 1;
  int64_t count = maxc < n ? maxc : n;
  int64_t bs = (int64_t)ceil((double)numel / (double)count);
  if (nd >= 2 && bs % width) bs += width - bs % width;
  count = (int64_t)ceil((double)numel / (double)bs);
  for (int64_t k = 0; k < count; k++) {
    int64_t s = numel - k * bs < bs ? numel - k * bs : bs;
    rows[k] = s / width;
  }
  return (size_t)count;
}

static void check_layout(const int64_t *dims, int nd, const char *what) {
  for (int64_t n = 1; n <= 8; n++) {
    int64_t got[8], want[8];
    size_t ng;
    POK(rill_dist_slice(dims, nd, n, 8192, got, 8, &ng));
    size_t nw = ref_slice(dims, nd, n, 8192, want);
    cr_assert_eq(ng, nw, "%s over %d pservers: %zu blocks, want %zu", what, (int)n, ng, nw);
    int64_t sum = 0;
    for (size_t k = 0; k < ng; k++) {
      cr_assert_eq(got[k], want[k], "%s over %d: block %zu has %lld rows, want %lld", what,
                   (int)n, k, (long long)got[k], (long long)want[k]);
      sum += got[k];
    }
    cr_assert_eq(sum, dims[0], "%s: blocks cover %lld rows of %lld", what, (long long)sum,
                 (long long)dims[0]);
  }
}

/* Figures from Paddle 1.8.5's slice_variable (sizes / row width). */
Test(distribute, slice_matches_paddle_table) {
  struct {
    int64_t dims[4];
    int nd;
    int64_t n;
    size_t nb;
    int64_t rows[8];
  } t[] = {
      {{784, 1024}, 2, 2, 2, {392, 392}},
      {{1000, 64}, 2, 2, 2, {500, 500}},
      {{100000, 64}, 2, 8, 8, {12500, 12500, 12500, 12500, 12500, 12500, 12500, 12500}},
      {{100000, 64}, 2, 3, 3, {33334, 33334, 33332}},
      {{1024}, 1, 4, 1, {1024}},
      {{64, 3, 7, 7}, 4, 8, 1, {64}},
      {{2048, 1000}, 2, 3, 3, {683, 683, 682}},
      {{25088, 4096}, 2, 7, 7, {3584, 3584, 3584, 3584, 3584, 3584, 3584}},
      {{8193}, 1, 2, 1, {8193}},
      {{16384}, 1, 2, 2, {8192, 8192}},
      {{512, 512, 3, 3}, 4, 5, 5, {103, 103, 103, 103, 100}},
  };
  for (size_t i = 0; i < RILL_COUNTOF(t); i++) {
    int64_t rows[8];
    size_t nb;
    POK(rill_dist_slice(t[i].dims, t[i].nd, t[i].n, 8192, rows, 8, &nb));
    cr_assert_eq(nb, t[i].nb, "case %zu: %zu blocks", i, nb);
    for (size_t k = 0; k < nb; k++) cr_assert_eq(rows[k], t[i].rows[k], "case %zu block %zu", i, k);
  }
}

/* VGG16's parameters (the 13 convolutions and 3 fully connected layers). */
static const int64_t vgg16[][4] = {
    {64, 3, 3, 3},    {64, 64, 3, 3},   {128, 64, 3, 3},  {128, 128, 3, 3}, {256, 128, 3, 3},
    {256, 256, 3, 3}, {256, 256, 3, 3}, {512, 256, 3, 3}, {512, 512, 3, 3}, {512, 512, 3, 3},
    {512, 512, 3, 3}, {512, 512, 3, 3}, {512, 512, 3, 3}, {25088, 4096, 0, 0},
    {4096, 4096, 0, 0}, {4096, 1000, 0, 0}};

Test(distribute, slice_vgg16_resnet50_embedding) {
  for (size_t i = 0; i < RILL_COUNTOF(vgg16); i++) {
    int nd = vgg16[i][2] ? 4 : 2;
    check_layout(vgg16[i], nd, "vgg16 weight");
    check_layout(vgg16[i], 1, "vgg16 bias");
  }
  int64_t emb[2] = {100000, 64};
  check_layout(emb, 2, "embedding 1e5 x 64");
  rill_program *p = NULL;
  POK(rill_program_load(RILL_SHARED_DIR "/programs/paddle_inference_demo_resnet50.pdmodel", &p));
  size_t checked = 0;
  for (size_t i = 0; i < p->blocks[0].nvars; i++) {
    const rill_var_desc *v = &p->blocks[0].vars[i];
    if (!v->persistable || !v->has_tensor || v->dims.n < 1 || v->dims.d[0] < 1) continue;
    check_layout(v->dims.d, v->dims.n, v->name);
    checked++;
  }
  cr_assert_gt(checked, 100, "only %zu ResNet-50 parameters", checked);
  rill_program_destroy(p);
}

Test(distribute, slice_errors) {
  int64_t d[2] = {10, 0}, rows[8];
  size_t nb;
  rill_status *st = rill_dist_slice(d, 2, 2, 8192, rows, 8, &nb);
  cr_assert_eq(rill_status_code(st), RILL_INVALID_ARGUMENT);
  rill_status_destroy(st);
}

Test(distribute, hash_is_fnv1a) {
  cr_assert_eq(rill_dist_hash(""), 0xcbf29ce484222325ULL);
  cr_assert_eq(rill_dist_hash("fc_0.w_0.block1"), 0x0fd5e9b96de23ab1ULL);
}

/* ---- programs ---- */

typedef enum { OPT_SGD, OPT_MOMENTUM, OPT_ADAM } opt_kind;

static const char *params[4] = {"fc_0.b_0", "fc_0.w_0", "fc_1.b_0", "fc_1.w_0"};
static const int64_t pdims[4][2] = {{1024, 0}, {784, 1024}, {10, 0}, {1024, 10}};

static void var_of(rill_program *p, const char *name, int i, bool persistable) {
  int nd = pdims[i][1] ? 2 : 1;
  POK(rill_block_add_var(p, 0, name, RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, pdims[i], (size_t)nd, 0,
                         persistable));
}

/* Sets op_role (and op_role_var) on the last op of block 0, as Fluid's program does. */
static void op_role(rill_program *p, int role, const char *param, const char *grad) {
  rill_op_desc *op = &p->blocks[0].ops[p->blocks[0].nops - 1];
  POK(rill_opd_attr_int(op, "op_role", role));
  if (param) {
    const char *rv[2] = {param, grad};
    POK(rill_opd_attr_strings(op, "op_role_var", rv, 2));
  }
}

/* An MLP's training program reduced to what the transpiler reads: an op writing each
 * gradient (the backward pass) and one optimizer op per parameter, in name order as
 * Fluid's optimizers append them; and its startup program. */
static void mlp(opt_kind opt, rill_program **mainp, rill_program **startp) {
  rill_program *m = prog_new(), *s = prog_new();
  int64_t one = 1;
  POK(rill_block_add_var(m, 0, "learning_rate_0", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, &one, 1, 0,
                         true));
  POK(rill_block_add_var(s, 0, "learning_rate_0", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, &one, 1, 0,
                         true));
  rill_op_builder *b = prog_op_begin("fill_constant", "", "Out=learning_rate_0");
  POK(rill_op_builder_attr_float(b, "value", 0.1f));
  POK(rill_op_builder_attr_longs(b, "shape", (int64_t[]){1}, 1));
  prog_op_end(b, s);
  for (int i = 0; i < 4; i++) {
    char g[64], spec[128];
    snprintf(g, sizeof g, "%s@GRAD", params[i]);
    var_of(m, params[i], i, true);
    var_of(m, g, i, false);
    var_of(s, params[i], i, true);
    snprintf(spec, sizeof spec, "Out=%s", g);
    b = prog_op_begin("fill_constant", "", spec);
    prog_op_end(b, m);
    op_role(m, 1, NULL, NULL);
    snprintf(spec, sizeof spec, "Out=%s", params[i]);
    b = prog_op_begin(pdims[i][1] ? "uniform_random" : "fill_constant", "", spec);
    int64_t shp[2] = {pdims[i][0], pdims[i][1]};
    POK(rill_op_builder_attr_longs(b, "shape", shp, pdims[i][1] ? 2 : 1));
    if (pdims[i][1]) {
      POK(rill_op_builder_attr_float(b, "min", -0.05f));
      POK(rill_op_builder_attr_float(b, "max", 0.05f));
    }
    prog_op_end(b, s);
  }
  for (int i = 0; i < 4; i++) {
    char g[64], ins[1024], outs[1024], st1[96], st2[96], b1[96], b2[96];
    snprintf(g, sizeof g, "%s@GRAD", params[i]);
    const char *type = opt == OPT_SGD ? "sgd" : opt == OPT_MOMENTUM ? "momentum" : "adam";
    if (opt == OPT_SGD) {
      snprintf(ins, sizeof ins, "Param=%s;Grad=%s;LearningRate=learning_rate_0", params[i], g);
      snprintf(outs, sizeof outs, "ParamOut=%s", params[i]);
    } else if (opt == OPT_MOMENTUM) {
      snprintf(st1, sizeof st1, "%s_velocity_0", params[i]);
      var_of(m, st1, i, true);
      var_of(s, st1, i, true);
      snprintf(ins, sizeof ins, "Param=%s;Grad=%s;Velocity=%s;LearningRate=learning_rate_0",
               params[i], g, st1);
      snprintf(outs, sizeof outs, "ParamOut=%s;VelocityOut=%s", params[i], st1);
    } else {
      snprintf(st1, sizeof st1, "%s_moment1_0", params[i]);
      snprintf(st2, sizeof st2, "%s_moment2_0", params[i]);
      snprintf(b1, sizeof b1, "%s_beta1_pow_acc_0", params[i]);
      snprintf(b2, sizeof b2, "%s_beta2_pow_acc_0", params[i]);
      var_of(m, st1, i, true);
      var_of(m, st2, i, true);
      var_of(s, st1, i, true);
      var_of(s, st2, i, true);
      POK(rill_block_add_var(m, 0, b1, RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, &one, 1, 0, true));
      POK(rill_block_add_var(m, 0, b2, RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, &one, 1, 0, true));
      POK(rill_block_add_var(s, 0, b1, RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, &one, 1, 0, true));
      POK(rill_block_add_var(s, 0, b2, RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, &one, 1, 0, true));
      snprintf(ins, sizeof ins, "Param=%s;Grad=%s;LearningRate=learning_rate_0;Moment1=%s;"
               "Moment2=%s;Beta1Pow=%s;Beta2Pow=%s", params[i], g, st1, st2, b1, b2);
      snprintf(outs, sizeof outs, "ParamOut=%s;Moment1Out=%s;Moment2Out=%s;Beta1PowOut=%s;"
               "Beta2PowOut=%s", params[i], st1, st2, b1, b2);
    }
    if (opt != OPT_SGD) {
      const char *names[2] = {st1, opt == OPT_ADAM ? st2 : NULL};
      for (int k = 0; k < 2 && names[k]; k++) {
        char spec[128];
        snprintf(spec, sizeof spec, "Out=%s", names[k]);
        b = prog_op_begin("fill_constant", "", spec);
        int64_t shp[2] = {pdims[i][0], pdims[i][1]};
        POK(rill_op_builder_attr_longs(b, "shape", shp, pdims[i][1] ? 2 : 1));
        prog_op_end(b, s);
      }
    }
    for (int k = 0; opt == OPT_ADAM && k < 2; k++) {
      char spec[128];
      snprintf(spec, sizeof spec, "Out=%s", k ? b2 : b1);
      b = prog_op_begin("fill_constant", "", spec);
      POK(rill_op_builder_attr_longs(b, "shape", (int64_t[]){1}, 1));
      POK(rill_op_builder_attr_float(b, "value", k ? 0.999f : 0.9f));
      prog_op_end(b, s);
    }
    b = prog_op_begin(type, ins, outs);
    prog_op_end(b, m);
    op_role(m, 2, params[i], g);
  }
  *mainp = m;
  *startp = s;
}

static rill_transpiled *xpile(const rill_program *m, const rill_program *s, int trainers, int tid,
                              bool sync) {
  rill_transpile_config c = RILL_TRANSPILE_CONFIG_INIT;
  c.pservers = "127.0.0.1:6170,127.0.0.1:6171";
  c.trainers = trainers;
  c.trainer_id = tid;
  c.sync_mode = sync;
  rill_transpiled *t = NULL;
  POK(rill_program_transpile(m, s, &c, &t));
  return t;
}

static const rill_op_desc *op_at(const rill_program *p, int block, size_t i) {
  cr_assert_lt(i, p->blocks[block].nops, "block %d has %zu ops, no #%zu", block,
               p->blocks[block].nops, i);
  return &p->blocks[block].ops[i];
}

static void expect_args(const rill_op_desc *op, const char *slot, bool input, const char *csv) {
  const rill_op_slot *s = input ? rill_op_input(op, slot) : rill_op_output(op, slot);
  char got[2048] = "";
  for (size_t i = 0; s && i < s->nargs; i++) {
    strcat(got, i ? "," : "");
    strncat(got, s->args[i], sizeof got - strlen(got) - 1);
  }
  cr_assert_str_eq(got, csv, "%s %s %s", op->type, input ? "input" : "output", slot);
}

static void expect_strs(const rill_op_desc *op, const char *attr, const char *csv) {
  const rill_attr *a = rill_op_attr(op, attr);
  cr_assert_not_null(a, "%s has no %s", op->type, attr);
  char got[2048] = "";
  if (a->value.type == RILL_ATTR_STRING) {
    snprintf(got, sizeof got, "%s", a->value.v.s);
  } else {
    for (size_t i = 0; i < a->value.n; i++) {
      strcat(got, i ? "," : "");
      strncat(got, a->value.list.strings[i], sizeof got - strlen(got) - 1);
    }
  }
  cr_assert_str_eq(got, csv, "%s attr %s", op->type, attr);
}

static int32_t attr_i(const rill_op_desc *op, const char *attr) {
  const rill_attr *a = rill_op_attr(op, attr);
  cr_assert_not_null(a, "%s has no %s", op->type, attr);
  return a->value.type == RILL_ATTR_BOOLEAN ? a->value.v.b : a->value.v.i;
}

#define EP0 "127.0.0.1:6170"
#define EP1 "127.0.0.1:6171"

/* Checked against Paddle 1.8.5's DistributeTranspiler on the same MLP (fc 784-1024-10):
 * op types, order, slots and attributes; control variables are numbered here. */
Test(distribute, trainer_program_sync_two_trainers) {
  rill_program *m, *s;
  mlp(OPT_SGD, &m, &s);
  rill_transpiled *t = xpile(m, s, 2, 0, true);
  const rill_program *tp = rill_transpiled_trainer_program(t);
  const char *types[] = {"fill_constant", "send", "fill_constant", "split_byref", "send",
                         "fill_constant", "send", "fill_constant", "send", "send_barrier",
                         "recv", "recv", "recv", "recv", "fetch_barrier", "concat"};
  cr_assert_eq(tp->blocks[0].nops, RILL_COUNTOF(types));
  for (size_t i = 0; i < RILL_COUNTOF(types); i++)
    cr_assert_str_eq(op_at(tp, 0, i)->type, types[i], "op #%zu", i);
  expect_args(op_at(tp, 0, 0), "Out", false, "fc_0.b_0@GRAD.trainer_0");
  expect_args(op_at(tp, 0, 1), "X", true, "fc_0.b_0@GRAD.trainer_0");
  expect_strs(op_at(tp, 0, 1), "epmap", EP0);
  expect_args(op_at(tp, 0, 3), "X", true, "fc_0.w_0@GRAD");
  expect_args(op_at(tp, 0, 3), "Out", false,
              "fc_0.w_0@GRAD.block0.trainer_0,fc_0.w_0@GRAD.block1.trainer_0");
  const rill_attr *sec = rill_op_attr(op_at(tp, 0, 3), "sections");
  cr_assert(sec && sec->value.n == 2 && sec->value.list.ints[0] == 392 &&
            sec->value.list.ints[1] == 392);
  expect_strs(op_at(tp, 0, 4), "epmap", EP1 "," EP0);
  expect_strs(op_at(tp, 0, 6), "epmap", EP1);
  expect_strs(op_at(tp, 0, 8), "epmap", EP0);
  cr_assert_eq(attr_i(op_at(tp, 0, 4), "use_send_handler"), 1);
  cr_assert_eq(attr_i(op_at(tp, 0, 4), "op_role"), 4);
  expect_args(op_at(tp, 0, 9), "X", true,
              "__control_var@0,__control_var@1,__control_var@2,__control_var@3");
  expect_strs(op_at(tp, 0, 9), "endpoints", EP0 "," EP1);
  expect_args(op_at(tp, 0, 11), "X", true, "__control_var@4");
  expect_args(op_at(tp, 0, 11), "Out", false, "fc_0.w_0.block0,fc_0.w_0.block1");
  expect_strs(op_at(tp, 0, 11), "epmap", EP1 "," EP0);
  expect_args(op_at(tp, 0, 14), "Out", false,
              "fc_0.b_0,fc_0.w_0.block0,fc_0.w_0.block1,fc_1.b_0,fc_1.w_0");
  expect_args(op_at(tp, 0, 15), "X", true, "fc_0.w_0.block0,fc_0.w_0.block1");
  expect_args(op_at(tp, 0, 15), "Out", false, "fc_0.w_0");
  const rill_var_desc *blk = rill_block_find_var(tp, 0, "fc_0.w_0.block1");
  cr_assert(blk && blk->dims.d[0] == 392 && blk->dims.d[1] == 1024 && !blk->persistable);
  cr_assert_null(rill_block_find_var(tp, 0, "fc_0.b_0@GRAD"), "renamed gradient still declared");
  rill_transpiled_destroy(t);
  rill_program_destroy(m);
  rill_program_destroy(s);
}

Test(distribute, pserver_program_sync_momentum) {
  rill_program *m, *s;
  mlp(OPT_MOMENTUM, &m, &s);
  rill_transpiled *t = xpile(m, s, 2, 1, true);
  const rill_program *ps;
  POK(rill_transpiled_pserver_program(t, EP0, &ps));
  cr_assert_eq(ps->nblocks, 4);
  const rill_op_desc *las = op_at(ps, 0, 0);
  cr_assert_str_eq(las->type, "listen_and_serv");
  expect_args(las, "X", true,
              "fc_0.b_0@GRAD.trainer_0,fc_0.b_0@GRAD.trainer_1,fc_0.w_0@GRAD.block1.trainer_0,"
              "fc_0.w_0@GRAD.block1.trainer_1,fc_1.w_0@GRAD.trainer_0,fc_1.w_0@GRAD.trainer_1");
  expect_strs(las, "endpoint", EP0);
  expect_strs(las, "grad_to_block_id", "fc_0.b_0@GRAD:1,fc_0.w_0@GRAD.block1:2,fc_1.w_0@GRAD:3");
  cr_assert_eq(attr_i(las, "Fanin"), 2);
  cr_assert_eq(attr_i(las, "distributed_mode"), 0);
  cr_assert_eq(attr_i(las, "pserver_id"), 0);
  cr_assert_eq(attr_i(las, "lr_decay_block_id"), -1);
  const rill_attr *ob = rill_op_attr(las, "optimize_blocks");
  cr_assert(ob && ob->value.type == RILL_ATTR_BLOCKS && ob->value.n == 3 &&
            ob->value.list.blocks[0] == 1 && ob->value.list.blocks[2] == 3);
  cr_assert_str_eq(op_at(ps, 2, 0)->type, "sum");
  expect_args(op_at(ps, 2, 0), "X", true,
              "fc_0.w_0@GRAD.block1.trainer_0,fc_0.w_0@GRAD.block1.trainer_1");
  expect_args(op_at(ps, 2, 0), "Out", false, "fc_0.w_0@GRAD.block1");
  cr_assert_str_eq(op_at(ps, 2, 1)->type, "scale");
  cr_assert_float_eq(rill_op_attr(op_at(ps, 2, 1), "scale")->value.v.f, 0.5f, 0);
  const rill_op_desc *mo = op_at(ps, 2, 2);
  cr_assert_str_eq(mo->type, "momentum");
  expect_args(mo, "Param", true, "fc_0.w_0.block1");
  expect_args(mo, "Grad", true, "fc_0.w_0@GRAD.block1");
  expect_args(mo, "Velocity", true, "fc_0.w_0_velocity_0.block1");
  expect_args(mo, "VelocityOut", false, "fc_0.w_0_velocity_0.block1");
  expect_args(mo, "LearningRate", true, "learning_rate_0");
  const rill_var_desc *v = rill_block_find_var(ps, 0, "fc_0.w_0_velocity_0.block1");
  cr_assert(v && v->persistable && v->dims.d[0] == 392);
  expect_args(op_at(ps, 1, 2), "Velocity", true, "fc_0.b_0_velocity_0");
  rill_transpiled_destroy(t);
  rill_program_destroy(m);
  rill_program_destroy(s);
}

Test(distribute, async_adam_single_trainer) {
  rill_program *m, *s;
  mlp(OPT_ADAM, &m, &s);
  rill_transpiled *t = xpile(m, s, 1, 0, false);
  const rill_program *tp = rill_transpiled_trainer_program(t);
  for (size_t i = 0; i < tp->blocks[0].nops; i++) {
    cr_assert_str_neq(tp->blocks[0].ops[i].type, "send_barrier");
    cr_assert_str_neq(tp->blocks[0].ops[i].type, "fetch_barrier");
    cr_assert_str_neq(tp->blocks[0].ops[i].type, "adam");
  }
  /* Without a barrier each recv waits for its own gradient's send. */
  const rill_op_desc *r = NULL;
  for (size_t i = 0; i < tp->blocks[0].nops; i++)
    if (!strcmp(tp->blocks[0].ops[i].type, "recv")) {
      r = &tp->blocks[0].ops[i];
      break;
    }
  cr_assert_not_null(r);
  expect_args(r, "X", true, "__control_var@0");
  expect_args(r, "Out", false, "fc_0.b_0");
  const rill_program *ps;
  POK(rill_transpiled_pserver_program(t, EP1, &ps));
  const rill_op_desc *las = op_at(ps, 0, 0);
  expect_args(las, "X", true, "fc_0.w_0@GRAD.block0,fc_1.b_0@GRAD");
  cr_assert_eq(attr_i(las, "distributed_mode"), 1);
  cr_assert_eq(attr_i(las, "Fanin"), 1);
  cr_assert_eq(ps->blocks[1].nops, 1, "async: the optimizer op alone");
  const rill_op_desc *ad = op_at(ps, 1, 0);
  cr_assert_str_eq(ad->type, "adam");
  expect_args(ad, "Moment1", true, "fc_0.w_0_moment1_0.block0");
  expect_args(ad, "Beta1Pow", true, "fc_0.w_0_beta1_pow_acc_0.block0");
  const rill_var_desc *b1 = rill_block_find_var(ps, 0, "fc_0.w_0_beta1_pow_acc_0.block0");
  cr_assert(b1 && b1->dims.n == 1 && b1->dims.d[0] == 1, "beta pow keeps its shape");
  rill_transpiled_destroy(t);
  rill_program_destroy(m);
  rill_program_destroy(s);
}

static rill_tensor *get(rill_scope *sc, const char *name) {
  rill_tensor *t = NULL;
  POK(rill_scope_get_tensor(sc, name, &t));
  return t;
}

/* The pserver startup programs give each block exactly the rows of the whole parameter
 * under the original startup program. */
Test(distribute, pserver_startup_holds_the_local_rows) {
  rill_program *m, *s;
  mlp(OPT_ADAM, &m, &s);
  rill_transpiled *t = xpile(m, s, 2, 0, true);
  rill_executor *ex = NULL;
  POK(rill_executor_create(NULL, &ex));
  rill_scope *local = NULL;
  POK(rill_scope_create(NULL, &local));
  POK(rill_executor_run(ex, s, local, NULL, NULL, 0, NULL, 0, NULL));
  rill_tensor *whole = get(local, "fc_0.w_0");
  const float *w = rill_tensor_data(whole);
  const char *eps[2] = {EP0, EP1};
  size_t seen = 0;
  for (int e = 0; e < 2; e++) {
    const rill_program *ss;
    POK(rill_transpiled_pserver_startup(t, eps[e], &ss));
    rill_scope *sc = NULL;
    POK(rill_scope_create(NULL, &sc));
    POK(rill_executor_run(ex, ss, sc, NULL, NULL, 0, NULL, 0, NULL));
    for (int k = 0; k < 2; k++) {
      char name[32];
      snprintf(name, sizeof name, "fc_0.w_0.block%d", k);
      if (!rill_block_find_var(ss, 0, name)) continue;
      rill_tensor *bt = get(sc, name);
      cr_assert_eq(rill_tensor_dims(bt)[0], 392);
      cr_assert_eq(memcmp(rill_tensor_data(bt), w + (size_t)k * 392 * 1024, 392 * 1024 * 4), 0,
                   "block %d differs from the local rows", k);
      rill_tensor *mo = get(sc, k ? "fc_0.w_0_moment1_0.block1" : "fc_0.w_0_moment1_0.block0");
      cr_assert_eq(rill_tensor_numel(mo), 392 * 1024);
      rill_tensor *bp = get(sc, k ? "fc_0.w_0_beta1_pow_acc_0.block1"
                                  : "fc_0.w_0_beta1_pow_acc_0.block0");
      cr_assert_eq(rill_tensor_numel(bp), 1);
      rill_tensor_destroy(bt);
      rill_tensor_destroy(mo);
      rill_tensor_destroy(bp);
      seen++;
    }
    rill_scope_destroy(sc);
  }
  cr_assert_eq(seen, 2, "both blocks checked");
  rill_tensor_destroy(whole);
  rill_scope_destroy(local);
  rill_executor_destroy(ex);
  rill_transpiled_destroy(t);
  rill_program_destroy(m);
  rill_program_destroy(s);
}

Test(distribute, hash_name_placement) {
  rill_program *m, *s;
  mlp(OPT_SGD, &m, &s);
  rill_transpile_config c = RILL_TRANSPILE_CONFIG_INIT;
  c.pservers = EP0 "," EP1 ",127.0.0.1:6172";
  c.split_method = RILL_SPLIT_HASH_NAME;
  rill_transpiled *t = NULL;
  POK(rill_program_transpile(m, s, &c, &t));
  const rill_program *tp = rill_transpiled_trainer_program(t);
  for (size_t i = 0; i < tp->blocks[0].nops; i++) {
    const rill_op_desc *op = &tp->blocks[0].ops[i];
    if (strcmp(op->type, "recv")) continue;
    const rill_op_slot *out = rill_op_output(op, "Out");
    const rill_attr *ep = rill_op_attr(op, "epmap");
    for (size_t k = 0; k < out->nargs; k++) {
      const char *want = ep->value.list.strings[k];
      size_t idx = (size_t)(rill_dist_hash(out->args[k]) % 3);
      const char *eps[3] = {EP0, EP1, "127.0.0.1:6172"};
      cr_assert_str_eq(want, eps[idx], "%s", out->args[k]);
    }
  }
  rill_transpiled_destroy(t);
  rill_program_destroy(m);
  rill_program_destroy(s);
}

static void expect_error(const rill_program *m, const rill_program *s,
                         const rill_transpile_config *c, rill_code code, const char *needle) {
  rill_transpiled *t = NULL;
  rill_status *st = rill_program_transpile(m, s, c, &t);
  cr_assert_eq(rill_status_code(st), code, "%s", rill_status_message(st));
  cr_assert(strstr(rill_status_message(st), needle), "message: %s", rill_status_message(st));
  cr_assert_null(t);
  rill_status_destroy(st);
}

Test(distribute, errors_are_statuses) {
  rill_program *m, *s;
  mlp(OPT_SGD, &m, &s);
  rill_transpile_config c = RILL_TRANSPILE_CONFIG_INIT;
  c.pservers = EP0 "," EP1;
  c.min_block_size = 4096;
  expect_error(m, s, &c, RILL_INVALID_ARGUMENT, "min_block_size 4096 is below 8192");
  c.min_block_size = 8192;
  c.trainer_id = 2;
  c.trainers = 2;
  expect_error(m, s, &c, RILL_INVALID_ARGUMENT, "trainer_id 2");
  c.trainer_id = 0;
  c.pservers = EP0 ",," EP1;
  expect_error(m, s, &c, RILL_INVALID_ARGUMENT, "empty");
  c.pservers = EP0 "," EP0;
  expect_error(m, s, &c, RILL_INVALID_ARGUMENT, "listed twice");
  c.pservers = EP0;
  c.struct_size = 3;
  expect_error(m, s, &c, RILL_INVALID_ARGUMENT, "struct_size");
  c.struct_size = sizeof c;
  rill_program *bare = prog_new();
  prog_var(bare, "w", RILL_DTYPE_FP32, "p", 1, (int64_t)4);
  expect_error(bare, s, &c, RILL_INVALID_ARGUMENT, "no optimizer ops");
  rill_transpiled *t = NULL;
  POK(rill_program_transpile(m, s, &c, &t));
  const rill_program *ps = NULL;
  rill_status *st = rill_transpiled_pserver_program(t, "10.0.0.1:1", &ps);
  cr_assert_eq(rill_status_code(st), RILL_NOT_FOUND);
  cr_assert(strstr(rill_status_message(st), "10.0.0.1:1"));
  rill_status_destroy(st);
  cr_assert_null(ps);
  rill_transpiled_destroy(t);
  rill_program_destroy(bare);
  rill_program_destroy(m);
  rill_program_destroy(s);
}

/* Transpiled pserver programs validate, and every op of the trainer program has a CPU
 * kernel (this file's toy gradients, fill_constant without a shape, keep the trainer
 * program itself from validating). */
Test(distribute, programs_validate) {
  rill_program *m, *s;
  mlp(OPT_SGD, &m, &s);
  rill_transpiled *t = xpile(m, s, 2, 0, true);
  const rill_program *ss, *ps;
  POK(rill_transpiled_pserver_startup(t, EP1, &ss));
  POK(rill_program_validate(ss));
  POK(rill_transpiled_pserver_program(t, EP1, &ps));
  POK(rill_program_validate(ps));
  const rill_program *tp = rill_transpiled_trainer_program(t);
  for (size_t i = 0; i < tp->blocks[0].nops; i++) {
    const char *type = tp->blocks[0].ops[i].type;
    cr_assert_not_null(rill_kernel_find(type, RILL_DEVICE_CPU, RILL_DTYPE_FP32), "%s", type);
  }
  rill_transpiled_destroy(t);
  rill_program_destroy(m);
  rill_program_destroy(s);
}

/* A sparse embedding (lookup_table with is_sparse): its SelectedRows gradient is cut by
 * split_selected_rows and the pservers list it in sparse_grad_to_param. */
Test(distribute, sparse_embedding) {
  rill_program *m = prog_new(), *s = prog_new();
  int64_t ed[2] = {1000, 64}, one = 1;
  POK(rill_block_add_var(m, 0, "emb", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, ed, 2, 0, true));
  POK(rill_block_add_var(m, 0, "emb@GRAD", RILL_VAR_SELECTED_ROWS, RILL_DTYPE_FP32, ed, 2, 0, false));
  POK(rill_block_add_var(m, 0, "ids", RILL_VAR_LOD_TENSOR, RILL_DTYPE_INT64, &one, 1, 0, false));
  POK(rill_block_add_var(m, 0, "out@GRAD", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, ed, 2, 0, false));
  POK(rill_block_add_var(m, 0, "lr", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, &one, 1, 0, true));
  rill_op_builder *b = prog_op_begin("lookup_table_grad", "W=emb;Ids=ids;Out@GRAD=out@GRAD",
                                     "W@GRAD=emb@GRAD");
  POK(rill_op_builder_attr_bool(b, "is_sparse", true));
  prog_op_end(b, m);
  op_role(m, 1, NULL, NULL);
  prog_op(m, "sgd", "Param=emb;Grad=emb@GRAD;LearningRate=lr", "ParamOut=emb");
  op_role(m, 2, "emb", "emb@GRAD");
  rill_transpiled *t = xpile(m, s, 2, 1, true);
  const rill_program *tp = rill_transpiled_trainer_program(t);
  const rill_op_desc *sp = op_at(tp, 0, 1);
  cr_assert_str_eq(sp->type, "split_selected_rows");
  expect_args(sp, "Out", false, "emb@GRAD.block0.trainer_1,emb@GRAD.block1.trainer_1");
  const rill_attr *hs = rill_op_attr(sp, "height_sections");
  cr_assert(hs && hs->value.type == RILL_ATTR_LONGS && hs->value.n == 2 &&
            hs->value.list.longs[0] == 500 && hs->value.list.longs[1] == 500);
  const rill_var_desc *gb = rill_block_find_var(tp, 0, "emb@GRAD.block1.trainer_1");
  cr_assert(gb && gb->type == RILL_VAR_SELECTED_ROWS && gb->dims.d[0] == 500);
  cr_assert_str_eq(op_at(tp, 0, 2)->type, "send");
  const rill_program *ps;
  POK(rill_transpiled_pserver_program(t, EP1, &ps));
  expect_strs(op_at(ps, 0, 0), "sparse_grad_to_param", "emb@GRAD.block1:emb.block1");
  const rill_var_desc *mg = rill_block_find_var(ps, 0, "emb@GRAD.block1");
  cr_assert(mg && mg->type == RILL_VAR_SELECTED_ROWS);
  rill_transpiled_destroy(t);
  rill_program_destroy(m);
  rill_program_destroy(s);
}

/* A lookup with is_distributed keeps the table on the pservers: the trainer's lookup
 * becomes distributed_lookup_table over the table's blocks and the table is never
 * received; each pserver holding a block gets a prefetch block (lookup_table on the
 * block) named in prefetch_var_name_to_block_id. Any other reader of the table is an
 * error. */
static void dist_table(rill_program **mp, rill_program **sp, bool extra_reader) {
  rill_program *m = prog_new(), *s = prog_new();
  int64_t ed[2] = {1000, 64}, idd[2] = {-1, 1}, od[2] = {-1, 64}, one = 1;
  POK(rill_block_add_var(m, 0, "emb", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, ed, 2, 0, true));
  POK(rill_block_add_var(m, 0, "emb@GRAD", RILL_VAR_SELECTED_ROWS, RILL_DTYPE_FP32, ed, 2, 0, false));
  POK(rill_block_add_var(m, 0, "ids", RILL_VAR_LOD_TENSOR, RILL_DTYPE_INT64, idd, 2, 0, false));
  POK(rill_block_add_var(m, 0, "out", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, od, 2, 0, false));
  POK(rill_block_add_var(m, 0, "out@GRAD", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, od, 2, 0, false));
  POK(rill_block_add_var(m, 0, "lr", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, &one, 1, 0, true));
  rill_op_builder *b = prog_op_begin("lookup_table", "W=emb;Ids=ids", "Out=out");
  POK(rill_op_builder_attr_bool(b, "is_sparse", true));
  POK(rill_op_builder_attr_bool(b, "is_distributed", true));
  POK(rill_op_builder_attr_long(b, "padding_idx", 3));
  prog_op_end(b, m);
  if (extra_reader) prog_op(m, "scale", "X=emb", "Out=out");
  b = prog_op_begin("lookup_table_grad", "W=emb;Ids=ids;Out@GRAD=out@GRAD", "W@GRAD=emb@GRAD");
  POK(rill_op_builder_attr_bool(b, "is_sparse", true));
  prog_op_end(b, m);
  op_role(m, 1, NULL, NULL);
  prog_op(m, "sgd", "Param=emb;Grad=emb@GRAD;LearningRate=lr", "ParamOut=emb");
  op_role(m, 2, "emb", "emb@GRAD");
  *mp = m;
  *sp = s;
}

Test(distribute, distributed_lookup_table) {
  rill_program *m, *s;
  dist_table(&m, &s, false);
  rill_transpiled *t = xpile(m, s, 2, 1, true);
  const rill_program *tp = rill_transpiled_trainer_program(t);
  const rill_op_desc *lk = op_at(tp, 0, 0);
  cr_assert_str_eq(lk->type, "distributed_lookup_table");
  expect_args(lk, "Ids", true, "ids");
  expect_args(lk, "W", true, "emb");
  expect_args(lk, "Outputs", false, "out");
  expect_strs(lk, "table_names", "emb.block0,emb.block1");
  expect_strs(lk, "endpoints", EP0 "," EP1);
  expect_strs(lk, "lookup_table_version", "lookup_table");
  const rill_attr *hs = rill_op_attr(lk, "height_sections");
  cr_assert(hs && hs->value.type == RILL_ATTR_LONGS && hs->value.n == 2 &&
            hs->value.list.longs[0] == 500 && hs->value.list.longs[1] == 500);
  const rill_attr *pad = rill_op_attr(lk, "padding_idx");
  cr_assert(pad && pad->value.type == RILL_ATTR_LONG && pad->value.v.l == 3);
  cr_assert_eq(attr_i(lk, "trainer_id"), 1);
  for (size_t i = 0; i < tp->blocks[0].nops; i++) {
    const char *ty = tp->blocks[0].ops[i].type;
    cr_assert(strcmp(ty, "recv") && strcmp(ty, "concat"), "the table is never received (%s)", ty);
  }
  const rill_program *ps;
  POK(rill_transpiled_pserver_program(t, EP1, &ps));
  const rill_op_desc *ls = op_at(ps, 0, 0);
  const rill_attr *pf = rill_op_attr(ls, "prefetch_var_name_to_block_id");
  cr_assert(pf && pf->value.n == 1);
  char want[64];
  int32_t blk = -1;
  cr_assert_eq(sscanf(pf->value.list.strings[0], "emb.block1@PREFETCH_IDS:%d", &blk), 1, "%s",
               pf->value.list.strings[0]);
  snprintf(want, sizeof want, "emb.block1@PREFETCH_IDS:%d", (int)blk);
  cr_assert_str_eq(pf->value.list.strings[0], want);
  const rill_op_desc *look = op_at(ps, blk, 0);
  cr_assert_str_eq(look->type, "lookup_table");
  expect_args(look, "W", true, "emb.block1");
  expect_args(look, "Ids", true, "emb.block1@PREFETCH_IDS");
  expect_args(look, "Out", false, "emb.block1@PREFETCH_ROWS");
  const rill_attr *ob = rill_op_attr(ls, "optimize_blocks");
  for (size_t i = 0; ob && i < ob->value.n; i++)
    cr_assert_neq(ob->value.list.blocks[i], blk, "the prefetch block is no optimize block");
  const rill_var_desc *rows = rill_block_find_var(ps, blk, "emb.block1@PREFETCH_ROWS");
  cr_assert(rows && rows->dims.d[1] == 64);
  rill_transpiled_destroy(t);

  /* A table something else reads cannot stay on the pservers. */
  rill_program_destroy(m);
  rill_program_destroy(s);
  dist_table(&m, &s, true);
  rill_transpile_config c = RILL_TRANSPILE_CONFIG_INIT;
  c.pservers = EP0 "," EP1;
  c.trainers = 2;
  expect_error(m, s, &c, RILL_UNIMPLEMENTED, "'emb' is a distributed lookup table");
  rill_program_destroy(m);
  rill_program_destroy(s);
}

/* A trainer never allocates a distributed table: its startup program declares the table
 * through fake_init (shape, dtype, no data); the pservers' startup programs still draw
 * the whole table and keep their rows; the startup program given stays unchanged. */
Test(distribute, trainer_startup_declares_the_table_without_data) {
  rill_program *m, *s;
  dist_table(&m, &s, false);
  int64_t ed[2] = {1000, 64}, one = 1;
  POK(rill_block_add_var(s, 0, "emb", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, ed, 2, 0, true));
  POK(rill_block_add_var(s, 0, "lr", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, &one, 1, 0, true));
  rill_op_builder *b = prog_op_begin("uniform_random", "", "Out=emb");
  POK(rill_op_builder_attr_longs(b, "shape", ed, 2));
  POK(rill_op_builder_attr_int(b, "seed", 5));
  prog_op_end(b, s);
  b = prog_op_begin("fill_constant", "", "Out=lr");
  POK(rill_op_builder_attr_longs(b, "shape", &one, 1));
  POK(rill_op_builder_attr_float(b, "value", 0.5f));
  prog_op_end(b, s);
  rill_transpiled *t = xpile(m, s, 2, 0, true);
  const rill_program *ts = rill_transpiled_trainer_startup(t);
  cr_assert_not_null(ts);
  cr_assert_eq(ts->blocks[0].nops, 2);
  const rill_op_desc *fi = op_at(ts, 0, 0);
  cr_assert_str_eq(fi->type, "fake_init");
  expect_args(fi, "Out", false, "emb");
  const rill_attr *sh = rill_op_attr(fi, "shape");
  cr_assert(sh && sh->value.type == RILL_ATTR_LONGS && sh->value.n == 2 &&
            sh->value.list.longs[0] == 1000 && sh->value.list.longs[1] == 64);
  cr_assert_eq(attr_i(fi, "dtype"), RILL_DTYPE_FP32);
  cr_assert_str_eq(op_at(ts, 0, 1)->type, "fill_constant");
  cr_assert_str_eq(op_at(s, 0, 0)->type, "uniform_random", "the startup given is unchanged");

  rill_executor *ex = NULL;
  POK(rill_executor_create(NULL, &ex));
  rill_scope *sc = NULL;
  POK(rill_scope_create(NULL, &sc));
  POK(rill_executor_run(ex, ts, sc, NULL, NULL, 0, NULL, 0, NULL));
  rill_tensor *tt = NULL;
  rill_status *st = rill_scope_get_tensor(sc, "emb", &tt);
  cr_assert_not_null(st, "the trainer's scope holds no storage for the table");
  cr_assert_eq(rill_status_code(st), RILL_NOT_FOUND);
  rill_status_destroy(st);
  rill_tensor *lr = get(sc, "lr");
  cr_assert_eq(*(const float *)rill_tensor_data(lr), 0.5f);
  rill_tensor_destroy(lr);
  rill_scope_destroy(sc);

  /* The pservers draw the whole table as the local startup does and keep their rows. */
  rill_scope *local = NULL;
  POK(rill_scope_create(NULL, &local));
  POK(rill_executor_run(ex, s, local, NULL, NULL, 0, NULL, 0, NULL));
  rill_tensor *whole = get(local, "emb");
  const rill_program *ps;
  POK(rill_transpiled_pserver_startup(t, EP1, &ps));
  POK(rill_scope_create(NULL, &sc));
  POK(rill_executor_run(ex, ps, sc, NULL, NULL, 0, NULL, 0, NULL));
  rill_tensor *blk = get(sc, "emb.block1");
  cr_assert_eq(rill_tensor_dims(blk)[0], 500);
  cr_assert_eq(memcmp(rill_tensor_data(blk), (const float *)rill_tensor_data(whole) + 500 * 64,
                      500 * 64 * sizeof(float)),
               0);
  rill_tensor_destroy(blk);
  rill_tensor_destroy(whole);
  rill_scope_destroy(sc);
  rill_scope_destroy(local);
  rill_executor_destroy(ex);
  rill_transpiled_destroy(t);

  /* Without a distributed table the startup program needs no change. */
  rill_program_destroy(m);
  rill_program_destroy(s);
  mlp(OPT_SGD, &m, &s);
  t = xpile(m, s, 2, 0, true);
  cr_assert_null(rill_transpiled_trainer_startup(t));
  rill_transpiled_destroy(t);
  rill_program_destroy(m);
  rill_program_destroy(s);
}
