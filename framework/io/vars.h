/* Reading one declared variable from a tensor stream into a scope, shared by model
 * loading (model.c) and rill_program_load_vars (vars.c). */
#ifndef RILL_FRAMEWORK_IO_VARS_H
#define RILL_FRAMEWORK_IO_VARS_H

#include "framework/data/scope.h"
#include "framework/io/stream.h"
#include "framework/program/program.h"

/* Reads variable `v` (a LoD tensor or selected rows, checked against its declaration)
 * at the reader's position into variable v->name of `scope`. */
rill_status *rill_io_read_var(rill_reader *r, const rill_var_desc *v, rill_scope *scope);

#endif
