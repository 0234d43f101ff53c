/* The in-memory program model: ownership, deep copy and equality, variable lookup
 * through a lazily built per-block name index, op helpers and attribute values. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "framework/program/program_impl.h"

/* ------------------------------------------------------------ attr types ------ */

static const char *const attr_type_names[RILL_ATTR_TYPE_COUNT] = {
    [RILL_ATTR_INT] = "INT",           [RILL_ATTR_FLOAT] = "FLOAT",
    [RILL_ATTR_STRING] = "STRING",     [RILL_ATTR_INTS] = "INTS",
    [RILL_ATTR_FLOATS] = "FLOATS",     [RILL_ATTR_STRINGS] = "STRINGS",
    [RILL_ATTR_BOOLEAN] = "BOOLEAN",   [RILL_ATTR_BOOLEANS] = "BOOLEANS",
    [RILL_ATTR_BLOCK] = "BLOCK",       [RILL_ATTR_LONG] = "LONG",
    [RILL_ATTR_BLOCKS] = "BLOCKS",     [RILL_ATTR_LONGS] = "LONGS",
    [RILL_ATTR_FLOAT64S] = "FLOAT64S", [RILL_ATTR_VAR] = "VAR",
    [RILL_ATTR_VARS] = "VARS",         [RILL_ATTR_FLOAT64] = "FLOAT64",
    [RILL_ATTR_SCALAR] = "SCALAR",     [RILL_ATTR_SCALARS] = "SCALARS",
};
_Static_assert(RILL_ATTR_TYPE_COUNT == 18, "attr_type_names and attr_elem_size need the new type");

const char *rill_attr_type_name(rill_attr_type type) {
  if ((unsigned)type >= RILL_ATTR_TYPE_COUNT) return "invalid";
  return attr_type_names[type];
}

/* Element size of a list type's array; 0 for scalar types and lists of strings. */
static size_t attr_elem_size(rill_attr_type t) {
  switch (t) {
    case RILL_ATTR_INTS: return sizeof(int32_t);
    case RILL_ATTR_FLOATS: return sizeof(float);
    case RILL_ATTR_BOOLEANS: return sizeof(bool);
    case RILL_ATTR_BLOCKS: return sizeof(int32_t);
    case RILL_ATTR_LONGS: return sizeof(int64_t);
    case RILL_ATTR_FLOAT64S: return sizeof(double);
    default: return 0;
  }
}

static bool attr_is_string_list(rill_attr_type t) {
  return t == RILL_ATTR_STRINGS || t == RILL_ATTR_VARS;
}

static bool attr_is_string(rill_attr_type t) { return t == RILL_ATTR_STRING || t == RILL_ATTR_VAR; }

static void free_strings(char **s, size_t n) {
  if (!s) return;
  for (size_t i = 0; i < n; i++) rill_free(s[i]);
  rill_free(s);
}

void rill_attr_value_clear(rill_attr_value *v) {
  if (!v) return;
  if (attr_is_string(v->type)) rill_free(v->v.s);
  if (attr_is_string_list(v->type))
    free_strings(v->list.strings, v->n);
  else if (attr_elem_size(v->type))
    rill_free(v->list.ptr);
  memset(v, 0, sizeof *v);
}

static char **copy_strings(char *const *src, size_t n) {
  char **d = rill_calloc(n ? n : 1, sizeof *d);
  if (!d) return NULL;
  for (size_t i = 0; i < n; i++) {
    d[i] = rill_strdup(src[i] ? src[i] : "");
    if (!d[i]) {
      free_strings(d, i);
      return NULL;
    }
  }
  return d;
}

rill_status *rill_attr_value_copy(rill_attr_value *dst, const rill_attr_value *src) {
  rill_attr_value v = *src;
  if ((unsigned)src->type >= RILL_ATTR_TYPE_COUNT)
    return rill_error(RILL_INVALID_ARGUMENT, "attribute value of unknown type %d", (int)src->type);
  if (attr_is_string(src->type)) {
    v.v.s = rill_strdup(src->v.s ? src->v.s : "");
    if (!v.v.s) return rill_oom();
  }
  if (attr_is_string_list(src->type)) {
    v.list.strings = copy_strings(src->list.strings, src->n);
    if (!v.list.strings) return rill_oom();
  } else if (attr_elem_size(src->type)) {
    size_t bytes;
    if (!rill_mul_size(src->n, attr_elem_size(src->type), &bytes)) return rill_oom();
    v.list.ptr = rill_malloc(bytes ? bytes : 1);
    if (!v.list.ptr) return rill_oom();
    if (bytes) memcpy(v.list.ptr, src->list.ptr, bytes);
  } else {
    v.n = 0;
    v.list.ptr = NULL;
  }
  *dst = v;
  return NULL;
}

static bool str_eq(const char *a, const char *b) {
  return strcmp(a ? a : "", b ? b : "") == 0;
}

/* Floats compare by bits: a round trip must give the same bits, NaN included. */
bool rill_attr_value_equal(const rill_attr_value *a, const rill_attr_value *b) {
  if (a->type != b->type) return false;
  switch (a->type) {
    case RILL_ATTR_INT: return a->v.i == b->v.i;
    case RILL_ATTR_FLOAT: return memcmp(&a->v.f, &b->v.f, sizeof(float)) == 0;
    case RILL_ATTR_STRING:
    case RILL_ATTR_VAR: return str_eq(a->v.s, b->v.s);
    case RILL_ATTR_BOOLEAN: return a->v.b == b->v.b;
    case RILL_ATTR_BLOCK: return a->v.block == b->v.block;
    case RILL_ATTR_LONG: return a->v.l == b->v.l;
    case RILL_ATTR_FLOAT64: return memcmp(&a->v.f64, &b->v.f64, sizeof(double)) == 0;
    case RILL_ATTR_SCALAR:
    case RILL_ATTR_SCALARS: return true; /* the value lives in the attr's raw fields */
    default: break;
  }
  if (a->n != b->n) return false;
  if (attr_is_string_list(a->type)) {
    for (size_t i = 0; i < a->n; i++)
      if (!str_eq(a->list.strings[i], b->list.strings[i])) return false;
    return true;
  }
  if (a->type == RILL_ATTR_BOOLEANS) {
    for (size_t i = 0; i < a->n; i++)
      if (a->list.bools[i] != b->list.bools[i]) return false;
    return true;
  }
  size_t es = attr_elem_size(a->type);
  return es == 0 || a->n == 0 || memcmp(a->list.ptr, b->list.ptr, a->n * es) == 0;
}

/* A growable string for formatting. */
typedef struct strbuf {
  char *s;
  size_t len, cap;
  bool oom;
} strbuf;

static void sb_printf(strbuf *b, const char *fmt, ...) RILL_PRINTF(2, 3);
static void sb_printf(strbuf *b, const char *fmt, ...) {
  if (b->oom) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) {
    b->oom = true;
    return;
  }
  void *s = b->s;
  if (!rill_grow(&s, &b->cap, b->len + (size_t)n + 1, 1)) {
    b->oom = true;
    return;
  }
  b->s = s;
  va_start(ap, fmt);
  vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

static void sb_quoted(strbuf *b, const char *s) {
  sb_printf(b, "\"");
  for (s = s ? s : ""; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      sb_printf(b, "\\%c", c);
    else if (c < 0x20)
      sb_printf(b, "\\x%02x", c);
    else
      sb_printf(b, "%c", c);
  }
  sb_printf(b, "\"");
}

rill_status *rill_attr_value_str(const rill_attr_value *v, char **out) {
  strbuf b = {0};
  switch (v->type) {
    case RILL_ATTR_INT: sb_printf(&b, "%" PRId32, v->v.i); break;
    case RILL_ATTR_FLOAT: sb_printf(&b, "%.9g", (double)v->v.f); break;
    case RILL_ATTR_STRING: sb_quoted(&b, v->v.s); break;
    case RILL_ATTR_BOOLEAN: sb_printf(&b, "%s", v->v.b ? "true" : "false"); break;
    case RILL_ATTR_BLOCK: sb_printf(&b, "block %" PRId32, v->v.block); break;
    case RILL_ATTR_LONG: sb_printf(&b, "%" PRId64, v->v.l); break;
    case RILL_ATTR_VAR: sb_printf(&b, "var %s", v->v.var ? v->v.var : ""); break;
    case RILL_ATTR_FLOAT64: sb_printf(&b, "%.17g", v->v.f64); break;
    case RILL_ATTR_SCALAR: sb_printf(&b, "<scalar>"); break;
    case RILL_ATTR_SCALARS: sb_printf(&b, "<scalars>"); break;
    case RILL_ATTR_INTS:
    case RILL_ATTR_FLOATS:
    case RILL_ATTR_STRINGS:
    case RILL_ATTR_BOOLEANS:
    case RILL_ATTR_BLOCKS:
    case RILL_ATTR_LONGS:
    case RILL_ATTR_FLOAT64S:
    case RILL_ATTR_VARS:
      sb_printf(&b, "%s[", v->type == RILL_ATTR_BLOCKS ? "blocks " : v->type == RILL_ATTR_VARS ? "vars " : "");
      for (size_t i = 0; i < v->n; i++) {
        if (i) sb_printf(&b, ", ");
        switch (v->type) {
          case RILL_ATTR_INTS: sb_printf(&b, "%" PRId32, v->list.ints[i]); break;
          case RILL_ATTR_FLOATS: sb_printf(&b, "%.9g", (double)v->list.floats[i]); break;
          case RILL_ATTR_STRINGS: sb_quoted(&b, v->list.strings[i]); break;
          case RILL_ATTR_BOOLEANS: sb_printf(&b, "%s", v->list.bools[i] ? "true" : "false"); break;
          case RILL_ATTR_BLOCKS: sb_printf(&b, "%" PRId32, v->list.blocks[i]); break;
          case RILL_ATTR_LONGS: sb_printf(&b, "%" PRId64, v->list.longs[i]); break;
          case RILL_ATTR_FLOAT64S: sb_printf(&b, "%.17g", v->list.float64s[i]); break;
          default: sb_printf(&b, "%s", v->list.vars[i] ? v->list.vars[i] : ""); break;
        }
      }
      sb_printf(&b, "]");
      break;
    default:
      return rill_error(RILL_INVALID_ARGUMENT, "attribute value of unknown type %d", (int)v->type);
  }
  if (!b.oom && !b.s) sb_printf(&b, "%s", "");
  if (b.oom) {
    rill_free(b.s);
    return rill_oom();
  }
  *out = b.s;
  return NULL;
}

/* ------------------------------------------------------------ raw fields ------ */

void rill_raw_clear(rill_raw_fields *r) {
  rill_free(r->bytes);
  r->bytes = NULL;
  r->size = 0;
}

bool rill_raw_copy(rill_raw_fields *dst, const rill_raw_fields *src) {
  dst->bytes = NULL;
  dst->size = 0;
  if (!src->size) return true;
  dst->bytes = rill_malloc(src->size);
  if (!dst->bytes) return false;
  memcpy(dst->bytes, src->bytes, src->size);
  dst->size = src->size;
  return true;
}

bool rill_raw_equal(const rill_raw_fields *a, const rill_raw_fields *b) {
  return a->size == b->size && (a->size == 0 || memcmp(a->bytes, b->bytes, a->size) == 0);
}

/* ------------------------------------------------------------ ops ------------- */

void rill_attr_clear(rill_attr *a) {
  rill_free(a->name);
  rill_attr_value_clear(&a->value);
  rill_raw_clear(&a->raw);
  a->name = NULL;
}

rill_status *rill_attr_copy(rill_attr *dst, const rill_attr *src) {
  rill_attr a = {0};
  a.name = rill_strdup(src->name ? src->name : "");
  if (!a.name) return rill_oom();
  rill_status *st = rill_attr_value_copy(&a.value, &src->value);
  if (st) {
    rill_free(a.name);
    return st;
  }
  if (!rill_raw_copy(&a.raw, &src->raw)) {
    rill_attr_clear(&a);
    return rill_oom();
  }
  *dst = a;
  return NULL;
}

static void slots_free(rill_op_slot *s, size_t n) {
  if (!s) return;
  for (size_t i = 0; i < n; i++) {
    rill_free(s[i].param);
    free_strings(s[i].args, s[i].nargs);
  }
  rill_free(s);
}

static bool slots_copy(rill_op_slot **dst, const rill_op_slot *src, size_t n) {
  *dst = NULL;
  if (!n) return true;
  rill_op_slot *d = rill_calloc(n, sizeof *d);
  if (!d) return false;
  for (size_t i = 0; i < n; i++) {
    d[i].param = rill_strdup(src[i].param ? src[i].param : "");
    d[i].args = d[i].param ? copy_strings(src[i].args, src[i].nargs) : NULL;
    if (!d[i].args) {
      slots_free(d, i + 1);
      return false;
    }
    d[i].nargs = src[i].nargs;
  }
  *dst = d;
  return true;
}

void rill_op_desc_clear(rill_op_desc *op) {
  if (!op) return;
  rill_free(op->type);
  slots_free(op->inputs, op->ninputs);
  slots_free(op->outputs, op->noutputs);
  if (op->attrs)
    for (size_t i = 0; i < op->nattrs; i++) rill_attr_clear(&op->attrs[i]);
  rill_free(op->attrs);
  rill_raw_clear(&op->raw);
  memset(op, 0, sizeof *op);
}

rill_status *rill_op_desc_copy(rill_op_desc *dst, const rill_op_desc *src) {
  rill_op_desc d = {0};
  d.has_is_target = src->has_is_target;
  d.is_target = src->is_target;
  d.type = rill_strdup(src->type ? src->type : "");
  if (!d.type) goto oom;
  if (!slots_copy(&d.inputs, src->inputs, src->ninputs)) goto oom;
  d.ninputs = src->ninputs;
  if (!slots_copy(&d.outputs, src->outputs, src->noutputs)) goto oom;
  d.noutputs = src->noutputs;
  if (src->nattrs) {
    d.attrs = rill_calloc(src->nattrs, sizeof *d.attrs);
    if (!d.attrs) goto oom;
    for (; d.nattrs < src->nattrs; d.nattrs++) {
      rill_status *st = rill_attr_copy(&d.attrs[d.nattrs], &src->attrs[d.nattrs]);
      if (st) {
        rill_op_desc_clear(&d);
        return st;
      }
    }
  }
  if (!rill_raw_copy(&d.raw, &src->raw)) goto oom;
  *dst = d;
  return NULL;
oom:
  rill_op_desc_clear(&d);
  return rill_oom();
}

static const rill_op_slot *find_slot(const rill_op_slot *s, size_t n, const char *param) {
  if (!param) return NULL;
  for (size_t i = 0; i < n; i++)
    if (s[i].param && strcmp(s[i].param, param) == 0) return &s[i];
  return NULL;
}

const rill_op_slot *rill_op_input(const rill_op_desc *op, const char *param) {
  return op ? find_slot(op->inputs, op->ninputs, param) : NULL;
}

const rill_op_slot *rill_op_output(const rill_op_desc *op, const char *param) {
  return op ? find_slot(op->outputs, op->noutputs, param) : NULL;
}

const rill_attr *rill_op_attr(const rill_op_desc *op, const char *name) {
  if (!op || !name) return NULL;
  for (size_t i = 0; i < op->nattrs; i++)
    if (op->attrs[i].name && strcmp(op->attrs[i].name, name) == 0) return &op->attrs[i];
  return NULL;
}

rill_status *rill_op_check_attrs(const rill_program *p, int32_t block, const rill_op_desc *op) {
  for (size_t i = 0; i < op->nattrs; i++) {
    const rill_attr *a = &op->attrs[i];
    const char *name = a->name ? a->name : "";
    if ((unsigned)a->value.type >= RILL_ATTR_TYPE_COUNT)
      return rill_error(RILL_INVALID_ARGUMENT, "attr '%s' has unknown type %d", name,
                        (int)a->value.type);
    const int32_t *refs = NULL;
    size_t nrefs = 0;
    if (a->value.type == RILL_ATTR_BLOCK) {
      refs = &a->value.v.block;
      nrefs = 1;
    } else if (a->value.type == RILL_ATTR_BLOCKS) {
      refs = a->value.list.blocks;
      nrefs = a->value.n;
    }
    for (size_t k = 0; k < nrefs; k++) {
      if (refs[k] < 0 || (size_t)refs[k] >= p->nblocks)
        return rill_error(RILL_INVALID_ARGUMENT,
                          "attr '%s' refers to block %" PRId32 ", but the program has %zu blocks",
                          name, refs[k], p->nblocks);
      if (refs[k] == block)
        return rill_error(RILL_INVALID_ARGUMENT, "attr '%s' refers to its own block %" PRId32,
                          name, block);
    }
  }
  return NULL;
}

/* ------------------------------------------------------------ vars, blocks ---- */

void rill_var_desc_clear(rill_var_desc *v) {
  if (!v) return;
  rill_free(v->name);
  rill_raw_clear(&v->type_raw);
  rill_raw_clear(&v->raw);
  memset(v, 0, sizeof *v);
}

rill_status *rill_var_desc_copy(rill_var_desc *dst, const rill_var_desc *src) {
  rill_var_desc v = *src;
  v.type_raw = (rill_raw_fields){0};
  v.raw = (rill_raw_fields){0};
  v.name = rill_strdup(src->name ? src->name : "");
  if (!v.name || !rill_raw_copy(&v.type_raw, &src->type_raw) || !rill_raw_copy(&v.raw, &src->raw)) {
    rill_var_desc_clear(&v);
    return rill_oom();
  }
  *dst = v;
  return NULL;
}

void rill_block_desc_clear(rill_block_desc *b) {
  if (!b) return;
  for (size_t i = 0; i < b->nvars; i++) rill_var_desc_clear(&b->vars[i]);
  rill_free(b->vars);
  for (size_t i = 0; i < b->nops; i++) rill_op_desc_clear(&b->ops[i]);
  rill_free(b->ops);
  rill_raw_clear(&b->raw);
  rill_block_index_drop(b);
  memset(b, 0, sizeof *b);
}

/* ------------------------------------------------------------ name index ------ */

/* An index with room for `nvars` variables and one more (the next one a builder adds). */
static struct rill_name_index *index_new(size_t nvars) {
  if (nvars >= UINT32_MAX / 4) return NULL;
  struct rill_name_index *ix = rill_calloc(1, sizeof *ix);
  if (!ix) return NULL;
  ix->map.borrow_keys = true;
  rill_status *st = rill_strmap_reserve(&ix->map, nvars + 1);
  if (st) {
    rill_status_destroy(st);
    rill_free(ix);
    return NULL;
  }
  return ix;
}

static void index_free(struct rill_name_index *ix) {
  if (!ix) return;
  rill_strmap_clear(&ix->map);
  rill_free(ix);
}

/* Inserts var `pos`; returns the position of an existing var of the same name, -1 once
 * inserted, or -2 when out of memory. Keys are the vars' own names. */
static ptrdiff_t index_put(struct rill_name_index *ix, const rill_var_desc *vars, size_t pos) {
  const char *name = vars[pos].name ? vars[pos].name : "";
  uint64_t h = rill_str_hash(name);
  const rill_strmap_value *have = rill_strmap_find(&ix->map, name, h);
  if (have) return (ptrdiff_t)have->index;
  rill_status *st = rill_strmap_set(&ix->map, name, h, (rill_strmap_value){.index = pos});
  if (!st) return -1;
  rill_status_destroy(st);
  return -2;
}

static struct rill_name_index *index_load(const rill_block_desc *b) {
  return __atomic_load_n(&b->index, __ATOMIC_ACQUIRE);
}

rill_status *rill_block_index_build(rill_block_desc *b) {
  struct rill_name_index *ix = index_new(b->nvars);
  if (!ix) return rill_oom();
  for (size_t i = 0; i < b->nvars; i++) {
    ptrdiff_t dup = index_put(ix, b->vars, i);
    if (dup >= 0) {
      index_free(ix);
      return rill_error(RILL_ALREADY_EXISTS, "variable '%s' is declared twice (#%td and #%zu)",
                        b->vars[i].name ? b->vars[i].name : "", dup, i);
    }
  }
  ix->nvars = b->nvars;
  index_free(b->index);
  b->index = ix;
  return NULL;
}

void rill_block_index_drop(rill_block_desc *b) {
  index_free(b->index);
  b->index = NULL;
}

void rill_block_index_add(rill_block_desc *b, size_t pos) {
  struct rill_name_index *ix = b->index;
  if (!ix) return;
  if (ix->nvars != pos || pos + 1 != b->nvars || index_put(ix, b->vars, pos) != -1) {
    /* give up on the table: rebuilt lazily on the next lookup */
    rill_block_index_drop(b);
    return;
  }
  ix->nvars = pos + 1;
}

/* Lookups may run concurrently on a program nobody edits: the first one builds the
 * index and publishes it with a compare-and-swap; losers free theirs. An index never
 * goes away while the program is only read (edits, which drop it, are exclusive). */
static const struct rill_name_index *index_get(const rill_block_desc *b) {
  struct rill_name_index *ix = index_load(b);
  if (ix) return ix->nvars == b->nvars ? ix : NULL;
  if (b->nvars < 8) return NULL; /* a scan is as fast */
  ix = index_new(b->nvars);
  if (!ix) return NULL;
  for (size_t i = 0; i < b->nvars; i++)
    if (index_put(ix, b->vars, i) == -2) {
      index_free(ix);
      return NULL;
    }
  ix->nvars = b->nvars;
  struct rill_name_index *expected = NULL;
  rill_block_desc *mb = (rill_block_desc *)b;
  if (!__atomic_compare_exchange_n(&mb->index, &expected, ix, false, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE)) {
    index_free(ix);
    ix = expected;
  }
  return ix->nvars == b->nvars ? ix : NULL;
}

ptrdiff_t rill_block_var_pos(const rill_block_desc *b, const char *name) {
  if (!b || !name) return -1;
  const struct rill_name_index *ix = index_get(b);
  if (ix) {
    const rill_strmap_value *at = rill_strmap_lookup(&ix->map, name);
    return at && at->index < b->nvars ? (ptrdiff_t)at->index : -1;
  }
  for (size_t i = 0; i < b->nvars; i++)
    if (str_eq(b->vars[i].name, name)) return (ptrdiff_t)i;
  return -1;
}

/* ------------------------------------------------------------ programs -------- */

static uint64_t next_program_id(void) {
  static uint64_t counter;
  return __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
}

rill_program *rill_program_alloc(void) {
  rill_program *p = rill_calloc(1, sizeof *p);
  if (p) p->id = next_program_id();
  return p;
}

void rill_program_free(rill_program *p) {
  if (!p) return;
  for (size_t i = 0; i < p->nblocks; i++) rill_block_desc_clear(&p->blocks[i]);
  rill_free(p->blocks);
  rill_raw_clear(&p->raw);
  rill_free(p);
}

void rill_program_bump(rill_program *p) { p->revision++; }

void rill_program_touch(rill_program *p) {
  if (!p) return;
  for (size_t i = 0; i < p->nblocks; i++) rill_block_index_drop(&p->blocks[i]);
  p->revision++;
}

rill_block_desc *rill_program_block(const rill_program *p, int32_t idx) {
  if (!p || idx < 0 || (size_t)idx >= p->nblocks) return NULL;
  return &p->blocks[idx];
}

rill_status *rill_program_add_block(rill_program *p, int32_t parent_idx, int32_t *out_idx) {
  if (parent_idx != -1 && !rill_program_block(p, parent_idx))
    return rill_error(RILL_INVALID_ARGUMENT,
                      "parent block %" PRId32 " does not exist (the program has %zu blocks)",
                      parent_idx, p->nblocks);
  if (p->nblocks >= INT32_MAX) return rill_error(RILL_OUT_OF_RANGE, "too many blocks");
  size_t depth = parent_idx == -1 ? 0 : rill_program_block_depth(p, parent_idx) + 1;
  if (depth > RILL_MAX_BLOCK_DEPTH)
    return rill_error(RILL_OUT_OF_RANGE,
                      "a block under block %" PRId32 " would be nested %zu levels deep (the limit "
                      "is RILL_MAX_BLOCK_DEPTH, %d)",
                      parent_idx, depth, RILL_MAX_BLOCK_DEPTH);
  void *blocks = p->blocks;
  if (!rill_grow(&blocks, &p->capblocks, p->nblocks + 1, sizeof(rill_block_desc)))
    return rill_oom();
  p->blocks = blocks;
  rill_block_desc *b = &p->blocks[p->nblocks];
  memset(b, 0, sizeof *b);
  b->idx = (int32_t)p->nblocks;
  b->parent_idx = parent_idx;
  b->forward_block_idx = -1;
  p->nblocks++;
  if (out_idx) *out_idx = b->idx;
  rill_program_bump(p);
  return NULL;
}

size_t rill_program_block_depth(const rill_program *p, int32_t block) {
  size_t depth = 0;
  const rill_block_desc *b = rill_program_block(p, block);
  /* Bounded like rill_program_find_var, for hand-edited cycles. */
  while (b && b->parent_idx != -1 && depth <= p->nblocks) {
    b = rill_program_block(p, b->parent_idx);
    if (b) depth++;
  }
  return depth;
}

rill_var_desc *rill_block_find_var(const rill_program *p, int32_t block, const char *name) {
  rill_block_desc *b = rill_program_block(p, block);
  ptrdiff_t pos = rill_block_var_pos(b, name);
  return pos < 0 ? NULL : &b->vars[pos];
}

rill_var_desc *rill_program_find_var(const rill_program *p, int32_t block, const char *name) {
  /* Parents have smaller indexes in every valid program; the step bound keeps a
   * hand-edited cycle from looping forever. */
  for (size_t steps = 0; p && steps <= p->nblocks; steps++) {
    rill_block_desc *b = rill_program_block(p, block);
    if (!b) return NULL;
    ptrdiff_t pos = rill_block_var_pos(b, name);
    if (pos >= 0) return &b->vars[pos];
    block = b->parent_idx;
  }
  return NULL;
}

static bool slots_equal(const rill_op_slot *a, size_t na, const rill_op_slot *b, size_t nb) {
  if (na != nb) return false;
  for (size_t i = 0; i < na; i++) {
    if (!str_eq(a[i].param, b[i].param) || a[i].nargs != b[i].nargs) return false;
    for (size_t k = 0; k < a[i].nargs; k++)
      if (!str_eq(a[i].args[k], b[i].args[k])) return false;
  }
  return true;
}

static bool op_equal(const rill_op_desc *a, const rill_op_desc *b) {
  if (!str_eq(a->type, b->type) || a->has_is_target != b->has_is_target ||
      a->is_target != b->is_target || a->nattrs != b->nattrs || !rill_raw_equal(&a->raw, &b->raw))
    return false;
  if (!slots_equal(a->inputs, a->ninputs, b->inputs, b->ninputs) ||
      !slots_equal(a->outputs, a->noutputs, b->outputs, b->noutputs))
    return false;
  for (size_t i = 0; i < a->nattrs; i++) {
    const rill_attr *x = &a->attrs[i], *y = &b->attrs[i];
    if (!str_eq(x->name, y->name) || !rill_attr_value_equal(&x->value, &y->value) ||
        !rill_raw_equal(&x->raw, &y->raw))
      return false;
  }
  return true;
}

static bool var_equal(const rill_var_desc *a, const rill_var_desc *b) {
  if (!str_eq(a->name, b->name) || a->type != b->type || a->has_tensor != b->has_tensor ||
      a->lod_level != b->lod_level || a->persistable != b->persistable ||
      a->need_check_feed != b->need_check_feed || a->is_parameter != b->is_parameter ||
      a->stop_gradient != b->stop_gradient || a->has_flags != b->has_flags ||
      !rill_raw_equal(&a->type_raw, &b->type_raw) || !rill_raw_equal(&a->raw, &b->raw))
    return false;
  if (a->has_tensor && (a->dtype != b->dtype || !rill_dims_equal(&a->dims, &b->dims))) return false;
  return true;
}

bool rill_program_equal(const rill_program *a, const rill_program *b) {
  if (a == b) return true;
  if (!a || !b) return false;
  if (a->nblocks != b->nblocks || a->has_version != b->has_version ||
      (a->has_version && (a->version != b->version || a->version_legacy != b->version_legacy)) ||
      !rill_raw_equal(&a->raw, &b->raw))
    return false;
  for (size_t i = 0; i < a->nblocks; i++) {
    const rill_block_desc *x = &a->blocks[i], *y = &b->blocks[i];
    if (x->idx != y->idx || x->parent_idx != y->parent_idx ||
        x->has_forward_block_idx != y->has_forward_block_idx ||
        x->forward_block_idx != y->forward_block_idx || x->nvars != y->nvars ||
        x->nops != y->nops || !rill_raw_equal(&x->raw, &y->raw))
      return false;
    for (size_t k = 0; k < x->nvars; k++)
      if (!var_equal(&x->vars[k], &y->vars[k])) return false;
    for (size_t k = 0; k < x->nops; k++)
      if (!op_equal(&x->ops[k], &y->ops[k])) return false;
  }
  return true;
}

static rill_status *block_copy(rill_block_desc *d, const rill_block_desc *s) {
  memset(d, 0, sizeof *d);
  d->idx = s->idx;
  d->parent_idx = s->parent_idx;
  d->forward_block_idx = s->forward_block_idx;
  d->has_forward_block_idx = s->has_forward_block_idx;
  if (!rill_raw_copy(&d->raw, &s->raw)) return rill_oom();
  if (s->nvars) {
    d->vars = rill_calloc(s->nvars, sizeof *d->vars);
    if (!d->vars) return rill_oom();
    d->capvars = s->nvars;
    for (; d->nvars < s->nvars; d->nvars++)
      RILL_TRY(rill_var_desc_copy(&d->vars[d->nvars], &s->vars[d->nvars]));
  }
  if (s->nops) {
    d->ops = rill_calloc(s->nops, sizeof *d->ops);
    if (!d->ops) return rill_oom();
    d->capops = s->nops;
    for (; d->nops < s->nops; d->nops++)
      RILL_TRY(rill_op_desc_copy(&d->ops[d->nops], &s->ops[d->nops]));
  }
  return NULL;
}

rill_status *rill_program_clone(const rill_program *p, rill_program **out) {
  if (!p || !out) return rill_error(RILL_INVALID_ARGUMENT, "rill_program_clone: NULL argument");
  rill_program *c = rill_program_alloc();
  if (!c) return rill_oom();
  c->has_version = p->has_version;
  c->version = p->version;
  c->version_legacy = p->version_legacy;
  c->grad_passes = p->grad_passes;
  rill_status *st = NULL;
  if (!rill_raw_copy(&c->raw, &p->raw)) {
    st = rill_oom();
    goto fail;
  }
  if (p->nblocks) {
    c->blocks = rill_calloc(p->nblocks, sizeof *c->blocks);
    if (!c->blocks) {
      st = rill_oom();
      goto fail;
    }
    c->capblocks = p->nblocks;
    for (; c->nblocks < p->nblocks; c->nblocks++) {
      /* count the block before filling it, so that a failure frees what it holds */
      st = block_copy(&c->blocks[c->nblocks], &p->blocks[c->nblocks]);
      if (st) {
        c->nblocks++;
        goto fail;
      }
    }
  }
  *out = c;
  return NULL;
fail:
  rill_program_free(c);
  return st;
}

rill_status *rill_block_insert_op(rill_program *p, int32_t block, size_t index,
                                  const rill_op_desc *op) {
  if (!p || !op) return rill_error(RILL_INVALID_ARGUMENT, "rill_block_insert_op: NULL argument");
  rill_block_desc *b = rill_program_block(p, block);
  if (!b)
    return rill_error(RILL_INVALID_ARGUMENT, "block %" PRId32 " does not exist (the program has %zu blocks)",
                      block, p->nblocks);
  if (!op->type || !*op->type)
    return rill_error(RILL_INVALID_ARGUMENT, "block %" PRId32 ": op without a type", block);
  if (index > b->nops)
    return rill_error(RILL_OUT_OF_RANGE, "block %" PRId32 ": op index %zu is past the end (%zu ops)",
                      block, index, b->nops);
  rill_status *st = rill_op_check_attrs(p, block, op);
  if (st) return rill_status_wrap(st, "block %" PRId32 ", op '%s'", block, op->type);
  rill_op_desc copy;
  RILL_TRY(rill_op_desc_copy(&copy, op));
  void *ops = b->ops;
  if (!rill_grow(&ops, &b->capops, b->nops + 1, sizeof(rill_op_desc))) {
    rill_op_desc_clear(&copy);
    return rill_oom();
  }
  b->ops = ops;
  memmove(&b->ops[index + 1], &b->ops[index], (b->nops - index) * sizeof(rill_op_desc));
  b->ops[index] = copy;
  b->nops++;
  rill_program_bump(p);
  return NULL;
}
