/* The linear-chain CRF by enumeration, for the CRF op tests: every tag path of a short
 * sequence is scored, so log Z is a log-sum-exp over all of them and the Viterbi path the
 * one of highest score (the tests' scores have no ties). */
#ifndef RILL_TESTS_OPERATORS_CRF_TEST_H
#define RILL_TESTS_OPERATORS_CRF_TEST_H

#include <math.h>
#include <stdint.h>

#include "op_test.h"

#define CRF_MAX_STEPS 8

/* Binds a copy of v to `slot` as variable `name`, with sequences lod[0..nlod) as its one
 * LoD level. */
static inline void crf_bind_seqs(op_harness *h, const uint64_t *lod, size_t nlod, const char *slot,
                                 const char *name, rill_dtype dt, const int64_t *dims, size_t nd,
                                 const void *v) {
  rill_tensor *t = op_harness_make(dt, dims, nd, v);
  cr_assert_not_null(t);
  const uint64_t *levels[1] = {lod};
  size_t counts[1] = {nlod};
  OK(rill_tensor_set_lod(t, 1, levels, counts));
  OK(op_harness_input(h, slot, name, t));
  op_harness_free_tensor(t);
}

/* Score of tags p[0..L) for emissions x [L, D] and transition w [D + 2, D]. */
static inline double crf_path_score(const double *x, const double *w, int64_t D, int64_t L,
                                    const int64_t *p) {
  double s = w[p[0]] + w[D + p[L - 1]];
  for (int64_t k = 0; k < L; k++) s += x[k * D + p[k]];
  for (int64_t k = 1; k < L; k++) s += w[(2 + p[k - 1]) * D + p[k]];
  return s;
}

/* log Z - score(y) and the best path of one sequence. */
static inline void crf_enumerate(const double *x, const double *w, int64_t D, int64_t L,
                                 const int64_t *y, double *nll, int64_t *best) {
  int64_t p[CRF_MAX_STEPS] = {0}, total = 1;
  for (int64_t k = 0; k < L; k++) total *= D;
  double top = -INFINITY, m = -INFINITY, acc = 0;
  for (int64_t c = 0; c < total; c++) {
    for (int64_t k = L - 1, r = c; k >= 0; k--, r /= D) p[k] = r % D;
    double s = crf_path_score(x, w, D, L, p);
    if (s > top) {
      top = s;
      for (int64_t k = 0; k < L; k++) best[k] = p[k];
    }
    if (s > m) {
      acc = acc * exp(m - s) + 1;
      m = s;
    } else {
      acc += exp(s - m);
    }
  }
  if (nll) *nll = m + log(acc) - (y ? crf_path_score(x, w, D, L, y) : 0);
}

#endif
