/* CPU kernels of the sequence ops (operators/sequence_ops.c). The forward kernels and
 * the pad / unpad / reverse gradients move whole rows of any element type; the expand
 * gradients add rows in float32 or float64. */
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/kernels.h"

/* Bytes of one row (the elements after dim 0). */
static size_t row_bytes(const rill_tensor *t) {
  return rill_dtype_size(t->dtype) * (size_t)(t->dims.n > 1 ? rill_dims_prod(&t->dims, 1, t->dims.n) : 1);
}

static char *row_at(const rill_tensor *t, int64_t r, size_t rb) {
  return (char *)rill_tensor_ptr(t) + (size_t)r * rb;
}

/* Input `slot`: a tensor with data, a row dim and a checked LoD; its level `level`
 * (negative: counted from the last) in *lv. */
static rill_status *lod_input(rill_kernel_ctx *ctx, size_t slot, int level, rill_tensor **t,
                              const rill_lod_level **lv) {
  rill_tensor *x = rill_kin(ctx, slot, 0);
  const char *slot_name = ctx->schema->inputs[slot].name, *name = rill_kin_name(ctx, slot, 0);
  if (!x || !rill_tensor_is_set(x) || x->dims.n < 1)
    return rill_kernel_error(ctx, "input %s (%s) must be a tensor with data and a row dimension",
                             slot_name, name);
  if (x->lod.nlevels == 0)
    return rill_kernel_error(ctx, "input %s (%s) has no LoD: it needs sequences", slot_name, name);
  rill_status *st = rill_lod_check(&x->lod, x->dims.d[0]);
  if (st) return rill_status_wrap(st, "%s: input %s (%s)", ctx->schema->type, slot_name, name);
  int l = level < 0 ? (int)x->lod.nlevels + level : level;
  if (l < 0 || (size_t)l >= x->lod.nlevels)
    return rill_kernel_error(ctx, "input %s (%s) has %zu LoD levels: no level %d", slot_name, name,
                             x->lod.nlevels, level);
  *t = x;
  *lv = &x->lod.levels[l];
  return NULL;
}

/* out := one LoD level of n offsets (copied). */
static rill_status *set_one_level(rill_tensor *out, const uint64_t *offs, size_t n) {
  rill_lod_level lv = {n, (uint64_t *)offs};
  rill_lod src = {1, &lv}, lod = {0, NULL};
  RILL_TRY(rill_lod_copy(&lod, &src));
  rill_lod_clear(&out->lod);
  out->lod = lod;
  return NULL;
}

/* ---- sequence_reverse ---- */

rill_status *rill_cpu_sequence_reverse(rill_kernel_ctx *ctx) {
  rill_tensor *x, *y = NULL;
  const rill_lod_level *lv;
  RILL_TRY(lod_input(ctx, RILL_SEQUENCE_REVERSE_IN_X, -1, &x, &lv));
  RILL_TRY(rill_kout_need(ctx, RILL_SEQUENCE_REVERSE_OUT_Y, 0, x->dtype, &y));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_SEQUENCE_REVERSE_OUT_Y, 0, y, &x->dims));
  if (y->buf == x->buf && y->offset == x->offset)
    return rill_kernel_error(ctx, "output Y (%s) must not be input X", rill_kout_name(ctx, 0, 0));
  size_t rb = row_bytes(x);
  for (size_t s = 0; s + 1 < lv->n; s++) {
    int64_t a = (int64_t)lv->offsets[s], b = (int64_t)lv->offsets[s + 1];
    for (int64_t r = a; r < b; r++) memcpy(row_at(y, a + b - 1 - r, rb), row_at(x, r, rb), rb);
  }
  if (!y->lod.nlevels) RILL_TRY(rill_lod_copy(&y->lod, &x->lod));
  return NULL;
}

/* ---- sequence_expand / sequence_expand_as ---- */

/* The repeats: sequence i of X (rows xa[i]..xa[i+1]) is copied rep(i) times, rep(i) the
 * length of sequence i of Y's reference level. xa is NULL when X's sequences are rows. */
typedef struct expand_plan {
  rill_tensor *x, *y;
  const rill_lod_level *ref; /* Y's reference level */
  const uint64_t *xa;        /* X's level 0, or NULL */
  int64_t nseq, out_rows;
} expand_plan;

static rill_status *expand_plan_of(rill_kernel_ctx *ctx, bool as, expand_plan *p) {
  int ref_level = as ? 0 : ctx->attrs[RILL_SEQUENCE_EXPAND_ATTR_REF_LEVEL].v.i;
  RILL_TRY(lod_input(ctx, 1, ref_level, &p->y, &p->ref));
  rill_tensor *x = p->x = rill_kin(ctx, 0, 0);
  const char *xn = rill_kin_name(ctx, 0, 0);
  if (!x || !rill_tensor_is_set(x) || x->dims.n < 1)
    return rill_kernel_error(ctx, "input X (%s) must be a tensor with data and a row dimension", xn);
  p->nseq = (int64_t)p->ref->n - 1;
  p->xa = NULL;
  int64_t xseq = x->dims.d[0];
  if (!as && x->lod.nlevels > 0) {
    if (x->lod.nlevels > 1)
      return rill_kernel_error(ctx, "input X (%s) has %zu LoD levels, at most 1 is supported", xn,
                               x->lod.nlevels);
    rill_status *st = rill_lod_check(&x->lod, x->dims.d[0]);
    if (st) return rill_status_wrap(st, "%s: input X (%s)", ctx->schema->type, xn);
    p->xa = x->lod.levels[0].offsets;
    xseq = (int64_t)x->lod.levels[0].n - 1;
  }
  if (xseq != p->nseq)
    return rill_kernel_error(ctx, "input X (%s) has %lld %s but input Y (%s) has %lld sequences at "
                             "its level %d", xn, (long long)xseq, p->xa ? "sequences" : "rows",
                             rill_kin_name(ctx, 1, 0), (long long)p->nseq, ref_level);
  p->out_rows = 0;
  for (int64_t i = 0; i < p->nseq; i++) {
    int64_t rep = (int64_t)(p->ref->offsets[i + 1] - p->ref->offsets[i]);
    int64_t len = p->xa ? (int64_t)(p->xa[i + 1] - p->xa[i]) : 1;
    p->out_rows += rep * len;
  }
  return NULL;
}

static rill_status *expand_run(rill_kernel_ctx *ctx, bool as) {
  expand_plan p;
  RILL_TRY(expand_plan_of(ctx, as, &p));
  rill_tensor *out = rill_kout(ctx, 0, 0);
  if (!out)
    return rill_kernel_error(ctx, "output Out (%s) is missing or not a dense tensor",
                             rill_kout_name(ctx, 0, 0));
  rill_dims d = p.x->dims;
  d.d[0] = p.out_rows;
  uint64_t *offs = NULL;
  size_t noffs = 0;
  if (p.xa) { /* Out's LoD: each copy of a sequence is a sequence */
    offs = rill_malloc(((size_t)p.out_rows + 1 + (size_t)p.nseq) * sizeof *offs);
    if (!offs) return rill_oom();
    offs[noffs++] = 0;
  }
  rill_status *st = rill_tensor_alloc(out, p.x->dtype, &d);
  size_t rb = row_bytes(p.x);
  int64_t at = 0;
  for (int64_t i = 0; !st && i < p.nseq; i++) {
    int64_t rep = (int64_t)(p.ref->offsets[i + 1] - p.ref->offsets[i]);
    int64_t a = p.xa ? (int64_t)p.xa[i] : i, len = p.xa ? (int64_t)(p.xa[i + 1] - p.xa[i]) : 1;
    for (int64_t k = 0; k < rep; k++) {
      if (len) memcpy(row_at(out, at, rb), row_at(p.x, a, rb), (size_t)len * rb);
      at += len;
      if (offs) {
        offs[noffs] = offs[noffs - 1] + (uint64_t)len;
        noffs++;
      }
    }
  }
  if (!st && offs) st = set_one_level(out, offs, noffs);
  if (!st && as) st = set_one_level(out, p.ref->offsets, p.ref->n);
  if (!st && !as && !offs) rill_lod_clear(&out->lod);
  rill_free(offs);
  return st;
}

rill_status *rill_cpu_sequence_expand(rill_kernel_ctx *ctx) { return expand_run(ctx, false); }
rill_status *rill_cpu_sequence_expand_as(rill_kernel_ctx *ctx) { return expand_run(ctx, true); }

#define EXPAND_GRAD(T, DT, NAME, AS)                                                       \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                \
    if (!rill_kout(ctx, 0, 0)) return NULL;                                                \
    expand_plan p;                                                                         \
    RILL_TRY(expand_plan_of(ctx, AS, &p));                                                 \
    rill_tensor *g = NULL, *dx = NULL;                                                     \
    RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &g));                                            \
    rill_dims gd = p.x->dims;                                                              \
    gd.d[0] = p.out_rows;                                                                  \
    RILL_TRY(rill_kin_check_dims(ctx, 2, g, &gd));                                         \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &dx));                                          \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &p.x->dims));                             \
    int64_t w = p.x->dims.n > 1 ? rill_dims_prod(&p.x->dims, 1, p.x->dims.n) : 1;          \
    const T *gp = rill_tensor_ptr(g);                                                      \
    T *dp = rill_tensor_ptr(dx);                                                           \
    memset(dp, 0, rill_tensor_nbytes(dx));                                                 \
    int64_t at = 0;                                                                        \
    for (int64_t i = 0; i < p.nseq; i++) {                                                 \
      int64_t rep = (int64_t)(p.ref->offsets[i + 1] - p.ref->offsets[i]);                  \
      int64_t a = p.xa ? (int64_t)p.xa[i] : i;                                             \
      int64_t len = p.xa ? (int64_t)(p.xa[i + 1] - p.xa[i]) : 1;                           \
      for (int64_t k = 0; k < rep; k++, at += len)                                         \
        for (int64_t e = 0; e < len * w; e++) dp[a * w + e] += gp[at * w + e];             \
    }                                                                                      \
    return NULL;                                                                           \
  }

EXPAND_GRAD(float, RILL_DTYPE_FP32, rill_cpu_sequence_expand_grad_fp32, false)
EXPAND_GRAD(double, RILL_DTYPE_FP64, rill_cpu_sequence_expand_grad_fp64, false)
EXPAND_GRAD(float, RILL_DTYPE_FP32, rill_cpu_sequence_expand_as_grad_fp32, true)
EXPAND_GRAD(double, RILL_DTYPE_FP64, rill_cpu_sequence_expand_as_grad_fp64, true)

/* ---- sequence_pad / sequence_unpad ---- */

/* The padded length: the attribute, or the longest sequence when it is -1. */
static rill_status *padded_length(rill_kernel_ctx *ctx, const rill_lod_level *lv, int64_t *len) {
  int64_t longest = 0;
  for (size_t s = 0; s + 1 < lv->n; s++)
    if ((int64_t)(lv->offsets[s + 1] - lv->offsets[s]) > longest)
      longest = (int64_t)(lv->offsets[s + 1] - lv->offsets[s]);
  int32_t attr = ctx->attrs[RILL_SEQUENCE_PAD_ATTR_PADDED_LENGTH].v.i;
  if (attr == -1) {
    *len = longest;
    return NULL;
  }
  if (attr < longest)
    return rill_kernel_error(ctx, "attribute padded_length %d is shorter than the longest sequence "
                             "of input X (%s), %lld steps", (int)attr,
                             rill_kin_name(ctx, 0, 0), (long long)longest);
  *len = attr;
  return NULL;
}

rill_status *rill_cpu_sequence_pad(rill_kernel_ctx *ctx) {
  rill_tensor *x, *pv = NULL, *out, *len;
  const rill_lod_level *lv;
  RILL_TRY(lod_input(ctx, RILL_SEQUENCE_PAD_IN_X, -1, &x, &lv));
  RILL_TRY(rill_kin_need(ctx, RILL_SEQUENCE_PAD_IN_PAD_VALUE, 0, x->dtype, &pv));
  size_t rb = row_bytes(x), es = rill_dtype_size(x->dtype);
  int64_t step = (int64_t)(rb / es), npv = rill_tensor_numel(pv);
  if (npv != 1 && npv != step)
    return rill_kernel_error(ctx, "input PadValue (%s) holds %lld values: one, or one step of "
                             "input X (%s) (%lld)", rill_kin_name(ctx, 1, 0), (long long)npv,
                             rill_kin_name(ctx, 0, 0), (long long)step);
  int64_t L = 0, nseq = (int64_t)lv->n - 1;
  RILL_TRY(padded_length(ctx, lv, &L));
  out = rill_kout(ctx, RILL_SEQUENCE_PAD_OUT_OUT, 0);
  len = rill_kout(ctx, RILL_SEQUENCE_PAD_OUT_LENGTH, 0);
  if (!out || !len)
    return rill_kernel_error(ctx, "outputs Out and Length must be dense tensors");
  rill_dims d = {.n = x->dims.n + 1};
  d.d[0] = nseq;
  d.d[1] = L;
  for (int i = 1; i < x->dims.n; i++) d.d[i + 1] = x->dims.d[i];
  RILL_TRY(rill_tensor_alloc(out, x->dtype, &d));
  rill_dims ld = {.n = 1, .d = {nseq}};
  RILL_TRY(rill_tensor_alloc(len, RILL_DTYPE_INT64, &ld));
  rill_lod_clear(&out->lod);
  rill_lod_clear(&len->lod);
  int64_t *lp = rill_tensor_ptr(len);
  const char *pvp = rill_tensor_ptr(pv);
  for (int64_t s = 0; s < nseq; s++) {
    int64_t a = (int64_t)lv->offsets[s], n = (int64_t)(lv->offsets[s + 1] - lv->offsets[s]);
    lp[s] = n;
    char *dst = row_at(out, s * L, rb);
    if (n) memcpy(dst, row_at(x, a, rb), (size_t)n * rb);
    for (int64_t t = n; t < L; t++) {
      char *r = dst + (size_t)t * rb;
      if (npv == step) {
        memcpy(r, pvp, rb);
      } else {
        for (int64_t e = 0; e < step; e++) memcpy(r + (size_t)e * es, pvp, es);
      }
    }
  }
  return NULL;
}

rill_status *rill_cpu_sequence_pad_grad(rill_kernel_ctx *ctx) {
  if (!rill_kout(ctx, 0, 0)) return NULL;
  rill_tensor *x, *g = rill_kin(ctx, RILL_SEQUENCE_PAD_GRAD_IN_OUT_GRAD, 0), *dx = NULL;
  const rill_lod_level *lv;
  RILL_TRY(lod_input(ctx, RILL_SEQUENCE_PAD_GRAD_IN_X, -1, &x, &lv));
  RILL_TRY(rill_kin_need(ctx, RILL_SEQUENCE_PAD_GRAD_IN_OUT_GRAD, 0, x->dtype, &g));
  RILL_TRY(rill_kout_need(ctx, 0, 0, x->dtype, &dx));
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &x->dims));
  int64_t nseq = (int64_t)lv->n - 1;
  size_t rb = row_bytes(x);
  if (g->dims.n != x->dims.n + 1 || g->dims.d[0] != nseq ||
      (size_t)rill_tensor_nbytes(g) != (size_t)(nseq * g->dims.d[1]) * rb)
    return rill_kernel_error(ctx, "input Out@GRAD (%s) does not have the padded shape of input X (%s)",
                             rill_kin_name(ctx, 1, 0), rill_kin_name(ctx, 0, 0));
  int64_t L = g->dims.d[1];
  for (int64_t s = 0; s < nseq; s++) {
    int64_t a = (int64_t)lv->offsets[s], n = (int64_t)(lv->offsets[s + 1] - lv->offsets[s]);
    if (n > L)
      return rill_kernel_error(ctx, "input Out@GRAD (%s) has %lld steps, sequence %lld has %lld",
                               rill_kin_name(ctx, 1, 0), (long long)L, (long long)s, (long long)n);
    if (n) memcpy(row_at(dx, a, rb), row_at(g, s * L, rb), (size_t)n * rb);
  }
  return NULL;
}

/* Length's values, each within [0, L]. */
static rill_status *lengths_of(rill_kernel_ctx *ctx, const rill_tensor *x, size_t slot,
                               const int64_t **lp) {
  rill_tensor *len = NULL;
  RILL_TRY(rill_kin_need(ctx, slot, 0, RILL_DTYPE_INT64, &len));
  if (rill_tensor_numel(len) != x->dims.d[0])
    return rill_kernel_error(ctx, "input Length (%s) holds %lld values for the %lld rows of input "
                             "X (%s)", rill_kin_name(ctx, slot, 0), (long long)rill_tensor_numel(len),
                             (long long)x->dims.d[0], rill_kin_name(ctx, 0, 0));
  *lp = rill_tensor_ptr(len);
  for (int64_t i = 0; i < x->dims.d[0]; i++)
    if ((*lp)[i] < 0 || (*lp)[i] > x->dims.d[1])
      return rill_kernel_error(ctx, "input Length (%s): Length[%lld] = %lld is outside [0, %lld]",
                               rill_kin_name(ctx, slot, 0), (long long)i, (long long)(*lp)[i],
                               (long long)x->dims.d[1]);
  return NULL;
}

static rill_status *padded_input(rill_kernel_ctx *ctx, rill_tensor **x) {
  *x = rill_kin(ctx, 0, 0);
  if (!*x || !rill_tensor_is_set(*x) || (*x)->dims.n < 2)
    return rill_kernel_error(ctx, "input X (%s) must be a tensor [N, L, ...] with data",
                             rill_kin_name(ctx, 0, 0));
  return NULL;
}

rill_status *rill_cpu_sequence_unpad(rill_kernel_ctx *ctx) {
  rill_tensor *x, *out = rill_kout(ctx, RILL_SEQUENCE_UNPAD_OUT_OUT, 0);
  const int64_t *lp;
  RILL_TRY(padded_input(ctx, &x));
  RILL_TRY(lengths_of(ctx, x, RILL_SEQUENCE_UNPAD_IN_LENGTH, &lp));
  if (!out)
    return rill_kernel_error(ctx, "output Out (%s) is missing or not a dense tensor",
                             rill_kout_name(ctx, 0, 0));
  int64_t n = x->dims.d[0], L = x->dims.d[1], total = 0;
  uint64_t *offs = rill_malloc(((size_t)n + 1) * sizeof *offs);
  if (!offs) return rill_oom();
  offs[0] = 0;
  for (int64_t i = 0; i < n; i++) offs[i + 1] = offs[i] + (uint64_t)lp[i];
  total = (int64_t)offs[n];
  rill_dims d = {.n = x->dims.n - 1};
  d.d[0] = total;
  for (int i = 2; i < x->dims.n; i++) d.d[i - 1] = x->dims.d[i];
  if (d.n == 1) d.n = 2, d.d[1] = 1;
  rill_status *st = rill_tensor_alloc(out, x->dtype, &d);
  size_t step = rill_dtype_size(x->dtype) * (size_t)(x->dims.n > 2 ? rill_dims_prod(&x->dims, 2, x->dims.n) : 1);
  for (int64_t i = 0; !st && i < n; i++)
    if (lp[i])
      memcpy((char *)rill_tensor_ptr(out) + offs[i] * step,
             (const char *)rill_tensor_ptr(x) + (size_t)(i * L) * step, (size_t)lp[i] * step);
  if (!st) st = set_one_level(out, offs, (size_t)n + 1);
  rill_free(offs);
  return st;
}

rill_status *rill_cpu_sequence_unpad_grad(rill_kernel_ctx *ctx) {
  if (!rill_kout(ctx, 0, 0)) return NULL;
  rill_tensor *x, *g = NULL, *dx = NULL;
  const int64_t *lp;
  RILL_TRY(padded_input(ctx, &x));
  RILL_TRY(lengths_of(ctx, x, RILL_SEQUENCE_UNPAD_GRAD_IN_LENGTH, &lp));
  RILL_TRY(rill_kin_need(ctx, RILL_SEQUENCE_UNPAD_GRAD_IN_OUT_GRAD, 0, x->dtype, &g));
  RILL_TRY(rill_kout_need(ctx, 0, 0, x->dtype, &dx));
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &x->dims));
  int64_t n = x->dims.d[0], L = x->dims.d[1], total = 0;
  for (int64_t i = 0; i < n; i++) total += lp[i];
  size_t step = rill_dtype_size(x->dtype) * (size_t)(x->dims.n > 2 ? rill_dims_prod(&x->dims, 2, x->dims.n) : 1);
  if (rill_tensor_nbytes(g) != (size_t)total * step)
    return rill_kernel_error(ctx, "input Out@GRAD (%s) does not hold the %lld unpadded steps",
                             rill_kin_name(ctx, RILL_SEQUENCE_UNPAD_GRAD_IN_OUT_GRAD, 0), (long long)total);
  memset(rill_tensor_ptr(dx), 0, rill_tensor_nbytes(dx));
  int64_t at = 0;
  for (int64_t i = 0; i < n; i++) {
    if (lp[i])
      memcpy((char *)rill_tensor_ptr(dx) + (size_t)(i * L) * step,
             (const char *)rill_tensor_ptr(g) + (size_t)at * step, (size_t)lp[i] * step);
    at += lp[i];
  }
  return NULL;
}

/* ---- sequence_enumerate ---- */

#define ENUMERATE(T, DT, NAME)                                                             \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                \
    rill_tensor *x, *out = NULL;                                                           \
    const rill_lod_level *lv;                                                              \
    RILL_TRY(lod_input(ctx, RILL_SEQUENCE_ENUMERATE_IN_X, -1, &x, &lv));                   \
    if (x->dtype != DT)                                                                    \
      return rill_kernel_error(ctx, "input X (%s) is %s", rill_kin_name(ctx, 0, 0),        \
                               rill_dtype_name(x->dtype));                                 \
    int64_t win = ctx->attrs[RILL_SEQUENCE_ENUMERATE_ATTR_WIN_SIZE].v.i;                   \
    T pad = (T)ctx->attrs[RILL_SEQUENCE_ENUMERATE_ATTR_PAD_VALUE].v.i;                     \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                         \
    rill_dims d = {.n = 2, .d = {x->dims.d[0], win}};                                      \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &d));                                    \
    const T *xp = rill_tensor_ptr(x);                                                      \
    T *op = rill_tensor_ptr(out);                                                          \
    for (size_t s = 0; s + 1 < lv->n; s++) {                                               \
      int64_t b = (int64_t)lv->offsets[s + 1];                                             \
      for (int64_t t = (int64_t)lv->offsets[s]; t < b; t++)                                \
        for (int64_t j = 0; j < win; j++) op[t * win + j] = t + j < b ? xp[t + j] : pad;   \
    }                                                                                      \
    return NULL;                                                                           \
  }

ENUMERATE(int32_t, RILL_DTYPE_INT32, rill_cpu_sequence_enumerate_int32)
ENUMERATE(int64_t, RILL_DTYPE_INT64, rill_cpu_sequence_enumerate_int64)

/* ---- sequence_concat ---- */

/* X[k]: data, one LoD level (its last is used), trailing dims and dtype of X[0], as many
 * sequences as X[0]. */
static rill_status *concat_input(rill_kernel_ctx *ctx, size_t k, rill_tensor **t,
                                 const rill_lod_level **lv) {
  rill_tensor *x = rill_kin(ctx, 0, k);
  const char *name = rill_kin_name(ctx, 0, k);
  if (!x || !rill_tensor_is_set(x) || x->dims.n < 1 || x->lod.nlevels == 0)
    return rill_kernel_error(ctx, "input X (%s) must be a LoD tensor with data and a row "
                             "dimension", name);
  rill_status *st = rill_lod_check(&x->lod, x->dims.d[0]);
  if (st) return rill_status_wrap(st, "%s: input X (%s)", ctx->schema->type, name);
  *lv = &x->lod.levels[x->lod.nlevels - 1];
  *t = x;
  if (k == 0) return NULL;
  rill_tensor *x0 = rill_kin(ctx, 0, 0);
  bool same = x->dtype == x0->dtype && x->dims.n == x0->dims.n &&
              x->lod.levels[x->lod.nlevels - 1].n == x0->lod.levels[x0->lod.nlevels - 1].n;
  for (int i = 1; same && i < x->dims.n; i++) same = x->dims.d[i] == x0->dims.d[i];
  if (!same)
    return rill_kernel_error(ctx, "input X (%s) differs from input X (%s) in dtype, row shape or "
                             "number of sequences", name, rill_kin_name(ctx, 0, 0));
  return NULL;
}

rill_status *rill_cpu_sequence_concat(rill_kernel_ctx *ctx) {
  size_t nx = ctx->nin[0];
  if (nx == 0) return rill_kernel_error(ctx, "needs input X");
  rill_tensor *x0, *out = rill_kout(ctx, 0, 0);
  const rill_lod_level *lv0;
  RILL_TRY(concat_input(ctx, 0, &x0, &lv0));
  if (!out)
    return rill_kernel_error(ctx, "output Out (%s) is missing or not a dense tensor",
                             rill_kout_name(ctx, 0, 0));
  rill_dims d = x0->dims;
  d.d[0] = 0;
  for (size_t k = 0; k < nx; k++) {
    rill_tensor *x;
    const rill_lod_level *lv;
    RILL_TRY(concat_input(ctx, k, &x, &lv));
    d.d[0] += x->dims.d[0];
  }
  size_t nseq = lv0->n - 1, rb = row_bytes(x0);
  uint64_t *offs = rill_malloc((nseq + 1) * sizeof *offs);
  if (!offs) return rill_oom();
  rill_status *st = rill_tensor_alloc(out, x0->dtype, &d);
  offs[0] = 0;
  int64_t at = 0;
  for (size_t s = 0; !st && s < nseq; s++) {
    for (size_t k = 0; k < nx; k++) {
      rill_tensor *x = rill_kin(ctx, 0, k);
      const rill_lod_level *lv = &x->lod.levels[x->lod.nlevels - 1];
      int64_t a = (int64_t)lv->offsets[s], n = (int64_t)(lv->offsets[s + 1] - lv->offsets[s]);
      if (n) memcpy(row_at(out, at, rb), row_at(x, a, rb), (size_t)n * rb);
      at += n;
    }
    offs[s + 1] = (uint64_t)at;
  }
  if (!st) st = set_one_level(out, offs, nseq + 1);
  rill_free(offs);
  return st;
}

rill_status *rill_cpu_sequence_concat_grad(rill_kernel_ctx *ctx) {
  size_t nx = ctx->nin[0];
  if (nx == 0) return rill_kernel_error(ctx, "needs input X");
  rill_tensor *x0, *g = NULL;
  const rill_lod_level *lv0;
  RILL_TRY(concat_input(ctx, 0, &x0, &lv0));
  RILL_TRY(rill_kin_need(ctx, RILL_SEQUENCE_CONCAT_GRAD_IN_OUT_GRAD, 0, x0->dtype, &g));
  int64_t total = 0;
  for (size_t k = 0; k < nx; k++) {
    rill_tensor *x;
    const rill_lod_level *lv;
    RILL_TRY(concat_input(ctx, k, &x, &lv));
    total += x->dims.d[0];
    if (k < ctx->nout[0] && rill_kout(ctx, 0, k)) {
      rill_tensor *dx = NULL;
      RILL_TRY(rill_kout_need(ctx, 0, k, x->dtype, &dx));
      RILL_TRY(rill_kout_check_dims(ctx, 0, k, dx, &x->dims));
    }
  }
  size_t rb = row_bytes(x0);
  if (g->dims.n < 1 || g->dims.d[0] != total || row_bytes(g) != rb)
    return rill_kernel_error(ctx, "input Out@GRAD (%s) does not have the %lld rows of the "
                             "concatenation", rill_kin_name(ctx, 1, 0), (long long)total);
  int64_t at = 0;
  for (size_t s = 0; s + 1 < lv0->n; s++)
    for (size_t k = 0; k < nx; k++) {
      rill_tensor *x = rill_kin(ctx, 0, k);
      const rill_lod_level *lv = &x->lod.levels[x->lod.nlevels - 1];
      int64_t a = (int64_t)lv->offsets[s], n = (int64_t)(lv->offsets[s + 1] - lv->offsets[s]);
      rill_tensor *dx = k < ctx->nout[0] ? rill_kout(ctx, 0, k) : NULL;
      if (dx && n) memcpy(row_at(dx, a, rb), row_at(g, at, rb), (size_t)n * rb);
      at += n;
    }
  return NULL;
}

/* ---- sequence_slice ---- */

/* Offset and Length of each sequence of X's last level, checked to fit it. */
static rill_status *slices_of(rill_kernel_ctx *ctx, const rill_lod_level *lv,
                              const int64_t **off, const int64_t **len, int64_t *total) {
  rill_tensor *o = NULL, *l = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_SEQUENCE_SLICE_IN_OFFSET, 0, RILL_DTYPE_INT64, &o));
  RILL_TRY(rill_kin_need(ctx, RILL_SEQUENCE_SLICE_IN_LENGTH, 0, RILL_DTYPE_INT64, &l));
  int64_t nseq = (int64_t)lv->n - 1;
  if (rill_tensor_numel(o) != nseq || rill_tensor_numel(l) != nseq)
    return rill_kernel_error(ctx, "inputs Offset (%s) and Length (%s) hold %lld and %lld values "
                             "for the %lld sequences of input X (%s)",
                             rill_kin_name(ctx, 1, 0), rill_kin_name(ctx, 2, 0),
                             (long long)rill_tensor_numel(o), (long long)rill_tensor_numel(l),
                             (long long)nseq, rill_kin_name(ctx, 0, 0));
  *off = rill_tensor_ptr(o);
  *len = rill_tensor_ptr(l);
  *total = 0;
  for (int64_t i = 0; i < nseq; i++) {
    int64_t n = (int64_t)(lv->offsets[i + 1] - lv->offsets[i]);
    if ((*off)[i] < 0 || (*len)[i] < 0 || (*off)[i] + (*len)[i] > n)
      return rill_kernel_error(ctx, "slice %lld (Offset %lld, Length %lld) does not fit sequence "
                               "%lld of input X (%s), %lld rows", (long long)i, (long long)(*off)[i],
                               (long long)(*len)[i], (long long)i, rill_kin_name(ctx, 0, 0), (long long)n);
    *total += (*len)[i];
  }
  return NULL;
}

rill_status *rill_cpu_sequence_slice(rill_kernel_ctx *ctx) {
  rill_tensor *x, *out = rill_kout(ctx, 0, 0);
  const rill_lod_level *lv;
  const int64_t *off, *len;
  int64_t total;
  RILL_TRY(lod_input(ctx, RILL_SEQUENCE_SLICE_IN_X, -1, &x, &lv));
  RILL_TRY(slices_of(ctx, lv, &off, &len, &total));
  if (!out)
    return rill_kernel_error(ctx, "output Out (%s) is missing or not a dense tensor",
                             rill_kout_name(ctx, 0, 0));
  size_t nseq = lv->n - 1, rb = row_bytes(x);
  rill_dims d = x->dims;
  d.d[0] = total;
  uint64_t *offs = rill_malloc((nseq + 1) * sizeof *offs);
  if (!offs) return rill_oom();
  rill_status *st = rill_tensor_alloc(out, x->dtype, &d);
  offs[0] = 0;
  for (size_t s = 0; !st && s < nseq; s++) {
    if (len[s])
      memcpy(row_at(out, (int64_t)offs[s], rb), row_at(x, (int64_t)lv->offsets[s] + off[s], rb),
             (size_t)len[s] * rb);
    offs[s + 1] = offs[s] + (uint64_t)len[s];
  }
  if (!st) st = set_one_level(out, offs, nseq + 1);
  rill_free(offs);
  return st;
}

rill_status *rill_cpu_sequence_slice_grad(rill_kernel_ctx *ctx) {
  if (!rill_kout(ctx, 0, 0)) return NULL;
  rill_tensor *x, *g = NULL, *dx = NULL;
  const rill_lod_level *lv;
  const int64_t *off, *len;
  int64_t total;
  RILL_TRY(lod_input(ctx, RILL_SEQUENCE_SLICE_GRAD_IN_X, -1, &x, &lv));
  RILL_TRY(slices_of(ctx, lv, &off, &len, &total));
  RILL_TRY(rill_kin_need(ctx, RILL_SEQUENCE_SLICE_GRAD_IN_OUT_GRAD, 0, x->dtype, &g));
  RILL_TRY(rill_kout_need(ctx, 0, 0, x->dtype, &dx));
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &x->dims));
  size_t rb = row_bytes(x);
  if (g->dims.n < 1 || g->dims.d[0] != total || row_bytes(g) != rb)
    return rill_kernel_error(ctx, "input Out@GRAD (%s) does not have the %lld sliced rows",
                             rill_kin_name(ctx, RILL_SEQUENCE_SLICE_GRAD_IN_OUT_GRAD, 0), (long long)total);
  memset(rill_tensor_ptr(dx), 0, rill_tensor_nbytes(dx));
  int64_t at = 0;
  for (size_t s = 0; s + 1 < lv->n; s++) {
    if (len[s])
      memcpy(row_at(dx, (int64_t)lv->offsets[s] + off[s], rb), row_at(g, at, rb), (size_t)len[s] * rb);
    at += len[s];
  }
  return NULL;
}

/* ---- sequence_reshape ---- */

rill_status *rill_cpu_sequence_reshape(rill_kernel_ctx *ctx) {
  rill_tensor *x, *out = rill_kout(ctx, 0, 0);
  const rill_lod_level *lv;
  RILL_TRY(lod_input(ctx, RILL_SEQUENCE_RESHAPE_IN_X, -1, &x, &lv));
  int64_t nd = ctx->attrs[RILL_SEQUENCE_RESHAPE_ATTR_NEW_DIM].v.i;
  if (x->dims.n != 2 || nd < 1)
    return rill_kernel_error(ctx, "input X (%s) must be [T, D] and new_dim 1 or more",
                             rill_kin_name(ctx, 0, 0));
  if (!out)
    return rill_kernel_error(ctx, "output Out (%s) is missing or not a dense tensor",
                             rill_kout_name(ctx, 0, 0));
  int64_t D = x->dims.d[1];
  uint64_t *offs = rill_malloc(lv->n * sizeof *offs);
  if (!offs) return rill_oom();
  for (size_t s = 0; s < lv->n; s++) {
    uint64_t e = lv->offsets[s] * (uint64_t)D;
    if (e % (uint64_t)nd) {
      rill_free(offs);
      return rill_kernel_error(ctx, "sequence %zu of input X (%s) holds %llu elements in all before "
                               "it: not a multiple of new_dim %lld", s, rill_kin_name(ctx, 0, 0),
                               (unsigned long long)e, (long long)nd);
    }
    offs[s] = e / (uint64_t)nd;
  }
  rill_dims d = {.n = 2, .d = {(int64_t)offs[lv->n - 1], nd}};
  rill_status *st = rill_tensor_alloc(out, x->dtype, &d);
  if (!st && rill_tensor_nbytes(x)) memcpy(rill_tensor_ptr(out), rill_tensor_ptr(x), rill_tensor_nbytes(x));
  if (!st) st = set_one_level(out, offs, lv->n);
  rill_free(offs);
  return st;
}

rill_status *rill_cpu_sequence_reshape_grad(rill_kernel_ctx *ctx) {
  if (!rill_kout(ctx, 0, 0)) return NULL;
  rill_tensor *x = rill_kin(ctx, RILL_SEQUENCE_RESHAPE_GRAD_IN_X, 0), *g = NULL, *dx = NULL;
  if (!x || !rill_tensor_is_set(x))
    return rill_kernel_error(ctx, "input X (%s) holds no tensor", rill_kin_name(ctx, 0, 0));
  RILL_TRY(rill_kin_need(ctx, RILL_SEQUENCE_RESHAPE_GRAD_IN_OUT_GRAD, 0, x->dtype, &g));
  RILL_TRY(rill_kout_need(ctx, 0, 0, x->dtype, &dx));
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &x->dims));
  if (rill_tensor_numel(g) != rill_tensor_numel(x))
    return rill_kernel_error(ctx, "input Out@GRAD (%s) holds %lld values, input X (%s) %lld",
                             rill_kin_name(ctx, 1, 0), (long long)rill_tensor_numel(g),
                             rill_kin_name(ctx, 0, 0), (long long)rill_tensor_numel(x));
  if (rill_tensor_nbytes(x)) memcpy(rill_tensor_ptr(dx), rill_tensor_ptr(g), rill_tensor_nbytes(x));
  return NULL;
}
