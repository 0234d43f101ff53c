/* Internal helpers shared by the program model (program.c), the protobuf codec
 * (codec.c) and the public editing API (framework/api/program_api.c). Not a contract:
 * other components use program.h and rill.h. */
#ifndef RILL_FRAMEWORK_PROGRAM_PROGRAM_IMPL_H
#define RILL_FRAMEWORK_PROGRAM_PROGRAM_IMPL_H

#include "framework/base/strmap.h"
#include "framework/program/program.h"

/* Name -> var position table of one block; keys are the vars' own names. */
struct rill_name_index {
  size_t nvars; /* number of vars indexed: a block with more or fewer is not covered */
  rill_strmap map;
};

/* A new, empty program (no blocks) with a fresh process-unique id; NULL on OOM. */
rill_program *rill_program_alloc(void);
/* Frees everything the program owns, and the program. Accepts NULL. */
void rill_program_free(rill_program *p);
/* Bumps the revision without dropping the name indexes (for edits that keep every
 * block's variables in place, or that updated the index themselves). */
void rill_program_bump(rill_program *p);

/* Appends block idx = nblocks with the given parent (-1 or an existing block). */
rill_status *rill_program_add_block(rill_program *p, int32_t parent_idx, int32_t *out_idx);
/* The block at `idx`, or NULL when out of range. */
rill_block_desc *rill_program_block(const rill_program *p, int32_t idx);

void rill_raw_clear(rill_raw_fields *r);
bool rill_raw_copy(rill_raw_fields *dst, const rill_raw_fields *src);
bool rill_raw_equal(const rill_raw_fields *a, const rill_raw_fields *b);

void rill_var_desc_clear(rill_var_desc *v);
rill_status *rill_var_desc_copy(rill_var_desc *dst, const rill_var_desc *src);
void rill_block_desc_clear(rill_block_desc *b);
void rill_attr_clear(rill_attr *a);
rill_status *rill_attr_copy(rill_attr *dst, const rill_attr *src);

/* Name index of a block. _build builds it now (dropping an older one) and reports a
 * duplicate variable name as ALREADY_EXISTS; _drop frees it; _add records var `pos`
 * (the last one) in an existing index, dropping the index if it cannot. */
rill_status *rill_block_index_build(rill_block_desc *b);
void rill_block_index_drop(rill_block_desc *b);
void rill_block_index_add(rill_block_desc *b, size_t pos);
/* Position of var `name` in block `b`, or -1. */
ptrdiff_t rill_block_var_pos(const rill_block_desc *b, const char *name);

/* Checks what an op in block `block` of `p` may hold: attribute types in range, BLOCK
 * and BLOCKS attributes naming existing blocks other than `block`. Messages start with
 * the attribute ("attr 'sub_block': ..."). */
rill_status *rill_op_check_attrs(const rill_program *p, int32_t block, const rill_op_desc *op);

#endif
