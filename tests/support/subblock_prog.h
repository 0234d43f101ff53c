/* Program-building helpers for the sub-block tests (conditional_block, while and their
 * gradients): float32 [2, 3] variables, X/Y/Out ops, scale, an executor and a scope
 * holding a ramp. Each fails the running Criterion test on an error.
 *
 *   sbp_tvar(p, 0, "w", true);
 *   rill_op_builder *b = sbp_op_begin("increment", "i", NULL, "i");
 *   OK(rill_op_builder_attr_float(b, "step", 1.0f));
 *   sbp_op_end(b, p, b1);
 *   sbp_op(p, 0, "mean", "y", NULL, "loss");
 */
#ifndef RILL_TESTS_SUPPORT_SUBBLOCK_PROG_H
#define RILL_TESTS_SUPPORT_SUBBLOCK_PROG_H

#include <stdbool.h>
#include <stdint.h>

#include "rill.h"

/* A float32 [2, 3] LoD tensor variable `name` in `block`. */
void sbp_tvar(rill_program *p, int32_t block, const char *name, bool persist);
/* An op `type` with inputs X = x (and Y = y unless NULL) and output Out = out, to be given
 * attributes and appended by sbp_op_end, which destroys the builder. */
rill_op_builder *sbp_op_begin(const char *type, const char *x, const char *y, const char *out);
void sbp_op_end(rill_op_builder *b, rill_program *p, int32_t block);
/* sbp_op_begin then sbp_op_end, with no attributes. */
void sbp_op(rill_program *p, int32_t block, const char *type, const char *x, const char *y,
            const char *out);
/* out = scale * x + bias. */
void sbp_scale(rill_program *p, int32_t block, const char *x, const char *out, float scale,
               float bias);
/* An executor of two threads with schedule `sched`. */
rill_executor *sbp_executor(rill_schedule sched);
/* A float32 [2, 3] tensor holding start, start + 1, ..., start + 5. */
rill_tensor *sbp_ramp(float start);
/* A new root scope holding `name` = sbp_ramp(start). */
rill_scope *sbp_scope_with_ramp(const char *name, float start);

#endif
