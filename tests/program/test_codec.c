#define _GNU_SOURCE /* memmem */
/* The codec on crafted messages: validation errors that name the block, op and var;
 * fields rill does not model (unknown fields, reader/tuple, odd version messages,
 * legacy field 2) kept and written back; attribute value helpers. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "framework/program/program.h"
#include "proto/framework.pb-c.h"

typedef Paddle__Framework__Proto__ProgramDesc PbProgram;
typedef Paddle__Framework__Proto__BlockDesc PbBlock;
typedef Paddle__Framework__Proto__VarDesc PbVar;
typedef Paddle__Framework__Proto__VarType PbVarType;
typedef Paddle__Framework__Proto__VarType__TensorDesc PbTensor;
typedef Paddle__Framework__Proto__VarType__LoDTensorDesc PbLoD;
typedef Paddle__Framework__Proto__OpDesc PbOp;
typedef Paddle__Framework__Proto__OpDesc__Var PbSlot;
typedef Paddle__Framework__Proto__OpDesc__Attr PbAttr;
typedef Paddle__Framework__Proto__Version PbVersion;

/* A two-block program: block 0 has var x [-1, 4] and op `scale` (X=x, Out=x, attr
 * scale FLOAT 2.0); block 1 (parent 0) is empty. Tests mutate it before packing. */
typedef struct fixture {
  PbProgram prog;
  PbBlock b0, b1, *blocks[2];
  PbVar x, *vars[1];
  PbVarType xt;
  PbLoD xlod;
  PbTensor xtd;
  int64_t xdims[12];
  PbOp op, *ops[1];
  PbSlot in, out, *ins[1], *outs[1];
  char *xargs[1];
  PbAttr attr, *attrs[1];
  PbVersion version;
} fixture;

static void fixture_init(fixture *f) {
  memset(f, 0, sizeof *f);
  paddle__framework__proto__program_desc__init(&f->prog);
  paddle__framework__proto__block_desc__init(&f->b0);
  paddle__framework__proto__block_desc__init(&f->b1);
  f->b0.idx = 0, f->b0.parent_idx = -1;
  f->b1.idx = 1, f->b1.parent_idx = 0;
  f->blocks[0] = &f->b0, f->blocks[1] = &f->b1;
  f->prog.blocks = f->blocks, f->prog.n_blocks = 2;

  paddle__framework__proto__var_desc__init(&f->x);
  paddle__framework__proto__var_type__init(&f->xt);
  paddle__framework__proto__var_type__lo_dtensor_desc__init(&f->xlod);
  paddle__framework__proto__var_type__tensor_desc__init(&f->xtd);
  f->x.name = "x";
  f->x.type = &f->xt;
  f->x.has_persistable = 1;
  f->xt.type = PADDLE__FRAMEWORK__PROTO__VAR_TYPE__TYPE__LOD_TENSOR;
  f->xt.lod_tensor = &f->xlod;
  f->xlod.tensor = &f->xtd;
  f->xtd.data_type = PADDLE__FRAMEWORK__PROTO__VAR_TYPE__TYPE__FP32;
  f->xdims[0] = -1, f->xdims[1] = 4;
  f->xtd.dims = f->xdims, f->xtd.n_dims = 2;
  f->vars[0] = &f->x;
  f->b0.vars = f->vars, f->b0.n_vars = 1;

  paddle__framework__proto__op_desc__init(&f->op);
  paddle__framework__proto__op_desc__var__init(&f->in);
  paddle__framework__proto__op_desc__var__init(&f->out);
  paddle__framework__proto__op_desc__attr__init(&f->attr);
  f->op.type = "scale";
  f->xargs[0] = "x";
  f->in.parameter = "X", f->in.arguments = f->xargs, f->in.n_arguments = 1;
  f->out.parameter = "Out", f->out.arguments = f->xargs, f->out.n_arguments = 1;
  f->ins[0] = &f->in, f->outs[0] = &f->out;
  f->op.inputs = f->ins, f->op.n_inputs = 1;
  f->op.outputs = f->outs, f->op.n_outputs = 1;
  f->attr.name = "scale";
  f->attr.type = PADDLE__FRAMEWORK__PROTO__ATTR_TYPE__FLOAT;
  f->attr.has_f = 1, f->attr.f = 2.0f;
  f->attrs[0] = &f->attr;
  f->op.attrs = f->attrs, f->op.n_attrs = 1;
  f->ops[0] = &f->op;
  f->b0.ops = f->ops, f->b0.n_ops = 1;
  paddle__framework__proto__version__init(&f->version);
}

static uint8_t *pack(const PbProgram *m, size_t *size) {
  *size = paddle__framework__proto__program_desc__get_packed_size(m);
  uint8_t *buf = malloc(*size + 1);
  paddle__framework__proto__program_desc__pack(m, buf);
  return buf;
}

static rill_status *decode_fixture(const fixture *f, rill_program **out) {
  size_t size;
  uint8_t *bytes = pack(&f->prog, &size);
  rill_status *st = rill_program_decode(bytes, size, out);
  free(bytes);
  return st;
}

#define DECODE_FAILS(f, needle)                                                          \
  do {                                                                                   \
    rill_program *p_ = NULL;                                                             \
    rill_status *st_ = decode_fixture(f, &p_);                                           \
    cr_assert_not_null(st_, "decoded, expected '%s'", needle);                           \
    cr_assert_null(p_);                                                                  \
    cr_assert(strstr(rill_status_message(st_), needle), "'%s' lacks '%s'",               \
              rill_status_message(st_), needle);                                         \
    rill_status_destroy(st_);                                                            \
  } while (0)

Test(codec, fixture_decodes) {
  fixture f;
  fixture_init(&f);
  rill_program *p = NULL;
  rill_status *st = decode_fixture(&f, &p);
  cr_assert_null(st, "%s", rill_status_message(st));
  cr_assert_eq(p->nblocks, 2);
  cr_assert_eq(p->blocks[1].parent_idx, 0);
  cr_assert_eq(rill_op_attr(&p->blocks[0].ops[0], "scale")->value.v.f, 2.0f);
  cr_assert(p->blocks[0].vars[0].has_flags & RILL_VARDESC_HAS_PERSISTABLE);
  cr_assert_not(p->blocks[0].vars[0].has_flags & RILL_VARDESC_HAS_STOP_GRADIENT);
  rill_program_destroy(p);
}

Test(codec, block_structure_is_checked) {
  fixture f;
  fixture_init(&f);
  f.b1.idx = 5;
  DECODE_FAILS(&f, "block #1 says its idx is 5");
  fixture_init(&f);
  f.b1.parent_idx = 1;
  DECODE_FAILS(&f, "block 1 has parent_idx 1");
  fixture_init(&f);
  f.b1.parent_idx = 7;
  DECODE_FAILS(&f, "parent_idx 7");
  fixture_init(&f);
  f.b0.parent_idx = 0;
  DECODE_FAILS(&f, "block 0 has parent_idx 0");
  fixture_init(&f);
  f.b1.has_forward_block_idx = 1, f.b1.forward_block_idx = 2;
  DECODE_FAILS(&f, "forward_block_idx 2");
  fixture_init(&f);
  f.prog.n_blocks = 0;
  DECODE_FAILS(&f, "no blocks");
}

/* Packs a chain of `n` blocks, block b > 0 the child of block b - 1 (depth n - 1). */
static rill_status *decode_chain(size_t n, rill_program **out) {
  PbBlock *blocks = calloc(n, sizeof *blocks);
  PbBlock **ptrs = calloc(n, sizeof *ptrs);
  for (size_t b = 0; b < n; b++) {
    paddle__framework__proto__block_desc__init(&blocks[b]);
    blocks[b].idx = (int32_t)b;
    blocks[b].parent_idx = (int32_t)b - 1;
    ptrs[b] = &blocks[b];
  }
  PbProgram prog;
  paddle__framework__proto__program_desc__init(&prog);
  prog.blocks = ptrs, prog.n_blocks = n;
  size_t size;
  uint8_t *bytes = pack(&prog, &size);
  rill_status *st = rill_program_decode(bytes, size, out);
  free(bytes);
  free(ptrs);
  free(blocks);
  return st;
}

Test(codec, block_nesting_is_capped) {
  rill_program *p = NULL;
  rill_status *st = decode_chain(RILL_MAX_BLOCK_DEPTH + 1, &p);
  cr_assert_null(st, "depth %d: %s", RILL_MAX_BLOCK_DEPTH, rill_status_message(st));
  cr_assert_eq(rill_program_block_depth(p, RILL_MAX_BLOCK_DEPTH), RILL_MAX_BLOCK_DEPTH);
  /* The editing API stops at the same depth. */
  int32_t idx;
  st = rill_program_append_block(p, RILL_MAX_BLOCK_DEPTH, &idx);
  cr_assert_not_null(st);
  char want[160];
  snprintf(want, sizeof want, "would be nested %d levels deep (the limit is RILL_MAX_BLOCK_DEPTH, %d)",
           RILL_MAX_BLOCK_DEPTH + 1, RILL_MAX_BLOCK_DEPTH);
  cr_assert(strstr(rill_status_message(st), want), "%s", rill_status_message(st));
  cr_assert_eq(rill_program_num_blocks(p), RILL_MAX_BLOCK_DEPTH + 1);
  rill_status_destroy(st);
  cr_assert_null(rill_program_append_block(p, RILL_MAX_BLOCK_DEPTH - 1, &idx));
  rill_program_destroy(p);

  p = NULL;
  st = decode_chain(RILL_MAX_BLOCK_DEPTH + 2, &p);
  cr_assert_not_null(st, "depth %d decoded", RILL_MAX_BLOCK_DEPTH + 1);
  cr_assert_null(p);
  cr_assert_eq(rill_status_code(st), RILL_CORRUPT);
  snprintf(want, sizeof want, "block %d is nested %d levels deep (the limit is RILL_MAX_BLOCK_DEPTH, %d)",
           RILL_MAX_BLOCK_DEPTH + 1, RILL_MAX_BLOCK_DEPTH + 1, RILL_MAX_BLOCK_DEPTH);
  cr_assert(strstr(rill_status_message(st), want), "%s", rill_status_message(st));
  rill_status_destroy(st);
}

Test(codec, vars_are_checked) {
  fixture f;
  fixture_init(&f);
  f.xtd.n_dims = RILL_MAX_DIMS + 1;
  DECODE_FAILS(&f, "block 0, var #0 'x': tensor description has 10 dims");
  fixture_init(&f);
  f.xtd.data_type = PADDLE__FRAMEWORK__PROTO__VAR_TYPE__TYPE__LOD_TENSOR;
  DECODE_FAILS(&f, "var #0 'x': tensor description has invalid data type 7");
  fixture_init(&f);
  f.xtd.data_type = (Paddle__Framework__Proto__VarType__Type)99;
  DECODE_FAILS(&f, "invalid data type 99");
  fixture_init(&f);
  f.xlod.has_lod_level = 1, f.xlod.lod_level = -2;
  DECODE_FAILS(&f, "'x': lod_level -2 is negative");
  fixture_init(&f);
  PbVar *two[2] = {&f.x, &f.x};
  f.b0.vars = two, f.b0.n_vars = 2;
  DECODE_FAILS(&f, "block 0: variable 'x' is declared twice");
}

Test(codec, dims_at_the_limit_and_negative_are_kept) {
  fixture f;
  fixture_init(&f);
  for (int i = 0; i < RILL_MAX_DIMS; i++) f.xdims[i] = i == 3 ? -50 : i + 1;
  f.xtd.n_dims = RILL_MAX_DIMS;
  rill_program *p = NULL;
  rill_status *st = decode_fixture(&f, &p);
  cr_assert_null(st, "%s", rill_status_message(st));
  cr_assert_eq(p->blocks[0].vars[0].dims.n, RILL_MAX_DIMS);
  cr_assert_eq(p->blocks[0].vars[0].dims.d[3], -50);
  rill_program_destroy(p);
}

Test(codec, attrs_are_checked) {
  fixture f;
  fixture_init(&f);
  f.attr.has_i = 1;
  DECODE_FAILS(&f, "block 0, op #0 'scale': attr 'scale' of type FLOAT also holds a INT value");
  fixture_init(&f);
  f.attr.has_f = 0;
  DECODE_FAILS(&f, "attr 'scale' of type FLOAT has no value");
  fixture_init(&f);
  f.attr.type = (Paddle__Framework__Proto__AttrType)42;
  DECODE_FAILS(&f, "attr 'scale' has unknown type 42");
  fixture_init(&f);
  f.attr.type = PADDLE__FRAMEWORK__PROTO__ATTR_TYPE__BLOCK;
  f.attr.has_f = 0, f.attr.has_block_idx = 1, f.attr.block_idx = 2;
  DECODE_FAILS(&f, "op #0 'scale': attr 'scale' refers to block 2, but the program has 2 blocks");
  f.attr.block_idx = 0;
  DECODE_FAILS(&f, "refers to its own block 0");
  f.attr.block_idx = 1;
  rill_program *p = NULL;
  rill_status *st = decode_fixture(&f, &p);
  cr_assert_null(st, "%s", rill_status_message(st));
  rill_program_destroy(p);
  fixture_init(&f);
  int32_t blocks[] = {1, 3};
  f.attr.type = PADDLE__FRAMEWORK__PROTO__ATTR_TYPE__BLOCKS;
  f.attr.has_f = 0, f.attr.blocks_idx = blocks, f.attr.n_blocks_idx = 2;
  DECODE_FAILS(&f, "refers to block 3");
}

/* Packs `m` with protobuf-c after unpacking `bytes`: the message protobuf-c sees. */
static uint8_t *canonical(const uint8_t *bytes, size_t size, size_t *out) {
  PbProgram *m = paddle__framework__proto__program_desc__unpack(NULL, size, bytes);
  cr_assert_not_null(m);
  uint8_t *buf = pack(m, out);
  paddle__framework__proto__program_desc__free_unpacked(m, NULL);
  return buf;
}

/* decode -> encode: rill gives back the same program, and protobuf-c the same message. */
static rill_program *check_round_trip(const uint8_t *bytes, size_t size) {
  rill_program *p = NULL, *q = NULL;
  rill_status *st = rill_program_decode(bytes, size, &p);
  cr_assert_null(st, "%s", rill_status_message(st));
  uint8_t *e = NULL;
  size_t n = 0;
  st = rill_program_encode(p, &e, &n);
  cr_assert_null(st, "%s", rill_status_message(st));
  st = rill_program_decode(e, n, &q);
  cr_assert_null(st, "%s", rill_status_message(st));
  cr_assert(rill_program_equal(p, q));
  size_t c1, c2;
  uint8_t *m1 = canonical(bytes, size, &c1), *m2 = canonical(e, n, &c2);
  cr_assert(c1 == c2 && memcmp(m1, m2, c1) == 0, "protobuf-c sees different messages");
  free(m1);
  free(m2);
  rill_free(e);
  rill_program_destroy(q);
  return p;
}

static ProtobufCMessageUnknownField unknown(uint32_t tag, ProtobufCWireType wt, const char *data,
                                            size_t len) {
  return (ProtobufCMessageUnknownField){tag, wt, len, (uint8_t *)data};
}

Test(codec, unmodelled_fields_are_kept) {
  fixture f;
  fixture_init(&f);
  /* program: op_compatible_map (3) and op_version_map (5), version 4 in between */
  ProtobufCMessageUnknownField pu[2] = {
      unknown(3, PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED, "\x02\x0a\x00", 3),
      unknown(5, PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED, "\x01\x0a", 2)};
  f.prog.base.unknown_fields = pu, f.prog.base.n_unknown_fields = 2;
  f.version.has_version = 1, f.version.version = 2002002;
  f.prog.version = &f.version;
  /* block, var, op, attr: a varint, a fixed32, a fixed64 */
  ProtobufCMessageUnknownField bu = unknown(9, PROTOBUF_C_WIRE_TYPE_VARINT, "\x96\x01", 2);
  f.b0.base.unknown_fields = &bu, f.b0.base.n_unknown_fields = 1;
  ProtobufCMessageUnknownField vu = unknown(7, PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED, "\x02\x0a\x00", 3);
  f.x.base.unknown_fields = &vu, f.x.base.n_unknown_fields = 1;
  ProtobufCMessageUnknownField ou = unknown(6, PROTOBUF_C_WIRE_TYPE_32BIT, "abcd", 4);
  f.op.base.unknown_fields = &ou, f.op.base.n_unknown_fields = 1;
  ProtobufCMessageUnknownField au = unknown(20, PROTOBUF_C_WIRE_TYPE_64BIT, "abcdefgh", 8);
  f.attr.base.unknown_fields = &au, f.attr.base.n_unknown_fields = 1;
  /* VarType: a reader, a tuple, an unused selected_rows desc, and field 8 (2.x STRING) */
  Paddle__Framework__Proto__VarType__ReaderDesc reader;
  paddle__framework__proto__var_type__reader_desc__init(&reader);
  PbLoD *rl[1] = {&f.xlod};
  reader.lod_tensor = rl, reader.n_lod_tensor = 1;
  Paddle__Framework__Proto__VarType__Tuple tuple;
  paddle__framework__proto__var_type__tuple__init(&tuple);
  Paddle__Framework__Proto__VarType__Type elems[2] = {PADDLE__FRAMEWORK__PROTO__VAR_TYPE__TYPE__INT64,
                                                      PADDLE__FRAMEWORK__PROTO__VAR_TYPE__TYPE__FP32};
  tuple.element_type = elems, tuple.n_element_type = 2;
  PbTensor other;
  paddle__framework__proto__var_type__tensor_desc__init(&other);
  other.data_type = PADDLE__FRAMEWORK__PROTO__VAR_TYPE__TYPE__INT8;
  f.xt.reader = &reader, f.xt.tuple = &tuple, f.xt.selected_rows = &other;
  ProtobufCMessageUnknownField tu = unknown(8, PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED, "\x02\x08\x05", 3);
  f.xt.base.unknown_fields = &tu, f.xt.base.n_unknown_fields = 1;

  size_t size;
  uint8_t *bytes = pack(&f.prog, &size);
  rill_program *p = check_round_trip(bytes, size);
  cr_assert(p->has_version && !p->version_legacy);
  cr_assert_eq(p->version, 2002002);
  cr_assert_eq(p->raw.size, (1 + 3) + (1 + 2), "fields 3 and 5, with their tags");
  cr_assert_eq(p->blocks[0].raw.size, 3);
  const rill_var_desc *x = &p->blocks[0].vars[0];
  cr_assert(x->has_tensor);
  cr_assert_eq(x->dtype, RILL_DTYPE_FP32, "the lod_tensor desc is the modelled one");
  cr_assert_gt(x->type_raw.size, 10);
  cr_assert_eq(x->raw.size, 4);
  cr_assert_eq(p->blocks[0].ops[0].raw.size, 5);
  cr_assert_eq(p->blocks[0].ops[0].attrs[0].raw.size, 10);
  /* Paddle's field order is kept: 3, then the version, then 5 */
  uint8_t *e = NULL;
  size_t n = 0;
  cr_assert_null(rill_program_encode(p, &e, &n));
  const uint8_t tail[] = {0x1a, 0x02, 0x0a, 0x00, 0x22};
  cr_assert(memmem(e, n, tail, sizeof tail), "field 3 then field 4");
  rill_free(e);
  rill_program_destroy(p);
  free(bytes);
}

Test(codec, legacy_and_odd_versions) {
  fixture f;
  fixture_init(&f);
  f.version.has_version = 1, f.version.version = 1005000;
  f.prog.legacy_version = &f.version;
  size_t size;
  uint8_t *bytes = pack(&f.prog, &size);
  rill_program *p = check_round_trip(bytes, size);
  cr_assert(p->has_version && p->version_legacy);
  cr_assert_eq(p->version, 1005000);
  cr_assert_eq(p->raw.size, 0);
  uint8_t *e = NULL;
  size_t n = 0;
  cr_assert_null(rill_program_encode(p, &e, &n));
  cr_assert(n == size && memcmp(e, bytes, n) == 0, "written back as field 2");
  rill_free(e);
  rill_program_destroy(p);
  free(bytes);

  /* an empty Version message (present, no number) is kept as it was */
  fixture_init(&f);
  f.prog.version = &f.version;
  bytes = pack(&f.prog, &size);
  p = check_round_trip(bytes, size);
  cr_assert_not(p->has_version);
  cr_assert_eq(p->raw.size, 2);
  rill_program_destroy(p);
  free(bytes);

  /* both fields: 4 is modelled, 2 kept */
  fixture_init(&f);
  PbVersion old;
  paddle__framework__proto__version__init(&old);
  old.has_version = 1, old.version = 1005000;
  f.version.has_version = 1, f.version.version = 2000000;
  f.prog.version = &f.version, f.prog.legacy_version = &old;
  bytes = pack(&f.prog, &size);
  p = check_round_trip(bytes, size);
  cr_assert_eq(p->version, 2000000);
  cr_assert_not(p->version_legacy);
  cr_assert_gt(p->raw.size, 0);
  rill_program_destroy(p);
  free(bytes);
}

Test(codec, every_attr_type_decodes) {
  fixture f;
  fixture_init(&f);
  PbAttr a[18], *ap[18];
  int32_t ints[] = {4, 5};
  float floats[] = {1.5f};
  char *strs[] = {"p", "q"};
  protobuf_c_boolean bools[] = {1, 0};
  int32_t blocks[] = {1};
  int64_t longs[] = {-9};
  double f64s[] = {2.25};
  static char names[18][8];
  for (int t = 0; t < 18; t++) {
    paddle__framework__proto__op_desc__attr__init(&a[t]);
    snprintf(names[t], sizeof names[t], "a%d", t);
    a[t].name = names[t];
    a[t].type = (Paddle__Framework__Proto__AttrType)t;
    ap[t] = &a[t];
  }
  a[0].has_i = 1, a[0].i = -3;
  a[1].has_f = 1, a[1].f = 0.25f;
  a[2].s = "NCHW";
  a[3].ints = ints, a[3].n_ints = 2;
  a[4].floats = floats, a[4].n_floats = 1;
  a[5].strings = strs, a[5].n_strings = 2;
  a[6].has_b = 1, a[6].b = 1;
  a[7].bools = bools, a[7].n_bools = 2;
  a[8].has_block_idx = 1, a[8].block_idx = 1;
  a[9].has_l = 1, a[9].l = 1LL << 50;
  a[10].blocks_idx = blocks, a[10].n_blocks_idx = 1;
  a[11].longs = longs, a[11].n_longs = 1;
  a[12].float64s = f64s, a[12].n_float64s = 1;
  a[13].var_name = "v";
  a[14].vars_name = strs, a[14].n_vars_name = 2;
  a[15].has_float64 = 1, a[15].float64 = -0.5;
  ProtobufCMessageUnknownField scalar = unknown(20, PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED, "\x02\x08\x01", 3);
  a[16].base.unknown_fields = &scalar, a[16].base.n_unknown_fields = 1;
  f.op.attrs = ap, f.op.n_attrs = 18;
  size_t size;
  uint8_t *bytes = pack(&f.prog, &size);
  rill_program *p = check_round_trip(bytes, size);
  const rill_op_desc *op = &p->blocks[0].ops[0];
  static const char *const want[18] = {
      "-3",         "0.25",  "\"NCHW\"", "[4, 5]",      "[1.5]",     "[\"p\", \"q\"]",
      "true",       "[true, false]",     "block 1",     "1125899906842624", "blocks [1]",
      "[-9]",       "[2.25]", "var v",   "vars [p, q]", "-0.5",      "<scalar>", "<scalars>"};
  for (int t = 0; t < 18; t++) {
    const rill_attr *at = rill_op_attr(op, names[t]);
    cr_assert_not_null(at);
    cr_assert_eq(at->value.type, (rill_attr_type)t);
    char *s = NULL;
    cr_assert_null(rill_attr_value_str(&at->value, &s));
    cr_assert_str_eq(s, want[t], "type %s", rill_attr_type_name((rill_attr_type)t));
    rill_free(s);
    rill_attr_value c;
    cr_assert_null(rill_attr_value_copy(&c, &at->value));
    cr_assert(rill_attr_value_equal(&c, &at->value));
    rill_attr_value_clear(&c);
    cr_assert_eq(c.n, 0);
  }
  cr_assert_eq(rill_op_attr(op, "a16")->raw.size, 2 + 3, "the SCALAR value is kept raw");
  rill_program_destroy(p);
  free(bytes);
}

Test(codec, attr_helpers) {
  cr_assert_str_eq(rill_attr_type_name(RILL_ATTR_BOOLEAN), "BOOLEAN");
  cr_assert_str_eq(rill_attr_type_name(RILL_ATTR_SCALARS), "SCALARS");
  cr_assert_str_eq(rill_attr_type_name((rill_attr_type)99), "invalid");
  float nan1 = __builtin_nanf("");
  rill_attr_value a = {.type = RILL_ATTR_FLOAT, .v.f = nan1}, b = a;
  cr_assert(rill_attr_value_equal(&a, &b), "equality is by bits: NaN equals itself");
  b.v.f = -0.0f;
  a.v.f = 0.0f;
  cr_assert_not(rill_attr_value_equal(&a, &b));
  rill_attr_value i = {.type = RILL_ATTR_INT, .v.i = 0};
  cr_assert_not(rill_attr_value_equal(&a, &i), "types differ");
  int32_t x[] = {1, 2}, y[] = {1, 3};
  rill_attr_value l1 = {.type = RILL_ATTR_INTS, .n = 2, .list.ints = x};
  rill_attr_value l2 = {.type = RILL_ATTR_INTS, .n = 2, .list.ints = y};
  cr_assert_not(rill_attr_value_equal(&l1, &l2));
  l2.n = 1;
  cr_assert_not(rill_attr_value_equal(&l1, &l2));
  rill_attr_value bad = {.type = (rill_attr_type)50};
  rill_attr_value c;
  rill_status *st = rill_attr_value_copy(&c, &bad);
  cr_assert_eq(rill_status_code(st), RILL_INVALID_ARGUMENT);
  rill_status_destroy(st);
}

Test(codec, op_helpers_copy_and_clear) {
  fixture f;
  fixture_init(&f);
  rill_program *p = NULL;
  cr_assert_null(decode_fixture(&f, &p));
  rill_op_desc c;
  cr_assert_null(rill_op_desc_copy(&c, &p->blocks[0].ops[0]));
  cr_assert_str_eq(c.type, "scale");
  cr_assert_str_eq(rill_op_input(&c, "X")->args[0], "x");
  cr_assert_neq(c.inputs, p->blocks[0].ops[0].inputs, "deep copy");
  /* insert the copy in block 1 and check that programs compare by content */
  rill_program *q = NULL;
  cr_assert_null(rill_program_clone(p, &q));
  cr_assert_null(rill_block_insert_op(q, 1, 0, &c));
  cr_assert_not(rill_program_equal(p, q));
  cr_assert_null(rill_block_insert_op(p, 1, 0, &c));
  cr_assert(rill_program_equal(p, q));
  rill_op_desc_clear(&c);
  cr_assert_null(c.type);
  cr_assert_eq(c.nattrs, 0);
  rill_op_desc_clear(NULL);
  rill_status *st = rill_block_insert_op(p, 2, 0, &p->blocks[0].ops[0]);
  cr_assert_eq(rill_status_code(st), RILL_INVALID_ARGUMENT);
  rill_status_destroy(st);
  rill_program_destroy(q);
  rill_program_destroy(p);
}

Test(codec, ids_are_unique_and_touch_bumps) {
  fixture f;
  fixture_init(&f);
  rill_program *a = NULL, *b = NULL;
  cr_assert_null(decode_fixture(&f, &a));
  cr_assert_null(decode_fixture(&f, &b));
  cr_assert_neq(a->id, b->id);
  cr_assert_neq(a->id, 0);
  uint64_t r = a->revision;
  rill_program_touch(a);
  cr_assert_eq(a->revision, r + 1);
  cr_assert(rill_program_equal(a, b), "revisions and ids are not content");
  rill_program_destroy(a);
  rill_program_destroy(b);
}

/* Paddle writes dims unpacked (one tag per value); packed dims from other writers are
 * read too, and written back unpacked. */
Test(codec, packed_dims_are_read_and_written_unpacked) {
  fixture f;
  fixture_init(&f);
  size_t size;
  uint8_t *bytes = pack(&f.prog, &size);
  /* dims -1, 4 unpacked: 10 <-1 as 10 bytes> 10 04; packed: 12 0b <-1> 04 (same length) */
  static const uint8_t unpacked[] = {0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                     0x01, 0x10, 0x04};
  static const uint8_t packed[] = {0x12, 0x0b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                   0xff, 0x01, 0x04};
  uint8_t *at = memmem(bytes, size, unpacked, sizeof unpacked);
  cr_assert_not_null(at, "the fixture writes dims unpacked");
  uint8_t *orig = malloc(size);
  memcpy(orig, bytes, size);
  memcpy(at, packed, sizeof packed);
  rill_program *p = NULL;
  cr_assert_null(rill_program_decode(bytes, size, &p));
  cr_assert_eq(p->blocks[0].vars[0].dims.n, 2);
  cr_assert_eq(p->blocks[0].vars[0].dims.d[0], -1);
  cr_assert_eq(p->blocks[0].vars[0].dims.d[1], 4);
  uint8_t *e = NULL;
  size_t n = 0;
  cr_assert_null(rill_program_encode(p, &e, &n));
  cr_assert(n == size && memcmp(e, orig, n) == 0, "written back unpacked");
  rill_free(e);
  free(orig);
  rill_program_destroy(p);
  free(bytes);
}
