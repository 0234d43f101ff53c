/* Shape rules of matmul (Fluid 1.x) and matmul_v2 (numpy-style), shared by the schemas'
 * inference and the kernels.
 *
 * Both ops multiply the last two dims of X and Y as matrices (optionally transposed).
 * matmul: a 1-D X [D] is [1, D] (transposed: [D, 1]), a 1-D Y [D] is [D, 1] (transposed:
 * [1, D]); the leading "batch" dims of X and Y must have equal products unless one side
 * has none (it is then shared by every batch); Out takes X's batch dims (else Y's) and
 * drops the 1 a 1-D operand brought in. matmul_v2: 1-D operands ignore their transpose
 * flag, batch dims broadcast numpy-style (right-aligned; equal or 1). Unknown extents
 * (-1, compile time) pass through. */
#ifndef RILL_OPERATORS_MATMUL_H
#define RILL_OPERATORS_MATMUL_H

#include <stdio.h>

#include "framework/base/dims.h"
#include "operators/op_index.h"

/* matmul and matmul_v2 (and their _grad ops) put their transpose flags first; the code
 * both share reads them through these. Only matmul has alpha and head_number. */
enum { RILL_MATMUL_TRANS_X = RILL_MATMUL_ATTR_TRANSPOSE_X, RILL_MATMUL_TRANS_Y = RILL_MATMUL_ATTR_TRANSPOSE_Y };
_Static_assert(RILL_SAME_POS(RILL_MATMUL_V2_ATTR_TRANS_X, RILL_MATMUL_TRANS_X) &&
                   RILL_SAME_POS(RILL_MATMUL_V2_ATTR_TRANS_Y, RILL_MATMUL_TRANS_Y) &&
                   RILL_SAME_POS(RILL_MATMUL_GRAD_ATTR_TRANSPOSE_X, RILL_MATMUL_TRANS_X) &&
                   RILL_SAME_POS(RILL_MATMUL_V2_GRAD_ATTR_TRANS_Y, RILL_MATMUL_TRANS_Y),
               "matmul's and matmul_v2's transpose flags must be at the same positions");

typedef struct rill_matmul_plan {
  int64_t m, k, n;
  bool tx, ty; /* X is stored [k, m] / Y is stored [n, k] */
  /* Batch iteration: nb dims bd, and per dim the stride of X's and Y's matrices (0 where
   * that side is broadcast). */
  int nb;
  int64_t bd[RILL_MAX_DIMS], xs[RILL_MAX_DIMS], ys[RILL_MAX_DIMS];
  int64_t nbatch;  /* product of bd (-1 when unknown) */
  int64_t xbatch;  /* matrices stored in X (-1 when unknown) */
  rill_dims out;
} rill_matmul_plan;

static inline int64_t rill_matmul_prod(const rill_dims *d, int b, int e) {
  int64_t p = 1;
  for (int i = b; i < e; i++) {
    if (d->d[i] < 0) return -1;
    if (__builtin_mul_overflow(p, d->d[i], &p)) return -1;
  }
  return p;
}

/* The matrix rows / cols of an operand as stored (1-D: X is a row, Y a column). */
static inline void rill_matmul_rc(const rill_dims *d, bool is_x, int64_t *rows, int64_t *cols) {
  if (d->n == 1) {
    *rows = is_x ? 1 : d->d[0];
    *cols = is_x ? d->d[0] : 1;
  } else {
    *rows = d->d[d->n - 2];
    *cols = d->d[d->n - 1];
  }
}

static inline bool rill_matmul_plan_make(const rill_dims *x, const rill_dims *y, bool tx, bool ty,
                                         bool v2, rill_matmul_plan *p, char *why, size_t whysize) {
  if (x->n < 1 || y->n < 1) {
    snprintf(why, whysize, "X and Y must have rank >= 1 (ranks %d and %d)", x->n, y->n);
    return false;
  }
  if (v2) {
    if (x->n == 1) tx = false;
    if (y->n == 1) ty = false;
  }
  int64_t xr, xc, yr, yc;
  rill_matmul_rc(x, true, &xr, &xc);
  rill_matmul_rc(y, false, &yr, &yc);
  p->tx = tx;
  p->ty = ty;
  p->m = tx ? xc : xr;
  p->k = tx ? xr : xc;
  int64_t ky = ty ? yc : yr;
  p->n = ty ? yr : yc;
  if (p->k >= 0 && ky >= 0 && p->k != ky) {
    snprintf(why, whysize, "X's matrices have %lld columns but Y's have %lld rows (after "
             "transposes)", (long long)p->k, (long long)ky);
    return false;
  }
  if (p->k < 0) p->k = ky;
  int xb = x->n > 2 ? x->n - 2 : 0, yb = y->n > 2 ? y->n - 2 : 0;
  p->xbatch = rill_matmul_prod(x, 0, xb);
  rill_dims out = {.n = 0};
  if (!v2) {
    int64_t bx = xb ? p->xbatch : 0, by = yb ? rill_matmul_prod(y, 0, yb) : 0;
    if (xb && yb && bx >= 0 && by >= 0 && bx != by) {
      snprintf(why, whysize, "batch sizes differ: X has %lld matrices, Y has %lld", (long long)bx,
               (long long)by);
      return false;
    }
    const rill_dims *src = xb ? x : y;
    int nbd = xb ? xb : yb;
    for (int i = 0; i < nbd; i++) out.d[out.n++] = src->d[i];
    p->nb = nbd ? 1 : 0;
    p->bd[0] = xb ? bx : by;
    p->xs[0] = xb ? 1 : 0;
    p->ys[0] = yb ? 1 : 0;
    p->nbatch = nbd ? p->bd[0] : 1;
    out.d[out.n++] = p->m;
    out.d[out.n++] = p->n;
    if (x->n == 1 && out.d[out.n - 2] == 1) {
      out.d[out.n - 2] = out.d[out.n - 1];
      out.n--;
    }
    if (y->n == 1 && out.d[out.n - 1] == 1) out.n--;
    if (out.n == 0) out.d[out.n++] = 1;
    p->out = out;
    return true;
  }
  int nb = xb > yb ? xb : yb;
  if (nb + 2 > RILL_MAX_DIMS) {
    snprintf(why, whysize, "output rank %d is too large", nb + 2);
    return false;
  }
  p->nb = nb;
  p->nbatch = 1;
  int64_t sx = 1, sy = 1;
  for (int i = nb - 1; i >= 0; i--) {
    int ix = i - (nb - xb), iy = i - (nb - yb);
    int64_t a = ix >= 0 ? x->d[ix] : 1, b = iy >= 0 ? y->d[iy] : 1, o;
    if (a == b) o = a;
    else if (a == 1) o = b;
    else if (b == 1) o = a;
    else if (a < 0) o = b;
    else if (b < 0) o = a;
    else {
      snprintf(why, whysize, "batch dim %d: X has %lld, Y has %lld (neither is 1)", i,
               (long long)a, (long long)b);
      return false;
    }
    p->bd[i] = o;
    p->xs[i] = a == 1 && o != 1 ? 0 : sx;
    p->ys[i] = b == 1 && o != 1 ? 0 : sy;
    if (a > 0) sx *= a;
    if (b > 0) sy *= b;
    if (o < 0 || p->nbatch < 0) p->nbatch = -1;
    else p->nbatch *= o;
  }
  for (int i = 0; i < nb; i++) out.d[out.n++] = p->bd[i];
  if (x->n != 1) out.d[out.n++] = p->m;
  if (y->n != 1) out.d[out.n++] = p->n;
  if (out.n == 0) out.d[out.n++] = 1;
  p->out = out;
  return true;
}

/* Matrix offsets (in matrices) of batch b's X and Y. */
static inline void rill_matmul_batch_offsets(const rill_matmul_plan *p, int64_t b, int64_t *xo, int64_t *yo) {
  *xo = *yo = 0;
  for (int i = p->nb - 1; i >= 0; i--) {
    int64_t idx = b % p->bd[i];
    b /= p->bd[i];
    *xo += idx * p->xs[i];
    *yo += idx * p->ys[i];
  }
}

#endif
