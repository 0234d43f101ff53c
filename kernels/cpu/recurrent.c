/* recurrent CPU kernels (StaticRNN). The forward runs the sub-block once per row of its
 * inputs, each step in a child scope of the op's scope kept in step_scopes: before the
 * step it puts row t of each input and the previous step's states in the step scope,
 * after it copies the step's outputs into row t. recurrent_grad runs the gradient block
 * in the same scopes in reverse order, handing each step row t of the outputs'
 * gradients and the states' gradients of the step after it. rnn_memory_helper links a
 * step's value to an output or a state. */
#include <stdio.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/step_grad.h"

_Static_assert((int)RILL_RECURRENT_ATTR_SUB_BLOCK == (int)RILL_RECURRENT_GRAD_ATTR_SUB_BLOCK &&
                   (int)RILL_RECURRENT_ATTR_EX_STATES == (int)RILL_RECURRENT_GRAD_ATTR_EX_STATES &&
                   (int)RILL_RECURRENT_ATTR_STATES == (int)RILL_RECURRENT_GRAD_ATTR_STATES &&
                   (int)RILL_RECURRENT_ATTR_REVERSE == (int)RILL_RECURRENT_GRAD_ATTR_REVERSE &&
                   (int)RILL_RECURRENT_ATTR_HAS_STATES == (int)RILL_RECURRENT_GRAD_ATTR_HAS_STATES &&
                   (int)RILL_RECURRENT_IN_INPUTS == (int)RILL_RECURRENT_GRAD_IN_INPUTS,
               "recurrent and its gradient share attributes and the inputs slot");

/* `dst` := row `row` of `src` ([T, ...] -> [...]), sharing src's buffer. */
static rill_status *row_view(rill_tensor *dst, const rill_tensor *src, int64_t row) {
  RILL_TRY(rill_tensor_share(dst, src));
  rill_lod_clear(&dst->lod);
  rill_dims d = {.n = src->dims.n - 1};
  for (int i = 1; i < src->dims.n; i++) d.d[i - 1] = src->dims.d[i];
  dst->dims = d;
  dst->offset += (size_t)row * rill_tensor_nbytes(dst);
  return NULL;
}

/* A dense tensor of `v`, set; NULL otherwise. */
static const rill_tensor *set_tensor(const rill_variable *v) {
  return v && v->kind == RILL_VARKIND_TENSOR && rill_tensor_is_set(&v->u.tensor) ? &v->u.tensor
                                                                                  : NULL;
}

/* T: the rows of inputs[0]; every input must have as many. */
static rill_status *seq_len(rill_kernel_ctx *ctx, int64_t *out) {
  size_t slot = RILL_RECURRENT_IN_INPUTS;
  if (!ctx->nin[slot]) return rill_kernel_error(ctx, "needs at least one of inputs");
  for (size_t k = 0; k < ctx->nin[slot]; k++) {
    const rill_tensor *x = set_tensor(ctx->in[slot][k]);
    if (!x || x->dims.n < 1)
      return rill_kernel_error(ctx, "input '%s' holds no tensor of rank 1 or more",
                               rill_kin_name(ctx, slot, k));
    if (k == 0) *out = x->dims.d[0];
    else if (x->dims.d[0] != *out)
      return rill_kernel_error(ctx, "input '%s' has %lld steps, input '%s' %lld",
                               rill_kin_name(ctx, slot, k), (long long)x->dims.d[0],
                               rill_kin_name(ctx, slot, 0), (long long)*out);
  }
  return NULL;
}

/* The state attribute lists, checked against each other and initial_states. */
static rill_status *state_names(rill_kernel_ctx *ctx, const rill_attr_value **ex,
                                const rill_attr_value **cur, size_t ninit) {
  *ex = &ctx->attrs[RILL_RECURRENT_ATTR_EX_STATES];
  *cur = &ctx->attrs[RILL_RECURRENT_ATTR_STATES];
  if (!ctx->attrs[RILL_RECURRENT_ATTR_HAS_STATES].v.b) return NULL;
  if ((*ex)->n != (*cur)->n || (*ex)->n != ninit)
    return rill_kernel_error(ctx, "has %zu ex_states, %zu states and %zu initial_states; they "
                             "pair up one to one", (*ex)->n, (*cur)->n, ninit);
  return NULL;
}

/* Variable `name` of step scope `s` (created there) as a dense tensor. */
static rill_status *local_tensor(rill_kernel_ctx *ctx, rill_scope *s, const char *name,
                                 rill_tensor **out) {
  rill_variable *v;
  RILL_TRY(rill_scope_var(s, name, &v));
  if (v->kind != RILL_VARKIND_TENSOR) rill_variable_clear(v);
  *out = rill_variable_tensor(v);
  if (!*out) return rill_kernel_error(ctx, "step variable '%s' cannot hold a tensor", name);
  return NULL;
}

/* Links the inputs (row `row`) and the ex_states of step `i` into scope `s`. */
static rill_status *link_step(rill_kernel_ctx *ctx, rill_scope *s, rill_scope *prev, int64_t row,
                              const rill_attr_value *ex, const rill_attr_value *cur) {
  size_t xs = RILL_RECURRENT_IN_INPUTS;
  for (size_t k = 0; k < ctx->nin[xs]; k++) {
    rill_tensor *t;
    RILL_TRY(local_tensor(ctx, s, rill_kin_name(ctx, xs, k), &t));
    RILL_TRY(row_view(t, set_tensor(ctx->in[xs][k]), row));
  }
  if (!ctx->attrs[RILL_RECURRENT_ATTR_HAS_STATES].v.b) return NULL;
  for (size_t k = 0; k < ex->n; k++) {
    const rill_tensor *from;
    if (!prev) {
      from = set_tensor(ctx->in[RILL_RECURRENT_IN_INITIAL_STATES][k]);
      if (!from)
        return rill_kernel_error(ctx, "initial state '%s' holds no tensor",
                                 rill_kin_name(ctx, RILL_RECURRENT_IN_INITIAL_STATES, k));
    } else {
      from = set_tensor(rill_scope_find_local(prev, cur->list.strings[k]));
      if (!from)
        return rill_kernel_error(ctx, "state '%s' holds no tensor after the step (the "
                                 "sub-block must write it)", cur->list.strings[k]);
    }
    rill_tensor *t;
    RILL_TRY(local_tensor(ctx, s, ex->list.strings[k], &t));
    RILL_TRY(rill_tensor_share(t, from));
  }
  return NULL;
}

/* Row `row` of `dst` ([T, ...]) := `src` ([...]); the first step allocates dst on src's
 * place (zeroed with `zero`), the step's ops having left src where they ran. */
static rill_status *store_row(rill_kernel_ctx *ctx, rill_tensor *dst, const rill_tensor *src,
                              int64_t rows, int64_t row, bool first, bool zero,
                              const char *what, const char *name) {
  if (first) {
    rill_dims d = {.n = src->dims.n + 1};
    if (d.n > RILL_MAX_DIMS)
      return rill_kernel_error(ctx, "%s '%s' has rank %d; one more is too many", what, name,
                               (int)src->dims.n);
    d.d[0] = rows;
    for (int i = 0; i < src->dims.n; i++) d.d[i + 1] = src->dims.d[i];
    rill_place at = rill_tensor_place(src);
    RILL_TRY(zero ? rill_tensor_zeros_at(dst, src->dtype, &d, at) : rill_tensor_alloc_at(dst, src->dtype, &d, at));
    rill_lod_clear(&dst->lod);
  }
  size_t nb = rill_tensor_nbytes(src);
  if (dst->dtype != src->dtype || dst->dims.n != src->dims.n + 1 ||
      (rill_tensor_numel(src) * rows != rill_tensor_numel(dst)))
    return rill_kernel_error(ctx, "%s '%s' changes shape or dtype from one step to the next",
                             what, name);
  for (int i = 0; i < src->dims.n; i++)
    if (dst->dims.d[i + 1] != src->dims.d[i])
      return rill_kernel_error(ctx, "%s '%s' changes shape from one step to the next", what,
                               name);
  return rill_status_wrap(rill_tensor_copy_bytes(dst, (size_t)row * nb, src, 0, nb), "%s '%s'", what, name);
}

static rill_status *store_outputs(rill_kernel_ctx *ctx, rill_scope *s, int64_t rows, int64_t row,
                                  bool first) {
  size_t os = RILL_RECURRENT_OUT_OUTPUTS;
  for (size_t k = 0; k < ctx->nout[os]; k++) {
    const char *name = rill_kout_name(ctx, os, k);
    const rill_tensor *src = set_tensor(rill_scope_find_local(s, name));
    if (!src)
      return rill_kernel_error(ctx, "output '%s' holds no tensor after the step (the sub-block "
                               "must write it)", name);
    rill_tensor *dst = rill_kout(ctx, os, k);
    if (!dst)
      return rill_kernel_error(ctx, "output '%s' cannot hold a dense tensor", name);
    RILL_TRY(store_row(ctx, dst, src, rows, row, first, false, "output", name));
  }
  return NULL;
}

rill_status *rill_cpu_recurrent(rill_kernel_ctx *ctx) {
  int64_t T = 0;
  RILL_TRY(seq_len(ctx, &T));
  const rill_attr_value *ex, *cur;
  RILL_TRY(state_names(ctx, &ex, &cur, ctx->nin[RILL_RECURRENT_IN_INITIAL_STATES]));
  bool train = ctx->attrs[RILL_RECURRENT_ATTR_IS_TRAIN].v.b;
  bool reverse = ctx->attrs[RILL_RECURRENT_ATTR_REVERSE].v.b;
  int32_t block = ctx->attrs[RILL_RECURRENT_ATTR_SUB_BLOCK].v.block;
  rill_variable *sv = ctx->out[RILL_RECURRENT_OUT_STEP_SCOPES][0];
  if (sv && sv->kind == RILL_VARKIND_STEP_SCOPES) rill_variable_clear(sv); /* an earlier run's */
  rill_step_scopes *kept = sv ? rill_variable_step_scopes(sv) : NULL;
  if (sv && !kept)
    return rill_kernel_error(ctx, "step_scopes '%s' holds a %s, not step scopes",
                             rill_kout_name(ctx, RILL_RECURRENT_OUT_STEP_SCOPES, 0),
                             rill_var_kind_name(sv->kind));
  if (!train) kept = NULL;
  if (T == 0)
    return rill_kernel_error(ctx, "input '%s' has no steps", rill_kin_name(ctx, 0, 0));
  rill_scope *prev = NULL; /* without is_train, the one earlier scope still needed */
  rill_status *st = NULL;
  for (int64_t i = 0; i < T && !st; i++) {
    int64_t row = reverse ? T - 1 - i : i;
    rill_scope *s = NULL;
    RILL_TRY(rill_scope_create(ctx->scope, &s));
    rill_scope *before = kept ? (i ? kept->items[i - 1] : NULL) : prev;
    st = link_step(ctx, s, before, row, ex, cur);
    if (!st) st = rill_dev_run_block(ctx->dev, block, s);
    if (!st) st = store_outputs(ctx, s, T, row, i == 0);
    if (!st && kept) st = rill_step_scopes_push(kept, s);
    if (st || !kept) {
      if (prev) rill_scope_destroy(prev);
      prev = NULL;
    }
    if (st) {
      rill_scope_destroy(s);
      st = rill_status_wrap(st, "recurrent: sub_block %d, step %lld", (int)block, (long long)i);
    } else if (!kept) {
      prev = s;
    }
  }
  if (prev) rill_scope_destroy(prev);
  return st;
}

/* --------------------------------------------------------------- recurrent_grad --- */

static rill_status *grad_name(rill_kernel_ctx *ctx, char *buf, size_t size, const char *var) {
  if ((size_t)snprintf(buf, size, "%s" RILL_GRAD_SUFFIX, var) >= size)
    return rill_kernel_error(ctx, "variable name '%s' is too long", var);
  return NULL;
}

/* Before the gradient block of one step runs in `s`: row `row` of every outputs@GRAD
 * under its name, and each `<state>@GRAD` := the `<ex_state>@GRAD` that the step run
 * before (`later`, the forward's next step) computed, or zeros at the first. */
static rill_status *link_grad_step(rill_kernel_ctx *ctx, rill_scope *s, rill_scope *later,
                                   int64_t row) {
  size_t gs = RILL_RECURRENT_GRAD_IN_OUTPUTS_GRAD;
  for (size_t k = 0; k < ctx->nin[gs]; k++) {
    const rill_tensor *g = set_tensor(ctx->in[gs][k]);
    if (!g) continue; /* Paddle skips an output gradient that does not exist */
    rill_tensor *t;
    RILL_TRY(local_tensor(ctx, s, rill_kin_name(ctx, gs, k), &t));
    if (g->dims.n < 1 || g->dims.d[0] <= row)
      return rill_kernel_error(ctx, "output gradient '%s' has no row %lld",
                               rill_kin_name(ctx, gs, k), (long long)row);
    RILL_TRY(row_view(t, g, row));
  }
  if (!ctx->attrs[RILL_RECURRENT_GRAD_ATTR_HAS_STATES].v.b) return NULL;
  const rill_attr_value *ex = &ctx->attrs[RILL_RECURRENT_GRAD_ATTR_EX_STATES];
  const rill_attr_value *cur = &ctx->attrs[RILL_RECURRENT_GRAD_ATTR_STATES];
  char gname[1024], exname[1024];
  for (size_t k = 0; k < cur->n; k++) {
    RILL_TRY(grad_name(ctx, gname, sizeof gname, cur->list.strings[k]));
    rill_tensor *t;
    RILL_TRY(local_tensor(ctx, s, gname, &t));
    const rill_tensor *from = NULL;
    if (later) {
      RILL_TRY(grad_name(ctx, exname, sizeof exname, ex->list.strings[k]));
      from = set_tensor(rill_scope_find_local(later, exname));
    }
    if (from) {
      RILL_TRY(rill_tensor_copy_at(t, from, rill_tensor_place(from)));
      continue;
    }
    const rill_tensor *state = set_tensor(rill_scope_find_local(s, cur->list.strings[k]));
    if (!state)
      return rill_kernel_error(ctx, "state '%s' holds no tensor in the forward's step scope",
                               cur->list.strings[k]);
    RILL_TRY(rill_tensor_zeros_at(t, state->dtype, &state->dims, rill_tensor_place(state)));
  }
  return NULL;
}

/* After a step: parameters@GRAD[k] += the step's `<parameter>@GRAD` (the first to give
 * one copies it). */
static rill_status *sum_params(rill_kernel_ctx *ctx, rill_scope *s, bool *started) {
  size_t ps = RILL_RECURRENT_GRAD_IN_PARAMETERS, gs = RILL_RECURRENT_GRAD_OUT_PARAMETERS_GRAD;
  char gname[1024];
  for (size_t k = 0; k < ctx->nout[gs]; k++) {
    if (!ctx->out[gs][k] || k >= ctx->nin[ps]) continue;
    RILL_TRY(grad_name(ctx, gname, sizeof gname, rill_kin_name(ctx, ps, k)));
    const rill_tensor *g = set_tensor(rill_scope_find_local(s, gname));
    if (!g) continue;
    rill_tensor *dst = rill_kout(ctx, gs, k);
    if (!dst)
      return rill_kernel_error(ctx, "parameter gradient '%s' cannot hold a dense tensor",
                               rill_kout_name(ctx, gs, k));
    if (!started[k]) {
      started[k] = true;
      RILL_TRY(rill_status_wrap(rill_cpu_step_grad_start(dst, g, gname), "recurrent_grad"));
    } else {
      RILL_TRY(rill_cpu_step_grad_add(ctx, dst, g, gname));
    }
  }
  return NULL;
}

/* After a step: row `row` of inputs@GRAD[k] := the step's `<input>@GRAD`. */
static rill_status *store_input_grads(rill_kernel_ctx *ctx, rill_scope *s, int64_t T, int64_t row,
                                      bool *started) {
  size_t xs = RILL_RECURRENT_GRAD_IN_INPUTS, gs = RILL_RECURRENT_GRAD_OUT_INPUTS_GRAD;
  char gname[1024];
  for (size_t k = 0; k < ctx->nout[gs]; k++) {
    if (!ctx->out[gs][k] || k >= ctx->nin[xs]) continue;
    RILL_TRY(grad_name(ctx, gname, sizeof gname, rill_kin_name(ctx, xs, k)));
    const rill_tensor *g = set_tensor(rill_scope_find_local(s, gname));
    if (!g) continue;
    rill_tensor *dst = rill_kout(ctx, gs, k);
    if (!dst)
      return rill_kernel_error(ctx, "input gradient '%s' cannot hold a dense tensor",
                               rill_kout_name(ctx, gs, k));
    RILL_TRY(store_row(ctx, dst, g, T, row, !started[k], true, "input gradient", gname));
    started[k] = true;
  }
  return NULL;
}

/* After the forward's first step (the last run): initial_states@GRAD[k] := its
 * `<ex_state>@GRAD`, zeros where it has none. */
static rill_status *store_init_grads(rill_kernel_ctx *ctx, rill_scope *s) {
  size_t is = RILL_RECURRENT_GRAD_IN_INITIAL_STATES, gs = RILL_RECURRENT_GRAD_OUT_INITIAL_STATES_GRAD;
  const rill_attr_value *ex = &ctx->attrs[RILL_RECURRENT_GRAD_ATTR_EX_STATES];
  bool has = ctx->attrs[RILL_RECURRENT_GRAD_ATTR_HAS_STATES].v.b;
  char gname[1024];
  for (size_t k = 0; k < ctx->nout[gs]; k++) {
    if (!ctx->out[gs][k]) continue;
    rill_tensor *dst = rill_kout(ctx, gs, k);
    if (!dst)
      return rill_kernel_error(ctx, "initial state gradient '%s' cannot hold a dense tensor",
                               rill_kout_name(ctx, gs, k));
    const rill_tensor *g = NULL;
    if (has && s && k < ex->n) {
      RILL_TRY(grad_name(ctx, gname, sizeof gname, ex->list.strings[k]));
      g = set_tensor(rill_scope_find_local(s, gname));
    }
    if (g) {
      RILL_TRY(rill_tensor_copy_at(dst, g, rill_tensor_place(g)));
      rill_lod_clear(&dst->lod);
      continue;
    }
    const rill_tensor *x = k < ctx->nin[is] ? set_tensor(ctx->in[is][k]) : NULL;
    if (!x)
      return rill_kernel_error(ctx, "initial state '%s' holds no tensor to shape its zero "
                               "gradient", k < ctx->nin[is] ? rill_kin_name(ctx, is, k) : "?");
    RILL_TRY(rill_cpu_zeros_like(dst, x));
  }
  return NULL;
}

/* Gradients no step gave: zeros shaped like the forward variable. */
static rill_status *zero_unstarted(rill_kernel_ctx *ctx, size_t in_slot, size_t out_slot,
                                   const bool *started) {
  for (size_t k = 0; k < ctx->nout[out_slot]; k++) {
    if (!ctx->out[out_slot][k] || started[k]) continue;
    const rill_tensor *x = k < ctx->nin[in_slot] ? set_tensor(ctx->in[in_slot][k]) : NULL;
    rill_tensor *dst = rill_kout(ctx, out_slot, k);
    if (!x || !dst)
      return rill_kernel_error(ctx, "no tensor to shape the zero gradient '%s'",
                               rill_kout_name(ctx, out_slot, k));
    RILL_TRY(rill_cpu_zeros_like(dst, x));
  }
  return NULL;
}

rill_status *rill_cpu_recurrent_grad(rill_kernel_ctx *ctx) {
  int64_t T = 0;
  RILL_TRY(seq_len(ctx, &T));
  const rill_attr_value *ex, *cur;
  RILL_TRY(state_names(ctx, &ex, &cur, ctx->nin[RILL_RECURRENT_GRAD_IN_INITIAL_STATES]));
  size_t si = RILL_RECURRENT_GRAD_IN_STEP_SCOPES;
  rill_variable *sv = ctx->nin[si] ? ctx->in[si][0] : NULL;
  if (!sv || sv->kind != RILL_VARKIND_STEP_SCOPES || sv->u.scopes.n != (size_t)T)
    return rill_kernel_error(ctx, "step_scopes '%s' holds %s%s, not the %lld step scopes of "
                             "the forward recurrent (is_train must be true)",
                             ctx->nin[si] ? rill_kin_name(ctx, si, 0) : "(none)",
                             sv ? rill_var_kind_name(sv->kind) : "nothing",
                             sv && sv->kind == RILL_VARKIND_STEP_SCOPES ? " of another length" : "",
                             (long long)T);
  bool reverse = ctx->attrs[RILL_RECURRENT_GRAD_ATTR_REVERSE].v.b;
  int32_t block = ctx->attrs[RILL_RECURRENT_GRAD_ATTR_SUB_BLOCK].v.block;
  size_t np = ctx->nout[RILL_RECURRENT_GRAD_OUT_PARAMETERS_GRAD];
  size_t nx = ctx->nout[RILL_RECURRENT_GRAD_OUT_INPUTS_GRAD];
  bool *started = rill_calloc(np + nx + 1, sizeof *started);
  if (!started) return rill_oom();
  bool *pstart = started, *xstart = started + np;
  rill_status *st = NULL;
  rill_scope *later = NULL;
  for (int64_t j = T; j-- > 0 && !st;) { /* forward step j, last first */
    int64_t row = reverse ? T - 1 - j : j;
    rill_scope *s = sv->u.scopes.items[j];
    st = link_grad_step(ctx, s, later, row);
    if (!st) st = rill_dev_run_block(ctx->dev, block, s);
    if (!st) st = sum_params(ctx, s, pstart);
    if (!st) st = store_input_grads(ctx, s, T, row, xstart);
    if (st) st = rill_status_wrap(st, "recurrent_grad: sub_block %d, step %lld", (int)block,
                                  (long long)j);
    later = s;
  }
  if (!st) st = store_init_grads(ctx, later);
  if (!st)
    st = zero_unstarted(ctx, RILL_RECURRENT_GRAD_IN_PARAMETERS,
                        RILL_RECURRENT_GRAD_OUT_PARAMETERS_GRAD, pstart);
  if (!st)
    st = zero_unstarted(ctx, RILL_RECURRENT_GRAD_IN_INPUTS, RILL_RECURRENT_GRAD_OUT_INPUTS_GRAD,
                        xstart);
  rill_free(started);
  return st;
}

/* ------------------------------------------------------------ rnn_memory_helper --- */

rill_status *rill_cpu_rnn_memory_helper(rill_kernel_ctx *ctx) {
  const rill_tensor *x = set_tensor(ctx->in[0][0]);
  rill_tensor *out = rill_kout(ctx, 0, 0);
  if (!x) return rill_kernel_error(ctx, "input X '%s' holds no tensor", rill_kin_name(ctx, 0, 0));
  if (!out)
    return rill_kernel_error(ctx, "output Out '%s' cannot hold a dense tensor",
                             rill_kout_name(ctx, 0, 0));
  if (out == x) return NULL;
  return rill_tensor_share(out, x);
}

rill_status *rill_cpu_rnn_memory_helper_grad(rill_kernel_ctx *ctx) {
  size_t gs = RILL_RNN_MEMORY_HELPER_GRAD_IN_OUT_GRAD;
  const rill_tensor *g = ctx->nin[gs] ? set_tensor(ctx->in[gs][0]) : NULL;
  rill_tensor *dst = rill_kout(ctx, 0, 0);
  if (!dst)
    return rill_kernel_error(ctx, "output X@GRAD '%s' cannot hold a dense tensor",
                             rill_kout_name(ctx, 0, 0));
  if (g) {
    if (g == dst) return NULL;
    return rill_tensor_copy_at(dst, g, rill_tensor_place(g));
  }
  size_t xs = RILL_RNN_MEMORY_HELPER_GRAD_IN_X;
  const rill_tensor *x = ctx->nin[xs] ? set_tensor(ctx->in[xs][0]) : NULL;
  if (!x)
    return rill_kernel_error(ctx, "input X '%s' holds no tensor to shape the zero gradient",
                             ctx->nin[xs] ? rill_kin_name(ctx, xs, 0) : "(none)");
  return rill_tensor_zeros_at(dst, x->dtype, &x->dims, rill_tensor_place(x));
}
