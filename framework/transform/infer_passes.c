/* Inference passes over block 0 of a loaded model. See infer_passes.h and
 * doc/design/inference.md. Every pass edits a clone of the program; the clone replaces
 * the program (rill_program_commit) only when the whole pass succeeded, and weights are
 * replaced in the scope only after that, so a failed pass leaves both unchanged. */
#include "framework/transform/infer_passes.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "framework/base/isa.h"
#include "framework/registry/registry.h"
#include "framework/transform/opedit.h"
#include "rill.h"

/* ------------------------------------------------------------------ tables ----- */

/* Producers a following batch_norm folds into: the weight slot, the output slot, and
 * where the output channel lives in the weight (0: first dim, -1: last dim), plus the
 * rank of the producer's output the fold requires (the channel is its dim 1, or its last
 * dim for an NHWC conv under an NHWC batch_norm). */
typedef struct fold_producer {
  const char *type, *weight_slot, *out_slot;
  int weight_channel; /* 0 or -1 */
  int out_rank;
} fold_producer;

static const fold_producer fold_producers[] = {
    {"conv2d", "Filter", "Output", 0, 4},
    {"depthwise_conv2d", "Filter", "Output", 0, 4},
    {"mul", "Y", "Out", -1, 2},
};

static const char *const conv_attr_names[] = {"strides", "paddings", "padding_algorithm",
                                              "groups", "dilations", "data_format"};

/* Whether op's schema carries flag. Ops without a schema carry none. */
static bool op_has_flag(const rill_op_desc *op, unsigned flag) {
  const rill_op_schema *s = rill_schema_find(op->type);
  return s && (s->flags & flag);
}

static bool in_list(const char *const *list, size_t n, const char *s) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(list[i], s) == 0) return true;
  return false;
}

/* ----------------------------------------------------------------- helpers ----- */

static const char *slot_arg(const rill_op_desc *op, const char *slot, bool input) {
  const rill_op_slot *s = input ? rill_op_input(op, slot) : rill_op_output(op, slot);
  return s && s->nargs == 1 ? s->args[0] : NULL;
}
static const char *in1(const rill_op_desc *op, const char *slot) { return slot_arg(op, slot, true); }
static const char *out1(const rill_op_desc *op, const char *slot) { return slot_arg(op, slot, false); }

/* Number of ops (in every block) reading / writing `name`. */
static size_t count_uses(const rill_program *p, const char *name, bool readers) {
  size_t n = 0;
  for (size_t b = 0; b < p->nblocks; b++)
    for (size_t i = 0; i < p->blocks[b].nops; i++) {
      const rill_op_desc *op = &p->blocks[b].ops[i];
      if (readers ? rill_opd_reads(op, name) : rill_opd_writes(op, name)) n++;
    }
  return n;
}

static bool read_by_fetch(const rill_program *p, const char *name) {
  const rill_block_desc *b = &p->blocks[0];
  for (size_t i = 0; i < b->nops; i++) {
    const rill_op_schema *s = rill_schema_find(b->ops[i].type);
    if (s && (s->flags & RILL_OP_FETCH) && rill_opd_reads(&b->ops[i], name)) return true;
  }
  return false;
}

static bool written_by_feed(const rill_program *p, const char *name) {
  const rill_block_desc *b = &p->blocks[0];
  for (size_t i = 0; i < b->nops; i++) {
    const rill_op_schema *s = rill_schema_find(b->ops[i].type);
    if (s && (s->flags & RILL_OP_FEED) && rill_opd_writes(&b->ops[i], name)) return true;
  }
  return false;
}

static bool persistable(const rill_program *p, const char *name) {
  const rill_var_desc *d = rill_block_find_var(p, 0, name);
  return d && d->persistable;
}

/* A temporary that only `reader` reads, one op writes, and nobody fetches. */
static bool private_temp(const rill_program *p, const char *name) {
  return name && !persistable(p, name) && count_uses(p, name, true) == 1 &&
         count_uses(p, name, false) == 1 && !read_by_fetch(p, name);
}

/* The op of block 0 (after `from`) that reads `name`, or -1. */
static long next_reader(const rill_block_desc *b, size_t from, const char *name) {
  for (size_t i = from + 1; i < b->nops; i++)
    if (rill_opd_reads(&b->ops[i], name)) return (long)i;
  return -1;
}

/* The op of block 0 (before `before`) that writes `name`, or -1. */
static long prev_writer(const rill_block_desc *b, size_t before, const char *name) {
  for (size_t i = before; i-- > 0;)
    if (rill_opd_writes(&b->ops[i], name)) return (long)i;
  return -1;
}

static bool quiet_between(const rill_program *p, size_t from, size_t to, const char *name);

/* An op's attribute resolved against its schema (defaults, Paddle's type quirks). */
static rill_status *attr_of(const rill_op_desc *op, const char *name, rill_attr_value *out) {
  const rill_op_schema *s = rill_schema_find(op->type);
  int k = s ? rill_schema_attr_index(s, name) : -1;
  if (k < 0) return rill_error(RILL_INTERNAL, "op '%s' has no attribute '%s'", op->type, name);
  rill_attr_value *all = rill_calloc(s->nattrs, sizeof *all);
  if (!all) return rill_oom();
  rill_status *st = rill_resolve_attrs(s, op, all);
  if (!st) {
    *out = all[k];
    memset(&all[k], 0, sizeof all[k]);
    rill_attrs_clear(all, s->nattrs);
  }
  rill_free(all);
  return st;
}

static rill_status *attr_float(const rill_op_desc *op, const char *name, float *v) {
  rill_attr_value a;
  RILL_TRY(attr_of(op, name, &a));
  *v = a.type == RILL_ATTR_FLOAT ? a.v.f : (float)a.v.f64;
  rill_attr_value_clear(&a);
  return NULL;
}

static rill_status *attr_int(const rill_op_desc *op, const char *name, int32_t *v) {
  rill_attr_value a;
  RILL_TRY(attr_of(op, name, &a));
  *v = a.v.i;
  rill_attr_value_clear(&a);
  return NULL;
}

static rill_status *attr_str_is(const rill_op_desc *op, const char *name, const char *const *ok,
                                size_t nok, bool *is) {
  rill_attr_value a;
  RILL_TRY(attr_of(op, name, &a));
  *is = a.type == RILL_ATTR_STRING && a.v.s && in_list(ok, nok, a.v.s);
  rill_attr_value_clear(&a);
  return NULL;
}

/* Removes the ops flagged in `dead` from block 0. */
static void compact(rill_block_desc *b, const bool *dead) {
  size_t w = 0;
  for (size_t i = 0; i < b->nops; i++) {
    if (dead[i]) {
      rill_op_desc_clear(&b->ops[i]);
      continue;
    }
    if (w != i) b->ops[w] = b->ops[i];
    w++;
  }
  b->nops = w;
}

/* Renames every use of `from` to `to` in the ops of block 0 from `start` on. */
static rill_status *rename_from(rill_block_desc *b, size_t start, const char *from, const char *to) {
  for (size_t i = start; i < b->nops; i++) RILL_TRY(rill_opd_rename(&b->ops[i], from, to, true, true));
  return NULL;
}

/* Replaces op `at` by `op` (moved). */
static void replace_op(rill_block_desc *b, size_t at, rill_op_desc *op) {
  rill_op_desc_clear(&b->ops[at]);
  b->ops[at] = *op;
  memset(op, 0, sizeof *op);
}

/* A fusion's commit: the fused op `f` (moved) takes the place of op `at`, the ops it
 * absorbed (indices in `absorbed`, -1 for none) are marked dead for compact(), and the
 * pass counts one fusion. */
static void commit_fusion(rill_block_desc *b, size_t at, rill_op_desc *f, bool *dead,
                          const long *absorbed, size_t nabsorbed, size_t *count) {
  replace_op(b, at, f);
  for (size_t k = 0; k < nabsorbed; k++)
    if (absorbed[k] >= 0) dead[absorbed[k]] = true;
  (*count)++;
}

/* Runs `body` on a clone of `program`; commits the clone when it succeeded and changed
 * something (*count > 0). */
typedef rill_status *(*pass_body)(rill_program *clone, void *ctx, size_t *count);

static rill_status *run_pass(rill_program *program, pass_body body, void *ctx, size_t *count) {
  size_t n = 0;
  if (count) *count = 0;
  if (program->nblocks == 0) return NULL;
  RILL_TRY(rill_registry_init());
  rill_program *clone;
  RILL_TRY(rill_program_clone(program, &clone));
  rill_status *st = body(clone, ctx, &n);
  if (st || n == 0) {
    rill_program_destroy(clone);
    return st;
  }
  rill_program_commit(program, clone);
  if (count) *count = n;
  return NULL;
}

/* A pass that looks at the ops of block 0 one at a time, in order: `visit` sees op i, may
 * rewrite it or the ops after it, flags in `dead` the ops to drop and counts its changes
 * in *count. The walk stops at the first error; without one, the flagged ops are dropped
 * once the walk is over, so indices stay put while it runs. */
typedef rill_status *(*op_visit)(rill_program *p, void *ctx, size_t i, bool *dead, size_t *count);

typedef struct op_walk {
  op_visit visit;
  void *ctx;
} op_walk;

static rill_status *walk_block0(rill_program *p, void *ctx, size_t *count) {
  const op_walk *w = ctx;
  rill_block_desc *b = &p->blocks[0];
  bool *dead = rill_calloc(b->nops + 1, sizeof *dead);
  if (!dead) return rill_oom();
  rill_status *st = NULL;
  for (size_t i = 0; i < b->nops && !st; i++) st = w->visit(p, w->ctx, i, dead, count);
  if (!st) compact(b, dead);
  rill_free(dead);
  return st;
}

/* run_pass() of a walk of block 0 with `visit`. */
static rill_status *run_op_pass(rill_program *program, op_visit visit, void *ctx, size_t *count) {
  op_walk w = {visit, ctx};
  return run_pass(program, walk_block0, &w, count);
}

/* ----------------------------------------------------------------- dropout ----- */

static const char *const downgrade[] = {"downgrade_in_infer"};

/* Removes the identity op `i` (X to Out unchanged): readers of Out read X instead, or,
 * when Out is what the program fetches, the one op that writes X (a temporary nothing
 * else reads) writes Out itself. *done: removed (left in place when neither fits). */
static rill_status *drop_identity(rill_program *p, size_t i, const char *x, const char *out,
                                  bool *dead, bool *done) {
  rill_block_desc *b = &p->blocks[0];
  *done = false;
  if (p->nblocks != 1 || !strcmp(x, out) || persistable(p, out) || count_uses(p, out, false) != 1)
    return NULL;
  char *xs = rill_strdup(x), *outs = rill_strdup(out);
  rill_status *st = xs && outs ? NULL : rill_oom();
  if (!st && !read_by_fetch(p, out)) {
    st = rename_from(b, i + 1, outs, xs);
    *done = !st;
  } else if (!st) {
    long w = prev_writer(b, i, x);
    if (w >= 0 && private_temp(p, x) && !written_by_feed(p, x) && !rill_opd_reads(&b->ops[w], x) &&
        quiet_between(p, (size_t)w, i, out)) {
      st = rill_opd_rename(&b->ops[w], xs, outs, false, true);
      *done = !st;
    }
  }
  if (*done) dead[i] = true;
  rill_free(xs);
  rill_free(outs);
  return st;
}

/* `scale` by 1 with bias 0 and no ScaleTensor: the identity. */
static rill_status *scale_is_identity(const rill_op_desc *op, bool *id) {
  *id = false;
  const rill_op_slot *st = rill_op_input(op, "ScaleTensor");
  if (st && st->nargs) return NULL;
  float scale, bias;
  RILL_TRY(attr_float(op, "scale", &scale));
  RILL_TRY(attr_float(op, "bias", &bias));
  *id = scale == 1.0f && bias == 0.0f;
  return NULL;
}

static rill_status *dropout_visit(rill_program *p, void *ctx, size_t i, bool *dead, size_t *count) {
  (void)ctx;
  rill_block_desc *b = &p->blocks[0];
  rill_status *st = NULL;
  rill_op_desc *op = &b->ops[i];
  bool is_scale = strcmp(op->type, "scale") == 0;
  if (strcmp(op->type, "dropout") != 0 && !is_scale) return NULL;
  const char *x = in1(op, "X"), *out = out1(op, "Out"), *mask = out1(op, "Mask");
  if (!x || !out) return NULL;
  bool done;
  if (is_scale) {
    bool id;
    if ((st = scale_is_identity(op, &id)) || !id) return st;
    if (!(st = drop_identity(p, i, x, out, dead, &done)) && done) (*count)++;
    return st;
  }
  if (mask && count_uses(p, mask, true) > 0) return NULL;
  float prob;
  bool down;
  if ((st = attr_float(op, "dropout_prob", &prob))) return st;
  if ((st = attr_str_is(op, "dropout_implementation", downgrade, 1, &down))) return st;
  float scale = down ? 1.0f - prob : 1.0f;
  if (scale == 1.0f) {
    if ((st = drop_identity(p, i, x, out, dead, &done))) return st;
    if (done) {
      (*count)++;
      return NULL;
    }
  }
  rill_op_desc s;
  const char *xa[] = {x}, *oa[] = {out};
  if ((st = rill_opd_init(&s, "scale"))) return st;
  if (!(st = rill_opd_input(&s, "X", xa, 1)) && !(st = rill_opd_output(&s, "Out", oa, 1)) &&
      !(st = rill_opd_attr_float(&s, "scale", scale)) && !(st = rill_opd_attr_float(&s, "bias", 0)) &&
      !(st = rill_opd_attr_bool(&s, "bias_after_scale", true))) {
    replace_op(b, i, &s);
    (*count)++;
  } else {
    rill_op_desc_clear(&s);
  }
  return st;
}

rill_status *rill_pass_drop_dropout(rill_program *program, size_t *count) {
  if (!program) return rill_error(RILL_INVALID_ARGUMENT, "rill_pass_drop_dropout: program is NULL");
  return run_op_pass(program, dropout_visit, NULL, count);
}

/* -------------------------------------------------------------- batch_norm ----- */

/* Weights to replace in the scope once the program edit is committed. */
typedef struct pending_weight {
  char *name;
  rill_tensor t;
} pending_weight;

typedef struct fold_ctx {
  rill_scope *params;
  pending_weight *w;
  size_t nw, capw;
} fold_ctx;

static rill_status *push_weight(fold_ctx *c, const char *name, rill_tensor *t) {
  void *items = c->w;
  if (!rill_grow(&items, &c->capw, c->nw + 1, sizeof *c->w)) return rill_oom();
  c->w = items;
  char *n = rill_strdup(name);
  if (!n) return rill_oom();
  c->w[c->nw].name = n;
  c->w[c->nw].t = *t;
  rill_tensor_init(t);
  c->nw++;
  return NULL;
}

/* The FP32 tensor of a parameter (also one already replaced by an earlier fold). */
static const rill_tensor *param(fold_ctx *c, const char *name) {
  for (size_t i = c->nw; i-- > 0;)
    if (strcmp(c->w[i].name, name) == 0) return &c->w[i].t;
  if (!name) return NULL;
  rill_variable *v = rill_scope_find(c->params, name);
  if (!v || v->kind != RILL_VARKIND_TENSOR || !v->u.tensor.buf || v->u.tensor.dtype != RILL_DTYPE_FP32)
    return NULL;
  return &v->u.tensor;
}

static const char *const nchw[] = {"NCHW", "AnyLayout"};

/* Folds batch_norm op `j` of block 0 when its X comes from a producer of the table,
 * directly or through an elementwise_add of a per-channel bias. Returns true in *done
 * when it did. */
static rill_status *fold_one(rill_program *p, fold_ctx *c, size_t j, bool *dead, bool *done) {
  rill_block_desc *b = &p->blocks[0];
  rill_op_desc *bn = &b->ops[j];
  *done = false;
  const char *x = in1(bn, "X"), *y = out1(bn, "Y");
  const rill_tensor *scale = param(c, in1(bn, "Scale")), *beta = param(c, in1(bn, "Bias")),
                    *mean = param(c, in1(bn, "Mean")), *var = param(c, in1(bn, "Variance"));
  if (!x || !y || !scale || !beta || !mean || !var || !private_temp(p, x)) return NULL;
  /* Other outputs: the running statistics (in place) or unread temporaries. */
  for (size_t k = 0; k < bn->noutputs; k++) {
    if (strcmp(bn->outputs[k].param, "Y") == 0) continue;
    for (size_t a = 0; a < bn->outputs[k].nargs; a++) {
      const char *o = bn->outputs[k].args[a];
      if (!persistable(p, o) && count_uses(p, o, true) > 0) return NULL;
    }
  }
  bool bn_first, bn_last; /* channels at dim 1 (NCHW), or last (NHWC) */
  static const char *const nhwc[] = {"NHWC"};
  RILL_TRY(attr_str_is(bn, "data_layout", nchw, 2, &bn_first));
  RILL_TRY(attr_str_is(bn, "data_layout", nhwc, 1, &bn_last));
  if (!bn_first && !bn_last) return NULL;
  float eps;
  RILL_TRY(attr_float(bn, "epsilon", &eps));

  long wi = prev_writer(b, j, x);
  if (wi < 0 || dead[wi]) return NULL;
  long pi = wi, addi = -1;
  const char *bias_name = NULL;
  int32_t add_axis = 0;
  if (strcmp(b->ops[wi].type, "elementwise_add") == 0) {
    rill_op_desc *add = &b->ops[wi];
    const char *ax = in1(add, "X");
    bias_name = in1(add, "Y");
    RILL_TRY(attr_int(add, "axis", &add_axis));
    if (!ax || !bias_name || !persistable(p, bias_name) || count_uses(p, bias_name, true) != 1 ||
        !private_temp(p, ax))
      return NULL;
    if (!quiet_between(p, (size_t)wi, j, y)) return NULL; /* Y will be written at the add */
    addi = wi;
    pi = prev_writer(b, (size_t)wi, ax);
    if (pi < 0 || dead[pi]) return NULL;
  }
  rill_op_desc *prod = &b->ops[pi];
  const fold_producer *fp = NULL;
  for (size_t k = 0; k < RILL_COUNTOF(fold_producers); k++)
    if (strcmp(prod->type, fold_producers[k].type) == 0) fp = &fold_producers[k];
  if (!fp) return NULL;
  const char *wname = in1(prod, fp->weight_slot), *pout = out1(prod, fp->out_slot);
  const rill_var_desc *od = pout ? rill_block_find_var(p, 0, pout) : NULL;
  if (!wname || !od || !od->has_tensor || od->dims.n != fp->out_rank) return NULL;
  if (strcmp(prod->type, "mul") == 0) {
    int32_t yn;
    RILL_TRY(attr_int(prod, "y_num_col_dims", &yn));
    if (yn != 1) return NULL;
  } else {
    bool conv_nchw; /* the channel is dim 1 of the conv's output, else its last */
    RILL_TRY(attr_str_is(prod, "data_format", nchw, 2, &conv_nchw));
    if (conv_nchw != bn_first) return NULL;
  }
  /* The channel axis of the producer's output; the bias add must align its [C] there. */
  int32_t cax = bn_first ? 1 : fp->out_rank - 1;
  if (addi >= 0 && add_axis != cax && !(add_axis == -1 && cax == fp->out_rank - 1)) return NULL;
  const rill_tensor *w = param(c, wname);
  if (!w || !persistable(p, wname) || count_uses(p, wname, true) != 1 || w->dims.n < 2) return NULL;
  int64_t ch = fp->weight_channel == 0 ? w->dims.d[0] : w->dims.d[w->dims.n - 1];
  const rill_tensor *bias = bias_name ? param(c, bias_name) : NULL;
  if (bias_name && (!bias || rill_tensor_numel(bias) != ch)) return NULL;
  if (rill_tensor_numel(scale) != ch || rill_tensor_numel(beta) != ch || rill_tensor_numel(mean) != ch ||
      rill_tensor_numel(var) != ch)
    return NULL;

  /* New weight and bias. */
  rill_tensor nw, nb;
  rill_tensor_init(&nw);
  rill_tensor_init(&nb);
  rill_dims bd = {1, {ch}};
  rill_status *st = rill_tensor_copy(&nw, w);
  if (!st) st = rill_tensor_alloc(&nb, RILL_DTYPE_FP32, &bd);
  if (st) {
    rill_tensor_clear(&nw);
    rill_tensor_clear(&nb);
    return st;
  }
  const float *sc = rill_tensor_ptr(scale), *be = rill_tensor_ptr(beta), *mu = rill_tensor_ptr(mean),
              *va = rill_tensor_ptr(var), *bo = bias ? rill_tensor_ptr(bias) : NULL;
  float *wp = rill_tensor_ptr(&nw), *bp = rill_tensor_ptr(&nb);
  int64_t per = rill_tensor_numel(w) / (ch ? ch : 1);
  for (int64_t m = 0; m < ch; m++) {
    float s = sc[m] / sqrtf(va[m] + eps);
    bp[m] = ((bo ? bo[m] : 0.0f) - mu[m]) * s + be[m];
    if (fp->weight_channel == 0)
      for (int64_t k = 0; k < per; k++) wp[m * per + k] *= s;
    else
      for (int64_t k = 0; k < per; k++) wp[k * ch + m] *= s;
  }

  /* The program: the bias add now writes Y (a new one is made when there was none). */
  char *newbias = NULL;
  if (!bias_name) {
    size_t len = strlen(y) + 16;
    newbias = rill_malloc(len);
    if (!newbias) st = rill_oom();
    for (int k = 0; !st; k++) {
      snprintf(newbias, len, k ? "%s@bn_bias%d" : "%s@bn_bias", y, k);
      if (!rill_block_find_var(p, 0, newbias)) break;
    }
    if (!st) {
      int64_t dims1[1] = {ch};
      st = rill_block_add_var(p, 0, newbias, RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, dims1, 1, 0, true);
    }
    rill_op_desc add;
    if (!st && !(st = rill_opd_init(&add, "elementwise_add"))) {
      const char *xa[] = {pout}, *ya[] = {newbias}, *oa[] = {y};
      if (!(st = rill_opd_input(&add, "X", xa, 1)) && !(st = rill_opd_input(&add, "Y", ya, 1)) &&
          !(st = rill_opd_output(&add, "Out", oa, 1)) && !(st = rill_opd_attr_int(&add, "axis", cax)))
        replace_op(b, j, &add);
      else
        rill_op_desc_clear(&add);
    }
  } else {
    const char *oa[] = {y};
    st = rill_opd_output(&b->ops[addi], "Out", oa, 1);
    if (!st) dead[j] = true;
  }
  if (!st) st = push_weight(c, wname, &nw);
  if (!st) st = push_weight(c, bias_name ? bias_name : newbias, &nb);
  rill_free(newbias);
  rill_tensor_clear(&nw);
  rill_tensor_clear(&nb);
  if (!st) *done = true;
  return st;
}

/* Whether conv op `op` pads nothing: padding_algorithm VALID, or EXPLICIT (or absent)
 * with every padding 0. SAME pads (unless the filter is 1x1 and the stride 1, which the
 * caller does not rely on). */
static rill_status *conv_unpadded(const rill_op_desc *op, bool *unpadded) {
  static const char *const explicit_algo[] = {"EXPLICIT", ""}, *const valid_algo[] = {"VALID"};
  bool is_valid, is_explicit;
  RILL_TRY(attr_str_is(op, "padding_algorithm", valid_algo, 1, &is_valid));
  RILL_TRY(attr_str_is(op, "padding_algorithm", explicit_algo, 2, &is_explicit));
  *unpadded = is_valid;
  if (is_valid || !is_explicit) return NULL;
  rill_attr_value a;
  RILL_TRY(attr_of(op, "paddings", &a));
  bool zero = a.type == RILL_ATTR_INTS;
  for (size_t k = 0; zero && k < a.n; k++) zero = a.list.ints[k] == 0;
  rill_attr_value_clear(&a);
  *unpadded = zero;
  return NULL;
}

/* Folds batch_norm op `j` (y = x * s + t per channel) into the conv that reads Y, when
 * nothing else does and the conv pads nothing (a padded border would be t, not 0): the
 * conv reads X, its filter becomes W[o, c] * s[c] and the per-channel bias add that
 * follows it gains sum over c, taps of W[o, c] * t[c]. Returns true in *done when it
 * did. */
static rill_status *fold_into_next(rill_program *p, fold_ctx *c, size_t j, bool *dead, bool *done) {
  rill_block_desc *b = &p->blocks[0];
  rill_op_desc *bn = &b->ops[j];
  *done = false;
  const char *x = in1(bn, "X"), *y = out1(bn, "Y");
  const rill_tensor *scale = param(c, in1(bn, "Scale")), *beta = param(c, in1(bn, "Bias")),
                    *mean = param(c, in1(bn, "Mean")), *var = param(c, in1(bn, "Variance"));
  if (!x || !y || !scale || !beta || !mean || !var || !private_temp(p, y) || persistable(p, x))
    return NULL;
  for (size_t k = 0; k < bn->noutputs; k++) {
    if (strcmp(bn->outputs[k].param, "Y") == 0) continue;
    for (size_t a = 0; a < bn->outputs[k].nargs; a++) {
      const char *o = bn->outputs[k].args[a];
      if (!persistable(p, o) && count_uses(p, o, true) > 0) return NULL;
    }
  }
  bool layout_ok;
  RILL_TRY(attr_str_is(bn, "data_layout", nchw, 2, &layout_ok));
  if (!layout_ok) return NULL;
  float eps;
  RILL_TRY(attr_float(bn, "epsilon", &eps));
  const rill_var_desc *yd = rill_block_find_var(p, 0, y);
  if (!yd || !yd->has_tensor || yd->dims.n != 4) return NULL;

  long ci = next_reader(b, j, y);
  if (ci < 0 || dead[ci]) return NULL;
  rill_op_desc *conv = &b->ops[ci];
  if (!op_has_flag(conv, RILL_OP_CONV_FUSABLE)) return NULL;
  const char *in = in1(conv, "Input"), *wname = in1(conv, "Filter"), *cout = out1(conv, "Output");
  if (!in || strcmp(in, y) != 0 || !wname || !cout || rill_opd_writes(conv, x)) return NULL;
  if ((rill_op_input(conv, "Bias") && rill_op_input(conv, "Bias")->nargs) ||
      (rill_op_input(conv, "ResidualData") && rill_op_input(conv, "ResidualData")->nargs))
    return NULL;
  for (size_t k = j + 1; k < (size_t)ci; k++)
    if (rill_opd_writes(&b->ops[k], x)) return NULL; /* the conv will read X at its place */
  bool unpadded, layout_conv;
  RILL_TRY(conv_unpadded(conv, &unpadded));
  RILL_TRY(attr_str_is(conv, "data_format", nchw, 2, &layout_conv));
  if (!unpadded || !layout_conv) return NULL;
  int32_t groups;
  RILL_TRY(attr_int(conv, "groups", &groups));
  const rill_tensor *w = param(c, wname);
  if (!w || !persistable(p, wname) || count_uses(p, wname, true) != 1 || w->dims.n != 4 || groups < 1 ||
      w->dims.d[0] % groups != 0)
    return NULL;
  int64_t m = w->dims.d[0], cg = w->dims.d[1], taps = w->dims.d[2] * w->dims.d[3], ch = cg * groups,
          mg = m / groups;
  if (rill_tensor_numel(scale) != ch || rill_tensor_numel(beta) != ch || rill_tensor_numel(mean) != ch ||
      rill_tensor_numel(var) != ch)
    return NULL;
  /* The conv's bias add. */
  long ai = next_reader(b, (size_t)ci, cout);
  if (ai < 0 || dead[ai] || !private_temp(p, cout) || strcmp(b->ops[ai].type, "elementwise_add") != 0)
    return NULL;
  const char *ax = in1(&b->ops[ai], "X"), *bias_name = in1(&b->ops[ai], "Y");
  int32_t axis;
  RILL_TRY(attr_int(&b->ops[ai], "axis", &axis));
  const rill_tensor *bias = bias_name ? param(c, bias_name) : NULL;
  if (!ax || strcmp(ax, cout) != 0 || axis != 1 || !bias || !persistable(p, bias_name) ||
      count_uses(p, bias_name, true) != 1 || rill_tensor_numel(bias) != m)
    return NULL;

  rill_tensor nw, nb;
  rill_tensor_init(&nw);
  rill_tensor_init(&nb);
  rill_status *st = rill_tensor_copy(&nw, w);
  if (!st) st = rill_tensor_copy(&nb, bias);
  if (st) {
    rill_tensor_clear(&nw);
    rill_tensor_clear(&nb);
    return st;
  }
  const float *sc = rill_tensor_ptr(scale), *be = rill_tensor_ptr(beta), *mu = rill_tensor_ptr(mean),
              *va = rill_tensor_ptr(var);
  float *wp = rill_tensor_ptr(&nw), *bp = rill_tensor_ptr(&nb);
  for (int64_t o = 0; o < m; o++) {
    double add = 0;
    for (int64_t cl = 0; cl < cg; cl++) {
      int64_t cc = (o / mg) * cg + cl;
      float s = sc[cc] / sqrtf(va[cc] + eps), t = be[cc] - mu[cc] * s;
      float *row = wp + (o * cg + cl) * taps;
      for (int64_t k = 0; k < taps; k++) {
        add += (double)row[k] * t;
        row[k] *= s;
      }
    }
    bp[o] = (float)(bp[o] + add);
  }
  st = rill_opd_rename(conv, y, x, true, false);
  if (!st) dead[j] = true;
  if (!st) st = push_weight(c, wname, &nw);
  if (!st) st = push_weight(c, bias_name, &nb);
  rill_tensor_clear(&nw);
  rill_tensor_clear(&nb);
  if (!st) *done = true;
  return st;
}

static rill_status *fold_visit(rill_program *p, void *ctx, size_t j, bool *dead, size_t *count) {
  fold_ctx *c = ctx;
  rill_block_desc *b = &p->blocks[0];
  rill_status *st = NULL;
  if (strcmp(b->ops[j].type, "batch_norm") != 0) return NULL;
  bool done;
  st = rill_status_wrap(fold_one(p, c, j, dead, &done), "folding batch_norm op #%zu", j);
  if (!st && !done)
    st = rill_status_wrap(fold_into_next(p, c, j, dead, &done), "folding batch_norm op #%zu", j);
  if (!st && done) (*count)++;
  return st;
}

rill_status *rill_pass_fold_batch_norm(rill_program *program, rill_scope *params, size_t *count) {
  if (!program || !params)
    return rill_error(RILL_INVALID_ARGUMENT, "rill_pass_fold_batch_norm: NULL argument");
  fold_ctx c = {.params = params};
  size_t n = 0;
  rill_status *st = run_op_pass(program, fold_visit, &c, &n);
  /* Committed: make every variable first (the only step that can fail), then swap. */
  rill_variable **vars = NULL;
  if (!st && c.nw && !(vars = rill_calloc(c.nw, sizeof *vars))) st = rill_oom();
  for (size_t i = 0; !st && i < c.nw; i++) st = rill_scope_var(params, c.w[i].name, &vars[i]);
  for (size_t i = 0; !st && i < c.nw; i++)
    if (!rill_variable_tensor(vars[i]))
      st = rill_error(RILL_INVALID_ARGUMENT, "parameter '%s' is not a dense tensor", c.w[i].name);
  for (size_t i = 0; !st && i < c.nw; i++) rill_tensor_swap(rill_variable_tensor(vars[i]), &c.w[i].t);
  for (size_t i = 0; i < c.nw; i++) {
    rill_free(c.w[i].name);
    rill_tensor_clear(&c.w[i].t);
  }
  rill_free(c.w);
  rill_free(vars);
  if (!st && count) *count = n;
  return st;
}

/* ------------------------------------------------------------------ fusion ----- */

/* The activation op reading `z` (a private temporary) right after it, if a fused op can
 * apply it (RILL_OP_FUSABLE_ACT; RILL_OP_FC_ACT for fc): its type, which is the name the
 * fused op's attribute takes; *out receives its output. */
static const char *act_after(rill_program *p, size_t from, const char *z, bool for_fc, long *at,
                             const char **out) {
  rill_block_desc *b = &p->blocks[0];
  long r = next_reader(b, from, z);
  if (r < 0 || !private_temp(p, z)) return NULL;
  const rill_op_desc *op = &b->ops[r];
  if (!op_has_flag(op, for_fc ? RILL_OP_FC_ACT : RILL_OP_FUSABLE_ACT)) return NULL;
  const char *x = in1(op, "X"), *o = out1(op, "Out");
  if (!x || !o || strcmp(x, z) != 0 || strcmp(o, z) == 0) return NULL;
  /* A threshold (relu6's) fuses only at the fused kernels' fixed 6. */
  if (rill_schema_attr_index(rill_schema_find(op->type), "threshold") >= 0) {
    float t = 0;
    rill_status *st = attr_float(op, "threshold", &t);
    bool unreadable = st != NULL;
    rill_status_destroy(st); /* an unreadable threshold: not fused */
    if (unreadable || t != 6.0f) return NULL;
  }
  *at = r;
  *out = o;
  return op->type;
}

/* No op strictly between `from` and `to` touches `name`, and only one op writes it. */
static bool quiet_between(const rill_program *p, size_t from, size_t to, const char *name) {
  const rill_block_desc *b = &p->blocks[0];
  for (size_t i = from + 1; i < to; i++)
    if (rill_opd_reads(&b->ops[i], name) || rill_opd_writes(&b->ops[i], name)) return false;
  return count_uses(p, name, false) == 1 && !persistable(p, name);
}

/* The persistable bias `name` holds `n` values (declared dims [n] or [1, n]). */
static bool bias_of(const rill_program *p, const char *name, int64_t n) {
  const rill_var_desc *d = name ? rill_block_find_var(p, 0, name) : NULL;
  if (!d || !d->persistable || !d->has_tensor) return false;
  if (d->dims.n == 1) return d->dims.d[0] == n;
  return d->dims.n == 2 && d->dims.d[0] == 1 && d->dims.d[1] == n;
}

static rill_status *copy_attr(rill_op_desc *dst, const rill_op_desc *src, const char *name) {
  rill_attr_value v;
  RILL_TRY(attr_of(src, name, &v));
  rill_status *st = rill_opd_attr(dst, name, &v);
  rill_attr_value_clear(&v);
  return st;
}

/* A residual connection after conv `ci`'s bias add (op `ai`, output z): the op reading
 * z is an elementwise_add of z and another tensor r of z's declared shape (no
 * broadcasting), r is not written between the conv and that add (the fused op runs at
 * the conv's place and reads r there). Returns the add's index (*res = r, *out = its
 * output) or -1. */
static long residual_after(rill_program *p, size_t ci, size_t ai, const char *z, const char **res,
                           const char **out) {
  rill_block_desc *b = &p->blocks[0];
  long r = next_reader(b, ai, z);
  if (r < 0 || !private_temp(p, z) || strcmp(b->ops[r].type, "elementwise_add") != 0) return -1;
  const rill_op_desc *add = &b->ops[r];
  const char *x = in1(add, "X"), *y = in1(add, "Y"), *o = out1(add, "Out");
  if (!x || !y || !o || strcmp(x, y) == 0) return -1;
  const char *other = strcmp(x, z) == 0 ? y : strcmp(y, z) == 0 ? x : NULL;
  const rill_var_desc *zd = rill_block_find_var(p, 0, z), *rd = other ? rill_block_find_var(p, 0, other) : NULL;
  if (!zd || !rd || !zd->has_tensor || !rd->has_tensor || rd->dtype != RILL_DTYPE_FP32 ||
      !rill_dims_equal(&zd->dims, &rd->dims) || strcmp(o, other) == 0)
    return -1;
  for (size_t k = ci; k < (size_t)r; k++)
    if (rill_opd_writes(&b->ops[k], other)) return -1;
  *res = other;
  *out = o;
  return r;
}

/* The elementwise_add that next reads y (op i's output) when it reads it as X and has an
 * Out: its index in *at (-1: none such), its Y (the bias), Out and axis. */
static rill_status *bias_add_after(rill_program *p, size_t i, const char *y, long *at, const char **bias,
                                   const char **z, int32_t *axis) {
  rill_block_desc *b = &p->blocks[0];
  *at = -1;
  long ai = next_reader(b, i, y);
  if (ai < 0 || strcmp(b->ops[ai].type, "elementwise_add") != 0) return NULL;
  const rill_op_desc *add = &b->ops[ai];
  const char *ax = in1(add, "X");
  *bias = in1(add, "Y");
  *z = out1(add, "Out");
  RILL_TRY(attr_int(add, "axis", axis));
  if (ax && strcmp(ax, y) == 0 && *z) *at = ai;
  return NULL;
}

static rill_status *conv_visit(rill_program *p, void *ctx, size_t i, bool *dead, size_t *count) {
  (void)ctx;
  rill_block_desc *b = &p->blocks[0];
  rill_status *st = NULL;
  rill_op_desc *conv = &b->ops[i];
  if (dead[i] || !op_has_flag(conv, RILL_OP_CONV_FUSABLE)) return NULL;
  const char *in = in1(conv, "Input"), *filt = in1(conv, "Filter"), *y = out1(conv, "Output");
  const rill_var_desc *fd = filt ? rill_block_find_var(p, 0, filt) : NULL;
  if (!in || !fd || !fd->has_tensor || fd->dtype != RILL_DTYPE_FP32 || fd->dims.n != 4 || !y ||
      !private_temp(p, y))
    return NULL;
  if (rill_op_input(conv, "Bias") && rill_op_input(conv, "Bias")->nargs) return NULL;
  if (rill_op_input(conv, "ResidualData") && rill_op_input(conv, "ResidualData")->nargs) return NULL;
  long ai;
  const char *bias, *z;
  int32_t axis;
  if ((st = bias_add_after(p, i, y, &ai, &bias, &z, &axis))) return st;
  if (ai < 0 || axis != 1 || !bias_of(p, bias, fd->dims.d[0])) return NULL;
  bool layout_nchw; /* conv2d_fusion runs NCHW only */
  if ((st = attr_str_is(conv, "data_format", nchw, 2, &layout_nchw))) return st;
  if (!layout_nchw) return NULL;
  const rill_var_desc *bdv = rill_block_find_var(p, 0, bias);
  if (bdv->dims.n != 1) return NULL;
  long acti = -1, resi = -1;
  const char *out = z, *res = NULL;
  const char *act = act_after(p, (size_t)ai, z, false, &acti, &out);
  if (!act && (resi = residual_after(p, i, (size_t)ai, z, &res, &out)) >= 0)
    act = act_after(p, (size_t)resi, out, false, &acti, &out);
  size_t last = act ? (size_t)acti : resi >= 0 ? (size_t)resi : (size_t)ai;
  if (!quiet_between(p, i, last, out)) return NULL;
  rill_op_desc f;
  if ((st = rill_opd_init(&f, "conv2d_fusion"))) return st;
  const char *ia[] = {in}, *fa[] = {filt}, *ba[] = {bias}, *oa[] = {out}, *ra[] = {res};
  if (!(st = rill_opd_input(&f, "Input", ia, 1)) && !(st = rill_opd_input(&f, "Filter", fa, 1)) &&
      !(st = rill_opd_input(&f, "Bias", ba, 1)) && !(st = rill_opd_output(&f, "Output", oa, 1)) &&
      !(st = res ? rill_opd_input(&f, "ResidualData", ra, 1) : NULL)) {
    for (size_t k = 0; k < RILL_COUNTOF(conv_attr_names) && !st; k++)
      st = copy_attr(&f, conv, conv_attr_names[k]);
    if (!st) {
      rill_attr_value a = {.type = RILL_ATTR_STRING, .v.s = (char *)(act ? act : "identity")};
      st = rill_opd_attr(&f, "activation", &a);
    }
  }
  if (st) {
    rill_op_desc_clear(&f);
    return st;
  }
  commit_fusion(b, i, &f, dead, (const long[]){ai, resi, act ? acti : -1}, 3, count);
  return st;
}

rill_status *rill_pass_fuse_conv(rill_program *program, size_t *count) {
  if (!program) return rill_error(RILL_INVALID_ARGUMENT, "rill_pass_fuse_conv: program is NULL");
  return run_op_pass(program, conv_visit, NULL, count);
}

static rill_status *fc_visit(rill_program *p, void *ctx, size_t i, bool *dead, size_t *count) {
  (void)ctx;
  rill_block_desc *b = &p->blocks[0];
  rill_status *st = NULL;
  rill_op_desc *mul = &b->ops[i];
  if (dead[i] || strcmp(mul->type, "mul") != 0) return NULL;
  const char *x = in1(mul, "X"), *w = in1(mul, "Y"), *y = out1(mul, "Out");
  const rill_var_desc *wd = w ? rill_block_find_var(p, 0, w) : NULL;
  if (!x || !wd || !wd->persistable || !wd->has_tensor || wd->dtype != RILL_DTYPE_FP32 ||
      wd->dims.n != 2 || wd->dims.d[1] < 1 ||
      !y || !private_temp(p, y))
    return NULL;
  int32_t xn, yn;
  if ((st = attr_int(mul, "x_num_col_dims", &xn)) || (st = attr_int(mul, "y_num_col_dims", &yn))) return st;
  if (yn != 1) return NULL;
  long ai;
  const char *bias, *z;
  int32_t axis;
  if ((st = bias_add_after(p, i, y, &ai, &bias, &z, &axis))) return st;
  if (ai < 0 || (axis != -1 && axis != xn) || !bias_of(p, bias, wd->dims.d[1])) return NULL;
  long acti = -1;
  const char *out = z;
  const char *act = act_after(p, (size_t)ai, z, true, &acti, &out);
  size_t last = act ? (size_t)acti : (size_t)ai;
  if (!quiet_between(p, i, last, out)) return NULL;
  rill_op_desc f;
  if ((st = rill_opd_init(&f, "fc"))) return st;
  const char *ia[] = {x}, *wa[] = {w}, *ba[] = {bias}, *oa[] = {out};
  if (!(st = rill_opd_input(&f, "Input", ia, 1)) && !(st = rill_opd_input(&f, "W", wa, 1)) &&
      !(st = rill_opd_input(&f, "Bias", ba, 1)) && !(st = rill_opd_output(&f, "Out", oa, 1)) &&
      !(st = rill_opd_attr_int(&f, "in_num_col_dims", xn))) {
    rill_attr_value a = {.type = RILL_ATTR_STRING, .v.s = (char *)(act ? act : "")};
    st = rill_opd_attr(&f, "activation_type", &a);
  }
  if (st) {
    rill_op_desc_clear(&f);
    return st;
  }
  commit_fusion(b, i, &f, dead, (const long[]){ai, act ? acti : -1}, 2, count);
  return st;
}

rill_status *rill_pass_fuse_fc(rill_program *program, size_t *count) {
  if (!program) return rill_error(RILL_INVALID_ARGUMENT, "rill_pass_fuse_fc: program is NULL");
  return run_op_pass(program, fc_visit, NULL, count);
}

/* ----------------------------------------------------------------- inplace ----- */

static rill_status *inplace_body(rill_program *p, void *ctx, size_t *count) {
  (void)ctx;
  if (p->nblocks != 1) return NULL; /* sub-blocks may name the variables */
  rill_block_desc *b = &p->blocks[0];
  rill_status *st = NULL;
  for (size_t i = 0; i < b->nops && !st; i++) {
    rill_op_desc *op = &b->ops[i];
    if (!op_has_flag(op, RILL_OP_INPLACE)) continue;
    const char *x = in1(op, "X"), *out = out1(op, "Out");
    if (!x || !out || strcmp(x, out) == 0 || op->ninputs != 1 || op->noutputs != 1) continue;
    const rill_var_desc *xd = rill_block_find_var(p, 0, x), *od = rill_block_find_var(p, 0, out);
    if (!xd || !od || !xd->has_tensor || !od->has_tensor || xd->dtype != od->dtype) continue;
    /* X is overwritten: nothing after this op may read it (earlier readers and an
     * in-place chain writing it before are fine). */
    if (persistable(p, x) || written_by_feed(p, x) || read_by_fetch(p, x) || next_reader(b, i, x) >= 0 ||
        count_uses(p, out, false) != 1 || read_by_fetch(p, out) || persistable(p, out))
      continue;
    char *xs = rill_strdup(x), *outs = rill_strdup(out);
    if (!xs || !outs)
      st = rill_oom();
    else
      st = rename_from(b, i, outs, xs);
    rill_free(xs);
    rill_free(outs);
    if (!st) (*count)++;
  }
  return st;
}

rill_status *rill_pass_inplace(rill_program *program, size_t *count) {
  if (!program) return rill_error(RILL_INVALID_ARGUMENT, "rill_pass_inplace: program is NULL");
  return run_pass(program, inplace_body, NULL, count);
}

/* -------------------------------------------------------------------- int8 ----- */

/* Ops whose output holds integer levels of `bit_length` bits (Paddle's fake quantize
 * ops: the levels as floats, whatever the scale). */
static const char *const int8_quantizers[] = {
    "fake_quantize_abs_max",
    "fake_quantize_moving_average_abs_max",
    "fake_quantize_range_abs_max",
};

/* Rank of the declared variable `name`, or -1 when unknown. */
static int declared_rank(const rill_program *p, const char *name) {
  const rill_var_desc *d = rill_block_find_var(p, 0, name);
  return d && d->has_tensor ? d->dims.n : -1;
}

/* The float op's own conditions for an int8 rewrite, and the attributes it gives the
 * int8 op f: *ok false where the op is not of the covered form. */
typedef rill_status *(*int8_fit_fn)(const rill_program *p, const rill_op_desc *op, rill_op_desc *f, bool *ok);

static rill_status *int8_fit_conv(const rill_program *p, const rill_op_desc *op, rill_op_desc *f, bool *ok) {
  (void)p;
  RILL_TRY(attr_str_is(op, "data_format", nchw, 2, ok));
  for (size_t k = 0; k < RILL_COUNTOF(conv_attr_names) && *ok; k++) RILL_TRY(copy_attr(f, op, conv_attr_names[k]));
  return NULL;
}

/* mul with a 2-D weight (y_num_col_dims 1) */
static rill_status *int8_fit_mul(const rill_program *p, const rill_op_desc *op, rill_op_desc *f, bool *ok) {
  int32_t yn;
  RILL_TRY(attr_int(op, "y_num_col_dims", &yn));
  *ok = yn == 1 && declared_rank(p, in1(op, "Y")) == 2;
  if (*ok) RILL_TRY(copy_attr(f, op, "x_num_col_dims"));
  return NULL;
}

/* matmul of X (rank >= 2, declared) by a 2-D weight, neither transposed, alpha 1: a mul
 * with x_num_col_dims = rank(X) - 1 */
static rill_status *int8_fit_matmul(const rill_program *p, const rill_op_desc *op, rill_op_desc *f, bool *ok) {
  rill_attr_value tx, ty, alpha;
  RILL_TRY(attr_of(op, "transpose_X", &tx));
  RILL_TRY(attr_of(op, "transpose_Y", &ty));
  RILL_TRY(attr_of(op, "alpha", &alpha));
  int xr = declared_rank(p, in1(op, "X"));
  *ok = !tx.v.b && !ty.v.b && alpha.v.f == 1.0f && xr >= 2 && declared_rank(p, in1(op, "Y")) == 2;
  if (!*ok) return NULL;
  rill_attr_value xn = {.type = RILL_ATTR_INT, .v.i = xr - 1};
  return rill_opd_attr(f, "x_num_col_dims", &xn);
}

/* A float op over levels followed by its dequantizer, and the int8 op that computes
 * both: the fused op reads `f_in` (the levels), `f_w` (levels of the weight) and the
 * dequantizer's scales, writes `f_out`, takes what `fit` gives it, plus the
 * dequantizer's divisor as max_range. A per-tensor dequantizer (channel_wise false)
 * gives Scale and its `dq_range` attribute; a channel-wise one (its `dq_scale` slot
 * holding the per-output-channel scales, then optionally the activation's) gives
 * FilterScale (and Scale), and max_range from its quant_bits, where its channel axis
 * (quant_axis with one scale, x_num_col_dims with two) is the output channel: `dq_axis`,
 * or with -1 the output's last axis, the int8 op's x_num_col_dims. */
typedef struct int8_pattern {
  const char *op, *in_slot, *weight_slot, *out_slot;
  const char *dequant, *dq_in, *dq_scale, *dq_out, *dq_range;
  bool channel_wise;
  int dq_axis;
  const char *fused, *f_in, *f_w, *f_out;
  int8_fit_fn fit;
} int8_pattern;

#define INT8_PER_TENSOR "fake_dequantize_max_abs", "X", "Scale", "Out", "max_range", false, 0
#define INT8_PER_CHANNEL(axis) "fake_channel_wise_dequantize_max_abs", "X", "Scales", "Out", NULL, true, axis
static const int8_pattern int8_patterns[] = {
    {"conv2d", "Input", "Filter", "Output", INT8_PER_TENSOR, "conv2d_int8", "Input", "Filter", "Output", int8_fit_conv},
    {"conv2d", "Input", "Filter", "Output", INT8_PER_CHANNEL(1), "conv2d_int8", "Input", "Filter", "Output",
     int8_fit_conv},
    {"depthwise_conv2d", "Input", "Filter", "Output", INT8_PER_TENSOR, "conv2d_int8", "Input", "Filter", "Output",
     int8_fit_conv},
    {"depthwise_conv2d", "Input", "Filter", "Output", INT8_PER_CHANNEL(1), "conv2d_int8", "Input", "Filter",
     "Output", int8_fit_conv},
    {"mul", "X", "Y", "Out", INT8_PER_TENSOR, "mul_int8", "X", "Y", "Out", int8_fit_mul},
    {"mul", "X", "Y", "Out", INT8_PER_CHANNEL(-1), "mul_int8", "X", "Y", "Out", int8_fit_mul},
    {"matmul", "X", "Y", "Out", INT8_PER_TENSOR, "mul_int8", "X", "Y", "Out", int8_fit_matmul},
    {"matmul", "X", "Y", "Out", INT8_PER_CHANNEL(-1), "mul_int8", "X", "Y", "Out", int8_fit_matmul},
};
#undef INT8_PER_TENSOR
#undef INT8_PER_CHANNEL

/* The scales and divisor the fused op takes from dequantizer dq of pattern pt:
 * *scale (NULL: none), *fscale (per output channel; NULL: none), *range, and the
 * channel axis of a channel-wise one (*axis; -1 for per-tensor); *ok false where dq is
 * not of the form the pattern covers. */
static rill_status *int8_dequant_scales(const int8_pattern *pt, const rill_op_desc *dq, const char **scale,
                                        const char **fscale, float *range, int32_t *axis, bool *ok) {
  *ok = false;
  *scale = *fscale = NULL;
  *axis = -1;
  if (!pt->channel_wise) {
    *scale = in1(dq, pt->dq_scale);
    rill_attr_value a;
    RILL_TRY(attr_of(dq, pt->dq_range, &a));
    *range = a.v.f;
    rill_attr_value_clear(&a);
    *ok = *scale != NULL;
    return NULL;
  }
  const rill_op_slot *sl = rill_op_input(dq, pt->dq_scale);
  if (!sl || sl->nargs < 1 || sl->nargs > 2) return NULL;
  RILL_TRY(attr_int(dq, sl->nargs == 1 ? "quant_axis" : "x_num_col_dims", axis));
  rill_attr_value qb;
  RILL_TRY(attr_of(dq, "quant_bits", &qb));
  bool bits_ok = qb.type == RILL_ATTR_INTS && qb.n >= sl->nargs;
  float r = 1.0f;
  for (size_t k = 0; bits_ok && k < sl->nargs; k++) {
    int32_t b = qb.list.ints[k];
    bits_ok = b >= 2 && b <= 16;
    /* the channel-wise dequantizer's divisor: the product of 2^(bits-1) - 1, in float */
    if (bits_ok) r = k ? r * (float)((1 << (b - 1)) - 1) : (float)((1 << (b - 1)) - 1);
  }
  rill_attr_value_clear(&qb);
  if (!bits_ok || (pt->dq_axis >= 0 && *axis != pt->dq_axis)) return NULL;
  *fscale = sl->args[0];
  *scale = sl->nargs == 2 ? sl->args[1] : NULL;
  *range = r;
  *ok = true;
  return NULL;
}

/* Every value of the FP32 parameter `name` is an integer in [-127, 127]. */
static bool weight_levels(rill_scope *params, const char *name) {
  rill_variable *v = params ? rill_scope_find(params, name) : NULL;
  if (!v || v->kind != RILL_VARKIND_TENSOR || !v->u.tensor.buf || v->u.tensor.dtype != RILL_DTYPE_FP32)
    return false;
  const float *w = rill_tensor_ptr(&v->u.tensor);
  int64_t n = rill_tensor_numel(&v->u.tensor);
  for (int64_t i = 0; i < n; i++)
    if (!(w[i] >= -127.0f && w[i] <= 127.0f) || w[i] != (float)(int)w[i]) return false;
  return true;
}

/* The input `in` of op `i` holds levels of at most 8 bits: its one writer, before i, is
 * a quantizer of the table with bit_length <= 8. */
static rill_status *int8_levels_in(rill_program *p, size_t i, const char *in, bool *ok) {
  rill_block_desc *b = &p->blocks[0];
  *ok = false;
  long q = prev_writer(b, i, in);
  if (q < 0 || count_uses(p, in, false) != 1 || persistable(p, in) ||
      !in_list(int8_quantizers, RILL_COUNTOF(int8_quantizers), b->ops[q].type))
    return NULL;
  const char *qo = out1(&b->ops[q], "Out");
  if (!qo || strcmp(qo, in) != 0) return NULL;
  int32_t bits;
  RILL_TRY(attr_int(&b->ops[q], "bit_length", &bits));
  *ok = bits >= 2 && bits <= 8;
  return NULL;
}

/* A conv whose groups each read one input channel (depthwise_conv2d, or conv2d with
 * groups = C): its filter, in params, is [M, 1, kh, kw] with groups > 1. */
static rill_status *int8_is_depthwise(const rill_op_desc *op, rill_scope *params, const char *w, bool *out) {
  *out = false;
  int32_t groups = 1;
  if (strcmp(op->type, "conv2d") != 0 && strcmp(op->type, "depthwise_conv2d") != 0) return NULL;
  RILL_TRY(attr_int(op, "groups", &groups));
  rill_variable *v = rill_scope_find(params, w);
  const rill_tensor *t = v ? rill_variable_tensor(v) : NULL;
  *out = groups > 1 && t && t->dims.n == 4 && t->dims.d[1] == 1;
  return NULL;
}

typedef struct int8_ctx {
  rill_scope *params;
  bool depthwise;
} int8_ctx;

static rill_status *int8_visit(rill_program *p, void *arg, size_t i, bool *dead, size_t *count) {
  const int8_ctx *ctx = arg;
  rill_scope *params = ctx->params;
  rill_block_desc *b = &p->blocks[0];
  rill_status *st = NULL;
  rill_op_desc *op = &b->ops[i];
  const int8_pattern *pt = NULL;
  for (size_t k = 0; k < RILL_COUNTOF(int8_patterns); k++)
    if (strcmp(op->type, int8_patterns[k].op) == 0) pt = &int8_patterns[k];
  if (dead[i] || !pt) return NULL;
  const char *in = in1(op, pt->in_slot), *w = in1(op, pt->weight_slot), *y = out1(op, pt->out_slot);
  if (!in || !w || !y || !private_temp(p, y) || !persistable(p, w) || !weight_levels(params, w)) return NULL;
  bool extra = false; /* a bias or residual input the int8 op does not take */
  for (size_t k = 0; k < op->ninputs; k++) {
    const char *slot = op->inputs[k].param;
    if (op->inputs[k].nargs && strcmp(slot, pt->in_slot) != 0 && strcmp(slot, pt->weight_slot) != 0)
      extra = true;
  }
  if (extra) return NULL;
  bool dw;
  if ((st = int8_is_depthwise(op, params, w, &dw))) return st;
  if (dw && !ctx->depthwise) return NULL;
  bool levels;
  if ((st = int8_levels_in(p, i, in, &levels))) return st;
  if (!levels) return NULL;
  long r = next_reader(b, i, y);
  if (r < 0) return NULL;
  const rill_op_desc *dq = &b->ops[r];
  pt = NULL; /* the row of this float op and this dequantizer */
  for (size_t k = 0; k < RILL_COUNTOF(int8_patterns); k++)
    if (strcmp(op->type, int8_patterns[k].op) == 0 && strcmp(dq->type, int8_patterns[k].dequant) == 0)
      pt = &int8_patterns[k];
  if (!pt) return NULL;
  const char *dx = in1(dq, pt->dq_in), *out = out1(dq, pt->dq_out), *scale, *fscale;
  float range;
  int32_t axis;
  bool dq_ok;
  if ((st = int8_dequant_scales(pt, dq, &scale, &fscale, &range, &axis, &dq_ok))) return st;
  if (!dq_ok || !dx || strcmp(dx, y) != 0 || !out || !quiet_between(p, i, (size_t)r, out)) return NULL;
  bool scale_moves = false; /* the fused op reads the scales at the float op's place */
  for (size_t k = i; k < (size_t)r; k++)
    if ((scale && rill_opd_writes(&b->ops[k], scale)) || (fscale && rill_opd_writes(&b->ops[k], fscale)))
      scale_moves = true;
  if (scale_moves) return NULL;
  rill_op_desc f;
  if ((st = rill_opd_init(&f, pt->fused))) return st;
  const char *ia[] = {in}, *fa[] = {w}, *sa[] = {scale}, *fsa[] = {fscale}, *oa[] = {out};
  bool fits = false;
  if (!(st = rill_opd_input(&f, pt->f_in, ia, 1)) && !(st = rill_opd_input(&f, pt->f_w, fa, 1)) &&
      !(st = scale ? rill_opd_input(&f, "Scale", sa, 1) : NULL) &&
      !(st = fscale ? rill_opd_input(&f, "FilterScale", fsa, 1) : NULL) &&
      !(st = rill_opd_output(&f, pt->f_out, oa, 1)) && !(st = pt->fit(p, op, &f, &fits)) && fits) {
    rill_attr_value rv = {.type = RILL_ATTR_FLOAT, .v.f = range};
    st = rill_opd_attr(&f, "max_range", &rv);
    if (!st && pt->channel_wise && pt->dq_axis < 0) { /* the channels: the output's last axis */
      int32_t xn;
      if (!(st = attr_int(&f, "x_num_col_dims", &xn))) fits = axis == xn;
    }
  }
  if (st || !fits) {
    rill_op_desc_clear(&f);
    return st;
  }
  commit_fusion(b, i, &f, dead, (const long[]){r}, 1, count);
  return NULL;
}

rill_status *rill_pass_int8(rill_program *program, rill_scope *params, bool depthwise, size_t *count) {
  if (!program || !params) return rill_error(RILL_INVALID_ARGUMENT, "rill_pass_int8: NULL argument");
  int8_ctx ctx = {.params = params, .depthwise = depthwise};
  return run_op_pass(program, int8_visit, &ctx, count);
}

/* ---------------------------------------------------------------- int8 fold ----- */

/* Quantizers an int8 op can take in: with is_test they quantize X under the given
 * InScale, and each other output gets back the value of an input (`keeps`: output slot,
 * input slot) or, `train_only`, is not written. */
typedef struct int8_fold_quantizer {
  const char *type;
  const char *keeps[3][2];
  const char *train_only;
} int8_fold_quantizer;

static const int8_fold_quantizer int8_fold_quantizers[] = {
    {"fake_quantize_moving_average_abs_max",
     {{"OutScale", "InScale"}, {"OutState", "InState"}, {"OutAccum", "InAccum"}},
     NULL},
    {"fake_quantize_range_abs_max", {{"OutScale", "InScale"}}, "OutScales"},
};

/* int8 ops that can quantize their input themselves, and the slot of that input (they
 * take the quantizer's scale as InScale and its bit_length and round_type). */
static const char *const int8_fold_readers[][2] = {{"conv2d_int8", "Input"}, {"mul_int8", "X"}};

/* Output slot `slot` of quantizer q (row fq) may go with q: it is written back with the
 * value of its input of `keeps`, or only in training, or every argument is a temporary
 * nothing reads. */
static bool int8_fold_output_free(const rill_program *p, const rill_op_desc *q, const int8_fold_quantizer *fq,
                                  const rill_op_slot *slot) {
  if (fq->train_only && strcmp(slot->param, fq->train_only) == 0) return true;
  for (size_t k = 0; k < RILL_COUNTOF(fq->keeps) && fq->keeps[k][0]; k++)
    if (strcmp(slot->param, fq->keeps[k][0]) == 0 && slot->nargs == 1) {
      const char *in = in1(q, fq->keeps[k][1]);
      if (in && strcmp(in, slot->args[0]) == 0) return true;
    }
  for (size_t a = 0; a < slot->nargs; a++) {
    const char *v = slot->args[a];
    if (persistable(p, v) || count_uses(p, v, true) != 0 || count_uses(p, v, false) != 1 || read_by_fetch(p, v))
      return false;
  }
  return true;
}

/* The reader row of op, or NULL. */
static const char *int8_fold_slot(const rill_op_desc *op) {
  for (size_t k = 0; k < RILL_COUNTOF(int8_fold_readers); k++)
    if (strcmp(op->type, int8_fold_readers[k][0]) == 0) return int8_fold_readers[k][1];
  return NULL;
}

static rill_status *int8_fold_visit(rill_program *p, void *ctx, size_t i, bool *dead, size_t *count) {
  (void)ctx;
  rill_block_desc *b = &p->blocks[0];
  rill_status *st = NULL;
  rill_op_desc *q = &b->ops[i];
  const int8_fold_quantizer *fq = NULL;
  for (size_t k = 0; k < RILL_COUNTOF(int8_fold_quantizers); k++)
    if (strcmp(q->type, int8_fold_quantizers[k].type) == 0) fq = &int8_fold_quantizers[k];
  if (!fq) return NULL;
  const char *x = in1(q, "X"), *s = in1(q, "InScale"), *lv = out1(q, "Out");
  if (!x || !s || !lv || !strcmp(x, lv) || !strcmp(s, lv) || persistable(p, lv) || count_uses(p, lv, false) != 1 ||
      read_by_fetch(p, lv))
    return NULL;
  rill_attr_value is_test;
  int32_t bits, rt;
  if ((st = attr_of(q, "is_test", &is_test)) || (st = attr_int(q, "bit_length", &bits)) ||
      (st = attr_int(q, "round_type", &rt)))
    return st;
  if (!is_test.v.b || bits < 2 || bits > 8 || (rt != 0 && rt != 1)) return NULL;
  bool ok = true;
  for (size_t k = 0; k < q->noutputs && ok; k++)
    if (strcmp(q->outputs[k].param, "Out") != 0) ok = int8_fold_output_free(p, q, fq, &q->outputs[k]);
  /* every reader of the levels: an int8 op of the table in block 0, after q, reading
   * them in its input slot alone and quantizing nothing yet; X and the scale unchanged
   * from q to the last of them (they read both at their own place) */
  size_t readers = 0, last = i;
  bool moved = false; /* X or the scale written since q */
  for (size_t r = i + 1; r < b->nops && ok; r++) {
    const rill_op_desc *op = &b->ops[r];
    if (!rill_opd_reads(op, lv)) {
      moved = moved || rill_opd_writes(op, x) || rill_opd_writes(op, s);
      continue;
    }
    const char *slot = int8_fold_slot(op), *arg = slot ? in1(op, slot) : NULL;
    const rill_op_slot *has = rill_op_input(op, "InScale");
    size_t uses = 0;
    for (size_t k = 0; k < op->ninputs; k++)
      for (size_t a = 0; a < op->inputs[k].nargs; a++) uses += strcmp(op->inputs[k].args[a], lv) == 0;
    ok = arg && !strcmp(arg, lv) && uses == 1 && !(has && has->nargs) && !moved && !rill_opd_writes(op, x) &&
         !rill_opd_writes(op, s);
    readers++;
    last = r;
  }
  if (!ok || readers == 0 || readers != count_uses(p, lv, true)) return NULL;
  for (size_t r = i + 1; r <= last && !st; r++) {
    rill_op_desc *op = &b->ops[r];
    if (!rill_opd_reads(op, lv)) continue;
    const char *sa[] = {s};
    rill_attr_value bv = {.type = RILL_ATTR_INT, .v.i = bits}, rv = {.type = RILL_ATTR_INT, .v.i = rt};
    if (!(st = rill_opd_rename(op, lv, x, true, false)) && !(st = rill_opd_input(op, "InScale", sa, 1)) &&
        !(st = rill_opd_attr(op, "bit_length", &bv)))
      st = rill_opd_attr(op, "round_type", &rv);
  }
  if (st) return st;
  dead[i] = true;
  (*count)++;
  return NULL;
}

rill_status *rill_pass_int8_fold(rill_program *program, size_t *count) {
  if (!program) return rill_error(RILL_INVALID_ARGUMENT, "rill_pass_int8_fold: program is NULL");
  return run_op_pass(program, int8_fold_visit, NULL, count);
}

/* ---------------------------------------------------------------- driver ------- */

rill_status *rill_infer_passes(rill_program *program, rill_scope *params, uint32_t mask,
                               rill_pass_stats *stats) {
  rill_pass_stats s = {0};
  if (mask & RILL_PASS_DROPOUT) RILL_TRY(rill_status_wrap(rill_pass_drop_dropout(program, &s.dropouts), "dropout pass"));
  if (mask & RILL_PASS_FOLD_BN)
    RILL_TRY(rill_status_wrap(rill_pass_fold_batch_norm(program, params, &s.bn_folded), "batch_norm folding"));
  /* The int8 conv beats the float one only with vector int8 products (AVX2 or VNNI);
   * the scalar kernel is several times slower than the float GEMM. The int8 depthwise
   * conv is exact but about 2.6 times the float depthwise kernel's time even with VNNI,
   * so depthwise convs stay on the float simulation, which gives the same bits
   * (doc/design/int8.md). */
  if ((mask & RILL_PASS_INT8) && rill_cpu_avx2()) {
    RILL_TRY(rill_status_wrap(rill_pass_int8(program, params, false, &s.int8), "int8 pass"));
    RILL_TRY(rill_status_wrap(rill_pass_int8_fold(program, &s.int8_folded), "int8 quantizer fold"));
  }
  if (mask & RILL_PASS_FUSE_CONV) RILL_TRY(rill_status_wrap(rill_pass_fuse_conv(program, &s.conv_fused), "conv fusion"));
  if (mask & RILL_PASS_FUSE_FC) RILL_TRY(rill_status_wrap(rill_pass_fuse_fc(program, &s.fc_fused), "fc fusion"));
  if (mask & RILL_PASS_INPLACE) RILL_TRY(rill_status_wrap(rill_pass_inplace(program, &s.inplace), "in-place pass"));
  if (stats) *stats = s;
  return NULL;
}
