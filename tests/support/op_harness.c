#include "support/op_harness.h"

#include <string.h>

#include "framework/base/alloc.h"
#include "framework/exec/device.h"

struct op_harness {
  rill_op_desc desc;
  rill_scope *scope;
  bool shared_scope; /* scope belongs to someone else: not destroyed with the harness */
  struct rill_device_ctx device;
};

void op_harness_set_threads(op_harness *h, int32_t threads) {
  rill_device_ctx_init(&h->device, (rill_place){RILL_DEVICE_CPU, 0}, threads, 1);
}

rill_status *op_harness_create(const char *type, op_harness **out) {
  op_harness *h = rill_calloc(1, sizeof *h);
  if (!h) return rill_oom();
  rill_device_ctx_init(&h->device, (rill_place){RILL_DEVICE_CPU, 0}, 1, 1);
  h->desc.type = rill_strdup(type);
  rill_status *st = h->desc.type ? rill_scope_create(NULL, &h->scope) : rill_oom();
  if (st) {
    rill_free(h->desc.type);
    rill_free(h);
    return st;
  }
  *out = h;
  return NULL;
}

rill_status *op_harness_create_from_desc(const rill_op_desc *desc, rill_scope *shared_scope,
                                        op_harness **out) {
  op_harness *h = rill_calloc(1, sizeof *h);
  if (!h) return rill_oom();
  rill_device_ctx_init(&h->device, (rill_place){RILL_DEVICE_CPU, 0}, 1, 1);
  rill_status *st = rill_op_desc_copy(&h->desc, desc);
  if (st) {
    rill_free(h);
    return st;
  }
  if (shared_scope) {
    h->scope = shared_scope;
    h->shared_scope = true;
  } else if ((st = rill_scope_create(NULL, &h->scope))) {
    h->scope = NULL;
    op_harness_destroy(h);
    return st;
  }
  *out = h;
  return NULL;
}

void op_harness_destroy(op_harness *h) {
  if (!h) return;
  rill_op_desc_clear(&h->desc); /* also frees what a copied desc carries (raw fields) */
  if (!h->shared_scope) rill_scope_destroy(h->scope);
  rill_free(h);
}

static rill_status *add_arg(rill_op_slot **slots, size_t *n, const char *param, const char *name) {
  rill_op_slot *s = NULL;
  for (size_t i = 0; i < *n; i++)
    if (strcmp((*slots)[i].param, param) == 0) s = &(*slots)[i];
  if (!s) {
    rill_op_slot *ns = rill_realloc(*slots, (*n + 1) * sizeof *ns);
    if (!ns) return rill_oom();
    *slots = ns;
    s = &ns[*n];
    memset(s, 0, sizeof *s);
    s->param = rill_strdup(param);
    if (!s->param) return rill_oom();
    (*n)++;
  }
  if (!name) return NULL; /* an empty slot, as Paddle writes `Bias: []` */
  char **args = rill_realloc(s->args, (s->nargs + 1) * sizeof *args);
  if (!args) return rill_oom();
  s->args = args;
  if (!(args[s->nargs] = rill_strdup(name))) return rill_oom();
  s->nargs++;
  return NULL;
}

rill_status *op_harness_input(op_harness *h, const char *slot, const char *name,
                              const rill_tensor *t) {
  RILL_TRY(add_arg(&h->desc.inputs, &h->desc.ninputs, slot, name));
  if (!name || strcmp(name, RILL_EMPTY_VAR) == 0) return NULL;
  rill_variable *v;
  RILL_TRY(rill_scope_var(h->scope, name, &v));
  if (!t) return NULL;
  rill_tensor *dst = rill_variable_tensor(v);
  if (!dst) return rill_error(RILL_INVALID_ARGUMENT, "variable '%s' is not a tensor", name);
  return rill_tensor_copy(dst, t);
}

rill_status *op_harness_output(op_harness *h, const char *slot, const char *name) {
  RILL_TRY(add_arg(&h->desc.outputs, &h->desc.noutputs, slot, name));
  if (!name || strcmp(name, RILL_EMPTY_VAR) == 0) return NULL;
  rill_variable *v;
  return rill_scope_var(h->scope, name, &v);
}

rill_status *op_harness_attr(op_harness *h, const char *name, const rill_attr_value *v) {
  rill_attr_value copy;
  memset(&copy, 0, sizeof copy);
  RILL_TRY(rill_attr_value_copy(&copy, v));
  for (size_t i = 0; i < h->desc.nattrs; i++)
    if (strcmp(h->desc.attrs[i].name, name) == 0) {
      rill_attr_value_clear(&h->desc.attrs[i].value);
      h->desc.attrs[i].value = copy;
      return NULL;
    }
  rill_attr *a = rill_realloc(h->desc.attrs, (h->desc.nattrs + 1) * sizeof *a);
  if (!a) {
    rill_attr_value_clear(&copy);
    return rill_oom();
  }
  h->desc.attrs = a;
  memset(&a[h->desc.nattrs], 0, sizeof *a);
  a[h->desc.nattrs].name = rill_strdup(name);
  if (!a[h->desc.nattrs].name) {
    rill_attr_value_clear(&copy);
    return rill_oom();
  }
  a[h->desc.nattrs].value = copy;
  h->desc.nattrs++;
  return NULL;
}

rill_status *op_harness_attr_int(op_harness *h, const char *name, int32_t v) {
  rill_attr_value a = {.type = RILL_ATTR_INT, .v.i = v};
  return op_harness_attr(h, name, &a);
}
rill_status *op_harness_attr_long(op_harness *h, const char *name, int64_t v) {
  rill_attr_value a = {.type = RILL_ATTR_LONG, .v.l = v};
  return op_harness_attr(h, name, &a);
}
rill_status *op_harness_attr_float(op_harness *h, const char *name, float v) {
  rill_attr_value a = {.type = RILL_ATTR_FLOAT, .v.f = v};
  return op_harness_attr(h, name, &a);
}
rill_status *op_harness_attr_bool(op_harness *h, const char *name, bool v) {
  rill_attr_value a = {.type = RILL_ATTR_BOOLEAN, .v.b = v};
  return op_harness_attr(h, name, &a);
}
rill_status *op_harness_attr_string(op_harness *h, const char *name, const char *v) {
  rill_attr_value a = {.type = RILL_ATTR_STRING, .v.s = (char *)v};
  return op_harness_attr(h, name, &a);
}
rill_status *op_harness_attr_longs(op_harness *h, const char *name, const int64_t *v, size_t n) {
  rill_attr_value a = {.type = RILL_ATTR_LONGS, .n = n, .list.longs = (int64_t *)v};
  return op_harness_attr(h, name, &a);
}
rill_status *op_harness_attr_ints(op_harness *h, const char *name, const int32_t *v, size_t n) {
  rill_attr_value a = {.type = RILL_ATTR_INTS, .n = n, .list.ints = (int32_t *)v};
  return op_harness_attr(h, name, &a);
}

rill_tensor *op_harness_tensor(op_harness *h, const char *name) {
  rill_variable *v = rill_scope_find(h->scope, name);
  return v ? rill_variable_tensor(v) : NULL;
}

rill_scope *op_harness_scope(op_harness *h) { return h->scope; }
const rill_op_desc *op_harness_desc(const op_harness *h) { return &h->desc; }

rill_tensor *op_harness_make(rill_dtype dtype, const int64_t *dims, size_t ndim, const void *data) {
  rill_dims d;
  if (!rill_dims_set(&d, dims, ndim)) return NULL;
  rill_tensor *t = rill_malloc(sizeof *t);
  if (!t) return NULL;
  rill_tensor_init(t);
  rill_status *st = rill_tensor_alloc(t, dtype, &d);
  if (st) {
    rill_status_destroy(st);
    rill_free(t);
    return NULL;
  }
  if (data && rill_tensor_nbytes(t)) memcpy(rill_tensor_ptr(t), data, rill_tensor_nbytes(t));
  return t;
}

void op_harness_free_tensor(rill_tensor *t) {
  if (!t) return;
  rill_tensor_clear(t);
  rill_free(t);
}

/* Everything one run needs, per slot. */
typedef struct run_state {
  const rill_op_schema *schema;
  rill_attr_value *attrs;
  size_t *nin, *nout;
  rill_variable ***in, ***out;
  rill_tensor_meta **in_meta, **out_meta;
  const rill_tensor ***in_tensors;
  const char ***in_names, ***out_names;
} run_state;

static void run_state_free(run_state *r) {
  const rill_op_schema *s = r->schema;
  if (!s) return;
  for (size_t i = 0; i < s->ninputs; i++) {
    if (r->in) rill_free(r->in[i]);
    if (r->in_meta) rill_free(r->in_meta[i]);
    if (r->in_tensors) rill_free(r->in_tensors[i]);
    if (r->in_names) rill_free(r->in_names[i]);
  }
  for (size_t i = 0; i < s->noutputs; i++) {
    if (r->out) rill_free(r->out[i]);
    if (r->out_meta) rill_free(r->out_meta[i]);
    if (r->out_names) rill_free(r->out_names[i]);
  }
  rill_free(r->in);
  rill_free(r->in_meta);
  rill_free(r->in_tensors);
  rill_free(r->in_names);
  rill_free(r->out);
  rill_free(r->out_meta);
  rill_free(r->out_names);
  rill_free(r->nin);
  rill_free(r->nout);
  if (r->attrs) rill_attrs_clear(r->attrs, s->nattrs);
  rill_free(r->attrs);
}

static const rill_op_slot *find_slot(const rill_op_slot *slots, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(slots[i].param, name) == 0) return &slots[i];
  return NULL;
}

#define ALLOC_N(p, n)                                                                     \
  do {                                                                                    \
    (p) = rill_calloc((n) ? (n) : 1, sizeof *(p));                                        \
    if (!(p)) return rill_oom();                                                          \
  } while (0)

static rill_status *prepare(op_harness *h, run_state *r) {
  memset(r, 0, sizeof *r);
  RILL_TRY(rill_registry_init());
  const rill_op_schema *s = rill_schema_find(h->desc.type);
  if (!s) return rill_error(RILL_NOT_FOUND, "op '%s' has no schema", h->desc.type);
  for (size_t i = 0; i < h->desc.ninputs; i++)
    if (rill_schema_input_index(s, h->desc.inputs[i].param) < 0)
      return rill_error(RILL_INVALID_ARGUMENT, "op '%s': unknown input slot '%s'", s->type,
                        h->desc.inputs[i].param);
  for (size_t i = 0; i < h->desc.noutputs; i++)
    if (rill_schema_output_index(s, h->desc.outputs[i].param) < 0)
      return rill_error(RILL_INVALID_ARGUMENT, "op '%s': unknown output slot '%s'", s->type,
                        h->desc.outputs[i].param);
  r->schema = s;
  ALLOC_N(r->attrs, s->nattrs);
  rill_status *st = rill_resolve_attrs(s, &h->desc, r->attrs);
  if (st) {
    rill_free(r->attrs);
    r->attrs = NULL;
    return st;
  }
  ALLOC_N(r->nin, s->ninputs);
  ALLOC_N(r->in, s->ninputs);
  ALLOC_N(r->in_meta, s->ninputs);
  ALLOC_N(r->in_tensors, s->ninputs);
  ALLOC_N(r->in_names, s->ninputs);
  ALLOC_N(r->nout, s->noutputs);
  ALLOC_N(r->out, s->noutputs);
  ALLOC_N(r->out_meta, s->noutputs);
  ALLOC_N(r->out_names, s->noutputs);
  for (size_t i = 0; i < s->ninputs; i++) {
    const rill_op_slot *slot = find_slot(h->desc.inputs, h->desc.ninputs, s->inputs[i].name);
    size_t n = slot ? slot->nargs : 0;
    r->nin[i] = n;
    ALLOC_N(r->in[i], n);
    ALLOC_N(r->in_meta[i], n);
    ALLOC_N(r->in_tensors[i], n);
    ALLOC_N(r->in_names[i], n);
    for (size_t j = 0; j < n; j++) {
      rill_tensor_meta *m = &r->in_meta[i][j];
      m->lod_from[0] = m->lod_from[1] = -1;
      r->in_names[i][j] = slot->args[j];
      if (strcmp(slot->args[j], RILL_EMPTY_VAR) == 0) continue; /* absent, as the executor */
      RILL_TRY(rill_scope_var(h->scope, slot->args[j], &r->in[i][j]));
      rill_variable *v = r->in[i][j];
      if (v->kind == RILL_VARKIND_TENSOR && rill_tensor_is_set(&v->u.tensor)) {
        m->dtype = v->u.tensor.dtype;
        m->dims = v->u.tensor.dims;
        m->lod_level = (int32_t)v->u.tensor.lod.nlevels;
        m->known = true;
        r->in_tensors[i][j] = &v->u.tensor;
      }
    }
  }
  for (size_t i = 0; i < s->noutputs; i++) {
    const rill_op_slot *slot = find_slot(h->desc.outputs, h->desc.noutputs, s->outputs[i].name);
    size_t n = slot ? slot->nargs : 0;
    r->nout[i] = n;
    ALLOC_N(r->out[i], n);
    ALLOC_N(r->out_meta[i], n);
    ALLOC_N(r->out_names[i], n);
    for (size_t j = 0; j < n; j++) {
      r->out_names[i][j] = slot->args[j];
      r->out_meta[i][j].lod_from[0] = r->out_meta[i][j].lod_from[1] = -1;
      if (strcmp(slot->args[j], RILL_EMPTY_VAR) == 0) continue; /* absent: kernel sees NULL */
      RILL_TRY(rill_scope_var(h->scope, slot->args[j], &r->out[i][j]));
    }
  }
  return NULL;
}

static rill_status *infer(run_state *r) {
  if (!r->schema->infer) return NULL;
  rill_infer_ctx ic = {
      .schema = r->schema,
      .attrs = r->attrs,
      .nin = r->nin,
      .in = (const rill_tensor_meta *const *)r->in_meta,
      .nout = r->nout,
      .out = r->out_meta,
      .in_tensors = (const rill_tensor *const *const *)r->in_tensors,
      .in_names = (const char *const *const *)r->in_names,
      .out_names = (const char *const *const *)r->out_names,
  };
  return r->schema->infer(&ic);
}

rill_status *op_harness_infer(op_harness *h) {
  run_state r;
  rill_status *st = prepare(h, &r);
  if (!st) st = infer(&r);
  run_state_free(&r);
  return st;
}

static rill_status *run(op_harness *h, run_state *r) {
  RILL_TRY(prepare(h, r));
  RILL_TRY(infer(r));
  const rill_op_schema *s = r->schema;
  if (!(s->flags & RILL_OP_KERNEL_SHAPES))
    for (size_t i = 0; i < s->noutputs; i++)
      for (size_t j = 0; j < r->nout[i]; j++) {
        const rill_tensor_meta *m = &r->out_meta[i][j];
        if (!m->known || !r->out[i][j]) continue;
        rill_tensor *t = rill_variable_tensor(r->out[i][j]);
        if (!t)
          return rill_error(RILL_INVALID_ARGUMENT, "op '%s': output %s (%s) is not a tensor",
                            s->type, s->outputs[i].name, r->out_names[i][j]);
        const rill_tensor *from = NULL;
        if (m->lod_from[0] >= 0 && (size_t)m->lod_from[0] < s->ninputs &&
            (size_t)m->lod_from[1] < r->nin[m->lod_from[0]])
          from = r->in_tensors[m->lod_from[0]][m->lod_from[1]];
        if (from && from != t) RILL_TRY(rill_lod_copy(&t->lod, &from->lod));
        if (!from) rill_lod_clear(&t->lod);
        RILL_TRY(rill_tensor_alloc(t, m->dtype, &m->dims));
      }
  rill_dtype dt = RILL_KERNEL_ANY_DTYPE;
  if (s->kernel_dtype_slot >= 0) {
    rill_variable *dv = r->nin[s->kernel_dtype_slot] ? r->in[s->kernel_dtype_slot][0] : NULL;
    if (r->nin[s->kernel_dtype_slot] && r->in_tensors[s->kernel_dtype_slot][0])
      dt = r->in_tensors[s->kernel_dtype_slot][0]->dtype;
    else if (dv && dv->kind == RILL_VARKIND_SELECTED_ROWS && rill_tensor_is_set(&dv->u.rows.value))
      dt = dv->u.rows.value.dtype; /* as the executor: the values' dtype */
  } else if (s->dtype_attr >= 0) {
    dt = (rill_dtype)r->attrs[s->dtype_attr].v.i;
  }
  rill_kernel_fn fn = rill_kernel_find(s->type, RILL_DEVICE_CPU, dt);
  if (!fn)
    return rill_error(RILL_NOT_FOUND, "op '%s' has no CPU kernel for %s", s->type,
                      dt == RILL_KERNEL_ANY_DTYPE ? "any dtype" : rill_dtype_name(dt));
  rill_kernel_ctx kc = {
      .schema = s,
      .attrs = r->attrs,
      .nin = r->nin,
      .in = (rill_variable *const *const *)r->in,
      .nout = r->nout,
      .out = (rill_variable *const *const *)r->out,
      .in_names = (const char *const *const *)r->in_names,
      .out_names = (const char *const *const *)r->out_names,
      .dev = &h->device.services,
      .scope = h->scope,
  };
  return fn(&kc);
}

rill_status *op_harness_run(op_harness *h) {
  run_state r;
  rill_status *st = run(h, &r);
  run_state_free(&r);
  return st;
}
