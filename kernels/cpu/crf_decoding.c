/* crf_decoding CPU kernel (float32 and float64 scores, compared in float64): Viterbi over
 * each sequence. best[0][j] = w[0][j] + x[0][j]; best[k][j] = max_i (best[k-1][i] +
 * w[2+i][j]) + x[k][j], remembering the first i reaching the maximum; the last tag is the
 * first maximiser of best[L-1][j] + w[1][j], and the rest follow the remembered links. */
#include <float.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/crf.h"

static void viterbi(int64_t L, int64_t D, const double *x, const double *w, double *best,
                    int32_t *from, int64_t *path) {
  for (int64_t j = 0; j < D; j++) best[j] = w[j] + x[j];
  for (int64_t k = 1; k < L; k++) {
    for (int64_t j = 0; j < D; j++) {
      double top = -DBL_MAX;
      int32_t arg = 0;
      for (int64_t i = 0; i < D; i++) {
        double s = best[(k - 1) * D + i] + w[(2 + i) * D + j];
        if (s > top) top = s, arg = (int32_t)i;
      }
      best[k * D + j] = top + x[k * D + j];
      from[k * D + j] = arg;
    }
  }
  double top = -DBL_MAX;
  int32_t last = 0;
  for (int64_t j = 0; j < D; j++) {
    double s = best[(L - 1) * D + j] + w[D + j];
    if (s > top) top = s, last = (int32_t)j;
  }
  path[L - 1] = last;
  for (int64_t k = L - 1; k >= 1; k--) path[k - 1] = last = from[k * D + last];
}

rill_status *rill_cpu_crf_decoding(rill_kernel_ctx *ctx) {
  rill_crf_layout l;
  RILL_TRY(rill_crf_layout_of(ctx, RILL_CRF_EMISSION, &l));
  rill_tensor *e = rill_kin(ctx, RILL_CRF_EMISSION, 0), *wt = rill_kin(ctx, RILL_CRF_TRANSITION, 0);
  rill_tensor *lab = rill_kin(ctx, RILL_CRF_LABEL, 0), *out = NULL;
  if (!l.lengths && e->lod.nlevels != 1)
    return rill_kernel_error(ctx, "input Emission (%s) has %zu LoD levels, expected 1 (or give Length)",
                             rill_kin_name(ctx, RILL_CRF_EMISSION, 0), e->lod.nlevels);
  RILL_TRY(rill_kout_need(ctx, RILL_CRF_DECODING_OUT_VITERBI_PATH, 0, RILL_DTYPE_INT64, &out));
  rill_dims want = {.n = 2, .d = {e->dims.d[0], l.lengths ? e->dims.d[1] : 1}};
  RILL_TRY(rill_kout_check_dims(ctx, RILL_CRF_DECODING_OUT_VITERBI_PATH, 0, out, &want));
  int64_t *path = rill_tensor_ptr(out);
  const int64_t D = l.d;
  memset(path, 0, (size_t)l.rows * sizeof *path);
  const double *x, *w;
  double *xo = NULL, *wo = NULL;
  rill_status *st = rill_crf_f64(ctx, e, "Emission", &x, &xo);
  if (!st) st = rill_crf_f64(ctx, wt, "Transition", &w, &wo);
  int64_t longest = 0;
  for (int64_t i = 0; i < l.nseq; i++) {
    int64_t start, L;
    rill_crf_seq(&l, i, &start, &L);
    longest = L > longest ? L : longest;
  }
  double *best = st ? NULL : rill_malloc((size_t)(longest * D + 1) * sizeof *best);
  int32_t *from = st ? NULL : rill_malloc((size_t)(longest * D + 1) * sizeof *from);
  if (!st && (!best || !from))
    st = rill_kernel_error(ctx, "out of memory for a sequence of %lld steps and %lld tags",
                           (long long)longest, (long long)D);
  for (int64_t i = 0; i < l.nseq && !st; i++) {
    int64_t start, L;
    rill_crf_seq(&l, i, &start, &L);
    if (L > 0) viterbi(L, D, x + start * D, w, best, from, path + start);
  }
  if (!st && lab) { /* 1 where the decoded tag is the label; padding stays 0 */
    const int64_t *y = rill_tensor_ptr(lab);
    for (int64_t i = 0; i < l.nseq; i++) {
      int64_t start, L;
      rill_crf_seq(&l, i, &start, &L);
      for (int64_t k = start; k < start + L; k++) path[k] = path[k] == y[k];
    }
  }
  rill_free(best);
  rill_free(from);
  rill_free(xo);
  rill_free(wo);
  return st;
}
