/* Named positions in every op schema's tables, so that kernels and shape inference
 * never read an attribute or a slot by a bare number:
 *
 *   ctx->attrs[RILL_MOMENTUM_ATTR_MU].v.f      attribute "mu" of momentum
 *   rill_kin(ctx, RILL_MOMENTUM_IN_PARAM, 0)   input slot "Param"
 *   rill_kout(ctx, RILL_MOMENTUM_OUT_PARAM_OUT, 0)
 *
 * The names are generated at build time by scripts/gen_op_index.py from the tables the
 * schemas in operators/<op>.c point to (the tables stay the one place an op's slots and
 * attributes are written): RILL_<OP>_IN_<SLOT>, RILL_<OP>_OUT_<SLOT>,
 * RILL_<OP>_ATTR_<NAME> and RILL_<OP>_{IN,OUT,ATTR}_COUNT, upper case, CamelCase split
 * into words, "@" and other punctuation as "_" (X@GRAD -> X_GRAD; a slot or attribute
 * named "count" is <..>_COUNT_SLOT, since _COUNT is the table's length). Ops sharing a table
 * each get their own names. Every operators/<op>.c that defines a schema ends with
 * RILL_OP_TABLE_CHECKS(<file name without .c>); static assertions that its tables have
 * the generated counts. */
#ifndef RILL_OPERATORS_OP_INDEX_H
#define RILL_OPERATORS_OP_INDEX_H

/* Whether two generated names (of different ops' enums) are the same position: code
 * shared by ops with different tables asserts that the positions it reads agree. */
#define RILL_SAME_POS(a, b) ((int)(a) == (int)(b))

#ifdef RILL_OP_INDEX_GENERATING
/* The generator itself preprocesses operators/<op>.c: no names exist yet. */
#define RILL_OP_TABLE_CHECKS(file)
#else
#include "rill_op_index.gen.h"
#define RILL_OP_TABLE_CHECKS(file) RILL_OP_TABLE_CHECKS_##file
#endif

#endif
