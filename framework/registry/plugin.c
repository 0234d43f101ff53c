/* Operator plugins: the public registration API (rill.h, "op plugins") over the
 * registry. A plugin's descriptions are checked and deep-copied into internal schemas
 * while its init function runs; the registry receives them all at once afterwards.
 * Infer, kernels and the gradient maker of a plugin op are trampolines that find the
 * plugin's callbacks through the schema (the first member of plugin_op). */
#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "framework/base/alloc.h"
#include "framework/registry/registry.h"

_Static_assert(RILL_PLUGIN_SLOT_DUPLICABLE == RILL_SLOT_DUPLICABLE, "slot flag");
_Static_assert(RILL_PLUGIN_SLOT_DISPENSABLE == RILL_SLOT_DISPENSABLE, "slot flag");
_Static_assert(RILL_PLUGIN_SLOT_NO_GRAD == RILL_SLOT_NO_GRAD, "slot flag");
_Static_assert(RILL_PLUGIN_SLOT_INTERMEDIATE == RILL_SLOT_INTERMEDIATE, "slot flag");

#define SLOT_FLAGS_ALL 15u
#define OP_FLAGS_ALL (RILL_PLUGIN_OP_BLOCKING | RILL_PLUGIN_OP_SIDE_EFFECT | RILL_PLUGIN_OP_RANDOM)

typedef struct plugin_kernel {
  rill_device device;
  rill_dtype dtype;
  rill_plugin_kernel_fn fn;
  void *user;
} plugin_kernel;

typedef struct plugin_op {
  rill_op_schema schema; /* first: ctx->schema points here */
  rill_plugin_infer_fn infer;
  void *user;
  char *grad_op;
  const char *library; /* owned by the plugin record */
  plugin_kernel *kernels;
  size_t nkernels;
} plugin_op;

struct rill_plugin {
  char *name;
  void *handle;             /* dlopen handle, NULL for rill_register_op_library */
  struct rill_plugin *next; /* the list of registered libraries */
  plugin_op **ops;
  size_t nops, capops;
  rill_kernel_def *kernels;
  size_t nkernels, capkernels;
};

struct rill_op_context {
  const rill_infer_ctx *infer; /* exactly one of the two is set */
  const rill_kernel_ctx *kernel;
};

/* Libraries whose ops are registered stay open and are kept here (never unloaded):
 * their records own the names and copies the registry points into. Linked through the
 * records themselves, so keeping one allocates nothing that could fail after commit. */
static struct {
  pthread_mutex_t lock;
  rill_plugin *head;
} loaded = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* ---- freeing ---- */

static void free_slots(rill_slot_schema *s, size_t n) {
  for (size_t i = 0; s && i < n; i++) {
    rill_free((char *)s[i].name);
    rill_free((char *)s[i].doc);
  }
  rill_free(s);
}

static void free_op(plugin_op *p) {
  if (!p) return;
  rill_free((char *)p->schema.type);
  rill_free((char *)p->schema.doc);
  free_slots((rill_slot_schema *)p->schema.inputs, p->schema.ninputs);
  free_slots((rill_slot_schema *)p->schema.outputs, p->schema.noutputs);
  rill_attr_schema *a = (rill_attr_schema *)p->schema.attrs;
  for (size_t i = 0; a && i < p->schema.nattrs; i++) {
    rill_free((char *)a[i].name);
    rill_free((char *)a[i].doc);
    rill_attr_value_clear(&a[i].def);
  }
  rill_free(a);
  rill_free(p->grad_op);
  rill_free(p->kernels);
  rill_free(p);
}

static void plugin_free(rill_plugin *pl) {
  if (!pl) return;
  for (size_t i = 0; i < pl->nops; i++) free_op(pl->ops[i]);
  rill_free(pl->ops);
  rill_free(pl->kernels);
  rill_free(pl->name);
  rill_free(pl);
}

/* ---- trampolines ---- */

static rill_status *plugin_infer(rill_infer_ctx *ctx) {
  const plugin_op *p = (const plugin_op *)ctx->schema;
  rill_op_context c = {.infer = ctx};
  /* Outputs the callback leaves alone stay unknown, never uninitialised. */
  for (size_t s = 0; s < ctx->schema->noutputs; s++)
    for (size_t i = 0; i < ctx->nout[s]; i++) {
      ctx->out[s][i].known = false;
      ctx->out[s][i].lod_from[0] = ctx->out[s][i].lod_from[1] = -1;
    }
  return p->infer(&c, p->user);
}

static rill_dtype context_dtype(const rill_kernel_ctx *ctx) {
  const rill_op_schema *s = ctx->schema;
  if (s->kernel_dtype_slot >= 0) {
    rill_tensor *t = rill_kin(ctx, (size_t)s->kernel_dtype_slot, 0);
    if (t) return t->dtype;
  } else if (s->dtype_attr >= 0 && ctx->attrs[s->dtype_attr].type == RILL_ATTR_INT) {
    return (rill_dtype)ctx->attrs[s->dtype_attr].v.i;
  }
  return RILL_DTYPE_FP32;
}

static rill_status *plugin_kernel_call(rill_kernel_ctx *ctx, rill_device device) {
  const plugin_op *p = (const plugin_op *)ctx->schema;
  rill_dtype dt = context_dtype(ctx);
  for (size_t i = 0; i < p->nkernels; i++)
    if (p->kernels[i].dtype == dt && p->kernels[i].device == device) {
      rill_op_context c = {.kernel = ctx};
      return p->kernels[i].fn(&c, p->kernels[i].user);
    }
  return rill_error(RILL_UNIMPLEMENTED, "op '%s' (from %s) has no kernel for %s",
                    p->schema.type, p->library, rill_dtype_name(dt));
}

/* The registry's entry for a plugin kernel: one per device kind, since the registry
 * looks kernels up by (op, device kind, dtype) and the trampoline must find the same. */
static rill_status *plugin_kernel_run_cpu(rill_kernel_ctx *ctx) {
  return plugin_kernel_call(ctx, RILL_DEVICE_CPU);
}
static rill_status *plugin_kernel_run_cuda(rill_kernel_ctx *ctx) {
  return plugin_kernel_call(ctx, RILL_DEVICE_CUDA);
}
_Static_assert(RILL_DEVICE_COUNT == 2, "a plugin kernel trampoline per device kind");
static const rill_kernel_fn plugin_kernel_runs[RILL_DEVICE_COUNT] = {
    [RILL_DEVICE_CPU] = plugin_kernel_run_cpu,
    [RILL_DEVICE_CUDA] = plugin_kernel_run_cuda,
};

/* Paddle's default layout, kept to the slots the gradient op declares. */
static bool declares(const rill_slot_schema *slots, size_t n, const char *name, const char *suffix) {
  size_t ln = strlen(name);
  for (size_t i = 0; i < n; i++)
    if (strncmp(slots[i].name, name, ln) == 0 && strcmp(slots[i].name + ln, suffix) == 0) return true;
  return false;
}

static rill_status *plugin_grad(rill_grad_ctx *ctx) {
  const plugin_op *p = (const plugin_op *)ctx->schema;
  const rill_op_schema *s = ctx->schema;
  const rill_op_schema *g = rill_schema_find(p->grad_op);
  if (!g)
    return rill_error(RILL_NOT_FOUND, "op '%s' (from %s): its gradient op '%s' is not registered",
                      s->type, p->library, p->grad_op);
  bool any = false;
  for (size_t i = 0; i < s->ninputs && !any; i++)
    if (!(s->inputs[i].flags & RILL_SLOT_NO_GRAD) &&
        declares(g->outputs, g->noutputs, s->inputs[i].name, RILL_GRAD_SUFFIX))
      any = !rill_grad_none_wanted(ctx, s->inputs[i].name);
  if (!any) return NULL;
  rill_op_desc *op;
  RILL_TRY(rill_grad_begin(ctx, p->grad_op, &op));
  for (size_t i = 0; i < s->ninputs; i++)
    if (declares(g->inputs, g->ninputs, s->inputs[i].name, ""))
      RILL_TRY(rill_grad_forward(ctx, op, s->inputs[i].name));
  for (size_t i = 0; i < s->noutputs; i++) {
    if (declares(g->inputs, g->ninputs, s->outputs[i].name, ""))
      RILL_TRY(rill_grad_forward(ctx, op, s->outputs[i].name));
    if (declares(g->inputs, g->ninputs, s->outputs[i].name, RILL_GRAD_SUFFIX))
      RILL_TRY(rill_grad_of_output(ctx, op, s->outputs[i].name));
  }
  for (size_t i = 0; i < s->ninputs; i++)
    if (!(s->inputs[i].flags & RILL_SLOT_NO_GRAD) &&
        declares(g->outputs, g->noutputs, s->inputs[i].name, RILL_GRAD_SUFFIX))
      RILL_TRY(rill_grad_of_input(ctx, op, s->inputs[i].name));
  return NULL;
}

/* ---- checking and copying descriptions ---- */

static bool valid_name(const char *s) {
  if (!s || !*s || strlen(s) > 200) return false;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
          *s == '_' || *s == '.' || *s == '@'))
      return false;
  return true;
}

static rill_status *bad(const rill_plugin *pl, const char *op, const char *fmt, ...)
    RILL_PRINTF(3, 4);
static rill_status *bad(const rill_plugin *pl, const char *op, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return rill_error(RILL_INVALID_ARGUMENT, "op library '%s': op '%s': %s", pl->name,
                    op ? op : "(null)", buf);
}

static char *dup_or_null(const char *s, bool *oom) {
  if (!s) return NULL;
  char *d = rill_strdup(s);
  if (!d) *oom = true;
  return d;
}

static rill_status *copy_slots(const rill_plugin *pl, const rill_plugin_op *d, bool inputs,
                               rill_slot_schema **out) {
  const rill_plugin_slot *src = inputs ? d->inputs : d->outputs;
  size_t n = inputs ? d->ninputs : d->noutputs;
  const char *side = inputs ? "input" : "output";
  *out = NULL;
  if (n && !src) return bad(pl, d->type, "%zu %ss but no %s array", n, side, side);
  if (n > 64) return bad(pl, d->type, "%zu %s slots (at most 64)", n, side);
  for (size_t i = 0; i < n; i++) {
    if (!valid_name(src[i].name))
      return bad(pl, d->type, "%s slot #%zu has no valid name", side, i);
    if (src[i].flags & ~SLOT_FLAGS_ALL)
      return bad(pl, d->type, "%s slot '%s' has unknown flags 0x%x", side, src[i].name,
                 (unsigned)src[i].flags);
    for (size_t j = 0; j < i; j++)
      if (strcmp(src[i].name, src[j].name) == 0)
        return bad(pl, d->type, "%s slot '%s' is declared twice", side, src[i].name);
  }
  if (!n) return NULL;
  rill_slot_schema *s = rill_calloc(n, sizeof *s);
  if (!s) return rill_oom();
  bool oom = false;
  for (size_t i = 0; i < n; i++) {
    s[i].name = dup_or_null(src[i].name, &oom);
    s[i].doc = dup_or_null(src[i].doc, &oom);
    s[i].flags = src[i].flags;
  }
  *out = s;
  return oom ? rill_oom() : NULL;
}

static size_t elem_size(rill_plugin_attr_type t) {
  switch (t) {
  case RILL_PLUGIN_ATTR_INTS: return sizeof(int32_t);
  case RILL_PLUGIN_ATTR_FLOATS: return sizeof(float);
  case RILL_PLUGIN_ATTR_STRINGS: return sizeof(char *);
  case RILL_PLUGIN_ATTR_BOOLEANS: return sizeof(bool);
  case RILL_PLUGIN_ATTR_LONGS: return sizeof(int64_t);
  default: return 0;
  }
}

static rill_status *attr_default(const rill_plugin *pl, const char *op, const rill_plugin_attr *a,
                                 rill_attr_value *v) {
  memset(v, 0, sizeof *v);
  v->type = (rill_attr_type)a->type;
  switch (a->type) {
  case RILL_PLUGIN_ATTR_INT:
    if (a->def_int < INT32_MIN || a->def_int > INT32_MAX)
      return bad(pl, op, "default of INT attribute '%s' does not fit in 32 bits", a->name);
    v->v.i = (int32_t)a->def_int;
    return NULL;
  case RILL_PLUGIN_ATTR_BLOCK:
    if (a->def_int < 0 || a->def_int > INT32_MAX)
      return bad(pl, op, "default of BLOCK attribute '%s' is not a block index", a->name);
    v->v.block = (int32_t)a->def_int;
    return NULL;
  case RILL_PLUGIN_ATTR_LONG: v->v.l = a->def_int; return NULL;
  case RILL_PLUGIN_ATTR_BOOLEAN: v->v.b = a->def_int != 0; return NULL;
  case RILL_PLUGIN_ATTR_FLOAT: v->v.f = (float)a->def_float; return NULL;
  case RILL_PLUGIN_ATTR_FLOAT64: v->v.f64 = a->def_float; return NULL;
  case RILL_PLUGIN_ATTR_STRING:
    v->v.s = rill_strdup(a->def_string ? a->def_string : "");
    return v->v.s ? NULL : rill_oom();
  default: break;
  }
  size_t es = elem_size(a->type);
  if (!es) return bad(pl, op, "attribute '%s' has unsupported type %d", a->name, (int)a->type);
  if (a->def_count && !a->def_list)
    return bad(pl, op, "attribute '%s': def_count is %zu but def_list is NULL", a->name, a->def_count);
  if (a->def_count > (1u << 20))
    return bad(pl, op, "attribute '%s': default list of %zu items", a->name, a->def_count);
  if (a->type == RILL_PLUGIN_ATTR_STRINGS)
    for (size_t i = 0; i < a->def_count; i++)
      if (!((const char *const *)a->def_list)[i])
        return bad(pl, op, "attribute '%s': default string #%zu is NULL", a->name, i);
  if (!a->def_count) return NULL;
  void *items = rill_calloc(a->def_count, es);
  if (!items) return rill_oom();
  v->list.ptr = items;
  v->n = a->def_count;
  if (a->type != RILL_PLUGIN_ATTR_STRINGS) {
    memcpy(items, a->def_list, a->def_count * es);
    return NULL;
  }
  for (size_t i = 0; i < a->def_count; i++)
    if (!(v->list.strings[i] = rill_strdup(((const char *const *)a->def_list)[i]))) return rill_oom();
  return NULL;
}

static rill_status *copy_op(const rill_plugin *pl, const rill_plugin_op *d, plugin_op **out) {
  if (d->api_version != RILL_PLUGIN_API_VERSION)
    return rill_error(RILL_FAILED_PRECONDITION,
                      "op library '%s': op '%s' was built for plugin API version %u; this rill "
                      "has version %u (rebuild the plugin against this rill.h)",
                      pl->name, d->type ? d->type : "(null)", (unsigned)d->api_version,
                      RILL_PLUGIN_API_VERSION);
  if (!valid_name(d->type))
    return bad(pl, d->type, "the op type must be a non-empty name of letters, digits, '_' and '.'");
  if (!d->infer) return bad(pl, d->type, "no infer function (every op sizes its outputs)");
  if (d->flags & ~OP_FLAGS_ALL) return bad(pl, d->type, "unknown op flags 0x%x", (unsigned)d->flags);
  if (d->kernel_dtype_input < -1 || (d->kernel_dtype_input >= 0 && (size_t)d->kernel_dtype_input >= d->ninputs))
    return bad(pl, d->type, "kernel_dtype_input %d is not an input slot (it has %zu)",
               (int)d->kernel_dtype_input, d->ninputs);
  if (d->grad_op && !valid_name(d->grad_op)) return bad(pl, d->type, "grad_op is not a valid op name");
  if (d->nattrs && !d->attrs) return bad(pl, d->type, "%zu attributes but no attrs array", d->nattrs);
  if (d->nattrs > 256) return bad(pl, d->type, "%zu attributes (at most 256)", d->nattrs);
  for (size_t i = 0; i < d->nattrs; i++) {
    if (!valid_name(d->attrs[i].name)) return bad(pl, d->type, "attribute #%zu has no valid name", i);
    for (size_t j = 0; j < i; j++)
      if (strcmp(d->attrs[i].name, d->attrs[j].name) == 0)
        return bad(pl, d->type, "attribute '%s' is declared twice", d->attrs[i].name);
  }
  int dtype_attr = -1;
  if (d->kernel_dtype_input < 0 && d->dtype_attr) {
    for (size_t i = 0; i < d->nattrs; i++)
      if (strcmp(d->attrs[i].name, d->dtype_attr) == 0) dtype_attr = (int)i;
    if (dtype_attr < 0 || d->attrs[dtype_attr].type != RILL_PLUGIN_ATTR_INT)
      return bad(pl, d->type, "dtype_attr '%s' is not an INT attribute of the op", d->dtype_attr);
  }

  plugin_op *p = rill_calloc(1, sizeof *p);
  if (!p) return rill_oom();
  bool oom = false;
  rill_status *st = NULL;
  p->schema.type = dup_or_null(d->type, &oom);
  p->schema.doc = dup_or_null(d->doc, &oom);
  p->grad_op = dup_or_null(d->grad_op, &oom);
  p->infer = d->infer;
  p->user = d->user;
  p->library = pl->name;
  p->schema.flags = (d->flags & RILL_PLUGIN_OP_BLOCKING ? RILL_OP_BLOCKING : 0) |
                    (d->flags & RILL_PLUGIN_OP_SIDE_EFFECT ? RILL_OP_SIDE_EFFECT : 0) |
                    (d->flags & RILL_PLUGIN_OP_RANDOM ? RILL_OP_RANDOM : 0);
  p->schema.infer = plugin_infer;
  p->schema.grad = d->grad_op ? plugin_grad : NULL;
  p->schema.kernel_dtype_slot = d->kernel_dtype_input;
  p->schema.dtype_attr = dtype_attr;
  rill_slot_schema *ins = NULL, *outs = NULL;
  st = copy_slots(pl, d, true, &ins);
  p->schema.inputs = ins;
  p->schema.ninputs = ins ? d->ninputs : 0;
  if (!st) {
    st = copy_slots(pl, d, false, &outs);
    p->schema.outputs = outs;
    p->schema.noutputs = outs ? d->noutputs : 0;
  }
  if (!st && d->nattrs) {
    rill_attr_schema *a = rill_calloc(d->nattrs, sizeof *a);
    if (!a) st = rill_oom();
    p->schema.attrs = a;
    for (size_t i = 0; a && i < d->nattrs && !st; i++) {
      p->schema.nattrs = i + 1;
      a[i].name = dup_or_null(d->attrs[i].name, &oom);
      a[i].doc = dup_or_null(d->attrs[i].doc, &oom);
      a[i].type = (rill_attr_type)d->attrs[i].type;
      a[i].flags = d->attrs[i].required ? RILL_ATTR_REQUIRED : 0;
      st = attr_default(pl, d->type, &d->attrs[i], &a[i].def);
    }
  }
  if (!st && oom) st = rill_oom();
  if (st) {
    free_op(p);
    return st;
  }
  *out = p;
  return NULL;
}

/* ---- public: registration ---- */

rill_status *rill_plugin_add_op(rill_plugin *pl, const rill_plugin_op *d) {
  if (!pl || !d) return rill_error(RILL_INVALID_ARGUMENT, "rill_plugin_add_op: NULL argument");
  plugin_op *p = NULL;
  RILL_TRY(copy_op(pl, d, &p));
  for (size_t i = 0; i < pl->nops; i++)
    if (strcmp(pl->ops[i]->schema.type, p->schema.type) == 0) {
      free_op(p);
      return rill_error(RILL_ALREADY_EXISTS, "op library '%s': op '%s' is added twice", pl->name,
                        d->type);
    }
  if (rill_schema_find(p->schema.type)) {
    free_op(p);
    return rill_error(RILL_ALREADY_EXISTS,
                      "op library '%s': op '%s' is already registered (built in or by another "
                      "library)", pl->name, d->type);
  }
  void *ops = pl->ops;
  if (!rill_grow(&ops, &pl->capops, pl->nops + 1, sizeof *pl->ops)) {
    free_op(p);
    return rill_oom();
  }
  pl->ops = ops;
  pl->ops[pl->nops++] = p;
  return NULL;
}

rill_status *rill_plugin_add_kernel(rill_plugin *pl, const rill_plugin_kernel *k) {
  if (!pl || !k) return rill_error(RILL_INVALID_ARGUMENT, "rill_plugin_add_kernel: NULL argument");
  const char *op = k->op ? k->op : "(null)";
  if (k->api_version != RILL_PLUGIN_API_VERSION)
    return rill_error(RILL_FAILED_PRECONDITION,
                      "op library '%s': kernel of op '%s' was built for plugin API version %u; "
                      "this rill has version %u (rebuild the plugin against this rill.h)",
                      pl->name, op, (unsigned)k->api_version, RILL_PLUGIN_API_VERSION);
  if (!k->fn) return bad(pl, op, "kernel without a function");
  /* Whether the device kind has a backend is checked when the library is committed. */
  if ((unsigned)k->device >= RILL_DEVICE_COUNT) return bad(pl, op, "kernel for unknown device kind %d", (int)k->device);
  if ((unsigned)k->dtype >= RILL_DTYPE_COUNT || rill_dtype_size(k->dtype) == 0)
    return bad(pl, op, "kernel for invalid dtype %d", (int)k->dtype);
  plugin_op *p = NULL;
  for (size_t i = 0; i < pl->nops && !p; i++)
    if (k->op && strcmp(pl->ops[i]->schema.type, k->op) == 0) p = pl->ops[i];
  if (!p)
    return rill_error(RILL_NOT_FOUND,
                      "op library '%s': kernel for op '%s', which this library has not added "
                      "(add the op first; a plugin adds kernels to its own ops only)",
                      pl->name, op);
  for (size_t i = 0; i < p->nkernels; i++)
    if (p->kernels[i].dtype == k->dtype && p->kernels[i].device == k->device) {
      char place[RILL_PLACE_STR_MAX];
      return rill_error(RILL_ALREADY_EXISTS, "op library '%s': op '%s' gets two %s kernels for %s",
                        pl->name, op, rill_dtype_name(k->dtype),
                        rill_place_str((rill_place){k->device, 0}, place, sizeof place));
    }
  plugin_kernel *ks = rill_realloc(p->kernels, (p->nkernels + 1) * sizeof *ks);
  if (!ks) return rill_oom();
  p->kernels = ks;
  void *defs = pl->kernels;
  if (!rill_grow(&defs, &pl->capkernels, pl->nkernels + 1, sizeof *pl->kernels)) return rill_oom();
  pl->kernels = defs;
  ks[p->nkernels++] = (plugin_kernel){k->device, k->dtype, k->fn, k->user};
  pl->kernels[pl->nkernels++] =
      (rill_kernel_def){p->schema.type, k->device, k->dtype, plugin_kernel_runs[k->device], NULL};
  return NULL;
}

const char *rill_plugin_name(const rill_plugin *pl) { return pl ? pl->name : NULL; }

/* Runs `init` and commits what it added; `handle` (may be NULL) is kept open on success. */
static rill_status *register_library(const char *name, rill_plugin_init_fn init, void *handle) {
  rill_plugin *pl = rill_calloc(1, sizeof *pl);
  if (!pl || !(pl->name = rill_strdup(name))) {
    rill_free(pl);
    return rill_oom();
  }
  rill_status *st = init(pl);
  /* Errors of rill_plugin_add_* name the library already; the plugin's own may not. */
  if (st && !strstr(rill_status_message(st), name))
    st = rill_status_wrap(st, "op library '%s': init failed", name);
  if (!st && pl->nops == 0) st = rill_error(RILL_INVALID_ARGUMENT, "op library '%s' adds no ops", name);
  const rill_op_schema **schemas = NULL;
  if (!st && !(schemas = rill_calloc(pl->nops, sizeof *schemas))) st = rill_oom();
  for (size_t i = 0; !st && i < pl->nops; i++) schemas[i] = &pl->ops[i]->schema;
  pthread_mutex_lock(&loaded.lock);
  if (!st) {
    st = rill_registry_add_batch(schemas, pl->nops, pl->kernels, pl->nkernels);
    if (st) st = rill_status_wrap(st, "op library '%s'", name);
  }
  if (!st) {
    pl->handle = handle;
    pl->next = loaded.head;
    loaded.head = pl;
  }
  pthread_mutex_unlock(&loaded.lock);
  rill_free(schemas);
  if (st) plugin_free(pl);
  return st;
}

rill_status *rill_register_op_library(const char *name, rill_plugin_init_fn init) {
  if (!name || !init) return rill_error(RILL_INVALID_ARGUMENT, "rill_register_op_library: NULL argument");
  return register_library(name, init, NULL);
}

rill_status *rill_load_op_library(const char *path) {
  if (!path || !*path) return rill_error(RILL_INVALID_ARGUMENT, "rill_load_op_library: no path");
  struct stat sb;
  if (stat(path, &sb) != 0)
    return rill_error(RILL_NOT_FOUND, "op library '%s': no such file", path);
  if (!S_ISREG(sb.st_mode))
    return rill_error(RILL_INVALID_ARGUMENT, "op library '%s': not a regular file", path);
  /* dlopen searches the library path for a bare name; "./" keeps it to the file named. */
  char buf[4096];
  const char *open_path = path;
  if (!strchr(path, '/')) {
    if ((size_t)snprintf(buf, sizeof buf, "./%s", path) >= sizeof buf)
      return rill_error(RILL_INVALID_ARGUMENT, "op library '%s': path too long", path);
    open_path = buf;
  }
  void *h = dlopen(open_path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *why = dlerror();
    return rill_error(RILL_IO, "op library '%s': cannot load it: %s", path, why ? why : "dlopen failed");
  }
  dlerror();
  void *sym = dlsym(h, RILL_PLUGIN_INIT_SYMBOL);
  if (!sym) {
    dlclose(h);
    return rill_error(RILL_NOT_FOUND,
                      "op library '%s' does not export %s (a plugin defines "
                      "'rill_status *rill_plugin_init(rill_plugin *)')",
                      path, RILL_PLUGIN_INIT_SYMBOL);
  }
  rill_plugin_init_fn init;
  memcpy(&init, &sym, sizeof init);
  rill_status *st = register_library(path, init, h);
  if (st) dlclose(h);
  return st;
}

/* ---- public: op contexts ---- */

static const rill_op_schema *ctx_schema(const rill_op_context *c) {
  return c->infer ? c->infer->schema : c->kernel->schema;
}
static const rill_attr_value *ctx_attrs(const rill_op_context *c) {
  return c->infer ? c->infer->attrs : c->kernel->attrs;
}

const char *rill_op_context_op_type(const rill_op_context *c) {
  return c ? ctx_schema(c)->type : NULL;
}

size_t rill_op_context_num_inputs(const rill_op_context *c, size_t slot) {
  if (!c || slot >= ctx_schema(c)->ninputs) return 0;
  return c->infer ? c->infer->nin[slot] : c->kernel->nin[slot];
}

size_t rill_op_context_num_outputs(const rill_op_context *c, size_t slot) {
  if (!c || slot >= ctx_schema(c)->noutputs) return 0;
  return c->infer ? c->infer->nout[slot] : c->kernel->nout[slot];
}

const char *rill_op_context_input_name(const rill_op_context *c, size_t slot, size_t i) {
  if (i >= rill_op_context_num_inputs(c, slot)) return NULL;
  const char *const *const *names = c->infer ? c->infer->in_names : c->kernel->in_names;
  return names ? names[slot][i] : NULL;
}

const char *rill_op_context_output_name(const rill_op_context *c, size_t slot, size_t i) {
  if (i >= rill_op_context_num_outputs(c, slot)) return NULL;
  const char *const *const *names = c->infer ? c->infer->out_names : c->kernel->out_names;
  return names ? names[slot][i] : NULL;
}

static rill_status *find_attr(const rill_op_context *c, const char *name, const rill_attr_value **v) {
  if (!c || !name) return rill_error(RILL_INVALID_ARGUMENT, "attribute lookup: NULL argument");
  const rill_op_schema *s = ctx_schema(c);
  int at = rill_schema_attr_index(s, name);
  if (at < 0) return rill_error(RILL_NOT_FOUND, "op '%s' declares no attribute '%s'", s->type, name);
  *v = &ctx_attrs(c)[at];
  return NULL;
}

static rill_status *wrong_type(const rill_op_context *c, const char *name, const rill_attr_value *v,
                               const char *want) {
  return rill_error(RILL_INVALID_ARGUMENT, "op '%s': attribute '%s' is %s, read as %s",
                    ctx_schema(c)->type, name, rill_attr_type_name(v->type), want);
}

rill_status *rill_op_context_attr_int(const rill_op_context *c, const char *name, int64_t *out) {
  const rill_attr_value *v;
  RILL_TRY(find_attr(c, name, &v));
  switch (v->type) {
  case RILL_ATTR_INT: *out = v->v.i; return NULL;
  case RILL_ATTR_LONG: *out = v->v.l; return NULL;
  case RILL_ATTR_BOOLEAN: *out = v->v.b; return NULL;
  case RILL_ATTR_BLOCK: *out = v->v.block; return NULL;
  default: return wrong_type(c, name, v, "an integer");
  }
}

rill_status *rill_op_context_attr_float(const rill_op_context *c, const char *name, double *out) {
  const rill_attr_value *v;
  RILL_TRY(find_attr(c, name, &v));
  if (v->type == RILL_ATTR_FLOAT) *out = v->v.f;
  else if (v->type == RILL_ATTR_FLOAT64) *out = v->v.f64;
  else return wrong_type(c, name, v, "a float");
  return NULL;
}

rill_status *rill_op_context_attr_string(const rill_op_context *c, const char *name,
                                         const char **out) {
  const rill_attr_value *v;
  RILL_TRY(find_attr(c, name, &v));
  if (v->type != RILL_ATTR_STRING) return wrong_type(c, name, v, "a string");
  *out = v->v.s ? v->v.s : "";
  return NULL;
}

rill_status *rill_op_context_attr_list(const rill_op_context *c, const char *name,
                                       rill_plugin_attr_type *type, const void **items,
                                       size_t *count) {
  const rill_attr_value *v;
  RILL_TRY(find_attr(c, name, &v));
  if (!elem_size((rill_plugin_attr_type)v->type)) return wrong_type(c, name, v, "a list");
  if (type) *type = (rill_plugin_attr_type)v->type;
  *items = v->list.ptr;
  *count = v->n;
  return NULL;
}

bool rill_op_context_input_meta(const rill_op_context *c, size_t slot, size_t i, rill_dtype *dtype,
                                int64_t *dims, size_t *ndim) {
  if (i >= rill_op_context_num_inputs(c, slot)) return false;
  if (c->infer) {
    const rill_tensor_meta *m = &c->infer->in[slot][i];
    if (!m->known) return false;
    if (dtype) *dtype = m->dtype;
    if (dims) memcpy(dims, m->dims.d, (size_t)m->dims.n * sizeof *dims);
    if (ndim) *ndim = (size_t)m->dims.n;
    return true;
  }
  rill_tensor *t = rill_kin(c->kernel, slot, i);
  if (!t) return false;
  if (dtype) *dtype = t->dtype;
  if (dims) memcpy(dims, t->dims.d, (size_t)t->dims.n * sizeof *dims);
  if (ndim) *ndim = (size_t)t->dims.n;
  return true;
}

rill_status *rill_op_context_set_output_meta(rill_op_context *c, size_t slot, size_t i,
                                             rill_dtype dtype, const int64_t *dims, size_t ndim,
                                             int32_t lod_from_input) {
  if (!c) return rill_error(RILL_INVALID_ARGUMENT, "rill_op_context_set_output_meta: NULL context");
  const rill_op_schema *s = ctx_schema(c);
  if (!c->infer)
    return rill_error(RILL_FAILED_PRECONDITION, "op '%s': output shapes are set in infer, not in a kernel",
                      s->type);
  if (i >= rill_op_context_num_outputs(c, slot))
    return rill_error(RILL_OUT_OF_RANGE, "op '%s': no output #%zu in slot #%zu", s->type, i, slot);
  if (ndim > RILL_MAX_DIMS || (ndim && !dims))
    return rill_error(RILL_INVALID_ARGUMENT, "op '%s': output rank %zu (at most %d)", s->type, ndim,
                      RILL_MAX_DIMS);
  if ((unsigned)dtype >= RILL_DTYPE_COUNT || rill_dtype_size(dtype) == 0)
    return rill_error(RILL_INVALID_ARGUMENT, "op '%s': output dtype %d is not an element type",
                      s->type, (int)dtype);
  if (lod_from_input < -1 || (lod_from_input >= 0 && (size_t)lod_from_input >= s->ninputs))
    return rill_error(RILL_INVALID_ARGUMENT, "op '%s': lod_from_input %d is not an input slot",
                      s->type, (int)lod_from_input);
  for (size_t k = 0; k < ndim; k++)
    if (dims[k] < -1)
      return rill_error(RILL_INVALID_ARGUMENT, "op '%s': output extent %" PRId64 " is negative",
                        s->type, dims[k]);
  rill_tensor_meta *m = &c->infer->out[slot][i];
  m->known = true;
  m->dtype = dtype;
  m->dims.n = (int32_t)ndim;
  for (size_t k = 0; k < ndim; k++) m->dims.d[k] = dims[k];
  m->lod_level = 0;
  m->lod_from[0] = m->lod_from[1] = -1;
  if (lod_from_input >= 0 && c->infer->nin[lod_from_input] > 0) {
    m->lod_from[0] = (int16_t)lod_from_input;
    m->lod_from[1] = 0;
    const rill_tensor_meta *src = &c->infer->in[lod_from_input][0];
    if (src->known) m->lod_level = src->lod_level;
  }
  return NULL;
}

rill_tensor *rill_op_context_input(rill_op_context *c, size_t slot, size_t i) {
  if (!c || !c->kernel || slot >= c->kernel->schema->ninputs) return NULL;
  return rill_kin(c->kernel, slot, i);
}

rill_tensor *rill_op_context_output(rill_op_context *c, size_t slot, size_t i) {
  if (!c || !c->kernel || slot >= c->kernel->schema->noutputs) return NULL;
  return rill_kout(c->kernel, slot, i);
}

static const rill_device_services *ctx_dev(const rill_op_context *c) {
  return c && c->kernel ? c->kernel->dev : NULL;
}

int32_t rill_op_context_num_threads(const rill_op_context *c) {
  return (int32_t)rill_dev_threads(ctx_dev(c));
}

bool rill_op_context_parallel_for(rill_op_context *c, int64_t threads, int64_t n, rill_op_part_fn fn,
                                  void *arg) {
  if (!fn) return false;
  return rill_dev_parallel_for(ctx_dev(c), threads, n, fn, arg);
}

void *rill_op_context_scratch_alloc(rill_op_context *c, size_t bytes) {
  const rill_device_services *dev = ctx_dev(c);
  if (dev) return dev->scratch_alloc(dev, bytes);
  return rill_aligned_alloc(bytes ? bytes : 1, RILL_TENSOR_ALIGN);
}

void rill_op_context_scratch_free(rill_op_context *c, void *p) {
  const rill_device_services *dev = ctx_dev(c);
  if (dev) dev->scratch_free(dev, p);
  else rill_free(p);
}

rill_status *rill_op_context_submit_blocking(rill_op_context *c, void (*fn)(void *arg), void *arg) {
  if (!c) return rill_error(RILL_INVALID_ARGUMENT, "rill_op_context_submit_blocking: NULL context");
  const char *type = ctx_schema(c)->type;
  if (!fn) return rill_error(RILL_INVALID_ARGUMENT, "op '%s': submit_blocking: NULL function", type);
  if (!c->kernel)
    return rill_error(RILL_FAILED_PRECONDITION,
                      "op '%s': submit_blocking is for kernels, not shape inference", type);
  const rill_job job = {.kind = RILL_JOB_CALL, .u.call = {fn, arg}};
  const rill_device_services *dev = c->kernel->dev;
  if (!dev) {
    fn(arg);
    return NULL;
  }
  return rill_status_wrap(dev->submit_blocking(dev, &job), "op '%s'", type);
}

/* The device of a kernel call, or a FAILED_PRECONDITION naming what was asked. */
static rill_status *kernel_dev(const rill_op_context *c, const char *what,
                               const rill_device_services **out) {
  if (!c) return rill_error(RILL_INVALID_ARGUMENT, "rill_op_context_%s: NULL context", what);
  const char *type = ctx_schema(c)->type;
  if (!c->kernel)
    return rill_error(RILL_FAILED_PRECONDITION, "op '%s': %s is for kernels, not shape inference",
                      type, what);
  if (!c->kernel->dev)
    return rill_error(RILL_FAILED_PRECONDITION, "op '%s': %s needs a kernel run by an executor",
                      type, what);
  *out = c->kernel->dev;
  return NULL;
}

rill_status *rill_op_context_random_u64(rill_op_context *c, uint64_t *out) {
  const rill_device_services *dev = NULL;
  RILL_TRY(kernel_dev(c, "random_u64", &dev));
  if (!out) return rill_error(RILL_INVALID_ARGUMENT, "op '%s': random_u64: NULL out", ctx_schema(c)->type);
  if (!(ctx_schema(c)->flags & RILL_OP_RANDOM))
    return rill_error(RILL_FAILED_PRECONDITION,
                      "op '%s': random_u64 is for ops flagged RILL_PLUGIN_OP_RANDOM, whose draws "
                      "the executor keeps in program order", ctx_schema(c)->type);
  *out = dev->random_u64(dev);
  return NULL;
}

rill_scope *rill_op_context_scope(rill_op_context *c) {
  return c && c->kernel ? c->kernel->scope : NULL;
}

rill_status *rill_op_context_run_block(rill_op_context *c, int32_t block, rill_scope *scope) {
  const rill_device_services *dev = NULL;
  RILL_TRY(kernel_dev(c, "run_block", &dev));
  if (!scope)
    return rill_error(RILL_INVALID_ARGUMENT, "op '%s': run_block: NULL scope", ctx_schema(c)->type);
  return rill_status_wrap(rill_dev_run_block(dev, block, scope), "op '%s'", ctx_schema(c)->type);
}

rill_status *rill_op_context_error(const rill_op_context *c, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return rill_error(RILL_INVALID_ARGUMENT, "op '%s': %s", c ? ctx_schema(c)->type : "?", buf);
}

rill_status *rill_status_create(rill_code code, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if ((unsigned)code >= RILL_CODE_COUNT || code == RILL_OK) code = RILL_INTERNAL;
  return rill_error(code, "%s", buf);
}
