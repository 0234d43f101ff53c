/* warpctc and warpctc_grad CPU kernels (operators/warpctc.c): per sequence, the softmax of
 * each frame, then the CTC forward (alpha) and backward (beta) variables over the label
 * extended with blanks, in log space and double precision, whatever the element type.
 * With alpha_t(s) including frame t's emission and beta_t(s) only the frames after t,
 * p = alpha_{T-1}(S-1) + alpha_{T-1}(S-2), Loss = -log p, and the gradient of Loss with
 * respect to the scores of frame t is y_t(k) - sum_{s: l'(s) = k} alpha_t(s) beta_t(s) / p. */
#include <math.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/kernels.h"

static double ctc_ld(const rill_tensor *t, int64_t i) {
  return t->dtype == RILL_DTYPE_FP32 ? ((const float *)rill_tensor_ptr(t))[i]
                                     : ((const double *)rill_tensor_ptr(t))[i];
}

static void ctc_st(rill_tensor *t, int64_t i, double v) {
  if (t->dtype == RILL_DTYPE_FP32)
    ((float *)rill_tensor_ptr(t))[i] = (float)v;
  else
    ((double *)rill_tensor_ptr(t))[i] = v;
}

/* log(e^a + e^b), exact at -inf. */
static double ctc_lse(double a, double b) {
  if (a == -INFINITY) return b;
  if (b == -INFINITY) return a;
  return a > b ? a + log1p(exp(b - a)) : b + log1p(exp(a - b));
}

/* The sequences: frames and labels of sequence n. */
typedef struct ctc_seqs {
  int64_t N, C, Tmax;
  bool padded;
  const rill_tensor *x, *label;
  const uint64_t *xoff, *loff; /* LoD form */
  const int64_t *xlen, *llen;  /* padded form */
  int64_t lwidth;              /* padded Label's columns */
} ctc_seqs;

static int64_t ctc_frames(const ctc_seqs *q, int64_t n) {
  return q->padded ? q->xlen[n] : (int64_t)(q->xoff[n + 1] - q->xoff[n]);
}

static int64_t ctc_labels(const ctc_seqs *q, int64_t n) {
  return q->padded ? q->llen[n] : (int64_t)(q->loff[n + 1] - q->loff[n]);
}

/* Element (t, k) of sequence n in Logits. */
static int64_t ctc_xat(const ctc_seqs *q, int64_t n, int64_t t, int64_t k) {
  return q->padded ? (t * q->N + n) * q->C + k : ((int64_t)q->xoff[n] + t) * q->C + k;
}

static int32_t ctc_label(const ctc_seqs *q, int64_t n, int64_t i) {
  const int32_t *l = rill_tensor_ptr(q->label);
  return q->padded ? l[n * q->lwidth + i] : l[q->loff[n] + (uint64_t)i];
}

static rill_status *ctc_check_len(const rill_kernel_ctx *ctx, size_t slot, const rill_tensor *t,
                                  int64_t N) {
  if (!t || !rill_tensor_is_set(t) || t->dtype != RILL_DTYPE_INT64 || rill_tensor_numel(t) != N)
    return rill_kernel_error(ctx, "input %s (%s) must be int64 with one length per sequence (%lld)",
                             ctx->schema->inputs[slot].name, rill_kin_name(ctx, slot, 0), (long long)N);
  return NULL;
}

/* Reads the layout of Logits and Label (and the lengths) and checks every bound. */
static rill_status *ctc_seqs_of(const rill_kernel_ctx *ctx, ctc_seqs *q, bool labels) {
  memset(q, 0, sizeof *q);
  const rill_tensor *x = rill_kin(ctx, RILL_WARPCTC_IN_LOGITS, 0);
  const rill_tensor *xl = rill_kin(ctx, RILL_WARPCTC_IN_LOGITS_LENGTH, 0);
  const rill_tensor *ll = labels ? rill_kin(ctx, RILL_WARPCTC_IN_LABEL_LENGTH, 0) : NULL;
  const char *xn = rill_kin_name(ctx, RILL_WARPCTC_IN_LOGITS, 0);
  char s[RILL_DIMS_STR_MAX];
  q->x = x;
  q->padded = xl != NULL;
  if (labels && (xl != NULL) != (ll != NULL))
    return rill_kernel_error(ctx, "needs both LogitsLength and LabelLength, or neither");
  if (q->padded) {
    if (x->dims.n != 3)
      return rill_kernel_error(ctx, "input Logits (%s) has shape %s, expected [Tmax, N, C] "
                               "(LogitsLength is given)", xn, rill_dims_str(&x->dims, s, sizeof s));
    q->Tmax = x->dims.d[0];
    q->N = x->dims.d[1];
    q->C = x->dims.d[2];
    RILL_TRY(ctc_check_len(ctx, RILL_WARPCTC_IN_LOGITS_LENGTH, xl, q->N));
    q->xlen = rill_tensor_ptr(xl);
    for (int64_t n = 0; n < q->N; n++)
      if (q->xlen[n] < 0 || q->xlen[n] > q->Tmax)
        return rill_kernel_error(ctx, "input LogitsLength (%s): sequence %lld has %lld frames, "
                                 "outside [0, %lld] (Logits (%s) dim 0)",
                                 rill_kin_name(ctx, RILL_WARPCTC_IN_LOGITS_LENGTH, 0), (long long)n,
                                 (long long)q->xlen[n], (long long)q->Tmax, xn);
  } else {
    if (x->dims.n != 2 || x->lod.nlevels == 0)
      return rill_kernel_error(ctx, "input Logits (%s) %s needs shape [Lp, C] and one LoD level "
                               "(or give LogitsLength and LabelLength)", xn,
                               rill_dims_str(&x->dims, s, sizeof s));
    RILL_TRY(rill_lod_check(&x->lod, x->dims.d[0]));
    const rill_lod_level *lv = &x->lod.levels[0];
    q->N = (int64_t)lv->n - 1;
    q->C = x->dims.d[1];
    q->xoff = lv->offsets;
    for (int64_t n = 0; n < q->N; n++)
      if (ctc_frames(q, n) > q->Tmax) q->Tmax = ctc_frames(q, n);
  }
  if (!labels) return NULL;
  const rill_tensor *l = rill_kin(ctx, RILL_WARPCTC_IN_LABEL, 0);
  const char *ln = rill_kin_name(ctx, RILL_WARPCTC_IN_LABEL, 0);
  if (!l || !rill_tensor_is_set(l) || l->dtype != RILL_DTYPE_INT32)
    return rill_kernel_error(ctx, "input Label (%s) must be an int32 tensor with data", ln);
  q->label = l;
  if (q->padded) {
    if (l->dims.n != 2 || l->dims.d[0] != q->N)
      return rill_kernel_error(ctx, "input Label (%s) has shape %s, expected [%lld, Lmax]", ln,
                               rill_dims_str(&l->dims, s, sizeof s), (long long)q->N);
    q->lwidth = l->dims.d[1];
    RILL_TRY(ctc_check_len(ctx, RILL_WARPCTC_IN_LABEL_LENGTH, ll, q->N));
    q->llen = rill_tensor_ptr(ll);
    for (int64_t n = 0; n < q->N; n++)
      if (q->llen[n] < 0 || q->llen[n] > q->lwidth)
        return rill_kernel_error(ctx, "input LabelLength (%s): sequence %lld has %lld labels, "
                                 "outside [0, %lld] (Label (%s) columns)",
                                 rill_kin_name(ctx, RILL_WARPCTC_IN_LABEL_LENGTH, 0), (long long)n,
                                 (long long)q->llen[n], (long long)q->lwidth, ln);
  } else {
    if (l->dims.n != 2 || l->dims.d[1] != 1 || l->lod.nlevels == 0)
      return rill_kernel_error(ctx, "input Label (%s) %s needs shape [Lg, 1] and one LoD level", ln,
                               rill_dims_str(&l->dims, s, sizeof s));
    RILL_TRY(rill_lod_check(&l->lod, l->dims.d[0]));
    if ((int64_t)l->lod.levels[0].n - 1 != q->N)
      return rill_kernel_error(ctx, "input Label (%s) has %zu sequences but Logits (%s) has %lld", ln,
                               l->lod.levels[0].n - 1, xn, (long long)q->N);
    q->loff = l->lod.levels[0].offsets;
  }
  int64_t blank = ctx->attrs[RILL_WARPCTC_ATTR_BLANK].v.i;
  if (blank < 0 || blank >= q->C)
    return rill_kernel_error(ctx, "attribute blank is %lld, outside [0, %lld) (the classes of "
                             "Logits (%s))", (long long)blank, (long long)q->C, xn);
  for (int64_t n = 0; n < q->N; n++)
    for (int64_t i = 0; i < ctc_labels(q, n); i++) {
      int32_t v = ctc_label(q, n, i);
      if (v < 0 || v >= q->C)
        return rill_kernel_error(ctx, "input Label (%s): label %d of sequence %lld is outside "
                                 "[0, %lld) (the classes of Logits (%s))", ln, v, (long long)n,
                                 (long long)q->C, xn);
    }
  return NULL;
}

/* Sequence n: its loss, and its gradient into g ([Tmax, N, C], zero on entry). work holds
 * T * (C + 2S) doubles. */
static double ctc_sequence(const ctc_seqs *q, int64_t n, int64_t blank, rill_tensor *g,
                           double *work) {
  int64_t T = ctc_frames(q, n), L = ctc_labels(q, n), C = q->C, S = 2 * L + 1;
  int64_t repeats = 0;
  for (int64_t i = 1; i < L; i++) repeats += ctc_label(q, n, i) == ctc_label(q, n, i - 1);
  if (T == 0 || L + repeats > T) return 0.0;
  double *ly = work, *alpha = ly + T * C, *beta = alpha + T * S;
  for (int64_t t = 0; t < T; t++) { /* log softmax of each frame */
    double m = -INFINITY, sum = 0;
    for (int64_t k = 0; k < C; k++) m = fmax(m, ctc_ld(q->x, ctc_xat(q, n, t, k)));
    for (int64_t k = 0; k < C; k++) sum += exp(ctc_ld(q->x, ctc_xat(q, n, t, k)) - m);
    for (int64_t k = 0; k < C; k++) ly[t * C + k] = ctc_ld(q->x, ctc_xat(q, n, t, k)) - m - log(sum);
  }
#define EXT(s) ((s) % 2 ? (int64_t)ctc_label(q, n, (s) / 2) : blank)
  for (int64_t i = 0; i < T * S; i++) alpha[i] = beta[i] = -INFINITY;
  alpha[0] = ly[blank];
  if (S > 1) alpha[1] = ly[EXT(1)];
  for (int64_t t = 1; t < T; t++)
    for (int64_t s = 0; s < S; s++) {
      const double *pa = alpha + (t - 1) * S;
      double v = pa[s];
      if (s >= 1) v = ctc_lse(v, pa[s - 1]);
      if (s >= 2 && s % 2 && EXT(s) != EXT(s - 2)) v = ctc_lse(v, pa[s - 2]);
      alpha[t * S + s] = v == -INFINITY ? v : v + ly[t * C + EXT(s)];
    }
  beta[(T - 1) * S + S - 1] = 0;
  if (S > 1) beta[(T - 1) * S + S - 2] = 0;
  for (int64_t t = T - 2; t >= 0; t--)
    for (int64_t s = 0; s < S; s++) {
      const double *nb = beta + (t + 1) * S, *ny = ly + (t + 1) * C;
      double v = nb[s] + ny[EXT(s)];
      if (s + 1 < S) v = ctc_lse(v, nb[s + 1] + ny[EXT(s + 1)]);
      if (s + 2 < S && (s + 2) % 2 && EXT(s + 2) != EXT(s)) v = ctc_lse(v, nb[s + 2] + ny[EXT(s + 2)]);
      beta[t * S + s] = v;
    }
  double logp = alpha[(T - 1) * S + S - 1];
  if (S > 1) logp = ctc_lse(logp, alpha[(T - 1) * S + S - 2]);
  double *occ = ly + T * C + 2 * T * S; /* C doubles past the variables */
  for (int64_t t = 0; t < T; t++) {
    for (int64_t k = 0; k < C; k++) occ[k] = -INFINITY;
    for (int64_t s = 0; s < S; s++)
      occ[EXT(s)] = ctc_lse(occ[EXT(s)], alpha[t * S + s] + beta[t * S + s]);
    for (int64_t k = 0; k < C; k++)
      ctc_st(g, (t * q->N + n) * C + k, exp(ly[t * C + k]) - exp(occ[k] - logp));
  }
#undef EXT
  return -logp;
}

static rill_status *ctc_run(rill_kernel_ctx *ctx, rill_dtype dt) {
  rill_tensor *x = NULL, *g = rill_kout(ctx, RILL_WARPCTC_OUT_WARP_CTC_GRAD, 0);
  rill_tensor *loss = rill_kout(ctx, RILL_WARPCTC_OUT_LOSS, 0);
  RILL_TRY(rill_kin_need(ctx, RILL_WARPCTC_IN_LOGITS, 0, dt, &x));
  if (!g || !loss) return rill_kernel_error(ctx, "needs outputs WarpCTCGrad and Loss");
  ctc_seqs q;
  RILL_TRY(ctc_seqs_of(ctx, &q, true));
  rill_dims gd = {.n = 3, .d = {q.Tmax, q.N, q.C}}, ld = {.n = 2, .d = {q.N, 1}};
  RILL_TRY(rill_tensor_alloc(g, dt, &gd));
  RILL_TRY(rill_tensor_alloc(loss, dt, &ld));
  rill_lod_clear(&g->lod);
  rill_lod_clear(&loss->lod);
  memset(rill_tensor_ptr(g), 0, (size_t)rill_tensor_numel(g) * rill_dtype_size(dt));
  int64_t lmax = 0;
  for (int64_t n = 0; n < q.N; n++) lmax = ctc_labels(&q, n) > lmax ? ctc_labels(&q, n) : lmax;
  size_t nw = (size_t)(q.Tmax * (q.C + 2 * (2 * lmax + 1)) + q.C + 1);
  double *work = rill_malloc(nw * sizeof *work);
  if (!work) return rill_oom();
  int64_t blank = ctx->attrs[RILL_WARPCTC_ATTR_BLANK].v.i;
  for (int64_t n = 0; n < q.N; n++) ctc_st(loss, n, ctc_sequence(&q, n, blank, g, work));
  rill_free(work);
  return NULL;
}

rill_status *rill_cpu_warpctc_fp32(rill_kernel_ctx *ctx) { return ctc_run(ctx, RILL_DTYPE_FP32); }
rill_status *rill_cpu_warpctc_fp64(rill_kernel_ctx *ctx) { return ctc_run(ctx, RILL_DTYPE_FP64); }

static rill_status *ctc_grad_run(rill_kernel_ctx *ctx, rill_dtype dt) {
  rill_tensor *wg = NULL, *x = NULL, *dl = NULL, *dx = NULL;
  if (!rill_kout(ctx, RILL_WARPCTC_GRAD_OUT_LOGITS_GRAD, 0)) return NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_WARPCTC_GRAD_IN_WARP_CTC_GRAD, 0, dt, &wg));
  RILL_TRY(rill_kin_need(ctx, RILL_WARPCTC_GRAD_IN_LOGITS, 0, dt, &x));
  RILL_TRY(rill_kin_need(ctx, RILL_WARPCTC_GRAD_IN_LOSS_GRAD, 0, dt, &dl));
  RILL_TRY(rill_kout_need(ctx, RILL_WARPCTC_GRAD_OUT_LOGITS_GRAD, 0, dt, &dx));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_WARPCTC_GRAD_OUT_LOGITS_GRAD, 0, dx, &x->dims));
  const rill_tensor *xl = rill_kin(ctx, RILL_WARPCTC_GRAD_IN_LOGITS_LENGTH, 0);
  char s[RILL_DIMS_STR_MAX];
  int64_t N, C = x->dims.n ? x->dims.d[x->dims.n - 1] : 0, Tmax = 0;
  const uint64_t *off = NULL;
  const int64_t *len = NULL;
  if (xl) {
    if (x->dims.n != 3)
      return rill_kernel_error(ctx, "input Logits (%s) has shape %s, expected [Tmax, N, C]",
                               rill_kin_name(ctx, RILL_WARPCTC_GRAD_IN_LOGITS, 0),
                               rill_dims_str(&x->dims, s, sizeof s));
    Tmax = x->dims.d[0];
    N = x->dims.d[1];
    RILL_TRY(ctc_check_len(ctx, RILL_WARPCTC_GRAD_IN_LOGITS_LENGTH, xl, N));
    len = rill_tensor_ptr(xl);
  } else {
    if (x->dims.n != 2 || x->lod.nlevels == 0)
      return rill_kernel_error(ctx, "input Logits (%s) needs one LoD level",
                               rill_kin_name(ctx, RILL_WARPCTC_GRAD_IN_LOGITS, 0));
    RILL_TRY(rill_lod_check(&x->lod, x->dims.d[0]));
    N = (int64_t)x->lod.levels[0].n - 1;
    off = x->lod.levels[0].offsets;
    for (int64_t n = 0; n < N; n++)
      if ((int64_t)(off[n + 1] - off[n]) > Tmax) Tmax = (int64_t)(off[n + 1] - off[n]);
  }
  rill_dims gd = {.n = 3, .d = {Tmax, N, C}}, ld = {.n = 2, .d = {N, 1}};
  RILL_TRY(rill_kin_check_dims(ctx, RILL_WARPCTC_GRAD_IN_WARP_CTC_GRAD, wg, &gd));
  RILL_TRY(rill_kin_check_dims(ctx, RILL_WARPCTC_GRAD_IN_LOSS_GRAD, dl, &ld));
  bool norm = ctx->attrs[RILL_WARPCTC_GRAD_ATTR_NORM_BY_TIMES].v.b;
  for (int64_t n = 0; n < N; n++) {
    int64_t T = xl ? len[n] : (int64_t)(off[n + 1] - off[n]);
    double scale = ctc_ld(dl, n) * (norm && T > 0 ? 1.0 / (double)T : 1.0);
    int64_t tend = xl ? Tmax : T;
    for (int64_t t = 0; t < tend; t++)
      for (int64_t k = 0; k < C; k++) {
        int64_t dst = xl ? (t * N + n) * C + k : ((int64_t)off[n] + t) * C + k;
        ctc_st(dx, dst, ctc_ld(wg, (t * N + n) * C + k) * scale);
      }
  }
  return NULL;
}

rill_status *rill_cpu_warpctc_grad_fp32(rill_kernel_ctx *ctx) { return ctc_grad_run(ctx, RILL_DTYPE_FP32); }
rill_status *rill_cpu_warpctc_grad_fp64(rill_kernel_ctx *ctx) { return ctc_grad_run(ctx, RILL_DTYPE_FP64); }
