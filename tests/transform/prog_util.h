/* Helpers for tests that build whole programs, append the backward pass and run them
 * through the executor (header-only; included by tests/transform and tests/train). */
#ifndef RILL_TESTS_TRANSFORM_PROG_UTIL_H
#define RILL_TESTS_TRANSFORM_PROG_UTIL_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "framework/program/program.h"
#include "rill.h"

#define POK(expr)                                                                         \
  do {                                                                                    \
    rill_status *pok_st_ = (expr);                                                        \
    cr_assert_null(pok_st_, "%s: %s", #expr, rill_status_message(pok_st_));               \
  } while (0)

static inline rill_program *prog_new(void) {
  rill_program *p = NULL;
  POK(rill_program_create(&p));
  return p;
}

/* Declares a dense variable; flags: 'p' persistable parameter, 's' stop_gradient. */
static inline void prog_var(rill_program *p, const char *name, rill_dtype dt, const char *flags,
                            size_t nd, ...) {
  int64_t dims[RILL_MAX_DIMS];
  va_list ap;
  va_start(ap, nd);
  for (size_t i = 0; i < nd; i++) dims[i] = va_arg(ap, int64_t);
  va_end(ap);
  bool param = strchr(flags, 'p') != NULL, stop = strchr(flags, 's') != NULL;
  POK(rill_block_add_var(p, 0, name, RILL_VAR_LOD_TENSOR, dt, dims, nd, 0, param));
  if (param || stop) POK(rill_var_set_flags(p, 0, name, param, param, stop));
}

/* Slots as "X=a,b;Y=c". */
static inline void prog_slots(rill_op_builder *b, const char *spec, bool input) {
  char buf[512];
  snprintf(buf, sizeof buf, "%s", spec);
  char *save = NULL;
  for (char *slot = strtok_r(buf, ";", &save); slot; slot = strtok_r(NULL, ";", &save)) {
    char *eq = strchr(slot, '=');
    cr_assert_not_null(eq, "bad slot spec %s", spec);
    *eq = 0;
    const char *args[16];
    size_t n = 0;
    char *save2 = NULL;
    for (char *a = strtok_r(eq + 1, ",", &save2); a && n < 16; a = strtok_r(NULL, ",", &save2))
      args[n++] = a;
    if (input) POK(rill_op_builder_input(b, slot, args, n));
    else POK(rill_op_builder_output(b, slot, args, n));
  }
}

static inline rill_op_builder *prog_op_begin(const char *type, const char *ins, const char *outs) {
  rill_op_builder *b = NULL;
  POK(rill_op_builder_create(type, &b));
  if (ins && *ins) prog_slots(b, ins, true);
  if (outs && *outs) prog_slots(b, outs, false);
  return b;
}

static inline void prog_op_end(rill_op_builder *b, rill_program *p) {
  POK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
}

static inline void prog_op(rill_program *p, const char *type, const char *ins, const char *outs) {
  prog_op_end(prog_op_begin(type, ins, outs), p);
}

static inline const rill_op_desc *prog_opd(const rill_program *p, size_t i) {
  return &p->blocks[0].ops[i];
}

/* Argument j of slot `slot` (input or output) of op i; NULL when absent. */
static inline const char *prog_arg(const rill_program *p, size_t i, bool input, const char *slot,
                                   size_t j) {
  const rill_op_slot *s = input ? rill_op_input(prog_opd(p, i), slot) : rill_op_output(prog_opd(p, i), slot);
  return s && j < s->nargs ? s->args[j] : NULL;
}

static inline int prog_attr_int(const rill_program *p, size_t i, const char *name) {
  const rill_attr *a = rill_op_attr(prog_opd(p, i), name);
  cr_assert_not_null(a, "op #%zu (%s) lacks attr %s", i, prog_opd(p, i)->type, name);
  return a->value.v.i;
}

/* Index of the first op of `type` at or after `from`; -1 when none. */
static inline long prog_find_op(const rill_program *p, const char *type, size_t from) {
  for (size_t i = from; i < p->blocks[0].nops; i++)
    if (strcmp(p->blocks[0].ops[i].type, type) == 0) return (long)i;
  return -1;
}

/* A tensor over caller memory (no copy); the caller keeps `data` alive. */
static inline rill_tensor *wrap(rill_dtype dt, void *data, size_t nd, ...) {
  int64_t dims[RILL_MAX_DIMS];
  va_list ap;
  va_start(ap, nd);
  size_t n = 1;
  for (size_t i = 0; i < nd; i++) {
    dims[i] = va_arg(ap, int64_t);
    n *= (size_t)dims[i];
  }
  va_end(ap);
  rill_tensor *t = NULL;
  POK(rill_tensor_create_from_data(dt, dims, nd, data, n * rill_dtype_size(dt), NULL, NULL, &t));
  return t;
}

static inline void scope_bind(rill_scope *s, const char *name, rill_tensor *t) {
  POK(rill_scope_set_tensor(s, name, t));
  rill_tensor_destroy(t);
}

static inline rill_executor *exe_new(void) {
  rill_executor_options o = RILL_EXECUTOR_OPTIONS_INIT;
  o.num_threads = 1;
  rill_executor *e = NULL;
  POK(rill_executor_create(&o, &e));
  return e;
}

/* Deterministic values in [-scale, scale). */
static inline void fill_det(double *v, size_t n, uint64_t seed, double scale) {
  uint64_t s = seed * 0x9E3779B97F4A7C15ULL + 1;
  for (size_t i = 0; i < n; i++) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    v[i] = ((double)(s >> 11) / 9007199254740992.0 * 2 - 1) * scale;
  }
}

#endif
