/* The public program API of rill.h: create, parse, load, serialize, and edit programs
 * (blocks, variables, ops through a builder). Every edit bumps the program's revision,
 * which executors use to drop plans prepared for an older version. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "framework/base/alloc.h"
#include "framework/io/file.h"
#include "framework/program/program_impl.h"
#include "framework/registry/registry.h"

#define NULL_ARG(fn) rill_error(RILL_INVALID_ARGUMENT, "%s: NULL argument", fn)

static rill_status *no_block(const rill_program *p, int32_t block) {
  return rill_error(RILL_INVALID_ARGUMENT, "block %" PRId32 " does not exist (the program has %zu blocks)",
                    block, p->nblocks);
}

/* ------------------------------------------------------------ programs -------- */

rill_status *rill_program_create(rill_program **out) {
  if (!out) return NULL_ARG("rill_program_create");
  rill_program *p = rill_program_alloc();
  if (!p) return rill_oom();
  rill_status *st = rill_program_add_block(p, -1, NULL);
  if (st) {
    rill_program_free(p);
    return st;
  }
  p->revision = 0;
  *out = p;
  return NULL;
}

void rill_program_destroy(rill_program *program) { rill_program_free(program); }

rill_status *rill_program_parse(const void *bytes, size_t size, rill_program **out) {
  if (!out || (!bytes && size)) return NULL_ARG("rill_program_parse");
  return rill_program_decode(bytes, size, out);
}

rill_status *rill_program_load(const char *path, rill_program **out) {
  if (!path || !out) return NULL_ARG("rill_program_load");
  struct stat sb;
  int fd = rill_file_open_regular(path, &sb);
  if (fd == -2)
    return rill_error(RILL_IO, "program file '%s' is not a regular file (it is %s)", path,
                      rill_file_kind(sb.st_mode));
  if (fd < 0)
    return rill_error(errno == ENOENT ? RILL_NOT_FOUND : RILL_IO, "cannot open program file '%s': %s",
                      path, strerror(errno));
  rill_status *st = NULL;
  uint8_t *buf = NULL;
  size_t size = 0;
  if (sb.st_size < 0 || (uint64_t)sb.st_size > INT32_MAX) {
    st = rill_error(RILL_INVALID_ARGUMENT, "program file '%s' is %lld bytes, over protobuf's 2 GiB limit",
                    path, (long long)sb.st_size);
  } else {
    size = (size_t)sb.st_size;
    buf = rill_malloc(size ? size : 1);
    size_t got = 0;
    while (buf && got < size) {
      ssize_t r = read(fd, buf + got, size - got);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      got += (size_t)r;
    }
    if (!buf)
      st = rill_oom();
    else if (got != size)
      st = rill_error(RILL_IO, "short read from program file '%s' (expected %zu bytes)", path, size);
  }
  close(fd);
  if (!st) {
    rill_program *p = NULL;
    st = rill_program_decode(buf, size, &p);
    if (st)
      st = rill_status_wrap(st, "program file '%s'", path);
    else
      *out = p;
  }
  rill_free(buf);
  return st;
}

rill_status *rill_program_serialize(const rill_program *program, void **out, size_t *size) {
  if (!program || !out || !size) return NULL_ARG("rill_program_serialize");
  uint8_t *bytes = NULL;
  RILL_TRY(rill_program_encode(program, &bytes, size));
  *out = bytes;
  return NULL;
}

void rill_free_buffer(void *buffer) { rill_free(buffer); }

size_t rill_program_num_blocks(const rill_program *program) {
  return program ? program->nblocks : 0;
}

uint64_t rill_program_version(const rill_program *program) {
  return program ? program->revision : 0;
}

rill_status *rill_program_append_block(rill_program *program, int32_t parent_idx,
                                       int32_t *out_idx) {
  if (!program) return NULL_ARG("rill_program_append_block");
  return rill_program_add_block(program, parent_idx, out_idx);
}

size_t rill_block_num_vars(const rill_program *program, int32_t block) {
  const rill_block_desc *b = rill_program_block(program, block);
  return b ? b->nvars : 0;
}

size_t rill_block_num_ops(const rill_program *program, int32_t block) {
  const rill_block_desc *b = rill_program_block(program, block);
  return b ? b->nops : 0;
}

/* ------------------------------------------------------------ variables ------- */

static bool var_type_has_tensor(int32_t type) {
  return type == RILL_VAR_LOD_TENSOR || type == RILL_VAR_SELECTED_ROWS ||
         type == RILL_VAR_LOD_TENSOR_ARRAY;
}

/* The dims and LoD level of a tensor description being declared for variable `name`. */
static rill_status *check_dims(const char *name, const int64_t *dims, size_t ndim,
                               int32_t lod_level) {
  if (ndim > RILL_MAX_DIMS)
    return rill_error(RILL_INVALID_ARGUMENT, "variable '%s': %zu dims, more than the maximum %d",
                      name, ndim, RILL_MAX_DIMS);
  for (size_t i = 0; i < ndim; i++)
    if (dims[i] < -1)
      return rill_error(RILL_INVALID_ARGUMENT,
                        "variable '%s': dim %zu is %" PRId64 " (use -1 for unknown)", name, i,
                        dims[i]);
  if (lod_level < 0)
    return rill_error(RILL_INVALID_ARGUMENT, "variable '%s': negative lod_level %" PRId32, name,
                      lod_level);
  return NULL;
}

rill_status *rill_block_add_var(rill_program *program, int32_t block, const char *name,
                                rill_var_type type, rill_dtype dtype, const int64_t *dims,
                                size_t ndim, int32_t lod_level, bool persistable) {
  if (!program || !name || (!dims && ndim)) return NULL_ARG("rill_block_add_var");
  rill_block_desc *b = rill_program_block(program, block);
  if (!b) return no_block(program, block);
  if (!*name)
    return rill_error(RILL_INVALID_ARGUMENT, "block %" PRId32 ": variable name is empty", block);
  if ((int)type < 0)
    return rill_error(RILL_INVALID_ARGUMENT, "variable '%s': invalid var type %d", name, (int)type);
  bool tensor = var_type_has_tensor((int32_t)type);
  if (tensor && rill_dtype_size(dtype) == 0)
    return rill_error(RILL_INVALID_ARGUMENT, "variable '%s': invalid dtype %d", name, (int)dtype);
  if (!tensor && ndim)
    return rill_error(RILL_INVALID_ARGUMENT,
                      "variable '%s': var type %d has no tensor description, so no dims", name,
                      (int)type);
  RILL_TRY(check_dims(name, dims, ndim, lod_level));
  if (rill_block_var_pos(b, name) >= 0)
    return rill_error(RILL_ALREADY_EXISTS, "block %" PRId32 ": variable '%s' already exists",
                      block, name);
  if (b->nvars >= UINT32_MAX / 4)
    return rill_error(RILL_OUT_OF_RANGE, "block %" PRId32 ": too many variables", block);
  rill_var_desc v = {0};
  v.name = rill_strdup(name);
  if (!v.name) return rill_oom();
  v.type = (int32_t)type;
  v.dtype = tensor ? dtype : RILL_DTYPE_FP32;
  v.has_tensor = tensor;
  rill_dims_set(&v.dims, dims, ndim);
  v.lod_level = tensor && type != RILL_VAR_SELECTED_ROWS ? lod_level : 0;
  v.persistable = persistable;
  v.has_flags = RILL_VARDESC_HAS_PERSISTABLE;
  if (tensor && type != RILL_VAR_SELECTED_ROWS) v.has_flags |= RILL_VARDESC_HAS_LOD_LEVEL;
  void *vars = b->vars;
  if (!rill_grow(&vars, &b->capvars, b->nvars + 1, sizeof(rill_var_desc))) {
    rill_var_desc_clear(&v);
    return rill_oom();
  }
  b->vars = vars;
  b->vars[b->nvars++] = v;
  rill_block_index_add(b, b->nvars - 1);
  rill_program_bump(program);
  return NULL;
}

rill_status *rill_var_set_flags(rill_program *program, int32_t block, const char *name,
                                bool persistable, bool is_parameter, bool stop_gradient) {
  if (!program || !name) return NULL_ARG("rill_var_set_flags");
  rill_block_desc *b = rill_program_block(program, block);
  if (!b) return no_block(program, block);
  ptrdiff_t pos = rill_block_var_pos(b, name);
  if (pos < 0)
    return rill_error(RILL_NOT_FOUND, "block %" PRId32 ": no variable '%s'", block, name);
  rill_var_desc *v = &b->vars[pos];
  v->persistable = persistable;
  v->is_parameter = is_parameter;
  v->stop_gradient = stop_gradient;
  v->has_flags |= RILL_VARDESC_HAS_PERSISTABLE | RILL_VARDESC_HAS_IS_PARAMETER |
                  RILL_VARDESC_HAS_STOP_GRADIENT;
  rill_program_bump(program);
  return NULL;
}

static rill_status *find_var(rill_program *program, int32_t block, const char *name,
                             const char *fn, rill_var_desc **out) {
  if (!program || !name) return NULL_ARG(fn);
  rill_block_desc *b = rill_program_block(program, block);
  if (!b) return no_block(program, block);
  ptrdiff_t pos = rill_block_var_pos(b, name);
  if (pos < 0) return rill_error(RILL_NOT_FOUND, "block %" PRId32 ": no variable '%s'", block, name);
  *out = &b->vars[pos];
  return NULL;
}

rill_status *rill_var_set_tensor(rill_program *program, int32_t block, const char *name,
                                 bool has_tensor, rill_dtype dtype, const int64_t *dims,
                                 size_t ndim, int32_t lod_level) {
  rill_var_desc *v = NULL;
  if (!dims && ndim) return NULL_ARG("rill_var_set_tensor");
  RILL_TRY(find_var(program, block, name, "rill_var_set_tensor", &v));
  if (!var_type_has_tensor(v->type) && has_tensor)
    return rill_error(RILL_INVALID_ARGUMENT,
                      "variable '%s': var type %d has no tensor description", name, (int)v->type);
  if (has_tensor && rill_dtype_size(dtype) == 0)
    return rill_error(RILL_INVALID_ARGUMENT, "variable '%s': invalid dtype %d", name, (int)dtype);
  RILL_TRY(check_dims(name, dims, ndim, lod_level));
  v->has_tensor = has_tensor;
  if (has_tensor) v->dtype = dtype;
  rill_dims_set(&v->dims, dims, has_tensor ? ndim : 0);
  v->lod_level = v->type == RILL_VAR_SELECTED_ROWS ? 0 : lod_level;
  if (v->lod_level) v->has_flags |= RILL_VARDESC_HAS_LOD_LEVEL;
  rill_program_bump(program);
  return NULL;
}

rill_status *rill_var_set_need_check_feed(rill_program *program, int32_t block, const char *name,
                                          bool need_check_feed) {
  rill_var_desc *v = NULL;
  RILL_TRY(find_var(program, block, name, "rill_var_set_need_check_feed", &v));
  v->need_check_feed = need_check_feed;
  v->has_flags |= RILL_VARDESC_HAS_NEED_CHECK_FEED;
  rill_program_bump(program);
  return NULL;
}

rill_status *rill_block_declare_var(rill_program *program, int32_t block, const char *name,
                                    rill_var_type type, rill_dtype dtype, const int64_t *dims,
                                    size_t ndim, int32_t lod_level, uint32_t flags) {
  const uint32_t known = RILL_DECLARE_PERSISTABLE | RILL_DECLARE_IS_PARAMETER |
                         RILL_DECLARE_STOP_GRADIENT | RILL_DECLARE_NEED_CHECK_FEED |
                         RILL_DECLARE_NO_TENSOR;
  if (flags & ~known)
    return rill_error(RILL_INVALID_ARGUMENT, "variable '%s': unknown declaration flags 0x%x",
                      name ? name : "?", (unsigned)(flags & ~known));
  RILL_TRY(rill_block_add_var(program, block, name, type, dtype, dims, ndim, lod_level,
                              (flags & RILL_DECLARE_PERSISTABLE) != 0));
  rill_block_desc *b = rill_program_block(program, block);
  rill_var_desc *v = &b->vars[b->nvars - 1];
  if (flags & (RILL_DECLARE_IS_PARAMETER | RILL_DECLARE_STOP_GRADIENT)) {
    v->is_parameter = (flags & RILL_DECLARE_IS_PARAMETER) != 0;
    v->stop_gradient = (flags & RILL_DECLARE_STOP_GRADIENT) != 0;
    v->has_flags |= RILL_VARDESC_HAS_PERSISTABLE | RILL_VARDESC_HAS_IS_PARAMETER |
                    RILL_VARDESC_HAS_STOP_GRADIENT;
  }
  if (flags & RILL_DECLARE_NEED_CHECK_FEED) {
    v->need_check_feed = true;
    v->has_flags |= RILL_VARDESC_HAS_NEED_CHECK_FEED;
  }
  if ((flags & RILL_DECLARE_NO_TENSOR) && var_type_has_tensor(v->type)) {
    v->has_tensor = false;
    rill_dims_set(&v->dims, NULL, 0);
    v->lod_level = 0;
  }
  return NULL;
}

rill_status *rill_block_remove_var(rill_program *program, int32_t block, const char *name) {
  rill_var_desc *v = NULL;
  RILL_TRY(find_var(program, block, name, "rill_block_remove_var", &v));
  rill_block_desc *b = &program->blocks[block];
  size_t pos = (size_t)(v - b->vars);
  rill_var_desc_clear(v);
  memmove(&b->vars[pos], &b->vars[pos + 1], (b->nvars - pos - 1) * sizeof *b->vars);
  b->nvars--;
  rill_block_index_drop(b);
  rill_program_bump(program);
  return NULL;
}

rill_status *rill_program_copy(const rill_program *program, rill_program **out) {
  if (!program || !out) return NULL_ARG("rill_program_copy");
  return rill_program_clone(program, out);
}

/* ------------------------------------------------------------ op builder ------ */

struct rill_op_builder {
  rill_op_desc op;
  bool lenient; /* attributes stored as given; inference checks the schema's */
};

rill_status *rill_op_builder_create(const char *type, rill_op_builder **out) {
  if (!type || !out) return NULL_ARG("rill_op_builder_create");
  if (!*type) return rill_error(RILL_INVALID_ARGUMENT, "op builder: empty op type");
  rill_op_builder *b = rill_calloc(1, sizeof *b);
  if (!b) return rill_oom();
  b->op.type = rill_strdup(type);
  if (!b->op.type) {
    rill_free(b);
    return rill_oom();
  }
  *out = b;
  return NULL;
}

void rill_op_builder_destroy(rill_op_builder *builder) {
  if (!builder) return;
  rill_op_desc_clear(&builder->op);
  rill_free(builder);
}

/* Sets slot `name` of `slots` (replacing one of the same name). */
static rill_status *set_slot(rill_op_builder *b, bool input, const char *slot,
                             const char *const *args, size_t nargs) {
  const char *fn = input ? "rill_op_builder_input" : "rill_op_builder_output";
  if (!b || !slot || (!args && nargs)) return NULL_ARG(fn);
  for (size_t i = 0; i < nargs; i++)
    if (!args[i])
      return rill_error(RILL_INVALID_ARGUMENT, "op '%s': argument %zu of slot '%s' is NULL",
                        b->op.type, i, slot);
  if (!*slot) return rill_error(RILL_INVALID_ARGUMENT, "op '%s': empty slot name", b->op.type);
  rill_op_slot s = {0};
  s.param = rill_strdup(slot);
  s.args = rill_calloc(nargs ? nargs : 1, sizeof *s.args);
  bool ok = s.param && s.args;
  for (size_t i = 0; ok && i < nargs; i++, s.nargs++) ok = (s.args[i] = rill_strdup(args[i])) != NULL;
  rill_op_slot **slots = input ? &b->op.inputs : &b->op.outputs;
  size_t *n = input ? &b->op.ninputs : &b->op.noutputs;
  size_t at = *n;
  for (size_t i = 0; i < *n; i++)
    if (strcmp((*slots)[i].param, slot) == 0) at = i;
  if (ok && at == *n) {
    void *p = rill_realloc(*slots, (*n + 1) * sizeof(rill_op_slot));
    if (p)
      *slots = p;
    else
      ok = false;
  }
  if (!ok) {
    rill_free(s.param);
    if (s.args)
      for (size_t i = 0; i < s.nargs; i++) rill_free(s.args[i]);
    rill_free(s.args);
    return rill_oom();
  }
  if (at < *n) {
    rill_op_slot *old = &(*slots)[at];
    rill_free(old->param);
    for (size_t i = 0; i < old->nargs; i++) rill_free(old->args[i]);
    rill_free(old->args);
  } else {
    (*n)++;
  }
  (*slots)[at] = s;
  return NULL;
}

rill_status *rill_op_builder_input(rill_op_builder *b, const char *slot, const char *const *args,
                                   size_t nargs) {
  return set_slot(b, true, slot, args, nargs);
}

rill_status *rill_op_builder_output(rill_op_builder *b, const char *slot, const char *const *args,
                                    size_t nargs) {
  return set_slot(b, false, slot, args, nargs);
}

/* Sets attribute `name` to a copy of `v` (replacing one of the same name). */
static rill_status *set_attr(rill_op_builder *b, const char *name, const rill_attr_value *v,
                             bool list_ok) {
  if (!b || !name || !list_ok) return NULL_ARG("rill_op_builder_attr");
  if (!*name) return rill_error(RILL_INVALID_ARGUMENT, "op '%s': empty attribute name", b->op.type);
  if ((v->type == RILL_ATTR_STRING && !v->v.s))
    return rill_error(RILL_INVALID_ARGUMENT, "op '%s': attribute '%s' is a NULL string", b->op.type,
                      name);
  if (v->type == RILL_ATTR_STRINGS)
    for (size_t i = 0; i < v->n; i++)
      if (!v->list.strings[i])
        return rill_error(RILL_INVALID_ARGUMENT, "op '%s': attribute '%s': string %zu is NULL",
                          b->op.type, name, i);
  rill_attr a = {0};
  a.name = rill_strdup(name);
  if (!a.name) return rill_oom();
  rill_status *st = rill_attr_value_copy(&a.value, v);
  if (st) {
    rill_free(a.name);
    return st;
  }
  size_t at = b->op.nattrs;
  for (size_t i = 0; i < b->op.nattrs; i++)
    if (strcmp(b->op.attrs[i].name, name) == 0) at = i;
  if (at == b->op.nattrs) {
    void *p = rill_realloc(b->op.attrs, (b->op.nattrs + 1) * sizeof(rill_attr));
    if (!p) {
      rill_attr_clear(&a);
      return rill_oom();
    }
    b->op.attrs = p;
    b->op.nattrs++;
  } else {
    rill_attr_clear(&b->op.attrs[at]);
  }
  b->op.attrs[at] = a;
  return NULL;
}

rill_status *rill_op_builder_attr_int(rill_op_builder *b, const char *name, int32_t v) {
  rill_attr_value a = {.type = RILL_ATTR_INT, .v.i = v};
  return set_attr(b, name, &a, true);
}

rill_status *rill_op_builder_attr_long(rill_op_builder *b, const char *name, int64_t v) {
  rill_attr_value a = {.type = RILL_ATTR_LONG, .v.l = v};
  return set_attr(b, name, &a, true);
}

rill_status *rill_op_builder_attr_float(rill_op_builder *b, const char *name, float v) {
  rill_attr_value a = {.type = RILL_ATTR_FLOAT, .v.f = v};
  return set_attr(b, name, &a, true);
}

rill_status *rill_op_builder_attr_double(rill_op_builder *b, const char *name, double v) {
  rill_attr_value a = {.type = RILL_ATTR_FLOAT64, .v.f64 = v};
  return set_attr(b, name, &a, true);
}

rill_status *rill_op_builder_attr_bool(rill_op_builder *b, const char *name, bool v) {
  rill_attr_value a = {.type = RILL_ATTR_BOOLEAN, .v.b = v};
  return set_attr(b, name, &a, true);
}

rill_status *rill_op_builder_attr_string(rill_op_builder *b, const char *name, const char *v) {
  rill_attr_value a = {.type = RILL_ATTR_STRING, .v.s = (char *)v};
  return set_attr(b, name, &a, true);
}

rill_status *rill_op_builder_attr_ints(rill_op_builder *b, const char *name, const int32_t *v,
                                       size_t n) {
  rill_attr_value a = {.type = RILL_ATTR_INTS, .n = n, .list.ints = (int32_t *)v};
  return set_attr(b, name, &a, v || !n);
}

rill_status *rill_op_builder_attr_longs(rill_op_builder *b, const char *name, const int64_t *v,
                                        size_t n) {
  rill_attr_value a = {.type = RILL_ATTR_LONGS, .n = n, .list.longs = (int64_t *)v};
  return set_attr(b, name, &a, v || !n);
}

rill_status *rill_op_builder_attr_floats(rill_op_builder *b, const char *name, const float *v,
                                         size_t n) {
  rill_attr_value a = {.type = RILL_ATTR_FLOATS, .n = n, .list.floats = (float *)v};
  return set_attr(b, name, &a, v || !n);
}

rill_status *rill_op_builder_attr_strings(rill_op_builder *b, const char *name,
                                          const char *const *v, size_t n) {
  rill_attr_value a = {.type = RILL_ATTR_STRINGS, .n = n, .list.strings = (char **)v};
  return set_attr(b, name, &a, v || !n);
}

rill_status *rill_op_builder_attr_bools(rill_op_builder *b, const char *name, const bool *v,
                                        size_t n) {
  rill_attr_value a = {.type = RILL_ATTR_BOOLEANS, .n = n, .list.bools = (bool *)v};
  return set_attr(b, name, &a, v || !n);
}

rill_status *rill_op_builder_attr_block(rill_op_builder *b, const char *name, int32_t idx) {
  rill_attr_value a = {.type = RILL_ATTR_BLOCK, .v.block = idx};
  return set_attr(b, name, &a, true);
}

/* Does a value of type `have` serve an attribute declared `want`? The same leniency as
 * rill_resolve_attrs: Paddle's INT for BOOLEAN, and LONG for INT where it fits. */
static bool attr_fits(rill_attr_type want, const rill_attr_value *v) {
  if (v->type == want) return true;
  if (want == RILL_ATTR_BOOLEAN && v->type == RILL_ATTR_INT) return true;
  if (want == RILL_ATTR_INT && v->type == RILL_ATTR_LONG)
    return v->v.l >= INT32_MIN && v->v.l <= INT32_MAX;
  return false;
}

static rill_status *check_schema(const rill_op_desc *op) {
  RILL_TRY(rill_registry_init());
  const rill_op_schema *s = rill_schema_find(op->type);
  if (!s) return NULL; /* unknown ops are allowed: validation reports them later */
  for (size_t i = 0; i < op->nattrs; i++) {
    const rill_attr *a = &op->attrs[i];
    int k = rill_schema_attr_index(s, a->name);
    if (k < 0 && strcmp(a->name, RILL_OP_DEVICE_ATTR) == 0) {
      /* Paddle's per-op placement, which every op takes (registry.h). */
      if (a->value.type != RILL_ATTR_STRING)
        return rill_error(RILL_INVALID_ARGUMENT, "op '%s': attribute '%s' is %s, not STRING",
                          op->type, a->name, rill_attr_type_name(a->value.type));
      continue;
    }
    if (k < 0) return rill_error(RILL_INVALID_ARGUMENT, "op '%s' has no attribute '%s'", op->type, a->name);
    if (!attr_fits(s->attrs[k].type, &a->value))
      return rill_error(RILL_INVALID_ARGUMENT, "op '%s': attribute '%s' is %s, the schema wants %s",
                        op->type, a->name, rill_attr_type_name(a->value.type),
                        rill_attr_type_name(s->attrs[k].type));
  }
  return NULL;
}

rill_status *rill_op_builder_insert(rill_op_builder *b, rill_program *program, int32_t block,
                                    size_t index) {
  if (!b || !program) return NULL_ARG("rill_op_builder_insert");
  if (!rill_program_block(program, block)) return no_block(program, block);
  if (!b->lenient) RILL_TRY(check_schema(&b->op));
  return rill_block_insert_op(program, block, index, &b->op);
}

rill_status *rill_op_builder_append(rill_op_builder *b, rill_program *program, int32_t block) {
  if (!b || !program) return NULL_ARG("rill_op_builder_append");
  if (!rill_program_block(program, block)) return no_block(program, block);
  return rill_op_builder_insert(b, program, block, program->blocks[block].nops);
}

rill_status *rill_op_builder_set_strict(rill_op_builder *b, bool strict) {
  if (!b) return NULL_ARG("rill_op_builder_set_strict");
  b->lenient = !strict;
  return NULL;
}

rill_status *rill_op_builder_set_attrs_of(const rill_op_builder *b, rill_program *program,
                                          int32_t block, size_t index) {
  if (!b || !program) return NULL_ARG("rill_op_builder_set_attrs_of");
  rill_block_desc *blk = rill_program_block(program, block);
  if (!blk) return no_block(program, block);
  if (index >= blk->nops)
    return rill_error(RILL_OUT_OF_RANGE, "block %" PRId32 ": no op #%zu (%zu ops)", block, index,
                      blk->nops);
  /* The edited op is built aside and checked whole, so a refused edit changes nothing. */
  rill_op_desc op;
  RILL_TRY(rill_op_desc_copy(&op, &blk->ops[index]));
  rill_status *st = NULL;
  for (size_t i = 0; i < b->op.nattrs && !st; i++) {
    const rill_attr *a = &b->op.attrs[i];
    size_t at = op.nattrs;
    for (size_t k = 0; k < op.nattrs; k++)
      if (strcmp(op.attrs[k].name, a->name) == 0) at = k;
    if (at == op.nattrs) {
      void *grown = rill_realloc(op.attrs, (op.nattrs + 1) * sizeof(rill_attr));
      if (!grown) {
        st = rill_oom();
        break;
      }
      op.attrs = grown;
      memset(&op.attrs[op.nattrs++], 0, sizeof(rill_attr));
    } else {
      rill_attr_clear(&op.attrs[at]);
    }
    st = rill_attr_copy(&op.attrs[at], a);
  }
  if (!st && !b->lenient) st = check_schema(&op);
  if (!st) st = rill_op_check_attrs(program, block, &op);
  if (st) {
    rill_op_desc_clear(&op);
    return st;
  }
  rill_op_desc_clear(&blk->ops[index]);
  blk->ops[index] = op;
  rill_program_bump(program);
  return NULL;
}

rill_status *rill_block_infer_op(rill_program *program, int32_t block, size_t index) {
  if (!program) return NULL_ARG("rill_block_infer_op");
  RILL_TRY(rill_validate_infer_op(program, block, index));
  rill_program_bump(program);
  return NULL;
}

rill_status *rill_block_remove_op(rill_program *program, int32_t block, size_t index) {
  if (!program) return NULL_ARG("rill_block_remove_op");
  rill_block_desc *b = rill_program_block(program, block);
  if (!b) return no_block(program, block);
  if (index >= b->nops)
    return rill_error(RILL_OUT_OF_RANGE, "block %" PRId32 ": no op #%zu (%zu ops)", block, index,
                      b->nops);
  rill_op_desc_clear(&b->ops[index]);
  memmove(&b->ops[index], &b->ops[index + 1], (b->nops - index - 1) * sizeof(rill_op_desc));
  b->nops--;
  rill_program_bump(program);
  return NULL;
}

/* ------------------------------------------------------- packed op ------------ */

/* The fields of a packed op description, read in order; every field ends with a NUL
 * inside the buffer. */
typedef struct {
  const char *p, *end;
  const char *type; /* for messages */
} packed_reader;

static rill_status *packed_field(packed_reader *r, const char *what, const char **out) {
  const char *nul = r->p < r->end ? memchr(r->p, '\0', (size_t)(r->end - r->p)) : NULL;
  if (!nul)
    return rill_error(RILL_INVALID_ARGUMENT, "packed op '%s': the description ends before its %s",
                      r->type ? r->type : "?", what);
  *out = r->p;
  r->p = nul + 1;
  return NULL;
}

static rill_status *packed_int(packed_reader *r, const char *what, int64_t lo, int64_t hi,
                               int64_t *out) {
  const char *s = NULL;
  RILL_TRY(packed_field(r, what, &s));
  char *end = NULL;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (!*s || *end || errno || v < lo || v > hi)
    return rill_error(RILL_INVALID_ARGUMENT, "packed op '%s': %s '%s' is not an integer in [%" PRId64
                      ", %" PRId64 "]", r->type ? r->type : "?", what, s, lo, hi);
  *out = v;
  return NULL;
}

static rill_status *packed_double(packed_reader *r, const char *what, double *out) {
  const char *s = NULL;
  RILL_TRY(packed_field(r, what, &s));
  char *end = NULL;
  *out = strtod(s, &end);
  if (!*s || *end)
    return rill_error(RILL_INVALID_ARGUMENT, "packed op '%s': %s '%s' is not a number",
                      r->type ? r->type : "?", what, s);
  return NULL;
}

/* The counts in a description can be no larger than its byte count: each item takes at
 * least one byte (its NUL). */
static rill_status *packed_count(packed_reader *r, const char *what, size_t *out) {
  int64_t n;
  RILL_TRY(packed_int(r, what, 0, (int64_t)(r->end - r->p), &n));
  *out = (size_t)n;
  return NULL;
}

static rill_status *packed_slots(packed_reader *r, rill_op_builder *b, bool input) {
  size_t nslots;
  RILL_TRY(packed_count(r, input ? "input slot count" : "output slot count", &nslots));
  for (size_t i = 0; i < nslots; i++) {
    const char *slot;
    size_t nargs;
    RILL_TRY(packed_field(r, "slot name", &slot));
    RILL_TRY(packed_count(r, "argument count", &nargs));
    const char **args = rill_calloc(nargs ? nargs : 1, sizeof *args);
    if (!args) return rill_oom();
    rill_status *st = NULL;
    for (size_t k = 0; k < nargs && !st; k++) st = packed_field(r, "argument", &args[k]);
    if (!st) st = set_slot(b, input, slot, args, nargs);
    rill_free(args);
    RILL_TRY(st);
  }
  return NULL;
}

/* One attribute: NAME TYPE VALUE, a list's VALUE being COUNT then its items. */
static rill_status *packed_attr(packed_reader *r, rill_op_builder *b) {
  const char *name;
  int64_t type;
  RILL_TRY(packed_field(r, "attribute name", &name));
  RILL_TRY(packed_int(r, "attribute type", 0, RILL_ATTR_TYPE_COUNT - 1, &type));
  rill_attr_value v = {.type = (rill_attr_type)type};
  int64_t i;
  double d;
  switch (v.type) {
    case RILL_ATTR_INT:
      RILL_TRY(packed_int(r, name, INT32_MIN, INT32_MAX, &i));
      v.v.i = (int32_t)i;
      break;
    case RILL_ATTR_LONG:
      RILL_TRY(packed_int(r, name, INT64_MIN, INT64_MAX, &v.v.l));
      break;
    case RILL_ATTR_BOOLEAN:
      RILL_TRY(packed_int(r, name, 0, 1, &i));
      v.v.b = i != 0;
      break;
    case RILL_ATTR_BLOCK:
      RILL_TRY(packed_int(r, name, 0, INT32_MAX, &i));
      v.v.block = (int32_t)i;
      break;
    case RILL_ATTR_FLOAT:
      RILL_TRY(packed_double(r, name, &d));
      v.v.f = (float)d;
      break;
    case RILL_ATTR_FLOAT64:
      RILL_TRY(packed_double(r, name, &v.v.f64));
      break;
    case RILL_ATTR_STRING:
      RILL_TRY(packed_field(r, name, (const char **)&v.v.s));
      break;
    case RILL_ATTR_INTS: case RILL_ATTR_LONGS: case RILL_ATTR_FLOATS: case RILL_ATTR_FLOAT64S:
    case RILL_ATTR_BOOLEANS: case RILL_ATTR_STRINGS: case RILL_ATTR_BLOCKS: {
      RILL_TRY(packed_count(r, name, &v.n));
      size_t item = v.type == RILL_ATTR_LONGS || v.type == RILL_ATTR_FLOAT64S ? 8
                    : v.type == RILL_ATTR_STRINGS ? sizeof(char *)
                    : v.type == RILL_ATTR_BOOLEANS ? sizeof(bool) : 4;
      v.list.ptr = rill_calloc(v.n ? v.n : 1, item);
      if (!v.list.ptr) return rill_oom();
      rill_status *st = NULL;
      for (size_t k = 0; k < v.n && !st; k++) {
        switch (v.type) {
          case RILL_ATTR_INTS:
            if (!(st = packed_int(r, name, INT32_MIN, INT32_MAX, &i))) v.list.ints[k] = (int32_t)i;
            break;
          case RILL_ATTR_BLOCKS:
            if (!(st = packed_int(r, name, 0, INT32_MAX, &i))) v.list.blocks[k] = (int32_t)i;
            break;
          case RILL_ATTR_LONGS: st = packed_int(r, name, INT64_MIN, INT64_MAX, &v.list.longs[k]); break;
          case RILL_ATTR_BOOLEANS:
            if (!(st = packed_int(r, name, 0, 1, &i))) v.list.bools[k] = i != 0;
            break;
          case RILL_ATTR_FLOATS:
            if (!(st = packed_double(r, name, &d))) v.list.floats[k] = (float)d;
            break;
          case RILL_ATTR_FLOAT64S: st = packed_double(r, name, &v.list.float64s[k]); break;
          default: st = packed_field(r, name, (const char **)&v.list.strings[k]); break;
        }
      }
      if (!st) st = set_attr(b, name, &v, true);
      rill_free(v.list.ptr); /* set_attr copied the items; strings point into the buffer */
      return st;
    }
    default:
      return rill_error(RILL_INVALID_ARGUMENT, "packed op '%s': attribute '%s' has type %s, "
                        "which a packed description cannot carry", r->type, name,
                        rill_attr_type_name(v.type));
  }
  return set_attr(b, name, &v, true);
}

rill_status *rill_block_insert_op_packed(rill_program *program, int32_t block, size_t index,
                                         const char *spec, size_t len, bool infer) {
  if (!program || (!spec && len)) return NULL_ARG("rill_block_insert_op_packed");
  rill_block_desc *blk = rill_program_block(program, block);
  if (!blk) return no_block(program, block);
  if (index == SIZE_MAX) index = blk->nops;
  packed_reader r = {spec, spec + len, NULL};
  const char *type = NULL;
  RILL_TRY(packed_field(&r, "op type", &type));
  r.type = type;
  rill_op_builder *b;
  RILL_TRY(rill_op_builder_create(type, &b));
  b->lenient = true;
  size_t nattrs = 0;
  rill_status *st = packed_slots(&r, b, true);
  if (!st) st = packed_slots(&r, b, false);
  if (!st) st = packed_count(&r, "attribute count", &nattrs);
  for (size_t i = 0; i < nattrs && !st; i++) st = packed_attr(&r, b);
  if (!st && r.p != r.end)
    st = rill_error(RILL_INVALID_ARGUMENT, "packed op '%s': %zu bytes left after the description",
                    type, (size_t)(r.end - r.p));
  if (!st) st = rill_op_builder_insert(b, program, block, index);
  rill_op_builder_destroy(b);
  if (st || !infer) return st;
  st = rill_validate_infer_op(program, block, index);
  if (st) {
    rill_status *rm = rill_block_remove_op(program, block, index);
    rill_status_destroy(rm);
    return st;
  }
  rill_program_bump(program);
  return NULL;
}
