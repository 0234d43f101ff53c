/* Shared by the dynamic recurrent ops (operators/lstm.c, operators/gru.c): the checks of
 * their activation attributes and of the [N, D] initial states at compile time. */
#ifndef RILL_OPERATORS_SEQ_RNN_H
#define RILL_OPERATORS_SEQ_RNN_H

#include <string.h>

#include "operators/math_grad.h"
#include "operators/op_util.h"

/* An activation attribute must name one of Paddle's recurrent activations. */
static inline rill_status *rill_seq_rnn_check_act(rill_infer_ctx *ctx, size_t attr) {
  const char *v = ctx->attrs[attr].v.s ? ctx->attrs[attr].v.s : "";
  static const char *const ok[] = {"sigmoid", "tanh", "relu", "identity", ""};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
    if (strcmp(v, ok[i]) == 0) return NULL;
  return rill_infer_error(ctx, "attribute %s is '%s': expected sigmoid, tanh, relu or identity",
                          ctx->schema->attrs[attr].name, v);
}

/* The gradient op of a dynamic recurrent op: its inputs [0, last] that are not
 * dispensable are present, Hidden@GRAD (`dhidden`) is shaped like Hidden (`hidden`),
 * and each of the `nout` gradient outputs, wanted only for a forward input given, is
 * shaped like that input (output o is the gradient of input o). */
static inline rill_status *rill_seq_rnn_grad_infer(rill_infer_ctx *ctx, size_t last, size_t dhidden,
                                                   size_t hidden, size_t nout) {
  const rill_op_schema *s = ctx->schema;
  for (size_t i = 0; i <= last; i++)
    if (!(s->inputs[i].flags & RILL_SLOT_DISPENSABLE) && !rill_infer_in(ctx, i, 0))
      return rill_infer_error(ctx, "needs input %s", s->inputs[i].name);
  RILL_TRY(rill_grad_infer_same(ctx, dhidden, hidden));
  for (size_t o = 0; o < nout; o++)
    if (rill_infer_out(ctx, o, 0) && !rill_infer_in(ctx, o, 0))
      return rill_infer_error(ctx, "output %s needs input %s", s->outputs[o].name, s->inputs[o].name);
  for (size_t o = 0; o < nout; o++) rill_grad_infer_like(ctx, o, o);
  return NULL;
}

/* Input `slot` (H0, C0), when present and known, must be [N, d] of dtype `dt`. */
static inline rill_status *rill_seq_rnn_check_state(rill_infer_ctx *ctx, size_t slot,
                                                    rill_dtype dt, int64_t d) {
  const rill_tensor_meta *m = rill_infer_in(ctx, slot, 0);
  if (!m || !m->known) return NULL;
  char a[RILL_DIMS_STR_MAX];
  if (m->dtype != dt)
    return rill_infer_error(ctx, "input %s (%s) is %s, expected %s like Input",
                            ctx->schema->inputs[slot].name, rill_infer_in_name(ctx, slot, 0),
                            rill_dtype_name(m->dtype), rill_dtype_name(dt));
  if (m->dims.n != 2 || (d >= 0 && m->dims.d[1] >= 0 && m->dims.d[1] != d))
    return rill_infer_error(ctx, "input %s (%s) has shape %s, expected [sequences, %lld]",
                            ctx->schema->inputs[slot].name, rill_infer_in_name(ctx, slot, 0),
                            rill_dims_str(&m->dims, a, sizeof a), (long long)d);
  return NULL;
}

#endif
