/* The rules of Paddle's dynamic recurrent ops (lstm, gru) that their CPU and CUDA kernels
 * share: the sequence-to-batch order, the recurrent activations, lstm's and gru's checks.
 *
 * The sequence-to-batch reordering of Paddle's dynamic recurrent ops (lstm, gru), its
 * LoDTensor2BatchFunctor: the sequences of a one-level LoD are sorted by length,
 * longest first (ties in sequence order), and time step n gathers row n of every
 * sequence longer than n (row len - 1 - n with is_reverse) into batch n. Since the
 * sequences still running at step n are the first ones of the sorted order, batch n's
 * rows are a prefix of batch n - 1's: row p of batch n continues row p of batch n - 1,
 * so one GEMM of the previous batch's first rows by the recurrent weight serves the
 * whole step.
 *
 * The batch order concatenates the batches: `starts[n]` .. `starts[n + 1]` are batch n's
 * rows, `row[i]` is the row of the LoD tensor at batch row i, and `order[p]` is the
 * sequence at position p of every batch (the order in which H0 / C0 rows are read). */
#ifndef RILL_OPERATORS_RECURRENT_H
#define RILL_OPERATORS_RECURRENT_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "operators/op_util.h"

typedef struct rill_seq_batch {
  int64_t nseq;    /* sequences, empty ones included */
  int64_t steps;   /* batches: the longest sequence's length */
  int64_t rows;    /* rows of the LoD tensor */
  int64_t *starts; /* [steps + 1] */
  int64_t *row;    /* [rows] */
  int64_t *order;  /* [nseq]: sorted by length, longest first; empty sequences last */
} rill_seq_batch;

/* Frees what rill_seq_batch_make allocated. */
static inline void rill_seq_batch_free(rill_seq_batch *b) {
  rill_free(b->starts);
  rill_free(b->row);
  rill_free(b->order);
  memset(b, 0, sizeof *b);
}

/* Builds the batch order of `lv` (offsets of one LoD level ending at `rows`). */
static inline rill_status *rill_seq_batch_make(const rill_lod_level *lv, int64_t rows, bool reverse,
                                 rill_seq_batch *out) {
  memset(out, 0, sizeof *out);
  int64_t nseq = lv->n > 0 ? (int64_t)lv->n - 1 : 0;
  out->nseq = nseq;
  out->rows = rows;
  out->order = rill_malloc((size_t)(nseq + 1) * sizeof *out->order);
  out->row = rill_malloc((size_t)(rows + 1) * sizeof *out->row);
  if (!out->order || !out->row) {
    rill_seq_batch_free(out);
    return rill_oom();
  }
  /* Insertion sort by length, longest first, keeping sequence order among equals
   * (Paddle's std::sort is an insertion sort too below 16 sequences). */
  int64_t longest = 0;
  for (int64_t s = 0; s < nseq; s++) {
    int64_t len = (int64_t)(lv->offsets[s + 1] - lv->offsets[s]), p = s;
    if (len > longest) longest = len;
    while (p > 0) {
      int64_t q = out->order[p - 1];
      if ((int64_t)(lv->offsets[q + 1] - lv->offsets[q]) >= len) break;
      out->order[p] = q;
      p--;
    }
    out->order[p] = s;
  }
  out->steps = longest;
  out->starts = rill_malloc((size_t)(longest + 1) * sizeof *out->starts);
  if (!out->starts) {
    rill_seq_batch_free(out);
    return rill_oom();
  }
  int64_t i = 0;
  out->starts[0] = 0;
  for (int64_t n = 0; n < longest; n++) {
    for (int64_t p = 0; p < nseq; p++) {
      int64_t s = out->order[p];
      int64_t start = (int64_t)lv->offsets[s], len = (int64_t)lv->offsets[s + 1] - start;
      if (n >= len) break;
      out->row[i++] = reverse ? start + len - 1 - n : start + n;
    }
    out->starts[n + 1] = i;
  }
  return NULL;
}

/* dst (batch order) row i := src row b->row[i]; rows of `width` elements of `esize`
 * bytes. */
static inline void rill_seq_batch_gather(const rill_seq_batch *b, const void *src, void *dst,
                                         int64_t width, size_t esize) {
  size_t rb = (size_t)width * esize;
  for (int64_t i = 0; i < b->rows; i++)
    memcpy((char *)dst + (size_t)i * rb, (const char *)src + (size_t)b->row[i] * rb, rb);
}

/* dst row b->row[i] := src (batch order) row i. */
static inline void rill_seq_batch_scatter(const rill_seq_batch *b, const void *src, void *dst,
                                          int64_t width, size_t esize) {
  size_t rb = (size_t)width * esize;
  for (int64_t i = 0; i < b->rows; i++)
    memcpy((char *)dst + (size_t)b->row[i] * rb, (const char *)src + (size_t)i * rb, rb);
}

/* The activations of Paddle's recurrent ops (math/detail/activation_functions.h), named
 * by the string attributes gate_activation, cell_activation, candidate_activation and
 * activation: "sigmoid" (its input clipped to [-40, 13]), "tanh" (2 / (1 + e^(-2x)) - 1,
 * with -2x clipped at 40), "relu", and "identity" or "" (none). */
typedef enum { RILL_RACT_SIGMOID, RILL_RACT_TANH, RILL_RACT_RELU, RILL_RACT_IDENTITY } rill_ract;

/* Parses attribute `attr` (value `name`) of a recurrent op; the error names the op. */
static inline rill_status *rill_ract_parse(const rill_kernel_ctx *ctx, const char *attr, const char *name,
                             rill_ract *out) {
  static const struct {
    const char *name;
    rill_ract kind;
  } names[] = {{"sigmoid", RILL_RACT_SIGMOID}, {"tanh", RILL_RACT_TANH},
               {"relu", RILL_RACT_RELU},       {"identity", RILL_RACT_IDENTITY},
               {"", RILL_RACT_IDENTITY}};
  const char *n = name ? name : "";
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(names[i].name, n) == 0) {
      *out = names[i].kind;
      return NULL;
    }
  return rill_kernel_error(ctx, "attribute %s is '%s': expected sigmoid, tanh, relu or identity",
                           attr, n);
}

#define RILL_RACT_DEFINE(T, SUF, EXP)                                                          \
  static inline T rill_ract_##SUF(T x, rill_ract k) {                                          \
    switch (k) {                                                                               \
      case RILL_RACT_SIGMOID: {                                                                \
        T v = x < (T)-40.0 ? (T)-40.0 : x > (T)13.0 ? (T)13.0 : x;                             \
        return (T)1.0 / ((T)1.0 + EXP(-v));                                                    \
      }                                                                                        \
      case RILL_RACT_TANH: {                                                                   \
        T v = (T)-2.0 * x;                                                                     \
        if (v > (T)40.0) v = (T)40.0;                                                          \
        return (T)2.0 / ((T)1.0 + EXP(v)) - (T)1.0;                                            \
      }                                                                                        \
      case RILL_RACT_RELU:                                                                     \
        return x > (T)0 ? x : (T)0;                                                            \
      default:                                                                                 \
        return x;                                                                              \
    }                                                                                          \
  }                                                                                            \
  /* The gradient through an activation from its output y: dy * act'(x). */                    \
  static inline T rill_ract_grad_##SUF(T dy, T y, rill_ract k) {                               \
    switch (k) {                                                                               \
      case RILL_RACT_SIGMOID:                                                                  \
        return dy * y * ((T)1.0 - y);                                                          \
      case RILL_RACT_TANH:                                                                     \
        return dy * ((T)1.0 - y * y);                                                          \
      case RILL_RACT_RELU:                                                                     \
        return y > (T)0 ? dy : (T)0;                                                           \
      default:                                                                                 \
        return dy;                                                                             \
    }                                                                                          \
  }

enum { RILL_LSTM_ACT_GATE, RILL_LSTM_ACT_CELL, RILL_LSTM_ACT_CAND };

/* The sizes lstm and lstm_grad share (the attributes sit at the same positions in both). */
typedef struct rill_lstm_geom {
  int64_t rows, D;
  bool peep, reverse;
  rill_ract act[3];
} rill_lstm_geom;

_Static_assert(RILL_SAME_POS(RILL_LSTM_ATTR_GATE_ACTIVATION, RILL_LSTM_GRAD_ATTR_GATE_ACTIVATION) &&
                   RILL_SAME_POS(RILL_LSTM_ATTR_USE_PEEPHOLES, RILL_LSTM_GRAD_ATTR_USE_PEEPHOLES) &&
                   RILL_SAME_POS(RILL_LSTM_ATTR_IS_REVERSE, RILL_LSTM_GRAD_ATTR_IS_REVERSE) &&
                   RILL_SAME_POS(RILL_LSTM_ATTR_CELL_ACTIVATION, RILL_LSTM_GRAD_ATTR_CELL_ACTIVATION) &&
                   RILL_SAME_POS(RILL_LSTM_ATTR_CANDIDATE_ACTIVATION, RILL_LSTM_GRAD_ATTR_CANDIDATE_ACTIVATION),
               "lstm and lstm_grad share their attribute table");
_Static_assert(RILL_SAME_POS(RILL_LSTM_IN_INPUT, RILL_LSTM_GRAD_IN_INPUT) && RILL_SAME_POS(RILL_LSTM_IN_H0, RILL_LSTM_GRAD_IN_H0) &&
                   RILL_SAME_POS(RILL_LSTM_IN_C0, RILL_LSTM_GRAD_IN_C0) &&
                   RILL_SAME_POS(RILL_LSTM_IN_WEIGHT, RILL_LSTM_GRAD_IN_WEIGHT) &&
                   RILL_SAME_POS(RILL_LSTM_IN_BIAS, RILL_LSTM_GRAD_IN_BIAS),
               "lstm_grad's first inputs are lstm's");
_Static_assert(RILL_LSTM_GRAD_OUT_COUNT == 5 && RILL_LSTM_GRAD_OUT_INPUT_GRAD == 0 && RILL_LSTM_GRAD_OUT_H0_GRAD == 1 &&
                   RILL_LSTM_GRAD_OUT_C0_GRAD == 2 && RILL_LSTM_GRAD_OUT_WEIGHT_GRAD == 3 &&
                   RILL_LSTM_GRAD_OUT_BIAS_GRAD == 4,
               "lstm_grad's outputs are the gradients of its first five inputs, in their order");
/* The input each output of lstm_grad is the gradient of (rill_kout_like's like_slot). */
static const size_t rill_lstm_grad_wrt[RILL_LSTM_GRAD_OUT_COUNT] = {
    RILL_LSTM_GRAD_IN_INPUT, RILL_LSTM_GRAD_IN_H0, RILL_LSTM_GRAD_IN_C0, RILL_LSTM_GRAD_IN_WEIGHT,
    RILL_LSTM_GRAD_IN_BIAS};

/* Input [T, 4D] with one LoD level ending at T, Weight [D, 4D], Bias with 4D (7D with
 * use_peepholes) elements, H0 / C0 [sequences, D]; the attributes. */
static inline rill_status *rill_lstm_check(const rill_kernel_ctx *ctx, const rill_tensor *x, const rill_tensor *w,
                               const rill_tensor *b, const rill_tensor *h0, const rill_tensor *c0,
                               rill_lstm_geom *g) {
  g->peep = ctx->attrs[RILL_LSTM_ATTR_USE_PEEPHOLES].v.b;
  g->reverse = ctx->attrs[RILL_LSTM_ATTR_IS_REVERSE].v.b;
  RILL_TRY(rill_ract_parse(ctx, "gate_activation", ctx->attrs[RILL_LSTM_ATTR_GATE_ACTIVATION].v.s,
                           &g->act[RILL_LSTM_ACT_GATE]));
  RILL_TRY(rill_ract_parse(ctx, "cell_activation", ctx->attrs[RILL_LSTM_ATTR_CELL_ACTIVATION].v.s,
                           &g->act[RILL_LSTM_ACT_CELL]));
  RILL_TRY(rill_ract_parse(ctx, "candidate_activation",
                           ctx->attrs[RILL_LSTM_ATTR_CANDIDATE_ACTIVATION].v.s, &g->act[RILL_LSTM_ACT_CAND]));
  char s[RILL_DIMS_STR_MAX], s2[RILL_DIMS_STR_MAX];
  if (w->dims.n != 2 || x->dims.n != 2 || x->dims.d[1] != 4 * w->dims.d[0] ||
      w->dims.d[1] != 4 * w->dims.d[0])
    return rill_kernel_error(ctx, "inputs Input (%s) %s and Weight (%s) %s do not fit: expected "
                             "[T, 4 * D] and [D, 4 * D]", rill_kin_name(ctx, RILL_LSTM_IN_INPUT, 0),
                             rill_dims_str(&x->dims, s, sizeof s), rill_kin_name(ctx, RILL_LSTM_IN_WEIGHT, 0),
                             rill_dims_str(&w->dims, s2, sizeof s2));
  g->rows = x->dims.d[0];
  g->D = w->dims.d[0];
  int64_t nb = (g->peep ? 7 : 4) * g->D;
  if (rill_tensor_numel(b) != nb)
    return rill_kernel_error(ctx, "input Bias (%s) has shape %s, expected [1, %lld]%s",
                             rill_kin_name(ctx, RILL_LSTM_IN_BIAS, 0), rill_dims_str(&b->dims, s, sizeof s),
                             (long long)nb, g->peep ? " (use_peepholes: 4 * D biases, 3 * D peephole "
                                                      "weights)" : "");
  if (x->lod.nlevels != 1)
    return rill_kernel_error(ctx, "input Input (%s) has %zu LoD levels, expected 1 (the sequences)",
                             rill_kin_name(ctx, RILL_LSTM_IN_INPUT, 0), x->lod.nlevels);
  const rill_lod_level *lv = &x->lod.levels[0];
  if (lv->n < 1 || lv->offsets[lv->n - 1] != (uint64_t)g->rows)
    return rill_kernel_error(ctx, "input Input (%s): its LoD does not end at its %lld rows",
                             rill_kin_name(ctx, RILL_LSTM_IN_INPUT, 0), (long long)g->rows);
  if (h0 && !c0)
    return rill_kernel_error(ctx, "input H0 (%s) is given without C0",
                             rill_kin_name(ctx, RILL_LSTM_IN_H0, 0));
  rill_dims sd = {.n = 2, .d = {(int64_t)lv->n - 1, g->D}};
  if (h0) RILL_TRY(rill_kin_check_dims(ctx, RILL_LSTM_IN_H0, h0, &sd));
  if (c0) RILL_TRY(rill_kin_check_dims(ctx, RILL_LSTM_IN_C0, c0, &sd));
  return NULL;
}

/* lstmp's sizes; its attributes and those of lstmp_grad share one table. */
typedef struct rill_lstmp_geom {
  int64_t rows, D, P;
  bool peep, reverse, proj_on;
  rill_ract act[3], proj;
  double cell_clip, proj_clip;
} rill_lstmp_geom;

_Static_assert(RILL_SAME_POS(RILL_LSTMP_ATTR_PROJ_ACTIVATION, RILL_LSTMP_GRAD_ATTR_PROJ_ACTIVATION) &&
                   RILL_SAME_POS(RILL_LSTMP_ATTR_PROJ_CLIP, RILL_LSTMP_GRAD_ATTR_PROJ_CLIP),
               "lstmp and lstmp_grad share their attribute table");

/* The slots rill_lstmp_check reads: the gates [T, 4D] (Input, or BatchGate in lstmp_grad),
 * the tensor whose one-level LoD gives the sequences (Input, or Projection), Weight,
 * ProjWeight, Bias, H0 and C0. */
typedef struct rill_lstmp_slots {
  size_t gates, seq, w, pw, b, h0, c0;
} rill_lstmp_slots;

/* gates [T, 4D], Weight [P, 4D], ProjWeight [D, P], Bias 4D (7D with peepholes), seq's
 * one LoD level ending at T, H0 [N, P] and C0 [N, D] when given; the attributes. */
static inline rill_status *rill_lstmp_check(const rill_kernel_ctx *ctx, const rill_lstmp_slots *sl,
                                const rill_tensor *x, const rill_tensor *seq, const rill_tensor *w,
                                const rill_tensor *pw, const rill_tensor *b, const rill_tensor *h0,
                                const rill_tensor *c0, rill_lstmp_geom *g) {
  g->peep = ctx->attrs[RILL_LSTMP_ATTR_USE_PEEPHOLES].v.b;
  g->reverse = ctx->attrs[RILL_LSTMP_ATTR_IS_REVERSE].v.b;
  g->cell_clip = ctx->attrs[RILL_LSTMP_ATTR_CELL_CLIP].v.f;
  g->proj_clip = ctx->attrs[RILL_LSTMP_ATTR_PROJ_CLIP].v.f;
  RILL_TRY(rill_ract_parse(ctx, "gate_activation", ctx->attrs[RILL_LSTMP_ATTR_GATE_ACTIVATION].v.s,
                           &g->act[RILL_LSTM_ACT_GATE]));
  RILL_TRY(rill_ract_parse(ctx, "cell_activation", ctx->attrs[RILL_LSTMP_ATTR_CELL_ACTIVATION].v.s,
                           &g->act[RILL_LSTM_ACT_CELL]));
  RILL_TRY(rill_ract_parse(ctx, "candidate_activation",
                           ctx->attrs[RILL_LSTMP_ATTR_CANDIDATE_ACTIVATION].v.s, &g->act[RILL_LSTM_ACT_CAND]));
  RILL_TRY(rill_ract_parse(ctx, "proj_activation", ctx->attrs[RILL_LSTMP_ATTR_PROJ_ACTIVATION].v.s,
                           &g->proj));
  /* Paddle 1.8 applies cell_activation's function to the projection whenever
   * proj_activation is not identity. */
  g->proj_on = g->proj != RILL_RACT_IDENTITY;
  g->proj = g->act[RILL_LSTM_ACT_CELL];
  char s[RILL_DIMS_STR_MAX], s2[RILL_DIMS_STR_MAX], s3[RILL_DIMS_STR_MAX];
  if (x->dims.n != 2 || w->dims.n != 2 || pw->dims.n != 2 || x->dims.d[1] != 4 * pw->dims.d[0] ||
      w->dims.d[0] != pw->dims.d[1] || w->dims.d[1] != x->dims.d[1])
    return rill_kernel_error(ctx, "inputs %s (%s) %s, Weight (%s) %s and ProjWeight (%s) %s do not "
                             "fit: expected [T, 4 * D], [P, 4 * D] and [D, P]",
                             ctx->schema->inputs[sl->gates].name, rill_kin_name(ctx, sl->gates, 0),
                             rill_dims_str(&x->dims, s, sizeof s), rill_kin_name(ctx, sl->w, 0),
                             rill_dims_str(&w->dims, s2, sizeof s2), rill_kin_name(ctx, sl->pw, 0),
                             rill_dims_str(&pw->dims, s3, sizeof s3));
  g->rows = x->dims.d[0];
  g->D = pw->dims.d[0];
  g->P = pw->dims.d[1];
  int64_t nb = (g->peep ? 7 : 4) * g->D;
  if (rill_tensor_numel(b) != nb)
    return rill_kernel_error(ctx, "input Bias (%s) has shape %s, expected [1, %lld]%s",
                             rill_kin_name(ctx, sl->b, 0), rill_dims_str(&b->dims, s, sizeof s),
                             (long long)nb, g->peep ? " (use_peepholes: 4 * D biases, 3 * D peephole "
                                                      "weights)" : "");
  const char *sn = ctx->schema->inputs[sl->seq].name;
  if (seq->lod.nlevels != 1)
    return rill_kernel_error(ctx, "input %s (%s) has %zu LoD levels, expected 1 (the sequences)", sn,
                             rill_kin_name(ctx, sl->seq, 0), seq->lod.nlevels);
  const rill_lod_level *lv = &seq->lod.levels[0];
  if (lv->n < 1 || lv->offsets[lv->n - 1] != (uint64_t)g->rows || seq->dims.n < 1 ||
      seq->dims.d[0] != g->rows)
    return rill_kernel_error(ctx, "input %s (%s): its LoD does not end at the %lld rows of %s", sn,
                             rill_kin_name(ctx, sl->seq, 0), (long long)g->rows,
                             rill_kin_name(ctx, sl->gates, 0));
  if (h0 && !c0)
    return rill_kernel_error(ctx, "input H0 (%s) is given without C0", rill_kin_name(ctx, sl->h0, 0));
  rill_dims hd = {.n = 2, .d = {(int64_t)lv->n - 1, g->P}}, cd = {.n = 2, .d = {(int64_t)lv->n - 1, g->D}};
  if (h0) RILL_TRY(rill_kin_check_dims(ctx, sl->h0, h0, &hd));
  if (c0) RILL_TRY(rill_kin_check_dims(ctx, sl->c0, c0, &cd));
  return NULL;
}

/* The slots of lstmp and of lstmp_grad that rill_lstmp_check reads. */
static const rill_lstmp_slots rill_lstmp_fwd_slots = {RILL_LSTMP_IN_INPUT, RILL_LSTMP_IN_INPUT,
                                                      RILL_LSTMP_IN_WEIGHT, RILL_LSTMP_IN_PROJ_WEIGHT,
                                                      RILL_LSTMP_IN_BIAS, RILL_LSTMP_IN_H0, RILL_LSTMP_IN_C0};
static const rill_lstmp_slots rill_lstmp_grad_slots = {
    RILL_LSTMP_GRAD_IN_BATCH_GATE, RILL_LSTMP_GRAD_IN_PROJECTION, RILL_LSTMP_GRAD_IN_WEIGHT,
    RILL_LSTMP_GRAD_IN_PROJ_WEIGHT, RILL_LSTMP_GRAD_IN_BIAS,      RILL_LSTMP_GRAD_IN_H0,
    RILL_LSTMP_GRAD_IN_C0};

_Static_assert(RILL_LSTMP_GRAD_OUT_COUNT == 6 && RILL_LSTMP_GRAD_OUT_INPUT_GRAD == 0 &&
                   RILL_LSTMP_GRAD_OUT_WEIGHT_GRAD == 1 && RILL_LSTMP_GRAD_OUT_PROJ_WEIGHT_GRAD == 2 &&
                   RILL_LSTMP_GRAD_OUT_BIAS_GRAD == 3 && RILL_LSTMP_GRAD_OUT_H0_GRAD == 4 &&
                   RILL_LSTMP_GRAD_OUT_C0_GRAD == 5,
               "lstmp_grad's outputs are the gradients of the gates, Weight, ProjWeight, Bias, H0 and C0");

/* The input each output of lstmp_grad is the gradient of (rill_kout_like's like_slot). */
static const size_t rill_lstmp_grad_wrt[RILL_LSTMP_GRAD_OUT_COUNT] = {
    RILL_LSTMP_GRAD_IN_BATCH_GATE, RILL_LSTMP_GRAD_IN_WEIGHT, RILL_LSTMP_GRAD_IN_PROJ_WEIGHT,
    RILL_LSTMP_GRAD_IN_BIAS,       RILL_LSTMP_GRAD_IN_H0,     RILL_LSTMP_GRAD_IN_C0};

/* lstm_unit's X [N, 4D] and C_prev [N, D] (inputs 0 and 1 of lstm_unit and its gradient). */
static inline rill_status *rill_lstm_unit_check(const rill_kernel_ctx *ctx, const rill_tensor *x,
                                                const rill_tensor *cp, int64_t *N, int64_t *D) {
  char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
  if (x->dims.n != 2 || cp->dims.n != 2 || x->dims.d[0] != cp->dims.d[0] ||
      x->dims.d[1] != 4 * cp->dims.d[1])
    return rill_kernel_error(ctx, "inputs X (%s) %s and C_prev (%s) %s do not fit: expected "
                             "[N, 4 * D] and [N, D]", rill_kin_name(ctx, 0, 0),
                             rill_dims_str(&x->dims, a, sizeof a), rill_kin_name(ctx, 1, 0),
                             rill_dims_str(&cp->dims, b, sizeof b));
  *N = cp->dims.d[0];
  *D = cp->dims.d[1];
  return NULL;
}

_Static_assert(RILL_SAME_POS(RILL_LSTM_UNIT_IN_X, RILL_LSTM_UNIT_GRAD_IN_X) &&
                   RILL_SAME_POS(RILL_LSTM_UNIT_IN_C_PREV, RILL_LSTM_UNIT_GRAD_IN_C_PREV) && RILL_LSTM_UNIT_IN_X == 0 &&
                   RILL_LSTM_UNIT_IN_C_PREV == 1,
               "lstm_unit_grad's first inputs are lstm_unit's");

/* The sizes gru and gru_grad share (the attributes sit at the same positions in both). */
typedef struct rill_gru_geom {
  int64_t rows, D;
  bool reverse, origin;
  rill_ract act, gate;
} rill_gru_geom;

_Static_assert(RILL_SAME_POS(RILL_GRU_ATTR_ACTIVATION, RILL_GRU_GRAD_ATTR_ACTIVATION) &&
                   RILL_SAME_POS(RILL_GRU_ATTR_GATE_ACTIVATION, RILL_GRU_GRAD_ATTR_GATE_ACTIVATION) &&
                   RILL_SAME_POS(RILL_GRU_ATTR_IS_REVERSE, RILL_GRU_GRAD_ATTR_IS_REVERSE) &&
                   RILL_SAME_POS(RILL_GRU_ATTR_ORIGIN_MODE, RILL_GRU_GRAD_ATTR_ORIGIN_MODE),
               "gru and gru_grad share their attribute table");
_Static_assert(RILL_SAME_POS(RILL_GRU_IN_INPUT, RILL_GRU_GRAD_IN_INPUT) && RILL_SAME_POS(RILL_GRU_IN_H0, RILL_GRU_GRAD_IN_H0) &&
                   RILL_SAME_POS(RILL_GRU_IN_WEIGHT, RILL_GRU_GRAD_IN_WEIGHT) &&
                   RILL_SAME_POS(RILL_GRU_IN_BIAS, RILL_GRU_GRAD_IN_BIAS),
               "gru_grad's first inputs are gru's");

/* Input [T, 3D] with one LoD level ending at T, Weight [D, 3D], Bias 3D elements,
 * H0 [sequences, D]; the attributes. */
static inline rill_status *rill_gru_check(const rill_kernel_ctx *ctx, const rill_tensor *x, const rill_tensor *w,
                                          const rill_tensor *b, const rill_tensor *h0, rill_gru_geom *g) {
  g->reverse = ctx->attrs[RILL_GRU_ATTR_IS_REVERSE].v.b;
  g->origin = ctx->attrs[RILL_GRU_ATTR_ORIGIN_MODE].v.b;
  RILL_TRY(rill_ract_parse(ctx, "activation", ctx->attrs[RILL_GRU_ATTR_ACTIVATION].v.s, &g->act));
  RILL_TRY(rill_ract_parse(ctx, "gate_activation", ctx->attrs[RILL_GRU_ATTR_GATE_ACTIVATION].v.s,
                           &g->gate));
  char s[RILL_DIMS_STR_MAX], s2[RILL_DIMS_STR_MAX];
  if (w->dims.n != 2 || x->dims.n != 2 || x->dims.d[1] != 3 * w->dims.d[0] ||
      w->dims.d[1] != 3 * w->dims.d[0])
    return rill_kernel_error(ctx, "inputs Input (%s) %s and Weight (%s) %s do not fit: expected "
                             "[T, 3 * D] and [D, 3 * D]", rill_kin_name(ctx, RILL_GRU_IN_INPUT, 0),
                             rill_dims_str(&x->dims, s, sizeof s), rill_kin_name(ctx, RILL_GRU_IN_WEIGHT, 0),
                             rill_dims_str(&w->dims, s2, sizeof s2));
  g->rows = x->dims.d[0];
  g->D = w->dims.d[0];
  if (b && rill_tensor_numel(b) != 3 * g->D)
    return rill_kernel_error(ctx, "input Bias (%s) has shape %s, expected [1, %lld]",
                             rill_kin_name(ctx, RILL_GRU_IN_BIAS, 0), rill_dims_str(&b->dims, s, sizeof s),
                             (long long)(3 * g->D));
  if (x->lod.nlevels != 1)
    return rill_kernel_error(ctx, "input Input (%s) has %zu LoD levels, expected 1 (the sequences)",
                             rill_kin_name(ctx, RILL_GRU_IN_INPUT, 0), x->lod.nlevels);
  const rill_lod_level *lv = &x->lod.levels[0];
  if (lv->n < 1 || lv->offsets[lv->n - 1] != (uint64_t)g->rows)
    return rill_kernel_error(ctx, "input Input (%s): its LoD does not end at its %lld rows",
                             rill_kin_name(ctx, RILL_GRU_IN_INPUT, 0), (long long)g->rows);
  rill_dims sd = {.n = 2, .d = {(int64_t)lv->n - 1, g->D}};
  if (h0) RILL_TRY(rill_kin_check_dims(ctx, RILL_GRU_IN_H0, h0, &sd));
  return NULL;
}

_Static_assert(RILL_GRU_GRAD_OUT_COUNT == 4 && RILL_GRU_GRAD_OUT_INPUT_GRAD == 0 && RILL_GRU_GRAD_OUT_H0_GRAD == 1 &&
                   RILL_GRU_GRAD_OUT_WEIGHT_GRAD == 2 && RILL_GRU_GRAD_OUT_BIAS_GRAD == 3,
               "gru_grad's outputs are the gradients of its first four inputs, in their order");
/* The input each output of gru_grad is the gradient of (rill_kout_like's like_slot). */
static const size_t rill_gru_grad_wrt[RILL_GRU_GRAD_OUT_COUNT] = {RILL_GRU_GRAD_IN_INPUT, RILL_GRU_GRAD_IN_H0,
                                                                   RILL_GRU_GRAD_IN_WEIGHT, RILL_GRU_GRAD_IN_BIAS};

_Static_assert(RILL_SAME_POS(RILL_GRU_UNIT_IN_INPUT, RILL_GRU_UNIT_GRAD_IN_INPUT) &&
                   RILL_SAME_POS(RILL_GRU_UNIT_IN_HIDDEN_PREV, RILL_GRU_UNIT_GRAD_IN_HIDDEN_PREV) &&
                   RILL_SAME_POS(RILL_GRU_UNIT_IN_WEIGHT, RILL_GRU_UNIT_GRAD_IN_WEIGHT) &&
                   RILL_SAME_POS(RILL_GRU_UNIT_IN_BIAS, RILL_GRU_UNIT_GRAD_IN_BIAS),
               "gru_unit_grad's first inputs are gru_unit's");

/* gru_unit's Input [N, 3D], HiddenPrev [N, D], Weight [D, 3D] and Bias 3D elements
 * (inputs 0 to 3 of gru_unit and its gradient). */
static inline rill_status *rill_gru_unit_check(const rill_kernel_ctx *ctx, const rill_tensor *x,
                                               const rill_tensor *hp, const rill_tensor *w, const rill_tensor *b,
                                               int64_t *N, int64_t *D) {
  char a[RILL_DIMS_STR_MAX], c[RILL_DIMS_STR_MAX], e[RILL_DIMS_STR_MAX];
  if (x->dims.n != 2 || hp->dims.n != 2 || w->dims.n != 2 || x->dims.d[0] != hp->dims.d[0] ||
      w->dims.d[0] != hp->dims.d[1] || x->dims.d[1] != 3 * hp->dims.d[1] ||
      w->dims.d[1] != 3 * hp->dims.d[1])
    return rill_kernel_error(ctx, "inputs Input (%s) %s, HiddenPrev (%s) %s and Weight (%s) %s do "
                             "not fit: expected [N, 3 * D], [N, D] and [D, 3 * D]",
                             rill_kin_name(ctx, 0, 0), rill_dims_str(&x->dims, a, sizeof a),
                             rill_kin_name(ctx, 1, 0), rill_dims_str(&hp->dims, c, sizeof c),
                             rill_kin_name(ctx, 2, 0), rill_dims_str(&w->dims, e, sizeof e));
  *N = hp->dims.d[0];
  *D = hp->dims.d[1];
  if (b && rill_tensor_numel(b) != 3 * *D)
    return rill_kernel_error(ctx, "input Bias (%s) has shape %s, expected [1, %lld]",
                             rill_kin_name(ctx, 3, 0), rill_dims_str(&b->dims, a, sizeof a),
                             (long long)(3 * *D));
  return NULL;
}

_Static_assert(RILL_GRU_UNIT_GRAD_OUT_COUNT == 4 && RILL_GRU_UNIT_GRAD_OUT_INPUT_GRAD == 0 &&
                   RILL_GRU_UNIT_GRAD_OUT_HIDDEN_PREV_GRAD == 1 && RILL_GRU_UNIT_GRAD_OUT_WEIGHT_GRAD == 2 &&
                   RILL_GRU_UNIT_GRAD_OUT_BIAS_GRAD == 3,
               "gru_unit_grad's outputs are the gradients of its first four inputs, in their order");
/* The input each output of gru_unit_grad is the gradient of (rill_kout_like's like_slot). */
static const size_t rill_gru_unit_grad_wrt[RILL_GRU_UNIT_GRAD_OUT_COUNT] = {
    RILL_GRU_UNIT_GRAD_IN_INPUT, RILL_GRU_UNIT_GRAD_IN_HIDDEN_PREV, RILL_GRU_UNIT_GRAD_IN_WEIGHT,
    RILL_GRU_UNIT_GRAD_IN_BIAS};

#endif
