/* Loading a saved model: a ProgramDesc plus its persistable parameters (FORMATS.md
 * section 3), from a 1.x directory (__model__ + one file per variable or a combined
 * file) or a 2.x PREFIX.pdmodel + PREFIX.pdiparams. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "framework/data/scope.h"
#include "framework/io/file.h"
#include "framework/io/stream.h"
#include "framework/io/vars.h"
#include "framework/program/program.h"
#include "framework/registry/registry.h"

/* Largest program or combined parameter file read into memory. */
#define MODEL_FILE_MAX ((size_t)1 << 40)

struct rill_model {
  rill_program *program;
  rill_scope *scope;
  char **inputs, **outputs;
  size_t ninputs, noutputs;
};

static void free_names(char **names, size_t n) {
  for (size_t i = 0; names && i < n; i++) rill_free(names[i]);
  rill_free(names);
}

void rill_model_destroy(rill_model *model) {
  if (!model) return;
  rill_scope_destroy(model->scope);
  rill_program_destroy(model->program);
  free_names(model->inputs, model->ninputs);
  free_names(model->outputs, model->noutputs);
  rill_free(model);
}

const rill_program *rill_model_program(const rill_model *model) {
  return model ? model->program : NULL;
}
rill_scope *rill_model_scope(rill_model *model) { return model ? model->scope : NULL; }
size_t rill_model_num_inputs(const rill_model *model) { return model ? model->ninputs : 0; }
size_t rill_model_num_outputs(const rill_model *model) { return model ? model->noutputs : 0; }
const char *rill_model_input_name(const rill_model *model, size_t i) {
  return model && i < model->ninputs ? model->inputs[i] : NULL;
}
const char *rill_model_output_name(const rill_model *model, size_t i) {
  return model && i < model->noutputs ? model->outputs[i] : NULL;
}

/* ---- where things are ---- */

typedef struct model_paths {
  char *program;  /* the ProgramDesc file */
  char *dir;      /* where per-variable files live */
  char *combined; /* the combined parameter file, when known */
  bool v2;        /* PREFIX.pdmodel layout */
} model_paths;

static void paths_clear(model_paths *mp) {
  rill_free(mp->program);
  rill_free(mp->dir);
  rill_free(mp->combined);
  memset(mp, 0, sizeof *mp);
}

static char *concat(const char *a, const char *b) {
  size_t na = strlen(a), nb = strlen(b);
  char *s = rill_malloc(na + nb + 1);
  if (!s) return NULL;
  memcpy(s, a, na);
  memcpy(s + na, b, nb + 1);
  return s;
}

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* mp->program = PREFIX.pdmodel path, fills the rest of a 2.x layout. */
static rill_status *set_v2(model_paths *mp, const char *pdmodel) {
  mp->v2 = true;
  mp->program = rill_strdup(pdmodel);
  mp->dir = rill_path_dirname(pdmodel);
  char *prefix = rill_strndup(pdmodel, strlen(pdmodel) - strlen(".pdmodel"));
  mp->combined = prefix ? concat(prefix, ".pdiparams") : NULL;
  rill_free(prefix);
  return mp->program && mp->dir && mp->combined ? NULL : rill_oom();
}

/* The single *.pdmodel file in `dir`. */
static rill_status *find_pdmodel(const char *dir, char **out) {
  DIR *d = opendir(dir);
  if (!d) return rill_error(RILL_IO, "cannot list directory '%s'", dir);
  char *found = NULL;
  int n = 0;
  rill_status *st = NULL;
  struct dirent *e;
  while ((e = readdir(d)) && !st) {
    if (!ends_with(e->d_name, ".pdmodel")) continue;
    char *p = NULL;
    st = rill_path_join_var(dir, e->d_name, &p);
    if (st) break;
    if (!rill_path_is_file(p)) {
      rill_free(p);
      continue;
    }
    n++;
    if (!found)
      found = p;
    else
      rill_free(p);
  }
  closedir(d);
  if (!st && n == 0)
    st = rill_error(RILL_NOT_FOUND, "no __model__ and no *.pdmodel file in directory '%s'", dir);
  if (!st && n > 1)
    st = rill_error(RILL_INVALID_ARGUMENT,
                    "directory '%s' holds %d *.pdmodel files: name the one to load", dir, n);
  if (st) {
    rill_free(found);
    return st;
  }
  *out = found;
  return NULL;
}

static rill_status *resolve_paths(const char *path, model_paths *mp) {
  if (rill_path_is_dir(path)) {
    char *m = concat(path, ends_with(path, "/") ? "__model__" : "/__model__");
    if (!m) return rill_oom();
    if (rill_path_is_file(m)) {
      mp->program = m;
      mp->dir = rill_strdup(path);
      return mp->dir ? NULL : rill_oom();
    }
    rill_free(m);
    char *pd = NULL;
    RILL_TRY(find_pdmodel(path, &pd));
    rill_status *st = set_v2(mp, pd);
    rill_free(pd);
    return st;
  }
  if (!rill_path_is_file(path)) {
    /* Paddle 2.x APIs name a model by its prefix: PREFIX.pdmodel + PREFIX.pdiparams. */
    char *pd = concat(path, ".pdmodel");
    if (!pd) return rill_oom();
    rill_status *st = rill_path_is_file(pd)
                          ? set_v2(mp, pd)
                          : rill_error(RILL_NOT_FOUND, "no such model file or directory '%s'", path);
    rill_free(pd);
    return st;
  }
  if (ends_with(path, ".pdmodel")) return set_v2(mp, path);
  mp->program = rill_strdup(path);
  mp->dir = rill_path_dirname(path);
  return mp->program && mp->dir ? NULL : rill_oom();
}

/* ---- parameters ---- */

/* The variables a save wrote: persistable ones of block 0 but feed/fetch plumbing and
 * those no tensor stream can hold (RAW, READER). */
static bool is_saved_var(const rill_var_desc *v) {
  if (!v->persistable) return false;
  switch (v->type) {
    case RILL_VAR_FEED_MINIBATCH:
    case RILL_VAR_FETCH_LIST:
    case RILL_VAR_RAW:
    case RILL_VAR_READER: return false;
    default: return true;
  }
}

static int cmp_var_name(const void *a, const void *b) {
  const rill_var_desc *const *x = a, *const *y = b;
  return strcmp((*x)->name, (*y)->name);
}

/* Block 0's saved variables sorted by name (byte order: Paddle's save_combine order). */
static rill_status *saved_vars(const rill_program *p, const rill_var_desc ***out, size_t *n) {
  *out = NULL;
  *n = 0;
  if (p->nblocks == 0) return NULL;
  const rill_block_desc *b = &p->blocks[0];
  size_t count = 0;
  for (size_t i = 0; i < b->nvars; i++) count += is_saved_var(&b->vars[i]);
  if (!count) return NULL;
  const rill_var_desc **vars = rill_calloc(count, sizeof *vars);
  if (!vars) return rill_oom();
  size_t k = 0;
  for (size_t i = 0; i < b->nvars; i++)
    if (is_saved_var(&b->vars[i])) vars[k++] = &b->vars[i];
  qsort(vars, count, sizeof *vars, cmp_var_name);
  for (size_t i = 1; i < count; i++)
    if (strcmp(vars[i - 1]->name, vars[i]->name) == 0) {
      rill_status *st = rill_error(RILL_INVALID_ARGUMENT,
                                   "block 0 declares variable '%s' twice", vars[i]->name);
      rill_free(vars);
      return st;
    }
  *out = vars;
  *n = count;
  return NULL;
}

static void expect_of(const rill_var_desc *v, rill_tensor_expect *ex) {
  memset(ex, 0, sizeof *ex);
  if (!v->has_tensor) return;
  ex->check_dtype = true;
  ex->dtype = v->dtype;
  /* A selected-rows variable declares the full table; the stored value holds only
   * some rows of it. */
  if (v->type == RILL_VAR_LOD_TENSOR) {
    ex->check_dims = true;
    ex->dims = v->dims;
  }
}

static rill_status *check_loadable(const rill_var_desc *v) {
  if (v->type == RILL_VAR_LOD_TENSOR || v->type == RILL_VAR_SELECTED_ROWS) return NULL;
  return rill_error(RILL_UNIMPLEMENTED,
                    "persistable variable '%s' has type %d: only LoD tensors and selected rows "
                    "can be loaded from parameter files",
                    v->name, (int)v->type);
}

/* Reads variable `v` at the reader's position into the scope. */
rill_status *rill_io_read_var(rill_reader *r, const rill_var_desc *v, rill_scope *scope) {
  RILL_TRY(check_loadable(v));
  rill_tensor_expect ex;
  expect_of(v, &ex);
  rill_variable *var;
  RILL_TRY(rill_scope_var(scope, v->name, &var));
  if (v->type == RILL_VAR_SELECTED_ROWS) {
    rill_selected_rows *sr = rill_variable_selected_rows(var);
    if (!sr) return rill_error(RILL_INTERNAL, "variable '%s' already holds another kind", v->name);
    return rill_stream_read_selected_rows(r, v->name, &ex, sr);
  }
  rill_tensor *t = rill_variable_tensor(var);
  if (!t) return rill_error(RILL_INTERNAL, "variable '%s' already holds another kind", v->name);
  return rill_stream_read_lod_tensor(r, v->name, &ex, t);
}

static rill_status *load_separate(const char *dir, const rill_var_desc **vars, size_t n,
                                  rill_scope *scope) {
  for (size_t i = 0; i < n; i++) {
    char *path = NULL;
    RILL_TRY(rill_status_wrap(rill_path_join_var(dir, vars[i]->name, &path), "variable '%s'",
                              vars[i]->name));
    rill_reader r;
    rill_status *st =
        rill_status_wrap(rill_reader_open(&r, path), "variable '%s'", vars[i]->name);
    if (!st) {
      st = rill_io_read_var(&r, vars[i], scope);
      if (!st && rill_reader_left(&r))
        st = rill_error(RILL_CORRUPT, "%s: variable '%s': %zu unexpected bytes after the tensor",
                        path, vars[i]->name, rill_reader_left(&r));
      rill_reader_close(&r);
    }
    rill_free(path);
    if (st) return st;
  }
  return NULL;
}

static rill_status *load_combined(const char *path, const rill_var_desc **vars, size_t n,
                                  rill_scope *scope) {
  rill_reader r;
  RILL_TRY(rill_reader_open(&r, path));
  rill_status *st = NULL;
  for (size_t i = 0; i < n && !st; i++) {
    st = rill_io_read_var(&r, vars[i], scope);
    if (st && i > 0)
      st = rill_status_wrap(st, "combined file (variable %zu of %zu, after '%s')", i + 1, n,
                            vars[i - 1]->name);
  }
  if (!st && rill_reader_left(&r))
    st = rill_error(RILL_CORRUPT,
                    "%s: %zu bytes left after the last variable '%s': the file holds more than "
                    "the program's %zu persistable variables (is it this model's parameter file?)",
                    path, rill_reader_left(&r), n ? vars[n - 1]->name : "", n);
  rill_reader_close(&r);
  return st;
}

/* Picks per-variable files or a combined file and loads them. */
static rill_status *load_params(model_paths *mp, const char *params_file, const rill_program *p,
                                rill_scope *scope) {
  const rill_var_desc **vars;
  size_t n;
  RILL_TRY(saved_vars(p, &vars, &n));
  rill_status *st = NULL;
  if (n == 0) goto done;
  if (params_file) {
    rill_free(mp->combined);
    mp->combined = NULL;
    if (params_file[0] == '/') {
      mp->combined = rill_strdup(params_file);
    } else {
      char *in_dir = concat(mp->dir, "/");
      char *joined = in_dir ? concat(in_dir, params_file) : NULL;
      rill_free(in_dir);
      if (joined && !rill_path_exists(joined) && rill_path_exists(params_file)) {
        rill_free(joined);
        joined = rill_strdup(params_file);
      }
      mp->combined = joined;
    }
    if (!mp->combined) {
      st = rill_oom();
      goto done;
    }
  } else if (!mp->v2) {
    /* 1.x: one file per variable, unless some are missing and a combined file is there. */
    bool all = true;
    for (size_t i = 0; i < n && all; i++) {
      char *path = NULL;
      rill_status *js = rill_path_join_var(mp->dir, vars[i]->name, &path);
      if (js == rill_oom()) {
        st = js;
        goto done;
      }
      all = !js && rill_path_is_file(path);
      rill_status_destroy(js);
      rill_free(path);
    }
    if (!all) {
      static const char *const names[] = {"params", "__params__"};
      for (size_t k = 0; k < 2 && !mp->combined; k++) {
        char *path = NULL;
        if ((st = rill_path_join_var(mp->dir, names[k], &path))) goto done;
        if (rill_path_is_file(path))
          mp->combined = path;
        else
          rill_free(path);
      }
    }
  }
  if (mp->combined) {
    st = load_combined(mp->combined, vars, n, scope);
  } else {
    st = load_separate(mp->dir, vars, n, scope);
    if (rill_status_code(st) == RILL_NOT_FOUND)
      st = rill_status_wrap(st, "one file per variable expected (no combined 'params' or "
                                "'__params__' file)");
  }
done:
  rill_free(vars);
  return st;
}

/* ---- feed and fetch targets ---- */

typedef struct target {
  int64_t col;
  const char *name;
} target;

static int cmp_target(const void *a, const void *b) {
  const target *x = a, *y = b;
  return x->col < y->col ? -1 : x->col > y->col;
}

static rill_status *op_col(const rill_op_desc *op, const rill_op_schema *s, int64_t *col) {
  const rill_attr *a = rill_op_attr(op, "col");
  const rill_attr_value *v = a ? &a->value : NULL;
  if (!v) {
    int k = rill_schema_attr_index(s, "col");
    if (k < 0) return rill_error(RILL_INVALID_ARGUMENT, "op '%s' has no attribute 'col'", op->type);
    v = &s->attrs[k].def;
  }
  switch (v->type) {
    case RILL_ATTR_INT: *col = v->v.i; return NULL;
    case RILL_ATTR_LONG: *col = v->v.l; return NULL;
    default:
      return rill_error(RILL_INVALID_ARGUMENT, "op '%s': attribute 'col' has type %s, not an integer",
                        op->type, rill_attr_type_name(v->type));
  }
}

/* The variable an op moves: the first argument of its first output (feed) or input
 * (fetch) slot as the schema names it. */
static const char *op_target(const rill_op_desc *op, const rill_op_schema *s, bool feed) {
  if (feed ? !s->noutputs : !s->ninputs) return NULL;
  const rill_op_slot *slot =
      feed ? rill_op_output(op, s->outputs[0].name) : rill_op_input(op, s->inputs[0].name);
  return slot && slot->nargs ? slot->args[0] : NULL;
}

static rill_status *collect_targets(const rill_program *p, bool feed, char ***out, size_t *nout) {
  *out = NULL;
  *nout = 0;
  if (p->nblocks == 0) return NULL;
  const rill_block_desc *b = &p->blocks[0];
  unsigned flag = feed ? RILL_OP_FEED : RILL_OP_FETCH;
  const char *what = feed ? "feed" : "fetch";
  target *t = rill_calloc(b->nops ? b->nops : 1, sizeof *t);
  if (!t) return rill_oom();
  size_t n = 0;
  rill_status *st = NULL;
  for (size_t i = 0; i < b->nops && !st; i++) {
    const rill_op_desc *op = &b->ops[i];
    const rill_op_schema *s = rill_schema_find(op->type);
    if (!s || !(s->flags & flag)) continue;
    const char *name = op_target(op, s, feed);
    if (!name) {
      st = rill_error(RILL_INVALID_ARGUMENT, "%s op #%zu ('%s') names no variable", what, i,
                      op->type);
      break;
    }
    st = rill_status_wrap(op_col(op, s, &t[n].col), "%s op #%zu", what, i);
    t[n++].name = name;
  }
  if (!st) {
    qsort(t, n, sizeof *t, cmp_target);
    for (size_t i = 0; i < n && !st; i++)
      if (t[i].col != (int64_t)i)
        st = rill_error(RILL_INVALID_ARGUMENT,
                        "%s columns must be 0..%zu, each once: found col %lld for '%s'", what,
                        n ? n - 1 : 0, (long long)t[i].col, t[i].name);
  }
  char **names = NULL;
  if (!st && n) {
    names = rill_calloc(n, sizeof *names);
    if (!names) st = rill_oom();
    for (size_t i = 0; i < n && !st; i++)
      if (!(names[i] = rill_strdup(t[i].name))) st = rill_oom();
    if (st) free_names(names, n);
  }
  rill_free(t);
  if (st) return st;
  *out = names;
  *nout = n;
  return NULL;
}

/* ---- load ---- */

static rill_status *load(const char *path, const char *params_file, rill_model *m) {
  RILL_TRY(rill_registry_init());
  model_paths mp = {0};
  rill_status *st = resolve_paths(path, &mp);
  uint8_t *bytes = NULL;
  size_t size = 0;
  if (!st) st = rill_file_read_all(mp.program, MODEL_FILE_MAX, &bytes, &size);
  if (!st) st = rill_status_wrap(rill_program_decode(bytes, size, &m->program), "%s", mp.program);
  rill_free(bytes);
  if (!st) st = rill_scope_create(NULL, &m->scope);
  if (!st) st = load_params(&mp, params_file, m->program, m->scope);
  if (!st) st = collect_targets(m->program, true, &m->inputs, &m->ninputs);
  if (!st) st = collect_targets(m->program, false, &m->outputs, &m->noutputs);
  paths_clear(&mp);
  return st;
}

rill_status *rill_model_load(const char *path, const char *params_file, rill_model **out) {
  if (!path || !out) return rill_error(RILL_INVALID_ARGUMENT, "rill_model_load: NULL argument");
  rill_model *m = rill_calloc(1, sizeof *m);
  if (!m) return rill_oom();
  rill_status *st = load(path, params_file, m);
  if (st) {
    rill_model_destroy(m);
    return rill_status_wrap(st, "loading model '%s'", path);
  }
  *out = m;
  return NULL;
}
