/* Runs one op directly, without the executor: builds its op desc, resolves attributes,
 * runs shape inference at run time on the given input tensors, allocates the outputs
 * and calls the CPU kernel. The base for op tests and, later, gradient checks.
 *
 *   op_harness *h;
 *   op_harness_create("mul", &h);
 *   op_harness_input(h, "X", "x", x);      // x is copied into the harness's scope
 *   op_harness_input(h, "Y", "y", y);
 *   op_harness_output(h, "Out", "out");
 *   op_harness_attr_int(h, "x_num_col_dims", 1);
 *   rill_status *st = op_harness_run(h);
 *   rill_tensor *out = op_harness_tensor(h, "out");
 */
#ifndef RILL_TESTS_SUPPORT_OP_HARNESS_H
#define RILL_TESTS_SUPPORT_OP_HARNESS_H

#include "framework/registry/registry.h"

typedef struct op_harness op_harness;

rill_status *op_harness_create(const char *type, op_harness **out);
/* A harness for a ready op desc (a copy is kept), e.g. a gradient op emitted by a maker.
 * With shared_scope it runs in that scope (not destroyed with the harness), so gradient
 * ops see the forward op's variables; with NULL it gets a scope of its own.
 * Arguments named RILL_EMPTY_VAR ("@EMPTY@") are bound as absent in every harness, as the
 * executor does: rill_kin/rill_kout return NULL for them. */
rill_status *op_harness_create_from_desc(const rill_op_desc *desc, rill_scope *shared_scope,
                                        op_harness **out);
void op_harness_destroy(op_harness *h);
/* Runs later kernels with a CPU device of `threads` threads (default: one). The
 * harness's device has no background thread, as outside an executor: blocking jobs
 * (the checkpoint op's writes) finish before the kernel returns. */
void op_harness_set_threads(op_harness *h, int32_t threads);

/* Binds variable `name` to input slot `slot` (appended after earlier arguments). With a
 * tensor, the variable gets a copy of it (own buffer); with NULL the variable is left as
 * it is (absent ones are created empty). */
rill_status *op_harness_input(op_harness *h, const char *slot, const char *name,
                              const rill_tensor *t);
rill_status *op_harness_output(op_harness *h, const char *slot, const char *name);
/* Sets an attribute (a copy of v), replacing an earlier one of the same name. */
rill_status *op_harness_attr(op_harness *h, const char *name, const rill_attr_value *v);
rill_status *op_harness_attr_int(op_harness *h, const char *name, int32_t v);
rill_status *op_harness_attr_long(op_harness *h, const char *name, int64_t v);
rill_status *op_harness_attr_float(op_harness *h, const char *name, float v);
rill_status *op_harness_attr_bool(op_harness *h, const char *name, bool v);
rill_status *op_harness_attr_string(op_harness *h, const char *name, const char *v);
rill_status *op_harness_attr_longs(op_harness *h, const char *name, const int64_t *v, size_t n);
rill_status *op_harness_attr_ints(op_harness *h, const char *name, const int32_t *v, size_t n);

/* Inference, allocation and kernel, as the executor would do them. May be called again. */
rill_status *op_harness_run(op_harness *h);
/* Only the run-time inference: fills metas for each output slot's first argument. */
rill_status *op_harness_infer(op_harness *h);

/* The dense tensor of variable `name` in the harness's scope (NULL when none). */
rill_tensor *op_harness_tensor(op_harness *h, const char *name);
rill_scope *op_harness_scope(op_harness *h);
const rill_op_desc *op_harness_desc(const op_harness *h);

/* Convenience: a new tensor of dtype with dims, filled from data (may be NULL). */
rill_tensor *op_harness_make(rill_dtype dtype, const int64_t *dims, size_t ndim, const void *data);
void op_harness_free_tensor(rill_tensor *t);

#endif
