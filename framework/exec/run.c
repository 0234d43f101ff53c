/* The run loop: bind the caller's variables and the feeds, check that required inputs
 * hold values, run the ops (in order, or through the scheduler on the dependency graph),
 * release temporaries after their last use, fetch the outputs, drop every reference to
 * caller memory. */
#include <stdio.h>
#include <string.h>

#include "framework/exec/background.h"
#include "framework/exec/plan.h"
#include "framework/exec/pool.h"
#include "framework/exec/profiler.h"

/* A feed's dtype must be the variable's; its shape must match the declared one (-1: any
 * extent) where the variable has need_check_feed, as Paddle's Executor checks. Other
 * feeds may take any shape: each op infers from the shapes it is given at run time, so
 * a network declared at one image size runs at another wherever its ops allow it (as
 * Paddle's inference runs it), and an op that cannot take it says so. */
static rill_status *check_fed(const plan_var *v, const rill_tensor *t) {
  if (!t->buf && rill_dims_known(&t->dims) && rill_dims_prod(&t->dims, 0, t->dims.n) != 0)
    return rill_error(RILL_INVALID_ARGUMENT, "feed '%s': the tensor has no data", v->name);
  if (!v->desc_tensor) return NULL;
  char want[RILL_DIMS_STR_MAX], got[RILL_DIMS_STR_MAX];
  if (t->dtype != v->dtype)
    return rill_error(RILL_INVALID_ARGUMENT, "feed '%s': dtype %s, but the variable is %s", v->name,
                      rill_dtype_name(t->dtype), rill_dtype_name(v->dtype));
  if (!v->need_check_feed) return NULL;
  bool ok = t->dims.n == v->dims.n;
  for (int32_t i = 0; ok && i < t->dims.n; i++) ok = v->dims.d[i] < 0 || v->dims.d[i] == t->dims.d[i];
  if (!ok)
    return rill_error(RILL_INVALID_ARGUMENT, "feed '%s': shape %s does not match the variable's %s",
                      v->name, rill_dims_str(&t->dims, got, sizeof got),
                      rill_dims_str(&v->dims, want, sizeof want));
  return NULL;
}

static rill_status *bind_caller_vars(rill_plan *p, rill_scope *scope) {
  bool changed = false;
  for (size_t i = 0; i < p->ncaller; i++) {
    plan_var *v = &p->vars[p->caller_vars[i]];
    rill_variable *var = rill_scope_find(scope, v->name);
    if (!var) {
      if (v->kind == VAR_PERSIST)
        RILL_TRY(rill_status_wrap(rill_scope_var(scope, v->name, &var), "persistable variable '%s'",
                                  v->name));
      else
        var = v->local;
    }
    if (var != v->var) {
      v->var = var;
      changed = true;
    }
  }
  if (!changed) return NULL;
  for (size_t k = 0; k < p->nin; k++) p->in_var[k] = p->vars[p->in_id[k]].var;
  for (size_t k = 0; k < p->nout; k++) p->out_var[k] = p->vars[p->out_id[k]].var;
  return NULL;
}

/* Declared tensor arrays start as empty arrays, as Paddle creates every declared
 * variable of its type before a block runs (array_length of a never-written array is 0,
 * write_to_array finds an array). */
static rill_status *start_arrays(rill_plan *p) {
  for (size_t i = 0; i < p->narrays; i++) {
    plan_var *v = &p->vars[p->arrays[i]];
    if (v->var && !rill_variable_array(v->var))
      return rill_error(RILL_INVALID_ARGUMENT,
                        "block %d: variable '%s' is declared a LOD_TENSOR_ARRAY but holds a %s",
                        (int)p->block, v->name, rill_var_kind_name(v->var->kind));
  }
  return NULL;
}

static bool var_has_value(const rill_variable *v) {
  switch (v->kind) {
    case RILL_VARKIND_EMPTY: return false;
    case RILL_VARKIND_TENSOR: return v->u.tensor.buf != NULL;
    default: return true;
  }
}

/* Every variable some op reads before any op writes it must hold a value. */
static rill_status *check_required(const rill_plan *p) {
  for (size_t i = 0; i < p->nrequired; i++) {
    const plan_var *v = &p->vars[p->required[i]];
    if (var_has_value(v->var)) continue;
    const plan_op *op = &p->ops[v->required_by];
    const char *why = v->kind == VAR_PERSIST
                          ? "the persistable variable is not initialized in the scope"
                      : v->kind == VAR_STEP ? "declared in the sub-block and not written before"
                      : p->block != 0       ? "not set in the sub-block's scope or its parents"
                                            : "not fed and not set in the scope";
    return rill_error(RILL_FAILED_PRECONDITION,
                      "block %d, op #%d '%s': input %s variable '%s' has no value (%s)",
                      (int)p->block, (int)op->index, op->type, v->required_slot, v->name, why);
  }
  return NULL;
}

static rill_status *move_home(rill_plan *p, uint32_t v, rill_variable *var, int32_t index);

/* Persistables the plan only reads, all on one place, move there in the caller's scope
 * (plan_var.move_persist); immutable ones keep their mirrors (stage_tensor). */
static rill_status *move_persistables(rill_plan *p) {
  for (size_t i = 0; i < p->npersist_homes; i++) {
    uint32_t v = p->persist_homes[i];
    rill_variable *var = p->vars[v].var;
    if (!var || var->kind != RILL_VARKIND_TENSOR || !var->u.tensor.buf ||
        rill_buffer_immutable(var->u.tensor.buf))
      continue;
    RILL_TRY(move_home(p, v, var, -1));
  }
  return NULL;
}

static rill_status *bind_feeds(rill_plan *p, rill_tensor *const *feeds) {
  for (size_t f = 0; f < p->nfeeds; f++) {
    plan_feed *pf = &p->feeds[f];
    if (!feeds[f])
      return rill_error(RILL_INVALID_ARGUMENT, "feed '%s' is NULL", p->feed_names[f]);
    RILL_TRY(check_fed(&p->vars[pf->desc], feeds[f]));
    rill_variable *var = p->vars[pf->var].var;
    rill_tensor *dst;
    if (pf->col < 0) {
      dst = rill_variable_tensor(var);
      if (!dst)
        return rill_error(RILL_INVALID_ARGUMENT, "feed '%s': the variable holds a %s", p->feed_names[f],
                          rill_var_kind_name(var->kind));
    } else {
      rill_tensor_array *arr = rill_variable_array(var);
      if (!arr)
        return rill_error(RILL_INVALID_ARGUMENT, "feed list '%s' holds a %s", p->vars[pf->var].name,
                          rill_var_kind_name(var->kind));
      RILL_TRY(rill_tensor_array_resize(arr, (size_t)pf->col + 1));
      dst = &arr->items[pf->col];
    }
    RILL_TRY(rill_status_wrap(rill_tensor_share(dst, feeds[f]), "feed '%s'", p->feed_names[f]));
    if (pf->col < 0 && p->vars[pf->var].move_fed)
      RILL_TRY(rill_status_wrap(move_home(p, pf->var, var, -1), "feed '%s'", p->feed_names[f]));
  }
  return NULL;
}

/* Gives an in-place output its own copy of the data before it is resized, on the place
 * the data is. */
static rill_status *privatize(rill_tensor *t) {
  if (!t->buf || (atomic_load_explicit(&t->buf->refs, memory_order_acquire) == 1 && t->buf->owned &&
                  !t->buf->immutable))
    return NULL;
  rill_tensor tmp;
  rill_tensor_init(&tmp);
  rill_status *st = t->buf->mem ? rill_tensor_copy_on(&tmp, t, t->buf->place, t->buf->mem)
                                : rill_tensor_copy(&tmp, t);
  if (st) {
    rill_tensor_clear(&tmp);
    return st;
  }
  rill_tensor_swap(&tmp, t);
  rill_tensor_clear(&tmp);
  return NULL;
}

/* Allocation of a temporary in a memory-plan group: takes the group's buffer when the
 * tensor has none, and keeps any private buffer that is large enough (a shared buffer
 * is sized for the largest member, so the "not more than twice too large" rule of
 * rill_tensor_alloc does not apply). */
static bool buf_on(const rill_buffer *b, rill_place place, const rill_device_memory *mem) {
  return b->mem == mem && b->place.device == place.device && b->place.id == place.id;
}

static rill_status *alloc_shared(rill_tensor *t, rill_tensor *holder, rill_dtype dtype,
                                 const rill_dims *dims, rill_place place,
                                 const rill_device_memory *mem) {
  if (!t->buf && holder->buf && buf_on(holder->buf, place, mem)) {
    t->buf = holder->buf;
    t->offset = 0;
    holder->buf = NULL;
  }
  rill_buffer *b = t->buf;
  int64_t numel;
  size_t bytes, esize = rill_dtype_size(dtype);
  if (b && esize && b->owned && !b->immutable && buf_on(b, place, mem) && t->offset == 0 &&
      atomic_load_explicit(&b->refs, memory_order_acquire) == 1 &&
      rill_dims_numel(dims, INT64_MAX, &numel) && rill_mul_size((size_t)numel, esize, &bytes) &&
      b->size >= bytes) {
    t->dtype = dtype;
    t->dims = *dims;
    return NULL;
  }
  return rill_tensor_alloc_on(t, dtype, dims, place, mem);
}

/* Sets op's input metas from the tensors its inputs hold now; true when one differs from
 * the last run's (or the variable behind it is another one). */
static bool refresh_in_metas(rill_plan *p, const plan_op *op) {
  bool changed = false;
  for (uint32_t k = op->in_begin; k < op->in_end; k++) {
    rill_variable *v = p->in_var[k];
    rill_tensor_meta *m = &p->in_meta[k];
    if (v && v->kind == RILL_VARKIND_TENSOR) {
      const rill_tensor *t = &v->u.tensor;
      bool known = t->buf != NULL;
      int32_t lod_level = (int32_t)t->lod.nlevels;
      if (p->in_tensor[k] != t || m->known != known || m->dtype != t->dtype ||
          m->lod_level != lod_level || !rill_dims_equal(&m->dims, &t->dims)) {
        changed = true;
        p->in_tensor[k] = t;
        m->known = known;
        m->dtype = t->dtype;
        m->dims = t->dims;
        m->lod_level = lod_level;
      }
    } else {
      changed |= p->in_tensor[k] != NULL || m->known;
      p->in_tensor[k] = NULL;
      m->known = false;
    }
  }
  return changed;
}

/* An input of an op that lives on another place than the op's: for the kernel's call,
 * the op's input k reads `copy`, a copy on the op's place, instead of `orig`. */
typedef struct staged_input {
  uint32_t k;
  rill_variable *orig;
  rill_variable copy;
} staged_input;

static bool elsewhere(const rill_tensor *t, rill_place place) {
  return t->buf && (t->buf->place.device != place.device || t->buf->place.id != place.id);
}

/* A dense tensor, the values of selected rows, or any item of an array, on another
 * place than `place`. */
static bool var_elsewhere(const rill_variable *v, rill_place place) {
  if (!v) return false;
  switch (v->kind) {
    case RILL_VARKIND_TENSOR:
      return elsewhere(&v->u.tensor, place);
    case RILL_VARKIND_SELECTED_ROWS:
      return elsewhere(&v->u.rows.value, place);
    case RILL_VARKIND_TENSOR_ARRAY:
      for (size_t i = 0; i < v->u.array.n; i++)
        if (elsewhere(&v->u.array.items[i], place)) return true;
      return false;
    default:
      return false;
  }
}

/* dst (an empty tensor) := src on `place`, for an op's call. The bytes of an immutable
 * buffer (a predictor's weights) are copied to a place once, as the buffer's mirror
 * there, which every later run shares; others are copied on every call. */
static rill_status *stage_tensor(rill_tensor *dst, const rill_tensor *src, rill_place place,
                                 const rill_device_memory *mem, size_t *copied) {
  rill_buffer *b = src->buf;
  if (!rill_buffer_immutable(b)) {
    *copied += rill_tensor_nbytes(src);
    return rill_tensor_copy_on(dst, src, place, mem);
  }
  rill_buffer *m = rill_buffer_mirror_find(b, place);
  if (!m) {
    *copied += b->size;
    rill_buffer *copy = rill_buffer_alloc_on(b->size, place, mem);
    if (!copy) return rill_error(RILL_OUT_OF_MEMORY, "out of memory allocating %zu bytes", b->size);
    rill_status *st = rill_backend_copy(place, copy->data, b->place, b->data, b->size);
    if (st) {
      rill_buffer_release(copy);
      return st;
    }
    /* The copy's reference passes to b; when another thread added its mirror first,
     * the copy is released and theirs comes back. */
    m = rill_buffer_mirror_add(b, copy);
  }
  rill_buffer_retain(m); /* dst's own reference */
  RILL_TRY(rill_lod_copy(&dst->lod, &src->lod));
  rill_buffer_release(dst->buf);
  dst->buf = m;
  dst->offset = src->offset;
  dst->dtype = src->dtype;
  dst->dims = src->dims;
  return NULL;
}

/* dst (an empty variable) := src on `place`: tensors on another place copied, those
 * already there shared, the rows of selected rows and an array's length kept. */
static rill_status *copy_var_to_place(rill_variable *dst, const rill_variable *src, rill_place place,
                                      const rill_device_memory *mem, size_t *copied) {
  switch (src->kind) {
    case RILL_VARKIND_TENSOR:
      return stage_tensor(rill_variable_tensor(dst), &src->u.tensor, place, mem, copied);
    case RILL_VARKIND_SELECTED_ROWS: {
      rill_selected_rows *sr = rill_variable_selected_rows(dst);
      RILL_TRY(rill_selected_rows_set_rows(sr, src->u.rows.rows, src->u.rows.nrows));
      sr->height = src->u.rows.height;
      return stage_tensor(&sr->value, &src->u.rows.value, place, mem, copied);
    }
    case RILL_VARKIND_TENSOR_ARRAY: {
      rill_tensor_array *a = rill_variable_array(dst);
      RILL_TRY(rill_tensor_array_resize(a, src->u.array.n));
      for (size_t i = 0; i < src->u.array.n; i++) {
        const rill_tensor *t = &src->u.array.items[i];
        if (elsewhere(t, place))
          RILL_TRY(rill_status_wrap(stage_tensor(&a->items[i], t, place, mem, copied), "item %zu", i));
        else if (t->buf)
          RILL_TRY(rill_tensor_share(&a->items[i], t));
      }
      return NULL;
    }
    default:
      return rill_error(RILL_INTERNAL, "a %s cannot be copied between places", rill_var_kind_name(src->kind));
  }
}

/* Where a variable's data is: its dense tensor's place, or its values', or the place
 * of its array's first item with data (the host's when it has none). */
static rill_place var_place(const rill_variable *v) {
  switch (v->kind) {
    case RILL_VARKIND_TENSOR:
      return rill_tensor_place(&v->u.tensor);
    case RILL_VARKIND_SELECTED_ROWS:
      return rill_tensor_place(&v->u.rows.value);
    case RILL_VARKIND_TENSOR_ARRAY:
      for (size_t i = 0; i < v->u.array.n; i++)
        if (v->u.array.items[i].buf) return rill_tensor_place(&v->u.array.items[i]);
      return (rill_place){RILL_HOST_DEVICE, 0};
    default:
      return (rill_place){RILL_HOST_DEVICE, 0};
  }
}

/* The profiler's record of a copy made since t0 (rill_prof_copy). */
static void prof_copy(rill_place from, rill_place to, int32_t block, int32_t index, const char *var,
                      size_t bytes, int64_t t0) {
  char a[RILL_PLACE_STR_MAX], b[RILL_PLACE_STR_MAX], name[2 * RILL_PLACE_STR_MAX + 16];
  snprintf(name, sizeof name, "memcpy %s->%s", rill_place_str(from, a, sizeof a), rill_place_str(to, b, sizeof b));
  rill_prof_copy(name, block, index, var, bytes, t0, rill_prof_now());
}

/* dst := variable `name`'s src on `place` (copy_var_to_place), recorded by the profiler
 * as a copy for op `index` when it is on and bytes moved. */
static rill_status *copy_var_recorded(const rill_plan *p, int32_t index, const char *name, rill_variable *dst,
                                      const rill_variable *src, rill_place place, const rill_device_memory *mem) {
  size_t copied = 0;
  int64_t t0 = rill_prof_active() ? rill_prof_now() : 0;
  rill_place from = var_place(src);
  RILL_TRY(copy_var_to_place(dst, src, place, mem, &copied));
  if (t0 && copied) prof_copy(from, place, p->block, index, name, copied, t0);
  return NULL;
}

static void unstage_inputs(rill_plan *p, staged_input *staged, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    p->in_var[staged[i].k] = staged[i].orig;
    rill_variable_clear(&staged[i].copy);
  }
  rill_free(staged);
}

static const rill_place HOST_PLACE = {RILL_HOST_DEVICE, 0};

/* Where input k of an op staged on `place` goes: there, or the host for a
 * RILL_SLOT_HOST_DATA slot. */
static rill_place stage_place(const rill_plan *p, uint32_t k, rill_place place) {
  return p->in_stage[k] == STAGE_ON_HOST ? HOST_PLACE : place;
}

/* An input that must be copied for the op: its slot reads elements (not
 * RILL_SLOT_ANY_PLACE) and its data is elsewhere than stage_place. */
static bool needs_staging(const rill_plan *p, uint32_t k, rill_place place) {
  return p->in_stage[k] != STAGE_NONE && var_elsewhere(p->in_var[k], stage_place(p, k, place));
}

/* Copies every input of op with data elsewhere than `place` (a dense tensor, selected
 * rows, a tensor array) there, from `mem` (NULL: the host's), through the two
 * backends' copy functions, and points the op's input at the copy. Inputs of
 * RILL_SLOT_ANY_PLACE slots stay where they are; those of RILL_SLOT_HOST_DATA slots go
 * to the host. With infer_only, only the inputs whose elements the op's inference reads
 * (rill_plan.in_infer). */
static rill_status *stage_inputs(rill_plan *p, plan_op *op, rill_place place, const rill_device_memory *mem,
                                 bool infer_only, staged_input **out, uint32_t *nout) {
  uint32_t n = 0;
  for (uint32_t k = op->in_begin; k < op->in_end; k++)
    n += (!infer_only || p->in_infer[k]) && needs_staging(p, k, place);
  if (!n) return NULL;
  staged_input *staged = rill_calloc(n, sizeof *staged);
  if (!staged) return rill_oom();
  rill_status *st = NULL;
  uint32_t done = 0;
  for (uint32_t k = op->in_begin; k < op->in_end && !st; k++) {
    if ((infer_only && !p->in_infer[k]) || !needs_staging(p, k, place)) continue;
    staged_input *s = &staged[done++];
    s->k = k;
    s->orig = p->in_var[k];
    rill_variable_init(&s->copy);
    const char *name = p->vars[p->in_id[k]].name;
    rill_place at = stage_place(p, k, place);
    if ((st = copy_var_recorded(p, op->index, name, &s->copy, s->orig, at,
                                p->in_stage[k] == STAGE_ON_HOST ? NULL : mem))) {
      char to[RILL_PLACE_STR_MAX];
      st = rill_status_wrap(st, "copying input %s '%s' to %s", rill_var_kind_name(s->orig->kind), name,
                            rill_place_str(at, to, sizeof to));
      break;
    }
    p->in_var[k] = &s->copy;
  }
  if (st) {
    unstage_inputs(p, staged, done);
    return st;
  }
  *out = staged;
  *nout = n;
  return NULL;
}

static rill_status *alloc_and_call(rill_plan *p, plan_op *op);

/* Variable `v` of the plan (bound to var), written or fed on another place than the one
 * all its readers run on, is copied there once (plan_var.has_home). */
static rill_status *move_home(rill_plan *p, uint32_t v, rill_variable *var, int32_t index) {
  plan_var *pv = &p->vars[v];
  if (!var || !var_elsewhere(var, pv->home)) return NULL;
  rill_variable copy;
  rill_variable_init(&copy);
  rill_status *st = copy_var_recorded(p, index, pv->name, &copy, var, pv->home, pv->home_mem);
  if (st) {
    rill_variable_clear(&copy);
    char to[RILL_PLACE_STR_MAX];
    return rill_status_wrap(st, "copying %s '%s' to %s, where its readers run", rill_var_kind_name(var->kind),
                            pv->name, rill_place_str(pv->home, to, sizeof to));
  }
  rill_variable old = *var;
  *var = copy;
  rill_variable_clear(&old);
  return NULL;
}

static rill_status *move_outputs(rill_plan *p, const plan_op *op) {
  for (uint32_t k = op->out_begin; k < op->out_end; k++)
    if (p->out_move[k]) RILL_TRY(move_home(p, p->out_id[k], p->out_var[k], op->index));
  return NULL;
}

/* Run-time inference of the op's outputs, when its input metas changed (or it reads
 * their LoD or elements, which may have). */
static rill_status *infer_outputs(rill_plan *p, plan_op *op) {
  if (!op->schema->infer ||
      !(refresh_in_metas(p, op) || !op->infer_valid || op->infer_reads != INFER_METAS))
    return NULL;
  for (uint32_t k = op->out_begin; k < op->out_end; k++) {
    rill_tensor_meta *m = &p->out_meta[k];
    m->known = false;
    m->lod_level = 0;
    m->lod_from[0] = m->lod_from[1] = -1;
  }
  op->infer_valid = false;
  RILL_TRY(op->schema->infer(&op->ictx));
  op->infer_valid = true;
  atomic_fetch_add_explicit(&p->infer_runs, 1, memory_order_relaxed);
  return NULL;
}

/* The kernel for the dtype of the input that picks it, and the call, with the inputs
 * staged on the op's place (unless staged_already). */
static rill_status *call_kernel(rill_plan *p, plan_op *op, bool staged_already) {
  if (op->dtype_arg >= 0) {
    rill_variable *v = p->in_var[op->dtype_arg];
    /* A dense tensor's dtype, or the values' of selected rows. */
    const rill_tensor *vt = !v                                      ? NULL
                            : v->kind == RILL_VARKIND_TENSOR        ? &v->u.tensor
                            : v->kind == RILL_VARKIND_SELECTED_ROWS ? &v->u.rows.value
                                                                    : NULL;
    if (vt && vt->buf && vt->dtype != op->kernel_dtype) {
      rill_kernel_fn fn = rill_kernel_find(op->type, op->place.device, vt->dtype);
      if (!fn)
        return rill_error(RILL_UNIMPLEMENTED, "backend '%s' has no kernel for dtype %s",
                          op->backend->name, rill_dtype_name(vt->dtype));
      op->kernel = fn;
      op->kernel_dtype = vt->dtype;
    }
  }
  if (staged_already) return alloc_and_call(p, op);
  uint32_t nstaged = 0;
  staged_input *staged = NULL;
  RILL_TRY(stage_inputs(p, op, op->place, rill_backend_tensor_memory(op->backend), false, &staged, &nstaged));
  rill_status *st = alloc_and_call(p, op);
  unstage_inputs(p, staged, nstaged);
  return st;
}

/* Inference, then the kernel. An op whose inference reads its inputs' elements (a shape
 * held in a tensor) infers from host copies of those on other places, wherever it runs:
 * a host op copies every input and keeps them for its kernel, and a device op copies
 * those its inference reads (rill_plan.in_infer), its kernel getting its own on the
 * device. Other ops infer from metadata and LoD alone, which are on the host wherever
 * the elements are, and their inputs are staged on their place just before the kernel. */
static rill_status *run_op(rill_plan *p, plan_op *op) {
  if (op->infer_reads != INFER_VALUES) {
    RILL_TRY(infer_outputs(p, op));
    return call_kernel(p, op, false);
  }
  bool on_host = op->place.device == RILL_HOST_DEVICE;
  uint32_t nstaged = 0;
  staged_input *staged = NULL;
  RILL_TRY(stage_inputs(p, op, HOST_PLACE, NULL, !on_host, &staged, &nstaged));
  rill_status *st = infer_outputs(p, op);
  if (!st && on_host) st = call_kernel(p, op, true);
  unstage_inputs(p, staged, nstaged);
  if (st || on_host) return st;
  /* The inference saw the host copies, freed now: the input tensors the kernel's call
   * reads (an output's LoD comes from one) are the variables' own again. */
  (void)refresh_in_metas(p, op);
  return call_kernel(p, op, false);
}

/* The tensors an op updates in place (an output that is also its input: an optimizer's
 * ParamOut, center_loss's CentersOut) on another place than the op's: the op's outputs
 * replace their buffers with new ones on its place, so a failing op would leave the
 * variables without their values. They are kept until the kernel succeeds, and put
 * back when it fails: bad input loses nothing, wherever the variable lives. */
typedef struct kept_output {
  uint32_t k;
  rill_tensor t;
} kept_output;

static rill_status *keep_moved_aliases(rill_plan *p, const plan_op *op, kept_output **out, uint32_t *nout) {
  *out = NULL;
  *nout = 0;
  if (!op->has_alias) return NULL;
  uint32_t n = 0;
  for (uint32_t k = op->out_begin; k < op->out_end; k++) {
    const rill_tensor *t = p->out_alias[k] && p->out_var[k] ? rill_variable_tensor(p->out_var[k]) : NULL;
    n += t && elsewhere(t, op->place);
  }
  if (!n) return NULL;
  kept_output *kept = rill_calloc(n, sizeof *kept);
  if (!kept) return rill_oom();
  for (uint32_t k = op->out_begin; k < op->out_end; k++) {
    const rill_tensor *t = p->out_alias[k] && p->out_var[k] ? rill_variable_tensor(p->out_var[k]) : NULL;
    if (!t || !elsewhere(t, op->place)) continue;
    kept_output *o = &kept[(*nout)++];
    o->k = k;
    rill_tensor_init(&o->t);
    rill_status *st = rill_tensor_share(&o->t, t);
    if (st) {
      for (uint32_t i = 0; i < *nout; i++) rill_tensor_clear(&kept[i].t);
      rill_free(kept);
      *nout = 0;
      return st;
    }
  }
  *out = kept;
  return NULL;
}

/* After the op: puts the kept tensors back when it failed (st), and lets them go. */
static rill_status *release_kept(rill_plan *p, kept_output *kept, uint32_t n, rill_status *st) {
  for (uint32_t i = 0; i < n; i++) {
    rill_tensor *t = st ? rill_variable_tensor(p->out_var[kept[i].k]) : NULL;
    if (t) rill_tensor_swap(t, &kept[i].t);
    rill_tensor_clear(&kept[i].t);
  }
  rill_free(kept);
  return st;
}

static rill_status *alloc_outputs_and_call(rill_plan *p, plan_op *op);

static rill_status *alloc_and_call(rill_plan *p, plan_op *op) {
  kept_output *kept;
  uint32_t nkept;
  RILL_TRY(keep_moved_aliases(p, op, &kept, &nkept));
  if (!nkept) return alloc_outputs_and_call(p, op);
  return release_kept(p, kept, nkept, alloc_outputs_and_call(p, op));
}

static rill_status *alloc_outputs_and_call(rill_plan *p, plan_op *op) {
  rill_status *st;
  const rill_device_memory *mem = rill_backend_tensor_memory(op->backend);
  if (!op->kernel_shapes && op->schema->infer) {
    for (uint32_t k = op->out_begin; k < op->out_end; k++) {
      const rill_tensor_meta *m = &p->out_meta[k];
      if (!m->known || !p->out_var[k]) continue;
      rill_tensor *t = rill_variable_tensor(p->out_var[k]);
      if (!t) continue;
      if (p->out_alias[k] && (st = privatize(t))) return st;
      int32_t g = p->memplan ? p->group[p->out_id[k]] : -1;
      if ((st = g >= 0 ? alloc_shared(t, &p->holders[g], m->dtype, &m->dims, op->place, mem)
                       : rill_tensor_alloc_on(t, m->dtype, &m->dims, op->place, mem)))
        return rill_status_wrap(st, "output '%s'", p->vars[p->out_id[k]].name);
      if (m->lod_from[0] >= 0) {
        size_t slot = (size_t)m->lod_from[0], idx = (size_t)m->lod_from[1];
        const rill_tensor *src = slot < op->schema->ninputs && idx < op->ictx.nin[slot]
                                     ? op->ictx.in_tensors[slot][idx]
                                     : NULL;
        if (src && src != t) {
          if (src->lod.nlevels) {
            if ((st = rill_lod_copy(&t->lod, &src->lod))) return st;
          } else if (t->lod.nlevels) {
            rill_lod_clear(&t->lod);
          }
        }
      } else if (t->lod.nlevels && !p->out_alias[k]) {
        rill_lod_clear(&t->lod);
      }
    }
  }
  RILL_TRY(op->kernel(&op->kctx));
  return move_outputs(p, op);
}

/* run_op, timed for the profiler when it is on: one relaxed load and a branch when off. */
static rill_status *run_op_prof(rill_plan *p, plan_op *op) {
  if (!rill_prof_active()) return run_op(p, op);
  int64_t t0 = rill_prof_now();
  rill_status *st = run_op(p, op);
  rill_prof_op(op->type, p->block, op->index, t0, rill_prof_now());
  return st;
}

static void run_cleanup(rill_plan *p) {
  for (size_t i = 0; i < p->ncleanup; i++) {
    plan_var *v = &p->vars[p->cleanup[i]];
    rill_variable *var = v->local;
    if (!var) continue;
    if (var->kind == RILL_VARKIND_TENSOR_ARRAY) {
      /* Keep the list's storage for the next run; drop what it references. */
      for (size_t k = 0; k < var->u.array.n; k++) rill_tensor_clear(&var->u.array.items[k]);
    } else if (var->kind == RILL_VARKIND_TENSOR) {
      rill_tensor_clear(&var->u.tensor);
    } else {
      rill_variable_clear(var);
    }
  }
  /* The plan's own arrays end with the run (Paddle's are in the run's local scope): the
   * next run starts from an empty array, not from this run's items. */
  for (size_t i = 0; i < p->narrays; i++) {
    plan_var *v = &p->vars[p->arrays[i]];
    if (v->local && v->local->kind == RILL_VARKIND_TENSOR_ARRAY) rill_variable_clear(v->local);
  }
  p->local->parent = NULL;
}

/* A fetched output is on the host: shared when it is there, else copied (also an
 * immutable weight's bytes, which the caller could otherwise write through
 * rill_tensor_data). */
static rill_status *fetch_to_host(rill_tensor *t, const rill_tensor *src, int32_t block, const char *name) {
  rill_place at = rill_tensor_place(src);
  if (at.device == RILL_HOST_DEVICE && !rill_buffer_immutable(src->buf)) return rill_tensor_share(t, src);
  if (at.device == RILL_HOST_DEVICE) return rill_tensor_copy(t, src);
  const rill_place host = {RILL_HOST_DEVICE, 0};
  int64_t t0 = rill_prof_active() ? rill_prof_now() : 0;
  RILL_TRY(rill_tensor_copy_on(t, src, host, NULL));
  if (t0) prof_copy(at, host, block, -1, name, rill_tensor_nbytes(src), t0);
  return NULL;
}

static rill_status *fetch_outputs(rill_plan *p, rill_tensor **outputs) {
  for (size_t f = 0; f < p->nfetch; f++) {
    plan_fetch *pf = &p->fetches[f];
    rill_variable *var = p->vars[pf->var].var;
    const rill_tensor *src = NULL;
    if (pf->col >= 0) {
      if (var->kind == RILL_VARKIND_TENSOR_ARRAY && (size_t)pf->col < var->u.array.n)
        src = &var->u.array.items[pf->col];
    } else if (var->kind == RILL_VARKIND_TENSOR) {
      src = &var->u.tensor;
    }
    rill_status *st = NULL;
    if (!src || !src->buf)
      st = rill_error(RILL_FAILED_PRECONDITION, "fetch '%s' has no value after the run", pf->name);
    rill_tensor *t = NULL;
    if (!st && !(t = rill_malloc(sizeof *t))) st = rill_oom();
    if (!st) {
      rill_tensor_init(t);
      if ((st = fetch_to_host(t, src, p->block, pf->name))) {
        rill_tensor_clear(t);
        rill_free(t);
        st = rill_status_wrap(st, "fetch '%s'", pf->name);
      }
    }
    if (st) {
      for (size_t g = 0; g < f; g++) {
        rill_tensor_clear(outputs[g]);
        rill_free(outputs[g]);
      }
      return st;
    }
    outputs[f] = t;
  }
  return NULL;
}

/* Releases the temporaries whose last user was op i (per-run countdowns, so the order
 * in which the parallel schedule finishes the users does not matter). */
static void release_after(rill_plan *p, uint32_t i, bool release) {
  for (uint32_t k = p->touch_start[i]; k < p->touch_start[i + 1]; k++) {
    uint32_t v = p->touch[k];
    if (atomic_fetch_sub_explicit(&p->rel_count[v], 1, memory_order_acq_rel) != 1) continue;
    rill_variable *var = p->vars[v].var;
    if (p->memplan && p->group[v] >= 0 && var->kind == RILL_VARKIND_TENSOR) {
      /* Hand the buffer to the group, unless someone else (a fetched output, a view)
       * still holds it. */
      rill_tensor *t = &var->u.tensor, *h = &p->holders[p->group[v]];
      rill_buffer *b = t->buf;
      if (b && b->owned && !b->immutable && t->offset == 0 &&
          atomic_load_explicit(&b->refs, memory_order_acquire) == 1 &&
          (!h->buf || h->buf->size < b->size)) {
        rill_buffer_release(h->buf);
        h->buf = b;
        t->buf = NULL;
      }
      rill_tensor_clear(t);
      continue;
    }
    if (!release) continue;
    if (var->kind == RILL_VARKIND_TENSOR)
      rill_tensor_clear(&var->u.tensor);
    else
      rill_variable_clear(var);
  }
}

typedef struct run_ctx {
  rill_executor *exe;
  rill_plan *p;
} run_ctx;

static rill_status *par_run(void *ctx, uint32_t i) {
  run_ctx *c = ctx;
  plan_op *op = &c->p->ops[i];
  rill_status *st = run_op_prof(c->p, op);
  return st ? rill_status_wrap(st, OP_CONTEXT_FMT, (int)c->p->block, (int)op->index, op->type)
            : NULL;
}

static void par_done(void *ctx, uint32_t i) {
  run_ctx *c = ctx;
  if (c->exe->release_temporaries || c->p->memplan)
    release_after(c->p, i, c->exe->release_temporaries);
}

static rill_status *par_wrap(void *ctx, uint32_t i, rill_status *st) {
  run_ctx *c = ctx;
  return rill_status_wrap(st, "before " OP_CONTEXT_FMT, (int)c->p->block, (int)i,
                          c->p->ops[i].type);
}

static void par_name(void *ctx, uint32_t i, const char **type, int32_t *block, int32_t *index) {
  run_ctx *c = ctx;
  *type = c->p->ops[i].type;
  *block = c->p->block;
  *index = c->p->ops[i].index;
}

static const rill_sched_fns par_fns = {par_run, par_done, par_wrap, par_name};

static rill_status *run_sequential(rill_executor *exe, rill_plan *p, int64_t deadline) {
  bool release = exe->release_temporaries, handover = release || p->memplan;
  for (size_t i = 0; i < p->nops; i++) {
    plan_op *op = &p->ops[i];
    rill_status *st = NULL;
    if (rill_sched_cancelled(exe->sched))
      st = rill_error(RILL_CANCELLED, "the run was cancelled");
    else if (deadline && rill_sched_now_ns() >= deadline)
      st = rill_error(RILL_DEADLINE_EXCEEDED, "the run passed its deadline");
    if (st)
      return rill_status_wrap(st, "before " OP_CONTEXT_FMT, (int)p->block, (int)op->index,
                              op->type);
    if ((st = run_op_prof(p, op)))
      return rill_status_wrap(st, OP_CONTEXT_FMT, (int)p->block, (int)op->index, op->type);
    if (handover) release_after(p, (uint32_t)i, release);
  }
  return NULL;
}

rill_status *rill_exec_run_plan(rill_executor *exe, rill_plan *p, rill_scope *scope,
                                rill_tensor *const *feeds, rill_tensor **outputs) {
  rill_status *st = NULL;
  rill_tensor *tmp_small[8];
  rill_tensor **tmp = tmp_small;
  int64_t deadline = exe->timeout_us > 0 ? rill_sched_now_ns() + exe->timeout_us * 1000 : 0;
  if (p->nfetch > 8 && !(tmp = rill_calloc(p->nfetch, sizeof *tmp))) return rill_oom();
  exe->run_deadline_ns = deadline;
  rill_sched_begin(exe->sched);
  rill_pool_running_enter();
  p->local->parent = scope;
  if ((st = bind_caller_vars(p, scope))) goto done;
  if ((st = bind_feeds(p, feeds))) goto done;
  if ((st = start_arrays(p))) goto done;
  if ((st = check_required(p))) goto done;
  if ((st = move_persistables(p))) goto done;
  if (exe->release_temporaries || p->memplan)
    for (size_t v = 0; v < p->nvars; v++)
      atomic_store_explicit(&p->rel_count[v], p->rel_init[v], memory_order_relaxed);
  rill_schedule sched = exe->schedule == RILL_SCHEDULE_AUTO ? p->auto_schedule : exe->schedule;
  if (sched == RILL_SCHEDULE_PARALLEL) {
    exe->parallel_runs++;
    run_ctx c = {exe, p};
    st = rill_sched_run(exe->sched, &p->graph, &par_fns, &c, deadline);
  } else {
    exe->sequential_runs++;
    st = run_sequential(exe, p, deadline);
  }
  if (st) goto done;
  if ((st = fetch_outputs(p, tmp))) goto done;
  if (p->nfetch) memcpy(outputs, tmp, p->nfetch * sizeof *outputs);
done:
  exe->run_deadline_ns = 0;
  run_cleanup(p);
  rill_pool_running_leave();
  rill_sched_end(exe->sched);
  rill_bg_release(exe->device.bg); /* background work queued by this run may start */
  if (tmp != tmp_small) rill_free(tmp);
  return st;
}

/* A sub-block's variables: its own in the run's scope (created there at every run), its
 * ancestors' through the scope chain, written where they are found. An ancestor's
 * persistable variable that no scope holds yet is made in the outermost scope, where
 * persistables live, so that what the block writes outlives its run (an LR schedule's
 * block on a pserver writes rates that the optimize blocks, run later in scopes of
 * their own, read). */
static rill_status *bind_block_vars(rill_plan *p, rill_scope *scope) {
  uint64_t serial = rill_scope_serial(scope), erasures = rill_scope_erasures();
  if (p->bound_serial == serial && p->bound_erasures == erasures) return NULL;
  p->bound_serial = 0;
  for (size_t i = 0; i < p->ncaller; i++) {
    plan_var *v = &p->vars[p->caller_vars[i]];
    rill_variable *var = v->kind == VAR_OUTER ? rill_scope_find(scope, v->name) : NULL;
    rill_scope *home = scope;
    if (!var && v->outer_persist)
      while (home->parent) home = home->parent;
    if (!var)
      RILL_TRY(rill_status_wrap(rill_scope_var(home, v->name, &var), "block %d: variable '%s'",
                                (int)p->block, v->name));
    v->var = var;
  }
  for (size_t k = 0; k < p->nin; k++) p->in_var[k] = p->vars[p->in_id[k]].var;
  for (size_t k = 0; k < p->nout; k++) p->out_var[k] = p->vars[p->out_id[k]].var;
  for (size_t i = 0; i < p->nops; i++) p->ops[i].kctx.scope = scope;
  p->bound_serial = serial;
  p->bound_erasures = erasures;
  return NULL;
}

rill_status *rill_exec_run_subplan(rill_executor *exe, rill_plan *p, rill_scope *scope) {
  RILL_TRY(bind_block_vars(p, scope));
  RILL_TRY(start_arrays(p));
  RILL_TRY(check_required(p));
  return run_sequential(exe, p, exe->run_deadline_ns);
}

uint64_t rill_plan_infer_runs(const rill_plan *plan) {
  return atomic_load_explicit(&plan->infer_runs, memory_order_relaxed);
}
