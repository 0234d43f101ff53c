/* `--lod NAME=SPEC` for `rill run`: SPEC is one LoD level of comma-separated offsets,
 * levels separated by ';' ("0,3,7" or "0,2;0,1,3"). */
#ifndef RILL_TOOLS_CLI_LOD_ARG_H
#define RILL_TOOLS_CLI_LOD_ARG_H

#include <stddef.h>
#include <stdint.h>

#include "rill.h"

typedef struct lod_arg {
  char *name;         /* the input it applies to */
  size_t nlevels;
  uint64_t **levels;  /* levels[i] has counts[i] offsets */
  size_t *counts;
} lod_arg;

/* Parses "NAME=SPEC" into *out. Errors (INVALID_ARGUMENT) name the argument and say what
 * is wrong with it; *out is then left empty. Only the syntax is checked here: that the
 * offsets fit the tensor is checked when they are set on it (rill_tensor_set_lod). */
rill_status *lod_arg_parse(const char *arg, lod_arg *out);
/* Sets the parsed LoD on `t`; errors name the argument and the input. */
rill_status *lod_arg_apply(const lod_arg *lod, rill_tensor *t);
void lod_arg_clear(lod_arg *lod);

#endif
