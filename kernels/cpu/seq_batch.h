/* The sequence-to-batch reordering of Paddle's dynamic recurrent ops (lstm, gru), its
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
#ifndef RILL_KERNELS_CPU_SEQ_BATCH_H
#define RILL_KERNELS_CPU_SEQ_BATCH_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "framework/registry/registry.h"

typedef struct rill_seq_batch {
  int64_t nseq;    /* sequences, empty ones included */
  int64_t steps;   /* batches: the longest sequence's length */
  int64_t rows;    /* rows of the LoD tensor */
  int64_t *starts; /* [steps + 1] */
  int64_t *row;    /* [rows] */
  int64_t *order;  /* [nseq]: sorted by length, longest first; empty sequences last */
} rill_seq_batch;

/* Builds the batch order of `lv` (offsets of one LoD level ending at `rows`). */
rill_status *rill_seq_batch_make(const rill_lod_level *lv, int64_t rows, bool reverse,
                                 rill_seq_batch *out);
void rill_seq_batch_free(rill_seq_batch *b);

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
rill_status *rill_ract_parse(const rill_kernel_ctx *ctx, const char *attr, const char *name,
                             rill_ract *out);

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

#endif
