/* The op registry: the schemas of operators/op_table.c, the backends of
 * kernels/backends.c and their kernels, plus what plugins and applications add at run
 * time, indexed once by op type. */
#include "framework/registry/registry.h"
#include "framework/registry/backend_host.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "framework/base/strmap.h"

/* The most backends one process registers: one per device kind. */
#define MAX_BACKENDS RILL_DEVICE_COUNT

typedef struct op_entry {
  const rill_op_schema *schema;
  rill_kernel_def *kernels;
  size_t nkernels, capkernels;
} op_entry;

static struct {
  pthread_once_t once;
  pthread_rwlock_t lock;
  rill_status *init_status;
  op_entry *ops; /* sorted by type */
  size_t nops, capops;
  rill_strmap index; /* type -> position in ops */
  const rill_backend *backends[MAX_BACKENDS]; /* in registration order */
  size_t nbackends;
} reg = {.once = PTHREAD_ONCE_INIT, .lock = PTHREAD_RWLOCK_INITIALIZER, .index = {.borrow_keys = true}};

static size_t find_locked(const char *type) {
  const size_t *at = rill_strmap_get(&reg.index, type);
  return at ? *at : SIZE_MAX;
}

/* Puts every op of ops[0..n) into an index reserved for them: with borrowed keys (the
 * schemas' types), no put allocates. */
static void index_ops(rill_strmap *ix, const op_entry *ops, size_t n) {
  for (size_t k = 0; k < n; k++) rill_status_destroy(rill_strmap_put(ix, ops[k].schema->type, k));
}

static rill_status *reindex_locked(void) {
  rill_strmap ix = {.borrow_keys = true};
  RILL_TRY(rill_strmap_reserve(&ix, reg.nops));
  index_ops(&ix, reg.ops, reg.nops);
  rill_strmap_clear(&reg.index);
  reg.index = ix;
  return NULL;
}

static rill_status *check_schema(const rill_op_schema *s) {
  if (!s || !s->type || !*s->type) return rill_error(RILL_INVALID_ARGUMENT, "op schema without a type");
  for (size_t i = 0; i < s->nattrs; i++) {
    const rill_attr_schema *a = &s->attrs[i];
    if (!(a->flags & RILL_ATTR_REQUIRED) && a->def.type != a->type)
      return rill_error(RILL_INTERNAL, "op '%s': default of attribute '%s' is %s, declared %s",
                        s->type, a->name, rill_attr_type_name(a->def.type),
                        rill_attr_type_name(a->type));
  }
  size_t paths = 0;
  for (size_t i = 0; i < s->nattrs; i++) {
    if (!(s->attrs[i].flags & RILL_ATTR_FILE_PATH)) continue;
    if (s->attrs[i].type != RILL_ATTR_STRING)
      return rill_error(RILL_INTERNAL, "op '%s': file path attribute '%s' is not a STRING",
                        s->type, s->attrs[i].name);
    paths++;
  }
  if ((s->flags & (RILL_OP_READS_FILES | RILL_OP_WRITES_FILES)) && paths == 0)
    return rill_error(RILL_INTERNAL, "op '%s' touches files but no attribute names them", s->type);
  for (size_t i = 0; i < s->ninputs; i++)
    if ((s->inputs[i].flags & RILL_SLOT_INFER_DATA) && !(s->flags & RILL_OP_INFER_READS_DATA))
      return rill_error(RILL_INVALID_ARGUMENT,
                        "op '%s': input slot '%s' is marked RILL_SLOT_INFER_DATA but the op does not "
                        "carry RILL_OP_INFER_READS_DATA, so its inference may not read any element",
                        s->type, s->inputs[i].name);
  if (s->kernel_dtype_slot >= (int)s->ninputs || s->dtype_attr >= (int)s->nattrs)
    return rill_error(RILL_INTERNAL, "op '%s': kernel dtype slot or attribute out of range", s->type);
  return NULL;
}

/* Inserts keeping `ops` sorted; the caller holds the write lock. */
static rill_status *insert_op_locked(const rill_op_schema *s) {
  RILL_TRY(check_schema(s));
  if (find_locked(s->type) != SIZE_MAX)
    return rill_error(RILL_ALREADY_EXISTS, "op '%s' is already registered", s->type);
  void *ops = reg.ops;
  if (!rill_grow(&ops, &reg.capops, reg.nops + 1, sizeof(op_entry))) return rill_oom();
  reg.ops = ops;
  size_t at = reg.nops;
  while (at > 0 && strcmp(reg.ops[at - 1].schema->type, s->type) > 0) at--;
  memmove(&reg.ops[at + 1], &reg.ops[at], (reg.nops - at) * sizeof(op_entry));
  reg.ops[at] = (op_entry){s, NULL, 0, 0};
  reg.nops++;
  rill_status *st = reindex_locked();
  if (st) {
    memmove(&reg.ops[at], &reg.ops[at + 1], (reg.nops - at - 1) * sizeof(op_entry));
    reg.nops--;
  }
  return st;
}

static const rill_backend *backend_locked(rill_device device) {
  for (size_t i = 0; i < reg.nbackends; i++)
    if (reg.backends[i]->device == device) return reg.backends[i];
  return NULL;
}

/* "cpu, fake" into buf. */
static const char *backend_names_locked(char *buf, size_t cap) {
  size_t len = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < reg.nbackends && len < cap; i++) {
    int w = snprintf(buf + len, cap - len, "%s%s", i ? ", " : "", reg.backends[i]->name);
    if (w < 0) break;
    len += (size_t)w;
  }
  if (!reg.nbackends) snprintf(buf, cap, "none");
  return buf;
}

/* The checks every kernel passes, built-in or added by a backend, a plugin or an
 * application: an op with a schema, a function, a device kind with a backend (the one
 * being added, for its own kernels), and no kernel yet for its (device, dtype). */
static rill_status *check_kernel_target_locked(const rill_kernel_def *k,
                                               const rill_backend *adding) {
  if (!k->op || !k->fn) return rill_error(RILL_INVALID_ARGUMENT, "kernel without an op or function");
  if (!(adding && adding->device == k->device) && !backend_locked(k->device)) {
    char place[RILL_PLACE_STR_MAX], names[256];
    return rill_error(RILL_UNIMPLEMENTED,
                      "kernel of op '%s' for %s, which has no registered backend (registered: %s)",
                      k->op, rill_place_str((rill_place){k->device, 0}, place, sizeof place),
                      backend_names_locked(names, sizeof names));
  }
  return NULL;
}

static rill_status *check_kernel_locked(const rill_kernel_def *k, const rill_backend *adding) {
  RILL_TRY(check_kernel_target_locked(k, adding));
  size_t at = find_locked(k->op);
  if (at == SIZE_MAX)
    return rill_error(RILL_NOT_FOUND, "kernel for op '%s', which has no schema", k->op);
  const op_entry *e = &reg.ops[at];
  for (size_t i = 0; i < e->nkernels; i++)
    if (e->kernels[i].device == k->device && e->kernels[i].dtype == k->dtype)
      return rill_error(RILL_ALREADY_EXISTS, "op '%s' already has a kernel for %s", k->op,
                        k->dtype == RILL_KERNEL_ANY_DTYPE ? "any dtype" : rill_dtype_name(k->dtype));
  return NULL;
}

static rill_status *insert_kernel_locked(const rill_kernel_def *k) {
  RILL_TRY(check_kernel_locked(k, NULL));
  op_entry *e = &reg.ops[find_locked(k->op)];
  void *ks = e->kernels;
  if (!rill_grow(&ks, &e->capkernels, e->nkernels + 1, sizeof(rill_kernel_def))) return rill_oom();
  e->kernels = ks;
  e->kernels[e->nkernels++] = *k;
  return NULL;
}

static rill_status *check_backend_locked(const rill_backend *b) {
  if (!b) return rill_error(RILL_INVALID_ARGUMENT, "backend: NULL table");
  const char *name = b->name ? b->name : "(unnamed)";
  if (b->api_version != RILL_BACKEND_API_VERSION)
    return rill_error(RILL_FAILED_PRECONDITION,
                      "backend '%s' was built for backend API version %u; this rill has version "
                      "%u (rebuild the backend against this rill)",
                      name, (unsigned)b->api_version, RILL_BACKEND_API_VERSION);
  if (!b->name || !*b->name) return rill_error(RILL_INVALID_ARGUMENT, "backend without a name");
  if ((unsigned)b->device >= RILL_DEVICE_COUNT)
    return rill_error(RILL_INVALID_ARGUMENT, "backend '%s': device kind %d does not exist", name,
                      (int)b->device);
  if (!b->memory.alloc || !b->memory.free || !b->copy_to_host || !b->copy_from_host || !b->copy)
    return rill_error(RILL_INVALID_ARGUMENT,
                      "backend '%s': the table lacks its allocator or a copy function", name);
  if (b->nkernels && !b->kernels)
    return rill_error(RILL_INVALID_ARGUMENT, "backend '%s': %zu kernels but no kernel list", name,
                      b->nkernels);
  for (size_t i = 0; i < reg.nbackends; i++) {
    if (reg.backends[i]->device == b->device) {
      char place[RILL_PLACE_STR_MAX];
      return rill_error(RILL_ALREADY_EXISTS, "backend '%s': %s already has backend '%s'", name,
                        rill_place_str((rill_place){b->device, 0}, place, sizeof place),
                        reg.backends[i]->name);
    }
    if (strcmp(reg.backends[i]->name, b->name) == 0)
      return rill_error(RILL_ALREADY_EXISTS, "backend '%s' is already registered", name);
  }
  for (size_t i = 0; i < b->nkernels; i++) {
    const rill_kernel_def *k = &b->kernels[i];
    if (k->device != b->device)
      return rill_error(RILL_INVALID_ARGUMENT,
                        "backend '%s': kernel #%zu (op '%s') is for device kind %d, not the "
                        "backend's %d",
                        name, i, k->op ? k->op : "(null)", (int)k->device, (int)b->device);
    RILL_TRY(rill_status_wrap(check_kernel_locked(k, b), "backend '%s'", name));
    for (size_t j = 0; j < i; j++)
      if (b->kernels[j].dtype == k->dtype && strcmp(b->kernels[j].op, k->op) == 0)
        return rill_error(RILL_ALREADY_EXISTS, "backend '%s': op '%s' gets two kernels for %s",
                          name, k->op,
                          k->dtype == RILL_KERNEL_ANY_DTYPE ? "any dtype"
                                                            : rill_dtype_name(k->dtype));
  }
  return NULL;
}

/* All or nothing: checks the table and every kernel, makes room for the kernels in
 * their ops' lists, and only then appends them and the backend. */
static rill_status *add_backend_locked(const rill_backend *b) {
  RILL_TRY(check_backend_locked(b));
  for (size_t i = 0; i < b->nkernels; i++) {
    op_entry *e = &reg.ops[find_locked(b->kernels[i].op)];
    size_t need = e->nkernels + 1;
    for (size_t j = 0; j < i; j++)
      if (strcmp(b->kernels[j].op, b->kernels[i].op) == 0) need++;
    void *ks = e->kernels;
    if (!rill_grow(&ks, &e->capkernels, need, sizeof(rill_kernel_def))) return rill_oom();
    e->kernels = ks;
  }
  for (size_t i = 0; i < b->nkernels; i++) {
    op_entry *e = &reg.ops[find_locked(b->kernels[i].op)];
    e->kernels[e->nkernels++] = b->kernels[i];
  }
  reg.backends[reg.nbackends++] = b;
  if (b->start) b->start(b);
  return NULL;
}

static void init_once(void) {
  rill_status *st = NULL;
  pthread_rwlock_wrlock(&reg.lock);
  for (size_t i = 0; i < rill_builtin_schema_count && !st; i++)
    st = insert_op_locked(rill_builtin_schemas[i]);
  for (size_t i = 0; i < rill_builtin_backend_count && !st; i++)
    st = add_backend_locked(rill_builtin_backends[i]);
  if (!st && !reg.index.slots) st = reindex_locked();
  reg.init_status = st;
  pthread_rwlock_unlock(&reg.lock);
}

rill_status *rill_registry_add_backend(const rill_backend *backend) {
  RILL_TRY(rill_registry_init());
  pthread_rwlock_wrlock(&reg.lock);
  rill_status *st = add_backend_locked(backend);
  pthread_rwlock_unlock(&reg.lock);
  return st;
}

const rill_backend *rill_backend_find(rill_device device) {
  if (rill_registry_init_quiet()) return NULL;
  pthread_rwlock_rdlock(&reg.lock);
  const rill_backend *b = backend_locked(device);
  pthread_rwlock_unlock(&reg.lock);
  return b;
}

size_t rill_backend_count(void) {
  if (rill_registry_init_quiet()) return 0;
  pthread_rwlock_rdlock(&reg.lock);
  size_t n = reg.nbackends;
  pthread_rwlock_unlock(&reg.lock);
  return n;
}

const rill_backend *rill_backend_at(size_t i) {
  if (rill_registry_init_quiet()) return NULL;
  pthread_rwlock_rdlock(&reg.lock);
  const rill_backend *b = i < reg.nbackends ? reg.backends[i] : NULL;
  pthread_rwlock_unlock(&reg.lock);
  return b;
}

const char *rill_place_str(rill_place place, char *buf, size_t cap) {
  static const char *const kinds[RILL_DEVICE_COUNT] = {
      [RILL_DEVICE_CPU] = "cpu",
      [RILL_DEVICE_CUDA] = "cuda",
  };
  if ((unsigned)place.device < RILL_DEVICE_COUNT && kinds[place.device])
    snprintf(buf, cap, "%s:%d", kinds[place.device], (int)place.id);
  else
    snprintf(buf, cap, "device %d:%d", (int)place.device, (int)place.id);
  return buf;
}

rill_status *rill_place_check(rill_place place) {
  RILL_TRY(rill_registry_init());
  const rill_backend *b = rill_backend_find(place.device);
  rill_status *why = NULL;
  if (!b && !(why = rill_lazy_backend_load(place.device))) b = rill_backend_find(place.device);
  if (b) return b->check_place ? b->check_place(b, place) : NULL;
  char names[256], where[RILL_PLACE_STR_MAX];
  pthread_rwlock_rdlock(&reg.lock);
  backend_names_locked(names, sizeof names);
  pthread_rwlock_unlock(&reg.lock);
  rill_status *st;
  if (why && rill_status_code(why) != RILL_NOT_FOUND)
    st = rill_error(RILL_UNIMPLEMENTED, "place %s has no registered backend (registered backends: %s): %s",
                    rill_place_str(place, where, sizeof where), names, rill_status_message(why));
  else
    st = rill_error(RILL_UNIMPLEMENTED, "place %s has no registered backend (registered backends: %s)",
                    rill_place_str(place, where, sizeof where), names);
  rill_status_destroy(why);
  return st;
}

rill_status *rill_place_parse(const char *text, rill_place *out) {
  RILL_TRY(rill_registry_init());
  const char *colon = strchr(text, ':');
  size_t len = colon ? (size_t)(colon - text) : strlen(text);
  long id = 0;
  bool ok = len > 0;
  if (ok && colon) {
    char *end = NULL;
    id = strtol(colon + 1, &end, 10);
    ok = end != colon + 1 && *end == '\0' && id >= 0 && id <= INT32_MAX;
  }
  rill_device device = RILL_DEVICE_COUNT;
  char names[256];
  pthread_rwlock_rdlock(&reg.lock);
  for (size_t i = 0; ok && i < reg.nbackends && device == RILL_DEVICE_COUNT; i++)
    if (strlen(reg.backends[i]->name) == len && strncmp(reg.backends[i]->name, text, len) == 0)
      device = reg.backends[i]->device;
  backend_names_locked(names, sizeof names);
  pthread_rwlock_unlock(&reg.lock);
  if (ok && device == RILL_DEVICE_COUNT) {
    if (len == 3 && strncmp(text, "cpu", 3) == 0)
      device = RILL_DEVICE_CPU;
    else if ((len == 4 && strncmp(text, "cuda", 4) == 0) || (len == 3 && strncmp(text, "gpu", 3) == 0))
      device = RILL_DEVICE_CUDA;
  }
  if (!ok || device == RILL_DEVICE_COUNT)
    return rill_error(RILL_INVALID_ARGUMENT,
                      "place '%s' is not NAME or NAME:ID with NAME a backend (registered "
                      "backends: %s) or a device kind (cpu, cuda, gpu)",
                      text, names);
  *out = (rill_place){device, (int32_t)id};
  return NULL;
}

rill_status *rill_backend_copy(rill_place dst_place, void *dst, rill_place src_place,
                               const void *src, size_t n) {
  const rill_backend *db = rill_backend_find(dst_place.device);
  const rill_backend *sb = rill_backend_find(src_place.device);
  if (!db) return rill_place_check(dst_place);
  if (!sb) return rill_place_check(src_place);
  if (db == sb) return db->copy(db, dst_place, dst, src_place, src, n);
  if (sb->device == RILL_HOST_DEVICE) return db->copy_from_host(db, dst_place, dst, src, n);
  if (db->device == RILL_HOST_DEVICE) return sb->copy_to_host(sb, dst, src_place, src, n);
  /* Between two devices, through host memory. */
  void *tmp = rill_aligned_alloc(n ? n : 1, RILL_TENSOR_ALIGN);
  if (!tmp) return rill_oom();
  rill_status *st = sb->copy_to_host(sb, tmp, src_place, src, n);
  if (!st) st = db->copy_from_host(db, dst_place, dst, tmp, n);
  rill_free(tmp);
  return st;
}

rill_status *rill_tensor_alloc_at(rill_tensor *t, rill_dtype dtype, const rill_dims *dims, rill_place place) {
  RILL_TRY(rill_place_check(place));
  return rill_tensor_alloc_on(t, dtype, dims, place, rill_backend_tensor_memory(rill_backend_find(place.device)));
}

rill_status *rill_tensor_zeros_at(rill_tensor *t, rill_dtype dtype, const rill_dims *dims, rill_place place) {
  RILL_TRY(rill_tensor_alloc_at(t, dtype, dims, place));
  rill_lod_clear(&t->lod);
  size_t n = rill_tensor_nbytes(t);
  if (!n) return NULL;
  if (place.device == RILL_HOST_DEVICE) {
    memset(rill_tensor_ptr(t), 0, n);
    return NULL;
  }
  const rill_backend *b = rill_backend_find(place.device);
  if (b && b->zero) return b->zero(b, place, rill_tensor_ptr(t), n);
  void *zeros = rill_calloc(1, n);
  if (!zeros) return rill_oom();
  rill_status *st = rill_backend_copy(place, rill_tensor_ptr(t), (rill_place){RILL_HOST_DEVICE, 0}, zeros, n);
  rill_free(zeros);
  return st;
}

rill_status *rill_tensor_read_host(const rill_tensor *t, void *dst, size_t n) {
  size_t have = t->buf ? rill_tensor_nbytes(t) : 0;
  if (n > have) return rill_error(RILL_OUT_OF_RANGE, "reading %zu bytes of a tensor of %zu", n, have);
  if (!n) return NULL;
  return rill_backend_copy((rill_place){RILL_HOST_DEVICE, 0}, dst, rill_tensor_place(t), rill_tensor_ptr(t), n);
}

rill_status *rill_tensor_copy_on(rill_tensor *dst, const rill_tensor *src, rill_place place,
                                 const rill_device_memory *mem) {
  if (!src->buf) {
    rill_tensor_clear(dst);
    return NULL;
  }
  if (!mem) {
    RILL_TRY(rill_place_check(place));
    mem = rill_backend_tensor_memory(rill_backend_find(place.device));
  }
  rill_tensor copy;
  rill_tensor_init(&copy);
  rill_status *st = rill_lod_copy(&copy.lod, &src->lod);
  if (!st) st = rill_tensor_alloc_on(&copy, src->dtype, &src->dims, place, mem);
  size_t n = rill_tensor_nbytes(src);
  if (!st && n)
    st = rill_backend_copy(place, rill_tensor_ptr(&copy), rill_tensor_place(src), rill_tensor_ptr(src), n);
  if (st) {
    rill_tensor_clear(&copy);
    return st;
  }
  rill_tensor_swap(dst, &copy);
  rill_tensor_clear(&copy);
  return NULL;
}

rill_status *rill_tensor_copy_at(rill_tensor *dst, const rill_tensor *src, rill_place place) {
  rill_place from = rill_tensor_place(src);
  if (dst == src && from.device == place.device && from.id == place.id) return NULL;
  return rill_tensor_copy_on(dst, src, place, NULL);
}

rill_status *rill_tensor_accumulate(rill_tensor *dst, const rill_tensor *src) {
  if (!dst->buf || !src->buf)
    return rill_error(RILL_INVALID_ARGUMENT, "adding a tensor %s", dst->buf ? "that holds no data" : "into one that "
                      "holds no data");
  int64_t n = rill_tensor_numel(dst);
  if (dst->dtype != src->dtype || n != rill_tensor_numel(src))
    return rill_error(RILL_INVALID_ARGUMENT, "adding %lld %s elements into %lld %s ones",
                      (long long)rill_tensor_numel(src), rill_dtype_name(src->dtype), (long long)n,
                      rill_dtype_name(dst->dtype));
  rill_place at = rill_tensor_place(dst), from = rill_tensor_place(src);
  const rill_backend *b = rill_backend_find(at.device);
  if (!b) return rill_place_check(at);
  char where[RILL_PLACE_STR_MAX];
  if (!b->accumulate)
    return rill_error(RILL_UNIMPLEMENTED, "backend '%s' does not add tensors (on %s)", b->name,
                      rill_place_str(at, where, sizeof where));
  if (!n) return NULL;
  if (from.device == at.device && from.id == at.id)
    return b->accumulate(b, at, dst->dtype, rill_tensor_ptr(dst), rill_tensor_ptr(src), (size_t)n);
  rill_tensor here;
  rill_tensor_init(&here);
  rill_status *st = rill_tensor_copy_at(&here, src, at);
  if (!st) st = b->accumulate(b, at, dst->dtype, rill_tensor_ptr(dst), rill_tensor_ptr(&here), (size_t)n);
  rill_tensor_clear(&here);
  return st;
}

rill_status *rill_tensor_copy_bytes(rill_tensor *dst, size_t dst_off, const rill_tensor *src, size_t src_off,
                                    size_t n) {
  size_t dn = dst->buf ? rill_tensor_nbytes(dst) : 0, sn = src->buf ? rill_tensor_nbytes(src) : 0;
  if (dst_off > dn || n > dn - dst_off || src_off > sn || n > sn - src_off)
    return rill_error(RILL_OUT_OF_RANGE, "copying %zu bytes from byte %zu of %zu to byte %zu of %zu", n, src_off,
                      sn, dst_off, dn);
  if (!n) return NULL;
  return rill_backend_copy(rill_tensor_place(dst), (char *)rill_tensor_ptr(dst) + dst_off, rill_tensor_place(src),
                           (const char *)rill_tensor_ptr(src) + src_off, n);
}

rill_status *rill_registry_init(void) {
  pthread_once(&reg.once, init_once);
  if (!reg.init_status) return NULL;
  return rill_error(rill_status_code(reg.init_status), "op registry: %s",
                    rill_status_message(reg.init_status));
}

const rill_op_schema *rill_schema_find(const char *type) {
  if (!type || rill_registry_init_quiet()) return NULL;
  pthread_rwlock_rdlock(&reg.lock);
  size_t at = find_locked(type);
  const rill_op_schema *s = at == SIZE_MAX ? NULL : reg.ops[at].schema;
  pthread_rwlock_unlock(&reg.lock);
  return s;
}

rill_kernel_fn rill_kernel_find_accepts(const char *op, rill_device device, rill_dtype dtype,
                                        rill_kernel_accepts_fn *accepts) {
  if (accepts) *accepts = NULL;
  if (!op || rill_registry_init_quiet()) return NULL;
  rill_kernel_def fn = {0}, any = {0};
  pthread_rwlock_rdlock(&reg.lock);
  size_t at = find_locked(op);
  if (at != SIZE_MAX) {
    const op_entry *e = &reg.ops[at];
    for (size_t i = 0; i < e->nkernels; i++) {
      if (e->kernels[i].device != device) continue;
      if (e->kernels[i].dtype == dtype) fn = e->kernels[i];
      if (e->kernels[i].dtype == RILL_KERNEL_ANY_DTYPE) any = e->kernels[i];
    }
  }
  pthread_rwlock_unlock(&reg.lock);
  const rill_kernel_def *k = fn.fn ? &fn : &any;
  if (accepts) *accepts = k->accepts;
  return k->fn;
}

rill_kernel_fn rill_kernel_find(const char *op, rill_device device, rill_dtype dtype) {
  return rill_kernel_find_accepts(op, device, dtype, NULL);
}

bool rill_registry_init_quiet(void) {
  pthread_once(&reg.once, init_once);
  return reg.init_status != NULL;
}

rill_status *rill_registry_add_op(const rill_op_schema *schema) {
  RILL_TRY(rill_registry_init());
  pthread_rwlock_wrlock(&reg.lock);
  rill_status *st = insert_op_locked(schema);
  pthread_rwlock_unlock(&reg.lock);
  return st;
}

rill_status *rill_registry_add_kernel(const rill_kernel_def *kernel) {
  RILL_TRY(rill_registry_init());
  pthread_rwlock_wrlock(&reg.lock);
  rill_status *st = insert_kernel_locked(kernel);
  pthread_rwlock_unlock(&reg.lock);
  return st;
}

/* All or nothing: every schema and kernel is checked (names free, kernels for ops of the
 * batch or already registered, no duplicate kernels), everything that can fail to
 * allocate is allocated, and only then is the table changed, under one write lock. */
rill_status *rill_registry_add_batch(const rill_op_schema *const *schemas, size_t n,
                                     const rill_kernel_def *kernels, size_t nk) {
  RILL_TRY(rill_registry_init());
  for (size_t i = 0; i < n; i++) RILL_TRY(check_schema(schemas[i]));
  rill_status *st = NULL;
  op_entry *ops = NULL;
  rill_strmap index = {.borrow_keys = true};
  size_t cap = 0;
  rill_kernel_def **ks = rill_calloc(n ? n : 1, sizeof *ks);
  size_t *nks = rill_calloc(n ? n : 1, sizeof *nks);
  if (!ks || !nks) {
    rill_free(ks);
    rill_free(nks);
    return rill_oom();
  }
  pthread_rwlock_wrlock(&reg.lock);
  for (size_t i = 0; i < n && !st; i++) {
    if (find_locked(schemas[i]->type) != SIZE_MAX)
      st = rill_error(RILL_ALREADY_EXISTS, "op '%s' is already registered", schemas[i]->type);
    for (size_t j = 0; j < i && !st; j++)
      if (strcmp(schemas[i]->type, schemas[j]->type) == 0)
        st = rill_error(RILL_ALREADY_EXISTS, "op '%s' is added twice", schemas[i]->type);
  }
  for (size_t k = 0; k < nk && !st; k++) {
    if ((st = check_kernel_target_locked(&kernels[k], NULL))) break;
    size_t at = SIZE_MAX;
    for (size_t i = 0; i < n && at == SIZE_MAX; i++)
      if (strcmp(schemas[i]->type, kernels[k].op) == 0) at = i;
    if (at == SIZE_MAX) {
      st = rill_error(find_locked(kernels[k].op) == SIZE_MAX ? RILL_NOT_FOUND : RILL_INVALID_ARGUMENT,
                      "kernel for op '%s', which this batch does not add", kernels[k].op);
      break;
    }
    for (size_t j = 0; j < k && !st; j++)
      if (strcmp(kernels[j].op, kernels[k].op) == 0 && kernels[j].device == kernels[k].device &&
          kernels[j].dtype == kernels[k].dtype)
        st = rill_error(RILL_ALREADY_EXISTS, "op '%s' gets two kernels for %s", kernels[k].op,
                        rill_dtype_name(kernels[k].dtype));
    nks[at]++;
  }
  if (!st) {
    for (size_t i = 0; i < n && !st; i++)
      if (nks[i] && !(ks[i] = rill_calloc(nks[i], sizeof **ks))) st = rill_oom();
    cap = reg.nops + n;
    if (!st && !(ops = rill_malloc(cap * sizeof *ops))) st = rill_oom();
    if (!st) st = rill_strmap_reserve(&index, cap);
    if (!st) {
      for (size_t i = 0; i < n; i++) nks[i] = 0;
      for (size_t k = 0; k < nk; k++)
        for (size_t i = 0; i < n; i++)
          if (strcmp(schemas[i]->type, kernels[k].op) == 0) ks[i][nks[i]++] = kernels[k];
      size_t m = reg.nops;
      memcpy(ops, reg.ops, m * sizeof *ops);
      for (size_t i = 0; i < n; i++) {
        size_t at = m;
        while (at > 0 && strcmp(ops[at - 1].schema->type, schemas[i]->type) > 0) at--;
        memmove(&ops[at + 1], &ops[at], (m - at) * sizeof *ops);
        ops[at] = (op_entry){schemas[i], ks[i], nks[i], nks[i]};
        ks[i] = NULL;
        m++;
      }
      index_ops(&index, ops, m);
      rill_free(reg.ops);
      rill_strmap_clear(&reg.index);
      reg.ops = ops;
      reg.nops = reg.capops = m;
      reg.index = index;
      ops = NULL;
      index = (rill_strmap){0};
    }
  }
  pthread_rwlock_unlock(&reg.lock);
  for (size_t i = 0; i < n; i++) rill_free(ks[i]);
  rill_free(ks);
  rill_free(nks);
  rill_free(ops);
  rill_strmap_clear(&index);
  return st;
}

size_t rill_registry_count(void) {
  if (rill_registry_init_quiet()) return 0;
  pthread_rwlock_rdlock(&reg.lock);
  size_t n = reg.nops;
  pthread_rwlock_unlock(&reg.lock);
  return n;
}

const rill_op_schema *rill_registry_at(size_t i) {
  if (rill_registry_init_quiet()) return NULL;
  pthread_rwlock_rdlock(&reg.lock);
  const rill_op_schema *s = i < reg.nops ? reg.ops[i].schema : NULL;
  pthread_rwlock_unlock(&reg.lock);
  return s;
}

size_t rill_registry_kernels(const char *op, rill_kernel_def *out, size_t max) {
  size_t n = 0;
  if (!op || rill_registry_init_quiet()) return 0;
  pthread_rwlock_rdlock(&reg.lock);
  size_t at = find_locked(op);
  if (at != SIZE_MAX) {
    const op_entry *e = &reg.ops[at];
    for (size_t i = 0; i < e->nkernels; i++) {
      if (n < max) out[n] = e->kernels[i];
      n++;
    }
  }
  pthread_rwlock_unlock(&reg.lock);
  return n;
}

size_t rill_op_count(void) { return rill_registry_count(); }

const char *rill_op_name(size_t i) {
  const rill_op_schema *s = rill_registry_at(i);
  return s ? s->type : NULL;
}

static int slot_index(const rill_slot_schema *slots, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(slots[i].name, name) == 0) return (int)i;
  return -1;
}

int rill_schema_input_index(const rill_op_schema *s, const char *name) {
  return slot_index(s->inputs, s->ninputs, name);
}

int rill_schema_output_index(const rill_op_schema *s, const char *name) {
  return slot_index(s->outputs, s->noutputs, name);
}

int rill_schema_attr_index(const rill_op_schema *s, const char *name) {
  for (size_t i = 0; i < s->nattrs; i++)
    if (strcmp(s->attrs[i].name, name) == 0) return (int)i;
  return -1;
}

static rill_status *verror(const char *type, const char *fmt, va_list ap) {
  char buf[1024];
  vsnprintf(buf, sizeof buf, fmt, ap);
  return rill_error(RILL_INVALID_ARGUMENT, "op '%s': %s", type, buf);
}

rill_status *rill_infer_error(const rill_infer_ctx *ctx, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  rill_status *st = verror(ctx->schema->type, fmt, ap);
  va_end(ap);
  return st;
}

rill_status *rill_kernel_error(const rill_kernel_ctx *ctx, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  rill_status *st = verror(ctx->schema->type, fmt, ap);
  va_end(ap);
  return st;
}

rill_status *rill_dev_run_block(const rill_device_services *dev, int32_t block, rill_scope *scope) {
  if (!dev || !dev->run_block)
    return rill_error(RILL_FAILED_PRECONDITION,
                      "block %d cannot run: the device has no run_block service (a kernel called "
                      "outside an executor)",
                      (int)block);
  if (!scope)
    return rill_error(RILL_INVALID_ARGUMENT, "block %d: run_block needs a scope", (int)block);
  return dev->run_block(dev, block, scope);
}
