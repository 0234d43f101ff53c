#include "framework/data/scope.h"

#include <stdatomic.h>
#include <string.h>

#include "framework/base/alloc.h"

struct rill_scope_entry {
  rill_variable var;
  char name[]; /* NUL-terminated */
};

void rill_variable_init(rill_variable *v) {
  memset(v, 0, sizeof *v);
  v->kind = RILL_VARKIND_EMPTY;
}

void rill_variable_clear(rill_variable *v) {
  switch (v->kind) {
    case RILL_VARKIND_TENSOR: rill_tensor_clear(&v->u.tensor); break;
    case RILL_VARKIND_SELECTED_ROWS: rill_selected_rows_clear(&v->u.rows); break;
    case RILL_VARKIND_TENSOR_ARRAY:
      for (size_t i = 0; i < v->u.array.n; i++) rill_tensor_clear(&v->u.array.items[i]);
      rill_free(v->u.array.items);
      break;
    case RILL_VARKIND_STEP_SCOPES:
      for (size_t i = v->u.scopes.n; i-- > 0;) rill_scope_destroy(v->u.scopes.items[i]);
      rill_free(v->u.scopes.items);
      break;
    default: break;
  }
  rill_variable_init(v);
}

const char *rill_var_kind_name(rill_var_kind kind) {
  static const char *const names[RILL_VARKIND_COUNT] = {
      [RILL_VARKIND_EMPTY] = "empty",
      [RILL_VARKIND_TENSOR] = "LoD tensor",
      [RILL_VARKIND_SELECTED_ROWS] = "selected rows",
      [RILL_VARKIND_TENSOR_ARRAY] = "tensor array",
      [RILL_VARKIND_STEP_SCOPES] = "step scopes",
  };
  return (unsigned)kind < RILL_VARKIND_COUNT ? names[kind] : "invalid";
}

rill_tensor *rill_variable_tensor(rill_variable *v) {
  if (v->kind == RILL_VARKIND_EMPTY) {
    v->kind = RILL_VARKIND_TENSOR;
    rill_tensor_init(&v->u.tensor);
  }
  return v->kind == RILL_VARKIND_TENSOR ? &v->u.tensor : NULL;
}

rill_selected_rows *rill_variable_selected_rows(rill_variable *v) {
  if (v->kind == RILL_VARKIND_EMPTY) {
    v->kind = RILL_VARKIND_SELECTED_ROWS;
    rill_selected_rows_init(&v->u.rows);
  }
  return v->kind == RILL_VARKIND_SELECTED_ROWS ? &v->u.rows : NULL;
}

rill_tensor_array *rill_variable_array(rill_variable *v) {
  if (v->kind == RILL_VARKIND_EMPTY) {
    v->kind = RILL_VARKIND_TENSOR_ARRAY;
    memset(&v->u.array, 0, sizeof v->u.array);
  }
  return v->kind == RILL_VARKIND_TENSOR_ARRAY ? &v->u.array : NULL;
}

rill_step_scopes *rill_variable_step_scopes(rill_variable *v) {
  if (v->kind == RILL_VARKIND_EMPTY) {
    v->kind = RILL_VARKIND_STEP_SCOPES;
    memset(&v->u.scopes, 0, sizeof v->u.scopes);
  }
  return v->kind == RILL_VARKIND_STEP_SCOPES ? &v->u.scopes : NULL;
}

rill_status *rill_step_scopes_push(rill_step_scopes *s, rill_scope *scope) {
  void *items = s->items;
  if (!rill_grow(&items, &s->cap, s->n + 1, sizeof(rill_scope *))) return rill_oom();
  s->items = items;
  s->items[s->n++] = scope;
  return NULL;
}

rill_status *rill_tensor_array_resize(rill_tensor_array *a, size_t n) {
  if (n <= a->n) return NULL;
  void *items = a->items;
  if (!rill_grow(&items, &a->cap, n, sizeof(rill_tensor))) return rill_oom();
  a->items = items;
  for (size_t i = a->n; i < n; i++) rill_tensor_init(&a->items[i]);
  a->n = n;
  return NULL;
}

/* ---- scope ---- */

static atomic_size_t live_scopes;
static _Atomic uint64_t next_serial, erasures;

uint64_t rill_scope_serial(const rill_scope *s) { return s->serial; }

uint64_t rill_scope_erasures(void) { return atomic_load_explicit(&erasures, memory_order_acquire); }

size_t rill_scope_live_count(void) { return atomic_load_explicit(&live_scopes, memory_order_relaxed); }

rill_status *rill_scope_create(rill_scope *parent, rill_scope **out) {
  rill_scope *s = rill_calloc(1, sizeof *s);
  if (!s) return rill_oom();
  if (pthread_mutex_init(&s->lock, NULL)) {
    rill_free(s);
    return rill_error(RILL_INTERNAL, "cannot create a scope lock");
  }
  s->vars.borrow_keys = true;
  s->parent = parent;
  s->serial = atomic_fetch_add_explicit(&next_serial, 1, memory_order_relaxed) + 1;
  atomic_fetch_add_explicit(&live_scopes, 1, memory_order_relaxed);
  if (parent) {
    pthread_mutex_lock(&parent->lock);
    s->next_sibling = parent->first_child;
    parent->first_child = s;
    pthread_mutex_unlock(&parent->lock);
  }
  *out = s;
  return NULL;
}

void rill_scope_destroy(rill_scope *s) {
  if (!s) return;
  /* Variables first: a STEP_SCOPES variable destroys the child scopes it owns, which
   * then leave the child list. */
  for (size_t i = 0; i < s->vars.cap; i++)
    if (s->vars.slots[i].key) rill_variable_clear(&((rill_scope_entry *)s->vars.slots[i].val.ptr)->var);
  while (s->first_child) rill_scope_destroy(s->first_child);
  if (s->parent) {
    rill_scope *p = s->parent;
    pthread_mutex_lock(&p->lock);
    for (rill_scope **at = &p->first_child; *at; at = &(*at)->next_sibling)
      if (*at == s) {
        *at = s->next_sibling;
        break;
      }
    pthread_mutex_unlock(&p->lock);
  }
  for (size_t i = 0; i < s->vars.cap; i++)
    if (s->vars.slots[i].key) {
      rill_scope_entry *e = s->vars.slots[i].val.ptr;
      rill_variable_clear(&e->var);
      rill_free(e);
    }
  rill_strmap_clear(&s->vars);
  pthread_mutex_destroy(&s->lock);
  rill_free(s);
  atomic_fetch_sub_explicit(&live_scopes, 1, memory_order_relaxed);
}

static rill_variable *find_locked(rill_scope *s, const char *name, uint64_t h) {
  rill_strmap_value *v = rill_strmap_find(&s->vars, name, h);
  return v ? &((rill_scope_entry *)v->ptr)->var : NULL;
}

rill_variable *rill_scope_find_local(rill_scope *s, const char *name) {
  uint64_t h = rill_str_hash(name);
  pthread_mutex_lock(&s->lock);
  rill_variable *v = find_locked(s, name, h);
  pthread_mutex_unlock(&s->lock);
  return v;
}

rill_variable *rill_scope_find(rill_scope *s, const char *name) {
  uint64_t h = rill_str_hash(name);
  for (; s; s = s->parent) {
    pthread_mutex_lock(&s->lock);
    rill_variable *v = find_locked(s, name, h);
    pthread_mutex_unlock(&s->lock);
    if (v) return v;
  }
  return NULL;
}

rill_status *rill_scope_var(rill_scope *s, const char *name, rill_variable **out) {
  uint64_t h = rill_str_hash(name);
  rill_status *st = NULL;
  pthread_mutex_lock(&s->lock);
  rill_variable *v = find_locked(s, name, h);
  if (!v) {
    size_t len = strlen(name);
    rill_scope_entry *e = rill_malloc(sizeof *e + len + 1);
    if (!e) {
      st = rill_oom();
      goto done;
    }
    memcpy(e->name, name, len + 1);
    rill_variable_init(&e->var);
    if ((st = rill_strmap_set(&s->vars, e->name, h, (rill_strmap_value){.ptr = e}))) {
      rill_free(e);
      goto done;
    }
    v = &e->var;
  }
  *out = v;
done:
  pthread_mutex_unlock(&s->lock);
  return st;
}

bool rill_scope_erase(rill_scope *s, const char *name) {
  uint64_t h = rill_str_hash(name);
  rill_strmap_value gone;
  pthread_mutex_lock(&s->lock);
  bool found = rill_strmap_erase(&s->vars, name, h, &gone);
  pthread_mutex_unlock(&s->lock);
  if (!found) return false;
  atomic_fetch_add_explicit(&erasures, 1, memory_order_release);
  rill_scope_entry *e = gone.ptr;
  rill_variable_clear(&e->var);
  rill_free(e);
  return true;
}

void rill_scope_each(rill_scope *s, void (*fn)(const char *, rill_variable *, void *), void *ctx) {
  for (size_t i = 0; i < s->vars.cap; i++)
    if (s->vars.slots[i].key) fn(s->vars.slots[i].key, &((rill_scope_entry *)s->vars.slots[i].val.ptr)->var, ctx);
}

size_t rill_scope_size(rill_scope *s) { return s->vars.n; }
