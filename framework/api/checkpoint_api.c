/* The public checkpoint API (include/rill.h, "checkpoints"): the manager, directory
 * listings, an executor's checkpoint statistics, flush and generator state. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "framework/exec/ckpt_async.h"
#include "framework/exec/executor.h"
#include "framework/io/checkpoint.h"
#include "framework/io/cluster_ckpt.h"
#include "rill.h"

struct rill_checkpoint_manager {
  char *dir;
  rill_checkpoint_options options;
};

struct rill_checkpoint_list {
  rill_ckpt_listing l;
};

rill_checkpoint_options rill_checkpoint_default_options(void) {
  rill_checkpoint_options o = RILL_CHECKPOINT_OPTIONS_INIT;
  return o;
}

/* Before any other member is read: a struct of an unknown size may be shorter. */
static rill_status *check_size(const rill_checkpoint_options *o) {
  return rill_check_struct_size("checkpoint: rill_checkpoint_options", o->struct_size,
                                sizeof(rill_checkpoint_options), sizeof(rill_checkpoint_options));
}

static rill_status *check_options(const rill_checkpoint_options *o) {
  if (o->every_n_steps < 0)
    return rill_error(RILL_INVALID_ARGUMENT, "checkpoint: every_n_steps must be >= 0, not %" PRId64,
                      o->every_n_steps);
  if (!(o->every_n_seconds >= 0) || o->every_n_seconds > 3.4e38)
    return rill_error(RILL_INVALID_ARGUMENT, "checkpoint: every_n_seconds must be >= 0, not %g",
                      o->every_n_seconds);
  if (o->max_to_keep < 0)
    return rill_error(RILL_INVALID_ARGUMENT, "checkpoint: max_to_keep must be >= 0, not %d",
                      (int)o->max_to_keep);
  return NULL;
}

rill_status *rill_checkpoint_manager_create(const char *dir, const rill_checkpoint_options *options,
                                            rill_checkpoint_manager **out) {
  if (!dir || !*dir || !out)
    return rill_error(RILL_INVALID_ARGUMENT, "rill_checkpoint_manager_create: empty directory or NULL out");
  if (options) RILL_TRY(check_size(options));
  rill_checkpoint_options o = options ? *options : rill_checkpoint_default_options();
  RILL_TRY(check_options(&o));
  rill_checkpoint_manager *m = rill_calloc(1, sizeof *m);
  if (!m || !(m->dir = rill_strdup(dir))) {
    rill_free(m);
    return rill_oom();
  }
  m->options = o;
  *out = m;
  return NULL;
}

void rill_checkpoint_manager_destroy(rill_checkpoint_manager *m) {
  if (!m) return;
  rill_free(m->dir);
  rill_free(m);
}

const char *rill_checkpoint_manager_dir(const rill_checkpoint_manager *m) { return m ? m->dir : NULL; }

rill_status *rill_checkpoint_manager_configure(rill_checkpoint_manager *m,
                                               const rill_checkpoint_options *options) {
  if (!m || !options) return rill_error(RILL_INVALID_ARGUMENT, "rill_checkpoint_manager_configure: NULL argument");
  RILL_TRY(check_size(options));
  RILL_TRY(check_options(options));
  m->options = *options;
  return NULL;
}

static bool saved_kind(const rill_var_desc *v) {
  return v->persistable && v->type == RILL_VAR_LOD_TENSOR && v->has_tensor;
}

static rill_status *add_op(rill_op_builder *b, rill_program *p) {
  rill_status *st = rill_op_builder_append(b, p, 0);
  rill_op_builder_destroy(b);
  return st;
}

rill_status *rill_checkpoint_manager_append_op(rill_checkpoint_manager *m, rill_program *program,
                                               rill_program *startup, const char *step_var,
                                               const char *const *vars, size_t nvars) {
  if (!m || !program || !step_var || !*step_var || (nvars && !vars))
    return rill_error(RILL_INVALID_ARGUMENT, "rill_checkpoint_manager_append_op: NULL argument");
  if (!program->nblocks) return rill_error(RILL_INVALID_ARGUMENT, "checkpoint: the program has no block");
  /* Everything that can fail before the program changes. */
  const char **names = NULL;
  size_t n = nvars;
  rill_status *st = NULL;
  size_t main_ops = program->blocks[0].nops;
  size_t startup_ops = startup && startup->nblocks ? startup->blocks[0].nops : 0;
  if (!nvars) {
    const rill_block_desc *b = &program->blocks[0];
    names = rill_calloc(b->nvars ? b->nvars : 1, sizeof *names);
    if (!names) return rill_oom();
    for (size_t i = 0; i < b->nvars; i++)
      if (saved_kind(&b->vars[i]) && strcmp(b->vars[i].name, step_var) != 0) names[n++] = b->vars[i].name;
    vars = names;
  }
  for (size_t i = 0; i < n; i++) {
    const rill_var_desc *v = vars[i] ? rill_block_find_var(program, 0, vars[i]) : NULL;
    if (!v || v->type != RILL_VAR_LOD_TENSOR) {
      st = rill_error(RILL_INVALID_ARGUMENT,
                      "checkpoint: variable '%s' is not a dense tensor declared in block 0",
                      vars[i] ? vars[i] : "(null)");
      goto done;
    }
  }
  const rill_var_desc *sv = rill_block_find_var(program, 0, step_var);
  if (sv && (!sv->has_tensor || (sv->dtype != RILL_DTYPE_INT64 && sv->dtype != RILL_DTYPE_INT32))) {
    st = rill_error(RILL_INVALID_ARGUMENT, "checkpoint: step counter '%s' must be an int64 tensor",
                    step_var);
    goto done;
  }
  int64_t one = 1;
  if (!sv) {
    st = rill_block_add_var(program, 0, step_var, RILL_VAR_LOD_TENSOR, RILL_DTYPE_INT64, &one, 1, 0, true);
    if (!st) st = rill_var_set_flags(program, 0, step_var, true, false, true);
    if (st) goto done;
  }
  if (startup) {
    if (!rill_block_find_var(startup, 0, step_var) &&
        (st = rill_block_add_var(startup, 0, step_var, RILL_VAR_LOD_TENSOR, RILL_DTYPE_INT64, &one, 1, 0, true)))
      goto done;
    rill_op_builder *b;
    if ((st = rill_op_builder_create("fill_constant", &b))) goto done;
    st = rill_op_builder_output(b, "Out", &step_var, 1);
    if (!st) st = rill_op_builder_attr_longs(b, "shape", &one, 1);
    if (!st) st = rill_op_builder_attr_float(b, "value", 0.0f);
    if (!st) st = rill_op_builder_attr_int(b, "dtype", (int32_t)RILL_DTYPE_INT64);
    if (st) {
      rill_op_builder_destroy(b);
      goto done;
    }
    if ((st = add_op(b, startup))) goto done;
  }
  rill_op_builder *inc;
  if ((st = rill_op_builder_create("increment", &inc))) goto done;
  st = rill_op_builder_input(inc, "X", &step_var, 1);
  if (!st) st = rill_op_builder_output(inc, "Out", &step_var, 1);
  if (st) {
    rill_op_builder_destroy(inc);
    goto done;
  }
  if ((st = add_op(inc, program))) goto done;
  rill_op_builder *ck;
  if ((st = rill_op_builder_create("checkpoint", &ck))) goto done;
  st = rill_op_builder_input(ck, "X", vars, n);
  if (!st) st = rill_op_builder_input(ck, "Step", &step_var, 1);
  if (!st) st = rill_op_builder_attr_string(ck, "directory", m->dir);
  if (!st) st = rill_op_builder_attr_long(ck, "every_n_steps", m->options.every_n_steps);
  if (!st) st = rill_op_builder_attr_float(ck, "every_n_seconds", (float)m->options.every_n_seconds);
  if (!st) st = rill_op_builder_attr_int(ck, "max_to_keep", m->options.max_to_keep);
  if (!st) st = rill_op_builder_attr_bool(ck, "skip_when_busy", m->options.skip_when_busy);
  if (st) {
    rill_op_builder_destroy(ck);
    goto done;
  }
  st = add_op(ck, program);
done:
  if (st && program->nblocks) /* take back the ops appended before the failure */
    while (program->blocks[0].nops > main_ops)
      rill_status_destroy(rill_block_remove_op(program, 0, program->blocks[0].nops - 1));
  if (st && startup && startup->nblocks)
    while (startup->blocks[0].nops > startup_ops)
      rill_status_destroy(rill_block_remove_op(startup, 0, startup->blocks[0].nops - 1));
  rill_free(names);
  return st;
}

rill_status *rill_checkpoint_manager_latest(const rill_checkpoint_manager *m, int64_t *step) {
  if (!m || !step) return rill_error(RILL_INVALID_ARGUMENT, "rill_checkpoint_manager_latest: NULL argument");
  rill_ckpt_snapshot s;
  rill_ckpt_snapshot_init(&s);
  RILL_TRY(rill_ckpt_load_latest(m->dir, &s, NULL));
  *step = s.step;
  rill_ckpt_snapshot_clear(&s);
  return NULL;
}

static char *format_report(const rill_ckpt_listing *skipped) {
  if (!skipped->n) return NULL;
  size_t len = 1;
  for (size_t i = 0; i < skipped->n; i++)
    len += strlen(skipped->items[i].path) + strlen(rill_status_message(skipped->items[i].problem)) + 48;
  char *r = rill_malloc(len);
  if (!r) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < skipped->n; i++)
    k += (size_t)snprintf(r + k, len - k, "skipped damaged checkpoint '%s': %s\n",
                          skipped->items[i].path, rill_status_message(skipped->items[i].problem));
  return r;
}

/* A trainer program's checkpoint op that writes cluster snapshot parts, or NULL. */
static const rill_op_desc *cluster_checkpoint_op(const rill_program *program) {
  if (!program || !program->nblocks) return NULL;
  const rill_block_desc *b = &program->blocks[0];
  for (size_t j = 0; j < b->nops; j++) {
    if (strcmp(b->ops[j].type, "checkpoint") != 0) continue;
    const rill_attr *a = rill_op_attr(&b->ops[j], "cluster_endpoints");
    if (a && a->value.type == RILL_ATTR_STRINGS && a->value.n) return &b->ops[j];
  }
  return NULL;
}

static int32_t int_attr(const rill_op_desc *op, const char *name, int32_t dflt) {
  const rill_attr *a = rill_op_attr(op, name);
  return a && a->value.type == RILL_ATTR_INT ? a->value.v.i : dflt;
}

static char *format_cluster_report(const rill_cluster_listing *skipped) {
  if (!skipped->n) return NULL;
  size_t len = 1;
  for (size_t i = 0; i < skipped->n; i++)
    len += strlen(rill_status_message(skipped->items[i].problem)) + 64;
  char *r = rill_malloc(len);
  if (!r) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < skipped->n; i++)
    k += (size_t)snprintf(r + k, len - k, "skipped cluster snapshot %" PRId64 ": %s\n",
                          skipped->items[i].step, rill_status_message(skipped->items[i].problem));
  return r;
}

/* A trainer resumes from the newest complete cluster snapshot: its own part (step
 * counter, generator, trainer-local variables); the parameters come from the pservers,
 * which resume from the same snapshot. */
static rill_status *load_cluster(rill_checkpoint_manager *m, const rill_op_desc *op,
                                 rill_scope *scope, rill_executor *executor, int64_t *step,
                                 char **report) {
  const rill_attr *eps = rill_op_attr(op, "cluster_endpoints");
  const rill_attr *dir = rill_op_attr(op, "directory");
  rill_cluster_shape shape = {(int32_t)eps->value.n, int_attr(op, "cluster_trainers", 1)};
  int32_t rank = int_attr(op, "cluster_trainer_id", 0);
  rill_ckpt_snapshot s;
  rill_ckpt_snapshot_init(&s);
  rill_cluster_listing skipped = {0};
  int64_t k = -1;
  rill_status *st =
      rill_cluster_recover(m->dir, &shape, RILL_CLUSTER_TRAINER, rank, &k, &s, &skipped);
  char *rep = skipped.n ? format_cluster_report(&skipped) : NULL;
  if (!st && skipped.n && !rep) st = rill_oom();
  if (!st && k < 0)
    st = rill_error(RILL_NOT_FOUND, "no complete cluster snapshot in '%s'%s%.*s", m->dir,
                    rep ? ":\n" : "", rep ? (int)strlen(rep) - 1 : 0, rep ? rep : "");
  if (!st) st = rill_ckpt_install(&s, scope);
  if (!st && executor && executor->device.bg && dir && dir->value.type == RILL_ATTR_STRING)
    st = rill_ckpt_cluster_resumed(executor->device.bg, dir->value.v.s, k);
  if (!st) {
    if (executor && s.has_rng) memcpy(executor->device.rng.s, s.rng, sizeof s.rng);
    if (step) *step = k;
    if (report) *report = rep;
    else rill_free(rep);
    rep = NULL;
  }
  rill_free(rep);
  rill_cluster_listing_clear(&skipped);
  rill_ckpt_snapshot_clear(&s);
  return st;
}

rill_status *rill_checkpoint_manager_load(rill_checkpoint_manager *m, const rill_program *program,
                                          rill_scope *scope, rill_executor *executor, int64_t *step,
                                          char **report) {
  if (!m || !scope) return rill_error(RILL_INVALID_ARGUMENT, "rill_checkpoint_manager_load: NULL argument");
  if (report) *report = NULL;
  const rill_op_desc *cop = cluster_checkpoint_op(program);
  if (cop) return load_cluster(m, cop, scope, executor, step, report);
  rill_ckpt_snapshot s;
  rill_ckpt_snapshot_init(&s);
  rill_ckpt_listing skipped = {0};
  rill_status *st = rill_ckpt_load_latest(m->dir, &s, &skipped);
  if (!st && program && s.program_hash) {
    uint64_t h = 0;
    bool same = !(st = rill_ckpt_program_hash(program, &h)) && h == s.program_hash;
    if (!st && !same) {
      /* Checkpoints written before the hash left out the policy attributes hashed the
       * whole program: the same program, policy included, still loads them. */
      uint8_t *bytes;
      size_t n;
      if (!(st = rill_program_encode(program, &bytes, &n))) {
        same = rill_ckpt_hash_bytes(bytes, n) == s.program_hash;
        rill_free(bytes);
      }
    }
    if (!st && !same)
      st = rill_error(RILL_FAILED_PRECONDITION,
                      "checkpoint %" PRId64 " in '%s' was written by another program (hash %016" PRIx64
                      ", this program %016" PRIx64 "; the checkpoint op's directory, schedule "
                      "and retention do not count)",
                      s.step, m->dir, s.program_hash, h);
  }
  char *rep = NULL;
  if (!st && report && skipped.n && !(rep = format_report(&skipped))) st = rill_oom();
  if (!st) st = rill_ckpt_install(&s, scope);
  if (!st) {
    if (executor && s.has_rng) memcpy(executor->device.rng.s, s.rng, sizeof s.rng);
    if (step) *step = s.step;
    if (report) *report = rep;
    rep = NULL;
  } else if (skipped.n && rill_status_code(st) == RILL_NOT_FOUND) {
    char *r = format_report(&skipped);
    if (r) st = rill_status_wrap(st, "%.*s", (int)strlen(r) - 1, r);
    rill_free(r);
  }
  rill_free(rep);
  rill_ckpt_listing_clear(&skipped);
  rill_ckpt_snapshot_clear(&s);
  return st;
}

rill_status *rill_checkpoint_list_dir(const char *dir, rill_checkpoint_list **out) {
  if (!dir || !out) return rill_error(RILL_INVALID_ARGUMENT, "rill_checkpoint_list_dir: NULL argument");
  rill_checkpoint_list *l = rill_calloc(1, sizeof *l);
  if (!l) return rill_oom();
  rill_status *st = rill_ckpt_list(dir, &l->l);
  if (st) {
    rill_free(l);
    return st;
  }
  *out = l;
  return NULL;
}

size_t rill_checkpoint_list_count(const rill_checkpoint_list *list) { return list ? list->l.n : 0; }
size_t rill_checkpoint_list_retired(const rill_checkpoint_list *list) {
  return list ? list->l.vanished : 0;
}

rill_status *rill_checkpoint_list_get(const rill_checkpoint_list *list, size_t i,
                                      rill_checkpoint_info *out) {
  if (!list || !out) return rill_error(RILL_INVALID_ARGUMENT, "rill_checkpoint_list_get: NULL argument");
  if (i >= list->l.n)
    return rill_error(RILL_OUT_OF_RANGE, "checkpoint list: index %zu of %zu", i, list->l.n);
  const rill_ckpt_entry *e = &list->l.items[i];
  out->step = e->step;
  out->time_unix_ns = e->time_ns;
  out->bytes = e->bytes;
  out->num_vars = e->nvars;
  out->verified = e->problem == NULL;
  out->path = e->path;
  out->problem = e->problem ? rill_status_message(e->problem) : NULL;
  return NULL;
}

void rill_checkpoint_list_destroy(rill_checkpoint_list *list) {
  if (!list) return;
  rill_ckpt_listing_clear(&list->l);
  rill_free(list);
}

rill_status *rill_executor_checkpoint_stats(rill_executor *executor, const char *dir,
                                            rill_checkpoint_stats *out) {
  if (!executor || !dir || !out)
    return rill_error(RILL_INVALID_ARGUMENT, "rill_executor_checkpoint_stats: NULL argument");
  return rill_ckpt_async_stats(executor->device.bg, dir, out);
}

rill_status *rill_executor_flush(rill_executor *executor) {
  if (!executor) return rill_error(RILL_INVALID_ARGUMENT, "executor is NULL");
  return rill_ckpt_async_flush(executor->device.bg);
}

void rill_executor_get_rng_state(const rill_executor *executor, uint64_t state[4]) {
  if (executor && state) memcpy(state, executor->device.rng.s, 4 * sizeof *state);
}

rill_status *rill_executor_set_rng_state(rill_executor *executor, const uint64_t state[4]) {
  if (!executor || !state) return rill_error(RILL_INVALID_ARGUMENT, "rill_executor_set_rng_state: NULL argument");
  if (!(state[0] | state[1] | state[2] | state[3]))
    return rill_error(RILL_INVALID_ARGUMENT, "generator state must not be all zero (xoshiro256** would stay at zero)");
  memcpy(executor->device.rng.s, state, 4 * sizeof *state);
  return NULL;
}

/* ---- cluster snapshot listings ---- */

struct rill_cluster_list {
  rill_cluster_listing l;
};

bool rill_cluster_dir_is_cluster(const char *dir) { return dir && rill_cluster_dir_is_cluster_impl(dir); }

rill_status *rill_cluster_list_dir(const char *dir, rill_cluster_list **out) {
  if (!dir || !out) return rill_error(RILL_INVALID_ARGUMENT, "rill_cluster_list_dir: NULL argument");
  rill_cluster_list *l = rill_calloc(1, sizeof *l);
  if (!l) return rill_oom();
  rill_status *st = rill_cluster_scan(dir, &l->l);
  if (st) {
    rill_free(l);
    return st;
  }
  *out = l;
  return NULL;
}

size_t rill_cluster_list_count(const rill_cluster_list *list) { return list ? list->l.n : 0; }

rill_status *rill_cluster_list_get(const rill_cluster_list *list, size_t i,
                                   rill_cluster_snapshot_info *out) {
  if (!list || !out || i >= list->l.n)
    return rill_error(RILL_OUT_OF_RANGE, "rill_cluster_list_get: index %zu of %zu", i,
                      list ? list->l.n : 0);
  const rill_cluster_entry *e = &list->l.items[i];
  out->step = e->step;
  out->time_unix_ns = e->time_ns;
  out->bytes = e->bytes;
  out->has_manifest = e->has_manifest;
  out->complete = e->complete;
  out->problem = e->problem ? rill_status_message(e->problem) : NULL;
  out->num_parts = e->nparts;
  out->pservers = list->l.shape.pservers;
  out->trainers = list->l.shape.trainers;
  return NULL;
}

rill_status *rill_cluster_list_part(const rill_cluster_list *list, size_t i, size_t j,
                                    rill_cluster_part_info *out) {
  if (!list || !out || i >= list->l.n || j >= list->l.items[i].nparts)
    return rill_error(RILL_OUT_OF_RANGE, "rill_cluster_list_part: no part %zu of snapshot %zu", j, i);
  const rill_cluster_part_state *p = &list->l.items[i].parts[j];
  out->name = p->name;
  out->present = p->present;
  out->problem = p->problem ? rill_status_message(p->problem) : NULL;
  return NULL;
}

void rill_cluster_list_destroy(rill_cluster_list *list) {
  if (!list) return;
  rill_cluster_listing_clear(&list->l);
  rill_free(list);
}
