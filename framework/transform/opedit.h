/* Helpers the program transforms (backward, regularization, clipping) share: building
 * op descriptions, lists of ops, renaming arguments, and a small string map. */
#ifndef RILL_FRAMEWORK_TRANSFORM_OPEDIT_H
#define RILL_FRAMEWORK_TRANSFORM_OPEDIT_H

#include "framework/base/strmap.h"
#include "framework/program/program.h"

/* Paddle's op roles (attr "op_role") and the attr naming [param, grad] pairs. */
#define RILL_OP_ROLE_FORWARD 0
#define RILL_OP_ROLE_BACKWARD 1
#define RILL_OP_ROLE_OPTIMIZE 2
#define RILL_OP_ROLE_LOSS 256
#define RILL_OP_ROLE_ATTR "op_role"
#define RILL_OP_ROLE_VAR_ATTR "op_role_var"

/* A growable list of owned op descriptions. */
typedef struct rill_oplist {
  rill_op_desc *v;
  size_t n, cap;
} rill_oplist;

/* Moves *op into the list (at the end / at index `at`); *op is zeroed. On failure *op is
 * cleared. */
rill_status *rill_oplist_push(rill_oplist *l, rill_op_desc *op);
rill_status *rill_oplist_insert(rill_oplist *l, size_t at, rill_op_desc *op);
void rill_oplist_clear(rill_oplist *l);

/* An empty op of `type` (no slots, no attributes). */
rill_status *rill_opd_init(rill_op_desc *op, const char *type);
/* Appends slot `slot` with the given arguments (replacing an existing one of that name). */
rill_status *rill_opd_input(rill_op_desc *op, const char *slot, const char *const *args, size_t n);
rill_status *rill_opd_output(rill_op_desc *op, const char *slot, const char *const *args,
                             size_t n);
rill_status *rill_opd_attr(rill_op_desc *op, const char *name, const rill_attr_value *v);
rill_status *rill_opd_attr_int(rill_op_desc *op, const char *name, int32_t v);
rill_status *rill_opd_attr_float(rill_op_desc *op, const char *name, float v);
rill_status *rill_opd_attr_bool(rill_op_desc *op, const char *name, bool v);
rill_status *rill_opd_attr_ints(rill_op_desc *op, const char *name, const int32_t *v, size_t n);
rill_status *rill_opd_attr_longs(rill_op_desc *op, const char *name, const int64_t *v, size_t n);
rill_status *rill_opd_attr_strings(rill_op_desc *op, const char *name, const char *const *v,
                                   size_t n);
/* Renames every argument equal to `from` (in inputs and/or outputs) to `to`. */
rill_status *rill_opd_rename(rill_op_desc *op, const char *from, const char *to, bool inputs,
                             bool outputs);
/* True when `name` is one of op's input (or output) arguments. */
bool rill_opd_reads(const rill_op_desc *op, const char *name);
bool rill_opd_writes(const rill_op_desc *op, const char *name);

/* Replaces `dst`'s contents with `src`'s (a program edited as a copy), keeping dst's
 * identity (id) and bumping its revision; frees src. Used to make transforms
 * all-or-nothing: edit a clone, commit it on success. */
void rill_program_commit(rill_program *dst, rill_program *src);

#endif
