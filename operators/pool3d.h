/* pool3d geometry (NCDHW, or NDHWC with data_format "NDHWC"), shared by inference and
 * the CPU kernels: Paddle's ksize, strides, paddings (3 values, one per dim, or 6: front,
 * back, top, bottom, left, right), padding_algorithm (SAME: out = ceil(in / stride), the
 * padding split with the odd pixel after; VALID: none), global_pooling (the window is the
 * whole volume), adaptive (ksize is the output extent) and ceil_mode; paddings are zeroed
 * for global and adaptive pooling. Otherwise
 * out = (in - k + pads [+ stride - 1 with ceil_mode]) / stride + 1. */
#ifndef RILL_OPERATORS_POOL3D_H
#define RILL_OPERATORS_POOL3D_H

#include <string.h>

#include "framework/registry/registry.h"

enum { POOL3D_A_TYPE, POOL3D_A_KSIZE, POOL3D_A_GLOBAL, POOL3D_A_STRIDES, POOL3D_A_PADDINGS,
       POOL3D_A_EXCLUSIVE, POOL3D_A_ADAPTIVE, POOL3D_A_CEIL, POOL3D_A_FORMAT, POOL3D_A_PADALG };

typedef struct pool3d_geom {
  int64_t n, c;
  int64_t in[3], out[3], k[3], s[3], p[6]; /* d/h/w order; p: before/after pairs */
  bool max, adaptive, exclusive;
  bool last; /* NDHWC: channels are the last dim */
} pool3d_geom;

/* X's or Out's dims for geometry g with spatial extents sp[3]: [N, C, D, H, W] or, channel
 * last, [N, D, H, W, C]. */
static inline rill_dims pool3d_dims(const pool3d_geom *g, const int64_t sp[3]) {
  if (g->last) return (rill_dims){5, {g->n, sp[0], sp[1], sp[2], g->c}};
  return (rill_dims){5, {g->n, g->c, sp[0], sp[1], sp[2]}};
}

/* Fills g from the attributes and X's dims (extents may be -1 at compile time: the
 * matching output extent is then -1, unless adaptive). Returns NULL or a message. */
static inline const char *pool3d_geom_get(const rill_attr_value *a, const rill_dims *x,
                                          pool3d_geom *g) {
  memset(g, 0, sizeof *g);
  const char *fmt = a[POOL3D_A_FORMAT].v.s ? a[POOL3D_A_FORMAT].v.s : "NCDHW";
  g->last = !strcmp(fmt, "NDHWC");
  if (!g->last && strcmp(fmt, "NCDHW") && strcmp(fmt, "AnyLayout") && fmt[0])
    return "attribute data_format must be NCDHW, NDHWC or AnyLayout";
  if (x->n != 5)
    return g->last ? "input X must be 5-D [N, D, H, W, C] (NDHWC)"
                   : "input X must be 5-D [N, C, D, H, W]";
  const char *type = a[POOL3D_A_TYPE].v.s ? a[POOL3D_A_TYPE].v.s : "";
  if (strcmp(type, "max") && strcmp(type, "avg")) return "attribute pooling_type must be max or avg";
  const rill_attr_value *ks = &a[POOL3D_A_KSIZE], *st = &a[POOL3D_A_STRIDES],
                        *pd = &a[POOL3D_A_PADDINGS];
  if (ks->n != 3) return "attribute ksize must hold 3 ints";
  if (st->n != 3) return "attribute strides must hold 3 ints";
  if (pd->n != 3 && pd->n != 6) return "attribute paddings must hold 3 or 6 ints";
  const char *alg = a[POOL3D_A_PADALG].v.s ? a[POOL3D_A_PADALG].v.s : "EXPLICIT";
  bool same = !strcmp(alg, "SAME"), valid = !strcmp(alg, "VALID");
  if (!same && !valid && strcmp(alg, "EXPLICIT") && alg[0])
    return "attribute padding_algorithm must be EXPLICIT, SAME or VALID";
  bool global = a[POOL3D_A_GLOBAL].v.b, ceil_mode = a[POOL3D_A_CEIL].v.b;
  g->max = type[0] == 'm';
  g->adaptive = a[POOL3D_A_ADAPTIVE].v.b;
  g->exclusive = a[POOL3D_A_EXCLUSIVE].v.b;
  g->n = x->d[0];
  g->c = x->d[g->last ? 4 : 1];
  for (int i = 0; i < 3; i++) {
    g->in[i] = x->d[g->last ? 1 + i : 2 + i];
    g->k[i] = global ? g->in[i] : ks->list.ints[i];
    g->s[i] = st->list.ints[i];
    g->p[2 * i] = pd->list.ints[pd->n == 3 ? i : 2 * i];
    g->p[2 * i + 1] = pd->list.ints[pd->n == 3 ? i : 2 * i + 1];
    if (g->s[i] < 1) return "attribute strides must be positive";
    if (!global && g->k[i] < 1) return "attribute ksize must be positive";
    if (valid || global || g->adaptive) g->p[2 * i] = g->p[2 * i + 1] = 0;
    if (same && !global && !g->adaptive && g->in[i] >= 0) {
      int64_t o = (g->in[i] + g->s[i] - 1) / g->s[i];
      int64_t sum = (o - 1) * g->s[i] + g->k[i] - g->in[i];
      if (sum < 0) sum = 0;
      g->p[2 * i] = sum / 2;
      g->p[2 * i + 1] = sum - sum / 2;
    }
    if (g->p[2 * i] < 0 || g->p[2 * i + 1] < 0) return "attribute paddings holds a negative value";
    if (g->adaptive) {
      g->out[i] = g->k[i];
      if (g->in[i] == 0) return "adaptive pooling of an empty volume";
      continue;
    }
    if (g->in[i] < 0) {
      g->out[i] = -1;
      if (global) g->k[i] = -1;
      continue;
    }
    int64_t span = g->in[i] - g->k[i] + g->p[2 * i] + g->p[2 * i + 1];
    if (ceil_mode) span += g->s[i] - 1;
    if (span < 0) return "the (padded) input is smaller than the window";
    g->out[i] = span / g->s[i] + 1;
  }
  return NULL;
}

#endif
