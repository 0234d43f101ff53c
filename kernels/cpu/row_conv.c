/* row_conv CPU kernels: each sequence (LoD offsets, or the rows of a padded [B, T, D]
 * input) is walked step by step over its next k + 1 steps, in double. */
#include <string.h>

#include "kernels/cpu/grad_out.h"

typedef struct rc_geom {
  int64_t d, k1, nseq, seqlen; /* width, filter rows, sequences, padded length */
  const uint64_t *off;         /* LoD offsets (NULL when padded) */
} rc_geom;

static rill_status *rc_geometry(rill_kernel_ctx *ctx, const rill_tensor *x,
                                const rill_tensor *f, rc_geom *g) {
  memset(g, 0, sizeof *g);
  const char *xn = rill_kin_name(ctx, 0, 0);
  if (f->dims.n != 2 || (x->dims.n != 2 && x->dims.n != 3) ||
      f->dims.d[1] != x->dims.d[x->dims.n - 1] || f->dims.d[0] < 1)
    return rill_kernel_error(ctx, "inputs X (%s) and Filter (%s) must be [T, D] or [B, T, D] "
                             "and [context + 1, D]", xn, rill_kin_name(ctx, 1, 0));
  g->d = f->dims.d[1];
  g->k1 = f->dims.d[0];
  if (x->lod.nlevels) {
    const rill_lod_level *lv = &x->lod.levels[x->lod.nlevels - 1];
    int64_t rows = x->dims.d[0] * (x->dims.n == 3 ? x->dims.d[1] : 1);
    if (lv->n < 1 || lv->offsets[0] != 0 || lv->offsets[lv->n - 1] != (uint64_t)rows)
      return rill_kernel_error(ctx, "input X (%s): its last LoD level does not cover its %lld "
                               "rows", xn, (long long)rows);
    for (size_t k = 1; k < lv->n; k++)
      if (lv->offsets[k] < lv->offsets[k - 1])
        return rill_kernel_error(ctx, "input X (%s): its LoD offsets decrease at %zu", xn, k);
    g->off = lv->offsets;
    g->nseq = (int64_t)lv->n - 1;
    return NULL;
  }
  if (x->dims.n != 3)
    return rill_kernel_error(ctx, "input X (%s) has no LoD: it needs [B, T, D]", xn);
  g->nseq = x->dims.d[0];
  g->seqlen = x->dims.d[1];
  return NULL;
}

static void rc_span(const rc_geom *g, int64_t s, int64_t *b, int64_t *e) {
  *b = g->off ? (int64_t)g->off[s] : s * g->seqlen;
  *e = g->off ? (int64_t)g->off[s + 1] : (s + 1) * g->seqlen;
}

#define ROW_CONV(T, DT, SUF)                                                              \
  rill_status *rill_cpu_row_conv_##SUF(rill_kernel_ctx *ctx) {                           \
    rill_tensor *x, *f, *out;                                                             \
    rc_geom g;                                                                            \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                           \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &f));                                           \
    RILL_TRY(rc_geometry(ctx, x, f, &g));                                                 \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                        \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &x->dims));                             \
    const T *xp = rill_tensor_ptr(x), *fp = rill_tensor_ptr(f);                           \
    T *op = rill_tensor_ptr(out);                                                         \
    for (int64_t s = 0; s < g.nseq; s++) {                                                \
      int64_t b, e;                                                                       \
      rc_span(&g, s, &b, &e);                                                             \
      for (int64_t t = b; t < e; t++)                                                     \
        for (int64_t j = 0; j < g.d; j++) {                                               \
          double acc = 0;                                                                 \
          for (int64_t i = 0; i < g.k1 && t + i < e; i++)                                 \
            acc += (double)xp[(t + i) * g.d + j] * (double)fp[i * g.d + j];               \
          op[t * g.d + j] = (T)acc;                                                       \
        }                                                                                 \
    }                                                                                     \
    return NULL;                                                                          \
  }                                                                                       \
                                                                                          \
  rill_status *rill_cpu_row_conv_grad_##SUF(rill_kernel_ctx *ctx) {                      \
    rill_tensor *x, *f, *g_, *dx = NULL, *df = NULL;                                      \
    rc_geom g;                                                                            \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                           \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &f));                                           \
    RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &g_));                                          \
    RILL_TRY(rc_geometry(ctx, x, f, &g));                                                 \
    RILL_TRY(rill_kin_check_dims(ctx, 2, g_, &x->dims));                                  \
    RILL_TRY(rill_kout_zeroed(ctx, 0, DT, &x->dims, &dx));                                \
    RILL_TRY(rill_kout_zeroed(ctx, 1, DT, &f->dims, &df));                                \
    const T *xp = rill_tensor_ptr(x), *fp = rill_tensor_ptr(f), *gp = rill_tensor_ptr(g_); \
    T *dxp = dx ? (T *)rill_tensor_ptr(dx) : NULL, *dfp = df ? (T *)rill_tensor_ptr(df) : NULL; \
    for (int64_t s = 0; s < g.nseq; s++) {                                                \
      int64_t b, e;                                                                       \
      rc_span(&g, s, &b, &e);                                                             \
      for (int64_t t = b; t < e; t++)                                                     \
        for (int64_t i = 0; i < g.k1 && t + i < e; i++)                                   \
          for (int64_t j = 0; j < g.d; j++) {                                             \
            T go = gp[t * g.d + j];                                                       \
            if (dxp) dxp[(t + i) * g.d + j] += go * fp[i * g.d + j];                      \
            if (dfp) dfp[i * g.d + j] += go * xp[(t + i) * g.d + j];                      \
          }                                                                               \
    }                                                                                     \
    return NULL;                                                                          \
  }

ROW_CONV(float, RILL_DTYPE_FP32, fp32)
ROW_CONV(double, RILL_DTYPE_FP64, fp64)
