/* linear_chain_crf CPU kernels (float32 and float64, computed in float64).
 *
 * Forward, per sequence of L rows x[k][.] with labels y: alpha[0][i] = exp(w[0][i]) *
 * xe[0][i], alpha[k][j] = xe[k][j] * sum_i alpha[k-1][i] exp(w[2+i][j]), each row scaled
 * to sum 1 as it is made (xe = exp(x - the row's maximum), so nothing overflows), and
 * log Z = sum_k (rowmax[k] + log(scale_k)) + log(sum_i alpha[L-1][i] exp(w[1][i])). The
 * output is log Z - (w[0][y0] + w[1][y_last] + sum_k x[k][y_k] + sum_k w[2+y_k-1][y_k]).
 *
 * Gradient: backward vectors beta[L-1][i] = exp(w[1][i]), beta[k][i] = sum_j exp(w[2+i][j])
 * xe[k+1][j] beta[k+1][j] (scaled like alpha). The tag marginals are alpha * beta per
 * row, normalised; the pair marginals at step k are alpha[k-1][i] exp(w[2+i][j]) xe[k][j]
 * beta[k][j], normalised over (i, j). The gradients are marginals minus the label's
 * counts, times the sequence's LogLikelihood@GRAD. */
#include <math.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/crf.h"

rill_status *rill_crf_f64(rill_kernel_ctx *ctx, const rill_tensor *t, const char *what,
                          const double **v, double **owned) {
  *owned = NULL;
  if (t->dtype == RILL_DTYPE_FP64) {
    *v = rill_tensor_ptr(t);
    return NULL;
  }
  int64_t n = rill_tensor_numel(t);
  double *c = rill_malloc((size_t)(n > 0 ? n : 1) * sizeof *c);
  if (!c) return rill_kernel_error(ctx, "out of memory for a float64 copy of %s (%lld values)", what, (long long)n);
  const float *f = rill_tensor_ptr(t);
  for (int64_t i = 0; i < n; i++) c[i] = f[i];
  *v = *owned = c;
  return NULL;
}

void rill_crf_store(rill_tensor *t, const double *v, int64_t n) {
  if (t->dtype == RILL_DTYPE_FP64) {
    memcpy(rill_tensor_ptr(t), v, (size_t)n * sizeof *v);
    return;
  }
  float *f = rill_tensor_ptr(t);
  for (int64_t i = 0; i < n; i++) f[i] = (float)v[i];
}

rill_status *rill_crf_layout_of(rill_kernel_ctx *ctx, size_t lod_slot, rill_crf_layout *l) {
  rill_tensor *e = rill_kin(ctx, RILL_CRF_EMISSION, 0), *w = rill_kin(ctx, RILL_CRF_TRANSITION, 0);
  rill_tensor *len = rill_kin(ctx, RILL_CRF_LENGTH, 0), *lab = rill_kin(ctx, RILL_CRF_LABEL, 0);
  const char *en = rill_kin_name(ctx, RILL_CRF_EMISSION, 0);
  char s[RILL_DIMS_STR_MAX];
  memset(l, 0, sizeof *l);
  if (!e || !rill_tensor_is_set(e) || (e->dtype != RILL_DTYPE_FP32 && e->dtype != RILL_DTYPE_FP64))
    return rill_kernel_error(ctx, "input Emission (%s) must be a float32 or float64 tensor with data", en);
  if (e->dims.n != (len ? 3 : 2))
    return rill_kernel_error(ctx, "input Emission (%s) has shape %s, expected %s", en,
                             rill_dims_str(&e->dims, s, sizeof s),
                             len ? "[N, S, D] (it has Length)" : "[T, D] (without Length)");
  l->d = e->dims.d[e->dims.n - 1];
  l->rows = e->dims.n == 3 ? e->dims.d[0] * e->dims.d[1] : e->dims.d[0];
  if (!w || !rill_tensor_is_set(w) || w->dtype != e->dtype || w->dims.n != 2 || w->dims.d[1] != l->d ||
      w->dims.d[0] != l->d + 2)
    return rill_kernel_error(ctx, "input Transition (%s) must be %s [%lld, %lld] (D + 2 rows for "
                             "Emission's %lld tags)%s%s", rill_kin_name(ctx, RILL_CRF_TRANSITION, 0),
                             rill_dtype_name(e->dtype), (long long)(l->d + 2), (long long)l->d,
                             (long long)l->d, w && rill_tensor_is_set(w) ? ", it has shape " : "",
                             w && rill_tensor_is_set(w) ? rill_dims_str(&w->dims, s, sizeof s) : "");
  if (l->d < 1) return rill_kernel_error(ctx, "input Emission (%s) has no tags", en);
  if (len) {
    const char *ln = rill_kin_name(ctx, RILL_CRF_LENGTH, 0);
    if (!rill_tensor_is_set(len) || len->dtype != RILL_DTYPE_INT64 || rill_tensor_numel(len) != e->dims.d[0])
      return rill_kernel_error(ctx, "input Length (%s) must be int64 with one length per row of "
                               "Emission (%s, %lld rows)", ln, en, (long long)e->dims.d[0]);
    l->nseq = e->dims.d[0];
    l->stride = e->dims.d[1];
    l->lengths = rill_tensor_ptr(len);
    for (int64_t i = 0; i < l->nseq; i++)
      if (l->lengths[i] < 0 || l->lengths[i] > l->stride)
        return rill_kernel_error(ctx, "input Length (%s): length %lld of row %lld is outside "
                                 "[0, %lld], Emission's (%s) steps", ln, (long long)l->lengths[i],
                                 (long long)i, (long long)l->stride, en);
  } else {
    const rill_tensor *src = rill_kin(ctx, lod_slot, 0);
    size_t slot = lod_slot;
    if (!src || src->lod.nlevels == 0) src = e, slot = RILL_CRF_EMISSION;
    const char *sn = ctx->schema->inputs[slot].name, *vn = rill_kin_name(ctx, slot, 0);
    if (src->lod.nlevels == 0)
      return rill_kernel_error(ctx, "input %s (%s) has no LoD and there is no Length: the sequences "
                               "are unknown", sn, vn);
    const rill_lod_level *lv = &src->lod.levels[0];
    if (lv->n < 1 || lv->offsets[0] != 0 || lv->offsets[lv->n - 1] != (uint64_t)l->rows)
      return rill_kernel_error(ctx, "input %s (%s): its LoD does not cover Emission's (%s) %lld rows",
                               sn, vn, en, (long long)l->rows);
    for (size_t i = 0; i + 1 < lv->n; i++)
      if (lv->offsets[i + 1] < lv->offsets[i])
        return rill_kernel_error(ctx, "input %s (%s): LoD offsets decrease at %zu", sn, vn, i);
    l->nseq = (int64_t)lv->n - 1;
    l->offsets = lv->offsets;
  }
  if (lab) {
    if (!rill_tensor_is_set(lab) || lab->dtype != RILL_DTYPE_INT64 || rill_tensor_numel(lab) != l->rows)
      return rill_kernel_error(ctx, "input Label (%s) must be int64 with one tag per row of "
                               "Emission (%s, %lld rows)", rill_kin_name(ctx, RILL_CRF_LABEL, 0), en,
                               (long long)l->rows);
  }
  return NULL;
}

/* Scales v[0..n) to sum 1; false when the sum is not positive (underflow or NaN). */
static bool normalise(double *v, int64_t n, double *sum) {
  double s = 0;
  for (int64_t i = 0; i < n; i++) s += v[i];
  *sum = s;
  if (!(s > 0) || isinf(s)) return false;
  for (int64_t i = 0; i < n; i++) v[i] /= s;
  return true;
}

static rill_status *underflow(rill_kernel_ctx *ctx, int64_t seq, int64_t step, double sum) {
  return rill_kernel_error(ctx, "sequence %lld, step %lld: the scores sum to %g after scaling, so "
                           "the CRF's normaliser is not finite (inputs Emission %s, Transition %s)",
                           (long long)seq, (long long)step, sum, rill_kin_name(ctx, RILL_CRF_EMISSION, 0),
                           rill_kin_name(ctx, RILL_CRF_TRANSITION, 0));
}

static rill_status *check_labels(rill_kernel_ctx *ctx, const rill_crf_layout *l, const int64_t *y) {
  for (int64_t i = 0; i < l->nseq; i++) {
    int64_t start, n;
    rill_crf_seq(l, i, &start, &n);
    for (int64_t k = start; k < start + n; k++)
      if (y[k] < 0 || y[k] >= l->d)
        return rill_kernel_error(ctx, "input Label (%s): tag %lld at row %lld is outside [0, %lld)",
                                 rill_kin_name(ctx, RILL_CRF_LABEL, 0), (long long)y[k], (long long)k,
                                 (long long)l->d);
  }
  return NULL;
}

/* One sequence's forward pass over rows x, xe, alpha (L x D); returns the cost in *nll. */
static rill_status *forward_one(rill_kernel_ctx *ctx, int64_t seq, int64_t L, int64_t D, const double *x,
                                const double *rowmax, const double *xe, const double *w,
                                const double *we, const int64_t *y, double *alpha, double *nll) {
  double logz = 0, sum;
  for (int64_t i = 0; i < D; i++) alpha[i] = we[i] * xe[i];
  if (!normalise(alpha, D, &sum)) return underflow(ctx, seq, 0, sum);
  logz += rowmax[0] + log(sum);
  for (int64_t k = 1; k < L; k++) {
    const double *prev = alpha + (k - 1) * D;
    double *cur = alpha + k * D;
    for (int64_t j = 0; j < D; j++) {
      double acc = 0;
      for (int64_t i = 0; i < D; i++) acc += prev[i] * we[(2 + i) * D + j];
      cur[j] = xe[k * D + j] * acc;
    }
    if (!normalise(cur, D, &sum)) return underflow(ctx, seq, k, sum);
    logz += rowmax[k] + log(sum);
  }
  sum = 0;
  for (int64_t i = 0; i < D; i++) sum += alpha[(L - 1) * D + i] * we[D + i];
  if (!(sum > 0) || isinf(sum)) return underflow(ctx, seq, L, sum);
  logz += log(sum);
  double score = w[y[0]] + w[D + y[L - 1]];
  for (int64_t k = 0; k < L; k++) score += x[k * D + y[k]];
  for (int64_t k = 1; k < L; k++) score += w[(2 + y[k - 1]) * D + y[k]];
  *nll = logz - score;
  return NULL;
}

/* The layout, Emission, Transition and the checked labels, shared by the forward and
 * the gradient kernels. */
static rill_status *labelled_inputs(rill_kernel_ctx *ctx, rill_crf_layout *l, rill_tensor **e,
                                    rill_tensor **wt, const int64_t **y) {
  RILL_TRY(rill_crf_layout_of(ctx, RILL_CRF_LABEL, l));
  *e = rill_kin(ctx, RILL_CRF_EMISSION, 0);
  *wt = rill_kin(ctx, RILL_CRF_TRANSITION, 0);
  rill_tensor *lab = rill_kin(ctx, RILL_CRF_LABEL, 0);
  if (!lab) return rill_kernel_error(ctx, "needs input Label");
  *y = rill_tensor_ptr(lab);
  return check_labels(ctx, l, *y);
}

rill_status *rill_cpu_linear_chain_crf(rill_kernel_ctx *ctx) {
  rill_crf_layout l;
  rill_tensor *e, *wt;
  const int64_t *y;
  RILL_TRY(labelled_inputs(ctx, &l, &e, &wt, &y));
  rill_tensor *alpha_t = rill_kout(ctx, RILL_LINEAR_CHAIN_CRF_OUT_ALPHA, 0);
  rill_tensor *xe_t = rill_kout(ctx, RILL_LINEAR_CHAIN_CRF_OUT_EMISSION_EXPS, 0);
  rill_tensor *we_t = rill_kout(ctx, RILL_LINEAR_CHAIN_CRF_OUT_TRANSITION_EXPS, 0), *ll_t = NULL;
  rill_dtype dt = e->dtype;
  if (alpha_t) RILL_TRY(rill_kout_need(ctx, RILL_LINEAR_CHAIN_CRF_OUT_ALPHA, 0, dt, &alpha_t));
  if (xe_t) RILL_TRY(rill_kout_need(ctx, RILL_LINEAR_CHAIN_CRF_OUT_EMISSION_EXPS, 0, dt, &xe_t));
  if (we_t) RILL_TRY(rill_kout_need(ctx, RILL_LINEAR_CHAIN_CRF_OUT_TRANSITION_EXPS, 0, dt, &we_t));
  RILL_TRY(rill_kout_need(ctx, RILL_LINEAR_CHAIN_CRF_OUT_LOG_LIKELIHOOD, 0, dt, &ll_t));
  if (alpha_t) RILL_TRY(rill_kout_check_dims(ctx, RILL_LINEAR_CHAIN_CRF_OUT_ALPHA, 0, alpha_t, &e->dims));
  if (xe_t) RILL_TRY(rill_kout_check_dims(ctx, RILL_LINEAR_CHAIN_CRF_OUT_EMISSION_EXPS, 0, xe_t, &e->dims));
  if (we_t) RILL_TRY(rill_kout_check_dims(ctx, RILL_LINEAR_CHAIN_CRF_OUT_TRANSITION_EXPS, 0, we_t, &wt->dims));
  if (rill_tensor_numel(ll_t) != l.nseq)
    return rill_kernel_error(ctx, "output LogLikelihood (%s) holds %lld values for %lld sequences",
                             rill_kout_name(ctx, RILL_LINEAR_CHAIN_CRF_OUT_LOG_LIKELIHOOD, 0),
                             (long long)rill_tensor_numel(ll_t), (long long)l.nseq);
  const int64_t D = l.d, n = l.rows * D, nw = (D + 2) * D;
  const double *x, *w;
  double *xo = NULL, *wo = NULL;
  rill_status *st = rill_crf_f64(ctx, e, "Emission", &x, &xo);
  if (!st) st = rill_crf_f64(ctx, wt, "Transition", &w, &wo);
  double *buf = st ? NULL : rill_calloc((size_t)(2 * n + l.rows + nw + l.nseq + 1), sizeof(double));
  if (!st && !buf) st = rill_kernel_error(ctx, "out of memory for %lld rows of %lld tags", (long long)l.rows, (long long)D);
  if (st) goto out;
  double *alpha = buf, *xe = alpha + n, *rowmax = xe + n, *we = rowmax + l.rows, *nll = we + nw;
  for (int64_t r = 0; r < l.rows; r++) { /* every row, padding included, as Paddle does */
    const double *xr = x + r * D;
    double m = xr[0];
    for (int64_t i = 1; i < D; i++) m = xr[i] > m ? xr[i] : m;
    rowmax[r] = m;
    for (int64_t i = 0; i < D; i++) xe[r * D + i] = exp(xr[i] - m);
  }
  for (int64_t i = 0; i < nw; i++) we[i] = exp(w[i]);
  for (int64_t i = 0; i < l.nseq && !st; i++) {
    int64_t start, L;
    rill_crf_seq(&l, i, &start, &L);
    if (L == 0) continue; /* an empty sequence costs 0 */
    st = forward_one(ctx, i, L, D, x + start * D, rowmax + start, xe + start * D, w, we, y + start,
                     alpha + start * D, &nll[i]);
  }
  if (!st) {
    rill_crf_store(ll_t, nll, l.nseq);
    if (alpha_t) rill_crf_store(alpha_t, alpha, n);
    if (xe_t) rill_crf_store(xe_t, xe, n);
    if (we_t) rill_crf_store(we_t, we, nw);
  }
out:
  rill_free(buf);
  rill_free(xo);
  rill_free(wo);
  return st;
}

/* One sequence's gradients: adds into dx (L x D, zero on entry) and dw ((D + 2) x D). */
static rill_status *backward_one(rill_kernel_ctx *ctx, int64_t seq, int64_t L, int64_t D, double g,
                                 const double *alpha, const double *xe, const double *we,
                                 const int64_t *y, double *beta, double *dx, double *dw) {
  double sum;
  for (int64_t i = 0; i < D; i++) beta[(L - 1) * D + i] = we[D + i];
  if (!normalise(beta + (L - 1) * D, D, &sum)) return underflow(ctx, seq, L - 1, sum);
  for (int64_t k = L - 2; k >= 0; k--) {
    const double *next = beta + (k + 1) * D, *xn = xe + (k + 1) * D;
    for (int64_t i = 0; i < D; i++) {
      double acc = 0;
      for (int64_t j = 0; j < D; j++) acc += we[(2 + i) * D + j] * xn[j] * next[j];
      beta[k * D + i] = acc;
    }
    if (!normalise(beta + k * D, D, &sum)) return underflow(ctx, seq, k, sum);
  }
  for (int64_t k = 0; k < L; k++) { /* tag marginals */
    double z = 0;
    for (int64_t i = 0; i < D; i++) z += alpha[k * D + i] * beta[k * D + i];
    if (!(z > 0)) return underflow(ctx, seq, k, z);
    for (int64_t i = 0; i < D; i++) dx[k * D + i] = g * alpha[k * D + i] * beta[k * D + i] / z;
    dx[k * D + y[k]] -= g;
  }
  if (!dw) return NULL;
  for (int64_t i = 0; i < D; i++) {
    dw[i] += dx[i];
    dw[D + i] += dx[(L - 1) * D + i];
  }
  for (int64_t k = 1; k < L; k++) { /* pair marginals of steps k - 1, k */
    const double *a = alpha + (k - 1) * D, *b = beta + k * D, *xk = xe + k * D;
    double z = 0;
    for (int64_t i = 0; i < D; i++)
      for (int64_t j = 0; j < D; j++) z += a[i] * we[(2 + i) * D + j] * xk[j] * b[j];
    if (!(z > 0)) return underflow(ctx, seq, k, z);
    for (int64_t i = 0; i < D; i++)
      for (int64_t j = 0; j < D; j++) dw[(2 + i) * D + j] += g * a[i] * we[(2 + i) * D + j] * xk[j] * b[j] / z;
    dw[(2 + y[k - 1]) * D + y[k]] -= g;
  }
  return NULL;
}

rill_status *rill_cpu_linear_chain_crf_grad(rill_kernel_ctx *ctx) {
  rill_crf_layout l;
  rill_tensor *e, *wt;
  const int64_t *y;
  RILL_TRY(labelled_inputs(ctx, &l, &e, &wt, &y));
  rill_dtype dt = e->dtype;
  rill_tensor *alpha_t, *xe_t, *we_t, *g_t, *dx_t = NULL, *dw_t = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_LINEAR_CHAIN_CRF_GRAD_IN_ALPHA, 0, dt, &alpha_t));
  RILL_TRY(rill_kin_need(ctx, RILL_LINEAR_CHAIN_CRF_GRAD_IN_EMISSION_EXPS, 0, dt, &xe_t));
  RILL_TRY(rill_kin_need(ctx, RILL_LINEAR_CHAIN_CRF_GRAD_IN_TRANSITION_EXPS, 0, dt, &we_t));
  RILL_TRY(rill_kin_need(ctx, RILL_LINEAR_CHAIN_CRF_GRAD_IN_LOG_LIKELIHOOD_GRAD, 0, dt, &g_t));
  const int64_t D = l.d, n = l.rows * D, nw = (D + 2) * D;
  static const size_t sized[] = {RILL_LINEAR_CHAIN_CRF_GRAD_IN_ALPHA, RILL_LINEAR_CHAIN_CRF_GRAD_IN_EMISSION_EXPS,
                                 RILL_LINEAR_CHAIN_CRF_GRAD_IN_TRANSITION_EXPS,
                                 RILL_LINEAR_CHAIN_CRF_GRAD_IN_LOG_LIKELIHOOD_GRAD};
  const int64_t want[] = {n, n, nw, l.nseq};
  for (size_t k = 0; k < RILL_COUNTOF(sized); k++) {
    const rill_tensor *t = rill_kin(ctx, sized[k], 0);
    if (rill_tensor_numel(t) != want[k])
      return rill_kernel_error(ctx, "input %s (%s) holds %lld values, expected %lld",
                               ctx->schema->inputs[sized[k]].name, rill_kin_name(ctx, sized[k], 0),
                               (long long)rill_tensor_numel(t), (long long)want[k]);
  }
  if (rill_kout(ctx, RILL_LINEAR_CHAIN_CRF_GRAD_OUT_EMISSION_GRAD, 0)) {
    RILL_TRY(rill_kout_need(ctx, RILL_LINEAR_CHAIN_CRF_GRAD_OUT_EMISSION_GRAD, 0, dt, &dx_t));
    RILL_TRY(rill_kout_check_dims(ctx, RILL_LINEAR_CHAIN_CRF_GRAD_OUT_EMISSION_GRAD, 0, dx_t, &e->dims));
  }
  if (rill_kout(ctx, RILL_LINEAR_CHAIN_CRF_GRAD_OUT_TRANSITION_GRAD, 0)) {
    RILL_TRY(rill_kout_need(ctx, RILL_LINEAR_CHAIN_CRF_GRAD_OUT_TRANSITION_GRAD, 0, dt, &dw_t));
    RILL_TRY(rill_kout_check_dims(ctx, RILL_LINEAR_CHAIN_CRF_GRAD_OUT_TRANSITION_GRAD, 0, dw_t, &wt->dims));
  }
  if (!dx_t && !dw_t) return NULL;
  const double *alpha, *xe, *we, *g;
  double *owned[4] = {NULL, NULL, NULL, NULL};
  rill_status *st = rill_crf_f64(ctx, alpha_t, "Alpha", &alpha, &owned[0]);
  if (!st) st = rill_crf_f64(ctx, xe_t, "EmissionExps", &xe, &owned[1]);
  if (!st) st = rill_crf_f64(ctx, we_t, "TransitionExps", &we, &owned[2]);
  if (!st) st = rill_crf_f64(ctx, g_t, "LogLikelihood@GRAD", &g, &owned[3]);
  double *buf = st ? NULL : rill_calloc((size_t)(2 * n + nw + 1), sizeof(double));
  if (!st && !buf) st = rill_kernel_error(ctx, "out of memory for %lld rows of %lld tags", (long long)l.rows, (long long)D);
  if (st) goto out;
  double *dx = buf, *beta = dx + n, *dw = beta + n;
  for (int64_t i = 0; i < l.nseq && !st; i++) {
    int64_t start, L;
    rill_crf_seq(&l, i, &start, &L);
    if (L == 0) continue;
    st = backward_one(ctx, i, L, D, g[i], alpha + start * D, xe + start * D, we, y + start,
                      beta + start * D, dx + start * D, dw_t ? dw : NULL);
  }
  if (!st) {
    if (dx_t) rill_crf_store(dx_t, dx, n);
    if (dw_t) rill_crf_store(dw_t, dw, nw);
  }
out:
  rill_free(buf);
  for (size_t k = 0; k < 4; k++) rill_free(owned[k]);
  return st;
}
