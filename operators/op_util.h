/* Helpers shared by operator schemas and their shape inference. */
#ifndef RILL_OPERATORS_OP_UTIL_H
#define RILL_OPERATORS_OP_UTIL_H

#include "framework/registry/registry.h"
#include "operators/op_index.h"

#define RILL_DEF_INT(x) {.type = RILL_ATTR_INT, .v.i = (x)}
#define RILL_DEF_LONG(x) {.type = RILL_ATTR_LONG, .v.l = (x)}
#define RILL_DEF_FLOAT(x) {.type = RILL_ATTR_FLOAT, .v.f = (x)}
#define RILL_DEF_BOOL(x) {.type = RILL_ATTR_BOOLEAN, .v.b = (x)}
#define RILL_DEF_STRING(x) {.type = RILL_ATTR_STRING, .v.s = (char *)(x)}
#define RILL_DEF_EMPTY(t) {.type = (t)}

/* Input (slot, i) meta or NULL when absent. */
static inline const rill_tensor_meta *rill_infer_in(const rill_infer_ctx *c, size_t slot, size_t i) {
  return i < c->nin[slot] ? &c->in[slot][i] : NULL;
}
static inline rill_tensor_meta *rill_infer_out(const rill_infer_ctx *c, size_t slot, size_t i) {
  return i < c->nout[slot] ? &c->out[slot][i] : NULL;
}
static inline const char *rill_infer_in_name(const rill_infer_ctx *c, size_t slot, size_t i) {
  return c->in_names && i < c->nin[slot] ? c->in_names[slot][i] : "?";
}
static inline const char *rill_infer_out_name(const rill_infer_ctx *c, size_t slot, size_t i) {
  return c->out_names && i < c->nout[slot] ? c->out_names[slot][i] : "?";
}
/* Run-time tensor of input (slot, i); NULL at compile time or when absent. */
static inline const rill_tensor *rill_infer_tensor(const rill_infer_ctx *c, size_t slot, size_t i) {
  return c->in_tensors && i < c->nin[slot] ? c->in_tensors[slot][i] : NULL;
}

/* Sets an output's meta; lod_from (slot, i) or (-1, -1). */
static inline void rill_meta_set(rill_tensor_meta *m, rill_dtype dtype, const rill_dims *dims,
                                 int32_t lod_level, int lod_slot, int lod_index) {
  m->dtype = dtype;
  m->dims = *dims;
  m->lod_level = lod_level;
  m->known = true;
  m->lod_from[0] = (int16_t)lod_slot;
  m->lod_from[1] = (int16_t)lod_index;
}

/* Marks an output as unknown (its input has no tensor description). */
static inline void rill_meta_unknown(rill_tensor_meta *m) {
  m->known = false;
  m->lod_from[0] = -1;
  m->lod_from[1] = -1;
}

/* The start of a one-input, one-output op's inference: input 0 and output 0 through *x
 * and *out, an error when either is absent; *x is NULL (and the output marked unknown)
 * when the input has no description yet. */
static inline rill_status *rill_infer_unary_begin(rill_infer_ctx *ctx, const rill_tensor_meta **x,
                                                  rill_tensor_meta **out) {
  *x = rill_infer_in(ctx, 0, 0);
  *out = rill_infer_out(ctx, 0, 0);
  if (!*x || !*out)
    return rill_infer_error(ctx, "needs input %s and output %s", ctx->schema->inputs[0].name,
                            ctx->schema->outputs[0].name);
  if (!(*x)->known) {
    rill_meta_unknown(*out);
    *x = NULL;
  }
  return NULL;
}

/* Shape inference of ops whose one output takes the meta of input 0 (dtype, dims, LoD):
 * unknown when that input has no description. */
static inline rill_status *rill_infer_like_input(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!out) return rill_infer_error(ctx, "needs an output");
  if (!x || !x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  rill_meta_set(out, x->dtype, &x->dims, x->lod_level, 0, 0);
  return NULL;
}

#endif
