/* ProgramDesc <-> bytes. protobuf-c parses and packs the wire format (its allocations
 * go through rill_malloc); this file converts its messages to rill's structs, checking
 * what the rest of rill relies on, and back. Whatever rill does not model -- unknown
 * fields, VarType's reader and tuple, a tensor description the var type does not use,
 * an odd version message -- is kept as serialized fields (rill_raw_fields) and handed
 * back to protobuf-c as unknown fields when packing, so files keep what they carried. */
#include <inttypes.h>
#include <stddef.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "framework/base/arena.h"
#include "framework/program/program_impl.h"
#include "proto/framework.pb-c.h"

typedef Paddle__Framework__Proto__ProgramDesc PbProgram;
typedef Paddle__Framework__Proto__BlockDesc PbBlock;
typedef Paddle__Framework__Proto__VarDesc PbVar;
typedef Paddle__Framework__Proto__VarType PbVarType;
typedef Paddle__Framework__Proto__VarType__TensorDesc PbTensor;
typedef Paddle__Framework__Proto__VarType__LoDTensorDesc PbLoDTensor;
typedef Paddle__Framework__Proto__VarType__LoDTensorArrayDesc PbTensorArray;
typedef Paddle__Framework__Proto__OpDesc PbOp;
typedef Paddle__Framework__Proto__OpDesc__Var PbSlot;
typedef Paddle__Framework__Proto__OpDesc__Attr PbAttr;
typedef Paddle__Framework__Proto__Version PbVersion;

/* Field numbers rill re-emits from raw bytes. */
enum {
  FIELD_PROGRAM_LEGACY_VERSION = 2,
  FIELD_PROGRAM_VERSION = 4,
  FIELD_VARTYPE_SELECTED_ROWS = 2,
  FIELD_VARTYPE_LOD_TENSOR = 3,
  FIELD_VARTYPE_TENSOR_ARRAY = 4,
  FIELD_VARTYPE_READER = 5,
  FIELD_VARTYPE_TUPLE = 7,
};

/* protobuf-c's allocations go through rill's allocator; `oom` tells an allocation
 * failure apart from malformed data when unpacking returns NULL. */
typedef struct pb_alloc_ctx {
  bool oom;
} pb_alloc_ctx;

static void *pb_alloc(void *ctx, size_t size) {
  void *p = rill_malloc(size);
  if (!p) ((pb_alloc_ctx *)ctx)->oom = true;
  return p;
}

static void pb_free(void *ctx, void *ptr) {
  (void)ctx;
  rill_free(ptr);
}

/* ------------------------------------------------------------ raw builder ----- */

typedef struct rawbuf {
  uint8_t *p;
  size_t len, cap;
  bool oom;
  uint32_t bad_tag; /* an unknown field's number beyond protobuf's range, or 0 */
} rawbuf;

/* Protobuf's largest field number (2^29 - 1). protobuf-c reads larger ones into unknown
 * fields; Paddle's protobuf refuses them, and so does rill. */
#define FIELD_NUMBER_MAX 0x1fffffffu

static uint8_t *rb_reserve(rawbuf *b, size_t n) {
  if (b->oom) return NULL;
  size_t need;
  void *p = b->p;
  if (!rill_add_size(b->len, n, &need) || !rill_grow(&p, &b->cap, need, 1)) {
    b->oom = true;
    return NULL;
  }
  b->p = p;
  uint8_t *at = b->p + b->len;
  b->len += n;
  return at;
}

static void rb_varint(rawbuf *b, uint64_t v) {
  uint8_t tmp[10];
  size_t n = 0;
  do {
    tmp[n++] = (uint8_t)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
    v >>= 7;
  } while (v);
  uint8_t *at = rb_reserve(b, n);
  if (at) memcpy(at, tmp, n);
}

static void rb_unknown(rawbuf *b, const ProtobufCMessageUnknownField *f) {
  if (f->tag > FIELD_NUMBER_MAX && !b->bad_tag) b->bad_tag = f->tag;
  rb_varint(b, ((uint64_t)f->tag << 3) | (uint64_t)f->wire_type);
  uint8_t *at = rb_reserve(b, f->len);
  if (at && f->len) memcpy(at, f->data, f->len);
}

static void rb_unknowns(rawbuf *b, const ProtobufCMessage *m) {
  for (size_t i = 0; i < m->n_unknown_fields; i++) rb_unknown(b, &m->unknown_fields[i]);
}

static void rb_message(rawbuf *b, uint32_t field, const ProtobufCMessage *m) {
  size_t size = protobuf_c_message_get_packed_size(m);
  rb_varint(b, ((uint64_t)field << 3) | PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED);
  rb_varint(b, size);
  uint8_t *at = rb_reserve(b, size);
  if (at && size) protobuf_c_message_pack(m, at);
}

/* Moves the bytes into `r`; an error if an allocation failed or a field number is out
 * of range. */
static rill_status *rb_finish(rawbuf *b, rill_raw_fields *r) {
  if (b->oom || b->bad_tag) {
    rill_free(b->p);
    return b->oom ? rill_oom()
                  : rill_error(RILL_CORRUPT, "an unknown field has number %u, beyond protobuf's largest (%u)",
                               b->bad_tag, FIELD_NUMBER_MAX);
  }
  r->bytes = b->p;
  r->size = b->len;
  if (!b->len) {
    rill_free(b->p);
    r->bytes = NULL;
  }
  return NULL;
}

/* ------------------------------------------------------------ decoding -------- */

static rill_status *dup_str(char **dst, const char *src) {
  *dst = rill_strdup(src ? src : "");
  return *dst ? NULL : rill_oom();
}

static rill_status *dup_strs(char ***dst, char *const *src, size_t n) {
  *dst = NULL;
  char **d = rill_calloc(n ? n : 1, sizeof *d);
  if (!d) return rill_oom();
  for (size_t i = 0; i < n; i++) {
    d[i] = rill_strdup(src[i] ? src[i] : "");
    if (!d[i]) {
      for (size_t k = 0; k < i; k++) rill_free(d[k]);
      rill_free(d);
      return rill_oom();
    }
  }
  *dst = d;
  return NULL;
}

static void *dup_mem(const void *src, size_t n, size_t elem) {
  size_t bytes;
  if (!rill_mul_size(n, elem, &bytes)) return NULL;
  void *d = rill_malloc(bytes ? bytes : 1);
  if (d && bytes) memcpy(d, src, bytes);
  return d;
}

/* Which typed value fields an Attr message carries, as a mask of (1 << AttrType). */
static uint32_t attr_fields_present(const PbAttr *m) {
  uint32_t mask = 0;
#define PRESENT(cond, type) \
  if (cond) mask |= 1u << (type)
  PRESENT(m->has_i, RILL_ATTR_INT);
  PRESENT(m->has_f, RILL_ATTR_FLOAT);
  PRESENT(m->s != NULL, RILL_ATTR_STRING);
  PRESENT(m->n_ints, RILL_ATTR_INTS);
  PRESENT(m->n_floats, RILL_ATTR_FLOATS);
  PRESENT(m->n_strings, RILL_ATTR_STRINGS);
  PRESENT(m->has_b, RILL_ATTR_BOOLEAN);
  PRESENT(m->n_bools, RILL_ATTR_BOOLEANS);
  PRESENT(m->has_block_idx, RILL_ATTR_BLOCK);
  PRESENT(m->has_l, RILL_ATTR_LONG);
  PRESENT(m->n_blocks_idx, RILL_ATTR_BLOCKS);
  PRESENT(m->n_longs, RILL_ATTR_LONGS);
  PRESENT(m->n_float64s, RILL_ATTR_FLOAT64S);
  PRESENT(m->var_name != NULL, RILL_ATTR_VAR);
  PRESENT(m->n_vars_name, RILL_ATTR_VARS);
  PRESENT(m->has_float64, RILL_ATTR_FLOAT64);
#undef PRESENT
  return mask;
}

static bool attr_type_is_scalar(rill_attr_type t) {
  switch (t) {
    case RILL_ATTR_INT:
    case RILL_ATTR_FLOAT:
    case RILL_ATTR_STRING:
    case RILL_ATTR_BOOLEAN:
    case RILL_ATTR_BLOCK:
    case RILL_ATTR_LONG:
    case RILL_ATTR_VAR:
    case RILL_ATTR_FLOAT64: return true;
    default: return false;
  }
}

/* Fills `a` (zeroed) from `m`; on error the caller clears `a`. */
static rill_status *attr_from_pb(rill_attr *a, const PbAttr *m) {
  RILL_TRY(dup_str(&a->name, m->name));
  int type = (int)m->type;
  if (type < 0 || type >= RILL_ATTR_TYPE_COUNT)
    return rill_error(RILL_CORRUPT, "attr '%s' has unknown type %d", a->name, type);
  rill_attr_type t = (rill_attr_type)type;
  uint32_t present = attr_fields_present(m);
  uint32_t own = (t == RILL_ATTR_SCALAR || t == RILL_ATTR_SCALARS) ? 0 : 1u << t;
  if (present & ~own) {
    int other = __builtin_ctz(present & ~own);
    return rill_error(RILL_CORRUPT, "attr '%s' of type %s also holds a %s value", a->name,
                      rill_attr_type_name(t), rill_attr_type_name((rill_attr_type)other));
  }
  if (attr_type_is_scalar(t) && !(present & own))
    return rill_error(RILL_CORRUPT, "attr '%s' of type %s has no value", a->name,
                      rill_attr_type_name(t));
  rill_attr_value *v = &a->value;
  v->type = t;
  switch (t) {
    case RILL_ATTR_INT: v->v.i = m->i; break;
    case RILL_ATTR_FLOAT: v->v.f = m->f; break;
    case RILL_ATTR_STRING: RILL_TRY(dup_str(&v->v.s, m->s)); break;
    case RILL_ATTR_BOOLEAN: v->v.b = m->b != 0; break;
    case RILL_ATTR_BLOCK: v->v.block = m->block_idx; break;
    case RILL_ATTR_LONG: v->v.l = m->l; break;
    case RILL_ATTR_VAR: RILL_TRY(dup_str(&v->v.var, m->var_name)); break;
    case RILL_ATTR_FLOAT64: v->v.f64 = m->float64; break;
    case RILL_ATTR_STRINGS:
      RILL_TRY(dup_strs(&v->list.strings, m->strings, m->n_strings));
      v->n = m->n_strings;
      break;
    case RILL_ATTR_VARS:
      RILL_TRY(dup_strs(&v->list.vars, m->vars_name, m->n_vars_name));
      v->n = m->n_vars_name;
      break;
    case RILL_ATTR_BOOLEANS:
      v->list.bools = rill_malloc(m->n_bools ? m->n_bools : 1);
      if (!v->list.bools) return rill_oom();
      for (size_t i = 0; i < m->n_bools; i++) v->list.bools[i] = m->bools[i] != 0;
      v->n = m->n_bools;
      break;
#define LIST(TYPE, field, count, member)                                  \
  case TYPE:                                                              \
    v->list.field = dup_mem(m->member, m->count, sizeof *v->list.field); \
    if (!v->list.field) return rill_oom();                                \
    v->n = m->count;                                                      \
    break;
      LIST(RILL_ATTR_INTS, ints, n_ints, ints)
      LIST(RILL_ATTR_FLOATS, floats, n_floats, floats)
      LIST(RILL_ATTR_BLOCKS, blocks, n_blocks_idx, blocks_idx)
      LIST(RILL_ATTR_LONGS, longs, n_longs, longs)
      LIST(RILL_ATTR_FLOAT64S, float64s, n_float64s, float64s)
#undef LIST
    default: break; /* SCALAR, SCALARS: the value is in the unknown fields */
  }
  rawbuf rb = {0};
  rb_unknowns(&rb, &m->base);
  RILL_TRY(rb_finish(&rb, &a->raw));
  return NULL;
}

static rill_status *slots_from_pb(rill_op_slot **out, size_t *nout, PbSlot **m, size_t n) {
  if (!n) return NULL;
  rill_op_slot *s = rill_calloc(n, sizeof *s);
  if (!s) return rill_oom();
  *out = s;
  for (size_t i = 0; i < n; i++) {
    *nout = i + 1; /* counted first: the caller's cleanup frees a half-filled slot */
    RILL_TRY(dup_str(&s[i].param, m[i]->parameter));
    RILL_TRY(dup_strs(&s[i].args, m[i]->arguments, m[i]->n_arguments));
    s[i].nargs = m[i]->n_arguments;
  }
  return NULL;
}

static rill_status *op_from_pb(rill_op_desc *op, const PbOp *m) {
  RILL_TRY(dup_str(&op->type, m->type));
  RILL_TRY(slots_from_pb(&op->inputs, &op->ninputs, m->inputs, m->n_inputs));
  RILL_TRY(slots_from_pb(&op->outputs, &op->noutputs, m->outputs, m->n_outputs));
  op->has_is_target = m->has_is_target;
  op->is_target = m->is_target != 0;
  if (m->n_attrs) {
    op->attrs = rill_calloc(m->n_attrs, sizeof *op->attrs);
    if (!op->attrs) return rill_oom();
    for (size_t i = 0; i < m->n_attrs; i++) {
      op->nattrs = i + 1;
      RILL_TRY(attr_from_pb(&op->attrs[i], m->attrs[i]));
    }
  }
  rawbuf rb = {0};
  rb_unknowns(&rb, &m->base);
  RILL_TRY(rb_finish(&rb, &op->raw));
  return NULL;
}

static rill_status *tensor_from_pb(rill_var_desc *v, const PbTensor *t) {
  if (!t) return rill_error(RILL_CORRUPT, "tensor description is missing");
  int dt = (int)t->data_type;
  if (rill_dtype_size((rill_dtype)dt) == 0)
    return rill_error(RILL_CORRUPT, "tensor description has invalid data type %d", dt);
  if (t->n_dims > RILL_MAX_DIMS)
    return rill_error(RILL_CORRUPT, "tensor description has %zu dims, more than the maximum %d",
                      t->n_dims, RILL_MAX_DIMS);
  /* Unknown extents are -1, but real files carry other negative values too (-50 in a
   * 2.x OCR model): every negative extent is unknown, and is kept as written. */
  v->has_tensor = true;
  v->dtype = (rill_dtype)dt;
  rill_dims_set(&v->dims, t->dims, t->n_dims);
  return NULL;
}

static rill_status *set_lod_level(rill_var_desc *v, bool has, int32_t level) {
  if (level < 0) return rill_error(RILL_CORRUPT, "lod_level %" PRId32 " is negative", level);
  v->lod_level = level;
  if (has) v->has_flags |= RILL_VARDESC_HAS_LOD_LEVEL;
  return NULL;
}

static rill_status *var_from_pb(rill_var_desc *v, const PbVar *m) {
  RILL_TRY(dup_str(&v->name, m->name));
  const PbVarType *t = m->type;
  if (!t) return rill_error(RILL_CORRUPT, "variable has no type");
  v->type = (int32_t)t->type;
  v->dtype = RILL_DTYPE_FP32;
#define FLAG(field, bit)                   \
  if (m->has_##field) v->has_flags |= bit; \
  v->field = m->field != 0;
  FLAG(persistable, RILL_VARDESC_HAS_PERSISTABLE)
  FLAG(need_check_feed, RILL_VARDESC_HAS_NEED_CHECK_FEED)
  FLAG(is_parameter, RILL_VARDESC_HAS_IS_PARAMETER)
  FLAG(stop_gradient, RILL_VARDESC_HAS_STOP_GRADIENT)
#undef FLAG
  /* The tensor description the type uses is modelled; any other is kept raw. */
  bool use_sr = false, use_lod = false, use_arr = false;
  if (v->type == RILL_VAR_SELECTED_ROWS && t->selected_rows) {
    use_sr = true;
    RILL_TRY(tensor_from_pb(v, t->selected_rows));
  } else if (v->type == RILL_VAR_LOD_TENSOR && t->lod_tensor) {
    use_lod = true;
    RILL_TRY(tensor_from_pb(v, t->lod_tensor->tensor));
    RILL_TRY(set_lod_level(v, t->lod_tensor->has_lod_level, t->lod_tensor->lod_level));
  } else if (v->type == RILL_VAR_LOD_TENSOR_ARRAY && t->tensor_array) {
    use_arr = true;
    RILL_TRY(tensor_from_pb(v, t->tensor_array->tensor));
    RILL_TRY(set_lod_level(v, t->tensor_array->has_lod_level, t->tensor_array->lod_level));
  }
  rawbuf rb = {0};
  if (t->selected_rows && !use_sr)
    rb_message(&rb, FIELD_VARTYPE_SELECTED_ROWS, &t->selected_rows->base);
  if (t->lod_tensor && !use_lod) rb_message(&rb, FIELD_VARTYPE_LOD_TENSOR, &t->lod_tensor->base);
  if (t->tensor_array && !use_arr)
    rb_message(&rb, FIELD_VARTYPE_TENSOR_ARRAY, &t->tensor_array->base);
  if (t->reader) rb_message(&rb, FIELD_VARTYPE_READER, &t->reader->base);
  if (t->tuple) rb_message(&rb, FIELD_VARTYPE_TUPLE, &t->tuple->base);
  rb_unknowns(&rb, &t->base);
  RILL_TRY(rb_finish(&rb, &v->type_raw));
  rb = (rawbuf){0};
  rb_unknowns(&rb, &m->base);
  RILL_TRY(rb_finish(&rb, &v->raw));
  return NULL;
}

static rill_status *block_from_pb(rill_block_desc *b, const PbBlock *m, size_t i, size_t nblocks) {
  if (m->idx < 0 || (size_t)m->idx != i)
    return rill_error(RILL_CORRUPT, "block #%zu says its idx is %" PRId32, i, m->idx);
  b->idx = m->idx;
  if (m->parent_idx != -1 && (m->parent_idx < 0 || m->parent_idx >= m->idx))
    return rill_error(RILL_CORRUPT,
                      "block %zu has parent_idx %" PRId32 " (must be -1 or an earlier block)", i,
                      m->parent_idx);
  b->parent_idx = m->parent_idx;
  b->has_forward_block_idx = m->has_forward_block_idx;
  b->forward_block_idx = m->has_forward_block_idx ? m->forward_block_idx : -1;
  if (b->forward_block_idx != -1 &&
      (b->forward_block_idx < 0 || (size_t)b->forward_block_idx >= nblocks))
    return rill_error(RILL_CORRUPT, "block %zu has forward_block_idx %" PRId32 " (%zu blocks)", i,
                      b->forward_block_idx, nblocks);
  if (m->n_vars) {
    b->vars = rill_calloc(m->n_vars, sizeof *b->vars);
    if (!b->vars) return rill_oom();
    b->capvars = m->n_vars;
    for (size_t k = 0; k < m->n_vars; k++) {
      b->nvars = k + 1;
      rill_status *st = var_from_pb(&b->vars[k], m->vars[k]);
      if (st)
        return rill_status_wrap(st, "block %zu, var #%zu '%s'", i, k,
                                m->vars[k]->name ? m->vars[k]->name : "");
    }
  }
  rill_status *st = rill_block_index_build(b);
  if (st) return rill_status_wrap(st, "block %zu", i);
  if (m->n_ops) {
    b->ops = rill_calloc(m->n_ops, sizeof *b->ops);
    if (!b->ops) return rill_oom();
    b->capops = m->n_ops;
    for (size_t k = 0; k < m->n_ops; k++) {
      b->nops = k + 1;
      st = op_from_pb(&b->ops[k], m->ops[k]);
      if (st)
        return rill_status_wrap(st, "block %zu, op #%zu '%s'", i, k,
                                m->ops[k]->type ? m->ops[k]->type : "");
    }
  }
  rawbuf rb = {0};
  rb_unknowns(&rb, &m->base);
  RILL_TRY(rb_finish(&rb, &b->raw));
  return NULL;
}

/* A Version message rill can model: the version set and nothing else. */
static bool version_modelled(const PbVersion *v) {
  return v && v->has_version && v->base.n_unknown_fields == 0;
}

static rill_status *program_from_pb(rill_program *p, const PbProgram *m) {
  if (m->n_blocks == 0) return rill_error(RILL_CORRUPT, "ProgramDesc has no blocks");
  if (m->n_blocks > INT32_MAX) return rill_error(RILL_CORRUPT, "ProgramDesc has too many blocks");
  p->blocks = rill_calloc(m->n_blocks, sizeof *p->blocks);
  if (!p->blocks) return rill_oom();
  p->capblocks = m->n_blocks;
  for (size_t i = 0; i < m->n_blocks; i++) {
    p->nblocks = i + 1;
    RILL_TRY(block_from_pb(&p->blocks[i], m->blocks[i], i, m->n_blocks));
    /* Earlier blocks passed this check, so the walk takes at most the limit + 1 steps. */
    size_t depth = rill_program_block_depth(p, (int32_t)i);
    if (depth > RILL_MAX_BLOCK_DEPTH)
      return rill_error(RILL_CORRUPT,
                        "block %zu is nested %zu levels deep (the limit is RILL_MAX_BLOCK_DEPTH, "
                        "%d)",
                        i, depth, RILL_MAX_BLOCK_DEPTH);
  }
  /* Attributes naming blocks can be checked once every block exists. */
  for (size_t i = 0; i < p->nblocks; i++) {
    const rill_block_desc *b = &p->blocks[i];
    for (size_t k = 0; k < b->nops; k++) {
      rill_status *st = rill_op_check_attrs(p, (int32_t)i, &b->ops[k]);
      if (st)
        return rill_status_wrap(st, "block %zu, op #%zu '%s'", i, k, b->ops[k].type);
    }
  }
  const PbVersion *modelled = NULL;
  if (version_modelled(m->version)) {
    modelled = m->version;
  } else if (version_modelled(m->legacy_version)) {
    modelled = m->legacy_version;
    p->version_legacy = true;
  }
  if (modelled) {
    p->has_version = true;
    p->version = modelled->version;
  }
  rawbuf rb = {0};
  if (m->legacy_version && m->legacy_version != modelled)
    rb_message(&rb, FIELD_PROGRAM_LEGACY_VERSION, &m->legacy_version->base);
  if (m->version && m->version != modelled)
    rb_message(&rb, FIELD_PROGRAM_VERSION, &m->version->base);
  rb_unknowns(&rb, &m->base);
  RILL_TRY(rb_finish(&rb, &p->raw));
  return NULL;
}

rill_status *rill_program_decode(const void *bytes, size_t size, rill_program **out) {
  if (!out || (!bytes && size))
    return rill_error(RILL_INVALID_ARGUMENT, "rill_program_decode: NULL argument");
  if (size > INT32_MAX)
    return rill_error(RILL_INVALID_ARGUMENT,
                      "ProgramDesc of %zu bytes is over protobuf's 2 GiB limit", size);
  pb_alloc_ctx ctx = {false};
  ProtobufCAllocator alloc = {pb_alloc, pb_free, &ctx};
  static const uint8_t empty[1];
  PbProgram *m = paddle__framework__proto__program_desc__unpack(&alloc, size,
                                                                bytes ? bytes : empty);
  if (!m) {
    if (ctx.oom) return rill_oom();
    return rill_error(RILL_CORRUPT,
                      "ProgramDesc: malformed protobuf (%zu bytes; truncated, not a program, "
                      "or a required field missing)",
                      size);
  }
  rill_program *p = rill_program_alloc();
  rill_status *st = p ? program_from_pb(p, m) : rill_oom();
  paddle__framework__proto__program_desc__free_unpacked(m, &alloc);
  if (st) {
    rill_program_free(p);
    return rill_status_wrap(st, "ProgramDesc");
  }
  *out = p;
  return NULL;
}

/* ------------------------------------------------------------ encoding -------- */

/* The messages handed to protobuf-c live in an arena freed at once; strings and
 * arrays point into the program where the layouts agree. */
typedef struct encoder {
  rill_arena arena;
  rill_status *st;
} encoder;

static bool enc_fail(encoder *e, rill_status *st) {
  if (!e->st) e->st = st;
  else rill_status_destroy(st);
  return false;
}

static void *enc_array(encoder *e, size_t n, size_t elem) {
  void *p = rill_arena_alloc(&e->arena, n, elem);
  if (!p) enc_fail(e, rill_oom());
  return p;
}

static char *enc_str(char *s) { return s ? s : (char *)""; }

/* protobuf-c wants every element of a repeated string present. */
static char **enc_strs(encoder *e, char **s, size_t n) {
  bool has_null = false;
  for (size_t i = 0; i < n; i++) has_null |= s[i] == NULL;
  if (!has_null) return s;
  char **d = enc_array(e, n, sizeof *d);
  if (!d) return NULL;
  for (size_t i = 0; i < n; i++) d[i] = enc_str(s[i]);
  return d;
}

static bool read_varint(const uint8_t *p, size_t size, size_t *at, uint64_t *v) {
  uint64_t r = 0;
  for (unsigned shift = 0; shift < 64 && *at < size; shift += 7) {
    uint8_t byte = p[(*at)++];
    r |= (uint64_t)(byte & 0x7f) << shift;
    if (!(byte & 0x80)) {
      *v = r;
      return true;
    }
  }
  return false;
}

/* Splits raw bytes into protobuf-c unknown fields pointing into them. */
static bool enc_raw(encoder *e, const rill_raw_fields *raw, ProtobufCMessage *m, const char *what) {
  if (!raw->size) return true;
  const uint8_t *p = raw->bytes;
  size_t n = 0;
  ProtobufCMessageUnknownField *f = NULL;
  for (int pass = 0; pass < 2; pass++) {
    size_t at = 0, k = 0;
    while (at < raw->size) {
      uint64_t key, len;
      if (!read_varint(p, raw->size, &at, &key)) goto bad;
      uint64_t tag = key >> 3;
      unsigned wt = (unsigned)(key & 7);
      if (tag == 0 || tag > FIELD_NUMBER_MAX) goto bad;
      size_t start = at;
      switch (wt) {
        case PROTOBUF_C_WIRE_TYPE_VARINT:
          if (!read_varint(p, raw->size, &at, &len)) goto bad;
          break;
        case PROTOBUF_C_WIRE_TYPE_64BIT:
          if (raw->size - at < 8) goto bad;
          at += 8;
          break;
        case PROTOBUF_C_WIRE_TYPE_32BIT:
          if (raw->size - at < 4) goto bad;
          at += 4;
          break;
        case PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED:
          if (!read_varint(p, raw->size, &at, &len) || len > raw->size - at) goto bad;
          at += (size_t)len;
          break;
        default: goto bad;
      }
      if (pass == 1) {
        f[k].tag = (uint32_t)tag;
        f[k].wire_type = (ProtobufCWireType)wt;
        f[k].len = at - start;
        f[k].data = (uint8_t *)p + start;
      }
      k++;
    }
    if (pass == 0) {
      n = k;
      f = enc_array(e, n, sizeof *f);
      if (!f) return false;
    }
  }
  m->n_unknown_fields = n;
  m->unknown_fields = f;
  return true;
bad:
  return enc_fail(e, rill_error(RILL_INTERNAL, "%s: kept raw fields are malformed", what));
}

static PbAttr *enc_attr(encoder *e, const rill_attr *a) {
  PbAttr *m = enc_array(e, 1, sizeof *m);
  if (!m) return NULL;
  paddle__framework__proto__op_desc__attr__init(m);
  const rill_attr_value *v = &a->value;
  m->name = enc_str(a->name);
  m->type = (Paddle__Framework__Proto__AttrType)v->type;
  switch (v->type) {
    case RILL_ATTR_INT: m->has_i = 1, m->i = v->v.i; break;
    case RILL_ATTR_FLOAT: m->has_f = 1, m->f = v->v.f; break;
    case RILL_ATTR_STRING: m->s = enc_str(v->v.s); break;
    case RILL_ATTR_BOOLEAN: m->has_b = 1, m->b = v->v.b; break;
    case RILL_ATTR_BLOCK: m->has_block_idx = 1, m->block_idx = v->v.block; break;
    case RILL_ATTR_LONG: m->has_l = 1, m->l = v->v.l; break;
    case RILL_ATTR_VAR: m->var_name = enc_str(v->v.var); break;
    case RILL_ATTR_FLOAT64: m->has_float64 = 1, m->float64 = v->v.f64; break;
    case RILL_ATTR_INTS: m->n_ints = v->n, m->ints = v->list.ints; break;
    case RILL_ATTR_FLOATS: m->n_floats = v->n, m->floats = v->list.floats; break;
    case RILL_ATTR_BLOCKS: m->n_blocks_idx = v->n, m->blocks_idx = v->list.blocks; break;
    case RILL_ATTR_LONGS: m->n_longs = v->n, m->longs = v->list.longs; break;
    case RILL_ATTR_FLOAT64S: m->n_float64s = v->n, m->float64s = v->list.float64s; break;
    case RILL_ATTR_STRINGS:
      m->n_strings = v->n;
      if (v->n && !(m->strings = enc_strs(e, v->list.strings, v->n))) return NULL;
      break;
    case RILL_ATTR_VARS:
      m->n_vars_name = v->n;
      if (v->n && !(m->vars_name = enc_strs(e, v->list.vars, v->n))) return NULL;
      break;
    case RILL_ATTR_BOOLEANS:
      if (v->n) {
        m->bools = enc_array(e, v->n, sizeof *m->bools);
        if (!m->bools) return NULL;
        for (size_t i = 0; i < v->n; i++) m->bools[i] = v->list.bools[i];
      }
      m->n_bools = v->n;
      break;
    case RILL_ATTR_SCALAR:
    case RILL_ATTR_SCALARS: break;
    default:
      enc_fail(e, rill_error(RILL_INVALID_ARGUMENT, "attr '%s' has unknown type %d",
                             enc_str(a->name), (int)v->type));
      return NULL;
  }
  if (!enc_raw(e, &a->raw, &m->base, "attr")) return NULL;
  return m;
}

static PbSlot **enc_slots(encoder *e, const rill_op_slot *s, size_t n) {
  PbSlot **ptrs = enc_array(e, n, sizeof *ptrs);
  PbSlot *ms = enc_array(e, n, sizeof *ms);
  if (!ptrs || !ms) return NULL;
  for (size_t i = 0; i < n; i++) {
    paddle__framework__proto__op_desc__var__init(&ms[i]);
    ms[i].parameter = enc_str(s[i].param);
    ms[i].n_arguments = s[i].nargs;
    if (s[i].nargs && !(ms[i].arguments = enc_strs(e, s[i].args, s[i].nargs))) return NULL;
    ptrs[i] = &ms[i];
  }
  return ptrs;
}

static bool enc_op(encoder *e, PbOp *m, const rill_op_desc *op) {
  paddle__framework__proto__op_desc__init(m);
  m->type = enc_str(op->type);
  if (op->ninputs && !(m->inputs = enc_slots(e, op->inputs, op->ninputs))) return false;
  m->n_inputs = op->ninputs;
  if (op->noutputs && !(m->outputs = enc_slots(e, op->outputs, op->noutputs))) return false;
  m->n_outputs = op->noutputs;
  if (op->nattrs) {
    m->attrs = enc_array(e, op->nattrs, sizeof *m->attrs);
    if (!m->attrs) return false;
    for (size_t i = 0; i < op->nattrs; i++)
      if (!(m->attrs[i] = enc_attr(e, &op->attrs[i]))) return false;
    m->n_attrs = op->nattrs;
  }
  m->has_is_target = op->has_is_target || op->is_target;
  m->is_target = op->is_target;
  return enc_raw(e, &op->raw, &m->base, "op");
}

static bool enc_var(encoder *e, PbVar *m, rill_var_desc *v) {
  paddle__framework__proto__var_desc__init(m);
  m->name = enc_str(v->name);
  PbVarType *t = enc_array(e, 1, sizeof *t);
  if (!t) return false;
  paddle__framework__proto__var_type__init(t);
  t->type = (Paddle__Framework__Proto__VarType__Type)v->type;
  m->type = t;
  if (v->has_tensor) {
    if (v->dims.n < 0 || v->dims.n > RILL_MAX_DIMS)
      return enc_fail(e, rill_error(RILL_INVALID_ARGUMENT, "var '%s' has %d dims", m->name,
                                    (int)v->dims.n));
    PbTensor *td = enc_array(e, 1, sizeof *td);
    if (!td) return false;
    paddle__framework__proto__var_type__tensor_desc__init(td);
    td->data_type = (Paddle__Framework__Proto__VarType__Type)v->dtype;
    td->n_dims = (size_t)v->dims.n;
    td->dims = v->dims.d;
    bool has_level = (v->has_flags & RILL_VARDESC_HAS_LOD_LEVEL) || v->lod_level != 0;
    if (v->type == RILL_VAR_LOD_TENSOR) {
      PbLoDTensor *l = enc_array(e, 1, sizeof *l);
      if (!l) return false;
      paddle__framework__proto__var_type__lo_dtensor_desc__init(l);
      l->tensor = td;
      l->has_lod_level = has_level;
      l->lod_level = v->lod_level;
      t->lod_tensor = l;
    } else if (v->type == RILL_VAR_LOD_TENSOR_ARRAY) {
      PbTensorArray *l = enc_array(e, 1, sizeof *l);
      if (!l) return false;
      paddle__framework__proto__var_type__lo_dtensor_array_desc__init(l);
      l->tensor = td;
      l->has_lod_level = has_level;
      l->lod_level = v->lod_level;
      t->tensor_array = l;
    } else if (v->type == RILL_VAR_SELECTED_ROWS) {
      t->selected_rows = td;
    } else {
      return enc_fail(e, rill_error(RILL_INVALID_ARGUMENT,
                                    "var '%s' of type %d cannot carry a tensor description",
                                    m->name, (int)v->type));
    }
  }
  if (!enc_raw(e, &v->type_raw, &t->base, "var type")) return false;
#define FLAG(field, bit)                                                 \
  m->has_##field = (v->has_flags & (bit)) || v->field; \
  m->field = v->field;
  FLAG(persistable, RILL_VARDESC_HAS_PERSISTABLE)
  FLAG(need_check_feed, RILL_VARDESC_HAS_NEED_CHECK_FEED)
  FLAG(is_parameter, RILL_VARDESC_HAS_IS_PARAMETER)
  FLAG(stop_gradient, RILL_VARDESC_HAS_STOP_GRADIENT)
#undef FLAG
  return enc_raw(e, &v->raw, &m->base, "var");
}

static bool enc_block(encoder *e, PbBlock *m, rill_block_desc *b) {
  paddle__framework__proto__block_desc__init(m);
  m->idx = b->idx;
  m->parent_idx = b->parent_idx;
  m->has_forward_block_idx = b->has_forward_block_idx;
  m->forward_block_idx = b->forward_block_idx;
  if (b->nvars) {
    PbVar *vs = enc_array(e, b->nvars, sizeof *vs);
    m->vars = enc_array(e, b->nvars, sizeof *m->vars);
    if (!vs || !m->vars) return false;
    for (size_t i = 0; i < b->nvars; i++) {
      if (!enc_var(e, &vs[i], &b->vars[i])) return false;
      m->vars[i] = &vs[i];
    }
    m->n_vars = b->nvars;
  }
  if (b->nops) {
    PbOp *os = enc_array(e, b->nops, sizeof *os);
    m->ops = enc_array(e, b->nops, sizeof *m->ops);
    if (!os || !m->ops) return false;
    for (size_t i = 0; i < b->nops; i++) {
      if (!enc_op(e, &os[i], &b->ops[i])) {
        if (e->st) e->st = rill_status_wrap(e->st, "op #%zu '%s'", i, enc_str(b->ops[i].type));
        return false;
      }
      m->ops[i] = &os[i];
    }
    m->n_ops = b->nops;
  }
  return enc_raw(e, &b->raw, &m->base, "block");
}

/* Paddle writes op_compatible_map (3) before the version (4) and op_version_map (5)
 * after it, while protobuf-c packs known fields before unknown ones. To give back the
 * very bytes Paddle wrote, the version goes out as an unknown field too, placed among
 * the kept fields in field-number order. */
static bool enc_version_in_order(encoder *e, PbProgram *m, const PbVersion *v) {
  size_t vsize = paddle__framework__proto__version__get_packed_size(v);
  uint8_t *data = enc_array(e, vsize + 10, 1);
  ProtobufCMessageUnknownField *f = enc_array(e, m->base.n_unknown_fields + 1, sizeof *f);
  if (!data || !f) return false;
  size_t len = 0;
  uint64_t x = vsize;
  do {
    data[len++] = (uint8_t)((x & 0x7f) | (x >= 0x80 ? 0x80 : 0));
    x >>= 7;
  } while (x);
  paddle__framework__proto__version__pack(v, data + len);
  size_t n = m->base.n_unknown_fields, at = 0;
  while (at < n && m->base.unknown_fields[at].tag <= FIELD_PROGRAM_VERSION) at++;
  if (n) memcpy(f, m->base.unknown_fields, at * sizeof *f);
  f[at] = (ProtobufCMessageUnknownField){FIELD_PROGRAM_VERSION, PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED,
                                         len + vsize, data};
  if (n > at) memcpy(f + at + 1, m->base.unknown_fields + at, (n - at) * sizeof *f);
  m->base.unknown_fields = f;
  m->base.n_unknown_fields = n + 1;
  return true;
}

rill_status *rill_program_encode(const rill_program *p, uint8_t **out, size_t *size) {
  if (!p || !out || !size)
    return rill_error(RILL_INVALID_ARGUMENT, "rill_program_encode: NULL argument");
  encoder e = {.arena = {.chunk_size = 65536}};
  PbProgram m;
  paddle__framework__proto__program_desc__init(&m);
  PbVersion version;
  paddle__framework__proto__version__init(&version);
  if (p->has_version) {
    version.has_version = 1;
    version.version = p->version;
    if (p->version_legacy) m.legacy_version = &version;
  }
  bool ok = true;
  if (p->nblocks) {
    PbBlock *bs = enc_array(&e, p->nblocks, sizeof *bs);
    m.blocks = enc_array(&e, p->nblocks, sizeof *m.blocks);
    ok = bs && m.blocks;
    for (size_t i = 0; ok && i < p->nblocks; i++) {
      ok = enc_block(&e, &bs[i], &p->blocks[i]);
      m.blocks[i] = &bs[i];
      if (!ok && e.st) e.st = rill_status_wrap(e.st, "block %zu", i);
    }
    m.n_blocks = p->nblocks;
  }
  ok = ok && enc_raw(&e, &p->raw, &m.base, "program");
  if (ok && p->has_version && !p->version_legacy) ok = enc_version_in_order(&e, &m, &version);
  uint8_t *buf = NULL;
  size_t n = 0;
  if (ok) {
    n = paddle__framework__proto__program_desc__get_packed_size(&m);
    buf = rill_malloc(n ? n : 1);
    if (!buf) {
      ok = false;
      enc_fail(&e, rill_oom());
    } else if (paddle__framework__proto__program_desc__pack(&m, buf) != n) {
      ok = false;
      enc_fail(&e, rill_error(RILL_INTERNAL, "ProgramDesc: packed size mismatch"));
    }
  }
  rill_arena_free(&e.arena);
  if (!ok) {
    rill_free(buf);
    return rill_status_wrap(e.st ? e.st : rill_error(RILL_INTERNAL, "encoding failed"),
                            "ProgramDesc");
  }
  *out = buf;
  *size = n;
  return NULL;
}
