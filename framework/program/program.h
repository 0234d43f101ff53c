/* In-memory program descriptions: ProgramDesc, BlockDesc, VarDesc, OpDesc and
 * attributes, owned by rill and converted from/to Paddle's protobuf wire format.
 * Fields that rill does not model (newer Paddle additions) are kept as raw bytes and
 * written back unchanged, so parse -> serialize -> parse gives an equal program. */
#ifndef RILL_FRAMEWORK_PROGRAM_PROGRAM_H
#define RILL_FRAMEWORK_PROGRAM_PROGRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "framework/base/dims.h"
#include "framework/base/status.h"

/* Paddle's AttrType numbers. */
typedef enum rill_attr_type {
  RILL_ATTR_INT = 0,
  RILL_ATTR_FLOAT = 1,
  RILL_ATTR_STRING = 2,
  RILL_ATTR_INTS = 3,
  RILL_ATTR_FLOATS = 4,
  RILL_ATTR_STRINGS = 5,
  RILL_ATTR_BOOLEAN = 6,
  RILL_ATTR_BOOLEANS = 7,
  RILL_ATTR_BLOCK = 8,
  RILL_ATTR_LONG = 9,
  RILL_ATTR_BLOCKS = 10,
  RILL_ATTR_LONGS = 11,
  RILL_ATTR_FLOAT64S = 12,
  RILL_ATTR_VAR = 13,
  RILL_ATTR_VARS = 14,
  RILL_ATTR_FLOAT64 = 15,
  RILL_ATTR_SCALAR = 16,
  RILL_ATTR_SCALARS = 17,
  RILL_ATTR_TYPE_COUNT
} rill_attr_type;

const char *rill_attr_type_name(rill_attr_type type);

/* One attribute value. Scalars live in `v`; lists in `list` with `n` items. */
typedef struct rill_attr_value {
  rill_attr_type type;
  union {
    int32_t i;
    float f;
    char *s;
    bool b;
    int32_t block;
    int64_t l;
    double f64;
    char *var;
  } v;
  size_t n;
  union {
    int32_t *ints;
    float *floats;
    char **strings;
    bool *bools;
    int32_t *blocks;
    int64_t *longs;
    double *float64s;
    char **vars;
    void *ptr;
  } list;
} rill_attr_value;

void rill_attr_value_clear(rill_attr_value *v);
rill_status *rill_attr_value_copy(rill_attr_value *dst, const rill_attr_value *src);
bool rill_attr_value_equal(const rill_attr_value *a, const rill_attr_value *b);
/* Formats a value for humans ("[1, 2]", "0.5", "\"NCHW\"", "block 2"). */
rill_status *rill_attr_value_str(const rill_attr_value *v, char **out);

/* Fields kept verbatim for round trips; opaque to everything but the codec. */
typedef struct rill_raw_fields {
  size_t size;
  uint8_t *bytes; /* serialized protobuf fields, re-emitted as is */
} rill_raw_fields;

typedef struct rill_attr {
  char *name;
  rill_attr_value value;
  rill_raw_fields raw;
} rill_attr;

typedef struct rill_op_slot {
  char *param;
  char **args;
  size_t nargs;
} rill_op_slot;

typedef struct rill_op_desc {
  char *type;
  rill_op_slot *inputs;
  size_t ninputs;
  rill_op_slot *outputs;
  size_t noutputs;
  rill_attr *attrs;
  size_t nattrs;
  bool has_is_target, is_target;
  rill_raw_fields raw;
} rill_op_desc;

typedef struct rill_var_desc {
  char *name;
  int32_t type;      /* VarType.Type: rill_var_type */
  bool has_tensor;   /* a tensor desc was present (lod_tensor / selected_rows / array) */
  rill_dtype dtype;  /* of that tensor desc */
  rill_dims dims;    /* -1 for unknown extents */
  int32_t lod_level;
  bool persistable, need_check_feed, is_parameter, stop_gradient;
  uint8_t has_flags; /* which optional fields were present, for faithful round trips */
  rill_raw_fields type_raw; /* VarType fields rill does not model (reader, tuple) */
  rill_raw_fields raw;
} rill_var_desc;

#define RILL_VARDESC_HAS_PERSISTABLE 1u
#define RILL_VARDESC_HAS_NEED_CHECK_FEED 2u
#define RILL_VARDESC_HAS_IS_PARAMETER 4u
#define RILL_VARDESC_HAS_STOP_GRADIENT 8u
#define RILL_VARDESC_HAS_LOD_LEVEL 16u

typedef struct rill_block_desc {
  int32_t idx, parent_idx, forward_block_idx;
  bool has_forward_block_idx;
  rill_var_desc *vars;
  size_t nvars, capvars;
  rill_op_desc *ops;
  size_t nops, capops;
  rill_raw_fields raw;
  struct rill_name_index *index; /* name -> var position, built lazily */
} rill_block_desc;

struct rill_program {
  rill_block_desc *blocks;
  size_t nblocks, capblocks;
  bool has_version;
  int64_t version;         /* Paddle's version field */
  bool version_legacy;     /* written as field 2 (Paddle 1.0-1.5) */
  rill_raw_fields raw;     /* op_compatible_map, op_version_map, unknown fields */
  uint64_t id;             /* process-unique, for plan caches */
  uint64_t revision;       /* bumped by every edit */
  /* Backward passes appended so far (Paddle's Program._appending_grad_times): the
   * gradients a later pass writes under names that exist are renamed grad/.../x@GRAD
   * (doc/design/backward.md). Copied by clone; not serialized. */
  int32_t grad_passes;
};

/* Parse / serialize ProgramDesc bytes (the 2.x .pdmodel and the 1.x __model__). */
rill_status *rill_program_decode(const void *bytes, size_t size, rill_program **out);
rill_status *rill_program_encode(const rill_program *p, uint8_t **out, size_t *size);
/* Deep equality of two programs (all modelled and raw fields). */
bool rill_program_equal(const rill_program *a, const rill_program *b);
rill_status *rill_program_clone(const rill_program *p, rill_program **out);

/* Variables: in one block, or through the parent chain of blocks. */
rill_var_desc *rill_block_find_var(const rill_program *p, int32_t block, const char *name);
rill_var_desc *rill_program_find_var(const rill_program *p, int32_t block, const char *name);
void rill_program_touch(rill_program *p); /* bump revision after an edit */
/* How many parents `block` has before one with parent -1 (RILL_MAX_BLOCK_DEPTH caps it
 * in every loaded or API-built program); 0 for a block that does not exist. */
size_t rill_program_block_depth(const rill_program *p, int32_t block);

/* Op helpers. A slot that is absent has no arguments. */
const rill_op_slot *rill_op_input(const rill_op_desc *op, const char *param);
const rill_op_slot *rill_op_output(const rill_op_desc *op, const char *param);
const rill_attr *rill_op_attr(const rill_op_desc *op, const char *name);
rill_status *rill_op_desc_copy(rill_op_desc *dst, const rill_op_desc *src);
void rill_op_desc_clear(rill_op_desc *op);
/* Inserts a copy of `op` at `index` (nops appends). */
rill_status *rill_block_insert_op(rill_program *p, int32_t block, size_t index,
                                  const rill_op_desc *op);

#endif
