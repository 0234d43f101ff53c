/* The tensor ops' compile-time inference agrees with what real Paddle programs declare:
 * every shared program and model validates once every op outside this area is renamed
 * to a stub (any slots, no inference), so only the ops of this area run their inference,
 * on real VarDescs (reshape2 with 0/-1, slice with decrease_axis, concat, transpose2,
 * lookup_table_v2, ...), and other areas' inference cannot fail this test. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>

#include "tensor_test.h"

#define MAX_STUBS 256
#define MAX_SLOTS 32

typedef struct stub {
  char *type;
  rill_slot_schema in[MAX_SLOTS], out[MAX_SLOTS];
  size_t nin, nout;
  rill_op_schema schema;
} stub;

static stub stubs[MAX_STUBS];
static size_t nstubs;

static rill_status *stub_kernel(rill_kernel_ctx *ctx) {
  (void)ctx;
  return NULL;
}

static void add_slot(rill_slot_schema *s, size_t *n, const char *name) {
  for (size_t i = 0; i < *n; i++)
    if (strcmp(s[i].name, name) == 0) return;
  cr_assert(*n < MAX_SLOTS);
  s[(*n)++] = (rill_slot_schema){strdup(name), RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE, "stub"};
}

static const char *const mine[] = {
    "reshape2", "transpose2", "flatten2", "flatten_contiguous_range", "squeeze2", "unsqueeze2",
    "concat", "split", "slice", "cast", "assign", "shape", "uniform_random", "gaussian_random",
    "lookup_table", "lookup_table_v2", "top_k", "accuracy", "arg_max"};

static bool is_mine(const char *type) {
  for (size_t k = 0; k < sizeof mine / sizeof mine[0]; k++)
    if (strcmp(type, mine[k]) == 0) return true;
  return false;
}

/* Renames every op outside this area to "stub:<type>" and collects the stubs' slots. */
static void collect(rill_program *p) {
  for (size_t b = 0; b < p->nblocks; b++)
    for (size_t i = 0; i < p->blocks[b].nops; i++) {
      rill_op_desc *op = &p->blocks[b].ops[i];
      if (is_mine(op->type)) continue;
      char renamed[256];
      snprintf(renamed, sizeof renamed, "stub:%s", op->type);
      rill_free(op->type);
      op->type = rill_strdup(renamed);
      cr_assert_not_null(op->type);
      stub *s = NULL;
      for (size_t k = 0; k < nstubs && !s; k++)
        if (strcmp(stubs[k].type, op->type) == 0) s = &stubs[k];
      if (!s) {
        cr_assert(nstubs < MAX_STUBS);
        s = &stubs[nstubs++];
        s->type = strdup(op->type);
      }
      for (size_t k = 0; k < op->ninputs; k++) add_slot(s->in, &s->nin, op->inputs[k].param);
      for (size_t k = 0; k < op->noutputs; k++) add_slot(s->out, &s->nout, op->outputs[k].param);
    }
}

static size_t count_mine(const rill_program *p) {
  size_t n = 0;
  for (size_t b = 0; b < p->nblocks; b++)
    for (size_t i = 0; i < p->blocks[b].nops; i++) n += is_mine(p->blocks[b].ops[i].type);
  return n;
}

Test(tensor_ops_programs, inference_agrees_with_real_programs) {
  cr_assert_null(rill_registry_init());
  char paths[64][1024];
  size_t npaths = 0;
  const char *models[] = {"abalone_bn_mlp/__model__", "fit_a_line_raftliu/__model__",
                          "luotao1_example_mlp_2018/__model__", "mnist_conv_bn_etienne/__model__",
                          "mnist_mlp_handwriting/__model__", "paddlejs_gesture_rec/__model__",
                          "paddlelite_simple_model/model.pdmodel", "pureboys_word2vec/__model__"};
  for (size_t i = 0; i < sizeof models / sizeof models[0]; i++)
    snprintf(paths[npaths++], sizeof paths[0], "%s/models/%s", RILL_SHARED_DIR, models[i]);
  DIR *d = opendir(RILL_SHARED_DIR "/programs");
  cr_assert_not_null(d);
  struct dirent *e;
  while ((e = readdir(d)) && npaths < 64)
    if (e->d_name[0] != '.')
      snprintf(paths[npaths++], sizeof paths[0], "%s/programs/%s", RILL_SHARED_DIR, e->d_name);
  closedir(d);

  rill_program *progs[64];
  for (size_t i = 0; i < npaths; i++) {
    OK(rill_program_load(paths[i], &progs[i]));
    collect(progs[i]);
  }
  for (size_t k = 0; k < nstubs; k++) {
    stub *s = &stubs[k];
    s->schema = (rill_op_schema){.type = s->type, .doc = "stub", .inputs = s->in, .ninputs = s->nin,
                                 .outputs = s->out, .noutputs = s->nout, .kernel_dtype_slot = -1,
                                 .dtype_attr = -1};
    OK(rill_registry_add_op(&s->schema));
    rill_kernel_def kd = {s->type, RILL_DEVICE_CPU, RILL_KERNEL_ANY_DTYPE, stub_kernel, NULL};
    OK(rill_registry_add_kernel(&kd));
  }
  size_t covered = 0;
  for (size_t i = 0; i < npaths; i++) {
    rill_status *st = rill_program_validate(progs[i]);
    cr_expect_null(st, "%s: %s", paths[i], rill_status_message(st));
    rill_status_destroy(st);
    covered += count_mine(progs[i]);
    rill_program_destroy(progs[i]);
  }
  cr_log_info("%zu ops of this area checked against real VarDescs", covered);
  cr_assert_geq(covered, 50);
}
