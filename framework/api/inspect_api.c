/* Reading a program's description through the public API (rill.h, "programs"):
 * blocks, variables, ops, slots and attributes by index, for tools and bindings that
 * show a program without reaching into its structs. Also the predictor's pass counts and
 * the .npy files of the command line. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "framework/inference/predictor.h"
#include "framework/io/npy.h"
#include "framework/program/program.h"
#include "framework/registry/registry.h"
#include "rill.h"

static rill_status *find_block(const rill_program *p, int32_t block, const char *fn,
                               const rill_block_desc **out) {
  if (!p || !out) return rill_error(RILL_INVALID_ARGUMENT, "%s: NULL argument", fn);
  if (block < 0 || (size_t)block >= p->nblocks)
    return rill_error(RILL_OUT_OF_RANGE, "%s: block %" PRId32 " does not exist (the program has %zu)",
                      fn, block, p->nblocks);
  *out = &p->blocks[block];
  return NULL;
}

static rill_status *find_op(const rill_program *p, int32_t block, size_t i, const char *fn,
                            const rill_op_desc **out) {
  const rill_block_desc *b = NULL;
  RILL_TRY(find_block(p, block, fn, &b));
  if (i >= b->nops)
    return rill_error(RILL_OUT_OF_RANGE, "%s: block %" PRId32 " has %zu ops, no op #%zu", fn, block,
                      b->nops, i);
  *out = &b->ops[i];
  return NULL;
}

int32_t rill_block_parent(const rill_program *p, int32_t block) {
  if (!p || block < 0 || (size_t)block >= p->nblocks) return -1;
  return p->blocks[block].parent_idx;
}

bool rill_program_file_version(const rill_program *p, int64_t *out) {
  if (!p || !p->has_version) return false;
  if (out) *out = p->version;
  return true;
}

rill_status *rill_block_var_info(const rill_program *p, int32_t block, size_t i, rill_var_info *out) {
  const rill_block_desc *b = NULL;
  RILL_TRY(find_block(p, block, "rill_block_var_info", &b));
  if (i >= b->nvars)
    return rill_error(RILL_OUT_OF_RANGE,
                      "rill_block_var_info: block %" PRId32 " has %zu variables, no variable #%zu",
                      block, b->nvars, i);
  const rill_var_desc *v = &b->vars[i];
  *out = (rill_var_info){.name = v->name,
                         .type = v->type,
                         .has_tensor = v->has_tensor,
                         .dtype = v->dtype,
                         .ndim = v->has_tensor && v->dims.n > 0 ? (size_t)v->dims.n : 0,
                         .dims = v->dims.d,
                         .lod_level = v->lod_level,
                         .persistable = v->persistable,
                         .is_parameter = v->is_parameter};
  return NULL;
}

bool rill_block_var_index(const rill_program *p, int32_t block, const char *name, size_t *index) {
  if (!p || !name || block < 0 || (size_t)block >= p->nblocks) return false;
  const rill_var_desc *v = rill_block_find_var(p, block, name);
  if (!v) return false;
  if (index) *index = (size_t)(v - p->blocks[block].vars);
  return true;
}

rill_status *rill_block_op_info(const rill_program *p, int32_t block, size_t i, rill_op_info *out) {
  const rill_op_desc *op = NULL;
  RILL_TRY(find_op(p, block, i, "rill_block_op_info", &op));
  const rill_op_schema *s = rill_registry_init_quiet() ? NULL : rill_schema_find(op->type);
  unsigned flags = s ? s->flags : 0;
  *out = (rill_op_info){.type = op->type,
                        .ninputs = op->ninputs,
                        .noutputs = op->noutputs,
                        .nattrs = op->nattrs,
                        .registered = s != NULL,
                        .is_feed = (flags & RILL_OP_FEED) != 0,
                        .is_fetch = (flags & RILL_OP_FETCH) != 0};
  return NULL;
}

static rill_status *slot_info(const rill_program *p, int32_t block, size_t i, size_t k, bool output,
                              rill_slot_info *out) {
  const char *fn = output ? "rill_block_op_output_info" : "rill_block_op_input_info";
  const rill_op_desc *op = NULL;
  RILL_TRY(find_op(p, block, i, fn, &op));
  size_t n = output ? op->noutputs : op->ninputs;
  if (k >= n)
    return rill_error(RILL_OUT_OF_RANGE, "%s: op #%zu '%s' of block %" PRId32 " has %zu %s slots, no slot %zu",
                      fn, i, op->type, block, n, output ? "output" : "input", k);
  const rill_op_slot *s = output ? &op->outputs[k] : &op->inputs[k];
  *out = (rill_slot_info){s->param, s->nargs, (const char *const *)s->args};
  return NULL;
}

rill_status *rill_block_op_input_info(const rill_program *p, int32_t block, size_t op, size_t slot,
                                      rill_slot_info *out) {
  return slot_info(p, block, op, slot, false, out);
}

rill_status *rill_block_op_output_info(const rill_program *p, int32_t block, size_t op, size_t slot,
                                       rill_slot_info *out) {
  return slot_info(p, block, op, slot, true, out);
}

static rill_status *find_attr(const rill_program *p, int32_t block, size_t i, size_t k, const char *fn,
                              const rill_attr **out) {
  const rill_op_desc *op = NULL;
  RILL_TRY(find_op(p, block, i, fn, &op));
  if (k >= op->nattrs)
    return rill_error(RILL_OUT_OF_RANGE, "%s: op #%zu '%s' of block %" PRId32 " has %zu attributes, no attribute %zu",
                      fn, i, op->type, block, op->nattrs, k);
  *out = &op->attrs[k];
  return NULL;
}

static bool is_list(rill_attr_type t) {
  switch (t) {
    case RILL_ATTR_INTS: case RILL_ATTR_FLOATS: case RILL_ATTR_STRINGS: case RILL_ATTR_BOOLEANS:
    case RILL_ATTR_BLOCKS: case RILL_ATTR_LONGS: case RILL_ATTR_FLOAT64S: case RILL_ATTR_VARS:
    case RILL_ATTR_SCALARS:
      return true;
    default:
      return false;
  }
}

rill_status *rill_block_op_attr_info(const rill_program *p, int32_t block, size_t op, size_t attr,
                                     rill_attr_info *out) {
  const rill_attr *a = NULL;
  RILL_TRY(find_attr(p, block, op, attr, "rill_block_op_attr_info", &a));
  const rill_attr_value *v = &a->value;
  rill_attr_info info = {.name = a->name, .type = (int32_t)v->type, .count = is_list(v->type) ? v->n : 1};
  switch (v->type) {
    case RILL_ATTR_INT: info.has_int = true; info.int_value = v->v.i; break;
    case RILL_ATTR_LONG: info.has_int = true; info.int_value = v->v.l; break;
    case RILL_ATTR_BOOLEAN: info.has_int = true; info.int_value = v->v.b; break;
    case RILL_ATTR_BLOCK: info.nblocks = 1; info.blocks = &v->v.block; break;
    case RILL_ATTR_BLOCKS: info.nblocks = v->n; info.blocks = v->list.blocks; break;
    default: break;
  }
  *out = info;
  return NULL;
}

rill_status *rill_block_op_attr_value(const rill_program *p, int32_t block, size_t op,
                                      size_t attr, rill_attr_value_info *out) {
  const rill_attr *a = NULL;
  RILL_TRY(find_attr(p, block, op, attr, "rill_block_op_attr_value", &a));
  if (!out) return rill_error(RILL_INVALID_ARGUMENT, "rill_block_op_attr_value: NULL argument");
  const rill_attr_value *v = &a->value;
  rill_attr_value_info info = {.name = a->name, .type = (int32_t)v->type, .count = 1};
  switch (v->type) {
    case RILL_ATTR_INT: info.i = v->v.i; break;
    case RILL_ATTR_LONG: info.i = v->v.l; break;
    case RILL_ATTR_BOOLEAN: info.i = v->v.b; break;
    case RILL_ATTR_BLOCK: info.i = v->v.block; break;
    case RILL_ATTR_FLOAT: info.f = v->v.f; break;
    case RILL_ATTR_FLOAT64: info.f = v->v.f64; break;
    case RILL_ATTR_STRING: info.s = v->v.s ? v->v.s : ""; break;
    case RILL_ATTR_VAR: info.s = v->v.var ? v->v.var : ""; break;
    default:
      if (is_list(v->type)) {
        info.count = v->n;
        info.items = v->list.ptr;
      }
      break;
  }
  *out = info;
  return NULL;
}

rill_status *rill_block_var_flags(const rill_program *p, int32_t block, size_t i,
                                  rill_var_flags *out) {
  const rill_block_desc *b = NULL;
  RILL_TRY(find_block(p, block, "rill_block_var_flags", &b));
  if (!out) return rill_error(RILL_INVALID_ARGUMENT, "rill_block_var_flags: NULL argument");
  if (i >= b->nvars)
    return rill_error(RILL_OUT_OF_RANGE,
                      "rill_block_var_flags: block %" PRId32 " has %zu variables, no variable #%zu",
                      block, b->nvars, i);
  const rill_var_desc *v = &b->vars[i];
  *out = (rill_var_flags){.stop_gradient = v->stop_gradient, .need_check_feed = v->need_check_feed};
  return NULL;
}

/* The decimal digits of v (a '-' first when negative) at `out` (NULL: only counted);
 * returns their count. Called for every field of every variable, so without printf. */
static size_t put_int(int64_t v, char *out) {
  char tmp[24];
  size_t n = 0;
  uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  do {
    tmp[n++] = (char)('0' + (int)(u % 10));
    u /= 10;
  } while (u);
  if (v < 0) tmp[n++] = '-';
  if (out)
    for (size_t k = 0; k < n; k++) out[k] = tmp[n - 1 - k];
  return n;
}

/* One variable's fields in rill_block_vars_packed's layout, written at `out` (NULL:
 * only counted); returns the length with the NULs. */
static size_t pack_var(const rill_var_desc *v, char *out) {
  size_t ndim = v->has_tensor && v->dims.n > 0 ? (size_t)v->dims.n : 0;
  size_t n = strlen(v->name) + 1;
  if (out) memcpy(out, v->name, n);
  for (size_t k = 0; k < ndim; k++) {
    if (k) {
      if (out) out[n] = ',';
      n++;
    }
    n += put_int(v->dims.d[k], out ? out + n : NULL);
  }
  if (out) out[n] = '\0';
  n++;
  const int64_t fields[] = {v->type, v->has_tensor, (int64_t)v->dtype, v->lod_level,
                            v->persistable, v->is_parameter, v->stop_gradient,
                            v->need_check_feed};
  for (size_t k = 0; k < sizeof fields / sizeof fields[0]; k++) {
    n += put_int(fields[k], out ? out + n : NULL);
    if (out) out[n] = '\0';
    n++;
  }
  return n;
}

rill_status *rill_block_vars_packed(const rill_program *p, int32_t block, size_t from,
                                    void **out, size_t *size) {
  const rill_block_desc *b = NULL;
  RILL_TRY(find_block(p, block, "rill_block_vars_packed", &b));
  if (!out || !size) return rill_error(RILL_INVALID_ARGUMENT, "rill_block_vars_packed: NULL argument");
  if (from > b->nvars)
    return rill_error(RILL_OUT_OF_RANGE,
                      "rill_block_vars_packed: block %" PRId32 " has %zu variables, no variable #%zu",
                      block, b->nvars, from);
  size_t len = 0;
  for (size_t i = from; i < b->nvars; i++) len += pack_var(&b->vars[i], NULL);
  char *buf = rill_malloc(len ? len : 1);
  if (!buf)
    return rill_error(RILL_OUT_OF_MEMORY, "rill_block_vars_packed: %zu bytes for %zu variables",
                      len, b->nvars - from);
  size_t at = 0;
  for (size_t i = from; i < b->nvars; i++) at += pack_var(&b->vars[i], buf + at);
  *out = buf;
  *size = len;
  return NULL;
}

rill_status *rill_block_op_attr_text(const rill_program *p, int32_t block, size_t op, size_t attr,
                                     char **out) {
  const rill_attr *a = NULL;
  RILL_TRY(find_attr(p, block, op, attr, "rill_block_op_attr_text", &a));
  if (!out) return rill_error(RILL_INVALID_ARGUMENT, "rill_block_op_attr_text: NULL argument");
  return rill_attr_value_str(&a->value, out);
}

rill_status *rill_predictor_pass_counts(const rill_predictor *predictor, rill_pass_counts *out) {
  if (!predictor || !out)
    return rill_error(RILL_INVALID_ARGUMENT, "rill_predictor_pass_counts: NULL argument");
  const rill_pass_stats *s = rill_predictor_pass_stats(predictor);
  *out = (rill_pass_counts){s->dropouts, s->bn_folded, s->fc_fused, s->conv_fused, s->inplace, s->int8,
                              s->int8_folded};
  return NULL;
}

rill_status *rill_tensor_load_npy(const char *path, rill_tensor **out) {
  if (!path || !out) return rill_error(RILL_INVALID_ARGUMENT, "rill_tensor_load_npy: NULL argument");
  return rill_npy_load(path, out);
}

rill_status *rill_tensor_save_npy(const rill_tensor *tensor, const char *path) {
  if (!tensor || !path) return rill_error(RILL_INVALID_ARGUMENT, "rill_tensor_save_npy: NULL argument");
  return rill_npy_save(path, tensor);
}
