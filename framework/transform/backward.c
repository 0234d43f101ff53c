/* The backward pass (Paddle's append_backward), on block 0.
 *
 * 1. Analysis over the ops up to the one writing the loss:
 *    - N, the no-grad set: stop_gradient variables and the caller's names;
 *    - G, variables that depend on something needing a gradient: leaves (read before
 *      any op writes them) that are float tensors outside N, and the float outputs
 *      outside N of ops reading a G variable in a slot not flagged NO_GRAD;
 *    - R, variables whose gradient is wanted: the loss, then, last op first, the G
 *      inputs (in gradient slots) of every op with an output in R. Those ops are the
 *      path; each must have a gradient maker.
 * 2. The makers of the path ops run last op first (wants_grad = membership in R).
 * 3. Repeated writes of a gradient are renamed x@GRAD@RENAME@block0@k and added by a
 *    `sum` op before the first reader (Paddle's _addup_repetitive_outputs_); gradient
 *    ops that write nothing are dropped; gradients read but never written are zeroed
 *    by fill_zeros_like (_remove_no_grad_branch_).
 * 4. The ops are appended after a fill_constant seeding loss@GRAD with 1; every new
 *    gradient variable is declared like its forward variable.
 * 5. An op on the path that runs a sub-block (schema flag SUBBLOCK) gets a gradient
 *    block, built from its forward block by the same steps (Paddle's
 *    _append_backward_ops_ with sub-blocks): its seeds are the op's outputs whose
 *    gradients are wanted, which the gradient block reads from the enclosing block; the
 *    gradients it writes are its own variables, handed out by the gradient op.
 * Everything is done on a clone that replaces the program only on success. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "framework/program/program_impl.h"
#include "framework/registry/registry.h"
#include "framework/transform/backward.h"
#include "framework/transform/opedit.h"

/* --------------------------------------------------------------- results ------ */

rill_status *rill_param_grads_add(rill_param_grads *pg, const char *param, const char *grad) {
  char **p = rill_realloc(pg->param, (pg->n + 1) * sizeof *p);
  if (!p) return rill_oom();
  pg->param = p;
  char **g = rill_realloc(pg->grad, (pg->n + 1) * sizeof *g);
  if (!g) return rill_oom();
  pg->grad = g;
  char *ps = rill_strdup(param), *gs = rill_strdup(grad);
  if (!ps || !gs) {
    rill_free(ps);
    rill_free(gs);
    return rill_oom();
  }
  pg->param[pg->n] = ps;
  pg->grad[pg->n] = gs;
  pg->n++;
  return NULL;
}

rill_status *rill_param_grads_create(const char *const *params, const char *const *grads, size_t n,
                                    rill_param_grads **out) {
  if (!out) return rill_error(RILL_INVALID_ARGUMENT, "rill_param_grads_create: out is NULL");
  *out = NULL;
  if (n && (!params || !grads)) return rill_error(RILL_INVALID_ARGUMENT, "rill_param_grads_create: %zu pairs without names", n);
  rill_param_grads *pg = rill_calloc(1, sizeof *pg);
  if (!pg) return rill_oom();
  for (size_t i = 0; i < n; i++) {
    rill_status *st = !params[i] || !grads[i]
                          ? rill_error(RILL_INVALID_ARGUMENT, "rill_param_grads_create: pair %zu has no name", i)
                          : rill_param_grads_add(pg, params[i], grads[i]);
    if (st) {
      rill_param_grads_destroy(pg);
      return st;
    }
  }
  *out = pg;
  return NULL;
}

size_t rill_param_grads_count(const rill_param_grads *pairs) { return pairs ? pairs->n : 0; }

const char *rill_param_grads_param(const rill_param_grads *pairs, size_t i) {
  return pairs && i < pairs->n ? pairs->param[i] : NULL;
}

const char *rill_param_grads_grad(const rill_param_grads *pairs, size_t i) {
  return pairs && i < pairs->n ? pairs->grad[i] : NULL;
}

void rill_param_grads_destroy(rill_param_grads *pairs) {
  if (!pairs) return;
  for (size_t i = 0; i < pairs->n; i++) {
    rill_free(pairs->param[i]);
    rill_free(pairs->grad[i]);
  }
  rill_free(pairs->param);
  rill_free(pairs->grad);
  rill_free(pairs);
}

/* -------------------------------------------------------------- analysis ------ */

typedef struct bw {
  rill_program *p;
  rill_block_desc *b; /* the forward block (refreshed after blocks are added) */
  int32_t bidx;       /* its index */
  int32_t gidx;       /* the block that receives the gradient ops */
  const struct bw *outer; /* the enclosing pass, for a sub-block */
  const char *loss;   /* block 0 only */
  size_t loss_op;
  rill_strmap nograd; /* N */
  rill_strmap dep;    /* G */
  rill_strmap want;   /* R */
  rill_strmap written;
  rill_strmap outer_grads; /* gradients a loop's gradient block reads and writes in the
                              enclosing block: not declared in the gradient block */
  bool *on_path;
  /* block 0 only: which backward pass of the program this is (1 for the first), the
   * gradients it renamed to grad/.../x@GRAD because they existed, and the name of the
   * loss's seed (NULL: loss@GRAD) */
  int32_t order;
  rill_strmap renamed;
  const char *seed;
} bw;

static bool has(const rill_strmap *m, const char *k) { return rill_strmap_get(m, k) != NULL; }

static rill_status *copy_keys(rill_strmap *dst, const rill_strmap *src) {
  for (size_t i = 0; i < src->cap; i++)
    if (src->slots[i].key) RILL_TRY(rill_strmap_put(dst, src->slots[i].key, 1));
  return NULL;
}

static bool is_float(rill_dtype t) {
  return t == RILL_DTYPE_FP32 || t == RILL_DTYPE_FP64 || t == RILL_DTYPE_FP16 ||
         t == RILL_DTYPE_BF16;
}

/* A float dense or sparse tensor, or an array of float tensors: something a gradient can
 * flow through. */
static bool differentiable(const bw *w, const char *name) {
  const rill_var_desc *d = rill_program_find_var(w->p, w->bidx, name);
  return d && d->has_tensor &&
         (d->type == RILL_VAR_LOD_TENSOR || d->type == RILL_VAR_SELECTED_ROWS ||
          d->type == RILL_VAR_LOD_TENSOR_ARRAY) &&
         is_float(d->dtype);
}

/* In a sub-block: an op off the gradient path that steps a variable of an enclosing
 * block in place (a loop counter: increment(i) -> i) and has a gradient maker. Paddle
 * puts it on the path, and its maker undoes the step, so that the gradient block, run
 * in the step scopes last step first, sees the values each step saw. */
static bool restores(const bw *w, const rill_op_desc *op, const rill_op_schema *s) {
  if (!w->outer || !s || !s->grad) return false;
  for (size_t k = 0; k < op->noutputs; k++)
    for (size_t j = 0; j < op->outputs[k].nargs; j++) {
      const char *a = op->outputs[k].args[j];
      if (rill_opd_reads(op, a) && !rill_block_find_var(w->p, w->bidx, a) &&
          rill_program_find_var(w->p, w->bidx, a))
        return true;
    }
  return false;
}

/* Flags of the input slot `param` of op (NO_GRAD for slots the schema lacks). */
static unsigned in_flags(const rill_op_schema *s, const char *param) {
  if (!s) return 0;
  if (s->flags & RILL_OP_NO_GRADIENT) return RILL_SLOT_NO_GRAD; /* every input, as Fluid */
  int k = rill_schema_input_index(s, param);
  return k < 0 ? RILL_SLOT_NO_GRAD : s->inputs[k].flags;
}

static bool want_grad(void *impl, const char *var) { return has(&((bw *)impl)->want, var); }

static rill_status *analyse(bw *w) {
  for (size_t i = 0; i <= w->loss_op; i++) {
    const rill_op_desc *op = &w->b->ops[i];
    const rill_op_schema *s = rill_schema_find(op->type);
    bool any = false;
    for (size_t k = 0; k < op->ninputs; k++) {
      if (in_flags(s, op->inputs[k].param) & RILL_SLOT_NO_GRAD) continue;
      for (size_t j = 0; j < op->inputs[k].nargs; j++) {
        const char *a = op->inputs[k].args[j];
        if (has(&w->dep, a)) {
          any = true;
        } else if (!has(&w->written, a) && !has(&w->nograd, a) && differentiable(w, a) &&
                   (!w->outer || rill_block_find_var(w->p, w->bidx, a))) {
          RILL_TRY(rill_strmap_put(&w->dep, a, 1)); /* a leaf: parameter or input */
          any = true;
        }
      }
    }
    for (size_t k = 0; k < op->noutputs; k++)
      for (size_t j = 0; j < op->outputs[k].nargs; j++) {
        const char *a = op->outputs[k].args[j];
        RILL_TRY(rill_strmap_put(&w->written, a, 1));
        if (any && !has(&w->nograd, a) && differentiable(w, a))
          RILL_TRY(rill_strmap_put(&w->dep, a, 1));
      }
  }
  if (w->loss) RILL_TRY(rill_strmap_put(&w->want, w->loss, 1));
  for (size_t i = w->loss_op + 1; i-- > 0;) {
    const rill_op_desc *op = &w->b->ops[i];
    bool reaches = false;
    for (size_t k = 0; k < op->noutputs && !reaches; k++)
      for (size_t j = 0; j < op->outputs[k].nargs && !reaches; j++)
        reaches = has(&w->want, op->outputs[k].args[j]);
    const rill_op_schema *s = rill_schema_find(op->type);
    if (!reaches) {
      w->on_path[i] = restores(w, op, s);
      continue;
    }
    const char *from = NULL;
    for (size_t k = 0; k < op->ninputs; k++) {
      if (in_flags(s, op->inputs[k].param) & RILL_SLOT_NO_GRAD) continue;
      for (size_t j = 0; j < op->inputs[k].nargs; j++)
        if (has(&w->dep, op->inputs[k].args[j])) from = op->inputs[k].args[j];
    }
    if (!from) continue;
    if (!s)
      return rill_error(RILL_UNIMPLEMENTED,
                        "backward: op #%zu '%s' lies on the path to loss '%s' but rill has no "
                        "such op", i, op->type, w->loss ? w->loss : "(the enclosing block's)");
    if (!s->grad)
      return rill_error(RILL_UNIMPLEMENTED,
                        "backward: op #%zu '%s' lies on the path to loss '%s' (it reads '%s') "
                        "but has no gradient", i, op->type,
                        w->loss ? w->loss : "(the enclosing block's)", from);
    w->on_path[i] = true;
    for (size_t k = 0; k < op->ninputs; k++) {
      if (in_flags(s, op->inputs[k].param) & RILL_SLOT_NO_GRAD) continue;
      for (size_t j = 0; j < op->inputs[k].nargs; j++)
        if (has(&w->dep, op->inputs[k].args[j]))
          RILL_TRY(rill_strmap_put(&w->want, op->inputs[k].args[j], 1));
    }
  }
  return NULL;
}

/* ------------------------------------------------------- gradient ops --------- */

static bool is_grad_name(const char *s) { return strstr(s, RILL_GRAD_SUFFIX) != NULL; }

static rill_status *grad_block(bw *w, const rill_op_desc *fop, int32_t fwd, int32_t *out);

/* A growing list of distinct names (borrowed). */
typedef struct name_list {
  const char **v;
  size_t n;
  rill_strmap seen;
} name_list;

static rill_status *names_add(name_list *l, const char *name) {
  if (has(&l->seen, name)) return NULL;
  const char **v = rill_realloc(l->v, (l->n + 1) * sizeof *v);
  if (!v) return rill_oom();
  l->v = v;
  v[l->n++] = name;
  return rill_strmap_put(&l->seen, name, 1);
}

static void names_clear(name_list *l) {
  rill_free(l->v);
  rill_strmap_clear(&l->seen);
}

/* The gradient op of a loop (schema flag LOOP; Paddle's WhileGradOpMaker) once its
 * gradient block gidx exists: Out@GRAD and original_output_grad := the gradients the
 * block's ops read before any of them writes them and that the block does not declare
 * (those come from the enclosing block); X@GRAD not written by the block := @EMPTY@. */
static rill_status *complete_loop_grad(bw *w, rill_op_desc *op, int32_t gidx) {
  const rill_block_desc *gb = rill_program_block(w->p, gidx);
  name_list og = {0};
  rill_strmap wrote = {0};
  rill_status *st = NULL;
  for (size_t i = 0; i < gb->nops && !st; i++) {
    const rill_op_desc *g = &gb->ops[i];
    for (size_t k = 0; k < g->ninputs && !st; k++)
      for (size_t j = 0; j < g->inputs[k].nargs && !st; j++) {
        const char *a = g->inputs[k].args[j];
        if (is_grad_name(a) && !has(&wrote, a) && !rill_block_find_var(w->p, gidx, a))
          st = names_add(&og, a);
      }
    for (size_t k = 0; k < g->noutputs && !st; k++)
      for (size_t j = 0; j < g->outputs[k].nargs && !st; j++)
        st = rill_strmap_put(&wrote, g->outputs[k].args[j], 1);
  }
  if (!st) st = rill_opd_input(op, "Out@GRAD", og.v, og.n);
  if (!st) st = rill_opd_attr_strings(op, "original_output_grad", og.v, og.n);
  for (size_t k = 0; k < op->noutputs && !st; k++) {
    if (strcmp(op->outputs[k].param, "X@GRAD") != 0) continue;
    for (size_t j = 0; j < op->outputs[k].nargs && !st; j++) {
      char **a = &op->outputs[k].args[j];
      if (strcmp(*a, RILL_EMPTY_VAR) == 0 || has(&wrote, *a)) continue;
      char *e = rill_strdup(RILL_EMPTY_VAR);
      if (!e) st = rill_oom();
      else {
        rill_free(*a);
        *a = e;
      }
    }
  }
  names_clear(&og);
  rill_strmap_clear(&wrote);
  return st;
}

/* Points the `sub_block` of the gradient ops of a sub-block op at a gradient block built
 * from the forward op's block (built once, when some gradient op has the attribute). */
static rill_status *link_grad_block(bw *w, const rill_op_desc *fop, rill_grad_ctx *ctx) {
  const rill_attr *fa = rill_op_attr(fop, "sub_block");
  if (!fa || fa->value.type != RILL_ATTR_BLOCK) return NULL;
  int32_t gidx = -1;
  for (size_t k = 0; k < ctx->nops; k++) {
    const rill_attr *a = rill_op_attr(&ctx->ops[k], "sub_block");
    if (!a || a->value.type != RILL_ATTR_BLOCK) continue;
    if (gidx < 0) {
      RILL_TRY(grad_block(w, fop, fa->value.v.block, &gidx));
    }
    rill_attr_value v = {.type = RILL_ATTR_BLOCK, .v.block = gidx};
    RILL_TRY(rill_opd_attr(&ctx->ops[k], "sub_block", &v));
    if (ctx->schema->flags & RILL_OP_LOOP) RILL_TRY(complete_loop_grad(w, &ctx->ops[k], gidx));
  }
  return NULL;
}

/* The name a gradient `name` gets in pass `order` when it already exists: order times
 * "grad/" before it (Paddle's _rename_grad_name_). */
static rill_status *pass_name(const bw *w, const char *name, char *buf, size_t size) {
  size_t n = strlen(RILL_GRAD_PASS_PREFIX) * (size_t)w->order + strlen(name);
  if (n >= size) return rill_error(RILL_INVALID_ARGUMENT, "backward: gradient name '%s' is too long", name);
  buf[0] = '\0';
  for (int32_t i = 0; i < w->order; i++) strcat(buf, RILL_GRAD_PASS_PREFIX);
  strcat(buf, name);
  return NULL;
}

/* From the second backward pass of a program on, the gradient ops of one forward op
 * write a gradient that already exists (an earlier pass's x@GRAD) under the name
 * grad/.../x@GRAD instead, and the gradient ops after read it under that name, so that
 * each pass has its own gradients (Paddle's renaming in _append_backward_ops_). The
 * gradient ops of a gradient op (an earlier pass's op on this pass's path) keep their
 * inputs: those name the earlier pass's variables. */
static rill_status *rename_pass(bw *w, const rill_op_desc *fop, rill_grad_ctx *ctx) {
  const rill_attr *role = rill_op_attr(fop, RILL_OP_ROLE_ATTR);
  bool of_grad_op = role && role->value.type == RILL_ATTR_INT &&
                    role->value.v.i == RILL_OP_ROLE_BACKWARD;
  char to[1024];
  for (size_t k = 0; k < ctx->nops; k++) {
    rill_op_desc *op = &ctx->ops[k];
    for (size_t s = 0; s < op->ninputs && !of_grad_op; s++)
      for (size_t j = 0; j < op->inputs[s].nargs; j++) {
        const char *var = op->inputs[s].args[j];
        if (!has(&w->renamed, var)) continue;
        RILL_TRY(pass_name(w, var, to, sizeof to));
        char *from = rill_strdup(var);
        if (!from) return rill_oom();
        rill_status *st = rill_opd_rename(op, from, to, true, false);
        rill_free(from);
        RILL_TRY(st);
      }
    for (size_t s = 0; s < op->noutputs; s++)
      for (size_t j = 0; j < op->outputs[s].nargs; j++) {
        const char *var = op->outputs[s].args[j];
        if (!is_grad_name(var) || !rill_block_find_var(w->p, 0, var)) continue;
        RILL_TRY(pass_name(w, var, to, sizeof to));
        RILL_TRY(rill_strmap_put(&w->renamed, var, 1));
        char *from = rill_strdup(var);
        if (!from) return rill_oom();
        rill_status *st = rill_opd_rename(op, from, to, false, true);
        rill_free(from);
        RILL_TRY(st);
      }
  }
  return NULL;
}

static rill_status *make_grad_ops(bw *w, rill_oplist *g) {
  for (size_t i = w->loss_op + 1; i-- > 0;) {
    if (!w->on_path[i]) continue;
    /* blocks may be added below: the forward op is found afresh each time */
    w->b = rill_program_block(w->p, w->bidx);
    const rill_op_desc *op = &w->b->ops[i];
    rill_grad_ctx ctx = {.fwd = op,
                         .schema = rill_schema_find(op->type),
                         .wants_grad = want_grad,
                         .impl = w};
    rill_status *st = ctx.schema->grad(&ctx);
    if (!st && (ctx.schema->flags & RILL_OP_SUBBLOCK)) st = link_grad_block(w, op, &ctx);
    else if (!st && w->order > 1) st = rename_pass(w, op, &ctx);
    for (size_t k = 0; k < ctx.nops && !st; k++) {
      /* a gradient op that writes nothing is dropped */
      bool writes = false;
      for (size_t s = 0; s < ctx.ops[k].noutputs; s++)
        for (size_t j = 0; j < ctx.ops[k].outputs[s].nargs; j++)
          writes |= strcmp(ctx.ops[k].outputs[s].args[j], RILL_EMPTY_VAR) != 0;
      if (writes) st = rill_oplist_push(g, &ctx.ops[k]);
    }
    rill_grad_ctx_clear(&ctx);
    if (st)
      return w->bidx ? rill_status_wrap(st, "backward: gradient of block %d, op #%zu '%s'",
                                        (int)w->bidx, i, op->type)
                     : rill_status_wrap(st, "backward: gradient of op #%zu '%s'", i, op->type);
  }
  w->b = rill_program_block(w->p, w->bidx);
  return NULL;
}

/* Repeated writes of one gradient (Paddle's _addup_repetitive_outputs_). */
typedef struct grad_rec {
  char **names; /* current partial gradients */
  size_t n;
  size_t start; /* op index of the first write */
  int count;    /* renames so far */
} grad_rec;

typedef struct pending_sum {
  size_t at;
  rill_op_desc op;
} pending_sum;

typedef struct addup {
  int32_t block;     /* the forward block, in the renamed names */
  rill_strmap index; /* grad name -> rec */
  grad_rec *recs;
  char **rec_names;
  size_t nrecs;
  pending_sum *sums;
  size_t nsums;
} addup;

static void addup_clear(addup *a) {
  for (size_t i = 0; i < a->nrecs; i++) {
    for (size_t j = 0; j < a->recs[i].n; j++) rill_free(a->recs[i].names[j]);
    rill_free(a->recs[i].names);
    rill_free(a->rec_names[i]);
  }
  rill_free(a->recs);
  rill_free(a->rec_names);
  for (size_t i = 0; i < a->nsums; i++) rill_op_desc_clear(&a->sums[i].op);
  rill_free(a->sums);
  rill_strmap_clear(&a->index);
}

static rill_status *rec_get(addup *a, const char *name, grad_rec **out) {
  size_t *k = rill_strmap_get(&a->index, name);
  if (k) {
    *out = &a->recs[*k];
    return NULL;
  }
  grad_rec *r = rill_realloc(a->recs, (a->nrecs + 1) * sizeof *r);
  if (!r) return rill_oom();
  a->recs = r;
  char **rn = rill_realloc(a->rec_names, (a->nrecs + 1) * sizeof *rn);
  if (!rn) return rill_oom();
  a->rec_names = rn;
  rn[a->nrecs] = rill_strdup(name);
  if (!rn[a->nrecs]) return rill_oom();
  memset(&r[a->nrecs], 0, sizeof *r);
  rill_status *st = rill_strmap_put(&a->index, name, a->nrecs);
  if (st) {
    rill_free(rn[a->nrecs]);
    return st;
  }
  *out = &r[a->nrecs++];
  return NULL;
}

static rill_status *rec_set_names(grad_rec *r, const char *const *names, size_t n) {
  char **v = rill_calloc(n ? n : 1, sizeof *v);
  if (!v) return rill_oom();
  for (size_t i = 0; i < n; i++)
    if (!(v[i] = rill_strdup(names[i]))) {
      for (size_t j = 0; j < i; j++) rill_free(v[j]);
      rill_free(v);
      return rill_oom();
    }
  for (size_t j = 0; j < r->n; j++) rill_free(r->names[j]);
  rill_free(r->names);
  r->names = v;
  r->n = n;
  return NULL;
}

static rill_status *rec_append(grad_rec *r, const char *name) {
  char **v = rill_realloc(r->names, (r->n + 1) * sizeof *v);
  if (!v) return rill_oom();
  r->names = v;
  if (!(v[r->n] = rill_strdup(name))) return rill_oom();
  r->n++;
  return NULL;
}

/* Queues sum(X = partial gradients) -> name, inserted before op `at`. */
static rill_status *queue_sum(addup *a, grad_rec *r, const char *name, size_t at) {
  pending_sum *s = rill_realloc(a->sums, (a->nsums + 1) * sizeof *s);
  if (!s) return rill_oom();
  a->sums = s;
  rill_op_desc op;
  RILL_TRY(rill_opd_init(&op, "sum"));
  rill_status *st = rill_opd_input(&op, "X", (const char *const *)r->names, r->n);
  if (!st) st = rill_opd_output(&op, "Out", &name, 1);
  if (!st) st = rill_opd_attr_bool(&op, "use_mkldnn", false);
  if (!st) st = rec_set_names(r, &name, 1);
  if (st) {
    rill_op_desc_clear(&op);
    return st;
  }
  s[a->nsums].at = at;
  s[a->nsums].op = op;
  a->nsums++;
  return NULL;
}

static rill_status *rename_name(char *buf, size_t size, const char *var, int32_t block, int k) {
  if ((size_t)snprintf(buf, size, "%s" RILL_GRAD_RENAME "%d@%d", var, (int)block, k) >= size)
    return rill_error(RILL_INVALID_ARGUMENT, "backward: gradient name '%s' is too long", var);
  return NULL;
}

static rill_status *addup_run(addup *a, rill_oplist *g) {
  char fresh[1024];
  for (size_t idx = 0; idx < g->n; idx++) {
    rill_op_desc *op = &g->v[idx];
    for (size_t k = 0; k < op->ninputs; k++)
      for (size_t j = 0; j < op->inputs[k].nargs; j++) {
        const char *var = op->inputs[k].args[j];
        if (!is_grad_name(var)) continue;
        size_t *ri = rill_strmap_get(&a->index, var);
        if (ri && a->recs[*ri].n > 1) RILL_TRY(queue_sum(a, &a->recs[*ri], var, idx));
      }
    for (size_t k = 0; k < op->noutputs; k++)
      for (size_t j = 0; j < op->outputs[k].nargs; j++) {
        char *var = op->outputs[k].args[j];
        if (!is_grad_name(var) || strcmp(var, RILL_EMPTY_VAR) == 0 || rill_opd_reads(op, var))
          continue; /* empty, or an in-place gradient op */
        grad_rec *r = NULL;
        RILL_TRY(rec_get(a, var, &r));
        if (r->n == 0) {
          RILL_TRY(rec_append(r, var));
          r->start = idx;
          continue;
        }
        char *orig = rill_strdup(var);
        if (!orig) return rill_oom();
        rill_status *st = NULL;
        if (r->n == 1) {
          /* the first write becomes @RENAME@...@0 */
          st = rename_name(fresh, sizeof fresh, orig, a->block, r->count++);
          if (!st) st = rec_set_names(r, (const char *const *)&(const char *){fresh}, 1);
          for (size_t o = r->start; o < idx && !st; o++)
            st = rill_opd_rename(&g->v[o], orig, fresh, true, true);
          for (size_t o = 0; o < a->nsums && !st; o++)
            st = rill_opd_rename(&a->sums[o].op, orig, fresh, true, true);
          /* earlier outputs of this op that wrote the same gradient */
          for (size_t k2 = 0; k2 <= k && !st; k2++)
            for (size_t j2 = 0; j2 < (k2 == k ? j : op->outputs[k2].nargs) && !st; j2++)
              if (strcmp(op->outputs[k2].args[j2], orig) == 0) {
                char *s = rill_strdup(fresh);
                if (!s) st = rill_oom();
                else {
                  rill_free(op->outputs[k2].args[j2]);
                  op->outputs[k2].args[j2] = s;
                }
              }
        }
        if (!st) st = rename_name(fresh, sizeof fresh, orig, a->block, r->count++);
        if (!st) st = rec_append(r, fresh);
        if (!st) {
          char *s = rill_strdup(fresh);
          if (!s) st = rill_oom();
          else {
            rill_free(op->outputs[k].args[j]);
            op->outputs[k].args[j] = s;
          }
        }
        rill_free(orig);
        if (st) return st;
      }
  }
  for (size_t i = 0; i < a->nrecs; i++)
    if (a->recs[i].n > 1) RILL_TRY(queue_sum(a, &a->recs[i], a->rec_names[i], g->n));
  /* insert last first so earlier positions stay valid; equal positions keep order */
  for (size_t i = a->nsums; i-- > 0;) {
    RILL_TRY(rill_oplist_insert(g, a->sums[i].at, &a->sums[i].op));
  }
  return NULL;
}

/* Forward variable of a gradient name: the text before the first @GRAD, less the
 * grad/ prefixes of a later pass's renamed gradient when no variable has them. */
static rill_status *forward_name(const bw *w, const char *grad, char **out) {
  const char *at = strstr(grad, RILL_GRAD_SUFFIX);
  size_t n = at ? (size_t)(at - grad) : strlen(grad);
  *out = rill_strndup(grad, n);
  if (!*out) return rill_oom();
  const size_t np = strlen(RILL_GRAD_PASS_PREFIX);
  if (rill_program_find_var(w->p, w->gidx, *out) || strncmp(grad, RILL_GRAD_PASS_PREFIX, np) != 0)
    return NULL;
  const char *s = grad;
  while (n > np && strncmp(s, RILL_GRAD_PASS_PREFIX, np) == 0) {
    s += np;
    n -= np;
  }
  rill_free(*out);
  *out = rill_strndup(s, n);
  return *out ? NULL : rill_oom();
}

/* Gradients read before any op wrote them are zeroed with fill_zeros_like; a variable
 * with a gradient's name that exists already and is read in a slot that is not a
 * gradient's (X, not Out@GRAD) is a value of the forward program, as an earlier
 * backward pass's x@GRAD is to a later pass. */
static rill_status *zero_fill(bw *w, rill_oplist *g, rill_strmap *made) {
  for (size_t idx = 0; idx < g->n; idx++) {
    for (size_t k = 0; k < g->v[idx].ninputs; k++)
      for (size_t j = 0; j < g->v[idx].inputs[k].nargs; j++) {
        const char *var = g->v[idx].inputs[k].args[j];
        if (!is_grad_name(var) || has(made, var)) continue;
        /* an earlier pass's gradient read as a value (a forward slot) is that value */
        if (!is_grad_name(g->v[idx].inputs[k].param) && rill_program_find_var(w->p, w->gidx, var))
          continue;
        char *fwd;
        RILL_TRY(forward_name(w, var, &fwd));
        if (!rill_program_find_var(w->p, w->gidx, fwd)) {
          rill_status *st = rill_error(RILL_INVALID_ARGUMENT,
                                       "backward: gradient op '%s' reads '%s', which nothing "
                                       "writes and whose forward variable '%s' does not exist",
                                       g->v[idx].type, var, fwd);
          rill_free(fwd);
          return st;
        }
        rill_op_desc z;
        rill_status *st = rill_opd_init(&z, "fill_zeros_like");
        if (!st) st = rill_opd_input(&z, "X", (const char *const *)&fwd, 1);
        if (!st) st = rill_opd_output(&z, "Out", &var, 1);
        if (!st) st = rill_strmap_put(made, var, 1);
        rill_free(fwd);
        if (st) {
          rill_op_desc_clear(&z);
          return st;
        }
        RILL_TRY(rill_oplist_insert(g, idx, &z)); /* var stays valid: args are heap strings */
        idx++;
      }
    for (size_t k = 0; k < g->v[idx].noutputs; k++)
      for (size_t j = 0; j < g->v[idx].outputs[k].nargs; j++)
        RILL_TRY(rill_strmap_put(made, g->v[idx].outputs[k].args[j], 1));
  }
  return NULL;
}

/* Whether every input of `op` is a SELECTED_ROWS variable of block `gidx` (or its
 * parents): the op then writes selected rows, as Paddle's var-type inference gives for
 * the sum that adds up repeated sparse gradients. */
static bool reads_only_selected_rows(const bw *w, const rill_op_desc *op) {
  size_t n = 0;
  for (size_t k = 0; k < op->ninputs; k++)
    for (size_t j = 0; j < op->inputs[k].nargs; j++) {
      const rill_var_desc *d = rill_program_find_var(w->p, w->gidx, op->inputs[k].args[j]);
      if (!d || d->type != RILL_VAR_SELECTED_ROWS) return false;
      n++;
    }
  return n > 0;
}

/* Declares every variable the new ops write that the program lacks, like its forward
 * variable (dtype, dims, LoD level). A gradient op carrying a true `is_sparse`
 * attribute (Paddle's convention for lookup_table and friends), or one reading only
 * selected rows, writes the gradients of persistable variables as SELECTED_ROWS. */
static rill_status *declare_vars(bw *w, const rill_oplist *g) {
  for (size_t i = 0; i < g->n; i++) {
    const rill_op_desc *op = &g->v[i];
    const rill_attr *sp = rill_op_attr(op, "is_sparse");
    bool sparse = sp && ((sp->value.type == RILL_ATTR_BOOLEAN && sp->value.v.b) ||
                         (sp->value.type == RILL_ATTR_INT && sp->value.v.i));
    if (!sparse) sparse = reads_only_selected_rows(w, op);
    for (size_t k = 0; k < op->noutputs; k++)
      for (size_t j = 0; j < op->outputs[k].nargs; j++) {
        const char *var = op->outputs[k].args[j];
        if (strcmp(var, RILL_EMPTY_VAR) == 0 || rill_block_find_var(w->p, w->gidx, var) ||
            has(&w->outer_grads, var) ||
            (!is_grad_name(var) && rill_program_find_var(w->p, w->gidx, var)))
          continue; /* declared, a loop-carried gradient, or a restored forward variable */
        char *fwd;
        RILL_TRY(forward_name(w, var, &fwd));
        const rill_var_desc *d = rill_program_find_var(w->p, w->gidx, fwd);
        rill_status *st;
        if (d && d->has_tensor) {
          /* copy first: adding a variable may move the descriptions */
          bool sr = sparse && d->persistable;
          rill_dims dims = d->dims;
          rill_dtype dt = d->dtype;
          int32_t lod = d->lod_level;
          rill_var_type type = d->type == RILL_VAR_LOD_TENSOR_ARRAY ? RILL_VAR_LOD_TENSOR_ARRAY
                               : sr                                 ? RILL_VAR_SELECTED_ROWS
                                                                    : RILL_VAR_LOD_TENSOR;
          st = rill_block_add_var(w->p, w->gidx, var, type, dt, dims.d, (size_t)dims.n, lod,
                                  false);
        } else {
          st = rill_block_add_var(w->p, w->gidx, var, RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, NULL,
                                  0, 0, false);
        }
        rill_free(fwd);
        if (st) return rill_status_wrap(st, "backward: declaring '%s'", var);
      }
  }
  return NULL;
}

/* In a loop's gradient block: the gradients of the loop's outputs that the block reads
 * before it writes them (an array's gradient, read at item I and written at item I - 1;
 * a carried state's) stay in the enclosing block, so the block's writes reach the step
 * that runs next, not a local of this step's scope. */
static rill_status *loop_carried(bw *in, const rill_op_desc *fop, const rill_oplist *g) {
  rill_strmap outs = {0}, wrote = {0};
  char gname[1024];
  rill_status *st = NULL;
  for (size_t k = 0; k < fop->noutputs && !st; k++)
    for (size_t j = 0; j < fop->outputs[k].nargs && !st; j++)
      if ((size_t)snprintf(gname, sizeof gname, "%s" RILL_GRAD_SUFFIX, fop->outputs[k].args[j]) <
          sizeof gname)
        st = rill_strmap_put(&outs, gname, 1);
  for (size_t i = 0; i < g->n && !st; i++) {
    const rill_op_desc *op = &g->v[i];
    for (size_t k = 0; k < op->ninputs && !st; k++)
      for (size_t j = 0; j < op->inputs[k].nargs && !st; j++) {
        const char *a = op->inputs[k].args[j];
        if (has(&outs, a) && !has(&wrote, a)) st = rill_strmap_put(&in->outer_grads, a, 1);
      }
    for (size_t k = 0; k < op->noutputs && !st; k++)
      for (size_t j = 0; j < op->outputs[k].nargs && !st; j++)
        st = rill_strmap_put(&wrote, op->outputs[k].args[j], 1);
  }
  rill_strmap_clear(&outs);
  rill_strmap_clear(&wrote);
  return st;
}

/* The gradient block of sub-block op `fop` (running forward block `fwd`): a new block
 * whose parent is the forward block, so that its ops find the forward block's variables
 * (which live in the step scope the gradient op runs it in). Seeds: the outputs of fop
 * whose gradients the enclosing pass wants; their gradients are read from the enclosing
 * block. Every gradient the block writes is declared in it, so it stays in the step
 * scope until the gradient op hands the inputs' gradients out. */
static rill_status *grad_block(bw *w, const rill_op_desc *fop, int32_t fwd, int32_t *out) {
  int32_t gidx;
  RILL_TRY(rill_program_add_block(w->p, fwd, &gidx));
  rill_block_desc *gb = rill_program_block(w->p, gidx);
  gb->forward_block_idx = fwd;
  gb->has_forward_block_idx = true;
  w->b = rill_program_block(w->p, w->bidx);
  bw in = {.p = w->p, .b = rill_program_block(w->p, fwd), .bidx = fwd, .gidx = gidx, .outer = w};
  rill_oplist g = {0};
  addup a = {.block = fwd};
  rill_strmap made = {0};
  rill_status *st = copy_keys(&in.nograd, &w->nograd);
  if (!st) st = copy_keys(&in.dep, &w->dep);
  char gname[1024];
  for (size_t k = 0; k < fop->noutputs && !st; k++)
    for (size_t j = 0; j < fop->outputs[k].nargs && !st; j++) {
      const char *o = fop->outputs[k].args[j];
      if (has(&w->want, o)) st = rill_strmap_put(&in.want, o, 1);
      /* the enclosing block provides the outputs' gradients (zeros where unused) */
      if (!st && (size_t)snprintf(gname, sizeof gname, "%s%s", o, RILL_GRAD_SUFFIX) < sizeof gname)
        st = rill_strmap_put(&made, gname, 1);
    }
  /* states carried to the next step: their gradients come from the gradient op (the
   * step after's), so they are wanted and never zero-filled */
  const char *sattr = rill_schema_find(fop->type)->step_states_attr;
  const rill_attr *sa = sattr ? rill_op_attr(fop, sattr) : NULL;
  if (sa && sa->value.type == RILL_ATTR_STRINGS)
    for (size_t k = 0; k < sa->value.n && !st; k++) {
      const char *o = sa->value.list.strings[k];
      st = rill_strmap_put(&in.want, o, 1);
      if (!st && (size_t)snprintf(gname, sizeof gname, "%s%s", o, RILL_GRAD_SUFFIX) < sizeof gname)
        st = rill_strmap_put(&made, gname, 1);
    }
  size_t nops = in.b->nops;
  if (!st && nops) {
    in.loss_op = nops - 1;
    in.on_path = rill_calloc(nops, sizeof *in.on_path);
    if (!in.on_path) st = rill_oom();
    if (!st) st = analyse(&in);
    if (!st) st = make_grad_ops(&in, &g);
    if (!st) st = addup_run(&a, &g);
    if (!st) st = zero_fill(&in, &g, &made);
    for (size_t i = 0; i < g.n && !st; i++)
      st = rill_opd_attr_int(&g.v[i], RILL_OP_ROLE_ATTR, RILL_OP_ROLE_BACKWARD);
    if (!st && (rill_schema_find(fop->type)->flags & RILL_OP_LOOP)) st = loop_carried(&in, fop, &g);
    if (!st) st = declare_vars(&in, &g);
    for (size_t i = 0; i < g.n && !st; i++) {
      gb = rill_program_block(w->p, gidx);
      st = rill_block_insert_op(w->p, gidx, gb->nops, &g.v[i]);
    }
  }
  rill_strmap_clear(&made);
  addup_clear(&a);
  rill_oplist_clear(&g);
  rill_strmap_clear(&in.nograd);
  rill_strmap_clear(&in.dep);
  rill_strmap_clear(&in.want);
  rill_strmap_clear(&in.written);
  rill_strmap_clear(&in.outer_grads);
  rill_free(in.on_path);
  w->b = rill_program_block(w->p, w->bidx);
  if (st) return rill_status_wrap(st, "backward: gradient block of block %d", (int)fwd);
  *out = gidx;
  return NULL;
}

static bool is_trainable_param(const rill_var_desc *v, bool any_marked) {
  if (v->stop_gradient || !v->persistable || !v->has_tensor) return false;
  if (any_marked) return v->is_parameter;
  return v->type == RILL_VAR_LOD_TENSOR && is_float(v->dtype);
}

static rill_status *collect_pairs_with(bw *w, rill_param_grads *pg, bool any_marked,
                                       const rill_strmap *writer) {
  char gname[1024];
  size_t nvars = w->b->nvars;
  for (size_t i = 0; i < nvars; i++) {
    const rill_var_desc *v = &w->b->vars[i];
    if (!is_trainable_param(v, any_marked) || !has(&w->want, v->name)) continue;
    if ((size_t)snprintf(gname, sizeof gname, "%s%s", v->name, RILL_GRAD_SUFFIX) >= sizeof gname)
      continue;
    if (has(&w->renamed, gname)) {
      char own[sizeof gname];
      RILL_TRY(pass_name(w, gname, own, sizeof own));
      memcpy(gname, own, sizeof gname);
    }
    /* the last op writing the gradient carries op_role_var [param, grad, ...] */
    const size_t *at = rill_strmap_get(writer, gname);
    if (!at) continue;
    rill_op_desc *last = &w->b->ops[*at];
    RILL_TRY(rill_param_grads_add(pg, v->name, gname));
    const rill_attr *old = rill_op_attr(last, RILL_OP_ROLE_VAR_ATTR);
    size_t nold = old && old->value.type == RILL_ATTR_STRINGS ? old->value.n : 0;
    const char **vals = rill_calloc(nold + 2, sizeof *vals);
    if (!vals) return rill_oom();
    vals[0] = v->name;
    vals[1] = gname;
    for (size_t k = 0; k < nold; k++) vals[2 + k] = old->value.list.strings[k];
    rill_status *st = rill_opd_attr_strings(last, RILL_OP_ROLE_VAR_ATTR, vals, nold + 2);
    rill_free(vals);
    RILL_TRY(st);
  }
  return NULL;
}

/* name -> index of the last op of the block that writes it (one pass from the end;
 * keys borrowed from the ops, which outlive the map). */
static rill_status *last_writers(const rill_block_desc *b, rill_strmap *out) {
  out->borrow_keys = true;
  for (size_t o = b->nops; o-- > 0;) {
    const rill_op_desc *op = &b->ops[o];
    for (size_t s = 0; s < op->noutputs; s++)
      for (size_t k = 0; k < op->outputs[s].nargs; k++) {
        const char *name = op->outputs[s].args[k];
        if (name && !rill_strmap_get(out, name)) RILL_TRY(rill_strmap_put(out, name, o));
      }
  }
  return NULL;
}

static rill_status *collect_pairs(bw *w, rill_param_grads *pg) {
  bool any_marked = false;
  for (size_t i = 0; i < w->b->nvars; i++) any_marked |= w->b->vars[i].is_parameter;
  rill_strmap writer = {0};
  rill_status *st = last_writers(w->b, &writer);
  if (!st) st = collect_pairs_with(w, pg, any_marked, &writer);
  rill_strmap_clear(&writer);
  return st;
}

static rill_status *check_loss(bw *w) {
  const rill_var_desc *d = rill_block_find_var(w->p, 0, w->loss);
  if (!d) return rill_error(RILL_NOT_FOUND, "backward: loss variable '%s' is not in block 0", w->loss);
  if (!d->has_tensor || d->type != RILL_VAR_LOD_TENSOR || !is_float(d->dtype))
    return rill_error(RILL_INVALID_ARGUMENT,
                      "backward: loss variable '%s' must be a float tensor (it is %s of var type %d)",
                      w->loss, d->has_tensor ? rill_dtype_name(d->dtype) : "not a tensor",
                      (int)d->type);
  int64_t numel;
  if (!rill_dims_numel(&d->dims, INT64_MAX, &numel) || numel != 1) {
    char s[RILL_DIMS_STR_MAX];
    return rill_error(RILL_INVALID_ARGUMENT,
                      "backward: loss variable '%s' has shape %s; the loss must have exactly one "
                      "element (reduce it with mean or reduce_sum)", w->loss,
                      rill_dims_str(&d->dims, s, sizeof s));
  }
  bool found = false;
  for (size_t i = w->b->nops; i-- > 0 && !found;)
    if (rill_opd_writes(&w->b->ops[i], w->loss)) {
      w->loss_op = i;
      found = true;
    }
  if (!found)
    return rill_error(RILL_INVALID_ARGUMENT, "backward: no op in block 0 writes loss '%s'", w->loss);
  char gname[1024];
  if ((size_t)snprintf(gname, sizeof gname, "%s%s", w->loss, RILL_GRAD_SUFFIX) >= sizeof gname)
    return rill_error(RILL_INVALID_ARGUMENT, "backward: loss name is too long");
  /* loss@GRAD may exist (an earlier pass of the same loss): it is seeded again */
  if (w->seed && (!*w->seed || rill_program_find_var(w->p, 0, w->seed)))
    return rill_error(RILL_ALREADY_EXISTS,
                      "backward: the seed of loss '%s' must be a new variable name, got '%s'",
                      w->loss, w->seed);
  return NULL;
}

static rill_status *seed_op(bw *w, rill_op_desc *op) {
  const rill_var_desc *d = rill_block_find_var(w->p, 0, w->loss);
  char gname[1024];
  snprintf(gname, sizeof gname, "%s%s", w->loss, RILL_GRAD_SUFFIX);
  const char *out = w->seed ? w->seed : gname;
  /* Paddle seeds shape [1] (or the loss's shape when it is 0-D); rill's gradient kernels
   * check shapes exactly, so a [1, 1] loss gets a [1, 1] seed. */
  int64_t shape[RILL_MAX_DIMS] = {1};
  size_t nshape = 1;
  if (d->dims.n != 1) {
    nshape = (size_t)d->dims.n;
    for (size_t i = 0; i < nshape; i++) shape[i] = d->dims.d[i];
  }
  RILL_TRY(rill_opd_init(op, "fill_constant"));
  rill_status *st = rill_opd_output(op, "Out", &out, 1);
  if (!st) st = rill_opd_attr_longs(op, "shape", shape, nshape);
  if (!st) st = rill_opd_attr_float(op, "value", 1.0f);
  if (!st) st = rill_opd_attr_int(op, "dtype", (int32_t)d->dtype);
  if (!st) st = rill_opd_attr_bool(op, "force_cpu", false);
  if (!st) st = rill_opd_attr_int(op, RILL_OP_ROLE_ATTR, RILL_OP_ROLE_BACKWARD | RILL_OP_ROLE_LOSS);
  if (st) rill_op_desc_clear(op);
  return st;
}

static rill_status *run(bw *w, const char *const *no_grad, size_t n_no_grad, rill_param_grads *pg) {
  RILL_TRY(check_loss(w));
  for (size_t i = 0; i < n_no_grad; i++) {
    if (!no_grad[i])
      return rill_error(RILL_INVALID_ARGUMENT, "backward: no_grad_names[%zu] is NULL", i);
    RILL_TRY(rill_strmap_put(&w->nograd, no_grad[i], 1));
  }
  for (size_t bi = 0; bi < w->p->nblocks; bi++)
    for (size_t i = 0; i < w->p->blocks[bi].nvars; i++)
      if (w->p->blocks[bi].vars[i].stop_gradient)
        RILL_TRY(rill_strmap_put(&w->nograd, w->p->blocks[bi].vars[i].name, 1));
  w->on_path = rill_calloc(w->loss_op + 1, sizeof *w->on_path);
  if (!w->on_path) return rill_oom();
  RILL_TRY(analyse(w));

  rill_oplist g = {0};
  addup a = {0};
  rill_strmap made = {0};
  rill_op_desc seed;
  rill_status *st = make_grad_ops(w, &g);
  if (!st && w->seed) {
    /* the gradient ops read the seed under its own name */
    char gname[1024];
    snprintf(gname, sizeof gname, "%s%s", w->loss, RILL_GRAD_SUFFIX);
    for (size_t i = 0; i < g.n && !st; i++) st = rill_opd_rename(&g.v[i], gname, w->seed, true, false);
  }
  if (!st) st = addup_run(&a, &g);
  if (!st) st = seed_op(w, &seed);
  if (!st) st = rill_oplist_insert(&g, 0, &seed);
  if (!st) st = zero_fill(w, &g, &made);
  for (size_t i = 1; i < g.n && !st; i++)
    st = rill_opd_attr_int(&g.v[i], RILL_OP_ROLE_ATTR, RILL_OP_ROLE_BACKWARD);
  if (!st) st = declare_vars(w, &g);
  for (size_t i = 0; i < g.n && !st; i++) st = rill_block_insert_op(w->p, 0, w->b->nops, &g.v[i]);
  if (!st)
    st = rill_opd_attr_int(&w->b->ops[w->loss_op], RILL_OP_ROLE_ATTR,
                           RILL_OP_ROLE_FORWARD | RILL_OP_ROLE_LOSS);
  if (!st) st = collect_pairs(w, pg);
  rill_strmap_clear(&made);
  addup_clear(&a);
  rill_oplist_clear(&g);
  return st;
}

rill_status *rill_program_append_gradients(rill_program *program, const char *loss,
                                           const char *seed, const char *const *no_grad_names,
                                           size_t n_no_grad, rill_param_grads **pairs) {
  if (!program || !loss || (n_no_grad && !no_grad_names))
    return rill_error(RILL_INVALID_ARGUMENT, "rill_program_append_backward: NULL argument");
  if (program->nblocks == 0)
    return rill_error(RILL_INVALID_ARGUMENT, "backward: the program has no blocks");
  RILL_TRY(rill_registry_init());
  bw w = {.loss = loss, .seed = seed, .order = program->grad_passes + 1};
  RILL_TRY(rill_program_clone(program, &w.p));
  w.b = &w.p->blocks[0];
  rill_param_grads *pg = rill_calloc(1, sizeof *pg);
  rill_status *st = pg ? run(&w, no_grad_names, n_no_grad, pg) : rill_oom();
  rill_strmap_clear(&w.nograd);
  rill_strmap_clear(&w.dep);
  rill_strmap_clear(&w.want);
  rill_strmap_clear(&w.written);
  rill_strmap_clear(&w.outer_grads);
  rill_strmap_clear(&w.renamed);
  rill_free(w.on_path);
  if (st) {
    rill_program_free(w.p);
    rill_param_grads_destroy(pg);
    return st;
  }
  w.p->grad_passes = w.order;
  rill_program_commit(program, w.p);
  if (pairs) *pairs = pg;
  else rill_param_grads_destroy(pg);
  return NULL;
}

rill_status *rill_program_append_backward(rill_program *program, const char *loss,
                                          const char *const *no_grad_names, size_t n_no_grad,
                                          rill_param_grads **pairs) {
  return rill_program_append_gradients(program, loss, NULL, no_grad_names, n_no_grad, pairs);
}
