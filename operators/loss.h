/* kldiv_loss's reduction attribute, read the same way by its schema (operators/loss.c)
 * and its CPU kernels (kernels/cpu/loss.c). */
#ifndef RILL_OPERATORS_LOSS_H
#define RILL_OPERATORS_LOSS_H

#include <string.h>

enum { KLDIV_NONE, KLDIV_BATCHMEAN, KLDIV_MEAN, KLDIV_SUM };

/* KLDIV_* for Paddle's names 'none', 'batchmean', 'mean', 'sum'; -1 for any other. */
static inline int rill_kldiv_reduction(const char *s) {
  static const char *const names[] = {"none", "batchmean", "mean", "sum"};
  for (int i = 0; s && i < 4; i++)
    if (strcmp(s, names[i]) == 0) return i;
  return -1;
}

#endif
