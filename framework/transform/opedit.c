/* Op-description editing helpers and a string map for the program transforms. */
#include <string.h>

#include "framework/base/alloc.h"
#include "framework/program/program_impl.h"
#include "framework/registry/registry.h"
#include "framework/transform/opedit.h"

rill_status *rill_oplist_insert(rill_oplist *l, size_t at, rill_op_desc *op) {
  void *v = l->v;
  if (at > l->n || !rill_grow(&v, &l->cap, l->n + 1, sizeof(rill_op_desc))) {
    rill_op_desc_clear(op);
    memset(op, 0, sizeof *op);
    return at > l->n ? rill_error(RILL_INTERNAL, "op list index %zu past %zu", at, l->n)
                     : rill_oom();
  }
  l->v = v;
  memmove(&l->v[at + 1], &l->v[at], (l->n - at) * sizeof *l->v);
  l->v[at] = *op;
  l->n++;
  memset(op, 0, sizeof *op);
  return NULL;
}

rill_status *rill_oplist_push(rill_oplist *l, rill_op_desc *op) {
  return rill_oplist_insert(l, l->n, op);
}

void rill_oplist_clear(rill_oplist *l) {
  for (size_t i = 0; i < l->n; i++) rill_op_desc_clear(&l->v[i]);
  rill_free(l->v);
  memset(l, 0, sizeof *l);
}

rill_status *rill_opd_init(rill_op_desc *op, const char *type) {
  memset(op, 0, sizeof *op);
  op->type = rill_strdup(type);
  return op->type ? NULL : rill_oom();
}

static rill_status *set_slot(rill_op_slot **slots, size_t *nslots, const char *slot,
                             const char *const *args, size_t n) {
  rill_op_slot s = {0};
  s.param = rill_strdup(slot);
  if (!s.param) return rill_oom();
  if (n) {
    s.args = rill_calloc(n, sizeof *s.args);
    if (!s.args) goto oom;
    for (; s.nargs < n; s.nargs++) {
      s.args[s.nargs] = rill_strdup(args[s.nargs]);
      if (!s.args[s.nargs]) goto oom;
    }
  }
  for (size_t i = 0; i < *nslots; i++)
    if (strcmp((*slots)[i].param, slot) == 0) {
      rill_op_slot old = (*slots)[i];
      (*slots)[i] = s;
      for (size_t j = 0; j < old.nargs; j++) rill_free(old.args[j]);
      rill_free(old.args);
      rill_free(old.param);
      return NULL;
    }
  rill_op_slot *grown = rill_realloc(*slots, (*nslots + 1) * sizeof *grown);
  if (!grown) goto oom;
  *slots = grown;
  grown[(*nslots)++] = s;
  return NULL;
oom:
  for (size_t j = 0; j < s.nargs; j++) rill_free(s.args[j]);
  rill_free(s.args);
  rill_free(s.param);
  return rill_oom();
}

rill_status *rill_opd_input(rill_op_desc *op, const char *slot, const char *const *args, size_t n) {
  return set_slot(&op->inputs, &op->ninputs, slot, args, n);
}

rill_status *rill_opd_output(rill_op_desc *op, const char *slot, const char *const *args,
                             size_t n) {
  return set_slot(&op->outputs, &op->noutputs, slot, args, n);
}

rill_status *rill_opd_attr(rill_op_desc *op, const char *name, const rill_attr_value *v) {
  return rill_grad_attr(op, name, v);
}

rill_status *rill_opd_attr_int(rill_op_desc *op, const char *name, int32_t v) {
  rill_attr_value a = {.type = RILL_ATTR_INT, .v.i = v};
  return rill_grad_attr(op, name, &a);
}

rill_status *rill_opd_attr_float(rill_op_desc *op, const char *name, float v) {
  rill_attr_value a = {.type = RILL_ATTR_FLOAT, .v.f = v};
  return rill_grad_attr(op, name, &a);
}

rill_status *rill_opd_attr_bool(rill_op_desc *op, const char *name, bool v) {
  rill_attr_value a = {.type = RILL_ATTR_BOOLEAN, .v.b = v};
  return rill_grad_attr(op, name, &a);
}

rill_status *rill_opd_attr_ints(rill_op_desc *op, const char *name, const int32_t *v, size_t n) {
  rill_attr_value a = {.type = RILL_ATTR_INTS, .n = n, .list.ints = (int32_t *)v};
  return rill_grad_attr(op, name, &a);
}

rill_status *rill_opd_attr_longs(rill_op_desc *op, const char *name, const int64_t *v, size_t n) {
  rill_attr_value a = {.type = RILL_ATTR_LONGS, .n = n, .list.longs = (int64_t *)v};
  return rill_grad_attr(op, name, &a);
}

rill_status *rill_opd_attr_strings(rill_op_desc *op, const char *name, const char *const *v,
                                   size_t n) {
  rill_attr_value a = {.type = RILL_ATTR_STRINGS, .n = n, .list.strings = (char **)v};
  return rill_grad_attr(op, name, &a);
}

static rill_status *rename_slots(rill_op_slot *slots, size_t n, const char *from, const char *to) {
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < slots[i].nargs; j++)
      if (strcmp(slots[i].args[j], from) == 0) {
        char *s = rill_strdup(to);
        if (!s) return rill_oom();
        rill_free(slots[i].args[j]);
        slots[i].args[j] = s;
      }
  return NULL;
}

rill_status *rill_opd_rename(rill_op_desc *op, const char *from, const char *to, bool inputs,
                             bool outputs) {
  if (inputs) RILL_TRY(rename_slots(op->inputs, op->ninputs, from, to));
  if (outputs) RILL_TRY(rename_slots(op->outputs, op->noutputs, from, to));
  return NULL;
}

static bool slots_have(const rill_op_slot *slots, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < slots[i].nargs; j++)
      if (strcmp(slots[i].args[j], name) == 0) return true;
  return false;
}

bool rill_opd_reads(const rill_op_desc *op, const char *name) {
  return slots_have(op->inputs, op->ninputs, name);
}

bool rill_opd_writes(const rill_op_desc *op, const char *name) {
  return slots_have(op->outputs, op->noutputs, name);
}

void rill_program_commit(rill_program *dst, rill_program *src) {
  rill_program old = *dst;
  *dst = *src;
  dst->id = old.id;
  dst->revision = old.revision + 1;
  *src = old;
  rill_program_free(src);
  /* name indexes moved with their blocks and stay valid */
}
