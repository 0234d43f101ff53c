/* Gradient transforms appended after the backward pass, built from ordinary ops so that
 * a saved program has Paddle's shape:
 *   - L2 weight decay (Paddle's L2DecayRegularizer + append_regularization_ops):
 *       decay = scale(param, coeff); grad = sum(grad, decay)
 *   - clipping by global norm (Paddle's ClipGradByGlobalNorm._static_clip):
 *       sq_i = reduce_sum(square(g_i)); norm = sqrt(sum(sq_i...));
 *       c = fill_constant(clip_norm); s = c / max(c, norm); g_i = g_i * s
 *     a selected-rows g_i is squared through merge_selected_rows and
 *     get_tensor_from_selected_rows, and scaled in place (its rows kept)
 * New temporaries get Paddle-style unique names ("square_0.tmp_0"). Ops carry op_role
 * Optimize and op_role_var [param, grad], as under Paddle's _optimized_guard. Both edit
 * a clone that replaces the program only on success. */
#include <stdio.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "framework/program/program_impl.h"
#include "framework/registry/registry.h"
#include "framework/transform/backward.h"
#include "framework/transform/opedit.h"

typedef struct xform {
  rill_program *p;
  rill_strmap counters; /* name prefix -> next index */
} xform;

/* A fresh name "<prefix>_<k>.tmp_0" not declared in block 0. */
static rill_status *fresh_name(xform *x, const char *prefix, char *out, size_t size) {
  size_t *k = rill_strmap_get(&x->counters, prefix);
  size_t i = k ? *k : 0;
  for (;; i++) {
    if ((size_t)snprintf(out, size, "%s_%zu.tmp_0", prefix, i) >= size)
      return rill_error(RILL_INVALID_ARGUMENT, "name prefix '%s' is too long", prefix);
    if (!rill_program_find_var(x->p, 0, out)) break;
  }
  return rill_strmap_put(&x->counters, prefix, i + 1);
}

static rill_status *declare(xform *x, const char *name, rill_dtype dt, const rill_dims *dims) {
  return rill_block_add_var(x->p, 0, name, RILL_VAR_LOD_TENSOR, dt, dims->d, (size_t)dims->n, 0,
                            false);
}

/* Sets the optimize role and op_role_var, appends a copy of op to block 0, clears op. */
static rill_status *emit(xform *x, rill_op_desc *op, const char *param, const char *grad) {
  const char *rv[2] = {param, grad};
  rill_status *st = rill_opd_attr_int(op, RILL_OP_ROLE_ATTR, RILL_OP_ROLE_OPTIMIZE);
  if (!st) st = rill_opd_attr_strings(op, RILL_OP_ROLE_VAR_ATTR, rv, 2);
  if (!st) st = rill_block_insert_op(x->p, 0, x->p->blocks[0].nops, op);
  rill_op_desc_clear(op);
  return st;
}

/* One-input one-output op (plus attributes set by the caller before emit). */
static rill_status *unary(rill_op_desc *op, const char *type, const char *in, const char *out) {
  RILL_TRY(rill_opd_init(op, type));
  rill_status *st = rill_opd_input(op, "X", &in, 1);
  if (!st) st = rill_opd_output(op, "Out", &out, 1);
  if (st) rill_op_desc_clear(op);
  return st;
}

static rill_status *binary(rill_op_desc *op, const char *type, const char *a, const char *b,
                           const char *out) {
  RILL_TRY(rill_opd_init(op, type));
  rill_status *st = rill_opd_input(op, "X", &a, 1);
  if (!st) st = rill_opd_input(op, "Y", &b, 1);
  if (!st) st = rill_opd_output(op, "Out", &out, 1);
  if (!st) st = rill_opd_attr_int(op, "axis", -1);
  if (st) rill_op_desc_clear(op);
  return st;
}

/* Checks a pair: both declared in block 0, the gradient a dense tensor (or selected
 * rows, where `rows` allows them). */
static rill_status *check_pair(const rill_program *p, const rill_param_grads *pg, size_t i,
                               const char *what, bool rows, const rill_var_desc **gd) {
  const char *pn = pg->param[i], *gn = pg->grad[i];
  if (!rill_block_find_var(p, 0, pn))
    return rill_error(RILL_NOT_FOUND, "%s: parameter '%s' is not in block 0", what, pn);
  const rill_var_desc *g = rill_block_find_var(p, 0, gn);
  if (!g) return rill_error(RILL_NOT_FOUND, "%s: gradient '%s' is not in block 0", what, gn);
  if (g->type == RILL_VAR_SELECTED_ROWS && rows && g->has_tensor) {
    *gd = g;
    return NULL;
  }
  if (g->type == RILL_VAR_SELECTED_ROWS)
    return rill_error(RILL_UNIMPLEMENTED, "%s: gradient '%s' is selected rows; only dense "
                      "gradients are supported", what, gn);
  if (!g->has_tensor || g->type != RILL_VAR_LOD_TENSOR)
    return rill_error(RILL_INVALID_ARGUMENT, "%s: gradient '%s' is not a dense tensor", what, gn);
  *gd = g;
  return NULL;
}

static rill_status *l2_decay(xform *x, const rill_param_grads *pg, float coeff) {
  for (size_t i = 0; i < pg->n; i++) {
    const rill_var_desc *g;
    RILL_TRY(check_pair(x->p, pg, i, "l2 decay", false, &g));
    rill_dtype dt = g->dtype;
    rill_dims dims = g->dims;
    char decay[1100];
    RILL_TRY(fresh_name(x, "l2_decay", decay, sizeof decay));
    RILL_TRY(declare(x, decay, dt, &dims));
    rill_op_desc op;
    RILL_TRY(unary(&op, "scale", pg->param[i], decay));
    rill_status *st = rill_opd_attr_float(&op, "scale", coeff);
    if (!st) st = rill_opd_attr_float(&op, "bias", 0.0f);
    if (!st) st = rill_opd_attr_bool(&op, "bias_after_scale", true);
    if (st) {
      rill_op_desc_clear(&op);
      return st;
    }
    RILL_TRY(emit(x, &op, pg->param[i], pg->grad[i]));
    const char *xs[2] = {pg->grad[i], decay};
    RILL_TRY(rill_opd_init(&op, "sum"));
    st = rill_opd_input(&op, "X", xs, 2);
    if (!st) st = rill_opd_output(&op, "Out", (const char *const *)&pg->grad[i], 1);
    if (!st) st = rill_opd_attr_bool(&op, "use_mkldnn", false);
    if (st) {
      rill_op_desc_clear(&op);
      return st;
    }
    RILL_TRY(emit(x, &op, pg->param[i], pg->grad[i]));
  }
  return NULL;
}

static rill_status *clip_global_norm(xform *x, const rill_param_grads *pg, float clip_norm) {
  if (!pg->n) return NULL;
  const rill_var_desc *g0;
  RILL_TRY(check_pair(x->p, pg, 0, "clip by global norm", true, &g0));
  rill_dtype dt = g0->dtype;
  rill_dims one = {.n = 1, .d = {1}};
  char **sums = rill_calloc(pg->n, sizeof *sums);
  if (!sums) return rill_oom();
  rill_status *st = NULL;
  char sq[1100], nm[1100], sqrtn[1100], maxn[1100], cn[1100], scale[1100];
  const char *lp = pg->param[pg->n - 1], *lg = pg->grad[pg->n - 1];
  for (size_t i = 0; i < pg->n && !st; i++) {
    const rill_var_desc *g;
    if ((st = check_pair(x->p, pg, i, "clip by global norm", true, &g))) break;
    if (g->dtype != dt) {
      st = rill_error(RILL_INVALID_ARGUMENT, "clip by global norm: gradient '%s' is %s but '%s' is %s",
                      pg->grad[i], rill_dtype_name(g->dtype), pg->grad[0], rill_dtype_name(dt));
      break;
    }
    rill_dims dims = g->dims;
    rill_op_desc op;
    const char *vals = pg->grad[i];
    char merged[1100], rows_vals[1100];
    if (g->type == RILL_VAR_SELECTED_ROWS) {
      /* As Paddle: the norm of a selected-rows gradient is that of its merged rows. */
      if ((st = fresh_name(x, "merge_selected_rows", merged, sizeof merged)) ||
          (st = rill_block_add_var(x->p, 0, merged, RILL_VAR_SELECTED_ROWS, dt, dims.d,
                                   (size_t)dims.n, 0, false)) ||
          (st = unary(&op, "merge_selected_rows", pg->grad[i], merged)) ||
          (st = emit(x, &op, pg->param[i], pg->grad[i])) ||
          (st = fresh_name(x, "get_tensor_from_selected_rows", rows_vals, sizeof rows_vals)) ||
          (st = declare(x, rows_vals, dt, &dims)) ||
          (st = unary(&op, "get_tensor_from_selected_rows", merged, rows_vals)) ||
          (st = emit(x, &op, pg->param[i], pg->grad[i])))
        break;
      vals = rows_vals;
    }
    if ((st = fresh_name(x, "square", sq, sizeof sq)) || (st = declare(x, sq, dt, &dims)) ||
        (st = unary(&op, "square", vals, sq)) || (st = emit(x, &op, pg->param[i], pg->grad[i])))
      break;
    if ((st = fresh_name(x, "reduce_sum", nm, sizeof nm)) || (st = declare(x, nm, dt, &one)) ||
        (st = unary(&op, "reduce_sum", sq, nm)))
      break;
    int32_t dim0 = 0;
    if ((st = rill_opd_attr_ints(&op, "dim", &dim0, 1)) || (st = rill_opd_attr_bool(&op, "keep_dim", false)) ||
        (st = rill_opd_attr_bool(&op, "reduce_all", true))) {
      rill_op_desc_clear(&op);
      break;
    }
    if ((st = emit(x, &op, pg->param[i], pg->grad[i]))) break;
    if (!(sums[i] = rill_strdup(nm))) st = rill_oom();
  }
  rill_op_desc op;
  if (!st && !(st = fresh_name(x, "sum", nm, sizeof nm)) && !(st = declare(x, nm, dt, &one)) &&
      !(st = rill_opd_init(&op, "sum"))) {
    if ((st = rill_opd_input(&op, "X", (const char *const *)sums, pg->n)) ||
        (st = rill_opd_output(&op, "Out", (const char *const *)&(const char *){nm}, 1)))
      rill_op_desc_clear(&op);
    else
      st = emit(x, &op, lp, lg);
  }
  for (size_t i = 0; i < pg->n; i++) rill_free(sums[i]);
  rill_free(sums);
  RILL_TRY(st);
  RILL_TRY(fresh_name(x, "sqrt", sqrtn, sizeof sqrtn));
  RILL_TRY(declare(x, sqrtn, dt, &one));
  RILL_TRY(unary(&op, "sqrt", nm, sqrtn));
  RILL_TRY(emit(x, &op, lp, lg));
  RILL_TRY(fresh_name(x, "fill_constant", cn, sizeof cn));
  RILL_TRY(declare(x, cn, dt, &one));
  RILL_TRY(rill_opd_init(&op, "fill_constant"));
  int64_t shape1 = 1;
  const char *cnp = cn;
  if ((st = rill_opd_output(&op, "Out", &cnp, 1)) || (st = rill_opd_attr_longs(&op, "shape", &shape1, 1)) ||
      (st = rill_opd_attr_float(&op, "value", clip_norm)) || (st = rill_opd_attr_int(&op, "dtype", (int32_t)dt)) ||
      (st = rill_opd_attr_bool(&op, "force_cpu", false))) {
    rill_op_desc_clear(&op);
    return st;
  }
  RILL_TRY(emit(x, &op, lp, lg));
  RILL_TRY(fresh_name(x, "elementwise_max", maxn, sizeof maxn));
  RILL_TRY(declare(x, maxn, dt, &one));
  RILL_TRY(binary(&op, "elementwise_max", cn, sqrtn, maxn));
  RILL_TRY(emit(x, &op, lp, lg));
  RILL_TRY(fresh_name(x, "elementwise_div", scale, sizeof scale));
  RILL_TRY(declare(x, scale, dt, &one));
  RILL_TRY(binary(&op, "elementwise_div", cn, maxn, scale));
  RILL_TRY(emit(x, &op, lp, lg));
  for (size_t i = 0; i < pg->n; i++) {
    RILL_TRY(binary(&op, "elementwise_mul", pg->grad[i], scale, pg->grad[i]));
    RILL_TRY(emit(x, &op, pg->param[i], pg->grad[i]));
  }
  return NULL;
}

static rill_status *transform(rill_program *program, const rill_param_grads *pairs,
                              rill_status *(*fn)(xform *, const rill_param_grads *, float),
                              float v, const char *what) {
  if (!program || !pairs) return rill_error(RILL_INVALID_ARGUMENT, "%s: NULL argument", what);
  if (program->nblocks == 0) return rill_error(RILL_INVALID_ARGUMENT, "%s: the program has no blocks", what);
  xform x = {0};
  RILL_TRY(rill_program_clone(program, &x.p));
  rill_status *st = fn(&x, pairs, v);
  rill_strmap_clear(&x.counters);
  if (st) {
    rill_program_free(x.p);
    return st;
  }
  rill_program_commit(program, x.p);
  return NULL;
}

rill_status *rill_program_append_l2_decay(rill_program *program, const rill_param_grads *pairs,
                                          float coeff) {
  return transform(program, pairs, l2_decay, coeff, "l2 decay");
}

rill_status *rill_program_append_clip_by_global_norm(rill_program *program,
                                                     const rill_param_grads *pairs,
                                                     float clip_norm) {
  if (!(clip_norm > 0))
    return rill_error(RILL_INVALID_ARGUMENT, "clip by global norm: clip_norm must be positive, got %g",
                      (double)clip_norm);
  return transform(program, pairs, clip_global_norm, clip_norm, "clip by global norm");
}
