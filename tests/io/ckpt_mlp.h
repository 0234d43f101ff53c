/* A small MLP trained through the C API with a checkpoint op, shared by the checkpoint
 * tests, the crash driver (tests/io/driver_ckpt_train.c) and bench/bench_checkpoint.c
 * (header-only, no test framework).
 *
 *   x [B, IN] -> fc IN->H, relu -> dropout 0.1 (the executor's generator) -> fc H->H,
 *   relu -> fc H->4 -> softmax_with_cross_entropy(label) -> mean = loss
 *
 * Parameters are initialised by a startup program (seeded uniform_random), optimized
 * by sgd or adam (train_util.h). Step s's batch is a pure function of s, so a run
 * resumed at step s sees what an uninterrupted one sees. The step counter is
 * `step_counter` (int64 [1]), incremented by the program; the checkpoint op (when a
 * directory is given) saves every persistable variable and the counter. */
#ifndef RILL_TESTS_IO_CKPT_MLP_H
#define RILL_TESTS_IO_CKPT_MLP_H

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rill.h"
#include "tests/train/train_util.h"

#define CKPT_MLP_CLASSES 4
#define CKPT_MLP_STEP_VAR "step_counter"

typedef struct ckpt_mlp {
  rill_program *main, *startup;
  rill_executor *exe;
  rill_scope *scope;
  int64_t batch, in, hidden;
  float *x;
  int64_t *label;
} ckpt_mlp;

static inline rill_status *cm_var(rill_program *p, const char *name, rill_dtype dt, size_t nd,
                                  const int64_t *d, bool stop) {
  RILL_TRY(rill_block_add_var(p, 0, name, RILL_VAR_LOD_TENSOR, dt, d, nd, 0, false));
  return stop ? rill_var_set_flags(p, 0, name, false, false, true) : NULL;
}

static inline rill_status *cm_op(rill_program *p, const char *type, const char *s1, const char *a1,
                                 const char *s2, const char *a2, const char *os, const char *oa,
                                 const char *os2, const char *oa2, const char *attr, int axis) {
  rill_op_builder *b = NULL;
  RILL_TRY(rill_op_builder_create(type, &b));
  rill_status *st = rill_op_builder_input(b, s1, &a1, 1);
  if (!st && s2) st = rill_op_builder_input(b, s2, &a2, 1);
  if (!st) st = rill_op_builder_output(b, os, &oa, 1);
  if (!st && os2) st = rill_op_builder_output(b, os2, &oa2, 1);
  if (!st && attr && strcmp(attr, "axis") == 0) st = rill_op_builder_attr_int(b, "axis", axis);
  if (!st && attr && strcmp(attr, "dropout") == 0) {
    st = rill_op_builder_attr_float(b, "dropout_prob", 0.1f);
    if (!st) st = rill_op_builder_attr_string(b, "dropout_implementation", "upscale_in_train");
  }
  if (!st) st = rill_op_builder_append(b, p, 0);
  rill_op_builder_destroy(b);
  return st;
}

static inline rill_status *cm_fc(ckpt_mlp *m, const char *name, const char *in, int64_t k,
                                 int64_t n, bool relu, const char *out, int seed) {
  char w[64], b[64], z[64], zb[64];
  snprintf(w, sizeof w, "%s.w_0", name);
  snprintf(b, sizeof b, "%s.b_0", name);
  snprintf(z, sizeof z, "%s.tmp_0", name);
  snprintf(zb, sizeof zb, "%s.tmp_1", name);
  int64_t wd[2] = {k, n}, bd[1] = {n}, zd[2] = {m->batch, n};
  RILL_TRY(tu_param(m->main, m->startup, w, RILL_DTYPE_FP32, wd, 2, sqrtf(6.0f / (float)(k + n)), seed));
  RILL_TRY(tu_param(m->main, m->startup, b, RILL_DTYPE_FP32, bd, 1, 0, 0));
  RILL_TRY(cm_var(m->main, z, RILL_DTYPE_FP32, 2, zd, false));
  RILL_TRY(cm_var(m->main, relu ? zb : out, RILL_DTYPE_FP32, 2, zd, false));
  if (relu) RILL_TRY(cm_var(m->main, out, RILL_DTYPE_FP32, 2, zd, false));
  RILL_TRY(cm_op(m->main, "mul", "X", in, "Y", w, "Out", z, NULL, NULL, NULL, 0));
  RILL_TRY(cm_op(m->main, "elementwise_add", "X", z, "Y", b, "Out", relu ? zb : out, NULL, NULL, "axis", 1));
  if (relu) RILL_TRY(cm_op(m->main, "relu", "X", zb, NULL, NULL, "Out", out, NULL, NULL, NULL, 0));
  return NULL;
}

/* Builds programs, executor and scope, and runs the startup program. dir == NULL: no
 * checkpoint op (the step counter is still incremented). */
static inline rill_status *ckpt_mlp_create(ckpt_mlp *m, int64_t batch, int64_t in, int64_t hidden,
                                           tu_opt opt, const char *dir,
                                           const rill_checkpoint_options *options,
                                           rill_schedule schedule) {
  memset(m, 0, sizeof *m);
  m->batch = batch;
  m->in = in;
  m->hidden = hidden;
  RILL_TRY(rill_program_create(&m->main));
  RILL_TRY(rill_program_create(&m->startup));
  int64_t xd[2] = {batch, in}, yd[2] = {batch, 1}, hd[2] = {batch, hidden};
  int64_t ld[1] = {1}, cd[2] = {batch, CKPT_MLP_CLASSES};
  RILL_TRY(cm_var(m->main, "x", RILL_DTYPE_FP32, 2, xd, true));
  RILL_TRY(cm_var(m->main, "label", RILL_DTYPE_INT64, 2, yd, true));
  RILL_TRY(cm_fc(m, "fc_0", "x", in, hidden, true, "h1", 11));
  RILL_TRY(cm_var(m->main, "h1d", RILL_DTYPE_FP32, 2, hd, false));
  RILL_TRY(cm_var(m->main, "h1mask", RILL_DTYPE_UINT8, 2, hd, true));
  RILL_TRY(cm_op(m->main, "dropout", "X", "h1", NULL, NULL, "Out", "h1d", "Mask", "h1mask", "dropout", 0));
  RILL_TRY(cm_fc(m, "fc_1", "h1d", hidden, hidden, true, "h2", 12));
  RILL_TRY(cm_fc(m, "fc_2", "h2", hidden, CKPT_MLP_CLASSES, false, "logits", 13));
  yd[1] = 1;
  RILL_TRY(cm_var(m->main, "softmax", RILL_DTYPE_FP32, 2, cd, false));
  RILL_TRY(cm_var(m->main, "ce", RILL_DTYPE_FP32, 2, yd, false));
  RILL_TRY(cm_var(m->main, "loss", RILL_DTYPE_FP32, 1, ld, false));
  RILL_TRY(cm_op(m->main, "softmax_with_cross_entropy", "Logits", "logits", "Label", "label", "Softmax",
                 "softmax", "Loss", "ce", NULL, 0));
  RILL_TRY(cm_op(m->main, "mean", "X", "ce", NULL, NULL, "Out", "loss", NULL, NULL, NULL, 0));
  rill_param_grads *pg = NULL;
  RILL_TRY(rill_program_append_backward(m->main, "loss", NULL, 0, &pg));
  rill_status *st = tu_append_optimizer(m->main, m->startup, pg, opt, opt == TU_ADAM ? 0.01f : 0.05f);
  rill_param_grads_destroy(pg);
  RILL_TRY(st);
  rill_checkpoint_manager *mgr = NULL;
  RILL_TRY(rill_checkpoint_manager_create(dir ? dir : "unused", options, &mgr));
  if (dir) {
    st = rill_checkpoint_manager_append_op(mgr, m->main, m->startup, CKPT_MLP_STEP_VAR, NULL, 0);
  } else {
    /* the same counter, without a checkpoint op */
    int64_t one = 1;
    st = rill_block_add_var(m->main, 0, CKPT_MLP_STEP_VAR, RILL_VAR_LOD_TENSOR, RILL_DTYPE_INT64, &one,
                            1, 0, true);
    if (!st) st = rill_block_add_var(m->startup, 0, CKPT_MLP_STEP_VAR, RILL_VAR_LOD_TENSOR,
                                     RILL_DTYPE_INT64, &one, 1, 0, true);
    if (!st) st = tu_fill_op(m->startup, CKPT_MLP_STEP_VAR, RILL_DTYPE_INT64, &one, 1, 0);
    if (!st) st = cm_op(m->main, "increment", "X", CKPT_MLP_STEP_VAR, NULL, NULL, "Out",
                        CKPT_MLP_STEP_VAR, NULL, NULL, NULL, 0);
  }
  rill_checkpoint_manager_destroy(mgr);
  RILL_TRY(st);
  RILL_TRY(rill_program_validate(m->main));
  rill_executor_options eo = RILL_EXECUTOR_OPTIONS_INIT;
  eo.num_threads = 1;
  RILL_TRY(rill_executor_create(&eo, &m->exe));
  RILL_TRY(rill_executor_set_schedule(m->exe, schedule));
  RILL_TRY(rill_scope_create(NULL, &m->scope));
  RILL_TRY(rill_executor_run(m->exe, m->startup, m->scope, NULL, NULL, 0, NULL, 0, NULL));
  m->x = calloc((size_t)(batch * in), sizeof *m->x);
  m->label = calloc((size_t)batch, sizeof *m->label);
  if (!m->x || !m->label) return rill_error(RILL_OUT_OF_MEMORY, "ckpt_mlp: batch buffers");
  return NULL;
}

static inline uint64_t cm_mix(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Runs training step `step` (1-based) on its batch; *loss receives the loss. */
static inline rill_status *ckpt_mlp_step(ckpt_mlp *m, int64_t step, float *loss) {
  uint64_t s = (uint64_t)step * 7919u;
  for (int64_t r = 0; r < m->batch; r++) {
    float acc = 0;
    for (int64_t c = 0; c < m->in; c++) {
      float v = (float)((double)(cm_mix(&s) >> 11) * 0x1p-53 * 2.0 - 1.0);
      m->x[r * m->in + c] = v;
      acc += v * (float)((c % 5) - 2);
    }
    m->label[r] = acc > 1.0f ? 3 : acc > 0.0f ? 2 : acc > -1.0f ? 1 : 0;
  }
  int64_t xd[2] = {m->batch, m->in}, yd[2] = {m->batch, 1};
  rill_tensor *feeds[2] = {NULL, NULL}, *out = NULL;
  rill_status *st = rill_tensor_create_from_data(RILL_DTYPE_FP32, xd, 2, m->x,
                                                 (size_t)(m->batch * m->in) * sizeof(float), NULL, NULL,
                                                 &feeds[0]);
  if (!st)
    st = rill_tensor_create_from_data(RILL_DTYPE_INT64, yd, 2, m->label, (size_t)m->batch * 8, NULL,
                                      NULL, &feeds[1]);
  const char *fn[2] = {"x", "label"}, *fetch = "loss";
  if (!st) st = rill_executor_run(m->exe, m->main, m->scope, fn, feeds, 2, &fetch, 1, &out);
  if (!st) *loss = *(const float *)rill_tensor_data(out);
  rill_tensor_destroy(out);
  rill_tensor_destroy(feeds[0]);
  rill_tensor_destroy(feeds[1]);
  return st;
}

/* The value of the step counter in the scope. */
static inline int64_t ckpt_mlp_counter(ckpt_mlp *m) {
  rill_tensor *t = NULL;
  int64_t v = -1;
  if (!rill_scope_get_tensor(m->scope, CKPT_MLP_STEP_VAR, &t)) v = *(const int64_t *)rill_tensor_data(t);
  rill_tensor_destroy(t);
  return v;
}

static inline void ckpt_mlp_destroy(ckpt_mlp *m) {
  rill_executor_destroy(m->exe);
  rill_scope_destroy(m->scope);
  rill_program_destroy(m->main);
  rill_program_destroy(m->startup);
  free(m->x);
  free(m->label);
  memset(m, 0, sizeof *m);
}

#endif
