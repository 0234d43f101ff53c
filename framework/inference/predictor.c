/* The predictor: a loaded model, optimized once for inference (framework/transform's
 * inference passes), run many times through one executor's cached plan. Clones share
 * the loaded model (program and weights) read-only; each owns an executor, its plan and
 * temporaries, and a child scope holding private copies of the persistable variables
 * some op writes (batch_norm's MeanOut, say), so no two threads write one variable. The
 * others are constant: their buffers are marked immutable (freeze_weights), and kernels
 * keep what they derive from them (packed GEMM panels) with the buffers. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "framework/exec/executor.h"
#include "framework/inference/predictor.h"
#include "framework/io/file.h"
#include "framework/registry/registry.h"
#include "framework/transform/infer_passes.h"
#include "rill.h"

struct rill_predictor_config {
  char *model_path;
  char *params_file;
  int32_t threads;
  int32_t opt_level;
  bool has_passes;
  uint32_t passes;
  bool memory_optim;
  rill_schedule schedule;
  rill_place place;
  char *file_ops_dir; /* resolved; NULL: ops that touch files are refused */
  bool mutable_weights; /* weights not marked immutable (tests: the unpacked products) */
};

typedef struct io_info {
  const char *name; /* owned by the model */
  rill_dtype dtype;
  int64_t dims[RILL_MAX_DIMS];
  size_t ndim;
} io_info;

/* What every clone shares. */
typedef struct shared_model {
  atomic_int refs;
  rill_model *model;     /* weights (folded) in its scope */
  rill_program *program; /* the optimized program */
  char *path;
  io_info *inputs, *outputs;
  size_t ninputs, noutputs;
  char **written; /* persistable variables some op writes */
  size_t nwritten;
  size_t param_bytes;
  rill_pass_stats stats;
  int32_t threads;
  bool memory_optim;
  rill_schedule schedule;
  rill_place place;
} shared_model;

struct rill_predictor {
  shared_model *m;
  rill_executor *exe;
  rill_plan *plan;   /* prepared once; the executor runs nothing else, so it stays cached */
  rill_scope *scope; /* child of the model's scope */
  const char **in_names, **out_names;
  rill_tensor **ordered; /* inputs in col order, scratch for one run */
  /* Set for the length of a run (compare-exchange on entry, released on every way
   * out): the scratch above, the executor and the scope serve one run at a time. */
  atomic_bool busy;
};

/* ---------------------------------------------------------------- config ------ */

rill_status *rill_predictor_config_create(const char *model_path, rill_predictor_config **out) {
  if (!model_path || !out)
    return rill_error(RILL_INVALID_ARGUMENT, "rill_predictor_config_create: NULL argument");
  rill_predictor_config *c = rill_calloc(1, sizeof *c);
  if (!c || !(c->model_path = rill_strdup(model_path))) {
    rill_free(c);
    return rill_oom();
  }
  c->opt_level = 2;
  c->memory_optim = true;
  *out = c;
  return NULL;
}

void rill_predictor_config_destroy(rill_predictor_config *config) {
  if (!config) return;
  rill_free(config->model_path);
  rill_free(config->params_file);
  rill_free(config->file_ops_dir);
  rill_free(config);
}

rill_status *rill_predictor_config_allow_file_ops(rill_predictor_config *config, const char *dir) {
  if (!config) return rill_error(RILL_INVALID_ARGUMENT, "predictor config is NULL");
  char *resolved = NULL;
  if (dir) {
    RILL_TRY(rill_status_wrap(rill_path_resolve(dir, &resolved),
                              "predictor config: directory for file ops"));
    if (!rill_path_is_dir(resolved)) {
      rill_free(resolved);
      return rill_error(RILL_NOT_FOUND,
                        "predictor config: '%s', the directory for file ops, is not a directory",
                        dir);
    }
  }
  rill_free(config->file_ops_dir);
  config->file_ops_dir = resolved;
  return NULL;
}

rill_status *rill_predictor_config_set_params_file(rill_predictor_config *config,
                                                   const char *params_file) {
  if (!config) return rill_error(RILL_INVALID_ARGUMENT, "predictor config is NULL");
  char *copy = NULL;
  if (params_file && !(copy = rill_strdup(params_file))) return rill_oom();
  rill_free(config->params_file);
  config->params_file = copy;
  return NULL;
}

rill_status *rill_predictor_config_set_threads(rill_predictor_config *config, int32_t n) {
  if (!config) return rill_error(RILL_INVALID_ARGUMENT, "predictor config is NULL");
  if (n < 0 || n > 1024)
    return rill_error(RILL_INVALID_ARGUMENT, "predictor config: threads must be 0..1024, not %d",
                      (int)n);
  config->threads = n;
  return NULL;
}

rill_status *rill_predictor_config_set_opt_level(rill_predictor_config *config, int32_t level) {
  if (!config) return rill_error(RILL_INVALID_ARGUMENT, "predictor config is NULL");
  if (level < 0 || level > 2)
    return rill_error(RILL_INVALID_ARGUMENT,
                      "predictor config: optimization level must be 0, 1 or 2, not %d", (int)level);
  config->opt_level = level;
  config->has_passes = false;
  return NULL;
}

rill_status *rill_predictor_config_set_passes(rill_predictor_config *config, uint32_t passes) {
  if (!config) return rill_error(RILL_INVALID_ARGUMENT, "predictor config is NULL");
  const uint32_t known = (uint32_t)RILL_PASS_ALL | (uint32_t)RILL_PASS_INT8;
  if (passes & ~known)
    return rill_error(RILL_INVALID_ARGUMENT, "predictor config: unknown pass bits 0x%x",
                      (unsigned)(passes & ~known));
  config->passes = passes;
  config->has_passes = true;
  return NULL;
}

rill_status *rill_predictor_config_set_memory_optim(rill_predictor_config *config, bool enabled) {
  if (!config) return rill_error(RILL_INVALID_ARGUMENT, "predictor config is NULL");
  config->memory_optim = enabled;
  return NULL;
}

rill_status *rill_predictor_config_set_place(rill_predictor_config *config, rill_place place) {
  if (!config) return rill_error(RILL_INVALID_ARGUMENT, "predictor config is NULL");
  RILL_TRY(rill_status_wrap(rill_place_check(place), "predictor config"));
  config->place = place;
  return NULL;
}

rill_status *rill_predictor_config_set_schedule(rill_predictor_config *config,
                                                rill_schedule schedule) {
  if (!config) return rill_error(RILL_INVALID_ARGUMENT, "predictor config is NULL");
  if (schedule != RILL_SCHEDULE_AUTO && schedule != RILL_SCHEDULE_SEQUENTIAL &&
      schedule != RILL_SCHEDULE_PARALLEL)
    return rill_error(RILL_INVALID_ARGUMENT, "predictor config: unknown schedule %d", (int)schedule);
  config->schedule = schedule;
  return NULL;
}

rill_status *rill_predictor_config_set_constant_weights(rill_predictor_config *config, bool constant) {
  if (!config) return rill_error(RILL_INVALID_ARGUMENT, "predictor config is NULL");
  config->mutable_weights = !constant;
  return NULL;
}

static uint32_t config_passes(const rill_predictor_config *c) {
  if (c->has_passes) return c->passes;
  switch (c->opt_level) {
    case 0: return 0;
    case 1: return RILL_PASS_DROPOUT | RILL_PASS_FOLD_BN;
    default: return RILL_PASS_ALL;
  }
}

/* ---------------------------------------------------------------- shared ------ */

static void shared_release(shared_model *m) {
  if (!m || atomic_fetch_sub_explicit(&m->refs, 1, memory_order_acq_rel) != 1) return;
  rill_program_destroy(m->program);
  rill_model_destroy(m->model);
  for (size_t i = 0; i < m->nwritten; i++) rill_free(m->written[i]);
  rill_free(m->written);
  rill_free(m->inputs);
  rill_free(m->outputs);
  rill_free(m->path);
  rill_free(m);
}

static rill_status *fill_info(shared_model *m, bool input, size_t i) {
  io_info *info = input ? &m->inputs[i] : &m->outputs[i];
  info->name = input ? rill_model_input_name(m->model, i) : rill_model_output_name(m->model, i);
  const rill_var_desc *d = rill_block_find_var(m->program, 0, info->name);
  if (!d || !d->has_tensor)
    return rill_error(RILL_INVALID_ARGUMENT, "model '%s': %s '%s' has no tensor description",
                      m->path, input ? "input" : "output", info->name);
  info->dtype = d->dtype;
  info->ndim = (size_t)d->dims.n;
  for (size_t k = 0; k < info->ndim; k++) info->dims[k] = d->dims.d[k];
  return NULL;
}

typedef struct bytes_ctx {
  size_t total;
} bytes_ctx;

static void add_bytes(const char *name, rill_variable *v, void *ctx) {
  (void)name;
  if (v->kind == RILL_VARKIND_TENSOR) ((bytes_ctx *)ctx)->total += rill_tensor_nbytes(&v->u.tensor);
}

/* Persistable dense variables of block 0 that some op (not a feed or fetch op) writes. */
static rill_status *find_written(shared_model *m) {
  const rill_block_desc *b = &m->program->blocks[0];
  for (size_t i = 0; i < b->nops; i++) {
    const rill_op_desc *op = &b->ops[i];
    const rill_op_schema *s = rill_schema_find(op->type);
    if (s && (s->flags & (RILL_OP_FEED | RILL_OP_FETCH))) continue;
    for (size_t k = 0; k < op->noutputs; k++)
      for (size_t j = 0; j < op->outputs[k].nargs; j++) {
        const char *name = op->outputs[k].args[j];
        const rill_var_desc *d = rill_block_find_var(m->program, 0, name);
        if (!d || !d->persistable || d->type != RILL_VAR_LOD_TENSOR) continue;
        bool seen = false;
        for (size_t w = 0; w < m->nwritten && !seen; w++) seen = strcmp(m->written[w], name) == 0;
        if (seen) continue;
        size_t cap = m->nwritten;
        void *items = m->written;
        if (!rill_grow(&items, &cap, m->nwritten + 1, sizeof *m->written)) return rill_oom();
        m->written = items;
        if (!(m->written[m->nwritten] = rill_strdup(name))) return rill_oom();
        m->nwritten++;
      }
  }
  return NULL;
}

/* Whether some op of any block writes `name`: a sub-block (a loop's body) may write a
 * variable of block 0. */
static bool written_anywhere(const rill_program *p, const char *name) {
  for (size_t b = 0; b < p->nblocks; b++)
    for (size_t i = 0; i < p->blocks[b].nops; i++) {
      const rill_op_desc *op = &p->blocks[b].ops[i];
      for (size_t k = 0; k < op->noutputs; k++)
        for (size_t j = 0; j < op->outputs[k].nargs; j++)
          if (strcmp(op->outputs[k].args[j], name) == 0) return true;
    }
  return false;
}

static void freeze_var(const char *name, rill_variable *v, void *arg) {
  const rill_program *program = arg;
  if (v->kind != RILL_VARKIND_TENSOR || !v->u.tensor.buf) return;
  const rill_var_desc *d = rill_block_find_var(program, 0, name);
  if (!d || !d->persistable || written_anywhere(program, name)) return;
  rill_buffer_set_immutable(v->u.tensor.buf);
}

/* Marks the buffers of the persistable variables that no op of the optimized program
 * writes immutable, before any run or clone: kernels may then keep data derived from
 * them (fc's weight packed for the GEMM, rill_sgemm_weight), and every path that would
 * write one copies it first (rill_buffer_pinned). */
static void freeze_weights(shared_model *m) {
  rill_scope_each(rill_model_scope(m->model), freeze_var, m->program);
}

/* Ops whose schema says they read or write files: refused unless the config allows
 * them, and then only on paths (the attributes flagged as file paths) that resolve inside
 * the allowed directory. Every block is checked: a sub-block's ops run too. */
static rill_status *check_file_ops(const rill_predictor_config *c, const rill_program *p) {
  for (size_t b = 0; b < p->nblocks; b++)
    for (size_t i = 0; i < p->blocks[b].nops; i++) {
      const rill_op_desc *op = &p->blocks[b].ops[i];
      const rill_op_schema *s = rill_schema_find(op->type);
      if (!s || !(s->flags & (RILL_OP_READS_FILES | RILL_OP_WRITES_FILES))) continue;
      const char *verb = s->flags & RILL_OP_WRITES_FILES ? "writes" : "reads";
      for (size_t k = 0; k < s->nattrs; k++) {
        const rill_attr_schema *as = &s->attrs[k];
        if (!(as->flags & RILL_ATTR_FILE_PATH)) continue;
        const rill_attr *a = rill_op_attr(op, as->name);
        const char *path = a && a->value.type == RILL_ATTR_STRING ? a->value.v.s : as->def.v.s;
        if (!path) path = "";
        if (!c->file_ops_dir)
          return rill_error(RILL_FAILED_PRECONDITION,
                            "block %zu, op #%zu '%s' %s files (%s '%s'): the predictor runs no op "
                            "that touches files unless allowed to inside a directory "
                            "(rill_predictor_config_allow_file_ops, rill run --allow-file-ops DIR)",
                            b, i, op->type, verb, as->name, path);
        char *resolved = NULL;
        rill_status *st = rill_path_resolve(path, &resolved);
        bool inside = !st && rill_path_under(c->file_ops_dir, resolved);
        rill_free(resolved);
        if (st && rill_status_code(st) == RILL_OUT_OF_MEMORY) return st;
        if (!inside) {
          rill_status *err = rill_error(
              RILL_FAILED_PRECONDITION,
              "block %zu, op #%zu '%s' %s files at %s '%s', outside the directory allowed for file "
              "ops ('%s')%s%s",
              b, i, op->type, verb, as->name, path, c->file_ops_dir, st ? ": " : "",
              st ? rill_status_message(st) : "");
          rill_status_destroy(st);
          return err;
        }
      }
    }
  return NULL;
}

static rill_status *shared_load(const rill_predictor_config *c, shared_model *m) {
  RILL_TRY(rill_registry_init());
  if (!(m->path = rill_strdup(c->model_path))) return rill_oom();
  RILL_TRY(rill_model_load(c->model_path, c->params_file, &m->model));
  RILL_TRY(rill_status_wrap(rill_program_validate(rill_model_program(m->model)), "model '%s'",
                            m->path));
  RILL_TRY(rill_status_wrap(check_file_ops(c, rill_model_program(m->model)), "model '%s'", m->path));
  RILL_TRY(rill_program_clone(rill_model_program(m->model), &m->program));
  RILL_TRY(rill_status_wrap(
      rill_infer_passes(m->program, rill_model_scope(m->model), config_passes(c), &m->stats),
      "model '%s': optimizing", m->path));
  m->ninputs = rill_model_num_inputs(m->model);
  m->noutputs = rill_model_num_outputs(m->model);
  m->inputs = rill_calloc(m->ninputs + 1, sizeof *m->inputs);
  m->outputs = rill_calloc(m->noutputs + 1, sizeof *m->outputs);
  if (!m->inputs || !m->outputs) return rill_oom();
  for (size_t i = 0; i < m->ninputs; i++) RILL_TRY(fill_info(m, true, i));
  for (size_t i = 0; i < m->noutputs; i++) RILL_TRY(fill_info(m, false, i));
  RILL_TRY(find_written(m));
  if (!c->mutable_weights) freeze_weights(m);
  bytes_ctx bc = {0};
  rill_scope_each(rill_model_scope(m->model), add_bytes, &bc);
  m->param_bytes = bc.total;
  m->threads = c->threads;
  m->memory_optim = c->memory_optim;
  m->schedule = c->schedule;
  m->place = c->place;
  return NULL;
}

/* ------------------------------------------------------------- predictor ------ */

void rill_predictor_destroy(rill_predictor *p) {
  if (!p) return;
  rill_executor_destroy(p->exe);
  rill_scope_destroy(p->scope);
  rill_free(p->in_names);
  rill_free(p->out_names);
  rill_free(p->ordered);
  shared_release(p->m);
  rill_free(p);
}

/* A predictor over `m` (whose reference it takes over): executor, scope, prepared plan. */
static rill_status *predictor_open(shared_model *m, rill_predictor **out) {
  rill_predictor *p = rill_calloc(1, sizeof *p);
  if (!p) {
    shared_release(m);
    return rill_oom();
  }
  p->m = m;
  atomic_init(&p->busy, false);
  rill_status *st = NULL;
  p->in_names = rill_calloc(m->ninputs + 1, sizeof *p->in_names);
  p->out_names = rill_calloc(m->noutputs + 1, sizeof *p->out_names);
  p->ordered = rill_calloc(m->ninputs + 1, sizeof *p->ordered);
  if (!p->in_names || !p->out_names || !p->ordered) st = rill_oom();
  for (size_t i = 0; !st && i < m->ninputs; i++) p->in_names[i] = m->inputs[i].name;
  for (size_t i = 0; !st && i < m->noutputs; i++) p->out_names[i] = m->outputs[i].name;
  rill_executor_options opts = RILL_EXECUTOR_OPTIONS_INIT;
  opts.num_threads = m->threads;
  opts.place = m->place;
  if (!st) st = rill_exec_create(&opts, &p->exe);
  if (!st) {
    p->exe->memory_plan = m->memory_optim;
    p->exe->schedule = m->schedule;
  }
  if (!st) st = rill_scope_create(rill_model_scope(m->model), &p->scope);
  for (size_t w = 0; !st && w < m->nwritten; w++) {
    rill_variable *src = rill_scope_find(rill_model_scope(m->model), m->written[w]), *dst = NULL;
    if (!src || src->kind != RILL_VARKIND_TENSOR) continue;
    st = rill_scope_var(p->scope, m->written[w], &dst);
    rill_tensor *t = st ? NULL : rill_variable_tensor(dst);
    if (!st && t) st = rill_tensor_copy(t, &src->u.tensor);
  }
  if (!st)
    st = rill_exec_prepare(p->exe, m->program, p->in_names, m->ninputs, p->out_names, m->noutputs,
                           &p->plan);
  if (st) {
    st = rill_status_wrap(st, "model '%s'", m->path); /* before m may be freed */
    rill_predictor_destroy(p);
    return st;
  }
  *out = p;
  return NULL;
}

rill_status *rill_predictor_create(const rill_predictor_config *config, rill_predictor **out) {
  if (!config || !out) return rill_error(RILL_INVALID_ARGUMENT, "rill_predictor_create: NULL argument");
  shared_model *m = rill_calloc(1, sizeof *m);
  if (!m) return rill_oom();
  atomic_init(&m->refs, 1);
  rill_status *st = shared_load(config, m);
  if (st) {
    shared_release(m);
    return st;
  }
  return predictor_open(m, out);
}

rill_status *rill_predictor_clone(const rill_predictor *predictor, rill_predictor **out) {
  if (!predictor || !out) return rill_error(RILL_INVALID_ARGUMENT, "rill_predictor_clone: NULL argument");
  atomic_fetch_add_explicit(&predictor->m->refs, 1, memory_order_relaxed);
  return predictor_open(predictor->m, out);
}

size_t rill_predictor_num_inputs(const rill_predictor *p) { return p ? p->m->ninputs : 0; }
size_t rill_predictor_num_outputs(const rill_predictor *p) { return p ? p->m->noutputs : 0; }
const char *rill_predictor_input_name(const rill_predictor *p, size_t i) {
  return p && i < p->m->ninputs ? p->m->inputs[i].name : NULL;
}
const char *rill_predictor_output_name(const rill_predictor *p, size_t i) {
  return p && i < p->m->noutputs ? p->m->outputs[i].name : NULL;
}

static rill_status *info(const rill_predictor *p, bool input, size_t i, rill_dtype *dtype,
                         const int64_t **dims, size_t *ndim) {
  if (!p) return rill_error(RILL_INVALID_ARGUMENT, "predictor is NULL");
  size_t n = input ? p->m->ninputs : p->m->noutputs;
  if (i >= n)
    return rill_error(RILL_OUT_OF_RANGE, "model '%s' has %zu %s, no %s %zu", p->m->path, n,
                      input ? "inputs" : "outputs", input ? "input" : "output", i);
  const io_info *x = input ? &p->m->inputs[i] : &p->m->outputs[i];
  if (dtype) *dtype = x->dtype;
  if (dims) *dims = x->dims;
  if (ndim) *ndim = x->ndim;
  return NULL;
}

rill_status *rill_predictor_input_info(const rill_predictor *p, size_t i, rill_dtype *dtype,
                                       const int64_t **dims, size_t *ndim) {
  return info(p, true, i, dtype, dims, ndim);
}
rill_status *rill_predictor_output_info(const rill_predictor *p, size_t i, rill_dtype *dtype,
                                        const int64_t **dims, size_t *ndim) {
  return info(p, false, i, dtype, dims, ndim);
}

/* "img, label" for error messages (truncated). */
static void list_inputs(const shared_model *m, char *buf, size_t size) {
  size_t at = 0;
  buf[0] = 0;
  for (size_t i = 0; i < m->ninputs && at + 1 < size; i++) {
    int n = snprintf(buf + at, size - at, "%s%s", i ? ", " : "", m->inputs[i].name);
    if (n < 0) break;
    at += (size_t)n;
  }
}

static rill_status *predictor_run(rill_predictor *p, const char *const *input_names,
                                  rill_tensor *const *inputs, size_t ninputs,
                                  rill_tensor **outputs) {
  shared_model *m = p->m;
  if ((ninputs && (!input_names || !inputs)) || (m->noutputs && !outputs))
    return rill_error(RILL_INVALID_ARGUMENT, "rill_predictor_run: model '%s': NULL names, inputs "
                      "or outputs", m->path);
  char list[512];
  for (size_t i = 0; i < m->ninputs; i++) p->ordered[i] = NULL;
  for (size_t i = 0; i < ninputs; i++) {
    const char *name = input_names[i];
    size_t k = 0;
    while (name && k < m->ninputs && strcmp(m->inputs[k].name, name) != 0) k++;
    if (!name || k == m->ninputs) {
      list_inputs(m, list, sizeof list);
      return rill_error(RILL_INVALID_ARGUMENT, "model '%s': '%s' is not an input of the model "
                        "(its inputs: %s)", m->path, name ? name : "(null)", list);
    }
    if (p->ordered[k])
      return rill_error(RILL_INVALID_ARGUMENT, "model '%s': input '%s' is given twice", m->path, name);
    if (!inputs[i])
      return rill_error(RILL_INVALID_ARGUMENT, "model '%s': input '%s' is NULL", m->path, name);
    p->ordered[k] = inputs[i];
  }
  for (size_t k = 0; k < m->ninputs; k++)
    if (!p->ordered[k])
      return rill_error(RILL_INVALID_ARGUMENT, "model '%s': input '%s' is missing", m->path,
                        m->inputs[k].name);
  rill_status *st = rill_exec_run_prepared(p->exe, m->program, p->plan, p->scope, p->ordered, outputs);
  for (size_t k = 0; k < m->ninputs; k++) p->ordered[k] = NULL;
  return st ? rill_status_wrap(st, "model '%s'", m->path) : NULL;
}

rill_status *rill_predictor_run(rill_predictor *p, const char *const *input_names,
                                rill_tensor *const *inputs, size_t ninputs, rill_tensor **outputs) {
  if (!p) return rill_error(RILL_INVALID_ARGUMENT, "rill_predictor_run: predictor is NULL");
  bool idle = false;
  if (!atomic_compare_exchange_strong_explicit(&p->busy, &idle, true, memory_order_acquire,
                                               memory_order_relaxed))
    return rill_error(RILL_FAILED_PRECONDITION,
                      "rill_predictor_run: model '%s': predictor is in use by another thread; "
                      "use rill_predictor_clone to give each thread its own predictor",
                      p->m->path);
  rill_status *st = predictor_run(p, input_names, inputs, ninputs, outputs);
  atomic_store_explicit(&p->busy, false, memory_order_release);
  return st;
}

size_t rill_predictor_memory_bytes(const rill_predictor *p) {
  return p ? rill_executor_temporary_bytes(p->exe) : 0;
}
size_t rill_predictor_param_bytes(const rill_predictor *p) { return p ? p->m->param_bytes : 0; }
const rill_program *rill_predictor_program(const rill_predictor *p) { return p ? p->m->program : NULL; }

const rill_pass_stats *rill_predictor_pass_stats(const rill_predictor *p) {
  return p ? &p->m->stats : NULL;
}

const struct rill_plan *rill_predictor_plan(const rill_predictor *p) { return p ? p->plan : NULL; }
const rill_executor *rill_predictor_executor(const rill_predictor *p) { return p ? p->exe : NULL; }
